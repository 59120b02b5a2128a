//! Prepared transactions that outlive their process or their coordinator (decision 0029).
//!
//! * A prepare that wrote something leaves a durable record, `sys` key
//!   `prepared/<start ts>`, before it is acknowledged: its write set, and its gid when SQL
//!   prepared it under one (`PREPARE TRANSACTION`). Its commit removes the record in the
//!   commit's own batch; its abort removes it (durably: a named one must not come back).
//! * At open (`restore`), each record becomes a transaction again, before anything else
//!   runs: its rows locked, registered as committing on its relations and `Prepared`, so
//!   that no writer and no reader whose snapshot may include it gets past it.
//! * The resolver (`Datanode::start_resolver`) takes the prepared parts no coordinator will
//!   finish: the restored ones without a gid, those of a coordinator connection that
//!   closed, and those a coordinator handed over because it could not learn the outcome
//!   (`Datanode::resolve_later`). Every `RESOLVE_INTERVAL` it asks the GTM for each one's
//!   outcome (`GtmClient::resolve`): committed at a timestamp, aborted, or pending (its
//!   coordinator still holds the transaction open at the GTM). Restored named ones go back
//!   to the gid registry, for COMMIT PREPARED or ROLLBACK PREPARED.
//!
//! A transaction that bulk-loaded rows records the relations it owns and loaded: the
//! loaded tables are durable when each load finishes, and their markers (which make an
//! open empty the relations of a load that did not commit) stay until the outcome, so
//! the open keeps the loads of recorded transactions and the restored one owns them
//! again: its commit makes them permanent, its abort empties them.
//!
//! Not recorded, so in memory only (a restart of the datanode aborts it): a prepared
//! transaction whose write set spilled to storage.

use crate::commit::{park_restored, PreparedTxn};
use crate::committing::WrittenKeys;
use crate::locks::{LockMode, TxnState};
use crate::named::PreparedXact;
use crate::{Datanode, Inner, Isolation, RelId, RowBytes, Timestamp, Txn};
use pgerror::{PgError, PgResult};
use std::sync::Arc;
use std::time::Duration;

const PREPARED_PREFIX: &[u8] = b"prepared/";
const RECORD_FORMAT: u8 = 2;
/// How often the resolver asks the GTM about the prepared parts it holds.
const RESOLVE_INTERVAL: Duration = Duration::from_secs(1);

/// The `sys` key of the record of the transaction that started at `start`.
pub(crate) fn record_key(start: Timestamp) -> Vec<u8> {
    crate::rel_key(PREPARED_PREFIX, start)
}

/// The record of `txn`, about to be prepared (under `xact`'s gid if any); None if it
/// cannot be recorded (see the module comment).
///
/// Format: u8 format (2); u8 named (0/1), if named: gid, i64 prepared_at, owner,
/// database; u32 count, then count × (u64 rel, key, u8 tag (0 row, 1 delete), row if
/// tag 0); the relations it owns, then those it loaded, each as u32 count + count × u64.
/// Strings and byte strings are u32 length + bytes; integers little-endian.
pub(crate) fn record_of(txn: &Txn, xact: Option<&PreparedXact>) -> Option<Vec<u8>> {
    if txn.spilled.is_some() {
        return None;
    }
    let mut b = Vec::with_capacity(64);
    b.push(RECORD_FORMAT);
    match xact {
        None => b.push(0),
        Some(x) => {
            b.push(1);
            put_bytes(&mut b, x.gid.as_bytes());
            b.extend_from_slice(&x.prepared_at.to_le_bytes());
            put_bytes(&mut b, x.owner.as_bytes());
            put_bytes(&mut b, x.database.as_bytes());
        }
    }
    let count: usize = txn.writes.values().map(|m| m.len()).sum();
    b.extend_from_slice(&(count as u32).to_le_bytes());
    for (rel, rows) in &txn.writes {
        for (key, row) in rows {
            b.extend_from_slice(&rel.to_le_bytes());
            put_bytes(&mut b, key);
            match row {
                Some(row) => {
                    b.push(0);
                    put_bytes(&mut b, row);
                }
                None => b.push(1),
            }
        }
    }
    for rels in [&txn.owned, &txn.loaded] {
        b.extend_from_slice(&(rels.len() as u32).to_le_bytes());
        for rel in rels {
            b.extend_from_slice(&rel.to_le_bytes());
        }
    }
    Some(b)
}

fn put_bytes(b: &mut Vec<u8>, v: &[u8]) {
    b.extend_from_slice(&(v.len() as u32).to_le_bytes());
    b.extend_from_slice(v);
}

