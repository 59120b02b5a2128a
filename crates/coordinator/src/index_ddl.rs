//! CREATE INDEX, DROP INDEX, and the indexes of UNIQUE constraints (CREATE TABLE's and
//! ALTER TABLE's), TRUNCATE, DROP TABLE and ALTER COLUMN TYPE (decision 0035).
//!
//! An index is built over the rows at the statement's snapshot, in the statement's
//! transaction (so its own uncommitted rows are indexed too), reading the table a batch
//! at a time and writing the batch's entries; it becomes part of the table's definition,
//! so every later writer maintains it, and commits or rolls back with the transaction.

use crate::ddl::InTxn;
use crate::ddl_log::DdlLog;
use crate::exec::decode;
use crate::server::Shared;
use bytes::BytesMut;
use distribution::{ClusterTxn, RelPlacement};
use pgerror::{codes, PgError, PgResult};
use sql::catalog::Catalog;
use sql::index::{IndexColumn, IndexDef};
use sql::plan::{CreateIndex, UniqueConstraint};
use sql::TableDef;
use std::ops::Bound;
use std::sync::Arc;

/// Rows read per batch of an index build.
const BUILD_BATCH: usize = 1000;

/// OIDs reserved per index: the index and its constraint (for a UNIQUE constraint).
const OIDS_PER_INDEX: u32 = 2;

/// The table and position of the index named `name`, if any.
/// The table whose secondary index is named `name`.
pub fn table_of_index(shared: &Shared, name: &str) -> Option<Arc<TableDef>> {
    find_index(shared, name).map(|(table, _)| table)
}

fn find_index(shared: &Shared, name: &str) -> Option<(Arc<TableDef>, usize)> {
    shared.catalog.tables().into_iter().find_map(|t| {
        let i = t.indexes.iter().position(|ix| ix.name == name)?;
        Some((t, i))
    })
}

/// Whether a relation (table, primary key or index) is named `name`.
pub(crate) fn relation_exists(shared: &Shared, name: &str) -> bool {
    shared.catalog.table(None, name).is_some()
        || shared.catalog.view(name).is_some()
        || shared.catalog.tables().iter().any(|t| {
            t.pk_name.as_deref() == Some(name) || t.indexes.iter().any(|ix| ix.name == name)
        })
}

fn plain_columns(columns: &[usize]) -> Vec<IndexColumn> {
    columns
        .iter()
        .map(|&column| IndexColumn {
            column,
            descending: false,
            nulls_first: false,
        })
        .collect()
}

/// A new index's definition with a fresh relation placed for `table`.
async fn new_index(
    shared: &Shared,
    log: &mut DdlLog,
    table: &TableDef,
    name: String,
    columns: Vec<IndexColumn>,
    unique: bool,
    constraint: bool,
) -> PgResult<IndexDef> {
    let oid = shared.catalog.allocate_oids(OIDS_PER_INDEX).await?;
    let mut index = IndexDef {
        oid,
        name,
        columns,
        unique,
        constraint_oid: constraint.then_some(oid + 1),
        rel: 0,
    };
    index.rel = log
        .create_rel(shared, RelPlacement::of_index(table, &index))
        .await?;
    Ok(index)
}

/// The indexes of CREATE TABLE's UNIQUE constraints, for the new `table` (empty: there
/// is nothing to build).
pub async fn constraint_indexes(
    shared: &Shared,
    log: &mut DdlLog,
    table: &TableDef,
    unique: &[UniqueConstraint],
) -> PgResult<Vec<IndexDef>> {
    let mut indexes = Vec::with_capacity(unique.len());
    for u in unique {
        if relation_exists(shared, &u.name) || indexes.iter().any(|i: &IndexDef| i.name == u.name) {
            return Err(PgError::new(
                codes::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists", u.name),
            ));
        }
        let columns = plain_columns(&u.columns);
        indexes.push(new_index(shared, log, table, u.name.clone(), columns, true, true).await?);
    }
    Ok(indexes)
}

