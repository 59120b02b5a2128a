//! The live catalog: user tables (and sequences, views, roles, enum types), stored as one record per table in the cluster's
//! metadata service (decision 0028; at the GTM, or beside the embedded GTM), and cached
//! in memory for binding.
//!
//! `version` numbers this coordinator's view: it moves whenever the cached tables change,
//! and prepared statements compare against it to know when to bind again. The view
//! follows the metadata service's version: a coordinator that sees a newer one on a GTM
//! answer (`catch_up`), or misses a table by name (`refresh`), reloads. DDL writes here
//! as it runs, through its transaction's `DdlLog`, which undoes it on rollback and
//! records each write in the transaction's pending record (decision 0038).

use crate::ddl_log::DdlLog;
use distribution::{Datanodes, RelPlacement};
use meta::nodes::Node;
use meta::{MetaClient, WriteBatch, WriteOutcome};
use parking_lot::RwLock;
use pgerror::{codes, PgError, PgResult};
use sql::acl::{AclItem, Object};
use sql::catalog::{Catalog, TableDef, FIRST_USER_OID};
use sql::role::RoleDef;
use sql::sequence::{Identity, SequenceDef};
use sql::view::ViewDef;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use types::enums::EnumType;

const TABLE_PREFIX: &[u8] = b"catalog/table/";
/// A table's name → its OID: names are unique across coordinators by compare-and-set.
const NAME_PREFIX: &[u8] = b"catalog/name/";
const NEXT_OID_KEY: &[u8] = b"catalog/next_oid";
/// A sequence's definition (JSON), under its OID; its name is under `NAME_PREFIX` with the
/// tables' (one namespace of relations).
const SEQUENCE_PREFIX: &[u8] = b"catalog/sequence/";
/// A view's definition (JSON), under its OID; its name is under `NAME_PREFIX` too.
const VIEW_PREFIX: &[u8] = b"catalog/view/";
/// A role's definition (JSON), under its OID; its name under `ROLE_NAME_PREFIX` (roles
/// are a namespace of their own, shared by the whole cluster).
const ROLE_PREFIX: &[u8] = b"catalog/role/";
const ROLE_NAME_PREFIX: &[u8] = b"catalog/role_name/";
/// An enum type's definition (JSON, `types::enums::EnumType`), under its OID; its name
/// under `TYPE_NAME_PREFIX` (types are a namespace of their own).
const TYPE_PREFIX: &[u8] = b"catalog/type/";
const TYPE_NAME_PREFIX: &[u8] = b"catalog/type_name/";
/// Schema public's ACL (JSON, `Vec<sql::acl::AclItem>`), once a GRANT or REVOKE changed it.
const PUBLIC_SCHEMA_ACL_KEY: &[u8] = b"catalog/schema/public";
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
    roles_by_name: HashMap<String, Arc<RoleDef>>,
    roles_by_oid: HashMap<u32, Arc<RoleDef>>,
    types_by_name: HashMap<String, Arc<EnumType>>,
    types_by_oid: HashMap<u32, Arc<EnumType>>,
    /// Schema public's ACL; None as initdb leaves it.
    public_acl: Option<Vec<AclItem>>,
}

