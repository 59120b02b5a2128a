//! pg_stat_statements: this coordinator's execution statistics per statement shape
//! (`sql::statement_shape`), user, database and nesting level, as PostgreSQL 15 keeps
//! them with `pg_stat_statements.track = top` and `track_utility = on`.
//!
//! Recording a statement finds its entry under a read lock by its key (four integers;
//! the shape of a cached plan or prepared statement is computed once, with the plan) and
//! updates its counters under the entry's own mutex: a few uncontended atomic operations.
//! Only a new shape takes the write lock. A failed statement is not recorded.

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use sql::statement_shape::StatementShape;
use std::sync::Arc;
use std::time::Duration;

/// pg_stat_statements.max: beyond it, the least used entries are deallocated.
pub const MAX_ENTRIES: usize = 5000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StatementKey {
    pub userid: u32,
    pub dbid: u32,
    pub queryid: i64,
    /// Always true: statements inside functions are not tracked (`track = top`).
    pub toplevel: bool,
}

/// One entry's counters; times in milliseconds. Mean and variance are kept with
/// Welford's method, as PostgreSQL's.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counters {
    pub calls: i64,
    pub total_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
    sum_var_ms: f64,
    pub rows: i64,
}

impl Counters {
    fn add(&mut self, ms: f64, rows: u64) {
        self.calls += 1;
        self.total_ms += ms;
        self.rows += rows as i64;
        if self.calls == 1 {
            self.min_ms = ms;
            self.max_ms = ms;
            self.mean_ms = ms;
            return;
        }
        let old_mean = self.mean_ms;
        self.mean_ms += (ms - old_mean) / self.calls as f64;
        self.sum_var_ms += (ms - old_mean) * (ms - self.mean_ms);
        self.min_ms = self.min_ms.min(ms);
        self.max_ms = self.max_ms.max(ms);
    }

    /// The population standard deviation, as PostgreSQL's stddev_exec_time.
    pub fn stddev_ms(&self) -> f64 {
        if self.calls > 1 {
            (self.sum_var_ms / self.calls as f64).sqrt()
        } else {
            0.0
        }
    }
}

pub struct StatementEntry {
    pub key: StatementKey,
    /// The normalized text as first seen.
    pub query: String,
    counters: Mutex<Counters>,
}

impl StatementEntry {
    pub fn counters(&self) -> Counters {
        *self.counters.lock()
    }
}

/// pg_stat_statements_info.
#[derive(Debug, Clone, Copy)]
pub struct StatsInfo {
    pub dealloc: i64,
    pub stats_reset: i64,
}

pub struct StatementStats {
    entries: RwLock<FxHashMap<StatementKey, Arc<StatementEntry>>>,
    info: Mutex<StatsInfo>,
}

impl Default for StatementStats {
    fn default() -> Self {
        StatementStats {
            entries: RwLock::default(),
            info: Mutex::new(StatsInfo {
                dealloc: 0,
                stats_reset: types::datetime::now_timestamp(),
            }),
        }
    }
}

impl StatementStats {
    /// A statement of `shape` ran to completion in `elapsed`, returning or affecting `rows`.
    pub fn record(
        &self,
        userid: u32,
        dbid: u32,
        shape: &StatementShape,
        elapsed: Duration,
        rows: u64,
    ) {
        let key = StatementKey {
            userid,
            dbid,
            queryid: shape.queryid,
            toplevel: true,
        };
        let ms = elapsed.as_secs_f64() * 1000.0;
        let found = self.entries.read().get(&key).cloned();
        let entry = found.unwrap_or_else(|| {
            let mut entries = self.entries.write();
            if entries.len() >= MAX_ENTRIES && !entries.contains_key(&key) {
                self.deallocate(&mut entries);
            }
            entries
                .entry(key)
                .or_insert_with(|| {
                    Arc::new(StatementEntry {
                        key,
                        query: shape.text.clone(),
                        counters: Mutex::default(),
                    })
                })
                .clone()
        });
        entry.counters.lock().add(ms, rows);
    }

    /// Removes the least called 5% of the entries (at least 10), as PostgreSQL's
    /// entry_dealloc does by usage.
    fn deallocate(&self, entries: &mut FxHashMap<StatementKey, Arc<StatementEntry>>) {
        let mut by_calls: Vec<(i64, StatementKey)> = entries
            .values()
            .map(|e| (e.counters().calls, e.key))
            .collect();
        by_calls.sort_unstable_by_key(|(calls, _)| *calls);
        let victims = (entries.len() * 5 / 100).max(10);
        for (_, key) in by_calls.into_iter().take(victims) {
            entries.remove(&key);
        }
        self.info.lock().dealloc += 1;
    }

    /// pg_stat_statements_reset(userid, dbid, queryid): 0 matches any. Resetting all
    /// sets stats_reset, as in PostgreSQL.
    pub fn reset(&self, userid: u32, dbid: u32, queryid: i64) {
        let mut entries = self.entries.write();
        if userid == 0 && dbid == 0 && queryid == 0 {
            entries.clear();
            self.info.lock().stats_reset = types::datetime::now_timestamp();
            return;
        }
        entries.retain(|k, _| {
            !((userid == 0 || k.userid == userid)
                && (dbid == 0 || k.dbid == dbid)
                && (queryid == 0 || k.queryid == queryid))
        });
    }

    pub fn entries(&self) -> Vec<Arc<StatementEntry>> {
        self.entries.read().values().cloned().collect()
    }

    pub fn info(&self) -> StatsInfo {
        *self.info.lock()
    }
}

/// The rows a statement's CommandComplete tag reports, as pg_stat_statements counts
/// them: those of queries, DML, COPY and FETCH; none for other utility statements.
pub fn tag_rows(tag: &str) -> u64 {
    let counted = [
        "SELECT", "INSERT", "UPDATE", "DELETE", "COPY", "FETCH", "MERGE",
    ]
    .iter()
    .any(|c| tag.starts_with(c));
    if !counted {
        return 0;
    }
    tag.rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}
