//! Meridian's GTM: the timestamp oracle and transaction registry.
//!
//! * [`oracle::Oracle`] issues strictly increasing 64-bit timestamps (never reissued,
//!   even across kill -9: a high-water window is persisted ahead of use) and keeps the
//!   GC horizon (minimum registered start timestamp) in an ordered set.
//! * [`decisions::DecisionLog`], owned by the oracle, records the outcome of each
//!   cross-datanode transaction durably (decide / resolve / forget, decision 0029).
//! * [`server`] serves an oracle over TCP (wire format: `crates/gtm/README.md`).
//! * [`GtmClient`] is what coordinators use: in-process ([`GtmClient::local`]) or remote
//!   through a batching client ([`GtmClient::connect`]).
//!
//! This crate owns timestamps, the horizon and the commit decisions only: no SQL, no
//! rows, no storage besides its own high-water file and decision log.

pub mod client;
pub mod decisions;
pub mod horizon;
pub mod metrics;
pub mod oracle;
pub mod proto;
pub mod server;

use std::path::Path;
use std::sync::Arc;

use pgerror::PgResult;

pub use client::{ClientOptions, RemoteClient};
pub use oracle::{Oracle, OracleOptions};

/// A GTM timestamp. 0 is never issued.
pub type Timestamp = u64;

/// Outcome of a cross-datanode transaction as the GTM records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    Committed(Timestamp),
    Aborted,
    Pending,
}

#[derive(Debug)]
enum Inner {
    Local(Arc<Oracle>),
    Remote(Arc<RemoteClient>),
}

/// Handle to the GTM, cheap to clone and share between sessions.
#[derive(Clone, Debug)]
pub struct GtmClient {
    inner: Arc<Inner>,
}

impl GtmClient {
    /// In-process oracle persisting its high-water window under `data_dir` (creates it).
    pub fn local(data_dir: &Path) -> PgResult<GtmClient> {
        GtmClient::local_with(data_dir, OracleOptions::default())
    }

    /// [`GtmClient::local`] with options.
    pub fn local_with(data_dir: &Path, opts: OracleOptions) -> PgResult<GtmClient> {
        Ok(GtmClient::from_oracle(Arc::new(Oracle::open_with(
            data_dir, opts,
        )?)))
    }

    /// Wraps an already open oracle (e.g. one that a server in the same process serves).
    pub fn from_oracle(oracle: Arc<Oracle>) -> GtmClient {
        GtmClient {
            inner: Arc::new(Inner::Local(oracle)),
        }
    }

    /// Remote GTM with a batching client; never blocks longer than `opts.request_timeout`
    /// (connect included). Fails with 08006 if the GTM cannot be reached now; later
    /// failures are per request, and the client reconnects when the GTM comes back.
    /// Must be called inside a tokio runtime (the driver task is spawned on it).
    pub async fn connect(addr: &str, opts: ClientOptions) -> PgResult<GtmClient> {
        let c = RemoteClient::connect(addr, opts).await?;
        Ok(GtmClient {
            inner: Arc::new(Inner::Remote(Arc::new(c))),
        })
    }

    /// True for a remote GTM.
    pub fn is_remote(&self) -> bool {
        matches!(*self.inner, Inner::Remote(_))
    }

    /// New start timestamp, registered in the horizon set.
    pub async fn begin(&self) -> PgResult<Timestamp> {
        match &*self.inner {
            Inner::Local(o) => o.begin(),
            Inner::Remote(c) => c.begin().await,
        }
    }

    /// Fresh timestamp, not registered (READ COMMITTED statement snapshots).
    pub async fn timestamp(&self) -> PgResult<Timestamp> {
        match &*self.inner {
            Inner::Local(o) => o.timestamp(),
            Inner::Remote(c) => c.timestamp().await,
        }
    }