impl State {
    /// Makes this state's enum types the ones `DataType` lookups by OID and name find.
    fn publish_types(&self) {
        types::enums::publish(self.types_by_oid.values().cloned());
    }
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
        let roles = self.meta.scan(ROLE_PREFIX).await?;
        let enum_types = self.meta.scan(TYPE_PREFIX).await?;
        let schemas = self.meta.scan(PUBLIC_SCHEMA_ACL_KEY).await?;
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
        for (_, value) in roles.entries {
            let role: Arc<RoleDef> = Arc::new(serde_json::from_slice(&value).map_err(unreadable)?);
            state.roles_by_name.insert(role.name.clone(), role.clone());
            state.roles_by_oid.insert(role.oid, role);
        }
        for (_, value) in enum_types.entries {
            let ty: Arc<EnumType> = Arc::new(serde_json::from_slice(&value).map_err(unreadable)?);
            state.types_by_name.insert(ty.name.clone(), ty.clone());
            state.types_by_oid.insert(ty.oid, ty);
        }
        for (_, value) in schemas.entries {
            state.public_acl = Some(serde_json::from_slice(&value).map_err(unreadable)?);
        }
        for (_, value) in snapshot.entries {
            let table = decode_table(&value)?;
            self.place(&table);
            let table = Arc::new(table);
            state.by_name.insert(table.name.clone(), table.clone());
            state.by_oid.insert(table.oid, table);
        }
        state.publish_types();
        *self.state.write() = state;
        // The older of the reads: a change between them is loaded again.
        let version = snapshot
            .version
            .min(sequences.version)
            .min(views.version)
            .min(roles.version)
            .min(enum_types.version)
            .min(schemas.version);
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
    pub async fn put(&self, table: TableDef, log: &mut DdlLog) -> PgResult<Arc<TableDef>> {
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
        let version = self
            .written(batch, log, |st| relation_conflict(st, &table.name))
            .await?;
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

    pub async fn remove(&self, oid: u32, log: &mut DdlLog) -> PgResult<()> {
        let _writing = self.writes.lock().await;
        let Some(old) = self.state.read().by_oid.get(&oid).cloned() else {
            return Ok(());
        };
        let batch = WriteBatch {
            expect: vec![(name_key(&old.name), Some(oid.to_le_bytes().to_vec()))],
            puts: vec![(table_key(oid), None), (name_key(&old.name), None)],
        };
        let version = self
            .written(batch, log, |st| relation_conflict(st, &old.name))
            .await?;
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
    /// The sequence whose record `key` is, if it is one.
    pub fn sequence_of_key(key: &[u8]) -> Option<u32> {
        std::str::from_utf8(key.strip_prefix(SEQUENCE_PREFIX)?)
            .ok()?
            .parse()
            .ok()
    }

    pub fn sequence_counter_key(oid: u32) -> Vec<u8> {
        let mut k = SEQUENCE_COUNTER_PREFIX.to_vec();
        k.extend_from_slice(format!("{oid:010}").as_bytes());
        k
    }

    /// Insert or replace a sequence's definition, durably; a new one whose name another
    /// relation holds fails with 42P07.
    pub async fn put_sequence(
        &self,
        sequence: SequenceDef,
        log: &mut DdlLog,
    ) -> PgResult<Arc<SequenceDef>> {
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
        let version = self
            .written(batch, log, |st| relation_conflict(st, &sequence.name))
            .await?;
        let sequence = Arc::new(sequence);
        self.apply(version, |st| {
            st.sequences_by_oid.insert(sequence.oid, sequence.clone());
            st.sequences_by_name
                .insert(sequence.name.clone(), sequence.clone());
        })
        .await?;
        Ok(sequence)
    }

    /// Drops a sequence's definition and name (its counter stays until the transaction
    /// commits: a rollback may bring the sequence back).
    pub async fn remove_sequence(&self, oid: u32, log: &mut DdlLog) -> PgResult<()> {
        let _writing = self.writes.lock().await;
        let Some(old) = self.state.read().sequences_by_oid.get(&oid).cloned() else {
            return Ok(());
        };
        let batch = WriteBatch {
            expect: vec![(name_key(&old.name), Some(oid.to_le_bytes().to_vec()))],
            puts: vec![(sequence_key(oid), None), (name_key(&old.name), None)],
        };
        let version = self
            .written(batch, log, |st| relation_conflict(st, &old.name))
            .await?;
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
    pub async fn put_view(&self, view: ViewDef, log: &mut DdlLog) -> PgResult<Arc<ViewDef>> {
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
        let version = self
            .written(batch, log, |st| relation_conflict(st, &view.name))
            .await?;
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

    pub async fn remove_view(&self, oid: u32, log: &mut DdlLog) -> PgResult<()> {
        let _writing = self.writes.lock().await;
        let Some(old) = self.state.read().views_by_oid.get(&oid).cloned() else {
            return Ok(());
        };
        let batch = WriteBatch {
            expect: vec![(name_key(&old.name), Some(oid.to_le_bytes().to_vec()))],
            puts: vec![(view_key(oid), None), (name_key(&old.name), None)],
        };
        let version = self
            .written(batch, log, |st| relation_conflict(st, &old.name))
            .await?;
        self.apply(version, |st| {
            st.views_by_oid.remove(&oid);
            st.views_by_name.remove(&old.name);
        })
        .await
    }

    /// The stored role named `name` (the bootstrap superuser has none until altered).
    /// The role `name`: the catalog's, or a predefined one (pg_monitor, …).
    pub fn role(&self, name: &str) -> Option<Arc<RoleDef>> {
        let found = self.state.read().roles_by_name.get(name).cloned();
        found.or_else(|| crate::predefined_roles::by_name(name))
    }

    pub fn role_by_oid(&self, oid: u32) -> Option<Arc<RoleDef>> {
        let found = self.state.read().roles_by_oid.get(&oid).cloned();
        found.or_else(|| crate::predefined_roles::by_oid(oid))
    }

    pub fn roles(&self) -> Vec<Arc<RoleDef>> {
        let mut v: Vec<_> = self.state.read().roles_by_oid.values().cloned().collect();
        v.sort_by_key(|r| r.oid);
        v
    }

    /// Insert or replace a role's definition, durably (a rename releases the old name
    /// in the same write); a name another role holds fails with 42710.
    pub async fn put_role(&self, role: RoleDef, log: &mut DdlLog) -> PgResult<Arc<RoleDef>> {
        let bytes = serde_json::to_vec(&role).map_err(|e| PgError::internal(e.to_string()))?;
        let _writing = self.writes.lock().await;
        let old_name = self
            .state
            .read()
            .roles_by_oid
            .get(&role.oid)
            .map(|r| r.name.clone());
        let oid_bytes = role.oid.to_le_bytes().to_vec();
        let mut batch = WriteBatch {
            expect: vec![(
                role_name_key(&role.name),
                (old_name.as_ref() == Some(&role.name)).then(|| oid_bytes.clone()),
            )],
            puts: vec![
                (role_key(role.oid), Some(bytes)),
                (role_name_key(&role.name), Some(oid_bytes.clone())),
            ],
        };
        if let Some(old) = old_name.filter(|n| *n != role.name) {
            batch.expect.push((role_name_key(&old), Some(oid_bytes)));
            batch.puts.push((role_name_key(&old), None));
        }
        let version = self
            .written(batch, log, |st| role_conflict(st, &role.name))
            .await?;
        let role = Arc::new(role);
        self.apply(version, |st| {
            if let Some(old) = st.roles_by_oid.insert(role.oid, role.clone()) {
                st.roles_by_name.remove(&old.name);
            }
            st.roles_by_name.insert(role.name.clone(), role.clone());
        })
        .await?;
        Ok(role)
    }

    pub async fn remove_role(&self, oid: u32, log: &mut DdlLog) -> PgResult<()> {
        let _writing = self.writes.lock().await;
        let Some(old) = self.state.read().roles_by_oid.get(&oid).cloned() else {
            return Ok(());
        };
        let batch = WriteBatch {
            expect: vec![(role_name_key(&old.name), Some(oid.to_le_bytes().to_vec()))],
            puts: vec![(role_key(oid), None), (role_name_key(&old.name), None)],
        };
        let version = self
            .written(batch, log, |st| role_conflict(st, &old.name))
            .await?;
        self.apply(version, |st| {
            st.roles_by_oid.remove(&oid);
            st.roles_by_name.remove(&old.name);
        })
        .await
    }

    /// Schema public, with its ACL.
    pub fn public_schema(&self) -> Object {
        Object::PublicSchema(self.state.read().public_acl.clone())
    }

    /// Replaces schema public's ACL, durably; a concurrent change by another
    /// coordinator fails this one.
    pub async fn put_public_acl(&self, acl: Vec<AclItem>, log: &mut DdlLog) -> PgResult<()> {
        let bytes = serde_json::to_vec(&acl).map_err(|e| PgError::internal(e.to_string()))?;
        let _writing = self.writes.lock().await;
        let current = (self.state.read().public_acl.as_ref())
            .map(|a| serde_json::to_vec(a).map_err(|e| PgError::internal(e.to_string())))
            .transpose()?;
        let batch = WriteBatch {
            expect: vec![(PUBLIC_SCHEMA_ACL_KEY.to_vec(), current)],
            puts: vec![(PUBLIC_SCHEMA_ACL_KEY.to_vec(), Some(bytes))],
        };
        let version = self
            .written(batch, log, |_| {
                PgError::new(codes::INTERNAL_ERROR, "tuple concurrently updated")
            })
            .await?;
        self.apply(version, |st| st.public_acl = Some(acl)).await
    }

    /// The enum type named `name`.
    pub fn enum_type(&self, name: &str) -> Option<Arc<EnumType>> {
        self.state.read().types_by_name.get(name).cloned()
    }

    pub fn enum_types(&self) -> Vec<Arc<EnumType>> {
        let mut v: Vec<_> = self.state.read().types_by_oid.values().cloned().collect();
        v.sort_by_key(|t| t.oid);
        v
    }

    /// Insert or replace an enum type's definition, durably (a rename releases the old
    /// name in the same write); a name another type holds fails with 42710.
    pub async fn put_type(&self, ty: EnumType, log: &mut DdlLog) -> PgResult<Arc<EnumType>> {
        let bytes = serde_json::to_vec(&ty).map_err(|e| PgError::internal(e.to_string()))?;
        let _writing = self.writes.lock().await;
        let old_name = (self.state.read().types_by_oid.get(&ty.oid)).map(|t| t.name.clone());
        let name_key = type_name_key(&ty.name);
        let oid_bytes = ty.oid.to_le_bytes().to_vec();
        let mut batch = WriteBatch {
            expect: vec![(
                name_key.clone(),
                (old_name.as_ref() == Some(&ty.name)).then(|| oid_bytes.clone()),
            )],
            puts: vec![
                (type_key(ty.oid), Some(bytes)),
                (name_key, Some(oid_bytes.clone())),
            ],
        };
        if let Some(old) = old_name.filter(|n| *n != ty.name) {
            batch.expect.push((type_name_key(&old), Some(oid_bytes)));
            batch.puts.push((type_name_key(&old), None));
        }
        let version = self
            .written(batch, log, |st| type_conflict(st, &ty.name))
            .await?;
        let ty = Arc::new(ty);
        self.apply(version, |st| {
            if let Some(old) = st.types_by_oid.insert(ty.oid, ty.clone()) {
                st.types_by_name.remove(&old.name);
            }
            st.types_by_name.insert(ty.name.clone(), ty.clone());
        })
        .await?;
        Ok(ty)
    }

    pub async fn remove_type(&self, oid: u32, log: &mut DdlLog) -> PgResult<()> {
        let _writing = self.writes.lock().await;
        let Some(old) = self.state.read().types_by_oid.get(&oid).cloned() else {
            return Ok(());
        };
        let batch = WriteBatch {
            expect: vec![(type_name_key(&old.name), Some(oid.to_le_bytes().to_vec()))],
            puts: vec![(type_key(oid), None), (type_name_key(&old.name), None)],
        };
        let version = self
            .written(batch, log, |st| type_conflict(st, &old.name))
            .await?;
        self.apply(version, |st| {
            st.types_by_oid.remove(&oid);
            st.types_by_name.remove(&old.name);
        })
        .await
    }

    /// Stores `batch` as part of `log`'s transaction (with the keys' values before it, read
    /// here). A conflict means another coordinator changed the names it expects
    /// meanwhile: this coordinator reloads and the statement fails with `conflict`'s
    /// error for the reloaded state.
    async fn written(
        &self,
        mut batch: WriteBatch,
        log: &mut DdlLog,
        conflict: impl FnOnce(&State) -> PgError,
    ) -> PgResult<u64> {
        let keys = batch.puts.iter().map(|(k, _)| k.clone()).collect();
        let before = self.meta.get(keys).await?;
        let staged = log.stage(&mut batch, before)?;
        match self.meta.write(batch).await? {
            WriteOutcome::Written { version } => {
                log.keep(staged);
                Ok(version)
            }
            WriteOutcome::Conflict { .. } => {
                self.reload_locked().await?;
                Err(conflict(&self.state.read()))
            }
        }
    }

    /// Applies this coordinator's own write to the cache: in place when nothing else
    /// changed the metadata since the last load, else by reloading it all.
    async fn apply(&self, version: u64, change: impl FnOnce(&mut State)) -> PgResult<()> {
        if self.loaded.load(Ordering::Acquire) + 1 == version {
            let mut state = self.state.write();
            change(&mut state);
            state.publish_types();
            drop(state);
            self.loaded.store(version, Ordering::Release);
            self.version.fetch_add(1, Ordering::AcqRel);
            Ok(())
        } else {
            self.reload_locked().await
        }
    }
}

/// A relation's name taken or gone under a write (42P07 or 42P01).
fn relation_conflict(state: &State, name: &str) -> PgError {
    let exists = state.by_name.contains_key(name)
        || state.sequences_by_name.contains_key(name)
        || state.views_by_name.contains_key(name);
    if exists {
        PgError::new(
            codes::DUPLICATE_TABLE,
            format!("relation \"{name}\" already exists"),
        )
    } else {
        PgError::new(
            codes::UNDEFINED_TABLE,
            format!("relation \"{name}\" does not exist"),
        )
    }
}

/// A role's name taken or gone under a write (42710 or 42704).
fn role_conflict(state: &State, name: &str) -> PgError {
    if state.roles_by_name.contains_key(name) {
        PgError::new(
            codes::DUPLICATE_OBJECT,
            format!("role \"{name}\" already exists"),
        )
    } else {
        PgError::new(
            codes::UNDEFINED_OBJECT,
            format!("role \"{name}\" does not exist"),
        )
    }
}

/// A type's name taken or gone under a write (42710 or 42704).
fn type_conflict(state: &State, name: &str) -> PgError {
    if state.types_by_name.contains_key(name) {
        PgError::new(
            codes::DUPLICATE_OBJECT,
            format!("type \"{name}\" already exists"),
        )
    } else {
        PgError::new(
            codes::UNDEFINED_OBJECT,
            format!("type \"{name}\" does not exist"),
        )
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
    record_key(TABLE_PREFIX, oid)
}

fn sequence_key(oid: u32) -> Vec<u8> {
    record_key(SEQUENCE_PREFIX, oid)
}

fn view_key(oid: u32) -> Vec<u8> {
    record_key(VIEW_PREFIX, oid)
}

fn role_key(oid: u32) -> Vec<u8> {
    record_key(ROLE_PREFIX, oid)
}

fn record_key(prefix: &[u8], oid: u32) -> Vec<u8> {
    let mut k = prefix.to_vec();
    k.extend_from_slice(format!("{oid:010}").as_bytes());
    k
}

fn type_key(oid: u32) -> Vec<u8> {
    record_key(TYPE_PREFIX, oid)
}

fn type_name_key(name: &str) -> Vec<u8> {
    let mut k = TYPE_NAME_PREFIX.to_vec();
    k.extend_from_slice(name.as_bytes());
    k
}

fn role_name_key(name: &str) -> Vec<u8> {
    let mut k = ROLE_NAME_PREFIX.to_vec();
    k.extend_from_slice(name.as_bytes());
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
