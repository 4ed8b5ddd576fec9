//! The session stores against real databases: the embedded SQLite file and
//! a real PostgreSQL server (Debian's, started for the test), each keeping
//! the one contract; and two `muster serve` processes sharing one
//! PostgreSQL database, each seeing the other's loads, a stale revision
//! refused across them, and concurrent loads that all land or are refused.

mod common;

use common::Fixture;
use common::postgres::Postgres;
use muster::store::{SessionStore, StoreUrl, Stored, Swapped};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Taken by the tests that start many muster processes, so one does not
/// starve the other's requests of CPU (the service's request timeout).
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What every store does, whatever keeps it.
fn contract(store: &dyn SessionStore) {
    let first = Stored {
        document: "{\"revision\":0}".into(),
        revision: 0,
    };
    store.insert("a1", &first, 100).unwrap();
    assert!(store.insert("a1", &first, 100).is_err(), "ids are unique");
    assert_eq!(store.get("a1", 50).unwrap(), Some(first.clone()));
    let second = Stored {
        document: "{\"revision\":1}".into(),
        revision: 1,
    };
    assert_eq!(
        store.swap("a1", 0, &second, 50, 200).unwrap(),
        Swapped::Done
    );
    assert_eq!(
        store.swap("a1", 0, &second, 50, 200).unwrap(),
        Swapped::Stale { current: 1 },
        "a swap against a revision that moved on changes nothing"
    );
    assert_eq!(store.get("a1", 150).unwrap(), Some(second.clone()));
    assert_eq!(store.get("a1", 200).unwrap(), None, "expired at 200");
    assert_eq!(
        store.swap("a1", 1, &second, 200, 300).unwrap(),
        Swapped::Missing
    );
    assert_eq!(
        store.swap("nope", 0, &second, 0, 300).unwrap(),
        Swapped::Missing
    );
    store.insert("b2", &first, 1_000).unwrap();
    assert_eq!(store.purge(500).unwrap(), 1, "a1 expired, b2 lives");
    assert!(store.delete("b2").unwrap());
    assert!(!store.delete("b2").unwrap());
    assert_eq!(store.get("b2", 0).unwrap(), None);
    // Many writers on one revision: exactly one lands.
    store.insert("c3", &first, 1_000).unwrap();
    let landed = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| store.swap("c3", 0, &second, 0, 1_000).unwrap()))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|s| *s == Swapped::Done)
            .count()
    });
    assert_eq!(landed, 1);
    // Creating is idempotent: a live session is kept, an expired one
    // replaced, a new id stored; many creators of one id all succeed.
    let other = Stored {
        document: "{\"other\":true}".into(),
        revision: 0,
    };
    assert!(!store.create("c3", &other, 0, 1_000).unwrap(), "c3 lives");
    assert_eq!(store.get("c3", 0).unwrap(), Some(second.clone()));
    store.insert("d4", &first, 100).unwrap();
    assert!(
        store.create("d4", &other, 100, 1_000).unwrap(),
        "d4 expired"
    );
    assert_eq!(store.get("d4", 100).unwrap(), Some(other.clone()));
    let created = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| store.create("e5", &first, 0, 1_000).unwrap()))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|c| *c)
            .count()
    });
    assert_eq!(created, 1);
}

#[test]
fn sqlite_keeps_the_store_contract() {
    let dir = tempfile::tempdir().unwrap();
    let url = StoreUrl::parse(&format!("sqlite:{}", dir.path().join("s.db").display())).unwrap();
    contract(url.open().unwrap().as_ref());
    // A second handle on the same file sees the same sessions (WAL).
    let other = url.open().unwrap();
    assert!(other.get("c3", 0).unwrap().is_some());
}

/// `muster serve` on a free port of 127.0.0.1, stopped on drop.
struct Service {
    child: Child,
    addr: String,
    client: reqwest::blocking::Client,
}

