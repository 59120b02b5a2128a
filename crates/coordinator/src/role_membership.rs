//! Role membership (decision 0053): GRANT role TO role and REVOKE, with PostgreSQL 15's
//! checks and messages, and the closures the privilege checks use: the roles whose
//! privileges a role has (through roles that INHERIT), and the roles it is a member of
//! (SET ROLE). Memberships are stored in the member's `RoleDef` (`member_of`).

use crate::catalog::LiveCatalog;
use crate::ddl::{notice, notice_with};
use crate::ddl_log::DdlLog;
use crate::predefined_roles;
use crate::role_ddl::{self, Actor};
use crate::server::Shared;
use bytes::BytesMut;
use pgerror::{codes, PgError, PgResult};
use smallvec::SmallVec;
use sql::role::{GrantRole, Membership, RoleDef};
use std::sync::Arc;
use wire::backend::NoticeSeverity;

/// Role OIDs, few enough to live on the stack in the common case.
pub type Roles = SmallVec<[u32; 4]>;

/// The roles whose privileges `role` has (PostgreSQL's has_privs_of_role): itself, then
/// the roles it is a member of, and theirs, as far as each role on the way inherits.
pub fn privileges_of(catalog: &LiveCatalog, role: &RoleDef) -> Roles {
    closure(catalog, role, true)
}

/// Whether `member` is `role` or a member of it, directly or not, inheriting or not
/// (PostgreSQL's is_member_of_role, without its superuser shortcut).
pub fn is_member_of(catalog: &LiveCatalog, member: &RoleDef, role: u32) -> bool {
    closure(catalog, member, false).contains(&role)
}

fn closure(catalog: &LiveCatalog, start: &RoleDef, inheriting_only: bool) -> Roles {
    let mut roles: Roles = SmallVec::new();
    roles.push(start.oid);
    if start.member_of.is_empty() {
        return roles; // the common case: no lookups
    }
    let mut next = 0;
    while next < roles.len() {
        let oid = roles[next];
        next += 1;
        let found;
        let role = if oid == start.oid {
            start
        } else {
            match catalog.role_by_oid(oid) {
                Some(r) => {
                    found = r;
                    &*found
                }
                None => continue,
            }
        };
        if inheriting_only && !role.inherit {
            continue;
        }
        for m in &role.member_of {
            if !roles.contains(&m.role) {
                roles.push(m.role);
            }
        }
    }
    roles
}

/// Whether `grantor` may grant or revoke membership in `role` (PostgreSQL's
/// is_admin_of_role): a superuser, or a role that is (or is a member of) a member of
/// `role` with the admin option. A role never has the admin option on itself.
fn is_admin_of(catalog: &LiveCatalog, grantor: &RoleDef, role: u32) -> bool {
    if grantor.superuser {
        return true;
    }
    if grantor.oid == role {
        return false;
    }
    let admin_in = |r: &RoleDef| r.member_of.iter().any(|m| m.role == role && m.admin);
    admin_in(grantor)
        || (closure(catalog, grantor, false).iter().skip(1))
            .any(|&oid| catalog.role_by_oid(oid).is_some_and(|r| admin_in(&r)))
}

/// A role named in GRANT/REVOKE: `current_user` and the like as PostgreSQL reads them.
pub(crate) fn named(shared: &Shared, actor: &Actor<'_>, name: &str) -> PgResult<Arc<RoleDef>> {
    let name = match name {
        "current_user" | "current_role" => actor.user,
        "session_user" => actor.session_user,
        other => other,
    };
    role_ddl::find(shared, name).ok_or_else(|| role_ddl::missing(name))
}

