//! Decides what a plan a caller sent may run: the plan the policy muster
//! holds makes for the selection the sent plan names, never the caller's
//! copy. A sent plan is resolved by the selection it states (`agent`,
//! `provider`, `totals`) and its `fingerprint`: a fingerprint the policy no
//! longer makes is [`PlanChanged`]; a plan whose fingerprint matches but
//! whose roster, deferred tools or control tool differ in anything the
//! check reads (`fixed`, `only`, `unknown_arguments`, `input_schema`, an
//! extra entry, ...) is refused `plan-not-from-policy`. What comes back is
//! the policy's own plan, so nothing a caller edits can widen what reaches
//! a server. It judges no turn and reads no file.

use crate::catalog::Selection;
use crate::check::{OfferedPlan, OfferedTool};
use crate::contract::PlanChanged;
use crate::error::code;
use crate::error::{Error, ErrorKind, Problem};
use crate::policy::Inputs;
use crate::tokens::TokenCache;
use serde::Deserialize;
use std::path::Path;

/// What the planner wrote about the selection it planned.
#[derive(Deserialize)]
struct Stated {
    #[serde(default)]
    agent: Option<Agent>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    totals: Option<Totals>,
    #[serde(default)]
    fingerprint: Option<String>,
}

#[derive(Deserialize)]
struct Agent {
    name: String,
    version: u64,
    #[serde(default)]
    profile: Option<String>,
    #[serde(default)]
    flags: Vec<String>,
}

#[derive(Deserialize)]
struct Totals {
    item_cap: u32,
    token_cap: u32,
}

const HELP: &str = "send the plan `muster plan --format json` (or `POST /v1/plan`) printed, \
                    unedited, or its `fingerprint` with the selection it was made for";

/// The plan `text` (read from `file`) names, as the policy makes it now:
/// `Ok(Err(_))` when the policy makes another plan for its selection now.
///
/// # Errors
/// [`ErrorKind::Input`] for a plan that cannot be read, that does not state
/// its selection and fingerprint, or that differs from the plan the policy
/// makes (`plan-not-from-policy`, naming the roster entry and the field);
/// [`ErrorKind::Usage`] for a selection the policy does not have.
pub fn offered_from_policy(
    inputs: &Inputs,
    text: &str,
    file: &Path,
    cache: &mut TokenCache,
) -> Result<Result<OfferedPlan, PlanChanged>, Error> {
    let sent = OfferedPlan::from_json(text, file)?;
    let stated: Stated = serde_json::from_str(crate::check::without_bom(text))
        .map_err(|err| Error::json(file, "plan", &err, HELP))?;
    let missing = |field: &str| {
        Error::new(
            ErrorKind::Input,
            Problem::coded(
                code::PLAN_NOT_FROM_POLICY,
                format!("the plan has no `{field}`, so muster cannot tell which plan of the policy it is"),
            )
            .in_file(file)
            .help(HELP),
        )
    };
    let agent = stated.agent.ok_or_else(|| missing("agent"))?;
    let totals = stated.totals.ok_or_else(|| missing("totals"))?;
    let fingerprint = stated.fingerprint.ok_or_else(|| missing("fingerprint"))?;
    let provider = match stated.provider.as_deref() {
        None => None,
        Some(name) => {
            Some(crate::contract::Provider::from_name(name).ok_or_else(|| missing("provider"))?)
        }
    };
    let select = super::Select {
        selection: Selection {
            agent: Some(agent.name),
            profile: agent.profile,
            flags: agent.flags,
            version: Some(agent.version),
            provider,
            mcp_only: false,
        },
        item_cap: Some(totals.item_cap),
        token_cap: Some(totals.token_cap),
    };
    let policy = match super::offered_now(inputs, &select, &fingerprint, cache)? {
        Ok(policy) => policy,
        Err(changed) => return Ok(Err(changed)),
    };
    match difference(&sent, &policy) {
        None => Ok(Ok(policy)),
        Some(what) => Err(Error::new(
            ErrorKind::Input,
            Problem::coded(
                code::PLAN_NOT_FROM_POLICY,
                format!("{what}: the plan was edited after muster made it, and only the policy decides what may run"),
            )
            .in_file(file)
            .help(HELP),
        )),
    }
}

