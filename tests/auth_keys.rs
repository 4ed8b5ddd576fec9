//! Static API keys (`[[auth.key]]`, docs/auth.md): made by `muster auth
//! key new`, which prints the key once and an entry holding only its
//! SHA-256; sent as `Authorization: Bearer mst_…`. A key's caller
//! (`key:NAME`) owns its chats, is limited and logged as a token's is; its
//! agents decide its roster; an unknown key is a 401 that never quotes it,
//! and no key text reaches muster's log. Keys work with no identity
//! provider at all, and beside the real one (oidc-provider) when `[auth]`
//! names it.

mod common;

use common::auth::{Idp, Serve, initialize, refusal};
use common::{Fixture, http_client};
use serde_json::{Value, json};

const AUDIENCE: &str = "https://muster.test/mcp";

/// `muster auth key new NAME --agents AGENTS --format json`: the key and
/// the entry to paste.
fn new_key(name: &str, agents: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = common::stdout(
        dir.path(),
        &[
            "auth", "key", "new", name, "--agents", agents, "--format", "json",
        ],
        0,
    );
    let made: Value = serde_json::from_str(&out).unwrap();
    let key = made["key"].as_str().unwrap().to_string();
    let entry = made["entry"].as_str().unwrap().to_string();
    assert!(key.starts_with("mst_"), "{made}");
    assert!(
        !entry.contains(&key),
        "the entry holds the hash only: {entry}"
    );
    assert_eq!(
        made["hash"].as_str().unwrap().len(),
        "sha256:".len() + 64,
        "{made}"
    );
    (key, entry)
}

