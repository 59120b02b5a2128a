//! The operators a plan runs as: each hands rows up in batches when pulled (`Node::next`).
//! Streaming operators (scan, filter, projection, join probe, limit, UNION ALL, VALUES,
//! generate_series) hold a batch at a time; the others hold what they must, charged to
//! the statement (`Held`).

use super::aggregate::{AggInput, Aggregator};
use super::columns::{self, Used};
use super::memory::Held;
use super::spilling::{next_fitting, row_hash, split_key, KeyedPartitions};
use super::{decode, group_key, key_of_values, Executor, Outer, Row, BATCH};
use crate::cumulative_stats::ScanTally;
use crate::system;
use datanode_client::RowBytes;
use distribution::ClusterScan;
use futures::future::BoxFuture;
use pgerror::{codes, PgError, PgResult};
use rustc_hash::{FxHashMap, FxHashSet};
use spill::row_size;
use sql::eval::EvalCtx;
use sql::plan::*;
use sql::TableDef;
use std::collections::hash_map::Entry;
use std::ops::Bound;
use std::sync::Arc;
use types::ops;
use types::{DataType, Value};

pub(super) trait Node: Send {
    /// The next batch of rows (never empty), or None when there are no more.
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>>;
}

pub(super) type BoxNode<'e> = Box<dyn Node + 'e>;

/// The operator tree of `rel`, run under the enclosing rows `outer`, for a consumer that
/// reads every column of its rows.
pub(super) fn open<'e>(ex: &'e Executor<'e>, rel: &'e Rel, outer: Outer) -> BoxNode<'e> {
    open_reading(ex, rel, outer, None)
}

/// `open` for a consumer that reads only the columns `used` marks (the others may be NULL).
fn open_reading<'e>(ex: &'e Executor<'e>, rel: &'e Rel, outer: Outer, used: Used) -> BoxNode<'e> {
    let node = open_operator(ex, rel, outer, used);
    match ex.state.measured {
        None => node,
        Some(into) => Box::new(super::measured::Measured::new(node, rel, into)),
    }
}

fn open_operator<'e>(ex: &'e Executor<'e>, rel: &'e Rel, outer: Outer, used: Used) -> BoxNode<'e> {
    match rel {
        Rel::Unit => Box::new(Rows::new(vec![Vec::new()], None)),
        Rel::Scan { table, access } => Box::new(Scan {
            ex,
            table,
            access,
            outer,
            used: (!columns::reads_all(&used)).then_some(used).flatten(),
            state: ScanState::Start,
        }),
        Rel::PushedScan(scan) => Box::new(super::pushed::PushedScanNode::new(
            ex,
            scan,
            outer,
            (!columns::reads_all(&used)).then_some(used).flatten(),
        )),
        Rel::System { table } => Box::new(Deferred::new(async move {
            let rows = system::read(*table, ex.session, ex.dn).await?;
            Ok(Box::new(Rows::new(rows, None)) as BoxNode)
        })),
        Rel::Values { rows } => Box::new(ValuesNode {
            ex,
            rows: rows.iter(),
            outer,
        }),
        Rel::GenerateSeries { start, stop, step } => Box::new(Series {
            ex,
            exprs: (start, stop, step.as_ref()),
            outer,
            state: None,
        }),
        Rel::Unnest { array } => Box::new(super::unnest::UnnestNode::new(ex, array, outer)),
        Rel::RowsFrom {
            functions,
            ordinality,
        } => Box::new(super::unnest::RowsFromNode::new(
            ex,
            functions,
            *ordinality,
            outer,
        )),
        Rel::Filter { input, predicate } => {
            let input = open_reading(ex, input, outer.clone(), columns::adding(used, [predicate]));
            Box::new(FilterNode {
                ex,
                input,
                predicate,
                outer,
            })
        }
        Rel::Project { input, exprs } => {
            let input = open_reading(
                ex,
                input,
                outer.clone(),
                columns::read_by(input.width(), exprs),
            );
            Box::new(ProjectNode {
                ex,
                input,
                exprs,
                columns: distinct_columns(exprs),
                outer,
            })
        }
        Rel::Join {
            left,
            right,
            kind,
            on,
            lateral,
        } => {
            let (left_used, right_used) =
                columns::of_join_sides(used, on.as_ref(), left.width(), rel.width());
            let (left_used, right_used, lateral) = match lateral {
                // the right side is computed per left row, which it may read whole; the
                // joined rows keep only the left columns read above
                true => (None, None, Some(left_used)),
                false => (left_used, right_used, None),
            };
            let left_node = open_reading(ex, left, outer.clone(), left_used);
            Box::new(JoinNode::new(
                ex,
                left_node,
                left.width(),
                right,
                right_used,
                *kind,
                on.as_ref(),
                lateral,
                outer,
            ))
        }
        Rel::Aggregate {
            input,
            group_by,
            aggs,
        } => {
            let input = Some(open_reading(
                ex,
                input,
                outer.clone(),
                columns::read_by_aggregate(input.width(), group_by, aggs),
            ));
            Box::new(AggregateNode {
                ex,
                group_by,
                aggs,
                outer,
                input,
                output: None,
                pending: Vec::new(),
            })
        }
        Rel::Sort { input, keys } => {
            let input = open_reading(
                ex,
                input,
                outer.clone(),
                columns::adding_sort_keys(used, keys),
            );
            Box::new(Deferred::new(sort(ex, input, keys, outer)))
        }
        Rel::Limit {
            input,
            limit,
            offset,
        } => {
            // LIMIT and OFFSET are evaluated without a row
            let input = open_reading(ex, input, outer.clone(), used);
            Box::new(LimitNode {
                ex,
                input,
                limit: limit.as_ref(),
                offset: offset.as_ref(),
                outer,
                window: None,
            })
        }
        Rel::Distinct { input } => Box::new(DistinctNode::new(ex, vec![open(ex, input, outer)])),
        Rel::Unique { input, columns } => Box::new(UniqueNode {
            input: open(ex, input, outer),
            columns,
            last: None,
        }),
        Rel::WindowAgg { input, window } => {
            let input_node = open_reading(
                ex,
                input,
                outer.clone(),
                columns::of_window_input(used, input.width(), window),
            );
            Box::new(super::window::WindowNode::new(
                ex, window, input_node, outer,
            ))
        }
        Rel::Union {
            left,
            right,
            all: true,
        } => Box::new(Concat {
            inputs: vec![open(ex, left, outer.clone()), open(ex, right, outer)],
        }),
        Rel::Union {
            left,
            right,
            all: false,
        } => Box::new(DistinctNode::new(
            ex,
            vec![open(ex, left, outer.clone()), open(ex, right, outer)],
        )),
        Rel::SetOp {
            left,
            right,
            op,
            all,
        } => Box::new(super::set_op::SetOpNode::new(
            ex,
            *op,
            *all,
            open(ex, left, outer.clone()),
            open(ex, right, outer),
        )),
        Rel::WorkTable { work, .. } => Box::new(Deferred::new(async move {
            Ok(Box::new(Rows::new(
                work.lock().map_err(|_| poisoned())?.clone(),
                None,
            )) as BoxNode)
        })),
        Rel::RecursiveUnion {
            base,
            recursive,
            all,
            work,
        } => Box::new(Deferred::new(recursive_union(
            ex, base, recursive, *all, work, outer,
        ))),
    }
}

/// Rows already computed, handed up a batch at a time; `held` is their charge.
struct Rows<'e> {
    rows: std::vec::IntoIter<Row>,
    _held: Option<Held<'e>>,
}

impl<'e> Rows<'e> {
    fn new(rows: Vec<Row>, held: Option<Held<'e>>) -> Self {
        Rows {
            rows: rows.into_iter(),
            _held: held,
        }
    }
}

impl Rows<'_> {
    fn next_batch(&mut self) -> Option<Vec<Row>> {
        let batch: Vec<Row> = self.rows.by_ref().take(BATCH).collect();
        (!batch.is_empty()).then_some(batch)
    }
}

impl Node for Rows<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(std::future::ready(Ok(self.next_batch())))
    }
}

