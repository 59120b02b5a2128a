//! Access paths: how a filter on a table becomes a primary-key lookup or range.

use super::*;

/// Push a filter into a plain scan so that primary-key equality can use point access.
pub(super) fn push_filter(rel: Rel, predicate: Expr) -> Rel {
    match rel {
        Rel::Scan {
            table,
            access: Access::Full,
        } => {
            let access = primary_key_access(&table, Some(&predicate));
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

/// If the conjuncts of `filter` pin every primary-key column to a row-independent value,
/// the row can be fetched by key; bounds on a single-column key give a key range. The
/// filter is still applied to the rows fetched.
pub fn primary_key_access(table: &TableDef, filter: Option<&Expr>) -> Access {
    let (Some(pk), Some(filter)) = (&table.primary_key, filter) else {
        return Access::Full;
    };
    let mut conjuncts = Vec::new();
    collect_conjuncts(filter, &mut conjuncts);
    // (op, value) with the key column on the left.
    let comparisons = |col: usize| -> Vec<(BinaryOp, Expr)> {
        conjuncts
            .iter()
            .filter_map(|c| match c {
                Expr::Binary {
                    op, left, right, ..
                } => match (left.key_column(), right.key_column()) {
                    (Some(index), None) if index == col && row_independent(right) => {
                        Some((*op, right.as_ref().clone()))
                    }
                    (None, Some(index)) if index == col && row_independent(left) => {
                        let flipped = match op {
                            BinaryOp::Lt => BinaryOp::Gt,
                            BinaryOp::LtEq => BinaryOp::GtEq,
                            BinaryOp::Gt => BinaryOp::Lt,
                            BinaryOp::GtEq => BinaryOp::LtEq,
                            other => *other,
                        };
                        Some((flipped, left.as_ref().clone()))
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
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
    let (mut lower, mut upper) = (None, None);
    for (op, value) in comparisons(pk[0]) {
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
    if lower.is_none() && upper.is_none() {
        Access::Full
    } else {
        Access::KeyRange { lower, upper }
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
