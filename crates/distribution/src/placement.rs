//! Where a row lives: its bucket, and the datanode the bucket map gives the bucket
//! (decision 0028).
//!
//! A row's bucket follows from its storage key alone, so that every call that names a
//! key (a read, a lock, a write) can be routed without the row:
//! * under a primary key, the bucket is the hash of the distribution column's value as
//!   the key encodes it (the column is one of the key's, `Distribution`'s rule);
//! * under a row id (a table without a primary key), the bucket is in the id's low bits,
//!   chosen when the row is inserted: the hash of its distribution column's value, or
//!   spread round-robin.

use datanode_client::RelId;
use pgerror::{PgError, PgResult};
use sql::catalog::{Distribution, TableDef};
use sql::index::IndexDef;
use types::Value;

/// Buckets of the hash space; a bucket, not a row, is what moves between datanodes.
pub const BUCKETS: u32 = 4096;
/// Row-id bits that hold the bucket.
const BUCKET_BITS: u32 = BUCKETS.trailing_zeros();

pub type Bucket = u32;

/// The bucket of a value, from its key encoding (`types::codec::encode_key`): equal SQL
/// values of different integer widths or numeric scales share a bucket.
pub fn bucket_of_encoded(encoded: &[u8]) -> Bucket {
    (xxhash_rust::xxh3::xxh3_64(encoded) % BUCKETS as u64) as Bucket
}

pub fn bucket_of_value(v: &Value) -> Bucket {
    let mut encoded = Vec::with_capacity(9);
    types::codec::encode_key(std::slice::from_ref(v), &mut encoded);
    bucket_of_encoded(&encoded)
}

/// How the datanode of a relation's row is found from its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelPlacement {
    /// Hashed on the `component`-th value of the primary key.
    KeyValue { component: usize },
    /// Under row ids that carry their bucket.
    RowId,
    /// Under keys that end with a row id carrying its bucket (the entries of a
    /// secondary index of a table without a primary key: decision 0035).
    TrailingRowId,
    /// A copy on every datanode.
    Replicated,
}

impl RelPlacement {
    /// The placement of `table`'s rows under its current key.
    pub fn of(table: &TableDef) -> RelPlacement {
        match (table.distribution, table.primary_key.as_deref()) {
            (Distribution::Replication, _) => RelPlacement::Replicated,
            (Distribution::Hash { column }, Some(pk)) => RelPlacement::KeyValue {
                // The binder keeps the column in the key; were it not, the key's first
                // column still places every row in one well-defined bucket.
                component: pk.iter().position(|&c| c == column).unwrap_or(0),
            },
            (Distribution::RoundRobin, Some(_)) => RelPlacement::KeyValue { component: 0 },
            (_, None) => RelPlacement::RowId,
        }
    }

    /// The placement of `index`'s entries (decision 0035): with their rows wherever the
    /// entry holds the distribution column's value (through the row key a non-unique
    /// entry ends with, or as an indexed column), so that writes stay on the row's
    /// datanode; a unique index without the column is placed by the hash of its first
    /// value (a global index), so that equal values meet on one datanode.
    pub fn of_index(table: &TableDef, index: &IndexDef) -> RelPlacement {
        let indexed = |column| index.columns.iter().position(|c| c.column == column);
        match (RelPlacement::of(table), table.distribution) {
            (RelPlacement::Replicated, _) => RelPlacement::Replicated,
            (_, Distribution::Hash { column }) if indexed(column).is_some() => {
                RelPlacement::KeyValue {
                    component: indexed(column).unwrap_or(0),
                }
            }
            _ if index.unique => RelPlacement::KeyValue { component: 0 },
            (RelPlacement::KeyValue { component }, _) => RelPlacement::KeyValue {
                component: index.columns.len() + component,
            },
            (_, _) => RelPlacement::TrailingRowId,
        }
    }

