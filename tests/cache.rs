//! The token-count cache never changes a result: plans are byte-identical
//! with the cache cold, warm, damaged or turned off, a changed definition
//! is recounted, and a cached count equals a fresh one for any definition.

mod common;

use common::{Fixture, muster};
use muster::schema::Schema;
use muster::tokens::{Definition, Encoding, TokenCache, cache::FILE_NAME};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::path::Path;

fn plan_json(fx: &Fixture, cache_dir: &Path, extra: &[&str]) -> String {
    let mut args = vec!["plan", "--flags", "production", "--format", "json"];
    args.extend_from_slice(extra);
    let out = muster(fx.path())
        .env("MUSTER_CACHE_DIR", cache_dir)
        .args(&args)
        .assert()
        .code(0);
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

/// The cache's two files (the table and its journal, `cache_file`), as
/// they are now.
fn files(cache_dir: &Path) -> [Option<Vec<u8>>; 2] {
    let file = cache_dir.join(FILE_NAME);
    let journal = muster::cache_file::journal_path(&file);
    [std::fs::read(&file).ok(), std::fs::read(&journal).ok()]
}

#[test]
fn plans_are_byte_identical_cold_warm_damaged_and_without_cache() {
    let fx = Fixture::bundled();
    let cache_dir = fx.path().join("cache");

    let uncached = plan_json(&fx, &cache_dir, &["--no-cache"]);
    assert_eq!(
        files(&cache_dir),
        [None, None],
        "--no-cache wrote the cache"
    );

    let cold = plan_json(&fx, &cache_dir, &[]);
    let written = files(&cache_dir);
    assert!(
        written.iter().any(Option::is_some),
        "a cold run did not write the cache"
    );
    let warm = plan_json(&fx, &cache_dir, &[]);
    assert_eq!(files(&cache_dir), written, "a warm run rewrote the cache");
    assert_eq!(cold, uncached);
    assert_eq!(warm, uncached);

    let journal = muster::cache_file::journal_path(&cache_dir.join(FILE_NAME));
    let good = std::fs::read(&journal).unwrap();
    let damaged: [(&str, Vec<u8>); 4] = [
        ("truncated", good[..good.len() / 2 + 3].to_vec()),
        ("empty", Vec::new()),
        ("foreign", b"{\"not\": \"a token cache\"}".to_vec()),
        ("bit-flipped", {
            let mut b = good.clone();
            let at = b.len() / 2;
            b[at] ^= 1;
            b
        }),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&journal, &bytes).unwrap();
        assert_eq!(plan_json(&fx, &cache_dir, &[]), uncached, "{what} cache");
        // What was lost was counted again and kept: the next run is warm
        // and writes nothing.
        let mended = files(&cache_dir);
        assert_eq!(plan_json(&fx, &cache_dir, &[]), uncached, "{what} cache");
        assert_eq!(files(&cache_dir), mended, "{what} cache not mended");
    }
}

#[test]
fn a_changed_definition_is_recounted() {
    let fx = Fixture::bundled();
    let cache_dir = fx.path().join("cache");
    plan_json(&fx, &cache_dir, &[]);
    fx.edit(
        "policies/tools/10-core.toml",
        "Evaluate an arithmetic expression exactly",
        "Evaluate an arithmetic expression, however long, exactly and carefully",
    );
    let cached = plan_json(&fx, &cache_dir, &[]);
    assert_eq!(cached, plan_json(&fx, &cache_dir, &["--no-cache"]));
}

#[test]
fn the_cache_lives_under_xdg_cache_home_without_muster_cache_dir() {
    let fx = Fixture::bundled();
    let xdg = fx.path().join("xdg");
    muster(fx.path())
        .env_remove("MUSTER_CACHE_DIR")
        .env("XDG_CACHE_HOME", &xdg)
        .args(["plan"])
        .assert()
        .code(0);
    let file = xdg.join("muster").join(FILE_NAME);
    assert!(muster::cache_file::journal_path(&file).is_file() || file.is_file());
}

