//! The batching client for a remote GTM.
//!
//! Callers push a request onto a shared queue and wait on a oneshot. One driver task owns
//! the connection and keeps at most one batch in flight: it takes everything queued,
//! sends it as one frame, waits for the reply, answers every waiter, and then takes what
//! queued up meanwhile. Under light load a request goes out at once (no timer); under
//! heavy load everything waiting at the same moment shares one round trip.
//!
//! Decides and resolves wait for the GTM's decision log fsync, so they travel on a second
//! connection with its own driver (the decision lane): a batch of them in flight never
//! holds back the begins and timestamps queued behind it on the main lane.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, Notify};

use crate::horizon::HorizonSet;
use crate::oracle::aborted_by_resolver;
use crate::proto::*;
use crate::{Resolution, Timestamp};

/// Options for [`crate::GtmClient::connect`].
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Longest a request (or the initial connect) waits before failing with 08006.
    pub request_timeout: Duration,
    /// After a failed connection attempt, requests fail at once (08006) for this long
    /// before the next attempt, so a down GTM is not hammered.
    pub reconnect_backoff: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            request_timeout: Duration::from_secs(5),
            reconnect_backoff: Duration::from_millis(100),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Begin,
    Timestamp,
    Commit(Timestamp),
    Finish(Timestamp),
    Decide(Timestamp),
    Resolve(Timestamp),
    Forget(Timestamp),
}

impl Op {
    fn lane(self) -> LaneKind {
        match self {
            Op::Decide(_) | Op::Resolve(_) => LaneKind::Decisions,
            _ => LaneKind::Main,
        }
    }
}

/// Which of the client's two connections a request travels on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LaneKind {
    /// Begins, timestamps, commits, finishes, forgets: never wait for an fsync.
    Main = 0,
    /// Decides and resolves: answered after the decision log's fsync.
    Decisions = 1,
}

struct Pending {
    op: Op,
    /// Enqueue time + request timeout: the driver answers (or fails) the request by then.
    deadline: Instant,
    tx: oneshot::Sender<PgResult<u64>>,
}

/// A connection's request queue, worked by its own driver task.
struct Lane {
    queue: Mutex<Vec<Pending>>,
    notify: Notify,
    /// Whether the driver holds a working connection.
    connected: AtomicBool,
    /// Set (under the queue lock) when the driver task is gone (its runtime shut down or
    /// it panicked): requests then fail at once instead of waiting for nobody.
    driver_gone: AtomicBool,
}

impl Lane {
    fn new(connected: bool) -> Lane {
        Lane {
            queue: Mutex::new(Vec::with_capacity(1024)),
            notify: Notify::new(),
            connected: AtomicBool::new(connected),
            driver_gone: AtomicBool::new(false),
        }
    }
}

struct Shared {
    addr: String,
    opts: ClientOptions,
    lanes: [Lane; 2],
    horizon: AtomicU64,
    /// The largest metadata version any answer carried.
    metadata_version: AtomicU64,
    closed: AtomicBool,
    /// Start timestamps begun through this client and not yet committed, finished or
    /// decided: sent again in the main lane's handshake after a reconnect so the horizon
    /// keeps honouring them. A start leaves it when its commit, finish or decide is sent,
    /// whatever becomes of the request (a decided start re-registered by a reconnect
    /// would look pending to a resolver).
    live: Mutex<HorizonSet>,
}

impl Shared {
    fn lane(&self, kind: LaneKind) -> &Lane {
        &self.lanes[kind as usize]
    }

    /// Queues a request on its lane; its answer comes on the returned receiver.
    fn enqueue(&self, op: Op) -> PgResult<oneshot::Receiver<PgResult<u64>>> {
        let lane = self.lane(op.lane());
        let (tx, rx) = oneshot::channel();
        let deadline = Instant::now() + self.opts.request_timeout;
        let was_empty = {
            let mut q = lane.queue.lock();
            if lane.driver_gone.load(Ordering::Relaxed) {
                return Err(conn_failure(
                    "GTM client stopped (its runtime has shut down)",
                ));
            }
            let was_empty = q.is_empty();
            q.push(Pending { op, deadline, tx });
            was_empty
        };
        if was_empty {
            lane.notify.notify_one();
        }
        Ok(rx)
    }
}

