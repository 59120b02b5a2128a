//! A table's CHECK constraints as the system catalogs show them (pg_constraint,
//! pg_get_constraintdef, information_schema): their stored expressions bound over the
//! table's row and printed as PostgreSQL prints them (`sql::deparse`).

use sql::catalog::CheckDef;
use sql::TableDef;
use std::sync::Arc;

/// One CHECK constraint of a table.
pub struct CheckView<'t> {
    pub table: &'t TableDef,
    pub check: &'t CheckDef,
    /// The expression bound over the table's row; None if it no longer binds.
    bound: Option<sql::plan::Expr>,
}

/// The CHECK constraints of `t`.
pub fn checks_of(t: &TableDef) -> Vec<CheckView<'_>> {
    t.checks
        .iter()
        .map(|check| CheckView {
            table: t,
            check,
            bound: sql::binder::bind_check(t, check).ok(),
        })
        .collect()
}

/// The CHECK constraint whose OID is `oid`.
pub fn find(tables: &[Arc<TableDef>], oid: u32) -> Option<CheckView<'_>> {
    tables
        .iter()
        .flat_map(|t| checks_of(t))
        .find(|c| c.check.oid == oid)
}

impl CheckView<'_> {
    /// pg_constraint.conkey: the columns it reads (attribute numbers).
    pub fn attnums(&self) -> Vec<i16> {
        self.bound
            .as_ref()
            .map(sql::deparse::columns_read)
            .unwrap_or_default()
            .into_iter()
            .map(|c| c as i16 + 1)
            .collect()
    }

    /// pg_get_constraintdef's text (`pretty`: psql's `\d`).
    pub fn definition(&self, pretty: bool) -> String {
        let expr = match &self.bound {
            Some(e) => sql::deparse::deparse(e, &self.table.columns, pretty),
            None => self.check.expr.clone(),
        };
        format!("CHECK ({expr})")
    }

    /// information_schema.check_constraints.check_clause: the definition after `CHECK `.
    pub fn clause(&self) -> String {
        self.definition(false)["CHECK ".len()..].to_string()
    }
}
