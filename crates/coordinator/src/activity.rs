//! The sessions of this coordinator as pg_stat_activity shows them, and the signals
//! other sessions send them: CancelRequest, pg_cancel_backend, pg_terminate_backend.
//!
//! Each session owns one `SessionActivity`, registered by its BackendKeyData pid for as
//! long as it runs. The session updates a few fields per statement (relaxed atomics, and
//! the query text under a mutex only a pg_stat_activity reader also takes); readers see
//! each field as last written, not one consistent snapshot of all, as PostgreSQL's
//! readers usually do.

use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::Poll;
use tokio::sync::Notify;

/// A timestamp field that is NULL.
const NO_TIME: i64 = i64::MIN;

/// pg_stat_activity.state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum SessionStateKind {
    Idle = 0,
    Active = 1,
    IdleInTransaction = 2,
    IdleInTransactionAborted = 3,
}

impl SessionStateKind {
    pub fn name(self) -> &'static str {
        match self {
            SessionStateKind::Idle => "idle",
            SessionStateKind::Active => "active",
            SessionStateKind::IdleInTransaction => "idle in transaction",
            SessionStateKind::IdleInTransactionAborted => "idle in transaction (aborted)",
        }
    }

    fn from_u8(v: u8) -> Self {
        match v {
            1 => SessionStateKind::Active,
            2 => SessionStateKind::IdleInTransaction,
            3 => SessionStateKind::IdleInTransactionAborted,
            _ => SessionStateKind::Idle,
        }
    }
}

/// What a session is known at its start.
pub struct SessionIdentity {
    pub pid: i32,
    /// The CancelRequest key sent in BackendKeyData.
    pub secret: i32,
    pub user: String,
    pub database: String,
    /// None for the Unix-domain socket (client_addr and client_port NULL, as PostgreSQL).
    pub client: Option<SocketAddr>,
    /// The connection's socket: a terminated session's reads are shut down to wake it.
    pub fd: RawFd,
}

/// One session's row of pg_stat_activity and its signals.
pub struct SessionActivity {
    pub identity: SessionIdentity,
    pub backend_start: i64,
    /// Woken by a cancel (and a terminate): the running statement ends.
    pub cancel: Notify,
    terminated: AtomicBool,
    state: AtomicU8,
    /// When the running statement's current lock wait began (NO_TIME: not waiting).
    wait_start: AtomicI64,
    /// The GTM start timestamp of the session's transaction once it has one (0: none):
    /// how the datanodes' wait-for edges name it (pg_locks).
    txn_start: AtomicU64,
    xact_start: AtomicI64,
    query_start: AtomicI64,
    state_change: AtomicI64,
    query: Mutex<String>,
    application_name: Mutex<String>,
}

/// One session's row as a reader sees it.
pub struct ActivityRow {
    pub pid: i32,
    pub user: String,
    pub database: String,
    pub application_name: String,
    pub client: Option<SocketAddr>,
    pub backend_start: i64,
    pub xact_start: Option<i64>,
    pub query_start: Option<i64>,
    pub state_change: Option<i64>,
    /// ('Lock', 'transactionid') while the statement waits for a row lock, ('Client',
    /// 'ClientRead') while the session waits for its client, as PostgreSQL's.
    pub wait_event: Option<(&'static str, &'static str)>,
    pub state: SessionStateKind,
    pub query: String,
}

fn time(v: &AtomicI64) -> Option<i64> {
    Some(v.load(Ordering::Relaxed)).filter(|&t| t != NO_TIME)
}

impl SessionActivity {
    pub fn new(identity: SessionIdentity, application_name: String) -> Self {
        let now = types::datetime::now_timestamp();
        SessionActivity {
            identity,
            backend_start: now,
            cancel: Notify::new(),
            terminated: AtomicBool::new(false),
            state: AtomicU8::new(SessionStateKind::Idle as u8),
            wait_start: AtomicI64::new(NO_TIME),
            txn_start: AtomicU64::new(0),
            xact_start: AtomicI64::new(NO_TIME),
            query_start: AtomicI64::new(NO_TIME),
            state_change: AtomicI64::new(now),
            query: Mutex::new(String::new()),
            application_name: Mutex::new(application_name),
        }
    }

    /// A statement (a query string, or an Execute) starts: `query` is its text, and
    /// `xact_start` its transaction's start (None: the statement starts one now).
    pub fn start_statement(&self, query: &str, xact_start: Option<i64>) {
        let now = types::datetime::now_timestamp();
        {
            let mut text = self.query.lock();
            text.clear();
            text.push_str(query);
        }
        self.query_start.store(now, Ordering::Relaxed);
        self.state_change.store(now, Ordering::Relaxed);
        self.xact_start
            .store(xact_start.unwrap_or(now), Ordering::Relaxed);
        self.state
            .store(SessionStateKind::Active as u8, Ordering::Relaxed);
    }

    /// When the running statement's message arrived (query_start): its
    /// statement_timestamp(), and now() if it starts a transaction, as PostgreSQL's.
    pub fn statement_time(&self) -> i64 {
        match self.query_start.load(Ordering::Relaxed) {
            NO_TIME => types::datetime::now_timestamp(),
            t => t,
        }
    }

