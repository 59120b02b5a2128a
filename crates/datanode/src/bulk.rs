//! Owned relations (`own_relation`) and bulk loads into them, and emptying the loads of
//! a transaction that does not commit.

use crate::owned::loading_key;
use crate::txn::Txn;
use crate::{Datanode, Inner, RelId};
use pgerror::{PgError, PgResult};

impl Datanode {
    /// Makes `rel`, a relation just created for the transaction's TRUNCATE, the
    /// transaction's own until it ends: other transactions' reads and writes of it wait
    /// until then (as PostgreSQL's TRUNCATE locks the table), and the transaction may load
    /// rows into it in bulk (`bulk_load`). See `owned.rs`.
    pub fn own_relation(&self, txn: &mut Txn, rel: RelId) {
        self.inner.owned.claim(rel, &txn.shared);
        txn.owned.push(rel);
    }

    /// Whether `bulk_load` may load into `rel`: the transaction owns it and has written
    /// nothing to it otherwise (rows it wrote are in its write set or its intents, and
    /// would shadow rows loaded later).
    pub fn can_bulk_load(&self, txn: &Txn, rel: RelId) -> bool {
        txn.owned.contains(&rel)
            && txn.writes.get(&rel).is_none_or(|m| m.is_empty())
            && !txn.has_spilled(rel)
    }

    /// Whether the transaction bulk-loaded rows into `rel` already (a later load's keys
    /// may then exist).
    pub fn has_bulk_loaded(&self, txn: &Txn, rel: RelId) -> bool {
        txn.loaded.contains(&rel)
    }

    /// Starts a bulk load of new rows into `rel` (see `can_bulk_load`), visible at once to
    /// the transaction's own reads and to everyone else's once it commits; an abort
    /// empties the relation. The caller must not load a key the relation holds.
    pub fn bulk_load(&self, txn: &mut Txn, rel: RelId) -> PgResult<storage::BulkLoad> {
        if !self.can_bulk_load(txn, rel) {
            return Err(PgError::internal(
                "datanode: bulk load into a relation the transaction does not own",
            ));
        }
        if !txn.loaded.contains(&rel) {
            self.inner
                .store
                .meta_put(storage::Space::Sys, &loading_key(rel), Some(b""))?;
            txn.loaded.push(rel);
        }
        self.inner.store.bulk_load(rel, txn.shared.start_ts)
    }
}

impl Inner {
    /// Empties relations that a transaction loaded rows into and does not commit, then
    /// removes their markers (a crash in between: the next open does it again).
    pub(crate) fn discard_loads(&self, rels: &[RelId]) -> PgResult<()> {
        for &rel in rels {
            self.store.delete_rel(rel)?;
            self.store
                .meta_put(storage::Space::Sys, &loading_key(rel), None)?;
        }
        Ok(())
    }

    /// `discard_loads` for an aborting transaction, which cannot report the failure.
    pub(crate) fn discard_loads_or_log(&self, rels: &[RelId]) {
        if let Err(e) = self.discard_loads(rels) {
            tracing::error!("emptying relations loaded by an aborted transaction: {e} (the next start finishes it)");
        }
    }
}
