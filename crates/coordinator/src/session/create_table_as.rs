//! CREATE TABLE … AS and SELECT … INTO: the table is created through the DDL path, then
//! filled by the statement's INSERT, bound now that the table exists and run as any
//! INSERT (the spool, the cluster's placement); the tag counts its rows (`SELECT n`).

use super::statement::Outcome;
use super::{Session, SessionStream};
use pgerror::{codes, PgResult};
use sql::plan::{CreateTableAs, Statement};
use types::Value;
use wire::backend::NoticeSeverity;

impl<S: SessionStream> Session<S> {
    pub(super) async fn create_table_as(
        &mut self,
        ctas: &CreateTableAs,
        params: &[Value],
    ) -> PgResult<Outcome> {
        let name = &ctas.table.name;
        if ctas.table.if_not_exists && crate::index_ddl::relation_exists(&self.shared, name) {
            let message = format!("relation \"{name}\" already exists, skipping");
            self.notice(NoticeSeverity::Notice, codes::DUPLICATE_TABLE, &message);
            return Ok(Outcome::tag("CREATE TABLE AS"));
        }
        // The snapshot first: the INSERT below then finds the catalog current (its own
        // table included) and is not bound again.
        self.ensure_started().await?;
        self.check_catalog_current().await?;
        let t = self.tx.as_mut().expect("started above");
        let create = Statement::CreateTable(ctas.table.clone());
        let who = crate::ownership::Who::of(&self.shared, &self.state.current_user);
        crate::ddl::execute(&self.shared, &create, None, &mut t.ddl, &who, &mut self.out).await?;
        let Some(insert) = &ctas.rows else {
            return Ok(Outcome::tag("CREATE TABLE AS"));
        };
        let parsed = sql::parse::parse_statement(insert)?;
        let (insert, _) = sql::binder::bind(&parsed, &self.shared.catalog, &[])?;
        let inserted = self.dml(&insert, params).await?;
        let count = inserted.tag.rsplit(' ').next().unwrap_or("0");
        Ok(Outcome::tag(format!("SELECT {count}")))
    }
}
