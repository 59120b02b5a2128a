//! Evaluation of bound expressions against a row.

use crate::functions::{eval_pure, ScalarFunc};
use crate::plan::{Expr, Query, SubqueryKind};
use crate::subquery::SubqueryResult;
use pgerror::{codes, PgError, PgResult};
use std::borrow::Cow;
use std::cmp::Ordering;
use types::ops::{self, BinaryOp};
use types::timezone::Zone;
use types::{DataType, Value};

/// What expression evaluation needs from the session that runs it.
pub trait EvalEnv: Sync {
    /// The result of a subquery for the enclosing rows `outer` (innermost last) and the
    /// row being evaluated. Evaluation is synchronous and a subquery's reads are not:
    /// an environment that has not computed the result yet notes which one is wanted
    /// and fails; its executor then computes it (awaiting what it must) and evaluates
    /// the expression again (`coordinator/src/exec.rs`).
    fn subquery(
        &self,
        plan: &Query,
        kind: &SubqueryKind,
        outer: &[Vec<Value>],
        row: &[Value],
    ) -> PgResult<std::sync::Arc<SubqueryResult>>;
    /// Evaluate a function that needs session or catalog state.
    fn session_function(&self, func: ScalarFunc, args: Vec<Value>) -> PgResult<Value>;
    /// The session's time zone (TimeZone): timestamptz casts read and show values in it.
    fn zone(&self) -> &Zone;
}

/// A strict binary operator: NULL if either operand is.
pub fn binary(op: BinaryOp, l: &Value, r: &Value) -> PgResult<Value> {
    if l.is_null() || r.is_null() {
        return Ok(Value::Null);
    }
    // An integer comparison (the commonest filter) decided here, without the operator
    // dispatch of `ops::eval_binary`, which compares integers of any width as i64 too.
    if let (Some(a), Some(b)) = (integer(l), integer(r)) {
        if let Some(holds) = comparison(op, a.cmp(&b)) {
            return Ok(Value::Bool(holds));
        }
    }
    ops::eval_binary(op, l, r)
}

/// timestamptz ± interval, with the months and days on the wall clock of the session's
/// zone (a day stays a calendar day across a DST change); None for other operands.
fn zoned_interval_arithmetic(
    op: BinaryOp,
    l: &Value,
    r: &Value,
    zone: &Zone,
) -> PgResult<Option<Value>> {
    let (ts, interval, sign) = match (op, l, r) {
        (BinaryOp::Add, Value::TimestampTz(t), i @ Value::Interval { .. }) => (*t, i, 1),
        (BinaryOp::Sub, Value::TimestampTz(t), i @ Value::Interval { .. }) => (*t, i, -1),
        (BinaryOp::Add, i @ Value::Interval { .. }, Value::TimestampTz(t)) => (*t, i, 1),
        _ => return Ok(None),
    };
    let Value::Interval {
        months,
        days,
        micros,
    } = *interval
    else {
        return Ok(None);
    };
    let t = types::datetime_fields::timestamptz_add_interval(ts, months, days, micros, sign, zone)?;
    Ok(Some(Value::TimestampTz(t)))
}

fn integer(v: &Value) -> Option<i64> {
    match *v {
        Value::Int2(i) => Some(i.into()),
        Value::Int4(i) => Some(i.into()),
        Value::Int8(i) => Some(i),
        _ => None,
    }
}

/// Whether `a op b` holds where `a` compares with `b` as `o`; None if `op` is no comparison.
fn comparison(op: BinaryOp, o: Ordering) -> Option<bool> {
    Some(match op {
        BinaryOp::Eq => o.is_eq(),
        BinaryOp::NotEq => o.is_ne(),
        BinaryOp::Lt => o.is_lt(),
        BinaryOp::LtEq => o.is_le(),
        BinaryOp::Gt => o.is_gt(),
        BinaryOp::GtEq => o.is_ge(),
        _ => return None,
    })
}

pub struct EvalCtx<'a> {
    pub params: &'a [Value],
    /// Enclosing rows for correlated references, innermost last.
    pub outer: &'a [Vec<Value>],
    pub env: &'a dyn EvalEnv,
}

