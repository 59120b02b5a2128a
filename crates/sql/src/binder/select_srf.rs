//! Set-returning functions in a select list, rewritten into the statement's FROM so the
//! binder needs no select-list set-returning node.
//!
//! PostgreSQL 10+ runs the set-returning functions of one select list in lockstep until
//! the longest is done, the others NULL past their last row. `lateral_sets` turns
//! unnest, generate_series and the set-returning functions over text and jsonb, wherever
//! they sit in an item, into columns of one `LATERAL ROWS FROM (…)` (`Rel::RowsFrom`).
//!
//! `lateral_subscripts` handles what catalog readers write beside them:
//! `generate_subscripts(a, d)` and the fields of `information_schema._pg_expandarray(a)`
//! (SQLAlchemy reads a constraint's columns with
//! `SELECT unnest(conkey) AS attnum, generate_subscripts(conkey, 1) AS ord FROM …`;
//! pgjdbc's getIndexInfo an index's with `(information_schema._pg_expandarray(indkey)).n`).
//! Where every one of them is over the same array, that is the select with
//! `LATERAL generate_series(array_lower(a, d), array_upper(a, d)) AS s(n)` appended to its
//! FROM, `unnest(a)` read as `a[s.n]` and `generate_subscripts(a, d)` as `s.n`,
//! `(_pg_expandarray(a)).x` as `a[s.n]` and its `.n` as the 1-based position
//! `s.n - array_lower(a, 1) + 1` (an int2vector's subscripts start at 0): an empty or
//! NULL array gives no rows, as in PostgreSQL. `_pg_expandarray(a)` itself, a record,
//! is left alone (no record values here). Other shapes (different arrays, aggregates) are
//! left as they are.

use pgerror::{PgError, PgResult};
use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::{Parser, ParserError};

/// The alias of the appended subscript series; not a name a query would use.
const SERIES: &str = "\"meridian select-list subscripts\"";

/// The function `lateral_sets` appends to FROM: its arguments' rows side by side
/// (`Binder::rows_from`); not a name a query would use.
pub(super) const ROWS_FROM: &str = "meridian rows from";

/// The select with its select-list `unnest`/`generate_subscripts` turned into a lateral
/// subscript series, or None where it has none (or a shape this does not handle).
pub(super) fn lateral_subscripts(sel: &ast::Select) -> PgResult<Option<ast::Select>> {
    let mut array: Option<String> = None;
    let mut dimension: Option<String> = None;
    let mut found = false;
    for item in &sel.projection {
        let (ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. }) =
            item
        else {
            continue;
        };
        let Some((arr, dim)) = array_function(e) else {
            continue;
        };
        found = true;
        if array.get_or_insert_with(|| arr.clone()) != &arr {
            return Ok(None);
        }
        if let Some(d) = dim {
            if dimension.get_or_insert_with(|| d.clone()) != &d {
                return Ok(None);
            }
        }
    }
    let Some(array) = array.filter(|_| found && !aggregating(sel)) else {
        return Ok(None);
    };
    let dimension = dimension.unwrap_or_else(|| "1".to_string());
    let mut out = sel.clone();
    for item in &mut out.projection {
        let (expr, alias) = match item {
            ast::SelectItem::UnnamedExpr(e) => (e.clone(), None),
            ast::SelectItem::ExprWithAlias { expr, alias } => (expr.clone(), Some(alias.clone())),
            _ => continue,
        };
        let Some(name) = function_name(&expr).filter(|_| array_function(&expr).is_some()) else {
            continue;
        };
        let replacement = match name.as_str() {
            "unnest" | "x" => format!("({array})[{SERIES}.n]"),
            "n" => format!("{SERIES}.n - array_lower({array}, 1) + 1"),
            _ => format!("{SERIES}.n"),
        };
        *item = ast::SelectItem::ExprWithAlias {
            expr: parsed(&replacement, |p| p.parse_expr())?,
            alias: alias.unwrap_or_else(|| ast::Ident::new(name)),
        };
    }
    let series = format!(
        "LATERAL generate_series(array_lower({array}, {dimension}), \
         array_upper({array}, {dimension})) AS {SERIES}(n)"
    );
    out.from
        .push(parsed(&series, |p| p.parse_table_and_joins())?);
    Ok(Some(out))
}

