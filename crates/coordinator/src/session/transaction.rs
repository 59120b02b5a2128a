//! Transaction control: the transaction a session is in (its datanode transaction,
//! isolation, savepoints), BEGIN/COMMIT/ROLLBACK/SAVEPOINT/SET TRANSACTION, PREPARE
//! TRANSACTION/COMMIT PREPARED/ROLLBACK PREPARED, implicit transactions, failure until
//! the block ends, and the idle-in-transaction timeout.

use super::statement::Outcome;
use super::Session;
use crate::ddl_log::DdlLog;
use crate::session_io::SessionStream;
use datanode_client::{Isolation, PreparedXact, Timestamp};
use distribution::{ClusterSavepoint, ClusterTxn};
use pgerror::{codes, PgError, PgResult};
use sql::plan::{IsolationLevel, Statement};
use wire::backend::{NoticeSeverity, TransactionStatus};

/// The transaction the session is in.
pub struct Transaction {
    pub(super) dn_txn: Option<ClusterTxn>,
    pub(super) explicit: bool,
    pub(super) failed: bool,
    pub(super) isolation: Isolation,
    pub(super) read_only: bool,
    pub(super) txn_time: i64,
    /// Each savepoint with where the DDL log stood when it was set.
    pub(super) savepoints: Vec<(String, ClusterSavepoint, usize)>,
    /// The catalog changes of the transaction's DDL, undone if it rolls back.
    pub(super) ddl: DdlLog,
}

/// PostgreSQL's GIDSIZE: a gid is shorter than this many bytes.
const MAX_GID_LEN: usize = 200;

fn isolation_of(level: IsolationLevel) -> Isolation {
    match level {
        IsolationLevel::ReadCommitted => Isolation::ReadCommitted,
        IsolationLevel::RepeatableRead => Isolation::RepeatableRead,
        IsolationLevel::Serializable => Isolation::Serializable,
    }
}

