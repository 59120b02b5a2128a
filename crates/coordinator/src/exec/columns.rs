//! Which columns of an operator's rows the operators above it read, so that a scan
//! decodes only those and leaves the others NULL (`SELECT count(*)` decodes nothing, a
//! join's spill files do not carry columns nobody reads).
//!
//! The analysis is conservative: an expression with a correlated subquery reads every
//! column (the subquery gets the whole row as its outer row), and DISTINCT, UNION, the
//! statement's result and LATERAL's left side read every column.

use sql::plan::{AggCall, Expr, SortKey, Window};

/// Per column of a relation's rows, whether it is read; None: every column is.
pub(super) type Used = Option<Vec<bool>>;

/// `used` plus the columns that `exprs` read (evaluated against these rows).
pub(super) fn adding<'a>(used: Used, exprs: impl IntoIterator<Item = &'a Expr>) -> Used {
    let mut cols = used?;
    exprs
        .into_iter()
        .all(|e| mark(e, &mut cols))
        .then_some(cols)
}

/// The columns of rows `width` wide that `exprs` read.
pub(super) fn read_by<'a>(width: usize, exprs: impl IntoIterator<Item = &'a Expr>) -> Used {
    adding(Some(vec![false; width]), exprs)
}

/// What an aggregation reads of its input: group keys, arguments and FILTERs.
pub(super) fn read_by_aggregate(width: usize, group_by: &[Expr], aggs: &[AggCall]) -> Used {
    let args = aggs.iter().flat_map(|a| a.arg.iter().chain(&a.filter));
    read_by(width, group_by.iter().chain(args))
}

/// What a sort reads: what its consumer reads and its keys.
pub(super) fn adding_sort_keys(used: Used, keys: &[SortKey]) -> Used {
    adding(used, keys.iter().map(|k| &k.expr))
}

/// What a window aggregation reads of its input: what its consumer reads of the input's
/// columns, and the window's expressions.
pub(super) fn of_window_input(used: Used, input_width: usize, window: &Window) -> Used {
    let mut cols = used?;
    cols.truncate(input_width);
    adding(Some(cols), window.exprs())
}

/// What a join reads of its two sides: what its consumer reads of the joined row and
/// what its condition reads, split at the left side's width.
pub(super) fn of_join_sides(
    used: Used,
    on: Option<&Expr>,
    left_width: usize,
    width: usize,
) -> (Used, Used) {
    let cols = used.unwrap_or_else(|| vec![true; width]);
    match adding(Some(cols), on) {
        None => (None, None),
        Some(mut cols) => {
            let right = cols.split_off(left_width);
            (Some(cols), Some(right))
        }
    }
}

/// Whether every column is read (then a scan decodes rows whole).
pub(super) fn reads_all(used: &Used) -> bool {
    used.as_ref().is_none_or(|cols| cols.iter().all(|&c| c))
}

/// Marks the row columns `e` reads; false if it may read any (a correlated subquery; an
/// uncorrelated one reads no row, and `visit` enters the left operand of its IN).
fn mark(e: &Expr, cols: &mut [bool]) -> bool {
    let mut bounded = true;
    e.visit(&mut |x| match x {
        Expr::Column {
            depth: 0, index, ..
        } => {
            if let Some(c) = cols.get_mut(*index) {
                *c = true;
            }
        }
        Expr::Subquery { plan, .. } if plan.correlated => bounded = false,
        _ => {}
    });
    bounded
}

#[cfg(test)]
mod tests {
    use super::*;
    use types::ops::BinaryOp;
    use types::DataType;

    fn col(index: usize) -> Expr {
        Expr::Column {
            depth: 0,
            index,
            ty: DataType::Int4,
        }
    }

    #[test]
    fn marks_only_depth_zero_columns() {
        let outer = Expr::Column {
            depth: 1,
            index: 0,
            ty: DataType::Int4,
        };
        let e = Expr::Binary {
            op: BinaryOp::Add,
            left: Box::new(col(2)),
            right: Box::new(outer),
            ty: DataType::Int4,
        };
        assert_eq!(read_by(4, [&e]), Some(vec![false, false, true, false]));
        assert_eq!(adding(None, [&e]), None);
    }

    #[test]
    fn a_correlated_subquery_reads_every_column() {
        let subquery = |correlated| {
            let q = sql::plan::Query {
                root: sql::plan::Rel::Unit,
                columns: Vec::new(),
                correlated,
                outer_columns: Vec::new(),
                locking: None,
            };
            let kind = sql::plan::SubqueryKind::In {
                left: Box::new(col(1)),
                negated: false,
            };
            Expr::Subquery {
                plan: Box::new(q),
                kind,
                ty: DataType::Bool,
            }
        };
        assert_eq!(read_by(3, [&col(0), &subquery(true)]), None);
        assert_eq!(
            read_by(3, [&subquery(false)]),
            Some(vec![false, true, false])
        );
    }

    #[test]
    fn join_sides_split_at_the_left_width() {
        let on = Expr::Binary {
            op: BinaryOp::Eq,
            left: Box::new(col(1)),
            right: Box::new(col(3)),
            ty: DataType::Bool,
        };
        let used = Some(vec![false, false, false, false, true]);
        assert_eq!(
            of_join_sides(used, Some(&on), 2, 5),
            (Some(vec![false, true]), Some(vec![false, true, true]))
        );
        assert_eq!(
            of_join_sides(None, None, 2, 5),
            (Some(vec![true; 2]), Some(vec![true; 3]))
        );
    }
}
