//! The `information_schema` views the binder knows: their names, their columns with the
//! base types of the SQL standard's domains (sql_identifier → name, character_data →
//! varchar, cardinal_number → int4, yes_or_no → varchar(3), as PostgreSQL's
//! RowDescription shows them), and made-up OIDs (PostgreSQL's come from initdb's SQL and
//! differ between installations). Reachable only qualified (`information_schema.tables`),
//! as the schema is not on the search path. Rows: the coordinator's
//! `information_schema.rs`.

use types::DataType;

/// The information_schema views Meridian answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InformationView {
    Schemata,
    Tables,
    Columns,
    TableConstraints,
    KeyColumnUsage,
    ConstraintColumnUsage,
    ReferentialConstraints,
    CheckConstraints,
    Sequences,
    Views,
}

pub fn information_view(name: &str) -> Option<InformationView> {
    use InformationView::*;
    Some(match name {
        "schemata" => Schemata,
        "tables" => Tables,
        "columns" => Columns,
        "table_constraints" => TableConstraints,
        "key_column_usage" => KeyColumnUsage,
        "constraint_column_usage" => ConstraintColumnUsage,
        "referential_constraints" => ReferentialConstraints,
        "check_constraints" => CheckConstraints,
        "sequences" => Sequences,
        "views" => Views,
        _ => return None,
    })
}

pub fn information_view_oid(v: InformationView) -> u32 {
    12100 + v as u32
}

pub fn information_view_columns(v: InformationView) -> Vec<(&'static str, DataType)> {
    use InformationView::*;
    let id = || DataType::Name;
    let chars = || DataType::Varchar { max_len: None };
    let number = || DataType::Int4;
    let yes_no = || DataType::Varchar { max_len: Some(3) };
    let catalog_schema_name =
        |prefix: &'static [&'static str; 3]| prefix.iter().map(|n| (*n, id())).collect::<Vec<_>>();
    let mut cols = Vec::new();
    match v {
        Schemata => {
            cols.extend(catalog_schema_name(&[
                "catalog_name",
                "schema_name",
                "schema_owner",
            ]));
            cols.extend(catalog_schema_name(&[
                "default_character_set_catalog",
                "default_character_set_schema",
                "default_character_set_name",
            ]));
            cols.push(("sql_path", chars()));
        }
        Tables => {
            cols.extend(catalog_schema_name(&[
                "table_catalog",
                "table_schema",
                "table_name",
            ]));
            cols.push(("table_type", chars()));
            cols.push(("self_referencing_column_name", id()));
            cols.push(("reference_generation", chars()));
            cols.extend(catalog_schema_name(&[
                "user_defined_type_catalog",
                "user_defined_type_schema",
                "user_defined_type_name",
            ]));
            cols.push(("is_insertable_into", yes_no()));
            cols.push(("is_typed", yes_no()));
            cols.push(("commit_action", chars()));
        }
        Columns => {
            cols.extend(catalog_schema_name(&[
                "table_catalog",
                "table_schema",
                "table_name",
            ]));
            cols.push(("column_name", id()));
            cols.push(("ordinal_position", number()));
            cols.push(("column_default", chars()));
            cols.push(("is_nullable", yes_no()));
            cols.push(("data_type", chars()));
            for n in [
                "character_maximum_length",
                "character_octet_length",
                "numeric_precision",
                "numeric_precision_radix",
                "numeric_scale",
                "datetime_precision",
            ] {
                cols.push((n, number()));
            }
            cols.push(("interval_type", chars()));
            cols.push(("interval_precision", number()));
            for prefix in ["character_set", "collation", "domain", "udt", "scope"] {
                let names: &[&'static str; 3] = match prefix {
                    "character_set" => &[
                        "character_set_catalog",
                        "character_set_schema",
                        "character_set_name",
                    ],
                    "collation" => &["collation_catalog", "collation_schema", "collation_name"],
                    "domain" => &["domain_catalog", "domain_schema", "domain_name"],
                    "udt" => &["udt_catalog", "udt_schema", "udt_name"],
                    _ => &["scope_catalog", "scope_schema", "scope_name"],
                };
                cols.extend(catalog_schema_name(names));
            }
            cols.push(("maximum_cardinality", number()));
            cols.push(("dtd_identifier", id()));
            cols.push(("is_self_referencing", yes_no()));
            cols.push(("is_identity", yes_no()));
            cols.push(("identity_generation", chars()));
            for n in [
                "identity_start",
                "identity_increment",
                "identity_maximum",
                "identity_minimum",
            ] {
                cols.push((n, chars()));
            }
            cols.push(("identity_cycle", yes_no()));
            cols.push(("is_generated", chars()));
            cols.push(("generation_expression", chars()));
            cols.push(("is_updatable", yes_no()));
        }
        TableConstraints => {
            cols.extend(catalog_schema_name(&[
                "constraint_catalog",
                "constraint_schema",
                "constraint_name",
            ]));
            cols.extend(catalog_schema_name(&[
                "table_catalog",
                "table_schema",
                "table_name",
            ]));
            cols.push(("constraint_type", chars()));
            for n in [
                "is_deferrable",
                "initially_deferred",
                "enforced",
                "nulls_distinct",
            ] {
                cols.push((n, yes_no()));
            }
        }
        KeyColumnUsage => {
            cols.extend(catalog_schema_name(&[
                "constraint_catalog",
                "constraint_schema",
                "constraint_name",
            ]));
            cols.extend(catalog_schema_name(&[
                "table_catalog",
                "table_schema",
                "table_name",
            ]));
            cols.push(("column_name", id()));
            cols.push(("ordinal_position", number()));
            cols.push(("position_in_unique_constraint", number()));
        }
        ConstraintColumnUsage => {
            cols.extend(catalog_schema_name(&[
                "table_catalog",
                "table_schema",
                "table_name",
            ]));
            cols.push(("column_name", id()));
            cols.extend(catalog_schema_name(&[
                "constraint_catalog",
                "constraint_schema",
                "constraint_name",
            ]));
        }
        ReferentialConstraints => {
            cols.extend(catalog_schema_name(&[
                "constraint_catalog",
                "constraint_schema",
                "constraint_name",
            ]));
            cols.extend(catalog_schema_name(&[
                "unique_constraint_catalog",
                "unique_constraint_schema",
                "unique_constraint_name",
            ]));
            for n in ["match_option", "update_rule", "delete_rule"] {
                cols.push((n, chars()));
            }
        }
        CheckConstraints => {
            cols.extend(catalog_schema_name(&[
                "constraint_catalog",
                "constraint_schema",
                "constraint_name",
            ]));
            cols.push(("check_clause", chars()));
        }
        Sequences => {
            cols.extend(catalog_schema_name(&[
                "sequence_catalog",
                "sequence_schema",
                "sequence_name",
            ]));
            cols.push(("data_type", chars()));
            for n in [
                "numeric_precision",
                "numeric_precision_radix",
                "numeric_scale",
            ] {
                cols.push((n, number()));
            }
            for n in ["start_value", "minimum_value", "maximum_value", "increment"] {
                cols.push((n, chars()));
            }
            cols.push(("cycle_option", yes_no()));
        }
        Views => {
            cols.extend(catalog_schema_name(&[
                "table_catalog",
                "table_schema",
                "table_name",
            ]));
            cols.push(("view_definition", chars()));
            cols.push(("check_option", chars()));
            for n in [
                "is_updatable",
                "is_insertable_into",
                "is_trigger_updatable",
                "is_trigger_deletable",
                "is_trigger_insertable_into",
            ] {
                cols.push((n, yes_no()));
            }
        }
    }
    cols
}

