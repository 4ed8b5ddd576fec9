//! The muster binary: parses arguments, calls the library, renders tables
//! or JSON and picks the exit code (0 success, 1 a gate failed or a turn was
//! refused, 2 bad input or usage).

mod args;
#[cfg(feature = "serve")]
mod auth;
mod cache;
#[cfg(feature = "serve")]
mod call;
mod ci;
mod diff;
#[cfg(feature = "serve")]
mod gateway;
mod mcp;
mod render;
mod report;
mod session;

use args::{CiFormat, Cli, Command, RosterFormat, Select, TextOrJson};
use clap::Parser;
use muster::answer::{self, Answer, Offer, Outcome};
use muster::catalog::{Catalog, Selection};
use muster::policy::Inputs;
use muster::problem_code as code;
use muster::tokens::{self, TokenCache};
use muster::{Error, ErrorKind, Problem, check, gate, plan};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code for a gate that failed or a turn that was refused.
pub(crate) const EXIT_FAILED: u8 = 1;
/// Exit code for bad input or usage.
pub(crate) const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Every command but `serve` answers on stdout: with it closed, refuse before doing anything
    // (`muster plan >&-` would otherwise exit 0 having written nothing, and `session new`
    // would write its document and then fail).
    let result = if closed_stdout::at_start() && writes_stdout(&cli.command) {
        Err(Error::new(
            ErrorKind::Io,
            Problem::coded(
                code::WRITE_FAILED,
                "cannot write output: standard output is closed",
            )
            .help("run the command with its output going to a file, a pipe or the terminal"),
        ))
    } else {
        run(cli.command)
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            let label = match err.kind() {
                ErrorKind::Usage => "usage",
                _ => "error",
            };
            let mut stderr = std::io::stderr().lock();
            for problem in err.problems() {
                let line = format!("{label}: {problem}");
                let _ = writeln!(stderr, "{}", muster::names::shown_output(&line, false));
            }
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// Writes `text` to stdout in one piece, shown safely ([`muster::names::shown_output`]: no
/// control character and no line a CI runner reads as a command); a closed pipe is not an
/// error.
pub(crate) fn emit(text: &str) -> Result<(), Error> {
    write_out(&muster::names::shown_output(text, false))
}

/// [`emit`] for a CI rendering in `format`: GitHub workflow commands keep their own `::`.
pub(crate) fn emit_ci(format: CiFormat, text: &str) -> Result<(), Error> {
    write_out(&muster::names::shown_output(
        text,
        format == CiFormat::Github,
    ))
}

/// Writes `text` to stdout in one piece; a closed pipe is not an error.
fn write_out(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(err) => Err(Error::new(
            ErrorKind::Io,
            Problem::coded(code::WRITE_FAILED, format!("cannot write output: {err}")),
        )),
    }
}

/// Whether `command` answers on stdout: all but `serve`, which logs to stderr.
fn writes_stdout(command: &Command) -> bool {
    match command {
        #[cfg(feature = "serve")]
        Command::Serve(_) => false,
        #[cfg(feature = "serve")]
        Command::Mcp(_) => false,
        _ => true,
    }
}

/// Whether stdout was closed when the process started. Rust's runtime reopens a closed
/// standard descriptor on /dev/null before `main`, where every write succeeds and vanishes, so
/// the descriptor is looked at earlier, by a constructor the loader runs before the runtime.
mod closed_stdout {
    use std::sync::atomic::{AtomicBool, Ordering};

    static CLOSED: AtomicBool = AtomicBool::new(false);

    /// Whether descriptor 1 was not open when the process started.
    pub(crate) fn at_start() -> bool {
        CLOSED.load(Ordering::Relaxed)
    }

    #[cfg(target_os = "linux")]
    #[used]
    #[unsafe(link_section = ".init_array")]
    static LOOK: extern "C" fn() = look;

    #[cfg(target_os = "linux")]
    extern "C" fn look() {
        unsafe extern "C" {
            fn fcntl(fd: i32, cmd: i32, ...) -> i32;
        }
        const F_GETFD: i32 = 1;
        // SAFETY: F_GETFD only reads the descriptor's flags; -1 means it is not open.
        if unsafe { fcntl(1, F_GETFD) } == -1 {
            CLOSED.store(true, Ordering::Relaxed);
        }
    }
}

