//! The index's ranking rules, each with the query that shows it.

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn entries(schema: &Schema) -> Vec<Entry<'_>> {
    vec![
        Entry {
            name: "mcp.gmail_read.search_threads",
            description: "Search the mailbox and return matching threads.",
            input_schema: Some(schema),
        },
        Entry {
            name: "mcp.gmail_read.get_thread",
            description: "Get a whole conversation.",
            input_schema: None,
        },
        Entry {
            name: "mcp.gmail_read.list_labels",
            description: "List all labels in the mailbox.",
            input_schema: None,
        },
        Entry {
            name: "mcp.filesystem.list_directory",
            description: "Get a detailed listing of all files and directories.",
            input_schema: None,
        },
        Entry {
            name: "mcp.filesystem.read_text_file",
            description: "Read the complete contents of a file as text.",
            input_schema: None,
        },
        Entry {
            name: "mcp.bland_read.listCalls",
            description: "List calls placed from the account, newest first.",
            input_schema: None,
        },
        Entry {
            name: "mcp.bland_call.start_call",
            description: "Place an outbound phone call.",
            input_schema: None,
        },
        Entry {
            name: "mcp.gmail_read",
            description: "Read-only Gmail: threads, messages, labels.",
            input_schema: None,
        },
    ]
}

fn schema() -> Schema {
    Schema::new(&json!({"type": "object", "properties": {
        "query": {"type": "string", "description": "Gmail search syntax, e.g. from:alice"},
        "page": {"type": "object", "properties": {"cursor": {"type": "string", "description": "opaque continuation token"}}}
    }}))
}

fn top(index: &Index, query: &str) -> Option<String> {
    index
        .search(query, 5)
        .first()
        .map(|h| index.names[h.entry].clone())
}

#[test]
fn an_exact_name_comes_first_with_a_full_score() {
    let schema = schema();
    let index = Index::build(entries(&schema));
    for query in ["mcp.gmail_read.get_thread", " mcp.gmail_read.get_thread "] {
        let hits = index.search(query, 3);
        assert_eq!(
            hits[0],
            Hit {
                entry: 1,
                score: 1.0,
                lexical: 1.0,
                cosine: None,
            }
        );
        assert!(hits[1..].iter().all(|h| h.score < 1.0 && h.entry != 1));
    }
    assert_eq!(index.exact("mcp.gmail_read"), Some(7));
    assert_eq!(index.exact("get_thread"), None);
}

#[test]
fn empty_and_stop_word_queries_find_nothing() {
    let schema = schema();
    let index = Index::build(entries(&schema));
    for query in ["", "   ", "what is the", "?!", "a"] {
        assert_eq!(index.search(query, 5), [], "{query:?}");
    }
    assert_eq!(index.search("threads", 0), []);
}

#[test]
fn names_are_split_stemmed_and_weighed_above_descriptions() {
    let schema = schema();
    let index = Index::build(entries(&schema));
    assert_eq!(
        top(&index, "list calls").as_deref(),
        Some("mcp.bland_read.listCalls")
    );
    assert_eq!(
        top(&index, "listing directories").as_deref(),
        Some("mcp.filesystem.list_directory")
    );
    assert_eq!(
        top(&index, "labels").as_deref(),
        Some("mcp.gmail_read.list_labels")
    );
    // The group entry says "threads" only in its description; the word
    // as written ("thread") beats its stem's other forms ("threads").
    let hits: Vec<usize> = index.search("thread", 5).iter().map(|h| h.entry).collect();
    assert_eq!(hits[..3], [1, 0, 7]);
    let hits: Vec<usize> = index.search("threads", 5).iter().map(|h| h.entry).collect();
    assert_eq!(hits[..3], [0, 1, 7]);
}

#[test]
fn typos_synonyms_and_compounds_still_match() {
    let schema = schema();
    let index = Index::build(entries(&schema));
    assert_eq!(
        top(&index, "serch thraeds").as_deref(),
        Some("mcp.gmail_read.search_threads")
    );
    assert_eq!(
        top(&index, "show folder").as_deref(),
        Some("mcp.filesystem.list_directory")
    );
    assert_eq!(
        top(&index, "listcalls").as_deref(),
        Some("mcp.bland_read.listCalls")
    );
    // A typo counts less than the word itself.
    let exact = index.search("labels", 1)[0].score;
    let typo = index.search("lables", 1)[0].score;
    assert!(typo < exact, "{typo} < {exact}");
}

