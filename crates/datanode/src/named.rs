//! Prepared transactions under a global identifier (SQL's `PREPARE TRANSACTION 'gid'`):
//! detached from the caller that prepared them into a registry of the datanode, so they
//! outlive the session, the coordinator connection and the coordinator itself, until
//! anyone commits or aborts them by gid.

use crate::commit::{abort_unapplied, PreparedTxn};
use crate::{Datanode, Timestamp, Txn};
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use std::collections::HashMap;

/// A prepared transaction as `pg_prepared_xacts` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreparedXact {
    pub gid: String,
    /// The transaction's start timestamp (its identity across datanodes).
    pub start_ts: Timestamp,
    /// When it was prepared, microseconds since 2000-01-01 UTC.
    pub prepared_at: i64,
    pub owner: String,
    pub database: String,
}

/// The datanode's named prepared transactions, by gid.
#[derive(Default)]
pub(crate) struct NamedPrepared(Mutex<HashMap<String, Entry>>);

enum Entry {
    /// The gid is taken by a transaction still being prepared.
    Preparing,
    Ready(PreparedXact, PreparedTxn),
}

pub(crate) fn duplicate_gid(gid: &str) -> PgError {
    PgError::new(
        codes::DUPLICATE_OBJECT,
        format!("transaction identifier \"{gid}\" is already in use"),
    )
}

/// 42704 for a gid no transaction is prepared under.
pub fn unknown_gid(gid: &str) -> PgError {
    PgError::new(
        codes::UNDEFINED_OBJECT,
        format!("prepared transaction with identifier \"{gid}\" does not exist"),
    )
}

impl NamedPrepared {
    /// Takes `gid` for a transaction about to be prepared; 42710 if it is taken.
    fn reserve(&self, gid: &str) -> PgResult<()> {
        let mut entries = self.0.lock();
        if entries.contains_key(gid) {
            return Err(duplicate_gid(gid));
        }
        entries.insert(gid.to_string(), Entry::Preparing);
        Ok(())
    }

    /// Ends a reservation: with the prepared transaction, or, if preparing failed, freed.
    fn settle(&self, gid: &str, prepared: Option<(PreparedXact, PreparedTxn)>) {
        let mut entries = self.0.lock();
        match prepared {
            Some((xact, txn)) => entries.insert(gid.to_string(), Entry::Ready(xact, txn)),
            None => entries.remove(gid),
        };
    }

    /// Puts back a transaction restored at open (`in_doubt.rs`).
    pub(crate) fn restore(&self, gid: &str, xact: PreparedXact, txn: PreparedTxn) {
        self.settle(gid, Some((xact, txn)));
    }

    /// Takes the prepared transaction out of the registry, for its caller to end: only
    /// one caller can (42704 for the others, as for an unknown gid).
    fn take(&self, gid: &str) -> PgResult<PreparedTxn> {
        let mut entries = self.0.lock();
        match entries.remove(gid) {
            Some(Entry::Ready(_, txn)) => Ok(txn),
            Some(Entry::Preparing) => {
                entries.insert(gid.to_string(), Entry::Preparing);
                Err(unknown_gid(gid))
            }
            None => Err(unknown_gid(gid)),
        }
    }

    /// Runs `f` on the prepared transaction `gid` (42704 if there is none).
    fn with(&self, gid: &str, f: impl FnOnce(&PreparedTxn)) -> PgResult<()> {
        match self.0.lock().get(gid) {
            Some(Entry::Ready(_, txn)) => {
                f(txn);
                Ok(())
            }
            _ => Err(unknown_gid(gid)),
        }
    }

    fn list(&self) -> Vec<PreparedXact> {
        let mut xacts: Vec<_> = self
            .0
            .lock()
            .values()
            .filter_map(|e| match e {
                Entry::Ready(x, _) => Some(x.clone()),
                Entry::Preparing => None,
            })
            .collect();
        xacts.sort_by(|a, b| a.gid.cmp(&b.gid));
        xacts
    }
}

impl Datanode {
    /// Prepares `txn` (as `prepare`) and keeps it here under `xact.gid`, whose start
    /// timestamp is the transaction's: it no longer belongs to the caller, and waits for
    /// `commit_gid` or `abort_gid` from anyone. Fails with 42710 if the gid is in use, or
    /// as `prepare` does; the transaction is then aborted. Calls no GTM (see `prepare`).
    pub async fn prepare_as(&self, mut txn: Box<Txn>, mut xact: PreparedXact) -> PgResult<()> {
        txn.finishes_at_gtm = false;
        if let Err(e) = self.named.reserve(&xact.gid) {
            abort_unapplied(txn, None).await;
            return Err(e);
        }
        xact.start_ts = txn.start_ts();
        let gid = xact.gid.clone();
        // Settled even if this future is dropped midway: a reservation left behind would
        // refuse the gid for good.
        let settle = Settle {
            named: &self.named,
            gid: &gid,
        };
        let prepared = self.prepare_recorded(txn, Some(&xact)).await?;
        // It may stay prepared for long: readers must not wait for it meanwhile.
        prepared.set_parked(true);
        std::mem::forget(settle);
        self.named.settle(&gid, Some((xact, prepared)));
        Ok(())
    }

    /// The first step of committing the prepared transaction `gid`, before its caller
    /// takes the commit timestamp from the GTM: from here on readers whose snapshot is
    /// above its start wait for its outcome (`TxnState::Parked`). 42704 if no transaction
    /// is prepared here under that gid.
    pub fn commit_gid_pending(&self, gid: &str) -> PgResult<()> {
        self.named.with(gid, |txn| txn.set_parked(false))
    }

    /// Commits the prepared transaction `gid` at `ts` (above its start: the commit
    /// timestamp its caller took from the GTM after `commit_gid_pending`); 42704 if no
    /// transaction is prepared here under that gid.
    pub async fn commit_gid(&self, gid: &str, ts: Timestamp) -> PgResult<Timestamp> {
        self.named.take(gid)?.commit(ts).await
    }

    /// Aborts the prepared transaction `gid` and releases its locks; 42704 if no
    /// transaction is prepared here under that gid.
    pub async fn abort_gid(&self, gid: &str) -> PgResult<()> {
        self.named.take(gid)?.abort().await;
        Ok(())
    }

    /// The transactions prepared here under a gid, by gid.
    pub fn prepared_xacts(&self) -> Vec<PreparedXact> {
        self.named.list()
    }
}

/// Frees a gid reservation when dropped (a prepare that failed or was cancelled).
struct Settle<'a> {
    named: &'a NamedPrepared,
    gid: &'a str,
}

impl Drop for Settle<'_> {
    fn drop(&mut self) {
        self.named.settle(self.gid, None);
    }
}
