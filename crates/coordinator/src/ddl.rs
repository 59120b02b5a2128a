//! DDL: CREATE/DROP/TRUNCATE TABLE, VACUUM, and the primary-key build of ALTER TABLE …
//! ADD PRIMARY KEY; ALTER TABLE is `alter_table`'s, the sequence statements are
//! `sequence_ddl`'s.
//!
//! DDL takes effect immediately; the transaction's `DdlLog` undoes it if the transaction
//! rolls back (decision 0038). Rewrites (TRUNCATE, ADD PRIMARY KEY) write into a
//! fresh storage relation and switch the table to it, like PostgreSQL's relfilenode swap;
//! the old relation is dropped when the transaction commits.

use crate::bulk::{BulkSink, Pushed};
use crate::ddl_log::DdlLog;
use crate::ownership::Who;
use crate::server::Shared;
use bytes::BytesMut;
use datanode_client::{Isolation, Timestamp};
use distribution::{ClusterTxn, RelPlacement};
use pgerror::{codes, PgError, PgResult};
use sql::catalog::{CheckDef, ForeignKeyDef};
use sql::plan::{CommentTarget, CreateTable, Statement};
use sql::view::ViewDef;
use sql::TableDef;
use std::ops::Bound;
use std::sync::Arc;
use types::Value;
use wire::backend::{self, NoticeSeverity};

/// OIDs reserved per table: the table, its primary-key index, its primary-key constraint.
const OIDS_PER_TABLE: u32 = 3;

pub(crate) fn notice(out: &mut BytesMut, code: &'static str, message: String) {
    notice_with(out, NoticeSeverity::Notice, code, message);
}

pub(crate) fn notice_with(
    out: &mut BytesMut,
    severity: NoticeSeverity,
    code: &'static str,
    message: String,
) {
    backend::notice_response_with(out, severity, &PgError::new(code, message));
}

/// The statement's transaction and snapshot, for DDL that reads or writes rows.
pub struct InTxn<'t> {
    pub txn: &'t mut ClusterTxn,
    pub snapshot: Timestamp,
}

