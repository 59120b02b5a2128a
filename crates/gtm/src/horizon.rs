//! The ordered set of registered start timestamps (a multiset), whose minimum is the GC
//! horizon.
//!
//! Start timestamps are issued in increasing order and registered at the moment they
//! are issued (under the same lock), so new registrations always go to the high end. The
//! set is therefore kept as a sorted deque: register = `push_back` (O(1)); unregister =
//! exponential ("finger") search from the newest end, O(log d) where d is the distance
//! from the newest registration — O(1) for the usual short transaction, O(log N) at
//! worst — and the entry becomes a tombstone; minimum = the front (tombstones are popped
//! from both ends eagerly, and the region holding the others is compacted once they
//! outnumber its live entries, so memory stays O(live) and the amortized cost O(1)). Out-of-order registrations (a client
//! re-registering its open transactions after a reconnect) are rare and go to a small
//! `BTreeMap` beside the deque.
//!
//! A `BTreeMap` alone would also be O(log N), but its depth grows with the number of open
//! transactions, which made the per-transaction cost measurably depend on N (the thing
//! this GTM exists to avoid).

use std::collections::{BTreeMap, VecDeque};

use crate::Timestamp;

#[derive(Debug, Default)]
pub struct HorizonSet {
    /// Ascending by timestamp; `(ts, count)`, count 0 = tombstone. Front and back are
    /// never tombstones.
    q: VecDeque<(Timestamp, u32)>,
    /// Entries of `q` with count > 0.
    live: usize,
    /// Lower bound on the index of the first tombstone in `q` (`q.len()` if none): all
    /// tombstones lie in `q[first_dead..]`, the region that compaction rewrites.
    first_dead: usize,
    /// Registrations below `q`'s newest entry that were not in `q` (re-registrations).
    extra: BTreeMap<Timestamp, u32>,
}

impl HorizonSet {
    pub fn new() -> Self {
        HorizonSet {
            q: VecDeque::with_capacity(1024),
            live: 0,
            first_dead: 0,
            extra: BTreeMap::new(),
        }
    }

    /// Distinct registered timestamps.
    pub fn len(&self) -> usize {
        self.live + self.extra.len()
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0 && self.extra.is_empty()
    }

    /// Every registration (a timestamp registered twice appears twice), ascending within
    /// the deque part.
    pub fn to_vec(&self) -> Vec<Timestamp> {
        let mut v = Vec::with_capacity(self.live + self.extra.len());
        let deque = self.q.iter().map(|&(t, n)| (t, n));
        let extra = self.extra.iter().map(|(&t, &n)| (t, n));
        for (ts, n) in deque.chain(extra) {
            for _ in 0..n {
                v.push(ts);
            }
        }
        v
    }

    /// Removes and returns every registration (see [`HorizonSet::to_vec`]).
    pub fn drain(&mut self) -> Vec<Timestamp> {
        let v = self.to_vec();
        *self = HorizonSet::new();
        v
    }

