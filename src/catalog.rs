//! The catalog: every candidate tool for one selection (agent, flags), in
//! priority order, with its definition as the model would be shown it and
//! its token cost.
//!
//! The catalog settles everything that does not depend on the caps: which
//! candidates exist under the selected flags, which the agent enables,
//! which are duplicates or unusable, what MCP narrowing shows, and the
//! order. Those that cannot be offered whatever the caps carry an
//! [`Exclusion`] and are cut by the plan with its code. The catalog never
//! applies a cap.
//!
//! # Priority order
//! Candidates are ranked by, in turn:
//! 1. required first: members of a group marked `required = true`;
//! 2. `priority`, higher first (default 0; a tool's own field, or a server
//!    block's `priority` / `tool_priority`);
//! 3. configured tools before discovered ones;
//! 4. configured tools in declared order (tool files by file name, then
//!    order in the file); discovered tools by full name.
//!
//! With deferral on, the control tool is ranked before all of them.

use crate::canon;
use crate::error::{Error, ErrorKind, Problem};
use crate::finding::{Code, Warning, WarningCode};
use crate::narrow::{DriftCode, ExcludeCode, KeepAwayCode, NarrowOutcome, narrow_tool};
use crate::policy::{Caps, ListedTool, LockMode, Policy, ServerDef, UnknownArguments, mcp_name};
use crate::tokens::{Definition, Encoding, TokenCache};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Which agent and which flags to plan for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Agent name; `None` is the policy's default agent.
    pub agent: Option<String>,
    /// Flag profile name (`flags/<profile>.toml`).
    pub profile: Option<String>,
    /// Extra flags turned on.
    pub flags: Vec<String>,
}

/// Where a candidate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A configured (built-in) tool.
    Configured,
    /// A tool discovered from an MCP server.
    Mcp {
        /// Server name.
        server: String,
        /// Tool name on the server.
        tool: String,
    },
    /// The control tool that loads deferred tools.
    Control,
}

impl Source {
    /// `configured`, `mcp` or `control`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Source::Configured => "configured",
            Source::Mcp { .. } => "mcp",
            Source::Control => "control",
        }
    }
}

/// One positional parameter of a configured tool.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Parameter {
    /// Argument name.
    pub name: String,
    /// Whether its schema requires it.
    pub required: bool,
}

/// What the call check needs to know about a tool's calls.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSpec {
    /// Arguments with a fixed value, set on every call (MCP `params`).
    pub fixed: BTreeMap<String, Value>,
    /// Arguments the model may write (MCP `only`); `None` = no restriction.
    pub only: Option<Vec<String>>,
    /// What happens to argument names the schema does not declare.
    pub unknown_arguments: UnknownArguments,
    /// Whether values are cast to the declared type before forwarding.
    pub coerce: bool,
    /// Ordered parameters for positional hosts.
    pub parameters: Option<Vec<Parameter>>,
    /// Whether the last parameter is variadic.
    pub variadic: bool,
}

/// Why a candidate cannot be offered whatever the caps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exclusion {
    /// The reason code.
    pub code: Code,
    /// One sentence with the facts.
    pub detail: String,
}

/// A candidate tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Full name as offered.
    pub name: String,
    /// Where it comes from.
    pub source: Source,
    /// Description as offered.
    pub description: String,
    /// Input schema as offered (after MCP narrowing).
    pub input_schema: Value,
    /// The group it belongs to, if any (the first that names it).
    pub group: Option<String>,
    /// Whether a required group names it.
    pub required: bool,
    /// Priority (higher first).
    pub priority: i64,
    /// Whether it may be deferred when it does not fit.
    pub deferrable: bool,
    /// What the call check needs.
    pub call: CallSpec,
    /// Set when it cannot be offered whatever the caps.
    pub exclusion: Option<Exclusion>,
    /// Tokens its definition costs (0 for excluded candidates).
    pub tokens: u32,
    /// Hash of the offered definition, for the roster fingerprint.
    pub definition_hash: [u8; 32],
    /// Declared index among configured tools (0 for others): the last
    /// tie-breaker before the name.
    index: usize,
}

impl Candidate {
    /// The tier a candidate ranks in (required, priority, source class), as
    /// words: used by headroom to say where an addition would land.
    pub fn tier(&self) -> Tier {
        Tier {
            required: self.required,
            priority: self.priority,
            discovered: matches!(self.source, Source::Mcp { .. }),
        }
    }
}

