//! Transaction semantics of the datanode over real files and a real (in-process) GTM.

use bytes::Bytes;
use datanode::{Datanode, DatanodeOptions, Isolation, Txn};
use pgerror::{codes, PgError};
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

struct Env {
    _dir: tempfile::TempDir,
    dn: Arc<Datanode>,
    gtm: gtm::GtmClient,
}

fn env_with(f: impl FnOnce(&mut DatanodeOptions)) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = DatanodeOptions::new(dir.path().join("dn"));
    opts.cache_size = 32 << 20;
    opts.deadlock_timeout = Duration::from_millis(200);
    f(&mut opts);
    let dn = Datanode::open(opts).unwrap();
    let gtm = gtm::GtmClient::local(&dir.path().join("gtm")).unwrap();
    Env { _dir: dir, dn, gtm }
}

fn env() -> Env {
    env_with(|_| {})
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

impl Env {
    async fn begin(&self, iso: Isolation) -> Box<Txn> {
        let ts = self.gtm.begin().await.unwrap();
        self.dn.begin(ts, iso)
    }
    async fn snap(&self) -> u64 {
        self.gtm.timestamp().await.unwrap()
    }
    /// Commits one transaction writing `kvs`.
    async fn write(&self, rel: u64, kvs: &[(&str, Option<&str>)]) -> u64 {
        let mut t = self.begin(Isolation::ReadCommitted).await;
        for (k, v) in kvs {
            self.dn.lock_row(&mut t, rel, k.as_bytes()).await.unwrap();
            self.dn.put(&mut t, rel, k.as_bytes(), v.map(b)).unwrap();
        }
        self.dn.commit(t, &self.gtm).await.unwrap()
    }
    async fn read(&self, rel: u64, key: &str, snap: u64) -> Option<String> {
        let t = self.dn.begin(snap, Isolation::ReadCommitted);
        let r = self.dn.get(&t, rel, key.as_bytes(), snap).await.unwrap();
        r.map(|r| String::from_utf8(r.to_vec()).unwrap())
    }
    async fn scan_all(&self, txn: &Txn, rel: u64, snap: u64) -> Vec<(String, String)> {
        self.dn
            .scan(txn, rel, Bound::Unbounded, Bound::Unbounded, snap)
            .await
            .unwrap()
            .map(|r| {
                let (k, v) = r.unwrap();
                (
                    String::from_utf8(k).unwrap(),
                    String::from_utf8(v.to_vec()).unwrap(),
                )
            })
            .collect()
    }
}

fn dup() -> PgError {
    PgError::new(
        codes::UNIQUE_VIOLATION,
        "duplicate key value violates unique constraint \"t_pkey\"",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mvcc_visibility_at_snapshots() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let s0 = e.snap().await;
    let t1 = e.write(rel, &[("a", Some("1")), ("b", Some("1"))]).await;
    let s1 = e.snap().await;
    let t2 = e
        .write(rel, &[("a", Some("2")), ("b", None), ("c", Some("2"))])
        .await;
    let s2 = e.snap().await;
    assert!(s0 < t1 && t1 < s1 && s1 < t2 && t2 < s2);

    assert_eq!(e.read(rel, "a", s0).await, None);
    assert_eq!(e.read(rel, "a", s1).await.as_deref(), Some("1"));
    assert_eq!(e.read(rel, "a", t1).await.as_deref(), Some("1"));
    assert_eq!(e.read(rel, "a", t2 - 1).await.as_deref(), Some("1"));
    assert_eq!(e.read(rel, "a", s2).await.as_deref(), Some("2"));
    assert_eq!(e.read(rel, "b", s1).await.as_deref(), Some("1"));
    assert_eq!(e.read(rel, "b", s2).await, None);

    let t = e.dn.begin(s1, Isolation::RepeatableRead);
    assert_eq!(
        e.scan_all(&t, rel, s1).await,
        vec![("a".into(), "1".into()), ("b".into(), "1".into())]
    );
    assert_eq!(
        e.scan_all(&t, rel, s2).await,
        vec![("a".into(), "2".into()), ("c".into(), "2".into())]
    );
    assert_eq!(e.scan_all(&t, rel, s0).await, vec![]);

    // Bounds.
    let rows: Vec<_> =
        e.dn.scan(
            &t,
            rel,
            Bound::Excluded(b"a".to_vec()),
            Bound::Included(b"c".to_vec()),
            s2,
        )
        .await
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(rows, vec![b"c".to_vec()]);
    // Other relations are invisible.
    let rel2 = e.dn.create_rel().unwrap();
    assert_ne!(rel, rel2);
    assert_eq!(e.scan_all(&t, rel2, s2).await, vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keys_with_zero_bytes_and_prefixes() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let keys: Vec<Vec<u8>> = vec![
        vec![],
        vec![0],
        vec![0, 0],
        vec![0, 1],
        vec![1],
        vec![1, 0],
        vec![0xFF],
        vec![0xFF, 0],
    ];
    let mut t = e.begin(Isolation::ReadCommitted).await;
    for (i, k) in keys.iter().enumerate() {
        e.dn.insert(&mut t, rel, k, Bytes::from(vec![i as u8]), dup)
            .await
            .unwrap();
    }
    e.dn.commit(t, &e.gtm).await.unwrap();
    let s = e.snap().await;
    let t = e.dn.begin(s, Isolation::ReadCommitted);
    let got: Vec<Vec<u8>> =
        e.dn.scan(&t, rel, Bound::Unbounded, Bound::Unbounded, s)
            .await
            .unwrap()
            .map(|r| r.unwrap().0)
            .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(got, sorted);
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(
            e.dn.get(&t, rel, k, s).await.unwrap().unwrap()[..],
            [i as u8]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn read_your_own_writes_and_savepoints() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    e.write(
        rel,
        &[("a", Some("a0")), ("b", Some("b0")), ("d", Some("d0"))],
    )
    .await;

    let mut t = e.begin(Isolation::RepeatableRead).await;
    let s = t.start_ts();
    assert!(!t.has_writes());
    assert_eq!(
        e.dn.lock_row(&mut t, rel, b"a").await.unwrap(),
        Some(b("a0"))
    );
    e.dn.put(&mut t, rel, b"a", Some(b("a1"))).unwrap();
    e.dn.insert(&mut t, rel, b"c", b("c1"), dup).await.unwrap();
    assert!(t.has_writes());
    let sp = t.savepoint();
    e.dn.lock_row(&mut t, rel, b"b").await.unwrap();
    e.dn.put(&mut t, rel, b"b", None).unwrap();
    e.dn.put(&mut t, rel, b"a", Some(b("a2"))).unwrap();
    e.dn.insert(&mut t, rel, b"e", b("e1"), dup).await.unwrap();
    assert_eq!(e.dn.get(&t, rel, b"a", s).await.unwrap(), Some(b("a2")));
    assert_eq!(e.dn.get(&t, rel, b"b", s).await.unwrap(), None);
    assert_eq!(
        e.scan_all(&t, rel, s).await,
        vec![
            ("a".into(), "a2".into()),
            ("c".into(), "c1".into()),
            ("d".into(), "d0".into()),
            ("e".into(), "e1".into())
        ]
    );
    // Duplicate insert against own pending row and against a committed row.
    let err =
        e.dn.insert(&mut t, rel, b"c", b("x"), dup)
            .await
            .unwrap_err();
    assert_eq!(err.code, codes::UNIQUE_VIOLATION);
    let err =
        e.dn.insert(&mut t, rel, b"d", b("x"), dup)
            .await
            .unwrap_err();
    assert_eq!(err.code, codes::UNIQUE_VIOLATION);

    t.rollback_to(&sp).unwrap();
    assert_eq!(e.dn.get(&t, rel, b"a", s).await.unwrap(), Some(b("a1")));
    assert_eq!(e.dn.get(&t, rel, b"b", s).await.unwrap(), Some(b("b0")));
    assert_eq!(
        e.scan_all(&t, rel, s).await,
        vec![
            ("a".into(), "a1".into()),
            ("b".into(), "b0".into()),
            ("c".into(), "c1".into()),
            ("d".into(), "d0".into())
        ]
    );
    // Other transactions do not see uncommitted writes.
    let s_other = e.snap().await;
    assert_eq!(e.read(rel, "a", s_other).await.as_deref(), Some("a0"));
    assert_eq!(e.read(rel, "c", s_other).await, None);

    let sp0 = Txn::savepoint(&t);
    let _ = sp0;
    e.dn.commit(t, &e.gtm).await.unwrap();
    let s2 = e.snap().await;
    let t = e.dn.begin(s2, Isolation::ReadCommitted);
    assert_eq!(
        e.scan_all(&t, rel, s2).await,
        vec![
            ("a".into(), "a1".into()),
            ("b".into(), "b0".into()),
            ("c".into(), "c1".into()),
            ("d".into(), "d0".into())
        ]
    );
    assert_eq!(e.dn.lock_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rollback_to_start_makes_txn_read_only() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let mut t = e.begin(Isolation::ReadCommitted).await;
    let sp = t.savepoint();
    e.dn.insert(&mut t, rel, b"k", b("v"), dup).await.unwrap();
    t.rollback_to(&sp).unwrap();
    assert!(!t.has_writes());
    let start = t.start_ts();
    assert_eq!(e.dn.commit(t, &e.gtm).await.unwrap(), start);
    assert_eq!(e.read(rel, "k", e.snap().await).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn repeatable_read_write_conflict_is_40001() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    e.write(rel, &[("k", Some("0"))]).await;

    let mut t1 = e.begin(Isolation::RepeatableRead).await;
    let mut t2 = e.begin(Isolation::RepeatableRead).await;
    assert_eq!(
        e.dn.lock_row(&mut t1, rel, b"k").await.unwrap(),
        Some(b("0"))
    );
    e.dn.put(&mut t1, rel, b"k", Some(b("1"))).unwrap();

    let dn = e.dn.clone();
    let h = tokio::spawn(async move {
        let r = dn.lock_row(&mut t2, rel, b"k").await;
        (r, t2)
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    e.dn.commit(t1, &e.gtm).await.unwrap();
    let (r, t2) = h.await.unwrap();
    let err = r.unwrap_err();
    assert_eq!(err.code, codes::SERIALIZATION_FAILURE);
    assert_eq!(
        err.message,
        "could not serialize access due to concurrent update"
    );
    e.dn.abort(t2, &e.gtm).await;

    // A transaction that started after the commit does not conflict.
    let mut t3 = e.begin(Isolation::RepeatableRead).await;
    assert_eq!(
        e.dn.lock_row(&mut t3, rel, b"k").await.unwrap(),
        Some(b("1"))
    );
    e.dn.abort(t3, &e.gtm).await;
    assert_eq!(e.dn.lock_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn read_committed_lock_row_returns_newer_row_after_waiting() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    e.write(rel, &[("k", Some("0"))]).await;

    let mut t1 = e.begin(Isolation::ReadCommitted).await;
    let mut t2 = e.begin(Isolation::ReadCommitted).await;
    let (t1_start, t2_start) = (t1.start_ts(), t2.start_ts());
    e.dn.lock_row(&mut t1, rel, b"k").await.unwrap();
    e.dn.put(&mut t1, rel, b"k", Some(b("1"))).unwrap();

    let dn = e.dn.clone();
    let h = tokio::spawn(async move {
        let r = dn.lock_row(&mut t2, rel, b"k").await;
        (r, t2)
    });
    // t2 queues behind t1.
    while e.dn.lock_queue_len(rel, b"k") == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(e.dn.wait_for_edges(), vec![(t2_start, t1_start)]);
    e.dn.commit(t1, &e.gtm).await.unwrap();
    let (r, mut t2) = h.await.unwrap();
    assert_eq!(r.unwrap(), Some(b("1")));
    assert_eq!(e.dn.wait_for_edges(), vec![]);
    e.dn.put(&mut t2, rel, b"k", Some(b("2"))).unwrap();
    e.dn.commit(t2, &e.gtm).await.unwrap();
    assert_eq!(e.read(rel, "k", e.snap().await).await.as_deref(), Some("2"));

    // A waiter on a row that the owner deletes gets None.
    let mut t3 = e.begin(Isolation::ReadCommitted).await;
    let mut t4 = e.begin(Isolation::ReadCommitted).await;
    e.dn.lock_row(&mut t3, rel, b"k").await.unwrap();
    e.dn.put(&mut t3, rel, b"k", None).unwrap();
    let dn = e.dn.clone();
    let h = tokio::spawn(async move {
        let r = dn.lock_row(&mut t4, rel, b"k").await;
        (r, t4)
    });
    while e.dn.lock_queue_len(rel, b"k") == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    e.dn.commit(t3, &e.gtm).await.unwrap();
    let (r, t4) = h.await.unwrap();
    assert_eq!(r.unwrap(), None);
    e.dn.abort(t4, &e.gtm).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn abort_wakes_waiter_with_old_row() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    e.write(rel, &[("k", Some("0"))]).await;
    let mut t1 = e.begin(Isolation::RepeatableRead).await;
    let mut t2 = e.begin(Isolation::RepeatableRead).await;
    e.dn.lock_row(&mut t1, rel, b"k").await.unwrap();
    e.dn.put(&mut t1, rel, b"k", Some(b("1"))).unwrap();
    let dn = e.dn.clone();
    let h = tokio::spawn(async move { (dn.lock_row(&mut t2, rel, b"k").await, t2) });
    while e.dn.lock_queue_len(rel, b"k") == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    e.dn.abort(t1, &e.gtm).await;
    let (r, t2) = h.await.unwrap();
    assert_eq!(r.unwrap(), Some(b("0"))); // no conflict: t1 aborted
    e.dn.abort(t2, &e.gtm).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_transaction_deadlock_has_exactly_one_victim() {
    for round in 0..3 {
        let e = env();
        let rel = e.dn.create_rel().unwrap();
        e.write(rel, &[("k1", Some("0")), ("k2", Some("0"))]).await;
        let mut a = e.begin(Isolation::ReadCommitted).await;
        let mut bt = e.begin(Isolation::ReadCommitted).await;
        e.dn.lock_row(&mut a, rel, b"k1").await.unwrap();
        e.dn.lock_row(&mut bt, rel, b"k2").await.unwrap();
        let run = |mut t: Box<Txn>, key: &'static [u8], dn: Arc<Datanode>, gtm: gtm::GtmClient| {
            tokio::spawn(async move {
                match dn.lock_row(&mut t, rel, key).await {
                    Ok(_) => {
                        dn.put(&mut t, rel, key, Some(b("x"))).unwrap();
                        dn.commit(t, &gtm).await.unwrap();
                        None
                    }
                    Err(err) => {
                        dn.abort(t, &gtm).await;
                        Some(err)
                    }
                }
            })
        };
        let ha = run(a, b"k2", e.dn.clone(), e.gtm.clone());
        let hb = run(bt, b"k1", e.dn.clone(), e.gtm.clone());
        let ra = ha.await.unwrap();
        let rb = hb.await.unwrap();
        let errs: Vec<PgError> = [ra, rb].into_iter().flatten().collect();
        assert_eq!(
            errs.len(),
            1,
            "round {round}: exactly one victim, got {errs:?}"
        );
        assert_eq!(errs[0].code, codes::DEADLOCK_DETECTED);
        assert_eq!(errs[0].message, "deadlock detected");
        println!("deadlock detail: {:?}", errs[0].detail);
        assert_eq!(e.dn.lock_count(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_waits_of_ends_a_lock_wait_with_40p01() {
    let e = env_with(|o| o.deadlock_timeout = Duration::from_secs(60));
    let rel = e.dn.create_rel().unwrap();
    e.write(rel, &[("k", Some("0"))]).await;
    let mut holder = e.begin(Isolation::ReadCommitted).await;
    e.dn.lock_row(&mut holder, rel, b"k").await.unwrap();
    let waiter = e.begin(Isolation::ReadCommitted).await;
    let (waiter_ts, holder_ts) = (waiter.start_ts(), holder.start_ts());
    assert!(
        !e.dn.cancel_waits_of(waiter_ts, "not waiting".into()),
        "a transaction that is not waiting is left alone"
    );
    let (dn, gtm) = (e.dn.clone(), e.gtm.clone());
    let waiting = tokio::spawn(async move {
        let mut t = waiter;
        let r = dn.lock_row(&mut t, rel, b"k").await.map(|_| ());
        dn.abort(t, &gtm).await;
        r
    });
    for _ in 0..500 {
        if e.dn.lock_queue_len(rel, b"k") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(e.dn.wait_for_edges(), vec![(waiter_ts, holder_ts)]);
    assert!(!e
        .dn
        .cancel_waits_of(holder_ts, "holds, waits for nothing".into()));
    assert!(e.dn.cancel_waits_of(waiter_ts, "the cycle".into()));
    let err = waiting.await.unwrap().unwrap_err();
    assert_eq!(err.code, codes::DEADLOCK_DETECTED);
    assert_eq!(err.detail.as_deref(), Some("the cycle"));
    assert_eq!(e.dn.lock_queue_len(rel, b"k"), 0, "its queue entry is gone");
    assert!(e.dn.wait_for_edges().is_empty());
    // the holder is unaffected
    e.dn.put(&mut holder, rel, b"k", Some(b("1"))).unwrap();
    e.dn.commit(holder, &e.gtm).await.unwrap();
    assert_eq!(e.read(rel, "k", e.snap().await).await.as_deref(), Some("1"));
    assert_eq!(e.dn.lock_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_transaction_deadlock_has_exactly_one_victim() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let keys: [&'static [u8]; 3] = [b"k0", b"k1", b"k2"];
    let mut txns = Vec::new();
    for k in keys {
        let mut t = e.begin(Isolation::ReadCommitted).await;
        e.dn.lock_row(&mut t, rel, k).await.unwrap();
        txns.push(t);
    }
    let mut hs = Vec::new();
    for (i, mut t) in txns.into_iter().enumerate() {
        let dn = e.dn.clone();
        let gtm = e.gtm.clone();
        let next = keys[(i + 1) % 3];
        hs.push(tokio::spawn(async move {
            match dn.lock_row(&mut t, rel, next).await {
                Ok(_) => {
                    dn.commit(t, &gtm).await.unwrap();
                    None
                }
                Err(err) => {
                    dn.abort(t, &gtm).await;
                    Some(err.code)
                }
            }
        }));
    }
    let mut victims = 0;
    for h in hs {
        if let Some(code) = h.await.unwrap() {
            assert_eq!(code, codes::DEADLOCK_DETECTED);
            victims += 1;
        }
    }
    assert_eq!(victims, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropped_lock_wait_releases_its_queue_slot() {
    let e = env_with(|o| o.deadlock_timeout = Duration::from_secs(60));
    let rel = e.dn.create_rel().unwrap();
    let mut owner = e.begin(Isolation::ReadCommitted).await;
    e.dn.lock_row(&mut owner, rel, b"k").await.unwrap();

    // 1. A waiter cancelled while queued leaves the queue.
    let mut w1 = e.begin(Isolation::ReadCommitted).await;
    let r = tokio::time::timeout(
        Duration::from_millis(100),
        e.dn.lock_row(&mut w1, rel, b"k"),
    )
    .await;
    assert!(r.is_err(), "should still be waiting");
    assert_eq!(e.dn.lock_queue_len(rel, b"k"), 0);

    // 2. A waiter whose future is dropped after the lock was handed to it passes it on.
    let mut w2 = e.begin(Isolation::ReadCommitted).await;
    let mut w3 = e.begin(Isolation::ReadCommitted).await;
    {
        let dn = e.dn.clone();
        let mut fut = Box::pin(dn.lock_row(&mut w2, rel, b"k"));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        assert_eq!(e.dn.lock_queue_len(rel, b"k"), 1);
        e.dn.commit(owner, &e.gtm).await.unwrap(); // hands the lock to w2's (unpolled) future
        drop(fut); // ... which is dropped without seeing it
    }
    assert_eq!(e.dn.lock_count(), 0, "lock passed on and freed");
    let r = tokio::time::timeout(Duration::from_secs(5), e.dn.lock_row(&mut w3, rel, b"k")).await;
    assert!(r.is_ok(), "lock must be free");
    e.dn.abort(w3, &e.gtm).await;
    e.dn.abort(w2, &e.gtm).await;
    e.dn.abort(w1, &e.gtm).await;
    assert_eq!(e.dn.lock_count(), 0);
}

use std::future::Future;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropped_txn_releases_locks() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let mut t = e.begin(Isolation::ReadCommitted).await;
    e.dn.insert(&mut t, rel, b"k", b("v"), dup).await.unwrap();
    drop(t);
    assert_eq!(e.dn.lock_count(), 0);
    let mut t2 = e.begin(Isolation::ReadCommitted).await;
    assert_eq!(e.dn.lock_row(&mut t2, rel, b"k").await.unwrap(), None);
    e.dn.abort(t2, &e.gtm).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn group_commit_many_concurrent_committers_all_durable() {
    let dir = tempfile::tempdir().unwrap();
    let gtm = gtm::GtmClient::local(&dir.path().join("gtm")).unwrap();
    let n_tasks = 64;
    let per_task = 20;
    let rel;
    {
        let dn = Datanode::open(DatanodeOptions::new(dir.path().join("dn"))).unwrap();
        rel = dn.create_rel().unwrap();
        let mut hs = Vec::new();
        for task in 0..n_tasks {
            let dn = dn.clone();
            let gtm = gtm.clone();
            hs.push(tokio::spawn(async move {
                for i in 0..per_task {
                    let mut t = dn.begin(gtm.begin().await.unwrap(), Isolation::ReadCommitted);
                    let k = format!("t{task}-{i}");
                    dn.insert(&mut t, rel, k.as_bytes(), b(&k), dup)
                        .await
                        .unwrap();
                    dn.commit(t, &gtm).await.unwrap();
                }
            }));
        }
        for h in hs {
            h.await.unwrap();
        }
        let st = dn.storage().writer_stats();
        let batches = st.batches.load(std::sync::atomic::Ordering::Relaxed);
        let fsyncs = st.fsyncs.load(std::sync::atomic::Ordering::Relaxed);
        println!("group commit: {batches} commits, {fsyncs} fsyncs");
        assert_eq!(batches, (n_tasks * per_task) as u64);
        assert!(fsyncs < batches, "commits must share fsyncs");
    }
    // Reopen: everything acknowledged is there.
    let dn = Datanode::open(DatanodeOptions::new(dir.path().join("dn"))).unwrap();
    let s = gtm.timestamp().await.unwrap();
    let t = dn.begin(s, Isolation::ReadCommitted);
    let n = dn
        .scan(&t, rel, Bound::Unbounded, Bound::Unbounded, s)
        .await
        .unwrap()
        .count();
    assert_eq!(n, n_tasks * per_task);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn asynchronous_commit_is_visible_and_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let gtm = gtm::GtmClient::local(&dir.path().join("gtm")).unwrap();
    let mut opts = DatanodeOptions::new(dir.path().join("dn"));
    opts.synchronous_commit = false;
    let rel;
    {
        let dn = Datanode::open(opts.clone()).unwrap();
        rel = dn.create_rel().unwrap();
        for i in 0..50 {
            let mut t = dn.begin(gtm.begin().await.unwrap(), Isolation::ReadCommitted);
            dn.insert(&mut t, rel, format!("{i:03}").as_bytes(), b("v"), dup)
                .await
                .unwrap();
            dn.commit(t, &gtm).await.unwrap();
        }
        let s = gtm.timestamp().await.unwrap();
        let t = dn.begin(s, Isolation::ReadCommitted);
        assert_eq!(
            dn.scan(&t, rel, Bound::Unbounded, Bound::Unbounded, s)
                .await
                .unwrap()
                .count(),
            50
        );
        // the background flusher persists within ~200 ms
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(
            dn.storage()
                .writer_stats()
                .fsyncs
                .load(std::sync::atomic::Ordering::Relaxed)
                >= 1
        );
    }
    let dn = Datanode::open(opts).unwrap();
    let s = gtm.timestamp().await.unwrap();
    let t = dn.begin(s, Isolation::ReadCommitted);
    assert_eq!(
        dn.scan(&t, rel, Bound::Unbounded, Bound::Unbounded, s)
            .await
            .unwrap()
            .count(),
        50
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gc_removes_old_versions_but_keeps_horizon_snapshot() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let mut commits = Vec::new();
    for i in 0..5 {
        commits.push(
            e.write(
                rel,
                &[
                    ("k", Some(&format!("v{i}"))),
                    ("gone", if i < 2 { Some("x") } else { None }),
                ],
            )
            .await,
        );
    }
    assert_eq!(e.dn.storage().version_count(rel, b"k").unwrap(), 5);
    // Horizon between the 3rd and 4th commit: a snapshot at the horizon sees v2.
    let horizon = commits[2] + 1;
    let removed = e.dn.gc(horizon).unwrap();
    // k: v0, v1 removed. gone: x@0, x@1, tombstone@2 (<= horizon) removed; tombstones @3, @4 remain.
    assert_eq!(removed, 2 + 3);
    assert_eq!(e.dn.storage().version_count(rel, b"k").unwrap(), 3);
    assert_eq!(e.read(rel, "k", horizon).await.as_deref(), Some("v2"));
    assert_eq!(e.read(rel, "k", commits[3]).await.as_deref(), Some("v3"));
    assert_eq!(e.read(rel, "gone", horizon).await, None);
    assert_eq!(e.read(rel, "k", commits[4]).await.as_deref(), Some("v4"));

    // The keys stay tracked until they are fully collected.
    let now = e.snap().await;
    let removed = e.dn.gc(now).unwrap();
    assert_eq!(removed, 2 + 2);
    assert_eq!(e.dn.storage().version_count(rel, b"k").unwrap(), 1);
    assert_eq!(e.dn.storage().version_count(rel, b"gone").unwrap(), 0);
    assert_eq!(e.read(rel, "k", now).await.as_deref(), Some("v4"));
    assert_eq!(e.dn.gc(e.snap().await).unwrap(), 0);

    // VACUUM (full scan) finds versions the recent-key tracking no longer knows about.
    let rel2 = e.dn.create_rel().unwrap();
    for i in 0..3 {
        e.write(rel2, &[("a", Some(&format!("{i}")))]).await;
    }
    e.dn.gc(0).unwrap(); // sets nothing: horizon 0
    let h = e.snap().await;
    e.dn.gc(h).unwrap();
    assert_eq!(e.dn.storage().version_count(rel2, b"a").unwrap(), 1);
    for i in 3..6 {
        e.write(rel2, &[("a", Some(&format!("{i}")))]).await;
    }
    e.dn.start_gc(e.gtm.clone(), Duration::from_secs(3600));
    e.dn.vacuum(rel2).unwrap();
    assert_eq!(e.dn.storage().version_count(rel2, b"a").unwrap(), 1);
    assert_eq!(
        e.read(rel2, "a", e.snap().await).await.as_deref(),
        Some("5")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gc_tracks_only_keys_with_several_versions() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let mut t = e.begin(Isolation::ReadCommitted).await;
    for i in 0..100u32 {
        e.dn.insert(&mut t, rel, &i.to_be_bytes(), b("v"), dup)
            .await
            .unwrap();
    }
    e.dn.commit(t, &e.gtm).await.unwrap();
    assert_eq!(e.dn.gc_tracked_keys(), 0, "fresh inserts need no GC");
    e.write(rel, &[("x", Some("1"))]).await;
    assert_eq!(e.dn.gc_tracked_keys(), 0);
    e.write(rel, &[("x", Some("2"))]).await;
    assert_eq!(e.dn.gc_tracked_keys(), 1);
    e.dn.gc(e.snap().await).unwrap();
    assert_eq!(e.dn.gc_tracked_keys(), 0);
    assert_eq!(e.dn.storage().version_count(rel, b"x").unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gc_work_list_overflow_falls_back_to_full_scan() {
    let e = env_with(|o| o.cache_size = 16 << 20); // work list cap: 16 x 1024 keys
    let rel = e.dn.create_rel().unwrap();
    let n = 20_000u32;
    for round in 0..2 {
        for chunk in 0..(n / 500) {
            let mut t = e.begin(Isolation::ReadCommitted).await;
            for i in chunk * 500..(chunk + 1) * 500 {
                e.dn.lock_row(&mut t, rel, &i.to_be_bytes()).await.unwrap();
                e.dn.put(&mut t, rel, &i.to_be_bytes(), Some(b(&format!("{round}"))))
                    .unwrap();
            }
            e.dn.commit(t, &e.gtm).await.unwrap();
        }
    }
    assert!(e.dn.gc_tracked_keys() < n as usize, "work list is capped");
    let removed = e.dn.gc(e.snap().await).unwrap();
    assert_eq!(removed, n as u64);
    for i in (0..n).step_by(997) {
        assert_eq!(
            e.dn.storage().version_count(rel, &i.to_be_bytes()).unwrap(),
            1
        );
    }
}

#[test]
fn concurrent_row_ids_are_unique_and_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    let opts = DatanodeOptions::new(dir.path().join("dn"));
    let mut all: Vec<(u64, u64)> = Vec::new();
    let rel;
    {
        let dn = Datanode::open(opts.clone()).unwrap();
        rel = dn.create_rel().unwrap();
        let hs: Vec<_> = (0..4)
            .map(|t| {
                let dn = dn.clone();
                std::thread::spawn(move || {
                    (0..30_000u64)
                        .map(|i| {
                            let n = 1 + (i + t) % 3;
                            (dn.allocate_row_ids(rel, n).unwrap(), n)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in hs {
            all.extend(h.join().unwrap());
        }
    }
    all.sort();
    for w in all.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "overlapping row id blocks {w:?}");
    }
    let max_end = all.iter().map(|(f, n)| f + n).max().unwrap();
    let dn = Datanode::open(opts).unwrap();
    assert!(dn.allocate_row_ids(rel, 1).unwrap() >= max_end);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn metadata_rel_ids_row_ids_and_drop_survive_restart() {
    let dir = tempfile::tempdir().unwrap();
    let gtm = gtm::GtmClient::local(&dir.path().join("gtm")).unwrap();
    let opts = DatanodeOptions::new(dir.path().join("dn"));
    let (r1, r2, first_ids);
    {
        let dn = Datanode::open(opts.clone()).unwrap();
        dn.meta_put(b"cat/t1", Some(b"one")).unwrap();
        dn.meta_put(b"cat/t2", Some(b"two")).unwrap();
        dn.meta_put(b"cat/t3", Some(b"three")).unwrap();
        dn.meta_put(b"cat/t2", None).unwrap();
        dn.meta_put(b"other", Some(b"x")).unwrap();
        r1 = dn.create_rel().unwrap();
        r2 = dn.create_rel().unwrap();
        assert!(r2 > r1);
        let a = dn.allocate_row_ids(r1, 10).unwrap();
        let c = dn.allocate_row_ids(r1, 5).unwrap();
        assert_eq!(c, a + 10);
        first_ids = c + 5;
        let mut t = dn.begin(gtm.begin().await.unwrap(), Isolation::ReadCommitted);
        dn.insert(&mut t, r2, b"k", b("v"), dup).await.unwrap();
        dn.commit(t, &gtm).await.unwrap();
        dn.drop_rel(r2).unwrap();
    }
    let dn = Datanode::open(opts).unwrap();
    assert_eq!(
        dn.meta_scan(b"cat/").unwrap(),
        vec![
            (b"cat/t1".to_vec(), b"one".to_vec()),
            (b"cat/t3".to_vec(), b"three".to_vec())
        ]
    );
    let r3 = dn.create_rel().unwrap();
    assert!(r3 > r2);
    let x = dn.allocate_row_ids(r1, 1).unwrap();
    assert!(
        x >= first_ids,
        "row ids are never reused: {x} < {first_ids}"
    );
    // The drop resumes at open (in the background). Its key shares a table with other
    // writes, so compaction removes it, and GC then forgets the drop.
    for _ in 0..100 {
        if dn.storage().dropped_rels().contains(&r2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(dn.storage().dropped_rels().contains(&r2));
    dn.storage().major_compact().unwrap();
    assert_eq!(dn.storage().version_count(r2, b"k").unwrap(), 0);
    dn.gc(0).unwrap();
    assert!(dn.storage().dropped_rels().is_empty());
}

/// TPC-B style invariant: concurrent transfers between accounts never let a snapshot see a
/// partial transfer, with point reads and scans, while commits are in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn snapshots_never_see_partial_transfers() {
    partial_transfers(env()).await;
}

/// The same with every transaction's writes and locks spilled to storage as they are
/// made (`txn_memory` of one byte): locks held through intents, rows reinstated in the
/// lock table for waiters (deadlocks among them included), commits from intents.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn snapshots_never_see_partial_transfers_with_spilled_write_sets() {
    partial_transfers(env_with(|o| o.txn_memory = 1)).await;
}

async fn partial_transfers(e: Env) {
    let rel = e.dn.create_rel().unwrap();
    let n_acc = 16u32;
    {
        let mut t = e.begin(Isolation::ReadCommitted).await;
        for i in 0..n_acc {
            e.dn.insert(
                &mut t,
                rel,
                &i.to_be_bytes(),
                Bytes::from(100i64.to_be_bytes().to_vec()),
                dup,
            )
            .await
            .unwrap();
        }
        e.dn.commit(t, &e.gtm).await.unwrap();
    }
    let total = 100 * n_acc as i64;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..6u32 {
        let dn = e.dn.clone();
        let gtm = e.gtm.clone();
        let stop = stop.clone();
        writers.push(tokio::spawn(async move {
            let mut i = 0u32;
            let mut done = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                i += 1;
                let a = (w + i) % n_acc;
                let bb = (w * 3 + i * 7 + 1) % n_acc;
                if a == bb {
                    continue;
                }
                let iso = if i.is_multiple_of(2) {
                    Isolation::RepeatableRead
                } else {
                    Isolation::ReadCommitted
                };
                let mut t = dn.begin(gtm.begin().await.unwrap(), iso);
                let r: Result<(), PgError> = async {
                    // Mostly in key order (no deadlock); every 8th in random order.
                    let order = if a < bb || i.is_multiple_of(8) {
                        [(a, -5i64), (bb, 5i64)]
                    } else {
                        [(bb, 5i64), (a, -5i64)]
                    };
                    for (acc, delta) in order {
                        let row = dn.lock_row(&mut t, rel, &acc.to_be_bytes()).await?.unwrap();
                        let v = i64::from_be_bytes(row[..8].try_into().unwrap()) + delta;
                        dn.put(
                            &mut t,
                            rel,
                            &acc.to_be_bytes(),
                            Some(Bytes::from(v.to_be_bytes().to_vec())),
                        )?;
                    }
                    Ok(())
                }
                .await;
                match r {
                    Ok(()) => {
                        dn.commit(t, &gtm).await.unwrap();
                        done += 1;
                    }
                    Err(err) => {
                        assert!(
                            err.code == codes::SERIALIZATION_FAILURE
                                || err.code == codes::DEADLOCK_DETECTED,
                            "{err}"
                        );
                        dn.abort(t, &gtm).await;
                    }
                }
            }
            done
        }));
    }
    // Background GC at the GTM horizon runs all the time: registered snapshots must keep
    // seeing consistent data.
    e.dn.start_gc(e.gtm.clone(), Duration::from_millis(5));
    let mut checks = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < deadline {
        let s = e.gtm.begin().await.unwrap();
        let t = e.dn.begin(s, Isolation::RepeatableRead);
        let mut sum = 0i64;
        for r in
            e.dn.scan(&t, rel, Bound::Unbounded, Bound::Unbounded, s)
                .await
                .unwrap()
        {
            let (_, v) = r.unwrap();
            sum += i64::from_be_bytes(v[..8].try_into().unwrap());
        }
        assert_eq!(sum, total, "scan at {s} saw a partial transfer");
        let mut sum = 0i64;
        for i in 0..n_acc {
            let v =
                e.dn.get(&t, rel, &i.to_be_bytes(), s)
                    .await
                    .unwrap()
                    .unwrap();
            sum += i64::from_be_bytes(v[..8].try_into().unwrap());
        }
        assert_eq!(sum, total, "point reads at {s} saw a partial transfer");
        e.gtm.finish(s).await.unwrap();
        checks += 1;
        tokio::task::yield_now().await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut transfers = 0;
    for w in writers {
        transfers += w.await.unwrap();
    }
    println!("{transfers} transfers, {checks} consistent snapshots checked");
    assert!(transfers > 0 && checks > 0);
    // GC keeps up: after a final collection each account has one version.
    e.dn.gc(e.gtm.horizon()).unwrap();
    for i in 0..n_acc {
        assert_eq!(
            e.dn.storage().version_count(rel, &i.to_be_bytes()).unwrap(),
            1
        );
    }
}

/// Early lock release under contention: one hot row, incremented by many transactions
/// that queue for its lock (each next owner gets the lock once the previous commit is
/// applied, before it is durable), mixed with lockers that commit no writes (they must
/// wait for what they read to be durable) and readers at fresh snapshots. No increment
/// is lost, every reader sees a value no older than one it saw before, and once the
/// commits have returned a reader sees them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hot_row_increments_under_early_lock_release() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let key = b"hot".to_vec();
    let value = |r: Option<Bytes>| r.map_or(0, |r| i64::from_be_bytes(r[..].try_into().unwrap()));
    let (writers, per_writer) = (12, 40);
    let mut tasks = Vec::new();
    for w in 0..writers {
        let (dn, gtm, key) = (e.dn.clone(), e.gtm.clone(), key.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..per_writer {
                let ts = gtm.begin().await.unwrap();
                let mut t = dn.begin(ts, Isolation::ReadCommitted);
                let current = value(dn.lock_row(&mut t, rel, &key).await.unwrap());
                if (w + i) % 5 == 0 {
                    // a locker that writes nothing (SELECT ... FOR UPDATE)
                    dn.commit(t, &gtm).await.unwrap();
                    continue;
                }
                dn.put(
                    &mut t,
                    rel,
                    &key,
                    Some(Bytes::from((current + 1).to_be_bytes().to_vec())),
                )
                .unwrap();
                dn.commit(t, &gtm).await.unwrap();
            }
        }));
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (dn, gtm, key, stop) = (e.dn.clone(), e.gtm.clone(), key.clone(), stop.clone());
        tokio::spawn(async move {
            let mut seen = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let snap = gtm.timestamp().await.unwrap();
                let t = dn.begin(snap, Isolation::ReadCommitted);
                let v = value(dn.get(&t, rel, &key, snap).await.unwrap());
                assert!(v >= seen, "a reader went back from {seen} to {v}");
                seen = v;
                tokio::task::yield_now().await;
            }
        })
    };
    for t in tasks {
        t.await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    reader.await.unwrap();
    let increments = (0..writers)
        .flat_map(|w| (0..per_writer).map(move |i| (w + i) % 5 != 0))
        .filter(|&x| x)
        .count() as i64;
    let snap = e.snap().await;
    let t = e.dn.begin(snap, Isolation::ReadCommitted);
    assert_eq!(
        value(e.dn.get(&t, rel, &key, snap).await.unwrap()),
        increments
    );
}
