//! The extended query protocol: Parse, Bind, Describe and Execute, the session's
//! prepared statements, and the prepared-statement plans shared by a thread's sessions.

use super::portals::Portal;
use super::statement::Outcome;
use super::transaction::{in_failed_transaction, is_catalog_moved, REBIND_ATTEMPTS};
use super::{view, write_out_if_full, Session, PLAN_CACHE_SIZE};
use crate::output;
use crate::plan_cache::PlanCache;
use crate::session_io::SessionStream;
use bytes::BytesMut;
use pgerror::{codes, PgError, PgResult};
use sql::binder::bind;
use sql::parse::{parse, ParsedStatement};
use sql::plan::{BoundStatement, OutputColumn, Statement};
use sql::statement_shape::{statement_shape, StatementShape};
use std::cell::RefCell;
use std::sync::Arc;
use types::{DataType, Value};
use wire::backend;

/// A statement prepared by Parse (or the unnamed one).
pub(super) struct Prepared {
    parsed: Option<ParsedStatement>,
    declared_types: Vec<u32>,
    bound: Arc<BoundStatement>,
    pub(super) param_types: Vec<DataType>,
    catalog_version: u64,
    /// `bound`'s RowDescription (or NoData) with every column in text format, encoded
    /// once: libpq describes the portal at every execution of a prepared statement.
    text_description: bytes::Bytes,
    /// pg_stat_statements' view of the statement, found once per cached plan.
    pub(super) shape: Option<StatementShape>,
}

impl Prepared {
    pub(super) fn new(
        parsed: Option<ParsedStatement>,
        declared_types: Vec<u32>,
        bound: BoundStatement,
        param_types: Vec<DataType>,
        catalog_version: u64,
    ) -> Prepared {
        let mut text_description = BytesMut::new();
        describe_columns(&mut text_description, &bound.output_columns(), &[]);
        let shape = parsed.as_ref().and_then(|p| statement_shape(&p.text));
        Prepared {
            parsed,
            shape,
            declared_types,
            bound: Arc::new(bound),
            param_types,
            catalog_version,
            text_description: text_description.freeze(),
        }
    }
}

/// RowDescription of `columns` in `formats`, or NoData when there are none.
pub(super) fn describe_columns(out: &mut BytesMut, columns: &[OutputColumn], formats: &[i16]) {
    if columns.is_empty() {
        backend::no_data(out);
    } else {
        output::row_description(out, columns, formats);
    }
}