    /// The bucket of the row under `key`; None for a replicated relation.
    pub fn bucket_of_key(self, key: &[u8]) -> PgResult<Option<Bucket>> {
        match self {
            RelPlacement::Replicated => Ok(None),
            RelPlacement::RowId => {
                let id: [u8; 8] = key.try_into().map_err(|_| undecodable(key))?;
                Ok(Some((u64::from_be_bytes(id) % BUCKETS as u64) as Bucket))
            }
            RelPlacement::TrailingRowId => {
                let tail = key.len().checked_sub(8).ok_or_else(|| undecodable(key))?;
                RelPlacement::RowId.bucket_of_key(&key[tail..])
            }
            RelPlacement::KeyValue { component } => {
                let mut rest = key;
                for _ in 0..component {
                    let n = types::codec::key_value_len(rest).ok_or_else(|| undecodable(key))?;
                    rest = &rest[n..];
                }
                let n = types::codec::key_value_len(rest).ok_or_else(|| undecodable(key))?;
                Ok(Some(bucket_of_encoded(&rest[..n])))
            }
        }
    }
}

fn undecodable(key: &[u8]) -> PgError {
    PgError::internal(format!("a storage key that names no bucket: {key:02x?}"))
}

/// The row id of `table`'s new row number `seq` (from `allocate_row_ids`), its bucket in
/// the low bits: ids still ascend with `seq`, so rows stay in insertion order.
pub fn new_row_id(table: &TableDef, seq: u64, row: &[Value]) -> u64 {
    let bucket = match table.distribution {
        Distribution::Hash { column } => bucket_of_value(&row[column]),
        Distribution::RoundRobin => (seq % BUCKETS as u64) as Bucket,
        Distribution::Replication => 0,
    };
    (seq << BUCKET_BITS) | bucket as u64
}

/// Which datanode holds each bucket: spread round-robin over the datanodes, in the
/// order the cluster lists them.
#[derive(Debug, Clone)]
pub struct BucketMap {
    owners: Vec<u16>,
}

impl BucketMap {
    pub fn round_robin(datanodes: usize) -> BucketMap {
        BucketMap {
            owners: (0..BUCKETS as usize)
                .map(|b| (b % datanodes.max(1)) as u16)
                .collect(),
        }
    }

    pub fn datanode(&self, bucket: Bucket) -> usize {
        self.owners[bucket as usize] as usize
    }
}

/// The datanode(s) a call on one row goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    One(usize),
    /// Every datanode (a replicated relation's write).
    All,
}

/// Relation placements as the catalog gives them, with the bucket map.
pub struct Placements {
    map: BucketMap,
    rels: parking_lot::RwLock<std::collections::HashMap<RelId, RelPlacement>>,
}

impl Placements {
    pub fn new(map: BucketMap) -> Placements {
        Placements {
            map,
            rels: Default::default(),
        }
    }

    pub fn set(&self, rel: RelId, placement: RelPlacement) {
        self.rels.write().insert(rel, placement);
    }

    pub fn remove(&self, rel: RelId) {
        self.rels.write().remove(&rel);
    }

    pub fn of(&self, rel: RelId) -> PgResult<RelPlacement> {
        self.rels.read().get(&rel).copied().ok_or_else(|| {
            PgError::internal(format!(
                "relation {rel} has no placement on this coordinator"
            ))
        })
    }

    pub fn map(&self) -> &BucketMap {
        &self.map
    }

