//! The session's portals (bound statements ready to Execute).

use super::extended::Prepared;
use crate::exec::Row;
use rustc_hash::FxHashMap;
use sql::plan::BoundStatement;
use std::sync::Arc;
use types::Value;

pub(super) struct Portal {
    pub(super) bound: Arc<BoundStatement>,
    /// The prepared statement it was bound from (to bind again if the catalog moves).
    pub(super) statement: Arc<Prepared>,
    /// Set when the portal runs its prepared statement's own plan with every column in
    /// text format: that statement's `text_description` then describes the portal.
    pub(super) described_by: Option<Arc<Prepared>>,
    pub(super) params: Vec<Value>,
    pub(super) result_formats: Vec<i16>,
    /// Rows produced but not yet sent (after an Execute with a row limit).
    pub(super) pending: Option<(std::collections::VecDeque<Row>, String)>,
    /// Whether pg_stat_statements records its execution (see `Session::utility_counted`).
    pub(super) tracked: bool,
}

/// The session's portals. Drivers run nearly every statement through the unnamed portal
/// (Bind, Describe, Execute, then Sync closes it): it has its own slot, so those four
/// steps touch no map (with 1,000 sessions, each map is memory gone cold between two
/// statements of its session).
#[derive(Default)]
pub(super) struct Portals {
    unnamed: Option<Portal>,
    named: FxHashMap<String, Portal>,
}

impl Portals {
    pub(super) fn insert(&mut self, name: String, portal: Portal) {
        if name.is_empty() {
            self.unnamed = Some(portal);
        } else {
            self.named.insert(name, portal);
        }
    }

    pub(super) fn get(&self, name: &str) -> Option<&Portal> {
        if name.is_empty() {
            self.unnamed.as_ref()
        } else {
            self.named.get(name)
        }
    }

    pub(super) fn remove(&mut self, name: &str) -> Option<Portal> {
        if name.is_empty() {
            self.unnamed.take()
        } else {
            self.named.remove(name)
        }
    }

    pub(super) fn clear(&mut self) {
        self.unnamed = None;
        self.named.clear();
    }
}
