//! The planner: walks the catalog in priority order and places each
//! candidate under the item cap and the token cap.
//!
//! Rules, in order, for each candidate that the catalog did not exclude:
//! 1. With deferral on, the control tool is placed first; its slot and
//!    tokens are reserved before anything else.
//! 2. The tool section's wrapper tokens are reserved once.
//! 3. No slot left: the candidate misses on `item-cap`.
//! 4. Its definition costs more tokens than are left: it misses on
//!    `token-cap`. The planner then moves on: a later, smaller candidate
//!    may still fit the tokens that remain.
//! 5. Otherwise it is offered (`required` for a required group member,
//!    `fits` for the rest).
//!
//! A candidate that misses is deferred when deferral is on, the control
//! tool was placed and the candidate is deferrable; otherwise it is cut.
//! Every decision keeps the facts behind it (which cap, how many tokens
//! short, what cap would let it in, which slot-holders it would need to
//! displace) so `why` and `gate` render them and never recompute.

use crate::catalog::{Catalog, Source, Tier};
use crate::contract::Reason;
use crate::contract::{Code, Status, Warning, WarningKind};
use crate::policy::Caps;
use crate::tokens::TokenCache;
use sha2::{Digest, Sha256};

/// The facts behind one decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Facts {
    /// Offered, or excluded by the catalog (the detail lives there).
    None,
    /// Missed on the item cap.
    ItemCap {
        /// Offered tools ranked ahead of it (all of them: the cap was full).
        offered_ahead: u32,
        /// The item cap that would let it in, tokens permitting.
        item_cap_needed: u32,
        /// How many offered tools, the first of [`Plan::displaceable`],
        /// would each have to give up a slot for it to be offered at this
        /// cap: a count into one shared list, so a large catalog costs no
        /// allocation and no reference count per miss.
        displace: u32,
    },
    /// Missed on the token cap.
    TokenCap {
        /// Its definition's tokens.
        tokens: u32,
        /// Tokens left when its turn came.
        room: u32,
        /// The token cap that would let it in at the same place.
        token_cap_needed: u32,
    },
}

/// The decision for one candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Offered, deferred or cut.
    pub status: Status,
    /// Why.
    pub code: Code,
    /// 1-based place in the priority order; `None` for excluded candidates.
    pub rank: Option<u32>,
    /// The facts behind it.
    pub facts: Facts,
}

/// The roster's size against its caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    /// Definitions offered (the control tool included).
    pub items: u32,
    /// The item cap applied.
    pub item_cap: u32,
    /// Tokens of the whole tool section: wrapper plus offered definitions.
    pub tokens: u32,
    /// The token cap applied.
    pub token_cap: u32,
    /// Candidates considered, excluded ones included.
    pub candidates: u32,
}

/// What the next addition at one priority tier would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextAddition {
    /// The tier.
    pub tier: Tier,
    /// The offered tool that would lose its slot (candidate index), if any.
    pub displaces: Option<usize>,
    /// Whether the addition itself would miss the item cap (no lower-ranked
    /// tool to displace and no slot left).
    pub misses: bool,
}

/// Room left in the roster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headroom {
    /// Slots left under the item cap.
    pub slots: u32,
    /// Tokens left under the token cap.
    pub tokens: u32,
    /// Per tier present in the catalog, what one more tool would displace.
    pub next: Vec<NextAddition>,
}

/// A roster plan: one decision per catalog candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan<'c> {
    /// The catalog planned over.
    pub catalog: &'c Catalog,
    /// The caps applied.
    pub caps: Caps,
    /// One decision per candidate, indexed like `catalog.candidates`.
    pub decisions: Vec<Decision>,
    /// Offered candidates, in rank order.
    pub roster: Vec<usize>,
    /// Deferred candidates, in rank order.
    pub deferred: Vec<usize>,
    /// Cut candidates: those that missed a cap in rank order, then those
    /// the catalog excluded in catalog order.
    pub cut: Vec<usize>,
    /// Offered tools that are not required (nor the control tool),
    /// lowest-ranked first: the slot-holders item-cap misses would displace
    /// (see [`Facts::ItemCap`]).
    pub displaceable: Vec<usize>,
    /// Totals.
    pub totals: Totals,
    /// Headroom.
    pub headroom: Headroom,
    /// Catalog warnings followed by the plan's own.
    pub warnings: Vec<Warning>,
    /// The control tool as offered, when deferral is on and it was placed.
    pub control: Option<ControlOffer>,
}

