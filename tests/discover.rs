//! Discovery against real stdio MCP servers: the three pinned reference
//! servers from npm, a scripted server for pagination and bad listings, and
//! plain programs that are not MCP servers at all.
//!
//! Needs node and npm; the pinned servers are installed on first use. Without them these
//! tests fail and say so rather than skip. With `MUSTER_RECORD_FIXTURES=1`
//! the reference test also refreshes `tests/fixtures/mcp/`.

mod common;

use common::reference_server;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use muster::ErrorKind;
use muster::discover::{Discovered, Event, ServerOutcome, ServerSpec, discover, read_snapshot};
use muster::narrow::{NarrowOutcome, Narrowing, narrow_tool};
use serde_json::{Value, json};

fn servers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers")
}

fn spec(name: &str, command: &[&str], dir: &Path) -> ServerSpec {
    let mut s = ServerSpec::new(
        name,
        command.iter().map(|s| s.to_string()).collect(),
        dir.join(format!("{name}.json")),
    );
    s.timeout = Duration::from_secs(60);
    s
}

fn reference_specs(dir: &Path, allowed: &Path) -> Vec<ServerSpec> {
    let everything = reference_server("server-everything");
    let filesystem = reference_server("server-filesystem");
    let memory = reference_server("server-memory");
    let mut memory = spec("memory", &["node", &memory], dir);
    // server-memory keeps its graph in a file; keep it out of the tree.
    memory.env.insert(
        "MEMORY_FILE_PATH".into(),
        dir.join("memory.jsonl").to_string_lossy().into_owned(),
    );
    vec![
        spec("everything", &["node", &everything, "stdio"], dir),
        spec(
            "filesystem",
            &["node", &filesystem, &allowed.to_string_lossy()],
            dir,
        ),
        memory,
    ]
}

fn ok(outcome: &ServerOutcome) -> &Discovered {
    match &outcome.result {
        Ok(d) => d,
        Err(e) => panic!("{} failed: {e}", outcome.server),
    }
}

fn names(d: &Discovered) -> Vec<&str> {
    d.tools.iter().map(|t| t.name.as_str()).collect()
}

