//! Tests of the `latest` keyspace: point reads through it must equal the version seek in
//! `data` at every snapshot, across GC, relation deletion and reopening.

use bytes::Bytes;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use storage::{Store, StoreOptions, Timestamp, Version, Write, WriteOp};

/// Every stored version of every key: (rel, key) -> ts -> row (None: tombstone).
type Model = BTreeMap<(u64, Vec<u8>), BTreeMap<Timestamp, Option<String>>>;

fn tmpdir(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!(
        "meridian-storage-latest-{}-{}",
        name,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn open(p: &std::path::Path) -> Arc<Store> {
    Store::open(StoreOptions {
        path: p.to_path_buf(),
        cache_size: 16 << 20,
    })
    .unwrap()
}

fn put(s: &Store, rel: u64, key: &[u8], row: Option<&str>, ts: Timestamp) {
    s.apply(
        &[Write {
            rel,
            key: key.to_vec(),
            op: WriteOp::Put(row.map(|r| Bytes::copy_from_slice(r.as_bytes()))),
            newest_before: None,
        }],
        ts,
        false,
        None,
    )
    .blocking_recv()
    .unwrap()
    .unwrap();
}

fn row(s: &Store, rel: u64, key: &[u8], snap: Timestamp) -> Option<(Timestamp, Option<String>)> {
    s.get(rel, key, snap).unwrap().map(|v| {
        (
            v.commit_ts,
            v.row.map(|r| String::from_utf8(r.to_vec()).unwrap()),
        )
    })
}

#[test]
fn older_snapshots_fall_back_to_data() {
    let d = tmpdir("fallback");
    let s = open(&d);
    put(&s, 1, b"k", Some("a"), 10);
    put(&s, 1, b"k", Some("b"), 20);
    put(&s, 1, b"k", None, 30);
    put(&s, 1, b"k", Some("c"), 40);
    assert_eq!(row(&s, 1, b"k", 5), None);
    assert_eq!(row(&s, 1, b"k", 10), Some((10, Some("a".into()))));
    assert_eq!(row(&s, 1, b"k", 19), Some((10, Some("a".into()))));
    assert_eq!(row(&s, 1, b"k", 25), Some((20, Some("b".into()))));
    assert_eq!(row(&s, 1, b"k", 35), Some((30, None)));
    assert_eq!(row(&s, 1, b"k", 40), Some((40, Some("c".into()))));
    assert_eq!(row(&s, 1, b"k", u64::MAX), Some((40, Some("c".into()))));
    assert_eq!(
        s.latest(1, b"k").unwrap(),
        Some(Version {
            commit_ts: 40,
            row: Some(Bytes::from_static(b"c"))
        })
    );
    // out-of-order arrival at the writer: `latest` keeps the newest
    put(&s, 1, b"k", Some("old"), 35);
    assert_eq!(s.latest(1, b"k").unwrap().unwrap().commit_ts, 40);
    assert_eq!(row(&s, 1, b"k", 37), Some((35, Some("old".into()))));
    // keys with 0x00 bytes and prefixes of each other stay apart
    put(&s, 1, &[0], Some("z"), 50);
    put(&s, 1, &[0, 0], Some("zz"), 50);
    assert_eq!(row(&s, 1, &[], 60), None);
    assert_eq!(row(&s, 1, &[0], 60), Some((50, Some("z".into()))));
    assert_eq!(row(&s, 1, &[0, 0], 60), Some((50, Some("zz".into()))));
    assert_eq!(row(&s, 2, &[0], 60), None);
    drop(s);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn gc_superseded_removes_replaced_row_versions_by_exact_key() {
    let d = tmpdir("superseded");
    let s = open(&d);
    put(&s, 1, b"k", Some("a"), 10);
    put(&s, 1, b"k", Some("b"), 20);
    put(&s, 1, b"k", Some("c"), 40);
    // out of order: 30 arrives after 40, so 30 is the replaced one (by 40)
    put(&s, 1, b"k", Some("x"), 30);
    // replaced by a tombstone: left to the per-key pass
    put(&s, 1, b"t", Some("a"), 10);
    put(&s, 1, b"t", None, 20);
    assert_eq!(s.superseded_len(), 3);
    // horizon 25: only "a"@10 (replaced at 20) may go; a snapshot at 25 still sees "b"
    assert_eq!(s.gc_superseded(25).unwrap(), 1);
    assert_eq!(row(&s, 1, b"k", 25), Some((20, Some("b".into()))));
    assert_eq!(row(&s, 1, b"k", 15), None);
    assert_eq!(s.version_count(1, b"t").unwrap(), 2);
    assert_eq!(s.gc_superseded(40).unwrap(), 2);
    assert_eq!(s.superseded_len(), 0);
    assert_eq!(s.version_count(1, b"k").unwrap(), 1);
    assert_eq!(row(&s, 1, b"k", 45), Some((40, Some("c".into()))));
    drop(s);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn gc_of_tombstone_then_reinsert() {
    let d = tmpdir("gc");
    let s = open(&d);
    put(&s, 1, b"k", Some("a"), 10);
    put(&s, 1, b"k", None, 20);
    put(&s, 1, b"j", None, 20);
    let (n, again) = s.gc_keys(&[(1, b"k".to_vec())], 25).unwrap();
    assert_eq!((n, again), (2, vec![false]));
    assert_eq!(s.version_count(1, b"k").unwrap(), 0);
    assert_eq!(s.latest(1, b"k").unwrap(), None);
    assert_eq!(row(&s, 1, b"k", 30), None);
    assert_eq!(s.gc_rel(1, 25).unwrap(), 1);
    assert_eq!(s.latest(1, b"j").unwrap(), None);
    put(&s, 1, b"k", Some("b"), 40);
    put(&s, 1, b"j", Some("b"), 40);
    assert_eq!(row(&s, 1, b"k", 45), Some((40, Some("b".into()))));
    assert_eq!(row(&s, 1, b"k", 35), None);
    assert_eq!(row(&s, 1, b"j", 45), Some((40, Some("b".into()))));
    // GC of a tombstone below the horizon must not remove a newer `latest` entry
    put(&s, 1, b"m", None, 50);
    put(&s, 1, b"m", Some("new"), 70);
    s.gc_keys(&[(1, b"m".to_vec())], 60).unwrap();
    assert_eq!(row(&s, 1, b"m", 80), Some((70, Some("new".into()))));
    assert_eq!(row(&s, 1, b"m", 65), None);
    drop(s);
    // survives reopen
    let s = open(&d);
    assert_eq!(row(&s, 1, b"k", 45), Some((40, Some("b".into()))));
    assert_eq!(s.latest(1, b"m").unwrap().unwrap().commit_ts, 70);
    drop(s);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn delete_rel_clears_both() {
    let d = tmpdir("droprel");
    let s = open(&d);
    for i in 0..25_000u32 {
        s.apply(
            &[
                Write {
                    rel: 3,
                    key: i.to_be_bytes().to_vec(),
                    op: WriteOp::Put(Some(Bytes::from_static(b"x"))),
                    newest_before: None,
                },
                Write {
                    rel: 4,
                    key: i.to_be_bytes().to_vec(),
                    op: WriteOp::Put(Some(Bytes::from_static(b"y"))),
                    newest_before: None,
                },
            ],
            10 + i as u64,
            false,
            None,
        );
    }
    put(&s, 3, b"last", Some("x"), 100_000);
    assert_eq!(s.delete_rel(3).unwrap(), 2 * 25_001);
    for i in [0u32, 9_999, 10_000, 24_999] {
        assert_eq!(s.latest(3, &i.to_be_bytes()).unwrap(), None);
        assert_eq!(s.get(3, &i.to_be_bytes(), u64::MAX).unwrap(), None);
        assert_eq!(s.version_count(3, &i.to_be_bytes()).unwrap(), 0);
        assert!(s.latest(4, &i.to_be_bytes()).unwrap().is_some());
    }
    assert_eq!(s.latest(3, b"last").unwrap(), None);
    assert_eq!(
        s.scan(
            3,
            &std::ops::Bound::Unbounded,
            &std::ops::Bound::Unbounded,
            u64::MAX
        )
        .count(),
        0
    );
    put(&s, 3, b"k", Some("again"), 200_000);
    assert_eq!(
        row(&s, 3, b"k", u64::MAX),
        Some((200_000, Some("again".into())))
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&d);
}

/// A dropped relation's own tables go at once; its keys in tables shared with another
/// relation go when compaction rewrites them, and the other relation keeps every row.
#[tokio::test]
async fn drop_rel_leaves_shared_tables_to_compaction() {
    let d = tmpdir("droprel-compaction");
    let s = open(&d);
    let mut load = s.bulk_load(5, 50).unwrap();
    let mut chunk = storage::Chunk::default();
    for i in 0..1_000u32 {
        chunk.push(&i.to_be_bytes(), b"loaded");
    }
    load.write(chunk).await.unwrap();
    load.finish().await.unwrap();
    for i in 0..5_000u32 {
        let write = |rel| Write {
            rel,
            key: i.to_be_bytes().to_vec(),
            op: WriteOp::Put(Some(Bytes::from_static(b"x"))),
            newest_before: None,
        };
        s.apply(&[write(3), write(4)], 100 + i as u64, false, None)
            .await
            .unwrap()
            .unwrap();
    }
    assert!(
        s.drop_rel(5).unwrap(),
        "a bulk-loaded relation's tables are its own"
    );
    assert!(
        !s.drop_rel(3).unwrap(),
        "rel 3 shares its memtable with rel 4"
    );
    assert_eq!(s.dropped_rels().as_slice(), &[3]);
    assert_eq!(s.reap_dropped(10).unwrap(), Vec::<u64>::new());
    assert_eq!(s.version_count(3, &7u32.to_be_bytes()).unwrap(), 1);

    s.major_compact().unwrap();
    assert_eq!(s.reap_dropped(10).unwrap(), vec![3]);
    assert!(s.dropped_rels().is_empty());
    for i in [0u32, 2_500, 4_999] {
        assert_eq!(s.version_count(3, &i.to_be_bytes()).unwrap(), 0);
        assert_eq!(s.version_count(5, &i.to_be_bytes()).unwrap(), 0);
        assert_eq!(
            row(&s, 4, &i.to_be_bytes(), u64::MAX),
            Some((100 + i as u64, Some("x".into())))
        );
    }
    let scan = |rel| {
        s.scan(rel, &Bound::Unbounded, &Bound::Unbounded, u64::MAX)
            .count()
    };
    assert_eq!((scan(3), scan(4), scan(5)), (0, 5_000, 0));
    drop(s);
    let _ = std::fs::remove_dir_all(&d);
}

/// Reference model: every stored version per key, with the same GC rule.
#[test]
fn get_matches_reference_model() {
    for seed in 0..4u64 {
        let d = tmpdir(&format!("model{seed}"));
        let mut s = open(&d);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut model: Model = BTreeMap::new();
        let mut ts: Timestamp = 1;
        let mut horizon: Timestamp = 0;
        let keys: Vec<Vec<u8>> = (0..40u8)
            .map(|i| if i % 7 == 0 { vec![0, i] } else { vec![i] })
            .collect();
        let check = |s: &Store,
                     model: &Model,
                     rng: &mut rand::rngs::StdRng,
                     ts: Timestamp,
                     horizon: Timestamp| {
            for rel in 1..=2u64 {
                for k in &keys {
                    let vs = model.get(&(rel, k.clone()));
                    // snapshots at or after the GC horizon (what readers may use)
                    for snap in [u64::MAX, ts, horizon.max(rng.gen_range(0..=ts))] {
                        let want = vs.and_then(|vs| {
                            vs.range(..=snap).next_back().map(|(t, r)| (*t, r.clone()))
                        });
                        assert_eq!(
                            row(s, rel, k, snap),
                            want,
                            "rel {rel} key {k:?} snap {snap}"
                        );
                    }
                    let want =
                        vs.and_then(|vs| vs.iter().next_back().map(|(t, r)| (*t, r.clone())));
                    let got = s.latest(rel, k).unwrap().map(|v| {
                        (
                            v.commit_ts,
                            v.row.map(|r| String::from_utf8(r.to_vec()).unwrap()),
                        )
                    });
                    assert_eq!(got, want);
                }
                // A range scan (through `latest`, and `data` for keys written after the
                // snapshot) sees what the point reads see.
                for snap in [u64::MAX, ts, horizon.max(rng.gen_range(0..=ts))] {
                    let scanned: Vec<(Vec<u8>, String)> = s
                        .scan(rel, &Bound::Unbounded, &Bound::Unbounded, snap)
                        .map(|r| {
                            let (k, row) = r.unwrap();
                            (k.user_key(), String::from_utf8(row.to_vec()).unwrap())
                        })
                        .collect();
                    let want: Vec<(Vec<u8>, String)> = model
                        .range((rel, Vec::new())..(rel + 1, Vec::new()))
                        .filter_map(|((_, k), vs)| {
                            let row = vs.range(..=snap).next_back()?.1.clone()?;
                            Some((k.clone(), row))
                        })
                        .collect();
                    assert_eq!(scanned, want, "scan of rel {rel} at snap {snap}");
                }
            }
        };
        for step in 0..3000 {
            let op = rng.gen_range(0..100);
            if op < 80 {
                // one transaction of 1..4 writes; sometimes commits arrive out of order
                let n = rng.gen_range(1..4);
                let mut writes: BTreeMap<(u64, Vec<u8>), Option<String>> = BTreeMap::new();
                for _ in 0..n {
                    let rel = rng.gen_range(1..=2u64);
                    let k = keys[rng.gen_range(0..keys.len())].clone();
                    let r = if rng.gen_bool(0.3) {
                        None
                    } else {
                        Some(format!("v{step}"))
                    };
                    writes.insert((rel, k), r);
                }
                ts += rng.gen_range(1..4);
                let t = if rng.gen_bool(0.1) && ts > horizon + 2 {
                    ts - 1
                } else {
                    ts
                };
                // Half the writes tell the writer the newest version, as the datanode does
                // for keys it read under a row lock (out of order, it is newer than `t`:
                // the writer must then read `latest` after all).
                let ws: Vec<Write> = writes
                    .iter()
                    .map(|((rel, k), r)| Write {
                        rel: *rel,
                        key: k.clone(),
                        op: WriteOp::Put(r.as_ref().map(|r| Bytes::copy_from_slice(r.as_bytes()))),
                        newest_before: rng.gen_bool(0.5).then(|| {
                            model
                                .get(&(*rel, k.clone()))
                                .and_then(|vs| vs.keys().next_back().copied())
                        }),
                    })
                    .collect();
                // skip if it would collide with an existing version at the same ts
                if writes
                    .keys()
                    .any(|rk| model.get(rk).is_some_and(|vs| vs.contains_key(&t)))
                {
                    continue;
                }
                s.apply(&ws, t, rng.gen_bool(0.05), None)
                    .blocking_recv()
                    .unwrap()
                    .unwrap();
                for (rk, r) in writes {
                    model.entry(rk).or_default().insert(t, r);
                }
            } else if op < 90 {
                horizon = rng.gen_range(horizon..=ts.saturating_sub(1).max(horizon));
                let rel = rng.gen_range(1..=2u64);
                let ks: Vec<(u64, Vec<u8>)> = (0..5)
                    .map(|_| (rel, keys[rng.gen_range(0..keys.len())].clone()))
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect();
                if rng.gen_bool(0.5) {
                    s.gc_keys(&ks, horizon).unwrap();
                    for k in ks {
                        model_gc(&mut model, &k, horizon);
                    }
                } else {
                    s.gc_rel(rel, horizon).unwrap();
                    let ks: Vec<_> = model.keys().filter(|(r, _)| *r == rel).cloned().collect();
                    for k in ks {
                        model_gc(&mut model, &k, horizon);
                    }
                }
            } else if op < 99 {
                check(&s, &model, &mut rng, ts, horizon);
            } else {
                drop(s);
                s = open(&d);
            }
        }
        check(&s, &model, &mut rng, ts, horizon);
        // versions stored == versions in the model
        for ((rel, k), vs) in &model {
            assert_eq!(s.version_count(*rel, k).unwrap(), vs.len());
        }
        drop(s);
        let _ = std::fs::remove_dir_all(&d);
    }
}

fn model_gc(model: &mut Model, k: &(u64, Vec<u8>), horizon: Timestamp) {
    let Some(vs) = model.get_mut(k) else { return };
    let Some((&keep, r)) = vs.range(..=horizon).next_back() else {
        return;
    };
    let tomb = r.is_none();
    vs.retain(|&t, _| t > keep || (t == keep && !tomb));
    if vs.is_empty() {
        model.remove(k);
    }
}

/// A directory written before `latest` existed has `latest` rebuilt on open.
#[test]
fn reopen_rebuilds_missing_latest() {
    let d = tmpdir("rebuild");
    {
        let s = open(&d);
        put(&s, 1, b"a", Some("1"), 10);
        put(&s, 1, b"a", Some("2"), 20);
        put(&s, 1, b"b", None, 30);
        s.sync().unwrap();
    }
    // Simulate the old format: drop the format key and the `latest` keyspace contents.
    {
        let db = fjall::Database::builder(&d).open().unwrap();
        let sys = db.keyspace("sys", Default::default).unwrap();
        let latest = db.keyspace("latest", Default::default).unwrap();
        sys.remove(b"storage_format".to_vec()).unwrap();
        for k in latest.iter().map(|g| g.key().unwrap()).collect::<Vec<_>>() {
            latest.remove(k).unwrap();
        }
        db.persist(fjall::PersistMode::SyncAll).unwrap();
    }
    let s = open(&d);
    assert_eq!(row(&s, 1, b"a", u64::MAX), Some((20, Some("2".into()))));
    assert_eq!(row(&s, 1, b"a", 15), Some((10, Some("1".into()))));
    assert_eq!(row(&s, 1, b"b", u64::MAX), Some((30, None)));
    assert_eq!(s.latest(1, b"a").unwrap().unwrap().commit_ts, 20);
    drop(s);
    let _ = std::fs::remove_dir_all(&d);
}

/// GC racing with commits of the same keys never loses a newer `latest` entry.
#[test]
fn gc_races_with_writer() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let d = tmpdir("race");
    let s = open(&d);
    let committed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let keys: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i]).collect();
    let gc = {
        let (s, committed, stop, keys) = (s.clone(), committed.clone(), stop.clone(), keys.clone());
        std::thread::spawn(move || {
            let ks: Vec<(u64, Vec<u8>)> = keys.iter().map(|k| (1, k.clone())).collect();
            while !stop.load(Ordering::Relaxed) {
                s.gc_keys(&ks, committed.load(Ordering::Acquire)).unwrap();
            }
        })
    };
    let mut ts = 0;
    for i in 0..20_000u64 {
        let k = &keys[(i % 4) as usize];
        ts += 1;
        put(&s, 1, k, None, ts);
        committed.store(ts, Ordering::Release);
        ts += 1;
        put(&s, 1, k, Some("v"), ts);
        assert_eq!(
            s.latest(1, k).unwrap().map(|v| v.commit_ts),
            Some(ts),
            "lost the newest version of {k:?} at {ts}"
        );
        committed.store(ts, Ordering::Release);
    }
    stop.store(true, Ordering::Relaxed);
    gc.join().unwrap();
    drop(s);
    let _ = std::fs::remove_dir_all(&d);
}
