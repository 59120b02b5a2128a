//! Window functions (decision 0037): a `Rel::WindowAgg` reads its input sorted by its
//! window's partition and order keys (a spilling sort below it), holds one partition at
//! a time (charged to the statement), and hands up each of its rows with the value of
//! each window call appended.

use super::aggregate::{AggInput, Aggregator};
use super::memory::Held;
use super::nodes::{eval_row, BoxNode, Node};
use super::{Executor, Outer, Row, BATCH};
use futures::future::BoxFuture;
use pgerror::{codes, PgError, PgResult};
use spill::row_size;
use sql::plan::{AggCall, Expr, FrameBound, FrameUnits, Window, WindowFunc};
use std::cmp::Ordering;
use std::collections::VecDeque;
use types::ops::{self, BinaryOp};
use types::{DataType, Value};

pub(super) struct WindowNode<'e> {
    ex: &'e Executor<'e>,
    window: &'e Window,
    input: BoxNode<'e>,
    outer: Outer,
    /// What each row is evaluated to: partition keys, order keys, then each call's
    /// arguments (an aggregate's argument and FILTER), at `call_values[c]` for call `c`.
    exprs: Vec<&'e Expr>,
    call_values: Vec<usize>,
    /// The window's aggregate calls, in call order (one `Aggregator` computes them all).
    aggs: Vec<AggCall>,
    /// The frame's offsets, evaluated when the first partition is complete.
    offsets: Option<(Option<Value>, Option<Value>)>,
    /// The partition being read: each row with what it evaluated to.
    partition: Vec<(Row, Row)>,
    held: Held<'e>,
    /// Rows of finished partitions not yet handed up.
    output: VecDeque<Row>,
    done: bool,
}

impl<'e> WindowNode<'e> {
    pub(super) fn new(
        ex: &'e Executor<'e>,
        window: &'e Window,
        input: BoxNode<'e>,
        outer: Outer,
    ) -> Self {
        let mut exprs: Vec<&Expr> = window
            .partition_by
            .iter()
            .chain(window.order_by.iter().map(|k| &k.expr))
            .collect();
        let mut call_values = Vec::with_capacity(window.calls.len());
        let mut aggs = Vec::new();
        for call in &window.calls {
            call_values.push(exprs.len());
            match &call.func {
                WindowFunc::Aggregate(a) => {
                    exprs.extend(a.arg.iter().chain(&a.filter));
                    aggs.push(a.clone());
                }
                _ => exprs.extend(&call.args),
            }
        }
        WindowNode {
            ex,
            window,
            input,
            outer,
            exprs,
            call_values,
            aggs,
            offsets: None,
            partition: Vec::new(),
            held: Held::new(&ex.state.memory),
            output: VecDeque::new(),
            done: false,
        }
    }

    /// Computes the partition held and queues its rows for output.
    async fn finish_partition(&mut self) -> PgResult<()> {
        self.held.clear();
        let partition = std::mem::take(&mut self.partition);
        if partition.is_empty() {
            return Ok(());
        }
        if self.offsets.is_none() {
            self.offsets = Some(self.frame_offsets()?);
        }
        let offsets = self.offsets.as_ref().expect("evaluated above");
        let computed = Partition::new(self, &partition, offsets).compute().await?;
        self.output.extend(
            partition
                .into_iter()
                .zip(computed)
                .map(|((mut row, _), values)| {
                    row.extend(values);
                    row
                }),
        );
        Ok(())
    }

