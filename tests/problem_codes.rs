//! Every problem carries a stable kebab-case code (issue 24): a property
//! over broken policy directories, each refused with the code that names
//! what is wrong, and every problem's code listed in `docs/problems.md`.

use muster::policy::Inputs;
use muster::problem_code as code;
use std::path::Path;

const TOOL: &str = "[[tool]]\nname = \"a\"\ndescription = \"A tool.\"\n";

/// A policy directory holding `files`; `muster.toml` is empty unless given.
fn load(files: &[(&str, &str)]) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let mut wrote_settings = false;
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        wrote_settings |= path.ends_with("muster.toml");
    }
    if !wrote_settings {
        std::fs::write(dir.path().join("muster.toml"), "").unwrap();
    }
    codes_of(dir.path())
}

fn codes_of(dir: &Path) -> Vec<(String, String)> {
    let err = Inputs::load(dir).expect_err("the policy is refused");
    err.problems()
        .iter()
        .map(|p| (p.code.to_string(), p.message.clone()))
        .collect()
}

/// Each case: files, and the code its first problem must have.
fn cases() -> Vec<(Vec<(&'static str, String)>, &'static str)> {
    let long = "n".repeat(2_000);
    vec![
        (
            vec![(
                "tools/t.toml",
                format!("[[tool]]\nname = \"{long}\"\ndescription = \"x\"\n"),
            )],
            code::NAME_TOO_LONG,
        ),
        (
            vec![(
                "tools/t.toml",
                "[[tool]]\nname = \"a b\"\ndescription = \"x\"\n".into(),
            )],
            code::NAME_INVALID,
        ),
        (
            vec![(
                "tools/t.toml",
                "[[tool]]\nname = \"mcp.x\"\ndescription = \"x\"\n".into(),
            )],
            code::RESERVED_NAME,
        ),
        (
            vec![("tools/t.toml", format!("{TOOL}{TOOL}"))],
            code::DUPLICATE,
        ),
        (
            vec![("tools/t.toml", format!("{TOOL}colour = \"red\"\n"))],
            code::UNKNOWN_KEY,
        ),
        (
            vec![("tools/t.toml", "[[tool]\n".into())],
            code::INVALID_TOML,
        ),
        (
            vec![(
                "tools/t.toml",
                format!("{TOOL}input_schema_file = \"../../outside.json\"\n"),
            )],
            code::OUTSIDE_POLICY_DIRECTORY,
        ),
        (
            vec![(
                "tools/t.toml",
                format!("{TOOL}input_schema_file = \"none.json\"\n"),
            )],
            code::FILE_MISSING,
        ),
        (
            vec![
                (
                    "tools/t.toml",
                    format!("{TOOL}input_schema_file = \"s.json\"\n"),
                ),
                ("tools/s.json", "{".into()),
            ],
            code::INVALID_JSON,
        ),
        (
            vec![(
                "tools/t.toml",
                format!("{TOOL}input_schema = {{ type = \"string\" }}\n"),
            )],
            code::INVALID_SCHEMA,
        ),
        (
            vec![(
                "tools/t.toml",
                format!(
                    "{TOOL}[tool.input_schema]\ntype = \"object\"\n[tool.input_schema.properties.n]\nmaximum = inf\n"
                ),
            )],
            code::NON_FINITE_NUMBER,
        ),
        (
            vec![(
                "tools/t.toml",
                format!("{TOOL}parameters = [\"q\"]\ninput_schema = {{ type = \"object\" }}\n"),
            )],
            code::PARAMETER_MISMATCH,
        ),
        (vec![("muster.toml", String::new())], code::NO_TOOLS),
        (
            vec![
                ("tools/t.toml", TOOL.into()),
                ("muster.toml", "[caps]\nitems = 0\n".into()),
            ],
            code::OUT_OF_RANGE,
        ),
        (
            vec![
                ("tools/t.toml", TOOL.into()),
                ("muster.toml", "[tokens]\nencoding = \"utf-9\"\n".into()),
            ],
            code::NOT_A_CHOICE,
        ),
        (
            vec![
                ("tools/t.toml", TOOL.into()),
                ("muster.toml", "[deferral]\ncontrol_tool = \"a\"\n".into()),
            ],
            code::CONFLICT,
        ),
        (
            vec![("mcp/s.toml", "[[mcp]]\nname = \"s\"\n".into())],
            code::MISSING_VALUE,
        ),
        (
            vec![(
                "mcp/s.toml",
                "[[mcp]]\nname = \"s.t\"\nsnapshot = \"s.json\"\n".into(),
            )],
            code::NAME_INVALID,
        ),
        (
            vec![
                (
                    "mcp/s.toml",
                    "[[mcp]]\nname = \"s\"\nsnapshot = \"s.json\"\n".into(),
                ),
                ("mcp/s.json", "[]".into()),
            ],
            code::INVALID_SNAPSHOT,
        ),
        (
            vec![
                ("tools/t.toml", TOOL.into()),
                (
                    "muster.toml",
                    "[[agent]]\nname = \"x\"\nservers = [\"nowhere\"]\n".into(),
                ),
            ],
            code::UNKNOWN_NAME,
        ),
        (
            vec![
                ("tools/t.toml", TOOL.into()),
                ("mcp.lock", "version = 99\n".into()),
            ],
            code::UNSUPPORTED_VERSION,
        ),
    ]
}

#[test]
fn every_broken_policy_is_refused_with_the_code_that_names_its_problem() {
    let listed: Vec<&str> = code::ALL.iter().map(|(c, _)| *c).collect();
    for (files, expected) in cases() {
        let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        let problems = load(&files);
        assert!(!problems.is_empty());
        for (code, message) in &problems {
            assert!(muster::is_kebab(code), "{code:?}: {message}");
            assert!(
                listed.contains(&code.as_str()),
                "{code:?} is not documented"
            );
            // A policy problem always says more than its kind.
            assert_ne!(
                code, "policy",
                "{message} has no code of its own ({files:?})"
            );
        }
        assert_eq!(
            problems[0].0, expected,
            "{files:?} gave {problems:?}, not {expected}"
        );
    }
}

#[test]
fn a_missing_policy_directory_has_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let problems = codes_of(&dir.path().join("nowhere"));
    assert_eq!(
        problems[0].0,
        code::POLICY_DIRECTORY_MISSING,
        "{problems:?}"
    );
}

