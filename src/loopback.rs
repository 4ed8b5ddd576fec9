//! Decides whether an address or a host name is this machine's own
//! (loopback): the one rule the service's Host and Origin checks, its admin
//! route, its start-up warning and the policy's `http://` rule all use. An
//! IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) is the IPv4 address it
//! carries. It resolves no name (only `localhost` itself is a loopback
//! name: any other name could resolve anywhere) and reads no environment.

use std::net::IpAddr;

/// Whether `ip` is a loopback address, IPv4-mapped ones included.
pub fn ip(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

/// Whether `host` (a URL's or a `Host` header's host, without the port;
/// an IPv6 address with or without its brackets) names this machine:
/// `localhost` (in any case, with or without a final dot) or a loopback
/// address.
pub fn host(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let name = bare.strip_suffix('.').unwrap_or(bare);
    name.eq_ignore_ascii_case("localhost") || bare.parse().is_ok_and(ip)
}

/// `authority` (`host`, `host:port`, `[v6]` or `[v6]:port`) split into its
/// host (brackets kept for IPv6) and its port, when it has a readable one;
/// `None` for text that is no authority.
pub fn split_authority(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let (host, rest) = authority.split_at(end + 1);
        match rest {
            "" => (host, None),
            _ => (host, Some(rest.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() || host.contains(['/', '@', ' ']) {
        return None;
    }
    match port {
        None => Some((host, None)),
        Some(port) => Some((host, Some(port.parse().ok()?))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_addresses() {
        for yes in [
            "localhost",
            "LocalHost",
            "localhost.",
            "127.0.0.1",
            "127.9.8.7",
            "::1",
            "[::1]",
            "::ffff:127.0.0.1",
            "[::ffff:127.0.0.1]",
        ] {
            assert!(host(yes), "{yes}");
        }
        for no in [
            "example.com",
            "localhost.example.com",
            "127.0.0.1.nip.io",
            "0.0.0.0",
            "::",
            "[::ffff:10.0.0.1]",
            "10.0.0.1",
            "",
            "null",
        ] {
            assert!(!host(no), "{no}");
        }
    }

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(split_authority("a:80"), Some(("a", Some(80))));
        assert_eq!(split_authority("[::1]:8080"), Some(("[::1]", Some(8080))));
        assert_eq!(split_authority("[::1]"), Some(("[::1]", None)));
        assert_eq!(split_authority("localhost"), Some(("localhost", None)));
        assert_eq!(split_authority("a:x"), None);
        assert_eq!(split_authority("[::1]x"), None);
        assert_eq!(split_authority("u@a:1"), None);
    }
}
