//! The handshake: what `initialize` and `server/discover` answer (the
//! revisions muster speaks, its capabilities, the instructions naming the
//! tools left to the host), and a 2026-07-28 result's `resultType`. Decides
//! which revision a client is answered in; nothing about tools or calls.

use super::*;

impl Gateway {
    /// The `server/discover` result (2026-07-28): what `initialize`
    /// answers, for a client that does no handshake.
    pub(super) fn discover(&self) -> String {
        serde_json::json!({
            "resultType": "complete",
            "supportedVersions": supported_versions(),
            "capabilities": self.capabilities(),
            "serverInfo": {"name": "muster", "version": env!("CARGO_PKG_VERSION")},
            "instructions": self.current.load().instructions.get_or_init(|| self.instructions()),
            "cacheScope": "public",
            "ttlMs": 0,
        })
        .to_string()
    }

    pub(super) fn initialize(
        &self,
        id: &RawValue,
        params: Option<&Value>,
    ) -> Result<(String, &'static str), Failure> {
        let asked = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Failure::new(
                    Some(id.to_owned()),
                    rpc::INVALID_PARAMS,
                    "initialize needs params.protocolVersion (a string such as \"2025-11-25\")",
                )
            })?;
        let version = DOWNSTREAM_VERSIONS
            .iter()
            .find(|v| **v == asked)
            .copied()
            .unwrap_or(DOWNSTREAM_VERSIONS[0]);
        let result = serde_json::json!({
            "protocolVersion": version,
            "capabilities": self.capabilities(),
            "serverInfo": {"name": "muster", "version": env!("CARGO_PKG_VERSION")},
            "instructions": self.current.load().instructions.get_or_init(|| self.instructions()),
        });
        Ok((result.to_string(), version))
    }

    /// What the client is told at start: what the gateway offers and what
    /// it leaves to the host.
    pub(super) fn instructions(&self) -> String {
        let left = self.left_to_host().unwrap_or_default();
        let mut text = String::from(
            "muster checks every tool call against what this chat was offered before it reaches a server.",
        );
        if !left.is_empty() {
            text.push_str(&format!(
                " Configured tools are not served here; the host runs them: {}.",
                left.join(", ")
            ));
        }
        text
    }
}

/// Every revision muster answers in, newest first.
pub(super) fn supported_versions() -> Vec<&'static str> {
    std::iter::once(MODERN_VERSION)
        .chain(DOWNSTREAM_VERSIONS)
        .collect()
}

/// `result` (an object's text) with 2026-07-28's `resultType: "complete"`.
/// A result that has one already (a 2026-07-28 server's) is kept as it is.
pub(super) fn complete(result: &str) -> String {
    type Keys<'a> = HashMap<std::borrow::Cow<'a, str>, serde::de::IgnoredAny>;
    let has = serde_json::from_str::<Keys<'_>>(result).map(|k| k.contains_key("resultType"));
    match result.trim_start().strip_prefix('{') {
        _ if has.unwrap_or(true) => result.to_string(),
        Some(rest) if rest.trim_start().starts_with('}') => r#"{"resultType":"complete"}"#.into(),
        Some(rest) => format!(r#"{{"resultType":"complete",{rest}"#),
        None => result.to_string(),
    }
}
