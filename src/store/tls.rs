//! How the shared store's connections are protected: TLS with the server's
//! certificate verified, or plain text where the address says so or the
//! server is this machine. It decides from the address's `sslmode` and
//! `sslrootcert` (libpq's names) and never falls back from TLS to plain
//! text: a server that refuses TLS, or whose certificate does not verify,
//! is a failed connection.
//!
//! | `sslmode` | connection |
//! |---|---|
//! | absent | plain to a loopback host or a Unix socket; TLS, verified, to any other |
//! | `disable` | plain |
//! | `require`, `verify-ca`, `verify-full` | TLS; the certificate chain checked against `sslrootcert` (PEM) or the system's roots, and the host name against it (muster checks the name for all three) |
//! | `prefer`, `allow` | refused: they fall back to plain text |
//!
//! Client certificates (`sslcert`, `sslkey`) are not sent yet; an address
//! naming them is refused rather than connected without them.

use std::str::FromStr;
use std::sync::Arc;

use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::{Client, Config};
use tokio_postgres_rustls::MakeRustlsConnect;

/// A store address read for connecting: the driver's settings (without the
/// TLS parameters muster reads itself) and how to protect the connection.
pub(super) struct Target {
    config: Config,
    tls: Option<MakeRustlsConnect>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

/// `text` with `%XX` escapes decoded (and `+` left as it is, as libpq does).
fn percent_decoded(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("a `%` escape that is not two hex digits")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "an escape that is not UTF-8".to_string())
}

/// The URL without muster's TLS parameters, `sslmode` and `sslrootcert`.
fn split_tls(url: &str) -> Result<(String, Option<String>, Option<String>), String> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), None, None));
    };
    let (mut mode, mut root) = (None, None);
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => mode = Some(percent_decoded(value)?),
            "sslrootcert" => root = Some(percent_decoded(value)?),
            "sslcert" | "sslkey" | "sslpassword" | "sslcrl" | "sslcrldir" => {
                return Err(format!(
                    "the session store's address gives `{key}`: muster does not send client certificates yet; authenticate with a password or trust rule instead"
                ));
            }
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, mode, root))
}

/// Whether every host the address names is this machine (a loopback host
/// or a Unix socket).
fn only_loopback(config: &Config) -> bool {
    !config.get_hosts().is_empty()
        && config.get_hosts().iter().all(|h| match h {
            Host::Tcp(name) => crate::loopback::host(name),
            Host::Unix(_) => true,
        })
}

/// The roots a server's certificate is checked against: the PEM file
/// `sslrootcert`, or the system's.
fn roots(root: Option<&str>) -> Result<rustls::RootCertStore, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut store = rustls::RootCertStore::empty();
    let Some(path) = root else {
        let found = rustls_native_certs::load_native_certs();
        for cert in found.certs {
            let _ = store.add(cert);
        }
        if store.is_empty() {
            return Err("the system has no root certificates to check the session store's certificate against: give sslrootcert=FILE (PEM) in its address".into());
        }
        return Ok(store);
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read sslrootcert `{path}`: {e}"))?;
    for cert in certs {
        let cert =
            cert.map_err(|e| format!("sslrootcert `{path}` is not PEM certificates: {e}"))?;
        store
            .add(cert)
            .map_err(|e| format!("sslrootcert `{path}` holds a certificate rustls refuses: {e}"))?;
    }
    if store.is_empty() {
        return Err(format!("sslrootcert `{path}` holds no certificate"));
    }
    Ok(store)
}

