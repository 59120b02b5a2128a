//! DateStyle and IntervalStyle: how a session writes dates, timestamps and intervals as
//! text, and in which order it reads an ambiguous date such as `01/02/03` (PostgreSQL
//! 15's EncodeDateOnly, EncodeDateTime and EncodeInterval; the settings' check hooks).
//! The style travels with the session's time zone (`Zone::style`): both shape the text of
//! every date/time value.

use crate::datetime::{
    date_to_ymd, format_time, j2date, push_fraction, IntervalFields, DATE_NOBEGIN, DATE_NOEND,
    POSTGRES_EPOCH_JDATE, TS_NOBEGIN, TS_NOEND, USECS_PER_DAY,
};
use crate::timezone::{format_offset, Zone};
use pgerror::{codes, PgError, PgResult};

/// The output half of DateStyle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DateOutput {
    #[default]
    Iso,
    Sql,
    Postgres,
    German,
}

/// The field order half of DateStyle: how `01/02/03` is read (and, for the SQL and
/// Postgres outputs, whether the day or the month is written first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DateOrder {
    Ymd,
    Dmy,
    #[default]
    Mdy,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IntervalStyle {
    #[default]
    Postgres,
    PostgresVerbose,
    SqlStandard,
    Iso8601,
}

/// DateStyle and IntervalStyle together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    pub output: DateOutput,
    pub order: DateOrder,
    pub interval: IntervalStyle,
}

impl Style {
    pub const DEFAULT: Style = Style {
        output: DateOutput::Iso,
        order: DateOrder::Mdy,
        interval: IntervalStyle::Postgres,
    };
}

/// A DateStyle setting (`'SQL, DMY'`, `euro`, `German`): the style and the value SHOW
/// reports. Parts not named keep `current`'s, except that German alone implies DMY, as
/// in PostgreSQL's check_datestyle.
pub fn parse_date_style(value: &str, current: Style) -> PgResult<(Style, String)> {
    let invalid = |detail: Option<&str>| {
        let shown = value.trim().trim_matches('\'');
        let e = PgError::new(
            codes::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"DateStyle\": \"{shown}\""),
        );
        match detail {
            Some(d) => e.with_detail(d),
            None => e,
        }
    };
    let (mut output, mut order) = (None, None);
    for word in value.split(',') {
        let word = word.trim().trim_matches('\'').trim().to_ascii_lowercase();
        let (new_output, new_order) = match word.as_str() {
            "iso" => (Some(DateOutput::Iso), None),
            "sql" => (Some(DateOutput::Sql), None),
            "postgres" => (Some(DateOutput::Postgres), None),
            "german" => (Some(DateOutput::German), None),
            "ymd" => (None, Some(DateOrder::Ymd)),
            "dmy" | "euro" | "european" => (None, Some(DateOrder::Dmy)),
            "mdy" | "us" | "noneuro" | "noneuropean" => (None, Some(DateOrder::Mdy)),
            "default" => (Some(DateOutput::Iso), Some(DateOrder::Mdy)),
            _ => {
                return Err(invalid(Some(&format!(
                    "Unrecognized key word: \"{word}\"."
                ))))
            }
        };
        if new_output.is_some_and(|o| output.is_some_and(|had| had != o))
            || new_order.is_some_and(|o| order.is_some_and(|had| had != o))
        {
            return Err(invalid(Some("Conflicting \"datestyle\" specifications.")));
        }
        output = new_output.or(output);
        order = new_order.or(order);
    }
    let order = match (order, output) {
        (Some(o), _) => o,
        (None, Some(DateOutput::German)) => DateOrder::Dmy,
        (None, _) => current.order,
    };
    let style = Style {
        output: output.unwrap_or(current.output),
        order,
        interval: current.interval,
    };
    let shown = format!(
        "{}, {}",
        match style.output {
            DateOutput::Iso => "ISO",
            DateOutput::Sql => "SQL",
            DateOutput::Postgres => "Postgres",
            DateOutput::German => "German",
        },
        match style.order {
            DateOrder::Ymd => "YMD",
            DateOrder::Dmy => "DMY",
            DateOrder::Mdy => "MDY",
        }
    );
    Ok((style, shown))
}

