//! Ending a transaction across datanodes (decision 0029): one phase when at most one
//! datanode holds its writes, else prepare on every writer, take the commit timestamp
//! from the GTM (the commit point), and commit the prepared parts at it.

use crate::datanodes::{ClusterTxn, Datanodes};
use datanode_client::{DatanodeClient, DatanodeTxn, Timestamp};
use futures::future::{join_all, BoxFuture, Either};
use pgerror::PgResult;
use std::future::Future;

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
        Either::Right(Box::pin(self.commit_parts(txn, gtm)) as BoxFuture<'f, _>)
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

    async fn commit_parts(&self, txn: ClusterTxn, gtm: &gtm::GtmClient) -> PgResult<Timestamp> {
        let start = txn.start_ts();
        let (writers, readers): (Vec<_>, Vec<_>) = self
            .nodes
            .iter()
            .zip(txn.parts)
            .filter(|(_, part)| !part.is_untouched())
            .partition(|(_, part)| part.has_writes());
        let committed = match writers.len() {
            0 if readers.is_empty() => {
                finish_at_gtm(gtm, start).await;
                Ok(start)
            }
            0 => Ok(start),
            1 => {
                let (dn, part) = writers.into_iter().next().expect("one writer");
                dn.commit(part, gtm).await
            }
            _ => two_phase(writers, start, gtm).await,
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

/// Prepares every writer, takes the commit timestamp, and commits them at it; aborts
/// them all if any fails to prepare.
///
/// A prepare applies the part's deferred increments under exclusive row locks, held
/// until the commit. Taken on every datanode at once, two transactions incrementing the
/// same rows on two datanodes could each hold one and wait for the other: parts with
/// increments are therefore prepared one after another in datanode order (the same for
/// everyone), the rest at once.
async fn two_phase(
    writers: Vec<(&DatanodeClient, DatanodeTxn)>,
    start: Timestamp,
    gtm: &gtm::GtmClient,
) -> PgResult<Timestamp> {
    let (ordered, free): (Vec<_>, Vec<_>) = writers
        .into_iter()
        .partition(|(_, part)| part.has_increments());
    let mut failure = None;
    let mut ready = Vec::with_capacity(ordered.len() + free.len());
    for (dn, part) in ordered {
        if failure.is_some() {
            dn.abort(part, gtm).await;
            continue;
        }
        match dn.prepare(part).await {
            Ok(p) => ready.push((dn, p)),
            Err(e) => failure = Some(e),
        }
    }
    let prepared = if failure.is_some() {
        join_all(free.into_iter().map(|(dn, part)| dn.abort(part, gtm))).await;
        Vec::new()
    } else {
        join_all(
            free.into_iter()
                .map(|(dn, part)| async move { (dn, dn.prepare(part).await) }),
        )
        .await
    };
    for (dn, p) in prepared {
        match p {
            Ok(p) => ready.push((dn, p)),
            Err(e) => failure = failure.or(Some(e)),
        }
    }
    let ts = match failure {
        None => gtm.commit(start).await,
        Some(e) => Err(e),
    };
    let ts = match ts {
        Ok(ts) => ts,
        Err(e) => {
            join_all(ready.into_iter().map(|(dn, p)| dn.abort_prepared(p))).await;
            finish_at_gtm(gtm, start).await;
            return Err(e);
        }
    };
    // Committed: a participant that fails to apply now is reported, but the others keep
    // the decision (a durable prepare and the GTM's decision record are what will let
    // that participant finish on its own; decision 0029).
    let applied = join_all(ready.into_iter().map(|(dn, p)| dn.commit_prepared(p, ts))).await;
    applied.into_iter().collect::<PgResult<Vec<_>>>()?;
    Ok(ts)
}

/// Tells the GTM a transaction that took no commit timestamp ended (its start no longer
/// holds back the GC horizon).
async fn finish_at_gtm(gtm: &gtm::GtmClient, start: Timestamp) {
    if let Err(e) = gtm.finish(start).await {
        tracing::warn!("finishing a transaction at the GTM: {e}");
    }
}
