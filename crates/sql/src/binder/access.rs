//! Access paths: how a filter on a table becomes a primary-key lookup or range, or a
//! lookup in one of its secondary indexes (decision 0035).

use super::*;

/// Push a filter into a plain scan so that primary-key equality can use point access.
pub(super) fn push_filter(rel: Rel, predicate: Expr) -> Rel {
    match rel {
        Rel::Scan {
            table,
            access: Access::Full,
        } => {
            let access = access_path(&table, Some(&predicate));
            Rel::Filter {
                input: Box::new(Rel::Scan { table, access }),
                predicate,
            }
        }
        other => Rel::Filter {
            input: Box::new(other),
            predicate,
        },
    }
}

/// How `table`'s rows that may pass `filter` are found: by primary key (point or range)
/// where the filter allows, else through a secondary index where one applies (a cheap
/// rule: any index condition beats a full scan), else in full. The filter is still
/// applied to the rows fetched.
pub fn access_path(table: &TableDef, filter: Option<&Expr>) -> Access {
    let Some(filter) = filter else {
        return Access::Full;
    };
    let mut conjuncts = Vec::new();
    collect_conjuncts(filter, &mut conjuncts);
    match primary_key_access(table, &conjuncts) {
        Access::Full => index_access(table, &conjuncts),
        access => access,
    }
}

/// (op, value) of the conjuncts that compare column `col` with a row-independent value,
/// the column on the left.
fn comparisons(conjuncts: &[&Expr], col: usize) -> Vec<(BinaryOp, Expr)> {
    conjuncts
        .iter()
        .filter_map(|c| match c {
            Expr::Binary {
                op, left, right, ..
            } => match (left.as_ref(), right.as_ref()) {
                (column, other) if column.key_column() == Some(col) && row_independent(other) => {
                    Some((*op, other.clone()))
                }
                (other, column) if column.key_column() == Some(col) && row_independent(other) => {
                    let flipped = match op {
                        BinaryOp::Lt => BinaryOp::Gt,
                        BinaryOp::LtEq => BinaryOp::GtEq,
                        BinaryOp::Gt => BinaryOp::Lt,
                        BinaryOp::GtEq => BinaryOp::LtEq,
                        other => *other,
                    };
                    Some((flipped, other.clone()))
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The row-independent values of an `col IN (…)` conjunct, if there is one.
fn in_list(conjuncts: &[&Expr], col: usize) -> Option<Vec<Expr>> {
    conjuncts.iter().find_map(|c| match c {
        Expr::InList {
            operand,
            list,
            negated: false,
        } if operand.key_column() == Some(col) && list.iter().all(row_independent) => {
            Some(list.clone())
        }
        _ => None,
    })
}

/// Lower and upper bounds the conjuncts set on column `col`.
fn bounds(conjuncts: &[&Expr], col: usize) -> (Option<KeyBound>, Option<KeyBound>) {
    let (mut lower, mut upper) = (None, None);
    for (op, value) in comparisons(conjuncts, col) {
        match op {
            BinaryOp::Gt | BinaryOp::GtEq if lower.is_none() => {
                lower = Some(KeyBound {
                    value,
                    inclusive: op == BinaryOp::GtEq,
                })
            }
            BinaryOp::Lt | BinaryOp::LtEq if upper.is_none() => {
                upper = Some(KeyBound {
                    value,
                    inclusive: op == BinaryOp::LtEq,
                })
            }
            _ => {}
        }
    }
    (lower, upper)
}

/// If the conjuncts pin every primary-key column to a row-independent value, the row can
/// be fetched by key; bounds on a single-column key give a key range.
fn primary_key_access(table: &TableDef, conjuncts: &[&Expr]) -> Access {
    let Some(pk) = &table.primary_key else {
        return Access::Full;
    };
    let comparisons = |col| comparisons(conjuncts, col);
    let mut key = Vec::with_capacity(pk.len());
    for &col in pk {
        match comparisons(col)
            .into_iter()
            .find(|(op, _)| *op == BinaryOp::Eq)
        {
            Some((_, e)) => key.push(e),
            None => break,
        }
    }
    if key.len() == pk.len() {
        return Access::PrimaryKey(key);
    }
    if pk.len() != 1 {
        return Access::Full;
    }
    match bounds(conjuncts, pk[0]) {
        (None, None) => Access::Full,
        (lower, upper) => Access::KeyRange { lower, upper },
    }
}

/// The best secondary-index lookup the conjuncts allow: equality on the most leading
/// columns (a unique index's every column first), else an IN list on a first column,
/// else bounds on a first column; the first index listed wins ties.
fn index_access(table: &TableDef, conjuncts: &[&Expr]) -> Access {
    let mut best: Option<(usize, usize, IndexLookup)> = None;
    for (i, index) in table.indexes.iter().enumerate() {
        let mut prefix = Vec::new();
        for c in &index.columns {
            match comparisons(conjuncts, c.column)
                .into_iter()
                .find(|(op, _)| *op == BinaryOp::Eq)
            {
                Some((_, e)) => prefix.push(e),
                None => break,
            }
        }
        let first = index.columns[0].column;
        let (rank, lookup) = if !prefix.is_empty() {
            let whole_unique = index.unique && prefix.len() == index.columns.len();
            (
                3 + 2 * prefix.len() + whole_unique as usize * 1000,
                IndexLookup::Prefixes(vec![prefix]),
            )
        } else if let Some(list) = in_list(conjuncts, first) {
            (
                2,
                IndexLookup::Prefixes(list.into_iter().map(|e| vec![e]).collect()),
            )
        } else {
            match bounds(conjuncts, first) {
                (None, None) => continue,
                (lower, upper) => (1, IndexLookup::Range { lower, upper }),
            }
        };
        if best.as_ref().is_none_or(|(r, ..)| rank > *r) {
            best = Some((rank, i, lookup));
        }
    }
    match best {
        Some((_, index, lookup)) => Access::Index { index, lookup },
        None => Access::Full,
    }
}

pub(super) fn collect_conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::And(a, b) => {
            collect_conjuncts(a, out);
            collect_conjuncts(b, out);
        }
        other => out.push(other),
    }
}

/// An expression that does not read the current row (constants, parameters, casts of them).
pub(super) fn row_independent(e: &Expr) -> bool {
    match e {
        // An enclosing query's column is fixed while this scan runs (a correlated
        // subquery's key lookup), and so is an uncorrelated scalar subquery.
        Expr::Const(..) | Expr::Param { .. } | Expr::Column { depth: 1.., .. } => true,
        Expr::Subquery {
            plan,
            kind: SubqueryKind::Scalar,
            ..
        } => !plan.correlated,
        Expr::Cast { operand, .. } => row_independent(operand),
        Expr::Binary { left, right, .. } => row_independent(left) && row_independent(right),
        Expr::Unary { operand, .. } => row_independent(operand),
        _ => false,
    }
}
