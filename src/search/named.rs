//! Servers a request names: "search trips on Flixbus" names the `flixbus`
//! server, and its tools should come before another company's trip search
//! however well that one's words match. A server is named by the words of
//! its namespace (`mcp.flixbus`, `mcp.openstreetmap_osm_mcp_server`) that
//! few servers share, written in the request as a proper name; a request
//! naming some of them names that share of the server
//! ([`Servers::named`]). It only says which servers a text names and
//! how fully; [`super::mix`] weighs it.

use super::text;
use std::collections::HashMap;

/// A namespace word shared by more than this share of the servers (`mcp`,
/// `server`, `api`), or by more than one server when there are fewer than
/// `1 / SHARED`, names none of them.
const SHARED: f64 = 0.1;

/// The servers of an index's entries and the words that name them.
#[derive(Debug, Clone, Default)]
pub(super) struct Servers {
    /// Each entry's server (its namespace's id).
    of_entry: Vec<u32>,
    /// Each entry that stands for a server (a group entry named as the
    /// server's namespace, `mcp.gmail_read`): that server.
    group_of: Vec<Option<u32>>,
    /// A distinctive namespace word's stem → the servers it names, each with
    /// the word's weight (`ln(1 + servers / servers with the word)`).
    by_stem: HashMap<String, Vec<(u32, f64)>>,
    /// Per server, the weight of all its distinctive words.
    total: Vec<f64>,
}

impl Servers {
    /// The servers of entries named `names` (`mcp.<server>.<tool>`: the
    /// namespace is everything before the last `.`).
    pub(super) fn build(names: &[String]) -> Servers {
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let mut stems: Vec<Vec<String>> = Vec::new();
        let mut of_entry = Vec::with_capacity(names.len());
        for name in names {
            let namespace = name.rsplit_once('.').map_or("", |(n, _)| n);
            let id = *ids.entry(namespace).or_insert_with(|| {
                let mut words: Vec<String> = text::words(namespace)
                    .iter()
                    .filter_map(|w| text::term(w))
                    .collect();
                words.sort();
                words.dedup();
                stems.push(words);
                stems.len() as u32 - 1
            });
            of_entry.push(id);
        }
        let group_of = names.iter().map(|n| ids.get(n.as_str()).copied()).collect();
        let servers = stems.len();
        let mut df: HashMap<&str, usize> = HashMap::new();
        for words in &stems {
            for w in words {
                *df.entry(w).or_default() += 1;
            }
        }
        let most = ((servers as f64 * SHARED) as usize).max(1);
        let mut by_stem: HashMap<String, Vec<(u32, f64)>> = HashMap::new();
        let mut total = vec![0.0; servers];
        if servers >= 2 {
            for (server, words) in stems.iter().enumerate() {
                for w in words {
                    let n = df[w.as_str()];
                    if n > most {
                        continue;
                    }
                    let weight = (1.0 + servers as f64 / n as f64).ln();
                    by_stem
                        .entry(w.clone())
                        .or_default()
                        .push((server as u32, weight));
                    total[server] += weight;
                }
            }
        }
        Servers {
            of_entry,
            group_of,
            by_stem,
            total,
        }
    }

    /// Forget the namespace words that more than `most` entries of other
    /// servers use too (`music` where other servers' tools play music, `park`,
    /// `restaurant`): written with a capital mid-sentence ("find a Music
    /// event") such a word is a common noun, not the server's name.
    /// `entries_with(stem)` gives the entries whose words have the stem.
    pub(super) fn drop_common<'e>(
        &mut self,
        most: usize,
        entries_with: impl Fn(&str) -> &'e [u32],
    ) {
        let (of_entry, group_of) = (&self.of_entry, &self.group_of);
        for (stem, servers) in &mut self.by_stem {
            let entries = entries_with(stem);
            servers.retain(|&(server, _)| {
                // The server's own group entry is not another server's.
                let other = |&&e: &&u32| {
                    of_entry[e as usize] != server && group_of[e as usize] != Some(server)
                };
                entries.iter().filter(other).count() <= most
            });
        }
        self.by_stem.retain(|_, servers| !servers.is_empty());
    }

    /// The server of entry `entry`: the one its namespace names, or, for a
    /// group entry standing for a server (`mcp.gmail_read`), that server.
    pub(super) fn of(&self, entry: u32) -> u32 {
        self.group_of[entry as usize].unwrap_or(self.of_entry[entry as usize])
    }

    /// The servers `text` names, each with the share of its distinctive
    /// words' weight the text's proper names carry, 0 to 1; none when the
    /// entries have one server. A proper name is a word written with a
    /// capital (`Flixbus`, `YouTube`, `NASA`) that does not start a
    /// sentence: a lowercase word ("phone", "download", "translate") is a
    /// need, not a name, even when a server is called by it.
    pub(super) fn named(&self, text: &str) -> Vec<(u32, f64)> {
        if self.by_stem.is_empty() {
            return Vec::new();
        }
        let mut seen: Vec<String> = Vec::new();
        let mut found: Vec<(u32, f64)> = Vec::new();
        for word in proper_names(text) {
            let Some(stem) = text::term(&word) else {
                continue;
            };
            if seen.contains(&stem) {
                continue;
            }
            for &(server, weight) in self.by_stem.get(&stem).into_iter().flatten() {
                match found.iter_mut().find(|(s, _)| *s == server) {
                    Some((_, w)) => *w += weight,
                    None => found.push((server, weight)),
                }
            }
            seen.push(stem);
        }
        for (server, w) in &mut found {
            *w = (*w / self.total[*server as usize]).min(1.0);
        }
        found.sort_by_key(|&(s, _)| s);
        found
    }
}

