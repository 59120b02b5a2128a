//! One client connection: the protocol state machine (simple and extended query,
//! pipelining, COPY, error recovery to Sync) and the session's transaction state.

use crate::copy::CopyParser;
use crate::exec::{Row, SessionView, StatementState};
use crate::output;
use crate::plan_cache::PlanCache;
use crate::server::Shared;
use crate::session_io::{self, SessionStream};
use crate::settings::{Settings, StatementLimits};
use bytes::BytesMut;
use datanode_client::{DatanodeTxn, Isolation, Savepoint, Timestamp};
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult, Severity};
use rustc_hash::FxHashMap;
use sql::binder::bind;
use sql::normalize::{normalize, parse_normalized, Normalized};
use sql::parse::{parse, parse_statement, split_statements, ParsedStatement};
use sql::plan::{IsolationLevel, OutputColumn, Statement};
use std::cell::RefCell;
use std::sync::Arc;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use types::{DataType, Value};
use wire::backend::{self, NoticeSeverity, TransactionStatus};
use wire::{decode_message, FrontendMessage};

/// Largest message a client may send (PostgreSQL allows 1 GB; we bound memory per session).
pub const MAX_MESSAGE_LEN: usize = 64 << 20;
/// Flush the output buffer once it holds this much.
const FLUSH_THRESHOLD: usize = 64 << 10;

/// A statement prepared by Parse (or the unnamed one).
struct Prepared {
    parsed: Option<ParsedStatement>,
    declared_types: Vec<u32>,
    bound: Arc<Statement>,
    param_types: Vec<DataType>,
    catalog_version: u64,
    /// `bound`'s RowDescription (or NoData) with every column in text format, encoded
    /// once: libpq describes the portal at every execution of a prepared statement.
    text_description: bytes::Bytes,
}

impl Prepared {
    fn new(
        parsed: Option<ParsedStatement>,
        declared_types: Vec<u32>,
        bound: Statement,
        param_types: Vec<DataType>,
        catalog_version: u64,
    ) -> Prepared {
        let mut text_description = BytesMut::new();
        describe_columns(&mut text_description, &bound.output_columns(), &[]);
        Prepared {
            parsed,
            declared_types,
            bound: Arc::new(bound),
            param_types,
            catalog_version,
            text_description: text_description.freeze(),
        }
    }
}

/// RowDescription of `columns` in `formats`, or NoData when there are none.
fn describe_columns(out: &mut BytesMut, columns: &[OutputColumn], formats: &[i16]) {
    if columns.is_empty() {
        backend::no_data(out);
    } else {
        output::row_description(out, columns, formats);
    }
}

/// A cached plan for auto-parameterized simple-query statements (see `sql::normalize`),
/// keyed by `simple_cache_key`.
enum SimplePlan {
    /// The normalized text, bound with the literals' types as declared parameter types.
    Bound {
        /// Kept to bind again after DDL.
        parsed: Box<ParsedStatement>,
        bound: Arc<Statement>,
        param_types: Vec<DataType>,
        catalog_version: u64,
    },
    /// Not cacheable: statements with this key take the ordinary path. With a catalog
    /// version, the key failed to bind then and is retried after DDL; without one it can
    /// never be cached (it does not parse, or binds to something other than DML/queries).
    Uncacheable { catalog_version: Option<u64> },
}

/// Bound on the number of cached plans of each kind per executor thread.
const PLAN_CACHE_SIZE: usize = 256;

thread_local! {
    /// Prepared statements by `prepared_cache_key`, shared by this thread's sessions.
    static PREPARED_PLANS: RefCell<PlanCache<Prepared>> = RefCell::new(PlanCache::new(PLAN_CACHE_SIZE));
    /// Auto-parameterized simple-query plans by `simple_cache_key`, shared likewise.
    static SIMPLE_PLANS: RefCell<PlanCache<SimplePlan>> = RefCell::new(PlanCache::new(PLAN_CACHE_SIZE));
}

/// The prepared-statement cache key: the text plus the declared parameter types (a
/// query text cannot contain NUL).
fn prepared_cache_key(query: &str, param_types: &[u32]) -> String {
    use std::fmt::Write;
    let mut key = String::with_capacity(query.len() + 1 + 8 * param_types.len());
    key.push_str(query);
    key.push('\0');
    for oid in param_types {
        let _ = write!(key, "{oid},");
    }
    key
}

/// The cache key: the normalized text plus the literals' kinds (`aid = 5` and
/// `aid = 5000000000` share the text but bind their parameter as int4 vs int8).
fn simple_cache_key(norm: &Normalized) -> String {
    let mut key = String::with_capacity(norm.key.len() + 1 + norm.literals.len());
    key.push_str(&norm.key);
    key.push('\0');
    key.extend(norm.literals.iter().map(|(_, kind)| kind.code()));
    key
}

fn cache_simple_plan(key: String, plan: SimplePlan) -> Arc<SimplePlan> {
    SIMPLE_PLANS.with(|c| c.borrow_mut().insert(key, plan))
}

/// One statement of a simple query, parsed (or found in the plan cache) before any runs.
enum SimpleStep<'a> {
    /// The ordinary path: the statement's own text, parsed; bound when it runs.
    Plain(ParsedStatement),
    /// Auto-parameterized: the cache entry, or the parsed normalized text on a miss.
    Auto {
        text: &'a str,
        norm: Normalized,
        cache_key: String,
        found: AutoPlan,
    },
}

