//! CREATE/ALTER/DROP ROLE and USER (decision 0040): PostgreSQL's checks and SQLSTATEs,
//! passwords hashed per `password_encryption` before they are stored, changes through
//! the transaction's `DdlLog` (a rolled back CREATE ROLE leaves nothing). Only
//! superusers manage roles (Meridian has no CREATEROLE yet); any role may change its
//! own password and its own settings (ALTER ROLE … SET). Memberships (GRANT role TO
//! role) are `role_membership.rs`'s.

use crate::catalog::LiveCatalog;
use crate::ddl::notice;
use crate::ddl_log::DdlLog;
use crate::predefined_roles;
use crate::role_membership;
use crate::server::Shared;
use auth::password::{self, Encryption};
use bytes::BytesMut;
use pgerror::{codes, PgError, PgResult};
use sql::plan::Statement;
use sql::role::{
    check_new_name, AlterRole, CreateRole, RoleDef, RoleOptions, RoleSetting, BOOTSTRAP_SUPERUSER,
    BOOTSTRAP_SUPERUSER_OID,
};
use std::sync::Arc;
use types::timezone::Zone;

/// The role named `name`: its stored record, or the bootstrap superuser while it has
/// none (it is stored once altered).
pub fn find(shared: &Shared, name: &str) -> Option<Arc<RoleDef>> {
    find_in(&shared.catalog, &shared.bootstrap_role, name)
}

pub fn find_in(
    catalog: &LiveCatalog,
    bootstrap: &Arc<RoleDef>,
    name: &str,
) -> Option<Arc<RoleDef>> {
    catalog.role(name).or_else(|| {
        (name == BOOTSTRAP_SUPERUSER && catalog.role_by_oid(BOOTSTRAP_SUPERUSER_OID).is_none())
            .then(|| bootstrap.clone())
    })
}

/// Every role, the bootstrap superuser first.
pub fn all(catalog: &LiveCatalog, bootstrap: &Arc<RoleDef>) -> Vec<Arc<RoleDef>> {
    let mut roles = catalog.roles();
    if roles.first().map(|r| r.oid) != Some(BOOTSTRAP_SUPERUSER_OID) {
        roles.insert(0, bootstrap.clone());
    }
    roles
}

/// Who runs the statement, and the session settings it reads.
pub struct Actor<'a> {
    pub user: &'a str,
    /// The session user (`session_user` as a role name).
    pub session_user: &'a str,
    pub zone: &'a Zone,
    pub encryption: Encryption,
}

impl Actor<'_> {
    pub(crate) fn is_superuser(&self, shared: &Shared) -> bool {
        find(shared, self.user).is_some_and(|r| r.superuser)
    }
}

pub async fn execute(
    shared: &Shared,
    log: &mut DdlLog,
    stmt: &Statement,
    actor: &Actor<'_>,
    out: &mut BytesMut,
) -> PgResult<&'static str> {
    match stmt {
        Statement::CreateRole(create) => {
            create_role(shared, log, create, actor, out).await?;
            Ok("CREATE ROLE")
        }
        Statement::AlterRole(AlterRole::Options { name, options }) => {
            alter_role(shared, log, name, options, actor, out).await?;
            Ok("ALTER ROLE")
        }
        Statement::AlterRole(AlterRole::Setting { name, setting }) => {
            alter_role_setting(shared, log, name, setting, actor).await?;
            Ok("ALTER ROLE")
        }
        Statement::AlterRole(AlterRole::Rename { name, new_name }) => {
            rename_role(shared, log, name, new_name, actor, out).await?;
            Ok("ALTER ROLE")
        }
        Statement::DropRole { names, if_exists } => {
            drop_roles(shared, log, names, *if_exists, actor, out).await?;
            Ok("DROP ROLE")
        }
        Statement::GrantRole(g) => {
            crate::role_membership::grant_or_revoke(shared, log, g, actor, out).await?;
            Ok(if g.grant { "GRANT ROLE" } else { "REVOKE ROLE" })
        }
        other => Err(PgError::internal(format!(
            "not a role statement: {other:?}"
        ))),
    }
}

fn denied(what: &str) -> PgError {
    PgError::new(
        codes::INSUFFICIENT_PRIVILEGE,
        format!("permission denied to {what} role"),
    )
}

pub(crate) fn missing(name: &str) -> PgError {
    PgError::new(
        codes::UNDEFINED_OBJECT,
        format!("role \"{name}\" does not exist"),
    )
}

fn exists(name: &str) -> PgError {
    PgError::new(
        codes::DUPLICATE_OBJECT,
        format!("role \"{name}\" already exists"),
    )
}