/// A priority tier: candidates that rank together except for their order
/// within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tier {
    /// Required group members.
    pub required: bool,
    /// Priority value.
    pub priority: i64,
    /// Discovered (MCP) rather than configured.
    pub discovered: bool,
}

impl Tier {
    /// Sort key: lower ranks earlier.
    pub fn key(self) -> (bool, std::cmp::Reverse<i64>, bool) {
        (
            !self.required,
            std::cmp::Reverse(self.priority),
            self.discovered,
        )
    }

    /// Words for the tier, e.g. `required configured, priority 0`.
    pub fn label(self) -> String {
        format!(
            "{}{}, priority {}",
            if self.required { "required " } else { "" },
            if self.discovered {
                "discovered"
            } else {
                "configured"
            },
            self.priority
        )
    }
}

/// Every candidate for one selection, ranked and counted.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    /// The agent planned for.
    pub agent: String,
    /// Its version.
    pub agent_version: u64,
    /// The flag profile, if one was selected.
    pub profile: Option<String>,
    /// Flags on, sorted.
    pub flags: Vec<String>,
    /// The policy's caps (the plan may override them).
    pub caps: Caps,
    /// Tokenizer.
    pub encoding: Encoding,
    /// Tokens of the tool section's wrapper, paid once.
    pub wrapper_tokens: u32,
    /// Whether deferral is on.
    pub deferral: bool,
    /// The control tool's name when deferral is on.
    pub control_tool: Option<String>,
    /// Candidates: the control tool first when deferral is on, then
    /// configured tools in declared order, then discovered tools.
    pub candidates: Vec<Candidate>,
    /// Indices of candidates without an exclusion, in rank order.
    pub ranked: Vec<usize>,
    /// Warnings found while building.
    pub warnings: Vec<Warning>,
}

impl Catalog {
    /// Builds the catalog for `selection` and counts every definition.
    ///
    /// # Errors
    /// [`ErrorKind::Usage`] when the selection names an agent or flag
    /// profile the policy does not have.
    pub fn build(policy: &Policy, selection: &Selection) -> Result<Catalog, Error> {
        Self::build_cached(policy, selection, &mut TokenCache::in_memory())
    }

    /// [`Catalog::build`], taking the counts `cache` holds and adding those
    /// it lacked. The catalog is the same as without the cache.
    ///
    /// # Errors
    /// As [`Catalog::build`].
    pub fn build_cached(
        policy: &Policy,
        selection: &Selection,
        cache: &mut TokenCache,
    ) -> Result<Catalog, Error> {
        let mut catalog = Builder::new(policy, selection)?.build();
        catalog.count_tokens(cache);
        Ok(catalog)
    }

    /// (Re)counts the tokens of every candidate that can be offered (0 for
    /// excluded ones), through `cache`: see
    /// [`Encoding::count_definitions`].
    pub fn count_tokens(&mut self, cache: &mut TokenCache) {
        let definitions: Vec<Definition<'_>> = self
            .candidates
            .iter()
            .filter(|c| c.exclusion.is_none())
            .map(|c| Definition {
                name: &c.name,
                description: &c.description,
                input_schema: &c.input_schema,
            })
            .collect();
        let mut counts = self
            .encoding
            .count_definitions(&definitions, cache)
            .into_iter();
        for c in &mut self.candidates {
            c.tokens = match c.exclusion {
                Some(_) => 0,
                None => counts.next().unwrap_or(0),
            };
        }
    }

    /// The candidate called `name` (the first, if there are duplicates).
    pub fn find(&self, name: &str) -> Option<usize> {
        self.candidates.iter().position(|c| c.name == name)
    }
}

struct Builder<'p> {
    policy: &'p Policy,
    agent: &'p crate::policy::Agent,
    profile: Option<String>,
    flags: BTreeSet<String>,
    candidates: Vec<Candidate>,
    warnings: Vec<Warning>,
    names: BTreeSet<String>,
    required: BTreeSet<&'p str>,
    groups: BTreeMap<&'p str, &'p str>,
}

