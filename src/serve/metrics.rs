//! The service's Prometheus metrics: requests by endpoint and status,
//! latency, answers by outcome, refused turns, the policy generation and
//! the last reload's result, and how full the serving generation's memos
//! are. Names are documented in `docs/serve.md`.

use super::memo::Fill;
use crate::answer::Outcome;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    endpoint: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabels {
    endpoint: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    endpoint: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MemoLabels {
    memo: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    server: String,
    verdict: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    server: String,
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    agent: String,
    scope: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReloadLabels {
    result: &'static str,
}

fn tokens_histogram() -> Histogram {
    // 16 tokens to about a million.
    Histogram::new(exponential_buckets(16.0, 2.0, 17))
}

fn latency_histogram() -> Histogram {
    // 50 µs to about 1.6 s.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 16))
}

/// Every metric the service keeps.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<EndpointLabels, Histogram, fn() -> Histogram>,
    answers: Family<OutcomeLabels, Counter>,
    turns_refused: Counter,
    generation: Gauge,
    reloads: Family<ReloadLabels, Counter>,
    last_reload_ok: Gauge,
    memo_entries: Family<MemoLabels, Gauge>,
    memo_bytes: Family<MemoLabels, Gauge>,
    memo_evicted: Family<MemoLabels, Gauge>,
    work_items: Family<EndpointLabels, Counter>,
    work_stopped: Family<EndpointLabels, Counter>,
    gateway_calls: Family<CallLabels, Counter>,
    gateway_upstream: Family<ServerLabels, Histogram, fn() -> Histogram>,
    gateway_result_tokens: Family<ToolLabels, Histogram, fn() -> Histogram>,
    listen_streams: Gauge,
    auth_refused: Family<RefusalLabels, Counter>,
    rate_limited: Family<LimitLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<EndpointLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let answers = Family::<OutcomeLabels, Counter>::default();
        let turns_refused = Counter::default();
        let generation = Gauge::default();
        let reloads = Family::<ReloadLabels, Counter>::default();
        let last_reload_ok = Gauge::default();
        let memo_entries = Family::<MemoLabels, Gauge>::default();
        let memo_bytes = Family::<MemoLabels, Gauge>::default();
        let memo_evicted = Family::<MemoLabels, Gauge>::default();
        let work_items = Family::<EndpointLabels, Counter>::default();
        let work_stopped = Family::<EndpointLabels, Counter>::default();
        let gateway_calls = Family::<CallLabels, Counter>::default();
        let gateway_upstream =
            Family::<ServerLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        registry.register(
            "muster_gateway_calls",
            "/mcp tools/call by server (none: not forwarded) and verdict (forwarded, refused, loaded, load-refused, upstream-failed, drifted, invalid)",
            gateway_calls.clone(),
        );
        registry.register(
            "muster_gateway_upstream_duration_seconds",
            "Time a server took to answer a forwarded call, by server",
            gateway_upstream.clone(),
        );
        let gateway_result_tokens =
            Family::<ToolLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                tokens_histogram,
            );
        registry.register(
            "muster_gateway_result_tokens",
            "Tokens of a forwarded call's result content as the client got it (docs/results.md), by server and tool",
            gateway_result_tokens.clone(),
        );
        let listen_streams = Gauge::default();
        registry.register(
            "muster_gateway_listen_streams",
            "/mcp subscriptions/listen streams open now",
            listen_streams.clone(),
        );
        registry.register(
            "muster_http_requests",
            "HTTP requests by endpoint (route) and status",
            requests.clone(),
        );
        registry.register(
            "muster_http_request_duration_seconds",
            "Time from request to response, by endpoint",
            latency.clone(),
        );
        registry.register(
            "muster_answers",
            "Answers by endpoint and outcome (done, failed, pin-mismatch)",
            answers.clone(),
        );
        registry.register(
            "muster_turns_refused",
            "Turns /v1/check refused",
            turns_refused.clone(),
        );
        registry.register(
            "muster_policy_generation",
            "The policy generation serving requests (1 at start, +1 per successful reload)",
            generation.clone(),
        );
        registry.register(
            "muster_policy_reloads",
            "Policy reloads by result (ok, failed)",
            reloads.clone(),
        );
        registry.register(
            "muster_policy_last_reload_success",
            "1 when the last reload (or the start) loaded the policies, 0 when it failed",
            last_reload_ok.clone(),
        );
        registry.register(
            "muster_memo_entries",
            "Entries the serving generation's memo keeps, by memo (plans, offered)",
            memo_entries.clone(),
        );
        registry.register(
            "muster_memo_bytes",
            "Bytes the serving generation's memo holds (keys and answers), by memo",
            memo_bytes.clone(),
        );
        registry.register(
            "muster_memo_evicted",
            "Entries the serving generation's memo dropped to stay in its bound, by memo",
            memo_evicted.clone(),
        );
        registry.register(
            "muster_work_items",
            "Items of per-item work begun, by endpoint: calls checked (/v1/check), queries searched (/v1/sessions/search), gates run (/v1/gate)",
            work_items.clone(),
        );
        registry.register(
            "muster_work_stopped",
            "Requests whose work stopped between items because the request was already answered (the timeout's 503) or dropped, by endpoint",
            work_stopped.clone(),
        );
        let auth_refused = Family::<RefusalLabels, Counter>::default();
        registry.register(
            "muster_auth_refused",
            "Requests [auth] refused, by reason (token-missing, a token-invalid reason such as expired or wrong-audience, insufficient-scope, jwks-unavailable)",
            auth_refused.clone(),
        );
        let rate_limited = Family::<LimitLabels, Counter>::default();
        registry.register(
            "muster_rate_limited",
            "Requests and calls refused by [auth.limits], by the caller's agent and the limit (caller, tool)",
            rate_limited.clone(),
        );
        Self {
            auth_refused,
            rate_limited,
            registry,
            requests,
            latency,
            answers,
            turns_refused,
            generation,
            reloads,
            last_reload_ok,
            memo_entries,
            memo_bytes,
            memo_evicted,
            work_items,
            work_stopped,
            gateway_calls,
            gateway_upstream,
            gateway_result_tokens,
            listen_streams,
        }
    }
}

