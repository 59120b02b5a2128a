//! The service side of the coordinator-datanode protocol against a real datanode on disk
//! and a real in-process GTM: requests as a coordinator would send them, answers checked.

use bytes::Bytes;
use datanode::{Datanode, DatanodeOptions};
use datanode_proto::*;
use datanode_service::DatanodeService;
use pgerror::codes;
use std::ops::Bound;

struct Env {
    _dir: tempfile::TempDir,
    gtm: gtm::GtmClient,
    datanode: std::sync::Arc<Datanode>,
    service: DatanodeService,
    rel: RelId,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = DatanodeOptions::new(dir.path().join("dn"));
    opts.cache_size = 32 << 20;
    let dn = Datanode::open(opts).unwrap();
    let gtm = gtm::GtmClient::local(&dir.path().join("gtm")).unwrap();
    dn.start_resolver(gtm.clone());
    let service = DatanodeService::new(dn.clone(), gtm.clone());
    let Response::Id(rel) = service.handle(0, Request::CreateRel).await else {
        panic!("CreateRel")
    };
    Env {
        _dir: dir,
        gtm,
        datanode: dn,
        service,
        rel,
    }
}

fn row(v: i64) -> Bytes {
    let mut out = Vec::new();
    types::codec::encode_row(&[types::Value::Int8(v)], &mut out);
    Bytes::from(out)
}

impl Env {
    async fn call(
        &self,
        (connection, txn): (u64, TxnId),
        begin: bool,
        queued: Vec<Queued>,
        call: TxnCall,
    ) -> Response {
        let begin = if begin {
            Some(Begin {
                start_ts: self.gtm.begin().await.unwrap(),
                isolation: Isolation::ReadCommitted,
                transient: false,
            })
        } else {
            None
        };
        self.service
            .handle(
                connection,
                Request::Txn(TxnRequest {
                    txn,
                    begin,
                    queued,
                    call,
                }),
            )
            .await
    }

    /// The first request of transaction `t`, begun at `start_ts`.
    async fn call_at(
        &self,
        (connection, txn): (u64, TxnId),
        start_ts: Timestamp,
        queued: Vec<Queued>,
        call: TxnCall,
    ) -> Response {
        let begin = Some(Begin {
            start_ts,
            isolation: Isolation::ReadCommitted,
            transient: false,
        });
        let request = Request::Txn(TxnRequest {
            txn,
            begin,
            queued,
            call,
        });
        self.service.handle(connection, request).await
    }

    /// Transaction `t` writes `a` = `v` and is prepared; returns its start timestamp.
    async fn prepared(&self, t: (u64, TxnId), v: i64) -> Timestamp {
        let start = self.gtm.begin().await.unwrap();
        let put = Queued::Put {
            rel: self.rel,
            key: b"a".to_vec(),
            row: Some(row(v)),
        };
        let lock = TxnCall::LockRow {
            rel: self.rel,
            key: b"a".to_vec(),
        };
        assert_eq!(
            self.call_at(t, start, vec![], lock).await,
            Response::Row(None)
        );
        assert_eq!(
            self.call(t, false, vec![put], TxnCall::Prepare).await,
            Response::Done
        );
        start
    }

