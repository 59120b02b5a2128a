//! Statement execution: bound plans run against the datanode inside a transaction.
//!
//! Scans, filters, projections and aggregation stream row by row (memory stays bounded
//! for large tables); joins, sorts and set operations materialise their inputs (OLTP
//! statements and the catalog queries of psql and drivers are small). Base-table access
//! goes through the datanode interface only: point reads by primary key, key ranges, or
//! ordered scans.

use crate::catalog::LiveCatalog;
use crate::settings::Settings;
use crate::system;
use datanode::{Datanode, RowBytes, Timestamp, Txn};
use futures::future::BoxFuture;
use futures::FutureExt;
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use sql::eval::{EvalCtx, EvalEnv};
use sql::functions::{AggFunc, ScalarFunc};
use sql::plan::*;
use sql::TableDef;
use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use types::ops::{self, BinaryOp};
use types::{DataType, Value};

pub type Row = Vec<Value>;

/// What a statement sees of its session.
pub struct SessionView<'a> {
    pub catalog: &'a LiveCatalog,
    pub settings: &'a Mutex<Settings>,
    /// ParameterStatus updates caused by set_config(), sent after the statement.
    pub reports: &'a Mutex<Vec<(&'static str, String)>>,
    /// Transaction start time (now()), microseconds since 2000-01-01.
    pub txn_time: i64,
    pub statement_time: i64,
    pub backend_pid: i32,
    pub user: &'a str,
    pub database: &'a str,
}

/// Runs read-only parts of a statement at one snapshot.
pub struct Executor<'a> {
    pub dn: &'a Datanode,
    pub txn: &'a Txn,
    pub snapshot: Timestamp,
    pub params: &'a [Value],
    pub session: &'a SessionView<'a>,
}

