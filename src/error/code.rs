//! Every problem code: the stable kebab-case names a [`Problem`](super::Problem)
//! carries in its `code`, each with what it means. `docs/problems.md` lists
//! the same table; a test holds the two together.

macro_rules! codes {
    ($($(#[$doc:meta])* $name:ident = $code:literal, $meaning:literal;)*) => {
        $(
            #[doc = concat!("`", $code, "`: ", $meaning)]
            pub const $name: &str = $code;
        )*
        /// Every code and what it means, in the order `docs/problems.md`
        /// lists them.
        pub const ALL: &[(&str, &str)] = &[$(($code, $meaning)),*];
    };
}

codes! {
    // The codes of the error kinds: a problem made without a code of its own takes its
    // error's (see `ErrorKind::code`).
    POLICY = "policy", "the policies are invalid (no finer code given)";
    IO = "io", "a file could not be read or written (no finer code given)";
    INPUT = "input", "the input cannot be read (no finer code given)";
    MCP = "mcp", "an MCP server failed (no finer code given)";
    USAGE = "usage", "the command line or request asks for something muster cannot do (no finer code given)";
    SESSION_TAMPERED = "session-tampered", "a session document is not one muster wrote as it stands";
    STORE = "store", "the session store cannot be reached or refused a write";

    // Files.
    FILE_MISSING = "file-missing", "a file muster must read does not exist";
    NOT_A_FILE = "not-a-file", "a path names a directory, a device or a pipe, not a regular file";
    FILE_TOO_LARGE = "file-too-large", "a file is larger than muster reads";
    NOT_UTF8 = "not-utf8", "a file or body is not UTF-8 text";
    FILE_UNREADABLE = "file-unreadable", "the operating system refused to read a file or directory";
    WRITE_FAILED = "write-failed", "a file, its directory lock or standard output could not be written";
    INVALID_JSON = "invalid-json", "JSON text cannot be read: its syntax, or a shape other than the one expected";
    INVALID_TOML = "invalid-toml", "a policy file is not TOML, or a value has the wrong type";
    UNKNOWN_KEY = "unknown-key", "a policy table holds a key it does not accept";
    OUTSIDE_POLICY_DIRECTORY = "outside-policy-directory", "a path, or the real path a link leads to, is outside the policy directory";

    // Policies.
    POLICY_DIRECTORY_MISSING = "policy-directory-missing", "the policy directory does not exist";
    NO_TOOLS = "no-tools", "the policy defines no tool and no MCP server";
    NAME_TOO_LONG = "name-too-long", "a name is longer than 1,024 bytes";
    NAME_INVALID = "name-invalid", "a name is empty, has spaces, control, bidi or invisible characters, or cannot be used in tool names";
    RESERVED_NAME = "reserved-name", "a configured name uses the reserved `mcp.` prefix";
    DUPLICATE = "duplicate", "something is declared, listed or marked twice where once is allowed";
    CONFLICT = "conflict", "two settings that exclude each other are both given";
    MISSING_VALUE = "missing-value", "a required value is absent or empty";
    OUT_OF_RANGE = "out-of-range", "a number is outside the range allowed";
    NOT_A_CHOICE = "not-a-choice", "a value is not one of the choices allowed";
    INVALID_VALUE = "invalid-value", "a value is not written as its key requires (a URL, a header name, a `${VAR}` reference)";
    ENV_VAR_UNSET = "env-var-unset", "a `${VAR}` in an MCP server's `env` or `headers` names a variable muster's environment does not set";
    OWN_VARIABLE = "own-variable", "a `${VAR}` in an MCP server's `env` or `headers` names one of muster's own variables (`MUSTER_*`), whose value would be sent to the server";
    INSECURE_URL = "insecure-url", "an MCP server's `url` is plain `http://` to a host that is not this machine";
    UNKNOWN_NAME = "unknown-name", "a name (agent, version, flag profile, server, gate, tool, model) that nothing declares";
    INVALID_SCHEMA = "invalid-schema", "an input schema is not an object schema muster can use";
    NON_FINITE_NUMBER = "non-finite-number", "a schema written in TOML holds `nan` or `inf`, which JSON cannot hold";
    PARAMETER_MISMATCH = "parameter-mismatch", "positional parameters do not match the input schema, repeat, or are in an order a call cannot carry";
    UNSUPPORTED_VERSION = "unsupported-version", "a file's format version is not one this muster reads";
    INVALID_LOCK = "invalid-lock", "a lock entry is not `sha256:` and 64 hex digits";
    INVALID_SNAPSHOT = "invalid-snapshot", "a snapshot is not a `tools/list` result muster reads";
    INVALID_FINGERPRINT = "invalid-fingerprint", "a fingerprint is not `sha256:` and 64 lowercase hex digits";
    MORE_PROBLEMS = "more-problems", "more problems were found in one input than are listed; the last problem counts the rest";
    INVALID_ARGUMENTS = "invalid-arguments", "command-line arguments that cannot go together or are malformed";

    // Requests to count.
    INVALID_REQUEST = "invalid-request", "a provider request to count lacks a member or has one of the wrong shape";

    // Sessions.
    SESSION_KEY = "session-key", "session keys are missing or not written as ID:SECRET";

    // The service.
    BODY_TOO_LARGE = "body-too-large", "a request body is larger than --body-limit";
    BODY_TIMEOUT = "body-timeout", "a request body did not arrive whole within the request timeout";
    INVALID_BODY = "invalid-body", "a request body cannot be read as the route's JSON";
    TIMEOUT = "timeout", "the answer was not ready within the request timeout";
    STOPPED = "stopped", "the work stopped because its request was answered or dropped";
    NOT_FOUND = "not-found", "no route has this path";
    METHOD_NOT_ALLOWED = "method-not-allowed", "the route does not take this method";
    OVERLOADED = "overloaded", "the service is at its limit of requests in flight";
    UNAUTHORIZED = "unauthorized", "the admin token is missing or wrong";
    ADMIN_DISABLED = "admin-disabled", "the service listens beyond loopback without an admin token, so it takes no admin request";
    ADMIN_TOKEN = "admin-token", "the admin token given at start is too short, too long or not visible ASCII";
    INVALID_SESSION_ID = "invalid-session-id", "a session id is not one muster makes";
    SESSION_NOT_FOUND = "session-not-found", "no session is kept under this id";
    TOOL_PIN_MISMATCH = "tool-pin-mismatch", "a session's pinned tools are not what the policy gives now";
    PLAN_CHANGED = "plan-changed", "the plan a fingerprint names is not the one the policy makes now";
    PLAN_NOT_FROM_POLICY = "plan-not-from-policy", "a plan sent to run a turn differs from the plan the policy makes for its selection: it was edited";
    STALE_REVISION = "stale-revision", "the session changed since it was read";
    ORIGIN_REFUSED = "origin-refused", "a browser page on another site (an `Origin` that is not loopback) called the service";
    HOST_REFUSED = "host-refused", "a service bound to loopback got a request sent to a name that is not loopback or not its port (DNS rebinding)";
    UNSUPPORTED_MEDIA_TYPE = "unsupported-media-type", "a request body is not sent as `application/json`";
    TOKEN_MISSING = "token-missing", "`[auth]` is set and the request carries no `Authorization: Bearer` token or API key";
    TOKEN_INVALID = "token-invalid", "a bearer token is not one muster accepts: malformed, expired, not yet valid, for another audience or issuer, signed with a key or algorithm the issuer's keys do not allow; an API key (`mst_…`) no `[[auth.key]]` holds; a JWT when `[auth]` names no issuer";
    INSUFFICIENT_SCOPE = "insufficient-scope", "a valid token matches no `[[auth.grant]]`, or asks for an agent its grants do not open";
    RATE_LIMITED = "rate-limited", "a caller made more calls per minute than `[auth.limits]` allows";
    JWKS_UNAVAILABLE = "jwks-unavailable", "the issuer's keys (`auth.jwks`) cannot be read or fetched, or are not a JSON Web Key Set";
    INTERNAL = "internal", "a bug in muster: report the input that caused it";
}
