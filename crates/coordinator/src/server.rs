//! Listening socket, connection start-up (SSLRequest answered with a TLS handshake
//! when the server has a certificate, GSSENCRequest refused, cancel requests, startup
//! parameters, authentication and connection limits through `access`) and the state
//! shared by all sessions.

use crate::access::{AccessRules, ConnectionCounts, Peer};
use crate::activity::{SessionActivity, SessionIdentity};
use crate::catalog::LiveCatalog;
use crate::executors::SessionExecutors;
use crate::nodes::ClusterView;
use crate::session::{Session, SessionState};
use crate::session_io::SessionStream;
use crate::settings::Settings;
use crate::tls::TlsAcceptor;
use bytes::BytesMut;
use datanode_client::{DatanodeClient, DatanodeOptions};
use distribution::Datanodes;
use gtm::GtmClient;
use meta::{MetaClient, MetaService};
use parking_lot::Mutex;
use pgerror::{codes, PgError, PgResult};
use sql::role::{RoleDef, BOOTSTRAP_SUPERUSER, BOOTSTRAP_SUPERUSER_OID};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
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
    pub access: AccessConfig,
}

/// Who may connect, and how (decision 0040).
#[derive(Debug, Clone)]
pub struct AccessConfig {
    /// PEM files of the server's certificate (chain) and key: with them an SSLRequest
    /// on TCP is answered with a TLS handshake; without, refused.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// pg_hba.conf-format rules; None: everyone is trusted.
    pub hba_file: Option<PathBuf>,
    /// The bootstrap superuser `postgres`'s password (until ALTER ROLE stores one).
    pub superuser_password: Option<String>,
    /// Connections open at once, the last `SUPERUSER_RESERVED_CONNECTIONS` of them
    /// for superusers.
    pub max_connections: usize,
}

impl Default for AccessConfig {
    /// Zero setup: no TLS, everyone trusted, no password.
    fn default() -> Self {
        AccessConfig {
            tls: None,
            hba_file: None,
            superuser_password: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Far above PostgreSQL's 100: Meridian serves thousands of connections per
/// coordinator (decision 0015).
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

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
    /// `postgres`, the superuser that exists before any role is created.
    pub bootstrap_role: Arc<RoleDef>,
    pub access_rules: AccessRules,
    tls: Option<TlsAcceptor>,
    max_connections: usize,
    connections: ConnectionCounts,
    /// Failed password logins, to slow down guessing.
    pub failed_logins: crate::access::FailedLogins,
    /// Every running session (pg_stat_activity, cancel and terminate).
    pub sessions: crate::activity::SessionRegistry,
    /// pg_stat_statements of this coordinator's sessions.
    pub statement_stats: crate::statement_stats::StatementStats,
    /// pg_stat_all_tables, pg_stat_all_indexes and pg_stat_database's counts.
    pub cumulative_stats: crate::cumulative_stats::CumulativeStats,
    next_pid: AtomicI32,
}

pub struct Coordinator {
    shared: Arc<Shared>,
    listener: TcpListener,
    unix: Option<UnixSocket>,
    executors: Arc<SessionExecutors>,
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
    /// Runs the connection, from its first packet to its end.
    fn handle(
        shared: Arc<Shared>,
        socket: Self,
        peer: Peer,
    ) -> impl std::future::Future<Output = PgResult<()>> + Send;
}

impl Transport for TcpStream {
    type Std = std::net::TcpStream;
    fn into_std(self) -> std::io::Result<Self::Std> {
        TcpStream::into_std(self)
    }
    fn from_std(std: Self::Std) -> std::io::Result<Self> {
        TcpStream::from_std(std)
    }
    fn handle(
        shared: Arc<Shared>,
        socket: Self,
        peer: Peer,
    ) -> impl std::future::Future<Output = PgResult<()>> + Send {
        handle_tcp(shared, socket, peer)
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
    fn handle(
        shared: Arc<Shared>,
        socket: Self,
        peer: Peer,
    ) -> impl std::future::Future<Output = PgResult<()>> + Send {
        handle_unix(shared, socket, peer)
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
        // Registered now, so that a scrape shows them before the first connection.
        crate::metrics::metrics();
        let access_rules = AccessRules::load(config.access.hba_file.clone())?;
        let tls = match &config.access.tls {
            Some((cert, key)) => Some(crate::tls::acceptor(cert, key)?),
            None => None,
        };
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
            bootstrap_role: Arc::new(bootstrap_role(&config.access)),
            access_rules,
            tls,
            max_connections: config.access.max_connections,
            connections: ConnectionCounts::default(),
            failed_logins: Default::default(),
            sessions: Default::default(),
            statement_stats: Default::default(),
            cumulative_stats: Default::default(),
            next_pid: AtomicI32::new(std::process::id() as i32 * 1000 % 1_000_000_000 + 1),
        });
        let executors = SessionExecutors::start(config.session_threads, config.busy_poll)
            .map_err(|e| PgError::io("could not start session threads", e))?;
        executors.spawn_on_each(crate::cumulative_stats::flush_periodically);
        let executors = Arc::new(executors);
        Ok(Coordinator {
            shared,
            listener,
            unix,
            executors,
        })
    }

    /// A handle that opens connections to this coordinator from inside the process.
    pub fn connector(&self) -> Connector {
        Connector {
            shared: self.shared.clone(),
            executors: self.executors.clone(),
        }
    }

    /// Reads the access rules file again (SIGHUP).
    pub fn reloader(&self) -> impl Fn() + Send + 'static {
        let shared = self.shared.clone();
        move || shared.access_rules.reload()
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
                        self.spawn_session(
                            socket,
                            Peer {
                                address: Some(peer.ip()),
                                port: peer.port(),
                            },
                        )
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
                    Ok((socket, _)) => self.spawn_session(
                        socket,
                        Peer {
                            address: None,
                            port: 0,
                        },
                    ),
                    Err(e) => accept_failed(e).await,
                }
            }
        };
        tokio::join!(tcp, unix);
    }

    fn spawn_session<T: Transport>(&self, socket: T, peer: Peer) {
        spawn_session(&self.shared, &self.executors, socket, peer)
    }
}

