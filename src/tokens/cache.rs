//! The token-count cache: counts of rendered definitions kept between runs,
//! so a plan whose definitions did not change builds no tokenizer.
//!
//! A count is stored under a key that hashes everything the count depends
//! on: the encoding, the rendering ([`super::RENDERING`]) and the
//! definition it renders (name, description and the schema's written
//! text, which fixes its tree). A cached count is therefore the count of
//! the same text by the same tokenizer, and the cache cannot change a
//! result, as long as a change to a renderer changes its tag: the
//! `renderings_are_pinned_to_their_tags` test fails until it does, and
//! the key holds muster's version, so a new release never reuses an older
//! one's counts. Keying
//! by definition instead of by rendered text means a cached definition is
//! never rendered at all. The file is read whole
//! and checked (format magic, version, length, order, SHA-256 checksum); a
//! file that fails any check is ignored and rewritten, never trusted.
//!
//! It is written to a temporary file beside it and renamed, so concurrent
//! runs see the old file or a new one, never a mix; a run that writes merges
//! what another wrote meanwhile. It holds at most [`MAX_ENTRIES`] counts,
//! dropping those no run has used for longest.
//!
//! This module never reads the environment: the caller says where the file
//! lives. It decides nothing about plans.

use crate::error::Error;
use sha2::{Digest, Sha256};
// Keys are SHA-256 prefixes already, so the fast hasher spreads them as
// well as SipHash does.
use rustc_hash::FxHashMap as HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Counts the file keeps at most; past it, the least recently used go.
/// 262,144 entries are a 6 MiB file: two catalogs of 100,000 tools fit,
/// and a file only grows as large as the counts it holds.
pub const MAX_ENTRIES: usize = 1 << 18;

/// The cache file's name inside the cache directory.
pub const FILE_NAME: &str = "token-counts.bin";

const MAGIC: &[u8; 8] = b"MSTRTOKC";
/// Bump when the layout or the keys change; files of another version are
/// ignored. 2: keys hash the definition, not its rendered text.
const VERSION: u32 = 2;
const HEADER: usize = 8 + 4 + 4 + 4;
const ENTRY: usize = KEY_LEN + 4 + 4;
const CHECKSUM: usize = 32;
const KEY_LEN: usize = 16;

/// What a count is stored under: the first 16 bytes of a SHA-256 over the
/// encoding, the rendering and the definition.
pub type Key = [u8; KEY_LEN];

/// The key for the definition (`name`, `description`, `input_schema`)
/// rendered by `rendering` and counted with `encoding`. Each part is
/// hashed after its length, so no two definitions run together alike.
pub fn key(
    encoding: &str,
    rendering: &str,
    name: &str,
    description: &str,
    input_schema: &crate::schema::Schema,
) -> Key {
    let mut h = Sha256::new();
    h.update(b"muster-token-count-definition\0");
    // A new release drops every count an older one cached, whatever its
    // tags say: a renderer change that forgot its tag costs one uncached
    // run, not stale counts for ever.
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(b"\0");
    for part in [encoding, rendering, name, description, input_schema.text()] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    let digest = h.finalize();
    let mut key = [0; KEY_LEN];
    key.copy_from_slice(&digest[..KEY_LEN]);
    key
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    tokens: u32,
    /// The save that last used it (a counter kept in the file).
    generation: u32,
    /// Read or added by this run.
    used: bool,
}

/// Token counts by key, optionally backed by a file.
#[derive(Debug, Clone, Default)]
pub struct TokenCache {
    path: Option<PathBuf>,
    entries: HashMap<Key, Slot>,
    generation: u32,
    added: bool,
}

impl TokenCache {
    /// A cache that lives only as long as the value: nothing is read or
    /// written.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// The cache kept in `path`. A missing, unreadable, corrupt, truncated
    /// or foreign file reads as an empty cache (and is replaced by
    /// [`TokenCache::save`]); opening never fails.
    pub fn open(path: &Path) -> Self {
        let (generation, entries) = read(path).unwrap_or_default();
        Self {
            path: Some(path.to_path_buf()),
            entries: entries
                .into_iter()
                .map(|(key, tokens, generation)| {
                    (
                        key,
                        Slot {
                            tokens,
                            generation,
                            used: false,
                        },
                    )
                })
                .collect(),
            generation,
            added: false,
        }
    }

    /// The file backing it, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Counts held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no count.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The count stored under `key`.
    pub fn get(&mut self, key: &Key) -> Option<u32> {
        let slot = self.entries.get_mut(key)?;
        slot.used = true;
        Some(slot.tokens)
    }

    /// Stores a fresh count.
    pub fn insert(&mut self, key: Key, tokens: u32) {
        self.added = true;
        self.entries.insert(
            key,
            Slot {
                tokens,
                generation: self.generation,
                used: true,
            },
        );
    }

