//! The row-lock table: exclusive row locks with FIFO hand-off, increment locks that
//! commute with each other, commit-state visibility for readers, and wait-for-graph
//! deadlock detection.
//!
//! Sharded by hash of (rel, key); every operation takes exactly one shard mutex, except
//! the deadlock detector, which holds the (otherwise uncontended) detector mutex and then
//! takes shard mutexes one at a time.

use crate::{RelId, Timestamp};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const SHARDS: usize = 64;

/// FxHash-style hasher: keys here are bounded by the work in flight, so a fast
/// non-cryptographic hash is fine (SipHash showed up in profiles).
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

const FX_K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(FX_K);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 59));
        }
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // final avalanche so that the low bits used for sharding are well mixed
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x
    }
}

pub(crate) type FxBuild = BuildHasherDefault<FxHasher>;
pub(crate) type FxHashMap<K, V> = HashMap<K, V, FxBuild>;
pub(crate) type FxHashSet<K> = HashSet<K, FxBuild>;

/// Commit state of a transaction, as seen by readers of the rows it locked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TxnState {
    Active,
    /// Asked the GTM for a commit timestamp; not yet known.
    CommittingPending,
    /// Prepared (decision 0029): its coordinator will send a commit timestamp, above its
    /// start, or abort it.
    Prepared,
    /// Prepared under a gid, with no commit under way: its commit timestamp, if it ever
    /// gets one, is taken only after it is `Prepared` again (`Datanode::commit_gid_pending`),
    /// so above the snapshot of any reader that sees it `Parked`, which need not wait.
    Parked,
    /// Has a commit timestamp; its writes are being applied / made durable.
    Committing(Timestamp),
    /// Committed or aborted; all locks released.
    Finished,
}

/// The part of a transaction that other transactions see (through the lock table).
pub(crate) struct TxnShared {
    pub id: u64,
    pub start_ts: Timestamp,
    state: Mutex<TxnState>,
    done: tokio::sync::Notify,
    /// What this transaction is blocked on, if anything (for the wait-for graph).
    waiting_for: Mutex<Option<WaitingFor>>,
    /// Rows it holds through spilled intents that others have put back into the lock
    /// table to queue behind it (`LockTable::reinstate_for_spiller`); None once it has
    /// released them at its end (`close_reinstated`).
    reinstated: Mutex<Option<Vec<Row>>>,
}

/// A row: (relation, key).
pub(crate) type Row = (RelId, Vec<u8>);

/// What a waiting transaction is blocked on: an edge source of the wait-for graph.
#[derive(Clone)]
pub(crate) enum WaitingFor {
    /// Queued on a row's lock: blocked by the row's owner and earlier waiters.
    Row(RelId, Vec<u8>),
    /// A relation another transaction owns (owned.rs): blocked by that owner until it ends.
    Relation(RelId, Arc<TxnShared>),
}

impl TxnShared {
    pub fn new(id: u64, start_ts: Timestamp) -> Self {
        TxnShared {
            id,
            start_ts,
            state: Mutex::new(TxnState::Active),
            done: tokio::sync::Notify::new(),
            waiting_for: Mutex::new(None),
            reinstated: Mutex::new(Some(Vec::new())),
        }
    }

    /// Takes the rows reinstated for it, which its caller releases; none are added later.
    pub fn close_reinstated(&self) -> Vec<Row> {
        self.reinstated.lock().take().unwrap_or_default()
    }

    /// Whether it still holds rows through intents (it has not ended).
    pub fn holds_intents(&self) -> bool {
        self.reinstated.lock().is_some()
    }

    pub fn set_state(&self, s: TxnState) {
        *self.state.lock() = s;
        if s == TxnState::Finished {
            self.done.notify_waiters();
        }
    }

    /// Sets `to` if the state is `from`; whether it was.
    pub fn replace_state(&self, from: TxnState, to: TxnState) -> bool {
        let mut state = self.state.lock();
        let was = *state == from;
        if was {
            *state = to;
        }
        was
    }