/// Opens connections to a coordinator from inside its process (the web console's).
#[derive(Clone)]
pub struct Connector {
    shared: Arc<Shared>,
    executors: Arc<SessionExecutors>,
}

impl Connector {
    /// A connection that the coordinator treats as one from `peer` over TCP without TLS
    /// (its access rules, authentication and connection limits), over a socket pair: the
    /// returned end is the client's.
    pub fn connect_as(&self, peer: SocketAddr) -> std::io::Result<UnixStream> {
        let (client, server) = UnixStream::pair()?;
        let peer = Peer {
            address: Some(peer.ip()),
            port: peer.port(),
        };
        spawn_session(&self.shared, &self.executors, server, peer);
        Ok(client)
    }
}

fn spawn_session<T: Transport>(
    shared: &Arc<Shared>,
    executors: &SessionExecutors,
    socket: T,
    peer: Peer,
) {
    let shared = shared.clone();
    let open = crate::metrics::OpenConnection::accepted();
    match socket.into_std() {
        Ok(socket) => drop(executors.next().spawn(async move {
            let _open = open;
            match T::from_std(socket) {
                Ok(socket) => {
                    if let Err(e) = T::handle(shared, socket, peer.clone()).await {
                        tracing::debug!(?peer, "connection ended: {e}");
                    }
                }
                Err(e) => tracing::warn!(?peer, "could not register the connection: {e}"),
            }
        })),
        Err(e) => tracing::warn!(?peer, "could not hand the connection over: {e}"),
    }
}

