//! A table's indexes as the system catalogs show them (pg_class, pg_index,
//! pg_constraint, pg_indexes, pg_get_indexdef): its primary key's and its secondary
//! indexes (decision 0035), in one shape.

use sql::TableDef;

/// One index of a table.
pub struct IndexView<'t> {
    pub oid: u32,
    pub name: &'t str,
    pub table: &'t TableDef,
    /// (column, DESC, NULLS FIRST) in key order.
    pub columns: Vec<(usize, bool, bool)>,
    pub unique: bool,
    pub primary: bool,
    /// pg_constraint OID of the PRIMARY KEY or UNIQUE constraint it enforces.
    pub constraint_oid: Option<u32>,
}

/// The indexes of `t`, its primary key's first.
pub fn indexes_of(t: &TableDef) -> Vec<IndexView<'_>> {
    let mut out = Vec::with_capacity(1 + t.indexes.len());
    if let (Some(oid), Some(name), Some(pk)) = (t.pk_index_oid, &t.pk_name, &t.primary_key) {
        out.push(IndexView {
            oid,
            name,
            table: t,
            columns: pk.iter().map(|&c| (c, false, false)).collect(),
            unique: true,
            primary: true,
            constraint_oid: Some(oid + 1),
        });
    }
    out.extend(t.indexes.iter().map(|ix| {
        IndexView {
            oid: ix.oid,
            name: &ix.name,
            table: t,
            columns: ix
                .columns
                .iter()
                .map(|c| (c.column, c.descending, c.nulls_first))
                .collect(),
            unique: ix.unique,
            primary: false,
            constraint_oid: ix.constraint_oid,
        }
    }));
    out
}

/// The index whose OID (`by_constraint`: whose constraint's OID) is `oid`.
pub fn find(
    tables: &[std::sync::Arc<TableDef>],
    oid: u32,
    by_constraint: bool,
) -> Option<IndexView<'_>> {
    tables.iter().find_map(|t| {
        indexes_of(t).into_iter().find(|ix| match by_constraint {
            true => ix.constraint_oid == Some(oid),
            false => ix.oid == oid,
        })
    })
}

impl IndexView<'_> {
    pub fn column_names(&self) -> Vec<&str> {
        self.columns
            .iter()
            .map(|&(c, ..)| self.table.columns[c].name.as_str())
            .collect()
    }

    /// pg_index.indoption of each column: DESC is bit 0, NULLS FIRST bit 1.
    pub fn options(&self) -> Vec<i16> {
        self.columns
            .iter()
            .map(|&(_, desc, nulls_first)| desc as i16 | (nulls_first as i16) << 1)
            .collect()
    }

    /// pg_get_indexdef's text, as PostgreSQL writes it.
    pub fn definition(&self) -> String {
        let columns: Vec<String> = self
            .columns
            .iter()
            .map(|&(c, desc, nulls_first)| {
                let mut s = self.table.columns[c].name.clone();
                // Each direction's default NULLS placement goes unsaid.
                match (desc, nulls_first) {
                    (false, false) | (true, true) => {}
                    (false, true) => s.push_str(" NULLS FIRST"),
                    (true, false) => s.push_str(" DESC NULLS LAST"),
                }
                if desc && nulls_first {
                    s.push_str(" DESC");
                }
                s
            })
            .collect();
        format!(
            "CREATE {}INDEX {} ON public.{} USING btree ({})",
            if self.unique { "UNIQUE " } else { "" },
            self.name,
            self.table.name,
            columns.join(", ")
        )
    }

    /// pg_get_constraintdef's text for its constraint.
    pub fn constraint_definition(&self) -> String {
        let kind = if self.primary {
            "PRIMARY KEY"
        } else {
            "UNIQUE"
        };
        format!("{kind} ({})", self.column_names().join(", "))
    }
}
