//! A JSON text cut to a budget and still JSON: the document's beginning in its own order,
//! strings past a length cut with a marker inside them, and the tail of each list or object
//! the budget did not reach replaced by one marker (`"… 12 more items left out by muster"`,
//! or a member `"…": "3 more members left out by muster"`).
//!
//! The text is read once, front to back, by serde_json's parser (its grammar). Only the
//! beginning a cut can reach is kept, as a small tree ([`Node`], about
//! [`HEAD_BYTES_PER_TOKEN`] bytes a token of room), and that tree is held to serde_json's depth
//! limit ([`crate::input::JSON_DEPTH_LIMIT`]: deeper, the text is cut as text), so walking it cannot exhaust
//! the stack. Past it every value is still read (the whole text must be JSON) by serde_json's
//! skipping path, which keeps no stack and no value, and only counted. The cut is then searched
//! for on the tree. So the work is one pass over the text plus a few times the budget, and
//! the whole document is never built.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::tokens::Encoding;

/// The member name that stands for an object's members left out.
pub const MORE_MEMBERS: &str = "…";

/// Bytes of a document's beginning kept per token of room: the search's tries reach that far
/// only in a text of more than 8 bytes a token (compact JSON runs 2 to 5). A cut that reaches
/// further reads the text again, keeping all of it.
pub const HEAD_BYTES_PER_TOKEN: usize = 16;

/// `text` cut to at most `room` tokens and still JSON: `Some(Some(cut))`, the most of it that
/// fits; `Some(None)` when not even its brackets and markers fit (a JSON text is never cut into
/// something that is not JSON); `None` when it is not a JSON list or object (its kept
/// beginning nested as deep as [`crate::input::JSON_DEPTH_LIMIT`] included).
pub(super) fn cut(text: &str, room: u32, encoding: Encoding) -> Option<Option<String>> {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    let reach = (room as usize).max(64).saturating_mul(HEAD_BYTES_PER_TOKEN);
    match search(&read(text, reach)?, room, encoding, text.len()) {
        Ok(best) => Some(best),
        // A try went past what was kept (a text of very long tokens): keep all of it.
        // Bounded by the text, as the first read was.
        Err(RanOut) => search(&read(text, usize::MAX)?, room, encoding, text.len()).ok(),
    }
}

/// A try at a cut reached past the beginning the tree keeps.
#[derive(Debug)]
struct RanOut;

/// The most of `head` written within `room` tokens, `None` when not even its brackets fit.
///
/// The room in bytes is doubled from four per token while the written text fits; then the
/// largest that fits is looked for between the last that fits and the first that does not,
/// by the tokens each counted (the tokens of a document's beginning grow about evenly with
/// its bytes), aimed a little to one side and then the other so that two tries close in on
/// it; after [`MAX_AIMED`] tries, by halving. Each try writes at most about its room.
fn search(
    head: &Node,
    room: u32,
    encoding: Encoding,
    len: usize,
) -> Result<Option<String>, RanOut> {
    let attempt = |bytes: usize| -> Result<(String, u32), RanOut> {
        let (text, _) = write_within(head, bytes, (bytes / 4).max(64)).ok_or(RanOut)?;
        let tokens = encoding.count_text(&text);
        Ok((text, tokens))
    };
    let (mut best, mut lo_tokens) = attempt(0)?;
    if lo_tokens > room {
        return Ok(None);
    }
    let (mut lo, mut hi) = (0usize, (room as usize).saturating_mul(4).max(16));
    let mut hi_tokens = None;
    while hi < len.saturating_mul(2) {
        let (text, tokens) = attempt(hi)?;
        if tokens > room {
            hi_tokens = Some(tokens);
            break;
        }
        (best, lo_tokens, lo) = (text, tokens, hi);
        hi = hi.saturating_mul(2);
    }
    let (mut tries, mut up) = (0usize, false);
    loop {
        let gap = 16.max(hi / 64);
        if hi <= lo + gap {
            return Ok(Some(best));
        }
        let width = hi - lo;
        let mid = match hi_tokens {
            Some(hi_tokens) if tries < MAX_AIMED && hi_tokens > lo_tokens => {
                let share = u128::from(room - lo_tokens) * width as u128
                    / u128::from(hi_tokens - lo_tokens);
                let aim = lo + share as usize;
                let aim = if up {
                    aim + gap / 2
                } else {
                    aim.saturating_sub(gap / 2)
                };
                aim.clamp(lo + width / 16 + 1, hi - width / 16 - 1)
            }
            _ => lo + width / 2,
        };
        tries += 1;
        let (text, tokens) = attempt(mid)?;
        if tokens <= room {
            (best, lo_tokens, lo, up) = (text, tokens, mid, true);
        } else {
            (hi_tokens, hi, up) = (Some(tokens), mid, false);
        }
    }
}

