//! Deferred increments and increment locks (`Datanode::increment`), over real files and a
//! real in-process GTM. Rows hold one bigint (`types::codec`'s row encoding); an increment
//! adds to it.

use bytes::Bytes;
use datanode::{ColumnIncrement, Datanode, DatanodeOptions, IncrementOp, Isolation, Txn};
use pgerror::{codes, PgError};
use std::sync::Arc;
use std::time::Duration;

struct Env {
    _dir: tempfile::TempDir,
    dn: Arc<Datanode>,
    gtm: gtm::GtmClient,
    rel: u64,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = DatanodeOptions::new(dir.path().join("dn"));
    opts.cache_size = 32 << 20;
    opts.deadlock_timeout = Duration::from_millis(200);
    let dn = Datanode::open(opts).unwrap();
    let gtm = gtm::GtmClient::local(&dir.path().join("gtm")).unwrap();
    let rel = dn.create_rel().unwrap();
    let e = Env {
        _dir: dir,
        dn,
        gtm,
        rel,
    };
    for key in ["a", "b"] {
        let mut t = e.begin().await;
        e.dn.lock_row(&mut t, rel, key.as_bytes()).await.unwrap();
        e.dn.put(&mut t, rel, key.as_bytes(), Some(int(0))).unwrap();
        e.dn.commit(t, &e.gtm).await.unwrap();
    }
    e
}

fn int(v: i64) -> Bytes {
    let mut out = Vec::new();
    types::codec::encode_row(&[types::Value::Int8(v)], &mut out);
    Bytes::from(out)
}

fn value(r: &Bytes) -> i64 {
    match types::codec::decode_row(r).unwrap()[..] {
        [types::Value::Int8(v)] => v,
        ref other => panic!("not one bigint: {other:?}"),
    }
}

fn add(d: i64) -> Vec<ColumnIncrement> {
    vec![ColumnIncrement {
        column: 0,
        op: IncrementOp::Add,
        amount: types::Value::Int8(d),
    }]
}

impl Env {
    async fn begin(&self) -> Box<Txn> {
        self.dn
            .begin(self.gtm.begin().await.unwrap(), Isolation::ReadCommitted)
    }

    async fn committed(&self, key: &str) -> i64 {
        let snap = self.gtm.timestamp().await.unwrap();
        let t = self.dn.begin(snap, Isolation::ReadCommitted);
        value(
            &self
                .dn
                .get(&t, self.rel, key.as_bytes(), snap)
                .await
                .unwrap()
                .unwrap(),
        )
    }

    /// Waits until `n` transactions are queued for the row.
    async fn queued(&self, key: &str, n: usize) {
        for _ in 0..500 {
            if self.dn.lock_queue_len(self.rel, key.as_bytes()) == n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "expected {n} waiters on {key}, have {}",
            self.dn.lock_queue_len(self.rel, key.as_bytes())
        );
    }

