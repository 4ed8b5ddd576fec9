//! muster's checked cache files: fixed-size records under 16-byte keys,
//! kept between runs so that work already done (a definition's token
//! count, a text's vector) is not done again. The token-count cache
//! ([`crate::tokens::cache`]) and the vector cache
//! ([`crate::search::vectors`]) are two tables of this one kind.
//!
//! What it decides: how a table is laid out, read, checked, merged and
//! bounded. What it must not do: decide what a record means, read the
//! environment (the caller names the file) or ever fail a command: a
//! missing, foreign, truncated or damaged file reads as records missing,
//! and the work is done again.
//!
//! **Cost follows the work, not the table.** A table is two files:
//! - the *base* (`NAME`), records sorted by key behind a checked header. A
//!   lookup reads the header once, then a few small windows found by
//!   interpolation (keys are SHA-256 prefixes, so evenly spread): the
//!   same few reads at 50 records or at a million;
//! - the *journal* (`NAME.journal`), records a run added or used since the
//!   base was written, appended at the end of the run; at most
//!   [`Kind::max_journal`] records are kept there before they are merged
//!   into the base (a *compaction*, the one step whose cost follows the
//!   table's size, paid when that much new work has been done).
//!
//! **Checked per record.** Every record carries 8 bytes of a SHA-256 over
//! the table's magic, its key, its generation and its payload; a record
//! that fails its check is not a hit, and is dropped at the next
//! compaction. So one flipped byte costs one recount, not the table.
//!
//! **Bounded.** The base holds at most [`Kind::max_entries`] records: a
//! compaction keeps those used most recently (the generation a record was
//! last written or used under; the key settles ties). A run that reads a
//! record the base holds under an older generation than the base's own
//! appends it to the journal again, so records in use survive.
//!
//! **Concurrent runs.** Appends to the journal are single `write` calls
//! under a shared `flock` on the journal; a compaction holds it
//! exclusively, writes the base through a temporary file and a rename,
//! then empties the journal. Readers take no lock: an old base stays
//! readable through its open handle, and a record seen twice is the same
//! record.

use crate::error::Error;
use sha2::{Digest, Sha256};
// Keys are SHA-256 prefixes already, so the fast hasher spreads them as
// well as SipHash does.
use rustc_hash::FxHashMap as HashMap;
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

/// Bytes of a key.
pub const KEY_LEN: usize = 16;

/// What a record is stored under: the first bytes of a SHA-256 over
/// everything the payload depends on.
pub type Key = [u8; KEY_LEN];

/// Bytes of a record's check.
const CHECK: usize = 8;
/// magic (8), layout version (4), payload bytes (4), records (8),
/// generation (4), reserved (4), check over the 32 bytes before it (8).
const HEADER: usize = 40;
/// Bytes read per probe of the base, at least one record.
const WINDOW_BYTES: usize = 4096;
/// The journal's suffix beside the base's name.
pub const JOURNAL_SUFFIX: &str = ".journal";

/// One table's layout and bounds.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// The format's magic, first in the base.
    pub magic: [u8; 8],
    /// Bump when the layout or the keys change: a base of another version
    /// is not read, and its journal's records fail their checks.
    pub version: u32,
    /// Bytes of each record's payload.
    pub payload: usize,
    /// Records the base keeps at most.
    pub max_entries: usize,
    /// Records the journal takes before a compaction.
    pub max_journal: usize,
}

impl Kind {
    fn record(&self) -> usize {
        KEY_LEN + 4 + self.payload + CHECK
    }

    fn check(&self, key: &Key, generation: u32, payload: &[u8]) -> [u8; CHECK] {
        let mut h = Sha256::new();
        h.update(self.magic);
        h.update(self.version.to_le_bytes());
        h.update(key);
        h.update(generation.to_le_bytes());
        h.update(payload);
        let digest = h.finalize();
        let mut out = [0; CHECK];
        out.copy_from_slice(&digest[..CHECK]);
        out
    }

