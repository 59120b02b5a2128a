//! Meridian's durable multi-version key-value store, built on the `fjall` LSM engine.
//!
//! See `README.md` in this crate for the on-disk layout and the invariants.
//!
//! * Every row version lives under `rel (u64 BE) | escape(user_key) | 0x00 0x00 | !commit_ts (u64 BE)`
//!   in the `data` keyspace, with value `tag | row` (tag 0 = put, 1 = delete).
//!   `escape` doubles every 0x00 byte into `0x00 0xFF`, so `0x00 0x00` can only be the
//!   terminator: the encoding is order-preserving and no encoded key is a prefix of another.
//! * A read at snapshot `s` seeks to `rel|key|00 00|!s` and takes the first entry with the
//!   same prefix: the newest version with `commit_ts <= s`.
//! * Keyspace `latest` maps `rel | escape(user_key) | 0x00 0x00` to
//!   `commit_ts (u64 BE) | tag | row`: the newest committed version of every key that has
//!   one, written in the same atomic batch as the version in `data`. A read whose snapshot
//!   is at or after that version is one exact-key `get`; older snapshots seek `data`.
//! * Transactions commit through [`Store::apply`]: one atomic fjall write batch, written by a
//!   single writer thread; a syncer thread group-commits them (one journal fsync for every
//!   batch written since the last one, `syncer.rs`).

use bytes::{Buf, Bytes};
use fjall::{AbstractTree, Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use pgerror::{PgError, PgResult};
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod bulk;
mod dropped;
mod intents;
pub mod metrics;
mod rotation;
mod scan;
mod syncer;

pub use bulk::{BulkLoad, Chunk};
pub use intents::{prefix_successor, IntentIter};
pub use scan::{ScanIter, StoredKey, PIPELINE_AFTER};

use rotation::MemtableRotation;

pub type RelId = u64;
pub type Timestamp = u64;

const TAG_PUT: u8 = 0;
const TAG_DELETE: u8 = 1;

/// Size of the commit-timestamp suffix of every data key.
const TS_LEN: usize = 8;

/// How often the syncer thread fsyncs asynchronously committed batches.
pub const ASYNC_FLUSH_INTERVAL: Duration = Duration::from_millis(200);

/// `sys` key holding the on-disk format version (u64 BE).
const FORMAT_KEY: &[u8] = b"storage_format";
/// Format 2: keyspace `latest` exists and is complete.
const FORMAT_VERSION: u64 = 2;

/// Memory used beyond `cache_size` that does not depend on the data size: fjall's
/// worker threads and file-descriptor cache, journal buffers, pinned filter/index blocks of
/// freshly written tables, allocator slack, plus the Rust runtime. Measured by the
/// `memory` test; documented in README.md.
pub const FIXED_OVERHEAD_BYTES: u64 = 32 * 1024 * 1024;

fn io_err(context: &str, e: impl std::fmt::Display) -> PgError {
    PgError::io(context, e)
}

// ---------------------------------------------------------------------------------------
// Key encoding
// ---------------------------------------------------------------------------------------

/// Appends `rel | escape(key) | 00 00` (the version prefix of `key`) to `out`.
pub fn encode_prefix_into(out: &mut Vec<u8>, rel: RelId, key: &[u8]) {
    out.reserve(8 + key.len() + 2 + TS_LEN + 4);
    out.extend_from_slice(&rel.to_be_bytes());
    escape_into(out, key);
    out.extend_from_slice(&[0, 0]);
}

fn escape_into(out: &mut Vec<u8>, key: &[u8]) {
    for &b in key {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
}

/// The version prefix `rel | escape(key) | 00 00`.
pub fn encode_prefix(rel: RelId, key: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    encode_prefix_into(&mut v, rel, key);
    v
}

/// The full versioned key.
pub fn encode_version(rel: RelId, key: &[u8], ts: Timestamp) -> Vec<u8> {
    version_key(&encode_prefix(rel, key), ts)
}

/// The versioned key of a version prefix.
fn version_key(prefix: &[u8], ts: Timestamp) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + TS_LEN);
    k.extend_from_slice(prefix);
    k.extend_from_slice(&(!ts).to_be_bytes());
    k
}

/// Exclusive upper bound of all versions of `key`: `rel | escape(key) | 00 01`.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut v = prefix.to_vec();
    let n = v.len();
    v[n - 1] = 1;
    v
}

/// Splits an encoded data key into (rel, user key, commit ts).
pub fn decode_version(k: &[u8]) -> PgResult<(RelId, Vec<u8>, Timestamp)> {
    if k.len() < 8 + 2 + TS_LEN {
        return Err(PgError::internal("storage: malformed data key"));
    }
    let rel = u64::from_be_bytes(k[..8].try_into().unwrap());
    let ts = !u64::from_be_bytes(k[k.len() - TS_LEN..].try_into().unwrap());
    let body = key_body(k);
    let mut key = Vec::with_capacity(body.len());
    key.extend(unescape(body));
    Ok((rel, key, ts))
}

/// `escape(user_key)` of a data key at least `8 + 2 + TS_LEN` bytes long.
fn key_body(k: &[u8]) -> &[u8] {
    prefix_body(&k[..k.len() - TS_LEN])
}

/// `escape(user_key)` of a version prefix (`rel | escape(user_key) | 00 00`).
fn prefix_body(prefix: &[u8]) -> &[u8] {
    &prefix[8..prefix.len() - 2]
}

/// The bytes of the user key that `escape` wrote as `body`.
fn unescape(body: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let b = *body.get(i)?;
        i += if b == 0 { 2 } else { 1 }; // a 0x00 is followed by its 0xFF escape
        Some(b)
    })
}

fn rel_start(rel: RelId) -> Vec<u8> {
    rel.to_be_bytes().to_vec()
}

fn rel_end(rel: RelId) -> Vec<u8> {
    match rel.checked_add(1) {
        Some(n) => n.to_be_bytes().to_vec(),
        None => vec![0xFF; 9],
    }
}

/// Encoded lower bound (inclusive) for user-key bound `lo` in `rel`.
fn lower_bound(rel: RelId, lo: &Bound<Vec<u8>>) -> Vec<u8> {
    match lo {
        Bound::Unbounded => rel_start(rel),
        Bound::Included(k) => encode_prefix(rel, k),
        Bound::Excluded(k) => prefix_end(&encode_prefix(rel, k)),
    }
}

