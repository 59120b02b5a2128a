//! Commit and abort: the commit registry (what scans wait for), taking the commit
//! timestamp (from the GTM, or from the coordinator for a prepared transaction), the
//! commit batch with early lock release, and ending without writes.

use crate::committing::WrittenKeys;
use crate::in_doubt;
use crate::locks::{LockMode, TxnShared, TxnState};
use crate::owned::loading_key;
use crate::txn::{Increments, Txn};
use crate::{Datanode, Inner, RelId, RowBytes, Timestamp};
use pgerror::{codes, PgError, PgResult};
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Where a commit's timestamp comes from: the only difference between a one-phase commit
/// and a prepared one (decision 0029).
pub(crate) enum CommitTs {
    /// One phase: the datanode asks the GTM once the transaction is `CommittingPending`.
    Gtm(gtm::GtmClient),
    /// Two phases: the transaction is parked `Prepared` (and `prepared` told so) until the
    /// coordinator, which took the timestamp from the GTM itself, sends it on `decision`;
    /// a dropped sender aborts it.
    Decided {
        prepared: oneshot::Sender<()>,
        decision: oneshot::Receiver<Timestamp>,
    },
}

impl CommitTs {
    /// The GTM to tell when the transaction ends: none for a prepared one, whose
    /// coordinator does (as it does the commit).
    pub(crate) fn gtm(&self) -> Option<&gtm::GtmClient> {
        match self {
            CommitTs::Gtm(gtm) => Some(gtm),
            CommitTs::Decided { .. } => None,
        }
    }
}

/// A transaction prepared on this datanode (`Datanode::prepare`): its writes are
/// registered and its rows locked, waiting for the coordinator's decision. Its durable
/// record (`in_doubt.rs`) brings it back after a restart. Dropping it aborts it.
pub struct PreparedTxn(Prepared);

enum Prepared {
    /// Wrote nothing: ends as a read-only commit does (releasing its locks).
    ReadOnly(Box<Txn>),
    /// Parked in its commit task, which waits for the timestamp on `decision`.
    Writes {
        decision: oneshot::Sender<Timestamp>,
        task: JoinHandle<PgResult<Timestamp>>,
        shared: Arc<TxnShared>,
    },
}

impl PreparedTxn {
    /// The transaction's start timestamp: its identity across datanodes and at the GTM.
    pub fn start_ts(&self) -> Timestamp {
        match &self.0 {
            Prepared::ReadOnly(txn) => txn.start_ts(),
            Prepared::Writes { shared, .. } => shared.start_ts,
        }
    }

    /// Whether it wrote nothing here (its outcome changes nothing on this datanode).
    pub fn wrote_nothing(&self) -> bool {
        matches!(self.0, Prepared::ReadOnly(_))
    }

    /// Makes it `Parked` (readers stop waiting for it) or, with `parked` false, `Prepared`
    /// again (before its commit timestamp is taken): see `TxnState::Parked`. One that
    /// wrote nothing blocks no reader either way.
    pub(crate) fn set_parked(&self, parked: bool) {
        if let Prepared::Writes { shared, .. } = &self.0 {
            let (from, to) = match parked {
                true => (TxnState::Prepared, TxnState::Parked),
                false => (TxnState::Parked, TxnState::Prepared),
            };
            shared.replace_state(from, to);
        }
    }

    /// Commits at `ts` (issued by the GTM for the whole transaction, above its start),
    /// exactly as a commit that took `ts` from the GTM; returns `ts`.
    pub async fn commit(self, ts: Timestamp) -> PgResult<Timestamp> {
        match self.0 {
            Prepared::ReadOnly(txn) => end_unapplied(txn, None).await.map(|_| ts),
            Prepared::Writes { decision, task, .. } => {
                // A send fails only if the task ended already; its outcome says why.
                let _ = decision.send(ts);
                joined(task).await
            }
        }
    }

    /// Undoes it as an abort does and releases its locks; returns once they are released.
    pub async fn abort(self) {
        match self.0 {
            Prepared::ReadOnly(txn) => {
                let _ = end_unapplied(txn, None).await; // no GTM call: cannot fail
            }
            Prepared::Writes { decision, task, .. } => {
                drop(decision);
                let _ = joined(task).await;
            }
        }
    }
}

