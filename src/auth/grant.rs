//! Grants: a token's claims → the agents its caller may use. A grant
//! matches a scope the token carries (the space-separated `scope` claim,
//! or the `scp` array some issuers send) or a claim's value (a string, or
//! an array holding it); the agents of every matching grant open, in
//! grant order, the first the caller's default.

use super::Caller;
use crate::policy::{Grant, GrantMatch};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// The caller `claims` name, with the agents `grants` open to it (none:
/// no grant matched).
pub(super) fn caller(grants: &[Grant], claims: &Map<String, Value>) -> Caller {
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_string);
    let client_id = text("client_id").or_else(|| text("azp"));
    let sub = text("sub")
        .or_else(|| client_id.clone())
        .unwrap_or_default();
    let scopes = scopes(claims);
    let mut agents: Vec<String> = Vec::new();
    for grant in grants {
        let matched = match &grant.matches {
            GrantMatch::Scope(scope) => scopes.contains(scope),
            GrantMatch::Claim { name, value } => match claims.get(name) {
                Some(Value::String(s)) => s == value,
                Some(Value::Array(items)) => items.iter().any(|i| i.as_str() == Some(value)),
                _ => false,
            },
        };
        if matched {
            for agent in &grant.agents {
                if !agents.contains(agent) {
                    agents.push(agent.clone());
                }
            }
        }
    }
    Caller {
        sub,
        client_id,
        scopes,
        agents,
    }
}

/// The token's scopes: `scope` split on spaces, and `scp` when an array.
fn scopes(claims: &Map<String, Value>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if let Some(Value::String(scope)) = claims.get("scope") {
        out.extend(
            scope
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
    }
    if let Some(Value::Array(items)) = claims.get("scp") {
        out.extend(items.iter().filter_map(Value::as_str).map(str::to_string));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Origin;

    fn grant(matches: GrantMatch, agents: &[&str]) -> Grant {
        Grant {
            matches,
            agents: agents.iter().map(|a| a.to_string()).collect(),
            origin: Origin {
                file: "muster.toml".into(),
                line: None,
            },
        }
    }

    #[test]
    fn scopes_and_claims_open_agents_in_grant_order() {
        let grants = [
            grant(GrantMatch::Scope("memory:write".into()), &["writer"]),
            grant(
                GrantMatch::Scope("memory:read".into()),
                &["reader", "writer"],
            ),
            grant(
                GrantMatch::Claim {
                    name: "groups".into(),
                    value: "ops".into(),
                },
                &["ops"],
            ),
        ];
        let claims: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "sub": "alice", "azp": "app", "scope": "openid memory:read", "groups": ["ops"]
        }))
        .unwrap();
        let c = caller(&grants, &claims);
        assert_eq!(c.sub, "alice");
        assert_eq!(c.client_id.as_deref(), Some("app"));
        assert_eq!(c.agents, ["reader", "writer", "ops"]);
        let none: Map<String, Value> =
            serde_json::from_value(serde_json::json!({"client_id": "svc", "scope": "other"}))
                .unwrap();
        let c = caller(&grants, &none);
        assert_eq!(c.sub, "svc");
        assert!(c.agents.is_empty());
    }
}
