//! `[auth]` against a real identity provider nobody here wrote: the
//! certified `oidc-provider` from npm (tests/idp/idp.mjs), started on
//! 127.0.0.1 and stopped by pid. Its client-credentials tokens open the
//! agents their scopes are granted; tokens that are expired, for another
//! audience or issuer, unsigned (`alg: none`), HMAC-signed or signed with a
//! key the issuer does not hold are refused with 401; keys rotated at the
//! provider are picked up from its JWKS URL; a reader's roster holds only
//! read-only tools and its writes never reach the memory server; a chat is
//! its starter's alone; limits answer 429 with Retry-After (docs/auth.md).

mod common;

use common::auth::{Idp, Serve, initialize, refusal};
use common::{Fixture, http_client};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

const AUDIENCE: &str = "https://muster.test/mcp";

/// A key nobody trusts (made for this test with openssl).
const UNTRUSTED_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg/0pse/9IZAvxNcfx
6pQeQnCPoparO+ruSjDEehvWyH+hRANCAARnJyVRpeng1cwUZwQQrHsxwKk6uCt6
brb2z05fRfyCFN7yZNf2kWtPN0+P1GdBzRI/TSJQ56MRXNtAO8eu1wMC
-----END PRIVATE KEY-----
";

/// Seconds since the epoch.
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A token with `claims`, signed ES256 by `key` under `kid`.
fn forged(key: &EncodingKey, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_string());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn claims(issuer: &str, aud: &str, exp: u64, scope: &str) -> Value {
    json!({"sub": "forger", "client_id": "forger", "iss": issuer, "aud": aud, "exp": exp, "iat": now(), "scope": scope})
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn auth_table(issuer: &str, jwks: &str, extra: &str) -> String {
    auth_table_for(AUDIENCE, issuer, jwks, extra)
}

fn auth_table_for(audience: &str, issuer: &str, jwks: &str, extra: &str) -> String {
    format!(
        "[auth]\nissuer = {issuer:?}\naudience = {audience:?}\njwks = {jwks:?}\n{extra}\n\
         [[auth.grant]]\nscope = \"memory:write\"\nagents = [\"writer\"]\n\n\
         [[auth.grant]]\nscope = \"memory:read\"\nagents = [\"reader\"]\n"
    )
}

/// The issue's bar, with the issuer's keys in a file of the policy.
#[test]
fn tokens_open_the_agents_their_scopes_grant_and_nothing_else() {
    let idp = Idp::start("k1");
    let serve = Serve::start(
        &auth_table(&idp.issuer(), "auth/jwks.json", "metrics = \"token\"\n"),
        Some(&idp.jwks()),
    );
    let plan = json!({});

    // No token: 401 naming the metadata, on a chat and on /v1/plan.
    for path in ["/mcp/chats/any", "/v1/plan"] {
        let (status, kind, challenge) = refusal(serve.post(path, None, &initialize()));
        assert_eq!(status, 401, "{path}");
        assert_eq!(kind, "urn:muster:problem:token-missing", "{path}");
        let suffix = if path.starts_with("/mcp") { "/mcp" } else { "" };
        assert_eq!(
            challenge,
            format!(
                "Bearer resource_metadata=\"http://{}/.well-known/oauth-protected-resource{suffix}\"",
                serve.served.addr
            )
        );
    }
    // The metadata document names the resource and the issuer.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let doc: Value = http_client()
            .get(serve.served.url(path))
            .send()
            .unwrap()
            .json()
            .unwrap();
        assert_eq!(doc["resource"], AUDIENCE, "{doc}");
        assert_eq!(doc["authorization_servers"], json!([idp.issuer()]), "{doc}");
        assert_eq!(
            doc["scopes_supported"],
            json!(["memory:read", "memory:write"]),
            "{doc}"
        );
    }

    // Tokens that must not pass: each 401 invalid_token with its reason.
    let (key, kid) = idp.signing();
    let untrusted = EncodingKey::from_ec_pem(UNTRUSTED_PEM.as_bytes()).unwrap();
    let none = format!(
        "{}.{}.",
        b64(br#"{"alg":"none","typ":"JWT"}"#),
        b64(claims(&idp.issuer(), AUDIENCE, now() + 600, "memory:write")
            .to_string()
            .as_bytes())
    );
    let mut hmac = Header::new(Algorithm::HS256);
    hmac.kid = Some(kid.clone());
    let hs256 = jsonwebtoken::encode(
        &hmac,
        &claims(&idp.issuer(), AUDIENCE, now() + 600, "memory:write"),
        &EncodingKey::from_secret(idp.jwks().as_bytes()).unwrap(),
    )
    .unwrap();
    // Found by a hostile probe: tokens naming nobody (no string `sub` or
    // `client_id`) shared one empty caller, its chats and its limits, and a
    // `sub` of `key:NAME` spoke for an API key's caller.
    let naming = |edit: &dyn Fn(&mut Value)| {
        let mut c = claims(&idp.issuer(), AUDIENCE, now() + 600, "memory:write");
        edit(&mut c);
        forged(&key, &kid, &c)
    };
    let nobody = naming(&|c| {
        c.as_object_mut().unwrap().remove("sub");
        c.as_object_mut().unwrap().remove("client_id");
    });
    let numeric = naming(&|c| {
        c["sub"] = json!(12345);
        c.as_object_mut().unwrap().remove("client_id");
    });
    let a_key = naming(&|c| c["sub"] = json!("key:ci"));
    let refused = [
        ("missing-claim", nobody),
        ("missing-claim", numeric),
        ("missing-claim", a_key),
        (
            "expired",
            forged(
                &key,
                &kid,
                &claims(&idp.issuer(), AUDIENCE, now() - 3600, "memory:write"),
            ),
        ),
        (
            "wrong-audience",
            idp.token("writer", "memory:write", "https://elsewhere.test/mcp"),
        ),
        (
            "wrong-issuer",
            forged(
                &key,
                &kid,
                &claims("http://127.0.0.1:1", AUDIENCE, now() + 600, "memory:write"),
            ),
        ),
        ("algorithm-refused", none),
        ("algorithm-refused", hs256),
        (
            "unknown-key",
            forged(
                &untrusted,
                "not-the-issuers",
                &claims(&idp.issuer(), AUDIENCE, now() + 600, "memory:write"),
            ),
        ),
        (
            "bad-signature",
            forged(
                &untrusted,
                &kid,
                &claims(&idp.issuer(), AUDIENCE, now() + 600, "memory:write"),
            ),
        ),
    ];
    for (reason, token) in &refused {
        for path in ["/mcp/chats/any", "/v1/plan"] {
            let (status, kind, challenge) = refusal(serve.post(path, Some(token), &plan));
            assert_eq!(status, 401, "{reason} on {path}");
            assert_eq!(
                kind, "urn:muster:problem:token-invalid",
                "{reason} on {path}"
            );
            assert!(
                challenge.starts_with(&format!(
                    "Bearer error=\"invalid_token\", error_description=\"{reason}\""
                )),
                "{reason}: {challenge}"
            );
            assert!(challenge.contains("resource_metadata="), "{challenge}");
        }
    }
    // A valid token whose scopes no grant names: 403.
    let other = forged(
        &key,
        &kid,
        &claims(&idp.issuer(), AUDIENCE, now() + 600, "profile"),
    );
    let (status, kind, challenge) = refusal(serve.post("/v1/plan", Some(&other), &plan));
    assert_eq!(
        (status, kind.as_str()),
        (403, "urn:muster:problem:insufficient-scope")
    );
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("scope=\"memory:read memory:write\""),
        "{challenge}"
    );

    // The provider's own tokens pass.
    let reader = idp.token("reader", "memory:read", AUDIENCE);
    let writer = idp.token("writer", "memory:read memory:write", AUDIENCE);
    assert_eq!(serve.post("/v1/plan", Some(&writer), &plan).status(), 200);

    // A reader sees read-only tools only, and its write never runs; the
    // call log names the caller, its client, the agent and the verdict.
    serve.reader_is_read_only("readers-chat", &reader);
    let f = serve.call_logged("reader", "mcp__memory__create_entities");
    assert_eq!(f["client_id"], "reader", "{f}");
    assert_eq!(f["agent"], "reader", "{f}");
    assert_ne!(f["verdict"], "forwarded", "{f}");
    // Nor run the writer's turns through /v1/call (its default agent is the
    // writer's): refused before anything runs.
    for body in [
        json!({"turn": {"calls": []}, "fingerprint": format!("sha256:{}", "0".repeat(64))}),
        json!({"turn": {"calls": []}, "fingerprint": format!("sha256:{}", "0".repeat(64)), "agent": "writer"}),
    ] {
        let (status, kind, _) = refusal(serve.post("/v1/call", Some(&reader), &body));
        assert_eq!(
            (status, kind.as_str()),
            (403, "urn:muster:problem:insufficient-scope"),
            "{body}"
        );
    }
    // A reader may not ask for the writer's agent.
    let (status, kind, _) = refusal(serve.post(
        "/mcp/chats/sneaky?agent=writer",
        Some(&reader),
        &initialize(),
    ));
    assert_eq!(
        (status, kind.as_str()),
        (403, "urn:muster:problem:insufficient-scope")
    );

    // The writer's grants open it: its call gets past the agent check (to
    // the fingerprint's, which this made-up one fails).
    let past = serve.post(
        "/v1/call",
        Some(&writer),
        &json!({"turn": {"calls": []}, "fingerprint": format!("sha256:{}", "0".repeat(64))}),
    );
    assert_eq!(past.status(), 409, "{}", past.text().unwrap());
    // A writer lists it and its call reaches the server.
    let tools = serve.tools("writers-chat", &writer);
    assert!(
        tools.contains(&"mcp__memory__create_entities".to_string()),
        "{tools:?}"
    );
    let created = serve.call(
        "writers-chat",
        &writer,
        "mcp__memory__create_entities",
        json!({"entities": [{"name": "Ada", "entityType": "person", "observations": []}]}),
    );
    assert!(
        created.get("result").is_some() && created["result"]["isError"] != json!(true),
        "{created}"
    );
    assert!(serve.graph().contains("Ada"), "{}", serve.graph());

    // The writer's token on the reader's chat gets nothing: 404, as for a
    // chat that does not exist; the reader's chat is untouched.
    let answer = serve.post(
        "/mcp/chats/readers-chat",
        Some(&writer),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    assert_eq!(answer.status(), 404);
    let body: Value = answer.json().unwrap();
    assert!(body.get("result").is_none(), "{body}");
    let ended = http_client()
        .delete(serve.served.url("/mcp/chats/readers-chat"))
        .bearer_auth(&writer)
        .send()
        .unwrap();
    assert_eq!(ended.status(), 404);
    assert!(
        serve
            .tools("readers-chat", &reader)
            .contains(&"mcp__memory__read_graph".to_string())
    );

    // /healthz stays open; /metrics, set to "token", wants one.
    let get = |path: &str, token: Option<&str>| {
        let mut request = http_client().get(serve.served.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send().unwrap().status().as_u16()
    };
    assert_eq!(get("/healthz", None), 200);
    assert_eq!(get("/metrics", None), 401);
    assert_eq!(get("/metrics", Some(&reader)), 200);
    let _ = &serve.fx;
}

/// Keys by URL: a rotation at the provider is picked up; limits answer 429
/// with Retry-After over HTTP and a JSON-RPC error in a chat.
#[test]
fn rotated_keys_are_fetched_and_limits_answer_429() {
    let idp = Idp::start("k1");
    let jwks = format!("{}/jwks", idp.issuer());
    let serve = Serve::start(
        &auth_table(
            &idp.issuer(),
            &jwks,
            "jwks_refetch_secs = 0\n[auth.limits]\ncalls_per_minute = 5\ntool_calls_per_minute = 1\n",
        ),
        None,
    );
    let plan = json!({});
    let before = idp.token("writer", "memory:read memory:write", AUDIENCE);
    assert_eq!(serve.post("/v1/plan", Some(&before), &plan).status(), 200);

    // The provider starts again with a new key on the same port.
    let port = idp.stop();
    let idp = Idp::start_on(port, "k2");
    let after = idp.token("writer", "memory:read memory:write", AUDIENCE);
    let answer = serve.post("/v1/plan", Some(&after), &plan);
    assert_eq!(answer.status(), 200, "{}", answer.text().unwrap());
    // The old key is gone from the set: its token no longer passes.
    let (status, _, challenge) = refusal(serve.post("/v1/plan", Some(&before), &plan));
    assert_eq!(status, 401);
    assert!(challenge.contains("unknown-key"), "{challenge}");

    // A reader makes 5 requests a minute, then is told when to come back.
    let reader = idp.token("reader", "memory:read", AUDIENCE);
    for _ in 0..5 {
        assert_eq!(serve.post("/v1/plan", Some(&reader), &plan).status(), 200);
    }
    let over = serve.post("/v1/plan", Some(&reader), &plan);
    assert_eq!(over.status(), 429);
    let retry: u64 = over.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    let body: Value = over.json().unwrap();
    assert_eq!(body["type"], "urn:muster:problem:rate-limited");

    // In a chat (its start took one of the writer's 5), a second call to
    // one tool within the minute is a JSON-RPC error the model can read; it
    // never reaches the server.
    serve.tools("limited", &after);
    let first = serve.call("limited", &after, "mcp__memory__read_graph", json!({}));
    assert!(first.get("result").is_some(), "{first}");
    let second = serve.call(
        "limited",
        &after,
        "mcp__memory__create_entities",
        json!({"entities": [{"name": "Eve", "entityType": "person", "observations": []}]}),
    );
    assert!(
        second.get("result").is_some(),
        "another tool has its own bucket: {second}"
    );
    let third = serve.call("limited", &after, "mcp__memory__read_graph", json!({}));
    assert_eq!(third["error"]["code"], -32013, "{third}");
    assert_eq!(third["error"]["data"]["code"], "rate-limited", "{third}");
    assert_eq!(third["error"]["data"]["scope"], "tool", "{third}");

    // Counted in the metrics, by agent.
    let metrics = http_client()
        .get(serve.served.url("/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics.contains("muster_rate_limited_total{agent=\"reader\",scope=\"caller\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("muster_rate_limited_total{agent=\"writer\",scope=\"tool\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("muster_auth_refused_total{reason=\"unknown-key\"} 1"),
        "{metrics}"
    );
}

/// `[auth]` mistakes are refused when the policies load, each with its
/// code, file and line, all at once.
#[test]
fn broken_auth_tables_are_refused_with_their_code_and_line() {
    let fx = Fixture::new(&[
        (
            "policies/tools/t.toml",
            "[[tool]]\nname = \"a\"\ndescription = \"A tool.\"\n",
        ),
        (
            "policies/muster.toml",
            "[[agent]]\nname = \"reader\"\n\n\
             [auth]\nissuer = \"https://idp.example/\"\naudience = \"https://m.example/mcp\"\n\
             jwks = \"http://idp.example/jwks\"\nleeway_secs = 9999\n\n\
             [[auth.grant]]\nscope = \"memory:read\"\nagents = [\"nobody\"]\n\n\
             [[auth.grant]]\nscope = \"a\"\nclaim = \"groups\"\nvalue = \"x\"\nagents = [\"reader\"]\n",
        ),
    ]);
    let (_, got) = common::load_refused(&fx);
    common::assert_problems(
        &got,
        &[
            ("insecure-url", 7),
            ("out-of-range", 8),
            ("unknown-name", 12),
            ("conflict", 15),
        ],
    );
    let unknown = Fixture::new(&[
        (
            "policies/tools/t.toml",
            "[[tool]]\nname = \"a\"\ndescription = \"A tool.\"\n",
        ),
        (
            "policies/muster.toml",
            "[auth]\nissuer = \"i\"\naudience = \"a\"\njwks = \"missing.json\"\ncolour = 1\n",
        ),
    ]);
    let err = muster::policy::Inputs::load(&unknown.path().join("policies")).expect_err("refused");
    assert_eq!(err.problems()[0].code, "unknown-key", "{err}");
}

/// The official MCP Python SDK's own auth flow: its client-credentials
/// provider meets muster's 401, reads the metadata it names, gets a token
/// from the provider for muster's resource and lists the writer's tools.
/// (The SDK asks for every scope the metadata lists, as the MCP spec's
/// scope selection says, so the client is one the provider allows both.)
#[test]
fn the_python_sdks_oauth_flow_completes_against_musters_metadata() {
    let idp = Idp::start("k1");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let serve = Serve::start_on(
        &format!("127.0.0.1:{port}"),
        &auth_table_for(
            &resource,
            &idp.issuer(),
            &format!("{}/jwks", idp.issuer()),
            "",
        ),
        None,
    );
    let seen = common::run_client(
        "oauth.py",
        &[
            resource.as_str(),
            &idp.issuer(),
            "writer",
            "memory:read memory:write",
        ],
        None,
    );
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(tools.contains(&"mcp__memory__read_graph"), "{seen}");
    assert!(tools.contains(&"mcp__memory__create_entities"), "{seen}");
    assert_eq!(seen["scope"], "memory:read memory:write", "{seen}");
    let _ = &serve.fx;
}

/// Found by a hostile probe: while the issuer's key set had never been
/// fetched, every token made muster fetch it again (300 junk tokens, 300
/// fetches, each queued behind the last), and the refusal quoted its URL
/// with `?api_key=…`. A key set URL that answers 500: 20 tokens make one
/// fetch within the refetch floor, each answered 503 `jwks-unavailable`,
/// and no answer quotes the query.
#[test]
fn an_unreachable_key_set_is_not_fetched_per_token_nor_its_url_quoted() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fetches = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = fetches.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    let jwks = format!("http://127.0.0.1:{port}/jwks?api_key=QUERYSECRET");
    let serve = Serve::start(
        &auth_table("https://idp.example/", &jwks, "jwks_refetch_secs = 300"),
        None,
    );
    let junk = format!(
        "{}.{}.c2ln",
        b64(br#"{"alg":"ES256","kid":"k"}"#),
        b64(br#"{"sub":"x"}"#)
    );
    for _ in 0..20 {
        let answer = serve.post("/v1/plan", Some(&junk), &json!({}));
        assert_eq!(answer.status(), 503);
        let body = answer.text().unwrap();
        assert!(body.contains("jwks-unavailable"), "{body}");
        assert!(!body.contains("QUERYSECRET"), "{body}");
    }
    let fetched = fetches.load(std::sync::atomic::Ordering::SeqCst);
    assert!((1..=2).contains(&fetched), "{fetched} fetches");
}
