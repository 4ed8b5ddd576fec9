//! Building the catalog: the selection's agent and flags, the control
//! tool, configured tools, and the rank order. Discovered tools are added
//! by `discovered`, and warnings about entries that match nothing by `lint`.

use super::{
    CallSpec, Candidate, Catalog, Exclusion, Kind, Parameter, Selection, Source, definition_hash,
};
use crate::contract::{CheckMode, Enabling, Reason, Warning, WarningKind};
use crate::error::code;
use crate::error::{Error, ErrorKind, Problem};
use crate::lock::Lock;
use crate::policy::{Inputs, Listings, Policy, UnknownArguments};
use crate::schema::Schema;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

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
        (Some(version), false) => Problem::coded(
            code::UNKNOWN_NAME,
            format!(
                "agent {name:?} has no version {version} in {}",
                file.display()
            ),
        )
        .help(format!(
            "choose one of its versions: {}",
            versions.join(", ")
        )),
        _ => {
            let names: BTreeSet<&str> = policy.agents.iter().map(|a| a.name.as_str()).collect();
            Problem::coded(
                code::UNKNOWN_NAME,
                format!("agent {name:?} is not declared in {}", file.display()),
            )
            .help(format!(
                "choose one of: {}",
                names.into_iter().collect::<Vec<_>>().join(", ")
            ))
        }
    };
    Error::new(ErrorKind::Usage, problem)
}

pub(super) struct Builder<'p> {
    pub(super) policy: &'p Policy,
    /// What each server lists.
    pub(super) listings: &'p Listings,
    /// The reviewed definitions, when there is a lock file.
    pub(super) lock: Option<&'p Lock>,
    pub(super) agent: &'p crate::policy::Agent,
    pub(super) profile: Option<String>,
    pub(super) flags: BTreeSet<String>,
    pub(super) provider: crate::tokens::Provider,
    pub(super) candidates: Vec<Candidate>,
    pub(super) warnings: Vec<Warning>,
    pub(super) names: BTreeSet<String>,
    pub(super) required: BTreeSet<&'p str>,
    pub(super) groups: BTreeMap<&'p str, &'p str>,
    pub(super) kinds: Vec<Kind>,
    pub(super) kind_index: BTreeMap<String, usize>,
    /// Cut every configured tool as `left-to-host` ([`Selection::mcp_only`]).
    pub(super) mcp_only: bool,
}

