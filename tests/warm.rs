//! Warm from the first query (issue 35, docs/search.md): where muster
//! records a listing (`discover`, `lock`) or reads the configured tools
//! (`plan`, `validate`), it encodes them into `vectors.bin`, so a session's
//! first search over them encodes nothing. Real stdio server from npm for
//! `discover`; recorded snapshots for the rest.
#![cfg(feature = "encoder")]

mod common;

use common::{Fixture, reference_server};
use muster::catalog::{Catalog, Selection};
use muster::policy::Inputs;
use muster::search::DeferredIndex;
use muster::search::vectors::{FILE_NAME, VectorCache};
use muster::tokens::TokenCache;
use std::path::Path;

/// Deferral on, two items offered: the rest are what a session searches.
const MUSTER: &str = "[caps]\nitems = 2\ntokens = 9000\n\n[deferral]\nenabled = true\ncontrol_tool = \"tools.load\"\n";

const TOOL: &str =
    "[[tool]]\nname = \"math.calculate\"\ndescription = \"Evaluate an arithmetic expression.\"\n";

/// `muster ARGS` in `fx` with its own cache directory `cache`, warming on.
fn run(fx: &Fixture, cache: &Path, args: &[&str]) -> String {
    let out = common::muster(fx.path())
        .env("MUSTER_CACHE_DIR", cache)
        .env_remove("MUSTER_NO_WARM")
        .args(args)
        .assert()
        .code(0);
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

fn has_vectors_file(cache: &Path) -> bool {
    std::fs::read_dir(cache).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(FILE_NAME))
    })
}

/// What a session over `fx`'s policy does at its first search, through
/// `cache`'s vector file: builds the index over
/// the plan's deferred tools (two items offered, the rest deferred) and searches it. Returns the texts it encoded and the number
/// of entries it indexed.
fn first_search(fx: &Fixture, cache: &Path) -> (usize, usize) {
    let inputs = Inputs::load(&fx.policies()).unwrap();
    let mut counts = TokenCache::in_memory();
    let catalog = Catalog::build_cached(&inputs, &Selection::default(), &mut counts).unwrap();
    let plan = muster::plan::plan_counted(&catalog, catalog.caps, &mut counts);
    let mut vectors = VectorCache::open(&cache.join(FILE_NAME));
    let index = DeferredIndex::of_cached(&catalog, &plan.deferred, &mut vectors);
    let names: Vec<&str> = index.entries.iter().map(|e| e.name.as_str()).collect();
    assert!(
        !index
            .search("create entities in the knowledge graph", 5)
            .is_empty(),
        "{names:?}"
    );
    (vectors.encoded(), index.entries.len())
}

/// The recorded memory server's snapshot and a configured tool.
fn recorded() -> Fixture {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp");
    let memory = std::fs::read_to_string(fixtures.join("memory.json")).unwrap();
    Fixture::new(&[
        ("policies/muster.toml", MUSTER),
        ("policies/tools/t.toml", TOOL),
        ("policies/mcp/memory.json", &memory),
        (
            "policies/mcp/s.toml",
            "[[mcp]]\nname = \"memory\"\nsnapshot = \"memory.json\"\n",
        ),
    ])
}

#[test]
fn plan_encodes_the_catalog_so_a_first_search_encodes_nothing() {
    let fx = recorded();
    let cache = tempfile::tempdir().unwrap();

    // Skippable: with MUSTER_NO_WARM, plan encodes nothing (it never
    // searches).
    common::muster(fx.path())
        .env("MUSTER_CACHE_DIR", cache.path())
        .args(["plan", "--format", "json"])
        .assert()
        .code(0);
    assert!(!has_vectors_file(cache.path()));

    run(&fx, cache.path(), &["plan", "--format", "json"]);
    assert!(has_vectors_file(cache.path()));
    // The memory server's nine tools and the configured one.
    assert!(VectorCache::open(&cache.path().join(FILE_NAME)).len() >= 10);

    let (encoded, entries) = first_search(&fx, cache.path());
    assert!(entries >= 8, "{entries} deferred entries");
    assert_eq!(encoded, 0, "the first search encoded texts plan had not");
}

#[test]
fn lock_and_validate_encode_the_recorded_tools() {
    for command in [&["lock"][..], &["validate"][..]] {
        let fx = recorded();
        let cache = tempfile::tempdir().unwrap();
        run(&fx, cache.path(), command);
        let (encoded, entries) = first_search(&fx, cache.path());
        assert!(entries >= 8, "{command:?}: {entries} deferred entries");
        assert_eq!(encoded, 0, "{command:?}: the first search encoded texts");
    }
}

#[test]
fn discover_encodes_what_it_records() {
    let memory = reference_server("server-memory");
    let fx = Fixture::new(&[
        ("policies/muster.toml", MUSTER),
        ("policies/tools/t.toml", TOOL),
    ]);
    let memory_file = fx.path().join("memory.jsonl");
    fx.write(
        "policies/mcp/s.toml",
        &format!(
            "[[mcp]]\nname = \"memory\"\ncommand = [\"node\", {memory:?}]\nsnapshot = \"memory.json\"\nenv = {{ MEMORY_FILE_PATH = {:?} }}\n",
            memory_file.to_string_lossy()
        ),
    );
    let cache = tempfile::tempdir().unwrap();
    let out = run(&fx, cache.path(), &["discover"]);
    assert!(out.contains("ok   memory:"), "{out}");
    let (encoded, entries) = first_search(&fx, cache.path());
    assert!(entries >= 8, "{entries} deferred entries");
    assert_eq!(
        encoded, 0,
        "the first search encoded texts discover had not"
    );
}

#[test]
fn a_cache_directory_that_cannot_be_written_skips_warming_not_the_command() {
    let fx = recorded();
    let cache = tempfile::tempdir().unwrap();
    // A file where the cache directory should be: nothing can be made in it.
    let blocked = cache.path().join("not-a-dir");
    std::fs::write(&blocked, "x").unwrap();
    let out = run(&fx, &blocked, &["plan", "--format", "json"]);
    assert!(out.contains("\"roster\""), "{out}");
    assert!(!has_vectors_file(cache.path()));
}