/// Plans the roster of `catalog` under `caps`.
///
/// # Example
/// ```no_run
/// use muster::{catalog::{Catalog, Selection}, plan::plan, policy::Inputs};
/// let inputs = Inputs::load("policies".as_ref())?;
/// let catalog = Catalog::build(&inputs, &Selection::default())?;
/// let plan = plan(&catalog, catalog.caps);
/// assert!(plan.totals.items <= plan.caps.items);
/// # Ok::<(), muster::Error>(())
/// ```
///
/// The control tool's summary is counted afresh, which builds the
/// tokenizer; [`plan_counted`] takes those counts from a cache instead.
pub fn plan(catalog: &Catalog, caps: Caps) -> Plan<'_> {
    plan_counted(catalog, caps, &mut TokenCache::in_memory())
}

/// [`plan`], taking the counts of the control tool's descriptions from
/// `cache` and adding those it lacked, so a run whose counts are all cached
/// builds no tokenizer. The plan is the same as without the cache.
pub fn plan_counted<'c>(catalog: &'c Catalog, caps: Caps, cache: &mut TokenCache) -> Plan<'c> {
    plan_with(catalog, caps, |index, deferred, reserved| {
        control::offer(catalog, index, deferred, reserved, cache)
    })
}

/// [`plan`] with the control tool offered as `offer` says, when it was
/// written for the same control tool, reservation and deferred tools (a
/// plan of the same catalog and caps, kept by the caller); counted afresh
/// otherwise.
pub(crate) fn plan_offered<'c>(
    catalog: &'c Catalog,
    caps: Caps,
    offer: Option<&control::Offered>,
) -> Plan<'c> {
    plan_with(catalog, caps, |index, deferred, reserved| match offer {
        Some(o) if o.fits(index, deferred, reserved) => o.offer.clone(),
        _ => control::offer(
            catalog,
            index,
            deferred,
            reserved,
            &mut TokenCache::in_memory(),
        ),
    })
}

/// The control tool's offer in the plan of `catalog` under `caps`, counted
/// through `cache`, kept with the deferred tools it was written for (see
/// [`plan_offered`]).
pub(crate) fn control_offered(
    catalog: &Catalog,
    caps: Caps,
    cache: &mut TokenCache,
) -> Option<control::Offered> {
    let mut kept = None;
    plan_with(catalog, caps, |index, deferred, reserved| {
        let offer = control::offer(catalog, index, deferred, reserved, cache);
        kept = Some(control::Offered {
            deferred: deferred.to_vec(),
            offer: offer.clone(),
        });
        offer
    });
    kept
}

