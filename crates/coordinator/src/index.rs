//! Secondary indexes at run time (decision 0035): their entries written in the same
//! transaction as their rows, and lookups that turn an `Access::Index` into row keys.
//!
//! A unique entry is written with `insert`, which waits for a concurrent writer of the
//! same key and fails on a visible one: uniqueness is enforced exactly as a primary
//! key's, by the datanode's write locks. Other entries end with their row's key, so no
//! other transaction writes them while the row is locked.

use crate::exec::Executor;
use bytes::Bytes;
use datanode_client::LockWait;
use distribution::{ClusterTxn, Datanodes};
use pgerror::{codes, PgError, PgResult};
use sql::index::{prefix_end, IndexDef};
use sql::plan::IndexLookup;
use sql::TableDef;
use std::ops::Bound;
use types::Value;

/// PostgreSQL's unique violation of `index` by `row`.
pub fn unique_violation(table: &TableDef, index: &IndexDef, row: &[Value]) -> PgError {
    let (columns, values) = index.key_text(table, row);
    PgError::new(
        codes::UNIQUE_VIOLATION,
        format!(
            "duplicate key value violates unique constraint \"{}\"",
            index.name
        ),
    )
    .with_detail(format!("Key ({columns})=({values}) already exists."))
}

/// Writes the index entries of a new row stored under `row_key`, but that of
/// `table.indexes[written]` (an ON CONFLICT arbiter, written first).
pub async fn insert_entries(
    dn: &Datanodes,
    txn: &mut ClusterTxn,
    table: &TableDef,
    row: &[Value],
    row_key: &[u8],
    written: Option<usize>,
) -> PgResult<()> {
    for (i, index) in table.indexes.iter().enumerate() {
        if Some(i) != written {
            insert_entry(dn, txn, table, index, row, row_key).await?;
        }
    }
    Ok(())
}

pub async fn insert_entry(
    dn: &Datanodes,
    txn: &mut ClusterTxn,
    table: &TableDef,
    index: &IndexDef,
    row: &[Value],
    row_key: &[u8],
) -> PgResult<()> {
    let entry = index.entry(row, row_key);
    let value = Bytes::copy_from_slice(row_key);
    if entry.unique {
        dn.insert(txn, index.rel, &entry.key, value, || {
            unique_violation(table, index, row)
        })
        .await
    } else {
        lock_entry(dn, txn, index, &entry.key).await?;
        dn.put(txn, index.rel, &entry.key, Some(value))
    }
}

/// Takes an entry's lock, waiting for its holder. A non-unique entry ends with its row's
/// key, so only the row's lock holder writes it, but the previous holder keeps the
/// entry's lock until its commit is durable (a row's lock passes on when the commit is
/// applied): a `put` that does not wait would find it taken.
async fn lock_entry(
    dn: &Datanodes,
    txn: &mut ClusterTxn,
    index: &IndexDef,
    key: &[u8],
) -> PgResult<()> {
    dn.lock_row(txn, index.rel, key, LockWait::Wait)
        .await
        .map(|_| ())
}

/// Removes the index entries of a deleted row (locked by the caller).
pub async fn remove_entries(
    dn: &Datanodes,
    txn: &mut ClusterTxn,
    table: &TableDef,
    row: &[Value],
    row_key: &[u8],
) -> PgResult<()> {
    for index in &table.indexes {
        remove_entry(dn, txn, index, row, row_key).await?;
    }
    Ok(())
}

async fn remove_entry(
    dn: &Datanodes,
    txn: &mut ClusterTxn,
    index: &IndexDef,
    row: &[Value],
    row_key: &[u8],
) -> PgResult<()> {
    let entry = index.entry(row, row_key);
    // A writer of the same unique value may hold the entry's lock for a moment (until
    // its insert fails), and a non-unique entry's last writer until its commit is
    // durable: wait for them as for a row.
    lock_entry(dn, txn, index, &entry.key).await?;
    dn.put(txn, index.rel, &entry.key, None)
}

/// Moves the index entries of an updated row: only those of indexes whose values (or
/// whose row key) changed.
pub async fn update_entries(
    dn: &Datanodes,
    txn: &mut ClusterTxn,
    table: &TableDef,
    (old, old_key): (&[Value], &[u8]),
    (new, new_key): (&[Value], &[u8]),
) -> PgResult<()> {
    for index in &table.indexes {
        if old_key == new_key && index.entry(old, old_key) == index.entry(new, new_key) {
            continue;
        }
        remove_entry(dn, txn, index, old, old_key).await?;
        insert_entry(dn, txn, table, index, new, new_key).await?;
    }
    Ok(())
}

/// The storage keys of the rows `lookup` finds in `table.indexes[index]`, in index order
/// for each prefix or range.
pub async fn row_keys(
    ex: &Executor<'_>,
    table: &TableDef,
    index: usize,
    lookup: &IndexLookup,
    outer: &[crate::exec::Row],
) -> PgResult<Vec<Vec<u8>>> {
    let index = &table.indexes[index];
    let eval_key = async |exprs: &[sql::Expr]| -> PgResult<Option<Vec<u8>>> {
        let mut values = Vec::with_capacity(exprs.len());
        for e in exprs {
            values.push(ex.eval(outer, e, &[]).await?);
        }
        // NULL equals nothing, and bounds nothing.
        Ok(crate::exec::key_of_values(&values))
    };
    let mut found = Vec::new();
    match lookup {
        IndexLookup::Prefixes(prefixes) => {
            let mut keys = Vec::with_capacity(prefixes.len());
            for prefix in prefixes {
                if let Some(key) = eval_key(prefix).await? {
                    keys.push((key, prefix.len()));
                }
            }
            // An IN list may name a value twice; its rows are found once, in index order.
            keys.sort();
            keys.dedup();
            for (key, len) in keys {
                if index.unique && len == index.columns.len() {
                    // One entry at most, read from its datanode alone.
                    let row_key = ex.dn.get(ex.txn, index.rel, &key, ex.snapshot).await?;
                    found.extend(row_key.map(|k| k.to_vec()));
                } else {
                    let end = prefix_end(&key);
                    scan(ex, index, Bound::Included(key), end, &mut found).await?;
                }
            }
        }
        IndexLookup::Range { lower, upper } => {
            let range =
                crate::exec::key_range(ex, outer, &[], lower.as_ref(), upper.as_ref()).await?;
            let Some((lo, hi)) = range else {
                return Ok(Vec::new());
            };
            scan(ex, index, lo, hi, &mut found).await?;
        }
    }
    Ok(found)
}

/// Appends the row keys of `index`'s entries in `[lo, hi)`.
async fn scan(
    ex: &Executor<'_>,
    index: &IndexDef,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    found: &mut Vec<Vec<u8>>,
) -> PgResult<()> {
    let mut entries = ex
        .dn
        .scan_rows(ex.txn, index.rel, lo, hi, ex.snapshot)
        .await?;
    while let Some(row_key) = entries.next().await {
        found.push(row_key?.to_vec());
    }
    Ok(())
}
