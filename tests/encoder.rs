//! The dense encoder agrees with its reference (`scripts/search-eval/
//! encoder.py reference`): the upstream tokenizer (`tokenizers`, from the
//! model's tokenizer.json) on 362 strings (accents, punctuation, CJK, emoji,
//! control characters, words past 100 characters, texts past 256 tokens,
//! Seal-Tools and APIBench queries and tools), and a numpy forward pass from
//! the upstream f32 weights and from muster's int8 file on 16 of them.
#![cfg(feature = "encoder")]

use muster::search::encoder::{DIM, Encoder, dot, embed_cached};
use serde::Deserialize;

#[derive(Deserialize)]
struct Tokens {
    text: String,
    ids: Vec<u32>,
}

#[derive(Deserialize)]
struct Vectors {
    text: String,
    /// From the upstream f32 weights.
    f32: Vec<f32>,
    /// From muster's int8 weights, dequantized, in float64.
    int8: Vec<f32>,
}

fn lines<T: for<'de> Deserialize<'de>>(text: &str) -> Vec<T> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn tokenizer_matches_the_reference() {
    let encoder = Encoder::get();
    let cases: Vec<Tokens> = lines(include_str!("fixtures/encoder/tokens.jsonl"));
    assert_eq!(cases.len(), 362);
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            let ids = encoder.tokenize(&c.text);
            (ids != c.ids).then(|| format!("{:?}: {ids:?} want {:?}", c.text, c.ids))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} differ: {:#?}",
        wrong.len(),
        &wrong[..wrong.len().min(3)]
    );
    // Truncation keeps [CLS] … [SEP] at 256 tokens.
    let long = cases.iter().map(|c| c.ids.len()).max().unwrap();
    assert_eq!(long, 256);
}

#[test]
fn vectors_match_the_reference() {
    let encoder = Encoder::get();
    let cases: Vec<Vectors> = lines(include_str!("fixtures/encoder/vectors.jsonl"));
    assert_eq!(cases.len(), 16);
    for c in &cases {
        let v = encoder.embed(&c.text);
        assert_eq!(v.len(), DIM);
        assert!(
            (dot(&v, &v) - 1.0).abs() < 1e-4,
            "{}: not a unit vector",
            c.text
        );
        // The same int8 weights: the forward pass itself agrees closely.
        let same = dot(&v, &c.int8);
        assert!(
            same > 0.9999,
            "{:?}: cosine {same} to the int8 reference",
            c.text
        );
        let max = v
            .iter()
            .zip(&c.int8)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(max < 2e-3, "{:?}: component off by {max}", c.text);
        // The upstream f32 model: quantization costs little.
        let upstream = dot(&v, &c.f32);
        assert!(
            upstream > 0.99,
            "{:?}: cosine {upstream} to the f32 model",
            c.text
        );
    }
}

#[test]
fn vectors_are_deterministic_and_cached() {
    let text = "Search the user's email threads by sender and subject";
    let a = Encoder::get().embed(text);
    let b = Encoder::get().embed(text);
    assert_eq!(a, b);
    let c = embed_cached(text);
    assert_eq!(&a[..], &c[..]);
    // Related texts are closer than unrelated ones.
    let mail = embed_cached("find a message in my inbox");
    let cake = embed_cached("bake a chocolate cake");
    assert!(dot(&a, &mail) > dot(&a, &cake) + 0.2);
}

mod mixed {
    use muster::search::{Entry, Index};

    fn entries() -> Vec<Entry<'static>> {
        [
            (
                "mcp.finance.get_company_profile",
                "Company information: sector, employees, market capitalisation, headquarters.",
            ),
            (
                "mcp.mail.search_threads",
                "Search email threads by sender, subject or date.",
            ),
            (
                "mcp.mail.send_message",
                "Send an email message to one or more recipients.",
            ),
            (
                "mcp.weather.get_forecast",
                "Weather forecast for a city for the next days.",
            ),
            (
                "mcp.files.read_text_file",
                "Read the complete contents of a text file from disk.",
            ),
            (
                "mcp.files.write_file",
                "Create or overwrite a file with new content.",
            ),
        ]
        .into_iter()
        .map(|(name, description)| Entry {
            name,
            description,
            input_schema: None,
        })
        .collect()
    }

    #[test]
    fn meaning_finds_a_tool_that_shares_no_word() {
        let query = "will it rain in Paris tomorrow";
        // BM25F alone finds nothing: no word is shared.
        assert!(Index::build(entries()).search(query, 5).is_empty());
        let index = Index::build_mixed(entries());
        let hits = index.search(query, 5);
        assert_eq!(index.name(hits[0].entry), Some("mcp.weather.get_forecast"));
        assert!(hits[0].score < 1.0);
    }

    #[test]
    fn an_unrelated_ask_finds_nothing_and_names_still_win() {
        let index = Index::build_mixed(entries());
        // Weak hits by meaning may rank, but none shares a word or comes
        // near the control tool's meaning floor (0.3, docs/session.md).
        let unrelated = index.search("bake a chocolate cake", 5);
        assert!(
            unrelated
                .iter()
                .all(|h| h.lexical == 0.0 && h.cosine.is_some_and(|c| c < 0.2)),
            "{unrelated:?}"
        );
        let hits = index.search("mcp.files.write_file", 5);
        assert_eq!((hits[0].entry, hits[0].score), (5, 1.0));
        // A lexical match outranks its near neighbour in meaning.
        let hits = index.search("read a text file", 5);
        assert_eq!(index.name(hits[0].entry), Some("mcp.files.read_text_file"));
        // Same query, same hits, same scores.
        assert_eq!(index.search("read a text file", 5), hits);
    }
}