    /// The frame's start and end offsets, checked as PostgreSQL checks them.
    fn frame_offsets(&self) -> PgResult<(Option<Value>, Option<Value>)> {
        let ctx = self.ex.ctx(&self.outer);
        let units = self.window.frame.units;
        let eval = |b: &FrameBound, which: &str| -> PgResult<Option<Value>> {
            let (FrameBound::Preceding(e) | FrameBound::Following(e)) = b else {
                return Ok(None);
            };
            let v = ctx.eval(e, &[])?;
            if v.is_null() {
                return Err(PgError::new(
                    codes::NULL_VALUE_NOT_ALLOWED,
                    format!("frame {which} offset must not be null"),
                ));
            }
            let zero = match &v {
                Value::Interval { .. } => Value::Interval {
                    months: 0,
                    days: 0,
                    micros: 0,
                },
                other => {
                    types::cast::cast(Value::Int8(0), &DataType::Int8, &other.natural_type(), true)?
                }
            };
            if ops::sort_cmp(&v, &zero) == Ordering::Less {
                return Err(PgError::new(
                    codes::INVALID_PRECEDING_OR_FOLLOWING_SIZE,
                    match units {
                        FrameUnits::Range => {
                            "invalid preceding or following size in window function".to_string()
                        }
                        _ => format!("frame {which} offset must not be negative"),
                    },
                ));
            }
            Ok(Some(v))
        };
        Ok((
            eval(&self.window.frame.start, "starting")?,
            eval(&self.window.frame.end, "ending")?,
        ))
    }

    /// Whether `a` and `b` (what two rows evaluated to) are in one partition.
    fn same_partition(&self, a: &[Value], b: &[Value]) -> bool {
        equal_values(
            &a[..self.window.partition_by.len()],
            &b[..self.window.partition_by.len()],
        )
    }
}

impl Node for WindowNode<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            loop {
                if !self.output.is_empty() {
                    let take = self.output.len().min(BATCH);
                    return Ok(Some(self.output.drain(..take).collect()));
                }
                if self.done {
                    return Ok(None);
                }
                let Some(rows) = self.input.next().await? else {
                    self.done = true;
                    self.finish_partition().await?;
                    continue;
                };
                let count = rows.len();
                for row in rows {
                    let values =
                        eval_row(self.ex, &self.outer, self.exprs.iter().copied(), &row).await?;
                    if self
                        .partition
                        .last()
                        .is_some_and(|(_, last)| !self.same_partition(last, &values))
                    {
                        self.finish_partition().await?;
                    }
                    self.held.charge(row_size(&row) + row_size(&values))?;
                    self.partition.push((row, values));
                }
                self.ex.pace(count).await;
            }
        })
    }
}

/// Whether two lists of values are equal as grouping compares them (NULLs equal).
fn equal_values(a: &[Value], b: &[Value]) -> bool {
    a.iter()
        .zip(b)
        .all(|(x, y)| match (x.is_null(), y.is_null()) {
            (true, true) => true,
            (false, false) => ops::sort_cmp(x, y) == Ordering::Equal,
            _ => false,
        })
}

/// One complete partition and its peer groups (rows with equal order keys).
struct Partition<'p> {
    ex: &'p Executor<'p>,
    window: &'p Window,
    /// As `WindowNode`'s.
    call_values: &'p [usize],
    aggs: &'p [AggCall],
    rows: &'p [(Row, Row)],
    offsets: &'p (Option<Value>, Option<Value>),
    /// The first row of each peer group, then the partition's length.
    group_starts: Vec<usize>,
    /// Each row's peer group.
    group_of: Vec<usize>,
}

impl<'p> Partition<'p> {
    fn new(
        node: &'p WindowNode<'p>,
        rows: &'p [(Row, Row)],
        offsets: &'p (Option<Value>, Option<Value>),
    ) -> Self {
        let window = node.window;
        let keys = window.partition_by.len()..window.partition_by.len() + window.order_by.len();
        let mut group_starts = Vec::new();
        let mut group_of = Vec::with_capacity(rows.len());
        for (i, (_, values)) in rows.iter().enumerate() {
            if i == 0 || !equal_values(&rows[i - 1].1[keys.clone()], &values[keys.clone()]) {
                group_starts.push(i);
            }
            group_of.push(group_starts.len() - 1);
        }
        group_starts.push(rows.len());
        Partition {
            ex: node.ex,
            window,
            call_values: &node.call_values,
            aggs: &node.aggs,
            rows,
            offsets,
            group_starts,
            group_of,
        }
    }