/// Tries aimed by the tokens counted before the search halves.
const MAX_AIMED: usize = 4;

/// The beginning of a JSON document, as far as a cut can reach.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
    /// A number, `true`, `false` or `null` (no allocation), written as serde_json writes it.
    Scalar(Value),
    /// A string: its first bytes (on a character boundary), its length in bytes, and the
    /// characters past what is kept.
    Str {
        head: String,
        len: usize,
        more_chars: u64,
    },
    /// A list: the items kept, and how many more it has.
    List { items: Vec<Node>, more: u64 },
    /// An object: the members kept (a repeated name keeps its first place and its last
    /// value, as serde_json reads it), and how many more it has.
    Map {
        members: Vec<(String, Node)>,
        more: u64,
    },
}

/// `text` read as JSON, keeping what a cut within `reach` bytes can reach; `None` when it is
/// not JSON.
pub(super) fn read(text: &str, reach: usize) -> Option<Node> {
    let mut de = serde_json::Deserializer::from_str(text);
    let mut kept = Kept {
        bytes: 0,
        reach,
        string_bytes: (reach / 4).max(64),
    };
    let node = Head(&mut kept).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(node)
}

/// How much of the document is kept so far.
struct Kept {
    /// Bytes a writer with all the room would have written so far (about).
    bytes: usize,
    /// Past this, values are counted, not kept.
    reach: usize,
    /// The longest beginning of a string kept: the longest any cut within `reach` writes.
    string_bytes: usize,
}

impl Kept {
    fn full(&self) -> bool {
        self.bytes >= self.reach
    }
}

/// Reads one value, keeping it.
struct Head<'k>(&'k mut Kept);

impl<'de> DeserializeSeed<'de> for Head<'_> {
    type Value = Node;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(self)
    }
}

impl Head<'_> {
    /// `value` kept, counted at about the bytes it is written in.
    fn scalar<E>(self, value: Value, bytes: usize) -> Result<Node, E> {
        self.0.bytes += bytes;
        Ok(Node::Scalar(value))
    }
}

/// The digits of `v`.
fn digits(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |d| d as usize + 1)
}

