//! The pin: comparing what a session was given with what the current
//! policies give its pinned selection, and saying each difference once, by
//! its cause.

use super::{Live, deferred_parts, parts, short};
use crate::contract::{
    DefinitionPart, FingerprintPair, PinChange, PinnedTool, Place, ResumeReport, ResumeStatus,
    SESSION_FORMAT_VERSION,
};
use crate::plan::Plan;
use std::collections::BTreeMap;

impl Live {
    pub(super) fn report(&self, changes: Vec<PinChange>) -> ResumeReport {
        ResumeReport {
            format_version: SESSION_FORMAT_VERSION,
            status: if changes.is_empty() {
                ResumeStatus::Ok
            } else {
                ResumeStatus::ToolPinMismatch
            },
            agent: self.doc.agent.clone(),
            fingerprint: FingerprintPair {
                pinned: self.doc.fingerprint.clone(),
                now: Some(self.basis.fingerprint.clone()),
            },
            changes,
        }
    }

    /// Every difference between the pin and the rebuilt plan.
    pub(super) fn changes(&self) -> Vec<PinChange> {
        let basis = &*self.basis;
        let catalog = &basis.catalog;
        let mut changes = Vec::new();
        if catalog.encoding.name() != self.doc.encoding {
            changes.push(PinChange::EncodingChanged {
                pinned: self.doc.encoding.clone(),
                now: catalog.encoding.name().to_string(),
            });
        }
        if basis.fingerprint != self.doc.fingerprint {
            roster_changes(&self.plan(), &self.doc.roster, &mut changes);
        }
        if basis.deferred_pin != self.doc.deferred {
            changes.push(PinChange::DeferredChanged {
                pinned: self.doc.deferred.count,
                now: basis.deferred_pin.count,
            });
            // A loaded tool must still be deferred with the definition the
            // model was given when it was loaded.
            for tool in &self.doc.loaded {
                match basis.deferred.get(tool.name.as_str()) {
                    None => changes.push(PinChange::Removed {
                        name: tool.name.clone(),
                        place: Place::Loaded,
                    }),
                    Some(&i) if short(&catalog.candidates[i].definition_hash) != tool.digest => {
                        changes.push(PinChange::Changed {
                            name: tool.name.clone(),
                            place: Place::Loaded,
                            what: differing_parts(&tool.parts, &deferred_parts(catalog, i)),
                        });
                    }
                    Some(_) => {}
                }
            }
        }
        changes
    }
}

/// The roster's differences, by cause: tools removed and added, tools whose
/// definition changed, tools whose order among the kept ones changed, and
/// one count of the kept tools that only moved because of the others.
fn roster_changes(plan: &Plan<'_>, pinned: &[PinnedTool], changes: &mut Vec<PinChange>) {
    let now: BTreeMap<&str, usize> = plan
        .roster
        .iter()
        .enumerate()
        .map(|(p, &i)| (plan.catalog.candidates[i].name.as_str(), p))
        .collect();
    let was: BTreeMap<&str, usize> = pinned
        .iter()
        .enumerate()
        .map(|(p, t)| (t.name.as_str(), p))
        .collect();
    // Kept tools in pinned order, with their position now.
    let mut kept: Vec<(usize, usize)> = Vec::new();
    for (p, pin) in pinned.iter().enumerate() {
        match now.get(pin.name.as_str()) {
            None => changes.push(PinChange::Removed {
                name: pin.name.clone(),
                place: Place::Roster,
            }),
            Some(&q) => {
                let i = plan.roster[q];
                if short(&plan.definition_hash(i)) != pin.digest {
                    changes.push(PinChange::Changed {
                        name: pin.name.clone(),
                        place: Place::Roster,
                        what: differing_parts(&pin.parts, &parts(plan, i)),
                    });
                }
                kept.push((p, q));
            }
        }
    }
    for &i in &plan.roster {
        let name = &plan.catalog.candidates[i].name;
        if !was.contains_key(name.as_str()) {
            changes.push(PinChange::Added {
                name: name.clone(),
                place: Place::Roster,
            });
        }
    }
    // The kept tools that hold their relative order are the longest run of
    // increasing positions now; every other kept tool was moved.
    let in_order = longest_increasing(&kept.iter().map(|&(_, q)| q).collect::<Vec<_>>());
    let mut shifted = 0;
    for (k, &(p, q)) in kept.iter().enumerate() {
        if !in_order[k] {
            changes.push(PinChange::Moved {
                name: pinned[p].name.clone(),
                pinned: p as u32,
                now: q as u32,
            });
        } else if p != q {
            shifted += 1;
        }
    }
    if shifted > 0 {
        changes.push(PinChange::Shifted { tools: shifted });
    }
}

/// Marks the members of one longest strictly increasing subsequence of
/// `values` (O(n log n)); ties go to the earliest members.
fn longest_increasing(values: &[usize]) -> Vec<bool> {
    let mut tails: Vec<usize> = Vec::new(); // indexes into values
    let mut parent: Vec<Option<usize>> = vec![None; values.len()];
    for (k, &v) in values.iter().enumerate() {
        let at = tails.partition_point(|&t| values[t] < v);
        parent[k] = at.checked_sub(1).map(|a| tails[a]);
        if at == tails.len() {
            tails.push(k);
        } else {
            tails[at] = k;
        }
    }
    let mut marked = vec![false; values.len()];
    let mut at = tails.last().copied();
    while let Some(k) = at {
        marked[k] = true;
        at = parent[k];
    }
    marked
}

/// The parts whose digests differ; a definition whose four parts agree
/// but whose digest does not differs in its provider name.
fn differing_parts(pinned: &str, now: &str) -> Vec<DefinitionPart> {
    let order = [
        DefinitionPart::Description,
        DefinitionPart::InputSchema,
        DefinitionPart::Fixed,
        DefinitionPart::Only,
    ];
    let mut what: Vec<DefinitionPart> = pinned
        .split('.')
        .zip(now.split('.'))
        .zip(order)
        .filter(|((a, b), _)| a != b)
        .map(|(_, part)| part)
        .collect();
    if what.is_empty() {
        what.push(DefinitionPart::ProviderName);
    }
    what
}

#[cfg(test)]
mod tests {
    use super::longest_increasing;

    #[test]
    fn one_tool_moved_to_the_end_is_the_only_one_out_of_order() {
        assert_eq!(
            longest_increasing(&[4, 0, 1, 2, 3]),
            [false, true, true, true, true]
        );
        assert_eq!(longest_increasing(&[0, 1, 2]), [true, true, true]);
        assert_eq!(longest_increasing(&[]), Vec::<bool>::new());
    }
}
