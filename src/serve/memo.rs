//! Bounded memos of one policy generation: answers and parsed plans kept
//! between requests, keyed by the exact bytes they were computed from.
//!
//! A memo never changes an answer. An entry is stored only for input bytes
//! that were answered; a look-up compares the stored bytes with the asked
//! ones in full (the hash only picks the slot), so a hash collision is a
//! miss, never another input's answer. Everything an answer depends on
//! besides those bytes is the generation's policy, which is immutable, and
//! a memo lives and dies with its generation. The bound is on entries and on
//! bytes held; past it an entry is dropped (which one does not matter: a
//! miss only costs the work again).

use rustc_hash::FxHasher;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

/// Values by the bytes they were computed from, at most `entries` of them
/// and at most `bytes` bytes of keys plus what each value says it costs.
#[derive(Debug)]
pub struct Memo<V> {
    slots: Mutex<Slots<V>>,
    entries: usize,
    bytes: usize,
}

#[derive(Debug)]
struct Slots<V> {
    map: HashMap<u64, Entry<V>, BuildHasherDefault<IdentityHasher>>,
    /// The sum of the kept entries' costs.
    held: usize,
    /// Entries dropped to make room, over the memo's life.
    evicted: u64,
}

#[derive(Debug)]
struct Entry<V> {
    key: Box<[u8]>,
    value: Arc<V>,
    cost: usize,
}

/// How full a memo is: what `/metrics` reports of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fill {
    /// Values kept.
    pub entries: usize,
    /// Bytes they are counted as holding (keys plus declared costs).
    pub bytes: usize,
    /// Values dropped to make room for others.
    pub evicted: u64,
}

impl<V> Memo<V> {
    /// An empty memo holding at most `entries` values and `bytes` bytes.
    pub fn new(entries: usize, bytes: usize) -> Self {
        Self {
            slots: Mutex::new(Slots {
                map: HashMap::default(),
                held: 0,
                evicted: 0,
            }),
            entries,
            bytes,
        }
    }

    /// The value computed from exactly `key`, if kept. The lock is held
    /// for the look-up and the comparison only.
    pub fn get(&self, key: &[u8]) -> Option<Arc<V>> {
        self.get_at(hash(key), key)
    }

    fn get_at(&self, slot: u64, key: &[u8]) -> Option<Arc<V>> {
        let slots = self.lock();
        let entry = slots.map.get(&slot)?;
        (*entry.key == *key).then(|| entry.value.clone())
    }

    /// Keeps `value`, computed from `key`, costing `cost` bytes besides the
    /// key. A value larger than the whole bound is not kept. When the memo
    /// is full, entries are dropped until the new one fits: which ones does
    /// not matter to an answer (a miss only costs the work again), so it is
    /// whichever the table yields first, with no bookkeeping per hit.
    pub fn insert(&self, key: &[u8], value: Arc<V>, cost: usize) {
        self.insert_at(hash(key), key, value, cost);
    }

    fn insert_at(&self, slot: u64, key: &[u8], value: Arc<V>, cost: usize) {
        let cost = cost.saturating_add(key.len());
        if cost > self.bytes || self.entries == 0 {
            return;
        }
        let mut slots = self.lock();
        if let Some(gone) = slots.map.remove(&slot) {
            slots.held -= gone.cost;
        }
        while slots.map.len() >= self.entries || slots.held + cost > self.bytes {
            let Some(victim) = slots.map.keys().next().copied() else {
                break;
            };
            if let Some(gone) = slots.map.remove(&victim) {
                slots.held -= gone.cost;
                slots.evicted += 1;
            }
        }
        slots.held += cost;
        slots.map.insert(
            slot,
            Entry {
                key: key.into(),
                value,
                cost,
            },
        );
    }

    /// How full the memo is now.
    pub fn fill(&self) -> Fill {
        let slots = self.lock();
        Fill {
            entries: slots.map.len(),
            bytes: slots.held,
            evicted: slots.evicted,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots<V>> {
        // A panic while holding the lock leaves whole entries: take it as it is.
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn hash(bytes: &[u8]) -> u64 {
    let mut hasher = FxHasher::default();
    hasher.write(bytes);
    hasher.write_usize(bytes.len());
    hasher.finish()
}

/// The slots are already hashes.
#[derive(Debug, Default)]
struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_comes_back_only_for_the_same_bytes() {
        let memo = Memo::new(4, 1024);
        memo.insert(b"{\"flags\": \"a\"}", Arc::new(1), 8);
        assert_eq!(memo.get(b"{\"flags\": \"a\"}").as_deref(), Some(&1));
        assert_eq!(memo.get(b"{\"flags\": \"b\"}"), None);
        assert_eq!(memo.get(b"{\"flags\": \"a\"} "), None);
    }

    #[test]
    fn a_colliding_key_is_a_miss_not_another_answer() {
        let memo = Memo::new(4, 1024);
        // Two inputs in one slot, as two inputs whose hashes collide: the
        // stored bytes decide.
        memo.insert_at(7, b"one", Arc::new("one"), 0);
        assert_eq!(memo.get_at(7, b"one").as_deref(), Some(&"one"));
        assert_eq!(memo.get_at(7, b"two"), None);
    }

    #[test]
    fn the_bounds_hold() {
        let memo = Memo::new(3, 100);
        for i in 0..10u8 {
            memo.insert(&[i], Arc::new(i), 0);
            assert!(memo.fill().entries <= 3);
        }
        assert_eq!(memo.fill().evicted, 7);
        let memo = Memo::new(100, 100);
        for i in 0..10u8 {
            memo.insert(&[i], Arc::new(i), 30);
        }
        assert_eq!(memo.fill().entries, 3, "31 bytes each, 100 at most");
        assert_eq!(memo.fill().bytes, 93);
        memo.insert(b"big", Arc::new(0), 1000);
        assert_eq!(memo.get(b"big"), None, "larger than the whole bound");
    }

    #[test]
    fn replacing_a_key_does_not_count_its_bytes_twice() {
        let memo = Memo::new(10, 100);
        for _ in 0..50 {
            memo.insert(b"same", Arc::new(0), 10);
        }
        assert_eq!(
            memo.fill(),
            Fill {
                entries: 1,
                bytes: 14,
                evicted: 0
            }
        );
    }
}
