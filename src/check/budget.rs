//! The work one check may spend matching `pattern`s that need a backtracking regex engine
//! (lookaround, backreferences): each such match is charged, in backtracking steps, and a turn
//! may spend [`MAX_CHECK_STEPS`] in all. A pattern the linear engine takes costs time in
//! proportion to the text and is not charged; a backtracking one can cost exponential time on a
//! short text, so without a budget per check a body of many small values stalls whatever thread
//! checks it. This module only counts; [`super::pattern`] charges, and the strict check turns a
//! budget spent into the `check-budget-exceeded` refusal.
//!
//! Branches are counted the same way: each time a value is judged at a place of the schema
//! holding an `enum`, `anyOf` or `oneOf`, the turn is charged that place's branch count
//! ([`super::branches`]), and may spend [`MAX_CHECK_BRANCHES`] in all: a 5,000-branch `anyOf`
//! over an array of 100,000 items is half a billion comparisons, seconds of one thread.
//!
//! The count lives with the thread that checks (a turn is checked on one thread, from its
//! first call to its last); [`Turn`] opens a turn's budget and closes it when dropped.

use std::cell::Cell;

/// The backtracking steps one check (a turn, all its calls) may spend matching patterns that
/// need the backtracking engine. Real servers' patterns need a handful of steps per value
/// (the one among the recorded servers, resend's zod e-mail pattern, at most 2 for texts up to
/// 2,000 characters), and a value is charged at least [`super::pattern::RUNGS`]`[0]` = 64, so
/// this is about 1,500 such values per turn; past it the regex engine would run ~6 ms of work
/// per check (63 ns a step), which an attacker could otherwise repeat per value.
pub const MAX_CHECK_STEPS: u64 = 100_000;

/// The branches (`enum` values, `anyOf` and `oneOf` subschemas) one check may judge values
/// against, summed over every value judged: about 10 ms of comparisons. A call of 100 values
/// each against a 1,101-value enum takes 110,100.
pub const MAX_CHECK_BRANCHES: u64 = 1_000_000;

/// The copies of argument values one strict validation may build errors that could hold,
/// counted as the schema's nodes (references expanded) times the arguments' nodes when the
/// schema has an `anyOf` or `oneOf`: the validator copies the value a failing alternative
/// judged into each branch's error, and again at each enclosing one, so twelve nested
/// alternatives over a list of a thousand items took 670 MB from a 4 KB request, and 5.9 GB
/// from 31 KB (a hostile probe). The product is counted while the arguments are first judged
/// yes or no ([`super::strict`]); past it a failing call's errors are not built and the call
/// is refused `check-budget-exceeded`. A 300-node schema explains arguments of 3,000 nodes.
pub const MAX_CHECK_COPIES: u64 = 1_000_000;

thread_local! {
    /// The steps the open turn may still spend; `None` outside a turn.
    static LEFT: Cell<Option<u64>> = const { Cell::new(None) };
    /// The branches the open turn may still judge values against; `None` outside a turn.
    static BRANCHES_LEFT: Cell<Option<u64>> = const { Cell::new(None) };
    /// How many matches the open turn refused or gave up.
    static REFUSED: Cell<u64> = const { Cell::new(0) };
}

/// A turn's budget, open on this thread while the value lives. Opening one inside another
/// (a call validated on its own inside a turn) keeps the outer one.
#[must_use]
pub(crate) struct Turn {
    outer: bool,
}

impl Turn {
    /// Opens a budget of `steps` unless one is open on this thread.
    pub(crate) fn open(steps: u64) -> Self {
        let outer = LEFT.with(Cell::get).is_some();
        if !outer {
            LEFT.with(|left| left.set(Some(steps)));
            BRANCHES_LEFT.with(|left| left.set(Some(MAX_CHECK_BRANCHES)));
            REFUSED.with(|refused| refused.set(0));
        }
        Self { outer }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if !self.outer {
            LEFT.with(|left| left.set(None));
            BRANCHES_LEFT.with(|left| left.set(None));
            REFUSED.with(|refused| refused.set(0));
        }
    }
}

/// Takes `steps` from the open turn's budget; false (and nothing taken) when fewer are left,
/// or when no turn is open: work nobody budgeted is never done.
pub(crate) fn charge(steps: u64) -> bool {
    let taken = LEFT.with(|left| match left.get() {
        Some(n) if n >= steps => {
            left.set(Some(n - steps));
            true
        }
        _ => false,
    });
    if !taken {
        REFUSED.with(|refused| refused.set(refused.get() + 1));
    }
    taken
}

/// Takes `branches` from the open turn's branch budget, as [`charge`] takes steps.
pub(crate) fn charge_branches(branches: u64) -> bool {
    let taken = BRANCHES_LEFT.with(|left| match left.get() {
        Some(n) if n >= branches => {
            left.set(Some(n - branches));
            true
        }
        _ => false,
    });
    if !taken {
        REFUSED.with(|refused| refused.set(refused.get() + 1));
    }
    taken
}

/// Records a match given up although its charges were taken: the value needs more than
/// the most one value may take.
pub(crate) fn give_up() {
    REFUSED.with(|refused| refused.set(refused.get() + 1));
}

/// The open turn's budget as it stands, to be put back with [`restore`] after a pass whose
/// work is done again: a strict check judges the arguments yes or no first, then, only when
/// they fail, again to explain why.
#[derive(Clone, Copy)]
pub(crate) struct Saved {
    left: Option<u64>,
    branches: Option<u64>,
    refused: u64,
}

impl Saved {
    /// What [`refused`] was when this was saved.
    pub(crate) fn refused(self) -> u64 {
        self.refused
    }
}

/// The open turn's budget now.
pub(crate) fn save() -> Saved {
    Saved {
        left: LEFT.with(Cell::get),
        branches: BRANCHES_LEFT.with(Cell::get),
        refused: refused(),
    }
}

/// Puts back the budget [`save`] saw.
pub(crate) fn restore(saved: Saved) {
    LEFT.with(|left| left.set(saved.left));
    BRANCHES_LEFT.with(|left| left.set(saved.branches));
    REFUSED.with(|refused| refused.set(saved.refused));
}

/// How many matches the open turn refused or gave up so far.
pub(crate) fn refused() -> u64 {
    REFUSED.with(Cell::get)
}

/// The steps the open turn has left, for tests and reports.
#[cfg(test)]
pub(crate) fn left() -> Option<u64> {
    LEFT.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_spends_its_budget_once_and_refuses_past_it() {
        assert!(!charge(1), "no turn open: nothing is charged, nothing runs");
        let turn = Turn::open(100);
        assert!(charge(60));
        let inner = Turn::open(1_000);
        assert!(!charge(60), "the inner open keeps the outer budget");
        drop(inner);
        assert_eq!(left(), Some(40));
        assert_eq!(refused(), 1);
        assert!(charge(40));
        drop(turn);
        assert_eq!(left(), None);
    }
}
