//! `[mcp.oauth]` of an HTTP `[[mcp]]` block: the OAuth 2.1 client
//! credentials muster uses to get an access token for that server from its
//! authorization server (docs/auth.md, "Upstream credentials"). It checks
//! the table's form: a token endpoint muster may reach, a client id, a
//! secret written as `${VAR}` (never in the policy itself), and no
//! `Authorization` header beside it. It fetches nothing: the MCP client
//! does, when it reaches the server.

use super::load::{Loader, Source};
use super::raw;
use crate::error::code;
use toml::Spanned;

/// How an HTTP `[[mcp]]` block gets its access token: OAuth client
/// credentials (RFC 6749 §4.4), values as written (`client_secret` holds a
/// `${VAR}`, filled when the server is reached).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamOAuth {
    /// The authorization server's token endpoint.
    pub token_url: String,
    /// muster's client id there.
    pub client_id: String,
    /// The client secret as written: `${VAR}`, filled from the environment.
    pub client_secret: String,
    /// The scopes asked for (space-separated), when set.
    pub scope: Option<String>,
    /// The resource indicator (RFC 8707) asked for, when set.
    pub resource: Option<String>,
    /// An `audience` parameter, for providers that want one (Auth0, Okta).
    pub audience: Option<String>,
    /// How the client authenticates to the token endpoint.
    pub auth_method: ClientAuth,
}

/// How muster presents its client id and secret to the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// `client_secret_basic`: HTTP Basic (the default, RFC 6749 §2.3.1).
    Basic,
    /// `client_secret_post`: in the form body.
    Post,
}

impl Loader {
    /// The block's `oauth` table, checked; `subject` names the block.
    pub(super) fn oauth(
        &mut self,
        src: &Source,
        raw: &raw::RawServer,
        subject: &str,
    ) -> Option<UpstreamOAuth> {
        let table = raw.oauth.as_ref()?;
        let o = table.get_ref();
        let before = self.problems.len();
        if raw.url.is_none() {
            self.problems.push(
                src.at(table)
                    .coded(
                        code::CONFLICT,
                        format!("{subject}: oauth gets a token for a url, and the block has none"),
                    )
                    .help("remove oauth, or reach the server by url = \"https://.../mcp\""),
            );
        }
        if let Some((header, _)) = raw
            .headers
            .iter()
            .find(|(h, _)| h.get_ref().eq_ignore_ascii_case("authorization"))
        {
            self.problems.push(
                src.at(header)
                    .coded(code::CONFLICT, format!("{subject}: headers.Authorization and oauth both say how muster authenticates"))
                    .help("keep oauth (muster gets and refreshes the token) or a static Authorization header, not both"),
            );
        }
        for (key, url) in [
            ("token_url", Some(&o.token_url)),
            ("resource", o.resource.as_ref()),
        ] {
            let Some(url) = url else { continue };
            if let Some((code, why)) = super::reach::url_problem(url.get_ref()) {
                self.problems.push(
                    src.at(url)
                        .coded(code, format!("{subject}: oauth.{key} {why}"))
                        .help("write the authorization server's https:// URL (http:// only to this machine)"),
                );
            }
        }
        if o.client_id.get_ref().trim().is_empty() {
            self.problems.push(
                src.at(&o.client_id)
                    .coded(
                        code::MISSING_VALUE,
                        format!("{subject}: oauth.client_id is empty"),
                    )
                    .help("write the client id the authorization server registered for muster"),
            );
        }
        if super::vars_named(o.client_secret.get_ref()).is_empty() {
            // The value is not quoted: it may be the secret itself.
            self.problems.push(
                src.at(&o.client_secret)
                    .coded(code::INVALID_VALUE, format!("{subject}: oauth.client_secret is written in the policy, not read from the environment"))
                    .help("write client_secret = \"${NAME}\" and set NAME in muster's environment; a secret never goes in a policy file"),
            );
        } else {
            self.var_syntax(src, &o.client_secret, subject, "oauth.client_secret");
        }
        let auth_method = match o.auth_method.as_ref().map(|m| (m, m.get_ref().as_str())) {
            None | Some((_, "basic")) => ClientAuth::Basic,
            Some((_, "post")) => ClientAuth::Post,
            Some((m, other)) => {
                self.problems.push(
                    src.at(m)
                        .coded(code::NOT_A_CHOICE, format!("{subject}: oauth.auth_method {:?} is not a choice", crate::names::escape(other)))
                        .help("use \"basic\" (client_secret_basic, the default) or \"post\" (client_secret_post)"),
                );
                ClientAuth::Basic
            }
        };
        let text = |v: &Option<Spanned<String>>| v.as_ref().map(|v| v.get_ref().clone());
        (self.problems.len() == before).then(|| UpstreamOAuth {
            token_url: o.token_url.get_ref().clone(),
            client_id: o.client_id.get_ref().clone(),
            client_secret: o.client_secret.get_ref().clone(),
            scope: text(&o.scope),
            resource: text(&o.resource),
            audience: text(&o.audience),
            auth_method,
        })
    }
}