    pub fn state(&self) -> TxnState {
        *self.state.lock()
    }

    /// Whether a reader at `snapshot` must wait for this transaction to finish before it
    /// reads rows it locked: its commit timestamp is unknown or `<= snapshot` (for a
    /// prepared one, unknown but above its start).
    pub fn blocks_snapshot(&self, snapshot: Timestamp) -> bool {
        match *self.state.lock() {
            TxnState::CommittingPending => true,
            TxnState::Prepared => snapshot > self.start_ts,
            TxnState::Committing(ts) => ts <= snapshot,
            TxnState::Active | TxnState::Parked | TxnState::Finished => false,
        }
    }

    /// The start timestamp of the owner of the relation it waits for, if it waits for one
    /// that has not finished.
    pub fn relation_blocker(&self) -> Option<Timestamp> {
        match &*self.waiting_for.lock() {
            Some(WaitingFor::Relation(_, owner)) if owner.state() != TxnState::Finished => {
                Some(owner.start_ts)
            }
            _ => None,
        }
    }

    /// Resolves once the transaction is Finished.
    pub async fn wait_finished(&self) {
        loop {
            let notified = self.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.state() == TxnState::Finished {
                return;
            }
            notified.await;
        }
    }
}

/// How a transaction holds, or waits for, a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockMode {
    /// The row's single owner: reads its newest version and writes it.
    Exclusive,
    /// A pending increment of some columns, applied at commit by the storage writer:
    /// increments commute, so any number of transactions hold this at once; it excludes
    /// an Exclusive owner.
    Increment,
    /// An Increment holder that reads or rewrites the row before it commits: takes the
    /// owner slot once no other holder's increment is being merged (it computes the row
    /// from the newest version); the other Increment holders keep theirs but cannot
    /// start merging until it is done.
    Apply,
    /// An Increment holder at commit: its increment is about to be merged by the storage
    /// writer. Waits only for an Apply owner; holds until the merge is applied.
    Merge,
}

struct Waiter {
    id: u64,
    txn: Arc<TxnShared>,
    mode: LockMode,
    tx: Option<tokio::sync::oneshot::Sender<()>>,
}

/// A transaction on a lock entry, its id beside the pointer: holder lists are scanned by
/// id on every lock operation and on a hot row they are long (a hundred clients
/// incrementing one pgbench branch), so a scan must not touch each transaction's memory.
struct Holder {
    id: u64,
    txn: Arc<TxnShared>,
}

impl Holder {
    fn new(txn: Arc<TxnShared>) -> Self {
        Holder { id: txn.id, txn }
    }
}

struct LockEntry {
    /// The Exclusive or Apply holder, with its mode. None while only increment holders,
    /// waiters for them, or `committed` keep the entry alive.
    owner: Option<(Arc<TxnShared>, LockMode)>,
    /// Increment holders that have not started to commit.
    increments: Vec<Holder>,
    /// Increment holders whose merge is on its way to the storage writer (Merge mode):
    /// readers and owners wait for them until it is applied.
    merging: Vec<Holder>,
    queue: VecDeque<Waiter>,
    /// Earlier owners and increment holders that passed the lock on once their writes were
    /// applied, before those were durable (`release_applied`): readers still wait for
    /// them as for an owner, until `finish`. The flag: it only merged an increment (it
    /// changed no row's existence).
    committed: Vec<(Holder, bool)>,
    /// Whether an Increment lock was ever granted on this entry (the row is hot).
    incremented: bool,
}

impl LockEntry {
    fn owned_by(&self, id: u64) -> bool {
        self.owner.as_ref().is_some_and(|(o, _)| o.id == id)
    }

    fn is_unused(&self) -> bool {
        self.owner.is_none()
            && self.committed.is_empty()
            && self.increments.is_empty()
            && self.merging.is_empty()
            && self.queue.is_empty()
    }

