//! Access paths: how a filter on a table becomes a primary-key lookup or range, or a
//! lookup in one of its secondary indexes (decision 0035).

use super::*;

/// Puts a filter as close to the scans as it can go, so that each scan's conditions
/// choose its access path (primary key, index) and joins meet fewer rows: the conjuncts
/// that read one side of a join go below it (the right side of a LEFT JOIN keeps its
/// rows: only its left side takes them), and an inner join takes the conjuncts that read
/// both sides as its join condition, where equalities become hash keys (a comma join
/// written with its conditions in WHERE, as TPC-C's Stock-Level). A LATERAL join's left
/// side takes its conjuncts too (`FROM t, jsonb_array_elements(t.j) WHERE t.id = 5`
/// reads one row of t and expands one document); the right side, computed per left row,
/// takes none. A conjunct with a subquery stays where it was written.
pub(super) fn push_filter(rel: Rel, predicate: Expr) -> Rel {
    match rel {
        Rel::Scan {
            table,
            access: Access::Full,
        } => {
            let access = access_path(&table, Some(&predicate));
            let predicate = residual(&table, &access, predicate);
            let scan = Rel::Scan { table, access };
            match predicate {
                Some(predicate) => Rel::Filter {
                    input: Box::new(scan),
                    predicate,
                },
                None => scan,
            }
        }
        Rel::Join {
            left,
            right,
            kind,
            on,
            lateral,
        } => {
            let left_width = left.width();
            let (mut to_left, mut to_right, mut kept) = (Vec::new(), Vec::new(), Vec::new());
            for c in into_conjuncts(predicate) {
                match c.join_side(left_width) {
                    // a FULL JOIN's sides are both NULL-extended: nothing goes below it
                    Some(true) if kind != JoinKind::Full => to_left.push(c),
                    Some(false) if kind == JoinKind::Inner && !lateral => {
                        to_right.push(shifted(c, left_width))
                    }
                    _ => kept.push(c),
                }
            }
            let below = |input: Box<Rel>, conjuncts: Vec<Expr>| match all_of(conjuncts) {
                Some(p) => Box::new(push_filter(*input, p)),
                None => input,
            };
            let (left, right) = (below(left, to_left), below(right, to_right));
            if kind == JoinKind::Inner {
                let on = all_of(on.into_iter().chain(kept).collect());
                return Rel::Join {
                    left,
                    right,
                    kind,
                    on,
                    lateral,
                };
            }
            let join = Rel::Join {
                left,
                right,
                kind,
                on,
                lateral,
            };
            match all_of(kept) {
                Some(predicate) => Rel::Filter {
                    input: Box::new(join),
                    predicate,
                },
                None => join,
            }
        }
        other => Rel::Filter {
            input: Box::new(other),
            predicate,
        },
    }
}

/// A conjunct of the right side, its columns renumbered from that side's first.
fn shifted(mut e: Expr, left_width: usize) -> Expr {
    e.visit_mut(&mut |x| {
        if let Expr::Column {
            depth: 0, index, ..
        } = x
        {
            *index -= left_width;
        }
    });
    e
}

fn into_conjuncts(e: Expr) -> Vec<Expr> {
    match e {
        Expr::And(a, b) => {
            let mut out = into_conjuncts(*a);
            out.extend(into_conjuncts(*b));
            out
        }
        other => vec![other],
    }
}

fn all_of(conjuncts: Vec<Expr>) -> Option<Expr> {
    conjuncts
        .into_iter()
        .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
}

/// How `table`'s rows that may pass `filter` are found: by primary key (a point, a
/// list of keys, or a range under an equality prefix) or through a secondary index,
/// whichever pins more leading key columns (a cheap rule in place of costs; the primary
/// key wins ties), else in full. The filter is still applied to the rows fetched.
pub fn access_path(table: &TableDef, filter: Option<&Expr>) -> Access {
    let Some(filter) = filter else {
        return Access::Full;
    };
    let mut conjuncts = Vec::new();
    collect_conjuncts(filter, &mut conjuncts);
    let by_key = primary_key_access(table, &conjuncts);
    // A whole primary key is one read: no index lookup can do better.
    if let Some((r, access)) = &by_key {
        if *r >= WHOLE_UNIQUE {
            return access.clone();
        }
    }
    match index_access(table, &conjuncts) {
        Some((rank, access)) if by_key.as_ref().is_none_or(|(r, _)| rank > *r) => access,
        _ => by_key.map_or(Access::Full, |(_, access)| access),
    }
}

/// The least rank of a lookup of whole keys of a unique key.
const WHOLE_UNIQUE: usize = 1000;

