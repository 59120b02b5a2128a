//! CREATE/ALTER/DROP SEQUENCE, and the sequences of serial and identity columns, which
//! CREATE TABLE creates and DROP TABLE drops with their table (decision 0034). Like the
//! other DDL, applied immediately and undone by a rollback (`DdlLog`).

use bytes::BytesMut;
use pgerror::{codes, PgError, PgResult};
use sql::catalog::Catalog;
use sql::plan::CreateTable;
use sql::sequence::{default_uses, AlterSequence, CreateSequence, OwnedBy, SeqOption, SequenceDef};
use sql::TableDef;
use wire::backend::{self, NoticeSeverity};

use crate::catalog::LiveCatalog;
use crate::ddl_log::DdlLog;
use crate::server::Shared;

fn notice(out: &mut BytesMut, code: &'static str, message: String) {
    backend::notice_response_with(out, NoticeSeverity::Notice, &PgError::new(code, message));
}

fn relation_exists(shared: &Shared, name: &str) -> bool {
    shared.catalog.table(None, name).is_some() || shared.catalog.sequence(name).is_some()
}

pub async fn create(
    shared: &Shared,
    log: &mut DdlLog,
    cs: &CreateSequence,
    creator: u32,
    out: &mut BytesMut,
) -> PgResult<()> {
    if relation_exists(shared, &cs.name) {
        if cs.if_not_exists {
            notice(
                out,
                codes::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists, skipping", cs.name),
            );
            return Ok(());
        }
        return Err(PgError::new(
            codes::DUPLICATE_TABLE,
            format!("relation \"{}\" already exists", cs.name),
        ));
    }
    let (mut def, _) = SequenceDef::define(0, &cs.name, &cs.options, None)?;
    def.owned_by = owner(shared, &cs.options, None)?;
    def.owner = creator;
    def.oid = shared.catalog.allocate_oids(1).await?;
    log.put_sequence(shared, def).await?;
    Ok(())
}

pub async fn alter(
    shared: &Shared,
    log: &mut DdlLog,
    alter: &AlterSequence,
    out: &mut BytesMut,
) -> PgResult<()> {
    let Some(old) = shared.catalog.sequence(&alter.name) else {
        if shared.catalog.table(None, &alter.name).is_some() {
            return Err(not_a_sequence(&alter.name, None));
        }
        if alter.if_exists {
            notice(
                out,
                codes::SUCCESSFUL_COMPLETION,
                format!("relation \"{}\" does not exist, skipping", alter.name),
            );
            return Ok(());
        }
        return Err(PgError::new(
            codes::UNDEFINED_TABLE,
            format!("relation \"{}\" does not exist", alter.name),
        ));
    };
    let (mut def, restart) = SequenceDef::define(old.oid, &old.name, &alter.options, Some(&old))?;
    def.owned_by = owner(shared, &alter.options, old.owned_by)?;
    log.put_sequence(shared, def).await?;
    // Other changes apply to the range this coordinator uses as it goes on
    // (`SequenceValues::nextval`); the one reserved ahead is reserved again.
    if let Some(next) = restart {
        shared
            .meta
            .restart(&LiveCatalog::sequence_counter_key(old.oid), next.into())
            .await?;
        shared.sequences.forget(old.oid);
    } else {
        shared.sequences.forget_ahead(old.oid);
    }
    Ok(())
}

