//! Crash recovery: a child process (this test binary, re-invoked) commits transactions
//! from several tasks and prints each acknowledged commit; the parent SIGKILLs it at random
//! moments, reopens the datanode and checks that every acknowledged commit is present and
//! that no transaction is partially visible, also among the transactions that spilled
//! their writes to storage.

use bytes::Bytes;
use datanode::{Datanode, DatanodeOptions, Isolation};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;
use std::ops::Bound;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "MERIDIAN_CRASH_CHILD_DIR";
const RUN_ENV: &str = "MERIDIAN_CRASH_RUN";
const SYNC_ENV: &str = "MERIDIAN_CRASH_SYNC";
const TASKS: u32 = 8;

fn opts(dir: &std::path::Path) -> DatanodeOptions {
    let mut o = DatanodeOptions::new(dir.join("dn"));
    o.cache_size = 16 << 20;
    // Most transactions (those with large rows) outgrow this and commit from spilled
    // intents: their atomicity and durability are checked with the others'.
    o.txn_memory = 2 << 10;
    o.synchronous_commit = std::env::var(SYNC_ENV).map(|v| v != "0").unwrap_or(true);
    o
}

/// Entry point of the child process; a no-op when run as an ordinary test.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let run: u32 = std::env::var(RUN_ENV).unwrap().parse().unwrap();
    let dir = std::path::PathBuf::from(dir);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let dn = Datanode::open(opts(&dir)).unwrap();
        let gtm = gtm::GtmClient::local(&dir.join("gtm")).unwrap();
        let rel = 1; // fixed relation id (rel ids are just key prefixes to the store)
        let mut hs = Vec::new();
        for task in 0..TASKS {
            let dn = dn.clone();
            let gtm = gtm.clone();
            hs.push(tokio::spawn(async move {
                let mut i = 0u64;
                loop {
                    i += 1;
                    let mut t = dn.begin(gtm.begin().await.unwrap(), Isolation::ReadCommitted);
                    let big = Bytes::from(vec![(i % 251) as u8; 200 + (i as usize * 37) % 3000]);
                    for part in ["a", "b"] {
                        let k = format!("r{run:02}-t{task:02}-{i:08}-{part}");
                        dn.insert(&mut t, rel, k.as_bytes(), big.clone(), || {
                            pgerror::PgError::internal("dup")
                        })
                        .await
                        .unwrap();
                    }
                    // A per-task row updated by every transaction of the task.
                    let ck = format!("counter-r{run:02}-t{task:02}");
                    dn.lock_row(&mut t, rel, ck.as_bytes()).await.unwrap();
                    dn.put(
                        &mut t,
                        rel,
                        ck.as_bytes(),
                        Some(Bytes::from(i.to_be_bytes().to_vec())),
                    )
                    .unwrap();
                    dn.commit(t, &gtm).await.unwrap();
                    println!("ACK {run} {task} {i}");
                }
            }));
        }
        for h in hs {
            h.await.unwrap();
        }
    });
}

#[test]
fn sigkill_loses_no_acknowledged_commit() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    // Runs 0-2 with synchronous commit; runs 3-4 with synchronous_commit = off, where an
    // acknowledged commit has at least reached the OS, so a process kill keeps it too.
    let runs = 5u32;
    let mut all_acks: Vec<(u32, u32, u64)> = Vec::new();
    for run in 0..runs {
        let mut child = Command::new(&exe)
            .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, dir.path())
            .env(RUN_ENV, run.to_string())
            .env(SYNC_ENV, if run < 3 { "1" } else { "0" })
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let acks: Arc<Mutex<Vec<(u32, u32, u64)>>> = Arc::default();
        let reader = {
            let acks = acks.clone();
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if let Some(rest) = line.strip_prefix("ACK ") {
                        let v: Vec<u64> = rest.split(' ').map(|x| x.parse().unwrap()).collect();
                        acks.lock().unwrap().push((v[0] as u32, v[1] as u32, v[2]));
                    }
                }
            })
        };
        // Let it get going, then kill it at a random moment.
        let start = Instant::now();
        while acks.lock().unwrap().len() < 20 {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "child made no progress"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let ms = 50 + rand::random::<u64>() % 1500;
        std::thread::sleep(Duration::from_millis(ms));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();
        let acks = std::mem::take(&mut *acks.lock().unwrap());
        println!(
            "run {run} (synchronous_commit {}): killed after {ms} ms, {} acknowledged commits",
            if run < 3 { "on" } else { "off" },
            acks.len()
        );
        all_acks.extend(acks);
        verify(dir.path(), &all_acks);
    }
}

fn verify(dir: &std::path::Path, acks: &[(u32, u32, u64)]) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dn = Datanode::open(opts(dir)).unwrap();
        let snap = u64::MAX;
        let t = dn.begin(snap, Isolation::ReadCommitted);
        let mut rows: BTreeMap<String, Bytes> = BTreeMap::new();
        for r in dn
            .scan(&t, 1, Bound::Unbounded, Bound::Unbounded, snap)
            .await
            .unwrap()
        {
            let (k, v) = r.unwrap();
            rows.insert(String::from_utf8(k).unwrap(), v);
        }
        // 1. Every acknowledged commit is there.
        for &(run, task, i) in acks {
            for part in ["a", "b"] {
                let k = format!("r{run:02}-t{task:02}-{i:08}-{part}");
                let v = rows
                    .get(&k)
                    .unwrap_or_else(|| panic!("acknowledged {k} lost"));
                assert_eq!(v.len(), 200 + (i as usize * 37) % 3000);
                assert!(v.iter().all(|&x| x == (i % 251) as u8));
            }
        }
        // 2. No partial transaction: a and b come in pairs, and each task's counter names
        // its newest transaction, whose rows exist, with no later transaction present.
        let mut newest: HashMap<(String, String), u64> = HashMap::new();
        let mut present: HashSet<String> = HashSet::new();
        for k in rows.keys() {
            if let Some(base) = k.strip_suffix("-a") {
                assert!(
                    rows.contains_key(&format!("{base}-b")),
                    "partial txn: {base}"
                );
                present.insert(base.to_string());
                let parts: Vec<&str> = base.split('-').collect();
                let i: u64 = parts[2].parse().unwrap();
                let e = newest
                    .entry((parts[0].to_string(), parts[1].to_string()))
                    .or_insert(0);
                *e = (*e).max(i);
            } else if let Some(base) = k.strip_suffix("-b") {
                assert!(
                    rows.contains_key(&format!("{base}-a")),
                    "partial txn: {base}"
                );
            }
        }
        for ((run, task), i) in &newest {
            let ck = format!("counter-{run}-{task}");
            let c = rows
                .get(&ck)
                .unwrap_or_else(|| panic!("counter {ck} missing"));
            let c = u64::from_be_bytes(c[..8].try_into().unwrap());
            assert_eq!(
                c, *i,
                "{ck} does not match the newest transaction of the task"
            );
        }
        for &(run, task, i) in acks {
            let ck = format!("counter-r{run:02}-t{task:02}");
            let c = u64::from_be_bytes(rows[&ck][..8].try_into().unwrap());
            assert!(c >= i);
        }
        println!(
            "verified {} rows, {} acknowledged commits",
            rows.len(),
            acks.len()
        );
    });
}
