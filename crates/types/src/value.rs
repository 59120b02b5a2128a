//! Runtime SQL values.

use crate::numeric::Numeric;

/// One SQL value. Which `DataType` it belongs to is known from context (the column or
/// expression type); several types share a representation (text/varchar/bpchar/name → Text,
/// oid/regclass/regproc/regtype → Oid).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int2(i16),
    Int4(i32),
    Int8(i64),
    Float4(f32),
    Float8(f64),
    Numeric(Numeric),
    Text(String),
    Bytea(Vec<u8>),
    /// Days since 2000-01-01 (PostgreSQL's epoch).
    Date(i32),
    /// Microseconds since midnight.
    Time(i64),
    /// Microseconds since 2000-01-01 00:00:00 (no time zone).
    Timestamp(i64),
    /// Microseconds since 2000-01-01 00:00:00 UTC.
    TimestampTz(i64),
    Interval {
        months: i32,
        days: i32,
        micros: i64,
    },
    Oid(u32),
    /// One-dimensional array; elements may be Null.
    Array(Vec<Value>),
    Uuid([u8; 16]),
    Jsonb(Box<crate::json::Jsonb>),
    /// A value of an enum type: its label, and the sort order that orders it among the
    /// type's values (`crate::enums`).
    Enum {
        sort: f32,
        label: String,
    },
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

use crate::datatype::DataType;
use crate::datetime::{DAYS_PER_MONTH, USECS_PER_DAY};
use std::hash::Hasher;

impl Value {
    /// Integers (any width) and oids as i64.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int2(v) => Some(*v as i64),
            Value::Int4(v) => Some(*v as i64),
            Value::Int8(v) => Some(*v),
            Value::Oid(v) => Some(*v as i64),
            _ => None,
        }
    }

    /// Any numeric value as f64 (numeric through its text, as PostgreSQL's numeric→float8).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float4(v) => Some(*v as f64),
            Value::Float8(v) => Some(*v),
            Value::Numeric(d) => Some(d.to_f64_lossy()),
            other => other.as_i64().map(|v| v as f64),
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The natural SQL type of this representation (Text → text, Oid → oid, Array of the
    /// first non-null element's type, Null → unknown).
    pub fn natural_type(&self) -> DataType {
        match self {
            Value::Null => DataType::Unknown,
            Value::Bool(_) => DataType::Bool,
            Value::Int2(_) => DataType::Int2,
            Value::Int4(_) => DataType::Int4,
            Value::Int8(_) => DataType::Int8,
            Value::Float4(_) => DataType::Float4,
            Value::Float8(_) => DataType::Float8,
            Value::Numeric(_) => DataType::NUMERIC,
            Value::Text(_) => DataType::Text,
            Value::Bytea(_) => DataType::Bytea,
            Value::Date(_) => DataType::Date,
            Value::Time(_) => DataType::TIME,
            Value::Timestamp(_) => DataType::TIMESTAMP,
            Value::TimestampTz(_) => DataType::TIMESTAMPTZ,
            Value::Interval { .. } => DataType::INTERVAL,
            Value::Oid(_) => DataType::Oid,
            Value::Uuid(_) => DataType::Uuid,
            Value::Jsonb(_) => DataType::Jsonb,
            // the value does not name its type; its label is text
            Value::Enum { .. } => DataType::Text,
            Value::Array(items) => DataType::Array(Box::new(
                items
                    .iter()
                    .find(|v| !v.is_null())
                    .map(|v| v.natural_type())
                    .unwrap_or(DataType::Text),
            )),
        }
    }

    /// Interval length as PostgreSQL compares intervals (a month is 30 days).
    pub fn interval_span(months: i32, days: i32, micros: i64) -> i128 {
        (months as i128 * DAYS_PER_MONTH as i128 + days as i128) * USECS_PER_DAY as i128
            + micros as i128
    }

    /// Hashes so that values equal under `ops::compare` hash equally: integers of every width,
    /// oids, integral numerics and integral floats hash as the same i64; 1.5 and 1.50 hash
    /// alike; dates hash as their midnight timestamp; intervals by their span. (Text hashes its
    /// bytes, so bpchar values must be compared and hashed in the same padded form.)
    pub fn hash_into<H: Hasher>(&self, h: &mut H) {
        fn hash_f64<H: Hasher>(v: f64, h: &mut H) {
            if v.is_nan() {
                h.write_u8(3);
            } else if v.fract() == 0.0 && v.abs() < 9.2e18 {
                h.write_u8(1);
                h.write_i64(v as i64);
            } else {
                h.write_u8(2);
                h.write_u64(v.to_bits());
            }
        }
        match self {
            Value::Null => h.write_u8(0),
            Value::Bool(b) => {
                h.write_u8(10);
                h.write_u8(*b as u8)
            }
            Value::Int2(_) | Value::Int4(_) | Value::Int8(_) | Value::Oid(_) => {
                h.write_u8(1);
                h.write_i64(self.as_i64().unwrap())
            }
            Value::Float4(v) => hash_f64(*v as f64, h),
            Value::Float8(v) => hash_f64(*v, h),
            Value::Numeric(d) => match d.to_i64_exact() {
                Some(i) => {
                    h.write_u8(1);
                    h.write_i64(i)
                }
                None => hash_f64(d.to_f64_lossy(), h),
            },
            Value::Text(s) => {
                h.write_u8(11);
                h.write(s.as_bytes());
                h.write_u8(0xff)
            }
            Value::Bytea(b) => {
                h.write_u8(12);
                h.write(b);
                h.write_u8(0xff)
            }
            Value::Date(d) => {
                h.write_u8(13);
                h.write_i64(match *d {
                    i32::MIN => i64::MIN,
                    i32::MAX => i64::MAX,
                    d => (d as i64).saturating_mul(USECS_PER_DAY),
                })
            }
            Value::Timestamp(t) | Value::TimestampTz(t) => {
                h.write_u8(13);
                h.write_i64(*t)
            }
            Value::Time(t) => {
                h.write_u8(14);
                h.write_i64(*t)
            }
            Value::Interval {
                months,
                days,
                micros,
            } => {
                h.write_u8(15);
                h.write_i128(Value::interval_span(*months, *days, *micros))
            }
            Value::Uuid(u) => {
                h.write_u8(17);
                h.write(u)
            }
            Value::Jsonb(j) => {
                // through the key encoding, in which equal values (1.0 and 1) are alike
                let mut key = Vec::new();
                crate::json::encode_key(j, &mut key);
                h.write_u8(18);
                h.write(&key)
            }
            Value::Enum { sort, .. } => {
                h.write_u8(19);
                h.write_u32(sort.to_bits())
            }
            Value::Array(items) => {
                h.write_u8(16);
                h.write_usize(items.len());
                for it in items {
                    it.hash_into(h);
                }
            }
        }
    }
}

/// A row of values usable as a `HashMap`/`HashSet` key with SQL grouping semantics
/// (GROUP BY / DISTINCT / hash join build side): values equal under `ops::compare` are the
/// same key (int4 5 = int8 5, 1.5 = 1.50, NaN = NaN), and NULLs group together.
#[derive(Debug, Clone)]
pub struct GroupKey(pub Vec<Value>);

impl PartialEq for GroupKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(other.0.iter())
                .all(|(a, b)| match (a.is_null(), b.is_null()) {
                    (true, true) => true,
                    (false, false) => crate::ops::compare(a, b) == Some(std::cmp::Ordering::Equal),
                    _ => false,
                })
    }
}

impl Eq for GroupKey {}

impl std::hash::Hash for GroupKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        for v in &self.0 {
            v.hash_into(state);
        }
    }
}
