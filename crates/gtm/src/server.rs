//! The GTM as a network service: one oracle, many client connections, one batch in
//! flight per connection (the client batches; the server answers a batch with ranges).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use pgerror::{codes, PgError, PgResult};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::decisions::Ticket;
use crate::horizon::HorizonSet;
use crate::oracle::{Oracle, OracleOptions};
use crate::proto::*;
use crate::Timestamp;

const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Options for [`Server::bind`].
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    pub oracle: OracleOptions,
}

/// A bound, not yet serving, GTM server.
pub struct Server {
    listener: TcpListener,
    oracle: Arc<Oracle>,
    local_addr: SocketAddr,
}

/// Runs the GTM: opens the oracle under `data_dir`, listens on `listen`, logs
/// "ready to accept connections" and serves until the process ends.
pub async fn run(data_dir: PathBuf, listen: SocketAddr) -> PgResult<()> {
    run_with(data_dir, listen, ServerOptions::default()).await
}

/// [`run`] with options (a smaller high-water window for tests).
pub async fn run_with(data_dir: PathBuf, listen: SocketAddr, opts: ServerOptions) -> PgResult<()> {
    Server::bind(data_dir, listen, opts).await?.serve().await
}

impl Server {
    pub async fn bind(
        data_dir: PathBuf,
        listen: SocketAddr,
        opts: ServerOptions,
    ) -> PgResult<Server> {
        let oracle = Arc::new(Oracle::open_with(&data_dir, opts.oracle)?);
        let listener = TcpListener::bind(listen).await.map_err(|e| {
            PgError::new(
                codes::CONNECTION_FAILURE,
                format!("could not listen on {listen}: {e}"),
            )
        })?;
        let local_addr = listener
            .local_addr()
            .map_err(|e| PgError::io("local_addr", e))?;
        Ok(Server {
            listener,
            oracle,
            local_addr,
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn oracle(&self) -> &Arc<Oracle> {
        &self.oracle
    }

    /// Accepts connections until the process ends.
    pub async fn serve(self) -> PgResult<()> {
        self.serve_inner(None).await
    }

    /// [`Server::serve`], handing every connection that does not open with the GTM's
    /// magic to `other`: another service of the GTM's process shares its address (the
    /// metadata service, decision 0028), so clients need one address for both.
    pub async fn serve_sharing(
        self,
        other: impl Fn(TcpStream) + Send + Sync + 'static,
    ) -> PgResult<()> {
        self.serve_inner(Some(Arc::new(other))).await
    }

    async fn serve_inner(self, other: Option<OtherService>) -> PgResult<()> {
        // Registered now, so that a scrape shows them before the first request.
        crate::metrics::metrics();
        tracing::info!(
            addr = %self.local_addr,
            next = self.oracle.peek_next(),
            "GTM listening on {}; ready to accept connections",
            self.local_addr
        );
        loop {
            let (sock, peer) = match self.listener.accept().await {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and friends: back off briefly instead of spinning.
                    tracing::warn!("GTM accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            let oracle = self.oracle.clone();
            let other = other.clone();
            tokio::spawn(async move {
                if let Some(other) = other {
                    match opens_with_magic(&sock).await {
                        Ok(true) => {}
                        Ok(false) => return other(sock),
                        Err(e) => return tracing::debug!(%peer, "GTM connection closed: {e}"),
                    }
                }
                let mut conn = Connection {
                    oracle,
                    registered: HorizonSet::new(),
                    decided: Vec::new(),
                    resolved: Vec::new(),
                };
                match conn.serve(sock).await {
                    Ok(()) => tracing::debug!(%peer, "GTM client disconnected"),
                    Err(e) => tracing::info!(%peer, "GTM connection closed: {e}"),
                }
                conn.cleanup();
            });
        }
    }
}

type OtherService = Arc<dyn Fn(TcpStream) + Send + Sync>;

/// Whether the connection's first bytes are the GTM handshake's magic (peeked, so they
/// stay for whichever service reads them). A peer that sends fewer bytes than the magic
/// is not waited for past the handshake timeout.
async fn opens_with_magic(sock: &TcpStream) -> PgResult<bool> {
    let mut first = [0u8; MAGIC.len()];
    let peek = async {
        loop {
            let n = sock.peek(&mut first).await?;
            if n == 0 || n == first.len() || first[..n] != MAGIC[..n] {
                return Ok::<_, std::io::Error>(n == first.len() && first == *MAGIC);
            }
            // Part of the magic arrived: wait for the rest.
            sock.readable().await?;
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    };
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, peek).await {
        Ok(r) => r.map_err(|e| PgError::new(codes::CONNECTION_FAILURE, e.to_string())),
        Err(_) => Err(violation("no handshake within 10 s")),
    }
}

/// One client connection. It remembers the start timestamps it registered, so that when
/// the connection goes away (client crashed or reconnecting) they stop holding back the
/// horizon; a reconnecting client re-registers its live ones in the handshake.
struct Connection {
    oracle: Arc<Oracle>,
    registered: HorizonSet,
    /// The current batch's decide answers (commit ts or [`DECIDE_REFUSED`]).
    decided: Vec<u64>,
    /// The current batch's resolve answers ([`encode_resolution`]).
    resolved: Vec<u64>,
}

impl Connection {
    /// The connection's own registrations use the same structure as the oracle's set:
    /// begins arrive in increasing order (O(1) append) and commits are found from the
    /// newest end, so the cost does not grow with the number of open transactions.
    #[inline]
    fn note_registered(&mut self, ts: Timestamp) {
        self.registered.insert(ts);
    }

    /// Removes `ts` from this connection's registrations; false if it had none.
    #[inline]
    fn note_unregistered(&mut self, ts: Timestamp) -> bool {
        self.registered.remove(ts)
    }

    fn cleanup(&mut self) {
        let left = self.registered.drain();
        if !left.is_empty() {
            tracing::debug!(
                count = left.len(),
                "unregistering a closed connection's transactions"
            );
            self.oracle.finish(&left);
        }
    }

    async fn serve(&mut self, sock: TcpStream) -> PgResult<()> {
        let _ = sock.set_nodelay(true);
        let (rd, mut wr) = sock.into_split();
        let mut rd = BufReader::with_capacity(64 * 1024, rd);
        let io = |e: std::io::Error| {
            PgError::new(codes::CONNECTION_FAILURE, format!("GTM connection: {e}"))
        };

        // Handshake.
        let mut hdr = [0u8; 12];
        // A peer that connects and never says anything does not hold a task forever.
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, rd.read_exact(&mut hdr)).await {
            Ok(r) => r.map_err(io)?,
            Err(_) => return Err(violation("no GTM handshake within 10 s")),
        };
        let mut r = Reader::new(&hdr);
        let magic = r.bytes(4)?;
        if magic != MAGIC {
            return Err(violation("not a GTM client (bad magic)"));
        }
        let version = r.u16()?;
        let _flags = r.u16()?;
        let n_live = r.u32()?;
        let mut out = Vec::with_capacity(256);
        if version != VERSION {
            let msg = format!(
                "GTM protocol version {version} is not supported (server speaks {VERSION})"
            );
            out.extend_from_slice(MAGIC);
            put_u16(&mut out, VERSION);
            put_u16(&mut out, STATUS_UNSUPPORTED_VERSION);
            put_u64(&mut out, 0);
            put_u64(&mut out, 0);
            put_u64(&mut out, 0);
            put_u32(&mut out, msg.len() as u32);
            out.extend_from_slice(msg.as_bytes());
            wr.write_all(&out).await.map_err(io)?;
            return Err(violation(msg));
        }
        if n_live > MAX_COUNT {
            return Err(violation("too many live transactions in GTM handshake"));
        }
        let mut live = vec![0u8; n_live as usize * 8];
        rd.read_exact(&mut live).await.map_err(io)?;
        let live: Vec<Timestamp> = live
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        self.oracle.register_existing(&live);
        for ts in &live {
            self.note_registered(*ts);
        }
        out.extend_from_slice(MAGIC);
        put_u16(&mut out, VERSION);
        put_u16(&mut out, STATUS_OK);
        put_u64(&mut out, self.oracle.horizon());
        put_u64(&mut out, self.oracle.peek_next());
        put_u64(&mut out, self.oracle.metadata_version());
        wr.write_all(&out).await.map_err(io)?;

        let mut body = Vec::with_capacity(4096);
        let mut starts: Vec<Timestamp> = Vec::new();
        loop {
            let mut len = [0u8; 4];
            match rd.read_exact(&mut len).await {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(io(e)),
            }
            let len = u32::from_le_bytes(len) as usize;
            if len > MAX_FRAME {
                return Err(violation(format!("GTM frame of {len} bytes is too large")));
            }
            body.resize(len, 0);
            rd.read_exact(&mut body).await.map_err(io)?;
            let mut r = Reader::new(&body);
            let kind = r.u8()?;
            if kind != KIND_BATCH {
                return Err(violation(format!("unknown GTM message kind {kind}")));
            }
            let seq = r.u64()?;
            let counts = BatchCounts {
                begin: r.u32()?,
                timestamp: r.u32()?,
                commit: r.u32()?,
                finish: r.u32()?,
                decide: r.u32()?,
                resolve: r.u32()?,
                forget: r.u32()?,
            };
            let listed = [
                counts.commit,
                counts.finish,
                counts.decide,
                counts.resolve,
                counts.forget,
            ];
            if counts.begin > MAX_COUNT
                || counts.timestamp > MAX_COUNT
                || listed.iter().any(|&n| n > MAX_COUNT)
            {
                return Err(violation("GTM batch too large"));
            }
            if r.remaining() != listed.iter().map(|&n| n as usize).sum::<usize>() * 8 {
                return Err(violation("GTM batch length does not match its counts"));
            }
            let requests = listed.iter().chain([&counts.begin, &counts.timestamp]);
            let requests: u64 = requests.map(|&n| u64::from(n)).sum();
            let metrics = crate::metrics::metrics();
            metrics.requests.inc_by(requests);
            metrics.batch_size.observe(requests as f64);
            out.clear();
            put_u32(&mut out, 0); // length, patched below
            let applied = match self.apply(&mut r, &counts, &mut starts) {
                // Decisions are answered only once durable; other batches are not held
                // back (the common one has none: its ticket is 0, no wait).
                Ok((firsts, ticket)) => self.oracle.wait_durable(ticket).await.map(|()| firsts),
                Err(e) => Err(e),
            };
            match applied {
                Ok([b, t, c]) => {
                    out.push(KIND_BATCH);
                    put_u64(&mut out, seq);
                    put_u64(&mut out, b);
                    put_u64(&mut out, t);
                    put_u64(&mut out, c);
                    put_u64(&mut out, self.oracle.horizon());
                    put_u64(&mut out, self.oracle.metadata_version());
                    for &v in self.decided.iter().chain(&self.resolved) {
                        put_u64(&mut out, v);
                    }
                }
                Err(e) => {
                    tracing::warn!("GTM batch failed: {e}");
                    out.push(KIND_ERROR);
                    put_u64(&mut out, seq);
                    out.extend_from_slice(e.code.as_bytes());
                    put_u32(&mut out, e.message.len() as u32);
                    out.extend_from_slice(e.message.as_bytes());
                }
            }
            let blen = (out.len() - 4) as u32;
            out[0..4].copy_from_slice(&blen.to_le_bytes());
            wr.write_all(&out).await.map_err(io)?;
        }
    }

    /// Applies one batch. Returns the first timestamps of the begin, timestamp and commit
    /// ranges (0 for an empty range) and the ticket of the decision records to wait for
    /// before answering; leaves the decide and resolve answers in `decided`/`resolved`.
    fn apply(
        &mut self,
        r: &mut Reader<'_>,
        counts: &BatchCounts,
        starts: &mut Vec<Timestamp>,
    ) -> PgResult<([u64; 3], Ticket)> {
        let &BatchCounts {
            begin: n_begin,
            timestamp: n_ts,
            commit: n_commit,
            finish: n_finish,
            ..
        } = counts;
        let mut res = [0u64; 3];
        if n_begin > 0 {
            let first = self.oracle.begin_n(n_begin as u64)?;
            for ts in first..first + n_begin as u64 {
                self.note_registered(ts);
            }
            res[0] = first;
        }
        if n_ts > 0 {
            res[1] = self.oracle.issue(n_ts as u64)?;
        }
        if n_commit > 0 {
            starts.clear();
            for _ in 0..n_commit {
                let ts = r.u64()?;
                // Only unregister what this connection registered: a stale commit from a
                // previous connection must not remove someone else's registration.
                if self.note_unregistered(ts) {
                    starts.push(ts);
                }
            }
            let first = self.oracle.issue(n_commit as u64)?;
            self.oracle.finish(starts);
            res[2] = first;
        }
        if n_finish > 0 {
            starts.clear();
            for _ in 0..n_finish {
                let ts = r.u64()?;
                if self.note_unregistered(ts) {
                    starts.push(ts);
                }
            }
            self.oracle.finish(starts);
        }
        let mut ticket = Ticket::default();
        self.decided.clear();
        for _ in 0..counts.decide {
            let ts = r.u64()?;
            // As for commits: only this connection's own registration is released.
            let held = self.note_unregistered(ts);
            let (decided, t) = self.oracle.decide_step(ts, held)?;
            self.decided.push(decided.unwrap_or(DECIDE_REFUSED));
            ticket = ticket.max(t);
        }
        self.resolved.clear();
        for _ in 0..counts.resolve {
            let (resolution, t) = self.oracle.resolve_step(r.u64()?)?;
            self.resolved.push(encode_resolution(resolution));
            ticket = ticket.max(t);
        }
        for _ in 0..counts.forget {
            self.oracle.forget(r.u64()?);
        }
        Ok((res, ticket))
    }
}

/// The request counts of a batch.
struct BatchCounts {
    begin: u32,
    timestamp: u32,
    commit: u32,
    finish: u32,
    decide: u32,
    resolve: u32,
    forget: u32,
}