    /// Whether `id` holds the row in `mode` (the owner slot covers an increment).
    fn holds(&self, id: u64, mode: LockMode) -> bool {
        match mode {
            LockMode::Merge => self.merging.iter().any(|t| t.id == id),
            LockMode::Increment => self.owned_by(id) || self.increments.iter().any(|t| t.id == id),
            LockMode::Exclusive | LockMode::Apply => self.owned_by(id),
        }
    }

    /// Whether `id` has anything on the row that `release_applied` passes on.
    fn has_any(&self, id: u64) -> bool {
        self.holds(id, LockMode::Increment) || self.holds(id, LockMode::Merge)
    }

    /// Whether a request by `id` in `mode` is compatible with the current holders.
    fn compatible(&self, id: u64, mode: LockMode) -> bool {
        match mode {
            LockMode::Exclusive => {
                self.owner.is_none()
                    && self.merging.is_empty()
                    && self.increments.iter().all(|t| t.id == id)
            }
            LockMode::Increment => matches!(self.owner, None | Some((_, LockMode::Apply))),
            LockMode::Apply => self.owner.is_none() && self.merging.is_empty(),
            LockMode::Merge => self.owner.is_none(),
        }
    }

    /// Whether a new request in `mode` may go ahead of the queued waiters: a Merge always
    /// (a committer waits for no one queued), Apply for all but other Apply waiters, an
    /// Increment for Apply and Merge waiters only (FIFO otherwise, so that increments
    /// cannot starve an Exclusive waiter), an Exclusive request for no one.
    fn may_pass_queue(&self, mode: LockMode) -> bool {
        let queued = |m: LockMode| self.queue.iter().any(|w| w.mode == m);
        match mode {
            LockMode::Merge => true,
            LockMode::Apply => !queued(LockMode::Apply),
            LockMode::Increment => !queued(LockMode::Exclusive) && !queued(LockMode::Increment),
            LockMode::Exclusive => self.queue.is_empty(),
        }
    }

    fn grant(&mut self, txn: Arc<TxnShared>, mode: LockMode) {
        match mode {
            LockMode::Increment => {
                self.incremented = true;
                self.increments.push(Holder::new(txn));
            }
            LockMode::Merge => {
                self.increments.retain(|t| t.id != txn.id);
                self.merging.push(Holder::new(txn));
            }
            LockMode::Exclusive | LockMode::Apply => self.owner = Some((txn, mode)),
        }
    }

    /// The index of the next waiter that can be granted, if any: Merge waiters first (a
    /// committer), then Apply waiters (they wait only for the owner slot and merges), else
    /// the head of the queue.
    fn next_grantable(&self) -> Option<usize> {
        for mode in [LockMode::Merge, LockMode::Apply] {
            if let Some(i) = self.queue.iter().position(|w| w.mode == mode) {
                if self.compatible(self.queue[i].txn.id, mode) {
                    return Some(i);
                }
            }
        }
        let head = self.queue.front()?;
        self.compatible(head.txn.id, head.mode).then_some(0)
    }

    /// The transactions the waiter at `pos` waits for: the holders its mode conflicts
    /// with and the waiters ahead of it that it may not pass.
    fn blockers_of(&self, pos: usize) -> Vec<Arc<TxnShared>> {
        let w = &self.queue[pos];
        let others = |v: &Vec<Holder>| {
            v.iter()
                .filter(|h| h.id != w.txn.id)
                .map(|h| h.txn.clone())
                .collect::<Vec<_>>()
        };
        let mut out = Vec::new();
        if let Some((o, mode)) = self.owner.as_ref().filter(|(o, _)| o.id != w.txn.id) {
            if !(w.mode == LockMode::Increment && *mode == LockMode::Apply) {
                out.push(o.clone());
            }
        }
        if matches!(w.mode, LockMode::Exclusive | LockMode::Apply) {
            out.extend(others(&self.merging));
        }
        if w.mode == LockMode::Exclusive {
            out.extend(others(&self.increments));
        }
        let ahead = self.queue.iter().take(pos);
        out.extend(
            ahead
                .filter(|a| match w.mode {
                    LockMode::Merge => false,
                    LockMode::Apply => a.mode == LockMode::Apply,
                    LockMode::Increment => {
                        matches!(a.mode, LockMode::Exclusive | LockMode::Increment)
                    }
                    LockMode::Exclusive => true,
                })
                .map(|a| a.txn.clone()),
        );
        out
    }
}

