//! INTERSECT / EXCEPT [ALL] as PostgreSQL's HashSetOp: every distinct row (NULLs equal,
//! as `group_key` encodes them) counted on each side, then emitted as many times as the
//! operator says (`SetOpKind::copies`). The left side is read first, so a group's row is
//! a left row whenever it has one. Past work_mem, rows of groups not held go to
//! partitions by key, tagged with their side, and each partition is counted on its own
//! after both sides end (as DISTINCT spills).

use super::memory::Held;
use super::nodes::{BoxNode, Node};
use super::spilling::{next_fitting, split_key, KeyedPartitions};
use super::{group_key, Executor, Row, BATCH};
use futures::future::BoxFuture;
use pgerror::PgResult;
use rustc_hash::FxHashMap;
use spill::row_size;
use sql::plan::SetOpKind;
use std::collections::hash_map::Entry;
use types::Value;

/// A distinct row and how many times each side had it.
struct Counted {
    row: Row,
    left: u64,
    right: u64,
}

pub(super) struct SetOpNode<'e> {
    ex: &'e Executor<'e>,
    op: SetOpKind,
    all: bool,
    /// The sides still to read, left first.
    inputs: Vec<BoxNode<'e>>,
    groups: FxHashMap<Vec<u8>, Counted>,
    held: Held<'e>,
    spilled: Option<KeyedPartitions>,
    pending: Vec<spill::Partition>,
    /// The counted groups being emitted, and the copies of one still to hand up.
    output: std::vec::IntoIter<Counted>,
    repeating: Option<(Row, u64)>,
}

impl<'e> SetOpNode<'e> {
    pub(super) fn new(
        ex: &'e Executor<'e>,
        op: SetOpKind,
        all: bool,
        left: BoxNode<'e>,
        right: BoxNode<'e>,
    ) -> Self {
        SetOpNode {
            ex,
            op,
            all,
            inputs: vec![left, right],
            groups: FxHashMap::default(),
            held: Held::new(&ex.state.memory),
            spilled: None,
            pending: Vec::new(),
            output: Vec::new().into_iter(),
            repeating: None,
        }
    }

    /// Counts one input row of side `right` (false: the left).
    fn count(&mut self, row: Row, right: bool) -> PgResult<()> {
        let key = group_key(&row);
        if let Some(group) = self.groups.get_mut(&key) {
            match right {
                true => group.right += 1,
                false => group.left += 1,
            }
            return Ok(());
        }
        let work_mem = self.ex.state.work_mem;
        if self.spilled.is_none() && !right && self.held.bytes() > work_mem {
            self.spilled = Some(KeyedPartitions::new(self.ex.state.spill, work_mem));
        }
        match &mut self.spilled {
            Some(partitions) => {
                let mut row = row;
                row.push(Value::Bool(right));
                partitions.push(key, row)
            }
            // every left row is held: a right row of no left group counts for nothing
            None if right => Ok(()),
            None => {
                self.held.charge(row_size(&row) + key.len() + 64)?;
                let group = Counted {
                    row,
                    left: 1,
                    right: 0,
                };
                self.groups.insert(key, group);
                Ok(())
            }
        }
    }

    /// Counts the groups of the next spilled partition into `groups`; false when none
    /// is left.
    fn count_partition(&mut self) -> PgResult<bool> {
        let Some(partition) = next_fitting(&mut self.pending, self.ex.state.work_mem)? else {
            return Ok(false);
        };
        self.held.clear();
        for row in partition.read()?.into_iter().flatten() {
            let (key, mut row) = split_key(row?);
            let right = matches!(row.pop(), Some(Value::Bool(true)));
            let group = match self.groups.entry(key) {
                Entry::Occupied(group) => group.into_mut(),
                Entry::Vacant(slot) => {
                    self.held.charge(row_size(&row) + slot.key().len() + 64)?;
                    slot.insert(Counted {
                        row,
                        left: 0,
                        right: 0,
                    })
                }
            };
            match right {
                true => group.right += 1,
                false => group.left += 1,
            }
        }
        Ok(true)
    }

    /// Up to a batch of result rows from the counted groups.
    fn emit(&mut self) -> Vec<Row> {
        let mut out = Vec::new();
        while out.len() < BATCH {
            match self.repeating.take() {
                Some((row, 1)) => out.push(row),
                Some((row, copies)) => {
                    out.push(row.clone());
                    self.repeating = Some((row, copies - 1));
                }
                None => match self.output.next() {
                    Some(g) => {
                        let copies = self.op.copies(self.all, g.left, g.right);
                        if copies > 0 {
                            self.repeating = Some((g.row, copies));
                        }
                    }
                    None => break,
                },
            }
        }
        out
    }
}

impl Node for SetOpNode<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            while let Some(first) = self.inputs.first_mut() {
                let Some(batch) = first.next().await? else {
                    self.inputs.remove(0);
                    if self.inputs.is_empty() {
                        self.output = std::mem::take(&mut self.groups)
                            .into_values()
                            .collect::<Vec<_>>()
                            .into_iter();
                        if let Some(partitions) = self.spilled.take() {
                            self.pending = partitions.finish()?;
                        }
                    }
                    continue;
                };
                let right = self.inputs.len() == 1;
                let rows = batch.len();
                for row in batch {
                    self.count(row, right)?;
                }
                self.ex.pace(rows).await;
            }
            loop {
                let out = self.emit();
                if !out.is_empty() {
                    return Ok(Some(out));
                }
                if !self.count_partition()? {
                    return Ok(None);
                }
                self.output = std::mem::take(&mut self.groups)
                    .into_values()
                    .collect::<Vec<_>>()
                    .into_iter();
                self.ex.pace(0).await;
            }
        })
    }
}
