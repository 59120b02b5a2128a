//! Statement execution: bound plans run against the datanode inside a transaction.
//!
//! A plan becomes a tree of operators (`nodes`) that hand rows up in batches when
//! pulled, so a scan, filter, join or limit holds only a batch at a time; sorts, hash
//! tables and aggregation hold what they must, charged to the statement's memory account
//! (`memory`). Every operator loop yields to the session thread regularly (`pace`), so
//! other sessions run, and a cancel, a timeout or a client that went away (the session's
//! `select!` around the statement) ends the statement within a batch.
//!
//! Expressions are evaluated synchronously; a subquery is a read, and reads may wait. So
//! a subquery's result is computed by the executor and kept in the statement's
//! `SubqueryCache` (once for an uncorrelated one, once per distinct outer row for a
//! correlated one), and an evaluation that meets a subquery not yet computed stops,
//! names it, and is run again once it has been computed (`Executor::eval`). Evaluation
//! has no side effects other than volatile functions, so running it again is safe.

mod aggregate;
mod columns;
mod measured;
pub mod memory;
mod nodes;
pub(crate) use nodes::{key_range, row_count};
mod pushed;
mod set_op;
mod spilling;
mod unnest;
mod window;

use crate::catalog::LiveCatalog;
use crate::settings::Settings;
use crate::system;
use datanode_client::{RowBytes, Timestamp};
use distribution::{ClusterTxn, Datanodes};
use memory::MemoryAccount;
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use rustc_hash::FxHashMap;
use spill::row_size;
use sql::eval::{EvalCtx, EvalEnv};
use sql::functions::ScalarFunc;
use sql::plan::*;
use sql::subquery::SubqueryResult;
use sql::TableDef;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use types::timezone::Zone;
use types::Value;

pub type Row = Vec<Value>;

/// A table row read for UPDATE or DELETE: its storage key, its stored bytes (to tell
/// whether a concurrent writer changed it) and its values.
pub type KeyedRow = (Vec<u8>, RowBytes, Row);

/// How many rows `Executor::keyed_rows` reads at a time, and about how many bytes.
#[derive(Clone, Copy)]
pub struct ReadLimit {
    pub rows: usize,
    pub bytes: usize,
}

impl ReadLimit {
    pub const NONE: ReadLimit = ReadLimit {
        rows: usize::MAX,
        bytes: usize::MAX,
    };
}

/// Rows handed up between operators at a time.
const BATCH: usize = 256;

/// What a statement sees of its session.
pub struct SessionView<'a> {
    pub catalog: &'a LiveCatalog,
    pub cluster: &'a crate::nodes::ClusterView,
    pub settings: &'a Mutex<Settings>,
    /// ParameterStatus updates caused by set_config(), sent after the statement.
    pub reports: &'a Mutex<Vec<(&'static str, String)>>,
    /// Transaction start time (now()), microseconds since 2000-01-01.
    pub txn_time: i64,
    pub statement_time: i64,
    pub backend_pid: i32,
    /// This coordinator's sequence values, and what the session remembers of them.
    pub sequences: &'a crate::sequences::SequenceValues,
    pub sequence_state: &'a Mutex<crate::sequences::SessionSequences>,
    pub user: &'a str,
    pub database: &'a str,
    /// The session's TimeZone, DateStyle and IntervalStyle as the statement started.
    pub zone: Zone,
    /// client_encoding: text-format values are sent in it.
    pub encoding: wire::ClientEncoding,
    /// The superuser `postgres` while the catalog has no record of it.
    pub bootstrap_role: &'a Arc<sql::role::RoleDef>,
    /// This coordinator's sessions (pg_stat_activity, pg_cancel_backend).
    pub sessions: &'a crate::activity::SessionRegistry,
    /// This coordinator's pg_stat_statements.
    pub statement_stats: &'a crate::statement_stats::StatementStats,
    /// This coordinator's pg_stat_all_tables and pg_stat_all_indexes.
    pub cumulative_stats: &'a crate::cumulative_stats::CumulativeStats,
    /// This session's activity (its wait for a row lock is shown there).
    pub activity: &'a crate::activity::SessionActivity,
    /// Warnings to send after the statement.
    pub notices: &'a Mutex<Vec<PgError>>,
}

