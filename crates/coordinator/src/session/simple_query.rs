//! The simple query protocol: a query string's statements, parsed before any runs
//! (or found in the auto-parameterized plan cache, `query_cache`), then run in turn.

use super::query_cache::SimpleStep;
use super::transaction::{in_failed_transaction, is_catalog_moved, REBIND_ATTEMPTS};
use super::{view, write_out_if_full, Session, FLUSH_THRESHOLD};
use crate::exec::Row;
use crate::output;
use crate::session_io::SessionStream;
use crate::statement_stats::tag_rows;
use pgerror::PgResult;
use sql::parse::{split_statements, ParsedStatement};
use sql::plan::{BoundStatement, OutputColumn, Statement};
use sql::statement_shape::statement_shape;
use std::sync::Arc;
use std::time::Instant;
use types::Value;
use wire::backend;

impl<S: SessionStream> Session<S> {
    pub(super) async fn simple_query(&mut self, sql: &str) {
        self.statement_started(sql);
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
            let started = Instant::now();
            let result = if self.tx.as_ref().is_some_and(|t| t.failed) && !ends_failed {
                Err(in_failed_transaction())
            } else {
                match step {
                    SimpleStep::Plain(parsed) => self
                        .run_simple_parsed(&parsed)
                        .await
                        .map(|rows| (statement_shape(&parsed.text).map(Arc::new), rows)),
                    SimpleStep::Auto {
                        text,
                        norm,
                        cache_key,
                        found,
                    } => self.run_simple_auto(text, norm, cache_key, found).await,
                }
            };
            match result {
                Ok((Some(shape), rows)) => self.record_statement(&shape, started, rows),
                Ok((None, _)) => {}
                Err(e) => {
                    self.send_error(&e);
                    self.statement_failed().await;
                    return;
                }
            }
            if self.out.len() > FLUSH_THRESHOLD && i + 1 < count && self.flush().await.is_err() {
                return;
            }
        }
        // A query string outside a block is one implicit transaction.
        self.end_implicit_transaction().await;
    }

    /// The ordinary simple-query path: bind the statement's own text and run it (again,
    /// with what it produced discarded, if the catalog moved under it).
    /// Returns the rows it returned or affected (`tag_rows`).
    pub(super) async fn run_simple_parsed(&mut self, parsed: &ParsedStatement) -> PgResult<u64> {
        let mut attempt = 1;
        loop {
            let (bound, _) = self.bind_fresh(parsed, &[]).await?;
            let produced = self.out.len();
            match self.run_simple(&bound, &[]).await {
                Err(e) if is_catalog_moved(&e) && attempt < REBIND_ATTEMPTS => {
                    self.out.truncate(produced);
                    attempt += 1;
                }
                done => return done,
            }
        }
    }

    /// Run one bound statement of a simple query: RowDescription, DataRows in text
    /// format, CommandComplete. Returns the rows it returned or affected (`tag_rows`).
    pub(super) async fn run_simple(
        &mut self,
        bound: &BoundStatement,
        params: &[Value],
    ) -> PgResult<u64> {
        let executed;
        let (bound, params) = match &bound.statement {
            Statement::Execute { name, args } => {
                executed = self.prepared_execution(name, args)?;
                (&*executed.0, &executed.1[..])
            }
            _ => (bound, params),
        };
        let columns = bound.output_columns();
        let returning = matches!(
            bound.statement,
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
        Ok(tag_rows(&outcome.tag))
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
            self.state.activity.statement_time(),
        );
        for r in rows {
            output::data_row(&mut self.out, r, columns, formats, &view)?;
            write_out_if_full(
                &mut self.stream,
                &mut self.out,
                &mut self.unsent,
                self.encoding,
            )
            .await?;
        }
        Ok(())
    }
}