/// Whether the select groups: PostgreSQL runs a select list's set-returning functions
/// after grouping, which a join before it would not.
fn aggregating(sel: &ast::Select) -> bool {
    !matches!(&sel.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty())
        || sel.having.is_some() || (sel.projection.iter()).any(|i| {
        matches!(i, ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. }
                if super::contains_aggregate(e))
    })
}

/// The select with its select list's set-returning functions of one column (unnest,
/// generate_series, the ones over text and jsonb), wherever they sit in an item, turned
/// into one `LATERAL ROWS_FROM(f(…), …) AS series(c1, …)` appended to its FROM, each call
/// read as its column: PostgreSQL 10+ runs a select list's set-returning functions in
/// lockstep until the longest is done, the others NULL past their last row (none with a
/// row: no rows), as `Rel::RowsFrom` does. An item keeps the column name the call gave
/// it; a select that groups is `grouped_sets`. None where the select has no such call,
/// or has generate_subscripts or `_pg_expandarray` (`lateral_subscripts`) or a call in an
/// item with a subquery.
pub(super) fn lateral_sets(sel: &ast::Select) -> PgResult<Option<ast::Select>> {
    let calls = |e: &ast::Expr| {
        let mut found = false;
        let _ = ast::visit_expressions(e, |e| {
            found |= set_call(e).is_some();
            std::ops::ControlFlow::<()>::Continue(())
        });
        found
    };
    let items: Vec<&ast::Expr> = (sel.projection.iter())
        .filter_map(|i| match i {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                Some(e)
            }
            _ => None,
        })
        .collect();
    let subscripts = |e: &&ast::Expr| array_function(e).is_some_and(|(_, dim)| dim.is_some());
    if !items.iter().any(|e| calls(e))
        || items.iter().any(subscripts)
        || items.iter().any(|e| calls(e) && super::has_subquery(e))
    {
        return Ok(None);
    }
    for e in &items {
        refuse_conditional_calls(e)?;
    }
    if aggregating(sel) {
        return grouped_sets(sel);
    }
    let mut out = sel.clone();
    let mut functions: Vec<String> = Vec::new();
    for item in &mut out.projection {
        let (expr, alias) = match item {
            ast::SelectItem::UnnamedExpr(e) => (e.clone(), None),
            ast::SelectItem::ExprWithAlias { expr, alias } => (expr.clone(), Some(alias.clone())),
            _ => continue,
        };
        let mut rewritten = expr.clone();
        let mut failed: Option<PgError> = None;
        let _ = ast::visit_expressions_mut(&mut rewritten, |e| {
            let Some(call) = set_call(e) else {
                return std::ops::ControlFlow::Continue(());
            };
            if call.contains(SERIES) {
                failed = Some(PgError::unsupported(
                    "set-returning functions in the arguments of set-returning functions",
                ));
                return std::ops::ControlFlow::Break(());
            }
            functions.push(call);
            match parsed(&format!("{SERIES}.c{}", functions.len()), |p| {
                p.parse_expr()
            }) {
                Ok(r) => {
                    *e = r;
                    std::ops::ControlFlow::Continue(())
                }
                Err(err) => {
                    failed = Some(err);
                    std::ops::ControlFlow::Break(())
                }
            }
        });
        if let Some(err) = failed {
            return Err(err);
        }
        if rewritten != expr {
            *item = ast::SelectItem::ExprWithAlias {
                expr: rewritten,
                alias: alias.unwrap_or_else(|| {
                    ast::Ident::with_quote('"', super::default_column_name(&expr))
                }),
            };
        }
    }
    let columns: Vec<String> = (1..=functions.len()).map(|i| format!("c{i}")).collect();
    let series = format!(
        "LATERAL \"{ROWS_FROM}\"({}) AS {SERIES}({})",
        functions.join(", "),
        columns.join(", ")
    );
    out.from
        .push(parsed(&series, |p| p.parse_table_and_joins())?);
    Ok(Some(out))
}