/// Rows per shard remembered as hot once their lock entry is gone (`Shard::hot`).
const HOT_ROWS_PER_SHARD: usize = 16;

#[derive(Default)]
struct Shard {
    map: FxHashMap<RelId, FxHashMap<Vec<u8>, LockEntry>>,
    /// Rows that had Increment holders, most recent last: `try_lock_idle` does not take
    /// them exclusively when they happen to be idle, since one exclusive holder would make
    /// every other incrementer wait for its whole transaction.
    hot: VecDeque<(RelId, Vec<u8>)>,
}

impl Shard {
    fn entry_mut(&mut self, rel: RelId, key: &[u8]) -> Option<&mut LockEntry> {
        self.map.get_mut(&rel).and_then(|m| m.get_mut(key))
    }

    /// Takes the lock in `mode` for `txn` if nobody it must wait for holds or awaits it;
    /// whether `txn` holds it now.
    fn lock_if_free(
        &mut self,
        rel: RelId,
        key: &[u8],
        txn: &Arc<TxnShared>,
        mode: LockMode,
    ) -> bool {
        match self.entry_mut(rel, key) {
            Some(e) if e.holds(txn.id, mode) => true,
            Some(e) if e.compatible(txn.id, mode) && e.may_pass_queue(mode) => {
                e.grant(txn.clone(), mode);
                true
            }
            Some(_) => false,
            None => {
                let mut entry = LockEntry {
                    owner: None,
                    increments: Vec::new(),
                    merging: Vec::new(),
                    queue: VecDeque::new(),
                    committed: Vec::new(),
                    incremented: false,
                };
                entry.grant(txn.clone(), mode);
                self.map.entry(rel).or_default().insert(key.to_vec(), entry);
                true
            }
        }
    }

    fn remove_entry(&mut self, rel: RelId, key: &[u8]) {
        if let Some(m) = self.map.get_mut(&rel) {
            m.remove(key);
            if m.is_empty() {
                self.map.remove(&rel);
            }
        }
    }

    /// `id` gives up what it holds of the row (the owner slot if `owner_slot`, its
    /// increment, merging or not, if `increment`); the waiters that can go on are granted, and an entry
    /// nobody uses any more is removed.
    fn give_up(&mut self, rel: RelId, key: &[u8], id: u64, owner_slot: bool, increment: bool) {
        let Some(e) = self.entry_mut(rel, key) else {
            return;
        };
        if owner_slot && e.owned_by(id) {
            e.owner = None;
        }
        if increment {
            e.increments.retain(|t| t.id != id);
            e.merging.retain(|t| t.id != id);
        }
        while let Some(i) = e.next_grantable() {
            let mut w = e.queue.remove(i).expect("index from next_grantable");
            *w.txn.waiting_for.lock() = None;
            e.grant(w.txn.clone(), w.mode);
            if let Some(tx) = w.tx.take() {
                // If the waiter's future is gone, its WaitGuard finds the grant and gives
                // it up.
                let _ = tx.send(());
            }
        }
        if e.is_unused() {
            if e.incremented && !self.is_hot(rel, key) {
                if self.hot.len() == HOT_ROWS_PER_SHARD {
                    self.hot.pop_front();
                }
                self.hot.push_back((rel, key.to_vec()));
            }
            self.remove_entry(rel, key);
        }
    }

    fn is_hot(&self, rel: RelId, key: &[u8]) -> bool {
        self.hot.iter().any(|(r, k)| *r == rel && k == key)
    }
}

pub(crate) enum TryLock {
    Acquired,
    /// Held by another transaction; we are queued with this waiter id.
    Queued(u64, tokio::sync::oneshot::Receiver<()>),
}

pub(crate) enum Dequeue {
    /// The waiter was still queued and is now removed.
    Removed,
    /// The lock had already been handed to the waiter: it owns it now.
    Granted,
}

