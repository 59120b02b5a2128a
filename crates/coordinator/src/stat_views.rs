//! The rows of pg_stat_database, pg_stat_all_tables / pg_stat_user_tables and
//! pg_stat_all_indexes / pg_stat_user_indexes, from this coordinator's counts
//! (`cumulative_stats`). Every table here is a user table, so the "all" and "user" views
//! show the same rows (the system catalogs are computed, never scanned). Counters with no
//! equivalent here (blocks, temporary files, HOT updates, autovacuum, session times) are 0.

use crate::cumulative_stats::{TableCounts, Totals};
use crate::exec::SessionView;
use crate::system::{POSTGRES_DB_OID, TEMPLATE0_DB_OID, TEMPLATE1_DB_OID};
use crate::system_indexes::indexes_of;
use types::Value;

/// pg_stat_database: a row for shared objects (datid 0), then one per database. Every
/// session uses `postgres`, so its row has the counts.
pub fn database_rows(session: &SessionView) -> Vec<Vec<Value>> {
    let (totals, reset_at) = session.cumulative_stats.snapshot();
    let backends = session.sessions.all();
    let mut rows = vec![row(0, None, 0, &Totals::default(), reset_at)];
    for (oid, name) in [
        (POSTGRES_DB_OID, "postgres"),
        (TEMPLATE1_DB_OID, "template1"),
        (TEMPLATE0_DB_OID, "template0"),
    ] {
        let here = backends
            .iter()
            .filter(|a| a.identity.database == name)
            .count();
        let empty = Totals::default();
        let counts = if oid == POSTGRES_DB_OID {
            &totals
        } else {
            &empty
        };
        rows.push(row(oid, Some(name), here as i32, counts, reset_at));
    }
    rows
}

fn row(
    oid: u32,
    name: Option<&str>,
    backends: i32,
    t: &Totals,
    reset_at: Option<i64>,
) -> Vec<Value> {
    let sum = |f: fn(&TableCounts) -> i64| t.tables.values().map(f).sum::<i64>();
    let index_entries: i64 = t.indexes.values().map(|i| i.idx_tup_read).sum();
    let mut row = vec![
        Value::Oid(oid),
        name.map_or(Value::Null, |n| Value::Text(n.into())),
        Value::Int4(backends),
    ];
    row.extend(
        [
            t.xact_commit,
            t.xact_rollback,
            0, // blks_read
            0, // blks_hit
            sum(|c| c.seq_tup_read) + index_entries,
            sum(|c| c.idx_tup_fetch),
            sum(|c| c.n_tup_ins),
            sum(|c| c.n_tup_upd),
            sum(|c| c.n_tup_del),
            0, // conflicts
            0, // temp_files
            0, // temp_bytes
            t.deadlocks,
            0, // checksum_failures
        ]
        .map(Value::Int8),
    );
    row.push(Value::Null); // checksum_last_failure
    row.extend([0.0; 5].map(Value::Float8));
    row.extend([0; 4].map(Value::Int8));
    row.push(reset_at.map_or(Value::Null, Value::TimestampTz));
    row
}

/// pg_stat_all_tables and pg_stat_user_tables: one row per table.
pub fn table_rows(session: &SessionView) -> Vec<Vec<Value>> {
    let (totals, _) = session.cumulative_stats.snapshot();
    session
        .catalog
        .tables()
        .iter()
        .map(|table| {
            let c = totals.tables.get(&table.oid).copied().unwrap_or_default();
            let time = |t: Option<i64>| t.map_or(Value::Null, Value::TimestampTz);
            let mut row = vec![
                Value::Oid(table.oid),
                Value::Text("public".into()),
                Value::Text(table.name.clone()),
            ];
            let a = c.since_analyze;
            row.extend(
                [
                    c.seq_scan,
                    c.seq_tup_read,
                    c.idx_scan,
                    c.idx_tup_fetch,
                    c.n_tup_ins,
                    c.n_tup_upd,
                    c.n_tup_del,
                    0, // n_tup_hot_upd
                    c.live(),
                    c.dead(),
                    a.inserted + a.updated + a.deleted,
                    c.since_vacuum.inserted,
                ]
                .map(Value::Int8),
            );
            row.extend([
                time(c.last_vacuum),
                Value::Null,
                time(c.last_analyze),
                Value::Null,
            ]);
            row.extend([c.vacuum_count, 0, c.analyze_count, 0].map(Value::Int8));
            row
        })
        .collect()
}

/// pg_stat_all_indexes and pg_stat_user_indexes: one row per index, the primary key's
/// first.
pub fn index_rows(session: &SessionView) -> Vec<Vec<Value>> {
    let (totals, _) = session.cumulative_stats.snapshot();
    let mut rows = Vec::new();
    for table in session.catalog.tables() {
        for index in indexes_of(&table) {
            let c = totals.indexes.get(&index.oid).copied().unwrap_or_default();
            rows.push(vec![
                Value::Oid(table.oid),
                Value::Oid(index.oid),
                Value::Text("public".into()),
                Value::Text(table.name.clone()),
                Value::Text(index.name.to_string()),
                Value::Int8(c.idx_scan),
                Value::Int8(c.idx_tup_read),
                Value::Int8(c.idx_tup_fetch),
            ]);
        }
    }
    rows
}