pub async fn grant_or_revoke(
    shared: &Shared,
    log: &mut DdlLog,
    g: &GrantRole,
    actor: &Actor<'_>,
    out: &mut BytesMut,
) -> PgResult<()> {
    let current = named(shared, actor, "current_user")?;
    let grantor = match &g.granted_by {
        Some(name) => named(shared, actor, name)?,
        None => current.clone(),
    };
    let members = (g.members.iter())
        .map(|m| named(shared, actor, m))
        .collect::<PgResult<Vec<_>>>()?;
    for role_name in &g.roles {
        let role = role_ddl::find(shared, role_name).ok_or_else(|| role_ddl::missing(role_name))?;
        if role.superuser {
            if !current.superuser {
                return Err(PgError::new(
                    codes::INSUFFICIENT_PRIVILEGE,
                    "must be superuser to alter superusers",
                ));
            }
        } else if !current.superuser && !is_admin_of(&shared.catalog, &grantor, role.oid) {
            return Err(PgError::new(
                codes::INSUFFICIENT_PRIVILEGE,
                format!("must have admin option on role \"{}\"", role.name),
            ));
        }
        if g.grant && grantor.oid != current.oid && !current.superuser {
            return Err(PgError::new(
                codes::INSUFFICIENT_PRIVILEGE,
                "must be superuser to set grantor",
            ));
        }
        if g.grant && role.oid == predefined_roles::PG_DATABASE_OWNER {
            // PostgreSQL raises it without a SQLSTATE of its own: XX000
            return Err(PgError::new(
                codes::INTERNAL_ERROR,
                format!("role \"{}\" cannot have explicit members", role.name),
            ));
        }
        for member in &members {
            if predefined_roles::is_predefined(member.oid) {
                // nowhere to store it: the predefined roles are built in
                return Err(PgError::new(
                    codes::FEATURE_NOT_SUPPORTED,
                    format!(
                        "the memberships of role \"{}\" cannot be changed",
                        member.name
                    ),
                ));
            }
        }
        for member in &members {
            // As stored now: an earlier member of this statement may be the same role.
            let member = role_ddl::find(shared, &member.name).unwrap_or_else(|| member.clone());
            if g.grant {
                add(
                    shared,
                    log,
                    &role,
                    &member,
                    grantor.oid,
                    g.admin_option,
                    out,
                )
                .await?;
            } else {
                remove(shared, log, &role, &member, g.admin_option, out).await?;
            }
        }
    }
    Ok(())
}

/// Makes `member` a member of `role` (GRANT's work for one pair, its checks done).
pub(crate) async fn add(
    shared: &Shared,
    log: &mut DdlLog,
    role: &RoleDef,
    member: &RoleDef,
    grantor: u32,
    admin: bool,
    out: &mut BytesMut,
) -> PgResult<()> {
    // No loops, a role in itself included: refused if the role is already a member of
    // the new member.
    if is_member_of(&shared.catalog, role, member.oid) {
        return Err(PgError::new(
            codes::INVALID_GRANT_OPERATION,
            format!(
                "role \"{}\" is a member of role \"{}\"",
                role.name, member.name
            ),
        ));
    }
    let mut member = member.clone();
    match member.member_of.iter_mut().find(|m| m.role == role.oid) {
        Some(m) if admin && !m.admin => m.admin = true,
        Some(_) => {
            notice(
                out,
                codes::SUCCESSFUL_COMPLETION,
                format!(
                    "role \"{}\" is already a member of role \"{}\"",
                    member.name, role.name
                ),
            );
            return Ok(());
        }
        None => member.member_of.push(Membership {
            role: role.oid,
            admin,
            grantor,
        }),
    }
    log.put_role(shared, member).await
}

async fn remove(
    shared: &Shared,
    log: &mut DdlLog,
    role: &RoleDef,
    member: &RoleDef,
    admin_only: bool,
    out: &mut BytesMut,
) -> PgResult<()> {
    let mut member = member.clone();
    let Some(at) = member.member_of.iter().position(|m| m.role == role.oid) else {
        notice_with(
            out,
            NoticeSeverity::Warning,
            codes::WARNING,
            format!(
                "role \"{}\" is not a member of role \"{}\"",
                member.name, role.name
            ),
        );
        return Ok(());
    };
    if admin_only {
        member.member_of[at].admin = false;
    } else {
        member.member_of.remove(at);
    }
    log.put_role(shared, member).await
}
