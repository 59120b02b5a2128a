//! The `Remote` variant: a datanode reached through `datanode-proto` messages over a
//! `Link` (the network, or, for tests, a `DatanodeService` in the same process).
//!
//! A transaction's writes that answer nothing (`put`, `own_relation`, savepoints) are
//! queued here and sent with its next request, and its first request carries its
//! `begin`: a statement that writes rows and commits costs one round trip for the commit.

use crate::{RelId, RowBytes, Timestamp};
use datanode::{Isolation, LockWait};
use datanode_proto as proto;
use datanode_proto::{Link, Queued, Request, Response, TxnCall, TxnId, TxnRequest};
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use sql::pushdown::ScanWork;
use std::collections::{HashSet, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Rows a remote scan asks for at a time.
const SCAN_PAGE_ROWS: u32 = 1024;

/// Rows a pushed scan's page reads at most on the datanode (decision 0033): a filter that
/// keeps few rows answers within about this many rows' work, however many it skips.
const PUSHED_PAGE_EXAMINED: u32 = 16 * 1024;

/// A `Link` over TCP to a `meridian datanode` (`crates/rpc`): one connection shared by
/// the coordinator's sessions, reopened on the next call after it fails.
pub struct NetworkLink(rpc::Client<Request, Response>);

impl NetworkLink {
    pub fn new(addr: &str) -> NetworkLink {
        NetworkLink(rpc::Client::new(addr, rpc::ClientOptions::default()))
    }
}

impl Link for NetworkLink {
    fn call(&self, request: Request) -> futures::future::BoxFuture<'_, PgResult<Response>> {
        Box::pin(async move { self.0.call(&request).await })
    }

    fn is_connected(&self) -> bool {
        self.0.is_connected()
    }
}

/// A datanode in another process (or behind a test link).
pub struct RemoteDatanode {
    link: Arc<dyn Link>,
    next_txn: AtomicU64,
    /// Pages its scans fetched, and the rows (or partial-aggregate groups) they brought,
    /// for `meridian_nodes`.
    scan_pages: AtomicU64,
    rows_received: AtomicU64,
}

/// A transaction prepared on a remote datanode (`RemoteDatanode::prepare`).
pub struct RemotePrepared {
    id: TxnId,
    /// False for a transaction that never sent anything: nothing of it is there.
    on_datanode: bool,
}

/// A transaction's part on a remote datanode.
pub struct RemoteTxn {
    id: TxnId,
    start_ts: Timestamp,
    pub(crate) isolation: Isolation,
    /// What goes with the next request. Behind a mutex because reads, which take the
    /// transaction shared, send it too.
    pending: Mutex<Pending>,
    next_savepoint: AtomicU32,
    owned: HashSet<RelId>,
    written: HashSet<RelId>,
    loaded: HashSet<RelId>,
    /// Whether increments may be waiting on the datanode (cleared when applied).
    increments: bool,
}

#[derive(Default)]
struct Pending {
    begun: bool,
    queued: Vec<Queued>,
}

impl RemoteDatanode {
    pub fn is_connected(&self) -> bool {
        self.link.is_connected()
    }

    pub fn new(link: Arc<dyn Link>) -> RemoteDatanode {
        RemoteDatanode {
            link,
            next_txn: AtomicU64::new(1),
            scan_pages: AtomicU64::new(0),
            rows_received: AtomicU64::new(0),
        }
    }

    /// What scans have fetched from this datanode.
    pub fn scan_traffic(&self) -> crate::ScanTraffic {
        crate::ScanTraffic {
            pages: self.scan_pages.load(Ordering::Relaxed),
            rows: self.rows_received.load(Ordering::Relaxed),
        }
    }

    /// One request outside any transaction.
    pub async fn call(&self, request: Request) -> PgResult<Response> {
        match self.link.call(request).await? {
            Response::Error(e) => Err(e.into()),
            r => Ok(r),
        }
    }

    pub fn begin(&self, start_ts: Timestamp, isolation: Isolation) -> RemoteTxn {
        RemoteTxn {
            id: self.next_txn.fetch_add(1, Ordering::Relaxed),
            start_ts,
            isolation,
            pending: Mutex::new(Pending::default()),
            next_savepoint: AtomicU32::new(0),
            owned: HashSet::new(),
            written: HashSet::new(),
            loaded: HashSet::new(),
            increments: false,
        }
    }

