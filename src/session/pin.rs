//! The pin: comparing what a session was given with what the current
//! policies give its pinned selection.

use super::{Live, parts};
use crate::contract::{
    DefinitionPart, DefinitionParts, FingerprintPair, PinChange, PinnedTool, Place, ResumeReport,
    ResumeStatus, SESSION_FORMAT_VERSION,
};
use crate::plan::Plan;
use std::collections::{BTreeMap, BTreeSet};

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
                now: Some(self.plan().fingerprint()),
            },
            changes,
        }
    }

    /// Every difference between the pin and the rebuilt plan.
    pub(super) fn changes(&self) -> Vec<PinChange> {
        let plan = self.plan();
        let mut changes = Vec::new();
        if plan.catalog.encoding.name() != self.doc.encoding {
            changes.push(PinChange::EncodingChanged {
                pinned: self.doc.encoding.clone(),
                now: plan.catalog.encoding.name().to_string(),
            });
        }
        compare(
            &plan,
            &self.doc.roster,
            &plan.roster,
            Place::Roster,
            &mut changes,
        );
        compare(
            &plan,
            &self.doc.deferred,
            &plan.deferred,
            Place::Deferred,
            &mut changes,
        );
        // A loaded tool must still be deferred with the definition the
        // model was given when it was loaded.
        for tool in &self.doc.loaded {
            let pin = self.doc.deferred.iter().find(|t| t.name == tool.name);
            let now = plan
                .deferred
                .iter()
                .copied()
                .find(|&i| plan.catalog.candidates[i].name == tool.name);
            match (pin, now) {
                (Some(pin), Some(i)) => {
                    let what = differing_parts(&pin.parts, &parts(&plan, i));
                    if !what.is_empty() {
                        changes.push(PinChange::Changed {
                            name: tool.name.clone(),
                            place: Place::Loaded,
                            what,
                        });
                    }
                }
                _ => changes.push(PinChange::Removed {
                    name: tool.name.clone(),
                    place: Place::Loaded,
                }),
            }
        }
        changes
    }
}

/// Pinned tools at `place` against what the rebuilt plan puts there.
fn compare(
    plan: &Plan<'_>,
    pinned: &[PinnedTool],
    now: &[usize],
    place: Place,
    changes: &mut Vec<PinChange>,
) {
    let position: BTreeMap<&str, usize> = now
        .iter()
        .enumerate()
        .map(|(p, &i)| (plan.catalog.candidates[i].name.as_str(), p))
        .collect();
    let pinned_names: BTreeSet<&str> = pinned.iter().map(|t| t.name.as_str()).collect();
    for (p, pin) in pinned.iter().enumerate() {
        match position.get(pin.name.as_str()) {
            None => changes.push(PinChange::Removed {
                name: pin.name.clone(),
                place,
            }),
            Some(&q) => {
                let mut what = differing_parts(&pin.parts, &parts(plan, now[q]));
                if place == Place::Roster && p != q {
                    what.push(DefinitionPart::Position);
                }
                if !what.is_empty() {
                    changes.push(PinChange::Changed {
                        name: pin.name.clone(),
                        place,
                        what,
                    });
                }
            }
        }
    }
    for &i in now {
        let name = &plan.catalog.candidates[i].name;
        if !pinned_names.contains(name.as_str()) {
            changes.push(PinChange::Added {
                name: name.clone(),
                place,
            });
        }
    }
}

fn differing_parts(pinned: &DefinitionParts, now: &DefinitionParts) -> Vec<DefinitionPart> {
    let mut what = Vec::new();
    if pinned.description != now.description {
        what.push(DefinitionPart::Description);
    }
    if pinned.input_schema != now.input_schema {
        what.push(DefinitionPart::InputSchema);
    }
    if pinned.fixed != now.fixed {
        what.push(DefinitionPart::Fixed);
    }
    if pinned.only != now.only {
        what.push(DefinitionPart::Only);
    }
    what
}
