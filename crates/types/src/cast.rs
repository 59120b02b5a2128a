//! Casts between the supported types, following PostgreSQL's pg_cast (and the automatic
//! I/O conversion casts to and from string types).

use crate::datetime;
use crate::io;
use crate::numeric;
use crate::numeric::Numeric;
use crate::timezone::Zone;
use crate::{DataType, Value};
use pgerror::{codes, PgError, PgResult};

/// SQLSTATE 42846 cannot_coerce.
pub const CANNOT_COERCE: &str = "42846";

fn cannot_cast(from: &DataType, to: &DataType) -> PgError {
    PgError::new(
        CANNOT_COERCE,
        format!(
            "cannot cast type {} to {}",
            from.format_type_be(),
            to.format_type_be()
        ),
    )
}

fn int_range_err(to: &DataType) -> PgError {
    let name = match to {
        DataType::Int2 => "smallint",
        DataType::Int4 => "integer",
        _ => "bigint",
    };
    PgError::new(
        codes::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("{name} out of range"),
    )
}

fn make_int(v: i64, to: &DataType) -> PgResult<Value> {
    match to {
        DataType::Int2 => i16::try_from(v)
            .map(Value::Int2)
            .map_err(|_| int_range_err(to)),
        DataType::Int4 => i32::try_from(v)
            .map(Value::Int4)
            .map_err(|_| int_range_err(to)),
        _ => Ok(Value::Int8(v)),
    }
}

/// float → integer: round half to even (rint), 22003 when out of range or NaN.
fn float_to_int(f: f64, to: &DataType) -> PgResult<Value> {
    let r = f.round_ties_even();
    let (lo, hi) = match to {
        DataType::Int2 => (i16::MIN as f64, i16::MAX as f64 + 1.0),
        DataType::Int4 => (i32::MIN as f64, i32::MAX as f64 + 1.0),
        _ => (i64::MIN as f64, -(i64::MIN as f64)),
    };
    if r.is_nan() || r < lo || r >= hi {
        return Err(int_range_err(to));
    }
    make_int(r as i64, to)
}

fn numeric_to_int(d: &Numeric, to: &DataType) -> PgResult<Value> {
    let (name, min, max) = match to {
        DataType::Int2 => ("smallint", i16::MIN as i64, i16::MAX as i64),
        DataType::Int4 => ("integer", i32::MIN as i64, i32::MAX as i64),
        _ => ("bigint", i64::MIN, i64::MAX),
    };
    make_int(numeric::to_int(d, name, min, max)?, to)
}

/// numeric(p,s) of a value, or the value itself for plain numeric.
pub(crate) fn with_numeric_typmod(
    d: Numeric,
    precision_scale: &Option<(u16, i16)>,
) -> PgResult<Value> {
    Ok(Value::Numeric(match precision_scale {
        Some((p, s)) => numeric::apply_typmod(&d, *p, *s)?,
        None => d,
    }))
}

fn float8_to_float4(f: f64) -> PgResult<Value> {
    let r = f as f32;
    if r.is_infinite() && !f.is_infinite() {
        return Err(PgError::new(
            codes::NUMERIC_VALUE_OUT_OF_RANGE,
            "value out of range: overflow",
        ));
    }
    if r == 0.0 && f != 0.0 {
        return Err(PgError::new(
            codes::NUMERIC_VALUE_OUT_OF_RANGE,
            "value out of range: underflow",
        ));
    }
    Ok(Value::Float4(r))
}

