//! The coordinator's interface to a datanode (decision 0027).
//!
//! Each type is an enum whose variants are the implementations: `Local` calls the datanode
//! of this process (`meridian start`); `Remote` sends `datanode-proto` messages over a
//! `Link` to a datanode process. The coordinator names only these types, never
//! `datanode::Datanode` or `datanode::Txn`.
//!
//! Calls that may wait return the local datanode's future itself (`Either::Left`), not a
//! future of their own around it, so the embedded server's futures are what they were
//! without this crate (their size is on the hot path); the remote ones are boxed
//! (`Either::Right`), where a network round trip dwarfs the allocation.
//!
//! Writes that return nothing a statement waits for (`put`, `own_relation`,
//! `DatanodeTxn::rollback_to`) are synchronous: a remote transaction queues them and sends
//! them with its next read, lock or commit. Everything that may wait is async.

mod remote;

use datanode::{Datanode, Txn};
use futures::future::{BoxFuture, Either};
use pgerror::{PgError, PgResult};
use sql::pushdown::ScanWork;
use std::future::Future;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

pub use datanode::storage::Chunk;
pub use datanode::{
    unknown_gid, ColumnIncrement, DatanodeOptions, IncrementOp, Isolation, LockWait, PreparedXact,
    RelId, RowBytes, Timestamp,
};
pub use datanode_proto::Link;
pub use remote::{RemoteDatanode, RemotePrepared, RemoteTxn};

/// A datanode, as the coordinator reaches it.
#[derive(Clone)]
pub enum DatanodeClient {
    Local(Arc<Datanode>),
    Remote(Arc<RemoteDatanode>),
}

/// A transaction's part on one datanode: its snapshot, writes and locks there.
pub enum DatanodeTxn {
    Local(Box<Txn>),
    Remote(Box<RemoteTxn>),
}

/// A transaction's part on one datanode, prepared (`DatanodeClient::prepare`): it waits
/// for `commit_prepared` or `abort_prepared`. Dropping a `Local` one aborts it; a `Remote`
/// one is aborted when its connection ends.
pub enum PreparedTxn {
    Local(datanode::PreparedTxn),
    Remote(RemotePrepared),
}

/// A point of a transaction that `DatanodeTxn::rollback_to` can go back to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Savepoint {
    Local(datanode::Savepoint),
    Remote(u32),
}

/// The pages a remote datanode's scans fetched, and the rows (or partial-aggregate
/// groups) the pages brought.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanTraffic {
    pub pages: u64,
    pub rows: u64,
}

/// The rows of a range scan, in key order.
pub enum DatanodeScan<'a, T> {
    Local(datanode::ScanRows<'a, T>),
    Remote(remote::RemoteScan<'a>),
}

/// A bulk load of new rows into a relation the transaction owns.
pub enum DatanodeBulkLoad {
    Local(datanode::storage::BulkLoad),
    Remote(remote::RemoteBulkLoad),
}

/// What a scan hands out: a row with its key, or the row alone.
pub trait ScanItem: Sized {
    /// Whether the scan must carry keys.
    const KEYS: bool;
    fn from_pair(key: Vec<u8>, row: RowBytes) -> Self;
}

impl ScanItem for (Vec<u8>, RowBytes) {
    const KEYS: bool = true;
    fn from_pair(key: Vec<u8>, row: RowBytes) -> Self {
        (key, row)
    }
}

impl ScanItem for RowBytes {
    const KEYS: bool = false;
    fn from_pair(_key: Vec<u8>, row: RowBytes) -> Self {
        row
    }
}

/// A transaction of one implementation handed to another: a bug in the caller.
fn mismatch() -> PgError {
    PgError::internal("a transaction was used with a datanode it does not belong to")
}

fn failed<'f, T: Send + 'f>(e: PgError) -> BoxFuture<'f, PgResult<T>> {
    Box::pin(std::future::ready(Err(e)))
}

