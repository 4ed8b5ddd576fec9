//! muster: plans which tools an LLM agent is offered, explains every cut,
//! gates production-shaped rosters in CI, narrows MCP tools and checks a
//! turn's tool calls before they run.
//!
//! Data flows one way: [`policy`] → [`catalog`] (with narrowing and
//! [`tokens`]) → [`plan`] → why | [`gate`], and the plan's JSON →
//! [`check`]. [`discover`] keeps the recorded MCP listings read beside the
//! policy.
//!
//! # What a host uses
//!
//! - [`policy::Inputs::load`]: read and validate a policy directory into
//!   its [`policy::Inputs`]: the [`policy::Policy`] its TOML says, what its
//!   MCP servers listed ([`policy::Listings`], recorded by [`discover`]) and
//!   the lock of reviewed definitions, each changing on its own schedule.
//!   Every call below that plans takes the inputs whole.
//! - [`answer`]: every verb's answer, as the CLI prints it and the service
//!   returns it: [`answer::plan`], [`answer::plan_tools`] (the provider
//!   formats of [`provider::shape::Format`]), [`answer::explain`] (`why`),
//!   [`answer::gates`] over [`gate::load`], [`answer::offered`] and
//!   [`answer::check`], [`answer::open`] and [`answer::load`] for sessions.
//! - [`session`]: pin a roster ([`session::new`]), search and load deferred
//!   tools, resume.
//! - [`count::count_text`]: the input tokens a provider request is billed.
//! - [`contract`]: every JSON shape those answers carry, with its codes.
//! - `serve` (feature `serve`): the HTTP service over the same calls.
//! - [`Error`], [`ErrorKind`], [`Problem`]: one error, every problem with
//!   a kebab-case code ([`problem_code`], `docs/problems.md`), where, and
//!   what to change.
//!
//! The lower layers ([`catalog`], [`plan`], [`check`], [`tokens`],
//! [`search`], [`discover`]) stay public for hosts that drive a step
//! themselves; the utilities the binary, tests and fuzz targets share are
//! hidden from the documentation, and the rest is private to the crate.
//!
//! # Example
//!
//! Load a policy, plan, ask why a tool is missing, render the roster for a
//! provider, pin a session, check a turn and run a gate:
//!
//! ```
//! use muster::answer::{self, Offer, Outcome, Select};
//! use muster::contract::WhyStatus;
//! use muster::policy::Inputs;
//! use muster::provider::shape::Format;
//! use muster::tokens::TokenCache;
//! use std::fs;
//!
//! let dir = tempfile::tempdir()?;
//! let policies = dir.path().join("policies");
//! fs::create_dir_all(policies.join("tools"))?;
//! fs::write(policies.join("muster.toml"), "[caps]\nitems = 1\n")?;
//! fs::write(
//!     policies.join("tools/t.toml"),
//!     r#"
//! [[tool]]
//! name = "math.calculate"
//! description = "Evaluate an arithmetic expression."
//! priority = 10
//! input_schema = { type = "object", properties = { expression = { type = "string" } }, required = ["expression"] }
//!
//! [[tool]]
//! name = "web.search"
//! description = "Search the web."
//! "#,
//! )?;
//! let inputs = Inputs::load(&policies)?;
//! let mut cache = TokenCache::in_memory();
//! let select = Select::default();
//!
//! // The plan's JSON: the roster the model is offered, and every cut.
//! let plan = answer::plan(&inputs, &select, &mut cache)?;
//! let doc: serde_json::Value = serde_json::from_str(&plan.json)?;
//! assert_eq!(doc["roster"][0]["name"], "math.calculate");
//! assert_eq!(doc["cut"][0]["code"], "item-cap");
//!
//! // `why`: the decision as data.
//! let why = answer::explain(&inputs, &select, "web.search", &mut cache)?;
//! assert_eq!(why.status, WhyStatus::Cut);
//!
//! // The roster as a provider's `tools` value.
//! let tools = answer::plan_tools(&inputs, &select, Format::Anthropic, &mut cache)?;
//! let tools: serde_json::Value = serde_json::from_str(&tools.json)?;
//! assert_eq!(tools[0]["name"], "math__calculate", "a provider-safe name");
//!
//! // A session pins the roster (signed with the key given); a turn is
//! // checked against what was offered.
//! let keys = muster::session::SessionKeys::parse("k1:0123456789abcdef0123456789abcdef", "key".as_ref())?;
//! let session = muster::session::new(&inputs, &select.selection, &Default::default(), &keys, &mut cache)?;
//! assert_eq!(session.signature.as_ref().map(|s| s.key.as_str()), Some("k1"));
//! let live = answer::open(&inputs, session, &keys, "s.json".as_ref(), &mut cache)?.expect("the pin holds");
//! let offered = answer::offered(Offer::Session { live: &live, file: "s.json".as_ref() })?;
//! let turn = r#"{"calls": [{"id": "c1", "name": "math.calculate", "arguments": {}}]}"#;
//! let report = answer::check(&offered, turn, "turn.json".as_ref(), &Default::default())?;
//! assert_eq!(answer::Answer::of_check(&report).outcome, Outcome::Failed);
//!
//! // A gate: the calculator must be offered.
//! fs::write(dir.path().join("g.toml"), "name = \"calc\"\nrequire = [\"math.calculate\"]\n")?;
//! let gates = muster::gate::load(&[dir.path().join("g.toml")])?;
//! let results = answer::gates(&inputs, &gates, (None, None), &mut cache)?;
//! assert!(results[0].passed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod answer;
/// Whole-or-nothing file writes. Public only for the binary, which writes
/// session documents with it; not part of the host API.
#[doc(hidden)]
pub mod atomic;
/// Who is asking `muster serve`: bearer tokens checked against `[auth]`,
/// grants, limits (docs/auth.md).
#[cfg(feature = "serve")]
pub mod auth;
pub mod cache_file;
mod canon;
pub mod catalog;
pub mod check;
pub mod contract;
pub mod count;
pub mod discover;
mod error;
mod explain;
pub mod gate;
/// muster as an MCP server in front of the policy's MCP servers: calls checked,
/// then forwarded.
#[cfg(feature = "serve")]
pub mod gateway;
/// Bounded UTF-8 reading of files and standard input. Public only for the
/// binary (which reads plans, turns and requests with it) and the
/// reliability tests of its size cap; not part of the host API.
#[doc(hidden)]
pub mod input;
/// The lock file of MCP definitions. Public only for the lock fuzz target
/// and as the type of [`policy::Inputs::lock`]; hosts lock through
/// [`discover::lock_policy`].
#[doc(hidden)]
pub mod lock;
pub mod loopback;
/// The one MCP client (stdio and Streamable HTTP) that discovery, lock,
/// `muster call` and the gateway speak to MCP servers through. Without
/// `serve` there is no gateway, so its parts (relayed asks, restarts) are
/// built but unused.
#[cfg_attr(not(feature = "serve"), allow(dead_code, unused_imports))]
mod mcp_client;
/// Escaping of names for display. Public only for the binary's text
/// rendering; not part of the host API.
#[doc(hidden)]
pub mod names;
/// MCP narrowing (`allow`, `deny`, `params`, `only`). Public only for
/// `tests/discover.rs`, which narrows a live listing directly; hosts see its
/// result in the plan.
#[doc(hidden)]
pub mod narrow;
mod parallel;
pub mod plan;
pub mod policy;
pub mod provider;
pub mod schema;
pub mod search;
/// The one home of redaction: values muster filled from its environment, hidden from
/// whatever a server writes back.
pub mod secrets;
#[cfg(feature = "serve")]
pub mod serve;
pub mod session;
/// Snapshot reading, writing and comparison. Public only for the snapshot
/// fuzz target; hosts read snapshots through [`discover`].
#[doc(hidden)]
pub mod snapshot;
#[cfg(feature = "store")]
pub mod store;
pub mod tokens;
/// OpenTelemetry spans of the gateway's calls over OTLP/HTTP, off unless the
/// standard `OTEL_EXPORTER_OTLP_*` variables name an endpoint. Built with
/// every feature set: the one MCP client carries a call's trace context.
pub mod trace;
mod unique;
pub mod validate;

// The CI gate people look at (issue 23).
pub mod ci;
pub mod context;
pub mod diff;
pub mod report;
pub mod results;

pub use error::{Error, ErrorKind, Problem, code as problem_code, is_kebab};
