//! An MCP snapshot, read from a file as planning reads it and parsed as
//! discovery's lenient reader does; what reads back must write back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use muster::snapshot::{diff_snapshots, parse_lenient, read_snapshot, snapshot_bytes};
use muster_fuzz::{assert_names, scratch};

fuzz_target!(|data: &[u8]| {
    let path = scratch().join("snapshot.json");
    std::fs::write(&path, data).unwrap();
    match read_snapshot(&path) {
        Ok(tools) => {
            assert!(diff_snapshots(&tools, &tools).is_empty());
            let again = String::from_utf8(snapshot_bytes(&tools)).unwrap();
            let back = parse_lenient(&again).expect("a written snapshot reads back");
            assert_eq!(back, tools);
        }
        Err(err) => assert_names(&err, &path),
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_lenient(text);
    }
});
