//! Dropped relations. A drop removes at once every table of `data` and `latest` that
//! holds nothing but the relation's keys (fjall's `drop_range`, no per-key work), and
//! leaves the relation's keys in tables shared with other relations to a compaction
//! filter, which destroys them when compaction rewrites those tables. Nothing reads a
//! dropped relation and relation ids are never reused, so until then those keys are
//! only space. Writing a tombstone per remaining key instead cost a core for seconds
//! after each DROP or TRUNCATE of a large table, and the tombstones, flushed beside the
//! next bulk load's tables, made fjall merge that load's tables (gigabytes) with
//! everything between, where it otherwise moves them down untouched.

use crate::RelId;
use fjall::compaction::filter::{
    CompactionFilter, CompactionFilterResult, Context, Factory, ItemAccessor, Verdict,
};
use std::sync::{Arc, RwLock};

/// The relations dropped whose keys may remain, sorted. Shared by the store and the
/// compaction filters of `data` and `latest`; each compaction reads one copy of it.
#[derive(Default)]
pub(crate) struct DroppedRels(RwLock<Arc<Vec<RelId>>>);

impl DroppedRels {
    pub(crate) fn insert(&self, rel: RelId) {
        let mut rels = self.0.write().unwrap_or_else(|e| e.into_inner());
        if let Err(i) = rels.binary_search(&rel) {
            Arc::make_mut(&mut rels).insert(i, rel);
        }
    }

    pub(crate) fn remove(&self, rel: RelId) {
        let mut rels = self.0.write().unwrap_or_else(|e| e.into_inner());
        if let Ok(i) = rels.binary_search(&rel) {
            Arc::make_mut(&mut rels).remove(i);
        }
    }

    pub(crate) fn list(&self) -> Arc<Vec<RelId>> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Installs `DroppedKeysFilter` on the keyspaces that hold relations' keys.
pub(crate) struct DroppedKeysFactory(pub(crate) Arc<DroppedRels>);

impl Factory for DroppedKeysFactory {
    fn name(&self) -> &str {
        "meridian-dropped-relations"
    }

    fn make_filter(&self, _: &Context) -> Box<dyn CompactionFilter> {
        Box::new(DroppedKeysFilter {
            rels: self.0.list(),
            last: None,
        })
    }
}

/// Destroys the keys of dropped relations (every key starts with its relation id).
struct DroppedKeysFilter {
    rels: Arc<Vec<RelId>>,
    /// The last relation looked up and whether it is dropped: keys come in order.
    last: Option<(RelId, bool)>,
}

impl CompactionFilter for DroppedKeysFilter {
    fn filter_item(&mut self, item: ItemAccessor<'_>, _: &Context) -> CompactionFilterResult {
        if self.rels.is_empty() {
            return Ok(Verdict::Keep);
        }
        let Some(rel) = item.key().get(..8).and_then(|b| b.try_into().ok()) else {
            return Ok(Verdict::Keep);
        };
        let rel = RelId::from_be_bytes(rel);
        let dropped = match self.last {
            Some((r, dropped)) if r == rel => dropped,
            _ => {
                let dropped = self.rels.binary_search(&rel).is_ok();
                self.last = Some((rel, dropped));
                dropped
            }
        };
        Ok(if dropped {
            Verdict::Destroy
        } else {
            Verdict::Keep
        })
    }
}
