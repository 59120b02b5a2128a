//! A scan over several datanodes: their key-ordered streams merged into one.

use datanode_client::{DatanodeScan, RowBytes, ScanItem};
use pgerror::PgResult;
use std::marker::PhantomData;

type Keyed = (Vec<u8>, RowBytes);

/// The rows of a range scan, in key order.
pub enum ClusterScan<'a, T> {
    /// One datanode's scan, as it comes.
    One(DatanodeScan<'a, T>),
    Merged(MergedScan<'a, T>),
}

/// Datanodes' scans merged by key (each holds a disjoint set of rows, keys ascending).
pub struct MergedScan<'a, T> {
    inputs: Vec<DatanodeScan<'a, Keyed>>,
    /// Each input's next row; None before it is first read.
    heads: Vec<Option<Keyed>>,
    started: bool,
    item: PhantomData<T>,
}

impl<'a, T> ClusterScan<'a, T> {
    pub(crate) fn merge(inputs: Vec<DatanodeScan<'a, Keyed>>) -> Self {
        let heads = inputs.iter().map(|_| None).collect();
        ClusterScan::Merged(MergedScan {
            inputs,
            heads,
            started: false,
            item: PhantomData,
        })
    }
}

impl<T: ScanItem> ClusterScan<'_, T> {
    /// The next row, or None at the end.
    pub async fn next(&mut self) -> Option<PgResult<T>> {
        match self {
            ClusterScan::One(scan) => scan.next().await,
            ClusterScan::Merged(merged) => merged.next().await,
        }
    }
}

impl<T: ScanItem> MergedScan<'_, T> {
    async fn next(&mut self) -> Option<PgResult<T>> {
        if !self.started {
            self.started = true;
            // every datanode works on its first page at once (for a pushed aggregate,
            // often its only one)
            let firsts = futures::future::join_all(self.inputs.iter_mut().map(|s| s.next()));
            for (head, first) in self.heads.iter_mut().zip(firsts.await) {
                match first.transpose() {
                    Ok(row) => *head = row,
                    Err(e) => return Some(Err(e)),
                }
            }
        }
        let (i, _) = self
            .heads
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.as_ref().map(|(key, _)| (i, key)))
            .min_by(|a, b| a.1.cmp(b.1))?;
        let (key, row) = self.heads[i].take().expect("a head was chosen");
        if let Err(e) = self.refill(i).await {
            return Some(Err(e));
        }
        Some(Ok(T::from_pair(key, row)))
    }

    async fn refill(&mut self, i: usize) -> PgResult<()> {
        self.heads[i] = self.inputs[i].next().await.transpose()?;
        Ok(())
    }
}
