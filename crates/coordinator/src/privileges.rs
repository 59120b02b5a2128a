//! The privilege check every statement passes before it runs (docs/decisions/
//! 0049-grant-revoke.md): what the binder found the statement needs (`sql::acl::Required`)
//! against the ACLs of the relations as bound. Plans are bound again whenever the catalog
//! moves, GRANT and REVOKE included, so the ACLs are current; the role is looked up at
//! each statement, so a changed SUPERUSER flag counts from the next one.

use crate::exec::SessionView;
use crate::ownership::Who;
use crate::server::Shared;
use pgerror::{codes, PgError, PgResult};
use sql::acl::{self, AclMode, Object, ObjectKind, Required};
use sql::plan::Statement;
use sql::role::BOOTSTRAP_SUPERUSER_OID;
use sql::sequence::SequenceDef;

/// 42501 for the first relation whose privileges the statement lacks, as PostgreSQL
/// reports it ("permission denied for table t").
pub fn check(shared: &Shared, user: &str, required: &[Required]) -> PgResult<()> {
    let session = Who::of(shared, user);
    let first = required.iter().find(|r| r.checked_as.is_none());
    if let Some(first) = first.filter(|_| !session.superuser) {
        // Without USAGE, PostgreSQL's search path skips the schema: the relation is not
        // found (a name qualified with public. would be denied instead).
        check_schema(shared, &session, acl::USAGE).map_err(|_| {
            PgError::new(
                codes::UNDEFINED_TABLE,
                format!("relation \"{}\" does not exist", first.relation.name()),
            )
        })?;
    }
    for r in required {
        let owner;
        let who = match r.checked_as {
            None => &session,
            Some(oid) => {
                owner = role_by_oid(shared, oid);
                &owner
            }
        };
        if who.superuser {
            continue;
        }
        let held = who.held(&r.relation.effective_acl(), false);
        if held & r.privileges != r.privileges {
            return Err(denied(r.relation.kind().name(), r.relation.name()));
        }
    }
    Ok(())
}

/// 42501 unless `who` may run DDL statement `stmt`: CREATE on schema public for what
/// it creates there, ownership of what it alters or drops (`crate::ownership`), in
/// PostgreSQL's order (the schema first, but an index's table's owner first).
pub fn check_ddl(shared: &Shared, who: &Who, stmt: &Statement) -> PgResult<()> {
    if who.superuser {
        return Ok(());
    }
    let creates = matches!(
        stmt,
        Statement::CreateTable(_)
            | Statement::CreateView(_)
            | Statement::CreateSequence(_)
            | Statement::CreateEnum(_)
    );
    if creates {
        check_schema(shared, who, acl::CREATE)?;
    }
    crate::ownership::check_statement(shared, who, stmt)?;
    if let Statement::CreateIndex(_) = stmt {
        check_schema(shared, who, acl::CREATE)?;
    }
    Ok(())
}

/// 42501 unless `who` holds `privilege` on schema public.
fn check_schema(shared: &Shared, who: &Who, privilege: AclMode) -> PgResult<()> {
    let schema = shared.catalog.public_schema();
    let implied = if who.implied() != 0 { acl::USAGE } else { 0 };
    if (who.held(&schema.effective_acl(), false) | implied) & privilege == 0 {
        return Err(denied("schema", "public"));
    }
    Ok(())
}

/// 42501 unless the session's role holds one of `any_of` on sequence `def` (nextval
/// asks for USAGE or UPDATE, currval for SELECT or USAGE, setval for UPDATE), checked
/// as the function runs: its argument is a value.
pub fn check_sequence(session: &SessionView, def: &SequenceDef, any_of: AclMode) -> PgResult<()> {
    let role = crate::role_ddl::find_in(session.catalog, session.bootstrap_role, session.user);
    let who = Who::of_role(session.catalog, role.as_deref());
    let acl = acl::effective(&def.acl, def.owner, ObjectKind::Sequence);
    if who.superuser || who.held(&acl, false) & any_of != 0 {
        return Ok(());
    }
    Err(denied("sequence", &def.name))
}