    fn encode(&self, key: &Key, generation: u32, payload: &[u8], out: &mut Vec<u8>) {
        debug_assert_eq!(payload.len(), self.payload);
        out.extend_from_slice(key);
        out.extend_from_slice(&generation.to_le_bytes());
        out.extend_from_slice(payload);
        out.extend_from_slice(&self.check(key, generation, payload));
    }

    /// The record in `bytes` (one record long) when its check holds.
    fn decode<'a>(&self, bytes: &'a [u8]) -> Option<(Key, u32, &'a [u8])> {
        let key: Key = bytes.get(..KEY_LEN)?.try_into().ok()?;
        let generation = u32::from_le_bytes(bytes.get(KEY_LEN..KEY_LEN + 4)?.try_into().ok()?);
        let payload = bytes.get(KEY_LEN + 4..KEY_LEN + 4 + self.payload)?;
        let check = bytes.get(KEY_LEN + 4 + self.payload..self.record())?;
        (check == self.check(&key, generation, payload)).then_some((key, generation, payload))
    }

    fn header(&self, records: u64, generation: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER);
        out.extend_from_slice(&self.magic);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(self.payload as u32).to_le_bytes());
        out.extend_from_slice(&records.to_le_bytes());
        out.extend_from_slice(&generation.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        let check = Sha256::digest(&out);
        out.extend_from_slice(&check[..CHECK]);
        out
    }
}

/// A base opened for lookups: its records and the generation it was
/// written under.
#[derive(Debug)]
struct Base {
    file: File,
    records: u64,
    generation: u32,
}

/// What [`Table::stats`] reports of a table's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Records the base holds.
    pub base_records: u64,
    /// Records waiting in the journal.
    pub journal_records: u64,
    /// Bytes of both files.
    pub bytes: u64,
}

/// A cache table: a base and a journal read on demand, and the records
/// this run added or used.
#[derive(Debug)]
pub struct Table {
    kind: Kind,
    path: Option<PathBuf>,
    base: Option<Base>,
    /// The journal as read at open: its records by key (offset into
    /// `journal_bytes`), checked when read.
    journal: HashMap<Key, usize>,
    journal_bytes: Vec<u8>,
    /// Records to append at [`Table::save`]: added by this run, or read
    /// from the base under an older generation than the base's.
    pending: HashMap<Key, Vec<u8>>,
    /// Records this value saved, still found by a long-lived value (a
    /// service's) after the save; at most [`Kind::max_entries`].
    saved: HashMap<Key, Vec<u8>>,
}

impl Clone for Table {
    /// The same records; a base whose file cannot be opened again is left
    /// out (its records become misses, never wrong).
    fn clone(&self) -> Self {
        Self {
            kind: self.kind,
            path: self.path.clone(),
            base: self.base.as_ref().and_then(|b| {
                Some(Base {
                    file: b.file.try_clone().ok()?,
                    records: b.records,
                    generation: b.generation,
                })
            }),
            journal: self.journal.clone(),
            journal_bytes: self.journal_bytes.clone(),
            pending: self.pending.clone(),
            saved: self.saved.clone(),
        }
    }
}

impl Table {
    /// A table that lives only as long as the value.
    pub fn in_memory(kind: Kind) -> Self {
        Self {
            kind,
            path: None,
            base: None,
            journal: HashMap::default(),
            journal_bytes: Vec::new(),
            pending: HashMap::default(),
            saved: HashMap::default(),
        }
    }

    /// The table whose base is `path`. Reads the base's header and the
    /// journal; anything missing, foreign or damaged reads as absent.
    /// Opening never fails.
    pub fn open(kind: Kind, path: &Path) -> Self {
        let mut table = Self::in_memory(kind);
        table.path = Some(path.to_path_buf());
        table.base = open_base(&kind, path);
        table.journal_bytes = read_journal(&kind, &journal_path(path));
        let record = kind.record();
        for (at, chunk) in table.journal_bytes.chunks_exact(record).enumerate() {
            if let Ok(key) = Key::try_from(&chunk[..KEY_LEN]) {
                // The last record of a key: one appended after a damaged
                // one replaces it.
                table.journal.insert(key, at * record);
            }
        }
        table
    }

