//! Prepared transactions under a gid (SQL's PREPARE TRANSACTION): `prepare_as`, the
//! listing, `commit_gid_pending` + `commit_gid`, `abort_gid`; what readers and writers see
//! while one is parked.

use bytes::Bytes;
use datanode::{Datanode, DatanodeOptions, Isolation, PreparedXact, Txn};
use pgerror::codes;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

struct Env {
    _dir: tempfile::TempDir,
    dn: Arc<Datanode>,
    gtm: gtm::GtmClient,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = DatanodeOptions::new(dir.path().join("dn"));
    opts.cache_size = 32 << 20;
    let dn = Datanode::open(opts).unwrap();
    let gtm = gtm::GtmClient::local(&dir.path().join("gtm")).unwrap();
    Env { _dir: dir, dn, gtm }
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn xact(gid: &str) -> PreparedXact {
    PreparedXact {
        gid: gid.to_string(),
        start_ts: 0,
        prepared_at: 1,
        owner: "alice".into(),
        database: "db".into(),
    }
}

/// Whether `task` is still running after a while.
async fn still_blocked<T>(task: &mut JoinHandle<T>) -> bool {
    tokio::time::timeout(Duration::from_millis(150), task)
        .await
        .is_err()
}

impl Env {
    async fn begin(&self) -> Box<Txn> {
        self.dn
            .begin(self.gtm.begin().await.unwrap(), Isolation::ReadCommitted)
    }

    /// A transaction that wrote `k` = `v` (holding its lock), not ended.
    async fn writer(&self, rel: u64, k: &str, v: &str) -> Box<Txn> {
        let mut t = self.begin().await;
        self.dn.lock_row(&mut t, rel, k.as_bytes()).await.unwrap();
        self.dn.put(&mut t, rel, k.as_bytes(), Some(b(v))).unwrap();
        t
    }

    /// A point read and a scan of `k` at a fresh snapshot, in a task of their own.
    fn spawn_read(&self, rel: u64, k: &str) -> JoinHandle<(Option<Bytes>, usize)> {
        let (dn, gtm, k) = (self.dn.clone(), self.gtm.clone(), k.to_string());
        tokio::spawn(async move {
            let snap = gtm.timestamp().await.unwrap();
            let t = dn.begin(snap, Isolation::ReadCommitted);
            let row = dn.get(&t, rel, k.as_bytes(), snap).await.unwrap();
            let scan = dn.scan(&t, rel, Bound::Unbounded, Bound::Unbounded, snap);
            let n = scan.await.unwrap().count();
            (row, n)
        })
    }

    /// Another transaction writing `k`, in a task of its own, then committing.
    fn spawn_write(&self, rel: u64, k: &str) -> JoinHandle<Option<Bytes>> {
        let (dn, gtm, k) = (self.dn.clone(), self.gtm.clone(), k.to_string());
        tokio::spawn(async move {
            let mut t = dn.begin(gtm.begin().await.unwrap(), Isolation::ReadCommitted);
            let row = dn.lock_row(&mut t, rel, k.as_bytes()).await.unwrap();
            dn.put(&mut t, rel, k.as_bytes(), Some(b("other"))).unwrap();
            dn.commit(t, &gtm).await.unwrap();
            row
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parked_until_committed_by_gid() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let t = e.writer(rel, "k", "v1").await;
    e.dn.commit(t, &e.gtm).await.unwrap();
    let t = e.writer(rel, "k", "v2").await;
    let start = t.start_ts();
    e.dn.prepare_as(t, xact("g")).await.unwrap();
    let listed = e.dn.prepared_xacts();
    assert_eq!(
        listed,
        vec![PreparedXact {
            start_ts: start,
            ..xact("g")
        }]
    );

    // Parked: readers above its start do not wait, and see the row as before.
    let read = e.spawn_read(rel, "k").await.unwrap();
    assert_eq!(read, (Some(b("v1")), 1));
    // Its row lock holds.
    let mut writer = e.spawn_write(rel, "k");
    assert!(still_blocked(&mut writer).await);

    // Committing: readers above its start wait from the pending step on (the commit
    // timestamp may be below their snapshot); this one's is not, and sees the row as
    // before; the waiting writer then locks the row and reads its write.
    e.dn.commit_gid_pending("g").unwrap();
    let mut reader = e.spawn_read(rel, "k");
    assert!(still_blocked(&mut reader).await);
    let ts = e.gtm.commit(start).await.unwrap();
    assert_eq!(e.dn.commit_gid("g", ts).await.unwrap(), ts);
    assert_eq!(reader.await.unwrap(), (Some(b("v1")), 1));
    assert_eq!(writer.await.unwrap(), Some(b("v2")));
    assert!(e.dn.prepared_xacts().is_empty());
    let again = e.dn.commit_gid("g", ts + 1).await.unwrap_err();
    assert_eq!(again.code, codes::UNDEFINED_OBJECT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn abort_by_gid_discards_and_releases() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let t = e.writer(rel, "k", "v").await;
    let start = t.start_ts();
    e.dn.prepare_as(t, xact("g")).await.unwrap();
    let mut writer = e.spawn_write(rel, "k");
    assert!(still_blocked(&mut writer).await);
    e.dn.abort_gid("g").await.unwrap();
    e.gtm.finish(start).await.unwrap();
    assert_eq!(writer.await.unwrap(), None);
    assert_eq!(e.spawn_read(rel, "k").await.unwrap(), (Some(b("other")), 1));
    for e2 in [
        e.dn.abort_gid("g").await.unwrap_err(),
        e.dn.commit_gid_pending("g").unwrap_err(),
    ] {
        assert_eq!(e2.code, codes::UNDEFINED_OBJECT);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_gid_in_use_is_refused_and_the_transaction_aborted() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let first = e.begin().await;
    e.dn.prepare_as(first, xact("g")).await.unwrap();
    let second = e.writer(rel, "k", "v").await;
    let err = e.dn.prepare_as(second, xact("g")).await.unwrap_err();
    assert_eq!(err.code, codes::DUPLICATE_OBJECT);
    assert_eq!(
        err.message,
        "transaction identifier \"g\" is already in use"
    );
    // Its lock is gone with it; the first (which did nothing) is still there.
    assert_eq!(e.spawn_write(rel, "k").await.unwrap(), None);
    assert_eq!(e.dn.prepared_xacts().len(), 1);
    let ts = e.gtm.timestamp().await.unwrap();
    e.dn.commit_gid_pending("g").unwrap();
    e.dn.commit_gid("g", ts).await.unwrap();
    assert!(e.dn.prepared_xacts().is_empty());
}