#[test]
fn discovers_the_three_reference_servers_and_reports_drift_on_a_second_run() {
    let dir = tempfile::tempdir().unwrap();
    let allowed = tempfile::tempdir().unwrap();
    let specs = reference_specs(dir.path(), allowed.path());

    let mut events = Vec::new();
    let outcomes = discover(&specs, |e| events.push(e));
    assert_eq!(outcomes.len(), 3);
    let everything = ok(&outcomes[0]);
    let filesystem = ok(&outcomes[1]);
    let memory = ok(&outcomes[2]);

    assert!(
        names(everything).contains(&"echo"),
        "{:?}",
        names(everything)
    );
    for tool in ["read_text_file", "search_files", "list_allowed_directories"] {
        assert!(names(filesystem).contains(&tool), "{:?}", names(filesystem));
    }
    for tool in ["create_entities", "read_graph", "search_nodes"] {
        assert!(names(memory).contains(&tool), "{:?}", names(memory));
    }
    for (spec, d) in specs.iter().zip([everything, filesystem, memory]) {
        assert!(d.snapshot_changed, "first run writes {}", spec.name);
        assert_eq!(d.diff.added.len(), d.tools.len(), "everything is new");
        assert!(d.pages >= 1);
        let back = read_snapshot(&spec.snapshot).unwrap();
        assert_eq!(back, d.tools, "snapshot holds the listing as listed");
        let file: Value = serde_json::from_slice(&std::fs::read(&spec.snapshot).unwrap()).unwrap();
        // `tools` first, then only what the server said besides them.
        let keys: Vec<&str> = file
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys[0], "tools");
        assert!(
            keys[1..]
                .iter()
                .all(|k| ["instructions", "resources", "prompts", "leftOut"].contains(k)),
            "{keys:?}"
        );
        assert_eq!(
            muster::discover::read_snapshot_notes(&spec.snapshot).unwrap(),
            d.notes
        );
        // Every server reported progress and finished.
        for want in ["starting", "initialized", "page", "finished"] {
            assert!(
                events.iter().any(|e| match e {
                    Event::Starting { server } => want == "starting" && server == &spec.name,
                    Event::Initialized { server, .. } =>
                        want == "initialized" && server == &spec.name,
                    Event::Page { server, .. } => want == "page" && server == &spec.name,
                    Event::Finished { server, ok } =>
                        want == "finished" && server == &spec.name && *ok,
                    _ => false,
                }),
                "no {want} event for {}",
                spec.name
            );
        }
    }

    // Narrowing the live listing: search_files under a fixed root, the
    // model writes only the pattern.
    let search = filesystem
        .tools
        .iter()
        .find(|t| t.name == "search_files")
        .unwrap();
    let mut n = Narrowing {
        allow: Some(vec!["search_files".into()]),
        ..Default::default()
    };
    n.params
        .entry("search_files".into())
        .or_default()
        .insert("path".into(), json!(allowed.path().to_string_lossy()));
    n.only.insert("search_files".into(), vec!["pattern".into()]);
    match narrow_tool("search_files", &search.input_schema, &n) {
        NarrowOutcome::Offered(o) => {
            let shown_schema = o.shown_schema.value();
            let shown: Vec<&String> = shown_schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .collect();
            assert_eq!(shown, vec!["pattern"]);
            assert_eq!(o.shown_schema.value()["required"], json!(["pattern"]));
        }
        other => panic!("{other:?}"),
    }

    if std::env::var_os("MUSTER_RECORD_FIXTURES").is_some() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp");
        std::fs::create_dir_all(&fixtures).unwrap();
        for spec in &specs {
            std::fs::copy(&spec.snapshot, fixtures.join(format!("{}.json", spec.name))).unwrap();
        }
    }

    // A second run over an unchanged server writes the same bytes.
    let first_memory = std::fs::read(&specs[2].snapshot).unwrap();
    // Edit the memory snapshot as if the server had changed since: one tool
    // gone, one described differently, one schema different, one extra.
    let mut snap: Value = serde_json::from_slice(&first_memory).unwrap();
    let tools = snap["tools"].as_array_mut().unwrap();
    let dropped = tools.remove(0)["name"].as_str().unwrap().to_string();
    tools[0]["description"] = json!("an older description");
    let schema_changed = tools[1]["name"].as_str().unwrap().to_string();
    tools[1]["inputSchema"]["properties"]
        .as_object_mut()
        .unwrap()
        .insert("legacy".into(), json!({"type": "string"}));
    let desc_changed = tools[0]["name"].as_str().unwrap().to_string();
    tools.push(json!({"name": "retired_tool", "inputSchema": {"type": "object"}}));
    std::fs::write(
        &specs[2].snapshot,
        serde_json::to_vec_pretty(&snap).unwrap(),
    )
    .unwrap();

    let again = discover(&specs[2..], |_| {});
    let memory = ok(&again[0]);
    assert_eq!(memory.diff.added, vec![dropped]);
    assert_eq!(memory.diff.removed, vec!["retired_tool".to_string()]);
    let changed: Vec<(&str, bool, bool)> = memory
        .diff
        .changed
        .iter()
        .map(|c| (c.name.as_str(), c.description, c.input_schema))
        .collect();
    let mut want = vec![
        (desc_changed.as_str(), true, false),
        (schema_changed.as_str(), false, true),
    ];
    want.sort();
    assert_eq!(changed, want);
    assert_eq!(
        std::fs::read(&specs[2].snapshot).unwrap(),
        first_memory,
        "same listing, same bytes"
    );
}

fn scripted(name: &str, mode: &str, dir: &Path) -> ServerSpec {
    let script = servers_dir().join("scripted-server.mjs");
    spec(name, &["node", &script.to_string_lossy(), mode], dir)
}

#[test]
fn pagination_is_followed_to_the_last_page() {
    let dir = tempfile::tempdir().unwrap();
    let mut pages_seen = Vec::new();
    let out = discover(&[scripted("paged", "paged", dir.path())], |e| {
        if let Event::Page {
            page, tools_so_far, ..
        } = e
        {
            pages_seen.push((page, tools_so_far));
        }
    });
    let d = ok(&out[0]);
    assert_eq!(d.pages, 3);
    assert_eq!(names(d), vec!["alpha", "beta", "gamma", "delta"]);
    assert_eq!(pages_seen, vec![(1, 2), (2, 3), (3, 4)]);
    // Fields muster does not read are kept as listed.
    assert_eq!(d.tools[3].raw["title"], json!("Delta"));
}

const OLD: &[u8] = b"{\"tools\": []} old bytes, kept as they were\n";

