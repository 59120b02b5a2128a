//! The cumulative statistics of tables and indexes (pg_stat_all_tables and
//! pg_stat_user_tables, pg_stat_all_indexes and pg_stat_user_indexes, and the tuple counts
//! of pg_stat_database): what this coordinator's statements did to each table since the
//! coordinator started or since `pg_stat_reset()`.
//!
//! As PostgreSQL's backends do, a thread counts into pending counters of its own, with no
//! lock or atomic per scan or row (a point query is about 30,000 instructions in all), and
//! moves them into the shared totals at the end of a statement once `FLUSH_INTERVAL` has
//! passed since it last did; a session executor also flushes on a timer, so that an idle
//! thread's counts are not held back. The views therefore lag the statements by up to
//! that interval (PostgreSQL's by up to a second), except for the reading session's own
//! counts: reading a view flushes its thread first, as `pg_stat_force_next_flush()` does.

use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use sql::plan::Access;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

/// How long a thread may hold counts before a statement's end moves them to the totals.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(500);

/// One table's counters, as pg_stat_all_tables names them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TableCounts {
    pub seq_scan: i64,
    pub seq_tup_read: i64,
    pub idx_scan: i64,
    pub idx_tup_fetch: i64,
    pub n_tup_ins: i64,
    pub n_tup_upd: i64,
    pub n_tup_del: i64,
    /// Rows inserted, updated and deleted since the last VACUUM and ANALYZE.
    pub since_vacuum: Changes,
    pub since_analyze: Changes,
    pub vacuum_count: i64,
    pub analyze_count: i64,
    /// Timestamps (microseconds since 2000-01-01) of the last VACUUM and ANALYZE.
    pub last_vacuum: Option<i64>,
    pub last_analyze: Option<i64>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Changes {
    pub inserted: i64,
    pub updated: i64,
    pub deleted: i64,
}

impl Changes {
    fn add(&mut self, o: &Changes) {
        self.inserted += o.inserted;
        self.updated += o.updated;
        self.deleted += o.deleted;
    }
}

impl TableCounts {
    fn add(&mut self, o: &TableCounts) {
        self.seq_scan += o.seq_scan;
        self.seq_tup_read += o.seq_tup_read;
        self.idx_scan += o.idx_scan;
        self.idx_tup_fetch += o.idx_tup_fetch;
        self.n_tup_ins += o.n_tup_ins;
        self.n_tup_upd += o.n_tup_upd;
        self.n_tup_del += o.n_tup_del;
        self.since_vacuum.add(&o.since_vacuum);
        self.since_analyze.add(&o.since_analyze);
    }

    /// n_live_tup: rows inserted less rows deleted. Meridian keeps no count of a table's
    /// rows, so this counts from the coordinator's start (or the last reset).
    pub fn live(&self) -> i64 {
        (self.n_tup_ins - self.n_tup_del).max(0)
    }

    /// n_dead_tup: the versions updates and deletes left since the last VACUUM. Meridian's
    /// garbage collection removes them on its own as snapshots move on; this is the count
    /// PostgreSQL would show without autovacuum.
    pub fn dead(&self) -> i64 {
        self.since_vacuum.updated + self.since_vacuum.deleted
    }
}

/// One index's counters, as pg_stat_all_indexes names them. The primary key's index is
/// the table's storage: a lookup through it reads the rows themselves.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct IndexCounts {
    pub idx_scan: i64,
    pub idx_tup_read: i64,
    pub idx_tup_fetch: i64,
}

impl IndexCounts {
    fn add(&mut self, o: &IndexCounts) {
        self.idx_scan += o.idx_scan;
        self.idx_tup_read += o.idx_tup_read;
        self.idx_tup_fetch += o.idx_tup_fetch;
    }
}

/// What a change statement did to its table's rows.
#[derive(Debug, Clone, Copy)]
pub enum Change {
    Inserted,
    Updated,
    Deleted,
}

