//! EXPLAIN ANALYZE: the statement runs as it would on its own (an INSERT, UPDATE or
//! DELETE writes), its rows discarded, with every operator measured; the plan then
//! prints with what each node measured and (SUMMARY) the execution time.

use super::statement::Outcome;
use super::Session;
use crate::session_io::SessionStream;
use parking_lot::Mutex;
use pgerror::PgResult;
use sql::explain::Measured;
use sql::plan::{ExplainAnalyze, Statement};
use std::time::Instant;
use types::Value;

impl<S: SessionStream> Session<S> {
    pub(super) async fn explain_analyze(
        &mut self,
        stmt: &Statement,
        options: ExplainAnalyze,
        params: &[Value],
    ) -> PgResult<Outcome> {
        let nodes = Mutex::default();
        let started = Instant::now();
        let ran = self.measured_dml(stmt, params, Some(&nodes)).await?;
        let measured = Measured {
            nodes: nodes.into_inner(),
            // "UPDATE n" / "DELETE n": the rows the write's scan read.
            written: ran
                .tag
                .rsplit(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0),
            elapsed: started.elapsed(),
            timing: options.timing,
        };
        let mut lines = crate::explain::explain(&self.shared, stmt, Some(&measured));
        if options.summary {
            let ms = measured.elapsed.as_secs_f64() * 1000.0;
            lines.push(format!("Execution Time: {ms:.3} ms"));
        }
        Ok(Outcome {
            rows: lines.into_iter().map(|l| vec![Value::Text(l)]).collect(),
            tag: "EXPLAIN".into(),
        })
    }
}