/// Keys without any identity provider: the reader's key lists read-only
/// tools and its writes never run; the writer's key gets nothing on the
/// reader's chat; unknown keys and JWTs are 401 without an echo.
#[test]
fn api_keys_open_their_agents_without_an_identity_provider() {
    let (reader, reader_entry) = new_key("reader-bot", "reader");
    let (writer, writer_entry) = new_key("ci", "writer,reader");
    let serve = Serve::start(
        &format!(
            "[auth]\nmetrics = \"token\"\n\n[auth.limits]\ntool_calls_per_minute = 2\n\n\
             {reader_entry}\n{writer_entry}"
        ),
        None,
    );
    let plan = json!({});

    // No key: 401, with no metadata to point to (no issuer) and none served.
    let (status, kind, challenge) = refusal(serve.post("/mcp/chats/any", None, &initialize()));
    assert_eq!(
        (status, kind.as_str(), challenge.as_str()),
        (
            401,
            "urn:muster:problem:token-missing",
            "Bearer realm=\"muster\""
        )
    );
    let metadata = http_client()
        .get(serve.served.url("/.well-known/oauth-protected-resource"))
        .send()
        .unwrap();
    assert_eq!(metadata.status(), 404);

    // A key nobody holds, and a JWT when there is no issuer: 401 with the
    // reason, the presented text nowhere in the answer.
    let unknown = format!("mst_{}", "A".repeat(43));
    let jwt = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln";
    for (token, reason) in [(&*unknown, "unknown-api-key"), (jwt, "jwt-not-accepted")] {
        for path in ["/mcp/chats/any", "/v1/plan"] {
            let answer = serve.post(path, Some(token), &plan);
            let status = answer.status().as_u16();
            let challenge = answer.headers()["www-authenticate"]
                .to_str()
                .unwrap()
                .to_string();
            let body = answer.text().unwrap();
            assert_eq!(status, 401, "{path}: {body}");
            assert!(
                challenge.contains(&format!("error_description=\"{reason}\"")),
                "{challenge}"
            );
            assert!(
                !body.contains(token) && !challenge.contains(token),
                "{body}"
            );
            let problem: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(problem["type"], "urn:muster:problem:token-invalid");
        }
    }

    // The keys pass: /v1/* and /metrics (set to "token").
    assert_eq!(serve.post("/v1/plan", Some(&reader), &plan).status(), 200);
    let metrics = http_client()
        .get(serve.served.url("/metrics"))
        .bearer_auth(&reader)
        .send()
        .unwrap();
    assert_eq!(metrics.status(), 200);

    // The reader's key plans its chat for the reader agent.
    serve.reader_is_read_only("keyed", &reader);
    // A key may not ask for an agent it does not open; the writer's key may.
    let (status, kind, _) = refusal(serve.post(
        "/mcp/chats/sneaky?agent=writer",
        Some(&reader),
        &initialize(),
    ));
    assert_eq!(
        (status, kind.as_str()),
        (403, "urn:muster:problem:insufficient-scope")
    );
    let tools = serve.tools("ci-chat", &writer);
    assert!(
        tools.contains(&"mcp__memory__create_entities".to_string()),
        "{tools:?}"
    );

    // The chat is its key's caller's: the writer's key gets 404 on it.
    let answer = serve.post(
        "/mcp/chats/keyed",
        Some(&writer),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    assert_eq!(answer.status(), 404);

    // Limited per caller and tool like a token's caller.
    for _ in 0..2 {
        let ok = serve.call("ci-chat", &writer, "mcp__memory__read_graph", json!({}));
        assert!(ok.get("result").is_some(), "{ok}");
    }
    let over = serve.call("ci-chat", &writer, "mcp__memory__read_graph", json!({}));
    assert_eq!(over["error"]["data"]["code"], "rate-limited", "{over}");

    // Logged under `key:NAME`; no key's text anywhere in the log.
    let f = serve.call_logged("key:reader-bot", "mcp__memory__create_entities");
    assert_eq!(f["agent"], "reader", "{f}");
    assert_eq!(f["client_id"], "", "{f}");

    // Revoked: its entry removed and the policies reloaded, the reader's
    // key is refused; the writer's still passes.
    serve.fx.edit("policies/muster.toml", &reader_entry, "");
    let reloaded = http_client()
        .post(serve.served.url("/v1/admin/reload"))
        .bearer_auth(&writer)
        .send()
        .unwrap();
    assert_eq!(reloaded.status(), 200, "{}", reloaded.text().unwrap());
    let (status, _, challenge) = refusal(serve.post("/v1/plan", Some(&reader), &plan));
    assert_eq!(status, 401);
    assert!(challenge.contains("unknown-api-key"), "{challenge}");
    assert_eq!(serve.post("/v1/plan", Some(&writer), &plan).status(), 200);

    let log = serve.log_text();
    for key in [&reader, &writer, &unknown] {
        assert!(!log.contains(key.as_str()), "a key reached the log");
        assert!(!log.contains(&key[4..]), "a key's body reached the log");
    }
}

/// With an issuer set too, the provider's tokens and the keys both pass.
#[test]
fn api_keys_and_the_issuers_tokens_pass_side_by_side() {
    let idp = Idp::start("k1");
    let (key, entry) = new_key("batch", "reader");
    let serve = Serve::start(
        &format!(
            "[auth]\nissuer = {:?}\naudience = {AUDIENCE:?}\njwks = \"{}/jwks\"\n\n\
             [[auth.grant]]\nscope = \"memory:write\"\nagents = [\"writer\"]\n\n{entry}",
            idp.issuer(),
            idp.issuer()
        ),
        None,
    );
    let token = idp.token("writer", "memory:read memory:write", AUDIENCE);
    let tools = serve.tools("by-token", &token);
    assert!(
        tools.contains(&"mcp__memory__create_entities".to_string()),
        "{tools:?}"
    );
    let tools = serve.tools("by-key", &key);
    assert!(
        !tools.contains(&"mcp__memory__create_entities".to_string()),
        "{tools:?}"
    );
    // With an issuer, a refusal points to the metadata as before.
    let (status, _, challenge) = refusal(serve.post(
        "/v1/plan",
        Some(&format!("mst_{}", "B".repeat(43))),
        &json!({}),
    ));
    assert_eq!(status, 401);
    assert!(challenge.contains("unknown-api-key"), "{challenge}");
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    // The key's caller does not reach the token's chat.
    let answer = serve.post(
        "/mcp/chats/by-token",
        Some(&key),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    assert_eq!(answer.status(), 404);
}

/// `[[auth.key]]` and `[auth]` mistakes, each with its code and line.
#[test]
fn broken_keys_are_refused_with_their_code_and_line() {
    let hash = format!("sha256:{}", "ab".repeat(32));
    let fx = Fixture::new(&[
        (
            "policies/tools/t.toml",
            "[[tool]]\nname = \"a\"\ndescription = \"A tool.\"\n",
        ),
        (
            "policies/muster.toml",
            &format!(
                "[[agent]]\nname = \"reader\"\n\n\
                 [auth]\nleeway_secs = 10\n\n\
                 [[auth.grant]]\nscope = \"x\"\nagents = [\"reader\"]\n\n\
                 [[auth.key]]\nname = \"ok\"\nagents = [\"reader\"]\nhash = {hash:?}\n\n\
                 [[auth.key]]\nname = \"ok\"\nagents = [\"nobody\"]\nhash = \"mst_plaintext\"\n\n\
                 [[auth.key]]\nname = \"has space\"\nagents = [\"reader\"]\nhash = {hash:?}\n"
            ),
        ),
    ]);
    let (err, got) = common::load_refused(&fx);
    common::assert_problems(
        &got,
        &[
            ("conflict", 5),       // leeway_secs without an issuer
            ("conflict", 7),       // a grant without an issuer
            ("conflict", 16),      // the name of the first key
            ("unknown-name", 18),  // an agent nobody declares
            ("invalid-value", 19), // the key text where its hash goes
            ("conflict", 21),      // the same hash as the first key
            ("invalid-value", 22), // a name with a space
        ],
    );
    // `muster auth key new` refuses a name a key may not have (exit 2).
    common::muster(fx.path())
        .args(["auth", "key", "new", "has space", "--agents", "reader"])
        .assert()
        .code(2)
        .stdout("");
    // A key's text written where its hash goes is never quoted back.
    assert!(!err.to_string().contains("mst_plaintext"), "{err}");

    for (auth, code) in [
        ("[auth]\nmetrics = \"open\"\n", "missing-value"),
        ("[auth]\nissuer = \"https://i.example/\"\n", "missing-value"),
    ] {
        let fx = Fixture::new(&[
            (
                "policies/tools/t.toml",
                "[[tool]]\nname = \"a\"\ndescription = \"A tool.\"\n",
            ),
            ("policies/muster.toml", auth),
        ]);
        let (err, got) = common::load_refused(&fx);
        assert_eq!(got[0].0, code, "{auth}: {err}");
    }
}

/// With `[auth]` and an admin token both set, the admin token reloads (the
/// admin routes are guarded by it alone, since both cannot ride in one
/// `Authorization` header) and a caller's key does not.
#[test]
fn with_an_admin_token_the_admin_routes_take_it_and_not_a_callers_key() {
    let (key, entry) = new_key("ci", "writer");
    let admin = "an-admin-token-of-forty-characters-0123".to_string();
    let serve = Serve::start_with(
        "127.0.0.1:0",
        &format!("[auth]\n\n{entry}"),
        None,
        "",
        &[("MUSTER_ADMIN_TOKEN", admin.clone())],
    );
    let reload = |token: &str| {
        http_client()
            .post(serve.served.url("/v1/admin/reload"))
            .bearer_auth(token)
            .send()
            .unwrap()
    };
    let by_admin = reload(&admin);
    assert_eq!(by_admin.status(), 200, "{}", by_admin.text().unwrap());
    let by_caller = reload(&key);
    assert_eq!(by_caller.status(), 401, "{}", by_caller.text().unwrap());
    // The caller's routes still take the key, and not the admin token.
    assert_eq!(serve.post("/v1/plan", Some(&key), &json!({})).status(), 200);
    assert_eq!(
        serve.post("/v1/plan", Some(&admin), &json!({})).status(),
        401
    );
}

/// Found by a hostile probe: with `--sessions`, another caller reached a
/// chat through `/v1/sessions/*` by its id (read it whole, searched it,
/// deleted it) though `/mcp` answered it 404; and a session `POST
/// /v1/sessions` made had no owner at all. A kept session whose document
/// names an owner is now answered as not kept to anyone else, on every
/// route that takes an id, and `POST /v1/sessions` makes its caller's.
#[test]
fn another_callers_chat_or_session_is_not_kept_for_you() {
    let (alice, alice_entry) = new_key("alice", "writer,reader");
    let (mallory, mallory_entry) = new_key("mallory", "writer,reader");
    let store = tempfile::tempdir().unwrap();
    let sessions = format!("sqlite:{}", store.path().join("s.db").display());
    let serve = Serve::start_args(
        "127.0.0.1:0",
        &format!("[auth]\n\n{alice_entry}\n{mallory_entry}"),
        None,
        "",
        &[],
        &["--sessions", &sessions],
    );
    let init = serve.post("/mcp/chats/alices-chat", Some(&alice), &initialize());
    assert_eq!(init.status(), 200, "{}", init.text().unwrap());
    let client = http_client();
    let get = |id: &str, token: &str| {
        client
            .get(serve.served.url(&format!("/v1/sessions/{id}")))
            .bearer_auth(token)
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(get("alices-chat", &mallory), 404);
    let search = json!({"session_id": "alices-chat", "query": "read the graph"});
    let searched = serve.post("/v1/sessions/search", Some(&mallory), &search);
    assert_eq!(searched.status(), 404, "{}", searched.text().unwrap());
    let deleted = client
        .delete(serve.served.url("/v1/sessions/alices-chat"))
        .bearer_auth(&mallory)
        .send()
        .unwrap();
    assert_eq!(deleted.status(), 404);
    assert_eq!(get("alices-chat", &alice), 200, "still alice's");
    // A session made over /v1 is its caller's too.
    let made = serve.post("/v1/sessions", Some(&alice), &json!({}));
    assert_eq!(made.status(), 200);
    let made: Value = made.json().unwrap();
    let id = made["id"].as_str().expect("a kept session's id");
    assert_eq!(made["owner"], "key:alice", "{made}");
    assert_eq!(get(id, &mallory), 404);
    assert_eq!(get(id, &alice), 200);
}

/// Found by a hostile probe: two `Authorization` headers were let in on
/// the first (a good key, then junk: 200), while a proxy in front may read
/// the last. Two headers are refused whatever they hold.
#[test]
fn two_authorization_headers_are_refused() {
    let (key, entry) = new_key("ci", "writer");
    let serve = Serve::start(&format!("[auth]\n\n{entry}"), None);
    let send = |headers: &[&str]| {
        let mut request = http_client()
            .post(serve.served.url("/v1/plan"))
            .header("content-type", "application/json")
            .body("{}");
        for h in headers {
            request = request.header("authorization", *h);
        }
        request.send().unwrap().status().as_u16()
    };
    let good = format!("Bearer {key}");
    assert_eq!(send(&[&good]), 200);
    assert_eq!(send(&[&good, "Bearer junk"]), 401);
    assert_eq!(send(&["Bearer junk", &good]), 401);
    assert_eq!(send(&[&good, &good]), 401);
}

/// Found by a hostile probe: one key opened 89,976 chats in 110 s, no
/// limit applying to `initialize`, until the store was full and every other
/// caller's new chat was 503. A new chat takes one from its caller's
/// `calls_per_minute` bucket: past it, -32013 `rate-limited`, no chat made;
/// another caller's chats are not touched.
#[test]
fn new_chats_are_charged_to_their_callers_bucket() {
    let (flood, flood_entry) = new_key("flood", "writer");
    let (other, other_entry) = new_key("other", "writer");
    let serve = Serve::start(
        &format!("[auth]\n\n[auth.limits]\ncalls_per_minute = 3\n\n{flood_entry}\n{other_entry}"),
        None,
    );
    for i in 0..3 {
        let init = serve.post(
            &format!("/mcp/chats/flood-{i}"),
            Some(&flood),
            &initialize(),
        );
        assert_eq!(init.status(), 200, "{}", init.text().unwrap());
    }
    let over: Value = serve
        .post("/mcp/chats/flood-3", Some(&flood), &initialize())
        .json()
        .unwrap();
    assert_eq!(over["error"]["code"], -32013, "{over}");
    assert_eq!(over["error"]["data"]["code"], "rate-limited", "{over}");
    let root: Value = serve
        .post("/mcp", Some(&flood), &initialize())
        .json()
        .unwrap();
    assert_eq!(root["error"]["code"], -32013, "{root}");
    let init = serve.post("/mcp/chats/other-0", Some(&other), &initialize());
    assert_eq!(init.status(), 200, "{}", init.text().unwrap());
}

/// Found by a hostile probe: `/v1/call` took one from the caller's bucket
/// per request, so a turn of 50 calls ran 50 under `tool_calls_per_minute =
/// 3`; and it resolved `session_id` for any caller. Each call of a turn is
/// now charged as a chat's is (past a limit: 429, nothing runs), and
/// another caller's kept session is 404.
#[test]
fn a_v1_call_turn_is_charged_per_call_and_reaches_only_its_callers_session() {
    let (alice, alice_entry) = new_key("alice", "writer");
    let (mallory, mallory_entry) = new_key("mallory", "writer");
    let store = tempfile::tempdir().unwrap();
    let sessions = format!("sqlite:{}", store.path().join("s.db").display());
    let serve = Serve::start_args(
        "127.0.0.1:0",
        &format!(
            "[auth]\n\n[auth.limits]\ntool_calls_per_minute = 2\n\n{alice_entry}\n{mallory_entry}"
        ),
        None,
        "",
        &[],
        &["--sessions", &sessions],
    );
    let made: Value = serve
        .post("/v1/sessions", Some(&alice), &json!({}))
        .json()
        .unwrap();
    let id = made["id"].as_str().expect("a kept session").to_string();
    let create = |name: &str| {
        json!({"id": name, "name": "mcp__memory__create_entities", "arguments":
            {"entities": [{"name": name, "entityType": "person", "observations": []}]}})
    };
    let turn = |names: &[&str]| json!({"session_id": id, "turn": {"calls": names.iter().map(|n| create(n)).collect::<Vec<_>>()}});
    let theirs = serve.post("/v1/call", Some(&mallory), &turn(&["Mallory"]));
    assert_eq!(theirs.status(), 404, "{}", theirs.text().unwrap());
    let over = serve.post("/v1/call", Some(&alice), &turn(&["Ann", "Bob", "Cid"]));
    assert_eq!(over.status(), 429, "{}", over.text().unwrap());
    assert!(!serve.graph().contains("Ann"), "nothing of the turn ran");
    assert!(!serve.graph().contains("Mallory"));
}