    /// The base's file, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Records the files and this run hold, counting a key in two places
    /// twice (a bound for stats and tests, not an exact count).
    pub fn len(&self) -> usize {
        let base = self.base.as_ref().map_or(0, |b| b.records as usize);
        base + self.journal.len() + self.pending.len()
    }

    /// Whether no record is held anywhere.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The payload stored under `key`: this run's, the journal's, or the
    /// base's, each checked.
    pub fn get(&mut self, key: &Key) -> Option<Vec<u8>> {
        if let Some(payload) = self.pending.get(key).or_else(|| self.saved.get(key)) {
            return Some(payload.clone());
        }
        let record = self.kind.record();
        if let Some(&at) = self.journal.get(key) {
            let bytes = &self.journal_bytes[at..at + record];
            if let Some((k, _, payload)) = self.kind.decode(bytes)
                && k == *key
            {
                return Some(payload.to_vec());
            }
        }
        let base = self.base.as_ref()?;
        let (generation, payload) = find(&self.kind, base, key)?;
        if generation < base.generation {
            // In use again: keep it through the next compaction.
            self.pending.insert(*key, payload.clone());
        }
        Some(payload)
    }

    /// Stores a payload this run computed.
    pub fn insert(&mut self, key: Key, payload: Vec<u8>) {
        debug_assert_eq!(payload.len(), self.kind.payload);
        self.pending.insert(key, payload);
    }

    /// Moves `other`'s unsaved records into this table's, to be saved with
    /// its own.
    pub fn take_pending(&mut self, other: &mut Table) {
        self.pending.extend(other.pending.drain());
        self.pending.extend(other.saved.drain());
    }

    /// Whether [`Table::save`] has records to write.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Appends the records this run added or used again to the journal,
    /// and compacts when the journal is full. Does nothing for an
    /// in-memory table or a run with nothing to add.
    ///
    /// # Errors
    /// [`crate::ErrorKind::Io`] naming the file that could not be written;
    /// the files stay valid (a torn append fails its records' checks).
    pub fn save(&mut self) -> Result<(), Error> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        if self.pending.is_empty() {
            return Ok(());
        }
        let dir = parent(&path);
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
        let journal_path = journal_path(&path);
        let journal = open_journal(&journal_path)?;
        let generation = self
            .base
            .as_ref()
            .map_or(0, |b| b.generation)
            .wrapping_add(1);
        // Sorted, so the same run appends the same bytes.
        let mut pending: Vec<(&Key, &Vec<u8>)> = self.pending.iter().collect();
        pending.sort_unstable_by_key(|p| p.0);
        let mut bytes = Vec::with_capacity(pending.len() * self.kind.record());
        for (key, payload) in pending {
            self.kind.encode(key, generation, payload, &mut bytes);
        }
        let io = |e: std::io::Error| Error::io(&journal_path, &e);
        journal.lock_shared().map_err(io)?;
        let room = (self.kind.max_journal * self.kind.record()) as u64;
        let held = journal.metadata().map_err(io)?.len();
        // A journal that is not whole records (a torn append, or not
        // ours) is merged away rather than appended to out of step.
        let record = self.kind.record() as u64;
        let appended = held % record == 0 && held + bytes.len() as u64 <= room;
        if appended {
            (&journal).write_all(&bytes).map_err(io)?;
        }
        journal.unlock().map_err(io)?;
        if !appended {
            // The journal is full: merge it, and this run's records, into
            // the base.
            compact(&self.kind, &path, &journal, &bytes)?;
        }
        if self.saved.len() + self.pending.len() > self.kind.max_entries {
            self.saved.clear();
        }
        self.saved.extend(self.pending.drain());
        Ok(())
    }

    /// Merges the journal into the base now, whatever its size.
    ///
    /// # Errors
    /// As [`Table::save`].
    pub fn compact(&mut self) -> Result<(), Error> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        let dir = parent(&path);
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
        let journal = open_journal(&journal_path(&path))?;
        compact(&self.kind, &path, &journal, &[])
    }
}