/// A client of a remote GTM: on each tokio runtime that calls it, two connections with
/// their batching driver tasks ([`Shared`]), opened on that runtime's first call.
///
/// Why per runtime: a coordinator runs its sessions on single-threaded runtimes, one per
/// thread (`coordinator::executors`). A driver on another runtime costs two cross-thread
/// wake-ups per request (an eventfd write and, on a VM, an inter-processor interrupt each
/// way), more than the round trip to the GTM itself; a driver on the caller's runtime
/// queues, sends and answers on one thread.
///
/// The GTM keeps registrations per connection (a start is unregistered only by the
/// connection that registered it), so a start's commit, finish or decide goes to the
/// runtime whose connection began it, wherever the caller runs.
pub struct RemoteClient {
    addr: String,
    opts: ClientOptions,
    /// The connections of each runtime that called; the first is `connect`'s.
    runtimes: Mutex<Vec<(tokio::runtime::Id, Arc<Shared>)>>,
}

impl std::fmt::Debug for RemoteClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteClient")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Drop for RemoteClient {
    fn drop(&mut self) {
        for (_, shared) in self.runtimes.lock().drain(..) {
            shared.closed.store(true, Ordering::Release);
            for lane in &shared.lanes {
                lane.notify.notify_one();
            }
        }
    }
}

/// Most requests sent in one batch (frames stay well under the protocol limits).
const MAX_BATCH: usize = 1 << 16;

fn conn_failure(msg: impl Into<String>) -> PgError {
    PgError::new(codes::CONNECTION_FAILURE, msg)
}

impl Shared {
    /// The lanes of a runtime and their driver tasks, spawned on the current runtime; the
    /// main lane starts on `main` if given, the others connect on first use.
    fn start(
        addr: &str,
        opts: &ClientOptions,
        main: Option<Conn>,
        horizon: u64,
        metadata_version: u64,
    ) -> Arc<Shared> {
        let shared = Arc::new(Shared {
            addr: addr.to_string(),
            horizon: AtomicU64::new(horizon),
            metadata_version: AtomicU64::new(metadata_version),
            opts: opts.clone(),
            lanes: [Lane::new(main.is_some()), Lane::new(false)],
            closed: AtomicBool::new(false),
            live: Mutex::new(HorizonSet::new()),
        });
        for (lane, conn) in [(LaneKind::Main, main), (LaneKind::Decisions, None)] {
            let driver = Driver {
                shared: shared.clone(),
                lane,
                conn,
                last_failure: None,
                orphans: Vec::new(),
                seq: 0,
                wbuf: Vec::with_capacity(4096),
                rbuf: Vec::with_capacity(256),
            };
            tokio::spawn(driver.run());
        }
        shared
    }

    /// Queues a request and waits for the driver's answer. No timer per request: the
    /// driver bounds every wait (connect, round trip) by the earliest deadline of the
    /// batch it is working on, and fails requests whose deadline has passed before
    /// sending them, so each request is answered by its own deadline.
    async fn call(&self, op: Op) -> PgResult<u64> {
        match self.enqueue(op)?.await {
            Ok(r) => r,
            Err(_) => Err(conn_failure("GTM client driver stopped")),
        }
    }
}

/// The largest of one counter over every runtime's lanes.
fn latest(runtimes: &[(tokio::runtime::Id, Arc<Shared>)], value: fn(&Shared) -> &AtomicU64) -> u64 {
    runtimes
        .iter()
        .map(|(_, s)| value(s).load(Ordering::Acquire))
        .max()
        .unwrap_or(0)
}

impl RemoteClient {
    /// Connects the current runtime's main lane (bounded by `opts.request_timeout`) and
    /// starts its driver tasks there; the decision lane connects on first use, and so do
    /// the lanes of other runtimes.
    pub async fn connect(addr: &str, opts: ClientOptions) -> PgResult<RemoteClient> {
        let (conn, horizon, metadata_version) = Conn::open(addr, &opts, &[]).await?;
        let shared = Shared::start(addr, &opts, Some(conn), horizon, metadata_version);
        let runtime = tokio::runtime::Handle::current().id();
        Ok(RemoteClient {
            addr: addr.to_string(),
            opts,
            runtimes: Mutex::new(vec![(runtime, shared)]),
        })
    }

