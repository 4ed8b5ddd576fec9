//! The service's log lines: tracing's JSON, one object per event with its
//! fields at the top level, except that a gateway call (target
//! [`CALL_TARGET`]) is written with the members of its call record as
//! `muster mcp` writes them (`codes` a list, `server` and `upstream_ms`
//! null when there are none), so one reader reads both logs
//! (docs/gateway.md, "What is logged").

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{Format, Json, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The target of the gateway's call lines.
pub const CALL_TARGET: &str = "muster::gateway";
/// The field of a call line that holds the call record's JSON text.
pub const RECORD_FIELD: &str = "record";

/// tracing's flattened JSON, and call lines with their record's members.
pub struct Lines {
    json: Format<Json, SystemTime>,
}

impl Lines {
    pub fn new() -> Self {
        Self {
            json: tracing_subscriber::fmt::format()
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false),
        }
    }
}

impl<S, N> FormatEvent<S, N> for Lines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        if meta.target() != CALL_TARGET {
            return self.json.format_event(ctx, writer, event);
        }
        let mut timestamp = String::new();
        SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
        let mut line = Map::new();
        line.insert("timestamp".into(), Value::String(timestamp));
        line.insert("level".into(), Value::String(meta.level().to_string()));
        let mut fields = Fields::default();
        event.record(&mut fields);
        line.append(&mut fields.top);
        if let Some(Value::Object(mut record)) = fields.record {
            line.append(&mut record);
        }
        line.insert("target".into(), Value::String(meta.target().to_string()));
        let text = serde_json::to_string(&Value::Object(line)).map_err(|_| fmt::Error)?;
        writeln!(writer, "{text}")
    }
}

/// A call line's fields: the record's JSON read back, the others as given.
#[derive(Default)]
struct Fields {
    top: Map<String, Value>,
    record: Option<Value>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == RECORD_FIELD {
            self.record = serde_json::from_str(value).ok();
        } else {
            self.top
                .insert(field.name().into(), Value::String(value.into()));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.top
            .insert(field.name().into(), Value::String(format!("{value:?}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Where the test subscriber writes.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Issue 31 item 9: the service's call lines had other shapes than
    /// `muster mcp`'s (codes one comma-joined string, an empty server, 0 ms
    /// for a call never sent).
    #[test]
    fn a_call_line_has_its_record_members_and_other_lines_are_as_before() {
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .event_format(Lines::new())
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let record = r#"{"chat":"c","id":"1","tool":"mcp__m__t","server":null,"verdict":"refused","codes":["wrong-type","missing-argument"],"upstream_ms":null,"total_ms":0.5}"#;
            tracing::info!(target: CALL_TARGET, caller = "alice", record, "tools/call");
            tracing::info!(target: "muster::request", status = 200u16, "request");
        });
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let call = &lines[0];
        let keys: Vec<&str> = call
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "timestamp",
                "level",
                "message",
                "caller",
                "chat",
                "id",
                "tool",
                "server",
                "verdict",
                "codes",
                "upstream_ms",
                "total_ms",
                "target"
            ]
        );
        assert_eq!(
            call["codes"],
            serde_json::json!(["wrong-type", "missing-argument"])
        );
        assert_eq!(call["server"], Value::Null);
        assert_eq!(call["message"], "tools/call");
        assert_eq!(call["level"], "INFO");
        let request = &lines[1];
        assert_eq!(request["status"], 200);
        assert_eq!(request["target"], "muster::request");
        assert_eq!(request["message"], "request");
    }
}
