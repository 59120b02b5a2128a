//! CREATE [OR REPLACE] VIEW, DROP VIEW, ALTER VIEW … RENAME TO, and the views that read
//! what a DROP removes: 2BP01 unless CASCADE, which drops them too (PostgreSQL's
//! dependency messages). Views are catalog records only; changes go through the
//! transaction's `DdlLog`.

use crate::ddl::notice;
use crate::ddl_log::DdlLog;
use crate::server::Shared;
use bytes::BytesMut;
use pgerror::{codes, PgError, PgResult};
use sql::catalog::Catalog;
use sql::view::{CreateView, ViewDef};

/// Creates (or replaces, keeping its owner) a view owned by `creator`.
pub async fn create(
    shared: &Shared,
    log: &mut DdlLog,
    cv: &CreateView,
    creator: u32,
) -> PgResult<()> {
    let existing = shared.catalog.view(&cv.name).filter(|_| cv.or_replace);
    if let Some(existing) = &existing {
        existing.check_replacement(&cv.columns)?;
        if cv.reads.contains(&existing.oid) {
            return Err(PgError::new(
                codes::INVALID_OBJECT_DEFINITION,
                format!(
                    "infinite recursion detected in rules for relation \"{}\"",
                    cv.name
                ),
            ));
        }
    } else if crate::index_ddl::relation_exists(shared, &cv.name) {
        return Err(already_exists(&cv.name));
    }
    let oid = match &existing {
        Some(existing) => existing.oid,
        None => shared.catalog.allocate_oids(1).await?,
    };
    let view = ViewDef {
        oid,
        name: cv.name.clone(),
        columns: cv.columns.clone(),
        query: cv.query.clone(),
        reads: cv.reads.clone(),
        owner: existing.as_ref().map_or(creator, |v| v.owner),
        acl: existing.as_ref().and_then(|v| v.acl.clone()),
        comment: existing.as_ref().and_then(|v| v.comment.clone()),
    };
    log.put_view(shared, view).await
}

fn already_exists(name: &str) -> PgError {
    PgError::new(
        codes::DUPLICATE_TABLE,
        format!("relation \"{name}\" already exists"),
    )
}

pub async fn drop(
    shared: &Shared,
    log: &mut DdlLog,
    names: &[String],
    if_exists: bool,
    cascade: bool,
    out: &mut BytesMut,
) -> PgResult<()> {
    let mut views = Vec::new();
    for name in names {
        match shared.catalog.view(name) {
            Some(v) => views.push(v),
            None if shared.catalog.table(None, name).is_some() => {
                return Err(wrong_kind(
                    name,
                    "view",
                    "Use DROP TABLE to remove a table.",
                ))
            }
            None if if_exists => notice(
                out,
                codes::SUCCESSFUL_COMPLETION,
                sql::catalog::skipped_notice("view", name),
            ),
            None => {
                return Err(PgError::new(
                    codes::UNDEFINED_TABLE,
                    format!("view \"{name}\" does not exist"),
                ))
            }
        }
    }
    let dropped: Vec<Dropped> = views
        .iter()
        .map(|v| Dropped {
            oid: v.oid,
            kind: "view",
            name: v.name.clone(),
        })
        .collect();
    drop_dependent_views(shared, log, &dropped, cascade, out).await?;
    for v in views {
        log.remove_view(shared, v.oid).await?;
    }
    Ok(())
}

/// `"name" is not a {kind}` (42809), as DROP TABLE on a view or DROP VIEW on a table.
pub fn wrong_kind(name: &str, kind: &str, hint: &str) -> PgError {
    PgError::new(
        codes::WRONG_OBJECT_TYPE,
        format!("\"{name}\" is not a {kind}"),
    )
    .with_hint(hint)
}

/// A table or view a statement drops.
pub struct Dropped {
    pub oid: u32,
    /// "table" or "view", as PostgreSQL names the kind in its messages.
    pub kind: &'static str,
    pub name: String,
}