/// PostgreSQL's 0A000 for a set-returning call inside CASE or COALESCE, which evaluate
/// their arguments conditionally.
fn refuse_conditional_calls(e: &ast::Expr) -> PgResult<()> {
    let calls = |x: &ast::Expr| {
        ast::visit_expressions(x, |y| match set_call(y) {
            Some(_) => std::ops::ControlFlow::Break(()),
            None => std::ops::ControlFlow::Continue(()),
        })
        .is_break()
    };
    let found = ast::visit_expressions(e, |x| {
        let construct = match x {
            ast::Expr::Case { .. } => "CASE",
            ast::Expr::Function(_) if function_name(x).as_deref() == Some("coalesce") => "COALESCE",
            _ => return std::ops::ControlFlow::Continue(()),
        };
        match calls(x) {
            true => std::ops::ControlFlow::Break(construct),
            false => std::ops::ControlFlow::Continue(()),
        }
    });
    match found {
        std::ops::ControlFlow::Break(construct) => Err(PgError::new(
            pgerror::codes::FEATURE_NOT_SUPPORTED,
            format!("set-returning functions are not allowed in {construct}"),
        )
        .with_hint(
            "You might be able to move the set-returning function into a LATERAL FROM item.",
        )),
        std::ops::ControlFlow::Continue(()) => Ok(()),
    }
}

/// A call of a set-returning function of one column, as SQL text.
fn set_call(e: &ast::Expr) -> Option<String> {
    let args = plain_arguments(e)?.len();
    let set = match function_name(e)?.as_str() {
        "unnest"
        | "jsonb_array_elements"
        | "jsonb_array_elements_text"
        | "jsonb_object_keys"
        | "json_array_elements"
        | "json_array_elements_text"
        | "json_object_keys" => args == 1,
        "generate_series" | "regexp_matches" | "regexp_split_to_table" | "string_to_table" => {
            (2..=3).contains(&args)
        }
        _ => false,
    };
    set.then(|| e.to_string())
}

/// `lateral_sets` for a select that groups, whose set-returning functions PostgreSQL runs
/// after grouping: the select (DISTINCT aside) computes, in a derived table, the calls'
/// arguments and each largest part of an item without a call; a select over it runs the
/// calls laterally, as `lateral_sets` does, and the rest of each item. None with
/// DISTINCT ON.
fn grouped_sets(sel: &ast::Select) -> PgResult<Option<ast::Select>> {
    let distinct = match &sel.distinct {
        None | Some(ast::Distinct::All) => "",
        Some(ast::Distinct::Distinct) => "DISTINCT ",
        Some(ast::Distinct::On(_)) => return Ok(None),
    };
    let mut lift = Lift::default();
    let mut outer_items = Vec::new();
    for item in &sel.projection {
        let (expr, name) = match item {
            ast::SelectItem::UnnamedExpr(e) => (e, super::default_column_name(e)),
            ast::SelectItem::ExprWithAlias { expr, alias } => (expr, super::ident_name(alias)),
            _ => return Ok(None),
        };
        let mut outer = expr.clone();
        if let std::ops::ControlFlow::Break(err) = ast::VisitMut::visit(&mut outer, &mut lift) {
            return Err(err);
        }
        outer_items.push(format!("{outer} AS {}", ast::Ident::with_quote('"', name)));
    }
    let mut inner = sel.clone();
    inner.distinct = None;
    inner.projection = lift.computed;
    let columns: Vec<String> = (1..=lift.functions.len())
        .map(|i| format!("c{i}"))
        .collect();
    let outer = format!(
        "SELECT {distinct}{} FROM ({inner}) AS {GROUPED}, LATERAL \"{ROWS_FROM}\"({}) AS {SERIES}({})",
        outer_items.join(", "),
        lift.functions.join(", "),
        columns.join(", ")
    );
    parsed(&outer, |p| p.parse_select()).map(Some)
}

/// The alias of `grouped_sets`' derived table; not a name a query would use.
const GROUPED: &str = "\"meridian grouped\"";

/// `grouped_sets`' rewrite of an item, outermost first: a set-returning call becomes its
/// column of the lateral functions (its arguments computed below), a part without one a
/// column of the derived table; other parts are kept and entered.
#[derive(Default)]
struct Lift {
    /// The derived table's items, named g1, g2, …
    computed: Vec<ast::SelectItem>,
    /// The calls, over the derived table's columns.
    functions: Vec<String>,
}

