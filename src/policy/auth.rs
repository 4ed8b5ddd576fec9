//! `[auth]` of `muster.toml`: who may call `muster serve` and how fast
//! (docs/auth.md). It reads and validates the table into an [`AuthPolicy`]:
//! the issuer and audience a bearer token must name, where the issuer's
//! keys are (a file in the policy directory or a URL), the grants mapping
//! a token's scopes or claims to agents, the static API keys
//! (`[[auth.key]]`, in `auth/keys.rs`), and the call limits. Tokens, keys
//! or both: at least one. It checks no token and fetches nothing:
//! `crate::auth` does that at run time.

use super::load::{Loader, Source};
use super::{Agent, Origin, raw};
use crate::error::code;
use std::path::PathBuf;
use toml::Spanned;

mod keys;
pub use keys::{MAX_KEY_NAME, is_key_name};

/// Default `leeway_secs`: the clock skew allowed on `exp` and `nbf`.
pub const DEFAULT_LEEWAY_SECS: u64 = 30;
/// Largest `leeway_secs` accepted.
pub const MAX_LEEWAY_SECS: u64 = 300;
/// Default `jwks_refetch_secs`: the least time between two fetches of a
/// JWKS URL prompted by a token naming a key muster does not hold.
pub const DEFAULT_JWKS_REFETCH_SECS: u64 = 30;
/// Default `[auth.limits] callers`: the most callers whose buckets are kept.
pub const DEFAULT_LIMIT_CALLERS: u32 = 10_000;

/// `[auth]`, validated: bearer tokens of an issuer, static API keys, or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthPolicy {
    /// The issuer whose JWT access tokens are accepted, when set.
    pub issuer: Option<Issuer>,
    /// Static API keys (`[[auth.key]]`), in declared order.
    pub keys: Vec<ApiKey>,
    /// Whether `/metrics` needs a token too.
    pub metrics: MetricsAccess,
    /// Grants in declared order (they match tokens, not keys).
    pub grants: Vec<Grant>,
    /// Call limits, when set.
    pub limits: Option<CallLimits>,
    /// Where `[auth]` is written.
    pub origin: Origin,
}

/// The issuer of the JWT access tokens muster accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issuer {
    /// The `iss` every token must carry, exactly.
    pub issuer: String,
    /// The `aud` every token must hold: muster's resource (RFC 8707).
    pub audience: String,
    /// Where the issuer's public keys are.
    pub jwks: JwksSource,
    /// What the protected resource metadata names as authorization servers
    /// (default: the issuer).
    pub authorization_servers: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`, in seconds.
    pub leeway_secs: u64,
    /// Least seconds between two fetches of a JWKS URL for an unknown `kid`.
    pub jwks_refetch_secs: u64,
}

/// One `[[auth.key]]`: a static API key, kept as the SHA-256 of its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// Its name; its caller is `key:<name>`.
    pub name: String,
    /// The agents it opens, the first the caller's default.
    pub agents: Vec<String>,
    /// SHA-256 of the key's text.
    pub digest: [u8; 32],
    /// Where it is written.
    pub origin: Origin,
}

/// Where an issuer's keys (a JSON Web Key Set) are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// A file in the policy directory, read with the policies.
    File(PathBuf),
    /// An `https://` URL (or `http://` to a loopback host), fetched and
    /// cached, fetched again when a token names a key it lacks.
    Url(String),
}

/// Whether `/metrics` is open or asks for a token like `/v1/*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsAccess {
    /// Anyone who reaches the service reads the metrics (the default).
    Open,
    /// A valid token is needed (any grant).
    Token,
}

/// One `[[auth.grant]]`: tokens it matches may use its agents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// What a token must carry.
    pub matches: GrantMatch,
    /// The agents it opens, the first the caller's default.
    pub agents: Vec<String>,
    /// Where it is written.
    pub origin: Origin,
}

/// What a grant asks of a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantMatch {
    /// The space-separated `scope` claim (or the `scp` array) holds it.
    Scope(String),
    /// The claim `name` is the string `value`, or an array holding it.
    Claim {
        /// The claim's name.
        name: String,
        /// The value it must have.
        value: String,
    },
}

/// `[auth.limits]`: token buckets refilled per minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Requests per minute one caller may make (its bucket's size too).
    pub calls_per_minute: Option<u32>,
    /// Calls per minute one caller may make to one tool.
    pub tool_calls_per_minute: Option<u32>,
    /// Most callers whose buckets are kept; the idlest go first.
    pub callers: u32,
}