pub(crate) struct LockTable {
    shards: Box<[Mutex<Shard>]>,
    next_waiter: AtomicU64,
    detector: Mutex<()>,
}

pub(crate) enum DeadlockCheck {
    NoCycle,
    /// A cycle through the waiter was found and the waiter was removed from its queue.
    Victim(String),
    /// The lock was granted before the check could dequeue us.
    Granted,
}

fn shard_index(rel: RelId, key: &[u8]) -> usize {
    let mut h = FxHasher::default();
    rel.hash(&mut h);
    key.hash(&mut h);
    (h.finish() as usize) % SHARDS
}

impl LockTable {
    pub fn new() -> Self {
        LockTable {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            next_waiter: AtomicU64::new(1),
            detector: Mutex::new(()),
        }
    }

    fn shard(&self, rel: RelId, key: &[u8]) -> &Mutex<Shard> {
        &self.shards[shard_index(rel, key)]
    }

    /// Takes the lock in `mode` if nobody it must wait for holds or awaits it, or queues
    /// `txn`. Precondition: `txn` does not hold the lock in `mode`.
    pub fn lock_or_enqueue(
        &self,
        txn: &Arc<TxnShared>,
        rel: RelId,
        key: &[u8],
        mode: LockMode,
    ) -> TryLock {
        let mut shard = self.shard(rel, key).lock();
        if shard.lock_if_free(rel, key, txn, mode) {
            return TryLock::Acquired;
        }
        let e = shard
            .entry_mut(rel, key)
            .expect("a lock that is not free has an entry");
        let id = self.next_waiter.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = tokio::sync::oneshot::channel();
        *txn.waiting_for.lock() = Some(WaitingFor::Row(rel, key.to_vec()));
        e.queue.push_back(Waiter {
            id,
            txn: txn.clone(),
            mode,
            tx: Some(tx),
        });
        TryLock::Queued(id, rx)
    }

    /// Takes the lock in `mode` only if that needs no wait (or it is already held).
    pub fn try_lock(&self, txn: &Arc<TxnShared>, rel: RelId, key: &[u8], mode: LockMode) -> bool {
        self.shard(rel, key)
            .lock()
            .lock_if_free(rel, key, txn, mode)
    }

    /// Takes the exclusive lock only if nobody has any business with the row (no holder,
    /// no waiter, no applied commit awaiting durability) and it has not recently had
    /// increment holders. Never waits.
    pub fn try_lock_idle(&self, txn: &Arc<TxnShared>, rel: RelId, key: &[u8]) -> bool {
        let mut shard = self.shard(rel, key).lock();
        shard.entry_mut(rel, key).is_none()
            && !shard.is_hot(rel, key)
            && shard.lock_if_free(rel, key, txn, LockMode::Exclusive)
    }

    /// Removes a queued waiter (cancelled wait), or tells that it was already granted.
    pub fn dequeue(
        &self,
        rel: RelId,
        key: &[u8],
        waiter: u64,
        txn: &TxnShared,
        mode: LockMode,
    ) -> Dequeue {
        let mut shard = self.shard(rel, key).lock();
        Self::dequeue_locked(&mut shard, rel, key, waiter, txn, mode)
    }

    fn dequeue_locked(
        shard: &mut Shard,
        rel: RelId,
        key: &[u8],
        waiter: u64,
        txn: &TxnShared,
        mode: LockMode,
    ) -> Dequeue {
        if let Some(e) = shard.entry_mut(rel, key) {
            if let Some(pos) = e.queue.iter().position(|w| w.id == waiter) {
                e.queue.remove(pos);
                *txn.waiting_for.lock() = None;
                // Waiters behind it may have waited only for it.
                shard.give_up(rel, key, txn.id, false, false);
                return Dequeue::Removed;
            }
            if e.holds(txn.id, mode) {
                return Dequeue::Granted;
            }
        }
        // Neither queued nor holder: cannot happen (a queued waiter leaves only through
        // dequeue or a grant). Treat as removed.
        Dequeue::Removed
    }

