//! GRANT and REVOKE of privileges on tables, views and sequences, checked as far as the
//! statement's text allows (docs/decisions/0049-grant-revoke.md); the coordinator
//! resolves the names and changes the ACLs (`crate::acl`).

use crate::acl::{self, AclMode, ObjectKind};
use crate::parse::ast;
use pgerror::{codes, PgError, PgResult};

/// GRANT or REVOKE, bound.
#[derive(Debug, Clone)]
pub struct GrantRevoke {
    /// GRANT (else REVOKE).
    pub grant: bool,
    /// The privileges named; None for ALL [PRIVILEGES] (every privilege of each object).
    pub privileges: Option<AclMode>,
    pub objects: GrantObjects,
    /// Role names as written (`CURRENT_USER` and the like included); None for PUBLIC.
    pub grantees: Vec<Option<String>>,
    /// GRANT … WITH GRANT OPTION, or REVOKE GRANT OPTION FOR.
    pub grant_option: bool,
    /// REVOKE … CASCADE.
    pub cascade: bool,
}

/// What the privileges are granted on.
#[derive(Debug, Clone)]
pub enum GrantObjects {
    /// `ON [TABLE] names` (tables, views and sequences) or `ON SEQUENCE names`.
    Relations {
        kind: ObjectKind,
        names: Vec<Vec<String>>,
    },
    /// `ON ALL TABLES IN SCHEMA public` (tables and views) or `ALL SEQUENCES`.
    AllInPublic { kind: ObjectKind },
    /// `ON SCHEMA public`.
    PublicSchema,
}

pub fn bind(stmt: &ast::Statement) -> PgResult<GrantRevoke> {
    let (grant, privileges, objects, grantees, grant_option, cascade) = match stmt {
        ast::Statement::Grant(g) => {
            if g.as_grantor.is_some() || g.granted_by.is_some() || g.current_grants.is_some() {
                return Err(unsupported("GRANTED BY"));
            }
            (
                true,
                &g.privileges,
                &g.objects,
                &g.grantees,
                g.with_grant_option,
                false,
            )
        }
        ast::Statement::Revoke(r) => {
            if r.granted_by.is_some() {
                return Err(unsupported("GRANTED BY"));
            }
            let cascade = matches!(r.cascade, Some(ast::CascadeOption::Cascade));
            (
                false,
                &r.privileges,
                &r.objects,
                &r.grantees,
                r.grant_option_for,
                cascade,
            )
        }
        _ => return Err(PgError::internal("not GRANT or REVOKE")),
    };
    let objects = match objects {
        Some(objects) => bind_objects(objects)?,
        // GRANT role TO role: role membership.
        None => return Err(unsupported("role membership (GRANT role TO role)")),
    };
    let kind = match &objects {
        GrantObjects::Relations { kind, .. } | GrantObjects::AllInPublic { kind } => *kind,
        GrantObjects::PublicSchema => ObjectKind::Schema,
    };
    let privileges = match privileges {
        ast::Privileges::All { .. } => None,
        ast::Privileges::Actions(actions) => {
            let mut mode = 0;
            for a in actions {
                let bit = privilege(a, kind)?;
                // ON TABLE may name sequences too: what each object cannot have is found
                // when it is known.
                let possible = match kind {
                    ObjectKind::Table | ObjectKind::View => {
                        ObjectKind::Table.all() | ObjectKind::Sequence.all()
                    }
                    other => other.all(),
                };
                if possible & bit == 0 {
                    return Err(invalid_type(acl::privilege_name(bit), kind));
                }
                mode |= bit;
            }
            Some(mode)
        }
    };
    let grantees = grantees
        .iter()
        .map(|g| match (&g.grantee_type, &g.name) {
            (ast::GranteesType::Public, _) => Ok(None),
            (
                ast::GranteesType::None
                | ast::GranteesType::Role
                | ast::GranteesType::User
                | ast::GranteesType::Group,
                Some(ast::GranteeName::ObjectName(n)),
            ) => match crate::binder::object_name_parts(n).as_slice() {
                [name] if name == "public" => Ok(None),
                [name] => Ok(Some(name.clone())),
                _ => Err(syntax(&n.to_string())),
            },
            _ => Err(syntax(&g.to_string())),
        })
        .collect::<PgResult<_>>()?;
    Ok(GrantRevoke {
        grant,
        privileges,
        objects,
        grantees,
        grant_option,
        cascade,
    })
}

