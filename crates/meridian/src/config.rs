//! `meridian start` settings: command-line flags over an optional TOML file over defaults.

use clap::Args;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct StartArgs {
    /// Data directory (created if missing). Default ./meridian-data.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Address to accept PostgreSQL connections on. Default 127.0.0.1:5433.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Directory for the Unix-domain socket `.s.PGSQL.<port>` (PostgreSQL's
    /// unix_socket_directories; clients connect with host=DIR). Empty: TCP only. Default /tmp.
    #[arg(long)]
    unix_socket_dir: Option<PathBuf>,
    /// Memory for cached data, like shared_buffers (e.g. 128MB, 1GB). Default 128MB.
    #[arg(long)]
    cache_size: Option<String>,
    /// Memory all running statements together may hold in sorts, hash tables and other
    /// operator state before a statement fails with 53200 (out of memory); operators
    /// past work_mem spill to temporary files first. Default 512MB.
    #[arg(long)]
    query_memory: Option<String>,
    /// Memory one transaction's uncommitted writes and row locks may take before they
    /// move to storage (write intents). Default 16MB.
    #[arg(long)]
    txn_memory: Option<String>,
    /// on (default): a commit returns once durable; off: PostgreSQL's asynchronous commit.
    #[arg(long)]
    synchronous_commit: Option<String>,
    /// Use a remote GTM (`meridian gtm`) at HOST:PORT instead of the in-process one.
    #[arg(long)]
    gtm: Option<String>,
    /// Threads that run sessions. Default: one per CPU.
    #[arg(long)]
    session_threads: Option<usize>,
    /// Microseconds a session thread keeps polling for the next request before it sleeps
    /// (0: never poll). Default 200.
    #[arg(long)]
    busy_poll_us: Option<u64>,
    /// How the coordinator calls the datanode in this process: `direct` (default), or
    /// `messages`: every call goes through the coordinator-datanode protocol's messages and
    /// the datanode's service side, as between processes, without a socket (for testing
    /// that path).
    #[arg(long, value_enum, default_value_t = DatanodeLink::Direct)]
    datanode_link: DatanodeLink,
    #[command(flatten)]
    pub access: AccessArgs,
    #[command(flatten)]
    pub http: HttpArgs,
    /// TOML file with any of: data_dir, listen, unix_socket_dir, cache_size, query_memory,
    /// txn_memory, synchronous_commit, gtm, session_threads, busy_poll_us, http_listen.
    #[arg(long)]
    config: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatanodeLink {
    Direct,
    Messages,
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    data_dir: Option<PathBuf>,
    listen: Option<SocketAddr>,
    unix_socket_dir: Option<PathBuf>,
    cache_size: Option<String>,
    query_memory: Option<String>,
    txn_memory: Option<String>,
    synchronous_commit: Option<bool>,
    gtm: Option<String>,
    session_threads: Option<usize>,
    busy_poll_us: Option<u64>,
    http_listen: Option<SocketAddr>,
}

#[derive(Debug)]
pub struct Settings {
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    /// None: no Unix-domain socket.
    pub unix_socket_dir: Option<PathBuf>,
    pub cache_size: String,
    pub query_memory: String,
    pub txn_memory: String,
    pub synchronous_commit: bool,
    pub gtm: Option<String>,
    pub session_threads: usize,
    pub busy_poll_us: u64,
    pub datanode_link: DatanodeLink,
    /// None: no HTTP port.
    pub http_listen: Option<SocketAddr>,
}

impl StartArgs {
    pub fn resolve(&self) -> Result<Settings, String> {
        let file: FileSettings = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?
            }
            None => FileSettings::default(),
        };
        let synchronous_commit = match &self.synchronous_commit {
            Some(v) => parse_bool(v)?,
            None => file.synchronous_commit.unwrap_or(true),
        };
        Ok(Settings {
            data_dir: self
                .data_dir
                .clone()
                .or(file.data_dir)
                .unwrap_or_else(|| PathBuf::from("./meridian-data")),
            listen: self
                .listen
                .or(file.listen)
                .unwrap_or_else(|| "127.0.0.1:5433".parse().unwrap()),
            unix_socket_dir: Some(
                self.unix_socket_dir
                    .clone()
                    .or(file.unix_socket_dir)
                    .unwrap_or_else(|| PathBuf::from("/tmp")),
            )
            .filter(|dir| !dir.as_os_str().is_empty()),
            cache_size: self
                .cache_size
                .clone()
                .or(file.cache_size)
                .unwrap_or_else(|| "128MB".into()),
            query_memory: self
                .query_memory
                .clone()
                .or(file.query_memory)
                .unwrap_or_else(|| "512MB".into()),
            txn_memory: self
                .txn_memory
                .clone()
                .or(file.txn_memory)
                .unwrap_or_else(|| "16MB".into()),
            synchronous_commit,
            gtm: self.gtm.clone().or(file.gtm),
            session_threads: self
                .session_threads
                .or(file.session_threads)
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
                .max(1),
            busy_poll_us: self.busy_poll_us.or(file.busy_poll_us).unwrap_or(200),
            datanode_link: self.datanode_link,
            http_listen: self.http.http_listen.or(file.http_listen),
        })
    }
}

fn parse_bool(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(format!("invalid boolean \"{v}\"")),
    }
}