/// An operator that does all its work on the first pull (sort, aggregation, …), and then
/// hands up the rows of the operator that work made.
struct Deferred<'e> {
    compute: Option<BoxFuture<'e, PgResult<BoxNode<'e>>>>,
    rows: Option<BoxNode<'e>>,
}

impl<'e> Deferred<'e> {
    fn new(compute: impl std::future::Future<Output = PgResult<BoxNode<'e>>> + Send + 'e) -> Self {
        Deferred {
            compute: Some(Box::pin(compute)),
            rows: None,
        }
    }
}

impl Node for Deferred<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            if let Some(compute) = self.compute.take() {
                self.rows = Some(compute.await?);
            }
            match &mut self.rows {
                Some(rows) => rows.next().await,
                None => Ok(None),
            }
        })
    }
}

/// Rows read from temporary files (a sort's merge, a partition), a batch at a time.
struct FileRows<'e> {
    ex: &'e Executor<'e>,
    rows: Box<dyn Iterator<Item = PgResult<Row>> + Send + 'e>,
    _held: Option<Held<'e>>,
}

impl Node for FileRows<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            let mut batch = Vec::new();
            for r in self.rows.by_ref().take(BATCH) {
                batch.push(r?);
            }
            self.ex.pace(batch.len()).await;
            Ok((!batch.is_empty()).then_some(batch))
        })
    }
}

/// What an access path reads: one key, a range of keys, or the keys a secondary index
/// gives.
pub(super) enum Target {
    Key(Vec<u8>),
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>),
    Keys(Vec<Vec<u8>>),
}

impl Target {
    /// None if `access` matches nothing (a NULL key or bound), or nothing after `after`.
    pub(super) async fn of(
        ex: &Executor<'_>,
        table: &TableDef,
        access: &Access,
        outer: &[Row],
        after: Option<&[u8]>,
    ) -> PgResult<Option<Target>> {
        let key_of = async |exprs: &[Expr]| -> PgResult<Option<Vec<u8>>> {
            let mut values = Vec::with_capacity(exprs.len());
            for e in exprs {
                values.push(ex.eval(outer, e, &[]).await?);
            }
            Ok(key_of_values(&values))
        };
        let (lo, hi) = match access {
            Access::PrimaryKey(exprs) => {
                let Some(key) = key_of(exprs).await? else {
                    return Ok(None);
                };
                if after.is_some_and(|after| key.as_slice() <= after) {
                    return Ok(None);
                }
                return Ok(Some(Target::Key(key)));
            }
            Access::Index { index, lookup } => {
                if after.is_some() {
                    // `dml::streams`: an index's rows are read at once.
                    return Err(PgError::internal("an index scan resumed after a key"));
                }
                let keys = crate::index::row_keys(ex, table, *index, lookup, outer).await?;
                return Ok(Some(Target::Keys(keys)));
            }
            Access::PrimaryKeys {
                before,
                values,
                after: rest,
            } => {
                if after.is_some() {
                    // `dml::streams`: listed keys are read at once.
                    return Err(PgError::internal("a key list resumed after a key"));
                }
                let (Some(before), Some(rest)) = (key_of(before).await?, key_of(rest).await?)
                else {
                    return Ok(None);
                };
                let mut keys = Vec::new();
                for value in listed_values(ex, outer, values).await? {
                    let mut key = before.clone();
                    types::codec::encode_key(&[value], &mut key);
                    key.extend_from_slice(&rest);
                    keys.push(key);
                }
                // A list may name a key twice; its row is read once, in key order.
                keys.sort();
                keys.dedup();
                return Ok(Some(Target::Keys(keys)));
            }
            Access::Full => (Bound::Unbounded, Bound::Unbounded),
            Access::KeyRange {
                prefix,
                lower,
                upper,
            } => match key_range(ex, outer, prefix, lower.as_ref(), upper.as_ref()).await? {
                Some(range) => range,
                None => return Ok(None),
            },
        };
        // A key the scan returned lies within its bounds: past it is past the lower bound.
        let lo = after.map_or(lo, |after| Bound::Excluded(after.to_vec()));
        Ok(Some(Target::Range(lo, hi)))
    }
}

/// The values an `Access::PrimaryKeys` column may take (NULLs match nothing).
async fn listed_values(
    ex: &Executor<'_>,
    outer: &[Row],
    values: &KeyValues,
) -> PgResult<Vec<Value>> {
    let mut out = Vec::new();
    match values {
        KeyValues::List(list) => {
            for e in list {
                out.push(ex.eval(outer, e, &[]).await?);
            }
        }
        KeyValues::Array(array) => {
            // A NULL array lists nothing.
            if let Value::Array(items) = ex.eval(outer, array, &[]).await? {
                out = items;
            }
        }
    }
    out.retain(|v| !v.is_null());
    Ok(out)
}

/// The storage bounds of the keys that start with the values of `prefix` and whose next
/// value lies between `lower` and `upper`: a primary-key range or a secondary index's
/// (`sql::index::key_range`). None if no key can lie there (a NULL value or bound).
pub(crate) async fn key_range(
    ex: &Executor<'_>,
    outer: &[Row],
    prefix: &[Expr],
    lower: Option<&KeyBound>,
    upper: Option<&KeyBound>,
) -> PgResult<Option<sql::index::KeyBounds>> {
    let mut encoded = Vec::with_capacity(prefix.len() + 2);
    for exprs in std::iter::once(prefix).chain(
        [lower, upper]
            .into_iter()
            .flatten()
            .map(|b| std::slice::from_ref(&b.value)),
    ) {
        let mut values = Vec::with_capacity(exprs.len());
        for e in exprs {
            values.push(ex.eval(outer, e, &[]).await?);
        }
        match key_of_values(&values) {
            Some(key) => encoded.push(key),
            None => return Ok(None),
        }
    }
    let mut ends = encoded.iter().skip(1);
    let mut end = |b: Option<&KeyBound>| b.map(|b| (ends.next().unwrap().as_slice(), b.inclusive));
    let (lower, upper) = (end(lower), end(upper));
    Ok(sql::index::key_range(&encoded[0], lower, upper))
}

/// A table's rows with their storage keys, by primary key, key range or in full,
/// counted in pg_stat_all_tables as they come.
pub(super) struct KeyedScan<'e> {
    rows: KeyedSource<'e>,
    tally: ScanTally<'e>,
}

enum KeyedSource<'e> {
    One(Option<(Vec<u8>, RowBytes)>),
    Range(ClusterScan<'e, (Vec<u8>, RowBytes)>),
    /// The rows of the keys a secondary index gave.
    Keys(KeyedRows<'e>),
}

/// Rows read one at a time by their keys (found through a secondary index), as the
/// snapshot sees them.
pub(super) struct KeyedRows<'e> {
    dn: &'e distribution::Datanodes,
    txn: &'e distribution::ClusterTxn,
    snapshot: datanode_client::Timestamp,
    rel: u64,
    keys: std::vec::IntoIter<Vec<u8>>,
}

impl<'e> KeyedRows<'e> {
    fn new(ex: &Executor<'e>, table: &TableDef, keys: Vec<Vec<u8>>) -> Self {
        KeyedRows {
            dn: ex.dn,
            txn: ex.txn,
            snapshot: ex.snapshot,
            rel: table.rel,
            keys: keys.into_iter(),
        }
    }

    async fn next_row(&mut self) -> Option<PgResult<(Vec<u8>, RowBytes)>> {
        for key in self.keys.by_ref() {
            let read = self
                .dn
                .get_row(self.txn, self.rel, &key, self.snapshot, false);
            match read.await {
                Ok(Some(row)) => return Some(Ok((key, row))),
                Ok(None) => continue,
                Err(e) => return Some(Err(e)),
            }
        }
        None
    }
}

