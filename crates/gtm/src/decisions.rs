//! The decision log: the durable outcome of each cross-datanode transaction (decision
//! 0029), keyed by its start timestamp.
//!
//! File `DIR/gtm.decisions`: an 8-byte magic, then fixed-size records
//! `u8 kind (1 committed, 2 aborted, 3 forget), u64 start, u64 commit ts (0 unless
//! committed), u32 checksum` (little-endian; the checksum is the low 32 bits of the
//! XXH3-64 of the 17 bytes before it). Replaying the records in order gives the live map.
//!
//! Callers decide under [`DecisionLog`]'s lock (so that the check for an existing record
//! and the new record are one serialized step) and queue the record to the writer
//! thread, "meridian-gtm-decide"; they then wait, off the lock and without blocking a
//! thread, until the writer reports the record durable. The writer takes every queued
//! message, appends the records in one write, fsyncs once and answers every waiter
//! (group commit). It keeps its own copy of the live map (the file's replay) and rewrites
//! the file with the live records once the records appended since the last rewrite
//! exceed max(10,000, 4 × live records).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use tokio::sync::oneshot;

use crate::Timestamp;

const FILE: &str = "gtm.decisions";
const TMP: &str = "gtm.decisions.tmp";
const MAGIC: &[u8; 8] = b"MGTMDEC1";
const RECORD_LEN: usize = 1 + 8 + 8 + 4;
const KIND_COMMITTED: u8 = 1;
const KIND_ABORTED: u8 = 2;
const KIND_FORGET: u8 = 3;

/// The log is rewritten once the records appended since the last rewrite exceed
/// max(this, 4 × live records).
pub const DEFAULT_COMPACT_MIN: u64 = 10_000;

/// A recorded outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Committed(Timestamp),
    Aborted,
}

/// A record of the log: a decision for `start`, or its forgetting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Record {
    Decided(Timestamp, Decision),
    Forget(Timestamp),
}

impl Record {
    fn encode(self, out: &mut Vec<u8>) {
        let (kind, start, ts) = match self {
            Record::Decided(s, Decision::Committed(ts)) => (KIND_COMMITTED, s, ts),
            Record::Decided(s, Decision::Aborted) => (KIND_ABORTED, s, 0),
            Record::Forget(s) => (KIND_FORGET, s, 0),
        };
        let at = out.len();
        out.push(kind);
        out.extend_from_slice(&start.to_le_bytes());
        out.extend_from_slice(&ts.to_le_bytes());
        let sum = checksum(&out[at..]);
        out.extend_from_slice(&sum.to_le_bytes());
    }

    /// None if the checksum or the kind is wrong.
    fn decode(b: &[u8]) -> Option<Record> {
        let sum = u32::from_le_bytes(b[17..21].try_into().unwrap());
        if sum != checksum(&b[..17]) {
            return None;
        }
        let start = u64::from_le_bytes(b[1..9].try_into().unwrap());
        let ts = u64::from_le_bytes(b[9..17].try_into().unwrap());
        match b[0] {
            KIND_COMMITTED => Some(Record::Decided(start, Decision::Committed(ts))),
            KIND_ABORTED => Some(Record::Decided(start, Decision::Aborted)),
            KIND_FORGET => Some(Record::Forget(start)),
            _ => None,
        }
    }

    /// Replays the record onto `live`. Aborted decisions are never forgotten: a late
    /// `decide` of an aborted transaction must keep being refused.
    fn apply(self, live: &mut HashMap<Timestamp, Decision>) {
        match self {
            Record::Decided(s, d) => {
                live.insert(s, d);
            }
            Record::Forget(s) => {
                if let Some(Decision::Committed(_)) = live.get(&s) {
                    live.remove(&s);
                }
            }
        }
    }
}

fn checksum(b: &[u8]) -> u32 {
    xxhash_rust::xxh3::xxh3_64(b) as u32
}

