//! Groups and agents from `muster.toml`: named sets of tools, and each
//! agent's versions, which one is current and which agent is the default.

use super::load::{Loader, Source};
use super::{Agent, Group, Origin, ServerDef, bad_name, bad_name_code, raw};
use crate::error::code;
use std::collections::BTreeMap;
use toml::Spanned;

impl Loader {
    /// `deny_hints` and `require_hints` read: each name a [`Hint`], listed
    /// once, never in both; every problem names the file and line.
    pub(super) fn hint_rules(
        &mut self,
        src: &Source,
        deny: &[Spanned<String>],
        require: &[Spanned<String>],
        subject: &str,
    ) -> super::HintRules {
        use crate::contract::Hint;
        let mut rules = super::HintRules::default();
        for (key, list) in [("deny_hints", deny), ("require_hints", require)] {
            for name in list {
                let Some(hint) = Hint::from_name(name.get_ref()) else {
                    self.problems.push(
                        src.at(name)
                            .problem(format!(
                                "{subject}: {key} names {:?}, which is not a safety hint",
                                name.get_ref()
                            ))
                            .help("safety hints: read-only, destructive, idempotent, open-world"),
                    );
                    continue;
                };
                let (this, other) = match key {
                    "deny_hints" => (&mut rules.deny, &rules.require),
                    _ => (&mut rules.require, &rules.deny),
                };
                if other.contains(&hint) {
                    self.problems.push(
                        src.at(name)
                            .problem(format!(
                                "{subject}: {:?} is in both deny_hints and require_hints",
                                name.get_ref()
                            ))
                            .help("keep it in one of them"),
                    );
                } else if this.contains(&hint) {
                    self.problems.push(
                        src.at(name)
                            .problem(format!("{subject}: {key} lists {:?} twice", name.get_ref()))
                            .help("list each hint once"),
                    );
                } else {
                    this.push(hint);
                }
            }
        }
        rules
    }

    /// The `[[group]]` tables, in declared order.
    pub(super) fn groups(&mut self, src: &Source, file: &[Spanned<raw::RawGroup>]) -> Vec<Group> {
        let mut groups: Vec<Group> = Vec::new();
        for g in file {
            let origin = src.at(g);
            let g = g.get_ref();
            if groups.iter().any(|other| &other.name == g.name.get_ref()) {
                self.problems.push(src.at(&g.name).coded(
                    code::DUPLICATE,
                    format!("group {:?} is declared twice", g.name.get_ref()),
                ));
                continue;
            }
            if let Some(problem) = bad_name(g.name.get_ref()) {
                self.problems.push(
                    src.at(&g.name)
                        .coded(
                            bad_name_code(g.name.get_ref()),
                            format!(
                                "group name {:?} {problem}",
                                crate::names::shown(g.name.get_ref())
                            ),
                        )
                        .help(format!(
                            "name it with visible characters only, at most {} bytes",
                            crate::names::MAX_NAME_BYTES
                        )),
                );
            }
            if g.members.is_empty() {
                self.problems.push(
                    origin
                        .coded(
                            code::MISSING_VALUE,
                            format!("group {:?} has no members", g.name.get_ref()),
                        )
                        .help("list full tool names in members = [...]"),
                );
            }
            if g.defer_together && g.required {
                self.problems.push(
                    origin
                        .coded(code::CONFLICT, format!(
                            "group {:?} is both required and defer_together",
                            g.name.get_ref()
                        ))
                        .help("required members are always offered, so they are never deferred; drop one of the two"),
                );
            }
            groups.push(Group {
                name: g.name.get_ref().clone(),
                required: g.required,
                members: g
                    .members
                    .iter()
                    .map(|m| (m.get_ref().clone(), src.at(m)))
                    .collect(),
                description: g.description.clone(),
                defer_together: g.defer_together,
                origin,
            });
        }
        groups
    }

