//! kill -9 + restart of the GTM server process never reissues a timestamp.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{bounded, ServerProc};
use gtm::{ClientOptions, GtmClient};
use parking_lot::Mutex;
use pgerror::codes;

fn opts() -> ClientOptions {
    ClientOptions {
        request_timeout: Duration::from_secs(5),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill9_restart_never_reissues() {
    let dir = tempfile::tempdir().unwrap();
    let mut max_seen = 0u64;
    for round in 0..4 {
        // Small window: the server persists many windows per round, so the kill lands at
        // an arbitrary point relative to the last save.
        let srv = ServerProc::start(dir.path(), "127.0.0.1:0", 1000);
        let c = bounded("connect", GtmClient::connect(&srv.addr.to_string(), opts()))
            .await
            .unwrap();
        let first = c.timestamp().await.unwrap();
        assert!(
            first > max_seen,
            "round {round}: reissued {first} <= {max_seen}"
        );

        // Many concurrent requesters hammering while we kill the process.
        let seen = Arc::new(Mutex::new(Vec::<u64>::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut hs = Vec::new();
        for _ in 0..64 {
            let (c, seen, stop) = (c.clone(), seen.clone(), stop.clone());
            hs.push(tokio::spawn(async move {
                let mut mine = Vec::new();
                let mut errors = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let r = match mine.len() % 3 {
                        0 => c.timestamp().await,
                        1 => match c.begin().await {
                            Ok(s) => c.commit(s).await,
                            Err(e) => Err(e),
                        },
                        _ => c.begin().await,
                    };
                    match r {
                        Ok(t) => mine.push(t),
                        Err(e) => {
                            // A dead GTM must surface as a connection failure, not a hang.
                            assert_eq!(e.code, codes::CONNECTION_FAILURE, "{e}");
                            errors += 1;
                            if errors > 3 {
                                break;
                            }
                        }
                    }
                }
                seen.lock().extend(mine);
            }));
        }
        // Let them get well past a few windows, then kill -9 under load.
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let t = c.timestamp().await.unwrap();
            if t > first + 20_000 {
                break;
            }
        }
        srv.kill9();
        tokio::time::sleep(Duration::from_millis(100)).await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for h in hs {
            bounded("requester after kill -9", h).await.unwrap();
        }
        let seen = seen.lock();
        let round_max = seen.iter().copied().max().unwrap();
        assert!(round_max > first);
        max_seen = max_seen.max(round_max);
    }
    // One more restart, checked with a fresh process and a fresh client.
    let srv = ServerProc::start(dir.path(), "127.0.0.1:0", 1000);
    let c = GtmClient::connect(&srv.addr.to_string(), opts())
        .await
        .unwrap();
    for _ in 0..100 {
        let t = c.begin().await.unwrap();
        assert!(t > max_seen);
    }
}
