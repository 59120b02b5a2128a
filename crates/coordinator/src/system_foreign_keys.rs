//! A table's FOREIGN KEY constraints as the system catalogs show them (pg_constraint,
//! pg_get_constraintdef, information_schema).

use sql::catalog::{ForeignKeyDef, ReferentialAction};
use sql::deparse::quote_ident;
use sql::TableDef;
use std::sync::Arc;

/// One foreign key, with the table it references.
pub struct ForeignKeyView<'t> {
    pub table: &'t TableDef,
    pub fk: &'t ForeignKeyDef,
    pub parent: Arc<TableDef>,
}

/// The foreign keys of `t` whose referenced table is among `tables`.
pub fn foreign_keys_of<'t>(tables: &[Arc<TableDef>], t: &'t TableDef) -> Vec<ForeignKeyView<'t>> {
    t.foreign_keys
        .iter()
        .filter_map(|fk| {
            let parent = tables.iter().find(|p| p.oid == fk.parent)?.clone();
            Some(ForeignKeyView {
                table: t,
                fk,
                parent,
            })
        })
        .collect()
}

/// Every foreign key of `tables`.
pub fn all(tables: &[Arc<TableDef>]) -> Vec<ForeignKeyView<'_>> {
    tables
        .iter()
        .flat_map(|t| foreign_keys_of(tables, t))
        .collect()
}

/// The foreign key whose OID is `oid`.
pub fn find(tables: &[Arc<TableDef>], oid: u32) -> Option<ForeignKeyView<'_>> {
    all(tables).into_iter().find(|f| f.fk.oid == oid)
}

/// Whether a foreign key references `t` or belongs to it (pg_class.relhastriggers:
/// PostgreSQL keeps foreign keys with triggers, and psql looks for them only then).
pub fn has_triggers(tables: &[Arc<TableDef>], t: &TableDef) -> bool {
    !t.foreign_keys.is_empty()
        || tables
            .iter()
            .any(|c| c.foreign_keys.iter().any(|fk| fk.parent == t.oid))
}

fn names(t: &TableDef, columns: &[usize]) -> String {
    columns
        .iter()
        .map(|&c| quote_ident(&t.columns[c].name))
        .collect::<Vec<_>>()
        .join(", ")
}

impl ForeignKeyView<'_> {
    /// pg_constraint.conkey and confkey (attribute numbers).
    pub fn attnums(&self) -> (Vec<i16>, Vec<i16>) {
        let numbers = |cols: &[usize]| cols.iter().map(|&c| c as i16 + 1).collect();
        (numbers(&self.fk.columns), numbers(&self.fk.parent_columns))
    }

    /// The referenced key's columns in its own order (the primary key's or the unique
    /// index's).
    pub fn referenced_key(&self) -> Vec<usize> {
        let index = self.index_oid();
        if self.parent.pk_index_oid == Some(index) {
            return self.parent.primary_key.clone().unwrap_or_default();
        }
        (self.parent.indexes.iter())
            .find(|i| i.oid == index)
            .map(|i| i.columns.iter().map(|c| c.column).collect())
            .unwrap_or_default()
    }

    /// pg_constraint.conindid: the referenced key's index.
    pub fn index_oid(&self) -> u32 {
        let mut wanted = self.fk.parent_columns.clone();
        wanted.sort_unstable();
        let same = |cols: &mut Vec<usize>| {
            cols.sort_unstable();
            *cols == wanted
        };
        if let Some(mut pk) = self.parent.primary_key.clone() {
            if same(&mut pk) {
                return self.parent.pk_index_oid.unwrap_or(0);
            }
        }
        (self.parent.indexes.iter())
            .find(|i| i.unique && same(&mut i.columns.iter().map(|c| c.column).collect()))
            .map_or(0, |i| i.oid)
    }

    /// The unique constraint the referenced columns are (information_schema's
    /// unique_constraint_name): the primary key's or a UNIQUE constraint's name.
    pub fn unique_constraint_name(&self) -> Option<String> {
        let index = self.index_oid();
        if self.parent.pk_index_oid == Some(index) {
            return self.parent.pk_name.clone();
        }
        (self.parent.indexes.iter())
            .find(|i| i.oid == index && i.constraint_oid.is_some())
            .map(|i| i.name.clone())
    }

    /// pg_get_constraintdef's text, as ruleutils writes it.
    pub fn definition(&self) -> String {
        let mut def = format!(
            "FOREIGN KEY ({}) REFERENCES {}({})",
            names(self.table, &self.fk.columns),
            quote_ident(&self.parent.name),
            names(&self.parent, &self.fk.parent_columns),
        );
        for (what, action) in [("UPDATE", self.fk.on_update), ("DELETE", self.fk.on_delete)] {
            if action != ReferentialAction::NoAction {
                def.push_str(&format!(" ON {what} {}", action.sql()));
            }
        }
        def
    }
}