impl Metrics {
    /// What counts each gateway call: by server and verdict, and the
    /// server's time for a forwarded one.
    pub fn gateway_observer(&self) -> impl Fn(&crate::gateway::CallRecord) + Send + Sync + 'static {
        let calls = self.gateway_calls.clone();
        let upstream = self.gateway_upstream.clone();
        let result_tokens = self.gateway_result_tokens.clone();
        move |record| {
            if let (Some(tokens), Some(server)) = (record.result_tokens, &record.server) {
                result_tokens
                    .get_or_create(&ToolLabels {
                        server: server.clone(),
                        tool: record.tool.clone(),
                    })
                    .observe(tokens as f64);
            }
            let server = record.server.clone().unwrap_or_else(|| "none".into());
            calls
                .get_or_create(&CallLabels {
                    server: server.clone(),
                    verdict: record.verdict,
                })
                .inc();
            if let Some(ms) = record.upstream_ms {
                upstream
                    .get_or_create(&ServerLabels { server })
                    .observe(ms / 1000.0);
            }
        }
    }

    /// Counts one request.
    pub fn request(&self, endpoint: &str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                endpoint: endpoint.to_string(),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&EndpointLabels {
                endpoint: endpoint.to_string(),
            })
            .observe(seconds);
    }

    /// Counts one answer.
    pub fn answer(&self, endpoint: &str, outcome: Outcome) {
        self.answers
            .get_or_create(&OutcomeLabels {
                endpoint: endpoint.to_string(),
                outcome: match outcome {
                    Outcome::Done => "done",
                    Outcome::Failed => "failed",
                    Outcome::PinMismatch => "pin-mismatch",
                },
            })
            .inc();
    }

    /// Counts one item of a request's per-item work, about to begin.
    pub fn work_item(&self, endpoint: &str) {
        self.work_items
            .get_or_create(&EndpointLabels {
                endpoint: endpoint.to_string(),
            })
            .inc();
    }

    /// Counts a request whose work saw its stop flag and gave up.
    pub fn work_stopped(&self, endpoint: &str) {
        self.work_stopped
            .get_or_create(&EndpointLabels {
                endpoint: endpoint.to_string(),
            })
            .inc();
    }

    /// Counts a request `[auth]` refused, by reason (a fixed set).
    pub fn auth_refused(&self, reason: &'static str) {
        self.auth_refused
            .get_or_create(&RefusalLabels { reason })
            .inc();
    }

    /// Counts a request or call over its limit, by the caller's agent (a
    /// name the policy declares: bounded) and the limit.
    pub fn rate_limited(&self, agent: &str, scope: &'static str) {
        self.rate_limited
            .get_or_create(&LimitLabels {
                agent: agent.to_string(),
                scope,
            })
            .inc();
    }

    /// Counts a turn refused.
    pub fn turn_refused(&self) {
        self.turns_refused.inc();
    }

    /// Records the generation now serving after a start or a reload.
    pub fn loaded(&self, generation: u64, reload: bool) {
        self.generation.set(generation as i64);
        self.last_reload_ok.set(1);
        if reload {
            self.reloads
                .get_or_create(&ReloadLabels { result: "ok" })
                .inc();
        }
    }

    /// Records a reload that failed.
    pub fn reload_failed(&self) {
        self.last_reload_ok.set(0);
        self.reloads
            .get_or_create(&ReloadLabels { result: "failed" })
            .inc();
    }

    /// Records how full the serving generation's memos are.
    pub fn memos(&self, fills: &[(&'static str, Fill)]) {
        for &(memo, fill) in fills {
            let labels = MemoLabels { memo };
            let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            self.memo_entries
                .get_or_create(&labels)
                .set(gauge(fill.entries as u64));
            self.memo_bytes
                .get_or_create(&labels)
                .set(gauge(fill.bytes as u64));
            self.memo_evicted
                .get_or_create(&labels)
                .set(gauge(fill.evicted));
        }
    }

    /// Records how many listen streams are open.
    pub fn listen_streams(&self, open: usize) {
        self.listen_streams
            .set(i64::try_from(open).unwrap_or(i64::MAX));
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
