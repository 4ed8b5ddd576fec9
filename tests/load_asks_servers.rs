//! Issue 35 item 3, held out: the control tool's decisions on plain asks over twenty real
//! servers' whole listings (348 tools), which no rule or threshold was chosen on. The
//! asks were written, with the tools that serve them, from the servers' tool names before
//! muster answered any of them (the commit that added this file holds no result).
//!
//! The servers and the judging: `tests/common/twenty.rs`, `tests/common/load_asks.rs`.

mod common;

use common::load_asks::{Ask, ask};
use common::twenty::{CLICK, SCREENSHOT, held_out};

const NOW: &[&str] = &["mcp.time.get_current_time"];
const NAVIGATE: &[&str] = &[
    "mcp.playwright.browser_navigate",
    "mcp.puppeteer.puppeteer_navigate",
];

/// The held-out asks.
const ASKS: &[Ask] = &[
    ask("what's today's date", &[], NOW),
    ask(
        "which files have I modified",
        &[],
        &["mcp.git.git_status", "mcp.git.git_diff_unstaged"],
    ),
    ask(
        "list pods in the cluster",
        &[],
        &["mcp.kubernetes.kubectl_get"],
    ),
    ask(
        "show the logs of the api pod",
        &[],
        &["mcp.kubernetes.kubectl_logs"],
    ),
    ask(
        "scale the web deployment to 3 replicas",
        &[],
        &["mcp.kubernetes.kubectl_scale"],
    ),
    ask(
        "install the nginx helm chart",
        &[],
        &["mcp.kubernetes.install_helm_chart"],
    ),
    ask(
        "delete the failed pod",
        &[],
        &["mcp.kubernetes.kubectl_delete"],
    ),
    ask(
        "forward port 8080 of the service to my machine",
        &[],
        &["mcp.kubernetes.port_forward"],
    ),
    ask("open example.com in the browser", &[], NAVIGATE),
    ask("take a screenshot of the page", &[], SCREENSHOT),
    ask("click the login button", &[], CLICK),
    ask(
        "fill in the signup form",
        &[],
        &[
            "mcp.playwright.browser_fill_form",
            "mcp.puppeteer.puppeteer_fill",
        ],
    ),
    ask(
        "search the web for rust async runtimes",
        &[],
        &[
            "mcp.brave.brave_web_search",
            "mcp.firecrawl.firecrawl_search",
        ],
    ),
    ask(
        "find coffee shops near me",
        &[],
        &[
            "mcp.brave.brave_local_search",
            "mcp.maps.maps_search_places",
        ],
    ),
    ask(
        "get driving directions from Boston to New York",
        &[],
        &["mcp.maps.maps_directions"],
    ),
    ask(
        "what are the coordinates of the Eiffel Tower",
        &[],
        &["mcp.maps.maps_geocode"],
    ),
    ask(
        "download the contents of this URL as markdown",
        &[],
        &["mcp.fetch.fetch", "mcp.firecrawl.firecrawl_scrape"],
    ),
    ask(
        "crawl the whole docs site",
        &[],
        &["mcp.firecrawl.firecrawl_crawl"],
    ),
    ask(
        "open an issue about the crash on GitHub",
        &[],
        &["mcp.github.create_issue"],
    ),
    ask(
        "create a pull request for my branch",
        &[],
        &["mcp.github.create_pull_request"],
    ),
    ask(
        "merge the pull request",
        &[],
        &["mcp.github.merge_pull_request"],
    ),
    ask(
        "search GitHub for repositories about MCP gateways",
        &[],
        &["mcp.github.search_repositories"],
    ),
    ask(
        "create a merge request on GitLab",
        &[],
        &["mcp.gitlab.create_merge_request"],
    ),
    ask(
        "post a message in the #general channel",
        &[],
        &["mcp.slack.slack_post_message"],
    ),
    ask(
        "react with a thumbs up to that Slack message",
        &[],
        &["mcp.slack.slack_add_reaction"],
    ),
    ask(
        "who is in the Slack workspace",
        &[],
        &["mcp.slack.slack_get_users"],
    ),
    ask(
        "run a SQL query against the database",
        &[],
        &["mcp.postgres.query"],
    ),
    ask(
        "send an email to the team about the release",
        &[],
        &["mcp.resend.send-email"],
    ),
    ask(
        "add a new contact to the mailing list",
        &[],
        &["mcp.resend.create-contact"],
    ),
    ask(
        "send the newsletter broadcast",
        &[],
        &["mcp.resend.send-broadcast"],
    ),
    ask(
        "create a Notion page for meeting notes",
        &[],
        &["mcp.notion.API-post-page"],
    ),
    ask(
        "search my Notion workspace for the roadmap",
        &[],
        &["mcp.notion.API-post-search"],
    ),
    ask(
        "comment on the Notion page",
        &[],
        &["mcp.notion.API-create-a-comment"],
    ),
    ask(
        "think through this problem step by step",
        &[],
        &["mcp.thinking.sequentialthinking"],
    ),
    ask(
        "list my Azure storage accounts",
        &[],
        &["mcp.azure.storage"],
    ),
    ask("query the Kusto cluster", &[], &["mcp.azure.kusto"]),
    ask(
        "list the Azure subscriptions I can use",
        &[],
        &["mcp.azure.subscription_list"],
    ),
    ask("get the Cosmos DB containers", &[], &["mcp.azure.cosmos"]),
    ask(
        "read the file notes.txt",
        &[],
        &["mcp.filesystem.read_text_file", "mcp.filesystem.read_file"],
    ),
    ask(
        "remember that Alice works at Acme",
        &[],
        &["mcp.memory.create_entities", "mcp.memory.add_observations"],
    ),
    ask(
        "commit the staged changes with a message",
        &[],
        &["mcp.git.git_commit"],
    ),
    ask(
        "show the last five commits",
        &[],
        &["mcp.git.git_log", "mcp.github.list_commits"],
    ),
    ask(
        "convert 9am Tokyo time to Berlin time",
        &[],
        &["mcp.time.convert_time"],
    ),
    ask("book a flight to Paris", &[], &[]),
    ask("turn off the living room lights", &[], &[]),
    ask("order a pizza", &[], &[]),
];

