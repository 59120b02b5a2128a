//! The row-lock table: exclusive row locks with FIFO hand-off, commit-state visibility for
//! readers, and wait-for-graph deadlock detection.
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
    /// The row this transaction is queued for, if any (for the wait-for graph).
    waiting_for: Mutex<Option<(RelId, Vec<u8>)>>,
}

impl TxnShared {
    pub fn new(id: u64, start_ts: Timestamp) -> Self {
        TxnShared {
            id,
            start_ts,
            state: Mutex::new(TxnState::Active),
            done: tokio::sync::Notify::new(),
            waiting_for: Mutex::new(None),
        }
    }

    pub fn set_state(&self, s: TxnState) {
        *self.state.lock() = s;
        if s == TxnState::Finished {
            self.done.notify_waiters();
        }
    }

    pub fn state(&self) -> TxnState {
        *self.state.lock()
    }

    /// Whether a reader at `snapshot` must wait for this transaction to finish before it
    /// reads rows it locked: its commit timestamp is unknown or `<= snapshot`.
    pub fn blocks_snapshot(&self, snapshot: Timestamp) -> bool {
        match *self.state.lock() {
            TxnState::CommittingPending => true,
            TxnState::Committing(ts) => ts <= snapshot,
            TxnState::Active | TxnState::Finished => false,
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

struct Waiter {
    id: u64,
    txn: Arc<TxnShared>,
    tx: Option<tokio::sync::oneshot::Sender<()>>,
}

struct LockEntry {
    /// None only while `committed` keeps the entry alive.
    owner: Option<Arc<TxnShared>>,
    queue: VecDeque<Waiter>,
    /// Earlier owners that passed the lock on once their writes were applied, before
    /// those were durable (`release_applied`): readers still wait for them as for an
    /// owner, until `finish`.
    committed: Vec<Arc<TxnShared>>,
}

impl LockEntry {
    fn owned_by(&self, id: u64) -> bool {
        self.owner.as_ref().is_some_and(|o| o.id == id)
    }

    fn is_unused(&self) -> bool {
        self.owner.is_none() && self.committed.is_empty()
    }
}

#[derive(Default)]
struct Shard {
    map: FxHashMap<RelId, FxHashMap<Vec<u8>, LockEntry>>,
}

impl Shard {
    fn entry_mut(&mut self, rel: RelId, key: &[u8]) -> Option<&mut LockEntry> {
        self.map.get_mut(&rel).and_then(|m| m.get_mut(key))
    }

    /// Takes the lock for `txn` if it is free; whether `txn` owns it now.
    fn lock_if_free(&mut self, rel: RelId, key: &[u8], txn: &Arc<TxnShared>) -> bool {
        match self.entry_mut(rel, key) {
            Some(e) if e.owner.is_none() => {
                e.owner = Some(txn.clone());
                true
            }
            Some(e) => e.owned_by(txn.id),
            None => {
                let entry = LockEntry { owner: Some(txn.clone()), queue: VecDeque::new(), committed: Vec::new() };
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

    /// Owner leaves: hand the lock to the first waiter, or remove the entry.
    fn hand_off(&mut self, rel: RelId, key: &[u8]) {
        let Some(e) = self.entry_mut(rel, key) else {
            return;
        };
        match e.queue.pop_front() {
            None if e.committed.is_empty() => self.remove_entry(rel, key),
            None => e.owner = None,
            Some(mut w) => {
                *w.txn.waiting_for.lock() = None;
                e.owner = Some(w.txn.clone());
                if let Some(tx) = w.tx.take() {
                    // If the waiter's future is gone, its WaitGuard finds itself the owner
                    // and hands the lock on.
                    let _ = tx.send(());
                }
            }
        }
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

    /// Takes the lock if free, or queues `txn` behind the owner and earlier waiters.
    /// Precondition: `txn` does not own the lock.
    pub fn lock_or_enqueue(&self, txn: &Arc<TxnShared>, rel: RelId, key: &[u8]) -> TryLock {
        let mut shard = self.shard(rel, key).lock();
        if shard.lock_if_free(rel, key, txn) {
            return TryLock::Acquired;
        }
        let e = shard.entry_mut(rel, key).expect("a lock that is not free has an entry");
        let id = self.next_waiter.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = tokio::sync::oneshot::channel();
        *txn.waiting_for.lock() = Some((rel, key.to_vec()));
        e.queue.push_back(Waiter {
            id,
            txn: txn.clone(),
            tx: Some(tx),
        });
        TryLock::Queued(id, rx)
    }

    /// Takes the lock only if it is free (or already ours). Never waits.
    pub fn try_lock(&self, txn: &Arc<TxnShared>, rel: RelId, key: &[u8]) -> bool {
        self.shard(rel, key).lock().lock_if_free(rel, key, txn)
    }

    /// Removes a queued waiter (cancelled wait), or tells that it was already granted.
    pub fn dequeue(&self, rel: RelId, key: &[u8], waiter: u64, txn: &TxnShared) -> Dequeue {
        let mut shard = self.shard(rel, key).lock();
        Self::dequeue_locked(&mut shard, rel, key, waiter, txn)
    }

    fn dequeue_locked(
        shard: &mut Shard,
        rel: RelId,
        key: &[u8],
        waiter: u64,
        txn: &TxnShared,
    ) -> Dequeue {
        if let Some(e) = shard.entry_mut(rel, key) {
            if let Some(pos) = e.queue.iter().position(|w| w.id == waiter) {
                e.queue.remove(pos);
                *txn.waiting_for.lock() = None;
                return Dequeue::Removed;
            }
            if e.owned_by(txn.id) {
                return Dequeue::Granted;
            }
        }
        // Neither queued nor owner: cannot happen (a queued waiter leaves only through
        // dequeue or hand-off). Treat as removed.
        Dequeue::Removed
    }

    /// Releases a lock held by `owner_id` and hands it to the next waiter.
    pub fn release(&self, rel: RelId, key: &[u8], owner_id: u64) {
        let mut shard = self.shard(rel, key).lock();
        let owned = matches!(shard.entry_mut(rel, key), Some(e) if e.owned_by(owner_id));
        if owned {
            shard.hand_off(rel, key);
        }
    }

    /// Early lock release: `owner`'s writes are applied (the next owner reads them) but not
    /// yet durable. Hands the lock on and keeps `owner` on the row for readers, whose
    /// snapshot may include it, until `finish`. Its commit timestamp is known, so
    /// it waits for nothing and is no part of any wait-for cycle.
    pub fn release_applied(&self, rel: RelId, key: &[u8], owner: &Arc<TxnShared>) {
        let mut shard = self.shard(rel, key).lock();
        if let Some(e) = shard.entry_mut(rel, key).filter(|e| e.owned_by(owner.id)) {
            e.committed.push(owner.clone());
            shard.hand_off(rel, key);
        }
    }

    /// The earlier owners of a row whose writes are applied but not yet durable.
    pub fn applied_not_durable(&self, rel: RelId, key: &[u8]) -> Vec<Arc<TxnShared>> {
        let shard = self.shard(rel, key).lock();
        match shard.map.get(&rel).and_then(|m| m.get(key)) {
            Some(e) => e.committed.iter().filter(|t| t.state() != TxnState::Finished).cloned().collect(),
            None => Vec::new(),
        }
    }

    /// `id` has finished committing: hands the lock on if `id` still holds it (its batch
    /// failed before `release_applied`), and readers no longer wait for it here.
    pub fn finish(&self, rel: RelId, key: &[u8], id: u64) {
        let mut shard = self.shard(rel, key).lock();
        if shard.entry_mut(rel, key).is_some_and(|e| e.owned_by(id)) {
            shard.hand_off(rel, key);
        }
        if let Some(e) = shard.entry_mut(rel, key) {
            e.committed.retain(|t| t.id != id);
            if e.is_unused() {
                shard.remove_entry(rel, key);
            }
        }
    }

    /// The owner of the row's lock if a reader at `snapshot` must wait for it (it is
    /// committing with a timestamp that is unknown or `<= snapshot`), excluding `me`.
    pub fn blocking_owner(
        &self,
        rel: RelId,
        key: &[u8],
        snapshot: Timestamp,
        me: u64,
    ) -> Option<Arc<TxnShared>> {
        let shard = self.shard(rel, key).lock();
        let e = shard.map.get(&rel)?.get(key)?;
        e.owner.iter().chain(&e.committed).find(|t| t.id != me && t.blocks_snapshot(snapshot)).cloned()
    }

    /// Deadlock check for `me`, queued as `waiter` on (rel, key): searches the wait-for
    /// graph (owner and earlier waiters of the row a transaction is queued on) for a cycle
    /// back to `me`. Checks are serialised by the detector mutex, and a victim leaves its
    /// queue before the mutex is released, so each cycle yields exactly one victim.
    pub fn check_deadlock(
        &self,
        me: &Arc<TxnShared>,
        rel: RelId,
        key: &[u8],
        waiter: u64,
    ) -> DeadlockCheck {
        let _d = self.detector.lock();
        let mut parent: HashMap<u64, u64> = HashMap::new();
        let mut visited: HashSet<u64> = HashSet::new();
        let mut stack: Vec<Arc<TxnShared>> = vec![me.clone()];
        visited.insert(me.id);
        let mut found: Option<u64> = None; // the txn whose edge closes the cycle
        'dfs: while let Some(t) = stack.pop() {
            let wf = t.waiting_for.lock().clone();
            let Some((r, k)) = wf else { continue };
            let blockers: Vec<Arc<TxnShared>> = {
                let shard = self.shard(r, &k).lock();
                let Some(e) = shard.map.get(&r).and_then(|m| m.get(k.as_slice())) else {
                    continue;
                };
                let mut b = Vec::new();
                if let Some(owner) = e.owner.as_ref().filter(|o| o.id != t.id) {
                    b.push(owner.clone());
                }
                for w in &e.queue {
                    if w.txn.id == t.id {
                        break;
                    }
                    b.push(w.txn.clone());
                }
                b
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
        let Some(last) = found else {
            return DeadlockCheck::NoCycle;
        };
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
            detail.push_str(&format!(
                "Transaction {t} waits for ExclusiveLock on a row; blocked by transaction {next}."
            ));
        }
        let mut shard = self.shard(rel, key).lock();
        match Self::dequeue_locked(&mut shard, rel, key, waiter, me) {
            Dequeue::Removed => DeadlockCheck::Victim(detail),
            Dequeue::Granted => DeadlockCheck::Granted,
        }
    }

    /// Every wait-for edge (waiter start ts, blocker start ts): to the owner and to the
    /// waiters queued ahead. Takes each shard mutex in turn; O(lock entries).
    pub fn edges(&self) -> Vec<(Timestamp, Timestamp)> {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            let shard = shard.lock();
            for m in shard.map.values() {
                for e in m.values() {
                    for (i, w) in e.queue.iter().enumerate() {
                        if let Some(owner) = &e.owner {
                            out.push((w.txn.start_ts, owner.start_ts));
                        }
                        for ahead in e.queue.iter().take(i) {
                            out.push((w.txn.start_ts, ahead.txn.start_ts));
                        }
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

/// Removes a lock waiter whose future was dropped; if the lock had already been handed
/// to it, passes the lock on.
pub(crate) struct WaitGuard<'a> {
    pub table: &'a LockTable,
    pub txn: Arc<TxnShared>,
    pub rel: RelId,
    pub key: &'a [u8],
    pub waiter: u64,
    pub armed: bool,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut shard = self.table.shard(self.rel, self.key).lock();
        if let Dequeue::Granted =
            LockTable::dequeue_locked(&mut shard, self.rel, self.key, self.waiter, &self.txn)
        {
            *self.txn.waiting_for.lock() = None;
            shard.hand_off(self.rel, self.key);
        }
    }
}
