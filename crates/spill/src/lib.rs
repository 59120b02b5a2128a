//! Temporary files for operators that outgrow their memory budget (PostgreSQL's
//! `work_mem` and `base/pgsql_tmp`).
//!
//! * [`SpillDir`] — the server's directory for temporary files; files in it are created
//!   unlinked, so nothing outlives the process, and opening it removes crash leftovers.
//! * [`RowWriter`] → [`RowFile`] → [`RowReader`] — append rows, then read them back in order.
//! * [`ExternalSorter`] — sorts within a byte budget, spilling sorted runs and merging them.
//! * [`Partitioner`] — splits rows into files by hash (grace hash join, hash aggregation,
//!   DISTINCT), re-splittable with a new seed when a partition is still too big.
//!
//! Everything is synchronous std I/O through buffered readers and writers; async callers
//! yield between batches themselves. Rows are encoded with `types::codec::encode_row`.

mod abbreviate;
mod dir;
mod partition;
mod row_file;
mod sort;

pub use abbreviate::abbreviated_key;
pub use dir::SpillDir;
pub use partition::{Partition, Partitioner, MAX_PARTITION_DEPTH};
pub use row_file::{RowFile, RowReader, RowWriter};
pub use sort::{Abbreviate, ExternalSorter, SortedRows, MAX_FAN_IN};

use std::mem::size_of;
use types::Value;

/// Size of the buffer of every open temporary file (for writing and for reading). A merge
/// of `n` runs holds `n` of them, a partitioner with `n` partitions as many.
pub const FILE_BUFFER_BYTES: usize = 32 * 1024;

/// What an operator (or the whole [`SpillDir`]) wrote to temporary files: for tests and
/// for a log line like PostgreSQL's `log_temp_files`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpillStats {
    /// Temporary files written (runs of a sort, including those of merge passes; partitions).
    pub files: u64,
    /// Bytes written to them.
    pub bytes: u64,
}

impl SpillStats {
    fn add_file(&mut self, bytes: u64) {
        self.files += 1;
        self.bytes += bytes;
    }
}

/// Estimated heap footprint of a row held as `Vec<Value>`: the vector, its values and what
/// strings, byte strings and arrays point to (allocator overhead not counted). Used for
/// every memory budget, so operators account alike.
pub fn row_size(row: &[Value]) -> usize {
    size_of::<Vec<Value>>() + row.iter().map(value_size).sum::<usize>()
}

fn value_size(value: &Value) -> usize {
    size_of::<Value>()
        + match value {
            Value::Text(s) => s.capacity(),
            Value::Bytea(b) => b.capacity(),
            Value::Enum { label, .. } => label.capacity(),
            Value::Array(items) => {
                (items.capacity() - items.len()) * size_of::<Value>()
                    + items.iter().map(value_size).sum::<usize>()
            }
            _ => 0,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_size_counts_the_vector_values_and_their_contents() {
        let v = size_of::<Value>();
        let header = size_of::<Vec<Value>>();
        assert_eq!(row_size(&[]), header);
        assert_eq!(row_size(&[Value::Int8(1), Value::Null]), header + 2 * v);
        let text = Value::Text("x".repeat(20));
        assert_eq!(
            row_size(&[Value::Int8(1), text.clone()]),
            header + 2 * v + 20
        );
        let array = Value::Array(vec![text, Value::Bytea(vec![0; 5])]);
        assert_eq!(row_size(&[array]), header + 3 * v + 25);
    }
}
