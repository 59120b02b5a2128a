//! FOREIGN KEY constraints: the referencing columns and the referenced table's key
//! resolved and checked as PostgreSQL checks them (42830, 42804), PostgreSQL's names
//! for unnamed ones (`t_a_b_fkey`), and the foreign keys a statement writing a table
//! keeps, bound into its plan (`plan::ForeignKeys`).

use super::*;
use crate::catalog::{ForeignKeyDef, ReferentialAction};

/// A table as a foreign key sees it, the referencing or the referenced one: stored, or
/// being created by the statement (OID 0 until it is created).
pub(super) struct KeyedTable<'t> {
    pub oid: u32,
    pub name: &'t str,
    pub columns: &'t [ColumnDef],
    pub primary_key: Option<&'t [usize]>,
    /// The column sets of its unique constraints and unique indexes.
    pub unique: Vec<Vec<usize>>,
}

impl<'t> KeyedTable<'t> {
    pub fn stored(t: &'t TableDef) -> Self {
        KeyedTable {
            oid: t.oid,
            name: &t.name,
            columns: &t.columns,
            primary_key: t.primary_key.as_deref(),
            unique: t
                .indexes
                .iter()
                .filter(|i| i.unique)
                .map(|i| i.columns.iter().map(|c| c.column).collect())
                .collect(),
        }
    }
}

fn no_column(name: &str) -> PgError {
    PgError::new(
        codes::UNDEFINED_COLUMN,
        format!("column \"{name}\" referenced in foreign key constraint does not exist"),
    )
}

fn invalid_fk(message: String) -> PgError {
    PgError::new(codes::INVALID_FOREIGN_KEY, message)
}

fn action(a: &Option<ast::ReferentialAction>) -> ReferentialAction {
    match a {
        None | Some(ast::ReferentialAction::NoAction) => ReferentialAction::NoAction,
        Some(ast::ReferentialAction::Restrict) => ReferentialAction::Restrict,
        Some(ast::ReferentialAction::Cascade) => ReferentialAction::Cascade,
        Some(ast::ReferentialAction::SetNull) => ReferentialAction::SetNull,
        Some(ast::ReferentialAction::SetDefault) => ReferentialAction::SetDefault,
    }
}

/// Whether a referencing column of type `child` can hold the referenced column's
/// (`parent`) values as PostgreSQL's foreign keys allow: the key's equality operator
/// takes it (same type, an integer for an integer, text for text) or it is implicitly
/// cast to the key's type.
fn comparable(child: &DataType, parent: &DataType) -> bool {
    use DataType as T;
    let integer = |t: &DataType| matches!(t, T::Int2 | T::Int4 | T::Int8);
    let text = |t: &DataType| matches!(t, T::Text | T::Varchar { .. });
    child.oid() == parent.oid()
        || (integer(child) && integer(parent))
        || (text(child) && text(parent))
        || types::cast::can_coerce_implicitly(child, parent)
}

