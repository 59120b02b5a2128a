//! The system catalogs (pg_class, pg_type, …) computed from the live catalog, and the
//! functions that read session or catalog state (`current_setting`, `format_type`, …).
//!
//! OIDs of built-in objects are PostgreSQL 15's, so that clients which hard-code them
//! (psql, drivers' type caches) see what they expect.

use crate::exec::SessionView;
use crate::ownership::Who;
use crate::predefined_roles::{PG_READ_ALL_STATS, PG_SIGNAL_BACKEND};
use crate::settings::SERVER_VERSION;
use crate::system_indexes::{find, indexes_of};
use distribution::Datanodes;
use pgerror::{codes, PgError, PgResult};
use sql::acl::ObjectKind;
use sql::catalog::{
    Distribution, BUCKETS, INFORMATION_SCHEMA_OID, PG_CATALOG_NAMESPACE_OID,
    PG_TOAST_NAMESPACE_OID, PUBLIC_NAMESPACE_OID, SUPERUSER_OID,
};
use sql::functions::ScalarFunc;
use sql::plan::SystemTable;
use sql::role::{RoleDef, BOOTSTRAP_SUPERUSER_OID};
use sql::system_tables::{system_columns, system_table_oid};
use sql::TableDef;
use types::{DataType, Value};

const HEAP_AM_OID: u32 = 2;
const BTREE_AM_OID: u32 = 403;
pub(crate) const POSTGRES_DB_OID: u32 = 5;
pub(crate) const TEMPLATE1_DB_OID: u32 = 1;
pub(crate) const TEMPLATE0_DB_OID: u32 = 4;
/// The built-in role that owns schema public in PostgreSQL 15.
const PG_DATABASE_OWNER_OID: u32 = sql::acl::PG_DATABASE_OWNER;

/// A role as pg_roles, pg_user or pg_authid shows it. The bootstrap superuser has
/// every attribute, as PostgreSQL's; Meridian's roles have none of those it cannot set.
fn role_row(table: SystemTable, r: &RoleDef) -> Vec<Value> {
    let all_attributes = Value::Bool(r.oid == BOOTSTRAP_SUPERUSER_OID);
    let valid_until = r.valid_until.map_or(Value::Null, Value::TimestampTz);
    match table {
        SystemTable::PgAuthid => vec![
            oid(r.oid),
            text(&r.name),
            Value::Bool(r.superuser),
            Value::Bool(r.inherit),
            all_attributes.clone(),
            all_attributes.clone(),
            Value::Bool(r.login),
            all_attributes.clone(),
            all_attributes,
            Value::Int4(r.connection_limit),
            r.password.as_deref().map_or(Value::Null, text),
            valid_until,
        ],
        SystemTable::PgUser => vec![
            text(&r.name),
            oid(r.oid),
            all_attributes.clone(),
            Value::Bool(r.superuser),
            all_attributes.clone(),
            all_attributes,
            text("********"),
            valid_until,
            role_config(r),
        ],
        _ => vec![
            text(&r.name),
            Value::Bool(r.superuser),
            Value::Bool(r.inherit),
            all_attributes.clone(),
            all_attributes.clone(),
            Value::Bool(r.login),
            all_attributes.clone(),
            Value::Int4(r.connection_limit),
            text("********"),
            valid_until,
            all_attributes,
            role_config(r),
            oid(r.oid),
        ],
    }
}

/// rolconfig: the role's settings as `name=value`, NULL if none.
fn role_config(r: &RoleDef) -> Value {
    if r.config.is_empty() {
        return Value::Null;
    }
    Value::Array(
        r.config
            .iter()
            .map(|(name, value)| text(&format!("{name}={value}")))
            .collect(),
    )
}

fn is_superuser(session: &SessionView, user: &str) -> bool {
    crate::role_ddl::find_in(session.catalog, session.bootstrap_role, user)
        .is_some_and(|r| r.superuser)
}

/// The session's current role, with the roles whose privileges it has.
fn current_role(session: &SessionView) -> Who {
    let role = crate::role_ddl::find_in(session.catalog, session.bootstrap_role, session.user);
    Who::of_role(session.catalog, role.as_deref())
}

/// One row of pg_description.
struct Description {
    objoid: u32,
    classoid: u32,
    objsubid: i32,
    description: String,
}

/// pg_description: schema public's built-in comment, then those COMMENT ON gave user
/// tables, their columns and views (kept in their definitions), in key order.
fn descriptions(session: &SessionView) -> Vec<Description> {
    let pg_class = system_table_oid(SystemTable::PgClass);
    let mut all = vec![Description {
        objoid: PUBLIC_NAMESPACE_OID,
        classoid: system_table_oid(SystemTable::PgNamespace),
        objsubid: 0,
        description: "standard public schema".into(),
    }];
    let on_relation = |objoid, objsubid, comment: &Option<String>| {
        comment.as_ref().map(|c| Description {
            objoid,
            classoid: pg_class,
            objsubid,
            description: c.clone(),
        })
    };
    for t in session.catalog.tables() {
        all.extend(on_relation(t.oid, 0, &t.comment));
        for (i, c) in t.columns.iter().enumerate() {
            all.extend(on_relation(t.oid, i as i32 + 1, &c.comment));
        }
    }
    for v in session.catalog.views() {
        all.extend(on_relation(v.oid, 0, &v.comment));
    }
    all.sort_by_key(|d| (d.classoid, d.objoid, d.objsubid));
    all
}

/// The comment on object `objoid` (sub-object `objsubid`) of catalog `classoid` (None:
/// any), as obj_description and col_description give it: read from the object's
/// definition (psql calls these once per listed table and column).
fn description_of(
    session: &SessionView,
    objoid: u32,
    classoid: Option<u32>,
    objsubid: i32,
) -> Value {
    use sql::catalog::Catalog;
    let in_class = |t: SystemTable| classoid.is_none_or(|c| c == system_table_oid(t));
    let comment = if in_class(SystemTable::PgClass) {
        match (session.catalog.table_by_oid(objoid), objsubid) {
            (Some(t), 0) => t.comment.clone(),
            (Some(t), n) => usize::try_from(n - 1)
                .ok()
                .and_then(|i| t.columns.get(i))
                .and_then(|c| c.comment.clone()),
            (None, 0) => session
                .catalog
                .view_by_oid(objoid)
                .and_then(|v| v.comment.clone()),
            (None, _) => None,
        }
    } else {
        None
    };
    let public =
        objoid == PUBLIC_NAMESPACE_OID && objsubid == 0 && in_class(SystemTable::PgNamespace);
    match comment {
        Some(c) => Value::Text(c),
        None if public => text("standard public schema"),
        None => Value::Null,
    }
}

/// pg_stat_activity: this coordinator's sessions. As PostgreSQL's, a session of a role
/// whose privileges the reader lacks shows only who and where, its query
/// `<insufficient privilege>`, unless the reader has pg_read_all_stats'.
fn activity_rows(session: &SessionView) -> Vec<Vec<Value>> {
    let me = current_role(session);
    let sees_all = me.has_privileges_of(PG_READ_ALL_STATS);
    let time = |t: Option<i64>| t.map_or(Value::Null, Value::TimestampTz);
    let null_text = |s: Option<&str>| s.map_or(Value::Null, text);
    session
        .sessions
        .all()
        .iter()
        .map(|a| {
            let r = a.row();
            let role = crate::role_ddl::find_in(session.catalog, session.bootstrap_role, &r.user);
            let usesysid = role.as_ref().map_or(Value::Null, |role| oid(role.oid));
            let sees = sees_all || role.is_some_and(|role| me.has_privileges_of(role.oid));
            let mut row = vec![
                oid(POSTGRES_DB_OID),
                text(&r.database),
                Value::Int4(r.pid),
                Value::Null,
                usesysid,
                text(&r.user),
                text(&r.application_name),
            ];
            if sees {
                row.extend([
                    r.client.map_or(Value::Null, |c| text(&c.ip().to_string())),
                    Value::Null,
                    // -1 for the Unix-domain socket, as PostgreSQL.
                    Value::Int4(r.client.map_or(-1, |c| i32::from(c.port()))),
                    Value::TimestampTz(r.backend_start),
                    time(r.xact_start),
                    time(r.query_start),
                    time(r.state_change),
                    null_text(r.wait_event.map(|w| w.0)),
                    null_text(r.wait_event.map(|w| w.1)),
                    text(r.state.name()),
                    Value::Null,
                    text(&r.query),
                ]);
            } else {
                row.extend(std::iter::repeat_n(Value::Null, 11));
                row.push(text("<insufficient privilege>"));
            }
            row.push(text("client backend"));
            row
        })
        .collect()
}

