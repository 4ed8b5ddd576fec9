//! Properties of the planner over random catalogs and caps.

use muster::catalog::{Catalog, Selection};
use muster::contract::ResumeStatus;
use muster::contract::Status;
use muster::plan::plan;
use muster::policy::{
    Agent, CallPolicy, Caps, Deferral, Group, Inputs, ListedTool, Listings, LockMode, LockPolicy,
    Origin, Policy, Profile, ServerDef, ToolDef, UnknownArguments,
};
use muster::session;
use muster::tokens::Encoding;
use proptest::prelude::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

fn origin() -> Origin {
    Origin {
        file: PathBuf::from("generated.toml"),
        line: Some(1),
    }
}

#[derive(Debug, Clone)]
struct GenTool {
    words: usize,
    args: usize,
    flag: Option<u8>,
    default_roster: bool,
    priority: i64,
    deferrable: bool,
}

fn gen_tool() -> impl Strategy<Value = GenTool> {
    (
        0usize..120,
        0usize..5,
        prop::option::weighted(0.2, 0u8..3),
        prop::bool::weighted(0.9),
        prop_oneof![4 => -1i64..=1, 1 => Just(i64::MIN), 1 => Just(i64::MAX)],
        prop::bool::weighted(0.8),
    )
        .prop_map(
            |(words, args, flag, default_roster, priority, deferrable)| GenTool {
                words,
                args,
                flag,
                default_roster,
                priority,
                deferrable,
            },
        )
}

fn schema(args: usize) -> serde_json::Value {
    let props: serde_json::Map<String, serde_json::Value> = (0..args)
        .map(|i| {
            (
                format!("arg{i}"),
                json!({"type": "string", "description": format!("argument {i}")}),
            )
        })
        .collect();
    json!({"type": "object", "properties": props})
}

fn description(words: usize) -> String {
    ["alpha", "beta", "gamma", "delta"]
        .iter()
        .cycle()
        .take(words)
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Debug, Clone)]
struct World {
    tools: Vec<GenTool>,
    servers: Vec<Vec<(u8, GenTool, bool)>>,
    required: Vec<usize>,
    deferral: bool,
    flags: Vec<u8>,
    caps: (u32, u32),
}

fn world() -> impl Strategy<Value = World> {
    (
        prop::collection::vec(gen_tool(), 0..25),
        prop::collection::vec(
            prop::collection::vec((0u8..30, gen_tool(), prop::bool::weighted(0.9)), 0..15),
            0..3,
        ),
        prop::collection::vec(0usize..60, 0..5),
        any::<bool>(),
        prop::collection::vec(0u8..3, 0..3),
        (0u32..35, 0u32..6000),
    )
        .prop_map(|(tools, servers, required, deferral, flags, caps)| World {
            tools,
            servers,
            required,
            deferral,
            flags,
            caps,
        })
}