#[test]
fn bad_servers_fail_clearly_keep_their_old_snapshot_and_do_not_stop_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let short = |mut s: ServerSpec| {
        s.timeout = Duration::from_secs(2);
        s
    };
    let specs = vec![
        spec("exits", &["false"], d),
        short(spec("garbage", &["sh", "-c", "echo garbage; sleep 5"], d)),
        short(spec("hangs", &["sleep", "30"], d)),
        spec("missing", &["/nonexistent/mcp-server"], d),
        scripted("non-object", "non-object-schema", d),
        scripted("duplicate", "duplicate", d),
        spec("empty", &[], d),
        scripted("good", "paged", d),
    ];
    for s in &specs {
        std::fs::write(&s.snapshot, OLD).unwrap();
    }
    let outcomes = discover(&specs, |_| {});
    assert_eq!(outcomes.len(), specs.len());

    let expect = [
        ("exits", "exited during initialize", "handshake-failed"),
        ("garbage", "`garbage`", "timed-out"),
        (
            "hangs",
            "timed out after 2s while initializing",
            "timed-out",
        ),
        (
            "missing",
            "cannot start `/nonexistent/mcp-server`",
            "cannot-start",
        ),
        (
            "non-object",
            "tool `broken` has an inputSchema that is text",
            "invalid-listing",
        ),
        (
            "duplicate",
            "tool `twice` is listed twice",
            "invalid-listing",
        ),
        ("empty", "has an empty command", "cannot-start"),
    ];
    for ((name, words, reason), (spec, outcome)) in expect.iter().zip(specs.iter().zip(&outcomes)) {
        assert_eq!(&outcome.server, name);
        let err = outcome
            .result
            .as_ref()
            .expect_err(&format!("{name} should fail"));
        assert_eq!(err.kind(), ErrorKind::Mcp);
        assert_eq!(err.reason.as_str(), *reason, "{name}");
        let text = err.to_string();
        assert!(text.contains(&format!("mcp server `{name}`")), "{text}");
        assert!(text.contains(words), "{name}: {text}");
        assert_eq!(
            std::fs::read(&spec.snapshot).unwrap(),
            OLD,
            "{name} kept its snapshot"
        );
    }
    let non_object = outcomes[4].result.as_ref().unwrap_err();
    assert_eq!(non_object.problems().len(), 1, "one problem per bad tool");

    let good = ok(&outcomes[7]);
    assert_eq!(good.tools.len(), 4);
    assert!(
        good.previous_unreadable.is_some(),
        "old bytes were not a snapshot"
    );
    assert_ne!(std::fs::read(&specs[7].snapshot).unwrap(), OLD);
    // No temp files are left behind by failures or the success.
    let stray: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

