//! SERIALIZABLE (decision 0044): a transaction records what it read; its commit checks
//! that nothing it read was changed by a commit after its snapshot, and protects what it
//! read until it has its commit timestamp, so that no writer of it can commit below.
//!
//! Why that is serializable: every validated writer behaves as if it ran alone at its
//! commit timestamp `c` (what it read at its snapshot `s` is what stood just before `c`),
//! and a read-only transaction as if at `s` (a snapshot is a consistent cut), so the
//! order of timestamps is a serial order. A writer `w` of a key read by `t` that commits
//! between `s` and `c` either registered on the relation before `t` checked (then `t`
//! sees it registered, or its versions in the store, and fails) or after (then it sees
//! `t`'s protection and waits until `t` is finished before taking its timestamp, which
//! is then above `c`). Registering and then looking at the other side, on both sides,
//! cannot miss each other (a store-buffering pattern, closed by the fences).

use crate::commit::CommitTs;
use crate::locks::TxnShared;
use crate::txn::Txn;
use crate::{Inner, RelId, Timestamp};
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::sync::Arc;

/// A scanned range of a relation: `[lo, hi)` in user-key bounds.
type ScannedRange = (RelId, Bound<Vec<u8>>, Bound<Vec<u8>>);

/// What a SERIALIZABLE transaction read on this datanode, other than its own writes.
#[derive(Default)]
pub(crate) struct ReadSet {
    points: Vec<(RelId, Vec<u8>)>,
    ranges: Vec<ScannedRange>,
}

impl ReadSet {
    pub(crate) fn point(&mut self, rel: RelId, key: &[u8]) {
        self.points.push((rel, key.to_vec()));
    }
    pub(crate) fn range(&mut self, rel: RelId, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) {
        self.ranges.push((rel, lo.clone(), hi.clone()));
    }
    fn rels(&self) -> Vec<RelId> {
        let mut rels: Vec<RelId> = self.points.iter().map(|(r, _)| *r).collect();
        rels.extend(self.ranges.iter().map(|(r, _, _)| *r));
        rels.sort_unstable();
        rels.dedup();
        rels
    }
}

type Readers = HashMap<RelId, HashMap<u64, Arc<TxnShared>>>;

/// The SERIALIZABLE transactions between their validation and their end, per relation
/// they read (sharded by relation), which writers of those relations wait for.
pub(crate) struct ReadProtections {
    shards: Box<[Mutex<Readers>]>,
    /// How many transactions hold protections: a commit that finds none skips the rest.
    holders: AtomicUsize,
}

impl ReadProtections {
    pub(crate) fn new() -> Self {
        ReadProtections {
            shards: (0..16).map(|_| Mutex::new(HashMap::new())).collect(),
            holders: AtomicUsize::new(0),
        }
    }
    fn shard(&self, rel: RelId) -> &Mutex<Readers> {
        &self.shards[(rel.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize % self.shards.len()]
    }
    fn protect(&self, rels: &[RelId], t: &Arc<TxnShared>) {
        self.holders.fetch_add(1, Ordering::SeqCst);
        for &rel in rels {
            self.shard(rel)
                .lock()
                .entry(rel)
                .or_default()
                .insert(t.id, t.clone());
        }
    }
    /// Ends `id`'s protections, if it holds any.
    pub(crate) fn release(&self, id: u64) {
        if self.holders.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut held = false;
        for shard in self.shards.iter() {
            let mut s = shard.lock();
            s.retain(|_, m| {
                held |= m.remove(&id).is_some();
                !m.is_empty()
            });
        }
        if held {
            self.holders.fetch_sub(1, Ordering::SeqCst);
        }
    }
    /// The protecting transactions other than `me` of any of `rels`.
    fn readers_of(&self, rels: &[RelId], me: u64) -> Vec<Arc<TxnShared>> {
        fence(Ordering::SeqCst);
        if self.holders.load(Ordering::SeqCst) == 0 {
            return Vec::new();
        }
        let mut found: Vec<Arc<TxnShared>> = Vec::new();
        for &rel in rels {
            if let Some(m) = self.shard(rel).lock().get(&rel) {
                found.extend(m.values().filter(|t| t.id != me).cloned());
            }
        }
        found
    }
}

/// The error of a SERIALIZABLE transaction whose reads were changed, PostgreSQL's.
pub(crate) fn serialization_failure() -> PgError {
    PgError::new(
        codes::SERIALIZATION_FAILURE,
        "could not serialize access due to read/write dependencies among transactions",
    )
    .with_detail("Reason code: Canceled on commit attempt, as a concurrent transaction changed what this transaction read.")
    .with_hint("The transaction might succeed if retried.")
}

impl Inner {
    /// Between registering on the relations it writes (`rels`) and taking its commit
    /// timestamp: waits until every transaction protecting its reads of those relations
    /// is finished, then validates and protects its own reads (SERIALIZABLE). A prepared
    /// SERIALIZABLE writer fails instead of waiting: it may hold protections on other
    /// datanodes, which the reader it would wait for may be waiting on.
    pub(crate) async fn serializable_commit_check(
        &self,
        txn: &Txn,
        rels: &[RelId],
        source: &CommitTs,
    ) -> PgResult<()> {
        let readers = self.protections.readers_of(rels, txn.shared.id);
        if !readers.is_empty() {
            if txn.reads.is_some() && matches!(source, CommitTs::Decided { .. }) {
                return Err(serialization_failure());
            }
            for t in readers {
                t.wait_finished().await;
            }
        }
        self.validate_reads(txn)
    }

    /// Protects what `txn` read (if SERIALIZABLE), then checks that no other transaction
    /// is committing a write to a relation it read and that nothing it read has a
    /// version committed after its snapshot; 40001 otherwise. Its protections end with it
    /// (`Txn::release_all`).
    pub(crate) fn validate_reads(&self, txn: &Txn) -> PgResult<()> {
        let Some(reads) = &txn.reads else {
            return Ok(());
        };
        let reads = reads.lock();
        let rels = reads.rels();
        if rels.is_empty() {
            return Ok(());
        }
        let (me, start) = (txn.shared.id, txn.shared.start_ts);
        self.protections.protect(&rels, &txn.shared);
        fence(Ordering::SeqCst);
        // A writer registered now may not have its timestamp yet: it may end up below
        // ours, so any one of a relation read fails us (relation-grained, see 0044).
        if rels.iter().any(|&rel| self.committing.has_other(rel, me)) {
            return Err(serialization_failure());
        }
        for (rel, key) in &reads.points {
            if newer_than(self.store.latest(*rel, key)?.map(|v| v.commit_ts), start) {
                return Err(serialization_failure());
            }
        }
        for (rel, lo, hi) in &reads.ranges {
            if self.store.changed_since(*rel, lo, hi, start)? {
                return Err(serialization_failure());
            }
        }
        Ok(())
    }
}

fn newer_than(ts: Option<Timestamp>, start: Timestamp) -> bool {
    ts.is_some_and(|ts| ts > start)
}
