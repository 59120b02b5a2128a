//! The memtables of `data` and `latest` stay within their budget under a long stream of
//! small commits of uniformly spread keys. That stream is what stopped fjall 3.1.13's
//! worker thread for good (its queue filled up with rotation requests while it compacted;
//! src/rotation.rs): nothing was flushed after that and the memtables grew without bound.

use bytes::Bytes;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use storage::{memory_split, Store, StoreOptions, Write, WriteOp};

#[test]
fn memtables_stay_bounded_under_many_small_commits() {
    let dir =
        std::env::temp_dir().join(format!("meridian-storage-memtables-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cache_size = 8 << 20;
    let (_, write_buffer, memtable) = memory_split(cache_size);
    let store = Store::open(StoreOptions {
        path: dir.clone(),
        cache_size,
    })
    .unwrap();

    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let row = Bytes::from(vec![b'x'; 200]);
    let commits: u64 = 300_000; // ~140 MB through both keyspaces: ~270 memtables of 512 KiB
    let mut in_flight = VecDeque::new();
    let mut largest = 0;
    for ts in 1..=commits {
        let key = rng.gen::<u64>().to_be_bytes().to_vec();
        let write = Write {
            rel: 1,
            key,
            op: WriteOp::Put(Some(row.clone())),
            newest_before: None,
        };
        in_flight.push_back(store.apply(&[write], ts, false, None));
        if in_flight.len() >= 256 {
            in_flight
                .pop_front()
                .unwrap()
                .blocking_recv()
                .unwrap()
                .unwrap();
        }
        if ts % 500 == 0 {
            largest = largest.max(store.write_buffer_size());
        }
    }
    for rx in in_flight {
        rx.blocking_recv().unwrap().unwrap();
    }
    // The budget plus one memtable of slack per keyspace for rotations in progress and
    // the small `meta` and `sys` memtables.
    let bound = write_buffer + 2 * memtable + (2 << 20);
    assert!(
        largest <= bound,
        "memtables reached {largest} bytes; the budget is {write_buffer} (+ slack: {bound})"
    );
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