async fn create_role(
    shared: &Shared,
    log: &mut DdlLog,
    create: &CreateRole,
    actor: &Actor<'_>,
    out: &mut BytesMut,
) -> PgResult<()> {
    check_new_name(&create.name)?;
    if !actor.is_superuser(shared) {
        return Err(denied("create"));
    }
    if find(shared, &create.name).is_some() {
        return Err(exists(&create.name));
    }
    let role = RoleDef::new(shared.catalog.allocate_oids(1).await?, &create.name);
    let role = with_options(role, &create.options, actor, out)?;
    log.put_role(shared, role).await?;
    // IN ROLE, ADMIN and ROLE, as GRANTs by the creator would make them.
    let o = &create.options;
    let grantor = role_membership::named(shared, actor, "current_user")?.oid;
    let created = || find(shared, &create.name).ok_or_else(|| missing(&create.name));
    for parent in &o.in_roles {
        let parent = role_membership::named(shared, actor, parent)?;
        role_membership::add(shared, log, &parent, &*created()?, grantor, false, out).await?;
    }
    for (members, admin) in [(&o.admins, true), (&o.members, false)] {
        for member in members {
            let member = role_membership::named(shared, actor, member)?;
            role_membership::add(shared, log, &*created()?, &member, grantor, admin, out).await?;
        }
    }
    Ok(())
}

/// `role` changed as `options` say.
fn with_options(
    mut role: RoleDef,
    options: &RoleOptions,
    actor: &Actor<'_>,
    out: &mut BytesMut,
) -> PgResult<RoleDef> {
    if let Some(superuser) = options.superuser {
        role.superuser = superuser;
    }
    if let Some(login) = options.login {
        role.login = login;
    }
    if let Some(inherit) = options.inherit {
        role.inherit = inherit;
    }
    if let Some(limit) = options.connection_limit {
        role.connection_limit = limit;
    }
    if let Some(until) = &options.valid_until {
        role.valid_until = Some(types::datetime::parse_timestamptz(until, actor.zone)?);
    }
    match &options.password {
        None => {}
        Some(Some(p)) if p.is_empty() => {
            notice(
                out,
                codes::SUCCESSFUL_COMPLETION,
                "empty string is not a valid password, clearing password".into(),
            );
            role.password = None;
        }
        Some(p) => {
            role.password = p
                .as_deref()
                .map(|p| password::encrypt(p, &role.name, actor.encryption))
        }
    }
    Ok(role)
}

/// 42939 for ALTER ROLE of a predefined role (PostgreSQL's check_rolespec_name).
fn check_alterable(role: &RoleDef) -> PgResult<()> {
    if !predefined_roles::is_predefined(role.oid) {
        return Ok(());
    }
    Err(PgError::new(
        codes::RESERVED_NAME,
        format!("role name \"{}\" is reserved", role.name),
    )
    .with_detail("Cannot alter reserved roles."))
}

async fn alter_role(
    shared: &Shared,
    log: &mut DdlLog,
    name: &str,
    options: &RoleOptions,
    actor: &Actor<'_>,
    out: &mut BytesMut,
) -> PgResult<()> {
    let role = find(shared, name).ok_or_else(|| missing(name))?;
    check_alterable(&role)?;
    let own_password_only = name == actor.user
        && *options
            == RoleOptions {
                password: options.password.clone(),
                ..RoleOptions::default()
            };
    if !own_password_only && !actor.is_superuser(shared) {
        return Err(denied("alter"));
    }
    let role = with_options((*role).clone(), options, actor, out)?;
    log.put_role(shared, role).await
}

/// ALTER ROLE … SET / RESET: a superuser may change any role's settings, a role its
/// own (a non-superuser no superuser's), as PostgreSQL without CREATEROLE. The value is
/// checked as SET would check it and kept as written; it applies from the role's next
/// session on.
async fn alter_role_setting(
    shared: &Shared,
    log: &mut DdlLog,
    name: &str,
    setting: &RoleSetting,
    actor: &Actor<'_>,
) -> PgResult<()> {
    let role = find(shared, name).ok_or_else(|| missing(name))?;
    check_alterable(&role)?;
    if !actor.is_superuser(shared) {
        if role.superuser {
            return Err(PgError::new(
                codes::INSUFFICIENT_PRIVILEGE,
                "must be superuser to alter superusers",
            ));
        }
        if name != actor.user {
            return Err(PgError::new(
                codes::INSUFFICIENT_PRIVILEGE,
                "permission denied",
            ));
        }
    }
    let mut role = (*role).clone();
    match setting {
        RoleSetting::Set { name, value } => {
            let canonical = crate::settings::check_value(name, value)?;
            match role.config.iter_mut().find(|(n, _)| n == canonical) {
                Some(kept) => kept.1.clone_from(value),
                None => role.config.push((canonical.to_string(), value.clone())),
            }
        }
        RoleSetting::Reset(name) => {
            let canonical = crate::settings::check_name(name)?;
            role.config.retain(|(n, _)| n != canonical);
        }
        RoleSetting::ResetAll => role.config.clear(),
    }
    log.put_role(shared, role).await
}