    /// A transaction that holds an increment lock on `key` (the row is made busy by
    /// an exclusive holder first, since an idle row is locked the ordinary way).
    async fn increment_holder(&self, key: &'static str, d: i64) -> Box<Txn> {
        let mut owner = self.begin().await;
        self.dn
            .lock_row(&mut owner, self.rel, key.as_bytes())
            .await
            .unwrap();
        let (dn, rel, mut t) = (self.dn.clone(), self.rel, self.begin().await);
        let waiting = tokio::spawn(async move {
            let r = dn
                .increment(&mut t, rel, key.as_bytes(), add(d))
                .await
                .unwrap();
            (r, t)
        });
        self.queued(key, 1).await;
        self.dn.commit(owner, &self.gtm).await.unwrap();
        let (r, t) = waiting.await.unwrap();
        assert_eq!(r, Some(true), "deferred behind the exclusive owner");
        t
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn increment_of_an_idle_row_takes_the_exclusive_lock() {
    let e = env().await;
    let mut t = e.begin().await;
    assert_eq!(
        e.dn.increment(&mut t, e.rel, b"a", add(1)).await.unwrap(),
        None
    );
    // t holds the ordinary lock now: another increment waits for it
    let (dn, rel, mut other) = (e.dn.clone(), e.rel, e.begin().await);
    let waiting = tokio::spawn(async move {
        (
            dn.increment(&mut other, rel, b"a", add(2)).await.unwrap(),
            other,
        )
    });
    e.queued("a", 1).await;
    e.dn.abort(t, &e.gtm).await;
    let (r, other) = waiting.await.unwrap();
    assert_eq!(r, Some(true));
    e.dn.commit(other, &e.gtm).await.unwrap();
    assert_eq!(e.committed("a").await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn repeatable_read_takes_the_ordinary_way() {
    let e = env().await;
    let _holder = e.increment_holder("a", 1).await;
    let mut t =
        e.dn.begin(e.gtm.begin().await.unwrap(), Isolation::RepeatableRead);
    assert_eq!(
        e.dn.increment(&mut t, e.rel, b"a", add(1)).await.unwrap(),
        None
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn increments_of_a_busy_row_commute_and_exclusive_lockers_wait_for_them() {
    let e = env().await;
    let t1 = e.increment_holder("a", 1).await;
    // a second increment does not wait for the first
    let mut t2 = e.begin().await;
    let r = tokio::time::timeout(
        Duration::from_secs(30),
        e.dn.increment(&mut t2, e.rel, b"a", add(10)),
    )
    .await;
    assert_eq!(
        r.expect("an increment waited for another").unwrap(),
        Some(true)
    );
    // readers see neither until they commit
    assert_eq!(e.committed("a").await, 0);
    // an exclusive locker waits for both increment holders
    let (dn, rel, mut x) = (e.dn.clone(), e.rel, e.begin().await);
    let locker = tokio::spawn(async move {
        let row = dn.lock_row(&mut x, rel, b"a").await.unwrap().unwrap();
        (value(&row), x)
    });
    e.queued("a", 1).await;
    e.dn.commit(t2, &e.gtm).await.unwrap();
    e.queued("a", 1).await; // still waiting for t1
    assert_eq!(e.committed("a").await, 10);
    e.dn.commit(t1, &e.gtm).await.unwrap();
    let (seen, x) = locker.await.unwrap();
    assert_eq!(seen, 11, "the exclusive locker reads both increments");
    e.dn.commit(x, &e.gtm).await.unwrap();
    assert_eq!(e.dn.lock_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn own_increment_is_applied_before_the_row_is_locked_again() {
    let e = env().await;
    let mut t = e.increment_holder("a", 5).await;
    assert!(t.has_increments());
    assert_eq!(
        e.dn.increment(&mut t, e.rel, b"a", add(2)).await.unwrap(),
        Some(true)
    );
    let row = e.dn.lock_row(&mut t, e.rel, b"a").await.unwrap().unwrap();
    assert_eq!(value(&row), 7);
    assert!(!t.has_increments());
    e.dn.put(&mut t, e.rel, b"a", Some(int(value(&row) * 2)))
        .unwrap();
    e.dn.commit(t, &e.gtm).await.unwrap();
    assert_eq!(e.committed("a").await, 14);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_holder_that_applied_its_increment_keeps_the_row_until_it_ends() {
    let e = env().await;
    let mut t1 = e.increment_holder("a", 1).await;
    let mut t2 = e.begin().await;
    assert_eq!(
        e.dn.increment(&mut t2, e.rel, b"a", add(10)).await.unwrap(),
        Some(true)
    );
    // t1 reads its row: it now computes from the newest version and holds it (Apply)
    assert_eq!(
        value(&e.dn.lock_row(&mut t1, e.rel, b"a").await.unwrap().unwrap()),
        1
    );
    // t2's commit may not merge under it
    let (dn, gtm) = (e.dn.clone(), e.gtm.clone());
    let committing = tokio::spawn(async move { dn.commit(t2, &gtm).await.unwrap() });
    e.queued("a", 1).await;
    assert_eq!(e.committed("a").await, 0);
    e.dn.commit(t1, &e.gtm).await.unwrap();
    committing.await.unwrap();
    assert_eq!(e.committed("a").await, 11, "neither increment is lost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_row_that_had_increment_holders_takes_increment_locks_when_idle() {
    let e = env().await;
    let t = e.increment_holder("a", 1).await;
    e.dn.commit(t, &e.gtm).await.unwrap();
    assert_eq!(e.dn.lock_count(), 0, "both rows are idle");
    let mut t = e.begin().await;
    assert_eq!(
        e.dn.increment(&mut t, e.rel, b"a", add(1)).await.unwrap(),
        Some(true),
        "a is hot"
    );
    assert_eq!(
        e.dn.increment(&mut t, e.rel, b"b", add(1)).await.unwrap(),
        None,
        "b never had increments"
    );
    e.dn.commit(t, &e.gtm).await.unwrap();
    assert_eq!(e.committed("a").await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rollback_to_savepoint_drops_later_increments() {
    let e = env().await;
    let mut t = e.increment_holder("a", 1).await;
    let sp = t.savepoint();
    assert_eq!(
        e.dn.increment(&mut t, e.rel, b"a", add(100)).await.unwrap(),
        Some(true)
    );
    t.rollback_to(&sp).unwrap();
    e.dn.commit(t, &e.gtm).await.unwrap();
    assert_eq!(e.committed("a").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_increment_that_fails_at_commit_aborts_the_transaction() {
    let e = env().await;
    let mut t = e.increment_holder("a", 1).await;
    // Applied to a at commit: 0 + 1 + i64::MAX is out of bigint's range.
    let overflow = add(i64::MAX);
    assert_eq!(
        e.dn.increment(&mut t, e.rel, b"b", add(0)).await.unwrap(),
        None,
        "b is idle"
    );
    e.dn.put(&mut t, e.rel, b"b", Some(int(42))).unwrap();
    assert_eq!(
        e.dn.increment(&mut t, e.rel, b"a", overflow).await.unwrap(),
        Some(true)
    );
    let err = e.dn.commit(t, &e.gtm).await.unwrap_err();
    assert_eq!(err.code, codes::NUMERIC_VALUE_OUT_OF_RANGE);
    assert_eq!(
        (e.committed("a").await, e.committed("b").await),
        (0, 0),
        "nothing of it committed"
    );
    assert_eq!(e.dn.lock_count(), 0, "its locks are released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deadlock_through_an_increment_holder_has_one_victim() {
    let e = env().await;
    // t1 holds an increment on a and an exclusive lock on nothing yet; t2 locks b.
    let t1 = e.increment_holder("a", 1).await;
    let mut t2 = e.begin().await;
    e.dn.lock_row(&mut t2, e.rel, b"b").await.unwrap();
    let run =
        |mut t: Box<Txn>, key: &'static [u8], dn: Arc<Datanode>, gtm: gtm::GtmClient, rel: u64| {
            tokio::spawn(async move {
                match dn.lock_row(&mut t, rel, key).await {
                    Ok(_) => dn.commit(t, &gtm).await.err(),
                    Err(err) => {
                        dn.abort(t, &gtm).await;
                        Some(err)
                    }
                }
            })
        };
    // t1 waits for t2's lock on b; t2 waits for t1's increment on a
    let h1 = run(t1, b"b", e.dn.clone(), e.gtm.clone(), e.rel);
    let h2 = run(t2, b"a", e.dn.clone(), e.gtm.clone(), e.rel);
    let errs: Vec<PgError> = [h1.await.unwrap(), h2.await.unwrap()]
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(errs.len(), 1, "exactly one victim: {errs:?}");
    assert_eq!(errs[0].code, codes::DEADLOCK_DETECTED);
    assert_eq!(e.dn.lock_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_concurrent_increments_sum_exactly() {
    let e = env().await;
    let holder = e.increment_holder("a", 1).await; // keeps the row busy at first
    let (writers, per_writer) = (12i64, 40i64);
    let mut tasks = Vec::new();
    for w in 0..writers {
        let (dn, gtm, rel) = (e.dn.clone(), e.gtm.clone(), e.rel);
        tasks.push(tokio::spawn(async move {
            let mut committed = 0;
            for i in 0..per_writer {
                let mut t = dn.begin(gtm.begin().await.unwrap(), Isolation::ReadCommitted);
                let d = w * 1000 + i;
                if dn
                    .increment(&mut t, rel, b"a", add(d))
                    .await
                    .unwrap()
                    .is_none()
                {
                    // the row was idle: the ordinary way
                    let row = dn.lock_row(&mut t, rel, b"a").await.unwrap().unwrap();
                    dn.put(&mut t, rel, b"a", Some(int(value(&row) + d)))
                        .unwrap();
                }
                if i % 7 == 3 {
                    dn.abort(t, &gtm).await;
                } else {
                    dn.commit(t, &gtm).await.unwrap();
                    committed += d;
                }
            }
            committed
        }));
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    e.dn.commit(holder, &e.gtm).await.unwrap();
    let mut expected = 1;
    for t in tasks {
        expected += t.await.unwrap();
    }
    assert_eq!(e.committed("a").await, expected);
    assert_eq!(e.dn.lock_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn prepare_applies_increments_and_readers_wait_for_the_outcome() {
    let e = Arc::new(env().await);
    let t1 = e.increment_holder("a", 1).await;
    let start = t1.start_ts();
    let p1 = e.dn.prepare(t1).await.unwrap();
    // Prepared, t1 owns the row: another incrementer's commit waits for its outcome.
    let incrementer = {
        let e = e.clone();
        tokio::spawn(async move {
            let mut t2 = e.begin().await;
            e.dn.increment(&mut t2, e.rel, b"a", add(10)).await.unwrap();
            e.dn.commit(t2, &e.gtm).await.unwrap();
        })
    };
    let ts = e.gtm.commit(start).await.unwrap();
    let reader = {
        let e = e.clone();
        tokio::spawn(async move { e.committed("a").await })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        !reader.is_finished(),
        "the reader waits for the prepared one"
    );
    assert!(!incrementer.is_finished(), "so does the incrementer");
    p1.commit(ts).await.unwrap();
    e.gtm.finish(start).await.unwrap();
    assert_eq!(reader.await.unwrap(), 1);
    incrementer.await.unwrap();
    assert_eq!(e.committed("a").await, 11);
    assert_eq!(e.dn.lock_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_increment_that_would_overflow_fails_the_prepare() {
    let e = env().await;
    let mut t = e.increment_holder("a", 1).await;
    assert_eq!(
        e.dn.increment(&mut t, e.rel, b"a", add(i64::MAX))
            .await
            .unwrap(),
        Some(true)
    );
    let err = e.dn.prepare(t).await.err().expect("prepare fails");
    assert_eq!(err.code, codes::NUMERIC_VALUE_OUT_OF_RANGE);
    assert_eq!(e.committed("a").await, 0, "nothing of it committed");
    assert_eq!(e.dn.lock_count(), 0, "its locks are released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_commit_waiting_to_merge_can_be_cancelled_and_aborts() {
    let e = env().await;
    let mut t1 = e.increment_holder("a", 1).await;
    let mut t2 = e.begin().await;
    assert_eq!(
        e.dn.increment(&mut t2, e.rel, b"a", add(10)).await.unwrap(),
        Some(true)
    );
    // t1 holds the row (Apply): t2's commit waits to merge (start_merges)
    e.dn.lock_row(&mut t1, e.rel, b"a").await.unwrap();
    let t2_start = t2.start_ts();
    let (dn, gtm) = (e.dn.clone(), e.gtm.clone());
    let committing = tokio::spawn(async move { dn.commit(t2, &gtm).await });
    e.queued("a", 1).await;
    assert!(e.dn.cancel_waits_of(t2_start, "a cycle".into()));
    let err = committing.await.unwrap().unwrap_err();
    assert_eq!(err.code, codes::DEADLOCK_DETECTED);
    assert_eq!(err.detail.as_deref(), Some("a cycle"));
    assert_eq!(e.dn.lock_queue_len(e.rel, b"a"), 0);
    assert!(
        !e.dn.cancel_waits_of(t2_start, "again".into()),
        "no wait is left"
    );
    e.dn.commit(t1, &e.gtm).await.unwrap();
    assert_eq!(e.committed("a").await, 1, "t2's increment is gone");
    assert_eq!(e.dn.lock_count(), 0, "t2's locks are released");
}
