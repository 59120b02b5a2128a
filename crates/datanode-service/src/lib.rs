//! Runs `datanode-proto` requests against the datanode of this process (decision 0027):
//! what a `meridian datanode` process does with what its coordinators send. Transport-free:
//! the network layer hands each request to `DatanodeService::handle` and tells it when a
//! coordinator's connection ends (`connection_closed`).

mod pushed;

use datanode::{
    ColumnIncrement, Datanode, IncrementOp, Isolation, LockWait, PreparedTxn, PreparedXact,
    Savepoint, Txn,
};
use datanode_proto as proto;
use datanode_proto::{Link, Queued, Request, Response, TxnCall, TxnId, TxnRequest};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use std::collections::HashMap;
use std::sync::Arc;
use types::Value;

/// A `Link` to a service in the same process: every call goes through the protocol's
/// messages and the service, exactly as over the network, without a socket. The embedded
/// server uses it with `--datanode-link messages`, to run anything against the protocol
/// path. It is connection 0, which never ends.
pub struct InProcessLink(pub Arc<DatanodeService>);

impl Link for InProcessLink {
    fn call(&self, request: Request) -> BoxFuture<'_, PgResult<Response>> {
        Box::pin(async move { Ok(self.0.handle(0, request).await) })
    }
}

/// The datanode's transactions, by the id their coordinators gave them.
pub struct DatanodeService {
    datanode: Arc<Datanode>,
    gtm: gtm::GtmClient,
    /// By (connection, the coordinator's number for it).
    txns: Mutex<HashMap<(u64, TxnId), SharedSlot>>,
}

type SharedSlot = Arc<tokio::sync::Mutex<TxnSlot>>;

/// One transaction's state here. A coordinator sends one transaction's requests one at a
/// time; the mutex only guards against a request that arrives while a cancelled one is
/// still being dropped.
#[derive(Default)]
struct TxnSlot {
    /// None once prepared, committed or aborted.
    txn: Option<Box<Txn>>,
    /// Once prepared (`TxnCall::Prepare`), until `CommitPrepared` or `Abort`.
    prepared: Option<PreparedTxn>,
    savepoints: HashMap<u32, Savepoint>,
    bulk: Option<datanode::storage::BulkLoad>,
}

impl DatanodeService {
    pub fn new(datanode: Arc<Datanode>, gtm: gtm::GtmClient) -> DatanodeService {
        DatanodeService {
            datanode,
            gtm,
            txns: Mutex::new(HashMap::new()),
        }
    }

    /// Serves coordinators on `listener` until accepting fails (`crates/rpc`).
    pub async fn serve(self: Arc<Self>, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let closing = self.clone();
        rpc::serve_with_close(
            listener,
            move |request: Request, out: rpc::Responder<Response>| {
                let service = self.clone();
                async move { service.handle(out.connection(), request).await }
            },
            move |connection| {
                let service = closing.clone();
                tokio::spawn(async move { service.connection_closed(connection).await });
            },
        )
        .await
    }

    /// Answers one request that came on `connection`; an error is an answer too
    /// (`Response::Error`).
    pub async fn handle(&self, connection: u64, request: Request) -> Response {
        match self.run(connection, request).await {
            Ok(r) => r,
            Err(e) => Response::Error((&e).into()),
        }
    }

    /// Ends what is left of the transactions opened on `connection`, which ended: no
    /// request can come for them any more. Unprepared ones are aborted; prepared ones go
    /// to the datanode's resolver, which asks the GTM whether their coordinator decided
    /// to commit them before it went away (those prepared under a gid left the connection
    /// for the datanode's registry before).
    pub async fn connection_closed(&self, connection: u64) {
        let gone: Vec<_> = {
            let mut txns = self.txns.lock();
            let ids: Vec<_> = txns
                .keys()
                .filter(|(c, _)| *c == connection)
                .copied()
                .collect();
            ids.into_iter().filter_map(|id| txns.remove(&id)).collect()
        };
        for slot in gone {
            let mut slot = slot.lock().await;
            if let Some(txn) = slot.txn.take() {
                self.datanode.abort(txn, &self.gtm).await;
            }
            if let Some(prepared) = slot.prepared.take() {
                self.datanode.resolve_later(prepared).await;
            }
        }
    }