/// pg_stat_statements: this coordinator's entries. As PostgreSQL's, another role's
/// entry shows its statistics but not its queryid and text, unless the reader has
/// pg_read_all_stats' privileges.
fn statement_rows(session: &SessionView) -> Vec<Vec<Value>> {
    let sees_all = current_role(session).has_privileges_of(PG_READ_ALL_STATS);
    let own = crate::role_ddl::find_in(session.catalog, session.bootstrap_role, session.user)
        .map(|r| r.oid);
    let int8 = |n: i64| Value::Int8(n);
    let zeros = |n: usize, v: Value| std::iter::repeat_n(v, n);
    session
        .statement_stats
        .entries()
        .iter()
        .map(|e| {
            let c = e.counters();
            let mut row = vec![
                oid(e.key.userid),
                oid(e.key.dbid),
                Value::Bool(e.key.toplevel),
            ];
            if sees_all || own == Some(e.key.userid) {
                row.extend([int8(e.key.queryid), text(&e.query)]);
            } else {
                row.extend([Value::Null, text("<insufficient privilege>")]);
            }
            // Plans and their times: pg_stat_statements.track_planning is off.
            row.push(int8(0));
            row.extend(zeros(5, Value::Float8(0.0)));
            row.extend([
                int8(c.calls),
                Value::Float8(c.total_ms),
                Value::Float8(c.min_ms),
                Value::Float8(c.max_ms),
                Value::Float8(c.mean_ms),
                Value::Float8(c.stddev_ms()),
                int8(c.rows),
            ]);
            // Block, I/O timing and WAL counters have no equivalent here; JIT is off.
            row.extend(zeros(10, int8(0)));
            row.extend(zeros(4, Value::Float8(0.0)));
            row.extend([int8(0), int8(0), Value::Numeric(0i64.into())]);
            for _ in 0..4 {
                row.extend([int8(0), Value::Float8(0.0)]);
            }
            row
        })
        .collect()
}

/// pg_stat_statements_reset([userid[, dbid[, queryid]]]): 0 or NULL matches any. As in
/// PostgreSQL, only superusers may call it (the extension grants it to no one else).
fn reset_statement_stats(session: &SessionView, args: &[Value]) -> PgResult<Value> {
    if !is_superuser(session, session.user) {
        return Err(PgError::new(
            codes::INSUFFICIENT_PRIVILEGE,
            "permission denied for function pg_stat_statements_reset",
        ));
    }
    let arg = |i: usize| args.get(i).and_then(Value::as_i64).unwrap_or(0);
    session
        .statement_stats
        .reset(arg(0) as u32, arg(1) as u32, arg(2));
    Ok(text(""))
}

/// pg_cancel_backend(pid) and pg_terminate_backend(pid[, timeout]) with PostgreSQL 15's
/// checks: a superuser may signal any session, others only their own role's and no
/// superuser's (Meridian has no pg_signal_backend membership). The timeout is not waited
/// for: a terminated session ends at its next step.
fn signal_backend(session: &SessionView, terminate: bool, args: &[Value]) -> PgResult<Value> {
    let pid = args.first().and_then(Value::as_i64).unwrap_or(0) as i32;
    if terminate && args.get(1).and_then(Value::as_i64).is_some_and(|t| t < 0) {
        return Err(PgError::new(
            codes::NUMERIC_VALUE_OUT_OF_RANGE,
            "\"timeout\" must not be negative",
        ));
    }
    let Some(target) = session.sessions.get(pid) else {
        session.notices.lock().push(PgError::new(
            codes::WARNING,
            format!("PID {pid} is not a PostgreSQL backend process"),
        ));
        return Ok(Value::Bool(false));
    };
    let caller_superuser = is_superuser(session, session.user);
    let target_user = &target.identity.user;
    if is_superuser(session, target_user) && !caller_superuser {
        return Err(PgError::new(
            codes::INSUFFICIENT_PRIVILEGE,
            if terminate {
                "must be a superuser to terminate superuser process"
            } else {
                "must be a superuser to cancel superuser query"
            },
        ));
    }
    let me = current_role(session);
    let target_role =
        crate::role_ddl::find_in(session.catalog, session.bootstrap_role, target_user);
    let allowed = target_role.is_some_and(|r| me.has_privileges_of(r.oid))
        || me.has_privileges_of(PG_SIGNAL_BACKEND);
    if !allowed {
        return Err(PgError::new(
            codes::INSUFFICIENT_PRIVILEGE,
            if terminate {
                "must be a member of the role whose process is being terminated or member of pg_signal_backend"
            } else {
                "must be a member of the role whose query is being canceled or member of pg_signal_backend"
            },
        ));
    }
    if terminate {
        Ok(Value::Bool(session.sessions.terminate(pid)))
    } else {
        target.cancel.notify_waiters();
        Ok(Value::Bool(true))
    }
}

fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

fn oid(o: u32) -> Value {
    Value::Oid(o)
}

/// A "char" value; '\0' is the empty string, as PostgreSQL's charout writes it.
fn chr(c: char) -> Value {
    Value::Text(if c == '\0' {
        String::new()
    } else {
        c.to_string()
    })
}

/// The built-in types listed in pg_type (those Meridian implements).
fn builtin_types() -> Vec<DataType> {
    use DataType::*;
    let scalars = vec![
        Bool,
        Bytea,
        Char,
        Name,
        Int8,
        Int2,
        Int2Vector,
        Int4,
        RegProc,
        Text,
        Oid,
        OidVector,
        Float4,
        Float8,
        Bpchar { len: None },
        Varchar { max_len: None },
        Date,
        DataType::TIME,
        DataType::TIMESTAMP,
        DataType::TIMESTAMPTZ,
        DataType::INTERVAL,
        Numeric {
            precision_scale: None,
        },
        RegClass,
        RegType,
        RegNamespace,
        PgNodeTree,
        Uuid,
        Json,
        Jsonb,
        Unknown,
    ];
    let arrays: Vec<DataType> = [
        Bool,
        Char,
        Name,
        Int2,
        Int4,
        Text,
        Varchar { max_len: None },
        Int8,
        Float4,
        Float8,
        Oid,
        Bpchar { len: None },
        Date,
        DataType::TIMESTAMP,
        DataType::TIMESTAMPTZ,
        Numeric {
            precision_scale: None,
        },
        Uuid,
        Json,
        Jsonb,
    ]
    .into_iter()
    .map(|t| Array(Box::new(t)))
    .collect();
    scalars.into_iter().chain(arrays).collect()
}

/// Rows of a system table, in its column order: those of the datanodes' state
/// (pg_prepared_xacts) from them, the others from the session and catalog (`rows`).
/// Rows of a scan of a system table: its columns, then `tableoid` where it has one
/// (`sql::system_tables::scan_columns`).
pub async fn read(
    table: SystemTable,
    session: &SessionView<'_>,
    datanodes: &Datanodes,
) -> PgResult<Vec<Vec<Value>>> {
    let mut rows = columns_of(table, session, datanodes).await?;
    if sql::system_tables::has_tableoid(table) {
        let oid = Value::Oid(sql::system_tables::system_table_oid(table));
        for row in &mut rows {
            row.push(oid.clone());
        }
    }
    Ok(rows)
}

async fn columns_of(
    table: SystemTable,
    session: &SessionView<'_>,
    datanodes: &Datanodes,
) -> PgResult<Vec<Vec<Value>>> {
    match table {
        SystemTable::PgPreparedXacts => Ok(datanodes
            .prepared_xacts()
            .await?
            .into_iter()
            .map(|x| {
                vec![
                    Value::Int8(x.start_ts as i64),
                    text(&x.gid),
                    Value::TimestampTz(x.prepared_at),
                    text(&x.owner),
                    text(&x.database),
                ]
            })
            .collect()),
        SystemTable::PgLocks => crate::lock_view::rows(session, datanodes).await,
        _ => rows(table, session),
    }
}