/// A recorded prepared transaction, as read back.
struct Record {
    xact: Option<PreparedXact>,
    writes: Vec<(RelId, Vec<u8>, Option<RowBytes>)>,
    owned: Vec<RelId>,
    loaded: Vec<RelId>,
}

fn corrupt(start: Timestamp) -> PgError {
    PgError::internal(format!(
        "corrupt record of the prepared transaction that started at {start}"
    ))
}

fn decode(start: Timestamp, v: &[u8]) -> PgResult<Record> {
    let mut r = Cursor(v);
    let bad = || corrupt(start);
    // Format 1 (before loaded relations were recorded) has no relation lists.
    let format = r.take(1).ok_or_else(bad)?[0];
    if !(1..=RECORD_FORMAT).contains(&format) {
        return Err(bad());
    }
    let xact = match r.take(1).ok_or_else(bad)?[0] {
        0 => None,
        1 => Some(PreparedXact {
            gid: r.string().ok_or_else(bad)?,
            start_ts: start,
            prepared_at: i64::from_le_bytes(r.array().ok_or_else(bad)?),
            owner: r.string().ok_or_else(bad)?,
            database: r.string().ok_or_else(bad)?,
        }),
        _ => return Err(bad()),
    };
    let count = u32::from_le_bytes(r.array().ok_or_else(bad)?) as usize;
    let mut writes = Vec::with_capacity(count.min(v.len()));
    for _ in 0..count {
        let rel = u64::from_le_bytes(r.array().ok_or_else(bad)?);
        let key = r.bytes().ok_or_else(bad)?.to_vec();
        let row = match r.take(1).ok_or_else(bad)?[0] {
            0 => Some(RowBytes::copy_from_slice(r.bytes().ok_or_else(bad)?)),
            1 => None,
            _ => return Err(bad()),
        };
        writes.push((rel, key, row));
    }
    let mut rels = || -> Option<Vec<RelId>> {
        let n = u32::from_le_bytes(r.array()?) as usize;
        (0..n).map(|_| r.array().map(u64::from_le_bytes)).collect()
    };
    let (owned, loaded) = match format {
        1 => (Vec::new(), Vec::new()),
        _ => (rels().ok_or_else(bad)?, rels().ok_or_else(bad)?),
    };
    if !r.0.is_empty() {
        return Err(bad());
    }
    Ok(Record {
        xact,
        writes,
        owned,
        loaded,
    })
}

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N).map(|s| s.try_into().expect("length checked"))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = u32::from_le_bytes(self.array()?) as usize;
        self.take(n)
    }
    fn string(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?.to_vec()).ok()
    }
}

/// A recorded transaction rebuilt at open, waiting for `Datanode::start_resolver`.
pub(crate) struct Restored {
    txn: Box<Txn>,
    xact: Option<PreparedXact>,
}

impl Inner {
    /// The recorded prepared transactions, by start timestamp.
    fn prepared_records(&self) -> PgResult<Vec<(Timestamp, Record)>> {
        let mut records = Vec::new();
        for (k, v) in self.store.meta_scan(storage::Space::Sys, PREPARED_PREFIX)? {
            let start = k[PREPARED_PREFIX.len()..]
                .try_into()
                .map(u64::from_be_bytes)
                .map_err(|_| PgError::internal("corrupt prepared-transaction key"))?;
            records.push((start, decode(start, &v)?));
        }
        Ok(records)
    }

    /// The relations that recorded prepared transactions loaded rows into: their loads
    /// stay until the outcome.
    pub(crate) fn prepared_loads(&self) -> PgResult<Vec<RelId>> {
        Ok(self
            .prepared_records()?
            .into_iter()
            .flat_map(|(_, r)| r.loaded)
            .collect())
    }

    /// Rebuilds every recorded prepared transaction (see the module comment). Runs at
    /// open, before any other transaction: its row locks are free.
    pub(crate) fn restore_prepared(self: &Arc<Self>) -> PgResult<Vec<Restored>> {
        let mut restored = Vec::new();
        for (start, record) in self.prepared_records()? {
            let Record {
                xact,
                writes,
                owned,
                loaded,
            } = record;
            let mut txn = self.begin_txn(start, Isolation::RepeatableRead);
            txn.finishes_at_gtm = false;
            txn.prepared_record = true;
            for rel in owned {
                self.owned.claim(rel, &txn.shared);
                txn.owned.push(rel);
            }
            txn.loaded = loaded;
            for (rel, key, row) in writes {
                if !self
                    .locks
                    .try_lock(&txn.shared, rel, &key, LockMode::Exclusive)
                {
                    return Err(PgError::internal(format!(
                        "prepared transactions that started at {start} and earlier hold the same row"
                    )));
                }
                self.committing.register(rel, &txn.shared, WrittenKeys::All);
                txn.locks.entry(rel).or_default().insert(key.clone(), None);
                txn.writes.entry(rel).or_default().insert(key, row);
                txn.n_writes += 1;
            }
            txn.shared.set_state(TxnState::Prepared);
            restored.push(Restored { txn, xact });
        }
        if !restored.is_empty() {
            tracing::info!(
                count = restored.len(),
                "restored prepared transactions; their outcome is resolved once the GTM answers"
            );
        }
        Ok(restored)
    }
}

