//! muster: plans which tools an LLM agent is offered, explains every cut,
//! gates production-shaped rosters in CI, narrows MCP tools and checks a
//! turn's tool calls before they run.

pub mod canon;
pub mod catalog;
pub mod error;
pub mod explain;
pub mod finding;
pub mod gate;
pub mod plan;
pub mod policy;
pub mod tokens;

pub use error::{Error, ErrorKind, Problem};