pub async fn create_index(
    shared: &Shared,
    log: &mut DdlLog,
    rows: &mut InTxn<'_>,
    ci: &CreateIndex,
    out: &mut BytesMut,
) -> PgResult<()> {
    let table = crate::ddl::current(shared, &ci.table)?;
    let name = match &ci.name {
        Some(name) if relation_exists(shared, name) => {
            if ci.if_not_exists {
                crate::ddl::notice(
                    out,
                    codes::DUPLICATE_TABLE,
                    format!("relation \"{name}\" already exists, skipping"),
                );
                return Ok(());
            }
            return Err(PgError::new(
                codes::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        Some(name) => name.clone(),
        None => {
            let names: Vec<&str> = ci
                .columns
                .iter()
                .map(|c| table.columns[c.column].name.as_str())
                .collect();
            sql::index::default_name(&table.name, &names, "idx", &|n| relation_exists(shared, n))
        }
    };
    let index = new_index(
        shared,
        log,
        &table,
        name,
        ci.columns.clone(),
        ci.unique,
        false,
    )
    .await?;
    build(shared, &table, &index, rows).await?;
    // The table as it is now (a TRUNCATE meanwhile would have replaced its relation).
    let mut def = (*crate::ddl::current(shared, &table)?).clone();
    def.indexes.push(index);
    log.put(shared, def).await?;
    Ok(())
}

/// ALTER TABLE … ADD [CONSTRAINT name] UNIQUE (columns): the constraint's index, built
/// over the rows of `table` (whose definition the caller then stores with it).
pub async fn unique_constraint(
    shared: &Shared,
    log: &mut DdlLog,
    rows: &mut InTxn<'_>,
    table: &TableDef,
    columns: &[usize],
    name: Option<&str>,
) -> PgResult<IndexDef> {
    let taken = |n: &str| relation_exists(shared, n) || table.indexes.iter().any(|i| i.name == n);
    let name = match name {
        Some(name) if taken(name) => {
            return Err(PgError::new(
                codes::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ))
        }
        Some(name) => name.to_string(),
        None => {
            let names: Vec<&str> = columns
                .iter()
                .map(|&c| table.columns[c].name.as_str())
                .collect();
            sql::index::default_name(&table.name, &names, "key", &taken)
        }
    };
    let index = new_index(shared, log, table, name, plain_columns(columns), true, true).await?;
    build(shared, table, &index, rows).await?;
    Ok(index)
}

/// `index` under a fresh relation built over `table`'s rows (ALTER COLUMN TYPE changed
/// a column it covers); the caller drops the old relation once nothing reads it.
pub async fn rebuilt(
    shared: &Shared,
    log: &mut DdlLog,
    rows: &mut InTxn<'_>,
    table: &TableDef,
    index: &IndexDef,
) -> PgResult<IndexDef> {
    let mut fresh = index.clone();
    fresh.rel = log
        .create_rel(shared, RelPlacement::of_index(table, index))
        .await?;
    build(shared, table, &fresh, rows).await?;
    Ok(fresh)
}

/// Writes the entries of `table`'s rows into the new `index`, a batch of rows at a time
/// at one snapshot; a unique index fails at its first duplicate (23505, PostgreSQL's
/// message for a build).
async fn build(
    shared: &Shared,
    table: &TableDef,
    index: &IndexDef,
    rows: &mut InTxn<'_>,
) -> PgResult<()> {
    let dn = &shared.datanodes;
    let start = rows.snapshot;
    let txn = &mut *rows.txn;
    let mut after = Bound::Unbounded;
    loop {
        let mut batch = Vec::with_capacity(BUILD_BATCH);
        {
            let mut rows = dn
                .scan(txn, table.rel, after.clone(), Bound::Unbounded, start)
                .await?;
            while batch.len() < BUILD_BATCH {
                let Some(item) = rows.next().await else { break };
                batch.push(item?);
            }
        }
        let Some((last, _)) = batch.last() else {
            return Ok(());
        };
        after = Bound::Excluded(last.clone());
        for (key, bytes) in &batch {
            let row = decode(bytes, table)?;
            let entry = index.entry(&row, key);
            let value = bytes::Bytes::copy_from_slice(key);
            if entry.unique {
                dn.insert(txn, index.rel, &entry.key, value, || {
                    let (columns, values) = index.key_text(table, &row);
                    PgError::new(
                        codes::UNIQUE_VIOLATION,
                        format!("could not create unique index \"{}\"", index.name),
                    )
                    .with_detail(format!("Key ({columns})=({values}) is duplicated."))
                })
                .await?;
            } else {
                dn.put(txn, index.rel, &entry.key, Some(value))?;
            }
        }
    }
}

/// DROP INDEX: every name is resolved before the first index is dropped, so that a
/// failing name drops none (as PostgreSQL's one transaction does).
pub async fn drop_indexes(
    shared: &Shared,
    log: &mut DdlLog,
    names: &[String],
    if_exists: bool,
    out: &mut BytesMut,
) -> PgResult<()> {
    let mut found = Vec::with_capacity(names.len());
    for name in names {
        match find_index(shared, name) {
            Some((table, i)) if table.indexes[i].constraint_oid.is_some() => {
                return Err(requires(shared, name))
            }
            Some((table, i)) => {
                let index = &table.indexes[i];
                let what = format!("index {}", index.name);
                let tables = shared.catalog.tables();
                crate::foreign_keys::refuse_drop_of_referenced_key(
                    &tables, &table, index.oid, &what,
                )?;
                found.push(name)
            }
            None if table_has_key_named(shared, name) => return Err(requires(shared, name)),
            None if if_exists => crate::ddl::notice(
                out,
                codes::SUCCESSFUL_COMPLETION,
                sql::catalog::skipped_notice("index", name),
            ),
            None => {
                return Err(PgError::new(
                    codes::UNDEFINED_OBJECT,
                    format!("index \"{name}\" does not exist"),
                ))
            }
        }
    }
    for name in found {
        // Looked up again: an earlier name may have been an index of the same table.
        let Some((table, i)) = find_index(shared, name) else {
            continue;
        };
        let mut def = (*table).clone();
        def.indexes.remove(i);
        log.put(shared, def).await?;
    }
    Ok(())
}

fn table_has_key_named(shared: &Shared, name: &str) -> bool {
    shared
        .catalog
        .tables()
        .iter()
        .any(|t| t.pk_name.as_deref() == Some(name))
}

/// PostgreSQL's refusal to drop a constraint's index.
fn requires(shared: &Shared, name: &str) -> PgError {
    let table = shared
        .catalog
        .tables()
        .into_iter()
        .find(|t| t.pk_name.as_deref() == Some(name) || t.indexes.iter().any(|ix| ix.name == name))
        .map(|t| t.name.clone())
        .unwrap_or_default();
    PgError::new(
        codes::DEPENDENT_OBJECTS_STILL_EXIST,
        format!("cannot drop index {name} because constraint {name} on table {table} requires it"),
    )
    .with_hint(format!(
        "You can drop constraint {name} on table {table} instead."
    ))
}

/// The index definitions of a truncated table: each under a fresh, empty relation,
/// owned by `txn` when the TRUNCATE runs in a transaction block.
pub async fn truncated(
    shared: &Shared,
    table: &TableDef,
    log: &mut DdlLog,
    mut txn: Option<&mut ClusterTxn>,
) -> PgResult<Vec<IndexDef>> {
    let mut indexes = table.indexes.clone();
    for index in &mut indexes {
        index.rel = log
            .create_rel(shared, RelPlacement::of_index(table, index))
            .await?;
        if let Some(txn) = txn.as_deref_mut() {
            shared.datanodes.own_relation(txn, index.rel);
        }
    }
    Ok(indexes)
}
