//! Command-line arguments.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Plans which tools an LLM agent is offered, explains every cut, and gates
/// production-shaped rosters in CI.
#[derive(Debug, Parser)]
#[command(name = "muster", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Plan the roster: offered, deferred and cut tools with reasons.
    Plan {
        #[command(flatten)]
        select: Select,
        /// The model whose context window the roster's share is stated
        /// against (default: the provider's default; docs/report.md).
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// Output format: a table, the plan JSON, or the `tools` value of
        /// a provider's request (docs/providers.md).
        #[arg(long, value_enum, default_value = "table")]
        format: RosterFormat,
    },
    /// Explain why a tool is offered, deferred, cut or unknown.
    Why {
        /// Full tool name, e.g. mcp.bland_read.list_calls.
        tool: String,
        #[command(flatten)]
        select: Select,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: TextOrJson,
    },
    /// Run gate files (default: gates/); exit 1 if any fails.
    Gate {
        /// Gate files or directories.
        paths: Vec<PathBuf>,
        /// Policy directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// Override the item cap for every gate.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        item_cap: Option<u32>,
        /// Override the token cap for every gate.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        token_cap: Option<u32>,
        /// Count every definition afresh, without the token-count cache.
        #[arg(long)]
        no_cache: bool,
        /// Output format (github, sarif, junit, markdown: docs/ci.md).
        #[arg(long, value_enum, default_value = "text")]
        format: CiFormat,
    },
    /// Repair, narrow and check a turn's tool calls against the plan they
    /// were offered with; exit 1 if the turn is refused.
    Check {
        /// The plan the model was offered (`muster plan --format json`).
        #[arg(
            long,
            value_name = "PLAN.json",
            required_unless_present_any = ["session", "fingerprint"],
            conflicts_with_all = ["session", "fingerprint"]
        )]
        plan: Option<PathBuf>,
        /// Or the agent session the turn belongs to: checked against its
        /// pinned roster and loaded tools.
        #[arg(long, value_name = "S.json", conflicts_with = "fingerprint")]
        session: Option<PathBuf>,
        /// Or the offered plan's `fingerprint`: the turn is checked against
        /// the plan the policy makes now for the selection below (--agent,
        /// --flags, …), refused unjudged (exit 1) if that plan's fingerprint
        /// differs.
        #[arg(long, value_name = "sha256:HEX")]
        fingerprint: Option<String>,
        /// The policy directory (with --session or --fingerprint), and the
        /// selection a --fingerprint plan was made for.
        #[command(flatten)]
        select: Select,
        /// The turn: {"calls": [{"id", "name", "arguments"}]}.
        #[arg(long, value_name = "TURN.json")]
        turn: PathBuf,
        /// Return each ok call's arguments as a list in declared parameter order.
        #[arg(long)]
        positional: bool,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: TextOrJson,
    },
    /// Check a turn as `check` does and, when every call passes, forward
    /// its MCP calls to their servers (started for this turn, stopped at
    /// exit); exit 1 if the turn is refused or a call fails (docs/call.md).
    #[cfg(feature = "serve")]
    Call(CallTurn),
    /// Count the input tokens a chat request will be billed for: messages,
    /// tools and tool_choice (docs/count.md).
    Count {
        /// The provider's own JSON request body (`-`: standard input).
        request: PathBuf,
        /// Whose billing to follow (default: from the model's name).
        #[arg(long, value_enum)]
        provider: Option<ProviderArg>,
        /// The model (default: the request's `model`).
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: TextOrJson,
    },
    /// Agent sessions: pin a roster, find and load deferred tools, resume.
    #[command(subcommand)]
    Session(SessionCommand),
    /// The cache directory's token counts and tool vectors: how much they
    /// hold, or remove them (docs/limits.md).
    #[command(subcommand)]
    Cache(CacheCommand),
    /// Serve the verbs over HTTP/JSON (docs/serve.md) until SIGTERM or
    /// SIGINT; SIGHUP reloads the policies.
    #[cfg(feature = "serve")]
    Serve(Serve),
    /// Credentials for `muster serve`'s `[auth]` (docs/auth.md).
    #[cfg(feature = "serve")]
    #[command(subcommand)]
    Auth(AuthCommand),
    /// Be an MCP server over stdio (docs/gateway.md): the agent's MCP tools
    /// as planned, each call checked, then forwarded to its server.
    #[cfg(feature = "serve")]
    Mcp(McpGateway),
    /// Check the policies and print every problem at once.
    Validate {
        /// Policy directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// Output format (github, sarif, junit, markdown: docs/ci.md).
        #[arg(long, value_enum, default_value = "text")]
        format: CiFormat,
        /// Also judge each plan's request as this provider format would
        /// (repeatable); exit 1 if it would refuse anything.
        #[arg(long, value_enum)]
        accept: Vec<AcceptFormat>,
        /// With --accept: judge the request as sent in strict mode.
        #[arg(long)]
        strict: bool,
    },
    /// Start each MCP server that has a command, list its tools and record
    /// the snapshot; report what changed. Exit 2 if any server failed.
    Discover {
        /// Policy directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// Only these servers (repeatable; default: every server with a command).
        #[arg(long = "server", value_name = "NAME")]
        servers: Vec<String>,
        /// Also accept the listed definitions into the lock.
        #[arg(long)]
        lock: bool,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: TextOrJson,
    },
    /// Compare two plans: the tools that entered, were cut or deferred,
    /// left or moved, and the token deltas against the caps (docs/diff.md).
    Diff {
        /// The base: a plan JSON file or a policy directory.
        #[arg(required_unless_present = "base_rev")]
        base: Option<PathBuf>,
        /// The head: a plan JSON file or a policy directory (with
        /// --base-rev the head is the --policies directory).
        #[arg(required_unless_present = "base_rev")]
        head: Option<PathBuf>,
        /// The base is the --policies directory as committed at this git
        /// revision.
        #[arg(long, value_name = "REV", conflicts_with = "base")]
        base_rev: Option<String>,
        /// The selection policy directories are planned with.
        #[command(flatten)]
        select: Select,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: DiffFormat,
    },
    /// Write the roster as one self-contained HTML page: the token budget,
    /// item slots, cut and deferred tools, totals, context shares and,
    /// with a base, the diff (docs/report.md).
    Report {
        /// The plan: a plan JSON file or a policy directory (default:
        /// --policies).
        plan: Option<PathBuf>,
        /// Highlight the changes against this base: a plan JSON file or a
        /// policy directory.
        #[arg(long, value_name = "PLAN|DIR", conflicts_with = "base_rev")]
        base: Option<PathBuf>,
        /// Highlight the changes against the --policies directory as
        /// committed at this git revision.
        #[arg(long, value_name = "REV")]
        base_rev: Option<String>,
        /// The selection policy directories are planned with.
        #[command(flatten)]
        select: Select,
        /// The model whose context the roster's share is stated against
        /// (default: the plan's provider's default, docs/report.md).
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// Add the result sizes per tool (p50/p99 tokens, results cut) of
        /// this call log: what muster mcp, muster call or muster serve
        /// wrote on stderr (docs/report.md).
        #[arg(long, value_name = "LOG")]
        calls: Option<PathBuf>,
        /// Write the page here (default: standard output).
        #[arg(long, value_name = "FILE.html")]
        out: Option<PathBuf>,
    },
    /// Accept the current snapshots' tool definitions into the lock, after
    /// review, printing what it accepts.
    Lock {
        /// Policy directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// Only these servers (repeatable; default: every server).
        #[arg(long = "server", value_name = "NAME")]
        servers: Vec<String>,
        /// Write nothing: report the drift `muster lock` would accept and
        /// exit 1 if there is any (docs/ci.md).
        #[arg(long)]
        check: bool,
        /// Output format (github, sarif, junit, markdown with --check:
        /// docs/ci.md).
        #[arg(long, value_enum, default_value = "text")]
        format: CiFormat,
    },
}