fn bind_objects(objects: &ast::GrantObjects) -> PgResult<GrantObjects> {
    use ast::GrantObjects as O;
    let relations = |kind, names: &[ast::ObjectName]| GrantObjects::Relations {
        kind,
        names: names.iter().map(crate::binder::object_name_parts).collect(),
    };
    let in_public = |schemas: &[ast::ObjectName], kind| match schemas {
        [s] if crate::binder::object_name_parts(s) == ["public"] => {
            Ok(GrantObjects::AllInPublic { kind })
        }
        [s] => Err(PgError::new(
            codes::INVALID_SCHEMA_NAME,
            format!(
                "schema \"{}\" does not exist",
                crate::binder::object_name_parts(s).join(".")
            ),
        )),
        _ => Err(unsupported("several schemas")),
    };
    match objects {
        O::Tables(names) => Ok(relations(ObjectKind::Table, names)),
        O::Sequences(names) => Ok(relations(ObjectKind::Sequence, names)),
        O::AllTablesInSchema { schemas } => in_public(schemas, ObjectKind::Table),
        O::AllSequencesInSchema { schemas } => in_public(schemas, ObjectKind::Sequence),
        O::Schemas(names) => {
            for n in names {
                match crate::binder::object_name_parts(n).as_slice() {
                    [s] if s == "public" => {}
                    [s] if s == "pg_catalog" || s == "information_schema" => {
                        return Err(unsupported("privileges on system schemas"))
                    }
                    parts => {
                        return Err(PgError::new(
                            codes::INVALID_SCHEMA_NAME,
                            format!("schema \"{}\" does not exist", parts.join(".")),
                        ))
                    }
                }
            }
            Ok(GrantObjects::PublicSchema)
        }
        O::Databases(_) => Err(unsupported("privileges on databases")),
        O::Function { .. } | O::AllFunctionsInSchema { .. } => {
            Err(unsupported("privileges on functions"))
        }
        other => Err(syntax(&other.to_string())),
    }
}

/// The privilege a GRANT on a `kind` names; column lists are not supported yet.
fn privilege(action: &ast::Action, kind: ObjectKind) -> PgResult<AclMode> {
    use ast::Action as A;
    let (name, columns) = match action {
        A::Select { columns } => ("SELECT", columns.is_some()),
        A::Insert { columns } => ("INSERT", columns.is_some()),
        A::Update { columns } => ("UPDATE", columns.is_some()),
        A::References { columns } => ("REFERENCES", columns.is_some()),
        A::Delete => ("DELETE", false),
        A::Truncate => ("TRUNCATE", false),
        A::Trigger => ("TRIGGER", false),
        A::Usage => ("USAGE", false),
        A::Create { obj_type: None } => ("CREATE", false),
        A::Connect => return Err(invalid_type("CONNECT", kind)),
        A::Temporary => return Err(invalid_type("TEMPORARY", kind)),
        A::Exec { .. } | A::Execute { .. } => return Err(invalid_type("EXECUTE", kind)),
        other => {
            return Err(PgError::new(
                codes::SYNTAX_ERROR,
                format!(
                    "unrecognized privilege type \"{}\"",
                    other.to_string().to_lowercase()
                ),
            ))
        }
    };
    if columns {
        return Err(unsupported("column privileges"));
    }
    Ok(acl::privilege_named(name).expect("a known privilege"))
}

fn invalid_type(name: &str, kind: ObjectKind) -> PgError {
    PgError::new(
        codes::INVALID_GRANT_OPERATION,
        format!("invalid privilege type {name} for {}", kind.name()),
    )
}

fn unsupported(what: &str) -> PgError {
    PgError::unsupported(format!("{what} in GRANT and REVOKE"))
}

fn syntax(near: &str) -> PgError {
    PgError::new(
        codes::SYNTAX_ERROR,
        format!("syntax error at or near \"{near}\""),
    )
}