/// Rows of a system table, in its column order (see `sql::binder::system_columns`).
pub fn rows(table: SystemTable, session: &SessionView) -> PgResult<Vec<Vec<Value>>> {
    use sql::catalog::Catalog;
    use SystemTable::*;
    let tables = session.catalog.tables();
    let width = system_columns(table).len();
    let mut rows: Vec<Vec<Value>> = match table {
        PgNamespace => vec![
            vec![
                oid(PG_CATALOG_NAMESPACE_OID),
                text("pg_catalog"),
                oid(SUPERUSER_OID),
                Value::Array(vec![text("postgres=UC/postgres"), text("=U/postgres")]),
            ],
            vec![
                oid(PUBLIC_NAMESPACE_OID),
                text("public"),
                oid(PG_DATABASE_OWNER_OID),
                acl_array(session, &session.catalog.public_schema().effective_acl()),
            ],
            vec![
                oid(INFORMATION_SCHEMA_OID),
                text("information_schema"),
                oid(SUPERUSER_OID),
                Value::Array(vec![text("postgres=UC/postgres"), text("=U/postgres")]),
            ],
            vec![
                oid(PG_TOAST_NAMESPACE_OID),
                text("pg_toast"),
                oid(SUPERUSER_OID),
                Value::Null,
            ],
        ],
        // The schemas initdb creates, with their privileges at that time: pg_dump dumps
        // a GRANT or REVOKE only for what changed since.
        PgInitPrivs => rows(PgNamespace, session)?
            .into_iter()
            .filter(|r| {
                matches!(r[0], Value::Oid(o) if o == PG_CATALOG_NAMESPACE_OID || o == PUBLIC_NAMESPACE_OID)
            })
            .map(|r| {
                let acl = match r[0] {
                    Value::Oid(PUBLIC_NAMESPACE_OID) => {
                        let initial = sql::acl::effective(&None, PG_DATABASE_OWNER_OID, ObjectKind::Schema);
                        acl_array(session, &initial)
                    }
                    _ => r[3].clone(),
                };
                vec![r[0].clone(), oid(2615), Value::Int4(0), chr('i'), acl]
            })
            .collect(),
        PgClass => {
            let mut out = Vec::new();
            for t in &tables {
                let indexes = indexes_of(t);
                out.push(owned_by(
                    session,
                    pg_class_row(
                        t.oid,
                        &t.name,
                        'r',
                        t.columns.len(),
                        !indexes.is_empty(),
                        HEAP_AM_OID,
                        t.fillfactor,
                    ),
                    t.owner,
                    &t.acl,
                ));
                if let (Some(row), Some(relchecks)) = (out.last_mut(), column_of(PgClass, "relchecks")) {
                    row[relchecks] = Value::Int2(t.checks.len() as i16);
                }
                if let (Some(row), Some(triggers)) =
                    (out.last_mut(), column_of(PgClass, "relhastriggers"))
                {
                    let has = crate::system_foreign_keys::has_triggers(&tables, t);
                    row[triggers] = Value::Bool(has);
                }
                for ix in &indexes {
                    let n = ix.columns.len();
                    let row = pg_class_row(ix.oid, ix.name, 'i', n, false, BTREE_AM_OID, None);
                    out.push(owned_by(session, row, t.owner, &None));
                }
            }
            for s in session.catalog.sequences() {
                // A sequence's three columns: last_value, log_cnt, is_called.
                let row = pg_class_row(s.oid, &s.name, 'S', 3, false, 0, None);
                out.push(owned_by(session, row, s.owner, &s.acl));
            }
            for v in session.catalog.views() {
                let row = pg_class_row(v.oid, &v.name, 'v', v.columns.len(), false, 0, None);
                out.push(owned_by(session, row, v.owner, &v.acl));
            }
            out
        }
        PgAttribute => {
            let mut out = Vec::new();
            for t in &tables {
                for (i, c) in t.columns.iter().enumerate() {
                    let identity = session.catalog.identity(t.oid, i);
                    let mut row = pg_attribute_row(
                        t.oid,
                        &c.name,
                        &c.ty.to_type(),
                        i as i16 + 1,
                        c.not_null,
                        c.default.is_some() && identity.is_none(),
                    );
                    if let Some(identity) = identity {
                        row[ATTIDENTITY] = chr(identity.code());
                    }
                    out.push(row);
                }
                for ix in indexes_of(t) {
                    for (i, &(col, ..)) in ix.columns.iter().enumerate() {
                        let c = &t.columns[col];
                        out.push(pg_attribute_row(
                            ix.oid,
                            &c.name,
                            &c.ty.to_type(),
                            i as i16 + 1,
                            false,
                            false,
                        ));
                    }
                }
            }
            for v in session.catalog.views() {
                for (i, c) in v.columns.iter().enumerate() {
                    let ty = c.ty.to_type();
                    out.push(pg_attribute_row(v.oid, &c.name, &ty, i as i16 + 1, false, false));
                }
            }
            out
        }
        PgType => builtin_types()
            .iter()
            .map(pg_type_row)
            .chain(PSEUDO_TYPES.iter().map(pseudo_type_row))
            .chain(session.catalog.enum_types().into_iter().flat_map(|e| {
                let ty = DataType::Enum(e);
                [pg_type_row(&ty), pg_type_row(&DataType::Array(Box::new(ty)))]
            }))
            .collect(),
        PgEnum => (session.catalog.enum_types().iter())
            .flat_map(|e| {
                e.labels.iter().map(|l| {
                    vec![
                        oid(l.oid),
                        oid(e.oid),
                        Value::Float4(l.sort_order),
                        text(&l.label),
                    ]
                })
            })
            .collect(),
        PgIndex => tables
            .iter()
            .flat_map(|t| indexes_of(t))
            .map(|ix| {
                let n = ix.columns.len() as i16;
                let int2s = |values: Vec<i16>| {
                    Value::Array(values.into_iter().map(Value::Int2).collect())
                };
                let oids = |o: u32| Value::Array(ix.columns.iter().map(|_| Value::Oid(o)).collect());
                vec![
                    oid(ix.oid),
                    oid(ix.table.oid),
                    Value::Int2(n),
                    Value::Int2(n),
                    Value::Bool(ix.unique),
                    Value::Bool(false),
                    Value::Bool(ix.primary),
                    Value::Bool(false),
                    Value::Bool(true),
                    Value::Bool(false),
                    Value::Bool(true),
                    Value::Bool(false),
                    Value::Bool(true),
                    Value::Bool(true),
                    Value::Bool(false),
                    int2s(ix.columns.iter().map(|&(c, ..)| c as i16 + 1).collect()),
                    oids(0),
                    oids(1978),
                    int2s(ix.options()),
                    Value::Null,
                    Value::Null,
                ]
            })
            .collect(),
        PgConstraint => tables
            .iter()
            .flat_map(|t| indexes_of(t))
            .filter_map(|ix| {
                Some(vec![
                    oid(ix.constraint_oid?),
                    text(ix.name),
                    oid(PUBLIC_NAMESPACE_OID),
                    chr(if ix.primary { 'p' } else { 'u' }),
                    Value::Bool(false),
                    Value::Bool(false),
                    Value::Bool(true),
                    oid(ix.table.oid),
                    oid(0),
                    oid(ix.oid),
                    oid(0),
                    oid(0),
                    chr(' '),
                    chr(' '),
                    chr(' '),
                    Value::Bool(true),
                    Value::Int4(0),
                    Value::Bool(true),
                    Value::Array(
                        ix.columns
                            .iter()
                            .map(|&(c, ..)| Value::Int2(c as i16 + 1))
                            .collect(),
                    ),
                    Value::Null,
                    Value::Null,
                ])
            })
            .chain(
                tables
                    .iter()
                    .flat_map(|t| crate::system_checks::checks_of(t))
                    .map(|c| check_constraint_row(&c)),
            )
            .chain(
                crate::system_foreign_keys::all(&tables)
                    .iter()
                    .map(foreign_key_row),
            )
            .collect(),
        PgAttrdef => {
            let mut out = Vec::new();
            for t in &tables {
                for (i, c) in t.columns.iter().enumerate() {
                    // An identity column's default is its identity, not an expression.
                    if session.catalog.identity(t.oid, i).is_some() {
                        continue;
                    }
                    if let Some(d) = &c.default {
                        let d = deparse_default(d, &c.ty.to_type());
                        out.push(vec![
                            oid(t.oid * 1000 + i as u32),
                            oid(t.oid),
                            Value::Int2(i as i16 + 1),
                            text(&d),
                        ]);
                    }
                }
            }
            out
        }
        PgDatabase => ["postgres", "template1", "template0"]
            .iter()
            .zip([POSTGRES_DB_OID, TEMPLATE1_DB_OID, TEMPLATE0_DB_OID])
            .map(|(name, o)| {
                let template = *name != "postgres";
                vec![
                    oid(o),
                    text(name),
                    oid(SUPERUSER_OID),
                    Value::Int4(6),
                    chr('c'),
                    Value::Bool(template),
                    Value::Bool(*name != "template0"),
                    Value::Int4(-1),
                    Value::Int8(716),
                    Value::Int8(1),
                    oid(1663),
                    text("C.UTF-8"),
                    text("C.UTF-8"),
                    Value::Null,
                    Value::Null,
                    if template {
                        Value::Array(vec![text("=c/postgres"), text("postgres=CTc/postgres")])
                    } else {
                        Value::Null
                    },
                ]
            })
            .collect(),
        PgAm => vec![
            vec![oid(HEAP_AM_OID), text("heap"), oid(3), chr('t')],
            vec![oid(BTREE_AM_OID), text("btree"), oid(330), chr('i')],
        ],
        PgRoles | PgUser | PgAuthid => {
            if table == PgAuthid
                && !crate::role_ddl::find_in(session.catalog, session.bootstrap_role, session.user)
                    .is_some_and(|r| r.superuser)
            {
                return Err(PgError::new(
                    codes::INSUFFICIENT_PRIVILEGE,
                    "permission denied for table pg_authid",
                ));
            }
            let predefined = crate::predefined_roles::all().iter().cloned();
            crate::role_ddl::all(session.catalog, session.bootstrap_role)
                .into_iter()
                .chain(predefined)
                .filter(|r| table != PgUser || r.login)
                .map(|r| role_row(table, &r))
                .collect()
        }
        PgTablespace => vec![
            vec![
                oid(1663),
                text("pg_default"),
                oid(SUPERUSER_OID),
                Value::Null,
                Value::Null,
            ],
            vec![
                oid(1664),
                text("pg_global"),
                oid(SUPERUSER_OID),
                Value::Null,
                Value::Null,
            ],
        ],
        PgSettings => session
            .settings
            .lock()
            .all()
            .into_iter()
            .map(|(n, v)| {
                vec![
                    text(&n),
                    text(&v),
                    Value::Null,
                    text("Meridian"),
                    Value::Null,
                ]
            })
            .collect(),
        PgStatActivity => activity_rows(session),
        PgStatDatabase => crate::stat_views::database_rows(session),
        PgStatAllTables | PgStatUserTables => crate::stat_views::table_rows(session),
        PgStatAllIndexes | PgStatUserIndexes => crate::stat_views::index_rows(session),
        PgStatStatements => statement_rows(session),
        PgStatStatementsInfo => {
            let info = session.statement_stats.info();
            vec![vec![
                Value::Int8(info.dealloc),
                Value::TimestampTz(info.stats_reset),
            ]]
        }
        PgDescription => descriptions(session)
            .into_iter()
            .map(|d| {
                vec![
                    oid(d.objoid),
                    oid(d.classoid),
                    Value::Int4(d.objsubid),
                    text(&d.description),
                ]
            })
            .collect(),
        MeridianDistribution => tables.iter().map(|t| distribution_row(t)).collect(),
        PgViews => session
            .catalog
            .views()
            .iter()
            .map(|v| {
                vec![
                    text("public"),
                    text(&v.name),
                    text(&role_name(session, v.owner)),
                    text(&view_definition(v)),
                ]
            })
            .collect(),
        PgTables => tables
            .iter()
            .map(|t| {
                vec![
                    text("public"),
                    text(&t.name),
                    text(&role_name(session, t.owner)),
                    Value::Null,
                    Value::Bool(!indexes_of(t).is_empty()),
                    Value::Bool(false),
                    Value::Bool(crate::system_foreign_keys::has_triggers(&tables, t)),
                    Value::Bool(false),
                ]
            })
            .collect(),
        PgIndexes => tables
            .iter()
            .flat_map(|t| indexes_of(t))
            .map(|ix| {
                vec![
                    text("public"),
                    text(&ix.table.name),
                    text(ix.name),
                    Value::Null,
                    text(&ix.definition()),
                ]
            })
            .collect(),
        MeridianNodes => session
            .cluster
            .rows(&session.catalog.registered_nodes())
            .into_iter()
            .map(|(fields, traffic)| {
                let mut row: Vec<Value> = fields.iter().map(|v| text(v)).collect();
                let count = |n: Option<u64>| n.map_or(Value::Null, |n| Value::Int8(n as i64));
                row.push(count(traffic.map(|t| t.pages)));
                row.push(count(traffic.map(|t| t.rows)));
                row
            })
            .collect(),
        PgSequence => session
            .catalog
            .sequences()
            .iter()
            .map(|s| {
                vec![
                    oid(s.oid),
                    oid(s.type_oid),
                    Value::Int8(s.start),
                    Value::Int8(s.increment),
                    Value::Int8(s.max),
                    Value::Int8(s.min),
                    Value::Int8(s.cache),
                    Value::Bool(s.cycle),
                ]
            })
            .collect(),
        // last_value is NULL: the values come from ranges each coordinator reserves
        // (decision 0034), and no one place knows the last one handed out.
        PgSequences => session
            .catalog
            .sequences()
            .iter()
            .map(|s| {
                vec![
                    text("public"),
                    text(&s.name),
                    text(&role_name(session, s.owner)),
                    oid(s.type_oid),
                    Value::Int8(s.start),
                    Value::Int8(s.min),
                    Value::Int8(s.max),
                    Value::Int8(s.increment),
                    Value::Bool(s.cycle),
                    Value::Int8(s.cache),
                    Value::Null,
                ]
            })
            .collect(),
        // An owned sequence depends on its column: automatically ('a', OWNED BY and
        // serial) or internally ('i', identity).
        PgDepend => session
            .catalog
            .sequences()
            .iter()
            .filter_map(|s| {
                let owner = s.owned_by?;
                let pg_class = oid(system_table_oid(PgClass));
                let owned = vec![
                    pg_class.clone(),
                    oid(s.oid),
                    Value::Int4(0),
                    pg_class.clone(),
                    oid(owner.table),
                    Value::Int4(owner.column as i32 + 1),
                    chr(if s.identity.is_some() { 'i' } else { 'a' }),
                ];
                // A serial column's default (pg_attrdef row, oid as there) uses the
                // sequence: pg_dump then sets the default after creating the sequence.
                let has_default = s.identity.is_none()
                    && tables.iter().any(|t| {
                        t.oid == owner.table
                            && t.columns.get(owner.column).is_some_and(|c| c.default.is_some())
                    });
                let default = has_default.then(|| {
                    vec![
                        oid(system_table_oid(PgAttrdef)),
                        oid(owner.table * 1000 + owner.column as u32),
                        Value::Int4(0),
                        pg_class,
                        oid(s.oid),
                        Value::Int4(0),
                        chr('n'),
                    ]
                });
                Some(std::iter::once(owned).chain(default))
            })
            .flatten()
            .collect(),
        PgDbRoleSetting => crate::role_ddl::all(session.catalog, session.bootstrap_role)
            .iter()
            .filter(|r| !r.config.is_empty())
            .map(|r| vec![oid(0), oid(r.oid), role_config(r)])
            .collect(),
        PgAuthMembers => crate::role_ddl::all(session.catalog, session.bootstrap_role)
            .iter()
            .chain(crate::predefined_roles::all())
            .flat_map(|r| {
                r.member_of.iter().map(|m| {
                    vec![
                        oid(m.role),
                        oid(r.oid),
                        oid(m.grantor),
                        Value::Bool(m.admin),
                    ]
                })
            })
            .collect(),
        PgEventTrigger
        | PgInherits
        | PgPartitionedTable
        | PgRange
        | PgProc
        | PgCollation
        | PgPolicy
        | PgStatisticExt
        | PgPublication
        | PgPublicationRel
        | PgPublicationNamespace
        | PgTrigger
        | PgForeignTable
        | PgExtension
        | PgLanguage
        | PgOperator
        | PgOpclass
        | PgOpfamily
        | PgAmop
        | PgAmproc
        | PgTsParser
        | PgTsTemplate
        | PgTsDict
        | PgTsConfig
        | PgForeignDataWrapper
        | PgForeignServer
        | PgDefaultAcl
        | PgConversion
        | PgCast
        | PgTransform
        | PgRewrite
        | PgSubscription
        | PgLargeobjectMetadata
        | PgSeclabels
        | PgShseclabel
        | PgParameterAcl
        | PgUserMapping
        // Read from the datanodes (`read`).
        | PgPreparedXacts
        | PgLocks => Vec::new(),
        Information(view) => crate::information_schema::rows(view, session),
    };
    for r in &mut rows {
        debug_assert_eq!(r.len(), width, "{table:?} row width");
        r.resize(width, Value::Null);
    }
    Ok(rows)
}