/// Execute a DDL statement; returns the command tag. `rows` is the statement's
/// transaction where it has one (always for CREATE INDEX, which reads the rows; inside a
/// block for TRUNCATE, whose transaction owns the relations it creates). Catalog changes
/// go through the transaction's `log`.
pub async fn execute(
    shared: &Shared,
    stmt: &Statement,
    mut rows: Option<InTxn<'_>>,
    log: &mut DdlLog,
    who: &Who,
    out: &mut BytesMut,
) -> PgResult<String> {
    use sql::catalog::Catalog;
    // DDL reads the catalog as it executes: with every other coordinator's changes (one
    // round trip to the metadata service; DDL is rare).
    shared.catalog.refresh().await?;
    crate::privileges::check_ddl(shared, who, stmt)?;
    match stmt {
        Statement::CreateTable(ct) => {
            if crate::index_ddl::relation_exists(shared, &ct.name) {
                if ct.if_not_exists {
                    notice(
                        out,
                        codes::DUPLICATE_TABLE,
                        format!("relation \"{}\" already exists, skipping", ct.name),
                    );
                    return Ok("CREATE TABLE".into());
                }
                return Err(PgError::new(
                    codes::DUPLICATE_TABLE,
                    format!("relation \"{}\" already exists", ct.name),
                ));
            }
            // A failure leaves the table to the transaction's rollback.
            create_table(shared, log, ct, who.oid).await?;
            crate::sequence_ddl::create_column_sequences(shared, log, ct).await?;
            Ok("CREATE TABLE".into())
        }
        Statement::DropTable {
            names,
            if_exists,
            cascade,
        } => {
            let mut tables = Vec::new();
            for name in names {
                match shared.catalog.table(None, name) {
                    Some(t) => tables.push(t),
                    None if shared.catalog.sequence(name).is_some() => {
                        return Err(crate::sequence_ddl::not_a_table(name))
                    }
                    None if shared.catalog.view(name).is_some() => {
                        return Err(crate::view_ddl::wrong_kind(
                            name,
                            "table",
                            "Use DROP VIEW to remove a view.",
                        ))
                    }
                    None if *if_exists => notice(
                        out,
                        codes::SUCCESSFUL_COMPLETION,
                        sql::catalog::skipped_notice("table", name),
                    ),
                    None => {
                        return Err(PgError::new(
                            codes::UNDEFINED_TABLE,
                            format!("table \"{name}\" does not exist"),
                        ))
                    }
                }
            }
            let dropped: Vec<_> = tables
                .iter()
                .map(|t| crate::view_ddl::Dropped {
                    oid: t.oid,
                    kind: "table",
                    name: t.name.clone(),
                })
                .collect();
            drop_referencing_keys(shared, log, &tables, *cascade, out).await?;
            crate::view_ddl::drop_dependent_views(shared, log, &dropped, *cascade, out).await?;
            for t in tables {
                log.remove(shared, t.oid).await?;
                crate::sequence_ddl::drop_owned(shared, log, t.oid).await?;
            }
            Ok("DROP TABLE".into())
        }
        Statement::Truncate { tables } => {
            for t in tables {
                let current = current(shared, t)?;
                let rel = log.create_rel(shared, RelPlacement::of(&current)).await?;
                let mut owner = rows.as_mut().map(|r| &mut *r.txn);
                if let Some(txn) = owner.as_deref_mut() {
                    // Before anyone can see the relation.
                    shared.datanodes.own_relation(txn, rel);
                }
                let indexes = crate::index_ddl::truncated(shared, &current, log, owner).await?;
                let truncated = TableDef {
                    rel,
                    indexes,
                    ..(*current).clone()
                };
                log.put(shared, truncated).await?;
            }
            Ok("TRUNCATE TABLE".into())
        }
        Statement::CreateIndex(ci) => {
            let rows = rows
                .as_mut()
                .ok_or_else(|| PgError::internal("CREATE INDEX outside a transaction"))?;
            crate::index_ddl::create_index(shared, log, rows, ci, out).await?;
            Ok("CREATE INDEX".into())
        }
        Statement::DropIndex { names, if_exists } => {
            crate::index_ddl::drop_indexes(shared, log, names, *if_exists, out).await?;
            Ok("DROP INDEX".into())
        }
        Statement::Vacuum {
            tables,
            vacuum,
            analyze,
        } => {
            let targets = if tables.is_empty() {
                shared.catalog.tables()
            } else {
                tables.clone()
            };
            for t in targets {
                let table = current(shared, &t)?;
                shared.datanodes.vacuum(table.rel).await?;
                // Meridian keeps no planner statistics: ANALYZE only counts
                let now = types::datetime::now_timestamp();
                let stats = &shared.cumulative_stats;
                if *vacuum {
                    stats.vacuumed(table.oid, false, now);
                }
                if *analyze {
                    stats.vacuumed(table.oid, true, now);
                }
            }
            Ok(if *vacuum {
                "VACUUM".into()
            } else {
                "ANALYZE".into()
            })
        }
        Statement::CreateSequence(cs) => {
            crate::sequence_ddl::create(shared, log, cs, who.oid, out).await?;
            Ok("CREATE SEQUENCE".into())
        }
        Statement::AlterSequence(alter) => {
            crate::sequence_ddl::alter(shared, log, alter, out).await?;
            Ok("ALTER SEQUENCE".into())
        }
        Statement::DropSequence {
            names,
            if_exists,
            cascade,
        } => {
            crate::sequence_ddl::drop(shared, log, names, *if_exists, *cascade, out).await?;
            Ok("DROP SEQUENCE".into())
        }
        Statement::CreateEnum(ce) => {
            crate::type_ddl::create(shared, log, ce).await?;
            Ok("CREATE TYPE".into())
        }
        Statement::AddEnumValue(add) => {
            crate::type_ddl::add_value(shared, log, add, out).await?;
            Ok("ALTER TYPE".into())
        }
        Statement::RenameEnumValue(rename) => {
            crate::type_ddl::rename_value(shared, log, rename).await?;
            Ok("ALTER TYPE".into())
        }
        Statement::RenameType { name, new_name } => {
            crate::type_ddl::rename(shared, log, name, new_name).await?;
            Ok("ALTER TYPE".into())
        }
        Statement::DropType {
            names,
            if_exists,
            cascade,
        } => {
            crate::type_ddl::drop(shared, log, names, *if_exists, *cascade, out).await?;
            Ok("DROP TYPE".into())
        }
        Statement::CreateView(cv) => {
            crate::view_ddl::create(shared, log, cv, who.oid).await?;
            Ok("CREATE VIEW".into())
        }
        Statement::DropView {
            names,
            if_exists,
            cascade,
        } => {
            crate::view_ddl::drop(shared, log, names, *if_exists, *cascade, out).await?;
            Ok("DROP VIEW".into())
        }
        Statement::RenameView {
            name,
            new_name,
            if_exists,
        } => {
            crate::view_ddl::rename(shared, log, name, new_name, *if_exists, out).await?;
            Ok("ALTER VIEW".into())
        }
        Statement::Comment { target, comment } => {
            set_comment(shared, log, target, comment.clone()).await?;
            Ok("COMMENT".into())
        }
        Statement::Grant(g) => Ok(crate::grant_ddl::execute(shared, log, g, who, out)
            .await?
            .into()),
        other => Err(PgError::internal(format!("not a DDL statement: {other:?}"))),
    }
}

