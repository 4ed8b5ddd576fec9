//! `relay = [...]` of an `[[mcp]]` block: which requests of its own the
//! server may send the chat's client through muster (elicitation, sampling,
//! roots). The default is none: a server that asks the user for input or
//! asks the client's model to write is a reviewed decision, as a tool is.
//! It checks the list's form only; the MCP client declares what it holds
//! (intersected with what each chat's client declared) and the gateway
//! relays (docs/gateway.md, "Requests from servers").

use super::load::{Loader, Source};
use super::raw;
use crate::error::code;

/// A request a server may send its client, which muster can relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Relayed {
    /// `elicitation/create`: the server asks the user for input.
    Elicitation,
    /// `sampling/createMessage`: the server asks the client's model.
    Sampling,
    /// `roots/list`: the server asks which roots the client exposes.
    Roots,
}

impl Relayed {
    /// All of them, in the order they are declared and shown.
    pub const ALL: [Relayed; 3] = [Relayed::Elicitation, Relayed::Sampling, Relayed::Roots];

    /// The capability's key in a client's `capabilities` and in `relay`.
    pub fn key(self) -> &'static str {
        match self {
            Relayed::Elicitation => "elicitation",
            Relayed::Sampling => "sampling",
            Relayed::Roots => "roots",
        }
    }

    /// The JSON-RPC method a server asks with.
    pub fn method(self) -> &'static str {
        match self {
            Relayed::Elicitation => "elicitation/create",
            Relayed::Sampling => "sampling/createMessage",
            Relayed::Roots => "roots/list",
        }
    }

    /// The one whose request `method` is.
    pub fn of_method(method: &str) -> Option<Relayed> {
        Self::ALL.into_iter().find(|r| r.method() == method)
    }

    /// The one `key` names.
    pub fn of_key(key: &str) -> Option<Relayed> {
        Self::ALL.into_iter().find(|r| r.key() == key)
    }
}

impl Loader {
    /// The block's `relay` list, checked: known names, each once; `subject`
    /// names the block.
    pub(super) fn relay(
        &mut self,
        src: &Source,
        raw: &raw::RawServer,
        subject: &str,
    ) -> Vec<Relayed> {
        let mut relay = Vec::new();
        for entry in raw.relay.iter().flat_map(|list| list.get_ref()) {
            let name = entry.get_ref();
            match Relayed::of_key(name) {
                Some(r) if relay.contains(&r) => self.problems.push(
                    src.at(entry)
                        .coded(code::DUPLICATE, format!("{subject}: relay lists {name:?} twice"))
                        .help("list each of elicitation, sampling and roots at most once"),
                ),
                Some(r) => relay.push(r),
                None => self.problems.push(
                    src.at(entry)
                        .coded(
                            code::INVALID_VALUE,
                            format!(
                                "{subject}: relay lists {:?}, which is not a request muster relays",
                                crate::names::shown(name)
                            ),
                        )
                        .help("relay = [\"elicitation\", \"sampling\", \"roots\"], or the ones the server may send"),
                ),
            }
        }
        relay.sort();
        relay
    }
}