impl<'de> Visitor<'de> for Head<'_> {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        self.scalar(Value::Bool(v), 5)
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        self.scalar(Value::from(v), digits(v.unsigned_abs()) + 1)
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        self.scalar(Value::from(v), digits(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        self.scalar(Value::from(v), 24)
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        self.scalar(Value::Null, 4)
    }

    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        let mut end = v.len().min(self.0.string_bytes);
        while !v.is_char_boundary(end) {
            end -= 1;
        }
        self.0.bytes += end + 2;
        Ok(Node::Str {
            head: v[..end].to_string(),
            len: v.len(),
            more_chars: v[end..].chars().count() as u64,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let kept = self.0;
        kept.bytes += 2;
        let (mut items, mut more) = (Vec::new(), 0u64);
        while !kept.full() {
            match seq.next_element_seed(Head(&mut *kept))? {
                Some(item) => items.push(item),
                None => return Ok(Node::List { items, more }),
            }
            kept.bytes += 1;
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {
            more += 1;
        }
        Ok(Node::List { items, more })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let kept = self.0;
        kept.bytes += 2;
        let (mut members, mut more) = (Vec::<(String, Node)>::new(), 0u64);
        let mut places = rustc_hash::FxHashMap::<String, usize>::default();
        while !kept.full() {
            let Some(name) = map.next_key::<String>()? else {
                return Ok(Node::Map { members, more });
            };
            kept.bytes += name.len() + 4;
            let value = map.next_value_seed(Head(&mut *kept))?;
            match places.get(&name) {
                Some(&at) => members[at].1 = value,
                None => {
                    places.insert(name.clone(), members.len());
                    members.push((name, value));
                }
            }
        }
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value::<IgnoredAny>()?;
            more += 1;
        }
        Ok(Node::Map { members, more })
    }
}

/// `node` written as JSON in at most about `room` bytes (the markers and closing brackets
/// of each open level may go past it by a few bytes per level), strings cut at `string_cap`
/// bytes. `None` when it reaches past what `node` keeps; else the text and whether anything
/// was left out.
pub(super) fn write_within(node: &Node, room: usize, string_cap: usize) -> Option<(String, bool)> {
    let mut w = Writer {
        out: Vec::with_capacity(room.min(1 << 20) + 64),
        room,
        string_cap,
        cut: false,
    };
    w.node(node)?;
    // Only whole strings and ASCII are written.
    Some((String::from_utf8(w.out).ok()?, w.cut))
}

struct Writer {
    out: Vec<u8>,
    room: usize,
    string_cap: usize,
    cut: bool,
}

impl Writer {
    fn left(&self) -> usize {
        self.room.saturating_sub(self.out.len())
    }

    fn node(&mut self, node: &Node) -> Option<()> {
        match node {
            // Writing a number, a bool or null into a Vec cannot fail.
            Node::Scalar(value) => {
                let _ = serde_json::to_writer(&mut self.out, value);
            }
            Node::Str {
                head,
                len,
                more_chars,
            } => self.string(head, *len, *more_chars)?,
            Node::List { items, more } => self.list(items, *more)?,
            Node::Map { members, more } => self.map(members, *more)?,
        }
        Some(())
    }

    fn quoted(&mut self, s: &str) {
        // Writing a str into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.out, s);
    }

    fn string(&mut self, head: &str, len: usize, more_chars: u64) -> Option<()> {
        // Room for the quotes and the marker; at least a few characters are kept.
        let cap = self.string_cap.min(self.left().saturating_sub(2)).max(8);
        if len <= cap {
            // Kept whole, or the tree does not reach this far.
            (head.len() == len).then(|| self.quoted(head))?;
            return Some(());
        }
        if cap > head.len() {
            return None;
        }
        let mut end = cap;
        while !head.is_char_boundary(end) {
            end -= 1;
        }
        self.cut = true;
        let left_out = head[end..].chars().count() as u64 + more_chars;
        self.quoted(&format!(
            "{}… [{left_out} more characters left out by muster]",
            &head[..end]
        ));
        Some(())
    }

    /// Whether the item at `i` of a container with `kept` items (and `more` past them) is
    /// left out with the rest: `None` when the room reaches past what is kept.
    fn leave_out(&mut self, i: usize, kept: usize, more: u64) -> Option<Option<u64>> {
        if self.left() > 0 {
            return if i < kept { Some(None) } else { None };
        }
        self.cut = true;
        Some(Some((kept - i) as u64 + more))
    }

    fn list(&mut self, items: &[Node], more: u64) -> Option<()> {
        self.out.push(b'[');
        let total = items.len() + usize::from(more > 0);
        for i in 0..total {
            if i > 0 {
                self.out.push(b',');
            }
            if let Some(more) = self.leave_out(i, items.len(), more)? {
                let s = if more == 1 { "" } else { "s" };
                self.quoted(&format!("… {more} more item{s} left out by muster"));
                break;
            }
            self.node(&items[i])?;
        }
        self.out.push(b']');
        Some(())
    }

    fn map(&mut self, members: &[(String, Node)], more: u64) -> Option<()> {
        self.out.push(b'{');
        let total = members.len() + usize::from(more > 0);
        for i in 0..total {
            if i > 0 {
                self.out.push(b',');
            }
            if let Some(more) = self.leave_out(i, members.len(), more)? {
                let s = if more == 1 { "" } else { "s" };
                self.quoted(MORE_MEMBERS);
                self.out.push(b':');
                self.quoted(&format!("{more} more member{s} left out by muster"));
                break;
            }
            let (name, member) = &members[i];
            self.quoted(name);
            self.out.push(b':');
            self.node(member)?;
        }
        self.out.push(b'}');
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::JSON_DEPTH_LIMIT;

    fn written(value: &Value, room: usize, string_cap: usize) -> (String, bool) {
        let node = read(&value.to_string(), usize::MAX).unwrap();
        write_within(&node, room, string_cap).unwrap()
    }

    #[test]
    fn a_long_list_keeps_its_beginning_and_says_how_many_were_left_out() {
        let value: Value = (0..1000)
            .map(|i| Value::from(format!("item {i}")))
            .collect();
        let (text, cut) = written(&value, 40, 100);
        assert!(cut);
        let back: Vec<String> = serde_json::from_str(&text).unwrap();
        assert_eq!(back[0], "item 0");
        let n = back.len() - 1;
        assert_eq!(
            back[n],
            format!("… {} more items left out by muster", 1000 - n)
        );
    }

    #[test]
    fn a_long_string_is_cut_on_a_character_inside_its_quotes() {
        let value = serde_json::json!({"a": "é".repeat(100), "b": [1, 2]});
        let (text, cut) = written(&value, 1000, 11);
        assert!(cut);
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back["a"], "ééééé… [95 more characters left out by muster]",
            "{text}"
        );
        assert_eq!(back["b"], serde_json::json!([1, 2]));
    }

    #[test]
    fn what_fits_is_written_as_serde_writes_it() {
        let text = r#" {"a": [1, "x\u00e9\n", null, {"b": true}], "c": 1.50, "d": -0, "e": 1e3} "#;
        let value: Value = serde_json::from_str(text).unwrap();
        let node = read(text, usize::MAX).unwrap();
        assert_eq!(
            write_within(&node, 1000, 100),
            Some((value.to_string(), false))
        );
    }

    #[test]
    fn a_repeated_name_keeps_its_first_place_and_its_last_value() {
        let text = r#"{"a": 1, "b": 2, "a": 3}"#;
        let node = read(text, usize::MAX).unwrap();
        let (out, _) = write_within(&node, 1000, 100).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(out, value.to_string());
        assert_eq!(out, r#"{"a":3,"b":2}"#);
    }

    #[test]
    fn past_its_reach_the_text_is_counted_not_kept() {
        let value: Value = (0..10_000)
            .map(|i| serde_json::json!({"id": i, "tags": ["a", "b"]}))
            .collect();
        let text = value.to_string();
        let head = read(&text, 1000).unwrap();
        let Node::List { items, more } = &head else {
            panic!("{head:?}")
        };
        assert!(items.len() < 100, "{}", items.len());
        assert_eq!(items.len() as u64 + more, 10_000);
        // A cut within the reach writes what the whole tree gives.
        let whole = read(&text, usize::MAX).unwrap();
        for room in [0, 10, 300, 900] {
            assert_eq!(
                write_within(&head, room, 64),
                write_within(&whole, room, 64)
            );
        }
        // One that reaches further says so.
        assert_eq!(write_within(&head, 5000, 64), None);
    }

    #[test]
    fn json_deeper_than_muster_reads_is_cut_as_text_and_a_deep_tail_only_counted() {
        let nested = |depth: usize| "[".repeat(depth) + &"]".repeat(depth);
        let deepest_read = JSON_DEPTH_LIMIT - 1;
        for reach in [1000, usize::MAX] {
            assert!(read(&nested(deepest_read), reach).is_some());
            assert!(read(&nested(deepest_read + 1), reach).is_none());
        }
        let deep = nested(100_000);
        assert_eq!(cut(&deep, 300, Encoding::O200kBase), None);
        // Past the beginning kept, nesting is skipped without a stack and counted.
        let tail = format!("[{}{}]", "1,".repeat(5000), nested(100_000));
        let head = read(&tail, 1000).unwrap();
        let Node::List { items, more } = &head else {
            panic!("{head:?}")
        };
        assert_eq!(items.len() as u64 + more, 5001);
        let out = cut(&tail, 300, Encoding::O200kBase).unwrap().unwrap();
        let back: Vec<Value> = serde_json::from_str(&out).unwrap();
        assert!(
            back.last()
                .unwrap()
                .as_str()
                .unwrap()
                .ends_with("more items left out by muster")
        );
    }

    #[test]
    fn json_whose_brackets_do_not_fit_is_not_cut_into_text() {
        let object = r#"{"a": 1, "b": [1, 2, 3], "c": "three"}"#;
        assert_eq!(cut(object, 1, Encoding::O200kBase), Some(None));
        let kept = cut(object, 300, Encoding::O200kBase).unwrap().unwrap();
        assert_eq!(serde_json::from_str::<Value>(&kept).unwrap()["c"], "three");
    }

    #[test]
    fn what_is_not_json_is_not_cut_as_json() {
        for odd in [
            "[1, 2",
            "{\"a\": 1} trailing",
            "[\"\u{1}\"]",
            "{\"a\" 1}",
            "\"a string\"",
            "12",
        ] {
            assert_eq!(cut(odd, 300, Encoding::O200kBase), None, "{odd}");
        }
        let bad_tail = format!("[{}, nul]", "1,".repeat(100_000));
        assert_eq!(cut(&bad_tail, 300, Encoding::O200kBase), None);
    }
}