    /// A request that answers an id.
    pub async fn id(&self, request: Request) -> PgResult<u64> {
        match self.call(request).await? {
            Response::Id(id) => Ok(id),
            other => Err(unexpected(&other)),
        }
    }

    /// `call` of the transaction, with its begin (if not sent yet) and queued writes.
    pub async fn txn_call(&self, txn: &RemoteTxn, call: TxnCall) -> PgResult<Response> {
        let request = match call.is_plain_read() {
            true => txn.read_request(call),
            false => txn.request(call),
        };
        let reply = self.link.call(request).await;
        match reply? {
            Response::Error(e) => Err(e.into()),
            r => Ok(r),
        }
    }

    pub async fn get_row(
        &self,
        txn: &RemoteTxn,
        rel: RelId,
        key: &[u8],
        snapshot: Timestamp,
        presence_only: bool,
    ) -> PgResult<Option<RowBytes>> {
        let call = TxnCall::Get {
            rel,
            key: key.to_vec(),
            snapshot,
            presence_only,
        };
        self.expect_row(txn, call).await
    }

    pub async fn lock_row(
        &self,
        txn: &mut RemoteTxn,
        rel: RelId,
        key: &[u8],
        wait: LockWait,
    ) -> PgResult<Option<RowBytes>> {
        let key = key.to_vec();
        let call = match wait {
            LockWait::Wait => TxnCall::LockRow { rel, key },
            LockWait::NoWait => TxnCall::LockRowNoWait { rel, key },
        };
        self.expect_row(txn, call).await
    }

    pub async fn increment(
        &self,
        txn: &mut RemoteTxn,
        rel: RelId,
        key: &[u8],
        increments: Vec<datanode::ColumnIncrement>,
    ) -> PgResult<Option<bool>> {
        let increments = increments
            .into_iter()
            .map(wire_increment)
            .collect::<PgResult<_>>()?;
        let call = TxnCall::Increment {
            rel,
            key: key.to_vec(),
            increments,
        };
        match self.txn_call(txn, call).await? {
            Response::Incremented(r) => {
                if r == Some(true) {
                    txn.increments = true;
                    txn.written.insert(rel);
                }
                Ok(r)
            }
            other => Err(unexpected(&other)),
        }
    }

    pub async fn apply_increments(&self, txn: &mut RemoteTxn) -> PgResult<()> {
        self.expect_done(txn, TxnCall::ApplyIncrements).await?;
        txn.increments = false;
        Ok(())
    }

    pub async fn put_new_key(
        &self,
        txn: &mut RemoteTxn,
        rel: RelId,
        key: &[u8],
        row: RowBytes,
    ) -> PgResult<()> {
        txn.written.insert(rel);
        let call = TxnCall::PutNewKey {
            rel,
            key: key.to_vec(),
            row,
        };
        self.expect_done(txn, call).await
    }

    pub async fn insert(
        &self,
        txn: &mut RemoteTxn,
        rel: RelId,
        key: &[u8],
        row: RowBytes,
        unique_violation: impl FnOnce() -> PgError,
    ) -> PgResult<()> {
        txn.written.insert(rel);
        let call = TxnCall::Insert {
            rel,
            key: key.to_vec(),
            row,
        };
        match self.expect_done(txn, call).await {
            // The datanode knows the key is taken, not how the statement words it.
            Err(e) if e.code == codes::UNIQUE_VIOLATION => Err(unique_violation()),
            r => r,
        }
    }

    /// Commits: the datanode takes the commit timestamp from the GTM. The start timestamp
    /// was registered with the GTM through this coordinator's connection, so this
    /// coordinator unregisters it (`gtm.finish`).
    pub async fn commit(&self, txn: RemoteTxn, gtm: &gtm::GtmClient) -> PgResult<Timestamp> {
        let result = if txn.sent_nothing() {
            Ok(txn.start_ts)
        } else {
            match self.txn_call(&txn, TxnCall::Commit).await {
                Ok(Response::Committed(ts)) => Ok(ts),
                Ok(other) => Err(unexpected(&other)),
                Err(e) => Err(e),
            }
        };
        // Nothing here needs the GTM's answer: the start only stops holding back the GC
        // horizon.
        gtm.finish_later(txn.start_ts);
        result
    }

