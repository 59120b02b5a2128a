//! Date/time functions: EXTRACT/date_part, date_trunc, AT TIME ZONE (`timezone`), age,
//! isfinite, justify_*, make_*, to_timestamp, to_date. The value logic is
//! `types::datetime_fields`; these read timestamptz fields in the session's zone, so
//! they are evaluated with it (`ScalarFunc::needs_zone`) and never on a datanode.

use super::ScalarFunc;
use pgerror::{codes, PgError, PgResult};
use types::datetime_fields as fields;
use types::timezone::Zone;
use types::{DataType, Value};

impl ScalarFunc {
    /// Whether evaluation needs the session's time zone (the functions of this module).
    pub fn needs_zone(self) -> bool {
        use ScalarFunc as F;
        matches!(
            self,
            F::DatePart
                | F::Extract
                | F::DateTrunc
                | F::Timezone
                | F::Age
                | F::IsFinite
                | F::JustifyDays
                | F::JustifyHours
                | F::JustifyInterval
                | F::MakeDate
                | F::MakeTime
                | F::MakeTimestamp
                | F::MakeTimestamptz
                | F::MakeInterval
                | F::ToTimestamp
                | F::ToTimestampFormatted
                | F::ToDate
                | F::ToCharDatetime
                | F::DateBin
        ) || self.builds_json()
    }
}

/// to_char of a timestamp (its wall clock), a timestamptz (in `zone`) or an interval;
/// NULL for an infinite timestamp or an empty template, as PostgreSQL.
fn to_char(v: &Value, template: &str, zone: &Zone) -> PgResult<Value> {
    use types::to_char::{format, format_interval, ShownZone};
    Ok(match *v {
        _ if !fields::is_finite(v) || template.is_empty() => Value::Null,
        Value::Timestamp(ts) => Value::Text(format(ts, template, &ShownZone::default())),
        Value::TimestampTz(ts) => {
            let shown = ShownZone {
                east_secs: zone.offset_at(ts),
                abbreviation: zone.abbreviation_at(ts),
            };
            Value::Text(format(zone.to_local(ts), template, &shown))
        }
        Value::Interval {
            months,
            days,
            micros,
        } => Value::Text(format_interval(months, days, micros, template)?),
        _ => Value::Null,
    })
}

/// A date/time value's type after PostgreSQL's coercion for these functions: an untyped
/// literal or a date is read as a timestamptz (the preferred type of the category).
fn moment(t: &DataType) -> DataType {
    match t {
        DataType::Timestamp { .. } | DataType::Interval { .. } | DataType::Time { .. } => {
            t.without_typmod()
        }
        _ => DataType::TIMESTAMPTZ,
    }
}

/// The moments' type of a function declared on both timestamp and timestamptz: timestamp
/// when the arguments are timestamps and untyped literals (at least one a timestamp).
fn timestamp_unless_zoned(moments: &[DataType]) -> DataType {
    if moments
        .iter()
        .all(|t| matches!(t, DataType::Timestamp { .. } | DataType::Unknown))
        && moments.contains(&DataType::TIMESTAMP)
    {
        DataType::TIMESTAMP
    } else {
        DataType::TIMESTAMPTZ
    }
}

