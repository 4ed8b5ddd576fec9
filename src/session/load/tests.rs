//! The load's decisions from hits, and its picks, on made-up hits.

use super::{Decision, Pick, decide, pick};
use crate::contract::LoadNote;
use crate::search::Hit;

fn hit(entry: usize, score: f64, lexical: f64, cosine: Option<f64>) -> Hit {
    Hit {
        entry,
        score,
        lexical,
        cosine,
    }
}

#[test]
fn an_exact_name_loads_alone_whatever_follows() {
    let hits = [hit(4, 1.0, 1.0, None), hit(2, 0.99, 0.99, Some(0.9))];
    assert_eq!(pick(&hits, 3), Pick::One(4));
}

#[test]
fn a_best_match_below_the_floors_loads_nothing() {
    assert_eq!(pick(&[], 3), Pick::Nothing);
    let weak = [hit(0, 0.14, 0.14, Some(0.29)), hit(1, 0.1, 0.1, None)];
    assert_eq!(pick(&weak, 3), Pick::Nothing);
}

#[test]
fn a_clear_winner_loads_and_near_ties_are_asked() {
    let clear = [hit(3, 0.8, 0.6, Some(0.7)), hit(1, 0.7, 0.5, Some(0.6))];
    assert_eq!(pick(&clear, 3), Pick::One(3));
    let ties = [
        hit(3, 0.8, 0.6, Some(0.7)),
        hit(1, 0.75, 0.5, Some(0.6)),
        hit(5, 0.73, 0.5, Some(0.6)),
        hit(6, 0.72, 0.5, Some(0.6)),
        hit(0, 0.5, 0.5, Some(0.6)),
    ];
    // At most `choices` of them, best first; never fewer than two.
    assert_eq!(pick(&ties, 3), Pick::Choose(vec![3, 1, 5]));
    assert_eq!(pick(&ties, 1), Pick::Choose(vec![3, 1]));
}

/// A winner by words alone loads as before the encoder; one by a
/// related but unsure meaning is offered with the runners-up.
#[cfg(feature = "encoder")]
#[test]
fn an_unsure_meaning_is_asked_not_loaded() {
    let unsure = [
        hit(2, 0.5, 0.01, Some(0.4)),
        hit(7, 0.3, 0.0, Some(0.35)),
        hit(8, 0.2, 0.0, Some(0.2)),
    ];
    assert_eq!(pick(&unsure, 3), Pick::Choose(vec![2, 7, 8]));
    let sure = [hit(2, 0.5, 0.01, Some(0.45)), hit(7, 0.3, 0.0, Some(0.35))];
    assert_eq!(pick(&sure, 3), Pick::One(2));
    let worded = [hit(2, 0.5, 0.15, Some(0.1)), hit(7, 0.3, 0.0, Some(0.35))];
    assert_eq!(pick(&worded, 3), Pick::One(2));
    let unrelated = [hit(2, 0.5, 0.01, Some(0.29))];
    assert_eq!(pick(&unrelated, 3), Pick::Nothing);
}

/// A best match that neither words nor meaning back is passed over for
/// the first one that is backed: "nothing found" only when none is.
#[cfg(feature = "encoder")]
#[test]
fn an_unbacked_best_match_is_passed_over_for_a_backed_one() {
    let hits = [
        hit(5, 0.13, 0.12, Some(0.15)),
        hit(6, 0.11, 0.11, Some(0.08)),
        hit(9, 0.08, 0.0, Some(0.41)),
        hit(4, 0.04, 0.0, Some(0.22)),
    ];
    // Related but unsure: asked with what follows it, not what it passed.
    assert_eq!(pick(&hits, 3), Pick::Choose(vec![9, 4]));
    assert_eq!(decide(&hits, 3, |e| e == 9), Decision::Choose(vec![9, 4]));
    let sure = [hit(5, 0.13, 0.12, Some(0.15)), hit(9, 0.08, 0.0, Some(0.5))];
    assert_eq!(pick(&sure, 3), Pick::One(9));
    assert_eq!(decide(&sure, 3, |e| e == 9), Decision::Ready(9));
    let none = [
        hit(5, 0.13, 0.12, Some(0.15)),
        hit(9, 0.08, 0.0, Some(0.29)),
    ];
    assert_eq!(pick(&none, 3), Pick::Nothing);
}

/// Issue 35: "stage files for commit" with `git_diff_staged` loaded
/// answered "already loaded", though `git_add` was what the ask needed.
/// A winner already there is said to be there only when nothing not yet
/// there comes within `RIVAL` of it, relevant on its own.
#[test]
fn a_winner_already_there_is_asked_with_close_matches_not_yet_there() {
    let hits = [
        hit(0, 0.38, 0.5, None),
        hit(1, 0.27, 0.3, None),
        hit(2, 0.27, 0.3, None),
        hit(3, 0.2, 0.3, None),
    ];
    let ready = |e: usize| e == 0;
    assert_eq!(decide(&hits, 3, ready), Decision::Choose(vec![0, 1, 2]));
    assert_eq!(decide(&hits, 1, ready), Decision::Choose(vec![0, 1]));
    // Not ready: the clear winner loads, as before.
    assert_eq!(decide(&hits, 3, |_| false), Decision::Load(0));
    // A close match already there, or too weak on its own, is no rival.
    assert_eq!(decide(&hits, 3, |e| e < 3), Decision::Ready(0));
    let weak = [hit(0, 0.38, 0.5, None), hit(1, 0.3, 0.1, None)];
    assert_eq!(decide(&weak, 3, ready), Decision::Ready(0));
    let far = [hit(0, 0.38, 0.5, None), hit(1, 0.26, 0.3, None)];
    assert_eq!(decide(&far, 3, ready), Decision::Ready(0));
    // An exact name is never second-guessed.
    let exact = [hit(0, 1.0, 1.0, None), hit(1, 0.99, 0.9, None)];
    assert_eq!(decide(&exact, 3, ready), Decision::Ready(0));
    assert_eq!(decide(&[], 3, ready), Decision::Nothing);
}

/// The kinds a "nothing found" names are server-supplied: written with
/// hidden characters escaped, and those past the bound counted.
#[test]
fn nothing_found_escapes_its_kinds_and_counts_those_left_out() {
    let note = LoadNote::NothingFound {
        query: "bake a cake".into(),
        kinds: vec!["mcp__time".into(), "mcp__a\u{202E}b".into()],
        more: 3,
    };
    let text = note.to_string();
    assert!(!text.contains('\u{202E}'), "{text}");
    assert!(
        text.contains("mcp__time, mcp__a\\u{202E}b, 3 more."),
        "{text}"
    );
}
