//! `pg_options_to_table(options)`: the `name=value` items of an options array (reloptions,
//! attfdwoptions, …) as rows of (option_name, option_value), as pg_dump reads them. The
//! FROM item is rewritten to the lateral subquery
//! `(SELECT split_part(o, '=', 1), <the text after the first '='> FROM unnest(options) o)`,
//! so the binder needs no node of its own for it; an item without `=` has a NULL value,
//! as in PostgreSQL.

use pgerror::PgResult;
use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// The derived table standing for the FROM item `pg_options_to_table(e)` (`name` is the
/// function's unqualified name), or None for any other function.
pub(super) fn rewrite(
    name: &str,
    args: &[ast::FunctionArg],
    alias: &Option<ast::TableAlias>,
) -> PgResult<Option<ast::TableFactor>> {
    let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(options))] = args else {
        return Ok(None);
    };
    if name != "pg_options_to_table" {
        return Ok(None);
    }
    let alias = alias
        .as_ref()
        .map_or_else(|| "pg_options_to_table".to_string(), |a| a.name.to_string());
    let sql = format!(
        "SELECT * FROM (SELECT split_part(o, '=', 1)::text AS option_name, \
         CASE WHEN strpos(o, '=') > 0 THEN substr(o, strpos(o, '=') + 1) END AS option_value \
         FROM unnest(({options})::text[]) AS u(o)) AS {alias}"
    );
    let stmt = Parser::parse_sql(&PostgreSqlDialect {}, &sql)
        .map_err(|e| pgerror::PgError::internal(format!("pg_options_to_table: {e}")))?;
    let Some(ast::Statement::Query(q)) = stmt.into_iter().next() else {
        return Ok(None);
    };
    let ast::SetExpr::Select(select) = *q.body else {
        return Ok(None);
    };
    let mut from = select.from;
    let mut derived = from.remove(0).relation;
    if let ast::TableFactor::Derived { lateral, .. } = &mut derived {
        *lateral = true;
    }
    Ok(Some(derived))
}