impl<'a> EvalCtx<'a> {
    pub fn eval(&self, expr: &Expr, row: &[Value]) -> PgResult<Value> {
        Ok(match expr {
            Expr::Const(v, _) => v.clone(),
            Expr::Param { index, .. } => self.params.get(*index).cloned().unwrap_or(Value::Null),
            Expr::Column {
                depth: 0, index, ..
            } => row.get(*index).cloned().unwrap_or(Value::Null),
            Expr::Column { depth, index, .. } => {
                let outer = self
                    .outer
                    .len()
                    .checked_sub(*depth)
                    .and_then(|i| self.outer.get(i))
                    .ok_or_else(|| PgError::internal("outer reference without an outer row"))?;
                outer.get(*index).cloned().unwrap_or(Value::Null)
            }
            Expr::Binary {
                op,
                left,
                right,
                ty,
            } => {
                let (l, r) = (self.operand(left, row)?, self.operand(right, row)?);
                if matches!(ty, DataType::TimestampTz { .. }) {
                    if let Some(v) = zoned_interval_arithmetic(*op, &l, &r, self.env.zone())? {
                        return Ok(v);
                    }
                }
                binary(*op, &l, &r)?
            }
            Expr::Unary { op, operand, .. } => {
                let v = self.eval(operand, row)?;
                if v.is_null() {
                    Value::Null
                } else {
                    ops::eval_unary(*op, &v)?
                }
            }
            Expr::And(a, b) => match self.eval_bool(a, row)? {
                Some(false) => Value::Bool(false),
                first => match (first, self.eval_bool(b, row)?) {
                    (_, Some(false)) => Value::Bool(false),
                    (Some(true), Some(true)) => Value::Bool(true),
                    _ => Value::Null,
                },
            },
            Expr::Or(a, b) => match self.eval_bool(a, row)? {
                Some(true) => Value::Bool(true),
                first => match (first, self.eval_bool(b, row)?) {
                    (_, Some(true)) => Value::Bool(true),
                    (Some(false), Some(false)) => Value::Bool(false),
                    _ => Value::Null,
                },
            },
            Expr::Not(e) => match self.eval_bool(e, row)? {
                Some(b) => Value::Bool(!b),
                None => Value::Null,
            },
            Expr::IsNull { operand, negated } => {
                Value::Bool(self.operand(operand, row)?.is_null() != *negated)
            }
            Expr::IsDistinctFrom {
                left,
                right,
                negated,
            } => {
                let l = self.eval(left, row)?;
                let r = self.eval(right, row)?;
                let distinct = match (l.is_null(), r.is_null()) {
                    (true, true) => false,
                    (true, false) | (false, true) => true,
                    _ => ops::compare(&l, &r) != Some(Ordering::Equal),
                };
                Value::Bool(distinct != *negated)
            }
            Expr::Cast {
                operand,
                from,
                to,
                explicit,
            } => {
                let v = self.eval(operand, row)?;
                if v.is_null() {
                    Value::Null
                } else {
                    types::cast::cast_in(v, from, to, *explicit, self.env.zone())?
                }
            }
            Expr::Func { func, args, .. } => {
                let mut values = Vec::with_capacity(args.len());
                for a in args {
                    values.push(self.eval(a, row)?);
                }
                if func.needs_session() {
                    self.env.session_function(*func, values)?
                } else if func.needs_zone() {
                    crate::functions::eval_zoned(*func, values, self.env.zone())?
                } else {
                    eval_pure(*func, values)?
                }
            }
            Expr::Case {
                operand,
                whens,
                otherwise,
                ..
            } => {
                let subject = match operand {
                    Some(o) => Some(self.eval(o, row)?),
                    None => None,
                };
                for (cond, result) in whens {
                    let hit = match &subject {
                        Some(s) => {
                            let c = self.eval(cond, row)?;
                            !s.is_null()
                                && !c.is_null()
                                && ops::compare(s, &c) == Some(Ordering::Equal)
                        }
                        None => self.eval_bool(cond, row)? == Some(true),
                    };
                    if hit {
                        return self.eval(result, row);
                    }
                }
                match otherwise {
                    Some(e) => self.eval(e, row)?,
                    None => Value::Null,
                }
            }
            Expr::InList {
                operand,
                list,
                negated,
            } => {
                let v = self.eval(operand, row)?;
                let mut candidates = Vec::with_capacity(list.len());
                for e in list {
                    candidates.push(self.eval(e, row)?);
                }
                in_values(&v, candidates.iter(), *negated)
            }
            Expr::AnyArray {
                op,
                left,
                array,
                all,
            } => {
                let l = self.eval(left, row)?;
                let arr = self.eval(array, row)?;
                match arr {
                    Value::Array(items) => quantified(*op, &l, &items, *all)?,
                    _ => Value::Null,
                }
            }
            Expr::Array { elements, .. } => {
                let mut items = Vec::with_capacity(elements.len());
                for e in elements {
                    items.push(self.eval(e, row)?);
                }
                Value::Array(items)
            }
            Expr::Coalesce { args, .. } => {
                for a in args {
                    let v = self.eval(a, row)?;
                    if !v.is_null() {
                        return Ok(v);
                    }
                }
                Value::Null
            }
            Expr::Subquery { plan, kind, .. } => self.eval_subquery(plan, kind, row)?,
        })
    }

