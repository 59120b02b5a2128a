//! External sort: sorted runs written past the memory budget, merged k ways.
//!
//! Runs are kept in the order they were written and only consecutive runs are merged, with
//! ties going to the older run; each run is sorted with a stable sort (and rows that stay
//! in memory are stable-sorted in consecutive chunks merged the same way). So the output
//! keeps the input order of rows the comparator calls equal (the sort is stable).
//!
//! Fan-in: merging `k` runs holds `k` read buffers, so `k ≤ budget / FILE_BUFFER_BYTES`
//! (at least 2, at most [`MAX_FAN_IN`]). Whenever the newest `k` runs have been through
//! the same number of merges they are merged into one (a cascade, as in an LSM tree), so
//! at most `k - 1` runs wait per merge level and the open files stay few; `finish` merges
//! the newest runs until at most `k` sources remain for the final merge.
//!
//! Abbreviated keys (optional, PostgreSQL's technique): a `u64` per row that orders rows
//! as the comparator does wherever two keys differ, held next to the row pointer, so most
//! comparisons touch neither the row nor the comparator.

use crate::row_file::{RowFile, RowReader, RowWriter};
use crate::{row_size, SpillDir, SpillStats, FILE_BUFFER_BYTES};
use pgerror::PgResult;
use std::cmp::Ordering;
use std::mem::size_of;
use types::Value;

/// Most runs merged at once: beyond this, comparisons per row (log₂ k) grow for little
/// gain in passes, and every source is an open file.
pub const MAX_FAN_IN: usize = 128;

/// Rows held in memory are sorted in chunks of this many as they arrive, while they are
/// still in the CPU cache, and the chunks merged k ways at the end: for 2 million rows
/// twice as fast as one sort of them all, whose comparisons chase row pointers across
/// the whole heap (crate README).
const CHUNK_ROWS: usize = 1 << 14;

/// Orders rows wherever two keys differ as the comparator does: `abbreviate(a) <
/// abbreviate(b)` must imply `cmp(a, b) == Less` (e.g. [`crate::abbreviated_key`] of the
/// first sort key).
pub type Abbreviate = Box<dyn Fn(&[Value]) -> u64 + Send>;

/// A row and its abbreviated key (0 for every row without abbreviation).
type Keyed = (u64, Vec<Value>);

/// Sorts rows within a byte budget (estimated with [`row_size`], plus the abbreviated key).
/// Past the budget, rows are sorted and written as a run to a temporary file.
pub struct ExternalSorter<F> {
    dir: SpillDir,
    budget: usize,
    fan_in: usize,
    order: RowOrder<F>,
    rows: Vec<Keyed>,
    /// `rows[..sorted]` is made of sorted chunks of `CHUNK_ROWS` rows.
    sorted: usize,
    used: usize,
    /// Oldest first, with the number of merges each has been through.
    runs: Vec<(RowFile, u32)>,
    stats: SpillStats,
}

impl<F: Fn(&[Value], &[Value]) -> Ordering> ExternalSorter<F> {
    /// `cmp` orders whole rows (callers put the sort keys first).
    pub fn new(budget: usize, dir: &SpillDir, cmp: F) -> Self {
        ExternalSorter::build(
            budget,
            dir,
            RowOrder {
                cmp,
                abbreviate: None,
            },
        )
    }

    /// Like [`ExternalSorter::new`], comparing abbreviated keys first and calling `cmp` only
    /// when they are equal.
    pub fn with_abbreviation(
        budget: usize,
        dir: &SpillDir,
        cmp: F,
        abbreviate: Abbreviate,
    ) -> Self {
        ExternalSorter::build(
            budget,
            dir,
            RowOrder {
                cmp,
                abbreviate: Some(abbreviate),
            },
        )
    }

    fn build(budget: usize, dir: &SpillDir, order: RowOrder<F>) -> Self {
        ExternalSorter {
            dir: dir.clone(),
            budget,
            fan_in: (budget / FILE_BUFFER_BYTES).clamp(2, MAX_FAN_IN),
            order,
            rows: Vec::new(),
            sorted: 0,
            used: 0,
            runs: Vec::new(),
            stats: SpillStats::default(),
        }
    }