    /// The `[[agent]]` tables (a `default` agent when there are none), the
    /// index of the default agent at its current version, and each name's
    /// current version.
    pub(super) fn agents(
        &mut self,
        src: &Source,
        file: &[Spanned<raw::RawAgent>],
        servers: &[ServerDef],
        encoding: crate::tokens::Encoding,
    ) -> (Vec<Agent>, usize, BTreeMap<String, usize>) {
        let mut agents: Vec<Agent> = Vec::new();
        let mut default_agent: Option<usize> = None;
        let mut current_marked: BTreeMap<String, usize> = BTreeMap::new();
        for a in file {
            let origin = src.at(a);
            let a = a.get_ref();
            let name = a.name.get_ref().clone();
            let version = match &a.version {
                Some(v) if *v.get_ref() < 0 => {
                    self.problems.push(src.at(v).coded(
                        code::OUT_OF_RANGE,
                        format!("agent {name:?}: version must be 0 or more"),
                    ));
                    0
                }
                Some(v) => *v.get_ref() as u64,
                None => 1,
            };
            if agents
                .iter()
                .any(|other| other.name == name && other.version == version)
            {
                self.problems.push(
                    src.at(&a.name)
                        .coded(
                            code::DUPLICATE,
                            format!("agent {name:?} version {version} is declared twice"),
                        )
                        .help("give each declaration of one agent its own version"),
                );
                continue;
            }
            if a.default {
                match default_agent.map(|i| &agents[i]) {
                    Some(first) if first.name != name => self.problems.push(
                        origin
                            .coded(
                                code::DUPLICATE,
                                format!(
                                    "agents {:?} and {name:?} are both marked default",
                                    first.name
                                ),
                            )
                            .help("mark exactly one agent default = true"),
                    ),
                    Some(_) => {}
                    None => default_agent = Some(agents.len()),
                }
            }
            if a.current {
                if let Some(&first) = current_marked.get(&name) {
                    self.problems.push(
                        origin
                            .coded(code::DUPLICATE, format!(
                                "agent {name:?}: versions {} and {version} are both marked current",
                                agents[first].version
                            ))
                            .help("mark at most one version current = true; without it the highest version is current"),
                    );
                } else {
                    current_marked.insert(name.clone(), agents.len());
                }
            }
            if let Some(servers_list) = &a.servers {
                for s in servers_list {
                    if !servers.iter().any(|server| &server.name == s.get_ref()) {
                        self.problems.push(
                            src.at(s)
                                .coded(code::UNKNOWN_NAME, format!(
                                    "agent {name:?} names MCP server {:?}, which no mcp/*.toml declares",
                                    s.get_ref()
                                ))
                                .help("declare the server in mcp/*.toml or remove it from servers"),
                        );
                    }
                }
            }
            let named = |list: &Option<Vec<Spanned<String>>>| {
                list.as_ref()
                    .map(|l| l.iter().map(|n| (n.get_ref().clone(), src.at(n))).collect())
            };
            let provider = a.provider.as_ref().and_then(|p| {
                self.provider_named(src, p, &format!("agent {name:?}: provider"), encoding)
            });
            let hints = self.hint_rules(
                src,
                &a.deny_hints,
                &a.require_hints,
                &format!("agent {name:?}"),
            );
            let max_result_tokens = a.max_result_tokens.as_ref().and_then(|v| {
                self.result_tokens(src, v, &format!("agent {name:?}: max_result_tokens"))
            });
            agents.push(Agent {
                name,
                version,
                enabled_tools: named(&a.enabled_tools),
                servers: named(&a.servers),
                provider,
                hints,
                max_result_tokens,
                origin,
            });
        }
        if agents.is_empty() {
            agents.push(Agent {
                name: "default".into(),
                version: 1,
                enabled_tools: None,
                servers: None,
                provider: None,
                hints: Default::default(),
                max_result_tokens: None,
                origin: Origin {
                    file: self.root.join("muster.toml"),
                    line: None,
                },
            });
        }
        // Each name's current version: the one marked, else the highest.
        let mut current_versions = BTreeMap::new();
        for (i, agent) in agents.iter().enumerate() {
            if current_marked.contains_key(&agent.name) {
                continue;
            }
            let current = current_versions.entry(agent.name.clone()).or_insert(i);
            if agents[*current].version < agent.version {
                *current = i;
            }
        }
        current_versions.extend(current_marked);
        // The default agent is its name at its current version.
        let default_name = &agents[default_agent.unwrap_or(0)].name;
        let default_agent = current_versions[default_name];
        (agents, default_agent, current_versions)
    }
}