    /// The current runtime's lanes, started on its first call (outside any runtime,
    /// `connect`'s).
    fn here(&self) -> Arc<Shared> {
        let mut runtimes = self.runtimes.lock();
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return runtimes[0].1.clone();
        };
        let runtime = handle.id();
        if let Some((_, shared)) = runtimes.iter().find(|(r, _)| *r == runtime) {
            return shared.clone();
        }
        let horizon = latest(&runtimes, |s| &s.horizon);
        let metadata_version = latest(&runtimes, |s| &s.metadata_version);
        let shared = Shared::start(&self.addr, &self.opts, None, horizon, metadata_version);
        runtimes.push((runtime, shared.clone()));
        shared
    }

    /// The lanes whose connection registered `start`: the current runtime's, unless
    /// another runtime's began it.
    fn registered(&self, start: Timestamp) -> Arc<Shared> {
        let here = self.here();
        if here.live.lock().contains(start) {
            return here;
        }
        let runtimes = self.runtimes.lock();
        runtimes
            .iter()
            .find(|(_, s)| s.live.lock().contains(start))
            .map_or(here, |(_, s)| s.clone())
    }

    pub async fn begin(&self) -> PgResult<Timestamp> {
        self.here().call(Op::Begin).await
    }
    pub async fn timestamp(&self) -> PgResult<Timestamp> {
        self.here().call(Op::Timestamp).await
    }
    pub async fn commit(&self, start_ts: Timestamp) -> PgResult<Timestamp> {
        self.registered(start_ts).call(Op::Commit(start_ts)).await
    }
    pub async fn finish(&self, start_ts: Timestamp) -> PgResult<()> {
        self.registered(start_ts)
            .call(Op::Finish(start_ts))
            .await
            .map(|_| ())
    }
    pub async fn decide(&self, start_ts: Timestamp) -> PgResult<Timestamp> {
        self.registered(start_ts).call(Op::Decide(start_ts)).await
    }
    pub async fn resolve(&self, start_ts: Timestamp) -> PgResult<Resolution> {
        self.here()
            .call(Op::Resolve(start_ts))
            .await
            .map(decode_resolution)
    }
    /// Queues the finish for the next batch and returns: nobody waits for its answer.
    pub fn finish_later(&self, start_ts: Timestamp) -> PgResult<()> {
        self.registered(start_ts)
            .enqueue(Op::Finish(start_ts))
            .map(drop)
    }
    /// Queues the forget for the next batch and returns: nobody waits for its answer.
    pub fn forget(&self, start_ts: Timestamp) -> PgResult<()> {
        self.here().enqueue(Op::Forget(start_ts)).map(drop)
    }
    /// The latest horizon any runtime's connection was told.
    pub fn horizon(&self) -> Timestamp {
        self.latest(|s| &s.horizon)
    }
    /// The largest metadata version any answer carried.
    pub fn metadata_version(&self) -> u64 {
        self.latest(|s| &s.metadata_version)
    }
    fn latest(&self, value: fn(&Shared) -> &AtomicU64) -> u64 {
        latest(&self.runtimes.lock(), value)
    }
    /// Whether any runtime's main connection is up (each notices at once when the GTM
    /// goes away, and reconnects on its next request).
    pub fn is_connected(&self) -> bool {
        let runtimes = self.runtimes.lock();
        runtimes
            .iter()
            .any(|(_, s)| s.lane(LaneKind::Main).connected.load(Ordering::Acquire))
    }
}

struct Conn {
    rd: BufReader<OwnedReadHalf>,
    wr: OwnedWriteHalf,
}

impl Conn {
    /// Connects and handshakes, re-registering `live`. Returns the connection, the
    /// server's horizon and its metadata version. Bounded by the request timeout.
    async fn open(
        addr: &str,
        opts: &ClientOptions,
        live: &[Timestamp],
    ) -> PgResult<(Conn, u64, u64)> {
        match tokio::time::timeout(opts.request_timeout, Conn::open_inner(addr, live)).await {
            Ok(r) => r,
            Err(_) => Err(conn_failure(format!(
                "could not connect to GTM at {addr}: timed out after {} ms",
                opts.request_timeout.as_millis()
            ))),
        }
    }

