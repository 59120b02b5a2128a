//! Privileges on relations (docs/decisions/0049-grant-revoke.md), in PostgreSQL's
//! model: a relation's ACL is a list of aclitems, each what one grantor gave one grantee
//! (or PUBLIC), with the grant options among them. A relation never granted nor revoked
//! on has no ACL (pg_class.relacl NULL): then its owner holds every privilege, as
//! `acldefault` says, and nobody else any.
//!
//! The binder lists what a statement needs (`Required`); the coordinator checks the
//! list against the ACLs each time the statement runs, so a REVOKE counts from the next
//! statement even for a plan bound before it.

use crate::catalog::TableDef;
use crate::sequence::SequenceDef;
use crate::view::ViewDef;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::sync::Arc;

/// A set of privileges: PostgreSQL's ACL_* bits.
pub type AclMode = u16;

pub const INSERT: AclMode = 1 << 0;
pub const SELECT: AclMode = 1 << 1;
pub const UPDATE: AclMode = 1 << 2;
pub const DELETE: AclMode = 1 << 3;
pub const TRUNCATE: AclMode = 1 << 4;
pub const REFERENCES: AclMode = 1 << 5;
pub const TRIGGER: AclMode = 1 << 6;
pub const USAGE: AclMode = 1 << 8;
pub const CREATE: AclMode = 1 << 9;

/// The grantee that stands for every role.
pub const PUBLIC: u32 = 0;

/// Each privilege, its aclitem letter and its SQL name, in aclitem order.
const PRIVILEGES: [(AclMode, char, &str); 9] = [
    (INSERT, 'a', "INSERT"),
    (SELECT, 'r', "SELECT"),
    (UPDATE, 'w', "UPDATE"),
    (DELETE, 'd', "DELETE"),
    (TRUNCATE, 'D', "TRUNCATE"),
    (REFERENCES, 'x', "REFERENCES"),
    (TRIGGER, 't', "TRIGGER"),
    (USAGE, 'U', "USAGE"),
    (CREATE, 'C', "CREATE"),
];

/// The role every database's owner is a member of, which owns schema public.
pub const PG_DATABASE_OWNER: u32 = 6171;

/// The privilege a SQL name (upper case) stands for.
pub fn privilege_named(name: &str) -> Option<AclMode> {
    PRIVILEGES.iter().find(|p| p.2 == name).map(|p| p.0)
}

/// The SQL name of one privilege bit.
pub fn privilege_name(bit: AclMode) -> &'static str {
    PRIVILEGES.iter().find(|p| p.0 == bit).map_or("?", |p| p.2)
}

/// The single privileges in `mode`, in aclitem order.
pub fn bits(mode: AclMode) -> impl Iterator<Item = AclMode> {
    PRIVILEGES
        .iter()
        .map(|p| p.0)
        .filter(move |b| mode & b != 0)
}

/// What one grantor gave one grantee.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AclItem {
    /// A role OID, or `PUBLIC`.
    pub grantee: u32,
    pub grantor: u32,
    pub privileges: AclMode,
    /// Those of `privileges` the grantee may grant on.
    pub grant_options: AclMode,
}

impl AclItem {
    /// Its text form, `grantee=privileges/grantor` (PUBLIC as an empty grantee), roles
    /// named by `name` (PostgreSQL's aclitemout).
    pub fn text(&self, name: impl Fn(u32) -> String) -> String {
        let mut s = String::new();
        if self.grantee != PUBLIC {
            s.push_str(&quoted_role(&name(self.grantee)));
        }
        s.push('=');
        for (bit, letter, _) in PRIVILEGES {
            if self.privileges & bit != 0 {
                s.push(letter);
                if self.grant_options & bit != 0 {
                    s.push('*');
                }
            }
        }
        s.push('/');
        s.push_str(&quoted_role(&name(self.grantor)));
        s
    }
}

/// A role name as an aclitem writes it: double-quoted unless it is only letters, digits
/// and underscores (PostgreSQL's putid).
pub fn quoted_role(name: &str) -> String {
    if name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// The kinds of object privileges apply to, as GRANT and its messages name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    Table,
    View,
    Sequence,
    Schema,
}

impl ObjectKind {
    /// Every privilege an object of this kind can have (what ALL grants).
    pub fn all(self) -> AclMode {
        match self {
            ObjectKind::Table | ObjectKind::View => {
                INSERT | SELECT | UPDATE | DELETE | TRUNCATE | REFERENCES | TRIGGER
            }
            ObjectKind::Sequence => SELECT | UPDATE | USAGE,
            ObjectKind::Schema => USAGE | CREATE,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::Table => "table",
            ObjectKind::View => "view",
            ObjectKind::Sequence => "sequence",
            ObjectKind::Schema => "schema",
        }
    }
}

/// The ACL in force: the stored one, or the owner's all without one (`acldefault`;
/// schema public's as PostgreSQL 15's initdb leaves it: its owner's all, PUBLIC's USAGE).
pub fn effective(acl: &Option<Vec<AclItem>>, owner: u32, kind: ObjectKind) -> Cow<'_, [AclItem]> {
    match acl {
        Some(items) => Cow::Borrowed(items),
        None if kind == ObjectKind::Schema => Cow::Owned(vec![
            AclItem {
                grantee: owner,
                grantor: owner,
                privileges: kind.all(),
                grant_options: 0,
            },
            AclItem {
                grantee: PUBLIC,
                grantor: owner,
                privileges: USAGE,
                grant_options: 0,
            },
        ]),
        // The owner's grant options are implicit: it can always grant (aclitem shows none).
        None => Cow::Owned(vec![AclItem {
            grantee: owner,
            grantor: owner,
            privileges: kind.all(),
            grant_options: 0,
        }]),
    }
}

