//! RPC transport benchmark: CPU per round trip of candidate coordinator→datanode
//! transports over loopback (docs/decisions/0026).
//!
//! Each candidate serves a ~40-byte request with a ~150-byte response (a point select's
//! sizes). Client and server run in this one process on separate tokio runtimes of one
//! worker thread each; N concurrent callers share ONE connection and call in a loop for a
//! fixed time. Reported per cell: RPCs/s and process CPU µs per RPC (getrusage user +
//! system over the measured window ÷ RPCs), the median of R runs.
//!
//! Candidates:
//!   tarpc  tarpc 0.34, serde transport with bincode over TCP
//!   rpc    crates/rpc: length-prefixed bincode frames, multiplexed and coalesced
//!   tonic  tonic 0.12 gRPC with prost messages (build with `--features tonic`)
//!
//! Usage: rpc-transport-bench [--duration-ms MS] [--runs R] [--callers 1,16,128]
//!                            [--candidates tarpc,rpc,tonic]

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[cfg(feature = "tonic")]
mod tonic_candidate;

use futures::prelude::*;
use serde::{Deserialize, Serialize};
use tarpc::server::Channel as _;
use tarpc::tokio_serde::formats::Bincode;

/// A point-select request: 40 bytes in bincode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    relation: u32,
    key: i64,
    read_ts: u64,
    txn: u64,
    columns: u64,
    flags: u32,
}

/// A point-select response: 150 bytes in bincode (a row of 141 bytes).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Response {
    found: bool,
    row: Vec<u8>,
}

fn answer(req: &Request) -> Response {
    let mut row = vec![0u8; 141];
    row[..8].copy_from_slice(&req.key.to_le_bytes());
    Response { found: true, row }
}

fn request(caller: u64, i: u64) -> Request {
    Request {
        relation: 16384,
        key: (caller * 1_000_003 + i) as i64,
        read_ts: i,
        txn: caller,
        columns: 0b1111,
        flags: 0,
    }
}

#[tarpc::service]
trait PointSelect {
    async fn get(req: Request) -> Response;
}

#[derive(Clone)]
struct TarpcServer;

impl PointSelect for TarpcServer {
    async fn get(self, _: tarpc::context::Context, req: Request) -> Response {
        answer(&req)
    }
}

fn runtime(name: &str) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(name)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn cpu_seconds() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// One candidate: a running server and a way to make one client connection to it.
trait Candidate {
    /// Runs `callers` tasks on `rt`, each calling in a loop on one shared connection until
    /// `stop`; each adds its completed calls to `done`.
    fn spawn_callers(
        &self,
        rt: &tokio::runtime::Runtime,
        callers: u64,
        stop: Arc<AtomicBool>,
        done: Arc<AtomicU64>,
    );
}

fn spawn_loop<C, F, Fut>(
    rt: &tokio::runtime::Runtime,
    client: Arc<C>,
    callers: u64,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    call: F,
) where
    C: Send + Sync + 'static,
    F: Fn(Arc<C>, Request) -> Fut + Send + Sync + Copy + 'static,
    Fut: Future<Output = Response> + Send,
{
    for caller in 0..callers {
        let (client, stop, done) = (client.clone(), stop.clone(), done.clone());
        rt.spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let resp = call(client.clone(), request(caller, i)).await;
                assert!(resp.found);
                i += 1;
                done.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
}

struct Tarpc {
    client: Arc<PointSelectClient>,
}

impl Tarpc {
    fn start(server_rt: &tokio::runtime::Runtime, client_rt: &tokio::runtime::Runtime) -> Tarpc {
        let addr: SocketAddr = server_rt.block_on(async {
            let mut listener = tarpc::serde_transport::tcp::listen("127.0.0.1:0", Bincode::default)
                .await
                .expect("listen");
            let addr = listener.local_addr();
            tokio::spawn(async move {
                while let Some(Ok(transport)) = listener.next().await {
                    let channel = tarpc::server::BaseChannel::with_defaults(transport);
                    tokio::spawn(
                        channel
                            .execute(TarpcServer.serve())
                            .for_each(|f| async move {
                                tokio::spawn(f);
                            }),
                    );
                }
            });
            addr
        });
        let client = client_rt.block_on(async {
            let transport = tarpc::serde_transport::tcp::connect(addr, Bincode::default)
                .await
                .expect("connect");
            let mut config = tarpc::client::Config::default();
            config.max_in_flight_requests = 4096;
            config.pending_request_buffer = 4096;
            PointSelectClient::new(config, transport).spawn()
        });
        Tarpc {
            client: Arc::new(client),
        }
    }
}

impl Candidate for Tarpc {
    fn spawn_callers(
        &self,
        rt: &tokio::runtime::Runtime,
        callers: u64,
        stop: Arc<AtomicBool>,
        done: Arc<AtomicU64>,
    ) {
        spawn_loop(
            rt,
            self.client.clone(),
            callers,
            stop,
            done,
            |c, req| async move {
                c.get(tarpc::context::current(), req)
                    .await
                    .expect("tarpc call")
            },
        );
    }
}

struct Rpc {
    client: Arc<rpc::Client<Request, Response>>,
}

impl Rpc {
    fn start(server_rt: &tokio::runtime::Runtime, client_rt: &tokio::runtime::Runtime) -> Rpc {
        let addr = server_rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("local addr");
            tokio::spawn(rpc::serve(listener, |req: Request, _| async move {
                answer(&req)
            }));
            addr
        });
        let client = rpc::Client::new(addr.to_string(), rpc::ClientOptions::default());
        let _enter = client_rt.enter();
        Rpc {
            client: Arc::new(client),
        }
    }
}