/// What one statement's executors share: its memory account, the subquery results
/// computed so far, and the pacing counter.
pub struct StatementState<'a> {
    pub memory: MemoryAccount,
    /// Bytes an operator may hold before it spills (work_mem).
    pub work_mem: usize,
    /// How long a row lock may be waited for (lock_timeout); None: no limit.
    pub lock_timeout: Option<std::time::Duration>,
    /// Where operators past `work_mem` write their rows.
    pub spill: &'a spill::SpillDir,
    subqueries: Mutex<SubqueryCache>,
    /// What an evaluation stopped at, for the executor to await before evaluating again.
    pending: Mutex<Option<Pending>>,
    /// Whether the last wait pg_sleep asked for is over: its call, evaluated again,
    /// returns at once.
    slept: std::sync::atomic::AtomicBool,
    /// Rows handled since the last yield.
    since_yield: AtomicUsize,
    /// How deep the foreign keys' referential actions nest now (`crate::foreign_keys`).
    pub(crate) cascade_depth: AtomicUsize,
    /// Under EXPLAIN ANALYZE: where each operator adds what it measured, by its `Rel`.
    pub measured: Option<&'a Mutex<NodeMeasures>>,
}

/// EXPLAIN ANALYZE's measurements by `sql::explain::rel_key`.
pub type NodeMeasures = std::collections::HashMap<usize, sql::explain::NodeActuals>;

/// What a synchronous evaluation stopped at (`EvalEnv` cannot await).
enum Pending {
    /// A subquery not computed yet: (plan address, outer-row key).
    Subquery(usize, Vec<u8>),
    /// pg_sleep's wait.
    Sleep(std::time::Duration),
}

#[derive(Default)]
struct SubqueryCache {
    /// Looked up on every evaluation of a subquery expression (per row of a hashed IN):
    /// FxHash, where SipHash took 3 % of such a query's instructions.
    results: FxHashMap<(usize, Vec<u8>), Arc<SubqueryResult>>,
    bytes: usize,
}

impl<'a> StatementState<'a> {
    pub fn new(limits: &crate::settings::StatementLimits, spill: &'a spill::SpillDir) -> Self {
        StatementState {
            spill,
            memory: MemoryAccount::default(),
            work_mem: limits.work_mem,
            lock_timeout: (limits.lock_timeout_ms > 0)
                .then(|| std::time::Duration::from_millis(limits.lock_timeout_ms)),
            subqueries: Mutex::new(SubqueryCache::default()),
            pending: Mutex::new(None),
            slept: std::sync::atomic::AtomicBool::new(false),
            since_yield: AtomicUsize::new(0),
            cascade_depth: AtomicUsize::new(0),
            measured: None,
        }
    }
}

/// Runs read-only parts of a statement at one snapshot.
pub struct Executor<'a> {
    pub dn: &'a Datanodes,
    pub txn: &'a ClusterTxn,
    pub snapshot: Timestamp,
    pub params: &'a [Value],
    pub session: &'a SessionView<'a>,
    pub state: &'a StatementState<'a>,
}

/// A running query's rows (`Executor::rows`).
pub struct QueryRows<'e>(Source<'e>);

