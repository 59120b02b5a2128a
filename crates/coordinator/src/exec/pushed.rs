//! A scan whose filter, and possibly partial aggregation, the datanodes do
//! (`Rel::PushedScan`, decision 0033): its parameters bound, its bounds evaluated here,
//! its rows (or partial groups) decoded as they come.

use super::columns::Used;
use super::nodes::{Node, Target};
use super::{decode, Executor, Outer, Row, BATCH};
use crate::cumulative_stats::ScanTally;
use datanode_client::RowBytes;
use distribution::ClusterScan;
use futures::future::BoxFuture;
use pgerror::PgResult;
use sql::pushdown::PushedScan;

pub(super) struct PushedScanNode<'e> {
    ex: &'e Executor<'e>,
    scan: &'e PushedScan,
    outer: Outer,
    /// The columns the consumer reads of rows sent whole; None: all.
    used: Used,
    state: State<'e>,
}

enum State<'e> {
    Start,
    /// The scan, and its count in pg_stat_all_tables: the rows that passed the datanodes'
    /// filter (a partial aggregation's groups are not rows).
    Open(ClusterScan<'e, (Vec<u8>, RowBytes)>, ScanTally<'e>),
    Done,
}

impl<'e> PushedScanNode<'e> {
    pub(super) fn new(
        ex: &'e Executor<'e>,
        scan: &'e PushedScan,
        outer: Outer,
        used: Used,
    ) -> Self {
        PushedScanNode {
            ex,
            scan,
            outer,
            used,
            state: State::Start,
        }
    }
}

impl<'e> Node for PushedScanNode<'e> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            if let State::Start = self.state {
                self.state = open(self.ex, self.scan, &self.outer, self.used.clone()).await?;
            }
            let State::Open(scan, tally) = &mut self.state else {
                return Ok(None);
            };
            let mut batch = Vec::new();
            while batch.len() < BATCH {
                match scan.next().await {
                    Some(item) => {
                        let (_, bytes) = item?;
                        batch.push(match &self.scan.work.partial {
                            Some(_) => types::codec::decode_row(&bytes)?,
                            None => {
                                tally.row();
                                decode(&bytes, &self.scan.table)?
                            }
                        });
                    }
                    None => {
                        self.state = State::Done;
                        break;
                    }
                }
            }
            self.ex.pace(batch.len()).await;
            Ok((!batch.is_empty()).then_some(batch))
        })
    }
}

/// The scan's rows from the datanodes, its bounds evaluated against `outer`.
async fn open<'e>(
    ex: &'e Executor<'e>,
    scan: &'e PushedScan,
    outer: &[Row],
    used: Used,
) -> PgResult<State<'e>> {
    let Some(Target::Range(lo, hi)) =
        Target::of(ex, &scan.table, &scan.access, outer, None).await?
    else {
        // a NULL bound: no rows (a pushed scan has no primary-key access)
        return Ok(State::Done);
    };
    // the coordinator reads only `used` of rows sent whole; partial groups come whole
    let columns = match &scan.work.partial {
        None => used,
        Some(_) => None,
    };
    let work = scan.work.bind(ex.params, columns);
    let route = match &scan.route {
        Some(e) => Some(ex.eval(outer, e, &[]).await?),
        None => None,
    };
    let tally = ex
        .session
        .cumulative_stats
        .scan(&scan.table, &scan.access, true);
    Ok(State::Open(
        ex.dn.scan_pushed(
            ex.txn,
            scan.table.rel,
            lo,
            hi,
            ex.snapshot,
            work,
            route.as_ref(),
        )?,
        tally,
    ))
}
