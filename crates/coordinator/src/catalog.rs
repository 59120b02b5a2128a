//! The live catalog: user tables, stored as one record per table in the cluster's
//! metadata service (decision 0028; at the GTM, or beside the embedded GTM), and cached
//! in memory for binding.
//!
//! `version` numbers this coordinator's view: it moves whenever the cached tables change,
//! and prepared statements compare against it to know when to bind again. The view
//! follows the metadata service's version: a coordinator that sees a newer one on a GTM
//! answer (`catch_up`), or misses a table by name (`refresh`), reloads. DDL is applied
//! immediately (not transactional yet; see docs/architecture.md).

use distribution::{Datanodes, RelPlacement};
use meta::nodes::Node;
use meta::{MetaClient, WriteBatch, WriteOutcome};
use parking_lot::RwLock;
use pgerror::{codes, PgError, PgResult};
use sql::catalog::{Catalog, TableDef, FIRST_USER_OID};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const TABLE_PREFIX: &[u8] = b"catalog/table/";
/// A table's name → its OID: names are unique across coordinators by compare-and-set.
const NAME_PREFIX: &[u8] = b"catalog/name/";
const NEXT_OID_KEY: &[u8] = b"catalog/next_oid";

#[derive(Default)]
struct State {
    by_name: HashMap<String, Arc<TableDef>>,
    by_oid: HashMap<u32, Arc<TableDef>>,
    /// The cluster's registered nodes (for `meridian_nodes`).
    nodes: Vec<Node>,
}

pub struct LiveCatalog {
    state: RwLock<State>,
    version: AtomicU64,
    /// The metadata service's version that `state` reflects.
    loaded: AtomicU64,
    meta: MetaClient,
    datanodes: Arc<Datanodes>,
    /// Held across each write or reload and its in-memory update, so they apply in the
    /// order they are stored (`state`'s lock cannot be held across the await).
    writes: tokio::sync::Mutex<()>,
}

impl LiveCatalog {
    /// Loads the catalog, and tells `datanodes` where each table's rows live.
    pub async fn load(meta: MetaClient, datanodes: Arc<Datanodes>) -> PgResult<LiveCatalog> {
        let catalog = LiveCatalog {
            state: RwLock::new(State::default()),
            version: AtomicU64::new(1),
            loaded: AtomicU64::new(0),
            meta,
            datanodes,
            writes: tokio::sync::Mutex::new(()),
        };
        catalog.import_datanode_catalog().await?;
        catalog.reload().await?;
        Ok(catalog)
    }

    /// Data directories written before the metadata service kept their catalog on the
    /// (first) datanode, under the same keys, the next OID as decimal text: moved into
    /// the service once, when it has no catalog yet, then removed from the datanode.
    async fn import_datanode_catalog(&self) -> PgResult<()> {
        if !self.meta.scan(b"catalog/").await?.entries.is_empty() {
            return Ok(());
        }
        let tables = self.datanodes.meta_scan(TABLE_PREFIX).await?;
        if tables.is_empty() {
            return Ok(());
        }
        let mut batch = WriteBatch::default();
        for (key, value) in &tables {
            let table = decode_table(value)?;
            batch.expect.push((name_key(&table.name), None));
            batch.puts.push((
                name_key(&table.name),
                Some(table.oid.to_le_bytes().to_vec()),
            ));
            batch.puts.push((key.clone(), Some(value.clone())));
        }
        let next_oid = self.datanodes.meta_scan(NEXT_OID_KEY).await?;
        if let Some(next) = next_oid
            .first()
            .and_then(|(_, v)| String::from_utf8_lossy(v).parse::<u64>().ok())
        {
            batch
                .puts
                .push((NEXT_OID_KEY.to_vec(), Some(next.to_le_bytes().to_vec())));
        }
        if let WriteOutcome::Conflict { .. } = self.meta.write(batch).await? {
            return Ok(()); // another coordinator imported it meanwhile
        }
        tracing::info!(
            tables = tables.len(),
            "moved the catalog from the datanode to the metadata service"
        );
        for (key, _) in tables.iter().chain(&next_oid) {
            self.datanodes.meta_put(key, None).await?;
        }
        Ok(())
    }

    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Reloads if the metadata service is known to be past what this coordinator loaded
    /// (`seen`: the version the GTM last reported; no round trip when it is not newer).
    #[inline]
    pub async fn catch_up(&self, seen: u64) -> PgResult<()> {
        if seen <= self.loaded.load(Ordering::Acquire) {
            return Ok(());
        }
        let _writing = self.writes.lock().await;
        if seen > self.loaded.load(Ordering::Acquire) {
            self.reload_locked().await?;
        }
        Ok(())
    }

    /// Asks the metadata service for its version and reloads if it moved: true if it did
    /// (a statement that named an unknown table binds again).
    pub async fn refresh(&self) -> PgResult<bool> {
        let current = self.meta.version().await?;
        let before = self.loaded.load(Ordering::Acquire);
        self.catch_up(current).await?;
        Ok(self.loaded.load(Ordering::Acquire) > before)
    }

    async fn reload(&self) -> PgResult<()> {
        let _writing = self.writes.lock().await;
        self.reload_locked().await
    }