/// Caps glibc's malloc arenas at two for the service's process. glibc
/// gives each thread that allocates under contention an arena of its own
/// (up to eight per core) and never hands an arena's high-water pages back
/// while any of it is live, so a service answering from many threads,
/// swapping policy generations, grew its RSS by about a third over a
/// one-minute soak (scripts/soak-serve); with two arenas it stays flat
/// (docs/serve.md has the figures). The same as `MALLOC_ARENA_MAX=2`,
/// which an operator's setting still overrides.
/// The admin token of `muster serve`: from `--admin-token-file`, else
/// from `MUSTER_ADMIN_TOKEN`; both at once is a usage error (which one is
/// meant?). Never printed: the errors name the source, not the token.
#[cfg(feature = "serve")]
fn admin_token(file: Option<&std::path::Path>) -> Result<Option<muster::serve::AdminToken>, Error> {
    const ENV: &str = "MUSTER_ADMIN_TOKEN";
    let from_env = std::env::var_os(ENV).filter(|v| !v.is_empty());
    match (file, from_env) {
        (Some(path), Some(_)) => Err(Error::new(
            ErrorKind::Usage,
            Problem::coded(
                code::CONFLICT,
                format!(
                    "both --admin-token-file {} and {ENV} give an admin token",
                    path.display()
                ),
            )
            .in_file(path)
            .help(format!(
                "give one: unset {ENV}, or leave out --admin-token-file"
            )),
        )),
        (Some(path), None) => {
            let text = std::fs::read_to_string(path).map_err(|err| Error::io(path, &err))?;
            muster::serve::AdminToken::new(&text, &path.display().to_string()).map(Some)
        }
        (None, Some(value)) => {
            let text = value.into_string().map_err(|_| {
                Error::new(
                    ErrorKind::Usage,
                    Problem::coded(code::NOT_UTF8, format!("{ENV} is not UTF-8"))
                        .in_file(ENV)
                        .help("use visible ASCII characters, e.g. `openssl rand -hex 32`"),
                )
            })?;
            muster::serve::AdminToken::new(&text, ENV).map(Some)
        }
        (None, None) => Ok(None),
    }
}

#[cfg(all(feature = "serve", target_os = "linux", target_env = "gnu"))]
fn few_malloc_arenas() {
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets an allocator parameter; it is called
        // before the service starts any thread of its own.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

#[cfg(all(feature = "serve", not(all(target_os = "linux", target_env = "gnu"))))]
fn few_malloc_arenas() {}

/// The selection `select` names.
pub(crate) fn selection(select: &Select) -> Selection {
    Selection {
        agent: select.agent.clone(),
        profile: select.profile.clone(),
        flags: select.flag.clone(),
        version: select.agent_version,
        provider: None,
        mcp_only: false,
    }
}

/// The cache directory: `$MUSTER_CACHE_DIR`, else `$XDG_CACHE_HOME/muster`,
/// else `~/.cache/muster`; `None` when none of them is set.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("MUSTER_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("muster")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("muster")))
}

/// The token-count cache in [`cache_dir`], and the encoder's vector cache
/// beside it; in memory only with `--no-cache` or when there is no cache
/// directory.
pub(crate) fn token_cache(disabled: bool) -> TokenCache {
    match cache_dir() {
        Some(dir) if !disabled => {
            vector_cache(&dir);
            TokenCache::open(&dir.join(tokens::cache::FILE_NAME))
        }
        _ => TokenCache::in_memory(),
    }
}

/// Keeps the encoder's tool vectors in `dir` (`vectors.bin`), so a tool is
/// encoded once across runs (docs/search.md).
pub(crate) fn vector_cache(#[allow(unused_variables)] dir: &std::path::Path) {
    #[cfg(feature = "encoder")]
    muster::search::vectors::use_file(&dir.join(muster::search::vectors::FILE_NAME));
}

/// Encodes for search the tools `inputs` configure and record into the
/// vector cache's file, so a later session's first search encodes none of
/// them (docs/search.md, "Warm from the first query"). Skipped when the
/// vector cache has no file (`--no-cache`, no cache directory), when
/// `MUSTER_NO_WARM` is set (not `0`) or when the cache directory cannot be
/// written; a failure costs the first search time, never this command its
/// result.
pub(crate) fn warm(
    #[allow(unused_variables)] inputs: &Inputs,
    #[allow(unused_variables)] selection: &Selection,
    #[allow(unused_variables)] cache: &mut TokenCache,
) {
    #[cfg(feature = "encoder")]
    {
        use muster::search::{DeferredIndex, vectors};
        if std::env::var_os("MUSTER_NO_WARM").is_some_and(|v| !v.is_empty() && v != "0") {
            return;
        }
        // Without deferral nothing is ever searched: a plan of such a
        // policy pays nothing for search.
        if !inputs.policy.deferral.enabled {
            return;
        }
        let path = vectors::shared()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .path()
            .map(std::path::Path::to_path_buf);
        let Some(dir) = path.as_deref().and_then(std::path::Path::parent) else {
            return;
        };
        if !writable(dir) {
            return;
        }
        let Ok(catalog) = Catalog::build_cached(inputs, selection, cache) else {
            return;
        };
        let started = std::time::Instant::now();
        let encoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            DeferredIndex::warm(&catalog)
        }));
        // Where the time went, for a person watching (MUSTER_NO_WARM skips it).
        if let Ok(n @ 1..) = encoded
            && std::io::IsTerminal::is_terminal(&std::io::stderr())
        {
            eprintln!(
                "encoded {n} tool text(s) for search in {:.1} s (saved to the cache)",
                started.elapsed().as_secs_f64()
            );
        }
    }
}

