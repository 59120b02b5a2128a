//! What the hashing operators (aggregation, DISTINCT, hash join) share when they spill:
//! rows go to partitions of temporary files with their hash key in front, as a bytea,
//! so that a partition is re-split and matched without evaluating anything again.

use super::Row;
use pgerror::PgResult;
use spill::{Partition, Partitioner, SpillDir, FILE_BUFFER_BYTES};
use std::hash::Hasher;
use types::Value;

/// Partitions per split: each holds a write buffer, and together they fit work_mem.
pub(super) fn fanout(work_mem: usize) -> usize {
    (work_mem / FILE_BUFFER_BYTES).clamp(4, 64)
}

fn hash_of(key: &[u8]) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write(key);
    h.finish()
}

/// The hash of a row written by `KeyedPartitions::push`.
pub(super) fn row_hash(row: &[Value]) -> u64 {
    match row.first() {
        Some(Value::Bytea(key)) => hash_of(key),
        _ => 0,
    }
}

/// A spilled row back as its key and the row.
pub(super) fn split_key(mut row: Row) -> (Vec<u8>, Row) {
    if row.is_empty() {
        return (Vec::new(), row);
    }
    // `remove` shifts the row in place; `split_off` would allocate another
    match row.remove(0) {
        Value::Bytea(key) => (key, row),
        _ => (Vec::new(), row),
    }
}

/// Rows partitioned by a key (a `group_key` encoding).
pub(super) struct KeyedPartitions {
    partitioner: Partitioner,
}

impl KeyedPartitions {
    pub(super) fn new(dir: &SpillDir, work_mem: usize) -> Self {
        KeyedPartitions {
            partitioner: Partitioner::new(dir, fanout(work_mem), 0),
        }
    }

    pub(super) fn push(&mut self, key: Vec<u8>, row: Row) -> PgResult<()> {
        let hash = hash_of(&key);
        self.partitioner
            .push_parts(hash, &[&[Value::Bytea(key)], &row])
    }

    pub(super) fn finish(self) -> PgResult<Vec<Partition>> {
        self.partitioner.finish()
    }
}

/// The partitions to work through, smallest depth first: one still larger than work_mem
/// is split again (while it can be) before it is read.
pub(super) fn next_fitting(
    pending: &mut Vec<Partition>,
    work_mem: usize,
) -> PgResult<Option<Partition>> {
    while let Some(p) = pending.pop() {
        if p.rows() == 0 {
            continue;
        }
        if p.bytes() as usize > work_mem && p.can_split() {
            pending.extend(p.split(fanout(work_mem), row_hash)?);
            continue;
        }
        return Ok(Some(p));
    }
    Ok(None)
}