/// What a caller waits for before answering: the writer has made every record up to
/// this one durable (0: nothing to wait for).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
#[must_use]
pub struct Ticket(u64);

enum Msg {
    Append(Record),
    /// Answer once every record up to the ticket is durable.
    Wait(Ticket, oneshot::Sender<PgResult<()>>),
}

struct State {
    live: HashMap<Timestamp, Decision>,
    /// Ticket of the last record queued.
    last: Ticket,
    tx: mpsc::Sender<Msg>,
}

/// Shared between the log and its writer thread.
struct Durability {
    /// Every record up to this ticket is fsynced.
    durable: AtomicU64,
    /// Set when an append or fsync failed: nothing more is made durable (what is on disk
    /// is uncertain until the GTM restarts and reads it again).
    failed: AtomicBool,
    path: PathBuf,
}

impl Durability {
    fn failure(&self) -> PgError {
        PgError::new(
            codes::IO_ERROR,
            format!(
                "could not write the GTM decision log \"{}\"; the GTM must be restarted",
                self.path.display()
            ),
        )
    }
}

/// The decision log of an open oracle.
pub struct DecisionLog {
    state: Mutex<State>,
    shared: Arc<Durability>,
    writer: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for DecisionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecisionLog")
            .field("path", &self.shared.path)
            .finish()
    }
}

fn io_err(context: &str, path: &Path, err: std::io::Error) -> PgError {
    PgError::io(&format!("{context} \"{}\"", path.display()), err)
}

impl DecisionLog {
    /// Opens (creating if needed) `DIR/gtm.decisions`, replays it and starts the writer
    /// thread. A torn last record (crash mid-append) is dropped; any other damage is an
    /// error naming the file.
    pub fn open(dir: &Path, compact_min: u64) -> PgResult<DecisionLog> {
        let path = dir.join(FILE);
        let (file, live, records) = open_file(&path)?;
        let shared = Arc::new(Durability {
            durable: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            path: path.clone(),
        });
        let (tx, rx) = mpsc::channel();
        let writer = Writer {
            file,
            dir: dir.to_path_buf(),
            live: live.clone(),
            appended: records,
            compact_min,
            shared: shared.clone(),
        };
        let writer = std::thread::Builder::new()
            .name("meridian-gtm-decide".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| PgError::io("could not start the GTM decision writer", e))?;
        tracing::debug!(path = %path.display(), live = live.len(), "GTM decision log opened");
        Ok(DecisionLog {
            state: Mutex::new(State {
                live,
                last: Ticket(0),
                tx,
            }),
            shared,
            writer: Some(writer),
        })
    }

    /// One serialized step on `start`'s record: `step` gets the current decision and
    /// returns the decision to record (if it makes one) and its result. Returns the
    /// result and the ticket to wait for before answering from it: the new record's, or
    /// for an existing decision the last queued record's (it may not be durable yet).
    pub fn step<R>(
        &self,
        start: Timestamp,
        step: impl FnOnce(Option<Decision>) -> PgResult<(Option<Decision>, R)>,
    ) -> PgResult<(R, Ticket)> {
        let mut st = self.state.lock();
        if self.shared.failed.load(Ordering::Acquire) {
            return Err(self.shared.failure());
        }
        let current = st.live.get(&start).copied();
        let (new, result) = step(current)?;
        match new {
            Some(d) => {
                debug_assert!(current.is_none(), "the first decision wins");
                let record = Record::Decided(start, d);
                record.apply(&mut st.live);
                Ok((result, self.queue(&mut st, record)))
            }
            None if current.is_some() => Ok((result, st.last)),
            None => Ok((result, Ticket(0))),
        }
    }

    /// Drops `start`'s committed record (aborted ones are kept). Not waited for: the
    /// record rides on the writer's next fsync.
    pub fn forget(&self, start: Timestamp) {
        let mut st = self.state.lock();
        if let Some(Decision::Committed(_)) = st.live.get(&start) {
            let record = Record::Forget(start);
            record.apply(&mut st.live);
            let _ = self.queue(&mut st, record);
        }
    }

