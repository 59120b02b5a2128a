//! The apply half of the commit path: writes queued transactions into fjall, one atomic
//! batch each, and hands them to the syncer (`syncer.rs`) for the fsync.
//!
//! Flat combining instead of a writer thread: the thread that queues a commit applies the
//! queue itself when no other thread is applying (`Writer::submit`); otherwise the thread
//! that is applying takes it along. Why: with a writer thread every commit waited until
//! that thread got a CPU (33–113 µs on a busy 2-core machine, docs/performance.md round
//! 8) and paid for waking it; PostgreSQL's backends insert their own WAL for the same
//! reason. The `applier` lock keeps the single-writer invariants: one round at a time,
//! in timestamp order within a round, every batch applied after another is later in the
//! journal.

use bytes::Bytes;
use fjall::{Database, Keyspace, PersistMode};
use parking_lot::Mutex;
use pgerror::{PgError, PgResult};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::syncer::{Pusher, Reply};
use crate::{
    decode_latest, decode_value, encode_latest, encode_value, io_err, latest_ts, prefix_end, ts_of_key, version_key, MergeFn,
    OnApplied, Superseded, Timestamp, Version, WriterStats, TAG_DELETE, TS_LEN,
};

/// A write as the applier takes it: the encoded value, or a merge to compute.
pub(crate) enum ItemOp {
    Value(Vec<u8>),
    Merge(MergeFn),
}

/// One transaction's writes, all at `ts`.
pub(crate) struct WriteReq {
    /// (version prefix, value, `Write::newest_before`)
    pub(crate) items: Vec<(Vec<u8>, ItemOp, Option<Option<Timestamp>>)>,
    pub(crate) ts: Timestamp,
    pub(crate) durable: bool,
    pub(crate) on_applied: Option<OnApplied>,
    pub(crate) reply: Reply,
}

pub(crate) struct Writer {
    queue: Mutex<Queue>,
    /// Held by the thread that applies; `None` once closed.
    applier: Mutex<Option<Applier>>,
}

#[derive(Default)]
struct Queue {
    reqs: Vec<WriteReq>,
    closed: bool,
}

/// What applying needs; owned by whoever holds `Writer::applier`.
pub(crate) struct Applier {
    pub(crate) db: Database,
    pub(crate) data: Keyspace,
    pub(crate) latest: Keyspace,
    /// Also held by GC while it checks and removes `latest` entries (`Store::commit_gc`).
    pub(crate) latest_lock: Arc<Mutex<()>>,
    pub(crate) superseded: Arc<Mutex<Superseded>>,
    pub(crate) stats: Arc<WriterStats>,
    /// Dropping it (at close) stops the syncer once it has synced everything pushed.
    pub(crate) sync_queue: Pusher,
    /// The round being applied (kept to reuse its allocation).
    pub(crate) round: Vec<WriteReq>,
}

impl Writer {
    pub(crate) fn new(applier: Applier) -> Writer {
        Writer { queue: Mutex::new(Queue::default()), applier: Mutex::new(Some(applier)) }
    }

    /// Queues `req`, then applies the queue unless another thread is applying it.
    pub(crate) fn submit(&self, req: WriteReq) {
        {
            let mut q = self.queue.lock();
            if q.closed {
                drop(q);
                let _ = req.reply.send(Err(PgError::io("commit", "storage is closed")));
                return;
            }
            q.reqs.push(req);
        }
        while let Some(mut applier) = self.applier.try_lock() {
            if let Some(a) = applier.as_mut() {
                self.apply_queued(a);
            }
            drop(applier);
            // A request queued after the last look found the lock taken and left itself
            // to this thread: look once more now that the lock is free.
            if self.queue.lock().reqs.is_empty() {
                return;
            }
        }
    }

    fn apply_queued(&self, a: &mut Applier) {
        loop {
            {
                let mut q = self.queue.lock();
                if q.reqs.is_empty() {
                    return;
                }
                std::mem::swap(&mut q.reqs, &mut a.round);
            }
            a.apply_round();
        }
    }

    /// Applies what is queued, refuses later requests, and stops the syncer once it has
    /// synced everything applied (the caller joins its thread).
    pub(crate) fn close(&self) {
        self.queue.lock().closed = true;
        let mut applier = self.applier.lock();
        if let Some(a) = applier.as_mut() {
            self.apply_queued(a);
        }
        *applier = None;
    }
}

impl Applier {
    /// Writes every batch of `self.round` (each atomically) and hands them to the syncer.
    fn apply_round(&mut self) {
        let mut round = std::mem::take(&mut self.round);
        let mut async_waiters = Vec::new();
        let mut durable_waiters = Vec::new();
        let guard = self.latest_lock.lock();
        let mut replaced = Vec::new();
        // Timestamp order within a round, so that merges of one key mostly arrive in order
        // (`apply_merge` handles the rest).
        round.sort_by_key(|r| r.ts);
        for req in round.drain(..) {
            replaced.clear();
            match self.write_batch(req.items, req.ts, &mut replaced) {
                Ok(()) => {
                    if let Some(f) = req.on_applied {
                        f();
                    }
                    let mut list = self.superseded.lock();
                    for (k, at) in replaced.drain(..) {
                        list.push(k, at);
                    }
                    drop(list);
                    self.stats.batches.fetch_add(1, Ordering::Relaxed);
                    if req.durable {
                        durable_waiters.push(req.reply);
                    } else {
                        async_waiters.push(req.reply);
                    }
                }
                Err(e) => {
                    let _ = req.reply.send(Err(e));
                }
            }
        }
        drop(guard);
        self.round = round;
        let applied = !durable_waiters.is_empty() || !async_waiters.is_empty();
        if !async_waiters.is_empty() {
            // Hand asynchronously committed data to the OS (so that a process crash keeps
            // it), then acknowledge without waiting for the fsync.
            let res = self.db.persist(PersistMode::Buffer).map_err(|e| io_err("write journal", e));
            for w in async_waiters {
                let _ = w.send(res.clone());
            }
        }
        if applied {
            self.sync_queue.push(durable_waiters);
        }
    }

