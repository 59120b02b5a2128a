//! The `intents` keyspace: scratch space for the writes of transactions too large to keep
//! in memory (the datanode's spilled write sets; their layout is the datanode's). Writes
//! go through the journal without an fsync of their own: they become durable with the
//! next fsync of the journal, which the datanode forces (a durable `sys` write) before it
//! relies on them. Nothing here is read by snapshot reads; the datanode empties the
//! keyspace at every start, after replaying what it needs.

use crate::{io_err, Store};
use fjall::{AbstractTree, Keyspace};
use pgerror::PgResult;
use std::ops::Bound;

/// Memtable size of the keyspace: fjall flushes and stalls writers on its own (at most
/// five memtables), so a spilling transaction holds at most a few of these in memory.
pub(crate) const INTENTS_MEMTABLE: u64 = 4 << 20;

/// A range of the `intents` keyspace, in key order (owns its snapshot of the tree).
pub struct IntentIter {
    iter: Box<dyn DoubleEndedIterator<Item = fjall::Guard> + Send>,
}

impl Iterator for IntentIter {
    type Item = PgResult<(Vec<u8>, Vec<u8>)>;
    fn next(&mut self) -> Option<Self::Item> {
        let g = self.iter.next()?;
        Some(
            g.into_inner()
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .map_err(|e| io_err("read intents", e)),
        )
    }
}

impl DoubleEndedIterator for IntentIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        let g = self.iter.next_back()?;
        Some(
            g.into_inner()
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .map_err(|e| io_err("read intents", e)),
        )
    }
}

impl Store {
    fn intents(&self) -> &Keyspace {
        &self.intents
    }

    /// Writes (`Some`) or removes (`None`) entries as one batch (not fsynced).
    pub fn intents_write(
        &self,
        entries: impl IntoIterator<Item = (Vec<u8>, Option<Vec<u8>>)>,
    ) -> PgResult<()> {
        let ks = self.intents();
        let mut batch = self.db.batch();
        for (k, v) in entries {
            match v {
                Some(v) => batch.insert(ks, k, v),
                None => batch.remove(ks, k),
            }
        }
        batch.commit().map_err(|e| io_err("write intents", e))
    }

    pub fn intent_get(&self, key: &[u8]) -> PgResult<Option<Vec<u8>>> {
        self.intents()
            .get(key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| io_err("read intents", e))
    }

    pub fn intent_range(&self, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> IntentIter {
        IntentIter {
            iter: Box::new(self.intents().range((lo, hi))),
        }
    }

    /// Removes every entry under `prefix`: the tables holding nothing else go whole, the
    /// rest get tombstones, 10,000 per batch.
    pub fn intents_remove_prefix(&self, prefix: &[u8]) -> PgResult<()> {
        let ks = self.intents();
        let end = prefix_successor(prefix).map_or(Bound::Unbounded, Bound::Excluded);
        ks.tree
            .drop_range::<Vec<u8>, _>((Bound::Included(prefix.to_vec()), end.clone()))
            .map_err(|e| io_err("drop intents", e))?;
        let mut from = Bound::Included(prefix.to_vec());
        loop {
            let mut batch = self.db.batch();
            let mut last = None;
            for g in ks.range((from.clone(), end.clone())).take(10_000) {
                let k = g.key().map_err(|e| io_err("read intents", e))?;
                batch.remove(ks, k.clone());
                last = Some(k);
            }
            let Some(last) = last else { return Ok(()) };
            batch.commit().map_err(|e| io_err("remove intents", e))?;
            from = Bound::Excluded(last.to_vec());
        }
    }
}

/// The least key greater than every key starting with `prefix` (None: no such key).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut v = prefix.to_vec();
    while let Some(last) = v.pop() {
        if last < 0xff {
            v.push(last + 1);
            return Some(v);
        }
    }
    None
}