/// The pids a `detached` or `hang` scripted server wrote: itself, a child
/// in its group and a child that left it with `setsid`.
fn scripted_pids(dir: &Path) -> Vec<i32> {
    let file = dir.join("pids");
    for _ in 0..600 {
        if let Ok(text) = std::fs::read_to_string(&file) {
            return text.split(' ').map(|p| p.parse().unwrap()).collect();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the scripted server wrote no pids to {}", file.display());
}

/// Whether `pid` is a live process (a zombie waiting for its reaper is not).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// Waits (a minute at most) for every pid to end; returns those still alive.
fn survivors(pids: &[i32]) -> Vec<i32> {
    for _ in 0..600 {
        if pids.iter().all(|&p| !alive(p)) {
            return Vec::new();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let left: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
    for &p in &left {
        // SAFETY: kill(2); cleans up after a failing test.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    left
}

/// Issue 13 item 6: a server that starts a child in its own session
/// (`setsid`) leaves nothing behind once discovery has closed it.
#[cfg(target_os = "linux")]
#[test]
fn a_closed_server_leaves_no_process_behind_even_one_that_called_setsid() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = scripted("detached", "detached", dir.path());
    spec.env.insert(
        "SCRIPTED_PID_DIR".into(),
        dir.path().to_string_lossy().into(),
    );
    let out = discover(&[spec], |_| {});
    assert_eq!(names(ok(&out[0])), ["alpha"]);
    let pids = scripted_pids(dir.path());
    assert_eq!(pids.len(), 3);
    assert_eq!(survivors(&pids), Vec::<i32>::new());
}

/// Issue 13 item 6: SIGTERM or SIGINT to `muster discover` kills the server
/// it is waiting on, with its children, the one that called `setsid`
/// included, and leaves the old snapshot as it was.
#[cfg(target_os = "linux")]
#[test]
fn a_signal_to_discover_kills_the_server_and_everything_it_started() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let dir = tempfile::tempdir().unwrap();
        let script = servers_dir().join("scripted-server.mjs");
        let policies = dir.path().join("policies");
        std::fs::create_dir_all(policies.join("mcp")).unwrap();
        std::fs::write(
            policies.join("muster.toml"),
            "[[agent]]\nname = \"a\"\nversion = 1\n",
        )
        .unwrap();
        let server = format!(
            "[[mcp]]\nname = \"hang\"\ncommand = [\"node\", {script:?}, \"hang\"]\n\
             snapshot = \"hang.json\"\ntimeout_secs = 600\n\
             env = {{ SCRIPTED_PID_DIR = {dir:?} }}\n",
            script = script.to_string_lossy(),
            dir = dir.path().to_string_lossy(),
        );
        std::fs::write(policies.join("mcp/hang.toml"), server).unwrap();
        let old = b"{\"tools\": []}\n";
        std::fs::write(policies.join("mcp/hang.json"), old).unwrap();
        let muster = std::process::Command::new(env!("CARGO_BIN_EXE_muster"))
            .args(["discover", "--policies"])
            .arg(&policies)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pids = scripted_pids(dir.path());
        // Let discovery reach tools/list, which the server never answers.
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: kill(2) on the child we started.
        assert_eq!(unsafe { libc::kill(muster.id() as i32, signal) }, 0);
        let out = muster.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(survivors(&pids), Vec::<i32>::new(), "signal {signal}");
        assert_eq!(std::fs::read(policies.join("mcp/hang.json")).unwrap(), old);
    }
}

/// The failure of a server expected to fail: its reason code and its text.
fn failure(outcome: &ServerOutcome) -> (&'static str, String) {
    let err = outcome
        .result
        .as_ref()
        .expect_err(&format!("{} should fail", outcome.server));
    assert_eq!(err.kind(), ErrorKind::Mcp);
    (err.reason.as_str(), err.to_string())
}

/// Issue 24 item 7: a tools/list page on one line longer than the MCP
/// transport reads was dropped by it, and reported only at the timeout, as
/// a timeout. It is refused at once, as too large. (The short timeout is
/// what the old code waited for.)
#[test]
fn a_page_longer_than_a_message_may_be_is_refused_as_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = scripted("huge", "huge-page", dir.path());
    spec.timeout = Duration::from_secs(20);
    std::fs::write(&spec.snapshot, OLD).unwrap();
    let out = discover(&[spec.clone()], |_| {});
    let (reason, text) = failure(&out[0]);
    assert_eq!(reason, "listing-too-large", "{text}");
    assert!(text.contains("16 MiB"), "{text}");
    assert_eq!(std::fs::read(&spec.snapshot).unwrap(), OLD);
}

/// Issue 24 item 7: a server that paginates forever grew muster's memory
/// without bound. The listing is bounded in bytes, tools and pages, each
/// refused as too large with the limit it broke.
#[test]
fn a_listing_past_its_bytes_tools_or_pages_is_refused_as_too_large() {
    use muster::discover::{MAX_LISTING_BYTES, MAX_PAGES, MAX_TOOLS};
    let dir = tempfile::tempdir().unwrap();
    let specs = [
        scripted("bytes", "endless-bytes", dir.path()),
        scripted("tools", "endless-tools", dir.path()),
        scripted("pages", "endless-pages", dir.path()),
    ];
    let mut last_page = BTreeMap::new();
    let out = discover(&specs, |e| {
        if let Event::Page {
            server,
            page,
            tools_so_far,
        } = e
        {
            last_page.insert(server, (page, tools_so_far));
        }
    });
    let limits = [
        format!("{} MiB", MAX_LISTING_BYTES >> 20),
        "100,000 tools".to_string(),
        "10,000 pages".to_string(),
    ];
    for (outcome, limit) in out.iter().zip(&limits) {
        let (reason, text) = failure(outcome);
        assert_eq!(reason, "listing-too-large", "{text}");
        assert!(text.contains(limit.as_str()), "{limit}: {text}");
    }
    // Reading stopped at the limit, not past it.
    let (pages, tools) = last_page["bytes"];
    assert!(
        pages <= MAX_LISTING_BYTES >> 20 && tools == pages,
        "{pages}"
    );
    assert!(last_page["tools"].1 <= MAX_TOOLS);
    assert!(last_page["pages"].0 <= MAX_PAGES);
    assert_eq!((MAX_TOOLS, MAX_PAGES), (100_000, 10_000));
}

/// Issue 24 item 7: text a server sends (an error message, its stderr)
/// reached the terminal raw, terminal escapes and bidi controls included.
#[test]
fn a_servers_text_is_quoted_with_its_control_and_bidi_characters_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let out = discover(&[scripted("hostile", "hostile-text", dir.path())], |_| {});
    let (_, text) = failure(&out[0]);
    for c in ['\u{1b}', '\u{202e}', '\u{2066}'] {
        assert!(!text.contains(c), "{:?} in {text:?}", c);
    }
    // Twice: once from the error response, once from stderr.
    assert_eq!(text.matches("boom \\u{001B}[2J").count(), 2, "{text}");
    assert!(text.contains("evil\\u{2066}"), "{text}");
}