    /// Where the row of `rel` under `key` lives.
    pub fn target(&self, rel: RelId, key: &[u8]) -> PgResult<Target> {
        Ok(match self.of(rel)?.bucket_of_key(key)? {
            Some(b) => Target::One(self.map.datanode(b)),
            None => Target::All,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sql::catalog::{ColumnDef, DataTypeDef};
    use types::DataType;

    fn table(pk: Option<Vec<usize>>, distribution: Distribution) -> TableDef {
        let col = |name: &str| ColumnDef {
            name: name.into(),
            ty: DataTypeDef::from_type(&DataType::Int4),
            not_null: false,
            default: None,
            comment: None,
        };
        TableDef {
            oid: 16384,
            name: "t".into(),
            columns: vec![col("a"), col("b")],
            primary_key: pk,
            pk_name: None,
            pk_index_oid: None,
            rel: 1,
            fillfactor: None,
            distribution,
            indexes: Vec::new(),
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            acl: None,
            comment: None,
            owner: 10,
        }
    }

    fn key(values: &[Value]) -> Vec<u8> {
        let mut k = Vec::new();
        types::codec::encode_key(values, &mut k);
        k
    }

    #[test]
    fn a_composite_key_is_placed_by_its_distribution_column() {
        let t = table(Some(vec![0, 1]), Distribution::Hash { column: 1 });
        let p = RelPlacement::of(&t);
        assert_eq!(p, RelPlacement::KeyValue { component: 1 });
        for b in 0..50 {
            let k = key(&[Value::Int4(7), Value::Int4(b)]);
            assert_eq!(
                p.bucket_of_key(&k).unwrap(),
                Some(bucket_of_value(&Value::Int8(b as i64)))
            );
        }
    }

    #[test]
    fn a_row_id_carries_the_bucket_of_its_row() {
        let t = table(None, Distribution::Hash { column: 1 });
        let row = [Value::Int4(1), Value::Text("x".into())];
        let id = new_row_id(&t, 12345, &row);
        assert_eq!(id >> BUCKET_BITS, 12345);
        let bucket = RelPlacement::of(&t)
            .bucket_of_key(&id.to_be_bytes())
            .unwrap();
        assert_eq!(bucket, Some(bucket_of_value(&row[1])));
        // Ids keep the order of their sequence numbers.
        assert!(new_row_id(&t, 12346, &[Value::Null, Value::Null]) > id);
    }

    #[test]
    fn buckets_spread_over_the_datanodes() {
        let map = BucketMap::round_robin(3);
        let mut per_node = [0usize; 3];
        for a in 0..30_000 {
            per_node[map.datanode(bucket_of_value(&Value::Int4(a)))] += 1;
        }
        for n in per_node {
            assert!((9_000..11_000).contains(&n), "{per_node:?}");
        }
    }

    fn index(columns: &[usize], unique: bool) -> IndexDef {
        IndexDef {
            oid: 1,
            name: "i".into(),
            columns: columns
                .iter()
                .map(|&column| sql::index::IndexColumn {
                    column,
                    descending: false,
                    nulls_first: false,
                })
                .collect(),
            unique,
            constraint_oid: None,
            rel: 2,
        }
    }

    #[test]
    fn an_index_entry_lives_with_its_row_unless_a_unique_index_lacks_the_column() {
        let t = table(Some(vec![0]), Distribution::Hash { column: 0 });
        let rows = RelPlacement::of(&t);
        let row = [Value::Int4(17), Value::Int4(5)];
        let row_key = key(&row[..1]);
        let row_bucket = rows.bucket_of_key(&row_key).unwrap();
        for ix in [index(&[1], false), index(&[1, 0], true), index(&[0], false)] {
            let entry = ix.entry(&row, &row_key);
            let placed = RelPlacement::of_index(&t, &ix).bucket_of_key(&entry.key);
            assert_eq!(placed.unwrap(), row_bucket, "{ix:?}");
        }
        // a global index: placed by its own first value
        let ix = index(&[1], true);
        let entry = ix.entry(&row, &row_key);
        let placed = RelPlacement::of_index(&t, &ix).bucket_of_key(&entry.key);
        assert_eq!(placed.unwrap(), Some(bucket_of_value(&Value::Int4(5))));
        // a table without a primary key: the row id at the entry's end
        let t = table(None, Distribution::Hash { column: 1 });
        let id = new_row_id(&t, 99, &row);
        let ix = index(&[0], false);
        let entry = ix.entry(&row, &id.to_be_bytes());
        let placed = RelPlacement::of_index(&t, &ix).bucket_of_key(&entry.key);
        assert_eq!(placed.unwrap(), Some(bucket_of_value(&row[1])));
    }

    #[test]
    fn a_key_that_names_no_bucket_is_an_error() {
        let p = RelPlacement::KeyValue { component: 1 };
        assert!(p.bucket_of_key(&key(&[Value::Int4(1)])).is_err());
        assert!(RelPlacement::RowId.bucket_of_key(&[1, 2]).is_err());
    }
}