/// An IntervalStyle setting and the value SHOW reports.
pub fn parse_interval_style(value: &str) -> PgResult<(IntervalStyle, String)> {
    let lower = value.trim().trim_matches('\'').to_ascii_lowercase();
    let style = match lower.as_str() {
        "postgres" => IntervalStyle::Postgres,
        "postgres_verbose" => IntervalStyle::PostgresVerbose,
        "sql_standard" => IntervalStyle::SqlStandard,
        "iso_8601" => IntervalStyle::Iso8601,
        _ => {
            return Err(PgError::new(
                codes::INVALID_PARAMETER_VALUE,
                format!("invalid value for parameter \"intervalstyle\": \"{lower}\""),
            )
            .with_hint("Available values: postgres, postgres_verbose, sql_standard, iso_8601."))
        }
    };
    Ok((style, lower))
}

/// interval input: in IntervalStyle sql_standard a leading minus with no other sign
/// applies to every field (`-1 2:03` is minus a day and two hours), as DecodeInterval does.
pub fn parse_interval(input: &str, style: Style) -> PgResult<(i32, i32, i64)> {
    let negated = input.trim_start().strip_prefix('-').filter(|rest| {
        style.interval == IntervalStyle::SqlStandard
            && !rest
                .split_whitespace()
                .skip(1)
                .any(|field| field.starts_with(['-', '+']))
    });
    match negated {
        Some(rest) => {
            let (months, days, micros) = crate::datetime::parse_interval(rest)?;
            let negative = |v: i64| if v > 0 { -v } else { v };
            Ok((
                negative(months as i64) as i32,
                negative(days as i64) as i32,
                negative(micros),
            ))
        }
        None => crate::datetime::parse_interval(input),
    }
}

const MONTH_ABBREVIATIONS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const DAY_ABBREVIATIONS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

/// The year as written: 1 BC is year 1, four digits at least.
fn shown_year(y: i64) -> String {
    format!("{:04}", if y > 0 { y } else { 1 - y })
}

/// Day and month in the order the style writes them, with `sep` between.
fn day_month(order: DateOrder, day: u32, month: u32, sep: char) -> String {
    match order {
        DateOrder::Dmy => format!("{day:02}{sep}{month:02}"),
        _ => format!("{month:02}{sep}{day:02}"),
    }
}

/// date output (EncodeDateOnly).
pub fn format_date(d: i32, style: Style) -> String {
    match d {
        DATE_NOBEGIN => return "-infinity".into(),
        DATE_NOEND => return "infinity".into(),
        _ => {}
    }
    let (y, m, day) = date_to_ymd(d);
    let mut s = match style.output {
        DateOutput::Iso => format!("{}-{m:02}-{day:02}", shown_year(y)),
        DateOutput::Sql => format!("{}/{}", day_month(style.order, day, m, '/'), shown_year(y)),
        DateOutput::German => format!("{day:02}.{m:02}.{}", shown_year(y)),
        DateOutput::Postgres => {
            format!("{}-{}", day_month(style.order, day, m, '-'), shown_year(y))
        }
    };
    if y <= 0 {
        s.push_str(" BC");
    }
    s
}

/// timestamp output.
pub fn format_timestamp(local: i64, style: Style) -> String {
    format_wall_clock(local, None, style)
}

