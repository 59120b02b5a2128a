//! The commit decision record (decision 0029): decide / resolve / forget through the
//! client API, in process and over the wire, across connection loss and kill -9.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{bounded, ServerProc};
use gtm::{ClientOptions, GtmClient, Resolution};
use pgerror::codes;

fn quick() -> ClientOptions {
    ClientOptions {
        request_timeout: Duration::from_millis(500),
        reconnect_backoff: Duration::from_millis(20),
    }
}

/// An in-process server and a remote client of it.
async fn served(dir: &std::path::Path) -> (GtmClient, Arc<gtm::Oracle>, String) {
    let s = gtm::server::Server::bind(
        dir.to_path_buf(),
        "127.0.0.1:0".parse().unwrap(),
        Default::default(),
    )
    .await
    .unwrap();
    let addr = s.local_addr().to_string();
    let oracle = s.oracle().clone();
    tokio::spawn(s.serve());
    let c = GtmClient::connect(&addr, quick()).await.unwrap();
    (c, oracle, addr)
}

/// The API's contract, the same for both kinds of client.
async fn contract(c: &GtmClient) {
    // Decide: a commit timestamp above everything issued, unregistering the start.
    let start = c.begin().await.unwrap();
    assert_eq!(c.horizon(), start);
    let before = c.timestamp().await.unwrap();
    let ts = c.decide(start).await.unwrap();
    assert!(ts > before);
    let _ = c.timestamp().await.unwrap(); // remote: the horizon rides on an answer
    assert!(c.horizon() > ts, "decide did not unregister {start}");
    // Idempotent, and resolves to the same timestamp.
    assert_eq!(c.decide(start).await.unwrap(), ts);
    assert_eq!(c.resolve(start).await.unwrap(), Resolution::Committed(ts));

    // A registered undecided start is pending; it does not become aborted.
    let open = c.begin().await.unwrap();
    assert_eq!(c.resolve(open).await.unwrap(), Resolution::Pending);
    let open_ts = c.decide(open).await.unwrap();
    assert_eq!(
        c.resolve(open).await.unwrap(),
        Resolution::Committed(open_ts)
    );

    // Undecided and held by nobody: the resolver aborts it, and a late decide is refused.
    let gone = c.timestamp().await.unwrap();
    assert_eq!(c.resolve(gone).await.unwrap(), Resolution::Aborted);
    let e = c.decide(gone).await.unwrap_err();
    assert_eq!(e.code, codes::SERIALIZATION_FAILURE, "{e}");
    assert!(e.message.contains("in-doubt resolver"), "{e}");
    assert_eq!(c.resolve(gone).await.unwrap(), Resolution::Aborted);

    // Forget keeps an aborted record.
    c.forget(start).await.unwrap();
    c.forget(gone).await.unwrap();
    assert_eq!(c.resolve(gone).await.unwrap(), Resolution::Aborted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_client_contract() {
    let dir = tempfile::tempdir().unwrap();
    let c = GtmClient::local(dir.path()).unwrap();
    contract(&c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_client_contract_and_forget_reaches_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (c, oracle, _) = served(dir.path()).await;
    contract(&c).await;
    let start = c.begin().await.unwrap();
    let ts = c.decide(start).await.unwrap();
    assert_eq!(
        oracle.decisions().get(start),
        Some(gtm::decisions::Decision::Committed(ts))
    );
    c.forget(start).await.unwrap();
    // The forget rides on the next batch.
    let _ = c.timestamp().await.unwrap();
    assert_eq!(oracle.decisions().get(start), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_decide_fails_only_its_own_caller() {
    let dir = tempfile::tempdir().unwrap();
    let (c, _oracle, _) = served(dir.path()).await;
    let gone = c.timestamp().await.unwrap();
    assert_eq!(c.resolve(gone).await.unwrap(), Resolution::Aborted);
    let (a, b) = (c.begin().await.unwrap(), c.begin().await.unwrap());
    // Queued together: one batch (or a few), answered caller by caller.
    let (ra, rg, rb, rr) = tokio::join!(c.decide(a), c.decide(gone), c.decide(b), c.resolve(a));
    let (ta, tb) = (ra.unwrap(), rb.unwrap());
    assert_ne!(ta, tb);
    assert_eq!(rg.unwrap_err().code, codes::SERIALIZATION_FAILURE);
    assert!(matches!(rr.unwrap(), Resolution::Committed(t) if t == ta));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_held_by_another_connection_is_pending_until_it_closes() {
    let dir = tempfile::tempdir().unwrap();
    let (resolver, _oracle, addr) = served(dir.path()).await;
    let coordinator = GtmClient::connect(&addr, quick()).await.unwrap();
    let start = coordinator.begin().await.unwrap();
    assert_eq!(resolver.resolve(start).await.unwrap(), Resolution::Pending);
    drop(coordinator); // the coordinator dies: its registrations go with its connection
    let mut r = Resolution::Pending;
    for _ in 0..400 {
        r = resolver.resolve(start).await.unwrap();
        if r != Resolution::Pending {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(r, Resolution::Aborted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decide_that_failed_is_not_reregistered_on_reconnect() {
    let dir = tempfile::tempdir().unwrap();
    let srv = ServerProc::start(dir.path(), "127.0.0.1:0", 1 << 20);
    let addr = srv.addr;
    let c = GtmClient::connect(&addr.to_string(), quick())
        .await
        .unwrap();
    let decided = c.begin().await.unwrap();
    let open = c.begin().await.unwrap();
    srv.kill9();
    let e = bounded("decide on a dead GTM", c.decide(decided))
        .await
        .unwrap_err();
    assert_eq!(e.code, codes::CONNECTION_FAILURE, "{e}");

    let srv = ServerProc::start(dir.path(), &addr.to_string(), 1 << 20);
    let resolver = GtmClient::connect(&addr.to_string(), quick())
        .await
        .unwrap();
    // The coordinator's client reconnects, re-registering only `open`.
    let mut reconnected = false;
    for _ in 0..200 {
        if c.timestamp().await.is_ok() {
            reconnected = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(reconnected, "client did not reconnect");
    assert_eq!(resolver.resolve(open).await.unwrap(), Resolution::Pending);
    assert_eq!(
        resolver.resolve(decided).await.unwrap(),
        Resolution::Aborted
    );
    // The decision lane failed with the GTM and reconnects on its own schedule: until
    // it has, a decide fails fast with 08006.
    let mut e = c.decide(decided).await.unwrap_err();
    for _ in 0..200 {
        if e.code != codes::CONNECTION_FAILURE {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
        e = c.decide(decided).await.unwrap_err();
    }
    assert_eq!(e.code, codes::SERIALIZATION_FAILURE, "{e}");
    drop(srv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_transactions_are_registered_again_without_waiting_for_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let srv = ServerProc::start(dir.path(), "127.0.0.1:0", 1 << 20);
    let addr = srv.addr.to_string();
    let coordinator = GtmClient::connect(&addr, quick()).await.unwrap();
    let open = coordinator.begin().await.unwrap();
    srv.kill9();
    let srv = ServerProc::start(dir.path(), &addr, 1 << 20);
    let resolver = GtmClient::connect(&addr, quick()).await.unwrap();
    // The coordinator sends nothing: its client reconnects by itself and registers `open`
    // again (a resolve now would take it for a gone coordinator's and abort it).
    let mut registered = false;
    for _ in 0..400 {
        let _ = resolver.timestamp().await.unwrap(); // the horizon rides on the answer
        if resolver.horizon() == open {
            registered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(registered, "the open transaction was not registered again");
    assert_eq!(resolver.resolve(open).await.unwrap(), Resolution::Pending);
    let ts = coordinator.decide(open).await.unwrap();
    assert_eq!(
        resolver.resolve(open).await.unwrap(),
        Resolution::Committed(ts)
    );
    drop(srv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_survive_kill9() {
    let dir = tempfile::tempdir().unwrap();
    let srv = ServerProc::start(dir.path(), "127.0.0.1:0", 1 << 20);
    let addr = srv.addr.to_string();
    let c = GtmClient::connect(&addr, quick()).await.unwrap();
    let mut committed = Vec::new();
    for _ in 0..20 {
        let s = c.begin().await.unwrap();
        committed.push((s, c.decide(s).await.unwrap()));
    }
    let gone = c.timestamp().await.unwrap();
    assert_eq!(c.resolve(gone).await.unwrap(), Resolution::Aborted);
    srv.kill9();

    let srv = ServerProc::start(dir.path(), &addr, 1 << 20);
    let r = GtmClient::connect(&addr, quick()).await.unwrap();
    for (s, ts) in committed {
        assert_eq!(r.resolve(s).await.unwrap(), Resolution::Committed(ts));
        assert_eq!(r.decide(s).await.unwrap(), ts);
    }
    assert_eq!(r.resolve(gone).await.unwrap(), Resolution::Aborted);
    drop(srv);
}

/// Decide and resolve of one start racing: both answers tell the same story, and the
/// log says it too after a reopen.
#[test]
fn concurrent_decide_and_resolve_agree() {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let mut outcomes = Vec::new();
    {
        let c = GtmClient::local(dir.path()).unwrap();
        rt.block_on(async {
            let mut tasks = Vec::new();
            for i in 0..2_000u64 {
                // Half are held (begun), half held by nobody (a gone coordinator's).
                let start = if i % 2 == 0 {
                    c.begin().await.unwrap()
                } else {
                    c.timestamp().await.unwrap()
                };
                let (c1, c2) = (c.clone(), c.clone());
                let d = tokio::spawn(async move { c1.decide(start).await });
                let r = tokio::spawn(async move { c2.resolve(start).await.unwrap() });
                tasks.push((i % 2 == 0, start, d, r));
            }
            for (held, start, d, r) in tasks {
                let (d, r) = (d.await.unwrap(), r.await.unwrap());
                match (d, r) {
                    (Ok(ts), Resolution::Committed(rts)) => assert_eq!(ts, rts),
                    (Ok(_), Resolution::Pending) => assert!(held),
                    (Err(e), Resolution::Aborted) => {
                        assert!(!held, "a held start was aborted");
                        assert_eq!(e.code, codes::SERIALIZATION_FAILURE);
                    }
                    (d, r) => panic!("decide {d:?} and resolve {r:?} of {start} disagree"),
                }
                // After both, the answer is settled.
                let settled = c.resolve(start).await.unwrap();
                assert_ne!(settled, Resolution::Pending);
                outcomes.push((start, settled));
            }
        });
    }
    let c = reopen(dir.path());
    rt.block_on(async {
        for (start, r) in outcomes {
            assert_eq!(c.resolve(start).await.unwrap(), r);
        }
    });
}

/// Opens the local GTM again once the previous one is gone. Its lock can outlive it
/// briefly: a `gtm-server` that another test is spawning right then holds a copy of the
/// lock file's descriptor between its fork and its exec.
fn reopen(dir: &std::path::Path) -> GtmClient {
    for _ in 0..100 {
        match GtmClient::local(dir) {
            Err(e) if e.code == codes::OBJECT_NOT_IN_PREREQUISITE_STATE => {
                std::thread::sleep(Duration::from_millis(50))
            }
            r => return r.unwrap(),
        }
    }
    panic!("the GTM data directory stayed locked");
}