/// The sizes of the table at `path`'s files, reading headers only.
pub fn stats(kind: &Kind, path: &Path) -> Stats {
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let journal = journal_path(path);
    Stats {
        base_records: open_base(kind, path).map_or(0, |b| b.records),
        journal_records: size(&journal) / kind.record() as u64,
        bytes: size(path) + size(&journal),
    }
}

/// Removes the table at `path` (base and journal), under the journal's
/// lock so no compaction is cut in half.
///
/// # Errors
/// [`crate::ErrorKind::Io`] naming a file that exists and cannot be
/// removed.
pub fn clear(path: &Path) -> Result<(), Error> {
    let journal_path = journal_path(path);
    let journal = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(&journal_path)
        .ok();
    if let Some(j) = &journal {
        j.lock().map_err(|e| Error::io(&journal_path, &e))?;
    }
    for p in [path, journal_path.as_path()] {
        match std::fs::remove_file(p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(p, &e)),
        }
    }
    Ok(())
}

/// Where the journal of the base at `path` lives.
pub fn journal_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(JOURNAL_SUFFIX);
    path.with_file_name(name)
}

/// The journal opened for appends (and reads), created if missing.
fn open_journal(path: &Path) -> Result<File, Error> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)
        .map_err(|e| Error::io(path, &e))
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

fn open_base(kind: &Kind, path: &Path) -> Option<Base> {
    let file = File::open(path).ok()?;
    let mut header = [0; HEADER];
    file.read_exact_at(&mut header, 0).ok()?;
    let records = u64::from_le_bytes(header[16..24].try_into().ok()?);
    let generation = u32::from_le_bytes(header[24..28].try_into().ok()?);
    if header[..] != kind.header(records, generation)[..] || records > kind.max_entries as u64 {
        return None;
    }
    let length = file.metadata().ok()?.len();
    (length == HEADER as u64 + records * kind.record() as u64).then_some(Base {
        file,
        records,
        generation,
    })
}

/// The journal's bytes, whole records only; at most 8 times what it
/// holds before a compaction (more is not ours to read; the rest are
/// misses until the next compaction).
fn read_journal(kind: &Kind, path: &Path) -> Vec<u8> {
    let Ok(file) = File::open(path) else {
        return Vec::new();
    };
    let most = (8 * kind.max_journal * kind.record()) as u64;
    let mut bytes = Vec::new();
    if file.take(most).read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    bytes.truncate(bytes.len() - bytes.len() % kind.record());
    bytes
}

fn prefix(key: &[u8]) -> u64 {
    u64::from_be_bytes(key[..8].try_into().unwrap_or_default())
}