    fn queue(&self, st: &mut State, record: Record) -> Ticket {
        st.last = Ticket(st.last.0 + 1);
        // Sent under the lock: the channel holds the records in ticket order. If the
        // writer is gone (it only exits when the log is dropped), the wait reports it.
        let _ = st.tx.send(Msg::Append(record));
        st.last
    }

    /// Waits (without blocking a thread) until every record up to `ticket` is durable.
    pub async fn wait(&self, ticket: Ticket) -> PgResult<()> {
        if ticket.0 <= self.shared.durable.load(Ordering::Acquire) {
            return Ok(());
        }
        if self.shared.failed.load(Ordering::Acquire) {
            return Err(self.shared.failure());
        }
        let (tx, rx) = oneshot::channel();
        // Queued after the records it waits for (they were sent before `ticket` was
        // handed out), so the writer answers it after their fsync.
        let _ = self.state.lock().tx.send(Msg::Wait(ticket, tx));
        match rx.await {
            Ok(r) => r,
            Err(_) => Err(self.shared.failure()),
        }
    }

    /// The recorded decision for `start` (durable or not), for tests and diagnostics.
    pub fn get(&self, start: Timestamp) -> Option<Decision> {
        self.state.lock().live.get(&start).copied()
    }

    /// Number of live records.
    pub fn len(&self) -> usize {
        self.state.lock().live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for DecisionLog {
    fn drop(&mut self) {
        // Closing the channel stops the writer once it has written what was queued.
        let (closed, _) = mpsc::channel();
        drop(std::mem::replace(&mut self.state.get_mut().tx, closed));
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// Opens the log for appending: returns the file positioned after the last whole record,
/// the live map and the number of records read.
fn open_file(path: &Path) -> PgResult<(File, HashMap<Timestamp, Decision>, u64)> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| io_err("could not open", path, e))?;
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)
        .map_err(|e| io_err("could not read", path, e))?;
    let mut live = HashMap::new();
    let corrupt = |what: &str| {
        PgError::new(
            codes::DATA_CORRUPTED,
            format!("GTM decision log \"{}\" is corrupt: {what}", path.display()),
        )
    };
    let valid_len = if buf.len() < MAGIC.len() {
        // New, or torn while its header was being written (nothing was ever recorded).
        if !MAGIC.starts_with(&buf) {
            return Err(corrupt("bad header"));
        }
        file.set_len(0)
            .and_then(|_| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(MAGIC))
            .and_then(|_| file.sync_all())
            .map_err(|e| io_err("could not initialize", path, e))?;
        sync_dir(path.parent().unwrap_or(Path::new(".")))?;
        MAGIC.len()
    } else {
        if &buf[..MAGIC.len()] != MAGIC {
            return Err(corrupt("bad header"));
        }
        let body = &buf[MAGIC.len()..];
        let whole = body.len() / RECORD_LEN;
        let mut valid = whole;
        for (i, chunk) in body.chunks_exact(RECORD_LEN).enumerate() {
            match Record::decode(chunk) {
                Some(r) => r.apply(&mut live),
                // The last record may be torn (its bytes allocated, not all written).
                None if i + 1 == whole => valid = i,
                None => {
                    return Err(corrupt(&format!(
                        "bad record at byte {}",
                        MAGIC.len() + i * RECORD_LEN
                    )))
                }
            }
        }
        MAGIC.len() + valid * RECORD_LEN
    };
    if valid_len < buf.len() {
        tracing::warn!(path = %path.display(), "dropping a torn record at the end of the GTM decision log");
        // New records must not follow the torn bytes (they would then be corrupt
        // records in the middle).
        file.set_len(valid_len as u64)
            .and_then(|_| file.sync_all())
            .map_err(|e| io_err("could not truncate", path, e))?;
    }
    file.seek(SeekFrom::Start(valid_len as u64))
        .map_err(|e| io_err("could not seek", path, e))?;
    let records = ((valid_len - MAGIC.len()) / RECORD_LEN) as u64;
    Ok((file, live, records))
}

fn sync_dir(dir: &Path) -> PgResult<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err("could not fsync directory", dir, e))
}

