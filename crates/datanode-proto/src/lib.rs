//! The messages a coordinator and a datanode process exchange (decision 0027): one
//! `Request`, one `Response`. Plain data with serde derives; the transport (`crates/rpc`)
//! frames and encodes them, and knows nothing of what they mean.
//!
//! A transaction lives on the datanode under the `TxnId` its coordinator chose. Its first
//! request carries `begin`, so starting a transaction costs no round trip of its own, and
//! every request carries the writes the coordinator queued since the previous one
//! (`queued`: puts, owned relations, savepoints), applied in order before the call: a
//! statement's row writes travel with its next read, lock or commit.

use bytes::Bytes;
use futures::future::BoxFuture;
use pgerror::{PgError, PgResult};
use serde::{Deserialize, Serialize};
use std::ops::Bound;

/// How a coordinator's requests reach one datanode: over the network, or, in one
/// process, straight to its `DatanodeService`. A link answers each request or fails it
/// with a connection-class error. The datanode keeps a coordinator's transactions per
/// connection and aborts what is left of them when the connection ends, except those
/// prepared under a gid (`TxnCall::PrepareAs`), which are the datanode's.
pub trait Link: Send + Sync {
    fn call(&self, request: Request) -> BoxFuture<'_, PgResult<Response>>;

    /// Whether the link holds a connection that has not failed (for the nodes view).
    fn is_connected(&self) -> bool {
        true
    }
}

pub type RelId = u64;
pub type Timestamp = u64;

