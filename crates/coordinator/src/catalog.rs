//! The live catalog: user tables, persisted as one metadata record per table through the
//! datanode's durable metadata interface, and cached in memory for binding.
//!
//! Every change bumps `version`, which prepared statements compare against to know when
//! to bind again. DDL is applied immediately (not transactional yet; see
//! docs/architecture.md).

use distribution::{Datanodes, RelPlacement};
use parking_lot::RwLock;
use pgerror::{codes, PgError, PgResult};
use sql::catalog::{Catalog, TableDef, FIRST_USER_OID};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const TABLE_PREFIX: &[u8] = b"catalog/table/";
const NEXT_OID_KEY: &[u8] = b"catalog/next_oid";

#[derive(Default)]
struct State {
    by_name: HashMap<String, Arc<TableDef>>,
    by_oid: HashMap<u32, Arc<TableDef>>,
    next_oid: u32,
}

pub struct LiveCatalog {
    state: RwLock<State>,
    version: AtomicU64,
    datanodes: Arc<Datanodes>,
    /// Held across each durable write and its in-memory update, so catalog writes apply
    /// in the order they are stored (`state`'s lock cannot be held across the await).
    writes: tokio::sync::Mutex<()>,
}

impl LiveCatalog {
    /// Loads the catalog, and tells `datanodes` where each table's rows live.
    pub async fn load(datanodes: Arc<Datanodes>) -> PgResult<LiveCatalog> {
        let mut state = State {
            next_oid: FIRST_USER_OID,
            ..Default::default()
        };
        for (_, value) in datanodes.meta_scan(TABLE_PREFIX).await? {
            let table: TableDef = serde_json::from_slice(&value).map_err(|e| {
                PgError::new(
                    codes::DATA_CORRUPTED,
                    format!("catalog entry unreadable: {e}"),
                )
            })?;
            datanodes.place(table.rel, RelPlacement::of(&table));
            let table = Arc::new(table);
            state.by_name.insert(table.name.clone(), table.clone());
            state.by_oid.insert(table.oid, table);
        }
        if let Some((_, v)) = datanodes.meta_scan(NEXT_OID_KEY).await?.into_iter().next() {
            state.next_oid = String::from_utf8_lossy(&v)
                .parse()
                .unwrap_or(FIRST_USER_OID);
        }
        Ok(LiveCatalog {
            state: RwLock::new(state),
            version: AtomicU64::new(1),
            datanodes,
            writes: tokio::sync::Mutex::new(()),
        })
    }

    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    pub fn tables(&self) -> Vec<Arc<TableDef>> {
        let mut v: Vec<_> = self.state.read().by_oid.values().cloned().collect();
        v.sort_by_key(|t| t.oid);
        v
    }

    /// Reserve `n` consecutive OIDs, durably.
    pub async fn allocate_oids(&self, n: u32) -> PgResult<u32> {
        let _writing = self.writes.lock().await;
        let first = self.state.read().next_oid;
        let next = first + n;
        self.datanodes
            .meta_put(NEXT_OID_KEY, Some(next.to_string().as_bytes()))
            .await?;
        self.state.write().next_oid = next;
        Ok(first)
    }

    /// Insert or replace a table definition, durably.
    pub async fn put(&self, table: TableDef) -> PgResult<Arc<TableDef>> {
        let bytes = serde_json::to_vec(&table).map_err(|e| PgError::internal(e.to_string()))?;
        let _writing = self.writes.lock().await;
        self.datanodes
            .meta_put(&table_key(table.oid), Some(&bytes))
            .await?;
        let mut st = self.state.write();
        let table = Arc::new(table);
        if let Some(old) = st.by_oid.insert(table.oid, table.clone()) {
            st.by_name.remove(&old.name);
        }
        st.by_name.insert(table.name.clone(), table.clone());
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(table)
    }

    pub async fn remove(&self, oid: u32) -> PgResult<()> {
        let _writing = self.writes.lock().await;
        self.datanodes.meta_put(&table_key(oid), None).await?;
        let mut st = self.state.write();
        if let Some(old) = st.by_oid.remove(&oid) {
            st.by_name.remove(&old.name);
        }
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

fn table_key(oid: u32) -> Vec<u8> {
    let mut k = TABLE_PREFIX.to_vec();
    k.extend_from_slice(format!("{oid:010}").as_bytes());
    k
}

impl Catalog for LiveCatalog {
    fn table(&self, schema: Option<&str>, name: &str) -> Option<Arc<TableDef>> {
        match schema {
            None | Some("public") => self.state.read().by_name.get(name).cloned(),
            Some(_) => None,
        }
    }

    fn table_by_oid(&self, oid: u32) -> Option<Arc<TableDef>> {
        self.state.read().by_oid.get(&oid).cloned()
    }
}