pub(super) fn in_failed_transaction() -> PgError {
    PgError::new(
        codes::IN_FAILED_SQL_TRANSACTION,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

impl<S: SessionStream> Session<S> {
    /// The transaction status ReadyForQuery reports.
    pub(super) fn status(&self) -> TransactionStatus {
        match &self.tx {
            Some(t) if t.failed => TransactionStatus::Failed,
            Some(t) if t.explicit => TransactionStatus::InBlock,
            _ => TransactionStatus::Idle,
        }
    }

    /// How long the session may wait for its next message (0: no limit): bounded only
    /// inside a transaction block, by idle_in_transaction_session_timeout.
    pub(super) fn idle_in_transaction_limit_ms(&self) -> u64 {
        match self.status() {
            TransactionStatus::Idle => 0,
            _ => {
                self.state
                    .settings
                    .lock()
                    .limits()
                    .idle_in_transaction_timeout_ms
            }
        }
    }

    /// The connection ended: abort whatever transaction it left open.
    pub(super) async fn end_session(&mut self) {
        if let Some(tx) = self.tx.take() {
            self.abort(tx).await;
        }
    }

    /// End of a query string or Sync: commit the implicit transaction, if any.
    pub(super) async fn end_implicit_transaction(&mut self) {
        if self.tx.as_ref().is_some_and(|t| !t.explicit) {
            let tx = self.tx.take().unwrap();
            if let Err(e) = self.commit(tx).await {
                self.send_error(&e);
            }
        }
    }

    /// An error ended the current statement: fail the block, or abort the implicit transaction.
    pub(super) async fn statement_failed(&mut self) {
        match self.tx.take() {
            Some(mut t) if t.explicit => {
                t.failed = true;
                // PostgreSQL undoes the block's SETs as the error aborts it (within a
                // savepoint, those since the savepoint: here they wait for ROLLBACK).
                let undo_settings = t.savepoints.is_empty();
                self.tx = Some(t);
                if undo_settings {
                    self.end_local_settings(false);
                }
            }
            Some(t) => self.abort(t).await,
            None => {}
        }
    }

    /// BEGIN, COMMIT, ROLLBACK, the savepoint statements and SET TRANSACTION.
    /// SET TRANSACTION's modes (and a BEGIN's inside a block): before the first query.
    fn set_transaction_modes(
        &mut self,
        isolation: Option<IsolationLevel>,
        read_only: Option<bool>,
    ) -> PgResult<()> {
        match &mut self.tx {
            Some(t) if t.dn_txn.is_none() => {
                if let Some(i) = isolation {
                    t.isolation = isolation_of(i);
                }
                if let Some(r) = read_only {
                    t.read_only = r;
                }
            }
            Some(_) => {
                return Err(PgError::new(
                    codes::ACTIVE_SQL_TRANSACTION,
                    "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                ))
            }
            None => self.notice(
                NoticeSeverity::Warning,
                codes::NO_ACTIVE_SQL_TRANSACTION,
                "SET TRANSACTION can only be used in transaction blocks",
            ),
        }
        Ok(())
    }

    pub(super) async fn transaction_control(&mut self, stmt: &Statement) -> PgResult<Outcome> {
        match stmt {
            Statement::Begin {
                isolation,
                read_only,
            } => {
                match &mut self.tx {
                    Some(t) if t.explicit => {
                        self.notice(
                            NoticeSeverity::Warning,
                            codes::ACTIVE_SQL_TRANSACTION,
                            "there is already a transaction in progress",
                        );
                        // As PostgreSQL: the modes still apply, as SET TRANSACTION's.
                        if isolation.is_some() || read_only.is_some() {
                            self.set_transaction_modes(*isolation, *read_only)?;
                        }
                    }
                    Some(t) => {
                        t.explicit = true;
                        if let Some(i) = isolation {
                            t.isolation = isolation_of(*i);
                        }
                        t.read_only = read_only.unwrap_or(t.read_only);
                    }
                    None => {
                        let mut t = self.new_transaction(true);
                        t.isolation = isolation.map(isolation_of).unwrap_or(t.isolation);
                        t.read_only = read_only.unwrap_or(t.read_only);
                        self.tx = Some(t);
                    }
                }
                Ok(Outcome::tag("BEGIN"))
            }
            Statement::Commit => match self.tx.take() {
                Some(t) if t.explicit => {
                    let failed = t.failed;
                    if failed {
                        self.abort(t).await;
                        Ok(Outcome::tag("ROLLBACK"))
                    } else {
                        self.commit(t).await?;
                        Ok(Outcome::tag("COMMIT"))
                    }
                }
                other => {
                    self.tx = other;
                    self.notice(
                        NoticeSeverity::Warning,
                        codes::NO_ACTIVE_SQL_TRANSACTION,
                        "there is no transaction in progress",
                    );
                    Ok(Outcome::tag("COMMIT"))
                }
            },
            Statement::Rollback => {
                match self.tx.take() {
                    Some(t) if t.explicit => self.abort(t).await,
                    other => {
                        self.tx = other;
                        self.notice(
                            NoticeSeverity::Warning,
                            codes::NO_ACTIVE_SQL_TRANSACTION,
                            "there is no transaction in progress",
                        );
                    }
                }
                Ok(Outcome::tag("ROLLBACK"))
            }
            Statement::Savepoint(name) => {
                self.require_block("SAVEPOINT")?;
                self.ensure_started().await?;
                let t = self.tx.as_mut().unwrap();
                let sp = t.dn_txn.as_ref().unwrap().savepoint();
                t.savepoints.push((name.clone(), sp, t.ddl.mark()));
                Ok(Outcome::tag("SAVEPOINT"))
            }
            Statement::Release(name) => {
                self.require_block("RELEASE SAVEPOINT")?;
                let t = self.tx.as_mut().unwrap();
                let pos = t
                    .savepoints
                    .iter()
                    .rposition(|(n, ..)| n == name)
                    .ok_or_else(|| no_savepoint(name))?;
                t.savepoints.truncate(pos);
                Ok(Outcome::tag("RELEASE"))
            }
            Statement::RollbackTo(name) => {
                self.require_block("ROLLBACK TO SAVEPOINT")?;
                let t = self.tx.as_mut().unwrap();
                let pos = t
                    .savepoints
                    .iter()
                    .rposition(|(n, ..)| n == name)
                    .ok_or_else(|| no_savepoint(name))?;
                t.savepoints.truncate(pos + 1);
                if let Some(dn) = t.dn_txn.as_mut() {
                    dn.rollback_to(&t.savepoints[pos].1)?;
                }
                t.ddl.rollback_to(&self.shared, t.savepoints[pos].2).await;
                t.failed = false;
                Ok(Outcome::tag("ROLLBACK"))
            }
            Statement::SetTransaction {
                isolation,
                read_only,
            } => {
                self.set_transaction_modes(*isolation, *read_only)?;
                Ok(Outcome::tag("SET"))
            }
            Statement::PrepareTransaction(gid) => self.prepare_transaction(gid).await,
            Statement::CommitPrepared(gid) => {
                self.refuse_in_block("COMMIT PREPARED")?;
                let gtm = &self.shared.gtm;
                self.shared.datanodes.commit_prepared(gid, gtm).await?;
                Ok(Outcome::tag("COMMIT PREPARED"))
            }
            Statement::RollbackPrepared(gid) => {
                self.refuse_in_block("ROLLBACK PREPARED")?;
                let gtm = &self.shared.gtm;
                self.shared.datanodes.rollback_prepared(gid, gtm).await?;
                Ok(Outcome::tag("ROLLBACK PREPARED"))
            }
            _ => unreachable!("transaction_control() handles transaction control only"),
        }
    }

    /// PREPARE TRANSACTION: ends the session's transaction by preparing it under `gid`,
    /// after which the session is idle and anyone may finish it. As in PostgreSQL: with
    /// no transaction it only warns, an implicit one (earlier statements of the query
    /// string) is prepared after the warning, and a failed block is rolled back.
    async fn prepare_transaction(&mut self, gid: &str) -> PgResult<Outcome> {
        let explicit = self.tx.as_ref().map(|t| t.explicit);
        if explicit != Some(true) {
            self.notice(
                NoticeSeverity::Warning,
                codes::NO_ACTIVE_SQL_TRANSACTION,
                "there is no transaction in progress",
            );
            if explicit.is_none() {
                return Ok(Outcome::tag("ROLLBACK"));
            }
        }
        if self.tx.as_ref().is_some_and(|t| t.failed) || gid.len() >= MAX_GID_LEN {
            let t = self.tx.take().expect("checked above");
            let failed = t.failed;
            self.abort(t).await;
            if failed {
                return Ok(Outcome::tag("ROLLBACK"));
            }
            return Err(PgError::new(
                codes::INVALID_PARAMETER_VALUE,
                format!("transaction identifier \"{gid}\" is too long"),
            ));
        }
        // One that did nothing yet still gets a start timestamp and its gid.
        self.ensure_started().await?;
        let t = self.tx.take().expect("started above");
        let (dn, mut ddl) = (t.dn_txn.expect("started above"), t.ddl);
        // PostgreSQL keeps a prepared transaction's SETs, as a commit's.
        self.end_local_settings(true);
        let xact = PreparedXact {
            gid: gid.to_string(),
            start_ts: dn.start_ts(),
            prepared_at: types::datetime::now_timestamp(),
            owner: self.state.current_user.clone(),
            database: self.state.database.clone(),
        };
        // The catalog keeps no prepared state: its DDL stays, whichever way the prepared
        // transaction ends (decision 0038).
        let unrecorded = ddl.unrecord(&self.shared).await;
        let gtm = &self.shared.gtm;
        let prepared = match unrecorded {
            Ok(()) => {
                self.shared
                    .datanodes
                    .prepare_transaction(dn, xact, gtm)
                    .await
            }
            Err(e) => {
                self.shared.datanodes.abort(dn, gtm).await;
                Err(e)
            }
        };
        if let Err(e) = prepared {
            ddl.rollback_to(&self.shared, 0).await;
            return Err(e);
        }
        ddl.commit(&self.shared).await;
        Ok(Outcome::tag("PREPARE TRANSACTION"))
    }

    /// COMMIT/ROLLBACK PREPARED end another transaction, never one the session is in
    /// (explicit or implicit): 25001, as in PostgreSQL.
    fn refuse_in_block(&self, what: &str) -> PgResult<()> {
        match self.tx {
            Some(_) => Err(PgError::new(
                codes::ACTIVE_SQL_TRANSACTION,
                format!("{what} cannot run inside a transaction block"),
            )),
            None => Ok(()),
        }
    }

    fn require_block(&self, what: &str) -> PgResult<()> {
        if self.tx.as_ref().is_some_and(|t| t.explicit) {
            Ok(())
        } else {
            Err(PgError::new(
                codes::NO_ACTIVE_SQL_TRANSACTION,
                format!("{what} can only be used in transaction blocks"),
            ))
        }
    }

    fn new_transaction(&self, explicit: bool) -> Transaction {
        let defaults = self.state.settings.lock().txn_defaults();
        Transaction {
            dn_txn: None,
            explicit,
            failed: false,
            isolation: isolation_of(defaults.isolation),
            read_only: defaults.read_only,
            txn_time: self.state.activity.statement_time(),
            savepoints: Vec::new(),
            ddl: DdlLog::default(),
        }
    }

    /// The transaction a DDL statement runs in (an implicit one if there is none, so
    /// that what it changes commits or rolls back with it).
    pub(super) fn ensure_transaction(&mut self) {
        if self.tx.is_none() {
            self.tx = Some(self.new_transaction(false));
        }
    }

    /// Make sure a transaction with a datanode transaction exists; returns the snapshot
    /// for the next statement (a fresh one per statement under READ COMMITTED).
    pub(super) async fn ensure_started(&mut self) -> PgResult<Timestamp> {
        if self.tx.is_none() {
            self.tx = Some(self.new_transaction(false));
        }
        let t = self.tx.as_mut().unwrap();
        match &t.dn_txn {
            None => {
                let start = self.shared.gtm.begin().await?;
                t.dn_txn = Some(self.shared.datanodes.begin(start, t.isolation));
                t.ddl.set_start(start);
                self.state.activity.transaction_started(start);
                Ok(start)
            }
            Some(dn) if t.isolation.one_snapshot() => Ok(dn.start_ts()),
            Some(_) => self.shared.gtm.timestamp().await,
        }
    }

    /// Called once the statement's GTM answer is in: if that answer carried a metadata
    /// version this coordinator has not loaded, another coordinator's DDL completed
    /// before the statement's snapshot, and the statement was bound without it. The
    /// catalog catches up and the statement fails with `catalog_moved()`, which its
    /// caller answers by binding it again and rerunning it (nothing has run yet).
    pub(super) async fn check_catalog_current(&self) -> PgResult<()> {
        let seen = self.shared.gtm.metadata_version();
        let before = self.shared.catalog.version();
        self.shared.catalog.catch_up(seen).await?;
        if self.shared.catalog.version() == before {
            Ok(())
        } else {
            Err(catalog_moved())
        }
    }

    async fn commit(&mut self, t: Transaction) -> PgResult<()> {
        let committed = self.commit_writes(t).await;
        self.end_local_settings(committed.is_ok());
        committed
    }

    async fn commit_writes(&mut self, t: Transaction) -> PgResult<()> {
        let Transaction {
            dn_txn, mut ddl, ..
        } = t;
        if let Some(dn) = dn_txn {
            let gtm = &self.shared.gtm;
            let committed = match ddl.after_decision(&self.shared) {
                None => self.shared.datanodes.commit(dn, gtm).await,
                Some(after) => self.shared.datanodes.commit_decided(dn, gtm, after).await,
            };
            if let Err(e) = committed {
                crate::metrics::metrics().transactions_rolled_back.inc();
                self.shared.cumulative_stats.transaction_ended(false);
                // An unknown outcome is the resolver's to settle, by the GTM's decision.
                if e.code != codes::TRANSACTION_RESOLUTION_UNKNOWN {
                    ddl.rollback_to(&self.shared, 0).await;
                }
                return Err(e);
            }
        }
        ddl.commit(&self.shared).await;
        crate::metrics::metrics().transactions_committed.inc();
        self.shared.cumulative_stats.transaction_ended(true);
        Ok(())
    }

    async fn abort(&mut self, t: Transaction) {
        self.end_local_settings(false);
        let Transaction {
            dn_txn, mut ddl, ..
        } = t;
        if let Some(dn) = dn_txn {
            self.shared.datanodes.abort(dn, &self.shared.gtm).await;
        }
        ddl.rollback_to(&self.shared, 0).await;
        crate::metrics::metrics().transactions_rolled_back.inc();
        self.shared.cumulative_stats.transaction_ended(false);
    }

    fn end_local_settings(&mut self, committed: bool) {
        let changed = self.state.settings.lock().end_transaction(committed);
        // SET LOCAL ROLE and SET LOCAL SESSION AUTHORIZATION write is_superuser too.
        if changed.iter().any(|(n, _)| *n == "is_superuser") {
            self.state.current_user = self.state.settings.lock().current_role();
        }
        for (n, v) in changed {
            self.report_setting(n, &v);
        }
    }
}

const CATALOG_MOVED: &str = "the catalog changed while the statement started; retry it";

/// A statement bound against a catalog older than its snapshot (40001, so that a client
/// that sees it after the session's own retries retries too).
pub(super) fn catalog_moved() -> PgError {
    PgError::new(codes::SERIALIZATION_FAILURE, CATALOG_MOVED)
}

pub(super) fn is_catalog_moved(e: &PgError) -> bool {
    e.code == codes::SERIALIZATION_FAILURE && e.message == CATALOG_MOVED
}

/// How many times a statement is bound again after `catalog_moved()` before the error
/// reaches the client.
pub(super) const REBIND_ATTEMPTS: usize = 3;

fn no_savepoint(name: &str) -> PgError {
    PgError::new(
        codes::INVALID_SAVEPOINT_SPECIFICATION,
        format!("savepoint \"{name}\" does not exist"),
    )
}