/// Resolution of this module's functions: (function, argument types, result type).
pub fn resolve(name: &str, args: &[DataType]) -> Option<(ScalarFunc, Vec<DataType>, DataType)> {
    use DataType::*;
    use ScalarFunc as F;
    // A precision (`timestamp(0)`) decides nothing here, and results carry none.
    let args: Vec<DataType> = args.iter().map(DataType::without_typmod).collect();
    let n = args.len();
    let second = args.get(1).cloned().unwrap_or(Unknown);
    Some(match (name, n) {
        ("date_part", 2) => {
            let t = match second {
                Date => Date,
                other => moment(&other),
            };
            (F::DatePart, vec![Text, t], Float8)
        }
        // EXTRACT(field FROM x), bound as extract(field, x)
        ("extract", 2) => {
            let t = match second {
                Date => Date,
                other => moment(&other),
            };
            (F::Extract, vec![Text, t], DataType::NUMERIC)
        }
        ("date_trunc", 2) if second != DataType::TIME => {
            let t = moment(&second);
            (F::DateTrunc, vec![Text, t.clone()], t)
        }
        ("date_trunc", 3) => (
            F::DateTrunc,
            vec![Text, DataType::TIMESTAMPTZ, Text],
            DataType::TIMESTAMPTZ,
        ),
        ("timezone", 2) => {
            let zone = if args[0] == DataType::INTERVAL {
                DataType::INTERVAL
            } else {
                Text
            };
            match moment(&second) {
                Timestamp { .. } => (
                    F::Timezone,
                    vec![zone, DataType::TIMESTAMP],
                    DataType::TIMESTAMPTZ,
                ),
                _ => (
                    F::Timezone,
                    vec![zone, DataType::TIMESTAMPTZ],
                    DataType::TIMESTAMP,
                ),
            }
        }
        ("age", 1) => {
            let t = if args[0] == DataType::TIMESTAMP {
                DataType::TIMESTAMP
            } else {
                DataType::TIMESTAMPTZ
            };
            (F::Age, vec![t], DataType::INTERVAL)
        }
        ("age", 2) => {
            let t = timestamp_unless_zoned(&args);
            (F::Age, vec![t.clone(), t], DataType::INTERVAL)
        }
        ("isfinite", 1) => {
            let t = match &args[0] {
                Date | Timestamp { .. } | Interval { .. } => args[0].clone(),
                _ => DataType::TIMESTAMPTZ,
            };
            (F::IsFinite, vec![t], Bool)
        }
        ("justify_days", 1) => (F::JustifyDays, vec![DataType::INTERVAL], DataType::INTERVAL),
        ("justify_hours", 1) => (
            F::JustifyHours,
            vec![DataType::INTERVAL],
            DataType::INTERVAL,
        ),
        ("justify_interval", 1) => (
            F::JustifyInterval,
            vec![DataType::INTERVAL],
            DataType::INTERVAL,
        ),
        ("make_date", 3) => (F::MakeDate, vec![Int4; 3], Date),
        ("make_time", 3) => (F::MakeTime, vec![Int4, Int4, Float8], DataType::TIME),
        ("make_timestamp", 6) => (
            F::MakeTimestamp,
            vec![Int4, Int4, Int4, Int4, Int4, Float8],
            DataType::TIMESTAMP,
        ),
        ("make_timestamptz", 6 | 7) => {
            let mut want = vec![Int4, Int4, Int4, Int4, Int4, Float8];
            if n == 7 {
                want.push(Text);
            }
            (F::MakeTimestamptz, want, DataType::TIMESTAMPTZ)
        }
        ("make_interval", 0..=7) => {
            let mut want = vec![Int4; n.min(6)];
            if n == 7 {
                want.push(Float8);
            }
            (F::MakeInterval, want, DataType::INTERVAL)
        }
        ("to_timestamp", 1) if args[0] != Text => {
            (F::ToTimestamp, vec![Float8], DataType::TIMESTAMPTZ)
        }
        ("to_timestamp", 2) => (
            F::ToTimestampFormatted,
            vec![Text, Text],
            DataType::TIMESTAMPTZ,
        ),
        ("to_date", 2) => (F::ToDate, vec![Text, Text], Date),
        ("date_bin", 3) => {
            let t = timestamp_unless_zoned(&args[1..]);
            (
                F::DateBin,
                vec![DataType::INTERVAL, t.clone(), t.clone()],
                t,
            )
        }
        ("to_char", 2)
            if matches!(
                args[0],
                Timestamp { .. } | TimestampTz { .. } | Date | Interval { .. }
            ) =>
        {
            (F::ToCharDatetime, vec![moment(&args[0]), Text], Text)
        }
        _ => return None,
    })
}

