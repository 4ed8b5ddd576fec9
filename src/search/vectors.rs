//! The vector cache: each tool text's dense vector ([`super::encoder`])
//! kept between runs, so a session, a `muster` run or a new generation of
//! the service encodes a tool definition once, not once per process.
//!
//! A vector is stored under a key that hashes everything it depends on:
//! the model's identity ([`encoder::MODEL_ID`], a digest of its weights and
//! vocabulary), the arithmetic that ran it ([`encoder::ARITHMETIC`]),
//! muster's version, and the exact text encoded. The forward pass gives the
//! same bits on every CPU, so a cached vector is the vector this run would
//! compute, and the cache cannot change a ranking.
//!
//! The file (`vectors.bin`, [`FILE_NAME`], beside the token-count cache's
//! `token-counts.bin`) is a table of muster's checked cache files
//! ([`crate::cache_file`]): a run reads only the vectors it looks up,
//! whatever else the file holds, each vector checked (and every component
//! finite); a damaged one is encoded again, never trusted. Concurrent runs
//! lose nothing, and the table keeps at most [`MAX_ENTRIES`] vectors
//! (1,564 bytes each: key, generation, 384 × f32, check), dropping those no
//! run has used for longest.
//!
//! Use: open it where the token cache is opened, hand it to
//! [`super::Index::build_mixed`], then [`VectorCache::save`]:
//!
//! ```no_run
//! use muster::search::{Entry, Index, vectors::{self, VectorCache}};
//! # let dir = std::path::Path::new("/tmp");
//! # let entries: Vec<Entry<'_>> = Vec::new();
//! let mut cache = VectorCache::open(&dir.join(vectors::FILE_NAME));
//! let index = Index::build_mixed(entries, &mut cache);
//! let _ = cache.save(); // a cache that cannot be written costs time only
//! ```
//!
//! This module never reads the environment: the caller says where the file
//! lives. It decides nothing about rankings.

use super::encoder::{self, DIM, Encoder, Vector};
use crate::cache_file::{self, Kind, Table};
use crate::error::Error;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::{Mutex, OnceLock, PoisonError};

/// Vectors the file keeps at most; past it, the least recently used go.
/// 32,768 vectors are a 51 MB file: three catalogs of 10,000 tools fit.
pub const MAX_ENTRIES: usize = 1 << 15;

/// Vectors a run appends to the journal before they are merged into the
/// file ([`cache_file`]): 1.6 MB.
pub const MAX_JOURNAL: usize = 1 << 10;

/// The cache file's name inside the cache directory.
pub const FILE_NAME: &str = "vectors.bin";

/// Threads that encode a build's missing texts, at most.
pub const ENCODE_THREADS: usize = 2;

/// The table's layout. Version 2: a checked table read by lookups (1 was
/// one checked block read whole).
pub const KIND: Kind = Kind {
    magic: *b"MSTRVECS",
    version: 2,
    payload: 4 * DIM,
    max_entries: MAX_ENTRIES,
    max_journal: MAX_JOURNAL,
};

const KEY_LEN: usize = cache_file::KEY_LEN;

/// What a vector is stored under: the first 16 bytes of a SHA-256 over
/// the model, the arithmetic, muster's version and the text.
pub type Key = cache_file::Key;

/// The key of `text`'s vector.
pub fn key(text: &str) -> Key {
    let mut h = Sha256::new();
    h.update(b"muster-dense-vector\0");
    for part in [
        env!("CARGO_PKG_VERSION"),
        encoder::MODEL_ID,
        encoder::ARITHMETIC,
        text,
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    let digest = h.finalize();
    let mut key = [0; KEY_LEN];
    key.copy_from_slice(&digest[..KEY_LEN]);
    key
}

/// The process's vector cache: in memory until [`use_file`] backs it with
/// a file. The control tool's indexes ([`super::DeferredIndex`]) read and
/// fill it, so a process encodes each text once and, with a file, once
/// across processes. A vector depends on its text alone, so sharing it
/// cannot change a ranking.
pub fn shared() -> &'static Mutex<VectorCache> {
    static SHARED: OnceLock<Mutex<VectorCache>> = OnceLock::new();
    SHARED.get_or_init(|| Mutex::new(VectorCache::in_memory()))
}