/// Encoded upper bound (exclusive) for user-key bound `hi` in `rel`.
fn upper_bound(rel: RelId, hi: &Bound<Vec<u8>>) -> Vec<u8> {
    match hi {
        Bound::Unbounded => rel_end(rel),
        Bound::Included(k) => prefix_end(&encode_prefix(rel, k)),
        Bound::Excluded(k) => encode_prefix(rel, k),
    }
}

fn encode_value(row: &Option<Bytes>) -> Vec<u8> {
    match row {
        Some(r) => encode_put(r),
        None => vec![TAG_DELETE],
    }
}

/// `encode_value` of a row.
fn encode_put(row: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(1 + row.len());
    v.push(TAG_PUT);
    v.extend_from_slice(row);
    v
}

fn decode_value(v: fjall::UserValue) -> PgResult<Option<Bytes>> {
    decode_tagged(v.into())
}

/// `tag | row bytes` as the row, None for a delete.
fn decode_tagged(mut b: Bytes) -> PgResult<Option<Bytes>> {
    match b.first() {
        Some(&TAG_PUT) => {
            b.advance(1); // not `slice`: a scan would pay two atomic reference counts a row
            Ok(Some(b))
        }
        Some(&TAG_DELETE) => Ok(None),
        _ => Err(PgError::internal("storage: malformed version value")),
    }
}

// ---------------------------------------------------------------------------------------
// Store
// ---------------------------------------------------------------------------------------

/// Options for [`Store::open`].
#[derive(Clone, Debug)]
pub struct StoreOptions {
    pub path: PathBuf,
    /// Memory budget for the block cache plus memtables (write buffer), in bytes.
    pub cache_size: u64,
}

/// One committed version of a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub commit_ts: Timestamp,
    /// `None`: a delete tombstone.
    pub row: Option<Bytes>,
}

/// A write of a committing transaction.
#[derive(Clone, Debug)]
pub struct Write {
    pub rel: RelId,
    pub key: Vec<u8>,
    pub op: WriteOp,
    /// The key's newest committed version (`Some(None)`: none) as the caller read it under
    /// a row lock that it holds until this write is applied, so that no other commit of
    /// the key can come between. None: unknown, the writer thread reads `latest`.
    pub newest_before: Option<Option<Timestamp>>,
}

/// What a committing transaction writes to a key.
#[derive(Clone)]
pub enum WriteOp {
    /// This row (None: delete).
    Put(Option<Bytes>),
    /// A row computed by the writer thread from the key's newest row: a deferred
    /// increment. Merges of one key must commute with each other, and the caller must keep
    /// every other writer of the key out until the merge is applied (the writer relies on
    /// both when merges arrive out of timestamp order, `apply_merge`).
    Merge(MergeFn),
}

/// Computes a row from the key's newest row (`WriteOp::Merge`).
pub type MergeFn = Arc<dyn Fn(&Bytes) -> PgResult<Bytes> + Send + Sync>;

impl std::fmt::Debug for WriteOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteOp::Put(row) => f.debug_tuple("Put").field(row).finish(),
            WriteOp::Merge(_) => f.write_str("Merge"),
        }
    }
}

/// Internal metadata spaces: `Meta` is the coordinator's (catalog), `Sys` is Meridian's own
/// counters (rel ids, row ids, pending drops).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Meta,
    Sys,
}

enum Msg {
    Write(WriteReq),
    Shutdown,
}

/// One write of a commit: (version prefix, `data` value), all at the request's `ts`.
/// A write as the writer thread takes it: the encoded value, or a merge to compute.
enum ItemOp {
    Value(Vec<u8>),
    Merge(MergeFn),
}

impl WriteReq {
    /// The bytes of its keys and values (a merge's result is not known yet).
    fn payload_len(&self) -> u64 {
        let items = self.items.iter().map(|(key, op, _)| {
            key.len()
                + match op {
                    ItemOp::Value(v) => v.len(),
                    ItemOp::Merge(_) => 0,
                }
        });
        let sys =
            (self.sys_changes.iter()).map(|(key, v)| key.len() + v.as_ref().map_or(0, Vec::len));
        items.chain(sys).sum::<usize>() as u64
    }
}

struct WriteReq {
    /// (version prefix, value, `Write::newest_before`)
    items: Vec<(Vec<u8>, ItemOp, Option<Option<Timestamp>>)>,
    ts: Timestamp,
    durable: bool,
    on_applied: Option<OnApplied>,
    /// `sys` keys written (Some) or removed (None) in the same batch
    /// (`Store::apply_removing`, `Store::put_sys`).
    sys_changes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    reply: syncer::Reply,
}

/// Called by the writer thread once a batch is applied (see `Store::apply`).
pub type OnApplied = Box<dyn FnOnce() + Send>;

/// Statistics of the writer thread (for tests and metrics).
#[derive(Default, Debug)]
pub struct WriterStats {
    pub batches: AtomicU64,
    pub fsyncs: AtomicU64,
}

pub struct Store {
    db: Database,
    data: Keyspace,
    latest: Keyspace,
    /// Serializes writers of `latest` entries that depend on its current contents: the
    /// writer thread (while it writes a round of batches) and GC (while it checks and
    /// removes `latest` entries of collected tombstones).
    latest_lock: Arc<parking_lot::Mutex<()>>,
    meta: Keyspace,
    sys: Keyspace,
    /// Spilled write sets of large transactions (`intents.rs`).
    intents: Keyspace,
    writer_tx: mpsc::Sender<Msg>,
    /// The writer (`meridian-wal`) and the syncer (`meridian-fsync`), joined by `close`.
    threads: parking_lot::Mutex<Vec<std::thread::JoinHandle<()>>>,
    stats: Arc<WriterStats>,
    superseded: Arc<parking_lot::Mutex<Superseded>>,
    rotation: MemtableRotation,
    cache_size: u64,
    /// Relations dropped whose keys may remain (`dropped.rs`).
    dropped: Arc<dropped::DroppedRels>,
}

/// Versions replaced by a newer row version, noted by the writer thread as it writes the
/// newer one. Once the newer version's commit is at or below the GC horizon no snapshot
/// can see the old one, and GC deletes it by its exact key: no per-key range scan. (A
/// version replaced by a delete tombstone is not listed: the tombstone and its `latest`
/// entry need the per-key pass of `gc_keys`, which removes the older versions too.)
struct Superseded {
    /// (`data` key of the old version, commit ts of the version that replaced it).
    entries: Vec<(Vec<u8>, Timestamp)>,
    /// Relations whose entries were dropped because the list was full: they need a
    /// full-scan GC (`gc_rel`).
    overflow: std::collections::HashSet<RelId>,
    cap: usize,
}