/// Issue 30, item 7: a policy that would send muster's own keys to a
/// server (`${MUSTER_SESSION_KEY}`, `${MUSTER_ADMIN_TOKEN}` in `headers` or
/// `env`), or reach a remote host over plain `http://`, is refused when it
/// loads, each problem naming the file, the line and the key.
#[test]
fn muster_keys_and_remote_plain_http_are_refused_naming_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("muster.toml"), "").unwrap();
    std::fs::create_dir(dir.path().join("mcp")).unwrap();
    std::fs::write(
        dir.path().join("mcp/s.toml"),
        "[[mcp]]\nname = \"kb\"\nurl = \"https://kb.example/mcp\"\n\
         headers = { Authorization = \"Bearer ${MUSTER_SESSION_KEY}\", X-Admin = \"${MUSTER_ADMIN_TOKEN}\" }\n\n\
         [[mcp]]\nname = \"plain\"\nurl = \"http://kb.example/mcp\"\n\n\
         [[mcp]]\nname = \"local\"\nurl = \"http://[::ffff:127.0.0.1]:9/mcp\"\n\n\
         [[mcp]]\nname = \"stdio\"\ncommand = [\"prog\"]\nenv = { KEY = \"${MUSTER_SESSION_KEY_FILE}\", FINE = \"${KB_TOKEN}\" }\n",
    )
    .unwrap();
    let err = Inputs::load(dir.path()).expect_err("the policy is refused");
    let found: Vec<(&str, Option<usize>, bool)> = err
        .problems()
        .iter()
        .map(|p| {
            assert!(
                p.file.as_deref().is_some_and(|f| f.ends_with("mcp/s.toml")),
                "{p}"
            );
            (
                p.code,
                p.line,
                p.message.contains("headers.") || p.message.contains("env."),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (code::OWN_VARIABLE, Some(4), true),
            (code::OWN_VARIABLE, Some(4), true),
            (code::INSECURE_URL, Some(8), false),
            (code::OWN_VARIABLE, Some(17), true),
        ],
        "{err}"
    );
}

#[test]
fn nan_or_inf_in_a_toml_schema_is_refused_naming_file_line_and_place() {
    // Before: read as null with no word, and `validate --accept` passed.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("muster.toml"), "").unwrap();
    std::fs::create_dir_all(dir.path().join("tools")).unwrap();
    std::fs::write(
        dir.path().join("tools/t.toml"),
        format!(
            "{TOOL}[tool.input_schema]\ntype = \"object\"\n[tool.input_schema.properties.n]\n\
             type = \"number\"\nmaximum = inf\nenum = [1, nan]\n"
        ),
    )
    .unwrap();
    let err = Inputs::load(dir.path()).expect_err("nan and inf are refused");
    let problems = err.problems();
    let places: Vec<(&str, Option<usize>, bool)> = problems
        .iter()
        .map(|p| {
            (
                p.code,
                p.line,
                p.file.as_ref().is_some_and(|f| f.ends_with("tools/t.toml")),
            )
        })
        .collect();
    assert_eq!(
        places,
        [
            (code::NON_FINITE_NUMBER, Some(4), true),
            (code::NON_FINITE_NUMBER, Some(4), true)
        ]
    );
    assert!(problems[0].message.contains("\"/properties/n/maximum\""));
    assert!(problems[1].message.contains("\"/properties/n/enum/1\""));
    // Finite numbers in the same places are read as written.
    std::fs::write(
        dir.path().join("tools/t.toml"),
        format!("{TOOL}[tool.input_schema]\ntype = \"object\"\n[tool.input_schema.properties.n]\nmaximum = 1e300\n"),
    )
    .unwrap();
    Inputs::load(dir.path()).expect("finite numbers load");
}
