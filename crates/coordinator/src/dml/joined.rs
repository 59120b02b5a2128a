//! UPDATE … FROM and DELETE … USING (`sql::plan::Update::joined`): the joined rows are
//! read first, each target row keeps the first row it is joined to (PostgreSQL changes
//! it once, with an arbitrary one), then each target row is locked by its primary key
//! and changed. A target row another transaction changed since the snapshot fails the
//! statement with 40001 rather than being changed from values computed on its old
//! version; one deleted since is left alone.

use super::*;
use std::collections::HashSet;

impl Dml<'_> {
    pub(super) async fn update_joined(
        &self,
        txn: &mut ClusterTxn,
        upd: &Update,
        joined: &Query,
    ) -> PgResult<DmlResult> {
        let table = &upd.table;
        let mut affected = Affected::new(self.state, &upd.returning);
        let mut changes = Vec::new();
        for (key, row) in self.joined_targets(txn, table, joined).await? {
            let mut new = row[..table.columns.len()].to_vec();
            for (col, e) in &upd.assignments {
                new[*col] = self.reader(txn).eval(&[], e, &row).await?;
            }
            self.check_row(txn, table, &upd.checks, &new)?;
            changes.push((key, row, new));
        }
        let width = table.columns.len();
        // The rows written, kept for the foreign keys' checks after them.
        let mut written = Vec::new();
        for (key, row, new) in changes {
            let old = row[..width].to_vec();
            self.write_update(txn, table, &key, &old, &new).await?;
            // RETURNING reads the new row followed by the rows it was joined to.
            affected.changed([new.as_slice(), &row[width..]].concat())?;
            if !upd.foreign_keys.is_empty() {
                written.push((key, old, new));
            }
        }
        self.keep_foreign_keys(txn, table, &upd.foreign_keys, &written)
            .await?;
        affected.batch_written(&self.reader(txn)).await?;
        affected.finish(&self.reader(txn)).await
    }

    pub(super) async fn delete_joined(
        &self,
        txn: &mut ClusterTxn,
        del: &Delete,
        joined: &Query,
    ) -> PgResult<DmlResult> {
        let table = &del.table;
        let width = table.columns.len();
        let mut affected = Affected::new(self.state, &del.returning);
        let references = &del.foreign_keys.children;
        let mut deleted = Vec::new();
        for (key, row) in self.joined_targets(txn, table, joined).await? {
            self.dn.put(txn, table.rel, &key, None)?;
            let old = row[..width].to_vec();
            self.lock_wait(crate::index::remove_entries(
                self.dn, txn, table, &old, &key,
            ))
            .await?;
            if !references.is_empty() {
                deleted.push((old, None));
            }
            affected.changed(row)?;
        }
        self.follow_children(txn, table, references, &deleted)
            .await?;
        affected.batch_written(&self.reader(txn)).await?;
        affected.finish(&self.reader(txn)).await
    }

    /// Each target row once (with the first row it is joined to), locked, by its key.
    async fn joined_targets(
        &self,
        txn: &mut ClusterTxn,
        table: &TableDef,
        joined: &Query,
    ) -> PgResult<Vec<(Vec<u8>, Row)>> {
        let width = table.columns.len();
        let rows = self.reader(txn).query(joined).await?;
        let mut held = Held::new(&self.state.memory);
        let mut seen = HashSet::new();
        let mut targets = Vec::new();
        for row in rows {
            let key = row_key(table, &row[..width])
                .ok_or_else(|| PgError::internal("a joined target row without a key"))?;
            if seen.insert(key.clone()) {
                held.charge(row_size(&row))?;
                targets.push((key, row));
            }
        }
        let mut locked = Vec::with_capacity(targets.len());
        for (key, row) in targets {
            self.reader(txn).pace(1).await;
            let Some(current) = self
                .lock_wait(self.dn.lock_row(txn, table.rel, &key, LockWait::Wait))
                .await?
            else {
                continue; // deleted by a transaction that committed after our snapshot
            };
            if decode(&current, table)?[..] != row[..width] {
                return Err(PgError::new(
                    codes::SERIALIZATION_FAILURE,
                    "could not serialize access due to concurrent update",
                ));
            }
            locked.push((key, row));
        }
        Ok(locked)
    }
}
