//! Issue 33: a large web page, fetched by a real fetch server (PyPI
//! `mcp-server-fetch`, the reference server) from a page served on
//! 127.0.0.1, arrives through `muster call` within its server's
//! `max_result_tokens` and still holds the page's beginning, with the
//! `result-cut` note naming the server's own paging arguments.

mod common;

use std::process::{Child, Command, Stdio};

use common::{Fixture, muster, python_sdk, stdout};
use muster::tokens::Encoding;
use serde_json::{Value, json};

/// A static file server on a free loopback port, stopped on drop.
struct Pages {
    child: Child,
    port: u16,
}

impl Pages {
    fn start(dir: &std::path::Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let child = Command::new(python_sdk())
            .args([
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .arg("--directory")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python -m http.server");
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        Self { child, port }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTML page of about 1.5 MiB: a title, then numbered paragraphs.
fn big_page() -> String {
    let mut page =
        String::from("<html><head><title>Harbour log</title></head><body><h1>Harbour log</h1>\n");
    let mut n = 0;
    while page.len() < 1_500_000 {
        n += 1;
        page.push_str(&format!(
            "<p>Entry {n}: the tide turned at the north mole; vessel {n} moored at berth {} and unloaded timber, salt and letters.</p>\n",
            n % 40
        ));
    }
    page + "</body></html>\n"
}

#[test]
fn a_large_page_fetched_arrives_within_its_budget_and_holds_its_beginning() {
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[caps]\nitems = 30\ntokens = 9000\n",
    )]);
    let site = fx.path().join("site");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(site.join("log.html"), big_page()).unwrap();
    let pages = Pages::start(&site);
    let python = python_sdk();
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"fetch\"\ncommand = [{python:?}, \"-m\", \"mcp_server_fetch\", \"--ignore-robots-txt\", \"--allow-private-ips\"]\n\
             snapshot = \"fetch.json\"\nallow = [\"fetch\"]\nmax_result_tokens = 2000\ntimeout_secs = 60\n"
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    let plan = stdout(fx.path(), &["plan", "--format", "json"], 0);
    fx.write("plan.json", &plan);
    let url = format!("http://127.0.0.1:{}/log.html", pages.port);
    let calls = json!([{"id": "c1", "name": "mcp__fetch__fetch",
        "arguments": {"url": url, "max_length": 999_999, "raw": true}}]);
    fx.write("turn.json", &json!({ "calls": calls }).to_string());
    let out = muster(fx.path()).args(common::CALL_JSON).assert().code(0);
    let answer: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let result = &answer["results"][0];
    assert_eq!(result["status"], "forwarded", "{answer:#}");
    let texts: Vec<&str> = result["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer:#}"))
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect();
    let tokens: u32 = texts
        .iter()
        .map(|t| Encoding::O200kBase.count_text(t))
        .sum();
    assert!(tokens <= 2000, "{tokens} tokens arrived");
    assert!(tokens >= 1500, "the budget is used: {tokens}");
    assert!(
        texts[0].contains("Harbour log") && texts[0].contains("Entry 1:"),
        "the page's beginning arrives: {}",
        &texts[0][..texts[0].len().min(400)]
    );
    assert!(!texts[0].contains("Entry 9000:"), "not its far end");
    let meta = &result["result"]["_meta"]["dev.muster/gateway"]["result"];
    assert_eq!(meta["cut"], true, "{meta:#}");
    assert_eq!(meta["budget"], 2000, "{meta:#}");
    // What the server sent: the first 999,999 characters the call asked for.
    assert!(meta["bytes_before"].as_u64().unwrap() > 900_000, "{meta:#}");
    let last = texts.last().unwrap();
    assert!(last.contains("result-cut"), "{last}");
    let paging = meta["note"]["paging"].as_array().unwrap();
    assert!(
        paging.contains(&json!("start_index")),
        "the fetch server's own paging argument: {meta:#}"
    );
}
