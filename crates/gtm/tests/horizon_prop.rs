//! The horizon equals the minimum registered start timestamp after random
//! register/unregister sequences (property test against a simple model).

use std::collections::BTreeMap;

use gtm::server::{Server, ServerOptions};
use gtm::{ClientOptions, GtmClient, Oracle, OracleOptions, Timestamp};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Begin,
    BeginN(u8),
    Timestamp,
    Commit(usize),
    Finish(usize),
    /// Finish of a timestamp that is not registered (must be a no-op).
    FinishUnknown,
    /// Re-register an already finished start timestamp (client reconnect path).
    Reregister(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Begin),
        1 => (1u8..5).prop_map(Op::BeginN),
        2 => Just(Op::Timestamp),
        3 => any::<usize>().prop_map(Op::Commit),
        3 => any::<usize>().prop_map(Op::Finish),
        1 => Just(Op::FinishUnknown),
        1 => any::<usize>().prop_map(Op::Reregister),
    ]
}

#[derive(Default)]
struct Model {
    reg: BTreeMap<Timestamp, u32>,
    open: Vec<Timestamp>,
    done: Vec<Timestamp>,
}

impl Model {
    fn add(&mut self, t: Timestamp) {
        *self.reg.entry(t).or_insert(0) += 1;
        self.open.push(t);
    }
    fn remove_at(&mut self, i: usize) -> Timestamp {
        let t = self.open.swap_remove(i);
        let c = self.reg.get_mut(&t).unwrap();
        *c -= 1;
        if *c == 0 {
            self.reg.remove(&t);
        }
        self.done.push(t);
        t
    }
    fn min(&self) -> Option<Timestamp> {
        self.reg.keys().next().copied()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn horizon_is_min_registered(ops in proptest::collection::vec(op(), 1..200)) {
        let dir = tempfile::tempdir().unwrap();
        let o = Oracle::open_with(dir.path(), OracleOptions { window: 1024 }).unwrap();
        let mut m = Model::default();
        let mut last = 0;
        for op in ops {
            match op {
                Op::Begin => { let t = o.begin().unwrap(); prop_assert!(t > last); last = t; m.add(t); }
                Op::BeginN(n) => {
                    let f = o.begin_n(n as u64).unwrap();
                    prop_assert!(f > last);
                    for t in f..f + n as u64 { m.add(t); }
                    last = f + n as u64 - 1;
                }
                Op::Timestamp => { let t = o.timestamp().unwrap(); prop_assert!(t > last); last = t; }
                Op::Commit(i) if !m.open.is_empty() => {
                    let s = m.remove_at(i % m.open.len());
                    let c = o.commit_n(&[s]).unwrap();
                    prop_assert!(c > last); last = c;
                }
                Op::Finish(i) if !m.open.is_empty() => {
                    let s = m.remove_at(i % m.open.len());
                    o.finish(&[s]);
                }
                Op::FinishUnknown => o.finish(&[last + 1_000_000]),
                Op::Reregister(i) if !m.done.is_empty() => {
                    let t = m.done.swap_remove(i % m.done.len());
                    o.register_existing(&[t]);
                    m.add(t);
                }
                _ => {}
            }
            let want = m.min().unwrap_or(o.peek_next());
            prop_assert_eq!(o.horizon(), want);
            prop_assert_eq!(o.registered_count(), m.reg.len());
        }
    }
}

/// The same through the wire: sequential requests on one client, so the horizon
/// piggy-backed on each reply is exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_horizon_follows_model() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::bind(
        dir.path().to_path_buf(),
        "127.0.0.1:0".parse().unwrap(),
        ServerOptions::default(),
    )
    .await
    .unwrap();
    let addr = s.local_addr().to_string();
    tokio::spawn(s.serve());
    let c = GtmClient::connect(&addr, ClientOptions::default())
        .await
        .unwrap();
    let mut m = Model::default();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut last = 0;
    for _ in 0..3000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        match x % 7 {
            0..=2 => {
                let t = c.begin().await.unwrap();
                m.add(t);
                last = t;
            }
            3 => last = c.timestamp().await.unwrap(),
            4 | 5 if !m.open.is_empty() => {
                let s = m.remove_at((x >> 8) as usize % m.open.len());
                last = c.commit(s).await.unwrap();
            }
            _ if !m.open.is_empty() => {
                let s = m.remove_at((x >> 8) as usize % m.open.len());
                c.finish(s).await.unwrap();
            }
            _ => {}
        }
        match m.min() {
            Some(min) => assert_eq!(c.horizon(), min),
            None => assert!(c.horizon() > last),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// The horizon set alone, with long sequences so that tombstone compaction runs:
    /// (kind, pick) pairs; kind 0-4 register a new timestamp, 5-8 unregister (pick
    /// chooses which, biased to recent ones), 9 re-registers a finished one.
    #[test]
    fn horizon_set_matches_model(ops in proptest::collection::vec((0u8..10, any::<u32>(), any::<bool>()), 1..3000)) {
        let mut s = gtm::horizon::HorizonSet::new();
        let mut m = Model::default();
        let mut next = 1u64;
        for (kind, pick, recent) in ops {
            match kind {
                0..=4 => { next += 1 + (pick % 3) as u64; s.insert(next); m.add(next); }
                5..=8 if !m.open.is_empty() => {
                    let n = m.open.len();
                    let i = if recent { n - 1 - (pick as usize % n.min(8)) } else { pick as usize % n };
                    let t = m.remove_at(i);
                    prop_assert!(s.remove(t));
                }
                9 if !m.done.is_empty() => {
                    let t = m.done.swap_remove(pick as usize % m.done.len());
                    s.insert(t);
                    m.add(t);
                }
                _ => prop_assert!(!s.remove(next + 7)),
            }
            prop_assert_eq!(s.min(), m.min());
            prop_assert_eq!(s.len(), m.reg.len());
        }
    }
}