enum Source<'e> {
    Tree(nodes::BoxNode<'e>),
    /// Filters and projections over one row read by its primary key (the OLTP point
    /// query): run without an operator tree, whose boxed nodes and futures would be most
    /// of its cost. None once read.
    Point(Option<(&'e Executor<'e>, &'e Rel)>),
}

impl QueryRows<'_> {
    /// The next batch (never empty), or None after the last.
    pub async fn next_batch(&mut self) -> PgResult<Option<Vec<Row>>> {
        match &mut self.0 {
            Source::Tree(node) => node.next().await,
            Source::Point(query) => match query.take() {
                Some((ex, rel)) => Ok(ex.point_row(rel).await?.map(|r| vec![r])),
                None => Ok(None),
            },
        }
    }
}

/// The filters and projections at the top of `rel` down to a primary-key scan, innermost
/// first, and that scan; None if `rel` is not that shape.
fn point_query(rel: &Rel) -> Option<(Vec<&Rel>, &TableDef, &Access)> {
    let mut steps = Vec::new();
    let mut at = rel;
    loop {
        match at {
            Rel::Filter { input, .. } | Rel::Project { input, .. } => {
                steps.push(at);
                at = input;
            }
            Rel::Scan {
                table,
                access: access @ Access::PrimaryKey(_),
            } => {
                steps.reverse();
                return Some((steps, table, access));
            }
            _ => return None,
        }
    }
}

/// The enclosing rows an operator tree runs under (correlation, LATERAL), innermost last.
pub type Outer = Arc<Vec<Row>>;

impl<'a> Executor<'a> {
    fn ctx<'c>(&'c self, outer: &'c [Row]) -> EvalCtx<'c> {
        EvalCtx {
            params: self.params,
            outer,
            env: self,
        }
    }

    /// The rows of a query, collected.
    pub async fn query(&self, q: &Query) -> PgResult<Vec<Row>> {
        self.collect(&q.root, Arc::default(), None).await
    }

    /// The rows of a query, a batch at a time as they are produced.
    pub fn rows<'e>(&'e self, q: &'e Query) -> QueryRows<'e> {
        // EXPLAIN ANALYZE measures operators, which a point query runs without.
        match point_query(&q.root).filter(|_| self.state.measured.is_none()) {
            Some(_) => QueryRows(Source::Point(Some((self, &q.root)))),
            None => QueryRows(Source::Tree(nodes::open(self, &q.root, Arc::default()))),
        }
    }

    /// The row of a point query (`point_query`), if any.
    async fn point_row(&self, rel: &Rel) -> PgResult<Option<Row>> {
        let Some((steps, table, access)) = point_query(rel) else {
            return Err(PgError::internal("not a point query"));
        };
        let Some(mut scan) = nodes::KeyedScan::open(self, table, access, &[]).await? else {
            return Ok(None);
        };
        let Some(found) = scan.next_row().await else {
            return Ok(None);
        };
        let mut row = decode(&found?.1, table)?;
        for step in steps {
            match step {
                Rel::Filter { predicate, .. } => {
                    if !self.matches(&[], Some(predicate), &row).await? {
                        return Ok(None);
                    }
                }
                Rel::Project { exprs, .. } => row = nodes::eval_row(self, &[], exprs, &row).await?,
                _ => unreachable!("point_query returns filters and projections"),
            }
        }
        Ok(Some(row))
    }

    /// The rows of `rel` (at most `limit`), charged to the statement while collected.
    pub fn collect<'f>(
        &'f self,
        rel: &'f Rel,
        outer: Outer,
        limit: Option<usize>,
    ) -> futures::future::BoxFuture<'f, PgResult<Vec<Row>>> {
        Box::pin(async move {
            let mut held = memory::Held::new(&self.state.memory);
            let mut out = Vec::new();
            self.each_row(rel, outer, &mut |row| {
                held.charge(row_size(&row))?;
                out.push(row);
                Ok(limit.is_none_or(|l| out.len() < l))
            })
            .await?;
            Ok(out)
        })
    }

    /// Hands the rows of `rel` to `take` as they are produced, until it returns false.
    pub async fn each_row(
        &self,
        rel: &Rel,
        outer: Outer,
        take: &mut (dyn FnMut(Row) -> PgResult<bool> + Send),
    ) -> PgResult<()> {
        if let (Rel::Values { rows }, None) = (rel, self.state.measured) {
            // INSERT … VALUES: no operator tree for a few rows.
            for exprs in rows {
                if !take(nodes::eval_row(self, &outer, exprs, &[]).await?)? {
                    break;
                }
                self.pace(1).await;
            }
            return Ok(());
        }
        let mut node = nodes::open(self, rel, outer);
        while let Some(batch) = node.next().await? {
            for r in batch {
                if !take(r)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Note `rows` rows handled; every few hundred, let the thread's other sessions run
    /// (and the statement's cancel, timeout and disconnect checks, which wait beside it).
    pub async fn pace(&self, rows: usize) {
        let n = self
            .state
            .since_yield
            .fetch_add(rows + 1, Ordering::Relaxed)
            + rows
            + 1;
        if n >= BATCH {
            self.state.since_yield.store(0, Ordering::Relaxed);
            tokio::task::yield_now().await;
        }
    }

    /// Evaluate `e` against `row`, computing the subqueries it needs first.
    pub async fn eval(&self, outer: &[Row], e: &Expr, row: &[Value]) -> PgResult<Value> {
        match self.ctx(outer).eval(e, row) {
            Err(err) => {
                self.recompute(err, outer, [e], row, |ctx| ctx.eval(e, row))
                    .await
            }
            done => done,
        }
    }

    /// A WHERE clause (true only for TRUE), computing the subqueries it needs first.
    pub async fn matches(
        &self,
        outer: &[Row],
        predicate: Option<&Expr>,
        row: &[Value],
    ) -> PgResult<bool> {
        match self.ctx(outer).matches(predicate, row) {
            Err(err) => {
                self.recompute(err, outer, predicate, row, |ctx| {
                    ctx.matches(predicate, row)
                })
                .await
            }
            done => done,
        }
    }

    /// After `compute` (evaluations of `exprs` against `row`) failed with `err`: computes
    /// the subquery it stopped at and runs it again, until it succeeds or fails otherwise.
    /// Hot loops run `compute` at once and await this only when it fails: an `.await` per
    /// value costs more than most evaluations.
    pub(super) async fn recompute<'x, T>(
        &self,
        mut err: PgError,
        outer: &[Row],
        exprs: impl IntoIterator<Item = &'x Expr> + Clone,
        row: &[Value],
        compute: impl Fn(&EvalCtx) -> PgResult<T>,
    ) -> PgResult<T> {
        loop {
            self.compute_pending(err, outer, exprs.clone(), row).await?;
            match compute(&self.ctx(outer)) {
                Err(again) => err = again,
                done => return done,
            }
        }
    }

    /// After an evaluation of `exprs` failed with `err`: if it stopped at a subquery not
    /// yet computed, compute it, or at pg_sleep, wait (Ok: evaluate again); otherwise the
    /// error stands.
    async fn compute_pending<'x>(
        &self,
        err: PgError,
        outer: &[Row],
        exprs: impl IntoIterator<Item = &'x Expr>,
        row: &[Value],
    ) -> PgResult<()> {
        let pending = self.state.pending.lock().take();
        let (address, key) = match pending {
            None => return Err(err),
            Some(Pending::Subquery(address, key)) => (address, key),
            Some(Pending::Sleep(wait)) => {
                // the statement's timeout, cancel and disconnect checks wait beside this
                tokio::time::sleep(wait).await;
                self.state.slept.store(true, Ordering::Relaxed);
                return Ok(());
            }
        };
        let mut found = None;
        for e in exprs {
            e.visit(&mut |x| {
                if let Expr::Subquery { plan, kind, .. } = x {
                    if std::ptr::from_ref::<Query>(plan) as usize == address {
                        found = Some((plan.as_ref(), kind));
                    }
                }
            });
        }
        let (plan, kind) = found.ok_or_else(|| {
            PgError::internal("pending subquery not found in the expression evaluated")
        })?;
        let mut stack = Vec::with_capacity(outer.len() + 1);
        stack.extend_from_slice(outer);
        stack.push(row.to_vec());
        let rows = self
            .collect(
                &plan.root,
                Arc::new(stack),
                SubqueryResult::rows_needed(kind),
            )
            .await?;
        let bytes: usize = rows.iter().map(|r| row_size(r)).sum::<usize>() + key.len();
        let result = Arc::new(SubqueryResult::from_rows(kind, rows)?);
        let mut cache = self.state.subqueries.lock();
        // Correlated results are kept up to work_mem; past it the cache starts over.
        if cache.bytes + bytes > self.state.work_mem.max(bytes) {
            self.state.memory.release(std::mem::take(&mut cache.bytes));
            cache.results.clear();
        }
        self.state.memory.charge(bytes)?;
        cache.bytes += bytes;
        cache.results.insert((address, key), result);
        Ok(())
    }

    /// Visit the rows of a table reached by `access` whose keys follow `after` (all of
    /// them without it), with their storage keys and bytes, while `visit` returns true
    /// (UPDATE and DELETE; queries scan through `nodes`).
    async fn scan_keyed(
        &self,
        table: &TableDef,
        access: &Access,
        after: Option<&[u8]>,
        visit: &mut (dyn FnMut(Vec<u8>, RowBytes, Row) -> PgResult<bool> + Send),
    ) -> PgResult<()> {
        let Some(mut rows) = nodes::KeyedScan::open_after(self, table, access, &[], after).await?
        else {
            return Ok(());
        };
        while let Some((key, bytes)) = rows.next_row().await.transpose()? {
            let more = visit(key, bytes.clone(), decode(&bytes, table)?)?;
            self.pace(1).await;
            if !more {
                break;
            }
        }
        Ok(())
    }

    /// Rows of a table matching `filter`, with their storage keys, for UPDATE and DELETE:
    /// those whose keys follow `after` (all without it), in key order, up to `limit`, and
    /// the key to go on after if the limit ended the scan. What they hold is charged to
    /// `held`.
    pub async fn keyed_rows(
        &self,
        table: &TableDef,
        access: &Access,
        filter: Option<&Expr>,
        after: Option<&[u8]>,
        limit: ReadLimit,
        held: &mut memory::Held<'_>,
    ) -> PgResult<(Vec<KeyedRow>, Option<Vec<u8>>)> {
        let mut read = Vec::new();
        let mut keep = |read: &mut Vec<KeyedRow>, (key, bytes, row): KeyedRow| -> PgResult<bool> {
            held.charge(key.len() + bytes.len() + row_size(&row))?;
            read.push((key, bytes, row));
            Ok(read.len() < limit.rows && held.bytes() < limit.bytes)
        };
        let subquery_filter = filter.filter(|f| f.has_subquery());
        if subquery_filter.is_some() {
            // The filter's subqueries may have to be computed first: check each row
            // outside the scan's visit (the limit counts the rows read, then).
            self.scan_keyed(table, access, after, &mut |key, bytes, row| {
                keep(&mut read, (key, bytes, row))
            })
            .await?;
        } else {
            let ctx = self.ctx(&[]);
            self.scan_keyed(table, access, after, &mut |key, bytes, row| match ctx
                .matches(filter, &row)?
            {
                true => keep(&mut read, (key, bytes, row)),
                false => Ok(true),
            })
            .await?;
        }
        let full = read.len() >= limit.rows || held.bytes() >= limit.bytes;
        let resume = read.last().filter(|_| full).map(|(key, ..)| key.clone());
        if let Some(f) = subquery_filter {
            let mut matching = Vec::new();
            for (key, bytes, row) in read {
                if self.matches(&[], Some(f), &row).await? {
                    matching.push((key, bytes, row));
                }
            }
            read = matching;
        }
        Ok((read, resume))
    }

    /// `keyed_rows` for an increment (`dml::increments_of`: a primary-key access and a
    /// filter on key columns), which needs only to know whether the row exists: does not
    /// wait for increments of the row being merged (`Datanode::get_row`), so the
    /// row's other columns may be older than the snapshot's.
    pub async fn keyed_row_present(
        &self,
        table: &TableDef,
        access: &Access,
        filter: Option<&Expr>,
    ) -> PgResult<Vec<KeyedRow>> {
        let Access::PrimaryKey(exprs) = access else {
            return Err(PgError::internal(
                "an increment reads its row by primary key",
            ));
        };
        let ctx = self.ctx(&[]);
        let found = self.row_by_key(table, &ctx, exprs, true).await?;
        Ok(match found {
            Some((_, _, row)) if !ctx.matches(filter, &row)? => Vec::new(),
            found => found.into_iter().collect(),
        })
    }

    /// The row under the primary key `exprs` evaluate to (`Datanode::get_row`).
    async fn row_by_key(
        &self,
        table: &TableDef,
        ctx: &EvalCtx<'_>,
        exprs: &[Expr],
        presence_only: bool,
    ) -> PgResult<Option<(Vec<u8>, RowBytes, Row)>> {
        let Some(key) = primary_key(ctx, exprs)? else {
            return Ok(None);
        };
        let mut tally = self.session.cumulative_stats.key_lookup(table);
        let Some(bytes) = self
            .dn
            .get_row(self.txn, table.rel, &key, self.snapshot, presence_only)
            .await?
        else {
            return Ok(None);
        };
        tally.row();
        let row = decode(&bytes, table)?;
        Ok(Some((key, bytes, row)))
    }
}

