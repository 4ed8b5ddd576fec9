//! The control tool's decisions on labelled plain asks (issue 35 item 3), judged one way for
//! every set of asks: a policy directory over recorded `tools/list` listings with one
//! server's tools offered and the rest deferred behind `tools.load`, each ask loaded into a
//! fresh session through the session API (`session::new`, `session::open`, `Live::load`)
//! after the loads it names, and the answer, read back as JSON, judged against the tools the
//! ask needs: a load of one of them, a choice holding one, "already offered" or "already
//! loaded" naming one that is, and "nothing found" only for an ask no tool serves, naming
//! every server.

use super::load_notes::Note;
use muster::catalog::Selection;
use muster::contract::NameSpelling;
use muster::policy::Inputs;
use muster::session::{self, LoadRequest, NewSession, Opened, SessionKeys};
use muster::tokens::TokenCache;
use serde::Deserialize;
use std::path::Path;

/// One plain ask: loaded into a session that has loaded `before` first; `expect` are the
/// tools that serve it (full names), none for an ask no tool serves.
pub struct Ask {
    pub ask: &'static str,
    pub before: &'static [&'static str],
    pub expect: &'static [&'static str],
}

pub const fn ask(
    ask: &'static str,
    before: &'static [&'static str],
    expect: &'static [&'static str],
) -> Ask {
    Ask {
        ask,
        before,
        expect,
    }
}

/// A policy directory over the recorded listings `servers` (name, file under the crate
/// root), in that order: the first server ranks first and its `offered` tools are offered
/// beside the control tool; every other tool is deferred.
pub fn policies(servers: &[(&str, &str)], offered: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("mcp")).unwrap();
    std::fs::write(
        root.join("muster.toml"),
        format!(
            "[caps]\nitems = {}\ntokens = 9000\n\n[deferral]\nenabled = true\ncontrol_tool = \"tools.load\"\n\n\
             [lock]\non_mismatch = \"warn\"\n\n[[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n",
            offered + 1
        ),
    )
    .unwrap();
    let mut blocks = String::new();
    for (n, (name, file)) in servers.iter().enumerate() {
        let listing = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        std::fs::copy(listing, root.join("mcp").join(format!("{name}.json"))).unwrap();
        blocks.push_str(&format!(
            "[[mcp]]\nname = \"{name}\"\nsnapshot = \"{name}.json\"\n{}\n",
            if n == 0 { "priority = 10\n" } else { "" }
        ));
    }
    std::fs::write(root.join("mcp/servers.toml"), blocks).unwrap();
    dir
}

/// The load answer, read back by the tests' own types.
#[derive(Debug, Deserialize)]
struct Answer {
    status: String,
    loaded: Vec<String>,
    notes: Vec<Note>,
    answer: String,
}

/// Why `answer` is not the right decision for `ask`, given the tools the chat is offered
/// and the servers it reaches; `None` when it is.
fn wrong(
    ask: &Ask,
    answer: &Answer,
    offered: &[String],
    servers: &[(&str, &str)],
) -> Option<String> {
    let ready = |name: &str| offered.iter().any(|o| o == name) || ask.before.contains(&name);
    let wanted = |name: &str| ask.expect.contains(&name);
    // Claims of what is there hold whatever the ask.
    for note in &answer.notes {
        let name = note.name.as_deref().unwrap_or_default();
        match note.code.as_str() {
            "already-loaded" if !ask.before.contains(&name) => {
                return Some(format!("says {name} is loaded; it is not"));
            }
            "already-offered" if !offered.iter().any(|o| o == name) => {
                return Some(format!("says {name} is offered; it is not"));
            }
            _ => {}
        }
        for o in &note.options {
            if o.loaded != ask.before.contains(&o.name.as_str())
                || o.offered != offered.contains(&o.name)
            {
                return Some(format!("marks option {} wrongly", o.name));
            }
        }
    }
    // "Nothing found" lists every server the chat can reach, offered or deferred.
    for note in answer.notes.iter().filter(|n| n.code == "nothing-found") {
        let kinds: Vec<String> = servers.iter().map(|(s, _)| format!("mcp.{s}")).collect();
        if let Some(left_out) = kinds.iter().find(|k| !note.kinds.contains(k)) {
            return Some(format!("nothing found, kinds without {left_out}"));
        }
    }
    if ask.expect.is_empty() {
        return match answer.notes.as_slice() {
            [n] if n.code == "nothing-found" => None,
            _ => Some(format!("{}: {}", answer.status, answer.answer)),
        };
    }
    let right = match answer.status.as_str() {
        "loaded" => answer.loaded.iter().all(|t| wanted(t)),
        "choose" => answer
            .notes
            .iter()
            .flat_map(|n| &n.options)
            .any(|o| wanted(&o.name)),
        "unchanged" => answer.notes.iter().all(|n| {
            let name = n.name.as_deref().unwrap_or_default();
            wanted(name) && ready(name)
        }),
        _ => false,
    };
    (!right).then(|| format!("{}: {}", answer.status, answer.answer))
}

/// How a set of asks was decided: the tools the chat was offered, and the asks decided
/// wrongly (index, what was asked and why it is wrong).
pub struct Decided {
    pub offered: Vec<String>,
    pub misses: Vec<(usize, String)>,
}

/// Each of `asks` decided in a fresh session over `servers` (the first one's `offered`
/// tools offered, as [`policies`]), each answer printed and judged.
pub fn decide(asks: &[Ask], servers: &[(&str, &str)], offered: usize) -> Decided {
    let dir = policies(servers, offered);
    let inputs = Inputs::load(dir.path()).expect("the policies load");
    let keys = SessionKeys::none();
    let mut cache = TokenCache::in_memory();
    let options = NewSession {
        names: NameSpelling::Muster,
        ..NewSession::default()
    };
    let doc = session::new(&inputs, &Selection::default(), &options, &keys, &mut cache).unwrap();
    let offered: Vec<String> = doc.roster.iter().map(|t| t.name.clone()).collect();
    let mut misses = Vec::new();
    for (n, ask) in asks.iter().enumerate() {
        let file = Path::new("s.json");
        let Opened::Live(mut live) =
            session::open(&inputs, doc.clone(), &keys, file, &mut cache).unwrap()
        else {
            panic!("the pin holds");
        };
        if !ask.before.is_empty() {
            let names = ask.before.iter().map(|s| s.to_string()).collect();
            let before = live.load(&LoadRequest::Names(names));
            assert_eq!(before.loaded, ask.before, "{}", before.answer);
        }
        let answer = live.load(&LoadRequest::Query(ask.ask.to_string()));
        let answer: Answer =
            serde_json::from_value(serde_json::to_value(&answer).unwrap()).expect("a load answer");
        println!("{:?} (after {:?}) → {}", ask.ask, ask.before, answer.answer);
        if let Some(why) = wrong(ask, &answer, &offered, servers) {
            misses.push((n, format!("{:?} (after {:?}) → {why}", ask.ask, ask.before)));
        }
    }
    let right = asks.len() - misses.len();
    println!(
        "decided right: {right} of {} ({:.1} %)",
        asks.len(),
        100.0 * right as f64 / asks.len() as f64
    );
    for (_, miss) in &misses {
        println!("  miss: {miss}");
    }
    Decided { offered, misses }
}
