//! Sessions on the bundled policies with deferral on (`production` flags),
//! counts cached: what `muster session roster` and `muster check
//! --session` do once the policy is loaded.
//!
//! - `session/open_roster`: parse the session document, open it (rebuild
//!   the catalog, plan, compare every digest) and print the roster JSON.
//! - `session/check_turn`: the same open, then check a one-call turn
//!   (`math.calculate`) against the session's offer.
//! - `session/plan`: the plan of the same selection, for comparison (what
//!   `muster plan --format json` does once the policy is loaded).
//!
//! The token-count cache is in memory and warm, as the CLI's is on a cache
//! hit; the tokenizer, once built, stays built in a process, so the
//! whole-process cost of building it shows in `scripts/compare-speed`, not
//! here.

use criterion::{Criterion, criterion_group, criterion_main};
use muster::answer::{self, Offer};
use muster::catalog::Selection;
use muster::check::CheckOptions;
use muster::policy::Inputs;
use muster::session::{self, NewSession, SessionKeys};
use muster::tokens::TokenCache;
use std::hint::black_box;
use std::path::Path;

const TURN: &str = r#"{"calls": [
  {"id": "call_1", "name": "math.calculate",
   "arguments": {"expression": "(1249.99 * 3) * (1 - 0.15)"}}
]}"#;

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
    let mut inputs = Inputs::load(&root).expect("bundled policies load");
    inputs.policy.deferral.enabled = true;
    let selection = Selection {
        profile: Some("production".into()),
        ..Selection::default()
    };
    let keys = SessionKeys::none();
    let mut cache = TokenCache::in_memory();
    let doc = session::new(
        &inputs,
        &selection,
        &NewSession::default(),
        &keys,
        &mut cache,
    )
    .expect("a session of the bundled policies");
    let text = session::to_json_string(&doc);
    let file = Path::new("s.json");
    let open = |cache: &mut TokenCache| {
        let doc = session::read(&text, file).expect("the document reads back");
        answer::open(&inputs, doc, &keys, file, cache)
            .expect("it opens")
            .expect("the pin holds")
    };
    // The turn is accepted: the bench measures the path a host takes.
    let live = open(&mut cache);
    assert!(
        live.plan().control.is_some(),
        "deferral is on: the control tool is offered"
    );
    let offered = answer::offered(Offer::Session { live: &live, file }).expect("an offer");
    let report = answer::check(
        &offered,
        TURN,
        Path::new("turn.json"),
        &CheckOptions::default(),
    )
    .expect("the turn reads");
    let json = answer::Answer::of_check(&report).json;
    assert!(json.contains("\"run\""), "the call runs: {json}");

    let mut group = c.benchmark_group("session");
    group.bench_function("open_roster", |b| {
        b.iter(|| black_box(open(&mut cache).roster_json()))
    });
    group.bench_function("check_turn", |b| {
        b.iter(|| {
            let live = open(&mut cache);
            let offered = answer::offered(Offer::Session { live: &live, file }).unwrap();
            let report = answer::check(
                &offered,
                TURN,
                Path::new("turn.json"),
                &CheckOptions::default(),
            )
            .unwrap();
            black_box(answer::Answer::of_check(&report).json)
        })
    });
    let select = answer::Select {
        selection: selection.clone(),
        ..answer::Select::default()
    };
    group.bench_function("plan", |b| {
        b.iter(|| black_box(answer::plan(&inputs, &select, &mut cache).unwrap().json))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