impl Datanode {
    /// Starts resolving prepared parts whose coordinator will not finish them (see the
    /// module comment) through `gtm`, beginning with those restored at open (named ones go
    /// back to the gid registry). Call once, inside a tokio runtime, before serving.
    pub fn start_resolver(self: &Arc<Self>, gtm: gtm::GtmClient) {
        for Restored { txn, xact } in std::mem::take(&mut *self.restored.lock()) {
            let prepared = park_restored(&self.inner, txn);
            match xact {
                Some(xact) => {
                    prepared.set_parked(true);
                    let gid = xact.gid.clone();
                    self.named.restore(&gid, xact, prepared);
                }
                None => self.in_doubt.lock().push(prepared),
            }
        }
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(RESOLVE_INTERVAL);
            loop {
                tick.tick().await;
                let Some(dn) = weak.upgrade() else { return };
                dn.resolve_in_doubt(&gtm).await;
            }
        });
    }

    /// Hands a prepared part to the resolver: its coordinator's connection closed, or the
    /// coordinator could not learn the outcome. One that wrote nothing just ends.
    pub async fn resolve_later(&self, prepared: PreparedTxn) {
        if prepared.wrote_nothing() {
            prepared.abort().await;
        } else {
            self.in_doubt.lock().push(prepared);
        }
    }

    /// How many prepared parts wait for the resolver.
    pub fn in_doubt_count(&self) -> usize {
        self.in_doubt.lock().len()
    }

    async fn resolve_in_doubt(&self, gtm: &gtm::GtmClient) {
        let parts = std::mem::take(&mut *self.in_doubt.lock());
        let mut pending = Vec::new();
        for prepared in parts {
            let start = prepared.start_ts();
            match gtm.resolve(start).await {
                Ok(gtm::Resolution::Committed(ts)) => {
                    tracing::info!(start, ts, "in-doubt transaction committed");
                    if let Err(e) = prepared.commit(ts).await {
                        tracing::error!(start, ts, "committing an in-doubt transaction: {e}");
                    }
                }
                Ok(gtm::Resolution::Aborted) => {
                    tracing::info!(start, "in-doubt transaction aborted");
                    prepared.abort().await;
                }
                Ok(gtm::Resolution::Pending) => pending.push(prepared),
                Err(e) => {
                    tracing::debug!(start, "resolving an in-doubt transaction: {e}");
                    pending.push(prepared);
                }
            }
        }
        self.in_doubt.lock().extend(pending);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_records_are_corrupt() {
        let mut b = vec![RECORD_FORMAT, 1];
        put_bytes(&mut b, b"gid");
        b.extend_from_slice(&7i64.to_le_bytes());
        put_bytes(&mut b, b"alice");
        put_bytes(&mut b, b"postgres");
        b.extend_from_slice(&2u32.to_le_bytes());
        for (key, row) in [(&b"k1"[..], Some(&b"row"[..])), (b"k2", None)] {
            b.extend_from_slice(&9u64.to_le_bytes());
            put_bytes(&mut b, key);
            match row {
                Some(r) => {
                    b.push(0);
                    put_bytes(&mut b, r);
                }
                None => b.push(1),
            }
        }
        for rels in [&[4u64, 9][..], &[4]] {
            b.extend_from_slice(&(rels.len() as u32).to_le_bytes());
            for rel in rels {
                b.extend_from_slice(&rel.to_le_bytes());
            }
        }
        let rec = decode(5, &b).unwrap();
        assert_eq!(
            (rec.owned.as_slice(), rec.loaded.as_slice()),
            (&[4, 9][..], &[4][..])
        );
        let xact = rec.xact.unwrap();
        assert_eq!((xact.gid.as_str(), xact.start_ts), ("gid", 5));
        assert_eq!(xact.owner, "alice");
        assert_eq!(rec.writes.len(), 2);
        assert_eq!(rec.writes[1], (9, b"k2".to_vec(), None));
        for cut in 0..b.len() {
            assert!(decode(5, &b[..cut]).is_err(), "cut at {cut}");
        }
    }
}