/// "128MB", "1GB", "512kB", "1048576" → bytes (PostgreSQL's memory units, base 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("invalid size \"{s}\""))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" | "k" => 1 << 10,
        "mb" | "m" => 1 << 20,
        "gb" | "g" => 1 << 30,
        "tb" | "t" => 1 << 40,
        _ => {
            return Err(format!(
                "invalid size unit in \"{s}\" (use kB, MB, GB or TB)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size \"{s}\" is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("128MB").unwrap(), 128 << 20);
        assert_eq!(parse_size("1GB").unwrap(), 1 << 30);
        assert_eq!(parse_size("512kB").unwrap(), 512 << 10);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("12 parsecs").is_err());
    }
}

/// `meridian coordinator` settings.
#[derive(Args, Debug)]
pub struct CoordinatorArgs {
    /// Directory for temporary files of large sorts and joins (created if missing).
    #[arg(long, default_value = "./meridian-coordinator")]
    pub data_dir: PathBuf,
    /// Address to accept PostgreSQL connections on.
    #[arg(long, default_value = "127.0.0.1:5433")]
    pub listen: SocketAddr,
    /// Directory for the Unix-domain socket `.s.PGSQL.<port>`; empty: TCP only.
    #[arg(long, default_value = "/tmp")]
    pub unix_socket_dir: PathBuf,
    /// The GTM (`meridian gtm`) at HOST:PORT: timestamps, and the cluster's metadata
    /// (its datanodes, the catalog).
    #[arg(long)]
    pub gtm: String,
    /// Form the cluster, unless a coordinator already has: spread data over the datanodes
    /// registered at the GTM once N have. Without it, the coordinator waits for the
    /// cluster to be formed. Later coordinators use the datanodes the first chose.
    #[arg(long, value_name = "N")]
    pub datanodes: Option<usize>,
    /// Memory all running statements together may hold (as for `meridian start`).
    #[arg(long, default_value = "512MB")]
    pub query_memory: String,
    /// Threads that run sessions. Default: one per CPU.
    #[arg(long)]
    pub session_threads: Option<usize>,
    /// Microseconds a session thread polls for the next request before it sleeps.
    /// Default 0: a coordinator mostly waits for datanodes, and polling burns the CPU
    /// they need when they share its machine.
    #[arg(long, default_value_t = 0)]
    pub busy_poll_us: u64,
    #[command(flatten)]
    pub access: AccessArgs,
    #[command(flatten)]
    pub http: HttpArgs,
}

/// The HTTP port of every process kind (docs/decisions/0048).
#[derive(Args, Debug)]
pub struct HttpArgs {
    /// Serve GET /metrics (Prometheus text format) over HTTP on HOST:PORT; port 0 takes a
    /// free port, printed at start. Default: no HTTP port.
    #[arg(long, value_name = "HOST:PORT")]
    pub http_listen: Option<SocketAddr>,
}

/// Who may connect and how, for `meridian start` and `meridian coordinator`
/// (docs/decisions/0040; README "Authentication and TLS").
#[derive(Args, Debug)]
pub struct AccessArgs {
    /// PEM file of the server's certificate (chain): with --tls-key, clients may ask for
    /// TLS (sslmode=require / verify-full). Unix-socket connections never use TLS.
    #[arg(long, requires = "tls_key", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// PEM file of the server certificate's private key.
    #[arg(long, requires = "tls_cert", value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// Access rules in pg_hba.conf's format (local/host/hostssl/hostnossl; trust,
    /// reject, scram-sha-256, md5, password), reloaded on SIGHUP. Without it every
    /// connection is trusted.
    #[arg(long, value_name = "FILE")]
    pub hba_file: Option<PathBuf>,
    /// The password of the superuser `postgres` (until ALTER ROLE postgres sets one).
    #[arg(long, env = "MERIDIAN_SUPERUSER_PASSWORD", hide_env_values = true)]
    pub superuser_password: Option<String>,
    /// Connections open at once; the last 3 are kept for superusers.
    #[arg(long, default_value_t = coordinator::server::DEFAULT_MAX_CONNECTIONS, value_name = "N")]
    pub max_connections: usize,
}

impl AccessArgs {
    pub fn config(&self) -> coordinator::server::AccessConfig {
        coordinator::server::AccessConfig {
            tls: self.tls_cert.clone().zip(self.tls_key.clone()),
            hba_file: self.hba_file.clone(),
            superuser_password: self.superuser_password.clone(),
            max_connections: self.max_connections,
        }
    }
}

/// `meridian datanode` settings.
#[derive(Args, Debug)]
pub struct DatanodeArgs {
    /// Data directory (created if missing).
    #[arg(long, default_value = "./meridian-datanode")]
    pub data_dir: PathBuf,
    /// Address to accept coordinators on.
    #[arg(long, default_value = "127.0.0.1:6544")]
    pub listen: SocketAddr,
    /// The GTM (`meridian gtm`) at HOST:PORT, shared with the coordinators; the datanode
    /// registers there.
    #[arg(long)]
    pub gtm: String,
    /// The address coordinators reach this datanode at, registered at the GTM.
    /// Default: the address it listens on.
    #[arg(long)]
    pub advertise: Option<String>,
    /// Memory for cached data (e.g. 128MB, 1GB).
    #[arg(long, default_value = "128MB")]
    pub cache_size: String,
    /// Memory one transaction's uncommitted writes may take before they move to storage.
    #[arg(long, default_value = "16MB")]
    pub txn_memory: String,
    /// on: a commit returns once durable; off: asynchronous commit.
    #[arg(long, default_value = "on")]
    pub synchronous_commit: String,
    #[command(flatten)]
    pub http: HttpArgs,
}

impl DatanodeArgs {
    pub fn synchronous_commit(&self) -> Result<bool, String> {
        parse_bool(&self.synchronous_commit)
    }
}
