//! to_char(interval, text): the template patterns over an interval's fields (years,
//! months, days, hours that may pass 24, minutes, seconds), as formatting.c does with
//! `is_interval`: a negative field keeps its sign inside the zero padding, and patterns
//! tied to calendar dates (names of months and days, AD/BC, time zones, weekdays) are
//! refused.

use super::{fraction, marker, render, roman_month};
use crate::datetime::{date2j, IntervalFields, DAYS_PER_MONTH};
use pgerror::{codes, PgError, PgResult};

/// Formats an interval by `template`.
pub fn format_interval(months: i32, days: i32, micros: i64, template: &str) -> PgResult<String> {
    let span = IntervalFields::of(months, days, micros);
    render(template, |pattern, fill| field(&span, pattern, fill))
}

/// `n` zero-padded to `width` characters, its sign included (C's "%0*d"); plain under FM.
fn printf(n: i64, width: usize, fill: bool) -> String {
    if fill {
        n.to_string()
    } else {
        format!("{n:0width$}")
    }
}

/// Padded to `width` digits: one more character when negative.
fn signed(n: i64, width: usize, fill: bool) -> String {
    printf(n, width + usize::from(n < 0), fill)
}

/// One pattern's text for the interval's fields `span`.
fn field(span: &IntervalFields, pattern: &str, fill: bool) -> PgResult<String> {
    let upper = pattern.to_ascii_uppercase();
    let day_span = (span.year * 12 + span.month) * DAYS_PER_MONTH + span.day;
    // YYYY…YY and their ISO forms: the last digits, one more character of padding
    // when the interval's years are negative (Y has none).
    let year_digits = |year: i64, digits: u32| {
        let shown = if digits == 4 {
            year
        } else {
            year % 10_i64.pow(digits)
        };
        let width = digits as usize + usize::from(span.year < 0 && digits > 1);
        printf(shown, width, fill)
    };
    let iso_year = || iso_year(span.year, span.month, span.day);
    Ok(match upper.as_str() {
        "HH" | "HH12" => {
            let h = match span.hour % 12 {
                0 => 12,
                h => h,
            };
            printf(h, if span.hour >= 0 { 2 } else { 3 }, fill)
        }
        "HH24" => signed(span.hour, 2, fill),
        "MI" => signed(span.minute, 2, fill),
        "SS" => signed(span.second, 2, fill),
        "MS" | "US" | "FF1" | "FF2" | "FF3" | "FF4" | "FF5" | "FF6" => {
            fraction(&upper, span.micros)
        }
        "SSSS" | "SSSSS" => (span.hour * 3600 + span.minute * 60 + span.second).to_string(),
        "AM" | "PM" | "A.M." | "P.M." => {
            let pm = span.hour % 24 >= 12;
            let (plain, dotted) = if pm { ("PM", "P.M.") } else { ("AM", "A.M.") };
            marker(pattern, plain, dotted)
        }
        "Y,YYY" => {
            let thousands = span.year / 1000;
            format!("{thousands},{:03}", span.year - thousands * 1000)
        }
        "YYYY" if (-9998..=9999).contains(&span.year) => year_digits(span.year, 4),
        "YYYY" => span.year.to_string(),
        "YYY" => year_digits(span.year, 3),
        "YY" => year_digits(span.year, 2),
        "Y" => year_digits(span.year, 1),
        "IYYY" => year_digits(iso_year(), 4),
        "IYY" => year_digits(iso_year(), 3),
        "IY" => year_digits(iso_year(), 2),
        "I" => year_digits(iso_year(), 1),
        "IW" => printf(iso_week(span.year, span.month, span.day), 2, fill),
        "IDDD" => {
            let first_monday = iso_week_monday(iso_year(), 1);
            printf(
                date2j(span.year, span.month, span.day) - first_monday + 1,
                3,
                fill,
            )
        }
        "CC" => {
            let century = span.year / 100;
            if (-99..=99).contains(&century) {
                signed(century, 2, fill)
            } else {
                century.to_string()
            }
        }
        "MM" => signed(span.month, 2, fill),
        "DDD" => printf(day_span, 3, fill),
        "DD" => printf(span.day, 2, fill),
        "WW" => printf((day_span - 1) / 7 + 1, 2, fill),
        "W" => ((span.day - 1) / 7 + 1).to_string(),
        "Q" if span.month == 0 => String::new(),
        "Q" => ((span.month - 1) / 3 + 1).to_string(),
        "J" => date2j(span.year, span.month, span.day).to_string(),
        "RM" if span.month == 0 && span.year == 0 => String::new(),
        "RM" => {
            // Whole years show as XII when positive and I when negative; -1 month
            // is XII (ROMAN runs from January).
            let month = match span.month {
                0 if span.year >= 0 => 12,
                0 => 1,
                m if m < 0 => 13 + m,
                m => m,
            };
            roman_month(month, pattern, fill)
        }
        "FX" => String::new(),
        _ => {
            return Err(PgError::new(
                codes::INVALID_DATETIME_FORMAT,
                "invalid format specification for an interval value",
            )
            .with_hint("Intervals are not tied to specific calendar dates."))
        }
    })
}

/// The Julian day of the Monday that starts ISO week `week` of `year` (isoweek2j).
fn iso_week_monday(year: i64, week: i64) -> i64 {
    let jan4 = date2j(year, 1, 4);
    // Julian day 0 was a Monday.
    (week - 1) * 7 + jan4 - jan4.rem_euclid(7)
}

/// date2isoweek and date2isoyear over an interval's fields, which need not form a date
/// (day 40 of month -2): PostgreSQL's arithmetic, whatever day it lands on.
fn iso_week_and_year(year: i64, month: i64, day: i64) -> (i64, i64) {
    let julian = date2j(year, month, day);
    let mut iso_year = year;
    let mut start = iso_week_monday(year, 1);
    if julian < start {
        iso_year -= 1;
        start = iso_week_monday(iso_year, 1);
    }
    let mut week = (julian - start) / 7 + 1;
    if week >= 52 {
        let next = iso_week_monday(iso_year + 1, 1);
        if julian >= next {
            iso_year += 1;
            week = (julian - next) / 7 + 1;
        }
    }
    (week, iso_year)
}

fn iso_week(year: i64, month: i64, day: i64) -> i64 {
    iso_week_and_year(year, month, day).0
}

fn iso_year(year: i64, month: i64, day: i64) -> i64 {
    iso_week_and_year(year, month, day).1
}
