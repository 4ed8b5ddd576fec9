//! What each route reads: the request types (the CLI's long options as
//! JSON fields, unknown fields refused) and the extractors that turn a body
//! into one, every failure a problem+json (400 unreadable JSON, 422 the
//! wrong shape, 413 too large).

use super::problem::ApiError;
use crate::answer;
use crate::catalog::Selection;
use crate::error::code;
use crate::error::{Error, ErrorKind, Problem};
use crate::provider::shape::Format;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::path::Path;
use utoipa::ToSchema;

/// A JSON request body of type `T`: unreadable JSON is a 400, JSON of the
/// wrong shape (an unknown or missing field, a wrong type) a 422, a body
/// over the limit a 413, each as problem+json.
pub struct Body<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = body_bytes(req, state).await?;
        parse(&bytes).map(Body)
    }
}

/// The body's bytes, for a handler that keeps answers by them; read as
/// [`Body`] reads them.
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        body_bytes(req, state).await.map(RawBody)
    }
}

pub(super) async fn body_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|rejection| {
        let status = rejection.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            too_large(rejection.body_text())
        } else {
            ApiError::with_status(
                Error::new(
                    ErrorKind::Input,
                    Problem::coded(code::INVALID_BODY, rejection.body_text()).in_file("body"),
                ),
                status,
            )
        }
    })
}

/// The 413 for a body over `--body-limit`, read or declared.
pub(super) fn too_large(message: String) -> ApiError {
    ApiError::http(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body-too-large",
        "the request body is larger than the service accepts",
        Problem::coded(code::BODY_TOO_LARGE, message)
            .in_file("body")
            .help("send a smaller body, or start the service with a larger --body-limit"),
    )
}

/// How long a request's body may take to arrive whole, and how large it
/// may be, on a route that has no request timeout of its own.
#[derive(Clone, Copy)]
pub(super) struct BodyDeadline {
    pub within: std::time::Duration,
    pub limit: usize,
}

/// Reads a request's whole body before the request takes a concurrency
/// permit, within the deadline. `/mcp` and `/v1/call` have no request
/// timeout (a forwarded call takes what its server's `timeout_secs`
/// allows), so without this a body sent a byte at a time would hold a
/// permit for as long as its sender liked, and as many such bodies as
/// permits would shut the routes. A body not whole in time is a 408
/// `body-timeout`, one over the limit a 413, one the client broke off a 400.
pub(super) async fn whole_body(
    axum::extract::State(deadline): axum::extract::State<BodyDeadline>,
    request: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    use http_body_util::BodyExt;
    let (parts, body) = request.into_parts();
    let limited = http_body_util::Limited::new(body, deadline.limit);
    let bytes = match tokio::time::timeout(deadline.within, limited.collect()).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(err)) if err.is::<http_body_util::LengthLimitError>() => {
            return too_large(format!(
                "the body is over the limit of {} bytes",
                deadline.limit
            ))
            .into_response();
        }
        Ok(Err(err)) => {
            return ApiError::with_status(
                Error::new(
                    ErrorKind::Input,
                    Problem::coded(
                        code::INVALID_BODY,
                        format!("the body could not be read: {err}"),
                    )
                    .in_file("body"),
                ),
                StatusCode::BAD_REQUEST,
            )
            .into_response();
        }
        Err(_) => {
            let mut response = ApiError::http(
                StatusCode::REQUEST_TIMEOUT,
                "body-timeout",
                "the request body did not arrive in time",
                Problem::coded(
                    code::BODY_TIMEOUT,
                    format!(
                        "the body was not whole within {} ms",
                        deadline.within.as_millis()
                    ),
                )
                .in_file("body")
                .help("send the whole body at once, or start the service with a longer --request-timeout-ms"),
            )
            .into_response();
            // The rest of the body is unread: the connection cannot carry another request.
            response.headers_mut().insert(
                axum::http::header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
            return response;
        }
    };
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// The UTF-8 byte-order mark some editors and Windows tools put first.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A request of type `T` from its body: unreadable JSON is a 400, JSON of
/// the wrong shape a 422. A UTF-8 byte-order mark before the JSON is
/// skipped, as turn files' is.
pub(super) fn parse<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, ApiError> {
    let bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
    serde_json::from_slice(bytes).map_err(|err| {
        let status = match err.classify() {
            serde_json::error::Category::Data => StatusCode::UNPROCESSABLE_ENTITY,
            _ => StatusCode::BAD_REQUEST,
        };
        ApiError::with_status(
            Error::json(
                Path::new("body"),
                "request",
                &err,
                "send a JSON object with the fields docs/serve.md lists for this endpoint",
            ),
            status,
        )
    })
}