/// The name of role `oid` (pg_get_userbyid's answer).
fn role_name(session: &SessionView, oid: u32) -> String {
    if let Some(r) = session.catalog.role_by_oid(oid) {
        return r.name.clone();
    }
    match oid {
        SUPERUSER_OID => session.bootstrap_role.name.clone(),
        o => format!("unknown (OID={o})"),
    }
}

/// A meridian_distribution row: how the table's rows are placed (user tables all live
/// in schema public).
fn distribution_row(t: &TableDef) -> Vec<Value> {
    let (kind, column) = match t.distribution {
        Distribution::Hash { column } => ("hash", t.columns.get(column)),
        Distribution::Replication => ("replication", None),
        Distribution::RoundRobin => ("roundrobin", None),
    };
    let hashed = matches!(t.distribution, Distribution::Hash { .. });
    vec![
        text("public"),
        text(&t.name),
        text(kind),
        column.map_or(Value::Null, |c| text(&c.name)),
        if hashed {
            Value::Int4(BUCKETS as i32)
        } else {
            Value::Null
        },
    ]
}

/// A view's definition as pg_get_viewdef and pg_views give it: the stored query in
/// PostgreSQL's frame (a leading space, a closing semicolon), not deparsed as PostgreSQL
/// would print it.
fn view_definition(view: &sql::view::ViewDef) -> String {
    format!(" {};", view.query)
}

/// A pg_class row with its relation's owner and ACL.
fn owned_by(
    session: &SessionView,
    mut row: Vec<Value>,
    owner: u32,
    acl: &Option<Vec<sql::acl::AclItem>>,
) -> Vec<Value> {
    if let Some(relowner) = column_of(SystemTable::PgClass, "relowner") {
        row[relowner] = oid(owner);
    }
    if let (Some(relacl), Some(items)) = (column_of(SystemTable::PgClass, "relacl"), acl) {
        row[relacl] = acl_array(session, items);
    }
    row
}

/// An ACL as aclitem[] text.
fn acl_array(session: &SessionView, items: &[sql::acl::AclItem]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|i| text(&i.text(|o| role_name(session, o))))
            .collect(),
    )
}

