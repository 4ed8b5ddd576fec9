//! Issue 35 item 3, held out: a third batch of plain asks over the twenty real servers of
//! `tests/common/twenty.rs`, judged as `tests/common/load_asks.rs` says. The asks were
//! written, with the tools that serve them, from the servers' tool names before muster
//! answered any of them and before the ranking change the first two batches
//! (`tests/load_asks_servers.rs`) led to was written: those two batches are now what that
//! change was chosen on, and this one is what it is reported on (docs/session.md).

mod common;

use common::load_asks::{Ask, ask};
use common::twenty::{CLICK, SCREENSHOT, held_out};

/// The third batch, written from the servers' tool names on 2026-12-06 before the change
/// the first two batches' misses led to (a request's leading verb and the tools' own
/// operations) was written or run; the first two batches are what that change was chosen on.
const ASKS_3: &[Ask] = &[
    ask(
        "stage README.md for the next commit",
        &[],
        &["mcp.git.git_add"],
    ),
    ask(
        "switch to the feature branch",
        &[],
        &["mcp.git.git_checkout"],
    ),
    ask(
        "make a new branch called hotfix",
        &[],
        &[
            "mcp.git.git_create_branch",
            "mcp.github.create_branch",
            "mcp.gitlab.create_branch",
        ],
    ),
    ask(
        "what changed in the last commit",
        &[],
        &["mcp.git.git_show", "mcp.git.git_log", "mcp.git.git_diff"],
    ),
    ask("unstage everything", &[], &["mcp.git.git_reset"]),
    ask(
        "rename report.txt to final.txt",
        &[],
        &["mcp.filesystem.move_file"],
    ),
    ask(
        "make a folder called backups",
        &[],
        &["mcp.filesystem.create_directory"],
    ),
    ask(
        "show me what's in the src directory",
        &[],
        &[
            "mcp.filesystem.list_directory",
            "mcp.filesystem.list_directory_with_sizes",
            "mcp.filesystem.directory_tree",
        ],
    ),
    ask(
        "find every markdown file in the project",
        &[],
        &["mcp.filesystem.search_files"],
    ),
    ask(
        "save these notes to notes.md",
        &[],
        &["mcp.filesystem.write_file"],
    ),
    ask(
        "what time is it in Sydney",
        &[],
        &["mcp.time.get_current_time"],
    ),
    ask("take a screenshot of the page", &[], SCREENSHOT),
    ask("click the submit button", &[], CLICK),
    ask(
        "pick Canada in the country dropdown",
        &[],
        &[
            "mcp.playwright.browser_select_option",
            "mcp.puppeteer.puppeteer_select",
        ],
    ),
    ask("press enter", &[], &["mcp.playwright.browser_press_key"]),
    ask(
        "upload my resume to the form",
        &[],
        &["mcp.playwright.browser_file_upload"],
    ),
    ask(
        "scale the web deployment to 5 replicas",
        &[],
        &["mcp.kubernetes.kubectl_scale"],
    ),
    ask(
        "show me the logs of the api pod",
        &[],
        &["mcp.kubernetes.kubectl_logs"],
    ),
    ask(
        "install the redis helm chart",
        &[],
        &["mcp.kubernetes.install_helm_chart"],
    ),
    ask(
        "delete the failed job in kubernetes",
        &[],
        &["mcp.kubernetes.kubectl_delete"],
    ),
    ask(
        "forward port 8080 from the pod to my machine",
        &[],
        &["mcp.kubernetes.port_forward"],
    ),
    ask(
        "extract the prices from these product pages",
        &[],
        &[
            "mcp.firecrawl.firecrawl_extract",
            "mcp.firecrawl.firecrawl_scrape",
        ],
    ),
    ask(
        "check on my crawl job",
        &[],
        &["mcp.firecrawl.firecrawl_check_crawl_status"],
    ),
    ask(
        "watch this page and tell me when it changes",
        &[],
        &["mcp.firecrawl.firecrawl_monitor_create"],
    ),
    ask(
        "look up the latest news on the web",
        &[],
        &[
            "mcp.brave.brave_web_search",
            "mcp.firecrawl.firecrawl_search",
        ],
    ),
    ask(
        "find a pharmacy nearby",
        &[],
        &[
            "mcp.brave.brave_local_search",
            "mcp.maps.maps_search_places",
        ],
    ),
    ask(
        "how high above sea level is Denver",
        &[],
        &["mcp.maps.maps_elevation"],
    ),
    ask(
        "what are the opening hours of that restaurant",
        &[],
        &["mcp.maps.maps_place_details"],
    ),
    ask(
        "who reviewed my pull request",
        &[],
        &["mcp.github.get_pull_request_reviews"],
    ),
    ask(
        "what files does pull request 42 touch",
        &[],
        &["mcp.github.get_pull_request_files"],
    ),
    ask(
        "leave a comment on issue 7",
        &[],
        &["mcp.github.add_issue_comment"],
    ),
    ask(
        "find code that calls parse_config on GitHub",
        &[],
        &["mcp.github.search_code"],
    ),
    ask(
        "start a new repository for the project",
        &[],
        &[
            "mcp.github.create_repository",
            "mcp.gitlab.create_repository",
        ],
    ),
    ask(
        "list the Slack channels",
        &[],
        &["mcp.slack.slack_list_channels"],
    ),
    ask(
        "get Bob's Slack profile",
        &[],
        &["mcp.slack.slack_get_user_profile"],
    ),
    ask(
        "schedule an email for tomorrow morning",
        &[],
        &["mcp.resend.send-email"],
    ),
    ask(
        "create an API key for the staging app",
        &[],
        &["mcp.resend.create-api-key"],
    ),
    ask(
        "set up a webhook for bounced emails",
        &[],
        &["mcp.resend.create-webhook"],
    ),
    ask(
        "cancel the scheduled email",
        &[],
        &["mcp.resend.cancel-email"],
    ),
    ask(
        "who am I logged in as in Notion",
        &[],
        &["mcp.notion.API-get-self"],
    ),
    ask(
        "delete that block from the Notion page",
        &[],
        &["mcp.notion.API-delete-a-block"],
    ),
    ask(
        "move the page under the Projects page",
        &[],
        &["mcp.notion.API-move-page"],
    ),
    ask(
        "what do we know about Alice",
        &[],
        &[
            "mcp.memory.search_nodes",
            "mcp.memory.open_nodes",
            "mcp.memory.read_graph",
        ],
    ),
    ask(
        "forget that Bob lives in Paris",
        &[],
        &["mcp.memory.delete_observations"],
    ),
    ask(
        "link Alice to Acme as an employee",
        &[],
        &["mcp.memory.create_relations"],
    ),
    ask(
        "how many active users do we have in the database",
        &[],
        &["mcp.postgres.query"],
    ),
    ask(
        "list my container registries in Azure",
        &[],
        &["mcp.azure.acr"],
    ),
    ask(
        "check the health of my Azure resources",
        &[],
        &["mcp.azure.resourcehealth"],
    ),
    ask(
        "deploy my app to Azure",
        &[],
        &["mcp.azure.deploy", "mcp.azure.azd", "mcp.azure.appservice"],
    ),
    ask("echo back hello", &[], &["mcp.everything.echo"]),
    ask(
        "get the text of this web page",
        &[],
        &["mcp.fetch.fetch", "mcp.firecrawl.firecrawl_scrape"],
    ),
    ask(
        "think hard about how to design this schema",
        &[],
        &["mcp.thinking.sequentialthinking"],
    ),
    ask("set an alarm for 7am", &[], &[]),
    ask("play some jazz music", &[], &[]),
    ask("transfer $50 to my savings account", &[], &[]),
];

#[test]
fn the_control_tool_decides_a_third_batch_of_held_out_asks() {
    held_out(ASKS_3);
}