impl<'a> Binder<'a> {
    /// A FOREIGN KEY of table `child`: on `column` for a column's `REFERENCES`, else
    /// on the constraint's columns; the referenced table is `child` itself where it
    /// names the table being created (`creating`). Named as given (42710 if `taken` has
    /// the name) or as PostgreSQL names it, `child_a_b_fkey`, numbered past `taken`.
    pub(super) fn foreign_key(
        &mut self,
        child: &KeyedTable,
        creating: bool,
        fk: &ast::ForeignKeyConstraint,
        column: Option<usize>,
        name: Option<&ast::Ident>,
        taken: &[String],
    ) -> PgResult<ForeignKeyDef> {
        crate::unsupported_syntax::foreign_key(fk)?;
        let columns = match column {
            Some(c) => vec![c],
            None => fk
                .columns
                .iter()
                .map(|c| {
                    let n = ident_name(c);
                    child
                        .columns
                        .iter()
                        .position(|col| col.name == n)
                        .ok_or_else(|| no_column(&n))
                })
                .collect::<PgResult<Vec<_>>>()?,
        };
        let parts = object_name_parts(&fk.foreign_table);
        let stored;
        let parent = match parts.last() {
            Some(n) if creating && n == child.name && parts.len() == 1 => child,
            _ => {
                stored = self.table_by_name(&parts)?;
                if stored.oid == child.oid && !creating {
                    child
                } else {
                    &KeyedTable::stored(&stored)
                }
            }
        };
        let parent_columns = if fk.referred_columns.is_empty() {
            parent.primary_key.map(<[usize]>::to_vec).ok_or_else(|| {
                PgError::new(
                    codes::UNDEFINED_OBJECT,
                    format!(
                        "there is no primary key for referenced table \"{}\"",
                        parent.name
                    ),
                )
            })?
        } else {
            fk.referred_columns
                .iter()
                .map(|c| {
                    let n = ident_name(c);
                    (parent.columns.iter().position(|col| col.name == n))
                        .ok_or_else(|| no_column(&n))
                })
                .collect::<PgResult<Vec<_>>>()?
        };
        let same_set = |key: &[usize]| {
            let mut a = key.to_vec();
            let mut b = parent_columns.clone();
            a.sort_unstable();
            b.sort_unstable();
            b.dedup();
            a == b && b.len() == parent_columns.len()
        };
        if !fk.referred_columns.is_empty() {
            let mut distinct = parent_columns.clone();
            distinct.sort_unstable();
            distinct.dedup();
            if distinct.len() != parent_columns.len() {
                return Err(invalid_fk(
                    "foreign key referenced-columns list must not contain duplicates".into(),
                ));
            }
            if !parent.primary_key.is_some_and(same_set)
                && !parent.unique.iter().any(|u| same_set(u))
            {
                return Err(invalid_fk(format!(
                    "there is no unique constraint matching given keys for referenced table \"{}\"",
                    parent.name
                )));
            }
        }
        if parent_columns.len() != columns.len() {
            return Err(invalid_fk(
                "number of referencing and referenced columns for foreign key disagree".into(),
            ));
        }
        let names: Vec<&str> = columns
            .iter()
            .map(|&c| child.columns[c].name.as_str())
            .collect();
        let name = match name.or(fk.name.as_ref()).map(ident_name) {
            Some(n) if taken.contains(&n) => {
                return Err(PgError::new(
                    codes::DUPLICATE_OBJECT,
                    format!(
                        "constraint \"{n}\" for relation \"{}\" already exists",
                        child.name
                    ),
                ))
            }
            Some(n) => n,
            None => crate::index::default_name(child.name, &names, "fkey", &|n| {
                taken.iter().any(|t| t == n)
            }),
        };
        for (&c, &p) in columns.iter().zip(&parent_columns) {
            let (ct, pt) = (
                child.columns[c].ty.to_type(),
                parent.columns[p].ty.to_type(),
            );
            if !comparable(&ct, &pt) {
                return Err(PgError::new(
                    codes::DATATYPE_MISMATCH,
                    format!("foreign key constraint \"{name}\" cannot be implemented"),
                )
                .with_detail(format!(
                    "Key columns \"{}\" and \"{}\" are of incompatible types: {} and {}.",
                    child.columns[c].name, parent.columns[p].name, ct, pt
                )));
            }
        }
        let on_update = action(&fk.on_update);
        let on_delete = action(&fk.on_delete);
        Ok(ForeignKeyDef {
            oid: 0,
            name,
            columns,
            parent: parent.oid,
            parent_columns,
            on_update,
            on_delete,
        })
    }

