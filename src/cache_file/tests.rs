use super::*;

const KIND: Kind = Kind {
    magic: *b"MSTRTEST",
    version: 1,
    payload: 4,
    max_entries: 1000,
    max_journal: 64,
};

fn k(i: u32) -> Key {
    let digest = Sha256::digest(i.to_le_bytes());
    digest[..KEY_LEN].try_into().unwrap()
}

fn v(i: u32) -> Vec<u8> {
    i.to_le_bytes().to_vec()
}

fn filled(path: &Path, kind: Kind, range: std::ops::Range<u32>) {
    let mut t = Table::open(kind, path);
    for i in range {
        t.insert(k(i), v(i));
    }
    t.save().unwrap();
}

#[test]
fn records_survive_in_the_journal_and_in_the_base() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub").join("t.bin");
    filled(&path, KIND, 0..10);
    // Ten records fit the journal: no base yet.
    assert!(!path.exists());
    let mut again = Table::open(KIND, &path);
    assert_eq!(again.get(&k(3)), Some(v(3)));
    assert_eq!(again.get(&k(11)), None);
    again.compact().unwrap();
    assert_eq!(stats(&KIND, &path).journal_records, 0);
    let mut base = Table::open(KIND, &path);
    for i in 0..10 {
        assert_eq!(base.get(&k(i)), Some(v(i)), "record {i}");
    }
    assert_eq!(base.get(&k(10)), None);
}

#[test]
fn every_record_is_found_at_every_size() {
    let dir = tempfile::tempdir().unwrap();
    for (n, payload) in [(1u32, 4usize), (7, 4), (300, 4), (5000, 4), (900, 1536)] {
        let kind = Kind {
            payload,
            max_entries: 10_000,
            max_journal: 16,
            ..KIND
        };
        let path = dir.path().join(format!("t{n}-{payload}.bin"));
        let mut t = Table::open(kind, &path);
        // Even keys only, so odd ones fall between records.
        for i in 0..n {
            let mut p = vec![0; payload];
            p[..4].copy_from_slice(&(2 * i).to_le_bytes());
            t.insert(k(2 * i), p);
        }
        t.save().unwrap();
        // Every record in the base, none in the journal.
        t.compact().unwrap();
        let mut t = Table::open(kind, &path);
        assert_eq!(stats(&kind, &path).base_records, u64::from(n));
        assert_eq!(stats(&kind, &path).journal_records, 0);
        for i in 0..n {
            let got = t
                .get(&k(2 * i))
                .unwrap_or_else(|| panic!("{n}: {i} missing"));
            assert_eq!(got[..4], (2 * i).to_le_bytes());
            assert_eq!(t.get(&k(2 * i + 1)), None, "{n}: {i} found");
        }
    }
}

#[test]
fn a_run_that_adds_nothing_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.bin");
    let mut t = Table::open(KIND, &path);
    assert_eq!(t.get(&k(1)), None);
    t.save().unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    filled(&path, KIND, 0..5);
    let before = std::fs::read(journal_path(&path)).unwrap();
    let mut warm = Table::open(KIND, &path);
    assert_eq!(warm.get(&k(2)), Some(v(2)));
    assert!(!warm.has_pending());
    warm.save().unwrap();
    assert_eq!(std::fs::read(journal_path(&path)).unwrap(), before);
}