impl<'p> Builder<'p> {
    fn new(policy: &'p Policy, selection: &Selection) -> Result<Self, Error> {
        let agent = policy.agent(selection.agent.as_deref()).ok_or_else(|| {
            let names: Vec<&str> = policy.agents.iter().map(|a| a.name.as_str()).collect();
            Error::new(
                ErrorKind::Usage,
                Problem::new(format!(
                    "agent {:?} is not declared in {}",
                    selection.agent.as_deref().unwrap_or_default(),
                    policy.root.join("muster.toml").display()
                ))
                .help(format!("choose one of: {}", names.join(", "))),
            )
        })?;
        let mut flags: BTreeSet<String> = selection.flags.iter().cloned().collect();
        if let Some(name) = &selection.profile {
            let profile = policy.profiles.get(name).ok_or_else(|| {
                let known: Vec<&str> = policy.profiles.keys().map(String::as_str).collect();
                Error::new(
                    ErrorKind::Usage,
                    Problem::new(format!(
                        "flag profile {name:?} does not exist: there is no {}",
                        policy
                            .root
                            .join("flags")
                            .join(format!("{name}.toml"))
                            .display()
                    ))
                    .help(if known.is_empty() {
                        "create the profile file with flags = [...]".to_string()
                    } else {
                        format!("choose one of: {}", known.join(", "))
                    }),
                )
            })?;
            flags.extend(profile.flags.iter().cloned());
        }
        let mut required = BTreeSet::new();
        let mut groups = BTreeMap::new();
        for group in &policy.groups {
            for (member, _) in &group.members {
                if group.required {
                    required.insert(member.as_str());
                }
                groups.entry(member.as_str()).or_insert(group.name.as_str());
            }
        }
        Ok(Self {
            policy,
            agent,
            profile: selection.profile.clone(),
            flags,
            candidates: Vec::new(),
            warnings: Vec::new(),
            names: BTreeSet::new(),
            required,
            groups,
        })
    }

    fn build(mut self) -> Catalog {
        let policy = self.policy;
        if policy.deferral.enabled {
            let schema = crate::policy::Deferral::control_schema();
            let c = self.candidate(
                policy.deferral.control_tool.clone(),
                Source::Control,
                policy.deferral.description.clone(),
                schema,
                0,
                false,
                self.call_spec(UnknownArguments::Refuse, false),
            );
            self.push(c);
        }
        self.configured();
        self.discovered();
        self.warn_unmatched();
        let mut ranked: Vec<usize> = (0..self.candidates.len())
            .filter(|&i| self.candidates[i].exclusion.is_none())
            .collect();
        ranked.sort_by(|&a, &b| {
            let key = |i: usize| {
                let c = &self.candidates[i];
                let not_control = !matches!(c.source, Source::Control);
                (not_control, c.tier().key(), c.index, &c.name, i)
            };
            key(a).cmp(&key(b))
        });
        let encoding = policy.encoding;
        Catalog {
            agent: self.agent.name.clone(),
            agent_version: self.agent.version,
            profile: self.profile,
            flags: self.flags.into_iter().collect(),
            caps: policy.caps,
            encoding,
            wrapper_tokens: encoding.wrapper_tokens(),
            deferral: policy.deferral.enabled,
            control_tool: policy
                .deferral
                .enabled
                .then(|| policy.deferral.control_tool.clone()),
            candidates: self.candidates,
            ranked,
            warnings: self.warnings,
        }
    }

