//! Relations known to hold nothing that garbage collection could remove: no key with more
//! than one version, no delete tombstone. A relation is such from its creation, stays
//! such through bulk loads (each loads one version of keys the relation does not hold,
//! `Store::bulk_load`), and stops being such once a transaction that wrote it takes its
//! commit timestamp, before any of its versions is stored. VACUUM skips these relations
//! instead of scanning every version (`pgbench -i` vacuums 10 million rows it has just
//! loaded). Garbage made by writes after VACUUM looked is the background GC's to collect,
//! as it is for any relation. Kept in memory only: after a restart no relation is known
//! and VACUUM scans.

use crate::RelId;
use parking_lot::RwLock;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Default)]
pub(crate) struct SingleVersionRelations {
    /// Number of relations in `rels`; a commit checks it alone while there are none.
    count: AtomicUsize,
    rels: RwLock<HashSet<RelId>>,
}

impl SingleVersionRelations {
    pub(crate) fn insert(&self, rel: RelId) {
        if self.rels.write().insert(rel) {
            self.count.fetch_add(1, Ordering::SeqCst);
        }
    }

    pub(crate) fn contains(&self, rel: RelId) -> bool {
        self.count.load(Ordering::SeqCst) > 0 && self.rels.read().contains(&rel)
    }

    /// Forgets `rels` (written, or dropped). Commits call this with the relations they
    /// write: a read lock unless one of them is listed.
    pub(crate) fn remove(&self, rels: &[RelId]) {
        if self.count.load(Ordering::SeqCst) == 0
            || !rels.iter().any(|r| self.rels.read().contains(r))
        {
            return;
        }
        let mut set = self.rels.write();
        for rel in rels {
            if set.remove(rel) {
                self.count.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}