/// Applies a type modifier to a value already of `to`'s base type (length coercion for
/// varchar/bpchar, rounding for numeric). `explicit` casts truncate strings silently.
pub fn apply_typmod(v: Value, to: &DataType, explicit: bool) -> PgResult<Value> {
    match (v, to) {
        (Value::Null, _) => Ok(Value::Null),
        (Value::Text(s), DataType::Varchar { max_len: Some(n) }) if explicit => {
            Ok(Value::Text(io::truncate_chars(s, *n as usize, false)))
        }
        (Value::Text(s), DataType::Bpchar { len: Some(n) }) if explicit => {
            Ok(Value::Text(io::truncate_chars(s, *n as usize, true)))
        }
        (Value::Text(s), DataType::Varchar { .. } | DataType::Bpchar { .. } | DataType::Name) => {
            Ok(Value::Text(io::apply_string_typmod(s, to)?))
        }
        (Value::Numeric(d), DataType::Numeric { precision_scale }) => {
            with_numeric_typmod(d, precision_scale)
        }
        (Value::Timestamp(t), DataType::Timestamp { precision }) => {
            Ok(Value::Timestamp(datetime::round_timestamp(t, *precision)?))
        }
        (Value::TimestampTz(t), DataType::TimestampTz { precision }) => Ok(Value::TimestampTz(
            datetime::round_timestamp(t, *precision)?,
        )),
        (Value::Time(t), DataType::Time { precision }) => {
            Ok(Value::Time(datetime::round_micros(t, *precision)))
        }
        (
            Value::Interval {
                months,
                days,
                micros,
            },
            DataType::Interval { precision },
        ) => Ok(Value::Interval {
            months,
            days,
            micros: datetime::round_micros(micros, *precision),
        }),
        (Value::Array(items), DataType::Array(elem)) => Ok(Value::Array(
            items
                .into_iter()
                .map(|it| apply_typmod(it, elem, explicit))
                .collect::<PgResult<_>>()?,
        )),
        (v, _) => Ok(v),
    }
}

fn rtrim_spaces(mut s: String) -> String {
    let n = s.trim_end_matches(' ').len();
    s.truncate(n);
    s
}

/// Casts `v` (of type `from`) to `to`. `explicit` is CAST/:: (strings truncate); otherwise
/// an assignment/implicit coercion (too-long strings are 22001). Null stays Null.
/// timestamptz values are read and shown in UTC (see `cast_in`).
pub fn cast(v: Value, from: &DataType, to: &DataType, explicit: bool) -> PgResult<Value> {
    cast_in(v, from, to, explicit, &Zone::UTC)
}

/// Whether casting `from` to `to` depends on the session's time zone or DateStyle /
/// IntervalStyle (PostgreSQL's stable casts: timestamptz to or from anything else, a
/// date, timestamp or interval to or from text), so that it cannot be evaluated once at
/// bind time or by a datanode.
pub fn depends_on_zone(from: &DataType, to: &DataType) -> bool {
    let has = |t: &DataType, kind: fn(&DataType) -> bool| kind(t) || t.element().is_some_and(kind);
    let zoned = |t: &DataType| matches!(t, DataType::TimestampTz { .. });
    let styled = |t: &DataType| {
        matches!(
            t,
            DataType::Date
                | DataType::Timestamp { .. }
                | DataType::TimestampTz { .. }
                | DataType::Interval { .. }
        )
    };
    let textual = |t: &DataType| t.is_string() || matches!(t, DataType::Unknown | DataType::Json);
    has(from, zoned) != has(to, zoned)
        || (has(from, styled) && has(to, textual))
        || (has(from, textual) && has(to, styled))
}

