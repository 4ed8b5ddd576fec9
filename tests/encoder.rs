//! The dense encoder agrees with its reference (`scripts/search-eval/
//! encoder.py reference`): the upstream tokenizer (`tokenizers`, from the
//! model's tokenizer.json) on 362 strings (accents, punctuation, CJK, emoji,
//! control characters, words past 100 characters, texts past 256 tokens,
//! Seal-Tools and APIBench queries and tools), and a numpy forward pass from
//! the upstream f32 weights and from muster's int8 file on 16 of them;
//! and the vectors' exact bits, which make rankings identical everywhere.
#![cfg(feature = "encoder")]

use muster::search::encoder::{self, DIM, Encoder, Kernel, dot};
use muster::search::vectors::VectorCache;
use serde::Deserialize;
use sha2::{Digest, Sha256};

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

/// How close a vector is to the reference's int8 model (f32 inputs to
/// its linear layers): the cosine above, each component within. 16-bit
/// inputs (`sixteen-bit-inputs`) move a vector by a rounding error; 8-bit
/// inputs (the default) by about a thousandth of cosine.
#[cfg(feature = "sixteen-bit-inputs")]
const SAME_COSINE: f32 = 0.9999;
#[cfg(feature = "sixteen-bit-inputs")]
const SAME_COMPONENT: f32 = 2e-3;
#[cfg(not(feature = "sixteen-bit-inputs"))]
const SAME_COSINE: f32 = 0.998;
#[cfg(not(feature = "sixteen-bit-inputs"))]
const SAME_COMPONENT: f32 = 8e-3;

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
            same > SAME_COSINE,
            "{:?}: cosine {same} to the int8 reference",
            c.text
        );
        let max = v
            .iter()
            .zip(&c.int8)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(max < SAME_COMPONENT, "{:?}: component off by {max}", c.text);
        // The upstream f32 model: quantization costs little.
        let upstream = dot(&v, &c.f32);
        assert!(
            upstream > 0.99,
            "{:?}: cosine {upstream} to the f32 model",
            c.text
        );
    }
}

/// A query is read for meaning up to `MAX_QUERY_TOKENS` tokens: what
/// follows them changes nothing (and costs nothing), what comes before
/// them does, and a short query is read whole, as a tool's text is.
#[test]
fn a_query_is_read_for_meaning_up_to_its_token_cap() {
    let encoder = Encoder::get();
    let words = encoder::MAX_QUERY_TOKENS; // one token each, with room to spare
    let head = vec!["invoice"; words].join(" ");
    let a = encoder.embed_query(&format!("{head} then book a flight to Paris"));
    let b = encoder.embed_query(&format!("{head} and delete every calendar event"));
    assert_eq!(a, b);
    assert_ne!(
        a,
        encoder.embed(&format!("{head} then book a flight to Paris"))
    );
    let c = encoder.embed_query(&format!("weather {head}"));
    assert_ne!(a, c);
    let short = "find the emails about last week's invoice";
    assert_eq!(encoder.embed_query(short), encoder.embed(short));
}

#[test]
fn vectors_are_deterministic_and_cached() {
    let text = "Search the user's email threads by sender and subject";
    let a = Encoder::get().embed(text);
    let b = Encoder::get().embed(text);
    assert_eq!(a, b);
    let mut cache = VectorCache::in_memory();
    let c = cache.vectors(&[text]);
    assert_eq!(&a[..], &c[0][..]);
    assert_eq!(cache.encoded(), 1);
    // Related texts are closer than unrelated ones.
    let v = cache.vectors(&[text, "find a message in my inbox", "bake a chocolate cake"]);
    assert_eq!(cache.encoded(), 3, "the first text was encoded again");
    assert!(dot(&a, &v[1]) > dot(&a, &v[2]) + 0.2);
}