async fn accept_failed(e: std::io::Error) {
    // Out of file descriptors, most likely: back off instead of spinning.
    tracing::warn!("accept failed: {e}");
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// PostgreSQL's authentication_timeout: a client has this long from connecting to
/// being authenticated (each step), so half-open connections do not hold slots.
const AUTHENTICATION_TIMEOUT: Duration = Duration::from_secs(60);

/// What a client's first packets asked for.
enum Opening {
    Startup(Vec<(String, String)>),
    /// An SSLRequest, answered `S`: the TLS handshake comes next.
    Tls,
    /// A cancel request (handled), or the client left.
    Done,
}

/// Reads packets until the startup packet: SSLRequest is answered `S` if `tls` (and
/// the caller does the handshake), else `N`; GSSENCRequest `N`; a CancelRequest is
/// handled.
async fn opening<S: SessionStream>(
    shared: &Shared,
    socket: &mut S,
    buf: &mut BytesMut,
    tls: bool,
) -> PgResult<Opening> {
    let io_err = |e: std::io::Error| PgError::new(codes::CONNECTION_FAILURE, e.to_string());
    let mut out = BytesMut::new();
    loop {
        let packet = loop {
            match decode_startup(buf) {
                Ok(Some(p)) => break p,
                Ok(None) => {
                    if socket.read_buf(buf).await.map_err(io_err)? == 0 {
                        return Ok(Opening::Done);
                    }
                }
                Err(e) => {
                    return fatal(socket, e.into_pg_error())
                        .await
                        .map(|()| Opening::Done)
                }
            }
        };
        match packet {
            StartupPacket::SslRequest if tls => {
                socket.write_all(b"S").await.map_err(io_err)?;
                return Ok(Opening::Tls);
            }
            StartupPacket::SslRequest | StartupPacket::GssEncRequest => {
                out.clear();
                backend::ssl_refused(&mut out);
                socket.write_all(&out).await.map_err(io_err)?;
            }
            StartupPacket::Cancel {
                process_id,
                secret_key,
            } => {
                shared.sessions.cancel_request(process_id, secret_key);
                return Ok(Opening::Done);
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
                return Ok(Opening::Startup(params));
            }
        }
    }
}

/// The opening of a TCP connection, which may turn into TLS.
///
/// What follows the opening is boxed: the spawned task then holds only this opening's
/// state, not the session's and the TLS connection's (tens of kilobytes, copied each
/// time the task's future moves).
async fn handle_tcp(shared: Arc<Shared>, mut socket: TcpStream, peer: Peer) -> PgResult<()> {
    let mut buf = BytesMut::with_capacity(1024);
    let tls = shared.tls.clone();
    match timed(opening(&shared, &mut socket, &mut buf, tls.is_some())).await? {
        Opening::Startup(params) => {
            Box::pin(start_session(shared, socket, buf, params, peer, false)).await
        }
        Opening::Done => Ok(()),
        Opening::Tls => {
            // Bytes sent after the SSLRequest, before the handshake, were not encrypted:
            // a man in the middle's (CVE-2021-23214).
            if !buf.is_empty() {
                let e = PgError::fatal(
                    codes::PROTOCOL_VIOLATION,
                    "received unencrypted data after SSL request",
                )
                .with_detail(
                    "This could be either a client-software bug or evidence of an attempted man-in-the-middle attack.",
                );
                return fatal(&mut socket, e).await;
            }
            match tls {
                Some(acceptor) => Box::pin(handle_tls(shared, socket, peer, acceptor)).await,
                None => Ok(()),
            }
        }
    }
}

/// The TLS handshake, then the connection's opening and session over TLS.
async fn handle_tls(
    shared: Arc<Shared>,
    socket: TcpStream,
    peer: Peer,
    acceptor: TlsAcceptor,
) -> PgResult<()> {
    let mut stream = timed(async {
        acceptor.accept(socket).await.map_err(|e| {
            PgError::new(
                codes::PROTOCOL_VIOLATION,
                format!("could not accept SSL connection: {e}"),
            )
        })
    })
    .await?;
    let mut buf = BytesMut::with_capacity(1024);
    match timed(opening(&shared, &mut stream, &mut buf, false)).await? {
        Opening::Startup(params) => start_session(shared, stream, buf, params, peer, true).await,
        Opening::Tls | Opening::Done => Ok(()),
    }
}

async fn handle_unix(shared: Arc<Shared>, mut socket: UnixStream, peer: Peer) -> PgResult<()> {
    let mut buf = BytesMut::with_capacity(1024);
    match timed(opening(&shared, &mut socket, &mut buf, false)).await? {
        Opening::Startup(params) => {
            Box::pin(start_session(shared, socket, buf, params, peer, false)).await
        }
        Opening::Tls | Opening::Done => Ok(()),
    }
}

/// `step` within `AUTHENTICATION_TIMEOUT`.
async fn timed<T>(step: impl std::future::Future<Output = PgResult<T>>) -> PgResult<T> {
    tokio::time::timeout(AUTHENTICATION_TIMEOUT, step)
        .await
        .unwrap_or_else(|_| {
            Err(PgError::fatal(
                codes::CONNECTION_FAILURE,
                "canceling authentication due to timeout",
            ))
        })
}

/// The startup packet read: the connection counted, the client authenticated, its
/// settings applied, and its session run.
async fn start_session<S: SessionStream + 'static>(
    shared: Arc<Shared>,
    mut socket: S,
    mut buf: BytesMut,
    params: Vec<(String, String)>,
    peer: Peer,
    ssl: bool,
) -> PgResult<()> {
    let io_err = |e: std::io::Error| PgError::new(codes::CONNECTION_FAILURE, e.to_string());
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
    // Counted before authenticating, so a flood of connections is refused here, cheaply.
    let mut slot = match shared.connections.open(shared.max_connections) {
        Ok(slot) => slot,
        Err(e) => return fatal(&mut socket, e).await,
    };
    let authenticated = timed(crate::access::authenticate(
        &shared,
        &mut socket,
        &mut buf,
        &peer,
        ssl,
        &user,
        &database,
    ))
    .await;
    let role = match authenticated {
        Ok(Some(role)) => role,
        Ok(None) => return Ok(()),
        Err(e) => return fatal(&mut socket, e).await,
    };
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
    if let Err(e) = slot.assign(&role, shared.max_connections) {
        return fatal(&mut socket, e).await;
    }
    let mut settings = Settings::default();
    settings.fix_for_session(&role.name, role.superuser, shared.max_connections);
    // ALTER ROLE … SET, under what the client asks for (as PostgreSQL's PGC_S_USER).
    for (name, value) in &role.config {
        if let Err(e) = settings.set(name, Some(value), false) {
            tracing::warn!(role = %role.name, "role setting {name} not applied: {}", e.message);
        }
    }
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
    let identity = SessionIdentity {
        pid,
        secret,
        user: role.name.clone(),
        database: database.clone(),
        client: peer.address.map(|a| SocketAddr::new(a, peer.port)),
        fd: socket.raw_fd(),
    };
    let application_name = settings.get("application_name").unwrap_or_default();
    let registered = shared
        .sessions
        .register(SessionActivity::new(identity, application_name));
    let state = SessionState {
        user: role.name.clone(),
        current_user: role.name.clone(),
        database,
        pid,
        settings: Mutex::new(settings),
        reports: Mutex::new(Vec::new()),
        notices: Mutex::new(Vec::new()),
        sequences: Mutex::default(),
        activity: registered.activity.clone(),
    };
    let mut session = Session::new(shared.clone(), socket, buf, state);
    let result = session.greet(secret).await;
    if result.is_ok() {
        session.run().await;
    }
    // Out of the registry before the socket closes (`activity::Registered`).
    drop(registered);
    drop(session);
    drop(slot);
    result.map_err(io_err)
}

/// The bootstrap superuser, with the configured password hashed as any role's.
fn bootstrap_role(access: &AccessConfig) -> RoleDef {
    RoleDef {
        superuser: true,
        login: true,
        password: access.superuser_password.as_deref().map(|p| {
            auth::password::encrypt(
                p,
                BOOTSTRAP_SUPERUSER,
                auth::password::Encryption::ScramSha256,
            )
        }),
        ..RoleDef::new(BOOTSTRAP_SUPERUSER_OID, BOOTSTRAP_SUPERUSER)
    }
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

async fn fatal<S: SessionStream>(socket: &mut S, err: PgError) -> PgResult<()> {
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