/// The writer thread's state: the file, and the live map its records replay to.
struct Writer {
    file: File,
    dir: PathBuf,
    live: HashMap<Timestamp, Decision>,
    /// Records in the file (all of them since the last rewrite).
    appended: u64,
    compact_min: u64,
    shared: Arc<Durability>,
}

impl Writer {
    fn run(mut self, rx: mpsc::Receiver<Msg>) {
        let mut buf = Vec::with_capacity(64 * 1024);
        let mut waiters = Vec::new();
        // Tickets of the records written: `written` includes ones not yet fsynced.
        let mut written = 0u64;
        while let Ok(first) = rx.recv() {
            buf.clear();
            for msg in std::iter::once(first).chain(rx.try_iter()) {
                match msg {
                    Msg::Append(r) => {
                        r.encode(&mut buf);
                        r.apply(&mut self.live);
                        written += 1;
                    }
                    Msg::Wait(t, tx) => waiters.push((t, tx)),
                }
            }
            let durable = self.shared.durable.load(Ordering::Acquire);
            let result = if self.shared.failed.load(Ordering::Acquire) {
                Err(self.shared.failure())
            } else {
                // Forgets alone are not fsynced: they ride on the next fsync.
                let sync = waiters.iter().any(|(t, _)| t.0 > durable);
                self.append(&buf, sync).map(|()| {
                    if sync {
                        self.shared.durable.store(written, Ordering::Release);
                    }
                })
            };
            if let Err(e) = &result {
                tracing::error!("{e}");
                self.shared.failed.store(true, Ordering::Release);
            }
            let durable = self.shared.durable.load(Ordering::Acquire);
            for (t, tx) in waiters.drain(..) {
                let r = if t.0 <= durable {
                    Ok(())
                } else {
                    Err(self.shared.failure())
                };
                let _ = tx.send(r);
            }
            if result.is_ok() && self.appended > self.compact_min.max(4 * self.live.len() as u64) {
                match self.rewrite() {
                    // Everything written so far is in the new file, fsynced.
                    Ok(()) => self.shared.durable.store(written, Ordering::Release),
                    Err(e) => {
                        tracing::error!("{e}");
                        self.shared.failed.store(true, Ordering::Release);
                    }
                }
            }
        }
        // Closing: make what was queued durable (forgets included).
        if !self.shared.failed.load(Ordering::Acquire) {
            let _ = self.file.sync_data();
        }
    }

    fn append(&mut self, buf: &[u8], sync: bool) -> PgResult<()> {
        let path = &self.shared.path;
        if !buf.is_empty() {
            self.file
                .write_all(buf)
                .map_err(|e| io_err("could not write", path, e))?;
            self.appended += (buf.len() / RECORD_LEN) as u64;
        }
        if sync {
            self.file
                .sync_data()
                .map_err(|e| io_err("could not fsync", path, e))?;
        }
        Ok(())
    }

