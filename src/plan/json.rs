//! The JSON contract of `muster plan --format json`; field by field in
//! `docs/plan-json.md`. These types only borrow the plan: they render its
//! decisions and never change them.

use super::Plan;
use crate::catalog::{Candidate, Parameter, Source};
use crate::contract::{CheckMode, ContextShare, Provider, Reason};
use crate::contract::{Code, Status, Warning};
use crate::policy::UnknownArguments;
use crate::schema::Schema;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Version of the plan JSON contract; bumped on any incompatible change.
pub const FORMAT_VERSION: u32 = 4;

/// The whole plan document.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct PlanJson<'a> {
    pub format_version: u32,
    pub agent: AgentJson<'a>,
    pub encoding: &'static str,
    /// Whose billing the token counts follow (`[tokens] provider`).
    pub provider: Provider,
    pub control_tool: Option<&'a str>,
    pub roster: Vec<RosterEntry<'a>>,
    pub deferred: Vec<MissEntry<'a>>,
    pub cut: Vec<MissEntry<'a>>,
    pub totals: TotalsJson,
    pub headroom: HeadroomJson<'a>,
    /// The tool section's share of a model's context window.
    pub context: ContextShare,
    pub fingerprint: String,
    pub warnings: &'a [Warning],
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct AgentJson<'a> {
    pub name: &'a str,
    pub version: u64,
    pub profile: Option<&'a str>,
    pub flags: &'a [String],
}

/// One offered tool: what the model is shown and what a call check needs.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct RosterEntry<'a> {
    pub name: &'a str,
    /// The name providers are sent (`^[a-zA-Z0-9_-]{1,64}$`).
    pub provider_name: &'a str,
    pub source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<&'a str>,
    pub rank: u32,
    pub code: Code,
    pub group: Option<&'a str>,
    pub tokens: u32,
    pub description: &'a str,
    #[cfg_attr(feature = "serve", schema(value_type = serde_json::Value))]
    pub input_schema: &'a Schema,
    pub fixed: &'a BTreeMap<String, Value>,
    pub only: Option<&'a [String]>,
    pub unknown_arguments: UnknownArguments,
    pub coerce: bool,
    pub check: CheckMode,
    pub parameters: Option<&'a [Parameter]>,
    pub variadic: bool,
    /// MCP tools only, when the server lists it: `title`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "serve", schema(value_type = Option<serde_json::Value>))]
    pub title: Option<&'a Value>,
    /// MCP tools only, when the server lists them: `annotations` as listed
    /// (`readOnlyHint`, `destructiveHint`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "serve", schema(value_type = Option<serde_json::Value>))]
    pub annotations: Option<&'a Value>,
    /// MCP tools only, when the server lists it: `outputSchema`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "serve", schema(value_type = Option<serde_json::Value>))]
    pub output_schema: Option<&'a Value>,
    /// MCP tools only, when the server lists it: `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "serve", schema(value_type = Option<serde_json::Value>))]
    pub meta: Option<&'a Value>,
}

/// A deferred or cut candidate.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct MissEntry<'a> {
    pub name: &'a str,
    pub provider_name: &'a str,
    pub source: &'static str,
    pub status: Status,
    pub code: Code,
    pub rank: Option<u32>,
    pub tokens: Option<u32>,
    /// The decision's sentence, rendered from `facts`.
    pub detail: String,
    /// The decision's code and facts, tagged by `code`.
    pub facts: Reason,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct TotalsJson {
    pub items: u32,
    pub item_cap: u32,
    pub tokens: u32,
    pub token_cap: u32,
    pub wrapper_tokens: u32,
    pub candidates: u32,
    pub offered: u32,
    pub deferred: u32,
    pub cut: u32,
    /// The chat's worst case: the offer if every load the policy allows
    /// were taken. Present when the plan offers the control tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_loads: Option<AfterLoadsJson>,
}

/// What a chat may be offered once loads are taken.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct AfterLoadsJson {
    /// `deferral.loads`: `within-caps` or `beyond-caps`.
    pub loads: &'static str,
    /// Items offered with every allowed load taken.
    pub items: u32,
    /// Tokens of the tool section with every allowed load taken.
    pub tokens: u32,
    /// Items past the item cap (0 within it).
    pub over_items: u32,
    /// Tokens past the token cap (0 within it).
    pub over_tokens: u32,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct HeadroomJson<'a> {
    pub slots: u32,
    pub tokens: u32,
    pub next: Vec<NextJson<'a>>,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct NextJson<'a> {
    pub tier: String,
    pub outcome: &'static str,
    pub displaces: Option<&'a str>,
}

fn server_tool(c: &Candidate) -> (Option<&str>, Option<&str>) {
    match &c.source {
        Source::Mcp { server, tool } => (Some(server), Some(tool)),
        _ => (None, None),
    }
}