impl Superseded {
    fn push(&mut self, version_key: Vec<u8>, replaced_at: Timestamp) {
        if self.entries.len() < self.cap {
            self.entries.push((version_key, replaced_at));
        } else {
            self.overflow
                .insert(u64::from_be_bytes(version_key[..8].try_into().unwrap()));
        }
    }
}

/// Memory split of `cache_size`: (block cache, memtable budget, max size of one memtable).
///
/// fjall keeps at most one active plus four sealed (being flushed) memtables per keyspace
/// before it stalls writers, so the `data` and `latest` keyspaces' memtables use at most
/// `2 * 5 * memtable` bytes; that is half of `cache_size`, the block cache the other half.
/// (fjall 3's database-wide `max_write_buffer_size` is not enforced, so it is not used.)
pub fn memory_split(cache_size: u64) -> (u64, u64, u64) {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    let cache_size = cache_size.max(8 * MIB);
    let memtable = (cache_size / 20).clamp(512 * KIB, 32 * MIB);
    let write_buffer = 2 * 5 * memtable;
    (
        cache_size.saturating_sub(write_buffer).max(MIB),
        write_buffer,
        memtable,
    )
}

/// fjall slows writers once a keyspace has 20 L0 runs and halts them at 30, so an L0
/// threshold must stay well below 20: new tables keep arriving while a compaction runs
/// (at 10k tpcb-like TPS, `data` reached 18 tables with a threshold of 16).
///
/// Both keyspaces take a uniformly spread stream of updates (pgbench's accounts): every L0
/// table overlaps all of L1, so each L0 → L1 compaction rewrites L1 whole, and merging
/// more L0 tables per compaction divides that cost (round 6 in docs/performance.md's git history: the
/// compaction thread's CPU per tpcb-like transaction −20 %).
fn leveled(l0_threshold: u8) -> Arc<fjall::compaction::Leveled> {
    Arc::new(fjall::compaction::Leveled::default().with_l0_threshold(l0_threshold))
}

/// `latest` serves one exact-key `get` per point read (docs/performance.md): a hash index
/// in each data block finds the key without a binary search over restart points, and a
/// short restart interval leaves little to decode after it. fjall's hash ratio is buckets
/// per key, and a bucket shared by keys of two restart intervals sends the read to the
/// binary search: at 0.75 that was 70 % of reads, at 4 (4 bytes a key) it is 20 %.
/// 16 KiB blocks shorten each table's index (its binary search was half the cost of a
/// read) at the price of reading 16 KiB on a block cache miss. (Index and filter blocks
/// keep fjall's default pinning, of the small upper levels only: pinning every level would
/// hold memory in proportion to the number of keys, outside the cache budget.) Up to 8 L0
/// tables: a point read probes each one's bloom filter, which measured no slower. No bloom
/// filter in the last level, which holds most keys: nearly every read there is a hit, and
/// the probe of a standard bloom filter cost ~5 cache misses (round 13).
fn tune_for_point_reads(o: KeyspaceCreateOptions) -> KeyspaceCreateOptions {
    use fjall::config::{BlockSizePolicy, HashRatioPolicy, RestartIntervalPolicy};
    o.compaction_strategy(leveled(8))
        .expect_point_read_hits(true)
        .data_block_size_policy(BlockSizePolicy::all(16 * 1024))
        .data_block_hash_ratio_policy(HashRatioPolicy::all(4.0))
        .data_block_restart_interval_policy(RestartIntervalPolicy::all(4))
}

/// `data` takes every version and every GC tombstone, and is read by key only for
/// snapshots older than the newest version: fewer, larger L0 → L1 compactions cost less
/// CPU per commit. It is only ever read by range (a version is sought, never got), which
/// bloom filters do not serve: none are built, saving a hash per key in every flush,
/// compaction and bulk load (3 % of an `ADD PRIMARY KEY`'s CPU). fjall keeps a keyspace's
/// options from its creation, so data directories created before keep theirs.
fn tune_for_writes(o: KeyspaceCreateOptions) -> KeyspaceCreateOptions {
    o.compaction_strategy(leveled(12))
        .filter_policy(fjall::config::FilterPolicy::disabled())
}

impl Store {
    /// Opens (creating or recovering) the store. Recovery is fjall's journal replay.
    pub fn open(opts: StoreOptions) -> PgResult<Arc<Store>> {
        std::fs::create_dir_all(&opts.path).map_err(|e| io_err("create data directory", e))?;
        let (block_cache, _write_buffer, memtable) = memory_split(opts.cache_size);
        let dropped = Arc::new(dropped::DroppedRels::default());
        let filters = dropped.clone();
        let db = Database::builder(&opts.path)
            .cache_size(block_cache)
            .with_compaction_filter_factories(Arc::new(move |keyspace: &str| {
                matches!(keyspace, "data" | "latest").then(|| {
                    Arc::new(dropped::DroppedKeysFactory(filters.clone()))
                        as Arc<dyn fjall::compaction::filter::Factory>
                })
            }))
            .manual_journal_persist(true)
            // One flush/compaction worker: with more, fjall 3.1's worker 0 hands compaction
            // requests back to the queue while another worker compacts, spinning a core
            // (6% of all CPU under pgbench tpcb-like, docs/performance.md).
            .worker_threads(1)
            .open()
            .map_err(|e| io_err("open storage", e))?;
        let ks = |name: &str,
                  memtable: u64,
                  tune: fn(KeyspaceCreateOptions) -> KeyspaceCreateOptions| {
            db.keyspace(name, || {
                tune(
                    KeyspaceCreateOptions::default()
                        .max_memtable_size(memtable)
                        .manual_journal_persist(true),
                )
            })
            .map_err(|e| io_err("open keyspace", e))
        };
        let data = ks("data", rotation::FJALL_LIMIT_OFF, tune_for_writes)?;
        let latest = ks("latest", rotation::FJALL_LIMIT_OFF, tune_for_point_reads)?;
        let meta = ks("meta", 1 << 20, |o| o)?;
        let sys = ks("sys", 1 << 20, |o| o)?;
        let intents = ks("intents", intents::INTENTS_MEMTABLE, |o| o)?;
        let rotation = MemtableRotation::new(&data, &latest, memtable);
        ensure_format(&db, &data, &latest, &sys, &rotation)?;
        let latest_lock = Arc::new(parking_lot::Mutex::new(()));
        // As many entries as the datanode's recent-key list: about 100 bytes each, a tenth
        // of the cache.
        let superseded = Arc::new(parking_lot::Mutex::new(Superseded {
            entries: Vec::new(),
            overflow: Default::default(),
            cap: ((opts.cache_size / 1024) as usize).max(16 * 1024),
        }));

        let (tx, rx) = mpsc::channel::<Msg>();
        let stats = Arc::new(WriterStats::default());
        // Registered now, so that a scrape shows them before the first commit.
        metrics::metrics();
        let sync_queue = syncer::SyncQueue::new();
        let journal =
            syncer::JournalFile::open(&opts.path).map_err(|e| io_err("open journal", e))?;
        let syncer_thread = {
            let (db, queue, stats) = (db.clone(), sync_queue.clone(), stats.clone());
            std::thread::Builder::new()
                .name("meridian-fsync".into())
                .spawn(move || syncer::syncer_loop(db, journal, queue, stats))
                .map_err(|e| io_err("spawn syncer thread", e))?
        };
        let writer_thread = {
            let db = db.clone();
            let keyspaces = WriterKeyspaces {
                data: data.clone(),
                latest: latest.clone(),
                sys: sys.clone(),
            };
            let lock = latest_lock.clone();
            let stats = stats.clone();
            let superseded = superseded.clone();
            let rotation = rotation.clone();
            std::thread::Builder::new()
                .name("meridian-wal".into())
                .spawn(move || {
                    writer_loop(
                        db,
                        keyspaces,
                        WriterShared {
                            latest_lock: lock,
                            superseded,
                            stats,
                        },
                        rotation,
                        rx,
                        syncer::Pusher(sync_queue),
                    )
                })
                .map_err(|e| io_err("spawn writer thread", e))?
        };
        Ok(Arc::new(Store {
            db,
            data,
            latest,
            latest_lock,
            meta,
            sys,
            intents,
            writer_tx: tx,
            threads: parking_lot::Mutex::new(vec![writer_thread, syncer_thread]),
            stats,
            superseded,
            rotation,
            cache_size: opts.cache_size,
            dropped,
        }))
    }

