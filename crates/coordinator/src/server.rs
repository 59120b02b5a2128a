//! Listening socket, connection start-up (SSL/GSS refusal, cancel requests, startup
//! parameters) and the state shared by all sessions.

use crate::catalog::LiveCatalog;
use crate::executors::SessionExecutors;
use crate::session::{Session, SessionState};
use crate::settings::Settings;
use bytes::BytesMut;
use datanode::{Datanode, DatanodeOptions};
use gtm::GtmClient;
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use wire::backend;
use wire::{decode_startup, StartupPacket};

#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub cache_size: u64,
    pub synchronous_commit: bool,
    /// Address of a remote GTM; None runs the GTM in process.
    pub gtm: Option<String>,
    /// Threads that run sessions (see `executors`).
    pub session_threads: usize,
    /// How long a session thread polls for the next request before sleeping (zero: never).
    pub busy_poll: Duration,
}

/// State shared by every session of this coordinator.
pub struct Shared {
    pub datanode: Arc<Datanode>,
    pub gtm: GtmClient,
    pub catalog: LiveCatalog,
    cancels: Mutex<HashMap<i32, (i32, Arc<Notify>)>>,
    next_pid: AtomicI32,
}

pub struct Coordinator {
    shared: Arc<Shared>,
    listener: TcpListener,
    executors: SessionExecutors,
}

/// A per-connection secret for CancelRequest: unpredictable enough for a key that only
/// guards against accidental cancels from other clients.
fn cancel_secret(pid: i32) -> i32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i32(pid);
    h.finish() as i32
}

