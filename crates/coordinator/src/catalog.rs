//! The live catalog: user tables, stored as one record per table in the cluster's
//! metadata service (decision 0028; at the GTM, or beside the embedded GTM), and cached
//! in memory for binding.
//!
//! `version` numbers this coordinator's view: it moves whenever the cached tables change,
//! and prepared statements compare against it to know when to bind again. The view
//! follows the metadata service's version: a coordinator that sees a newer one on a GTM
//! answer (`catch_up`), or misses a table by name (`refresh`), reloads. DDL writes here
//! as it runs, through its transaction's `DdlLog`, which undoes it on rollback
//! (decision 0038).

use distribution::{Datanodes, RelPlacement};
use meta::nodes::Node;
use meta::{MetaClient, WriteBatch, WriteOutcome};
use parking_lot::RwLock;
use pgerror::{codes, PgError, PgResult};
use sql::catalog::{Catalog, TableDef, FIRST_USER_OID};
use sql::sequence::{Identity, SequenceDef};
use sql::view::ViewDef;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const TABLE_PREFIX: &[u8] = b"catalog/table/";
/// A table's name → its OID: names are unique across coordinators by compare-and-set.
const NAME_PREFIX: &[u8] = b"catalog/name/";
const NEXT_OID_KEY: &[u8] = b"catalog/next_oid";
/// A sequence's definition (JSON), under its OID; its name is under `NAME_PREFIX` with the
/// tables' (one namespace of relations).
const SEQUENCE_PREFIX: &[u8] = b"catalog/sequence/";
/// A view's definition (JSON), under its OID; its name is under `NAME_PREFIX` too.
const VIEW_PREFIX: &[u8] = b"catalog/view/";
/// A sequence's counter in the metadata service (decision 0034), under its OID.
const SEQUENCE_COUNTER_PREFIX: &[u8] = b"sequence/next/";

#[derive(Default)]
struct State {
    by_name: HashMap<String, Arc<TableDef>>,
    by_oid: HashMap<u32, Arc<TableDef>>,
    /// The cluster's registered nodes (for `meridian_nodes`).
    nodes: Vec<Node>,
    sequences_by_name: HashMap<String, Arc<SequenceDef>>,
    sequences_by_oid: HashMap<u32, Arc<SequenceDef>>,
    views_by_name: HashMap<String, Arc<ViewDef>>,
    views_by_oid: HashMap<u32, Arc<ViewDef>>,
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
        let sequences = self.meta.scan(SEQUENCE_PREFIX).await?;
        let views = self.meta.scan(VIEW_PREFIX).await?;
        let mut state = State {
            nodes: meta::nodes::nodes(&self.meta).await?,
            ..Default::default()
        };
        for (_, value) in sequences.entries {
            let sequence = Arc::new(decode_sequence(&value)?);
            state
                .sequences_by_name
                .insert(sequence.name.clone(), sequence.clone());
            state.sequences_by_oid.insert(sequence.oid, sequence);
        }
        for (_, value) in views.entries {
            let view: Arc<ViewDef> = Arc::new(serde_json::from_slice(&value).map_err(unreadable)?);
            state.views_by_name.insert(view.name.clone(), view.clone());
            state.views_by_oid.insert(view.oid, view);
        }
        for (_, value) in snapshot.entries {
            let table = decode_table(&value)?;
            self.place(&table);
            let table = Arc::new(table);
            state.by_name.insert(table.name.clone(), table.clone());
            state.by_oid.insert(table.oid, table);
        }
        *self.state.write() = state;
        // The older of the two reads: a change between them is loaded again.
        let version = snapshot.version.min(sequences.version).min(views.version);
        self.loaded.fetch_max(version, Ordering::AcqRel);
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
        let old_name = self
            .state
            .read()
            .by_oid
            .get(&table.oid)
            .map(|t| t.name.clone());
        let name_key = name_key(&table.name);
        let oid_bytes = table.oid.to_le_bytes().to_vec();
        let mut batch = WriteBatch {
            expect: vec![(
                name_key.clone(),
                (old_name.as_ref() == Some(&table.name)).then(|| oid_bytes.clone()),
            )],
            puts: vec![
                (table_key(table.oid), Some(bytes)),
                (name_key, Some(oid_bytes.clone())),
            ],
        };
        // Renamed: the old name is released in the same write.
        if let Some(old) = old_name.filter(|n| *n != table.name) {
            batch.expect.push((self::name_key(&old), Some(oid_bytes)));
            batch.puts.push((self::name_key(&old), None));
        }
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