    /// Writes one transaction as one fjall batch; `replaced` gets the versions it
    /// supersedes.
    fn write_batch(
        &self,
        items: Vec<(Vec<u8>, ItemOp, Option<Option<Timestamp>>)>,
        ts: Timestamp,
        replaced: &mut Vec<(Vec<u8>, Timestamp)>,
    ) -> PgResult<()> {
        let (data, latest) = (&self.data, &self.latest);
        let mut b = self.db.batch();
        for (prefix, op, newest_before) in items {
            let v = match op {
                ItemOp::Value(v) => v,
                ItemOp::Merge(f) => {
                    apply_merge(data, latest, &mut b, &prefix, ts, &f, replaced)?;
                    continue;
                }
            };
            let is_row = |value: &[u8]| value.first() != Some(&TAG_DELETE);
            // The newest committed version: as read under the caller's row lock, or from
            // `latest` (about a quarter of the applier's time when read).
            let (cur_ts, cur_is_row) = match newest_before.filter(|c| c.is_none_or(|c| c <= ts)) {
                Some(c) => (c, None),
                None => {
                    let cur = latest.get(&prefix).map_err(commit_err)?;
                    (cur.as_deref().and_then(latest_ts), cur.map(|cur| is_row(&cur[TS_LEN..])))
                }
            };
            // Commits may be applied out of timestamp order: `latest` keeps the newest.
            // (Never for a key read under a lock: its next writer waits.)
            match cur_ts {
                Some(c) if c > ts => {
                    if cur_is_row == Some(true) {
                        replaced.push((version_key(&prefix, ts), c));
                    }
                }
                _ => {
                    if let Some(c) = cur_ts.filter(|_| is_row(&v)) {
                        replaced.push((version_key(&prefix, c), ts));
                    }
                    b.insert(latest, prefix.clone(), encode_latest(ts, &v));
                }
            }
            b.insert(data, version_key(&prefix, ts), v);
        }
        b.commit().map_err(commit_err)
    }
}

/// The row a merge applies to (merges never meet a delete: the caller keeps deleters out).
fn merge_base(row: Option<Bytes>) -> PgResult<Bytes> {
    row.ok_or_else(|| PgError::internal("storage: merge into a deleted row"))
}

fn commit_err(e: fjall::Error) -> PgError {
    io_err("commit", e)
}

/// Applies a merge of the key `prefix` committed at `ts` into batch `b`: a version at
/// `ts` computed from the newest one before it. A merge may arrive after a merge of the
/// same key with a later timestamp (commit timestamps are taken before the batches are
/// queued); since nothing else writes the key while merges of it are pending and merges
/// commute, each newer version gets this merge applied on top as well. No reader has
/// seen those versions: a reader whose snapshot includes them includes `ts`, and waits
/// for this transaction (the caller's lock table).
fn apply_merge(
    data: &Keyspace,
    latest: &Keyspace,
    b: &mut fjall::OwnedWriteBatch,
    prefix: &[u8],
    ts: Timestamp,
    f: &MergeFn,
    replaced: &mut Vec<(Vec<u8>, Timestamp)>,
) -> PgResult<()> {
    let cur = latest
        .get(prefix)
        .map_err(commit_err)?
        .ok_or_else(|| PgError::internal("storage: merge into a key without versions"))?;
    let Version { commit_ts: cur_ts, row } = decode_latest(cur)?;
    if cur_ts < ts {
        let v = encode_value(&Some(f(&merge_base(row)?)?));
        replaced.push((version_key(prefix, cur_ts), ts));
        b.insert(latest, prefix.to_vec(), encode_latest(ts, &v));
        b.insert(data, version_key(prefix, ts), v);
        return Ok(());
    }
    // Newest first: the last one seen is the oldest version newer than `ts`.
    let mut next_newer = None;
    for g in data.range(version_key(prefix, Timestamp::MAX)..version_key(prefix, ts)) {
        let (k, v) = g.into_inner().map_err(commit_err)?;
        let t = ts_of_key(&k);
        let nv = encode_value(&Some(f(&merge_base(decode_value(v)?)?)?));
        if t == cur_ts {
            b.insert(latest, prefix.to_vec(), encode_latest(t, &nv));
        }
        b.insert(data, k.to_vec(), nv);
        next_newer = Some(t);
    }
    let base = data
        .range(version_key(prefix, ts)..prefix_end(prefix))
        .next()
        .ok_or_else(|| PgError::internal("storage: merge below the oldest version"))?;
    let (_, base) = base.into_inner().map_err(commit_err)?;
    b.insert(data, version_key(prefix, ts), encode_value(&Some(f(&merge_base(decode_value(base)?)?)?)));
    // The base version is already listed as replaced by the next newer one.
    if let Some(n) = next_newer {
        replaced.push((version_key(prefix, ts), n));
    }
    Ok(())
}

