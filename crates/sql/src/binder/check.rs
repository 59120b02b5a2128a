//! CHECK constraints: an expression bound over a row of its table (refused as
//! PostgreSQL refuses it), PostgreSQL's names for unnamed ones, and a table's
//! constraints bound for the statements that write its rows.

use super::*;
use crate::catalog::CheckDef;

/// A catalog with no tables: a CHECK expression reads nothing but its row.
struct NoTables;

impl Catalog for NoTables {
    fn table(&self, _schema: Option<&str>, _name: &str) -> Option<Arc<TableDef>> {
        None
    }
    fn table_by_oid(&self, _oid: u32) -> Option<Arc<TableDef>> {
        None
    }
}

/// `check`'s stored expression bound over a row of `table` (for ALTER TABLE's check of
/// the rows and for the system catalogs).
pub fn bind_check(table: &TableDef, check: &CheckDef) -> PgResult<Expr> {
    Binder::new(&NoTables, Vec::new()).stored_check(&table.name, &table.columns, check)
}

/// A stored CHECK expression with column `from` renamed `to` (ALTER TABLE … RENAME
/// COLUMN): the text names its columns.
pub fn rename_column(expr: &str, from: &str, to: &str) -> PgResult<String> {
    let mut parsed = parse_stored(expr)?;
    let renamed = ast::Ident::with_quote('"', to);
    let _ = ast::visit_expressions_mut(&mut parsed, |e| {
        match e {
            ast::Expr::Identifier(id) if ident_name(id) == from => *id = renamed.clone(),
            ast::Expr::CompoundIdentifier(ids) => {
                if let Some(id) = ids.last_mut().filter(|id| ident_name(id) == from) {
                    *id = renamed.clone();
                }
            }
            _ => {}
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    Ok(parsed.to_string())
}

fn parse_stored(expr: &str) -> PgResult<ast::Expr> {
    sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(expr)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| PgError::internal(format!("bad stored check {expr}: {e}")))
}

impl<'a> Binder<'a> {
    /// A CHECK expression over a row of `columns` of table `table`: boolean, with no
    /// subquery (0A000), aggregate (42803) or window call (42P20).
    fn check_expr(&mut self, e: &ast::Expr, table: &str, columns: &[ColumnDef]) -> PgResult<Expr> {
        if has_subquery(e) {
            return Err(PgError::new(
                codes::FEATURE_NOT_SUPPORTED,
                "cannot use subquery in check constraint",
            ));
        }
        if contains_aggregate(e) {
            return Err(PgError::new(
                codes::GROUPING_ERROR,
                "aggregate functions are not allowed in check constraints",
            ));
        }
        refuse_windows_in("check constraints", &[e])?;
        let scope = Scope {
            columns: columns
                .iter()
                .enumerate()
                .map(|(i, c)| ScopeColumn {
                    qualifier: Some(table.to_string()),
                    name: c.name.clone(),
                    ty: c.ty.to_type(),
                    table_oid: 0,
                    attnum: i as i16 + 1,
                    merged_away: false,
                    scalar_function: false,
                    system: false,
                })
                .collect(),
        };
        let bound = self.expr(e, &scope)?;
        boolean_clause("CHECK", bound)
    }

    fn stored_check(
        &mut self,
        table: &str,
        columns: &[ColumnDef],
        check: &CheckDef,
    ) -> PgResult<Expr> {
        let parsed = parse_stored(&check.expr)?;
        self.check_expr(&parsed, table, columns)
    }

    /// The CHECK constraints of `table` bound over its row, in name order (the order
    /// PostgreSQL checks them in).
    pub(super) fn table_checks(&mut self, table: &TableDef) -> PgResult<Arc<Vec<BoundCheck>>> {
        let mut checks = table
            .checks
            .iter()
            .map(|c| {
                Ok(BoundCheck {
                    name: c.name.clone(),
                    expr: self.stored_check(&table.name, &table.columns, c)?,
                })
            })
            .collect::<PgResult<Vec<_>>>()?;
        checks.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Arc::new(checks))
    }

    /// A CHECK constraint of table `table` (OID left 0): its expression checked to bind
    /// over `columns`, its name given (42710 if the table's `existing` constraints or
    /// the statement's `earlier` ones have it, in PostgreSQL's words for each) or
    /// PostgreSQL's: `table_column_check` when it reads one column, else `table_check`,
    /// numbered past the names taken.
    pub(super) fn check_constraint(
        &mut self,
        table: &str,
        columns: &[ColumnDef],
        expr: &ast::Expr,
        name: Option<&ast::Ident>,
        (existing, earlier): (&[String], &[String]),
    ) -> PgResult<CheckDef> {
        let bound = self.check_expr(expr, table, columns)?;
        let duplicate = |message: String| Err(PgError::new(codes::DUPLICATE_OBJECT, message));
        let taken = |n: &String| existing.contains(n) || earlier.contains(n);
        let name = match name.map(ident_name) {
            Some(name) if existing.contains(&name) => {
                return duplicate(format!(
                    "constraint \"{name}\" for relation \"{table}\" already exists"
                ))
            }
            Some(name) if earlier.contains(&name) => {
                return duplicate(format!("check constraint \"{name}\" already exists"))
            }
            Some(name) => name,
            None => {
                let read = crate::deparse::columns_read(&bound);
                let base = match read.as_slice() {
                    [c] => format!("{table}_{}_check", columns[*c].name),
                    _ => format!("{table}_check"),
                };
                (0..)
                    .map(|n| match n {
                        0 => base.clone(),
                        n => format!("{base}{n}"),
                    })
                    .find(|n| !taken(n))
                    .unwrap_or(base)
            }
        };
        Ok(CheckDef {
            oid: 0,
            name,
            expr: expr.to_string(),
        })
    }
}

/// The constraint names of `table` that a new constraint's name must differ from.
pub(super) fn constraint_names(table: &TableDef) -> Vec<String> {
    let keys = table.pk_name.iter().cloned();
    let unique = table
        .indexes
        .iter()
        .filter(|i| i.constraint_oid.is_some())
        .map(|i| i.name.clone());
    let checks = table.checks.iter().map(|c| c.name.clone());
    let foreign_keys = table.foreign_keys.iter().map(|f| f.name.clone());
    keys.chain(unique)
        .chain(checks)
        .chain(foreign_keys)
        .collect()
}