    /// Aborts the transaction there without waiting for the answer: a session must not
    /// hang on a datanode that stopped answering (paused, or behind a partition) past
    /// its statement's end. The request is sent at once and the datanode applies it
    /// whenever it runs again (or aborts the transaction when this connection ends); a
    /// task waits for the answer, since dropping the call would cancel the request.
    pub async fn abort(self: &Arc<Self>, txn: RemoteTxn, gtm: &gtm::GtmClient) {
        let start_ts = txn.start_ts;
        if !txn.sent_nothing() {
            let datanode = self.clone();
            tokio::spawn(async move {
                if let Err(e) = datanode.expect_done(&txn, TxnCall::Abort).await {
                    // The datanode aborts it anyway when this connection ends.
                    tracing::warn!("abort on a remote datanode: {e}");
                }
            });
        }
        gtm.finish_later(start_ts);
    }

    /// Prepares the transaction there (with its begin and queued writes, if not sent yet).
    /// No GTM call: the coordinator decides and finishes.
    pub async fn prepare(&self, txn: RemoteTxn) -> PgResult<RemotePrepared> {
        let on_datanode = !txn.sent_nothing();
        if on_datanode {
            self.expect_done(&txn, TxnCall::Prepare).await?;
        }
        Ok(RemotePrepared {
            id: txn.id,
            on_datanode,
        })
    }

    /// Prepares the transaction there under `xact.gid`, with its begin even if it sent
    /// nothing yet (a prepared transaction that did nothing still has its gid).
    pub async fn prepare_as(&self, txn: RemoteTxn, xact: datanode::PreparedXact) -> PgResult<()> {
        let xact = datanode_service::xact_to_proto(xact);
        self.expect_done(&txn, TxnCall::PrepareAs(xact)).await
    }

    pub async fn commit_prepared(&self, prepared: RemotePrepared, ts: Timestamp) -> PgResult<()> {
        if !prepared.on_datanode {
            return Ok(());
        }
        match self
            .call(prepared.request(TxnCall::CommitPrepared { ts }))
            .await?
        {
            Response::Committed(_) => Ok(()),
            other => Err(unexpected(&other)),
        }
    }

    pub async fn abort_prepared(&self, prepared: RemotePrepared) {
        if prepared.on_datanode {
            if let Err(e) = self.call(prepared.request(TxnCall::Abort)).await {
                // When this connection ends, the datanode's resolver learns the abort
                // from the GTM (nothing was decided there).
                tracing::warn!("abort of a prepared transaction on a remote datanode: {e}");
            }
        }
    }

    pub async fn resolve_later(&self, prepared: RemotePrepared) {
        if prepared.on_datanode {
            if let Err(e) = self.call(prepared.request(TxnCall::ResolveLater)).await {
                // It reaches the resolver anyway when this connection ends.
                tracing::warn!("handing a prepared transaction to a datanode's resolver: {e}");
            }
        }
    }

    pub fn bulk_load(self: &Arc<Self>, txn: &mut RemoteTxn, rel: RelId) -> RemoteBulkLoad {
        txn.loaded.insert(rel);
        RemoteBulkLoad {
            datanode: self.clone(),
            start: Some(txn.bulk_start_request(rel)),
            txn: txn.id,
        }
    }