impl EvalEnv for Executor<'_> {
    fn subquery(
        &self,
        plan: &Query,
        _kind: &SubqueryKind,
        outer: &[Row],
        row: &[Value],
    ) -> PgResult<Arc<SubqueryResult>> {
        let address = std::ptr::from_ref(plan) as usize;
        let mut key = Vec::new();
        if plan.correlated {
            // Keyed by the values the subquery may read, not whole rows: outer rows that
            // differ only elsewhere share one result.
            for r in outer.iter().map(Vec::as_slice).chain([row]) {
                for v in plan.outer_columns.iter().filter_map(|&i| r.get(i)) {
                    types::codec::encode_key(std::slice::from_ref(v), &mut key);
                }
                key.push(0xff); // the levels must not run together
            }
        }
        if let Some(found) = self
            .state
            .subqueries
            .lock()
            .results
            .get(&(address, key.clone()))
        {
            return Ok(found.clone());
        }
        *self.state.pending.lock() = Some(Pending::Subquery(address, key));
        Err(PgError::internal("subquery result not computed yet"))
    }

    fn session_function(&self, func: ScalarFunc, args: Vec<Value>) -> PgResult<Value> {
        if func != ScalarFunc::PgSleep {
            return system::session_function(self.session, func, args);
        }
        if self.state.slept.swap(false, Ordering::Relaxed) {
            return Ok(Value::Text(String::new()));
        }
        match args.first().and_then(Value::as_f64) {
            Some(seconds) if seconds > 0.0 => {
                let wait = std::time::Duration::try_from_secs_f64(seconds)
                    .unwrap_or(std::time::Duration::MAX);
                *self.state.pending.lock() = Some(Pending::Sleep(wait));
                Err(PgError::internal("pg_sleep's wait not awaited yet"))
            }
            Some(_) => Ok(Value::Text(String::new())),
            None => Ok(Value::Null),
        }
    }

    fn zone(&self) -> &Zone {
        &self.session.zone
    }
}