#[test]
fn a_word_of_common_vocabulary_finds_the_tool_named_by_its_synonym() {
    let tools = [
        ("mcp.math.sum", "Add a list of numbers together."),
        ("mcp.math.mean", "The average of a list of numbers."),
        (
            "mcp.units.transform_units",
            "Change a value from one unit to another.",
        ),
        ("mcp.units.list_units", "The units known."),
    ]
    .map(|(n, d)| (n.to_owned(), d.to_owned()));
    let index = among_others(tools);
    assert_eq!(
        top(&index, "the total of these numbers").as_deref(),
        Some("mcp.math.sum")
    );
    assert_eq!(
        top(&index, "convert a value to other units").as_deref(),
        Some("mcp.units.transform_units")
    );
}

#[test]
fn parameters_are_indexed_one_level_deep() {
    let schema = schema();
    let index = Index::build(entries(&schema));
    assert_eq!(
        top(&index, "continuation cursor").as_deref(),
        Some("mcp.gmail_read.search_threads")
    );
}

/// Issue 30: a query's words are read up to [`MAX_QUERY_WORDS`] (stop
/// words not counted); the rest cost nothing and match nothing.
#[test]
fn a_query_is_read_up_to_its_word_limit() {
    let schema = schema();
    let index = Index::build(entries(&schema));
    let letter = |n: usize| char::from(b'a' + (n % 26) as u8);
    let words: Vec<String> = (0..MAX_QUERY_WORDS * 3)
        .map(|i| format!("zq{}{}", letter(i / 26), letter(i)))
        .collect();
    let query = format!("the {}", words.join(" of "));
    // Words with one stem merge, so a few fewer terms than words.
    let read = index.query_terms(&query).len();
    assert!(
        (MAX_QUERY_WORDS - 4..=MAX_QUERY_WORDS).contains(&read),
        "{read}"
    );
    assert_eq!(index.query_terms("the labels of the thread").len(), 2);
}

/// A query is read up to its first [`MAX_QUERY_BYTES`] bytes: what
/// follows changes nothing and costs nothing (the search fuzz target found
/// a 30 KB query of many lines that took 35 s).
#[test]
fn a_query_is_read_up_to_its_byte_limit() {
    let schema = schema();
    let index = Index::build(entries(&schema));
    let read = format!("show me the thread {}", "\n".repeat(MAX_QUERY_BYTES));
    let longer = format!("{read}list all labels. {}", "x\n".repeat(10_000));
    assert_eq!(super::bound::readable(&longer), &read[..MAX_QUERY_BYTES]);
    assert_eq!(index.search(&longer, 5), index.search(&read, 5));
}

#[test]
fn one_line_takes_the_first_sentence_and_cuts_at_a_word() {
    assert_eq!(
        one_line("Echoes back the input string"),
        "Echoes back the input string"
    );
    assert_eq!(
        one_line("  Get a file, e.g. a log. Then more.\nSecond line."),
        "Get a file, e.g. a log."
    );
    assert_eq!(
        one_line("Version 1.2 is out. Really."),
        "Version 1.2 is out."
    );
    let long = "word ".repeat(40);
    let line = one_line(&long);
    assert!(
        line.chars().count() <= 121 && line.ends_with("word…"),
        "{line}"
    );
    assert_eq!(one_line(""), "");
}

fn arbitrary_entries() -> impl Strategy<Value = Vec<(String, String)>> {
    let word = prop::sample::select(vec![
        "get", "list", "email", "emails", "thread", "file", "files", "read", "write", "call",
        "calls", "label", "delete", "search", "graph", "node", "the", "of",
    ]);
    let name =
        prop::collection::vec(word.clone(), 1..4).prop_map(|w| format!("mcp.s.{}", w.join("_")));
    let description = prop::collection::vec(word, 0..12).prop_map(|w| w.join(" "));
    prop::collection::vec((name, description), 0..30)
}

proptest! {
    #[test]
    fn search_is_deterministic_sorted_and_bounded(
        tools in arbitrary_entries(),
        query in "[a-z ]{0,30}",
        limit in 0usize..12,
    ) {
        let build = || Index::build(tools.iter().map(|(n, d)| Entry { name: n, description: d, input_schema: None }));
        let (a, b) = (build(), build());
        let hits = a.search(&query, limit);
        prop_assert_eq!(&hits, &b.search(&query, limit));
        prop_assert!(hits.len() <= limit);
        for pair in hits.windows(2) {
            let key = |h: &Hit| (std::cmp::Reverse((h.score * 10_000.0) as i64), &a.names[h.entry], h.entry);
            prop_assert!(key(&pair[0]) < key(&pair[1]));
        }
        for hit in &hits {
            prop_assert!((0.0..=1.0).contains(&hit.score));
            prop_assert_eq!(hit.score, (hit.score * 10_000.0).round() / 10_000.0);
        }
    }
}