/// How good a lookup is, for choosing between access paths: equality on `equal` leading
/// columns, then a range on the next or an IN list (`narrowed`); a lookup of whole keys
/// of a unique key beats every other.
fn rank(equal: usize, narrowed: Narrowed, whole_unique: bool) -> usize {
    if whole_unique {
        return WHOLE_UNIQUE + equal;
    }
    let narrowed = match narrowed {
        Narrowed::No => 0,
        Narrowed::Range => 1,
        Narrowed::List => 2,
    };
    3 * equal + narrowed
}

#[derive(Clone, Copy)]
enum Narrowed {
    No,
    Range,
    List,
}

/// (op, value) of the conjuncts that compare column `col` with a row-independent value,
/// the column on the left.
fn comparisons(conjuncts: &[&Expr], col: usize) -> Vec<(BinaryOp, Expr)> {
    conjuncts
        .iter()
        .filter_map(|c| comparison(c, col))
        .map(|(op, _, value)| (op, value.clone()))
        .collect()
}

/// (op, column side, value) if `c` compares column `col` with a row-independent value,
/// the column on the left.
fn comparison(c: &Expr, col: usize) -> Option<(BinaryOp, &Expr, &Expr)> {
    let Expr::Binary {
        op, left, right, ..
    } = c
    else {
        return None;
    };
    match (left.as_ref(), right.as_ref()) {
        (column, other) if column.key_column() == Some(col) && row_independent(other) => {
            Some((*op, column, other))
        }
        (other, column) if column.key_column() == Some(col) && row_independent(other) => {
            let flipped = match op {
                BinaryOp::Lt => BinaryOp::Gt,
                BinaryOp::LtEq => BinaryOp::GtEq,
                BinaryOp::Gt => BinaryOp::Lt,
                BinaryOp::GtEq => BinaryOp::LtEq,
                other => *other,
            };
            Some((flipped, column, other))
        }
        _ => None,
    }
}

