//! Work a scan leaves to the datanodes of a cluster (decision 0033): the conjuncts of its
//! filter that evaluate the same on a datanode as on the coordinator, and partial
//! aggregation (count, sum, min, max, avg) of the rows that pass, which the coordinator
//! combines. `push_down` rewrites a bound query for a coordinator with several datanodes;
//! a datanode runs the `ScanWork` it is sent with `ScanWork::passes` and `PartialGroups`,
//! through this crate's `eval`, the coordinator's own evaluator.

use crate::catalog::{Distribution, TableDef};
use crate::eval::{EvalCtx, EvalEnv};
use crate::functions::{AggFunc, ScalarFunc};
use crate::plan::{Access, AggCall, Expr, Query, Rel, Statement, SubqueryKind};
use crate::subquery::SubqueryResult;
use pgerror::{PgError, PgResult};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use types::ops::{self, BinaryOp};
use types::timezone::Zone;
use types::{DataType, Value};

/// A table scan whose `work` runs on the datanodes (`Rel::PushedScan`).
#[derive(Debug, Clone)]
pub struct PushedScan {
    pub table: Arc<TableDef>,
    /// `Access::Full` or `Access::KeyRange`, evaluated on the coordinator.
    pub access: Access,
    pub work: ScanWork,
    /// The value of the table's hash-distribution column in every row that passes the
    /// filter (`col = expr` among its conjuncts): the scan reads only that value's
    /// datanode. Evaluated on the coordinator; reads no row.
    pub route: Option<Expr>,
}

impl PushedScan {
    /// The width of its rows: the table's, or a partial aggregation's.
    pub fn width(&self) -> usize {
        match &self.work.partial {
            Some(p) => p.group_by.len() + p.states.len(),
            None => self.table.columns.len(),
        }
    }
}

/// What a datanode does with the rows of a scan before it answers.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct ScanWork {
    /// Only rows for which it is TRUE are kept. It holds no subquery, no reference to an
    /// enclosing row and no function that needs the session; parameters are replaced by
    /// their values before it is sent (`bind`).
    pub filter: Option<Expr>,
    /// Instead of its rows, the scan answers one row per group of the rows kept: the
    /// group's values, then each state.
    pub partial: Option<PartialAggregate>,
    /// Columns the coordinator reads of the rows kept; the others travel as NULL. None: all.
    pub columns: Option<Vec<bool>>,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct PartialAggregate {
    pub group_by: Vec<Expr>,
    pub states: Vec<PartialState>,
}

/// One partial aggregate over the rows of a group on one datanode.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct PartialState {
    pub kind: StateKind,
    /// None for count(*).
    pub arg: Option<Expr>,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub enum StateKind {
    /// The number of rows whose argument is not NULL (int8).
    Count,
    /// The sum of the non-NULL arguments in this type; NULL when there are none.
    Sum(DataType),
    Min,
    Max,
}

impl ScanWork {
    /// Every expression it holds.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        let partial = self.partial.iter().flat_map(|p| {
            p.group_by
                .iter()
                .chain(p.states.iter().filter_map(|s| s.arg.as_ref()))
        });
        self.filter.iter().chain(partial)
    }

    /// This work with the statement's parameters in place of its `Param`s, ready to send.
    pub fn bind(&self, params: &[Value], columns: Option<Vec<bool>>) -> ScanWork {
        let bind = |e: &Expr| bind_params(e.clone(), params);
        ScanWork {
            filter: self.filter.as_ref().map(bind),
            partial: self.partial.as_ref().map(|p| PartialAggregate {
                group_by: p.group_by.iter().map(bind).collect(),
                states: p
                    .states
                    .iter()
                    .map(|s| PartialState {
                        kind: s.kind.clone(),
                        arg: s.arg.as_ref().map(bind),
                    })
                    .collect(),
            }),
            columns,
        }
    }

    /// The columns a datanode must decode of each stored row: those its expressions read,
    /// and, for rows sent whole, those the coordinator reads (every one without `columns`).
    /// None: every column.
    pub fn columns_read(&self) -> Option<Vec<bool>> {
        let mut cols = match (&self.partial, &self.columns) {
            (None, None) => return None,
            (None, Some(cols)) => cols.clone(),
            (Some(_), _) => Vec::new(),
        };
        for e in self.exprs() {
            e.visit(&mut |x| {
                if let Expr::Column { index, .. } = x {
                    if cols.len() <= *index {
                        cols.resize(index + 1, false);
                    }
                    cols[*index] = true;
                }
            });
        }
        Some(cols)
    }

    /// Whether `row` passes the filter.
    pub fn passes(&self, row: &[Value]) -> PgResult<bool> {
        evaluator().matches(self.filter.as_ref(), row)
    }
}

