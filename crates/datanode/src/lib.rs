//! Meridian datanode: transactions over the MVCC store (`storage` crate).
//!
//! * Row locks: exclusive, FIFO, held to commit/abort, in a sharded lock table
//!   (`locks.rs`); deadlocks are found after `deadlock_timeout` by searching the wait-for
//!   graph (40P01, one victim per cycle).
//! * Deferred increments (`increment`): under READ COMMITTED, `SET c = c + d` on a row
//!   whose exclusive lock is taken holds an increment lock instead (increments commute,
//!   so many transactions hold one at once) and is applied at commit by the storage
//!   writer (`storage::WriteOp::Merge`), or under the owner slot (Apply mode) before the
//!   transaction touches the row otherwise (`apply_increments`).
//! * Visibility rule (what makes timestamp MVCC correct although the commit timestamp is
//!   taken before the writes are applied): commit marks the transaction
//!   `CommittingPending` *before* asking the GTM for its commit timestamp, then
//!   `Committing(ts)`, applies the batch, waits for durability, and only then releases its
//!   locks. A reader at snapshot `s` that meets a row locked by a transaction that is
//!   `CommittingPending` or `Committing(ts <= s)` waits for it to finish, then reads the
//!   store. Scans wait out every such transaction that wrote the scanned relation.
//! * Write set: per transaction, ordered, in memory; read-your-own-writes in `get` and
//!   `scan`; savepoints through an undo log. Past `txn_memory` the write set, undo log and
//!   row locks spill to storage as write intents (`spilled.rs`).
//! * GC: `gc(horizon)` over recently written keys; `vacuum(rel)` full scan, skipped for a
//!   relation known to hold one version per key (`single_version.rs`).
//!
//! This file holds `Datanode` (`open`, metadata, relation and row ids); the transaction
//! paths are in `txn.rs` (a transaction's state), `read.rs` (`get`, `scan`), `write.rs`
//! (`lock_row`, `put`, `insert`, increments; `increment.rs` applies them), `wait.rs` (lock waits, deadlocks),
//! `commit.rs` (commit, prepare, abort), `named.rs` (prepared transactions under a gid),
//! `in_doubt.rs` (durable prepares, their restoration and the resolver), `bulk.rs` (owned relations, bulk loads), `gc.rs` (GC,
//! VACUUM) and `merge.rs` (scans over the transaction's own writes).
//!
//! See README.md for the invariants.

mod bulk;
mod commit;
mod committing;
mod gc;
mod in_doubt;
mod increment;
mod locks;
mod merge;
pub mod metrics;
mod named;
mod owned;
mod read;
mod serializable;
mod single_version;
mod spilled;
mod txn;
mod wait;
mod write;

use bytes::Bytes;
use committing::CommitRegistry;
use gc::{KeySet, RECENT_SHARDS};
use locks::LockTable;
use owned::{OwnedRelations, LOADING_PREFIX};
use parking_lot::Mutex;
use pgerror::{PgError, PgResult};
use single_version::SingleVersionRelations;
use spilled::Spillers;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use commit::PreparedTxn;
pub use gtm::Timestamp;
pub use increment::{ColumnIncrement, IncrementOp};
pub use merge::ScanRows;
pub use named::{unknown_gid, PreparedXact};
pub use storage;
pub use storage::Store;
pub use txn::{Savepoint, Txn};

pub type RelId = u64;
pub type RowBytes = bytes::Bytes;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    ReadCommitted,
    RepeatableRead,
    /// REPEATABLE READ whose commit validates what it read (decision 0044).
    Serializable,
}

impl Isolation {
    /// Whether every statement reads at the transaction's start timestamp.
    pub fn one_snapshot(self) -> bool {
        self != Isolation::ReadCommitted
    }
}

/// Whether taking a row lock another transaction holds waits for it, or fails at once
/// with 55P03 (SELECT … FOR UPDATE NOWAIT, and SKIP LOCKED, which passes over the row).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockWait {
    Wait,
    NoWait,
}

#[derive(Clone, Debug)]
pub struct DatanodeOptions {
    pub data_dir: std::path::PathBuf,
    /// Memory budget for storage (block cache + memtables), bytes.
    pub cache_size: u64,
    pub synchronous_commit: bool,
    pub deadlock_timeout: Duration,
    /// Memory a transaction's write set, undo log and row locks may take before they
    /// spill to storage (`spilled.rs`), bytes.
    pub txn_memory: u64,
}

