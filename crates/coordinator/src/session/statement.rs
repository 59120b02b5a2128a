//! Running one bound statement: cancel, statement_timeout and a vanished client race
//! it; queries and DML run in the session's transaction, their rows streamed to the
//! client or collected.

use super::{view, write_out_if_full, Session};
use crate::copy_out::CopyWriter;
use crate::dml::Locked;
use crate::exec::{NodeMeasures, QueryRows, Row, StatementState};
use crate::output;
use crate::session_io::{self, SessionStream};
use crate::settings::Scope;
use bytes::BytesMut;
use datanode_client::Isolation;
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use sql::plan::{BoundStatement, Statement};
use types::Value;
use wire::backend::{self, NoticeSeverity};

/// Result of running one statement.
pub(super) struct Outcome {
    pub(super) rows: Vec<Row>,
    pub(super) tag: String,
}

impl Outcome {
    pub(super) fn tag(tag: impl Into<String>) -> Self {
        Outcome {
            rows: Vec::new(),
            tag: tag.into(),
        }
    }
}

impl<S: SessionStream> Session<S> {
    /// Run one bound statement, honouring cancel requests, statement_timeout and a
    /// client that went away. `biased`: the statement is polled first, and the other
    /// branches only while it waits (a lock, the GTM, the journal, or a yield of a long
    /// operator), so the many statements that finish in their first poll never register
    /// with the session's `Notify` (its lock, twice) nor start a timer. No cancel is
    /// missed: a `Notified` sees every `notify_waiters` from its creation on, polled or
    /// not.
    pub(super) async fn run_statement(
        &mut self,
        stmt: &BoundStatement,
        params: &[Value],
    ) -> PgResult<Outcome> {
        if !stmt.required.is_empty() {
            self.check_privileges(&stmt.required).await?;
        }
        self.limits = self.state.settings.lock().limits();
        let timeout = self.limits.statement_timeout_ms;
        let deadline = (timeout > 0)
            .then(|| tokio::time::Instant::now() + std::time::Duration::from_millis(timeout));
        let client = self.stream.raw_fd();
        let activity = self.state.activity.clone();
        let notified = activity.cancel.notified();
        tokio::pin!(notified);
        let result = tokio::select! {
            biased;
            r = self.execute(&stmt.statement, params) => r,
            _ = &mut notified => Err(if activity.terminated() {
                Self::terminated()
            } else {
                PgError::new(codes::QUERY_CANCELED, "canceling statement due to user request")
            }),
            _ = until(deadline) => Err(PgError::new(codes::QUERY_CANCELED, "canceling statement due to statement timeout")),
            _ = session_io::client_gone(client) => Err(PgError::new(codes::CONNECTION_FAILURE, "connection to client lost")),
        };
        let notices = std::mem::take(&mut *self.state.notices.lock());
        for notice in notices {
            backend::notice_response_with(&mut self.out, NoticeSeverity::Warning, &notice);
        }
        result
    }

    /// `privileges::check`; a denial is checked again against the catalog as it is now
    /// (another coordinator's GRANT may be newer than the plan's ACLs), and if that passes
    /// the statement is bound again.
    async fn check_privileges(&self, required: &[sql::acl::Required]) -> PgResult<()> {
        let user = &self.state.current_user;
        let Err(denied) = crate::privileges::check(&self.shared, user, required) else {
            return Ok(());
        };
        self.shared.catalog.refresh().await?;
        match crate::privileges::check_current(&self.shared, user, required) {
            Ok(()) => Err(super::transaction::catalog_moved()),
            Err(_) => Err(denied),
        }
    }

