//! The 10,000-tool corpus the search and vector benches share: the six
//! recorded servers' 55 tools copied under 182 made-up servers (distinct
//! names, descriptions varied per server).

use muster::search::Entry;
use serde_json::Value;
use std::path::Path;

pub struct Tool {
    pub name: String,
    pub description: String,
    pub input_schema: Option<muster::schema::Schema>,
}

pub const ENTRIES: usize = 10_000;

pub fn corpus() -> Vec<Tool> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = [
        "tests/fixtures/mcp/everything.json",
        "tests/fixtures/mcp/filesystem.json",
        "tests/fixtures/mcp/memory.json",
        "policies/mcp/bland_call.json",
        "policies/mcp/bland_read.json",
        "policies/mcp/gmail_read.json",
    ];
    let templates: Vec<Value> = files
        .iter()
        .flat_map(|file| {
            let text = std::fs::read_to_string(root.join(file)).expect(file);
            let listing: Value = serde_json::from_str(&text).expect(file);
            listing["tools"].as_array().expect("tools").clone()
        })
        .collect();
    let teams = [
        "billing", "support", "research", "ops", "legal", "sales", "infra",
    ];
    let regions = ["eu", "us", "apac", "staging", "archive", "sandbox"];
    let purposes = [
        "Kept for the quarterly audit.",
        "Mirrors the production tenant.",
        "Read-only replica used by reporting.",
        "Scoped to the customer success workspace.",
        "Rate limited to 10 calls a minute.",
    ];
    (0..ENTRIES)
        .map(|i| {
            let t = &templates[i % templates.len()];
            let s = i / templates.len();
            let server = format!(
                "{}_{}{s}",
                teams[s % teams.len()],
                regions[s % regions.len()]
            );
            Tool {
                name: format!("mcp.{server}.{}", t["name"].as_str().expect("name")),
                description: format!(
                    "{} {}",
                    t["description"].as_str().unwrap_or(""),
                    purposes[s % purposes.len()]
                ),
                input_schema: t.get("inputSchema").map(muster::schema::Schema::new),
            }
        })
        .collect()
}

pub fn entries(tools: &[Tool]) -> impl Iterator<Item = Entry<'_>> {
    tools.iter().map(|t| Entry {
        name: &t.name,
        description: &t.description,
        input_schema: t.input_schema.as_ref(),
    })
}
