//! Hash partitioning into temporary files, for grace hash join, hash aggregation and
//! DISTINCT past the memory budget.
//!
//! The caller hashes each row's key (the same function at every depth, e.g.
//! `Value::hash_into`) and the partitioner picks the partition from that hash mixed with a
//! seed of its depth: rows that shared a partition at depth `d` spread over the partitions
//! of depth `d + 1`, and two partitioners of the same depth and fan-out (a join's build and
//! probe sides) send equal hashes to the same index.

use crate::row_file::{RowFile, RowReader, RowWriter};
use crate::SpillDir;
use pgerror::{PgError, PgResult};
use types::Value;

/// Deepest split: with 32 partitions per split, 32⁴ ≈ 10⁶ partitions. A partition still
/// too big at this depth holds mostly rows of one hash (one key repeated), which no seed
/// separates: hash aggregation and DISTINCT fold such rows into one group anyway; a hash
/// join builds its table from the build partition in budget-sized chunks and reads the
/// probe partition once per chunk ([`RowReader::rewind`]).
pub const MAX_PARTITION_DEPTH: u32 = 4;

/// Writes rows into `fanout` partitions by hash. Each non-empty partition holds a write
/// buffer of `FILE_BUFFER_BYTES` until [`Partitioner::finish`].
pub struct Partitioner {
    dir: SpillDir,
    depth: u32,
    writers: Vec<Option<RowWriter>>,
}

impl Partitioner {
    /// `depth` is 0 for the first split of an operator's input; [`Partition::split`]
    /// makes the deeper ones.
    pub fn new(dir: &SpillDir, fanout: usize, depth: u32) -> Self {
        let writers = std::iter::repeat_with(|| None)
            .take(fanout.max(1))
            .collect();
        Partitioner {
            dir: dir.clone(),
            depth,
            writers,
        }
    }

    /// The partition a row of this hash goes to.
    pub fn partition_of(&self, hash: u64) -> usize {
        let seeded =
            hash.wrapping_add(u64::from(self.depth + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        // multiply-shift maps the mixed hash uniformly onto 0..fanout without a division
        ((u128::from(mix(seeded)) * self.writers.len() as u128) >> 64) as usize
    }

    pub fn push(&mut self, hash: u64, row: &[Value]) -> PgResult<()> {
        self.push_parts(hash, &[row])
    }

    /// `push` of the row made of `parts` one after the other, without building it.
    pub fn push_parts(&mut self, hash: u64, parts: &[&[Value]]) -> PgResult<()> {
        let index = self.partition_of(hash);
        let writer = match &mut self.writers[index] {
            Some(writer) => writer,
            empty => empty.insert(RowWriter::create(&self.dir)?),
        };
        writer.push_parts(parts)
    }

    /// All `fanout` partitions, in index order (empty ones included, so that the
    /// partitions of a join's two sides pair up by position).
    pub fn finish(self) -> PgResult<Vec<Partition>> {
        let Partitioner {
            dir,
            depth,
            writers,
        } = self;
        let mut partitions = Vec::with_capacity(writers.len());
        for (index, writer) in writers.into_iter().enumerate() {
            let file = writer.map(RowWriter::finish).transpose()?;
            partitions.push(Partition {
                dir: dir.clone(),
                index,
                depth,
                file,
            });
        }
        Ok(partitions)
    }
}

/// murmur3's 64-bit finaliser: a bijection in which every input bit affects every output bit.
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// One partition written by a [`Partitioner`], to be read back (or split) on its own.
pub struct Partition {
    dir: SpillDir,
    index: usize,
    depth: u32,
    file: Option<RowFile>,
}

impl Partition {
    /// Position among the partitions of its partitioner.
    pub fn index(&self) -> usize {
        self.index
    }

    pub fn depth(&self) -> u32 {
        self.depth
    }

    pub fn rows(&self) -> u64 {
        self.file.as_ref().map_or(0, RowFile::rows)
    }

    pub fn bytes(&self) -> u64 {
        self.file.as_ref().map_or(0, RowFile::bytes)
    }

    /// The partition's rows in the order they were pushed; `None` when it has none.
    pub fn read(self) -> PgResult<Option<RowReader>> {
        self.file.map(RowFile::read).transpose()
    }

    /// Whether [`Partition::split`] may be called (the depth is below [`MAX_PARTITION_DEPTH`]).
    pub fn can_split(&self) -> bool {
        self.depth < MAX_PARTITION_DEPTH
    }

    /// Re-partitions this partition's rows one level deeper, with `hash` the same function
    /// the rows were first partitioned by. If every row lands in one partition again, the
    /// rows share their hash and further splits will not separate them.
    pub fn split(self, fanout: usize, hash: impl Fn(&[Value]) -> u64) -> PgResult<Vec<Partition>> {
        if !self.can_split() {
            return Err(PgError::internal(format!(
                "cannot split a spill partition past depth {MAX_PARTITION_DEPTH}"
            )));
        }
        let mut deeper = Partitioner::new(&self.dir, fanout, self.depth + 1);
        if let Some(reader) = self.read()? {
            for row in reader {
                let row = row?;
                deeper.push(hash(&row), &row)?;
            }
        }
        deeper.finish()
    }
}
