//! Merges (`WriteOp::Merge`, the datanode's deferred increments) computed by the writer
//! thread: in timestamp order, out of it (a late merge is applied to the newer versions
//! too), and a failing merge refuses its batch only.

use bytes::Bytes;
use pgerror::PgError;
use std::sync::Arc;
use storage::{MergeFn, Store, StoreOptions, Timestamp, Write, WriteOp};

fn open(name: &str) -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::Builder::new()
        .prefix(&format!("meridian-merge-{name}"))
        .tempdir()
        .unwrap();
    let store = Store::open(StoreOptions {
        path: dir.path().to_path_buf(),
        cache_size: 16 << 20,
    })
    .unwrap();
    (dir, store)
}

fn num(n: i64) -> Bytes {
    Bytes::copy_from_slice(&n.to_le_bytes())
}

fn add(d: i64) -> WriteOp {
    let f: MergeFn = Arc::new(move |row: &Bytes| {
        let n = i64::from_le_bytes(row[..8].try_into().unwrap());
        n.checked_add(d)
            .map(num)
            .ok_or_else(|| PgError::new("22003", "bigint out of range"))
    });
    WriteOp::Merge(f)
}

fn apply(s: &Store, op: WriteOp, ts: Timestamp) -> pgerror::PgResult<()> {
    let w = Write {
        rel: 1,
        key: b"k".to_vec(),
        op,
        newest_before: None,
    };
    s.apply(&[w], ts, true, None).blocking_recv().unwrap()
}

fn value_at(s: &Store, snapshot: Timestamp) -> Option<(Timestamp, i64)> {
    s.get(1, b"k", snapshot).unwrap().map(|v| {
        (
            v.commit_ts,
            i64::from_le_bytes(v.row.unwrap()[..8].try_into().unwrap()),
        )
    })
}

#[test]
fn merges_in_order_build_on_the_newest_version() {
    let (_d, s) = open("inorder");
    apply(&s, WriteOp::Put(Some(num(100))), 10).unwrap();
    apply(&s, add(5), 20).unwrap();
    apply(&s, add(-7), 30).unwrap();
    assert_eq!(value_at(&s, 15), Some((10, 100)));
    assert_eq!(value_at(&s, 25), Some((20, 105)));
    assert_eq!(value_at(&s, 35), Some((30, 98)));
}

#[test]
fn a_late_merge_is_applied_to_every_newer_version() {
    let (_d, s) = open("late");
    apply(&s, WriteOp::Put(Some(num(100))), 10).unwrap();
    apply(&s, add(1), 40).unwrap();
    apply(&s, add(10), 50).unwrap();
    // Committed at 20, reaches the writer after 40 and 50.
    apply(&s, add(1000), 20).unwrap();
    assert_eq!(value_at(&s, 15), Some((10, 100)));
    assert_eq!(value_at(&s, 25), Some((20, 1100)));
    assert_eq!(value_at(&s, 45), Some((40, 1101)));
    assert_eq!(value_at(&s, 55), Some((50, 1111)));
    assert_eq!(s.latest(1, b"k").unwrap().map(|v| v.commit_ts), Some(50));
    // Between two of the newer versions.
    apply(&s, add(100_000), 45).unwrap();
    assert_eq!(value_at(&s, 44), Some((40, 1101)));
    assert_eq!(value_at(&s, 46), Some((45, 101_101)));
    assert_eq!(value_at(&s, u64::MAX), Some((50, 101_111)));
}

#[test]
fn a_failing_merge_refuses_its_batch_only() {
    let (_d, s) = open("fail");
    apply(&s, WriteOp::Put(Some(num(i64::MAX - 1))), 10).unwrap();
    let other = Write {
        rel: 2,
        key: b"x".to_vec(),
        op: WriteOp::Put(Some(num(1))),
        newest_before: None,
    };
    let merge = Write {
        rel: 1,
        key: b"k".to_vec(),
        op: add(2),
        newest_before: None,
    };
    let err = s
        .apply(&[other, merge], 20, true, None)
        .blocking_recv()
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code, "22003");
    assert_eq!(
        s.get(2, b"x", u64::MAX).unwrap(),
        None,
        "nothing of the refused batch is written"
    );
    assert_eq!(value_at(&s, u64::MAX), Some((10, i64::MAX - 1)));
    apply(&s, add(1), 30).unwrap();
    assert_eq!(value_at(&s, u64::MAX), Some((30, i64::MAX)));
    // A late merge that fails on a newer version refuses its batch, which changes nothing.
    assert_eq!(apply(&s, add(1), 25).unwrap_err().code, "22003");
    assert_eq!(value_at(&s, 26), Some((10, i64::MAX - 1)));
}
