//! The catalog as the binder sees it: user tables and their columns.
//!
//! The coordinator owns the live catalog and its persistence; this module only defines
//! the shape and the lookup interface, so that binding stays free of I/O.

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use types::DataType;

/// OID of the `public` schema, as in a fresh PostgreSQL cluster.
pub const PUBLIC_NAMESPACE_OID: u32 = 2200;
/// OID of `pg_catalog`.
pub const PG_CATALOG_NAMESPACE_OID: u32 = 11;
/// OID of `information_schema`.
pub const INFORMATION_SCHEMA_OID: u32 = 13_000;
/// OID of `pg_toast`.
pub const PG_TOAST_NAMESPACE_OID: u32 = 99;
/// OID of the bootstrap superuser `postgres`.
pub const SUPERUSER_OID: u32 = 10;
/// OIDs handed to user objects start here, as in PostgreSQL.
pub const FIRST_USER_OID: u32 = 16384;

/// The name of a user object (table, view, sequence, index, type) that a statement
/// creates, drops or alters, from its parts: `name` or `public.name`, the one schema
/// user objects live in. Any other schema is 3F000, as PostgreSQL answers for a schema
/// that does not exist; taking the last part alone would act on public's object.
pub fn public_object_name(mut parts: Vec<String>) -> pgerror::PgResult<String> {
    use pgerror::{codes, PgError};
    match parts.len() {
        1 => {}
        2 if parts[0] == "public" => {}
        2 => {
            return Err(PgError::new(
                codes::INVALID_SCHEMA_NAME,
                format!("schema \"{}\" does not exist", parts[0]),
            ))
        }
        3 => {
            return Err(PgError::new(
                codes::FEATURE_NOT_SUPPORTED,
                format!(
                    "cross-database references are not implemented: {}",
                    parts.join(".")
                ),
            ))
        }
        _ => {
            return Err(PgError::new(
                codes::SYNTAX_ERROR,
                "improper qualified name (too many dotted names)",
            ))
        }
    }
    Ok(parts.pop().unwrap_or_default())
}

/// `public_object_name` of an object DROP … IF EXISTS names: a name in a schema that
/// does not exist is skipped with a notice, as PostgreSQL does, so it becomes a name no
/// object has (identifiers never hold a NUL) that `skipped_notice` recognizes.
pub fn dropped_object_name(parts: Vec<String>, if_exists: bool) -> pgerror::PgResult<String> {
    match parts.as_slice() {
        [schema, _] if if_exists && schema != "public" => Ok(format!("\0{schema}")),
        _ => public_object_name(parts),
    }
}

/// The notice of DROP … IF EXISTS for a `name` it does not find: `kind "name" does not
/// exist, skipping`, or the schema's when `dropped_object_name` found none.
pub fn skipped_notice(kind: &str, name: &str) -> String {
    match name.strip_prefix('\0') {
        Some(schema) => format!("schema \"{schema}\" does not exist, skipping"),
        None => format!("{kind} \"{name}\" does not exist, skipping"),
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColumnDef {
    pub name: String,
    pub ty: DataTypeDef,
    pub not_null: bool,
    /// Default expression as SQL text (re-bound when used).
    pub default: Option<String>,
    /// COMMENT ON COLUMN (pg_description, col_description).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Serializable mirror of `types::DataType` (kept as OID + typmod, like pg_attribute).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DataTypeDef {
    pub oid: u32,
    pub typmod: i32,
}

impl DataTypeDef {
    pub fn from_type(ty: &DataType) -> Self {
        DataTypeDef {
            oid: ty.oid(),
            typmod: ty.typmod(),
        }
    }

    pub fn to_type(&self) -> DataType {
        DataType::from_oid(self.oid)
            .unwrap_or(DataType::Text)
            .with_typmod(self.typmod)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableDef {
    pub oid: u32,
    pub name: String,
    pub columns: Vec<ColumnDef>,
    /// Column indexes of the primary key, in key order.
    pub primary_key: Option<Vec<usize>>,
    /// Name of the primary-key constraint (and its index), e.g. `pgbench_accounts_pkey`.
    pub pk_name: Option<String>,
    /// OID of the primary key's index (pg_index.indexrelid).
    pub pk_index_oid: Option<u32>,
    /// Storage relation holding the rows; changes on TRUNCATE and primary-key rebuilds.
    pub rel: u64,
    pub fillfactor: Option<u32>,
    /// Where the rows live in a cluster (decision 0028).
    #[serde(default)]
    pub distribution: Distribution,
    /// Secondary indexes, UNIQUE constraints' included (decision 0035).
    #[serde(default)]
    pub indexes: Vec<crate::index::IndexDef>,
    /// CHECK constraints (`crate::check`).
    #[serde(default)]
    pub checks: Vec<CheckDef>,
    /// FOREIGN KEY constraints of this table, the referencing one (`binder/foreign_key.rs`).
    #[serde(default)]
    pub foreign_keys: Vec<ForeignKeyDef>,
    /// The role that owns the table and its indexes (pg_class.relowner): its creator.
    #[serde(default = "crate::role::bootstrap_owner")]
    pub owner: u32,
    /// Its privileges (pg_class.relacl); None until the first GRANT or REVOKE, when the
    /// owner holds them all (`crate::acl`).
    #[serde(default)]
    pub acl: Option<Vec<crate::acl::AclItem>>,
    /// COMMENT ON TABLE (pg_description, obj_description).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// A FOREIGN KEY constraint (MATCH SIMPLE, not deferrable): the referencing table's
/// `columns` hold values of the referenced table's `parent_columns`, its primary key or
/// a unique constraint's or unique index's columns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ForeignKeyDef {
    /// Its pg_constraint OID.
    pub oid: u32,
    pub name: String,
    pub columns: Vec<usize>,
    /// The referenced table's OID (its own for a self-reference).
    pub parent: u32,
    pub parent_columns: Vec<usize>,
    pub on_update: ReferentialAction,
    pub on_delete: ReferentialAction,
}

/// What a referenced row's DELETE or key UPDATE does to the rows referencing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReferentialAction {
    NoAction,
    Restrict,
    Cascade,
    SetNull,
    SetDefault,
}

impl ReferentialAction {
    /// pg_constraint's confupdtype / confdeltype letter.
    pub fn code(self) -> char {
        match self {
            ReferentialAction::NoAction => 'a',
            ReferentialAction::Restrict => 'r',
            ReferentialAction::Cascade => 'c',
            ReferentialAction::SetNull => 'n',
            ReferentialAction::SetDefault => 'd',
        }
    }

    /// As SQL writes it (pg_get_constraintdef, information_schema).
    pub fn sql(self) -> &'static str {
        match self {
            ReferentialAction::NoAction => "NO ACTION",
            ReferentialAction::Restrict => "RESTRICT",
            ReferentialAction::Cascade => "CASCADE",
            ReferentialAction::SetNull => "SET NULL",
            ReferentialAction::SetDefault => "SET DEFAULT",
        }
    }
}

/// A CHECK constraint: as a default, its expression is SQL text, bound where it is used.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckDef {
    /// Its pg_constraint OID.
    pub oid: u32,
    pub name: String,
    pub expr: String,
}

/// How many buckets hash-distributed rows are spread over (decision 0028): a row's
/// bucket is its distribution value's hash modulo this, and the bucket map names each
/// bucket's datanode.
pub const BUCKETS: u32 = 4096;

/// How a table's rows are placed on datanodes (Postgres-XL's `DISTRIBUTE BY`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Distribution {
    /// By the hash of one column's value (`DISTRIBUTE BY HASH (col)`): the row's bucket is
    /// the hash of the value's key encoding, so equal values of any integer width, or
    /// numerics equal in SQL, land together. With a primary key, the column is one of
    /// its columns (the key alone then names the row's datanode).
    Hash { column: usize },
    /// A full copy on every datanode (`DISTRIBUTE BY REPLICATION`).
    Replication,
    /// Spread by row id (`DISTRIBUTE BY ROUNDROBIN`; the default for a table with no
    /// column of a hashable type).
    #[default]
    RoundRobin,
}