    /// Per row, the value of each call (pacing, so that cancel and statement_timeout
    /// are seen however large the partition).
    async fn compute(&self) -> PgResult<Vec<Row>> {
        let n = self.rows.len();
        let mut out: Vec<Row> = (0..n)
            .map(|_| Vec::with_capacity(self.window.calls.len()))
            .collect();
        let frames = (0..n)
            .map(|i| self.frame(i))
            .collect::<PgResult<Vec<_>>>()?;
        let aggregates = if self.aggs.is_empty() {
            Vec::new()
        } else {
            self.aggregates(&frames).await?
        };
        let mut agg_at = 0;
        for (c, call) in self.window.calls.iter().enumerate() {
            let at = self.call_values[c];
            let arg = |row: usize, k: usize| &self.rows[row].1[at + k];
            for i in 0..n {
                if i % BATCH == BATCH - 1 {
                    self.ex.pace(BATCH).await;
                }
                let g = self.group_of[i];
                let (s, e) = frames[i];
                let v = match &call.func {
                    WindowFunc::RowNumber => Value::Int8(i as i64 + 1),
                    WindowFunc::Rank => Value::Int8(self.group_starts[g] as i64 + 1),
                    WindowFunc::DenseRank => Value::Int8(g as i64 + 1),
                    WindowFunc::PercentRank => Value::Float8(if n > 1 {
                        self.group_starts[g] as f64 / (n - 1) as f64
                    } else {
                        0.0
                    }),
                    WindowFunc::CumeDist => {
                        Value::Float8(self.group_starts[g + 1] as f64 / n as f64)
                    }
                    // evaluated once per partition, as PostgreSQL does
                    WindowFunc::Ntile => match arg(0, 0).as_i64() {
                        None => Value::Null,
                        Some(k) if k <= 0 => {
                            return Err(PgError::new(
                                codes::INVALID_ARGUMENT_FOR_NTILE,
                                "argument of ntile must be greater than zero",
                            ))
                        }
                        Some(k) => Value::Int4(ntile(i, n, k as usize) as i32),
                    },
                    WindowFunc::Lag | WindowFunc::Lead => {
                        let offset = match call.args.len() {
                            1 => Some(1),
                            _ => arg(i, 1).as_i64(),
                        };
                        match offset {
                            None => Value::Null,
                            Some(offset) => {
                                let j = match call.func {
                                    WindowFunc::Lag => i as i64 - offset,
                                    _ => i as i64 + offset,
                                };
                                if (0..n as i64).contains(&j) {
                                    arg(j as usize, 0).clone()
                                } else if call.args.len() == 3 {
                                    arg(i, 2).clone()
                                } else {
                                    Value::Null
                                }
                            }
                        }
                    }
                    WindowFunc::FirstValue if s < e => arg(s, 0).clone(),
                    WindowFunc::LastValue if s < e => arg(e - 1, 0).clone(),
                    WindowFunc::NthValue => match arg(i, 1).as_i64() {
                        None => Value::Null,
                        Some(k) if k <= 0 => {
                            return Err(PgError::new(
                                codes::INVALID_ARGUMENT_FOR_NTH_VALUE,
                                "argument of nth_value must be greater than zero",
                            ))
                        }
                        Some(k) if s + (k as usize) <= e => arg(s + k as usize - 1, 0).clone(),
                        Some(_) => Value::Null,
                    },
                    WindowFunc::FirstValue | WindowFunc::LastValue => Value::Null,
                    WindowFunc::Aggregate(_) => aggregates[i][agg_at].clone(),
                };
                out[i].push(v);
            }
            if matches!(call.func, WindowFunc::Aggregate(_)) {
                agg_at += 1;
            }
        }
        Ok(out)
    }

