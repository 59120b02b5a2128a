//! CREATE INDEX, DROP INDEX and the UNIQUE constraints of CREATE TABLE (decision 0035).

use super::*;
use crate::index::IndexColumn;

/// The table column an index column names (42703 if none).
fn indexed_column(columns: &[ColumnDef], c: &ast::IndexColumn) -> PgResult<usize> {
    let ast::Expr::Identifier(ident) = &c.column.expr else {
        return Err(PgError::unsupported("expression indexes"));
    };
    let name = ident_name(ident);
    columns.iter().position(|c| c.name == name).ok_or_else(|| {
        PgError::new(
            codes::UNDEFINED_COLUMN,
            format!("column \"{name}\" named in key does not exist"),
        )
    })
}

impl<'a> Binder<'a> {
    pub(super) fn create_index(&mut self, ci: &ast::CreateIndex) -> PgResult<Statement> {
        crate::unsupported_syntax::create_index(ci)?;
        let table = self.altered_table(&object_name_parts(&ci.table_name))?;
        let columns = ci
            .columns
            .iter()
            .map(|c| {
                let descending = matches!(c.column.options.sort, Some(ast::OrderBySort::Desc));
                Ok(IndexColumn {
                    column: indexed_column(&table.columns, c)?,
                    descending,
                    // PostgreSQL's default: NULLS FIRST exactly for DESC.
                    nulls_first: c.column.options.nulls_first.unwrap_or(descending),
                })
            })
            .collect::<PgResult<Vec<_>>>()?;
        Ok(Statement::CreateIndex(CreateIndex {
            table,
            name: ci.name.as_ref().map(user_object_name).transpose()?,
            if_not_exists: ci.if_not_exists,
            unique: ci.unique,
            columns,
        }))
    }

    /// A UNIQUE constraint of CREATE TABLE: on `column` for a column's, else on the
    /// constraint's columns. Its name is the constraint's, or PostgreSQL's `t_a_key`
    /// (numbered past the names in `taken`).
    pub(super) fn unique_constraint(
        &self,
        table: &str,
        columns: &[ColumnDef],
        u: &ast::UniqueConstraint,
        column: Option<usize>,
        constraint_name: Option<&ast::Ident>,
        taken: &[UniqueConstraint],
    ) -> PgResult<UniqueConstraint> {
        crate::unsupported_syntax::unique_constraint(u)?;
        let cols = match column {
            Some(c) => vec![c],
            None => u
                .columns
                .iter()
                .map(|c| indexed_column(columns, c))
                .collect::<PgResult<Vec<_>>>()?,
        };
        let name = match constraint_name.or(u.name.as_ref()) {
            Some(n) => ident_name(n),
            None => {
                let names: Vec<&str> = cols.iter().map(|&c| columns[c].name.as_str()).collect();
                crate::index::default_name(table, &names, "key", &|n| {
                    taken.iter().any(|t| t.name == n) || self.catalog.table(None, n).is_some()
                })
            }
        };
        Ok(UniqueConstraint {
            name,
            columns: cols,
        })
    }
}