/// The evaluation context of pushed expressions: no parameters (they are bound), no
/// enclosing rows, no session.
fn evaluator() -> EvalCtx<'static> {
    EvalCtx {
        params: &[],
        outer: &[],
        env: &NoSession,
    }
}

/// What a datanode's evaluation has instead of a session: nothing, since `pushable`
/// keeps out every expression that would ask.
struct NoSession;

impl EvalEnv for NoSession {
    fn subquery(
        &self,
        _: &Query,
        _: &SubqueryKind,
        _: &[Vec<Value>],
        _: &[Value],
    ) -> PgResult<Arc<SubqueryResult>> {
        Err(PgError::internal("a subquery was pushed to a datanode"))
    }

    fn session_function(&self, func: ScalarFunc, _: Vec<Value>) -> PgResult<Value> {
        Err(PgError::internal(format!(
            "{func:?} needs the session and was pushed to a datanode"
        )))
    }

    /// Never read: `pushable` keeps out the casts that depend on the zone.
    fn zone(&self) -> &Zone {
        &UTC
    }
}

static UTC: Zone = Zone::UTC;

/// The groups of a partial aggregation on a datanode, in first-seen order.
pub struct PartialGroups<'w> {
    partial: &'w PartialAggregate,
    index: FxHashMap<Vec<u8>, usize>,
    /// Per group: its values, then its states.
    groups: Vec<Vec<Value>>,
    key: Vec<u8>,
}

