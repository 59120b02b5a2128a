//! A transaction's local state: write set, undo log and savepoints, deferred increments,
//! row locks held, and their release when it ends.

use crate::locks::{FxHashMap, FxHashSet, TxnShared, TxnState};
use crate::serializable::ReadSet;
use crate::spilled::{self, Intent, Spilled};
use crate::{Datanode, Inner, Isolation, RelId, RowBytes, Timestamp};
use pgerror::PgResult;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Savepoint {
    pub(crate) undo: usize,
    pub(crate) increments: usize,
}

/// Computes a row's new version from its newest committed one: a deferred increment.
pub(crate) type IncrementFn = Box<dyn Fn(&RowBytes) -> PgResult<RowBytes> + Send + Sync>;

type WriteSet = BTreeMap<RelId, BTreeMap<Vec<u8>, Option<RowBytes>>>;

/// Deferred increments grouped by row, in key order (statement order within a row).
pub(crate) type Increments = BTreeMap<(RelId, Vec<u8>), Vec<IncrementFn>>;

/// A transaction on one datanode. Dropping it without `commit`/`abort` releases its locks
/// (but cannot tell the GTM: always call `abort`). `begin` hands it out boxed: it is moved
/// by value into `commit`/`abort` and down their callees, and every async level on the way
/// would otherwise hold a copy of its ~300 bytes in the session's future.
pub struct Txn {
    pub(crate) shared: Arc<TxnShared>,
    pub(crate) isolation: Isolation,
    pub(crate) writes: WriteSet,
    pub(crate) n_writes: usize,
    /// (rel, key, previous write-set value) for every `put`, in order.
    pub(crate) undo: Vec<(RelId, Vec<u8>, Option<Option<RowBytes>>)>,
    /// Row locks held, each with the key's newest committed version as read under it
    /// (`Some(None)`: no version; None: not read). Nobody else commits the key while the
    /// lock is held, so the storage writer need not read it again (`storage::Write`).
    pub(crate) locks: FxHashMap<RelId, FxHashMap<Vec<u8>, Option<Option<Timestamp>>>>,
    /// Rows this transaction holds an increment lock on.
    pub(crate) increment_locks: FxHashSet<(RelId, Vec<u8>)>,
    /// Deferred increments, in statement order (`increment`).
    pub(crate) increments: Vec<(RelId, Vec<u8>, IncrementFn)>,
    /// Relations this transaction owns (`Datanode::own_relation`).
    pub(crate) owned: Vec<RelId>,
    /// Owned relations it bulk-loaded rows into, until its commit makes them permanent.
    pub(crate) loaded: Vec<RelId>,
    /// Estimated memory of `writes`, `undo` and `locks` (spilled past `txn_memory`).
    pub(crate) memory: usize,
    /// What it moved to storage, once it outgrew `txn_memory`.
    pub(crate) spilled: Option<Spilled>,
    /// Whether a savepoint was ever taken: until then a spill need not keep its undo log
    /// (nothing can roll back to a position inside it).
    pub(crate) savepoint_taken: AtomicBool,
    pub(crate) inner: Arc<Inner>,
    /// Whether the GTM registration of the start timestamp is this datanode's to end
    /// (`gtm.finish`). It is not when a coordinator in another process registered it
    /// through its own GTM connection and ends it itself (`registered_by_caller`).
    pub(crate) finishes_at_gtm: bool,
    /// Whether its prepare left a durable record (`in_doubt.rs`), which its commit or
    /// abort removes.
    pub(crate) prepared_record: bool,
    /// What it read, when SERIALIZABLE (validated at commit, `serializable.rs`).
    pub(crate) reads: Option<Box<parking_lot::Mutex<ReadSet>>>,
    finished: bool,
}

impl Txn {
    /// The caller registered the start timestamp with the GTM and ends that registration
    /// itself: commit and abort do not `finish` it at the GTM (a round trip that, from
    /// another connection, would unregister nothing).
    pub fn registered_by_caller(&mut self) {
        self.finishes_at_gtm = false;
    }

