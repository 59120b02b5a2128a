//! EXPLAIN ANALYZE's measurement of one operator: the rows it returns and the time its
//! batches take (its inputs' included, as PostgreSQL counts), added to the statement's
//! measurements when the operator is closed, once per time it was opened (loops).

use super::nodes::{BoxNode, Node};
use super::{NodeMeasures, Row};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use pgerror::PgResult;
use sql::explain::{rel_key, NodeActuals};
use sql::plan::Rel;
use std::time::{Duration, Instant};

pub(super) struct Measured<'e> {
    inner: BoxNode<'e>,
    key: usize,
    into: &'e Mutex<NodeMeasures>,
    rows: u64,
    startup: Option<Duration>,
    total: Duration,
}

impl<'e> Measured<'e> {
    pub(super) fn new(inner: BoxNode<'e>, rel: &Rel, into: &'e Mutex<NodeMeasures>) -> Self {
        Measured {
            inner,
            key: rel_key(rel),
            into,
            rows: 0,
            startup: None,
            total: Duration::ZERO,
        }
    }
}

impl Node for Measured<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            let started = Instant::now();
            let batch = self.inner.next().await;
            self.total += started.elapsed();
            self.startup.get_or_insert(self.total);
            if let Ok(Some(rows)) = &batch {
                self.rows += rows.len() as u64;
            }
            batch
        })
    }
}

impl Drop for Measured<'_> {
    fn drop(&mut self) {
        let mut all = self.into.lock();
        let node: &mut NodeActuals = all.entry(self.key).or_default();
        node.loops += 1;
        node.rows += self.rows;
        node.startup += self.startup.unwrap_or_default();
        node.total += self.total;
    }
}
