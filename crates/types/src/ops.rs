//! Operators: resolution (which operand casts and result type PostgreSQL would pick) and
//! evaluation with PostgreSQL's semantics and errors.

use crate::datetime::{self, USECS_PER_DAY};
use crate::numeric;
use crate::numeric::Numeric;
use crate::{DataType, Value};
use pgerror::{codes, PgError, PgResult};
use std::cmp::Ordering;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    Concat,
    Like,
    NotLike,
    ILike,
    NotILike,
    RegexMatch,
    RegexNotMatch,
    RegexIMatch,
    RegexNotIMatch,
    BitAnd,
    BitOr,
    BitXor,
    ShiftLeft,
    ShiftRight,
}

impl BinaryOp {
    /// The operator's SQL spelling (as in error messages).
    pub fn symbol(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Mod => "%",
            Pow => "^",
            Eq => "=",
            NotEq => "<>",
            Lt => "<",
            LtEq => "<=",
            Gt => ">",
            GtEq => ">=",
            Concat => "||",
            Like => "~~",
            NotLike => "!~~",
            ILike => "~~*",
            NotILike => "!~~*",
            RegexMatch => "~",
            RegexNotMatch => "!~",
            RegexIMatch => "~*",
            RegexNotIMatch => "!~*",
            BitAnd => "&",
            BitOr => "|",
            BitXor => "#",
            ShiftLeft => "<<",
            ShiftRight => ">>",
        }
    }

    pub fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(self, Eq | NotEq | Lt | LtEq | Gt | GtEq)
    }

    /// The integer bit operators (`&`, `|`, `#`, `<<`, `>>`).
    fn is_bitwise(self) -> bool {
        use BinaryOp::*;
        matches!(self, BitAnd | BitOr | BitXor | ShiftLeft | ShiftRight)
    }

    fn is_arith(self) -> bool {
        use BinaryOp::*;
        matches!(self, Add | Sub | Mul | Div | Mod | Pow)
    }

    fn is_pattern(self) -> bool {
        use BinaryOp::*;
        matches!(
            self,
            Like | NotLike
                | ILike
                | NotILike
                | RegexMatch
                | RegexNotMatch
                | RegexIMatch
                | RegexNotIMatch
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum UnaryOp {
    Neg,
    Plus,
    Not,
    /// `~`, on integers.
    BitNot,
}

impl UnaryOp {
    /// The operator's SQL spelling (as in error messages).
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Plus => "+",
            UnaryOp::Not => "NOT",
            UnaryOp::BitNot => "~",
        }
    }
}

// ---------------------------------------------------------------------------------------
// Resolution

fn no_operator(op: BinaryOp, l: &DataType, r: &DataType) -> PgError {
    PgError::new(
        codes::UNDEFINED_FUNCTION,
        format!("operator does not exist: {} {} {}", l.format_type_be(), op.symbol(), r.format_type_be()),
    )
    .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
}

fn not_unique(op: BinaryOp, l: &DataType, r: &DataType) -> PgError {
    PgError::new(
        codes::AMBIGUOUS_FUNCTION,
        format!(
            "operator is not unique: {} {} {}",
            l.format_type_be(),
            op.symbol(),
            r.format_type_be()
        ),
    )
    .with_hint(
        "Could not choose a best candidate operator. You might need to add explicit type casts.",
    )
}

/// Rank for the common numeric type: int2 < int4 < int8 < numeric < float4 < float8.
fn num_rank(t: &DataType) -> Option<u8> {
    Some(match t {
        DataType::Int2 => 0,
        DataType::Int4 => 1,
        DataType::Int8 => 2,
        DataType::Numeric { .. } => 3,
        DataType::Float4 => 4,
        DataType::Float8 => 5,
        _ => return None,
    })
}

/// The type both numeric operands are cast to (int4 + int8 → int8, int + numeric → numeric,
/// float4 with anything but float4 → float8).
fn common_numeric(l: &DataType, r: &DataType) -> Option<DataType> {
    let (a, b) = (num_rank(l)?, num_rank(r)?);
    Some(match (a, b) {
        (4, 4) => DataType::Float4,
        _ if a >= 4 || b >= 4 => DataType::Float8,
        _ => match a.max(b) {
            0 => DataType::Int2,
            1 => DataType::Int4,
            2 => DataType::Int8,
            _ => DataType::NUMERIC,
        },
    })
}

fn is_texty(t: &DataType) -> bool {
    t.is_string() || matches!(t, DataType::Unknown)
}

/// Common type for comparing two known types, if PostgreSQL has an operator for them.
fn comparison_type(l: &DataType, r: &DataType) -> Option<(DataType, DataType)> {
    use DataType as T;
    if let Some(c) = common_numeric(l, r) {
        return Some((c.clone(), c));
    }
    if l.is_oid_like() && (r.is_oid_like() || r.is_integer()) || r.is_oid_like() && l.is_integer() {
        if l == r {
            return Some((l.clone(), r.clone()));
        }
        return Some((T::Oid, T::Oid));
    }
    if l.is_string() && r.is_string() {
        return Some(match (l, r) {
            (T::Bpchar { .. }, T::Bpchar { .. }) => {
                (T::Bpchar { len: None }, T::Bpchar { len: None })
            }
            (T::Name, T::Name) => (T::Name, T::Name),
            _ => (T::Text, T::Text),
        });
    }
    match (l, r) {
        (T::Char, T::Char) => Some((T::Char, T::Char)),
        (T::Char, s) | (s, T::Char) if s.is_string() => Some((T::Text, T::Text)),
        (T::Bool, T::Bool)
        | (T::Bytea, T::Bytea)
        | (T::Uuid, T::Uuid)
        | (T::Jsonb, T::Jsonb)
        | (T::Time { .. }, T::Time { .. })
        | (T::Interval { .. }, T::Interval { .. })
        | (T::Date, T::Date) => Some((l.clone(), r.clone())),
        (
            T::Date | T::Timestamp { .. } | T::TimestampTz { .. },
            T::Date | T::Timestamp { .. } | T::TimestampTz { .. },
        ) => {
            let t = if matches!(l, T::TimestampTz { .. }) || matches!(r, T::TimestampTz { .. }) {
                T::TIMESTAMPTZ
            } else {
                T::TIMESTAMP
            };
            Some((t.clone(), t))
        }
        (T::Array(a), T::Array(b)) => {
            let (ca, cb) = comparison_type(a, b)?;
            Some((T::Array(Box::new(ca)), T::Array(Box::new(cb))))
        }
        (T::Int2Vector, T::Int2Vector) | (T::OidVector, T::OidVector) => {
            Some((l.clone(), r.clone()))
        }
        // two values of one enum type (of two types: no operator, as in PostgreSQL)
        (T::Enum(_), T::Enum(_)) if l == r => Some((l.clone(), r.clone())),
        _ => None,
    }
}

