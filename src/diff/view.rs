//! A plan read back from its JSON (`muster plan --format json`): the few
//! fields a diff and a report need, read with their own types that ignore
//! every other field, so the plan may grow without breaking them.

use crate::contract::{Code, ContextShare, Provider, Reason, Status};
use crate::error::{Error, ErrorKind, Problem};
use serde::Deserialize;
use std::path::Path;

/// Plan format versions a view reads.
const READS: std::ops::RangeInclusive<u32> = 3..=crate::plan::FORMAT_VERSION;

/// A plan, as its JSON says.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PlanView {
    /// The plan's `format_version`.
    pub format_version: u32,
    /// The selection planned.
    pub agent: AgentView,
    /// The tokenizer.
    pub encoding: String,
    /// Whose billing the counts follow (absent before version 4: OpenAI).
    #[serde(default = "openai")]
    pub provider: Provider,
    /// The control tool, when deferral is on.
    pub control_tool: Option<String>,
    /// Offered tools in rank order.
    pub roster: Vec<OfferedView>,
    /// Deferred tools in rank order.
    pub deferred: Vec<MissView>,
    /// Cut tools.
    pub cut: Vec<MissView>,
    /// Sizes.
    pub totals: TotalsView,
    /// Room left.
    pub headroom: HeadroomView,
    /// The roster's fingerprint.
    pub fingerprint: String,
    /// The tool section's share of a model's context, when the plan has it.
    #[serde(default)]
    pub context: Option<ContextShare>,
}

fn openai() -> Provider {
    Provider::Openai
}

/// The plan's `agent`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AgentView {
    /// Agent name.
    pub name: String,
    /// Agent version.
    pub version: u64,
    /// Flag profile.
    pub profile: Option<String>,
    /// Every flag on.
    pub flags: Vec<String>,
}

/// One offered tool.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct OfferedView {
    /// Full tool name.
    pub name: String,
    /// `configured`, `mcp` or `control`.
    pub source: String,
    /// The MCP server block, for MCP tools.
    #[serde(default)]
    pub server: Option<String>,
    /// 1-based place in the priority order.
    pub rank: u32,
    /// `required`, `fits` or `control-tool`.
    pub code: Code,
    /// The first group naming it.
    pub group: Option<String>,
    /// Its definition's tokens.
    pub tokens: u32,
}

/// One deferred or cut tool.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MissView {
    /// Full tool name.
    pub name: String,
    /// `configured`, `mcp` or `control`.
    pub source: String,
    /// `deferred` or `cut`.
    pub status: Status,
    /// The reason code.
    pub code: Code,
    /// Place in the priority order; none for tools excluded before the caps.
    pub rank: Option<u32>,
    /// Its definition's tokens, when counted.
    pub tokens: Option<u32>,
    /// The decision's facts.
    pub facts: Reason,
}

impl MissView {
    /// The MCP server block of an MCP tool (`mcp.<server>.<tool>`).
    pub fn server(&self) -> Option<&str> {
        (self.source == "mcp")
            .then(|| {
                self.name
                    .strip_prefix("mcp.")?
                    .split_once('.')
                    .map(|(s, _)| s)
            })
            .flatten()
    }
}

/// The plan's `totals`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct TotalsView {
    /// Definitions offered.
    pub items: u32,
    /// The item cap.
    pub item_cap: u32,
    /// Tokens of the tool section.
    pub tokens: u32,
    /// The token cap.
    pub token_cap: u32,
    /// The wrapper's tokens.
    pub wrapper_tokens: u32,
    /// Every candidate.
    pub candidates: u32,
    /// Offered tools.
    pub offered: u32,
    /// Deferred tools.
    pub deferred: u32,
    /// Cut tools.
    pub cut: u32,
}

/// The plan's `headroom`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct HeadroomView {
    /// Slots left.
    pub slots: u32,
    /// Tokens left.
    pub tokens: u32,
}

impl PlanView {
    /// Reads the plan JSON `text` of `file`.
    ///
    /// # Errors
    /// [`ErrorKind::Input`] when the text is not a plan this muster reads:
    /// malformed JSON or fields (with the line), or another format version.
    pub fn from_json(text: &str, file: &Path) -> Result<Self, Error> {
        const HELP: &str = "give the JSON that `muster plan --format json` prints";
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let view: PlanView =
            serde_json::from_str(text).map_err(|err| Error::json(file, "plan", &err, HELP))?;
        if !READS.contains(&view.format_version) {
            return Err(Error::new(
                ErrorKind::Input,
                Problem::new(format!(
                    "the plan's \"format_version\" is {}; this muster reads {} to {}",
                    view.format_version,
                    READS.start(),
                    READS.end()
                ))
                .in_file(file)
                .help("make the plan again with this muster's `muster plan --format json`"),
            ));
        }
        Ok(view)
    }

    /// Every candidate with its placement, offered first, then deferred,
    /// then cut.
    pub fn placements(&self) -> impl Iterator<Item = (&str, crate::contract::Placement)> {
        use crate::contract::Placement;
        let offered = self.roster.iter().map(|t| {
            (
                t.name.as_str(),
                Placement {
                    status: Status::Offered,
                    code: t.code,
                    rank: Some(t.rank),
                    tokens: Some(t.tokens),
                    facts: None,
                },
            )
        });
        let missed = self.deferred.iter().chain(&self.cut).map(|t| {
            (
                t.name.as_str(),
                Placement {
                    status: t.status,
                    code: t.code,
                    rank: t.rank,
                    tokens: t.tokens,
                    facts: Some(t.facts.clone()),
                },
            )
        });
        offered.chain(missed)
    }
}
