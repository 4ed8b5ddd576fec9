//! `[mcp.oauth]` (docs/auth.md, "Upstream credentials"): muster gets an
//! access token for an HTTP MCP server by OAuth client credentials from a
//! real authorization server (the certified `oidc-provider`,
//! tests/idp/idp.mjs), for the server's resource (RFC 8707), and sends it.
//! The server is the official MCP Python SDK's, checking tokens with its
//! bearer middleware (tests/mcp-clients/oauth_upstream.py). A token the
//! server revokes is answered by one more try with a new token; neither the
//! token nor the secret reaches muster's log or its answers; a wrong secret
//! is refused naming the token endpoint and the OAuth error, not the secret.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::auth::{Idp, Serve};
use common::{Fixture, http_client};
use serde_json::{Value, json};

/// The SDK server on a free loopback port, stopped on drop.
struct Upstream {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Upstream {
    fn start(issuer: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let dir = tempfile::tempdir().unwrap();
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-clients/oauth_upstream.py");
        let mut child = Command::new(common::python_sdk())
            .arg(script)
            .arg(port.to_string())
            .arg(issuer)
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the upstream");
        for _ in 0..300 {
            if common::answers_http(port) {
                return Self { child, port, dir };
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the upstream stopped before it listened: {status}");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the upstream did not listen");
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The tokens it accepted (`accepted.txt`) or refused (`refused.txt`).
    fn tokens(&self, file: &str) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join(file))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `[[mcp]]` block of the upstream with client credentials.
fn block(upstream: &Upstream, idp: &Idp, extra: &str) -> String {
    format!(
        "[[mcp]]\nname = \"notes\"\nurl = {url:?}\nsnapshot = \"notes.json\"\n\n\
         [mcp.oauth]\ntoken_url = \"{issuer}/token\"\nclient_id = \"reader\"\n\
         client_secret = \"${{NOTES_SECRET}}\"\nscope = \"memory:read\"\nresource = {url:?}\n{extra}",
        url = upstream.url(),
        issuer = idp.issuer()
    )
}

fn text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_string()
}

#[test]
fn muster_gets_refreshes_and_never_shows_an_upstreams_access_token() {
    let idp = Idp::start("k1");
    let upstream = Upstream::start(&idp.issuer());
    let secret = "reader-secret".to_string();
    // `muster discover` (in start_with) and `muster serve` both get tokens.
    let serve = Serve::start_with(
        "127.0.0.1:0",
        "",
        None,
        &block(&upstream, &idp, ""),
        &[("NOTES_SECRET", secret.clone())],
    );
    assert!(
        !upstream.tokens("accepted.txt").is_empty(),
        "discover reached the server with a token"
    );
    let tools = serve.tools("c1", "unused");
    assert!(
        tools.contains(&"mcp__notes__whoami".to_string()),
        "{tools:?}"
    );
    let first = serve.call("c1", "unused", "mcp__notes__whoami", json!({}));
    assert_eq!(text(&first), "reader", "{first}");
    let before = upstream.tokens("accepted.txt");

    // The server revokes every token it has seen: muster's next call is
    // refused 401, and muster tries once more with a new token.
    let revoked = http_client()
        .post(format!("http://127.0.0.1:{}/revoke", upstream.port))
        .send()
        .unwrap();
    assert_eq!(revoked.status(), 200);
    let second = serve.call("c1", "unused", "mcp__notes__whoami", json!({}));
    assert_eq!(text(&second), "reader", "{second}");
    let refused = upstream.tokens("refused.txt");
    assert!(
        !refused.is_empty(),
        "the revoked token was sent and refused"
    );
    let after = upstream.tokens("accepted.txt");
    let new = after.last().unwrap();
    assert!(!before.contains(new), "the retry carried a new token");

    // A server that echoes its token hands the model `[redacted]`.
    let echoed = serve.call("c1", "unused", "mcp__notes__echo_token", json!({}));
    assert_eq!(text(&echoed), "your token is [redacted]", "{echoed}");

    // No token nor the secret in muster's log or its answers.
    let log = serve.log_text();
    let answers = format!("{first}{second}{echoed}");
    for token in after.iter().chain(&refused) {
        assert!(!log.contains(token.as_str()), "a token reached the log");
        assert!(
            !answers.contains(token.as_str()),
            "a token reached an answer"
        );
    }
    assert!(!log.contains(&secret) && !answers.contains(&secret));
}

#[test]
fn a_wrong_secret_or_a_secret_in_the_policy_is_refused_without_quoting_it() {
    let idp = Idp::start("k1");
    let upstream = Upstream::start(&idp.issuer());
    let fx = Fixture::new(&[
        ("policies/muster.toml", ""),
        ("policies/mcp/notes.toml", &block(&upstream, &idp, "")),
    ]);
    let wrong = "not-the-secret-4711";
    let out = common::muster(fx.path())
        .args(["discover", "--format", "json"])
        .env("NOTES_SECRET", wrong)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("invalid_client"), "{said}");
    assert!(said.contains(&format!("{}/token", idp.issuer())), "{said}");
    assert!(!said.contains(wrong), "{said}");
    assert!(upstream.tokens("accepted.txt").is_empty());

    // A secret written in the policy, oauth without a url, and an unknown
    // auth_method: each refused at its line; the secret never quoted.
    let fx = Fixture::new(&[
        ("policies/muster.toml", ""),
        (
            "policies/mcp/notes.toml",
            "[[mcp]]\nname = \"notes\"\nurl = \"https://notes.example/mcp\"\nsnapshot = \"n.json\"\n\
             oauth = { token_url = \"https://idp.example/token\", client_id = \"m\", client_secret = \"hunter2-literal\" }\n\n\
             [[mcp]]\nname = \"local\"\ncommand = [\"x\"]\nsnapshot = \"l.json\"\n\
             oauth = { token_url = \"http://idp.example/token\", client_id = \"m\", client_secret = \"${S}\", auth_method = \"jwt\" }\n",
        ),
    ]);
    let (err, got) = common::load_refused(&fx);
    common::assert_problems(
        &got,
        &[
            ("invalid-value", 5),
            ("conflict", 11),
            ("insecure-url", 11),
            ("not-a-choice", 11),
        ],
    );
    assert!(!err.to_string().contains("hunter2"), "{err}");
}