    /// `id` gives up everything it holds on the row (abort) and the waiters that can go
    /// on are granted.
    pub fn release(&self, rel: RelId, key: &[u8], id: u64) {
        self.shard(rel, key)
            .lock()
            .give_up(rel, key, id, true, true);
    }

    /// `id` gives up the owner slot only (its rows' intents hold them now, `spilled.rs`);
    /// an increment it holds on the row stays.
    pub fn release_owner(&self, rel: RelId, key: &[u8], id: u64) {
        self.shard(rel, key)
            .lock()
            .give_up(rel, key, id, true, false);
    }

    /// `me` was granted the row in `mode`, but the spilled transaction `spiller` holds it
    /// through an intent (which has no entry here): gives the grant up, makes `spiller` the
    /// row's owner (unless someone else owns it) and queues `me` first, so that the wait
    /// is FIFO, in the wait-for graph and ended by `spiller`'s end, which releases the
    /// rows reinstated for it. None if `spiller` has ended (no wait).
    pub fn reinstate_for_spiller(
        &self,
        spiller: &Arc<TxnShared>,
        me: &Arc<TxnShared>,
        rel: RelId,
        key: &[u8],
        mode: LockMode,
    ) -> Option<(u64, tokio::sync::oneshot::Receiver<()>)> {
        let mut reinstated = spiller.reinstated.lock();
        let rows = reinstated.as_mut()?;
        let mut shard = self.shard(rel, key).lock();
        let e = shard
            .entry_mut(rel, key)
            .expect("a granted lock has an entry");
        match mode {
            LockMode::Increment => e.increments.retain(|t| t.id != me.id),
            _ => {
                if e.owned_by(me.id) {
                    e.owner = None;
                }
            }
        }
        if e.owner.is_none() {
            e.owner = Some((spiller.clone(), LockMode::Exclusive));
            rows.push((rel, key.to_vec()));
        }
        let id = self.next_waiter.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = tokio::sync::oneshot::channel();
        *me.waiting_for.lock() = Some(WaitingFor::Row(rel, key.to_vec()));
        e.queue.push_front(Waiter {
            id,
            txn: me.clone(),
            mode,
            tx: Some(tx),
        });
        Some((id, rx))
    }

    /// Early lock release: `holder`'s write or increment is applied (the next owner reads
    /// it) but not yet durable. Hands the lock on and keeps `holder` on the row for
    /// readers, whose snapshot may include it, until `finish`. Its commit timestamp is
    /// known, so it waits for nothing and is no part of any wait-for cycle.
    pub fn release_applied(&self, rel: RelId, key: &[u8], holder: &Arc<TxnShared>) {
        let mut shard = self.shard(rel, key).lock();
        if let Some(e) = shard.entry_mut(rel, key).filter(|e| e.has_any(holder.id)) {
            let merged = e.holds(holder.id, LockMode::Merge);
            e.committed.push((Holder::new(holder.clone()), merged));
            shard.give_up(rel, key, holder.id, true, true);
        }
    }

    /// The earlier owners of a row whose writes are applied but not yet durable.
    pub fn applied_not_durable(&self, rel: RelId, key: &[u8]) -> Vec<Arc<TxnShared>> {
        let shard = self.shard(rel, key).lock();
        match shard.map.get(&rel).and_then(|m| m.get(key)) {
            Some(e) => e
                .committed
                .iter()
                .map(|(h, _)| &h.txn)
                .filter(|t| t.state() != TxnState::Finished)
                .cloned()
                .collect(),
            None => Vec::new(),
        }
    }

    /// `id` has finished committing: gives up what it still holds (its batch failed
    /// before `release_applied`), and readers no longer wait for it here.
    pub fn finish(&self, rel: RelId, key: &[u8], id: u64) {
        let mut shard = self.shard(rel, key).lock();
        if let Some(e) = shard.entry_mut(rel, key) {
            e.committed.retain(|(t, _)| t.id != id);
        }
        shard.give_up(rel, key, id, true, true);
    }