    pub fn push(&mut self, row: Vec<Value>) -> PgResult<()> {
        self.used += row_size(&row) + size_of::<u64>();
        self.rows.push((self.order.abbreviate(&row), row));
        if self.used > self.budget {
            self.write_run()?;
            self.cascade()?;
        } else if self.rows.len() - self.sorted == CHUNK_ROWS {
            let order = &self.order;
            self.rows[self.sorted..].sort_by(|a, b| order.compare(a, b));
            self.sorted = self.rows.len();
        }
        Ok(())
    }

    /// Temporary files written so far (runs and merged runs).
    pub fn stats(&self) -> SpillStats {
        self.stats
    }

    /// All rows in order: sorted in memory if nothing was spilled, else merged from the
    /// runs and the rows still in memory.
    pub fn finish(mut self) -> PgResult<SortedRows<F>> {
        let order = &self.order;
        if self.runs.is_empty() {
            self.rows[self.sorted..].sort_by(|a, b| order.compare(a, b));
            let chunks = (0..self.rows.len()).step_by(CHUNK_ROWS);
            let chunks = chunks
                .map(|start| Source::Memory(start..self.rows.len().min(start + CHUNK_ROWS)))
                .collect();
            return Ok(SortedRows {
                stats: self.stats,
                merge: Merge::new(chunks, self.rows, self.order)?,
            });
        }
        self.rows.sort_by(|a, b| order.compare(a, b));
        let file_sources = if self.rows.is_empty() {
            self.fan_in
        } else {
            self.fan_in - 1
        };
        while self.runs.len() > file_sources {
            // merging k runs removes k - 1 of them
            let k = (self.runs.len() - file_sources + 1).min(self.fan_in);
            self.merge_newest(k)?;
        }
        let mut sources = Vec::with_capacity(self.runs.len() + 1);
        for (run, _) in self.runs {
            sources.push(Source::File(run.read()?));
        }
        sources.push(Source::Memory(0..self.rows.len()));
        Ok(SortedRows {
            stats: self.stats,
            merge: Merge::new(sources, self.rows, self.order)?,
        })
    }

    fn write_run(&mut self) -> PgResult<()> {
        let order = &self.order;
        self.rows.sort_by(|a, b| order.compare(a, b));
        let mut out = RowWriter::create(&self.dir)?;
        for (_, row) in self.rows.drain(..) {
            out.push(&row)?;
        }
        self.sorted = 0;
        self.used = 0;
        self.add_run(out.finish()?, 0);
        Ok(())
    }

    fn add_run(&mut self, run: RowFile, merges: u32) {
        self.stats.add_file(run.bytes());
        self.runs.push((run, merges));
    }

    /// Merges the newest `fan_in` runs while they have been through equally many merges.
    fn cascade(&mut self) -> PgResult<()> {
        while let Some(newest) = self.runs.len().checked_sub(self.fan_in) {
            if self.runs[newest].1 != self.runs[self.runs.len() - 1].1 {
                return Ok(());
            }
            self.merge_newest(self.fan_in)?;
        }
        Ok(())
    }

    /// Replaces the newest `k` runs by one run of their merged rows.
    fn merge_newest(&mut self, k: usize) -> PgResult<()> {
        let group = self.runs.split_off(self.runs.len() - k);
        let merges = group.iter().map(|(_, m)| *m).max().unwrap_or(0) + 1;
        let mut sources = Vec::with_capacity(k);
        for (run, _) in group {
            sources.push(Source::File(run.read()?));
        }
        let mut out = RowWriter::create(&self.dir)?;
        for row in Merge::new(sources, Vec::new(), &self.order)? {
            out.push(&row?)?;
        }
        self.add_run(out.finish()?, merges);
        Ok(())
    }
}

/// The sorted rows from [`ExternalSorter::finish`]. Yields at most one error, then ends.
pub struct SortedRows<F> {
    stats: SpillStats,
    merge: Merge<RowOrder<F>>,
}

impl<F> SortedRows<F> {
    /// Temporary files the sort wrote (none if it fit the budget).
    pub fn stats(&self) -> SpillStats {
        self.stats
    }
}

impl<F: Fn(&[Value], &[Value]) -> Ordering> Iterator for SortedRows<F> {
    type Item = PgResult<Vec<Value>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.merge.next()
    }
}

