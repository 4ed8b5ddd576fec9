//! muster counts with OpenAI's rank files and tiktoken's merge
//! (`src/tokens/bpe.rs`); tiktoken-rs is the reference. The two
//! give the same count for every definition in the test data (the bundled
//! policies and snapshots, the MCP fixtures), in both encodings, and for
//! generated text.

use muster::catalog::{Catalog, Selection};
use muster::policy::Inputs;
use muster::tokens::{Encoding, render_function};
use proptest::prelude::*;
use serde_json::Value;
use std::path::Path;

fn reference(encoding: Encoding, text: &str) -> u32 {
    let bpe = match encoding {
        Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
    };
    bpe.encode_ordinary(text).len() as u32
}

/// Counts `texts` in one batch, as the planner does (each thread remembering
/// the pieces it has met), and compares every count with the reference.
fn assert_batch_same(texts: &[&str]) {
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        let counts = encoding.count_texts(texts);
        assert_eq!(counts.len(), texts.len());
        for (text, count) in texts.iter().zip(counts) {
            assert_eq!(
                count,
                reference(encoding, text),
                "batch in {}: {text:?}",
                encoding.name()
            );
        }
    }
}

fn assert_same(text: &str, what: &str) {
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        assert_eq!(
            encoding.count_text(text),
            reference(encoding, text),
            "{what} in {}: {text:?}",
            encoding.name()
        );
    }
}

/// (name, description, input schema) of every tool a fixture file lists.
fn listed(path: &Path) -> Vec<(String, String, Value)> {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let schema = t.get("inputSchema").or(t.get("input_schema"));
            (
                t["name"].as_str().unwrap().to_string(),
                t["description"].as_str().unwrap_or_default().to_string(),
                schema.cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

#[test]
fn every_bundled_definition_counts_as_tiktoken_counts_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let inputs = Inputs::load(&root.join("policies")).unwrap();
    let mut checked = 0;
    let mut batch = Vec::new();
    for profile in [None, Some("staging"), Some("production")] {
        let selection = Selection {
            profile: profile.map(String::from),
            ..Selection::default()
        };
        let catalog = Catalog::build(&inputs, &selection).unwrap();
        for c in &catalog.candidates {
            let text = render_function(&c.name, &c.description, &c.input_schema.value());
            assert_same(&text, &c.name);
            batch.push(text);
            checked += 1;
        }
    }
    for tool in &inputs.policy.tools {
        assert_same(&tool.description, &tool.name);
    }
    assert!(checked > 100, "{checked}");
    let texts: Vec<&str> = batch.iter().map(String::as_str).collect();
    assert_batch_same(&texts);
}

#[test]
fn every_fixture_definition_counts_as_tiktoken_counts_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["tests/fixtures/mcp", "policies/mcp"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 6, "{files:?}");
    let mut batch = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        assert_same(&text, &path.display().to_string());
        for (name, description, schema) in listed(&path) {
            let rendered = render_function(&name, &description, &schema);
            assert_same(&rendered, &name);
            assert_same(&description, &name);
            batch.push(rendered);
            batch.push(description);
        }
        batch.push(text);
    }
    let texts: Vec<&str> = batch.iter().map(String::as_str).collect();
    assert_batch_same(&texts);
}

#[test]
fn the_baseline_catalog_counts_as_tiktoken_counts_it() {
    // The 1,000-tool catalog the speed comparison uses, where it is present.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/baselines/catalog1000.json");
    if !path.exists() {
        return;
    }
    let mut batch = Vec::new();
    for (name, description, schema) in listed(&path) {
        let text = render_function(&name, &description, &schema);
        assert_same(&text, &name);
        batch.push(text);
    }
    let texts: Vec<&str> = batch.iter().map(String::as_str).collect();
    assert_batch_same(&texts);
}

