//! Relations owned by one transaction: a relation that a transaction created for TRUNCATE
//! inside its transaction block belongs to it until it ends, as PostgreSQL's TRUNCATE
//! holds an ACCESS EXCLUSIVE lock until then. Other transactions' reads and writes of it
//! wait for the owner to end, so the owner may load rows into it in bulk, straight into
//! storage (`Datanode::bulk_load`), with no write set, row locks or commit batch.
//!
//! Loaded rows are versions at the owner's start timestamp. The owner's commit makes them
//! permanent by removing the relation's durable `loading/<rel>` marker in its commit
//! batch; an abort (or a crash before that batch, at the next open) empties the relation.

use crate::locks::TxnShared;
use crate::RelId;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The `sys` key that marks `rel` as loaded by a transaction not yet committed.
pub(crate) fn loading_key(rel: RelId) -> Vec<u8> {
    crate::rel_key(LOADING_PREFIX, rel)
}

pub(crate) const LOADING_PREFIX: &[u8] = b"loading/";

/// The owner of each owned relation.
#[derive(Default)]
pub(crate) struct OwnedRelations {
    /// Number of owned relations: zero almost always, so readers and writers check one
    /// atomic and nothing else.
    count: AtomicUsize,
    owners: Mutex<HashMap<RelId, Arc<TxnShared>>>,
}

impl OwnedRelations {
    pub(crate) fn claim(&self, rel: RelId, owner: &Arc<TxnShared>) {
        if self.owners.lock().insert(rel, owner.clone()).is_none() {
            self.count.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The owner of `rel` if it is another transaction than `me`.
    pub(crate) fn other_owner(&self, rel: RelId, me: u64) -> Option<Arc<TxnShared>> {
        if self.count.load(Ordering::SeqCst) == 0 {
            return None;
        }
        self.owners.lock().get(&rel).filter(|o| o.id != me).cloned()
    }

    /// Gives the relations up; call before the owner is marked finished, which wakes
    /// its waiters.
    pub(crate) fn release(&self, rels: &[RelId]) {
        let mut owners = self.owners.lock();
        for rel in rels {
            if owners.remove(rel).is_some() {
                self.count.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}