impl Loader {
    /// `[auth]`, checked against the agents the policy declares.
    pub(super) fn auth(
        &mut self,
        src: &Source,
        table: Option<&Spanned<raw::RawAuth>>,
        agents: &[Agent],
    ) -> Option<AuthPolicy> {
        let table = table?;
        let origin = src.at(table);
        let a = table.get_ref();
        let before = self.problems.len();
        let issuer = self.issuer(src, table);
        let metrics = match a.metrics.as_ref().map(|m| (m, m.get_ref().as_str())) {
            None | Some((_, "open")) => MetricsAccess::Open,
            Some((_, "token")) => MetricsAccess::Token,
            Some((m, other)) => {
                self.problems.push(
                    src.at(m)
                        .coded(code::NOT_A_CHOICE, format!("auth.metrics {:?} is not a choice", crate::names::escape(other)))
                        .help("use \"open\" (anyone who reaches the service reads /metrics) or \"token\""),
                );
                MetricsAccess::Open
            }
        };
        let grants: Vec<Grant> = a
            .grant
            .iter()
            .filter_map(|g| self.grant(src, g, agents))
            .collect();
        let keys = self.keys(src, &a.key, agents);
        let has_issuer = a.issuer.is_some() || a.audience.is_some() || a.jwks.is_some();
        if has_issuer && a.grant.is_empty() {
            self.problems.push(
                src.at(table)
                    .coded(
                        code::MISSING_VALUE,
                        "[auth] has no [[auth.grant]]: every token would be refused",
                    )
                    .help("add [[auth.grant]] with scope = \"...\" and agents = [\"...\"]"),
            );
        }
        if !has_issuer {
            if let Some(g) = a.grant.first() {
                self.problems.push(
                    src.at(g)
                        .coded(code::CONFLICT, "[[auth.grant]] matches a token's scopes or claims, and [auth] names no issuer of tokens")
                        .help("add issuer, audience and jwks to [auth], or give [[auth.key]] its agents instead"),
                );
            } else if a.key.is_empty() {
                self.problems.push(
                    src.at(table)
                        .coded(code::MISSING_VALUE, "[auth] names neither an issuer of tokens nor an API key: every request would be refused")
                        .help("set issuer, audience and jwks (an identity provider's tokens), or add [[auth.key]] (`muster auth key new NAME --agents A`)"),
                );
            }
        }
        let limits = a.limits.as_ref().map(|l| {
            let r = l.get_ref();
            let per_minute = |loader: &mut Loader, v: Option<&Spanned<i64>>, key: &str| {
                v.and_then(|v| loader.positive(src, v, key))
            };
            CallLimits {
                calls_per_minute: per_minute(
                    self,
                    r.calls_per_minute.as_ref(),
                    "auth.limits.calls_per_minute",
                ),
                tool_calls_per_minute: per_minute(
                    self,
                    r.tool_calls_per_minute.as_ref(),
                    "auth.limits.tool_calls_per_minute",
                ),
                callers: r
                    .callers
                    .as_ref()
                    .and_then(|v| self.positive(src, v, "auth.limits.callers"))
                    .unwrap_or(DEFAULT_LIMIT_CALLERS),
            }
        });
        (self.problems.len() == before).then_some(AuthPolicy {
            issuer,
            keys,
            metrics,
            grants,
            limits,
            origin,
        })
    }

