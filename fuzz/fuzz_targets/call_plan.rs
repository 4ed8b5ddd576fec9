//! An edited plan sent to run a turn (`muster call --plan`, `POST
//! /v1/call`): the bundled policy's plan with one roster entry's members
//! overwritten (or one entry added), resolved as the call path resolves it.
//! Byte 0 picks the entry (past the roster's end: a new entry copied from
//! the first, renamed unless the edit names it); the rest is a JSON object
//! whose members replace the entry's (`fixed`, `only`, `input_schema`,
//! `unknown_arguments`, `server`, `tool`, `name`, ...).
//!
//! Whatever the edit, nothing outside the policy is offered: a plan that
//! resolves resolves to the policy's own roster, and the sent plan read as
//! the check reads it is that roster too (an edit the check would see is
//! refused); a refusal names the plan file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use muster::answer::offered_from_policy;
use muster::check::OfferedPlan;
use muster::tokens::TokenCache;
use muster_fuzz::{assert_names, bundled, bundled_plan_json};
use serde_json::Value;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

fn policy_plan() -> &'static OfferedPlan {
    static PLAN: OnceLock<OfferedPlan> = OnceLock::new();
    PLAN.get_or_init(|| {
        OfferedPlan::from_json(bundled_plan_json(), Path::new("plan")).expect("the bundled plan")
    })
}

fn cache() -> &'static Mutex<TokenCache> {
    static CACHE: OnceLock<Mutex<TokenCache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(TokenCache::in_memory()))
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(Value::Object(edit)) = serde_json::from_slice::<Value>(rest) else {
        return;
    };
    let mut plan: Value = serde_json::from_str(bundled_plan_json()).unwrap();
    let roster = plan["roster"].as_array_mut().unwrap();
    let at = usize::from(pick);
    if at >= roster.len() {
        let mut extra = roster[0].clone();
        extra["name"] = Value::String(format!("mcp.extra.tool_{pick}"));
        roster.push(extra);
    }
    let last = roster.len() - 1;
    let entry = &mut roster[at.min(last)];
    for (member, value) in edit {
        entry[member.as_str()] = value;
    }
    let text = serde_json::to_string(&plan).unwrap();
    let file = Path::new("plan.json");
    let resolved = offered_from_policy(bundled(), &text, file, &mut cache().lock().unwrap());
    match resolved {
        Ok(Ok(offered)) => {
            assert!(offered.roster() == policy_plan().roster(), "a roster the policy does not make");
            let sent = OfferedPlan::from_json(&text, file).expect("a plan that resolved reads");
            assert!(sent.roster() == policy_plan().roster(), "an edit passed: {}", String::from_utf8_lossy(rest));
        }
        // The fingerprint is not edited, so the policy always makes it.
        Ok(Err(changed)) => panic!("plan-changed for the policy's own fingerprint: {changed:?}"),
        Err(err) => assert_names(&err, file),
    }
});