    async fn expect_row(&self, txn: &RemoteTxn, call: TxnCall) -> PgResult<Option<RowBytes>> {
        match self.txn_call(txn, call).await? {
            Response::Row(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    async fn expect_done(&self, txn: &RemoteTxn, call: TxnCall) -> PgResult<()> {
        match self.txn_call(txn, call).await? {
            Response::Done => Ok(()),
            other => Err(unexpected(&other)),
        }
    }
}

impl RemoteTxn {
    pub fn start_ts(&self) -> Timestamp {
        self.start_ts
    }

    pub fn put(&mut self, rel: RelId, key: &[u8], row: Option<RowBytes>) {
        self.written.insert(rel);
        self.pending.get_mut().queued.push(Queued::Put {
            rel,
            key: key.to_vec(),
            row,
        });
    }

    pub fn own_relation(&mut self, rel: RelId) {
        self.owned.insert(rel);
        self.pending
            .get_mut()
            .queued
            .push(Queued::OwnRelation { rel });
    }

    /// A new savepoint's number, marked at this point of the queue.
    pub fn savepoint(&self) -> u32 {
        let id = self.next_savepoint.fetch_add(1, Ordering::Relaxed);
        self.pending.lock().queued.push(Queued::Savepoint { id });
        id
    }

    pub fn rollback_to(&mut self, id: u32) {
        self.pending
            .get_mut()
            .queued
            .push(Queued::RollbackTo { id });
    }

    pub fn has_increments(&self) -> bool {
        self.increments
    }

    /// Whether it wrote, queued a write, incremented, owned or bulk-loaded anything.
    pub fn has_writes(&self) -> bool {
        !self.written.is_empty() || !self.owned.is_empty() || !self.loaded.is_empty()
    }

    pub fn can_bulk_load(&self, rel: RelId) -> bool {
        self.owned.contains(&rel) && !self.written.contains(&rel)
    }

    pub fn has_bulk_loaded(&self, rel: RelId) -> bool {
        self.loaded.contains(&rel)
    }

    /// Whether no request was ever sent for this transaction, nor is waiting to be (nothing
    /// of it exists on the datanode).
    pub(crate) fn sent_nothing(&self) -> bool {
        let pending = self.pending.lock();
        !pending.begun && pending.queued.is_empty() && self.loaded.is_empty()
    }

    /// The `BulkStart` request of a load, sent later, when its first rows are (requests of
    /// the transaction may go before it). It takes the queued writes, which the load
    /// needs applied first (the relation's ownership), and carries the begin whether or not
    /// another request sends it too: a begin for a transaction the datanode has is
    /// ignored.
    fn bulk_start_request(&self, rel: RelId) -> Request {
        self.take_request(TxnCall::BulkStart { rel }, true)
    }

    fn begin_message(&self) -> proto::Begin {
        proto::Begin {
            start_ts: self.start_ts,
            isolation: match self.isolation {
                Isolation::ReadCommitted => proto::Isolation::ReadCommitted,
                Isolation::RepeatableRead => proto::Isolation::RepeatableRead,
                Isolation::Serializable => proto::Isolation::Serializable,
            },
            transient: false,
        }
    }

    /// The request for `call`, taking the queued writes (and the begin, the first time).
    fn request(&self, call: TxnCall) -> Request {
        self.take_request(call, false)
    }

    /// The request for a plain read: transient (`proto::Begin::transient`) while nothing
    /// of the transaction is on the datanode or queued for it, else as `request`. Never
    /// for SERIALIZABLE, whose reads the datanode keeps until the commit validates them.
    fn read_request(&self, call: TxnCall) -> Request {
        let pending = self.pending.lock();
        if pending.begun || !pending.queued.is_empty() || self.isolation == Isolation::Serializable
        {
            drop(pending);
            return self.request(call);
        }
        Request::Txn(TxnRequest {
            txn: self.id,
            begin: Some(proto::Begin {
                transient: true,
                ..self.begin_message()
            }),
            queued: Vec::new(),
            call,
        })
    }

    /// A request for `call` with the queued writes; with the begin if it was not sent
    /// yet, or always with `always_begin` (which leaves it counted as unsent).
    fn take_request(&self, call: TxnCall, always_begin: bool) -> Request {
        let mut pending = self.pending.lock();
        let begin = (always_begin || !pending.begun).then(|| self.begin_message());
        pending.begun |= !always_begin;
        Request::Txn(TxnRequest {
            txn: self.id,
            begin,
            queued: std::mem::take(&mut pending.queued),
            call,
        })
    }
}

impl RemotePrepared {
    /// A request that ends the prepared transaction (it has begun and queues nothing).
    fn request(&self, call: TxnCall) -> Request {
        Request::Txn(TxnRequest {
            txn: self.id,
            begin: None,
            queued: Vec::new(),
            call,
        })
    }
}

/// A remote range scan: pages of rows fetched as they are used.
pub struct RemoteScan<'a> {
    datanode: &'a RemoteDatanode,
    txn: &'a RemoteTxn,
    rel: RelId,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    snapshot: Timestamp,
    keys: bool,
    /// What the datanode does with the rows before it answers (decision 0033).
    work: Option<Box<ScanWork>>,
    page: VecDeque<(Vec<u8>, RowBytes)>,
    exhausted: bool,
}

impl<'a> RemoteScan<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        datanode: &'a RemoteDatanode,
        txn: &'a RemoteTxn,
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
        keys: bool,
        work: Option<Box<ScanWork>>,
    ) -> RemoteScan<'a> {
        RemoteScan {
            datanode,
            txn,
            rel,
            lo,
            hi,
            snapshot,
            keys,
            work,
            page: VecDeque::new(),
            exhausted: false,
        }
    }

    /// The next (key, row); the key is empty when the scan was opened without keys.
    pub async fn next(&mut self) -> Option<PgResult<(Vec<u8>, RowBytes)>> {
        // a pushed scan's page may be empty before the end
        while self.page.is_empty() && !self.exhausted {
            if let Err(e) = self.fetch().await {
                self.exhausted = true;
                return Some(Err(e));
            }
        }
        self.page.pop_front().map(Ok)
    }

    async fn fetch(&mut self) -> PgResult<()> {
        let (rel, lo, hi, snapshot, keys) = (
            self.rel,
            self.lo.clone(),
            self.hi.clone(),
            self.snapshot,
            self.keys,
        );
        let call = match &self.work {
            None => TxnCall::ScanPage {
                rel,
                lo,
                hi,
                snapshot,
                max_rows: SCAN_PAGE_ROWS,
                keys,
            },
            Some(work) => TxnCall::ScanPushed {
                rel,
                lo,
                hi,
                snapshot,
                max_rows: SCAN_PAGE_ROWS,
                max_examined: PUSHED_PAGE_EXAMINED,
                keys,
                work: work.clone(),
            },
        };
        match self.datanode.txn_call(self.txn, call).await? {
            Response::Page { rows, last_key } => {
                self.datanode.scan_pages.fetch_add(1, Ordering::Relaxed);
                self.datanode
                    .rows_received
                    .fetch_add(rows.len() as u64, Ordering::Relaxed);
                self.page = rows.into();
                match last_key {
                    Some(k) => self.lo = Bound::Excluded(k),
                    None => self.exhausted = true,
                }
                Ok(())
            }
            other => Err(unexpected(&other)),
        }
    }
}

