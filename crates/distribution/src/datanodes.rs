//! `Datanodes`: the routed calls, and the transaction across datanodes.

use crate::bulk::ClusterBulkLoad;
use crate::placement::{bucket_of_value, BucketMap, Placements, RelPlacement, Target};
use crate::scan::ClusterScan;
use datanode_client::{
    ColumnIncrement, DatanodeClient, DatanodeTxn, Isolation, LockWait, RelId, RowBytes, Savepoint,
    ScanItem, ScanTraffic, Timestamp,
};
use futures::future::{BoxFuture, Either};
use pgerror::{PgError, PgResult};
use sql::pushdown::ScanWork;
use std::future::Future;
use std::ops::Bound;
use types::Value;

/// Every datanode of the cluster, as one.
pub struct Datanodes {
    pub(crate) nodes: Vec<DatanodeClient>,
    pub(crate) placements: Placements,
}

/// A transaction's parts, one per datanode in `Datanodes`' order, all begun at its start
/// (a remote part sends nothing until it is used).
pub struct ClusterTxn {
    pub(crate) parts: Vec<DatanodeTxn>,
}

/// A savepoint of every part.
#[derive(Clone, Debug)]
pub struct ClusterSavepoint(Vec<Savepoint>);

impl Datanodes {
    /// `nodes` in the order the bucket map numbers them; the first holds the catalog and
    /// hands out relation and row ids.
    /// Whether each datanode, in bucket-map order, is reachable as far as this
    /// coordinator knows.
    pub fn connected(&self) -> Vec<bool> {
        self.nodes
            .iter()
            .map(DatanodeClient::is_connected)
            .collect()
    }

