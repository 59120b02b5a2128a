//! GRANT and REVOKE on tables, views and sequences (docs/decisions/0049-grant-revoke.md):
//! each relation's ACL changes through the transaction's `DdlLog` like any other catalog
//! change, so it is undone with the transaction and reaches every coordinator with the
//! relation's record. As in PostgreSQL, an owner or a superuser grants as the owner; any
//! other role only what it holds with the grant option, with a warning for the rest.

use crate::ddl::notice_with;
use crate::ddl_log::DdlLog;
use crate::ownership::Who;
use crate::privileges::denied;
use crate::server::Shared;
use bytes::BytesMut;
use pgerror::{codes, PgError, PgResult};
use sql::acl::{self, AclItem, AclMode, Object, ObjectKind, PUBLIC};
use sql::catalog::{public_object_name, Catalog};
use sql::grant::{GrantObjects, GrantRevoke};
use sql::sequence::SequenceDef;
use sql::view::ViewDef;
use sql::TableDef;
use wire::backend::NoticeSeverity;

pub async fn execute(
    shared: &Shared,
    log: &mut DdlLog,
    g: &GrantRevoke,
    who: &Who,
    out: &mut BytesMut,
) -> PgResult<&'static str> {
    let grantees = g
        .grantees
        .iter()
        .map(|name| grantee(shared, who, name.as_deref()))
        .collect::<PgResult<Vec<u32>>>()?;
    for relation in relations(shared, &g.objects)? {
        let kind = relation.kind();
        let mut wanted = g.privileges.unwrap_or(kind.all());
        let impossible = wanted & !kind.all();
        if impossible != 0 && kind != ObjectKind::Sequence {
            let name = acl::bits(impossible)
                .next()
                .map_or("?", acl::privilege_name);
            return Err(PgError::new(
                codes::INVALID_GRANT_OPERATION,
                format!("invalid privilege type {name} for table"),
            ));
        }
        if impossible != 0 {
            // ON TABLE naming a sequence: what a sequence cannot have is left out.
            let message = format!(
                "sequence \"{}\" only supports USAGE, SELECT, and UPDATE privileges",
                relation.name()
            );
            warn(out, codes::INVALID_GRANT_OPERATION, message);
            wanted &= kind.all();
        }
        let mut items = relation.effective_acl().into_owned();
        let (grantor, granted) = grantor(who, &relation, &items, wanted, g, out)?;
        for &grantee in &grantees {
            if g.grant {
                acl::grant(&mut items, grantee, grantor, granted, g.grant_option);
            } else {
                let cascade = g.cascade;
                revoke(
                    &mut items,
                    relation.owner(),
                    grantee,
                    grantor,
                    granted,
                    g.grant_option,
                    cascade,
                )?;
            }
        }
        store(shared, log, relation, items).await?;
    }
    Ok(if g.grant { "GRANT" } else { "REVOKE" })
}

/// A grantee's OID: PUBLIC, the session's role for CURRENT_USER and its synonyms, else
/// a role by name.
fn grantee(shared: &Shared, who: &Who, name: Option<&str>) -> PgResult<u32> {
    match name {
        None => Ok(PUBLIC),
        Some("current_user" | "current_role" | "session_user") => Ok(who.oid),
        Some(name) => crate::role_ddl::find(shared, name)
            .map(|r| r.oid)
            .ok_or_else(|| {
                PgError::new(
                    codes::UNDEFINED_OBJECT,
                    format!("role \"{name}\" does not exist"),
                )
            }),
    }
}

/// The relations GRANT or REVOKE names, in its order.
fn relations(shared: &Shared, objects: &GrantObjects) -> PgResult<Vec<Object>> {
    let catalog = &shared.catalog;
    match objects {
        GrantObjects::PublicSchema => Ok(vec![catalog.public_schema()]),
        GrantObjects::AllInPublic {
            kind: ObjectKind::Sequence,
        } => Ok(catalog
            .sequences()
            .into_iter()
            .map(Object::Sequence)
            .collect()),
        GrantObjects::AllInPublic { .. } => {
            let mut all: Vec<Object> = catalog.tables().into_iter().map(Object::Table).collect();
            all.extend(catalog.views().into_iter().map(Object::View));
            Ok(all)
        }
        GrantObjects::Relations { kind, names } => names
            .iter()
            .map(|parts| {
                let name = public_object_name(parts.clone())?;
                let found = if let Some(s) = catalog.sequence(&name) {
                    Some(Object::Sequence(s))
                } else if *kind == ObjectKind::Sequence {
                    if catalog.table(None, &name).is_some() || catalog.view(&name).is_some() {
                        return Err(PgError::new(
                            codes::WRONG_OBJECT_TYPE,
                            format!("\"{name}\" is not a sequence"),
                        ));
                    }
                    None
                } else {
                    (catalog.table(None, &name).map(Object::Table))
                        .or_else(|| catalog.view(&name).map(Object::View))
                };
                found.ok_or_else(|| {
                    PgError::new(
                        codes::UNDEFINED_TABLE,
                        format!("relation \"{name}\" does not exist"),
                    )
                })
            })
            .collect(),
    }
}

