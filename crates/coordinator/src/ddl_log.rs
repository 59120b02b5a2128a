//! The one way DDL changes the catalog (tables, their indexes, sequences, views, roles): through the
//! transaction's `DdlLog`, which remembers every metadata key a change wrote with its
//! value before, so that a ROLLBACK (or ROLLBACK TO SAVEPOINT, or the end of a failed
//! block) puts them back and drops the storage the undone change had created, and which
//! keeps the storage a change released (a dropped table's, a truncated or rewritten
//! table's old relation) until the transaction commits.
//!
//! The changes are written to the metadata service as they run, so other sessions see
//! them before the commit; each write carries the transaction's pending record
//! (`pending_ddl.rs`), so that a crash before the commit is undone by the GTM's
//! decision (docs/decisions/0038-transactional-ddl.md).

use crate::pending_ddl::{self, Entry};
use crate::server::Shared;
use distribution::{AfterDecision, RelPlacement};
use gtm::Timestamp;
use meta::{WriteBatch, WriteOutcome};
use pgerror::{PgError, PgResult};
use sql::catalog::Catalog;
use sql::role::RoleDef;
use sql::sequence::SequenceDef;
use sql::view::ViewDef;
use sql::TableDef;
use std::sync::Arc;
use types::enums::EnumType;

#[derive(Default)]
pub struct DdlLog {
    /// The transaction's start timestamp: names its pending record.
    start: Option<Timestamp>,
    entries: Vec<Entry>,
    /// The pending record as last written; `None` while none is stored.
    recorded: Option<Vec<u8>>,
}

/// What a catalog write adds to the log once it is written (`DdlLog::stage`).
pub struct Staged {
    entries: Vec<Entry>,
    record: Vec<u8>,
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
    /// The transaction's start timestamp (before its first change).
    pub fn set_start(&mut self, start: Timestamp) {
        self.start = Some(start);
    }

    /// Where a savepoint starts.
    pub fn mark(&self) -> usize {
        self.entries.len()
    }

    /// Creates a storage relation for a change (new rows, a new index). It is recorded
    /// with the change's catalog write.
    pub async fn create_rel(&mut self, shared: &Shared, placement: RelPlacement) -> PgResult<u64> {
        let rel = shared.datanodes.create_rel(placement).await?;
        self.entries.push(Entry::Created(rel));
        Ok(rel)
    }

    /// Stores a table's definition (new or changed).
    pub async fn put(&mut self, shared: &Shared, table: TableDef) -> PgResult<Arc<TableDef>> {
        let mark = self.release_unreferenced(shared, table.oid, Some(&table));
        let put = shared.catalog.put(table, self).await;
        self.undo_on_error(put, mark)
    }

    /// Removes a table's definition; its storage is dropped at commit.
    pub async fn remove(&mut self, shared: &Shared, oid: u32) -> PgResult<()> {
        let mark = self.release_unreferenced(shared, oid, None);
        let removed = shared.catalog.remove(oid, self).await;
        self.undo_on_error(removed, mark)
    }

    /// Logs the relations of table `oid` that `after` no longer refers to as released
    /// (kept in memory until the change's write records them); returns where they start.
    fn release_unreferenced(
        &mut self,
        shared: &Shared,
        oid: u32,
        after: Option<&TableDef>,
    ) -> usize {
        let mark = self.entries.len();
        let kept = relations(after);
        let before = shared.catalog.table_by_oid(oid);
        for rel in relations(before.as_deref()) {
            if !kept.contains(&rel) {
                self.entries.push(Entry::Released(rel));
            }
        }
        mark
    }

    /// A change that failed to write logs nothing.
    fn undo_on_error<T>(&mut self, result: PgResult<T>, mark: usize) -> PgResult<T> {
        if result.is_err() {
            self.entries.truncate(mark);
        }
        result
    }

    pub async fn put_sequence(
        &mut self,
        shared: &Shared,
        sequence: SequenceDef,
    ) -> PgResult<Arc<SequenceDef>> {
        shared.catalog.put_sequence(sequence, self).await
    }

    /// Drops a sequence; its counter goes at commit.
    pub async fn remove_sequence(&mut self, shared: &Shared, oid: u32) -> PgResult<()> {
        let mark = self.entries.len();
        self.entries.push(Entry::Counter(oid));
        let removed = shared.catalog.remove_sequence(oid, self).await;
        shared.sequences.forget(oid);
        self.undo_on_error(removed, mark)
    }

    /// Replaces schema public's ACL.
    pub async fn put_public_acl(
        &mut self,
        shared: &Shared,
        acl: Vec<sql::acl::AclItem>,
    ) -> PgResult<()> {
        shared.catalog.put_public_acl(acl, self).await
    }

    /// Stores a view's definition (new, replaced or renamed).
    pub async fn put_view(&mut self, shared: &Shared, view: ViewDef) -> PgResult<()> {
        shared.catalog.put_view(view, self).await.map(drop)
    }

