//! What a careless or hostile client sends (issue 24): each test is one
//! reported defect of the service, reproduced.

use super::{Server, common::Fixture, fixture, problem};
use muster::answer;
use muster::catalog::Selection;
use muster::policy::Inputs;
use muster::tokens::TokenCache;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};

/// A response read off a raw socket.
struct Raw {
    /// 0 when the connection closed without an answer.
    status: u16,
    head: String,
    body: String,
}

/// Writes `request` on a fresh connection to `addr` (then shuts the write
/// side when `half_close`) and reads one response: its head, and a body of
/// the length the head declares.
fn exchange(addr: &str, request: &[u8], half_close: bool) -> Raw {
    let mut stream = TcpStream::connect(addr).expect("connect");
    // Only so that a hang fails the test; nothing here is timed.
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .expect("read timeout");
    stream.write_all(request).expect("request");
    if half_close {
        stream.shutdown(Shutdown::Write).expect("shutdown(Write)");
    }
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("the declared body");
    Raw {
        status,
        head,
        body: String::from_utf8(body).expect("UTF-8"),
    }
}

fn post_head(addr: &str, path: &str, length: usize) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n\r\n"
    )
}

fn problem_of(status: u16, body: &str) -> super::ProblemBody {
    let body: super::ProblemBody = serde_json::from_str(body).expect("problem+json");
    assert_eq!(body.status, status);
    super::coded(&body);
    body
}

/// Defect 8: hyper closed a connection whose client shut its write side
/// after a whole request, dropping the answer (36–39 of 40 tries).
#[test]
fn a_client_that_half_closes_after_its_request_gets_the_answer() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &[]);
    let body = r#"{"flags": "production"}"#;
    let request = format!("{}{body}", post_head(&server.addr, "/v1/plan", body.len()));
    for attempt in 0..20 {
        let raw = exchange(&server.addr, request.as_bytes(), true);
        assert_eq!(raw.status, 200, "attempt {attempt}: {}", raw.head);
        assert!(raw.body.starts_with('{'), "attempt {attempt}");
    }
}

/// Defect 8: a declared Content-Length over `--body-limit` waited for the
/// body until the request timeout and answered 503; it is a 413 before
/// any byte of the body is sent.
#[test]
fn a_declared_length_over_the_limit_is_413_before_the_body_is_sent() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &["--body-limit", "1000"]);
    let request = post_head(&server.addr, "/v1/plan", 100_000);
    let raw = exchange(&server.addr, request.as_bytes(), false);
    assert_eq!(raw.status, 413, "{}", raw.head);
    let body = problem_of(413, &raw.body);
    assert_eq!(body.kind, "urn:muster:problem:body-too-large");
    assert_eq!(body.problems[0].field.as_deref(), Some("body"));
    // At the limit, the body is read and answered.
    let at_limit = format!("{{\"flags\": \"production\"}}{}", " ".repeat(1000 - 23));
    assert_eq!(server.post("/v1/plan", at_limit).status, 200);
}

/// Defect 8: the timeout's help named `--request-timeout`, which `muster
/// serve` does not take. A body that never arrives times out whatever the
/// clock, so no timing is asserted.
#[test]
fn the_timeout_problem_names_flags_serve_takes() {
    let fixture = fixture();
    let dir = fixture.path();
    let server = Server::start(dir, &["--request-timeout-ms", "1"]);
    let request = format!("{}{{}}", post_head(&server.addr, "/v1/plan", 10));
    let raw = exchange(&server.addr, request.as_bytes(), false);
    let body = problem_of(503, &raw.body);
    assert_eq!(body.kind, "urn:muster:problem:timeout");
    let help = super::common::stdout(dir, &["serve", "--help"], 0);
    let options: Vec<&str> = help
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| w.starts_with("--"))
        .collect();
    let named: Vec<&str> = body
        .problems
        .iter()
        .filter_map(|p| p.help.as_deref())
        .flat_map(|h| h.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')))
        .filter(|w| w.starts_with("--"))
        .collect();
    assert!(!named.is_empty(), "{body:?}");
    for flag in named {
        assert!(
            options.contains(&flag),
            "{flag} is not an option of serve: {options:?}"
        );
    }
}

