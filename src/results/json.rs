//! A JSON text cut to a budget and still JSON: the document's beginning in its own order,
//! strings past a length cut with a marker inside them, and the tail of each list or object
//! the budget did not reach replaced by one marker (`"… 12 more items left out by muster"`,
//! or a member `"…": "3 more members left out by muster"`). What is written is bounded by the
//! room given, never by the input: members and items past the room are counted, not read.

use serde_json::{Map, Value};

/// The member name that stands for an object's members left out.
pub const MORE_MEMBERS: &str = "…";

/// `value` written as JSON in at most about `room` bytes (the markers and closing brackets
/// of each open level may go past it by a few bytes per level), strings cut at `string_cap`
/// characters. Whether anything was left out.
pub(super) fn write_within(value: &Value, room: usize, string_cap: usize) -> (String, bool) {
    let mut w = Writer {
        out: String::with_capacity(room.min(1 << 20) + 64),
        room,
        string_cap,
        cut: false,
    };
    w.value(value);
    (w.out, w.cut)
}

struct Writer {
    out: String,
    room: usize,
    string_cap: usize,
    cut: bool,
}

impl Writer {
    fn left(&self) -> usize {
        self.room.saturating_sub(self.out.len())
    }

    fn value(&mut self, value: &Value) {
        match value {
            Value::String(s) => self.string(s),
            Value::Array(items) => self.array(items),
            Value::Object(members) => self.object(members),
            other => self.out.push_str(&other.to_string()),
        }
    }

    fn string(&mut self, s: &str) {
        // Room for the quotes and the marker; at least a few characters are kept.
        let cap = self.string_cap.min(self.left().saturating_sub(2)).max(8);
        let mut end = s.len().min(cap);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        if end == s.len() {
            self.out.push_str(&Value::from(s).to_string());
            return;
        }
        self.cut = true;
        let left_out = s[end..].chars().count();
        let kept = format!(
            "{}… [{left_out} more characters left out by muster]",
            &s[..end]
        );
        self.out.push_str(&Value::from(kept).to_string());
    }

    fn array(&mut self, items: &[Value]) {
        self.out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            if self.left() == 0 {
                self.cut = true;
                let more = items.len() - i;
                let marker = format!(
                    "… {more} more item{} left out by muster",
                    if more == 1 { "" } else { "s" }
                );
                self.out.push_str(&Value::from(marker).to_string());
                break;
            }
            self.value(item);
        }
        self.out.push(']');
    }

    fn object(&mut self, members: &Map<String, Value>) {
        self.out.push('{');
        for (i, (name, member)) in members.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            if self.left() == 0 {
                self.cut = true;
                let more = members.len() - i;
                let marker = format!(
                    "{more} more member{} left out by muster",
                    if more == 1 { "" } else { "s" }
                );
                self.out.push_str(&Value::from(MORE_MEMBERS).to_string());
                self.out.push(':');
                self.out.push_str(&Value::from(marker).to_string());
                break;
            }
            self.out.push_str(&Value::from(name.as_str()).to_string());
            self.out.push(':');
            self.value(member);
        }
        self.out.push('}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_list_keeps_its_beginning_and_says_how_many_were_left_out() {
        let value: Value = (0..1000)
            .map(|i| Value::from(format!("item {i}")))
            .collect();
        let (text, cut) = write_within(&value, 40, 100);
        assert!(cut);
        let back: Vec<String> = serde_json::from_str(&text).unwrap();
        assert_eq!(back[0], "item 0");
        assert!(
            back.last().unwrap().contains("more items left out"),
            "{text}"
        );
    }

    #[test]
    fn a_long_string_is_cut_on_a_character_inside_its_quotes() {
        let value = serde_json::json!({"a": "é".repeat(100), "b": [1, 2]});
        let (text, cut) = write_within(&value, 1000, 11);
        assert!(cut);
        let back: Value = serde_json::from_str(&text).unwrap();
        assert!(back["a"].as_str().unwrap().starts_with("ééééé…"), "{text}");
        assert_eq!(back["b"], serde_json::json!([1, 2]));
    }

    #[test]
    fn what_fits_is_written_as_serde_writes_it() {
        let value = serde_json::json!({"a": [1, "x", null, {"b": true}], "c": 1.5});
        assert_eq!(write_within(&value, 1000, 100), (value.to_string(), false));
    }
}