/// Backs [`shared`] with the file at `path` (`vectors.bin` in the cache
/// directory), read now; what the process had cached in memory is kept
/// and saved with it.
pub fn use_file(path: &Path) {
    let mut shared = shared().lock().unwrap_or_else(PoisonError::into_inner);
    let mut file = VectorCache::open(path);
    file.table.take_pending(&mut shared.table);
    file.encoded = shared.encoded;
    *shared = file;
}

/// Vectors by key, optionally backed by a file.
#[derive(Debug, Clone)]
pub struct VectorCache {
    table: Table,
    encoded: usize,
}

impl Default for VectorCache {
    fn default() -> Self {
        Self::in_memory()
    }
}

impl VectorCache {
    /// A cache that lives only as long as the value: nothing is read or
    /// written. Keep one to encode each text once per process.
    pub fn in_memory() -> Self {
        Self {
            table: Table::in_memory(KIND),
            encoded: 0,
        }
    }

    /// The cache kept in `path`. A missing, unreadable, corrupt, truncated
    /// or foreign file reads as vectors missing (encoded again, and saved
    /// by [`VectorCache::save`]); opening never fails.
    pub fn open(path: &Path) -> Self {
        Self {
            table: Table::open(KIND, path),
            encoded: 0,
        }
    }

    /// The file backing it, if any.
    pub fn path(&self) -> Option<&Path> {
        self.table.path()
    }

    /// Vectors held, at most (one in two of the table's places counts
    /// twice).
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether it holds no vector.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Texts this value encoded (those it did not find), for metrics and
    /// tests.
    pub fn encoded(&self) -> usize {
        self.encoded
    }

    /// The vector of `text`, if cached.
    pub fn get(&mut self, text: &str) -> Option<Vector> {
        self.get_key(&key(text))
    }

    fn get_key(&mut self, key: &Key) -> Option<Vector> {
        let payload = self.table.get(key)?;
        let vector: Vector = payload
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        // A vector is finite; anything else was not written by an encoder.
        vector.iter().all(|x| x.is_finite()).then_some(vector)
    }

    /// Adds `text`'s vector as if the encoder had made it: to measure
    /// another encoder's vectors in muster's ranking
    /// (`examples/search_rank.rs --vectors`). Never saved unless
    /// [`VectorCache::save`] is called.
    #[doc(hidden)]
    pub fn insert(&mut self, text: &str, vector: Vector) {
        self.insert_key(key(text), vector);
    }

    fn insert_key(&mut self, key: Key, vector: Vector) {
        let mut payload = Vec::with_capacity(4 * DIM);
        for x in vector.iter() {
            payload.extend_from_slice(&x.to_le_bytes());
        }
        self.table.insert(key, payload);
    }

    /// The vector of each text, in order: cached ones read, the others
    /// encoded (each distinct text once, on up to [`ENCODE_THREADS`]
    /// threads; a vector does not depend on the thread) and added.
    pub fn vectors(&mut self, texts: &[&str]) -> Vec<Vector> {
        let keys: Vec<Key> = texts.iter().map(|t| key(t)).collect();
        let found: Vec<Option<Vector>> = keys.iter().map(|k| self.get_key(k)).collect();
        let mut missing: Vec<(Key, &str)> = keys
            .iter()
            .zip(texts)
            .zip(&found)
            .filter(|(_, f)| f.is_none())
            .map(|((k, t), _)| (*k, *t))
            .collect();
        missing.sort_unstable_by_key(|m| m.0);
        missing.dedup_by_key(|m| m.0);
        self.encoded += missing.len();
        let fresh: rustc_hash::FxHashMap<Key, Vector> = encode_all(&missing).into_iter().collect();
        for (k, v) in &fresh {
            self.insert_key(*k, v.clone());
        }
        keys.iter()
            .zip(found)
            .map(|(k, f)| f.unwrap_or_else(|| fresh[k].clone()))
            .collect()
    }

    /// Writes the vectors this run added (or used again) to the file;
    /// vectors another run saved meanwhile are kept. Does nothing for an
    /// in-memory cache or a run that added nothing.
    ///
    /// # Errors
    /// [`crate::ErrorKind::Io`] naming the file when its directory cannot be
    /// created or the file cannot be written; the file stays valid.
    pub fn save(&mut self) -> Result<(), Error> {
        self.table.save()
    }
}

/// Texts a thread takes at a time ([`encode_all`]): several of the
/// encoder's batches, and small enough that a thread slowed by other work
/// on the machine leaves the rest to the other.
const SHARE: usize = 64;

