//! The plan as a provider's `tools` value: which of its tools go into the
//! request and how (see [`crate::provider::shape`] for the shapes). The
//! offered tools in roster order, then the deferred ones by kind, each kind
//! in the rank order of its best deferred tool.

use super::Plan;
use crate::provider::shape::{self, Format, Namespace, Offer, Tool};

impl Plan<'_> {
    /// Candidate `i` as a provider is sent it.
    pub fn provider_tool(&self, i: usize) -> Tool<'_> {
        let c = &self.catalog.candidates[i];
        Tool {
            name: &c.provider_name,
            description: self.description(i),
            input_schema: &c.input_schema,
        }
    }

    /// What a request's `tools` hold for this plan: the roster, muster's
    /// control tool, and the deferred tools grouped by kind.
    pub fn provider_offer(&self) -> Offer<'_> {
        let cat = self.catalog;
        let mut deferred: Vec<(usize, Vec<usize>)> = Vec::new();
        for &i in &self.deferred {
            let Some(kind) = cat.candidates[i].kind else {
                continue;
            };
            match deferred.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, members)) => members.push(i),
                None => deferred.push((kind, vec![i])),
            }
        }
        let deferred = deferred
            .into_iter()
            .map(|(kind, members)| {
                let kind = &cat.kinds[kind];
                let description = match &kind.description {
                    Some(text) if !text.trim().is_empty() => crate::search::one_line(text),
                    _ => {
                        let prefix = format!("{}.", kind.name);
                        let short: Vec<&str> = members
                            .iter()
                            .map(|&i| {
                                let name = cat.candidates[i].name.as_str();
                                name.strip_prefix(&prefix).unwrap_or(name)
                            })
                            .collect();
                        format!("Tools for {}: {}", kind.name, short.join(", "))
                    }
                };
                Namespace {
                    name: crate::provider::spell(&kind.name, &cat.names).name,
                    description,
                    tools: members.iter().map(|&i| self.provider_tool(i)).collect(),
                }
            })
            .collect();
        Offer {
            offered: self.roster.iter().map(|&i| self.provider_tool(i)).collect(),
            control: self
                .control
                .as_ref()
                .map(|offer| cat.candidates[offer.index].provider_name.as_str()),
            deferred,
        }
    }

    /// The `tools` value `format`'s request takes, as pretty JSON with a
    /// trailing newline: what `muster plan --format <format>` prints.
    pub fn provider_tools(&self, format: Format) -> String {
        shape::render(format, &self.provider_offer())
    }
}
