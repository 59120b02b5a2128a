//! Roles (docs/decisions/0040): the catalog record, and CREATE/ALTER/DROP ROLE and USER
//! parsed by hand (sqlparser reads CREATE USER in Snowflake's form). What the options
//! mean (password hashing, reserved names, who may do what) is the coordinator's
//! business (`coordinator/src/role_ddl.rs`).

use crate::plan::Statement;
use crate::tokens::{Token, Tokens};
use pgerror::{codes, PgError, PgResult};
use serde::{Deserialize, Serialize};

/// The bootstrap superuser's OID, as in PostgreSQL.
pub const BOOTSTRAP_SUPERUSER_OID: u32 = 10;
pub const BOOTSTRAP_SUPERUSER: &str = "postgres";

/// The owner of a relation stored before relations had owners: the bootstrap superuser
/// (a serde default, so that older data directories still load).
pub fn bootstrap_owner() -> u32 {
    BOOTSTRAP_SUPERUSER_OID
}

/// A role as the catalog stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoleDef {
    pub oid: u32,
    pub name: String,
    pub superuser: bool,
    pub login: bool,
    /// A SCRAM-SHA-256 verifier or an md5 hash (`auth::password`); None: no password,
    /// so password authentication always fails.
    pub password: Option<String>,
    /// Connections the role may have at once; -1: no limit.
    pub connection_limit: i32,
    /// When its password stops being valid (timestamptz microseconds); None: never.
    pub valid_until: Option<i64>,
    /// ALTER ROLE … SET: (setting's canonical name, value as written), applied at the
    /// start of the role's sessions (pg_roles.rolconfig).
    #[serde(default)]
    pub config: Vec<(String, String)>,
    /// INHERIT: the role has the privileges of the roles it is a member of.
    #[serde(default = "inherits")]
    pub inherit: bool,
    /// The roles it is a member of (GRANT role TO this one; pg_auth_members).
    #[serde(default)]
    pub member_of: Vec<Membership>,
}

fn inherits() -> bool {
    true
}

impl RoleDef {
    /// A new role with no attributes, as CREATE ROLE without options makes it.
    pub fn new(oid: u32, name: &str) -> RoleDef {
        RoleDef {
            oid,
            name: name.to_string(),
            superuser: false,
            login: false,
            password: None,
            connection_limit: -1,
            valid_until: None,
            config: Vec::new(),
            inherit: true,
            member_of: Vec::new(),
        }
    }
}

/// Membership in a role, as pg_auth_members records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Membership {
    pub role: u32,
    /// WITH ADMIN OPTION: the member may grant the role to others.
    pub admin: bool,
    pub grantor: u32,
}

/// GRANT role [, …] TO role [, …] [WITH ADMIN OPTION] [GRANTED BY role], or REVOKE
/// [ADMIN OPTION FOR] role [, …] FROM role [, …] [GRANTED BY role] [CASCADE | RESTRICT].
#[derive(Debug, Clone, PartialEq)]
pub struct GrantRole {
    pub grant: bool,
    pub roles: Vec<String>,
    /// As written: `current_user`, `current_role` and `session_user` included.
    pub members: Vec<String>,
    /// WITH ADMIN OPTION, or REVOKE ADMIN OPTION FOR.
    pub admin_option: bool,
    pub granted_by: Option<String>,
}