    pub fn sequences(&self) -> Vec<Arc<SequenceDef>> {
        let mut v: Vec<_> = self
            .state
            .read()
            .sequences_by_oid
            .values()
            .cloned()
            .collect();
        v.sort_by_key(|s| s.oid);
        v
    }

    pub fn sequence_by_oid(&self, oid: u32) -> Option<Arc<SequenceDef>> {
        self.state.read().sequences_by_oid.get(&oid).cloned()
    }

    /// The key of a sequence's counter in the metadata service.
    pub fn sequence_counter_key(oid: u32) -> Vec<u8> {
        let mut k = SEQUENCE_COUNTER_PREFIX.to_vec();
        k.extend_from_slice(format!("{oid:010}").as_bytes());
        k
    }

    /// Insert or replace a sequence's definition, durably; a new one whose name another
    /// relation holds fails with 42P07.
    pub async fn put_sequence(&self, sequence: SequenceDef) -> PgResult<Arc<SequenceDef>> {
        let bytes = serde_json::to_vec(&sequence).map_err(|e| PgError::internal(e.to_string()))?;
        let _writing = self.writes.lock().await;
        let replaces = self
            .state
            .read()
            .sequences_by_oid
            .contains_key(&sequence.oid);
        let name_key = name_key(&sequence.name);
        let oid_bytes = sequence.oid.to_le_bytes().to_vec();
        let batch = WriteBatch {
            expect: vec![(name_key.clone(), replaces.then(|| oid_bytes.clone()))],
            puts: vec![
                (sequence_key(sequence.oid), Some(bytes)),
                (name_key, Some(oid_bytes)),
            ],
        };
        let version = self.written(batch, &sequence.name).await?;
        let sequence = Arc::new(sequence);
        self.apply(version, |st| {
            st.sequences_by_oid.insert(sequence.oid, sequence.clone());
            st.sequences_by_name
                .insert(sequence.name.clone(), sequence.clone());
        })
        .await?;
        Ok(sequence)
    }

    /// Drops a sequence's definition and name (its counter stays until
    /// `drop_sequence_counter`: a rollback may bring the sequence back).
    pub async fn remove_sequence(&self, oid: u32) -> PgResult<()> {
        let _writing = self.writes.lock().await;
        let Some(old) = self.state.read().sequences_by_oid.get(&oid).cloned() else {
            return Ok(());
        };
        let batch = WriteBatch {
            expect: vec![(name_key(&old.name), Some(oid.to_le_bytes().to_vec()))],
            puts: vec![(sequence_key(oid), None), (name_key(&old.name), None)],
        };
        let version = self.written(batch, &old.name).await?;
        self.apply(version, |st| {
            st.sequences_by_oid.remove(&oid);
            st.sequences_by_name.remove(&old.name);
        })
        .await
    }

    pub fn views(&self) -> Vec<Arc<ViewDef>> {
        let mut v: Vec<_> = self.state.read().views_by_oid.values().cloned().collect();
        v.sort_by_key(|v| v.oid);
        v
    }

    pub fn view_by_oid(&self, oid: u32) -> Option<Arc<ViewDef>> {
        self.state.read().views_by_oid.get(&oid).cloned()
    }

    /// Insert or replace a view's definition, durably (a rename releases the old name
    /// in the same write); a name another relation holds fails with 42P07.
    pub async fn put_view(&self, view: ViewDef) -> PgResult<Arc<ViewDef>> {
        let bytes = serde_json::to_vec(&view).map_err(|e| PgError::internal(e.to_string()))?;
        let _writing = self.writes.lock().await;
        let old_name = self
            .state
            .read()
            .views_by_oid
            .get(&view.oid)
            .map(|v| v.name.clone());
        let oid_bytes = view.oid.to_le_bytes().to_vec();
        let mut batch = WriteBatch {
            expect: vec![(
                name_key(&view.name),
                (old_name.as_ref() == Some(&view.name)).then(|| oid_bytes.clone()),
            )],
            puts: vec![
                (view_key(view.oid), Some(bytes)),
                (name_key(&view.name), Some(oid_bytes.clone())),
            ],
        };
        if let Some(old) = old_name.filter(|n| *n != view.name) {
            batch.expect.push((name_key(&old), Some(oid_bytes)));
            batch.puts.push((name_key(&old), None));
        }
        let version = self.written(batch, &view.name).await?;
        let view = Arc::new(view);
        self.apply(version, |st| {
            if let Some(old) = st.views_by_oid.insert(view.oid, view.clone()) {
                st.views_by_name.remove(&old.name);
            }
            st.views_by_name.insert(view.name.clone(), view.clone());
        })
        .await?;
        Ok(view)
    }