impl Lift {
    /// `e` as an item of the derived table, and the outer select's reference to it.
    fn compute(&mut self, e: &ast::Expr) -> PgResult<ast::Expr> {
        self.computed.push(ast::SelectItem::ExprWithAlias {
            expr: e.clone(),
            alias: ast::Ident::with_quote('"', format!("g{}", self.computed.len() + 1)),
        });
        parsed(&format!("{GROUPED}.\"g{}\"", self.computed.len()), |p| {
            p.parse_expr()
        })
    }

    fn lifted(&mut self, e: &ast::Expr) -> PgResult<Option<ast::Expr>> {
        if let (Some(_), ast::Expr::Function(f)) = (set_call(e), e) {
            let args = (plain_arguments(e).unwrap_or_default().iter())
                .map(|a| Ok(self.compute(&parsed(a, |p| p.parse_expr())?)?.to_string()))
                .collect::<PgResult<Vec<_>>>()?;
            self.functions
                .push(format!("{}({})", f.name, args.join(", ")));
            let column = format!("{SERIES}.c{}", self.functions.len());
            return parsed(&column, |p| p.parse_expr()).map(Some);
        }
        let calls = ast::visit_expressions(e, |x| match set_call(x) {
            Some(_) => std::ops::ControlFlow::Break(()),
            None => std::ops::ControlFlow::Continue(()),
        });
        match calls.is_break() {
            true => Ok(None),
            false => self.compute(e).map(Some),
        }
    }
}

impl ast::VisitorMut for Lift {
    type Break = PgError;

    fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> std::ops::ControlFlow<PgError> {
        match self.lifted(e) {
            Ok(Some(replacement)) => *e = replacement,
            Ok(None) => {}
            Err(err) => return std::ops::ControlFlow::Break(err),
        }
        std::ops::ControlFlow::Continue(())
    }
}

