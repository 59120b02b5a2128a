//! Reads: `get` and `scan` at a snapshot, after the visibility waits, with the
//! transaction's own writes first.

use crate::merge::{as_ref_bound, range_nonempty, MemoryOwnIter, MergeIter, OwnIter, ScanRows};
use crate::spilled::SpilledOwnIter;
use crate::txn::Txn;
use crate::{Datanode, RelId, RowBytes, Timestamp};
use pgerror::PgResult;
use std::ops::Bound;

impl Datanode {
    pub async fn get(
        &self,
        txn: &Txn,
        rel: RelId,
        key: &[u8],
        snapshot: Timestamp,
    ) -> PgResult<Option<RowBytes>> {
        self.get_row(txn, rel, key, snapshot, false).await
    }

    /// `get`; with `presence_only`, for a caller that only needs to know whether the row
    /// exists (an increment of it, `increment`): does not wait for increments of it that
    /// are being merged, so its column values may be older than `get`'s.
    pub async fn get_row(
        &self,
        txn: &Txn,
        rel: RelId,
        key: &[u8],
        snapshot: Timestamp,
        presence_only: bool,
    ) -> PgResult<Option<RowBytes>> {
        if let Some(w) = txn.own_write(rel, key)? {
            return Ok(w);
        }
        txn.note_point_read(rel, key);
        self.wait_unowned(txn, rel).await?;
        for t in self.inner.spillers.of(rel, txn.shared.id) {
            if t.blocks_snapshot(snapshot) {
                t.wait_finished().await;
            }
        }
        while let Some(owner) =
            self.inner
                .locks
                .blocking_owner(rel, key, snapshot, txn.shared.id, presence_only)
        {
            owner.wait_finished().await;
        }
        Ok(self
            .inner
            .store
            .get(rel, key, snapshot)?
            .and_then(|v| v.row))
    }

    /// The rows of `rel` in `[lo, hi)` (user-key bounds) at `snapshot` with their keys,
    /// the transaction's own writes merged in, in key order.
    pub async fn scan<'a>(
        &'a self,
        txn: &'a Txn,
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
    ) -> PgResult<ScanRows<'a, (Vec<u8>, RowBytes)>> {
        let merged = self.merged_scan(txn, rel, lo, hi, snapshot).await?;
        Ok(Box::new(
            merged.map(|r| r.map(|(key, row)| (key.into_vec(), row))),
        ))
    }

    /// `scan` without the keys, which most scans never read: a stored row's key is not
    /// decoded.
    pub async fn scan_rows<'a>(
        &'a self,
        txn: &'a Txn,
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
    ) -> PgResult<ScanRows<'a, RowBytes>> {
        let merged = self.merged_scan(txn, rel, lo, hi, snapshot).await?;
        Ok(Box::new(merged.map(|r| r.map(|(_, row)| row))))
    }

    async fn merged_scan<'a>(
        &'a self,
        txn: &'a Txn,
        rel: RelId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Timestamp,
    ) -> PgResult<MergeIter<'a>> {
        self.wait_unowned(txn, rel).await?;
        txn.note_range_read(rel, &lo, &hi);
        // Every transaction that registered before this point, may commit at <= snapshot
        // and writes inside the range is waited out; any that registers later gets a
        // commit ts > snapshot.
        for t in self
            .inner
            .committing
            .blocking(rel, &lo, &hi, snapshot, txn.shared.id)
        {
            t.wait_finished().await;
        }
        let stored = self.inner.store.scan(rel, &lo, &hi, snapshot);
        let memory: Option<MemoryOwnIter<'a>> = match txn.writes.get(&rel) {
            Some(m) if !m.is_empty() && range_nonempty(&lo, &hi) => {
                Some(m.range::<[u8], _>((as_ref_bound(&lo), as_ref_bound(&hi))))
            }
            _ => None,
        };
        let own: OwnIter<'a> = match (memory, txn.intents_in(rel, &lo, &hi)) {
            (memory, Some(intents)) => Box::new(SpilledOwnIter {
                memory: memory.unwrap_or_default().peekable(),
                intents: intents.peekable(),
            }),
            (Some(memory), None) => Box::new(memory.map(|(k, v)| Ok((k.clone(), v.clone())))),
            (None, None) => Box::new(std::iter::empty()),
        };
        Ok(MergeIter {
            stored: stored.peekable(),
            own: own.peekable(),
        })
    }
}