/// SHA-256 over the little-endian bits of each text's vector, in order.
fn digest(vectors: impl IntoIterator<Item = Vec<f32>>) -> String {
    let mut h = Sha256::new();
    for v in vectors {
        for x in v {
            h.update(x.to_bits().to_le_bytes());
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn pinned_texts() -> Vec<String> {
    let cases: Vec<Vectors> = lines(include_str!("fixtures/encoder/vectors.jsonl"));
    let mut texts: Vec<String> = cases.into_iter().map(|c| c.text).collect();
    // A text past 256 tokens, and an empty one.
    texts.push("read the file and summarise it; ".repeat(60));
    texts.push(String::new());
    texts
}

/// The exact bits of 18 texts' vectors. Rankings mix rounded cosines, and
/// cached vectors (`vectors.bin`) are shared between runs and machines:
/// both are only safe because a text's vector is the same, bit for bit, on
/// every CPU. That holds while the arithmetic keeps one order (see
/// `crates/muster-encoder/src/kernel.rs`). A change that moves any bit (a new
/// kernel, a reordered sum, another `exp`) fails here: then change
/// `encoder::ARITHMETIC`, so caches written before are not reused, and
/// update the pin. New weights move the bits too (issue 34's six-bit word
/// embeddings, docs/build.md); `encoder::MODEL_ID` keys the caches then.
#[test]
fn vectors_are_pinned_to_the_bit() {
    let encoder = Encoder::get();
    let texts = pinned_texts();
    let vectors = texts.iter().map(|t| encoder.embed(t));
    assert_eq!(
        (encoder::ARITHMETIC, digest(vectors).as_str()),
        (PINNED_ARITHMETIC, PINNED),
    );
}

/// [`vectors_are_pinned_to_the_bit`]'s arithmetic and digest: 8-bit
/// inputs to the linear layers (`linear8.rs`, the default).
#[cfg(not(feature = "sixteen-bit-inputs"))]
const PINNED_ARITHMETIC: &str = "fixed-order-4";
#[cfg(not(feature = "sixteen-bit-inputs"))]
const PINNED: &str = "bf83764f79a76347d69034286e38b4ec14970519230d4ffd883f68bc8f7bf025";
/// With 16-bit inputs (feature `sixteen-bit-inputs`, `linear.rs`): other
/// vectors, so another arithmetic tag.
#[cfg(feature = "sixteen-bit-inputs")]
const PINNED_ARITHMETIC: &str = "fixed-order-3";
#[cfg(feature = "sixteen-bit-inputs")]
const PINNED: &str = "a0821eec015939350d45d71d71272b8fe845853fd4d1d5b4048a744da0aad517";

/// A batch (the rows of several texts in one pass, as a cold catalog is
/// encoded) gives each text the bits it has alone, by every build.
#[test]
fn a_batch_gives_the_pinned_bits() {
    let encoder = Encoder::get();
    let texts = pinned_texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for kernel in [Kernel::Portable, Kernel::Avx, Kernel::Avx512] {
        let batch = encoder.embed_batch_with(&refs, kernel);
        assert_eq!(digest(batch), PINNED, "{kernel:?}");
    }
}

/// The 16-wide AVX-512 build, the 8-wide AVX build and the baseline build
/// compute the same bits: SIMD widens across outputs, never within one
/// output's sum. (On a CPU without AVX-512 or AVX those runs take the next
/// build down.)
#[test]
fn every_kernel_gives_the_same_bits() {
    let encoder = Encoder::get();
    for text in pinned_texts() {
        let portable = digest([encoder.embed_with(&text, Kernel::Portable)]);
        for kernel in [Kernel::Avx, Kernel::Avx512] {
            let wide = encoder.embed_with(&text, kernel);
            assert_eq!(digest([wide]), portable, "{kernel:?}: {text:?}");
        }
    }
}

#[test]
fn the_model_id_is_the_digest_of_the_vendored_files() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/minilm-l6-v2");
    // model.bin is stored zlib-compressed: the identity is of the weights,
    // so vectors cached before it was compressed are still used.
    let mut model = Vec::new();
    let z = std::fs::read(dir.join("model.bin.z")).unwrap();
    std::io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(&z[..]), &mut model).unwrap();
    let mut h = Sha256::new();
    h.update(&model);
    h.update(std::fs::read(dir.join("vocab.txt")).unwrap());
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(encoder::MODEL_ID, format!("sha256:{hex}"));
}

mod mixed {
    use muster::search::vectors::{self, VectorCache};
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
        let index = Index::build_mixed(entries(), &mut VectorCache::in_memory());
        let hits = index.search(query, 5);
        assert_eq!(index.name(hits[0].entry), Some("mcp.weather.get_forecast"));
        assert!(hits[0].score < 1.0);
    }

    #[test]
    fn an_unrelated_ask_finds_nothing_and_names_still_win() {
        let index = Index::build_mixed(entries(), &mut VectorCache::in_memory());
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

    /// A second process reads every vector from the file the first saved,
    /// encodes nothing, and ranks exactly as the first did.
    #[test]
    fn a_warm_build_encodes_nothing_and_ranks_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(vectors::FILE_NAME);
        let queries = [
            "will it rain in Paris tomorrow",
            "read a text file",
            "email",
        ];
        let mut cold = VectorCache::open(&path);
        let first = Index::build_mixed(entries(), &mut cold);
        assert_eq!((cold.encoded(), cold.len()), (6, 6));
        cold.save().unwrap();
        let mut warm = VectorCache::open(&path);
        assert_eq!(warm.len(), 6);
        let second = Index::build_mixed(entries(), &mut warm);
        assert_eq!(warm.encoded(), 0);
        for q in queries {
            assert_eq!(first.search(q, 5), second.search(q, 5), "{q}");
        }
        // One new tool: only its text is encoded.
        let mut more = entries();
        more.push(Entry {
            name: "mcp.calendar.create_event",
            description: "Create a calendar event with a title, start and end.",
            input_schema: None,
        });
        let third = Index::build_mixed(more, &mut warm);
        assert_eq!(warm.encoded(), 1);
        assert_eq!(
            third.name(third.search("create a calendar event", 1)[0].entry),
            Some("mcp.calendar.create_event")
        );
    }

    /// Missing texts are encoded on two threads, 64 texts at a time in
    /// batches; each vector is the one a single thread computes alone.
    #[test]
    fn threads_do_not_change_a_vector() {
        let texts: Vec<String> = (0..150)
            .map(|i| format!("tool number {i}: does thing {i}"))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut cache = VectorCache::in_memory();
        let threaded = cache.vectors(&refs);
        for (t, v) in texts.iter().zip(&threaded) {
            assert_eq!(
                &muster::search::encoder::Encoder::get().embed(t)[..],
                &v[..],
                "{t}"
            );
        }
    }
}
