//! One client connection: the session, its message loop and the protocol state machine
//! (dispatch of each message, error recovery to Sync). What a message does lives in the
//! submodules: `simple_query` and `query_cache` (the Query message and its
//! auto-parameterized plan cache), `extended` and `portals` (Parse, Bind, Describe,
//! Execute, Close and the prepared-statement cache), `statement` (running one bound
//! statement), `copy_in` (COPY FROM STDIN) and `transaction` (transaction control).

mod copy_in;
mod create_table_as;
mod explain_analyze;
mod extended;
mod identity;
mod portals;
mod prepare_sql;
mod query_cache;
mod simple_query;
mod statement;
mod transaction;

pub use transaction::Transaction;

use crate::activity::{SessionActivity, SessionStateKind};
use crate::exec::SessionView;
use crate::server::Shared;
use crate::session_io::{self, SessionStream};
use crate::settings::{Settings, StatementLimits};
use bytes::{Buf, BytesMut};
use extended::Prepared;
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult, Severity};
use portals::Portals;
use rustc_hash::{FxHashMap, FxHashSet};
use sql::statement_shape::StatementShape;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use wire::backend::{self, NoticeSeverity, TransactionStatus};
use wire::{decode_message_in, ClientEncoding, FrontendMessage};

/// Largest message a client may send (PostgreSQL allows 1 GB; we bound memory per session).
pub const MAX_MESSAGE_LEN: usize = 64 << 20;
/// Flush the output buffer once it holds this much.
const FLUSH_THRESHOLD: usize = 64 << 10;

/// Bound on the number of cached plans of each kind per executor thread.
const PLAN_CACHE_SIZE: usize = 256;

pub struct SessionState {
    /// The role that logged in (pg_stat_activity's usename).
    pub user: String,
    /// The role statements run as: SET ROLE's, else SET SESSION AUTHORIZATION's, at
    /// first `user` (kept here from the settings, read by every statement).
    pub current_user: String,
    pub database: String,
    pub pid: i32,
    pub settings: Mutex<Settings>,
    pub reports: Mutex<Vec<(&'static str, String)>>,
    /// Warnings raised by functions (pg_cancel_backend of an unknown pid), sent after
    /// the statement.
    pub notices: Mutex<Vec<PgError>>,
    pub sequences: Mutex<crate::sequences::SessionSequences>,
    /// This session's row of pg_stat_activity and its cancel and terminate signals.
    pub activity: Arc<SessionActivity>,
}

pub struct Session<S> {
    shared: Arc<Shared>,
    stream: S,
    inbuf: BytesMut,
    /// Messages written for the client and not yet handed to `write_out`.
    out: BytesMut,
    /// What `write_out` encoded and has not yet written (see there).
    unsent: BytesMut,
    state: SessionState,
    tx: Option<Transaction>,
    /// This session's prepared statements by name (the values shared, see `PREPARED_PLANS`).
    prepared: FxHashMap<String, Arc<Prepared>>,
    portals: Portals,
    /// After an error in extended protocol: discard messages until Sync.
    skip_to_sync: bool,
    /// Whether the client was sent 57P01 (the session was terminated).
    termination_reported: bool,
    /// The running statement's limits (read from the settings as it starts).
    limits: StatementLimits,
    /// Set while a statement runs whose query rows go straight to the client, in these
    /// result formats, as they are produced (not collected into its `Outcome`).
    stream_rows: Option<Vec<i16>>,
    /// client_encoding, as last reported to the client.
    encoding: ClientEncoding,
    /// The session role's OID, as pg_stat_statements records it (found at its first
    /// statement).
    stats_userid: Option<u32>,
    /// Prepared statements (by name) of utility commands whose execution was counted in
    /// pg_stat_statements since their Parse: PostgreSQL 15 counts such a statement's
    /// first execution only (it clears the cached plan's queryId then).
    utility_counted: FxHashSet<String>,
}

impl<S: SessionStream> Session<S> {
    pub fn new(shared: Arc<Shared>, stream: S, inbuf: BytesMut, state: SessionState) -> Self {
        Session {
            shared,
            stream,
            inbuf,
            out: BytesMut::new(),
            unsent: BytesMut::new(),
            state,
            tx: None,
            prepared: FxHashMap::default(),
            portals: Portals::default(),
            skip_to_sync: false,
            termination_reported: false,
            limits: StatementLimits::default(),
            stream_rows: None,
            encoding: ClientEncoding::Utf8,
            stats_userid: None,
            utility_counted: FxHashSet::default(),
        }
    }

