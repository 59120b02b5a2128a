//! The transport over real loopback sockets: a server on its own runtime (so a test can
//! kill it by shutting that runtime down) and clients on the test's runtime.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pgerror::codes;
use rpc::{Client, ClientOptions, Responder};
use serde::{Deserialize, Serialize};
use tokio::runtime::Runtime;

#[derive(Debug, Serialize, Deserialize)]
enum Req {
    Echo(u64),
    /// Stream 0..n as `Num`, then `Done`.
    Count(u32),
    /// Stream numbers until cancelled.
    Endless,
    /// Never answer.
    Hang,
    /// One response of this many bytes.
    Big(usize),
    /// The handler panics: at once, or after waiting (in a task of its own).
    Panic {
        after_waiting: bool,
    },
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum Resp {
    Echo(u64),
    Num(u32),
    Done,
    Bytes(Vec<u8>),
}

/// What the handlers report to the test.
#[derive(Default)]
struct Seen {
    /// Messages `Endless` has sent so far.
    sent: AtomicU32,
    /// Set when a handler's future was dropped before it finished (it was cancelled).
    cancelled: AtomicBool,
}

/// Sets `Seen::cancelled` if dropped before `finish`.
struct CancelProbe(Arc<Seen>, bool);

impl Drop for CancelProbe {
    fn drop(&mut self) {
        if !self.1 {
            self.0.cancelled.store(true, Ordering::SeqCst);
        }
    }
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 251) as u8).collect()
}

async fn handle(seen: Arc<Seen>, req: Req, out: Responder<Resp>) -> Resp {
    let mut probe = CancelProbe(seen.clone(), false);
    let resp = match req {
        Req::Echo(n) => Resp::Echo(n),
        Req::Count(n) => {
            for i in 0..n {
                out.send(&Resp::Num(i)).await.expect("stream send");
            }
            Resp::Done
        }
        Req::Endless => {
            let mut i = 0;
            while out.send(&Resp::Num(i)).await.is_ok() {
                seen.sent.fetch_add(1, Ordering::SeqCst);
                i += 1;
            }
            Resp::Done
        }
        Req::Hang => std::future::pending().await,
        Req::Big(n) => Resp::Bytes(pattern(n)),
        Req::Panic { after_waiting } => {
            if after_waiting {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            panic!("the handler fails")
        }
    };
    probe.1 = true;
    resp
}

/// Starts a server on `addr` (port 0: any) on a runtime of its own.
fn start_server(addr: SocketAddr) -> (Runtime, SocketAddr, Arc<Seen>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let seen = Arc::new(Seen::default());
    // The previous server's listener closes asynchronously after its runtime stops.
    // (std, not tokio: a runtime cannot block_on inside the test's runtime.)
    let listener = (0..100)
        .find_map(|_| {
            std::net::TcpListener::bind(addr)
                .inspect_err(|_| std::thread::sleep(Duration::from_millis(20)))
                .ok()
        })
        .unwrap_or_else(|| panic!("cannot bind {addr}"));
    listener.set_nonblocking(true).unwrap();
    let bound = listener.local_addr().unwrap();
    let handler_seen = seen.clone();
    rt.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        rpc::serve(listener, move |req, out| {
            handle(handler_seen.clone(), req, out)
        })
        .await
    });
    (rt, bound, seen)
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

