//! Rows a statement must finish reading before it can use them (INSERT … SELECT: the
//! source's scans borrow the transaction that its writes need): held in memory up to
//! work_mem, charged to the statement, and past it written to a temporary file, so that
//! any number of them takes bounded memory.

use crate::exec::memory::Held;
use crate::exec::{Row, StatementState};
use pgerror::PgResult;
use spill::{row_size, RowReader, RowWriter, SpillDir};

/// Rows being gathered (`push`), then read back in order (`finish`).
pub struct Spool<'s> {
    rows: Vec<Row>,
    held: Held<'s>,
    budget: usize,
    dir: &'s SpillDir,
    file: Option<RowWriter>,
}

impl<'s> Spool<'s> {
    pub fn new(state: &'s StatementState<'s>) -> Self {
        Spool {
            rows: Vec::new(),
            held: Held::new(&state.memory),
            budget: state.work_mem,
            dir: state.spill,
            file: None,
        }
    }

    pub fn push(&mut self, row: Row) -> PgResult<()> {
        if let Some(file) = &mut self.file {
            return file.push(&row);
        }
        let size = row_size(&row);
        if self.held.bytes() + size <= self.budget {
            self.held.charge(size)?;
            self.rows.push(row);
            return Ok(());
        }
        let mut file = RowWriter::create(self.dir)?;
        for held in std::mem::take(&mut self.rows) {
            file.push(&held)?;
        }
        file.push(&row)?;
        self.held.clear();
        self.file = Some(file);
        Ok(())
    }

    /// The rows pushed, in the order they came.
    pub fn finish(self) -> PgResult<SpooledRows<'s>> {
        let file = self.file.map(|f| f.finish()?.read()).transpose()?;
        Ok(SpooledRows {
            rows: self.rows.into_iter(),
            _held: self.held,
            file,
        })
    }
}

/// A finished spool's rows: those held in memory, or those in its file.
pub struct SpooledRows<'s> {
    rows: std::vec::IntoIter<Row>,
    _held: Held<'s>,
    file: Option<RowReader>,
}

impl SpooledRows<'_> {
    /// The next `n` rows or fewer; empty after the last.
    pub fn next_batch(&mut self, n: usize) -> PgResult<Vec<Row>> {
        match &mut self.file {
            Some(file) => file.by_ref().take(n).collect(),
            None => Ok(self.rows.by_ref().take(n).collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::StatementLimits;
    use types::Value;

    fn rows(n: i64) -> impl Iterator<Item = Row> {
        (0..n).map(|i| vec![Value::Int8(i), Value::Text(format!("row {i}"))])
    }

    fn spooled(n: i64, work_mem: usize) -> (Vec<Row>, u64) {
        let parent = tempfile::tempdir().unwrap();
        let dir = SpillDir::open(parent.path().join("pgsql_tmp")).unwrap();
        let state = StatementState::new(
            &StatementLimits {
                work_mem,
                ..Default::default()
            },
            &dir,
        );
        let mut spool = Spool::new(&state);
        rows(n).try_for_each(|r| spool.push(r)).unwrap();
        let mut back = spool.finish().unwrap();
        let mut out = Vec::new();
        loop {
            let batch = back.next_batch(7).unwrap();
            if batch.is_empty() {
                break;
            }
            assert!(batch.len() <= 7);
            out.extend(batch);
        }
        (out, dir.stats().files)
    }

    #[test]
    fn rows_within_work_mem_stay_in_memory() {
        let (out, files) = spooled(100, 1 << 20);
        assert_eq!(out, rows(100).collect::<Vec<_>>());
        assert_eq!(files, 0);
    }

    #[test]
    fn rows_past_work_mem_go_to_one_file_in_order() {
        let (out, files) = spooled(10_000, 16 << 10);
        assert_eq!(out, rows(10_000).collect::<Vec<_>>());
        assert_eq!(files, 1);
    }
}
