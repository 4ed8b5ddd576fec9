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
use crate::contract::{CheckMode, Enabling, Reason, SchemaProblem};
use crate::contract::{Warning, WarningKind};
use crate::error::{Error, ErrorKind, Problem};
use crate::narrow::{DriftCode, ExcludeCode, KeepAwayCode, NarrowOutcome, narrow_tool};
use crate::policy::{Caps, ListedTool, LockMode, Policy, ServerDef, UnknownArguments, mcp_name};
use crate::tokens::{Definition, Encoding, Provider, TokenCache};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A drift warning found while narrowing: code, server, tool, argument.
type Drift = (DriftCode, String, String, String);

/// Which agent and which flags to plan for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Agent name; `None` is the policy's default agent.
    pub agent: Option<String>,
    /// Flag profile name (`flags/<profile>.toml`).
    pub profile: Option<String>,
    /// Extra flags turned on.
    pub flags: Vec<String>,
    /// Agent version; `None` is the agent's current version.
    pub version: Option<u64>,
}

/// The usage error for a selection naming an agent, or an agent version,
/// the policy does not declare.
fn unknown_agent(policy: &Policy, selection: &Selection) -> Error {
    let name = selection
        .agent
        .clone()
        .or_else(|| {
            policy
                .agents
                .get(policy.default_agent)
                .map(|a| a.name.clone())
        })
        .unwrap_or_default();
    let versions: Vec<String> = policy
        .agents
        .iter()
        .filter(|a| a.name == name)
        .map(|a| a.version.to_string())
        .collect();
    let file = policy.root.join("muster.toml");
    let problem = match (selection.version, versions.is_empty()) {
        (Some(version), false) => Problem::new(format!(
            "agent {name:?} has no version {version} in {}",
            file.display()
        ))
        .help(format!(
            "choose one of its versions: {}",
            versions.join(", ")
        )),
        _ => {
            let names: BTreeSet<&str> = policy.agents.iter().map(|a| a.name.as_str()).collect();
            Problem::new(format!(
                "agent {name:?} is not declared in {}",
                file.display()
            ))
            .help(format!(
                "choose one of: {}",
                names.into_iter().collect::<Vec<_>>().join(", ")
            ))
        }
    };
    Error::new(ErrorKind::Usage, problem)
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
    /// How calls are checked: the lenient rules alone, or also the whole schema.
    pub check: CheckMode,
    /// Ordered parameters for positional hosts.
    pub parameters: Option<Vec<Parameter>>,
    /// Whether the last parameter is variadic.
    pub variadic: bool,
}

/// Why a candidate cannot be offered whatever the caps: one of the
/// [`Reason`]s for a cut.
pub type Exclusion = Reason;

/// A candidate tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Full name as offered.
    pub name: String,
    /// Where it comes from.
    pub source: Source,
    /// Description as offered.
    pub description: String,
    /// Input schema as offered (after MCP narrowing), shared with the
    /// policy's definition when nothing changed it.
    pub input_schema: Arc<Value>,
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
    /// The kind it is summarized and, when deferred together, loaded
    /// under (index into [`Catalog::kinds`]); `None` for the control tool.
    pub kind: Option<usize>,
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

/// What a deferred tool is summarized under in the control tool's
/// description: its MCP server, its group, or its name's first part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind {
    /// `mcp.<server>`, a group's name, or a configured tool name's part
    /// before the first dot.
    pub name: String,
    /// The server's or group's one-line description, if it has one.
    pub description: Option<String>,
    /// Whether its deferred members load together as one entry.
    pub together: bool,
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
    /// Whose billing the counts follow (`[tokens] provider`).
    pub provider: Provider,
    /// Tokens of the tool section's wrapper, paid once.
    pub wrapper_tokens: u32,
    /// Whether deferral is on.
    pub deferral: bool,
    /// The policy's deferral settings (summary budget, load bounds).
    pub deferral_policy: crate::policy::Deferral,
    /// Kinds of candidates, in the order first met.
    pub kinds: Vec<Kind>,
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
            .count_definitions_for(self.provider, &definitions, cache)
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
    kinds: Vec<Kind>,
    kind_index: BTreeMap<String, usize>,
}

