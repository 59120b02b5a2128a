//! Waiting for row locks and owned relations, with deadlock detection, and the lock
//! table's monitoring calls.

use crate::locks::{
    DeadlockCheck, Dequeue, FxHashMap, LockMode, LockTable, TryLock, TxnShared, WaitGuard,
};
use crate::txn::Txn;
use crate::{Datanode, RelId, Timestamp};
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::oneshot;

fn deadlock_detected(detail: String) -> PgError {
    crate::metrics::metrics().deadlocks.inc();
    PgError::new(codes::DEADLOCK_DETECTED, "deadlock detected")
        .with_detail(detail)
        .with_hint("See server log for query details.")
}

/// The lock waits in progress, so that a wait can be ended from outside: the
/// coordinators' distributed deadlock detector picks a victim in a cycle no datanode sees
/// whole (`Datanode::cancel_waits_of`). Only waits register, so taking a free lock costs
/// nothing here.
#[derive(Default)]
pub(crate) struct Waits {
    next: AtomicU64,
    waits: Mutex<FxHashMap<u64, Waiting>>,
}

struct Waiting {
    txn: Arc<TxnShared>,
    /// Receives the deadlock detail that ends the wait.
    cancel: oneshot::Sender<String>,
}

/// A registered wait (`Waits::register`); it leaves the registry when dropped.
struct Registration<'a> {
    waits: &'a Waits,
    id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.waits.waits.lock().remove(&self.id);
    }
}

impl Waits {
    /// Registers a wait of `txn`, and the future that resolves to the deadlock detail if
    /// it is cancelled (it never resolves otherwise).
    fn register(&self, txn: &Arc<TxnShared>) -> (Registration<'_>, impl Future<Output = String>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (cancel, rx) = oneshot::channel();
        let txn = txn.clone();
        self.waits.lock().insert(id, Waiting { txn, cancel });
        let cancelled = async move {
            match rx.await {
                Ok(detail) => detail,
                // The registration is gone without a cancel: the wait ends otherwise.
                Err(_) => std::future::pending().await,
            }
        };
        (Registration { waits: self, id }, cancelled)
    }

    /// Ends the waits of the transaction that started at `start_ts`; whether there was one.
    fn cancel(&self, start_ts: Timestamp, detail: &str) -> bool {
        let mut waits = self.waits.lock();
        let ids: Vec<u64> = waits
            .iter()
            .filter(|(_, w)| w.txn.start_ts == start_ts)
            .map(|(id, _)| *id)
            .collect();
        let mut ended = false;
        for w in ids.into_iter().filter_map(|id| waits.remove(&id)) {
            // A send fails only if the wait is ending anyway (its future is gone).
            ended |= w.cancel.send(detail.to_string()).is_ok();
        }
        ended
    }

    /// The edges of waits for owned relations (waiter start ts, owner start ts).
    fn relation_edges(&self) -> Vec<(Timestamp, Timestamp)> {
        self.waits
            .lock()
            .values()
            .filter_map(|w| w.txn.relation_blocker().map(|b| (w.txn.start_ts, b)))
            .collect()
    }
}

impl Datanode {
    /// Takes the row's exclusive lock, waiting (with deadlock detection) if need be.
    pub(crate) async fn acquire(&self, txn: &mut Txn, rel: RelId, key: &[u8]) -> PgResult<()> {
        if txn.holds_lock(rel, key)? {
            return Ok(());
        }
        self.wait_unowned(txn, rel).await?;
        self.wait_for_lock(txn, rel, key, LockMode::Exclusive)
            .await?;
        txn.record_lock(rel, key)
    }

    pub(crate) async fn wait_for_lock(
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
        crate::metrics::metrics().lock_waits.inc();
        let mut guard = WaitGuard {
            table: &inner.locks,
            txn: txn.shared.clone(),
            rel,
            key,
            waiter,
            mode,
            armed: true,
        };
        let (_registered, cancelled) = inner.waits.register(&txn.shared);
        tokio::pin!(cancelled);
        loop {
            tokio::select! {
                detail = &mut cancelled => {
                    // As the local detector's victim: leave the queue, unless the lock was
                    // granted meanwhile (then the wait is over and nothing is cancelled).
                    guard.armed = false;
                    match inner.locks.dequeue(rel, key, waiter, &txn.shared, mode) {
                        Dequeue::Removed => return Err(deadlock_detected(detail)),
                        Dequeue::Granted => break,
                    }
                }
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

    /// Waits while another transaction owns `rel`.
    pub(crate) async fn wait_unowned(&self, txn: &Txn, rel: RelId) -> PgResult<()> {
        while let Some(owner) = self.inner.owned.other_owner(rel, txn.shared.id) {
            crate::metrics::metrics().lock_waits.inc();
            let _waiting = LockTable::wait_for_relation(&txn.shared, rel, &owner);
            let (_registered, cancelled) = self.inner.waits.register(&txn.shared);
            let finished = owner.wait_finished();
            tokio::pin!(finished, cancelled);
            loop {
                tokio::select! {
                    _ = &mut finished => break,
                    detail = &mut cancelled => return Err(deadlock_detected(detail)),
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

    /// The local wait-for graph as (waiting txn start ts, blocking txn start ts) edges,
    /// rows and owned relations, for distributed deadlock detection: start timestamps are
    /// global (GTM-issued), so the coordinator can merge the edges of all datanodes.
    pub fn wait_for_edges(&self) -> Vec<(Timestamp, Timestamp)> {
        let mut edges = self.inner.locks.edges();
        edges.extend(self.inner.waits.relation_edges());
        edges
    }

    /// Ends the lock waits of the transaction that started at `start_ts` with 40P01
    /// (`detail` says which cycle), as if the local detector had chosen it: the
    /// distributed detector's victim. Its statement (or prepare, or commit) fails and the
    /// transaction aborts as after a local deadlock. Whether a wait was ended: a
    /// transaction not waiting here is left alone.
    pub fn cancel_waits_of(&self, start_ts: Timestamp, detail: String) -> bool {
        self.inner.waits.cancel(start_ts, &detail)
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
