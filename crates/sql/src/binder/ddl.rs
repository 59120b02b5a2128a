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
        if let Some(query) = &ct.query {
            return self.create_table_as(ct, query, distribute_by);
        }
        let name = user_object_name(&ct.name)?;
        let mut columns = Vec::new();
        let mut primary_key: Option<Vec<usize>> = None;
        let mut sequences = Vec::new();
        let mut unique = Vec::new();
        // CHECK and FOREIGN KEY constraints in the order written, bound once all columns
        // are known.
        let mut checks = Vec::new();
        let mut foreign_keys = Vec::new();
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
                comment: None,
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
                    ast::ColumnOption::Check(c) => {
                        checks.push((&*c.expr, opt.name.as_ref().or(c.name.as_ref())))
                    }
                    ast::ColumnOption::ForeignKey(fk) => {
                        foreign_keys.push((fk, Some(i), opt.name.as_ref()))
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
                ast::TableConstraint::ForeignKey(fk) => foreign_keys.push((fk, None, None)),
                ast::TableConstraint::Unique(u) => {
                    let c = self.unique_constraint(&name, &columns, u, None, None, &unique)?;
                    unique.push(c);
                }
                ast::TableConstraint::Check(c) => {
                    crate::unsupported_syntax::check_constraint(c)?;
                    checks.push((&*c.expr, c.name.as_ref()));
                }
                other => return Err(unsupported(format!("table constraint {other}"))),
            }
        }
        let mut taken: Vec<String> = unique.iter().map(|u| u.name.clone()).collect();
        let checks = checks
            .into_iter()
            .map(|(expr, constraint)| {
                let c = self.check_constraint(&name, &columns, expr, constraint, (&[], &taken))?;
                taken.push(c.name.clone());
                Ok(c)
            })
            .collect::<PgResult<Vec<_>>>()?;
        let this = super::foreign_key::KeyedTable {
            oid: 0,
            name: &name,
            columns: &columns,
            primary_key: primary_key.as_deref(),
            unique: unique.iter().map(|u| u.columns.clone()).collect(),
        };
        let foreign_keys = foreign_keys
            .into_iter()
            .map(|(fk, column, constraint)| {
                let f = self.foreign_key(&this, true, fk, column, constraint, &taken)?;
                taken.push(f.name.clone());
                Ok(f)
            })
            .collect::<PgResult<Vec<_>>>()?;
        let fillfactor = table_fillfactor(ct)?;
        let distribution = match distribute_by {
            Some(clause) => distribution(clause, &columns)?,
            None => Distribution::default_for(&columns, primary_key.as_deref()),
        };
        if let Some(key) = &primary_key {
            distribution.check_key(key)?;
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
            checks,
            foreign_keys,
        }))
    }

    pub(super) fn alter_table(&mut self, at: &ast::AlterTable) -> PgResult<Statement> {
        let table = self.altered_table(&object_name_parts(&at.name))?;
        let mut actions = Vec::with_capacity(at.operations.len());
        for op in &at.operations {
            self.alter_action(&table, op, &mut actions)?;
        }
        Ok(Statement::AlterTable(AlterTable { table, actions }))
    }

    /// Binds one ALTER TABLE operation onto `actions` (a column's inline PRIMARY KEY or
    /// UNIQUE becomes an action of its own, after the column's).
    fn alter_action(
        &mut self,
        table: &TableDef,
        op: &ast::AlterTableOperation,
        actions: &mut Vec<AlterAction>,
    ) -> PgResult<()> {
        use ast::AlterTableOperation as Op;
        let action = match op {
            Op::AddColumn {
                column_keyword: _,
                if_not_exists,
                column_def,
                column_position: None,
            } => return self.add_column(column_def, *if_not_exists, actions),
            Op::DropColumn {
                has_column_keyword: _,
                column_names,
                if_exists,
                drop_behavior: _,
            } => {
                for name in column_names {
                    actions.push(AlterAction::DropColumn {
                        name: ident_name(name),
                        if_exists: *if_exists,
                    });
                }
                return Ok(());
            }
            Op::RenameColumn {
                old_column_name,
                new_column_name,
            } => AlterAction::RenameColumn {
                from: ident_name(old_column_name),
                to: ident_name(new_column_name),
            },
            Op::RenameTable { table_name } => {
                let (ast::RenameTableNameKind::To(name) | ast::RenameTableNameKind::As(name)) =
                    table_name;
                AlterAction::RenameTable(object_name_parts(name).pop().unwrap_or_default())
            }
            Op::AlterColumn { column_name, op } => {
                let column = ident_name(column_name);
                let ty = column_type(table, actions, &column)?;
                match op {
                    ast::AlterColumnOperation::SetNotNull => AlterAction::SetNotNull {
                        column,
                        not_null: true,
                    },
                    ast::AlterColumnOperation::DropNotNull => AlterAction::SetNotNull {
                        column,
                        not_null: false,
                    },
                    ast::AlterColumnOperation::SetDefault { value } => {
                        self.check_default(value, &ty)?;
                        AlterAction::SetDefault {
                            column,
                            default: Some(value.to_string()),
                        }
                    }
                    ast::AlterColumnOperation::DropDefault => AlterAction::SetDefault {
                        column,
                        default: None,
                    },
                    ast::AlterColumnOperation::SetDataType {
                        data_type,
                        using: None,
                        had_set: _,
                    } => {
                        let to = self.data_type(data_type)?;
                        if !types::cast::can_assign(&ty, &to) {
                            return Err(PgError::new(
                                codes::DATATYPE_MISMATCH,
                                format!(
                                    "column \"{column}\" cannot be cast automatically to type {to}"
                                ),
                            )
                            .with_hint(format!(
                                "You might need to specify \"USING {column}::{to}\"."
                            )));
                        }
                        AlterAction::SetType {
                            column,
                            ty: DataTypeDef::from_type(&to),
                        }
                    }
                    other => return Err(unsupported(format!("ALTER COLUMN {other}"))),
                }
            }
            Op::AddConstraint {
                constraint,
                not_valid: false,
            } => match constraint {
                ast::TableConstraint::PrimaryKey(pk) => {
                    crate::unsupported_syntax::primary_key(pk)?;
                    let columns = key_column_names(&pk.columns)?;
                    // Refused early where the key's columns exist already (a second key is
                    // refused as PostgreSQL does, 42P16, when it runs).
                    let existing: Option<Vec<usize>> =
                        columns.iter().map(|c| table.column_index(c)).collect();
                    if let (Some(key), None) = (existing, &table.primary_key) {
                        table.distribution.check_key(&key)?;
                    }
                    AlterAction::AddPrimaryKey {
                        columns,
                        name: pk.name.as_ref().map(ident_name),
                    }
                }
                ast::TableConstraint::Unique(u) => {
                    crate::unsupported_syntax::unique_constraint(u)?;
                    AlterAction::AddUnique {
                        columns: key_column_names(&u.columns)?,
                        name: u.name.as_ref().map(ident_name),
                    }
                }
                ast::TableConstraint::ForeignKey(fk) => {
                    let mut taken = super::check::constraint_names(table);
                    taken.extend(actions.iter().filter_map(|a| match a {
                        AlterAction::AddForeignKey(f) => Some(f.name.clone()),
                        AlterAction::AddCheck { name, .. } => Some(name.clone()),
                        _ => None,
                    }));
                    let this = super::foreign_key::KeyedTable::stored(table);
                    AlterAction::AddForeignKey(
                        self.foreign_key(&this, false, fk, None, None, &taken)?,
                    )
                }
                ast::TableConstraint::Check(c) => {
                    crate::unsupported_syntax::check_constraint(c)?;
                    let existing = super::check::constraint_names(table);
                    let earlier: Vec<String> = actions
                        .iter()
                        .filter_map(|a| match a {
                            AlterAction::AddCheck { name, .. } => Some(name.clone()),
                            _ => None,
                        })
                        .collect();
                    let check = self.check_constraint(
                        &table.name,
                        &table.columns,
                        &c.expr,
                        c.name.as_ref(),
                        (&existing, &earlier),
                    )?;
                    AlterAction::AddCheck {
                        name: check.name,
                        expr: check.expr,
                    }
                }
                other => return Err(unsupported(format!("ALTER TABLE ADD {other}"))),
            },
            Op::DropConstraint {
                if_exists,
                name,
                drop_behavior: _,
            } => AlterAction::DropConstraint {
                name: ident_name(name),
                if_exists: *if_exists,
            },
            other => return Err(unsupported(format!("ALTER TABLE {other}"))),
        };
        actions.push(action);
        Ok(())
    }

    fn add_column(
        &mut self,
        col: &ast::ColumnDef,
        if_not_exists: bool,
        actions: &mut Vec<AlterAction>,
    ) -> PgResult<()> {
        crate::unsupported_syntax::column_def(col)?;
        if crate::sequence::serial_type(&col.data_type.to_string().to_ascii_lowercase()).is_some() {
            return Err(unsupported("ALTER TABLE ADD COLUMN of a serial column"));
        }
        let ty = self.data_type(&col.data_type)?;
        let mut column = ColumnDef {
            name: ident_name(&col.name),
            ty: DataTypeDef::from_type(&ty),
            not_null: false,
            default: None,
            comment: None,
        };
        let mut fill = None;
        let mut constraints = Vec::new();
        for opt in &col.options {
            match &opt.option {
                ast::ColumnOption::NotNull => column.not_null = true,
                ast::ColumnOption::Null => column.not_null = false,
                ast::ColumnOption::Default(e) => {
                    fill = Some(self.check_default(e, &ty)?);
                    column.default = Some(e.to_string());
                }
                ast::ColumnOption::PrimaryKey(_) => {
                    column.not_null = true;
                    constraints.push(AlterAction::AddPrimaryKey {
                        columns: vec![column.name.clone()],
                        name: opt.name.as_ref().map(ident_name),
                    });
                }
                ast::ColumnOption::Unique(_) => constraints.push(AlterAction::AddUnique {
                    columns: vec![column.name.clone()],
                    name: opt.name.as_ref().map(ident_name),
                }),
                ast::ColumnOption::Generated { .. } => {
                    return Err(unsupported("ALTER TABLE ADD COLUMN of an identity column"))
                }
                ast::ColumnOption::Check(_) => {
                    return Err(unsupported("ALTER TABLE ADD COLUMN … CHECK"))
                }
                ast::ColumnOption::ForeignKey(_) => {
                    return Err(unsupported("ALTER TABLE ADD COLUMN … REFERENCES"))
                }
                // Refused by unsupported_syntax::column_def.
                _ => {}
            }
        }
        actions.push(AlterAction::AddColumn {
            column,
            if_not_exists,
            fill,
        });
        actions.extend(constraints);
        Ok(())
    }

    /// A column default: no subquery, and it binds and assigns to the column's type.
    fn check_default(&mut self, e: &ast::Expr, ty: &DataType) -> PgResult<Expr> {
        if has_subquery(e) {
            return Err(PgError::new(
                codes::FEATURE_NOT_SUPPORTED,
                "cannot use subquery in DEFAULT expression",
            ));
        }
        self.assign_expr(e, &Scope::default(), ty)
    }
}