fn pg_class_row(
    o: u32,
    name: &str,
    kind: char,
    natts: usize,
    has_index: bool,
    am: u32,
    fillfactor: Option<u32>,
) -> Vec<Value> {
    vec![
        oid(o),
        text(name),
        oid(PUBLIC_NAMESPACE_OID),
        oid(0),
        oid(0),
        oid(SUPERUSER_OID),
        oid(am),
        oid(o),
        oid(0),
        Value::Int4(0),
        Value::Float4(-1.0),
        Value::Int4(0),
        oid(0),
        Value::Bool(has_index),
        Value::Bool(false),
        chr('p'),
        chr(kind),
        Value::Int2(natts as i16),
        Value::Int2(0),
        Value::Bool(false),
        Value::Bool(false),
        Value::Bool(false),
        Value::Bool(false),
        Value::Bool(false),
        Value::Bool(true),
        chr(if kind == 'r' { 'd' } else { 'n' }),
        Value::Bool(false),
        oid(0),
        Value::Int8(0),
        Value::Int8(0),
        Value::Null,
        fillfactor
            .map(|f| Value::Array(vec![text(&format!("fillfactor={f}"))]))
            .unwrap_or(Value::Null),
        Value::Null,
    ]
}

/// Where pg_attribute's attidentity is in its rows.
const ATTIDENTITY: usize = 16;

fn pg_attribute_row(
    rel: u32,
    name: &str,
    ty: &DataType,
    num: i16,
    not_null: bool,
    has_default: bool,
) -> Vec<Value> {
    vec![
        oid(rel),
        text(name),
        oid(ty.oid()),
        Value::Int4(-1),
        Value::Int2(ty.typlen()),
        Value::Int2(num),
        Value::Int4(0),
        Value::Int4(-1),
        Value::Int4(ty.typmod()),
        Value::Bool(ty.typlen() > 0 && ty.typlen() <= 8),
        chr(type_align(ty)),
        chr(match ty {
            DataType::Numeric { .. } => 'm',
            t if t.typlen() == -1 => 'x',
            _ => 'p',
        }),
        chr('\0'),
        Value::Bool(not_null),
        Value::Bool(has_default),
        Value::Bool(false),
        chr('\0'),
        chr('\0'),
        Value::Bool(false),
        Value::Bool(true),
        Value::Int4(0),
        oid(if ty.is_string() { 100 } else { 0 }),
        Value::Null,
        Value::Null,
        Value::Null,
    ]
}

/// I/O functions of a built-in type (typinput, typoutput, typreceive, typsend), as in PostgreSQL 15.
fn type_io_procs(ty: &DataType) -> [u32; 4] {
    use DataType::*;
    match ty {
        Array(_) => [750, 751, 2400, 2401],
        Bool => [1242, 1243, 2436, 2437],
        Bytea => [1244, 31, 2412, 2413],
        Char => [1245, 33, 2434, 2435],
        Name => [34, 35, 2422, 2423],
        Int8 => [460, 461, 2408, 2409],
        Int2 => [38, 39, 2404, 2405],
        Int2Vector => [40, 41, 2410, 2411],
        Int4 => [42, 43, 2406, 2407],
        RegProc => [44, 45, 2444, 2445],
        Text => [46, 47, 2414, 2415],
        Oid => [1798, 1799, 2418, 2419],
        OidVector => [54, 55, 2420, 2421],
        Float4 => [200, 201, 2424, 2425],
        Float8 => [214, 215, 2426, 2427],
        Bpchar { .. } => [1044, 1045, 2430, 2431],
        Varchar { .. } => [1046, 1047, 2432, 2433],
        Date => [1084, 1085, 2468, 2469],
        Time { .. } => [1143, 1144, 2470, 2471],
        Timestamp { .. } => [1312, 1313, 2474, 2475],
        TimestampTz { .. } => [1150, 1151, 2476, 2477],
        Interval { .. } => [1160, 1161, 2478, 2479],
        Numeric { .. } => [1701, 1702, 2460, 2461],
        RegClass => [2218, 2219, 2452, 2453],
        RegType => [2220, 2221, 2454, 2455],
        RegNamespace => [4084, 4085, 4086, 4087],
        PgNodeTree => [195, 196, 197, 198],
        Unknown => [109, 110, 2416, 2417],
        Uuid => [2952, 2953, 2961, 2962],
        Json => [321, 322, 323, 324],
        Jsonb => [3806, 3804, 3805, 3803],
        Enum(_) => [3504, 3505, 3532, 3533],
        Void => [2298, 2299, 3120, 3121],
    }
}

/// Names of the procedures in `type_io_procs` (regproc output).
pub fn proc_name(o: u32) -> Option<&'static str> {
    const NAMES: &[(u32, &str)] = &[
        (750, "array_in"),
        (2952, "uuid_in"),
        (321, "json_in"),
        (322, "json_out"),
        (323, "json_recv"),
        (324, "json_send"),
        (3806, "jsonb_in"),
        (3804, "jsonb_out"),
        (3805, "jsonb_recv"),
        (3803, "jsonb_send"),
        (3504, "enum_in"),
        (3505, "enum_out"),
        (3532, "enum_recv"),
        (3533, "enum_send"),
        (2953, "uuid_out"),
        (2961, "uuid_recv"),
        (2962, "uuid_send"),
        (751, "array_out"),
        (2400, "array_recv"),
        (2401, "array_send"),
        (1242, "boolin"),
        (1243, "boolout"),
        (2436, "boolrecv"),
        (2437, "boolsend"),
        (1244, "byteain"),
        (31, "byteaout"),
        (2412, "bytearecv"),
        (2413, "byteasend"),
        (1245, "charin"),
        (33, "charout"),
        (2434, "charrecv"),
        (2435, "charsend"),
        (34, "namein"),
        (35, "nameout"),
        (2422, "namerecv"),
        (2423, "namesend"),
        (460, "int8in"),
        (461, "int8out"),
        (2408, "int8recv"),
        (2409, "int8send"),
        (38, "int2in"),
        (39, "int2out"),
        (2404, "int2recv"),
        (2405, "int2send"),
        (40, "int2vectorin"),
        (41, "int2vectorout"),
        (2410, "int2vectorrecv"),
        (2411, "int2vectorsend"),
        (42, "int4in"),
        (43, "int4out"),
        (2406, "int4recv"),
        (2407, "int4send"),
        (44, "regprocin"),
        (45, "regprocout"),
        (2444, "regprocrecv"),
        (2445, "regprocsend"),
        (46, "textin"),
        (47, "textout"),
        (2414, "textrecv"),
        (2415, "textsend"),
        (1798, "oidin"),
        (1799, "oidout"),
        (2418, "oidrecv"),
        (2419, "oidsend"),
        (54, "oidvectorin"),
        (55, "oidvectorout"),
        (2420, "oidvectorrecv"),
        (2421, "oidvectorsend"),
        (200, "float4in"),
        (201, "float4out"),
        (2424, "float4recv"),
        (2425, "float4send"),
        (214, "float8in"),
        (215, "float8out"),
        (2426, "float8recv"),
        (2427, "float8send"),
        (1044, "bpcharin"),
        (1045, "bpcharout"),
        (2430, "bpcharrecv"),
        (2431, "bpcharsend"),
        (1046, "varcharin"),
        (1047, "varcharout"),
        (2432, "varcharrecv"),
        (2433, "varcharsend"),
        (1084, "date_in"),
        (1085, "date_out"),
        (2468, "date_recv"),
        (2469, "date_send"),
        (1143, "time_in"),
        (1144, "time_out"),
        (2470, "time_recv"),
        (2471, "time_send"),
        (1312, "timestamp_in"),
        (1313, "timestamp_out"),
        (2474, "timestamp_recv"),
        (2475, "timestamp_send"),
        (1150, "timestamptz_in"),
        (1151, "timestamptz_out"),
        (2476, "timestamptz_recv"),
        (2477, "timestamptz_send"),
        (1160, "interval_in"),
        (1161, "interval_out"),
        (2478, "interval_recv"),
        (2479, "interval_send"),
        (1701, "numeric_in"),
        (1702, "numeric_out"),
        (2460, "numeric_recv"),
        (2461, "numeric_send"),
        (2218, "regclassin"),
        (2219, "regclassout"),
        (2452, "regclassrecv"),
        (2453, "regclasssend"),
        (2220, "regtypein"),
        (2221, "regtypeout"),
        (2454, "regtyperecv"),
        (2455, "regtypesend"),
        (4084, "regnamespacein"),
        (4085, "regnamespaceout"),
        (4086, "regnamespacerecv"),
        (4087, "regnamespacesend"),
        (195, "pg_node_tree_in"),
        (196, "pg_node_tree_out"),
        (197, "pg_node_tree_recv"),
        (198, "pg_node_tree_send"),
        (109, "unknownin"),
        (110, "unknownout"),
        (2416, "unknownrecv"),
        (2417, "unknownsend"),
        (2290, "record_in"),
        (3504, "enum_in"),
        (3834, "range_in"),
        (2597, "domain_in"),
        (2291, "record_out"),
        (2402, "record_recv"),
        (2403, "record_send"),
        (2500, "cstring_recv"),
        (2501, "cstring_send"),
        (2502, "anyarray_recv"),
        (2503, "anyarray_send"),
        (3120, "void_recv"),
        (3121, "void_send"),
        (2292, "cstring_in"),
        (2293, "cstring_out"),
        (2294, "any_in"),
        (2295, "any_out"),
        (2296, "anyarray_in"),
        (2297, "anyarray_out"),
        (2298, "void_in"),
        (2299, "void_out"),
        (2300, "trigger_in"),
        (2301, "trigger_out"),
        (2304, "internal_in"),
        (2305, "internal_out"),
        (2312, "anyelement_in"),
        (2313, "anyelement_out"),
        (6179, "array_subscript_handler"),
        (6180, "raw_array_subscript_handler"),
    ];
    NAMES.iter().find(|(x, _)| *x == o).map(|(_, n)| *n)
}