impl<'e> KeyedScan<'e> {
    /// None if `access` matches nothing (a NULL key or bound).
    pub(super) async fn open(
        ex: &Executor<'e>,
        table: &TableDef,
        access: &Access,
        outer: &[Row],
    ) -> PgResult<Option<KeyedScan<'e>>> {
        Self::open_after(ex, table, access, outer, None).await
    }

    /// `open`, for the rows whose keys follow `after` only (a statement that goes on
    /// where its previous batch ended: `Executor::keyed_rows`).
    pub(super) async fn open_after(
        ex: &Executor<'e>,
        table: &TableDef,
        access: &Access,
        outer: &[Row],
        after: Option<&[u8]>,
    ) -> PgResult<Option<KeyedScan<'e>>> {
        let Some(target) = Target::of(ex, table, access, outer, after).await? else {
            return Ok(None);
        };
        // a statement going on after its previous batch's last key goes on with one scan
        let mut tally = ex
            .session
            .cumulative_stats
            .scan(table, access, after.is_none());
        let rows = match target {
            Target::Key(key) => {
                let row = ex
                    .dn
                    .get_row(ex.txn, table.rel, &key, ex.snapshot, false)
                    .await?;
                KeyedSource::One(row.map(|bytes| (key, bytes)))
            }
            Target::Range(lo, hi) => {
                KeyedSource::Range(ex.dn.scan(ex.txn, table.rel, lo, hi, ex.snapshot).await?)
            }
            Target::Keys(keys) => {
                tally.entries(keys.len());
                KeyedSource::Keys(KeyedRows::new(ex, table, keys))
            }
        };
        Ok(Some(KeyedScan { rows, tally }))
    }

    pub(super) async fn next_row(&mut self) -> Option<PgResult<(Vec<u8>, RowBytes)>> {
        let row = match &mut self.rows {
            KeyedSource::One(row) => row.take().map(Ok),
            KeyedSource::Range(rows) => rows.next().await,
            KeyedSource::Keys(rows) => rows.next_row().await,
        };
        if let Some(Ok(_)) = row {
            self.tally.row();
        }
        row
    }
}

/// A table's rows without their keys (`Scan`), counted in pg_stat_all_tables as they come.
struct RowScan<'e> {
    rows: RowSource<'e>,
    tally: ScanTally<'e>,
}

enum RowSource<'e> {
    One(Option<RowBytes>),
    Range(ClusterScan<'e, RowBytes>),
    Keys(KeyedRows<'e>),
}

impl<'e> RowScan<'e> {
    async fn open(
        ex: &Executor<'e>,
        table: &TableDef,
        access: &Access,
        outer: &[Row],
    ) -> PgResult<Option<RowScan<'e>>> {
        let Some(target) = Target::of(ex, table, access, outer, None).await? else {
            return Ok(None);
        };
        let mut tally = ex.session.cumulative_stats.scan(table, access, true);
        let rows = match target {
            Target::Key(key) => RowSource::One(
                ex.dn
                    .get_row(ex.txn, table.rel, &key, ex.snapshot, false)
                    .await?,
            ),
            Target::Range(lo, hi) => RowSource::Range(
                ex.dn
                    .scan_rows(ex.txn, table.rel, lo, hi, ex.snapshot)
                    .await?,
            ),
            Target::Keys(keys) => {
                tally.entries(keys.len());
                RowSource::Keys(KeyedRows::new(ex, table, keys))
            }
        };
        Ok(Some(RowScan { rows, tally }))
    }

    async fn next_row(&mut self) -> Option<PgResult<RowBytes>> {
        let row = match &mut self.rows {
            RowSource::One(row) => row.take().map(Ok),
            RowSource::Range(rows) => rows.next().await,
            RowSource::Keys(rows) => rows.next_row().await.map(|r| r.map(|(_, row)| row)),
        };
        if let Some(Ok(_)) = row {
            self.tally.row();
        }
        row
    }
}

enum ScanState<'e> {
    Start,
    Open(RowScan<'e>),
    Done,
}

struct Scan<'e> {
    ex: &'e Executor<'e>,
    table: &'e TableDef,
    access: &'e Access,
    outer: Outer,
    /// The columns to decode; None: all.
    used: Used,
    state: ScanState<'e>,
}

impl Node for Scan<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            if let ScanState::Start = self.state {
                self.state =
                    match RowScan::open(self.ex, self.table, self.access, &self.outer).await? {
                        Some(scan) => ScanState::Open(scan),
                        None => ScanState::Done,
                    };
            }
            let ScanState::Open(scan) = &mut self.state else {
                return Ok(None);
            };
            let mut batch = Vec::new();
            while batch.len() < BATCH {
                match scan.next_row().await {
                    Some(item) => {
                        let bytes = item?;
                        batch.push(match &self.used {
                            Some(used) => types::codec::decode_row_columns(&bytes, used)?,
                            None => decode(&bytes, self.table)?,
                        });
                    }
                    None => {
                        self.state = ScanState::Done;
                        break;
                    }
                }
            }
            self.ex.pace(batch.len()).await;
            Ok((!batch.is_empty()).then_some(batch))
        })
    }
}

struct ValuesNode<'e> {
    ex: &'e Executor<'e>,
    rows: std::slice::Iter<'e, Vec<Expr>>,
    outer: Outer,
}

impl Node for ValuesNode<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            let mut batch = Vec::new();
            for exprs in self.rows.by_ref().take(BATCH) {
                batch.push(eval_row(self.ex, &self.outer, exprs, &[]).await?);
            }
            self.ex.pace(batch.len()).await;
            Ok((!batch.is_empty()).then_some(batch))
        })
    }
}

/// generate_series(start, stop[, step]) over integers, or over timestamps with an
/// interval step, produced as pulled.
struct Series<'e> {
    ex: &'e Executor<'e>,
    exprs: (&'e Expr, &'e Expr, Option<&'e Expr>),
    outer: Outer,
    /// None until evaluated; then None if an argument is NULL.
    state: Option<Option<SeriesState>>,
}

enum SeriesState {
    /// (next value, last value, step, int4 output)
    Integers(i64, i64, i64, bool),
    /// (next value, last value, step, step > 0): timestamps or timestamptzs, each the one
    /// before plus the step (a month after Jan 31 is Feb 28, then Mar 28, as in PG), a
    /// timestamptz's on the session zone's wall clock
    Moments(Value, Value, Value, bool),
}

impl Series<'_> {
    fn start(s: Value, e: Value, st: Value) -> PgResult<Option<SeriesState>> {
        let zero_step = || {
            PgError::new(
                codes::INVALID_PARAMETER_VALUE,
                "step size cannot equal zero",
            )
        };
        if [&s, &e, &st].iter().any(|v| v.is_null()) {
            return Ok(None);
        }
        if let Value::Interval { .. } = st {
            let zero = Value::Interval {
                months: 0,
                days: 0,
                micros: 0,
            };
            let sign = types::ops::compare(&st, &zero).ok_or_else(zero_step)?;
            if sign == std::cmp::Ordering::Equal {
                return Err(zero_step());
            }
            return Ok(Some(SeriesState::Moments(s, e, st, sign.is_gt())));
        }
        Ok(match (s.as_i64(), e.as_i64(), st.as_i64()) {
            (Some(_), Some(_), Some(0)) => return Err(zero_step()),
            (Some(a), Some(b), Some(step)) => Some(SeriesState::Integers(
                a,
                b,
                step,
                matches!(s, Value::Int4(_)),
            )),
            _ => None,
        })
    }
}

