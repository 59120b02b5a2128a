//! What a subquery's rows become for the expression that uses them: built once per
//! distinct set of outer values by the executor, then read by every evaluation.

use crate::eval::in_values;
use crate::plan::SubqueryKind;
use pgerror::{codes, PgError, PgResult};
use rustc_hash::FxHashSet;
use types::Value;

#[derive(Debug)]
pub enum SubqueryResult {
    /// Scalar, EXISTS and ARRAY subqueries: the value itself.
    Value(Value),
    /// `x [NOT] IN (subquery)`: the subquery's first column, hashed (PostgreSQL's hashed
    /// SubPlan), so each probe costs one lookup instead of a pass over the rows.
    Set(InSet),
    /// `(x, y, …) [NOT] IN (subquery)`: the subquery's rows, hashed likewise.
    Rows(RowSet),
}

impl SubqueryResult {
    /// The result of a subquery of `kind` whose rows are `rows`.
    pub fn from_rows(kind: &SubqueryKind, rows: Vec<Vec<Value>>) -> PgResult<SubqueryResult> {
        let first_column =
            |rows: Vec<Vec<Value>>| rows.into_iter().filter_map(|r| r.into_iter().next());
        Ok(match kind {
            SubqueryKind::Scalar => {
                if rows.len() > 1 {
                    return Err(PgError::new(
                        codes::CARDINALITY_VIOLATION,
                        "more than one row returned by a subquery used as an expression",
                    ));
                }
                SubqueryResult::Value(first_column(rows).next().unwrap_or(Value::Null))
            }
            SubqueryKind::Exists => SubqueryResult::Value(Value::Bool(!rows.is_empty())),
            SubqueryKind::Array | SubqueryKind::Quantified { .. } => {
                SubqueryResult::Value(Value::Array(first_column(rows).collect()))
            }
            SubqueryKind::In { .. } => {
                SubqueryResult::Set(InSet::new(first_column(rows).collect()))
            }
            SubqueryKind::RowIn { left, .. } => SubqueryResult::Rows(RowSet::new(rows, left.len())),
        })
    }

    /// Rows a subquery of `kind` needs to produce: EXISTS stops at the first, a scalar
    /// subquery at the second (which is an error).
    pub fn rows_needed(kind: &SubqueryKind) -> Option<usize> {
        match kind {
            SubqueryKind::Exists => Some(1),
            SubqueryKind::Scalar => Some(2),
            SubqueryKind::Array
            | SubqueryKind::In { .. }
            | SubqueryKind::RowIn { .. }
            | SubqueryKind::Quantified { .. } => None,
        }
    }
}

/// The values of an IN subquery.
#[derive(Debug)]
pub struct InSet {
    values: Vec<Value>,
    keys: InKeys,
    has_null: bool,
}

/// The non-NULL values, hashed. Equal values of one type family encode alike (all
/// integer widths, say), so a probe of that family is answered here.
#[derive(Debug)]
enum InKeys {
    /// All of them integers (of any width): by value, without a key encoding to build
    /// per value and per probe.
    Ints(FxHashSet<i64>),
    /// Their key encodings, with the key tag (first byte) all share if they share one
    /// (`mixed`: they do not).
    Encoded {
        keys: FxHashSet<Vec<u8>>,
        tag: Option<u8>,
        mixed: bool,
    },
}

fn key_of(v: &Value) -> Vec<u8> {
    let mut key = Vec::new();
    types::codec::encode_key(std::slice::from_ref(v), &mut key);
    key
}

fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Int2(_) | Value::Int4(_) | Value::Int8(_) => v.as_i64(),
        _ => None,
    }
}

impl InSet {
    fn new(values: Vec<Value>) -> InSet {
        let has_null = values.iter().any(Value::is_null);
        let ints: Option<FxHashSet<i64>> =
            values.iter().filter(|v| !v.is_null()).map(int_of).collect();
        let keys = match ints {
            Some(ints) => InKeys::Ints(ints),
            None => {
                let (mut tag, mut mixed) = (None, false);
                let mut keys =
                    FxHashSet::with_capacity_and_hasher(values.len(), Default::default());
                for v in values.iter().filter(|v| !v.is_null()) {
                    let key = key_of(v);
                    match tag {
                        None => tag = Some(key[0]),
                        Some(t) if t != key[0] => mixed = true,
                        _ => {}
                    }
                    keys.insert(key);
                }
                InKeys::Encoded { keys, tag, mixed }
            }
        };
        InSet {
            values,
            keys,
            has_null,
        }
    }

