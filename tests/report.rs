//! `muster report`: one self-contained HTML page, the same bytes on every
//! run, and what a real browser renders from it: headless Chromium reads
//! the page of the bundled production plan and of a change against it, and
//! the rendered DOM holds the cut tools, the cap line and the totals.
//! Without Chromium the browser checks print why and pass.

mod common;

use common::{Fixture, muster, plan_value, stdout};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The bundled policies (`policies/`, the base) and the same with
/// workspace.list_files enabled (`head/`): a change a reviewer looks at.
fn change() -> Fixture {
    let fx = Fixture::bundled();
    common::copy_dir(&fx.policies(), &fx.path().join("head"));
    fx.edit("head/tools/20-workspace.toml", "default_roster = false", "");
    fx
}

fn report(fx: &Fixture, args: &[&str]) -> String {
    let mut all = vec!["report", "--flags", "production"];
    all.extend_from_slice(args);
    stdout(fx.path(), &all, 0)
}

/// `6940` as `6,940`, as the page writes figures.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[test]
fn the_page_is_self_contained_and_the_same_bytes_every_run() {
    let fx = change();
    let page = report(&fx, &["head", "--base", "policies"]);
    assert_eq!(page, report(&fx, &["head", "--base", "policies"]));
    assert!(page.starts_with("<!DOCTYPE html>\n"));
    // Nothing is fetched: no script, stylesheet, font, image or frame from anywhere.
    for needle in [
        "<script",
        "<link",
        "src=",
        "href=",
        "url(",
        "@import",
        "@font-face",
        "<iframe",
        "<img",
    ] {
        assert!(!page.contains(needle), "the page contains {needle:?}");
    }
    assert!(
        page.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
    );
    assert!(page.contains("@media print"));
    // --out writes the same bytes.
    muster(fx.path())
        .args([
            "report",
            "--flags",
            "production",
            "head",
            "--base",
            "policies",
            "--out",
            "r.html",
        ])
        .assert()
        .code(0);
    assert_eq!(fx.read("r.html"), page);
}

/// Found by a hostile probe: a plan's names with a bidi override, an escape
/// sequence or an OSC 8 link reached the page written with `--out` raw (a
/// `U+202E` shows `gnp.exe` as `exe.png` in the browser), while stdout had
/// them escaped, so the two differed. Both now write hidden characters as
/// visible `\u{XXXX}`, the same bytes.
#[test]
fn hidden_characters_in_a_plans_names_are_shown_not_rendered() {
    let fx = Fixture::bundled();
    let mut plan = plan_value(fx.path(), &["--flags", "production"]);
    plan["agent"]["name"] = "ag\u{1b}]8;;http://e/\u{7}".into();
    let first = plan["roster"][1]["name"]
        .as_str()
        .expect("a name")
        .to_string();
    plan["roster"][1]["name"] = format!("gnp\u{202e}{first}\u{1b}[2J").into();
    fx.write("evil.json", &plan.to_string());
    let page = stdout(fx.path(), &["report", "evil.json"], 0);
    muster(fx.path())
        .args(["report", "evil.json", "--out", "r.html"])
        .assert()
        .code(0);
    let written = fx.read("r.html");
    assert_eq!(written, page, "--out and stdout give the same bytes");
    for hidden in ['\u{1b}', '\u{202e}', '\u{7}'] {
        assert!(!written.contains(hidden), "{hidden:?} reached the page");
    }
    assert!(written.contains("gnp\\u{202E}"), "the override is shown");
}

#[test]
fn the_page_states_the_share_of_the_chosen_models_context() {
    let fx = Fixture::bundled();
    let plan = plan_value(fx.path(), &["--flags", "production"]);
    let tokens = plan["totals"]["tokens"].as_u64().unwrap();
    let page = report(&fx, &["--model", "claude-sonnet-4-5-20250929"]);
    let percent = (tokens * 10_000 * 2 + 200_000) / (2 * 200_000);
    assert!(
        page.contains(&format!(
            "<p class=\"startup\" id=\"startup\">30 tools ≈ {} tokens ≈ {}.{:02} % of claude-sonnet-4-5-20250929&#39;s 200,000-token context</p>",
            thousands(tokens),
            percent / 100,
            percent % 100
        )),
        "{page}"
    );
    let out = muster(fx.path())
        .args(["report", "--flags", "production", "--model", "gpt-9"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        err.contains("does not know the context window of model \"gpt-9\""),
        "{err}"
    );
}

/// Chromium, if installed: `$MUSTER_CHROMIUM`, else `chromium` or
/// `chromium-browser` on the path.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("MUSTER_CHROMIUM") {
        return Some(path.into());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|p| p.is_file())
}

