//! Hash aggregation (GROUP BY and plain aggregates).

use super::memory::{Held, MemoryAccount};
use super::{group_key, Row};
use pgerror::{codes, PgError, PgResult};
use rustc_hash::{FxHashMap, FxHashSet};
use spill::row_size;
use sql::functions::{ordered_set, AggFunc};
use sql::plan::{AggCall, Expr};
use types::numeric::{self as numeric, Numeric};
use types::ops::{self, BinaryOp};
use types::{DataType, Value};

/// Running state of one aggregate in one group.
#[derive(Clone)]
enum AggState {
    Count(i64),
    /// Sum/min/max/bool: the value so far (Null before the first input).
    Value(Value),
    Avg {
        sum: Value,
        count: i64,
    },
    Array(Vec<Value>),
    /// variance/stddev of exact numbers: count, sum and sum of squares (numeric).
    Moments {
        count: i64,
        sum: Numeric,
        sum_sq: Numeric,
    },
    /// variance/stddev of floats: PostgreSQL's Youngs-Cramer transition values (count,
    /// sum, sum of squared differences from the running mean).
    FloatMoments {
        n: f64,
        sx: f64,
        sxx: f64,
    },
    /// An ordered-set aggregate's non-NULL values, sorted when the group is finished
    /// (`sql::functions::ordered_set`); charged to the statement as they come, as
    /// array_agg's are.
    OrderedSet(Vec<Value>),
}

/// One group: its key values, its aggregate states, and per aggregate the DISTINCT values
/// seen.
type Group = (Vec<Value>, Vec<AggState>, Vec<FxHashSet<Vec<u8>>>);

/// Hash aggregation fed one row at a time; groups keep first-seen order. What it holds
/// (groups, DISTINCT sets, array states) is charged to the statement.
pub(super) struct Aggregator<'p, 'm> {
    group_by: &'p [Expr],
    aggs: &'p [AggCall],
    init: Vec<AggState>,
    /// Per group: its key values, its states, and per aggregate the DISTINCT values seen
    /// (empty when no aggregate is DISTINCT: no allocation per group for nothing).
    groups: Vec<Group>,
    any_distinct: bool,
    index: FxHashMap<Vec<u8>, usize>,
    /// The current row's group key (reused: a key is copied only for a new group).
    key: Vec<u8>,
    held: Held<'m>,
}

/// One input row's contribution: its group key values and each aggregate's argument
/// (None where the aggregate takes nothing from this row). One is reused for every row:
/// `Aggregator::push` takes what it keeps out of it.
#[derive(Default)]
pub(super) struct AggInput {
    pub(super) keys: Vec<Value>,
    pub(super) args: Vec<Option<Value>>,
}

impl<'p, 'm> Aggregator<'p, 'm> {
    pub(super) fn new(
        group_by: &'p [Expr],
        aggs: &'p [AggCall],
        account: &'m MemoryAccount,
    ) -> Self {
        let init = aggs
            .iter()
            .map(|a| match a.func {
                AggFunc::Count => AggState::Count(0),
                AggFunc::Avg => AggState::Avg {
                    sum: Value::Null,
                    count: 0,
                },
                f if f.is_ordered() => AggState::Array(Vec::new()),
                f if f.is_ordered_set() => AggState::OrderedSet(Vec::new()),
                f if f.is_variance() && a.ty == DataType::Float8 => AggState::FloatMoments {
                    n: 0.0,
                    sx: 0.0,
                    sxx: 0.0,
                },
                f if f.is_variance() => AggState::Moments {
                    count: 0,
                    sum: Numeric::ZERO,
                    sum_sq: Numeric::ZERO,
                },
                _ => AggState::Value(Value::Null),
            })
            .collect();
        let any_distinct = aggs.iter().any(|a| a.distinct);
        Aggregator {
            group_by,
            aggs,
            init,
            groups: Vec::new(),
            any_distinct,
            index: FxHashMap::default(),
            key: Vec::new(),
            held: Held::new(account),
        }
    }

