//! CREATE TYPE … AS ENUM, ALTER TYPE … ADD VALUE, RENAME VALUE and RENAME TO, and DROP
//! TYPE (decision 0043). An enum type is a catalog record only, changed through the
//! transaction's `DdlLog`: its OID, its array type's and one per label come from the
//! catalog's OID counter. Columns name the type by OID and values are known by their
//! sort order, so renaming the type or a label changes the record alone.

use crate::ddl::notice;
use crate::ddl_log::DdlLog;
use crate::server::Shared;
use bytes::BytesMut;
use pgerror::{codes, PgError, PgResult};
use sql::enum_type::{AddEnumValue, CreateEnum, RenameEnumValue};
use types::enums::{EnumLabel, EnumType};

pub async fn create(shared: &Shared, log: &mut DdlLog, ce: &CreateEnum) -> PgResult<()> {
    if taken(shared, &ce.name) {
        return Err(already_exists(&ce.name));
    }
    // the type, its array type, then each label in order (as PostgreSQL's even OIDs
    // follow the labels' order)
    let oid = shared
        .catalog
        .allocate_oids(2 + ce.labels.len() as u32)
        .await?;
    let mut labels: Vec<EnumLabel> = Vec::with_capacity(ce.labels.len());
    for (label, label_oid) in ce.labels.iter().zip(oid + 2..) {
        if labels.iter().any(|l| l.label == *label) {
            return Err(PgError::new(
                codes::UNIQUE_VIOLATION,
                "duplicate key value violates unique constraint \"pg_enum_typid_label_index\"",
            )
            .with_detail(format!(
                "Key (enumtypid, enumlabel)=({oid}, {label}) already exists."
            )));
        }
        labels.push(EnumLabel {
            oid: label_oid,
            sort_order: labels.len() as f32 + 1.0,
            label: label.clone(),
        });
    }
    let ty = EnumType {
        oid,
        array_oid: oid + 1,
        name: ce.name.clone(),
        labels,
    };
    log.put_type(shared, ty).await
}

pub async fn add_value(
    shared: &Shared,
    log: &mut DdlLog,
    add: &AddEnumValue,
    out: &mut BytesMut,
) -> PgResult<()> {
    let ty = shared
        .catalog
        .enum_type(&add.name)
        .ok_or_else(|| does_not_exist(&add.name))?;
    if ty.labels.iter().any(|l| l.label == add.label) {
        let message = format!("enum label \"{}\" already exists", add.label);
        if add.if_not_exists {
            notice(out, codes::DUPLICATE_OBJECT, format!("{message}, skipping"));
            return Ok(());
        }
        return Err(PgError::new(codes::DUPLICATE_OBJECT, message));
    }
    let sort_order = ty
        .sort_order_at(add.position.as_position())?
        .ok_or_else(|| {
            // PostgreSQL renumbers the labels here; stored values keep their sort orders
            PgError::unsupported(format!(
                "adding a value between two labels of enum {} that many times",
                ty.name
            ))
        })?;
    let label = EnumLabel {
        oid: shared.catalog.allocate_oids(1).await?,
        sort_order,
        label: add.label.clone(),
    };
    let mut altered = (*ty).clone();
    let at = altered
        .labels
        .partition_point(|l| l.sort_order < sort_order);
    altered.labels.insert(at, label);
    log.put_type(shared, altered).await
}

pub async fn rename_value(
    shared: &Shared,
    log: &mut DdlLog,
    rename: &RenameEnumValue,
) -> PgResult<()> {
    let ty = shared
        .catalog
        .enum_type(&rename.name)
        .ok_or_else(|| does_not_exist(&rename.name))?;
    let mut renamed = (*ty).clone();
    let Some(at) = renamed.labels.iter().position(|l| l.label == rename.from) else {
        return Err(PgError::new(
            codes::INVALID_PARAMETER_VALUE,
            format!("\"{}\" is not an existing enum label", rename.from),
        ));
    };
    if rename.from == rename.to {
        return Ok(());
    }
    if renamed.labels.iter().any(|l| l.label == rename.to) {
        return Err(PgError::new(
            codes::DUPLICATE_OBJECT,
            format!("enum label \"{}\" already exists", rename.to),
        ));
    }
    renamed.labels[at].label = rename.to.clone();
    log.put_type(shared, renamed).await
}

