//! `meridian playground`: a local cluster in one command. A GTM, N datanodes and M
//! coordinators, each a process of this binary on a local port, their data and logs
//! under one directory; Ctrl-C (or SIGTERM) stops them all.

use clap::Args;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

const READY: &str = "ready to accept connections";
const START_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Args)]
pub struct PlaygroundArgs {
    /// Number of datanodes.
    #[arg(long, default_value_t = 3)]
    datanodes: usize,
    /// Number of coordinators.
    #[arg(long, default_value_t = 1)]
    coordinators: usize,
    /// Where every process keeps its data (`gtm`, `datanode1`…, `coordinator1`) and log
    /// (`*.log`); a later playground on the same directory finds the same data.
    #[arg(long, default_value = "./meridian-playground")]
    data_dir: PathBuf,
    /// The first coordinator's port (on 127.0.0.1); the next coordinators take the ports
    /// after it, the other processes free ports.
    #[arg(long, default_value_t = 5433)]
    port: u16,
}

/// One process of the playground.
struct Member {
    name: String,
    child: Child,
}

pub async fn run(args: PlaygroundArgs) -> Result<(), String> {
    if args.datanodes == 0 {
        return Err("--datanodes must be at least 1".into());
    }
    if args.coordinators == 0 {
        return Err("--coordinators must be at least 1".into());
    }
    check_datanode_count(&args.data_dir, args.datanodes)?;
    std::fs::create_dir_all(&args.data_dir)
        .map_err(|e| format!("cannot create {}: {e}", args.data_dir.display()))?;
    let shutdown = crate::ShutdownSignal::install();
    let mut members = Vec::new();
    let started = start_all(&args, &mut members).await;
    let outcome = match started {
        Ok(addresses) => {
            println!("{addresses}");
            println!("Ctrl-C stops every process.");
            wait(&mut members, shutdown).await
        }
        Err(e) => Err(e),
    };
    stop_all(&mut members).await;
    outcome
}

/// Starts the GTM, the datanodes and the coordinators, each once the one before is ready
/// (the datanodes register at the GTM, where the coordinators find them), each with an
/// HTTP port for its metrics; returns how to reach them.
async fn start_all(args: &PlaygroundArgs, members: &mut Vec<Member>) -> Result<String, String> {
    let dir = &args.data_dir;
    let mut metrics = Vec::new();
    let mut http_port = |name: &str| -> Result<String, String> {
        let addr = format!("127.0.0.1:{}", free_port()?);
        metrics.push(format!("{name} http://{addr}/metrics"));
        Ok(addr)
    };
    let http = http_port("gtm")?;
    let (member, gtm) = spawn_on_free_port(dir, "gtm", |addr| {
        ["gtm", "--listen", addr, "--http-listen", &http]
            .map(String::from)
            .to_vec()
    })
    .await?;
    members.push(member);
    let mut datanodes = Vec::new();
    for i in 1..=args.datanodes {
        let name = format!("datanode{i}");
        let http = http_port(&name)?;
        let (member, addr) = spawn_on_free_port(dir, &name, |addr| {
            [
                "datanode",
                "--listen",
                addr,
                "--gtm",
                &gtm,
                "--http-listen",
                &http,
            ]
            .map(String::from)
            .to_vec()
        })
        .await?;
        members.push(member);
        datanodes.push(addr);
    }
    let mut connect = Vec::new();
    for i in 1..=args.coordinators {
        let port = args.port as usize + i - 1;
        let port = u16::try_from(port).map_err(|_| format!("--port: {port} is not a port"))?;
        let name = format!("coordinator{i}");
        let listen = format!("127.0.0.1:{port}");
        let socket_dir = dir.join(&name).to_string_lossy().into_owned();
        let count = args.datanodes.to_string();
        let http = http_port(&name)?;
        let coordinator_args = [
            "coordinator",
            "--listen",
            &listen,
            "--unix-socket-dir",
            &socket_dir,
            "--gtm",
            &gtm,
            "--datanodes",
            &count,
            "--http-listen",
            &http,
        ];
        members.push(spawn(dir, &name, &coordinator_args).await?);
        connect.push(format!(
            "{name}: psql \"host=127.0.0.1 port={port} user=postgres dbname=postgres\""
        ));
    }
    Ok(format!(
        "meridian playground: GTM {gtm}, datanodes {}; data and logs in {}\n{}\nmetrics: {}",
        datanodes.join(", "),
        dir.display(),
        connect.join("\n"),
        metrics.join(", ")
    ))
}

/// A data directory made for another number of datanodes would place rows on the wrong
/// ones.
fn check_datanode_count(dir: &Path, datanodes: usize) -> Result<(), String> {
    let existing = (1..)
        .take_while(|i| dir.join(format!("datanode{i}")).exists())
        .count();
    if existing != 0 && existing != datanodes {
        return Err(format!(
            "{} holds a playground of {existing} datanodes; use --datanodes {existing} or \
             another --data-dir",
            dir.display()
        ));
    }
    Ok(())
}

