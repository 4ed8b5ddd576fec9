//! Reading a server's lists once the handshake is done: every
//! `tools/list` page (with discovery's limits on tools and pages, and its
//! rules for a listing), then the instructions, resources and prompts it
//! offers as [`ServerNotes`]. It decides when a listing is complete, too
//! large or invalid; it never starts or stops the server.

use std::collections::BTreeSet;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use super::super::{Event, MAX_PAGES, MAX_TOOLS, ServerSpec};
use super::{LISTING, Listing, Open, Watch, open};
use crate::contract::FailureReason;
use crate::mcp_client::Failure;
use crate::names::escape;
use crate::snapshot::{Checker, ListedTool, MAX_INSTRUCTIONS_CHARS, MAX_NOTED, ServerNotes};

pub(in crate::discover) async fn run(
    spec: &ServerSpec,
    watch: &Watch,
    events: &UnboundedSender<Event>,
) -> Result<Listing, Failure> {
    let mut open = open(spec, watch).await?;
    let _ = events.send(Event::Initialized {
        server: spec.name.clone(),
        server_info: open.server_info.clone(),
    });
    watch.set_phase(LISTING);
    let result = list_all(spec, &mut open, watch, events).await;
    let notes = match &result {
        Ok(_) => noted(&mut open, watch).await,
        Err(_) => ServerNotes::default(),
    };
    let server_info = open.server_info.clone();
    open.close(watch).await;
    let (tools, pages) = result?;
    Ok(Listing {
        tools,
        pages,
        server_info,
        notes,
    })
}

/// The server's instructions, resources and prompts ([`ServerNotes`]):
/// each list read when the server offers it, page by page up to
/// [`MAX_PAGES`] and [`MAX_NOTED`] entries. A list that fails is left out
/// and said so in `left_out`; the tools are recorded all the same.
async fn noted(open: &mut Open, watch: &Watch) -> ServerNotes {
    let mut notes = ServerNotes {
        instructions: open
            .instructions
            .as_ref()
            .filter(|i| !i.trim().is_empty())
            .map(|i| i.chars().take(MAX_INSTRUCTIONS_CHARS).collect()),
        ..ServerNotes::default()
    };
    if open.offers.0 {
        watch.set_phase("listing resources");
        match list_pages(open, watch, "resources").await {
            Ok(items) => {
                let (kept, past) = noted_items(items, |v| serde_json::from_value(v).ok());
                notes.resources = kept;
                if past > 0 {
                    notes
                        .left_out
                        .push(format!("resources: {past} past {MAX_NOTED}"));
                }
            }
            Err(why) => notes
                .left_out
                .push(format!("resources: {}", watch.redact(&why))),
        }
    }
    if open.offers.1 {
        watch.set_phase("listing prompts");
        match list_pages(open, watch, "prompts").await {
            Ok(items) => {
                let (kept, past) = noted_items(items, |v| serde_json::from_value(v).ok());
                notes.prompts = kept;
                if past > 0 {
                    notes
                        .left_out
                        .push(format!("prompts: {past} past {MAX_NOTED}"));
                }
            }
            Err(why) => notes
                .left_out
                .push(format!("prompts: {}", watch.redact(&why))),
        }
    }
    notes
}

/// The first [`MAX_NOTED`] items `read` makes something of, and how many
/// more there were.
fn noted_items<T>(items: Vec<Value>, read: impl Fn(Value) -> Option<T>) -> (Vec<T>, usize) {
    let total = items.len();
    let kept: Vec<T> = items.into_iter().filter_map(read).take(MAX_NOTED).collect();
    let past = total.saturating_sub(MAX_NOTED);
    (kept, past)
}

