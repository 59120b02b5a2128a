//! The storage engine's Prometheus metrics (served by `observability`'s `/metrics`).
//!
//! Counted by the writer thread once per batch and by the syncer thread once per fsync,
//! never on a committer's path.

use prometheus::{register_int_counter, IntCounter};
use std::sync::LazyLock;

pub struct StorageMetrics {
    pub journal_fsyncs: IntCounter,
    pub journal_bytes: IntCounter,
}

static METRICS: LazyLock<StorageMetrics> = LazyLock::new(|| StorageMetrics {
    journal_fsyncs: register_int_counter!(
        "meridian_storage_journal_fsyncs_total",
        "fdatasyncs of the journal (write-ahead log); one covers a group of commits"
    )
    .expect("metric"),
    journal_bytes: register_int_counter!(
        "meridian_storage_journal_bytes_written_total",
        "Bytes of keys and values committed through the journal (without fjall's framing)"
    )
    .expect("metric"),
});

/// The storage engine's metrics, registered on first use.
pub fn metrics() -> &'static StorageMetrics {
    &METRICS
}