#[cfg(feature = "serve")]
#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Static API keys (`[[auth.key]]`).
    #[command(subcommand)]
    Key(KeyCommand),
}

#[cfg(feature = "serve")]
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Make a new API key: prints the key once and the `[[auth.key]]`
    /// entry (its hash, never the key) to paste into muster.toml.
    New {
        /// The key's name: its caller is `key:NAME`.
        name: String,
        /// The agents it opens, the first its default (comma-separated).
        #[arg(long, value_delimiter = ',', required = true, num_args = 1..)]
        agents: Vec<String>,
        /// Output format (json: `name`, `key`, `hash`, `entry`).
        #[arg(long, value_enum, default_value = "text")]
        format: TextOrJson,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Plan the roster and pin it in a new session document.
    New {
        #[command(flatten)]
        select: Select,
        /// Where to write the session document.
        #[arg(long, value_name = "S.json")]
        out: PathBuf,
        /// Whose billing the chat's token counts follow (default: the
        /// agent's `provider`, else `[tokens] provider`).
        #[arg(long, value_enum)]
        provider: Option<ProviderArg>,
        /// How the model is given tool names: every text muster writes for
        /// it uses the same spelling.
        #[arg(long, value_enum, default_value = "provider")]
        names: NamesArg,
        /// Output format (json prints the document as written).
        #[arg(long, value_enum, default_value = "text")]
        format: TextOrJson,
    },
    /// Find the deferred tools that best match a query; changes nothing.
    Search {
        /// The session document.
        session: PathBuf,
        /// What the tool is needed for, in words.
        #[arg(required_unless_present = "queries", conflicts_with = "queries")]
        query: Option<String>,
        /// Many queries, one JSON object {"query": ...} per line; prints one
        /// JSON line of results per query, in order.
        #[arg(long, value_name = "FILE")]
        queries: Option<PathBuf>,
        /// Most results per query (at most 10).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10))]
        limit: u32,
        /// Policy directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: TextOrJson,
    },
    /// Load deferred tools into the session (what the control tool does) and
    /// print the answer for the model.
    Load {
        /// The session document; rewritten in place when something loads.
        session: PathBuf,
        /// The control tool's query: words, or exact names separated by commas.
        #[arg(long, required_unless_present = "name", conflicts_with = "name")]
        query: Option<String>,
        /// Exact names of deferred tools or kinds (repeatable).
        #[arg(long, value_name = "NAME")]
        name: Vec<String>,
        /// The revision the load is meant for: refused (exit 1, nothing
        /// loaded) when the document is at another.
        #[arg(long, value_name = "N")]
        revision: Option<u64>,
        /// Policy directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: TextOrJson,
    },
    /// Print what the model is offered now: the pinned roster and the
    /// loaded tools.
    Roster {
        /// The session document.
        session: PathBuf,
        /// Policy directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// Output format: a table, the roster JSON, or the `tools` value of
        /// a provider's request (docs/providers.md).
        #[arg(long, value_enum, default_value = "table")]
        format: RosterFormat,
    },
    /// End a chat kept in a session store (what `muster mcp --sessions`
    /// and `muster serve --sessions` keep): exit 0 when it was ended, 1
    /// when the store kept no live chat under the id.
    End {
        /// The chat's id.
        id: String,
        /// The session store: sqlite:PATH or postgres://…
        #[arg(long, value_name = "URL")]
        sessions: String,
    },
    /// Compare the session's pin with the current policies; exit 1 on a
    /// tool pin mismatch. Never rewrites the document.
    Resume {
        /// The session document.
        session: PathBuf,
        /// Policy directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: TextOrJson,
    },
}