    /// How many transactions are open here.
    pub fn open_transactions(&self) -> usize {
        self.txns.lock().len()
    }

    async fn run(&self, connection: u64, request: Request) -> PgResult<Response> {
        let dn = &self.datanode;
        Ok(match request {
            Request::MetaPut { key, value } => {
                dn.meta_put(&key, value.as_deref())?;
                Response::Done
            }
            Request::MetaScan { prefix } => Response::Meta(dn.meta_scan(&prefix)?),
            Request::CreateRel => Response::Id(dn.create_rel()?),
            Request::CreateRelAt { rel } => {
                dn.create_rel_at(rel)?;
                Response::Done
            }
            Request::DropRel { rel } => {
                dn.drop_rel(rel)?;
                Response::Done
            }
            Request::AllocateRowIds { rel, n } => Response::Id(dn.allocate_row_ids(rel, n)?),
            Request::Vacuum { rel } => Response::Vacuumed(dn.vacuum(rel)?),
            Request::WaitForEdges => Response::Edges(dn.wait_for_edges()),
            Request::CancelWaits { start_ts, detail } => {
                Response::Cancelled(dn.cancel_waits_of(start_ts, detail))
            }
            Request::CommitGidPending { gid } => {
                dn.commit_gid_pending(&gid)?;
                Response::Done
            }
            Request::CommitGid { gid, ts } => Response::Committed(dn.commit_gid(&gid, ts).await?),
            Request::AbortGid { gid } => {
                dn.abort_gid(&gid).await?;
                Response::Done
            }
            Request::PreparedXacts => Response::PreparedXacts(
                dn.prepared_xacts().into_iter().map(xact_to_proto).collect(),
            ),
            Request::Txn(t) => self.run_txn(connection, t).await?,
        })
    }

    async fn run_txn(&self, connection: u64, request: TxnRequest) -> PgResult<Response> {
        let TxnRequest {
            txn,
            begin,
            queued,
            call,
        } = request;
        // A transient begin comes only with a transaction's first request: nothing of it is
        // here.
        if let Some(b) = begin.filter(|b| b.transient && queued.is_empty() && call.is_plain_read())
        {
            return self.run_transient(b, call).await;
        }
        let id = (connection, txn);
        let slot = {
            let mut txns = self.txns.lock();
            match (txns.get(&id), begin) {
                (Some(slot), _) => slot.clone(),
                (None, Some(b)) => {
                    let txn = self.begin(b);
                    let slot = Arc::new(tokio::sync::Mutex::new(TxnSlot {
                        txn: Some(txn),
                        ..TxnSlot::default()
                    }));
                    txns.insert(id, slot.clone());
                    slot
                }
                // It began on a connection that has ended and was aborted with it (a
                // coordinator sends nothing for a transaction it ended itself).
                (None, None) => {
                    return Err(PgError::new(
                        codes::CONNECTION_FAILURE,
                        "the datanode lost the transaction with its connection",
                    ))
                }
            }
        };
        let mut slot = slot.lock().await;
        let result = self.run_in(&mut slot, queued, call).await;
        if slot.txn.is_none() && slot.prepared.is_none() {
            self.txns.lock().remove(&id);
        }
        result
    }

    /// The transaction's part here. The coordinator registered the start timestamp at
    /// the GTM and finishes it there itself.
    fn begin(&self, b: proto::Begin) -> Box<Txn> {
        let isolation = match b.isolation {
            proto::Isolation::ReadCommitted => Isolation::ReadCommitted,
            proto::Isolation::RepeatableRead => Isolation::RepeatableRead,
            proto::Isolation::Serializable => Isolation::Serializable,
        };
        let mut txn = self.datanode.begin(b.start_ts, isolation);
        txn.registered_by_caller();
        txn
    }