/// Whom the change is recorded as made by, and which of `wanted` it may make: the owner
/// and all of them for the owner, its members or a superuser, else the role (itself or
/// one it inherits from) holding the most of them with the grant option, and those
/// (PostgreSQL's select_best_grantor and restrict_and_check_grant).
fn grantor(
    who: &Who,
    relation: &Object,
    items: &[AclItem],
    wanted: AclMode,
    g: &GrantRevoke,
    out: &mut BytesMut,
) -> PgResult<(u32, AclMode)> {
    if who.has_privileges_of(relation.owner()) {
        return Ok((relation.owner(), wanted));
    }
    // The role with the most grant options on it, the role itself before those it
    // inherits from (PostgreSQL's select_best_grantor).
    let (best, options) = (who.privileges_of.iter())
        .map(|&r| (r, acl::held(items, r, true) & wanted))
        .fold((who.oid, 0 as AclMode), |best, r| {
            match r.1.count_ones() > best.1.count_ones() {
                true => r,
                false => best,
            }
        });
    if options == 0 && who.held(items, false) == 0 {
        return Err(denied(relation.kind().name(), relation.name()));
    }
    let allowed = wanted & options;
    let (code, none, some) = if g.grant {
        let code = codes::PRIVILEGE_NOT_GRANTED;
        (
            code,
            "no privileges were granted",
            "not all privileges were granted",
        )
    } else {
        let code = codes::PRIVILEGE_NOT_REVOKED;
        (
            code,
            "no privileges could be revoked",
            "not all privileges could be revoked",
        )
    };
    if allowed == 0 {
        warn(out, code, format!("{none} for \"{}\"", relation.name()));
    } else if allowed != wanted && g.privileges.is_some() {
        warn(out, code, format!("{some} for \"{}\"", relation.name()));
    }
    Ok((best, allowed))
}

/// REVOKE from one grantee; what the grantee granted on with the revoked grant options
/// goes too under CASCADE, and refuses the REVOKE without it.
fn revoke(
    items: &mut Vec<AclItem>,
    owner: u32,
    grantee: u32,
    grantor: u32,
    privileges: AclMode,
    options_only: bool,
    cascade: bool,
) -> PgResult<()> {
    acl::revoke(items, grantee, grantor, privileges, options_only);
    // The owner never truly loses its grant options (PostgreSQL's recursive_revoke).
    if grantee == owner || grantee == PUBLIC {
        return Ok(());
    }
    let lost = privileges & !acl::held(items, grantee, true);
    let dependent: Vec<u32> = (items.iter())
        .filter(|i| i.grantor == grantee && i.privileges & lost != 0)
        .map(|i| i.grantee)
        .collect();
    if dependent.is_empty() {
        return Ok(());
    }
    if !cascade {
        return Err(PgError::new(
            codes::DEPENDENT_OBJECTS_STILL_EXIST,
            "dependent privileges exist",
        )
        .with_hint("Use CASCADE to revoke them too."));
    }
    for d in dependent {
        revoke(items, owner, d, grantee, lost, false, true)?;
    }
    Ok(())
}

async fn store(
    shared: &Shared,
    log: &mut DdlLog,
    object: Object,
    items: Vec<AclItem>,
) -> PgResult<()> {
    match object {
        Object::PublicSchema(_) => log.put_public_acl(shared, items).await,
        Object::Table(t) => {
            let acl = Some(items);
            log.put(
                shared,
                TableDef {
                    acl,
                    ..(*t).clone()
                },
            )
            .await
            .map(drop)
        }
        Object::View(v) => {
            let acl = Some(items);
            log.put_view(
                shared,
                ViewDef {
                    acl,
                    ..(*v).clone()
                },
            )
            .await
        }
        Object::Sequence(s) => {
            let acl = Some(items);
            let stored = log
                .put_sequence(
                    shared,
                    SequenceDef {
                        acl,
                        ..(*s).clone()
                    },
                )
                .await;
            stored.map(drop)
        }
    }
}

fn warn(out: &mut BytesMut, code: &'static str, message: String) {
    notice_with(out, NoticeSeverity::Warning, code, message);
}
