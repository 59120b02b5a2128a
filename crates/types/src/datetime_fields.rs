//! The fields of dates, times, timestamps and intervals, as PostgreSQL 15's
//! timestamp.c/date.c compute them: EXTRACT/date_part, date_trunc, AT TIME ZONE, age,
//! justify_*, make_*, isfinite, and timestamptz ± interval in a zone (DST-aware).
//!
//! A timestamptz's fields are those of its wall clock in the zone given (the session's).

use crate::datetime::{
    date2j, days_in_month, j2date, timestamp_in_range, DATE_NOBEGIN, DATE_NOEND,
    POSTGRES_EPOCH_JDATE, TS_NOBEGIN, TS_NOEND, UNIX_EPOCH_JDATE, USECS_PER_DAY, USECS_PER_HOUR,
    USECS_PER_MINUTE, USECS_PER_SEC,
};
use crate::numeric::{self, Numeric};
use crate::timezone::Zone;
use crate::Value;
use pgerror::{codes, PgError, PgResult};

/// A broken-down wall clock: year (astronomical: 1 BC is 0), month, day, µs of the day.
struct Fields {
    year: i64,
    month: u32,
    day: u32,
    tod: i64,
}

fn fields(local: i64) -> Fields {
    let (year, month, day) = j2date(local.div_euclid(USECS_PER_DAY) + POSTGRES_EPOCH_JDATE);
    Fields {
        year,
        month,
        day,
        tod: local.rem_euclid(USECS_PER_DAY),
    }
}

fn ts_out_of_range() -> PgError {
    PgError::new(codes::DATETIME_FIELD_OVERFLOW, "timestamp out of range")
}

fn local_timestamp(f: &Fields) -> PgResult<i64> {
    (date2j(f.year, f.month as i64, f.day as i64) - POSTGRES_EPOCH_JDATE)
        .checked_mul(USECS_PER_DAY)
        .and_then(|t| t.checked_add(f.tod))
        .filter(|t| timestamp_in_range(*t))
        .ok_or_else(ts_out_of_range)
}

fn is_infinite(v: &Value) -> bool {
    matches!(
        v,
        Value::Date(DATE_NOBEGIN | DATE_NOEND) | Value::Timestamp(TS_NOBEGIN | TS_NOEND)
    ) || matches!(v, Value::TimestampTz(TS_NOBEGIN | TS_NOEND))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Date(_) => "date",
        Value::Time(_) => "time without time zone",
        Value::Timestamp(_) => "timestamp without time zone",
        Value::Interval { .. } => "interval",
        _ => "timestamp with time zone",
    }
}

fn unit_not_recognized(unit: &str, v: &Value) -> PgError {
    PgError::new(
        codes::INVALID_PARAMETER_VALUE,
        format!("unit \"{unit}\" not recognized for type {}", type_name(v)),
    )
}

fn unit_not_supported(unit: &str, v: &Value) -> PgError {
    PgError::new(
        codes::FEATURE_NOT_SUPPORTED,
        format!("unit \"{unit}\" not supported for type {}", type_name(v)),
    )
}

/// PostgreSQL's spellings of each unit (DecodeUnits' table, the common entries).
fn canonical_unit(unit: &str) -> Option<&'static str> {
    Some(match unit.trim().to_ascii_lowercase().as_str() {
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "usecond" | "useconds" => {
            "microseconds"
        }
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "msecond" | "mseconds" => {
            "milliseconds"
        }
        "second" | "seconds" | "s" | "sec" | "secs" => "second",
        "minute" | "minutes" | "m" | "min" | "mins" => "minute",
        "hour" | "hours" | "h" | "hr" | "hrs" => "hour",
        "day" | "days" | "d" => "day",
        "week" | "weeks" | "w" => "week",
        "month" | "months" | "mon" | "mons" => "month",
        "quarter" | "qtr" => "quarter",
        "year" | "years" | "y" | "yr" | "yrs" => "year",
        "decade" | "decades" | "dec" | "decs" => "decade",
        "century" | "centuries" | "c" | "cent" => "century",
        "millennium" | "millennia" | "mil" | "mils" | "millenniums" => "millennium",
        "epoch" => "epoch",
        "dow" => "dow",
        "isodow" => "isodow",
        "doy" => "doy",
        "isoyear" => "isoyear",
        "julian" | "j" => "julian",
        "timezone" => "timezone",
        "timezone_h" | "timezone_hour" => "timezone_hour",
        "timezone_m" | "timezone_minute" => "timezone_minute",
        _ => return None,
    })
}