impl DatanodeClient {
    /// Opens the datanode of this process (the embedded server) and starts its garbage
    /// collection, which asks `gtm` for the horizon every `gc_interval`. With
    /// `through_messages`, every call goes through the protocol's messages and the
    /// datanode's service side (`datanode_service::InProcessLink`), as between processes
    /// but without a socket: the protocol path, testable with everything that runs
    /// against the embedded server.
    pub fn open_local(
        options: DatanodeOptions,
        gtm: gtm::GtmClient,
        gc_interval: Duration,
        through_messages: bool,
    ) -> PgResult<DatanodeClient> {
        let datanode = Datanode::open(options)?;
        datanode.start_gc(gtm.clone(), gc_interval);
        datanode.start_resolver(gtm.clone());
        if !through_messages {
            return Ok(DatanodeClient::Local(datanode));
        }
        let service = datanode_service::DatanodeService::new(datanode, gtm);
        Ok(DatanodeClient::remote(Arc::new(
            datanode_service::InProcessLink(Arc::new(service)),
        )))
    }

    /// The datanode process at `addr` (`meridian datanode`), over TCP. Connects on first
    /// use.
    pub fn connect(addr: &str) -> DatanodeClient {
        DatanodeClient::remote(Arc::new(remote::NetworkLink::new(addr)))
    }

    /// Whether the datanode is reachable as far as this client knows (its connection is
    /// up; always, in process).
    pub fn is_connected(&self) -> bool {
        match self {
            DatanodeClient::Local(_) => true,
            DatanodeClient::Remote(r) => r.is_connected(),
        }
    }

    /// A datanode reached through `link`.
    pub fn remote(link: Arc<dyn Link>) -> DatanodeClient {
        DatanodeClient::Remote(Arc::new(RemoteDatanode::new(link)))
    }

    /// Writes (`Some`) or deletes (`None`) one catalog record, durably.
    pub async fn meta_put(&self, key: &[u8], value: Option<&[u8]>) -> PgResult<()> {
        match self {
            DatanodeClient::Local(dn) => dn.meta_put(key, value),
            DatanodeClient::Remote(r) => {
                let request = datanode_proto::Request::MetaPut {
                    key: key.to_vec(),
                    value: value.map(<[u8]>::to_vec),
                };
                r.call(request).await.map(|_| ())
            }
        }
    }

    /// The catalog records whose keys start with `prefix`, in key order.
    pub async fn meta_scan(&self, prefix: &[u8]) -> PgResult<Vec<(Vec<u8>, Vec<u8>)>> {
        match self {
            DatanodeClient::Local(dn) => dn.meta_scan(prefix),
            DatanodeClient::Remote(r) => {
                let request = datanode_proto::Request::MetaScan {
                    prefix: prefix.to_vec(),
                };
                match r.call(request).await? {
                    datanode_proto::Response::Meta(records) => Ok(records),
                    other => Err(remote::unexpected(&other)),
                }
            }
        }
    }

    /// A new, empty storage relation.
    pub async fn create_rel(&self) -> PgResult<RelId> {
        match self {
            DatanodeClient::Local(dn) => dn.create_rel(),
            DatanodeClient::Remote(r) => r.id(datanode_proto::Request::CreateRel).await,
        }
    }

    /// Makes relation id `rel`, which another datanode handed out (`create_rel`), usable
    /// on this one; `create_rel` here never returns it or a lower id afterwards.
    /// Idempotent.
    pub async fn create_rel_at(&self, rel: RelId) -> PgResult<()> {
        match self {
            DatanodeClient::Local(dn) => dn.create_rel_at(rel),
            DatanodeClient::Remote(r) => r
                .call(datanode_proto::Request::CreateRelAt { rel })
                .await
                .map(|_| ()),
        }
    }

    pub async fn drop_rel(&self, rel: RelId) -> PgResult<()> {
        match self {
            DatanodeClient::Local(dn) => dn.drop_rel(rel),
            DatanodeClient::Remote(r) => r
                .call(datanode_proto::Request::DropRel { rel })
                .await
                .map(|_| ()),
        }
    }

    /// Reserves `n` row ids of `rel` and returns the first.
    pub async fn allocate_row_ids(&self, rel: RelId, n: u64) -> PgResult<u64> {
        match self {
            DatanodeClient::Local(dn) => dn.allocate_row_ids(rel, n),
            DatanodeClient::Remote(r) => {
                r.id(datanode_proto::Request::AllocateRowIds { rel, n })
                    .await
            }
        }
    }

    /// Removes the versions of `rel` no snapshot can see; the number removed, or None if
    /// the relation was skipped (it holds one version per key).
    pub async fn vacuum(&self, rel: RelId) -> PgResult<Option<u64>> {
        match self {
            DatanodeClient::Local(dn) => dn.vacuum(rel),
            DatanodeClient::Remote(r) => {
                match r.call(datanode_proto::Request::Vacuum { rel }).await? {
                    datanode_proto::Response::Vacuumed(n) => Ok(n),
                    other => Err(remote::unexpected(&other)),
                }
            }
        }
    }

