//! CI-native output of `gate`, `validate` and `lock --check`: GitHub
//! workflow commands on the right file and line, SARIF that validates
//! against the vendored SARIF 2.1.0 schema, JUnit XML that a real JUnit
//! parser (Python's junitparser) and a strict XML parser read, a markdown
//! summary, and the same bytes on every run.

mod common;

use common::{Fixture, assert_valid_sarif, muster, sarif_validator};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The bundled policies as before the record's fix (no calling group) with
/// workspace.list_files enabled: the production gate fails on a calling
/// tool at the gate's `require` line.
fn failing_gate() -> Fixture {
    let fx = Fixture::bundled();
    let muster_toml = fx.read("policies/muster.toml");
    let start = muster_toml.find("[[group]]").unwrap();
    let end = muster_toml.find("[[agent]]").unwrap();
    fx.write(
        "policies/muster.toml",
        &format!("{}{}", &muster_toml[..start], &muster_toml[end..]),
    );
    fx.edit(
        "policies/tools/20-workspace.toml",
        "default_roster = false",
        "",
    );
    fx
}

/// The 1-based line of the first line of `file` in `fx` containing `needle`.
fn line_of(fx: &Fixture, file: &str, needle: &str) -> usize {
    fx.read(file)
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{file} has no line with {needle:?}"))
        + 1
}

fn run(fx: &Fixture, args: &[&str], code: i32) -> String {
    let out = muster(fx.path()).args(args).assert().code(code);
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

#[test]
fn github_annotations_name_the_gate_line_of_the_squeezed_calling_tool() {
    let fx = failing_gate();
    let out = run(&fx, &["gate", "--format", "github"], 1);
    let lines: Vec<&str> = out.lines().collect();
    let require = line_of(
        &fx,
        "gates/production.toml",
        "\"mcp.bland_read.list_calls\",",
    );
    // The pinned roster's place, as the gate failure gives it: its first entry.
    let roster = line_of(&fx, "gates/production.toml", "roster = [") + 1;
    assert!(
        lines[0].starts_with(&format!(
            "::error file=gates/production.toml,line={require},title=muster required-not-offered::gate production chat roster: required tool mcp.bland_read.list_calls is cut (item-cap)"
        )),
        "{out}"
    );
    assert!(
        lines[1].starts_with(&format!(
            "::error file=gates/production.toml,line={roster},title=muster roster-differs::"
        )),
        "{out}"
    );
    assert_eq!(
        lines[2],
        "::notice title=muster gate::muster gate: 1 check(s), 1 failed, 0 warning(s)"
    );
    assert_eq!(lines.len(), 3, "{out}");
}

#[test]
fn github_annotations_name_the_policy_file_and_line_of_a_policy_error() {
    let fx = Fixture::bundled();
    fx.write(
        "policies/tools/99-typo.toml",
        "[[tool]]\nname = \"x.y\"\nprority = 1\n",
    );
    let out = muster(fx.path())
        .args(["validate", "--format", "github"])
        .assert()
        .code(2);
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let first = stdout.lines().next().unwrap();
    assert!(
        first.starts_with(
            "::error file=policies/tools/99-typo.toml,line=3,title=muster policy::unknown field `prority`"
        ),
        "{stdout}"
    );
    // Newlines in the message are escaped, so the help stays in the annotation.
    assert!(first.contains("%0Ahelp: "), "{first}");
    // stderr still has the problem for people.
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("99-typo.toml:3:"), "{stderr}");
}

