//! Ending a transaction across datanodes (decision 0029): one phase when at most one
//! datanode holds its writes, else prepare on every writer, record the decision to
//! commit at the GTM (the commit point; it issues the commit timestamp), and commit the
//! prepared parts at it. A transaction whose DDL changed the catalog always commits in
//! two phases (`commit_decided`): its catalog changes are resolved by that decision after
//! a crash (decision 0038).

use crate::datanodes::{ClusterTxn, Datanodes};
use datanode_client::{DatanodeClient, DatanodeTxn, PreparedTxn, Timestamp};
use futures::future::{join_all, BoxFuture, Either};
use pgerror::{codes, PgError, PgResult};
use std::future::Future;
use std::time::Duration;

/// What a commit does once the GTM recorded its decision and before any part commits.
pub type AfterDecision = BoxFuture<'static, PgResult<()>>;

impl Datanodes {
    /// Commits, returning the commit timestamp.
    pub fn commit<'f>(
        &'f self,
        mut txn: ClusterTxn,
        gtm: &'f gtm::GtmClient,
    ) -> impl Future<Output = PgResult<Timestamp>> + Send + 'f {
        if let [dn] = self.nodes.as_slice() {
            let part = txn.parts.pop().expect("one part per datanode");
            return Either::Left(dn.commit(part, gtm));
        }
        Either::Right(Box::pin(self.commit_parts(txn, gtm, None)) as BoxFuture<'f, _>)
    }

    /// Commits in two phases whatever the number of writers (none included), running
    /// `after_decision` between the GTM's decision and the parts' commit. The GTM keeps the
    /// decision (for whoever resolves what `after_decision` did not finish) unless it
    /// succeeded and every part applied the commit.
    pub async fn commit_decided(
        &self,
        txn: ClusterTxn,
        gtm: &gtm::GtmClient,
        after_decision: AfterDecision,
    ) -> PgResult<Timestamp> {
        self.commit_parts(txn, gtm, Some(after_decision)).await
    }

    pub fn abort<'f>(
        &'f self,
        mut txn: ClusterTxn,
        gtm: &'f gtm::GtmClient,
    ) -> impl Future<Output = ()> + Send + 'f {
        if let [dn] = self.nodes.as_slice() {
            let part = txn.parts.pop().expect("one part per datanode");
            return Either::Left(dn.abort(part, gtm));
        }
        Either::Right(Box::pin(async move {
            let start = txn.start_ts();
            let touched: Vec<_> = self
                .nodes
                .iter()
                .zip(txn.parts)
                .filter(|(_, part)| !part.is_untouched())
                .collect();
            if touched.is_empty() {
                finish_at_gtm(gtm, start).await;
            }
            join_all(touched.into_iter().map(|(dn, part)| dn.abort(part, gtm))).await;
        }) as BoxFuture<'f, ()>)
    }

    async fn commit_parts(
        &self,
        txn: ClusterTxn,
        gtm: &gtm::GtmClient,
        after_decision: Option<AfterDecision>,
    ) -> PgResult<Timestamp> {
        let start = txn.start_ts();
        let (writers, readers): (Vec<_>, Vec<_>) = self
            .nodes
            .iter()
            .zip(txn.parts)
            .filter(|(_, part)| !part.is_untouched())
            .partition(|(_, part)| part.has_writes());
        // A SERIALIZABLE transaction that writes validates its reads on every datanode it
        // read, protected there until its commit timestamp: the parts that only read are
        // prepared with the writers (decision 0044).
        let (writers, readers) = match writers.first() {
            Some((_, part)) if part.is_serializable() && !readers.is_empty() => {
                (writers.into_iter().chain(readers).collect(), Vec::new())
            }
            _ => (writers, readers),
        };
        let committed = match (writers.len(), after_decision) {
            (_, Some(after)) => two_phase(writers, start, gtm, Some(after)).await,
            (0, None) if readers.is_empty() => {
                finish_at_gtm(gtm, start).await;
                Ok(start)
            }
            (0, None) => Ok(start),
            (1, None) => {
                let (dn, part) = writers.into_iter().next().expect("one writer");
                dn.commit(part, gtm).await
            }
            (_, None) => two_phase(writers, start, gtm, None).await,
        };
        // Parts that only read end as reads do, after the writers: ending one tells the
        // GTM the transaction is over, which must not let the GC horizon pass its start
        // while a writer may still be on its way to its datanode's commit registry. Their
        // locks (SELECT … FOR UPDATE) go with them.
        let ended = join_all(readers.into_iter().map(|(dn, part)| dn.commit(part, gtm))).await;
        let ts = committed?;
        ended.into_iter().collect::<PgResult<Vec<_>>>()?;
        Ok(ts)
    }
}

