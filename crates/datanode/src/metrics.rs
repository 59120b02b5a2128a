//! The datanode's Prometheus metrics (served by `observability`'s `/metrics`).
//!
//! Counted where a transaction waits for a lock or is chosen as a deadlock's victim, and
//! once per GC run: never on the path of a lock taken without waiting.

use prometheus::{register_int_counter, IntCounter};
use std::sync::LazyLock;

pub struct DatanodeMetrics {
    pub lock_waits: IntCounter,
    pub deadlocks: IntCounter,
    pub gc_runs: IntCounter,
    pub gc_versions_removed: IntCounter,
}

static METRICS: LazyLock<DatanodeMetrics> = LazyLock::new(|| {
    DatanodeMetrics {
    lock_waits: register_int_counter!(
        "meridian_datanode_lock_waits_total",
        "Waits for a row lock or for a relation another transaction owns"
    )
    .expect("metric"),
    deadlocks: register_int_counter!(
        "meridian_datanode_deadlocks_total",
        "Transactions ended with 40P01 deadlock_detected (by this datanode or the coordinators' detector)"
    )
    .expect("metric"),
    gc_runs: register_int_counter!(
        "meridian_datanode_gc_runs_total",
        "Garbage collections of old row versions (background runs and VACUUM)"
    )
    .expect("metric"),
    gc_versions_removed: register_int_counter!(
        "meridian_datanode_gc_versions_removed_total",
        "Old row versions garbage collection removed"
    )
    .expect("metric"),
}
});

/// The datanode's metrics, registered on first use.
pub fn metrics() -> &'static DatanodeMetrics {
    &METRICS
}