/// The words of `text` written with a capital that do not start a
/// sentence, lowercased whole (`YouTube` → `youtube`).
fn proper_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut sentence_start = true;
    for token in text.split(|c: char| !c.is_alphanumeric() && c != '.' && c != '!' && c != '?') {
        let word: String = token.chars().filter(|c| c.is_alphanumeric()).collect();
        let capital = word.chars().next().is_some_and(char::is_uppercase);
        if capital && !sentence_start {
            out.push(word.to_lowercase());
        }
        if !word.is_empty() {
            sentence_start = false;
        }
        if token.ends_with(['.', '!', '?']) {
            sentence_start = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(names: &[&str]) -> Servers {
        Servers::build(&names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn a_distinctive_namespace_word_names_its_server() {
        let mut names: Vec<String> = (0..20)
            .map(|i| format!("mcp.company{i}_bus.search_trips"))
            .collect();
        names.push("mcp.flixbus.search_trips".into());
        names.push("mcp.flixbus.get_stations".into());
        names.push("mcp.youtube_download.get_video".into());
        let s = Servers::build(&names);
        let flixbus = s.of(20);
        assert_eq!(s.of(21), flixbus);
        assert_eq!(s.named("search trips on Flixbus"), [(flixbus, 1.0)]);
        // A need is not a name: lowercase, or only capitalized because it
        // starts a sentence.
        assert_eq!(s.named("search trips on flixbus"), []);
        assert_eq!(s.named("Flixbus trips. Flixbus stations?"), []);
        // `mcp` and `bus` are shared by most servers: they name none.
        assert_eq!(s.named("take the Bus"), []);
        // Half a name names half the server, by the words' weight.
        let yt = s.of(22);
        let named = s.named("get the Youtube Download of it");
        assert_eq!(named.len(), 1);
        assert_eq!(named[0].0, yt);
        assert!((named[0].1 - 1.0).abs() < 1e-9, "{named:?}");
        let half = s.named("a video on YouTube");
        assert_eq!(half[0].0, yt);
        assert!(half[0].1 > 0.3 && half[0].1 < 0.7, "{half:?}");
    }

    #[test]
    fn a_word_other_servers_use_names_no_server() {
        let names: Vec<String> = [
            "mcp.music.generate",
            "mcp.events.find_events",
            "mcp.flixbus.search_trips",
            "mcp.bus.find_stops",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain((0..6).map(|i| format!("mcp.other{i}.tool")))
        .collect();
        let mut s = Servers::build(&names);
        let (music, flixbus) = (s.of(0), s.of(2));
        assert_eq!(s.named("find a Music event"), [(music, 1.0)]);
        // `music` is in an entry of the events server (entry 1), `flixbus`
        // in none but its own.
        let music_entries = [0u32, 1];
        let flixbus_entries = [2u32];
        s.drop_common(0, |stem| match stem {
            "music" => &music_entries,
            "flixbus" => &flixbus_entries,
            _ => &[],
        });
        assert_eq!(s.named("find a Music event"), []);
        assert_eq!(s.named("search trips on Flixbus"), [(flixbus, 1.0)]);

        // A server's group entry (`mcp.gmail_read`, whose own namespace is
        // `mcp`) has its name's words, and is no other server.
        let names: Vec<String> = [
            "mcp.gmail_read.get_thread",
            "mcp.gmail_read",
            "mcp.files.read",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain((0..8).map(|i| format!("mcp.other{i}.tool")))
        .collect();
        let mut s = Servers::build(&names);
        let gmail = s.of(0);
        // The group entry stands for the server, not for `mcp`.
        assert_eq!(s.of(1), gmail);
        assert_ne!(s.of(1), s.of(2));
        let gmail_entries = [0u32, 1];
        s.drop_common(0, |stem| match stem {
            "gmail" => &gmail_entries,
            _ => &[],
        });
        // Half its distinctive words (`gmail`, not `read`), as before.
        assert_eq!(s.named("my Gmail threads"), [(gmail, 0.5)]);
    }

    #[test]
    fn one_server_or_none_names_nothing() {
        assert_eq!(
            servers(&["mcp.gmail.send", "mcp.gmail.read"]).named("my Gmail"),
            []
        );
        assert_eq!(servers(&["send", "read"]).named("a Send"), []);
        assert_eq!(servers(&[]).named("an Anything"), []);
    }
}