    /// Whether transaction `t` (a new one) takes the lock on `a` within 5 s.
    async fn lock_a_soon(&self, t: (u64, TxnId)) -> bool {
        let lock = TxnCall::LockRow {
            rel: self.rel,
            key: b"a".to_vec(),
        };
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            self.call(t, true, vec![], lock),
        )
        .await
        .is_ok()
    }

    async fn committed(&self, key: &[u8]) -> Option<Bytes> {
        let reader = (99, 1);
        let snapshot = self.gtm.timestamp().await.unwrap();
        let get = TxnCall::Get {
            rel: self.rel,
            key: key.to_vec(),
            snapshot,
            presence_only: false,
        };
        let Response::Row(r) = self.call(reader, true, vec![], get).await else {
            panic!("Get")
        };
        assert_eq!(
            self.call(reader, false, vec![], TxnCall::Abort).await,
            Response::Done
        );
        r
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_writes_travel_with_the_next_call_and_commit() {
    let e = env().await;
    let t = (1, 1);
    let puts = (0..5u8)
        .map(|i| Queued::Put {
            rel: e.rel,
            key: vec![b'k', i],
            row: Some(row(i as i64)),
        })
        .collect();
    // The transaction begins with its first request, which also carries its writes.
    let lock = TxnCall::LockRow {
        rel: e.rel,
        key: b"k\x09".to_vec(),
    };
    assert_eq!(e.call(t, true, puts, lock).await, Response::Row(None));
    assert!(matches!(
        e.call(t, false, vec![], TxnCall::Commit).await,
        Response::Committed(_)
    ));
    assert_eq!(e.service.open_transactions(), 0);
    assert_eq!(e.committed(b"k\x03").await, Some(row(3)));
    // A call for a transaction the datanode does not have (it ended, or its connection
    // was lost) is refused as a lost connection.
    let Response::Error(err) = e.call(t, false, vec![], TxnCall::Flush).await else {
        panic!("expected an error")
    };
    assert_eq!(err.code, codes::CONNECTION_FAILURE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_pages_resume_after_their_last_key() {
    let e = env().await;
    let t = (1, 1);
    let puts = (0..10u8)
        .map(|i| Queued::Put {
            rel: e.rel,
            key: vec![i],
            row: Some(row(i as i64)),
        })
        .collect();
    e.call(t, true, puts, TxnCall::Flush).await;
    let snapshot = e.gtm.timestamp().await.unwrap();
    let mut lo = Bound::Unbounded;
    let mut seen = Vec::new();
    loop {
        let page = TxnCall::ScanPage {
            rel: e.rel,
            lo: lo.clone(),
            hi: Bound::Excluded(vec![8]),
            snapshot,
            max_rows: 3,
            keys: true,
        };
        let Response::Page { rows, last_key } = e.call(t, false, vec![], page).await else {
            panic!("ScanPage")
        };
        assert!(rows.len() <= 3);
        seen.extend(rows);
        match last_key {
            Some(k) => lo = Bound::Excluded(k),
            None => break,
        }
    }
    // Own, uncommitted writes are seen, in key order, up to the bound.
    let expected: Vec<_> = (0..8u8).map(|i| (vec![i], row(i as i64))).collect();
    assert_eq!(seen, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_of_a_taken_key_is_23505_and_savepoints_undo() {
    let e = env().await;
    let t = (1, 1);
    let insert = |v| TxnCall::Insert {
        rel: e.rel,
        key: b"a".to_vec(),
        row: row(v),
    };
    assert_eq!(e.call(t, true, vec![], insert(1)).await, Response::Done);
    let Response::Error(err) = e.call(t, false, vec![], insert(2)).await else {
        panic!("expected a unique violation")
    };
    assert_eq!(err.code, codes::UNIQUE_VIOLATION);
    let put_b = Queued::Put {
        rel: e.rel,
        key: b"b".to_vec(),
        row: Some(row(2)),
    };
    let queued = vec![
        Queued::Savepoint { id: 1 },
        put_b,
        Queued::RollbackTo { id: 1 },
    ];
    assert_eq!(
        e.call(t, false, queued, TxnCall::Flush).await,
        Response::Done
    );
    assert!(matches!(
        e.call(t, false, vec![], TxnCall::Commit).await,
        Response::Committed(_)
    ));
    assert_eq!(e.committed(b"a").await, Some(row(1)));
    assert_eq!(
        e.committed(b"b").await,
        None,
        "rolled back to the savepoint"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn increments_arrive_as_data_and_overflow_at_commit() {
    let e = std::sync::Arc::new(env().await);
    let t = (1, 1);
    let put = Queued::Put {
        rel: e.rel,
        key: b"a".to_vec(),
        row: Some(row(40)),
    };
    e.call(t, true, vec![put], TxnCall::Commit).await;
    // A holds the row: B's increment waits for A, then holds an increment lock and is
    // deferred to B's commit; C's increment, compatible with B's, is deferred at once.
    let a = (1, 2);
    let lock = TxnCall::LockRow {
        rel: e.rel,
        key: b"a".to_vec(),
    };
    assert_eq!(
        e.call(a, true, vec![], lock).await,
        Response::Row(Some(row(40)))
    );
    let inc = move |rel, amount| TxnCall::Increment {
        rel,
        key: b"a".to_vec(),
        increments: vec![Increment {
            column: 0,
            op: IncrementOp::Add,
            amount: IntAmount::Int8(amount),
        }],
    };
    let b = (2, 1);
    let waiting = {
        let e = e.clone();
        tokio::spawn(async move { e.call(b, true, vec![], inc(e.rel, 2)).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "B waits for A's exclusive lock");
    e.call(a, false, vec![], TxnCall::Abort).await;
    assert_eq!(waiting.await.unwrap(), Response::Incremented(Some(true)));
    let c = (2, 2);
    let inc_c = inc(e.rel, i64::MAX);
    assert_eq!(
        e.call(c, true, vec![], inc_c).await,
        Response::Incremented(Some(true))
    );
    assert!(matches!(
        e.call(b, false, vec![], TxnCall::Commit).await,
        Response::Committed(_)
    ));
    let Response::Error(err) = e.call(c, false, vec![], TxnCall::Commit).await else {
        panic!("42 + i64::MAX must overflow")
    };
    assert_eq!(err.code, codes::NUMERIC_VALUE_OUT_OF_RANGE);
    assert_eq!(e.committed(b"a").await, Some(row(42)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_connection_s_transactions_are_aborted_and_release_their_locks() {
    let e = env().await;
    let t = (7, 1);
    let put = Queued::Put {
        rel: e.rel,
        key: b"a".to_vec(),
        row: Some(row(1)),
    };
    let lock = TxnCall::LockRow {
        rel: e.rel,
        key: b"a".to_vec(),
    };
    e.call(t, true, vec![put], lock.clone()).await;
    assert_eq!(e.service.open_transactions(), 1);
    e.service.connection_closed(7).await;
    assert_eq!(e.service.open_transactions(), 0);
    // Another transaction takes the lock at once and sees nothing of the gone one.
    let other = (8, 1);
    let taken = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        e.call(other, true, vec![], lock),
    )
    .await
    .expect("the lock was released");
    assert_eq!(taken, Response::Row(None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_transaction_commits_at_the_coordinator_s_timestamp() {
    let e = std::sync::Arc::new(env().await);
    let t = (1, 1);
    let start = e.prepared(t, 1).await;
    // Only its outcome may follow.
    let Response::Error(err) = e.call(t, false, vec![], TxnCall::Flush).await else {
        panic!("a prepared transaction takes no other call")
    };
    assert_eq!(err.code, codes::INVALID_TRANSACTION_STATE);
    // The commit point; a reader whose snapshot includes it waits for the outcome.
    let ts = e.gtm.commit(start).await.unwrap();
    let reading = {
        let e = e.clone();
        tokio::spawn(async move { e.committed(b"a").await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(
        !reading.is_finished(),
        "the reader waits for the prepared one"
    );
    assert_eq!(
        e.call(t, false, vec![], TxnCall::CommitPrepared { ts })
            .await,
        Response::Committed(ts)
    );
    e.gtm.finish(start).await.unwrap();
    assert_eq!(reading.await.unwrap(), Some(row(1)));
    assert_eq!(e.service.open_transactions(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborted_prepared_transaction_leaves_nothing() {
    let e = env().await;
    let t = (1, 1);
    let start = e.prepared(t, 1).await;
    assert_eq!(
        e.call(t, false, vec![], TxnCall::Abort).await,
        Response::Done
    );
    e.gtm.finish(start).await.unwrap();
    assert_eq!(e.committed(b"a").await, None);
    assert!(e.lock_a_soon((2, 1)).await, "its lock was released");
    // Commit of a transaction that was not prepared is refused.
    let Response::Error(err) = e
        .call(
            (2, 1),
            false,
            vec![],
            TxnCall::CommitPrepared { ts: start + 1 },
        )
        .await
    else {
        panic!("not prepared")
    };
    assert_eq!(err.code, codes::INVALID_TRANSACTION_STATE);
}

/// A prepared transaction of a connection that closed goes to the datanode's resolver,
/// which waits while its start is registered at the GTM (its coordinator may still
/// decide), and aborts it once the start is gone undecided.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_connection_s_undecided_prepared_transaction_is_aborted_by_the_resolver() {
    let e = env().await;
    let start = e.prepared((7, 1), 1).await;
    assert_eq!(e.service.open_transactions(), 1);
    e.service.connection_closed(7).await;
    assert_eq!(e.service.open_transactions(), 0);
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    assert_eq!(
        e.datanode.in_doubt_count(),
        1,
        "pending while the start is registered"
    );
    e.gtm.finish(start).await.unwrap();
    assert!(e.lock_a_soon((8, 1)).await, "its lock was released");
    assert_eq!(e.datanode.in_doubt_count(), 0);
    assert_eq!(e.committed(b"a").await, None);
    assert_eq!(
        e.gtm.resolve(start).await.unwrap(),
        gtm::Resolution::Aborted
    );
}

/// A commit decided at the GTM reaches a prepared transaction whose connection closed,
/// or that its coordinator handed over (`ResolveLater`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resolver_applies_a_decided_commit() {
    for (connection, handed_over, v) in [(7, false, 5), (9, true, 6)] {
        let e = env().await;
        let start = e.prepared((connection, 1), v).await;
        if handed_over {
            let call = TxnCall::ResolveLater;
            assert_eq!(
                e.call((connection, 1), false, vec![], call).await,
                Response::Done
            );
        } else {
            e.service.connection_closed(connection).await;
        }
        let ts = e.gtm.decide(start).await.unwrap();
        assert!(
            e.lock_a_soon((connection + 1, 1)).await,
            "its lock was released"
        );
        assert_eq!(
            e.call((connection + 1, 1), false, vec![], TxnCall::Abort)
                .await,
            Response::Done
        );
        assert_eq!(e.committed(b"a").await, Some(row(v)));
        assert_eq!(
            e.gtm.resolve(start).await.unwrap(),
            gtm::Resolution::Committed(ts)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_prepared_under_a_gid_outlives_its_connection() {
    let e = env().await;
    let start = e.gtm.begin().await.unwrap();
    let lock = TxnCall::LockRow {
        rel: e.rel,
        key: b"a".to_vec(),
    };
    assert_eq!(
        e.call_at((7, 1), start, vec![], lock).await,
        Response::Row(None)
    );
    let put = Queued::Put {
        rel: e.rel,
        key: b"a".to_vec(),
        row: Some(row(1)),
    };
    let xact = PreparedXact {
        gid: "g".into(),
        start_ts: 0,
        prepared_at: 1,
        owner: "alice".into(),
        database: "db".into(),
    };
    let prepare = TxnCall::PrepareAs(xact.clone());
    assert_eq!(
        e.call((7, 1), false, vec![put], prepare).await,
        Response::Done
    );
    // It left the connection's transactions: closing the connection keeps it.
    assert_eq!(e.service.open_transactions(), 0);
    e.service.connection_closed(7).await;
    let listed = e.service.handle(8, Request::PreparedXacts).await;
    let expected = PreparedXact {
        start_ts: start,
        ..xact
    };
    assert_eq!(listed, Response::PreparedXacts(vec![expected]));
    assert!(!e.lock_a_soon((8, 1)).await, "it keeps its lock");
    // Another connection commits it by gid.
    let gid = || "g".to_string();
    let pending = Request::CommitGidPending { gid: gid() };
    assert_eq!(e.service.handle(9, pending).await, Response::Done);
    let ts = e.gtm.commit(start).await.unwrap();
    let commit = Request::CommitGid { gid: gid(), ts };
    assert_eq!(e.service.handle(9, commit).await, Response::Committed(ts));
    assert_eq!(e.committed(b"a").await, Some(row(1)));
    let Response::Error(err) = e.service.handle(9, Request::AbortGid { gid: gid() }).await else {
        panic!("unknown gid")
    };
    assert_eq!(err.code, codes::UNDEFINED_OBJECT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_rel_at_reserves_the_id() {
    let e = env().await;
    let at = e.rel + 10;
    assert_eq!(
        e.service.handle(0, Request::CreateRelAt { rel: at }).await,
        Response::Done
    );
    assert_eq!(
        e.service.handle(0, Request::CreateRel).await,
        Response::Id(at + 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_wait_is_an_edge_and_cancel_waits_ends_it_with_40p01() {
    let e = env().await;
    let lock = || TxnCall::LockRow {
        rel: e.rel,
        key: b"a".to_vec(),
    };
    let holder = e.gtm.begin().await.unwrap();
    assert_eq!(
        e.call_at((1, 1), holder, vec![], lock()).await,
        Response::Row(None)
    );
    let waiter = e.gtm.begin().await.unwrap();
    let cancel = async {
        loop {
            match e.service.handle(0, Request::WaitForEdges).await {
                Response::Edges(edges) if edges.is_empty() => {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await
                }
                Response::Edges(edges) => {
                    assert_eq!(edges, vec![(waiter, holder)]);
                    break;
                }
                other => panic!("WaitForEdges answered {other:?}"),
            }
        }
        let detail = "the cycle".to_string();
        let request = Request::CancelWaits {
            start_ts: waiter,
            detail,
        };
        e.service.handle(0, request).await
    };
    let (waited, cancelled) = tokio::join!(e.call_at((2, 1), waiter, vec![], lock()), cancel);
    assert_eq!(cancelled, Response::Cancelled(true));
    let Response::Error(err) = waited else {
        panic!("the wait ended with {waited:?}")
    };
    assert_eq!(err.code, codes::DEADLOCK_DETECTED);
    assert_eq!(err.detail.as_deref(), Some("the cycle"));
    let again = Request::CancelWaits {
        start_ts: waiter,
        detail: String::new(),
    };
    assert_eq!(e.service.handle(0, again).await, Response::Cancelled(false));
}

/// A transaction's first request that is a plain read may be transient: answered in a
/// transaction of its own, leaving nothing open; the same transaction begins for real with
/// a later request. A transient read waits for a prepared writer as any read does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transient_read_leaves_nothing_open() {
    let e = std::sync::Arc::new(env().await);
    let start = e.prepared((1, 1), 7).await;
    let transient_get = |snapshot| {
        let e = e.clone();
        async move {
            let request = Request::Txn(TxnRequest {
                txn: 1,
                begin: Some(Begin {
                    start_ts: snapshot,
                    isolation: Isolation::ReadCommitted,
                    transient: true,
                }),
                queued: vec![],
                call: TxnCall::Get {
                    rel: e.rel,
                    key: b"a".to_vec(),
                    snapshot,
                    presence_only: false,
                },
            });
            e.service.handle(2, request).await
        }
    };
    let reading = tokio::spawn(transient_get(e.gtm.begin().await.unwrap()));
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!reading.is_finished(), "it waits for the prepared writer");
    let ts = e.gtm.decide(start).await.unwrap();
    let call = TxnCall::CommitPrepared { ts };
    assert_eq!(
        e.call((1, 1), false, vec![], call).await,
        Response::Committed(ts)
    );
    // Committed above the reader's snapshot: it waited to learn that, and sees nothing.
    assert_eq!(reading.await.unwrap(), Response::Row(None));
    assert_eq!(e.service.open_transactions(), 0);
    // Transaction 1 of connection 2 read transiently: a later request begins it.
    let lock = TxnCall::LockRow {
        rel: e.rel,
        key: b"a".to_vec(),
    };
    let begun_at = e.gtm.begin().await.unwrap();
    assert_eq!(
        e.call_at((2, 1), begun_at, vec![], lock).await,
        Response::Row(Some(row(7)))
    );
    assert_eq!(e.service.open_transactions(), 1);
}
