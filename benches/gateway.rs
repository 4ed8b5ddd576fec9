//! One chat's requests through the gateway in process ([`Gateway::handle`]), at 50 and at 5,000
//! tools listed: what a call costs muster as the roster grows (docs/gateway.md, "Speed").
//!
//! The policy is the one `scripts/load-gateway` serves: server-everything from npm over stdio
//! (`get-sum` ranked first) and `tests/mcp-servers/many-tools.mjs` (the official TypeScript
//! SDK's server) listing the rest, both discovered for real, 30 items, deferral on.
//!
//! - `gateway/refused/N`: a `tools/call` of `get-sum` with a string where a number goes:
//!   read the chat, its view, check, refuse, log; no server is reached, so this is muster's
//!   own time whole.
//! - `gateway/forwarded/N`: a `tools/call` of `get-sum` forwarded to server-everything and
//!   answered: muster's own time plus a real server's round trip over stdio.
//! - `gateway/list/N`: `tools/list`.
//!
//! Needs node and `npm ci --prefix tests/mcp-servers`.

use criterion::{Criterion, criterion_group, criterion_main};
use muster::catalog::Selection;
use muster::check::CheckOptions;
use muster::discover::discover_policy;
use muster::gateway::{CallRecord, Gateway, Options};
use muster::policy::Inputs;
use muster::session::SessionKeys;
use muster::store::MemoryStore;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SIZES: [usize; 2] = [50, 5_000];
const FORWARDED: &[u8] = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"mcp__everything__get-sum","arguments":{"a":2,"b":3}}}"#;
const REFUSED: &[u8] = br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"mcp__everything__get-sum","arguments":{"a":"two","b":3}}}"#;
const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#;

/// The tools `many-tools.mjs` lists: `scripts/scale-policies`' distinct snapshot shape.
fn many_tools(n: usize) -> serde_json::Value {
    let tools: Vec<_> = (0..n)
        .map(|i| {
            serde_json::json!({
                "name": format!("tool_{i}"),
                "description": format!("Look up record {i} by its id and return its fields."),
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": format!("Record {i} id.")},
                        "limit": {"type": "integer"},
                    },
                    "required": ["id"],
                },
            })
        })
        .collect();
    serde_json::json!({ "tools": tools })
}

/// A policy directory of `size` tools listed, discovered.
fn policy(dir: &Path, size: usize) -> Inputs {
    let servers = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers");
    let everything =
        servers.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        everything.exists(),
        "benches/gateway.rs needs the npm servers: npm ci --prefix tests/mcp-servers"
    );
    std::fs::create_dir_all(dir.join("mcp")).expect("policy directory");
    std::fs::write(
        dir.join("muster.toml"),
        "[caps]\nitems = 30\ntokens = 9000\n[deferral]\nenabled = true\n\
         [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n",
    )
    .expect("muster.toml");
    let quoted = |p: &Path| serde_json::to_string(&p.display().to_string()).expect("a path");
    let mut servers_toml = format!(
        "[[mcp]]\nname = \"everything\"\ncommand = [\"node\", {}]\nsnapshot = \"everything.json\"\n\
         tool_priority = {{ \"get-sum\" = 10 }}\n",
        quoted(&everything)
    );
    let discover = |dir: &Path| {
        let inputs = Inputs::load(dir).expect("the policy loads");
        let answer = discover_policy(&inputs.policy, &[], false, |_| {}).expect("discovery runs");
        assert_eq!(answer.failed, 0, "every server listed its tools");
        Inputs::load(dir).expect("the discovered policy loads")
    };
    std::fs::write(dir.join("mcp/servers.toml"), &servers_toml).expect("servers.toml");
    let listed = discover(dir).listings.of("everything").len();
    let many = size.saturating_sub(listed);
    if many > 0 {
        let file = dir.join("many-tools.json");
        std::fs::write(&file, many_tools(many).to_string()).expect("the many tools");
        servers_toml.push_str(&format!(
            "[[mcp]]\nname = \"many\"\ncommand = [\"node\", {}, {}]\nsnapshot = \"many.json\"\n",
            quoted(&servers.join("many-tools.mjs")),
            quoted(&file)
        ));
        std::fs::write(dir.join("mcp/servers.toml"), &servers_toml).expect("servers.toml");
    }
    let inputs = discover(dir);
    let total: usize = inputs
        .policy
        .servers
        .iter()
        .map(|s| inputs.listings.of(&s.name).len())
        .sum();
    assert_eq!(total, size.max(listed), "the servers list {size} tools");
    inputs
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let root = std::env::temp_dir().join(format!("muster-bench-gateway-{}", std::process::id()));
    let mut group = c.benchmark_group("gateway");
    group.measurement_time(Duration::from_secs(5));
    for size in SIZES {
        let dir: PathBuf = root.join(size.to_string());
        let inputs = policy(&dir, size);
        let options = Options {
            selection: Selection::default(),
            keys: SessionKeys::none(),
            ttl: Duration::from_secs(3600),
            check: CheckOptions::default(),
            log_arguments: false,
        };
        // Each forwarded call's own time (message to answer, minus the server), as the call
        // log has it: printed per size after the benches.
        let own: Arc<Mutex<Vec<f64>>> = Arc::default();
        let kept = own.clone();
        let observer = Box::new(move |record: &CallRecord| {
            black_box(serde_json::to_string(record).ok());
            if let Some(upstream) = record.upstream_ms {
                let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                if kept.len() < 1_000_000 {
                    kept.push(record.total_ms - upstream);
                }
            }
        });
        let gateway = Gateway::new(inputs, options, Box::new(MemoryStore::default()), observer)
            .expect("a gateway");
        let chat = gateway.open_chat(None, None).expect("a chat");
        let answer = |message: &[u8]| {
            runtime
                .block_on(gateway.handle(&chat, message))
                .response
                .expect("an answer")
        };
        // The view made, the server started and its tools listed; the bench measures warm calls.
        let forwarded = answer(FORWARDED);
        assert!(forwarded.contains("The sum of 2 and 3 is 5"), "{forwarded}");
        let refused = answer(REFUSED);
        assert!(refused.contains(r#""isError":true"#), "{refused}");
        assert!(answer(LIST).contains("mcp__everything__get-sum"));
        group.bench_function(format!("refused/{size}"), |b| {
            b.iter(|| black_box(answer(REFUSED)));
        });
        group.bench_function(format!("forwarded/{size}"), |b| {
            b.iter(|| black_box(answer(FORWARDED)));
        });
        group.bench_function(format!("list/{size}"), |b| {
            b.iter(|| black_box(answer(LIST)));
        });
        let mut own = std::mem::take(&mut *own.lock().unwrap_or_else(|e| e.into_inner()));
        own.sort_by(f64::total_cmp);
        let at = |p: usize| own.get(own.len() * p / 100).copied().unwrap_or(f64::NAN);
        eprintln!(
            "gateway/forwarded/{size}: muster's own time (call log) p50 {:.1} µs, p99 {:.1} µs over {} calls",
            at(50) * 1000.0,
            at(99) * 1000.0,
            own.len()
        );
        runtime.block_on(gateway.shutdown());
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&root);
}

criterion_group!(benches, bench);
criterion_main!(benches);