/// Prepares every writer, records the decision to commit at the GTM (the commit point),
/// and commits them at its timestamp; aborts them all if any fails to prepare.
///
/// A prepared part must be able to commit, so its deferred increments are applied
/// before, under exclusive row locks held until the commit. Taken on every datanode at
/// once, two transactions incrementing the same rows on two datanodes could each hold one
/// and wait for the other: they are applied one datanode after another in datanode order
/// (the same for everyone).
///
/// Runs in a task of its own, to the end, even if its caller stops waiting (a statement
/// timeout, a cancel, a client gone): a commit left between its prepare and its outcome
/// would keep the prepared parts' rows locked for as long as this coordinator lives.
async fn two_phase(
    writers: Vec<(&DatanodeClient, DatanodeTxn)>,
    start: Timestamp,
    gtm: &gtm::GtmClient,
    after_decision: Option<AfterDecision>,
) -> PgResult<Timestamp> {
    let writers: Vec<_> = writers
        .into_iter()
        .map(|(dn, part)| (dn.clone(), part))
        .collect();
    let gtm = gtm.clone();
    match tokio::spawn(
        async move { two_phase_to_the_end(writers, start, gtm, after_decision).await },
    )
    .await
    {
        Ok(outcome) => outcome,
        Err(e) => Err(PgError::internal(format!("two-phase commit failed: {e}"))),
    }
}

