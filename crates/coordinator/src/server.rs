//! Listening socket, connection start-up (SSL/GSS refusal, cancel requests, startup
//! parameters) and the state shared by all sessions.

use crate::catalog::LiveCatalog;
use crate::executors::SessionExecutors;
use crate::nodes::ClusterView;
use crate::session::{Session, SessionState};
use crate::session_io::SessionStream;
use crate::settings::Settings;
use bytes::BytesMut;
use datanode_client::{DatanodeClient, DatanodeOptions};
use distribution::Datanodes;
use gtm::GtmClient;
use meta::{MetaClient, MetaService};
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::Notify;
use wire::backend;
use wire::{decode_startup, StartupPacket};

#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    pub listen: SocketAddr,
    /// Directory for the Unix-domain socket `.s.PGSQL.<port>` (PostgreSQL's
    /// `unix_socket_directories`); None: TCP only.
    pub unix_socket_dir: Option<PathBuf>,
    pub data_dir: PathBuf,
    pub cache_size: u64,
    /// What all running statements together may hold (`exec::memory`).
    pub query_memory: usize,
    /// A transaction's write set and row locks past this spill to storage.
    pub txn_memory: u64,
    pub synchronous_commit: bool,
    /// Address of a remote GTM; None runs the GTM in process.
    pub gtm: Option<String>,
    /// Threads that run sessions (see `executors`).
    pub session_threads: usize,
    /// How long a session thread polls for the next request before sleeping (zero: never).
    pub busy_poll: Duration,
    /// Whether calls to the datanode go through the protocol's messages and its service
    /// side instead of straight to it (`DatanodeClient::open_local`).
    pub datanode_messages: bool,
    /// Some: use the `meridian datanode` processes registered at the GTM (`gtm`) instead
    /// of a datanode in this process (which then is not opened).
    pub cluster: Option<ClusterMembership>,
}

/// A coordinator of a cluster of processes.
#[derive(Debug, Clone, Copy)]
pub struct ClusterMembership {
    /// Form the cluster, if no coordinator has, once this many datanodes registered;
    /// None: wait for another coordinator to form it.
    pub form_with: Option<usize>,
}

/// State shared by every session of this coordinator.
pub struct Shared {
    pub datanodes: Arc<Datanodes>,
    pub meta: MetaClient,
    pub cluster: ClusterView,
    pub gtm: GtmClient,
    pub catalog: LiveCatalog,
    /// This coordinator's reserved ranges of sequence values.
    pub sequences: crate::sequences::SequenceValues,
    /// Temporary files of operators past work_mem (`<data_dir>/pgsql_tmp`).
    pub spill: spill::SpillDir,
    cancels: Mutex<HashMap<i32, (i32, Arc<Notify>)>>,
    next_pid: AtomicI32,
}

pub struct Coordinator {
    shared: Arc<Shared>,
    listener: TcpListener,
    unix: Option<UnixSocket>,
    executors: SessionExecutors,
}

/// The Unix-domain listener and its socket file, removed when the coordinator ends.
struct UnixSocket {
    listener: UnixListener,
    path: PathBuf,
}

impl UnixSocket {
    /// Binds `dir/.s.PGSQL.<port>`, the name libpq derives from host=`dir` and the port.
    /// A file left by a server that died without removing it is replaced; a socket that
    /// still accepts connections belongs to a live server and is left alone.
    fn bind(dir: &Path, port: u16) -> std::io::Result<UnixSocket> {
        let path = dir.join(format!(".s.PGSQL.{port}"));
        if std::os::unix::net::UnixStream::connect(&path).is_ok() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                format!("{} is in use by another server", path.display()),
            ));
        }
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let listener = UnixListener::bind(&path)?;
        // PostgreSQL's default unix_socket_permissions: connecting needs write permission,
        // and access control is the server's business, not the file's.
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o777))?;
        Ok(UnixSocket { listener, path })
    }
}

impl Drop for UnixSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A connection's byte stream, movable between runtimes: an accepted socket is
/// registered with the runtime that accepted it, so it crosses to its session thread as
/// the std socket and is registered again there.
trait Transport: SessionStream + Sized + 'static {
    type Std: Send + 'static;
    fn into_std(self) -> std::io::Result<Self::Std>;
    fn from_std(std: Self::Std) -> std::io::Result<Self>;
}

impl Transport for TcpStream {
    type Std = std::net::TcpStream;
    fn into_std(self) -> std::io::Result<Self::Std> {
        TcpStream::into_std(self)
    }
    fn from_std(std: Self::Std) -> std::io::Result<Self> {
        TcpStream::from_std(std)
    }
}

