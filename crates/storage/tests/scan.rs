//! Range scans against a model of every version, short (read on the caller's thread) and
//! long (read on a producer thread, `scan.rs`), and a long scan dropped midway.

use bytes::Bytes;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::{Store, StoreOptions, Timestamp, Write, WriteOp, PIPELINE_AFTER};

const REL: u64 = 7;
const KEYS: u32 = 120_000;

fn key(i: u32) -> Vec<u8> {
    // Every fourth key has a 0x00 byte (escaped in storage).
    let mut k = i.to_be_bytes().to_vec();
    if i.is_multiple_of(4) {
        k.push(0);
    }
    k
}

fn apply(s: &Store, writes: Vec<(Vec<u8>, Option<String>)>, ts: Timestamp) {
    for chunk in writes.chunks(2000) {
        let batch: Vec<Write> = chunk
            .iter()
            .map(|(k, row)| Write {
                rel: REL,
                key: k.clone(),
                op: WriteOp::Put(row.as_ref().map(|r| Bytes::copy_from_slice(r.as_bytes()))),
                newest_before: None,
            })
            .collect();
        s.apply(&batch, ts, false, None)
            .blocking_recv()
            .unwrap()
            .unwrap();
    }
}

type Model = BTreeMap<Vec<u8>, BTreeMap<Timestamp, Option<String>>>;

/// Writes `pick(i)` (None: nothing; Some(None): a delete) to every key `i` at `ts`.
fn write(
    s: &Store,
    model: &mut Model,
    pick: &dyn Fn(u32) -> Option<Option<String>>,
    ts: Timestamp,
) {
    let writes: Vec<_> = (0..KEYS)
        .filter_map(|i| pick(i).map(|row| (key(i), row)))
        .collect();
    for (k, row) in &writes {
        model.entry(k.clone()).or_default().insert(ts, row.clone());
    }
    apply(s, writes, ts);
}

/// Live rows at `snap` in `[lo, hi)` by the model.
fn expected(
    model: &Model,
    snap: Timestamp,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
) -> Vec<(Vec<u8>, String)> {
    model
        .range::<Vec<u8>, _>((lo.clone(), hi.clone()))
        .filter_map(|(k, versions)| {
            let (_, row) = versions.range(..=snap).next_back()?;
            row.clone().map(|r| (k.clone(), r))
        })
        .collect()
}

fn scanned(
    s: &Store,
    snap: Timestamp,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
) -> Vec<(Vec<u8>, String)> {
    s.scan(REL, lo, hi, snap)
        .map(|r| {
            let (k, row) = r.unwrap();
            assert_eq!(k.cmp_user_key(&k.user_key()), std::cmp::Ordering::Equal);
            (k.user_key(), String::from_utf8(row.to_vec()).unwrap())
        })
        .collect()
}

fn scan_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "meridian-scan")
        .count()
}

/// One test: the thread count at its end must not see another test's scans.
#[test]
fn scans_match_the_model_and_a_dropped_scan_stops_its_thread() {
    let dir = tempfile::tempdir().unwrap();
    let s: Arc<Store> = Store::open(StoreOptions {
        path: dir.path().to_path_buf(),
        cache_size: 16 << 20,
    })
    .unwrap();
    let mut model = Model::new();
    write(&s, &mut model, &|i| Some(Some(format!("v10-{i}"))), 10);
    write(
        &s,
        &mut model,
        &|i| (i % 3 == 0).then(|| Some(format!("v20-{i}"))),
        20,
    );
    // A long deleted run, then scattered deletes.
    write(
        &s,
        &mut model,
        &|i| (i % 5 == 0 || (5_000..45_000).contains(&i)).then_some(None),
        30,
    );
    write(
        &s,
        &mut model,
        &|i| (i % 7 == 0).then(|| Some(format!("v40-{i}"))),
        40,
    );

    let bounds = [
        (Bound::Unbounded, Bound::Unbounded),
        (Bound::Included(key(100)), Bound::Excluded(key(200))),
        (Bound::Excluded(key(1_000)), Bound::Included(key(119_000))),
        (Bound::Included(key(4_000)), Bound::Unbounded),
    ];
    for snap in [5, 10, 25, 35, 45] {
        for (lo, hi) in &bounds {
            let got = scanned(&s, snap, lo, hi);
            assert_eq!(
                got,
                expected(&model, snap, lo, hi),
                "snapshot {snap}, bounds {lo:?}..{hi:?}"
            );
        }
    }

    // A scan's rows are those of its snapshot of the store, whatever is written while
    // it runs on its producer thread.
    let mut during = s.scan(REL, &Bound::Unbounded, &Bound::Unbounded, 45);
    let first: Vec<_> = during
        .by_ref()
        .take(PIPELINE_AFTER + 10_000)
        .map(|r| r.unwrap())
        .collect();
    write(&s, &mut model, &|i| Some(Some(format!("v50-{i}"))), 50);
    let rest: Vec<_> = during.map(|r| r.unwrap()).collect();
    let all: Vec<_> = first
        .into_iter()
        .chain(rest)
        .map(|(k, r)| (k.user_key(), String::from_utf8(r.to_vec()).unwrap()))
        .collect();
    assert_eq!(
        all,
        expected(&model, 45, &Bound::Unbounded, &Bound::Unbounded)
    );

    // Dropped midway (a LIMIT): its thread ends.
    for _ in 0..20 {
        let mut scan = s.scan(REL, &Bound::Unbounded, &Bound::Unbounded, 45);
        assert_eq!(
            scan.by_ref().take(PIPELINE_AFTER + 1_000).count(),
            PIPELINE_AFTER + 1_000
        );
        assert!(
            scan_threads() >= 1,
            "a scan past PIPELINE_AFTER rows reads on its own thread"
        );
        drop(scan);
    }
    let start = Instant::now();
    while scan_threads() > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{} scan threads still running",
            scan_threads()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