/// The privileges `role` holds, PUBLIC's included (`options`: the grant options instead).
pub fn held(acl: &[AclItem], role: u32, options: bool) -> AclMode {
    acl.iter()
        .filter(|i| i.grantee == role || i.grantee == PUBLIC)
        .fold(0, |m, i| {
            m | if options {
                i.grant_options
            } else {
                i.privileges
            }
        })
}

/// `grantor` gives `grantee` `privileges` (with their grant options if `with_option`);
/// one item per grantee and grantor, kept where it was (PostgreSQL's aclupdate).
pub fn grant(
    acl: &mut Vec<AclItem>,
    grantee: u32,
    grantor: u32,
    privileges: AclMode,
    with_option: bool,
) {
    let options = if with_option { privileges } else { 0 };
    if privileges == 0 {
        return;
    }
    match acl
        .iter_mut()
        .find(|i| i.grantee == grantee && i.grantor == grantor)
    {
        Some(item) => {
            item.privileges |= privileges;
            item.grant_options |= options;
        }
        None => acl.push(AclItem {
            grantee,
            grantor,
            privileges,
            grant_options: options,
        }),
    }
}

/// `grantor` takes back from `grantee` `privileges`, or only their grant options; an
/// item left with no privileges goes.
pub fn revoke(
    acl: &mut Vec<AclItem>,
    grantee: u32,
    grantor: u32,
    privileges: AclMode,
    options_only: bool,
) {
    if let Some(item) = acl
        .iter_mut()
        .find(|i| i.grantee == grantee && i.grantor == grantor)
    {
        item.grant_options &= !privileges;
        if !options_only {
            item.privileges &= !privileges;
        }
    }
    acl.retain(|i| i.privileges != 0);
}

/// What privileges are held on: a relation a statement uses, as bound, or schema
/// public with its ACL (the only schema).
#[derive(Debug, Clone)]
pub enum Object {
    Table(Arc<TableDef>),
    View(Arc<ViewDef>),
    Sequence(Arc<SequenceDef>),
    PublicSchema(Option<Vec<AclItem>>),
}

impl Object {
    pub fn oid(&self) -> u32 {
        match self {
            Object::Table(t) => t.oid,
            Object::View(v) => v.oid,
            Object::Sequence(s) => s.oid,
            Object::PublicSchema(_) => crate::catalog::PUBLIC_NAMESPACE_OID,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Object::Table(t) => &t.name,
            Object::View(v) => &v.name,
            Object::Sequence(s) => &s.name,
            Object::PublicSchema(_) => "public",
        }
    }

    pub fn owner(&self) -> u32 {
        match self {
            Object::Table(t) => t.owner,
            Object::View(v) => v.owner,
            Object::Sequence(s) => s.owner,
            Object::PublicSchema(_) => PG_DATABASE_OWNER,
        }
    }

    pub fn kind(&self) -> ObjectKind {
        match self {
            Object::Table(_) => ObjectKind::Table,
            Object::View(_) => ObjectKind::View,
            Object::Sequence(_) => ObjectKind::Sequence,
            Object::PublicSchema(_) => ObjectKind::Schema,
        }
    }

    pub fn acl(&self) -> &Option<Vec<AclItem>> {
        match self {
            Object::Table(t) => &t.acl,
            Object::View(v) => &v.acl,
            Object::Sequence(s) => &s.acl,
            Object::PublicSchema(acl) => acl,
        }
    }

    /// The ACL in force (`effective`).
    pub fn effective_acl(&self) -> Cow<'_, [AclItem]> {
        effective(self.acl(), self.owner(), self.kind())
    }
}

/// What a statement needs on one relation: all of `privileges`, held by the session's
/// role, or, for a relation a view reads, by the view's owner (`checked_as`), as
/// PostgreSQL checks a view's relations.
#[derive(Debug, Clone)]
pub struct Required {
    pub relation: Object,
    pub privileges: AclMode,
    pub checked_as: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(oid: u32) -> String {
        match oid {
            10 => "postgres".into(),
            20 => "bob".into(),
            _ => "Mixed Case".into(),
        }
    }

    #[test]
    fn items_print_as_postgresql_prints_them() {
        let mut acl = effective(&None, 10, ObjectKind::Table).into_owned();
        grant(&mut acl, 20, 10, SELECT | UPDATE, false);
        grant(&mut acl, PUBLIC, 10, SELECT, false);
        grant(&mut acl, 30, 10, INSERT, true);
        let text: Vec<String> = acl.iter().map(|i| i.text(name)).collect();
        assert_eq!(
            text,
            [
                "postgres=arwdDxt/postgres",
                "bob=rw/postgres",
                "=r/postgres",
                "\"Mixed Case\"=a*/postgres"
            ]
        );
    }

    #[test]
    fn revoking_everything_drops_the_item_and_public_counts_for_all() {
        let mut acl = effective(&None, 10, ObjectKind::Sequence).into_owned();
        grant(&mut acl, PUBLIC, 10, SELECT, false);
        grant(&mut acl, 20, 10, USAGE, true);
        assert_eq!(held(&acl, 20, false), SELECT | USAGE);
        revoke(&mut acl, 20, 10, USAGE, true);
        assert_eq!(
            (held(&acl, 20, false), held(&acl, 20, true)),
            (SELECT | USAGE, 0)
        );
        revoke(&mut acl, 20, 10, USAGE, false);
        assert_eq!(acl.len(), 2);
        revoke(&mut acl, 10, 10, ObjectKind::Sequence.all(), false);
        assert_eq!(held(&acl, 10, false), SELECT);
    }
}
