//! Rows of the `information_schema` views (`sql::information_schema` has their names
//! and columns), computed from the catalog as PostgreSQL 15's view definitions compute
//! them from its catalogs: the same values for the same schema, except the OIDs inside
//! the names of NOT NULL constraints (`2200_<table oid>_<attnum>_not_null`). Only the
//! public schema's objects are listed: the system catalogs are not tables here.

use crate::exec::SessionView;
use crate::system::deparse_default;
use crate::system_indexes::indexes_of;
use sql::catalog::{ColumnDef, PUBLIC_NAMESPACE_OID};
use sql::information_schema::{numeric_facts, standard_type_name, InformationView};
use sql::sequence::Identity;
use types::{DataType, Value};

const DATABASE: &str = "postgres";
const SCHEMA: &str = "public";

pub fn rows(view: InformationView, session: &SessionView) -> Vec<Vec<Value>> {
    use InformationView::*;
    let tables = session.catalog.tables();
    let text = |s: &str| Value::Text(s.to_string());
    let yes_no = |b: bool| text(if b { "YES" } else { "NO" });
    let int = |n: Option<i32>| n.map_or(Value::Null, Value::Int4);
    let null = || Value::Null;
    match view {
        Schemata => [
            ("information_schema", "postgres"),
            ("pg_catalog", "postgres"),
            ("pg_toast", "postgres"),
            (SCHEMA, "pg_database_owner"),
        ]
        .iter()
        .map(|(schema, owner)| {
            vec![
                text(DATABASE),
                text(schema),
                text(owner),
                null(),
                null(),
                null(),
                null(),
            ]
        })
        .collect(),
        Tables => {
            let views = session.catalog.views();
            // Views cannot be written (yet): not insertable into.
            let relations = tables.iter().map(|t| (&t.name, "BASE TABLE", true));
            relations
                .chain(views.iter().map(|v| (&v.name, "VIEW", false)))
                .map(|(name, kind, insertable)| {
                    vec![
                        text(DATABASE),
                        text(SCHEMA),
                        text(name),
                        text(kind),
                        null(),
                        null(),
                        null(),
                        null(),
                        null(),
                        yes_no(insertable),
                        yes_no(false),
                        null(),
                    ]
                })
                .collect()
        }
        Columns => {
            let sequences = session.catalog.sequences();
            let views = session.catalog.views();
            // A view's columns are listed as a table's, but not updatable.
            let view_columns: Vec<(u32, &str, Vec<ColumnDef>)> = views
                .iter()
                .map(|v| (v.oid, v.name.as_str(), view_column_defs(v)))
                .collect();
            let relations = tables
                .iter()
                .map(|t| (t.oid, t.name.as_str(), &t.columns[..], true))
                .chain(
                    view_columns
                        .iter()
                        .map(|(oid, name, cols)| (*oid, *name, &cols[..], false)),
                );
            let mut out = Vec::new();
            for (oid, name, columns, updatable) in relations {
                for (i, c) in columns.iter().enumerate() {
                    let ty = c.ty.to_type();
                    let identity = sequences.iter().find(|s| {
                        s.identity.is_some()
                            && s.owned_by
                                == Some(sql::sequence::OwnedBy {
                                    table: oid,
                                    column: i,
                                })
                    });
                    let (precision, radix, scale) = numeric_facts(&ty);
                    let length = match &ty {
                        DataType::Varchar { max_len } => max_len.map(|n| n as i32),
                        DataType::Bpchar { len } => len.map(|n| n as i32),
                        _ => None,
                    };
                    let octets = match &ty {
                        DataType::Varchar { .. } | DataType::Bpchar { .. } | DataType::Text => {
                            Some(length.map_or(1 << 30, |n| n * 4))
                        }
                        _ => None,
                    };
                    let datetime_precision = match &ty {
                        DataType::Date => Some(0),
                        DataType::Time { .. }
                        | DataType::Timestamp { .. }
                        | DataType::TimestampTz { .. }
                        | DataType::Interval { .. } => {
                            Some(ty.time_precision().unwrap_or(6) as i32)
                        }
                        _ => None,
                    };
                    let udt_name = ty.type_name();
                    let udt_schema = match ty.element().unwrap_or(&ty) {
                        DataType::Enum(_) => SCHEMA,
                        _ => "pg_catalog",
                    };
                    let default = match (&c.default, identity) {
                        (Some(d), None) => text(&deparse_default(d, &ty)),
                        _ => null(),
                    };
                    let position = i as i32 + 1;
                    let mut row = vec![
                        text(DATABASE),
                        text(SCHEMA),
                        text(name),
                        text(&c.name),
                        Value::Int4(position),
                        default,
                        yes_no(!c.not_null),
                        text(&standard_type_name(&ty)),
                        int(length),
                        int(octets),
                        int(precision),
                        int(radix),
                        int(scale),
                        int(datetime_precision),
                        null(),
                        null(),
                    ];
                    row.extend((0..9).map(|_| null()));
                    row.extend([text(DATABASE), text(udt_schema), text(&udt_name)]);
                    row.extend((0..4).map(|_| null()));
                    row.push(text(&position.to_string()));
                    row.push(yes_no(false));
                    match identity {
                        Some(s) => row.extend([
                            yes_no(true),
                            text(match s.identity {
                                Some(Identity::Always) => "ALWAYS",
                                _ => "BY DEFAULT",
                            }),
                            text(&s.start.to_string()),
                            text(&s.increment.to_string()),
                            text(&s.max.to_string()),
                            text(&s.min.to_string()),
                            yes_no(s.cycle),
                        ]),
                        None => {
                            row.push(yes_no(false));
                            row.extend((0..5).map(|_| null()));
                            row.push(yes_no(false));
                        }
                    }
                    row.extend([text("NEVER"), null(), yes_no(updatable)]);
                    out.push(row);
                }
            }
            out
        }
        TableConstraints => {
            let mut out = Vec::new();
            let row = |name: &str, table: &str, kind: &str, nulls_distinct: Value| {
                vec![
                    text(DATABASE),
                    text(SCHEMA),
                    text(name),
                    text(DATABASE),
                    text(SCHEMA),
                    text(table),
                    text(kind),
                    yes_no(false),
                    yes_no(false),
                    yes_no(true),
                    nulls_distinct,
                ]
            };
            for t in &tables {
                for ix in indexes_of(t)
                    .iter()
                    .filter(|ix| ix.constraint_oid.is_some())
                {
                    let (kind, nulls) = if ix.primary {
                        ("PRIMARY KEY", null())
                    } else {
                        ("UNIQUE", yes_no(true))
                    };
                    out.push(row(ix.name, &t.name, kind, nulls));
                }
            }
            for t in &tables {
                for (i, _) in t.columns.iter().enumerate().filter(|(_, c)| c.not_null) {
                    out.push(row(&not_null_name(t.oid, i), &t.name, "CHECK", null()));
                }
                for check in &t.checks {
                    out.push(row(&check.name, &t.name, "CHECK", null()));
                }
                for fk in &t.foreign_keys {
                    out.push(row(&fk.name, &t.name, "FOREIGN KEY", null()));
                }
            }
            out
        }
        KeyColumnUsage | ConstraintColumnUsage => {
            let mut out = Vec::new();
            for t in &tables {
                for ix in indexes_of(t)
                    .iter()
                    .filter(|ix| ix.constraint_oid.is_some())
                {
                    let mut columns: Vec<(usize, usize)> = ix
                        .columns
                        .iter()
                        .enumerate()
                        .map(|(position, &(c, ..))| (position, c))
                        .collect();
                    if view == ConstraintColumnUsage {
                        // One row per column, in the table's column order.
                        columns.sort_by_key(|&(_, c)| c);
                    }
                    for (position, c) in columns {
                        let column = &t.columns[c].name;
                        out.push(if view == KeyColumnUsage {
                            vec![
                                text(DATABASE),
                                text(SCHEMA),
                                text(ix.name),
                                text(DATABASE),
                                text(SCHEMA),
                                text(&t.name),
                                text(column),
                                Value::Int4(position as i32 + 1),
                                null(),
                            ]
                        } else {
                            vec![
                                text(DATABASE),
                                text(SCHEMA),
                                text(&t.name),
                                text(column),
                                text(DATABASE),
                                text(SCHEMA),
                                text(ix.name),
                            ]
                        });
                    }
                }
            }
            // A foreign key uses its own columns (key_column_usage, each with its
            // position in the referenced key) and the referenced ones
            // (constraint_column_usage).
            for f in crate::system_foreign_keys::all(&tables) {
                let key = f.referenced_key();
                let pairs = f.fk.columns.iter().zip(&f.fk.parent_columns);
                for (position, (&c, &p)) in pairs.enumerate() {
                    let in_key = key.iter().position(|&k| k == p);
                    out.push(if view == KeyColumnUsage {
                        vec![
                            text(DATABASE),
                            text(SCHEMA),
                            text(&f.fk.name),
                            text(DATABASE),
                            text(SCHEMA),
                            text(&f.table.name),
                            text(&f.table.columns[c].name),
                            Value::Int4(position as i32 + 1),
                            in_key.map_or(null(), |i| Value::Int4(i as i32 + 1)),
                        ]
                    } else {
                        vec![
                            text(DATABASE),
                            text(SCHEMA),
                            text(&f.parent.name),
                            text(&f.parent.columns[p].name),
                            text(DATABASE),
                            text(SCHEMA),
                            text(&f.fk.name),
                        ]
                    });
                }
            }
            out
        }
        CheckConstraints => {
            let mut out = Vec::new();
            for t in &tables {
                for (i, c) in t.columns.iter().enumerate().filter(|(_, c)| c.not_null) {
                    out.push(vec![
                        text(DATABASE),
                        text(SCHEMA),
                        text(&not_null_name(t.oid, i)),
                        text(&format!("{} IS NOT NULL", c.name)),
                    ]);
                }
                for check in crate::system_checks::checks_of(t) {
                    out.push(vec![
                        text(DATABASE),
                        text(SCHEMA),
                        text(&check.check.name),
                        text(&check.clause()),
                    ]);
                }
            }
            out
        }
        // An identity column's sequence is internal to it, and not listed.
        Sequences => session
            .catalog
            .sequences()
            .iter()
            .filter(|s| s.identity.is_none())
            .map(|s| {
                let ty = DataType::from_oid(s.type_oid).unwrap_or(DataType::Int8);
                let (precision, radix, scale) = numeric_facts(&ty);
                vec![
                    text(DATABASE),
                    text(SCHEMA),
                    text(&s.name),
                    text(&standard_type_name(&ty)),
                    int(precision),
                    int(radix),
                    int(scale),
                    text(&s.start.to_string()),
                    text(&s.min.to_string()),
                    text(&s.max.to_string()),
                    text(&s.increment.to_string()),
                    yes_no(s.cycle),
                ]
            })
            .collect(),
        Views => session
            .catalog
            .views()
            .iter()
            .map(|v| {
                let mut row = vec![
                    text(DATABASE),
                    text(SCHEMA),
                    text(&v.name),
                    text(&v.query),
                    text("NONE"),
                ];
                row.extend((0..5).map(|_| yes_no(false)));
                row
            })
            .collect(),
        ReferentialConstraints => crate::system_foreign_keys::all(&tables)
            .iter()
            .map(|f| {
                let unique = f.unique_constraint_name();
                vec![
                    text(DATABASE),
                    text(SCHEMA),
                    text(&f.fk.name),
                    text(DATABASE),
                    text(SCHEMA),
                    unique.as_deref().map_or(null(), text),
                    text("NONE"),
                    text(f.fk.on_update.sql()),
                    text(f.fk.on_delete.sql()),
                ]
            })
            .collect(),
    }
}

/// PostgreSQL's name for a NOT NULL constraint in these views.
/// A view's columns in a table's shape: no default, nullable.
fn view_column_defs(view: &sql::view::ViewDef) -> Vec<ColumnDef> {
    view.columns
        .iter()
        .map(|c| ColumnDef {
            name: c.name.clone(),
            ty: c.ty.clone(),
            not_null: false,
            default: None,
            comment: None,
        })
        .collect()
}

fn not_null_name(table_oid: u32, column: usize) -> String {
    format!("{PUBLIC_NAMESPACE_OID}_{table_oid}_{}_not_null", column + 1)
}