impl Distribution {
    /// The distribution of a table created without `DISTRIBUTE BY`, as Postgres-XL
    /// chooses it: the first primary-key column of a hashable type, else (no primary
    /// key) the first column of a hashable type, else round-robin.
    pub fn default_for(columns: &[ColumnDef], primary_key: Option<&[usize]>) -> Distribution {
        let hashable = |i: &usize| is_hashable(&columns[*i].ty.to_type());
        let column = match primary_key {
            Some(pk) => pk.iter().copied().find(hashable),
            None => (0..columns.len()).find(hashable),
        };
        column.map_or(Distribution::RoundRobin, |column| Distribution::Hash {
            column,
        })
    }
}

impl Distribution {
    /// Each datanode enforces a primary key on its own rows only, so all rows that could
    /// share a key must live on one datanode: a hash-distributed table's key contains the
    /// hash column, and a round-robin table has none (Postgres-XL's rule and messages).
    pub fn check_key(self, key: &[usize]) -> pgerror::PgResult<()> {
        let refuse = |message: &str| {
            Err(pgerror::PgError::new(
                pgerror::codes::FEATURE_NOT_SUPPORTED,
                message,
            ))
        };
        match self {
            Distribution::Hash { column } if !key.contains(&column) => refuse(
                "Unique index of partitioned table must contain the hash distribution column.",
            ),
            Distribution::RoundRobin => {
                refuse("Cannot locally enforce a unique index on round robin distributed table.")
            }
            Distribution::Hash { .. } | Distribution::Replication => Ok(()),
        }
    }
}

/// Whether rows can be placed by a value of this type: its key encoding is the same for
/// values equal in SQL (`types::codec::encode_key`).
pub fn is_hashable(ty: &DataType) -> bool {
    !matches!(
        ty,
        DataType::Array(_) | DataType::Unknown | DataType::Json | DataType::Jsonb
    )
}

impl TableDef {
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    pub fn column_types(&self) -> Vec<DataType> {
        self.columns.iter().map(|c| c.ty.to_type()).collect()
    }
}

/// What binding needs from the catalog.
pub trait Catalog {
    /// Look up a user table; `schema` is None for an unqualified name.
    fn table(&self, schema: Option<&str>, name: &str) -> Option<Arc<TableDef>>;
    fn table_by_oid(&self, oid: u32) -> Option<Arc<TableDef>>;
    /// The tables with a foreign key referencing table `oid` (itself included).
    fn referencing(&self, _oid: u32) -> Vec<Arc<TableDef>> {
        Vec::new()
    }
    /// Whether tables are spread over several datanodes, so that bound queries leave
    /// filters and partial aggregates to them (`crate::pushdown`).
    fn pushes_down(&self) -> bool {
        false
    }
    /// Look up a sequence by (unqualified) name.
    fn sequence(&self, _name: &str) -> Option<Arc<crate::sequence::SequenceDef>> {
        None
    }
    /// Look up a view by (unqualified) name.
    fn view(&self, _name: &str) -> Option<Arc<crate::view::ViewDef>> {
        None
    }
    /// Whether the column of table `table` is an identity column, and which kind.
    fn identity(&self, _table: u32, _column: usize) -> Option<crate::sequence::Identity> {
        None
    }
}