pub(super) fn cap(value: Option<u32>, field: &str) -> Result<Option<u32>, Error> {
    match value {
        Some(0) => Err(Error::new(
            ErrorKind::Usage,
            Problem::coded(code::OUT_OF_RANGE, format!("{field} is 0"))
                .in_file(field)
                .help(format!(
                    "give {field} as an integer of at least 1, or leave it out"
                )),
        )),
        other => Ok(other),
    }
}

/// Which roster to plan: `plan`'s options.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanRequest {
    /// Agent (default: the policy's default agent).
    pub agent: Option<String>,
    /// Agent version (default: the agent's current version).
    pub agent_version: Option<u64>,
    /// Flag profile: `flags/<PROFILE>.toml`.
    pub flags: Option<String>,
    /// More flags to turn on.
    #[serde(default)]
    pub flag: Vec<String>,
    /// What-if: a different item cap (at least 1).
    pub item_cap: Option<u32>,
    /// What-if: a different token cap (at least 1).
    pub token_cap: Option<u32>,
    /// Whose billing token counts follow: `openai` or `anthropic`
    /// (default: the agent's `provider`, else `[tokens] provider`).
    pub provider: Option<String>,
    /// `/v1/plan` only: `json` (the default), or the `tools` value of a
    /// provider's request: `openai`, `openai-responses`, `anthropic`, `gemini`
    /// (docs/providers.md).
    pub format: Option<String>,
    /// The model whose context window the plan's `context` share is
    /// stated against (default: the provider's default; docs/plan-json.md).
    pub model: Option<String>,
}

/// The provider shape `format` names; `None` for the plan JSON.
pub(super) fn tools_format(format: Option<&str>) -> Result<Option<Format>, Error> {
    match format {
        None | Some("json") => Ok(None),
        Some(name) => Format::from_name(name).map(Some).ok_or_else(|| {
            usage(
                code::NOT_A_CHOICE,
                "format",
                &format!("format {name:?} is not one muster renders"),
                "give json, openai, openai-responses, anthropic or gemini, or leave it out",
            )
        }),
    }
}

impl PlanRequest {
    pub(super) fn select(self) -> Result<answer::Select, Error> {
        Ok(answer::Select {
            item_cap: cap(self.item_cap, "item_cap")?,
            token_cap: cap(self.token_cap, "token_cap")?,
            selection: Selection {
                agent: self.agent,
                version: self.agent_version,
                provider: provider(self.provider.as_deref())?,
                profile: self.flags,
                flags: self.flag,
                mcp_only: false,
            },
        })
    }
}

/// `why`'s options: the tool and the roster to plan.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WhyRequest {
    /// Full tool name, e.g. `mcp.bland_read.list_calls`.
    pub tool: String,
    /// As in [`PlanRequest`].
    pub agent: Option<String>,
    /// As in [`PlanRequest`].
    pub agent_version: Option<u64>,
    /// As in [`PlanRequest`].
    pub flags: Option<String>,
    /// As in [`PlanRequest`].
    #[serde(default)]
    pub flag: Vec<String>,
    /// As in [`PlanRequest`].
    pub item_cap: Option<u32>,
    /// As in [`PlanRequest`].
    pub token_cap: Option<u32>,
}

/// `gate`'s options: gates by name from the service's gate directory.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GateRequest {
    /// Gate names: `NAME` runs `<gates dir>/NAME.toml`. Empty or absent:
    /// every gate in the directory, in name order.
    #[serde(default)]
    pub gates: Vec<String>,
    /// Override the item cap for every gate.
    pub item_cap: Option<u32>,
    /// Override the token cap for every gate.
    pub token_cap: Option<u32>,
}