/// How the model is given tool names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NamesArg {
    /// As providers are sent them (`mcp__fs__read_text_file`).
    Provider,
    /// muster's own (`mcp.fs.read_text_file`), for a host that maps names.
    Muster,
}

/// `muster serve`'s options.
#[cfg(feature = "serve")]
#[derive(Debug, Args)]
pub struct Serve {
    /// Policy directory.
    #[arg(long, default_value = "policies")]
    pub policies: PathBuf,
    /// Directory `/v1/gate` reads gates from.
    #[arg(long, default_value = "gates")]
    pub gates: PathBuf,
    /// Address to listen on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: std::net::SocketAddr,
    /// Largest request body in bytes (413 above it).
    #[arg(long, value_name = "BYTES", default_value_t = 1024 * 1024)]
    pub body_limit: usize,
    /// Longest a request may take, in milliseconds (503 after it).
    #[arg(long, value_name = "MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub request_timeout_ms: u64,
    /// Most requests answered at once; more wait their turn.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    pub concurrency: u64,
    /// Longest a client may take to send a request's headers, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_read_timeout_ms: u64,
    /// Most answers each per-generation memo keeps (0: keep none).
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub memo_entries: usize,
    /// Most bytes each per-generation memo holds (keys and answers).
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024 * 1024)]
    pub memo_bytes: usize,
    /// Keep sessions by id: sqlite:PATH (one machine) or postgres://…
    /// (replicas sharing a database). Without it hosts carry documents.
    #[arg(long, value_name = "URL")]
    pub sessions: Option<String>,
    /// How long a kept session lives after its last change, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 7 * 24 * 3600, value_parser = clap::value_parser!(u64).range(1..))]
    pub session_ttl_secs: u64,
    /// Session keys, one ID:SECRET a line, the signing key first (default:
    /// $MUSTER_SESSION_KEY_FILE, else the one key in $MUSTER_SESSION_KEY).
    #[arg(long, value_name = "FILE")]
    pub session_key_file: Option<PathBuf>,
    /// Longest to wait for requests in flight after SIGTERM or SIGINT, in milliseconds; past
    /// it the service stops without them.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    pub drain_timeout_ms: u64,
    /// File holding the token POST /v1/admin/reload requires as
    /// `Authorization: Bearer` (or set MUSTER_ADMIN_TOKEN). Without one the
    /// admin route is open on a loopback --addr and off on any other.
    #[arg(long, value_name = "PATH")]
    pub admin_token_file: Option<PathBuf>,
}

