//! Enum types (`CREATE TYPE … AS ENUM`, decision 0043): their definitions, and the
//! process-wide table of the ones the catalog holds.
//!
//! A column stores its type as OID and typmod (as pg_attribute does), and everything that
//! turns an OID or a type name into a `DataType` does so without the catalog; the table
//! here is what it finds enum types in, as PostgreSQL's backends find them in their type
//! cache. The coordinator publishes its catalog's types here whenever it loads or changes
//! them (`publish`).
//!
//! A value is its label with its sort order (`Value::Enum`): comparing, sorting, hashing
//! and the storage encodings need no lookup, on a datanode neither. Sort orders never
//! change once given (a value added between two others takes the midpoint), so stored
//! values and index keys stay in order. The sort order also names the value: output
//! through the type shows the label the type has now for it (RENAME VALUE).

use crate::Value;
use pgerror::{codes, PgError, PgResult};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// One enum type: pg_type's row (and its array type's OID) and its pg_enum rows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnumType {
    pub oid: u32,
    /// OID of its array type (`_name`).
    pub array_oid: u32,
    pub name: String,
    /// In sort order.
    pub labels: Vec<EnumLabel>,
}

/// A pg_enum row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnumLabel {
    pub oid: u32,
    pub sort_order: f32,
    pub label: String,
}

/// Types are the same type when their OIDs are (a definition read before ADD VALUE is
/// still that type).
impl PartialEq for EnumType {
    fn eq(&self, other: &Self) -> bool {
        self.oid == other.oid
    }
}

impl Eq for EnumType {}

impl std::hash::Hash for EnumType {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.oid.hash(state)
    }
}

/// User objects' OIDs start here (PostgreSQL's FirstNormalObjectId): no enum type has a
/// lower one, so looking up a built-in type's OID never takes the table's lock.
pub const FIRST_USER_OID: u32 = 16384;

/// PostgreSQL's NAMEDATALEN - 1: the longest label.
const MAX_LABEL_BYTES: usize = 63;

impl EnumType {
    /// The value of `label`, or 22P02 as enum_in says it.
    pub fn value(&self, label: &str) -> PgResult<Value> {
        self.labels
            .iter()
            .find(|l| l.label == label)
            .map(|l| Value::Enum {
                sort: l.sort_order,
                label: l.label.clone(),
            })
            .ok_or_else(|| {
                PgError::new(
                    codes::INVALID_TEXT_REPRESENTATION,
                    format!("invalid input value for enum {}: \"{label}\"", self.name),
                )
            })
    }

    /// The label with this sort order (labels are renamed in place, values keep theirs).
    pub fn label_of(&self, sort: f32) -> Option<&str> {
        let at = self.labels.partition_point(|l| l.sort_order < sort);
        (self.labels.get(at))
            .filter(|l| l.sort_order == sort)
            .map(|l| l.label.as_str())
    }

    /// The type's values in order (`enum_range`).
    pub fn values(&self) -> Vec<Value> {
        (self.labels.iter())
            .map(|l| Value::Enum {
                sort: l.sort_order,
                label: l.label.clone(),
            })
            .collect()
    }

    /// The sort order a label added at `position` takes, as PostgreSQL's AddEnumLabel
    /// gives it: after the last, one more than its sort order; between two labels, the
    /// midpoint. None when the midpoint equals a neighbour (PostgreSQL renumbers the
    /// labels then; here stored values keep their sort orders, so it is refused).
    pub fn sort_order_at(&self, position: LabelPosition<'_>) -> PgResult<Option<f32>> {
        let find = |neighbour: &str| {
            self.labels
                .iter()
                .position(|l| l.label == neighbour)
                .ok_or_else(|| {
                    PgError::new(
                        codes::INVALID_PARAMETER_VALUE,
                        format!("\"{neighbour}\" is not an existing enum label"),
                    )
                })
        };
        let sort = |i: usize| self.labels[i].sort_order;
        let (below, above) = match position {
            LabelPosition::Last => {
                return Ok(Some(self.labels.last().map_or(1.0, |l| l.sort_order + 1.0)))
            }
            LabelPosition::Before(n) => {
                let i = find(n)?;
                (i.checked_sub(1).map(sort), sort(i))
            }
            LabelPosition::After(n) => {
                let i = find(n)?;
                match self.labels.get(i + 1) {
                    Some(next) => (Some(sort(i)), next.sort_order),
                    None => return Ok(Some(sort(i) + 1.0)),
                }
            }
        };
        let Some(below) = below else {
            return Ok(Some(above - 1.0));
        };
        let mid = (below + above) / 2.0;
        Ok((mid != below && mid != above).then_some(mid))
    }
}

