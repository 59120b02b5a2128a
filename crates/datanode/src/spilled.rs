//! Spilled write sets: a transaction whose write set, undo log and row locks outgrow
//! `DatanodeOptions::txn_memory` moves them into the store's `intents` keyspace (write
//! intents, as Percolator and CockroachDB keep them) and goes on with an empty write set.
//!
//! * Layout: `txn id | rel | key` -> `Intent` (the key is written or deleted, or only
//!   locked), and `txn id | 0 | seq` -> `UndoRecord` (rel 0 is never a relation). The
//!   transaction's own reads look at its memory first, then its intents.
//! * Row locks: a spilled key has no entry in the lock table. Another transaction that
//!   takes a row lock in a relation with spilled transactions (`Spillers`) then looks for
//!   their intents on the key (`Inner::spilled_holder`); if one holds it, the lock entry is
//!   handed to that spiller and the requester queues behind it (`LockTable::
//!   reinstate_for_spiller`), so the wait is FIFO, seen by deadlock detection and by
//!   lock_timeout. The spiller releases every row reinstated for it when it ends, and no
//!   row is reinstated for it after that (`TxnShared::reinstated` is closed first).
//! * Readers: a reader of a relation with a committing spiller whose commit may be at or
//!   below its snapshot waits for it, as scans wait for the commit registry.
//! * Commit: the commit timestamp is made durable first, in a `sys` record whose fsync
//!   also makes the intents durable (one journal); then the intents are applied as
//!   versions in batches, the last one durable, and the record is removed. A crash in
//!   between: the next open applies the intents of every recorded commit again and then
//!   empties the keyspace (intents of transactions without a record were aborted).
//! * Savepoints: each spilled undo entry is an `UndoRecord` of the key's state among the
//!   intents before the write; rolling back past a spill restores those states.

use crate::commit::CommitTs;
use crate::committing::WrittenKeys;
use crate::locks::{FxHashMap, TxnShared};
use crate::txn::{Increments, Txn};
use crate::{Inner, RelId, RowBytes, Timestamp};
use parking_lot::Mutex;
use pgerror::{PgError, PgResult};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes of intents written per batch when spilling or applying them.
const BATCH_BYTES: usize = 1 << 20;

pub(crate) const COMMIT_PREFIX: &[u8] = b"spilled_commit/";

/// Estimated memory of one write in the write set (BTreeMap entry, key and row headers)
/// and its undo entry, beyond the key (twice) and the row.
pub(crate) const WRITE_OVERHEAD: usize = 160;
/// Estimated memory of one row lock (the transaction's entry and the lock table's) beyond
/// the key (twice).
pub(crate) const LOCK_OVERHEAD: usize = 256;

fn rel_prefix(txn: u64, rel: RelId) -> Vec<u8> {
    let mut k = Vec::with_capacity(16 + 32);
    k.extend_from_slice(&txn.to_be_bytes());
    k.extend_from_slice(&rel.to_be_bytes());
    k
}

pub(crate) fn intent_key(txn: u64, rel: RelId, key: &[u8]) -> Vec<u8> {
    let mut k = rel_prefix(txn, rel);
    k.extend_from_slice(key);
    k
}

fn undo_key(txn: u64, seq: usize) -> Vec<u8> {
    intent_key(txn, UNDO_REL, &(seq as u64).to_be_bytes())
}

/// The "relation" of undo records.
const UNDO_REL: RelId = 0;

/// What a spilled transaction did to a key.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Intent {
    /// Locked (`lock_row`), not written.
    Locked,
    /// Written: the new row, or None for a delete.
    Write(Option<RowBytes>),
}

const LOCKED: u8 = 0;
const DELETED: u8 = 1;
const ROW: u8 = 2;

impl Intent {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Intent::Locked => out.push(LOCKED),
            Intent::Write(None) => out.push(DELETED),
            Intent::Write(Some(row)) => {
                out.push(ROW);
                out.extend_from_slice(row);
            }
        }
    }

    fn decode(v: &[u8]) -> PgResult<Intent> {
        match v.first() {
            Some(&LOCKED) => Ok(Intent::Locked),
            Some(&DELETED) => Ok(Intent::Write(None)),
            Some(&ROW) => Ok(Intent::Write(Some(RowBytes::copy_from_slice(&v[1..])))),
            _ => Err(PgError::internal("datanode: corrupt write intent")),
        }
    }

    fn encoded(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode(&mut v);
        v
    }
}

