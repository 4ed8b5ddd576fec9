//! docs/limits.md states every limit with the constant that keeps it: each
//! public constant's value is the one its row of the table states.

/// `n` as the docs write it: bytes in MiB when a whole number of MiB,
/// else with thousands separators.
fn written(n: u64, bytes: bool) -> String {
    if bytes && n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        return format!("{} MiB", n >> 20);
    }
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn every_limit_in_the_table_is_the_constant_it_names() {
    let docs = include_str!("../docs/limits.md");
    let as_u64 = |n: usize| n as u64;
    let constants: &[(&str, u64, bool)] = &[
        (
            "gateway::rpc::MAX_MESSAGE_BYTES",
            as_u64(muster::gateway::rpc::MAX_MESSAGE_BYTES),
            true,
        ),
        (
            "gateway::stdio::MAX_IN_FLIGHT",
            as_u64(muster::gateway::stdio::MAX_IN_FLIGHT),
            false,
        ),
        (
            "gateway::stdio::MAX_SUBSCRIPTIONS",
            as_u64(muster::gateway::stdio::MAX_SUBSCRIPTIONS),
            false,
        ),
        (
            "gateway::listen::MAX_STREAMS_PER_CHAT",
            as_u64(muster::gateway::listen::MAX_STREAMS_PER_CHAT),
            false,
        ),
        (
            "gateway::listen::MAX_STREAMS",
            as_u64(muster::gateway::listen::MAX_STREAMS),
            false,
        ),
        (
            "gateway::listen::KEEPALIVE",
            muster::gateway::listen::KEEPALIVE.as_secs(),
            false,
        ),
        (
            "gateway::upstream::MAX_IN_FLIGHT",
            as_u64(muster::gateway::upstream::MAX_IN_FLIGHT),
            false,
        ),
        (
            "store::MAX_MEMORY_SESSIONS",
            as_u64(muster::store::MAX_MEMORY_SESSIONS),
            false,
        ),
        (
            "input::MAX_INPUT_BYTES",
            muster::input::MAX_INPUT_BYTES,
            true,
        ),
        (
            "input::MAX_LISTED_PROBLEMS",
            as_u64(muster::input::MAX_LISTED_PROBLEMS),
            false,
        ),
        (
            "names::MAX_NAME_BYTES",
            as_u64(muster::names::MAX_NAME_BYTES),
            false,
        ),
        (
            "provider::MAX_NAME_LEN",
            as_u64(muster::provider::MAX_NAME_LEN),
            false,
        ),
        (
            "provider::MAX_SEPARATOR_LEN",
            as_u64(muster::provider::MAX_SEPARATOR_LEN),
            false,
        ),
        (
            "check::MAX_SCHEMA_EXPANSION",
            muster::check::MAX_SCHEMA_EXPANSION,
            false,
        ),
        (
            "check::MAX_VALUE_STEPS",
            muster::check::MAX_VALUE_STEPS,
            false,
        ),
        (
            "check::MAX_CHECK_STEPS",
            muster::check::MAX_CHECK_STEPS,
            false,
        ),
        (
            "check::MAX_CHECK_BRANCHES",
            muster::check::MAX_CHECK_BRANCHES,
            false,
        ),
        (
            "check::MAX_PROBLEMS",
            as_u64(muster::check::MAX_PROBLEMS),
            false,
        ),
        (
            "tokens::cache::MAX_ENTRIES",
            as_u64(muster::tokens::cache::MAX_ENTRIES),
            false,
        ),
        (
            "search::vectors::MAX_ENTRIES",
            as_u64(muster::search::vectors::MAX_ENTRIES),
            false,
        ),
        (
            "tokens::cache::MAX_JOURNAL",
            as_u64(muster::tokens::cache::MAX_JOURNAL),
            false,
        ),
        (
            "search::vectors::MAX_JOURNAL",
            as_u64(muster::search::vectors::MAX_JOURNAL),
            false,
        ),
        (
            "search::encoder::MAX_TOKENS",
            as_u64(muster::search::encoder::MAX_TOKENS),
            false,
        ),
        (
            "search::encoder::MAX_QUERY_TOKENS",
            as_u64(muster::search::encoder::MAX_QUERY_TOKENS),
            false,
        ),
        (
            "search::MAX_EXPANDED_LETTERS",
            as_u64(muster::search::MAX_EXPANDED_LETTERS),
            false,
        ),
        (
            "search::MAX_QUERY_BYTES",
            as_u64(muster::search::MAX_QUERY_BYTES),
            false,
        ),
        (
            "search::MAX_QUERY_WORDS",
            as_u64(muster::search::MAX_QUERY_WORDS),
            false,
        ),
        (
            "discover::MAX_MESSAGE_BYTES",
            as_u64(muster::discover::MAX_MESSAGE_BYTES),
            true,
        ),
        (
            "discover::MAX_LISTING_BYTES",
            as_u64(muster::discover::MAX_LISTING_BYTES),
            true,
        ),
        (
            "discover::MAX_TOOLS",
            as_u64(muster::discover::MAX_TOOLS),
            false,
        ),
        (
            "discover::MAX_PAGES",
            as_u64(muster::discover::MAX_PAGES),
            false,
        ),
        (
            "trace::MAX_QUEUED",
            as_u64(muster::trace::MAX_QUEUED),
            false,
        ),
        (
            "trace::BATCH_SPANS",
            as_u64(muster::trace::BATCH_SPANS),
            false,
        ),
        (
            "snapshot::MAX_DIFF_CELLS",
            as_u64(muster::snapshot::MAX_DIFF_CELLS),
            false,
        ),
        (
            "contract::MAX_SCHEMA_PATHS",
            as_u64(muster::contract::MAX_SCHEMA_PATHS),
            false,
        ),
        (
            "serve::MAX_QUERIES",
            as_u64(muster::serve::MAX_QUERIES),
            false,
        ),
        (
            "session::MAX_RESULTS",
            as_u64(muster::session::MAX_RESULTS),
            false,
        ),
        (
            "serve::MIN_TOKEN_BYTES",
            as_u64(muster::serve::MIN_TOKEN_BYTES),
            false,
        ),
        (
            "tokens::SCAN_MERGE_MAX",
            as_u64(muster::tokens::SCAN_MERGE_MAX),
            false,
        ),
    ];
    for (name, value, bytes) in constants {
        let row = docs
            .lines()
            .find(|l| l.starts_with('|') && l.contains(&format!("`{name}`")))
            .unwrap_or_else(|| panic!("docs/limits.md has no row naming `{name}`"));
        let text = written(*value, *bytes);
        assert!(
            row.contains(&text),
            "`{name}` is {text}, not what its row says: {row}"
        );
    }
}