/// COMMENT ON: the comment goes into the object's definition, so it is renamed and
/// dropped with it and written transactionally like any other change of it.
async fn set_comment(
    shared: &Shared,
    log: &mut DdlLog,
    target: &CommentTarget,
    comment: Option<String>,
) -> PgResult<()> {
    match target {
        CommentTarget::Table(t) => {
            let table = current(shared, t)?;
            let changed = TableDef {
                comment,
                ..(*table).clone()
            };
            log.put(shared, changed).await.map(drop)
        }
        CommentTarget::Column(t, index) => {
            let table = current(shared, t)?;
            let name = &t.columns[*index].name;
            let Some(position) = table.column_index(name) else {
                return Err(PgError::new(
                    codes::UNDEFINED_COLUMN,
                    format!(
                        "column \"{name}\" of relation \"{}\" does not exist",
                        table.name
                    ),
                ));
            };
            let mut changed = (*table).clone();
            changed.columns[position].comment = comment;
            log.put(shared, changed).await.map(drop)
        }
        CommentTarget::View(v) => {
            use sql::catalog::Catalog;
            let view = shared.catalog.view(&v.name).ok_or_else(|| {
                PgError::new(
                    codes::UNDEFINED_TABLE,
                    format!("relation \"{}\" does not exist", v.name),
                )
            })?;
            let changed = ViewDef {
                comment,
                ..(*view).clone()
            };
            log.put_view(shared, changed).await
        }
    }
}

/// The table's current definition (the bound one may predate a TRUNCATE).
pub(crate) fn current(shared: &Shared, t: &TableDef) -> PgResult<Arc<TableDef>> {
    use sql::catalog::Catalog;
    shared.catalog.table_by_oid(t.oid).ok_or_else(|| {
        PgError::new(
            codes::UNDEFINED_TABLE,
            format!("relation \"{}\" does not exist", t.name),
        )
    })
}