    /// Send the post-authentication greeting.
    pub async fn greet(&mut self, secret: i32) -> std::io::Result<()> {
        backend::authentication_ok(&mut self.out);
        let reported = self.state.settings.lock().reported();
        for (name, value) in reported {
            self.report_setting(name, &value);
        }
        backend::backend_key_data(&mut self.out, self.state.pid, secret);
        self.ready_for_query();
        self.flush().await
    }

    /// Sends what is written and gives the output buffer back to the thread.
    async fn flush(&mut self) -> std::io::Result<()> {
        write_out(
            &mut self.stream,
            &mut self.out,
            &mut self.unsent,
            self.encoding,
        )
        .await?;
        session_io::give_back(&mut self.out);
        Ok(())
    }

    /// Binds `parsed`. A table or type this coordinator does not know, or an enum label,
    /// may have been created by another since its last GTM answer: then it asks the
    /// metadata service and, if its catalog was behind (or another session reloaded it
    /// meanwhile), binds again.
    async fn bind_fresh(
        &self,
        parsed: &sql::parse::ParsedStatement,
        declared: &[u32],
    ) -> PgResult<(sql::plan::BoundStatement, Vec<types::DataType>)> {
        let catalog = &self.shared.catalog;
        let version = catalog.version();
        match sql::binder::bind(parsed, catalog, declared) {
            Err(e)
                if may_be_newer(&e)
                    && (catalog.refresh().await? || catalog.version() != version) =>
            {
                sql::binder::bind(parsed, catalog, declared)
            }
            bound => bound,
        }
    }

    fn ready_for_query(&mut self) {
        let status = self.status();
        self.state.activity.idle(match status {
            TransactionStatus::Idle => SessionStateKind::Idle,
            TransactionStatus::InBlock => SessionStateKind::IdleInTransaction,
            TransactionStatus::Failed => SessionStateKind::IdleInTransactionAborted,
        });
        backend::ready_for_query(&mut self.out, status);
    }

    /// A statement starts (a query string, or an Execute): pg_stat_activity shows it.
    fn statement_started(&self, query: &str) {
        let xact_start = self.tx.as_ref().map(|t| t.txn_time);
        self.state.activity.start_statement(query, xact_start);
    }

    /// pg_stat_statements: a statement of `shape` that started at `started` completed,
    /// returning or affecting `rows`.
    fn record_statement(&mut self, shape: &StatementShape, started: Instant, rows: u64) {
        let userid = match self.stats_userid {
            Some(oid) => oid,
            None => {
                let shared = &self.shared;
                let oid = crate::role_ddl::find_in(
                    &shared.catalog,
                    &shared.bootstrap_role,
                    &self.state.user,
                )
                .map_or(0, |r| r.oid);
                *self.stats_userid.insert(oid)
            }
        };
        self.shared.statement_stats.record(
            userid,
            crate::system::POSTGRES_DB_OID,
            shape,
            started.elapsed(),
            rows,
        );
    }