/// The type of column `name` as the earlier actions of an ALTER TABLE leave it (42703
/// if there is none).
fn column_type(table: &TableDef, earlier: &[AlterAction], name: &str) -> PgResult<DataType> {
    let mut ty = table
        .column_index(name)
        .map(|i| table.columns[i].ty.clone());
    for action in earlier {
        match action {
            AlterAction::AddColumn { column, .. } if column.name == name => {
                ty = Some(column.ty.clone())
            }
            AlterAction::SetType { column, ty: to } if column == name => ty = Some(to.clone()),
            _ => {}
        }
    }
    ty.map(|t| t.to_type()).ok_or_else(|| {
        PgError::new(
            codes::UNDEFINED_COLUMN,
            format!(
                "column \"{name}\" of relation \"{}\" does not exist",
                table.name
            ),
        )
    })
}

/// The column names of a key (PRIMARY KEY or UNIQUE); expressions are refused.
fn key_column_names(columns: &[ast::IndexColumn]) -> PgResult<Vec<String>> {
    columns
        .iter()
        .map(|c| match &c.column.expr {
            ast::Expr::Identifier(ident) => Ok(ident_name(ident)),
            _ => Err(unsupported("expression indexes")),
        })
        .collect()
}

/// The distribution a `DISTRIBUTE BY` clause names, its column resolved and checked.
pub(super) fn distribution(clause: &DistributeBy, columns: &[ColumnDef]) -> PgResult<Distribution> {
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
