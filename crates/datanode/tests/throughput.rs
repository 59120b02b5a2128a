//! Informational (ignored by default): TPC-B-like commit throughput with many concurrent
//! sessions. Run with `cargo test -p datanode --test throughput -- --ignored --nocapture`.

use bytes::Bytes;
use datanode::{Datanode, DatanodeOptions, Isolation};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn tpcb_like_throughput() {
    let dir = tempfile::tempdir().unwrap();
    let gtm = gtm::GtmClient::local(&dir.path().join("gtm")).unwrap();
    let dn = Datanode::open(DatanodeOptions::new(dir.path().join("dn"))).unwrap();
    let accounts = dn.create_rel().unwrap();
    let history = dn.create_rel().unwrap();
    let n_acc = 100_000u64;
    let mut t = dn.begin(gtm.begin().await.unwrap(), Isolation::ReadCommitted);
    for i in 0..n_acc {
        dn.insert(
            &mut t,
            accounts,
            &i.to_be_bytes(),
            Bytes::from(vec![0u8; 90]),
            || pgerror::PgError::internal("dup"),
        )
        .await
        .unwrap();
    }
    dn.commit(t, &gtm).await.unwrap();
    for clients in [1usize, 16, 64, 256] {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let mut hs = Vec::new();
        for c in 0..clients {
            let (dn, gtm, stop, done) = (dn.clone(), gtm.clone(), stop.clone(), done.clone());
            hs.push(tokio::spawn(async move {
                let mut x = c as u64 * 7919 + 1;
                while !stop.load(Ordering::Relaxed) {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let aid = (x >> 20) % n_acc;
                    let mut t = dn.begin(gtm.begin().await.unwrap(), Isolation::ReadCommitted);
                    let row = dn
                        .lock_row(&mut t, accounts, &aid.to_be_bytes())
                        .await
                        .unwrap()
                        .unwrap();
                    dn.put(&mut t, accounts, &aid.to_be_bytes(), Some(row))
                        .unwrap();
                    let hid = dn.allocate_row_ids(history, 1).unwrap();
                    dn.insert(
                        &mut t,
                        history,
                        &hid.to_be_bytes(),
                        Bytes::from(vec![1u8; 50]),
                        || pgerror::PgError::internal("dup"),
                    )
                    .await
                    .unwrap();
                    dn.commit(t, &gtm).await.unwrap();
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(3)).await;
        stop.store(true, Ordering::Relaxed);
        for h in hs {
            h.await.unwrap();
        }
        let n = done.load(Ordering::Relaxed);
        let st = dn.storage().writer_stats();
        println!(
            "{clients:4} clients: {:8.0} commits/s (fsyncs so far {})",
            n as f64 / start.elapsed().as_secs_f64(),
            st.fsyncs.load(Ordering::Relaxed)
        );
    }
}
