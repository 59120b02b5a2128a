//! Waiting for row locks and owned relations, with deadlock detection, and the lock
//! table's monitoring calls.

use crate::locks::{DeadlockCheck, Dequeue, LockMode, LockTable, TryLock, WaitGuard};
use crate::txn::Txn;
use crate::{Datanode, RelId, Timestamp};
use pgerror::{codes, PgError, PgResult};

fn deadlock_detected(detail: String) -> PgError {
    PgError::new(codes::DEADLOCK_DETECTED, "deadlock detected")
        .with_detail(detail)
        .with_hint("See server log for query details.")
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

    /// Waits while another transaction owns `rel`.
    pub(crate) async fn wait_unowned(&self, txn: &Txn, rel: RelId) -> PgResult<()> {
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

    /// The local wait-for graph as (waiting txn start ts, blocking txn start ts) edges,
    /// for distributed deadlock detection: start timestamps are global (GTM-issued), so
    /// the coordinator can merge the edges of all datanodes.
    pub fn wait_for_edges(&self) -> Vec<(Timestamp, Timestamp)> {
        self.inner.locks.edges()
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