/// Spawns a member listening on a free local port (`args` of its address); returns it and
/// the address. A port chosen free can be taken before the member binds it (by another
/// process's outgoing connection): a member whose log says so is started again on
/// another port.
async fn spawn_on_free_port(
    dir: &Path,
    name: &str,
    args: impl Fn(&str) -> Vec<String>,
) -> Result<(Member, String), String> {
    let log_path = dir.join(format!("{name}.log"));
    let mut attempts = 0;
    loop {
        let addr = format!("127.0.0.1:{}", free_port()?);
        let logged = std::fs::metadata(&log_path).map_or(0, |m| m.len());
        let argv = args(&addr);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        match spawn(dir, name, &argv).await {
            Ok(member) => return Ok((member, addr)),
            Err(_) if attempts < 3 && port_was_taken(&log_path, logged) => {
                attempts += 1;
                tracing::warn!("{name}: {addr} was taken before it could listen; another port");
            }
            Err(e) => return Err(e),
        }
    }
}

/// Whether the member's log, past its first `from` bytes, says its port was taken.
fn port_was_taken(log_path: &Path, from: u64) -> bool {
    std::fs::read(log_path).is_ok_and(|log| {
        log.get(from as usize..)
            .is_some_and(|new| String::from_utf8_lossy(new).contains("Address already in use"))
    })
}

/// Runs `meridian ARGS --data-dir DIR/NAME`, its output in `DIR/NAME.log`, and waits
/// until it says it is ready.
async fn spawn(dir: &Path, name: &str, args: &[&str]) -> Result<Member, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let log_path = dir.join(format!("{name}.log"));
    let open_log = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map(tokio::fs::File::from_std)
            .map_err(|e| format!("cannot open {}: {e}", log_path.display()))
    };
    let mut child = Command::new(exe)
        .args(args)
        .arg("--data-dir")
        .arg(dir.join(name))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: a terminal's Ctrl-C reaches the playground, which stops
        // the members itself.
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    // Roles print their ready line on stdout or, through the log, on stderr.
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let ready = Arc::new(Mutex::new(Some(ready_tx)));
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    tokio::spawn(copy_output(stdout, open_log()?, ready.clone()));
    tokio::spawn(copy_output(stderr, open_log()?, ready));
    match tokio::time::timeout(START_TIMEOUT, ready_rx).await {
        Ok(Ok(())) => Ok(Member {
            name: name.to_string(),
            child,
        }),
        Ok(Err(_)) => Err(format!(
            "{name} exited before it was ready; see {}",
            log_path.display()
        )),
        Err(_) => Err(format!(
            "{name} was not ready within {START_TIMEOUT:?}; see {}",
            log_path.display()
        )),
    }
}

/// Copies a member's output into its log, and says when it printed the ready line.
async fn copy_output(
    output: impl tokio::io::AsyncRead + Unpin,
    mut log: tokio::fs::File,
    ready: Arc<Mutex<Option<tokio::sync::oneshot::Sender<()>>>>,
) {
    let mut lines = BufReader::new(output).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.contains(READY) {
            if let Some(ready) = ready.lock().expect("ready sender").take() {
                let _ = ready.send(());
            }
        }
        let _ = log.write_all(format!("{line}\n").as_bytes()).await;
    }
}

/// Until a shutdown signal, or until a member exits on its own (then the playground ends
/// with an error naming it).
async fn wait(members: &mut [Member], shutdown: crate::ShutdownSignal) -> Result<(), String> {
    let exited = first_exit(members);
    tokio::select! {
        _ = shutdown.recv() => Ok(()),
        (name, status) = exited => Err(format!("{name} exited ({status}); stopping the others")),
    }
}

/// The name and exit status of the first member to exit.
async fn first_exit(members: &mut [Member]) -> (String, String) {
    loop {
        for m in members.iter_mut() {
            if let Ok(Some(status)) = m.child.try_wait() {
                return (m.name.clone(), status.to_string());
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// SIGTERM to each member, coordinator first; SIGKILL to any still running after
/// `STOP_TIMEOUT`.
async fn stop_all(members: &mut [Member]) {
    for m in members.iter().rev() {
        if let Some(pid) = m.child.id() {
            // SAFETY: kill(2) with a pid of our own child and a valid signal number.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
    }
    for m in members.iter_mut().rev() {
        match tokio::time::timeout(STOP_TIMEOUT, m.child.wait()).await {
            Ok(_) => {}
            Err(_) => {
                tracing::warn!(
                    "{} did not stop within {STOP_TIMEOUT:?}; killing it",
                    m.name
                );
                let _ = m.child.kill().await;
            }
        }
    }
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free local port: {e}"))
}

#[cfg(test)]
mod tests {
    use super::port_was_taken;

    #[test]
    fn a_taken_port_is_read_only_from_the_latest_attempt() {
        let dir = std::env::temp_dir().join(format!("playground-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("gtm.log");
        std::fs::write(
            &log,
            "could not listen on 127.0.0.1:1: Address already in use\n",
        )
        .unwrap();
        assert!(port_was_taken(&log, 0));
        let first = std::fs::metadata(&log).unwrap().len();
        std::fs::write(
            &log,
            "could not listen on 127.0.0.1:1: Address already in use\nready\n",
        )
        .unwrap();
        assert!(
            !port_was_taken(&log, first),
            "the earlier attempt's line is not this one's"
        );
        assert!(!port_was_taken(&dir.join("missing.log"), 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