    async fn reload_locked(&self) -> PgResult<()> {
        let snapshot = self.meta.scan(TABLE_PREFIX).await?;
        let mut state = State {
            nodes: meta::nodes::nodes(&self.meta).await?,
            ..Default::default()
        };
        for (_, value) in snapshot.entries {
            let table = decode_table(&value)?;
            self.place(&table);
            let table = Arc::new(table);
            state.by_name.insert(table.name.clone(), table.clone());
            state.by_oid.insert(table.oid, table);
        }
        *self.state.write() = state;
        self.loaded.fetch_max(snapshot.version, Ordering::AcqRel);
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Tells the datanodes' router where the relations of `table` and its indexes place
    /// their rows.
    fn place(&self, table: &TableDef) {
        self.datanodes.place(table.rel, RelPlacement::of(table));
        for index in &table.indexes {
            self.datanodes
                .place(index.rel, RelPlacement::of_index(table, index));
        }
    }

    pub fn registered_nodes(&self) -> Vec<Node> {
        self.state.read().nodes.clone()
    }

    pub fn tables(&self) -> Vec<Arc<TableDef>> {
        let mut v: Vec<_> = self.state.read().by_oid.values().cloned().collect();
        v.sort_by_key(|t| t.oid);
        v
    }

    /// Reserve `n` consecutive OIDs, durably and uniquely across coordinators.
    pub async fn allocate_oids(&self, n: u32) -> PgResult<u32> {
        let first = self
            .meta
            .allocate(NEXT_OID_KEY, n as u64, FIRST_USER_OID as u64)
            .await?;
        u32::try_from(first + n as u64)
            .map(|_| first as u32)
            .map_err(|_| PgError::new(codes::PROGRAM_LIMIT_EXCEEDED, "OID space exhausted"))
    }

    /// Insert or replace a table definition, durably. A new table whose name another
    /// coordinator took meanwhile fails with 42P07.
    pub async fn put(&self, table: TableDef) -> PgResult<Arc<TableDef>> {
        let bytes = serde_json::to_vec(&table).map_err(|e| PgError::internal(e.to_string()))?;
        let _writing = self.writes.lock().await;
        let replaces = self.state.read().by_oid.contains_key(&table.oid);
        let name_key = name_key(&table.name);
        let oid_bytes = table.oid.to_le_bytes().to_vec();
        let batch = WriteBatch {
            expect: vec![(name_key.clone(), replaces.then(|| oid_bytes.clone()))],
            puts: vec![
                (table_key(table.oid), Some(bytes)),
                (name_key, Some(oid_bytes)),
            ],
        };
        let version = self.written(batch, &table.name).await?;
        let table = Arc::new(table);
        self.place(&table);
        self.apply(version, |st| {
            if let Some(old) = st.by_oid.insert(table.oid, table.clone()) {
                st.by_name.remove(&old.name);
            }
            st.by_name.insert(table.name.clone(), table.clone());
        })
        .await?;
        Ok(table)
    }

    pub async fn remove(&self, oid: u32) -> PgResult<()> {
        let _writing = self.writes.lock().await;
        let Some(old) = self.state.read().by_oid.get(&oid).cloned() else {
            return Ok(());
        };
        let batch = WriteBatch {
            expect: vec![(name_key(&old.name), Some(oid.to_le_bytes().to_vec()))],
            puts: vec![(table_key(oid), None), (name_key(&old.name), None)],
        };
        let version = self.written(batch, &old.name).await?;
        self.apply(version, |st| {
            st.by_oid.remove(&oid);
            st.by_name.remove(&old.name);
        })
        .await
    }

    /// Stores `batch`; a conflict on the table's name means another coordinator created
    /// or dropped it: this coordinator reloads and the statement fails.
    async fn written(&self, batch: WriteBatch, name: &str) -> PgResult<u64> {
        match self.meta.write(batch).await? {
            WriteOutcome::Written { version } => Ok(version),
            WriteOutcome::Conflict { .. } => {
                self.reload_locked().await?;
                Err(if self.state.read().by_name.contains_key(name) {
                    PgError::new(
                        codes::DUPLICATE_TABLE,
                        format!("relation \"{name}\" already exists"),
                    )
                } else {
                    PgError::new(
                        codes::UNDEFINED_TABLE,
                        format!("relation \"{name}\" does not exist"),
                    )
                })
            }
        }
    }

    /// Applies this coordinator's own write to the cache: in place when nothing else
    /// changed the metadata since the last load, else by reloading it all.
    async fn apply(&self, version: u64, change: impl FnOnce(&mut State)) -> PgResult<()> {
        if self.loaded.load(Ordering::Acquire) + 1 == version {
            change(&mut self.state.write());
            self.loaded.store(version, Ordering::Release);
            self.version.fetch_add(1, Ordering::AcqRel);
            Ok(())
        } else {
            self.reload_locked().await
        }
    }
}

fn decode_table(record: &[u8]) -> PgResult<TableDef> {
    serde_json::from_slice(record).map_err(|e| {
        PgError::new(
            codes::DATA_CORRUPTED,
            format!("catalog entry unreadable: {e}"),
        )
    })
}

fn table_key(oid: u32) -> Vec<u8> {
    let mut k = TABLE_PREFIX.to_vec();
    k.extend_from_slice(format!("{oid:010}").as_bytes());
    k
}

fn name_key(name: &str) -> Vec<u8> {
    let mut k = NAME_PREFIX.to_vec();
    k.extend_from_slice(name.as_bytes());
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

    fn pushes_down(&self) -> bool {
        self.datanodes.len() > 1
    }
}
