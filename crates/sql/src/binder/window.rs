//! Window functions (decision 0037): each call with OVER in a select list or ORDER BY
//! is bound into the `Window` its (resolved) window specification names, and stands for
//! the column its `Rel::WindowAgg` appends; one WindowAgg (over a sort by its partition
//! and order keys, shared with the window before it where the keys are the same) per
//! distinct window.

use super::*;

/// Where a window call may be bound.
#[derive(Default)]
pub(super) enum WindowSlot {
    /// Outside a select list and ORDER BY (WHERE, GROUP BY, a join condition, …).
    #[default]
    NotAllowed,
    /// In a query's select list or ORDER BY: the windows collected so far.
    Open(Box<WindowState>),
    /// Inside a window call (its arguments or its window).
    InCall,
}

#[derive(Default)]
pub(super) struct WindowState {
    /// The query's WINDOW clause.
    named: Vec<(String, ast::WindowSpec)>,
    windows: Vec<Window>,
    /// Per call, in binding order: its window and its position among that window's calls.
    calls: Vec<(usize, usize)>,
}

/// A window call's column until the WindowAggs are placed: call `n` is
/// `PLACEHOLDER + n` (`window_aggs` makes it the column its WindowAgg appends).
const PLACEHOLDER: usize = usize::MAX / 2;

fn windowing(message: impl Into<String>) -> PgError {
    PgError::new(codes::WINDOWING_ERROR, message.into())
}

/// Whether a window call occurs in `e` (not counting those inside subqueries).
pub(super) fn contains_window(e: &impl sqlparser::ast::Visit) -> bool {
    struct Finder {
        depth: usize,
    }
    impl sqlparser::ast::Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _q: &ast::Query) -> std::ops::ControlFlow<()> {
            self.depth += 1;
            std::ops::ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _q: &ast::Query) -> std::ops::ControlFlow<()> {
            self.depth -= 1;
            std::ops::ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, x: &ast::Expr) -> std::ops::ControlFlow<()> {
            match x {
                ast::Expr::Function(f) if self.depth == 0 && f.over.is_some() => {
                    std::ops::ControlFlow::Break(())
                }
                _ => std::ops::ControlFlow::Continue(()),
            }
        }
    }
    e.visit(&mut Finder { depth: 0 }).is_break()
}

/// PostgreSQL's 42P20 for a window call in a clause that is evaluated before windows.
pub(super) fn refuse_windows_in(clause: &str, exprs: &[&ast::Expr]) -> PgResult<()> {
    if exprs.iter().any(|e| contains_window(*e)) {
        return Err(windowing(format!(
            "window functions are not allowed in {clause}"
        )));
    }
    Ok(())
}

impl WindowState {
    /// The windows of a query with this WINDOW clause (42P20 for a name defined twice).
    pub(super) fn new(named: &[ast::NamedWindowDefinition]) -> PgResult<Self> {
        let mut state = WindowState::default();
        for ast::NamedWindowDefinition(name, expr) in named {
            let name = ident_name(name);
            if state.named.iter().any(|(n, _)| *n == name) {
                return Err(windowing(format!("window \"{name}\" is already defined")));
            }
            let spec = match expr {
                ast::NamedWindowExpr::WindowSpec(spec) => spec.clone(),
                // `WINDOW w2 AS w1` is `WINDOW w2 AS (w1)`
                ast::NamedWindowExpr::NamedWindow(base) => ast::WindowSpec {
                    window_name: Some(base.clone()),
                    partition_by: Vec::new(),
                    order_by: Vec::new(),
                    window_frame: None,
                },
            };
            state.named.push((name, spec));
        }
        Ok(state)
    }
}

/// A window specification with its base window (`OVER (w ORDER BY …)`) resolved.
struct Spec<'s> {
    partition_by: &'s [ast::Expr],
    order_by: &'s [ast::OrderByExpr],
    frame: Option<&'s ast::WindowFrame>,
}