/// Whether a file can be created in `dir` (made if missing).
#[cfg(feature = "encoder")]
fn writable(dir: &std::path::Path) -> bool {
    if std::fs::create_dir_all(dir).is_err() {
        return false;
    }
    let probe = dir.join(format!(".warm-probe-{}", std::process::id()));
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .is_ok();
    if made {
        let _ = std::fs::remove_file(&probe);
    }
    made
}

/// Saves the counts the run added. A cache that cannot be written costs
/// the next run time, not this one its result, so failing is silent.
pub(crate) fn save(cache: &mut TokenCache) {
    let _ = cache.save();
}

/// The planning options `select` names.
pub(crate) fn ask(select: &Select) -> answer::Select {
    answer::Select {
        selection: selection(select),
        item_cap: select.item_cap,
        token_cap: select.token_cap,
    }
}

/// Lets go of `value` without freeing it piece by piece: the process is
/// about to exit, and a policy or catalog of 100,000 tools takes a tenth
/// of a second to drop.
fn exiting<T>(value: T) {
    std::mem::forget(value);
}

/// The exit code for an answer's outcome.
pub(crate) fn exit_code(outcome: Outcome) -> u8 {
    match outcome {
        Outcome::Done => 0,
        Outcome::Failed | Outcome::PinMismatch => EXIT_FAILED,
    }
}

/// What `check` and `call` check a turn against: the plan, session or
/// fingerprint given; `Err(exit code)` once a plan-changed answer or a
/// session's resume report was printed instead. With `from_policy` (`call`,
/// which runs what passes) a plan file only names the plan: what is checked
/// is the plan the policy makes for it, and an edited plan is refused.
pub(crate) fn offered(
    plan: Option<PathBuf>,
    session: Option<PathBuf>,
    fingerprint: Option<String>,
    select: &Select,
    format: TextOrJson,
    from_policy: bool,
) -> Result<Result<check::OfferedPlan, u8>, Error> {
    let read = |path: &std::path::Path, what: &str| {
        muster::input::read_text(path).map_err(|err| err.into_error(path, what))
    };
    if ask(select) != answer::Select::default() && fingerprint.is_none() {
        return Err(Error::new(
            ErrorKind::Usage,
            Problem::coded(code::CONFLICT, "--agent, --agent-version, --flags, --flag, --item-cap and --token-cap choose the plan a --fingerprint names")
                .help("with --plan or --session the roster is already chosen: leave them out, or give --fingerprint"),
        ));
    }
    let policies = &select.policies;
    let changed = |changed: muster::contract::PlanChanged| -> Result<u8, Error> {
        let answer = Answer::of_plan_changed(&changed);
        emit(&match format {
            TextOrJson::Text => format!("{changed}\n"),
            TextOrJson::Json => answer.json,
        })?;
        Ok(exit_code(answer.outcome))
    };
    Ok(Ok(match (plan, session, fingerprint) {
        (_, _, Some(fingerprint)) => {
            let inputs = Inputs::load(policies)?;
            let mut cache = token_cache(select.no_cache);
            match answer::offered_now(&inputs, &ask(select), &fingerprint, &mut cache)? {
                Ok(offered) => offered,
                Err(plan) => return Ok(Err(changed(plan)?)),
            }
        }
        (Some(plan), _, None) if from_policy => {
            let text = read(&plan, "the plan")?;
            let inputs = Inputs::load(policies)?;
            let mut cache = token_cache(select.no_cache);
            match answer::offered_from_policy(&inputs, &text, &plan, &mut cache)? {
                Ok(offered) => offered,
                Err(plan) => return Ok(Err(changed(plan)?)),
            }
        }
        (Some(plan), _, None) => {
            let text = read(&plan, "the plan")?;
            answer::offered(Offer::Plan {
                text: &text,
                file: &plan,
            })?
        }
        (None, Some(path), None) => match session::open(policies, &path, format)? {
            Ok(live) => answer::offered(Offer::Session {
                live: &live,
                file: &path,
            })?,
            Err(code) => return Ok(Err(code)),
        },
        (None, None, None) => {
            return Err(Error::new(
                ErrorKind::Usage,
                Problem::coded(
                    code::INVALID_ARGUMENTS,
                    "give --plan PLAN.json, --session S.json or --fingerprint sha256:HEX",
                ),
            ));
        }
    }))
}

