//! Failures reach the caller as SQLSTATE 08006 within the timeout, and the client
//! reconnects when the GTM comes back.

mod common;

use std::time::{Duration, Instant};

use common::{bounded, ServerProc};
use gtm::{ClientOptions, GtmClient};
use pgerror::codes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn quick() -> ClientOptions {
    ClientOptions {
        request_timeout: Duration::from_millis(300),
        reconnect_backoff: Duration::from_millis(20),
    }
}

#[tokio::test]
async fn connect_refused_is_08006() {
    // Bind and drop to get a port nobody listens on.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    let e = bounded("connect", GtmClient::connect(&addr.to_string(), quick()))
        .await
        .unwrap_err();
    assert_eq!(e.code, codes::CONNECTION_FAILURE, "{e}");
}

#[tokio::test]
async fn silent_peer_times_out_with_08006() {
    // Accepts and reads but never answers: handshake must time out, not hang.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        let mut socks = Vec::new();
        loop {
            let (s, _) = l.accept().await.unwrap();
            socks.push(s);
        }
    });
    let e = bounded("connect", GtmClient::connect(&addr.to_string(), quick()))
        .await
        .unwrap_err();
    assert_eq!(e.code, codes::CONNECTION_FAILURE, "{e}");
    assert!(e.message.contains("timed out"), "{e}");
}

#[tokio::test]
async fn server_stops_answering_mid_session() {
    // Handshakes properly, then swallows batches without replying.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        let mut socks = Vec::new();
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            let mut hs = [0u8; 12];
            s.read_exact(&mut hs).await.unwrap();
            let mut reply = Vec::new();
            reply.extend_from_slice(gtm::proto::MAGIC);
            reply.extend_from_slice(&gtm::proto::VERSION.to_le_bytes());
            reply.extend_from_slice(&0u16.to_le_bytes());
            reply.extend_from_slice(&1u64.to_le_bytes()); // horizon
            reply.extend_from_slice(&1u64.to_le_bytes()); // next
            reply.extend_from_slice(&0u64.to_le_bytes()); // metadata version
            s.write_all(&reply).await.unwrap();
            socks.push(s);
        }
    });
    let c = GtmClient::connect(&addr.to_string(), quick())
        .await
        .unwrap();
    let mut hs = Vec::new();
    for _ in 0..50 {
        let c = c.clone();
        hs.push(tokio::spawn(async move { c.begin().await }));
    }
    for h in hs {
        let e = bounded("begin", h).await.unwrap().unwrap_err();
        assert_eq!(e.code, codes::CONNECTION_FAILURE, "{e}");
    }
}

#[tokio::test]
async fn wrong_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = gtm::server::Server::bind(
        dir.path().to_path_buf(),
        "127.0.0.1:0".parse().unwrap(),
        Default::default(),
    )
    .await
    .unwrap();
    let addr = s.local_addr();
    tokio::spawn(s.serve());
    let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut hs = Vec::new();
    hs.extend_from_slice(b"MGTM");
    hs.extend_from_slice(&99u16.to_le_bytes());
    hs.extend_from_slice(&0u16.to_le_bytes());
    hs.extend_from_slice(&0u32.to_le_bytes());
    sock.write_all(&hs).await.unwrap();
    let mut reply = [0u8; 24];
    sock.read_exact(&mut reply).await.unwrap();
    assert_eq!(&reply[0..4], b"MGTM");
    assert_eq!(
        u16::from_le_bytes([reply[6], reply[7]]),
        gtm::proto::STATUS_UNSUPPORTED_VERSION
    );
    // Garbage instead of a handshake: the server closes the connection.
    let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    sock.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    let mut buf = [0u8; 16];
    let n = bounded("close", sock.read(&mut buf)).await.unwrap_or(0);
    assert_eq!(n, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnects_after_gtm_restart_and_reregisters_live_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let srv = ServerProc::start(dir.path(), "127.0.0.1:0", 1 << 20);
    let addr = srv.addr;
    let c = GtmClient::connect(&addr.to_string(), quick())
        .await
        .unwrap();
    let open = c.begin().await.unwrap(); // stays open across the restart
    let before = c.timestamp().await.unwrap();
    assert_eq!(c.horizon(), open);

    srv.kill9();
    let t0 = Instant::now();
    let e = bounded("request to dead GTM", c.timestamp())
        .await
        .unwrap_err();
    assert_eq!(e.code, codes::CONNECTION_FAILURE, "{e}");
    let _ = t0; // no timing assertions: `bounded` only guards against a hang

    // Same address again (the port was just freed by the killed process).
    let srv = ServerProc::start(dir.path(), &addr.to_string(), 1 << 20);
    let mut got = None;
    for _ in 0..200 {
        match c.timestamp().await {
            Ok(t) => {
                got = Some(t);
                break;
            }
            Err(e) => {
                assert_eq!(e.code, codes::CONNECTION_FAILURE, "{e}");
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        }
    }
    let t = got.expect("client did not reconnect");
    assert!(t > before, "reissued after restart: {t} <= {before}");
    // The open transaction was re-registered in the handshake: it holds the horizon.
    assert_eq!(c.horizon(), open);
    let ct = c.commit(open).await.unwrap();
    assert!(ct > t);
    assert!(c.horizon() > ct);
    drop(srv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_connection_releases_its_registrations() {
    let dir = tempfile::tempdir().unwrap();
    let s = gtm::server::Server::bind(
        dir.path().to_path_buf(),
        "127.0.0.1:0".parse().unwrap(),
        Default::default(),
    )
    .await
    .unwrap();
    let addr = s.local_addr().to_string();
    let oracle = s.oracle().clone();
    tokio::spawn(s.serve());
    let a = GtmClient::connect(&addr, quick()).await.unwrap();
    let _s1 = a.begin().await.unwrap();
    let _s2 = a.begin().await.unwrap();
    assert_eq!(oracle.registered_count(), 2);
    drop(a); // client process "dies": its connection closes
    for _ in 0..400 {
        if oracle.registered_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(oracle.registered_count(), 0);
}

#[test]
fn client_outliving_a_runtime_serves_others_and_fails_that_ones_starts() {
    let dir = tempfile::tempdir().unwrap();
    let rt_server = tokio::runtime::Runtime::new().unwrap();
    let addr = rt_server.block_on(async {
        let s = gtm::server::Server::bind(
            dir.path().to_path_buf(),
            "127.0.0.1:0".parse().unwrap(),
            Default::default(),
        )
        .await
        .unwrap();
        let a = s.local_addr().to_string();
        tokio::spawn(s.serve());
        a
    });
    let rt1 = tokio::runtime::Runtime::new().unwrap();
    let c = rt1.block_on(GtmClient::connect(&addr, quick())).unwrap();
    let start = rt1.block_on(c.begin()).unwrap();
    drop(rt1); // its driver tasks die with it, and its connections close
    let rt2 = tokio::runtime::Runtime::new().unwrap();
    // Another runtime gets connections of its own.
    let ts = rt2
        .block_on(async { bounded("timestamp on a new runtime", c.timestamp()).await })
        .unwrap();
    assert!(ts > start);
    // The start registered through the dead runtime's connection is finished through
    // nothing: the request fails at once instead of waiting for a driver that is gone.
    let e = rt2
        .block_on(async { bounded("finish after runtime shutdown", c.finish(start)).await })
        .unwrap_err();
    assert_eq!(e.code, codes::CONNECTION_FAILURE, "{e}");
}