    pub fn cache_size(&self) -> u64 {
        self.cache_size
    }

    pub fn writer_stats(&self) -> &WriterStats {
        &self.stats
    }

    /// Queues one transaction's writes, all with commit timestamp `ts`, as one atomic batch.
    /// The receiver resolves once the batch is applied (visible to readers) and, when
    /// `durable`, fsynced (group commit: one fsync covers every batch written before it).
    /// `on_applied` runs on the writer thread as soon as the batch is applied, before the
    /// fsync (it must be quick and must not block); not at all if the batch fails.
    pub fn apply(
        &self,
        writes: &[Write],
        ts: Timestamp,
        durable: bool,
        on_applied: Option<OnApplied>,
    ) -> tokio::sync::oneshot::Receiver<PgResult<()>> {
        self.apply_removing(writes, ts, durable, on_applied, Vec::new())
    }

    /// `apply`, also removing the `sys` keys `sys_removals` in the same atomic batch (the
    /// datanode's markers of bulk loads that this commit makes permanent).
    pub fn apply_removing(
        &self,
        writes: &[Write],
        ts: Timestamp,
        durable: bool,
        on_applied: Option<OnApplied>,
        sys_removals: Vec<Vec<u8>>,
    ) -> tokio::sync::oneshot::Receiver<PgResult<()>> {
        let items = writes
            .iter()
            .map(|w| {
                let op = match &w.op {
                    WriteOp::Put(row) => ItemOp::Value(encode_value(row)),
                    WriteOp::Merge(f) => ItemOp::Merge(f.clone()),
                };
                (encode_prefix(w.rel, &w.key), op, w.newest_before)
            })
            .collect();
        let sys_changes = sys_removals.into_iter().map(|k| (k, None)).collect();
        self.queue_write(items, ts, durable, on_applied, sys_changes)
    }

    /// Writes (Some) or removes (None) `sys` keys as one atomic batch through the writer
    /// thread: when `durable`, group-committed with the commits around it rather than
    /// fsynced alone as `meta_put` is.
    pub fn put_sys(
        &self,
        changes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
        durable: bool,
    ) -> tokio::sync::oneshot::Receiver<PgResult<()>> {
        self.queue_write(Vec::new(), 0, durable, None, changes)
    }

    fn queue_write(
        &self,
        items: Vec<(Vec<u8>, ItemOp, Option<Option<Timestamp>>)>,
        ts: Timestamp,
        durable: bool,
        on_applied: Option<OnApplied>,
        sys_changes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> tokio::sync::oneshot::Receiver<PgResult<()>> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        let req = WriteReq {
            items,
            ts,
            durable,
            on_applied,
            sys_changes,
            reply,
        };
        if let Err(mpsc::SendError(Msg::Write(req))) = self.writer_tx.send(Msg::Write(req)) {
            let _ = req
                .reply
                .send(Err(PgError::io("commit", "storage is closed")));
        }
        rx
    }

    /// The newest version of `key` with `commit_ts <= snapshot`.
    ///
    /// One exact-key read of `latest` when the newest version is visible at `snapshot` (or
    /// the key has no version at all); a seek in `data` only for older snapshots.
    pub fn get(&self, rel: RelId, key: &[u8], snapshot: Timestamp) -> PgResult<Option<Version>> {
        let prefix = encode_prefix(rel, key);
        match self.latest_entry(&prefix)? {
            None => return Ok(None),
            Some(v) if v.commit_ts <= snapshot => return Ok(Some(v)),
            Some(_) => {}
        }
        self.get_in_data(prefix, snapshot)
    }

    /// The `latest` entry of a version prefix.
    fn latest_entry(&self, prefix: &[u8]) -> PgResult<Option<Version>> {
        match self.latest.get(prefix).map_err(|e| io_err("read", e))? {
            None => Ok(None),
            Some(v) => decode_latest(v).map(Some),
        }
    }

    /// The newest version with `commit_ts <= snapshot`, sought in `data`.
    fn get_in_data(&self, prefix: Vec<u8>, snapshot: Timestamp) -> PgResult<Option<Version>> {
        version_in_data(&self.data, &prefix, snapshot)
    }

    /// The newest committed version of `key`.
    pub fn latest(&self, rel: RelId, key: &[u8]) -> PgResult<Option<Version>> {
        self.latest_entry(&encode_prefix(rel, key))
    }