/// The base's record under `key` (generation and payload), found by
/// interpolation over windows of records: keys are evenly spread, so the
/// first guess lands within a window or two of the record.
fn find(kind: &Kind, base: &Base, key: &Key) -> Option<(u32, Vec<u8>)> {
    let record = kind.record();
    let per_window = (WINDOW_BYTES / record).max(1) as u64;
    let target = prefix(key) as u128;
    // The records in [lo, hi) may hold the key; lo_key and hi_key bound
    // their prefixes.
    let (mut lo, mut hi) = (0u64, base.records);
    let (mut lo_key, mut hi_key) = (0u128, u128::from(u64::MAX) + 1);
    let mut window = vec![0; per_window as usize * record];
    // Interpolation halves at worst after a few probes; 64 ends any loop.
    for probe in 0..64 {
        if lo >= hi {
            return None;
        }
        let span = hi - lo;
        let guess = if probe < 4 && hi_key > lo_key {
            let within = target.saturating_sub(lo_key) * u128::from(span) / (hi_key - lo_key);
            lo + (within as u64).min(span - 1)
        } else {
            lo + span / 2
        };
        let start = guess.saturating_sub(per_window / 2).max(lo);
        let end = (start + per_window).min(hi);
        let bytes = &mut window[..(end - start) as usize * record];
        base.file
            .read_exact_at(bytes, HEADER as u64 + start * record as u64)
            .ok()?;
        let key_at = |i: usize| &bytes[i * record..i * record + KEY_LEN];
        let count = (end - start) as usize;
        if key[..] < *key_at(0) {
            hi = start;
            hi_key = prefix(key_at(0)) as u128 + 1;
            continue;
        }
        if key[..] > *key_at(count - 1) {
            lo = end;
            lo_key = prefix(key_at(count - 1)) as u128;
            continue;
        }
        let (mut a, mut b) = (0, count);
        while a < b {
            let m = a + (b - a) / 2;
            match key_at(m).cmp(&key[..]) {
                std::cmp::Ordering::Less => a = m + 1,
                std::cmp::Ordering::Greater => b = m,
                std::cmp::Ordering::Equal => {
                    a = m;
                    break;
                }
            }
        }
        if a >= count || key_at(a) != &key[..] {
            return None;
        }
        let at = a;
        let (k, generation, payload) = kind.decode(&bytes[at * record..(at + 1) * record])?;
        return (k == *key).then(|| (generation, payload.to_vec()));
    }
    None
}

/// Merges the journal and `extra` (records, encoded) into a new base:
/// checked records of all three, the newest generation of each key, the
/// most recently used [`Kind::max_entries`]; then empties the journal.
/// Holds the journal's lock exclusively throughout.
fn compact(kind: &Kind, path: &Path, journal: &File, extra: &[u8]) -> Result<(), Error> {
    let journal_path = journal_path(path);
    let io = |e: std::io::Error| Error::io(&journal_path, &e);
    journal.lock().map_err(io)?;
    let record = kind.record();
    let base = open_base(kind, path);
    let generation = base.as_ref().map_or(0, |b| b.generation).wrapping_add(1);
    let mut merged: HashMap<Key, (u32, Vec<u8>)> = HashMap::default();
    let mut take = |bytes: &[u8]| {
        for chunk in bytes.chunks_exact(record) {
            if let Some((key, g, payload)) = kind.decode(chunk) {
                let slot = merged.entry(key).or_insert((g, payload.to_vec()));
                slot.0 = slot.0.max(g);
            }
        }
    };
    if let Some(base) = &base {
        let mut bytes = vec![0; base.records as usize * record];
        if base.file.read_exact_at(&mut bytes, HEADER as u64).is_ok() {
            take(&bytes);
        }
    }
    let held = journal.metadata().map_err(io)?.len();
    let mut journal_bytes = vec![0; held as usize];
    if journal.read_exact_at(&mut journal_bytes, 0).is_ok() {
        take(&journal_bytes);
    }
    take(extra);
    let mut entries: Vec<(Key, u32, Vec<u8>)> =
        merged.into_iter().map(|(k, (g, p))| (k, g, p)).collect();
    if entries.len() > kind.max_entries {
        // Most recently used first; the key settles ties.
        entries.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        entries.truncate(kind.max_entries);
    }
    entries.sort_unstable_by_key(|e| e.0);
    let mut out = kind.header(entries.len() as u64, generation);
    out.reserve(entries.len() * record);
    for (key, g, payload) in &entries {
        kind.encode(key, (*g).min(generation), payload, &mut out);
    }
    write(path, &out)?;
    journal.set_len(0).map_err(io)?;
    journal.unlock().map_err(io)?;
    Ok(())
}

/// Replaces `path` through a temporary file in the same directory. No
/// fsync: a base lost or torn by a crash fails its checks and is rebuilt,
/// and the sync would cost the run more than the cache saves.
fn write(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = parent(path);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, &e))?;
    tmp.write_all(bytes)
        .map_err(|e| Error::io(tmp.path(), &e))?;
    tmp.persist(path).map_err(|e| Error::io(path, &e.error))?;
    Ok(())
}

#[cfg(test)]
#[path = "cache_file/tests.rs"]
mod tests;