/// The counts of tables and indexes by pg_class OID.
#[derive(Debug, Default, Clone)]
pub struct Totals {
    pub tables: FxHashMap<u32, TableCounts>,
    pub indexes: FxHashMap<u32, IndexCounts>,
    /// 40P01 errors this coordinator's sessions got (pg_stat_database.deadlocks).
    pub deadlocks: i64,
    pub xact_commit: i64,
    pub xact_rollback: i64,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        for (oid, c) in &o.tables {
            self.tables.entry(*oid).or_default().add(c);
        }
        for (oid, c) in &o.indexes {
            self.indexes.entry(*oid).or_default().add(c);
        }
        self.deadlocks += o.deadlocks;
        self.xact_commit += o.xact_commit;
        self.xact_rollback += o.xact_rollback;
    }

    fn is_empty(&self) -> bool {
        self.tables.is_empty()
            && self.indexes.is_empty()
            && self.deadlocks == 0
            && self.xact_commit == 0
            && self.xact_rollback == 0
    }
}

/// The totals of one coordinator.
#[derive(Clone, Default)]
pub struct CumulativeStats {
    totals: Arc<Mutex<Shared>>,
}

#[derive(Default)]
struct Shared {
    totals: Totals,
    /// When the counters were last reset (pg_stat_database.stats_reset); None: never.
    reset_at: Option<i64>,
}

thread_local! {
    static PENDING: RefCell<Pending> = RefCell::new(Pending::default());
}

/// A thread's counts not yet in its coordinator's totals.
#[derive(Default)]
struct Pending {
    /// The totals these counts belong to: the coordinator whose sessions run here.
    into: Option<Arc<Mutex<Shared>>>,
    counts: Totals,
    /// When these counts last went to the totals (microseconds since 2000-01-01).
    last_flush: i64,
}

impl Pending {
    fn flush(&mut self) {
        self.last_flush = types::datetime::now_timestamp();
        if let Some(into) = &self.into {
            if !self.counts.is_empty() {
                into.lock().totals.add(&std::mem::take(&mut self.counts));
            }
        }
    }
}

impl CumulativeStats {
    /// Adds to this thread's pending counts of this coordinator.
    fn count(&self, f: impl FnOnce(&mut Totals)) {
        // A scan dropped while its thread exits finds the pending counts gone: not counted.
        let _ = PENDING.try_with(|p| {
            let mut p = p.borrow_mut();
            if !p
                .into
                .as_ref()
                .is_some_and(|i| Arc::ptr_eq(i, &self.totals))
            {
                // another coordinator's sessions ran here before (tests in one process)
                p.flush();
                p.into = Some(self.totals.clone());
            }
            f(&mut p.counts)
        });
    }