impl Node for Series<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            if self.state.is_none() {
                let (start, stop, step) = self.exprs;
                let s = self.ex.eval(&self.outer, start, &[]).await?;
                let e = self.ex.eval(&self.outer, stop, &[]).await?;
                let st = match step {
                    Some(x) => self.ex.eval(&self.outer, x, &[]).await?,
                    None => Value::Int8(1),
                };
                self.state = Some(Self::start(s, e, st)?);
            }
            let mut batch = Vec::new();
            let (next, last, step, int4) = match &mut self.state {
                Some(Some(SeriesState::Integers(next, last, step, int4))) => {
                    (next, last, step, int4)
                }
                Some(Some(SeriesState::Moments(next, last, step, ascending))) => {
                    let zone = &self.ex.session.zone;
                    while batch.len() < BATCH {
                        let past = match types::ops::compare(next, last) {
                            Some(o) if *ascending => o.is_gt(),
                            Some(o) => o.is_lt(),
                            None => true,
                        };
                        if past {
                            break;
                        }
                        let value = next.clone();
                        *next = moment_plus(&value, step, zone)?;
                        batch.push(vec![value]);
                    }
                    self.ex.pace(batch.len()).await;
                    return Ok((!batch.is_empty()).then_some(batch));
                }
                _ => return Ok(None),
            };
            while batch.len() < BATCH
                && ((*step > 0 && *next <= *last) || (*step < 0 && *next >= *last))
            {
                batch.push(vec![if *int4 {
                    Value::Int4(*next as i32)
                } else {
                    Value::Int8(*next)
                }]);
                match next.checked_add(*step) {
                    Some(n) => *next = n,
                    None => {
                        *step = 0; // past the type's range: the series ends here
                        break;
                    }
                }
            }
            self.ex.pace(batch.len()).await;
            Ok((!batch.is_empty()).then_some(batch))
        })
    }
}

/// A timestamp or timestamptz plus an interval (a timestamptz's on `zone`'s wall clock).
fn moment_plus(v: &Value, step: &Value, zone: &types::timezone::Zone) -> PgResult<Value> {
    let Value::Interval {
        months,
        days,
        micros,
    } = *step
    else {
        return Err(PgError::internal("generate_series step is not an interval"));
    };
    Ok(match *v {
        Value::TimestampTz(t) => Value::TimestampTz(
            types::datetime_fields::timestamptz_add_interval(t, months, days, micros, 1, zone)?,
        ),
        Value::Timestamp(t) => {
            Value::Timestamp(types::ops::timestamp_add_interval(t, months, days, micros)?)
        }
        _ => return Err(PgError::internal("generate_series over a non-timestamp")),
    })
}

struct FilterNode<'e> {
    ex: &'e Executor<'e>,
    input: BoxNode<'e>,
    predicate: &'e Expr,
    outer: Outer,
}

impl Node for FilterNode<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            while let Some(batch) = self.input.next().await? {
                let mut kept = Vec::with_capacity(batch.len());
                for r in batch {
                    if self
                        .ex
                        .matches(&self.outer, Some(self.predicate), &r)
                        .await?
                    {
                        kept.push(r);
                    }
                }
                if !kept.is_empty() {
                    return Ok(Some(kept));
                }
            }
            Ok(None)
        })
    }
}

struct ProjectNode<'e> {
    ex: &'e Executor<'e>,
    input: BoxNode<'e>,
    exprs: &'e [Expr],
    /// When every expression is a different column of the input row: their positions,
    /// whose values are moved into the output row instead of evaluated and cloned.
    columns: Option<Vec<usize>>,
    outer: Outer,
}

/// The positions of `exprs` in the input row if each is a column of it and none repeats.
fn distinct_columns(exprs: &[Expr]) -> Option<Vec<usize>> {
    let mut columns = Vec::with_capacity(exprs.len());
    for e in exprs {
        match e {
            Expr::Column {
                depth: 0, index, ..
            } if !columns.contains(index) => columns.push(*index),
            _ => return None,
        }
    }
    Some(columns)
}

/// The row of the values at `columns` (distinct positions) of `row`, moved out of it;
/// the leading columns in order are the row itself, shortened.
fn move_columns(mut row: Row, columns: &[usize]) -> Row {
    if columns.iter().enumerate().all(|(i, &c)| i == c) && columns.len() <= row.len() {
        row.truncate(columns.len());
        return row;
    }
    columns
        .iter()
        .map(|&c| {
            row.get_mut(c)
                .map_or(Value::Null, |v| std::mem::replace(v, Value::Null))
        })
        .collect()
}

impl Node for ProjectNode<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            let Some(batch) = self.input.next().await? else {
                return Ok(None);
            };
            if let Some(columns) = &self.columns {
                return Ok(Some(
                    batch
                        .into_iter()
                        .map(|r| move_columns(r, columns))
                        .collect(),
                ));
            }
            let mut out = Vec::with_capacity(batch.len());
            for r in batch {
                out.push(eval_row(self.ex, &self.outer, self.exprs, &r).await?);
            }
            Ok(Some(out))
        })
    }
}

/// `exprs` evaluated against `row` (a projection, a VALUES row, sort keys).
pub(super) async fn eval_row<'x>(
    ex: &Executor<'_>,
    outer: &[Row],
    exprs: impl IntoIterator<Item = &'x Expr> + Clone,
    row: &[Value],
) -> PgResult<Row> {
    let compute = |ctx: &EvalCtx| {
        exprs
            .clone()
            .into_iter()
            .map(|e| ctx.eval(e, row))
            .collect()
    };
    let now = compute(&ex.ctx(outer));
    match now {
        Err(err) => ex.recompute(err, outer, exprs.clone(), row, compute).await,
        done => done,
    }
}

/// DISTINCT ON: of each run of rows equal at `columns` (NULLs equal), the first.
struct UniqueNode<'e> {
    input: BoxNode<'e>,
    columns: &'e [usize],
    /// The group key of the values at `columns` of the last row handed up.
    last: Option<Vec<u8>>,
}

impl Node for UniqueNode<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            while let Some(batch) = self.input.next().await? {
                let mut kept = Vec::new();
                for row in batch {
                    let values: Row = self.columns.iter().map(|&c| row[c].clone()).collect();
                    let key = group_key(&values);
                    if self.last.as_ref() == Some(&key) {
                        continue;
                    }
                    self.last = Some(key);
                    kept.push(row);
                }
                if !kept.is_empty() {
                    return Ok(Some(kept));
                }
            }
            Ok(None)
        })
    }
}

/// The inputs' rows, one input after the other (UNION ALL).
struct Concat<'e> {
    inputs: Vec<BoxNode<'e>>,
}

impl Node for Concat<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            while let Some(first) = self.inputs.first_mut() {
                if let Some(batch) = first.next().await? {
                    return Ok(Some(batch));
                }
                self.inputs.remove(0);
            }
            Ok(None)
        })
    }
}

/// The inputs' distinct rows (DISTINCT, UNION). Rows are handed up as first seen while
/// the keys seen fit work_mem; past it, rows not seen yet go to partitions by key, each
/// deduplicated on its own after the inputs end.
struct DistinctNode<'e> {
    ex: &'e Executor<'e>,
    inputs: Vec<BoxNode<'e>>,
    seen: FxHashSet<Vec<u8>>,
    held: Held<'e>,
    spilled: Option<KeyedPartitions>,
    pending: Vec<spill::Partition>,
}

impl<'e> DistinctNode<'e> {
    fn new(ex: &'e Executor<'e>, inputs: Vec<BoxNode<'e>>) -> Self {
        DistinctNode {
            ex,
            inputs,
            seen: FxHashSet::default(),
            held: Held::new(&ex.state.memory),
            spilled: None,
            pending: Vec::new(),
        }
    }
}

impl Node for DistinctNode<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            let work_mem = self.ex.state.work_mem;
            while let Some(first) = self.inputs.first_mut() {
                let Some(batch) = first.next().await? else {
                    self.inputs.remove(0);
                    continue;
                };
                let mut fresh = Vec::new();
                for r in batch {
                    let key = group_key(&r);
                    if self.spilled.is_none() && self.held.bytes() > work_mem {
                        self.spilled = Some(KeyedPartitions::new(self.ex.state.spill, work_mem));
                    }
                    match &mut self.spilled {
                        Some(partitions) => {
                            if !self.seen.contains(&key) {
                                partitions.push(key, r)?;
                            }
                        }
                        None => {
                            let charge = key.len() + 32;
                            if self.seen.insert(key) {
                                self.held.charge(charge)?;
                                fresh.push(r);
                            }
                        }
                    }
                }
                if !fresh.is_empty() {
                    return Ok(Some(fresh));
                }
                self.ex.pace(0).await;
            }
            if let Some(partitions) = self.spilled.take() {
                self.seen = FxHashSet::default();
                self.held.clear();
                self.pending = partitions.finish()?;
            }
            // Each partition's keys are apart from every other's and from those seen.
            while let Some(partition) = next_fitting(&mut self.pending, work_mem)? {
                let mut seen = FxHashSet::default();
                let mut fresh = Vec::new();
                for row in partition.read()?.into_iter().flatten() {
                    let (key, row) = split_key(row?);
                    if seen.insert(key) {
                        fresh.push(row);
                    }
                }
                self.ex.pace(fresh.len()).await;
                if !fresh.is_empty() {
                    return Ok(Some(fresh));
                }
            }
            Ok(None)
        })
    }
}