/// Operators on two known (non-unknown) types.
fn lookup(op: BinaryOp, l: &DataType, r: &DataType) -> Option<(DataType, DataType, DataType)> {
    use BinaryOp::*;
    use DataType as T;
    if op.is_comparison() {
        let (a, b) = comparison_type(l, r)?;
        return Some((a, b, T::Bool));
    }
    if op == Concat {
        return match (l, r) {
            (T::Array(a), T::Array(b)) => {
                let (ca, _) = comparison_type(a, b)?;
                let t = T::Array(Box::new(ca));
                Some((t.clone(), t.clone(), t))
            }
            (T::Array(a), e) if !matches!(e, T::Array(_)) => {
                let (ca, _) = comparison_type(a, e)?;
                Some((
                    T::Array(Box::new(ca.clone())),
                    ca.clone(),
                    T::Array(Box::new(ca)),
                ))
            }
            (e, T::Array(b)) => {
                let (cb, _) = comparison_type(b, e)?;
                Some((
                    cb.clone(),
                    T::Array(Box::new(cb.clone())),
                    T::Array(Box::new(cb)),
                ))
            }
            (T::Bytea, T::Bytea) => Some((T::Bytea, T::Bytea, T::Bytea)),
            _ if is_texty(l) || is_texty(r) || matches!(l, T::Char) || matches!(r, T::Char) => {
                Some((T::Text, T::Text, T::Text))
            }
            _ => None,
        };
    }
    if op.is_bitwise() {
        let int = |t: &T| matches!(t, T::Int2 | T::Int4 | T::Int8);
        return match (l, r) {
            // A shift keeps its left operand's type and takes an int4 count.
            (a, b) if matches!(op, ShiftLeft | ShiftRight) => {
                (int(a) && matches!(b, T::Int2 | T::Int4)).then(|| (a.clone(), T::Int4, a.clone()))
            }
            (a, b) if int(a) && int(b) => {
                let c = common_numeric(a, b)?;
                Some((c.clone(), c.clone(), c))
            }
            _ => None,
        };
    }
    if op.is_pattern() {
        let like = matches!(op, Like | NotLike | ILike | NotILike);
        if like && matches!((l, r), (T::Bytea, T::Bytea)) {
            return Some((T::Bytea, T::Bytea, T::Bool));
        }
        if (l.is_string() || matches!(l, T::Char)) && (r.is_string() || matches!(r, T::Char)) {
            let lt = match l {
                T::Bpchar { .. } => T::Bpchar { len: None },
                T::Name => T::Name,
                _ => T::Text,
            };
            return Some((lt, T::Text, T::Bool));
        }
        return None;
    }
    // arithmetic
    let num = |a: &T, b: &T| {
        let c = common_numeric(a, b)?;
        match op {
            Mod if matches!(c, T::Float4 | T::Float8) => None,
            Pow => {
                let c = match c {
                    T::Int2 | T::Int4 | T::Int8 | T::Float4 => T::Float8,
                    c => c,
                };
                Some((c.clone(), c.clone(), c))
            }
            _ => Some((c.clone(), c.clone(), c)),
        }
    };
    if let Some(x) = num(l, r) {
        return Some(x);
    }
    let small_int = |t: &T| matches!(t, T::Int2 | T::Int4);
    let ts = |t: &T| matches!(t, T::Timestamp { .. } | T::TimestampTz { .. });
    match (op, l, r) {
        (Add, T::Date, i) if small_int(i) => Some((T::Date, T::Int4, T::Date)),
        (Add, i, T::Date) if small_int(i) => Some((T::Int4, T::Date, T::Date)),
        (Sub, T::Date, i) if small_int(i) => Some((T::Date, T::Int4, T::Date)),
        (Sub, T::Date, T::Date) => Some((T::Date, T::Date, T::Int4)),
        (Add | Sub, T::Date, T::Interval { .. }) => Some((T::TIMESTAMP, T::INTERVAL, T::TIMESTAMP)),
        (Add, T::Interval { .. }, T::Date) => Some((T::INTERVAL, T::TIMESTAMP, T::TIMESTAMP)),
        (Add, T::Date, T::Time { .. }) => Some((T::Date, T::TIME, T::TIMESTAMP)),
        (Add, T::Time { .. }, T::Date) => Some((T::TIME, T::Date, T::TIMESTAMP)),
        (Add | Sub, t, T::Interval { .. }) if ts(t) => Some((t.clone(), T::INTERVAL, t.clone())),
        (Add, T::Interval { .. }, t) if ts(t) => Some((T::INTERVAL, t.clone(), t.clone())),
        (Sub, a, b) if (ts(a) || matches!(a, T::Date)) && (ts(b) || matches!(b, T::Date)) => {
            let t = if matches!(a, T::TimestampTz { .. }) || matches!(b, T::TimestampTz { .. }) {
                T::TIMESTAMPTZ
            } else {
                T::TIMESTAMP
            };
            Some((t.clone(), t, T::INTERVAL))
        }
        (Add | Sub, T::Time { .. }, T::Interval { .. }) => Some((T::TIME, T::INTERVAL, T::TIME)),
        (Add, T::Interval { .. }, T::Time { .. }) => Some((T::INTERVAL, T::TIME, T::TIME)),
        (Sub, T::Time { .. }, T::Time { .. }) => Some((T::TIME, T::TIME, T::INTERVAL)),
        (Add | Sub, T::Interval { .. }, T::Interval { .. }) => {
            Some((T::INTERVAL, T::INTERVAL, T::INTERVAL))
        }
        (Mul | Div, T::Interval { .. }, n) if n.is_numeric() => {
            Some((T::INTERVAL, T::Float8, T::INTERVAL))
        }
        (Mul, n, T::Interval { .. }) if n.is_numeric() => {
            Some((T::Float8, T::INTERVAL, T::INTERVAL))
        }
        _ => None,
    }
}

/// Resolves `left op right` as PostgreSQL would for these types: returns the types to cast
/// the left and right operands to, and the result type. Unknown literals take the other
/// side's type first (then text/float8/interval as fallbacks, as PG's heuristics end up).
pub fn resolve_binary(
    op: BinaryOp,
    left: &DataType,
    right: &DataType,
) -> PgResult<(DataType, DataType, DataType)> {
    use DataType as T;
    // Operators are declared on types without modifiers, and their results carry none
    // (`timestamp(0) + interval` is a timestamp, rounded only when stored).
    let (left, right) = (&left.without_typmod(), &right.without_typmod());
    let lu = matches!(left, T::Unknown);
    let ru = matches!(right, T::Unknown);
    if lu && ru {
        if op.is_comparison() || op.is_pattern() || op == BinaryOp::Concat {
            let res = if op.is_comparison() || op.is_pattern() {
                T::Bool
            } else {
                T::Text
            };
            return Ok((T::Text, T::Text, res));
        }
        return Err(not_unique(op, left, right));
    }
    if lu || ru {
        let known = if lu { right } else { left };
        let base = known.without_typmod();
        let mut candidates: Vec<DataType> = Vec::new();
        if op.is_pattern() || (op == BinaryOp::Concat && !matches!(known, T::Array(_))) {
            candidates.push(T::Text);
        }
        if op == BinaryOp::Concat {
            if let T::Array(_) = known {
                candidates.push(base.clone());
            }
        }
        candidates.push(base.clone());
        if op.is_arith() {
            match known {
                // date + int4 / date + interval / date + time all apply
                T::Date if op == BinaryOp::Add => return Err(not_unique(op, left, right)),
                T::Timestamp { .. } | T::TimestampTz { .. } | T::Time { .. }
                    if op == BinaryOp::Add =>
                {
                    candidates.push(T::INTERVAL)
                }
                T::Interval { .. } => candidates.push(T::Float8),
                _ => {}
            }
        }
        candidates.push(T::Text);
        for c in candidates {
            let (l, r) = if lu {
                (c.clone(), right.clone())
            } else {
                (left.clone(), c.clone())
            };
            if let Some(x) = lookup(op, &l, &r) {
                return Ok(x);
            }
        }
        return Err(no_operator(op, left, right));
    }
    lookup(op, left, right).ok_or_else(|| no_operator(op, left, right))
}

// ---------------------------------------------------------------------------------------
// Comparison