/// typalign as in PostgreSQL 15.
fn type_align(ty: &DataType) -> char {
    use DataType::*;
    match ty {
        Bool | Char | Name | Unknown | Uuid => 'c',
        Int2 => 's',
        Int8 | Float8 | Timestamp { .. } | TimestampTz { .. } | Time { .. } | Interval { .. } => {
            'd'
        }
        Array(e) => match e.as_ref() {
            Int8
            | Float8
            | Timestamp { .. }
            | TimestampTz { .. }
            | Time { .. }
            | Interval { .. } => 'd',
            _ => 'i',
        },
        _ => 'i',
    }
}

fn pg_type_row(ty: &DataType) -> Vec<Value> {
    use DataType::*;
    let elem = ty.element().map(|e| e.oid()).unwrap_or(0);
    let array_oid = builtin_array_oid(ty);
    let [input, output, receive, send] = type_io_procs(ty);
    let len = ty.typlen();
    let preferred = matches!(
        ty,
        Bool | Text | Float8 | Oid | TimestampTz { .. } | Interval { .. }
    );
    // Subscripting: arrays use array_subscript_handler, fixed-length vectors raw_array_subscript_handler.
    let subscript = match ty {
        Array(_) | Int2Vector | OidVector => 6179,
        Name => 6180,
        _ => 0,
    };
    let collation = match ty {
        Name => 950,
        PgNodeTree => 100,
        Array(e) if e.is_string() => 100,
        t if t.is_string() => 100,
        _ => 0,
    };
    // name is a fixed-length array of char
    let elem = if *ty == Name { 18 } else { elem };
    let user_defined = matches!(ty.element().unwrap_or(ty), Enum(_));
    vec![
        oid(ty.oid()),
        text(&ty.type_name()),
        oid(if user_defined {
            PUBLIC_NAMESPACE_OID
        } else {
            PG_CATALOG_NAMESPACE_OID
        }),
        oid(SUPERUSER_OID),
        Value::Int2(len),
        Value::Bool(len > 0 && len <= 8),
        chr(match ty {
            Unknown => 'p',
            Enum(_) => 'e',
            _ => 'b',
        }),
        chr(ty.category()),
        Value::Bool(preferred),
        Value::Bool(true),
        chr(','),
        oid(0),
        oid(subscript),
        oid(elem),
        oid(array_oid),
        oid(input),
        oid(output),
        oid(receive),
        oid(send),
        chr(type_align(ty)),
        chr(match ty {
            Numeric { .. } => 'm',
            Int2Vector | OidVector => 'p',
            _ if len == -1 => 'x',
            _ => 'p',
        }),
        Value::Bool(false),
        oid(0),
        Value::Int4(-1),
        Value::Int4(0),
        oid(collation),
        Value::Null,
        Value::Null,
    ]
}

/// Pseudo-types clients look up (oid, name, typlen, typbyval, typelem, typarray, [typinput, typoutput, typreceive, typsend], typalign).
type PseudoType = (u32, &'static str, i16, bool, u32, u32, [u32; 4], char);
const PSEUDO_TYPES: &[PseudoType] = &[
    (
        2249,
        "record",
        -1,
        false,
        0,
        2287,
        [2290, 2291, 2402, 2403],
        'd',
    ),
    (
        2287,
        "_record",
        -1,
        false,
        2249,
        0,
        [750, 751, 2400, 2401],
        'd',
    ),
    (
        2275,
        "cstring",
        -2,
        false,
        0,
        1263,
        [2292, 2293, 2500, 2501],
        'c',
    ),
    (2276, "any", 4, true, 0, 0, [2294, 2295, 0, 0], 'i'),
    (
        2277,
        "anyarray",
        -1,
        false,
        0,
        0,
        [2296, 2297, 2502, 2503],
        'd',
    ),
    (2278, "void", 4, true, 0, 0, [2298, 2299, 3120, 3121], 'i'),
    (2279, "trigger", 4, true, 0, 0, [2300, 2301, 0, 0], 'i'),
    (2281, "internal", 8, true, 0, 0, [2304, 2305, 0, 0], 'd'),
    (2283, "anyelement", 4, true, 0, 0, [2312, 2313, 0, 0], 'i'),
];

/// Name of a pseudo-type (regtype output for types Meridian has no DataType for).
pub fn pseudo_type_name(o: u32) -> Option<&'static str> {
    PSEUDO_TYPES.iter().find(|t| t.0 == o).map(|t| t.1)
}

fn pseudo_type_row(t: &(u32, &str, i16, bool, u32, u32, [u32; 4], char)) -> Vec<Value> {
    let &(o, name, len, byval, elem, array, [input, output, receive, send], align) = t;
    vec![
        oid(o),
        text(name),
        oid(PG_CATALOG_NAMESPACE_OID),
        oid(SUPERUSER_OID),
        Value::Int2(len),
        Value::Bool(byval),
        chr('p'),
        chr('P'),
        Value::Bool(false),
        Value::Bool(true),
        chr(','),
        oid(0),
        oid(if elem != 0 { 6179 } else { 0 }),
        oid(elem),
        oid(array),
        oid(input),
        oid(output),
        oid(receive),
        oid(send),
        chr(align),
        chr(if len == -1 { 'x' } else { 'p' }),
        Value::Bool(false),
        oid(0),
        Value::Int4(-1),
        Value::Int4(0),
        oid(0),
        Value::Null,
        Value::Null,
    ]
}

fn builtin_array_oid(ty: &DataType) -> u32 {
    if matches!(ty, DataType::Array(_) | DataType::Unknown) {
        return 0;
    }
    DataType::Array(Box::new(ty.clone())).oid()
}

/// Name of a relation for regclass output.
pub fn relation_name(session: &SessionView, o: u32) -> String {
    use sql::catalog::Catalog;
    if let Some(t) = session.catalog.table_by_oid(o) {
        return t.name.clone();
    }
    if let Some(s) = session.catalog.sequence_by_oid(o) {
        return s.name.clone();
    }
    if let Some(v) = session.catalog.view_by_oid(o) {
        return v.name.clone();
    }
    if let Some(ix) = find(&session.catalog.tables(), o, false) {
        return ix.name.to_string();
    }
    system_table_name(o)
        .map(str::to_string)
        .unwrap_or_else(|| o.to_string())
}

fn system_table_name(o: u32) -> Option<&'static str> {
    use SystemTable::*;
    [
        (PgClass, "pg_class"),
        (PgNamespace, "pg_namespace"),
        (PgAttribute, "pg_attribute"),
        (PgType, "pg_type"),
        (PgIndex, "pg_index"),
        (PgDatabase, "pg_database"),
        (PgConstraint, "pg_constraint"),
        (PgAttrdef, "pg_attrdef"),
        (PgProc, "pg_proc"),
    ]
    .into_iter()
    .find(|(t, _)| system_table_oid(*t) == o)
    .map(|(_, n)| n)
}

fn find_table(session: &SessionView, o: u32) -> Option<std::sync::Arc<TableDef>> {
    use sql::catalog::Catalog;
    session.catalog.table_by_oid(o)
}

/// The position of system table `table`'s column `name`.
fn column_of(table: SystemTable, name: &str) -> Option<usize> {
    system_columns(table).iter().position(|(n, _)| *n == name)
}

/// The pg_constraint row of a FOREIGN KEY constraint (contype 'f').
fn foreign_key_row(f: &crate::system_foreign_keys::ForeignKeyView) -> Vec<Value> {
    let (conkey, confkey) = f.attnums();
    let numbers = |n: Vec<i16>| Value::Array(n.into_iter().map(Value::Int2).collect());
    vec![
        oid(f.fk.oid),
        text(&f.fk.name),
        oid(PUBLIC_NAMESPACE_OID),
        chr('f'),
        Value::Bool(false),
        Value::Bool(false),
        Value::Bool(true),
        oid(f.table.oid),
        oid(0),
        oid(f.index_oid()),
        oid(0),
        oid(f.parent.oid),
        chr(f.fk.on_update.code()),
        chr(f.fk.on_delete.code()),
        chr('s'),
        Value::Bool(true),
        Value::Int4(0),
        Value::Bool(true),
        numbers(conkey),
        numbers(confkey),
        Value::Null,
    ]
}

