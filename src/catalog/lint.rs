//! Warnings about policy entries that match nothing for this selection:
//! an enabled tool, group member, `allow`, `deny` or `tool_priority` name no
//! server lists, a flag nothing uses, listed tools with no lock.

use super::build::Builder;
use crate::contract::{Warning, WarningKind};
use std::collections::BTreeSet;

impl Builder<'_> {
    pub(super) fn warn_unmatched(&mut self) {
        let policy = self.policy;
        let registered = crate::policy::registered_names(policy, self.listings);
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
        if self.lock.is_none()
            && policy
                .servers
                .iter()
                .any(|s| !self.listings.of(&s.name).is_empty())
        {
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
            let listed = self.listings.of(&server.name);
            if listed.is_empty() {
                continue;
            }
            let listed: BTreeSet<&str> = listed.iter().map(|t| t.name.as_str()).collect();
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
