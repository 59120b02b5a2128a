//! Garbage collection: the work list of recently deleted keys, the background GC
//! thread, `gc(horizon)` and `vacuum(rel)`.

use crate::locks::FxHashSet;
use crate::{Datanode, Inner, RelId, Timestamp};
use pgerror::PgResult;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Keys (relation, key) deleted since they were last collected: one shard of the GC work
/// list.
pub(crate) type KeySet = FxHashSet<(RelId, Vec<u8>)>;
/// Shards of the GC work list (`Inner::recent`).
pub(crate) const RECENT_SHARDS: usize = 16;
/// Minimum time between two full-scan collections of one relation caused by overflow.
const FULL_GC_MIN_INTERVAL: Duration = Duration::from_secs(60);

impl Datanode {
    /// Starts a background thread that runs `gc(gtm.horizon())` every `interval`; also
    /// makes `vacuum` use the GTM's horizon. Stops when the datanode is dropped.
    pub fn start_gc(&self, gtm: gtm::GtmClient, interval: Duration) {
        *self.inner.gc_gtm.lock() = Some(gtm.clone());
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let h = std::thread::Builder::new()
            .name("meridian-gc".into())
            .spawn(move || loop {
                let deadline = std::time::Instant::now() + interval;
                loop {
                    let now = std::time::Instant::now();
                    if now >= deadline {
                        break;
                    }
                    std::thread::park_timeout(deadline - now);
                    match weak.upgrade() {
                        Some(inner) if !inner.closed.load(Ordering::Relaxed) => {
                            if inner.gc_kick.swap(false, Ordering::Relaxed) {
                                break;
                            }
                        }
                        _ => return,
                    }
                }
                let Some(inner) = weak.upgrade() else { return };
                if inner.closed.load(Ordering::Relaxed) {
                    return;
                }
                if let Err(e) = inner.gc(gtm.horizon()) {
                    tracing::warn!("background gc failed: {e}");
                }
            });
        if let Ok(h) = h {
            *self.inner.gc_thread.lock() = Some(h.thread().clone());
            self.inner.threads.lock().push(h);
        }
    }

    /// Full garbage collection of one relation at the current horizon (GTM horizon if
    /// `start_gc` was called, else the last horizon passed to `gc`); returns the number of
    /// versions removed, or None when the relation is known to hold nothing to collect
    /// and was not scanned (`single_version.rs`).
    pub fn vacuum(&self, rel: RelId) -> PgResult<Option<u64>> {
        if self.inner.single_version.contains(rel) {
            return Ok(None);
        }
        let horizon = match self.inner.gc_gtm.lock().as_ref() {
            Some(g) => g.horizon(),
            None => self.inner.last_horizon.load(Ordering::Relaxed),
        };
        let horizon = self.inner.committing.clamp_horizon(horizon);
        self.inner
            .last_horizon
            .fetch_max(horizon, Ordering::Relaxed);
        let _g = self.inner.gc_lock.lock();
        let removed = self.inner.store.gc_rel(rel, horizon)?;
        counted_gc_run(removed);
        Ok(Some(removed))
    }

    pub fn gc(&self, horizon: Timestamp) -> PgResult<u64> {
        self.inner.gc(horizon)
    }

    /// Number of keys waiting for GC (tests, monitoring).
    pub fn gc_tracked_keys(&self) -> usize {
        self.inner
            .recent
            .iter()
            .map(|s| s.lock().len())
            .sum::<usize>()
            + self.inner.store.superseded_len()
    }
}

impl Inner {
    pub(crate) fn note_written(&self, keys: impl Iterator<Item = (RelId, Vec<u8>)>) {
        for (rel, key) in keys {
            let i = (rel as usize
                ^ key
                    .iter()
                    .fold(0usize, |h, &b| h.wrapping_mul(31).wrapping_add(b as usize)))
                % RECENT_SHARDS;
            let mut s = self.recent[i].lock();
            if s.len() >= self.recent_cap && !s.contains(&(rel, key.clone())) {
                drop(s);
                self.overflow_rels.lock().insert(rel);
                // Collect early: usually the horizon has moved and the list drains.
                if !self.gc_kick.swap(true, Ordering::Relaxed) {
                    if let Some(t) = self.gc_thread.lock().as_ref() {
                        t.unpark();
                    }
                }
                continue;
            }
            s.insert((rel, key));
        }
    }

    fn gc(&self, horizon: Timestamp) -> PgResult<u64> {
        let horizon = self.committing.clamp_horizon(horizon);
        self.last_horizon.fetch_max(horizon, Ordering::Relaxed);
        let _g = self.gc_lock.lock();
        let mut removed = self.store.gc_superseded(horizon)?;
        self.overflow_rels
            .lock()
            .extend(self.store.take_superseded_overflow());
        // A dropped relation's keys are compaction's to remove (`Store::drop_rel`).
        let dropped = self.store.dropped_rels();
        let live = |rel: &RelId| dropped.binary_search(rel).is_err();
        for shard in self.recent.iter() {
            let keys: Vec<(RelId, Vec<u8>)> = std::mem::take(&mut *shard.lock())
                .into_iter()
                .filter(|(rel, _)| live(rel))
                .collect();
            for chunk in keys.chunks(1024) {
                let (n, again) = self.store.gc_keys(chunk, horizon)?;
                removed += n;
                let mut s = shard.lock();
                for (k, a) in chunk.iter().zip(again) {
                    if a {
                        s.insert(k.clone());
                    }
                }
            }
        }
        let rels: Vec<RelId> = std::mem::take(&mut *self.overflow_rels.lock())
            .into_iter()
            .filter(live)
            .collect();
        for rel in rels {
            let recent = self
                .last_full_gc
                .lock()
                .get(&rel)
                .is_some_and(|t| t.elapsed() < FULL_GC_MIN_INTERVAL);
            if recent {
                self.overflow_rels.lock().insert(rel); // later
                continue;
            }
            removed += self.store.gc_rel(rel, horizon)?;
            self.last_full_gc
                .lock()
                .insert(rel, std::time::Instant::now());
        }
        self.reap_drops()?;
        counted_gc_run(removed);
        Ok(removed)
    }
}

fn counted_gc_run(removed: u64) {
    let metrics = crate::metrics::metrics();
    metrics.gc_runs.inc();
    metrics.gc_versions_removed.inc_by(removed);
}