    /// A scan of `table` by `access` starts (`new`; else a scan goes on): its rows go to
    /// the returned tally.
    pub fn scan(
        &self,
        table: &sql::catalog::TableDef,
        access: &Access,
        new: bool,
    ) -> ScanTally<'_> {
        let mut tally = self.tally(table, None, i64::from(new));
        tally.index = match access {
            Access::Full => None,
            Access::Index { index, .. } => Some(table.indexes[*index].oid),
            Access::PrimaryKey(_) | Access::PrimaryKeys { .. } | Access::KeyRange { .. } => {
                Some(table.pk_index_oid.unwrap_or(0))
            }
        };
        tally.secondary = matches!(access, Access::Index { .. });
        tally
    }

    /// A read of one row of `table` by its primary key starts.
    pub fn key_lookup(&self, table: &sql::catalog::TableDef) -> ScanTally<'_> {
        self.tally(table, Some(table.pk_index_oid.unwrap_or(0)), 1)
    }

    fn tally(
        &self,
        table: &sql::catalog::TableDef,
        index: Option<u32>,
        scans: i64,
    ) -> ScanTally<'_> {
        ScanTally {
            stats: self,
            table: table.oid,
            index,
            scans,
            secondary: false,
            entries: None,
            rows: 0,
        }
    }

    /// A statement changed `rows` rows of the table `table` (its pg_class OID).
    pub fn changed(&self, table: u32, change: Change, rows: u64) {
        if rows == 0 {
            return;
        }
        let rows = rows as i64;
        self.count(|t| {
            let c = t.tables.entry(table).or_default();
            let (total, v, a) = match change {
                Change::Inserted => (
                    &mut c.n_tup_ins,
                    &mut c.since_vacuum.inserted,
                    &mut c.since_analyze.inserted,
                ),
                Change::Updated => (
                    &mut c.n_tup_upd,
                    &mut c.since_vacuum.updated,
                    &mut c.since_analyze.updated,
                ),
                Change::Deleted => (
                    &mut c.n_tup_del,
                    &mut c.since_vacuum.deleted,
                    &mut c.since_analyze.deleted,
                ),
            };
            *total += rows;
            *v += rows;
            *a += rows;
        })
    }

    /// A transaction ended: committed, or rolled back (or failed at commit).
    pub fn transaction_ended(&self, committed: bool) {
        self.count(|t| match committed {
            true => t.xact_commit += 1,
            false => t.xact_rollback += 1,
        })
    }

    /// A session got 40P01.
    pub fn deadlock(&self) {
        self.count(|t| t.deadlocks += 1)
    }

    /// VACUUM (and ANALYZE with it when `analyze`) of `table` ran at `at`.
    pub fn vacuumed(&self, table: u32, analyze: bool, at: i64) {
        self.flush();
        let mut shared = self.totals.lock();
        let c = shared.totals.tables.entry(table).or_default();
        if analyze {
            c.analyze_count += 1;
            c.last_analyze = Some(at);
            c.since_analyze = Changes::default();
        } else {
            c.vacuum_count += 1;
            c.last_vacuum = Some(at);
            c.since_vacuum = Changes::default();
        }
    }

    /// A statement ended at `now` (microseconds since 2000-01-01, the clock the session
    /// read anyway): this thread's counts go to the totals if they have waited long enough.
    pub fn statement_done(&self, now: i64) {
        PENDING.with_borrow_mut(|p| {
            if now - p.last_flush >= FLUSH_INTERVAL.as_micros() as i64 {
                p.flush();
            }
        })
    }

    /// Moves this thread's counts to the totals now (pg_stat_force_next_flush()).
    pub fn flush(&self) {
        PENDING.with_borrow_mut(Pending::flush)
    }

    /// The totals, with this thread's counts (the reader's own statements) in them.
    pub fn snapshot(&self) -> (Totals, Option<i64>) {
        self.flush();
        let shared = self.totals.lock();
        (shared.totals.clone(), shared.reset_at)
    }

    /// pg_stat_reset(): every counter back to zero, at `at`.
    pub fn reset(&self, at: i64) {
        self.flush();
        let mut shared = self.totals.lock();
        shared.totals = Totals::default();
        shared.reset_at = Some(at);
    }
}

/// Moves the counts of the thread it runs on to their totals every `FLUSH_INTERVAL`; run
/// on each session executor.
pub async fn flush_periodically() {
    let mut tick = tokio::time::interval(FLUSH_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        PENDING.with_borrow_mut(|p| {
            if !p.counts.is_empty() {
                p.flush()
            }
        });
    }
}

/// The rows one scan read, counted when it ends (dropped): a scan of the whole table is
/// a sequential scan, any other an index scan of the primary key's index or of the
/// secondary index it goes through.
pub struct ScanTally<'s> {
    stats: &'s CumulativeStats,
    table: u32,
    /// The index scanned; None for a sequential scan.
    index: Option<u32>,
    /// 1, or 0 for a scan that goes on (a statement's next batch).
    scans: i64,
    /// Through a secondary index, whose entries are counted apart from the rows.
    secondary: bool,
    /// Entries a secondary index gave; None for the primary key's, whose entries are the
    /// rows.
    entries: Option<u64>,
    rows: u64,
}

impl ScanTally<'_> {
    pub fn row(&mut self) {
        self.rows += 1;
    }

    /// The keys to read were found: `n` entries of a secondary index, if that is what
    /// the scan goes through (a primary key's entries are the rows).
    pub fn entries(&mut self, n: usize) {
        if self.secondary {
            *self.entries.get_or_insert(0) += n as u64;
        }
    }
}

impl Drop for ScanTally<'_> {
    fn drop(&mut self) {
        let (table, index, scans, rows) = (self.table, self.index, self.scans, self.rows as i64);
        let entries = self.entries.map_or(rows, |n| n as i64);
        self.stats.count(|t| {
            let c = t.tables.entry(table).or_default();
            match index {
                None => {
                    c.seq_scan += scans;
                    c.seq_tup_read += rows;
                }
                Some(index) => {
                    c.idx_scan += scans;
                    c.idx_tup_fetch += rows;
                    let i = t.indexes.entry(index).or_default();
                    i.idx_scan += scans;
                    i.idx_tup_read += entries;
                    i.idx_tup_fetch += rows;
                }
            }
        })
    }
}
