//! The lock file: read, and when valid, written and read back unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use muster::lock::Lock;
use muster_fuzz::{assert_names, scratch};

fuzz_target!(|data: &[u8]| {
    let path = scratch().join("mcp.lock");
    std::fs::write(&path, data).unwrap();
    match Lock::read(&path) {
        Ok(lock) => {
            let text = lock.to_toml();
            let back = Lock::parse(&text, &path).expect("a written lock reads back");
            assert_eq!(back, lock);
        }
        Err(err) => assert_names(&err, &path),
    }
});