/// A spilled undo entry: `rel (8) | key length (4) | key | Intent` (the key's state among
/// the intents before the write it undoes).
fn encode_undo(rel: RelId, key: &[u8], before: &Intent) -> Vec<u8> {
    let mut v = Vec::with_capacity(12 + key.len() + 1);
    v.extend_from_slice(&rel.to_be_bytes());
    v.extend_from_slice(&(key.len() as u32).to_be_bytes());
    v.extend_from_slice(key);
    before.encode(&mut v);
    v
}

fn decode_undo(v: &[u8]) -> PgResult<(RelId, Vec<u8>, Intent)> {
    let corrupt = || PgError::internal("datanode: corrupt spilled undo record");
    let rel = u64::from_be_bytes(v.get(..8).ok_or_else(corrupt)?.try_into().unwrap());
    let len = u32::from_be_bytes(v.get(8..12).ok_or_else(corrupt)?.try_into().unwrap()) as usize;
    let key = v.get(12..12 + len).ok_or_else(corrupt)?.to_vec();
    Ok((rel, key, Intent::decode(&v[12 + len..])?))
}

/// The transactions with spilled intents, per relation.
#[derive(Default)]
pub(crate) struct Spillers {
    /// Registrations in all: zero almost always, so lock takers and readers check one
    /// atomic and nothing else.
    count: AtomicUsize,
    by_rel: Mutex<FxHashMap<RelId, Vec<Arc<TxnShared>>>>,
}

