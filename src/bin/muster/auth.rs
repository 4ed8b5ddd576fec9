//! `muster auth key new NAME --agents A,B`: a new static API key, printed
//! once, and the `[[auth.key]]` entry that holds only its hash. muster
//! keeps no copy: a lost key is replaced, not recovered.

use crate::args::{AuthCommand, KeyCommand, TextOrJson};
use crate::emit;
use muster::{Error, ErrorKind, Problem, problem_code as code};

pub(crate) fn run(command: AuthCommand) -> Result<u8, Error> {
    let AuthCommand::Key(KeyCommand::New {
        name,
        agents,
        format,
    }) = command;
    let mut problems = Vec::new();
    if !muster::policy::is_key_name(&name) {
        problems.push(
            Problem::coded(
                code::INVALID_VALUE,
                format!("{:?} is not a key name", muster::names::escape(&name)),
            )
            .in_file("NAME")
            .help(format!(
                "use 1 to {} letters, digits, `.`, `_` or `-`",
                muster::policy::MAX_KEY_NAME
            )),
        );
    }
    if agents.iter().any(|a| a.trim().is_empty()) {
        problems.push(
            Problem::coded(code::MISSING_VALUE, "--agents names an empty agent")
                .in_file("--agents")
                .help("name the agents the key opens, comma-separated: --agents reader,writer"),
        );
    }
    if !problems.is_empty() {
        return Err(Error::many(ErrorKind::Usage, problems));
    }
    let (key, hash) =
        muster::auth::new_key().map_err(|why| Error::new(ErrorKind::Io, Problem::new(why)))?;
    let mut entry = toml::Table::new();
    entry.insert("name".into(), name.clone().into());
    entry.insert("agents".into(), agents.clone().into());
    entry.insert("hash".into(), hash.clone().into());
    let mut auth = toml::Table::new();
    auth.insert("key".into(), toml::Value::Array(vec![entry.into()]));
    let mut doc = toml::Table::new();
    doc.insert("auth".into(), auth.into());
    let entry = toml::to_string(&doc)
        .map_err(|e| Error::new(ErrorKind::Io, Problem::new(e.to_string())))?;
    emit(&match format {
        TextOrJson::Text => format!(
            "# The key, shown this once (muster keeps only its hash): give it to its caller,\n\
             # who sends it as `Authorization: Bearer <key>`.\n{key}\n\n\
             # Paste into muster.toml, after [auth]:\n{entry}"
        ),
        TextOrJson::Json => {
            let mut out = serde_json::to_string_pretty(&serde_json::json!({
                "name": name, "agents": agents, "key": key, "hash": hash, "entry": entry,
            }))
            .unwrap_or_default();
            out.push('\n');
            out
        }
    })?;
    Ok(0)
}