    /// The datanode's wait-for edges (waiter start ts, blocker start ts), for distributed
    /// deadlock detection.
    pub async fn wait_for_edges(&self) -> PgResult<Vec<(Timestamp, Timestamp)>> {
        match self {
            DatanodeClient::Local(dn) => Ok(dn.wait_for_edges()),
            DatanodeClient::Remote(r) => {
                match r.call(datanode_proto::Request::WaitForEdges).await? {
                    datanode_proto::Response::Edges(edges) => Ok(edges),
                    other => Err(remote::unexpected(&other)),
                }
            }
        }
    }

    /// Ends the lock waits of the transaction that started at `start_ts` with 40P01
    /// (`Datanode::cancel_waits_of`); whether it was waiting there.
    pub async fn cancel_waits_of(&self, start_ts: Timestamp, detail: String) -> PgResult<bool> {
        match self {
            DatanodeClient::Local(dn) => Ok(dn.cancel_waits_of(start_ts, detail)),
            DatanodeClient::Remote(r) => {
                let request = datanode_proto::Request::CancelWaits { start_ts, detail };
                match r.call(request).await? {
                    datanode_proto::Response::Cancelled(ended) => Ok(ended),
                    other => Err(remote::unexpected(&other)),
                }
            }
        }
    }

    pub fn begin(&self, start_ts: Timestamp, isolation: Isolation) -> DatanodeTxn {
        match self {
            DatanodeClient::Local(dn) => DatanodeTxn::Local(dn.begin(start_ts, isolation)),
            DatanodeClient::Remote(r) => {
                DatanodeTxn::Remote(Box::new(r.begin(start_ts, isolation)))
            }
        }
    }

