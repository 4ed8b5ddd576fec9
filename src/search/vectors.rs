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
//! `token-counts.bin`) is read whole and checked: format magic, version,
//! dimension, length, key order, every component finite, and a SHA-256
//! checksum; a file that fails any check is ignored and rewritten, never
//! trusted. It is written to a temporary file beside it and renamed, so
//! concurrent runs see the old file or a new one, never a mix; a run that
//! writes merges what another wrote meanwhile. It holds at most
//! [`MAX_ENTRIES`] vectors (1,556 bytes each: 16-byte key, generation,
//! 384 × f32), dropping those no run has used for longest.
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
use crate::error::Error;
use rustc_hash::FxHashMap as HashMap;
use sha2::{Digest, Sha256};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

/// Vectors the file keeps at most; past it, the least recently used go.
/// 32,768 vectors are a 51 MB file: three catalogs of 10,000 tools fit.
pub const MAX_ENTRIES: usize = 1 << 15;

/// The cache file's name inside the cache directory.
pub const FILE_NAME: &str = "vectors.bin";

/// Threads that encode a build's missing texts, at most.
pub const ENCODE_THREADS: usize = 2;

const MAGIC: &[u8; 8] = b"MSTRVECS";
/// Bump when the layout or the keys change; files of another version are
/// ignored.
const VERSION: u32 = 1;
const HEADER: usize = 8 + 4 + 4 + 4 + 4;
const KEY_LEN: usize = 16;
const ENTRY: usize = KEY_LEN + 4 + 4 * DIM;
const CHECKSUM: usize = 32;

/// What a vector is stored under: the first 16 bytes of a SHA-256 over
/// the model, the arithmetic, muster's version and the text.
pub type Key = [u8; KEY_LEN];

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

#[derive(Debug, Clone)]
struct Slot {
    vector: Vector,
    /// The save that last used it (a counter kept in the file).
    generation: u32,
    /// Read or added by this run.
    used: bool,
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
    for (key, slot) in std::mem::take(&mut shared.entries) {
        file.entries.entry(key).or_insert(slot);
        file.added = true;
    }
    *shared = file;
}

/// Vectors by key, optionally backed by a file.
#[derive(Debug, Clone, Default)]
pub struct VectorCache {
    path: Option<PathBuf>,
    entries: HashMap<Key, Slot>,
    generation: u32,
    added: bool,
    encoded: usize,
}

impl VectorCache {
    /// A cache that lives only as long as the value: nothing is read or
    /// written. Keep one to encode each text once per process.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// The cache kept in `path`. A missing, unreadable, corrupt, truncated
    /// or foreign file reads as an empty cache (and is replaced by
    /// [`VectorCache::save`]); opening never fails.
    pub fn open(path: &Path) -> Self {
        let (generation, entries) = read(path).unwrap_or_default();
        Self {
            path: Some(path.to_path_buf()),
            entries: entries
                .into_iter()
                .map(|(key, generation, vector)| {
                    let slot = Slot {
                        vector,
                        generation,
                        used: false,
                    };
                    (key, slot)
                })
                .collect(),
            generation,
            added: false,
            encoded: 0,
        }
    }

    /// The file backing it, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Vectors held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no vector.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
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
        let slot = self.entries.get_mut(key)?;
        slot.used = true;
        Some(slot.vector.clone())
    }

    fn insert_key(&mut self, key: Key, vector: Vector) {
        self.added = true;
        let generation = self.generation;
        let slot = Slot {
            vector,
            generation,
            used: true,
        };
        self.entries.insert(key, slot);
    }

    /// The vector of each text, in order: cached ones read, the others
    /// encoded (each distinct text once, on up to [`ENCODE_THREADS`]
    /// threads; a vector does not depend on the thread) and added.
    pub fn vectors(&mut self, texts: &[&str]) -> Vec<Vector> {
        let keys: Vec<Key> = texts.iter().map(|t| key(t)).collect();
        let mut missing: Vec<(Key, &str)> = keys
            .iter()
            .zip(texts)
            .filter(|(k, _)| !self.entries.contains_key(*k))
            .map(|(k, t)| (*k, *t))
            .collect();
        missing.sort_unstable_by_key(|m| m.0);
        missing.dedup_by_key(|m| m.0);
        self.encoded += missing.len();
        for (k, v) in encode_all(&missing) {
            self.insert_key(k, v);
        }
        keys.iter()
            .map(|k| self.get_key(k).expect("every key was just cached"))
            .collect()
    }

    /// Writes the vectors to the file when this run added any; vectors
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
        let mut merged: HashMap<Key, (u32, Vector)> = on_disk
            .into_iter()
            .map(|(key, g, vector)| (key, (g, vector)))
            .collect();
        for (key, slot) in &self.entries {
            let g = if slot.used {
                generation
            } else {
                slot.generation
            };
            let entry = merged.entry(*key).or_insert((g, slot.vector.clone()));
            entry.0 = entry.0.max(g);
        }
        let mut entries: Entries = merged.into_iter().map(|(k, (g, v))| (k, g, v)).collect();
        if entries.len() > MAX_ENTRIES {
            // Most recently used first; the key settles ties.
            entries.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            entries.truncate(MAX_ENTRIES);
        }
        entries.sort_unstable_by_key(|e| e.0);
        write(&path, &encode(generation, &entries))?;
        self.generation = generation;
        self.added = false;
        Ok(())
    }
}