impl DatanodeOptions {
    /// Defaults: 128 MiB cache, synchronous commit, 1 s deadlock timeout.
    pub fn new(data_dir: impl Into<std::path::PathBuf>) -> Self {
        DatanodeOptions {
            data_dir: data_dir.into(),
            cache_size: 128 * 1024 * 1024,
            synchronous_commit: true,
            deadlock_timeout: Duration::from_secs(1),
            txn_memory: 16 << 20,
        }
    }
}

/// Row ids of one relation: `next` is handed out by atomic add; ids below `limit` are
/// covered by the durable counter (`sys/rowid/<rel>`), which is raised (fsynced) a window
/// at a time.
struct RowIdCounter {
    next: AtomicU64,
    limit: AtomicU64,
    extend: Mutex<()>,
}

struct Inner {
    store: Arc<Store>,
    opts: DatanodeOptions,
    locks: LockTable,
    committing: CommitRegistry,
    protections: serializable::ReadProtections,
    owned: OwnedRelations,
    /// Relations VACUUM has nothing to collect in.
    single_version: SingleVersionRelations,
    spillers: Spillers,
    /// Lock waits, for ending one from outside (`cancel_waits_of`).
    waits: wait::Waits,
    next_txn: AtomicU64,
    rel_alloc: Mutex<()>,
    row_ids: parking_lot::RwLock<HashMap<RelId, Arc<RowIdCounter>>>,
    /// Keys written since they were last garbage-collected.
    recent: Box<[Mutex<KeySet>]>,
    /// Per-shard cap of `recent`: cache_size / 1024 entries in all (~6% of the cache for
    /// short keys); beyond it a relation is collected by a full scan instead.
    recent_cap: usize,
    /// Relations with written keys that did not fit in `recent` (full GC needed).
    overflow_rels: Mutex<HashSet<RelId>>,
    /// When each relation was last collected by a full scan (at most one per minute).
    last_full_gc: Mutex<HashMap<RelId, std::time::Instant>>,
    /// Background GC thread, woken early when `recent` overflows.
    gc_thread: Mutex<Option<std::thread::Thread>>,
    gc_kick: AtomicBool,
    last_horizon: AtomicU64,
    gc_gtm: Mutex<Option<gtm::GtmClient>>,
    gc_lock: Mutex<()>,
    closed: AtomicBool,
    /// Background threads (GC, DROP), joined when the Datanode is dropped.
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

/// The datanode. Open with [`Datanode::open`]; share as `Arc<Datanode>`.
pub struct Datanode {
    inner: Arc<Inner>,
    /// Prepared transactions under a gid. Not in `Inner`: what they hold refers to it.
    named: named::NamedPrepared,
    /// Prepared parts waiting for the resolver (`in_doubt.rs`).
    in_doubt: Mutex<Vec<PreparedTxn>>,
    /// Prepared transactions restored at open, until `start_resolver` takes them.
    restored: Mutex<Vec<in_doubt::Restored>>,
}

/// The `sys` key `prefix` + `rel` (big-endian): a per-relation counter or marker.
fn rel_key(prefix: &[u8], rel: RelId) -> Vec<u8> {
    let mut k = prefix.to_vec();
    k.extend_from_slice(&rel.to_be_bytes());
    k
}

/// The relations with a `rel_key(prefix, _)` entry in `sys`.
fn marked_rels(store: &Store, prefix: &[u8]) -> PgResult<Vec<RelId>> {
    Ok(store
        .meta_scan(storage::Space::Sys, prefix)?
        .into_iter()
        .filter_map(|(k, _)| {
            k.get(prefix.len()..)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_be_bytes)
        })
        .collect())
}

const ROWID_PREFIX: &[u8] = b"rowid/";
const DROP_PREFIX: &[u8] = b"drop/";

fn rowid_key(rel: RelId) -> Vec<u8> {
    rel_key(ROWID_PREFIX, rel)
}

fn drop_key(rel: RelId) -> Vec<u8> {
    rel_key(DROP_PREFIX, rel)
}

const NEXT_REL_KEY: &[u8] = b"next_rel";
const ROW_ID_WINDOW: u64 = 65_536;
/// First relation id handed out by `create_rel`.
pub const FIRST_REL_ID: RelId = 1;