/// Defect 8: a reload with the policy directory gone answered 500, which
/// the docs keep for bugs. It is a 422 naming the directory, and the old
/// generation keeps serving.
#[test]
fn a_reload_with_the_policy_directory_gone_is_422_and_the_old_generation_serves() {
    let fixture = fixture();
    let dir = fixture.path();
    let server = Server::start(dir, &[]);
    let before = server.post("/v1/plan", "{}").body;
    std::fs::rename(dir.join("policies"), dir.join("moved")).expect("move the policies");
    let refused = problem(&server.post("/v1/admin/reload", ""), 422, "io");
    assert_eq!(refused.generation, Some(1));
    let failed = server.wait_event("reload-failed");
    assert_eq!(
        (failed.generation, failed.error_code.as_deref()),
        (Some(1), Some("io"))
    );
    let plan = server.post("/v1/plan", "{}");
    assert_eq!((plan.status, plan.generation), (200, Some(1)));
    assert_eq!(plan.body, before);
    std::fs::rename(dir.join("moved"), dir.join("policies")).expect("move them back");
    let reloaded = server.post("/v1/admin/reload", "");
    assert_eq!((reloaded.status, reloaded.generation), (200, Some(2)));
}

/// Defect 8: problems were not capped (an 804 KB body got an 8.3 MB
/// answer). A problem+json lists the first 100 and counts the rest.
#[test]
fn a_body_full_of_mistakes_gets_an_answer_smaller_than_itself() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &[]);
    let names: Vec<String> = (0..5000).map(|i| format!("no-such-gate-{i:06}")).collect();
    let request = json!({ "gates": names }).to_string();
    let reply = server.post("/v1/gate", request.clone());
    let body = problem(&reply, 422, "usage");
    assert_eq!(body.problems.len(), 100);
    assert_eq!(body.omitted, Some(4900));
    assert_eq!(
        body.detail
            .lines()
            .filter(|l| l.starts_with("gates:"))
            .count(),
        100
    );
    assert!(
        reply.body.len() < request.len(),
        "{} bytes answered to {}",
        reply.body.len(),
        request.len()
    );
    // Under the cap nothing is omitted.
    let few = problem(
        &server.post("/v1/gate", r#"{"gates": ["x"]}"#),
        422,
        "usage",
    );
    assert_eq!((few.problems.len(), few.omitted), (1, None));
}

const TOKEN: &str = "s3cr3t-admin-token-0123456789abcdef";

/// Defect 8: `/v1/admin/reload` took any request and any body. With a
/// token it takes only `Authorization: Bearer <token>` and an empty body;
/// the token is never logged.
#[test]
fn the_admin_route_takes_the_token_and_no_body() {
    let fixture = fixture();
    let dir = fixture.path();
    std::fs::write(dir.join("admin.token"), format!("{TOKEN}\n")).expect("token file");
    let server = Server::start(dir, &["--admin-token-file", "admin.token"]);
    let start = server.start.as_ref().expect("start");
    assert_eq!(start.admin.as_deref(), Some("token"));
    let reload = |auth: Option<&str>, body: &str| {
        let mut request = server
            .client
            .post(server.url("/v1/admin/reload"))
            .body(body.to_string());
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        let response = request.send().expect("POST");
        let challenge = response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().expect("ascii").to_string());
        (super::Reply::from(response), challenge)
    };

    let (none, challenge) = reload(None, "");
    problem(&none, 401, "unauthorized");
    assert_eq!(challenge.as_deref(), Some("Bearer realm=\"muster admin\""));
    let (wrong, _) = reload(Some("Bearer s3cr3t-admin-token-0123456789abcdeF"), "");
    problem(&wrong, 401, "unauthorized");
    let (basic, _) = reload(Some(&format!("Basic {TOKEN}")), "");
    problem(&basic, 401, "unauthorized");
    let (with_body, _) = reload(Some(&format!("Bearer {TOKEN}")), "{}");
    let refused = problem(&with_body, 422, "usage");
    assert_eq!(refused.problems[0].field.as_deref(), Some("body"));
    let (ok, _) = reload(Some(&format!("Bearer {TOKEN}")), "");
    assert_eq!((ok.status, ok.generation), (200, Some(2)));
    server.wait_event("reload");
    // Every other route is as open as before.
    assert_eq!(server.post("/v1/plan", "{}").status, 200);

    let mut server = server;
    let _ = server.child.kill();
    let _ = server.child.wait();
    let logged: Vec<String> = server.stderr.iter().collect();
    assert!(!logged.is_empty());
    assert!(
        logged.iter().all(|l| !l.contains(TOKEN)),
        "the token was logged"
    );
}