/// Encodes `texts` on up to [`ENCODE_THREADS`] threads, each a contiguous
/// share; the result is in the input's order.
fn encode_all(texts: &[(Key, &str)]) -> Vec<(Key, Vector)> {
    let encode = |share: &[(Key, &str)]| -> Vec<(Key, Vector)> {
        let encoder = Encoder::get();
        share
            .iter()
            .map(|(k, t)| (*k, Vector::from(encoder.embed(t))))
            .collect()
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(ENCODE_THREADS)
        .min(texts.len());
    if threads <= 1 {
        return encode(texts);
    }
    // Load the model once, before the threads race for it.
    Encoder::get();
    let share = texts.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = texts
            .chunks(share)
            .map(|chunk| s.spawn(move || encode(chunk)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

type Entries = Vec<(Key, u32, Vector)>;

fn encode(generation: u32, entries: &[(Key, u32, Vector)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + entries.len() * ENTRY + CHECKSUM);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    out.extend_from_slice(&(DIM as u32).to_le_bytes());
    for (key, g, vector) in entries {
        out.extend_from_slice(key);
        out.extend_from_slice(&g.to_le_bytes());
        for x in vector.iter() {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    let checksum = Sha256::digest(&out);
    out.extend_from_slice(&checksum);
    out
}

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
    if bytes.get(..8)? != MAGIC || u32_at(8)? != VERSION || u32_at(20)? != DIM as u32 {
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
        let g = u32::from_le_bytes(chunk[KEY_LEN..KEY_LEN + 4].try_into().ok()?);
        let vector: Vec<f32> = chunk[KEY_LEN + 4..]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if !vector.iter().all(|x| x.is_finite()) {
            return None;
        }
        entries.push((key, g, Vector::from(vector)));
    }
    // Written sorted with each key once; anything else was not written here.
    if entries.windows(2).any(|w| w[0].0 >= w[1].0) {
        return None;
    }
    Some((generation, entries))
}

/// Replaces `path` through a temporary file in the same directory. No
/// fsync: a cache lost or torn by a crash fails its checksum and is
/// rebuilt.
fn write(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".vectors.")
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
        let mut again = VectorCache::open(&path);
        assert_eq!(again.len(), 2);
        assert_eq!(got(&mut again, 1), Some(v(1)));
        let back = again.get("odd").unwrap();
        let bits = |v: &Vector| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&odd));
        assert_eq!(got(&mut again, 3), None);
        assert_eq!(
            std::fs::metadata(&path).unwrap().len() as usize,
            HEADER + 2 * ENTRY + CHECKSUM
        );
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

    #[test]
    fn any_damaged_file_reads_as_empty_and_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut good = VectorCache::open(&path);
        for i in 0..3 {
            put(&mut good, i);
        }
        good.save().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(VectorCache::open(&path).len(), 3);

        let resum = |mut body: Vec<u8>| {
            let sum = Sha256::digest(&body);
            body.extend_from_slice(&sum);
            body
        };
        let body = bytes[..bytes.len() - CHECKSUM].to_vec();
        let mut damaged: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"not a cache at all".to_vec(),
            bytes[..bytes.len() - 1].to_vec(),
            bytes[..HEADER].to_vec(),
            bytes[..HEADER + ENTRY].to_vec(),
            [bytes.clone(), vec![0]].concat(),
        ];
        // Flipped bytes in the header, a key, a vector and the checksum.
        for at in (0..HEADER)
            .chain([HEADER, HEADER + KEY_LEN + 5, HEADER + ENTRY + 100])
            .chain(bytes.len() - CHECKSUM..bytes.len())
        {
            let mut b = bytes.clone();
            b[at] ^= 0x20;
            damaged.push(b);
        }
        // Another version, checksum made right.
        let mut other = body.clone();
        other[8..12].copy_from_slice(&(VERSION + 1).to_le_bytes());
        damaged.push(resum(other));
        // Another dimension, checksum made right.
        let mut other = body.clone();
        other[20..24].copy_from_slice(&(DIM as u32 * 2).to_le_bytes());
        damaged.push(resum(other));
        // Entries out of order, checksum made right.
        let mut swapped = body.clone();
        let (a, b) = (HEADER, HEADER + ENTRY);
        let first = swapped[a..b].to_vec();
        let second = swapped[b..b + ENTRY].to_vec();
        swapped[a..b].copy_from_slice(&second);
        swapped[b..b + ENTRY].copy_from_slice(&first);
        damaged.push(resum(swapped));
        // A NaN component, checksum made right.
        let mut nan = body.clone();
        let at = HEADER + KEY_LEN + 4;
        nan[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
        damaged.push(resum(nan));

        for (n, bad) in damaged.iter().enumerate() {
            std::fs::write(&path, bad).unwrap();
            let mut cache = VectorCache::open(&path);
            assert!(cache.is_empty(), "damaged file {n} was trusted");
            put(&mut cache, 9);
            cache.save().unwrap();
            let mut again = VectorCache::open(&path);
            assert_eq!(again.len(), 1, "damaged file {n}");
            assert_eq!(got(&mut again, 9), Some(v(9)), "damaged file {n}");
        }
    }

    #[test]
    fn a_save_keeps_what_another_run_saved_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut a = VectorCache::open(&path);
        let mut b = VectorCache::open(&path);
        put(&mut a, 1);
        put(&mut b, 2);
        a.save().unwrap();
        b.save().unwrap();
        let mut both = VectorCache::open(&path);
        assert_eq!(
            (got(&mut both, 1), got(&mut both, 2)),
            (Some(v(1)), Some(v(2)))
        );
    }

    #[test]
    fn concurrent_saves_leave_a_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::thread::scope(|s| {
            for t in 0..6u32 {
                let path = &path;
                s.spawn(move || {
                    for round in 0..8u32 {
                        let mut c = VectorCache::open(path);
                        put(&mut c, t * 1000 + round);
                        c.save().unwrap();
                        // Whatever is there now is a valid cache.
                        assert!(read(path).is_some());
                    }
                });
            }
        });
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1, "temporary files left behind");
        // Each run's last save merged what it read; the last writer's
        // vectors are all there, and every vector kept is the right one.
        let mut last = VectorCache::open(&path);
        assert!(last.len() >= 8);
        for t in 0..6 {
            for round in 0..8 {
                let i = t * 1000 + round;
                if let Some(found) = got(&mut last, i) {
                    assert_eq!(found, v(i));
                }
            }
        }
    }

    #[test]
    fn the_file_stays_bounded_and_keeps_what_the_last_run_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut old = VectorCache::open(&path);
        for i in 0..MAX_ENTRIES as u32 {
            put(&mut old, i);
        }
        old.save().unwrap();
        let mut next = VectorCache::open(&path);
        assert_eq!(got(&mut next, 7), Some(v(7)));
        for i in 0..100 {
            put(&mut next, 1_000_000 + i);
        }
        next.save().unwrap();
        let bytes = std::fs::metadata(&path).unwrap().len() as usize;
        assert_eq!(bytes, HEADER + MAX_ENTRIES * ENTRY + CHECKSUM);
        let mut last = VectorCache::open(&path);
        assert_eq!(
            got(&mut last, 7),
            Some(v(7)),
            "a vector the last run used was dropped"
        );
        assert_eq!(got(&mut last, 1_000_099), Some(v(1_000_099)));
    }
}