/// `muster mcp`'s options.
#[cfg(feature = "serve")]
#[derive(Debug, Args)]
pub struct McpGateway {
    /// Policy directory.
    #[arg(long, default_value = "policies")]
    pub policies: PathBuf,
    /// Agent (default: the policy's default agent).
    #[arg(long)]
    pub agent: Option<String>,
    /// Agent version (default: the agent's current version).
    #[arg(long, value_name = "N")]
    pub agent_version: Option<u64>,
    /// Flag profile: flags/<PROFILE>.toml.
    #[arg(long = "flags", value_name = "PROFILE")]
    pub profile: Option<String>,
    /// Turn on one more flag (repeatable).
    #[arg(long = "flag", value_name = "NAME")]
    pub flag: Vec<String>,
    /// Keep the chat in a session store (sqlite:PATH or postgres://…), so a
    /// restarted process resumes it with --chat; in memory without it.
    #[arg(long, value_name = "URL")]
    pub sessions: Option<String>,
    /// Resume (or start) the chat with this id.
    #[arg(long, value_name = "ID")]
    pub chat: Option<String>,
    /// Session keys, one ID:SECRET a line, the signing key first (default:
    /// $MUSTER_SESSION_KEY_FILE, else the one key in $MUSTER_SESSION_KEY).
    #[arg(long, value_name = "FILE")]
    pub session_key_file: Option<PathBuf>,
    /// Write each call's log line with the arguments forwarded.
    #[arg(long)]
    pub log_arguments: bool,
}

/// `muster call`'s options: `check`'s, and what to log.
#[cfg(feature = "serve")]
#[derive(Debug, Args)]
pub struct CallTurn {
    /// The plan the model was offered (`muster plan --format json`).
    #[arg(
        long,
        value_name = "PLAN.json",
        required_unless_present_any = ["session", "fingerprint"],
        conflicts_with_all = ["session", "fingerprint"]
    )]
    pub plan: Option<PathBuf>,
    /// Or the agent session the turn belongs to.
    #[arg(long, value_name = "S.json", conflicts_with = "fingerprint")]
    pub session: Option<PathBuf>,
    /// Or the offered plan's `fingerprint` (as `check --fingerprint`).
    #[arg(long, value_name = "sha256:HEX")]
    pub fingerprint: Option<String>,
    /// The policy directory (whose `[[mcp]]` servers are called), and the
    /// selection a --fingerprint plan was made for.
    #[command(flatten)]
    pub select: Select,
    /// The turn: {"calls": [{"id", "name", "arguments"}]}.
    #[arg(long, value_name = "TURN.json")]
    pub turn: PathBuf,
    /// Return each ok call's arguments as a list in declared parameter order.
    #[arg(long)]
    pub positional: bool,
    /// Write each call's log line (stderr) with the arguments forwarded.
    #[arg(long)]
    pub log_arguments: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: TextOrJson,
}