    /// `issuer`, `audience` and `jwks` (all three or none) and the keys
    /// that tune them.
    fn issuer(&mut self, src: &Source, table: &Spanned<raw::RawAuth>) -> Option<Issuer> {
        let a = table.get_ref();
        let (Some(issuer), Some(audience), Some(jwks)) = (&a.issuer, &a.audience, &a.jwks) else {
            let given = [
                ("issuer", a.issuer.is_some()),
                ("audience", a.audience.is_some()),
                ("jwks", a.jwks.is_some()),
            ];
            if given.iter().any(|(_, g)| *g) {
                for (key, _) in given.iter().filter(|(_, g)| !g) {
                    self.problems.push(
                        src.at(table)
                            .coded(code::MISSING_VALUE, format!("[auth] has no {key}: bearer tokens need issuer, audience and jwks together"))
                            .help(format!("set auth.{key} (docs/auth.md), or remove issuer, audience and jwks to take API keys only")),
                    );
                }
            } else {
                let tuning = [
                    a.authorization_servers.as_ref().map(|v| src.at(v)),
                    a.leeway_secs.as_ref().map(|v| src.at(v)),
                    a.jwks_refetch_secs.as_ref().map(|v| src.at(v)),
                ];
                if let Some(at) = tuning.into_iter().flatten().next() {
                    self.problems.push(
                        at.coded(code::CONFLICT, "authorization_servers, leeway_secs and jwks_refetch_secs tune bearer tokens, and [auth] names no issuer")
                            .help("remove the key, or set issuer, audience and jwks"),
                    );
                }
            }
            return None;
        };
        let mut ok = true;
        for (value, key) in [(issuer, "issuer"), (audience, "audience")] {
            if value.get_ref().trim().is_empty() {
                ok = false;
                self.problems.push(
                    src.at(value)
                        .coded(code::MISSING_VALUE, format!("auth.{key} is empty"))
                        .help(format!(
                            "set auth.{key} to the exact string tokens carry in `{}`",
                            if key == "issuer" { "iss" } else { "aud" }
                        )),
                );
            }
        }
        let jwks = self.jwks(src, jwks);
        let authorization_servers = match &a.authorization_servers {
            None => vec![issuer.get_ref().clone()],
            Some(list) => {
                if list.get_ref().is_empty() {
                    ok = false;
                    self.problems.push(
                        src.at(list)
                            .coded(code::MISSING_VALUE, "auth.authorization_servers is empty")
                            .help(
                                "name the issuer's URL, or leave the key out to name auth.issuer",
                            ),
                    );
                }
                list.get_ref().iter().map(|s| s.get_ref().clone()).collect()
            }
        };
        let leeway_secs = self.bounded(
            src,
            a.leeway_secs.as_ref(),
            "auth.leeway_secs",
            MAX_LEEWAY_SECS,
            DEFAULT_LEEWAY_SECS,
        );
        let jwks_refetch_secs = self.bounded(
            src,
            a.jwks_refetch_secs.as_ref(),
            "auth.jwks_refetch_secs",
            3600,
            DEFAULT_JWKS_REFETCH_SECS,
        );
        Some(Issuer {
            issuer: issuer.get_ref().clone(),
            audience: audience.get_ref().clone(),
            jwks: jwks?,
            authorization_servers,
            leeway_secs,
            jwks_refetch_secs,
        })
        .filter(|_| ok)
    }

    /// A whole number of seconds from 0 to `max` at `key`, or `default`.
    fn bounded(
        &mut self,
        src: &Source,
        value: Option<&Spanned<i64>>,
        key: &str,
        max: u64,
        default: u64,
    ) -> u64 {
        let Some(value) = value else { return default };
        match u64::try_from(*value.get_ref()) {
            Ok(v) if v <= max => v,
            _ => {
                self.problems.push(
                    src.at(value)
                        .coded(code::OUT_OF_RANGE, format!("{key} = {} is out of range", value.get_ref()))
                        .help(format!("use a whole number of seconds from 0 to {max}, or leave it out for {default}")),
                );
                default
            }
        }
    }

    /// `auth.jwks`: an https URL, an http URL to this machine, or a file in
    /// the policy directory that exists.
    fn jwks(&mut self, src: &Source, value: &Spanned<String>) -> Option<JwksSource> {
        let text = value.get_ref();
        if let Some(rest) = text.strip_prefix("https://") {
            if rest.is_empty() {
                self.problems.push(
                    src.at(value)
                        .coded(code::INVALID_VALUE, "auth.jwks \"https://\" names no host")
                        .help(
                            "write the issuer's jwks_uri, such as \"https://idp.example.com/jwks\"",
                        ),
                );
                return None;
            }
            return Some(JwksSource::Url(text.clone()));
        }
        if let Some(rest) = text.strip_prefix("http://") {
            let authority = rest.split('/').next().unwrap_or_default();
            let local = crate::loopback::split_authority(authority)
                .is_some_and(|(host, _)| crate::loopback::host(host));
            if local {
                return Some(JwksSource::Url(text.clone()));
            }
            self.problems.push(
                src.at(value)
                    .coded(code::INSECURE_URL, format!("auth.jwks {:?} is plain http to a host that is not this machine: its keys could be swapped on the way", crate::secrets::shown_url(text)))
                    .help("use the issuer's https:// jwks_uri (plain http is allowed only to a loopback host)"),
            );
            return None;
        }
        if text.contains("://") {
            self.problems.push(
                src.at(value)
                    .coded(code::INVALID_VALUE, format!("auth.jwks {:?} is neither an https:// URL nor a file", crate::names::escape(text)))
                    .help("write the issuer's https:// jwks_uri, or a JSON Web Key Set file's path relative to the policy directory"),
            );
            return None;
        }
        let path = self.root.join(text);
        if !self.confined(
            src.at(value).coded(
                code::OUTSIDE_POLICY_DIRECTORY,
                format!("auth.jwks {text:?}"),
            ),
            &path,
        ) {
            return None;
        }
        if !path.is_file() {
            self.problems.push(
                src.at(value)
                    .coded(code::FILE_MISSING, format!("auth.jwks names {}, which is not a file", path.display()))
                    .help("save the issuer's JSON Web Key Set (its jwks_uri's document) there, or give its https:// URL"),
            );
            return None;
        }
        Some(JwksSource::File(path))
    }