/// has_table_privilege: whether `role` (the session's without one) holds any of
/// `privileges` ("SELECT, UPDATE WITH GRANT OPTION") on `relation`, a name. The system
/// catalogs are readable by all.
pub fn has_privilege(
    session: &SessionView,
    role: Option<&str>,
    relation: &str,
    privileges: &str,
) -> PgResult<bool> {
    let name = role.unwrap_or(session.user);
    let who = match crate::role_ddl::find_in(session.catalog, session.bootstrap_role, name) {
        Some(r) => Who::of_role(session.catalog, Some(&r)),
        None => {
            return Err(PgError::new(
                codes::UNDEFINED_OBJECT,
                format!("role \"{name}\" does not exist"),
            ))
        }
    };
    let mut wanted = 0;
    let mut options = 0;
    for written in privileges.split(',') {
        let item = written.trim().to_ascii_uppercase();
        let (privilege, option) = match item.strip_suffix(" WITH GRANT OPTION") {
            Some(p) => (p.trim_end(), true),
            None => (item.as_str(), false),
        };
        let bit = acl::privilege_named(privilege).ok_or_else(|| {
            PgError::new(
                codes::INVALID_PARAMETER_VALUE,
                format!("unrecognized privilege type: \"{}\"", written.trim()),
            )
        })?;
        if option {
            options |= bit;
        } else {
            wanted |= bit;
        }
    }
    let Some(relation) = relation_named(session, relation)? else {
        return Ok(true);
    };
    if who.superuser {
        return Ok(true);
    }
    let acl = relation.effective_acl();
    let owner_options = if who.has_privileges_of(relation.owner()) {
        options
    } else {
        0
    };
    Ok(
        who.held(&acl, false) & wanted != 0
            || (who.held(&acl, true) | owner_options) & options != 0,
    )
}

/// The user relation `name` names (None: a system catalog); 42P01 for neither.
fn relation_named(session: &SessionView, name: &str) -> PgResult<Option<Object>> {
    use sql::catalog::Catalog;
    let parts = sql::binder::parse_object_name(name);
    let catalog = &session.catalog;
    let found = match parts.as_slice() {
        [name] | [_, name] if parts.len() == 1 || parts[0] == "public" => {
            (catalog.table(None, name).map(Object::Table))
                .or_else(|| catalog.view(name).map(Object::View))
                .or_else(|| catalog.sequence(name).map(Object::Sequence))
        }
        _ => None,
    };
    let system = match parts.as_slice() {
        [name] => sql::system_tables::system_table(name).is_some(),
        [schema, name] if schema == "pg_catalog" => {
            sql::system_tables::system_table(name).is_some()
        }
        _ => false,
    };
    match found {
        Some(r) => Ok(Some(r)),
        None if system => Ok(None),
        None => Err(PgError::new(
            codes::UNDEFINED_TABLE,
            format!("relation \"{name}\" does not exist"),
        )),
    }
}

/// `check` against the relations as the catalog has them now rather than as bound.
pub fn check_current(shared: &Shared, user: &str, required: &[Required]) -> PgResult<()> {
    use sql::catalog::Catalog;
    let catalog = &shared.catalog;
    let now = |o: &Object| match o {
        Object::Table(t) => catalog.table_by_oid(t.oid).map(Object::Table),
        Object::View(v) => catalog.view_by_oid(v.oid).map(Object::View),
        Object::Sequence(s) => catalog.sequence_by_oid(s.oid).map(Object::Sequence),
        Object::PublicSchema(_) => Some(catalog.public_schema()),
    };
    let current: Vec<Required> = (required.iter())
        .map(|r| Required {
            relation: now(&r.relation).unwrap_or_else(|| r.relation.clone()),
            ..r.clone()
        })
        .collect();
    check(shared, user, &current)
}

/// The role with OID `oid` (a view's owner): no privileges if it is gone.
fn role_by_oid(shared: &Shared, oid: u32) -> Who {
    match shared.catalog.role_by_oid(oid) {
        Some(r) => Who::of_role(&shared.catalog, Some(&r)),
        None => Who {
            oid,
            superuser: oid == BOOTSTRAP_SUPERUSER_OID,
            privileges_of: [oid].into_iter().collect(),
        },
    }
}

/// PostgreSQL's aclcheck_error for a relation.
pub fn denied(kind: &str, name: &str) -> PgError {
    PgError::new(
        codes::INSUFFICIENT_PRIVILEGE,
        format!("permission denied for {kind} {name}"),
    )
}