/// `n / 10^scale` as a numeric with that scale (PG's int64_div_fast_to_numeric).
fn scaled(n: i64, scale: u32) -> Numeric {
    let neg = n < 0;
    let digits = format!("{:0width$}", n.unsigned_abs(), width = scale as usize + 1);
    let (int, frac) = digits.split_at(digits.len() - scale as usize);
    let text = if scale == 0 {
        format!("{}{int}", if neg { "-" } else { "" })
    } else {
        format!("{}{int}.{frac}", if neg { "-" } else { "" })
    };
    match numeric::parse(&text) {
        Some(Ok(n)) => n,
        _ => Numeric::from_i64(0),
    }
}

/// A field value: exact (`n / 10^scale`) for EXTRACT's numeric, or a float for date_part.
fn field_value(n: i64, scale: u32, numeric_result: bool) -> Value {
    if numeric_result {
        Value::Numeric(scaled(n, scale))
    } else {
        Value::Float8(n as f64 / 10f64.powi(scale as i32))
    }
}

/// microseconds, milliseconds or second from the seconds and µs of a minute (`sec_us`):
/// exact for EXTRACT, and for date_part computed as PostgreSQL does in floating point
/// (`sec + fsec / 1e6` is not always `sec_us / 1e6`).
fn seconds_field(u: &str, sec_us: i64, numeric_result: bool) -> Value {
    let (sec, fsec) = (
        (sec_us / USECS_PER_SEC) as f64,
        (sec_us % USECS_PER_SEC) as f64,
    );
    match (u, numeric_result) {
        ("microseconds", _) => field_value(sec_us, 0, numeric_result),
        ("milliseconds", true) => field_value(sec_us, 3, true),
        ("milliseconds", false) => Value::Float8(sec * 1000.0 + fsec / 1000.0),
        (_, true) => field_value(sec_us, 6, true),
        (_, false) => Value::Float8(sec + fsec / 1_000_000.0),
    }
}

fn infinity_value(positive: bool, numeric_result: bool) -> Value {
    let text = if positive { "Infinity" } else { "-Infinity" };
    match numeric::parse(text) {
        Some(Ok(n)) if numeric_result => Value::Numeric(n),
        _ if positive => Value::Float8(f64::INFINITY),
        _ => Value::Float8(f64::NEG_INFINITY),
    }
}

/// ISO 8601 week number and week-based year of a date (PG's date2isoweek/date2isoyear).
pub(crate) fn iso_week(year: i64, month: u32, day: u32) -> (i64, i64) {
    let jd = date2j(year, month as i64, day as i64);
    // Monday of week 1: the week with the year's first Thursday
    let week1 = |y: i64| {
        let jan4 = date2j(y, 1, 4);
        // back to Monday: the ISO weekday index of Jan 4 (Monday 0)
        jan4 - ((jan4 + 1).rem_euclid(7) + 6) % 7
    };
    let mut y = year;
    let mut start = week1(y);
    if jd < start {
        y -= 1;
        start = week1(y);
    } else {
        let next = week1(y + 1);
        if jd >= next {
            y += 1;
            start = next;
        }
    }
    ((jd - start) / 7 + 1, y)
}

/// Day of the week, 0 = Sunday.
pub(crate) fn dow(year: i64, month: u32, day: u32) -> i64 {
    (date2j(year, month as i64, day as i64) + 1).rem_euclid(7)
}