/// Encode primary-key values into a storage key; None if any is NULL (matches nothing).
fn primary_key(ctx: &EvalCtx, exprs: &[Expr]) -> PgResult<Option<Vec<u8>>> {
    let values = exprs
        .iter()
        .map(|e| ctx.eval(e, &[]))
        .collect::<PgResult<Vec<_>>>()?;
    Ok(key_of_values(&values))
}

/// The storage key of primary-key values; None if any is NULL (matches nothing).
pub(crate) fn key_of_values(values: &[Value]) -> Option<Vec<u8>> {
    if values.iter().any(Value::is_null) {
        return None;
    }
    let mut key = Vec::new();
    types::codec::encode_key(values, &mut key);
    Some(key)
}

/// Storage key for a row of `table` (primary key columns), or None for a table without one.
pub fn row_key(table: &TableDef, row: &[Value]) -> Option<Vec<u8>> {
    let pk = table.primary_key.as_ref()?;
    // Column by column (a key's encoding is its values' encodings in a row): no copies of
    // the values, which were more than half the cost of a bulk load's keys.
    let mut key = Vec::with_capacity(pk.len() * 9);
    for &i in pk {
        types::codec::encode_key(std::slice::from_ref(&row[i]), &mut key);
    }
    Some(key)
}

/// Key for a table without a primary key: its row id, big-endian so keys sort by id.
pub fn row_id_key(id: u64) -> Vec<u8> {
    id.to_be_bytes().to_vec()
}

