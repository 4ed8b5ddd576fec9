//! The validation sweep: plans every agent version under no profile and under each flag profile,
//! and gathers the warnings those plans raise, each once per agent name and profile. It reads a
//! policy that already loaded (every problem of a policy that does not is [`Inputs::load`]'s);
//! it decides nothing and prints nothing.

use std::collections::BTreeMap;

use crate::catalog::{Catalog, Selection};
use crate::contract::{SweptViolation, SweptWarning, VALIDATE_FORMAT_VERSION, Validation};
use crate::error::Error;
use crate::plan::plan;
use crate::policy::Inputs;

/// What `inputs` hold and every warning their plans raise.
///
/// # Errors
/// As [`Catalog::build`]: never for a loaded policy's own agents and profiles.
///
/// # Example
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # std::fs::create_dir(dir.path().join("tools")).unwrap();
/// # std::fs::write(dir.path().join("tools/t.toml"),
/// #     "[[tool]]\nname = \"memory.search\"\ndescription = \"Search memory.\"\n").unwrap();
/// let inputs = muster::policy::Inputs::load(dir.path()).unwrap();
/// let validation = muster::validate::validate(&inputs).unwrap();
/// assert_eq!(validation.configured_tools, 1);
/// assert!(validation.warnings.is_empty());
/// ```
pub fn validate(inputs: &Inputs) -> Result<Validation, Error> {
    validate_accepted(inputs, &[], false)
}

/// [`validate`], also judging each plan's request by every provider format
/// in `formats`, in strict mode if `strict` ([`crate::provider::accept`]):
/// what they would refuse is the answer's `acceptance`.
///
/// # Errors
/// As [`validate`].
pub fn validate_accepted(
    inputs: &Inputs,
    formats: &[crate::provider::shape::Format],
    strict: bool,
) -> Result<Validation, Error> {
    let policy = &inputs.policy;
    // A configured tool whose schema plans cut (nested too deep) is the author's to fix.
    let broken: Vec<crate::error::Problem> = policy
        .tools
        .iter()
        .filter_map(|t| {
            let problem = t.input_schema.problem()?;
            Some(crate::policy::schema_problem(&t.name, problem, &t.origin))
        })
        .collect();
    if !broken.is_empty() {
        return Err(Error::many(crate::error::ErrorKind::Policy, broken));
    }
    let mut acceptance: Vec<(usize, SweptViolation)> = Vec::new();
    let mut profiles: Vec<Option<String>> = vec![None];
    profiles.extend(policy.profiles.keys().cloned().map(Some));
    // Keyed by the sentence with its place, then the plan in words: the order the text shows.
    let mut warnings: BTreeMap<(String, String), SweptWarning> = BTreeMap::new();
    for agent in &policy.agents {
        for profile in &profiles {
            let selection = Selection {
                agent: Some(agent.name.clone()),
                profile: profile.clone(),
                flags: Vec::new(),
                version: Some(agent.version),
                provider: None,
                mcp_only: false,
            };
            let catalog = Catalog::build(inputs, &selection)?;
            let planned = plan(&catalog, catalog.caps);
            for (f, &format) in formats.iter().enumerate() {
                let offer = planned.provider_offer();
                for violation in crate::provider::accept::check(format, &offer, strict) {
                    let swept = SweptViolation {
                        violation,
                        agent: agent.name.clone(),
                        profile: profile.clone(),
                    };
                    acceptance.push((f, swept));
                }
            }
            for warning in planned.warnings {
                let swept = SweptWarning {
                    warning,
                    agent: agent.name.clone(),
                    profile: profile.clone(),
                };
                warnings
                    .entry((swept.warning.to_string(), swept.context()))
                    .or_insert(swept);
            }
        }
    }
    Ok(Validation {
        format_version: VALIDATE_FORMAT_VERSION,
        policies: policy.root.display().to_string(),
        configured_tools: policy.tools.len(),
        servers: policy.servers.len(),
        listed_tools: policy
            .servers
            .iter()
            .map(|s| inputs.listings.of(&s.name).len())
            .sum(),
        agents: policy.agents.len(),
        profiles: policy.profiles.len(),
        warnings: warnings.into_values().collect(),
        acceptance: {
            // By format asked, then plan; each plan's in the request's order.
            acceptance.sort_by_key(|(f, _)| *f);
            acceptance.into_iter().map(|(_, v)| v).collect()
        },
    })
}