    /// The session waits for its next message (ReadyForQuery sent) in `state`.
    pub fn idle(&self, state: SessionStateKind) {
        if self.state.load(Ordering::Relaxed) == state as u8 {
            return;
        }
        self.state_change
            .store(types::datetime::now_timestamp(), Ordering::Relaxed);
        if state == SessionStateKind::Idle {
            self.xact_start.store(NO_TIME, Ordering::Relaxed);
            self.txn_start.store(0, Ordering::Relaxed);
        }
        self.state.store(state as u8, Ordering::Relaxed);
    }

    pub fn set_application_name(&self, name: &str) {
        let mut current = self.application_name.lock();
        current.clear();
        current.push_str(name);
    }

    /// `lock`, a wait for a row lock, shown as wait event Lock/transactionid while it
    /// waits (from its first poll that finds the lock held, or in a cluster its request
    /// in flight, to its end).
    pub async fn waiting_for_lock<T>(&self, lock: impl Future<Output = T>) -> T {
        let mut lock = pin!(lock);
        let mut marked = false;
        let result = std::future::poll_fn(|cx| match lock.as_mut().poll(cx) {
            Poll::Pending => {
                if !marked {
                    marked = true;
                    self.wait_start
                        .store(types::datetime::now_timestamp(), Ordering::Relaxed);
                }
                Poll::Pending
            }
            ready => ready,
        })
        .await;
        if marked {
            self.wait_start.store(NO_TIME, Ordering::Relaxed);
        }
        result
    }

    /// The session's transaction took its GTM start timestamp `start`.
    pub fn transaction_started(&self, start: u64) {
        self.txn_start.store(start, Ordering::Relaxed);
    }

    /// The start timestamp of the session's transaction, once it has one (pg_locks).
    pub fn transaction_start(&self) -> Option<u64> {
        Some(self.txn_start.load(Ordering::Relaxed)).filter(|&t| t != 0)
    }

    /// When the statement's current lock wait began, while it waits (pg_locks.waitstart).
    pub fn lock_wait_start(&self) -> Option<i64> {
        time(&self.wait_start)
    }

    /// Whether pg_terminate_backend asked this session to end.
    pub fn terminated(&self) -> bool {
        self.terminated.load(Ordering::Relaxed)
    }

    /// The running or last statement's text.
    pub fn query(&self) -> String {
        self.query.lock().clone()
    }

    pub fn row(&self) -> ActivityRow {
        let state = SessionStateKind::from_u8(self.state.load(Ordering::Relaxed));
        let wait_event = if state != SessionStateKind::Active {
            Some(("Client", "ClientRead"))
        } else if self.lock_wait_start().is_some() {
            Some(("Lock", "transactionid"))
        } else {
            None
        };
        ActivityRow {
            pid: self.identity.pid,
            user: self.identity.user.clone(),
            database: self.identity.database.clone(),
            application_name: self.application_name.lock().clone(),
            client: self.identity.client,
            backend_start: self.backend_start,
            xact_start: time(&self.xact_start),
            query_start: time(&self.query_start),
            state_change: time(&self.state_change),
            wait_event,
            state,
            query: self.query.lock().clone(),
        }
    }
}

/// Every running session of this coordinator, by pid.
#[derive(Default)]
pub struct SessionRegistry {
    sessions: Mutex<FxHashMap<i32, Arc<SessionActivity>>>,
}

/// Removes its session from the registry when the session ends (before its socket is
/// closed, so a terminate never shuts down a descriptor reused by another connection).
pub struct Registered<'r> {
    registry: &'r SessionRegistry,
    pub activity: Arc<SessionActivity>,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.registry
            .sessions
            .lock()
            .remove(&self.activity.identity.pid);
    }
}

impl SessionRegistry {
    pub fn register(&self, activity: SessionActivity) -> Registered<'_> {
        let activity = Arc::new(activity);
        self.sessions
            .lock()
            .insert(activity.identity.pid, activity.clone());
        Registered {
            registry: self,
            activity,
        }
    }

    pub fn get(&self, pid: i32) -> Option<Arc<SessionActivity>> {
        self.sessions.lock().get(&pid).cloned()
    }

    /// Every session, in pid order.
    pub fn all(&self) -> Vec<Arc<SessionActivity>> {
        let mut all: Vec<_> = self.sessions.lock().values().cloned().collect();
        all.sort_by_key(|a| a.identity.pid);
        all
    }

    /// A CancelRequest: cancels the session's statement if the key matches.
    pub fn cancel_request(&self, pid: i32, secret: i32) {
        if let Some(target) = self.get(pid).filter(|t| t.identity.secret == secret) {
            target.cancel.notify_waiters();
        }
    }

    /// Ends the session `pid` (pg_terminate_backend): its statement is woken and its
    /// socket's reading side shut down, so an idle session wakes too; either way it sends
    /// 57P01 and closes. False if there is no such session.
    pub fn terminate(&self, pid: i32) -> bool {
        // Under the registry's lock: the session's socket is still open while it is here.
        let sessions = self.sessions.lock();
        let Some(target) = sessions.get(&pid) else {
            return false;
        };
        target.terminated.store(true, Ordering::Relaxed);
        target.cancel.notify_waiters();
        // SAFETY: the descriptor is the session's open socket (see `Registered`); shutting
        // down its reading side only makes the session's next read see end of stream.
        unsafe {
            libc::shutdown(target.identity.fd, libc::SHUT_RD);
        }
        true
    }
}
