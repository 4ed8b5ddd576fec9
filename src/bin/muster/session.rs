//! `muster session ...`: reads the document, calls the library, renders,
//! and writes the document back whole when a load changed it.

use crate::args::{NamesArg, RosterFormat, Select, SessionCommand, TextOrJson};
use crate::{ask, emit, exit_code, save, token_cache};
use muster::answer::{self, Answer, Outcome};
use muster::contract::{LoadStatus, NameSpelling, ResumeReport, ResumeStatus, SearchResults};
use muster::policy::Inputs;
use muster::problem_code as code;
use muster::session::{self, Live, LoadRequest, SessionKeys};
use muster::{Error, ErrorKind, Problem};
use std::fmt::Write as _;
use std::path::Path;

pub(crate) fn run(command: SessionCommand) -> Result<u8, Error> {
    match command {
        SessionCommand::End { id, sessions } => {
            let url = muster::store::StoreUrl::parse(&sessions)?;
            let ended = url.open()?.delete(&id)?;
            let id = muster::names::escape(&id);
            emit(&if ended {
                format!("ended chat {id} in {}\n", url.redacted())
            } else {
                format!("no chat {id} is kept in {}\n", url.redacted())
            })?;
            Ok(u8::from(!ended))
        }
        SessionCommand::New {
            select,
            out,
            provider,
            names,
            format,
        } => new(&select, &out, provider, names, format),
        SessionCommand::Search {
            session,
            query,
            queries,
            limit,
            policies,
            format,
        } => {
            let live = match open(&policies, &session, format)? {
                Ok(live) => live,
                Err(code) => return Ok(code),
            };
            match (query, queries) {
                (_, Some(file)) => search_many(&live, &file, limit as usize),
                (Some(query), None) => {
                    let results = live.search(&query, limit as usize);
                    emit(&match format {
                        TextOrJson::Json => answer::json_text(&results),
                        TextOrJson::Text => search_text(&results),
                    })?;
                    Ok(0)
                }
                (None, None) => Err(usage("give a QUERY or --queries FILE")),
            }
        }
        SessionCommand::Load {
            session,
            query,
            name,
            revision,
            policies,
            format,
        } => {
            // Read, load and write under one lock (atomic::update): two
            // loads on one document land one after the other, never one
            // over the other.
            let inputs = Inputs::load(&policies)?;
            let keys = keys(None)?;
            let mut cache = token_cache(false);
            let mut answered: Option<(String, Outcome)> = None;
            muster::atomic::update(&session, |old| {
                let Some(old) = old else {
                    return Err(Error::io(
                        &session,
                        &std::io::Error::from(std::io::ErrorKind::NotFound),
                    ));
                };
                let text = std::str::from_utf8(old).map_err(|_| {
                    Error::new(
                        ErrorKind::Input,
                        Problem::coded(code::NOT_UTF8, "the session document is not UTF-8 text")
                            .in_file(&session),
                    )
                })?;
                let doc = session::read(text, &session)?;
                let live = match answer::open(&inputs, doc, &keys, &session, &mut cache)? {
                    Ok(live) => live,
                    Err(report) => {
                        answered = Some((report_text(&report, format), Outcome::PinMismatch));
                        return Ok(None);
                    }
                };
                let current = live.document().revision;
                if let Some(expected) = revision
                    && expected != current
                {
                    let stale = muster::contract::StaleRevision {
                        session_id: live.document().id.clone(),
                        expected,
                        current,
                    };
                    eprintln!("stale-revision: {stale}");
                    answered = Some((String::new(), Outcome::PinMismatch));
                    return Ok(None);
                }
                let request = match query {
                    Some(query) => LoadRequest::Query(query),
                    None => LoadRequest::Names(name),
                };
                let load = answer::load(live, &request);
                let answer = Answer::of_load(&load.answer);
                answered = Some((
                    match format {
                        TextOrJson::Json => answer.json,
                        TextOrJson::Text => format!("{}\n", load.answer.answer),
                    },
                    answer.outcome,
                ));
                Ok((load.answer.status == LoadStatus::Loaded)
                    .then(|| session::to_json_string(&load.session).into_bytes()))
            })?;
            save(&mut cache);
            let (text, outcome) = answered.unwrap_or((String::new(), Outcome::Done));
            emit(&text)?;
            Ok(exit_code(outcome))
        }
        SessionCommand::Roster {
            session,
            policies,
            format,
        } => {
            let text_format = match format {
                RosterFormat::Table => TextOrJson::Text,
                _ => TextOrJson::Json,
            };
            let live = match open(&policies, &session, text_format)? {
                Ok(live) => live,
                Err(code) => return Ok(code),
            };
            emit(&match format.provider() {
                Some(provider) => live.provider_tools(provider),
                None if format == RosterFormat::Json => live.roster_json(),
                None => roster_table(&live.roster_json())?,
            })?;
            Ok(0)
        }
        SessionCommand::Resume {
            session,
            policies,
            format,
        } => {
            let inputs = Inputs::load(&policies)?;
            let doc = read(&session)?;
            let mut cache = token_cache(false);
            let report = session::resume(&inputs, &doc, &keys(None)?, &session, &mut cache)?;
            save(&mut cache);
            emit_report(&report, format)
        }
    }
}

