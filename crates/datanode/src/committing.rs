//! The commit registry: the transactions currently committing, per relation, with the
//! keys each writes there. A scan of a key range at snapshot `s` waits for those that may
//! commit at <= `s` and write a key inside its range (README, "Transaction state and the
//! visibility rule"); one whose writes all lie outside the range cannot change what the
//! scan reads, so the scan does not wait for its group-commit fsync.

use crate::locks::TxnShared;
use crate::{RelId, Timestamp};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

/// The keys of one relation that a committing transaction writes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum WrittenKeys {
    /// Not listed (a spilled transaction, a prepared one restored at open): every scan of
    /// the relation waits.
    All,
    /// Sorted and distinct, at most `LISTED`.
    Keys(Vec<Vec<u8>>),
    /// More than `LISTED`: the first and the last.
    Span(Vec<u8>, Vec<u8>),
}

impl WrittenKeys {
    /// Keys listed one by one below this many; an OLTP transaction writes a few per
    /// relation, and copying them costs less than a scan's wait for an fsync.
    const LISTED: usize = 64;

    /// From the sorted keys of a write set and the sorted keys of its increments.
    pub(crate) fn of<'a>(
        mut writes: impl ExactSizeIterator<Item = &'a Vec<u8>> + DoubleEndedIterator,
        increments: &[&'a Vec<u8>],
    ) -> Self {
        if writes.len() + increments.len() <= Self::LISTED {
            let mut keys: Vec<Vec<u8>> =
                writes.chain(increments.iter().copied()).cloned().collect();
            keys.sort_unstable();
            keys.dedup();
            return WrittenKeys::Keys(keys);
        }
        let firsts = [writes.next(), increments.first().copied()];
        let lasts = [writes.next_back(), increments.last().copied()];
        match (
            firsts.into_iter().flatten().min(),
            lasts.into_iter().flatten().max(),
        ) {
            (Some(first), Some(last)) => WrittenKeys::Span(first.clone(), last.clone()),
            _ => WrittenKeys::All,
        }
    }

    /// Whether a key in `[lo, hi]` may be among them.
    pub(crate) fn meets(&self, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
        let below = |k: &[u8]| match lo {
            Bound::Included(l) => k < l.as_slice(),
            Bound::Excluded(l) => k <= l.as_slice(),
            Bound::Unbounded => false,
        };
        let above = |k: &[u8]| match hi {
            Bound::Included(h) => k > h.as_slice(),
            Bound::Excluded(h) => k >= h.as_slice(),
            Bound::Unbounded => false,
        };
        match self {
            WrittenKeys::All => true,
            WrittenKeys::Keys(keys) => keys
                .get(keys.partition_point(|k| below(k)))
                .is_some_and(|k| !above(k)),
            WrittenKeys::Span(first, last) => !below(last) && !above(first),
        }
    }
}

type Committing = HashMap<RelId, HashMap<u64, (Arc<TxnShared>, WrittenKeys)>>;

/// Transactions currently committing, per relation (for scans), sharded by relation.
pub(crate) struct CommitRegistry {
    shards: Box<[Mutex<Committing>]>,
}

impl CommitRegistry {
    pub(crate) fn new() -> Self {
        CommitRegistry {
            shards: (0..16).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
    fn shard(&self, rel: RelId) -> &Mutex<Committing> {
        &self.shards[(rel.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize % self.shards.len()]
    }
    pub(crate) fn register(&self, rel: RelId, t: &Arc<TxnShared>, keys: WrittenKeys) {
        self.shard(rel)
            .lock()
            .entry(rel)
            .or_default()
            .insert(t.id, (t.clone(), keys));
    }
    pub(crate) fn unregister(&self, rel: RelId, id: u64) {
        let mut s = self.shard(rel).lock();
        if let Some(m) = s.get_mut(&rel) {
            m.remove(&id);
            if m.is_empty() {
                s.remove(&rel);
            }
        }
    }
    /// `horizon`, lowered below the start of every committing transaction: the storage
    /// writer may still need the versions its snapshot saw (a late merge reads the
    /// version below its commit timestamp, `storage::WriteOp::Merge`), and the GTM no
    /// longer counts it once it has a commit timestamp.
    pub(crate) fn clamp_horizon(&self, horizon: Timestamp) -> Timestamp {
        self.shards
            .iter()
            .flat_map(|s| {
                s.lock()
                    .values()
                    .flat_map(|m| m.values().map(|(t, _)| t.start_ts))
                    .min()
            })
            .fold(horizon, Timestamp::min)
    }
    /// Whether a transaction other than `me` is registered on `rel`.
    pub(crate) fn has_other(&self, rel: RelId, me: u64) -> bool {
        self.shard(rel)
            .lock()
            .get(&rel)
            .is_some_and(|m| m.keys().any(|&id| id != me))
    }
    /// The transactions other than `me` that a scan of `rel` over `[lo, hi]` at
    /// `snapshot` waits for.
    pub(crate) fn blocking(
        &self,
        rel: RelId,
        lo: &Bound<Vec<u8>>,
        hi: &Bound<Vec<u8>>,
        snapshot: Timestamp,
        me: u64,
    ) -> Vec<Arc<TxnShared>> {
        let s = self.shard(rel).lock();
        match s.get(&rel) {
            None => Vec::new(),
            Some(m) => m
                .values()
                .filter(|(t, keys)| t.id != me && t.blocks_snapshot(snapshot) && keys.meets(lo, hi))
                .map(|(t, _)| t.clone())
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::WrittenKeys;
    use std::ops::Bound::{self, Excluded, Included, Unbounded};

    fn k(b: u8) -> Vec<u8> {
        vec![b]
    }
    fn keys(bs: &[u8]) -> WrittenKeys {
        let ks: Vec<Vec<u8>> = bs.iter().map(|&b| k(b)).collect();
        WrittenKeys::of(ks.iter(), &[])
    }

    #[test]
    fn listed_keys_meet_only_ranges_holding_one() {
        let w = keys(&[10, 20, 30]);
        let meets = |lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>| w.meets(&lo, &hi);
        assert!(meets(Included(k(20)), Included(k(20))));
        assert!(meets(Included(k(11)), Included(k(20))));
        assert!(!meets(Included(k(11)), Excluded(k(20))));
        assert!(!meets(Excluded(k(20)), Excluded(k(30))));
        assert!(!meets(Included(k(11)), Included(k(19))));
        assert!(!meets(Included(k(31)), Unbounded));
        assert!(!meets(Unbounded, Excluded(k(10))));
        assert!(meets(Unbounded, Unbounded));
    }

    #[test]
    fn many_keys_become_their_span() {
        let ks: Vec<Vec<u8>> = (0..=200u8).step_by(2).map(k).collect();
        let odd = k(7);
        let w = WrittenKeys::of(ks.iter(), &[&odd]);
        assert_eq!(w, WrittenKeys::Span(k(0), k(200)));
        assert!(!w.meets(&Included(k(201)), &Included(k(201))));
        assert!(w.meets(&Included(k(3)), &Included(k(3))));
    }

    #[test]
    fn increments_are_listed_with_the_writes() {
        let ks = [k(5)];
        let inc = k(9);
        let w = WrittenKeys::of(ks.iter(), &[&inc]);
        assert_eq!(w, WrittenKeys::Keys(vec![k(5), k(9)]));
        assert!(w.meets(&Included(k(9)), &Unbounded));
        assert!(WrittenKeys::All.meets(&Included(k(1)), &Included(k(1))));
    }
}