    /// One `[[auth.grant]]`: a scope or a claim and value, and agents the
    /// policy declares.
    fn grant(
        &mut self,
        src: &Source,
        g: &Spanned<raw::RawGrant>,
        agents: &[Agent],
    ) -> Option<Grant> {
        let r = g.get_ref();
        let matches = match (&r.scope, &r.claim, &r.value) {
            (Some(scope), None, None)
                if !scope.get_ref().trim().is_empty() && !scope.get_ref().contains(' ') =>
            {
                GrantMatch::Scope(scope.get_ref().clone())
            }
            (Some(scope), None, None) => {
                self.problems.push(
                    src.at(scope)
                        .coded(code::INVALID_VALUE, format!("auth.grant scope {:?} is empty or holds a space", crate::names::escape(scope.get_ref())))
                        .help("name one scope, such as \"memory:read\"; give several grants for several scopes"),
                );
                return None;
            }
            (None, Some(name), Some(value)) if !name.get_ref().is_empty() => GrantMatch::Claim {
                name: name.get_ref().clone(),
                value: value.get_ref().clone(),
            },
            (Some(scope), Some(_), _) | (Some(scope), _, Some(_)) => {
                self.problems.push(
                    src.at(scope)
                        .coded(
                            code::CONFLICT,
                            "an auth.grant has both scope and claim/value",
                        )
                        .help(
                            "match a scope, or a claim and its value, not both: write two grants",
                        ),
                );
                return None;
            }
            _ => {
                self.problems.push(
                    src.at(g)
                        .coded(code::MISSING_VALUE, "an auth.grant names neither a scope nor a claim and its value")
                        .help("write scope = \"memory:read\", or claim = \"groups\" and value = \"writers\""),
                );
                return None;
            }
        };
        let agents = self.opened(src, &r.agents, agents, "auth.grant")?;
        Some(Grant {
            matches,
            agents,
            origin: src.at(g),
        })
    }

    /// The agents a grant or key (`what`) opens: at least one, each one
    /// the policy declares.
    pub(super) fn opened(
        &mut self,
        src: &Source,
        named: &Spanned<Vec<Spanned<String>>>,
        agents: &[Agent],
        what: &str,
    ) -> Option<Vec<String>> {
        if named.get_ref().is_empty() {
            self.problems.push(
                src.at(named)
                    .coded(code::MISSING_VALUE, format!("{what} agents is empty"))
                    .help(format!(
                        "name the agents this {what} opens; the first is the caller's default"
                    )),
            );
            return None;
        }
        let mut ok = true;
        for name in named.get_ref() {
            if !agents.iter().any(|a| &a.name == name.get_ref()) {
                ok = false;
                let known: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
                self.problems.push(
                    src.at(name)
                        .coded(
                            code::UNKNOWN_NAME,
                            format!(
                                "{what} names agent {:?}, which no [[agent]] declares",
                                crate::names::escape(name.get_ref())
                            ),
                        )
                        .help(format!(
                            "name one of the agents: {}",
                            if known.is_empty() {
                                "(none declared; add [[agent]] tables)".to_string()
                            } else {
                                known.join(", ")
                            }
                        )),
                );
            }
        }
        ok.then(|| {
            named
                .get_ref()
                .iter()
                .map(|a| a.get_ref().clone())
                .collect()
        })
    }
}