fn named_spec<'s>(
    named: &'s [(String, ast::WindowSpec)],
    name: &ast::Ident,
) -> PgResult<&'s ast::WindowSpec> {
    let name = ident_name(name);
    named
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| s)
        .ok_or_else(|| {
            PgError::new(
                codes::UNDEFINED_OBJECT,
                format!("window \"{name}\" does not exist"),
            )
        })
}

/// PostgreSQL's rules for copying a window: its PARTITION BY always, its ORDER BY unless
/// it has none, never one with a frame.
fn resolve<'s>(
    named: &'s [(String, ast::WindowSpec)],
    spec: &'s ast::WindowSpec,
) -> PgResult<Spec<'s>> {
    let Some(base_name) = &spec.window_name else {
        return Ok(Spec {
            partition_by: &spec.partition_by,
            order_by: &spec.order_by,
            frame: spec.window_frame.as_ref(),
        });
    };
    let base = resolve(named, named_spec(named, base_name)?)?;
    let name = ident_name(base_name);
    if !spec.partition_by.is_empty() {
        return Err(windowing(format!(
            "cannot override PARTITION BY clause of window \"{name}\""
        )));
    }
    if !spec.order_by.is_empty() && !base.order_by.is_empty() {
        return Err(windowing(format!(
            "cannot override ORDER BY clause of window \"{name}\""
        )));
    }
    if base.frame.is_some() {
        return Err(windowing(format!(
            "cannot copy window \"{name}\" because it has a frame clause"
        )));
    }
    Ok(Spec {
        partition_by: base.partition_by,
        order_by: if spec.order_by.is_empty() {
            base.order_by
        } else {
            &spec.order_by
        },
        frame: spec.window_frame.as_ref(),
    })
}