    /// Per row, the values of the window's aggregates over its frame: the frame grown
    /// row by row while it starts at the partition's start, else aggregated afresh
    /// (once per distinct frame).
    async fn aggregates(&self, frames: &[(usize, usize)]) -> PgResult<Vec<Row>> {
        let account = &self.ex.state.memory;
        let growing = matches!(self.window.frame.start, FrameBound::UnboundedPreceding);
        let mut out: Vec<Row> = Vec::with_capacity(frames.len());
        let mut running = Aggregator::new(&[], self.aggs, account);
        let mut pushed = 0;
        for (i, &(s, e)) in frames.iter().enumerate() {
            if i > 0 && frames[i - 1] == (s, e) {
                let same = out[i - 1].clone();
                out.push(same);
                continue;
            }
            if growing && e >= pushed {
                for r in pushed..e {
                    running.push(&mut self.contribution(r))?;
                }
                self.ex.pace(e - pushed).await;
                pushed = e;
                out.push(running.current()?);
                continue;
            }
            let mut fresh = Aggregator::new(&[], self.aggs, account);
            for r in s..e {
                fresh.push(&mut self.contribution(r))?;
            }
            out.push(fresh.current()?);
            self.ex.pace(e - s).await;
        }
        Ok(out)
    }

    /// What row `r` gives the window's aggregates: each one's argument (TRUE for
    /// count(*)), or None where its FILTER is not true.
    fn contribution(&self, r: usize) -> AggInput {
        let values = &self.rows[r].1;
        let mut args = Vec::with_capacity(self.aggs.len());
        for (c, call) in self.window.calls.iter().enumerate() {
            let WindowFunc::Aggregate(a) = &call.func else {
                continue;
            };
            let at = self.call_values[c];
            let arg = match &a.arg {
                Some(_) => values[at].clone(),
                None => Value::Bool(true),
            };
            let passes = match &a.filter {
                None => true,
                Some(_) => matches!(values[at + a.arg.is_some() as usize], Value::Bool(true)),
            };
            args.push(passes.then_some(arg));
        }
        AggInput {
            keys: Vec::new(),
            args,
        }
    }

    /// Row `i`'s frame, as the rows `s..e` of the partition.
    fn frame(&self, i: usize) -> PgResult<(usize, usize)> {
        let n = self.rows.len();
        let frame = &self.window.frame;
        let g = self.group_of[i];
        let groups = self.group_starts.len() - 1;
        let count =
            |v: &Option<Value>| v.as_ref().and_then(Value::as_i64).unwrap_or(0).max(0) as usize;
        let (start_offset, end_offset) = (count(&self.offsets.0), count(&self.offsets.1));
        let start = match (&frame.start, frame.units) {
            (FrameBound::UnboundedPreceding, _) => 0,
            (FrameBound::CurrentRow, FrameUnits::Rows) => i,
            (FrameBound::CurrentRow, _) => self.group_starts[g],
            (FrameBound::Preceding(_), FrameUnits::Rows) => i.saturating_sub(start_offset),
            (FrameBound::Following(_), FrameUnits::Rows) => i.saturating_add(start_offset).min(n),
            (FrameBound::Preceding(_), FrameUnits::Groups) => {
                self.group_starts[g.saturating_sub(start_offset)]
            }
            (FrameBound::Following(_), FrameUnits::Groups) => {
                self.group_starts[g.saturating_add(start_offset).min(groups)]
            }
            (b @ (FrameBound::Preceding(_) | FrameBound::Following(_)), FrameUnits::Range) => {
                self.range_bound(i, b, self.offsets.0.as_ref(), true)?
            }
            (FrameBound::UnboundedFollowing, _) => n,
        };
        let end = match (&frame.end, frame.units) {
            (FrameBound::UnboundedFollowing, _) => n,
            (FrameBound::CurrentRow, FrameUnits::Rows) => i + 1,
            (FrameBound::CurrentRow, _) => self.group_starts[g + 1],
            (FrameBound::Preceding(_), FrameUnits::Rows) => (i + 1).saturating_sub(end_offset),
            (FrameBound::Following(_), FrameUnits::Rows) => {
                i.saturating_add(end_offset).saturating_add(1).min(n)
            }
            (FrameBound::Preceding(_), FrameUnits::Groups) => match g.checked_sub(end_offset) {
                Some(h) => self.group_starts[h + 1],
                None => 0,
            },
            (FrameBound::Following(_), FrameUnits::Groups) => {
                self.group_starts[g.saturating_add(end_offset).saturating_add(1).min(groups)]
            }
            (b @ (FrameBound::Preceding(_) | FrameBound::Following(_)), FrameUnits::Range) => {
                self.range_bound(i, b, self.offsets.1.as_ref(), false)?
            }
            (FrameBound::UnboundedPreceding, _) => 0,
        };
        Ok((start, end.max(start)))
    }