/// `check`'s options: the turn, and the plan or the session it was offered.
/// Borrowed from the body: a check's body is mostly the plan, and copying
/// it out cost a tenth of the request's instructions.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckRequest<'a> {
    /// The turn: `{"calls": [{"id", "name", "arguments"}]}`.
    #[serde(borrow)]
    #[schema(value_type = Object)]
    pub turn: &'a RawValue,
    /// The plan the model was offered (`plan`'s answer). Give this or `session`.
    #[serde(borrow)]
    #[schema(value_type = Option<Object>)]
    pub plan: Option<&'a RawValue>,
    /// The session document the turn belongs to. Give this, `session_id`,
    /// `plan` or `fingerprint`.
    #[serde(borrow)]
    #[schema(value_type = Option<Object>)]
    pub session: Option<&'a RawValue>,
    /// The id of a session this service keeps (`--sessions`).
    pub session_id: Option<String>,
    /// Or the offered plan's `fingerprint`: the turn is checked against the
    /// plan this policy generation makes for `agent`, `agent_version`,
    /// `flags`, `flag`, `item_cap` and `token_cap` (as `/v1/plan` takes
    /// them), and answered 409 `plan-changed` unjudged if that plan's
    /// fingerprint differs. Saves sending the plan with every turn.
    pub fingerprint: Option<String>,
    /// With `fingerprint`: the agent the plan was made for.
    pub agent: Option<String>,
    /// With `fingerprint`: the agent version.
    pub agent_version: Option<u64>,
    /// With `fingerprint`: the flag profile.
    pub flags: Option<String>,
    /// With `fingerprint`: extra flags.
    #[serde(default)]
    pub flag: Vec<String>,
    /// With `fingerprint`: the item cap the plan was made with.
    pub item_cap: Option<u32>,
    /// With `fingerprint`: the token cap the plan was made with.
    pub token_cap: Option<u32>,
    /// Return each ok call's arguments as a list in declared parameter order.
    #[serde(default)]
    pub positional: bool,
}

impl CheckRequest<'_> {
    /// The plan selection a `fingerprint` names (the default when no field
    /// chooses one).
    pub(super) fn select(&self) -> Result<answer::Select, Error> {
        PlanRequest {
            agent: self.agent.clone(),
            agent_version: self.agent_version,
            flags: self.flags.clone(),
            flag: self.flag.clone(),
            item_cap: self.item_cap,
            token_cap: self.token_cap,
            provider: None,
            format: None,
            model: None,
        }
        .select()
    }
}

/// A session call's session: the document the host carries, or the id of
/// a session the service keeps.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionRequest {
    /// The session document, as `POST /v1/sessions` (or the last load)
    /// returned it. Give this or `session_id`.
    #[schema(value_type = Option<Object>)]
    pub session: Option<Box<RawValue>>,
    /// The id of a session this service keeps (`--sessions`).
    pub session_id: Option<String>,
}

/// `session roster`'s options.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RosterRequest {
    /// The session document. Give this or `session_id`.
    #[schema(value_type = Option<Object>)]
    pub session: Option<Box<RawValue>>,
    /// The id of a session this service keeps.
    pub session_id: Option<String>,
    /// `json` (the default), or the `tools` value of a provider's request:
    /// `openai`, `openai-responses`, `anthropic`, `gemini` (docs/providers.md).
    pub format: Option<String>,
}

/// `session search`'s options.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// The session document. Give this or `session_id`.
    #[schema(value_type = Option<Object>)]
    pub session: Option<Box<RawValue>>,
    /// The id of a session this service keeps.
    pub session_id: Option<String>,
    /// What the tool is needed for, in words. Give this or `queries`.
    pub query: Option<String>,
    /// Many queries: the answer is one JSON line of results per query, in
    /// order (`application/x-ndjson`).
    pub queries: Option<Vec<String>>,
    /// Most results per query, 1 to 10 (default 5).
    pub limit: Option<u32>,
}