thread_local! {
    /// Prepared statements by `prepared_cache_key`, shared by this thread's sessions.
    static PREPARED_PLANS: RefCell<PlanCache<Prepared>> = RefCell::new(PlanCache::new(PLAN_CACHE_SIZE));
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

impl<S: SessionStream> Session<S> {
    pub(super) async fn parse_message(
        &mut self,
        name: String,
        query: &str,
        param_types: Vec<u32>,
    ) -> PgResult<()> {
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
                let prepared = self.prepare(query, param_types, version, in_failed).await?;
                PREPARED_PLANS.with(|c| c.borrow_mut().insert(key, prepared))
            }
        };
        self.utility_counted.remove(&name);
        self.prepared.insert(name, prepared);
        backend::parse_complete(&mut self.out);
        Ok(())
    }

    /// Parse and bind a statement for Parse. As in PostgreSQL, a failed transaction refuses
    /// all but an empty statement or one that ends the block, before binding.
    async fn prepare(
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
            None => Prepared::new(
                None,
                param_types,
                BoundStatement::unchecked(Statement::Empty),
                Vec::new(),
                version,
            ),
            Some(parsed) => {
                if in_failed && !parsed.ends_failed_transaction() {
                    return Err(in_failed_transaction());
                }
                let (bound, types) = self.bind_fresh(&parsed, &param_types).await?;
                Prepared::new(Some(parsed), param_types, bound, types, version)
            }
        })
    }

    /// The prepared statement's plan, bound again if DDL changed the catalog since.
    pub(super) fn current_plan(&self, p: &Prepared) -> PgResult<Arc<BoundStatement>> {
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
            None => Ok(Arc::new(BoundStatement::unchecked(Statement::Empty))),
        }
    }

    pub(super) fn bind_message(
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
                Some(bytes) if format == 1 => {
                    crate::copy::from_client_binary(bytes, ty, self.encoding)?
                }
                Some(bytes) => {
                    let text = self.encoding.decode(bytes).ok_or_else(|| {
                        self.encoding.decode_error(bytes).unwrap_or_else(|| {
                            PgError::new(
                                codes::CHARACTER_NOT_IN_REPERTOIRE,
                                "invalid byte sequence for encoding \"UTF8\"",
                            )
                        })
                    })?;
                    types::io::from_text_in(&text, ty, self.state.settings.lock().zone())?
                }
            });
        }
        let mut bound = self.current_plan(&prepared)?;
        if let Statement::Execute { name, args } = &bound.statement {
            (bound, values) = self.prepared_execution(name, args)?;
        }
        output::validate_formats(&result_formats, bound.output_columns().len())?;
        let tracked = match &prepared.shape {
            Some(shape) if shape.utility => {
                !self.utility_counted.contains(statement)
                    && self.utility_counted.insert(statement.to_string())
            }
            shape => shape.is_some(),
        };
        let described_by = (Arc::ptr_eq(&bound, &prepared.bound)
            && result_formats.iter().all(|f| *f == 0))
        .then(|| prepared.clone());
        self.portals.insert(
            portal,
            Portal {
                bound,
                statement: prepared,
                described_by,
                params: values,
                result_formats,
                pending: None,
                tracked,
            },
        );
        backend::bind_complete(&mut self.out);
        Ok(())
    }

    pub(super) fn describe(
        &mut self,
        kind: wire::frontend::DescribeKind,
        name: &str,
    ) -> PgResult<()> {
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

    /// Runs the portal's statement; if the catalog moved under it, binds it again (its
    /// result columns must stay what Describe said) and reruns it.
    async fn run_portal(&mut self, portal: &mut Portal) -> PgResult<Outcome> {
        let formats = self.stream_rows.clone();
        let mut attempt = 1;
        loop {
            let produced = self.out.len();
            match self.run_statement(&portal.bound, &portal.params).await {
                Err(e) if is_catalog_moved(&e) && attempt < REBIND_ATTEMPTS => {
                    self.out.truncate(produced);
                    self.stream_rows = formats.clone();
                    attempt += 1;
                    let bound = self.current_plan(&portal.statement)?;
                    let same_result = |a: &[OutputColumn], b: &[OutputColumn]| {
                        a.len() == b.len()
                            && a.iter()
                                .zip(b)
                                .all(|(a, b)| a.name == b.name && a.ty == b.ty)
                    };
                    if !same_result(&bound.output_columns(), &portal.bound.output_columns()) {
                        return Err(PgError::new(
                            codes::FEATURE_NOT_SUPPORTED,
                            "cached plan must not change result type",
                        ));
                    }
                    portal.bound = bound;
                }
                done => return done,
            }
        }
    }

    pub(super) async fn execute_message(&mut self, name: &str, max_rows: i32) -> PgResult<()> {
        let mut portal = self.portals.remove(name).ok_or_else(|| {
            PgError::new(
                codes::INVALID_CURSOR_NAME,
                format!("portal \"{name}\" does not exist"),
            )
        })?;
        if matches!(portal.bound.statement, Statement::Empty) {
            backend::empty_query_response(&mut self.out);
            return Ok(());
        }
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
                let text = portal.statement.parsed.as_ref().map_or("", |p| &p.text);
                self.statement_started(text);
                let started = std::time::Instant::now();
                let outcome = self.run_portal(&mut portal).await;
                self.stream_rows = None;
                let outcome = outcome?;
                if let Some(shape) = portal.statement.shape.as_ref().filter(|_| portal.tracked) {
                    let rows = crate::statement_stats::tag_rows(&outcome.tag);
                    self.record_statement(shape, started, rows);
                }
                (outcome.rows.into(), outcome.tag)
            }
        };
        let limit = if max_rows <= 0 {
            usize::MAX
        } else {
            max_rows as usize
        };
        let columns = portal.bound.output_columns();
        let view_formats = portal.result_formats.clone();
        let mut sent = 0;
        {
            let view = view(
                &self.shared,
                &self.state,
                &self.tx,
                self.state.activity.statement_time(),
            );
            while sent < limit {
                let Some(r) = rows.pop_front() else { break };
                output::data_row(&mut self.out, &r, &columns, &view_formats, &view)?;
                sent += 1;
                write_out_if_full(
                    &mut self.stream,
                    &mut self.out,
                    &mut self.unsent,
                    self.encoding,
                )
                .await?;
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
}