    /// Commit timestamp (greater than everything issued before the call); unregisters
    /// `start_ts`.
    pub async fn commit(&self, start_ts: Timestamp) -> PgResult<Timestamp> {
        match &*self.inner {
            Inner::Local(o) => o.commit_n(std::slice::from_ref(&start_ts)),
            Inner::Remote(c) => c.commit(start_ts).await,
        }
    }

    /// Unregisters `start_ts` without committing (abort, read-only end).
    pub async fn finish(&self, start_ts: Timestamp) -> PgResult<()> {
        match &*self.inner {
            Inner::Local(o) => {
                o.finish(std::slice::from_ref(&start_ts));
                Ok(())
            }
            Inner::Remote(c) => c.finish(start_ts).await,
        }
    }

    /// Decides to commit the transaction that started at `start`: issues its commit
    /// timestamp (as [`GtmClient::commit`] does: above everything issued before, and
    /// unregisters `start`) and records (start → committed at ts) durably; the answer
    /// comes only once the record is fsynced. Idempotent: if `start` is already recorded
    /// committed, returns that same timestamp (a retry after a lost answer). If `start`
    /// is recorded aborted (a resolver got there first), fails with 40001 and issues
    /// nothing. A decide that fails otherwise (08006, 58030) has an unknown outcome:
    /// retrying it is safe.
    pub async fn decide(&self, start: Timestamp) -> PgResult<Timestamp> {
        match &*self.inner {
            Inner::Local(o) => o.decide(start).await,
            Inner::Remote(c) => c.decide(start).await,
        }
    }

    /// What a participant holding a prepared part of `start` should do: `Committed(ts)`
    /// or `Aborted` as recorded; `Pending` while `start` is registered at the GTM (its
    /// coordinator holds it); otherwise (undecided and nobody holds it: the coordinator
    /// is gone) records (start → aborted) durably and answers `Aborted`. Answers only
    /// from durable records.
    pub async fn resolve(&self, start: Timestamp) -> PgResult<Resolution> {
        match &*self.inner {
            Inner::Local(o) => o.resolve(start).await,
            Inner::Remote(c) => c.resolve(start).await,
        }
    }

    /// Every participant applied the commit of `start`: its record may be dropped.
    /// Returns at once; not durable (a forgotten record that reappears after a GTM
    /// restart is harmless), and remotely it rides on the next batch.
    pub async fn forget(&self, start: Timestamp) -> PgResult<()> {
        match &*self.inner {
            Inner::Local(o) => {
                o.forget(start);
                Ok(())
            }
            Inner::Remote(c) => c.forget(start),
        }
    }

    /// `finish` without waiting for the GTM's answer (remote: queued for the next batch;
    /// a failure is only logged): for ends whose caller has nothing to do with the
    /// answer, such as a read-only transaction's.
    pub fn finish_later(&self, start_ts: Timestamp) {
        let queued = match &*self.inner {
            Inner::Local(o) => {
                o.finish(std::slice::from_ref(&start_ts));
                Ok(())
            }
            Inner::Remote(c) => c.finish_later(start_ts),
        };
        if let Err(e) = queued {
            tracing::warn!("finishing a transaction at the GTM: {e}");
        }
    }

    /// Whether the GTM is reachable as far as this client knows: its connection is up
    /// (always, in process).
    pub fn is_connected(&self) -> bool {
        match &*self.inner {
            Inner::Local(_) => true,
            Inner::Remote(c) => c.is_connected(),
        }
    }

    /// The newest cluster metadata version this client has seen on an answer (locally:
    /// the current one). No round trip.
    pub fn metadata_version(&self) -> u64 {
        match &*self.inner {
            Inner::Local(o) => o.metadata_version(),
            Inner::Remote(c) => c.metadata_version(),
        }
    }

    /// Latest known GC horizon: the minimum registered start timestamp, or the next
    /// timestamp if none. O(1), no round trip (remote: piggy-backed on every reply).
    pub fn horizon(&self) -> Timestamp {
        match &*self.inner {
            Inner::Local(o) => o.horizon(),
            Inner::Remote(c) => c.horizon(),
        }
    }
}