/// The pg_constraint row of a CHECK constraint (contype 'c').
fn check_constraint_row(c: &crate::system_checks::CheckView) -> Vec<Value> {
    vec![
        oid(c.check.oid),
        text(&c.check.name),
        oid(PUBLIC_NAMESPACE_OID),
        chr('c'),
        Value::Bool(false),
        Value::Bool(false),
        Value::Bool(true),
        oid(c.table.oid),
        oid(0),
        oid(0),
        oid(0),
        oid(0),
        chr(' '),
        chr(' '),
        chr(' '),
        Value::Bool(true),
        Value::Int4(0),
        Value::Bool(false),
        Value::Array(c.attnums().into_iter().map(Value::Int2).collect()),
        Value::Null,
        Value::Null,
    ]
}

pub fn session_function(
    session: &SessionView,
    func: ScalarFunc,
    args: Vec<Value>,
) -> PgResult<Value> {
    use ScalarFunc as F;
    let arg_oid = |i: usize| args.get(i).and_then(|v| v.as_i64()).unwrap_or(0) as u32;
    let arg_text = |i: usize| {
        args.get(i)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    Ok(match func {
        F::Nextval
        | F::Currval
        | F::Setval
        | F::Lastval
        | F::PgGetSerialSequence
        | F::SequenceLastValue
        | F::SequenceIsCalled => return crate::sequences::call(session, func, &args),
        F::Now => Value::TimestampTz(session.txn_time),
        F::StatementTimestamp => Value::TimestampTz(session.statement_time),
        F::ClockTimestamp => Value::TimestampTz(types::datetime::now_timestamp()),
        F::Version => text(&format!(
            "PostgreSQL {SERVER_VERSION} on x86_64-pc-linux-gnu, compiled by rustc, 64-bit"
        )),
        F::CurrentSchema => text("public"),
        F::CurrentSchemas => {
            let implicit = args.first().and_then(Value::as_bool).unwrap_or(false);
            let mut v = Vec::new();
            if implicit {
                v.push(text("pg_catalog"));
            }
            v.push(text("public"));
            Value::Array(v)
        }
        F::CurrentDatabase => text(session.database),
        F::CurrentUser => text(session.user),
        F::SessionUser => text(&session.settings.lock().get("session_authorization")?),
        F::PgBackendPid => Value::Int4(session.backend_pid),
        F::TxidCurrent => session
            .sessions
            .get(session.backend_pid)
            .and_then(|a| a.transaction_start())
            .map_or(Value::Null, |start| Value::Int8(start as i64)),
        F::PgStatStatementsReset => return reset_statement_stats(session, &args),
        F::PgStatReset => {
            // PostgreSQL 15 grants pg_stat_reset() to superusers only
            if !is_superuser(session, session.user) {
                return Err(PgError::new(
                    codes::INSUFFICIENT_PRIVILEGE,
                    "permission denied for function pg_stat_reset",
                ));
            }
            let now = types::datetime::now_timestamp();
            session.cumulative_stats.reset(now);
            text("")
        }
        F::PgStatForceNextFlush => {
            session.cumulative_stats.flush();
            text("")
        }
        F::PgCancelBackend | F::PgTerminateBackend => {
            if args.iter().any(Value::is_null) {
                return Ok(Value::Null);
            }
            return signal_backend(session, func == F::PgTerminateBackend, &args);
        }
        F::CurrentSetting => {
            if args.iter().take(1).any(Value::is_null) {
                return Ok(Value::Null);
            }
            let missing_ok = args.get(1).and_then(Value::as_bool).unwrap_or(false);
            match session.settings.lock().get(&arg_text(0)) {
                Ok(v) => text(&v),
                Err(_) if missing_ok => Value::Null,
                Err(e) => return Err(e),
            }
        }
        F::SetConfig => {
            let local = args.get(2).and_then(Value::as_bool).unwrap_or(false);
            let name = arg_text(0);
            let value = if args.get(1).is_none_or(Value::is_null) {
                None
            } else {
                Some(arg_text(1))
            };
            let mut settings = session.settings.lock();
            if let Some(report) = settings.set(&name, value.as_deref(), local)? {
                session.reports.lock().push(report);
            }
            text(&settings.get(&name)?)
        }
        F::FormatType => {
            if args.first().is_none_or(Value::is_null) {
                return Ok(Value::Null);
            }
            let typmod = args.get(1).and_then(Value::as_i64).unwrap_or(-1) as i32;
            let def = sql::catalog::DataTypeDef {
                oid: arg_oid(0),
                typmod,
            };
            match DataType::from_oid(def.oid) {
                Some(_) => text(&def.to_type().format_type()),
                None => text(pseudo_type_name(def.oid).unwrap_or("???")),
            }
        }
        F::PgTableIsVisible | F::PgTypeIsVisible | F::PgFunctionIsVisible => Value::Bool(true),
        F::PgPartitionAncestors => oid(arg_oid(0)),
        F::PgGetTriggerDef => Value::Null,
        F::PgGetUserById => text(&role_name(session, arg_oid(0))),
        F::AclDefault => {
            let owner = sql::acl::quoted_role(&role_name(session, arg_oid(1)));
            let kind = arg_text(0);
            let items: Vec<String> = match kind.as_str() {
                "r" => vec![format!("{owner}=arwdDxt/{owner}")],
                "s" => vec![format!("{owner}=rwU/{owner}")],
                "d" => vec![format!("=Tc/{owner}"), format!("{owner}=CTc/{owner}")],
                "f" => vec![format!("=X/{owner}"), format!("{owner}=X/{owner}")],
                "l" | "T" => vec![format!("=U/{owner}"), format!("{owner}=U/{owner}")],
                "L" => vec![format!("{owner}=rw/{owner}")],
                "n" => vec![format!("{owner}=UC/{owner}")],
                "t" => vec![format!("{owner}=C/{owner}")],
                "F" | "S" => vec![format!("{owner}=U/{owner}")],
                "c" => Vec::new(),
                _ => {
                    return Err(PgError::new(
                        codes::INTERNAL_ERROR,
                        format!("unrecognized objtype abbreviation: {kind}"),
                    ))
                }
            };
            Value::Array(items.iter().map(|i| text(i)).collect())
        }
        F::PgGetExpr => args.into_iter().next().unwrap_or(Value::Null),
        F::PgGetIndexDef => match find(&session.catalog.tables(), arg_oid(0), false) {
            // pg_get_indexdef(index, column, pretty): with column > 0, just that key column.
            Some(ix) => match args.get(1).and_then(Value::as_i64).filter(|&c| c > 0) {
                Some(c) => text(ix.column_names().get(c as usize - 1).copied().unwrap_or("")),
                None => text(&ix.definition()),
            },
            None => Value::Null,
        },
        F::PgGetViewDef => match session.catalog.view_by_oid(arg_oid(0)) {
            Some(v) => text(&view_definition(&v)),
            None => Value::Null,
        },
        F::PgGetConstraintDef => {
            let tables = session.catalog.tables();
            let pretty = matches!(args.get(1), Some(Value::Bool(true)));
            match find(&tables, arg_oid(0), true) {
                Some(ix) => text(&ix.constraint_definition()),
                None => match crate::system_checks::find(&tables, arg_oid(0)) {
                    Some(c) => text(&c.definition(pretty)),
                    None => match crate::system_foreign_keys::find(&tables, arg_oid(0)) {
                        Some(f) => text(&f.definition()),
                        None => Value::Null,
                    },
                },
            }
        }
        // obj_description(oid, catalog), and the deprecated obj_description(oid): any
        // catalog's object of that OID.
        F::ObjDescription => {
            let catalog = (args.len() > 1).then(|| arg_text(1));
            let class = catalog.as_deref().map(|c| match c {
                "pg_class" => system_table_oid(SystemTable::PgClass),
                "pg_namespace" => system_table_oid(SystemTable::PgNamespace),
                _ => 0,
            });
            description_of(session, arg_oid(0), class, 0)
        }
        F::ShobjDescription => match (arg_oid(0), arg_text(1).as_str()) {
            (POSTGRES_DB_OID, "pg_database") => text("default administrative connection database"),
            (1, "pg_database") => text("default template for new databases"),
            (4, "pg_database") => text("unmodifiable empty database"),
            _ => Value::Null,
        },
        F::ColDescription => {
            let attnum = args.get(1).and_then(Value::as_i64).unwrap_or(0) as i32;
            description_of(
                session,
                arg_oid(0),
                Some(system_table_oid(SystemTable::PgClass)),
                attnum,
            )
        }
        F::PgTablespaceLocation => text(""),
        F::PgDatabaseSize => {
            // Meridian has no per-database files: report the tables' (nominal) sizes.
            Value::Int8(8192 * session.catalog.tables().len() as i64)
        }
        F::PgEncodingToChar => text(if args.first().and_then(Value::as_i64) == Some(6) {
            "UTF8"
        } else {
            "SQL_ASCII"
        }),
        F::HasPrivilege => Value::Bool(true),
        F::HasTablePrivilege => {
            let (role, relation, privileges) = match args.len() {
                3 => (Some(arg_text(0)), arg_text(1), arg_text(2)),
                _ => (None, arg_text(0), arg_text(1)),
            };
            let held =
                crate::privileges::has_privilege(session, role.as_deref(), &relation, &privileges)?;
            Value::Bool(held)
        }
        F::ToRegclass => regclass_oid(session, &arg_text(0)).map_or(Value::Null, Value::Oid),
        F::RegclassIn => match args.first() {
            None | Some(Value::Null) => Value::Null,
            Some(_) => match regclass_oid(session, &arg_text(0)) {
                Some(o) => Value::Oid(o),
                None => {
                    return Err(PgError::new(
                        codes::UNDEFINED_TABLE,
                        format!("relation \"{}\" does not exist", arg_text(0)),
                    ))
                }
            },
        },
        F::PgGetStatisticsObjDefColumns => Value::Null,
        F::PgRelationSize | F::PgTotalRelationSize => {
            Value::Int8(find_table(session, arg_oid(0)).map_or(0, |_| 8192))
        }
        F::PgSizePretty => match args.first().and_then(Value::as_i64) {
            Some(n) => text(&size_pretty(n)),
            None => Value::Null,
        },
        F::PgIsInRecovery => Value::Bool(false),
        F::PgPostmasterStartTime => Value::TimestampTz(session.txn_time),
        F::InetServerAddr => Value::Null,
        F::PgRelationIsPublishable => {
            // PostgreSQL: true for permanent user tables (not system catalogs).
            Value::Bool(find_table(session, arg_oid(0)).is_some())
        }
        F::ToRegtype => {
            if args.first().is_none_or(Value::is_null) {
                return Ok(Value::Null);
            }
            match DataType::from_sql_name(&arg_text(0), &[]) {
                Ok(t) => Value::Oid(t.oid()),
                Err(_) => Value::Null,
            }
        }
        F::ToRegnamespace => match arg_text(0).as_str() {
            "pg_catalog" => oid(PG_CATALOG_NAMESPACE_OID),
            "public" => oid(PUBLIC_NAMESPACE_OID),
            "information_schema" => oid(INFORMATION_SCHEMA_OID),
            "pg_toast" => oid(PG_TOAST_NAMESPACE_OID),
            _ => Value::Null,
        },
        F::RegclassText | F::RegtypeText | F::RegnamespaceText | F::RegprocText => {
            let (v, ty) = match func {
                F::RegclassText => (args.into_iter().next(), DataType::RegClass),
                F::RegtypeText => (args.into_iter().next(), DataType::RegType),
                F::RegnamespaceText => (args.into_iter().next(), DataType::RegNamespace),
                _ => (args.into_iter().next(), DataType::RegProc),
            };
            match v {
                None | Some(Value::Null) => Value::Null,
                Some(v) => {
                    let mut out = Vec::new();
                    crate::output::value_text(&v, &ty, session, &mut out);
                    text(&String::from_utf8_lossy(&out))
                }
            }
        }
        F::PgGetFunctionResult | F::PgGetFunctionArguments => Value::Null,
        // a statement's executor waits (`Executor::session_function`); a default or an
        // EXECUTE argument has none
        F::PgSleep => return Err(PgError::unsupported("pg_sleep outside a query")),
        other => {
            return Err(PgError::new(
                codes::INTERNAL_ERROR,
                format!("{other:?} is not a session function"),
            ))
        }
    })
}

/// The OID of the table, view, sequence or system catalog a regclass name (`name`,
/// `public.name` or `pg_catalog.name`) denotes.
fn regclass_oid(session: &SessionView, name: &str) -> Option<u32> {
    use sql::catalog::Catalog;
    let parts = sql::binder::parse_object_name(name);
    let name = match parts.as_slice() {
        [name] => name,
        [schema, name] if schema == "public" => name,
        [schema, name] if schema == "pg_catalog" => {
            return sql::system_tables::system_table(name).map(system_table_oid)
        }
        _ => return None,
    };
    let catalog = &session.catalog;
    (catalog.table(None, name).map(|t| t.oid))
        .or_else(|| sql::system_tables::system_table(name).map(system_table_oid))
        .or_else(|| catalog.sequence(name).map(|s| s.oid))
        .or_else(|| catalog.view(name).map(|v| v.oid))
}

/// A column default as pg_get_expr deparses it: PostgreSQL shows string constants and
/// negative numbers with an explicit cast to the column type (`'x'::text`, `'-1'::integer`).
pub(crate) fn deparse_default(d: &str, ty: &DataType) -> String {
    let t = d.trim();
    let type_name = || match ty {
        DataType::Bpchar { .. } => "bpchar".to_string(),
        other => other.without_typmod().format_type(),
    };
    let quoted = t.len() >= 2
        && t.starts_with('\'')
        && t.ends_with('\'')
        && !t[1..t.len() - 1].replace("''", "").contains('\'');
    if quoted {
        // A quoted literal is a constant of the column's type; PostgreSQL's
        // get_const_expr shows some of those bare.
        let inner = &t[1..t.len() - 1];
        let digits = inner.chars().next().is_some_and(|c| c.is_ascii_digit());
        let bare = match ty {
            DataType::Int4 => inner
                .parse::<i32>()
                .ok()
                .filter(|n| *n >= 0)
                .map(|n| n.to_string()),
            DataType::Numeric { .. } if digits && inner.contains(['e', 'E', '.']) => {
                Some(inner.to_string())
            }
            DataType::Bool => (types::io::from_text(inner, ty).ok())
                .and_then(|v| v.as_bool())
                .map(|b| b.to_string()),
            _ => None,
        };
        return bare.unwrap_or_else(|| format!("{t}::{}", type_name()));
    }
    let negative_number = t
        .strip_prefix('-')
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.'));
    if negative_number
        && matches!(
            ty,
            DataType::Int2 | DataType::Int4 | DataType::Int8 | DataType::Numeric { .. }
        )
    {
        return format!("'{t}'::{}", type_name());
    }
    t.to_string()
}

/// pg_size_pretty(bigint) as in PostgreSQL 15: bytes below 10 kB, then kB, MB, GB, TB, PB,
/// each unit used below 10240 of it, rounding half away from zero.
fn size_pretty(size: i64) -> String {
    const LIMIT: i64 = 10 * 1024;
    const LIMIT2: i64 = LIMIT * 2 - 1;
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    if size.abs() < LIMIT {
        return format!("{size} bytes");
    }
    // keep one extra bit for rounding
    let mut size = size >> 9;
    for unit in ["kB", "MB", "GB", "TB"] {
        if size.abs() < LIMIT2 {
            return format!("{} {unit}", half_rounded(size));
        }
        size >>= 10;
    }
    format!("{} PB", half_rounded(size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_pretty_matches_postgres() {
        assert_eq!(size_pretty(0), "0 bytes");
        assert_eq!(size_pretty(8192), "8192 bytes");
        assert_eq!(size_pretty(10239), "10239 bytes");
        assert_eq!(size_pretty(10240), "10 kB");
        assert_eq!(size_pretty(40960), "40 kB");
        assert_eq!(size_pretty(13_656_064), "13 MB");
        assert_eq!(size_pretty(-10240), "-10 kB");
        assert_eq!(size_pretty(1 << 40), "1024 GB");
    }

    #[test]
    fn defaults_deparse_like_postgres() {
        assert_eq!(deparse_default("'x'", &DataType::Text), "'x'::text");
        assert_eq!(
            deparse_default("'it''s'", &DataType::Varchar { max_len: Some(10) }),
            "'it''s'::character varying"
        );
        assert_eq!(
            deparse_default("'a'", &DataType::Bpchar { len: Some(3) }),
            "'a'::bpchar"
        );
        assert_eq!(deparse_default("-1", &DataType::Int4), "'-1'::integer");
        assert_eq!(deparse_default("5", &DataType::Int4), "5");
        assert_eq!(deparse_default("now()", &DataType::TIMESTAMP), "now()");
        assert_eq!(deparse_default("'a' || 'b'", &DataType::Text), "'a' || 'b'");
        // quoted constants PostgreSQL's get_const_expr shows bare, and some it does not
        assert_eq!(deparse_default("'0'", &DataType::Int4), "0");
        assert_eq!(deparse_default("'-1'", &DataType::Int4), "'-1'::integer");
        assert_eq!(deparse_default("'0'", &DataType::Int8), "'0'::bigint");
        let numeric = DataType::NUMERIC;
        assert_eq!(deparse_default("'1.0'", &numeric), "1.0");
        assert_eq!(deparse_default("'2'", &numeric), "'2'::numeric");
        assert_eq!(deparse_default("'yes'", &DataType::Bool), "true");
    }

    #[test]
    fn pg_type_rows_have_the_declared_width() {
        let width = system_columns(SystemTable::PgType).len();
        for t in builtin_types() {
            assert_eq!(pg_type_row(&t).len(), width, "{t:?}");
        }
        for p in PSEUDO_TYPES {
            assert_eq!(pseudo_type_row(p).len(), width, "{}", p.1);
        }
    }

    #[test]
    fn io_procs_have_names() {
        for t in builtin_types() {
            for p in type_io_procs(&t) {
                assert!(proc_name(p).is_some(), "{t:?}: proc {p} has no name");
            }
        }
        assert_eq!(pseudo_type_name(2249), Some("record"));
    }
}
