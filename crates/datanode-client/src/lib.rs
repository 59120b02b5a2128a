//! The coordinator's interface to a datanode (decision 0027).
//!
//! Each type is an enum whose variants are the implementations: `Local` calls a datanode
//! in the same process (`meridian start`). A network variant, speaking to `meridian
//! datanode`, comes with the cluster. The coordinator names only these types, never
//! `datanode::Datanode` or `datanode::Txn`.
//!
//! Calls that may wait return the implementation's future itself rather than wrapping it
//! in one of their own, so the embedded server's futures are exactly what they were
//! without this crate (their size is on the hot path); a second implementation makes
//! them an `Either`.
//!
//! Writes that return nothing a statement waits for (`put`, `own_relation`,
//! `DatanodeTxn::rollback_to`) are synchronous, so a remote transaction can queue them and
//! send them with its next read, lock or commit. Everything that may wait is async.

use datanode::{Datanode, Txn};
use pgerror::{PgError, PgResult};
use std::future::Future;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

pub use datanode::storage::Chunk;
pub use datanode::{
    ColumnIncrement, DatanodeOptions, IncrementOp, Isolation, RelId, RowBytes, Savepoint, Timestamp,
};

/// A datanode, as the coordinator reaches it.
#[derive(Clone)]
pub enum DatanodeClient {
    Local(Arc<Datanode>),
}

/// A transaction's part on one datanode: its snapshot, writes and locks there.
pub enum DatanodeTxn {
    Local(Box<Txn>),
}

/// The rows of a range scan, in key order.
pub enum DatanodeScan<'a, T> {
    Local(datanode::ScanRows<'a, T>),
}

/// A bulk load of new rows into a relation the transaction owns.
pub enum DatanodeBulkLoad {
    Local(datanode::storage::BulkLoad),
}

impl DatanodeClient {
    /// Opens the datanode of this process (the embedded server) and starts its garbage
    /// collection, which asks `gtm` for the horizon every `gc_interval`.
    pub fn open_local(
        options: DatanodeOptions,
        gtm: gtm::GtmClient,
        gc_interval: Duration,
    ) -> PgResult<DatanodeClient> {
        let datanode = Datanode::open(options)?;
        datanode.start_gc(gtm, gc_interval);
        Ok(DatanodeClient::Local(datanode))
    }

    /// Writes (`Some`) or deletes (`None`) one catalog record, durably.
    pub fn meta_put(&self, key: &[u8], value: Option<&[u8]>) -> PgResult<()> {
        match self {
            DatanodeClient::Local(dn) => dn.meta_put(key, value),
        }
    }

    /// The catalog records whose keys start with `prefix`, in key order.
    pub fn meta_scan(&self, prefix: &[u8]) -> PgResult<Vec<(Vec<u8>, Vec<u8>)>> {
        match self {
            DatanodeClient::Local(dn) => dn.meta_scan(prefix),
        }
    }

    /// A new, empty storage relation.
    pub fn create_rel(&self) -> PgResult<RelId> {
        match self {
            DatanodeClient::Local(dn) => dn.create_rel(),
        }
    }

    pub fn drop_rel(&self, rel: RelId) -> PgResult<()> {
        match self {
            DatanodeClient::Local(dn) => dn.drop_rel(rel),
        }
    }

    /// Reserves `n` row ids of `rel` and returns the first.
    pub fn allocate_row_ids(&self, rel: RelId, n: u64) -> PgResult<u64> {
        match self {
            DatanodeClient::Local(dn) => dn.allocate_row_ids(rel, n),
        }
    }

    /// Removes the versions of `rel` no snapshot can see; the number removed, or None if
    /// the relation was skipped (it holds one version per key).
    pub fn vacuum(&self, rel: RelId) -> PgResult<Option<u64>> {
        match self {
            DatanodeClient::Local(dn) => dn.vacuum(rel),
        }
    }

