//! The failure the reference record describes, and the two guards against
//! it: a production flag squeezing a calling tool out must fail a gate,
//! and with the calling tools required it can no longer happen.

mod common;

use common::{Fixture, names_in, plan_value, stdout};

/// The roster as it was before the record's fix: no required group and
/// workspace.list_files still in the default roster, so the order is
/// configured tools, then discovered tools by name.
fn before_the_fix() -> Fixture {
    let fx = Fixture::bundled();
    let muster_toml = fx.read("policies/muster.toml");
    let start = muster_toml.find("[[group]]").unwrap();
    let end = muster_toml.find("[[agent]]").unwrap();
    fx.write(
        "policies/muster.toml",
        &format!("{}{}", &muster_toml[..start], &muster_toml[end..]),
    );
    fx.edit(
        "policies/tools/20-workspace.toml",
        "default_roster = false",
        "",
    );
    fx
}

#[test]
fn a_production_flag_cuts_a_calling_tool_and_the_gate_names_it() {
    let fx = before_the_fix();
    // Without the flag the 26 configured tools leave room for all three
    // calling tools (and get_thread): the gate that never enabled the flag
    // would have passed.
    let offered = names_in(&plan_value(fx.path(), &[]), "roster");
    assert!(offered.iter().any(|n| n == "mcp.bland_read.list_calls"));

    // Production turns unsubscribe on: 28 configured tools, two slots left,
    // and name order gives them to start_call and get_call.
    let why = stdout(
        fx.path(),
        &["why", "mcp.bland_read.list_calls", "--flags", "production"],
        0,
    );
    assert!(why.contains("is cut (item-cap)"), "{why}");
    assert!(why.contains("item cap of 31"), "{why}");

    fx.write(
        "gates/production.toml",
        "flags = \"production\"\nrequire = [\"mcp.bland_call.start_call\", \"mcp.bland_read.get_call\", \"mcp.bland_read.list_calls\"]\n",
    );
    let out = stdout(fx.path(), &["gate"], 1);
    assert!(out.contains("FAIL"), "{out}");
    assert!(
        out.contains("required tool mcp.bland_read.list_calls is cut (item-cap)"),
        "{out}"
    );
    assert!(
        !out.contains("required tool mcp.bland_call.start_call"),
        "{out}"
    );
}

#[test]
fn one_more_production_tool_leaves_the_calling_tools_offered() {
    let fx = Fixture::bundled();
    // A new configured tool behind a production flag, declared among the
    // core tools so it outranks the schedule tools.
    fx.edit(
        "policies/tools/10-core.toml",
        "[[tool]]\nname = \"conversation.ask_user\"",
        "[[tool]]\nname = \"device.send_sms\"\ndescription = \"Send a text message from the user's paired phone.\"\nwhen = \"DEVICE_SMS_ENABLED\"\ninput_schema = { type = \"object\", properties = { to = { type = \"string\" }, body = { type = \"string\" } }, required = [\"to\", \"body\"] }\n\n[[tool]]\nname = \"conversation.ask_user\"",
    );
    fx.write(
        "policies/flags/production.toml",
        "flags = [\"AGENT_EMAIL_UNSUBSCRIBE_ENABLED\", \"DEVICE_SMS_ENABLED\"]\n",
    );
    let doc = plan_value(fx.path(), &["--flags", "production"]);
    let offered: Vec<&str> = doc["roster"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered.len(), 30);
    for calling in [
        "mcp.bland_call.start_call",
        "mcp.bland_read.get_call",
        "mcp.bland_read.list_calls",
    ] {
        assert!(offered.contains(&calling), "{calling} must stay offered");
    }
    assert!(offered.contains(&"device.send_sms"));
    // The lowest-ranked configured tool gave up its slot, and why says so.
    assert!(!offered.contains(&"schedule.delete"));
    let why = stdout(
        fx.path(),
        &["why", "schedule.delete", "--flags", "production"],
        0,
    );
    assert!(why.contains("schedule.delete is cut (item-cap)"), "{why}");
    assert!(why.contains("--item-cap 31"), "{why}");
    assert!(why.contains("device.send_sms"), "{why}");

    // The pinned gate notices the change and says what moved.
    let gate = stdout(fx.path(), &["gate"], 1);
    assert!(gate.contains("+ device.send_sms"), "{gate}");
    assert!(
        gate.contains("- schedule.delete (now cut (item-cap)"),
        "{gate}"
    );
    assert!(!gate.contains("required tool"), "{gate}");
}

#[test]
fn one_more_production_tool_is_deferred_when_deferral_is_on() {
    let fx = Fixture::bundled();
    fx.edit("policies/muster.toml", "enabled = false", "enabled = true");
    let doc = plan_value(fx.path(), &["--flags", "production"]);
    let roster = doc["roster"].as_array().unwrap();
    assert_eq!(roster[0]["name"], "tools.load");
    let offered: Vec<&str> = roster.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert!(offered.contains(&"mcp.bland_read.list_calls"));
    let deferred: Vec<&str> = doc["deferred"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(deferred.contains(&"schedule.delete"), "{deferred:?}");
    assert!(
        deferred.contains(&"mcp.gmail_read.get_thread"),
        "{deferred:?}"
    );
    let why = stdout(
        fx.path(),
        &["why", "mcp.gmail_read.get_thread", "--flags", "production"],
        0,
    );
    assert!(why.contains("is deferred (item-cap)"), "{why}");
    assert!(why.contains("by calling tools.load"), "{why}");
    let why: serde_json::Value = serde_json::from_str(&stdout(
        fx.path(),
        &[
            "why",
            "mcp.gmail_read.get_thread",
            "--flags",
            "production",
            "--format",
            "json",
        ],
        0,
    ))
    .unwrap();
    assert_eq!(why["status"], "deferred");
    assert_eq!(why["load_with"], "tools.load");
    assert_eq!(why["facts"]["code"], "item-cap");
    assert_eq!(why["to_fit"][0]["action"], "raise-item-cap");
}

#[test]
fn an_item_cap_of_two_fails_the_gate_naming_the_three_required_tools() {
    let fx = Fixture::bundled();
    let out = stdout(fx.path(), &["gate", "--item-cap", "2"], 1);
    assert!(
        out.contains("requires 3 tools (mcp.bland_call.start_call, mcp.bland_read.get_call, mcp.bland_read.list_calls) but the item cap is 2"),
        "{out}"
    );
    assert!(
        out.contains("required tool mcp.bland_read.list_calls is cut (item-cap)"),
        "{out}"
    );
}
