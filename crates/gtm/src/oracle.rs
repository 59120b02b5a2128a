//! The timestamp oracle: issues strictly increasing 64-bit timestamps, persists a
//! high-water window ahead of use, and keeps the GC horizon (oldest registered start
//! timestamp) in an ordered set.
//!
//! Hot path: issuing is one `fetch_add` on an atomic plus one atomic load of the
//! persisted limit. Registering a start timestamp is an O(1) append and unregistering
//! an O(log d) finger search in a sorted deque ([`HorizonSet`]) under a short lock;
//! reading the horizon is two atomic loads (O(1)).
//!
//! The oracle also owns the decision log ([`DecisionLog`]): `decide` issues a commit
//! timestamp and records it in one serialized step with `resolve`'s check, and both
//! answer only once their record is durable.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};

use crate::decisions::{Decision, DecisionLog, Ticket, DEFAULT_COMPACT_MIN};
use crate::horizon::HorizonSet;
use crate::{Resolution, Timestamp};

/// Default number of timestamps reserved (persisted) ahead of use. 2^26 ≈ 67 M: at a
/// few million timestamps per second that is one fsync every ten seconds or so (one every
/// ~2 s even at the in-process peak of ~20 M/s), and a restart
/// skips at most this many values out of 2^64.
pub const DEFAULT_WINDOW: u64 = 1 << 26;

const HWM_FILE: &str = "gtm.hwm";
const HWM_TMP: &str = "gtm.hwm.tmp";
const LOCK_FILE: &str = "gtm.lock";
const HWM_MAGIC: &[u8; 8] = b"MGTMHWM1";
const HWM_CHECK: u64 = 0x6d65_7269_6469_616e; // "meridian"

/// Sentinel in `horizon_cache`: no start timestamp is registered, the horizon is the
/// next timestamp to be issued.
const EMPTY: u64 = u64::MAX;

/// Options for [`Oracle::open_with`].
#[derive(Debug, Clone)]
pub struct OracleOptions {
    /// Timestamps reserved per persisted window (at least 2).
    pub window: u64,
}

impl Default for OracleOptions {
    fn default() -> Self {
        OracleOptions {
            window: DEFAULT_WINDOW,
        }
    }
}

struct Persist {
    dir: PathBuf,
    /// Count of windows persisted by this process (for tests and metrics).
    saves: u64,
}

/// The timestamp oracle. Cheap to share behind an `Arc`.
pub struct Oracle {
    /// Next timestamp to issue.
    next: AtomicU64,
    /// Every timestamp `< limit` may be issued: `limit` has been made durable.
    limit: AtomicU64,
    /// When `next` passes this, one issuer extends the window ahead of need.
    soft_limit: AtomicU64,
    window: u64,
    persist: Mutex<Persist>,
    /// Registered start timestamps (value: how many registrations of that timestamp).
    registered: Mutex<HorizonSet>,
    /// Minimum of `registered`, or [`EMPTY`]. Only written under `registered`'s lock.
    horizon_cache: AtomicU64,
    /// The cluster metadata's version, published by the process that hosts the metadata
    /// beside this oracle and carried on every answer (the GTM does not read metadata).
    metadata_version: AtomicU64,
    /// Outcomes of cross-datanode transactions (`DIR/gtm.decisions`).
    decisions: DecisionLog,
    /// Held for the life of the oracle: an exclusive lock on `DIR/gtm.lock`.
    _lock: Option<File>,
}

impl std::fmt::Debug for Oracle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oracle")
            .field("next", &self.next.load(Ordering::Relaxed))
            .field("limit", &self.limit.load(Ordering::Relaxed))
            .field("horizon", &self.horizon())
            .finish()
    }
}

fn io_err(context: &str, path: &Path, err: std::io::Error) -> PgError {
    PgError::io(&format!("{context} \"{}\"", path.display()), err)
}

