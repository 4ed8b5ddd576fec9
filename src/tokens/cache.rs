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
//! never rendered at all. The file is a table of muster's checked cache
//! files ([`crate::cache_file`]): a run reads only the counts it looks up,
//! whatever else the file holds, each count checked; a damaged count is
//! recounted, never trusted. Concurrent runs lose nothing, and the table
//! keeps at most [`MAX_ENTRIES`] counts, dropping those no run has used
//! for longest.
//!
//! This module never reads the environment: the caller says where the file
//! lives. It decides nothing about plans.

use crate::cache_file::{self, Kind, Table};
use crate::error::Error;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Counts the file keeps at most; past it, the least recently used go.
/// 262,144 entries are an 8 MiB file: two catalogs of 100,000 tools fit.
pub const MAX_ENTRIES: usize = 1 << 18;

/// Counts a run appends to the journal before they are merged into the
/// file ([`cache_file`]): 128 KiB.
pub const MAX_JOURNAL: usize = 1 << 12;

/// The cache file's name inside the cache directory.
pub const FILE_NAME: &str = "token-counts.bin";

/// The table's layout. Version 3: a checked table read by lookups (2 was
/// one checked block read whole).
pub const KIND: Kind = Kind {
    magic: *b"MSTRTOKC",
    version: 3,
    payload: 4,
    max_entries: MAX_ENTRIES,
    max_journal: MAX_JOURNAL,
};

const KEY_LEN: usize = cache_file::KEY_LEN;

/// What a count is stored under: the first 16 bytes of a SHA-256 over the
/// encoding, the rendering and the definition.
pub type Key = cache_file::Key;

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

/// Token counts by key, optionally backed by a file.
#[derive(Debug, Clone)]
pub struct TokenCache {
    table: Table,
}

impl Default for TokenCache {
    fn default() -> Self {
        Self::in_memory()
    }
}

impl TokenCache {
    /// A cache that lives only as long as the value: nothing is read or
    /// written.
    pub fn in_memory() -> Self {
        Self {
            table: Table::in_memory(KIND),
        }
    }

    /// The cache kept in `path`. A missing, unreadable, corrupt, truncated
    /// or foreign file reads as counts missing (recounted, and saved by
    /// [`TokenCache::save`]); opening never fails.
    pub fn open(path: &Path) -> Self {
        Self {
            table: Table::open(KIND, path),
        }
    }

    /// The file backing it, if any.
    pub fn path(&self) -> Option<&Path> {
        self.table.path()
    }

    /// Counts held, at most (a count in two of the table's places counts
    /// twice).
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether it holds no count.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The count stored under `key`.
    pub fn get(&mut self, key: &Key) -> Option<u32> {
        let payload = self.table.get(key)?;
        Some(u32::from_le_bytes(payload.as_slice().try_into().ok()?))
    }

    /// Stores a fresh count.
    pub fn insert(&mut self, key: Key, tokens: u32) {
        self.table.insert(key, tokens.to_le_bytes().to_vec());
    }

    /// Writes the counts this run added (or used again) to the file;
    /// counts another run saved meanwhile are kept. Does nothing for an
    /// in-memory cache or a run that added nothing.
    ///
    /// # Errors
    /// [`crate::ErrorKind::Io`] naming the file when its directory cannot be
    /// created or the file cannot be written; the file stays valid.
    pub fn save(&mut self) -> Result<(), Error> {
        self.table.save()
    }
}

#[cfg(test)]
mod tests {
    //! The table's own rules (damage, bounds, concurrent runs) are tested
    //! in `cache_file`; here, what the token cache adds: its keys and its
    //! payload.
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
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
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
    fn a_damaged_file_never_gives_a_wrong_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut cache = TokenCache::open(&path);
        for i in 0..10 {
            cache.insert(k(i), i);
        }
        cache.save().unwrap();
        cache_file::Table::open(KIND, &path).compact().unwrap();
        let good = std::fs::read(&path).unwrap();
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x20;
            std::fs::write(&path, &bad).unwrap();
            let mut cache = TokenCache::open(&path);
            for i in 0..10 {
                let got = cache.get(&k(i));
                assert!(
                    got.is_none() || got == Some(i),
                    "byte {at}: {got:?} for {i}"
                );
            }
        }
    }

    #[test]
    fn the_file_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut cache = TokenCache::open(&path);
        for i in 0..(MAX_ENTRIES + 1000) as u32 {
            cache.insert(k(i), i);
        }
        cache.save().unwrap();
        let stats = cache_file::stats(&KIND, &path);
        assert_eq!(stats.base_records, MAX_ENTRIES as u64);
        assert_eq!(stats.journal_records, 0);
    }
}