enum AutoPlan {
    Cached(Arc<SimplePlan>),
    Parsed(Box<ParsedStatement>),
}

struct Portal {
    bound: Arc<Statement>,
    /// Set when the portal runs its prepared statement's own plan with every column in
    /// text format: that statement's `text_description` then describes the portal.
    described_by: Option<Arc<Prepared>>,
    params: Vec<Value>,
    result_formats: Vec<i16>,
    /// Rows produced but not yet sent (after an Execute with a row limit).
    pending: Option<(std::collections::VecDeque<Row>, String)>,
}

/// The session's portals. Drivers run nearly every statement through the unnamed portal
/// (Bind, Describe, Execute, then Sync closes it): it has its own slot, so those four
/// steps touch no map (with 1,000 sessions, each map is memory gone cold between two
/// statements of its session).
#[derive(Default)]
struct Portals {
    unnamed: Option<Portal>,
    named: FxHashMap<String, Portal>,
}

impl Portals {
    fn insert(&mut self, name: String, portal: Portal) {
        if name.is_empty() {
            self.unnamed = Some(portal);
        } else {
            self.named.insert(name, portal);
        }
    }

    fn get(&self, name: &str) -> Option<&Portal> {
        if name.is_empty() {
            self.unnamed.as_ref()
        } else {
            self.named.get(name)
        }
    }

    fn remove(&mut self, name: &str) -> Option<Portal> {
        if name.is_empty() {
            self.unnamed.take()
        } else {
            self.named.remove(name)
        }
    }

    fn clear(&mut self) {
        self.unnamed = None;
        self.named.clear();
    }
}

/// The transaction the session is in.
pub struct Transaction {
    dn_txn: Option<DatanodeTxn>,
    explicit: bool,
    failed: bool,
    isolation: Isolation,
    read_only: bool,
    txn_time: i64,
    savepoints: Vec<(String, Savepoint)>,
}