/// `predicate` less the conjuncts that `access` applies exactly; None if none is left.
/// An equality or bound on an integer key column holds for every row of the key access
/// built from it, since integer keys order as integers compare (sysbench's `id BETWEEN
/// $1 AND $2` was evaluated again on each row of its range). The conjuncts are the ones
/// `primary_key_access` took: the first equality on each pinned column, the first lower
/// and upper bound on the next. Other types keep theirs: their keys may order or equate
/// otherwise than their comparison (bpchar's padding, numeric's scale, floats' zeros).
fn residual(table: &TableDef, access: &Access, predicate: Expr) -> Option<Expr> {
    let (pinned, lower, upper) = match access {
        Access::PrimaryKey(exprs) => (exprs.len(), false, false),
        Access::KeyRange {
            prefix,
            lower,
            upper,
        } => (prefix.len(), lower.is_some(), upper.is_some()),
        Access::Full | Access::PrimaryKeys { .. } | Access::Index { .. } => return Some(predicate),
    };
    let Some(pk) = table.primary_key.as_deref() else {
        return Some(predicate);
    };
    let mut conjuncts: Vec<Option<Expr>> =
        into_conjuncts(predicate).into_iter().map(Some).collect();
    let mut drop_first = |col: usize, applied: fn(BinaryOp) -> bool| {
        let first = conjuncts.iter().position(|c| {
            c.as_ref()
                .and_then(|c| comparison(c, col))
                .is_some_and(|(op, ..)| applied(op))
        });
        if let Some(i) = first {
            let (_, column, value) = comparison(conjuncts[i].as_ref().unwrap(), col).unwrap();
            if column.ty().is_integer() && value.ty().is_integer() {
                conjuncts[i] = None;
            }
        }
    };
    for &col in &pk[..pinned] {
        drop_first(col, |op| op == BinaryOp::Eq);
    }
    if lower {
        drop_first(pk[pinned], |op| matches!(op, BinaryOp::Gt | BinaryOp::GtEq));
    }
    if upper {
        drop_first(pk[pinned], |op| matches!(op, BinaryOp::Lt | BinaryOp::LtEq));
    }
    all_of(conjuncts.into_iter().flatten().collect())
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

/// The row-independent values an `col IN (…)` or `col = ANY (array)` conjunct allows.
fn key_values(conjuncts: &[&Expr], col: usize) -> Option<KeyValues> {
    if let Some(list) = in_list(conjuncts, col) {
        return Some(KeyValues::List(list));
    }
    conjuncts.iter().find_map(|c| match c {
        Expr::AnyArray {
            op: BinaryOp::Eq,
            left,
            array,
            all: false,
        } if left.key_column() == Some(col) && row_independent(array) => {
            Some(KeyValues::Array((**array).clone()))
        }
        _ => None,
    })
}

/// The primary-key access the conjuncts allow, with its rank: the row by its key when
/// they pin every key column; several rows by key when an IN list or `= ANY` gives one
/// column several values and equality pins the rest; else a range of keys under the
/// leading columns that equality pins, bounded on the next column if the conjuncts
/// bound it.
fn primary_key_access(table: &TableDef, conjuncts: &[&Expr]) -> Option<(usize, Access)> {
    let pk = table.primary_key.as_ref()?;
    let equal = |col| {
        comparisons(conjuncts, col)
            .into_iter()
            .find(|(op, _)| *op == BinaryOp::Eq)
            .map(|(_, e)| e)
    };
    let mut prefix = Vec::with_capacity(pk.len());
    let mut listed: Option<(Vec<Expr>, KeyValues)> = None;
    for &col in pk {
        if let Some(e) = equal(col) {
            prefix.push(e);
        } else if let Some(values) = listed
            .is_none()
            .then(|| key_values(conjuncts, col))
            .flatten()
        {
            listed = Some((std::mem::take(&mut prefix), values));
        } else {
            break;
        }
    }
    match listed {
        None if prefix.len() == pk.len() => {
            // One row, read by its key: nothing beats it.
            return Some((usize::MAX, Access::PrimaryKey(prefix)));
        }
        Some((before, values)) if before.len() + 1 + prefix.len() == pk.len() => {
            let access = Access::PrimaryKeys {
                before,
                values,
                after: prefix,
            };
            return Some((rank(pk.len(), Narrowed::No, true), access));
        }
        // A list short of a whole key: the range under the equalities before it.
        Some((before, _)) => prefix = before,
        None => {}
    }
    let (lower, upper) = bounds(conjuncts, pk[prefix.len()]);
    let narrowed = if lower.is_some() || upper.is_some() {
        Narrowed::Range
    } else if prefix.is_empty() {
        return None;
    } else {
        Narrowed::No
    };
    let rank = rank(prefix.len(), narrowed, false);
    Some((
        rank,
        Access::KeyRange {
            prefix,
            lower,
            upper,
        },
    ))
}

/// The best secondary-index lookup the conjuncts allow, with its rank: equality on the
/// most leading columns (a unique index's every column first), else an IN list on a
/// first column, else bounds on a first column; the first index listed wins ties.
fn index_access(table: &TableDef, conjuncts: &[&Expr]) -> Option<(usize, Access)> {
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
                rank(prefix.len(), Narrowed::No, whole_unique),
                IndexLookup::Prefixes(vec![prefix]),
            )
        } else if let Some(list) = in_list(conjuncts, first) {
            (
                rank(0, Narrowed::List, false),
                IndexLookup::Prefixes(list.into_iter().map(|e| vec![e]).collect()),
            )
        } else {
            match bounds(conjuncts, first) {
                (None, None) => continue,
                (lower, upper) => (
                    rank(0, Narrowed::Range, false),
                    IndexLookup::Range { lower, upper },
                ),
            }
        };
        if best.as_ref().is_none_or(|(r, ..)| rank > *r) {
            best = Some((rank, i, lookup));
        }
    }
    best.map(|(rank, index, lookup)| (rank, Access::Index { index, lookup }))
}

/// Whether the rows of `rel`, a projection of one table's (filtered) scan by primary
/// key, come in the order `keys` asks for already: a key scan returns rows in key order
/// (a cluster merges its datanodes' streams by key), so ascending order by the key
/// columns after those its equalities pin needs no sort, and ORDER BY … LIMIT reads only
/// the rows it returns (TPC-C's Delivery takes a district's oldest NEW-ORDER row so).
pub(super) fn in_key_order(rel: &Rel, keys: &[SortKey]) -> bool {
    let Rel::Project { input, exprs } = rel else {
        return false;
    };
    let scan = match input.as_ref() {
        Rel::Filter { input, .. } => input.as_ref(),
        other => other,
    };
    let Rel::Scan { table, access } = scan else {
        return false;
    };
    let Some(pk) = table.primary_key.as_deref() else {
        return false;
    };
    let pinned = match access {
        Access::PrimaryKey(_) => return true, // one row at most
        Access::KeyRange { prefix, .. } => prefix.len(),
        Access::Full | Access::PrimaryKeys { .. } | Access::Index { .. } => return false,
    };
    let mut next = pinned;
    keys.iter().all(|key| {
        let column = match &key.expr {
            Expr::Column {
                depth: 0, index, ..
            } => exprs.get(*index).and_then(Expr::key_column),
            _ => None,
        };
        match column {
            // key columns are never NULL: where NULLs would sort does not matter
            _ if key.descending => false,
            Some(c) if pk[..pinned].contains(&c) => true,
            Some(c) if pk.get(next) == Some(&c) => {
                next += 1;
                true
            }
            _ => false,
        }
    })
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