struct LimitNode<'e> {
    ex: &'e Executor<'e>,
    input: BoxNode<'e>,
    limit: Option<&'e Expr>,
    offset: Option<&'e Expr>,
    outer: Outer,
    /// (rows still to skip, rows still to hand up); None until evaluated.
    window: Option<(usize, usize)>,
}

/// A LIMIT or OFFSET count; None for none.
pub(crate) async fn row_count(
    ex: &Executor<'_>,
    outer: &[Row],
    e: Option<&Expr>,
) -> PgResult<Option<usize>> {
    let Some(e) = e else { return Ok(None) };
    match ex.eval(outer, e, &[]).await? {
        Value::Null => Ok(None),
        v => {
            let n = v.as_i64().unwrap_or(0);
            if n < 0 {
                return Err(PgError::new(
                    codes::INVALID_ROW_COUNT_IN_LIMIT,
                    "LIMIT must not be negative",
                ));
            }
            Ok(Some(n as usize))
        }
    }
}

impl Node for LimitNode<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            if self.window.is_none() {
                let skip = row_count(self.ex, &self.outer, self.offset)
                    .await?
                    .unwrap_or(0);
                let take = row_count(self.ex, &self.outer, self.limit)
                    .await?
                    .unwrap_or(usize::MAX);
                self.window = Some((skip, take));
            }
            let Some((skip, take)) = &mut self.window else {
                return Ok(None);
            };
            while *take > 0 {
                let Some(batch) = self.input.next().await? else {
                    break;
                };
                let passed = batch.len().min(*skip);
                *skip -= passed;
                let out: Vec<Row> = batch.into_iter().skip(passed).take(*take).collect();
                *take -= out.len();
                if !out.is_empty() {
                    return Ok(Some(out));
                }
            }
            Ok(None)
        })
    }
}

/// A join: the inner (right) side is computed once and, when the join condition has
/// equalities between the two sides, hashed on them; each outer (left) row is then
/// matched against its bucket, or against every inner row. LATERAL computes the inner
/// side anew for each outer row.
struct JoinNode<'e> {
    ex: &'e Executor<'e>,
    outer: Outer,
    left: BoxNode<'e>,
    left_width: usize,
    right: &'e Rel,
    /// The columns of the right side's rows that the join and its consumer read.
    right_used: Used,
    kind: JoinKind,
    on: Option<&'e Expr>,
    /// LATERAL: the left columns the join and its consumer read, which the joined rows
    /// keep (the others are NULL: a left row's array is not copied into each of its
    /// unnest's rows).
    lateral: Option<Used>,
    /// Equalities of the condition usable as hash keys: (left side, right side).
    hash_keys: Vec<(&'e Expr, &'e Expr)>,
    /// When every hash key is a column on both sides: their positions in a left row and
    /// in a right row, read in place without the evaluator (`column_key`).
    key_columns: Option<(Vec<usize>, Vec<usize>)>,
    /// Whether rows of equal hash keys satisfy the condition without evaluating it
    /// (`keys_decide`).
    keys_decide: bool,
    inner: Option<Inner>,
    pending: std::vec::IntoIter<Row>,
    probe: Option<Probe>,
    held: Held<'e>,
    /// Past work_mem (grace hash join): the partitions of the two sides still to join,
    /// (inner, outer) by key; the outer rows then carry their key in front.
    phases: Vec<(spill::Partition, spill::Partition)>,
    keyed_left: bool,
    /// Whether the outer rows of this phase have all been read.
    left_done: bool,
}

struct Inner {
    rows: Vec<Row>,
    /// The rows by hash key; None when the join is not hashed.
    buckets: Option<Buckets>,
    /// FULL JOIN: per row, whether an outer row matched it (empty for other kinds).
    matched: Vec<bool>,
}

impl Inner {
    fn new(rows: Vec<Row>, buckets: Option<Buckets>, kind: JoinKind) -> Self {
        let matched = match kind {
            JoinKind::Full => vec![false; rows.len()],
            _ => Vec::new(),
        };
        Inner {
            rows,
            buckets,
            matched,
        }
    }
}

/// Positions in `Inner::rows` by hash key: each key's rows chained in insertion order
/// through `next`, so a key costs one map entry and no list of its own.
#[derive(Default)]
struct Buckets {
    /// Key → (first, last) of its rows.
    ends: FxHashMap<Vec<u8>, (usize, usize)>,
    /// Per row: the next row of its key, or `END`.
    next: Vec<usize>,
}

const END: usize = usize::MAX;

impl Buckets {
    /// Adds row `position` (the next one: positions ascend from 0) under `key`.
    fn push(&mut self, key: Vec<u8>, position: usize) {
        self.next.push(END);
        // one lookup for a new key as for a known one
        match self.ends.entry(key) {
            Entry::Occupied(mut ends) => {
                let (_, last) = ends.get_mut();
                self.next[*last] = position;
                *last = position;
            }
            Entry::Vacant(slot) => {
                slot.insert((position, position));
            }
        }
    }

    /// The first row of `key`, or `END`.
    fn first(&self, key: &[u8]) -> usize {
        self.ends.get(key).map_or(END, |&(first, _)| first)
    }

    /// Every (key, position), a key's rows together.
    fn into_rows(self) -> impl Iterator<Item = (Vec<u8>, usize)> {
        let next = self.next;
        self.ends.into_iter().flat_map(move |(key, (first, _))| {
            let chain: Vec<usize> =
                std::iter::successors(Some(first), |&i| Some(next[i]).filter(|&n| n != END))
                    .collect();
            chain.into_iter().map(move |i| (key.clone(), i))
        })
    }
}

/// The outer row being matched and how far.
struct Probe {
    left: Row,
    candidates: Candidates,
    matched: bool,
}

/// The inner rows an outer row is matched against, with the next one to try.
enum Candidates {
    /// Every inner row, from this position on.
    All(usize),
    /// The rows of one hash key, from this position on (`Buckets::next`; `END`: none).
    Chain(usize),
    /// LATERAL: the inner rows computed for this outer row, from this position on.
    Own(Vec<Row>, usize),
}