/// The outcome of a spawned commit task.
async fn joined(task: JoinHandle<PgResult<Timestamp>>) -> PgResult<Timestamp> {
    match task.await {
        Ok(r) => r,
        Err(e) => Err(PgError::internal(format!("commit task failed: {e}"))),
    }
}

/// Ends a transaction without applying anything (a commit that wrote nothing, or an
/// abort): releases its row locks, waits until the versions it read under them are
/// durable, and tells the GTM it ended (`gtm`, unless its registration is not this
/// datanode's to end).
pub(crate) async fn end_unapplied(
    mut txn: Box<Txn>,
    gtm: Option<&gtm::GtmClient>,
) -> PgResult<Timestamp> {
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
    if let Some(gtm) = gtm.filter(|_| txn.finishes_at_gtm) {
        gtm.finish(start).await?;
    }
    Ok(start)
}

impl Datanode {
    pub async fn commit(&self, txn: Box<Txn>, gtm: &gtm::GtmClient) -> PgResult<Timestamp> {
        if txn.applies_nothing() {
            // Every select ends here, and this future is part of each session's state
            // (one per connection): the read-only path stays small and the write path's
            // kilobytes go to the heap, only for transactions that wrote.
            return end_unapplied(txn, Some(gtm)).await;
        }
        Box::pin(async {
            let task = self.start_commit(txn, CommitTs::Gtm(gtm.clone())).await?;
            joined(task).await
        })
        .await
    }

    /// First phase of a commit across datanodes (decision 0029): everything a commit does
    /// before it takes its commit timestamp (merges started, registered on the relations
    /// it wrote, rows kept locked), then the transaction waits `Prepared` for
    /// `PreparedTxn::commit` or `abort`. Readers whose snapshot is above its start wait
    /// for the outcome. It never calls the GTM: its coordinator takes the commit timestamp
    /// and ends the start timestamp's registration.
    ///
    /// A prepared transaction must be able to commit, but merging a deferred increment can
    /// fail (22003 on overflow), so its increments are applied here, under the row's
    /// exclusive lock, and a failure ends the transaction before it is prepared.
    ///
    /// Once prepared, its durable record is written (`in_doubt.rs`) before it returns: a
    /// restart of this datanode brings it back, prepared, for the resolver.
    pub async fn prepare(&self, txn: Box<Txn>) -> PgResult<PreparedTxn> {
        self.prepare_recorded(txn, None).await
    }

    /// `prepare`, recording `xact` (the gid it is prepared under) with it.
    pub(crate) async fn prepare_recorded(
        &self,
        mut txn: Box<Txn>,
        xact: Option<&crate::PreparedXact>,
    ) -> PgResult<PreparedTxn> {
        txn.finishes_at_gtm = false;
        if let Err(e) = self.apply_increments(&mut txn).await {
            abort_unapplied(txn, None).await;
            return Err(e);
        }
        if txn.applies_nothing() {
            // A SERIALIZABLE part that only read is validated here, and stays protected
            // until the decision (decision 0044).
            if let Err(e) = self.inner.validate_reads(&txn) {
                abort_unapplied(txn, None).await;
                return Err(e);
            }
            return Ok(PreparedTxn(Prepared::ReadOnly(txn)));
        }
        let start = txn.start_ts();
        let record = in_doubt::record_of(&txn, xact);
        txn.prepared_record = record.is_some();
        let prepared = self.park(txn).await?;
        if let Some(record) = record {
            let written = self.inner.store.put_sys(
                vec![(in_doubt::record_key(start), Some(record))],
                self.inner.opts.synchronous_commit,
            );
            let written = match written.await {
                Ok(r) => r,
                Err(_) => Err(PgError::io("prepare", "storage writer stopped")),
            };
            if let Err(e) = written {
                prepared.abort().await;
                return Err(e);
            }
        }
        Ok(prepared)
    }

