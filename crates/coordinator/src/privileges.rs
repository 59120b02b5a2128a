//! The privilege check every statement passes before it runs (docs/decisions/
//! 0049-grant-revoke.md): what the binder found the statement needs (`sql::acl::Required`)
//! against the ACLs of the relations as bound. Plans are bound again whenever the catalog
//! moves, GRANT and REVOKE included, so the ACLs are current; the role is looked up at
//! each statement, so a changed SUPERUSER flag counts from the next one.

use crate::exec::SessionView;
use crate::ownership::Who;
use crate::server::Shared;
use pgerror::{codes, PgError, PgResult};
use sql::acl::{self, AclMode, RelationKind, Required};
use sql::role::BOOTSTRAP_SUPERUSER_OID;
use sql::sequence::SequenceDef;

/// 42501 for the first relation whose privileges the statement lacks, as PostgreSQL
/// reports it ("permission denied for table t").
pub fn check(shared: &Shared, user: &str, required: &[Required]) -> PgResult<()> {
    let session = Who::of(shared, user);
    for r in required {
        let who = match r.checked_as {
            None => session,
            Some(owner) => role_by_oid(shared, owner),
        };
        if who.superuser {
            continue;
        }
        let held = acl::held(&r.relation.effective_acl(), who.oid, false);
        if held & r.privileges != r.privileges {
            return Err(denied(r.relation.kind().name(), r.relation.name()));
        }
    }
    Ok(())
}

/// 42501 unless the session's role holds one of `any_of` on sequence `def` (nextval
/// asks for USAGE or UPDATE, currval for SELECT or USAGE, setval for UPDATE), checked
/// as the function runs: its argument is a value.
pub fn check_sequence(session: &SessionView, def: &SequenceDef, any_of: AclMode) -> PgResult<()> {
    let role = crate::role_ddl::find_in(session.catalog, session.bootstrap_role, session.user);
    let who = Who::of_role(role.as_deref());
    let acl = acl::effective(&def.acl, def.owner, RelationKind::Sequence);
    if who.superuser || acl::held(&acl, who.oid, false) & any_of != 0 {
        return Ok(());
    }
    Err(denied("sequence", &def.name))
}

/// The role with OID `oid` (a view's owner): no privileges if it is gone.
fn role_by_oid(shared: &Shared, oid: u32) -> Who {
    match shared.catalog.role_by_oid(oid) {
        Some(r) => Who {
            oid,
            superuser: r.superuser,
        },
        None => Who {
            oid,
            superuser: oid == BOOTSTRAP_SUPERUSER_OID,
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
