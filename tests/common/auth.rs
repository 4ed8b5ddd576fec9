//! `[auth]` test helpers: the real identity provider (the certified
//! `oidc-provider` from npm, tests/idp/idp.mjs) on 127.0.0.1, and a
//! `muster serve` over the memory server with a reader and a writer agent
//! and an `[auth]` table; each stopped by pid on drop.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::{Fixture, Served, http_client, reference_server};
use jsonwebtoken::EncodingKey;
use serde_json::{Value, json};

/// The identity provider, installed from tests/idp's lock on first use.
pub struct Idp {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Idp {
    pub fn start(kid: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        Self::start_on(port, kid)
    }

    pub fn start_on(port: u16, kid: &str) -> Self {
        let idp = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/idp");
        if !idp.join("node_modules/oidc-provider").is_dir() {
            let ok = Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--prefix"])
                .arg(&idp)
                .status()
                .expect("run npm ci");
            assert!(ok.success(), "npm ci --prefix tests/idp failed");
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut child = Command::new("node")
            .arg(idp.join("idp.mjs"))
            .arg(port.to_string())
            .arg(dir.path())
            .arg(kid)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the identity provider");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        loop {
            match lines.next() {
                Some(Ok(line)) if line == "listening" => break,
                Some(Ok(_)) => {}
                _ => panic!("the identity provider ended before it listened"),
            }
        }
        Self { child, port, dir }
    }

    pub fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A client-credentials access token for `client` with `scope`, for
    /// the resource `resource`.
    pub fn token(&self, client: &str, scope: &str, resource: &str) -> String {
        let body = format!(
            "grant_type=client_credentials&scope={}&resource={}",
            scope.replace(' ', "+").replace(':', "%3A"),
            resource.replace(':', "%3A").replace('/', "%2F")
        );
        let answer: Value = http_client()
            .post(format!("{}/token", self.issuer()))
            .basic_auth(client, Some(format!("{client}-secret")))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .expect("the token endpoint answers")
            .json()
            .expect("a JSON answer");
        answer["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no access token: {answer}"))
            .to_string()
    }

    /// The provider's own signing key and its kid.
    pub fn signing(&self) -> (EncodingKey, String) {
        let text = std::fs::read_to_string(self.dir.path().join("signing.json")).unwrap();
        let signing: Value = serde_json::from_str(&text).unwrap();
        let key = EncodingKey::from_ec_pem(signing["pem"].as_str().unwrap().as_bytes()).unwrap();
        (key, signing["kid"].as_str().unwrap().to_string())
    }

    /// Its key set as served.
    pub fn jwks(&self) -> String {
        http_client()
            .get(format!("{}/jwks", self.issuer()))
            .send()
            .and_then(|r| r.text())
            .expect("the jwks")
    }

    pub fn stop(mut self) -> u16 {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.port
    }
}

impl Drop for Idp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `muster serve` over the memory server with a reader and a writer
/// agent and `[auth]` from `auth`; stopped on drop.
pub struct Serve {
    /// First, so it stops before the fixture's directory is removed.
    pub served: Served,
    pub fx: Fixture,
    graph: PathBuf,
}

impl Serve {
    pub fn start(auth: &str, jwks_file: Option<&str>) -> Self {
        Self::start_on("127.0.0.1:0", auth, jwks_file)
    }

    pub fn start_on(addr: &str, auth: &str, jwks_file: Option<&str>) -> Self {
        Self::start_with(addr, auth, jwks_file, "", &[])
    }

    /// With `servers` (more `[[mcp]]` blocks) beside the memory server, and
    /// `env` set for muster.
    pub fn start_with(
        addr: &str,
        auth: &str,
        jwks_file: Option<&str>,
        servers: &str,
        env: &[(&str, String)],
    ) -> Self {
        Self::start_args(addr, auth, jwks_file, servers, env, &[])
    }