pub async fn rename(shared: &Shared, log: &mut DdlLog, name: &str, new_name: &str) -> PgResult<()> {
    let ty = (shared.catalog.enum_type(name)).ok_or_else(|| does_not_exist(name))?;
    if taken(shared, new_name) {
        return Err(already_exists(new_name));
    }
    let renamed = EnumType {
        name: new_name.to_string(),
        ..(*ty).clone()
    };
    log.put_type(shared, renamed).await
}

pub async fn drop(
    shared: &Shared,
    log: &mut DdlLog,
    names: &[String],
    if_exists: bool,
    cascade: bool,
    out: &mut BytesMut,
) -> PgResult<()> {
    let mut dropped = Vec::new();
    for name in names {
        match shared.catalog.enum_type(name) {
            Some(ty) => dropped.push(ty),
            None if if_exists => notice(
                out,
                codes::SUCCESSFUL_COMPLETION,
                sql::catalog::skipped_notice("type", name),
            ),
            None => return Err(does_not_exist(name)),
        }
    }
    for ty in &dropped {
        let dependents = dependents(shared, ty);
        if dependents.is_empty() {
            continue;
        }
        if cascade {
            return Err(PgError::unsupported(format!(
                "DROP TYPE … CASCADE of a type columns use (type \"{}\")",
                ty.name
            )));
        }
        return Err(PgError::new(
            codes::DEPENDENT_OBJECTS_STILL_EXIST,
            format!(
                "cannot drop type {} because other objects depend on it",
                ty.name
            ),
        )
        .with_detail(dependents.join("\n"))
        .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    for ty in dropped {
        log.remove_type(shared, ty.oid).await?;
    }
    Ok(())
}

/// The columns of tables and views whose type is `ty` or its array type, as
/// PostgreSQL's dependency messages name them.
fn dependents(shared: &Shared, ty: &EnumType) -> Vec<String> {
    let uses = |oid: u32| match oid {
        o if o == ty.oid => Some(ty.name.clone()),
        o if o == ty.array_oid => Some(format!("{}[]", ty.name)),
        _ => None,
    };
    let tables = shared.catalog.tables();
    let table_columns = tables.iter().flat_map(|t| {
        (t.columns.iter()).filter_map(|c| {
            let by = uses(c.ty.oid)?;
            Some(format!(
                "column {} of table {} depends on type {by}",
                c.name, t.name
            ))
        })
    });
    let views = shared.catalog.views();
    let view_columns = views.iter().flat_map(|v| {
        (v.columns.iter()).filter_map(|c| {
            let by = uses(c.ty.oid)?;
            Some(format!(
                "column {} of view {} depends on type {by}",
                c.name, v.name
            ))
        })
    });
    table_columns.chain(view_columns).collect()
}

/// Whether a type of this name exists: an enum type, or the row type PostgreSQL gives
/// every table and view.
fn taken(shared: &Shared, name: &str) -> bool {
    use sql::catalog::Catalog;
    shared.catalog.enum_type(name).is_some()
        || shared.catalog.table(None, name).is_some()
        || shared.catalog.view(name).is_some()
}

fn already_exists(name: &str) -> PgError {
    PgError::new(
        codes::DUPLICATE_OBJECT,
        format!("type \"{name}\" already exists"),
    )
}

fn does_not_exist(name: &str) -> PgError {
    PgError::new(
        codes::UNDEFINED_OBJECT,
        format!("type \"{name}\" does not exist"),
    )
}
