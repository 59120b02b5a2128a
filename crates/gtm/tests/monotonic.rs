//! Monotonicity under concurrency: many tasks, many connections, no duplicate or
//! decreasing timestamp.

mod common;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;

use gtm::server::{Server, ServerOptions};
use gtm::{ClientOptions, GtmClient, OracleOptions, Timestamp};

/// One task's loop: begin, timestamp, commit or finish; returns everything it got, in order.
async fn worker(c: GtmClient, iters: usize, seed: u64) -> Vec<Timestamp> {
    let mut got = Vec::with_capacity(iters * 3);
    let mut x = seed | 1;
    for _ in 0..iters {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let s = c.begin().await.unwrap();
        got.push(s);
        if x.is_multiple_of(2) {
            got.push(c.timestamp().await.unwrap());
        }
        // The horizon can never be above a start timestamp that is still open.
        assert!(c.horizon() <= s, "horizon above an open start ts");
        if x.is_multiple_of(3) {
            c.finish(s).await.unwrap();
        } else {
            let ct = c.commit(s).await.unwrap();
            assert!(ct > s);
            got.push(ct);
        }
    }
    got
}

fn check(all: Vec<Vec<Timestamp>>) -> Timestamp {
    let mut seen = HashSet::new();
    let mut max = 0;
    for seq in all {
        for w in seq.windows(2) {
            assert!(
                w[1] > w[0],
                "timestamps not increasing within a task: {} then {}",
                w[0],
                w[1]
            );
        }
        for t in seq {
            assert!(t != 0, "timestamp 0 issued");
            assert!(seen.insert(t), "timestamp {t} issued twice");
            max = max.max(t);
        }
    }
    assert!(!seen.is_empty());
    max
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn local_many_tasks() {
    let dir = tempfile::tempdir().unwrap();
    // A tiny window so that many persisted-window extensions race with issuing.
    let c = GtmClient::local_with(dir.path(), OracleOptions { window: 64 }).unwrap();
    let mut hs = Vec::new();
    for i in 0..32 {
        hs.push(tokio::spawn(worker(c.clone(), 500, 0x9e37_79b9 + i)));
    }
    let mut all = Vec::new();
    for h in hs {
        all.push(h.await.unwrap());
    }
    let max = check(all);
    let after = c.timestamp().await.unwrap();
    assert!(after > max);
    assert_eq!(
        c.horizon(),
        after + 1,
        "nothing registered: horizon is the next timestamp"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn local_from_threads() {
    // Plain OS threads hammering the oracle directly.
    let dir = tempfile::tempdir().unwrap();
    let o = Arc::new(gtm::Oracle::open_with(dir.path(), OracleOptions { window: 128 }).unwrap());
    let hs: Vec<_> = (0..8)
        .map(|_| {
            let o = o.clone();
            std::thread::spawn(move || {
                let mut v = Vec::new();
                for i in 0..5000u64 {
                    let t = if i % 2 == 0 {
                        o.timestamp().unwrap()
                    } else {
                        o.issue(3).unwrap() + 2
                    };
                    v.push(t);
                }
                v
            })
        })
        .collect();
    let all = hs.into_iter().map(|h| h.join().unwrap()).collect();
    check(all);
}

async fn start_inproc(window: u64) -> (tempfile::TempDir, SocketAddr) {
    let dir = tempfile::tempdir().unwrap();
    let opts = ServerOptions {
        oracle: OracleOptions { window },
    };
    let s = Server::bind(
        dir.path().to_path_buf(),
        "127.0.0.1:0".parse().unwrap(),
        opts,
    )
    .await
    .unwrap();
    let addr = s.local_addr();
    tokio::spawn(s.serve());
    (dir, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn remote_many_connections_many_tasks() {
    let (_dir, addr) = start_inproc(256).await;
    let mut clients = Vec::new();
    for _ in 0..6 {
        clients.push(
            GtmClient::connect(&addr.to_string(), ClientOptions::default())
                .await
                .unwrap(),
        );
    }
    let mut hs = Vec::new();
    for (ci, c) in clients.iter().enumerate() {
        for i in 0..64 {
            hs.push(tokio::spawn(worker(c.clone(), 100, (ci as u64) << 32 | i)));
        }
    }
    let mut all = Vec::new();
    for h in hs {
        all.push(common::bounded("remote worker", h).await.unwrap());
    }
    let max = check(all);
    for c in &clients {
        let t = c.timestamp().await.unwrap();
        assert!(t > max);
        // Everything was committed or finished: the piggy-backed horizon has passed max.
        assert!(
            c.horizon() > max,
            "horizon {} not past {}",
            c.horizon(),
            max
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn remote_and_local_share_an_oracle() {
    // A coordinator in the GTM's own process can use the oracle directly while others
    // come over the network: one timestamp sequence.
    let dir = tempfile::tempdir().unwrap();
    let s = Server::bind(
        dir.path().to_path_buf(),
        "127.0.0.1:0".parse().unwrap(),
        ServerOptions::default(),
    )
    .await
    .unwrap();
    let addr = s.local_addr();
    let local = GtmClient::from_oracle(s.oracle().clone());
    tokio::spawn(s.serve());
    let remote = GtmClient::connect(&addr.to_string(), ClientOptions::default())
        .await
        .unwrap();
    let mut hs = Vec::new();
    for i in 0..16 {
        hs.push(tokio::spawn(worker(local.clone(), 200, i + 1)));
        hs.push(tokio::spawn(worker(remote.clone(), 100, i + 100)));
    }
    let mut all = Vec::new();
    for h in hs {
        all.push(common::bounded("worker", h).await.unwrap());
    }
    check(all);
}