#[test]
fn each_need_of_a_request_gets_its_tools_near_the_top() {
    // Six QR tools, a video converter and 40 others, so the QR words are
    // rare enough to tell tools apart.
    let qr = "Generate a QR code image for a link or a text.";
    let tools = (0..6)
        .map(|i| (format!("mcp.qr{i}.generate_qr_code"), qr.to_owned()))
        .chain([(
            "mcp.media.convert_video".to_owned(),
            "Convert a video file to another format.".to_owned(),
        )]);
    let index = among_others(tools);
    let query = "Generate a QR code image for my shop's link, a QR code for my menu too. \
                 Then convert my video to mp4.";
    let found: Vec<&str> = index
        .search(query, 5)
        .iter()
        .map(|h| index.names[h.entry].as_str())
        .collect();
    assert!(found.contains(&"mcp.media.convert_video"), "{found:?}");
    // Ranked as one need, the QR tools fill the top 5.
    let one = Knobs {
        needs: 1,
        ..Knobs::SHIPPED
    };
    let found = index.search_with(query, 5, &one, &mut mix::encode);
    assert!(
        found
            .iter()
            .all(|h| index.names[h.entry] != "mcp.media.convert_video")
    );
}

/// An index of `tools` (name, description) and 40 [`other_tool`]s, so a
/// word only a few of `tools` have is rare.
fn among_others(tools: impl IntoIterator<Item = (String, String)>) -> Index {
    let all: Vec<(String, String)> = tools.into_iter().chain((0..40).map(other_tool)).collect();
    Index::build(all.iter().map(|(name, description)| Entry {
        name,
        description,
        input_schema: None,
    }))
}

/// A tool of its own topic (`topic{i}`), whose description also provides
/// a solution, as many do.
fn other_tool(i: usize) -> (String, String) {
    let word: String = format!("{i:03}")
        .bytes()
        .map(|d| char::from(b'k' + d - b'0'))
        .collect();
    (
        format!("mcp.other{i}.handle_{word}"),
        format!("Provides a solution for {word} requests."),
    )
}

#[test]
fn a_filler_sentence_is_no_need_of_its_own() {
    let others: Vec<(String, String)> = (0..40).map(other_tool).collect();
    let entries: Vec<Entry<'_>> = others
        .iter()
        .map(|(name, description)| Entry {
            name,
            description,
            input_schema: None,
        })
        .chain([Entry {
            name: "mcp.media.convert_video",
            description: "Convert a video file to another format.",
            input_schema: None,
        }])
        .collect();
    let index = Index::build(entries);
    let split = |query| {
        let most = needs::split_by(query, usize::MAX, false, |_| true)
            .iter()
            .map(|piece| index.distinctness(piece))
            .fold(0.0, f64::max);
        needs::split_by(query, NEEDS, false, |piece| {
            let d = index.distinctness(piece);
            d >= mix::NEED_IDF && d >= mix::NEED_SHARE * most
        })
    };
    // "provide" and "solution" are in nearly every description: the filler
    // joins the need before it, and the request ranks as one need.
    let query = "Convert my video to mp4. Can you provide me with a solution?";
    assert!(index.distinctness("Can you provide me with a solution?") < 0.1);
    assert!(index.distinctness("Convert my video to mp4.") >= mix::NEED_IDF);
    assert_eq!(split(query), [query]);
    let one = Knobs {
        needs: 1,
        ..Knobs::SHIPPED
    };
    assert_eq!(
        index.search(query, 5),
        index.search_with(query, 5, &one, &mut mix::encode)
    );
    assert_eq!(
        index.names[index.search(query, 1)[0].entry],
        "mcp.media.convert_video"
    );
    // Two needs whose words are rare stay two.
    let two = "Convert my video to mp4. Then handle the kkl and klm requests.";
    assert_eq!(split(two).len(), 2, "{:?}", split(two));
}

#[test]
fn a_named_server_comes_before_another_with_the_same_words() {
    let names: Vec<String> = (0..12)
        .map(|i| format!("mcp.company{i}.search_trips"))
        .chain(["mcp.flixbus.search_trips".to_owned()])
        .collect();
    let entries: Vec<Entry<'_>> = names
        .iter()
        .map(|name| Entry {
            name,
            description: "Search bus trips between two cities on a date.",
            input_schema: None,
        })
        .collect();
    let index = Index::build(entries);
    assert_eq!(
        top(&index, "search bus trips from Berlin to Prague on Flixbus").as_deref(),
        Some("mcp.flixbus.search_trips")
    );
}

