//! muster: plans which tools an LLM agent is offered, explains every cut,
//! gates production-shaped rosters in CI, narrows MCP tools and checks a
//! turn's tool calls before they run.

pub mod atomic;
pub mod discover;
pub mod error;
pub mod lock;
pub mod narrow;

pub use error::{Error, ErrorKind, Problem};