/// A second batch of held-out asks, written after the first batch's answers were read and
/// before any change they led to: the first batch then no longer judges such a change, this
/// one does.
const ASKS_2: &[Ask] = &[
    ask("what time is it in Sydney right now", &[], NOW),
    ask("what day of the week is it", &[], NOW),
    ask(
        "show me what changed in my working tree",
        &[],
        &[
            "mcp.git.git_diff_unstaged",
            "mcp.git.git_status",
            "mcp.git.git_diff",
        ],
    ),
    ask("throw away the staged changes", &[], &["mcp.git.git_reset"]),
    ask(
        "describe the payments deployment",
        &[],
        &["mcp.kubernetes.kubectl_describe"],
    ),
    ask(
        "apply this manifest to the cluster",
        &[],
        &["mcp.kubernetes.kubectl_apply"],
    ),
    ask(
        "run a shell command inside the container",
        &[],
        &["mcp.kubernetes.exec_in_pod"],
    ),
    ask(
        "roll back the last deployment",
        &[],
        &["mcp.kubernetes.kubectl_rollout"],
    ),
    ask(
        "go back to the previous page",
        &[],
        &["mcp.playwright.browser_navigate_back"],
    ),
    ask(
        "type my username into the field",
        &[],
        &[
            "mcp.playwright.browser_type",
            "mcp.puppeteer.puppeteer_fill",
        ],
    ),
    ask(
        "run some javascript on the page",
        &[],
        &[
            "mcp.playwright.browser_evaluate",
            "mcp.puppeteer.puppeteer_evaluate",
        ],
    ),
    ask("close the browser", &[], &["mcp.playwright.browser_close"]),
    ask(
        "how far is it from Chicago to Denver",
        &[],
        &["mcp.maps.maps_distance_matrix", "mcp.maps.maps_directions"],
    ),
    ask(
        "what is the address at these coordinates",
        &[],
        &["mcp.maps.maps_reverse_geocode"],
    ),
    ask(
        "get a list of all the pages on the website",
        &[],
        &["mcp.firecrawl.firecrawl_map"],
    ),
    ask(
        "find papers about retrieval augmented generation",
        &[],
        &["mcp.firecrawl.firecrawl_research_search_papers"],
    ),
    ask(
        "list the open issues in the repo",
        &[],
        &["mcp.github.list_issues", "mcp.github.search_issues"],
    ),
    ask(
        "fork the repository to my account",
        &[],
        &["mcp.github.fork_repository", "mcp.gitlab.fork_repository"],
    ),
    ask(
        "read the contents of a file in the GitHub repo",
        &[],
        &["mcp.github.get_file_contents"],
    ),
    ask(
        "reply in the thread",
        &[],
        &["mcp.slack.slack_reply_to_thread"],
    ),
    ask(
        "read the recent messages in the channel",
        &[],
        &["mcp.slack.slack_get_channel_history"],
    ),
    ask(
        "verify our sending domain",
        &[],
        &["mcp.resend.verify-domain"],
    ),
    ask(
        "create an email template",
        &[],
        &["mcp.resend.create-template"],
    ),
    ask("list the emails we sent", &[], &["mcp.resend.list-emails"]),
    ask(
        "add a paragraph to the Notion page",
        &[],
        &[
            "mcp.notion.API-patch-block-children",
            "mcp.notion.API-update-page-markdown",
        ],
    ),
    ask(
        "query the Notion database for open tasks",
        &[],
        &["mcp.notion.API-query-data-source"],
    ),
    ask(
        "list the secrets in my key vault",
        &[],
        &["mcp.azure.keyvault"],
    ),
    ask(
        "show the resource groups in my subscription",
        &[],
        &["mcp.azure.group_list"],
    ),
    ask(
        "how much does an Azure VM cost",
        &[],
        &["mcp.azure.pricing"],
    ),
    ask(
        "fetch the page at https://example.com",
        &[],
        &["mcp.fetch.fetch", "mcp.firecrawl.firecrawl_scrape"],
    ),
    ask(
        "list the tables in the database",
        &[],
        &["mcp.postgres.query"],
    ),
    ask("add two numbers", &[], &["mcp.everything.get-sum"]),
    ask("write a poem about autumn", &[], &[]),
    ask("call my mom", &[], &[]),
    ask("translate this sentence into French", &[], &[]),
];

#[test]
fn the_control_tool_decides_held_out_asks_over_twenty_servers() {
    held_out(ASKS);
}

#[test]
fn the_control_tool_decides_a_second_batch_of_held_out_asks() {
    held_out(ASKS_2);
}