impl<'p> Builder<'p> {
    pub(super) fn new(inputs: &'p Inputs, selection: &Selection) -> Result<Self, Error> {
        let policy = &inputs.policy;
        let agent = policy
            .agent(selection.agent.as_deref(), selection.version)
            .ok_or_else(|| unknown_agent(policy, selection))?;
        if selection.flags.len() > super::MAX_EXTRA_FLAGS {
            return Err(Error::new(
                ErrorKind::Usage,
                Problem::coded(
                    code::OUT_OF_RANGE,
                    format!(
                        "{} extra flags are turned on; at most {} may be",
                        selection.flags.len(),
                        super::MAX_EXTRA_FLAGS
                    ),
                )
                .in_file("flag")
                .help("turn many flags on with a profile, flags/<PROFILE>.toml"),
            ));
        }
        let mut flags: BTreeSet<String> = selection.flags.iter().cloned().collect();
        if let Some(name) = &selection.profile {
            let profile = policy.profiles.get(name).ok_or_else(|| {
                let known: Vec<&str> = policy.profiles.keys().map(String::as_str).collect();
                Error::new(
                    ErrorKind::Usage,
                    Problem::coded(
                        code::UNKNOWN_NAME,
                        format!(
                            "flag profile {name:?} does not exist: there is no {}",
                            policy
                                .root
                                .join("flags")
                                .join(format!("{name}.toml"))
                                .display()
                        ),
                    )
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
            listings: &inputs.listings,
            lock: inputs.lock.as_ref(),
            agent,
            profile: selection.profile.clone(),
            flags,
            provider: selection
                .provider
                .or(agent.provider)
                .unwrap_or(policy.provider),
            candidates: Vec::new(),
            warnings: Vec::new(),
            names: BTreeSet::new(),
            required,
            groups,
            kinds: Vec::new(),
            kind_index: BTreeMap::new(),
            mcp_only: selection.mcp_only,
        })
    }

    pub(super) fn build(mut self) -> Catalog {
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
        // Of two tools a provider would be sent under one name, the later
        // in priority order is cut.
        let names = ranked
            .iter()
            .map(|&i| self.candidates[i].provider_name.as_str());
        let clashes = crate::provider::collisions(names);
        for (position, earlier) in clashes.iter().enumerate() {
            if let Some(earlier) = earlier {
                let (kept, cut) = (ranked[*earlier], ranked[position]);
                self.candidates[cut].exclusion = Some(Box::new(Reason::ProviderNameCollision {
                    provider_name: self.candidates[cut].provider_name.clone(),
                    other: self.candidates[kept].name.clone(),
                }));
            }
        }
        ranked.retain(|&i| self.candidates[i].exclusion.is_none());
        let encoding = policy.encoding;
        Catalog {
            agent: self.agent.name.clone(),
            agent_version: self.agent.version,
            profile: self.profile,
            flags: self.flags.into_iter().collect(),
            caps: policy.caps,
            encoding,
            provider: self.provider,
            wrapper_tokens: encoding.wrapper_tokens_for(self.provider),
            deferral: policy.deferral.enabled,
            deferral_policy: policy.deferral.clone(),
            kinds: self.kinds,
            control_tool: policy
                .deferral
                .enabled
                .then(|| policy.deferral.control_tool.clone()),
            names: policy.names.clone(),
            candidates: self.candidates,
            ranked,
            warnings: self.warnings,
        }
    }

    pub(super) fn call_spec(
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
    pub(super) fn candidate(
        &self,
        name: String,
        source: Source,
        description: String,
        input_schema: Schema,
        priority: i64,
        deferrable: bool,
        call: CallSpec,
    ) -> Candidate {
        let required = self.required.contains(name.as_str());
        let group = self.groups.get(name.as_str()).map(|g| g.to_string());
        Candidate {
            required,
            group,
            // Spelt once, in `push`, where a rewrite is also reported.
            provider_name: String::new(),
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
            hints: None,
            index: 0,
            strict_problem: super::StrictProblem::default(),
        }
    }

    /// Adds a candidate, marking a repeated name and hashing the definition.
    pub(super) fn push(&mut self, mut c: Candidate) {
        // Every repeat of a name is cut, whatever became of the first: the
        // name a model calls and `why` answers for must mean one tool.
        if c.exclusion.is_none() {
            c.exclusion = self.repeated(&c.name).map(Box::new);
        }
        self.names.insert(c.name.clone());
        let spelt = crate::provider::spell(&c.name, &self.policy.names);
        c.provider_name = spelt.name;
        if c.exclusion.is_none()
            && let Some(rewrite) = spelt.rewritten
        {
            self.warnings
                .push(Warning::new(WarningKind::ProviderNameRewritten {
                    tool: c.name.clone(),
                    provider_name: c.provider_name.clone(),
                    length: rewrite.length,
                    characters: rewrite.characters,
                }));
        }
        c.definition_hash = definition_hash(
            &c.name,
            &c.provider_name,
            &c.description,
            &c.input_schema,
            &c.call.fixed,
            c.call.only.as_deref(),
            c.hints.as_deref(),
        );
        c.kind = self.kind_of(&c);
        self.candidates.push(c);
    }

    /// The kind `c` is summarized under: a group that defers together, its
    /// MCP server, its group, or its name's first part.
    pub(super) fn kind_of(&mut self, c: &Candidate) -> Option<usize> {
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
    pub(super) fn repeated(&self, name: &str) -> Option<Exclusion> {
        self.names.contains(name).then(|| Reason::DuplicateName {
            name: name.to_string(),
        })
    }

    pub(super) fn flag_on(&self, flag: &Option<String>) -> bool {
        flag.as_ref().is_none_or(|f| self.flags.contains(f))
    }

    pub(super) fn configured(&mut self) {
        let policy = self.policy;
        let enabled: Option<BTreeSet<&str>> = self
            .agent
            .enabled_tools
            .as_ref()
            .map(|list| list.iter().map(|(n, _)| n.as_str()).collect());
        // Room for every tool at once: a doubling vector of 100,000
        // candidates holds a third more than it needs, and both copies
        // while it grows.
        self.candidates.reserve(policy.tools.len());
        for (index, tool) in policy.tools.iter().enumerate() {
            let mut call = self.call_spec(
                tool.unknown_arguments
                    .unwrap_or(policy.calls.configured_unknown),
                tool.coerce.unwrap_or(policy.calls.coerce_configured),
                tool.check.unwrap_or(policy.calls.configured_check),
            );
            call.variadic = tool.variadic;
            call.parameters = tool.parameters.as_ref().map(|names| {
                let schema = tool.input_schema.value();
                let required: BTreeSet<&str> = schema
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
            if self.mcp_only {
                c.exclusion = Some(Box::new(Reason::LeftToHost));
            } else if let Some(problem) = tool.input_schema.problem() {
                // Only a schema nested too deep loads (the rest fail the policy).
                let problem = problem.clone();
                c.exclusion = Some(Box::new(Reason::InvalidSchema { problem }));
            } else if !self.flag_on(&tool.when) {
                c.exclusion = Some(Box::new(Reason::FlagOff {
                    flag: tool.when.clone().unwrap_or_default(),
                    server: None,
                }));
            } else {
                let on = match &enabled {
                    Some(list) => list.contains(tool.name.as_str()),
                    None => tool.default_roster,
                };
                if !on {
                    c.exclusion = Some(Box::new(Reason::NotEnabled {
                        agent: self.agent.name.clone(),
                        by: match &enabled {
                            Some(_) => Enabling::EnabledTools,
                            None => Enabling::DefaultRoster,
                        },
                        server: None,
                    }));
                }
            }
            self.push(c);
        }
    }
}