/// The options of CREATE/ALTER ROLE; None: not given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoleOptions {
    pub superuser: Option<bool>,
    pub login: Option<bool>,
    /// Some(None): PASSWORD NULL.
    pub password: Option<Option<String>>,
    pub connection_limit: Option<i32>,
    /// VALID UNTIL's literal, read as a timestamptz in the session's time zone.
    pub valid_until: Option<String>,
    pub inherit: Option<bool>,
    /// CREATE ROLE's IN ROLE: roles the new one becomes a member of.
    pub in_roles: Vec<String>,
    /// CREATE ROLE's ROLE: roles that become members of the new one.
    pub members: Vec<String>,
    /// CREATE ROLE's ADMIN: members with the admin option.
    pub admins: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateRole {
    pub name: String,
    pub options: RoleOptions,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AlterRole {
    Options { name: String, options: RoleOptions },
    Rename { name: String, new_name: String },
    Setting { name: String, setting: RoleSetting },
}

/// ALTER ROLE … SET / RESET.
#[derive(Debug, Clone, PartialEq)]
pub enum RoleSetting {
    /// The value flattened as SET's: list items joined with ", ", quotes removed.
    Set {
        name: String,
        value: String,
    },
    Reset(String),
    ResetAll,
}

/// CREATE/ALTER/DROP ROLE and USER; None for any other statement.
pub fn parse_statement(text: &str) -> PgResult<Option<Statement>> {
    // Other statements are not tokenized here (their string literals are not ours).
    let mut words = text.split_whitespace().map(str::to_ascii_lowercase);
    let (verb, noun) = (words.next(), words.next());
    if !matches!(verb.as_deref(), Some("create" | "alter" | "drop"))
        || !matches!(noun.as_deref(), Some("role" | "user"))
    {
        return Ok(None);
    }
    let mut t = Tokens::new(text)?;
    let verb = t.word();
    let noun = t.word();
    if !matches!(noun.as_deref(), Some("role" | "user")) {
        return Ok(None);
    }
    let statement = match verb.as_deref() {
        Some("create") => {
            let name = t.identifier()?;
            let mut options = options(&mut t, true)?;
            // CREATE USER is CREATE ROLE … LOGIN.
            if noun.as_deref() == Some("user") && options.login.is_none() {
                options.login = Some(true);
            }
            Statement::CreateRole(CreateRole { name, options })
        }
        Some("alter") => {
            let name = t.identifier()?;
            if t.keywords(&["rename", "to"]) {
                let new_name = t.identifier()?;
                t.end()?;
                Statement::AlterRole(AlterRole::Rename { name, new_name })
            } else if t.keywords(&["in", "database"]) {
                return Err(PgError::unsupported("ALTER ROLE … IN DATABASE"));
            } else if matches!(t.peek_word().as_deref(), Some("set" | "reset")) {
                let setting = role_setting(&mut t)?;
                t.end()?;
                Statement::AlterRole(AlterRole::Setting { name, setting })
            } else {
                let options = options(&mut t, false)?;
                Statement::AlterRole(AlterRole::Options { name, options })
            }
        }
        Some("drop") => {
            let if_exists = t.keywords(&["if", "exists"]);
            let mut names = vec![t.identifier()?];
            while t.punct(',') {
                names.push(t.identifier()?);
            }
            t.end()?;
            Statement::DropRole { names, if_exists }
        }
        _ => return Ok(None),
    };
    Ok(Some(statement))
}

/// GRANT and REVOKE of role membership (`GrantRole`); None for those of privileges, which
/// name what they are on (`… ON …`).
pub fn parse_membership(text: &str) -> PgResult<Option<Statement>> {
    let mut t = Tokens::new(text)?;
    if t.tokens.iter().any(|tok| *tok == Token::Word("on".into())) {
        return Ok(None);
    }
    let grant = match t.word().as_deref() {
        Some("grant") => true,
        Some("revoke") => false,
        _ => return Ok(None),
    };
    let mut admin_option = !grant && t.keywords(&["admin", "option", "for"]);
    let roles = role_names(&mut t)?;
    if !t.keywords(&[if grant { "to" } else { "from" }]) {
        return Err(t.unexpected());
    }
    let members = role_names(&mut t)?;
    if grant && t.keywords(&["with", "admin", "option"]) {
        admin_option = true;
    }
    let granted_by = match t.keywords(&["granted", "by"]) {
        true => Some(t.identifier()?),
        false => None,
    };
    // CASCADE would also revoke what the member granted with the admin option; members
    // here record no such dependency, so both mean the same.
    if !grant && !t.keywords(&["cascade"]) {
        t.keywords(&["restrict"]);
    }
    t.end()?;
    Ok(Some(Statement::GrantRole(GrantRole {
        grant,
        roles,
        members,
        admin_option,
        granted_by,
    })))
}

fn role_names(t: &mut Tokens) -> PgResult<Vec<String>> {
    let mut names = vec![t.identifier()?];
    while t.punct(',') {
        names.push(t.identifier()?);
    }
    Ok(names)
}

/// `SET name { = | TO } { value [, …] | DEFAULT }`, `RESET name`, `RESET ALL`.
fn role_setting(t: &mut Tokens) -> PgResult<RoleSetting> {
    if t.keywords(&["reset"]) {
        if t.keywords(&["all"]) {
            return Ok(RoleSetting::ResetAll);
        }
        return Ok(RoleSetting::Reset(t.identifier()?));
    }
    t.keywords(&["set"]);
    let name = t.identifier()?;
    if !t.punct('=') && !t.keywords(&["to"]) {
        return Err(t.unexpected());
    }
    if t.keywords(&["default"]) {
        return Ok(RoleSetting::Reset(name));
    }
    let mut items = Vec::new();
    loop {
        match t.tokens.get(t.at) {
            Some(Token::Word(v) | Token::Quoted(v) | Token::String(v) | Token::Number(v)) => {
                items.push(v.clone());
                t.at += 1;
            }
            _ => return Err(t.unexpected()),
        }
        if !t.punct(',') {
            break;
        }
    }
    Ok(RoleSetting::Set {
        name,
        value: items.join(", "),
    })
}

fn redundant() -> PgError {
    PgError::new(codes::SYNTAX_ERROR, "conflicting or redundant options")
}

fn set<T>(slot: &mut Option<T>, value: T) -> PgResult<()> {
    if slot.is_some() {
        return Err(redundant());
    }
    *slot = Some(value);
    Ok(())
}

/// `[WITH] option …` to the end of the statement; the memberships only when `creating`.
fn options(t: &mut Tokens, creating: bool) -> PgResult<RoleOptions> {
    let mut o = RoleOptions::default();
    // INHERIT, [NO]CREATEDB, … as given (`IMPLIED` order; Some(true): the granting
    // form): nothing is stored, as they follow from SUPERUSER here.
    let mut implied = [None; IMPLIED.len()];
    t.keywords(&["with"]);
    while let Some(word) = t.word() {
        match word.as_str() {
            "superuser" => set(&mut o.superuser, true)?,
            "nosuperuser" => set(&mut o.superuser, false)?,
            "login" => set(&mut o.login, true)?,
            "nologin" => set(&mut o.login, false)?,
            "encrypted" if t.peek_word().as_deref() == Some("password") => {}
            "unencrypted" => {
                return Err(PgError::new(
                    codes::FEATURE_NOT_SUPPORTED,
                    "UNENCRYPTED PASSWORD is no longer supported",
                )
                .with_hint("Remove UNENCRYPTED to store the password in encrypted form instead."))
            }
            "password" => {
                let password = if t.keywords(&["null"]) {
                    None
                } else {
                    Some(t.string()?)
                };
                set(&mut o.password, password)?
            }
            "connection" if t.keywords(&["limit"]) => {
                let limit = t.number()?;
                let limit = i32::try_from(limit)
                    .ok()
                    .filter(|l| *l >= -1)
                    .ok_or_else(|| {
                        PgError::new(
                            codes::INVALID_PARAMETER_VALUE,
                            format!("invalid connection limit: {limit}"),
                        )
                    })?;
                set(&mut o.connection_limit, limit)?
            }
            "valid" if t.keywords(&["until"]) => set(&mut o.valid_until, t.string()?)?,
            "inherit" => set(&mut o.inherit, true)?,
            "noinherit" => set(&mut o.inherit, false)?,
            // What every role is here (pg_roles shows them so, and pg_dumpall writes them).
            "nocreatedb" | "nocreaterole" | "noreplication" | "nobypassrls" => {
                set(&mut implied[implied_slot(&word)], false)?
            }
            // What a superuser holds anyway (pg_roles shows them for superusers alone).
            "createdb" | "createrole" | "replication" | "bypassrls" => {
                set(&mut implied[implied_slot(&word)], true)?
            }
            // Memberships are given at creation only (GRANT otherwise).
            "in" if creating && (t.keywords(&["role"]) || t.keywords(&["group"])) => {
                o.in_roles.extend(role_names(t)?)
            }
            "role" | "user" if creating => o.members.extend(role_names(t)?),
            "admin" if creating => o.admins.extend(role_names(t)?),
            "sysid" => return Err(PgError::unsupported("role option SYSID")),
            _ => {
                t.at -= 1;
                return Err(t.unexpected());
            }
        }
    }
    t.end()?;
    if o.superuser != Some(true) {
        if let Some(i) = implied.iter().position(|&v| v == Some(true)) {
            return Err(PgError::unsupported(format!(
                "role option {} without SUPERUSER (Meridian gives it to superusers alone)",
                IMPLIED[i].to_ascii_uppercase()
            )));
        }
    }
    Ok(o)
}

/// The attributes a role has here by being a superuser or not: `NOCREATEDB` (…) are
/// accepted for any role, `CREATEDB` (…) only beside `SUPERUSER`.
const IMPLIED: [&str; 4] = ["createdb", "createrole", "replication", "bypassrls"];

/// The index in `IMPLIED` of `word`, one of them with or without NO.
fn implied_slot(word: &str) -> usize {
    let base = word.strip_prefix("no").unwrap_or(word);
    IMPLIED.iter().position(|a| *a == base).unwrap_or(0)
}

/// Why `name` cannot be given to a new role (or a renamed one): PostgreSQL reserves
/// `public`, `none` and the `pg_` prefix (42939).
pub fn check_new_name(name: &str) -> PgResult<()> {
    if name == "public" || name == "none" {
        return Err(PgError::new(
            codes::RESERVED_NAME,
            format!("role name \"{name}\" is reserved"),
        ));
    }
    if name.starts_with("pg_") {
        return Err(PgError::new(
            codes::RESERVED_NAME,
            format!("role name \"{name}\" is reserved"),
        )
        .with_detail("Role names starting with \"pg_\" are reserved."));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> PgResult<Statement> {
        parse_statement(text).map(|s| s.expect("a role statement"))
    }

    #[test]
    fn create_user_logs_in_and_create_role_does_not() {
        let Statement::CreateRole(user) = parse("CREATE USER alice PASSWORD 'it''s'").unwrap()
        else {
            panic!()
        };
        assert_eq!(user.name, "alice");
        assert_eq!(user.options.login, Some(true));
        assert_eq!(user.options.password, Some(Some("it's".into())));
        let Statement::CreateRole(role) = parse(
            "create role \"Bob\" with nologin superuser connection limit 3 valid until '2030-01-01' password null",
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(role.name, "Bob");
        assert_eq!(
            role.options,
            RoleOptions {
                superuser: Some(true),
                login: Some(false),
                password: Some(None),
                connection_limit: Some(3),
                valid_until: Some("2030-01-01".into()),
                ..RoleOptions::default()
            }
        );
    }

    #[test]
    fn membership_grants_and_revokes() {
        let parsed = |text: &str| match parse_membership(text).unwrap() {
            Some(Statement::GrantRole(g)) => g,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            parsed("GRANT a, \"B\" TO c WITH ADMIN OPTION GRANTED BY postgres;"),
            GrantRole {
                grant: true,
                roles: vec!["a".into(), "B".into()],
                members: vec!["c".into()],
                admin_option: true,
                granted_by: Some("postgres".into()),
            }
        );
        assert_eq!(
            parsed("revoke admin option for a from b, current_user cascade"),
            GrantRole {
                grant: false,
                roles: vec!["a".into()],
                members: vec!["b".into(), "current_user".into()],
                admin_option: true,
                granted_by: None,
            }
        );
        assert!(parse_membership("GRANT SELECT ON t TO a")
            .unwrap()
            .is_none());
        assert!(parse_membership("GRANT a TO").is_err());
        assert!(parse_membership("GRANT a TO b WITH GRANT OPTION").is_err());
    }

    #[test]
    fn alter_and_drop() {
        let Statement::AlterRole(rename) = parse("ALTER ROLE a RENAME TO b").unwrap() else {
            panic!()
        };
        assert_eq!(
            rename,
            AlterRole::Rename {
                name: "a".into(),
                new_name: "b".into()
            }
        );
        assert!(matches!(
            parse("ALTER USER a WITH ENCRYPTED PASSWORD 'x' NOSUPERUSER").unwrap(),
            Statement::AlterRole(AlterRole::Options { .. })
        ));
        let Statement::DropRole { names, if_exists } = parse("DROP USER IF EXISTS a, b;").unwrap()
        else {
            panic!()
        };
        assert_eq!((names, if_exists), (vec!["a".into(), "b".into()], true));
        assert!(parse_statement("DROP TABLE a").unwrap().is_none());
    }

    #[test]
    fn role_settings() {
        let setting = |text: &str| match parse(text).unwrap() {
            Statement::AlterRole(AlterRole::Setting { setting, .. }) => setting,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            setting("ALTER ROLE a SET statement_timeout = '1s'"),
            RoleSetting::Set {
                name: "statement_timeout".into(),
                value: "1s".into()
            }
        );
        assert_eq!(
            setting("alter user a set search_path to app, \"Public\""),
            RoleSetting::Set {
                name: "search_path".into(),
                value: "app, Public".into()
            }
        );
        assert_eq!(
            setting("ALTER ROLE a SET work_mem TO DEFAULT"),
            RoleSetting::Reset("work_mem".into())
        );
        assert_eq!(setting("ALTER ROLE a RESET ALL"), RoleSetting::ResetAll);
        assert_eq!(
            parse("ALTER ROLE a SET work_mem").unwrap_err().code,
            codes::SYNTAX_ERROR
        );
        assert_eq!(
            parse("ALTER ROLE a IN DATABASE d SET work_mem = 1")
                .unwrap_err()
                .code,
            codes::FEATURE_NOT_SUPPORTED
        );
    }

    #[test]
    fn bad_options_get_postgresql_s_errors() {
        let code = |text: &str| parse(text).unwrap_err().code;
        assert_eq!(code("CREATE ROLE a LOGIN NOLOGIN"), codes::SYNTAX_ERROR);
        assert_eq!(
            code("CREATE ROLE a CONNECTION LIMIT -2"),
            codes::INVALID_PARAMETER_VALUE
        );
        assert_eq!(code("CREATE ROLE a PASSWORD"), codes::SYNTAX_ERROR);
        assert_eq!(code("CREATE ROLE a FROBNICATE"), codes::SYNTAX_ERROR);
        assert_eq!(code("CREATE ROLE a CREATEDB"), codes::FEATURE_NOT_SUPPORTED);
        assert_eq!(code("CREATE ROLE a SYSID 5"), codes::FEATURE_NOT_SUPPORTED);
        assert_eq!(code("ALTER ROLE a LOGIN IN ROLE b"), codes::SYNTAX_ERROR);
        let Statement::CreateRole(create) =
            parse("CREATE ROLE a IN ROLE b, c IN GROUP d ROLE e ADMIN f, \"G\"").unwrap()
        else {
            panic!()
        };
        let o = create.options;
        assert_eq!(
            (o.in_roles, o.members, o.admins),
            (
                vec!["b".into(), "c".into(), "d".into()],
                vec!["e".into()],
                vec!["f".into(), "G".into()]
            )
        );
        assert_eq!(code("CREATE ROLE a NOINHERIT INHERIT"), codes::SYNTAX_ERROR);
        assert_eq!(code("CREATE ROLE a INHERIT INHERIT"), codes::SYNTAX_ERROR);
        assert!(parse("CREATE ROLE a SUPERUSER CREATEDB CREATEROLE REPLICATION BYPASSRLS").is_ok());
        assert!(parse(
            "ALTER ROLE a WITH NOSUPERUSER INHERIT NOCREATEROLE NOCREATEDB LOGIN NOREPLICATION NOBYPASSRLS"
        )
        .is_ok());
        assert_eq!(
            check_new_name("pg_x").unwrap_err().code,
            codes::RESERVED_NAME
        );
        assert_eq!(
            check_new_name("public").unwrap_err().code,
            codes::RESERVED_NAME
        );
    }
}
