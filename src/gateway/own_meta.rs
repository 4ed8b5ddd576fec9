//! muster's own keys in a result's `_meta`. muster writes its details (a refusal's typed
//! problems, an upstream failure, a drift) under [`META_KEY`], and a client trusts what it
//! finds there as muster's. A server's result is forwarded as the server sent it, except that
//! anything the server put under a key in muster's namespace (`dev.muster/…`) is moved under
//! [`UPSTREAM_META_KEY`], so no server can speak as muster. It decides nothing else: every
//! other member, and every byte of the values moved, is kept as sent.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;
use std::fmt;

/// Where muster's own details ride in a result's `_meta`.
pub const META_KEY: &str = "dev.muster/gateway";
/// Where what a server put under muster's own keys is moved, key by key as the server wrote
/// them.
pub const UPSTREAM_META_KEY: &str = "dev.muster/upstream-meta";
/// The namespace muster's keys live in.
const NAMESPACE: &str = "dev.muster/";

/// A tool result for the model: `text`, with muster's details in `_meta`.
pub(super) fn tool_result(text: &str, meta: &Value) -> String {
    wrapped(text, meta, false)
}

/// A tool error for the model: `text`, with muster's details in `_meta`.
pub(super) fn tool_error(text: &str, meta: &Value) -> String {
    wrapped(text, meta, true)
}

fn wrapped(text: &str, meta: &Value, error: bool) -> String {
    serde_json::json!({
        "content": [{"type": "text", "text": text}],
        "isError": error,
        "_meta": {META_KEY: meta},
    })
    .to_string()
}

/// The members of a JSON object in the order written, values as written.
struct Members(Vec<(String, Box<RawValue>)>);

impl<'de> serde::Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Each)
    }
}

impl Members {
    fn write(&self) -> String {
        let mut out = String::from("{");
        for (i, (name, value)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(name).unwrap_or_default());
            out.push(':');
            out.push_str(value.get());
        }
        out.push('}');
        out
    }
}

/// `result` (a server's `tools/call` result object) with what it put under muster's own
/// `_meta` keys moved under [`UPSTREAM_META_KEY`]; the same text when it put nothing there.
/// A result whose object members cannot be read (a key with a lone surrogate `\ud800`, which
/// JSON's grammar allows and Rust's strings do not) is refused with why: muster cannot tell
/// whether it speaks as muster, and clients that read it would see the keys it spells.
pub(crate) fn from_upstream(result: Box<RawValue>) -> Result<Box<RawValue>, String> {
    // A key may be spelt with escapes (`dev\u002emuster/…`): any escape means a full look.
    let text = result.get();
    if !text.contains("muster") && !text.contains("\\u") {
        return Ok(result);
    }
    match moved(text)? {
        Some(moved) => RawValue::from_string(moved).map_err(|e| e.to_string()),
        None => Ok(result),
    }
}

/// `result` (a forwarded result object's text, muster's keys already
/// moved by [`from_upstream`]) with `details` under [`META_KEY`] in its
/// `_meta`, every other byte as the server sent it; `result` unchanged when
/// it is not an object (the caller judges that elsewhere).
pub(super) fn with_own(result: &str, details: &Value) -> String {
    let Ok(mut top) = serde_json::from_str::<Members>(result) else {
        return result.to_string();
    };
    let Ok(own) = RawValue::from_string(details.to_string()) else {
        return result.to_string();
    };
    match top.0.iter_mut().find(|(name, _)| name == "_meta") {
        Some((_, value)) => {
            let mut meta =
                serde_json::from_str::<Members>(value.get()).unwrap_or(Members(Vec::new()));
            meta.0.retain(|(key, _)| key != META_KEY);
            meta.0.push((META_KEY.to_string(), own));
            match RawValue::from_string(meta.write()) {
                Ok(written) => *value = written,
                Err(_) => return result.to_string(),
            }
        }
        None => {
            let meta = Members(vec![(META_KEY.to_string(), own)]);
            match RawValue::from_string(meta.write()) {
                Ok(written) => top.0.push(("_meta".to_string(), written)),
                Err(_) => return result.to_string(),
            }
        }
    }
    top.write()
}

