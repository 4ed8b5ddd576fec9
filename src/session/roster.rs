//! What the model is offered now: the pinned roster, then the loaded tools,
//! in the plan JSON's roster shape so `check` reads it as it reads a plan.

use super::{Live, json_text};
use crate::contract::{Code, PinnedAgent, Provider};
use crate::plan::{self, Plan, RosterEntry};
use crate::provider::shape::{self, Format};
use serde::Serialize;

impl Live {
    /// What the model is offered now: the pinned roster, then the loaded
    /// tools in load order, in the plan JSON's roster shape (pretty JSON
    /// with a trailing newline, as `session roster --format json` prints).
    pub fn roster_json(&self) -> String {
        let plan = self.plan();
        json_text(&SessionRoster::new(self, &plan))
    }

    /// What the model is offered now as `format`'s `tools` value (pretty
    /// JSON with a trailing newline): the pinned roster, muster's control
    /// tool included, then the loaded tools in load order. Tools not loaded
    /// yet are not sent, whatever the provider: the session is what loads
    /// them, so `check --session` knows every tool a call may name.
    pub fn provider_tools(&self, format: Format) -> String {
        let plan = self.plan();
        let mut offer = plan.provider_offer();
        offer.deferred.clear();
        for tool in &self.doc.loaded {
            if let Some(i) = self.basis.catalog.find(&tool.name) {
                offer.offered.push(plan.provider_tool(i));
            }
        }
        shape::render(format, &offer)
    }
}

impl Live {
    /// What an MCP client is offered now, as a `tools/list` result's
    /// `tools` value (compact JSON): the pinned roster, the control tool
    /// included, then the loaded tools in load order, each as `{"name",
    /// "description", "inputSchema"}` with its provider name and its
    /// definition as narrowed.
    pub fn mcp_tools(&self) -> String {
        let plan = self.plan();
        let catalog = &self.basis.catalog;
        let loaded = self.doc.loaded.iter().filter_map(|t| catalog.find(&t.name));
        let tools: Vec<_> = plan
            .roster
            .iter()
            .copied()
            .chain(loaded)
            .map(|i| {
                (
                    plan.provider_tool(i),
                    catalog.candidates[i].hints.as_deref(),
                )
            })
            .collect();
        shape::render_mcp(&tools)
    }
}

/// What `session roster --format json` prints: the plan JSON's shape for
/// the offered tools, so `check` reads it as it reads a plan.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct SessionRoster<'a> {
    /// The plan JSON's version: the roster entries have its shape.
    pub format_version: u32,
    /// The pinned agent.
    pub agent: &'a PinnedAgent,
    /// The pinned encoding.
    pub encoding: &'a str,
    /// Whose billing the token counts follow (`[tokens] provider`).
    pub provider: Provider,
    /// The control tool, when the session has one.
    pub control_tool: Option<&'a str>,
    /// The pinned fingerprint.
    pub fingerprint: &'a str,
    /// Pinned roster, then loaded tools in load order (code `loaded`).
    pub roster: Vec<RosterEntry<'a>>,
    /// Deferred tools not loaded yet.
    pub deferred: Vec<UnloadedTool<'a>>,
    /// Sizes.
    pub totals: SessionTotals,
}

/// A deferred tool not loaded yet.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct UnloadedTool<'a> {
    /// Tool name.
    pub name: &'a str,
    /// The name providers are sent: a call by it is told to load the tool
    /// first.
    pub provider_name: &'a str,
    /// Why it was deferred.
    pub code: Code,
    /// Tokens it would cost.
    pub tokens: u32,
}

/// The session's offer against its caps and load bounds.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct SessionTotals {
    /// Pinned roster items.
    pub pinned_items: u32,
    /// Pinned roster tokens, wrapper included.
    pub pinned_tokens: u32,
    /// Loaded tools.
    pub loaded_items: u32,
    /// Tokens of the loaded tools.
    pub loaded_tokens: u32,
    /// `deferral.max_loaded`.
    pub max_loaded: u32,
    /// `deferral.max_loaded_tokens`.
    pub max_loaded_tokens: u32,
    /// What the model is offered now: pinned and loaded items.
    pub offered_items: u32,
    /// Their tokens, wrapper included.
    pub offered_tokens: u32,
    /// The item cap the session was planned under.
    pub item_cap: u32,
    /// The token cap the session was planned under.
    pub token_cap: u32,
    /// Items offered beyond the item cap (0 within it).
    pub over_items: u32,
    /// Tokens offered beyond the token cap (0 within it).
    pub over_tokens: u32,
}

impl<'a> SessionRoster<'a> {
    fn new(live: &'a Live, plan: &'a Plan<'a>) -> Self {
        let catalog = &live.basis.catalog;
        let mut roster: Vec<RosterEntry<'a>> =
            plan.roster.iter().map(|&i| plan.roster_entry(i)).collect();
        for tool in &live.doc.loaded {
            if let Some(i) = catalog.find(&tool.name) {
                let mut entry = plan.roster_entry(i);
                entry.code = Code::Loaded;
                roster.push(entry);
            }
        }
        let deferred = plan
            .deferred
            .iter()
            .copied()
            .filter(|&i| !live.is_loaded(&catalog.candidates[i].name))
            .map(|i| UnloadedTool {
                name: &catalog.candidates[i].name,
                provider_name: &catalog.candidates[i].provider_name,
                code: plan.decisions[i].code,
                tokens: catalog.candidates[i].tokens,
            })
            .collect();
        let loaded_tokens: u32 = live
            .doc
            .loaded
            .iter()
            .filter_map(|t| catalog.find(&t.name))
            .map(|i| catalog.candidates[i].tokens)
            .sum();
        let loaded_items = live.doc.loaded.len() as u32;
        let offered_items = plan.totals.items + loaded_items;
        let offered_tokens = plan.totals.tokens + loaded_tokens;
        SessionRoster {
            format_version: plan::FORMAT_VERSION,
            agent: &live.doc.agent,
            encoding: &live.doc.encoding,
            provider: catalog.provider,
            control_tool: plan
                .control
                .as_ref()
                .map(|c| catalog.candidates[c.index].name.as_str()),
            fingerprint: &live.doc.fingerprint,
            roster,
            deferred,
            totals: SessionTotals {
                pinned_items: plan.totals.items,
                pinned_tokens: plan.totals.tokens,
                loaded_items,
                loaded_tokens,
                max_loaded: catalog.deferral_policy.max_loaded,
                max_loaded_tokens: catalog.deferral_policy.max_loaded_tokens,
                offered_items,
                offered_tokens,
                item_cap: live.basis.caps.items,
                token_cap: live.basis.caps.tokens,
                over_items: offered_items.saturating_sub(live.basis.caps.items),
                over_tokens: offered_tokens.saturating_sub(live.basis.caps.tokens),
            },
        }
    }
}
