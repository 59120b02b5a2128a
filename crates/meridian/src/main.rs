//! `meridian`: one binary for every role.
//!
//! - `meridian start` runs the embedded server: GTM, coordinator and datanode in one
//!   process, talking through their in-process interfaces.
//! - `meridian gtm` runs the GTM alone, with the cluster's metadata service on the same
//!   address; `meridian start --gtm HOST:PORT` uses it.
//! - `meridian datanode --gtm HOST:PORT` runs a datanode alone, registered at the GTM,
//!   serving coordinators over the coordinator-datanode protocol.
//! - `meridian coordinator --gtm HOST:PORT` runs a coordinator over the datanodes
//!   registered at the GTM; any number of them share the cluster.
//! - `meridian playground` starts a GTM, datanodes and coordinators as processes of this
//!   binary: a local cluster in one command.

mod config;
mod playground;

use clap::{Parser, Subcommand};
use config::{parse_size, CoordinatorArgs, DatanodeArgs, HttpArgs, StartArgs};
use coordinator::{Coordinator, CoordinatorConfig};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

// glibc malloc/free was ~7 % of the server's samples at tpcb-like (profiled in round 8 of
// docs/performance.md's git history, replaced in round 9; docs/decisions/0013).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "meridian",
    version,
    about = "Meridian: a distributed PostgreSQL-compatible OLTP database"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the embedded server (GTM, coordinator and datanode in one process).
    Start(Box<StartArgs>),
    /// Run a datanode alone: MVCC storage and transactions for coordinators.
    Datanode(Box<DatanodeArgs>),
    /// Run a coordinator alone: PostgreSQL sessions over the datanodes registered at the
    /// GTM.
    Coordinator(Box<CoordinatorArgs>),
    /// Start a local cluster: a GTM, datanodes and coordinators as separate processes
    /// on free local ports, until Ctrl-C.
    Playground(playground::PlaygroundArgs),
    /// Run the global transaction manager (timestamp oracle) and the cluster's metadata
    /// service alone.
    Gtm {
        #[arg(long, default_value = "./meridian-gtm")]
        data_dir: PathBuf,
        #[arg(long, default_value = "127.0.0.1:6543")]
        listen: SocketAddr,
        #[command(flatten)]
        http: HttpArgs,
    },
}

/// Logs go to stderr, filtered by MERIDIAN_LOG (default `info`): plain text, coloured only
/// on a terminal, or one JSON object per event with MERIDIAN_LOG_FORMAT=json (inherited
/// by the processes a playground starts).
fn init_logging() {
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MERIDIAN_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr);
    match std::env::var("MERIDIAN_LOG_FORMAT").as_deref() {
        Ok("json") => builder.json().init(),
        _ => builder.with_ansi(std::io::stderr().is_terminal()).init(),
    }
}

fn main() {
    init_logging();
    let cli = Cli::parse();
    raise_open_file_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = runtime.block_on(async {
        match cli.command {
            Command::Start(args) => start(*args).await,
            Command::Datanode(args) => datanode(*args).await,
            Command::Coordinator(args) => coordinator(*args).await,
            Command::Playground(args) => playground::run(args).await,
            Command::Gtm {
                data_dir,
                listen,
                http,
            } => gtm_service(data_dir, listen, http.http_listen).await,
        }
    });
    if let Err(e) = result {
        eprintln!("meridian: {e}");
        std::process::exit(1);
    }
}

async fn start(args: StartArgs) -> Result<(), String> {
    let settings = args.resolve()?;
    let shutdown = ShutdownSignal::install();
    let http = bind_http("", settings.http_listen).await?;
    let config = CoordinatorConfig {
        listen: settings.listen,
        unix_socket_dir: settings.unix_socket_dir.clone(),
        data_dir: settings.data_dir.clone(),
        cache_size: parse_size(&settings.cache_size)?,
        query_memory: parse_size(&settings.query_memory)? as usize,
        txn_memory: parse_size(&settings.txn_memory)?,
        synchronous_commit: settings.synchronous_commit,
        gtm: settings.gtm.clone(),
        session_threads: settings.session_threads,
        busy_poll: std::time::Duration::from_micros(settings.busy_poll_us),
        datanode_messages: settings.datanode_link == config::DatanodeLink::Messages,
        cluster: None,
        access: args.access.config(),
    };
    serve(config, http, shutdown).await
}