impl Candidate for Rpc {
    fn spawn_callers(
        &self,
        rt: &tokio::runtime::Runtime,
        callers: u64,
        stop: Arc<AtomicBool>,
        done: Arc<AtomicU64>,
    ) {
        spawn_loop(
            rt,
            self.client.clone(),
            callers,
            stop,
            done,
            |c, req| async move { c.call(&req).await.expect("rpc call") },
        );
    }
}

struct Args {
    duration: Duration,
    runs: usize,
    callers: Vec<u64>,
    candidates: Vec<String>,
}

fn parse_args() -> Args {
    let mut args = Args {
        duration: Duration::from_millis(3000),
        runs: 3,
        callers: vec![1, 16, 128],
        candidates: ["tarpc", "rpc"]
            .into_iter()
            .chain(cfg!(feature = "tonic").then_some("tonic"))
            .map(str::to_string)
            .collect(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--duration-ms" => {
                args.duration = Duration::from_millis(value.parse().expect("--duration-ms"))
            }
            "--runs" => args.runs = value.parse().expect("--runs"),
            "--callers" => {
                args.callers = value
                    .split(',')
                    .map(|v| v.parse().expect("--callers"))
                    .collect()
            }
            "--candidates" => args.candidates = value.split(',').map(str::to_string).collect(),
            other => panic!("unknown flag {other}"),
        }
    }
    args
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Calls for `duration` after a warm-up; returns (RPCs/s, CPU µs per RPC).
fn measure(
    candidate: &dyn Candidate,
    rt: &tokio::runtime::Runtime,
    callers: u64,
    duration: Duration,
) -> (f64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    candidate.spawn_callers(rt, callers, stop.clone(), done.clone());
    std::thread::sleep(Duration::from_millis(300)); // warm-up
    let (n0, cpu0, t0) = (done.load(Ordering::Relaxed), cpu_seconds(), Instant::now());
    std::thread::sleep(duration);
    let (n1, cpu1, t1) = (done.load(Ordering::Relaxed), cpu_seconds(), Instant::now());
    stop.store(true, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(200)); // callers drain
    let n = (n1 - n0) as f64;
    (n / (t1 - t0).as_secs_f64(), (cpu1 - cpu0) * 1e6 / n)
}

/// A candidate with its own server and client runtimes (idle while others are measured).
struct Started {
    name: String,
    candidate: Box<dyn Candidate>,
    client_rt: tokio::runtime::Runtime,
    _server_rt: tokio::runtime::Runtime,
}

fn main() {
    let args = parse_args();
    let started: Vec<Started> = args
        .candidates
        .iter()
        .map(|name| {
            let server_rt = runtime("server");
            let client_rt = runtime("client");
            let candidate: Box<dyn Candidate> = match name.as_str() {
                "tarpc" => Box::new(Tarpc::start(&server_rt, &client_rt)),
                "rpc" => Box::new(Rpc::start(&server_rt, &client_rt)),
                #[cfg(feature = "tonic")]
                "tonic" => Box::new(tonic_candidate::Tonic::start(&server_rt, &client_rt)),
                other => panic!("unknown candidate {other}"),
            };
            Started {
                name: name.clone(),
                candidate,
                client_rt,
                _server_rt: server_rt,
            }
        })
        .collect();
    println!("| callers | candidate | RPCs/s | CPU µs/RPC | runs (RPCs/s; CPU µs/RPC) |");
    println!("|---:|---|---:|---:|---|");
    for &callers in &args.callers {
        // Runs interleave the candidates, so load from elsewhere on the machine falls on
        // all of them alike.
        let mut results = vec![Vec::new(); started.len()];
        for _ in 0..args.runs {
            for (s, r) in started.iter().zip(&mut results) {
                r.push(measure(&*s.candidate, &s.client_rt, callers, args.duration));
            }
        }
        for (s, r) in started.iter().zip(results) {
            let runs: Vec<String> = r
                .iter()
                .map(|(rate, cpu)| format!("{rate:.0}; {cpu:.2}"))
                .collect();
            println!(
                "| {callers} | {} | {:.0} | {:.2} | {} |",
                s.name,
                median(r.iter().map(|x| x.0).collect()),
                median(r.iter().map(|x| x.1).collect()),
                runs.join(" / ")
            );
        }
    }
    // Runtimes are dropped (and their tasks with them) on the way out.
}