    async fn open_inner(addr: &str, live: &[Timestamp]) -> PgResult<(Conn, u64, u64)> {
        let fail =
            |e: std::io::Error| conn_failure(format!("could not connect to GTM at {addr}: {e}"));
        let sock = TcpStream::connect(addr).await.map_err(fail)?;
        let _ = sock.set_nodelay(true);
        let (rd, mut wr) = sock.into_split();
        let mut rd = BufReader::with_capacity(64 * 1024, rd);
        let mut out = Vec::with_capacity(12 + live.len() * 8);
        out.extend_from_slice(MAGIC);
        put_u16(&mut out, VERSION);
        put_u16(&mut out, 0);
        put_u32(&mut out, live.len() as u32);
        for ts in live {
            put_u64(&mut out, *ts);
        }
        wr.write_all(&out).await.map_err(fail)?;
        let mut hdr = [0u8; HANDSHAKE_REPLY_LEN];
        rd.read_exact(&mut hdr).await.map_err(fail)?;
        let mut r = Reader::new(&hdr);
        if r.bytes(4)? != MAGIC {
            return Err(conn_failure(format!(
                "{addr} is not a Meridian GTM (bad handshake magic)"
            )));
        }
        let version = r.u16()?;
        let status = r.u16()?;
        let horizon = r.u64()?;
        let _next = r.u64()?;
        let metadata_version = r.u64()?;
        if status != STATUS_OK {
            let mut len = [0u8; 4];
            let mut msg = String::from("GTM refused the connection");
            if rd.read_exact(&mut len).await.is_ok() {
                let n = (u32::from_le_bytes(len) as usize).min(4096);
                let mut m = vec![0u8; n];
                if rd.read_exact(&mut m).await.is_ok() {
                    msg = String::from_utf8_lossy(&m).into_owned();
                }
            }
            return Err(PgError::new(
                codes::PROTOCOL_VIOLATION,
                format!("GTM at {addr} (protocol version {version}): {msg}"),
            ));
        }
        Ok((Conn { rd, wr }, horizon, metadata_version))
    }
}

struct Driver {
    shared: Arc<Shared>,
    lane: LaneKind,
    conn: Option<Conn>,
    last_failure: Option<Instant>,
    /// Begins whose requester gave up (timed out) before the reply: finished in the next
    /// batch so they do not hold the horizon back forever.
    orphans: Vec<Timestamp>,
    seq: u64,
    wbuf: Vec<u8>,
    rbuf: Vec<u8>,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let lane = self.shared.lane(self.lane);
        let pending = {
            let mut q = lane.queue.lock();
            lane.driver_gone.store(true, Ordering::Relaxed);
            std::mem::take(&mut *q)
        };
        for p in pending {
            let _ = p.tx.send(Err(conn_failure(
                "GTM client stopped (its runtime has shut down)",
            )));
        }
    }
}

#[derive(Default)]
struct Batch {
    begins: Vec<oneshot::Sender<PgResult<u64>>>,
    stamps: Vec<oneshot::Sender<PgResult<u64>>>,
    commits: Vec<(Timestamp, oneshot::Sender<PgResult<u64>>)>,
    finishes: Vec<(Timestamp, Option<oneshot::Sender<PgResult<u64>>>)>,
    decides: Vec<(Timestamp, oneshot::Sender<PgResult<u64>>)>,
    resolves: Vec<(Timestamp, oneshot::Sender<PgResult<u64>>)>,
    forgets: Vec<(Timestamp, oneshot::Sender<PgResult<u64>>)>,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.begins.is_empty()
            && self.stamps.is_empty()
            && self.commits.is_empty()
            && self.finishes.is_empty()
            && self.decides.is_empty()
            && self.resolves.is_empty()
            && self.forgets.is_empty()
    }

    fn fail(self, e: &PgError) {
        for tx in self.begins.into_iter().chain(self.stamps) {
            let _ = tx.send(Err(e.clone()));
        }
        for (_, tx) in self
            .commits
            .into_iter()
            .chain(self.decides)
            .chain(self.resolves)
            .chain(self.forgets)
        {
            let _ = tx.send(Err(e.clone()));
        }
        for (_, tx) in self
            .finishes
            .into_iter()
            .filter_map(|(t, x)| x.map(|x| (t, x)))
        {
            let _ = tx.send(Err(e.clone()));
        }
    }
}