    /// [`Serve::start_with`], with `args` added to `muster serve`'s.
    pub fn start_args(
        addr: &str,
        auth: &str,
        jwks_file: Option<&str>,
        servers: &str,
        env: &[(&str, String)],
        args: &[&str],
    ) -> Self {
        let memory = reference_server("server-memory");
        let fx = Fixture::new(&[(
            "policies/muster.toml",
            &format!(
                "[[agent]]\nname = \"writer\"\ndefault = true\n\n\
                 [[agent]]\nname = \"reader\"\nrequire_hints = [\"read-only\"]\n\n{auth}"
            ),
        )]);
        if let Some(jwks) = jwks_file {
            fx.write("policies/auth/jwks.json", jwks);
        }
        let graph = fx.path().join("graph.jsonl");
        fx.write(
            "policies/mcp/servers.toml",
            &format!(
                "[[mcp]]\nname = \"memory\"\ncommand = [\"node\", {memory:?}]\nsnapshot = \"memory.json\"\n\
                 env = {{ MEMORY_FILE_PATH = {graph:?} }}\n\n{servers}"
            ),
        );
        let discovered = super::muster(fx.path())
            .arg("discover")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run muster discover");
        assert!(
            discovered.status.success(),
            "discover failed: {}{}",
            String::from_utf8_lossy(&discovered.stdout),
            String::from_utf8_lossy(&discovered.stderr)
        );
        let child = Command::new(env!("CARGO_BIN_EXE_muster"))
            .current_dir(fx.path())
            .args(["serve", "--addr", addr])
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start muster serve");
        let served = Served::from_child(child);
        Self { served, fx, graph }
    }

    /// Starts `chat` with a reader's `credential`: it lists read-only
    /// tools only, and its write is refused before the memory server.
    pub fn reader_is_read_only(&self, chat: &str, credential: &str) {
        let tools = self.tools(chat, credential);
        assert!(
            tools.contains(&"mcp__memory__read_graph".to_string()),
            "{tools:?}"
        );
        assert!(
            !tools.contains(&"mcp__memory__create_entities".to_string()),
            "{tools:?}"
        );
        let created = self.call(
            chat,
            credential,
            "mcp__memory__create_entities",
            json!({"entities": [{"name": "Mallory", "entityType": "person", "observations": []}]}),
        );
        assert!(
            created.get("error").is_some() || created["result"]["isError"] == true,
            "{created}"
        );
        assert!(!self.graph().contains("Mallory"), "{}", self.graph());
    }

    /// The fields of the call log line of `caller`'s call to `tool`,
    /// waiting for it (its line may reach the log reader a moment after
    /// the answer).
    pub fn call_logged(&self, caller: &str, tool: &str) -> Value {
        let fields = |l: &Value| -> Value {
            if l["fields"].is_object() {
                l["fields"].clone()
            } else {
                l.clone()
            }
        };
        let mut logged = Vec::new();
        for _ in 0..200 {
            logged = self.calls_logged();
            if let Some(f) = logged
                .iter()
                .map(fields)
                .find(|f| f["tool"] == tool && f["caller"] == caller)
            {
                return f;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!("no call of {tool} logged for {caller}: {logged:?}")
    }

    /// Every line it logged so far.
    pub fn log_text(&self) -> String {
        self.served.log().join("\n")
    }

    /// The gateway's call log lines so far, read.
    pub fn calls_logged(&self) -> Vec<Value> {
        self.served
            .log()
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["target"] == "muster::gateway")
            .collect()
    }

    pub fn post(
        &self,
        path: &str,
        token: Option<&str>,
        body: &Value,
    ) -> reqwest::blocking::Response {
        let mut request = http_client()
            .post(self.served.url(path))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send().expect("muster answers")
    }

    /// Starts chat `chat` with `token` and answers its `tools/list` names.
    pub fn tools(&self, chat: &str, token: &str) -> Vec<String> {
        let path = format!("/mcp/chats/{chat}");
        let init = self.post(&path, Some(token), &initialize());
        assert_eq!(init.status(), 200, "{}", init.text().unwrap());
        let list: Value = self
            .post(
                &path,
                Some(token),
                &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            )
            .json()
            .unwrap();
        list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{list}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    }

    pub fn call(&self, chat: &str, token: &str, tool: &str, arguments: Value) -> Value {
        self.post(
            &format!("/mcp/chats/{chat}"),
            Some(token),
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}),
        )
        .json()
        .unwrap()
    }

    pub fn graph(&self) -> String {
        std::fs::read_to_string(&self.graph).unwrap_or_default()
    }
}

pub fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "auth-test", "version": "1"}}})
}

/// The problem code and `WWW-Authenticate` of a refusal.
pub fn refusal(response: reqwest::blocking::Response) -> (u16, String, String) {
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body: Value = response.json().unwrap_or(Value::Null);
    (
        status,
        body["type"].as_str().unwrap_or("").to_string(),
        challenge,
    )
}