/// A transaction, numbered by its coordinator, unique among those it sends over one
/// connection.
pub type TxnId = u64;

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub enum Request {
    /// Writes (`Some`) or deletes (`None`) one catalog record, durably.
    MetaPut {
        key: Vec<u8>,
        value: Option<Vec<u8>>,
    },
    /// The catalog records under a prefix.
    MetaScan {
        prefix: Vec<u8>,
    },
    CreateRel,
    /// Makes relation id `rel`, chosen on another datanode, usable on this one
    /// (idempotent); answers `Done`.
    CreateRelAt {
        rel: RelId,
    },
    DropRel {
        rel: RelId,
    },
    AllocateRowIds {
        rel: RelId,
        n: u64,
    },
    Vacuum {
        rel: RelId,
    },
    /// The datanode's wait-for graph, for distributed deadlock detection: answers `Edges`.
    WaitForEdges,
    /// Ends the lock waits of the transaction that started at `start_ts` with 40P01
    /// (`detail` describes the cycle): the distributed deadlock detector's victim.
    /// Answers `Cancelled`.
    CancelWaits {
        start_ts: Timestamp,
        detail: String,
    },
    /// The first step of committing the transaction prepared here under `gid`, before
    /// the coordinator takes its commit timestamp: readers above its start wait for it
    /// from now on (`datanode::Datanode::commit_gid_pending`). Answers `Done`, or 42704.
    CommitGidPending {
        gid: String,
    },
    /// Commits the transaction prepared here under `gid` (`TxnCall::PrepareAs`) at `ts`,
    /// which the coordinator took from the GTM; answers `Committed(ts)`, or 42704.
    CommitGid {
        gid: String,
        ts: Timestamp,
    },
    /// Aborts the transaction prepared here under `gid`; answers `Done`, or 42704.
    AbortGid {
        gid: String,
    },
    /// The transactions prepared here under a gid: answers `PreparedXacts`.
    PreparedXacts,
    Txn(TxnRequest),
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct TxnRequest {
    pub txn: TxnId,
    /// Present on the transaction's first request.
    pub begin: Option<Begin>,
    /// Writes queued since the previous request, applied in order before `call`.
    pub queued: Vec<Queued>,
    pub call: TxnCall,
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Begin {
    pub start_ts: Timestamp,
    pub isolation: Isolation,
    /// The request is a read (`Get`, `ScanPage`) of a transaction that has nothing on the
    /// datanode: it runs in a transaction of its own that ends with the answer, and the
    /// datanode keeps nothing (a later request of the transaction begins it for real). A
    /// read-only transaction thus costs one request per read, and nothing at its end.
    pub transient: bool,
}

/// A write that answers nothing, sent with the transaction's next request.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub enum Queued {
    Put {
        rel: RelId,
        key: Vec<u8>,
        row: Option<Bytes>,
    },
    OwnRelation {
        rel: RelId,
    },
    /// Marks savepoint `id` (numbered by the coordinator) at this point of the
    /// transaction.
    Savepoint {
        id: u32,
    },
    /// Undoes what followed savepoint `id`.
    RollbackTo {
        id: u32,
    },
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub enum TxnCall {
    /// Only the queued writes.
    Flush,
    Get {
        rel: RelId,
        key: Vec<u8>,
        snapshot: Timestamp,
        presence_only: bool,
    },
    /// Up to `max_rows` rows of `[lo, hi)` in key order; the next page starts after the
    /// page's last key (`Response::Page::last_key`).
    ScanPage {
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
        max_rows: u32,
        /// Whether the page carries each row's key (the last key comes either way).
        keys: bool,
    },
    /// A `ScanPage` whose `work` the datanode does (decision 0033): the page holds only
    /// the rows that pass its filter (with the columns it names), or, for a partial
    /// aggregation, one row per group of them (its values, then its states; empty keys).
    /// A page ends after `max_rows` rows or groups, or after `max_examined` rows read;
    /// `last_key` is then the last key read, which may be no row's of the page (an empty
    /// page with a `last_key` is not the end).
    ScanPushed {
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
        max_rows: u32,
        max_examined: u32,
        keys: bool,
        work: Box<sql::pushdown::ScanWork>,
    },
    LockRow {
        rel: RelId,
        key: Vec<u8>,
    },
    /// `LockRow` that fails with 55P03 instead of waiting for another holder.
    LockRowNoWait {
        rel: RelId,
        key: Vec<u8>,
    },
    Increment {
        rel: RelId,
        key: Vec<u8>,
        increments: Vec<Increment>,
    },
    ApplyIncrements,
    PutNewKey {
        rel: RelId,
        key: Vec<u8>,
        row: Bytes,
    },
    /// Fails with 23505 (message left to the coordinator) if a row holds the key.
    Insert {
        rel: RelId,
        key: Vec<u8>,
        row: Bytes,
    },
    /// Starts a bulk load into an owned relation.
    BulkStart {
        rel: RelId,
    },
    /// Rows of the bulk load, keys ascending across chunks.
    BulkRows {
        rows: Vec<(Vec<u8>, Bytes)>,
    },
    /// Ends the bulk load; answers its row count.
    BulkFinish,
    Commit,
    /// First phase of a commit across datanodes (decision 0029): answers `Done` once the
    /// transaction is prepared (and recorded durably). From then on it takes only
    /// `CommitPrepared`, `Abort` or `ResolveLater`.
    Prepare,
    /// Commits a prepared transaction at `ts`, which the coordinator took from the GTM;
    /// answers `Committed(ts)`.
    CommitPrepared {
        ts: Timestamp,
    },
    /// Aborts the transaction, prepared or not.
    Abort,
    /// Prepares the transaction under a gid (SQL's PREPARE TRANSACTION): from then on it
    /// is the datanode's, not this connection's, and only `CommitGid` or `AbortGid` end
    /// it. Answers `Done`, or 42710 if the gid is in use here (the transaction is then
    /// aborted, as on any failure to prepare).
    PrepareAs(PreparedXact),
    /// The coordinator of a prepared transaction cannot learn its outcome (it lost the
    /// GTM while deciding): the datanode's resolver asks the GTM for it. Answers `Done`.
    ResolveLater,
}

impl TxnCall {
    /// A read that needs nothing of its transaction on the datanode but its snapshot
    /// (no own writes, no locks): what `Begin::transient` may carry.
    pub fn is_plain_read(&self) -> bool {
        matches!(
            self,
            TxnCall::Get { .. } | TxnCall::ScanPage { .. } | TxnCall::ScanPushed { .. }
        )
    }
}

/// A transaction prepared under a gid, as `pg_prepared_xacts` shows it
/// (`datanode::PreparedXact`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct PreparedXact {
    pub gid: String,
    /// Its start timestamp (set by the datanode from the transaction's).
    pub start_ts: Timestamp,
    /// Microseconds since 2000-01-01 UTC.
    pub prepared_at: i64,
    pub owner: String,
    pub database: String,
}

/// `SET column = column op amount` (see `datanode::ColumnIncrement`).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Increment {
    pub column: u32,
    pub op: IncrementOp,
    pub amount: IntAmount,
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncrementOp {
    Add,
    Sub,
}

/// An increment's amount, in its column's integer type (its overflow is that type's).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntAmount {
    Int2(i16),
    Int4(i32),
    Int8(i64),
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub enum Response {
    Done,
    Row(Option<Bytes>),
    Page {
        /// With their keys if the request asked for them, else with empty keys.
        rows: Vec<(Vec<u8>, Bytes)>,
        /// The key of the page's last row; None when the range is exhausted.
        last_key: Option<Vec<u8>>,
    },
    /// `Increment`: Some(whether the row exists), or None for the ordinary path.
    Incremented(Option<bool>),
    Id(u64),
    Count(u64),
    Vacuumed(Option<u64>),
    Meta(Vec<(Vec<u8>, Vec<u8>)>),
    Committed(Timestamp),
    /// (waiting transaction's start timestamp, blocking transaction's start timestamp).
    Edges(Vec<(Timestamp, Timestamp)>),
    /// Whether a wait was ended.
    Cancelled(bool),
    PreparedXacts(Vec<PreparedXact>),
    Error(WireError),
}

/// A `PgError` on the wire: its SQLSTATE as text, mapped back to Meridian's constant on
/// arrival.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    pub code: String,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl From<&PgError> for WireError {
    fn from(e: &PgError) -> WireError {
        WireError {
            code: e.code.to_string(),
            message: e.message.clone(),
            detail: e.detail.clone(),
            hint: e.hint.clone(),
        }
    }
}

impl From<WireError> for PgError {
    fn from(w: WireError) -> PgError {
        let code = pgerror::codes::known(&w.code).unwrap_or(pgerror::codes::INTERNAL_ERROR);
        let mut e = PgError::new(code, w.message);
        e.detail = w.detail;
        e.hint = w.hint;
        e
    }
}
