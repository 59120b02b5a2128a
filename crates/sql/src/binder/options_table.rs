//! `pg_options_to_table(options)`: the `name=value` items of an options array (reloptions,
//! attfdwoptions, …) as rows of (option_name, option_value), as pg_dump reads them. Bound
//! as `unnest` is: a projection over `generate_series(1, cardinality(options))` whose
//! columns are `split_part(options[n], '=', 1)` and the text after the first `=` (NULL
//! for an item without one, as in PostgreSQL).

use super::*;

impl Binder<'_> {
    /// The relation and scope of `pg_options_to_table(options)`.
    pub(super) fn options_table(
        &mut self,
        options: &ast::Expr,
        alias: &Option<ast::TableAlias>,
    ) -> PgResult<(Rel, Scope)> {
        let qualifier = alias.as_ref().map_or_else(
            || "pg_options_to_table".to_string(),
            |a| ident_name(&a.name),
        );
        let column = |name: &str, attnum| ScopeColumn {
            qualifier: Some(qualifier.clone()),
            name: name.to_string(),
            ty: DataType::Text,
            table_oid: 0,
            attnum,
            merged_away: false,
            scalar_function: false,
            system: false,
        };
        // The series' subscript, as the columns' expressions see it.
        let series = Scope {
            columns: vec![ScopeColumn {
                ty: DataType::Int4,
                ..column("n", 1)
            }],
        };
        let item = format!("((({options})::text[])[n])");
        let bind = |b: &mut Self, sql: String| -> PgResult<Expr> {
            let e = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
                .try_with_sql(&sql)
                .and_then(|mut p| p.parse_expr())
                .map_err(|e| PgError::internal(format!("pg_options_to_table: {e}")))?;
            b.expr(&e, &series)
        };
        let name = bind(self, format!("split_part({item}, '=', 1)"))?;
        let value = bind(
            self,
            format!(
                "CASE WHEN strpos({item}, '=') > 0 THEN substr({item}, strpos({item}, '=') + 1) END"
            ),
        )?;
        let stop = bind(self, format!("cardinality(({options})::text[])"))?;
        let series = Rel::GenerateSeries {
            start: const_expr(Value::Int4(1), DataType::Int4),
            stop,
            step: None,
        };
        let mut columns = vec![column("option_name", 1), column("option_value", 2)];
        if let Some(a) = alias {
            for (c, name) in columns.iter_mut().zip(&a.columns) {
                c.name = ident_name(&name.name);
            }
        }
        Ok((
            Rel::Project {
                input: Box::new(series),
                exprs: vec![name, value],
            },
            Scope { columns },
        ))
    }
}
