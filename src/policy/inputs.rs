//! What a run reads from a policy directory, each part with its own
//! lifecycle: the [`Policy`] its TOML files say (edited by hand), the
//! [`Listings`] `muster discover` recorded in snapshot files (rewritten by
//! discovery) and the [`Lock`] `muster lock` accepted (rewritten by review).
//! They are read together by [`Inputs::load`], so every verb, and every
//! generation of the service, answers from one consistent reading. This
//! module holds them side by side; it decides nothing about what is offered.

use super::{ListedTool, Policy, load::Loader, mcp_name};
use crate::error::Error;
use crate::lock::Lock;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One reading of a policy directory: the policy, what its servers listed,
/// and the lock.
///
/// # Example
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # std::fs::create_dir(dir.path().join("tools")).unwrap();
/// # std::fs::write(dir.path().join("tools/t.toml"),
/// #     "[[tool]]\nname = \"memory.search\"\ndescription = \"Search memory.\"\n").unwrap();
/// let inputs = muster::policy::Inputs::load(dir.path())?;
/// assert_eq!(inputs.policy.tools.len(), 1);
/// assert!(inputs.listings.is_empty(), "no MCP server, nothing listed");
/// assert!(inputs.lock.is_none(), "no lock file");
/// # Ok::<(), muster::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    /// What the policy directory's TOML says: tools, servers' blocks,
    /// agents, groups, flags and settings.
    pub policy: Policy,
    /// The tools each server's snapshot lists.
    pub listings: Listings,
    /// The lock's entries, when the lock file ([`Policy::lock`]) exists;
    /// with no lock file, discovered definitions are not checked.
    pub lock: Option<Lock>,
}

impl Inputs {
    /// Reads and validates the policy directory `dir`, the snapshots its
    /// servers name and its lock file.
    ///
    /// # Errors
    /// Returns every problem found (malformed TOML, unknown keys, a tool
    /// registered twice, a schema that is not an object, a missing schema or
    /// snapshot file, a lock that cannot be read, ...) with file and line, as
    /// one [`Error`] of kind [`crate::ErrorKind::Policy`] (or
    /// [`crate::ErrorKind::Io`] when the directory itself cannot be read).
    pub fn load(dir: &Path) -> Result<Inputs, Error> {
        Loader::new(dir).load()
    }

    /// Every registered tool name: configured tools and, for each server,
    /// `mcp.<server>.<tool>` for every listed tool.
    pub fn registered_names(&self) -> BTreeSet<String> {
        registered_names(&self.policy, &self.listings)
    }
}

/// [`Inputs::registered_names`], for a caller holding the parts.
pub(crate) fn registered_names(policy: &Policy, listings: &Listings) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = policy.tools.iter().map(|t| t.name.clone()).collect();
    for server in &policy.servers {
        for tool in listings.of(&server.name) {
            names.insert(mcp_name(&server.name, &tool.name));
        }
    }
    names
}

/// The tools each MCP server's snapshot lists, in listed order, by server
/// name. A server with no snapshot yet lists nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listings {
    by_server: BTreeMap<String, Vec<ListedTool>>,
}

impl Listings {
    /// The tools `server` lists, in listed order (none when it has no
    /// snapshot).
    pub fn of(&self, server: &str) -> &[ListedTool] {
        self.by_server.get(server).map_or(&[], Vec::as_slice)
    }

    /// Records `tools` as what `server` lists, replacing what it listed.
    pub fn set(&mut self, server: impl Into<String>, tools: Vec<ListedTool>) {
        self.by_server.insert(server.into(), tools);
    }

    /// Whether no server lists any tool.
    pub fn is_empty(&self) -> bool {
        self.by_server.values().all(Vec::is_empty)
    }
}
