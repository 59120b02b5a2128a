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
//! See README.md for the invariants.

mod increment;
mod locks;
mod owned;
mod single_version;
mod spilled;

use bytes::Bytes;
use locks::{
    DeadlockCheck, Dequeue, FxHashMap, FxHashSet, LockMode, LockTable, TryLock, TxnShared,
    TxnState, WaitGuard,
};
use owned::{loading_key, OwnedRelations, LOADING_PREFIX};
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use single_version::SingleVersionRelations;
use spilled::{Intent, Spilled, SpilledOwnIter, Spillers};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

pub use gtm::Timestamp;
pub use increment::{ColumnIncrement, IncrementOp};
pub use storage;
pub use storage::Store;

pub type RelId = u64;
pub type RowBytes = bytes::Bytes;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    ReadCommitted,
    RepeatableRead,
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

/// Savepoint marker (positions in the transaction's undo log and deferred increments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Savepoint {
    undo: usize,
    increments: usize,
}

/// Computes a row's new version from its newest committed one: a deferred increment.
type IncrementFn = Box<dyn Fn(&RowBytes) -> PgResult<RowBytes> + Send + Sync>;

type WriteSet = BTreeMap<RelId, BTreeMap<Vec<u8>, Option<RowBytes>>>;

/// Deferred increments grouped by row, in key order (statement order within a row).
type Increments = BTreeMap<(RelId, Vec<u8>), Vec<IncrementFn>>;

/// A transaction on one datanode. Dropping it without `commit`/`abort` releases its locks
/// (but cannot tell the GTM: always call `abort`). `begin` hands it out boxed: it is moved
/// by value into `commit`/`abort` and down their callees, and every async level on the way
/// would otherwise hold a copy of its ~300 bytes in the session's future.
pub struct Txn {
    shared: Arc<TxnShared>,
    isolation: Isolation,
    writes: WriteSet,
    n_writes: usize,
    /// (rel, key, previous write-set value) for every `put`, in order.
    undo: Vec<(RelId, Vec<u8>, Option<Option<RowBytes>>)>,
    /// Row locks held, each with the key's newest committed version as read under it
    /// (`Some(None)`: no version; None: not read). Nobody else commits the key while the
    /// lock is held, so the storage writer need not read it again (`storage::Write`).
    locks: FxHashMap<RelId, FxHashMap<Vec<u8>, Option<Option<Timestamp>>>>,
    /// Rows this transaction holds an increment lock on.
    increment_locks: FxHashSet<(RelId, Vec<u8>)>,
    /// Deferred increments, in statement order (`increment`).
    increments: Vec<(RelId, Vec<u8>, IncrementFn)>,
    /// Relations this transaction owns (`Datanode::own_relation`).
    owned: Vec<RelId>,
    /// Owned relations it bulk-loaded rows into, until its commit makes them permanent.
    loaded: Vec<RelId>,
    /// Estimated memory of `writes`, `undo` and `locks` (spilled past `txn_memory`).
    memory: usize,
    /// What it moved to storage, once it outgrew `txn_memory`.
    spilled: Option<Spilled>,
    /// Whether a savepoint was ever taken: until then a spill need not keep its undo log
    /// (nothing can roll back to a position inside it).
    savepoint_taken: AtomicBool,
    inner: Arc<Inner>,
    finished: bool,
}