/// Issue 24 item 7: a server that exited after initialize was reported as
/// "Transport closed"; one that answered initialize under another id as
/// "exited during initialize".
#[test]
fn an_exit_names_its_status_and_a_wrong_id_is_not_an_exit() {
    let dir = tempfile::tempdir().unwrap();
    let out = discover(
        &[
            scripted("exits", "exits-listing", dir.path()),
            scripted("wrong-id", "wrong-id", dir.path()),
        ],
        |_| {},
    );
    let (reason, text) = failure(&out[0]);
    assert_eq!(reason, "exited", "{text}");
    assert!(
        text.contains("exited while listing tools (exit status: 3)"),
        "{text}"
    );
    assert!(!text.to_lowercase().contains("transport closed"), "{text}");
    let (reason, text) = failure(&out[1]);
    assert_eq!(reason, "handshake-failed", "{text}");
    assert!(!text.contains("exited"), "{text}");
    assert!(text.contains("4242"), "{text}");
}

/// Issue 24 item 7: `kill -9` of `muster discover` left a server that
/// ignores the end of its stdin running. It dies with muster, and so does
/// what it started in its process group; a process that left the group
/// (`setsid`) is out of reach once muster is gone.
#[cfg(target_os = "linux")]
#[test]
fn a_server_and_its_group_die_when_discover_is_killed() {
    for mode in ["deaf", "hang"] {
        let dir = tempfile::tempdir().unwrap();
        let pids = kill_discover_on(mode, dir.path());
        let (escaped, in_group) = match mode {
            "hang" => (pids[2..].to_vec(), &pids[..2]),
            _ => (Vec::new(), &pids[..]),
        };
        for &p in &escaped {
            // SAFETY: kill(2) on the escaped child the server started.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
        assert_eq!(survivors(in_group), Vec::<i32>::new(), "{mode}");
    }
}

/// Starts `muster discover` on a scripted server in `mode` that writes its
/// pids, kills muster with SIGKILL once they are written, and returns them.
#[cfg(target_os = "linux")]
fn kill_discover_on(mode: &str, dir: &Path) -> Vec<i32> {
    let script = servers_dir().join("scripted-server.mjs");
    let policies = dir.join("policies");
    std::fs::create_dir_all(policies.join("mcp")).unwrap();
    std::fs::write(
        policies.join("muster.toml"),
        "[[agent]]\nname = \"a\"\nversion = 1\n",
    )
    .unwrap();
    let server = format!(
        "[[mcp]]\nname = \"s\"\ncommand = [\"node\", {script:?}, {mode:?}]\n\
         snapshot = \"s.json\"\ntimeout_secs = 600\n\
         env = {{ SCRIPTED_PID_DIR = {dir:?} }}\n",
        script = script.to_string_lossy(),
        dir = dir.to_string_lossy(),
    );
    std::fs::write(policies.join("mcp/s.toml"), server).unwrap();
    let mut muster = std::process::Command::new(env!("CARGO_BIN_EXE_muster"))
        .args(["discover", "--policies"])
        .arg(&policies)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pids = scripted_pids(dir);
    // SIGKILL: muster gets no chance to clean up.
    muster.kill().unwrap();
    muster.wait().unwrap();
    pids
}
