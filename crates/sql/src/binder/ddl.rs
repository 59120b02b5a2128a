//! CREATE TABLE and ALTER TABLE.

use super::*;
use crate::catalog::{is_hashable, Distribution};
use crate::distribute_by::DistributeBy;

impl<'a> Binder<'a> {
    pub(super) fn create_table(
        &mut self,
        ct: &ast::CreateTable,
        distribute_by: Option<&DistributeBy>,
    ) -> PgResult<Statement> {
        crate::unsupported_syntax::create_table(ct)?;
        let name = object_name_parts(&ct.name).pop().unwrap_or_default();
        let mut columns = Vec::new();
        let mut primary_key: Option<Vec<usize>> = None;
        let mut sequences = Vec::new();
        let mut unique = Vec::new();
        for (i, col) in ct.columns.iter().enumerate() {
            crate::unsupported_syntax::column_def(col)?;
            let serial =
                crate::sequence::serial_type(&col.data_type.to_string().to_ascii_lowercase());
            let ty = match &serial {
                Some(ty) => ty.clone(),
                None => self.data_type(&col.data_type)?,
            };
            let mut def = ColumnDef {
                name: ident_name(&col.name),
                ty: DataTypeDef::from_type(&ty),
                not_null: false,
                default: None,
            };
            if columns.iter().any(|c: &ColumnDef| c.name == def.name) {
                return Err(PgError::new(
                    codes::DUPLICATE_COLUMN,
                    format!("column \"{}\" specified more than once", def.name),
                ));
            }
            for opt in &col.options {
                match &opt.option {
                    ast::ColumnOption::NotNull => def.not_null = true,
                    ast::ColumnOption::Null => def.not_null = false,
                    ast::ColumnOption::Default(e) => {
                        if has_subquery(e) {
                            return Err(PgError::new(
                                codes::FEATURE_NOT_SUPPORTED,
                                "cannot use subquery in DEFAULT expression",
                            ));
                        }
                        // Validate now: the default must bind and be assignable.
                        self.assign_expr(e, &Scope::default(), &ty)?;
                        def.default = Some(e.to_string());
                    }
                    ast::ColumnOption::PrimaryKey(_) => {
                        if primary_key.is_some() {
                            return Err(PgError::new(
                                codes::INVALID_TABLE_DEFINITION,
                                format!(
                                    "multiple primary keys for table \"{name}\" are not allowed"
                                ),
                            ));
                        }
                        primary_key = Some(vec![i]);
                        def.not_null = true;
                    }
                    ast::ColumnOption::Unique(u) => {
                        let mut all = columns.clone();
                        all.push(def.clone());
                        let c = self.unique_constraint(
                            &name,
                            &all,
                            u,
                            Some(i),
                            opt.name.as_ref(),
                            &unique,
                        )?;
                        unique.push(c);
                    }
                    // Refused by unsupported_syntax::column_def, or identity (below).
                    _ => {}
                }
            }
            sequences.extend(self.column_sequence(&name, i, col, serial.as_ref(), &mut def)?);
            columns.push(def);
        }
        for c in &ct.constraints {
            match c {
                ast::TableConstraint::PrimaryKey(pk) => {
                    crate::unsupported_syntax::primary_key(pk)?;
                    if primary_key.is_some() {
                        return Err(PgError::new(
                            codes::INVALID_TABLE_DEFINITION,
                            format!("multiple primary keys for table \"{name}\" are not allowed"),
                        ));
                    }
                    let cols = pk
                        .columns
                        .iter()
                        .map(|ic| {
                            let n = ic
                                .column
                                .expr
                                .to_string()
                                .trim_matches('"')
                                .to_ascii_lowercase();
                            columns.iter().position(|c| c.name == n).ok_or_else(|| {
                                PgError::new(
                                    codes::UNDEFINED_COLUMN,
                                    format!("column \"{n}\" named in key does not exist"),
                                )
                            })
                        })
                        .collect::<PgResult<Vec<_>>>()?;
                    for &i in &cols {
                        columns[i].not_null = true;
                    }
                    primary_key = Some(cols);
                }
                ast::TableConstraint::ForeignKey(_) => return Err(unsupported("foreign keys")),
                ast::TableConstraint::Unique(u) => {
                    let c = self.unique_constraint(&name, &columns, u, None, None, &unique)?;
                    unique.push(c);
                }
                ast::TableConstraint::Check(_) => return Err(unsupported("CHECK constraints")),
                other => return Err(unsupported(format!("table constraint {other}"))),
            }
        }
        let fillfactor = table_fillfactor(ct)?;
        let distribution = match distribute_by {
            Some(clause) => distribution(clause, &columns)?,
            None => Distribution::default_for(&columns, primary_key.as_deref()),
        };
        if let Some(key) = &primary_key {
            check_key_placement(distribution, key)?;
        }
        Ok(Statement::CreateTable(CreateTable {
            name,
            if_not_exists: ct.if_not_exists,
            columns,
            primary_key,
            fillfactor,
            distribution,
            sequences,
            unique,
        }))
    }