async fn create_table(
    shared: &Shared,
    log: &mut DdlLog,
    ct: &CreateTable,
    owner: u32,
) -> PgResult<()> {
    // The CHECK and then the FOREIGN KEY constraints' OIDs follow the table's own.
    let checks = ct.checks.len() as u32;
    let foreign_keys = ct.foreign_keys.len() as u32;
    let oid = shared
        .catalog
        .allocate_oids(OIDS_PER_TABLE + checks + foreign_keys)
        .await?;
    let has_pk = ct.primary_key.is_some();
    let mut table = TableDef {
        oid,
        name: ct.name.clone(),
        columns: ct.columns.clone(),
        primary_key: ct.primary_key.clone(),
        pk_name: has_pk.then(|| format!("{}_pkey", ct.name)),
        pk_index_oid: has_pk.then_some(oid + 1),
        rel: 0,
        fillfactor: ct.fillfactor,
        distribution: ct.distribution,
        indexes: Vec::new(),
        acl: None,
        comment: None,
        checks: (ct.checks.iter().zip(oid + OIDS_PER_TABLE..))
            .map(|(c, oid)| CheckDef { oid, ..c.clone() })
            .collect(),
        foreign_keys: (ct.foreign_keys.iter().zip(oid + OIDS_PER_TABLE + checks..))
            .map(|(f, fk_oid)| ForeignKeyDef {
                oid: fk_oid,
                // 0: the table itself, which had no OID when bound.
                parent: if f.parent == 0 { oid } else { f.parent },
                ..f.clone()
            })
            .collect(),
        owner,
    };
    table.rel = log.create_rel(shared, RelPlacement::of(&table)).await?;
    table.indexes = crate::index_ddl::constraint_indexes(shared, log, &table, &ct.unique).await?;
    log.put(shared, table).await?;
    Ok(())
}

