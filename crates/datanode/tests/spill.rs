//! Transactions whose write sets outgrow `txn_memory` and spill to storage as write
//! intents (`src/spilled.rs`): own reads, savepoints, others' lock waits, commit, abort.

use bytes::Bytes;
use datanode::{Datanode, DatanodeOptions, Isolation, Txn};
use pgerror::codes;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

struct Env {
    _dir: tempfile::TempDir,
    dn: Arc<Datanode>,
    gtm: gtm::GtmClient,
}

/// A datanode whose transactions spill past 256 KiB.
fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = DatanodeOptions::new(dir.path().join("dn"));
    opts.cache_size = 32 << 20;
    opts.deadlock_timeout = Duration::from_millis(200);
    opts.txn_memory = 256 << 10;
    let dn = Datanode::open(opts).unwrap();
    let gtm = gtm::GtmClient::local(&dir.path().join("gtm")).unwrap();
    Env { _dir: dir, dn, gtm }
}

fn key(i: u32) -> [u8; 4] {
    i.to_be_bytes()
}

fn row(i: u32, version: u32) -> Bytes {
    Bytes::from(format!("{i:08}-{version:04}-{}", "x".repeat(80)))
}

impl Env {
    async fn begin(&self, iso: Isolation) -> Box<Txn> {
        self.dn.begin(self.gtm.begin().await.unwrap(), iso)
    }

    async fn insert(&self, t: &mut Txn, rel: u64, i: u32, version: u32) {
        self.dn
            .insert(t, rel, &key(i), row(i, version), || {
                pgerror::PgError::internal("dup")
            })
            .await
            .unwrap();
    }

    async fn update(&self, t: &mut Txn, rel: u64, i: u32, version: Option<u32>) {
        self.dn.lock_row(t, rel, &key(i)).await.unwrap();
        self.dn
            .put(t, rel, &key(i), version.map(|v| row(i, v)))
            .unwrap();
    }

    /// Every row of `rel` as `txn` sees it at `snap`, checked against point reads.
    async fn contents(&self, txn: &Txn, rel: u64, snap: u64) -> BTreeMap<u32, Bytes> {
        let mut out = BTreeMap::new();
        for r in self
            .dn
            .scan(txn, rel, Bound::Unbounded, Bound::Unbounded, snap)
            .await
            .unwrap()
        {
            let (k, v) = r.unwrap();
            out.insert(u32::from_be_bytes(k.try_into().unwrap()), v);
        }
        for (i, v) in &out {
            assert_eq!(
                self.dn
                    .get(txn, rel, &key(*i), snap)
                    .await
                    .unwrap()
                    .as_ref(),
                Some(v)
            );
        }
        out
    }

    async fn committed(&self, rel: u64) -> BTreeMap<u32, Bytes> {
        let snap = self.gtm.timestamp().await.unwrap();
        let t = self.dn.begin(snap, Isolation::RepeatableRead);
        self.contents(&t, rel, snap).await
    }
}