impl Oracle {
    /// Opens (creating if needed) the oracle's state under `data_dir` with default options.
    pub fn open(data_dir: &Path) -> PgResult<Oracle> {
        Oracle::open_with(data_dir, OracleOptions::default())
    }

    /// Opens the oracle: reads the persisted high-water mark, starts issuing at it, and
    /// persists the next window before returning. Takes an exclusive lock on the data
    /// directory so that two GTMs can never issue from the same state.
    pub fn open_with(data_dir: &Path, opts: OracleOptions) -> PgResult<Oracle> {
        // Registered now, so that a scrape shows them before the first timestamp.
        crate::metrics::metrics();
        let window = opts.window.max(2);
        std::fs::create_dir_all(data_dir)
            .map_err(|e| io_err("could not create GTM data directory", data_dir, e))?;
        let lock_path = data_dir.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| io_err("could not open lock file", &lock_path, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(PgError::new(
                    codes::OBJECT_NOT_IN_PREREQUISITE_STATE,
                    format!(
                        "GTM data directory \"{}\" is in use by another GTM",
                        data_dir.display()
                    ),
                ))
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(io_err("could not lock", &lock_path, e))
            }
        }
        let persisted = read_hwm(data_dir)?;
        // Every timestamp issued before was < persisted; 0 is never issued.
        let start = persisted.max(1);
        let new_limit = start.checked_add(window).ok_or_else(|| {
            PgError::new(codes::PROGRAM_LIMIT_EXCEEDED, "GTM timestamps exhausted")
        })?;
        write_hwm(data_dir, new_limit)?;
        let decisions = DecisionLog::open(data_dir, DEFAULT_COMPACT_MIN)?;
        tracing::debug!(start, limit = new_limit, "GTM oracle opened");
        Ok(Oracle {
            next: AtomicU64::new(start),
            limit: AtomicU64::new(new_limit),
            soft_limit: AtomicU64::new(new_limit - window / 2),
            window,
            persist: Mutex::new(Persist {
                dir: data_dir.to_path_buf(),
                saves: 1,
            }),
            registered: Mutex::new(HorizonSet::new()),
            horizon_cache: AtomicU64::new(EMPTY),
            metadata_version: AtomicU64::new(0),
            decisions,
            _lock: Some(lock),
        })
    }

    /// Issues `n >= 1` consecutive timestamps and returns the first. Never returns a
    /// value that is not below the durable high-water mark.
    #[inline]
    pub fn issue(&self, n: u64) -> PgResult<Timestamp> {
        debug_assert!(n >= 1);
        let first = self.next.fetch_add(n, Ordering::AcqRel);
        crate::metrics::metrics().timestamps_issued.inc_by(n);
        let end = first + n; // one past the last issued
        if end > self.soft_limit.load(Ordering::Acquire) {
            self.extend(end)?;
        }
        Ok(first)
    }

    /// Slow path: `end` is past the soft limit. If it is within the durable limit, one
    /// caller (whoever gets the lock without waiting) persists the next window while the
    /// others carry on; if it is beyond the limit, the caller waits until it is covered.
    #[cold]
    fn extend(&self, end: u64) -> PgResult<()> {
        if end <= self.limit.load(Ordering::Acquire) {
            // Covered already; extend ahead of need only if nobody else is doing it.
            if let Some(mut p) = self.persist.try_lock() {
                if end > self.soft_limit.load(Ordering::Acquire) {
                    // These timestamps are covered already: a failure here is reported
                    // (and retried by the next issuer) but does not fail this request.
                    if let Err(e) = self.save_locked(&mut p, end) {
                        tracing::error!(
                            "could not persist the GTM high-water mark ahead of use: {e}"
                        );
                    }
                }
            }
            return Ok(());
        }
        let mut p = self.persist.lock();
        if end > self.limit.load(Ordering::Acquire) {
            self.save_locked(&mut p, end)?;
        }
        Ok(())
    }

    fn save_locked(&self, p: &mut Persist, end: u64) -> PgResult<()> {
        let base = end.max(self.next.load(Ordering::Acquire));
        let new_limit = base.checked_add(self.window).ok_or_else(|| {
            PgError::new(codes::PROGRAM_LIMIT_EXCEEDED, "GTM timestamps exhausted")
        })?;
        write_hwm(&p.dir, new_limit)?;
        p.saves += 1;
        // Publish only after the window is durable.
        self.limit.fetch_max(new_limit, Ordering::AcqRel);
        self.soft_limit
            .fetch_max(new_limit - self.window / 2, Ordering::AcqRel);
        Ok(())
    }

    /// The next timestamp that will be issued (everything issued so far is below it).
    pub fn peek_next(&self) -> Timestamp {
        self.next.load(Ordering::Acquire)
    }

    /// The durable high-water mark: no timestamp at or above it has been issued.
    pub fn durable_limit(&self) -> Timestamp {
        self.limit.load(Ordering::Acquire)
    }

    /// How many windows this process has persisted (1 after open).
    pub fn windows_saved(&self) -> u64 {
        self.persist.lock().saves
    }

    /// A fresh timestamp, not registered.
    #[inline]
    pub fn timestamp(&self) -> PgResult<Timestamp> {
        self.issue(1)
    }

    /// A new start timestamp, registered in the horizon set.
    #[inline]
    pub fn begin(&self) -> PgResult<Timestamp> {
        self.begin_n(1)
    }

    /// `n >= 1` new start timestamps `first..first+n`, all registered. Issuing happens
    /// under the horizon lock, after the cached horizon has been lowered to at most the
    /// value about to be issued, so that a concurrent `horizon()` never reports a value
    /// above a start timestamp that is about to be registered.
    pub fn begin_n(&self, n: u64) -> PgResult<Timestamp> {
        let mut set = self.registered.lock();
        if set.is_empty() {
            // Pin the horizon at the current `next` (<= whatever we are about to issue).
            self.horizon_cache
                .store(self.next.load(Ordering::Acquire), Ordering::Release);
        }
        let first = match self.issue(n) {
            Ok(f) => f,
            Err(e) => {
                if set.is_empty() {
                    self.horizon_cache.store(EMPTY, Ordering::Release);
                }
                return Err(e);
            }
        };
        for ts in first..first + n {
            // New timestamps are larger than every registered one: O(1) append.
            set.insert(ts);
        }
        self.update_cache(&set);
        Ok(first)
    }

    /// Registers existing start timestamps again (a client re-registering its open
    /// transactions after reconnecting). The horizon may move back down to them.
    pub fn register_existing(&self, starts: &[Timestamp]) {
        if starts.is_empty() {
            return;
        }
        let mut set = self.registered.lock();
        for &ts in starts {
            if ts != 0 {
                set.insert(ts);
            }
        }
        self.update_cache(&set);
    }

    /// Unregisters start timestamps (abort, read-only end). Unknown timestamps are ignored.
    pub fn finish(&self, starts: &[Timestamp]) {
        if starts.is_empty() {
            return;
        }
        let mut set = self.registered.lock();
        for &ts in starts {
            set.remove(ts);
        }
        self.update_cache(&set);
    }

    /// Commits the given transactions: issues one commit timestamp for each (consecutive,
    /// returned as the first), each greater than everything issued before, then
    /// unregisters their start timestamps.
    pub fn commit_n(&self, starts: &[Timestamp]) -> PgResult<Timestamp> {
        let n = starts.len() as u64;
        let first = self.issue(n.max(1))?;
        self.finish(starts);
        Ok(first)
    }

    /// Decides to commit `start` (the serialized step of [`Oracle::decide`], for callers
    /// that wait for several at once): issues its commit timestamp and records it, or
    /// returns the recorded commit timestamp (a retry), or `None` if `start` was
    /// recorded aborted. `held`: the caller holds a registration of `start`, released
    /// here whatever the outcome (after issuing, as `commit_n` does). The answer may be
    /// given once [`Oracle::wait_durable`] of the ticket returns.
    pub fn decide_step(
        &self,
        start: Timestamp,
        held: bool,
    ) -> PgResult<(Option<Timestamp>, Ticket)> {
        let r = self.decisions.step(start, |current| match current {
            Some(Decision::Committed(ts)) => Ok((None, Some(ts))),
            Some(Decision::Aborted) => Ok((None, None)),
            None => {
                let ts = self.issue(1)?;
                Ok((Some(Decision::Committed(ts)), Some(ts)))
            }
        });
        // Released even on error: the caller (a connection) has already forgotten it.
        if held {
            self.finish(std::slice::from_ref(&start));
        }
        r
    }

    /// What a participant holding a prepared part of `start` should do (the serialized
    /// step of [`Oracle::resolve`]): the recorded decision; `Pending` while `start` is
    /// registered (its coordinator holds it); otherwise records and answers `Aborted`.
    pub fn resolve_step(&self, start: Timestamp) -> PgResult<(Resolution, Ticket)> {
        self.decisions.step(start, |current| {
            Ok(match current {
                Some(Decision::Committed(ts)) => (None, Resolution::Committed(ts)),
                Some(Decision::Aborted) => (None, Resolution::Aborted),
                None if self.registered.lock().contains(start) => (None, Resolution::Pending),
                None => (Some(Decision::Aborted), Resolution::Aborted),
            })
        })
    }

    /// Waits until the records up to `ticket` are durable (never blocks a thread).
    pub async fn wait_durable(&self, ticket: Ticket) -> PgResult<()> {
        self.decisions.wait(ticket).await
    }

    /// [`GtmClient::decide`](crate::GtmClient::decide) on this oracle: `start` is
    /// registered here by the caller.
    pub async fn decide(&self, start: Timestamp) -> PgResult<Timestamp> {
        let (ts, ticket) = self.decide_step(start, true)?;
        self.wait_durable(ticket).await?;
        ts.ok_or_else(aborted_by_resolver)
    }

    /// [`GtmClient::resolve`](crate::GtmClient::resolve) on this oracle.
    pub async fn resolve(&self, start: Timestamp) -> PgResult<Resolution> {
        let (r, ticket) = self.resolve_step(start)?;
        self.wait_durable(ticket).await?;
        Ok(r)
    }

    /// Every participant applied the commit of `start`: its record may be dropped (an
    /// aborted record is kept). Not made durable before returning.
    pub fn forget(&self, start: Timestamp) {
        self.decisions.forget(start);
    }

    /// The decision log (for tests and diagnostics).
    pub fn decisions(&self) -> &DecisionLog {
        &self.decisions
    }

    #[inline]
    fn update_cache(&self, set: &HorizonSet) {
        let v = set.min().unwrap_or(EMPTY);
        self.horizon_cache.store(v, Ordering::Release);
    }

    /// Raises the metadata version carried on answers to `version` (never lowers it).
    pub fn publish_metadata_version(&self, version: u64) {
        self.metadata_version.fetch_max(version, Ordering::AcqRel);
    }

    pub fn metadata_version(&self) -> u64 {
        self.metadata_version.load(Ordering::Acquire)
    }

    /// The GC horizon: the minimum registered start timestamp, or the next timestamp to
    /// be issued if none is registered. O(1).
    #[inline]
    pub fn horizon(&self) -> Timestamp {
        // Load `next` first: a `begin` that issued a value below it pinned the cache
        // before issuing, so the cache load below cannot miss it.
        let next = self.next.load(Ordering::Acquire);
        let c = self.horizon_cache.load(Ordering::Acquire);
        if c != EMPTY {
            c
        } else {
            next
        }
    }

    /// Number of distinct registered start timestamps (O(1)).
    pub fn registered_count(&self) -> usize {
        self.registered.lock().len()
    }
}

