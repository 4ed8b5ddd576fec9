//! Shared test helpers: policy directories written from inline fixtures,
//! and a copy of the bundled example policies to modify.

#![allow(dead_code)]

pub mod auth;
pub mod load_asks;
pub mod load_notes;
pub mod postgres;
pub mod twenty;

use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Arc, Mutex};

/// A builder for the tests' HTTP clients. muster reaches MCP servers over
/// https with rustls and the ring provider, which reqwest (its features
/// unified with muster's in a test build) needs installed process-wide
/// before any client is built; this installs it first.
pub fn http_builder() -> reqwest::blocking::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::blocking::Client::builder()
}

/// A test HTTP client with reqwest's defaults ([`http_builder`]).
pub fn http_client() -> reqwest::blocking::Client {
    http_builder().build().expect("an HTTP client")
}

/// A policy directory in a temporary folder, removed on drop.
pub struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Fixture {
    /// Writes each `(relative path, content)` under a fresh directory.
    pub fn new(files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for (path, content) in files {
            write(dir.path(), path, content);
        }
        Self { dir }
    }

    /// A copy of the bundled `policies/` and `gates/`, under `policies/`
    /// and `gates/` of a fresh directory.
    pub fn bundled() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        copy_dir(&root.join("policies"), &dir.path().join("policies"));
        copy_dir(&root.join("gates"), &dir.path().join("gates"));
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn policies(&self) -> PathBuf {
        self.dir.path().join("policies")
    }

    pub fn write(&self, path: &str, content: &str) {
        write(self.dir.path(), path, content);
    }

    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(path)).expect("read fixture file")
    }

    /// Replaces `from` with `to` in a file, failing if `from` is absent.
    pub fn edit(&self, path: &str, from: &str, to: &str) {
        let text = self.read(path);
        assert!(text.contains(from), "{path} does not contain {from:?}");
        self.write(path, &text.replacen(from, to, 1));
    }
}

fn write(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, content).expect("write");
}

/// A running `muster serve`, stopped and reaped on drop (also when an
/// assertion fails first): the address it listens on, and its stderr
/// lines after the start line, kept as they come.
#[allow(dead_code)]
pub struct Served {
    child: Child,
    /// The address it listens on (`127.0.0.1:PORT`).
    pub addr: String,
    log: Arc<Mutex<Vec<String>>>,
}

#[allow(dead_code)]
impl Served {
    /// `muster serve --addr 127.0.0.1:0 {args}` in `dir`, `env` set, no `MUSTER_ADMIN_TOKEN`.
    pub fn start(dir: &Path, args: &[&str], env: &[(&str, String)]) -> Served {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_muster"))
            .current_dir(dir)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env_remove("MUSTER_ADMIN_TOKEN")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start muster serve");
        Self::from_child(child)
    }

    /// Takes over a `muster serve` spawned with stderr piped (e.g. under a wrapper).
    pub fn from_child(mut child: Child) -> Served {
        use std::io::BufRead as _;
        let stderr = child.stderr.take().expect("muster serve's stderr is piped");
        let log = Arc::new(Mutex::new(Vec::new()));
        // Owned before the start line is read, so a panic there stops it too.
        let mut served = Served {
            child,
            addr: String::new(),
            log: log.clone(),
        };
        let mut lines = std::io::BufReader::new(stderr).lines();
        served.addr = serve_address(&mut lines);
        // Keep reading so the service never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in lines {
                let Ok(line) = line else { continue };
                log.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
        served
    }

