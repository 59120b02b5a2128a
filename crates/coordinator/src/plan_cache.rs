//! Plans shared by the sessions of one executor thread.
//!
//! Why: pgbench and most drivers prepare the same statement texts on every connection.
//! One plan per session puts a copy of the plan tree in memory per connection, and with
//! 1,000 connections the copy a statement walks has always gone cold in the CPU cache
//! since that session's last statement. Sessions stay on their executor thread
//! (executors.rs), so a thread-local cache serves all of that thread's sessions with one
//! tree, and the plan's reference counts never move between cores.
//!
//! Invariant: a cached value depends only on its key and on the catalog version it
//! records (binding reads no session state), so any session may use it; values are
//! immutable, and users check the catalog version before running a plan.

use rustc_hash::FxHashMap;
use std::sync::Arc;

/// A bounded map from cache key to shared value; cleared when full (a workload with more
/// distinct statements than this rebuilds its plans now and then instead of growing).
pub struct PlanCache<V> {
    entries: FxHashMap<String, Arc<V>>,
    capacity: usize,
}

impl<V> PlanCache<V> {
    pub fn new(capacity: usize) -> Self {
        PlanCache {
            entries: FxHashMap::default(),
            capacity,
        }
    }

    pub fn get(&self, key: &str) -> Option<Arc<V>> {
        self.entries.get(key).cloned()
    }

    /// Caches `value` under `key` (replacing an older value) and returns the shared copy.
    pub fn insert(&mut self, key: String, value: V) -> Arc<V> {
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&key) {
            self.entries.clear();
        }
        let value = Arc::new(value);
        self.entries.insert(key, value.clone());
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_one_value_per_key_and_stays_bounded() {
        let mut cache = PlanCache::new(2);
        let a = cache.insert("a".into(), 1);
        assert!(Arc::ptr_eq(&a, &cache.get("a").unwrap()));
        cache.insert("b".into(), 2);
        // Replacing an existing key does not clear.
        cache.insert("a".into(), 3);
        assert_eq!(*cache.get("a").unwrap(), 3);
        assert_eq!(*cache.get("b").unwrap(), 2);
        // A third key clears the full cache first.
        cache.insert("c".into(), 4);
        assert!(cache.get("a").is_none() && cache.get("b").is_none());
        assert_eq!(*cache.get("c").unwrap(), 4);
    }
}
