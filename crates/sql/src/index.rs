//! Secondary indexes as the catalog records them, and the storage keys of their entries
//! (decision 0035).
//!
//! An index is a storage relation of its own. Its keys are `types::codec::encode_key` of
//! the indexed values, so that key order is the index order (ascending, NULLS LAST:
//! `DESC` and `NULLS FIRST` are recorded for the catalog but do not change the stored
//! order). An entry's value is the storage key of its row; a non-unique entry's key ends
//! with it too (so entries of equal values stay distinct), and so does a unique entry
//! with a NULL value (NULLs never conflict: PostgreSQL's NULLS DISTINCT).

use crate::catalog::TableDef;
use serde::{Deserialize, Serialize};
use std::ops::Bound;
use types::Value;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexDef {
    /// pg_class OID of the index.
    pub oid: u32,
    pub name: String,
    pub columns: Vec<IndexColumn>,
    pub unique: bool,
    /// The pg_constraint OID of the UNIQUE constraint that made this index, if one did.
    pub constraint_oid: Option<u32>,
    /// Storage relation holding the entries.
    pub rel: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexColumn {
    /// Position of the column in the table.
    pub column: usize,
    pub descending: bool,
    pub nulls_first: bool,
}

/// An index entry: its storage key and whether that key must be unique in the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: Vec<u8>,
    pub unique: bool,
}

impl IndexDef {
    /// The indexed values of `row`, in index order.
    pub fn values(&self, row: &[Value]) -> Vec<Value> {
        self.columns.iter().map(|c| row[c.column].clone()).collect()
    }

    /// The entry for `row`, stored under `row_key` in its table.
    pub fn entry(&self, row: &[Value], row_key: &[u8]) -> Entry {
        let values = self.values(row);
        let unique = self.unique && !values.iter().any(Value::is_null);
        let mut key = Vec::with_capacity(16 + row_key.len());
        types::codec::encode_key(&values, &mut key);
        if !unique {
            key.extend_from_slice(row_key);
        }
        Entry { key, unique }
    }

    /// Whether an UPDATE that assigns `columns` can change this index's entries.
    pub fn covers_any(&self, mut columns: impl Iterator<Item = usize>) -> bool {
        columns.any(|c| self.columns.iter().any(|ic| ic.column == c))
    }

    /// Column names and values of `row` as PostgreSQL's unique-violation detail
    /// writes them: `(a, b)` and `(1, x)`.
    pub fn key_text(&self, table: &TableDef, row: &[Value]) -> (String, String) {
        let names: Vec<&str> = self
            .columns
            .iter()
            .map(|c| table.columns[c.column].name.as_str())
            .collect();
        let values: Vec<String> = self
            .columns
            .iter()
            .map(|c| {
                let v = &row[c.column];
                if v.is_null() {
                    return "null".into();
                }
                types::io::to_text_string(v, &table.columns[c.column].ty.to_type())
                    .unwrap_or_default()
            })
            .collect();
        (names.join(", "), values.join(", "))
    }
}

/// The end of the key range of every key that starts with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Bound<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Bound::Excluded(end);
        }
    }
    Bound::Unbounded
}

/// The lower and upper end of a range of storage keys.
pub type KeyBounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// The keys that start with `prefix` (encoded values) and whose next value lies between
/// `lower` and `upper` (encoded, with whether the bound is inclusive; open if None), as
/// storage bounds. An open upper end stops before NULL, which sorts last (a primary key
/// holds none). None if no key can lie there.
pub fn key_range(
    prefix: &[u8],
    lower: Option<(&[u8], bool)>,
    upper: Option<(&[u8], bool)>,
) -> Option<KeyBounds> {
    let with = |value: &[u8]| [prefix, value].concat();
    let lo = match lower {
        None if prefix.is_empty() => Bound::Unbounded,
        None => Bound::Included(prefix.to_vec()),
        Some((value, true)) => Bound::Included(with(value)),
        // past every key whose next value is the bound
        Some((value, false)) => match prefix_end(&with(value)) {
            Bound::Excluded(end) => Bound::Included(end),
            _ => return None,
        },
    };
    let hi = match upper {
        None => {
            let mut null = prefix.to_vec();
            types::codec::encode_key(&[types::Value::Null], &mut null);
            Bound::Excluded(null)
        }
        Some((value, true)) => prefix_end(&with(value)),
        Some((value, false)) => Bound::Excluded(with(value)),
    };
    Some((lo, hi))
}

/// PostgreSQL's default name for an index on `table` over `columns` (`t_a_b_idx`, or
/// `t_a_key` for a UNIQUE constraint), made unique against `taken` by a number as
/// PostgreSQL does (`t_a_idx1`); names are cut to 63 bytes.
pub fn default_name(
    table: &str,
    columns: &[&str],
    suffix: &str,
    taken: &dyn Fn(&str) -> bool,
) -> String {
    let base = format!("{}_{}", table, columns.join("_"));
    for n in 0.. {
        let tail = if n == 0 {
            format!("_{suffix}")
        } else {
            format!("_{suffix}{n}")
        };
        let mut head = base.clone();
        while head.len() + tail.len() > 63 {
            head.pop();
        }
        let name = format!("{head}{tail}");
        if !taken(&name) {
            return name;
        }
    }
    unreachable!("some numbered name is free")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(unique: bool) -> IndexDef {
        IndexDef {
            oid: 1,
            name: "i".into(),
            columns: vec![IndexColumn {
                column: 1,
                descending: false,
                nulls_first: false,
            }],
            unique,
            constraint_oid: None,
            rel: 9,
        }
    }

    #[test]
    fn a_unique_entry_holds_the_values_alone_unless_one_is_null() {
        let row_key = [0xAA, 0xBB];
        let row = [Value::Int4(1), Value::Int4(7)];
        let e = index(true).entry(&row, &row_key);
        assert!(e.unique);
        assert!(!e.key.ends_with(&row_key));
        let e = index(true).entry(&[Value::Int4(1), Value::Null], &row_key);
        assert!(!e.unique);
        assert!(e.key.ends_with(&row_key));
        let e = index(false).entry(&row, &row_key);
        assert!(!e.unique && e.key.ends_with(&row_key));
    }

    #[test]
    fn prefix_end_follows_every_key_with_the_prefix() {
        assert_eq!(prefix_end(&[1, 2]), Bound::Excluded(vec![1, 3]));
        assert_eq!(prefix_end(&[1, 0xFF]), Bound::Excluded(vec![2]));
        assert_eq!(prefix_end(&[0xFF]), Bound::Unbounded);
    }

    #[test]
    fn default_names_are_numbered_when_taken() {
        let taken = |n: &str| n == "t_a_idx";
        assert_eq!(default_name("t", &["a"], "idx", &taken), "t_a_idx1");
        assert_eq!(
            default_name("t", &["a", "b"], "key", &|_| false),
            "t_a_b_key"
        );
    }
}
