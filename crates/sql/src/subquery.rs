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
}

impl SubqueryResult {
    /// The result of a subquery of `kind` whose rows are `rows`.
    pub fn from_rows(kind: &SubqueryKind, rows: Vec<Vec<Value>>) -> PgResult<SubqueryResult> {
        let first_column = |rows: Vec<Vec<Value>>| rows.into_iter().filter_map(|r| r.into_iter().next());
        Ok(match kind {
            SubqueryKind::Scalar => {
                if rows.len() > 1 {
                    return Err(PgError::new(codes::CARDINALITY_VIOLATION, "more than one row returned by a subquery used as an expression"));
                }
                SubqueryResult::Value(first_column(rows).next().unwrap_or(Value::Null))
            }
            SubqueryKind::Exists => SubqueryResult::Value(Value::Bool(!rows.is_empty())),
            SubqueryKind::Array | SubqueryKind::Quantified { .. } => SubqueryResult::Value(Value::Array(first_column(rows).collect())),
            SubqueryKind::In { .. } => SubqueryResult::Set(InSet::new(first_column(rows).collect())),
        })
    }

    /// Rows a subquery of `kind` needs to produce: EXISTS stops at the first, a scalar
    /// subquery at the second (which is an error).
    pub fn rows_needed(kind: &SubqueryKind) -> Option<usize> {
        match kind {
            SubqueryKind::Exists => Some(1),
            SubqueryKind::Scalar => Some(2),
            SubqueryKind::Array | SubqueryKind::In { .. } | SubqueryKind::Quantified { .. } => None,
        }
    }
}

/// The values of an IN subquery.
#[derive(Debug)]
pub struct InSet {
    values: Vec<Value>,
    /// Key encodings of the non-NULL values. Equal values of one type family encode
    /// alike (all integer widths, say), so a probe of that family is answered here.
    keys: FxHashSet<Vec<u8>>,
    /// The key tag (first byte) shared by all non-NULL values, if they share one.
    tag: Option<u8>,
    mixed: bool,
    has_null: bool,
}

fn key_of(v: &Value) -> Vec<u8> {
    let mut key = Vec::new();
    types::codec::encode_key(std::slice::from_ref(v), &mut key);
    key
}

impl InSet {
    fn new(values: Vec<Value>) -> InSet {
        let mut set = InSet { keys: FxHashSet::with_capacity_and_hasher(values.len(), Default::default()), values: Vec::new(), tag: None, mixed: false, has_null: false };
        for v in &values {
            if v.is_null() {
                set.has_null = true;
                continue;
            }
            let key = key_of(v);
            match set.tag {
                None => set.tag = Some(key[0]),
                Some(t) if t != key[0] => set.mixed = true,
                _ => {}
            }
            set.keys.insert(key);
        }
        set.values = values;
        set
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
        let key = key_of(v);
        if self.mixed || self.tag.is_some_and(|t| t != key[0]) {
            // Values of several type families: compare one by one, as the operator would.
            return in_values(v, self.values.iter(), negated);
        }
        if self.keys.contains(&key) {
            Value::Bool(!negated)
        } else if self.has_null {
            Value::Null
        } else {
            Value::Bool(negated)
        }
    }
}
