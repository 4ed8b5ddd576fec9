//! muster: plans which tools an LLM agent is offered, explains every cut,
//! gates production-shaped rosters in CI, narrows MCP tools and checks a
//! turn's tool calls before they run.
//!
//! Data flows one way: [`policy`] → [`catalog`] (with [`narrow`] and
//! [`tokens`]) → [`plan`] → [`explain`] | [`gate`], and the plan's JSON →
//! [`check`]. [`discover`] and [`lock`] keep the recorded MCP listings the
//! policy reads.

pub mod answer;
pub mod atomic;
pub mod canon;
pub mod catalog;
pub mod check;
pub mod contract;
pub mod count;
pub mod discover;
pub mod error;
pub mod explain;
pub mod gate;
pub mod input;
pub mod lock;
pub mod names;
pub mod narrow;
pub mod plan;
pub mod policy;
pub mod provider;
pub mod search;
#[cfg(feature = "serve")]
pub mod serve;
pub mod session;
pub mod snapshot;
pub mod tokens;
pub mod validate;

pub use error::{Error, ErrorKind, Problem};
