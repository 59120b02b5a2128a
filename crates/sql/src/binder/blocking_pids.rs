//! `pg_blocking_pids(pid)`: the pids of the sessions whose transactions the session
//! `pid` waits for, read from pg_locks as the usual monitoring query does (a lock that
//! is not granted joined to the granted lock on the same transaction). Bound as that
//! query, an ARRAY subquery, so it reads the datanodes' waits as any scan of pg_locks
//! does; its columns have names no query uses, so the argument still refers to the
//! enclosing query (`SELECT pid, pg_blocking_pids(pid) FROM pg_stat_activity`).

use super::select_srf::parsed;
use pgerror::PgResult;
use sqlparser::ast;

/// The subquery `pg_blocking_pids(pid)` stands for.
pub(super) fn blocking_pids_query(pid: &ast::Expr) -> PgResult<ast::Expr> {
    let sql = format!(
        "ARRAY(SELECT DISTINCT \"meridian blocker\" FROM \
           (SELECT w.pid AS \"meridian waiter\", b.pid AS \"meridian blocker\" \
            FROM pg_catalog.pg_locks w JOIN pg_catalog.pg_locks b \
              ON b.transactionid = w.transactionid AND b.granted AND b.pid <> w.pid \
            WHERE NOT w.granted AND w.locktype = 'transactionid' \
              AND b.locktype = 'transactionid') AS \"meridian blocking\" \
         WHERE \"meridian waiter\" = ({pid}) ORDER BY 1)"
    );
    parsed(&sql, |p| p.parse_expr())
}