    /// The row under `key` at `snapshot`, the transaction's own writes included.
    pub fn get<'f>(
        &'f self,
        txn: &'f DatanodeTxn,
        rel: RelId,
        key: &'f [u8],
        snapshot: Timestamp,
    ) -> impl Future<Output = PgResult<Option<RowBytes>>> + Send + 'f {
        self.get_row(txn, rel, key, snapshot, false)
    }

    /// `get`; with `presence_only` for a caller that only asks whether the row exists
    /// (see `Datanode::get_row`).
    pub fn get_row<'f>(
        &'f self,
        txn: &'f DatanodeTxn,
        rel: RelId,
        key: &'f [u8],
        snapshot: Timestamp,
        presence_only: bool,
    ) -> impl Future<Output = PgResult<Option<RowBytes>>> + Send + 'f {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => {
                Either::Left(dn.get_row(t, rel, key, snapshot, presence_only))
            }
            (DatanodeClient::Remote(r), DatanodeTxn::Remote(t)) => Either::Right(Box::pin(
                r.get_row(t, rel, key, snapshot, presence_only),
            )
                as BoxFuture<'f, _>),
            _ => Either::Right(failed(mismatch())),
        }
    }

    /// The rows of `rel` in `[lo, hi)` with their keys, own writes merged in.
    pub async fn scan<'a>(
        &'a self,
        txn: &'a DatanodeTxn,
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
    ) -> PgResult<DatanodeScan<'a, (Vec<u8>, RowBytes)>> {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => Ok(DatanodeScan::Local(
                dn.scan(t, rel, lo, hi, snapshot).await?,
            )),
            (DatanodeClient::Remote(r), DatanodeTxn::Remote(t)) => Ok(DatanodeScan::Remote(
                remote::RemoteScan::new(r, t, rel, lo, hi, snapshot, true, None),
            )),
            _ => Err(mismatch()),
        }
    }

    /// `scan` whose `work` the datanode does (decision 0033): the rows that pass its
    /// filter, or their partial aggregation; with their keys if `keys`. Only a remote
    /// datanode takes one (a cluster's; the embedded server never pushes work down).
    #[allow(clippy::too_many_arguments)]
    pub fn scan_pushed<'a>(
        &'a self,
        txn: &'a DatanodeTxn,
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
        keys: bool,
        work: ScanWork,
    ) -> PgResult<DatanodeScan<'a, (Vec<u8>, RowBytes)>> {
        match (self, txn) {
            (DatanodeClient::Remote(r), DatanodeTxn::Remote(t)) => Ok(DatanodeScan::Remote(
                remote::RemoteScan::new(r, t, rel, lo, hi, snapshot, keys, Some(Box::new(work))),
            )),
            (DatanodeClient::Local(_), _) => Err(PgError::internal(
                "a scan's work was pushed to the datanode of this process",
            )),
            _ => Err(mismatch()),
        }
    }

    /// What scans fetched from this datanode, for a remote one; None in process (its
    /// scans move no rows).
    pub fn scan_traffic(&self) -> Option<ScanTraffic> {
        match self {
            DatanodeClient::Local(_) => None,
            DatanodeClient::Remote(r) => Some(r.scan_traffic()),
        }
    }

    /// `scan` without the keys.
    pub async fn scan_rows<'a>(
        &'a self,
        txn: &'a DatanodeTxn,
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
    ) -> PgResult<DatanodeScan<'a, RowBytes>> {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => Ok(DatanodeScan::Local(
                dn.scan_rows(t, rel, lo, hi, snapshot).await?,
            )),
            (DatanodeClient::Remote(r), DatanodeTxn::Remote(t)) => Ok(DatanodeScan::Remote(
                remote::RemoteScan::new(r, t, rel, lo, hi, snapshot, false, None),
            )),
            _ => Err(mismatch()),
        }
    }

    /// Takes the row's exclusive lock (waiting for its holder, or failing with 55P03 as
    /// `wait` says) and returns its newest committed version.
    pub fn lock_row<'f>(
        &'f self,
        txn: &'f mut DatanodeTxn,
        rel: RelId,
        key: &'f [u8],
        wait: LockWait,
    ) -> impl Future<Output = PgResult<Option<RowBytes>>> + Send + 'f {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => {
                Either::Left(dn.lock_row_as(t, rel, key, wait))
            }
            (DatanodeClient::Remote(r), DatanodeTxn::Remote(t)) => {
                Either::Right(Box::pin(r.lock_row(t, rel, key, wait)) as BoxFuture<'f, _>)
            }
            _ => Either::Right(failed(mismatch())),
        }
    }

    /// Adds `increments` to the row under `key` (see `Datanode::increment`): Some(whether
    /// the row exists), or None if the caller must take the ordinary path.
    pub fn increment<'f>(
        &'f self,
        txn: &'f mut DatanodeTxn,
        rel: RelId,
        key: &'f [u8],
        increments: Vec<ColumnIncrement>,
    ) -> impl Future<Output = PgResult<Option<bool>>> + Send + 'f {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => {
                Either::Left(dn.increment(t, rel, key, increments))
            }
            (DatanodeClient::Remote(r), DatanodeTxn::Remote(t)) => {
                Either::Right(Box::pin(r.increment(t, rel, key, increments)) as BoxFuture<'f, _>)
            }
            _ => Either::Right(failed(mismatch())),
        }
    }

    /// Applies the transaction's deferred increments before it reads their rows.
    pub fn apply_increments<'f>(
        &'f self,
        txn: &'f mut DatanodeTxn,
    ) -> impl Future<Output = PgResult<()>> + Send + 'f {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => {
                Either::Left(dn.apply_increments(t))
            }
            (DatanodeClient::Remote(r), DatanodeTxn::Remote(t)) => {
                Either::Right(Box::pin(r.apply_increments(t)) as BoxFuture<'f, _>)
            }
            _ => Either::Right(failed(mismatch())),
        }
    }

    /// Writes (`Some`) or deletes (`None`) the row under `key`, whose lock the
    /// transaction holds.
    pub fn put(
        &self,
        txn: &mut DatanodeTxn,
        rel: RelId,
        key: &[u8],
        row: Option<RowBytes>,
    ) -> PgResult<()> {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => dn.put(t, rel, key, row),
            (DatanodeClient::Remote(_), DatanodeTxn::Remote(t)) => {
                t.put(rel, key, row);
                Ok(())
            }
            _ => Err(mismatch()),
        }
    }

    /// Writes a row under a key no one else can hold (a fresh row id).
    pub fn put_new_key<'f>(
        &'f self,
        txn: &'f mut DatanodeTxn,
        rel: RelId,
        key: &'f [u8],
        row: RowBytes,
    ) -> impl Future<Output = PgResult<()>> + Send + 'f {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => {
                Either::Left(dn.put_new_key(t, rel, key, row))
            }
            (DatanodeClient::Remote(r), DatanodeTxn::Remote(t)) => {
                Either::Right(Box::pin(r.put_new_key(t, rel, key, row)) as BoxFuture<'f, _>)
            }
            _ => Either::Right(failed(mismatch())),
        }
    }

    /// Inserts a row under a primary key, failing with `unique_violation()` if a row holds
    /// the key.
    pub fn insert<'f>(
        &'f self,
        txn: &'f mut DatanodeTxn,
        rel: RelId,
        key: &'f [u8],
        row: RowBytes,
        unique_violation: impl FnOnce() -> PgError + Send + 'f,
    ) -> impl Future<Output = PgResult<()>> + Send + 'f {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => {
                Either::Left(dn.insert(t, rel, key, row, unique_violation))
            }
            (DatanodeClient::Remote(r), DatanodeTxn::Remote(t)) => Either::Right(
                Box::pin(r.insert(t, rel, key, row, unique_violation)) as BoxFuture<'f, _>,
            ),
            _ => Either::Right(failed(mismatch())),
        }
    }

    /// Commits, returning the commit timestamp.
    pub fn commit<'f>(
        &'f self,
        txn: DatanodeTxn,
        gtm: &'f gtm::GtmClient,
    ) -> impl Future<Output = PgResult<Timestamp>> + Send + 'f {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => Either::Left(dn.commit(t, gtm)),
            (DatanodeClient::Remote(r), DatanodeTxn::Remote(t)) => {
                Either::Right(Box::pin(r.commit(*t, gtm)) as BoxFuture<'f, _>)
            }
            _ => Either::Right(failed(mismatch())),
        }
    }

    pub fn abort<'f>(
        &'f self,
        txn: DatanodeTxn,
        gtm: &'f gtm::GtmClient,
    ) -> impl Future<Output = ()> + Send + 'f {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => Either::Left(dn.abort(t, gtm)),
            (DatanodeClient::Remote(r), DatanodeTxn::Remote(t)) => {
                Either::Right(Box::pin(r.abort(*t, gtm)) as BoxFuture<'f, ()>)
            }
            _ => {
                tracing::error!("{}", mismatch());
                Either::Right(Box::pin(std::future::ready(())) as BoxFuture<'f, ()>)
            }
        }
    }

    /// First phase of a commit across datanodes (decision 0029): the transaction's part
    /// here keeps its locks and waits, prepared, for `commit_prepared` or
    /// `abort_prepared`. Calls no GTM: the caller takes the commit timestamp and finishes
    /// the start timestamp there. A remote transaction that sent nothing sends nothing.
    pub async fn prepare(&self, txn: DatanodeTxn) -> PgResult<PreparedTxn> {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => {
                Ok(PreparedTxn::Local(dn.prepare(t).await?))
            }
            (DatanodeClient::Remote(r), DatanodeTxn::Remote(t)) => {
                Ok(PreparedTxn::Remote(r.prepare(*t).await?))
            }
            _ => Err(mismatch()),
        }
    }

    /// Commits a prepared transaction at `ts`, the commit timestamp the caller took from
    /// the GTM for the whole transaction.
    pub async fn commit_prepared(&self, prepared: PreparedTxn, ts: Timestamp) -> PgResult<()> {
        match (self, prepared) {
            (DatanodeClient::Local(_), PreparedTxn::Local(p)) => p.commit(ts).await.map(|_| ()),
            (DatanodeClient::Remote(r), PreparedTxn::Remote(p)) => r.commit_prepared(p, ts).await,
            _ => Err(mismatch()),
        }
    }

    /// Aborts a prepared transaction and releases its locks.
    pub async fn abort_prepared(&self, prepared: PreparedTxn) {
        match (self, prepared) {
            (DatanodeClient::Local(_), PreparedTxn::Local(p)) => p.abort().await,
            (DatanodeClient::Remote(r), PreparedTxn::Remote(p)) => r.abort_prepared(p).await,
            _ => tracing::error!("{}", mismatch()),
        }
    }

    /// Hands a prepared transaction to the datanode's resolver, which asks the GTM for its
    /// outcome: for a caller that could not learn it (decision 0029).
    pub async fn resolve_later(&self, prepared: PreparedTxn) {
        match (self, prepared) {
            (DatanodeClient::Local(dn), PreparedTxn::Local(p)) => dn.resolve_later(p).await,
            (DatanodeClient::Remote(r), PreparedTxn::Remote(p)) => r.resolve_later(p).await,
            _ => tracing::error!("{}", mismatch()),
        }
    }

    /// Prepares the transaction's part here under `xact.gid` (SQL's PREPARE TRANSACTION;
    /// `xact.start_ts` is set from the transaction): from then on it belongs to the
    /// datanode, not to this session or connection, and ends by `commit_gid` or
    /// `abort_gid` from anyone. 42710 if the gid is in use here; on any failure the part
    /// is aborted. Calls no GTM, as `prepare`.
    pub async fn prepare_as(&self, txn: DatanodeTxn, xact: PreparedXact) -> PgResult<()> {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => dn.prepare_as(t, xact).await,
            (DatanodeClient::Remote(r), DatanodeTxn::Remote(t)) => r.prepare_as(*t, xact).await,
            _ => Err(mismatch()),
        }
    }

    /// Makes readers wait for the part prepared here under `gid` before its commit
    /// timestamp is taken (`Datanode::commit_gid_pending`); 42704 if there is none.
    pub async fn commit_gid_pending(&self, gid: &str) -> PgResult<()> {
        match self {
            DatanodeClient::Local(dn) => dn.commit_gid_pending(gid),
            DatanodeClient::Remote(r) => {
                let request = datanode_proto::Request::CommitGidPending {
                    gid: gid.to_string(),
                };
                r.call(request).await.map(|_| ())
            }
        }
    }

    /// Commits the part prepared here under `gid` at `ts`; 42704 if there is none.
    pub async fn commit_gid(&self, gid: &str, ts: Timestamp) -> PgResult<()> {
        match self {
            DatanodeClient::Local(dn) => dn.commit_gid(gid, ts).await.map(|_| ()),
            DatanodeClient::Remote(r) => {
                let request = datanode_proto::Request::CommitGid {
                    gid: gid.to_string(),
                    ts,
                };
                match r.call(request).await? {
                    datanode_proto::Response::Committed(_) => Ok(()),
                    other => Err(remote::unexpected(&other)),
                }
            }
        }
    }

    /// Aborts the part prepared here under `gid`; 42704 if there is none.
    pub async fn abort_gid(&self, gid: &str) -> PgResult<()> {
        match self {
            DatanodeClient::Local(dn) => dn.abort_gid(gid).await,
            DatanodeClient::Remote(r) => {
                let request = datanode_proto::Request::AbortGid {
                    gid: gid.to_string(),
                };
                r.call(request).await.map(|_| ())
            }
        }
    }

    /// The parts prepared here under a gid, by gid.
    pub async fn prepared_xacts(&self) -> PgResult<Vec<PreparedXact>> {
        match self {
            DatanodeClient::Local(dn) => Ok(dn.prepared_xacts()),
            DatanodeClient::Remote(r) => {
                match r.call(datanode_proto::Request::PreparedXacts).await? {
                    datanode_proto::Response::PreparedXacts(xacts) => Ok(xacts
                        .into_iter()
                        .map(datanode_service::xact_from_proto)
                        .collect()),
                    other => Err(remote::unexpected(&other)),
                }
            }
        }
    }

    /// Gives the transaction `rel` (a relation it created or truncated) until it ends:
    /// others wait for it, and it may bulk-load into it.
    pub fn own_relation(&self, txn: &mut DatanodeTxn, rel: RelId) {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => dn.own_relation(t, rel),
            (_, DatanodeTxn::Remote(t)) => t.own_relation(rel),
            _ => tracing::error!("{}", mismatch()),
        }
    }

    pub fn can_bulk_load(&self, txn: &DatanodeTxn, rel: RelId) -> bool {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => dn.can_bulk_load(t, rel),
            (_, DatanodeTxn::Remote(t)) => t.can_bulk_load(rel),
            _ => false,
        }
    }

    pub fn has_bulk_loaded(&self, txn: &DatanodeTxn, rel: RelId) -> bool {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => dn.has_bulk_loaded(t, rel),
            (_, DatanodeTxn::Remote(t)) => t.has_bulk_loaded(rel),
            _ => false,
        }
    }

    pub fn bulk_load(&self, txn: &mut DatanodeTxn, rel: RelId) -> PgResult<DatanodeBulkLoad> {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => {
                Ok(DatanodeBulkLoad::Local(dn.bulk_load(t, rel)?))
            }
            (DatanodeClient::Remote(r), DatanodeTxn::Remote(t)) => {
                Ok(DatanodeBulkLoad::Remote(r.bulk_load(t, rel)))
            }
            _ => Err(mismatch()),
        }
    }
}