/// A derived table's `_pg_expandarray(a) AS k` as two columns named `k.x` and `k.n`, and
/// this select's `(alias.k).x` and `(alias.k).n` as those columns: pgjdbc's
/// getPrimaryKeys selects the record whole and compares its field x a level up, and there
/// are no record values here. None where no derived table selects one.
pub(super) fn expandarray_records(sel: &ast::Select) -> PgResult<Option<ast::Select>> {
    // Most selects have no derived table: they are not copied.
    let derived = |f: &ast::TableFactor| matches!(f, ast::TableFactor::Derived { .. });
    if !sel
        .from
        .iter()
        .any(|f| derived(&f.relation) || f.joins.iter().any(|j| derived(&j.relation)))
    {
        return Ok(None);
    }
    let mut out = sel.clone();
    // (derived table's alias, the record column's name)
    let mut records: Vec<(String, String)> = Vec::new();
    for from in &mut out.from {
        let factors = std::iter::once(&mut from.relation)
            .chain(from.joins.iter_mut().map(|j| &mut j.relation));
        for factor in factors {
            let ast::TableFactor::Derived {
                subquery,
                alias: Some(alias),
                ..
            } = factor
            else {
                continue;
            };
            let ast::SetExpr::Select(inner) = subquery.body.as_mut() else {
                continue;
            };
            let mut projection = Vec::with_capacity(inner.projection.len());
            for item in std::mem::take(&mut inner.projection) {
                let ast::SelectItem::ExprWithAlias {
                    expr,
                    alias: column,
                } = &item
                else {
                    projection.push(item);
                    continue;
                };
                if !is_expandarray(expr) {
                    projection.push(item);
                    continue;
                }
                let column = super::ident_name(column);
                for field in ["x", "n"] {
                    projection.push(ast::SelectItem::ExprWithAlias {
                        expr: parsed(&format!("({expr}).{field}"), |p| p.parse_expr())?,
                        alias: ast::Ident::with_quote('"', format!("{column}.{field}")),
                    });
                }
                records.push((super::ident_name(&alias.name), column));
            }
            inner.projection = projection;
        }
    }
    if records.is_empty() {
        return Ok(None);
    }
    let _ = ast::visit_expressions_mut(&mut out, |e| {
        if let Some((table, column)) = record_field(e, &records) {
            *e = ast::Expr::CompoundIdentifier(vec![
                ast::Ident::with_quote('"', table),
                ast::Ident::with_quote('"', column),
            ]);
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    Ok(Some(out))
}

/// `(alias.k).x` or `.n` for a record column k of `records` → (alias, "k.x").
fn record_field(e: &ast::Expr, records: &[(String, String)]) -> Option<(String, String)> {
    let ast::Expr::CompoundFieldAccess { root, access_chain } = e else {
        return None;
    };
    let [ast::AccessExpr::Dot(ast::Expr::Identifier(field))] = access_chain.as_slice() else {
        return None;
    };
    let ast::Expr::Nested(inner) = root.as_ref() else {
        return None;
    };
    let ast::Expr::CompoundIdentifier(ids) = inner.as_ref() else {
        return None;
    };
    let [table, column] = ids.as_slice() else {
        return None;
    };
    let (table, column, field) = (
        super::ident_name(table),
        super::ident_name(column),
        super::ident_name(field),
    );
    (records.contains(&(table.clone(), column.clone())) && (field == "x" || field == "n"))
        .then(|| (table, format!("{column}.{field}")))
}

/// Syntax built from the statement's own parts, so it parses; an internal error if not.
pub(super) fn parsed<T>(
    sql: &str,
    parse: impl FnOnce(&mut Parser) -> Result<T, ParserError>,
) -> PgResult<T> {
    (Parser::new(&PostgreSqlDialect {}).try_with_sql(sql))
        .and_then(|mut p| parse(&mut p))
        .map_err(|e| PgError::internal(format!("rewritten syntax {sql}: {e}")))
}

/// `unnest(a)` → (a, None); `generate_subscripts(a, d)` → (a, Some(d));
/// `(_pg_expandarray(a)).x` or `.n` → (a, Some(1)); as SQL text.
fn array_function(e: &ast::Expr) -> Option<(String, Option<String>)> {
    if let Some((array, _)) = expandarray_field(e) {
        return Some((array, Some("1".to_string())));
    }
    let args = plain_arguments(e)?;
    match (function_name(e)?.as_str(), args.as_slice()) {
        ("unnest", [a]) => Some((a.clone(), None)),
        ("generate_subscripts", [a, d]) => Some((a.clone(), Some(d.clone()))),
        _ => None,
    }
}

/// `(information_schema._pg_expandarray(a)).x` → (a, "x"), likewise `.n`.
fn expandarray_field(e: &ast::Expr) -> Option<(String, String)> {
    let ast::Expr::CompoundFieldAccess { root, access_chain } = e else {
        return None;
    };
    let [ast::AccessExpr::Dot(ast::Expr::Identifier(field))] = access_chain.as_slice() else {
        return None;
    };
    let field = super::ident_name(field);
    let ast::Expr::Nested(call) = root.as_ref() else {
        return None;
    };
    match plain_arguments(call)?.as_slice() {
        [a] if is_expandarray(call) && (field == "x" || field == "n") => Some((a.clone(), field)),
        _ => None,
    }
}

/// A call of `information_schema._pg_expandarray(a)`.
fn is_expandarray(e: &ast::Expr) -> bool {
    let ast::Expr::Function(f) = e else {
        return false;
    };
    let name = super::object_name_parts(&f.name);
    matches!(name.as_slice(), [n] | [_, n] if n == "_pg_expandarray")
        && (name.len() == 1 || name[0] == "information_schema")
        && plain_arguments(e).is_some_and(|args| args.len() == 1)
}

/// A call's arguments as SQL text, where they are plain expressions.
fn plain_arguments(e: &ast::Expr) -> Option<Vec<String>> {
    let ast::Expr::Function(f) = e else {
        return None;
    };
    let ast::FunctionArguments::List(list) = &f.args else {
        return None;
    };
    if list.duplicate_treatment.is_some() || !list.clauses.is_empty() || f.over.is_some() {
        return None;
    }
    (list.args.iter())
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e.to_string()),
            _ => None,
        })
        .collect()
}

/// The name a select-list function gets replaced under: the function's, or for a field
/// of `_pg_expandarray` the field's.
fn function_name(e: &ast::Expr) -> Option<String> {
    if let Some((_, field)) = expandarray_field(e) {
        return Some(field);
    }
    let ast::Expr::Function(f) = e else {
        return None;
    };
    let name = super::object_name_parts(&f.name);
    match name.as_slice() {
        [n] => Some(n.clone()),
        [schema, n] if schema == "pg_catalog" => Some(n.clone()),
        _ => None,
    }
}
