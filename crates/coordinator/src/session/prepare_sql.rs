//! SQL-level PREPARE and EXECUTE: the same prepared statements as the protocol's Parse
//! makes (one namespace, as in PostgreSQL; DEALLOCATE and Close remove either), not
//! transactional (a rollback keeps them).

use super::extended::Prepared;
use super::{view, Session};
use crate::dml::ConstantEnv;
use crate::session_io::SessionStream;
use pgerror::{codes, PgError, PgResult};
use sql::eval::EvalCtx;
use sql::parse::ParsedStatement;
use sql::plan::BoundStatement;
use std::sync::Arc;
use types::Value;

impl<S: SessionStream> Session<S> {
    /// `PREPARE name [(types)] AS statement`.
    pub(super) async fn prepare_sql(
        &mut self,
        name: &str,
        statement: &ParsedStatement,
        param_types: &[u32],
    ) -> PgResult<()> {
        if self.prepared.contains_key(name) {
            return Err(PgError::new(
                codes::DUPLICATE_PREPARED_STATEMENT,
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        let version = self.shared.catalog.version();
        let (bound, types) = self.bind_fresh(statement, param_types).await?;
        let prepared = Prepared::new(
            Some(statement.clone()),
            param_types.to_vec(),
            bound,
            types,
            version,
        );
        self.prepared.insert(name.to_string(), Arc::new(prepared));
        Ok(())
    }

    /// `EXECUTE name [(args)]`: the prepared statement's plan and the argument values,
    /// each assigned to its parameter's type.
    pub(super) fn prepared_execution(
        &self,
        name: &str,
        args: &[sql::parse::ast::Expr],
    ) -> PgResult<(Arc<BoundStatement>, Vec<Value>)> {
        let prepared = self.prepared.get(name).ok_or_else(|| {
            PgError::new(
                codes::INVALID_SQL_STATEMENT_NAME,
                format!("prepared statement \"{name}\" does not exist"),
            )
        })?;
        let bound = self.current_plan(prepared)?;
        let exprs = sql::binder::bind_execute_arguments(
            name,
            args,
            &prepared.param_types,
            &self.shared.catalog,
        )?;
        let view = view(
            &self.shared,
            &self.state,
            &self.tx,
            self.state.activity.statement_time(),
        );
        let env = ConstantEnv(&view);
        let ctx = EvalCtx {
            params: &[],
            outer: &[],
            env: &env,
        };
        let values = exprs
            .iter()
            .map(|e| ctx.eval(e, &[]))
            .collect::<PgResult<_>>()?;
        Ok((bound, values))
    }
}
