//! Ownership of relations (docs/decisions/0046-privileges.md): a table, view, sequence or
//! index belongs to the role that created it (an index to its table's owner), and only
//! its owner or a superuser may alter or drop it, as in PostgreSQL. The checks run as a
//! DDL statement executes, before it changes anything, with PostgreSQL's messages
//! ("must be owner of table t", 42501). A name that does not resolve is left to the
//! statement, which reports it (or skips it under IF EXISTS) as before.

use crate::catalog::LiveCatalog;
use crate::role_ddl;
use crate::role_membership::{self, Roles};
use crate::server::Shared;
use pgerror::{codes, PgError, PgResult};
use sql::catalog::Catalog;
use sql::plan::{CommentTarget, Statement};

/// The role a statement runs as, looked up when it runs (a role's SUPERUSER may change
/// between two statements of a session).
#[derive(Debug, Clone)]
pub struct Who {
    pub oid: u32,
    pub superuser: bool,
    /// The roles whose privileges it has: itself first, then those it inherits from
    /// (`role_membership::privileges_of`).
    pub privileges_of: Roles,
}

impl Who {
    /// The session's role `user`. A role dropped while its session lasts owns nothing
    /// and has no privileges (PostgreSQL fails its statements later, at the first
    /// catalog lookup of its OID).
    pub fn of(shared: &Shared, user: &str) -> Who {
        Who::of_role(&shared.catalog, role_ddl::find(shared, user).as_deref())
    }

    /// `role`, found by name (None: dropped).
    pub fn of_role(catalog: &LiveCatalog, role: Option<&sql::role::RoleDef>) -> Who {
        role.map_or(
            Who {
                oid: 0,
                superuser: false,
                privileges_of: Roles::new(),
            },
            |r| Who {
                oid: r.oid,
                superuser: r.superuser,
                privileges_of: role_membership::privileges_of(catalog, r),
            },
        )
    }

    /// Whether it may act as role `role` on what `role` owns or holds: a superuser, the
    /// role itself, or a member that inherits from it (PostgreSQL's has_privs_of_role).
    pub fn has_privileges_of(&self, role: u32) -> bool {
        self.superuser || self.privileges_of.contains(&role)
    }

    /// The privileges it holds in `acl` (`options`: the grant options instead), its own,
    /// PUBLIC's and those of the roles it inherits from.
    pub fn held(&self, acl: &[sql::acl::AclItem], options: bool) -> sql::acl::AclMode {
        let granted =
            (self.privileges_of.iter()).fold(0, |m, &r| m | sql::acl::held(acl, r, options));
        if options {
            return granted;
        }
        granted | self.implied()
    }

    /// What pg_read_all_data (SELECT) and pg_write_all_data (INSERT, UPDATE, DELETE) give
    /// on every table, view and sequence; both give USAGE on the schema
    /// (`privileges::check_schema`).
    pub fn implied(&self) -> sql::acl::AclMode {
        use crate::predefined_roles::{PG_READ_ALL_DATA, PG_WRITE_ALL_DATA};
        let mut implied = 0;
        if self.privileges_of.contains(&PG_READ_ALL_DATA) {
            implied |= sql::acl::SELECT;
        }
        if self.privileges_of.contains(&PG_WRITE_ALL_DATA) {
            implied |= sql::acl::INSERT | sql::acl::UPDATE | sql::acl::DELETE;
        }
        implied
    }

    /// 42501 unless this role has the privileges of the object's owner (`owner`): the
    /// owner, a member of it, or a superuser; `kind` and `name` as PostgreSQL names the
    /// object ("table", "t").
    pub fn check_owner(&self, owner: u32, kind: &str, name: &str) -> PgResult<()> {
        if self.has_privileges_of(owner) {
            return Ok(());
        }
        Err(PgError::new(
            codes::INSUFFICIENT_PRIVILEGE,
            format!("must be owner of {kind} {name}"),
        ))
    }