#[test]
fn the_admin_token_may_come_from_the_environment_but_not_from_both() {
    let fixture = fixture();
    let dir = fixture.path();
    let server = Server::start_with_env(dir, &[], &[("MUSTER_ADMIN_TOKEN", TOKEN)]);
    problem(&server.post("/v1/admin/reload", ""), 401, "unauthorized");
    let ok = server
        .client
        .post(server.url("/v1/admin/reload"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .expect("POST");
    assert_eq!(ok.status().as_u16(), 200);
    drop(server);

    // A token file and the variable at once, or a weak token: exit 2
    // before listening, the token never printed.
    std::fs::write(dir.join("admin.token"), TOKEN).expect("token file");
    std::fs::write(dir.join("weak.token"), "hunter2").expect("token file");
    for (args, env) in [
        (&["--admin-token-file", "admin.token"][..], Some(TOKEN)),
        (&["--admin-token-file", "weak.token"][..], None),
        (&[][..], Some("hunter2")),
    ] {
        let mut cmd = super::common::muster(dir);
        cmd.args(["serve", "--addr", "127.0.0.1:0"]).args(args);
        cmd.env_remove("MUSTER_ADMIN_TOKEN");
        if let Some(env) = env {
            cmd.env("MUSTER_ADMIN_TOKEN", env);
        }
        let out = cmd.output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains(TOKEN) && !stderr.contains("hunter2"),
            "{stderr}"
        );
    }
}

/// Defect 9: a UTF-8 byte-order mark before the JSON body was "expected
/// value"; it is skipped, as before a turn file.
#[test]
fn a_byte_order_mark_before_a_body_is_skipped() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &[]);
    let plain = server.post("/v1/plan", r#"{"flags": "production"}"#);
    let marked = server.post("/v1/plan", "\u{feff}{\"flags\": \"production\"}");
    assert_eq!((marked.status, &marked.body), (200, &plain.body));
    let why = json!({"tool": "math.calculate"}).to_string();
    let plain = server.post("/v1/why", why.clone());
    let marked = server.post("/v1/why", format!("\u{feff}{why}"));
    assert_eq!((marked.status, &marked.body), (200, &plain.body));
    // Only one mark, and only first.
    problem(&server.post("/v1/plan", "\u{feff}\u{feff}{}"), 400, "input");
}

/// Defect 2: a 1 MB body held 54,000 queries, minutes of work. `queries`
/// takes at most 1,000.
#[test]
fn a_search_past_the_queries_limit_is_422() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &[]);
    let doc: Value = serde_json::from_str(&server.post("/v1/sessions", "{}").body).expect("doc");
    let search = |doc: &Value, n: usize| {
        let queries: Vec<String> = (0..n).map(|i| format!("q{i}")).collect();
        server.post(
            "/v1/sessions/search",
            json!({"session": doc, "queries": queries}).to_string(),
        )
    };
    let over = problem(&search(&doc, muster::serve::MAX_QUERIES + 1), 422, "usage");
    assert_eq!(over.problems[0].field.as_deref(), Some("queries"));
    // The limit is checked first: at it, the request goes on to read the
    // session (here an empty one, refused without searching anything).
    let at = problem(
        &search(&json!({}), muster::serve::MAX_QUERIES),
        422,
        "input",
    );
    assert_eq!(at.problems[0].field.as_deref(), Some("session"));
    let few = search(&doc, 3);
    assert_eq!((few.status, few.body.lines().count()), (200, 3));
}