fn float_cmp(a: f64, b: f64) -> Ordering {
    // PostgreSQL: NaN equals NaN and sorts above everything; -0 == 0.
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

fn date_as_ts(d: i32) -> i128 {
    match d {
        i32::MIN => i64::MIN as i128,
        i32::MAX => i64::MAX as i128,
        d => d as i128 * USECS_PER_DAY as i128,
    }
}

/// Compares two non-null values of the same type family (integer widths and oid mix,
/// numeric vs integer, float vs any number, date vs timestamps). None when incomparable
/// or either is Null. Text compares bytewise (C collation).
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    use Value as V;
    match (a, b) {
        (V::Null, _) | (_, V::Null) => None,
        (V::Bool(x), V::Bool(y)) => Some(x.cmp(y)),
        (V::Numeric(x), V::Numeric(y)) => Some(x.cmp(y)),
        (V::Numeric(x), y) if y.as_i64().is_some() => Some(x.cmp(&Numeric::from(y.as_i64()?))),
        (x, V::Numeric(y)) if x.as_i64().is_some() => Some(Numeric::from(x.as_i64()?).cmp(y)),
        (V::Float4(_) | V::Float8(_), _) | (_, V::Float4(_) | V::Float8(_)) => {
            Some(float_cmp(a.as_f64()?, b.as_f64()?))
        }
        (V::Text(x), V::Text(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (V::Bytea(x), V::Bytea(y)) => Some(x.cmp(y)),
        (V::Uuid(x), V::Uuid(y)) => Some(x.cmp(y)),
        (V::Jsonb(x), V::Jsonb(y)) => Some(crate::json::compare(x, y)),
        (V::Enum { sort: x, .. }, V::Enum { sort: y, .. }) => x.partial_cmp(y),
        (V::Date(x), V::Date(y)) => Some(x.cmp(y)),
        (V::Date(x), V::Timestamp(y) | V::TimestampTz(y)) => {
            Some(date_as_ts(*x).cmp(&(*y as i128)))
        }
        (V::Timestamp(x) | V::TimestampTz(x), V::Date(y)) => {
            Some((*x as i128).cmp(&date_as_ts(*y)))
        }
        (V::Timestamp(x) | V::TimestampTz(x), V::Timestamp(y) | V::TimestampTz(y)) => {
            Some(x.cmp(y))
        }
        (V::Time(x), V::Time(y)) => Some(x.cmp(y)),
        (
            V::Interval {
                months: m1,
                days: d1,
                micros: u1,
            },
            V::Interval {
                months: m2,
                days: d2,
                micros: u2,
            },
        ) => Some(Value::interval_span(*m1, *d1, *u1).cmp(&Value::interval_span(*m2, *d2, *u2))),
        (V::Array(x), V::Array(y)) => {
            for (p, q) in x.iter().zip(y.iter()) {
                let o = match (p.is_null(), q.is_null()) {
                    (true, true) => Ordering::Equal,
                    (true, false) => Ordering::Greater,
                    (false, true) => Ordering::Less,
                    _ => compare(p, q)?,
                };
                if o != Ordering::Equal {
                    return Some(o);
                }
            }
            Some(x.len().cmp(&y.len()))
        }
        _ => {
            let (x, y) = (a.as_i64()?, b.as_i64()?);
            Some(x.cmp(&y))
        }
    }
}

fn variant_rank(v: &Value) -> u8 {
    match v {
        Value::Bool(_) => 0,
        Value::Int2(_)
        | Value::Int4(_)
        | Value::Int8(_)
        | Value::Oid(_)
        | Value::Numeric(_)
        | Value::Float4(_)
        | Value::Float8(_) => 1,
        Value::Text(_) => 2,
        Value::Bytea(_) => 3,
        Value::Date(_) | Value::Timestamp(_) | Value::TimestampTz(_) => 4,
        Value::Time(_) => 5,
        Value::Interval { .. } => 6,
        Value::Array(_) => 7,
        Value::Uuid(_) => 8,
        Value::Jsonb(_) => 9,
        Value::Enum { .. } => 10,
        Value::Null => 11,
    }
}

/// Total order for ORDER BY (ASC): NULLs last, NaN above every number; values of
/// different families order by family (never happens for a well-typed column).
pub fn sort_cmp(a: &Value, b: &Value) -> Ordering {
    match (a.is_null(), b.is_null()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    compare(a, b).unwrap_or_else(|| variant_rank(a).cmp(&variant_rank(b)))
}

/// Comparison with bpchar semantics (trailing spaces insignificant) when `operand` is
/// `character(n)`/`bpchar`; otherwise the same as `compare`.
pub fn compare_typed(a: &Value, b: &Value, operand: &DataType) -> Option<Ordering> {
    if let (DataType::Bpchar { .. }, Value::Text(x), Value::Text(y)) = (operand, a, b) {
        return Some(
            x.trim_end_matches(' ')
                .as_bytes()
                .cmp(y.trim_end_matches(' ').as_bytes()),
        );
    }
    compare(a, b)
}

// ---------------------------------------------------------------------------------------
// Evaluation

fn out_of_range(what: &str) -> PgError {
    PgError::new(
        codes::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("{what} out of range"),
    )
}

fn div_zero() -> PgError {
    PgError::new(codes::DIVISION_BY_ZERO, "division by zero")
}

#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum IntW {
    I2,
    I4,
    I8,
}

fn int_w(v: &Value) -> Option<(IntW, i64)> {
    match v {
        Value::Int2(x) => Some((IntW::I2, *x as i64)),
        Value::Int4(x) => Some((IntW::I4, *x as i64)),
        Value::Int8(x) => Some((IntW::I8, *x)),
        _ => None,
    }
}

fn int_result(w: IntW, v: Option<i64>) -> PgResult<Value> {
    let name = match w {
        IntW::I2 => "smallint",
        IntW::I4 => "integer",
        IntW::I8 => "bigint",
    };
    let v = v.ok_or_else(|| out_of_range(name))?;
    match w {
        IntW::I2 => i16::try_from(v)
            .map(Value::Int2)
            .map_err(|_| out_of_range(name)),
        IntW::I4 => i32::try_from(v)
            .map(Value::Int4)
            .map_err(|_| out_of_range(name)),
        IntW::I8 => Ok(Value::Int8(v)),
    }
}

fn int_arith(op: BinaryOp, w: IntW, a: i64, b: i64) -> PgResult<Value> {
    match op {
        BinaryOp::Add => int_result(w, a.checked_add(b)),
        BinaryOp::Sub => int_result(w, a.checked_sub(b)),
        BinaryOp::Mul => int_result(w, a.checked_mul(b)),
        BinaryOp::Div => {
            if b == 0 {
                return Err(div_zero());
            }
            int_result(w, a.checked_div(b))
        }
        BinaryOp::Mod => {
            if b == 0 {
                return Err(div_zero());
            }
            int_result(w, Some(if b == -1 { 0 } else { a % b }))
        }
        BinaryOp::Pow => float_arith(op, a as f64, b as f64, false),
        _ => Err(PgError::internal("not an arithmetic operator")),
    }
}

fn float_check(r: f64, a: f64, b: f64, zero_ok: bool, is_f4: bool) -> PgResult<Value> {
    let r = if is_f4 { (r as f32) as f64 } else { r };
    if r.is_infinite() && !a.is_infinite() && !b.is_infinite() {
        return Err(PgError::new(
            codes::NUMERIC_VALUE_OUT_OF_RANGE,
            "value out of range: overflow",
        ));
    }
    if r == 0.0 && !zero_ok {
        return Err(PgError::new(
            codes::NUMERIC_VALUE_OUT_OF_RANGE,
            "value out of range: underflow",
        ));
    }
    Ok(if is_f4 {
        Value::Float4(r as f32)
    } else {
        Value::Float8(r)
    })
}

fn float_arith(op: BinaryOp, a: f64, b: f64, is_f4: bool) -> PgResult<Value> {
    match op {
        BinaryOp::Add => float_check(a + b, a, b, true, is_f4),
        BinaryOp::Sub => float_check(a - b, a, b, true, is_f4),
        BinaryOp::Mul => float_check(a * b, a, b, a == 0.0 || b == 0.0, is_f4),
        BinaryOp::Div => {
            // NaN divided by zero is NaN, as in PostgreSQL.
            if b == 0.0 && !a.is_nan() {
                return Err(div_zero());
            }
            float_check(a / b, a, b, a == 0.0 || b.is_infinite(), is_f4)
        }
        BinaryOp::Pow => {
            if a == 0.0 && b < 0.0 {
                return Err(PgError::new(
                    "2201F",
                    "zero raised to a negative power is undefined",
                ));
            }
            if a < 0.0 && b.fract() != 0.0 && b.is_finite() {
                return Err(PgError::new(
                    "2201F",
                    "a negative number raised to a non-integer power yields a complex result",
                ));
            }
            let r = a.powf(b);
            float_check(
                r,
                a,
                b,
                a == 0.0 || r == 0.0 && (b.is_infinite() || a.abs() < 1.0 || b < 0.0),
                false,
            )
        }
        BinaryOp::Mod => Err(PgError::new(
            codes::UNDEFINED_FUNCTION,
            "operator does not exist: double precision % double precision",
        )),
        _ => Err(PgError::internal("not an arithmetic operator")),
    }
}

fn numeric_arith(op: BinaryOp, a: &Numeric, b: &Numeric) -> PgResult<Value> {
    Ok(Value::Numeric(match op {
        BinaryOp::Add => numeric::add(a, b)?,
        BinaryOp::Sub => numeric::sub(a, b)?,
        BinaryOp::Mul => numeric::mul(a, b)?,
        BinaryOp::Div => numeric::div(a, b)?,
        BinaryOp::Mod => numeric::rem(a, b)?,
        BinaryOp::Pow => numeric::pow(a, b)?,
        _ => return Err(PgError::internal("not an arithmetic operator")),
    }))
}

fn to_numeric(v: &Value) -> Option<Numeric> {
    match v {
        Value::Numeric(d) => Some(d.clone()),
        other => other.as_i64().map(Numeric::from),
    }
}

fn ts_out_of_range() -> PgError {
    PgError::new(codes::DATETIME_FIELD_OVERFLOW, "timestamp out of range")
}

fn interval_out_of_range() -> PgError {
    PgError::new(codes::DATETIME_FIELD_OVERFLOW, "interval out of range")
}

/// timestamp + interval as timestamp_pl_interval: months (clamping the day), days, then µs.
pub fn timestamp_add_interval(ts: i64, months: i32, days: i32, micros: i64) -> PgResult<i64> {
    if ts == i64::MIN || ts == i64::MAX {
        return Ok(ts);
    }
    let mut t = ts;
    if months != 0 || days != 0 {
        let day = t.div_euclid(USECS_PER_DAY);
        let tod = t.rem_euclid(USECS_PER_DAY);
        let (mut y, mut m, mut d) = datetime::j2date(day + datetime::POSTGRES_EPOCH_JDATE);
        if months != 0 {
            let total = y * 12 + (m as i64 - 1) + months as i64;
            y = total.div_euclid(12);
            m = (total.rem_euclid(12) + 1) as u32;
            d = d.min(datetime::days_in_month(y, m));
        }
        let j = datetime::date2j(y, m as i64, d as i64) + days as i64;
        t = (j - datetime::POSTGRES_EPOCH_JDATE)
            .checked_mul(USECS_PER_DAY)
            .ok_or_else(ts_out_of_range)?
            + tod;
    }
    let t = t.checked_add(micros).ok_or_else(ts_out_of_range)?;
    if !datetime::timestamp_in_range(t) || t == i64::MIN || t == i64::MAX {
        return Err(ts_out_of_range());
    }
    Ok(t)
}

fn interval_neg(months: i32, days: i32, micros: i64) -> PgResult<Value> {
    Ok(Value::Interval {
        months: months.checked_neg().ok_or_else(interval_out_of_range)?,
        days: days.checked_neg().ok_or_else(interval_out_of_range)?,
        micros: micros.checked_neg().ok_or_else(interval_out_of_range)?,
    })
}

/// interval * factor (or / factor) as PostgreSQL's interval_mul/interval_div.
fn interval_scale(
    months: i32,
    days: i32,
    micros: i64,
    factor: f64,
    divide: bool,
) -> PgResult<Value> {
    if divide && factor == 0.0 {
        return Err(div_zero());
    }
    let f = |x: f64| if divide { x / factor } else { x * factor };
    let tsround = |x: f64| (x * 1e6).round_ties_even() / 1e6;
    let rm = f(months as f64);
    if rm.is_nan() || rm > i32::MAX as f64 || rm < i32::MIN as f64 {
        return Err(interval_out_of_range());
    }
    let rd = f(days as f64);
    if rd.is_nan() || rd > i32::MAX as f64 || rd < i32::MIN as f64 {
        return Err(interval_out_of_range());
    }
    let mut r_month = rm as i32;
    let mut r_day = rd as i32;
    let month_remainder_days = tsround((rm - r_month as f64) * 30.0);
    let mut sec_remainder = tsround(
        (rd - r_day as f64 + month_remainder_days - month_remainder_days.trunc()) * 86400.0,
    );
    if sec_remainder.abs() >= 86400.0 {
        r_day += (sec_remainder / 86400.0) as i32;
        sec_remainder -= ((sec_remainder / 86400.0) as i32) as f64 * 86400.0;
    }
    r_day += month_remainder_days as i32;
    let rt = (f(micros as f64) + sec_remainder * 1e6).round_ties_even();
    if rt.is_nan() || rt >= i64::MAX as f64 || rt < i64::MIN as f64 {
        return Err(interval_out_of_range());
    }
    let _ = &mut r_month;
    Ok(Value::Interval {
        months: r_month,
        days: r_day,
        micros: rt as i64,
    })
}

fn date_result(d: i64) -> PgResult<Value> {
    let d32 = i32::try_from(d)
        .ok()
        .filter(|d| datetime::date_in_range(*d) && *d != i32::MIN && *d != i32::MAX);
    d32.map(Value::Date)
        .ok_or_else(|| PgError::new(codes::DATETIME_FIELD_OVERFLOW, "date out of range"))
}

fn like_error() -> PgError {
    PgError::new(
        codes::INVALID_ESCAPE_SEQUENCE,
        "LIKE pattern must not end with escape character",
    )
}

/// SQL LIKE on characters: `%` any sequence, `_` one character, `\` escapes the next.
pub fn like_match(s: &str, pattern: &str, case_insensitive: bool) -> PgResult<bool> {
    let (s, p): (Vec<char>, Vec<char>) = if case_insensitive {
        (
            s.to_lowercase().chars().collect(),
            pattern.to_lowercase().chars().collect(),
        )
    } else {
        (s.chars().collect(), pattern.chars().collect())
    };
    if p.last() == Some(&'\\') {
        // only an error if that backslash is itself unescaped
        let trailing = p.iter().rev().take_while(|c| **c == '\\').count();
        if trailing % 2 == 1 {
            return Err(like_error());
        }
    }
    like_bytes(&s, &p)
}

fn like_bytes<T: PartialEq + Copy + From<u8>>(s: &[T], p: &[T]) -> PgResult<bool> {
    let pct: T = b'%'.into();
    let us: T = b'_'.into();
    let bs: T = b'\\'.into();
    // iterative matcher with single backtrack point for the last '%'
    let (mut si, mut pi) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() {
            let c = p[pi];
            if c == pct {
                while pi < p.len() && p[pi] == pct {
                    pi += 1;
                }
                if pi == p.len() {
                    return Ok(true);
                }
                star = Some((pi, si));
                continue;
            }
            let (lit, adv) = if c == bs {
                if pi + 1 >= p.len() {
                    return Err(like_error());
                }
                (Some(p[pi + 1]), 2)
            } else if c == us {
                (None, 1)
            } else {
                (Some(c), 1)
            };
            if lit.is_none_or(|l| l == s[si]) {
                si += 1;
                pi += adv;
                continue;
            }
        }
        match star {
            Some((sp, ss)) => {
                pi = sp;
                si = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return Ok(false),
        }
    }
    while pi < p.len() && p[pi] == pct {
        pi += 1;
    }
    if pi < p.len() && p[pi] == bs && pi + 1 >= p.len() {
        return Err(like_error());
    }
    Ok(pi == p.len())
}

/// LIKE on bytea (bytes instead of characters).
pub fn like_match_bytes(s: &[u8], pattern: &[u8]) -> PgResult<bool> {
    like_bytes(s, pattern)
}

thread_local! {
    static REGEX_CACHE: std::cell::RefCell<Vec<(String, bool, regex::Regex)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A match of a pattern already in the `regex` crate's syntax (SIMILAR TO's translation;
/// the `~` operators read PostgreSQL's ARE through `crate::are`). Invalid patterns are
/// 2201B.
pub fn regex_match(s: &str, pattern: &str, case_insensitive: bool) -> PgResult<bool> {
    with_regex(pattern, case_insensitive, |re| re.is_match(s))
}

/// Runs `f` on the compiled `pattern` (a per-thread cache of the last 32 compiled).
pub fn with_regex<T>(
    pattern: &str,
    case_insensitive: bool,
    f: impl FnOnce(&regex::Regex) -> T,
) -> PgResult<T> {
    REGEX_CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if let Some((_, _, re)) = c
            .iter()
            .find(|(p, ci, _)| p == pattern && *ci == case_insensitive)
        {
            return Ok(f(re));
        }
        let re = regex::RegexBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .build()
            .map_err(|e| {
                let msg = e.to_string();
                let last = msg
                    .lines()
                    .rfind(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim()
                    .to_string();
                PgError::new(
                    codes::INVALID_REGULAR_EXPRESSION,
                    format!("invalid regular expression: {last}"),
                )
            })?;
        let out = f(&re);
        if c.len() >= 32 {
            c.remove(0);
        }
        c.push((pattern.to_string(), case_insensitive, re));
        Ok(out)
    })
}

/// SQL's SIMILAR TO pattern as an anchored regular expression: `%` any string, `_` any
/// character, `escape` (default backslash) quoting the next character, the other
/// regular-expression operators as they are and `.`, `^`, `$` literal.
pub fn similar_to_regex(pattern: &str, escape: Option<char>) -> PgResult<String> {
    let escape = escape.or(Some('\\'));
    let mut out = String::from("^(?:");
    let mut chars = pattern.chars();
    let mut in_brackets = false;
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            let Some(next) = chars.next() else {
                return Err(PgError::new(
                    codes::INVALID_ESCAPE_SEQUENCE,
                    "invalid escape string",
                ));
            };
            out.push_str(&regex::escape(&next.to_string()));
            continue;
        }
        match c {
            '[' => {
                in_brackets = true;
                out.push(c);
            }
            ']' => {
                in_brackets = false;
                out.push(c);
            }
            _ if in_brackets => out.push(c),
            '%' => out.push_str(".*"),
            '_' => out.push('.'),
            '.' | '^' | '$' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out.push_str(")$");
    Ok(out)
}

fn text_of(v: &Value) -> String {
    match v {
        Value::Text(s) => s.clone(),
        other => crate::io::to_text_string(other, &other.natural_type()).unwrap_or_default(),
    }
}

/// Evaluates `left op right` on values already cast to the resolved operand types (mixed
/// integer widths and numeric/float mixes are also accepted). Null in → Null out.
pub fn eval_binary(op: BinaryOp, left: &Value, right: &Value) -> PgResult<Value> {
    use BinaryOp::*;
    use Value as V;
    if left.is_null() || right.is_null() {
        return Ok(V::Null);
    }
    if op.is_comparison() {
        let o = compare(left, right).ok_or_else(|| {
            PgError::new(
                codes::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} {} {}",
                    left.natural_type().format_type_be(),
                    op.symbol(),
                    right.natural_type().format_type_be()
                ),
            )
        })?;
        return Ok(V::Bool(match op {
            Eq => o == Ordering::Equal,
            NotEq => o != Ordering::Equal,
            Lt => o == Ordering::Less,
            LtEq => o != Ordering::Greater,
            Gt => o == Ordering::Greater,
            _ => o != Ordering::Less,
        }));
    }
    match op {
        Concat => {
            return Ok(match (left, right) {
                (V::Array(a), V::Array(b)) => V::Array(a.iter().chain(b.iter()).cloned().collect()),
                (V::Array(a), e) => V::Array(
                    a.iter()
                        .cloned()
                        .chain(std::iter::once(e.clone()))
                        .collect(),
                ),
                (e, V::Array(b)) => V::Array(
                    std::iter::once(e.clone())
                        .chain(b.iter().cloned())
                        .collect(),
                ),
                (V::Bytea(a), V::Bytea(b)) => V::Bytea([a.as_slice(), b.as_slice()].concat()),
                (a, b) => {
                    let mut s = text_of(a);
                    s.push_str(&text_of(b));
                    V::Text(s)
                }
            })
        }
        Like | NotLike | ILike | NotILike => {
            let m = match (left, right) {
                (V::Bytea(a), V::Bytea(b)) => like_match_bytes(a, b)?,
                (a, b) => like_match(&text_of(a), &text_of(b), matches!(op, ILike | NotILike))?,
            };
            return Ok(V::Bool(m == matches!(op, Like | ILike)));
        }
        BitAnd | BitOr | BitXor | ShiftLeft | ShiftRight => return bitwise(op, left, right),
        RegexMatch | RegexNotMatch | RegexIMatch | RegexNotIMatch => {
            let m = crate::are::is_match(
                &text_of(left),
                &text_of(right),
                matches!(op, RegexIMatch | RegexNotIMatch),
            )?;
            return Ok(V::Bool(m == matches!(op, RegexMatch | RegexIMatch)));
        }
        _ => {}
    }
    // arithmetic
    if let (Some((wa, a)), Some((wb, b))) = (int_w(left), int_w(right)) {
        let w = if wa >= wb { wa } else { wb };
        return int_arith(op, w, a, b);
    }
    match (left, right) {
        (V::Float4(a), V::Float4(b)) if op != Pow => {
            return float_arith(op, *a as f64, *b as f64, true)
        }
        (V::Float4(_) | V::Float8(_), _) | (_, V::Float4(_) | V::Float8(_))
            if left.as_f64().is_some()
                && right.as_f64().is_some()
                && !matches!(left, V::Interval { .. }) =>
        {
            return float_arith(op, left.as_f64().unwrap(), right.as_f64().unwrap(), false)
        }
        _ => {}
    }
    if matches!(left, V::Numeric(_)) || matches!(right, V::Numeric(_)) {
        if let (Some(a), Some(b)) = (to_numeric(left), to_numeric(right)) {
            return numeric_arith(op, &a, &b);
        }
    }
    let bad = || {
        PgError::new(
            codes::UNDEFINED_FUNCTION,
            format!(
                "operator does not exist: {} {} {}",
                left.natural_type().format_type_be(),
                op.symbol(),
                right.natural_type().format_type_be()
            ),
        )
    };
    match (op, left, right) {
        (Add, V::Date(d), n) | (Add, n, V::Date(d)) if n.as_i64().is_some() => {
            if *d == i32::MIN || *d == i32::MAX {
                return Ok(V::Date(*d));
            }
            date_result(*d as i64 + n.as_i64().unwrap())
        }
        (Sub, V::Date(d), n) if n.as_i64().is_some() => {
            if *d == i32::MIN || *d == i32::MAX {
                return Ok(V::Date(*d));
            }
            date_result(*d as i64 - n.as_i64().unwrap())
        }
        (Sub, V::Date(a), V::Date(b)) => {
            if [*a, *b].iter().any(|d| *d == i32::MIN || *d == i32::MAX) {
                return Err(PgError::new(
                    codes::DATETIME_FIELD_OVERFLOW,
                    "cannot subtract infinite dates",
                ));
            }
            Ok(V::Int4(a - b))
        }
        (Add, V::Date(d), V::Time(t)) | (Add, V::Time(t), V::Date(d)) => {
            let ts = datetime::date_to_timestamp(*d)?;
            if ts == i64::MIN || ts == i64::MAX {
                return Ok(V::Timestamp(ts));
            }
            Ok(V::Timestamp(
                ts.checked_add(*t).ok_or_else(ts_out_of_range)?,
            ))
        }
        (
            Add | Sub,
            V::Date(_) | V::Timestamp(_) | V::TimestampTz(_),
            V::Interval {
                months,
                days,
                micros,
            },
        )
        | (
            Add,
            V::Interval {
                months,
                days,
                micros,
            },
            V::Date(_) | V::Timestamp(_) | V::TimestampTz(_),
        ) => {
            let tsv = if matches!(left, V::Interval { .. }) {
                right
            } else {
                left
            };
            let (ts, tz) = match tsv {
                V::Date(d) => (datetime::date_to_timestamp(*d)?, false),
                V::Timestamp(t) => (*t, false),
                V::TimestampTz(t) => (*t, true),
                _ => unreachable!(),
            };
            let r = if op == Sub {
                let (m, d, u) = (
                    months.checked_neg().ok_or_else(interval_out_of_range)?,
                    days.checked_neg().ok_or_else(interval_out_of_range)?,
                    micros.checked_neg().ok_or_else(interval_out_of_range)?,
                );
                timestamp_add_interval(ts, m, d, u)?
            } else {
                timestamp_add_interval(ts, *months, *days, *micros)?
            };
            Ok(if tz {
                V::TimestampTz(r)
            } else {
                V::Timestamp(r)
            })
        }
        (
            Sub,
            V::Date(_) | V::Timestamp(_) | V::TimestampTz(_),
            V::Date(_) | V::Timestamp(_) | V::TimestampTz(_),
        ) => {
            let get = |v: &Value| -> PgResult<i64> {
                match v {
                    V::Date(d) => datetime::date_to_timestamp(*d),
                    V::Timestamp(t) | V::TimestampTz(t) => Ok(*t),
                    _ => unreachable!(),
                }
            };
            let (a, b) = (get(left)?, get(right)?);
            if [a, b].iter().any(|t| *t == i64::MIN || *t == i64::MAX) {
                return Err(PgError::new(
                    codes::DATETIME_FIELD_OVERFLOW,
                    "cannot subtract infinite timestamps",
                ));
            }
            let diff = a.checked_sub(b).ok_or_else(interval_out_of_range)?;
            // interval_justify_hours
            let days = diff / USECS_PER_DAY;
            let micros = diff % USECS_PER_DAY;
            Ok(V::Interval {
                months: 0,
                days: i32::try_from(days).map_err(|_| interval_out_of_range())?,
                micros,
            })
        }
        (Add | Sub, V::Time(t), V::Interval { micros, .. })
        | (Add, V::Interval { micros, .. }, V::Time(t)) => {
            let delta = if op == Sub {
                -(*micros as i128)
            } else {
                *micros as i128
            };
            let r = (*t as i128 + delta).rem_euclid(USECS_PER_DAY as i128) as i64;
            Ok(V::Time(r))
        }
        (Sub, V::Time(a), V::Time(b)) => Ok(V::Interval {
            months: 0,
            days: 0,
            micros: a - b,
        }),
        (
            Add | Sub,
            V::Interval {
                months: m1,
                days: d1,
                micros: u1,
            },
            V::Interval {
                months: m2,
                days: d2,
                micros: u2,
            },
        ) => {
            let (m, d, u) = if op == Add {
                (
                    m1.checked_add(*m2),
                    d1.checked_add(*d2),
                    u1.checked_add(*u2),
                )
            } else {
                (
                    m1.checked_sub(*m2),
                    d1.checked_sub(*d2),
                    u1.checked_sub(*u2),
                )
            };
            match (m, d, u) {
                (Some(months), Some(days), Some(micros)) => Ok(V::Interval {
                    months,
                    days,
                    micros,
                }),
                _ => Err(interval_out_of_range()),
            }
        }
        (
            Mul | Div,
            V::Interval {
                months,
                days,
                micros,
            },
            n,
        ) if n.as_f64().is_some() => {
            interval_scale(*months, *days, *micros, n.as_f64().unwrap(), op == Div)
        }
        (
            Mul,
            n,
            V::Interval {
                months,
                days,
                micros,
            },
        ) if n.as_f64().is_some() => {
            interval_scale(*months, *days, *micros, n.as_f64().unwrap(), false)
        }
        _ => Err(bad()),
    }
}