    /// A statement (a query string, or an Execute of `portal`) ended: counted with its
    /// duration in the metrics, and logged with it if it ran at least
    /// log_min_duration_statement, in PostgreSQL's words.
    fn statement_ended(&self, portal: Option<&str>) {
        let activity = &self.state.activity;
        let now = types::datetime::now_timestamp();
        self.shared.cumulative_stats.statement_done(now);
        let micros = now - activity.statement_time();
        let metrics = crate::metrics::metrics();
        metrics.statements.inc();
        metrics
            .statement_duration
            .observe(micros.max(0) as f64 / 1e6);
        let Some(min_ms) = self.limits.log_min_duration_ms else {
            return;
        };
        if micros < min_ms as i64 * 1000 {
            return;
        }
        let ms = micros as f64 / 1000.0;
        let query = activity.query();
        match portal {
            None => {
                tracing::info!(target: "meridian::statement", duration_ms = ms, "duration: {ms:.3} ms  statement: {query}")
            }
            Some(p) => {
                let p = if p.is_empty() { "<unnamed>" } else { p };
                tracing::info!(target: "meridian::statement", duration_ms = ms, "duration: {ms:.3} ms  execute {p}: {query}")
            }
        }
    }

    /// The error that ends a session pg_terminate_backend terminated.
    fn terminated() -> PgError {
        PgError::fatal(
            codes::ADMIN_SHUTDOWN,
            "terminating connection due to administrator command",
        )
    }

    /// ParameterStatus for a setting the client tracks; client_encoding also changes how
    /// this session reads and writes text from here on.
    fn report_setting(&mut self, name: &str, value: &str) {
        backend::parameter_status(&mut self.out, name, value);
        if name == "application_name" {
            self.state.activity.set_application_name(value);
        } else if name == "client_encoding" {
            if let Some((encoding, _)) = ClientEncoding::from_setting(value) {
                self.encoding = encoding;
            }
        }
    }

    fn send_error(&mut self, err: &PgError) {
        crate::metrics::metrics().error(err.code);
        if err.code == codes::DEADLOCK_DETECTED {
            self.shared.cumulative_stats.deadlock();
        }
        self.termination_reported |= err.code == codes::ADMIN_SHUTDOWN;
        backend::error_response(&mut self.out, err);
    }

    fn notice(&mut self, severity: NoticeSeverity, code: &'static str, message: &str) {
        backend::notice_response_with(&mut self.out, severity, &PgError::new(code, message));
    }

    /// Read the next message, or None at end of stream. Output is flushed only before
    /// waiting for input, so a pipelined batch (Bind/Execute/Sync…) costs one write.
    async fn next_message(&mut self) -> PgResult<Option<FrontendMessage>> {
        loop {
            if let Some(m) = decode_message_in(&mut self.inbuf, MAX_MESSAGE_LEN, self.encoding)
                .map_err(|e| e.into_pg_error())?
            {
                if self.out.capacity() == 0 {
                    self.out = session_io::take();
                }
                return Ok(Some(m));
            }
            if self.inbuf.is_empty() {
                // Back to the start of its allocation, so the next read writes to the
                // lines this one used rather than walking all of it. (False, and no
                // allocation, when the buffer is already at its start or is shared.)
                // Given back before the pass end: a session waiting there then holds one
                // buffer, not two, and a pass fits the thread's pool (`MAX_FREE_BUFFERS`)
                // instead of allocating half its buffers afresh.
                let _ = self.inbuf.try_reclaim(self.inbuf.capacity() + 1);
                session_io::give_back(&mut self.inbuf);
            }
            if !self.out.is_empty() {
                crate::executors::end_of_pass().await;
            }
            self.flush()
                .await
                .map_err(|e| PgError::new(codes::CONNECTION_FAILURE, e.to_string()))?;
            let idle_limit = self.idle_in_transaction_limit_ms();
            let read = session_io::read(&mut self.stream, &mut self.inbuf);
            let n = if idle_limit > 0 {
                tokio::time::timeout(std::time::Duration::from_millis(idle_limit), read)
                    .await
                    .map_err(|_| {
                        PgError::new(
                            codes::IDLE_IN_TRANSACTION_SESSION_TIMEOUT,
                            "terminating connection due to idle-in-transaction timeout",
                        )
                    })?
            } else {
                read.await
            }
            .map_err(|e| PgError::new(codes::CONNECTION_FAILURE, e.to_string()))?;
            if n == 0 {
                return Ok(None);
            }
            crate::executors::note_request();
        }
    }