impl Datanode {
    pub fn open(opts: DatanodeOptions) -> PgResult<Arc<Datanode>> {
        // Registered now, so that a scrape shows them before the first wait.
        metrics::metrics();
        let store = Store::open(storage::StoreOptions {
            path: opts.data_dir.clone(),
            cache_size: opts.cache_size,
        })?;
        let opts_cache_size = opts.cache_size;
        let inner = Arc::new(Inner {
            store,
            opts,
            locks: LockTable::new(),
            committing: CommitRegistry::new(),
            protections: serializable::ReadProtections::new(),
            owned: OwnedRelations::default(),
            single_version: SingleVersionRelations::default(),
            spillers: Spillers::default(),
            waits: wait::Waits::default(),
            next_txn: AtomicU64::new(1),
            rel_alloc: Mutex::new(()),
            row_ids: parking_lot::RwLock::new(HashMap::new()),
            recent: (0..RECENT_SHARDS)
                .map(|_| Mutex::new(KeySet::default()))
                .collect(),
            recent_cap: ((opts_cache_size / 1024) as usize / RECENT_SHARDS).max(1024),
            overflow_rels: Mutex::new(HashSet::new()),
            last_full_gc: Mutex::new(HashMap::new()),
            gc_thread: Mutex::new(None),
            gc_kick: AtomicBool::new(false),
            last_horizon: AtomicU64::new(0),
            gc_gtm: Mutex::new(None),
            gc_lock: Mutex::new(()),
            closed: AtomicBool::new(false),
            threads: Mutex::new(Vec::new()),
        });
        // Resume interrupted DROPs.
        for rel in marked_rels(&inner.store, DROP_PREFIX)? {
            spawn_drop(&inner, rel);
        }
        // Empty the relations that transactions were loading when the server stopped,
        // except those of prepared transactions, whose outcome decides.
        let prepared_loads = inner.prepared_loads()?;
        let mut loading = marked_rels(&inner.store, LOADING_PREFIX)?;
        loading.retain(|rel| !prepared_loads.contains(rel));
        if !loading.is_empty() {
            tracing::info!(
                "emptying {} relation(s) loaded by transactions that did not commit",
                loading.len()
            );
            inner.discard_loads(&loading)?;
        }
        inner.recover_spilled_commits()?;
        let restored = inner.restore_prepared()?;
        Ok(Arc::new(Datanode {
            inner,
            named: named::NamedPrepared::default(),
            in_doubt: Mutex::new(Vec::new()),
            restored: Mutex::new(restored),
        }))
    }

    /// The underlying store (tests, tools).
    pub fn storage(&self) -> &Arc<Store> {
        &self.inner.store
    }

    pub fn options(&self) -> &DatanodeOptions {
        &self.inner.opts
    }

    // ---------------------------------------------------------------- metadata

    pub fn meta_put(&self, key: &[u8], value: Option<&[u8]>) -> PgResult<()> {
        self.inner.store.meta_put(storage::Space::Meta, key, value)
    }

    /// Several metadata writes as one atomic durable batch.
    pub fn meta_put_many(&self, kvs: &[(&[u8], Option<&[u8]>)]) -> PgResult<()> {
        self.inner.store.meta_put_many(storage::Space::Meta, kvs)
    }

    /// One metadata value.
    pub fn meta_get(&self, key: &[u8]) -> PgResult<Option<Vec<u8>>> {
        self.inner.store.meta_get(storage::Space::Meta, key)
    }

    pub fn meta_scan(&self, prefix: &[u8]) -> PgResult<Vec<(Vec<u8>, Vec<u8>)>> {
        self.inner.store.meta_scan(storage::Space::Meta, prefix)
    }

    pub fn create_rel(&self) -> PgResult<RelId> {
        let _g = self.inner.rel_alloc.lock();
        let next = self.next_rel_id()?;
        self.inner.claim_rel_ids(next)?;
        Ok(next)
    }

    /// Makes relation id `rel`, chosen on another datanode (a cluster gives a relation the
    /// same id everywhere), usable here: `create_rel` never returns it or a lower id
    /// afterwards. Idempotent. Only a call that raises the counter notes the relation as
    /// new (`single_version`); for one below it (created already, or out of order) VACUUM
    /// just does not skip it.
    pub fn create_rel_at(&self, rel: RelId) -> PgResult<()> {
        let _g = self.inner.rel_alloc.lock();
        if rel >= self.next_rel_id()? {
            self.inner.claim_rel_ids(rel)?;
        }
        Ok(())
    }

    /// The id `create_rel` hands out next. Call under `rel_alloc`.
    fn next_rel_id(&self) -> PgResult<RelId> {
        match self
            .inner
            .store
            .meta_get(storage::Space::Sys, NEXT_REL_KEY)?
        {
            Some(v) if v.len() == 8 => Ok(u64::from_be_bytes(v[..8].try_into().unwrap())),
            Some(_) => Err(PgError::internal("corrupt next_rel counter")),
            None => Ok(FIRST_REL_ID),
        }
    }

    /// Durably records the drop, then removes the data in a background thread (resumed
    /// after a restart if interrupted).
    pub fn drop_rel(&self, rel: RelId) -> PgResult<()> {
        self.inner.store.meta_put_many(
            storage::Space::Sys,
            &[(&drop_key(rel), Some(b"")), (&rowid_key(rel), None)],
        )?;
        self.inner.row_ids.write().remove(&rel);
        self.inner.single_version.remove(&[rel]);
        spawn_drop(&self.inner, rel);
        Ok(())
    }