    /// The value of `expr` where an operator only reads it: a column, constant or
    /// parameter borrowed where it is (no clone of a string per row and per operand,
    /// and no drop after), anything else evaluated.
    pub fn operand<'v>(&'v self, expr: &'v Expr, row: &'v [Value]) -> PgResult<Cow<'v, Value>> {
        const NULL: &Value = &Value::Null;
        Ok(Cow::Borrowed(match expr {
            Expr::Column {
                depth: 0, index, ..
            } => row.get(*index).unwrap_or(NULL),
            Expr::Const(v, _) => v,
            Expr::Param { index, .. } => self.params.get(*index).unwrap_or(NULL),
            _ => return self.eval(expr, row).map(Cow::Owned),
        }))
    }

    /// Evaluate a boolean expression: Some(bool), or None for NULL.
    pub fn eval_bool(&self, expr: &Expr, row: &[Value]) -> PgResult<Option<bool>> {
        match self.eval(expr, row)? {
            Value::Bool(b) => Ok(Some(b)),
            Value::Null => Ok(None),
            other => Err(PgError::new(
                codes::DATATYPE_MISMATCH,
                format!("argument must be type boolean, not {other:?}"),
            )),
        }
    }

    /// A WHERE clause: true only for TRUE.
    pub fn matches(&self, predicate: Option<&Expr>, row: &[Value]) -> PgResult<bool> {
        match predicate {
            None => Ok(true),
            Some(p) => Ok(self.eval_bool(p, row)? == Some(true)),
        }
    }

    fn eval_subquery(&self, plan: &Query, kind: &SubqueryKind, row: &[Value]) -> PgResult<Value> {
        let result = self.env.subquery(plan, kind, self.outer, row)?;
        Ok(match (kind, result.as_ref()) {
            (SubqueryKind::In { left, negated }, SubqueryResult::Set(set)) => {
                set.contains(&*self.operand(left, row)?, *negated)
            }
            (SubqueryKind::RowIn { left, negated }, SubqueryResult::Rows(set)) => {
                let values = (left.iter())
                    .map(|e| self.eval(e, row))
                    .collect::<PgResult<Vec<_>>>()?;
                set.contains(&values, *negated)
            }
            (
                SubqueryKind::Quantified { op, left, all },
                SubqueryResult::Value(Value::Array(items)),
            ) => quantified(*op, &self.eval(left, row)?, items, *all)?,
            (_, SubqueryResult::Value(v)) => v.clone(),
            (_, SubqueryResult::Set(_) | SubqueryResult::Rows(_)) => {
                return Err(PgError::internal("subquery result of the wrong kind"))
            }
        })
    }
}

/// SQL `IN`: TRUE if any equal, NULL if none equal but a NULL was involved, else FALSE.
pub(crate) fn in_values<'v>(
    v: &Value,
    candidates: impl Iterator<Item = &'v Value>,
    negated: bool,
) -> Value {
    if v.is_null() {
        return Value::Null;
    }
    let mut saw_null = false;
    for c in candidates {
        if c.is_null() {
            saw_null = true;
        } else if ops::compare(v, c) == Some(Ordering::Equal) {
            return Value::Bool(!negated);
        }
    }
    if saw_null {
        Value::Null
    } else {
        Value::Bool(negated)
    }
}

fn quantified(op: BinaryOp, left: &Value, items: &[Value], all: bool) -> PgResult<Value> {
    // Over no elements ALL is true and ANY false, whatever the left operand.
    if items.is_empty() {
        return Ok(Value::Bool(all));
    }
    if left.is_null() {
        return Ok(Value::Null);
    }
    let mut saw_null = false;
    for item in items {
        if item.is_null() {
            saw_null = true;
            continue;
        }
        match ops::eval_binary(op, left, item)? {
            Value::Bool(true) if !all => return Ok(Value::Bool(true)),
            Value::Bool(false) if all => return Ok(Value::Bool(false)),
            Value::Null => saw_null = true,
            _ => {}
        }
    }
    Ok(if saw_null {
        Value::Null
    } else {
        Value::Bool(all)
    })
}