#[test]
fn chinese_and_japanese_text_meets_words_written_inside_longer_runs() {
    let entries = vec![
        Entry {
            name: "mcp.bazi.getBaziDetail",
            description: "根据时间（公历或农历）、性别来获取八字信息。",
            input_schema: None,
        },
        Entry {
            name: "mcp.trains.get_tickets",
            description: "查询12306余票信息。",
            input_schema: None,
        },
        Entry {
            name: "mcp.calendar.list_events",
            description: "カレンダーの予定を一覧表示します。",
            input_schema: None,
        },
        Entry {
            name: "mcp.weather.forecast",
            description: "Weather forecast for a city.",
            input_schema: None,
        },
    ];
    let index = Index::build(entries);
    // Each query word is written inside a longer run of the description.
    assert_eq!(
        top(&index, "八字").as_deref(),
        Some("mcp.bazi.getBaziDetail")
    );
    assert_eq!(
        top(&index, "查询余票").as_deref(),
        Some("mcp.trains.get_tickets")
    );
    assert_eq!(
        top(&index, "予定を見せて").as_deref(),
        Some("mcp.calendar.list_events")
    );
    // English still finds English, and a CJK word no tool has finds nothing.
    assert_eq!(
        top(&index, "weather in Tokyo").as_deref(),
        Some("mcp.weather.forecast")
    );
    assert_eq!(top(&index, "蛋糕"), None);
}

#[test]
fn a_request_of_several_needs_keeps_to_its_best_tools_server() {
    let index = among_others(
        [
            (
                "mcp.flixbus.search_trips",
                "Search bus trips between two cities.",
            ),
            (
                "mcp.flixbus.ticket_prices",
                "Prices and free seats of a ticket.",
            ),
            (
                "mcp.busline.ticket_prices",
                "Prices and free seats of a ticket.",
            ),
        ]
        .map(|(n, d)| (n.to_owned(), d.to_owned())),
    );
    let query = "Search bus trips between two cities. Then list ticket prices and free seats.";
    let order = |knobs: &Knobs| -> Vec<String> {
        let hits = index.search_with(query, 5, knobs, &mut mix::encode);
        hits.iter().map(|h| index.names[h.entry].clone()).collect()
    };
    let place = |order: &[String], name: &str| order.iter().position(|n| n == name).unwrap();
    // The flixbus request's prices come from flixbus, though another
    // company's tool matches its words as well.
    let shipped = order(&Knobs::SHIPPED);
    assert_eq!(shipped[0], "mcp.flixbus.search_trips", "{shipped:?}");
    assert!(
        place(&shipped, "mcp.flixbus.ticket_prices") < place(&shipped, "mcp.busline.ticket_prices"),
        "{shipped:?}"
    );
    // Without the rule the tie goes to the name's order.
    let without = order(&Knobs {
        same_server: 0.0,
        ..Knobs::SHIPPED
    });
    assert!(
        place(&without, "mcp.busline.ticket_prices") < place(&without, "mcp.flixbus.ticket_prices"),
        "{without:?}"
    );
}

#[test]
fn a_tools_name_said_whole_counts_its_share_of_the_name() {
    let index = among_others([
        (
            "mcp.icons.search_icons".into(),
            "Find icons by keyword.".into(),
        ),
        ("mcp.icons.list_icons".into(), "All icons of a pack.".into()),
        (
            "mcp.icons.get_platform_usage".into(),
            "Code for a platform.".into(),
        ),
    ]);
    let said = index.lexical_of("search for icons", None).unwrap().1;
    let cover = |name: &str| index.name_cover(index.exact(name).unwrap() as u32, &said);
    assert_eq!(cover("mcp.icons.search_icons"), 1.0);
    let part = cover("mcp.icons.list_icons");
    assert!(part > 0.0 && part < 1.0, "{part}");
    assert_eq!(cover("mcp.icons.get_platform_usage"), 0.0);
    // A typo says a word less than the word itself.
    let typo = index.lexical_of("serch for icons", None).unwrap().1;
    let typed = index.name_cover(index.exact("mcp.icons.search_icons").unwrap() as u32, &typo);
    assert!(typed > part && typed < 1.0, "{typed}");
}

#[test]
fn a_tool_whose_whole_name_is_said_comes_before_a_sibling_that_says_the_words_more() {
    let index = among_others([
        ("mcp.icons.search_icons".into(), "Find by keyword.".into()),
        (
            "mcp.icons.search_icon_packs".into(),
            "Search icons in packs. Search icons of a style.".into(),
        ),
    ]);
    let ranked = |name_cover: f64| {
        let knobs = Knobs {
            name_cover,
            ..Knobs::SHIPPED
        };
        let hits = index.search_with("search icons", 2, &knobs, &mut |_, _| Vec::new());
        index.names[hits[0].entry].clone()
    };
    assert_eq!(ranked(0.0), "mcp.icons.search_icon_packs");
    assert_eq!(ranked(NAME_COVER), "mcp.icons.search_icons");
}