    pub fn begin(&self, start_ts: Timestamp, isolation: Isolation) -> DatanodeTxn {
        match self {
            DatanodeClient::Local(dn) => DatanodeTxn::Local(dn.begin(start_ts, isolation)),
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
                dn.get_row(t, rel, key, snapshot, presence_only)
            }
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
        }
    }

    /// Takes the row's exclusive lock (waiting for its holder) and returns its newest
    /// committed version.
    pub fn lock_row<'f>(
        &'f self,
        txn: &'f mut DatanodeTxn,
        rel: RelId,
        key: &'f [u8],
    ) -> impl Future<Output = PgResult<Option<RowBytes>>> + Send + 'f {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => dn.lock_row(t, rel, key),
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
                dn.increment(t, rel, key, increments)
            }
        }
    }

    /// Applies the transaction's deferred increments before it reads their rows.
    pub fn apply_increments<'f>(
        &'f self,
        txn: &'f mut DatanodeTxn,
    ) -> impl Future<Output = PgResult<()>> + Send + 'f {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => dn.apply_increments(t),
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
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => dn.put_new_key(t, rel, key, row),
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
                dn.insert(t, rel, key, row, unique_violation)
            }
        }
    }

    /// Commits, returning the commit timestamp.
    pub fn commit<'f>(
        &'f self,
        txn: DatanodeTxn,
        gtm: &'f gtm::GtmClient,
    ) -> impl Future<Output = PgResult<Timestamp>> + Send + 'f {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => dn.commit(t, gtm),
        }
    }

    pub fn abort<'f>(
        &'f self,
        txn: DatanodeTxn,
        gtm: &'f gtm::GtmClient,
    ) -> impl Future<Output = ()> + Send + 'f {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => dn.abort(t, gtm),
        }
    }

    /// Gives the transaction `rel` (a relation it created or truncated) until it ends:
    /// others wait for it, and it may bulk-load into it.
    pub fn own_relation(&self, txn: &mut DatanodeTxn, rel: RelId) {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => dn.own_relation(t, rel),
        }
    }

    pub fn can_bulk_load(&self, txn: &DatanodeTxn, rel: RelId) -> bool {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => dn.can_bulk_load(t, rel),
        }
    }

    pub fn has_bulk_loaded(&self, txn: &DatanodeTxn, rel: RelId) -> bool {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => dn.has_bulk_loaded(t, rel),
        }
    }

    pub fn bulk_load(&self, txn: &mut DatanodeTxn, rel: RelId) -> PgResult<DatanodeBulkLoad> {
        match (self, txn) {
            (DatanodeClient::Local(dn), DatanodeTxn::Local(t)) => {
                Ok(DatanodeBulkLoad::Local(dn.bulk_load(t, rel)?))
            }
        }
    }
}

impl DatanodeTxn {
    pub fn start_ts(&self) -> Timestamp {
        match self {
            DatanodeTxn::Local(t) => t.start_ts(),
        }
    }

    pub fn savepoint(&self) -> Savepoint {
        match self {
            DatanodeTxn::Local(t) => t.savepoint(),
        }
    }

    /// Undoes the writes and increments made after `sp`.
    pub fn rollback_to(&mut self, sp: &Savepoint) -> PgResult<()> {
        match self {
            DatanodeTxn::Local(t) => t.rollback_to(sp),
        }
    }

    /// Whether increments wait to be applied (`DatanodeClient::apply_increments`).
    pub fn has_increments(&self) -> bool {
        match self {
            DatanodeTxn::Local(t) => t.has_increments(),
        }
    }
}

impl<T> DatanodeScan<'_, T> {
    /// The next row, or None at the end.
    pub async fn next(&mut self) -> Option<PgResult<T>> {
        match self {
            DatanodeScan::Local(rows) => rows.next(),
        }
    }
}

impl DatanodeBulkLoad {
    /// An empty chunk to fill (a recycled one when there is one).
    pub fn empty_chunk(&self) -> Chunk {
        match self {
            DatanodeBulkLoad::Local(load) => load.empty_chunk(),
        }
    }

    /// Sends a chunk of rows, keys ascending across chunks; waits while the loader is
    /// behind.
    pub async fn write(&mut self, chunk: Chunk) -> PgResult<()> {
        match self {
            DatanodeBulkLoad::Local(load) => load.write(chunk).await,
        }
    }

    /// Ends the load, waits until its rows are stored, and returns how many there were.
    pub async fn finish(self) -> PgResult<u64> {
        match self {
            DatanodeBulkLoad::Local(load) => load.finish().await,
        }
    }
}
