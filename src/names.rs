//! Names close to a misspelt one, for "did you mean" answers. One rule for
//! every command, so `why`, a gate and a refused call suggest alike.

/// Up to `n` of `candidates` most like `name` (Jaro-Winkler similarity above
/// 0.6), most alike first, ties by name.
pub fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    n: usize,
) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score > 0.6)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(n).map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_names_come_first_and_strangers_not_at_all() {
        let names = [
            "mcp.bland_read.list_calls",
            "mcp.bland_read.get_call",
            "math.calculate",
        ];
        assert_eq!(
            closest("mcp.bland_read.list_call", names, 2),
            ["mcp.bland_read.list_calls", "mcp.bland_read.get_call"]
        );
        assert!(closest("zzzz", names, 3).is_empty());
    }
}
