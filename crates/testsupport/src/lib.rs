//! Test support: start a real `meridian` server for integration tests.
//!
//! ```no_run
//! let server = testsupport::TestServer::start();
//! // connect any PostgreSQL client to server.connection_string()
//! ```
//!
//! * The binary is `$MERIDIAN_BIN` if set, else `<workspace>/target/release/meridian`.
//!   When neither exists, [`TestServer::start`] panics with a clear message: a test that
//!   needs the server FAILS, it never skips.
//! * The server runs `meridian start --data-dir <tmp>/data --listen 127.0.0.1:<free port>
//!   --unix-socket-dir <tmp>`;
//!   start-up waits for the line `ready to accept connections` (timeout
//!   `$MERIDIAN_START_TIMEOUT` seconds, default 120).
//! * Its stdout/stderr go to `<tmp>/server.log`; [`TestServer::log_tail`] returns the end.
//! * `MERIDIAN_TEST_ADDR=host:port` makes every `TestServer` use that already running
//!   server instead (e.g. a real PostgreSQL, to validate a test); kill9/restart then panic.
//! * Dropping the handle sends SIGTERM (SIGKILL after 30 s) and removes the temporary
//!   directory (kept if `MERIDIAN_KEEP_TEST_DIRS` is set).

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The line the server prints once it accepts connections.
pub const READY_LINE: &str = "ready to accept connections";

/// Options for [`TestServer::start_with`].
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// `--cache-size`, e.g. `"32MB"`.
    pub cache_size: Option<String>,
    /// `--config FILE`.
    pub config: Option<PathBuf>,
    /// `--synchronous-commit on|off`.
    pub synchronous_commit: Option<bool>,
    /// More flags, e.g. `--hba-file FILE`.
    pub args: Vec<String>,
}

/// A running Meridian server on a free loopback port in a temporary data directory.
pub struct TestServer {
    pub host: String,
    pub port: u16,
    pub data_dir: PathBuf,
    pub log_path: PathBuf,
    base_dir: Option<PathBuf>,
    child: Option<Child>,
    bin: Option<PathBuf>,
    opts: ServerOptions,
}

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("crates/testsupport has a workspace root")
        .to_path_buf()
}

/// Path of the server binary: `$MERIDIAN_BIN` or `<workspace>/target/release/meridian`.
pub fn meridian_bin() -> PathBuf {
    match std::env::var_os("MERIDIAN_BIN") {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            if p.is_absolute() {
                p
            } else {
                workspace_root().join(p)
            }
        }
        _ => workspace_root()
            .join("target")
            .join("release")
            .join("meridian"),
    }
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}