#[test]
fn a_damaged_byte_costs_its_record_and_never_gives_a_wrong_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.bin");
    filled(&path, KIND, 0..20);
    Table::open(KIND, &path).compact().unwrap();
    let good = std::fs::read(&path).unwrap();
    let mut cases: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"not a cache at all".to_vec(),
        good[..good.len() - 1].to_vec(),
        good[..HEADER].to_vec(),
        [good.clone(), vec![0]].concat(),
    ];
    for at in 0..good.len() {
        let mut b = good.clone();
        b[at] ^= 0x20;
        cases.push(b);
    }
    for (n, bad) in cases.iter().enumerate() {
        std::fs::write(&path, bad).unwrap();
        let mut t = Table::open(KIND, &path);
        let mut missing = Vec::new();
        for i in 0..20 {
            match t.get(&k(i)) {
                Some(p) => assert_eq!(p, v(i), "case {n}: a wrong record was trusted"),
                None => missing.push(i),
            }
        }
        // What was missing is recounted, saved, and found again.
        for &i in &missing {
            t.insert(k(i), v(i));
        }
        t.save().unwrap();
        t.compact().unwrap();
        let mut again = Table::open(KIND, &path);
        for i in 0..20 {
            assert_eq!(again.get(&k(i)), Some(v(i)), "case {n}: record {i}");
        }
        std::fs::write(&path, &good).unwrap();
    }
    // A damaged journal record is a miss too.
    let mut t = Table::open(KIND, &path);
    t.insert(k(100), v(100));
    t.save().unwrap();
    let j = journal_path(&path);
    let mut bytes = std::fs::read(&j).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&j, &bytes).unwrap();
    assert_eq!(Table::open(KIND, &path).get(&k(100)), None);
}

#[test]
fn another_kind_or_version_reads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.bin");
    filled(&path, KIND, 0..5);
    Table::open(KIND, &path).compact().unwrap();
    filled(&path, KIND, 5..6);
    let other = Kind { version: 2, ..KIND };
    let mut t = Table::open(other, &path);
    assert_eq!((t.get(&k(1)), t.get(&k(5))), (None, None));
}

#[test]
fn the_journal_and_the_base_stay_bounded_and_keep_what_runs_use() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.bin");
    let record = KIND.record() as u64;
    // Ten runs of 300 new records, and one record (7) used by every run.
    filled(&path, KIND, 0..300);
    for run in 1..10u32 {
        let mut t = Table::open(KIND, &path);
        assert_eq!(t.get(&k(7)), Some(v(7)), "run {run}");
        for i in run * 1000..run * 1000 + 300 {
            t.insert(k(i), v(i));
        }
        t.save().unwrap();
        let s = stats(&KIND, &path);
        assert!(s.journal_records <= KIND.max_journal as u64, "{s:?}");
        assert!(s.base_records <= KIND.max_entries as u64, "{s:?}");
        assert!(s.bytes <= HEADER as u64 + (KIND.max_entries + KIND.max_journal) as u64 * record);
    }
    let mut last = Table::open(KIND, &path);
    assert_eq!(
        last.get(&k(7)),
        Some(v(7)),
        "a record every run used was dropped"
    );
    assert_eq!(
        last.get(&k(9299)),
        Some(v(9299)),
        "the newest records were dropped"
    );
    assert_eq!(last.get(&k(1)), None, "the oldest unused records were kept");
}

#[test]
fn concurrent_runs_lose_nothing_and_leave_whole_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.bin");
    let kind = Kind {
        max_entries: 100_000,
        max_journal: 40,
        ..KIND
    };
    std::thread::scope(|s| {
        for t in 0..8u32 {
            let path = &path;
            s.spawn(move || {
                for round in 0..20u32 {
                    let mut c = Table::open(kind, path);
                    for i in 0..7 {
                        let n = t * 10_000 + round * 10 + i;
                        c.insert(k(n), v(n));
                    }
                    c.save().unwrap();
                }
            });
        }
    });
    let mut all = Table::open(kind, &path);
    for t in 0..8u32 {
        for round in 0..20u32 {
            for i in 0..7 {
                let n = t * 10_000 + round * 10 + i;
                assert_eq!(all.get(&k(n)), Some(v(n)), "record {n} was lost");
            }
        }
    }
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "temporary files left behind: {names:?}");
}

#[test]
fn clear_removes_both_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.bin");
    filled(&path, KIND, 0..100);
    assert!(stats(&KIND, &path).bytes > 0);
    clear(&path).unwrap();
    assert_eq!(stats(&KIND, &path), Stats::default());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    clear(&path).unwrap();
}