fn usage(message: &str) -> Error {
    Error::new(
        ErrorKind::Usage,
        Problem::coded(code::INVALID_ARGUMENTS, message),
    )
}

fn new(
    select: &Select,
    out: &Path,
    provider: Option<crate::args::ProviderArg>,
    names: NamesArg,
    format: TextOrJson,
) -> Result<u8, Error> {
    let inputs = Inputs::load(&select.policies)?;
    let mut ask = ask(select);
    ask.selection.provider = provider.map(Into::into);
    let mut cache = token_cache(select.no_cache);
    let options = session::NewSession {
        caps: (ask.item_cap, ask.token_cap),
        names: match names {
            NamesArg::Provider => NameSpelling::Provider,
            NamesArg::Muster => NameSpelling::Muster,
        },
        id: None,
    };
    let doc = session::new(&inputs, &ask.selection, &options, &keys(None)?, &mut cache)?;
    save(&mut cache);
    let text = session::to_json_string(&doc);
    muster::atomic::write_atomic(out, text.as_bytes())?;
    emit(&match format {
        TextOrJson::Json => text,
        TextOrJson::Text => format!(
            "session for agent {} v{}: {} offered, {} deferred; {}{}\nwritten to {} ({} bytes)\n",
            doc.agent.name,
            doc.agent.version,
            doc.roster.len(),
            doc.deferred.count,
            doc.fingerprint,
            match &doc.signature {
                Some(signature) => format!(", signed with key {}", signature.key),
                None => String::new(),
            },
            out.display(),
            text.len()
        ),
    })?;
    Ok(0)
}

/// Reads the session document at `path`.
pub(crate) fn read(path: &Path) -> Result<muster::contract::SessionDocument, Error> {
    let text = std::fs::read_to_string(path).map_err(|err| Error::io(path, &err))?;
    session::read(&text, path)
}

/// Opens the session at `path` against the policies in `policies`: the
/// live session, or the exit code after printing the pin mismatch.
pub(crate) fn open(
    policies: &Path,
    path: &Path,
    format: TextOrJson,
) -> Result<Result<Live, u8>, Error> {
    let inputs = Inputs::load(policies)?;
    let doc = read(path)?;
    let mut cache = token_cache(false);
    let opened = answer::open(&inputs, doc, &keys(None)?, path, &mut cache)?;
    save(&mut cache);
    match opened {
        Ok(live) => Ok(Ok(live)),
        Err(report) => Ok(Err(emit_report(&report, format)?)),
    }
}

/// The session keys: `file` when given, else the file
/// `$MUSTER_SESSION_KEY_FILE` names, else the one key in
/// `$MUSTER_SESSION_KEY`, else none. Secrets are never printed.
pub(crate) fn keys(file: Option<&Path>) -> Result<SessionKeys, Error> {
    let env_file = std::env::var_os("MUSTER_SESSION_KEY_FILE").map(std::path::PathBuf::from);
    if let Some(file) = file.or(env_file.as_deref()) {
        let text = std::fs::read_to_string(file).map_err(|err| Error::io(file, &err))?;
        return SessionKeys::parse(&text, file);
    }
    match std::env::var("MUSTER_SESSION_KEY") {
        Ok(text) => SessionKeys::parse(&text, Path::new("MUSTER_SESSION_KEY")),
        Err(std::env::VarError::NotPresent) => Ok(SessionKeys::none()),
        Err(std::env::VarError::NotUnicode(_)) => Err(usage(
            "MUSTER_SESSION_KEY is not UTF-8 text; write the key as ID:SECRET",
        )),
    }
}