    /// A read of a transaction that keeps nothing here (`proto::Begin::transient`): in a
    /// transaction of its own, ended with the answer.
    async fn run_transient(&self, b: proto::Begin, call: TxnCall) -> PgResult<Response> {
        let mut slot = TxnSlot {
            txn: Some(self.begin(b)),
            ..TxnSlot::default()
        };
        let result = self.run_in(&mut slot, Vec::new(), call).await;
        if let Some(txn) = slot.txn.take() {
            self.datanode.abort(txn, &self.gtm).await; // it holds nothing
        }
        result
    }

    /// A prepared transaction takes nothing but its outcome: `CommitPrepared` or `Abort`,
    /// or `ResolveLater`; anything else fails with 25000 and leaves it prepared.
    async fn end_prepared(
        &self,
        slot: &mut TxnSlot,
        queued: Vec<Queued>,
        call: TxnCall,
    ) -> PgResult<Response> {
        let prepared =
            match call {
                TxnCall::CommitPrepared { .. } | TxnCall::Abort | TxnCall::ResolveLater
                    if queued.is_empty() =>
                {
                    slot.prepared.take().expect("checked by the caller")
                }
                _ => return Err(PgError::new(
                    codes::INVALID_TRANSACTION_STATE,
                    "datanode: the transaction is prepared: only its commit or abort may follow",
                )),
            };
        Ok(match call {
            TxnCall::CommitPrepared { ts } => Response::Committed(prepared.commit(ts).await?),
            TxnCall::ResolveLater => {
                self.datanode.resolve_later(prepared).await;
                Response::Done
            }
            _ => {
                prepared.abort().await;
                Response::Done
            }
        })
    }