/// A text literal read as `to` when every session reads it alike, so that it can be
/// folded at bind time and pushed to datanodes: None when the result depends on the
/// session, namely a timestamptz (its zone), a date, timestamp or interval that the
/// DateStyle field orders or the IntervalStyle sign rules read differently (`01/02/03`,
/// `-1 2:03`), or one that reads the clock (`today`, `now`). `2024-01-01` and `1 day`
/// read the same everywhere. An error every session would raise is returned as such.
pub fn read_literal_any_session(s: &str, to: &DataType) -> Option<PgResult<Value>> {
    use crate::datestyle::{DateOrder, IntervalStyle, Style};
    if !depends_on_zone(&DataType::Text, to) {
        return Some(io::from_text(s, to));
    }
    let zoned = |t: &DataType| matches!(t, DataType::TimestampTz { .. });
    if zoned(to) || to.element().is_some_and(zoned) {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    if ["now", "today", "tomorrow", "yesterday"]
        .iter()
        .any(|w| lower.contains(w))
    {
        return None;
    }
    let mut readings = [DateOrder::Ymd, DateOrder::Dmy, DateOrder::Mdy]
        .into_iter()
        .flat_map(|order| {
            [IntervalStyle::Postgres, IntervalStyle::SqlStandard].map(|interval| Style {
                order,
                interval,
                ..Style::DEFAULT
            })
        })
        .map(|style| io::from_text_in(s, to, &Zone::UTC.with_style(style)));
    let first = readings.next()?;
    let all_alike = readings.all(|r| match (&r, &first) {
        (Ok(a), Ok(b)) => a == b,
        (Err(a), Err(b)) => a.code == b.code && a.message == b.message,
        _ => false,
    });
    all_alike.then_some(first)
}

/// `cast` with timestamptz values read and shown in `zone` (the session's TimeZone).
pub fn cast_in(
    v: Value,
    from: &DataType,
    to: &DataType,
    explicit: bool,
    zone: &Zone,
) -> PgResult<Value> {
    let v = convert_in(v, from, to, explicit, zone)?;
    if to.time_precision().is_some() {
        // However the value was made (read from text, from a date, another zone's
        // timestamp), it keeps the type's fractional digits.
        return apply_typmod(v, to, explicit);
    }
    Ok(v)
}

fn convert_in(
    v: Value,
    from: &DataType,
    to: &DataType,
    explicit: bool,
    zone: &Zone,
) -> PgResult<Value> {
    use DataType as T;
    if v.is_null() {
        return Ok(Value::Null);
    }
    if matches!(to, T::Unknown) {
        return Ok(v);
    }
    if from.without_typmod() == to.without_typmod() {
        return apply_typmod(v, to, explicit);
    }
    match (from, to, &v) {
        (T::Json, T::Jsonb, Value::Text(s)) => return io::from_text_in(s, to, zone),
        (T::Jsonb, T::Json, Value::Jsonb(j)) => return Ok(Value::Text(j.to_text())),
        (T::Jsonb, _, Value::Jsonb(j)) if !to.is_string() => return jsonb_to_scalar(j, to),
        _ => {}
    }
    // Unknown literals and strings: through text input.
    if matches!(from, T::Unknown) || from.is_string() || matches!(from, T::Char | T::PgNodeTree) {
        if let Value::Text(s) = v {
            let s = if matches!(from, T::Bpchar { .. }) && !matches!(to, T::Bpchar { .. }) {
                rtrim_spaces(s)
            } else {
                s
            };
            return match to {
                T::Text | T::PgNodeTree => Ok(Value::Text(s)),
                T::Varchar { .. } | T::Bpchar { .. } | T::Name => {
                    apply_typmod(Value::Text(s), to, explicit)
                }
                T::Char => Ok(Value::Text(
                    s.chars().next().map(String::from).unwrap_or_default(),
                )),
                _ => io::from_text_in(&s, to, zone),
            };
        }
        // a value not in text form (e.g. an untyped parameter bound in binary): fall through
        let natural = v.natural_type();
        if natural.without_typmod() != from.without_typmod() && !matches!(natural, T::Text) {
            return cast_in(v, &natural, to, explicit, zone);
        }
        return Err(cannot_cast(from, to));
    }
    // Anything → string: through text output.
    if to.is_string() || matches!(to, T::Char) {
        if matches!(to, T::Char) && matches!(from, T::Int4) {
            // int4 → "char": the byte with that value
            if let Value::Int4(i) = v {
                if !(-128..=127).contains(&i) {
                    return Err(PgError::new(
                        codes::NUMERIC_VALUE_OUT_OF_RANGE,
                        "\"char\" out of range",
                    ));
                }
                let c = (i as u8) as char;
                return Ok(Value::Text(if i == 0 {
                    String::new()
                } else {
                    c.to_string()
                }));
            }
        }
        let mut out = Vec::new();
        match v {
            // bool → text is booltext(): "true"/"false", not boolout's "t"/"f"
            Value::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            _ => io::to_text_in(&v, from, zone, &mut out),
        }
        let s = String::from_utf8(out).map_err(|_| PgError::internal("non-UTF-8 text output"))?;
        return match to {
            T::Char => Ok(Value::Text(
                s.chars().next().map(String::from).unwrap_or_default(),
            )),
            _ => apply_typmod(Value::Text(s), to, explicit),
        };
    }
    match (v, to) {
        // integers and oids
        (v @ (Value::Int2(_) | Value::Int4(_) | Value::Int8(_) | Value::Oid(_)), t) => {
            let i = v.as_i64().expect("integer");
            match t {
                // oid → int4 is binary coercible: 4294967295 reads as -1
                T::Int4 if matches!(v, Value::Oid(_)) => Ok(Value::Int4(i as u32 as i32)),
                T::Int2 | T::Int4 | T::Int8 => make_int(i, t),
                T::Float4 => Ok(Value::Float4(i as f32)),
                T::Float8 => Ok(Value::Float8(i as f64)),
                T::Numeric { precision_scale } => {
                    with_numeric_typmod(Numeric::from(i), precision_scale)
                }
                T::Oid | T::RegClass | T::RegProc | T::RegType | T::RegNamespace => {
                    if matches!(v, Value::Oid(_)) {
                        return Ok(v);
                    }
                    if i < 0 || i > u32::MAX as i64 {
                        if matches!(v, Value::Int4(_) | Value::Int2(_)) && i >= i32::MIN as i64 {
                            return Ok(Value::Oid(i as i32 as u32));
                        }
                        return Err(PgError::new(
                            codes::NUMERIC_VALUE_OUT_OF_RANGE,
                            "OID out of range",
                        ));
                    }
                    Ok(Value::Oid(i as u32))
                }
                T::Bool if matches!(v, Value::Int4(_)) && explicit => Ok(Value::Bool(i != 0)),
                _ => Err(cannot_cast(from, to)),
            }
        }
        (Value::Float4(f), t) => float_cast(f as f64, true, from, t),
        (Value::Float8(f), t) => float_cast(f, matches!(from, T::Float4), from, t),
        (Value::Numeric(d), t) => match t {
            T::Int2 | T::Int4 | T::Int8 => numeric_to_int(&d, t),
            T::Float4 => Ok(Value::Float4(numeric::to_float(&d, true)? as f32)),
            T::Float8 => Ok(Value::Float8(numeric::to_float(&d, false)?)),
            _ => Err(cannot_cast(from, to)),
        },
        (Value::Bool(b), T::Int4) if explicit => Ok(Value::Int4(b as i32)),
        (Value::Date(d), T::Timestamp { .. }) => {
            Ok(Value::Timestamp(datetime::date_to_timestamp(d)?))
        }
        (Value::Date(d), T::TimestampTz { .. }) => Ok(Value::TimestampTz(local_to_utc(
            datetime::date_to_timestamp(d)?,
            zone,
        )?)),
        (Value::Timestamp(t) | Value::TimestampTz(t), target) => {
            // a timestamptz is read as its wall clock in `zone`, a timestamp as it is
            let wall_clock = if matches!(from, T::TimestampTz { .. }) {
                utc_to_local(t, zone)?
            } else {
                t
            };
            timestamp_cast(t, wall_clock, target, zone, from, to)
        }
        (Value::Time(t), T::Interval { .. }) => Ok(Value::Interval {
            months: 0,
            days: 0,
            micros: t,
        }),
        (Value::Interval { micros, .. }, T::Time { .. }) => {
            Ok(Value::Time(micros.rem_euclid(datetime::USECS_PER_DAY)))
        }
        (Value::Array(items), T::Array(_) | T::Int2Vector | T::OidVector) => {
            let fe = from.element().cloned().unwrap_or(T::Unknown);
            let te = to.element().expect("array element").clone();
            Ok(Value::Array(
                items
                    .into_iter()
                    .map(|it| cast_in(it, &fe, &te, explicit, zone))
                    .collect::<PgResult<_>>()?,
            ))
        }
        _ => Err(cannot_cast(from, to)),
    }
}

/// jsonb → numeric, integers, floats and bool: the scalar of that kind, else 22023.
fn jsonb_to_scalar(j: &crate::json::Jsonb, to: &DataType) -> PgResult<Value> {
    use crate::json::Jsonb;
    match (j, to) {
        (Jsonb::Number(n), DataType::Numeric { precision_scale }) => {
            with_numeric_typmod(n.clone(), precision_scale)
        }
        (Jsonb::Number(n), DataType::Int2 | DataType::Int4 | DataType::Int8) => {
            numeric_to_int(n, to)
        }
        (Jsonb::Number(n), DataType::Float4) => {
            Ok(Value::Float4(numeric::to_float(n, true)? as f32))
        }
        (Jsonb::Number(n), DataType::Float8) => Ok(Value::Float8(numeric::to_float(n, false)?)),
        (Jsonb::Bool(b), DataType::Bool) => Ok(Value::Bool(*b)),
        (
            _,
            DataType::Numeric { .. }
            | DataType::Int2
            | DataType::Int4
            | DataType::Int8
            | DataType::Float4
            | DataType::Float8
            | DataType::Bool,
        ) => Err(PgError::new(
            codes::INVALID_PARAMETER_VALUE,
            format!(
                "cannot cast jsonb {} to type {}",
                match j {
                    Jsonb::Number(_) => "numeric",
                    other => other.type_name(),
                },
                to.format_type_be()
            ),
        )),
        _ => Err(cannot_cast(&DataType::Jsonb, to)),
    }
}

/// A timestamp or timestamptz `t` (`wall_clock` its time of day in `zone`) to `target`.
fn timestamp_cast(
    t: i64,
    wall_clock: i64,
    target: &DataType,
    zone: &Zone,
    from: &DataType,
    to: &DataType,
) -> PgResult<Value> {
    match target {
        DataType::Date => Ok(Value::Date(datetime::timestamp_to_date(wall_clock))),
        DataType::Timestamp { .. } => Ok(Value::Timestamp(wall_clock)),
        DataType::TimestampTz { .. } if matches!(from, DataType::TimestampTz { .. }) => {
            Ok(Value::TimestampTz(t))
        }
        DataType::TimestampTz { .. } => Ok(Value::TimestampTz(local_to_utc(t, zone)?)),
        DataType::Time { .. } => {
            if t == i64::MIN || t == i64::MAX {
                return Err(PgError::new(
                    codes::DATETIME_FIELD_OVERFLOW,
                    "timestamp out of range",
                ));
            }
            Ok(Value::Time(wall_clock.rem_euclid(datetime::USECS_PER_DAY)))
        }
        _ => Err(cannot_cast(from, to)),
    }
}

fn timestamp_out_of_range() -> PgError {
    PgError::new(codes::DATETIME_FIELD_OVERFLOW, "timestamp out of range")
}

/// The wall clock in `zone` at instant `t` (infinities stay).
fn utc_to_local(t: i64, zone: &Zone) -> PgResult<i64> {
    if t == datetime::TS_NOBEGIN || t == datetime::TS_NOEND {
        return Ok(t);
    }
    let local = zone.to_local(t);
    if !datetime::timestamp_in_range(local) {
        return Err(timestamp_out_of_range());
    }
    Ok(local)
}

/// The instant at which the wall clock in `zone` reads `t` (infinities stay).
fn local_to_utc(t: i64, zone: &Zone) -> PgResult<i64> {
    if t == datetime::TS_NOBEGIN || t == datetime::TS_NOEND {
        return Ok(t);
    }
    let utc = zone.to_utc(t);
    if !datetime::timestamp_in_range(utc) {
        return Err(timestamp_out_of_range());
    }
    Ok(utc)
}

fn float_cast(f: f64, is_f4: bool, from: &DataType, to: &DataType) -> PgResult<Value> {
    match to {
        DataType::Int2 | DataType::Int4 | DataType::Int8 => float_to_int(f, to),
        DataType::Float4 => float8_to_float4(f),
        DataType::Float8 => Ok(Value::Float8(f)),
        DataType::Numeric { precision_scale } => with_numeric_typmod(
            numeric::from_f64(f, if is_f4 { 6 } else { 15 })?,
            precision_scale,
        ),
        _ => Err(cannot_cast(from, to)),
    }
}

/// Implicit casts of pg_cast (castcontext 'i') among the supported types, plus
/// unknown → anything and array coercions by element.
pub fn can_coerce_implicitly(from: &DataType, to: &DataType) -> bool {
    use DataType as T;
    if from.without_typmod() == to.without_typmod() || matches!(from, T::Unknown) {
        return true;
    }
    let reg = |t: &T| {
        matches!(
            t,
            T::Oid | T::RegClass | T::RegProc | T::RegType | T::RegNamespace
        )
    };
    match (from, to) {
        (T::Array(a), T::Array(b)) => can_coerce_implicitly(a, b),
        (T::Int2Vector, T::Array(e)) => matches!(**e, T::Int2),
        (T::OidVector, T::Array(e)) => matches!(**e, T::Oid),
        (T::Char | T::Name | T::PgNodeTree, T::Text) => true,
        (T::Int2, t) => {
            matches!(
                t,
                T::Int4 | T::Int8 | T::Float4 | T::Float8 | T::Numeric { .. }
            ) || reg(t)
        }
        (T::Int4, t) => matches!(t, T::Int8 | T::Float4 | T::Float8 | T::Numeric { .. }) || reg(t),
        (T::Int8, t) => matches!(t, T::Float4 | T::Float8 | T::Numeric { .. }) || reg(t),
        (T::Oid, t) => reg(t),
        (T::RegClass | T::RegProc | T::RegType | T::RegNamespace, T::Oid) => true,
        (T::Text, t) => matches!(
            t,
            T::Name | T::Bpchar { .. } | T::Varchar { .. } | T::RegClass
        ),
        (T::Varchar { .. }, t) => matches!(t, T::Name | T::Text | T::Bpchar { .. } | T::RegClass),
        (T::Bpchar { .. }, t) => matches!(t, T::Name | T::Text | T::Varchar { .. }),
        (T::Float4, T::Float8) => true,
        (T::Numeric { .. }, T::Float4 | T::Float8) => true,
        (T::Date, T::Timestamp { .. } | T::TimestampTz { .. }) => true,
        (T::Time { .. }, T::Interval { .. }) => true,
        (T::Timestamp { .. }, T::TimestampTz { .. }) => true,
        _ => false,
    }
}

/// Assignment casts (INSERT/UPDATE targets): implicit ones, pg_cast 'a' entries, and the
/// automatic I/O casts to string types.
pub fn can_assign(from: &DataType, to: &DataType) -> bool {
    use DataType as T;
    if can_coerce_implicitly(from, to) {
        return true;
    }
    if to.is_string() && !matches!(from, T::Array(_)) {
        return true;
    }
    match (from, to) {
        (T::Array(a), T::Array(b)) => can_assign(a, b),
        (T::Text | T::Varchar { .. } | T::Bpchar { .. }, T::Char) => true,
        (T::Int8, T::Int2 | T::Int4) | (T::Int4, T::Int2) => true,
        (T::Oid | T::RegClass | T::RegProc | T::RegType | T::RegNamespace, T::Int4 | T::Int8) => {
            true
        }
        (T::Float4, T::Int2 | T::Int4 | T::Int8 | T::Numeric { .. }) => true,
        (T::Float8, T::Int2 | T::Int4 | T::Int8 | T::Float4 | T::Numeric { .. }) => true,
        (T::Numeric { .. }, T::Int2 | T::Int4 | T::Int8) => true,
        (T::Timestamp { .. }, T::Date | T::Time { .. }) => true,
        (T::TimestampTz { .. }, T::Date | T::Time { .. } | T::Timestamp { .. }) => true,
        (T::Interval { .. }, T::Time { .. }) => true,
        (T::Json, T::Jsonb) | (T::Jsonb, T::Json) => true,
        _ => false,
    }
}

/// Can `CAST(x AS to)` work at all (explicit context)?
pub fn can_cast_explicitly(from: &DataType, to: &DataType) -> bool {
    use DataType as T;
    if can_assign(from, to) || from.is_string() || matches!(from, T::Char | T::Unknown) {
        return true;
    }
    matches!(
        (from, to),
        (T::Bool, T::Int4) | (T::Int4, T::Bool) | (T::Int4, T::Char) | (T::Char, T::Int4)
    ) || matches!(
        (from, to),
        (
            T::Jsonb,
            T::Numeric { .. } | T::Int2 | T::Int4 | T::Int8 | T::Float4 | T::Float8 | T::Bool
        )
    ) || matches!((from, to), (T::Array(a), T::Array(b)) if can_cast_explicitly(a, b))
}

#[cfg(test)]
mod tests {
    use super::*;
    fn num(s: &str) -> Value {
        Value::Numeric(numeric::parse(s).unwrap().unwrap())
    }

    #[test]
    fn only_literals_every_session_reads_alike_are_read_at_bind_time() {
        let read = |s: &str, ty: DataType| read_literal_any_session(s, &ty);
        assert!(read("2024-01-31", DataType::Date).is_some_and(|r| r.is_ok()));
        assert!(read("2024-01-31 10:00", DataType::TIMESTAMP).is_some());
        assert!(read("1 day 02:03", DataType::INTERVAL).is_some());
        assert!(read("42", DataType::Int4).is_some());
        // field order, interval sign rules, the clock and the zone: read when run
        assert!(read("01/02/03", DataType::Date).is_none());
        assert!(read("-1 2:03", DataType::INTERVAL).is_none());
        assert!(read("today", DataType::Date).is_none());
        assert!(read("2024-01-31", DataType::TIMESTAMPTZ).is_none());
        // an error in every session is one at bind time
        assert!(read("2024-13-45", DataType::Date).is_some_and(|r| r.is_err()));
    }

    #[test]
    fn numeric_casts_pg15() {
        // checked against PostgreSQL 15
        assert_eq!(
            cast(Value::Float8(2.5), &DataType::Float8, &DataType::Int4, true).unwrap(),
            Value::Int4(2)
        );
        assert_eq!(
            cast(Value::Float8(3.5), &DataType::Float8, &DataType::Int4, true).unwrap(),
            Value::Int4(4)
        );
        assert_eq!(
            cast(num("2.5"), &DataType::NUMERIC, &DataType::Int4, true).unwrap(),
            Value::Int4(3)
        );
        assert_eq!(
            cast(num("-2.5"), &DataType::NUMERIC, &DataType::Int4, true).unwrap(),
            Value::Int4(-3)
        );
        assert_eq!(
            cast(
                Value::Float8(0.1),
                &DataType::Float8,
                &DataType::NUMERIC,
                true
            )
            .unwrap(),
            num("0.1")
        );
        let e = cast(
            Value::Int8(1 << 40),
            &DataType::Int8,
            &DataType::Int4,
            false,
        )
        .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("22003", "integer out of range")
        );
        let e = cast(Value::Int4(70000), &DataType::Int4, &DataType::Int2, false).unwrap_err();
        assert_eq!(e.message, "smallint out of range");
        let e = cast(
            Value::Float8(1e300),
            &DataType::Float8,
            &DataType::Float4,
            false,
        )
        .unwrap_err();
        assert_eq!(e.message, "value out of range: overflow");
        let n52 = DataType::Numeric {
            precision_scale: Some((5, 2)),
        };
        assert_eq!(
            cast(Value::Int4(12), &DataType::Int4, &n52, false).unwrap(),
            num("12.00")
        );
        assert_eq!(
            cast(num("1.005"), &DataType::NUMERIC, &n52, false).unwrap(),
            num("1.01")
        );
    }

    #[test]
    fn string_casts() {
        let v3 = DataType::Varchar { max_len: Some(2) };
        let t = Value::Text("abc".into());
        assert_eq!(
            cast(t.clone(), &DataType::Text, &v3, true).unwrap(),
            Value::Text("ab".into())
        );
        let e = cast(t.clone(), &DataType::Text, &v3, false).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("22001", "value too long for type character varying(2)")
        );
        let c4 = DataType::Bpchar { len: Some(4) };
        assert_eq!(
            cast(t.clone(), &DataType::Text, &c4, false).unwrap(),
            Value::Text("abc ".into())
        );
        assert_eq!(
            cast(Value::Text("a  ".into()), &c4, &DataType::Text, false).unwrap(),
            Value::Text("a".into())
        );
        assert_eq!(
            cast(Value::Int4(42), &DataType::Int4, &DataType::Text, false).unwrap(),
            Value::Text("42".into())
        );
        assert_eq!(
            cast(
                Value::Text("42".into()),
                &DataType::Unknown,
                &DataType::Int8,
                false
            )
            .unwrap(),
            Value::Int8(42)
        );
        let e = cast(
            Value::Text("x".into()),
            &DataType::Text,
            &DataType::Int4,
            true,
        )
        .unwrap_err();
        assert_eq!(e.message, "invalid input syntax for type integer: \"x\"");
        assert_eq!(
            cast(Value::Bool(true), &DataType::Bool, &DataType::Text, true).unwrap(),
            Value::Text("true".into())
        );
        assert_eq!(
            cast(Value::Int4(7), &DataType::Int4, &DataType::Bool, true).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            cast(Value::Bool(true), &DataType::Bool, &DataType::Int4, true).unwrap(),
            Value::Int4(1)
        );
        assert_eq!(
            cast(Value::Null, &DataType::Int4, &DataType::Text, false).unwrap(),
            Value::Null
        );
        let e = cast(Value::Date(0), &DataType::Date, &DataType::Int4, true).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("42846", "cannot cast type date to integer")
        );
    }

    #[test]
    fn datetime_casts() {
        assert_eq!(
            cast(Value::Date(1), &DataType::Date, &DataType::TIMESTAMP, false).unwrap(),
            Value::Timestamp(datetime::USECS_PER_DAY)
        );
        assert_eq!(
            cast(
                Value::Timestamp(-1),
                &DataType::TIMESTAMP,
                &DataType::Date,
                false
            )
            .unwrap(),
            Value::Date(-1)
        );
        assert_eq!(
            cast(
                Value::Timestamp(5),
                &DataType::TIMESTAMP,
                &DataType::TIMESTAMPTZ,
                false
            )
            .unwrap(),
            Value::TimestampTz(5)
        );
    }

    #[test]
    fn cast_contexts() {
        assert!(can_coerce_implicitly(&DataType::Int4, &DataType::Int8));
        assert!(!can_coerce_implicitly(&DataType::Int8, &DataType::Int4));
        assert!(can_assign(&DataType::Int8, &DataType::Int4));
        assert!(can_assign(&DataType::Int4, &DataType::Text));
        assert!(!can_coerce_implicitly(&DataType::Int4, &DataType::Text));
        assert!(!can_assign(&DataType::Text, &DataType::Int4));
        assert!(can_cast_explicitly(&DataType::Text, &DataType::Int4));
        assert!(!can_assign(&DataType::Bool, &DataType::Int4));
        assert!(can_cast_explicitly(&DataType::Bool, &DataType::Int4));
        assert!(can_coerce_implicitly(
            &DataType::Date,
            &DataType::TIMESTAMPTZ
        ));
        assert!(can_coerce_implicitly(&DataType::Unknown, &DataType::Date));
        assert!(can_coerce_implicitly(
            &DataType::Array(Box::new(DataType::Int4)),
            &DataType::Array(Box::new(DataType::Int8))
        ));
    }
}