fn expect(rows: impl IntoIterator<Item = (u32, u32)>) -> BTreeMap<u32, Bytes> {
    rows.into_iter().map(|(i, v)| (i, row(i, v))).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn large_transaction_spills_reads_its_writes_and_commits() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let n = 20_000u32; // about 2.5 MB of rows, ten times txn_memory
    let mut t = e.begin(Isolation::ReadCommitted).await;
    for i in 0..n {
        e.insert(&mut t, rel, i, 1).await;
    }
    // Its locks went with its writes: the lock table holds at most one spill's worth.
    assert!(
        e.dn.lock_count() < 5_000,
        "{} lock entries",
        e.dn.lock_count()
    );
    // Rewrites and deletes of spilled rows, some spilled again.
    for i in (0..n).step_by(3) {
        e.update(&mut t, rel, i, Some(2)).await;
    }
    for i in (0..n).step_by(5) {
        e.update(&mut t, rel, i, None).await;
    }
    let want = expect(
        (0..n)
            .filter(|i| i % 5 != 0)
            .map(|i| (i, if i % 3 == 0 { 2 } else { 1 })),
    );
    let snap = e.gtm.timestamp().await.unwrap();
    assert_eq!(e.contents(&t, rel, snap).await, want);
    // A key range in the middle, bounds excluded.
    let mid: Vec<u32> =
        e.dn.scan(
            &t,
            rel,
            Bound::Excluded(key(100).to_vec()),
            Bound::Excluded(key(110).to_vec()),
            snap,
        )
        .await
        .unwrap()
        .map(|r| u32::from_be_bytes(r.unwrap().0.try_into().unwrap()))
        .collect();
    assert_eq!(mid, vec![101, 102, 103, 104, 106, 107, 108, 109]);
    // Nobody else sees any of it yet.
    assert!(e.committed(rel).await.is_empty());
    e.dn.commit(t, &e.gtm).await.unwrap();
    assert_eq!(e.committed(rel).await, want);
    // Its rows are free for others at once.
    let mut u = e.begin(Isolation::ReadCommitted).await;
    e.update(&mut u, rel, 1, Some(3)).await;
    e.dn.commit(u, &e.gtm).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn savepoints_roll_back_across_spills() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let mut t = e.begin(Isolation::ReadCommitted).await;
    for i in 0..100 {
        e.insert(&mut t, rel, i, 1).await;
    }
    let sp1 = t.savepoint();
    for i in 100..10_000 {
        e.insert(&mut t, rel, i, 1).await;
    }
    for i in 0..200 {
        e.update(&mut t, rel, i, Some(2)).await;
    }
    let sp2 = t.savepoint();
    for i in 150..5_000 {
        e.update(&mut t, rel, i, if i % 2 == 0 { None } else { Some(3) })
            .await;
    }
    let snap = e.gtm.timestamp().await.unwrap();
    t.rollback_to(&sp2).unwrap();
    let at_sp2 = expect((0..10_000).map(|i| (i, if i < 200 { 2 } else { 1 })));
    assert_eq!(e.contents(&t, rel, snap).await, at_sp2);
    t.rollback_to(&sp1).unwrap();
    assert_eq!(
        e.contents(&t, rel, snap).await,
        expect((0..100).map(|i| (i, 1)))
    );
    // Rows written after the savepoint are still locked by it (as PostgreSQL keeps them).
    let mut other = e.begin(Isolation::ReadCommitted).await;
    let waiter = {
        let dn = e.dn.clone();
        tokio::spawn(async move {
            let r = dn.lock_row(&mut other, rel, &key(5_000)).await;
            (r, other)
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !waiter.is_finished(),
        "a row locked before the rollback is free"
    );
    e.insert(&mut t, rel, 100, 4).await;
    e.dn.commit(t, &e.gtm).await.unwrap();
    let (r, other) = waiter.await.unwrap();
    assert_eq!(r.unwrap(), None);
    e.dn.abort(other, &e.gtm).await;
    let mut want = expect((0..100).map(|i| (i, 1)));
    want.insert(100, row(100, 4));
    assert_eq!(e.committed(rel).await, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn others_wait_behind_spilled_rows() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let mut setup = e.begin(Isolation::ReadCommitted).await;
    for i in 0..10 {
        e.insert(&mut setup, rel, i, 1).await;
    }
    e.dn.commit(setup, &e.gtm).await.unwrap();

    let mut big = e.begin(Isolation::ReadCommitted).await;
    let rr = e.begin(Isolation::RepeatableRead).await;
    e.update(&mut big, rel, 3, Some(2)).await;
    for i in 10..10_000 {
        e.insert(&mut big, rel, i, 1).await;
    }
    // Row 3 is held through an intent now; a READ COMMITTED locker waits for the commit
    // and then reads the new row, a REPEATABLE READ one fails.
    let waiters: Vec<_> = [
        (Isolation::ReadCommitted, None),
        (Isolation::RepeatableRead, Some(rr)),
    ]
    .into_iter()
    .map(|(iso, txn)| {
        let (dn, gtm) = (e.dn.clone(), e.gtm.clone());
        tokio::spawn(async move {
            let mut t = match txn {
                Some(t) => t,
                None => dn.begin(gtm.begin().await.unwrap(), iso),
            };
            let r = dn.lock_row(&mut t, rel, &key(3)).await;
            dn.abort(t, &gtm).await;
            r
        })
    })
    .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        e.dn.lock_queue_len(rel, &key(3)),
        2,
        "both wait in the row's queue"
    );
    e.dn.commit(big, &e.gtm).await.unwrap();
    let mut results = Vec::new();
    for w in waiters {
        results.push(w.await.unwrap());
    }
    assert_eq!(results[0].as_ref().unwrap().as_ref(), Some(&row(3, 2)));
    assert_eq!(
        results[1].as_ref().unwrap_err().code,
        codes::SERIALIZATION_FAILURE
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deadlock_through_a_spilled_row_has_one_victim() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let mut big = e.begin(Isolation::ReadCommitted).await;
    e.insert(&mut big, rel, 1, 1).await;
    for i in 10..10_000 {
        e.insert(&mut big, rel, i, 1).await;
    }
    let mut small = e.begin(Isolation::ReadCommitted).await;
    e.insert(&mut small, rel, 2, 1).await;
    let small_task = {
        let (dn, gtm) = (e.dn.clone(), e.gtm.clone());
        tokio::spawn(async move {
            // Row 1 is held by `big`'s intent.
            let r = dn.lock_row(&mut small, rel, &key(1)).await;
            match r {
                Ok(_) => dn.commit(small, &gtm).await.map(|_| ()),
                Err(err) => {
                    dn.abort(small, &gtm).await;
                    Err(err)
                }
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let big_result = e.dn.lock_row(&mut big, rel, &key(2)).await;
    let big_result = match big_result {
        Ok(_) => e.dn.commit(big, &e.gtm).await.map(|_| ()),
        Err(err) => {
            e.dn.abort(big, &e.gtm).await;
            Err(err)
        }
    };
    let small_result = small_task.await.unwrap();
    let victims = [&big_result, &small_result]
        .iter()
        .filter(|r| {
            r.as_ref()
                .is_err_and(|e| e.code == codes::DEADLOCK_DETECTED)
        })
        .count();
    assert_eq!(victims, 1, "big: {big_result:?}, small: {small_result:?}");
    assert!(big_result.is_ok() || small_result.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn aborted_spilled_transaction_leaves_nothing() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let mut t = e.begin(Isolation::ReadCommitted).await;
    for i in 0..10_000 {
        e.insert(&mut t, rel, i, 1).await;
    }
    e.dn.abort(t, &e.gtm).await;
    assert!(e.committed(rel).await.is_empty());
    // Its rows are free, and a later transaction reusing its keys sees only its own.
    let mut u = e.begin(Isolation::ReadCommitted).await;
    for i in (0..10_000).step_by(7) {
        e.insert(&mut u, rel, i, 2).await;
    }
    e.dn.commit(u, &e.gtm).await.unwrap();
    assert_eq!(
        e.committed(rel).await,
        expect((0..10_000).step_by(7).map(|i| (i, 2)))
    );
}