/// EXTRACT (numeric, `numeric_result`) / date_part (float8) of a date, time, timestamp,
/// timestamptz (fields of its wall clock in `zone`) or interval.
pub fn extract(unit: &str, v: &Value, zone: &Zone, numeric_result: bool) -> PgResult<Value> {
    let lower = unit.trim().to_ascii_lowercase();
    let u = canonical_unit(&lower).ok_or_else(|| unit_not_recognized(&lower, v))?;
    match v {
        Value::Interval {
            months,
            days,
            micros,
        } => extract_interval(u, &lower, v, *months, *days, *micros, numeric_result),
        Value::Time(t) => {
            let (sec, us) = ((t / USECS_PER_SEC) % 60, t % USECS_PER_SEC);
            Ok(match u {
                "microseconds" | "milliseconds" | "second" => {
                    seconds_field(u, sec * USECS_PER_SEC + us, numeric_result)
                }
                "minute" => field_value(t / USECS_PER_MINUTE % 60, 0, numeric_result),
                "hour" => field_value(t / USECS_PER_HOUR, 0, numeric_result),
                "epoch" => field_value(*t, 6, numeric_result),
                _ => return Err(unit_not_supported(&lower, v)),
            })
        }
        Value::Date(d) if numeric_result => {
            if matches!(
                u,
                "microseconds"
                    | "milliseconds"
                    | "second"
                    | "minute"
                    | "hour"
                    | "timezone"
                    | "timezone_hour"
                    | "timezone_minute"
            ) {
                return Err(unit_not_supported(&lower, v));
            }
            if is_infinite(v) {
                return Ok(infinite_field(u, *d == DATE_NOEND, numeric_result));
            }
            let f = fields(*d as i64 * USECS_PER_DAY);
            if u == "epoch" {
                return Ok(field_value(
                    (*d as i64 + POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * 86_400,
                    0,
                    true,
                ));
            }
            date_field(u, &f, numeric_result).ok_or_else(|| unit_not_supported(&lower, v))
        }
        Value::Date(_) | Value::Timestamp(_) | Value::TimestampTz(_) => {
            let (ts, tz) = match v {
                Value::Date(d) => (date_as_timestamp(*d), false),
                Value::Timestamp(t) => (*t, false),
                Value::TimestampTz(t) => (*t, true),
                _ => unreachable!(),
            };
            if !tz && u.starts_with("timezone") {
                return Err(unit_not_supported(&lower, &Value::Timestamp(0)));
            }
            if is_infinite(v) {
                return Ok(infinite_field(u, ts == TS_NOEND, numeric_result));
            }
            let offset = if tz { zone.offset_at(ts) as i64 } else { 0 };
            let f = fields(ts + offset * USECS_PER_SEC);
            let sec_us = f.tod % USECS_PER_MINUTE;
            Ok(match u {
                "microseconds" | "milliseconds" | "second" => {
                    seconds_field(u, sec_us, numeric_result)
                }
                "minute" => field_value(f.tod / USECS_PER_MINUTE % 60, 0, numeric_result),
                "hour" => field_value(f.tod / USECS_PER_HOUR, 0, numeric_result),
                "epoch" => field_value(
                    ts - (UNIX_EPOCH_JDATE - POSTGRES_EPOCH_JDATE) * USECS_PER_DAY,
                    6,
                    numeric_result,
                ),
                "timezone" => field_value(offset, 0, numeric_result),
                "timezone_hour" => field_value(offset / 3600, 0, numeric_result),
                "timezone_minute" => field_value(offset / 60 % 60, 0, numeric_result),
                "julian" if !numeric_result => Value::Float8(
                    date2j(f.year, f.month as i64, f.day as i64) as f64
                        + f.tod as f64 / USECS_PER_DAY as f64,
                ),
                "julian" if f.tod == 0 => {
                    field_value(date2j(f.year, f.month as i64, f.day as i64), 0, true)
                }
                // PG's exact julian with a time of day is a numeric division's scale
                "julian" => return Err(unit_not_supported(&lower, v)),
                _ => date_field(u, &f, numeric_result)
                    .ok_or_else(|| unit_not_supported(&lower, v))?,
            })
        }
        _ => Err(unit_not_recognized(&lower, v)),
    }
}

fn date_as_timestamp(d: i32) -> i64 {
    match d {
        DATE_NOBEGIN => TS_NOBEGIN,
        DATE_NOEND => TS_NOEND,
        _ => d as i64 * USECS_PER_DAY,
    }
}

/// Fields of an infinite date or timestamp: ±Infinity for the ever-growing ones, else NULL.
fn infinite_field(u: &str, positive: bool, numeric_result: bool) -> Value {
    match u {
        "year" | "decade" | "century" | "millennium" | "julian" | "isoyear" | "epoch" => {
            infinity_value(positive, numeric_result)
        }
        _ => Value::Null,
    }
}

/// The calendar fields shared by dates and timestamps.
fn date_field(u: &str, f: &Fields, numeric_result: bool) -> Option<Value> {
    let y = f.year;
    let n = match u {
        "day" => f.day as i64,
        "month" => f.month as i64,
        "quarter" => (f.month as i64 - 1) / 3 + 1,
        "week" => iso_week(y, f.month, f.day).0,
        "year" => {
            if y > 0 {
                y
            } else {
                y - 1
            }
        }
        "decade" => {
            if y >= 0 {
                y / 10
            } else {
                -((8 - (y - 1)) / 10)
            }
        }
        "century" => {
            if y > 0 {
                (y + 99) / 100
            } else {
                -((99 - (y - 1)) / 100)
            }
        }
        "millennium" => {
            if y > 0 {
                (y + 999) / 1000
            } else {
                -((999 - (y - 1)) / 1000)
            }
        }
        "dow" => dow(y, f.month, f.day),
        "isodow" => match dow(y, f.month, f.day) {
            0 => 7,
            d => d,
        },
        "doy" => date2j(y, f.month as i64, f.day as i64) - date2j(y, 1, 1) + 1,
        "isoyear" => {
            let iy = iso_week(y, f.month, f.day).1;
            if iy > 0 {
                iy
            } else {
                iy - 1
            }
        }
        "julian" => date2j(y, f.month as i64, f.day as i64),
        _ => return None,
    };
    Some(field_value(n, 0, numeric_result))
}

fn extract_interval(
    u: &str,
    lower: &str,
    v: &Value,
    months: i32,
    days: i32,
    micros: i64,
    numeric_result: bool,
) -> PgResult<Value> {
    let (years, mons) = (months as i64 / 12, months as i64 % 12);
    let sec_us = micros % USECS_PER_MINUTE;
    Ok(match u {
        "microseconds" | "milliseconds" | "second" => seconds_field(u, sec_us, numeric_result),
        "minute" => field_value(micros / USECS_PER_MINUTE % 60, 0, numeric_result),
        "hour" => field_value(micros / USECS_PER_HOUR, 0, numeric_result),
        "day" => field_value(days as i64, 0, numeric_result),
        "month" => field_value(mons, 0, numeric_result),
        "quarter" => field_value(mons / 3 + 1, 0, numeric_result),
        "year" => field_value(years, 0, numeric_result),
        "decade" => field_value(years / 10, 0, numeric_result),
        "century" => field_value(years / 100, 0, numeric_result),
        "millennium" => field_value(years / 1000, 0, numeric_result),
        "epoch" => {
            // years count 365.25 days, other months 30 (PG's interval_part)
            let secs = years * 31_557_600 + mons * 30 * 86_400 + days as i64 * 86_400;
            if numeric_result {
                field_value(secs * USECS_PER_SEC + micros, 6, true)
            } else {
                Value::Float8(micros as f64 / 1_000_000.0 + secs as f64)
            }
        }
        _ => return Err(unit_not_supported(lower, v)),
    })
}

/// date_trunc(unit, v [, zone]): a timestamptz is truncated on its wall clock in `zone`;
/// for a day or longer the zone's offset at the result is used, else the one it had.
pub fn date_trunc(unit: &str, v: &Value, zone: &Zone) -> PgResult<Value> {
    let lower = unit.trim().to_ascii_lowercase();
    let u = canonical_unit(&lower).ok_or_else(|| unit_not_recognized(&lower, v))?;
    if let Value::Interval { .. } = v {
        return Err(unit_not_supported(&lower, v));
    }
    let (ts, tz) = match v {
        Value::Timestamp(t) => (*t, false),
        Value::TimestampTz(t) => (*t, true),
        _ => return Err(unit_not_recognized(&lower, v)),
    };
    if ts == TS_NOBEGIN || ts == TS_NOEND {
        return Ok(v.clone());
    }
    let offset = if tz { zone.offset_at(ts) as i64 } else { 0 };
    let mut f = fields(ts + offset * USECS_PER_SEC);
    let whole = |tod: i64, unit: i64| tod - tod.rem_euclid(unit);
    let mut redo_zone = true;
    match u {
        "microseconds" => redo_zone = false,
        "milliseconds" => (f.tod, redo_zone) = (whole(f.tod, 1000), false),
        "second" => (f.tod, redo_zone) = (whole(f.tod, USECS_PER_SEC), false),
        "minute" => (f.tod, redo_zone) = (whole(f.tod, USECS_PER_MINUTE), false),
        "hour" => (f.tod, redo_zone) = (whole(f.tod, USECS_PER_HOUR), false),
        "day" => f.tod = 0,
        "week" => {
            let back = (dow(f.year, f.month, f.day) + 6) % 7;
            let jd = date2j(f.year, f.month as i64, f.day as i64) - back;
            let (y, m, d) = j2date(jd);
            f = Fields {
                year: y,
                month: m,
                day: d,
                tod: 0,
            };
        }
        "month" => (f.day, f.tod) = (1, 0),
        "quarter" => (f.month, f.day, f.tod) = ((f.month - 1) / 3 * 3 + 1, 1, 0),
        "year" => (f.month, f.day, f.tod) = (1, 1, 0),
        "decade" => {
            f.year = if f.year > 0 {
                f.year / 10 * 10
            } else {
                -((8 - (f.year - 1)) / 10) * 10
            };
            (f.month, f.day, f.tod) = (1, 1, 0);
        }
        "century" => {
            f.year = if f.year > 0 {
                (f.year + 99) / 100 * 100 - 99
            } else {
                -((99 - (f.year - 1)) / 100) * 100 + 1
            };
            (f.month, f.day, f.tod) = (1, 1, 0);
        }
        "millennium" => {
            f.year = if f.year > 0 {
                (f.year + 999) / 1000 * 1000 - 999
            } else {
                -((999 - (f.year - 1)) / 1000) * 1000 + 1
            };
            (f.month, f.day, f.tod) = (1, 1, 0);
        }
        _ => return Err(unit_not_supported(&lower, v)),
    }
    let local = local_timestamp(&f)?;
    Ok(if !tz {
        Value::Timestamp(local)
    } else if redo_zone {
        Value::TimestampTz(zone.to_utc(local))
    } else {
        Value::TimestampTz(local - offset * USECS_PER_SEC)
    })
}

/// The zone an AT TIME ZONE / timezone() argument names: text (an abbreviation, a
/// database name or a POSIX specification) or an interval (an offset east).
pub fn zone_argument(z: &Value) -> PgResult<Zone> {
    match z {
        Value::Interval {
            months,
            days,
            micros,
        } => {
            if *months != 0 || *days != 0 {
                return Err(PgError::new(
                    codes::INVALID_PARAMETER_VALUE,
                    format!(
                        "interval time zone \"{}\" must not include months or days",
                        crate::datetime::format_interval(*months, *days, *micros)
                    ),
                ));
            }
            Ok(Zone::fixed((micros / USECS_PER_SEC) as i32))
        }
        other => {
            let name = other.as_str().unwrap_or_default();
            Zone::from_literal_token(name)
                .ok()
                .flatten()
                .or_else(|| Zone::named(name))
                .ok_or_else(|| {
                    PgError::new(
                        codes::INVALID_PARAMETER_VALUE,
                        format!("time zone \"{name}\" not recognized"),
                    )
                })
        }
    }
}

/// `ts AT TIME ZONE zone`: a timestamptz's wall clock there (a timestamp), or the instant
/// a timestamp's wall clock is there (a timestamptz).
pub fn at_time_zone(v: &Value, zone: &Zone) -> PgResult<Value> {
    Ok(match v {
        Value::TimestampTz(t @ (TS_NOBEGIN | TS_NOEND)) => Value::Timestamp(*t),
        Value::Timestamp(t @ (TS_NOBEGIN | TS_NOEND)) => Value::TimestampTz(*t),
        Value::TimestampTz(t) => {
            let local = zone.to_local(*t);
            if !timestamp_in_range(local) {
                return Err(ts_out_of_range());
            }
            Value::Timestamp(local)
        }
        Value::Timestamp(t) => {
            let utc = zone.to_utc(*t);
            if !timestamp_in_range(utc) {
                return Err(ts_out_of_range());
            }
            Value::TimestampTz(utc)
        }
        _ => return Err(PgError::internal("AT TIME ZONE of a non-timestamp")),
    })
}

/// timestamptz + interval with the month and day parts on the wall clock of `zone`
/// (across a DST change a day stays a calendar day), then the µs part (PG's
/// timestamptz_pl_interval). `sign` is -1 for subtraction.
pub fn timestamptz_add_interval(
    ts: i64,
    months: i32,
    days: i32,
    micros: i64,
    sign: i64,
    zone: &Zone,
) -> PgResult<i64> {
    if ts == TS_NOBEGIN || ts == TS_NOEND {
        return Ok(ts);
    }
    let overflow = ts_out_of_range;
    let mut t = ts;
    if months != 0 {
        let mut f = fields(zone.to_local(t));
        let total = f.year * 12 + (f.month as i64 - 1) + sign * months as i64;
        f.year = total.div_euclid(12);
        f.month = (total.rem_euclid(12) + 1) as u32;
        f.day = f.day.min(days_in_month(f.year, f.month));
        t = zone.to_utc(local_timestamp(&f)?);
    }
    if days != 0 {
        let local = zone
            .to_local(t)
            .checked_add(sign * days as i64 * USECS_PER_DAY)
            .ok_or_else(overflow)?;
        t = zone.to_utc(local);
    }
    let t = t
        .checked_add(micros.checked_mul(sign).ok_or_else(overflow)?)
        .ok_or_else(overflow)?;
    if !timestamp_in_range(t) || t == TS_NOBEGIN || t == TS_NOEND {
        return Err(overflow());
    }
    Ok(t)
}

/// age(a, b): the difference of the wall-clock fields (timestamptz ones in `zone`),
/// borrowing as PostgreSQL's timestamp_age does.
pub fn age(a: &Value, b: &Value, zone: &Zone) -> PgResult<Value> {
    let wall = |v: &Value| match v {
        Value::TimestampTz(t) if *t != TS_NOBEGIN && *t != TS_NOEND => zone.to_local(*t),
        Value::Timestamp(t) | Value::TimestampTz(t) => *t,
        _ => 0,
    };
    let (t1, t2) = (wall(a), wall(b));
    if [t1, t2].iter().any(|t| *t == TS_NOBEGIN || *t == TS_NOEND) {
        return Err(PgError::new(
            codes::DATETIME_FIELD_OVERFLOW,
            "cannot subtract infinite timestamps",
        ));
    }
    let (f1, f2) = (fields(t1), fields(t2));
    let part = |f: &Fields| {
        [
            f.year,
            f.month as i64,
            f.day as i64,
            f.tod / USECS_PER_HOUR,
            f.tod / USECS_PER_MINUTE % 60,
            f.tod / USECS_PER_SEC % 60,
            f.tod % USECS_PER_SEC,
        ]
    };
    let (p1, p2) = (part(&f1), part(&f2));
    let flip = t1 < t2;
    let mut d: Vec<i64> = p1.iter().zip(&p2).map(|(x, y)| x - y).collect();
    if flip {
        d.iter_mut().for_each(|x| *x = -*x);
    }
    // [year, mon, mday, hour, min, sec, usec]: borrow from the next larger field
    let limits = [12, 0, 24, 60, 60, USECS_PER_SEC];
    for i in (1..7).rev() {
        while d[i] < 0 {
            d[i] += if i == 2 {
                let f = if flip { &f1 } else { &f2 };
                days_in_month(f.year, f.month) as i64
            } else {
                limits[i - 1]
            };
            d[i - 1] -= 1;
        }
    }
    if flip {
        d.iter_mut().for_each(|x| *x = -*x);
    }
    let months = i32::try_from(d[0] * 12 + d[1]).map_err(|_| interval_out_of_range())?;
    Ok(Value::Interval {
        months,
        days: d[2] as i32,
        micros: ((d[3] * 60 + d[4]) * 60 + d[5]) * USECS_PER_SEC + d[6],
    })
}

fn interval_out_of_range() -> PgError {
    PgError::new(codes::DATETIME_FIELD_OVERFLOW, "interval out of range")
}

/// justify_hours: whole days out of the µs part, signs made to agree.
pub fn justify_hours(months: i32, days: i32, micros: i64) -> PgResult<Value> {
    let mut days = days as i64 + micros / USECS_PER_DAY;
    let mut micros = micros % USECS_PER_DAY;
    if days > 0 && micros < 0 {
        micros += USECS_PER_DAY;
        days -= 1;
    } else if days < 0 && micros > 0 {
        micros -= USECS_PER_DAY;
        days += 1;
    }
    interval(months as i64, days, micros)
}

/// justify_days: 30-day months out of the day part, signs made to agree.
pub fn justify_days(months: i32, days: i32, micros: i64) -> PgResult<Value> {
    let mut months = months as i64 + days as i64 / 30;
    let mut days = days as i64 % 30;
    if months > 0 && days < 0 {
        days += 30;
        months -= 1;
    } else if months < 0 && days > 0 {
        days -= 30;
        months += 1;
    }
    interval(months, days, micros)
}

/// justify_interval: both, with PostgreSQL 15's sign rules.
pub fn justify_interval(months: i32, days: i32, micros: i64) -> PgResult<Value> {
    let mut days = days as i64 + micros / USECS_PER_DAY;
    let mut micros = micros % USECS_PER_DAY;
    let mut months = months as i64 + days / 30;
    days %= 30;
    if months > 0 && (days < 0 || (days == 0 && micros < 0)) {
        days += 30;
        months -= 1;
    } else if months < 0 && (days > 0 || (days == 0 && micros > 0)) {
        days -= 30;
        months += 1;
    }
    if days > 0 && micros < 0 {
        micros += USECS_PER_DAY;
        days -= 1;
    } else if days < 0 && micros > 0 {
        micros -= USECS_PER_DAY;
        days += 1;
    }
    interval(months, days, micros)
}

fn interval(months: i64, days: i64, micros: i64) -> PgResult<Value> {
    Ok(Value::Interval {
        months: i32::try_from(months).map_err(|_| interval_out_of_range())?,
        days: i32::try_from(days).map_err(|_| interval_out_of_range())?,
        micros,
    })
}

/// isfinite of a date, timestamp, timestamptz or interval.
pub fn is_finite(v: &Value) -> bool {
    !is_infinite(v)
}

fn field_overflow(what: &str) -> PgError {
    PgError::new(
        codes::DATETIME_FIELD_OVERFLOW,
        format!("date field value out of range: {what}"),
    )
}

/// make_date(year, month, day): negative years are BC.
pub fn make_date(year: i64, month: i64, day: i64) -> PgResult<Value> {
    let y = if year < 0 { year + 1 } else { year };
    if year == 0
        || !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(y, month as u32) as i64
    {
        return Err(field_overflow(&format!("{year}-{month:02}-{day:02}")));
    }
    crate::datetime::ymd_to_date(y, month as u32, day as u32)
        .map(Value::Date)
        .ok_or_else(|| {
            PgError::new(
                codes::DATETIME_FIELD_OVERFLOW,
                format!("date out of range: {year}-{month:02}-{day:02}"),
            )
        })
}

/// µs of the day from make_time's hour, minute and (fractional) second.
fn time_of_day(hour: i64, min: i64, sec: f64) -> PgResult<i64> {
    let us = (sec * USECS_PER_SEC as f64).round() as i64;
    if !(0..=24).contains(&hour)
        || !(0..60).contains(&min)
        || !(0.0..=60.0).contains(&sec)
        || (hour * USECS_PER_HOUR + min * USECS_PER_MINUTE + us) > USECS_PER_DAY
    {
        return Err(PgError::new(
            codes::DATETIME_FIELD_OVERFLOW,
            format!("time field value out of range: {hour}:{min:02}:{sec:02}"),
        ));
    }
    Ok(hour * USECS_PER_HOUR + min * USECS_PER_MINUTE + us)
}

pub fn make_time(hour: i64, min: i64, sec: f64) -> PgResult<Value> {
    time_of_day(hour, min, sec).map(Value::Time)
}

/// make_timestamp / make_timestamptz (read in `zone`, if given).
pub fn make_timestamp(parts: [i64; 5], sec: f64, zone: Option<&Zone>) -> PgResult<Value> {
    let [year, month, day, hour, min] = parts;
    let Value::Date(d) = make_date(year, month, day)? else {
        unreachable!()
    };
    let local = (d as i64)
        .checked_mul(USECS_PER_DAY)
        .and_then(|t| t.checked_add(time_of_day(hour, min, sec).ok()?))
        .filter(|t| timestamp_in_range(*t))
        .ok_or_else(ts_out_of_range)?;
    Ok(match zone {
        Some(z) => Value::TimestampTz(z.to_utc(local)),
        None => Value::Timestamp(local),
    })
}

/// make_interval(years, months, weeks, days, hours, mins, secs).
pub fn make_interval(parts: [i64; 6], secs: f64) -> PgResult<Value> {
    let [years, months, weeks, days, hours, mins] = parts;
    let us = (secs * USECS_PER_SEC as f64).round();
    if !us.is_finite() {
        return Err(interval_out_of_range());
    }
    let micros = hours
        .checked_mul(USECS_PER_HOUR)
        .and_then(|h| h.checked_add(mins.checked_mul(USECS_PER_MINUTE)?))
        .and_then(|t| t.checked_add(us as i64))
        .ok_or_else(interval_out_of_range)?;
    interval(years * 12 + months, weeks * 7 + days, micros)
}

/// to_timestamp(double precision): seconds since 1970-01-01 UTC.
pub fn to_timestamp_epoch(secs: f64) -> PgResult<Value> {
    if secs.is_nan() {
        return Err(PgError::new(
            codes::DATETIME_FIELD_OVERFLOW,
            "timestamp cannot be NaN",
        ));
    }
    if secs.is_infinite() {
        return Ok(Value::TimestampTz(if secs > 0.0 {
            TS_NOEND
        } else {
            TS_NOBEGIN
        }));
    }
    let us = (secs * USECS_PER_SEC as f64).round()
        - ((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY) as f64;
    if !(crate::datetime::MIN_TIMESTAMP as f64..crate::datetime::END_TIMESTAMP as f64).contains(&us)
    {
        return Err(PgError::new(
            codes::DATETIME_FIELD_OVERFLOW,
            format!("timestamp out of range: \"{secs}\""),
        ));
    }
    Ok(Value::TimestampTz(us as i64))
}