    pub(super) fn group_by(&self) -> &'p [Expr] {
        self.group_by
    }

    pub(super) fn aggs(&self) -> &'p [AggCall] {
        self.aggs
    }

    /// Bytes the groups hold.
    pub(super) fn held(&self) -> usize {
        self.held.bytes()
    }

    /// Adds `input` to its group, taking its arguments (and its key values for a new group).
    pub(super) fn push(&mut self, input: &mut AggInput) -> PgResult<()> {
        // Without GROUP BY there is one group: no key to encode and look up per row.
        if self.group_by.is_empty() && !self.groups.is_empty() {
            return self.accumulate_into(0, &mut input.args);
        }
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        types::codec::encode_key(&input.keys, &mut key);
        let pushed = self.push_keyed(&key, input);
        self.key = key;
        pushed
    }

    /// `push` of a contribution whose group key (its keys' `group_key`) is `key` (a
    /// spilled contribution's, read back with it: not encoded again).
    pub(super) fn push_keyed(&mut self, key: &[u8], input: &mut AggInput) -> PgResult<()> {
        let slot = match self.index.get(key) {
            Some(&i) => i,
            None => {
                self.held.charge(
                    row_size(&input.keys)
                        + key.len()
                        + self.aggs.len() * std::mem::size_of::<AggState>(),
                )?;
                let seen = if self.any_distinct {
                    vec![FxHashSet::default(); self.aggs.len()]
                } else {
                    Vec::new()
                };
                // room for the results `finish` appends; `input` keeps its buffer
                let mut keys = Vec::with_capacity(input.keys.len() + self.aggs.len());
                keys.append(&mut input.keys);
                self.groups.push((keys, self.init.clone(), seen));
                self.index.insert(key.to_vec(), self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        self.accumulate_into(slot, &mut input.args)
    }

    /// `push` if the group of `input` is held (true); otherwise nothing is taken, and
    /// `key` is its group key.
    pub(super) fn push_if_held(&mut self, input: &mut AggInput) -> PgResult<bool> {
        self.key.clear();
        types::codec::encode_key(&input.keys, &mut self.key);
        match self.index.get(self.key.as_slice()) {
            Some(&slot) => self.accumulate_into(slot, &mut input.args).map(|_| true),
            None => Ok(false),
        }
    }

    /// The group key of the contribution last given to `push_if_held`.
    pub(super) fn key(&self) -> &[u8] {
        &self.key
    }

    fn accumulate_into(&mut self, slot: usize, args: &mut [Option<Value>]) -> PgResult<()> {
        let (_, states, seen) = &mut self.groups[slot];
        for (i, (a, v)) in self.aggs.iter().zip(args).enumerate() {
            let Some(v) = v.take() else { continue };
            if v.is_null() && !a.func.keeps_nulls() {
                continue;
            }
            if !a.distinct && accumulate_in_place(&mut states[i], a.func, &v) {
                continue;
            }
            if a.distinct {
                let key = group_key(std::slice::from_ref(&v));
                self.held.charge(key.len() + 32)?;
                if !seen[i].insert(key) {
                    continue;
                }
            }
            if matches!(states[i], AggState::Array(_) | AggState::OrderedSet(_)) {
                self.held.charge(row_size(std::slice::from_ref(&v)))?;
            }
            accumulate(&mut states[i], a, v)?;
        }
        Ok(())
    }

    /// The values of the aggregates (of an aggregation without GROUP BY) over what was
    /// pushed so far: a window aggregate's over a frame that grows.
    pub(super) fn current(&self) -> PgResult<Row> {
        let states = self
            .groups
            .first()
            .map_or(&self.init, |(_, states, _)| states);
        states
            .iter()
            .zip(self.aggs)
            .map(|(s, a)| finish(s.clone(), a))
            .collect()
    }

    pub(super) fn finish(mut self) -> PgResult<Vec<Row>> {
        if self.groups.is_empty() && self.group_by.is_empty() {
            self.groups
                .push((Vec::new(), self.init.clone(), Vec::new()));
        }
        let aggs = self.aggs;
        std::mem::take(&mut self.groups)
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

/// The commonest updates, made in place without an operator call: count, sum of int2 or
/// int4 (into int8) while it does not overflow, min and max of int4 or int8. False where
/// `accumulate` must run (then nothing was changed).
fn accumulate_in_place(state: &mut AggState, func: AggFunc, v: &Value) -> bool {
    let cur = match state {
        AggState::Count(n) => {
            *n += 1;
            return true;
        }
        AggState::Value(cur) => cur,
        _ => return false,
    };
    match (func, cur, v) {
        (AggFunc::Sum, Value::Int8(sum), Value::Int2(_) | Value::Int4(_)) => {
            match v.as_i64().and_then(|x| sum.checked_add(x)) {
                Some(s) => *sum = s,
                None => return false, // past int8: `accumulate` raises 22003
            }
        }
        (AggFunc::Min, Value::Int4(c), Value::Int4(x)) => *c = (*c).min(*x),
        (AggFunc::Max, Value::Int4(c), Value::Int4(x)) => *c = (*c).max(*x),
        (AggFunc::Min, Value::Int8(c), Value::Int8(x)) => *c = (*c).min(*x),
        (AggFunc::Max, Value::Int8(c), Value::Int8(x)) => *c = (*c).max(*x),
        _ => return false,
    }
    true
}

fn accumulate(state: &mut AggState, agg: &AggCall, v: Value) -> PgResult<()> {
    match state {
        AggState::Count(n) => *n += 1,
        AggState::Array(items) => items.push(v),
        AggState::OrderedSet(values) => values.push(v),
        AggState::Moments { count, sum, sum_sq } => {
            let x = match v {
                Value::Numeric(x) => x,
                other => Numeric::from_i64(other.as_i64().unwrap_or(0)),
            };
            *sum_sq = numeric::add(sum_sq, &numeric::mul(&x, &x)?)?;
            *sum = numeric::add(sum, &x)?;
            *count += 1;
        }
        AggState::FloatMoments { n, sx, sxx } => {
            // float8_accum: Youngs-Cramer, so that the squares never cancel
            let x = v.as_f64().unwrap_or(0.0);
            let (before, sum_before) = (*n, *sx);
            *n += 1.0;
            *sx += x;
            if before > 0.0 {
                let tmp = x * *n - *sx;
                *sxx += tmp * tmp / (*n * before);
                if sx.is_infinite() || sxx.is_infinite() {
                    if sum_before.is_finite() && x.is_finite() {
                        return Err(PgError::new(
                            codes::NUMERIC_VALUE_OUT_OF_RANGE,
                            "value out of range: overflow",
                        ));
                    }
                    *sxx = f64::NAN;
                }
            } else if !x.is_finite() {
                *sxx = f64::NAN;
            }
        }
        AggState::Avg { sum, count } => {
            let v = match v {
                Value::Float4(f) => Value::Float8(f as f64),
                Value::Float8(f) => Value::Float8(f),
                other => types::cast::cast(
                    other.clone(),
                    &other.natural_type(),
                    &DataType::Numeric {
                        precision_scale: None,
                    },
                    false,
                )?,
            };
            *sum = if sum.is_null() {
                v
            } else {
                ops::eval_binary(BinaryOp::Add, sum, &v)?
            };
            *count += 1;
        }
        AggState::Value(cur) => {
            *cur = match agg.func {
                AggFunc::Sum => {
                    // sum(int2/int4) is int8: added without a cast and an operator call
                    // per row while it does not overflow
                    let fast = match (&*cur, &v) {
                        (Value::Int8(c), Value::Int2(_) | Value::Int4(_)) => {
                            v.as_i64().and_then(|x| c.checked_add(x))
                        }
                        _ => None,
                    };
                    match fast {
                        Some(sum) => Value::Int8(sum),
                        None => {
                            let v =
                                types::cast::cast(v.clone(), &v.natural_type(), &agg.ty, false)?;
                            if cur.is_null() {
                                v
                            } else {
                                ops::eval_binary(BinaryOp::Add, cur, &v)?
                            }
                        }
                    }
                }
                AggFunc::Min | AggFunc::Max => {
                    let want = if agg.func == AggFunc::Min {
                        std::cmp::Ordering::Less
                    } else {
                        std::cmp::Ordering::Greater
                    };
                    if cur.is_null() || ops::sort_cmp(&v, cur) == want {
                        v
                    } else {
                        return Ok(());
                    }
                }
                AggFunc::BoolAnd => {
                    Value::Bool(cur.as_bool().unwrap_or(true) && v.as_bool().unwrap_or(false))
                }
                AggFunc::BoolOr => {
                    Value::Bool(cur.as_bool().unwrap_or(false) || v.as_bool().unwrap_or(false))
                }
                AggFunc::Count
                | AggFunc::Avg
                | AggFunc::ArrayAgg
                | AggFunc::StringAgg
                | AggFunc::JsonbAgg
                | AggFunc::JsonAgg
                | AggFunc::JsonbObjectAgg
                | AggFunc::VarSamp
                | AggFunc::VarPop
                | AggFunc::StddevSamp
                | AggFunc::StddevPop
                | AggFunc::PercentileCont { .. }
                | AggFunc::PercentileDisc { .. }
                | AggFunc::Mode { .. } => {
                    unreachable!("handled by their own states")
                }
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
                let Some(v) = pair.first().and_then(Value::as_str) else {
                    continue;
                };
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
        AggState::Array(items)
            if matches!(
                agg.func,
                AggFunc::JsonbAgg | AggFunc::JsonAgg | AggFunc::JsonbObjectAgg
            ) =>
        {
            sql::functions::json::finish_aggregate(agg.func, items)?
        }
        AggState::Array(items) => {
            if items.is_empty() {
                Value::Null
            } else {
                Value::Array(items)
            }
        }
        AggState::OrderedSet(mut values) => match agg.func {
            AggFunc::Mode { desc } => {
                ordered_set::sort_values(&mut values, desc);
                ordered_set::mode(values)
            }
            // the percentiles: their values in order, finished with the fraction by
            // `ScalarFunc::PercentileContFinal` / `PercentileDiscFinal`
            AggFunc::PercentileCont { desc } | AggFunc::PercentileDisc { desc }
                if !values.is_empty() =>
            {
                ordered_set::sort_values(&mut values, desc);
                Value::Array(values)
            }
            _ => Value::Null,
        },
        AggState::Moments { count, sum, sum_sq } => {
            let (sample, stddev) = agg.func.variance_kind();
            numeric::variance(count, &sum, &sum_sq, sample, stddev)?
                .map_or(Value::Null, Value::Numeric)
        }
        AggState::FloatMoments { n, sxx, .. } => {
            let (sample, stddev) = agg.func.variance_kind();
            let others = if sample { n - 1.0 } else { n };
            if others <= 0.0 {
                Value::Null
            } else if stddev {
                Value::Float8((sxx / others).sqrt())
            } else {
                Value::Float8(sxx / others)
            }
        }
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
    .map(|v| {
        if agg.ty == DataType::Int8 && matches!(v, Value::Int4(_)) {
            Value::Int8(v.as_i64().unwrap_or(0))
        } else {
            v
        }
    })
}

impl AggInput {
    /// As a row for a spill file: the key values, then each argument (of `aggs`), NULL
    /// where the aggregate takes nothing from this row: all but array_agg skip NULL
    /// arguments anyway, and array_agg's is wrapped in a one-element array to tell a NULL
    /// argument from none. Leaves `self` empty.
    pub(super) fn take_row(&mut self, aggs: &[AggCall]) -> Row {
        let mut row = std::mem::take(&mut self.keys);
        row.extend(self.args.drain(..).zip(aggs).map(|(arg, a)| match arg {
            Some(v) if a.func.keeps_nulls() => Value::Array(vec![v]),
            Some(v) => v,
            None => Value::Null,
        }));
        row
    }

    /// The inverse of `take_row`, for an aggregation with `keys` group keys.
    pub(super) fn from_row(mut row: Row, keys: usize, aggs: &[AggCall]) -> AggInput {
        let args = row
            .drain(keys..)
            .zip(aggs)
            .map(|(v, a)| match v {
                Value::Array(mut v) if a.func.keeps_nulls() => v.pop(),
                Value::Null => None,
                v => Some(v),
            })
            .collect();
        AggInput { keys: row, args }
    }
}
