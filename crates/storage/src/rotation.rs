//! Memtable rotation of the `data` and `latest` keyspaces, done here instead of by fjall.
//!
//! fjall 3.1.13 rotates a full memtable through a message to its worker thread: every
//! write batch that finds the active memtable over its limit `try_send`s one onto the
//! worker's bounded queue (1,000). While the worker compacts, those messages pile up;
//! when it then rotates, it `send`s the Flush message, blocking, onto the same full queue
//! that only it reads, and never returns (fjall-rs/fjall PR #323). Nothing is flushed or
//! compacted after that: memtables grow without bound (3.4 GB resident with a 128 MB
//! cache after a few minutes of pgbench tpcb-like) and every read and write slows as they
//! grow. So both keyspaces are created with fjall's limit out of reach, and every thread
//! that commits a batch to them calls [`MemtableRotation::after_commit`], which rotates
//! the memtable itself: the Flush message then comes from a thread that is not the
//! queue's reader, and at most one rotation is outstanding per full memtable.
//!
//! Directories created before this keep the limit fjall stored when it created them; a
//! batch that crosses it still sends one message, and `after_commit` rotates right after,
//! so the messages cannot pile up as long as this limit is not above the stored one
//! (reopening with a larger `cache_size` than at creation can be).

use fjall::{AbstractTree, Keyspace};

/// The limit given to fjall for keyspaces whose memtables this module rotates.
pub(crate) const FJALL_LIMIT_OFF: u64 = u64::MAX;

#[derive(Clone)]
pub(crate) struct MemtableRotation {
    keyspaces: [Keyspace; 2],
    /// Rotate once the active memtable holds this many bytes (fjall's own accounting).
    limit: u64,
}

impl MemtableRotation {
    pub(crate) fn new(data: &Keyspace, latest: &Keyspace, limit: u64) -> Self {
        MemtableRotation {
            keyspaces: [data.clone(), latest.clone()],
            limit,
        }
    }

    /// Seals each full active memtable and queues its flush. Call after every committed
    /// batch that wrote to `data` or `latest`.
    pub(crate) fn after_commit(&self) -> Result<(), fjall::Error> {
        for ks in &self.keyspaces {
            if ks.tree.active_memtable().size() >= self.limit {
                ks.rotate_memtable()?;
            }
        }
        Ok(())
    }
}