    fn call_spec(&self, unknown_arguments: UnknownArguments, coerce: bool) -> CallSpec {
        CallSpec {
            fixed: BTreeMap::new(),
            only: None,
            unknown_arguments,
            coerce,
            parameters: None,
            variadic: false,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn candidate(
        &self,
        name: String,
        source: Source,
        description: String,
        input_schema: Value,
        priority: i64,
        deferrable: bool,
        call: CallSpec,
    ) -> Candidate {
        let required = self.required.contains(name.as_str());
        let group = self.groups.get(name.as_str()).map(|g| g.to_string());
        Candidate {
            required,
            group,
            name,
            source,
            description,
            input_schema,
            priority,
            deferrable,
            call,
            exclusion: None,
            tokens: 0,
            definition_hash: [0; 32],
            index: 0,
        }
    }

    /// Adds a candidate, marking a repeated name and hashing the definition.
    fn push(&mut self, mut c: Candidate) {
        // Every repeat of a name is cut, whatever became of the first: the
        // name a model calls and `why` answers for must mean one tool.
        if c.exclusion.is_none() {
            c.exclusion = self.repeated(&c.name);
        }
        self.names.insert(c.name.clone());
        let definition = serde_json::json!({
            "name": c.name,
            "description": c.description,
            "input_schema": c.input_schema,
            "fixed": c.call.fixed,
            "only": c.call.only,
        });
        c.definition_hash = canon::digest(&definition);
        self.candidates.push(c);
    }

    /// The exclusion for a name an earlier candidate already has.
    fn repeated(&self, name: &str) -> Option<Exclusion> {
        self.names.contains(name).then(|| Exclusion {
            code: Code::DuplicateName,
            detail: format!("an earlier candidate is already named {name:?}"),
        })
    }

    fn flag_on(&self, flag: &Option<String>) -> bool {
        flag.as_ref().is_none_or(|f| self.flags.contains(f))
    }

    fn configured(&mut self) {
        let policy = self.policy;
        let enabled: Option<BTreeSet<&str>> = self
            .agent
            .enabled_tools
            .as_ref()
            .map(|list| list.iter().map(|(n, _)| n.as_str()).collect());
        for (index, tool) in policy.tools.iter().enumerate() {
            let mut call = self.call_spec(
                tool.unknown_arguments
                    .unwrap_or(policy.calls.configured_unknown),
                tool.coerce.unwrap_or(policy.calls.coerce_configured),
            );
            call.variadic = tool.variadic;
            call.parameters = tool.parameters.as_ref().map(|names| {
                let required: BTreeSet<&str> = tool
                    .input_schema
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                names
                    .iter()
                    .map(|n| Parameter {
                        name: n.clone(),
                        required: required.contains(n.as_str()),
                    })
                    .collect()
            });
            let mut c = self.candidate(
                tool.name.clone(),
                Source::Configured,
                tool.description.clone(),
                tool.input_schema.clone(),
                tool.priority,
                tool.deferrable,
                call,
            );
            c.index = index;
            if !self.flag_on(&tool.when) {
                c.exclusion = Some(Exclusion {
                    code: Code::FlagOff,
                    detail: format!(
                        "exists only when flag {} is on; it is off in this selection",
                        tool.when.as_deref().unwrap_or_default()
                    ),
                });
            } else {
                let on = match &enabled {
                    Some(list) => list.contains(tool.name.as_str()),
                    None => tool.default_roster,
                };
                if !on {
                    c.exclusion = Some(Exclusion {
                        code: Code::NotEnabled,
                        detail: match &enabled {
                            Some(_) => format!(
                                "agent {} lists enabled_tools and this tool is not among them",
                                self.agent.name
                            ),
                            None => format!(
                                "registered, but agent {}'s default roster leaves it out (default_roster = false); name it in enabled_tools to enable it",
                                self.agent.name
                            ),
                        },
                    });
                }
            }
            self.push(c);
        }
    }

    fn discovered(&mut self) {
        let policy = self.policy;
        let mut drift: BTreeSet<(WarningCode, String, String, String)> = BTreeSet::new();
        for server in &policy.servers {
            if server.command.is_some()
                && server.listed.is_empty()
                && server.snapshot.as_ref().is_none_or(|s| !s.exists())
            {
                self.warnings.push(Warning::at(
                    WarningCode::NoSnapshot,
                    format!(
                        "MCP server {} has no snapshot yet, so none of its tools are candidates; run `muster discover`",
                        server.name
                    ),
                    &server.origin,
                ));
            }
            let server_used = self
                .agent
                .servers
                .as_ref()
                .is_none_or(|list| list.iter().any(|(s, _)| s == &server.name));
            for listed in &server.listed {
                let name = mcp_name(&server.name, &listed.name);
                let call = self.call_spec(
                    server.unknown_arguments.unwrap_or(policy.calls.mcp_unknown),
                    server.coerce.unwrap_or(policy.calls.coerce_mcp),
                );
                let priority = server
                    .tool_priority
                    .get(&listed.name)
                    .copied()
                    .unwrap_or(server.priority);
                let mut c = self.candidate(
                    name,
                    Source::Mcp {
                        server: server.name.clone(),
                        tool: listed.name.clone(),
                    },
                    listed.description.clone().unwrap_or_default(),
                    listed.input_schema.clone(),
                    priority,
                    server.deferrable,
                    call,
                );
                c.exclusion = self.server_exclusion(server, server_used);
                // A repeated name is settled before the lock and narrowing,
                // so a second listing is reported as what it is.
                if c.exclusion.is_none() {
                    c.exclusion = self.repeated(&c.name);
                }
                if c.exclusion.is_none() {
                    c.exclusion = self.narrow(server, listed, &mut c, &mut drift);
                }
                self.push(c);
            }
        }
        for (code, server, tool, message) in drift {
            // Point at the `only` entry the warning is about when there is
            // one, else at the server block.
            let origin = policy
                .servers
                .iter()
                .find(|s| s.name == server)
                .map(|s| s.only_origins.get(&tool).unwrap_or(&s.origin));
            self.warnings.push(match origin {
                Some(origin) => Warning::at(code, message, origin),
                None => Warning::new(code, message),
            });
        }
    }

    fn server_exclusion(&self, server: &ServerDef, server_used: bool) -> Option<Exclusion> {
        if !self.flag_on(&server.when) {
            return Some(Exclusion {
                code: Code::FlagOff,
                detail: format!(
                    "server {} exists only when flag {} is on; it is off in this selection",
                    server.name,
                    server.when.as_deref().unwrap_or_default()
                ),
            });
        }
        if !server_used {
            return Some(Exclusion {
                code: Code::NotEnabled,
                detail: format!(
                    "agent {} lists servers and {} is not among them",
                    self.agent.name, server.name
                ),
            });
        }
        None
    }

    /// Applies the server block (allow, deny, the lock, params and only) to
    /// one listed tool: either the exclusion that keeps it away, or `c`
    /// narrowed to what the model is shown. Drift warnings are collected
    /// into `drift`, so each is reported once per plan.
    fn narrow(
        &mut self,
        server: &ServerDef,
        listed: &ListedTool,
        c: &mut Candidate,
        drift: &mut BTreeSet<(WarningCode, String, String, String)>,
    ) -> Option<Exclusion> {
        let tool = listed.name.as_str();
        let outcome = narrow_tool(tool, &listed.input_schema, &server.narrowing);
        if let NarrowOutcome::Excluded { code } = &outcome {
            return Some(match code {
                ExcludeCode::Denied => Exclusion {
                    code: Code::Denied,
                    detail: format!("server block {}'s deny list names {tool}", server.name),
                },
                ExcludeCode::NotAllowed => Exclusion {
                    code: Code::NotAllowed,
                    detail: format!(
                        "server block {}'s allow list does not name {tool}",
                        server.name
                    ),
                },
            });
        }
        if let Some(exclusion) = self.lock_check(server, listed) {
            return Some(exclusion);
        }
        if let Some(problem) = schema_problem(&listed.input_schema) {
            return Some(Exclusion {
                code: Code::InvalidSchema,
                detail: format!("the server's inputSchema {problem}"),
            });
        }
        let warnings = match &outcome {
            NarrowOutcome::Offered(o) => &o.warnings,
            NarrowOutcome::KeptAway { warnings, .. } => warnings,
            NarrowOutcome::Excluded { .. } => return None,
        };
        for w in warnings {
            let code = match w.code {
                DriftCode::OnlyUndeclared => WarningCode::OnlyUndeclared,
                DriftCode::RequiredUnreachable => WarningCode::RequiredUnreachable,
            };
            drift.insert((
                code,
                server.name.clone(),
                w.tool.clone(),
                format!("MCP server {}: {w}", server.name),
            ));
        }
        match outcome {
            NarrowOutcome::Offered(o) => {
                c.input_schema = o.shown_schema;
                c.call.fixed = o.fixed;
                c.call.only = o.only;
                None
            }
            NarrowOutcome::KeptAway { code, detail, .. } => Some(Exclusion {
                code: match code {
                    KeepAwayCode::FixedUndeclared => Code::FixedUndeclared,
                    KeepAwayCode::RequiredUnreachable => Code::RequiredUnreachable,
                    KeepAwayCode::SchemaNotObject => Code::InvalidSchema,
                },
                detail,
            }),
            NarrowOutcome::Excluded { .. } => None,
        }
    }

    /// With a lock file, a tool whose definition is not the reviewed one is
    /// kept away (`lock.on_mismatch = "cut"`) or warned about.
    fn lock_check(&mut self, server: &ServerDef, listed: &ListedTool) -> Option<Exclusion> {
        let lock = self.policy.locked.as_ref()?;
        let current = crate::lock::definition_hash(listed);
        let detail = match lock.get(&server.name, &listed.name) {
            Some(locked) if locked == current => return None,
            Some(locked) => format!(
                "its definition changed since it was locked ({locked}, now {current}); review it, then run `muster lock`"
            ),
            None => format!(
                "it is not in the lock {}; review it, then run `muster lock`",
                self.policy.lock.file.display()
            ),
        };
        match self.policy.lock.on_mismatch {
            LockMode::Cut => Some(Exclusion {
                code: Code::LockMismatch,
                detail,
            }),
            LockMode::Warn => {
                self.warnings.push(Warning::new(
                    WarningCode::LockMismatch,
                    format!("{}: {detail}", mcp_name(&server.name, &listed.name)),
                ));
                None
            }
        }
    }

    fn warn_unmatched(&mut self) {
        let policy = self.policy;
        let registered = policy.registered_names();
        if let Some(list) = &self.agent.enabled_tools {
            for (name, origin) in list {
                if !registered.contains(name) {
                    self.warnings.push(Warning::at(
                        WarningCode::UnknownEnabledTool,
                        format!(
                            "agent {} enables {name:?}, which no policy registers; remove it or register the tool",
                            self.agent.name
                        ),
                        origin,
                    ));
                } else if name.starts_with("mcp.") {
                    self.warnings.push(Warning::at(
                        WarningCode::EnabledDiscoveredTool,
                        format!(
                            "agent {} names discovered tool {name} in enabled_tools, which governs configured tools only; use the agent's servers or the server block's allow",
                            self.agent.name
                        ),
                        origin,
                    ));
                }
            }
        }
        if policy.locked.is_none() && policy.servers.iter().any(|s| !s.listed.is_empty()) {
            self.warnings.push(Warning::new(
                WarningCode::NoLock,
                format!(
                    "there is no lock file {}, so discovered tool definitions are not checked against a reviewed version; review the snapshots, then run `muster lock`",
                    policy.lock.file.display()
                ),
            ));
        }
        for group in &policy.groups {
            for (member, origin) in &group.members {
                if !registered.contains(member) {
                    self.warnings.push(Warning::at(
                        WarningCode::UnmatchedGroupMember,
                        format!(
                            "group {} names {member:?}, which no policy registers",
                            group.name
                        ),
                        origin,
                    ));
                }
            }
        }
        let used: BTreeSet<&str> = policy
            .tools
            .iter()
            .filter_map(|t| t.when.as_deref())
            .chain(policy.servers.iter().filter_map(|s| s.when.as_deref()))
            .collect();
        for flag in &self.flags {
            if !used.contains(flag.as_str()) {
                self.warnings.push(Warning::new(
                    WarningCode::UnusedFlag,
                    format!("flag {flag} is on but no tool or server names it in `when`"),
                ));
            }
        }
        for server in &policy.servers {
            if server.listed.is_empty() {
                continue;
            }
            let listed: BTreeSet<&str> = server.listed.iter().map(|t| t.name.as_str()).collect();
            for (name, origin) in server.allow.iter().flatten() {
                if !listed.contains(name.as_str()) {
                    self.warnings.push(Warning::at(
                        WarningCode::UnmatchedAllow,
                        format!(
                            "server {} allows {name:?}, which the server does not list",
                            server.name
                        ),
                        origin,
                    ));
                }
            }
            for name in server.tool_priority.keys() {
                if !listed.contains(name.as_str()) {
                    self.warnings.push(Warning::at(
                        WarningCode::UnmatchedToolPriority,
                        format!(
                            "server {} gives a priority to {name:?}, which the server does not list",
                            server.name
                        ),
                        &server.origin,
                    ));
                }
            }
            for (name, origin) in &server.deny {
                if !listed.contains(name.as_str()) {
                    self.warnings.push(Warning::at(
                        WarningCode::UnmatchedDeny,
                        format!(
                            "server {} denies {name:?}, which the server does not list",
                            server.name
                        ),
                        origin,
                    ));
                }
            }
        }
    }
}

/// Why `schema` cannot be a tool's input schema, if it cannot.
fn schema_problem(schema: &Value) -> Option<String> {
    let Value::Object(map) = schema else {
        return Some(format!(
            "is {}, not a JSON Schema object",
            crate::policy::kind_of(schema)
        ));
    };
    match map.get("type") {
        None => None,
        Some(Value::String(t)) if t == "object" => None,
        Some(other) => Some(format!(
            "has type {other}; tool arguments must be an object"
        )),
    }
    .or_else(|| {
        map.get("properties")
            .filter(|p| !p.is_object())
            .map(|_| "has \"properties\" that is not an object".to_string())
    })
    .or_else(|| {
        let depth = crate::canon::depth(schema);
        (depth > crate::canon::MAX_SCHEMA_DEPTH).then(|| {
            format!(
                "nests {depth} levels deep; at most {} are accepted",
                crate::canon::MAX_SCHEMA_DEPTH
            )
        })
    })
}