/// Evaluates one of this module's functions (NULL in, NULL out) with timestamptz fields
/// read in `zone`.
pub fn eval(func: ScalarFunc, args: Vec<Value>, zone: &Zone) -> PgResult<Value> {
    use ScalarFunc as F;
    if args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let text = |i: usize| args[i].as_str().unwrap_or_default().to_string();
    let int = |i: usize| args.get(i).and_then(Value::as_i64).unwrap_or(0);
    let float = |i: usize| args.get(i).and_then(Value::as_f64).unwrap_or(0.0);
    let interval = |v: &Value| match *v {
        Value::Interval {
            months,
            days,
            micros,
        } => (months, days, micros),
        _ => (0, 0, 0),
    };
    Ok(match func {
        F::DatePart => fields::extract(&text(0), &args[1], zone, false)?,
        F::Extract => fields::extract(&text(0), &args[1], zone, true)?,
        F::DateTrunc if args.len() == 3 => {
            let named = fields::zone_argument(&args[2])?;
            fields::date_trunc(&text(0), &args[1], &named)?
        }
        F::DateTrunc => fields::date_trunc(&text(0), &args[1], zone)?,
        F::Timezone => fields::at_time_zone(&args[1], &fields::zone_argument(&args[0])?)?,
        F::Age if args.len() == 1 => {
            // age(x) is age(current_date, x): midnight of today in the session's zone
            let today = types::datetime::parse_timestamptz("today", zone)?;
            let start = match args[0] {
                Value::Timestamp(_) => Value::Timestamp(zone.to_local(today)),
                _ => Value::TimestampTz(today),
            };
            fields::age(&start, &args[0], zone)?
        }
        F::Age => fields::age(&args[0], &args[1], zone)?,
        F::IsFinite => Value::Bool(fields::is_finite(&args[0])),
        F::DateBin => {
            let bin = |source, origin| date_bin(interval(&args[0]), source, origin);
            match (&args[1], &args[2]) {
                (Value::Timestamp(s), Value::Timestamp(o)) => Value::Timestamp(bin(*s, *o)?),
                (Value::TimestampTz(s), Value::TimestampTz(o)) => Value::TimestampTz(bin(*s, *o)?),
                _ => return Err(PgError::internal("date_bin of values of other types")),
            }
        }
        F::JustifyDays => {
            let (m, d, u) = interval(&args[0]);
            fields::justify_days(m, d, u)?
        }
        F::JustifyHours => {
            let (m, d, u) = interval(&args[0]);
            fields::justify_hours(m, d, u)?
        }
        F::JustifyInterval => {
            let (m, d, u) = interval(&args[0]);
            fields::justify_interval(m, d, u)?
        }
        F::MakeDate => fields::make_date(int(0), int(1), int(2))?,
        F::MakeTime => fields::make_time(int(0), int(1), float(2))?,
        F::MakeTimestamp => {
            fields::make_timestamp([int(0), int(1), int(2), int(3), int(4)], float(5), None)?
        }
        F::MakeTimestamptz => {
            let named = match args.get(6) {
                Some(z) => fields::zone_argument(z)?,
                None => zone.clone(),
            };
            let parts = [int(0), int(1), int(2), int(3), int(4)];
            fields::make_timestamp(parts, float(5), Some(&named))?
        }
        F::MakeInterval => {
            fields::make_interval([int(0), int(1), int(2), int(3), int(4), int(5)], float(6))?
        }
        F::ToTimestamp => fields::to_timestamp_epoch(float(0))?,
        F::ToTimestampFormatted => Value::TimestampTz(types::to_char::parse::to_timestamp(
            &text(0),
            &text(1),
            zone,
        )?),
        F::ToDate => Value::Date(types::to_char::parse::to_date(&text(0), &text(1))?),
        F::ToCharDatetime => to_char(&args[0], &text(1), zone)?,
        _ => return Err(pgerror::PgError::internal("not a date/time function")),
    })
}

/// date_bin: the start of the `stride`-wide bin, counted from `origin`, that `source` is
/// in (microseconds since 2000, timestamps or UTC instants alike).
fn date_bin((months, days, micros): (i32, i32, i64), source: i64, origin: i64) -> PgResult<i64> {
    use types::datetime::{TS_NOBEGIN, TS_NOEND, USECS_PER_DAY};
    if source == TS_NOBEGIN || source == TS_NOEND {
        return Ok(source);
    }
    let out_of_range = |what: &str| PgError::new(codes::DATETIME_FIELD_OVERFLOW, what.to_string());
    if origin == TS_NOBEGIN || origin == TS_NOEND {
        return Err(out_of_range("origin out of range"));
    }
    if months != 0 {
        return Err(PgError::new(
            codes::FEATURE_NOT_SUPPORTED,
            "timestamps cannot be binned into intervals containing months or years",
        ));
    }
    let stride = (days as i64)
        .checked_mul(USECS_PER_DAY)
        .and_then(|d| d.checked_add(micros))
        .ok_or_else(|| out_of_range("interval out of range"))?;
    if stride <= 0 {
        return Err(out_of_range("stride must be greater than zero"));
    }
    let diff = source
        .checked_sub(origin)
        .ok_or_else(|| out_of_range("interval out of range"))?;
    // Toward minus infinity when the source is before the origin.
    let delta = diff - diff.rem_euclid(stride);
    origin
        .checked_add(delta)
        .ok_or_else(|| out_of_range("timestamp out of range"))
}