impl<'e> JoinNode<'e> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        ex: &'e Executor<'e>,
        left: BoxNode<'e>,
        left_width: usize,
        right: &'e Rel,
        right_used: Used,
        kind: JoinKind,
        on: Option<&'e Expr>,
        lateral: Option<Used>,
        outer: Outer,
    ) -> Self {
        let hash_keys = if lateral.is_some() {
            Vec::new()
        } else {
            on.map(|on| on.equi_join_keys(left_width))
                .unwrap_or_default()
        };
        let keys_decide = on.is_some_and(|on| keys_decide(on, &hash_keys));
        let key_columns = key_columns(&hash_keys, left_width);
        JoinNode {
            ex,
            outer,
            left,
            left_width,
            right,
            right_used,
            kind,
            on,
            lateral,
            hash_keys,
            key_columns,
            keys_decide,
            inner: None,
            pending: Vec::new().into_iter(),
            probe: None,
            held: Held::new(&ex.state.memory),
            phases: Vec::new(),
            keyed_left: false,
            left_done: false,
        }
    }

    async fn build(&mut self) -> PgResult<()> {
        let (ex, work_mem) = (self.ex, self.ex.state.work_mem);
        let mut node = open_reading(ex, self.right, self.outer.clone(), self.right_used.take());
        let hashed = !self.hash_keys.is_empty();
        let mut rows = Vec::new();
        let mut buckets = Buckets::default();
        let mut spilled: Option<KeyedPartitions> = None;
        let mut padded = vec![Value::Null; self.left_width];
        while let Some(batch) = node.next().await? {
            for mut r in batch {
                if !hashed {
                    self.held.charge(row_size(&r) + 16)?;
                    rows.push(r);
                    continue;
                }
                let key = match &self.key_columns {
                    Some((_, right)) => column_key(&r, right),
                    None => {
                        // the row's values moved behind the NULLs and back: no clone of them
                        padded.append(&mut r);
                        let key = hash_key(ex, &self.outer, &self.hash_keys, &padded, false).await;
                        r.extend(padded.drain(self.left_width..));
                        key?
                    }
                };
                let key = match key {
                    Some(key) => key,
                    // a NULL key matches nothing (no outer key is empty); a FULL join
                    // still emits the row
                    None if self.kind == JoinKind::Full => Vec::new(),
                    None => continue,
                };
                if spilled.is_none() && self.held.bytes() > work_mem {
                    let mut partitions = KeyedPartitions::new(ex.state.spill, work_mem);
                    for (k, i) in std::mem::take(&mut buckets).into_rows() {
                        partitions.push(k, std::mem::take(&mut rows[i]))?;
                    }
                    rows = Vec::new();
                    self.held.clear();
                    spilled = Some(partitions);
                }
                match &mut spilled {
                    Some(partitions) => partitions.push(key, r)?,
                    None => {
                        self.held.charge(row_size(&r) + key.len() + 48)?;
                        buckets.push(key, rows.len());
                        rows.push(r);
                    }
                }
            }
        }
        let Some(inner_partitions) = spilled else {
            self.inner = Some(Inner::new(rows, hashed.then_some(buckets), self.kind));
            return Ok(());
        };
        // The outer side goes to partitions of the same keys; a row whose key is NULL
        // gets the empty key, which no inner row has.
        let mut outer_partitions = KeyedPartitions::new(ex.state.spill, work_mem);
        let mut left = std::mem::replace(&mut self.left, Box::new(Rows::new(Vec::new(), None)));
        while let Some(batch) = left.next().await? {
            for l in batch {
                let key = left_key(ex, &self.outer, &self.hash_keys, &self.key_columns, &l)
                    .await?
                    .unwrap_or_default();
                outer_partitions.push(key, l)?;
            }
        }
        self.phases = inner_partitions
            .finish()?
            .into_iter()
            .zip(outer_partitions.finish()?)
            .collect();
        self.keyed_left = true;
        self.inner = Some(Inner::new(Vec::new(), Some(Buckets::default()), self.kind));
        Ok(())
    }

    /// Load the next pair of partitions (grace hash join): the inner one into the hash
    /// table, the outer one as the rows to match. False when none is left.
    async fn next_phase(&mut self) -> PgResult<bool> {
        let (ex, work_mem) = (self.ex, self.ex.state.work_mem);
        while let Some((inner, outer)) = self.phases.pop() {
            let unmatched_inner_emitted = self.kind == JoinKind::Full;
            if (outer.rows() == 0 && !unmatched_inner_emitted)
                || (inner.rows() == 0 && (self.kind == JoinKind::Inner || outer.rows() == 0))
            {
                continue;
            }
            if inner.bytes() as usize > work_mem && inner.can_split() && outer.can_split() {
                let fanout = super::spilling::fanout(work_mem);
                let deeper = inner
                    .split(fanout, row_hash)?
                    .into_iter()
                    .zip(outer.split(fanout, row_hash)?);
                self.phases.extend(deeper);
                continue;
            }
            self.held.clear();
            let mut rows = Vec::new();
            let mut buckets = Buckets::default();
            for (i, row) in inner.read()?.into_iter().flatten().enumerate() {
                let (key, row) = split_key(row?);
                self.held.charge(row_size(&row) + key.len() + 48)?;
                buckets.push(key, rows.len());
                rows.push(row);
                if i % BATCH == BATCH - 1 {
                    ex.pace(BATCH).await;
                }
            }
            self.inner = Some(Inner::new(rows, Some(buckets), self.kind));
            let outer_rows = outer.read()?.into_iter().flatten();
            self.left = Box::new(FileRows {
                ex,
                rows: Box::new(outer_rows),
                _held: None,
            });
            return Ok(true);
        }
        Ok(false)
    }

    /// Start matching `left`.
    async fn start_probe(&mut self, left: Row) -> PgResult<()> {
        if self.keyed_left {
            let (key, left) = split_key(left);
            let candidates = Candidates::Chain(if key.is_empty() {
                END
            } else {
                self.bucket_of(&key)
            });
            self.probe = Some(Probe {
                left,
                candidates,
                matched: false,
            });
            return Ok(());
        }
        if let Some(kept) = &self.lateral {
            let joined = match kept {
                Some(cols) => (left.iter().zip(cols))
                    .map(|(v, &read)| if read { v.clone() } else { Value::Null })
                    .collect(),
                None => left.clone(),
            };
            let mut stack = Vec::with_capacity(self.outer.len() + 1);
            stack.extend_from_slice(&self.outer);
            stack.push(left);
            let rows = self.ex.collect(self.right, Arc::new(stack), None).await?;
            self.probe = Some(Probe {
                left: joined,
                candidates: Candidates::Own(rows, 0),
                matched: false,
            });
            return Ok(());
        }
        let candidates = if self.hash_keys.is_empty() {
            Candidates::All(0)
        } else {
            // the left side's key expressions read only the left row's columns
            let (ex, outer) = (self.ex, &self.outer);
            match left_key(ex, outer, &self.hash_keys, &self.key_columns, &left).await? {
                Some(key) => Candidates::Chain(self.bucket_of(&key)),
                None => Candidates::Chain(END),
            }
        };
        self.probe = Some(Probe {
            left,
            candidates,
            matched: false,
        });
        Ok(())
    }

    /// FULL JOIN, once the outer rows of a phase are all read: the inner rows none of
    /// them matched, NULL-extended on the left, into `out`.
    fn unmatched_inner(&mut self, out: &mut Vec<Row>) {
        let Some(inner) = self.inner.as_mut() else {
            return;
        };
        let rows = std::mem::take(&mut inner.rows);
        let matched = std::mem::take(&mut inner.matched);
        for (row, matched) in rows.into_iter().zip(matched) {
            if !matched {
                let mut joined = vec![Value::Null; self.left_width];
                joined.extend(row);
                out.push(joined);
            }
        }
    }

    /// The first inner row of hash key `key`, or `END`.
    fn bucket_of(&self, key: &[u8]) -> usize {
        self.inner
            .as_ref()
            .and_then(|i| i.buckets.as_ref())
            .map_or(END, |b| b.first(key))
    }
}

