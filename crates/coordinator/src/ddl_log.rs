//! The one way DDL changes the catalog (tables, their indexes, sequences, views, roles): through the
//! transaction's `DdlLog`, which remembers each record as it was before, so that a
//! ROLLBACK (or ROLLBACK TO SAVEPOINT, or the end of a failed block) puts it back and
//! drops the storage the undone change had created, and which keeps the storage a
//! change released (a dropped table's, a truncated or rewritten table's old relation)
//! until the transaction commits.
//!
//! The changes themselves are written to the metadata service as they run, so other
//! sessions see them before the commit (docs/decisions/0038-transactional-ddl.md).

use crate::server::Shared;
use distribution::RelPlacement;
use pgerror::PgResult;
use sql::catalog::Catalog;
use sql::role::RoleDef;
use sql::sequence::SequenceDef;
use sql::view::ViewDef;
use sql::TableDef;
use std::sync::Arc;

#[derive(Default)]
pub struct DdlLog {
    entries: Vec<Entry>,
}

enum Entry {
    /// A table record changed: as it was (None: it did not exist).
    Table {
        oid: u32,
        before: Option<Arc<TableDef>>,
    },
    Sequence {
        oid: u32,
        before: Option<Arc<SequenceDef>>,
    },
    View {
        oid: u32,
        before: Option<Arc<ViewDef>>,
    },
    Role {
        oid: u32,
        before: Option<Arc<RoleDef>>,
    },
    /// Storage no record refers to any more: dropped when the transaction commits.
    Release(u64),
    /// Storage the transaction's DDL created: dropped if undone (after the transaction's
    /// writes into it were).
    Created(u64),
    /// The counter of a dropped sequence: removed when the transaction commits.
    Counter(u32),
}

/// The storage relations a table's definition refers to: its rows' and its indexes'.
fn relations(table: Option<&TableDef>) -> Vec<u64> {
    table.map_or_else(Vec::new, |t| {
        std::iter::once(t.rel)
            .chain(t.indexes.iter().map(|i| i.rel))
            .collect()
    })
}

impl DdlLog {
    /// Where a savepoint starts.
    pub fn mark(&self) -> usize {
        self.entries.len()
    }

    /// Creates a storage relation for a change (new rows, a new index).
    pub async fn create_rel(&mut self, shared: &Shared, placement: RelPlacement) -> PgResult<u64> {
        let rel = shared.datanodes.create_rel(placement).await?;
        self.entries.push(Entry::Created(rel));
        Ok(rel)
    }

    /// Stores a table's definition (new or changed).
    pub async fn put(&mut self, shared: &Shared, table: TableDef) -> PgResult<Arc<TableDef>> {
        let before = shared.catalog.table_by_oid(table.oid);
        let table = shared.catalog.put(table).await?;
        self.changed_table(table.oid, before, Some(&table));
        Ok(table)
    }

    /// Removes a table's definition; its storage is dropped at commit.
    pub async fn remove(&mut self, shared: &Shared, oid: u32) -> PgResult<()> {
        let before = shared.catalog.table_by_oid(oid);
        shared.catalog.remove(oid).await?;
        self.changed_table(oid, before, None);
        Ok(())
    }

    fn changed_table(&mut self, oid: u32, before: Option<Arc<TableDef>>, after: Option<&TableDef>) {
        let kept = relations(after);
        for rel in relations(before.as_deref()) {
            if !kept.contains(&rel) {
                self.entries.push(Entry::Release(rel));
            }
        }
        self.entries.push(Entry::Table { oid, before });
    }

    pub async fn put_sequence(
        &mut self,
        shared: &Shared,
        sequence: SequenceDef,
    ) -> PgResult<Arc<SequenceDef>> {
        let before = shared.catalog.sequence_by_oid(sequence.oid);
        let sequence = shared.catalog.put_sequence(sequence).await?;
        self.entries.push(Entry::Sequence {
            oid: sequence.oid,
            before,
        });
        Ok(sequence)
    }