    /// Starts the commit of `txn` and waits until it is `Prepared`, parked in its commit
    /// task until `PreparedTxn::commit` or `abort`.
    async fn park(&self, txn: Box<Txn>) -> PgResult<PreparedTxn> {
        let shared = txn.shared.clone();
        let (prepared_tx, prepared_rx) = oneshot::channel();
        let (decision, decision_rx) = oneshot::channel();
        let source = CommitTs::Decided {
            prepared: prepared_tx,
            decision: decision_rx,
        };
        let task = self.start_commit(txn, source).await?;
        match prepared_rx.await {
            Ok(()) => Ok(PreparedTxn(Prepared::Writes {
                decision,
                task,
                shared,
            })),
            // It failed before it was prepared (a merge, a spill): its task says why.
            Err(_) => {
                drop(decision);
                Err(joined(task).await.err().unwrap_or_else(|| {
                    PgError::internal("prepare: the transaction ended unprepared")
                }))
            }
        }
    }

    /// Starts the merges of the transaction's deferred increments, then spawns the rest
    /// of its commit (`Inner::commit`), which runs to completion even if the caller's
    /// future is dropped: a half-done commit would leave rows CommittingPending forever.
    async fn start_commit(
        &self,
        mut txn: Box<Txn>,
        source: CommitTs,
    ) -> PgResult<JoinHandle<PgResult<Timestamp>>> {
        let merges = txn.take_increments_by_row();
        if let Err(e) = self.start_merges(&mut txn, merges.keys()).await {
            abort_unapplied(txn, source.gtm()).await;
            return Err(e);
        }
        let inner = self.inner.clone();
        Ok(tokio::spawn(async move {
            inner.commit(txn, merges, source).await
        }))
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
        abort_unapplied(txn, Some(gtm)).await
    }
}

/// Parks a transaction restored at open (`in_doubt.rs`), already `Prepared` with its rows
/// locked and nothing to merge, in its commit task. Call inside a tokio runtime.
pub(crate) fn park_restored(inner: &Arc<Inner>, txn: Box<Txn>) -> PreparedTxn {
    let shared = txn.shared.clone();
    let (prepared, _) = oneshot::channel();
    let (decision, decision_rx) = oneshot::channel();
    let source = CommitTs::Decided {
        prepared,
        decision: decision_rx,
    };
    let inner = inner.clone();
    let task = tokio::spawn(async move { inner.commit(txn, Increments::new(), source).await });
    PreparedTxn(Prepared::Writes {
        decision,
        task,
        shared,
    })
}

/// `end_unapplied` for an abort, whose failure to tell the GTM is only logged.
pub(crate) async fn abort_unapplied(txn: Box<Txn>, gtm: Option<&gtm::GtmClient>) {
    if let Err(e) = end_unapplied(txn, gtm).await {
        tracing::warn!("gtm finish on abort failed: {e}");
    }
}

