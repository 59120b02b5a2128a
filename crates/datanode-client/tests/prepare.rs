//! Two-phase commit through the client, on the embedded datanode (`Local`) and through the
//! protocol's messages (`Remote` over `InProcessLink`): what a coordinator of several
//! datanodes does (decision 0029).

use datanode_client::{
    DatanodeClient, DatanodeOptions, DatanodeTxn, Isolation, LockWait, RowBytes,
};
use std::time::Duration;

struct Env {
    _dir: tempfile::TempDir,
    gtm: gtm::GtmClient,
    dn: DatanodeClient,
}

fn env(through_messages: bool) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = DatanodeOptions::new(dir.path().join("dn"));
    opts.cache_size = 32 << 20;
    let gtm = gtm::GtmClient::local(&dir.path().join("gtm")).unwrap();
    let dn = DatanodeClient::open_local(
        opts,
        gtm.clone(),
        Duration::from_secs(3600),
        through_messages,
    )
    .unwrap();
    Env { _dir: dir, gtm, dn }
}

impl Env {
    async fn begin(&self) -> DatanodeTxn {
        self.dn
            .begin(self.gtm.begin().await.unwrap(), Isolation::ReadCommitted)
    }

    /// The committed row under `key`, read by a transaction of its own.
    async fn committed(&self, rel: u64, key: &[u8]) -> Option<RowBytes> {
        let t = self.begin().await;
        let row = self.dn.get(&t, rel, key, t.start_ts()).await.unwrap();
        self.dn.commit(t, &self.gtm).await.unwrap();
        row
    }

    /// A transaction that writes `key` = `value`, prepared.
    async fn prepare_write(
        &self,
        rel: u64,
        key: &[u8],
        value: &'static str,
    ) -> (u64, datanode_client::PreparedTxn) {
        let mut t = self.begin().await;
        let start = t.start_ts();
        self.dn
            .lock_row(&mut t, rel, key, LockWait::Wait)
            .await
            .unwrap();
        assert!(!t.has_writes(), "a row lock is no write");
        let row = RowBytes::from_static(value.as_bytes());
        self.dn.put(&mut t, rel, key, Some(row)).unwrap();
        assert!(t.has_writes());
        (start, self.dn.prepare(t).await.unwrap())
    }
}

async fn prepare_commit_and_abort(through_messages: bool) {
    let e = env(through_messages);
    let rel = e.dn.create_rel().await.unwrap();
    e.dn.create_rel_at(rel + 5).await.unwrap();
    e.dn.create_rel_at(rel + 5).await.unwrap();
    assert_eq!(e.dn.create_rel().await.unwrap(), rel + 6);

    // Prepared, decided at the GTM, committed at the GTM's timestamp.
    let (start, p) = e.prepare_write(rel, b"k", "one").await;
    let ts = e.gtm.commit(start).await.unwrap();
    e.dn.commit_prepared(p, ts).await.unwrap();
    e.gtm.finish(start).await.unwrap();
    assert_eq!(
        e.committed(rel, b"k").await,
        Some(RowBytes::from_static(b"one"))
    );

    // Prepared, then aborted: nothing of it stays, its lock is free.
    let (start, p) = e.prepare_write(rel, b"k", "two").await;
    e.dn.abort_prepared(p).await;
    e.gtm.finish(start).await.unwrap();
    assert_eq!(
        e.committed(rel, b"k").await,
        Some(RowBytes::from_static(b"one"))
    );
    let mut t = e.begin().await;
    tokio::time::timeout(
        Duration::from_secs(5),
        e.dn.lock_row(&mut t, rel, b"k", LockWait::Wait),
    )
    .await
    .expect("the aborted transaction's lock was released")
    .unwrap();
    e.dn.abort(t, &e.gtm).await;

    // A transaction that did nothing here prepares and commits too.
    let t = e.begin().await;
    let start = t.start_ts();
    assert!(!t.has_writes());
    let p = e.dn.prepare(t).await.unwrap();
    let ts = e.gtm.commit(start).await.unwrap();
    e.dn.commit_prepared(p, ts).await.unwrap();
    e.gtm.finish(start).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_prepare_commit_and_abort() {
    prepare_commit_and_abort(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_prepare_commit_and_abort() {
    prepare_commit_and_abort(true).await;
}