    pub async fn remove_view(&self, oid: u32) -> PgResult<()> {
        let _writing = self.writes.lock().await;
        let Some(old) = self.state.read().views_by_oid.get(&oid).cloned() else {
            return Ok(());
        };
        let batch = WriteBatch {
            expect: vec![(name_key(&old.name), Some(oid.to_le_bytes().to_vec()))],
            puts: vec![(view_key(oid), None), (name_key(&old.name), None)],
        };
        let version = self.written(batch, &old.name).await?;
        self.apply(version, |st| {
            st.views_by_oid.remove(&oid);
            st.views_by_name.remove(&old.name);
        })
        .await
    }

    /// Removes the counter of a dropped sequence.
    pub async fn drop_sequence_counter(&self, oid: u32) -> PgResult<()> {
        let batch = WriteBatch {
            expect: Vec::new(),
            puts: vec![(Self::sequence_counter_key(oid), None)],
        };
        self.meta.write(batch).await.map(drop)
    }

    /// Stores `batch`; a conflict on the table's name means another coordinator created
    /// or dropped it: this coordinator reloads and the statement fails.
    async fn written(&self, batch: WriteBatch, name: &str) -> PgResult<u64> {
        match self.meta.write(batch).await? {
            WriteOutcome::Written { version } => Ok(version),
            WriteOutcome::Conflict { .. } => {
                self.reload_locked().await?;
                let state = self.state.read();
                let exists = state.by_name.contains_key(name)
                    || state.sequences_by_name.contains_key(name)
                    || state.views_by_name.contains_key(name);
                Err(if exists {
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
    serde_json::from_slice(record).map_err(unreadable)
}

fn decode_sequence(record: &[u8]) -> PgResult<SequenceDef> {
    serde_json::from_slice(record).map_err(unreadable)
}

fn unreadable(e: serde_json::Error) -> PgError {
    PgError::new(
        codes::DATA_CORRUPTED,
        format!("catalog entry unreadable: {e}"),
    )
}

fn table_key(oid: u32) -> Vec<u8> {
    let mut k = TABLE_PREFIX.to_vec();
    k.extend_from_slice(format!("{oid:010}").as_bytes());
    k
}

fn sequence_key(oid: u32) -> Vec<u8> {
    let mut k = SEQUENCE_PREFIX.to_vec();
    k.extend_from_slice(format!("{oid:010}").as_bytes());
    k
}

fn view_key(oid: u32) -> Vec<u8> {
    let mut k = VIEW_PREFIX.to_vec();
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

    fn referencing(&self, oid: u32) -> Vec<Arc<TableDef>> {
        let mut v: Vec<_> = (self.state.read().by_oid.values())
            .filter(|t| t.foreign_keys.iter().any(|fk| fk.parent == oid))
            .cloned()
            .collect();
        v.sort_by_key(|t| t.oid);
        v
    }

    fn pushes_down(&self) -> bool {
        self.datanodes.len() > 1
    }

    fn sequence(&self, name: &str) -> Option<Arc<SequenceDef>> {
        self.state.read().sequences_by_name.get(name).cloned()
    }

    fn view(&self, name: &str) -> Option<Arc<ViewDef>> {
        self.state.read().views_by_name.get(name).cloned()
    }

    fn identity(&self, table: u32, column: usize) -> Option<Identity> {
        let owner = Some(sql::sequence::OwnedBy { table, column });
        self.state
            .read()
            .sequences_by_oid
            .values()
            .find(|s| s.owned_by == owner)
            .and_then(|s| s.identity)
    }
}
