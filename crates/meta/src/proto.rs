//! The metadata service's messages, carried by `crates/rpc` on the GTM's address.

use serde::{Deserialize, Serialize};

pub type Key = Vec<u8>;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    /// Every entry under a key prefix.
    Scan {
        prefix: Key,
    },
    /// The values of the given keys (`None`: absent), in order.
    Get {
        keys: Vec<Key>,
    },
    Write(WriteBatch),
    /// Reserve `n` values of a counter that starts at `floor`.
    Allocate {
        key: Key,
        n: u64,
        floor: u64,
    },
    Version,
    /// Reserve up to `n` values of a sequence counter (`Reserve`); not a catalog change:
    /// the version stays.
    Reserve(Reserve),
    /// Set a sequence counter's next value (setval, ALTER SEQUENCE … RESTART): later
    /// reservations continue from it. The version stays.
    Restart {
        key: Key,
        next: i128,
    },
}

/// A sequence counter holds the next value to hand out (16 bytes, `i128`: past the
/// bound by one step is representable). Values go from it by `step` up to `bound`
/// inclusive (down to it for a negative step); an exhausted counter starts again at
/// `wrap` if given (CYCLE), else reserves nothing.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reserve {
    pub key: Key,
    pub n: u64,
    /// The next value of a counter that does not exist yet.
    pub start: i64,
    pub step: i64,
    pub bound: i64,
    pub wrap: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Response {
    Snapshot(Snapshot),
    Values(Vec<Option<Vec<u8>>>),
    Written(WriteOutcome),
    Allocated {
        first: u64,
    },
    Version(u64),
    /// `count` values from `first` by the step; 0: the counter is exhausted.
    Reserved {
        first: i64,
        count: u64,
    },
    Restarted,
    Error {
        code: String,
        message: String,
    },
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
