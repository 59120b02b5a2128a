//! VACUUM skips a relation known to hold one version per key (created, or bulk-loaded, and
//! not written since) and scans every other: each test here leaves garbage that a wrong
//! skip would leave behind.

use bytes::Bytes;
use datanode::storage::Chunk;
use datanode::{Datanode, DatanodeOptions, Isolation, Txn};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

struct Env {
    dir: tempfile::TempDir,
    dn: Arc<Datanode>,
    gtm: gtm::GtmClient,
}

fn open(dir: &Path, txn_memory: u64) -> (Arc<Datanode>, gtm::GtmClient) {
    let mut opts = DatanodeOptions::new(dir.join("dn"));
    opts.cache_size = 32 << 20;
    opts.txn_memory = txn_memory;
    let dn = Datanode::open(opts).unwrap();
    let gtm = gtm::GtmClient::local(&dir.join("gtm")).unwrap();
    // VACUUM's horizon is the GTM's.
    dn.start_gc(gtm.clone(), Duration::from_secs(3600));
    (dn, gtm)
}

/// A datanode whose transactions spill past `txn_memory` bytes.
fn env_spilling_past(txn_memory: u64) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let (dn, gtm) = open(dir.path(), txn_memory);
    Env { dir, dn, gtm }
}

fn env() -> Env {
    env_spilling_past(16 << 20)
}

fn key(i: u32) -> [u8; 4] {
    i.to_be_bytes()
}

fn row(i: u32, version: u32) -> Bytes {
    Bytes::from(format!("{i:08}-{version:04}"))
}

const ROWS: u32 = 1_000;

impl Env {
    async fn begin(&self) -> Box<Txn> {
        self.dn
            .begin(self.gtm.begin().await.unwrap(), Isolation::ReadCommitted)
    }

    /// Bulk-loads rows `0..ROWS` (version 0) into `rel`, owned by `t`.
    async fn load(&self, t: &mut Txn, rel: u64) {
        self.dn.own_relation(t, rel);
        let mut load = self.dn.bulk_load(t, rel).unwrap();
        let mut chunk = Chunk::default();
        for i in 0..ROWS {
            chunk.push(&key(i), &row(i, 0));
        }
        load.write(chunk).await.unwrap();
        assert_eq!(load.finish().await.unwrap(), ROWS as u64);
    }

    /// A fresh relation holding rows `0..ROWS`, committed by a bulk load.
    async fn loaded_rel(&self) -> u64 {
        let rel = self.dn.create_rel().unwrap();
        let mut t = self.begin().await;
        self.load(&mut t, rel).await;
        self.dn.commit(t, &self.gtm).await.unwrap();
        rel
    }

    async fn update(&self, t: &mut Txn, rel: u64, i: u32, version: u32) {
        self.dn.lock_row(t, rel, &key(i)).await.unwrap();
        self.dn.put(t, rel, &key(i), Some(row(i, version))).unwrap();
    }

    /// Commits one transaction updating rows `keys` to `version`.
    async fn update_all(&self, rel: u64, keys: impl Iterator<Item = u32>, version: u32) {
        let mut t = self.begin().await;
        for i in keys {
            self.update(&mut t, rel, i, version).await;
        }
        self.dn.commit(t, &self.gtm).await.unwrap();
    }

    fn versions(&self, rel: u64, i: u32) -> usize {
        self.dn.storage().version_count(rel, &key(i)).unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vacuum_skips_a_loaded_relation_until_it_is_written() {
    let e = env();
    let empty = e.dn.create_rel().unwrap();
    assert_eq!(e.dn.vacuum(empty).unwrap(), None);
    let rel = e.loaded_rel().await;
    assert_eq!(
        e.dn.vacuum(rel).unwrap(),
        None,
        "nothing to collect in a bulk load"
    );
    e.update_all(rel, [5, 7].into_iter(), 1).await;
    assert_eq!(e.versions(rel, 5), 2);
    assert_eq!(
        e.dn.vacuum(rel).unwrap(),
        Some(2),
        "written: scanned, old versions collected"
    );
    assert_eq!(
        (e.versions(rel, 5), e.versions(rel, 7), e.versions(rel, 6)),
        (1, 1, 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vacuum_scans_a_relation_its_loader_also_wrote() {
    let e = env();
    let rel = e.dn.create_rel().unwrap();
    let mut t = e.begin().await;
    e.load(&mut t, rel).await;
    e.update(&mut t, rel, 3, 1).await; // replaces a loaded version at the commit
    e.dn.commit(t, &e.gtm).await.unwrap();
    assert_eq!(e.versions(rel, 3), 2);
    assert_eq!(e.dn.vacuum(rel).unwrap(), Some(1));
    assert_eq!(e.versions(rel, 3), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vacuum_scans_a_relation_written_by_a_spilled_transaction() {
    let e = env_spilling_past(16 << 10);
    let rel = e.loaded_rel().await;
    e.update_all(rel, 0..ROWS, 1).await; // ~60 KB of writes: spilled to intents
    assert_eq!(e.versions(rel, 999), 2);
    assert_eq!(e.dn.vacuum(rel).unwrap(), Some(ROWS as u64));
    assert_eq!(e.versions(rel, 999), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vacuum_scans_a_relation_written_while_it_ran() {
    let e = Arc::new(env());
    let rel = e.loaded_rel().await;
    let writers: Vec<_> = (0..4u32)
        .map(|w| {
            let e = e.clone();
            tokio::spawn(async move {
                for version in 1..=20 {
                    e.update_all(rel, (w..ROWS).step_by(4), version).await;
                }
            })
        })
        .collect();
    let vacuums = {
        let e = e.clone();
        tokio::task::spawn_blocking(move || {
            for _ in 0..20 {
                e.dn.vacuum(rel).unwrap();
            }
        })
    };
    for w in writers {
        w.await.unwrap();
    }
    vacuums.await.unwrap();
    e.dn.vacuum(rel).unwrap();
    for i in 0..ROWS {
        assert_eq!(e.versions(rel, i), 1, "key {i}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_a_restart_vacuum_scans_a_loaded_relation() {
    let e = env();
    let rel = e.loaded_rel().await;
    let Env { dir, dn, gtm } = e;
    drop((dn, gtm));
    let (dn, _gtm) = open(dir.path(), 16 << 20);
    assert_eq!(dn.vacuum(rel).unwrap(), Some(0));
    assert_eq!(dn.storage().version_count(rel, &key(0)).unwrap(), 1);
}