    /// The holder of the row's lock (owner or increment holder) if a reader at `snapshot`
    /// must wait for it (it is committing with a timestamp that is unknown or
    /// `<= snapshot`), excluding `me`. With `presence_only`, only one that may have
    /// inserted or deleted the row: a merged increment changes no row's existence.
    pub fn blocking_owner(
        &self,
        rel: RelId,
        key: &[u8],
        snapshot: Timestamp,
        me: u64,
        presence_only: bool,
    ) -> Option<Arc<TxnShared>> {
        let shard = self.shard(rel, key).lock();
        let e = shard.map.get(&rel)?.get(key)?;
        let merging = e.merging.iter().filter(|_| !presence_only).map(|h| &h.txn);
        let committed = e
            .committed
            .iter()
            .filter(|(_, merged)| !(presence_only && *merged))
            .map(|(h, _)| &h.txn);
        e.owner
            .iter()
            .map(|(o, _)| o)
            .chain(merging)
            .chain(committed)
            .find(|t| t.id != me && t.blocks_snapshot(snapshot))
            .cloned()
    }

    /// Deadlock check for `me`, queued as `waiter` on (rel, key): searches the wait-for
    /// graph for a cycle back to `me` (`find_cycle`). Checks are serialised by the
    /// detector mutex, and a victim leaves its queue before the mutex is released, so each
    /// cycle yields exactly one victim.
    pub fn check_deadlock(
        &self,
        me: &Arc<TxnShared>,
        rel: RelId,
        key: &[u8],
        waiter: u64,
        mode: LockMode,
    ) -> DeadlockCheck {
        let _d = self.detector.lock();
        let Some(detail) = self.find_cycle(me) else {
            return DeadlockCheck::NoCycle;
        };
        let mut shard = self.shard(rel, key).lock();
        match Self::dequeue_locked(&mut shard, rel, key, waiter, me, mode) {
            Dequeue::Removed => DeadlockCheck::Victim(detail),
            Dequeue::Granted => DeadlockCheck::Granted,
        }
    }

    /// Deadlock check for `me`, waiting for a relation another transaction owns: on a
    /// cycle, `me` leaves the graph (under the detector mutex, so the cycle's other
    /// members find no cycle) and the detail describing it is returned.
    pub fn check_relation_deadlock(&self, me: &Arc<TxnShared>) -> Option<String> {
        let _d = self.detector.lock();
        let detail = self.find_cycle(me)?;
        *me.waiting_for.lock() = None;
        Some(detail)
    }