    pub fn allocate_row_ids(&self, rel: RelId, n: u64) -> PgResult<u64> {
        let counter = {
            let existing = self.inner.row_ids.read().get(&rel).cloned();
            match existing {
                Some(c) => c,
                None => {
                    let mut m = self.inner.row_ids.write();
                    match m.get(&rel) {
                        Some(c) => c.clone(),
                        None => {
                            let limit = match self
                                .inner
                                .store
                                .meta_get(storage::Space::Sys, &rowid_key(rel))?
                            {
                                Some(v) if v.len() == 8 => {
                                    u64::from_be_bytes(v[..8].try_into().unwrap())
                                }
                                Some(_) => return Err(PgError::internal("corrupt row id counter")),
                                None => 1,
                            };
                            let c = Arc::new(RowIdCounter {
                                next: AtomicU64::new(limit),
                                limit: AtomicU64::new(limit),
                                extend: Mutex::new(()),
                            });
                            m.insert(rel, c.clone());
                            c
                        }
                    }
                }
            }
        };
        // Fast path: one atomic add. Ids are returned only below the persisted limit.
        let first = counter.next.fetch_add(n, Ordering::Relaxed);
        let end = first
            .checked_add(n)
            .ok_or_else(|| PgError::internal("row ids exhausted"))?;
        if end <= counter.limit.load(Ordering::Acquire) {
            return Ok(first);
        }
        let _g = counter.extend.lock();
        if end > counter.limit.load(Ordering::Acquire) {
            let limit = end.saturating_add(ROW_ID_WINDOW.max(n));
            self.inner.store.meta_put(
                storage::Space::Sys,
                &rowid_key(rel),
                Some(&limit.to_be_bytes()),
            )?;
            counter.limit.store(limit, Ordering::Release);
        }
        Ok(first)
    }
}

impl Drop for Datanode {
    /// Stops and joins the background threads (an interrupted DROP resumes at the next
    /// open). The store itself closes when the last transaction referring to it is gone.
    fn drop(&mut self) {
        self.inner.closed.store(true, Ordering::Relaxed);
        let threads = std::mem::take(&mut *self.inner.threads.lock());
        for t in threads {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Inner {
    /// Durably moves the relation id counter past `rel`, a new, empty relation. Call under
    /// `rel_alloc`.
    fn claim_rel_ids(&self, rel: RelId) -> PgResult<()> {
        let next = rel
            .checked_add(1)
            .ok_or_else(|| PgError::internal("relation ids exhausted"))?;
        self.store
            .meta_put(storage::Space::Sys, NEXT_REL_KEY, Some(&next.to_be_bytes()))?;
        self.single_version.insert(rel);
        Ok(())
    }
}

/// Drops `rel`'s data on a thread of its own (fjall's `drop_range` waits for a running
/// compaction to end); the marker goes when no key is left, else when GC finds the
/// compactions done (`Inner::reap_drops`).
fn spawn_drop(inner: &Arc<Inner>, rel: RelId) {
    let weak = Arc::downgrade(inner);
    let h = std::thread::Builder::new()
        .name("meridian-drop".into())
        .spawn(move || {
            let Some(inner) = weak.upgrade() else { return };
            let dropped = match inner.store.drop_rel(rel) {
                Ok(true) => inner.forget_drop(rel),
                Ok(false) => Ok(()),
                Err(e) => Err(e),
            };
            if let Err(e) = dropped {
                tracing::warn!("drop of rel {rel}: {e}");
            }
        });
    if let Ok(h) = h {
        let mut threads = inner.threads.lock();
        threads.retain(|t| !t.is_finished());
        threads.push(h);
    }
}

impl Inner {
    /// Removes the drop marker of `rel`, of which no key is left.
    fn forget_drop(&self, rel: RelId) -> PgResult<()> {
        self.store
            .meta_put(storage::Space::Sys, &drop_key(rel), None)
    }

    /// Forgets the dropped relations whose last keys compaction has destroyed.
    pub(crate) fn reap_drops(&self) -> PgResult<()> {
        for rel in self.store.reap_dropped(64)? {
            self.forget_drop(rel)?;
        }
        Ok(())
    }
}

// Datanode and Txn are shared across tokio tasks.
const _: () = {
    fn assert_send_sync<T: Send + Sync>() {}
    fn check() {
        assert_send_sync::<Datanode>();
        assert_send_sync::<Txn>();
        assert_send_sync::<Bytes>();
    }
    let _ = check;
};