    pub fn start_ts(&self) -> Timestamp {
        self.shared.start_ts
    }
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }
    pub fn set_isolation(&mut self, iso: Isolation) {
        self.isolation = iso;
        self.reads = read_set_for(iso);
    }
    /// Records a read of one key (SERIALIZABLE only).
    pub(crate) fn note_point_read(&self, rel: RelId, key: &[u8]) {
        if let Some(reads) = &self.reads {
            reads.lock().point(rel, key);
        }
    }
    /// Records a scan of `[lo, hi)` (SERIALIZABLE only).
    pub(crate) fn note_range_read(
        &self,
        rel: RelId,
        lo: &std::ops::Bound<Vec<u8>>,
        hi: &std::ops::Bound<Vec<u8>>,
    ) {
        if let Some(reads) = &self.reads {
            reads.lock().range(rel, lo, hi);
        }
    }
    pub fn has_writes(&self) -> bool {
        self.n_writes > 0 || self.spilled.is_some()
    }
    /// Whether it wrote, incremented, owned or bulk-loaded anything: what makes it a
    /// participant of a commit across datanodes that must be prepared.
    pub fn changes_anything(&self) -> bool {
        !self.applies_nothing() || !self.owned.is_empty()
    }
    /// Whether its commit has nothing to apply (it ends as an abort does).
    pub(crate) fn applies_nothing(&self) -> bool {
        !self.has_writes() && self.increments.is_empty() && self.loaded.is_empty()
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
    pub(crate) fn has_increment_on(&self, rel: RelId, key: &[u8]) -> bool {
        self.increments
            .iter()
            .any(|(r, k, _)| *r == rel && k == key)
    }
    /// Moves the deferred increments out, grouped by row in key order (statement order
    /// within a row).
    pub(crate) fn take_increments_by_row(&mut self) -> Increments {
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
    pub(crate) fn own_write(&self, rel: RelId, key: &[u8]) -> PgResult<Option<Option<RowBytes>>> {
        if let Some(w) = self.writes.get(&rel).and_then(|m| m.get(key)) {
            return Ok(Some(w.clone()));
        }
        Ok(match self.intent(rel, key)? {
            Some(Intent::Write(w)) => Some(w),
            Some(Intent::Locked) | None => None,
        })
    }

    pub(crate) fn holds_lock(&self, rel: RelId, key: &[u8]) -> PgResult<bool> {
        Ok(self.locks.get(&rel).is_some_and(|s| s.contains_key(key))
            || self.intent(rel, key)?.is_some())
    }

    pub(crate) fn record_lock(&mut self, rel: RelId, key: &[u8]) -> PgResult<()> {
        let keys = self.locks.entry(rel).or_default();
        if !keys.contains_key(key) {
            keys.insert(key.to_vec(), None);
            self.grew(2 * key.len() + spilled::LOCK_OVERHEAD)?;
        }
        Ok(())
    }

    /// Notes memory taken by the write set, undo log or locks; past `txn_memory` they go
    /// to storage.
    pub(crate) fn grew(&mut self, bytes: usize) -> PgResult<()> {
        self.memory += bytes;
        if self.memory as u64 > self.inner.opts.txn_memory {
            let inner = self.inner.clone();
            inner.spill(self)?;
        }
        Ok(())
    }

    /// Reads the newest committed version of a key locked (or increment-locked) by this
    /// transaction and notes it.
    pub(crate) fn read_newest_locked(
        &mut self,
        rel: RelId,
        key: &[u8],
    ) -> PgResult<Option<storage::Version>> {
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
    pub(crate) async fn release_and_await_reads_durable(&mut self) {
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
    pub(crate) fn note_newest(
        &mut self,
        rel: RelId,
        key: &[u8],
        newest: Option<&storage::Version>,
    ) {
        if let Some(seen) = self.locks.get_mut(&rel).and_then(|keys| keys.get_mut(key)) {
            *seen = Some(newest.map(|v| v.commit_ts));
        }
    }

    pub(crate) fn newest_read_under_lock(
        &self,
        rel: RelId,
        key: &[u8],
    ) -> Option<Option<Timestamp>> {
        self.locks
            .get(&rel)
            .and_then(|keys| keys.get(key))
            .copied()
            .flatten()
    }

    /// Moves the held locks out (commit releases them itself).
    pub(crate) fn take_locks(&mut self) -> Vec<(RelId, Vec<u8>)> {
        std::mem::take(&mut self.locks)
            .into_iter()
            .flat_map(|(rel, keys)| keys.into_keys().map(move |k| (rel, k)))
            .collect()
    }

    /// Releases every lock and owned relation (emptying those it loaded rows into, unless
    /// its commit made them permanent) and marks the transaction finished (wakes waiting
    /// readers).
    pub(crate) fn release_all(&mut self) {
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
        if self.reads.is_some() {
            self.inner.protections.release(self.shared.id);
        }
        self.shared.set_state(TxnState::Finished);
    }
}

/// A SERIALIZABLE transaction's empty read set.
pub(crate) fn read_set_for(iso: Isolation) -> Option<Box<parking_lot::Mutex<ReadSet>>> {
    (iso == Isolation::Serializable).then(Default::default)
}

impl Drop for Txn {
    fn drop(&mut self) {
        self.release_all();
    }
}

impl Datanode {
    pub fn begin(&self, start_ts: Timestamp, isolation: Isolation) -> Box<Txn> {
        self.inner.begin_txn(start_ts, isolation)
    }
}

impl Inner {
    pub(crate) fn begin_txn(
        self: &Arc<Self>,
        start_ts: Timestamp,
        isolation: Isolation,
    ) -> Box<Txn> {
        let id = self.next_txn.fetch_add(1, Ordering::Relaxed);
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
            inner: self.clone(),
            finishes_at_gtm: true,
            prepared_record: false,
            reads: read_set_for(isolation),
            finished: false,
        })
    }
}