/// timestamptz output: the wall clock in `zone`, with its offset (ISO) or abbreviation.
pub fn format_timestamptz(utc: i64, zone: &Zone) -> String {
    let style = zone.style();
    if utc == TS_NOBEGIN || utc == TS_NOEND {
        return format_wall_clock(utc, None, style);
    }
    let name = match style.output {
        DateOutput::Iso => String::new(),
        _ => zone.abbreviation_at(utc),
    };
    format_wall_clock(zone.to_local(utc), Some((zone.offset_at(utc), name)), style)
}

/// EncodeDateTime: the wall clock `local`, and for a timestamptz its offset east and
/// zone abbreviation.
fn format_wall_clock(local: i64, zone: Option<(i32, String)>, style: Style) -> String {
    match local {
        TS_NOBEGIN => return "-infinity".into(),
        TS_NOEND => return "infinity".into(),
        _ => {}
    }
    let days = local.div_euclid(USECS_PER_DAY);
    let (y, m, d) = j2date(days + POSTGRES_EPOCH_JDATE);
    let time = format_time(local.rem_euclid(USECS_PER_DAY));
    let year = shown_year(y);
    // The zone as a name where it has one, else as an offset (after a blank in the
    // Postgres style only, as EncodeDateTime writes it).
    let named_zone = |zone: &(i32, String)| match &zone.1 {
        name if !name.is_empty() => format!(" {name}"),
        _ if style.output == DateOutput::Postgres => format!(" {}", format_offset(zone.0)),
        _ => format_offset(zone.0),
    };
    let mut s = match style.output {
        DateOutput::Iso => {
            let mut s = format!("{year}-{m:02}-{d:02} {time}");
            if let Some((east, _)) = &zone {
                s.push_str(&format_offset(*east));
            }
            s
        }
        DateOutput::Sql | DateOutput::German => {
            let date = match style.output {
                DateOutput::Sql => format!("{}/{year}", day_month(style.order, d, m, '/')),
                _ => format!("{d:02}.{m:02}.{year}"),
            };
            let mut s = format!("{date} {time}");
            if let Some(zone) = &zone {
                s.push_str(&named_zone(zone));
            }
            s
        }
        DateOutput::Postgres => {
            let weekday =
                DAY_ABBREVIATIONS[(days + POSTGRES_EPOCH_JDATE + 1).rem_euclid(7) as usize];
            let month = MONTH_ABBREVIATIONS[m as usize - 1];
            let date = match style.order {
                DateOrder::Dmy => format!("{d:02} {month}"),
                _ => format!("{month} {d:02}"),
            };
            let mut s = format!("{weekday} {date} {time} {year}");
            if let Some(zone) = &zone {
                s.push_str(&named_zone(zone));
            }
            s
        }
    };
    if y <= 0 {
        s.push_str(" BC");
    }
    s
}

/// interval output (EncodeInterval) in the non-default IntervalStyles; `None` for the
/// default, which `datetime::format_interval` writes.
pub fn format_interval(months: i32, days: i32, micros: i64, style: Style) -> Option<String> {
    let fields = IntervalFields::of(months, days, micros);
    Some(match style.interval {
        IntervalStyle::Postgres => return None,
        IntervalStyle::PostgresVerbose => verbose(fields),
        IntervalStyle::SqlStandard => sql_standard(fields),
        IntervalStyle::Iso8601 => iso_8601(fields),
    })
}

/// Seconds and their fraction, without trailing zeros (AppendSeconds); two digits at
/// least when `pad`.
fn seconds(second: i64, fraction: i64, pad: bool) -> String {
    let mut s = if pad {
        format!("{:02}", second.abs())
    } else {
        second.abs().to_string()
    };
    push_fraction(&mut s, fraction.abs());
    s
}