pub fn decode(bytes: &[u8], table: &TableDef) -> PgResult<Row> {
    let mut row = types::codec::decode_row(bytes)?;
    // Rows written before a column was added are shorter.
    row.resize(table.columns.len(), Value::Null);
    Ok(row)
}

pub fn encode(row: &[Value]) -> RowBytes {
    let mut out = Vec::with_capacity(64);
    types::codec::encode_row(row, &mut out);
    RowBytes::from(out)
}

/// A byte string equal for rows whose values are equal (GROUP BY, DISTINCT).
pub(crate) fn group_key(values: &[Value]) -> Vec<u8> {
    let mut key = Vec::new();
    types::codec::encode_key(values, &mut key);
    key
}

/// Build a table row from an INSERT's or COPY's source row, applying defaults and
/// checking its constraints. The source's values are moved, not cloned: no two columns
/// take the same source position (`insert_targets`).
pub fn insert_row(
    ctx: &EvalCtx,
    table: &TableDef,
    targets: &[InsertTarget],
    checks: &[BoundCheck],
    mut source: Row,
) -> PgResult<Row> {
    let mut row = Vec::with_capacity(targets.len());
    for t in targets {
        row.push(match t {
            InsertTarget::Source(i) => source
                .get_mut(*i)
                .map_or(Value::Null, |v| std::mem::replace(v, Value::Null)),
            InsertTarget::Default(Some(e)) => ctx.eval(e, &[])?,
            InsertTarget::Default(None) => Value::Null,
        });
    }
    check_row(ctx, table, checks, &row)?;
    Ok(row)
}