    async fn run_in(
        &self,
        slot: &mut TxnSlot,
        queued: Vec<Queued>,
        call: TxnCall,
    ) -> PgResult<Response> {
        let dn = &self.datanode;
        if slot.prepared.is_some() {
            return self.end_prepared(slot, queued, call).await;
        }
        let Some(txn) = slot.txn.as_mut() else {
            return Err(PgError::new(
                codes::INVALID_TRANSACTION_STATE,
                "datanode: the transaction has ended",
            ));
        };
        for q in queued {
            match q {
                Queued::Put { rel, key, row } => dn.put(txn, rel, &key, row)?,
                Queued::OwnRelation { rel } => dn.own_relation(txn, rel),
                Queued::Savepoint { id } => {
                    slot.savepoints.insert(id, txn.savepoint());
                }
                Queued::RollbackTo { id } => {
                    let sp = slot
                        .savepoints
                        .get(&id)
                        .ok_or_else(|| PgError::internal(format!("datanode: no savepoint {id}")))?;
                    txn.rollback_to(sp)?;
                }
            }
        }
        Ok(match call {
            TxnCall::Flush => Response::Done,
            TxnCall::Get {
                rel,
                key,
                snapshot,
                presence_only,
            } => Response::Row(dn.get_row(txn, rel, &key, snapshot, presence_only).await?),
            TxnCall::ScanPage {
                rel,
                lo,
                hi,
                snapshot,
                max_rows,
                keys,
            } => {
                let max_rows = max_rows.max(1) as usize;
                let mut rows = Vec::with_capacity(max_rows.min(1024));
                let scan = dn.scan(txn, rel, lo, hi, snapshot).await?;
                let mut last_key = None;
                for item in scan {
                    let (key, row) = item?;
                    if rows.len() + 1 == max_rows {
                        last_key = Some(key.clone());
                    }
                    rows.push((if keys { key } else { Vec::new() }, row));
                    if rows.len() == max_rows {
                        break;
                    }
                }
                Response::Page { rows, last_key }
            }
            TxnCall::ScanPushed {
                rel,
                lo,
                hi,
                snapshot,
                max_rows,
                max_examined,
                keys,
                work,
            } => {
                let scan = dn.scan(txn, rel, lo, hi, snapshot).await?;
                let limits = (max_rows.max(1) as usize, max_examined.max(1) as usize);
                pushed::page(scan, limits.0, limits.1, keys, &work)?
            }
            TxnCall::LockRow { rel, key } => Response::Row(dn.lock_row(txn, rel, &key).await?),
            TxnCall::LockRowNoWait { rel, key } => {
                Response::Row(dn.lock_row_as(txn, rel, &key, LockWait::NoWait).await?)
            }
            TxnCall::Increment {
                rel,
                key,
                increments,
            } => {
                let increments = increments.into_iter().map(column_increment).collect();
                Response::Incremented(dn.increment(txn, rel, &key, increments).await?)
            }
            TxnCall::ApplyIncrements => {
                dn.apply_increments(txn).await?;
                Response::Done
            }
            TxnCall::PutNewKey { rel, key, row } => {
                dn.put_new_key(txn, rel, &key, row).await?;
                Response::Done
            }
            TxnCall::Insert { rel, key, row } => {
                dn.insert(txn, rel, &key, row, || {
                    PgError::new(codes::UNIQUE_VIOLATION, "duplicate key")
                })
                .await?;
                Response::Done
            }
            TxnCall::BulkStart { rel } => {
                slot.bulk = Some(dn.bulk_load(txn, rel)?);
                Response::Done
            }
            TxnCall::BulkRows { rows } => {
                let load = slot
                    .bulk
                    .as_mut()
                    .ok_or_else(|| PgError::internal("datanode: no bulk load in progress"))?;
                let mut chunk = load.empty_chunk();
                for (key, row) in &rows {
                    chunk.push(key, row);
                }
                load.write(chunk).await?;
                Response::Done
            }
            TxnCall::BulkFinish => {
                let load = slot
                    .bulk
                    .take()
                    .ok_or_else(|| PgError::internal("datanode: no bulk load in progress"))?;
                Response::Count(load.finish().await?)
            }
            TxnCall::Commit => {
                let txn = slot.txn.take().expect("checked above");
                Response::Committed(dn.commit(txn, &self.gtm).await?)
            }
            TxnCall::Prepare => {
                let txn = slot.txn.take().expect("checked above");
                slot.prepared = Some(dn.prepare(txn).await?);
                Response::Done
            }
            TxnCall::PrepareAs(xact) => {
                let txn = slot.txn.take().expect("checked above");
                dn.prepare_as(txn, xact_from_proto(xact)).await?;
                Response::Done
            }
            TxnCall::CommitPrepared { .. } | TxnCall::ResolveLater => {
                return Err(PgError::new(
                    codes::INVALID_TRANSACTION_STATE,
                    "datanode: the transaction is not prepared",
                ))
            }
            TxnCall::Abort => {
                let txn = slot.txn.take().expect("checked above");
                dn.abort(txn, &self.gtm).await;
                Response::Done
            }
        })
    }
}

/// A prepared transaction's description off the wire (also for the coordinator's side).
pub fn xact_from_proto(x: proto::PreparedXact) -> PreparedXact {
    PreparedXact {
        gid: x.gid,
        start_ts: x.start_ts,
        prepared_at: x.prepared_at,
        owner: x.owner,
        database: x.database,
    }
}

/// A prepared transaction's description for the wire (also for the coordinator's side).
pub fn xact_to_proto(x: PreparedXact) -> proto::PreparedXact {
    proto::PreparedXact {
        gid: x.gid,
        start_ts: x.start_ts,
        prepared_at: x.prepared_at,
        owner: x.owner,
        database: x.database,
    }
}

fn column_increment(i: proto::Increment) -> ColumnIncrement {
    ColumnIncrement {
        column: i.column as usize,
        op: match i.op {
            proto::IncrementOp::Add => IncrementOp::Add,
            proto::IncrementOp::Sub => IncrementOp::Sub,
        },
        amount: match i.amount {
            proto::IntAmount::Int2(v) => Value::Int2(v),
            proto::IntAmount::Int4(v) => Value::Int4(v),
            proto::IntAmount::Int8(v) => Value::Int8(v),
        },
    }
}
