//! pg_locks: the transactions of this coordinator's sessions and their row-lock waits.
//!
//! Row locks live on the datanodes, which name a transaction by its GTM start timestamp;
//! their wait-for edges (waiter, blocker) are what a lock wait is here. Each session in a
//! transaction shows PostgreSQL's two granted locks of a transaction, its `virtualxid`
//! and its `transactionid` (the start timestamp, for want of an xid), and each wait of
//! one of its statements a `transactionid` ShareLock on the blocker that is not granted,
//! as PostgreSQL shows a wait for a row another transaction holds. So the usual
//! monitoring queries (the blocked session joined to the granted lock on the same
//! transactionid, pg_blocking_pids) find the blocker as they do in PostgreSQL. Not
//! shown: relation locks (there are no table-level locks against DML here) and
//! PostgreSQL's tuple locks; a blocker that is another coordinator's session shows only
//! as the transactionid of the waiter's row.

use crate::activity::SessionActivity;
use crate::exec::SessionView;
use distribution::Datanodes;
use pgerror::PgResult;
use rustc_hash::FxHashMap;
use std::sync::Arc;
use types::Value;

/// The rows of pg_locks, in the view's column order, by pid.
pub async fn rows(session: &SessionView<'_>, datanodes: &Datanodes) -> PgResult<Vec<Vec<Value>>> {
    let in_transaction: Vec<(u64, Arc<SessionActivity>)> = session
        .sessions
        .all()
        .into_iter()
        .filter_map(|a| a.transaction_start().map(|start| (start, a)))
        .collect();
    if in_transaction.is_empty() {
        return Ok(Vec::new());
    }
    let by_start: FxHashMap<u64, &Arc<SessionActivity>> =
        in_transaction.iter().map(|(s, a)| (*s, a)).collect();
    let mut waits: FxHashMap<u64, Vec<u64>> = FxHashMap::default();
    for (waiter, blocker) in datanodes.wait_for_edges().await? {
        if by_start.contains_key(&waiter) {
            waits.entry(waiter).or_default().push(blocker);
        }
    }
    let mut rows = Vec::new();
    for (start, activity) in &in_transaction {
        let pid = activity.identity.pid;
        let vxid = virtual_xid(pid, *start);
        rows.push(lock_row(LockRow {
            locktype: "virtualxid",
            virtualxid: Some(&vxid),
            transactionid: None,
            virtualtransaction: &vxid,
            pid,
            mode: "ExclusiveLock",
            granted: true,
            fastpath: true,
            waitstart: None,
        }));
        rows.push(lock_row(LockRow {
            locktype: "transactionid",
            virtualxid: None,
            transactionid: Some(*start),
            virtualtransaction: &vxid,
            pid,
            mode: "ExclusiveLock",
            granted: true,
            fastpath: false,
            waitstart: None,
        }));
        for blocker in waits.get(start).into_iter().flatten() {
            rows.push(lock_row(LockRow {
                locktype: "transactionid",
                virtualxid: None,
                transactionid: Some(*blocker),
                virtualtransaction: &vxid,
                pid,
                mode: "ShareLock",
                granted: false,
                fastpath: false,
                waitstart: activity.lock_wait_start(),
            }));
        }
    }
    Ok(rows)
}

/// A transaction's virtual transaction id: PostgreSQL's is backend id/local counter.
fn virtual_xid(pid: i32, start: u64) -> String {
    format!("{pid}/{start}")
}

/// The columns of one row that vary here; the object columns are NULL.
struct LockRow<'r> {
    locktype: &'static str,
    virtualxid: Option<&'r str>,
    transactionid: Option<u64>,
    virtualtransaction: &'r str,
    pid: i32,
    mode: &'static str,
    granted: bool,
    fastpath: bool,
    waitstart: Option<i64>,
}

fn lock_row(r: LockRow) -> Vec<Value> {
    let text = |s: &str| Value::Text(s.to_string());
    vec![
        text(r.locktype),
        Value::Null, // database
        Value::Null, // relation
        Value::Null, // page
        Value::Null, // tuple
        r.virtualxid.map_or(Value::Null, text),
        r.transactionid
            .map_or(Value::Null, |t| Value::Int8(t as i64)),
        Value::Null, // classid
        Value::Null, // objid
        Value::Null, // objsubid
        text(r.virtualtransaction),
        Value::Int4(r.pid),
        text(r.mode),
        Value::Bool(r.granted),
        Value::Bool(r.fastpath),
        r.waitstart.map_or(Value::Null, Value::TimestampTz),
    ]
}