/// The views reading what `dropped` removes, directly or through other views: refused
/// (2BP01) without CASCADE; with it, dropped first, each with PostgreSQL's notice.
pub async fn drop_dependent_views(
    shared: &Shared,
    log: &mut DdlLog,
    dropped: &[Dropped],
    cascade: bool,
    out: &mut BytesMut,
) -> PgResult<()> {
    let views = shared.catalog.views();
    let mut gone: Vec<(u32, &'static str, String)> = dropped
        .iter()
        .map(|d| (d.oid, d.kind, d.name.clone()))
        .collect();
    // Each dependent view with the first object it reads among those going.
    let mut dependents: Vec<(&ViewDef, String)> = Vec::new();
    loop {
        let found = views.iter().find_map(|v| {
            if gone.iter().any(|(oid, ..)| *oid == v.oid) {
                return None;
            }
            let read = gone.iter().find(|(oid, ..)| v.reads.contains(oid))?;
            Some((v, format!("{} {}", read.1, read.2)))
        });
        let Some((view, reads)) = found else { break };
        gone.push((view.oid, "view", view.name.clone()));
        dependents.push((view, reads));
    }
    let Some((_, first)) = dependents.first() else {
        return Ok(());
    };
    if !cascade {
        let detail: Vec<String> = dependents
            .iter()
            .map(|(v, reads)| format!("view {} depends on {reads}", v.name))
            .collect();
        return Err(PgError::new(
            codes::DEPENDENT_OBJECTS_STILL_EXIST,
            format!("cannot drop {first} because other objects depend on it"),
        )
        .with_detail(detail.join("\n"))
        .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    let lines: Vec<String> = dependents
        .iter()
        .map(|(v, _)| format!("drop cascades to view {}", v.name))
        .collect();
    let message = match lines.as_slice() {
        [one] => PgError::new(codes::SUCCESSFUL_COMPLETION, one.clone()),
        many => PgError::new(
            codes::SUCCESSFUL_COMPLETION,
            format!("drop cascades to {} other objects", many.len()),
        )
        .with_detail(many.join("\n")),
    };
    wire::backend::notice_response_with(out, wire::backend::NoticeSeverity::Notice, &message);
    for (view, _) in dependents.iter().rev() {
        log.remove_view(shared, view.oid).await?;
    }
    Ok(())
}

pub async fn rename(
    shared: &Shared,
    log: &mut DdlLog,
    name: &str,
    new_name: &str,
    if_exists: bool,
    out: &mut BytesMut,
) -> PgResult<()> {
    let Some(view) = shared.catalog.view(name) else {
        if shared.catalog.table(None, name).is_some() {
            return Err(wrong_kind(name, "view", "Use ALTER TABLE instead."));
        }
        if if_exists {
            notice(
                out,
                codes::SUCCESSFUL_COMPLETION,
                format!("relation \"{name}\" does not exist, skipping"),
            );
            return Ok(());
        }
        return Err(PgError::new(
            codes::UNDEFINED_TABLE,
            format!("relation \"{name}\" does not exist"),
        ));
    };
    if crate::index_ddl::relation_exists(shared, new_name) {
        return Err(already_exists(new_name));
    }
    refuse_change_of_read(shared, view.oid, "ALTER VIEW … RENAME TO")?;
    log.put_view(
        shared,
        ViewDef {
            name: new_name.to_string(),
            ..(*view).clone()
        },
    )
    .await
}

/// A view's query names what it reads, and its columns by name and position: renaming
/// a table or view a view reads, or dropping, renaming or retyping a column of it,
/// would leave the view unusable or reading other columns, so it is refused.
pub fn refuse_change_of_read(shared: &Shared, oid: u32, change: &str) -> PgResult<()> {
    match shared
        .catalog
        .views()
        .iter()
        .find(|v| v.reads.contains(&oid))
    {
        Some(reader) => Err(PgError::unsupported(format!(
            "{change} of a relation that view \"{}\" reads",
            reader.name
        ))),
        None => Ok(()),
    }
}