    pub(super) fn alter_table(&mut self, at: &ast::AlterTable) -> PgResult<Statement> {
        let table = self.table_by_name(&object_name_parts(&at.name))?;
        match at.operations.as_slice() {
            [ast::AlterTableOperation::AddConstraint {
                constraint,
                not_valid: false,
            }] => match constraint {
                ast::TableConstraint::PrimaryKey(pk) => {
                    crate::unsupported_syntax::primary_key(pk)?;
                    let columns = pk
                        .columns
                        .iter()
                        .map(|ic| {
                            let n = ic
                                .column
                                .expr
                                .to_string()
                                .trim_matches('"')
                                .to_ascii_lowercase();
                            table.column_index(&n).ok_or_else(|| {
                                PgError::new(
                                    codes::UNDEFINED_COLUMN,
                                    format!(
                                        "column \"{n}\" of relation \"{}\" does not exist",
                                        table.name
                                    ),
                                )
                            })
                        })
                        .collect::<PgResult<Vec<_>>>()?;
                    // A second key is refused as PostgreSQL does (42P16) when it runs.
                    if table.primary_key.is_none() {
                        check_key_placement(table.distribution, &columns)?;
                    }
                    let constraint_name = pk.name.as_ref().map(ident_name);
                    Ok(Statement::AddPrimaryKey {
                        table,
                        columns,
                        constraint_name,
                    })
                }
                ast::TableConstraint::ForeignKey(_) => Err(unsupported("foreign keys")),
                other => Err(unsupported(format!("ALTER TABLE ADD {other}"))),
            },
            _ => Err(unsupported("this ALTER TABLE form")),
        }
    }
}

/// The distribution a `DISTRIBUTE BY` clause names, its column resolved and checked.
fn distribution(clause: &DistributeBy, columns: &[ColumnDef]) -> PgResult<Distribution> {
    Ok(match clause {
        DistributeBy::Replication => Distribution::Replication,
        DistributeBy::RoundRobin => Distribution::RoundRobin,
        DistributeBy::Hash { column, position } => {
            let index = columns
                .iter()
                .position(|c| c.name == *column)
                .ok_or_else(|| {
                    PgError::new(
                        codes::UNDEFINED_COLUMN,
                        format!("column \"{column}\" named in DISTRIBUTE BY does not exist"),
                    )
                    .with_position(*position)
                })?;
            let ty = columns[index].ty.to_type();
            if !is_hashable(&ty) {
                return Err(PgError::new(
                    codes::FEATURE_NOT_SUPPORTED,
                    format!("column \"{column}\" is not of a hash-distributable type"),
                )
                .with_detail(format!(
                    "Values of type {ty} cannot be hashed for placement."
                ))
                .with_position(*position));
            }
            Distribution::Hash { column: index }
        }
    })
}

/// Each datanode enforces a primary key on its own rows only, so all rows that could
/// share a key must live on one datanode: a hash-distributed table's key contains the
/// hash column, and a round-robin table has none (Postgres-XL's rule and messages).
fn check_key_placement(distribution: Distribution, key: &[usize]) -> PgResult<()> {
    let refuse = |message: &str| Err(PgError::new(codes::FEATURE_NOT_SUPPORTED, message));
    match distribution {
        Distribution::Hash { column } if !key.contains(&column) => {
            refuse("Unique index of partitioned table must contain the hash distribution column.")
        }
        Distribution::RoundRobin => {
            refuse("Cannot locally enforce a unique index on round robin distributed table.")
        }
        Distribution::Hash { .. } | Distribution::Replication => Ok(()),
    }
}

/// The storage parameters of `WITH (…)`: fillfactor is kept; the others (autovacuum
/// and TOAST tuning) only steer PostgreSQL's maintenance and change no result.
pub(super) fn table_fillfactor(ct: &ast::CreateTable) -> PgResult<Option<u32>> {
    let ast::CreateTableOptions::With(options) = &ct.table_options else {
        return Ok(None);
    };
    let mut fillfactor = None;
    for option in options {
        let ast::SqlOption::KeyValue { key, value } = option else {
            return Err(syntax(format!("syntax error at or near \"{option}\"")));
        };
        let name = ident_name(key);
        if name == "fillfactor" {
            let ff = value.to_string().parse::<u32>().map_err(|_| {
                PgError::new(
                    codes::INVALID_PARAMETER_VALUE,
                    format!("invalid value for integer option \"fillfactor\": {value}"),
                )
            })?;
            if !(10..=100).contains(&ff) {
                return Err(PgError::new(
                    codes::INVALID_PARAMETER_VALUE,
                    format!("value {ff} out of bounds for option \"fillfactor\""),
                )
                .with_detail("Valid values are between \"10\" and \"100\"."));
            }
            fillfactor = Some(ff);
        } else if !(name.starts_with("autovacuum_")
            || name.starts_with("toast.")
            || matches!(
                name.as_str(),
                "toast_tuple_target"
                    | "parallel_workers"
                    | "vacuum_index_cleanup"
                    | "vacuum_truncate"
                    | "user_catalog_table"
            ))
        {
            return Err(PgError::new(
                codes::INVALID_PARAMETER_VALUE,
                format!("unrecognized parameter \"{name}\""),
            ));
        }
    }
    Ok(fillfactor)
}