impl Transport for UnixStream {
    type Std = std::os::unix::net::UnixStream;
    fn into_std(self) -> std::io::Result<Self::Std> {
        UnixStream::into_std(self)
    }
    fn from_std(std: Self::Std) -> std::io::Result<Self> {
        UnixStream::from_std(std)
    }
}

/// The GTM in this process, and the metadata service beside it (its versions published
/// to the oracle, as `meridian gtm` does).
fn embedded_gtm(dir: &Path) -> PgResult<(GtmClient, MetaClient)> {
    let oracle = Arc::new(gtm::Oracle::open(dir)?);
    let published = oracle.clone();
    let service = MetaService::new(meta::MetaStore::open(dir)?, move |v| {
        published.publish_metadata_version(v)
    });
    Ok((
        GtmClient::from_oracle(oracle),
        MetaClient::local(Arc::new(service)),
    ))
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
        let (gtm, meta) = match &config.gtm {
            Some(addr) => (
                GtmClient::connect(addr, gtm::ClientOptions::default()).await?,
                MetaClient::remote(addr),
            ),
            None => embedded_gtm(&config.data_dir.join("gtm"))?,
        };
        let mut dn_opts = DatanodeOptions::new(config.data_dir.join("datanode"));
        dn_opts.cache_size = config.cache_size;
        crate::exec::memory::set_pool_limit(config.query_memory);
        dn_opts.synchronous_commit = config.synchronous_commit;
        dn_opts.txn_memory = config.txn_memory;
        let members = match config.cluster {
            None => Vec::new(),
            Some(ClusterMembership { form_with }) => {
                meta::nodes::cluster_datanodes(&meta, form_with).await?
            }
        };
        let nodes = match config.cluster {
            None => vec![DatanodeClient::open_local(
                dn_opts,
                gtm.clone(),
                Duration::from_secs(5),
                config.datanode_messages,
            )?],
            Some(_) => members
                .iter()
                .map(|node| DatanodeClient::connect(&node.address))
                .collect(),
        };
        let datanodes = Arc::new(Datanodes::new(nodes));
        datanodes.start_deadlock_detector();
        // DDL of transactions that a crash left open is undone (or finished) before the
        // catalog is read, then looked for again in the background.
        crate::pending_ddl::resolve_all(&meta, &gtm, &datanodes).await?;
        crate::pending_ddl::start_resolver(meta.clone(), gtm.clone(), datanodes.clone());
        let catalog = LiveCatalog::load(meta.clone(), datanodes.clone()).await?;
        let spill = spill::SpillDir::open(config.data_dir.join("pgsql_tmp"))?;
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| PgError::io(&format!("could not listen on {}", config.listen), e))?;
        let unix = match &config.unix_socket_dir {
            Some(dir) => {
                let port = listener
                    .local_addr()
                    .map_err(|e| PgError::io("could not read the listening address", e))?
                    .port();
                Some(UnixSocket::bind(dir, port).map_err(|e| {
                    PgError::io(
                        &format!("could not create a Unix-domain socket in {}", dir.display()),
                        e,
                    )
                })?)
            }
            None => None,
        };
        let own_address = listener
            .local_addr()
            .map_err(|e| PgError::io("could not read the listening address", e))?
            .to_string();
        if config.cluster.is_some() {
            meta::nodes::register_coordinator(&meta, &own_address).await?;
        }
        let cluster = ClusterView {
            gtm_address: config.gtm.clone(),
            gtm: gtm.clone(),
            datanodes: datanodes.clone(),
            members,
            own_address,
        };
        let sequences = crate::sequences::SequenceValues::start(meta.clone())?;
        let shared = Arc::new(Shared {
            datanodes,
            meta,
            cluster,
            gtm,
            catalog,
            sequences,
            spill,
            cancels: Mutex::new(HashMap::new()),
            next_pid: AtomicI32::new(std::process::id() as i32 * 1000 % 1_000_000_000 + 1),
        });
        let executors = SessionExecutors::start(config.session_threads, config.busy_poll)
            .map_err(|e| PgError::io("could not start session threads", e))?;
        Ok(Coordinator {
            shared,
            listener,
            unix,
            executors,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The Unix-domain socket's path, if there is one.
    pub fn unix_socket_path(&self) -> Option<&Path> {
        self.unix.as_ref().map(|u| u.path.as_path())
    }

    /// Accept connections until the process ends; each runs as a task on a session thread.
    pub async fn serve(self) {
        let tcp = async {
            loop {
                match self.listener.accept().await {
                    Ok((socket, peer)) => {
                        let _ = socket.set_nodelay(true);
                        self.spawn_session(socket, peer.to_string())
                    }
                    Err(e) => accept_failed(e).await,
                }
            }
        };
        let unix = async {
            let Some(unix) = &self.unix else {
                return std::future::pending().await;
            };
            loop {
                match unix.listener.accept().await {
                    Ok((socket, _)) => self.spawn_session(socket, "[local]".to_string()),
                    Err(e) => accept_failed(e).await,
                }
            }
        };
        tokio::join!(tcp, unix);
    }

    fn spawn_session<T: Transport>(&self, socket: T, peer: String) {
        let shared = self.shared.clone();
        match socket.into_std() {
            Ok(socket) => drop(self.executors.next().spawn(async move {
                match T::from_std(socket) {
                    Ok(socket) => {
                        if let Err(e) = handle_connection(shared, socket).await {
                            tracing::debug!(%peer, "connection ended: {e}");
                        }
                    }
                    Err(e) => tracing::warn!(%peer, "could not register the connection: {e}"),
                }
            })),
            Err(e) => tracing::warn!(%peer, "could not hand the connection over: {e}"),
        }
    }
}

async fn accept_failed(e: std::io::Error) {
    // Out of file descriptors, most likely: back off instead of spinning.
    tracing::warn!("accept failed: {e}");
    tokio::time::sleep(Duration::from_millis(50)).await;
}

async fn handle_connection<T: Transport>(shared: Arc<Shared>, mut socket: T) -> PgResult<()> {
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
            StartupPacket::Cancel {
                process_id,
                secret_key,
            } => {
                let target = shared.cancels.lock().get(&process_id).cloned();
                if let Some((secret, notify)) = target {
                    if secret == secret_key {
                        notify.notify_waiters();
                    }
                }
                return Ok(());
            }
            StartupPacket::Startup {
                protocol_version,
                params,
            } => {
                let minor = protocol_version & 0xffff;
                let unrecognized: Vec<String> = params
                    .iter()
                    .filter(|(k, _)| k.starts_with("_pq_."))
                    .map(|(k, _)| k.clone())
                    .collect();
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
        return fatal(
            &mut socket,
            PgError::fatal(
                codes::INVALID_AUTHORIZATION_SPECIFICATION,
                "no PostgreSQL user name specified in startup packet",
            ),
        )
        .await;
    };
    let database = get("database")
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| user.clone());
    if user != "postgres" {
        return fatal(
            &mut socket,
            PgError::fatal(
                codes::INVALID_AUTHORIZATION_SPECIFICATION,
                format!("role \"{user}\" does not exist"),
            ),
        )
        .await;
    }
    if database != "postgres" {
        return fatal(
            &mut socket,
            PgError::fatal(
                codes::INVALID_CATALOG_NAME,
                format!("database \"{database}\" does not exist"),
            ),
        )
        .await;
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
            return fatal(
                &mut socket,
                PgError {
                    severity: pgerror::Severity::Fatal,
                    ..e
                },
            )
            .await;
        }
    }

    let pid = shared.next_pid.fetch_add(1, Ordering::Relaxed);
    let secret = cancel_secret(pid);
    let cancel = Arc::new(Notify::new());
    shared.cancels.lock().insert(pid, (secret, cancel.clone()));
    let state = SessionState {
        user,
        database,
        pid,
        settings: Mutex::new(settings),
        reports: Mutex::new(Vec::new()),
        sequences: Mutex::default(),
    };
    let mut session = Session::new(shared.clone(), socket, buf, state, cancel);
    let result = session.greet(secret).await;
    if result.is_ok() {
        session.run().await;
    }
    shared.cancels.lock().remove(&pid);
    result.map_err(io_err)
}

/// `options=-c name=value -c …` (PGOPTIONS).
fn apply_options(
    settings: &mut Settings,
    options: &str,
) -> PgResult<Option<(&'static str, String)>> {
    let mut words = options.split_whitespace();
    while let Some(w) = words.next() {
        let assignment = if w == "-c" {
            words.next().unwrap_or("")
        } else if let Some(rest) = w.strip_prefix("-c") {
            rest
        } else {
            w.trim_start_matches("--")
        };
        if let Some((name, value)) = assignment.split_once('=') {
            settings.set(&name.replace('-', "_"), Some(value), false)?;
        }
    }
    Ok(None)
}

async fn fatal<T: Transport>(socket: &mut T, err: PgError) -> PgResult<()> {
    let mut out = BytesMut::new();
    backend::error_response(
        &mut out,
        &PgError {
            severity: pgerror::Severity::Fatal,
            ..err.clone()
        },
    );
    let _ = socket.write_all(&out).await;
    Err(err)
}
