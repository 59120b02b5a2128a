#![allow(dead_code)]
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `gtm-server` process (the kill -9 and reconnect tests need a real process).
pub struct ServerProc {
    pub child: Child,
    pub addr: SocketAddr,
}

impl ServerProc {
    /// Starts the server and waits for its "ready to accept connections" line.
    pub fn start(dir: &Path, listen: &str, window: u64) -> ServerProc {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gtm-server"))
            .arg("--data-dir")
            .arg(dir)
            .arg("--listen")
            .arg(listen)
            .arg("--window")
            .arg(window.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn gtm-server");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.contains("ready to accept connections") {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(line);
                    }
                }
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("gtm-server did not become ready");
        let addr = line
            .split("GTM listening on ")
            .nth(1)
            .and_then(|s| s.split(';').next())
            .expect("address in ready line")
            .parse()
            .expect("parse address");
        ServerProc { child, addr }
    }

    /// SIGKILL (Child::kill sends SIGKILL on Unix) and reap.
    pub fn kill9(mut self) {
        self.child.kill().expect("kill -9");
        self.child.wait().expect("wait");
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Fails the test instead of hanging forever if something never completes.
pub async fn bounded<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(120), f)
        .await
        .unwrap_or_else(|_| panic!("{what} hung"))
}