/// Defect 2: the work of a request went on after its 503. Searching many
/// queries checks the stop flag the service sets when the request is
/// answered or dropped: once set, not one more query is run.
#[test]
fn a_stopped_search_runs_no_more_queries() {
    let fixture = Fixture::bundled();
    fixture.edit(
        "policies/muster.toml",
        "[deferral]\nenabled = false",
        "[deferral]\nenabled = true",
    );
    let inputs = Inputs::load(&fixture.policies()).expect("policies");
    let mut cache = TokenCache::in_memory();
    let keys = muster::session::SessionKeys::none();
    let doc = muster::session::new(
        &inputs,
        &Selection::default(),
        &Default::default(),
        &keys,
        &mut cache,
    )
    .expect("session");
    let live = answer::open(&inputs, doc, &keys, "session".as_ref(), &mut cache)
        .expect("open")
        .expect("the pin holds");
    let queries = ["send an email", "calendar", "weather"];
    let running = answer::search_lines_until(&live, queries, 5, &mut || false);
    assert_eq!(
        running.as_deref(),
        Some(answer::search_lines(&live, queries, 5).as_str())
    );
    assert_eq!(running.expect("lines").lines().count(), 3);
    // Told to stop at the second ask: one query ran, and nothing was asked
    // (or searched) after.
    let mut asked = 0;
    let stopped = answer::search_lines_until(&live, queries, 5, &mut || {
        asked += 1;
        asked == 2
    });
    assert_eq!((stopped, asked), (None, 2));
}

/// A plan whose one strict tool's `pattern` needs a backreference, so
/// each call costs the regex engine its whole backtracking budget: a turn
/// of such calls is long work, each call a unit of it.
fn slow_plan() -> Value {
    json!({"format_version": 3, "roster": [{"name": "t", "check": "strict",
        "input_schema": {"type": "object",
            "properties": {"s": {"type": "string", "pattern": "^(a|a)*\\1b$"}}}}]})
}

fn slow_turn(calls: usize) -> Value {
    let calls: Vec<Value> = (0..calls)
        .map(|i| json!({"id": format!("c{i}"), "name": "t", "arguments": {"s": format!("{}c", "a".repeat(28))}}))
        .collect();
    json!({ "calls": calls })
}

/// Issue 24, defect 2, for `/v1/check`: the stop flag was looked at only
/// between search queries. A turn's calls are checked one by one, asking
/// before each; told to stop at the fourth ask, three calls were checked
/// and nothing was asked after.
#[test]
fn a_stopped_check_checks_no_more_calls() {
    let plan = muster::check::OfferedPlan::from_json(&slow_plan().to_string(), "plan".as_ref())
        .expect("plan");
    let turn = slow_turn(40).to_string();
    let options = muster::check::CheckOptions::default();
    let mut asked = 0;
    let report = answer::check_until(&plan, &turn, "turn".as_ref(), &options, &mut || {
        asked += 1;
        asked == 4
    })
    .expect("the turn reads");
    assert!(report.is_none());
    assert_eq!(asked, 4, "no call is checked once told to stop");
    // Never told to stop, the same turn is the plain check's report.
    let whole = answer::check_until(
        &plan,
        "{\"calls\": []}",
        "turn".as_ref(),
        &options,
        &mut || false,
    )
    .expect("reads")
    .expect("answers");
    assert!(whole.calls.is_empty());
}