/// The caller's comparator and abbreviation, owned by the sorter and its output, borrowed
/// by the merges of runs (hence the trait, implemented for both).
struct RowOrder<F> {
    cmp: F,
    abbreviate: Option<Abbreviate>,
}

trait Order {
    fn abbreviate(&self, row: &[Value]) -> u64;
    fn compare(&self, a: &Keyed, b: &Keyed) -> Ordering;
}

impl<F: Fn(&[Value], &[Value]) -> Ordering> Order for RowOrder<F> {
    fn abbreviate(&self, row: &[Value]) -> u64 {
        self.abbreviate
            .as_ref()
            .map_or(0, |abbreviate| abbreviate(row))
    }

    fn compare(&self, a: &Keyed, b: &Keyed) -> Ordering {
        a.0.cmp(&b.0).then_with(|| (self.cmp)(&a.1, &b.1))
    }
}

impl<O: Order> Order for &O {
    fn abbreviate(&self, row: &[Value]) -> u64 {
        (*self).abbreviate(row)
    }

    fn compare(&self, a: &Keyed, b: &Keyed) -> Ordering {
        (*self).compare(a, b)
    }
}

enum Source {
    File(RowReader),
    /// Sorted rows of the merge's `memory`, taken out as they are merged.
    Memory(std::ops::Range<usize>),
}

impl Source {
    fn next(&mut self, memory: &mut [Keyed], order: &impl Order) -> Option<PgResult<Keyed>> {
        match self {
            Source::File(reader) => reader
                .next()
                .map(|row| row.map(|row| (order.abbreviate(&row), row))),
            Source::Memory(range) => range.next().map(|i| Ok(std::mem::take(&mut memory[i]))),
        }
    }
}

/// A k-way merge of sorted sources: a binary min-heap of each source's next row (ties to
/// the lower source index, which keeps the merge stable). Hand-written because
/// `std::collections::BinaryHeap` orders by `Ord` and cannot take the caller's comparator.
struct Merge<O> {
    sources: Vec<Source>,
    /// The rows the `Source::Memory` ranges index (sorted in place, not copied).
    memory: Vec<Keyed>,
    /// (row, index of its source)
    heap: Vec<(Keyed, usize)>,
    order: O,
}

impl<O: Order> Merge<O> {
    fn new(mut sources: Vec<Source>, mut memory: Vec<Keyed>, order: O) -> PgResult<Self> {
        let mut heap = Vec::with_capacity(sources.len());
        for (i, source) in sources.iter_mut().enumerate() {
            if let Some(row) = source.next(&mut memory, &order) {
                heap.push((row?, i));
            }
        }
        let mut merge = Merge {
            sources,
            memory,
            heap,
            order,
        };
        for i in (0..merge.heap.len() / 2).rev() {
            merge.sift_down(i);
        }
        Ok(merge)
    }

    fn less(&self, a: usize, b: usize) -> bool {
        let ((row_a, src_a), (row_b, src_b)) = (&self.heap[a], &self.heap[b]);
        self.order.compare(row_a, row_b).then(src_a.cmp(src_b)) == Ordering::Less
    }

    fn sift_down(&mut self, mut at: usize) {
        loop {
            let (left, right) = (2 * at + 1, 2 * at + 2);
            let mut least = at;
            if left < self.heap.len() && self.less(left, least) {
                least = left;
            }
            if right < self.heap.len() && self.less(right, least) {
                least = right;
            }
            if least == at {
                return;
            }
            self.heap.swap(at, least);
            at = least;
        }
    }
}

impl<O: Order> Iterator for Merge<O> {
    type Item = PgResult<Vec<Value>>;

    fn next(&mut self) -> Option<Self::Item> {
        let source = self.heap.first()?.1;
        let least = match self.sources[source].next(&mut self.memory, &self.order) {
            Some(Ok(row)) => std::mem::replace(&mut self.heap[0].0, row),
            Some(Err(e)) => {
                self.heap.clear();
                return Some(Err(e));
            }
            None => self.heap.swap_remove(0).0,
        };
        if !self.heap.is_empty() {
            self.sift_down(0);
        }
        Some(Ok(least.1))
    }
}