    /// Replaces the file with one holding only the live records: write a new file, fsync
    /// it, rename it over the old one, fsync the directory.
    fn rewrite(&mut self) -> PgResult<()> {
        let tmp = self.dir.join(TMP);
        let mut buf = Vec::with_capacity(MAGIC.len() + self.live.len() * RECORD_LEN);
        buf.extend_from_slice(MAGIC);
        for (&s, &d) in &self.live {
            Record::Decided(s, d).encode(&mut buf);
        }
        let mut f = File::create(&tmp).map_err(|e| io_err("could not create", &tmp, e))?;
        f.write_all(&buf)
            .and_then(|_| f.sync_all())
            .map_err(|e| io_err("could not write", &tmp, e))?;
        std::fs::rename(&tmp, &self.shared.path)
            .map_err(|e| io_err("could not rename", &tmp, e))?;
        sync_dir(&self.dir)?;
        tracing::debug!(
            before = self.appended,
            live = self.live.len(),
            "GTM decision log rewritten"
        );
        // `f` now names the log, positioned at its end.
        self.file = f;
        self.appended = self.live.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// Records `d` for `start` if it has no decision yet and waits until it is durable;
    /// returns the recorded decision.
    fn record(log: &DecisionLog, start: Timestamp, d: Decision) -> Decision {
        let (got, t) = log
            .step(start, |cur| {
                Ok(match cur {
                    Some(c) => (None, c),
                    None => (Some(d), d),
                })
            })
            .unwrap();
        rt().block_on(log.wait(t)).unwrap();
        got
    }

    fn file_len(dir: &Path) -> u64 {
        std::fs::metadata(dir.join(FILE)).unwrap().len()
    }

    #[test]
    fn reopen_keeps_records_and_first_decision_wins() {
        let dir = tempfile::tempdir().unwrap();
        {
            let log = DecisionLog::open(dir.path(), DEFAULT_COMPACT_MIN).unwrap();
            assert_eq!(
                record(&log, 10, Decision::Committed(11)),
                Decision::Committed(11)
            );
            assert_eq!(record(&log, 10, Decision::Aborted), Decision::Committed(11));
            assert_eq!(record(&log, 20, Decision::Aborted), Decision::Aborted);
            assert_eq!(
                record(&log, 30, Decision::Committed(31)),
                Decision::Committed(31)
            );
            log.forget(30);
            log.forget(20); // aborted: kept
        }
        let log = DecisionLog::open(dir.path(), DEFAULT_COMPACT_MIN).unwrap();
        assert_eq!(log.get(10), Some(Decision::Committed(11)));
        assert_eq!(log.get(20), Some(Decision::Aborted));
        assert_eq!(log.get(30), None);
        assert_eq!(log.len(), 2);
    }

    #[test]
    fn torn_tail_is_ignored_and_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        {
            let log = DecisionLog::open(dir.path(), DEFAULT_COMPACT_MIN).unwrap();
            record(&log, 1, Decision::Committed(2));
            record(&log, 3, Decision::Committed(4));
        }
        let full = file_len(dir.path());
        let path = dir.path().join(FILE);
        // A partial record.
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(full - 5).unwrap();
        drop(f);
        {
            let log = DecisionLog::open(dir.path(), DEFAULT_COMPACT_MIN).unwrap();
            assert_eq!(log.get(1), Some(Decision::Committed(2)));
            assert_eq!(log.get(3), None);
            // Appends go after the last whole record.
            record(&log, 5, Decision::Aborted);
        }
        // A whole last record with garbage in it (allocated, never written).
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(&[0u8; RECORD_LEN]);
        std::fs::write(&path, &bytes).unwrap();
        let log = DecisionLog::open(dir.path(), DEFAULT_COMPACT_MIN).unwrap();
        assert_eq!(log.get(1), Some(Decision::Committed(2)));
        assert_eq!(log.get(5), Some(Decision::Aborted));
        drop(log);
        assert_eq!(file_len(dir.path()), (MAGIC.len() + 2 * RECORD_LEN) as u64);
    }

    #[test]
    fn corrupt_record_in_the_middle_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        {
            let log = DecisionLog::open(dir.path(), DEFAULT_COMPACT_MIN).unwrap();
            for s in 1..=3 {
                record(&log, s, Decision::Aborted);
            }
        }
        let path = dir.path().join(FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[MAGIC.len() + RECORD_LEN + 3] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let e = DecisionLog::open(dir.path(), DEFAULT_COMPACT_MIN).unwrap_err();
        assert_eq!(e.code, codes::DATA_CORRUPTED);
        assert!(e.message.contains("gtm.decisions"), "{}", e.message);
        std::fs::write(&path, b"NOTALOGFILE").unwrap();
        let e = DecisionLog::open(dir.path(), DEFAULT_COMPACT_MIN).unwrap_err();
        assert_eq!(e.code, codes::DATA_CORRUPTED);
    }