/// The same through the service. A turn's pattern work is now bounded per
/// check (below), so the long turn is a long one: 200,000 calls in a 12 MB
/// body (the body limit raised for it), answered 503 at a 300 ms request
/// timeout; the check then stops between calls: `muster_work_stopped`
/// counts the request and `muster_work_items` shows far fewer calls begun
/// than the turn holds (counted, not timed).
#[test]
fn a_check_answered_by_the_timeout_stops_between_calls() {
    const CALLS: usize = 200_000;
    let fixture = fixture();
    let server = Server::start(
        fixture.path(),
        &["--request-timeout-ms", "300", "--body-limit", "67108864"],
    );
    let calls: Vec<Value> = (0..CALLS)
        .map(|i| json!({"id": format!("c{i}"), "name": "t", "arguments": {"s": "ab"}}))
        .collect();
    let plan = json!({"format_version": 3, "roster": [{"name": "t", "check": "strict",
        "input_schema": {"type": "object", "properties": {"s": {"type": "string"}}}}]});
    let body = json!({"plan": plan, "turn": {"calls": calls}}).to_string();
    let reply = server.post("/v1/check", body);
    problem(&reply, 503, "timeout");
    let metric = |text: &str, name: &str| -> Option<u64> {
        let key = format!("{name}{{endpoint=\"/v1/check\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(key.as_str()))
            .map(|v| v.trim().parse().expect("a count"))
    };
    // Wait for the work to see its flag: the call in progress finishes first.
    let mut metrics = String::new();
    for _ in 0..1200 {
        metrics = server.get("/metrics").body;
        if metric(&metrics, "muster_work_stopped_total").is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        metric(&metrics, "muster_work_stopped_total"),
        Some(1),
        "{metrics}"
    );
    // No count at all when the timeout came before the first call.
    let begun = metric(&metrics, "muster_work_items_total").unwrap_or(0);
    assert!(
        begun < CALLS as u64 / 2,
        "{begun} of {CALLS} calls were begun"
    );
    assert_eq!(server.get("/healthz").status, 200);
}

/// Issue 24, left open: a `/v1/check` body of a few KB whose values each
/// make a backtracking `pattern` spend the regex engine's whole limit (a
/// million steps, ~40 ms each) was checked on the async worker, so a few
/// such bodies at once stalled the service. The work is now counted per
/// check: past `check::MAX_CHECK_STEPS` backtracking steps (or
/// `MAX_VALUE_STEPS` for one value) the call is refused
/// `check-budget-exceeded`, naming the argument, and the answer is 200.
#[test]
fn a_small_check_of_backtracking_patterns_is_refused_past_its_step_budget() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &[]);
    let turn = slow_turn(200);
    let body = json!({"plan": slow_plan(), "turn": turn}).to_string();
    assert!(body.len() < 16 * 1024, "a small body: {} bytes", body.len());
    let reply = server.post("/v1/check", body);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let report: Value = serde_json::from_str(&reply.body).expect("the check report");
    let calls = report["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 200);
    for call in calls {
        assert_eq!(call["status"], "refused", "{call}");
        let problem = &call["problems"][0];
        assert_eq!(problem["code"], "check-budget-exceeded", "{call}");
        assert_eq!(problem["argument"], "s");
        assert_eq!(problem["budget"], muster::check::MAX_CHECK_STEPS);
        assert_eq!(problem["per_value"], muster::check::MAX_VALUE_STEPS);
    }
    assert_eq!(server.get("/healthz").status, 200);
}