impl DatanodeTxn {
    pub fn start_ts(&self) -> Timestamp {
        match self {
            DatanodeTxn::Local(t) => t.start_ts(),
            DatanodeTxn::Remote(t) => t.start_ts(),
        }
    }

    pub fn savepoint(&self) -> Savepoint {
        match self {
            DatanodeTxn::Local(t) => Savepoint::Local(t.savepoint()),
            DatanodeTxn::Remote(t) => Savepoint::Remote(t.savepoint()),
        }
    }

    /// Undoes the writes and increments made after `sp`.
    pub fn rollback_to(&mut self, sp: &Savepoint) -> PgResult<()> {
        match (self, sp) {
            (DatanodeTxn::Local(t), Savepoint::Local(sp)) => t.rollback_to(sp),
            (DatanodeTxn::Remote(t), Savepoint::Remote(id)) => {
                t.rollback_to(*id);
                Ok(())
            }
            _ => Err(mismatch()),
        }
    }

    /// Whether it wrote, queued a write, incremented, owned or bulk-loaded anything here:
    /// a participant of a commit across datanodes that must be prepared (one that only
    /// read, even under row locks, need not).
    pub fn has_writes(&self) -> bool {
        match self {
            DatanodeTxn::Local(t) => t.changes_anything(),
            DatanodeTxn::Remote(t) => t.has_writes(),
        }
    }