    /// Minimum registered timestamp. O(1) for the deque; the extra map is almost always
    /// empty (its first key is O(log M) otherwise).
    #[inline]
    pub fn min(&self) -> Option<Timestamp> {
        let a = self.q.front().map(|e| e.0);
        if self.extra.is_empty() {
            return a;
        }
        let b = self.extra.keys().next().copied();
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Registers `ts`. O(1) when `ts` is above everything registered (the normal case).
    #[inline]
    pub fn insert(&mut self, ts: Timestamp) {
        if !self.extra.is_empty() {
            if let Some(c) = self.extra.get_mut(&ts) {
                *c += 1;
                return;
            }
        }
        match self.q.back_mut() {
            None => {}
            Some(b) if b.0 < ts => {}
            Some(b) if b.0 == ts => {
                b.1 += 1;
                return;
            }
            Some(_) => return self.insert_slow(ts),
        }
        self.q.push_back((ts, 1));
        self.live += 1;
    }

    #[cold]
    fn insert_slow(&mut self, ts: Timestamp) {
        if let Some(i) = self.find(ts) {
            let e = &mut self.q[i];
            if e.1 == 0 {
                self.live += 1;
            }
            e.1 += 1;
        } else {
            *self.extra.entry(ts).or_insert(0) += 1;
        }
    }

    /// Index of `ts` in `q`, searching from the newest end: O(log distance).
    #[inline]
    fn find(&self, ts: Timestamp) -> Option<usize> {
        let n = self.q.len();
        if n == 0 {
            return None;
        }
        // Gallop backwards: find lo such that q[lo].0 <= ts.
        let mut step = 1usize;
        let mut hi = n; // exclusive: q[hi..] are all > ts
        let lo;
        loop {
            let probe = hi.saturating_sub(step);
            let v = self.q[probe].0;
            if v == ts {
                return Some(probe);
            }
            if v < ts {
                lo = probe;
                break;
            }
            hi = probe;
            if probe == 0 {
                return None;
            }
            step *= 2;
        }
        // q[lo].0 < ts < q[hi].0 (hi exclusive bound of the candidates).
        let (mut l, mut h) = (lo + 1, hi);
        while l < h {
            let m = l + (h - l) / 2;
            let v = self.q[m].0;
            if v == ts {
                return Some(m);
            }
            if v < ts {
                l = m + 1;
            } else {
                h = m;
            }
        }
        None
    }

    /// Whether `ts` is registered. O(log distance from the newest registration).
    pub fn contains(&self, ts: Timestamp) -> bool {
        matches!(self.find(ts), Some(i) if self.q[i].1 > 0) || self.extra.contains_key(&ts)
    }

    /// Unregisters one registration of `ts`; false if it was not registered.
    #[inline]
    pub fn remove(&mut self, ts: Timestamp) -> bool {
        if let Some(i) = self.find(ts) {
            let e = &mut self.q[i];
            if e.1 == 0 {
                return self.remove_extra(ts);
            }
            e.1 -= 1;
            if e.1 == 0 {
                self.live -= 1;
                self.first_dead = self.first_dead.min(i);
                self.trim();
            }
            return true;
        }
        self.remove_extra(ts)
    }

    fn remove_extra(&mut self, ts: Timestamp) -> bool {
        if self.extra.is_empty() {
            return false;
        }
        match self.extra.get_mut(&ts) {
            Some(c) if *c > 1 => {
                *c -= 1;
                true
            }
            Some(_) => {
                self.extra.remove(&ts);
                true
            }
            None => false,
        }
    }

    fn trim(&mut self) {
        while matches!(self.q.front(), Some(e) if e.1 == 0) {
            self.q.pop_front();
            // Indices shift down by one; stays a lower bound on the first tombstone.
            self.first_dead = self.first_dead.saturating_sub(1);
        }
        while matches!(self.q.back(), Some(e) if e.1 == 0) {
            self.q.pop_back();
        }
        let len = self.q.len();
        if self.first_dead >= len {
            self.first_dead = len;
            return;
        }
        // Tombstones in the middle (a long transaction holds the front while short ones
        // come and go): compact the region that holds them once they outnumber the live
        // entries there. The region, and so the cost of compacting it and of searching
        // it, depends on the recent churn, not on how many old transactions sit in front
        // of it. Amortized O(1) per removal.
        let dead = len - self.live; // tombstones
        let region = len - self.first_dead;
        if dead > 64 && dead * 2 > region {
            let mut w = self.first_dead;
            for r in self.first_dead..len {
                let e = self.q[r];
                if e.1 > 0 {
                    self.q[w] = e;
                    w += 1;
                }
            }
            self.q.truncate(w);
            self.first_dead = w;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn to_vec_and_drain_keep_multiplicity() {
        let mut s = HorizonSet::new();
        for t in [5, 7, 9, 11] {
            s.insert(t);
        }
        s.insert(9); // twice
        s.remove(7);
        s.insert(3); // out of order: side map
        let mut v = s.to_vec();
        v.sort();
        assert_eq!(v, vec![3, 5, 9, 9, 11]);
        let mut d = s.drain();
        d.sort();
        assert_eq!(d, v);
        assert!(s.is_empty());
        assert_eq!(s.min(), None);
    }

    /// Deterministic random sequences against a BTreeMap model.
    #[test]
    fn matches_model() {
        let mut x: u64 = 0x853c_49e6_748f_ea9b;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..50 {
            let mut s = HorizonSet::new();
            let mut m: BTreeMap<u64, u32> = BTreeMap::new();
            let mut next = 1u64;
            let mut open: Vec<u64> = Vec::new();
            let mut done: Vec<u64> = Vec::new();
            for _ in 0..3000 {
                match rnd() % 10 {
                    0..=3 => {
                        next += 1 + rnd() % 3;
                        s.insert(next);
                        *m.entry(next).or_insert(0) += 1;
                        open.push(next);
                    }
                    4..=7 if !open.is_empty() => {
                        // Mostly recent ones, sometimes old ones.
                        let i = if rnd() % 4 == 0 {
                            (rnd() as usize) % open.len()
                        } else {
                            open.len() - 1 - (rnd() as usize) % open.len().min(4)
                        };
                        let t = open.swap_remove(i);
                        assert!(s.remove(t));
                        let c = m.get_mut(&t).unwrap();
                        *c -= 1;
                        if *c == 0 {
                            m.remove(&t);
                        }
                        done.push(t);
                    }
                    8 if !done.is_empty() => {
                        let t = done.swap_remove((rnd() as usize) % done.len());
                        s.insert(t);
                        *m.entry(t).or_insert(0) += 1;
                        open.push(t);
                    }
                    9 => assert!(!s.remove(next + 1000)),
                    _ => {}
                }
                assert_eq!(s.min(), m.keys().next().copied());
                let probe = next.saturating_sub(rnd() % 64);
                assert_eq!(s.contains(probe), m.contains_key(&probe));
                assert_eq!(s.len(), m.len());
                let dead = s.q.len() - s.live;
                assert!(dead <= 64 || dead * 2 <= s.q.len() - s.first_dead);
                assert!(s.q.iter().take(s.first_dead).all(|e| e.1 > 0));
            }
        }
    }
}