pub struct SessionState {
    pub user: String,
    pub database: String,
    pub pid: i32,
    pub settings: Mutex<Settings>,
    pub reports: Mutex<Vec<(&'static str, String)>>,
}

pub struct Session<S> {
    shared: Arc<Shared>,
    stream: S,
    inbuf: BytesMut,
    out: BytesMut,
    state: SessionState,
    tx: Option<Transaction>,
    /// This session's prepared statements by name (the values shared, see `PREPARED_PLANS`).
    prepared: FxHashMap<String, Arc<Prepared>>,
    portals: Portals,
    /// After an error in extended protocol: discard messages until Sync.
    skip_to_sync: bool,
    cancel: Arc<tokio::sync::Notify>,
    /// The running statement's limits (read from the settings as it starts).
    limits: StatementLimits,
    /// Set while a statement runs whose query rows go straight to the client, in these
    /// result formats, as they are produced (not collected into its `Outcome`).
    stream_rows: Option<Vec<i16>>,
}

/// Result of running one statement.
struct Outcome {
    rows: Vec<Row>,
    tag: String,
}

impl Outcome {
    fn tag(tag: impl Into<String>) -> Self {
        Outcome {
            rows: Vec::new(),
            tag: tag.into(),
        }
    }
}

fn isolation_of(level: IsolationLevel) -> Isolation {
    match level {
        IsolationLevel::ReadCommitted => Isolation::ReadCommitted,
        IsolationLevel::RepeatableRead => Isolation::RepeatableRead,
    }
}

fn in_failed_transaction() -> PgError {
    PgError::new(
        codes::IN_FAILED_SQL_TRANSACTION,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

impl<S: SessionStream> Session<S> {
    pub fn new(
        shared: Arc<Shared>,
        stream: S,
        inbuf: BytesMut,
        state: SessionState,
        cancel: Arc<tokio::sync::Notify>,
    ) -> Self {
        Session {
            shared,
            stream,
            inbuf,
            out: BytesMut::new(),
            state,
            tx: None,
            prepared: FxHashMap::default(),
            portals: Portals::default(),
            skip_to_sync: false,
            cancel,
            limits: StatementLimits::default(),
            stream_rows: None,
        }
    }

    /// Send the post-authentication greeting.
    pub async fn greet(&mut self, secret: i32) -> std::io::Result<()> {
        backend::authentication_ok(&mut self.out);
        for (name, value) in self.state.settings.lock().reported() {
            backend::parameter_status(&mut self.out, name, &value);
        }
        backend::backend_key_data(&mut self.out, self.state.pid, secret);
        self.ready_for_query();
        self.flush().await
    }

    /// Sends what is written and gives the output buffer back to the thread.
    async fn flush(&mut self) -> std::io::Result<()> {
        write_out(&mut self.stream, &mut self.out).await?;
        session_io::give_back(&mut self.out);
        Ok(())
    }

    fn status(&self) -> TransactionStatus {
        match &self.tx {
            Some(t) if t.failed => TransactionStatus::Failed,
            Some(t) if t.explicit => TransactionStatus::InBlock,
            _ => TransactionStatus::Idle,
        }
    }

    fn ready_for_query(&mut self) {
        let status = self.status();
        backend::ready_for_query(&mut self.out, status);
    }

    fn send_error(&mut self, err: &PgError) {
        backend::error_response(&mut self.out, err);
    }

    fn notice(&mut self, severity: NoticeSeverity, code: &'static str, message: &str) {
        backend::notice_response_with(&mut self.out, severity, &PgError::new(code, message));
    }

    /// Read the next message, or None at end of stream. Output is flushed only before
    /// waiting for input, so a pipelined batch (Bind/Execute/Sync…) costs one write.
    async fn next_message(&mut self) -> PgResult<Option<FrontendMessage>> {
        loop {
            if let Some(m) =
                decode_message(&mut self.inbuf, MAX_MESSAGE_LEN).map_err(|e| e.into_pg_error())?
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
            let idle_limit = match self.status() {
                TransactionStatus::Idle => 0,
                _ => {
                    self.state
                        .settings
                        .lock()
                        .limits()
                        .idle_in_transaction_timeout_ms
                }
            };
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
            let msg = match self.next_message().await {
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
        let _ = self.flush().await;
        self.end_session().await;
    }

    async fn end_session(&mut self) {
        if let Some(tx) = self.tx.take() {
            self.abort(tx).await;
        }
    }

    /// Handle one message; false ends the connection.
    async fn dispatch(&mut self, msg: FrontendMessage) -> bool {
        if self.skip_to_sync && !matches!(msg, FrontendMessage::Sync) {
            return true;
        }
        let result = match msg {
            FrontendMessage::Query(sql) => {
                self.simple_query(&sql).await;
                self.ready_for_query();
                return true;
            }
            FrontendMessage::Parse {
                name,
                query,
                param_types,
            } => self.parse_message(name, &query, param_types),
            FrontendMessage::Bind {
                portal,
                statement,
                param_formats,
                params,
                result_formats,
            } => self.bind_message(portal, &statement, &param_formats, params, result_formats),
            FrontendMessage::Describe { kind, name } => self.describe(kind, &name),
            FrontendMessage::Execute { portal, max_rows } => {
                self.execute_message(&portal, max_rows).await
            }
            FrontendMessage::Close { kind, name } => {
                match kind {
                    wire::frontend::DescribeKind::Statement => drop(self.prepared.remove(&name)),
                    wire::frontend::DescribeKind::Portal => drop(self.portals.remove(&name)),
                }
                backend::close_complete(&mut self.out);
                Ok(())
            }
            FrontendMessage::Sync => {
                self.skip_to_sync = false;
                if self.tx.as_ref().is_some_and(|t| !t.explicit) {
                    let tx = self.tx.take().unwrap();
                    if let Err(e) = self.commit(tx).await {
                        self.send_error(&e);
                    }
                }
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

    /// An error ended the current statement: fail the block, or abort the implicit transaction.
    async fn statement_failed(&mut self) {
        match self.tx.take() {
            Some(mut t) if t.explicit => {
                t.failed = true;
                self.tx = Some(t);
            }
            Some(t) => self.abort(t).await,
            None => {}
        }
    }

    // ------------------------------------------------------------ simple query

    async fn simple_query(&mut self, sql: &str) {
        // Parse every statement before running any (a syntax error anywhere runs nothing).
        let texts = split_statements(sql);
        if texts.is_empty() {
            backend::empty_query_response(&mut self.out);
            return;
        }
        let mut steps = Vec::with_capacity(texts.len());
        for text in texts {
            match self.simple_step(text) {
                Ok(step) => steps.push(step),
                Err(e) => {
                    self.send_error(&e);
                    self.statement_failed().await;
                    return;
                }
            }
        }
        let count = steps.len();
        for (i, step) in steps.into_iter().enumerate() {
            let ends_failed = matches!(&step, SimpleStep::Plain(p) if p.ends_failed_transaction());
            let result = if self.tx.as_ref().is_some_and(|t| t.failed) && !ends_failed {
                Err(in_failed_transaction())
            } else {
                match step {
                    SimpleStep::Plain(parsed) => self.run_simple_parsed(&parsed).await,
                    SimpleStep::Auto {
                        text,
                        norm,
                        cache_key,
                        found,
                    } => self.run_simple_auto(text, norm, cache_key, found).await,
                }
            };
            if let Err(e) = result {
                self.send_error(&e);
                self.statement_failed().await;
                return;
            }
            if self.out.len() > FLUSH_THRESHOLD && i + 1 < count && self.flush().await.is_err() {
                return;
            }
        }
        // A query string outside a block is one implicit transaction.
        if self.tx.as_ref().is_some_and(|t| !t.explicit) {
            let tx = self.tx.take().unwrap();
            if let Err(e) = self.commit(tx).await {
                self.send_error(&e);
            }
        }
    }

    /// Parse one statement of a simple query, or find its auto-parameterized plan.
    fn simple_step<'a>(&mut self, text: &'a str) -> PgResult<SimpleStep<'a>> {
        let Some(norm) = normalize(text) else {
            return Ok(SimpleStep::Plain(parse_statement(text)?));
        };
        let cache_key = simple_cache_key(&norm);
        let found = match SIMPLE_PLANS.with(|c| c.borrow().get(&cache_key)) {
            Some(p) => match *p {
                SimplePlan::Bound { .. } => AutoPlan::Cached(p),
                SimplePlan::Uncacheable {
                    catalog_version: None,
                } => return Ok(SimpleStep::Plain(parse_statement(text)?)),
                SimplePlan::Uncacheable {
                    catalog_version: Some(v),
                } if v == self.shared.catalog.version() => {
                    return Ok(SimpleStep::Plain(parse_statement(text)?))
                }
                // It failed to bind before DDL since: try again.
                SimplePlan::Uncacheable { .. } => match parse_normalized(text, &norm) {
                    Some(parsed) => AutoPlan::Parsed(Box::new(parsed)),
                    None => return Ok(SimpleStep::Plain(parse_statement(text)?)),
                },
            },
            None => match parse_normalized(text, &norm) {
                Some(parsed) => AutoPlan::Parsed(Box::new(parsed)),
                None => {
                    cache_simple_plan(
                        cache_key,
                        SimplePlan::Uncacheable {
                            catalog_version: None,
                        },
                    );
                    return Ok(SimpleStep::Plain(parse_statement(text)?));
                }
            },
        };
        Ok(SimpleStep::Auto {
            text,
            norm,
            cache_key,
            found,
        })
    }

    /// The ordinary simple-query path: bind the statement's own text and run it.
    async fn run_simple_parsed(&mut self, parsed: &ParsedStatement) -> PgResult<()> {
        let (bound, _) = bind(parsed, &self.shared.catalog, &[])?;
        self.run_simple(&bound, &[]).await
    }

    /// Run an auto-parameterized statement with its literals as parameters, binding and
    /// caching its normalized text first if needed. Whenever the normalized text does not
    /// bind (to a query or DML, with the literals' own types), the statement takes the
    /// ordinary path, so that errors are reported exactly as they are without the cache.
    async fn run_simple_auto(
        &mut self,
        text: &str,
        norm: Normalized,
        cache_key: String,
        found: AutoPlan,
    ) -> PgResult<()> {
        let version = self.shared.catalog.version();
        let plan = match found {
            AutoPlan::Cached(p) if matches!(*p, SimplePlan::Bound { catalog_version, .. } if catalog_version == version) => {
                Some(p)
            }
            AutoPlan::Cached(p) => match &*p {
                // DDL since it was bound: bind again.
                SimplePlan::Bound { parsed, .. } => {
                    self.bind_simple_plan(cache_key, parsed.clone(), &norm, version)
                }
                SimplePlan::Uncacheable { .. } => None,
            },
            AutoPlan::Parsed(parsed) => self.bind_simple_plan(cache_key, parsed, &norm, version),
        };
        let Some(plan) = plan else {
            // The original text is parsed only now, after the statements before it ran.
            // It tokenizes like the normalized text that parsed (parse_normalized checks
            // that), so a syntax error here, which would have stopped the whole query
            // string before anything ran, is not a practical concern.
            return self.run_simple_parsed(&parse_statement(text)?).await;
        };
        let SimplePlan::Bound {
            bound, param_types, ..
        } = &*plan
        else {
            unreachable!("only bound plans are returned")
        };
        let params = norm
            .literals
            .iter()
            .zip(param_types)
            .map(|((literal, _), ty)| types::io::from_text(literal, ty))
            .collect::<PgResult<Vec<Value>>>()?;
        self.run_simple(bound, &params).await
    }

    /// Bind a normalized statement and cache the result (a plan, or "uncacheable").
    fn bind_simple_plan(
        &mut self,
        cache_key: String,
        parsed: Box<ParsedStatement>,
        norm: &Normalized,
        version: u64,
    ) -> Option<Arc<SimplePlan>> {
        let declared: Vec<u32> = norm
            .literals
            .iter()
            .map(|(_, kind)| kind.type_oid())
            .collect();
        let entry = match bind(&parsed, &self.shared.catalog, &declared) {
            Ok((bound, types)) => {
                let usable = matches!(
                    bound,
                    Statement::Query(_)
                        | Statement::Insert(_)
                        | Statement::Update(_)
                        | Statement::Delete(_)
                ) && types.len() == norm.literals.len()
                    && types
                        .iter()
                        .zip(&norm.literals)
                        .all(|(ty, (_, kind))| *ty == kind.data_type());
                if usable {
                    SimplePlan::Bound {
                        parsed,
                        bound: Arc::new(bound),
                        param_types: types,
                        catalog_version: version,
                    }
                } else {
                    SimplePlan::Uncacheable {
                        catalog_version: None,
                    }
                }
            }
            // Possibly a missing table or column that DDL may yet create.
            Err(_) => SimplePlan::Uncacheable {
                catalog_version: Some(version),
            },
        };
        let plan = cache_simple_plan(cache_key, entry);
        matches!(*plan, SimplePlan::Bound { .. }).then_some(plan)
    }

    /// Run one bound statement of a simple query: RowDescription, DataRows in text
    /// format, CommandComplete.
    async fn run_simple(&mut self, bound: &Statement, params: &[Value]) -> PgResult<()> {
        let columns = bound.output_columns();
        let returning = matches!(
            bound,
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)
        );
        if !columns.is_empty() && !returning {
            output::row_description(&mut self.out, &columns, &[]);
        }
        self.stream_rows = Some(Vec::new());
        let outcome = self.run_statement(bound, params).await;
        self.stream_rows = None;
        let outcome = outcome?;
        if returning && !columns.is_empty() {
            output::row_description(&mut self.out, &columns, &[]);
        }
        self.send_rows(&outcome.rows, &columns, &[]).await?;
        backend::command_complete(&mut self.out, &outcome.tag);
        Ok(())
    }

    async fn send_rows(
        &mut self,
        rows: &[Row],
        columns: &[OutputColumn],
        formats: &[i16],
    ) -> PgResult<()> {
        let view = view(
            &self.shared,
            &self.state,
            &self.tx,
            types::datetime::now_timestamp(),
        );
        for r in rows {
            output::data_row(&mut self.out, r, columns, formats, &view);
            if self.out.len() > FLUSH_THRESHOLD {
                write_out(&mut self.stream, &mut self.out)
                    .await
                    .map_err(|e| PgError::new(codes::CONNECTION_FAILURE, e.to_string()))?;
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------ extended query

    fn parse_message(&mut self, name: String, query: &str, param_types: Vec<u32>) -> PgResult<()> {
        if !name.is_empty() && self.prepared.contains_key(&name) {
            return Err(PgError::new(
                codes::DUPLICATE_PREPARED_STATEMENT,
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        let key = prepared_cache_key(query, &param_types);
        let version = self.shared.catalog.version();
        let in_failed = self.tx.as_ref().is_some_and(|t| t.failed);
        let prepared = match PREPARED_PLANS.with(|c| c.borrow().get(&key)) {
            Some(p) if p.catalog_version == version => {
                if in_failed
                    && !p
                        .parsed
                        .as_ref()
                        .is_none_or(ParsedStatement::ends_failed_transaction)
                {
                    return Err(in_failed_transaction());
                }
                p
            }
            _ => {
                let prepared = self.prepare(query, param_types, version, in_failed)?;
                PREPARED_PLANS.with(|c| c.borrow_mut().insert(key, prepared))
            }
        };
        self.prepared.insert(name, prepared);
        backend::parse_complete(&mut self.out);
        Ok(())
    }

    /// Parse and bind a statement for Parse. As in PostgreSQL, a failed transaction refuses
    /// all but an empty statement or one that ends the block, before binding.
    fn prepare(
        &self,
        query: &str,
        param_types: Vec<u32>,
        version: u64,
        in_failed: bool,
    ) -> PgResult<Prepared> {
        let mut statements = parse(query)?;
        if statements.len() > 1 {
            return Err(PgError::new(
                codes::SYNTAX_ERROR,
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        Ok(match statements.pop() {
            None => Prepared::new(None, param_types, Statement::Empty, Vec::new(), version),
            Some(parsed) => {
                if in_failed && !parsed.ends_failed_transaction() {
                    return Err(in_failed_transaction());
                }
                let (bound, types) = bind(&parsed, &self.shared.catalog, &param_types)?;
                Prepared::new(Some(parsed), param_types, bound, types, version)
            }
        })
    }

    /// The prepared statement's plan, bound again if DDL changed the catalog since.
    fn current_plan(&self, p: &Prepared) -> PgResult<Arc<Statement>> {
        if p.catalog_version == self.shared.catalog.version() {
            return Ok(p.bound.clone());
        }
        match &p.parsed {
            Some(parsed) => {
                let (bound, types) = bind(parsed, &self.shared.catalog, &p.declared_types)?;
                if types != p.param_types {
                    return Err(PgError::new(
                        codes::FEATURE_NOT_SUPPORTED,
                        "cached plan must not change result type",
                    ));
                }
                Ok(Arc::new(bound))
            }
            None => Ok(Arc::new(Statement::Empty)),
        }
    }

    fn bind_message(
        &mut self,
        portal: String,
        statement: &str,
        param_formats: &[i16],
        params: Vec<Option<bytes::Bytes>>,
        result_formats: Vec<i16>,
    ) -> PgResult<()> {
        let prepared = self.prepared.get(statement).cloned().ok_or_else(|| {
            PgError::new(
                codes::INVALID_SQL_STATEMENT_NAME,
                format!("prepared statement \"{statement}\" does not exist"),
            )
        })?;
        if params.len() != prepared.param_types.len() {
            return Err(PgError::new(
                codes::PROTOCOL_VIOLATION,
                format!(
                    "bind message supplies {} parameters, but prepared statement \"{statement}\" requires {}",
                    params.len(),
                    prepared.param_types.len()
                ),
            ));
        }
        if param_formats.len() > 1 && param_formats.len() != params.len() {
            return Err(PgError::new(
                codes::PROTOCOL_VIOLATION,
                format!(
                    "bind message has {} parameter formats but {} parameters",
                    param_formats.len(),
                    params.len()
                ),
            ));
        }
        if self.tx.as_ref().is_some_and(|t| t.failed) && !prepared.bound.ends_failed_transaction() {
            return Err(in_failed_transaction());
        }
        let mut values = Vec::with_capacity(params.len());
        for (i, p) in params.iter().enumerate() {
            let ty = &prepared.param_types[i];
            let format = wire::frontend::param_format(param_formats, params.len(), i).unwrap_or(0);
            values.push(match p {
                None => Value::Null,
                Some(bytes) if format == 1 => types::io::from_binary(bytes, ty)?,
                Some(bytes) => {
                    let text = std::str::from_utf8(bytes).map_err(|_| {
                        PgError::new(
                            codes::CHARACTER_NOT_IN_REPERTOIRE,
                            "invalid byte sequence for encoding \"UTF8\"",
                        )
                    })?;
                    types::io::from_text(text, ty)?
                }
            });
        }
        let bound = self.current_plan(&prepared)?;
        output::validate_formats(&result_formats, bound.output_columns().len())?;
        let described_by = (Arc::ptr_eq(&bound, &prepared.bound)
            && result_formats.iter().all(|f| *f == 0))
        .then_some(prepared);
        self.portals.insert(
            portal,
            Portal {
                bound,
                described_by,
                params: values,
                result_formats,
                pending: None,
            },
        );
        backend::bind_complete(&mut self.out);
        Ok(())
    }

    fn describe(&mut self, kind: wire::frontend::DescribeKind, name: &str) -> PgResult<()> {
        match kind {
            wire::frontend::DescribeKind::Statement => {
                let p = self.prepared.get(name).cloned().ok_or_else(|| {
                    PgError::new(
                        codes::INVALID_SQL_STATEMENT_NAME,
                        format!("prepared statement \"{name}\" does not exist"),
                    )
                })?;
                let oids: Vec<u32> = p.param_types.iter().map(DataType::oid).collect();
                backend::parameter_description(&mut self.out, &oids);
                let plan = self.current_plan(&p)?;
                if Arc::ptr_eq(&plan, &p.bound) {
                    self.out.extend_from_slice(&p.text_description);
                } else {
                    describe_columns(&mut self.out, &plan.output_columns(), &[]);
                }
            }
            wire::frontend::DescribeKind::Portal => {
                let p = self.portals.get(name).ok_or_else(|| {
                    PgError::new(
                        codes::INVALID_CURSOR_NAME,
                        format!("portal \"{name}\" does not exist"),
                    )
                })?;
                match &p.described_by {
                    Some(prepared) => self.out.extend_from_slice(&prepared.text_description),
                    None => describe_columns(
                        &mut self.out,
                        &p.bound.output_columns(),
                        &p.result_formats,
                    ),
                }
            }
        }
        Ok(())
    }

    async fn execute_message(&mut self, name: &str, max_rows: i32) -> PgResult<()> {
        let mut portal = self.portals.remove(name).ok_or_else(|| {
            PgError::new(
                codes::INVALID_CURSOR_NAME,
                format!("portal \"{name}\" does not exist"),
            )
        })?;
        if matches!(*portal.bound, Statement::Empty) {
            backend::empty_query_response(&mut self.out);
            return Ok(());
        }
        let columns = portal.bound.output_columns();
        let (mut rows, tag) = match portal.pending.take() {
            Some(p) => p,
            None => {
                if self.tx.as_ref().is_some_and(|t| t.failed)
                    && !portal.bound.ends_failed_transaction()
                {
                    return Err(in_failed_transaction());
                }
                if max_rows <= 0 {
                    self.stream_rows = Some(portal.result_formats.clone());
                }
                let outcome = self.run_statement(&portal.bound, &portal.params).await;
                self.stream_rows = None;
                let outcome = outcome?;
                (outcome.rows.into(), outcome.tag)
            }
        };
        let limit = if max_rows <= 0 {
            usize::MAX
        } else {
            max_rows as usize
        };
        let view_formats = portal.result_formats.clone();
        let mut sent = 0;
        {
            let view = view(
                &self.shared,
                &self.state,
                &self.tx,
                types::datetime::now_timestamp(),
            );
            while sent < limit {
                let Some(r) = rows.pop_front() else { break };
                output::data_row(&mut self.out, &r, &columns, &view_formats, &view);
                sent += 1;
                if self.out.len() > FLUSH_THRESHOLD {
                    write_out(&mut self.stream, &mut self.out)
                        .await
                        .map_err(|e| PgError::new(codes::CONNECTION_FAILURE, e.to_string()))?;
                }
            }
        }
        if rows.is_empty() {
            backend::command_complete(&mut self.out, &tag);
        } else {
            backend::portal_suspended(&mut self.out);
            portal.pending = Some((rows, tag));
            self.portals.insert(name.to_string(), portal);
        }
        Ok(())
    }

    // ------------------------------------------------------------ execution

    /// Run one bound statement, honouring cancel requests, statement_timeout and a
    /// client that went away. `biased`: the statement is polled first, and the other
    /// branches only while it waits (a lock, the GTM, the journal, or a yield of a long
    /// operator), so the many statements that finish in their first poll never register
    /// with the session's `Notify` (its lock, twice) nor start a timer. No cancel is
    /// missed: a `Notified` sees every `notify_waiters` from its creation on, polled or
    /// not.
    async fn run_statement(&mut self, stmt: &Statement, params: &[Value]) -> PgResult<Outcome> {
        self.limits = self.state.settings.lock().limits();
        let timeout = self.limits.statement_timeout_ms;
        let deadline = (timeout > 0)
            .then(|| tokio::time::Instant::now() + std::time::Duration::from_millis(timeout));
        let client = self.stream.raw_fd();
        let cancel = self.cancel.clone();
        let notified = cancel.notified();
        tokio::pin!(notified);
        tokio::select! {
            biased;
            r = self.execute(stmt, params) => r,
            _ = &mut notified => Err(PgError::new(codes::QUERY_CANCELED, "canceling statement due to user request")),
            _ = until(deadline) => Err(PgError::new(codes::QUERY_CANCELED, "canceling statement due to statement timeout")),
            _ = session_io::client_gone(client) => Err(PgError::new(codes::CONNECTION_FAILURE, "connection to client lost")),
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
                self.shared.datanode.apply_increments(dn).await?;
            }
        }
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
                    }
                    Some(t) => {
                        t.explicit = true;
                        if let Some(i) = isolation {
                            t.isolation = isolation_of(*i);
                        }
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
                t.savepoints.push((name.clone(), sp));
                Ok(Outcome::tag("SAVEPOINT"))
            }
            Statement::Release(name) => {
                self.require_block("RELEASE SAVEPOINT")?;
                let t = self.tx.as_mut().unwrap();
                let pos = t
                    .savepoints
                    .iter()
                    .rposition(|(n, _)| n == name)
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
                    .rposition(|(n, _)| n == name)
                    .ok_or_else(|| no_savepoint(name))?;
                t.savepoints.truncate(pos + 1);
                if let Some(dn) = t.dn_txn.as_mut() {
                    dn.rollback_to(&t.savepoints[pos].1)?;
                }
                t.failed = false;
                Ok(Outcome::tag("ROLLBACK"))
            }
            Statement::SetTransaction {
                isolation,
                read_only,
            } => {
                match &mut self.tx {
                    Some(t) if t.dn_txn.is_none() => {
                        if let Some(i) = isolation {
                            t.isolation = isolation_of(*i);
                        }
                        if let Some(r) = read_only {
                            t.read_only = *r;
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
                Ok(Outcome::tag("SET"))
            }
            Statement::Set { name, value, local } => {
                let report = self
                    .state
                    .settings
                    .lock()
                    .set(name, value.as_deref(), *local)?;
                if let Some((n, v)) = report {
                    backend::parameter_status(&mut self.out, n, &v);
                }
                Ok(Outcome::tag(if value.is_none() { "RESET" } else { "SET" }))
            }
            Statement::Show { name } => {
                let value = match name.as_str() {
                    "transaction isolation level" | "transaction_isolation" => {
                        match self.tx.as_ref().map(|t| t.isolation) {
                            Some(Isolation::RepeatableRead) => "repeatable read".to_string(),
                            Some(Isolation::ReadCommitted) => "read committed".to_string(),
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
            Statement::CreateTable(_)
            | Statement::DropTable { .. }
            | Statement::Truncate { .. }
            | Statement::AddPrimaryKey { .. }
            | Statement::Vacuum { .. } => {
                // Inside a transaction block, the tables TRUNCATE empties are the
                // transaction's until it ends (`Datanode::own_relation`).
                let in_block = self.tx.as_ref().is_some_and(|t| t.explicit);
                if in_block && matches!(stmt, Statement::Truncate { .. }) {
                    self.ensure_started().await?;
                }
                let owner = self
                    .tx
                    .as_mut()
                    .filter(|_| in_block)
                    .and_then(|t| t.dn_txn.as_mut());
                let tag = crate::ddl::execute(&self.shared, stmt, owner, &mut self.out).await?;
                Ok(Outcome::tag(tag))
            }
            Statement::CopyFrom(copy) => self.copy_from(copy).await,
            Statement::Query(_)
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_) => self.dml(stmt, params).await,
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
            isolation: if defaults.repeatable_read {
                Isolation::RepeatableRead
            } else {
                Isolation::ReadCommitted
            },
            read_only: defaults.read_only,
            txn_time: types::datetime::now_timestamp(),
            savepoints: Vec::new(),
        }
    }

    /// Make sure a transaction with a datanode transaction exists; returns the snapshot
    /// for the next statement (a fresh one per statement under READ COMMITTED).
    async fn ensure_started(&mut self) -> PgResult<Timestamp> {
        if self.tx.is_none() {
            self.tx = Some(self.new_transaction(false));
        }
        let t = self.tx.as_mut().unwrap();
        match &t.dn_txn {
            None => {
                let start = self.shared.gtm.begin().await?;
                t.dn_txn = Some(self.shared.datanode.begin(start, t.isolation));
                Ok(start)
            }
            Some(dn) if t.isolation == Isolation::RepeatableRead => Ok(dn.start_ts()),
            Some(_) => self.shared.gtm.timestamp().await,
        }
    }

    async fn commit(&mut self, t: Transaction) -> PgResult<()> {
        self.end_local_settings();
        if let Some(dn) = t.dn_txn {
            self.shared.datanode.commit(dn, &self.shared.gtm).await?;
        }
        Ok(())
    }

    async fn abort(&mut self, t: Transaction) {
        self.end_local_settings();
        if let Some(dn) = t.dn_txn {
            self.shared.datanode.abort(dn, &self.shared.gtm).await;
        }
    }

    fn end_local_settings(&mut self) {
        let changed = self.state.settings.lock().end_transaction();
        for (n, v) in changed {
            backend::parameter_status(&mut self.out, n, &v);
        }
    }

    /// SELECT / INSERT / UPDATE / DELETE inside the session's transaction.
    async fn dml(&mut self, stmt: &Statement, params: &[Value]) -> PgResult<Outcome> {
        let snapshot = self.ensure_started().await?;
        if self.tx.as_ref().is_some_and(|t| t.read_only) && !matches!(stmt, Statement::Query(_)) {
            return Err(PgError::new(
                codes::READ_ONLY_SQL_TRANSACTION,
                "cannot execute this statement in a read-only transaction",
            ));
        }
        let shared = self.shared.clone();
        let view = view(
            &shared,
            &self.state,
            &self.tx,
            types::datetime::now_timestamp(),
        );
        let txn = self
            .tx
            .as_mut()
            .and_then(|t| t.dn_txn.as_mut())
            .expect("transaction started");
        let state = StatementState::new(&self.limits, &shared.spill);
        let dml = crate::dml::Dml {
            dn: &shared.datanode,
            snapshot,
            params,
            view: &view,
            state: &state,
        };
        let outcome = match stmt {
            Statement::Query(q) => match self.stream_rows.take() {
                Some(formats) => {
                    let reader = dml.reader(txn);
                    let mut rows = reader.rows(q);
                    let mut count = 0u64;
                    while let Some(batch) = rows.next_batch().await? {
                        for r in &batch {
                            output::data_row(&mut self.out, r, &q.columns, &formats, &view);
                        }
                        count += batch.len() as u64;
                        if self.out.len() > FLUSH_THRESHOLD {
                            write_out(&mut self.stream, &mut self.out)
                                .await
                                .map_err(|e| {
                                    PgError::new(codes::CONNECTION_FAILURE, e.to_string())
                                })?;
                        }
                    }
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
            backend::parameter_status(&mut self.out, n, &v);
        }
        Ok(outcome)
    }

    /// COPY … FROM STDIN: the CopyIn sub-protocol, rows written as they arrive.
    async fn copy_from(&mut self, copy: &sql::plan::CopyFrom) -> PgResult<Outcome> {
        let snapshot = self.ensure_started().await?;
        backend::copy_in_response(&mut self.out, copy.fields as i16);
        self.flush()
            .await
            .map_err(|e| PgError::new(codes::CONNECTION_FAILURE, e.to_string()))?;
        let mut parser = CopyParser::new(
            copy.delimiter,
            copy.null_string.clone(),
            copy.csv,
            copy.header,
        );
        let mut loader = crate::dml::CopyLoader::new(copy);
        // In bulk only where no savepoint could roll part of the transaction back.
        let mut failure: Option<PgError> = None;
        if let Some(t) = self.tx.as_mut().filter(|t| t.savepoints.is_empty()) {
            let txn = t.dn_txn.as_mut().expect("transaction started");
            failure = loader
                .load_in_bulk_if_owned(&self.shared.datanode, txn, &self.shared.spill)
                .err();
        }
        let statement_time = types::datetime::now_timestamp();
        // After a bad row PostgreSQL still consumes the data up to CopyDone.
        loop {
            let msg = self.next_message().await?.ok_or_else(|| {
                PgError::new(codes::CONNECTION_FAILURE, "connection closed during COPY")
            })?;
            let (rows, done) = match msg {
                FrontendMessage::CopyData(data) => (parser.feed(&data), false),
                FrontendMessage::CopyDone => (parser.finish(), true),
                FrontendMessage::CopyFail(m) => {
                    return Err(PgError::new(
                        codes::QUERY_CANCELED,
                        format!("COPY from stdin failed: {m}"),
                    ));
                }
                FrontendMessage::Flush | FrontendMessage::Sync => continue,
                _ => {
                    return Err(PgError::new(
                        codes::PROTOCOL_VIOLATION,
                        "unexpected message type during COPY from stdin",
                    ))
                }
            };
            if failure.is_none() {
                let view = view(&self.shared, &self.state, &self.tx, statement_time);
                let txn = self
                    .tx
                    .as_mut()
                    .and_then(|t| t.dn_txn.as_mut())
                    .expect("transaction started");
                let result = match rows {
                    Ok(rows) => {
                        loader
                            .load(&self.shared.datanode, txn, &view, rows, parser.line)
                            .await
                    }
                    Err(e) => Err(e),
                };
                failure = result.err();
            }
            if done {
                break;
            }
        }
        if failure.is_none() {
            let txn = self
                .tx
                .as_mut()
                .and_then(|t| t.dn_txn.as_mut())
                .expect("transaction started");
            failure = loader
                .finish(&self.shared.datanode, txn, snapshot)
                .await
                .err();
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(Outcome::tag(format!("COPY {}", loader.count()))),
        }
    }
}

/// Write and clear the output buffer; a large one is not kept for an idle session.
async fn write_out<S: AsyncWrite + Unpin>(
    stream: &mut S,
    out: &mut BytesMut,
) -> std::io::Result<()> {
    if !out.is_empty() {
        stream.write_all(out).await?;
        out.clear();
        if out.capacity() > 1 << 20 {
            *out = BytesMut::with_capacity(8 << 10);
        }
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
    SessionView {
        catalog: &shared.catalog,
        settings: &state.settings,
        reports: &state.reports,
        txn_time: tx.as_ref().map_or(statement_time, |t| t.txn_time),
        statement_time,
        backend_pid: state.pid,
        user: &state.user,
        database: &state.database,
    }
}

/// Never completes without a deadline.
async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

fn no_savepoint(name: &str) -> PgError {
    PgError::new(
        codes::INVALID_SAVEPOINT_SPECIFICATION,
        format!("savepoint \"{name}\" does not exist"),
    )
}