    /// The foreign keys a statement writing `table` keeps: its own whose columns it
    /// writes (`parents`: an INSERT's or COPY's all; None: every column written), and
    /// those referencing it whose referenced columns it changes (`children`: a DELETE's
    /// all) with the action for `deleting` or updating.
    pub(super) fn foreign_keys(
        &self,
        table: &TableDef,
        parents: Option<&[usize]>,
        children: Option<(bool, Option<&[usize]>)>,
    ) -> PgResult<Arc<ForeignKeys>> {
        let writes = |cols: &[usize], written: Option<&[usize]>| {
            written.is_none_or(|w| cols.iter().any(|c| w.contains(c)))
        };
        let mut keys = ForeignKeys::default();
        if let Some(written) = parents {
            for fk in &table.foreign_keys {
                if !writes(&fk.columns, Some(written)) {
                    continue;
                }
                let parent = match fk.parent {
                    oid if oid == table.oid => Arc::new(table.clone()),
                    oid => self.catalog.table_by_oid(oid).ok_or_else(|| {
                        PgError::internal(format!("foreign key {} lost its table", fk.name))
                    })?,
                };
                keys.parents.push(parent_key(fk, parent)?);
            }
        }
        if let Some((deleting, changed)) = children {
            for child in self.catalog.referencing(table.oid) {
                for fk in child.foreign_keys.iter().filter(|f| f.parent == table.oid) {
                    if !writes(&fk.parent_columns, changed) {
                        continue;
                    }
                    keys.children.push(ChildReference {
                        name: fk.name.clone(),
                        child: child.clone(),
                        columns: fk.columns.clone(),
                        parent_columns: fk.parent_columns.clone(),
                        action: if deleting { fk.on_delete } else { fk.on_update },
                    });
                }
            }
        }
        Ok(Arc::new(keys))
    }
}

impl<'a> Binder<'a> {
    /// The tables TRUNCATE empties: those named and (`cascade`) the tables referencing
    /// them, transitively; without CASCADE a table referenced from one not truncated
    /// is refused as PostgreSQL refuses it (0A000).
    pub(super) fn truncated_with_references(
        &self,
        mut tables: Vec<Arc<TableDef>>,
        cascade: bool,
    ) -> PgResult<Vec<Arc<TableDef>>> {
        let mut i = 0;
        while i < tables.len() {
            let parent = tables[i].clone();
            for child in self.catalog.referencing(parent.oid) {
                if tables.iter().any(|t| t.oid == child.oid) {
                    continue;
                }
                if !cascade {
                    return Err(PgError::new(
                        codes::FEATURE_NOT_SUPPORTED,
                        "cannot truncate a table referenced in a foreign key constraint",
                    )
                    .with_detail(format!(
                        "Table \"{}\" references \"{}\".",
                        child.name, parent.name
                    ))
                    .with_hint(format!(
                        "Truncate table \"{}\" at the same time, or use TRUNCATE ... CASCADE.",
                        child.name
                    )));
                }
                tables.push(child);
            }
            i += 1;
        }
        Ok(tables)
    }

    /// An UPDATE's foreign keys: those whose columns its SET assigns, on either side.
    pub(super) fn update_foreign_keys(
        &self,
        table: &TableDef,
        assignments: &[(usize, Expr)],
    ) -> PgResult<Arc<ForeignKeys>> {
        let assigned: Vec<usize> = assignments.iter().map(|(c, _)| *c).collect();
        self.foreign_keys(table, Some(&assigned), Some((false, Some(&assigned))))
    }
}

/// How a row's values of `fk`'s columns find the parent row.
fn parent_key(fk: &ForeignKeyDef, parent: Arc<TableDef>) -> PgResult<ParentKey> {
    let position = |col: &usize| fk.parent_columns.iter().position(|p| p == col);
    let key_of = |cols: &[usize]| -> Option<Vec<usize>> {
        (cols.len() == fk.parent_columns.len())
            .then(|| cols.iter().map(position).collect())
            .flatten()
    };
    let lookup = match parent.primary_key.as_deref().and_then(key_of) {
        Some(key) => ParentLookup::PrimaryKey { key },
        None => parent
            .indexes
            .iter()
            .enumerate()
            .filter(|(_, i)| i.unique)
            .find_map(|(index, i)| {
                let cols: Vec<usize> = i.columns.iter().map(|c| c.column).collect();
                key_of(&cols).map(|key| ParentLookup::UniqueIndex { index, key })
            })
            .ok_or_else(|| {
                PgError::internal(format!("foreign key {} lost its unique key", fk.name))
            })?,
    };
    let types = fk
        .parent_columns
        .iter()
        .map(|&c| parent.columns[c].ty.to_type())
        .collect();
    Ok(ParentKey {
        name: fk.name.clone(),
        columns: fk.columns.clone(),
        parent,
        lookup,
        types,
    })
}