/// Every item of the paginated list `key` (`resources`, `prompts`), or
/// why it could not be read.
async fn list_pages(open: &mut Open, watch: &Watch, key: &str) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    let mut cursor = None;
    let mut cursors = BTreeSet::new();
    for page in 1..=MAX_PAGES {
        let mut result = open
            .request(
                watch,
                &format!("{key}/list"),
                &paginated(cursor.as_deref()),
                &format!("{key}/list page {page}"),
            )
            .await
            .map_err(|f| f.message)?;
        let Some(result) = result.as_object_mut() else {
            return Err(format!("{key}/list page {page} has no result"));
        };
        if let Some(Value::Array(list)) = result.remove(key) {
            items.extend(list);
        }
        if items.len() > MAX_NOTED {
            break;
        }
        cursor = match result.get("nextCursor") {
            Some(Value::String(c)) if cursors.insert(c.clone()) => Some(c.clone()),
            Some(Value::String(_)) => return Err(format!("{key}/list repeats a cursor")),
            _ => return Ok(items),
        };
    }
    Ok(items)
}

/// A list request's params: `{}`, or the cursor to go on from.
fn paginated(cursor: Option<&str>) -> String {
    match cursor {
        None => "{}".into(),
        Some(c) => serde_json::json!({ "cursor": c }).to_string(),
    }
}

/// A failure for breaking one of the listing's limits.
fn too_large(message: String, help: &str) -> Failure {
    Failure {
        reason: FailureReason::ListingTooLarge,
        help: Some(help.into()),
        ..Failure::new(message)
    }
}

async fn list_all(
    spec: &ServerSpec,
    open: &mut Open,
    watch: &Watch,
    events: &UnboundedSender<Event>,
) -> Result<(Vec<ListedTool>, usize), Failure> {
    let mut listed = Checker::default();
    let mut cursor: Option<String> = None;
    let mut cursors = BTreeSet::new();
    let mut pages = 0;
    loop {
        let what = format!("tools/list page {}", pages + 1);
        let mut response = open
            .request(watch, "tools/list", &paginated(cursor.as_deref()), &what)
            .await?;
        let Some(result) = response.as_object_mut() else {
            return Err(Failure::new(format!(
                "answered {what} without a result object: {}",
                escape(&response.to_string())
            )));
        };
        let Some(Value::Array(tools)) = result.remove("tools") else {
            return Err(Failure::new(format!(
                "answered tools/list page {} without a `tools` array",
                pages + 1
            )));
        };
        pages += 1;
        if listed.len() + tools.len() > MAX_TOOLS {
            return Err(too_large(
                format!(
                    "listed more than {} tools (tools/list page {pages}); muster reads at most {} tools from a server",
                    group_digits(MAX_TOOLS),
                    group_digits(MAX_TOOLS)
                ),
                "split the server's tools across servers",
            ));
        }
        tools.into_iter().for_each(|tool| listed.push(tool));
        watch
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pages = pages;
        let _ = events.send(Event::Page {
            server: spec.name.clone(),
            page: pages,
            tools_so_far: listed.len(),
        });
        cursor = match result.get("nextCursor") {
            None | Some(Value::Null) => break,
            Some(Value::String(c)) => Some(c.clone()),
            Some(other) => {
                return Err(Failure::new(format!(
                    "gave a nextCursor that is not a string: {}",
                    escape(&other.to_string())
                )));
            }
        };
        let c = cursor.clone().unwrap_or_default();
        if pages >= MAX_PAGES {
            return Err(too_large(
                format!(
                    "still paginating after {} pages; muster reads at most {} tools/list pages from a server",
                    group_digits(MAX_PAGES),
                    group_digits(MAX_PAGES)
                ),
                "have the server return more tools per page",
            ));
        }
        if !cursors.insert(c.clone()) {
            return Err(Failure::new(format!(
                "keeps paginating (cursor `{}` repeated after {pages} pages)",
                escape(&c)
            )));
        }
    }
    let tools = listed.finish().map_err(|problems| Failure {
        reason: FailureReason::InvalidListing,
        message: problems.join("; "),
        help: Some("fix the server, or pin a version that lists valid tools".into()),
        tools: problems,
        code: "",
    })?;
    Ok((tools, pages))
}

/// `n` with a comma between each group of three digits, as the docs write
/// the limits.
fn group_digits(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}