    async fn execute(&mut self, stmt: &Statement, params: &[Value]) -> PgResult<Outcome> {
        if let Some(dn) = self
            .tx
            .as_mut()
            .and_then(|t| t.dn_txn.as_mut())
            .filter(|dn| dn.has_increments())
        {
            if crate::dml::needs_applied_increments(stmt) {
                self.shared.datanodes.apply_increments(dn).await?;
            }
        }
        match stmt {
            Statement::Begin { .. }
            | Statement::Commit
            | Statement::Rollback
            | Statement::Savepoint(_)
            | Statement::Release(_)
            | Statement::RollbackTo(_)
            | Statement::SetTransaction { .. }
            | Statement::PrepareTransaction(_)
            | Statement::CommitPrepared(_)
            | Statement::RollbackPrepared(_) => self.transaction_control(stmt).await,
            Statement::Set {
                name,
                value,
                local,
                reset,
            } => {
                let tag = Outcome::tag(if *reset { "RESET" } else { "SET" });
                // outside a transaction block SET LOCAL would last no longer than itself
                if *local && !self.tx.as_ref().is_some_and(|t| t.explicit) {
                    self.notice(
                        NoticeSeverity::Warning,
                        codes::NO_ACTIVE_SQL_TRANSACTION,
                        "SET LOCAL can only be used in transaction blocks",
                    );
                    return Ok(tag);
                }
                let scope = Scope::of(*local, self.tx.as_ref().is_some_and(|t| t.explicit));
                if matches!(name.as_str(), "role" | "session_authorization") {
                    self.set_identity(name == "role", value.as_deref(), scope)?;
                    return Ok(tag);
                }
                let report =
                    (self.state.settings.lock()).set_scoped(name, value.as_deref(), scope)?;
                if let Some((n, v)) = report {
                    self.report_setting(n, &v);
                }
                Ok(tag)
            }
            Statement::Show { name } => {
                let value = match name.as_str() {
                    "transaction isolation level" | "transaction_isolation" => {
                        match self.tx.as_ref().map(|t| t.isolation) {
                            Some(Isolation::RepeatableRead) => "repeatable read".to_string(),
                            Some(Isolation::ReadCommitted) => "read committed".to_string(),
                            Some(Isolation::Serializable) => "serializable".to_string(),
                            None => self
                                .state
                                .settings
                                .lock()
                                .get("default_transaction_isolation")?,
                        }
                    }
                    "transaction_read_only" => {
                        let read_only = match &self.tx {
                            Some(t) => t.read_only,
                            None => self.state.settings.lock().txn_defaults().read_only,
                        };
                        (if read_only { "on" } else { "off" }).to_string()
                    }
                    "all" => return Err(PgError::unsupported("SHOW ALL")),
                    other => self.state.settings.lock().get(other)?,
                };
                Ok(Outcome {
                    rows: vec![vec![Value::Text(value)]],
                    tag: "SHOW".into(),
                })
            }
            Statement::LockTables(tables) => {
                if !self.tx.as_ref().is_some_and(|t| t.explicit) {
                    return Err(PgError::new(
                        codes::NO_ACTIVE_SQL_TRANSACTION,
                        "LOCK TABLE can only be used in transaction blocks",
                    ));
                }
                use sql::catalog::Catalog;
                for (schema, name) in tables {
                    if self.shared.catalog.table(schema.as_deref(), name).is_none() {
                        let shown = match schema {
                            Some(s) => format!("{s}.{name}"),
                            None => name.clone(),
                        };
                        return Err(PgError::new(
                            codes::UNDEFINED_TABLE,
                            format!("relation \"{shown}\" does not exist"),
                        ));
                    }
                }
                Ok(Outcome::tag("LOCK TABLE"))
            }
            Statement::Extension(tag) => Ok(Outcome::tag(*tag)),
            Statement::Discard => {
                self.prepared.clear();
                self.portals.clear();
                Ok(Outcome::tag("DISCARD ALL"))
            }
            Statement::Deallocate(None) => {
                self.prepared.clear();
                Ok(Outcome::tag("DEALLOCATE ALL"))
            }
            Statement::Deallocate(Some(name)) => {
                self.prepared.remove(name).ok_or_else(|| {
                    PgError::new(
                        codes::INVALID_SQL_STATEMENT_NAME,
                        format!("prepared statement \"{name}\" does not exist"),
                    )
                })?;
                Ok(Outcome::tag("DEALLOCATE"))
            }
            Statement::Empty => Ok(Outcome::tag("")),
            Statement::Prepare {
                name,
                statement,
                param_types,
            } => {
                self.prepare_sql(name, statement, param_types).await?;
                Ok(Outcome::tag("PREPARE"))
            }
            // Resolved to the prepared statement before it runs (`prepared_execution`).
            Statement::Execute { .. } => Err(PgError::internal("EXECUTE not resolved")),
            Statement::Explain(explained, Some(analyze)) => {
                self.explain_analyze(explained, *analyze, params).await
            }
            Statement::Explain(explained, None) => Ok(Outcome {
                rows: crate::explain::explain(&self.shared, explained, None)
                    .into_iter()
                    .map(|line| vec![Value::Text(line)])
                    .collect(),
                tag: "EXPLAIN".into(),
            }),
            Statement::CreateRole(_)
            | Statement::AlterRole(_)
            | Statement::DropRole { .. }
            | Statement::GrantRole(_) => {
                let (zone, encryption, session_user) = {
                    let settings = self.state.settings.lock();
                    let session_user = settings.get("session_authorization")?;
                    (
                        settings.zone().clone(),
                        settings.password_encryption(),
                        session_user,
                    )
                };
                // Started: its start names the transaction's pending catalog record.
                self.ensure_started().await?;
                let actor = crate::role_ddl::Actor {
                    user: &self.state.current_user,
                    session_user: &session_user,
                    zone: &zone,
                    encryption,
                };
                let t = self.tx.as_mut().expect("ensured above");
                let tag =
                    crate::role_ddl::execute(&self.shared, &mut t.ddl, stmt, &actor, &mut self.out)
                        .await?;
                Ok(Outcome::tag(tag))
            }
            Statement::CreateTable(_)
            | Statement::DropTable { .. }
            | Statement::CreateView(_)
            | Statement::CreateEnum(_)
            | Statement::AddEnumValue(_)
            | Statement::RenameEnumValue(_)
            | Statement::RenameType { .. }
            | Statement::DropType { .. }
            | Statement::DropView { .. }
            | Statement::RenameView { .. }
            | Statement::Comment { .. }
            | Statement::Truncate { .. }
            | Statement::CreateSequence(_)
            | Statement::AlterSequence(_)
            | Statement::DropSequence { .. }
            | Statement::CreateIndex(_)
            | Statement::DropIndex { .. }
            | Statement::Grant(_)
            | Statement::Vacuum { .. } => {
                // Inside a transaction block, the tables TRUNCATE empties are the
                // transaction's until it ends (`Datanode::own_relation`).
                // CREATE INDEX reads the rows, its transaction's own among them.
                // Every DDL but VACUUM runs in a started transaction, whose start names
                // its pending catalog record (`DdlLog`).
                let in_block = self.tx.as_ref().is_some_and(|t| t.explicit);
                let snapshot = match stmt {
                    Statement::Vacuum { .. } => None,
                    _ => Some(self.ensure_started().await?),
                };
                let snapshot = snapshot.filter(|_| match stmt {
                    Statement::Truncate { .. } => in_block,
                    Statement::CreateIndex(_) => true,
                    _ => false,
                });
                self.ensure_transaction();
                let t = self.tx.as_mut().expect("ensured above");
                let rows = t
                    .dn_txn
                    .as_mut()
                    .zip(snapshot)
                    .map(|(txn, snapshot)| crate::ddl::InTxn { txn, snapshot });
                let log = &mut t.ddl;
                let who = crate::ownership::Who::of(&self.shared, &self.state.current_user);
                let tag =
                    crate::ddl::execute(&self.shared, stmt, rows, log, &who, &mut self.out).await?;
                Ok(Outcome::tag(tag))
            }
            Statement::AlterTable(at) => {
                let who = crate::ownership::Who::of(&self.shared, &self.state.current_user);
                crate::ownership::check_statement(&self.shared, &who, stmt)?;
                let shared = self.shared.clone();
                let snapshot = self.ensure_started().await?;
                let view = view(
                    &shared,
                    &self.state,
                    &self.tx,
                    self.state.activity.statement_time(),
                );
                let state = StatementState::new(&self.limits, &shared.spill);
                let eval = crate::alter_table::Evaluation {
                    view: &view,
                    state: &state,
                };
                let t = self.tx.as_mut().expect("started above");
                let txn = t.dn_txn.as_mut().expect("started above");
                let mut rows = crate::ddl::InTxn { txn, snapshot };
                crate::alter_table::execute(
                    &shared,
                    &mut t.ddl,
                    &mut rows,
                    at,
                    eval,
                    &mut self.out,
                )
                .await?;
                Ok(Outcome::tag("ALTER TABLE"))
            }
            Statement::CopyFrom(copy) => self.copy_from(copy).await,
            Statement::CreateTableAs(ctas) => self.create_table_as(ctas, params).await,
            Statement::Query(_)
            | Statement::CopyTo(_)
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_) => self.dml(stmt, params).await,
        }
    }

    /// SELECT / INSERT / UPDATE / DELETE inside the session's transaction.
    pub(super) async fn dml(&mut self, stmt: &Statement, params: &[Value]) -> PgResult<Outcome> {
        self.measured_dml(stmt, params, None).await
    }

    /// `dml`, its operators measured into `measured` (EXPLAIN ANALYZE), which then
    /// returns no rows.
    pub(super) async fn measured_dml(
        &mut self,
        stmt: &Statement,
        params: &[Value],
        measured: Option<&Mutex<NodeMeasures>>,
    ) -> PgResult<Outcome> {
        let snapshot = self.ensure_started().await?;
        self.check_catalog_current().await?;
        if self.tx.as_ref().is_some_and(|t| t.read_only) {
            match stmt {
                Statement::Query(q) if q.locking.is_none() => {}
                // COPY … TO reads, as pg_dump does in its read-only transaction.
                Statement::CopyTo(_) => {}
                Statement::Query(_) => {
                    return Err(PgError::new(
                        codes::READ_ONLY_SQL_TRANSACTION,
                        "cannot execute SELECT FOR UPDATE in a read-only transaction",
                    ))
                }
                _ => {
                    return Err(PgError::new(
                        codes::READ_ONLY_SQL_TRANSACTION,
                        "cannot execute this statement in a read-only transaction",
                    ))
                }
            }
        }
        let shared = self.shared.clone();
        let view = view(
            &shared,
            &self.state,
            &self.tx,
            self.state.activity.statement_time(),
        );
        let txn = self
            .tx
            .as_mut()
            .and_then(|t| t.dn_txn.as_mut())
            .expect("transaction started");
        let mut state = StatementState::new(&self.limits, &shared.spill);
        state.measured = measured;
        let mut dml = crate::dml::Dml {
            dn: &shared.datanodes,
            snapshot,
            params,
            view: &view,
            state: &state,
        };
        let outcome = match stmt {
            Statement::Query(q) if q.locking.is_some() => {
                // A row changed since the snapshot: again at a newer one (READ COMMITTED),
                // keeping the locks taken; each round needs a commit in between.
                let mut rounds = 0;
                let rows = loop {
                    match dml.select_locked(txn, q).await? {
                        Locked::Rows(rows) => break rows,
                        Locked::Changed if rounds < 100 => {
                            rounds += 1;
                            dml.snapshot = shared.gtm.timestamp().await?;
                        }
                        Locked::Changed => {
                            return Err(PgError::new(
                                codes::SERIALIZATION_FAILURE,
                                "could not serialize access due to concurrent update",
                            ))
                        }
                    }
                };
                Outcome {
                    tag: format!("SELECT {}", rows.len()),
                    rows,
                }
            }
            Statement::Query(q) if measured.is_some() => {
                let reader = dml.reader(txn);
                let mut rows = reader.rows(q);
                let mut count = 0;
                while let Some(batch) = rows.next_batch().await? {
                    count += batch.len();
                }
                Outcome::tag(format!("SELECT {count}"))
            }
            Statement::Query(q) => match self.stream_rows.take() {
                Some(formats) => {
                    let reader = dml.reader(txn);
                    let mut rows = reader.rows(q);
                    let encoding = self.encoding;
                    let count = stream(
                        &mut rows,
                        &mut self.stream,
                        &mut self.out,
                        &mut self.unsent,
                        encoding,
                        |r, out| output::data_row(out, r, &q.columns, &formats, &view),
                    )
                    .await?;
                    Outcome {
                        tag: format!("SELECT {count}"),
                        rows: Vec::new(),
                    }
                }
                None => {
                    let rows = dml.reader(txn).query(q).await?;
                    Outcome {
                        tag: format!("SELECT {}", rows.len()),
                        rows,
                    }
                }
            },
            Statement::CopyTo(copy) => {
                let binary = copy.format.kind == sql::copy::CopyKind::Binary;
                let columns = copy.query.columns.len() as i16;
                backend::copy_out_response(&mut self.out, columns, binary);
                let mut writer = CopyWriter::new(&copy.format, &copy.query.columns);
                let mut data = Vec::new();
                writer.header(&mut data);
                if !data.is_empty() {
                    backend::copy_data(&mut self.out, &data);
                }
                let reader = dml.reader(txn);
                let mut rows = reader.rows(&copy.query);
                let encoding = self.encoding;
                let count = stream(
                    &mut rows,
                    &mut self.stream,
                    &mut self.out,
                    &mut self.unsent,
                    encoding,
                    |r, out| {
                        data.clear();
                        writer.row(r, &view, &mut data)?;
                        backend::copy_data(out, &data);
                        Ok(())
                    },
                )
                .await?;
                data.clear();
                writer.trailer(&mut data);
                if !data.is_empty() {
                    backend::copy_data(&mut self.out, &data);
                }
                backend::copy_done(&mut self.out);
                Outcome::tag(format!("COPY {count}"))
            }
            Statement::Insert(ins) => {
                let (rows, n) = dml.insert(txn, ins).await?;
                Outcome {
                    rows,
                    tag: format!("INSERT 0 {n}"),
                }
            }
            Statement::Update(upd) => {
                let (rows, n) = dml.update(txn, upd).await?;
                Outcome {
                    rows,
                    tag: format!("UPDATE {n}"),
                }
            }
            Statement::Delete(del) => {
                let (rows, n) = dml.delete(txn, del).await?;
                Outcome {
                    rows,
                    tag: format!("DELETE {n}"),
                }
            }
            _ => unreachable!("dml() handles queries and DML only"),
        };
        let reports: Vec<_> = std::mem::take(&mut *self.state.reports.lock());
        for (n, v) in reports {
            self.report_setting(n, &v);
        }
        Ok(outcome)
    }
}

/// Writes a query's rows into `out` with `write`, sending `out` to the client whenever it
/// fills, so that a result of any size streams; returns how many rows there were.
async fn stream<W: tokio::io::AsyncWrite + Unpin>(
    rows: &mut QueryRows<'_>,
    client: &mut W,
    out: &mut BytesMut,
    unsent: &mut BytesMut,
    encoding: wire::ClientEncoding,
    mut write: impl FnMut(&Row, &mut BytesMut) -> PgResult<()>,
) -> PgResult<u64> {
    let mut count = 0u64;
    while let Some(batch) = rows.next_batch().await? {
        for r in &batch {
            write(r, out)?;
        }
        count += batch.len() as u64;
        write_out_if_full(client, out, unsent, encoding).await?;
    }
    Ok(count)
}

/// Never completes without a deadline.
async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