    /// Writes the counts to the file when this run added any; counts
    /// another run saved meanwhile are kept. Does nothing for an in-memory
    /// cache.
    ///
    /// # Errors
    /// [`crate::ErrorKind::Io`] naming the file when its directory cannot be
    /// created or the file cannot be written; the old file is left as it
    /// was.
    pub fn save(&mut self) -> Result<(), Error> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        if !self.added {
            return Ok(());
        }
        let (on_disk_generation, on_disk) = read(&path).unwrap_or_default();
        let generation = self.generation.max(on_disk_generation).wrapping_add(1);
        let mut merged: HashMap<Key, (u32, u32)> = on_disk
            .into_iter()
            .map(|(key, tokens, generation)| (key, (tokens, generation)))
            .collect();
        for (key, slot) in &self.entries {
            let g = if slot.used {
                generation
            } else {
                slot.generation
            };
            let entry = merged.entry(*key).or_insert((slot.tokens, g));
            entry.1 = entry.1.max(g);
        }
        let mut entries: Vec<(Key, u32, u32)> =
            merged.into_iter().map(|(k, (t, g))| (k, t, g)).collect();
        if entries.len() > MAX_ENTRIES {
            // Most recently used first; the key settles ties.
            entries.sort_unstable_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
            entries.truncate(MAX_ENTRIES);
        }
        entries.sort_unstable_by_key(|e| e.0);
        write(&path, &encode(generation, &entries))?;
        self.generation = generation;
        self.added = false;
        Ok(())
    }
}

fn encode(generation: u32, entries: &[(Key, u32, u32)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + entries.len() * ENTRY + CHECKSUM);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for (key, tokens, g) in entries {
        out.extend_from_slice(key);
        out.extend_from_slice(&tokens.to_le_bytes());
        out.extend_from_slice(&g.to_le_bytes());
    }
    let checksum = Sha256::digest(&out);
    out.extend_from_slice(&checksum);
    out
}

type Entries = Vec<(Key, u32, u32)>;

/// The file's generation and entries, or `None` when it is missing or
/// fails any check.
fn read(path: &Path) -> Option<(u32, Entries)> {
    let largest = HEADER + MAX_ENTRIES * ENTRY + CHECKSUM;
    // A file far past the bound is not ours; do not read it into memory.
    if std::fs::metadata(path).ok()?.len() > largest as u64 {
        return None;
    }
    decode(&std::fs::read(path).ok()?)
}

fn decode(bytes: &[u8]) -> Option<(u32, Entries)> {
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    if bytes.get(..8)? != MAGIC || u32_at(8)? != VERSION {
        return None;
    }
    let generation = u32_at(12)?;
    let count = u32_at(16)? as usize;
    if count > MAX_ENTRIES || bytes.len() != HEADER + count * ENTRY + CHECKSUM {
        return None;
    }
    let (body, checksum) = bytes.split_at(bytes.len() - CHECKSUM);
    if Sha256::digest(body).as_slice() != checksum {
        return None;
    }
    let mut entries = Vec::with_capacity(count);
    for chunk in body[HEADER..].chunks_exact(ENTRY) {
        let key: Key = chunk[..KEY_LEN].try_into().ok()?;
        let tokens = u32::from_le_bytes(chunk[KEY_LEN..KEY_LEN + 4].try_into().ok()?);
        let g = u32::from_le_bytes(chunk[KEY_LEN + 4..].try_into().ok()?);
        entries.push((key, tokens, g));
    }
    // Written sorted with each key once; anything else was not written here.
    if entries.windows(2).any(|w| w[0].0 >= w[1].0) {
        return None;
    }
    Some((generation, entries))
}