/// An integer bit operator, in the width of its left operand (a shift) or of the wider
/// one. Shifts behave as PostgreSQL's C on x86: in 32 bits for int2 and int4 (the
/// result truncated to int2), in 64 for int8, the count taken modulo the width.
fn bitwise(op: BinaryOp, left: &Value, right: &Value) -> PgResult<Value> {
    use BinaryOp::*;
    let (Some((wa, a)), Some((wb, b))) = (int_w(left), int_w(right)) else {
        return Err(PgError::internal("bit operator on non-integers"));
    };
    let w = match op {
        ShiftLeft | ShiftRight => wa,
        _ if wa >= wb => wa,
        _ => wb,
    };
    let v = match (op, w) {
        (ShiftLeft, IntW::I8) => a.wrapping_shl(b as u32),
        (ShiftRight, IntW::I8) => a.wrapping_shr(b as u32),
        (ShiftLeft, _) => (a as i32).wrapping_shl(b as u32) as i64,
        (ShiftRight, _) => (a as i32).wrapping_shr(b as u32) as i64,
        (BitAnd, _) => a & b,
        (BitOr, _) => a | b,
        _ => a ^ b,
    };
    Ok(match w {
        IntW::I2 => Value::Int2(v as i16),
        IntW::I4 => Value::Int4(v as i32),
        IntW::I8 => Value::Int8(v),
    })
}