fn run(command: Command) -> Result<u8, Error> {
    match command {
        Command::Plan {
            select,
            model,
            format,
        } => {
            let inputs = Inputs::load(&select.policies)?;
            let mut cache = token_cache(select.no_cache);
            let text = match format {
                RosterFormat::Json => {
                    answer::plan_for_model(&inputs, &ask(&select), model.as_deref(), &mut cache)?
                        .json
                }
                RosterFormat::Openai
                | RosterFormat::OpenaiResponses
                | RosterFormat::Anthropic
                | RosterFormat::Gemini => {
                    let provider = format.provider().expect("a provider format");
                    answer::plan_tools(&inputs, &ask(&select), provider, &mut cache)?.json
                }
                RosterFormat::Table => {
                    let catalog = Catalog::build_cached(&inputs, &selection(&select), &mut cache)?;
                    let caps = catalog
                        .caps
                        .with_overrides(select.item_cap, select.token_cap);
                    let planned = plan::plan_counted(&catalog, caps, &mut cache);
                    let share = muster::context::share(
                        planned.totals.tokens,
                        catalog.provider,
                        model.as_deref(),
                    )?;
                    let table = render::plan_table(&planned, &share);
                    exiting(catalog);
                    table
                }
            };
            save(&mut cache);
            emit(&text)?;
            warm(&inputs, &selection(&select), &mut cache);
            save(&mut cache);
            exiting(inputs);
            Ok(0)
        }
        Command::Why {
            tool,
            select,
            format,
        } => {
            let inputs = Inputs::load(&select.policies)?;
            let mut cache = token_cache(select.no_cache);
            let explanation = answer::explain(&inputs, &ask(&select), &tool, &mut cache)?;
            save(&mut cache);
            let text = match format {
                TextOrJson::Text => explanation.to_string(),
                TextOrJson::Json => answer::json_text(&explanation),
            };
            emit(&text)?;
            Ok(0)
        }
        Command::Gate {
            paths,
            policies,
            item_cap,
            token_cap,
            no_cache,
            format,
        } => ci_or_error(format, "gate", || {
            let paths = if paths.is_empty() {
                vec!["gates".into()]
            } else {
                paths
            };
            let inputs = Inputs::load(&policies)?;
            let gates = gate::load(&paths)?;
            let mut cache = token_cache(no_cache);
            let results = answer::gates(&inputs, &gates, (item_cap, token_cap), &mut cache)?;
            save(&mut cache);
            let answer = Answer::of_gates(&results);
            emit_ci(
                format,
                &match format {
                    CiFormat::Text => render::gate_text(&results),
                    CiFormat::Json => answer.json,
                    other => ci::render(other, &muster::ci::of_gates(&gates, &results)),
                },
            )?;
            Ok(exit_code(answer.outcome))
        }),
        Command::Discover {
            policies,
            servers,
            lock,
            format,
        } => mcp::discover(&policies, &servers, lock, format),
        Command::Lock {
            policies,
            servers,
            check,
            format,
        } => match (check, format.plain()) {
            (false, Some(plain)) => mcp::lock(&policies, &servers, plain),
            (false, None) => Err(Error::new(
                ErrorKind::Usage,
                Problem::new("the CI formats report lock drift: they need --check").help(
                    "run `muster lock --check --format …` in CI; `muster lock` writes the lock",
                ),
            )),
            (true, _) => ci_or_error(format, "lock", || {
                let inputs = Inputs::load(&policies)?;
                let drift = muster::lock::drift(&inputs, &servers)?;
                emit_ci(
                    format,
                    &match format {
                        CiFormat::Text => render::drift_text(&drift),
                        CiFormat::Json => answer::json_text(&drift),
                        other => ci::render(other, &muster::ci::of_lock(&drift)),
                    },
                )?;
                Ok(if drift.drift.is_empty() {
                    0
                } else {
                    EXIT_FAILED
                })
            }),
        },
        Command::Diff {
            base,
            head,
            base_rev,
            select,
            format,
        } => diff::run(base, head, base_rev, &select, format),
        Command::Report {
            plan,
            base,
            base_rev,
            select,
            model,
            calls,
            out,
        } => report::run(plan, base, base_rev, &select, model, calls, out),
        Command::Check {
            plan,
            session,
            fingerprint,
            select,
            turn,
            positional,
            format,
        } => {
            let offered = match offered(plan, session, fingerprint, &select, format, false)? {
                Ok(offered) => offered,
                Err(code) => return Ok(code),
            };
            let turn_text =
                muster::input::read_text(&turn).map_err(|err| err.into_error(&turn, "the turn"))?;
            let options = check::CheckOptions { positional };
            let report = answer::check(&offered, &turn_text, &turn, &options)?;
            let answer = Answer::of_check(&report);
            emit(&match format {
                TextOrJson::Text => report.render_text(),
                TextOrJson::Json => answer.json,
            })?;
            Ok(exit_code(answer.outcome))
        }
        Command::Count {
            request,
            provider,
            model,
            format,
        } => {
            let text = if request.as_os_str() == "-" {
                muster::input::read_text_from(std::io::stdin().lock())
            } else {
                muster::input::read_text(&request)
            }
            .map_err(|err| err.into_error(&request, "the request"))?;
            let options = muster::count::CountOptions {
                provider: provider.map(Into::into),
                model,
            };
            let report = muster::count::count_text(&text, &request, &options)?;
            emit(&match format {
                TextOrJson::Text => report.to_string(),
                TextOrJson::Json => Answer::of_count(&report).json,
            })?;
            Ok(0)
        }
        Command::Session(command) => session::run(command),
        #[cfg(feature = "serve")]
        Command::Auth(command) => auth::run(command),
        Command::Cache(command) => cache::run(command),
        #[cfg(feature = "serve")]
        Command::Call(args) => call::run(args),
        #[cfg(feature = "serve")]
        Command::Mcp(args) => {
            if let Some(dir) = cache_dir() {
                vector_cache(&dir);
            }
            gateway::run(args)
        }
        #[cfg(feature = "serve")]
        Command::Serve(serve) => {
            use std::time::Duration;
            let admin_token = admin_token(serve.admin_token_file.as_deref())?;
            if let Some(dir) = cache_dir() {
                vector_cache(&dir);
            }
            few_malloc_arenas();
            muster::serve::run(muster::serve::Config {
                policies: serve.policies,
                gates: serve.gates,
                addr: serve.addr,
                body_limit: serve.body_limit,
                request_timeout: Duration::from_millis(serve.request_timeout_ms),
                concurrency: serve.concurrency as usize,
                header_read_timeout: Duration::from_millis(serve.header_read_timeout_ms),
                memo_entries: serve.memo_entries,
                memo_bytes: serve.memo_bytes,
                session_keys: session::keys(serve.session_key_file.as_deref())?,
                sessions: serve
                    .sessions
                    .as_deref()
                    .map(muster::store::StoreUrl::parse)
                    .transpose()?,
                session_ttl: Duration::from_secs(serve.session_ttl_secs),
                drain_timeout: Duration::from_millis(serve.drain_timeout_ms),
                admin_token,
            })?;
            Ok(0)
        }
        Command::Validate {
            policies,
            format,
            accept,
            strict,
        } => ci_or_error(format, "validate", || {
            let inputs = Inputs::load(&policies)?;
            let formats: Vec<_> = accept.into_iter().map(Into::into).collect();
            let validation = muster::validate::validate_accepted(&inputs, &formats, strict)?;
            emit_ci(
                format,
                &match format {
                    CiFormat::Text => render::validate_text(&validation),
                    CiFormat::Json => answer::json_text(&validation),
                    other => ci::render(other, &muster::ci::of_validation(&validation)),
                },
            )?;
            let mut cache = token_cache(false);
            warm(&inputs, &Selection::default(), &mut cache);
            save(&mut cache);
            Ok(u8::from(!validation.acceptance.is_empty()))
        }),
    }
}

/// Runs `body`; in a CI format an error that stops it is rendered on
/// stdout in that format too (annotations on the files and lines it
/// names), still exiting 2 with the problems on stderr.
fn ci_or_error(
    format: CiFormat,
    command: &'static str,
    body: impl FnOnce() -> Result<u8, Error>,
) -> Result<u8, Error> {
    match body() {
        Err(err) if format.plain().is_none() => {
            emit_ci(
                format,
                &ci::render(format, &muster::ci::of_error(command, &err)),
            )?;
            Err(err)
        }
        other => other,
    }
}