/// Which roster to plan.
#[derive(Debug, Args)]
pub struct Select {
    /// Policy directory.
    #[arg(long, default_value = "policies")]
    pub policies: PathBuf,
    /// Agent (default: the policy's default agent).
    #[arg(long)]
    pub agent: Option<String>,
    /// Agent version (default: the agent's current version).
    #[arg(long, value_name = "N")]
    pub agent_version: Option<u64>,
    /// Flag profile: flags/<PROFILE>.toml.
    #[arg(long = "flags", value_name = "PROFILE")]
    pub profile: Option<String>,
    /// Turn on one more flag (repeatable).
    #[arg(long = "flag", value_name = "NAME")]
    pub flag: Vec<String>,
    /// What-if: a different item cap.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub item_cap: Option<u32>,
    /// What-if: a different token cap.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub token_cap: Option<u32>,
    /// Count every definition afresh; neither read nor write the token-count
    /// cache ($MUSTER_CACHE_DIR, else $XDG_CACHE_HOME/muster, else
    /// ~/.cache/muster).
    #[arg(long)]
    pub no_cache: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TableOrJson {
    Table,
    Json,
}

/// `plan`'s and `session roster`'s formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RosterFormat {
    Table,
    Json,
    /// OpenAI Chat Completions `tools`.
    Openai,
    /// OpenAI Responses API `tools`.
    OpenaiResponses,
    /// Anthropic Messages `tools`.
    Anthropic,
    /// Gemini `generateContent` `tools` (`functionDeclarations`).
    Gemini,
}

impl RosterFormat {
    /// The provider shape, for the provider formats.
    pub fn provider(self) -> Option<muster::provider::shape::Format> {
        use muster::provider::shape::Format;
        match self {
            RosterFormat::Table | RosterFormat::Json => None,
            RosterFormat::Openai => Some(Format::Openai),
            RosterFormat::OpenaiResponses => Some(Format::OpenaiResponses),
            RosterFormat::Anthropic => Some(Format::Anthropic),
            RosterFormat::Gemini => Some(Format::Gemini),
        }
    }
}

/// `validate --accept`'s provider formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AcceptFormat {
    Openai,
    OpenaiResponses,
    Anthropic,
    Gemini,
}

impl From<AcceptFormat> for muster::provider::shape::Format {
    fn from(f: AcceptFormat) -> Self {
        use muster::provider::shape::Format;
        match f {
            AcceptFormat::Openai => Format::Openai,
            AcceptFormat::OpenaiResponses => Format::OpenaiResponses,
            AcceptFormat::Anthropic => Format::Anthropic,
            AcceptFormat::Gemini => Format::Gemini,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ProviderArg {
    Openai,
    Anthropic,
}

impl From<ProviderArg> for muster::contract::Provider {
    fn from(p: ProviderArg) -> Self {
        match p {
            ProviderArg::Openai => Self::Openai,
            ProviderArg::Anthropic => Self::Anthropic,
        }
    }
}

/// `diff`'s formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    Text,
    Json,
    /// A markdown table, for a pull request or `$GITHUB_STEP_SUMMARY`.
    Markdown,
}

/// `gate`'s, `validate`'s and `lock`'s formats: for people, for machines,
/// and for CI systems (docs/ci.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CiFormat {
    Text,
    Json,
    /// GitHub Actions workflow commands (`::error file=…,line=…::`).
    Github,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// JUnit XML, for test dashboards.
    Junit,
    /// A markdown summary, for `$GITHUB_STEP_SUMMARY`.
    Markdown,
}

impl CiFormat {
    /// The plain format, or `None` for a CI one.
    pub fn plain(self) -> Option<TextOrJson> {
        match self {
            CiFormat::Text => Some(TextOrJson::Text),
            CiFormat::Json => Some(TextOrJson::Json),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TextOrJson {
    Text,
    Json,
}

/// `muster cache ...`.
#[derive(Debug, clap::Subcommand)]
pub enum CacheCommand {
    /// How many records each cache table holds, and its bytes.
    Stats {
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: TextOrJson,
    },
    /// Remove the cached token counts and vectors (they are counted and
    /// encoded again when next needed).
    Clear,
}