/// The SQL standard's name of a column's type (information_schema.columns.data_type).
pub fn standard_type_name(ty: &DataType) -> String {
    match ty {
        DataType::Array(_) => "ARRAY".into(),
        DataType::Enum(_) => "USER-DEFINED".into(),
        other => other.format_type_be(),
    }
}

/// The standard's numeric facts of a type: (precision, radix, scale).
pub fn numeric_facts(ty: &DataType) -> (Option<i32>, Option<i32>, Option<i32>) {
    match ty {
        DataType::Int2 => (Some(16), Some(2), Some(0)),
        DataType::Int4 => (Some(32), Some(2), Some(0)),
        DataType::Int8 => (Some(64), Some(2), Some(0)),
        DataType::Float4 => (Some(24), Some(2), None),
        DataType::Float8 => (Some(53), Some(2), None),
        DataType::Numeric { precision_scale } => match precision_scale {
            Some((p, s)) => (Some(*p as i32), Some(10), Some(*s as i32)),
            None => (None, Some(10), None),
        },
        _ => (None, None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_counts_as_postgres_15() {
        use InformationView::*;
        let counts = [
            (Schemata, 7),
            (Tables, 12),
            (Columns, 44),
            (TableConstraints, 11),
            (KeyColumnUsage, 9),
            (ConstraintColumnUsage, 7),
            (ReferentialConstraints, 9),
            (CheckConstraints, 4),
            (Sequences, 12),
            (Views, 10),
        ];
        for (v, n) in counts {
            assert_eq!(information_view_columns(v).len(), n, "{v:?}");
        }
    }
}