#[test]
fn whitespace_and_lookahead_edges_count_as_tiktoken_counts_them() {
    // The pre-tokenizer's `\s+(?!\S)` is emulated (as bpe-openai does); these are
    // the places it could differ.
    for text in [
        "",
        " ",
        "  ",
        "a ",
        " a",
        "a  b",
        "a   \n  b",
        "\n",
        "\n\n \n",
        "\t\t x",
        "x \u{a0}y",
        "x\u{3000}\u{3000}y",
        "  \r\n",
        "a\r\n\r\n  ",
        "// x\n}) => any;\n\n",
        "I'm can't WE'LL",
        "ABCdef DEF'S",
        "123456789",
        "\u{1f600}\u{1f600} \u{1f600}",
        "e\u{301}t\u{e9}",
        "中文 字符  测试",
        "x\u{85}y",
        "\u{2028}a\u{2029}",
        "   \u{1f600}",
    ] {
        assert_same(text, "edge case");
    }
}

#[test]
fn long_pieces_count_as_tiktoken_counts_them() {
    // Pieces past 128 bytes merge through a heap, not tiktoken's scan:
    // long words, repeats whose pairs tie, long runs of symbols and digits
    // after spaces, and long non-Latin words.
    let words = [
        "antidisestablishmentarianism",
        "ab",
        "aaaa",
        "Pneumonoultramicroscopicsilicovolcanoconiosis",
        "xQz",
        "\u{e9}t\u{e9}",
        "\u{1f600}",
        "\u{4e2d}\u{6587}",
        "\u{0442}\u{0435}\u{043a}",
        "{}[]()=>;",
    ];
    for (i, a) in words.iter().enumerate() {
        let b = words[(i + 3) % words.len()];
        for times in [5, 17, 60, 300] {
            let piece = format!("{a}{b}").repeat(times);
            assert_same(&piece, "long piece");
            assert_same(&format!(" {piece}"), "long piece after a space");
        }
    }
}

#[test]
fn edge_cases_count_as_tiktoken_counts_them_in_a_batch() {
    // Above 64 texts a batch is counted on every core, each thread with
    // its own remembered pieces; below, on one.
    let edges = [
        "",
        " ",
        "a  b",
        "\n\n \n",
        "x \u{a0}y",
        "// x\n}) => any;\n\n",
        "I'm can't",
        "  \r\n",
    ];
    let many: Vec<String> = (0..200)
        .map(|i| {
            format!(
                "{} w{} {}",
                edges[i % edges.len()],
                i % 7,
                edges[(i * 3) % edges.len()]
            )
        })
        .collect();
    let texts: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_batch_same(&texts[..10]);
    assert_batch_same(&texts);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn generated_text_counts_as_tiktoken_counts_it(text in "\\PC{0,200}") {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            prop_assert_eq!(encoding.count_text(&text), reference(encoding, &text));
        }
    }

    #[test]
    fn generated_code_like_text_counts_as_tiktoken_counts_it(
        text in "([ \\t\\n\\r\u{a0}\u{3000}]{0,4}([a-zA-Z]{1,8}|[0-9]{1,5}|'(s|t|re|ve|m|ll|d|S|LL)|[{}()\\[\\]:;,.?|=>/\"-]{1,3}|[\u{e9}\u{4e2d}\u{1f600}\u{301}]))*"
    ) {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            prop_assert_eq!(encoding.count_text(&text), reference(encoding, &text));
        }
    }
}

proptest! {
    // Each case counts a whole batch twice over; fewer cases keep the
    // debug-build run short.
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Pieces remembered from one text are reused for the next: a batch of
    /// generated texts, some sharing pieces, counts each as tiktoken does.
    #[test]
    fn generated_batches_count_as_tiktoken_counts_them(
        texts in prop::collection::vec("([ \\t\\n]{0,3}([a-z]{1,4}|[0-9]{1,3}|[{}:;,.?|=>/\"-]{1,2}|\u{e9}|\u{1f600}))*", 1..40)
    ) {
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let counts = encoding.count_texts(&texts);
            for (text, count) in texts.iter().zip(counts) {
                prop_assert_eq!(count, reference(encoding, text));
            }
        }
    }
}