impl Target {
    /// Reads `url` (`postgres://…`, with libpq's `sslmode` and
    /// `sslrootcert` when given).
    ///
    /// # Errors
    /// What is wrong with the address or its roots, and what to write
    /// instead; never the address's password.
    pub(super) fn read(url: &str) -> Result<Self, String> {
        let (rest, mode, root) = split_tls(url)?;
        let mut config = Config::from_str(&rest)
            .map_err(|e| format!("the session store's address cannot be read ({e})"))?;
        let tls = match mode.as_deref() {
            Some("disable") => false,
            Some("require" | "verify-ca" | "verify-full") => true,
            Some(mode @ ("prefer" | "allow")) => {
                return Err(format!(
                    "sslmode={mode} falls back to plain text, which muster does not do: give sslmode=verify-full (with sslrootcert=FILE for a private CA), or sslmode=disable to say the connection is plain"
                ));
            }
            Some(other) => {
                return Err(format!(
                    "sslmode={} is not one muster knows: give verify-full, verify-ca, require or disable",
                    crate::names::escape(other)
                ));
            }
            None => root.is_some() || !only_loopback(&config),
        };
        if !tls {
            config.ssl_mode(SslMode::Disable);
            return Ok(Self { config, tls: None });
        }
        // Whoever installs a provider first wins; ring is muster's.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = rustls::ClientConfig::builder()
            .with_root_certificates(roots(root.as_deref())?)
            .with_no_client_auth();
        config.ssl_mode(SslMode::Require);
        Ok(Self {
            config,
            tls: Some(MakeRustlsConnect::new(client)),
        })
    }

    /// Connects, the connection's driver running on a task of the current
    /// runtime until it ends; `on_message` sees each message the server
    /// sends unasked (notifications), when given.
    pub(super) async fn connect(
        &self,
        on_message: Option<tokio::sync::mpsc::UnboundedSender<tokio_postgres::AsyncMessage>>,
    ) -> Result<Arc<Client>, String> {
        macro_rules! drive {
            ($connected:expr) => {{
                let (client, mut connection) = $connected.await.map_err(|e| told(&e))?;
                tokio::spawn(async move {
                    // Ends when the connection does; the next call reconnects.
                    while let Some(Ok(message)) =
                        std::future::poll_fn(|cx| connection.poll_message(cx)).await
                    {
                        if let Some(tx) = &on_message
                            && tx.send(message).is_err()
                        {
                            break;
                        }
                    }
                });
                Arc::new(client)
            }};
        }
        Ok(match &self.tls {
            Some(tls) => drive!(self.config.connect(tls.clone())),
            None => drive!(self.config.connect(tokio_postgres::NoTls)),
        })
    }
}

/// `e` with what caused it: tokio-postgres says only "db error" or
/// "error performing TLS handshake" and keeps the server's words (or the
/// certificate's fault) in its source.
pub(super) fn told(e: &tokio_postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    crate::names::escape(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tls_of(url: &str) -> Result<bool, String> {
        Target::read(url).map(|t| t.tls.is_some())
    }

    #[test]
    fn plain_text_only_where_the_address_says_so_or_the_host_is_this_machine() {
        assert_eq!(tls_of("postgres://u@127.0.0.1:5432/db"), Ok(false));
        assert_eq!(tls_of("postgres://u@localhost/db"), Ok(false));
        assert_eq!(
            tls_of("postgres://u@db.internal/db?sslmode=disable"),
            Ok(false)
        );
        assert_eq!(tls_of("postgres://u@db.internal/db"), Ok(true));
        assert_eq!(
            tls_of("postgres://u@127.0.0.1/db?sslmode=require"),
            Ok(true)
        );
        assert_eq!(
            tls_of("postgres://u@127.0.0.1/db?sslmode=verify-full&connect_timeout=5"),
            Ok(true)
        );
    }

    #[test]
    fn modes_that_fall_back_or_are_unknown_are_refused_naming_what_to_write() {
        let err = tls_of("postgres://u@db/db?sslmode=prefer").unwrap_err();
        assert!(
            err.contains("sslmode=prefer") && err.contains("verify-full"),
            "{err}"
        );
        let err = tls_of("postgres://u@db/db?sslmode=sometimes").unwrap_err();
        assert!(err.contains("not one muster knows"), "{err}");
        let err = tls_of("postgres://u@db/db?sslcert=c.pem").unwrap_err();
        assert!(err.contains("sslcert"), "{err}");
        let err = tls_of("postgres://u@db/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem")
            .unwrap_err();
        assert!(err.contains("/nonexistent/ca.pem"), "{err}");
    }

    #[test]
    fn the_tls_parameters_leave_the_address_and_the_rest_stays() {
        let (rest, mode, root) = split_tls(
            "postgres://u@h/db?sslmode=verify-full&application_name=m&sslrootcert=%2Ftmp%2Fca.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u@h/db?application_name=m");
        assert_eq!(mode.as_deref(), Some("verify-full"));
        assert_eq!(root.as_deref(), Some("/tmp/ca.pem"));
    }
}