impl Inner {
    /// Commits `txn` with its deferred increments, grouped by row (`merges`), whose rows
    /// it holds in Merge mode.
    pub(crate) async fn commit(
        self: &Arc<Self>,
        mut txn: Box<Txn>,
        merges: Increments,
        source: CommitTs,
    ) -> PgResult<Timestamp> {
        if txn.spilled.is_some() {
            return self.commit_spilled(txn, merges, source).await;
        }
        let (rels, keys): (Vec<RelId>, Vec<WrittenKeys>) =
            written_keys(&txn, &merges).into_iter().unzip();
        let ts = self.take_commit_ts(&mut txn, &rels, keys, source).await?;
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
        // Rows it loaded in bulk become permanent with this batch (their markers go), and
        // so does a prepared transaction (its record goes).
        let mut sys_removals: Vec<_> = txn.loaded.iter().map(|&rel| loading_key(rel)).collect();
        if txn.prepared_record {
            sys_removals.push(in_doubt::record_key(txn.shared.start_ts));
        }
        let rx = self.store.apply_removing(
            &writes,
            ts,
            self.opts.synchronous_commit,
            Some(on_applied),
            sys_removals,
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

    /// Steps 1 and 2 of a commit: registers the transaction on `rels`, each with the keys
    /// it writes there (`keys`, in the same order: scans of those keys wait for it),
    /// takes its commit timestamp from `source` and marks it `Committing`: from the GTM
    /// once marked `CommittingPending`, or from its coordinator once marked `Prepared`.
    /// If no timestamp comes (the GTM fails, the prepared transaction is aborted) nothing
    /// was written: the transaction ends aborted.
    pub(crate) async fn take_commit_ts(
        &self,
        txn: &mut Txn,
        rels: &[RelId],
        keys: impl IntoIterator<Item = WrittenKeys>,
        source: CommitTs,
    ) -> PgResult<Timestamp> {
        // Before any of its versions is stored: VACUUM must not skip them from here on.
        self.single_version.remove(rels);
        for (&rel, keys) in rels.iter().zip(keys) {
            self.committing.register(rel, &txn.shared, keys);
        }
        let start = txn.shared.start_ts;
        let checked = self.serializable_commit_check(txn, rels, &source).await;
        // `gtm`: the GTM to tell if no timestamp comes (none for a prepared transaction).
        let (ts, gtm) = match source {
            _ if checked.is_err() => (checked.map(|()| start), source.gtm().cloned()),
            CommitTs::Gtm(gtm) => {
                txn.shared.set_state(TxnState::CommittingPending);
                (gtm.commit(start).await, Some(gtm))
            }
            CommitTs::Decided { prepared, decision } => {
                // A transaction restored at open is `Prepared` already, or `Parked` if
                // it has a gid (`in_doubt.rs`): it stays so.
                txn.shared
                    .replace_state(TxnState::Active, TxnState::Prepared);
                // The preparer may be gone (its future dropped): the decision channel
                // then reports the abort.
                let _ = prepared.send(());
                let ts = match decision.await {
                    Ok(ts) if ts > start => Ok(ts),
                    Ok(ts) => Err(PgError::internal(format!(
                        "commit timestamp {ts} of a prepared transaction is not above its start {start}"
                    ))),
                    Err(_) => Err(PgError::new(
                        codes::INVALID_TRANSACTION_STATE,
                        "the prepared transaction was aborted",
                    )),
                };
                (ts, None)
            }
        };
        match ts {
            Ok(ts) => {
                txn.shared.set_state(TxnState::Committing(ts));
                Ok(ts)
            }
            Err(e) => {
                if txn.prepared_record {
                    // Durably: a transaction prepared under a gid must not come back.
                    let removed = self
                        .store
                        .put_sys(vec![(in_doubt::record_key(start), None)], true);
                    if let Ok(Err(e)) | Err(e) = removed
                        .await
                        .map_err(|_| PgError::io("abort", "storage writer stopped"))
                    {
                        tracing::warn!("removing an aborted prepared transaction's record: {e} (it comes back at the next start, and is resolved again)");
                    }
                }
                txn.release_and_await_reads_durable().await;
                self.unregister_committing(rels, txn.shared.id);
                if let Some(gtm) = gtm.filter(|_| txn.finishes_at_gtm) {
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

/// The relations a transaction writes, in order, each with the keys it writes there
/// (puts and increments): what it registers in the commit registry.
fn written_keys(txn: &Txn, merges: &Increments) -> Vec<(RelId, WrittenKeys)> {
    let mut incremented: std::collections::BTreeMap<RelId, Vec<&Vec<u8>>> = Default::default();
    for (rel, key) in merges.keys() {
        incremented.entry(*rel).or_default().push(key);
    }
    let mut rels: Vec<RelId> = txn
        .writes
        .iter()
        .filter(|(_, m)| !m.is_empty())
        .map(|(r, _)| *r)
        .chain(incremented.keys().copied())
        .collect();
    rels.sort_unstable();
    rels.dedup();
    rels.into_iter()
        .map(|rel| {
            let increments = incremented.get(&rel).map_or(&[][..], |v| &v[..]);
            let keys = match txn.writes.get(&rel) {
                Some(m) => WrittenKeys::of(m.keys(), increments),
                None => WrittenKeys::of(std::iter::empty::<&Vec<u8>>(), increments),
            };
            (rel, keys)
        })
        .collect()
}