impl<'w> PartialGroups<'w> {
    pub fn new(partial: &'w PartialAggregate) -> Self {
        PartialGroups {
            partial,
            index: FxHashMap::default(),
            groups: Vec::new(),
            key: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Adds a row (that passed the filter) to its group.
    pub fn push(&mut self, row: &[Value]) -> PgResult<()> {
        let ctx = evaluator();
        let p = self.partial;
        let mut keys = Vec::with_capacity(p.group_by.len());
        for e in &p.group_by {
            keys.push(ctx.eval(e, row)?);
        }
        self.key.clear();
        // without GROUP BY there is one group: no key to encode and look up per row
        if !keys.is_empty() {
            types::codec::encode_key(&keys, &mut self.key);
        }
        let slot = match self.index.get(self.key.as_slice()) {
            Some(&i) => i,
            None => {
                keys.extend(p.states.iter().map(|s| match s.kind {
                    StateKind::Count => Value::Int8(0),
                    _ => Value::Null,
                }));
                self.groups.push(keys);
                self.index.insert(self.key.clone(), self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        let width = p.group_by.len();
        for (i, s) in p.states.iter().enumerate() {
            let v = match &s.arg {
                Some(e) => ctx.eval(e, row)?,
                None => Value::Bool(true),
            };
            if v.is_null() {
                continue;
            }
            let state = &mut self.groups[slot][width + i];
            *state = accumulate(&s.kind, std::mem::replace(state, Value::Null), v)?;
        }
        Ok(())
    }

    /// The groups as rows: values, then states.
    pub fn into_rows(self) -> Vec<Vec<Value>> {
        self.groups
    }
}

/// A state after one more non-NULL argument, by the rules of the coordinator's
/// aggregation (`coordinator::exec::aggregate`): sums in the aggregate's type through
/// `+`, min and max by `ops::sort_cmp`.
fn accumulate(kind: &StateKind, state: Value, v: Value) -> PgResult<Value> {
    Ok(match kind {
        StateKind::Count => Value::Int8(state.as_i64().unwrap_or(0) + 1),
        StateKind::Sum(ty) => {
            // an int8 sum of integers adds in place while it does not overflow (past it,
            // `+` raises 22003)
            if let (Value::Int8(sum), Some(x)) = (&state, v.as_i64()) {
                if let Some(sum) = sum.checked_add(x) {
                    return Ok(Value::Int8(sum));
                }
            }
            let v = types::cast::cast(v.clone(), &v.natural_type(), ty, false)?;
            if state.is_null() {
                v
            } else {
                ops::eval_binary(BinaryOp::Add, &state, &v)?
            }
        }
        StateKind::Min | StateKind::Max => {
            let want = match kind {
                StateKind::Min => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            if state.is_null() || ops::sort_cmp(&v, &state) == want {
                v
            } else {
                state
            }
        }
    })
}

/// Rewrites the queries of `stmt` for a coordinator with several datanodes: filters and
/// aggregations over user-table scans go to the datanodes where they can.
pub fn push_down(stmt: &mut Statement) {
    match stmt {
        Statement::Query(q) => rewrite(&mut q.root, false),
        Statement::Insert(i) => rewrite(&mut i.source, false),
        // EXPLAIN shows the plan the statement would run.
        Statement::Explain(explained, _) => push_down(explained),
        _ => {}
    }
}

/// `limited`: a LIMIT above may stop reading `rel`'s rows before their end (no sort or
/// aggregate between them consumes them all first).
fn rewrite(rel: &mut Rel, limited: bool) {
    if let Some(pushed) = pushed_aggregate(rel).or_else(|| pushed_filter(rel, limited)) {
        *rel = pushed;
        return;
    }
    match rel {
        Rel::Aggregate { input, .. } | Rel::Sort { input, .. } | Rel::WindowAgg { input, .. } => {
            rewrite(input, false)
        }
        Rel::Limit { input, .. } => rewrite(input, true),
        Rel::Filter { input, .. }
        | Rel::Project { input, .. }
        | Rel::Distinct { input }
        | Rel::Unique { input, .. } => rewrite(input, limited),
        Rel::Join { left, right, .. } | Rel::Union { left, right, .. } => {
            rewrite(left, limited);
            rewrite(right, limited);
        }
        // every row of both sides is counted before any is emitted
        Rel::SetOp { left, right, .. } => {
            rewrite(left, false);
            rewrite(right, false);
        }
        Rel::RecursiveUnion {
            base, recursive, ..
        } => {
            rewrite(base, limited);
            rewrite(recursive, limited);
        }
        Rel::Unit
        | Rel::Scan { .. }
        | Rel::PushedScan(_)
        | Rel::System { .. }
        | Rel::Values { .. }
        | Rel::GenerateSeries { .. }
        | Rel::Unnest { .. }
        | Rel::RowsFrom { .. }
        | Rel::WorkTable { .. } => {}
    }
}

/// A range or full scan, with the filter above it if any.
fn scan_under(rel: &Rel) -> Option<(&Arc<TableDef>, &Access, Option<&Expr>)> {
    match rel {
        Rel::Filter { input, predicate } => range_scan(input).map(|(t, a)| (t, a, Some(predicate))),
        _ => range_scan(rel).map(|(t, a)| (t, a, None)),
    }
}

fn range_scan(rel: &Rel) -> Option<(&Arc<TableDef>, &Access)> {
    match rel {
        Rel::Scan {
            table,
            access: access @ (Access::Full | Access::KeyRange { .. }),
        } => Some((table, access)),
        _ => None,
    }
}

/// `Filter(Scan)` as a pushed scan under the conjuncts that must stay (if any).
fn pushed_filter(rel: &Rel, limited: bool) -> Option<Rel> {
    let (table, access, Some(predicate)) = scan_under(rel)? else {
        return None;
    };
    let (pushed, kept) = split(predicate, limited);
    let pushed = pushed?;
    let scan = Rel::PushedScan(Box::new(PushedScan {
        table: table.clone(),
        access: access.clone(),
        route: route(table, &pushed),
        work: ScanWork {
            filter: Some(pushed),
            partial: None,
            columns: None,
        },
    }));
    Some(match kept {
        Some(predicate) => Rel::Filter {
            input: Box::new(scan),
            predicate,
        },
        None => scan,
    })
}

/// `Aggregate(Filter(Scan))` or `Aggregate(Scan)` whose filter is pushable whole and
/// whose aggregates all have partial forms: partial states on the datanodes, combined
/// by an aggregation on the coordinator, and finished by a projection.
fn pushed_aggregate(rel: &Rel) -> Option<Rel> {
    let Rel::Aggregate {
        input,
        group_by,
        aggs,
    } = rel
    else {
        return None;
    };
    let (table, access, predicate) = scan_under(input)?;
    if predicate.is_some_and(|p| !pushable(p)) || !group_by.iter().all(pushable) {
        return None;
    }
    let width = group_by.len();
    let mut states = Vec::new();
    let mut combine = Vec::new();
    let mut finals: Vec<Expr> = group_by
        .iter()
        .enumerate()
        .map(|(index, e)| column(index, e.ty()))
        .collect();
    for a in aggs {
        let (partial, final_expr) = partial_form(a, width + combine.len())?;
        for (state, combine_with) in partial {
            combine.push(combine_with(column(
                width + states.len(),
                state_type(&state, a),
            )));
            states.push(state);
        }
        finals.push(final_expr);
    }
    let scan = Rel::PushedScan(Box::new(PushedScan {
        table: table.clone(),
        access: access.clone(),
        route: predicate.and_then(|p| route(table, p)),
        work: ScanWork {
            filter: predicate.cloned(),
            partial: Some(PartialAggregate {
                group_by: group_by.clone(),
                states,
            }),
            columns: None,
        },
    }));
    Some(Rel::Project {
        input: Box::new(Rel::Aggregate {
            input: Box::new(scan),
            group_by: (0..width).map(|i| column(i, group_by[i].ty())).collect(),
            aggs: combine,
        }),
        exprs: finals,
    })
}

/// How a partial state combines on the coordinator: the aggregate call over its column.
type Combine = fn(Expr) -> AggCall;

/// The partial states of `a`, each with how it combines, and the expression that
/// finishes it over the combined columns (the first at `at`); None if it has no partial
/// form here.
fn partial_form(a: &AggCall, at: usize) -> Option<(Vec<(PartialState, Combine)>, Expr)> {
    if a.distinct || a.filter.is_some() || !a.arg.as_ref().is_none_or(pushable) {
        return None;
    }
    let exact = a.arg.as_ref().is_some_and(|e| {
        matches!(
            e.ty(),
            DataType::Int2 | DataType::Int4 | DataType::Int8 | DataType::Numeric { .. }
        )
    });
    let state = |kind| PartialState {
        kind,
        arg: a.arg.clone(),
    };
    let numeric = DataType::Numeric {
        precision_scale: None,
    };
    Some(match a.func {
        // count: the sum of the counts (an int8 sum), 0 where no datanode had a row
        AggFunc::Count => (
            vec![(state(StateKind::Count), sum_int8 as Combine)],
            Expr::Coalesce {
                args: vec![
                    column(at, DataType::Int8),
                    Expr::Const(Value::Int8(0), DataType::Int8),
                ],
                ty: DataType::Int8,
            },
        ),
        // float sums depend on the order of their terms: they stay on the coordinator
        AggFunc::Sum if exact => (
            vec![(state(StateKind::Sum(a.ty.clone())), sum_as(&a.ty)?)],
            column(at, a.ty.clone()),
        ),
        AggFunc::Min => (vec![(state(StateKind::Min), min)], column(at, a.ty.clone())),
        AggFunc::Max => (vec![(state(StateKind::Max), max)], column(at, a.ty.clone())),
        // avg of exact numbers is numeric: the sum of the sums over the sum of the counts
        AggFunc::Avg if exact => (
            vec![
                (state(StateKind::Sum(numeric.clone())), sum_numeric),
                (state(StateKind::Count), sum_numeric),
            ],
            Expr::Binary {
                op: BinaryOp::Div,
                left: Box::new(column(at, numeric.clone())),
                right: Box::new(column(at + 1, numeric.clone())),
                ty: numeric,
            },
        ),
        _ => return None,
    })
}

/// The type of a partial state's column.
fn state_type(state: &PartialState, a: &AggCall) -> DataType {
    match &state.kind {
        StateKind::Count => DataType::Int8,
        StateKind::Sum(ty) => ty.clone(),
        StateKind::Min | StateKind::Max => a.ty.clone(),
    }
}

fn column(index: usize, ty: DataType) -> Expr {
    Expr::Column {
        depth: 0,
        index,
        ty,
    }
}

fn call(func: AggFunc, arg: Expr, ty: DataType) -> AggCall {
    AggCall {
        func,
        arg: Some(arg),
        distinct: false,
        filter: None,
        ty,
    }
}

/// The coordinator's sum accumulates in the call's type (`AggCall::ty`): an int8 sum
/// of int8 counts stays int8.
fn sum_int8(e: Expr) -> AggCall {
    call(AggFunc::Sum, e, DataType::Int8)
}

fn sum_numeric(e: Expr) -> AggCall {
    call(
        AggFunc::Sum,
        e,
        DataType::Numeric {
            precision_scale: None,
        },
    )
}

fn sum_as(ty: &DataType) -> Option<Combine> {
    match ty {
        DataType::Int8 => Some(sum_int8),
        DataType::Numeric { .. } => Some(sum_numeric),
        _ => None,
    }
}

fn min(e: Expr) -> AggCall {
    let ty = e.ty();
    call(AggFunc::Min, e, ty)
}

fn max(e: Expr) -> AggCall {
    let ty = e.ty();
    call(AggFunc::Max, e, ty)
}

/// The expression that fixes `table`'s hash-distribution column in a pushed filter: a
/// conjunct `col = expr` (either way round) where `expr` reads no row and is of the
/// column's kind, one whose equal values have one key encoding and so one bucket
/// (integers of any width, numerics of any scale, text; not floats, where 0 = -0, nor
/// blank-padded text).
fn route(table: &TableDef, filter: &Expr) -> Option<Expr> {
    let Distribution::Hash { column } = table.distribution else {
        return None;
    };
    let kind = hash_kind(&table.columns.get(column)?.ty.to_type())?;
    let is_column = |e: &Expr| e.key_column() == Some(column);
    let reads_no_row = |e: &Expr| {
        let mut none = true;
        e.visit(&mut |x| none &= !matches!(x, Expr::Column { .. }));
        none
    };
    filter.conjuncts().into_iter().find_map(|c| match c {
        Expr::Binary {
            op: BinaryOp::Eq,
            left,
            right,
            ..
        } => [(left, right), (right, left)]
            .into_iter()
            .find(|(col, value)| {
                is_column(col) && reads_no_row(value) && hash_kind(&value.ty()) == Some(kind)
            })
            .map(|(_, value)| (**value).clone()),
        _ => None,
    })
}

/// Types whose SQL-equal values share a key encoding, by kind; None for the others.
fn hash_kind(ty: &DataType) -> Option<u8> {
    Some(match ty {
        DataType::Int2 | DataType::Int4 | DataType::Int8 => 0,
        DataType::Numeric { .. } => 1,
        DataType::Text | DataType::Varchar { .. } => 2,
        DataType::Date => 3,
        DataType::Timestamp { .. } => 4,
        DataType::TimestampTz { .. } => 5,
        _ => return None,
    })
}

/// The conjuncts of `predicate` a datanode can evaluate, and those that must stay, each
/// ANDed in their order; None for none.
fn split(predicate: &Expr, limited: bool) -> (Option<Expr>, Option<Expr>) {
    let (pushed, kept): (Vec<&Expr>, Vec<&Expr>) = predicate
        .conjuncts()
        .into_iter()
        .partition(|c| pushable(c) && (!limited || cannot_fail(c)));
    (and_all(pushed), and_all(kept))
}

/// Whether evaluating `e` can raise no error: comparisons of columns, constants and
/// parameters of one type, combined by AND, OR, NOT and IS [NOT] NULL.
///
/// Why: a datanode filters a whole page ahead of the coordinator. Under a LIMIT that the
/// rows reach without being all consumed first (no sort or aggregate in between), the
/// coordinator may stop before rows a datanode already filtered, and PostgreSQL would not
/// have evaluated them: a conjunct that can fail (a division, a cast) stays on the
/// coordinator there.
fn cannot_fail(e: &Expr) -> bool {
    let mut ok = true;
    e.visit(&mut |x| {
        ok &= match x {
            Expr::Column { .. }
            | Expr::Const(..)
            | Expr::Param { .. }
            | Expr::And(..)
            | Expr::Or(..)
            | Expr::Not(_)
            | Expr::IsNull { .. } => true,
            Expr::Binary {
                op, left, right, ..
            } => {
                matches!(
                    op,
                    BinaryOp::Eq
                        | BinaryOp::NotEq
                        | BinaryOp::Lt
                        | BinaryOp::LtEq
                        | BinaryOp::Gt
                        | BinaryOp::GtEq
                ) && left.ty() == right.ty()
            }
            _ => false,
        }
    });
    ok
}

fn and_all(conjuncts: Vec<&Expr>) -> Option<Expr> {
    conjuncts
        .into_iter()
        .cloned()
        .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
}

/// Whether a datanode evaluates `e` exactly as the coordinator would: it reads only the
/// scanned row, constants and parameters, and calls only what needs no session or
/// catalog and gives the same answer anywhere (no `random()`).
pub fn pushable(e: &Expr) -> bool {
    let mut ok = true;
    e.visit(&mut |x| {
        ok &= match x {
            Expr::Subquery { .. } => false,
            Expr::Column { depth, .. } => *depth == 0,
            // timestamptz ± interval counts days on the session zone's wall clock
            Expr::Binary {
                ty: DataType::TimestampTz { .. },
                ..
            } => false,
            Expr::Func { func, .. } => {
                !func.needs_session() && !func.needs_zone() && !func.is_volatile()
            }
            // casts to and from the reg* types read the catalog, timestamptz casts the
            // session's time zone
            Expr::Cast { from, to, .. } => {
                !reads_catalog(from)
                    && !reads_catalog(to)
                    && !types::cast::depends_on_zone(from, to)
            }
            _ => true,
        }
    });
    ok
}

fn reads_catalog(ty: &DataType) -> bool {
    matches!(
        ty,
        DataType::RegClass | DataType::RegProc | DataType::RegType | DataType::RegNamespace
    )
}

/// `e` with each parameter replaced by its value.
fn bind_params(mut e: Expr, params: &[Value]) -> Expr {
    replace_params(&mut e, params);
    e
}

fn replace_params(e: &mut Expr, params: &[Value]) {
    if let Expr::Param { index, ty } = e {
        let value = params.get(*index).cloned().unwrap_or(Value::Null);
        *e = Expr::Const(value, ty.clone());
        return;
    }
    match e {
        Expr::Const(..) | Expr::Param { .. } | Expr::Column { .. } | Expr::Subquery { .. } => {}
        Expr::Binary { left, right, .. }
        | Expr::And(left, right)
        | Expr::Or(left, right)
        | Expr::IsDistinctFrom { left, right, .. } => {
            replace_params(left, params);
            replace_params(right, params);
        }
        Expr::Unary { operand, .. }
        | Expr::Not(operand)
        | Expr::IsNull { operand, .. }
        | Expr::Cast { operand, .. } => replace_params(operand, params),
        Expr::Func { args, .. }
        | Expr::Coalesce { args, .. }
        | Expr::Array { elements: args, .. } => {
            args.iter_mut().for_each(|a| replace_params(a, params))
        }
        Expr::Case {
            operand,
            whens,
            otherwise,
            ..
        } => {
            operand.iter_mut().for_each(|o| replace_params(o, params));
            for (w, t) in whens {
                replace_params(w, params);
                replace_params(t, params);
            }
            otherwise.iter_mut().for_each(|o| replace_params(o, params));
        }
        Expr::InList { operand, list, .. } => {
            replace_params(operand, params);
            list.iter_mut().for_each(|x| replace_params(x, params));
        }
        Expr::AnyArray { left, array, .. } => {
            replace_params(left, params);
            replace_params(array, params);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use types::numeric::Numeric;

    /// Every kind of expression a datanode may be sent comes back as it went, through
    /// the transport's encoding (bincode): constants exact, variants in place.
    #[test]
    fn pushed_work_survives_the_wire() {
        let col = |index, ty| column(index, ty);
        let numeric = DataType::Numeric {
            precision_scale: Some((10, 2)),
        };
        let filter = Expr::And(
            Box::new(Expr::Coalesce {
                args: vec![
                    col(1, DataType::Bool),
                    Expr::Const(Value::Bool(false), DataType::Bool),
                ],
                ty: DataType::Bool,
            }),
            Box::new(Expr::Binary {
                op: BinaryOp::Gt,
                left: Box::new(Expr::Cast {
                    operand: Box::new(col(0, DataType::Int4)),
                    from: DataType::Int4,
                    to: numeric.clone(),
                    explicit: false,
                }),
                right: Box::new(Expr::Const(
                    Value::Numeric(Numeric::from(1250).round(0).unwrap()),
                    numeric,
                )),
                ty: DataType::Bool,
            }),
        );
        let work = ScanWork {
            filter: Some(filter),
            partial: Some(PartialAggregate {
                group_by: vec![col(2, DataType::Text)],
                states: vec![
                    PartialState {
                        kind: StateKind::Count,
                        arg: None,
                    },
                    PartialState {
                        kind: StateKind::Sum(DataType::Int8),
                        arg: Some(col(0, DataType::Int4)),
                    },
                ],
            }),
            columns: Some(vec![true, false, true]),
        };
        let bytes = bincode::serialize(&work).unwrap();
        let back: ScanWork = bincode::deserialize(&bytes).unwrap();
        assert_eq!(format!("{back:?}"), format!("{work:?}"));
    }

    /// A subquery cannot be sent, and `pushable` keeps it (and session functions,
    /// volatile ones and outer references) home.
    #[test]
    fn only_row_local_deterministic_expressions_are_pushable() {
        let f = |func| Expr::Func {
            func,
            args: vec![],
            ty: DataType::Float8,
        };
        assert!(!pushable(&f(ScalarFunc::Random)));
        assert!(!pushable(&f(ScalarFunc::Now)));
        assert!(pushable(&Expr::Func {
            func: ScalarFunc::Abs,
            args: vec![column(0, DataType::Int4)],
            ty: DataType::Int4,
        }));
        assert!(!pushable(&Expr::Column {
            depth: 1,
            index: 0,
            ty: DataType::Int4
        }));
        assert!(pushable(&Expr::Param {
            index: 0,
            ty: DataType::Int4
        }));
    }
}