/// Replaces `path` through a temporary file in the same directory. No
/// fsync: a cache lost or torn by a crash fails its checksum and is
/// rebuilt, and the sync would cost the run more than the counts save.
fn write(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".token-counts.")
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, &e))?;
    tmp.write_all(bytes)
        .map_err(|e| Error::io(tmp.path(), &e))?;
    tmp.persist(path).map_err(|e| Error::io(path, &e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Schema;

    fn k(i: u32) -> Key {
        key("o200k_base", "test", &i.to_string(), "", &no_arguments())
    }

    fn no_arguments() -> Schema {
        Schema::no_arguments()
    }

    #[test]
    fn counts_survive_a_save_and_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join(FILE_NAME);
        let mut cache = TokenCache::open(&path);
        assert!(cache.is_empty());
        cache.insert(k(1), 11);
        cache.insert(k(2), 22);
        cache.save().unwrap();
        let mut again = TokenCache::open(&path);
        assert_eq!(again.len(), 2);
        assert_eq!(again.get(&k(1)), Some(11));
        assert_eq!(again.get(&k(2)), Some(22));
        assert_eq!(again.get(&k(3)), None);
    }

    #[test]
    fn a_run_that_adds_nothing_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut cache = TokenCache::open(&path);
        cache.save().unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn the_key_covers_encoding_rendering_and_the_definition() {
        let s = no_arguments();
        let base = key("o200k_base", "r1", "a", "Does a.", &s);
        assert_eq!(base, key("o200k_base", "r1", "a", "Does a.", &s));
        assert_ne!(base, key("cl100k_base", "r1", "a", "Does a.", &s));
        assert_ne!(base, key("o200k_base", "r2", "a", "Does a.", &s));
        assert_ne!(base, key("o200k_base", "r1", "b", "Does a.", &s));
        assert_ne!(base, key("o200k_base", "r1", "a", "Does b.", &s));
        let other = Schema::new(&serde_json::json!({"type": "object"}));
        assert_ne!(base, key("o200k_base", "r1", "a", "Does a.", &other));
        // Members in another order render otherwise, so count apart.
        let ab = Schema::new(&serde_json::json!({"properties": {"a": {}, "b": {}}}));
        let ba = Schema::new(&serde_json::json!({"properties": {"b": {}, "a": {}}}));
        assert_ne!(
            key("o200k_base", "r1", "a", "", &ab),
            key("o200k_base", "r1", "a", "", &ba)
        );
        // The lengths keep the parts apart.
        assert_ne!(key("a", "bc", "d", "", &s), key("ab", "c", "d", "", &s));
        assert_ne!(key("o", "r", "a", "bc", &s), key("o", "r", "ab", "c", &s));
    }

    #[test]
    fn any_damaged_file_reads_as_empty() {
        let mut good = TokenCache::in_memory();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        good.path = Some(path.clone());
        for i in 0..10 {
            good.insert(k(i), i);
        }
        good.save().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(TokenCache::open(&path).len(), 10);

        let mut damaged: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"not a cache at all".to_vec(),
            bytes[..bytes.len() - 1].to_vec(),
            bytes[..HEADER].to_vec(),
            [bytes.clone(), vec![0]].concat(),
        ];
        // Every single flipped byte, magic to checksum.
        for at in 0..bytes.len() {
            let mut b = bytes.clone();
            b[at] ^= 0x20;
            damaged.push(b);
        }
        // Another version, checksum made right.
        let mut other = bytes[..bytes.len() - CHECKSUM].to_vec();
        other[8..12].copy_from_slice(&(VERSION + 1).to_le_bytes());
        let sum = Sha256::digest(&other);
        other.extend_from_slice(&sum);
        damaged.push(other);
        // Entries out of order, checksum made right.
        let mut swapped = bytes[..bytes.len() - CHECKSUM].to_vec();
        let (a, b) = (HEADER, HEADER + ENTRY);
        let first = swapped[a..b].to_vec();
        let second = swapped[b..b + ENTRY].to_vec();
        swapped[a..b].copy_from_slice(&second);
        swapped[b..b + ENTRY].copy_from_slice(&first);
        let sum = Sha256::digest(&swapped);
        swapped.extend_from_slice(&sum);
        damaged.push(swapped);

        for (n, bad) in damaged.iter().enumerate() {
            std::fs::write(&path, bad).unwrap();
            let mut cache = TokenCache::open(&path);
            assert!(cache.is_empty(), "damaged file {n} was trusted");
            // And it is rebuilt.
            cache.insert(k(0), 0);
            cache.save().unwrap();
            assert_eq!(TokenCache::open(&path).len(), 1, "damaged file {n}");
        }
    }

    #[test]
    fn a_save_keeps_what_another_run_saved_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut a = TokenCache::open(&path);
        let mut b = TokenCache::open(&path);
        a.insert(k(1), 1);
        b.insert(k(2), 2);
        a.save().unwrap();
        b.save().unwrap();
        let mut both = TokenCache::open(&path);
        assert_eq!((both.get(&k(1)), both.get(&k(2))), (Some(1), Some(2)));
    }

    #[test]
    fn concurrent_saves_leave_a_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::thread::scope(|s| {
            for t in 0..8u32 {
                let path = &path;
                s.spawn(move || {
                    for round in 0..20u32 {
                        let mut c = TokenCache::open(path);
                        c.insert(k(t * 1000 + round), round);
                        c.save().unwrap();
                        // Whatever is there now is a valid cache.
                        assert!(read(path).is_some());
                    }
                });
            }
        });
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1, "temporary files left behind");
    }

    #[test]
    fn the_file_stays_bounded_and_keeps_what_the_last_run_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut old = TokenCache::open(&path);
        for i in 0..MAX_ENTRIES as u32 {
            old.insert(k(i), i);
        }
        old.save().unwrap();
        let mut next = TokenCache::open(&path);
        assert_eq!(next.get(&k(7)), Some(7));
        for i in 0..100 {
            next.insert(k(1_000_000 + i), i);
        }
        next.save().unwrap();
        let bytes = std::fs::metadata(&path).unwrap().len() as usize;
        assert_eq!(bytes, HEADER + MAX_ENTRIES * ENTRY + CHECKSUM);
        let mut last = TokenCache::open(&path);
        assert_eq!(
            last.get(&k(7)),
            Some(7),
            "a count the last run used was dropped"
        );
        assert_eq!(last.get(&k(1_000_099)), Some(99));
    }
}
