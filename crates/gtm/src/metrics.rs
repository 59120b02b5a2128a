//! The GTM's Prometheus metrics (served by `observability`'s `/metrics`).
//!
//! Timestamps are counted by the oracle, so an in-process GTM (`meridian start`) counts
//! them too; requests and batches exist only on the network service.

use prometheus::{
    exponential_buckets, register_histogram, register_int_counter, Histogram, IntCounter,
};
use std::sync::LazyLock;

pub struct GtmMetrics {
    pub requests: IntCounter,
    pub batch_size: Histogram,
    pub timestamps_issued: IntCounter,
}

static METRICS: LazyLock<GtmMetrics> = LazyLock::new(|| {
    GtmMetrics {
    requests: register_int_counter!(
        "meridian_gtm_requests_total",
        "Requests the GTM service answered (begin, timestamp, commit, finish, decide, resolve, forget)"
    )
    .expect("metric"),
    batch_size: register_histogram!(
        "meridian_gtm_batch_size",
        "Requests per batch a client sent the GTM service",
        exponential_buckets(1.0, 2.0, 12).expect("buckets")
    )
    .expect("metric"),
    timestamps_issued: register_int_counter!(
        "meridian_gtm_timestamps_issued_total",
        "Timestamps the oracle issued (transaction starts, statement snapshots, commits)"
    )
    .expect("metric"),
}
});

/// The GTM's metrics, registered on first use.
pub fn metrics() -> &'static GtmMetrics {
    &METRICS
}