fn inputs(w: &World) -> Inputs {
    let tools: Vec<ToolDef> = w
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| ToolDef {
            name: format!("tool.n{i}"),
            description: description(t.words),
            input_schema: schema(t.args).into(),
            when: t.flag.map(|f| format!("FLAG_{f}")),
            default_roster: t.default_roster,
            priority: t.priority,
            deferrable: t.deferrable,
            parameters: None,
            variadic: false,
            unknown_arguments: None,
            coerce: None,
            check: None,
            origin: origin(),
        })
        .collect();
    let mut listings = Listings::default();
    let servers: Vec<ServerDef> = (0..w.servers.len())
        .map(|s| ServerDef {
            name: format!("srv{s}"),
            description: None,
            // Every other server's deferred tools load together.
            defer_together: s % 2 == 1,
            command: None,
            url: None,
            headers: BTreeMap::new(),
            oauth: None,
            relay: Vec::new(),
            cwd: None,
            env: BTreeMap::new(),
            snapshot: None,
            timeout: Duration::from_secs(1),
            when: None,
            priority: 0,
            tool_priority: BTreeMap::new(),
            deferrable: true,
            allow: None,
            deny: Vec::new(),
            narrowing: Default::default(),
            only_origins: BTreeMap::new(),
            unknown_arguments: None,
            coerce: None,
            check: None,
            tool_check: BTreeMap::new(),
            hints: Default::default(),
            max_result_tokens: None,
            resources: true,
            prompts: true,
            origin: origin(),
        })
        .collect();
    for (server, listed) in servers.iter().zip(&w.servers) {
        listings.set(
            server.name.clone(),
            listed
                .iter()
                .map(|(name, t, valid)| ListedTool {
                    // Names repeat on purpose: 0..30 over up to 15 tools.
                    name: format!("t{name}"),
                    description: Some(description(t.words)),
                    input_schema: muster::schema::Schema::new(&if *valid {
                        schema(t.args)
                    } else {
                        json!("broken")
                    }),
                    raw: serde_json::Value::Null,
                })
                .collect(),
        );
    }
    let mut all_names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
    for s in &servers {
        all_names.extend(
            listings
                .of(&s.name)
                .iter()
                .map(|t| format!("mcp.{}.{}", s.name, t.name)),
        );
    }
    let members = w
        .required
        .iter()
        .filter_map(|&i| all_names.get(i).cloned())
        .map(|n| (n, origin()))
        .collect::<Vec<_>>();
    let mut profiles = BTreeMap::new();
    profiles.insert(
        "gen".to_string(),
        Profile {
            flags: w.flags.iter().map(|f| format!("FLAG_{f}")).collect(),
            origin: origin(),
        },
    );
    let policy = Policy {
        root: PathBuf::from("generated"),
        caps: Caps {
            items: 30,
            tokens: 9000,
        },
        encoding: Encoding::O200kBase,
        provider: muster::tokens::Provider::Openai,
        deferral: Deferral {
            enabled: w.deferral,
            control_tool: "tools.load".into(),
            description: "Load a deferred tool by name.".into(),
            // Small bounds, so loads meet them.
            max_loaded: 1 + w.caps.0 % 6,
            max_loaded_tokens: 100 + w.caps.1 % 900,
            ..Deferral::default()
        },
        calls: CallPolicy {
            configured_unknown: UnknownArguments::Refuse,
            mcp_unknown: UnknownArguments::Refuse,
            coerce_configured: false,
            coerce_mcp: true,
            configured_check: muster::contract::CheckMode::Lenient,
            mcp_check: muster::contract::CheckMode::Strict,
        },
        lock: LockPolicy {
            chats: muster::policy::ChatsMode::Follow,
            file: PathBuf::from("generated/mcp.lock"),
            on_mismatch: LockMode::Cut,
        },
        results: Default::default(),
        names: muster::provider::NamePolicy::default(),
        groups: if members.is_empty() {
            Vec::new()
        } else {
            vec![Group {
                name: "req".into(),
                required: true,
                members,
                description: None,
                defer_together: false,
                origin: origin(),
            }]
        },
        agents: vec![Agent {
            name: "gen".into(),
            version: 1,
            enabled_tools: None,
            servers: None,
            provider: None,
            hints: Default::default(),
            max_result_tokens: None,
            origin: origin(),
        }],
        default_agent: 0,
        current_versions: BTreeMap::from([("gen".to_string(), 0)]),
        tools,
        servers,
        profiles,
        auth: None,
    };
    Inputs {
        policy,
        listings,
        lock: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn plans_respect_caps_and_place_every_candidate_once(w in world()) {
        let inputs = inputs(&w);
        let selection = Selection { agent: None, profile: Some("gen".into()), flags: Vec::new(), version: None, provider: None, mcp_only: false };
        let catalog = Catalog::build(&inputs, &selection).unwrap();
        let caps = Caps { items: w.caps.0, tokens: w.caps.1 };
        let p = plan(&catalog, caps);

        prop_assert!(p.totals.items <= caps.items);
        prop_assert!(p.totals.tokens <= caps.tokens);
        prop_assert_eq!(p.totals.items as usize, p.roster.len());

        let mut seen = vec![0u8; catalog.candidates.len()];
        for &i in p.roster.iter().chain(&p.deferred).chain(&p.cut) {
            seen[i] += 1;
        }
        prop_assert!(seen.iter().all(|&n| n == 1), "every candidate exactly once: {:?}", seen);
        for &i in &p.roster {
            prop_assert_eq!(p.decisions[i].status, Status::Offered);
        }
        for &i in &p.deferred {
            prop_assert!(catalog.deferral && catalog.candidates[i].deferrable);
        }

        // Required tools come first (after the control tool) ...
        let offered: Vec<_> = p.roster.iter().map(|&i| &catalog.candidates[i])
            .filter(|c| c.name != "tools.load").collect();
        let first_optional = offered.iter().position(|c| !c.required).unwrap_or(offered.len());
        prop_assert!(offered[first_optional..].iter().all(|c| !c.required));
        // ... and, when they all fit, are all offered.
        let required: Vec<_> = catalog.ranked.iter().map(|&i| &catalog.candidates[i])
            .filter(|c| c.required).collect();
        let control = catalog.ranked.first().map(|&i| &catalog.candidates[i])
            .filter(|c| c.name == "tools.load");
        let need_items = required.len() as u32 + u32::from(control.is_some());
        let need_tokens: u32 = required.iter().map(|c| c.tokens).sum::<u32>()
            + control.map_or(0, |c| c.tokens + catalog.deferral_policy.summary_tokens)
            + catalog.wrapper_tokens;
        if need_items <= caps.items && need_tokens <= caps.tokens {
            prop_assert!(required.iter().all(|c| offered.iter().any(|o| o.name == c.name)));
        }
    }

    #[test]
    fn the_same_input_gives_byte_identical_json(w in world()) {
        let inputs = inputs(&w);
        let selection = Selection { agent: None, profile: Some("gen".into()), flags: Vec::new(), version: None, provider: None, mcp_only: false };
        let caps = Caps { items: w.caps.0, tokens: w.caps.1 };
        let a = Catalog::build(&inputs, &selection).unwrap();
        let b = Catalog::build(&inputs.clone(), &selection).unwrap();
        prop_assert_eq!(plan(&a, caps).to_json_string(), plan(&b, caps).to_json_string());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// Loads in any order keep every earlier roster entry byte for byte,
    /// stay within the policy's bounds, leave a document that reads back to
    /// the same bytes, and resume against the unchanged policy.
    #[test]
    fn session_loads_append_within_bounds_and_resume(w in world(), picks in prop::collection::vec((0usize..64, 1usize..3), 0..8)) {
        let inputs = inputs(&w);
        let selection = Selection { agent: None, profile: Some("gen".into()), flags: Vec::new(), version: None, provider: None, mcp_only: false };
        let mut cache = muster::tokens::TokenCache::in_memory();
        let keys = session::SessionKeys::parse("k1:0123456789abcdef0123456789abcdef", "keys".as_ref()).unwrap();
        let options = session::NewSession { caps: (Some(w.caps.0.max(1)), Some(w.caps.1.max(1))), ..Default::default() };
        let doc = session::new(&inputs, &selection, &options, &keys, &mut cache).unwrap();
        let text = session::to_json_string(&doc);
        prop_assert_eq!(session::to_json_string(&session::read(&text, "s.json".as_ref()).unwrap()), text);
        let mut live = match session::open(&inputs, doc, &keys, "s.json".as_ref(), &mut cache).unwrap() {
            session::Opened::Live(live) => *live,
            session::Opened::Mismatch(report) => panic!("a new session must resume: {report:?}"),
        };
        let bounds = inputs.policy.deferral.clone();
        let roster: serde_json::Value = serde_json::from_str(&live.roster_json()).unwrap();
        let deferred: Vec<String> = roster["deferred"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
        for (pick, many) in picks {
            let before: serde_json::Value = serde_json::from_str(&live.roster_json()).unwrap();
            let names: Vec<String> = (0..many)
                .filter_map(|k| deferred.get((pick + k) % deferred.len().max(1)).cloned())
                .collect();
            let revision = live.document().revision;
            let answer = live.load(&session::LoadRequest::Names(names));
            let after: serde_json::Value = serde_json::from_str(&live.roster_json()).unwrap();
            let (b, a) = (before["roster"].as_array().unwrap(), after["roster"].as_array().unwrap());
            // A load appends, unless it had to replace earlier loads to fit
            // (issue 22: no tool the policy offers is ever locked out); then
            // the pinned roster still never changes, the loads it kept keep
            // their order, and the new ones follow.
            let unloaded: Vec<String> = answer.notes.iter().flat_map(|n| match n {
                muster::contract::LoadNote::Unloaded { tools } => tools.clone(),
                _ => Vec::new(),
            }).collect();
            let provider = |e: &serde_json::Value| e["provider_name"].as_str().unwrap().to_string();
            let name = |e: &serde_json::Value| e["name"].as_str().unwrap().to_string();
            let pinned = |r: &[serde_json::Value]| r.iter().filter(|e| e["code"] != "loaded").cloned().collect::<Vec<_>>();
            prop_assert_eq!(pinned(a), pinned(b), "the pinned roster never changes");
            let kept: Vec<&serde_json::Value> = b.iter().filter(|e| e["code"] == "loaded" && !unloaded.contains(&provider(e)) && !unloaded.contains(&name(e))).collect();
            let now: Vec<&serde_json::Value> = a.iter().filter(|e| e["code"] == "loaded").collect();
            prop_assert_eq!(&now[..kept.len()], &kept[..], "kept loads keep their place and bytes");
            prop_assert_eq!(now.len() - kept.len(), answer.loaded.len());
            if unloaded.is_empty() {
                prop_assert_eq!(&a[..b.len()], &b[..], "without a replacement, earlier roster entries never change");
            }
            let now_revision = live.document().revision;
            if answer.loaded.is_empty() {
                prop_assert_eq!(now_revision, revision, "nothing loaded, nothing changed");
            } else {
                prop_assert!(now_revision > revision, "a load moves the revision on");
            }
            let doc = live.document();
            prop_assert!(doc.loaded.len() as u32 <= bounds.max_loaded);
            prop_assert!(after["totals"]["loaded_tokens"].as_u64().unwrap() <= u64::from(bounds.max_loaded_tokens));
            let text = session::to_json_string(doc);
            let back = session::read(&text, "s.json".as_ref()).unwrap();
            prop_assert_eq!(&session::to_json_string(&back), &text);
            prop_assert_eq!(session::resume(&inputs, &back, &keys, "s.json".as_ref(), &mut cache).unwrap().status, ResumeStatus::Ok);
        }
    }

    /// Any one edit of a signed document (a digit of any digest, a name, a
    /// number) is refused: as tampered, as unreadable, or as a pin that no
    /// longer holds; never served as if muster had written it.
    #[test]
    fn an_edited_signed_document_is_never_served(w in world(), at in any::<prop::sample::Index>(), with in 0u8..10) {
        let inputs = inputs(&w);
        let selection = Selection { agent: None, profile: Some("gen".into()), flags: Vec::new(), version: None, provider: None, mcp_only: false };
        let mut cache = muster::tokens::TokenCache::in_memory();
        let keys = session::SessionKeys::parse("k1:0123456789abcdef0123456789abcdef", "keys".as_ref()).unwrap();
        let doc = session::new(&inputs, &selection, &Default::default(), &keys, &mut cache).unwrap();
        let text = session::to_json_string(&doc);
        // Change one ASCII digit (every digest, revision, version and cap
        // is made of them), outside the signature itself.
        let signed_from = text.find("\"signature\"").unwrap();
        let digits: Vec<usize> = text[..signed_from].bytes().enumerate().filter(|(_, b)| b.is_ascii_digit()).map(|(i, _)| i).collect();
        let i = digits[at.index(digits.len())];
        let mut bytes = text.clone().into_bytes();
        let new = b'0' + with;
        prop_assume!(bytes[i] != new);
        bytes[i] = new;
        let edited = String::from_utf8(bytes).unwrap();
        let served = session::read(&edited, "s.json".as_ref()).ok().and_then(|doc| {
            match session::open(&inputs, doc, &keys, "s.json".as_ref(), &mut cache) {
                Ok(session::Opened::Live(_)) => Some(()),
                _ => None,
            }
        });
        prop_assert!(served.is_none(), "an edited document was served: {}", edited);
    }
}