    /// A RANGE frame's bound `offset` PRECEDING or FOLLOWING row `i` (by its one order
    /// key): the first row at or past it for a start, the first row past it for an end.
    /// A row with a NULL key has its peers as such a frame; rows with NULL keys are in no
    /// other row's.
    fn range_bound(
        &self,
        i: usize,
        bound: &FrameBound,
        offset: Option<&Value>,
        start: bool,
    ) -> PgResult<usize> {
        let window = &self.window;
        let key_at = window.partition_by.len();
        let sort = &window.order_by[0];
        let key_type = sort.expr.ty();
        let key = |r: usize| comparable(&self.rows[r].1[key_at], &key_type);
        let g = self.group_of[i];
        let current = key(i)?;
        if current.is_null() {
            return Ok(match start {
                true => self.group_starts[g],
                false => self.group_starts[g + 1],
            });
        }
        let Some(offset) = offset else {
            return Ok(i);
        };
        // the rows with keys: those with NULL ones are first or last
        let n = self.rows.len();
        let nulls = (0..n).filter(|&r| self.rows[r].1[key_at].is_null()).count();
        let (lo, hi) = match sort.nulls_first {
            true => (nulls, n),
            false => (0, n - nulls),
        };
        let preceding = matches!(bound, FrameBound::Preceding(_));
        // keys ascend in sort order: toward the start is minus unless descending
        let op = match preceding != sort.descending {
            true => BinaryOp::Sub,
            false => BinaryOp::Add,
        };
        let target = match ops::eval_binary(op, &current, offset)
            .and_then(|t| comparable(&t, &t.natural_type()))
        {
            Ok(t) => t,
            // past the type's range: every row with a key lies within the offset
            Err(_) => return Ok(if preceding { lo } else { hi }),
        };
        let before = |r: usize| -> PgResult<bool> {
            let o = ops::sort_cmp(&key(r)?, &target);
            let o = if sort.descending { o.reverse() } else { o };
            Ok(match start {
                true => o == Ordering::Less,
                false => o != Ordering::Greater,
            })
        };
        // the first row of lo..hi that `before` is false for (keys are sorted)
        let (mut a, mut b) = (lo, hi);
        while a < b {
            let mid = (a + b) / 2;
            if before(mid)? {
                a = mid + 1;
            } else {
                b = mid;
            }
        }
        Ok(a)
    }
}

/// `v` as RANGE offsets compare it: integers as int8, floats as float8, dates as
/// timestamps (what `date ± interval` gives).
fn comparable(v: &Value, ty: &DataType) -> PgResult<Value> {
    Ok(match (v, ty) {
        (Value::Null, _) => Value::Null,
        (Value::Int2(_) | Value::Int4(_), _) => Value::Int8(v.as_i64().unwrap_or(0)),
        (Value::Float4(f), _) => Value::Float8(*f as f64),
        (_, DataType::Date) => {
            types::cast::cast(v.clone(), &DataType::Date, &DataType::TIMESTAMP, false)?
        }
        _ => v.clone(),
    })
}

/// The bucket (from 1) of row `i` of `n` split into `k` buckets as evenly as can be, the
/// larger ones first.
fn ntile(i: usize, n: usize, k: usize) -> usize {
    let per = n / k;
    let larger = n % k;
    let in_larger = larger * (per + 1);
    if i < in_larger {
        i / (per + 1) + 1
    } else {
        larger + (i - in_larger) / per + 1
    }
}