#[test]
fn gates_use_the_cache_and_agree_without_it() {
    let fx = Fixture::bundled();
    let cache_dir = fx.path().join("cache");
    let gate = |extra: &[&str]| {
        let mut args = vec!["gate", "--format", "json"];
        args.extend_from_slice(extra);
        let out = muster(fx.path())
            .env("MUSTER_CACHE_DIR", &cache_dir)
            .args(&args)
            .assert()
            .code(0);
        String::from_utf8(out.get_output().stdout.clone()).unwrap()
    };
    let uncached = gate(&["--no-cache"]);
    assert!(!cache_dir.exists());
    assert_eq!(gate(&[]), uncached);
    assert!(muster::cache_file::journal_path(&cache_dir.join(FILE_NAME)).is_file());
    assert_eq!(gate(&[]), uncached);
}

/// JSON Schema-shaped values: objects of typed, described properties,
/// nested a few levels, with enums, defaults and odd text.
fn schema() -> impl Strategy<Value = Value> {
    let text = "[ -~\\n\\t\u{e9}\u{4e2d}\u{1f600}]{0,40}";
    let leaf = prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "integer", "default": 3})),
        text.prop_map(|d| json!({"type": "boolean", "description": d})),
        prop::collection::vec(text, 1..4).prop_map(|e| json!({"type": "string", "enum": e})),
    ];
    leaf.prop_recursive(3, 24, 4, move |inner| {
        (
            prop::collection::btree_map("[a-zA-Z_][a-zA-Z0-9_]{0,8}", inner, 0..4),
            any::<bool>(),
        )
            .prop_map(|(props, req)| {
                let required: Vec<&String> = props.keys().filter(|_| req).collect();
                json!({"type": "object", "properties": props, "required": required})
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_cached_count_is_the_fresh_count(
        defs in prop::collection::vec(("[a-z_.]{1,20}", "\\PC{0,80}", schema()), 1..12),
        cl100k in any::<bool>(),
    ) {
        let encoding = if cl100k { Encoding::Cl100kBase } else { Encoding::O200kBase };
        let held: Vec<Schema> = defs.iter().map(|(_, _, schema)| Schema::new(schema)).collect();
        let definitions: Vec<Definition<'_>> = defs
            .iter()
            .zip(&held)
            .map(|((name, description, _), input_schema)| Definition { name, description, input_schema })
            .collect();
        let fresh: Vec<u32> = defs
            .iter()
            .map(|(name, description, schema)| encoding.count_definition(name, description, schema))
            .collect();

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut cold = TokenCache::open(&path);
        prop_assert_eq!(&encoding.count_definitions(&definitions, &mut cold), &fresh);
        cold.save().unwrap();
        let mut warm = TokenCache::open(&path);
        prop_assert!(!warm.is_empty());
        prop_assert_eq!(&encoding.count_definitions(&definitions, &mut warm), &fresh);
        // The other encoding's counts are never taken for these.
        let other = if cl100k { Encoding::O200kBase } else { Encoding::Cl100kBase };
        let other_fresh: Vec<u32> = definitions
            .iter()
            .map(|d| other.count_definition(d.name, d.description, &d.input_schema.value()))
            .collect();
        prop_assert_eq!(other.count_definitions(&definitions, &mut warm), other_fresh);
    }
}

#[test]
fn cache_stats_shows_what_is_held_and_clear_removes_it() {
    let fx = Fixture::bundled();
    let cache_dir = fx.path().join("cache");
    plan_json(&fx, &cache_dir, &[]);
    let stats = |fx: &Fixture| -> Value {
        let out = muster(fx.path())
            .env("MUSTER_CACHE_DIR", &cache_dir)
            .args(["cache", "stats", "--format", "json"])
            .assert()
            .code(0);
        serde_json::from_slice(&out.get_output().stdout).unwrap()
    };
    let before = stats(&fx);
    let tokens = &before["tables"][0];
    assert_eq!(tokens["name"], "token-counts", "{before}");
    let held =
        tokens["base_records"].as_u64().unwrap() + tokens["journal_records"].as_u64().unwrap();
    assert!(held > 0, "{before}");
    assert!(tokens["bytes"].as_u64().unwrap() >= held * 32, "{before}");
    muster(fx.path())
        .env("MUSTER_CACHE_DIR", &cache_dir)
        .args(["cache", "clear"])
        .assert()
        .code(0);
    assert_eq!(files(&cache_dir), [None, None]);
    let after = stats(&fx);
    assert_eq!(after["tables"][0]["bytes"], 0, "{after}");
    // The next plan counts again, and answers the same.
    assert_eq!(
        plan_json(&fx, &cache_dir, &[]),
        plan_json(&fx, &cache_dir, &["--no-cache"])
    );
}
