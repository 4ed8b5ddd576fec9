//! `muster call`: one turn checked and run through the gateway's
//! connections, then exit (docs/call.md). The servers the turn calls are
//! started for it and stopped before exit.

use crate::args::{CallTurn, TextOrJson};
use crate::{EXIT_FAILED, emit, offered};
use muster::Error;
use muster::answer;
use muster::check::CheckOptions;
use muster::contract::{CallAnswer, ResultStatus, TurnOutcome};
use muster::gateway::{CallRecord, Gateway, Options, spans};
use muster::policy::Inputs;
use muster::session::SessionKeys;
use muster::store::MemoryStore;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

/// Checks and runs the turn; exit 0 when it ran, 1 when it was refused or
/// a call got no result from its server.
pub(crate) fn run(args: CallTurn) -> Result<u8, Error> {
    let offered = match offered(
        args.plan,
        args.session,
        args.fingerprint,
        &args.select,
        args.format,
        true,
    )? {
        Ok(offered) => offered,
        Err(code) => return Ok(code),
    };
    let turn_text = muster::input::read_text(&args.turn)
        .map_err(|err| err.into_error(&args.turn, "the turn"))?;
    let options = CheckOptions {
        positional: args.positional,
    };
    // Traced when OTEL_EXPORTER_OTLP_* says so: the run, its check and its calls.
    let env = |key: &str| std::env::var(key).ok();
    let traced = spans::Run::start(env("TRACEPARENT").as_deref(), env("TRACESTATE").as_deref());
    let under = traced.as_ref().map(spans::Run::under);
    let started = spans::turn_start(under.as_ref());
    let report = answer::check(&offered, &turn_text, &args.turn, &options)?;
    spans::turn_checked(under.as_ref(), started, &report);
    let inputs = Inputs::load(&args.select.policies)?;
    let observer = Box::new(|record: &CallRecord| {
        if let Ok(line) = serde_json::to_string(record) {
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
    });
    let gateway = Gateway::new(
        inputs,
        Options {
            selection: crate::selection(&args.select),
            keys: SessionKeys::none(),
            ttl: Duration::from_secs(60),
            check: options,
            log_arguments: args.log_arguments,
        },
        Box::new(MemoryStore::default()),
        observer,
    )?;
    let runtime = crate::gateway::runtime()?;
    let gateway = Arc::new(gateway);
    let ran = runtime.block_on(muster::trace::within(under, async {
        let ran = gateway.call_turn(&report, "").await;
        gateway.shutdown().await;
        ran
    }));
    if let Some(run) = traced {
        run.end(match ran.outcome {
            TurnOutcome::Ran => "ran",
            TurnOutcome::Refused => "refused",
            TurnOutcome::Failed => "failed",
        });
        muster::trace::flush(Duration::from_secs(2));
    }
    emit(&match args.format {
        TextOrJson::Json => answer::json_text(&ran),
        TextOrJson::Text if ran.outcome == TurnOutcome::Refused => report.render_text(),
        TextOrJson::Text => render(&ran),
    })?;
    Ok(match ran.outcome {
        TurnOutcome::Ran => 0,
        TurnOutcome::Refused | TurnOutcome::Failed => EXIT_FAILED,
    })
}

/// One line per call: its id, what became of it, and the server's result,
/// the host's arguments or the failure.
fn render(ran: &CallAnswer) -> String {
    let mut text = match ran.outcome {
        TurnOutcome::Ran => "turn ran\n".to_string(),
        _ => "turn ran; some calls got no result from their server\n".to_string(),
    };
    for r in &ran.results {
        let target = format!(
            "{}/{}",
            r.server.as_deref().unwrap_or(""),
            r.tool.as_deref().unwrap_or("")
        );
        let _ = match r.status {
            ResultStatus::Forwarded => writeln!(
                text,
                "{}: forwarded to {target}: {}",
                r.id,
                r.result.as_deref().map_or("null", |v| v.get())
            ),
            ResultStatus::Failed => writeln!(
                text,
                "{}: failed at {target}: {}",
                r.id,
                r.error.as_ref().map_or(String::new(), |e| format!(
                    "{} ({})",
                    e.message,
                    e.code.as_str()
                ))
            ),
            ResultStatus::Host => writeln!(
                text,
                "{}: for the host to run with {}",
                r.id,
                r.arguments.as_deref().map_or("null", |v| v.get())
            ),
            ResultStatus::NotRun => writeln!(text, "{}: not run", r.id),
        };
    }
    text
}