/// The planner; `offer` writes the control tool's offer (its candidate
/// index, the deferred tools in rank order, the tokens reserved).
fn plan_with<'c>(
    catalog: &'c Catalog,
    caps: Caps,
    mut offer: impl FnMut(usize, &[usize], u32) -> ControlOffer,
) -> Plan<'c> {
    let n = catalog.candidates.len();
    let mut decisions: Vec<Decision> = catalog
        .candidates
        .iter()
        .map(|c| match &c.exclusion {
            Some(ex) => Decision {
                status: Status::Cut,
                code: ex.code(),
                rank: None,
                facts: Facts::None,
            },
            None => Decision {
                status: Status::Cut,
                code: Code::ItemCap,
                rank: None,
                facts: Facts::None,
            },
        })
        .collect();
    let mut roster = Vec::with_capacity(caps.items.min(64) as usize);
    let mut missed = Vec::new();
    let mut items_left = caps.items;
    let any = !catalog.ranked.is_empty();
    let wrapper = if any { catalog.wrapper_tokens } else { 0 };
    let mut tokens_left = caps.tokens.saturating_sub(wrapper);
    let mut item_misses = 0u32;
    let mut control_placed = false;
    let mut warnings = catalog.warnings.clone();
    // With `deferral.loads = "within-caps"` the control tool holds the
    // loads' room as well: `max_loaded` slots and `max_loaded_tokens`.
    let (reserve_items, reserve_tokens) = load_reserve(catalog);

    for (position, &i) in catalog.ranked.iter().enumerate() {
        let c = &catalog.candidates[i];
        let d = &mut decisions[i];
        d.rank = Some(position as u32 + 1);
        let is_control = matches!(c.source, Source::Control);
        // The control tool is charged its summary's budget as well: the
        // summary is written after placement, for what was deferred.
        let (item_cost, cost) = if is_control {
            (
                reserve_items.saturating_add(1),
                c.tokens
                    .saturating_add(catalog.deferral_policy.summary_tokens)
                    .saturating_add(reserve_tokens),
            )
        } else {
            (1, c.tokens)
        };
        let reserved_items = if control_placed { reserve_items } else { 0 };
        let miss = if items_left < item_cost {
            if !is_control {
                item_misses += 1;
            }
            Some((
                Code::ItemCap,
                Facts::ItemCap {
                    offered_ahead: caps.items - items_left - reserved_items,
                    item_cap_needed: caps
                        .items
                        .saturating_add(item_cost - items_left)
                        .saturating_add(item_misses.saturating_sub(1)),
                    displace: 0,
                },
            ))
        } else if cost > tokens_left {
            Some((
                Code::TokenCap,
                Facts::TokenCap {
                    tokens: cost,
                    room: tokens_left,
                    // The wrapper is paid first, so a cap below it needs
                    // the wrapper's worth before anything counts.
                    token_cap_needed: caps.tokens.max(wrapper).saturating_add(cost - tokens_left),
                },
            ))
        } else {
            None
        };
        match miss {
            None => {
                items_left -= item_cost;
                tokens_left -= cost;
                d.status = Status::Offered;
                d.code = if is_control {
                    control_placed = true;
                    Code::ControlTool
                } else if c.required {
                    Code::Required
                } else {
                    Code::Fits
                };
                roster.push(i);
            }
            Some((code, facts)) => {
                d.code = code;
                d.facts = facts;
                d.status = if control_placed && c.deferrable && !is_control {
                    Status::Deferred
                } else {
                    Status::Cut
                };
                if is_control {
                    warnings.push(Warning::new(WarningKind::ControlToolCut {
                        tool: c.name.clone(),
                    }));
                }
                missed.push(i);
            }
        }
    }

    // Slot-holders an item-cap miss would displace: the lowest-ranked
    // offered tools that are not required (nor the control tool), one per
    // item-cap miss ranked up to and including it.
    let displaceable: Vec<usize> = roster
        .iter()
        .rev()
        .copied()
        .filter(|&i| {
            let c = &catalog.candidates[i];
            !c.required && !matches!(c.source, Source::Control)
        })
        .collect();
    let mut item_misses = 0usize;
    for &i in &missed {
        if let Facts::ItemCap { displace, .. } = &mut decisions[i].facts {
            item_misses += 1;
            *displace = item_misses.min(displaceable.len()) as u32;
        }
    }

    let mut deferred = Vec::new();
    let mut cut = Vec::new();
    for &i in &missed {
        match decisions[i].status {
            Status::Deferred => deferred.push(i),
            _ => cut.push(i),
        }
    }
    cut.extend((0..n).filter(|&i| catalog.candidates[i].exclusion.is_some()));

    // Required tools not offered, in rank order, then those excluded.
    let unranked = (0..n).filter(|&i| catalog.candidates[i].exclusion.is_some());
    for i in catalog.ranked.iter().copied().chain(unranked) {
        let c = &catalog.candidates[i];
        if c.required && decisions[i].status != Status::Offered {
            warnings.push(Warning::new(WarningKind::RequiredNotOffered {
                tool: c.name.clone(),
                status: decisions[i].status,
                reason: reason_of(
                    catalog,
                    &displaceable,
                    &decisions[i],
                    None,
                    control_placed,
                    i,
                ),
            }));
        }
    }

    // The check compiles a strict schema when it reads the plan; one it
    // cannot compile refuses every call, so say so while the policy can
    // still change. Only tools the plan offers or defers are compiled (a
    // cut tool is never called, and compiling every candidate's schema
    // would cost more than the rest of a large plan), each once per
    // catalog ([`crate::catalog::Candidate::strict_problem`]). The warnings follow
    // the catalog's, in candidate order.
    let mut shown: Vec<usize> = roster.iter().chain(&deferred).copied().collect();
    shown.sort_unstable();
    let uncheckable = shown.into_iter().filter_map(|i| {
        let c = &catalog.candidates[i];
        Some(Warning::new(WarningKind::UncheckableSchema {
            tool: c.name.clone(),
            why: c.strict_problem()?.to_string(),
        }))
    });
    let at = catalog.warnings.len();
    warnings.splice(at..at, uncheckable);

    let control = roster
        .iter()
        .copied()
        .find(|&i| matches!(catalog.candidates[i].source, Source::Control))
        .map(|i| {
            let reserved = catalog.candidates[i]
                .tokens
                .saturating_add(catalog.deferral_policy.summary_tokens);
            offer(i, &deferred, reserved)
        });
    // What the summary left of its reservation goes back to the roster's
    // room: the totals count the control tool as offered.
    if let Some(offer) = &control {
        tokens_left += offer.reserved - offer.tokens;
    }
    // The loads' room is held, not offered.
    let (held_items, held_tokens) = if control_placed {
        (reserve_items, reserve_tokens)
    } else {
        (0, 0)
    };
    let used_tokens = caps.tokens.saturating_sub(wrapper) - tokens_left - held_tokens;
    let totals = Totals {
        items: caps.items - items_left - held_items,
        item_cap: caps.items,
        tokens: if roster.is_empty() {
            0
        } else {
            used_tokens + wrapper
        },
        token_cap: caps.tokens,
        candidates: n as u32,
    };
    let headroom = headroom(
        catalog,
        &roster,
        items_left,
        (caps.tokens - totals.tokens.min(caps.tokens)).saturating_sub(held_tokens),
    );
    Plan {
        catalog,
        caps,
        decisions,
        roster,
        deferred,
        cut,
        displaceable,
        totals,
        headroom,
        warnings,
        control,
    }
}