async fn coordinator(args: CoordinatorArgs) -> Result<(), String> {
    let shutdown = ShutdownSignal::install();
    let http = bind_http(" coordinator", args.http.http_listen).await?;
    let config = CoordinatorConfig {
        listen: args.listen,
        unix_socket_dir: Some(args.unix_socket_dir).filter(|d| !d.as_os_str().is_empty()),
        data_dir: args.data_dir,
        // Storage settings belong to the datanodes.
        cache_size: 0,
        query_memory: parse_size(&args.query_memory)? as usize,
        txn_memory: 0,
        synchronous_commit: true,
        gtm: Some(args.gtm),
        session_threads: args
            .session_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1),
        busy_poll: std::time::Duration::from_micros(args.busy_poll_us),
        datanode_messages: false,
        cluster: Some(coordinator::ClusterMembership {
            form_with: args.datanodes,
        }),
        access: args.access.config(),
    };
    serve(config, http, shutdown).await
}

/// Starts a coordinator (and its web console on the HTTP port, if there is one), says
/// where it listens, and serves until a shutdown signal.
async fn serve(
    config: CoordinatorConfig,
    http: Option<observability::HttpEndpoint>,
    shutdown: ShutdownSignal,
) -> Result<(), String> {
    let data_dir = config.data_dir.clone();
    let coordinator = Coordinator::start(config).await.map_err(|e| e.message)?;
    if let Some(http) = http {
        http.spawn(Some(Arc::new(console::Console::start(
            coordinator.connector(),
        ))));
    }
    let addr = coordinator.local_addr().map_err(|e| e.to_string())?;
    let listening = match coordinator.unix_socket_path() {
        Some(path) => format!("{addr} and {}", path.display()),
        None => addr.to_string(),
    };
    tracing::info!(data_dir = %data_dir.display(), "listening on {listening}");
    println!("meridian: listening on {listening}; ready to accept connections");
    reload_on_sighup(coordinator.reloader());
    tokio::select! {
        _ = coordinator.serve() => {}
        _ = shutdown.recv() => tracing::info!("shutting down"),
    }
    Ok(())
}

