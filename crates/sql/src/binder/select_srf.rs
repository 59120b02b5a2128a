//! `unnest(a)` and `generate_subscripts(a, d)` in a select list, as catalog readers
//! write them (SQLAlchemy reads a constraint's columns with
//! `SELECT unnest(conkey) AS attnum, generate_subscripts(conkey, 1) AS ord FROM …`).
//!
//! PostgreSQL runs the set-returning functions of one select list in lockstep, one
//! output row per subscript. Where every one of them is over the same array, that is the
//! select with `LATERAL generate_series(array_lower(a, d), array_upper(a, d)) AS s(n)`
//! appended to its FROM, `unnest(a)` read as `a[s.n]` and `generate_subscripts(a, d)` as
//! `s.n`: an empty or NULL array gives no rows, as in PostgreSQL. The rewrite is of the
//! statement's syntax, so the binder needs no set-returning node. Other shapes (different
//! arrays, a function nested in an expression, aggregates) are left as they are.

use pgerror::{PgError, PgResult};
use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::{Parser, ParserError};

/// The alias of the appended subscript series; not a name a query would use.
const SERIES: &str = "\"meridian select-list subscripts\"";

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
    // PostgreSQL runs them after grouping, which a join before it would not.
    let aggregating = !matches!(&sel.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty())
        || sel.having.is_some() || (sel.projection.iter()).any(|i| {
        matches!(i, ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. }
                if super::contains_aggregate(e))
    });
    let Some(array) = array.filter(|_| found && !aggregating) else {
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
            "unnest" => format!("({array})[{SERIES}.n]"),
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

/// Syntax built from the statement's own parts, so it parses; an internal error if not.
fn parsed<T>(sql: &str, parse: impl FnOnce(&mut Parser) -> Result<T, ParserError>) -> PgResult<T> {
    (Parser::new(&PostgreSqlDialect {}).try_with_sql(sql))
        .and_then(|mut p| parse(&mut p))
        .map_err(|e| PgError::internal(format!("select-list subscripts {sql}: {e}")))
}

/// `unnest(a)` → (a, None); `generate_subscripts(a, d)` → (a, Some(d)); as SQL text.
fn array_function(e: &ast::Expr) -> Option<(String, Option<String>)> {
    let ast::Expr::Function(f) = e else {
        return None;
    };
    let ast::FunctionArguments::List(list) = &f.args else {
        return None;
    };
    if list.duplicate_treatment.is_some() || !list.clauses.is_empty() || f.over.is_some() {
        return None;
    }
    let args: Vec<String> = (list.args.iter())
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e.to_string()),
            _ => None,
        })
        .collect::<Option<_>>()?;
    match (function_name(e)?.as_str(), args.as_slice()) {
        ("unnest", [a]) => Some((a.clone(), None)),
        ("generate_subscripts", [a, d]) => Some((a.clone(), Some(d.clone()))),
        _ => None,
    }
}

fn function_name(e: &ast::Expr) -> Option<String> {
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