    /// Drops a sequence; its counter goes at commit.
    pub async fn remove_sequence(&mut self, shared: &Shared, oid: u32) -> PgResult<()> {
        let before = shared.catalog.sequence_by_oid(oid);
        shared.catalog.remove_sequence(oid).await?;
        shared.sequences.forget(oid);
        self.entries.push(Entry::Counter(oid));
        self.entries.push(Entry::Sequence { oid, before });
        Ok(())
    }

    /// Stores a view's definition (new, replaced or renamed).
    pub async fn put_view(&mut self, shared: &Shared, view: ViewDef) -> PgResult<()> {
        let before = shared.catalog.view_by_oid(view.oid);
        let oid = view.oid;
        shared.catalog.put_view(view).await?;
        self.entries.push(Entry::View { oid, before });
        Ok(())
    }

    pub async fn remove_view(&mut self, shared: &Shared, oid: u32) -> PgResult<()> {
        let before = shared.catalog.view_by_oid(oid);
        shared.catalog.remove_view(oid).await?;
        self.entries.push(Entry::View { oid, before });
        Ok(())
    }

    /// Stores a role's definition (new, altered or renamed).
    pub async fn put_role(&mut self, shared: &Shared, role: RoleDef) -> PgResult<()> {
        let before = shared.catalog.role_by_oid(role.oid);
        let oid = role.oid;
        shared.catalog.put_role(role).await?;
        self.entries.push(Entry::Role { oid, before });
        Ok(())
    }

    pub async fn remove_role(&mut self, shared: &Shared, oid: u32) -> PgResult<()> {
        let before = shared.catalog.role_by_oid(oid);
        shared.catalog.remove_role(oid).await?;
        self.entries.push(Entry::Role { oid, before });
        Ok(())
    }

    /// The transaction committed: the storage and counters its DDL released go.
    pub async fn commit(self, shared: &Shared) {
        for entry in self.entries {
            let dropped = match entry {
                Entry::Release(rel) => shared.datanodes.drop_rel(rel).await,
                Entry::Counter(oid) => shared.catalog.drop_sequence_counter(oid).await,
                Entry::Table { .. }
                | Entry::Sequence { .. }
                | Entry::View { .. }
                | Entry::Role { .. }
                | Entry::Created(_) => Ok(()),
            };
            if let Err(e) = dropped {
                tracing::warn!(error = %e, "dropping what a committed DDL released failed");
            }
        }
    }

    /// Undoes the changes made since `mark`, newest first: each record as it was, the
    /// storage they created dropped, released storage kept.
    pub async fn rollback_to(&mut self, shared: &Shared, mark: usize) {
        while self.entries.len() > mark {
            let Some(entry) = self.entries.pop() else {
                break;
            };
            if let Err(e) = undo(shared, entry).await {
                tracing::warn!(error = %e, "undoing a rolled back transaction's DDL failed");
            }
        }
    }
}

async fn undo(shared: &Shared, entry: Entry) -> PgResult<()> {
    match entry {
        Entry::Table { oid, before } => match before {
            Some(before) => drop(shared.catalog.put((*before).clone()).await?),
            None => shared.catalog.remove(oid).await?,
        },
        Entry::Created(rel) => shared.datanodes.drop_rel(rel).await?,
        Entry::Sequence { oid, before } => {
            shared.sequences.forget(oid);
            match before {
                Some(before) => drop(shared.catalog.put_sequence((*before).clone()).await?),
                None => shared.catalog.remove_sequence(oid).await?,
            }
        }
        Entry::View { oid, before } => match before {
            Some(before) => drop(shared.catalog.put_view((*before).clone()).await?),
            None => shared.catalog.remove_view(oid).await?,
        },
        Entry::Role { oid, before } => match before {
            Some(before) => drop(shared.catalog.put_role((*before).clone()).await?),
            None => shared.catalog.remove_role(oid).await?,
        },
        Entry::Release(_) | Entry::Counter(_) => {}
    }
    Ok(())
}