/// `eval_binary` with the resolved operand type known: comparisons of `character(n)` /
/// `bpchar` operands ignore trailing spaces as PostgreSQL's bpchar operators do. Prefer this
/// when the operand type is at hand.
pub fn eval_binary_typed(
    op: BinaryOp,
    left: &Value,
    right: &Value,
    operand: &DataType,
) -> PgResult<Value> {
    if op.is_comparison() && matches!(operand, DataType::Bpchar { .. }) {
        if let (Value::Text(a), Value::Text(b)) = (left, right) {
            let o = compare_typed(left, right, operand).expect("text compares");
            let _ = (a, b);
            return Ok(Value::Bool(match op {
                BinaryOp::Eq => o == Ordering::Equal,
                BinaryOp::NotEq => o != Ordering::Equal,
                BinaryOp::Lt => o == Ordering::Less,
                BinaryOp::LtEq => o != Ordering::Greater,
                BinaryOp::Gt => o == Ordering::Greater,
                _ => o != Ordering::Less,
            }));
        }
    }
    eval_binary(op, left, right)
}

/// Evaluates a unary operator (Null → Null).
pub fn eval_unary(op: UnaryOp, v: &Value) -> PgResult<Value> {
    use Value as V;
    if v.is_null() {
        return Ok(V::Null);
    }
    match (op, v) {
        (UnaryOp::Not, V::Bool(b)) => Ok(V::Bool(!b)),
        (
            UnaryOp::Plus,
            V::Int2(_)
            | V::Int4(_)
            | V::Int8(_)
            | V::Float4(_)
            | V::Float8(_)
            | V::Numeric(_)
            | V::Interval { .. },
        ) => Ok(v.clone()),
        (UnaryOp::Neg, V::Int2(x)) => x
            .checked_neg()
            .map(V::Int2)
            .ok_or_else(|| out_of_range("smallint")),
        (UnaryOp::Neg, V::Int4(x)) => x
            .checked_neg()
            .map(V::Int4)
            .ok_or_else(|| out_of_range("integer")),
        (UnaryOp::Neg, V::Int8(x)) => x
            .checked_neg()
            .map(V::Int8)
            .ok_or_else(|| out_of_range("bigint")),
        (UnaryOp::BitNot, V::Int2(x)) => Ok(V::Int2(!x)),
        (UnaryOp::BitNot, V::Int4(x)) => Ok(V::Int4(!x)),
        (UnaryOp::BitNot, V::Int8(x)) => Ok(V::Int8(!x)),
        (UnaryOp::Neg, V::Float4(x)) => Ok(V::Float4(-x)),
        (UnaryOp::Neg, V::Float8(x)) => Ok(V::Float8(-x)),
        (UnaryOp::Neg, V::Numeric(d)) => Ok(V::Numeric(d.neg())),
        (
            UnaryOp::Neg,
            V::Interval {
                months,
                days,
                micros,
            },
        ) => interval_neg(*months, *days, *micros),
        _ => {
            Err(PgError::new(
                codes::UNDEFINED_FUNCTION,
                format!("operator does not exist: {} {}", op.symbol(), v.natural_type().format_type_be()),
            )
            .with_hint("No operator matches the given name and argument type. You might need to add an explicit type cast."))
        }
    }
}

