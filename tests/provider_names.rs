//! The provider-name rule's properties: every spelling is a name providers
//! accept, the same name always spells the same (pinned here, so a change
//! across runs or machines fails), and after the later of two colliding
//! names is cut, each provider name leads back to exactly one muster name.

use muster::provider::{NamePolicy, collisions, is_valid, spell};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Names like muster's: dotted parts of identifier characters, sometimes
/// long, sometimes holding characters providers refuse.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{1,12}(\\.[a-z0-9_-]{1,12}){0,3}",
        "[a-zA-Z0-9_.-]{1,120}",
        "\\PC{1,40}",
        "mcp\\.[a-z]{1,8}\\.[a-z_]{60,90}",
    ]
}

fn separator() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_-]{1,8}"
}

proptest! {
    #[test]
    fn every_spelling_is_valid_and_the_same_each_time(name in name(), sep in separator()) {
        let policy = NamePolicy { separator: sep };
        let once = spell(&name, &policy);
        prop_assert!(is_valid(&once.name), "{:?} -> {:?}", name, once.name);
        prop_assert_eq!(&once, &spell(&name, &policy));
        // A name providers already accept, without dots, is sent as written.
        if is_valid(&name) && !name.contains('.') {
            prop_assert_eq!(&once.name, &name);
            prop_assert!(once.rewritten.is_none());
        }
        // A rewritten name keeps its last part whole, after the hash, when
        // that leaves room for a character of the parts before it.
        if let (Some(_), Some((head, last))) = (&once.rewritten, name.rsplit_once('.')) {
            let sep = &policy.separator;
            if !head.is_empty()
                && last.chars().all(muster::provider::allowed)
                && 1 + 8 + sep.len() + last.len() < 64
            {
                let end = format!("{sep}{last}");
                prop_assert!(once.name.ends_with(&end), "{:?} -> {:?}", name, once.name);
            }
        }
    }

    #[test]
    fn after_collisions_are_cut_each_provider_name_reverses_to_one_tool(
        names in proptest::collection::vec(name(), 1..40),
    ) {
        let policy = NamePolicy::default();
        let spelt: Vec<String> = names.iter().map(|n| spell(n, &policy).name).collect();
        let clash = collisions(spelt.iter().map(String::as_str));
        let mut back: BTreeMap<&str, &str> = BTreeMap::new();
        for (i, earlier) in clash.iter().enumerate() {
            match earlier {
                Some(j) => {
                    prop_assert!(*j < i);
                    prop_assert_eq!(&spelt[*j], &spelt[i]);
                }
                None => {
                    // Kept names are unique...
                    prop_assert!(back.insert(&spelt[i], &names[i]).is_none());
                }
            }
        }
        // ...and each leads back to the muster name it was made from.
        for (i, earlier) in clash.iter().enumerate() {
            if earlier.is_none() {
                prop_assert_eq!(back[spelt[i].as_str()], names[i].as_str());
            }
        }
    }
}

#[test]
fn spellings_are_stable_across_runs_and_machines() {
    let policy = NamePolicy::default();
    let long = format!("mcp.server.{}", "x".repeat(80));
    // The hashes are the first 8 hex digits of SHA-256 over the muster
    // name, as Python's hashlib computes them too.
    for (name, expected) in [
        ("mcp.bland_call.start_call", "mcp__bland_call__start_call"),
        ("tools.load", "tools__load"),
        ("web-search_2", "web-search_2"),
        (
            long.as_str(),
            "mcp__server__xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_26607d0f",
        ),
        ("mcp.kb.suche_é", "mcp__kb_fcea44fd__suche__"),
        (
            "mcp.acme_browser_automation_playwright_extended_edition_server.browser_click",
            "mcp__acme_browser_automation_playwright__9381cf00__browser_click",
        ),
    ] {
        assert_eq!(spell(name, &policy).name, expected, "{name}");
    }
}