/// `session load`'s options.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadRequestBody {
    /// The session document. Give this or `session_id`.
    #[schema(value_type = Option<Object>)]
    pub session: Option<Box<RawValue>>,
    /// The id of a session this service keeps.
    pub session_id: Option<String>,
    /// The revision the load is meant for: when the session is at another,
    /// nothing is loaded and the answer is 409 `stale-revision`. Without
    /// it, a kept session is loaded at the revision read, and a load that
    /// lands first on another replica still makes this one 409.
    pub revision: Option<u64>,
    /// The control tool's query: words, or exact names separated by commas.
    /// Give this or `name`.
    pub query: Option<String>,
    /// Exact names of deferred tools or kinds.
    #[serde(default)]
    pub name: Vec<String>,
}

/// `session new`'s options: which roster to pin, and for whom.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSessionRequest {
    /// Agent (default: the policy's default agent).
    pub agent: Option<String>,
    /// Agent version (default: the agent's current version).
    pub agent_version: Option<u64>,
    /// Flag profile: `flags/<PROFILE>.toml`.
    pub flags: Option<String>,
    /// Extra flags turned on.
    #[serde(default)]
    pub flag: Vec<String>,
    /// A different item cap.
    pub item_cap: Option<u32>,
    /// A different token cap.
    pub token_cap: Option<u32>,
    /// Whose billing the chat's token counts follow: `openai` or
    /// `anthropic` (default: the agent's, else `[tokens] provider`).
    pub provider: Option<String>,
    /// How the model is given names: `provider` (the default) or `muster`.
    pub names: Option<String>,
}

impl NewSessionRequest {
    pub(super) fn options(self) -> Result<(answer::Select, crate::session::NewSession), Error> {
        let names = match self.names.as_deref() {
            None | Some("provider") => crate::contract::NameSpelling::Provider,
            Some("muster") => crate::contract::NameSpelling::Muster,
            Some(other) => {
                return Err(usage(
                    code::NOT_A_CHOICE,
                    "names",
                    &format!("names {other:?} is not a spelling"),
                    "give \"provider\" (the names providers are sent) or \"muster\", or leave it out",
                ));
            }
        };
        let provider = provider(self.provider.as_deref())?;
        let mut select = PlanRequest {
            agent: self.agent,
            agent_version: self.agent_version,
            flags: self.flags,
            flag: self.flag,
            item_cap: self.item_cap,
            token_cap: self.token_cap,
            provider: None,
            format: None,
            model: None,
        }
        .select()?;
        select.selection.provider = provider;
        let options = crate::session::NewSession {
            caps: (select.item_cap, select.token_cap),
            names,
            id: None,
        };
        Ok((select, options))
    }
}

/// A `provider` field: whose billing token counts follow.
pub(super) fn provider(name: Option<&str>) -> Result<Option<crate::contract::Provider>, Error> {
    match name {
        None => Ok(None),
        Some(name) => crate::contract::Provider::from_name(name)
            .map(Some)
            .ok_or_else(|| {
                usage(
                    code::NOT_A_CHOICE,
                    "provider",
                    &format!("provider {name:?} is not supported"),
                    "use \"openai\" or \"anthropic\", or leave it out",
                )
            }),
    }
}

/// `count`'s input: the provider's request body and the CLI's options.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CountRequest {
    /// The provider's own JSON request body (OpenAI Chat Completions or
    /// Anthropic Messages).
    #[schema(value_type = Object)]
    pub request: Box<RawValue>,
    /// `openai` or `anthropic` (default: from the model's name).
    pub provider: Option<String>,
    /// The model (default: the request's `model`).
    pub model: Option<String>,
}

/// What a reload did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ReloadReport {
    /// `reloaded`.
    pub status: &'static str,
    /// The generation now serving.
    pub generation: u64,
}

/// The readiness answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Ready {
    /// `ready`.
    pub status: &'static str,
    /// The generation serving.
    pub generation: u64,
    /// The policy directory.
    pub policies: String,
}

pub(super) fn usage(code: &'static str, field: &str, message: &str, help: &str) -> Error {
    Error::new(
        ErrorKind::Usage,
        Problem::coded(code, message).in_file(field).help(help),
    )
}
