//! The coordinator's Prometheus metrics (served by `observability`'s `/metrics`).
//!
//! Counted on the session path, so each is one relaxed atomic add (the histogram a few):
//! no lock and no allocation per statement. Errors are counted by SQLSTATE class, whose
//! labelled counter takes a lock, on the error path only.

use prometheus::{
    register_histogram, register_int_counter, register_int_counter_vec, register_int_gauge,
    Histogram, IntCounter, IntCounterVec, IntGauge,
};
use std::sync::LazyLock;

pub struct CoordinatorMetrics {
    pub connections_open: IntGauge,
    pub connections_accepted: IntCounter,
    pub connections_refused: IntCounter,
    pub transactions_committed: IntCounter,
    pub transactions_rolled_back: IntCounter,
    pub statements: IntCounter,
    pub statement_duration: Histogram,
    errors: IntCounterVec,
}

/// Statement latency buckets, in seconds: 50 µs to 10 s.
const STATEMENT_BUCKETS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0,
];

static METRICS: LazyLock<CoordinatorMetrics> = LazyLock::new(|| CoordinatorMetrics {
    connections_open: register_int_gauge!(
        "meridian_connections_open",
        "Client connections open now (from accept to close)"
    )
    .expect("metric"),
    connections_accepted: register_int_counter!(
        "meridian_connections_accepted_total",
        "Client connections accepted (TCP and Unix socket)"
    )
    .expect("metric"),
    connections_refused: register_int_counter!(
        "meridian_connections_refused_total",
        "Connections refused for want of a slot (53300 too_many_connections)"
    )
    .expect("metric"),
    transactions_committed: register_int_counter!(
        "meridian_transactions_committed_total",
        "Transactions committed, explicit and implicit"
    )
    .expect("metric"),
    transactions_rolled_back: register_int_counter!(
        "meridian_transactions_rolled_back_total",
        "Transactions rolled back or failed at commit"
    )
    .expect("metric"),
    statements: register_int_counter!(
        "meridian_statements_total",
        "Statements run: query strings (simple protocol) and Executes (extended protocol)"
    )
    .expect("metric"),
    statement_duration: register_histogram!(
        "meridian_statement_duration_seconds",
        "Time from a statement's message to its end, as log_min_duration_statement measures it",
        STATEMENT_BUCKETS.to_vec()
    )
    .expect("metric"),
    errors: register_int_counter_vec!(
        "meridian_errors_total",
        "Errors sent to clients, by SQLSTATE class (its first two characters)",
        &["class"]
    )
    .expect("metric"),
});

/// The coordinator's metrics, registered on first use.
pub fn metrics() -> &'static CoordinatorMetrics {
    &METRICS
}

impl CoordinatorMetrics {
    pub fn error(&self, sqlstate: &str) {
        let class = sqlstate.get(..2).unwrap_or(sqlstate);
        self.errors.with_label_values(&[class]).inc();
    }
}

/// One open client connection in `meridian_connections_open`, until dropped.
pub struct OpenConnection(());

impl OpenConnection {
    /// An accepted connection: counted, and open until the guard drops.
    pub fn accepted() -> OpenConnection {
        let m = metrics();
        m.connections_accepted.inc();
        m.connections_open.inc();
        OpenConnection(())
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        metrics().connections_open.dec();
    }
}
