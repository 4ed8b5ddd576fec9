//! Counts 1,000 rendered definitions one way, for instruction counts under
//! `perf stat -e instructions` (the criterion bench `count_1000_texts` times
//! the same work; this runs it once, so counts compare run to run on a busy
//! machine):
//!
//! ```sh
//! cargo build --release --example count_speed
//! for mode in build each pieces all-cores; do
//!   perf stat -e instructions -x, target/release/examples/count_speed $mode
//! done
//! ```
//!
//! `build` only builds the tokenizer (every mode pays it); `each` counts
//! each text on its own with muster's tokenizer; `pieces` counts the batch on one
//! thread remembering each piece's count; `all-cores` is what the planner
//! does. The texts are the bundled production catalog's definitions
//! repeated under new names to 1,000, as `benches/plan.rs` builds them.

use muster::catalog::{Catalog, Selection};
use muster::policy::Inputs;
use muster::tokens::render_function;
use std::path::Path;

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
    let inputs = Inputs::load(&root).expect("bundled policies load");
    let selection = Selection {
        profile: Some("production".into()),
        ..Selection::default()
    };
    let catalog = Catalog::build(&inputs, &selection).expect("catalog");
    let texts: Vec<String> = (0..1000)
        .map(|i| {
            let c = &catalog.candidates[i % catalog.candidates.len()];
            let name = format!("{}_{i}", c.provider_name);
            render_function(&name, &c.description, &c.input_schema.value())
        })
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let encoding = catalog.encoding;
    let total: u32 = match mode.as_str() {
        "build" => encoding.count_text("x"),
        "each" => texts.iter().map(|t| encoding.count_text(t)).sum(),
        "pieces" => encoding.count_texts_on(&texts, 1).iter().sum(),
        "all-cores" => encoding.count_texts(&texts).iter().sum(),
        _ => {
            eprintln!("usage: count_speed build|each|pieces|all-cores");
            std::process::exit(2);
        }
    };
    println!("{mode}: {total} tokens");
}
