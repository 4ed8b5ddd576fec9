//! The control tool's description as offered: the policy's text, then one
//! line per kind of deferred tool (its MCP server, group or name's first
//! part), so the model knows what it can ask for without being shown the
//! tools themselves.
//!
//! The planner reserves the control tool's base definition plus
//! `deferral.summary_tokens` before placing anything; the summary is then
//! written for what was actually deferred and never costs more than that
//! reservation. Lines go in the rank order of each kind's best deferred
//! tool; those past the budget are counted in a closing line instead.

use crate::catalog::{Catalog, Kind};
use crate::tokens::{Definition, Provider, TokenCache};

/// The control tool as this plan offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlOffer {
    /// Candidate index of the control tool.
    pub index: usize,
    /// Its description: the policy's text and the summary of deferred kinds.
    pub description: String,
    /// Tokens its definition costs with that description.
    pub tokens: u32,
    /// Tokens reserved for it before planning.
    pub reserved: u32,
    /// Hash of its definition as offered.
    pub definition_hash: [u8; 32],
    /// Kinds summarized, in order (indices into [`Catalog::kinds`]).
    pub kinds_listed: Vec<usize>,
    /// Kinds with deferred tools left out of the summary for its budget.
    pub kinds_left_out: u32,
}

/// An offer kept with the deferred tools it was written for, so a caller
/// that plans the same catalog again reuses it instead of counting again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Offered {
    /// Candidate indices deferred, in rank order.
    pub deferred: Vec<usize>,
    /// The offer written for them.
    pub offer: ControlOffer,
}

impl Offered {
    /// Whether [`offer`] would write this offer for these arguments.
    pub fn fits(&self, index: usize, deferred: &[usize], reserved: u32) -> bool {
        self.offer.index == index && self.offer.reserved == reserved && self.deferred == deferred
    }
}

/// Writes the control tool's description for `deferred` (candidate
/// indices in rank order) within `reserved` tokens for the whole
/// definition. Each description tried is counted through `cache`
/// ([`crate::tokens::Encoding::count_definitions`], the rendering
/// [`crate::tokens::Encoding::count_definition`] counts), so a run whose
/// counts are all cached builds no tokenizer.
pub(crate) fn offer(
    catalog: &Catalog,
    index: usize,
    deferred: &[usize],
    reserved: u32,
    cache: &mut TokenCache,
) -> ControlOffer {
    let control = &catalog.candidates[index];
    let mut kinds: Vec<(usize, Vec<usize>)> = Vec::new();
    for &i in deferred {
        let Some(kind) = catalog.candidates[i].kind else {
            continue;
        };
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, members)) => members.push(i),
            None => kinds.push((kind, vec![i])),
        }
    }
    let lines: Vec<String> = kinds
        .iter()
        .map(|(kind, members)| line(catalog, &catalog.kinds[*kind], members))
        .collect();
    let encoding = catalog.encoding;
    let mut count = |description: &str| {
        let definition = Definition {
            name: &control.provider_name,
            description,
            input_schema: &control.input_schema,
        };
        // OpenAI's rendering, as `count_definition` counted it before the
        // counts were cached: the plan is the same with or without a cache.
        encoding.count_definitions_for(Provider::Openai, &[definition], cache)[0]
    };
    // Lines are added while the whole definition stays within the
    // reservation; the reservation bounds how many can be tried.
    let mut try_lines = |n: usize| {
        let description = compose(&control.description, &lines[..n], kinds.len() - n);
        let tokens = count(&description);
        (tokens <= reserved).then_some((description, tokens))
    };
    let mut listed = 0;
    let mut chosen = try_lines(0);
    while listed < lines.len() {
        match try_lines(listed + 1) {
            Some(found) => {
                chosen = Some(found);
                listed += 1;
            }
            None => break,
        }
    }
    let (description, tokens) = chosen.unwrap_or_else(|| {
        // Not even the closing count fits: the policy's text alone, which
        // the reservation always covers.
        let description = control.description.clone();
        let tokens = count(&description);
        (description, tokens)
    });
    let definition_hash = crate::catalog::definition_hash(
        &control.name,
        &control.provider_name,
        &description,
        &control.input_schema,
        &control.call.fixed,
        control.call.only.as_deref(),
        None,
    );
    ControlOffer {
        index,
        description,
        tokens,
        reserved,
        definition_hash,
        kinds_listed: kinds[..listed].iter().map(|(k, _)| *k).collect(),
        kinds_left_out: (kinds.len() - listed) as u32,
    }
}

/// The description with `lines` and a count of the kinds left out.
fn compose(base: &str, lines: &[String], left_out: usize) -> String {
    if lines.is_empty() && left_out == 0 {
        return base.to_string();
    }
    let mut text = String::from(base);
    text.push_str("\n\nAvailable to load:");
    for line in lines {
        text.push_str("\n- ");
        text.push_str(line);
    }
    match left_out {
        0 => {}
        1 => text.push_str("\n- and 1 more kind; describe what you need to find it"),
        n => text.push_str(&format!(
            "\n- and {n} more kinds; describe what you need to find them"
        )),
    }
    text
}