impl Node for JoinNode<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            if self.inner.is_none() && self.lateral.is_none() {
                self.build().await?;
            }
            let right_width = self.right.width();
            let mut out = Vec::new();
            loop {
                if self.probe.is_none() {
                    let Some(left) = self.pending.next() else {
                        if !self.left_done {
                            match self.left.next().await? {
                                Some(batch) => self.pending = batch.into_iter(),
                                None => {
                                    self.left_done = true;
                                    if self.kind == JoinKind::Full {
                                        self.unmatched_inner(&mut out);
                                        if out.len() >= BATCH {
                                            return Ok(Some(out));
                                        }
                                    }
                                }
                            }
                            continue;
                        }
                        if self.next_phase().await? {
                            self.left_done = false;
                            continue;
                        }
                        return Ok((!out.is_empty()).then_some(out));
                    };
                    self.start_probe(left).await?;
                }
                let probe = self.probe.as_mut().expect("probe started");
                let (inner_rows, buckets, inner_matched) = match self.inner.as_mut() {
                    Some(i) => (&i.rows[..], i.buckets.as_ref(), &mut i.matched),
                    None => (&[][..], None, &mut Vec::new()),
                };
                let full = self.kind == JoinKind::Full;
                let mut examined = 0;
                let mut exhausted = false;
                while out.len() < BATCH {
                    // whether `next` is the last row of its key's chain
                    let mut last_of_chain = false;
                    // the inner row and its position in `inner_rows` (None: LATERAL's own)
                    let next = match &mut probe.candidates {
                        Candidates::All(at) => take_at(inner_rows, at).map(|r| (r, Some(*at - 1))),
                        Candidates::Own(rows, at) => take_at(rows, at).map(|r| (r, None)),
                        Candidates::Chain(at) => (*at != END).then(|| {
                            let position = *at;
                            *at = buckets.map_or(END, |b| b.next[position]);
                            last_of_chain = *at == END;
                            (&inner_rows[position], Some(position))
                        }),
                    };
                    let Some((r, position)) = next else {
                        exhausted = true;
                        break;
                    };
                    examined += 1;
                    let mut joined = if self.keys_decide && last_of_chain {
                        // the left row's last partner, a certain match (one per left row
                        // when the right key is unique): the row moves into the output
                        let mut joined = std::mem::take(&mut probe.left);
                        joined.reserve_exact(r.len());
                        joined
                    } else {
                        let mut joined = Vec::with_capacity(probe.left.len() + r.len());
                        joined.extend_from_slice(&probe.left);
                        joined
                    };
                    joined.extend_from_slice(r);
                    if self.keys_decide || self.ex.matches(&self.outer, self.on, &joined).await? {
                        probe.matched = true;
                        out.push(joined);
                        if full {
                            if let Some(m) = position.and_then(|p| inner_matched.get_mut(p)) {
                                *m = true;
                            }
                        }
                    }
                    if examined % BATCH == 0 {
                        self.ex.pace(BATCH).await;
                    }
                }
                if !exhausted {
                    return Ok(Some(out)); // the batch is full
                }
                let probe = self.probe.take().expect("probe started");
                if !probe.matched && self.kind != JoinKind::Inner {
                    let mut joined = probe.left;
                    joined.extend(std::iter::repeat_n(Value::Null, right_width));
                    out.push(joined);
                }
                self.ex.pace(examined).await;
                if out.len() >= BATCH {
                    return Ok(Some(out));
                }
            }
        })
    }
}

/// `rows[*at]`, moving `at` on past it.
fn take_at<'r>(rows: &'r [Row], at: &mut usize) -> Option<&'r Row> {
    let r = rows.get(*at)?;
    *at += 1;
    Some(r)
}

/// The hash key of `row` from one side of the key equalities: a left row (whose side
/// reads only its columns), or an inner row placed after the left side's width of NULLs;
/// None if any is NULL (matches nothing).
async fn hash_key(
    ex: &Executor<'_>,
    outer: &[Row],
    keys: &[(&Expr, &Expr)],
    row: &[Value],
    left_side: bool,
) -> PgResult<Option<Vec<u8>>> {
    let side = keys.iter().map(|&(l, r)| if left_side { l } else { r });
    let compute = |ctx: &EvalCtx| -> PgResult<Option<Vec<u8>>> {
        // encoded value by value (`group_key` of them all): no vector of the values
        let mut key = Vec::with_capacity(16 * keys.len());
        for e in side.clone() {
            let v = ctx.eval(e, row)?;
            if v.is_null() {
                return Ok(None);
            }
            types::codec::encode_key(std::slice::from_ref(&v), &mut key);
        }
        Ok(Some(key))
    };
    let now = compute(&ex.ctx(outer));
    match now {
        Err(err) => ex.recompute(err, outer, side.clone(), row, compute).await,
        done => done,
    }
}

/// The hash key of a left row (`JoinNode::key_columns` or `hash_key`); None if any of
/// its values is NULL.
async fn left_key(
    ex: &Executor<'_>,
    outer: &[Row],
    keys: &[(&Expr, &Expr)],
    key_columns: &Option<(Vec<usize>, Vec<usize>)>,
    left: &[Value],
) -> PgResult<Option<Vec<u8>>> {
    match key_columns {
        Some((columns, _)) => Ok(column_key(left, columns)),
        None => hash_key(ex, outer, keys, left, true).await,
    }
}

/// The positions of the hash keys' columns in a left row and in a right row (`hash_key`
/// reads the right side's after the left side's width), when every key is a column.
fn key_columns(
    hash_keys: &[(&Expr, &Expr)],
    left_width: usize,
) -> Option<(Vec<usize>, Vec<usize>)> {
    let column = |e: &Expr| match e {
        Expr::Column {
            depth: 0, index, ..
        } => Some(*index),
        _ => None,
    };
    let mut sides = (Vec::new(), Vec::new());
    for &(l, r) in hash_keys {
        sides.0.push(column(l)?);
        sides.1.push(column(r)?.checked_sub(left_width)?);
    }
    (!hash_keys.is_empty()).then_some(sides)
}

/// `hash_key` of key columns read where they are in `row`; None if any is NULL.
fn column_key(row: &[Value], columns: &[usize]) -> Option<Vec<u8>> {
    // an integer's key is 9 bytes: one allocation for most keys
    let mut key = Vec::with_capacity(16 * columns.len());
    for &i in columns {
        let v = row.get(i).filter(|v| !v.is_null())?;
        types::codec::encode_key(std::slice::from_ref(v), &mut key);
    }
    Some(key)
}

/// Whether the join condition `on` holds for every pair of rows with equal hash keys, so
/// that the probe need not evaluate it: each conjunct is one of the key equalities, and
/// each of those compares integer columns (the key encodings of non-NULL integers are
/// equal exactly when the values are; NULL keys never reach the probe). Computed keys
/// are left to the condition (a volatile function would give another value there).
fn keys_decide(on: &Expr, hash_keys: &[(&Expr, &Expr)]) -> bool {
    let int_column = |e: &Expr| {
        matches!(
            e,
            Expr::Column {
                depth: 0,
                ty: DataType::Int2 | DataType::Int4 | DataType::Int8,
                ..
            }
        )
    };
    on.conjuncts().len() == hash_keys.len()
        && hash_keys
            .iter()
            .all(|(l, r)| int_column(l) && int_column(r))
}

/// Hash aggregation. Past work_mem, the rows of groups not yet in memory go to
/// partitions (by group key) instead; the groups in memory are handed up first, then each
/// partition's, aggregated one partition at a time.
struct AggregateNode<'e> {
    ex: &'e Executor<'e>,
    group_by: &'e [Expr],
    aggs: &'e [AggCall],
    outer: Outer,
    input: Option<BoxNode<'e>>,
    output: Option<Rows<'e>>,
    pending: Vec<spill::Partition>,
}

impl<'e> AggregateNode<'e> {
    async fn consume(&mut self, mut input: BoxNode<'e>) -> PgResult<()> {
        let ex = self.ex;
        let mut agg = Aggregator::new(self.group_by, self.aggs, &ex.state.memory);
        let mut spilled: Option<KeyedPartitions> = None;
        let mut contribution = AggInput::default();
        while let Some(batch) = input.next().await? {
            for r in &batch {
                aggregate_input(ex, &self.outer, &agg, r, &mut contribution).await?;
                if spilled.is_none() && !self.group_by.is_empty() && agg.held() > ex.state.work_mem
                {
                    spilled = Some(KeyedPartitions::new(ex.state.spill, ex.state.work_mem));
                }
                match &mut spilled {
                    Some(partitions) => {
                        if !agg.push_if_held(&mut contribution)? {
                            let key = agg.key().to_vec();
                            partitions.push(key, contribution.take_row(self.aggs))?;
                        }
                    }
                    None => agg.push(&mut contribution)?,
                }
            }
            ex.pace(batch.len()).await;
        }
        self.output = Some(Rows::new(agg.finish()?, None));
        if let Some(partitions) = spilled {
            self.pending = partitions.finish()?;
        }
        Ok(())
    }
}