    /// SQL `v [NOT] IN (values)`.
    pub fn contains(&self, v: &Value, negated: bool) -> Value {
        // IN over no rows is false, NOT IN true, even for NULL.
        if self.values.is_empty() {
            return Value::Bool(negated);
        }
        if v.is_null() {
            return Value::Null;
        }
        let found = match (&self.keys, int_of(v)) {
            (InKeys::Ints(ints), Some(i)) => Some(ints.contains(&i)),
            (InKeys::Ints(ints), None) => ints.is_empty().then_some(false),
            (InKeys::Encoded { keys, tag, mixed }, _) => {
                let key = key_of(v);
                (!mixed && tag.is_none_or(|t| t == key[0])).then(|| keys.contains(&key))
            }
        };
        // None: values of several type families, compared one by one as the operator would
        let Some(found) = found else {
            return in_values(v, self.values.iter(), negated);
        };
        if found {
            Value::Bool(!negated)
        } else if self.has_null {
            Value::Null
        } else {
            Value::Bool(negated)
        }
    }
}

/// The rows of a row-valued IN subquery. Rows without NULLs are hashed by their columns'
/// key encodings where each column's values share one key tag (one type family); rows
/// with a NULL, which can only make a probe NULL, are kept apart.
#[derive(Debug)]
pub struct RowSet {
    hashed: FxHashSet<Vec<u8>>,
    with_null: Vec<Vec<Value>>,
    /// Each column's key tag, None where its values have several (then probes compare
    /// row by row, as the operator would).
    tags: Vec<Option<u8>>,
    /// The rows without NULLs, for those probes.
    rows: Vec<Vec<Value>>,
}

/// A row's key: its values' key encodings one after another; None if one is NULL.
fn row_key(values: &[Value], tags: &mut [Option<Option<u8>>]) -> Option<Vec<u8>> {
    let mut key = Vec::new();
    for (v, tag) in values.iter().zip(tags) {
        if v.is_null() {
            return None;
        }
        let start = key.len();
        types::codec::encode_key(std::slice::from_ref(v), &mut key);
        match tag {
            None => *tag = Some(Some(key[start])),
            Some(Some(t)) if *t != key[start] => *tag = Some(None),
            _ => {}
        }
    }
    Some(key)
}

/// SQL row equality: FALSE if a column differs, else NULL if one is NULL, else TRUE.
fn rows_equal(a: &[Value], b: &[Value]) -> Option<bool> {
    let mut unknown = false;
    for (x, y) in a.iter().zip(b) {
        if x.is_null() || y.is_null() {
            unknown = true;
        } else if types::ops::compare(x, y) != Some(std::cmp::Ordering::Equal) {
            return Some(false);
        }
    }
    (!unknown).then_some(true)
}

impl RowSet {
    fn new(rows: Vec<Vec<Value>>, width: usize) -> RowSet {
        let mut tags: Vec<Option<Option<u8>>> = vec![None; width];
        let (mut hashed, mut with_null, mut kept) = (FxHashSet::default(), Vec::new(), Vec::new());
        for mut row in rows {
            row.truncate(width);
            match row_key(&row, &mut tags) {
                Some(key) => {
                    hashed.insert(key);
                    kept.push(row);
                }
                None => with_null.push(row),
            }
        }
        RowSet {
            hashed,
            with_null,
            tags: tags.into_iter().map(Option::flatten).collect(),
            rows: kept,
        }
    }

    /// SQL `row [NOT] IN (rows)`: TRUE if a row equals it, else NULL if one might (a NULL
    /// on either side), else FALSE; negated for NOT IN.
    pub fn contains(&self, row: &[Value], negated: bool) -> Value {
        if self.rows.is_empty() && self.with_null.is_empty() {
            return Value::Bool(negated);
        }
        let mut probe_tags: Vec<Option<Option<u8>>> = vec![None; row.len()];
        let key = row_key(row, &mut probe_tags);
        // hashed where each column's probe value is of its column's one type family
        let comparable = (probe_tags.iter().zip(&self.tags))
            .all(|(probe, tag)| matches!((probe, tag), (Some(Some(p)), Some(t)) if p == t));
        let (found, unknown) = match key {
            Some(key) if comparable => (self.hashed.contains(&key), false),
            _ => {
                let mut unknown = false;
                let mut found = false;
                for r in &self.rows {
                    match rows_equal(row, r) {
                        Some(true) => {
                            found = true;
                            break;
                        }
                        None => unknown = true,
                        Some(false) => {}
                    }
                }
                (found, unknown)
            }
        };
        let unknown = !found
            && (unknown || (self.with_null.iter()).any(|r| rows_equal(row, r) != Some(false)));
        match (found, unknown) {
            (true, _) => Value::Bool(!negated),
            (false, true) => Value::Null,
            (false, false) => Value::Bool(negated),
        }
    }
}