#[test]
fn lock_check_reports_drift_on_the_lock_line_and_writes_nothing() {
    let fx = Fixture::bundled();
    assert_eq!(
        run(&fx, &["lock", "--check"], 0),
        "lock policies/mcp.lock: up to date\n"
    );
    let lock = fx.read("policies/mcp.lock");
    // The tool's table in the lock (format 2): its header is the line named,
    // its `hash` the next line.
    let line = line_of(&fx, "policies/mcp.lock", "[mcp.bland_call.start_call]");
    let old = lock.lines().nth(line).unwrap().to_string();
    assert!(old.starts_with("hash = "), "{old}");
    let hash_at = old.find("sha256:").unwrap() + "sha256:".len();
    let changed = format!("{}{}{}", &old[..hash_at], "0".repeat(64), "\"");
    fx.write("policies/mcp.lock", &lock.replace(&old, &changed));
    let before = fx.read("policies/mcp.lock");
    let out = run(&fx, &["lock", "--check", "--format", "github"], 1);
    assert!(
        out.starts_with(&format!(
            "::error file=policies/mcp.lock,line={line},title=muster lock-changed::mcp.bland_call.start_call differs from the definition the lock records"
        )),
        "{out}"
    );
    assert_eq!(
        fx.read("policies/mcp.lock"),
        before,
        "--check writes nothing"
    );

    // The JSON, read back through this test's own types.
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Check {
        format_version: u32,
        lock_file: String,
        drift: Vec<Drift>,
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Drift {
        status: String,
        server: String,
        tool: String,
        locked: Option<String>,
        current: Option<String>,
        /// What kind of change, when the lock can tell (docs/policy.md).
        #[serde(default)]
        changes: Vec<String>,
        file: String,
        line: Option<usize>,
    }
    let check: Check =
        serde_json::from_str(&run(&fx, &["lock", "--check", "--format", "json"], 1)).unwrap();
    assert_eq!(check.format_version, 1);
    assert_eq!(check.lock_file, "policies/mcp.lock");
    assert_eq!(check.drift.len(), 1);
    let d = &check.drift[0];
    assert_eq!(
        (d.status.as_str(), d.server.as_str(), d.tool.as_str()),
        ("changed", "bland_call", "start_call")
    );
    assert_eq!(
        d.locked.as_deref(),
        Some(&*format!("sha256:{}", "0".repeat(64)))
    );
    assert!(d.current.as_ref().unwrap().starts_with("sha256:"));
    // Only the hash was edited: the parts still match, so no kind is named.
    assert!(d.changes.iter().all(|c| !c.is_empty()), "{:?}", d.changes);
    assert_eq!((d.file.as_str(), d.line), ("policies/mcp.lock", Some(line)));

    // A CI format without --check is a usage error: `lock` writes.
    muster(fx.path())
        .args(["lock", "--format", "sarif"])
        .assert()
        .code(2);
}

#[test]
fn sarif_validates_against_the_sarif_2_1_0_schema() {
    let validator = sarif_validator();
    // The schema is not a rubber stamp: a result without a message fails it.
    let bad = serde_json::json!({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "r"}]}]});
    assert!(!validator.is_valid(&bad));

    let fx = failing_gate();
    let doc = assert_valid_sarif(&validator, &run(&fx, &["gate", "--format", "sarif"], 1));
    let results = doc["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["ruleId"], "required-not-offered");
    assert_eq!(results[0]["level"], "error");
    let place = &results[0]["locations"][0]["physicalLocation"];
    assert_eq!(place["artifactLocation"]["uri"], "gates/production.toml");
    assert_eq!(
        place["region"]["startLine"],
        line_of(
            &fx,
            "gates/production.toml",
            "\"mcp.bland_read.list_calls\","
        )
    );
    let rules = doc["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    assert_eq!(rules[0]["id"], "required-not-offered");
    assert_eq!(rules[1]["id"], "roster-differs");

    // A passing validation with warnings, a policy error and lock drift.
    let ok = Fixture::bundled();
    ok.edit(
        "policies/flags/production.toml",
        "]",
        ", \"NOT_A_FLAG_ANYONE_READS\"]",
    );
    let doc = assert_valid_sarif(&validator, &run(&ok, &["validate", "--format", "sarif"], 0));
    let results = doc["runs"][0]["results"].as_array().unwrap();
    assert!(
        results
            .iter()
            .any(|r| r["ruleId"] == "unused-flag" && r["level"] == "warning"),
        "{doc:#}"
    );
    ok.write("policies/tools/99-typo.toml", "[[tool]]\nname = 3\n");
    assert_valid_sarif(&validator, &run(&ok, &["validate", "--format", "sarif"], 2));
    std::fs::remove_file(ok.policies().join("tools/99-typo.toml")).unwrap();
    std::fs::remove_file(ok.policies().join("mcp.lock")).unwrap();
    let doc = assert_valid_sarif(
        &validator,
        &run(&ok, &["lock", "--check", "--format", "sarif"], 1),
    );
    let results = doc["runs"][0]["results"].as_array().unwrap();
    assert!(results.iter().all(|r| r["ruleId"] == "lock-unlocked"));
    assert_eq!(
        results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "policies/mcp/servers.toml"
    );
}

/// A virtual environment with the pinned junitparser, made once under
/// target/; `None` (the test says why) when Python or the package index is
/// out of reach.
fn junitparser_python() -> Option<PathBuf> {
    static ONCE: std::sync::Mutex<Option<Option<PathBuf>>> = std::sync::Mutex::new(None);
    let mut done = ONCE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = done.as_ref() {
        return found.clone();
    }
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("junit-venv");
    let python = venv.join("bin/python");
    let requirements = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/junit/requirements.txt");
    let ready = || {
        Command::new(&python)
            .args(["-c", "import junitparser"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let found = if ready() {
        Some(python.clone())
    } else {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .output()
            .is_ok_and(|o| o.status.success());
        let installed = made
            && Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
                .arg(&requirements)
                .output()
                .is_ok_and(|o| o.status.success());
        if installed && ready() {
            Some(python.clone())
        } else {
            eprintln!(
                "SKIPPED the junitparser check: could not make a Python venv with {} (needs python3 with venv and the PyPI index); the XML is still checked with roxmltree",
                requirements.display()
            );
            None
        }
    };
    *done = Some(found.clone());
    found
}

/// What junitparser reads from a JUnit file: per case, name, classname and
/// the failure's type, plus the suite totals.
const READ_JUNIT: &str = r#"
import json, sys
from junitparser import JUnitXml, Failure
xml = JUnitXml.fromfile(sys.argv[1])
out = []
for suite in xml:
    cases = []
    for case in suite:
        failures = [r for r in case.result if isinstance(r, Failure)]
        cases.append({"name": case.name, "classname": case.classname,
                      "passed": case.is_passed,
                      "failure": failures[0].type if failures else None,
                      "failure_text": failures[0].text if failures else None})
    out.append({"name": suite.name, "tests": suite.tests, "failures": suite.failures, "cases": cases})
print(json.dumps(out))
"#;

#[test]
fn junit_parses_with_junitparser_and_a_strict_xml_parser() {
    let fx = failing_gate();
    let gate = run(&fx, &["gate", "--format", "junit"], 1);
    let ok = Fixture::bundled();
    let passing = run(&ok, &["gate", "--format", "junit"], 0);
    // A message with every character XML must escape or cannot hold.
    ok.write(
        "policies/tools/99-odd.toml",
        "[[tool]]\nname = \"x.y\"\nprority = \"<&>\\\"'\\u0001\"\n",
    );
    let error = run(&ok, &["validate", "--format", "junit"], 2);

    for text in [&gate, &passing, &error] {
        let doc = roxmltree::Document::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        let cases: Vec<_> = root
            .descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        assert_eq!(root.attribute("tests"), Some(&*cases.len().to_string()));
    }
    let doc = roxmltree::Document::parse(&gate).unwrap();
    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .unwrap();
    assert_eq!(failure.attribute("type"), Some("required-not-offered"));
    assert!(failure.text().unwrap().contains("gates/production.toml:"));

    let Some(python) = junitparser_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let read = |text: &str| -> Value {
        let file = dir.path().join("junit.xml");
        std::fs::write(&file, text).unwrap();
        let out = Command::new(&python)
            .args(["-c", READ_JUNIT])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "junitparser refused:\n{}\n{text}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let suites = read(&gate);
    assert_eq!(suites[0]["name"], "muster gate");
    assert_eq!(
        (suites[0]["tests"].as_u64(), suites[0]["failures"].as_u64()),
        (Some(1), Some(1))
    );
    let case = &suites[0]["cases"][0];
    assert_eq!(case["name"], "production chat roster");
    assert_eq!(case["passed"], false);
    assert_eq!(case["failure"], "required-not-offered");
    assert!(
        case["failure_text"]
            .as_str()
            .unwrap()
            .contains("mcp.bland_read.list_calls")
    );

    let suites = read(&passing);
    assert_eq!(suites[0]["cases"][0]["passed"], true);
    assert_eq!(suites[0]["failures"], 0);

    let suites = read(&error);
    let case = &suites[0]["cases"][0];
    assert_eq!(case["failure"], "policy");
    assert!(
        case["failure_text"]
            .as_str()
            .unwrap()
            .contains("99-odd.toml:3:"),
        "{case}"
    );
}

#[test]
fn the_markdown_summary_lists_each_check_and_finding() {
    let fx = failing_gate();
    let out = run(&fx, &["gate", "--format", "markdown"], 1);
    assert!(out.starts_with("### muster gate\n"), "{out}");
    assert!(
        out.contains("| production chat roster | **failed** | 30/30 |"),
        "{out}"
    );
    let line = line_of(
        &fx,
        "gates/production.toml",
        "\"mcp.bland_read.list_calls\",",
    );
    assert!(
        out.contains(&format!(
            "| error | `required-not-offered` | `gates/production.toml:{line}` |"
        )),
        "{out}"
    );
}

#[test]
fn every_ci_format_gives_the_same_bytes_twice() {
    let fx = failing_gate();
    for format in ["github", "sarif", "junit", "markdown", "json", "text"] {
        for command in [&["gate"][..], &["validate"][..], &["lock", "--check"][..]] {
            let mut args = command.to_vec();
            args.extend(["--format", format]);
            let first = muster(fx.path()).args(&args).output().unwrap();
            let second = muster(fx.path()).args(&args).output().unwrap();
            assert_eq!(first.stdout, second.stdout, "{args:?}");
            assert!(!first.stdout.is_empty(), "{args:?}");
        }
    }
}

#[test]
fn a_policy_warning_is_one_annotation_on_its_line_naming_every_plan_that_raised_it() {
    let fx = Fixture::bundled();
    fx.edit(
        "policies/muster.toml",
        "  \"mcp.bland_read.list_calls\",\n]",
        "  \"mcp.bland_read.list_calls\",\n  \"nope.tool\",\n]",
    );
    let line = line_of(&fx, "policies/muster.toml", "\"nope.tool\",");
    let out = run(&fx, &["validate", "--format", "github"], 0);
    let warnings: Vec<&str> = out.lines().filter(|l| l.starts_with("::warning")).collect();
    assert_eq!(
        warnings,
        [format!(
            "::warning file=policies/muster.toml,line={line},title=muster unmatched-group-member::group calling names \"nope.tool\", which no policy registers (agent chat, no profile; agent chat, profile production; agent chat, profile staging)"
        )],
        "{out}"
    );
}