    /// Depth-first search of the wait-for graph from `me` (edges: the owner and earlier
    /// waiters of the row a transaction is queued on, the owner of the relation it waits
    /// for); the cycle back to `me` as the error detail, if there is one. Call with the
    /// detector mutex held.
    fn find_cycle(&self, me: &Arc<TxnShared>) -> Option<String> {
        let mut parent: HashMap<u64, u64> = HashMap::new();
        let mut waits: HashMap<u64, String> = HashMap::new();
        let mut visited: HashSet<u64> = HashSet::new();
        let mut stack: Vec<Arc<TxnShared>> = vec![me.clone()];
        visited.insert(me.id);
        let mut found: Option<u64> = None; // the txn whose edge closes the cycle
        'dfs: while let Some(t) = stack.pop() {
            let wf = t.waiting_for.lock().clone();
            let blockers: Vec<Arc<TxnShared>> = match wf {
                None => continue,
                Some(WaitingFor::Row(r, k)) => {
                    let shard = self.shard(r, &k).lock();
                    let Some(e) = shard.map.get(&r).and_then(|m| m.get(k.as_slice())) else {
                        continue;
                    };
                    match e.queue.iter().position(|w| w.txn.id == t.id) {
                        Some(pos) => {
                            waits.insert(t.id, "ExclusiveLock on a row".into());
                            e.blockers_of(pos)
                        }
                        None => continue, // granted meanwhile
                    }
                }
                Some(WaitingFor::Relation(r, owner)) => {
                    if owner.state() == TxnState::Finished {
                        continue;
                    }
                    waits.insert(t.id, format!("AccessShareLock on relation {r}"));
                    vec![owner]
                }
            };
            for b in blockers {
                if b.id == me.id {
                    found = Some(t.id);
                    break 'dfs;
                }
                if visited.insert(b.id) {
                    parent.insert(b.id, t.id);
                    stack.push(b);
                }
            }
        }
        let last = found?;
        // Reconstruct the cycle me -> ... -> last -> me for the error detail.
        let mut chain = vec![last];
        let mut cur = last;
        while cur != me.id {
            match parent.get(&cur) {
                Some(p) => {
                    cur = *p;
                    chain.push(cur);
                }
                None => break,
            }
        }
        chain.reverse(); // me, ..., last
        let mut detail = String::new();
        for (i, t) in chain.iter().enumerate() {
            let next = chain.get(i + 1).copied().unwrap_or(me.id);
            if !detail.is_empty() {
                detail.push('\n');
            }
            let what = waits.get(t).map(String::as_str).unwrap_or("a lock");
            detail.push_str(&format!(
                "Transaction {t} waits for {what}; blocked by transaction {next}."
            ));
        }
        Some(detail)
    }

    /// Marks `me` as waiting for `rel`, owned by `owner`, until the returned guard drops.
    pub fn wait_for_relation(
        me: &Arc<TxnShared>,
        rel: RelId,
        owner: &Arc<TxnShared>,
    ) -> RelationWait {
        *me.waiting_for.lock() = Some(WaitingFor::Relation(rel, owner.clone()));
        RelationWait(me.clone())
    }

    /// Every wait-for edge (waiter start ts, blocker start ts), as `blockers_of` defines
    /// them. Takes each shard mutex in turn; O(lock entries).
    pub fn edges(&self) -> Vec<(Timestamp, Timestamp)> {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            let shard = shard.lock();
            for m in shard.map.values() {
                for e in m.values() {
                    for (i, w) in e.queue.iter().enumerate() {
                        out.extend(
                            e.blockers_of(i)
                                .iter()
                                .map(|b| (w.txn.start_ts, b.start_ts)),
                        );
                    }
                }
            }
        }
        out
    }

    /// Number of lock entries (for tests).
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().map.values().map(|m| m.len()).sum::<usize>())
            .sum()
    }

    /// Number of queued waiters on a row (for tests).
    pub fn queue_len(&self, rel: RelId, key: &[u8]) -> usize {
        let shard = self.shard(rel, key).lock();
        shard
            .map
            .get(&rel)
            .and_then(|m| m.get(key))
            .map(|e| e.queue.len())
            .unwrap_or(0)
    }
}

/// A wait for an owned relation (`LockTable::wait_for_relation`): the waiter leaves the
/// wait-for graph when it drops.
pub(crate) struct RelationWait(Arc<TxnShared>);

impl Drop for RelationWait {
    fn drop(&mut self) {
        *self.0.waiting_for.lock() = None;
    }
}

/// Removes a lock waiter whose future was dropped; if the lock had already been handed
/// to it, passes the lock on.
pub(crate) struct WaitGuard<'a> {
    pub table: &'a LockTable,
    pub txn: Arc<TxnShared>,
    pub rel: RelId,
    pub key: &'a [u8],
    pub waiter: u64,
    pub mode: LockMode,
    pub armed: bool,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut shard = self.table.shard(self.rel, self.key).lock();
        if let Dequeue::Granted = LockTable::dequeue_locked(
            &mut shard,
            self.rel,
            self.key,
            self.waiter,
            &self.txn,
            self.mode,
        ) {
            *self.txn.waiting_for.lock() = None;
            // Give up just this grant: an Exclusive or Apply waiter keeps the increment it
            // held before (a Merge grant is the increment itself).
            let increment = matches!(self.mode, LockMode::Increment | LockMode::Merge);
            shard.give_up(self.rel, self.key, self.txn.id, !increment, increment);
        }
    }
}