/// The code and facts of candidate `i`'s decision `d`.
fn reason_of(
    catalog: &Catalog,
    displaceable: &[usize],
    d: &Decision,
    control: Option<&ControlOffer>,
    control_placed: bool,
    i: usize,
) -> Reason {
    let c = &catalog.candidates[i];
    if let Some(ex) = &c.exclusion {
        return Reason::clone(ex);
    }
    // The loads' room counts against a miss once the control tool holds
    // it, and against the control tool's own miss.
    let (reserve_items, reserve_tokens) = if control_placed || matches!(c.source, Source::Control) {
        load_reserve(catalog)
    } else {
        (0, 0)
    };
    let name = |j: usize| catalog.candidates[j].name.clone();
    match &d.facts {
        Facts::ItemCap {
            offered_ahead,
            item_cap_needed,
            displace,
        } => Reason::ItemCap {
            offered_ahead: *offered_ahead,
            item_cap_needed: *item_cap_needed,
            displace: displaceable[..*displace as usize]
                .iter()
                .map(|&j| name(j))
                .collect(),
            reserved_for_loads: reserve_items,
        },
        Facts::TokenCap {
            tokens,
            room,
            token_cap_needed,
        } => Reason::TokenCap {
            tokens: *tokens,
            room: *room,
            short: tokens - room,
            token_cap_needed: *token_cap_needed,
            reserved_for_loads: reserve_tokens,
        },
        Facts::None => match (d.code, control) {
            (Code::ControlTool, Some(offer)) if offer.index == i => Reason::ControlTool {
                reserved: offer.reserved,
                tokens: offer.tokens,
            },
            (Code::Required, _) => Reason::Required {
                group: c.group.clone().unwrap_or_default(),
                tokens: c.tokens,
            },
            _ => Reason::Fits {
                tokens: match control {
                    Some(offer) if offer.index == i => offer.tokens,
                    _ => c.tokens,
                },
                rank: d.rank.unwrap_or(0),
            },
        },
    }
}

/// The roster fingerprint: agent name and version and each offered
/// definition's hash, in roster order.
pub fn fingerprint(agent: &str, version: u64, definition_hashes: &[[u8; 32]]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"muster-roster-v1\0");
    hasher.update(agent.as_bytes());
    hasher.update(b"\0");
    hasher.update(version.to_be_bytes());
    for hash in definition_hashes {
        hasher.update(hash);
    }
    crate::canon::labelled_hex(&hasher.finalize())
}

fn headroom(catalog: &Catalog, roster: &[usize], slots: u32, tokens: u32) -> Headroom {
    let mut tiers: Vec<Tier> = catalog
        .ranked
        .iter()
        .map(|&i| &catalog.candidates[i])
        .filter(|c| !matches!(c.source, Source::Control))
        .map(|c| c.tier())
        .collect();
    // Ranked in tier order already: dropping repeats here leaves the sort
    // below a handful of tiers instead of every candidate.
    tiers.dedup();
    for discovered in [false, true] {
        tiers.push(Tier {
            required: false,
            priority: 0,
            discovered,
        });
    }
    tiers.sort_by_key(|t| t.key());
    tiers.dedup();
    let next = tiers
        .into_iter()
        .map(|tier| {
            if slots > 0 {
                return NextAddition {
                    tier,
                    displaces: None,
                    misses: false,
                };
            }
            // A new tool lands at the end of its tier: it displaces the
            // lowest-ranked offered tool of a later tier.
            let displaces = roster.iter().rev().copied().find(|&i| {
                let c = &catalog.candidates[i];
                !matches!(c.source, Source::Control) && c.tier().key() > tier.key()
            });
            NextAddition {
                tier,
                displaces,
                misses: displaces.is_none(),
            }
        })
        .collect();
    Headroom {
        slots,
        tokens,
        next,
    }
}