impl Txn {
    pub fn start_ts(&self) -> Timestamp {
        self.shared.start_ts
    }
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }
    pub fn set_isolation(&mut self, iso: Isolation) {
        self.isolation = iso;
    }
    pub fn has_writes(&self) -> bool {
        self.n_writes > 0 || self.spilled.is_some()
    }
    /// Local transaction id (as used in deadlock reports).
    pub fn id(&self) -> u64 {
        self.shared.id
    }
    pub fn savepoint(&self) -> Savepoint {
        self.savepoint_taken.store(true, Ordering::Relaxed);
        Savepoint {
            undo: self.undo_position(),
            increments: self.increments.len(),
        }
    }
    /// Whether increments wait to be applied (`Datanode::apply_increments`).
    pub fn has_increments(&self) -> bool {
        !self.increments.is_empty()
    }
    fn has_increment_on(&self, rel: RelId, key: &[u8]) -> bool {
        self.increments
            .iter()
            .any(|(r, k, _)| *r == rel && k == key)
    }
    /// Moves the deferred increments out, grouped by row in key order (statement order
    /// within a row).
    fn take_increments_by_row(&mut self) -> Increments {
        let mut by_row = Increments::new();
        for (rel, key, f) in std::mem::take(&mut self.increments) {
            by_row.entry((rel, key)).or_default().push(f);
        }
        by_row
    }
    /// Undoes the writes and increments made after `sp`. Row locks taken since are kept
    /// until the end of the transaction (conservative).
    pub fn rollback_to(&mut self, sp: &Savepoint) -> PgResult<()> {
        self.increments.truncate(sp.increments);
        let spilled_undo = self.spilled.as_ref().map_or(0, |s| s.undo);
        if sp.undo < spilled_undo {
            return self.rollback_spilled(sp.undo);
        }
        while self.undo.len() > sp.undo - spilled_undo {
            let (rel, key, prev) = self.undo.pop().expect("len checked");
            let m = self.writes.entry(rel).or_default();
            match prev {
                None => {
                    if m.remove(&key).is_some() {
                        self.n_writes -= 1;
                    }
                }
                Some(v) => {
                    if m.insert(key, v).is_none() {
                        self.n_writes += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// The transaction's own version of a key (None: it has not written it; Some(None):
    /// it deleted it).
    fn own_write(&self, rel: RelId, key: &[u8]) -> PgResult<Option<Option<RowBytes>>> {
        if let Some(w) = self.writes.get(&rel).and_then(|m| m.get(key)) {
            return Ok(Some(w.clone()));
        }
        Ok(match self.intent(rel, key)? {
            Some(Intent::Write(w)) => Some(w),
            Some(Intent::Locked) | None => None,
        })
    }

    fn holds_lock(&self, rel: RelId, key: &[u8]) -> PgResult<bool> {
        Ok(self.locks.get(&rel).is_some_and(|s| s.contains_key(key))
            || self.intent(rel, key)?.is_some())
    }

    fn record_lock(&mut self, rel: RelId, key: &[u8]) -> PgResult<()> {
        let keys = self.locks.entry(rel).or_default();
        if !keys.contains_key(key) {
            keys.insert(key.to_vec(), None);
            self.grew(2 * key.len() + spilled::LOCK_OVERHEAD)?;
        }
        Ok(())
    }

    /// Notes memory taken by the write set, undo log or locks; past `txn_memory` they go
    /// to storage.
    fn grew(&mut self, bytes: usize) -> PgResult<()> {
        self.memory += bytes;
        if self.memory as u64 > self.inner.opts.txn_memory {
            let inner = self.inner.clone();
            inner.spill(self)?;
        }
        Ok(())
    }

    /// Reads the newest committed version of a key locked (or increment-locked) by this
    /// transaction and notes it.
    fn read_newest_locked(&mut self, rel: RelId, key: &[u8]) -> PgResult<Option<storage::Version>> {
        let newest = self.inner.store.latest(rel, key)?;
        self.note_newest(rel, key, newest.as_ref());
        Ok(newest)
    }

    /// Releases every lock, then waits until every version read before it was durable is
    /// durable: a transaction that wrote nothing, or gives up, could otherwise end (and
    /// its client act on what it read) before a crash could still undo those versions.
    /// One that commits writes needs no wait: its own commit follows theirs in the
    /// journal. Versions are read only under a lock (`read_newest_locked`), and their
    /// owners stay on the row's lock entry until durable (`LockTable::finish`), so the
    /// owners on the rows it holds now cover every version it read; looked up here rather
    /// than at each read, which the transactions that commit writes need not pay. (Rows it
    /// locked without reading, and later mergers on increment-locked rows, only lengthen
    /// the wait.)
    async fn release_and_await_reads_durable(&mut self) {
        let locked = self
            .locks
            .iter()
            .flat_map(|(rel, keys)| keys.keys().map(move |k| (*rel, k.as_slice())));
        let incremented = self
            .increment_locks
            .iter()
            .map(|(rel, k)| (*rel, k.as_slice()));
        let owners: Vec<Arc<TxnShared>> = locked
            .chain(incremented)
            .flat_map(|(rel, key)| self.inner.locks.applied_not_durable(rel, key))
            .collect();
        self.release_all();
        for t in owners {
            t.wait_finished().await;
        }
    }

    /// Notes the newest committed version of a locked key, as just read from the store.
    fn note_newest(&mut self, rel: RelId, key: &[u8], newest: Option<&storage::Version>) {
        if let Some(seen) = self.locks.get_mut(&rel).and_then(|keys| keys.get_mut(key)) {
            *seen = Some(newest.map(|v| v.commit_ts));
        }
    }

    fn newest_read_under_lock(&self, rel: RelId, key: &[u8]) -> Option<Option<Timestamp>> {
        self.locks
            .get(&rel)
            .and_then(|keys| keys.get(key))
            .copied()
            .flatten()
    }

    /// Moves the held locks out (commit releases them itself).
    fn take_locks(&mut self) -> Vec<(RelId, Vec<u8>)> {
        std::mem::take(&mut self.locks)
            .into_iter()
            .flat_map(|(rel, keys)| keys.into_keys().map(move |k| (rel, k)))
            .collect()
    }

    /// Releases every lock and owned relation (emptying those it loaded rows into, unless
    /// its commit made them permanent) and marks the transaction finished (wakes waiting
    /// readers).
    fn release_all(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        if !self.loaded.is_empty() {
            self.inner
                .discard_loads_or_log(&std::mem::take(&mut self.loaded));
        }
        self.inner.owned.release(&self.owned);
        if let Some(spilled) = self.spilled.take() {
            for (rel, key) in self.shared.close_reinstated() {
                self.inner.locks.release(rel, &key, self.shared.id);
            }
            self.inner
                .spillers
                .unregister(&spilled.rels, self.shared.id);
            if !spilled.commit_recorded {
                self.inner.discard_intents(self.shared.id);
            }
        }
        for (rel, keys) in std::mem::take(&mut self.locks) {
            for k in keys.into_keys() {
                self.inner.locks.release(rel, &k, self.shared.id);
            }
        }
        for (rel, k) in std::mem::take(&mut self.increment_locks) {
            self.inner.locks.release(rel, &k, self.shared.id);
        }
        self.shared.set_state(TxnState::Finished);
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        self.release_all();
    }
}

/// Ends a transaction without applying anything (a commit that wrote nothing, or an
/// abort): releases its row locks, waits until the versions it read under them are
/// durable, and tells the GTM it ended.
async fn end_unapplied(mut txn: Box<Txn>, gtm: &gtm::GtmClient) -> PgResult<Timestamp> {
    let start = txn.shared.start_ts;
    if !txn.loaded.is_empty() {
        // Emptying a loaded relation reads and deletes all of it: not on a runtime worker.
        let (inner, rels) = (txn.inner.clone(), std::mem::take(&mut txn.loaded));
        if let Err(e) = tokio::task::spawn_blocking(move || inner.discard_loads_or_log(&rels)).await
        {
            tracing::error!("emptying relations loaded by an aborted transaction: {e}");
        }
    }
    txn.release_and_await_reads_durable().await;
    gtm.finish(start).await?;
    Ok(start)
}

type Committing = HashMap<RelId, HashMap<u64, Arc<TxnShared>>>;

/// Transactions currently committing, per relation (for scans), sharded by relation.
struct CommitRegistry {
    shards: Box<[Mutex<Committing>]>,
}

impl CommitRegistry {
    fn new() -> Self {
        CommitRegistry {
            shards: (0..16).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
    fn shard(&self, rel: RelId) -> &Mutex<Committing> {
        &self.shards[(rel.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize % self.shards.len()]
    }
    fn register(&self, rel: RelId, t: &Arc<TxnShared>) {
        self.shard(rel)
            .lock()
            .entry(rel)
            .or_default()
            .insert(t.id, t.clone());
    }
    fn unregister(&self, rel: RelId, id: u64) {
        let mut s = self.shard(rel).lock();
        if let Some(m) = s.get_mut(&rel) {
            m.remove(&id);
            if m.is_empty() {
                s.remove(&rel);
            }
        }
    }
    /// `horizon`, lowered below the start of every committing transaction: the storage
    /// writer may still need the versions its snapshot saw (a late merge reads the
    /// version below its commit timestamp, `storage::WriteOp::Merge`), and the GTM no
    /// longer counts it once it has a commit timestamp.
    fn clamp_horizon(&self, horizon: Timestamp) -> Timestamp {
        self.shards
            .iter()
            .flat_map(|s| {
                s.lock()
                    .values()
                    .flat_map(|m| m.values().map(|t| t.start_ts))
                    .min()
            })
            .fold(horizon, Timestamp::min)
    }
    fn blocking(&self, rel: RelId, snapshot: Timestamp, me: u64) -> Vec<Arc<TxnShared>> {
        let s = self.shard(rel).lock();
        match s.get(&rel) {
            None => Vec::new(),
            Some(m) => m
                .values()
                .filter(|t| t.id != me && t.blocks_snapshot(snapshot))
                .cloned()
                .collect(),
        }
    }
}

type KeySet = FxHashSet<(RelId, Vec<u8>)>;
/// A transaction's own writes in a scan range: (key, row or None for a delete).
type OwnIter<'a> = Box<dyn Iterator<Item = PgResult<(Vec<u8>, Option<RowBytes>)>> + Send + 'a>;
/// The part of them in its in-memory write set.
type MemoryOwnIter<'a> = std::collections::btree_map::Range<'a, Vec<u8>, Option<RowBytes>>;

const RECENT_SHARDS: usize = 16;
/// Minimum time between two full-scan collections of one relation caused by overflow.
const FULL_GC_MIN_INTERVAL: Duration = Duration::from_secs(60);

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
    owned: OwnedRelations,
    /// Relations VACUUM has nothing to collect in.
    single_version: SingleVersionRelations,
    spillers: Spillers,
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

fn deadlock_detected(detail: String) -> PgError {
    PgError::new(codes::DEADLOCK_DETECTED, "deadlock detected")
        .with_detail(detail)
        .with_hint("See server log for query details.")
}

fn serialization_failure() -> PgError {
    PgError::new(
        codes::SERIALIZATION_FAILURE,
        "could not serialize access due to concurrent update",
    )
}

impl Datanode {
    pub fn open(opts: DatanodeOptions) -> PgResult<Arc<Datanode>> {
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
            owned: OwnedRelations::default(),
            single_version: SingleVersionRelations::default(),
            spillers: Spillers::default(),
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
        // Empty the relations that transactions were loading when the server stopped.
        let loading = marked_rels(&inner.store, LOADING_PREFIX)?;
        if !loading.is_empty() {
            tracing::info!(
                "emptying {} relation(s) loaded by transactions that did not commit",
                loading.len()
            );
            inner.discard_loads(&loading)?;
        }
        inner.recover_spilled_commits()?;
        Ok(Arc::new(Datanode { inner }))
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
        let store = &self.inner.store;
        let next = match store.meta_get(storage::Space::Sys, NEXT_REL_KEY)? {
            Some(v) if v.len() == 8 => u64::from_be_bytes(v[..8].try_into().unwrap()),
            Some(_) => return Err(PgError::internal("corrupt next_rel counter")),
            None => FIRST_REL_ID,
        };
        store.meta_put(
            storage::Space::Sys,
            NEXT_REL_KEY,
            Some(&(next + 1).to_be_bytes()),
        )?;
        self.inner.single_version.insert(next);
        Ok(next)
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

    // ---------------------------------------------------------------- transactions

    pub fn begin(&self, start_ts: Timestamp, isolation: Isolation) -> Box<Txn> {
        let id = self.inner.next_txn.fetch_add(1, Ordering::Relaxed);
        Box::new(Txn {
            shared: Arc::new(TxnShared::new(id, start_ts)),
            isolation,
            writes: BTreeMap::new(),
            n_writes: 0,
            undo: Vec::new(),
            locks: FxHashMap::default(),
            increment_locks: FxHashSet::default(),
            increments: Vec::new(),
            owned: Vec::new(),
            loaded: Vec::new(),
            memory: 0,
            spilled: None,
            savepoint_taken: AtomicBool::new(false),
            inner: self.inner.clone(),
            finished: false,
        })
    }

    pub async fn get(
        &self,
        txn: &Txn,
        rel: RelId,
        key: &[u8],
        snapshot: Timestamp,
    ) -> PgResult<Option<RowBytes>> {
        self.get_row(txn, rel, key, snapshot, false).await
    }

    /// `get`; with `presence_only`, for a caller that only needs to know whether the row
    /// exists (an increment of it, `increment`): does not wait for increments of it that
    /// are being merged, so its column values may be older than `get`'s.
    pub async fn get_row(
        &self,
        txn: &Txn,
        rel: RelId,
        key: &[u8],
        snapshot: Timestamp,
        presence_only: bool,
    ) -> PgResult<Option<RowBytes>> {
        if let Some(w) = txn.own_write(rel, key)? {
            return Ok(w);
        }
        self.wait_unowned(txn, rel).await?;
        for t in self.inner.spillers.of(rel, txn.shared.id) {
            if t.blocks_snapshot(snapshot) {
                t.wait_finished().await;
            }
        }
        while let Some(owner) =
            self.inner
                .locks
                .blocking_owner(rel, key, snapshot, txn.shared.id, presence_only)
        {
            owner.wait_finished().await;
        }
        Ok(self
            .inner
            .store
            .get(rel, key, snapshot)?
            .and_then(|v| v.row))
    }

    /// The rows of `rel` in `[lo, hi)` (user-key bounds) at `snapshot` with their keys,
    /// the transaction's own writes merged in, in key order.
    pub async fn scan<'a>(
        &'a self,
        txn: &'a Txn,
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
    ) -> PgResult<ScanRows<'a, (Vec<u8>, RowBytes)>> {
        let merged = self.merged_scan(txn, rel, lo, hi, snapshot).await?;
        Ok(Box::new(
            merged.map(|r| r.map(|(key, row)| (key.into_vec(), row))),
        ))
    }

    /// `scan` without the keys, which most scans never read: a stored row's key is not
    /// decoded.
    pub async fn scan_rows<'a>(
        &'a self,
        txn: &'a Txn,
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
    ) -> PgResult<ScanRows<'a, RowBytes>> {
        let merged = self.merged_scan(txn, rel, lo, hi, snapshot).await?;
        Ok(Box::new(merged.map(|r| r.map(|(_, row)| row))))
    }

    async fn merged_scan<'a>(
        &'a self,
        txn: &'a Txn,
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
    ) -> PgResult<MergeIter<'a>> {
        self.wait_unowned(txn, rel).await?;
        // Every transaction that registered before this point and may commit at <= snapshot
        // is waited out; any that registers later gets a commit ts > snapshot.
        for t in self.inner.committing.blocking(rel, snapshot, txn.shared.id) {
            t.wait_finished().await;
        }
        let stored = self.inner.store.scan(rel, &lo, &hi, snapshot);
        let memory: Option<MemoryOwnIter<'a>> = match txn.writes.get(&rel) {
            Some(m) if !m.is_empty() && range_nonempty(&lo, &hi) => {
                Some(m.range::<[u8], _>((as_ref_bound(&lo), as_ref_bound(&hi))))
            }
            _ => None,
        };
        let own: OwnIter<'a> = match (memory, txn.intents_in(rel, &lo, &hi)) {
            (memory, Some(intents)) => Box::new(SpilledOwnIter {
                memory: memory.unwrap_or_default().peekable(),
                intents: intents.peekable(),
            }),
            (Some(memory), None) => Box::new(memory.map(|(k, v)| Ok((k.clone(), v.clone())))),
            (None, None) => Box::new(std::iter::empty()),
        };
        Ok(MergeIter {
            stored: stored.peekable(),
            own: own.peekable(),
        })
    }

    /// Takes the row's exclusive lock, waiting (with deadlock detection) if need be.
    async fn acquire(&self, txn: &mut Txn, rel: RelId, key: &[u8]) -> PgResult<()> {
        if txn.holds_lock(rel, key)? {
            return Ok(());
        }
        self.wait_unowned(txn, rel).await?;
        self.wait_for_lock(txn, rel, key, LockMode::Exclusive)
            .await?;
        txn.record_lock(rel, key)
    }

    async fn wait_for_lock(
        &self,
        txn: &mut Txn,
        rel: RelId,
        key: &[u8],
        mode: LockMode,
    ) -> PgResult<()> {
        if let TryLock::Queued(waiter, rx) =
            self.inner
                .locks
                .lock_or_enqueue(&txn.shared, rel, key, mode)
        {
            self.wait_queued(txn, rel, key, mode, waiter, rx).await?;
        }
        // A spilled transaction may hold the row through an intent: queue behind it. (A
        // Merge comes from an increment holder, which checked when it took the row.)
        if mode != LockMode::Merge {
            while let Some(t) = self.inner.spilled_holder(txn.shared.id, rel, key)? {
                if let Some((waiter, rx)) =
                    self.inner
                        .locks
                        .reinstate_for_spiller(&t, &txn.shared, rel, key, mode)
                {
                    self.wait_queued(txn, rel, key, mode, waiter, rx).await?;
                }
            }
        }
        Ok(())
    }

    /// Waits in a lock's queue until granted, checking for deadlocks every
    /// `deadlock_timeout`.
    async fn wait_queued(
        &self,
        txn: &Txn,
        rel: RelId,
        key: &[u8],
        mode: LockMode,
        waiter: u64,
        mut rx: tokio::sync::oneshot::Receiver<()>,
    ) -> PgResult<()> {
        let inner = &*self.inner;
        let mut guard = WaitGuard {
            table: &inner.locks,
            txn: txn.shared.clone(),
            rel,
            key,
            waiter,
            mode,
            armed: true,
        };
        loop {
            tokio::select! {
                r = &mut rx => {
                    guard.armed = false;
                    if r.is_err() {
                        // Sender dropped without a grant: should not happen.
                        if let Dequeue::Granted = inner.locks.dequeue(rel, key, waiter, &txn.shared, mode) {
                            break;
                        }
                        return Err(PgError::internal("lock wait ended without a grant"));
                    }
                    break;
                }
                _ = tokio::time::sleep(inner.opts.deadlock_timeout) => {
                    match inner.locks.check_deadlock(&txn.shared, rel, key, waiter, mode) {
                        DeadlockCheck::NoCycle => continue,
                        DeadlockCheck::Granted => { guard.armed = false; break; }
                        DeadlockCheck::Victim(detail) => {
                            guard.armed = false;
                            return Err(deadlock_detected(detail));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// A deferred increment of the row `key` (`apply` computes the new version from the
    /// newest committed one), for READ COMMITTED's `SET c = c + d` on a row found by its
    /// key. Returns None where it takes the ordinary way instead (the caller then locks
    /// the row with `lock_row`): under REPEATABLE READ, when the transaction holds the
    /// row's exclusive lock, or when nobody else has any business with the row (the lock
    /// is taken here: a row nobody else wants is updated at once, not at commit).
    /// Otherwise takes an increment lock (waiting only for an exclusive owner) and returns
    /// whether the row exists, in which case `increments` apply at commit, or earlier when the
    /// transaction touches the row again.
    pub async fn increment(
        &self,
        txn: &mut Txn,
        rel: RelId,
        key: &[u8],
        increments: Vec<ColumnIncrement>,
    ) -> PgResult<Option<bool>> {
        if txn.isolation != Isolation::ReadCommitted
            || txn.holds_lock(rel, key)?
            || txn.own_write(rel, key)?.is_some()
        {
            return Ok(None);
        }
        if !txn.has_increment_on(rel, key) {
            self.wait_unowned(txn, rel).await?;
            // (Not while a spilled transaction may hold the row: `wait_for_lock` checks.)
            if self.inner.spillers.of(rel, txn.shared.id).is_empty()
                && self.inner.locks.try_lock_idle(&txn.shared, rel, key)
            {
                txn.record_lock(rel, key)?;
                return Ok(None);
            }
            if !txn.increment_locks.contains(&(rel, key.to_vec())) {
                self.wait_for_lock(txn, rel, key, LockMode::Increment)
                    .await?;
                txn.increment_locks.insert((rel, key.to_vec()));
            }
            // Under the increment lock nobody deletes the row or writes it otherwise, so
            // what exists now still exists at commit.
            let exists = txn
                .read_newest_locked(rel, key)?
                .is_some_and(|v| v.row.is_some());
            if !exists {
                return Ok(Some(false));
            }
        }
        let apply: IncrementFn = Box::new(move |row| increment::apply(row, &increments));
        txn.increments.push((rel, key.to_vec(), apply));
        Ok(Some(true))
    }

    /// Applies the transaction's deferred increments before it reads or writes their rows
    /// otherwise: for each row (in key order), takes the owner slot (`LockMode::Apply`:
    /// waits for the owner and for increments being merged, not for the other increment
    /// holders), reads the newest version and writes the incremented one. The row is
    /// then the transaction's like any it locked.
    pub async fn apply_increments(&self, txn: &mut Txn) -> PgResult<()> {
        for ((rel, key), fs) in txn.take_increments_by_row() {
            self.wait_for_lock(txn, rel, &key, LockMode::Apply).await?;
            txn.record_lock(rel, &key)?;
            let Some(mut row) = txn.read_newest_locked(rel, &key)?.and_then(|v| v.row) else {
                continue; // cannot happen: the increment lock kept deleters out
            };
            for f in &fs {
                row = f(&row)?;
            }
            self.put(txn, rel, &key, Some(row))?;
        }
        Ok(())
    }

    pub async fn lock_row(
        &self,
        txn: &mut Txn,
        rel: RelId,
        key: &[u8],
    ) -> PgResult<Option<RowBytes>> {
        if txn.has_increment_on(rel, key) {
            self.apply_increments(txn).await?;
        }
        if let Some(w) = txn.own_write(rel, key)? {
            return Ok(w);
        }
        self.acquire(txn, rel, key).await?;
        match txn.read_newest_locked(rel, key)? {
            None => Ok(None),
            Some(v) => {
                if txn.isolation == Isolation::RepeatableRead && v.commit_ts > txn.shared.start_ts {
                    return Err(serialization_failure());
                }
                Ok(v.row)
            }
        }
    }

    pub fn put(
        &self,
        txn: &mut Txn,
        rel: RelId,
        key: &[u8],
        row: Option<RowBytes>,
    ) -> PgResult<()> {
        if txn.has_increment_on(rel, key) {
            return Err(PgError::internal(
                "datanode: put on a row with a deferred increment",
            ));
        }
        if self.inner.owned.other_owner(rel, txn.shared.id).is_some() {
            return Err(PgError::internal(
                "datanode: put into a relation another transaction owns",
            ));
        }
        if !txn.holds_lock(rel, key)? {
            if self
                .inner
                .locks
                .try_lock(&txn.shared, rel, key, LockMode::Exclusive)
            {
                txn.record_lock(rel, key)?;
            } else {
                return Err(PgError::internal(
                    "datanode: put on a row locked by another transaction",
                ));
            }
        }
        let size = 2 * key.len() + row.as_ref().map_or(0, |r| r.len()) + spilled::WRITE_OVERHEAD;
        let m = txn.writes.entry(rel).or_default();
        let prev = m.insert(key.to_vec(), row);
        if prev.is_none() {
            txn.n_writes += 1;
        }
        txn.undo.push((rel, key.to_vec(), prev));
        txn.grew(size)
    }

    /// Writes a row under a key that no transaction has used before (a row id just
    /// allocated by `allocate_row_ids`): no version of it exists to check or replace.
    pub async fn put_new_key(
        &self,
        txn: &mut Txn,
        rel: RelId,
        key: &[u8],
        row: RowBytes,
    ) -> PgResult<()> {
        self.wait_unowned(txn, rel).await?;
        self.put(txn, rel, key, Some(row))?;
        txn.note_newest(rel, key, None);
        Ok(())
    }

    pub async fn insert(
        &self,
        txn: &mut Txn,
        rel: RelId,
        key: &[u8],
        row: RowBytes,
        unique_violation: impl FnOnce() -> PgError + Send,
    ) -> PgResult<()> {
        if txn.has_increment_on(rel, key) {
            self.apply_increments(txn).await?;
        }
        self.acquire(txn, rel, key).await?;
        let exists = match txn.own_write(rel, key)? {
            Some(w) => w.is_some(),
            None => txn
                .read_newest_locked(rel, key)?
                .is_some_and(|v| v.row.is_some()),
        };
        if exists {
            return Err(unique_violation());
        }
        self.put(txn, rel, key, Some(row))
    }

    pub async fn commit(&self, txn: Box<Txn>, gtm: &gtm::GtmClient) -> PgResult<Timestamp> {
        if !txn.has_writes() && txn.increments.is_empty() && txn.loaded.is_empty() {
            // Every select ends here, and this future is part of each session's state
            // (one per connection): the read-only path stays small and the write path's
            // kilobytes go to the heap, only for transactions that wrote.
            return end_unapplied(txn, gtm).await;
        }
        Box::pin(self.commit_writes(txn, gtm)).await
    }

    async fn commit_writes(&self, mut txn: Box<Txn>, gtm: &gtm::GtmClient) -> PgResult<Timestamp> {
        let merges = txn.take_increments_by_row();
        if let Err(e) = self.start_merges(&mut txn, merges.keys()).await {
            self.abort(txn, gtm).await;
            return Err(e);
        }
        // Run to completion even if the caller's future is dropped: a half-done commit
        // would leave rows CommittingPending forever.
        let inner = self.inner.clone();
        let gtm = gtm.clone();
        match tokio::spawn(async move { inner.commit(txn, merges, &gtm).await }).await {
            Ok(r) => r,
            Err(e) => Err(PgError::internal(format!("commit task failed: {e}"))),
        }
    }

    /// Turns each incremented row's Increment lock into a Merge (in key order), waiting
    /// for a transaction that applied its own increments there (`LockMode::Apply`) to
    /// end; from here on nobody may compute the row from its newest version until the
    /// merges are applied.
    async fn start_merges(
        &self,
        txn: &mut Txn,
        rows: impl Iterator<Item = &(RelId, Vec<u8>)>,
    ) -> PgResult<()> {
        for (rel, key) in rows {
            self.wait_for_lock(txn, *rel, key, LockMode::Merge).await?;
        }
        Ok(())
    }

    pub async fn abort(&self, txn: Box<Txn>, gtm: &gtm::GtmClient) {
        if let Err(e) = end_unapplied(txn, gtm).await {
            tracing::warn!("gtm finish on abort failed: {e}");
        }
    }

    // ---------------------------------------------------------------- owned relations

    /// Makes `rel`, a relation just created for the transaction's TRUNCATE, the
    /// transaction's own until it ends: other transactions' reads and writes of it wait
    /// until then (as PostgreSQL's TRUNCATE locks the table), and the transaction may load
    /// rows into it in bulk (`bulk_load`). See `owned.rs`.
    pub fn own_relation(&self, txn: &mut Txn, rel: RelId) {
        self.inner.owned.claim(rel, &txn.shared);
        txn.owned.push(rel);
    }

    /// Whether `bulk_load` may load into `rel`: the transaction owns it and has written
    /// nothing to it otherwise (rows it wrote are in its write set or its intents, and
    /// would shadow rows loaded later).
    pub fn can_bulk_load(&self, txn: &Txn, rel: RelId) -> bool {
        txn.owned.contains(&rel)
            && txn.writes.get(&rel).is_none_or(|m| m.is_empty())
            && !txn.has_spilled(rel)
    }

    /// Whether the transaction bulk-loaded rows into `rel` already (a later load's keys
    /// may then exist).
    pub fn has_bulk_loaded(&self, txn: &Txn, rel: RelId) -> bool {
        txn.loaded.contains(&rel)
    }

    /// Starts a bulk load of new rows into `rel` (see `can_bulk_load`), visible at once to
    /// the transaction's own reads and to everyone else's once it commits; an abort
    /// empties the relation. The caller must not load a key the relation holds.
    pub fn bulk_load(&self, txn: &mut Txn, rel: RelId) -> PgResult<storage::BulkLoad> {
        if !self.can_bulk_load(txn, rel) {
            return Err(PgError::internal(
                "datanode: bulk load into a relation the transaction does not own",
            ));
        }
        if !txn.loaded.contains(&rel) {
            self.inner
                .store
                .meta_put(storage::Space::Sys, &loading_key(rel), Some(b""))?;
            txn.loaded.push(rel);
        }
        self.inner.store.bulk_load(rel, txn.shared.start_ts)
    }

    /// Waits while another transaction owns `rel`.
    async fn wait_unowned(&self, txn: &Txn, rel: RelId) -> PgResult<()> {
        while let Some(owner) = self.inner.owned.other_owner(rel, txn.shared.id) {
            let _waiting = LockTable::wait_for_relation(&txn.shared, rel, &owner);
            let finished = owner.wait_finished();
            tokio::pin!(finished);
            loop {
                tokio::select! {
                    _ = &mut finished => break,
                    _ = tokio::time::sleep(self.inner.opts.deadlock_timeout) => {
                        if let Some(detail) = self.inner.locks.check_relation_deadlock(&txn.shared) {
                            return Err(deadlock_detected(detail));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    // ---------------------------------------------------------------- GC

    /// Starts a background thread that runs `gc(gtm.horizon())` every `interval`; also
    /// makes `vacuum` use the GTM's horizon. Stops when the datanode is dropped.
    pub fn start_gc(&self, gtm: gtm::GtmClient, interval: Duration) {
        *self.inner.gc_gtm.lock() = Some(gtm.clone());
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let h = std::thread::Builder::new()
            .name("meridian-gc".into())
            .spawn(move || loop {
                let deadline = std::time::Instant::now() + interval;
                loop {
                    let now = std::time::Instant::now();
                    if now >= deadline {
                        break;
                    }
                    std::thread::park_timeout(deadline - now);
                    match weak.upgrade() {
                        Some(inner) if !inner.closed.load(Ordering::Relaxed) => {
                            if inner.gc_kick.swap(false, Ordering::Relaxed) {
                                break;
                            }
                        }
                        _ => return,
                    }
                }
                let Some(inner) = weak.upgrade() else { return };
                if inner.closed.load(Ordering::Relaxed) {
                    return;
                }
                if let Err(e) = inner.gc(gtm.horizon()) {
                    tracing::warn!("background gc failed: {e}");
                }
            });
        if let Ok(h) = h {
            *self.inner.gc_thread.lock() = Some(h.thread().clone());
            self.inner.threads.lock().push(h);
        }
    }

    /// Full garbage collection of one relation at the current horizon (GTM horizon if
    /// `start_gc` was called, else the last horizon passed to `gc`); returns the number of
    /// versions removed, or None when the relation is known to hold nothing to collect
    /// and was not scanned (`single_version.rs`).
    pub fn vacuum(&self, rel: RelId) -> PgResult<Option<u64>> {
        if self.inner.single_version.contains(rel) {
            return Ok(None);
        }
        let horizon = match self.inner.gc_gtm.lock().as_ref() {
            Some(g) => g.horizon(),
            None => self.inner.last_horizon.load(Ordering::Relaxed),
        };
        let horizon = self.inner.committing.clamp_horizon(horizon);
        self.inner
            .last_horizon
            .fetch_max(horizon, Ordering::Relaxed);
        let _g = self.inner.gc_lock.lock();
        self.inner.store.gc_rel(rel, horizon).map(Some)
    }

    pub fn gc(&self, horizon: Timestamp) -> PgResult<u64> {
        self.inner.gc(horizon)
    }

    /// The local wait-for graph as (waiting txn start ts, blocking txn start ts) edges,
    /// for distributed deadlock detection: start timestamps are global (GTM-issued), so
    /// the coordinator can merge the edges of all datanodes.
    pub fn wait_for_edges(&self) -> Vec<(Timestamp, Timestamp)> {
        self.inner.locks.edges()
    }

    /// Number of keys waiting for GC (tests, monitoring).
    pub fn gc_tracked_keys(&self) -> usize {
        self.inner
            .recent
            .iter()
            .map(|s| s.lock().len())
            .sum::<usize>()
            + self.inner.store.superseded_len()
    }

    /// Number of lock-table entries (tests, monitoring).
    pub fn lock_count(&self) -> usize {
        self.inner.locks.len()
    }

    /// Number of transactions queued on a row lock (tests, monitoring).
    pub fn lock_queue_len(&self, rel: RelId, key: &[u8]) -> usize {
        self.inner.locks.queue_len(rel, key)
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

fn spawn_drop(inner: &Arc<Inner>, rel: RelId) {
    let weak = Arc::downgrade(inner);
    let h = std::thread::Builder::new()
        .name("meridian-drop".into())
        .spawn(move || {
            let Some(inner) = weak.upgrade() else { return };
            let stop = || inner.closed.load(Ordering::Relaxed);
            match inner.store.delete_rel(rel, &stop) {
                Ok((_, true)) => {
                    if let Err(e) = inner
                        .store
                        .meta_put(storage::Space::Sys, &drop_key(rel), None)
                    {
                        tracing::warn!("drop of rel {rel}: {e}");
                    }
                }
                Ok((_, false)) => {}
                Err(e) => tracing::warn!("drop of rel {rel}: {e}"),
            }
        });
    if let Ok(h) = h {
        let mut threads = inner.threads.lock();
        threads.retain(|t| !t.is_finished());
        threads.push(h);
    }
}

impl Inner {
    /// Commits `txn` with its deferred increments, grouped by row (`merges`), whose rows
    /// it holds in Merge mode.
    async fn commit(
        self: &Arc<Self>,
        mut txn: Box<Txn>,
        merges: Increments,
        gtm: &gtm::GtmClient,
    ) -> PgResult<Timestamp> {
        if txn.spilled.is_some() {
            return self.commit_spilled(txn, merges, gtm).await;
        }
        let mut rels: Vec<RelId> = txn
            .writes
            .iter()
            .filter(|(_, m)| !m.is_empty())
            .map(|(r, _)| *r)
            .chain(merges.keys().map(|(r, _)| *r))
            .collect();
        rels.sort_unstable();
        rels.dedup();
        let ts = self.take_commit_ts(&mut txn, &rels, gtm).await?;
        let mut writes = Vec::with_capacity(txn.n_writes + merges.len());
        for (rel, m) in std::mem::take(&mut txn.writes) {
            for (key, row) in m {
                let newest_before = txn.newest_read_under_lock(rel, &key);
                writes.push(storage::Write {
                    rel,
                    key,
                    op: storage::WriteOp::Put(row),
                    newest_before,
                });
            }
        }
        for ((rel, key), fs) in merges {
            let merge: storage::MergeFn =
                Arc::new(move |row: &RowBytes| fs.iter().try_fold(row.clone(), |row, f| f(&row)));
            writes.push(storage::Write {
                rel,
                key,
                op: storage::WriteOp::Merge(merge),
                newest_before: None,
            });
        }
        // Early lock release: once the batch is applied, the rows' next writers may go on
        // (they read the new versions, and their commits follow this one in the journal,
        // so none is durable before it); readers keep waiting for this transaction until
        // it is durable and Finished (`LockTable::release_applied`). The same holds for
        // the rows it incremented (increment locks).
        let mut locked = txn.take_locks();
        locked.extend(std::mem::take(&mut txn.increment_locks));
        let locked = Arc::new(locked);
        let on_applied: storage::OnApplied = {
            let (inner, locked, owner) = (self.clone(), locked.clone(), txn.shared.clone());
            Box::new(move || {
                for (rel, key) in locked.iter() {
                    inner.locks.release_applied(*rel, key, &owner);
                }
            })
        };
        // Rows it loaded in bulk become permanent with this batch (their markers go).
        let loads_kept = txn.loaded.iter().map(|&rel| loading_key(rel)).collect();
        let rx = self.store.apply_removing(
            &writes,
            ts,
            self.opts.synchronous_commit,
            Some(on_applied),
            loads_kept,
        );
        let res = match rx.await {
            Ok(r) => r,
            Err(_) => Err(PgError::io("commit", "storage writer stopped")),
        };
        if res.is_ok() {
            txn.loaded.clear();
            // A version replaced by a row version is listed by the storage writer (exact-key
            // GC); delete tombstones need the per-key pass.
            let deleted = writes
                .into_iter()
                .filter(|w| matches!(w.op, storage::WriteOp::Put(None)));
            self.note_written(deleted.map(|w| (w.rel, w.key)));
        }
        txn.release_all();
        for (rel, key) in locked.iter() {
            self.locks.finish(*rel, key, txn.shared.id);
        }
        self.unregister_committing(&rels, txn.shared.id);
        res.map(|()| ts)
    }

    /// Steps 1 and 2 of a commit: registers the transaction on `rels` (scans wait for it),
    /// marks it `CommittingPending`, takes its commit timestamp and marks it `Committing`.
    /// If the GTM fails nothing was written: the transaction ends aborted.
    async fn take_commit_ts(
        &self,
        txn: &mut Txn,
        rels: &[RelId],
        gtm: &gtm::GtmClient,
    ) -> PgResult<Timestamp> {
        // Before any of its versions is stored: VACUUM must not skip them from here on.
        self.single_version.remove(rels);
        for &rel in rels {
            self.committing.register(rel, &txn.shared);
        }
        txn.shared.set_state(TxnState::CommittingPending);
        let start = txn.shared.start_ts;
        match gtm.commit(start).await {
            Ok(ts) => {
                txn.shared.set_state(TxnState::Committing(ts));
                Ok(ts)
            }
            Err(e) => {
                txn.release_and_await_reads_durable().await;
                self.unregister_committing(rels, txn.shared.id);
                let _ = gtm.finish(start).await; // best effort
                Err(e)
            }
        }
    }

    fn unregister_committing(&self, rels: &[RelId], id: u64) {
        for &rel in rels {
            self.committing.unregister(rel, id);
        }
    }

    /// Empties relations that a transaction loaded rows into and does not commit, then
    /// removes their markers (a crash in between: the next open does it again).
    fn discard_loads(&self, rels: &[RelId]) -> PgResult<()> {
        for &rel in rels {
            self.store.delete_rel(rel, &|| false)?;
            self.store
                .meta_put(storage::Space::Sys, &loading_key(rel), None)?;
        }
        Ok(())
    }

    /// `discard_loads` for an aborting transaction, which cannot report the failure.
    fn discard_loads_or_log(&self, rels: &[RelId]) {
        if let Err(e) = self.discard_loads(rels) {
            tracing::error!("emptying relations loaded by an aborted transaction: {e} (the next start finishes it)");
        }
    }

    fn note_written(&self, keys: impl Iterator<Item = (RelId, Vec<u8>)>) {
        for (rel, key) in keys {
            let i = (rel as usize
                ^ key
                    .iter()
                    .fold(0usize, |h, &b| h.wrapping_mul(31).wrapping_add(b as usize)))
                % RECENT_SHARDS;
            let mut s = self.recent[i].lock();
            if s.len() >= self.recent_cap && !s.contains(&(rel, key.clone())) {
                drop(s);
                self.overflow_rels.lock().insert(rel);
                // Collect early: usually the horizon has moved and the list drains.
                if !self.gc_kick.swap(true, Ordering::Relaxed) {
                    if let Some(t) = self.gc_thread.lock().as_ref() {
                        t.unpark();
                    }
                }
                continue;
            }
            s.insert((rel, key));
        }
    }

    fn gc(&self, horizon: Timestamp) -> PgResult<u64> {
        let horizon = self.committing.clamp_horizon(horizon);
        self.last_horizon.fetch_max(horizon, Ordering::Relaxed);
        let _g = self.gc_lock.lock();
        let mut removed = self.store.gc_superseded(horizon)?;
        self.overflow_rels
            .lock()
            .extend(self.store.take_superseded_overflow());
        for shard in self.recent.iter() {
            let keys: Vec<(RelId, Vec<u8>)> =
                std::mem::take(&mut *shard.lock()).into_iter().collect();
            for chunk in keys.chunks(1024) {
                let (n, again) = self.store.gc_keys(chunk, horizon)?;
                removed += n;
                let mut s = shard.lock();
                for (k, a) in chunk.iter().zip(again) {
                    if a {
                        s.insert(k.clone());
                    }
                }
            }
        }
        let rels: Vec<RelId> = std::mem::take(&mut *self.overflow_rels.lock())
            .into_iter()
            .collect();
        for rel in rels {
            let recent = self
                .last_full_gc
                .lock()
                .get(&rel)
                .is_some_and(|t| t.elapsed() < FULL_GC_MIN_INTERVAL);
            if recent {
                self.overflow_rels.lock().insert(rel); // later
                continue;
            }
            removed += self.store.gc_rel(rel, horizon)?;
            self.last_full_gc
                .lock()
                .insert(rel, std::time::Instant::now());
        }
        Ok(removed)
    }
}

fn as_ref_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// BTreeMap::range panics on inverted or empty-exclusive ranges; check first.
fn range_nonempty(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a), Bound::Excluded(b)) | (Bound::Excluded(a), Bound::Included(b)) => {
            a < b
        }
        (Bound::Excluded(a), Bound::Excluded(b)) => a < b,
        _ => true,
    }
}

/// A scan's rows: `Datanode::scan` (with keys) and `Datanode::scan_rows`.
pub type ScanRows<'a, T> = Box<dyn Iterator<Item = PgResult<T>> + Send + 'a>;

/// The key of a merged row: a stored row's is decoded only if asked for.
enum ScanKey {
    Stored(storage::StoredKey),
    Own(Vec<u8>),
}

impl ScanKey {
    fn into_vec(self) -> Vec<u8> {
        match self {
            ScanKey::Stored(k) => k.user_key(),
            ScanKey::Own(k) => k,
        }
    }
}

/// Stored rows with the transaction's own writes merged over them, in key order.
struct MergeIter<'a> {
    stored: std::iter::Peekable<storage::ScanIter>,
    own: std::iter::Peekable<OwnIter<'a>>,
}

impl Iterator for MergeIter<'_> {
    type Item = PgResult<(ScanKey, RowBytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        let stored = |r: PgResult<(storage::StoredKey, RowBytes)>| {
            r.map(|(k, row)| (ScanKey::Stored(k), row))
        };
        loop {
            if self.own.peek().is_none() {
                // the common case: nothing of our own (left) here
                return self.stored.next().map(stored);
            }
            let take_own = match (self.stored.peek(), self.own.peek()) {
                (None, None) => return None,
                (Some(Err(_)), _) => return self.stored.next().map(stored),
                (_, Some(Err(_))) | (None, Some(_)) => true,
                (Some(_), None) => false,
                (Some(Ok((sk, _))), Some(Ok((ok, _)))) => match sk.cmp_user_key(ok) {
                    std::cmp::Ordering::Less => false,
                    std::cmp::Ordering::Equal => {
                        self.stored.next(); // shadowed by our own write
                        true
                    }
                    std::cmp::Ordering::Greater => true,
                },
            };
            if take_own {
                match self.own.next().expect("peeked") {
                    Ok((k, Some(row))) => return Some(Ok((ScanKey::Own(k), row))),
                    Ok((_, None)) => continue, // our own delete
                    Err(e) => return Some(Err(e)),
                }
            } else {
                return self.stored.next().map(stored);
            }
        }
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
