//! Findability gates over sessions: a description change that hides a tool
//! fails the gate, and a line can say what its ask loads.

use super::{
    common::{muster, stdout},
    deferring, json_out,
};
use serde_json::json;

#[test]
fn a_findability_gate_fails_when_a_description_change_hides_a_tool() {
    let fx = deferring();
    fx.write(
        "gates/find.toml",
        "name = \"gmail findability\"\nflags = \"production\"\n\n[findability]\nqueries = \"find.jsonl\"\nk = 3\nmin_recall = 1.0\n",
    );
    fx.write(
        "gates/find.jsonl",
        concat!(
            "{\"query\": \"the whole email conversation\", \"expect\": [\"mcp.gmail_read.get_thread\"]}\n",
            "{\"query\": \"is my out of office auto reply on\", \"expect\": [\"mcp.gmail_read.get_vacation_settings\"]}\n",
            "{\"query\": \"which labels do I have in my mailbox\", \"expect\": [\"mcp.gmail_read.list_labels\"]}\n",
            "{\"query\": \"work out 17 percent of 230\", \"expect\": [\"math.calculate\"]}\n",
        ),
    );
    let gate = |code: i32| json_out(&fx, &["gate", "gates/find.toml", "--format", "json"], code);
    let passed = gate(0);
    let found = &passed[0]["findability"];
    assert_eq!(
        (found["found"].as_u64(), found["total"].as_u64()),
        (Some(4), Some(4))
    );
    assert_eq!(found["recall"], 1.0);

    // The server rewrites a description; after review it is locked, and the
    // tool can no longer be found by what users ask for.
    // (Its name still says "vacation settings", which its meaning finds,
    // so the new description points elsewhere.)
    fx.edit(
        "policies/mcp/gmail_read.json",
        "Get the vacation auto-reply settings",
        "Return the settings object of the account's spam and junk mail filters",
    );
    stdout(fx.path(), &["lock", "--server", "gmail_read"], 0);
    let failed = gate(1);
    let found = &failed[0]["findability"];
    assert_eq!(found["found"], 3);
    assert_eq!(found["recall"], 0.75);
    assert_eq!(found["missed"][0]["line"], 2);
    assert_eq!(
        found["missed"][0]["expect"],
        json!(["mcp.gmail_read.get_vacation_settings"])
    );
    assert_eq!(
        failed[0]["failures"][0],
        json!({"code": "findability", "k": 3, "found": 3, "total": 4, "recall": 0.75, "min_recall": 1.0})
    );

    // A query expecting a tool no policy registers is bad input.
    fx.write(
        "gates/find.jsonl",
        "{\"query\": \"x\", \"expect\": [\"mcp.gmail_read.nope\"]}\n",
    );
    let err = muster(fx.path())
        .args(["gate", "gates/find.toml"])
        .assert()
        .code(2);
    let err = String::from_utf8(err.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("find.jsonl:1") && err.contains("mcp.gmail_read.nope"),
        "{err}"
    );
}

/// Issue 22 item 2: a findability line may say what a load of its query
/// loads, exactly: one tool for a clear ask, nothing for an unrelated ask
/// (or one answered with a choice). The gate fails, naming the line, when
/// the control tool would load anything else.
#[test]
fn a_findability_line_can_say_what_its_ask_loads() {
    let fx = deferring();
    fx.write(
        "gates/find.toml",
        "name = \"loads\"\nflags = \"production\"\n\n[findability]\nqueries = \"find.jsonl\"\nk = 3\nmin_recall = 0.5\n",
    );
    let lines = concat!(
        "{\"query\": \"which labels do I have in my mailbox\", \"expect\": [\"mcp.gmail_read.list_labels\"], \"loads\": [\"mcp.gmail_read.list_labels\"]}\n",
        "{\"query\": \"bake a cake\", \"expect\": [\"mcp.gmail_read.get_thread\"], \"loads\": []}\n",
    );
    fx.write("gates/find.jsonl", lines);
    let gate = |code: i32| json_out(&fx, &["gate", "gates/find.toml", "--format", "json"], code);
    let passed = gate(0);
    assert_eq!(passed[0]["passed"], true, "{passed}");

    // The same ask said to load another tool fails on its line.
    fx.write(
        "gates/find.jsonl",
        &lines.replacen(
            "\"loads\": [\"mcp.gmail_read.list_labels\"]",
            "\"loads\": [\"mcp.gmail_read.get_label\"]",
            1,
        ),
    );
    let failed = gate(1);
    assert_eq!(
        failed[0]["failures"][0],
        json!({"code": "loads", "line": 1, "query": "which labels do I have in my mailbox",
               "expect": ["mcp.gmail_read.get_label"], "loaded": ["mcp.gmail_read.list_labels"]})
    );
}
