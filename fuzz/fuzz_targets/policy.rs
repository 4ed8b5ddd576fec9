//! A policy directory built from fuzz bytes, loaded and, when valid, planned.
//!
//! The input is split at NUL bytes into the files below, in order; a part
//! left out (or empty) is a file not written. Problems must name a file
//! inside the directory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use muster::policy::Inputs;
use muster_fuzz::{assert_names_file, plan_json, scratch};

const FILES: [&str; 6] = [
    "muster.toml",
    "tools/a.toml",
    "mcp/servers.toml",
    "mcp/a.json",
    "flags/production.toml",
    "tools/schemas/a.json",
];

fuzz_target!(|data: &[u8]| {
    let dir = scratch().join("policies");
    let _ = std::fs::remove_dir_all(&dir);
    for sub in ["tools/schemas", "mcp", "flags"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    for (name, part) in FILES.iter().zip(data.split(|&b| b == 0)) {
        if !part.is_empty() {
            std::fs::write(dir.join(name), part).unwrap();
        }
    }
    match Inputs::load(&dir) {
        Ok(inputs) => {
            let _ = inputs.registered_names();
            if let Err(err) = plan_json(&inputs) {
                let _ = err.to_string();
            }
        }
        Err(err) => assert_names_file(&err, |file| file.starts_with(&dir)),
    }
});