fn emit_report(report: &ResumeReport, format: TextOrJson) -> Result<u8, Error> {
    emit(&report_text(report, format))?;
    Ok(exit_code(Answer::of_resume(report).outcome))
}

/// The resume report as `format` prints it.
fn report_text(report: &ResumeReport, format: TextOrJson) -> String {
    let answer = Answer::of_resume(report);
    match format {
        TextOrJson::Json => answer.json,
        TextOrJson::Text => {
            let mut text = match report.status {
                ResumeStatus::Ok => format!(
                    "ok: agent {} v{} resumes with its pinned tools ({})\n",
                    report.agent.name, report.agent.version, report.fingerprint.pinned
                ),
                ResumeStatus::ToolPinMismatch => format!(
                    "tool-pin-mismatch: agent {} v{} no longer gets the tools it was pinned to\n",
                    report.agent.name, report.agent.version
                ),
            };
            for change in &report.changes {
                let _ = writeln!(text, "  {change}");
            }
            text
        }
    }
}

fn search_text(results: &SearchResults) -> String {
    if results.results.is_empty() {
        return format!("no deferred tool matches {:?}\n", results.query);
    }
    let mut text = String::new();
    for r in &results.results {
        let _ = writeln!(
            text,
            "{:.4}  {}{}  {}",
            r.score,
            r.name,
            if r.loaded { " (loaded)" } else { "" },
            r.description
        );
    }
    text
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryLine {
    query: String,
    /// Labelled query files carry the names they expect; search ignores them.
    #[serde(default)]
    #[allow(dead_code)]
    expect: Vec<String>,
}

fn search_many(live: &Live, file: &Path, limit: usize) -> Result<u8, Error> {
    let text = std::fs::read_to_string(file).map_err(|err| Error::io(file, &err))?;
    let mut queries = Vec::new();
    let mut problems = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<QueryLine>(line) {
            Ok(q) => queries.push(q.query),
            Err(err) => problems.push(
                Problem::coded(code::INVALID_JSON, format!("cannot read the query: {err}"))
                    .in_file(file)
                    .at_line(Some(n + 1))
                    .help("give one JSON object per line: {\"query\": \"...\"}"),
            ),
        }
    }
    if !problems.is_empty() {
        let problems = muster::input::cap_problems(problems, file);
        return Err(Error::many(ErrorKind::Input, problems));
    }
    emit(&answer::search_lines(
        live,
        queries.iter().map(String::as_str),
        limit,
    ))?;
    Ok(0)
}

fn roster_table(json: &str) -> Result<String, Error> {
    #[derive(serde::Deserialize)]
    struct Roster {
        agent: Agent,
        roster: Vec<Entry>,
        deferred: Vec<serde::de::IgnoredAny>,
        totals: Totals,
    }
    #[derive(serde::Deserialize)]
    struct Agent {
        name: String,
        version: u64,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        name: String,
        source: String,
        tokens: u32,
        code: String,
    }
    #[derive(serde::Deserialize)]
    struct Totals {
        pinned_items: u32,
        pinned_tokens: u32,
        loaded_items: u32,
        loaded_tokens: u32,
        max_loaded: u32,
        max_loaded_tokens: u32,
    }
    let r: Roster = serde_json::from_str(json).map_err(|err| {
        Error::new(
            ErrorKind::Io,
            Problem::coded(
                code::INTERNAL,
                format!("cannot render the session roster: {err}"),
            ),
        )
    })?;
    let t = &r.totals;
    let mut text = format!(
        "agent {} v{}: {} pinned ({} tokens), {}/{} loaded ({}/{} tokens), {} more deferred\n\n",
        r.agent.name,
        r.agent.version,
        t.pinned_items,
        t.pinned_tokens,
        t.loaded_items,
        t.max_loaded,
        t.loaded_tokens,
        t.max_loaded_tokens,
        r.deferred.len()
    );
    let _ = writeln!(
        text,
        "{:<42}  {:<10}  {:>6}  code",
        "tool", "source", "tokens"
    );
    for e in &r.roster {
        let _ = writeln!(
            text,
            "{:<42}  {:<10}  {:>6}  {}",
            e.name, e.source, e.tokens, e.code
        );
    }
    Ok(text)
}