/// Where ALTER TYPE … ADD VALUE puts its label.
#[derive(Debug, Clone, Copy)]
pub enum LabelPosition<'a> {
    Last,
    Before(&'a str),
    After(&'a str),
}

/// A label as CREATE TYPE and ADD VALUE accept it: at most 63 bytes (empty is a label).
pub fn check_label(label: &str) -> PgResult<()> {
    if label.len() > MAX_LABEL_BYTES {
        return Err(PgError::new(
            codes::INVALID_NAME,
            format!("invalid enum label \"{label}\""),
        )
        .with_detail("Labels must be 63 bytes or less."));
    }
    Ok(())
}

#[derive(Default)]
struct Published {
    by_oid: HashMap<u32, Arc<EnumType>>,
    by_array_oid: HashMap<u32, Arc<EnumType>>,
    by_name: HashMap<String, Arc<EnumType>>,
}

fn published() -> &'static RwLock<Published> {
    static PUBLISHED: std::sync::OnceLock<RwLock<Published>> = std::sync::OnceLock::new();
    PUBLISHED.get_or_init(Default::default)
}

/// Makes `types` the enum types there are (the catalog's, after it loaded or changed).
pub fn publish(types: impl IntoIterator<Item = Arc<EnumType>>) {
    let mut p = Published::default();
    for t in types {
        p.by_array_oid.insert(t.array_oid, t.clone());
        p.by_name.insert(t.name.clone(), t.clone());
        p.by_oid.insert(t.oid, t);
    }
    *published().write().unwrap_or_else(|e| e.into_inner()) = p;
}

/// The enum type with this OID.
pub fn by_oid(oid: u32) -> Option<Arc<EnumType>> {
    let p = published().read().unwrap_or_else(|e| e.into_inner());
    p.by_oid.get(&oid).cloned()
}

/// The enum type whose array type has this OID.
pub fn by_array_oid(oid: u32) -> Option<Arc<EnumType>> {
    let p = published().read().unwrap_or_else(|e| e.into_inner());
    p.by_array_oid.get(&oid).cloned()
}

/// The enum type named `name` (exact, as a folded or quoted identifier gives it).
pub fn by_name(name: &str) -> Option<Arc<EnumType>> {
    let p = published().read().unwrap_or_else(|e| e.into_inner());
    p.by_name.get(name).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DataType;

    fn mood() -> EnumType {
        EnumType {
            oid: 1,
            array_oid: 2,
            name: "mood".into(),
            labels: ["sad", "ok", "happy"]
                .iter()
                .zip(1..)
                .map(|(l, i)| EnumLabel {
                    oid: 2 + i,
                    sort_order: i as f32,
                    label: l.to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn sort_orders_as_postgres_gives_them() {
        let t = mood();
        assert_eq!(t.sort_order_at(LabelPosition::Last).unwrap(), Some(4.0));
        let before_first = LabelPosition::Before("sad");
        assert_eq!(t.sort_order_at(before_first).unwrap(), Some(0.0));
        let after = LabelPosition::After("sad");
        assert_eq!(t.sort_order_at(after).unwrap(), Some(1.5));
        let after_last = LabelPosition::After("happy");
        assert_eq!(t.sort_order_at(after_last).unwrap(), Some(4.0));
        let missing = t.sort_order_at(LabelPosition::Before("x")).unwrap_err();
        assert_eq!(missing.code, "22023");
    }

    #[test]
    fn stored_values_and_keys_keep_the_sort_order() {
        use crate::codec::{decode_row, encode_key, encode_row};
        let mut t = mood();
        let sort_order = t.sort_order_at(LabelPosition::Before("ok")).unwrap();
        t.labels.insert(
            1,
            EnumLabel {
                oid: 9,
                sort_order: sort_order.unwrap(),
                label: "meh".into(),
            },
        );
        let values = t.values();
        let mut row = Vec::new();
        encode_row(&values, &mut row);
        assert_eq!(decode_row(&row).unwrap(), values);
        let keys: Vec<Vec<u8>> = (values.iter())
            .map(|v| {
                let mut k = Vec::new();
                encode_key(std::slice::from_ref(v), &mut k);
                k
            })
            .collect();
        assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "keys in declaration order"
        );
        let labels: Vec<_> = (values.iter())
            .map(|v| crate::io::to_text_string(v, &DataType::Enum(t.clone().into())))
            .collect();
        assert_eq!(
            labels,
            ["sad", "meh", "ok", "happy"].map(|l| Some(l.to_string()))
        );
    }

    #[test]
    fn an_enum_value_is_no_larger_than_a_text_value() {
        assert_eq!(std::mem::size_of::<Value>(), 32);
    }

    #[test]
    fn unknown_label_is_22p02() {
        let e = mood().value("meh").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("22P02", "invalid input value for enum mood: \"meh\"")
        );
    }
}