    pub fn new(nodes: Vec<DatanodeClient>) -> Datanodes {
        let map = BucketMap::round_robin(nodes.len());
        Datanodes {
            nodes,
            placements: Placements::new(map),
        }
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The datanode alone, when there is one.
    fn single(&self) -> Option<&DatanodeClient> {
        match self.nodes.as_slice() {
            [only] => Some(only),
            _ => None,
        }
    }

    /// The datanode that holds the catalog and allocates ids.
    fn first(&self) -> &DatanodeClient {
        &self.nodes[0]
    }

    /// The datanode that holds `rel`'s row under `key`; None for a replicated relation
    /// (a copy on every datanode).
    pub fn datanode_of_key(&self, rel: RelId, key: &[u8]) -> PgResult<Option<usize>> {
        Ok(match self.placements.target(rel, key)? {
            Target::One(i) => Some(i),
            Target::All => None,
        })
    }

    /// The datanode holding `rel`'s rows whose distribution value is `value`; None if
    /// there is no value or the relation is replicated.
    pub fn datanode_of_value(&self, rel: RelId, value: Option<&Value>) -> PgResult<Option<usize>> {
        Ok(match (value, self.placements.of(rel)?) {
            (Some(v), RelPlacement::KeyValue { .. } | RelPlacement::RowId) => {
                Some(self.placements.map().datanode(bucket_of_value(v)))
            }
            _ => None,
        })
    }

    /// Records where `rel`'s rows live (from the catalog, for relations made before).
    pub fn place(&self, rel: RelId, placement: RelPlacement) {
        self.placements.set(rel, placement);
    }

    pub async fn meta_put(&self, key: &[u8], value: Option<&[u8]>) -> PgResult<()> {
        self.first().meta_put(key, value).await
    }

    pub async fn meta_scan(&self, prefix: &[u8]) -> PgResult<Vec<(Vec<u8>, Vec<u8>)>> {
        self.first().meta_scan(prefix).await
    }

    /// A new, empty relation on every datanode, under one id, whose rows are placed by
    /// `placement`.
    pub async fn create_rel(&self, placement: RelPlacement) -> PgResult<RelId> {
        let rel = self.first().create_rel().await?;
        for dn in &self.nodes[1..] {
            dn.create_rel_at(rel).await?;
        }
        self.placements.set(rel, placement);
        Ok(rel)
    }

    pub async fn drop_rel(&self, rel: RelId) -> PgResult<()> {
        for dn in &self.nodes {
            dn.drop_rel(rel).await?;
        }
        self.placements.remove(rel);
        Ok(())
    }

    /// Reserves `n` row sequence numbers of `rel` (one counter per relation, on the first
    /// datanode) and returns the first.
    pub async fn allocate_row_ids(&self, rel: RelId, n: u64) -> PgResult<u64> {
        self.first().allocate_row_ids(rel, n).await
    }

    /// Vacuums `rel` on every datanode: the versions removed, or None if every datanode
    /// skipped it.
    pub async fn vacuum(&self, rel: RelId) -> PgResult<Option<u64>> {
        let mut removed = None;
        for dn in &self.nodes {
            if let Some(n) = dn.vacuum(rel).await? {
                removed = Some(removed.unwrap_or(0) + n);
            }
        }
        Ok(removed)
    }

    pub fn begin(&self, start_ts: Timestamp, isolation: Isolation) -> ClusterTxn {
        ClusterTxn {
            parts: self
                .nodes
                .iter()
                .map(|dn| dn.begin(start_ts, isolation))
                .collect(),
        }
    }

    /// The datanode a read of `rel`'s row under `key` goes to: the row's, or for a
    /// replicated relation one chosen by the transaction (each holds every row and the
    /// transaction's own writes).
    fn read_target(&self, txn: &ClusterTxn, rel: RelId, key: &[u8]) -> PgResult<usize> {
        match self.placements.target(rel, key)? {
            Target::One(i) => Ok(i),
            Target::All => Ok(self.replica(txn)),
        }
    }

    fn replica(&self, txn: &ClusterTxn) -> usize {
        (txn.start_ts() % self.nodes.len() as u64) as usize
    }

    /// The datanodes a write of `rel`'s row under `key` goes to.
    fn write_targets(&self, rel: RelId, key: &[u8]) -> PgResult<std::ops::Range<usize>> {
        Ok(match self.placements.target(rel, key)? {
            Target::One(i) => i..i + 1,
            Target::All => 0..self.nodes.len(),
        })
    }

    pub fn get<'f>(
        &'f self,
        txn: &'f ClusterTxn,
        rel: RelId,
        key: &'f [u8],
        snapshot: Timestamp,
    ) -> impl Future<Output = PgResult<Option<RowBytes>>> + Send + 'f {
        self.get_row(txn, rel, key, snapshot, false)
    }

    pub fn get_row<'f>(
        &'f self,
        txn: &'f ClusterTxn,
        rel: RelId,
        key: &'f [u8],
        snapshot: Timestamp,
        presence_only: bool,
    ) -> impl Future<Output = PgResult<Option<RowBytes>>> + Send + 'f {
        if let Some(dn) = self.single() {
            return Either::Left(dn.get_row(&txn.parts[0], rel, key, snapshot, presence_only));
        }
        Either::Right(Box::pin(async move {
            let i = self.read_target(txn, rel, key)?;
            self.nodes[i]
                .get_row(&txn.parts[i], rel, key, snapshot, presence_only)
                .await
        }) as BoxFuture<'f, _>)
    }

    /// The rows of `rel` in `[lo, hi)` with their keys, own writes merged in, in key
    /// order across datanodes.
    pub async fn scan<'a>(
        &'a self,
        txn: &'a ClusterTxn,
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
    ) -> PgResult<ClusterScan<'a, (Vec<u8>, RowBytes)>> {
        if let Some(dn) = self.single() {
            return Ok(ClusterScan::One(
                dn.scan(&txn.parts[0], rel, lo, hi, snapshot).await?,
            ));
        }
        self.scan_all(txn, rel, lo, hi, snapshot).await
    }

    /// `scan` without the keys.
    pub async fn scan_rows<'a>(
        &'a self,
        txn: &'a ClusterTxn,
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
    ) -> PgResult<ClusterScan<'a, RowBytes>> {
        if let Some(dn) = self.single() {
            return Ok(ClusterScan::One(
                dn.scan_rows(&txn.parts[0], rel, lo, hi, snapshot).await?,
            ));
        }
        self.scan_all(txn, rel, lo, hi, snapshot).await
    }

    /// The rows of `rel` in `[lo, hi)` that pass `work`'s filter, in key order, or their
    /// partial aggregation, one row per group per datanode in no order (decision 0033);
    /// from the datanode of `route`'s bucket alone when the filter passes only rows whose
    /// distribution value is `route`. With several datanodes only: the embedded server
    /// filters and aggregates itself.
    #[allow(clippy::too_many_arguments)]
    pub fn scan_pushed<'a>(
        &'a self,
        txn: &'a ClusterTxn,
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
        work: ScanWork,
        route: Option<&Value>,
    ) -> PgResult<ClusterScan<'a, (Vec<u8>, RowBytes)>> {
        // groups need no order, and rows sent whole need their keys to merge
        let keys = work.partial.is_none();
        let targets = match self.datanode_of_value(rel, route)? {
            Some(i) => i..i + 1,
            None => self.scan_targets(txn, rel)?,
        };
        let mut scans = Vec::new();
        for i in targets {
            scans.push(self.nodes[i].scan_pushed(
                &txn.parts[i],
                rel,
                lo.clone(),
                hi.clone(),
                snapshot,
                keys,
                work.clone(),
            )?);
        }
        Ok(ClusterScan::merge(scans))
    }

    /// Per datanode, the pages scans fetched from it and the rows (or partial-aggregate
    /// groups) they brought; None for the datanode of this process.
    pub fn scan_traffic(&self) -> Vec<Option<ScanTraffic>> {
        self.nodes
            .iter()
            .map(DatanodeClient::scan_traffic)
            .collect()
    }

    /// The datanodes a scan of `rel` reads: every one, or one for a replicated relation.
    fn scan_targets(&self, txn: &ClusterTxn, rel: RelId) -> PgResult<std::ops::Range<usize>> {
        Ok(match self.placements.of(rel)? {
            RelPlacement::Replicated => {
                let i = self.replica(txn);
                i..i + 1
            }
            _ => 0..self.nodes.len(),
        })
    }

    /// A scan of the datanodes that hold `rel`'s rows (one for a replicated relation),
    /// merged by key.
    async fn scan_all<'a, T: ScanItem>(
        &'a self,
        txn: &'a ClusterTxn,
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
    ) -> PgResult<ClusterScan<'a, T>> {
        let holders = self.scan_targets(txn, rel)?;
        let mut scans = Vec::with_capacity(holders.len());
        for i in holders {
            scans.push(
                self.nodes[i]
                    .scan(&txn.parts[i], rel, lo.clone(), hi.clone(), snapshot)
                    .await?,
            );
        }
        Ok(ClusterScan::merge(scans))
    }

    /// Takes the row's exclusive lock and returns its newest committed version (on every
    /// datanode for a replicated relation, the first one's answer).
    pub fn lock_row<'f>(
        &'f self,
        txn: &'f mut ClusterTxn,
        rel: RelId,
        key: &'f [u8],
        wait: LockWait,
    ) -> impl Future<Output = PgResult<Option<RowBytes>>> + Send + 'f {
        if let Some(dn) = self.single() {
            return Either::Left(dn.lock_row(&mut txn.parts[0], rel, key, wait));
        }
        Either::Right(Box::pin(async move {
            let mut newest = None;
            for i in self.write_targets(rel, key)?.rev() {
                newest = self.nodes[i]
                    .lock_row(&mut txn.parts[i], rel, key, wait)
                    .await?;
            }
            Ok(newest)
        }) as BoxFuture<'f, _>)
    }

    pub fn increment<'f>(
        &'f self,
        txn: &'f mut ClusterTxn,
        rel: RelId,
        key: &'f [u8],
        increments: Vec<ColumnIncrement>,
    ) -> impl Future<Output = PgResult<Option<bool>>> + Send + 'f {
        if let Some(dn) = self.single() {
            return Either::Left(dn.increment(&mut txn.parts[0], rel, key, increments));
        }
        Either::Right(Box::pin(async move {
            let targets = self.write_targets(rel, key)?;
            if targets.len() > 1 {
                // A replicated row takes the ordinary path: its copies are written as
                // one read row, not merged on each datanode at different times.
                return Ok(None);
            }
            let i = targets.start;
            self.nodes[i]
                .increment(&mut txn.parts[i], rel, key, increments)
                .await
        }) as BoxFuture<'f, _>)
    }

    pub fn apply_increments<'f>(
        &'f self,
        txn: &'f mut ClusterTxn,
    ) -> impl Future<Output = PgResult<()>> + Send + 'f {
        if let Some(dn) = self.single() {
            return Either::Left(dn.apply_increments(&mut txn.parts[0]));
        }
        Either::Right(Box::pin(async move {
            for (dn, part) in self.nodes.iter().zip(&mut txn.parts) {
                if part.has_increments() {
                    dn.apply_increments(part).await?;
                }
            }
            Ok(())
        }) as BoxFuture<'f, _>)
    }

    pub fn put(
        &self,
        txn: &mut ClusterTxn,
        rel: RelId,
        key: &[u8],
        row: Option<RowBytes>,
    ) -> PgResult<()> {
        if let Some(dn) = self.single() {
            return dn.put(&mut txn.parts[0], rel, key, row);
        }
        for i in self.write_targets(rel, key)? {
            self.nodes[i].put(&mut txn.parts[i], rel, key, row.clone())?;
        }
        Ok(())
    }

    pub fn put_new_key<'f>(
        &'f self,
        txn: &'f mut ClusterTxn,
        rel: RelId,
        key: &'f [u8],
        row: RowBytes,
    ) -> impl Future<Output = PgResult<()>> + Send + 'f {
        if let Some(dn) = self.single() {
            return Either::Left(dn.put_new_key(&mut txn.parts[0], rel, key, row));
        }
        Either::Right(Box::pin(async move {
            for i in self.write_targets(rel, key)? {
                self.nodes[i]
                    .put_new_key(&mut txn.parts[i], rel, key, row.clone())
                    .await?;
            }
            Ok(())
        }) as BoxFuture<'f, _>)
    }

    pub fn insert<'f>(
        &'f self,
        txn: &'f mut ClusterTxn,
        rel: RelId,
        key: &'f [u8],
        row: RowBytes,
        unique_violation: impl Fn() -> PgError + Send + Sync + 'f,
    ) -> impl Future<Output = PgResult<()>> + Send + 'f {
        if let Some(dn) = self.single() {
            return Either::Left(dn.insert(&mut txn.parts[0], rel, key, row, unique_violation));
        }
        Either::Right(Box::pin(async move {
            for i in self.write_targets(rel, key)? {
                self.nodes[i]
                    .insert(&mut txn.parts[i], rel, key, row.clone(), &unique_violation)
                    .await?;
            }
            Ok(())
        }) as BoxFuture<'f, _>)
    }

    /// Gives the transaction `rel` on every datanode until it ends.
    pub fn own_relation(&self, txn: &mut ClusterTxn, rel: RelId) {
        for (dn, part) in self.nodes.iter().zip(&mut txn.parts) {
            dn.own_relation(part, rel);
        }
    }

    pub fn can_bulk_load(&self, txn: &ClusterTxn, rel: RelId) -> bool {
        self.nodes
            .iter()
            .zip(&txn.parts)
            .all(|(dn, part)| dn.can_bulk_load(part, rel))
    }

    pub fn has_bulk_loaded(&self, txn: &ClusterTxn, rel: RelId) -> bool {
        self.nodes
            .iter()
            .zip(&txn.parts)
            .any(|(dn, part)| dn.has_bulk_loaded(part, rel))
    }

    pub fn bulk_load(&self, txn: &mut ClusterTxn, rel: RelId) -> PgResult<ClusterBulkLoad> {
        if let Some(dn) = self.single() {
            return Ok(ClusterBulkLoad::One(dn.bulk_load(&mut txn.parts[0], rel)?));
        }
        let loads = self
            .nodes
            .iter()
            .zip(&mut txn.parts)
            .map(|(dn, part)| dn.bulk_load(part, rel))
            .collect::<PgResult<Vec<_>>>()?;
        Ok(ClusterBulkLoad::split(
            loads,
            self.placements.of(rel)?,
            self.placements.map().clone(),
        ))
    }
}

impl ClusterTxn {
    pub fn start_ts(&self) -> Timestamp {
        self.parts[0].start_ts()
    }

    pub fn savepoint(&self) -> ClusterSavepoint {
        ClusterSavepoint(self.parts.iter().map(DatanodeTxn::savepoint).collect())
    }

    /// Undoes the writes and increments made after `sp` on every datanode.
    pub fn rollback_to(&mut self, sp: &ClusterSavepoint) -> PgResult<()> {
        for (part, sp) in self.parts.iter_mut().zip(&sp.0) {
            part.rollback_to(sp)?;
        }
        Ok(())
    }

    pub fn has_increments(&self) -> bool {
        self.parts.iter().any(DatanodeTxn::has_increments)
    }
}