impl<'a> Executor<'a> {
    fn ctx<'c>(&'c self, outer: &'c [&'c [Value]]) -> EvalCtx<'c> {
        EvalCtx { params: self.params, outer, env: self }
    }

    pub async fn query(&self, q: &Query) -> PgResult<Vec<Row>> {
        match &q.root {
            // Most statements: no boxed future for the root (`rel` boxes, to recurse).
            root @ (Rel::Scan { .. } | Rel::Filter { .. } | Rel::Project { .. }) => self.collect(root, &[]).await,
            root => self.rel(root, &[]).await,
        }
    }

    /// The rows `stream` feeds, collected.
    async fn collect(&self, rel: &Rel, outer: &[&[Value]]) -> PgResult<Vec<Row>> {
        let mut out = Vec::new();
        self.stream(rel, outer, &mut |r| {
            out.push(r);
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// Execute a relation; `outer` is the stack of enclosing rows (LATERAL, correlation).
    pub fn rel<'f>(&'f self, rel: &'f Rel, outer: &'f [&'f [Value]]) -> BoxFuture<'f, PgResult<Vec<Row>>> {
        async move {
            let ctx = self.ctx(outer);
            Ok(match rel {
                Rel::Unit => vec![Vec::new()],
                Rel::Scan { .. } | Rel::Filter { .. } | Rel::Project { .. } => self.collect(rel, outer).await?,
                Rel::System { table } => system::rows(*table, self.session)?,
                Rel::Values { rows } => {
                    let mut out = Vec::with_capacity(rows.len());
                    for r in rows {
                        out.push(r.iter().map(|e| ctx.eval(e, &[])).collect::<PgResult<Row>>()?);
                    }
                    out
                }
                Rel::GenerateSeries { start, stop, step } => generate_series(&ctx, start, stop, step.as_ref())?,
                Rel::Join { left, right, kind, on, lateral } => self.join(left, right, *kind, on.as_ref(), *lateral, outer).await?,
                Rel::Aggregate { input, group_by, aggs } => {
                    let mut agg = Aggregator::new(group_by, aggs);
                    self.stream(input, outer, &mut |r| agg.push(&ctx, &r)).await?;
                    agg.finish()?
                }
                Rel::Sort { input, keys } => {
                    let rows = self.rel(input, outer).await?;
                    sort_rows(&ctx, rows, keys)?
                }
                Rel::Limit { input, limit, offset } => {
                    let rows = self.rel(input, outer).await?;
                    let count = |e: &Option<Expr>| -> PgResult<Option<usize>> {
                        match e {
                            None => Ok(None),
                            Some(e) => match ctx.eval(e, &[])? {
                                Value::Null => Ok(None),
                                v => {
                                    let n = v.as_i64().unwrap_or(0);
                                    if n < 0 {
                                        return Err(PgError::new(codes::INVALID_ROW_COUNT_IN_LIMIT, "LIMIT must not be negative"));
                                    }
                                    Ok(Some(n as usize))
                                }
                            },
                        }
                    };
                    let skip = count(offset)?.unwrap_or(0);
                    let take = count(limit)?.unwrap_or(usize::MAX);
                    rows.into_iter().skip(skip).take(take).collect()
                }
                Rel::Distinct { input } => distinct(self.rel(input, outer).await?),
                Rel::WorkTable { work, .. } => work.lock().map_err(|_| poisoned())?.clone(),
                Rel::RecursiveUnion { base, recursive, all, work } => {
                    let mut seen = HashSet::new();
                    let mut keep = |rows: Vec<Row>| -> Vec<Row> {
                        if *all {
                            rows
                        } else {
                            rows.into_iter().filter(|r| seen.insert(group_key(r))).collect()
                        }
                    };
                    let mut working = keep(self.rel(base, outer).await?);
                    let mut result = working.clone();
                    // Save the cell: this node may run inside an iteration of itself (a
                    // correlated subquery re-evaluated per row).
                    let saved = std::mem::take(&mut *work.lock().map_err(|_| poisoned())?);
                    let mut outcome = Ok(());
                    while !working.is_empty() {
                        *work.lock().map_err(|_| poisoned())? = std::mem::take(&mut working);
                        match self.rel(recursive, outer).await {
                            Ok(rows) => working = keep(rows),
                            Err(e) => {
                                outcome = Err(e);
                                break;
                            }
                        }
                        result.extend(working.iter().cloned());
                        if result.len() > 10_000_000 {
                            outcome = Err(PgError::new(codes::PROGRAM_LIMIT_EXCEEDED, "recursive query produced too many rows"));
                            break;
                        }
                    }
                    *work.lock().map_err(|_| poisoned())? = saved;
                    outcome?;
                    result
                }
                Rel::Union { left, right, all } => {
                    let mut rows = self.rel(left, outer).await?;
                    rows.extend(self.rel(right, outer).await?);
                    if *all {
                        rows
                    } else {
                        distinct(rows)
                    }
                }
            })
        }
        .boxed()
    }

    /// Feed the rows of `rel` to `sink` one at a time, through the filters and
    /// projections at its top (`through_pipeline`, one future for the whole chain): the
    /// rows of a scan below them stream; any other operator below is materialised first.
    async fn stream(
        &self,
        rel: &Rel,
        outer: &[&[Value]],
        sink: &mut (dyn FnMut(Row) -> PgResult<()> + Send),
    ) -> PgResult<()> {
        let ctx = self.ctx(outer);
        let mut through = |row: Row| match through_pipeline(&ctx, rel, row)? {
            Some(r) => sink(r),
            None => Ok(()),
        };
        match pipeline_bottom(rel) {
            Rel::Scan { table, access } => self.scan_keyed(table, access, outer, &mut |_, _, row| through(row)).await,
            bottom => {
                for r in self.rel(bottom, outer).await? {
                    through(r)?;
                }
                Ok(())
            }
        }
    }

    /// Visit the rows of a table reached by `access`, with their storage keys and bytes.
    async fn scan_keyed(
        &self,
        table: &TableDef,
        access: &Access,
        outer: &[&[Value]],
        visit: &mut (dyn FnMut(Vec<u8>, RowBytes, Row) -> PgResult<()> + Send),
    ) -> PgResult<()> {
        let ctx = self.ctx(outer);
        let (lo, hi) = match access {
            Access::PrimaryKey(exprs) => {
                if let Some((key, bytes, row)) = self.row_by_key(table, &ctx, exprs, false).await? {
                    visit(key, bytes, row)?;
                }
                return Ok(());
            }
            Access::Full => (Bound::Unbounded, Bound::Unbounded),
            Access::KeyRange { lower, upper } => {
                let bound = |b: &Option<KeyBound>| -> PgResult<Option<Bound<Vec<u8>>>> {
                    let Some(b) = b else { return Ok(Some(Bound::Unbounded)) };
                    let Some(key) = primary_key(&ctx, std::slice::from_ref(&b.value))? else { return Ok(None) };
                    Ok(Some(if b.inclusive { Bound::Included(key) } else { Bound::Excluded(key) }))
                };
                // A NULL bound matches nothing.
                let (Some(lo), Some(hi)) = (bound(lower)?, bound(upper)?) else { return Ok(()) };
                (lo, hi)
            }
        };
        for (i, item) in self.dn.scan(self.txn, table.rel, lo, hi, self.snapshot).await?.enumerate() {
            let (key, bytes) = item?;
            let row = decode(&bytes, table)?;
            visit(key, bytes, row)?;
            // A session thread serves many sessions: let the others run during long scans.
            if i % 256 == 255 {
                tokio::task::yield_now().await;
            }
        }
        Ok(())
    }

    /// Rows of a table matching `filter`, with their storage keys, for UPDATE and DELETE.
    pub async fn keyed_rows(&self, table: &TableDef, access: &Access, filter: Option<&Expr>) -> PgResult<Vec<(Vec<u8>, RowBytes, Row)>> {
        let ctx = self.ctx(&[]);
        let mut out = Vec::new();
        self.scan_keyed(table, access, &[], &mut |key, bytes, row| {
            if ctx.matches(filter, &row)? {
                out.push((key, bytes, row));
            }
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// `keyed_rows` for an increment (`dml::increments_of`: a primary-key access and a
    /// filter on key columns), which needs only to know whether the row exists: does not
    /// wait for increments of the row being merged (`Datanode::get_row`), so the
    /// row's other columns may be older than the snapshot's.
    pub async fn keyed_row_present(&self, table: &TableDef, access: &Access, filter: Option<&Expr>) -> PgResult<Vec<(Vec<u8>, RowBytes, Row)>> {
        let Access::PrimaryKey(exprs) = access else {
            return self.keyed_rows(table, access, filter).await;
        };
        let ctx = self.ctx(&[]);
        let found = self.row_by_key(table, &ctx, exprs, true).await?;
        Ok(match found {
            Some((_, _, row)) if !ctx.matches(filter, &row)? => Vec::new(),
            found => found.into_iter().collect(),
        })
    }

    /// The row under the primary key `exprs` evaluate to (`Datanode::get_row`).
    async fn row_by_key(&self, table: &TableDef, ctx: &EvalCtx<'_>, exprs: &[Expr], presence_only: bool) -> PgResult<Option<(Vec<u8>, RowBytes, Row)>> {
        let Some(key) = primary_key(ctx, exprs)? else { return Ok(None) };
        let Some(bytes) = self.dn.get_row(self.txn, table.rel, &key, self.snapshot, presence_only).await? else {
            return Ok(None);
        };
        let row = decode(&bytes, table)?;
        Ok(Some((key, bytes, row)))
    }

    async fn join(&self, left: &Rel, right: &Rel, kind: JoinKind, on: Option<&Expr>, lateral: bool, outer: &[&[Value]]) -> PgResult<Vec<Row>> {
        let left_rows = self.rel(left, outer).await?;
        let right_width = right.width();
        let shared_right = if lateral { None } else { Some(self.rel(right, outer).await?) };
        let ctx = self.ctx(outer);
        let mut out = Vec::new();
        for l in left_rows {
            let per_row;
            let right_rows = match &shared_right {
                Some(r) => r,
                None => {
                    let mut stack: Vec<&[Value]> = outer.to_vec();
                    stack.push(&l);
                    per_row = self.rel(right, &stack).await?;
                    &per_row
                }
            };
            let mut matched = false;
            for r in right_rows {
                let mut joined = Vec::with_capacity(l.len() + r.len());
                joined.extend_from_slice(&l);
                joined.extend_from_slice(r);
                if ctx.matches(on, &joined)? {
                    matched = true;
                    out.push(joined);
                }
            }
            if !matched && kind == JoinKind::Left {
                let mut joined = l.clone();
                joined.extend(std::iter::repeat_n(Value::Null, right_width));
                out.push(joined);
            }
        }
        Ok(out)
    }
}

impl EvalEnv for Executor<'_> {
    fn run_subquery(&self, plan: &Query, outer: &[&[Value]]) -> PgResult<Vec<Vec<Value>>> {
        // Subqueries run to completion without yielding: they read at the statement's
        // snapshot, which only waits when a commit of that snapshot is still being applied.
        match self.rel(&plan.root, outer).now_or_never() {
            Some(r) => r,
            None => Err(PgError::new(
                codes::OBJECT_NOT_IN_PREREQUISITE_STATE,
                "subquery had to wait for a concurrent commit; retry the statement",
            )),
        }
    }

    fn session_function(&self, func: ScalarFunc, args: Vec<Value>) -> PgResult<Value> {
        system::session_function(self.session, func, args)
    }
}

/// Encode primary-key values into a storage key; None if any is NULL (matches nothing).
fn primary_key(ctx: &EvalCtx, exprs: &[Expr]) -> PgResult<Option<Vec<u8>>> {
    let mut values = Vec::with_capacity(exprs.len());
    for e in exprs {
        let v = ctx.eval(e, &[])?;
        if v.is_null() {
            return Ok(None);
        }
        values.push(v);
    }
    let mut key = Vec::new();
    types::codec::encode_key(&values, &mut key);
    Ok(Some(key))
}

/// Storage key for a row of `table` (primary key columns), or None for a table without one.
pub fn row_key(table: &TableDef, row: &[Value]) -> Option<Vec<u8>> {
    let pk = table.primary_key.as_ref()?;
    let values: Vec<Value> = pk.iter().map(|&i| row[i].clone()).collect();
    let mut key = Vec::new();
    types::codec::encode_key(&values, &mut key);
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

/// The operator under the chain of filters and projections at the top of `rel` (`rel`
/// itself if it is neither).
fn pipeline_bottom(rel: &Rel) -> &Rel {
    match rel {
        Rel::Filter { input, .. } | Rel::Project { input, .. } => pipeline_bottom(input),
        other => other,
    }
}

/// A row of `pipeline_bottom(rel)` through `rel`'s filters and projections, innermost
/// first; None if a filter drops it.
fn through_pipeline(ctx: &EvalCtx, rel: &Rel, row: Row) -> PgResult<Option<Row>> {
    match rel {
        Rel::Filter { input, predicate } => match through_pipeline(ctx, input, row)? {
            Some(r) if ctx.matches(Some(predicate), &r)? => Ok(Some(r)),
            _ => Ok(None),
        },
        Rel::Project { input, exprs } => match through_pipeline(ctx, input, row)? {
            Some(r) => Ok(Some(exprs.iter().map(|e| ctx.eval(e, &r)).collect::<PgResult<Row>>()?)),
            None => Ok(None),
        },
        _ => Ok(Some(row)),
    }
}

fn generate_series(ctx: &EvalCtx, start: &Expr, stop: &Expr, step: Option<&Expr>) -> PgResult<Vec<Row>> {
    let s = ctx.eval(start, &[])?;
    let e = ctx.eval(stop, &[])?;
    let st = match step {
        Some(x) => ctx.eval(x, &[])?,
        None => Value::Int8(1),
    };
    let (Some(a), Some(b), Some(step)) = (s.as_i64(), e.as_i64(), st.as_i64()) else { return Ok(Vec::new()) };
    if step == 0 {
        return Err(PgError::new(codes::INVALID_PARAMETER_VALUE, "step size cannot equal zero"));
    }
    let int4 = matches!(s, Value::Int4(_));
    let mut out = Vec::new();
    let mut i = a;
    while (step > 0 && i <= b) || (step < 0 && i >= b) {
        out.push(vec![if int4 { Value::Int4(i as i32) } else { Value::Int8(i) }]);
        match i.checked_add(step) {
            Some(n) => i = n,
            None => break,
        }
    }
    Ok(out)
}

fn poisoned() -> PgError {
    PgError::new(codes::INTERNAL_ERROR, "recursive query work table poisoned")
}

/// A byte string equal for rows whose values are equal (GROUP BY, DISTINCT).
fn group_key(values: &[Value]) -> Vec<u8> {
    let mut key = Vec::new();
    types::codec::encode_key(values, &mut key);
    key
}

fn distinct(rows: Vec<Row>) -> Vec<Row> {
    let mut seen = HashSet::new();
    rows.into_iter().filter(|r| seen.insert(group_key(r))).collect()
}

fn sort_rows(ctx: &EvalCtx, rows: Vec<Row>, keys: &[SortKey]) -> PgResult<Vec<Row>> {
    let mut keyed = Vec::with_capacity(rows.len());
    for r in rows {
        let k = keys.iter().map(|sk| ctx.eval(&sk.expr, &r)).collect::<PgResult<Vec<_>>>()?;
        keyed.push((k, r));
    }
    keyed.sort_by(|(a, _), (b, _)| {
        for (i, sk) in keys.iter().enumerate() {
            let (x, y) = (&a[i], &b[i]);
            let ord = match (x.is_null(), y.is_null()) {
                (true, true) => std::cmp::Ordering::Equal,
                (true, false) => if sk.nulls_first { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater },
                (false, true) => if sk.nulls_first { std::cmp::Ordering::Greater } else { std::cmp::Ordering::Less },
                (false, false) => {
                    let o = ops::sort_cmp(x, y);
                    if sk.descending { o.reverse() } else { o }
                }
            };
            if ord != std::cmp::Ordering::Equal {
                return ord;
            }
        }
        std::cmp::Ordering::Equal
    });
    Ok(keyed.into_iter().map(|(_, r)| r).collect())
}

/// Running state of one aggregate in one group.
#[derive(Clone)]
enum AggState {
    Count(i64),
    /// Sum/min/max/bool: the value so far (Null before the first input).
    Value(Value),
    Avg { sum: Value, count: i64 },
    Array(Vec<Value>),
}

/// Hash aggregation fed one row at a time; groups keep first-seen order.
struct Aggregator<'p> {
    group_by: &'p [Expr],
    aggs: &'p [AggCall],
    init: Vec<AggState>,
    groups: Vec<(Vec<Value>, Vec<AggState>, Vec<HashSet<Vec<u8>>>)>,
    index: HashMap<Vec<u8>, usize>,
}

impl<'p> Aggregator<'p> {
    fn new(group_by: &'p [Expr], aggs: &'p [AggCall]) -> Self {
        let init = aggs
            .iter()
            .map(|a| match a.func {
                AggFunc::Count => AggState::Count(0),
                AggFunc::Avg => AggState::Avg { sum: Value::Null, count: 0 },
                AggFunc::ArrayAgg | AggFunc::StringAgg => AggState::Array(Vec::new()),
                _ => AggState::Value(Value::Null),
            })
            .collect();
        Aggregator { group_by, aggs, init, groups: Vec::new(), index: HashMap::new() }
    }

    fn push(&mut self, ctx: &EvalCtx, r: &[Value]) -> PgResult<()> {
        let keys = self.group_by.iter().map(|g| ctx.eval(g, r)).collect::<PgResult<Vec<_>>>()?;
        let gk = group_key(&keys);
        let slot = match self.index.get(&gk) {
            Some(&i) => i,
            None => {
                self.groups.push((keys, self.init.clone(), vec![HashSet::new(); self.aggs.len()]));
                self.index.insert(gk, self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        let (_, states, seen) = &mut self.groups[slot];
        for (i, a) in self.aggs.iter().enumerate() {
            if let Some(f) = &a.filter {
                if ctx.eval(f, r)? != Value::Bool(true) {
                    continue;
                }
            }
            let v = match &a.arg {
                Some(e) => ctx.eval(e, r)?,
                None => Value::Bool(true),
            };
            if v.is_null() && a.func != AggFunc::ArrayAgg {
                continue;
            }
            if a.distinct && !seen[i].insert(group_key(std::slice::from_ref(&v))) {
                continue;
            }
            accumulate(&mut states[i], a, v)?;
        }
        Ok(())
    }

    fn finish(mut self) -> PgResult<Vec<Row>> {
        if self.groups.is_empty() && self.group_by.is_empty() {
            self.groups.push((Vec::new(), self.init.clone(), Vec::new()));
        }
        let aggs = self.aggs;
        self.groups
            .into_iter()
            .map(|(mut keys, states, _)| {
                for (s, a) in states.into_iter().zip(aggs) {
                    keys.push(finish(s, a)?);
                }
                Ok(keys)
            })
            .collect()
    }
}

fn accumulate(state: &mut AggState, agg: &AggCall, v: Value) -> PgResult<()> {
    match state {
        AggState::Count(n) => *n += 1,
        AggState::Array(items) => items.push(v),
        AggState::Avg { sum, count } => {
            let v = match v {
                Value::Float4(f) => Value::Float8(f as f64),
                Value::Float8(f) => Value::Float8(f),
                other => types::cast::cast(other.clone(), &other.natural_type(), &DataType::Numeric { precision_scale: None }, false)?,
            };
            *sum = if sum.is_null() { v } else { ops::eval_binary(BinaryOp::Add, sum, &v)? };
            *count += 1;
        }
        AggState::Value(cur) => {
            *cur = match agg.func {
                AggFunc::Sum => {
                    let v = types::cast::cast(v.clone(), &v.natural_type(), &agg.ty, false)?;
                    if cur.is_null() {
                        v
                    } else {
                        ops::eval_binary(BinaryOp::Add, cur, &v)?
                    }
                }
                AggFunc::Min | AggFunc::Max => {
                    let want = if agg.func == AggFunc::Min { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater };
                    if cur.is_null() || ops::sort_cmp(&v, cur) == want {
                        v
                    } else {
                        return Ok(());
                    }
                }
                AggFunc::BoolAnd => Value::Bool(cur.as_bool().unwrap_or(true) && v.as_bool().unwrap_or(false)),
                AggFunc::BoolOr => Value::Bool(cur.as_bool().unwrap_or(false) || v.as_bool().unwrap_or(false)),
                AggFunc::Count | AggFunc::Avg | AggFunc::ArrayAgg | AggFunc::StringAgg => unreachable!("handled by their own states"),
            };
        }
    }
    Ok(())
}

fn finish(state: AggState, agg: &AggCall) -> PgResult<Value> {
    Ok(match state {
        AggState::Count(n) => Value::Int8(n),
        AggState::Value(v) => v,
        AggState::Array(items) if agg.func == AggFunc::StringAgg => {
            // items are [value, delimiter] pairs; NULL values are skipped, and each
            // value after the first is preceded by its own delimiter.
            let mut out: Option<String> = None;
            for item in items {
                let Value::Array(pair) = item else { continue };
                let Some(v) = pair.first().and_then(Value::as_str) else { continue };
                match &mut out {
                    None => out = Some(v.to_string()),
                    Some(s) => {
                        s.push_str(pair.get(1).and_then(Value::as_str).unwrap_or(""));
                        s.push_str(v);
                    }
                }
            }
            out.map(Value::Text).unwrap_or(Value::Null)
        }
        AggState::Array(items) => if items.is_empty() { Value::Null } else { Value::Array(items) },
        AggState::Avg { sum, count } => {
            if count == 0 {
                Value::Null
            } else {
                match sum {
                    Value::Float8(f) => Value::Float8(f / count as f64),
                    s => ops::eval_binary(BinaryOp::Div, &s, &Value::Numeric(count.into()))?,
                }
            }
        }
    })
    .map(|v| if agg.ty == DataType::Int8 && matches!(v, Value::Int4(_)) { Value::Int8(v.as_i64().unwrap_or(0)) } else { v })
}

/// Build a table row from an INSERT's source row, applying defaults and NOT NULL.
pub fn insert_row(ctx: &EvalCtx, table: &TableDef, targets: &[InsertTarget], source: &[Value]) -> PgResult<Row> {
    let mut row = Vec::with_capacity(targets.len());
    for t in targets {
        row.push(match t {
            InsertTarget::Source(i) => source.get(*i).cloned().unwrap_or(Value::Null),
            InsertTarget::Default(Some(e)) => ctx.eval(e, &[])?,
            InsertTarget::Default(None) => Value::Null,
        });
    }
    check_not_null(table, &row)?;
    Ok(row)
}

pub fn check_not_null(table: &TableDef, row: &[Value]) -> PgResult<()> {
    for (i, c) in table.columns.iter().enumerate() {
        if c.not_null && row[i].is_null() {
            return Err(PgError::new(
                codes::NOT_NULL_VIOLATION,
                format!("null value in column \"{}\" of relation \"{}\" violates not-null constraint", c.name, table.name),
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
    let vals: Vec<String> = pk.iter().map(|&i| types::io::to_text_string(&row[i], &table.columns[i].ty.to_type()).unwrap_or_default()).collect();
    PgError::new(
        codes::UNIQUE_VIOLATION,
        format!("duplicate key value violates unique constraint \"{}\"", table.pk_name.clone().unwrap_or_default()),
    )
    .with_detail(format!("Key ({})=({}) already exists.", cols.join(", "), vals.join(", ")))
}