/// One summary line: the kind's name, how many tools, and what they do.
/// Names are spelt as the model is given them (`mcp__fs__read_file`, not
/// `mcp.fs.read_file`), so the summary and the tools use one form; a kind
/// with more tools than a load may add says how many may be loaded at once,
/// so it never offers more than a load can take (issue 31 item 9).
fn line(catalog: &Catalog, kind: &Kind, members: &[usize]) -> String {
    let spelt = |i: usize| catalog.candidates[i].provider_name.as_str();
    if let [only] = members
        && kind.description.is_none()
    {
        let c = &catalog.candidates[*only];
        let what = crate::search::one_line(&c.description);
        return if what.is_empty() {
            spelt(*only).to_string()
        } else {
            format!("{}: {what}", spelt(*only))
        };
    }
    let kind_name = crate::provider::spell(&kind.name, &catalog.names).name;
    let most = catalog.deferral_policy.max_loaded as usize;
    let count = match members.len() {
        1 => "1 tool".to_string(),
        n if n > most && !kind.together => format!("{n} tools, up to {most} loaded at once"),
        n => format!("{n} tools"),
    };
    let what = match &kind.description {
        Some(text) => crate::search::one_line(text),
        None => {
            // Without a description, the tools' own short names say it.
            let prefix = format!("{kind_name}{}", catalog.names.separator);
            let short: Vec<&str> = members
                .iter()
                .map(|&i| spelt(i).strip_prefix(&prefix).unwrap_or(spelt(i)))
                .take(6)
                .collect();
            let more = members.len().saturating_sub(short.len());
            let mut what = short.join(", ");
            if more > 0 {
                what.push_str(&format!(", and {more} more"));
            }
            what
        }
    };
    format!("{kind_name} ({count}): {what}")
}

#[cfg(test)]
mod tests {
    use crate::catalog::{Catalog, Selection};
    use crate::plan::{plan, plan_counted};
    use crate::policy::Inputs;
    use crate::tokens::{TokenCache, tokenizer_asked};

    /// The bundled policies with deferral on, `production` flags.
    fn deferred() -> (Inputs, Selection) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
        let mut inputs = Inputs::load(&root).expect("bundled policies load");
        inputs.policy.deferral.enabled = true;
        let selection = Selection {
            profile: Some("production".into()),
            ..Selection::default()
        };
        (inputs, selection)
    }

    /// Issue 31 item 9: the summary offered "mcp.fs (14 tools)" though a
    /// load takes at most 8, and spelt names `mcp.fs` beside tools called
    /// `mcp__fs__…`.
    #[test]
    fn the_summary_spells_names_as_offered_and_offers_no_more_than_a_load_takes() {
        let (mut inputs, selection) = deferred();
        inputs.policy.deferral.max_loaded = 4;
        let catalog = Catalog::build(&inputs, &selection).unwrap();
        let planned = plan(&catalog, catalog.caps);
        let offer = planned.control.as_ref().expect("deferral is on");
        let summary = offer
            .description
            .split_once("Available to load:")
            .expect("a summary")
            .1;
        assert!(
            summary.contains(
                "\n- mcp__gmail_read (16 tools, up to 4 loaded at once): get_attachment, "
            ),
            "{summary}"
        );
        assert!(!summary.contains("mcp."), "one naming form: {summary}");
        // Within the bound, the count alone.
        inputs.policy.deferral.max_loaded = 16;
        let catalog = Catalog::build(&inputs, &selection).unwrap();
        let planned = plan(&catalog, catalog.caps);
        let description = &planned.control.as_ref().unwrap().description;
        assert!(
            description.contains("\n- mcp__gmail_read (16 tools): "),
            "{description}"
        );
    }

    /// Issue 19 item 7: with deferral on, the control tool's summary was
    /// counted afresh on every plan, so a run whose counts were all cached
    /// still built the tokenizer.
    #[test]
    fn a_warm_plan_counts_the_control_tool_from_the_cache() {
        let (inputs, selection) = deferred();
        let mut cache = TokenCache::in_memory();
        let catalog = Catalog::build_cached(&inputs, &selection, &mut cache).unwrap();
        let cold = plan_counted(&catalog, catalog.caps, &mut cache);
        assert!(cold.control.is_some(), "deferral is on");
        let asked = tokenizer_asked();
        let catalog = Catalog::build_cached(&inputs, &selection, &mut cache).unwrap();
        let warm = plan_counted(&catalog, catalog.caps, &mut cache);
        assert_eq!(
            tokenizer_asked(),
            asked,
            "a warm plan asked for the tokenizer"
        );
        assert_eq!(warm.control, cold.control);
        // The cache changes nothing: the same plan as counted afresh.
        let fresh = plan(&catalog, catalog.caps);
        assert_eq!(warm.to_json_string(), fresh.to_json_string());
    }
}