impl Plan<'_> {
    /// The offered tools a load in words also searches: the roster without
    /// the control tool, in roster order.
    pub(crate) fn offered_tools(&self) -> Vec<usize> {
        self.roster
            .iter()
            .copied()
            .filter(|&i| {
                !matches!(
                    self.catalog.candidates[i].source,
                    crate::catalog::Source::Control
                )
            })
            .collect()
    }

    /// Stable hash of the offered roster: the agent's name and version and
    /// every offered definition in order. Sessions pin it; it changes when
    /// anything the model is shown changes.
    pub fn fingerprint(&self) -> String {
        let hashes: Vec<[u8; 32]> = self
            .roster
            .iter()
            .map(|&i| self.definition_hash(i))
            .collect();
        fingerprint(&self.catalog.agent, self.catalog.agent_version, &hashes)
    }

    /// The hash of candidate `i`'s definition as offered (the control
    /// tool's with its summary).
    pub fn definition_hash(&self, i: usize) -> [u8; 32] {
        match &self.control {
            Some(offer) if offer.index == i => offer.definition_hash,
            _ => self.catalog.candidates[i].definition_hash,
        }
    }

    /// Candidate `i`'s description as offered.
    pub fn description(&self, i: usize) -> &str {
        match &self.control {
            Some(offer) if offer.index == i => &offer.description,
            _ => &self.catalog.candidates[i].description,
        }
    }

    /// Tokens candidate `i`'s definition costs as offered.
    pub fn tokens(&self, i: usize) -> u32 {
        match &self.control {
            Some(offer) if offer.index == i => offer.tokens,
            _ => self.catalog.candidates[i].tokens,
        }
    }

    /// The decision about the candidate called `name` (the first, if the
    /// name is repeated).
    pub fn decision(&self, name: &str) -> Option<(usize, &Decision)> {
        self.catalog.find(name).map(|i| (i, &self.decisions[i]))
    }

    /// The code and facts of candidate `i`'s decision.
    pub fn reason(&self, i: usize) -> Reason {
        reason_of(
            self.catalog,
            &self.displaceable,
            &self.decisions[i],
            self.control.as_ref(),
            self.control.is_some(),
            i,
        )
    }

    /// The offer if every load the policy allows were taken: pinned items
    /// and tokens plus the most that loads may add (bounded by
    /// `max_loaded` / `max_loaded_tokens`, by what is deferred — the
    /// `max_loaded` largest deferred definitions for tokens — and by
    /// `deferral.loads`' limits), as (items, tokens).
    pub fn after_loads(&self) -> (u32, u32) {
        let pinned = (self.totals.items, self.totals.tokens);
        if self.control.is_none() {
            return pinned;
        }
        let policy = &self.catalog.deferral_policy;
        // The most tokens `max_loaded` loads can add: the largest
        // deferred definitions, as many as may be loaded.
        let mut sizes: Vec<u32> = self
            .deferred
            .iter()
            .map(|&i| self.catalog.candidates[i].tokens)
            .collect();
        sizes.sort_unstable();
        let deferred_tokens = sizes
            .iter()
            .rev()
            .take(policy.max_loaded as usize)
            .fold(0u32, |sum, &t| sum.saturating_add(t));
        let items = pinned
            .0
            .saturating_add(policy.max_loaded.min(self.deferred.len() as u32));
        let tokens = pinned
            .1
            .saturating_add(policy.max_loaded_tokens.min(deferred_tokens));
        let (item_limit, token_limit) = policy.loads.limits(self.caps);
        (
            item_limit.map_or(items, |l| items.min(l.max(pinned.0))),
            token_limit.map_or(tokens, |l| tokens.min(l.max(pinned.1))),
        )
    }

    /// One sentence with the facts of candidate `i`'s decision.
    pub fn detail(&self, i: usize) -> String {
        self.reason(i).to_string()
    }
}

/// Room held for loads: `deferral.max_loaded` slots and
/// `deferral.max_loaded_tokens` tokens with `loads = "within-caps"` and
/// deferral on; none otherwise.
fn load_reserve(catalog: &Catalog) -> (u32, u32) {
    let policy = &catalog.deferral_policy;
    if catalog.deferral && policy.loads == crate::policy::Loads::WithinCaps {
        (policy.max_loaded, policy.max_loaded_tokens)
    } else {
        (0, 0)
    }
}

mod control;
mod json;
mod provider;
pub use control::ControlOffer;
pub(crate) use control::Offered;
pub use json::{FORMAT_VERSION, PlanJson, RosterEntry};