    /// Whether the transaction exists on its datanode only as a start timestamp: a remote
    /// part of a transaction across datanodes that nothing was sent to (ending it is
    /// telling the GTM, once for all parts).
    pub fn is_untouched(&self) -> bool {
        match self {
            DatanodeTxn::Local(_) => false,
            DatanodeTxn::Remote(t) => t.sent_nothing(),
        }
    }

    /// Whether its commit validates what it read (decision 0044).
    pub fn is_serializable(&self) -> bool {
        match self {
            DatanodeTxn::Local(t) => t.isolation() == Isolation::Serializable,
            DatanodeTxn::Remote(t) => t.isolation == Isolation::Serializable,
        }
    }

    /// Whether increments wait to be applied (`DatanodeClient::apply_increments`).
    pub fn has_increments(&self) -> bool {
        match self {
            DatanodeTxn::Local(t) => t.has_increments(),
            DatanodeTxn::Remote(t) => t.has_increments(),
        }
    }
}

impl<T: ScanItem> DatanodeScan<'_, T> {
    /// The next row, or None at the end.
    pub async fn next(&mut self) -> Option<PgResult<T>> {
        match self {
            DatanodeScan::Local(rows) => rows.next(),
            DatanodeScan::Remote(scan) => scan
                .next()
                .await
                .map(|r| r.map(|(key, row)| T::from_pair(key, row))),
        }
    }
}

impl DatanodeBulkLoad {
    /// An empty chunk to fill (a recycled one when there is one).
    pub fn empty_chunk(&self) -> Chunk {
        match self {
            DatanodeBulkLoad::Local(load) => load.empty_chunk(),
            DatanodeBulkLoad::Remote(_) => Chunk::default(),
        }
    }

    /// Sends a chunk of rows, keys ascending across chunks; waits while the loader is
    /// behind.
    pub async fn write(&mut self, chunk: Chunk) -> PgResult<()> {
        match self {
            DatanodeBulkLoad::Local(load) => load.write(chunk).await,
            DatanodeBulkLoad::Remote(load) => {
                let rows = chunk
                    .iter()
                    .map(|(k, r)| (k.to_vec(), RowBytes::copy_from_slice(r)))
                    .collect();
                load.write(rows).await
            }
        }
    }

    /// Ends the load, waits until its rows are stored, and returns how many there were.
    pub async fn finish(self) -> PgResult<u64> {
        match self {
            DatanodeBulkLoad::Local(load) => load.finish().await,
            DatanodeBulkLoad::Remote(load) => load.finish().await,
        }
    }
}