fn verbose(fields: IntervalFields) -> String {
    let IntervalFields {
        year,
        month,
        day,
        hour,
        minute,
        second,
        micros: fraction,
    } = fields;
    let mut s = String::from("@");
    let (mut is_zero, mut is_before) = (true, false);
    for (value, unit) in [
        (year, "year"),
        (month, "mon"),
        (day, "day"),
        (hour, "hour"),
        (minute, "min"),
    ] {
        if value == 0 {
            continue;
        }
        // The first part's sign becomes "ago"; later parts are shown against it.
        let shown = if is_zero {
            is_before = value < 0;
            value.abs()
        } else if is_before {
            -value
        } else {
            value
        };
        s.push_str(&format!(
            " {shown} {unit}{}",
            if shown == 1 { "" } else { "s" }
        ));
        is_zero = false;
    }
    if second != 0 || fraction != 0 {
        s.push(' ');
        if second < 0 || (second == 0 && fraction < 0) {
            if is_zero {
                is_before = true;
            } else if !is_before {
                s.push('-');
            }
        } else if is_before {
            s.push('-');
        }
        s.push_str(&seconds(second, fraction, false));
        let plural = second.abs() != 1 || fraction != 0;
        s.push_str(if plural { " secs" } else { " sec" });
        is_zero = false;
    }
    if is_zero {
        s.push_str(" 0");
    }
    if is_before {
        s.push_str(" ago");
    }
    s
}

fn sql_standard(fields: IntervalFields) -> String {
    let IntervalFields {
        year,
        month,
        day,
        hour,
        minute,
        second,
        micros: fraction,
    } = fields;
    let parts = [year, month, day, hour, minute, second, fraction];
    let negative = parts.iter().any(|p| *p < 0);
    let positive = parts.iter().any(|p| *p > 0);
    let year_month = year != 0 || month != 0;
    let day_time = parts[2..].iter().any(|p| *p != 0);
    // One sign in front of the whole value, where its parts agree and it is not both a
    // year-month and a day-time interval; otherwise a sign on each group.
    let mixed_signs = negative && positive;
    let standard = !(mixed_signs || year_month && day_time);
    let sign = if negative && standard { "-" } else { "" };
    let [year, month, day, hour, minute, second, fraction] =
        parts.map(|p| if sign.is_empty() { p } else { -p });
    if !negative && !positive {
        return "0".into();
    }
    if !standard {
        let year_sign = if year < 0 || month < 0 { '-' } else { '+' };
        let day_sign = if day < 0 { '-' } else { '+' };
        let time_sign = if hour < 0 || minute < 0 || second < 0 || fraction < 0 {
            '-'
        } else {
            '+'
        };
        return format!(
            "{year_sign}{}-{} {day_sign}{} {time_sign}{}:{:02}:{}",
            year.abs(),
            month.abs(),
            day.abs(),
            hour.abs(),
            minute.abs(),
            seconds(second, fraction, true)
        );
    }
    let time = format!("{hour}:{minute:02}:{}", seconds(second, fraction, true));
    if year_month {
        format!("{sign}{year}-{month}")
    } else if day != 0 {
        format!("{sign}{day} {time}")
    } else {
        format!("{sign}{time}")
    }
}

fn iso_8601(fields: IntervalFields) -> String {
    let IntervalFields {
        year,
        month,
        day,
        hour,
        minute,
        second,
        micros: fraction,
    } = fields;
    if [year, month, day, hour, minute, second, fraction]
        .iter()
        .all(|p| *p == 0)
    {
        return "PT0S".into();
    }
    let mut s = String::from("P");
    let part = |s: &mut String, value: i64, unit: char| {
        if value != 0 {
            s.push_str(&format!("{value}{unit}"));
        }
    };
    part(&mut s, year, 'Y');
    part(&mut s, month, 'M');
    part(&mut s, day, 'D');
    if hour != 0 || minute != 0 || second != 0 || fraction != 0 {
        s.push('T');
    }
    part(&mut s, hour, 'H');
    part(&mut s, minute, 'M');
    if second != 0 || fraction != 0 {
        if second < 0 || fraction < 0 {
            s.push('-');
        }
        s.push_str(&seconds(second, fraction, false));
        s.push('S');
    }
    s
}