impl Driver {
    async fn run(mut self) {
        let mut taken: Vec<Pending> = Vec::with_capacity(1024);
        let mut batch = Batch::default();
        loop {
            {
                let mut q = self.shared.lane(self.lane).queue.lock();
                std::mem::swap(&mut *q, &mut taken);
                if taken.len() > MAX_BATCH {
                    // Keep frames bounded: the excess goes first in the next batch.
                    let mut rest = taken.split_off(MAX_BATCH);
                    rest.append(&mut q);
                    *q = rest;
                }
            }
            if taken.is_empty() && self.orphans.is_empty() {
                if self.shared.closed.load(Ordering::Acquire) {
                    return;
                }
                self.idle().await;
                continue;
            }
            let now = Instant::now();
            let mut deadline: Option<Instant> = None;
            let mut expired_decides = Vec::new();
            for p in taken.drain(..) {
                if p.deadline <= now {
                    // The caller gives up on the transaction: still unregister it, so a
                    // timed-out commit, finish or decide does not pin the horizon (a
                    // resolver may then abort the undecided transaction, as intended).
                    // A forget needs no answer: it goes anyway.
                    match p.op {
                        Op::Commit(s) | Op::Finish(s) => batch.finishes.push((s, None)),
                        Op::Decide(s) => expired_decides.push(s),
                        Op::Forget(s) => {
                            batch.forgets.push((s, p.tx));
                            continue;
                        }
                        Op::Begin | Op::Timestamp | Op::Resolve(_) => {}
                    }
                    let _ = p.tx.send(Err(self.timed_out()));
                    continue;
                }
                deadline = Some(deadline.map_or(p.deadline, |d: Instant| d.min(p.deadline)));
                match p.op {
                    Op::Begin => batch.begins.push(p.tx),
                    Op::Timestamp => batch.stamps.push(p.tx),
                    Op::Commit(s) => batch.commits.push((s, p.tx)),
                    Op::Finish(s) => batch.finishes.push((s, Some(p.tx))),
                    Op::Decide(s) => batch.decides.push((s, p.tx)),
                    Op::Resolve(s) => batch.resolves.push((s, p.tx)),
                    Op::Forget(s) => batch.forgets.push((s, p.tx)),
                }
            }
            for s in self.orphans.drain(..) {
                batch.finishes.push((s, None));
            }
            self.release(expired_decides.into_iter());
            if batch.is_empty() {
                continue;
            }
            let b = std::mem::take(&mut batch);
            let deadline = deadline.unwrap_or(now + self.shared.opts.request_timeout);
            self.send_batch(b, deadline).await;
        }
    }

