//! COPY … FROM STDIN: the CopyIn sub-protocol inside the session's transaction.

use super::statement::Outcome;
use super::{view, Session};
use crate::copy::{CopyParser, CopyRow};
use crate::copy_binary::BinaryCopyParser;
use crate::session_io::SessionStream;
use pgerror::{codes, PgError, PgResult};
use sql::copy::CopyKind;
use wire::backend;
use wire::FrontendMessage;

impl<S: SessionStream> Session<S> {
    /// COPY … FROM STDIN: the CopyIn sub-protocol, rows written as they arrive.
    pub(super) async fn copy_from(&mut self, copy: &sql::plan::CopyFrom) -> PgResult<Outcome> {
        let snapshot = self.ensure_started().await?;
        self.check_catalog_current().await?;
        let binary = copy.format.kind == CopyKind::Binary;
        backend::copy_in_response(&mut self.out, copy.fields as i16, binary);
        self.flush()
            .await
            .map_err(|e| PgError::new(codes::CONNECTION_FAILURE, e.to_string()))?;
        let mut parser = if binary {
            Parser::Binary(BinaryCopyParser::new(copy.fields))
        } else {
            let mut lines = CopyParser::new(&copy.format);
            lines.encoding = self.encoding;
            Parser::Lines(lines)
        };
        let mut loader = crate::dml::CopyLoader::new(copy);
        // In bulk only where no savepoint could roll part of the transaction back.
        let mut failure: Option<PgError> = None;
        if let Some(t) = self.tx.as_mut().filter(|t| t.savepoints.is_empty()) {
            let txn = t.dn_txn.as_mut().expect("transaction started");
            failure = loader
                .load_in_bulk_if_owned(&self.shared.datanodes, txn, &self.shared.spill)
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
                let dn = &self.shared.datanodes;
                let line = parser.line();
                let result = match rows {
                    Ok(Rows::Lines(rows)) => loader.load(dn, txn, &view, rows, line).await,
                    Ok(Rows::Binary(rows)) => loader.load(dn, txn, &view, rows, line).await,
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
                .finish(&self.shared.datanodes, txn, snapshot)
                .await
                .err();
        }
        match failure {
            Some(e) => Err(e),
            None => {
                self.shared.cumulative_stats.changed(
                    loader.table_oid(),
                    crate::cumulative_stats::Change::Inserted,
                    loader.count(),
                );
                Ok(Outcome::tag(format!("COPY {}", loader.count())))
            }
        }
    }
}

/// COPY FROM's input parser: text and CSV lines, or the binary format.
enum Parser {
    Lines(CopyParser),
    Binary(BinaryCopyParser),
}

enum Rows {
    Lines(Vec<CopyRow>),
    Binary(Vec<CopyRow<Vec<u8>>>),
}

impl Parser {
    fn feed(&mut self, data: &[u8]) -> PgResult<Rows> {
        match self {
            Parser::Lines(p) => p.feed(data).map(Rows::Lines),
            Parser::Binary(p) => p.feed(data).map(Rows::Binary),
        }
    }

    fn finish(&mut self) -> PgResult<Rows> {
        match self {
            Parser::Lines(p) => p.finish().map(Rows::Lines),
            Parser::Binary(p) => p.finish().map(Rows::Binary),
        }
    }

    fn line(&self) -> u64 {
        match self {
            Parser::Lines(p) => p.line,
            Parser::Binary(p) => p.line,
        }
    }
}