    #[test]
    fn compaction_keeps_live_records_and_drops_forgotten_ones() {
        let dir = tempfile::tempdir().unwrap();
        {
            let log = DecisionLog::open(dir.path(), 10).unwrap();
            record(&log, 1, Decision::Aborted);
            record(&log, 2, Decision::Committed(3));
            for s in 100..400 {
                record(&log, s, Decision::Committed(s + 1_000));
                log.forget(s);
            }
            record(&log, 7, Decision::Committed(8));
            // Rewritten at least once: far fewer than the 603 records appended remain.
            assert!(file_len(dir.path()) < (MAGIC.len() + 100 * RECORD_LEN) as u64);
            assert_eq!(log.len(), 3);
        }
        assert!(!dir.path().join(TMP).exists());
        let log = DecisionLog::open(dir.path(), 10).unwrap();
        assert_eq!(log.get(1), Some(Decision::Aborted));
        assert_eq!(log.get(2), Some(Decision::Committed(3)));
        assert_eq!(log.get(7), Some(Decision::Committed(8)));
        assert_eq!(log.len(), 3);
    }

    /// Rewrites racing with appends and forgets from many tasks: the reopened log has
    /// exactly the live map.
    #[test]
    fn compaction_under_concurrent_appends_keeps_the_live_map() {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(DecisionLog::open(dir.path(), 10).unwrap());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .build()
            .unwrap();
        rt.block_on(async {
            let mut tasks = Vec::new();
            for t in 0..8u64 {
                let log = log.clone();
                tasks.push(tokio::spawn(async move {
                    for i in 0..500u64 {
                        let s = 1 + t * 10_000 + i;
                        let d = if i % 7 == 0 {
                            Decision::Aborted
                        } else {
                            Decision::Committed(s + 1)
                        };
                        let (_, ticket) = log.step(s, |_| Ok((Some(d), ()))).unwrap();
                        log.wait(ticket).await.unwrap();
                        if i % 20 != 0 {
                            log.forget(s);
                        }
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        });
        let expected: HashMap<Timestamp, Decision> = log.state.lock().live.clone();
        drop(log);
        // Rewritten along the way: fewer records than were appended remain.
        assert!(file_len(dir.path()) < (MAGIC.len() + 4_000 * RECORD_LEN) as u64);
        let reopened = DecisionLog::open(dir.path(), 10).unwrap();
        assert_eq!(reopened.state.lock().live, expected);
        // Aborted ones stay; committed ones that were forgotten are gone.
        assert!(expected.values().any(|d| *d == Decision::Aborted));
        assert!(expected.len() < 8 * 500 / 4);
    }

    #[test]
    fn concurrent_waiters_share_fsyncs_and_all_get_durable_answers() {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(DecisionLog::open(dir.path(), DEFAULT_COMPACT_MIN).unwrap());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .build()
            .unwrap();
        rt.block_on(async {
            let mut tasks = Vec::new();
            for s in 1..=400u64 {
                let log = log.clone();
                tasks.push(tokio::spawn(async move {
                    let (_, t) = log
                        .step(s, |_| Ok((Some(Decision::Committed(s + 1)), ())))
                        .unwrap();
                    log.wait(t).await.unwrap();
                    // Answered only once durable.
                    assert!(log.shared.durable.load(Ordering::Acquire) >= t.0);
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        });
        drop(log);
        let log = DecisionLog::open(dir.path(), DEFAULT_COMPACT_MIN).unwrap();
        assert_eq!(log.len(), 400);
    }
}