/// The first place where `sent` differs from the policy's plan, in words
/// naming the field (`roster[3].fixed of tool "mcp.fs.write_file"`).
fn difference(sent: &OfferedPlan, policy: &OfferedPlan) -> Option<String> {
    let (ours, theirs) = (policy.roster(), sent.roster());
    for (i, tool) in theirs.iter().enumerate() {
        let Some(planned) = ours.get(i) else {
            return Some(format!(
                "roster[{i}] offers tool {:?}, which the policy's plan does not offer there",
                tool.name
            ));
        };
        if let Some(field) = field_differs(tool, planned) {
            return Some(format!(
                "roster[{i}].{field} of tool {:?} is not what the policy's plan offers",
                tool.name
            ));
        }
    }
    if theirs.len() < ours.len() {
        return Some(format!(
            "roster[{}] (tool {:?}) of the policy's plan is missing",
            theirs.len(),
            ours[theirs.len()].name
        ));
    }
    if sent.deferred_tools() != policy.deferred_tools() {
        return Some("`deferred` is not the policy's plan's list of deferred tools".into());
    }
    if sent.control_tool() != policy.control_tool() {
        return Some("`control_tool` is not the policy's plan's control tool".into());
    }
    None
}

/// The first field the check reads in which two offered tools differ.
fn field_differs(a: &OfferedTool, b: &OfferedTool) -> Option<&'static str> {
    let fields: [(&str, bool); 12] = [
        ("name", a.name == b.name),
        ("provider_name", a.provider_name == b.provider_name),
        ("source", a.source == b.source),
        ("server", a.mcp == b.mcp),
        ("input_schema", a.input_schema == b.input_schema),
        ("fixed", a.fixed == b.fixed),
        ("only", a.only == b.only),
        (
            "unknown_arguments",
            a.unknown_arguments == b.unknown_arguments,
        ),
        ("coerce", a.coerce == b.coerce),
        ("check", a.check == b.check),
        ("parameters", a.parameters == b.parameters),
        ("variadic", a.variadic == b.variadic),
    ];
    fields
        .iter()
        .find(|(_, same)| !same)
        .map(|(field, _)| *field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::{Select, plan};
    use serde_json::Value;

    fn bundled() -> Inputs {
        Inputs::load(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/policies"))).unwrap()
    }

    fn resolve(inputs: &Inputs, plan: &Value) -> Result<Result<OfferedPlan, PlanChanged>, Error> {
        let text = serde_json::to_string(plan).unwrap();
        offered_from_policy(
            inputs,
            &text,
            Path::new("plan.json"),
            &mut TokenCache::in_memory(),
        )
    }

    /// Every plan the planner prints resolves to the plan it is.
    #[test]
    fn a_printed_plan_resolves_to_itself() {
        let inputs = bundled();
        for select in [
            Select::default(),
            Select {
                item_cap: Some(3),
                token_cap: Some(2_000),
                ..Select::default()
            },
        ] {
            let text = plan(&inputs, &select, &mut TokenCache::in_memory())
                .unwrap()
                .json;
            let printed = OfferedPlan::from_json(&text, Path::new("p")).unwrap();
            let plan: Value = serde_json::from_str(&text).unwrap();
            let resolved = resolve(&inputs, &plan).unwrap().unwrap();
            assert_eq!(resolved.roster(), printed.roster());
        }
    }

    /// Issue 30, item 2: an edited plan (a fixed value dropped, `only`
    /// widened, a schema loosened, an entry added) is refused, naming the
    /// entry and the field.
    #[test]
    fn an_edited_plan_is_refused_naming_the_field() {
        let inputs = bundled();
        let text = plan(&inputs, &Select::default(), &mut TokenCache::in_memory())
            .unwrap()
            .json;
        let plan: Value = serde_json::from_str(&text).unwrap();
        type Edit = fn(&mut Value);
        let edits: [(&str, Edit); 4] = [
            ("input_schema", |p| {
                p["roster"][0]["input_schema"]["additionalProperties"] = Value::Bool(true);
            }),
            ("fixed", |p| {
                p["roster"][0]["fixed"] = serde_json::json!({"x": 1})
            }),
            ("only", |p| {
                p["roster"][0]["only"] = serde_json::json!(["x"])
            }),
            ("offers tool", |p| {
                let mut extra = p["roster"][0].clone();
                extra["name"] = "mcp.extra.tool".into();
                p["roster"].as_array_mut().unwrap().push(extra);
            }),
        ];
        for (field, edit) in edits {
            let mut edited = plan.clone();
            edit(&mut edited);
            let err = resolve(&inputs, &edited).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Input);
            let problem = &err.problems()[0];
            assert_eq!(problem.code, code::PLAN_NOT_FROM_POLICY, "{field}");
            assert!(problem.message.contains(field), "{field}: {problem}");
            assert_eq!(problem.file.as_deref(), Some(Path::new("plan.json")));
        }
        let mut changed = plan.clone();
        changed["fingerprint"] = format!("sha256:{}", "0".repeat(64)).into();
        assert!(resolve(&inputs, &changed).unwrap().is_err());
        let mut bare = plan;
        bare.as_object_mut().unwrap().remove("fingerprint");
        let err = resolve(&inputs, &bare).unwrap_err();
        assert_eq!(err.problems()[0].code, code::PLAN_NOT_FROM_POLICY);
    }
}