    /// `check_owner` for each of `names` in turn, up to the first that `owner_of` does not
    /// find ((owner, name as shown)): the statement reports that one itself.
    fn check_each(
        &self,
        kind: &str,
        names: &[String],
        owner_of: impl Fn(&str) -> Option<(u32, String)>,
    ) -> PgResult<()> {
        for name in names {
            let Some((owner, shown)) = owner_of(name) else {
                return Ok(());
            };
            self.check_owner(owner, kind, &shown)?;
        }
        Ok(())
    }
}

/// Refuses `stmt` unless `who` owns the relations it alters or drops. Names are checked
/// in the statement's order, up to the first that does not resolve.
pub fn check_statement(shared: &Shared, who: &Who, stmt: &Statement) -> PgResult<()> {
    if who.superuser {
        return Ok(());
    }
    let catalog = &shared.catalog;
    match stmt {
        Statement::DropTable { names, .. } => who.check_each("table", names, |name| {
            catalog.table(None, name).map(|t| (t.owner, t.name.clone()))
        })?,
        Statement::CreateIndex(ci) => who.check_owner(ci.table.owner, "table", &ci.table.name)?,
        Statement::DropIndex { names, .. } => who.check_each("index", names, |name| {
            crate::index_ddl::table_of_index(shared, name).map(|t| (t.owner, name.to_string()))
        })?,
        Statement::AlterTable(at) => who.check_owner(at.table.owner, "table", &at.table.name)?,
        Statement::AlterSequence(alter) => {
            if let Some(s) = catalog.sequence(&alter.name) {
                who.check_owner(s.owner, "sequence", &s.name)?;
            }
        }
        Statement::DropSequence { names, .. } => who.check_each("sequence", names, |name| {
            catalog.sequence(name).map(|s| (s.owner, s.name.clone()))
        })?,
        Statement::CreateView(cv) if cv.or_replace => {
            if let Some(v) = catalog.view(&cv.name) {
                who.check_owner(v.owner, "view", &v.name)?;
            }
        }
        Statement::DropView { names, .. } => who.check_each("view", names, |name| {
            catalog.view(name).map(|v| (v.owner, v.name.clone()))
        })?,
        Statement::Comment { target, .. } => match target {
            CommentTarget::Table(t) => who.check_owner(t.owner, "table", &t.name)?,
            // PostgreSQL names the column's relation so.
            CommentTarget::Column(t, _) => who.check_owner(t.owner, "relation", &t.name)?,
            CommentTarget::View(v) => who.check_owner(v.owner, "view", &v.name)?,
        },
        Statement::RenameView { name, .. } => {
            if let Some(v) = catalog.view(name) {
                who.check_owner(v.owner, "view", &v.name)?;
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use sql::role::BOOTSTRAP_SUPERUSER_OID;

    #[test]
    fn relations_stored_before_owners_belong_to_the_bootstrap_superuser() {
        let table: sql::TableDef =
            serde_json::from_str(r#"{"oid":1,"name":"t","columns":[],"rel":1}"#).unwrap();
        let view: sql::view::ViewDef = serde_json::from_str(
            r#"{"oid":2,"name":"v","columns":[],"query":"SELECT 1","reads":[]}"#,
        )
        .unwrap();
        assert_eq!(
            (table.owner, view.owner),
            (BOOTSTRAP_SUPERUSER_OID, BOOTSTRAP_SUPERUSER_OID)
        );
    }

    #[test]
    fn only_owners_their_members_and_superusers_pass() {
        let who = |oid, superuser, privileges_of: &[u32]| super::Who {
            oid,
            superuser,
            privileges_of: privileges_of.iter().copied().collect(),
        };
        assert!(who(20, false, &[20]).check_owner(20, "table", "t").is_ok());
        assert!(who(21, true, &[21]).check_owner(20, "table", "t").is_ok());
        assert!(who(22, false, &[22, 20])
            .check_owner(20, "table", "t")
            .is_ok());
        let refused = who(21, false, &[21])
            .check_owner(20, "view", "v")
            .unwrap_err();
        assert_eq!(
            (refused.code, refused.message.as_str()),
            ("42501", "must be owner of view v")
        );
    }
}
