//! Twenty real servers' whole listings (348 tools) for the held-out asks of issue 35 item 3
//! (`tests/load_asks_servers.rs`, `tests/load_asks_third.rs`): the npm packages
//! `@playwright/mcp`, `@notionhq/notion-mcp-server`, `firecrawl-mcp`, `resend-mcp`,
//! `mcp-server-kubernetes`, `@azure/mcp` (its 61 namespace tools), the reference servers
//! GitHub, GitLab, Slack, Puppeteer, Brave Search, Postgres, Google Maps and sequential
//! thinking, the PyPI `mcp-server-fetch` (`tests/fixtures/mcp-asks/`), and the five of
//! `tests/load_asks.rs`. The time server's two tools are offered; the rest are deferred.

use super::load_asks::{Ask, decide};

/// What a screenshot ask is served by: either browser server's tool.
pub const SCREENSHOT: &[&str] = &[
    "mcp.playwright.browser_take_screenshot",
    "mcp.puppeteer.puppeteer_screenshot",
];
/// What a click ask is served by: either browser server's tool.
pub const CLICK: &[&str] = &[
    "mcp.playwright.browser_click",
    "mcp.puppeteer.puppeteer_click",
];

pub const SERVERS: &[(&str, &str)] = &[
    ("time", "tests/fixtures/mcp-real/mcp-server-time.json"),
    ("git", "tests/fixtures/mcp-real/mcp-server-git.json"),
    ("filesystem", "tests/fixtures/mcp/filesystem.json"),
    ("memory", "tests/fixtures/mcp/memory.json"),
    ("everything", "tests/fixtures/mcp/everything.json"),
    ("playwright", "tests/fixtures/mcp-asks/playwright.json"),
    ("notion", "tests/fixtures/mcp-asks/notion.json"),
    ("firecrawl", "tests/fixtures/mcp-asks/firecrawl.json"),
    ("resend", "tests/fixtures/mcp-asks/resend.json"),
    ("kubernetes", "tests/fixtures/mcp-asks/kubernetes.json"),
    ("thinking", "tests/fixtures/mcp-asks/thinking.json"),
    ("github", "tests/fixtures/mcp-asks/github.json"),
    ("puppeteer", "tests/fixtures/mcp-asks/puppeteer.json"),
    ("brave", "tests/fixtures/mcp-asks/brave.json"),
    ("slack", "tests/fixtures/mcp-asks/slack.json"),
    ("postgres", "tests/fixtures/mcp-asks/postgres.json"),
    ("gitlab", "tests/fixtures/mcp-asks/gitlab.json"),
    ("maps", "tests/fixtures/mcp-asks/maps.json"),
    ("azure", "tests/fixtures/mcp-asks/azure.json"),
    ("fetch", "tests/fixtures/mcp-asks/fetch.json"),
];

/// Decides `asks` over [`SERVERS`] and holds what muster itself claims true whatever the
/// ranking: "already loaded/offered" names only what is, a choice marks its options truly,
/// "nothing found" names every server, and asks no tool serves find nothing.
pub fn held_out(asks: &[Ask]) {
    let decided = decide(asks, SERVERS, 2);
    assert_eq!(
        decided.offered,
        [
            "tools.load",
            "mcp.time.convert_time",
            "mcp.time.get_current_time"
        ]
    );
    for (n, miss) in &decided.misses {
        let claim = ["says ", "marks option", "kinds without"]
            .iter()
            .any(|c| miss.contains(c));
        assert!(!claim && !asks[*n].expect.is_empty(), "{miss}");
    }
}