fn unique_dir() -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    std::env::temp_dir().join(format!(
        "meridian-testsupport-{}-{}-{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

fn start_timeout() -> Duration {
    let secs = std::env::var("MERIDIAN_START_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(120.0);
    Duration::from_secs_f64(secs)
}

impl TestServer {
    /// Start a server with default options; panics (test failure) if it cannot.
    pub fn start() -> TestServer {
        Self::start_with(ServerOptions::default())
    }

    /// Start a server with options; panics (test failure) if it cannot.
    pub fn start_with(opts: ServerOptions) -> TestServer {
        if let Ok(addr) = std::env::var("MERIDIAN_TEST_ADDR") {
            if !addr.is_empty() {
                let (host, port) = addr
                    .rsplit_once(':')
                    .unwrap_or_else(|| panic!("MERIDIAN_TEST_ADDR={addr:?}: expected host:port"));
                return TestServer {
                    host: host.to_string(),
                    port: port.parse().expect("MERIDIAN_TEST_ADDR port"),
                    data_dir: PathBuf::new(),
                    log_path: PathBuf::new(),
                    base_dir: None,
                    child: None,
                    bin: None,
                    opts,
                };
            }
        }
        let bin = meridian_bin();
        if !bin.exists() {
            panic!(
                "Meridian server binary not found at {}.\n\
                 Build it first with `cargo build --release -p meridian` \
                 (scripts/test.sh does), or set MERIDIAN_BIN to the binary.",
                bin.display()
            );
        }
        let base = unique_dir();
        let data_dir = base.join("data");
        fs::create_dir_all(&data_dir).expect("create temporary data directory");
        let mut server = TestServer {
            host: "127.0.0.1".to_string(),
            port: free_port(),
            data_dir,
            log_path: base.join("server.log"),
            base_dir: Some(base),
            child: None,
            bin: Some(bin),
            opts,
        };
        server.spawn();
        server
    }

    /// Whether this handle points at an external server (`MERIDIAN_TEST_ADDR`).
    pub fn is_external(&self) -> bool {
        self.bin.is_none()
    }

    /// libpq-style connection string (tokio-postgres, psql).
    pub fn connection_string(&self) -> String {
        format!(
            "host={} port={} user=postgres dbname=postgres connect_timeout=10",
            self.host, self.port
        )
    }

    /// `postgresql://` URL.
    pub fn url(&self) -> String {
        format!("postgresql://postgres@{}:{}/postgres", self.host, self.port)
    }

    /// Process id of the server (None for an external server).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(self.bin.as_ref().expect("not an external server"));
        cmd.arg("start")
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--listen")
            .arg(format!("{}:{}", self.host, self.port));
        // The Unix-domain socket goes to the test's own directory, not /tmp.
        if let Some(base) = &self.base_dir {
            cmd.arg("--unix-socket-dir").arg(base);
        }
        if let Some(c) = &self.opts.cache_size {
            cmd.arg("--cache-size").arg(c);
        }
        if let Some(c) = &self.opts.config {
            cmd.arg("--config").arg(c);
        }
        if let Some(s) = self.opts.synchronous_commit {
            cmd.arg("--synchronous-commit")
                .arg(if s { "on" } else { "off" });
        }
        cmd.args(&self.opts.args);
        cmd
    }

    fn spawn(&mut self) {
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .expect("open server log");
        let mut cmd = self.command();
        let _ = writeln!(log, "===== starting: {:?}", cmd);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", self.bin));
        let (tx, rx) = mpsc::channel::<()>();
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let tx = tx.clone();
            let mut log = log.try_clone().expect("clone log handle");
            thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                let mut line = Vec::new();
                loop {
                    line.clear();
                    match reader.read_until(b'\n', &mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let _ = log.write_all(&line);
                            if String::from_utf8_lossy(&line).contains(READY_LINE) {
                                let _ = tx.send(());
                            }
                        }
                    }
                }
            });
        }
        drop(tx);
        self.child = Some(child);
        let deadline = Instant::now() + start_timeout();
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(()) => break,
                Err(_) => {
                    if let Some(status) = self.child.as_mut().unwrap().try_wait().ok().flatten() {
                        thread::sleep(Duration::from_millis(200));
                        panic!(
                            "meridian exited ({status}) before printing {READY_LINE:?}; log {}:\n{}",
                            self.log_path.display(),
                            self.log_tail()
                        );
                    }
                    if Instant::now() > deadline {
                        let _ = self.child.as_mut().unwrap().kill();
                        panic!(
                            "meridian did not print {READY_LINE:?} within {:?}; log {}:\n{}",
                            start_timeout(),
                            self.log_path.display(),
                            self.log_tail()
                        );
                    }
                }
            }
        }
        // the ready line must mean the port accepts connections
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect((self.host.as_str(), self.port)).is_err() {
            if Instant::now() > deadline {
                panic!(
                    "meridian printed {READY_LINE:?} but {}:{} refuses connections; log:\n{}",
                    self.host,
                    self.port,
                    self.log_tail()
                );
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Last ~8 KB of the server log.
    pub fn log_tail(&self) -> String {
        let mut f = match File::open(&self.log_path) {
            Ok(f) => f,
            Err(_) => return "(no log)".into(),
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = f.seek(SeekFrom::Start(len.saturating_sub(8192)));
        let mut buf = Vec::new();
        let _ = f.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    }

    /// Whether the server process is still running.
    pub fn is_alive(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => self.is_external(),
        }
    }

    /// SIGKILL the server (no clean-up possible).
    pub fn kill9(&mut self) {
        assert!(
            !self.is_external(),
            "kill9() on an external server (MERIDIAN_TEST_ADDR)"
        );
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM and wait (SIGKILL after 30 s, which panics).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            if matches!(c.try_wait(), Ok(None)) {
                unsafe {
                    libc::kill(c.id() as libc::pid_t, libc::SIGTERM);
                }
                let deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    if let Ok(Some(_)) = c.try_wait() {
                        return;
                    }
                    if Instant::now() > deadline {
                        let _ = c.kill();
                        let _ = c.wait();
                        if !thread::panicking() {
                            panic!("meridian did not exit within 30 s of SIGTERM");
                        }
                        return;
                    }
                    thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }

    /// Start again on the same data directory and port (after `kill9()` or `stop()`).
    pub fn restart(&mut self) {
        assert!(
            !self.is_external(),
            "restart() on an external server (MERIDIAN_TEST_ADDR)"
        );
        if self.is_alive() {
            self.stop();
        }
        self.spawn();
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if self.is_external() {
            return;
        }
        if let Some(c) = self.child.as_mut() {
            if matches!(c.try_wait(), Ok(None)) {
                unsafe {
                    libc::kill(c.id() as libc::pid_t, libc::SIGTERM);
                }
                let deadline = Instant::now() + Duration::from_secs(30);
                while matches!(c.try_wait(), Ok(None)) && Instant::now() < deadline {
                    thread::sleep(Duration::from_millis(50));
                }
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        if thread::panicking() {
            eprintln!(
                "---- meridian server log ({}), kept for the failed test:\n{}",
                self.log_path.display(),
                self.log_tail()
            );
        } else if std::env::var_os("MERIDIAN_KEEP_TEST_DIRS").is_none() {
            if let Some(base) = &self.base_dir {
                let _ = fs::remove_dir_all(base);
            }
        }
    }
}