fn headless(browser: &Path, args: &[&str], page: &Path) -> std::process::Output {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Width and height of a PNG, from its IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&bytes[16..20]), be(&bytes[20..24]))
}

#[test]
fn headless_chromium_renders_the_cut_tools_the_cap_line_and_the_totals() {
    let Some(browser) = chromium() else {
        eprintln!(
            "SKIPPED the browser check: no chromium on PATH (apt-get install -y chromium, or set MUSTER_CHROMIUM); .ci/run installs it"
        );
        return;
    };
    let fx = change();
    for (name, args, plan_args) in [
        ("production.html", vec![], vec!["--flags", "production"]),
        (
            "change.html",
            vec!["head", "--base", "policies"],
            vec!["--flags", "production", "--policies", "head"],
        ),
    ] {
        let page = fx.path().join(name);
        let mut all = vec!["report", "--flags", "production", "--out", name];
        all.extend(args.iter().copied());
        muster(fx.path()).args(&all).assert().code(0);
        let plan = plan_value(fx.path(), &plan_args);
        let dom = String::from_utf8(headless(&browser, &["--dump-dom"], &page).stdout).unwrap();
        assert!(dom.contains("<svg id=\"budget\""), "{name}: no budget bar");
        assert!(dom.contains("id=\"cap-line\""), "{name}: no cap line");
        let cap = thousands(plan["totals"]["token_cap"].as_u64().unwrap());
        assert!(
            dom.contains(&format!("token cap {cap}</text>")),
            "{name}: cap label"
        );
        let tokens = thousands(plan["totals"]["tokens"].as_u64().unwrap());
        assert!(
            dom.contains(&format!(
                "<td class=\"num\" id=\"total-tokens\">{tokens}</td>"
            )),
            "{name}: total tokens {tokens}"
        );
        let items = plan["totals"]["items"].as_u64().unwrap();
        assert!(dom.contains(&format!(
            "<td class=\"num\" id=\"total-items\">{items}</td>"
        )));
        let cut = plan["cut"].as_array().unwrap();
        assert!(!cut.is_empty());
        for tool in cut {
            let name_in_page = tool["name"].as_str().unwrap();
            assert!(
                dom.contains(&format!("<td class=\"tool\">{name_in_page}")),
                "{name}: cut tool {name_in_page} not rendered"
            );
        }
        // One bar block per offered tool, plus the wrapper.
        let blocks = dom.matches(" data-tool=\"").count();
        assert_eq!(
            blocks,
            plan["roster"].as_array().unwrap().len() + 1,
            "{name}"
        );

        let shot = fx.path().join(format!("{name}.png"));
        headless(
            &browser,
            &[
                &format!("--screenshot={}", shot.display()),
                "--window-size=1000,3000",
            ],
            &page,
        );
        assert_eq!(png_size(&std::fs::read(&shot).unwrap()), (1000, 3000));
        // A phone-sized window renders too.
        headless(
            &browser,
            &[
                &format!("--screenshot={}", shot.display()),
                "--window-size=390,2400",
            ],
            &page,
        );
        assert_eq!(png_size(&std::fs::read(&shot).unwrap()), (390, 2400));
        // And it prints: the print style sheet renders to a PDF.
        let pdf = fx.path().join(format!("{name}.pdf"));
        headless(
            &browser,
            &[
                &format!("--print-to-pdf={}", pdf.display()),
                "--no-pdf-header-footer",
            ],
            &page,
        );
        let bytes = std::fs::read(&pdf).unwrap();
        assert!(
            bytes.starts_with(b"%PDF-") && bytes.len() > 10_000,
            "{name}: no PDF"
        );
    }
    // The change: the tool that entered and the tool it pushed out are marked.
    let dom = String::from_utf8(
        headless(&browser, &["--dump-dom"], &fx.path().join("change.html")).stdout,
    )
    .unwrap();
    assert!(dom.contains("<table id=\"diff\">"));
    assert!(
        dom.contains(
            "<tr class=\"entered\"><td>entered</td><td class=\"tool\">workspace.list_files</td>"
        ),
        "{dom}"
    );
    assert!(
        dom.contains("<tr class=\"cut\"><td>cut</td><td class=\"tool\">schedule.delete</td>"),
        "{dom}"
    );
    assert!(dom.contains("<span class=\"badge cut\">newly cut</span>"));
}
