//! OTLP/HTTP with JSON encoding: the standard variables read, spans written
//! as an `ExportTraceServiceRequest` (the protobuf JSON mapping: ids in
//! hex, times as decimal strings, enums as numbers) and POSTed in batches by
//! one thread. A failed export is dropped (spans are telemetry, never worth
//! holding a call for) and counted on stderr once per failure kind.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{BATCH_EVERY, BATCH_SPANS, Kind, Msg, Span, Value};

/// Where and how spans are sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Config {
    /// The traces URL.
    pub(super) url: String,
    /// Extra headers (`OTEL_EXPORTER_OTLP_HEADERS`), kept out of every
    /// message.
    pub(super) headers: Vec<(String, String)>,
    /// `service.name`.
    pub(super) service: String,
}

impl Config {
    /// The configuration `var` gives; `None` when tracing is off (no
    /// endpoint, or `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`).
    pub(super) fn from_env(var: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let set = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
            || set("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim() == "none")
        {
            return None;
        }
        let url = match set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(url) => url.trim().to_string(),
            None => {
                let base = set("OTEL_EXPORTER_OTLP_ENDPOINT")?;
                format!("{}/v1/traces", base.trim().trim_end_matches('/'))
            }
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return None;
        }
        let headers = set("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .or_else(|| set("OTEL_EXPORTER_OTLP_HEADERS"))
            .map(|h| {
                h.split(',')
                    .filter_map(|pair| {
                        let (k, v) = pair.split_once('=')?;
                        Some((k.trim().to_string(), percent_decoded(v.trim())))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let service = set("OTEL_SERVICE_NAME").unwrap_or_else(|| "muster".into());
        Some(Self {
            url,
            headers,
            service,
        })
    }
}

/// `%XX` escapes decoded, as the OTLP exporter spec says header values are.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(text.get(i + 1..i + 3).unwrap_or("zz"), 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Sends what arrives on `spans` until every sender is gone.
pub(super) fn run(config: Config, spans: mpsc::Receiver<Msg>) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _inside = runtime.enter();
    let Ok(client) = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
    else {
        return;
    };
    let mut batch: Vec<Span> = Vec::new();
    let mut since = Instant::now();
    let mut warned = false;
    loop {
        let wait = BATCH_EVERY.saturating_sub(since.elapsed());
        let mut flushed = None;
        match spans.recv_timeout(wait) {
            Ok(Msg::Span(span)) => {
                if batch.is_empty() {
                    since = Instant::now();
                }
                batch.push(*span);
            }
            Ok(Msg::Flush(done)) => flushed = Some(done),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                send(&runtime, &client, &config, &batch, &mut warned);
                return;
            }
        }
        let due = batch.len() >= BATCH_SPANS || since.elapsed() >= BATCH_EVERY;
        if !batch.is_empty() && (due || flushed.is_some()) {
            send(&runtime, &client, &config, &batch, &mut warned);
            batch.clear();
        }
        if let Some(done) = flushed {
            let _ = done.send(());
        }
        if batch.is_empty() {
            since = Instant::now();
        }
    }
}

fn send(
    runtime: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    config: &Config,
    batch: &[Span],
    warned: &mut bool,
) {
    if batch.is_empty() {
        return;
    }
    let body = request(&config.service, batch);
    let mut post = client
        .post(&config.url)
        .header("content-type", "application/json")
        .body(body);
    for (k, v) in &config.headers {
        post = post.header(k.as_str(), v.as_str());
    }
    let answer = runtime.block_on(async move { post.send().await });
    let failed = match answer {
        Ok(a) if a.status().is_success() => None,
        Ok(a) => Some(format!("answered {}", a.status().as_u16())),
        Err(e) => Some(e.without_url().to_string()),
    };
    if let Some(why) = failed
        && !*warned
    {
        *warned = true;
        eprintln!(
            "{}",
            serde_json::json!({
                "event": "traces-not-sent",
                "code": "otlp-export-failed",
                "spans": batch.len(),
                "reason": why,
            })
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `ExportTraceServiceRequest` JSON for `spans`.
pub(super) fn request(service: &str, spans: &[Span]) -> String {
    let attribute = |key: &str, value: &Value| {
        let value = match value {
            Value::Text(t) => serde_json::json!({"stringValue": t}),
            Value::Int(n) => serde_json::json!({"intValue": n.to_string()}),
            Value::Texts(list) => serde_json::json!({"arrayValue": {"values":
                list.iter().map(|t| serde_json::json!({"stringValue": t})).collect::<Vec<_>>()}}),
        };
        serde_json::json!({"key": key, "value": value})
    };
    let spans: Vec<serde_json::Value> = spans
        .iter()
        .map(|s| {
            let mut span = serde_json::json!({
                "traceId": hex(&s.trace_id),
                "spanId": hex(&s.span_id),
                "name": s.name,
                // SPAN_KIND_INTERNAL = 1, SPAN_KIND_SERVER = 2, SPAN_KIND_CLIENT = 3.
                "kind": match s.kind { Kind::Internal => 1, Kind::Server => 2, Kind::Client => 3 },
                "startTimeUnixNano": s.start_ns.to_string(),
                "endTimeUnixNano": s.end_ns.to_string(),
                "attributes": s.attributes.iter().map(|(k, v)| attribute(k, v)).collect::<Vec<_>>(),
                // STATUS_CODE_UNSET = 0, STATUS_CODE_ERROR = 2.
                "status": {"code": if s.error { 2 } else { 0 }},
            });
            if let Some(parent) = s.parent {
                span["parentSpanId"] = serde_json::json!(hex(&parent));
            }
            span
        })
        .collect();
    serde_json::json!({"resourceSpans": [{
        "resource": {"attributes": [
            attribute("service.name", &Value::Text(service.to_string())),
            attribute("service.version", &Value::Text(env!("CARGO_PKG_VERSION").to_string())),
        ]},
        "scopeSpans": [{
            "scope": {"name": "muster", "version": env!("CARGO_PKG_VERSION")},
            "spans": spans,
        }],
    }]})
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_variables_decide() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(Config::from_env(env(&[])), None);
        let c = Config::from_env(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20x, k=v",
            ),
        ]))
        .unwrap();
        assert_eq!(c.url, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(
            c.headers,
            [
                ("authorization".to_string(), "Bearer x".to_string()),
                ("k".to_string(), "v".to_string())
            ]
        );
        assert_eq!(c.service, "muster");
        let c = Config::from_env(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:1"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:2/t"),
            ("OTEL_SERVICE_NAME", "gw"),
        ]))
        .unwrap();
        assert_eq!((c.url.as_str(), c.service.as_str()), ("http://b:2/t", "gw"));
        assert_eq!(
            Config::from_env(env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:1"),
                ("OTEL_SDK_DISABLED", "true"),
            ])),
            None
        );
    }
}
