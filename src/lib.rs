//! muster: plans which tools an LLM agent is offered, explains every cut,
//! gates production-shaped rosters in CI, narrows MCP tools and checks a
//! turn's tool calls before they run.

pub mod check;
pub mod error;

pub use error::{Error, ErrorKind, Problem};