/// What row `r` contributes, into `input` (whose buffers are reused): its group key
/// values, and for each aggregate its argument (TRUE for count(*)), or None where its
/// FILTER is not true (the argument then is not evaluated, as in PostgreSQL:
/// `sum(1 / x) FILTER (WHERE x <> 0)`).
async fn aggregate_input(
    ex: &Executor<'_>,
    outer: &[Row],
    agg: &Aggregator<'_, '_>,
    r: &[Value],
    input: &mut AggInput,
) -> PgResult<()> {
    let fill = |ctx: &EvalCtx, input: &mut AggInput| -> PgResult<()> {
        input.keys.clear();
        input.args.clear();
        for g in agg.group_by() {
            input.keys.push(value_of(ctx, g, r)?);
        }
        for a in agg.aggs() {
            if a.filter.is_some() && !ctx.matches(a.filter.as_ref(), r)? {
                input.args.push(None);
                continue;
            }
            input.args.push(Some(match &a.arg {
                Some(e) => value_of(ctx, e, r)?,
                None => Value::Bool(true),
            }));
        }
        Ok(())
    };
    let Err(err) = fill(&ex.ctx(outer), input) else {
        return Ok(());
    };
    // A subquery to compute first: the slow path, with a contribution of its own.
    let exprs: Vec<&Expr> = agg
        .group_by()
        .iter()
        .chain(
            agg.aggs()
                .iter()
                .flat_map(|a| a.arg.iter().chain(&a.filter)),
        )
        .collect();
    let compute = |ctx: &EvalCtx| -> PgResult<AggInput> {
        let mut fresh = AggInput::default();
        fill(ctx, &mut fresh)?;
        Ok(fresh)
    };
    *input = ex
        .recompute(err, outer, exprs.iter().copied(), r, compute)
        .await?;
    Ok(())
}

/// `e` evaluated against `row`, a column copied out of the row without the evaluator
/// (the commonest group key and argument).
fn value_of(ctx: &EvalCtx, e: &Expr, row: &[Value]) -> PgResult<Value> {
    match e {
        Expr::Column {
            depth: 0, index, ..
        } => Ok(row.get(*index).cloned().unwrap_or(Value::Null)),
        e => ctx.eval(e, row),
    }
}

/// The groups of one partition of spilled aggregate contributions.
async fn aggregate_partition(
    ex: &Executor<'_>,
    group_by: &[Expr],
    aggs: &[AggCall],
    partition: spill::Partition,
) -> PgResult<Vec<Row>> {
    let mut agg = Aggregator::new(group_by, aggs, &ex.state.memory);
    if let Some(rows) = partition.read()? {
        for (i, row) in rows.enumerate() {
            let (key, row) = split_key(row?);
            agg.push_keyed(&key, &mut AggInput::from_row(row, group_by.len(), aggs))?;
            if i % BATCH == BATCH - 1 {
                ex.pace(BATCH).await;
            }
        }
    }
    agg.finish()
}

impl Node for AggregateNode<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            if let Some(input) = self.input.take() {
                self.consume(input).await?;
            }
            loop {
                if let Some(batch) = self.output.as_mut().and_then(|o| o.next_batch()) {
                    return Ok(Some(batch));
                }
                let Some(partition) = next_fitting(&mut self.pending, self.ex.state.work_mem)?
                else {
                    return Ok(None);
                };
                self.output = Some(Rows::new(
                    aggregate_partition(self.ex, self.group_by, self.aggs, partition).await?,
                    None,
                ));
            }
        })
    }
}

/// ORDER BY: rows go into an external sorter that spills past work_mem. Keys that are
/// columns of the input are compared where they are; otherwise each row is pushed with
/// its sort key values in front, removed when it is handed up.
async fn sort<'e>(
    ex: &'e Executor<'e>,
    mut input: BoxNode<'e>,
    keys: &'e [SortKey],
    outer: Outer,
) -> PgResult<BoxNode<'e>> {
    let mut held = Held::new(&ex.state.memory);
    held.charge(ex.state.work_mem)?;
    let columns: Option<Vec<usize>> = keys
        .iter()
        .map(|k| match k.expr {
            Expr::Column {
                depth: 0, index, ..
            } => Some(index),
            _ => None,
        })
        .collect();
    let computed = columns.is_none();
    let positions = columns.unwrap_or_else(|| (0..keys.len()).collect());
    let (first, at) = (&keys[0], positions[0]);
    let cmp = move |a: &[Value], b: &[Value]| compare_keys(keys, &positions, a, b);
    let mut sorter = if abbreviates(&first.expr.ty()) {
        let (descending, nulls_first) = (first.descending, first.nulls_first);
        let abbreviate: spill::Abbreviate = Box::new(move |row: &[Value]| {
            spill::abbreviated_key(&row[at], descending, nulls_first)
        });
        spill::ExternalSorter::with_abbreviation(ex.state.work_mem, ex.state.spill, cmp, abbreviate)
    } else {
        spill::ExternalSorter::new(ex.state.work_mem, ex.state.spill, cmp)
    };
    while let Some(batch) = input.next().await? {
        for r in batch {
            if computed {
                let mut keyed = eval_row(ex, &outer, keys.iter().map(|k| &k.expr), &r).await?;
                keyed.extend(r);
                sorter.push(keyed)?;
            } else {
                sorter.push(r)?;
            }
        }
        ex.pace(0).await;
    }
    let count = if computed { keys.len() } else { 0 };
    let rows = sorter.finish()?.map(move |r| {
        r.map(|mut r| {
            r.drain(..count); // shifts in place: no second allocation per row
            r
        })
    });
    Ok(Box::new(FileRows {
        ex,
        rows: Box::new(rows),
        _held: Some(held),
    }))
}

/// Whether `spill::abbreviated_key` orders values of `ty` as `ops::sort_cmp` does (every
/// value of the column then has the same representation).
fn abbreviates(ty: &DataType) -> bool {
    matches!(
        ty,
        DataType::Int2
            | DataType::Int4
            | DataType::Int8
            | DataType::Float4
            | DataType::Float8
            | DataType::Text
            | DataType::Varchar { .. }
            | DataType::Date
            | DataType::Timestamp { .. }
            | DataType::TimestampTz { .. }
    )
}

/// ORDER BY's order of two rows by their sort key values, at `positions` in the rows.
fn compare_keys(
    keys: &[SortKey],
    positions: &[usize],
    a: &[Value],
    b: &[Value],
) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    for (sk, &at) in keys.iter().zip(positions) {
        let (x, y) = (&a[at], &b[at]);
        let ord = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => {
                if sk.nulls_first {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (false, true) => {
                if sk.nulls_first {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            (false, false) => {
                let o = ops::sort_cmp(x, y);
                if sk.descending {
                    o.reverse()
                } else {
                    o
                }
            }
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

async fn recursive_union<'e>(
    ex: &'e Executor<'e>,
    base: &'e Rel,
    recursive: &'e Rel,
    all: bool,
    work: &'e WorkTableCell,
    outer: Outer,
) -> PgResult<BoxNode<'e>> {
    let mut held = Held::new(&ex.state.memory);
    let mut seen = FxHashSet::default();
    let mut keep = |rows: Vec<Row>, held: &mut Held| -> PgResult<Vec<Row>> {
        let mut kept = Vec::with_capacity(rows.len());
        for r in rows {
            if all || seen.insert(group_key(&r)) {
                held.charge(row_size(&r) * 2)?;
                kept.push(r);
            }
        }
        Ok(kept)
    };
    let mut working = keep(ex.collect(base, outer.clone(), None).await?, &mut held)?;
    let mut result = working.clone();
    // Save the cell: this node may run inside an iteration of itself (a correlated
    // subquery evaluated per row).
    let saved = std::mem::take(&mut *work.lock().map_err(|_| poisoned())?);
    let mut outcome = Ok(());
    while !working.is_empty() {
        *work.lock().map_err(|_| poisoned())? = std::mem::take(&mut working);
        match ex
            .collect(recursive, outer.clone(), None)
            .await
            .and_then(|rows| keep(rows, &mut held))
        {
            Ok(rows) => working = rows,
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
        result.extend(working.iter().cloned());
    }
    *work.lock().map_err(|_| poisoned())? = saved;
    outcome?;
    Ok(Box::new(Rows::new(result, Some(held))))
}

fn poisoned() -> PgError {
    PgError::new(codes::INTERNAL_ERROR, "recursive query work table poisoned")
}