    /// The message loop. Returns when the client terminates or the connection fails.
    pub async fn run(&mut self) {
        loop {
            let next = self.next_message().await;
            // A terminated session's reads end (`SessionRegistry::terminate`).
            if !matches!(next, Ok(Some(_))) && self.state.activity.terminated() {
                break;
            }
            let msg = match next {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => {
                    // Malformed or oversized message: report and end only this connection.
                    let e = PgError {
                        severity: Severity::Fatal,
                        ..e
                    };
                    self.send_error(&e);
                    let _ = self.flush().await;
                    break;
                }
            };
            if matches!(msg, FrontendMessage::Terminate) {
                break;
            }
            if !crate::hot_future::in_hot_block(|| self.dispatch(msg)).await {
                break;
            }
        }
        if self.state.activity.terminated() && !self.termination_reported {
            self.send_error(&Self::terminated());
        }
        let _ = self.flush().await;
        self.end_session().await;
    }

    /// Handle one message; false ends the connection.
    async fn dispatch(&mut self, msg: FrontendMessage) -> bool {
        if self.skip_to_sync && !matches!(msg, FrontendMessage::Sync) {
            return true;
        }
        // Another coordinator's DDL, seen on a GTM answer: bind against it.
        let catalog = if matches!(
            msg,
            FrontendMessage::Query(_)
                | FrontendMessage::Parse { .. }
                | FrontendMessage::Bind { .. }
        ) {
            let seen = self.shared.gtm.metadata_version();
            self.shared.catalog.catch_up(seen).await
        } else {
            Ok(())
        };
        let result = match msg {
            FrontendMessage::Query(sql) => {
                match catalog {
                    Ok(()) => self.simple_query(&sql).await,
                    Err(e) => {
                        self.send_error(&e);
                        self.statement_failed().await;
                    }
                }
                self.statement_ended(None);
                if self.state.activity.terminated() {
                    return false;
                }
                self.ready_for_query();
                return true;
            }
            FrontendMessage::Unreadable {
                simple_query: true,
                error,
            } => {
                self.send_error(&error);
                self.statement_failed().await;
                self.ready_for_query();
                return true;
            }
            FrontendMessage::Unreadable { error, .. } => Err(error),
            _ if catalog.is_err() => catalog,
            FrontendMessage::Parse {
                name,
                query,
                param_types,
            } => self.parse_message(name, &query, param_types).await,
            FrontendMessage::Bind {
                portal,
                statement,
                param_formats,
                params,
                result_formats,
            } => self.bind_message(portal, &statement, &param_formats, params, result_formats),
            FrontendMessage::Describe { kind, name } => self.describe(kind, &name),
            FrontendMessage::Execute { portal, max_rows } => {
                let result = self.execute_message(&portal, max_rows).await;
                self.statement_ended(Some(&portal));
                result
            }
            FrontendMessage::Close { kind, name } => {
                match kind {
                    wire::frontend::DescribeKind::Statement => {
                        self.utility_counted.remove(&name);
                        drop(self.prepared.remove(&name))
                    }
                    wire::frontend::DescribeKind::Portal => drop(self.portals.remove(&name)),
                }
                backend::close_complete(&mut self.out);
                Ok(())
            }
            FrontendMessage::Sync => {
                self.skip_to_sync = false;
                self.end_implicit_transaction().await;
                self.portals.remove("");
                self.ready_for_query();
                return true;
            }
            FrontendMessage::Flush => return true,
            // Stray COPY messages outside COPY are ignored, as PostgreSQL does.
            FrontendMessage::CopyData(_)
            | FrontendMessage::CopyDone
            | FrontendMessage::CopyFail(_) => return true,
            FrontendMessage::Password(_) => Err(PgError::new(
                codes::PROTOCOL_VIOLATION,
                "unexpected password message",
            )),
            FrontendMessage::Terminate => return false,
        };
        if let Err(e) = result {
            let fatal = e.severity == Severity::Fatal;
            self.send_error(&e);
            self.statement_failed().await;
            self.skip_to_sync = true;
            return !fatal;
        }
        true
    }
}

/// Writes the messages in `out` to the client, encoded for it (a large buffer is not
/// kept for an idle session). Cancel-safe: the encoded
/// bytes wait in `unsent`, which each write advances by what it took. A statement ended
/// by a cancel, its timeout or a lost client is dropped wherever it waits, also in the
/// middle of a flush; the rest of that flush stays in `unsent`, and the next one sends
/// it before anything written later (the error), so the client never sees a message
/// cut short or sent twice.
async fn write_out<S: AsyncWrite + Unpin>(
    stream: &mut S,
    out: &mut BytesMut,
    unsent: &mut BytesMut,
    encoding: ClientEncoding,
) -> std::io::Result<()> {
    if !out.is_empty() {
        encoding.encode_messages(out);
        if unsent.is_empty() {
            std::mem::swap(unsent, out);
        } else {
            unsent.extend_from_slice(out);
            out.clear();
        }
    }
    while !unsent.is_empty() {
        let n = stream.write(unsent).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        unsent.advance(n);
    }
    for buf in [out, unsent] {
        if buf.capacity() > 1 << 20 {
            *buf = BytesMut::with_capacity(8 << 10);
        }
    }
    Ok(())
}

/// `write_out` once rows streaming to the client fill `out` past `FLUSH_THRESHOLD`; a
/// failed write is the connection lost.
async fn write_out_if_full<S: AsyncWrite + Unpin>(
    stream: &mut S,
    out: &mut BytesMut,
    unsent: &mut BytesMut,
    encoding: ClientEncoding,
) -> PgResult<()> {
    if out.len() > FLUSH_THRESHOLD {
        write_out(stream, out, unsent, encoding)
            .await
            .map_err(|e| PgError::new(codes::CONNECTION_FAILURE, e.to_string()))?;
    }
    Ok(())
}

/// The session as statements see it (built from disjoint fields so output can be
/// written while it is borrowed).
fn view<'a>(
    shared: &'a Shared,
    state: &'a SessionState,
    tx: &Option<Transaction>,
    statement_time: i64,
) -> SessionView<'a> {
    let settings = state.settings.lock();
    SessionView {
        catalog: &shared.catalog,
        cluster: &shared.cluster,
        settings: &state.settings,
        reports: &state.reports,
        txn_time: tx.as_ref().map_or(statement_time, |t| t.txn_time),
        statement_time,
        backend_pid: state.pid,
        sequences: &shared.sequences,
        sequence_state: &state.sequences,
        user: &state.current_user,
        database: &state.database,
        sessions: &shared.sessions,
        statement_stats: &shared.statement_stats,
        cumulative_stats: &shared.cumulative_stats,
        activity: &state.activity,
        notices: &state.notices,
        zone: settings.zone().clone(),
        encoding: settings.encoding(),
        bootstrap_role: &shared.bootstrap_role,
    }
}

/// Whether binding failed on a catalog object another coordinator may have created: a
/// table, a type or an enum's label.
fn may_be_newer(e: &PgError) -> bool {
    match e.code {
        codes::UNDEFINED_TABLE => true,
        codes::UNDEFINED_OBJECT => e.message.starts_with("type "),
        codes::INVALID_TEXT_REPRESENTATION => e.message.starts_with("invalid input value for enum"),
        _ => false,
    }
}
