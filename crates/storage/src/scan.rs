//! Range scans: the live rows of a key range as of a snapshot, in key order, read from
//! the `latest` keyspace (one entry per key) and, for keys written after the snapshot,
//! from `data` (the crate README's "Range scans").
//!
//! A scan starts on the caller's thread. Once it has returned `PIPELINE_AFTER` rows it
//! is a large scan, and the rest of the storage iteration (fjall's merge iterators, the
//! MVCC filter) moves to a thread of its own that hands rows back in
//! batches through a bounded channel, so the caller decodes and evaluates rows while the
//! next ones are read (decision 0024). Point reads and short ranges never start a thread.
//!
//! The fjall iterator, and with it the snapshot of the tables and memtables it reads, is
//! created by `Store::scan` on the caller's thread either way: moving it changes nothing
//! that it sees. Dropping the `ScanIter` stops the producer: its next send fails, and a
//! flag stops it between entries while it skips deleted keys.

use crate::{decode_latest, io_err, prefix_body, unescape, version_in_data, Timestamp};
use bytes::Bytes;
use pgerror::{PgError, PgResult};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

/// One live row: (its stored key, row bytes).
type Item = PgResult<(StoredKey, Bytes)>;

/// The stored key of a scanned row (its version prefix in `latest`): most scans never
/// look at it (`SELECT count(*)`), so the user key is decoded only when asked for.
pub struct StoredKey(fjall::UserKey);

impl StoredKey {
    /// The user key.
    pub fn user_key(&self) -> Vec<u8> {
        let body = prefix_body(&self.0);
        let mut key = Vec::with_capacity(body.len());
        key.extend(unescape(body));
        key
    }

    /// The user key compared with `key`, without decoding it.
    pub fn cmp_user_key(&self, key: &[u8]) -> std::cmp::Ordering {
        unescape(prefix_body(&self.0)).cmp(key.iter().copied())
    }
}

/// Rows returned on the caller's thread before the scan moves to its own thread. A
/// thread start and each batch handed over cost a wake-up, which on a busy machine waits
/// for a CPU: a nested loop rescanning a table of a few ten thousand rows keeps reading
/// inline, and a scan of millions loses under 2 % of its overlap.
pub const PIPELINE_AFTER: usize = 32_768;
/// A batch is sent when it has this many rows or row bytes, whichever comes first.
const BATCH_ROWS: usize = 512;
const BATCH_BYTES: usize = 256 * 1024;
/// Batches queued between the producer and the caller: bounds the scan's memory to
/// about (QUEUED_BATCHES + 2) × BATCH_BYTES beyond its current row.
const QUEUED_BATCHES: usize = 2;
/// fjall's iterators need little stack; the default 2 MiB would only reserve address space.
const PRODUCER_STACK: usize = 256 * 1024;

/// Iterator over the live rows of a range as of a snapshot.
pub struct ScanIter {
    state: State,
}

enum State {
    Inline { rows: VisibleRows, returned: usize },
    Piped(Piped),
    Done,
}

impl ScanIter {
    /// `iter`: over `latest` in the scanned range.
    pub(crate) fn new(
        iter: Option<fjall::Iter>,
        data: fjall::Keyspace,
        snapshot: Timestamp,
    ) -> ScanIter {
        let state = match iter {
            Some(iter) => State::Inline {
                rows: VisibleRows::new(iter, data, snapshot),
                returned: 0,
            },
            None => State::Done,
        };
        ScanIter { state }
    }
}

impl Iterator for ScanIter {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        match &mut self.state {
            State::Inline { rows, returned } if *returned < PIPELINE_AFTER => {
                *returned += 1;
                rows.next()
            }
            State::Inline { .. } => {
                let State::Inline { rows, .. } = std::mem::replace(&mut self.state, State::Done)
                else {
                    unreachable!()
                };
                self.state = match Piped::start(rows) {
                    Ok(piped) => State::Piped(piped),
                    // No thread to be had (resource limits): go on reading here.
                    Err(rows) => State::Inline { rows, returned: 0 },
                };
                self.next()
            }
            State::Piped(piped) => piped.next(),
            State::Done => None,
        }
    }
}