/// Result type of a unary operator on `ty` (42883 when none).
pub fn resolve_unary(op: UnaryOp, ty: &DataType) -> PgResult<DataType> {
    let t = ty.without_typmod();
    let ok = match op {
        UnaryOp::Not => matches!(t, DataType::Bool | DataType::Unknown),
        UnaryOp::Neg | UnaryOp::Plus => t.is_numeric() || matches!(t, DataType::Interval { .. }),
        UnaryOp::BitNot => matches!(t, DataType::Int2 | DataType::Int4 | DataType::Int8),
    };
    if ok {
        Ok(if matches!(t, DataType::Unknown) {
            DataType::Bool
        } else {
            t
        })
    } else {
        Err(PgError::new(codes::UNDEFINED_FUNCTION, format!("operator does not exist: {} {}", op.symbol(), ty.format_type_be()))
            .with_hint("No operator matches the given name and argument type. You might need to add an explicit type cast."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn num(s: &str) -> Value {
        Value::Numeric(numeric::parse(s).unwrap().unwrap())
    }

    #[test]
    fn resolution_pg15() {
        use DataType as T;
        // result types checked against PostgreSQL 15 (pg_typeof)
        let r = |op, l: &T, rt: &T| resolve_binary(op, l, rt).unwrap().2;
        assert_eq!(r(BinaryOp::Add, &T::Int4, &T::Int8), T::Int8);
        assert_eq!(r(BinaryOp::Add, &T::Int2, &T::Int2), T::Int2);
        assert_eq!(r(BinaryOp::Add, &T::Int4, &T::NUMERIC), T::NUMERIC);
        assert_eq!(r(BinaryOp::Add, &T::NUMERIC, &T::Float4), T::Float8);
        assert_eq!(r(BinaryOp::Add, &T::Int4, &T::Float4), T::Float8);
        assert_eq!(r(BinaryOp::Add, &T::Float4, &T::Float4), T::Float4);
        assert_eq!(r(BinaryOp::Pow, &T::Int4, &T::Int4), T::Float8);
        assert_eq!(r(BinaryOp::Pow, &T::Int4, &T::NUMERIC), T::NUMERIC);
        assert_eq!(r(BinaryOp::Add, &T::Date, &T::Int4), T::Date);
        assert_eq!(r(BinaryOp::Sub, &T::Date, &T::Unknown), T::Int4);
        assert_eq!(r(BinaryOp::Add, &T::Date, &T::INTERVAL), T::TIMESTAMP);
        assert_eq!(r(BinaryOp::Sub, &T::TIMESTAMP, &T::TIMESTAMP), T::INTERVAL);
        assert_eq!(
            r(BinaryOp::Sub, &T::TIMESTAMPTZ, &T::TIMESTAMPTZ),
            T::INTERVAL
        );
        assert_eq!(r(BinaryOp::Mul, &T::INTERVAL, &T::NUMERIC), T::INTERVAL);
        assert_eq!(r(BinaryOp::Concat, &T::Unknown, &T::Int4), T::Text);
        assert_eq!(
            r(BinaryOp::Concat, &T::Array(Box::new(T::Int4)), &T::Int4),
            T::Array(Box::new(T::Int4))
        );
        assert_eq!(
            r(BinaryOp::Concat, &T::Array(Box::new(T::Int4)), &T::Unknown),
            T::Array(Box::new(T::Int4))
        );
        assert_eq!(r(BinaryOp::Eq, &T::Oid, &T::Int8), T::Bool);
        assert_eq!(
            resolve_binary(BinaryOp::Eq, &T::Varchar { max_len: Some(3) }, &T::Text)
                .unwrap()
                .0,
            T::Text
        );
        assert_eq!(
            resolve_binary(BinaryOp::Add, &T::Int4, &T::Unknown)
                .unwrap()
                .1,
            T::Int4
        );
        let e = resolve_binary(BinaryOp::Add, &T::Int4, &T::Text).unwrap_err();
        assert_eq!(e.code, "42883");
        assert_eq!(e.message, "operator does not exist: integer + text");
        assert_eq!(
            e.hint.as_deref(),
            Some("No operator matches the given name and argument types. You might need to add explicit type casts.")
        );
        let e = resolve_binary(BinaryOp::Concat, &T::Int4, &T::Int4).unwrap_err();
        assert_eq!(e.message, "operator does not exist: integer || integer");
        let e = resolve_binary(BinaryOp::Mod, &T::Float8, &T::Int4).unwrap_err();
        assert_eq!(
            e.message,
            "operator does not exist: double precision % integer"
        );
        let e = resolve_binary(BinaryOp::Add, &T::Date, &T::Unknown).unwrap_err();
        assert_eq!(e.message, "operator is not unique: date + unknown");
        assert_eq!(r(BinaryOp::Add, &T::TIMESTAMP, &T::Unknown), T::TIMESTAMP);
        assert_eq!(
            resolve_binary(BinaryOp::Add, &T::TIMESTAMPTZ, &T::Unknown)
                .unwrap()
                .1,
            T::INTERVAL
        );
        assert_eq!(r(BinaryOp::Add, &T::TIME, &T::Unknown), T::TIME);
        assert_eq!(
            resolve_binary(BinaryOp::Sub, &T::TIMESTAMP, &T::Unknown)
                .unwrap()
                .1,
            T::TIMESTAMP
        );
        assert_eq!(
            resolve_binary(BinaryOp::Mul, &T::INTERVAL, &T::Unknown)
                .unwrap()
                .1,
            T::Float8
        );
        assert_eq!(r(BinaryOp::Mul, &T::NUMERIC, &T::Unknown), T::NUMERIC);
    }

    #[test]
    fn arithmetic_pg15() {
        use BinaryOp::*;
        let e = eval_binary(Add, &Value::Int4(i32::MAX), &Value::Int4(1)).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("22003", "integer out of range")
        );
        let e = eval_binary(Div, &Value::Int4(i32::MIN), &Value::Int4(-1)).unwrap_err();
        assert_eq!(e.message, "integer out of range");
        assert_eq!(
            eval_binary(Mod, &Value::Int4(i32::MIN), &Value::Int4(-1)).unwrap(),
            Value::Int4(0)
        );
        assert_eq!(
            eval_binary(Mod, &Value::Int4(-7), &Value::Int4(3)).unwrap(),
            Value::Int4(-1)
        );
        assert_eq!(
            eval_binary(Div, &Value::Int4(-7), &Value::Int4(2)).unwrap(),
            Value::Int4(-3)
        );
        let e = eval_binary(Div, &Value::Int4(5), &Value::Int4(0)).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), ("22012", "division by zero"));
        let e = eval_binary(Div, &Value::Float8(1.0), &Value::Float8(0.0)).unwrap_err();
        assert_eq!(e.code, "22012");
        let e = eval_binary(Mul, &Value::Float8(1e308), &Value::Float8(10.0)).unwrap_err();
        assert_eq!(e.message, "value out of range: overflow");
        assert_eq!(
            eval_binary(Add, &Value::Int4(1), &Value::Int8(2)).unwrap(),
            Value::Int8(3)
        );
        let e = eval_binary(Mul, &Value::Int2(300), &Value::Int2(300)).unwrap_err();
        assert_eq!(e.message, "smallint out of range");
        let e = eval_binary(Mul, &Value::Int8(i64::MAX), &Value::Int8(2)).unwrap_err();
        assert_eq!(e.message, "bigint out of range");
        assert_eq!(
            eval_binary(Div, &num("10"), &num("3")).unwrap(),
            num("3.3333333333333333")
        );
        assert_eq!(
            eval_binary(Add, &num("1.5"), &Value::Int4(1)).unwrap(),
            num("2.5")
        );
        assert_eq!(
            eval_binary(Pow, &Value::Float8(2.0), &Value::Float8(3.0)).unwrap(),
            Value::Float8(8.0)
        );
        assert_eq!(
            eval_binary(Add, &Value::Null, &Value::Int4(1)).unwrap(),
            Value::Null
        );
    }

    #[test]
    fn datetime_ops_pg15() {
        use BinaryOp::*;
        let d = |s: &str| crate::io::from_text(s, &DataType::Date).unwrap();
        let iv = |s: &str| crate::io::from_text(s, &DataType::INTERVAL).unwrap();
        let show = |v: &Value| crate::io::to_text_string(v, &v.natural_type()).unwrap();
        assert_eq!(
            show(&eval_binary(Add, &d("2020-01-31"), &iv("1 month")).unwrap()),
            "2020-02-29 00:00:00"
        );
        assert_eq!(
            show(&eval_binary(Add, &d("2020-01-01"), &Value::Int4(1)).unwrap()),
            "2020-01-02"
        );
        assert_eq!(
            eval_binary(Sub, &d("2020-01-01"), &d("2020-01-01")).unwrap(),
            Value::Int4(0)
        );
        let t1 = crate::io::from_text("2020-01-01", &DataType::TIMESTAMP).unwrap();
        let t2 = crate::io::from_text("2019-01-01 01:00", &DataType::TIMESTAMP).unwrap();
        assert_eq!(
            show(&eval_binary(Sub, &t1, &t2).unwrap()),
            "364 days 23:00:00"
        );
        assert_eq!(
            show(&eval_binary(Mul, &iv("1 day"), &Value::Float8(1.5)).unwrap()),
            "1 day 12:00:00"
        );
        assert_eq!(
            show(&eval_binary(Mul, &iv("1 mon"), &Value::Float8(0.5)).unwrap()),
            "15 days"
        );
        assert_eq!(
            show(&eval_binary(Div, &iv("1 day"), &Value::Float8(3.0)).unwrap()),
            "08:00:00"
        );
        assert_eq!(
            show(&eval_binary(Sub, &iv("1 day 2 hours"), &iv("3 days")).unwrap()),
            "-2 days +02:00:00"
        );
        let t = crate::io::from_text("10:00", &DataType::TIME).unwrap();
        assert_eq!(
            show(&eval_binary(Add, &t, &iv("20 hours")).unwrap()),
            "06:00:00"
        );
        assert_eq!(
            show(&eval_unary(UnaryOp::Neg, &iv("1 day 01:00")).unwrap()),
            "-1 days -01:00:00"
        );
        assert_eq!(
            eval_binary(Eq, &iv("1 mon"), &iv("30 days")).unwrap(),
            Value::Bool(true)
        );
    }

    #[test]
    fn comparisons() {
        use BinaryOp::*;
        assert_eq!(
            eval_binary(Eq, &Value::Int4(1), &Value::Float4(1.0)).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            eval_binary(Lt, &Value::Int2(1), &Value::Int8(2)).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            compare(&num("1.50"), &Value::Int4(1)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare(&Value::Float8(f64::NAN), &Value::Float8(f64::INFINITY)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare(&Value::Float8(f64::NAN), &Value::Float8(f64::NAN)),
            Some(Ordering::Equal)
        );
        let a = |v: Vec<Value>| Value::Array(v);
        assert_eq!(
            eval_binary(
                Lt,
                &a(vec![Value::Int4(1), Value::Int4(2)]),
                &a(vec![Value::Int4(1), Value::Int4(2), Value::Int4(3)])
            )
            .unwrap(),
            Value::Bool(true)
        );
        assert_eq!(sort_cmp(&Value::Null, &Value::Int4(1)), Ordering::Greater);
        assert_eq!(compare(&Value::Text("a".into()), &Value::Int4(1)), None);
        let bp = DataType::Bpchar { len: None };
        assert_eq!(
            compare_typed(&Value::Text("a  ".into()), &Value::Text("a".into()), &bp),
            Some(Ordering::Equal)
        );
    }

    #[test]
    fn patterns_pg15() {
        use BinaryOp::*;
        let t = |s: &str| Value::Text(s.into());
        assert_eq!(
            eval_binary(Like, &t("a_c"), &t("a\\_c")).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            eval_binary(Like, &t("abc"), &t("a%")).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            eval_binary(Like, &t("abc"), &t("%b%")).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            eval_binary(Like, &t("abc"), &t("a_")).unwrap(),
            Value::Bool(false)
        );
        assert_eq!(
            eval_binary(Like, &t("a  "), &t("a")).unwrap(),
            Value::Bool(false)
        );
        assert_eq!(
            eval_binary(NotLike, &t("abc"), &t("x%")).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            eval_binary(ILike, &t("ABC"), &t("a%c")).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            eval_binary(Like, &t("aXbXc"), &t("%b%c")).unwrap(),
            Value::Bool(true)
        );
        let e = eval_binary(Like, &t("abc"), &t("ab\\")).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("22025", "LIKE pattern must not end with escape character")
        );
        assert_eq!(
            eval_binary(RegexIMatch, &t("ab"), &t("A")).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            eval_binary(RegexMatch, &t("ab"), &t("^b")).unwrap(),
            Value::Bool(false)
        );
        let e = eval_binary(RegexMatch, &t("x"), &t("(")).unwrap_err();
        assert_eq!(e.code, "2201B");
        assert!(e.message.starts_with("invalid regular expression"));
        assert_eq!(
            eval_binary(Concat, &t("a"), &Value::Int4(1)).unwrap(),
            t("a1")
        );
    }
}
