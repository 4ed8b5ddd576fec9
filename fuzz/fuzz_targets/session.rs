//! A session document read, then opened against the bundled policy: read
//! whole or refused, and opened only when every claim holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use muster::session::{self, Opened};
use muster_fuzz::{assert_names, bundled};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = Path::new("session.json");
    let doc = match session::read(text, file) {
        Ok(doc) => doc,
        Err(err) => return assert_names(&err, file),
    };
    let _ = session::to_json_string(&doc);
    // Unsigned documents are read as a service without a key reads them:
    // every claim re-checked against the bundled policy.
    let keys = session::SessionKeys::none();
    match session::open(
        bundled(),
        doc,
        &keys,
        file,
        &mut muster::tokens::TokenCache::in_memory(),
    ) {
        Ok(Opened::Live(mut live)) => {
            let _ = live.roster_json();
            let _ = live.search("calendar event", 5);
            let _ = live.plan();
            let _ = live.document();
            let _ = &mut live;
        }
        Ok(Opened::Mismatch(report)) => {
            let _ = serde_json::to_string(&report).unwrap();
        }
        Err(err) => {
            let _ = err.to_string();
        }
    }
});