async fn datanode(args: DatanodeArgs) -> Result<(), String> {
    let shutdown = ShutdownSignal::install();
    let mut options = datanode::DatanodeOptions::new(&args.data_dir);
    options.cache_size = parse_size(&args.cache_size)?;
    options.txn_memory = parse_size(&args.txn_memory)?;
    options.synchronous_commit = args.synchronous_commit()?;
    let gtm = gtm::GtmClient::connect(&args.gtm, gtm::ClientOptions::default())
        .await
        .map_err(|e| e.message)?;
    let datanode = datanode::Datanode::open(options).map_err(|e| e.message)?;
    if let Some(http) = bind_http(" datanode", args.http.http_listen).await? {
        http.spawn(None);
    }
    datanode.start_gc(gtm.clone(), std::time::Duration::from_secs(5));
    datanode.start_resolver(gtm.clone());
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("could not listen on {}: {e}", args.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let advertised = args.advertise.clone().unwrap_or_else(|| addr.to_string());
    let id = register_datanode(&args, &advertised).await?;
    tracing::info!(id, "datanode registered at the GTM as {advertised}");
    let service = std::sync::Arc::new(datanode_service::DatanodeService::new(datanode, gtm));
    tracing::info!(data_dir = %args.data_dir.display(), "datanode listening on {addr}");
    println!("meridian datanode: listening on {addr}; ready to accept connections");
    tokio::select! {
        r = service.serve(listener) => r.map_err(|e| e.to_string()),
        _ = shutdown.recv() => Ok(()),
    }
}

/// Registers the datanode at the GTM's metadata service under the id kept in its data
/// directory (`node_id`), or under a new one that it keeps from then on.
async fn register_datanode(args: &DatanodeArgs, advertised: &str) -> Result<u32, String> {
    let id_file = args.data_dir.join("node_id");
    let known = match std::fs::read_to_string(&id_file) {
        Ok(s) => Some(
            s.trim()
                .parse::<u32>()
                .map_err(|e| format!("{} is unreadable: {e}", id_file.display()))?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {}: {e}", id_file.display())),
    };
    let meta = meta::MetaClient::remote(&args.gtm);
    let id = meta::nodes::register_datanode(&meta, known, advertised)
        .await
        .map_err(|e| e.message)?;
    if known.is_none() {
        let temp = args.data_dir.join("node_id.tmp");
        std::fs::write(&temp, format!("{id}\n"))
            .and_then(|()| std::fs::File::open(&temp)?.sync_all())
            .and_then(|()| std::fs::rename(&temp, &id_file))
            .map_err(|e| format!("cannot write {}: {e}", id_file.display()))?;
    }
    Ok(id)
}

/// `meridian gtm`: the timestamp oracle, with the metadata service on the same address
/// (decision 0028); the service's versions ride on the oracle's answers.
async fn gtm_service(
    data_dir: PathBuf,
    listen: SocketAddr,
    http_listen: Option<SocketAddr>,
) -> Result<(), String> {
    let shutdown = ShutdownSignal::install();
    if let Some(http) = bind_http(" gtm", http_listen).await? {
        http.spawn(None);
    }
    let server = gtm::server::Server::bind(data_dir.clone(), listen, Default::default())
        .await
        .map_err(|e| e.message)?;
    let oracle = server.oracle().clone();
    let store = meta::MetaStore::open(&data_dir).map_err(|e| e.message)?;
    let service = std::sync::Arc::new(meta::MetaService::new(store, move |v| {
        oracle.publish_metadata_version(v)
    }));
    tokio::select! {
        r = server.serve_sharing(move |stream| service.serve(stream)) => r.map_err(|e| e.message),
        _ = shutdown.recv() => Ok(()),
    }
}

/// `--http-listen`: binds the HTTP port and says where, before the process says it is
/// ready (with port 0, the port bound); the caller starts serving it. `role` follows
/// "meridian" in the line. A coordinator's port also serves its web console at `/`.
async fn bind_http(
    role: &str,
    listen: Option<SocketAddr>,
) -> Result<Option<observability::HttpEndpoint>, String> {
    let Some(addr) = listen else {
        return Ok(None);
    };
    let endpoint = observability::HttpEndpoint::bind(addr).await?;
    let bound = endpoint.local_addr().map_err(|e| e.to_string())?;
    tracing::info!("metrics on http://{bound}/metrics");
    println!("meridian{role}: metrics on http://{bound}/metrics");
    Ok(Some(endpoint))
}

/// Each connection is a socket: lift the soft open-file limit to the hard limit so that
/// thousands of clients do not hit the common default of 1024.
/// SIGHUP reads the configuration files that may change while running (the access
/// rules), as PostgreSQL's reload does.
fn reload_on_sighup(reload: impl Fn() + Send + 'static) {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::hangup()) {
        Ok(mut hangup) => drop(tokio::spawn(async move {
            while hangup.recv().await.is_some() {
                reload();
            }
        })),
        Err(e) => tracing::warn!("no SIGHUP handler, the access rules cannot be reloaded: {e}"),
    }
}

fn raise_open_file_limit() {
    // SAFETY: getrlimit/setrlimit only read and write the struct passed to them.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                tracing::warn!("could not raise the open-file limit to {}", lim.rlim_max);
            }
        }
    }
}

/// SIGTERM or SIGINT. Acknowledged commits are already durable, so stopping is immediate.
/// The handlers are installed before the server announces that it is ready: a signal that
/// arrived in between would otherwise take its default action and kill the process
/// without the clean-up (the Unix socket file stays behind).
struct ShutdownSignal {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl ShutdownSignal {
    fn install() -> ShutdownSignal {
        use tokio::signal::unix::{signal, SignalKind};
        ShutdownSignal {
            term: signal(SignalKind::terminate()).expect("SIGTERM handler"),
            int: signal(SignalKind::interrupt()).expect("SIGINT handler"),
        }
    }

    async fn recv(mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}