impl<'p> Builder<'p> {
    fn new(policy: &'p Policy, selection: &Selection) -> Result<Self, Error> {
        let agent = policy
            .agent(selection.agent.as_deref(), selection.version)
            .ok_or_else(|| unknown_agent(policy, selection))?;
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
            kinds: Vec::new(),
            kind_index: BTreeMap::new(),
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
                schema.into(),
                0,
                false,
                self.call_spec(UnknownArguments::Refuse, false, CheckMode::Lenient),
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
            provider: policy.provider,
            wrapper_tokens: encoding.wrapper_tokens_for(policy.provider),
            deferral: policy.deferral.enabled,
            deferral_policy: policy.deferral.clone(),
            kinds: self.kinds,
            control_tool: policy
                .deferral
                .enabled
                .then(|| policy.deferral.control_tool.clone()),
            candidates: self.candidates,
            ranked,
            warnings: self.warnings,
        }
    }

    fn call_spec(
        &self,
        unknown_arguments: UnknownArguments,
        coerce: bool,
        check: CheckMode,
    ) -> CallSpec {
        CallSpec {
            fixed: BTreeMap::new(),
            only: None,
            unknown_arguments,
            coerce,
            check,
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
        input_schema: Arc<Value>,
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
            kind: None,
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
        c.definition_hash = definition_hash(
            &c.name,
            &c.description,
            &c.input_schema,
            &c.call.fixed,
            c.call.only.as_deref(),
        );
        c.kind = self.kind_of(&c);
        // The check compiles a strict schema when it reads the plan; one it cannot compile
        // refuses every call, so say so while the policy can still change.
        if c.exclusion.is_none()
            && c.call.check == CheckMode::Strict
            && let Err(why) = crate::check::compile_strict(&c.input_schema)
        {
            self.warnings
                .push(Warning::new(WarningKind::UncheckableSchema {
                    tool: c.name.clone(),
                    why: why.to_string(),
                }));
        }
        self.candidates.push(c);
    }

    /// The kind `c` is summarized under: a group that defers together, its
    /// MCP server, its group, or its name's first part.
    fn kind_of(&mut self, c: &Candidate) -> Option<usize> {
        let policy = self.policy;
        let group = c
            .group
            .as_deref()
            .and_then(|g| policy.groups.iter().find(|group| group.name == g));
        let (name, description, together) = match (&c.source, group) {
            (Source::Control, _) => return None,
            (_, Some(g)) if g.defer_together => (g.name.clone(), g.description.clone(), true),
            (Source::Mcp { server, .. }, _) => {
                let def = policy.servers.iter().find(|s| &s.name == server);
                (
                    format!("mcp.{server}"),
                    def.and_then(|s| s.description.clone()),
                    def.is_some_and(|s| s.defer_together),
                )
            }
            (Source::Configured, Some(g)) => (g.name.clone(), g.description.clone(), false),
            (Source::Configured, None) => {
                let first = c.name.split('.').next().unwrap_or(&c.name);
                (first.to_string(), None, false)
            }
        };
        if let Some(&i) = self.kind_index.get(&name) {
            return Some(i);
        }
        let i = self.kinds.len();
        self.kind_index.insert(name.clone(), i);
        self.kinds.push(Kind {
            name,
            description,
            together,
        });
        Some(i)
    }

    /// The exclusion for a name an earlier candidate already has.
    fn repeated(&self, name: &str) -> Option<Exclusion> {
        self.names.contains(name).then(|| Reason::DuplicateName {
            name: name.to_string(),
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
                tool.check.unwrap_or(policy.calls.configured_check),
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
                c.exclusion = Some(Reason::FlagOff {
                    flag: tool.when.clone().unwrap_or_default(),
                    server: None,
                });
            } else {
                let on = match &enabled {
                    Some(list) => list.contains(tool.name.as_str()),
                    None => tool.default_roster,
                };
                if !on {
                    c.exclusion = Some(Reason::NotEnabled {
                        agent: self.agent.name.clone(),
                        by: match &enabled {
                            Some(_) => Enabling::EnabledTools,
                            None => Enabling::DefaultRoster,
                        },
                        server: None,
                    });
                }
            }
            self.push(c);
        }
    }

    fn discovered(&mut self) {
        let policy = self.policy;
        let mut drift: BTreeSet<Drift> = BTreeSet::new();
        for server in &policy.servers {
            if server.command.is_some()
                && server.listed.is_empty()
                && server.snapshot.as_ref().is_none_or(|s| !s.exists())
            {
                self.warnings.push(Warning::at(
                    WarningKind::NoSnapshot {
                        server: server.name.clone(),
                    },
                    &server.origin,
                ));
            }
            let server_used = self
                .agent
                .servers
                .as_ref()
                .is_none_or(|list| list.iter().any(|(s, _)| s == &server.name));
            for listed in &server.listed {
                // A name with hidden characters is shown, and looked up,
                // with them escaped.
                let hidden = crate::names::first_hidden(&listed.name);
                let name = match hidden {
                    Some(_) => mcp_name(&server.name, &crate::names::escape(&listed.name)),
                    None => mcp_name(&server.name, &listed.name),
                };
                let call = self.call_spec(
                    server.unknown_arguments.unwrap_or(policy.calls.mcp_unknown),
                    server.coerce.unwrap_or(policy.calls.coerce_mcp),
                    server
                        .tool_check
                        .get(&listed.name)
                        .copied()
                        .or(server.check)
                        .unwrap_or(policy.calls.mcp_check),
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
                    Arc::new(listed.input_schema.clone()),
                    priority,
                    server.deferrable,
                    call,
                );
                c.exclusion = match hidden {
                    Some((position, character, hidden)) => Some(Reason::InvalidName {
                        server: server.name.clone(),
                        tool: crate::names::escape(&listed.name),
                        character: crate::names::code_point(character),
                        hidden,
                        position,
                    }),
                    None => self.server_exclusion(server, server_used),
                };
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
        for (code, server, tool, argument) in drift {
            // Point at the `only` entry the warning is about when there is
            // one, else at the server block.
            let origin = policy
                .servers
                .iter()
                .find(|s| s.name == server)
                .map(|s| s.only_origins.get(&tool).unwrap_or(&s.origin));
            let kind = match code {
                DriftCode::OnlyUndeclared => WarningKind::OnlyUndeclared {
                    server,
                    tool,
                    argument,
                },
                DriftCode::RequiredUnreachable => WarningKind::RequiredUnreachable {
                    server,
                    tool,
                    argument,
                },
            };
            self.warnings.push(match origin {
                Some(origin) => Warning::at(kind, origin),
                None => Warning::new(kind),
            });
        }
    }

    fn server_exclusion(&self, server: &ServerDef, server_used: bool) -> Option<Exclusion> {
        if !self.flag_on(&server.when) {
            return Some(Reason::FlagOff {
                flag: server.when.clone().unwrap_or_default(),
                server: Some(server.name.clone()),
            });
        }
        if !server_used {
            return Some(Reason::NotEnabled {
                agent: self.agent.name.clone(),
                by: Enabling::Servers,
                server: Some(server.name.clone()),
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
        drift: &mut BTreeSet<Drift>,
    ) -> Option<Exclusion> {
        let tool = listed.name.as_str();
        let outcome = narrow_tool(tool, &listed.input_schema, &server.narrowing);
        if let NarrowOutcome::Excluded { code } = &outcome {
            let (server, tool) = (server.name.clone(), tool.to_string());
            return Some(match code {
                ExcludeCode::Denied => Reason::Denied { server, tool },
                ExcludeCode::NotAllowed => Reason::NotAllowed { server, tool },
            });
        }
        if let Some(exclusion) = self.lock_check(server, listed) {
            return Some(exclusion);
        }
        if let Some(problem) = crate::policy::input_schema_problem(&listed.input_schema) {
            return Some(Reason::InvalidSchema { problem });
        }
        let warnings = match &outcome {
            NarrowOutcome::Offered(o) => &o.warnings,
            NarrowOutcome::KeptAway { warnings, .. } => warnings,
            NarrowOutcome::Excluded { .. } => return None,
        };
        for w in warnings {
            drift.insert((
                w.code,
                server.name.clone(),
                w.tool.clone(),
                w.argument.clone(),
            ));
        }
        match outcome {
            NarrowOutcome::Offered(o) => {
                c.input_schema = Arc::new(o.shown_schema);
                c.call.fixed = o.fixed;
                c.call.only = o.only;
                None
            }
            NarrowOutcome::KeptAway {
                code, arguments, ..
            } => {
                let (server, tool) = (server.name.clone(), tool.to_string());
                Some(match code {
                    KeepAwayCode::FixedUndeclared => Reason::FixedUndeclared {
                        server,
                        tool,
                        arguments,
                    },
                    KeepAwayCode::RequiredUnreachable => Reason::RequiredUnreachable {
                        server,
                        tool,
                        arguments,
                    },
                    KeepAwayCode::SchemaNotObject => Reason::InvalidSchema {
                        problem: SchemaProblem::NotAnObject {
                            found: crate::policy::kind_of(&listed.input_schema).to_string(),
                        },
                    },
                })
            }
            NarrowOutcome::Excluded { .. } => None,
        }
    }

    /// With a lock file, a tool whose definition is not the reviewed one is
    /// kept away (`lock.on_mismatch = "cut"`) or warned about.
    fn lock_check(&mut self, server: &ServerDef, listed: &ListedTool) -> Option<Exclusion> {
        let lock = self.policy.locked.as_ref()?;
        let current = crate::lock::definition_hash(listed);
        let locked = match lock.get(&server.name, &listed.name) {
            Some(locked) if locked == current => return None,
            locked => locked.map(str::to_string),
        };
        let reason = Reason::LockMismatch {
            server: server.name.clone(),
            tool: listed.name.clone(),
            locked,
            current,
            lock_file: self.policy.lock.file.display().to_string(),
        };
        match self.policy.lock.on_mismatch {
            LockMode::Cut => Some(reason),
            LockMode::Warn => {
                self.warnings.push(Warning::new(WarningKind::LockMismatch {
                    name: mcp_name(&server.name, &listed.name),
                    reason,
                }));
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
                        WarningKind::UnknownEnabledTool {
                            agent: self.agent.name.clone(),
                            tool: name.clone(),
                        },
                        origin,
                    ));
                } else if name.starts_with("mcp.") {
                    self.warnings.push(Warning::at(
                        WarningKind::EnabledDiscoveredTool {
                            agent: self.agent.name.clone(),
                            tool: name.clone(),
                        },
                        origin,
                    ));
                }
            }
        }
        if policy.locked.is_none() && policy.servers.iter().any(|s| !s.listed.is_empty()) {
            self.warnings.push(Warning::new(WarningKind::NoLock {
                lock_file: policy.lock.file.display().to_string(),
            }));
        }
        for group in &policy.groups {
            for (member, origin) in &group.members {
                if !registered.contains(member) {
                    self.warnings.push(Warning::at(
                        WarningKind::UnmatchedGroupMember {
                            group: group.name.clone(),
                            tool: member.clone(),
                        },
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
                self.warnings
                    .push(Warning::new(WarningKind::UnusedFlag { flag: flag.clone() }));
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
                        WarningKind::UnmatchedAllow {
                            server: server.name.clone(),
                            tool: name.clone(),
                        },
                        origin,
                    ));
                }
            }
            for name in server.tool_priority.keys() {
                if !listed.contains(name.as_str()) {
                    self.warnings.push(Warning::at(
                        WarningKind::UnmatchedToolPriority {
                            server: server.name.clone(),
                            tool: name.clone(),
                        },
                        &server.origin,
                    ));
                }
            }
            for (name, origin) in &server.deny {
                if !listed.contains(name.as_str()) {
                    self.warnings.push(Warning::at(
                        WarningKind::UnmatchedDeny {
                            server: server.name.clone(),
                            tool: name.clone(),
                        },
                        origin,
                    ));
                }
            }
        }
    }
}

/// Hash of one definition as offered: what the model is shown and the
/// fixed values and `only` list that shape its calls.
pub(crate) fn definition_hash(
    name: &str,
    description: &str,
    input_schema: &Value,
    fixed: &BTreeMap<String, Value>,
    only: Option<&[String]>,
) -> [u8; 32] {
    // The canonical text of {"description", "fixed", "input_schema", "name",
    // "only"} (keys in sorted order), hashed as it is written instead of
    // copying the schema into a new object first.
    use canon::{Sink as _, write_str, write_value};
    let mut out = canon::HashSink::new();
    out.put("{\"description\":");
    write_str(description, &mut out);
    out.put(",\"fixed\":{");
    for (i, (key, value)) in fixed.iter().enumerate() {
        if i > 0 {
            out.put(",");
        }
        write_str(key, &mut out);
        out.put(":");
        write_value(value, &mut out);
    }
    out.put("},\"input_schema\":");
    write_value(input_schema, &mut out);
    out.put(",\"name\":");
    write_str(name, &mut out);
    out.put(",\"only\":");
    match only {
        None => out.put("null"),
        Some(names) => {
            out.put("[");
            for (i, n) in names.iter().enumerate() {
                if i > 0 {
                    out.put(",");
                }
                write_str(n, &mut out);
            }
            out.put("]");
        }
    }
    out.put("}");
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn definition_hash_is_the_digest_of_the_definition_object() {
        let schema =
            json!({"type": "object", "properties": {"b\"": {"enum": [1.5, "x\n"]}, "a": {}}});
        let fixed: BTreeMap<String, Value> = [
            ("z".to_string(), json!([1, {"k": null}])),
            ("a\u{1}".to_string(), json!("v")),
        ]
        .into();
        let only = ["b\"".to_string(), "é".to_string()];
        for (fixed, only) in [(&fixed, Some(&only[..])), (&BTreeMap::new(), None)] {
            let expected = canon::digest(&json!({
                "name": "mcp.x.tool",
                "description": "Does \"things\"\t.",
                "input_schema": schema,
                "fixed": fixed,
                "only": only,
            }));
            let got = definition_hash("mcp.x.tool", "Does \"things\"\t.", &schema, fixed, only);
            assert_eq!(got, expected);
        }
    }
}