/// The constraints a row written to `table` satisfies, as PostgreSQL checks them: NOT
/// NULL, then each CHECK constraint (in name order; NULL passes).
pub fn check_row(
    ctx: &EvalCtx,
    table: &TableDef,
    checks: &[BoundCheck],
    row: &[Value],
) -> PgResult<()> {
    for (i, c) in table.columns.iter().enumerate() {
        if c.not_null && row[i].is_null() {
            return Err(PgError::new(
                codes::NOT_NULL_VIOLATION,
                format!(
                    "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                    c.name, table.name
                ),
            )
            .with_detail(format!("Failing row contains ({}).", row_text(table, row))));
        }
    }
    for check in checks {
        if ctx.eval_bool(&check.expr, row)? == Some(false) {
            return Err(PgError::new(
                codes::CHECK_VIOLATION,
                format!(
                    "new row for relation \"{}\" violates check constraint \"{}\"",
                    table.name, check.name
                ),
            )
            .with_detail(format!("Failing row contains ({}).", row_text(table, row))));
        }
    }
    Ok(())
}

fn row_text(table: &TableDef, row: &[Value]) -> String {
    row.iter()
        .zip(&table.columns)
        .map(|(v, c)| {
            if v.is_null() {
                "null".to_string()
            } else {
                types::io::to_text_string(v, &c.ty.to_type()).unwrap_or_default()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// 23505 for a duplicate primary key, with PostgreSQL's detail line.
pub fn unique_violation(table: &TableDef, row: &[Value]) -> PgError {
    let pk = table.primary_key.clone().unwrap_or_default();
    let cols: Vec<&str> = pk.iter().map(|&i| table.columns[i].name.as_str()).collect();
    let vals: Vec<String> = pk
        .iter()
        .map(|&i| {
            types::io::to_text_string(&row[i], &table.columns[i].ty.to_type()).unwrap_or_default()
        })
        .collect();
    PgError::new(
        codes::UNIQUE_VIOLATION,
        format!(
            "duplicate key value violates unique constraint \"{}\"",
            table.pk_name.clone().unwrap_or_default()
        ),
    )
    .with_detail(format!(
        "Key ({})=({}) already exists.",
        cols.join(", "),
        vals.join(", ")
    ))
}