/// A bulk load into a relation the transaction owns on a remote datanode.
pub struct RemoteBulkLoad {
    datanode: Arc<RemoteDatanode>,
    /// The `BulkStart` request (with the transaction's queued writes), until sent.
    start: Option<Request>,
    txn: TxnId,
}

impl RemoteBulkLoad {
    pub async fn write(&mut self, rows: Vec<(Vec<u8>, RowBytes)>) -> PgResult<()> {
        self.start().await?;
        self.send(TxnCall::BulkRows { rows }).await.map(|_| ())
    }

    pub async fn finish(mut self) -> PgResult<u64> {
        self.start().await?;
        match self.send(TxnCall::BulkFinish).await? {
            Response::Count(n) => Ok(n),
            other => Err(unexpected(&other)),
        }
    }

    async fn start(&mut self) -> PgResult<()> {
        if let Some(request) = self.start.take() {
            self.datanode.call(request).await?;
        }
        Ok(())
    }

    async fn send(&self, call: TxnCall) -> PgResult<Response> {
        self.datanode
            .call(Request::Txn(TxnRequest {
                txn: self.txn,
                begin: None,
                queued: Vec::new(),
                call,
            }))
            .await
    }
}

fn wire_increment(i: datanode::ColumnIncrement) -> PgResult<proto::Increment> {
    use types::Value;
    Ok(proto::Increment {
        column: i.column as u32,
        op: match i.op {
            datanode::IncrementOp::Add => proto::IncrementOp::Add,
            datanode::IncrementOp::Sub => proto::IncrementOp::Sub,
        },
        amount: match i.amount {
            Value::Int2(v) => proto::IntAmount::Int2(v),
            Value::Int4(v) => proto::IntAmount::Int4(v),
            Value::Int8(v) => proto::IntAmount::Int8(v),
            other => {
                return Err(PgError::internal(format!(
                    "an increment's amount is an integer, not {other:?}"
                )))
            }
        },
    })
}

pub(crate) fn unexpected(r: &Response) -> PgError {
    PgError::new(
        codes::PROTOCOL_VIOLATION,
        format!("datanode answered {r:?}"),
    )
}