    /// `http://{addr}{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Its stderr lines after the start line, so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status, if it has exited (not waiting for it).
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().expect("muster serve's status")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address `muster serve` logs it listens on: reads its stderr `lines`
/// up to the `start` event (JSON log lines; others skipped), leaving the
/// rest for the caller.
#[allow(dead_code)]
pub fn serve_address(lines: &mut impl Iterator<Item = std::io::Result<String>>) -> String {
    loop {
        let line = lines
            .next()
            .expect("muster serve ended before it listened")
            .expect("muster serve's stderr is readable");
        if let Ok(log) = serde_json::from_str::<serde_json::Value>(&line)
            && log["event"] == "start"
        {
            return log["addr"]
                .as_str()
                .expect("the start event names its address")
                .to_string();
        }
    }
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// The problems (code, line) loading `fx`'s policies is refused with,
/// and the error itself.
pub fn load_refused(fx: &Fixture) -> (muster::Error, Vec<(String, Option<usize>)>) {
    let err = muster::policy::Inputs::load(&fx.path().join("policies")).expect_err("refused");
    let got = err
        .problems()
        .iter()
        .map(|p| (p.code.to_string(), p.line))
        .collect();
    (err, got)
}

/// That every (code, line) of `want` is among `got`.
pub fn assert_problems(got: &[(String, Option<usize>)], want: &[(&str, usize)]) {
    for (code, line) in want {
        assert!(
            got.contains(&(code.to_string(), Some(*line))),
            "{code} at line {line} missing from {got:?}"
        );
    }
}

/// The muster binary, run in `dir`.
pub fn muster(dir: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(env!("CARGO_BIN_EXE_muster"));
    cmd.current_dir(dir);
    // Tests share one token-count cache, never the user's.
    cmd.env(
        "MUSTER_CACHE_DIR",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("muster-cache"),
    );
    // Encoding every fixture's tools at plan and discover is tests/warm.rs's to test.
    cmd.env("MUSTER_NO_WARM", "1");
    cmd
}

/// Runs muster in `dir` with `args`, expects exit code `code`, and returns
/// its stdout.
pub fn stdout(dir: &Path, args: &[&str], code: i32) -> String {
    let assert = muster(dir).args(args).assert().code(code);
    String::from_utf8(assert.get_output().stdout.clone()).expect("utf-8 stdout")
}

/// `muster plan --format json` with `args`, parsed.
pub fn plan_value(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["plan", "--format", "json"];
    all.extend_from_slice(args);
    serde_json::from_str(&stdout(dir, &all, 0)).expect("plan JSON")
}

/// Names of a plan's `list` (`roster`, `deferred` or `cut`), in order.
pub fn names_in(doc: &serde_json::Value, list: &str) -> Vec<String> {
    doc[list]
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| e["name"].as_str().expect("a name").to_string())
        .collect()
}

/// The entry point of a reference MCP server from the npm registry,
/// installing the pinned servers (`npm ci --prefix tests/mcp-servers`)
/// first when they are missing, so `cargo test` needs no set-up of its own.
pub fn reference_server(package: &str) -> String {
    let servers = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers");
    let entry = servers
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    if !entry.is_file() {
        install_servers(&servers);
    }
    assert!(
        entry.is_file(),
        "{} is missing and `npm ci --prefix tests/mcp-servers` did not provide it (needs node 20+ and npm)",
        entry.display()
    );
    entry.to_string_lossy().into_owned()
}

/// A reference server from npm serving Streamable HTTP
/// (`streamableHttp`) on a free loopback port, stopped on drop. The
/// servers take only a `PORT` and would listen on every interface;
/// `tests/mcp-servers/loopback.mjs`, preloaded, binds them to 127.0.0.1.
pub struct HttpServer {
    child: std::process::Child,
    port: u16,
}

impl HttpServer {
    pub fn start(package: &str) -> Self {
        let entry = reference_server(package);
        let servers = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers");
        // A free port: bound, read and let go (the server takes it next).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let mut child = std::process::Command::new("node")
            .arg("--import")
            .arg(servers.join("loopback.mjs"))
            .arg(&entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("node starts");
        for _ in 0..300 {
            if answers_http(port) {
                return Self { child, port };
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("{package} stopped before it listened: {status}");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("{package} did not listen on 127.0.0.1:{port}");
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// Whether something on 127.0.0.1:`port` answers an HTTP request (any
/// status): listening alone is not ready.
pub fn answers_http(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(2)));
    let request =
        format!("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 5];
    stream.read_exact(&mut head).is_ok() && &head == b"HTTP/"
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `npm ci` once: one test process installs while the others (in this
/// process or another) wait for it.
fn install_servers(servers: &Path) {
    static IN_PROCESS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = IN_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    let done = servers.join("node_modules/.package-lock.json");
    let lock = servers.join(".install-lock");
    for _ in 0..600 {
        if done.is_file() {
            return;
        }
        if std::fs::create_dir(&lock).is_ok() {
            let status = std::process::Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--prefix"])
                .arg(servers)
                .status();
            let _ = std::fs::remove_dir(&lock);
            match status {
                Ok(s) if s.success() => return,
                Ok(s) => panic!("`npm ci --prefix tests/mcp-servers` failed: {s}"),
                Err(e) => panic!("cannot run npm to install the MCP test servers: {e}"),
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    panic!("timed out waiting for another test to install the MCP test servers");
}

/// `muster check --plan plan.json --turn turn.json --format json`.
pub const CHECK_JSON: [&str; 7] = [
    "check",
    "--plan",
    "plan.json",
    "--turn",
    "turn.json",
    "--format",
    "json",
];

/// `muster call --plan plan.json --turn turn.json --format json`.
pub const CALL_JSON: [&str; 7] = [
    "call",
    "--plan",
    "plan.json",
    "--turn",
    "turn.json",
    "--format",
    "json",
];

/// [`CHECK_JSON`] in `dir`, expecting exit `code`, parsed.
pub fn check_value(dir: &Path, code: i32) -> serde_json::Value {
    let out = stdout(dir, &CHECK_JSON, code);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("check JSON: {e}\n{out}"))
}

/// The `$ref` "billion laughs" schema of issue 24 at `depth`:
/// `l{i} = {"allOf": [{"$ref": l{i-1}}, {"$ref": l{i-1}}]}`, the property
/// `x` pointing at the deepest.
pub fn laughs(depth: usize) -> serde_json::Value {
    use serde_json::json;
    let mut defs = serde_json::Map::new();
    defs.insert("l0".into(), json!({"type": "string"}));
    for i in 1..=depth {
        let below = format!("#/$defs/l{}", i - 1);
        defs.insert(
            format!("l{i}"),
            json!({"allOf": [{"$ref": below}, {"$ref": below}]}),
        );
    }
    json!({"type": "object", "$defs": defs,
        "properties": {"x": {"$ref": format!("#/$defs/l{depth}")}}})
}

/// Runs the client `tests/mcp-clients/<script>` on the official MCP Python
/// SDK's interpreter with `args`, in `dir` when given, and reads the JSON it
/// prints; a client that fails panics with its status, stdout and stderr.
pub fn run_client<S: AsRef<std::ffi::OsStr>>(
    script: &str,
    args: &[S],
    dir: Option<&Path>,
) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp-clients")
        .join(script);
    let mut command = std::process::Command::new(python_sdk());
    command.arg(script).args(args);
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let out = command.output().expect("run the MCP Python SDK client");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the Python client failed: {}\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The Python interpreter of a virtual environment holding the official MCP
/// Python SDK (`tests/mcp-clients/requirements.txt`), made on first use
/// under the target directory, so `cargo test` needs no set-up of its own.
pub fn python_sdk() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-py");
    let python = venv.join("bin/python");
    // The marker names the requirements it was installed from, so a
    // changed requirements file installs again.
    let wanted = std::fs::read(root.join("tests/mcp-clients/requirements.txt"))
        .expect("read tests/mcp-clients/requirements.txt");
    let stamp = wanted.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    let ready = venv.join(format!(".installed-{stamp:016x}"));
    static IN_PROCESS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = IN_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    let lock = venv.with_extension("lock");
    for _ in 0..1200 {
        if ready.is_file() {
            return python;
        }
        if std::fs::create_dir(&lock).is_ok() {
            let run = |cmd: &mut std::process::Command| {
                let status = cmd.status();
                assert!(
                    matches!(status, Ok(s) if s.success()),
                    "{cmd:?} failed ({status:?}): the MCP Python SDK tests need python3 with venv and pip, and PyPI"
                );
            };
            run(std::process::Command::new("python3")
                .arg("-m")
                .arg("venv")
                .arg(&venv));
            run(std::process::Command::new(&python)
                .args(["-m", "pip", "install", "-q", "-r"])
                .arg(root.join("tests/mcp-clients/requirements.txt")));
            std::fs::write(&ready, "").expect("mark the venv installed");
            let _ = std::fs::remove_dir(&lock);
            return python;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    panic!("timed out waiting for another test to install the MCP Python SDK");
}

/// The MCP Inspector's command (its CLI mode is `--cli`), from the pinned
/// npm packages.
pub fn inspector() -> PathBuf {
    let servers = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers");
    let bin = servers.join("node_modules/.bin/mcp-inspector");
    if !bin.exists() {
        // Installed before the inspector was pinned: install again.
        let _ = std::fs::remove_file(servers.join("node_modules/.package-lock.json"));
        install_servers(&servers);
    }
    assert!(bin.exists(), "{} is missing after npm ci", bin.display());
    bin
}

/// The vendored SARIF 2.1.0 schema's validator.
pub fn sarif_validator() -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/sarif/sarif-schema-2.1.0.json"),
        )
        .unwrap(),
    )
    .unwrap();
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the SARIF schema compiles")
}

pub fn assert_valid_sarif(validator: &jsonschema::Validator, text: &str) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_str(text).expect("SARIF is JSON");
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "SARIF invalid: {errors:#?}\n{text}");
    doc
}
