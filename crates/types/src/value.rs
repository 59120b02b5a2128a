//! Runtime SQL values.

use rust_decimal::Decimal;

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
    Numeric(Decimal),
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
    Interval { months: i32, days: i32, micros: i64 },
    Oid(u32),
    /// One-dimensional array; elements may be Null.
    Array(Vec<Value>),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}