    /// Waits for the next request. Meanwhile it watches the idle connection: nothing is
    /// in flight, so the GTM closing it (it stopped or restarted) or sending anything is
    /// the end of it, and the next request opens a fresh connection instead of failing on
    /// the dead one however long after the restart it comes. Without a connection, the
    /// main lane reconnects on its own (every `reconnect_backoff`) while it has open
    /// transactions: until they are registered again, a resolver would take them for a
    /// gone coordinator's and abort them.
    async fn idle(&mut self) {
        let notified = self.shared.lane(self.lane).notify.notified();
        let Some(conn) = self.conn.as_mut() else {
            let holding = self.lane == LaneKind::Main && !self.shared.live.lock().is_empty();
            if !holding {
                notified.await;
                return;
            }
            let backoff = self.shared.opts.reconnect_backoff;
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(backoff) => {
                    let deadline = Instant::now() + self.shared.opts.request_timeout;
                    // A failure is retried after the next backoff (or by the next request).
                    let _ = self.ensure_connected(deadline).await;
                }
            }
            return;
        };
        let ended = tokio::select! {
            _ = notified => None,
            r = conn.rd.fill_buf() => Some(match r {
                Ok([]) => "the GTM closed the connection".to_string(),
                Ok(_) => "the GTM sent data no request asked for".to_string(),
                Err(e) => e.to_string(),
            }),
        };
        if let Some(why) = ended {
            tracing::info!(addr = %self.shared.addr, lane = ?self.lane, "GTM connection ended while idle: {why}");
            self.conn = None;
            self.shared
                .lane(self.lane)
                .connected
                .store(false, Ordering::Release);
            self.last_failure = None;
        }
    }

    fn timed_out(&self) -> PgError {
        conn_failure(format!(
            "GTM request timed out after {} ms (GTM at {})",
            self.shared.opts.request_timeout.as_millis(),
            self.shared.addr
        ))
    }

    async fn ensure_connected(&mut self, deadline: Instant) -> PgResult<()> {
        if self.conn.is_some() {
            return Ok(());
        }
        let opts = &self.shared.opts;
        if let Some(t) = self.last_failure {
            if t.elapsed() < opts.reconnect_backoff {
                return Err(conn_failure(format!(
                    "GTM at {} is unreachable (retrying shortly)",
                    self.shared.addr
                )));
            }
        }
        // Only the main lane registers (its begins); the decision lane holds nothing.
        let live: Vec<Timestamp> = match self.lane {
            LaneKind::Main => self.shared.live.lock().to_vec(),
            LaneKind::Decisions => Vec::new(),
        };
        let opened = match tokio::time::timeout_at(
            deadline.into(),
            Conn::open_inner(&self.shared.addr, &live),
        )
        .await
        {
            Ok(r) => r,
            Err(_) => Err(conn_failure(format!(
                "could not connect to GTM at {}: timed out",
                self.shared.addr
            ))),
        };
        match opened {
            Ok((c, h, metadata_version)) => {
                tracing::info!(addr = %self.shared.addr, lane = ?self.lane, live = live.len(), "connected to GTM");
                self.conn = Some(c);
                self.shared
                    .lane(self.lane)
                    .connected
                    .store(true, Ordering::Release);
                self.last_failure = None;
                if self.lane == LaneKind::Main {
                    self.shared.horizon.store(h, Ordering::Release);
                }
                self.shared
                    .metadata_version
                    .fetch_max(metadata_version, Ordering::AcqRel);
                Ok(())
            }
            Err(e) => {
                self.last_failure = Some(Instant::now());
                Err(e)
            }
        }
    }

    /// Sends a batch and answers its callers. Decided starts are then released on the
    /// main lane, which holds their registrations (after the decide: until it is
    /// recorded, the start stays registered, so a resolver sees it pending, not gone).
    async fn send_batch(&mut self, b: Batch, deadline: Instant) {
        let res = self.exchange(&b, deadline).await;
        // After the GTM had the decides, before their callers hear of them (so that
        // their next requests find the starts released).
        self.release(b.decides.iter().map(|d| d.0));
        match res {
            Ok(firsts) => self.answer(b, firsts),
            Err(e) => b.fail(&e),
        }
    }

    /// Queues finishes of `starts` on the main lane (nobody waits for them).
    fn release(&self, starts: impl Iterator<Item = Timestamp>) {
        for s in starts {
            // A stopped main driver failed everything anyway: nothing left to release.
            let _ = self.shared.enqueue(Op::Finish(s));
        }
    }

    /// Sends the batch and receives its reply: the first timestamps of its ranges, the
    /// horizon and the metadata version (the rest stays in `rbuf` for `answer`).
    async fn exchange(&mut self, b: &Batch, deadline: Instant) -> PgResult<[u64; 5]> {
        if let Err(e) = self.ensure_connected(deadline).await {
            // Finishes of transactions that are gone: the server drops a closed
            // connection's registrations itself, and live ones are no longer live.
            {
                let mut live = self.shared.live.lock();
                for (s, _) in &b.finishes {
                    live.remove(*s);
                }
                for (s, _) in b.commits.iter().chain(&b.decides) {
                    live.remove(*s);
                }
            }
            return Err(e);
        }
        // Encode.
        self.seq += 1;
        let seq = self.seq;
        let w = &mut self.wbuf;
        w.clear();
        put_u32(w, 0);
        w.push(KIND_BATCH);
        put_u64(w, seq);
        put_u32(w, b.begins.len() as u32);
        put_u32(w, b.stamps.len() as u32);
        put_u32(w, b.commits.len() as u32);
        put_u32(w, b.finishes.len() as u32);
        put_u32(w, b.decides.len() as u32);
        put_u32(w, b.resolves.len() as u32);
        put_u32(w, b.forgets.len() as u32);
        // A decided, committed or finished start leaves the live set when it is sent,
        // whatever becomes of the request: a reconnect must not register it again (a
        // resolver would see it pending forever).
        {
            let mut live = self.shared.live.lock();
            let commits = b.commits.iter().map(|c| c.0);
            for s in commits.chain(b.finishes.iter().map(|f| f.0)) {
                put_u64(w, s);
                live.remove(s);
            }
            for (s, _) in &b.decides {
                put_u64(w, *s);
                live.remove(*s);
            }
        }
        for (s, _) in b.resolves.iter().chain(&b.forgets) {
            put_u64(w, *s);
        }
        let len = (w.len() - 4) as u32;
        w[0..4].copy_from_slice(&len.to_le_bytes());

        let conn = self.conn.as_mut().expect("connected");
        let rbuf = &mut self.rbuf;
        let io = async {
            conn.wr.write_all(&self.wbuf).await?;
            let mut len = [0u8; 4];
            conn.rd.read_exact(&mut len).await?;
            let len = u32::from_le_bytes(len) as usize;
            if len > MAX_FRAME {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "GTM reply too large",
                ));
            }
            rbuf.resize(len, 0);
            conn.rd.read_exact(rbuf).await?;
            Ok::<(), std::io::Error>(())
        };
        let res = match tokio::time::timeout_at(deadline.into(), io).await {
            Ok(Ok(())) => self.decode(seq, b.decides.len() + b.resolves.len()),
            Ok(Err(e)) => Err(conn_failure(format!(
                "lost connection to GTM at {}: {e}",
                self.shared.addr
            ))),
            Err(_) => Err(self.timed_out()),
        };
        if let Err(e) = &res {
            if e.code == codes::CONNECTION_FAILURE || e.code == codes::PROTOCOL_VIOLATION {
                tracing::warn!("{e}");
                self.conn = None;
                self.shared
                    .lane(self.lane)
                    .connected
                    .store(false, Ordering::Release);
                self.last_failure = None; // try again at once on the next batch
            }
        }
        res
    }

    /// Decodes the reply in `rbuf`: the first timestamps of the begin, timestamp and
    /// commit ranges, the horizon and the metadata version; checks that the
    /// `n_answers` decide and resolve answers follow (read by [`Driver::answer`]).
    fn decode(&self, seq: u64, n_answers: usize) -> PgResult<[u64; 5]> {
        let mut r = Reader::new(&self.rbuf);
        let parsed = (|| {
            let kind = r.u8()?;
            let rseq = r.u64()?;
            if rseq != seq {
                return Err(violation(format!(
                    "GTM reply for batch {rseq}, expected {seq}"
                )));
            }
            match kind {
                KIND_BATCH => {
                    let fixed = [r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?];
                    if r.remaining() != n_answers * 8 {
                        return Err(violation("GTM reply does not match its batch"));
                    }
                    Ok(Ok(fixed))
                }
                KIND_ERROR => {
                    let code = static_code(r.bytes(5)?);
                    let n = r.u32()? as usize;
                    let msg = String::from_utf8_lossy(r.bytes(n)?).into_owned();
                    Ok(Err(PgError::new(code, format!("GTM: {msg}"))))
                }
                k => Err(violation(format!("unknown GTM reply kind {k}"))),
            }
        })();
        parsed?
    }

    /// Answers the batch's waiters from a successful reply.
    fn answer(&mut self, b: Batch, [bf, tf, cf, horizon, metadata_version]: [u64; 5]) {
        // The main lane's answers alone set the horizon, in the order it moved.
        if self.lane == LaneKind::Main {
            self.shared.horizon.store(horizon, Ordering::Release);
        }
        self.shared
            .metadata_version
            .fetch_max(metadata_version, Ordering::AcqRel);
        if !b.begins.is_empty() {
            let mut live = self.shared.live.lock();
            for (i, tx) in b.begins.into_iter().enumerate() {
                let ts = bf + i as u64;
                if tx.send(Ok(ts)).is_ok() {
                    live.insert(ts);
                } else {
                    self.orphans.push(ts);
                }
            }
        }
        for (i, tx) in b.stamps.into_iter().enumerate() {
            let _ = tx.send(Ok(tf + i as u64));
        }
        for (i, (_, tx)) in b.commits.into_iter().enumerate() {
            let _ = tx.send(Ok(cf + i as u64));
        }
        for (_, tx) in b.finishes {
            if let Some(tx) = tx {
                let _ = tx.send(Ok(0));
            }
        }
        // The decide and resolve answers follow the fixed part (checked by `decode`).
        let mut answers = self.rbuf[BATCH_OK_LEN..]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()));
        for ((_, tx), v) in b.decides.into_iter().zip(answers.by_ref()) {
            let _ = tx.send(if v == DECIDE_REFUSED {
                Err(aborted_by_resolver())
            } else {
                Ok(v)
            });
        }
        for ((_, tx), v) in b.resolves.into_iter().zip(answers) {
            let _ = tx.send(Ok(v));
        }
        for (_, tx) in b.forgets {
            let _ = tx.send(Ok(0));
        }
    }
}