/// The foreign keys of other tables that reference the tables DROP TABLE drops: 2BP01
/// without CASCADE, else dropped with a notice, as PostgreSQL drops them.
async fn drop_referencing_keys(
    shared: &Shared,
    log: &mut DdlLog,
    dropped: &[Arc<TableDef>],
    cascade: bool,
    out: &mut BytesMut,
) -> PgResult<()> {
    use sql::catalog::Catalog;
    let gone = |oid: u32| dropped.iter().any(|t| t.oid == oid);
    for parent in dropped {
        for child in shared.catalog.referencing(parent.oid) {
            if gone(child.oid) {
                continue;
            }
            let child = current(shared, &child)?;
            let (keys, kept): (Vec<_>, Vec<_>) =
                (child.foreign_keys.iter().cloned()).partition(|fk| fk.parent == parent.oid);
            let lines: Vec<String> = keys
                .iter()
                .map(|fk| format!("constraint {} on table {}", fk.name, child.name))
                .collect();
            if !cascade {
                return Err(PgError::new(
                    codes::DEPENDENT_OBJECTS_STILL_EXIST,
                    format!(
                        "cannot drop table {} because other objects depend on it",
                        parent.name
                    ),
                )
                .with_detail(
                    (lines.iter())
                        .map(|l| format!("{l} depends on table {}", parent.name))
                        .collect::<Vec<_>>()
                        .join("\n"),
                )
                .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
            }
            for line in lines {
                notice(
                    out,
                    codes::SUCCESSFUL_COMPLETION,
                    format!("drop cascades to {line}"),
                );
            }
            let without = TableDef {
                foreign_keys: kept,
                ..(*child).clone()
            };
            log.put(shared, without).await?;
        }
    }
    Ok(())
}

/// Rebuild the table keyed by the new primary key, checking NOT NULL and uniqueness.
pub(crate) async fn add_primary_key(
    shared: &Shared,
    log: &mut DdlLog,
    table: &TableDef,
    columns: &[usize],
    name: Option<String>,
) -> PgResult<()> {
    if table.primary_key.is_some() {
        return Err(PgError::new(
            codes::INVALID_TABLE_DEFINITION,
            format!(
                "multiple primary keys for table \"{}\" are not allowed",
                table.name
            ),
        ));
    }
    if !table.indexes.is_empty() {
        // Rows would move to new keys, and their index entries with them.
        return Err(PgError::unsupported(
            "ALTER TABLE … ADD PRIMARY KEY on a table with indexes",
        ));
    }
    let name = name.unwrap_or_else(|| format!("{}_pkey", table.name));
    let mut new_def = table.clone();
    new_def.primary_key = Some(columns.to_vec());
    new_def.pk_name = Some(name);
    new_def.pk_index_oid = Some(table.oid + 1);
    for &c in columns {
        new_def.columns[c].not_null = true;
    }
    let new_rel = log.create_rel(shared, RelPlacement::of(&new_def)).await?;
    new_def.rel = new_rel;

    let dn = &shared.datanodes;
    let new_def = Arc::new(new_def);
    // Rows stored in the new key's order (a table loaded in that order) go straight to
    // the new relation; otherwise the first pass stops at the first row out of order and
    // the second sorts them.
    for sorted in [false, true] {
        let start = shared.gtm.begin().await?;
        let mut txn = dn.begin(start, Isolation::RepeatableRead);
        // Nobody knows the new relation yet; owning it lets the rows go in bulk.
        dn.own_relation(&mut txn, new_rel);
        match load_under_key(shared, table, &new_def, &mut txn, sorted).await {
            Ok(Pushed::Taken) => {
                dn.commit(txn, &shared.gtm).await?;
                log.put(shared, (*new_def).clone()).await?;
                return Ok(());
            }
            Ok(Pushed::NotAscending) => dn.abort(txn, &shared.gtm).await,
            Err(e) => {
                dn.abort(txn, &shared.gtm).await;
                return Err(e);
            }
        }
    }
    Err(PgError::internal(
        "primary key build: sorted rows out of order",
    ))
}

/// Loads `table`'s rows into `new_def`'s relation, checking the new key's columns for
/// NULLs and duplicates; `NotAscending` when an unsorted load met a row out of key order.
async fn load_under_key(
    shared: &Shared,
    table: &TableDef,
    new_def: &Arc<TableDef>,
    txn: &mut ClusterTxn,
    sorted: bool,
) -> PgResult<Pushed> {
    let dn = &shared.datanodes;
    let (Some(columns), Some(index_name)) =
        (new_def.primary_key.as_deref(), new_def.pk_name.as_deref())
    else {
        return Err(PgError::internal("primary key build without a key"));
    };
    let start = txn.start_ts();
    let mut sink = if sorted {
        BulkSink::start(dn, txn, new_def.clone(), &shared.spill)?
    } else {
        BulkSink::start_in_order(dn, txn, new_def.clone())?
    };
    // Only the key's columns are decoded: the rows go on as stored.
    let key_columns: Vec<bool> = (0..table.columns.len())
        .map(|c| columns.contains(&c))
        .collect();
    let mut rows = dn
        .scan_rows(txn, table.rel, Bound::Unbounded, Bound::Unbounded, start)
        .await?;
    while let Some(item) = rows.next().await {
        let bytes = item?;
        let row = types::codec::decode_row_columns(&bytes, &key_columns)?;
        for &c in columns {
            if row[c].is_null() {
                return Err(PgError::new(
                    codes::NOT_NULL_VIOLATION,
                    format!(
                        "column \"{}\" of relation \"{}\" contains null values",
                        table.columns[c].name, table.name
                    ),
                ));
            }
        }
        if sink.push(&row, &bytes, None).await? == Pushed::NotAscending {
            return Ok(Pushed::NotAscending);
        }
    }
    let duplicate = |row: &[Value]| {
        let cols: Vec<&str> = columns
            .iter()
            .map(|&c| table.columns[c].name.as_str())
            .collect();
        let vals: Vec<String> = columns
            .iter()
            .map(|&c| {
                types::io::to_text_string(&row[c], &table.columns[c].ty.to_type())
                    .unwrap_or_default()
            })
            .collect();
        PgError::new(
            codes::UNIQUE_VIOLATION,
            format!("could not create unique index \"{index_name}\""),
        )
        .with_detail(format!(
            "Key ({})=({}) is duplicated.",
            cols.join(", "),
            vals.join(", ")
        ))
    };
    drop(rows); // the scan borrows the transaction that finishing the load writes
    sink.finish(dn, txn, start, &duplicate).await?;
    Ok(Pushed::Taken)
}