async fn two_phase_to_the_end(
    mut writers: Vec<(DatanodeClient, DatanodeTxn)>,
    start: Timestamp,
    gtm: gtm::GtmClient,
    after_decision: Option<AfterDecision>,
) -> PgResult<Timestamp> {
    // Increments are applied first, one datanode after another in datanode order (the
    // writers' order): that is when their rows' exclusive locks are taken. Then every part
    // is prepared at once (a prepare takes no more locks), so those rows stay locked for one
    // round of durable prepares rather than one per datanode. The last datanode's
    // increments are applied by its prepare (a prepare applies what is left), which takes
    // its locks last all the same, and saves a round trip with every lock held.
    let mut failure = None;
    let last_incrementing = writers.iter().rposition(|(_, part)| part.has_increments());
    let incrementing_before_last = writers
        .iter_mut()
        .enumerate()
        .filter(|(i, (_, part))| part.has_increments() && Some(*i) != last_incrementing);
    for (_, (dn, part)) in incrementing_before_last {
        if let Err(e) = dn.apply_increments(part).await {
            failure = Some(e);
            break;
        }
    }
    let prepared = match failure {
        Some(_) => {
            join_all(writers.into_iter().map(|(dn, part)| {
                let gtm = &gtm;
                async move { dn.abort(part, gtm).await }
            }))
            .await;
            Vec::new()
        }
        None => {
            join_all(
                writers
                    .into_iter()
                    .map(|(dn, part)| async move { (dn.prepare(part).await, dn) }),
            )
            .await
        }
    };
    let mut ready = Vec::with_capacity(prepared.len());
    for (p, dn) in prepared {
        match p {
            Ok(p) => ready.push((dn, p)),
            Err(e) => failure = failure.or(Some(e)),
        }
    }
    if let Some(e) = failure {
        abort_prepared(ready).await;
        finish_at_gtm(&gtm, start).await;
        return Err(e);
    }
    let ts = match decide(&gtm, start).await {
        Ok(ts) => ts,
        Err(Undecided::Refused(e)) => {
            abort_prepared(ready).await;
            return Err(e);
        }
        Err(Undecided::Unknown(e)) => {
            // Whatever the GTM recorded, the participants' resolvers will learn it.
            join_all(
                ready
                    .into_iter()
                    .map(|(dn, p)| async move { dn.resolve_later(p).await }),
            )
            .await;
            return Err(PgError::new(
                codes::TRANSACTION_RESOLUTION_UNKNOWN,
                format!("the outcome of the transaction is unknown: the GTM did not answer its commit decision ({e}); the datanodes resolve it once the GTM answers"),
            ));
        }
    };
    let mut forgettable = true;
    if let Some(after) = after_decision {
        if let Err(e) = after.await {
            forgettable = false;
            tracing::warn!(
                start,
                ts,
                "after a commit decision: {e}; the GTM keeps the decision"
            );
        }
    }
    // Committed. A participant that fails to apply it now (its connection lost, its
    // process killed) learns the decision from the GTM (its resolver, after the
    // connection closes or its restart), so the client is told of the commit; only once
    // every participant applied it may the GTM drop the decision.
    let applied = join_all(
        ready
            .into_iter()
            .map(|(dn, p)| async move { dn.commit_prepared(p, ts).await }),
    )
    .await;
    let mut all_applied = forgettable;
    for e in applied.into_iter().filter_map(Result::err) {
        all_applied = false;
        tracing::warn!(
            start,
            ts,
            "a participant did not apply a decided commit (its resolver will): {e}"
        );
    }
    if all_applied {
        tokio::spawn(async move {
            if let Err(e) = gtm.forget(start).await {
                tracing::debug!(start, "dropping a commit decision at the GTM: {e}");
            }
        });
    }
    Ok(ts)
}

/// Aborts every prepared part.
async fn abort_prepared(ready: Vec<(DatanodeClient, PreparedTxn)>) {
    join_all(
        ready
            .into_iter()
            .map(|(dn, p)| async move { dn.abort_prepared(p).await }),
    )
    .await;
}

/// Why `decide` gave no commit timestamp.
enum Undecided {
    /// The GTM recorded an abort first (a participant's resolver found the transaction's
    /// coordinator gone, e.g. over a GTM restart).
    Refused(PgError),
    /// The GTM did not answer for `DECIDE_PATIENCE`: the decision may or may not be
    /// recorded.
    Unknown(PgError),
}

/// How long a commit retries its decision while the GTM does not answer (a GTM restart
/// takes about a second).
const DECIDE_PATIENCE: Duration = Duration::from_secs(10);

/// Records the decision to commit at the GTM, retrying while it cannot be reached: a
/// retry is safe, as the GTM answers a recorded decision again.
async fn decide(gtm: &gtm::GtmClient, start: Timestamp) -> Result<Timestamp, Undecided> {
    let deadline = tokio::time::Instant::now() + DECIDE_PATIENCE;
    loop {
        match gtm.decide(start).await {
            Ok(ts) => return Ok(ts),
            Err(e) if e.code == codes::SERIALIZATION_FAILURE => return Err(Undecided::Refused(e)),
            Err(e) if tokio::time::Instant::now() >= deadline => return Err(Undecided::Unknown(e)),
            Err(e) => {
                tracing::warn!(
                    start,
                    "recording a commit decision at the GTM: {e}; retrying"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Tells the GTM a transaction that took no commit timestamp ended (its start no longer
/// holds back the GC horizon).
async fn finish_at_gtm(gtm: &gtm::GtmClient, start: Timestamp) {
    if let Err(e) = gtm.finish(start).await {
        tracing::warn!("finishing a transaction at the GTM: {e}");
    }
}