type Child<'c, 'a> = dyn FnMut(&mut Binder<'a>, &ast::Expr) -> PgResult<Expr> + 'c;

impl<'a> Binder<'a> {
    /// A call with OVER: the placeholder of its column (see `window_aggs`).
    pub(super) fn window_call(
        &mut self,
        f: &ast::Function,
        name: &str,
        child: &mut Child<'_, 'a>,
    ) -> PgResult<Expr> {
        let mut state = match std::mem::replace(&mut self.windows, WindowSlot::InCall) {
            WindowSlot::Open(state) => state,
            WindowSlot::InCall => return Err(windowing("window function calls cannot be nested")),
            WindowSlot::NotAllowed => {
                self.windows = WindowSlot::NotAllowed;
                return Err(windowing("window functions are not allowed here"));
            }
        };
        let bound = self.bind_window_call(&mut state, f, name, child);
        self.windows = WindowSlot::Open(state);
        bound
    }

    fn bind_window_call(
        &mut self,
        state: &mut WindowState,
        f: &ast::Function,
        name: &str,
        child: &mut Child<'_, 'a>,
    ) -> PgResult<Expr> {
        let spec = match f.over.as_ref() {
            Some(ast::WindowType::WindowSpec(spec)) => resolve(&state.named, spec)?,
            Some(ast::WindowType::NamedWindow(w)) => {
                let spec = named_spec(&state.named, w)?;
                resolve(&state.named, spec)?
            }
            None => unreachable!("a window call has OVER"),
        };
        let mut partition_by = Vec::with_capacity(spec.partition_by.len());
        for e in spec.partition_by {
            partition_by.push(text_if_unknown(child(self, e)?)?);
        }
        let mut order_by = Vec::with_capacity(spec.order_by.len());
        for o in spec.order_by {
            let descending = o.options.sort == Some(ast::OrderBySort::Desc);
            order_by.push(SortKey {
                expr: text_if_unknown(child(self, &o.expr)?)?,
                descending,
                nulls_first: o.options.nulls_first.unwrap_or(descending),
            });
        }
        let frame = self.frame(spec.frame, &order_by)?;
        let call = self.window_function(f, name, child)?;
        let ty = call.ty.clone();
        let signature = |w: &Window| format!("{:?}", (&w.partition_by, &w.order_by, &w.frame));
        let window = Window {
            partition_by,
            order_by,
            frame,
            calls: Vec::new(),
        };
        let at = match state
            .windows
            .iter()
            .position(|w| signature(w) == signature(&window))
        {
            Some(at) => at,
            None => {
                state.windows.push(window);
                state.windows.len() - 1
            }
        };
        state.windows[at].calls.push(call);
        state.calls.push((at, state.windows[at].calls.len() - 1));
        Ok(Expr::Column {
            depth: 0,
            index: PLACEHOLDER + state.calls.len() - 1,
            ty,
        })
    }

    fn frame(
        &mut self,
        frame: Option<&ast::WindowFrame>,
        order_by: &[SortKey],
    ) -> PgResult<WindowFrame> {
        let Some(frame) = frame else {
            return Ok(WindowFrame {
                units: FrameUnits::Range,
                start: FrameBound::UnboundedPreceding,
                end: FrameBound::CurrentRow,
            });
        };
        use ast::WindowFrameBound as B;
        match (&frame.start_bound, &frame.end_bound) {
            (B::Following(None), _) => {
                return Err(windowing("frame start cannot be UNBOUNDED FOLLOWING"))
            }
            (_, Some(B::Preceding(None))) => {
                return Err(windowing("frame end cannot be UNBOUNDED PRECEDING"))
            }
            (B::CurrentRow, Some(B::Preceding(Some(_)))) => {
                return Err(windowing(
                    "frame starting from current row cannot have preceding rows",
                ))
            }
            (B::Following(Some(_)), None) => {
                return Err(windowing(
                    "frame starting from following row cannot end with current row",
                ))
            }
            (B::Following(Some(_)), Some(B::Preceding(Some(_)) | B::CurrentRow)) => {
                return Err(windowing(
                    "frame starting from following row cannot have preceding rows",
                ))
            }
            _ => {}
        }
        let units = match frame.units {
            ast::WindowFrameUnits::Rows => FrameUnits::Rows,
            ast::WindowFrameUnits::Range => FrameUnits::Range,
            ast::WindowFrameUnits::Groups => FrameUnits::Groups,
        };
        let has_offset = |b: &B| matches!(b, B::Preceding(Some(_)) | B::Following(Some(_)));
        if has_offset(&frame.start_bound) || frame.end_bound.as_ref().is_some_and(has_offset) {
            match units {
                FrameUnits::Range if order_by.len() != 1 => return Err(windowing(
                    "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
                )),
                FrameUnits::Groups if order_by.is_empty() => {
                    return Err(windowing("GROUPS mode requires an ORDER BY clause"))
                }
                _ => {}
            }
        }
        let start = self.frame_bound(&frame.start_bound, units, order_by)?;
        let end = match &frame.end_bound {
            Some(b) => self.frame_bound(b, units, order_by)?,
            None => FrameBound::CurrentRow,
        };
        Ok(WindowFrame { units, start, end })
    }

    fn frame_bound(
        &mut self,
        bound: &ast::WindowFrameBound,
        units: FrameUnits,
        order_by: &[SortKey],
    ) -> PgResult<FrameBound> {
        let offset = |b: &mut Self, e: &ast::Expr| -> PgResult<Expr> {
            let bound = b.expr(e, &Scope::default())?;
            let ty = match units {
                FrameUnits::Rows | FrameUnits::Groups => DataType::Int8,
                FrameUnits::Range => {
                    range_offset_type(&order_by[0].expr.ty()).ok_or_else(|| {
                        unsupported(format!(
                            "RANGE with offset PRECEDING/FOLLOWING for column type {}",
                            order_by[0].expr.ty().format_type()
                        ))
                    })?
                }
            };
            let bound = b.infer_param(bound, &ty);
            cast_to(bound, &ty).map_err(|_| {
                PgError::new(
                    codes::DATATYPE_MISMATCH,
                    format!(
                        "argument of {} must be type {}",
                        match units {
                            FrameUnits::Rows => "ROWS",
                            FrameUnits::Range => "RANGE",
                            FrameUnits::Groups => "GROUPS",
                        },
                        ty.format_type()
                    ),
                )
            })
        };
        Ok(match bound {
            ast::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
            ast::WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
            ast::WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
            ast::WindowFrameBound::Preceding(Some(e)) => FrameBound::Preceding(offset(self, e)?),
            ast::WindowFrameBound::Following(Some(e)) => FrameBound::Following(offset(self, e)?),
        })
    }

    fn window_function(
        &mut self,
        f: &ast::Function,
        name: &str,
        child: &mut Child<'_, 'a>,
    ) -> PgResult<WindowCall> {
        if is_aggregate_name(name) {
            let (call, order) = self.aggregate_call(name, f, child)?;
            if call.distinct {
                return Err(unsupported_as_postgres(
                    "DISTINCT is not implemented for window functions",
                ));
            }
            if order.is_some() {
                return Err(unsupported_as_postgres(
                    "aggregate ORDER BY is not implemented for window functions",
                ));
            }
            return Ok(WindowCall {
                ty: call.ty.clone(),
                func: WindowFunc::Aggregate(call),
                args: Vec::new(),
            });
        }
        let func = match name {
            "row_number" => WindowFunc::RowNumber,
            "rank" => WindowFunc::Rank,
            "dense_rank" => WindowFunc::DenseRank,
            "percent_rank" => WindowFunc::PercentRank,
            "cume_dist" => WindowFunc::CumeDist,
            "ntile" => WindowFunc::Ntile,
            "lag" => WindowFunc::Lag,
            "lead" => WindowFunc::Lead,
            "first_value" => WindowFunc::FirstValue,
            "last_value" => WindowFunc::LastValue,
            "nth_value" => WindowFunc::NthValue,
            _ => {
                let message = format!(
                    "OVER specified, but {name} is not a window function nor an aggregate function"
                );
                return Err(PgError::new(codes::WRONG_OBJECT_TYPE, message));
            }
        };
        if f.filter.is_some() {
            return Err(unsupported_as_postgres(
                "FILTER is not implemented for non-aggregate window functions",
            ));
        }
        crate::unsupported_syntax::window_function_call(f)?;
        let mut args = Vec::new();
        if let ast::FunctionArguments::List(list) = &f.args {
            for a in &list.args {
                match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                        args.push(child(self, e)?)
                    }
                    _ => return Err(unsupported("this argument of a window function")),
                }
            }
        }
        // Argument types each function takes (None: any, the result's type), by count.
        let value = args.first().map(|a| a.ty());
        let (want, ty): (Vec<Option<DataType>>, DataType) = match (&func, args.len()) {
            (WindowFunc::RowNumber | WindowFunc::Rank | WindowFunc::DenseRank, 0) => {
                (vec![], DataType::Int8)
            }
            (WindowFunc::PercentRank | WindowFunc::CumeDist, 0) => (vec![], DataType::Float8),
            (WindowFunc::Ntile, 1) => (vec![Some(DataType::Int4)], DataType::Int4),
            (WindowFunc::Lag | WindowFunc::Lead, 1..=3) => {
                // the value and the default resolve to one type, without a typmod
                let value = match value_type(value) {
                    DataType::Numeric { .. } => DataType::Numeric {
                        precision_scale: None,
                    },
                    DataType::Varchar { .. } => DataType::Varchar { max_len: None },
                    other => other,
                };
                let mut want = vec![None, Some(DataType::Int4), Some(value.clone())];
                want.truncate(args.len());
                (want, value)
            }
            (WindowFunc::FirstValue | WindowFunc::LastValue, 1) => (vec![None], value_type(value)),
            (WindowFunc::NthValue, 2) => (vec![None, Some(DataType::Int4)], value_type(value)),
            // with arguments these are hypothetical-set aggregates, which take no OVER
            (
                WindowFunc::Rank
                | WindowFunc::DenseRank
                | WindowFunc::PercentRank
                | WindowFunc::CumeDist,
                _,
            ) => {
                return Err(PgError::new(
                    codes::WRONG_OBJECT_TYPE,
                    format!("OVER is not supported for ordered-set aggregate {name}"),
                ))
            }
            _ => {
                return Err(PgError::new(
                    codes::UNDEFINED_FUNCTION,
                    format!(
                        "function {name}({}) does not exist",
                        args.iter()
                            .map(|a| a.ty().format_type())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ))
            }
        };
        let args = args
            .into_iter()
            .zip(want)
            .map(|(a, want)| {
                let want = want.unwrap_or_else(|| ty.clone());
                let a = self.infer_param(a, &want);
                cast_to(a, &want)
            })
            .collect::<PgResult<Vec<_>>>()?;
        Ok(WindowCall { func, args, ty })
    }
}

