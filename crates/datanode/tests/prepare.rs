//! Two-phase commit on one datanode (decision 0029): `prepare`, then `PreparedTxn::commit`
//! at a timestamp the caller took from the GTM, or `abort`; what readers and writers see
//! meanwhile; `create_rel_at`.

use bytes::Bytes;
use datanode::{Datanode, DatanodeOptions, Isolation, Txn};
use pgerror::PgError;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

struct Env {
    _dir: tempfile::TempDir,
    dn: Arc<Datanode>,
    gtm: gtm::GtmClient,
}

fn env_with(txn_memory: u64) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = DatanodeOptions::new(dir.path().join("dn"));
    opts.cache_size = 32 << 20;
    opts.deadlock_timeout = Duration::from_millis(200);
    opts.txn_memory = txn_memory;
    let dn = Datanode::open(opts).unwrap();
    let gtm = gtm::GtmClient::local(&dir.path().join("gtm")).unwrap();
    Env { _dir: dir, dn, gtm }
}

fn env() -> Env {
    env_with(16 << 20)
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn dup() -> PgError {
    PgError::internal("duplicate key")
}

/// How long a blocked task is given to show it is blocked.
const BLOCKED_FOR: Duration = Duration::from_millis(150);

/// Whether `task` is still running after `BLOCKED_FOR`.
async fn still_blocked<T>(task: &mut JoinHandle<T>) -> bool {
    tokio::time::timeout(BLOCKED_FOR, task).await.is_err()
}

impl Env {
    async fn begin(&self) -> Box<Txn> {
        self.dn
            .begin(self.gtm.begin().await.unwrap(), Isolation::ReadCommitted)
    }

    async fn write(&self, rel: u64, k: &str, v: Option<&str>) {
        let mut t = self.begin().await;
        self.dn.lock_row(&mut t, rel, k.as_bytes()).await.unwrap();
        self.dn.put(&mut t, rel, k.as_bytes(), v.map(b)).unwrap();
        self.dn.commit(t, &self.gtm).await.unwrap();
    }

    /// A point read of `k` at `snap` in a task of its own.
    fn spawn_get(&self, rel: u64, k: &[u8], snap: u64) -> JoinHandle<Option<Bytes>> {
        let (dn, k) = (self.dn.clone(), k.to_vec());
        tokio::spawn(async move {
            let t = dn.begin(snap, Isolation::ReadCommitted);
            dn.get(&t, rel, &k, snap).await.unwrap()
        })
    }

    /// A scan of all of `rel` at `snap` in a task of its own.
    fn spawn_scan(&self, rel: u64, snap: u64) -> JoinHandle<Vec<(Vec<u8>, Bytes)>> {
        let dn = self.dn.clone();
        tokio::spawn(async move {
            let t = dn.begin(snap, Isolation::ReadCommitted);
            dn.scan(&t, rel, Bound::Unbounded, Bound::Unbounded, snap)
                .await
                .unwrap()
                .map(Result::unwrap)
                .collect()
        })
    }

    /// Another transaction locking `k`, in a task of its own, then committing.
    fn spawn_lock(&self, rel: u64, k: &str) -> JoinHandle<Option<Bytes>> {
        let (dn, gtm, k) = (self.dn.clone(), self.gtm.clone(), k.to_string());
        tokio::spawn(async move {
            let mut t = dn.begin(gtm.begin().await.unwrap(), Isolation::ReadCommitted);
            let row = dn.lock_row(&mut t, rel, k.as_bytes()).await.unwrap();
            dn.commit(t, &gtm).await.unwrap();
            row
        })
    }

    async fn get(&self, rel: u64, k: &[u8], snap: u64) -> Option<Bytes> {
        self.spawn_get(rel, k, snap).await.unwrap()
    }

    async fn now(&self) -> u64 {
        self.gtm.timestamp().await.unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn prepared_commit_is_visible_at_its_timestamp_and_later_readers_wait() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    e.write(rel, "a", Some("1")).await;
    let mut t = e.begin().await;
    let start = t.start_ts();
    e.dn.lock_row(&mut t, rel, b"a").await.unwrap();
    e.dn.put(&mut t, rel, b"a", Some(b("2"))).unwrap();
    e.dn.insert(&mut t, rel, b"b", b("new"), dup).await.unwrap();
    let p = e.dn.prepare(t).await.unwrap();

    // At or below its start: not waited for.
    assert_eq!(e.get(rel, b"a", start).await, Some(b("1")));
    assert_eq!(e.spawn_scan(rel, start).await.unwrap().len(), 1);
    // Above its start, before the commit point: waits, then reads below the commit.
    let before = e.now().await;
    let mut early_get = e.spawn_get(rel, b"a", before);
    // The commit point (the coordinator's GTM call); later snapshots include it.
    let ts = e.gtm.commit(start).await.unwrap();
    let after = e.now().await;
    let mut get = e.spawn_get(rel, b"a", after);
    let mut new_row = e.spawn_get(rel, b"b", after);
    let mut scan = e.spawn_scan(rel, after);
    assert!(still_blocked(&mut early_get).await);
    assert!(still_blocked(&mut get).await);
    assert!(still_blocked(&mut new_row).await);
    assert!(still_blocked(&mut scan).await);

    assert_eq!(p.commit(ts).await.unwrap(), ts);
    e.gtm.finish(start).await.unwrap();
    assert_eq!(early_get.await.unwrap(), Some(b("1")));
    assert_eq!(get.await.unwrap(), Some(b("2")));
    assert_eq!(new_row.await.unwrap(), Some(b("new")));
    assert_eq!(
        scan.await.unwrap(),
        vec![(b"a".to_vec(), b("2")), (b"b".to_vec(), b("new"))]
    );
    assert_eq!(e.get(rel, b"a", ts - 1).await, Some(b("1")));
    assert_eq!(e.get(rel, b"a", ts).await, Some(b("2")));
    // Its locks are released: another writer goes on at once.
    assert_eq!(e.spawn_lock(rel, "a").await.unwrap(), Some(b("2")));
}

/// A scan of `rel` over `[lo, hi]` at `snap` in a task of its own.
fn spawn_range_scan(
    e: &Env,
    rel: u64,
    lo: Bound<&str>,
    hi: Bound<&str>,
    snap: u64,
) -> JoinHandle<Vec<Vec<u8>>> {
    let dn = e.dn.clone();
    let owned = |b: Bound<&str>| b.map(|s| s.as_bytes().to_vec());
    let (lo, hi) = (owned(lo), owned(hi));
    tokio::spawn(async move {
        let t = dn.begin(snap, Isolation::ReadCommitted);
        dn.scan(&t, rel, lo, hi, snap)
            .await
            .unwrap()
            .map(|r| r.unwrap().0)
            .collect()
    })
}

/// A committing (here: prepared) transaction holds up only the scans whose key range
/// holds a key it writes; the others read at once (the commit registry's written keys).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn prepared_transaction_holds_up_only_scans_over_its_keys() {
    use Bound::{Excluded, Included, Unbounded};
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    for k in ["a", "c", "e", "g"] {
        e.write(rel, k, Some("1")).await;
    }
    let mut t = e.begin().await;
    let start = t.start_ts();
    e.dn.lock_row(&mut t, rel, b"c").await.unwrap();
    e.dn.put(&mut t, rel, b"c", None).unwrap();
    e.dn.insert(&mut t, rel, b"f", b("new"), dup).await.unwrap();
    let p = e.dn.prepare(t).await.unwrap();
    let snap = e.now().await;

    let keys = |v: &[&str]| v.iter().map(|k| k.as_bytes().to_vec()).collect::<Vec<_>>();
    let free = [
        (Included("a"), Excluded("c"), keys(&["a"])),
        (Excluded("c"), Included("e"), keys(&["e"])),
        (Included("g"), Unbounded, keys(&["g"])),
        (Included("d"), Included("d"), keys(&[])),
    ];
    for (lo, hi, want) in free {
        let scan = spawn_range_scan(&e, rel, lo, hi, snap);
        let got = tokio::time::timeout(BLOCKED_FOR, scan).await;
        assert_eq!(got.expect("scan waited").unwrap(), want, "{lo:?}..{hi:?}");
    }
    let mut over_c = spawn_range_scan(&e, rel, Included("b"), Included("c"), snap);
    let mut over_f = spawn_range_scan(&e, rel, Excluded("e"), Unbounded, snap);
    let mut whole = spawn_range_scan(&e, rel, Unbounded, Unbounded, snap);
    assert!(still_blocked(&mut over_c).await);
    assert!(still_blocked(&mut over_f).await);
    assert!(still_blocked(&mut whole).await);

    let ts = e.gtm.commit(start).await.unwrap();
    assert!(ts > snap);
    p.commit(ts).await.unwrap();
    e.gtm.finish(start).await.unwrap();
    // Committed above their snapshot: they read what was there before.
    assert_eq!(over_c.await.unwrap(), keys(&["c"]));
    assert_eq!(over_f.await.unwrap(), keys(&["g"]));
    assert_eq!(whole.await.unwrap(), keys(&["a", "c", "e", "g"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn prepared_abort_leaves_nothing_and_releases_its_locks() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    e.write(rel, "a", Some("1")).await;
    let mut t = e.begin().await;
    let start = t.start_ts();
    e.dn.lock_row(&mut t, rel, b"a").await.unwrap();
    e.dn.put(&mut t, rel, b"a", Some(b("2"))).unwrap();
    e.dn.insert(&mut t, rel, b"b", b("new"), dup).await.unwrap();
    let p = e.dn.prepare(t).await.unwrap();

    let mut writer = e.spawn_lock(rel, "a");
    let mut reader = e.spawn_get(rel, b"b", e.now().await);
    assert!(still_blocked(&mut writer).await);
    assert!(still_blocked(&mut reader).await);
    p.abort().await;
    e.gtm.finish(start).await.unwrap();
    assert_eq!(writer.await.unwrap(), Some(b("1")));
    assert_eq!(reader.await.unwrap(), None);
    let now = e.now().await;
    assert_eq!(e.get(rel, b"a", now).await, Some(b("1")));
    assert_eq!(e.spawn_scan(rel, now).await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropping_a_prepared_transaction_aborts_it() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let mut t = e.begin().await;
    e.dn.insert(&mut t, rel, b"a", b("1"), dup).await.unwrap();
    let p = e.dn.prepare(t).await.unwrap();
    let mut writer = e.spawn_lock(rel, "a");
    assert!(still_blocked(&mut writer).await);
    drop(p);
    assert_eq!(writer.await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn prepared_read_only_transaction_keeps_its_row_locks_until_it_ends() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    e.write(rel, "a", Some("1")).await;
    let mut t = e.begin().await;
    let start = t.start_ts();
    e.dn.lock_row(&mut t, rel, b"a").await.unwrap();
    assert!(!t.changes_anything());
    let p = e.dn.prepare(t).await.unwrap();
    let mut writer = e.spawn_lock(rel, "a");
    // Nothing to wait for: it wrote nothing.
    assert_eq!(e.get(rel, b"a", e.now().await).await, Some(b("1")));
    assert!(still_blocked(&mut writer).await);
    let ts = e.gtm.commit(start).await.unwrap();
    assert_eq!(p.commit(ts).await.unwrap(), ts);
    e.gtm.finish(start).await.unwrap();
    assert_eq!(writer.await.unwrap(), Some(b("1")));
}

fn spilled_key(i: u32) -> [u8; 4] {
    i.to_be_bytes()
}

fn spilled_row(i: u32) -> Bytes {
    Bytes::from(format!("{i:08}-{}", "x".repeat(80)))
}

/// A transaction inserting about four times `txn_memory` of rows (so it spilled).
async fn spilled_insert(e: &Env, rel: u64, n: u32) -> Box<Txn> {
    let mut t = e.begin().await;
    for i in 0..n {
        e.dn.insert(&mut t, rel, &spilled_key(i), spilled_row(i), dup)
            .await
            .unwrap();
    }
    assert!(t.has_writes());
    assert!(e.dn.lock_count() < n as usize, "it spilled");
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn spilled_transaction_prepares_commits_and_aborts() {
    let e = env_with(256 << 10);
    let rel = e.dn.create_rel().unwrap();
    let n = 10_000u32;

    let t = spilled_insert(&e, rel, n).await;
    let start = t.start_ts();
    let p = e.dn.prepare(t).await.unwrap();
    let ts = e.gtm.commit(start).await.unwrap();
    let mut scan = e.spawn_scan(rel, e.now().await);
    let mut get = e.spawn_get(rel, &spilled_key(7), ts);
    assert!(still_blocked(&mut scan).await);
    assert!(still_blocked(&mut get).await);
    assert_eq!(p.commit(ts).await.unwrap(), ts);
    e.gtm.finish(start).await.unwrap();
    assert_eq!(scan.await.unwrap().len(), n as usize);
    assert_eq!(get.await.unwrap(), Some(spilled_row(7)));

    // A second one into a fresh relation, aborted: nothing of it stays.
    let rel2 = e.dn.create_rel().unwrap();
    let t = spilled_insert(&e, rel2, n).await;
    let start = t.start_ts();
    let p = e.dn.prepare(t).await.unwrap();
    p.abort().await;
    e.gtm.finish(start).await.unwrap();
    assert!(e.spawn_scan(rel2, e.now().await).await.unwrap().is_empty());
    let mut u = e.begin().await;
    e.dn.insert(&mut u, rel2, &spilled_key(1), spilled_row(1), dup)
        .await
        .unwrap();
    e.dn.commit(u, &e.gtm).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn create_rel_at_reserves_the_id() {
    let e = env();
    assert_eq!(e.dn.create_rel().unwrap(), 1);
    e.dn.create_rel_at(10).unwrap();
    e.dn.create_rel_at(10).unwrap();
    e.dn.create_rel_at(5).unwrap();
    assert_eq!(e.dn.create_rel().unwrap(), 11);
    // The relation is usable: written and read like any other.
    e.write(10, "k", Some("v")).await;
    assert_eq!(e.get(10, b"k", e.now().await).await, Some(b("v")));
}