impl Service {
    fn start(dir: &std::path::Path, sessions: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_muster"))
            .current_dir(dir)
            .env("MUSTER_CACHE_DIR", dir.join("cache"))
            .env("MUSTER_SESSION_KEY", "k1:0123456789abcdef0123456789abcdef")
            .env_remove("MUSTER_SESSION_KEY_FILE")
            .args(["serve", "--addr", "127.0.0.1:0", "--sessions", sessions])
            .stderr(Stdio::piped())
            .spawn()
            .expect("muster serve");
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        let addr = loop {
            let line = lines
                .next()
                .expect("muster serve ended before it listened")
                .unwrap();
            let log: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if log["event"] == "start" {
                assert!(
                    !line.contains("secret")
                        && log["sessions"]
                            .as_str()
                            .unwrap()
                            .starts_with("postgres://muster@"),
                    "{line}"
                );
                assert_eq!(log["signed"], true);
                break log["addr"].as_str().unwrap().to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Self {
            child,
            addr,
            client: common::http_client(),
        }
    }

    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let reply = self
            .client
            .post(format!("http://{}{path}", self.addr))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .unwrap();
        let status = reply.status().as_u16();
        (
            status,
            serde_json::from_str(&reply.text().unwrap()).unwrap_or(Value::Null),
        )
    }

    fn get(&self, path: &str) -> (u16, Value) {
        let reply = self
            .client
            .get(format!("http://{}{path}", self.addr))
            .send()
            .unwrap();
        let status = reply.status().as_u16();
        (
            status,
            serde_json::from_str(&reply.text().unwrap()).unwrap_or(Value::Null),
        )
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn postgres_keeps_the_store_contract_and_replicas_share_it() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let pg = Postgres::start("muster_store_test");
    // A password in the address never reaches a message.
    let with_password = pg.url.replacen("muster@", "muster:hunter2hunter2@", 1);
    assert!(!format!("{:?}", StoreUrl::parse(&with_password).unwrap()).contains("hunter2"));
    contract(StoreUrl::parse(&pg.url).unwrap().open().unwrap().as_ref());

    // Two replicas, one database.
    let fx = Fixture::bundled();
    fx.edit("policies/muster.toml", "enabled = false", "enabled = true");
    fx.edit(
        "policies/muster.toml",
        "control_tool = \"tools.load\"",
        "control_tool = \"tools.load\"\nmax_loaded = 20\nmax_loaded_tokens = 20000",
    );
    let a = Service::start(fx.path(), &pg.url);
    let b = Service::start(fx.path(), &pg.url);
    let (status, doc) = a.post("/v1/sessions", &json!({"flags": "production"}));
    assert_eq!(status, 200, "{doc}");
    let id = doc["id"]
        .as_str()
        .expect("a kept session has an id")
        .to_string();
    assert_eq!(doc["revision"], 0);
    assert_eq!(doc["signature"]["key"], "k1");
    let (status, roster) = b.post("/v1/sessions/roster", &json!({"session_id": id}));
    assert_eq!(status, 200, "{roster}");
    let deferred: Vec<String> = roster["deferred"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();

    // A load through B is seen through A.
    let (status, loaded) = b.post(
        "/v1/sessions/load",
        &json!({"session_id": id, "revision": 0, "name": [deferred[0]]}),
    );
    assert_eq!(status, 200, "{loaded}");
    assert_eq!(loaded["answer"]["status"], "loaded");
    assert_eq!(loaded["session"]["revision"], 1);
    let (status, seen) = a.get(&format!("/v1/sessions/{id}"));
    assert_eq!(status, 200);
    assert_eq!(seen["revision"], 1);
    assert_eq!(seen["loaded"][0]["name"], deferred[0].as_str());
    // A check through A knows the tool B loaded.
    let (status, roster) = a.post("/v1/sessions/roster", &json!({"session_id": id}));
    assert_eq!(status, 200);
    assert_eq!(roster["totals"]["loaded_items"], 1);

    // A load meant for revision 0 through A is stale now: 409, nothing changes.
    let (status, stale) = a.post(
        "/v1/sessions/load",
        &json!({"session_id": id, "revision": 0, "name": [deferred[1]]}),
    );
    assert_eq!(status, 409, "{stale}");
    assert_eq!(stale["type"], "urn:muster:problem:stale-revision");
    assert_eq!(
        stale["stale_revision"],
        json!({"session_id": id, "expected": 0, "current": 1})
    );
    assert_eq!(b.get(&format!("/v1/sessions/{id}")).1["revision"], 1);

    // Concurrent loads through both replicas, without a revision: each
    // lands or is refused as stale, and every one that landed is kept.
    let names: Vec<String> = deferred[1..9].to_vec();
    let answers: Vec<(String, u16, Value)> = std::thread::scope(|scope| {
        let handles: Vec<_> = names
            .iter()
            .enumerate()
            .map(|(n, name)| {
                let service = if n % 2 == 0 { &a } else { &b };
                let id = id.clone();
                scope.spawn(move || {
                    let (status, body) = service.post(
                        "/v1/sessions/load",
                        &json!({"session_id": id, "name": [name]}),
                    );
                    (name.clone(), status, body)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut landed: Vec<String> = Vec::new();
    for (name, status, body) in &answers {
        match status {
            200 => {
                assert_eq!(body["answer"]["status"], "loaded", "{body}");
                landed.push(name.clone());
            }
            409 => assert_eq!(body["type"], "urn:muster:problem:stale-revision", "{body}"),
            other => panic!("{name}: {other} {body}"),
        }
    }
    assert!(!landed.is_empty());
    let (_, last) = a.get(&format!("/v1/sessions/{id}"));
    let mut kept: Vec<String> = last["loaded"].as_array().unwrap()[1..]
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    kept.sort();
    landed.sort();
    assert_eq!(
        kept, landed,
        "every load that answered 200 is kept, no other"
    );
    assert_eq!(last["revision"], 1 + landed.len() as u64);

    // Deleted through one, gone for both.
    let reply = b
        .client
        .delete(format!("http://{}/v1/sessions/{id}", b.addr))
        .send()
        .unwrap();
    assert_eq!(reply.status().as_u16(), 204);
    assert_eq!(a.get(&format!("/v1/sessions/{id}")).0, 404);
    let (status, gone) = a.post("/v1/sessions/roster", &json!({"session_id": id}));
    assert_eq!(status, 404);
    assert_eq!(gone["type"], "urn:muster:problem:session-not-found");
}

/// Issue 30, item 8: eight `muster mcp --sessions sqlite:… --chat ID` started
/// at once on a chat nobody started yet all come up (none exits 2 on the
/// store's unique id) and all serve the one chat. Four rounds, a new chat
/// each, so the race is run more than once.
#[test]
fn eight_stdio_gateways_starting_one_new_chat_at_once_all_serve_it() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let fx = Fixture::bundled();
    let db = fx.path().join("chats.db");
    let sessions = format!("sqlite:{}", db.display());
    let messages = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        "\n"
    );
    for round in 0..4 {
        let chat = format!("race-{round}");
        let children: Vec<Child> = (0..8)
            .map(|_| {
                let mut child = Command::new(env!("CARGO_BIN_EXE_muster"))
                    .current_dir(fx.path())
                    .env("MUSTER_CACHE_DIR", fx.path().join("cache"))
                    .env("MUSTER_SESSION_KEY", "k1:0123456789abcdef0123456789abcdef")
                    .env_remove("MUSTER_SESSION_KEY_FILE")
                    .args(["mcp", "--sessions", &sessions, "--chat", &chat])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("muster mcp");
                let mut stdin = child.stdin.take().unwrap();
                std::thread::spawn(move || {
                    use std::io::Write as _;
                    let _ = stdin.write_all(messages.as_bytes());
                });
                child
            })
            .collect();
        let mut lists = Vec::new();
        for child in children {
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success(),
                "round {round}: {}\n{stderr}",
                out.status
            );
            let started: Value = stderr
                .lines()
                .find_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| v["event"] == "gateway-started")
                .unwrap_or_else(|| panic!("no start notice: {stderr}"));
            assert_eq!(started["chat"], chat.as_str());
            let list = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|v| v["id"] == 2)
                .unwrap_or_else(|| panic!("no tools/list answer: {stderr}"));
            assert!(list["result"]["tools"].is_array(), "{list}");
            lists.push(list);
        }
        assert!(
            lists.windows(2).all(|w| w[0] == w[1]),
            "every process lists the same chat"
        );
    }
}

/// Issue 31 item 6: the shared store over TLS. A server that takes TLS
/// only (its pg_hba.conf rejects plain connections) is reached with its
/// certificate verified against the CA in `sslrootcert`; without that CA,
/// or asked for plain text, the connection fails and says why. muster
/// never falls back from TLS to plain text.
#[test]
fn postgres_over_tls_verifies_the_server_and_never_falls_back_to_plain_text() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let pg = Postgres::start_tls("muster_tls_test");
    let ca = pg.ca();
    let verified = format!(
        "{}?sslmode=verify-full&sslrootcert={}",
        pg.url.replacen("127.0.0.1", "localhost", 1),
        ca.display()
    );
    contract(StoreUrl::parse(&verified).unwrap().open().unwrap().as_ref());

    let refused = |url: &str| -> String {
        let err = StoreUrl::parse(url)
            .unwrap()
            .open()
            .err()
            .unwrap_or_else(|| panic!("{url} connected"));
        err.to_string()
    };
    // Plain text reaches the server and is refused there: so the
    // connection above was TLS.
    let plain = refused(&format!("{}?sslmode=disable", pg.url));
    assert!(plain.contains("pg_hba.conf"), "{plain}");
    // TLS whose certificate the system's roots do not vouch for.
    let unverified = refused(&format!("{}?sslmode=require", pg.url));
    assert!(
        unverified.to_lowercase().contains("certificate"),
        "{unverified}"
    );
    // A mode that would fall back to plain text is refused before connecting.
    let prefer = refused(&format!("{}?sslmode=prefer", pg.url));
    assert!(
        prefer.contains("sslmode=prefer") && prefer.contains("verify-full"),
        "{prefer}"
    );
}