impl Spillers {
    fn register(&self, rel: RelId, t: &Arc<TxnShared>) {
        self.by_rel.lock().entry(rel).or_default().push(t.clone());
        self.count.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn unregister(&self, rels: &[RelId], id: u64) {
        let mut by_rel = self.by_rel.lock();
        for rel in rels {
            if let Some(v) = by_rel.get_mut(rel) {
                v.retain(|t| t.id != id);
                if v.is_empty() {
                    by_rel.remove(rel);
                }
                self.count.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// The spilled transactions other than `me` with intents in `rel`.
    pub(crate) fn of(&self, rel: RelId, me: u64) -> Vec<Arc<TxnShared>> {
        if self.count.load(Ordering::SeqCst) == 0 {
            return Vec::new();
        }
        self.by_rel
            .lock()
            .get(&rel)
            .map(|v| v.iter().filter(|t| t.id != me).cloned().collect())
            .unwrap_or_default()
    }
}

/// A transaction's spilled state (`Txn::spilled`).
#[derive(Default)]
pub(crate) struct Spilled {
    /// Relations it has intents in (registered in `Spillers`).
    pub rels: Vec<RelId>,
    /// Undo entries spilled (the savepoint positions below this are in storage).
    pub undo: usize,
    /// Its commit record is durable and not yet removed: its intents must stay for the
    /// next open to apply.
    pub commit_recorded: bool,
}

impl Txn {
    pub(crate) fn has_spilled(&self, rel: RelId) -> bool {
        self.spilled.as_ref().is_some_and(|s| s.rels.contains(&rel))
    }

    /// The transaction's intent on a key, if it spilled one.
    pub(crate) fn intent(&self, rel: RelId, key: &[u8]) -> PgResult<Option<Intent>> {
        if !self.has_spilled(rel) {
            return Ok(None);
        }
        self.inner
            .store
            .intent_get(&intent_key(self.shared.id, rel, key))?
            .map(|v| Intent::decode(&v))
            .transpose()
    }

    /// The transaction's intents in `rel` within user-key bounds, in key order.
    pub(crate) fn intents_in(
        &self,
        rel: RelId,
        lo: &Bound<Vec<u8>>,
        hi: &Bound<Vec<u8>>,
    ) -> Option<IntentsIn> {
        if !self.has_spilled(rel) {
            return None;
        }
        let prefix = rel_prefix(self.shared.id, rel);
        let with_prefix = |k: &Vec<u8>| {
            let mut p = prefix.clone();
            p.extend_from_slice(k);
            p
        };
        let lo = match lo {
            Bound::Included(k) => Bound::Included(with_prefix(k)),
            Bound::Excluded(k) => Bound::Excluded(with_prefix(k)),
            Bound::Unbounded => Bound::Included(prefix.clone()),
        };
        let hi = match hi {
            Bound::Included(k) => Bound::Included(with_prefix(k)),
            Bound::Excluded(k) => Bound::Excluded(with_prefix(k)),
            Bound::Unbounded => {
                storage::prefix_successor(&prefix).map_or(Bound::Unbounded, Bound::Excluded)
            }
        };
        Some(IntentsIn {
            iter: self.inner.store.intent_range(lo, hi),
        })
    }

    /// Savepoint position: spilled undo entries, then the ones in memory.
    pub(crate) fn undo_position(&self) -> usize {
        self.spilled.as_ref().map_or(0, |s| s.undo) + self.undo.len()
    }

    /// `rollback_to` for a savepoint taken before the last spill: everything in memory is
    /// newer (the writes go, the locks stay), and the spilled undo entries from `pos` on
    /// restore the intents, newest first.
    pub(crate) fn rollback_spilled(&mut self, pos: usize) -> PgResult<()> {
        let id = self.shared.id;
        self.writes.clear();
        self.undo.clear();
        self.n_writes = 0;
        let spilled_undo = self.spilled.as_ref().map_or(0, |s| s.undo);
        let store = self.inner.store.clone();
        let records = store.intent_range(
            Bound::Included(undo_key(id, pos)),
            Bound::Excluded(undo_key(id, spilled_undo)),
        );
        // Newest first; a key undone twice in one batch keeps its older state (one entry
        // per key in a batch: a batch writes all its entries at one sequence number).
        let mut restored: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut removed = Vec::new();
        let write = |restored: &mut BTreeMap<Vec<u8>, Vec<u8>>, removed: &mut Vec<Vec<u8>>| {
            let entries = std::mem::take(restored)
                .into_iter()
                .map(|(k, v)| (k, Some(v)));
            store.intents_write(
                entries.chain(std::mem::take(removed).into_iter().map(|k| (k, None))),
            )
        };
        for r in records.rev() {
            let (undo_k, v) = r?;
            let (rel, key, before) = decode_undo(&v)?;
            restored.insert(intent_key(id, rel, &key), before.encoded());
            removed.push(undo_k);
            if removed.len() >= 10_000 {
                write(&mut restored, &mut removed)?;
            }
        }
        write(&mut restored, &mut removed)?;
        if let Some(s) = self.spilled.as_mut() {
            s.undo = pos;
        }
        Ok(())
    }
}

/// Intents being spilled, and the row locks to release once they are written.
#[derive(Default)]
struct IntentBatch {
    entries: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    release: Vec<(RelId, Vec<u8>)>,
    bytes: usize,
}

impl IntentBatch {
    fn push(
        &mut self,
        inner: &Inner,
        key: Vec<u8>,
        value: Vec<u8>,
        release: Option<(RelId, Vec<u8>)>,
    ) -> PgResult<()> {
        self.bytes += key.len() + value.len() + 32;
        self.entries.push((key, Some(value)));
        self.release.extend(release);
        if self.bytes >= BATCH_BYTES {
            self.write(inner)?;
        }
        Ok(())
    }

    fn write(&mut self, inner: &Inner) -> PgResult<()> {
        inner
            .store
            .intents_write(std::mem::take(&mut self.entries))?;
        self.bytes = 0;
        Ok(())
    }

    /// Writes what is left, then releases every lock whose intent is written.
    fn flush(mut self, inner: &Inner, id: u64) -> PgResult<()> {
        self.write(inner)?;
        for (rel, key) in self.release {
            inner.locks.release_owner(rel, &key, id);
        }
        Ok(())
    }
}

/// A transaction's intents in one relation: (user key, intent), in key order.
pub(crate) struct IntentsIn {
    iter: storage::IntentIter,
}

impl Iterator for IntentsIn {
    type Item = PgResult<(Vec<u8>, Intent)>;
    fn next(&mut self) -> Option<Self::Item> {
        let r = self.iter.next()?;
        Some(r.and_then(|(k, v)| Ok((k[16..].to_vec(), Intent::decode(&v)?))))
    }
}

/// Own writes of a spilled transaction in a scan: its write set over its intents (the
/// write set is newer); keys only locked are skipped.
pub(crate) struct SpilledOwnIter<'a> {
    pub memory: std::iter::Peekable<crate::merge::MemoryOwnIter<'a>>,
    pub intents: std::iter::Peekable<IntentsIn>,
}

impl Iterator for SpilledOwnIter<'_> {
    type Item = PgResult<(Vec<u8>, Option<RowBytes>)>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let take_memory = match (self.memory.peek(), self.intents.peek()) {
                (None, None) => return None,
                (_, Some(Err(_))) => false,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((mk, _)), Some(Ok((ik, _)))) => match mk.as_slice().cmp(ik.as_slice()) {
                    std::cmp::Ordering::Less => true,
                    std::cmp::Ordering::Greater => false,
                    std::cmp::Ordering::Equal => {
                        self.intents.next(); // shadowed by the newer write in memory
                        true
                    }
                },
            };
            if take_memory {
                let (k, v) = self.memory.next().expect("peeked");
                return Some(Ok((k.clone(), v.clone())));
            }
            match self.intents.next().expect("peeked") {
                Ok((k, Intent::Write(v))) => return Some(Ok((k, v))),
                Ok((_, Intent::Locked)) => continue,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl Inner {
    /// `Inner::commit` for a transaction that spilled: everything goes to its intents,
    /// the commit timestamp is recorded durably, then the intents are applied.
    pub(crate) async fn commit_spilled(
        self: &Arc<Self>,
        mut txn: Box<Txn>,
        merges: Increments,
        source: CommitTs,
    ) -> PgResult<Timestamp> {
        if let Err(e) = self.spill(&mut txn) {
            let _ = crate::commit::end_unapplied(txn, source.gtm()).await;
            return Err(e);
        }
        let mut rels: Vec<RelId> = txn
            .spilled
            .as_ref()
            .map(|s| s.rels.clone())
            .unwrap_or_default();
        rels.extend(merges.keys().map(|(r, _)| *r));
        rels.sort_unstable();
        rels.dedup();
        let all = std::iter::repeat(WrittenKeys::All);
        let ts = self.take_commit_ts(&mut txn, &rels, all, source).await?;
        let increment_locks: Vec<(RelId, Vec<u8>)> = std::mem::take(&mut txn.increment_locks)
            .into_iter()
            .collect();
        let res = self
            .apply_spilled(&mut txn, ts, merges, &increment_locks)
            .await;
        txn.release_all();
        for (rel, key) in &increment_locks {
            self.locks.finish(*rel, key, txn.shared.id);
        }
        self.unregister_committing(&rels, txn.shared.id);
        res.map(|()| ts)
    }

    /// Records the commit, applies the intents, then the increments in a last, durable
    /// batch (with the bulk loads' markers), and removes the record.
    async fn apply_spilled(
        self: &Arc<Self>,
        txn: &mut Txn,
        ts: Timestamp,
        merges: Increments,
        increment_locks: &[(RelId, Vec<u8>)],
    ) -> PgResult<()> {
        let id = txn.shared.id;
        self.record_spilled_commit(id, Some(ts))?;
        if let Some(s) = txn.spilled.as_mut() {
            s.commit_recorded = true;
        }
        self.apply_intents(id, ts, |rel, key| {
            self.note_written(std::iter::once((rel, key)))
        })
        .await?;
        let writes: Vec<storage::Write> = merges
            .into_iter()
            .map(|((rel, key), fs)| {
                let merge: storage::MergeFn = Arc::new(move |row: &RowBytes| {
                    fs.iter().try_fold(row.clone(), |row, f| f(&row))
                });
                storage::Write {
                    rel,
                    key,
                    op: storage::WriteOp::Merge(merge),
                    newest_before: None,
                }
            })
            .collect();
        let on_applied: storage::OnApplied = {
            let (inner, locked, owner) =
                (self.clone(), increment_locks.to_vec(), txn.shared.clone());
            Box::new(move || {
                for (rel, key) in &locked {
                    inner.locks.release_applied(*rel, key, &owner);
                }
            })
        };
        let loads_kept = txn
            .loaded
            .iter()
            .map(|&rel| crate::owned::loading_key(rel))
            .collect();
        // Durable whatever synchronous_commit says: the record goes next, and a crash
        // after that must not lose what it applied.
        match self
            .store
            .apply_removing(&writes, ts, true, Some(on_applied), loads_kept)
            .await
        {
            Ok(r) => r?,
            Err(_) => return Err(PgError::io("commit", "storage writer stopped")),
        }
        txn.loaded.clear();
        self.record_spilled_commit(id, None)?;
        if let Some(s) = txn.spilled.as_mut() {
            s.commit_recorded = false;
        }
        Ok(())
    }

    /// Moves the transaction's write set, undo log and row locks into its intents.
    pub(crate) fn spill(&self, txn: &mut Txn) -> PgResult<()> {
        let id = txn.shared.id;
        let spilled = txn.spilled.get_or_insert_with(Default::default);
        let had_intents = spilled.rels.clone();
        for rel in txn.writes.keys().chain(txn.locks.keys()) {
            if !spilled.rels.contains(rel) {
                // Registered before any lock goes: whoever is granted one of them next
                // finds the intent.
                self.spillers.register(*rel, &txn.shared);
                spilled.rels.push(*rel);
            }
        }
        // Versions read under these locks were possibly applied but not durable; an abort
        // would wait for them through the lock entries (`release_and_await_reads_durable`),
        // which go now. What was applied is in the journal: one fsync covers it.
        self.store.sync()?;
        let mut batch = IntentBatch::default();
        // Undo entries first, each with the key's state among the intents before the
        // write (a write-set value, or what the intents held before this spill).
        let undo = std::mem::take(&mut txn.undo);
        let n_undo = undo.len();
        let keep_undo = txn.savepoint_taken.load(Ordering::Relaxed);
        for (i, (rel, key, before)) in undo.into_iter().enumerate().filter(|_| keep_undo) {
            let before = match before {
                Some(v) => Intent::Write(v),
                None if had_intents.contains(&rel) => {
                    match self.store.intent_get(&intent_key(id, rel, &key))? {
                        Some(v) => Intent::decode(&v)?,
                        None => Intent::Locked,
                    }
                }
                None => Intent::Locked,
            };
            batch.push(
                self,
                undo_key(id, spilled.undo + i),
                encode_undo(rel, &key, &before),
                None,
            )?;
        }
        spilled.undo += n_undo;
        for (rel, keys) in std::mem::take(&mut txn.locks) {
            // A written key's lock goes with its write, below.
            let written = txn.writes.get(&rel);
            for key in keys
                .into_keys()
                .filter(|k| !written.is_some_and(|m| m.contains_key(k)))
            {
                batch.push(
                    self,
                    intent_key(id, rel, &key),
                    Intent::Locked.encoded(),
                    Some((rel, key)),
                )?;
            }
        }
        for (rel, m) in std::mem::take(&mut txn.writes) {
            for (key, row) in m {
                let k = intent_key(id, rel, &key);
                batch.push(self, k, Intent::Write(row).encoded(), Some((rel, key)))?;
            }
        }
        batch.flush(self, id)?;
        txn.n_writes = 0;
        txn.memory = 0;
        Ok(())
    }

    /// The spilled transaction other than `me` whose intents hold `key`, if any (one that
    /// has ended holds nothing, although its intents may not be removed yet).
    pub(crate) fn spilled_holder(
        &self,
        me: u64,
        rel: RelId,
        key: &[u8],
    ) -> PgResult<Option<Arc<TxnShared>>> {
        for t in self.spillers.of(rel, me) {
            if t.holds_intents()
                && self
                    .store
                    .intent_get(&intent_key(t.id, rel, key))?
                    .is_some()
            {
                return Ok(Some(t));
            }
        }
        Ok(None)
    }

    /// Applies a spilled transaction's intents as versions at `ts`, in batches (none
    /// durable: the caller's last batch is); returns the keys it deleted.
    pub(crate) async fn apply_intents(
        &self,
        id: u64,
        ts: Timestamp,
        mut deleted: impl FnMut(RelId, Vec<u8>),
    ) -> PgResult<()> {
        let mut from = Bound::Included(rel_prefix(id, UNDO_REL + 1));
        let end =
            storage::prefix_successor(&id.to_be_bytes()).map_or(Bound::Unbounded, Bound::Excluded);
        loop {
            let (writes, last) = self.intents_batch(from, end.clone())?;
            let Some(last) = last else { return Ok(()) };
            for w in &writes {
                if matches!(w.op, storage::WriteOp::Put(None)) {
                    deleted(w.rel, w.key.clone());
                }
            }
            match self.store.apply(&writes, ts, false, None).await {
                Ok(r) => r?,
                Err(_) => return Err(PgError::io("commit", "storage writer stopped")),
            }
            from = Bound::Excluded(last);
        }
    }

    /// Up to `BATCH_BYTES` of intents from `from` as writes, and the last intent key read.
    fn intents_batch(
        &self,
        from: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
    ) -> PgResult<(Vec<storage::Write>, Option<Vec<u8>>)> {
        let mut writes = Vec::new();
        let (mut bytes, mut last) = (0, None);
        for r in self.store.intent_range(from, end) {
            let (k, v) = r?;
            let rel = u64::from_be_bytes(k[8..16].try_into().unwrap());
            if let Intent::Write(row) = Intent::decode(&v)? {
                bytes += k.len() + v.len();
                writes.push(storage::Write {
                    rel,
                    key: k[16..].to_vec(),
                    op: storage::WriteOp::Put(row),
                    newest_before: None,
                });
            }
            last = Some(k);
            if bytes >= BATCH_BYTES {
                break;
            }
        }
        Ok((writes, last))
    }

    /// At open: applies the intents of every commit recorded and not finished when the
    /// server stopped, then empties the keyspace.
    pub(crate) fn recover_spilled_commits(&self) -> PgResult<()> {
        for (k, v) in self.store.meta_scan(storage::Space::Sys, COMMIT_PREFIX)? {
            let id = u64::from_be_bytes(
                k[COMMIT_PREFIX.len()..]
                    .try_into()
                    .map_err(|_| PgError::internal("corrupt commit record"))?,
            );
            let ts = u64::from_be_bytes(
                v[..]
                    .try_into()
                    .map_err(|_| PgError::internal("corrupt commit record"))?,
            );
            tracing::info!("applying the spilled writes of a transaction that committed at {ts} before the server stopped");
            let mut from = Bound::Included(rel_prefix(id, UNDO_REL + 1));
            let end = storage::prefix_successor(&id.to_be_bytes())
                .map_or(Bound::Unbounded, Bound::Excluded);
            loop {
                let (writes, last) = self.intents_batch(from, end.clone())?;
                let Some(last) = last else { break };
                wait_applied(self.store.apply(&writes, ts, true, None))?;
                from = Bound::Excluded(last);
            }
            self.store.meta_put(storage::Space::Sys, &k, None)?;
        }
        self.store.intents_remove_prefix(&[])
    }

    /// Writes the durable commit record of a spilled transaction (its fsync makes the
    /// intents durable too), or removes it.
    pub(crate) fn record_spilled_commit(&self, id: u64, ts: Option<Timestamp>) -> PgResult<()> {
        let key = crate::rel_key(COMMIT_PREFIX, id);
        self.store.meta_put(
            storage::Space::Sys,
            &key,
            ts.map(u64::to_be_bytes).as_ref().map(|b| &b[..]),
        )
    }

    /// Removes a finished transaction's intents, in the background.
    pub(crate) fn discard_intents(&self, id: u64) {
        let store = self.store.clone();
        let spawned = std::thread::Builder::new().name("meridian-intents".into()).spawn(move || {
            if let Err(e) = store.intents_remove_prefix(&id.to_be_bytes()) {
                tracing::warn!("removing the intents of a finished transaction: {e} (the next start removes them)");
            }
        });
        if let Err(e) = spawned {
            tracing::warn!(
                "removing the intents of a finished transaction: {e} (the next start removes them)"
            );
        }
    }
}

/// Waits for a batch queued at open, outside any async context.
fn wait_applied(rx: tokio::sync::oneshot::Receiver<PgResult<()>>) -> PgResult<()> {
    std::thread::scope(|s| s.spawn(|| rx.blocking_recv()).join())
        .map_err(|_| PgError::internal("apply thread panicked"))?
        .map_err(|_| PgError::io("commit", "storage writer stopped"))?
}
