//! Bulk loads into a relation the transaction owns (`Datanode::own_relation`): COPY into
//! a table the same transaction truncated (pgbench -i's load), and the rebuild of a
//! table under a new primary key. Rows go straight into storage as sorted tables
//! (`Datanode::bulk_load`), never into the transaction's write set, so a load of any size
//! runs in bounded memory.
//!
//! Under row ids the rows arrive in key order and are passed on in chunks. Under a primary
//! key they are sorted first (an external sort within `SORT_BUDGET`, spilling to
//! `pgsql_tmp`), which also brings duplicates next to each other: a duplicate key fails
//! the load with 23505, as a unique index build does.

use crate::exec::{decode, row_id_key, row_key};
use datanode_client::Chunk;
use datanode_client::Timestamp;
use distribution::{ClusterBulkLoad, ClusterTxn, Datanodes};
use pgerror::{PgError, PgResult};
use sql::TableDef;
use std::cmp::Ordering;
use std::sync::Arc;
use types::Value;

/// Memory for sorting the rows of a keyed load: PostgreSQL's default
/// `maintenance_work_mem`, which bounds its index builds.
pub const SORT_BUDGET: usize = 64 << 20;

/// Bytes of rows passed to the storage loader at a time.
const CHUNK_BYTES: usize = 1 << 20;

type KeyOrder = fn(&[Value], &[Value]) -> Ordering;

/// A load in progress; `finish` makes its rows visible to the transaction.
pub struct BulkSink {
    table: Arc<TableDef>,
    mode: Mode,
}

enum Mode {
    /// Rows that arrive in key order: fresh row ids, or a scan that happens to be in the
    /// order of a new primary key.
    InOrder(Stream),
    /// Rows under their primary key, as (key, row bytes), sorted at the end.
    Sorted(spill::ExternalSorter<KeyOrder>),
}

/// What `BulkSink::push` did with a row.
#[derive(Debug, PartialEq, Eq)]
pub enum Pushed {
    Taken,
    /// An in-order load met a key not above the previous one; it takes nothing more (the
    /// caller starts over with a sorted load, which also finds duplicates).
    NotAscending,
}

/// Rows passed on to the storage loader in chunks, keys strictly ascending.
struct Stream {
    load: ClusterBulkLoad,
    chunk: Chunk,
    /// The last key of the chunks already passed on.
    last_passed: Option<Vec<u8>>,
}

impl Stream {
    fn new(load: ClusterBulkLoad) -> Self {
        Stream {
            load,
            chunk: Chunk::default(),
            last_passed: None,
        }
    }

    fn last_key(&self) -> Option<&[u8]> {
        self.chunk.last_key().or(self.last_passed.as_deref())
    }

    async fn push(&mut self, key: &[u8], row: &[u8]) -> PgResult<Pushed> {
        if self.last_key().is_some_and(|last| last >= key) {
            return Ok(Pushed::NotAscending);
        }
        self.chunk.push(key, row);
        if self.chunk.byte_len() >= CHUNK_BYTES {
            self.last_passed = self.chunk.last_key().map(<[u8]>::to_vec);
            let full = std::mem::replace(&mut self.chunk, self.load.empty_chunk());
            self.load.write(full).await?;
        }
        Ok(Pushed::Taken)
    }

    async fn finish(mut self) -> PgResult<u64> {
        if !self.chunk.is_empty() {
            self.load.write(self.chunk).await?;
        }
        self.load.finish().await
    }
}

fn key_bytes(row: &[Value]) -> &[u8] {
    match &row[0] {
        Value::Bytea(k) => k,
        _ => unreachable!("sorted load rows start with their key"),
    }
}

impl BulkSink {
    /// Starts a load into `table` (whose relation the transaction owns and may load,
    /// `Datanode::can_bulk_load`): in order under row ids, sorted under a primary key.
    pub fn start(
        dn: &Datanodes,
        txn: &mut ClusterTxn,
        table: Arc<TableDef>,
        spill: &spill::SpillDir,
    ) -> PgResult<BulkSink> {
        if table.primary_key.is_none() {
            return BulkSink::start_in_order(dn, txn, table);
        }
        let cmp: KeyOrder = |a, b| key_bytes(a).cmp(key_bytes(b));
        let abbreviate: spill::Abbreviate = Box::new(|row| {
            let mut first = [0u8; 8];
            let k = key_bytes(row);
            let n = k.len().min(8);
            first[..n].copy_from_slice(&k[..n]);
            u64::from_be_bytes(first)
        });
        let sorter = spill::ExternalSorter::with_abbreviation(SORT_BUDGET, spill, cmp, abbreviate);
        Ok(BulkSink {
            table,
            mode: Mode::Sorted(sorter),
        })
    }

    /// Starts a load of rows expected in key order (see `Pushed::NotAscending`).
    pub fn start_in_order(
        dn: &Datanodes,
        txn: &mut ClusterTxn,
        table: Arc<TableDef>,
    ) -> PgResult<BulkSink> {
        let load = dn.bulk_load(txn, table.rel)?;
        Ok(BulkSink {
            table,
            mode: Mode::InOrder(Stream::new(load)),
        })
    }

    /// Adds a row, `encoded` as stored; `row_id` is its fresh row id if its table has no
    /// primary key.
    pub async fn push(
        &mut self,
        row: &[Value],
        encoded: &[u8],
        row_id: Option<u64>,
    ) -> PgResult<Pushed> {
        let key = match (row_key(&self.table, row), row_id) {
            (Some(key), _) => key,
            (None, Some(id)) => row_id_key(id),
            (None, None) => return Err(PgError::internal("a row without a key or a row id")),
        };
        match &mut self.mode {
            Mode::InOrder(stream) => stream.push(&key, encoded).await,
            Mode::Sorted(sorter) => {
                sorter.push(vec![Value::Bytea(key), Value::Bytea(encoded.to_vec())])?;
                Ok(Pushed::Taken)
            }
        }
    }

    /// Loads what is left (for a sorted load: everything, in key order, failing on a
    /// duplicate key or one the relation holds already) and waits until it is stored.
    /// Keys are looked up in the relation (at `snapshot`) only when the transaction loaded
    /// rows into it before; `duplicate` makes the error for a row whose key is taken.
    /// Returns the number of rows.
    pub async fn finish(
        self,
        dn: &Datanodes,
        txn: &mut ClusterTxn,
        snapshot: Timestamp,
        duplicate: &(dyn Fn(&[Value]) -> PgError + Sync),
    ) -> PgResult<u64> {
        let sorter = match self.mode {
            Mode::InOrder(stream) => return stream.finish().await,
            Mode::Sorted(sorter) => sorter,
        };
        let check_existing = dn.has_bulk_loaded(txn, self.table.rel);
        // The sort's merges block this worker for a while, as the executor's sorts do.
        let mut sorted = sorter.finish()?;
        let mut stream = Stream::new(dn.bulk_load(txn, self.table.rel)?);
        while let Some(row) = sorted.next().transpose()? {
            let mut values = row.into_iter();
            let (Some(Value::Bytea(key)), Some(Value::Bytea(encoded))) =
                (values.next(), values.next())
            else {
                unreachable!("sorted load rows are (key, row)")
            };
            // Sorted: a key not above the last one equals it.
            let taken = stream.last_key() == Some(key.as_slice())
                || (check_existing && dn.get(txn, self.table.rel, &key, snapshot).await?.is_some());
            if taken {
                return Err(duplicate(&decode(&encoded, &self.table)?));
            }
            stream.push(&key, &encoded).await?;
        }
        stream.finish().await
    }
}