    /// Live rows of `rel` in `[lo, hi)` (user-key bounds) as of `snapshot`, in key order.
    /// Walks `latest` (one entry per key), and seeks `data` only for the keys written
    /// after `snapshot` (see the README's "Range scans").
    pub fn scan(
        &self,
        rel: RelId,
        lo: &Bound<Vec<u8>>,
        hi: &Bound<Vec<u8>>,
        snapshot: Timestamp,
    ) -> ScanIter {
        let start = lower_bound(rel, lo);
        let end = upper_bound(rel, hi);
        let iter = if start < end {
            Some(self.latest.range(start..end))
        } else {
            None
        };
        ScanIter::new(iter, self.data.clone(), snapshot)
    }

    /// Whether any version of a key of `rel` in `[lo, hi)` (user-key bounds), a delete
    /// included, was committed after `since`: what a SERIALIZABLE transaction's commit
    /// checks of each range it scanned (`datanode/src/serializable.rs`). Reads every
    /// version in the range.
    pub fn changed_since(
        &self,
        rel: RelId,
        lo: &Bound<Vec<u8>>,
        hi: &Bound<Vec<u8>>,
        since: Timestamp,
    ) -> PgResult<bool> {
        let (start, end) = (lower_bound(rel, lo), upper_bound(rel, hi));
        if start >= end {
            return Ok(false);
        }
        for g in self.data.range(start..end) {
            let k = g.key().map_err(|e| io_err("read", e))?;
            let ts = !u64::from_be_bytes(k[k.len() - TS_LEN..].try_into().unwrap());
            if ts > since {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn space(&self, space: Space) -> &Keyspace {
        match space {
            Space::Meta => &self.meta,
            Space::Sys => &self.sys,
        }
    }

    /// Durable (fsynced before return) put/delete in a metadata space.
    pub fn meta_put(&self, space: Space, key: &[u8], value: Option<&[u8]>) -> PgResult<()> {
        self.meta_put_many(space, &[(key, value)])
    }

    /// Several metadata writes as one atomic, durable batch.
    pub fn meta_put_many(&self, space: Space, kvs: &[(&[u8], Option<&[u8]>)]) -> PgResult<()> {
        let ks = self.space(space);
        let mut b = self.db.batch().durability(Some(PersistMode::SyncAll));
        for (k, v) in kvs {
            match v {
                Some(v) => b.insert(ks, k.to_vec(), v.to_vec()),
                None => b.remove(ks, k.to_vec()),
            }
        }
        b.commit().map_err(|e| io_err("write metadata", e))
    }

    pub fn meta_get(&self, space: Space, key: &[u8]) -> PgResult<Option<Vec<u8>>> {
        self.space(space)
            .get(key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| io_err("read metadata", e))
    }

    pub fn meta_scan(&self, space: Space, prefix: &[u8]) -> PgResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        for g in self.space(space).prefix(prefix) {
            let (k, v) = g.into_inner().map_err(|e| io_err("read metadata", e))?;
            out.push((k.to_vec(), v.to_vec()));
        }
        Ok(out)
    }

    /// Garbage-collects the versions of the given keys: for each key, every version older
    /// than the newest version with `commit_ts <= horizon` is removed, and that version
    /// too when it is a delete tombstone. Returns (versions removed, for each key whether
    /// more than one version or a tombstone remains, i.e. whether it needs another pass
    /// later).
    pub fn gc_keys(
        &self,
        keys: &[(RelId, Vec<u8>)],
        horizon: Timestamp,
    ) -> PgResult<(u64, Vec<bool>)> {
        let mut batch = self.db.batch();
        let mut removed = 0u64;
        let mut again = Vec::with_capacity(keys.len());
        let mut gone: Vec<(Vec<u8>, Timestamp)> = Vec::new();
        for (rel, key) in keys {
            let prefix = encode_prefix(*rel, key);
            let end = prefix_end(&prefix);
            let mut versions = Vec::new();
            for g in self.data.range(prefix.clone()..end) {
                let (k, v) = g.into_inner().map_err(|e| io_err("gc read", e))?;
                let tomb = v.first() == Some(&TAG_DELETE);
                versions.push((k, tomb));
            }
            let (n, remaining, last_tomb) = gc_versions(&versions, horizon, |k| {
                batch.remove(&self.data, k.clone());
            });
            if n > 0 && remaining == 0 {
                gone.push((prefix, ts_of_key(&versions[0].0)));
            }
            removed += n;
            again.push(remaining > 1 || (remaining == 1 && last_tomb));
        }
        self.commit_gc(batch, &gone)
            .map_err(|e| io_err("gc write", e))?;
        Ok((removed, again))
    }

    /// Deletes the versions replaced by row versions committed at or before `horizon`
    /// (see `Superseded`); returns how many.
    pub fn gc_superseded(&self, horizon: Timestamp) -> PgResult<u64> {
        let all = std::mem::take(&mut self.superseded.lock().entries);
        let (due, later): (Vec<_>, Vec<_>) = all.into_iter().partition(|(_, ts)| *ts <= horizon);
        self.superseded.lock().entries.extend(later);
        for chunk in due.chunks(10_000) {
            let mut batch = self.db.batch();
            for (k, _) in chunk {
                batch.remove(&self.data, k.clone());
            }
            batch.commit().map_err(|e| io_err("gc write", e))?;
            self.rotation
                .after_commit()
                .map_err(|e| io_err("gc write", e))?;
        }
        Ok(due.len() as u64)
    }

    /// Relations that need a full-scan GC because the superseded list overflowed.
    pub fn take_superseded_overflow(&self) -> Vec<RelId> {
        self.superseded.lock().overflow.drain().collect()
    }

    /// Number of superseded versions waiting for GC.
    pub fn superseded_len(&self) -> usize {
        self.superseded.lock().entries.len()
    }

    /// Full-scan garbage collection of one relation (VACUUM).
    pub fn gc_rel(&self, rel: RelId, horizon: Timestamp) -> PgResult<u64> {
        let mut removed = 0u64;
        let mut gone: Vec<(Vec<u8>, Timestamp)> = Vec::new();
        let mut versions: Vec<(fjall::UserKey, bool)> = Vec::new();
        let flush_key = |versions: &mut Vec<(fjall::UserKey, bool)>,
                         batch: &mut fjall::OwnedWriteBatch,
                         gone: &mut Vec<(Vec<u8>, Timestamp)>| {
            let (n, remaining, _) =
                gc_versions(versions, horizon, |k| batch.remove(&self.data, k.clone()));
            if n > 0 && remaining == 0 {
                let k = &versions[0].0;
                gone.push((k[..k.len() - TS_LEN].to_vec(), ts_of_key(k)));
            }
            versions.clear();
            n
        };
        // Each batch of removals is committed with a fresh iterator after it, from the
        // first key not yet collected: one iterator over the whole relation would hold
        // its snapshot, and with it every memtable written meanwhile, to the end.
        let mut from = rel_start(rel);
        loop {
            let mut batch = self.db.batch();
            let mut cur_prefix: Vec<u8> = Vec::new();
            let mut resume = None;
            for g in self.data.range(from.clone()..rel_end(rel)) {
                let (k, v) = g.into_inner().map_err(|e| io_err("vacuum read", e))?;
                let p = &k[..k.len() - TS_LEN];
                if p != cur_prefix.as_slice() {
                    removed += flush_key(&mut versions, &mut batch, &mut gone);
                    if batch.len() >= 10_000 {
                        resume = Some(p.to_vec());
                        break;
                    }
                    cur_prefix.clear();
                    cur_prefix.extend_from_slice(p);
                }
                let tomb = v.first() == Some(&TAG_DELETE);
                versions.push((k, tomb));
            }
            if resume.is_none() {
                removed += flush_key(&mut versions, &mut batch, &mut gone);
            }
            self.commit_gc(batch, &gone)
                .map_err(|e| io_err("vacuum write", e))?;
            gone.clear();
            match resume {
                Some(p) => from = p,
                None => return Ok(removed),
            }
        }
    }

    /// Commits a GC batch of `data` removals. `gone` lists the keys whose every version
    /// the batch removes (their newest version, a tombstone at the given ts, included):
    /// their `latest` entry is removed in the same batch, but only if it still is that
    /// tombstone. The check and the commit happen under `latest_lock`, so a newer version
    /// committed concurrently by the writer thread is never lost.
    fn commit_gc(
        &self,
        mut batch: fjall::OwnedWriteBatch,
        gone: &[(Vec<u8>, Timestamp)],
    ) -> Result<(), fjall::Error> {
        if batch.is_empty() {
            return Ok(());
        }
        {
            let _g = (!gone.is_empty()).then(|| self.latest_lock.lock());
            for (prefix, ts) in gone {
                if let Some(v) = self.latest.get(prefix)? {
                    if latest_ts(&v) == Some(*ts) {
                        batch.remove(&self.latest, prefix.clone());
                    }
                }
            }
            batch.commit()?;
        }
        self.rotation.after_commit()
    }

    /// Drops `rel` (`dropped.rs`): removes the tables that hold only its keys and leaves
    /// the rest to compaction. True when none of its keys is left. The caller has made
    /// sure that nothing reads or writes `rel` again and that its id is never reused.
    /// Safe to repeat (after a restart).
    pub fn drop_rel(&self, rel: RelId) -> PgResult<bool> {
        self.dropped.insert(rel);
        for ks in [&self.latest, &self.data] {
            drop_own_tables(ks, rel)?;
        }
        let empty = self.rel_is_empty(rel)?;
        if empty {
            self.dropped.remove(rel);
        }
        Ok(empty)
    }

    /// The relations dropped whose keys may remain, sorted.
    pub fn dropped_rels(&self) -> Arc<Vec<RelId>> {
        self.dropped.list()
    }

    /// Of the dropped relations, up to `limit` whose last keys compaction has destroyed
    /// since: forgotten, and returned.
    pub fn reap_dropped(&self, limit: usize) -> PgResult<Vec<RelId>> {
        let mut reaped = Vec::new();
        for &rel in self.dropped.list().iter().take(limit) {
            if self.rel_is_empty(rel)? {
                self.dropped.remove(rel);
                reaped.push(rel);
            }
        }
        Ok(reaped)
    }

    fn rel_is_empty(&self, rel: RelId) -> PgResult<bool> {
        for ks in [&self.latest, &self.data] {
            if let Some(g) = ks.range(rel_start(rel)..rel_end(rel)).next() {
                g.key().map_err(|e| io_err("drop read", e))?;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Flushes and compacts `data` and `latest` into one level each, waiting until done
    /// (tests, tools).
    pub fn major_compact(&self) -> PgResult<()> {
        for ks in [&self.latest, &self.data] {
            ks.rotate_memtable_and_wait()
                .and_then(|_| ks.major_compact())
                .map_err(|e| io_err("compact", e))?;
        }
        Ok(())
    }

    /// Removes every version of every key of `rel`, a relation that stays in use (rows
    /// loaded by a transaction that did not commit), 10,000 per batch. Not atomic; safe
    /// to re-run. Returns the versions removed.
    pub fn delete_rel(&self, rel: RelId) -> PgResult<u64> {
        // `latest` entries first: a key whose `latest` entry is gone has no versions left
        // that a reader could miss.
        Ok(self.remove_rel_range(&self.latest, rel)? + self.remove_rel_range(&self.data, rel)?)
    }

    /// Removes every key of `rel` from `ks`, 10,000 per batch. Each batch starts after
    /// the last key removed: starting at the relation's first key again would step over
    /// every tombstone written so far (quadratic).
    fn remove_rel_range(&self, ks: &Keyspace, rel: RelId) -> PgResult<u64> {
        // Only what is left after the relation's own tables needs a tombstone per key.
        drop_own_tables(ks, rel)?;
        let mut n = 0u64;
        let mut from = Bound::Included(rel_start(rel));
        loop {
            let mut batch = self.db.batch();
            let mut last = None;
            for g in ks
                .range((from.clone(), Bound::Excluded(rel_end(rel))))
                .take(10_000)
            {
                let k = g.key().map_err(|e| io_err("delete read", e))?;
                batch.remove(ks, k.clone());
                last = Some(k);
            }
            let Some(last) = last else {
                return Ok(n);
            };
            n += batch.len() as u64;
            batch.commit().map_err(|e| io_err("delete write", e))?;
            self.rotation
                .after_commit()
                .map_err(|e| io_err("delete write", e))?;
            from = Bound::Excluded(last.to_vec());
        }
    }

    /// Number of stored versions (including tombstones) of `key`; for tests.
    pub fn version_count(&self, rel: RelId, key: &[u8]) -> PgResult<usize> {
        let prefix = encode_prefix(rel, key);
        let end = prefix_end(&prefix);
        Ok(self.data.range(prefix..end).count())
    }

    /// fsyncs the journal.
    pub fn sync(&self) -> PgResult<()> {
        self.db
            .persist(PersistMode::SyncAll)
            .map_err(|e| io_err("fsync", e))
    }

    /// Bytes of memtables currently held (for metrics).
    pub fn write_buffer_size(&self) -> u64 {
        self.db.write_buffer_size()
    }

    /// Stops the writer and syncer threads (after they have written and fsynced everything
    /// queued; the writer stops the syncer when it ends).
    pub fn close(&self) {
        let _ = self.writer_tx.send(Msg::Shutdown);
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.close();
    }
}

fn ts_of_key(k: &[u8]) -> Timestamp {
    !u64::from_be_bytes(k[k.len() - TS_LEN..].try_into().unwrap())
}

/// Commit ts of a `latest` value.
fn latest_ts(v: &[u8]) -> Option<Timestamp> {
    v.get(..TS_LEN)
        .map(|b| u64::from_be_bytes(b.try_into().unwrap()))
}

/// `latest` value: `commit_ts (u64 BE) | tag | row`.
fn encode_latest(ts: Timestamp, value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(TS_LEN + value.len());
    v.extend_from_slice(&ts.to_be_bytes());
    v.extend_from_slice(value);
    v
}

fn decode_latest(v: fjall::UserValue) -> PgResult<Version> {
    let mut b: Bytes = v.into();
    let Some(ts) = latest_ts(&b) else {
        return Err(PgError::internal("storage: malformed latest value"));
    };
    // `advance`, not `slice`: a scan would pay two atomic reference counts a row.
    b.advance(TS_LEN);
    Ok(Version {
        commit_ts: ts,
        row: decode_tagged(b)?,
    })
}

/// The newest version of a version prefix with `commit_ts <= snapshot`, sought in `data`.
/// Removes the tables of `ks` that hold nothing but `rel`'s keys (a bulk-loaded
/// relation's tables mostly do), without writing anything.
fn drop_own_tables(ks: &Keyspace, rel: RelId) -> PgResult<()> {
    ks.tree
        .drop_range(rel_start(rel)..rel_end(rel))
        .map_err(|e| io_err("drop tables", e))
}

fn version_in_data(
    data: &Keyspace,
    prefix: &[u8],
    snapshot: Timestamp,
) -> PgResult<Option<Version>> {
    let end = prefix_end(prefix);
    match data.range(version_key(prefix, snapshot)..end).next() {
        None => Ok(None),
        Some(g) => {
            let (k, v) = g.into_inner().map_err(|e| io_err("read", e))?;
            Ok(Some(Version {
                commit_ts: ts_of_key(&k),
                row: decode_value(v)?,
            }))
        }
    }
}

/// Checks the on-disk format; a directory written before keyspace `latest` existed (data
/// present, no format key) gets `latest` rebuilt from `data` first.
fn ensure_format(
    db: &Database,
    data: &Keyspace,
    latest: &Keyspace,
    sys: &Keyspace,
    rotation: &MemtableRotation,
) -> PgResult<()> {
    let cur = sys
        .get(FORMAT_KEY)
        .map_err(|e| io_err("read storage format", e))?;
    match cur {
        Some(v)
            if v.len() == 8 && u64::from_be_bytes(v[..].try_into().unwrap()) == FORMAT_VERSION =>
        {
            return Ok(())
        }
        Some(v) => {
            return Err(PgError::new(
                pgerror::codes::DATA_CORRUPTED,
                format!(
                    "storage: unsupported on-disk format {:?} (expected {FORMAT_VERSION})",
                    &v[..]
                ),
            ))
        }
        None => {}
    }
    // Old format (or a fresh directory): (re)build `latest` from `data`. Idempotent, so a
    // crash before the format key is written just repeats it.
    let mut batch = db.batch();
    let mut cur_prefix: Vec<u8> = Vec::new();
    for g in data.iter() {
        let (k, v) = g.into_inner().map_err(|e| io_err("rebuild latest", e))?;
        if k.len() < 8 + 2 + TS_LEN {
            return Err(PgError::internal("storage: malformed data key"));
        }
        let p = &k[..k.len() - TS_LEN];
        if p == cur_prefix.as_slice() {
            continue; // an older version
        }
        cur_prefix.clear();
        cur_prefix.extend_from_slice(p);
        batch.insert(latest, p.to_vec(), encode_latest(ts_of_key(&k), &v));
        if batch.len() >= 10_000 {
            let b = std::mem::replace(&mut batch, db.batch());
            b.commit().map_err(|e| io_err("rebuild latest", e))?;
            rotation
                .after_commit()
                .map_err(|e| io_err("rebuild latest", e))?;
        }
    }
    batch.insert(
        sys,
        FORMAT_KEY.to_vec(),
        FORMAT_VERSION.to_be_bytes().to_vec(),
    );
    batch = batch.durability(Some(PersistMode::SyncAll));
    batch
        .commit()
        .map_err(|e| io_err("write storage format", e))
}

/// `versions` are one key's versions, newest first: (encoded key, is tombstone).
/// Calls `remove` for each removable version; returns (removed, remaining, newest remaining
/// is a tombstone).
fn gc_versions(
    versions: &[(fjall::UserKey, bool)],
    horizon: Timestamp,
    mut remove: impl FnMut(&fjall::UserKey),
) -> (u64, usize, bool) {
    let ts_of = |k: &fjall::UserKey| !u64::from_be_bytes(k[k.len() - TS_LEN..].try_into().unwrap());
    let Some(i) = versions.iter().position(|(k, _)| ts_of(k) <= horizon) else {
        return (
            0,
            versions.len(),
            versions.first().map(|v| v.1).unwrap_or(false),
        );
    };
    let first_removed = if versions[i].1 { i } else { i + 1 };
    let mut n = 0;
    for (k, _) in &versions[first_removed..] {
        remove(k);
        n += 1;
    }
    let remaining = first_removed;
    (n, remaining, remaining > 0 && versions[0].1)
}

/// The keyspaces the writer thread writes.
struct WriterKeyspaces {
    data: Keyspace,
    latest: Keyspace,
    sys: Keyspace,
}

/// What the writer thread shares with the readers of the store.
struct WriterShared {
    latest_lock: Arc<parking_lot::Mutex<()>>,
    superseded: Arc<parking_lot::Mutex<Superseded>>,
    stats: Arc<WriterStats>,
}

fn writer_loop(
    db: Database,
    WriterKeyspaces { data, latest, sys }: WriterKeyspaces,
    WriterShared {
        latest_lock,
        superseded,
        stats,
    }: WriterShared,
    rotation: MemtableRotation,
    rx: mpsc::Receiver<Msg>,
    sync_queue: syncer::Pusher,
) {
    let mut shutdown = false;
    let mut reqs: Vec<WriteReq> = Vec::new();
    while !shutdown {
        // Wait for work. Under load the next commit is usually microseconds away: poll for
        // it briefly before sleeping, as waking a sleeping thread costs more than that on a
        // VM.
        let Some(first) = poll_briefly(&rx).or_else(|| rx.recv().ok()) else {
            break;
        };
        let mut m = Some(first);
        while let Some(msg) = m.take() {
            match msg {
                Msg::Write(r) => reqs.push(r),
                Msg::Shutdown => shutdown = true,
            }
            if reqs.len() < 4096 && !shutdown {
                m = rx.try_recv().ok();
            }
        }
        // Write every queued batch (each atomically); the syncer fsyncs them.
        let mut async_waiters = Vec::new();
        let mut durable_waiters = Vec::new();
        let guard = if reqs.is_empty() {
            None
        } else {
            Some(latest_lock.lock())
        };
        let mut replaced = Vec::new();
        // Timestamp order within a round, so that merges of one key mostly arrive in order
        // (`apply_merge` handles the rest).
        reqs.sort_by_key(|r| r.ts);
        for req in reqs.drain(..) {
            let mut b = db.batch();
            let ts = req.ts;
            let bytes = req.payload_len();
            replaced.clear();
            let res = (|| -> PgResult<()> {
                for (prefix, op, newest_before) in req.items {
                    let v = match op {
                        ItemOp::Value(v) => v,
                        ItemOp::Merge(f) => {
                            apply_merge(&data, &latest, &mut b, &prefix, ts, &f, &mut replaced)?;
                            continue;
                        }
                    };
                    let is_row = |value: &[u8]| value.first() != Some(&TAG_DELETE);
                    // The newest committed version: as read under the caller's row lock, or
                    // from `latest` (about a quarter of this thread's time when read).
                    let (cur_ts, cur_is_row) =
                        match newest_before.filter(|c| c.is_none_or(|c| c <= ts)) {
                            Some(c) => (c, None),
                            None => {
                                let cur = latest.get(&prefix).map_err(commit_err)?;
                                (
                                    cur.as_deref().and_then(latest_ts),
                                    cur.map(|cur| is_row(&cur[TS_LEN..])),
                                )
                            }
                        };
                    // Commits may reach the writer out of timestamp order: `latest` keeps
                    // the newest. (Never for a key read under a lock: its next writer waits.)
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
                            b.insert(&latest, prefix.clone(), encode_latest(ts, &v));
                        }
                    }
                    b.insert(&data, version_key(&prefix, ts), v);
                }
                for (key, value) in req.sys_changes {
                    match value {
                        Some(v) => b.insert(&sys, key, v),
                        None => b.remove(&sys, key),
                    }
                }
                b.commit().map_err(commit_err)
            })();
            match res {
                Ok(()) => {
                    // Per batch, not per round: a directory whose keyspaces fjall still
                    // rotates (rotation.rs) gets a request from every batch past its limit.
                    // The batch is applied whatever this says; a failure is the journal's,
                    // and the next commit reports it.
                    if let Err(e) = rotation.after_commit() {
                        tracing::error!("memtable rotation failed: {e}");
                    }
                    if let Some(f) = req.on_applied {
                        f();
                    }
                    let mut list = superseded.lock();
                    for (k, at) in replaced.drain(..) {
                        list.push(k, at);
                    }
                    drop(list);
                    stats.batches.fetch_add(1, Ordering::Relaxed);
                    metrics::metrics().journal_bytes.inc_by(bytes);
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
        let applied = !durable_waiters.is_empty() || !async_waiters.is_empty();
        if !async_waiters.is_empty() {
            // Hand asynchronously committed data to the OS (so that a process crash keeps
            // it), then acknowledge without waiting for the fsync.
            let res = db
                .persist(PersistMode::Buffer)
                .map_err(|e| io_err("write journal", e));
            for w in async_waiters {
                let _ = w.send(res.clone());
            }
        }
        if applied {
            sync_queue.push(durable_waiters);
        }
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
    let Version {
        commit_ts: cur_ts,
        row,
    } = decode_latest(cur)?;
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
    b.insert(
        data,
        version_key(prefix, ts),
        encode_value(&Some(f(&merge_base(decode_value(base)?)?)?)),
    );
    // The base version is already listed as replaced by the next newer one.
    if let Some(n) = next_newer {
        replaced.push((version_key(prefix, ts), n));
    }
    Ok(())
}

/// How long the writer polls for the next commit before it sleeps.
const WRITER_POLL: Duration = Duration::from_micros(100);

fn poll_briefly(rx: &mpsc::Receiver<Msg>) -> Option<Msg> {
    let start = Instant::now();
    loop {
        match rx.try_recv() {
            Ok(m) => return Some(m),
            Err(mpsc::TryRecvError::Disconnected) => return None,
            Err(mpsc::TryRecvError::Empty) if start.elapsed() >= WRITER_POLL => return None,
            Err(mpsc::TryRecvError::Empty) => std::thread::yield_now(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_orders_and_roundtrips() {
        let keys: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![0, 1],
            vec![0, 0xFF],
            vec![1],
            vec![1, 0],
            vec![0xFF],
            vec![0xFF, 0xFF, 0],
        ];
        let mut sorted = keys.clone();
        sorted.sort();
        for ts in [0u64, 1, 7, u64::MAX] {
            let enc: Vec<Vec<u8>> = sorted.iter().map(|k| encode_version(5, k, ts)).collect();
            let mut e2 = enc.clone();
            e2.sort();
            assert_eq!(enc, e2);
            for (k, e) in sorted.iter().zip(&enc) {
                let (r, k2, t2) = decode_version(e).unwrap();
                assert_eq!((r, &k2, t2), (5, k, ts));
            }
        }
        // all versions of a key sort between its prefix and prefix_end, and no other key does
        for k in &keys {
            let p = encode_prefix(5, k);
            let end = prefix_end(&p);
            for other in &keys {
                for ts in [0u64, 9, u64::MAX] {
                    let e = encode_version(5, other, ts);
                    let inside = e >= p && e < end;
                    assert_eq!(inside, other == k, "{k:?} {other:?}");
                }
            }
        }
    }
}