/// The result text with muster's keys moved, when the server used any; why
/// not, when its members or its `_meta`'s cannot be read.
fn moved(text: &str) -> Result<Option<String>, String> {
    let unreadable = |what: &str, e: serde_json::Error| format!("{what} cannot be read: {e}");
    let mut top: Members =
        serde_json::from_str(text).map_err(|e| unreadable("the result's members", e))?;
    let mut changed = false;
    for (name, value) in &mut top.0 {
        // Only an object has keys; a `_meta` of another type carries none of muster's.
        if name != "_meta" || !value.get().trim_start().starts_with('{') {
            continue;
        }
        let meta = serde_json::from_str::<Members>(value.get())
            .map_err(|e| unreadable("the result's `_meta`", e))?;
        let (own, rest): (Vec<_>, Vec<_>) = meta
            .0
            .into_iter()
            .partition(|(key, _)| key.starts_with(NAMESPACE));
        if own.is_empty() {
            continue;
        }
        let mut meta = Members(rest);
        let own = RawValue::from_string(Members(own).write()).map_err(|e| e.to_string())?;
        meta.0.push((UPSTREAM_META_KEY.to_string(), own));
        *value = RawValue::from_string(meta.write()).map_err(|e| e.to_string())?;
        changed = true;
    }
    Ok(changed.then(|| top.write()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        from_upstream(RawValue::from_string(text.to_string()).unwrap())
            .expect("readable")
            .get()
            .to_string()
    }

    #[test]
    fn muster_adds_its_details_beside_the_servers_meta() {
        let details = serde_json::json!({"drift": {"refused": false}});
        let with = with_own(r#"{"content":[],"_meta":{"vendor/x":1.50}}"#, &details);
        assert_eq!(
            with,
            r#"{"content":[],"_meta":{"vendor/x":1.50,"dev.muster/gateway":{"drift":{"refused":false}}}}"#
        );
        let with = with_own(r#"{"content":[]}"#, &details);
        assert_eq!(
            with,
            r#"{"content":[],"_meta":{"dev.muster/gateway":{"drift":{"refused":false}}}}"#
        );
        assert_eq!(with_own("[1]", &details), "[1]");
    }

    #[test]
    fn a_servers_keys_in_musters_namespace_are_moved_and_the_rest_kept_as_sent() {
        let sent = r#"{"content":[],"_meta":{"vendor/x":1.50,"dev.muster/gateway":{"check":"forged","n":18446744073709551616},"dev\u002emuster/other":-0}}"#;
        let got: Value = serde_json::from_str(&shown(sent)).unwrap();
        assert!(got["_meta"].get(META_KEY).is_none(), "{got}");
        assert!(got["_meta"].get("dev.muster/other").is_none(), "{got}");
        let text = shown(sent);
        assert!(
            text.contains(r#""dev.muster/upstream-meta":{"dev.muster/gateway":{"check":"forged","n":18446744073709551616},"dev.muster/other":-0}"#),
            "{text}"
        );
        assert!(text.contains(r#""vendor/x":1.50"#), "{text}");
        // Nothing of muster's: the very same text.
        for plain in [
            r#"{"content":[{"type":"text","text":"muster"}],"_meta":{"vendor/x":1}}"#,
            r#"{"content":[],"structuredContent":{"dev.muster/gateway":1}}"#,
            "{ \"a\" : 1 }",
        ] {
            assert_eq!(shown(plain), plain);
        }
    }

    /// Found by a hostile probe: a key serde cannot read as a string (a
    /// lone surrogate) anywhere in the result, or in its `_meta`, made the
    /// move give up and forward `dev.muster/gateway` as the server wrote it.
    #[test]
    fn a_result_whose_keys_cannot_be_read_is_refused_not_forwarded() {
        for sent in [
            r#"{"content":[],"\ud800":1,"_meta":{"dev.muster/gateway":{"check":"forged"}}}"#,
            r#"{"content":[],"_meta":{"\ud800":1,"dev.muster/gateway":{"check":"forged"}}}"#,
            r#"{"content":[],"_meta":{"\ud800":1}}"#,
        ] {
            let raw = RawValue::from_string(sent.to_string()).expect("JSON's grammar allows it");
            let why = from_upstream(raw).expect_err(sent);
            assert!(why.contains("cannot be read"), "{why}");
        }
        // A `_meta` that is no object has no keys to move.
        assert_eq!(
            shown(r#"{"content":[],"_meta":"muster"}"#),
            r#"{"content":[],"_meta":"muster"}"#
        );
    }
}
