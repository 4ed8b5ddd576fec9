//! The typed JSON shapes muster emits and reads back: every decision,
//! exclusion, warning, gate outcome, session document and answer is data
//! with a stable kebab-case `code` and typed fields. Sentences are rendered
//! from that data by `Display`; nothing here is prose that a client must
//! parse.
//!
//! This module is a leaf: plain data, Serialize and Deserialize (unknown
//! fields refused where muster reads the shape back), documented in
//! `docs/`. It decides nothing.

mod accept;
mod call;
mod check;
mod context;
mod count;
mod diff;
mod discover;
mod finding;
mod gate;
mod lock;
mod reason;
mod result;
mod review;
mod session;
mod validate;
mod why;

pub use accept::{AcceptCode, Fix, Violation};
pub use call::{
    CALL_FORMAT_VERSION, CallAnswer, CallResult, ResultStatus, TurnOutcome, UpstreamCode,
    UpstreamFailure,
};
pub use check::*;
pub use context::ContextShare;
pub use count::{
    Accuracy, Breakdown, COUNT_FORMAT_VERSION, CountNote, CountReport, Provider, ToolTokens,
};
pub use diff::{
    ChangeKind, DIFF_FORMAT_VERSION, DiffSide, Placement, PlanDiff, RosterChange, SideTotals,
    TotalsDelta,
};
pub use discover::{
    DISCOVER_FORMAT_VERSION, DiscoverAnswer, DiscoverProblem, FailureReason, LockUpdate,
    ServerDiscovery, SnapshotDiff,
};
pub use finding::{Code, Status, Warning, WarningCode, WarningKind};
pub use gate::{
    AddedTool, FindabilityResult, GateFailure, GateResult, MissedQuery, RemovedTool, Reorder,
    RosterSize,
};
pub use lock::{
    DriftEntry, LOCK_CHECK_FORMAT_VERSION, LOCK_FORMAT_VERSION, LockAnswer, LockChange, LockCheck,
    LockFinding, LockStatus,
};
pub use reason::{Enabling, Hidden, Hint, HintRule, Reason, SchemaProblem};
pub use result::{OutputMismatch, ResultCode, ResultCount, ResultCut};
pub use review::{
    ChangeDetails, HintChange, JsonKind, MAX_SCHEMA_PATHS, MAX_SHOWN_CHARS, MAX_TEXT_SPANS,
    MAX_VALUE_CHARS, PathChange, PathOp, ShownValue, SpanOp, TextSpan, ToolChange,
};
pub use session::*;
pub use validate::{SweptViolation, SweptWarning, VALIDATE_FORMAT_VERSION, Validation};
pub use why::{Explanation, Remedy, WhyStatus};
