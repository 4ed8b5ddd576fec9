//! Text a server or a file wrote never drives a terminal or a CI runner (issue 30, item 9):
//! schema strings (`$ref`, `$id`, `$schema`, `$anchor`, `$dynamicRef`, `patternProperties`
//! keys), gate file names and plan paths holding ESC/BEL escapes or a line break followed by a
//! GitHub workflow command (`::error::`) reach `muster plan`, `validate`, `gate` and `diff` in
//! every human format with no control byte and no line a runner reads as a command.

mod common;

use common::{Fixture, muster};
use proptest::prelude::*;
use serde_json::json;

/// The bundled policies with no lock, whose first `bland_read` tool's input schema carries
/// `text` in every schema string a server controls.
fn hostile(text: &str) -> Fixture {
    let fx = Fixture::bundled();
    std::fs::remove_file(fx.policies().join("mcp.lock")).unwrap();
    let path = "policies/mcp/bland_read.json";
    let mut snapshot: serde_json::Value = serde_json::from_str(&fx.read(path)).unwrap();
    snapshot["tools"][0]["inputSchema"] = json!({
        "type": "object",
        "$id": format!("urn:x{text}"),
        "$schema": text,
        "properties": {
            "a": {"$ref": format!("#/$defs/missing{text}"), "$anchor": text},
            "b": {"$dynamicRef": text},
            "c": {"type": "object", "patternProperties": {format!("({text}"): {"type": "string"}}}
        }
    });
    fx.write(path, &snapshot.to_string());
    fx
}

/// What muster wrote, both streams, whatever its exit code.
fn output(fx: &Fixture, args: &[&str]) -> String {
    let out = muster(fx.path()).args(args).output().unwrap();
    let mut text = String::from_utf8(out.stdout).unwrap();
    text.push_str(&String::from_utf8(out.stderr).unwrap());
    text
}

/// The first thing in `text` a terminal or a runner would act on: a control byte other than a
/// line break or a tab, or a line starting `::` that is not one of muster's own commands
/// (`github` output).
fn unsafe_part(text: &str, github: bool) -> Option<String> {
    if let Some(c) = text
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\t'))
    {
        return Some(format!("control {:?}", c));
    }
    text.lines()
        .find(|l| {
            let l = l.trim_start();
            l.starts_with("::")
                && !(github
                    && ["::error ", "::warning ", "::notice "]
                        .iter()
                        .any(|c| l.starts_with(c)))
        })
        .map(str::to_string)
}

/// Every human rendering of `muster plan` and `validate` over the hostile fixture.
fn renderings(fx: &Fixture) -> Vec<(String, String)> {
    let mut all = Vec::new();
    let runs: [(&[&str], bool); 5] = [
        (&["plan", "--policies", "policies"], false),
        (&["validate", "--policies", "policies"], false),
        (
            &["validate", "--policies", "policies", "--format", "markdown"],
            false,
        ),
        (
            &["validate", "--policies", "policies", "--format", "github"],
            true,
        ),
        (
            &["validate", "--policies", "policies", "--format", "junit"],
            false,
        ),
    ];
    for (args, github) in runs {
        let text = output(fx, args);
        if let Some(bad) = unsafe_part(&text, github) {
            all.push((args.join(" "), format!("{bad}\n---\n{text}")));
        }
    }
    all
}

const PROBE: &str = "x\u{1b}]0;owned\u{7}\n::error::pwned\u{1b}[31m\r\n  ::warning file=a::b";

#[test]
fn escapes_and_workflow_commands_in_schema_strings_reach_no_human_output() {
    let fx = hostile(PROBE);
    // The probe is shown, escaped: the warning about the pattern quotes it.
    let text = output(&fx, &["validate", "--policies", "policies"]);
    assert!(text.contains("\\::error::pwned\\u001B[31m"), "{text}");
    let bad = renderings(&fx);
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn a_gate_file_name_or_a_plan_path_with_escapes_reaches_no_human_output() {
    let fx = Fixture::bundled();
    let name = "g\u{1b}]0;owned\u{7}\n::error::gate.toml";
    std::fs::copy(
        fx.path().join("gates/production.toml"),
        fx.path().join(name),
    )
    .unwrap();
    for format in ["text", "markdown", "github"] {
        let text = output(
            &fx,
            &["gate", "--policies", "policies", "--format", format, name],
        );
        assert_eq!(
            unsafe_part(&text, format == "github"),
            None,
            "{format}: {text}"
        );
    }
    let missing = "p\u{1b}]0;owned\u{7}\n::error::plan.json";
    for format in ["text", "markdown"] {
        let text = output(&fx, &["diff", missing, missing, "--format", format]);
        assert!(text.contains("error"), "{text}");
        assert_eq!(unsafe_part(&text, false), None, "{format}: {text}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Arbitrary text (control characters and `::` line starts favoured) in every schema
    /// string a server controls never yields a control byte or a line starting `::` in human
    /// output.
    #[test]
    fn no_schema_string_yields_a_control_byte_or_a_command_line(
        text in "([\\x00-\\x1f\\x7f\\u{80}-\\u{9f}\\u{2028}\\u{202e}]|\n::error::|::|[a-z ]){0,24}"
    ) {
        let fx = hostile(&text);
        let bad = renderings(&fx);
        prop_assert!(bad.is_empty(), "{:?}: {:#?}", text, bad);
    }
}
