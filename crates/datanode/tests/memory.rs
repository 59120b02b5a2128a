//! Bounded memory: with a 16 MiB cache, write ~4x that much (incompressible) data, read it
//! back, and check the process's peak RSS stays below cache + documented fixed overhead.
//! (Alone in its own test binary so that VmHWM measures only this.)

use bytes::Bytes;
use datanode::{Datanode, DatanodeOptions, Isolation};
use std::ops::Bound;

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    for line in s.lines() {
        if let Some(rest) = line.strip_prefix(field) {
            return rest.trim().trim_end_matches("kB").trim().parse().unwrap();
        }
    }
    panic!("{field} not in /proc/self/status");
}

fn row(i: u64, len: usize) -> Vec<u8> {
    // xorshift64*: incompressible but reproducible
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        v.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    v.truncate(len);
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_is_bounded_by_cache_size() {
    const MIB: u64 = 1024 * 1024;
    let cache = 16 * MIB;
    let row_len = 1000usize;
    let rows = (4 * cache) / row_len as u64; // ~64 MiB of row data
    let per_txn = 256;

    let baseline_kib = status_kib("VmRSS:");
    let dir = tempfile::tempdir().unwrap();
    let gtm = gtm::GtmClient::local(&dir.path().join("gtm")).unwrap();
    let mut opts = DatanodeOptions::new(dir.path().join("dn"));
    opts.cache_size = cache;
    let dn = Datanode::open(opts).unwrap();
    let rel = dn.create_rel().unwrap();

    let mut i = 0u64;
    while i < rows {
        let mut t = dn.begin(gtm.begin().await.unwrap(), Isolation::ReadCommitted);
        for _ in 0..per_txn {
            if i >= rows {
                break;
            }
            dn.insert(
                &mut t,
                rel,
                &i.to_be_bytes(),
                Bytes::from(row(i, row_len)),
                || pgerror::PgError::internal("dup"),
            )
            .await
            .unwrap();
            i += 1;
        }
        dn.commit(t, &gtm).await.unwrap();
    }
    let after_write_kib = status_kib("VmHWM:");

    // Read everything back: a full scan, then random point reads.
    let s = gtm.timestamp().await.unwrap();
    let t = dn.begin(s, Isolation::ReadCommitted);
    let mut n = 0u64;
    for r in dn
        .scan(&t, rel, Bound::Unbounded, Bound::Unbounded, s)
        .await
        .unwrap()
    {
        let (k, v) = r.unwrap();
        let id = u64::from_be_bytes(k[..8].try_into().unwrap());
        assert_eq!(id, n);
        assert_eq!(&v[..], &row(id, row_len)[..]);
        n += 1;
    }
    assert_eq!(n, rows);
    for j in 0..20_000u64 {
        let id = (j * 7919) % rows;
        let v = dn
            .get(&t, rel, &id.to_be_bytes(), s)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&v[..], &row(id, row_len)[..]);
    }
    drop(t);

    let hwm_kib = status_kib("VmHWM:");
    let disk: u64 = walk(&dir.path().join("dn"));
    let limit = cache + storage::FIXED_OVERHEAD_BYTES;
    println!(
        "memory: cache_size {} MiB, wrote {} MiB in {} rows (on disk {} MiB); RSS before open {} MiB, \
         peak RSS after writes {} MiB, peak RSS overall (VmHWM) {} MiB; limit cache + overhead = {} MiB",
        cache / MIB,
        rows * row_len as u64 / MIB,
        rows,
        disk / MIB,
        baseline_kib / 1024,
        after_write_kib / 1024,
        hwm_kib / 1024,
        limit / MIB
    );
    assert!(
        hwm_kib * 1024 < limit,
        "peak RSS {} MiB exceeds {} MiB",
        hwm_kib / 1024,
        limit / MIB
    );
}

fn walk(p: &std::path::Path) -> u64 {
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            let m = e.metadata().unwrap();
            n += if m.is_dir() { walk(&e.path()) } else { m.len() };
        }
    }
    n
}