/// The error of a `decide` that a resolver's abort got ahead of.
pub fn aborted_by_resolver() -> PgError {
    PgError::new(
        codes::SERIALIZATION_FAILURE,
        "the transaction was aborted by the in-doubt resolver",
    )
}

fn read_hwm(dir: &Path) -> PgResult<u64> {
    let path = dir.join(HWM_FILE);
    let mut f = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io_err("could not open", &path, e)),
    };
    let mut buf = Vec::with_capacity(24);
    f.read_to_end(&mut buf)
        .map_err(|e| io_err("could not read", &path, e))?;
    let corrupt = || {
        PgError::new(
            codes::DATA_CORRUPTED,
            format!("GTM high-water file \"{}\" is corrupt", path.display()),
        )
    };
    if buf.len() != 24 || &buf[0..8] != HWM_MAGIC {
        return Err(corrupt());
    }
    let v = u64::from_le_bytes(buf[8..16].try_into().unwrap());
    let check = u64::from_le_bytes(buf[16..24].try_into().unwrap());
    if check != v ^ HWM_CHECK {
        return Err(corrupt());
    }
    Ok(v)
}

/// Atomically replaces the high-water file: write a temporary file, fsync it, rename it
/// over the old one, fsync the directory.
fn write_hwm(dir: &Path, limit: u64) -> PgResult<()> {
    let tmp = dir.join(HWM_TMP);
    let path = dir.join(HWM_FILE);
    let mut buf = [0u8; 24];
    buf[0..8].copy_from_slice(HWM_MAGIC);
    buf[8..16].copy_from_slice(&limit.to_le_bytes());
    buf[16..24].copy_from_slice(&(limit ^ HWM_CHECK).to_le_bytes());
    let mut f = File::create(&tmp).map_err(|e| io_err("could not create", &tmp, e))?;
    f.write_all(&buf)
        .map_err(|e| io_err("could not write", &tmp, e))?;
    f.sync_all()
        .map_err(|e| io_err("could not fsync", &tmp, e))?;
    drop(f);
    std::fs::rename(&tmp, &path).map_err(|e| io_err("could not rename", &tmp, e))?;
    let d = File::open(dir).map_err(|e| io_err("could not open directory", dir, e))?;
    d.sync_all()
        .map_err(|e| io_err("could not fsync directory", dir, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_never_reissues() {
        let dir = tempfile::tempdir().unwrap();
        let mut last = 0;
        for _ in 0..5 {
            let o = Oracle::open_with(dir.path(), OracleOptions { window: 8 }).unwrap();
            for _ in 0..37 {
                let t = o.timestamp().unwrap();
                assert!(t > last);
                last = t;
            }
            assert!(o.windows_saved() > 1);
        }
    }

    #[test]
    fn second_open_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let _a = Oracle::open(dir.path()).unwrap();
        let e = Oracle::open(dir.path()).unwrap_err();
        assert_eq!(e.code, codes::OBJECT_NOT_IN_PREREQUISITE_STATE);
    }

    #[test]
    fn corrupt_file_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(HWM_FILE), b"garbage").unwrap();
        let e = Oracle::open(dir.path()).unwrap_err();
        assert_eq!(e.code, codes::DATA_CORRUPTED);
    }

    #[test]
    fn horizon_basics() {
        let dir = tempfile::tempdir().unwrap();
        let o = Oracle::open(dir.path()).unwrap();
        let h0 = o.horizon();
        assert_eq!(h0, o.peek_next());
        let a = o.begin().unwrap();
        let b = o.begin().unwrap();
        assert_eq!(o.horizon(), a);
        let c = o.commit_n(&[a]).unwrap();
        assert!(c > b);
        assert_eq!(o.horizon(), b);
        o.finish(&[b]);
        assert_eq!(o.horizon(), o.peek_next());
        assert!(o.horizon() > c);
    }
}