pub async fn drop(
    shared: &Shared,
    log: &mut DdlLog,
    names: &[String],
    if_exists: bool,
    cascade: bool,
    out: &mut BytesMut,
) -> PgResult<()> {
    let mut sequences = Vec::new();
    for name in names {
        match shared.catalog.sequence(name) {
            Some(s) => sequences.push(s),
            None if shared.catalog.table(None, name).is_some() => {
                return Err(not_a_sequence(
                    name,
                    Some("Use DROP TABLE to remove a table."),
                ))
            }
            None if if_exists => notice(
                out,
                codes::SUCCESSFUL_COMPLETION,
                sql::catalog::skipped_notice("sequence", name),
            ),
            None => {
                return Err(PgError::new(
                    codes::UNDEFINED_TABLE,
                    format!("sequence \"{name}\" does not exist"),
                ))
            }
        }
    }
    for s in &sequences {
        let users = defaults_using(shared, s);
        if let Some((table, column)) = users.first().filter(|_| !cascade) {
            return Err(PgError::new(
                codes::DEPENDENT_OBJECTS_STILL_EXIST,
                format!(
                    "cannot drop sequence {} because other objects depend on it",
                    s.name
                ),
            )
            .with_detail(format!(
                "default value for column {} of table {} depends on sequence {}",
                table.columns[*column].name, table.name, s.name
            ))
            .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
        }
        for (table, column) in users {
            notice(
                out,
                codes::SUCCESSFUL_COMPLETION,
                format!(
                    "drop cascades to default value for column {} of table {}",
                    table.columns[column].name, table.name
                ),
            );
            let mut changed = (*table).clone();
            changed.columns[column].default = None;
            log.put(shared, changed).await?;
        }
        log.remove_sequence(shared, s.oid).await?;
    }
    Ok(())
}

/// Creates the sequences of a new table's serial and identity columns, owned by them.
pub async fn create_column_sequences(
    shared: &Shared,
    log: &mut DdlLog,
    ct: &CreateTable,
) -> PgResult<()> {
    if ct.sequences.is_empty() {
        return Ok(());
    }
    let table = shared.catalog.table(None, &ct.name).ok_or_else(|| {
        PgError::internal(format!("table \"{}\" vanished while created", ct.name))
    })?;
    for cs in &ct.sequences {
        if relation_exists(shared, &cs.name) {
            return Err(PgError::new(
                codes::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists", cs.name),
            ));
        }
        let (mut def, _) = SequenceDef::define(0, &cs.name, &cs.options, None)?;
        def.owned_by = Some(OwnedBy {
            table: table.oid,
            column: cs.column,
        });
        def.identity = cs.identity;
        def.owner = table.owner;
        def.oid = shared.catalog.allocate_oids(1).await?;
        log.put_sequence(shared, def).await?;
    }
    Ok(())
}

/// Drops the sequences owned by the columns of a table being dropped.
pub async fn drop_owned(shared: &Shared, log: &mut DdlLog, table: u32) -> PgResult<()> {
    for s in shared.catalog.sequences() {
        if s.owned_by.is_some_and(|o| o.table == table) {
            log.remove_sequence(shared, s.oid).await?;
        }
    }
    Ok(())
}

/// The sequences owned by columns of table `table` after ALTER TABLE moved its columns
/// (`origin`: each column's position before): each follows its column, and goes with it
/// where it was dropped, as in PostgreSQL.
pub async fn follow_columns(
    shared: &Shared,
    log: &mut DdlLog,
    table: u32,
    origin: &[Option<usize>],
) -> PgResult<()> {
    for s in shared.catalog.sequences() {
        let Some(owned_by) = s.owned_by.filter(|o| o.table == table) else {
            continue;
        };
        match origin.iter().position(|&o| o == Some(owned_by.column)) {
            None => log.remove_sequence(shared, s.oid).await?,
            Some(column) if column != owned_by.column => {
                let mut moved = (*s).clone();
                moved.owned_by = Some(OwnedBy { table, column });
                log.put_sequence(shared, moved).await?;
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The columns whose default is the sequence's nextval (serial columns among them).
fn defaults_using(shared: &Shared, s: &SequenceDef) -> Vec<(std::sync::Arc<TableDef>, usize)> {
    let mut users = Vec::new();
    for t in shared.catalog.tables() {
        for (i, c) in t.columns.iter().enumerate() {
            if c.default
                .as_deref()
                .is_some_and(|d| default_uses(d, &s.name))
            {
                users.push((t.clone(), i));
            }
        }
    }
    users
}

/// OWNED BY: the column named (which must exist), none, or `current` when not given.
fn owner(
    shared: &Shared,
    options: &[SeqOption],
    current: Option<OwnedBy>,
) -> PgResult<Option<OwnedBy>> {
    let Some(owned_by) = options.iter().find_map(|o| match o {
        SeqOption::OwnedBy(target) => Some(target),
        _ => None,
    }) else {
        return Ok(current);
    };
    let Some((table_name, column_name)) = owned_by else {
        return Ok(None);
    };
    let table = shared.catalog.table(None, table_name).ok_or_else(|| {
        PgError::new(
            codes::UNDEFINED_TABLE,
            format!("relation \"{table_name}\" does not exist"),
        )
    })?;
    let column = table.column_index(column_name).ok_or_else(|| {
        PgError::new(
            codes::UNDEFINED_COLUMN,
            format!(
                "column \"{column_name}\" of relation \"{}\" does not exist",
                table.name
            ),
        )
    })?;
    Ok(Some(OwnedBy {
        table: table.oid,
        column,
    }))
}

/// DROP TABLE naming a sequence.
pub fn not_a_table(name: &str) -> PgError {
    PgError::new(
        codes::WRONG_OBJECT_TYPE,
        format!("\"{name}\" is not a table"),
    )
    .with_hint("Use DROP SEQUENCE to remove a sequence.")
}

fn not_a_sequence(name: &str, hint: Option<&str>) -> PgError {
    let e = PgError::new(
        codes::WRONG_OBJECT_TYPE,
        format!("\"{name}\" is not a sequence"),
    );
    match hint {
        Some(h) => e.with_hint(h),
        None => e,
    }
}