impl Coordinator {
    pub async fn start(config: CoordinatorConfig) -> PgResult<Coordinator> {
        let gtm = match &config.gtm {
            Some(addr) => GtmClient::connect(addr, gtm::ClientOptions::default()).await?,
            None => GtmClient::local(&config.data_dir.join("gtm"))?,
        };
        let mut dn_opts = DatanodeOptions::new(config.data_dir.join("datanode"));
        dn_opts.cache_size = config.cache_size;
        dn_opts.synchronous_commit = config.synchronous_commit;
        let datanode = Datanode::open(dn_opts)?;
        datanode.start_gc(gtm.clone(), Duration::from_secs(5));
        let catalog = LiveCatalog::load(datanode.clone())?;
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| PgError::io(&format!("could not listen on {}", config.listen), e))?;
        let shared = Arc::new(Shared { datanode, gtm, catalog, cancels: Mutex::new(HashMap::new()), next_pid: AtomicI32::new(std::process::id() as i32 * 1000 % 1_000_000_000 + 1) });
        let executors = SessionExecutors::start(config.session_threads, config.busy_poll)
            .map_err(|e| PgError::io("could not start session threads", e))?;
        Ok(Coordinator { shared, listener, executors })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accept connections until the process ends; each runs as a task on a session thread.
    pub async fn serve(self) {
        loop {
            match self.listener.accept().await {
                Ok((socket, peer)) => {
                    let _ = socket.set_nodelay(true);
                    let shared = self.shared.clone();
                    // A socket belongs to the runtime that registered it: hand the session
                    // thread the std socket to register there.
                    match socket.into_std() {
                        Ok(socket) => drop(self.executors.next().spawn(async move {
                            match TcpStream::from_std(socket) {
                                Ok(socket) => serve_connection(shared, socket, peer).await,
                                Err(e) => tracing::warn!(%peer, "could not register the connection: {e}"),
                            }
                        })),
                        Err(e) => tracing::warn!(%peer, "could not hand the connection over: {e}"),
                    }
                }
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
}

async fn serve_connection(shared: Arc<Shared>, socket: TcpStream, peer: SocketAddr) {
    if let Err(e) = handle_connection(shared, socket).await {
        tracing::debug!(%peer, "connection ended: {e}");
    }
}

async fn handle_connection(shared: Arc<Shared>, mut socket: TcpStream) -> PgResult<()> {
    let io_err = |e: std::io::Error| PgError::new(codes::CONNECTION_FAILURE, e.to_string());
    let mut buf = BytesMut::with_capacity(1024);
    let mut out = BytesMut::new();
    let params = loop {
        let packet = loop {
            match decode_startup(&mut buf) {
                Ok(Some(p)) => break p,
                Ok(None) => {
                    if socket.read_buf(&mut buf).await.map_err(io_err)? == 0 {
                        return Ok(());
                    }
                }
                Err(e) => return fatal(&mut socket, e.into_pg_error()).await,
            }
        };
        match packet {
            StartupPacket::SslRequest | StartupPacket::GssEncRequest => {
                out.clear();
                backend::ssl_refused(&mut out);
                socket.write_all(&out).await.map_err(io_err)?;
            }
            StartupPacket::Cancel { process_id, secret_key } => {
                let target = shared.cancels.lock().get(&process_id).cloned();
                if let Some((secret, notify)) = target {
                    if secret == secret_key {
                        notify.notify_waiters();
                    }
                }
                return Ok(());
            }
            StartupPacket::Startup { protocol_version, params } => {
                let minor = protocol_version & 0xffff;
                let unrecognized: Vec<String> = params.iter().filter(|(k, _)| k.starts_with("_pq_.")).map(|(k, _)| k.clone()).collect();
                if minor > 0 || !unrecognized.is_empty() {
                    out.clear();
                    backend::negotiate_protocol_version(&mut out, 0, &unrecognized);
                    socket.write_all(&out).await.map_err(io_err)?;
                }
                break params;
            }
        }
    };

    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let Some(user) = get("user") else {
        return fatal(&mut socket, PgError::fatal(codes::INVALID_AUTHORIZATION_SPECIFICATION, "no PostgreSQL user name specified in startup packet")).await;
    };
    let database = get("database").filter(|d| !d.is_empty()).unwrap_or_else(|| user.clone());
    if user != "postgres" {
        return fatal(&mut socket, PgError::fatal(codes::INVALID_AUTHORIZATION_SPECIFICATION, format!("role \"{user}\" does not exist"))).await;
    }
    if database != "postgres" {
        return fatal(&mut socket, PgError::fatal(codes::INVALID_CATALOG_NAME, format!("database \"{database}\" does not exist"))).await;
    }
    let mut settings = Settings::default();
    for (name, value) in &params {
        let result = match name.as_str() {
            "user" | "database" | "replication" => Ok(None),
            "options" => apply_options(&mut settings, value),
            _ if name.starts_with("_pq_.") => Ok(None),
            other => settings.set(other, Some(value), false),
        };
        if let Err(e) = result {
            return fatal(&mut socket, PgError { severity: pgerror::Severity::Fatal, ..e }).await;
        }
    }

    let pid = shared.next_pid.fetch_add(1, Ordering::Relaxed);
    let secret = cancel_secret(pid);
    let cancel = Arc::new(Notify::new());
    shared.cancels.lock().insert(pid, (secret, cancel.clone()));
    let state = SessionState { user, database, pid, settings: Mutex::new(settings), reports: Mutex::new(Vec::new()) };
    let mut session = Session::new(shared.clone(), socket, buf, state, cancel);
    let result = session.greet(secret).await;
    if result.is_ok() {
        session.run().await;
    }
    shared.cancels.lock().remove(&pid);
    result.map_err(io_err)
}

/// `options=-c name=value -c …` (PGOPTIONS).
fn apply_options(settings: &mut Settings, options: &str) -> PgResult<Option<(&'static str, String)>> {
    let mut words = options.split_whitespace();
    while let Some(w) = words.next() {
        let assignment = if w == "-c" { words.next().unwrap_or("") } else if let Some(rest) = w.strip_prefix("-c") { rest } else { w.trim_start_matches("--") };
        if let Some((name, value)) = assignment.split_once('=') {
            settings.set(&name.replace('-', "_"), Some(value), false)?;
        }
    }
    Ok(None)
}

async fn fatal(socket: &mut TcpStream, err: PgError) -> PgResult<()> {
    let mut out = BytesMut::new();
    backend::error_response(&mut out, &PgError { severity: pgerror::Severity::Fatal, ..err.clone() });
    let _ = socket.write_all(&out).await;
    Err(err)
}
