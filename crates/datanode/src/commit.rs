//! Commit and abort: the commit registry (what scans wait for), taking the commit
//! timestamp, the commit batch with early lock release, and ending without writes.

use crate::locks::{LockMode, TxnShared, TxnState};
use crate::owned::loading_key;
use crate::txn::{Increments, Txn};
use crate::{Datanode, Inner, RelId, RowBytes, Timestamp};
use parking_lot::Mutex;
use pgerror::{PgError, PgResult};
use std::collections::HashMap;
use std::sync::Arc;

/// Ends a transaction without applying anything (a commit that wrote nothing, or an
/// abort): releases its row locks, waits until the versions it read under them are
/// durable, and tells the GTM it ended.
pub(crate) async fn end_unapplied(mut txn: Box<Txn>, gtm: &gtm::GtmClient) -> PgResult<Timestamp> {
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
    if txn.finishes_at_gtm {
        gtm.finish(start).await?;
    }
    Ok(start)
}

type Committing = HashMap<RelId, HashMap<u64, Arc<TxnShared>>>;

/// Transactions currently committing, per relation (for scans), sharded by relation.
pub(crate) struct CommitRegistry {
    shards: Box<[Mutex<Committing>]>,
}

impl CommitRegistry {
    pub(crate) fn new() -> Self {
        CommitRegistry {
            shards: (0..16).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
    pub(crate) fn shard(&self, rel: RelId) -> &Mutex<Committing> {
        &self.shards[(rel.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize % self.shards.len()]
    }
    pub(crate) fn register(&self, rel: RelId, t: &Arc<TxnShared>) {
        self.shard(rel)
            .lock()
            .entry(rel)
            .or_default()
            .insert(t.id, t.clone());
    }
    pub(crate) fn unregister(&self, rel: RelId, id: u64) {
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
    pub(crate) fn clamp_horizon(&self, horizon: Timestamp) -> Timestamp {
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
    pub(crate) fn blocking(&self, rel: RelId, snapshot: Timestamp, me: u64) -> Vec<Arc<TxnShared>> {
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

impl Datanode {
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
}

impl Inner {
    /// Commits `txn` with its deferred increments, grouped by row (`merges`), whose rows
    /// it holds in Merge mode.
    pub(crate) async fn commit(
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
    pub(crate) async fn take_commit_ts(
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
                if txn.finishes_at_gtm {
                    let _ = gtm.finish(start).await; // best effort
                }
                Err(e)
            }
        }
    }

    pub(crate) fn unregister_committing(&self, rels: &[RelId], id: u64) {
        for &rel in rels {
            self.committing.unregister(rel, id);
        }
    }
}