/// The scan's iteration on its own thread, seen from the caller.
struct Piped {
    batches: Receiver<Vec<Item>>,
    current: std::vec::IntoIter<Item>,
    stop: Arc<AtomicBool>,
}

impl Piped {
    /// Starts the producer thread; gives `rows` back if no thread could be started.
    fn start(mut rows: VisibleRows) -> Result<Piped, VisibleRows> {
        let (tx, batches) = sync_channel(QUEUED_BATCHES);
        let stop = Arc::new(AtomicBool::new(false));
        rows.stop = Some(stop.clone());
        // The rows come back through this slot if the spawn fails: `spawn` consumes the
        // closure that owns them.
        let slot = Arc::new(parking_lot::Mutex::new(Some(rows)));
        let theirs = slot.clone();
        let spawned = std::thread::Builder::new()
            .name("meridian-scan".into())
            .stack_size(PRODUCER_STACK)
            .spawn(move || {
                if let Some(rows) = theirs.lock().take() {
                    produce(rows, tx);
                }
            });
        match spawned {
            Ok(_) => Ok(Piped {
                batches,
                current: Vec::new().into_iter(),
                stop,
            }),
            Err(_) => {
                let mut rows = slot.lock().take().expect("the thread never started");
                rows.stop = None;
                Err(rows)
            }
        }
    }

    fn next(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.current.next() {
                return Some(item);
            }
            // Err: the producer has sent its last batch and ended.
            self.current = self.batches.recv().ok()?.into_iter();
        }
    }
}

impl Drop for Piped {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The producer thread: reads batches until the range, an error or the caller ends.
fn produce(mut rows: VisibleRows, tx: SyncSender<Vec<Item>>) {
    loop {
        let mut batch = Vec::with_capacity(BATCH_ROWS);
        let mut bytes = 0;
        let mut last = false;
        while batch.len() < BATCH_ROWS && bytes < BATCH_BYTES {
            match rows.next() {
                None => {
                    last = true;
                    break;
                }
                Some(item) => {
                    match &item {
                        Ok((key, row)) => bytes += key.0.len() + row.len(),
                        Err(_) => last = true,
                    }
                    batch.push(item);
                    if last {
                        break;
                    }
                }
            }
        }
        // A failed send: the caller has dropped the scan.
        if (!batch.is_empty() && tx.send(batch).is_err()) || last {
            return;
        }
    }
}

/// The MVCC filter over `latest`: each key's newest version, when the snapshot sees it;
/// otherwise the version the snapshot sees, sought in `data`. A delete is no row.
struct VisibleRows {
    /// Over `latest` in the scanned range.
    iter: fjall::Iter,
    data: fjall::Keyspace,
    snapshot: Timestamp,
    /// Set (on the producer thread) when the caller has dropped the scan.
    stop: Option<Arc<AtomicBool>>,
}

impl VisibleRows {
    fn new(iter: fjall::Iter, data: fjall::Keyspace, snapshot: Timestamp) -> VisibleRows {
        VisibleRows {
            iter,
            data,
            snapshot,
            stop: None,
        }
    }
}

impl Iterator for VisibleRows {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        loop {
            // Checked per entry: a run of deleted keys not yet collected can be long.
            if self
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed))
            {
                return None;
            }
            let (prefix, v) = match self.iter.next()?.into_inner() {
                Ok(kv) => kv,
                Err(e) => return Some(Err(io_err("scan", e))),
            };
            if prefix.len() < 8 + 2 {
                return Some(Err(PgError::internal("storage: malformed latest key")));
            }
            let newest = match decode_latest(v) {
                Ok(version) => version,
                Err(e) => return Some(Err(e)),
            };
            let seen = if newest.commit_ts <= self.snapshot {
                newest.row
            } else {
                // Written after the snapshot: the version it sees is in `data`, and GC
                // keeps it while the snapshot is above the horizon.
                match version_in_data(&self.data, &prefix, self.snapshot) {
                    Ok(version) => version.and_then(|v| v.row),
                    Err(e) => return Some(Err(e)),
                }
            };
            if let Some(row) = seen {
                return Some(Ok((StoredKey(prefix), row)));
            }
        }
    }
}