async fn rename_role(
    shared: &Shared,
    log: &mut DdlLog,
    name: &str,
    new_name: &str,
    actor: &Actor<'_>,
    out: &mut BytesMut,
) -> PgResult<()> {
    let role = find(shared, name).ok_or_else(|| missing(name))?;
    if predefined_roles::is_predefined(role.oid) {
        check_new_name(name)?; // "role name … is reserved", as PostgreSQL's RenameRole
    }
    if name == actor.user {
        return Err(PgError::new(
            codes::FEATURE_NOT_SUPPORTED,
            "session user cannot be renamed",
        ));
    }
    if find(shared, new_name).is_some() {
        return Err(exists(new_name));
    }
    check_new_name(new_name)?;
    if !actor.is_superuser(shared) {
        return Err(denied("rename"));
    }
    let mut role = (*role).clone();
    role.name = new_name.to_string();
    // An md5 hash is salted with the role's name: it no longer matches any password.
    if role.password.as_deref().is_some_and(password::is_md5) {
        role.password = None;
        notice(
            out,
            codes::SUCCESSFUL_COMPLETION,
            "MD5 password cleared because of role rename".into(),
        );
    }
    log.put_role(shared, role).await
}

async fn drop_roles(
    shared: &Shared,
    log: &mut DdlLog,
    names: &[String],
    if_exists: bool,
    actor: &Actor<'_>,
    out: &mut BytesMut,
) -> PgResult<()> {
    if !actor.is_superuser(shared) {
        return Err(denied("drop"));
    }
    for name in names {
        let Some(role) = find(shared, name) else {
            if if_exists {
                notice(
                    out,
                    codes::SUCCESSFUL_COMPLETION,
                    format!("role \"{name}\" does not exist, skipping"),
                );
                continue;
            }
            return Err(missing(name));
        };
        if name == actor.user {
            return Err(PgError::new(
                codes::OBJECT_IN_USE,
                "current user cannot be dropped",
            ));
        }
        if predefined_roles::is_predefined(role.oid) {
            return Err(PgError::new(
                codes::DEPENDENT_OBJECTS_STILL_EXIST,
                format!("cannot drop role {name} because it is required by the database system"),
            ));
        }
        if role.oid == BOOTSTRAP_SUPERUSER_OID {
            return Err(PgError::new(
                codes::DEPENDENT_OBJECTS_STILL_EXIST,
                format!("cannot drop role {name} because it is required by the database system"),
            ));
        }
        let dependents = dependents(shared, role.oid);
        if !dependents.is_empty() {
            return Err(PgError::new(
                codes::DEPENDENT_OBJECTS_STILL_EXIST,
                format!("role \"{name}\" cannot be dropped because some objects depend on it"),
            )
            .with_detail(dependents.join("\n")));
        }
        log.remove_role(shared, role.oid).await?;
        // Its members are members no more (pg_auth_members loses its rows both ways).
        for member in all(&shared.catalog, &shared.bootstrap_role) {
            if member.member_of.iter().any(|m| m.role == role.oid) {
                let mut member = (*member).clone();
                member.member_of.retain(|m| m.role != role.oid);
                log.put_role(shared, member).await?;
            }
        }
    }
    Ok(())
}

/// What keeps role `oid` from being dropped, as PostgreSQL's DETAIL lists it: the
/// relations it owns and those whose ACLs name it, in the order they were created, and
/// schema public if its ACL names it.
fn dependents(shared: &Shared, oid: u32) -> Vec<String> {
    use sql::acl::Object;
    let catalog = &shared.catalog;
    let mut relations: Vec<Object> = catalog.tables().into_iter().map(Object::Table).collect();
    relations.extend(catalog.sequences().into_iter().map(Object::Sequence));
    relations.extend(catalog.views().into_iter().map(Object::View));
    relations.push(catalog.public_schema());
    relations.sort_by_key(Object::oid);
    relations
        .iter()
        .filter_map(|r| {
            let what = if r.owner() == oid {
                "owner of"
            } else if (r.acl().iter().flatten()).any(|i| i.grantee == oid || i.grantor == oid) {
                "privileges for"
            } else {
                return None;
            };
            Some(format!("{what} {} {}", r.kind().name(), r.name()))
        })
        .collect()
}