    pub async fn remove_view(&mut self, shared: &Shared, oid: u32) -> PgResult<()> {
        shared.catalog.remove_view(oid, self).await
    }

    /// Stores an enum type's definition (new, or with a label added).
    pub async fn put_type(&mut self, shared: &Shared, ty: EnumType) -> PgResult<()> {
        shared.catalog.put_type(ty, self).await.map(drop)
    }

    pub async fn remove_type(&mut self, shared: &Shared, oid: u32) -> PgResult<()> {
        shared.catalog.remove_type(oid, self).await
    }

    /// Stores a role's definition (new, altered or renamed).
    pub async fn put_role(&mut self, shared: &Shared, role: RoleDef) -> PgResult<()> {
        shared.catalog.put_role(role, self).await.map(drop)
    }

    pub async fn remove_role(&mut self, shared: &Shared, oid: u32) -> PgResult<()> {
        shared.catalog.remove_role(oid, self).await
    }

    /// Makes a catalog write (`batch`, whose keys hold `before`) part of the transaction:
    /// the batch expects the keys as read and stores the pending record with the change
    /// in it. Applied to the log by `keep` once written.
    pub fn stage(&self, batch: &mut WriteBatch, before: Vec<Option<Vec<u8>>>) -> PgResult<Staged> {
        let start = self
            .start
            .ok_or_else(|| PgError::internal("a catalog change outside a started transaction"))?;
        let mut entries = Vec::with_capacity(batch.puts.len());
        for ((key, after), before) in batch.puts.iter().zip(before) {
            if !batch.expect.iter().any(|(k, _)| k == key) {
                batch.expect.push((key.clone(), before.clone()));
            }
            entries.push(Entry::Key {
                key: key.clone(),
                before,
                after: after.clone(),
            });
        }
        let mut all = self.entries.clone();
        all.extend(entries.iter().cloned());
        let record = pending_ddl::encode(&all);
        batch
            .puts
            .push((pending_ddl::record_key(start), Some(record.clone())));
        Ok(Staged { entries, record })
    }

    /// The staged write was stored.
    pub fn keep(&mut self, staged: Staged) {
        self.entries.extend(staged.entries);
        self.recorded = Some(staged.record);
    }

    /// For a transaction whose DDL wrote the catalog: what its commit does between the
    /// GTM's decision and its parts' commit (removing its pending record). `None`: it
    /// commits as any other.
    pub fn after_decision(&self, shared: &Shared) -> Option<AfterDecision> {
        let recorded = self.recorded.clone()?;
        let key = pending_ddl::record_key(self.start?);
        let meta = shared.meta.clone();
        Some(Box::pin(async move {
            let batch = WriteBatch {
                expect: vec![(key.clone(), Some(recorded))],
                puts: vec![(key, None)],
            };
            match meta.write(batch).await? {
                WriteOutcome::Written { .. } => Ok(()),
                WriteOutcome::Conflict { .. } => Err(PgError::internal(
                    "the pending DDL record changed before its commit",
                )),
            }
        }))
    }

    /// Removes the pending record now: the DDL stays whatever happens to the transaction
    /// (PREPARE TRANSACTION: the catalog has no prepared state).
    pub async fn unrecord(&mut self, shared: &Shared) -> PgResult<()> {
        if let Some(after) = self.after_decision(shared) {
            after.await?;
            self.recorded = None;
        }
        Ok(())
    }

    /// The transaction committed: the storage and counters its DDL released go.
    pub async fn commit(self, shared: &Shared) {
        pending_ddl::drop_storage(&shared.datanodes, &shared.meta, &self.entries, true).await;
    }

    /// Undoes the changes made since `mark`: the keys they wrote put back as they were
    /// (and the pending record shortened) in one write, the storage they created
    /// dropped, released storage kept.
    pub async fn rollback_to(&mut self, shared: &Shared, mark: usize) {
        if self.entries.len() <= mark {
            return;
        }
        let undone = self.entries.split_off(mark);
        if let Some(start) = self.start {
            let remaining = (!self.entries.is_empty()).then(|| pending_ddl::encode(&self.entries));
            let key = pending_ddl::record_key(start);
            let restored = pending_ddl::restore(
                &shared.meta,
                &key,
                self.recorded.clone(),
                remaining.clone(),
                &undone,
            )
            .await;
            match restored {
                // Not ours any more: the resolver found the transaction aborted and
                // undid all of it.
                Ok(false) => self.recorded = None,
                Ok(true) => self.recorded = remaining,
                Err(e) => {
                    tracing::warn!(error = %e, "undoing a rolled back transaction's DDL failed")
                }
            }
            if let Err(e) = shared.catalog.refresh().await {
                tracing::warn!(error = %e, "reloading the catalog after a rollback failed");
            }
        }
        for e in &undone {
            if let Entry::Key { key, .. } = e {
                if let Some(oid) = crate::catalog::LiveCatalog::sequence_of_key(key) {
                    shared.sequences.forget(oid);
                }
            }
        }
        pending_ddl::drop_storage(&shared.datanodes, &shared.meta, &undone, false).await;
    }
}