async fn eventually(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..500 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_callers_get_their_own_answers() {
    let (server, addr, _) = start_server(any_port());
    let client = Arc::new(Client::<Req, Resp>::new(
        addr.to_string(),
        ClientOptions::default(),
    ));
    let mut tasks = Vec::new();
    for caller in 0..64u64 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..200 {
                let n = caller * 1_000_000 + i;
                assert_eq!(client.call(&Req::Echo(n)).await.unwrap(), Resp::Echo(n));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    server.shutdown_background();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_fails_its_request_and_the_connection_serves_on() {
    let (server, addr, _) = start_server(any_port());
    let client = Client::<Req, Resp>::new(addr.to_string(), ClientOptions::default());
    for after_waiting in [false, true] {
        let e = client
            .call(&Req::Panic { after_waiting })
            .await
            .unwrap_err();
        assert_eq!(e.code, codes::INTERNAL_ERROR, "{e}");
        assert!(e.message.contains("the handler panicked"), "{e}");
        assert_eq!(client.call(&Req::Echo(7)).await.unwrap(), Resp::Echo(7));
    }
    server.shutdown_background();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_response_arrives_complete_and_in_order() {
    let (server, addr, _) = start_server(any_port());
    let client = Client::<Req, Resp>::new(addr.to_string(), ClientOptions::default());
    // Far more messages than the credit window, so credits must flow back.
    let mut stream = client.call_stream(&Req::Count(5000)).await.unwrap();
    for i in 0..5000 {
        assert_eq!(stream.next().await.unwrap().unwrap(), Resp::Num(i));
    }
    assert_eq!(stream.next().await.unwrap().unwrap(), Resp::Done);
    assert!(stream.next().await.is_none());
    // The connection stays usable for unary calls.
    assert_eq!(client.call(&Req::Echo(7)).await.unwrap(), Resp::Echo(7));
    server.shutdown_background();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_consumer_holds_the_server_back_and_dropping_the_stream_cancels_it() {
    let (server, addr, seen) = start_server(any_port());
    let client = Client::<Req, Resp>::new(addr.to_string(), ClientOptions::default());
    let mut stream = client.call_stream(&Req::Endless).await.unwrap();
    for i in 0..3 {
        assert_eq!(stream.next().await.unwrap().unwrap(), Resp::Num(i));
    }
    // The consumer stops reading: the handler stops at its credit window (32 messages).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = seen.sent.load(Ordering::SeqCst);
    assert!((3..=40).contains(&sent), "server ran ahead: {sent} sent");
    assert!(!seen.cancelled.load(Ordering::SeqCst));
    drop(stream);
    eventually("the handler's cancellation", || {
        seen.cancelled.load(Ordering::SeqCst)
    })
    .await;
    assert_eq!(client.call(&Req::Echo(1)).await.unwrap(), Resp::Echo(1));
    server.shutdown_background();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_call_cancels_its_handler() {
    let (server, addr, seen) = start_server(any_port());
    let client = Client::<Req, Resp>::new(addr.to_string(), ClientOptions::default());
    let timed_out = tokio::time::timeout(Duration::from_millis(100), client.call(&Req::Hang)).await;
    assert!(timed_out.is_err());
    eventually("the handler's cancellation", || {
        seen.cancelled.load(Ordering::SeqCst)
    })
    .await;
    server.shutdown_background();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_connection_fails_waiting_callers_and_the_next_call_reconnects() {
    let (server, addr, _) = start_server(any_port());
    let client = Arc::new(Client::<Req, Resp>::new(
        addr.to_string(),
        ClientOptions::default(),
    ));
    assert_eq!(client.call(&Req::Echo(1)).await.unwrap(), Resp::Echo(1));
    let mut waiting = Vec::new();
    for _ in 0..8 {
        let client = client.clone();
        waiting.push(tokio::spawn(async move { client.call(&Req::Hang).await }));
    }
    let mut stream = client.call_stream(&Req::Endless).await.unwrap();
    assert!(stream.next().await.unwrap().is_ok());
    tokio::time::sleep(Duration::from_millis(100)).await;

    server.shutdown_background();
    for w in waiting {
        let err = tokio::time::timeout(Duration::from_secs(5), w)
            .await
            .expect("a waiting caller was not failed")
            .unwrap()
            .unwrap_err();
        assert_eq!(err.code, codes::CONNECTION_FAILURE, "{err:?}");
    }
    let err = loop {
        match stream.next().await {
            Some(Ok(_)) => continue,
            Some(Err(e)) => break e,
            None => panic!("stream ended without an error"),
        }
    };
    assert_eq!(err.code, codes::CONNECTION_FAILURE, "{err:?}");

    // While the server is down calls fail; once it is back, the next call succeeds.
    assert!(client.call(&Req::Echo(2)).await.is_err());
    let (server, _, _) = start_server(addr);
    assert_eq!(client.call(&Req::Echo(3)).await.unwrap(), Resp::Echo(3));
    server.shutdown_background();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_response_arrives_intact() {
    let (server, addr, _) = start_server(any_port());
    let client = Client::<Req, Resp>::new(addr.to_string(), ClientOptions::default());
    let n = 12 << 20;
    let (big_req, small_req) = (Req::Big(n), Req::Echo(9));
    let (big, small) = tokio::join!(client.call(&big_req), client.call(&small_req));
    assert_eq!(big.unwrap(), Resp::Bytes(pattern(n)));
    assert_eq!(small.unwrap(), Resp::Echo(9));
    server.shutdown_background();
}