/// Issue 24, defect 6, over HTTP: loads that each fit, put together in one
/// document by hand past `max_loaded_tokens` (the document carries no
/// tokens to zero: each definition is recomputed), are refused 422
/// `session-tampered` naming the session, as at the command line
/// (tests/session_guards.rs).
#[test]
fn loads_put_together_past_max_loaded_tokens_are_refused_over_http() {
    use super::common::stdout;
    let fixture = fixture();
    let dir = fixture.path();
    stdout(dir, &["session", "new", "--out", "probe.json"], 0);
    let roster: Value = serde_json::from_str(&stdout(
        dir,
        &["session", "roster", "probe.json", "--format", "json"],
        0,
    ))
    .unwrap();
    let three: Vec<(String, u64)> = roster["deferred"].as_array().unwrap()[..3]
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    let cap = three.iter().map(|(_, t)| t).sum::<u64>() - 1;
    fixture.edit(
        "policies/muster.toml",
        "control_tool = \"tools.load\"",
        &format!("control_tool = \"tools.load\"\nmax_loaded_tokens = {cap}"),
    );
    stdout(dir, &["session", "new", "--out", "a.json"], 0);
    stdout(dir, &["session", "new", "--out", "c.json"], 0);
    stdout(
        dir,
        &[
            "session",
            "load",
            "a.json",
            "--name",
            &three[0].0,
            "--name",
            &three[1].0,
        ],
        0,
    );
    stdout(
        dir,
        &["session", "load", "c.json", "--name", &three[2].0],
        0,
    );
    let mut a: Value = serde_json::from_str(&fixture.read("a.json")).unwrap();
    let c: Value = serde_json::from_str(&fixture.read("c.json")).unwrap();
    let mut third = c["loaded"][0].clone();
    third["revision"] = a["revision"].clone();
    a["loaded"].as_array_mut().unwrap().push(third);
    let server = Server::start(dir, &[]);
    let fine = fixture.read("a.json");
    assert_eq!(
        server
            .post("/v1/sessions/roster", format!(r#"{{"session": {fine}}}"#))
            .status,
        200
    );
    let refused = problem(
        &server.post("/v1/sessions/roster", format!(r#"{{"session": {a}}}"#)),
        422,
        "session-tampered",
    );
    assert_eq!(refused.problems[0].field.as_deref(), Some("session"));
    assert!(
        refused.problems[0].message.contains("max_loaded_tokens"),
        "{refused:?}"
    );
}

/// Headers and the first bytes of a body that says it is longer, left
/// open: a client that stalls mid-body.
fn stall(addr: &str, path: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect");
    let request = format!("{}{{\"jsonrpc\":", post_head(addr, path, 200));
    stream.write_all(request.as_bytes()).expect("request");
    stream
}

/// `/mcp` and `/v1/call` have no request timeout of their own (a forwarded
/// call takes what its server allows), and a body sent slowly held one of
/// their concurrency permits for as long as its sender liked: with
/// `--concurrency 1` one stalled body shut each route. The body is read
/// whole before the permit is taken, so both still answer while two
/// bodies stall (before, each waited forever).
#[test]
fn a_stalled_body_holds_no_concurrency_permit() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &["--concurrency", "1"]);
    let _mcp = stall(&server.addr, "/mcp");
    let _call = stall(&server.addr, "/v1/call");
    // Let the service see both heads first; sooner only makes this pass.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let request = format!(
        "{}\r\naccept: application/json, text/event-stream\r\n\r\n{init}",
        post_head(&server.addr, "/mcp", init.len()).trim_end_matches("\r\n")
    );
    let answered = |request: &str| exchange(&server.addr, request.as_bytes(), false);
    let raw = answered(&request);
    assert_eq!(raw.status, 200, "{}{}", raw.head, raw.body);
    assert!(raw.body.contains("protocolVersion"), "{}", raw.body);
    let turn = r#"{"turn": {"calls": []}}"#;
    let raw = answered(&format!(
        "{}{turn}",
        post_head(&server.addr, "/v1/call", turn.len())
    ));
    assert_ne!(raw.status, 0, "/v1/call answered: {}", raw.head);
    assert_ne!(raw.status, 503, "{}{}", raw.head, raw.body);
}

/// A body not whole within `--request-timeout-ms` on those routes is a 408
/// `body-timeout` problem, and the connection closes (the rest of the body
/// was never read). A body that never arrives times out whatever the
/// clock, so no timing is asserted.
#[test]
fn a_body_not_whole_in_time_is_408_body_timeout() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &["--request-timeout-ms", "300"]);
    for path in ["/mcp", "/v1/call"] {
        let mut stream = stall(&server.addr, path);
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(60)))
            .expect("read timeout");
        let mut answer = String::new();
        stream
            .read_to_string(&mut answer)
            .expect("an answer, then close");
        let (head, body) = answer.split_once("\r\n\r\n").expect("head and body");
        assert!(head.starts_with("HTTP/1.1 408"), "{path}: {head}");
        assert!(
            head.to_ascii_lowercase().contains("connection: close"),
            "{head}"
        );
        let body = problem_of(408, body);
        assert_eq!(body.kind, "urn:muster:problem:body-timeout", "{path}");
        assert_eq!(body.problems[0].field.as_deref(), Some("body"), "{path}");
    }
    // The service still answers.
    assert_eq!(server.get("/healthz").status, 200);
}

/// Found by a hostile probe: each extra flag no tool names is answered
/// with an `unused-flag` warning, so `/v1/plan` with thousands of made-up
/// flags answered 13 times its request's size. One selection turns on at
/// most `catalog::MAX_EXTRA_FLAGS` extra flags; more is a 422 naming the
/// limit (a profile turns on more).
#[test]
fn more_extra_flags_than_the_limit_are_refused() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &[]);
    let limit = muster::catalog::MAX_EXTRA_FLAGS;
    let flags = |n: usize| -> Vec<String> { (0..n).map(|i| format!("made-up-{i}")).collect() };
    let reply = server.post("/v1/plan", json!({"flag": flags(limit + 1)}).to_string());
    let body = problem(&reply, 422, "usage");
    assert_eq!(body.problems.len(), 1, "{}", reply.body);
    assert_eq!(body.problems[0].code, "out-of-range", "{}", reply.body);
    assert!(
        body.problems[0].message.contains(&limit.to_string()),
        "{}",
        reply.body
    );
    let reply = server.post("/v1/plan", json!({"flag": flags(limit)}).to_string());
    assert_eq!(reply.status, 200, "{}", reply.body);
    let plan: Value = serde_json::from_str(&reply.body).expect("plan JSON");
    let unused = plan["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter(|w| w["code"] == "unused-flag")
        .count();
    assert_eq!(unused, limit, "{plan}");
}
