//! SQL's prepared transactions across datanodes (PREPARE TRANSACTION, COMMIT PREPARED,
//! ROLLBACK PREPARED, pg_prepared_xacts; decision 0029).
//!
//! Every part the transaction touched is prepared under the gid on its datanode, and the
//! first datanode always holds a part (one that did nothing there, if need be): its
//! registry decides whether the gid is in use, and with no part elsewhere a transaction
//! that did nothing is still there to list and finish. COMMIT PREPARED takes one commit
//! timestamp from the GTM and commits every part at it; ROLLBACK PREPARED aborts them
//! all. Finishing claims the first holder's part before the others': of two sessions
//! finishing one gid, the second gets 42704 there and touches nothing.
//!
//! A part waits prepared for as long as the user likes, so it is parked: readers do not
//! wait for it, its writes are simply invisible. COMMIT PREPARED first makes every part
//! block readers above the start again and only then takes the commit timestamp, so a
//! reader that saw a part parked has a snapshot below it (the argument of the
//! `CommittingPending` state, `crates/datanode/README.md`).

use crate::datanodes::{ClusterTxn, Datanodes};
use datanode_client::{unknown_gid, DatanodeClient, PreparedXact, Timestamp};
use futures::future::join_all;
use pgerror::{codes, PgResult};

impl Datanodes {
    /// Prepares the transaction under `xact.gid` (its start timestamp is set from the
    /// transaction's): it outlives the session and the coordinator, holding its locks and
    /// its start's GTM registration, until `commit_prepared` or `rollback_prepared`.
    /// 42710 if the gid is in use; on any failure the transaction is aborted.
    pub async fn prepare_transaction(
        &self,
        txn: ClusterTxn,
        xact: PreparedXact,
        gtm: &gtm::GtmClient,
    ) -> PgResult<()> {
        let start = txn.start_ts();
        let mut parts = self.nodes.iter().zip(txn.parts);
        let (first, first_part) = parts.next().expect("at least one datanode");
        let rest: Vec<_> = parts.filter(|(_, part)| !part.is_untouched()).collect();
        let mut result = first.prepare_as(first_part, xact.clone()).await;
        let prepared = if result.is_ok() {
            let outcomes = join_all(rest.into_iter().map(|(dn, part)| {
                let xact = xact.clone();
                async move { (dn, dn.prepare_as(part, xact).await) }
            }))
            .await;
            let mut prepared = vec![first];
            for (dn, outcome) in outcomes {
                match outcome {
                    Ok(()) => prepared.push(dn),
                    Err(e) => result = result.and(Err(e)),
                }
            }
            prepared
        } else {
            // The first part failed (and was aborted): end the others unprepared.
            join_all(rest.into_iter().map(|(dn, part)| dn.abort(part, gtm))).await;
            Vec::new()
        };
        if result.is_err() {
            join_all(prepared.into_iter().map(|dn| dn.abort_gid(&xact.gid))).await;
            if let Err(e) = gtm.finish(start).await {
                tracing::warn!("finishing a transaction that failed to prepare: {e}");
            }
        }
        result
    }

    /// Commits the transaction prepared under `gid` (42704 if there is none): every part
    /// made to block readers again (a prepared transaction left waiting blocks none),
    /// then one commit timestamp from the GTM, every part committed at it.
    pub async fn commit_prepared(&self, gid: &str, gtm: &gtm::GtmClient) -> PgResult<()> {
        let (start, holders) = self.holders(gid).await?;
        finish_parts(&holders, gid, |dn| dn.commit_gid_pending(gid)).await?;
        let ts = gtm.commit(start).await?;
        finish_parts(&holders, gid, |dn| dn.commit_gid(gid, ts)).await
    }

    /// Aborts the transaction prepared under `gid` (42704 if there is none) and releases
    /// its locks everywhere.
    pub async fn rollback_prepared(&self, gid: &str, gtm: &gtm::GtmClient) -> PgResult<()> {
        let (start, holders) = self.holders(gid).await?;
        let result = finish_parts(&holders, gid, |dn| dn.abort_gid(gid)).await;
        if result.is_ok() {
            gtm.finish(start).await?;
        }
        result
    }

    /// The transactions prepared under a gid, one per gid (from whichever datanode holds
    /// a part), by gid.
    pub async fn prepared_xacts(&self) -> PgResult<Vec<PreparedXact>> {
        let mut all = Vec::new();
        for listed in join_all(self.nodes.iter().map(DatanodeClient::prepared_xacts)).await {
            all.extend(listed?);
        }
        all.sort_by(|a, b| a.gid.cmp(&b.gid));
        all.dedup_by(|a, b| a.gid == b.gid);
        Ok(all)
    }

    /// The start timestamp of the transaction prepared under `gid` and the datanodes that
    /// hold a part of it, in their order; 42704 if none does.
    async fn holders(&self, gid: &str) -> PgResult<(Timestamp, Vec<&DatanodeClient>)> {
        let listed = join_all(self.nodes.iter().map(DatanodeClient::prepared_xacts)).await;
        let mut start = None;
        let mut holders = Vec::new();
        for (dn, xacts) in self.nodes.iter().zip(listed) {
            if let Some(x) = xacts?.into_iter().find(|x| x.gid == gid) {
                start = Some(x.start_ts);
                holders.push(dn);
            }
        }
        match start {
            Some(start) => Ok((start, holders)),
            None => Err(unknown_gid(gid)),
        }
    }
}

/// Ends the parts of `gid` on `holders` with `end`: the first holder's first (the claim:
/// its 42704 means another session is finishing the transaction), then the others at
/// once; a part already gone from one of them (42704) was ended by that other session.
async fn finish_parts<'a, F, Fut>(holders: &[&'a DatanodeClient], gid: &str, end: F) -> PgResult<()>
where
    F: Fn(&'a DatanodeClient) -> Fut,
    Fut: std::future::Future<Output = PgResult<()>>,
{
    let (&first, rest) = holders.split_first().ok_or_else(|| unknown_gid(gid))?;
    end(first).await?;
    for ended in join_all(rest.iter().map(|&dn| end(dn))).await {
        match ended {
            Err(e) if e.code != codes::UNDEFINED_OBJECT => return Err(e),
            _ => {}
        }
    }
    Ok(())
}