/// Encodes `texts` on up to [`ENCODE_THREADS`] threads, each taking the
/// next [`SHARE`] texts while any are left and encoding them in batches
/// ([`Encoder::embed_batch`]: the same bits as one at a time, for less);
/// the result is in the input's order, whichever thread encoded what.
fn encode_all(texts: &[(Key, &str)]) -> Vec<(Key, Vector)> {
    let encode = |share: &[(Key, &str)]| -> Vec<(Key, Vector)> {
        let batch: Vec<&str> = share.iter().map(|(_, t)| *t).collect();
        let vectors = Encoder::get().embed_batch(&batch);
        share
            .iter()
            .zip(vectors)
            .map(|((k, _), v)| (*k, Vector::from(v)))
            .collect()
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(ENCODE_THREADS)
        .min(texts.len().div_ceil(SHARE));
    if threads <= 1 {
        return encode(texts);
    }
    // Load the model once, before the threads race for it.
    Encoder::get();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let share = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(chunk) = texts.chunks(SHARE).nth(share) else {
                return done;
            };
            done.push((share, encode(chunk)));
        }
    };
    let mut shares: Vec<(usize, Vec<(Key, Vector)>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    shares.sort_unstable_by_key(|(share, _)| *share);
    shares.into_iter().flat_map(|(_, v)| v).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A made-up unit-length-ish vector for text `i` (the cache stores
    /// whatever it is given; these tests need no model).
    fn v(i: u32) -> Vector {
        (0..DIM).map(|d| (i as f32) + d as f32 / 1000.0).collect()
    }

    fn put(cache: &mut VectorCache, i: u32) {
        cache.insert_key(key(&i.to_string()), v(i));
    }

    fn got(cache: &mut VectorCache, i: u32) -> Option<Vector> {
        cache.get(&i.to_string())
    }

    #[test]
    fn vectors_survive_a_save_and_open_bit_for_bit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join(FILE_NAME);
        let mut cache = VectorCache::open(&path);
        assert!(cache.is_empty());
        put(&mut cache, 1);
        // Values whose bits a text round trip could lose.
        let odd: Vector = (0..DIM)
            .map(|d| f32::from_bits(0x3e4c_cccd + d as u32) * if d % 2 == 0 { -1.0 } else { 1.0 })
            .collect();
        cache.insert_key(key("odd"), odd.clone());
        cache.save().unwrap();
        for compacted in [false, true] {
            if compacted {
                Table::open(KIND, &path).compact().unwrap();
            }
            let mut again = VectorCache::open(&path);
            assert_eq!(again.len(), 2);
            assert_eq!(got(&mut again, 1), Some(v(1)));
            let back = again.get("odd").unwrap();
            let bits = |v: &Vector| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&back), bits(&odd));
            assert_eq!(got(&mut again, 3), None);
        }
        assert_eq!(cache_file::stats(&KIND, &path).base_records, 2);
    }

    #[test]
    fn a_vector_that_is_not_finite_is_not_trusted() {
        let mut cache = VectorCache::in_memory();
        let bad: Vector = (0..DIM)
            .map(|d| if d == 7 { f32::NAN } else { 0.5 })
            .collect();
        cache.insert_key(key("bad"), bad);
        assert_eq!(cache.get("bad"), None);
    }

    #[test]
    fn a_run_that_adds_nothing_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut cache = VectorCache::open(&path);
        assert_eq!(cache.get("anything"), None);
        cache.save().unwrap();
        assert!(!path.exists());
        // In memory: never written.
        let mut memory = VectorCache::in_memory();
        put(&mut memory, 1);
        memory.save().unwrap();
        assert_eq!(memory.path(), None);
    }

    #[test]
    fn the_key_covers_the_model_the_arithmetic_and_the_exact_text() {
        assert_eq!(key("read a file"), key("read a file"));
        for other in ["read a file ", "Read a file", "read  a file", ""] {
            assert_ne!(key("read a file"), key(other), "{other:?}");
        }
        // The model and the arithmetic are hashed in: a text hashed
        // without them (as an older layout might have) is another key.
        let bare: [u8; 32] = Sha256::digest(b"read a file").into();
        assert_ne!(key("read a file")[..], bare[..KEY_LEN]);
        assert!(encoder::MODEL_ID.starts_with("sha256:"));
    }
}
