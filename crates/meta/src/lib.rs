//! The cluster's metadata service (decision 0028), hosted by the GTM's process and
//! reached at the GTM's address: the registered nodes, the datanodes the bucket map
//! spreads over, the catalog's records and id counters, in one durable store under one
//! version number. The GTM carries the version on every answer, so a coordinator learns
//! that something changed without asking.
//!
//! It stores bytes under keys: what a catalog record means is the coordinator's business.

mod client;
pub mod nodes;
pub mod proto;
mod service;
mod store;

pub use client::MetaClient;
pub use proto::{Reserve, Snapshot, WriteBatch, WriteOutcome};
pub use service::MetaService;
pub use store::{sequence_counter, MetaStore};