impl<'c> Plan<'c> {
    /// Candidate `i` as an offered tool in the plan JSON's roster shape, with
    /// its decision's rank and code.
    pub fn roster_entry(&self, i: usize) -> RosterEntry<'_> {
        let c = &self.catalog.candidates[i];
        let d = &self.decisions[i];
        let (server, tool) = server_tool(c);
        RosterEntry {
            name: &c.name,
            provider_name: &c.provider_name,
            source: c.source.as_str(),
            server,
            tool,
            rank: d.rank.unwrap_or(0),
            code: d.code,
            group: c.group.as_deref(),
            tokens: self.tokens(i),
            description: self.description(i),
            input_schema: &c.input_schema,
            fixed: &c.call.fixed,
            only: c.call.only.as_deref(),
            unknown_arguments: c.call.unknown_arguments,
            coerce: c.call.coerce,
            check: c.call.check,
            parameters: c.call.parameters.as_deref(),
            variadic: c.call.variadic,
            title: c.hints.as_ref().and_then(|h| h.title.as_ref()),
            annotations: c.hints.as_ref().and_then(|h| h.annotations.as_ref()),
            output_schema: c.hints.as_ref().and_then(|h| h.output_schema.as_ref()),
            meta: c.hints.as_ref().and_then(|h| h.meta.as_ref()),
        }
    }

    /// The plan as its JSON contract.
    pub fn to_json(&self) -> PlanJson<'_> {
        let cat = self.catalog;
        let roster = self.roster.iter().map(|&i| self.roster_entry(i)).collect();
        let miss = |&i: &usize| {
            let c = &cat.candidates[i];
            let d = &self.decisions[i];
            MissEntry {
                name: &c.name,
                provider_name: &c.provider_name,
                source: c.source.as_str(),
                status: d.status,
                code: d.code,
                rank: d.rank,
                tokens: c.exclusion.is_none().then_some(c.tokens),
                detail: self.detail(i),
                facts: self.reason(i),
            }
        };
        PlanJson {
            format_version: FORMAT_VERSION,
            agent: AgentJson {
                name: &cat.agent,
                version: cat.agent_version,
                profile: cat.profile.as_deref(),
                flags: &cat.flags,
            },
            encoding: cat.encoding.name(),
            provider: cat.provider,
            control_tool: cat.control_tool.as_deref(),
            roster,
            deferred: self.deferred.iter().map(miss).collect(),
            cut: self.cut.iter().map(miss).collect(),
            totals: TotalsJson {
                items: self.totals.items,
                item_cap: self.totals.item_cap,
                tokens: self.totals.tokens,
                token_cap: self.totals.token_cap,
                wrapper_tokens: if self.roster.is_empty() {
                    0
                } else {
                    cat.wrapper_tokens
                },
                candidates: self.totals.candidates,
                offered: self.roster.len() as u32,
                deferred: self.deferred.len() as u32,
                cut: self.cut.len() as u32,
                after_loads: self.control.as_ref().map(|_| {
                    let (items, tokens) = self.after_loads();
                    AfterLoadsJson {
                        loads: cat.deferral_policy.loads.as_str(),
                        items,
                        tokens,
                        over_items: items.saturating_sub(self.totals.item_cap),
                        over_tokens: tokens.saturating_sub(self.totals.token_cap),
                    }
                }),
            },
            headroom: HeadroomJson {
                slots: self.headroom.slots,
                tokens: self.headroom.tokens,
                next: self
                    .headroom
                    .next
                    .iter()
                    .map(|n| NextJson {
                        tier: n.tier.label(),
                        outcome: if n.displaces.is_some() {
                            "displaces"
                        } else if n.misses {
                            "misses"
                        } else {
                            "fits"
                        },
                        displaces: n.displaces.map(|j| cat.candidates[j].name.as_str()),
                    })
                    .collect(),
            },
            context: crate::context::default_share(self.totals.tokens, cat.provider),
            fingerprint: self.fingerprint(),
            warnings: &self.warnings,
        }
    }

    /// The plan JSON as pretty text with a trailing newline.
    pub fn to_json_string(&self) -> String {
        Self::text(&self.to_json())
    }

    /// The plan JSON with its `context` stated against `model` (`None`:
    /// the provider's default).
    ///
    /// # Errors
    /// [`crate::ErrorKind::Usage`] for a model muster does not know the
    /// window of.
    pub fn to_json_string_for(&self, model: Option<&str>) -> Result<String, crate::Error> {
        let mut json = self.to_json();
        json.context = crate::context::share(self.totals.tokens, json.provider, model)?;
        Ok(Self::text(&json))
    }

    fn text(json: &PlanJson<'_>) -> String {
        let mut text = serde_json::to_string_pretty(json).expect("plan JSON has string keys only");
        text.push('\n');
        text
    }
}
