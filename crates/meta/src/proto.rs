//! The metadata service's messages, carried by `crates/rpc` on the GTM's address.

use serde::{Deserialize, Serialize};

pub type Key = Vec<u8>;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    /// Every entry under a key prefix.
    Scan {
        prefix: Key,
    },
    Write(WriteBatch),
    /// Reserve `n` values of a counter that starts at `floor`.
    Allocate {
        key: Key,
        n: u64,
        floor: u64,
    },
    Version,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Response {
    Snapshot(Snapshot),
    Written(WriteOutcome),
    Allocated { first: u64 },
    Version(u64),
    Error { code: String, message: String },
}

/// Puts (`None` deletes) applied together, only if every expected entry has the expected
/// value (`None`: absent): a compare-and-set over several keys.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WriteBatch {
    pub expect: Vec<(Key, Option<Vec<u8>>)>,
    pub puts: Vec<(Key, Option<Vec<u8>>)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum WriteOutcome {
    Written {
        version: u64,
    },
    /// `key` did not have its expected value; nothing was written.
    Conflict {
        key: Key,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Snapshot {
    /// The store's version when the entries were read.
    pub version: u64,
    pub entries: Vec<(Key, Vec<u8>)>,
}