/// The type of a value function's result: its argument's, text for an untyped literal.
fn value_type(arg: Option<DataType>) -> DataType {
    match arg {
        Some(DataType::Unknown) | None => DataType::Text,
        Some(t) => t,
    }
}

fn text_if_unknown(e: Expr) -> PgResult<Expr> {
    if e.ty() == DataType::Unknown {
        cast_to(e, &DataType::Text)
    } else {
        Ok(e)
    }
}

/// The type of a RANGE frame's offsets for an ORDER BY key of type `key`, if it has one.
fn range_offset_type(key: &DataType) -> Option<DataType> {
    match key {
        DataType::Int2 | DataType::Int4 | DataType::Int8 => Some(DataType::Int8),
        DataType::Float4 | DataType::Float8 => Some(DataType::Float8),
        DataType::Numeric { .. } => Some(DataType::Numeric {
            precision_scale: None,
        }),
        DataType::Date
        | DataType::Time { .. }
        | DataType::Timestamp { .. }
        | DataType::TimestampTz { .. }
        | DataType::Interval { .. } => Some(DataType::INTERVAL),
        _ => None,
    }
}

fn unsupported_as_postgres(message: &str) -> PgError {
    PgError::new(codes::FEATURE_NOT_SUPPORTED, message)
}

/// Puts a WindowAgg (over a sort by its keys unless its input is already in that order)
/// on `rel` for each window of `state`, and makes each call's placeholder in `exprs` the
/// column its WindowAgg appends.
pub(super) fn window_aggs(state: WindowState, mut rel: Rel, exprs: &mut [Expr]) -> Rel {
    let mut first = Vec::with_capacity(state.windows.len());
    let mut at = rel.width();
    for w in &state.windows {
        first.push(at);
        at += w.calls.len();
    }
    for e in exprs.iter_mut() {
        e.visit_mut(&mut |x| {
            if let Expr::Column {
                depth: 0, index, ..
            } = x
            {
                if *index >= PLACEHOLDER {
                    let (w, c) = state.calls[*index - PLACEHOLDER];
                    *index = first[w] + c;
                }
            }
        });
    }
    let mut sorted_by = String::new();
    for window in state.windows {
        let keys: Vec<SortKey> = window
            .partition_by
            .iter()
            .map(|e| SortKey {
                expr: e.clone(),
                descending: false,
                nulls_first: false,
            })
            .chain(window.order_by.iter().cloned())
            .collect();
        if !keys.is_empty() {
            let signature = format!("{keys:?}");
            if signature != sorted_by {
                rel = Rel::Sort {
                    input: Box::new(rel),
                    keys,
                };
                sorted_by = signature;
            }
        }
        rel = Rel::WindowAgg {
            input: Box::new(rel),
            window: Box::new(window),
        };
    }
    rel
}
