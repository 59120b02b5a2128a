//! Date/time arithmetic and text formats, following PostgreSQL's datetime.c/timestamp.c
//! (DateStyle ISO, MDY; IntervalStyle postgres; output time zone UTC).
//!
//! Dates are days since 2000-01-01, timestamps microseconds since 2000-01-01 00:00:00.
//! `i32::MIN`/`i32::MAX` (dates) and `i64::MIN`/`i64::MAX` (timestamps) are -infinity/infinity,
//! as in PostgreSQL.

use crate::datestyle::DateOrder;
use crate::timezone::Zone;
use pgerror::{codes, PgError, PgResult};

pub const POSTGRES_EPOCH_JDATE: i64 = 2_451_545;
pub const UNIX_EPOCH_JDATE: i64 = 2_440_588;
pub const USECS_PER_SEC: i64 = 1_000_000;
pub const USECS_PER_MINUTE: i64 = 60 * USECS_PER_SEC;
pub const USECS_PER_HOUR: i64 = 60 * USECS_PER_MINUTE;
pub const USECS_PER_DAY: i64 = 24 * USECS_PER_HOUR;
pub const DAYS_PER_MONTH: i64 = 30;

pub const DATE_NOBEGIN: i32 = i32::MIN;
pub const DATE_NOEND: i32 = i32::MAX;
pub const TS_NOBEGIN: i64 = i64::MIN;
pub const TS_NOEND: i64 = i64::MAX;

/// First valid Julian day (4714-11-24 BC) and the first invalid ones.
const JULIAN_MIN: i64 = 0;
/// 5874898-01-01: first Julian day past the date range.
const DATE_END_JULIAN: i64 = 2_147_483_494;
/// 294277-01-01: first Julian day past the timestamp range.
const TIMESTAMP_END_JULIAN: i64 = 109_203_528;
pub const MIN_TIMESTAMP: i64 = -211_813_488_000_000_000;
pub const END_TIMESTAMP: i64 = 9_223_371_331_200_000_000;

/// PostgreSQL's date2j (proleptic Gregorian; year 0 = 1 BC).
pub fn date2j(y: i64, m: i64, d: i64) -> i64 {
    let (mut y, mut m) = (y, m);
    if m > 2 {
        m += 1;
        y += 4800;
    } else {
        m += 13;
        y += 4799;
    }
    let century = y.div_euclid(100);
    let mut julian = y * 365 - 32167;
    julian += y.div_euclid(4) - century + century.div_euclid(4);
    julian += 7834 * m / 256 + d;
    julian
}

/// PostgreSQL's j2date: Julian day → (year, month, day), year 0 = 1 BC.
pub fn j2date(jd: i64) -> (i64, u32, u32) {
    let mut julian = jd + 32044;
    let quad = julian.div_euclid(146_097);
    let extra = (julian - quad * 146_097) * 4 + 3;
    julian += 60 + quad * 3 + extra.div_euclid(146_097);
    let quad = julian.div_euclid(1461);
    julian -= quad * 1461;
    let mut y = julian * 4 / 1461;
    julian = if y != 0 {
        (julian + 305) % 365
    } else {
        (julian + 306) % 366
    } + 123;
    y += quad * 4;
    let year = y - 4800;
    let quad = julian * 2141 / 65536;
    let day = julian - 7834 * quad / 256;
    let month = (quad + 10) % 12 + 1;
    (year, month as u32, day as u32)
}

pub fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ => {
            if is_leap(y) {
                29
            } else {
                28
            }
        }
    }
}

/// Days since 2000-01-01 → (year, month, day) with year 0 = 1 BC.
pub fn date_to_ymd(days: i32) -> (i64, u32, u32) {
    j2date(days as i64 + POSTGRES_EPOCH_JDATE)
}

/// (year, month, day) → days since 2000-01-01; checks the date range.
pub fn ymd_to_date(y: i64, m: u32, d: u32) -> Option<i32> {
    let j = date2j(y, m as i64, d as i64);
    if !(JULIAN_MIN..DATE_END_JULIAN).contains(&j) {
        return None;
    }
    Some((j - POSTGRES_EPOCH_JDATE) as i32)
}

/// Microseconds rounded to `precision` fractional-second digits, halves away from zero
/// (PostgreSQL's AdjustTimestampForTypmod, AdjustTimeForTypmod and AdjustIntervalForTypmod
/// on values counted from its epoch); `None` keeps them all.
pub fn round_micros(us: i64, precision: Option<u8>) -> i64 {
    let precision = match precision {
        Some(p) if p < 6 => p,
        _ => return us,
    };
    let scale = 10i64.pow(6 - precision as u32);
    let half = scale / 2;
    if us >= 0 {
        us.saturating_add(half) / scale * scale
    } else {
        -((half - us) / scale * scale)
    }
}

/// A timestamp held to `timestamp(precision)`: infinities stay, a value rounded past the
/// last representable one is 22008.
pub fn round_timestamp(ts: i64, precision: Option<u8>) -> PgResult<i64> {
    if ts == TS_NOBEGIN || ts == TS_NOEND {
        return Ok(ts);
    }
    let rounded = round_micros(ts, precision);
    if !timestamp_in_range(rounded) {
        return Err(PgError::new(
            codes::DATETIME_FIELD_OVERFLOW,
            "timestamp out of range",
        ));
    }
    Ok(rounded)
}

/// Is a timestamp (µs since 2000) inside PostgreSQL's range (or ±infinity)?
pub fn timestamp_in_range(ts: i64) -> bool {
    ts == TS_NOBEGIN || ts == TS_NOEND || (MIN_TIMESTAMP..END_TIMESTAMP).contains(&ts)
}

pub fn date_in_range(d: i32) -> bool {
    if d == DATE_NOBEGIN || d == DATE_NOEND {
        return true;
    }
    let j = d as i64 + POSTGRES_EPOCH_JDATE;
    (JULIAN_MIN..DATE_END_JULIAN).contains(&j)
}

/// date → timestamp (midnight); errors 22008 "date out of range for timestamp".
pub fn date_to_timestamp(d: i32) -> PgResult<i64> {
    match d {
        DATE_NOBEGIN => Ok(TS_NOBEGIN),
        DATE_NOEND => Ok(TS_NOEND),
        _ => {
            let j = d as i64 + POSTGRES_EPOCH_JDATE;
            if !(JULIAN_MIN..TIMESTAMP_END_JULIAN).contains(&j) {
                return Err(PgError::new(
                    codes::DATETIME_FIELD_OVERFLOW,
                    "date out of range for timestamp",
                ));
            }
            Ok(d as i64 * USECS_PER_DAY)
        }
    }
}

/// timestamp → date (floor).
pub fn timestamp_to_date(ts: i64) -> i32 {
    match ts {
        TS_NOBEGIN => DATE_NOBEGIN,
        TS_NOEND => DATE_NOEND,
        _ => ts.div_euclid(USECS_PER_DAY) as i32,
    }
}

/// Appends ".ffffff" with trailing zeros trimmed (nothing when zero).
pub(crate) fn push_fraction(out: &mut String, usec: i64) {
    if usec != 0 {
        let s = format!("{:06}", usec);
        out.push('.');
        out.push_str(s.trim_end_matches('0'));
    }
}

/// date output in DateStyle ISO.
pub fn format_date(d: i32) -> String {
    crate::datestyle::format_date(d, crate::datestyle::Style::DEFAULT)
}

pub fn format_time(us: i64) -> String {
    let mut s = String::with_capacity(16);
    let h = us / USECS_PER_HOUR;
    let mi = (us / USECS_PER_MINUTE) % 60;
    let sec = (us / USECS_PER_SEC) % 60;
    s.push_str(&format!("{:02}:{:02}:{:02}", h, mi, sec));
    push_fraction(&mut s, us % USECS_PER_SEC);
    s
}

/// timestamp output in DateStyle ISO.
pub fn format_timestamp(ts: i64) -> String {
    crate::datestyle::format_timestamp(ts, crate::datestyle::Style::DEFAULT)
}

/// An interval's fields as PostgreSQL's interval2itm splits them, each truncated toward
/// zero (so each has its part's sign); hours may pass 24.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntervalFields {
    pub year: i64,
    pub month: i64,
    pub day: i64,
    pub hour: i64,
    pub minute: i64,
    pub second: i64,
    pub micros: i64,
}

impl IntervalFields {
    pub fn of(months: i32, days: i32, micros: i64) -> IntervalFields {
        IntervalFields {
            year: months as i64 / 12,
            month: months as i64 % 12,
            day: days as i64,
            hour: micros / USECS_PER_HOUR,
            minute: micros / USECS_PER_MINUTE % 60,
            second: micros / USECS_PER_SEC % 60,
            micros: micros % USECS_PER_SEC,
        }
    }
}

/// IntervalStyle postgres: "1 year 2 mons 3 days 04:05:06.5", "-1 days +02:00:00", "00:00:00".
pub fn format_interval(months: i32, days: i32, micros: i64) -> String {
    let mut s = String::with_capacity(32);
    let mut is_zero = true;
    let mut is_before = false;
    let year = months / 12;
    let mon = months % 12;
    let add = |s: &mut String, value: i64, unit: &str, is_zero: &mut bool, is_before: &mut bool| {
        if value == 0 {
            return;
        }
        if !*is_zero {
            s.push(' ');
        }
        if *is_before && value > 0 {
            s.push('+');
        }
        s.push_str(&format!(
            "{} {}{}",
            value,
            unit,
            if value != 1 { "s" } else { "" }
        ));
        *is_before = value < 0;
        *is_zero = false;
    };
    add(&mut s, year as i64, "year", &mut is_zero, &mut is_before);
    add(&mut s, mon as i64, "mon", &mut is_zero, &mut is_before);
    add(&mut s, days as i64, "day", &mut is_zero, &mut is_before);
    if is_zero || micros != 0 {
        let minus = micros < 0;
        let abs = micros.unsigned_abs();
        let h = abs / USECS_PER_HOUR as u64;
        let mi = (abs / USECS_PER_MINUTE as u64) % 60;
        let sec = (abs / USECS_PER_SEC as u64) % 60;
        let frac = (abs % USECS_PER_SEC as u64) as i64;
        if !is_zero {
            s.push(' ');
        }
        s.push_str(if minus {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        });
        s.push_str(&format!("{:02}:{:02}:{:02}", h, mi, sec));
        push_fraction(&mut s, frac);
    }
    s
}

// ---------------------------------------------------------------------------------------
// Parsing

fn bad_syntax(tyname: &str, input: &str) -> PgError {
    PgError::new(
        codes::INVALID_DATETIME_FORMAT,
        format!("invalid input syntax for type {tyname}: \"{input}\""),
    )
}

fn field_overflow(input: &str) -> PgError {
    PgError::new(
        codes::DATETIME_FIELD_OVERFLOW,
        format!("date/time field value out of range: \"{input}\""),
    )
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

fn month_from_name(w: &str) -> Option<u32> {
    let w = w.to_ascii_lowercase();
    if w.len() < 3 {
        return None;
    }
    MONTHS
        .iter()
        .position(|m| w.starts_with(m))
        .map(|i| i as u32 + 1)
        .filter(|_| {
            const FULL: [&str; 12] = [
                "january",
                "february",
                "march",
                "april",
                "may",
                "june",
                "july",
                "august",
                "september",
                "october",
                "november",
                "december",
            ];
            FULL.iter().any(|f| f.starts_with(&w)) || w == "sept"
        })
}

fn today_utc() -> i32 {
    now_timestamp().div_euclid(USECS_PER_DAY) as i32
}

/// Current time as µs since 2000-01-01 UTC. (From `SystemTime` directly: going through
/// `chrono::Utc::now()` computed a calendar date that is thrown away, ~150 instructions,
/// and every transaction reads the clock two or three times.)
pub fn now_timestamp() -> i64 {
    let unix_micros = match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(after) => after.as_micros() as i64,
        Err(before) => -(before.duration().as_micros() as i64),
    };
    unix_micros - (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY
}

/// Parsed pieces of a date/time literal.
#[derive(Default, Debug)]
struct DtParts {
    date: Option<(i64, u32, u32)>,
    time: Option<i64>,
    tz_secs: Option<i64>,
    /// A zone named in the literal ("Europe/Rome", "EST").
    zone: Option<Zone>,
    special: Option<Special>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Special {
    Infinity,
    NegInfinity,
    Epoch,
    Now,
    Today,
    Tomorrow,
    Yesterday,
}

/// Parses "HH:MM[:SS[.frac]]"; returns µs. `allow24` lets 24:00:00 through.
fn parse_time_of_day(s: &str) -> Option<i64> {
    let mut parts = s.splitn(3, ':');
    let h: i64 = parse_digits(parts.next()?)?;
    let m: i64 = parse_digits(parts.next()?)?;
    let mut usec = 0i64;
    let mut sec = 0i64;
    if let Some(sp) = parts.next() {
        let (si, frac) = match sp.find('.') {
            Some(i) => (&sp[..i], Some(&sp[i + 1..])),
            None => (sp, None),
        };
        sec = parse_digits(si)?;
        if let Some(f) = frac {
            usec = parse_fraction_us(f)?;
        }
    }
    if h > 24 || m > 59 || sec > 60 {
        return Some(-1);
    }
    let total = h * USECS_PER_HOUR + m * USECS_PER_MINUTE + sec * USECS_PER_SEC + usec;
    if total > USECS_PER_DAY {
        return Some(-1);
    }
    Some(total)
}

fn parse_digits(s: &str) -> Option<i64> {
    if s.is_empty() || s.len() > 18 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// ".123456789" digits → µs, rounded half up at the 7th digit.
fn parse_fraction_us(f: &str) -> Option<i64> {
    if !f.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if f.is_empty() {
        return Some(0);
    }
    let mut us = 0i64;
    for (i, b) in f.bytes().enumerate().take(6) {
        us += (b - b'0') as i64 * 10i64.pow(5 - i as u32);
    }
    if f.len() > 6 && f.as_bytes()[6] >= b'5' {
        us += 1;
    }
    Some(us)
}

/// "+02", "+02:00", "+0200", "-05:30", "Z", "UTC", "GMT" → seconds east of UTC.
fn parse_tz(s: &str) -> Option<i64> {
    let l = s.to_ascii_lowercase();
    if l == "z" || l == "utc" || l == "gmt" || l == "zulu" || l == "ut" {
        return Some(0);
    }
    let (sign, rest) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => return None,
    };
    let (h, m, sec) = if let Some((h, rest)) = rest.split_once(':') {
        let (m, sec) = match rest.split_once(':') {
            Some((m, s)) => (parse_digits(m)?, parse_digits(s)?),
            None => (parse_digits(rest)?, 0),
        };
        (parse_digits(h)?, m, sec)
    } else {
        match rest.len() {
            1 | 2 => (parse_digits(rest)?, 0, 0),
            3 | 4 => {
                let (h, m) = rest.split_at(rest.len() - 2);
                (parse_digits(h)?, parse_digits(m)?, 0)
            }
            6 => (
                parse_digits(&rest[..2])?,
                parse_digits(&rest[2..4])?,
                parse_digits(&rest[4..])?,
            ),
            _ => return None,
        }
    };
    if h > 15 + 2 || m > 59 || sec > 59 {
        return None;
    }
    Some(sign * (h * 3600 + m * 60 + sec))
}

/// Parses the date part: Y-M-D, D-M-Y or M-D-Y by DateStyle's `order` (with `-`, `/` or
/// `.`), YYYYMMDD, "D-Mon-Y", "Mon D, YYYY", "D Mon YYYY".
fn parse_date_token(tok: &str, order: DateOrder) -> Option<(i64, u32, u32)> {
    let b = tok.as_bytes();
    if let Some(sep) = ['-', '/', '.'].into_iter().find(|c| tok.contains(*c)) {
        let p: Vec<&str> = tok.split(sep).collect();
        if p.len() != 3 || !b[0].is_ascii_digit() {
            return None;
        }
        if let Some(mn) = month_from_name(p[1]).filter(|_| sep == '-') {
            // 22-Nov-2026; YMD reads 24-Jan-03 as 2024, unless the last field is the year.
            let (y, d) = match order {
                DateOrder::Ymd if p[2].len() <= 2 => (p[0], p[2]),
                _ => (p[2], p[0]),
            };
            return Some((year_digits(y)?, mn, parse_digits(d)? as u32));
        }
        return ordered_date(&p, order);
    }
    if (tok.len() == 8 || tok.len() == 6) && b.iter().all(|c| c.is_ascii_digit()) {
        if tok.len() == 8 {
            return Some((
                parse_digits(&tok[..4])?,
                parse_digits(&tok[4..6])? as u32,
                parse_digits(&tok[6..])? as u32,
            ));
        }
        return Some((
            year_digits(&tok[..2])?,
            parse_digits(&tok[2..4])? as u32,
            parse_digits(&tok[4..])? as u32,
        ));
    }
    None
}

/// Three numeric date fields (`01/02/03`, `28.11.2026`) in DateStyle's order; a first
/// field of three or more digits is the year whatever the order.
fn ordered_date(p: &[&str], order: DateOrder) -> Option<(i64, u32, u32)> {
    let (y, m, d) = match order {
        _ if p[0].len() >= 3 => (p[0], p[1], p[2]),
        DateOrder::Ymd => (p[0], p[1], p[2]),
        DateOrder::Dmy => (p[2], p[1], p[0]),
        DateOrder::Mdy => (p[2], p[0], p[1]),
    };
    Some((
        year_digits(y)?,
        parse_digits(m)? as u32,
        parse_digits(d)? as u32,
    ))
}

/// A year's digits; one or two of them are the year nearest 2020 (70 is 1970, 69 is 2069).
fn year_digits(y: &str) -> Option<i64> {
    let year = parse_digits(y)?;
    Some(match y.len() {
        ..=2 if year < 70 => year + 2000,
        ..=2 => year + 1900,
        _ => year,
    })
}

fn parse_datetime(
    input: &str,
    tyname: &str,
    want_time: bool,
    order: DateOrder,
) -> PgResult<DtParts> {
    let s = input.trim();
    if !s.is_ascii() {
        return Err(bad_syntax(tyname, input));
    }
    let mut p = DtParts::default();
    let lower = s.to_ascii_lowercase();
    match lower.as_str() {
        "infinity" | "+infinity" => p.special = Some(Special::Infinity),
        "-infinity" => p.special = Some(Special::NegInfinity),
        "epoch" => p.special = Some(Special::Epoch),
        "now" => p.special = Some(Special::Now),
        "today" => p.special = Some(Special::Today),
        "tomorrow" => p.special = Some(Special::Tomorrow),
        "yesterday" => p.special = Some(Special::Yesterday),
        _ => {}
    }
    if p.special.is_some() {
        return Ok(p);
    }
    // Tokenise: split date and time on 'T' or whitespace; keep zone suffixes.
    let mut toks: Vec<String> = Vec::new();
    for w in s.split_whitespace() {
        let w = w.trim_end_matches(',');
        // ISO "2026-11-22T02:15:55"
        if let Some(i) = w.find(['T', 't']) {
            let (a, b) = w.split_at(i);
            if !a.is_empty()
                && a.as_bytes()[0].is_ascii_digit()
                && b.len() > 1
                && b.as_bytes()[1].is_ascii_digit()
            {
                toks.push(a.to_string());
                toks.push(b[1..].to_string());
                continue;
            }
        }
        toks.push(w.to_string());
    }
    let mut bc = false;
    let mut pm: Option<bool> = None;
    let mut i = 0;
    let mut month_name: Option<u32> = None;
    let mut loose_nums: Vec<i64> = Vec::new();
    while i < toks.len() {
        let t = toks[i].as_str();
        let tl = t.to_ascii_lowercase();
        i += 1;
        if tl == "bc" {
            bc = true;
            continue;
        }
        if tl.len() > 2 && tl.starts_with("bc+") && p.tz_secs.is_none() {
            // "... 12:59:07 BC-05:30"
            if let Some(z) = parse_tz(&t[2..]) {
                bc = true;
                p.tz_secs = Some(z);
                continue;
            }
        }
        if tl == "ad" {
            continue;
        }
        if tl == "am" || tl == "pm" {
            pm = Some(tl == "pm");
            continue;
        }
        if tl == "allballs" {
            p.time = Some(0);
            continue;
        }
        if p.date.is_none() && month_name.is_none() {
            if let Some(d) = parse_date_token(t, order) {
                p.date = Some(d);
                continue;
            }
        }
        if let Some(mn) = month_from_name(t) {
            month_name = Some(mn);
            continue;
        }
        if t.contains(':') && t.as_bytes()[0].is_ascii_digit() && p.time.is_none() {
            // time, possibly with a zone glued on: 02:15:55+02, 02:15:55-05:30, 02:15:55Z
            let cut = t.find(['+', '-', 'z', 'Z']);
            let (tpart, zpart) = match cut {
                Some(c) => (&t[..c], Some(&t[c..])),
                None => (t, None),
            };
            let us = parse_time_of_day(tpart).ok_or_else(|| bad_syntax(tyname, input))?;
            if us < 0 {
                return Err(field_overflow(input));
            }
            p.time = Some(us);
            if let Some(z) = zpart {
                p.tz_secs = Some(parse_tz(z).ok_or_else(|| bad_syntax(tyname, input))?);
            }
            continue;
        }
        if p.time.is_some() && p.tz_secs.is_none() {
            if let Some(z) = parse_tz(t) {
                p.tz_secs = Some(z);
                continue;
            }
        }
        if let Some(n) = parse_digits(t) {
            loose_nums.push(n);
            continue;
        }
        if p.tz_secs.is_none() && p.zone.is_none() {
            if let Some(z) = parse_tz(t) {
                p.tz_secs = Some(z);
                continue;
            }
            if let Some(z) = Zone::from_literal_token(t)? {
                p.zone = Some(z);
                continue;
            }
        }
        return Err(bad_syntax(tyname, input));
    }
    if let Some(mn) = month_name {
        // "Nov 22, 2026" / "22 Nov 2026"
        if p.date.is_some() || loose_nums.len() != 2 {
            return Err(bad_syntax(tyname, input));
        }
        let (a, b) = (loose_nums[0], loose_nums[1]);
        let (d, y) = if a > 31 { (b, a) } else { (a, b) };
        p.date = Some((y, mn, d as u32));
    } else if !loose_nums.is_empty() {
        return Err(bad_syntax(tyname, input));
    }
    let Some((mut y, m, d)) = p.date else {
        return Err(bad_syntax(tyname, input));
    };
    if y > 10_000_000 {
        return Err(field_overflow(input));
    }
    if bc {
        if y <= 0 {
            return Err(bad_syntax(tyname, input));
        }
        y = 1 - y;
    } else if y == 0 {
        return Err(field_overflow(input));
    }
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return Err(field_overflow(input));
    }
    p.date = Some((y, m, d));
    if let (Some(isp), Some(t)) = (pm, p.time) {
        let h = t / USECS_PER_HOUR;
        if h > 12 {
            return Err(field_overflow(input));
        }
        let t = if isp && h < 12 {
            t + 12 * USECS_PER_HOUR
        } else if !isp && h == 12 {
            t - 12 * USECS_PER_HOUR
        } else {
            t
        };
        p.time = Some(t);
    }
    let _ = want_time;
    Ok(p)
}

/// date_in, numeric fields read in DateStyle's `order`.
pub fn parse_date(input: &str, order: DateOrder) -> PgResult<i32> {
    let p = parse_datetime(input, "date", false, order)?;
    if let Some(sp) = p.special {
        return Ok(match sp {
            Special::Infinity => DATE_NOEND,
            Special::NegInfinity => DATE_NOBEGIN,
            Special::Epoch => (UNIX_EPOCH_JDATE - POSTGRES_EPOCH_JDATE) as i32,
            Special::Now | Special::Today => today_utc(),
            Special::Tomorrow => today_utc() + 1,
            Special::Yesterday => today_utc() - 1,
        });
    }
    let (y, m, d) = p.date.expect("parsed date");
    ymd_to_date(y, m, d).ok_or_else(|| {
        PgError::new(
            codes::DATETIME_FIELD_OVERFLOW,
            format!("date out of range: \"{input}\""),
        )
    })
}

/// timestamp_in: a zone in the input is ignored (as PG); numeric date fields are read in
/// DateStyle's `order`.
pub fn parse_timestamp(input: &str, order: DateOrder) -> PgResult<i64> {
    parse_timestamp_in(input, None, order)
}

/// timestamptz_in: the input's offset or zone, else `zone` (the session's), says which
/// instant the wall-clock time is; the session's DateStyle orders the date's fields.
pub fn parse_timestamptz(input: &str, zone: &Zone) -> PgResult<i64> {
    parse_timestamp_in(input, Some(zone), zone.style().order)
}

fn parse_timestamp_in(input: &str, zone: Option<&Zone>, order: DateOrder) -> PgResult<i64> {
    let tyname = if zone.is_some() {
        "timestamp with time zone"
    } else {
        "timestamp"
    };
    let p = parse_datetime(input, tyname, true, order)?;
    if let Some(sp) = p.special {
        // today, tomorrow and yesterday are midnights of the session's zone
        let now = now_timestamp();
        let midnight = |days: i64| {
            let today = zone
                .map_or(now, |z| z.to_local(now))
                .div_euclid(USECS_PER_DAY);
            let local = (today + days) * USECS_PER_DAY;
            zone.map_or(local, |z| z.to_utc(local))
        };
        return Ok(match sp {
            Special::Infinity => TS_NOEND,
            Special::NegInfinity => TS_NOBEGIN,
            Special::Epoch => (UNIX_EPOCH_JDATE - POSTGRES_EPOCH_JDATE) * USECS_PER_DAY,
            Special::Now => now,
            Special::Today => midnight(0),
            Special::Tomorrow => midnight(1),
            Special::Yesterday => midnight(-1),
        });
    }
    let (y, m, d) = p.date.expect("parsed date");
    let j = date2j(y, m as i64, d as i64);
    let out_of_range = || {
        PgError::new(
            codes::DATETIME_FIELD_OVERFLOW,
            format!("timestamp out of range: \"{input}\""),
        )
    };
    if !(JULIAN_MIN..TIMESTAMP_END_JULIAN).contains(&j) {
        return Err(out_of_range());
    }
    let mut ts = (j - POSTGRES_EPOCH_JDATE) * USECS_PER_DAY + p.time.unwrap_or(0);
    if let Some(session_zone) = zone {
        ts = match (p.tz_secs, &p.zone) {
            (Some(z), _) => ts - z * USECS_PER_SEC,
            (None, Some(named)) => named.to_utc(ts),
            (None, None) => session_zone.to_utc(ts),
        };
    }
    if !(MIN_TIMESTAMP..END_TIMESTAMP).contains(&ts) {
        return Err(out_of_range());
    }
    Ok(ts)
}

/// time_in: "HH:MM[:SS[.frac]]" (a date or zone in front/behind is ignored as PG does).
pub fn parse_time(input: &str) -> PgResult<i64> {
    let s = input.trim();
    if !s.is_ascii() {
        return Err(bad_syntax("time without time zone", input));
    }
    let lower = s.to_ascii_lowercase();
    if lower == "allballs" {
        return Ok(0);
    }
    let tok = s
        .split(|c: char| c.is_whitespace() || c == 'T')
        .find(|t| t.contains(':'))
        .ok_or_else(|| bad_syntax("time without time zone", input))?;
    let cut = tok.find(['+', '-', 'z', 'Z']).unwrap_or(tok.len());
    let us = parse_time_of_day(&tok[..cut])
        .ok_or_else(|| bad_syntax("time without time zone", input))?;
    if us < 0 {
        return Err(field_overflow(input));
    }
    let mut us = us;
    if lower.ends_with("pm") && us < 12 * USECS_PER_HOUR {
        us += 12 * USECS_PER_HOUR;
    } else if lower.ends_with("am") && (12 * USECS_PER_HOUR..13 * USECS_PER_HOUR).contains(&us) {
        us -= 12 * USECS_PER_HOUR;
    }
    Ok(us)
}

/// Interval field bits (DTK_M(...) in PostgreSQL): each may be given once.
mod imask {
    pub const YEAR: u32 = 1;
    pub const MONTH: u32 = 2;
    pub const DAY: u32 = 4;
    pub const HOUR: u32 = 8;
    pub const MINUTE: u32 = 16;
    pub const SECOND: u32 = 32;
    pub const MILLISECOND: u32 = 64;
    pub const MICROSECOND: u32 = 128;
    pub const WEEK: u32 = 256;
    pub const DECADE: u32 = 512;
    pub const CENTURY: u32 = 1024;
    pub const MILLENNIUM: u32 = 2048;
    pub const ALL_SECS: u32 = SECOND | MILLISECOND | MICROSECOND;
    pub const TIME: u32 = HOUR | MINUTE | ALL_SECS;
}

/// Accumulator mirroring PostgreSQL 15's pg_itm_in and its Adjust* helpers.
struct ItmIn {
    months: i32,
    days: i32,
    usec: i64,
}

impl ItmIn {
    fn add_usec(&mut self, u: i64) -> Option<()> {
        self.usec = self.usec.checked_add(u)?;
        Some(())
    }
    /// AdjustFractMicroseconds
    fn fract_usec(&mut self, frac: f64, scale: i64) -> Option<()> {
        if frac == 0.0 {
            return Some(());
        }
        let f = frac * scale as f64;
        let mut u = f as i64;
        u += (f - u as f64).round_ties_even() as i64;
        self.add_usec(u)
    }
    /// AdjustMicroseconds
    fn usec_units(&mut self, val: i64, frac: f64, scale: i64) -> Option<()> {
        self.add_usec(val.checked_mul(scale)?)?;
        self.fract_usec(frac, scale)
    }
    /// AdjustFractDays
    fn fract_days(&mut self, frac: f64, scale: i32) -> Option<()> {
        let f = frac * scale as f64;
        let extra = f as i32;
        self.days = self.days.checked_add(extra)?;
        self.fract_usec(f - extra as f64, USECS_PER_DAY)
    }
    fn add_days(&mut self, val: i64, scale: i64) -> Option<()> {
        self.days = self
            .days
            .checked_add(i32::try_from(val.checked_mul(scale)?).ok()?)?;
        Some(())
    }
    fn add_months(&mut self, val: i64, scale: i64) -> Option<()> {
        self.months = self
            .months
            .checked_add(i32::try_from(val.checked_mul(scale)?).ok()?)?;
        Some(())
    }
    /// AdjustFractYears (scale in years)
    fn fract_years(&mut self, frac: f64, scale: i64) -> Option<()> {
        let extra = (frac * scale as f64 * 12.0).round_ties_even() as i32;
        self.months = self.months.checked_add(extra)?;
        Some(())
    }
}

/// DecodeInterval for the postgres/verbose syntax: "1 year 2 mons -3 days 04:05:06", "@ 1 day ago".
fn parse_interval_verbose(input: &str, body: &str) -> PgResult<(i32, i32, i64)> {
    let err = || bad_syntax("interval", input);
    let overflow = || {
        PgError::new(
            codes::DATETIME_FIELD_OVERFLOW,
            format!("interval field value out of range: \"{input}\""),
        )
    };
    let toks: Vec<String> = body
        .split_whitespace()
        .map(|t| t.to_ascii_lowercase())
        .collect();
    let mut itm = ItmIn {
        months: 0,
        days: 0,
        usec: 0,
    };
    let mut fmask = 0u32;
    let mut ago = false;
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].as_str();
        i += 1;
        if t == "ago" {
            if i != toks.len() || fmask == 0 {
                return Err(err());
            }
            ago = true;
            continue;
        }
        if t.contains(':') {
            let (neg, tb) = match t.as_bytes()[0] {
                b'-' => (true, &t[1..]),
                b'+' => (false, &t[1..]),
                _ => (false, t),
            };
            let parts: Vec<&str> = tb.split(':').collect();
            if parts.len() < 2 || parts.len() > 3 {
                return Err(err());
            }
            let h = parse_digits(parts[0]).ok_or_else(err)?;
            let m = parse_digits(parts[1]).ok_or_else(err)?;
            let (sec, us) = if parts.len() == 3 {
                let (si, frac) = match parts[2].find('.') {
                    Some(k) => (&parts[2][..k], &parts[2][k + 1..]),
                    None => (parts[2], ""),
                };
                (
                    parse_digits(si).ok_or_else(err)?,
                    parse_fraction_us(frac).ok_or_else(err)?,
                )
            } else {
                (0, 0)
            };
            if m > 59 || sec > 59 {
                return Err(overflow());
            }
            if fmask & imask::TIME != 0 {
                return Err(err());
            }
            fmask |= imask::TIME;
            let total = h
                .checked_mul(USECS_PER_HOUR)
                .and_then(|x| x.checked_add(m * USECS_PER_MINUTE + sec * USECS_PER_SEC + us))
                .ok_or_else(overflow)?;
            itm.add_usec(if neg { -total } else { total })
                .ok_or_else(overflow)?;
            continue;
        }
        // a number, optionally with the unit glued on ("2days")
        let split = t
            .char_indices()
            .find(|(k, c)| {
                !(c.is_ascii_digit() || *c == '.' || ((*c == '-' || *c == '+') && *k == 0))
            })
            .map(|(k, _)| k)
            .unwrap_or(t.len());
        let (num, glued) = t.split_at(split);
        let neg = num.starts_with('-');
        let unsigned = num.trim_start_matches(['-', '+']);
        if unsigned.is_empty() || unsigned == "." || unsigned.matches('.').count() > 1 {
            return Err(err());
        }
        let (ip, fp) = match unsigned.find('.') {
            Some(k) => (&unsigned[..k], &unsigned[k..]),
            None => (unsigned, ""),
        };
        let mut val: i64 = if ip.is_empty() {
            0
        } else {
            parse_digits(ip).ok_or_else(overflow)?
        };
        let mut fval: f64 = if fp.len() > 1 {
            fp.parse().map_err(|_| err())?
        } else {
            0.0
        };
        if neg {
            val = -val;
            fval = -fval;
        }
        let unit = if !glued.is_empty() {
            glued.to_string()
        } else if i < toks.len()
            && toks[i].starts_with(|c: char| c.is_ascii_alphabetic())
            && toks[i] != "ago"
        {
            i += 1;
            toks[i - 1].clone()
        } else if i < toks.len() && toks[i].contains(':') {
            "day".to_string() // a bare number before a time is days: "1 2:03"
        } else if i >= toks.len() || toks[i] == "ago" {
            "second".to_string() // a trailing bare number is seconds
        } else {
            return Err(err());
        };
        let (tmask, ok) = match unit.as_str() {
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "microsecon" => {
                (imask::MICROSECOND, itm.usec_units(val, fval, 1))
            }
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "millisecon"
            | "mseconds" => (imask::MILLISECOND, itm.usec_units(val, fval, 1000)),
            "second" | "seconds" | "s" | "sec" | "secs" => (
                if fval == 0.0 {
                    imask::SECOND
                } else {
                    imask::ALL_SECS
                },
                itm.usec_units(val, fval, USECS_PER_SEC),
            ),
            "minute" | "minutes" | "m" | "min" | "mins" => {
                (imask::MINUTE, itm.usec_units(val, fval, USECS_PER_MINUTE))
            }
            "hour" | "hours" | "h" | "hr" | "hrs" => {
                (imask::HOUR, itm.usec_units(val, fval, USECS_PER_HOUR))
            }
            "day" | "days" | "d" => (
                imask::DAY,
                itm.add_days(val, 1)
                    .and_then(|_| itm.fract_usec(fval, USECS_PER_DAY)),
            ),
            "week" | "weeks" | "w" => (
                imask::WEEK,
                itm.add_days(val, 7).and_then(|_| itm.fract_days(fval, 7)),
            ),
            "month" | "months" | "mon" | "mons" => (
                imask::MONTH,
                itm.add_months(val, 1)
                    .and_then(|_| itm.fract_days(fval, DAYS_PER_MONTH as i32)),
            ),
            "year" | "years" | "y" | "yr" | "yrs" => (
                imask::YEAR,
                itm.add_months(val, 12)
                    .and_then(|_| itm.fract_years(fval, 1)),
            ),
            "decade" | "decades" | "dec" | "decs" => (
                imask::DECADE,
                itm.add_months(val, 120)
                    .and_then(|_| itm.fract_years(fval, 10)),
            ),
            "century" | "centuries" | "c" | "cent" => (
                imask::CENTURY,
                itm.add_months(val, 1200)
                    .and_then(|_| itm.fract_years(fval, 100)),
            ),
            "millennium" | "millennia" | "millenniums" | "mil" | "mils" => (
                imask::MILLENNIUM,
                itm.add_months(val, 12000)
                    .and_then(|_| itm.fract_years(fval, 1000)),
            ),
            _ => return Err(err()),
        };
        if fmask & tmask != 0 {
            return Err(err());
        }
        fmask |= tmask;
        ok.ok_or_else(overflow)?;
    }
    if fmask == 0 {
        return Err(err());
    }
    if ago {
        return Ok((
            itm.months.checked_neg().ok_or_else(overflow)?,
            itm.days.checked_neg().ok_or_else(overflow)?,
            itm.usec.checked_neg().ok_or_else(overflow)?,
        ));
    }
    Ok((itm.months, itm.days, itm.usec))
}

/// interval_in (postgres/ SQL-ish verbose syntax, "@ ... ago", "HH:MM:SS", ISO 8601 "P1Y2M3DT4H5M6S").
/// The SQL-standard year-month form `[+-]Y-M` (the sign applies to both): its months,
/// None inside if they overflow; None if `s` is not of that form.
fn sql_standard_year_month(s: &str) -> Option<Option<i32>> {
    let (negative, body) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (y, m) = body.split_once('-')?;
    let (y, m) = (parse_digits(y)?, parse_digits(m)?);
    if m > 11 {
        return None;
    }
    let months = y.checked_mul(12).and_then(|v| v.checked_add(m));
    Some(
        months
            .map(|v| if negative { -v } else { v })
            .and_then(|v| i32::try_from(v).ok()),
    )
}

pub fn parse_interval(input: &str) -> PgResult<(i32, i32, i64)> {
    let err = || bad_syntax("interval", input);
    let overflow = || {
        PgError::new(
            codes::DATETIME_FIELD_OVERFLOW,
            format!("interval field value out of range: \"{input}\""),
        )
    };
    let s = input.trim();
    if s.is_empty() || !s.is_ascii() {
        return Err(err());
    }
    if let Some(months) = sql_standard_year_month(s) {
        return Ok((months.ok_or_else(overflow)?, 0, 0));
    }
    let mut acc = [0.0f64; 3]; // months, days, micros
    fn add(acc: &mut [f64; 3], unit: &str, v: f64) -> bool {
        match unit {
            "millennium" | "millennia" | "millenniums" | "mil" | "mils" => acc[0] += v * 12000.0,
            "century" | "centuries" | "c" | "cent" => acc[0] += v * 1200.0,
            "decade" | "decades" | "dec" | "decs" => acc[0] += v * 120.0,
            "year" | "years" | "y" | "yr" | "yrs" => acc[0] += v * 12.0,
            "month" | "months" | "mon" | "mons" => acc[0] += v,
            "week" | "weeks" | "w" => acc[1] += v * 7.0,
            "day" | "days" | "d" => acc[1] += v,
            "hour" | "hours" | "h" | "hr" | "hrs" => acc[2] += v * USECS_PER_HOUR as f64,
            "minute" | "minutes" | "m" | "min" | "mins" => acc[2] += v * USECS_PER_MINUTE as f64,
            "second" | "seconds" | "s" | "sec" | "secs" => acc[2] += v * USECS_PER_SEC as f64,
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => acc[2] += v * 1000.0,
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" => acc[2] += v,
            _ => return false,
        }
        true
    }
    let body = s.strip_prefix('@').unwrap_or(s).trim();
    if let Some(iso) = body.strip_prefix(['P', 'p']) {
        // ISO 8601 format with designators
        let mut in_time = false;
        let mut num = String::new();
        for c in iso.chars() {
            match c {
                'T' | 't' => {
                    if !num.is_empty() {
                        return Err(err());
                    }
                    in_time = true
                }
                '0'..='9' | '.' | '-' | '+' => num.push(c),
                _ => {
                    let v: f64 = num.parse().map_err(|_| err())?;
                    num.clear();
                    let unit = match (c.to_ascii_uppercase(), in_time) {
                        ('Y', false) => "year",
                        ('M', false) => "month",
                        ('W', false) => "week",
                        ('D', false) => "day",
                        ('H', true) => "hour",
                        ('M', true) => "minute",
                        ('S', true) => "second",
                        _ => return Err(err()),
                    };
                    add(&mut acc, unit, v);
                }
            }
        }
        if !num.is_empty() {
            return Err(err());
        }
    } else {
        return parse_interval_verbose(input, body);
    }
    // spill fractions as PostgreSQL does (months → days of 30, days → 24h)
    let [months, days, micros] = acc;
    let whole_months = months.trunc();
    let frac_days = (months - whole_months) * DAYS_PER_MONTH as f64;
    let days_total = days + frac_days;
    let whole_days = days_total.trunc();
    let frac_us = (days_total - whole_days) * USECS_PER_DAY as f64;
    let us = (micros + frac_us).round();
    if whole_months.abs() > i32::MAX as f64
        || whole_days.abs() > i32::MAX as f64
        || us.abs() > i64::MAX as f64
    {
        return Err(overflow());
    }
    Ok((whole_months as i32, whole_days as i32, us as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_rounds_halves_away_from_the_2000_epoch() {
        assert_eq!(round_micros(1_500_000, Some(0)), 2_000_000);
        assert_eq!(round_micros(-1_500_000, Some(0)), -2_000_000);
        assert_eq!(round_micros(-1_499_999, Some(0)), -1_000_000);
        assert_eq!(round_micros(123_456, Some(3)), 123_000);
        assert_eq!(round_micros(123_456, Some(6)), 123_456);
        assert_eq!(round_micros(123_456, None), 123_456);
        assert_eq!(round_timestamp(TS_NOEND, Some(0)), Ok(TS_NOEND));
        assert!(round_timestamp(END_TIMESTAMP - 1, Some(0)).is_err());
    }

    #[test]
    fn julian_roundtrip() {
        for j in [0i64, 1, 2451545, 2440588, 1721426, 5373484, 109203527] {
            let (y, m, d) = j2date(j);
            assert_eq!(date2j(y, m as i64, d as i64), j, "{j} -> {y}-{m}-{d}");
        }
        assert_eq!(date2j(2000, 1, 1), POSTGRES_EPOCH_JDATE);
        assert_eq!(j2date(0), (-4713, 11, 24));
    }

    #[test]
    fn now_is_the_calendar_time_since_2000() {
        let before = chrono::Utc::now();
        let now = now_timestamp();
        let after = chrono::Utc::now();
        let epoch_2000 = chrono::DateTime::parse_from_rfc3339("2000-01-01T00:00:00Z").unwrap();
        let micros = |t: chrono::DateTime<chrono::Utc>| {
            (t - epoch_2000.with_timezone(&chrono::Utc))
                .num_microseconds()
                .unwrap()
        };
        assert!(
            (micros(before)..=micros(after)).contains(&now),
            "{} not in [{}, {}]",
            now,
            micros(before),
            micros(after)
        );
        let today = (before.date_naive() - epoch_2000.date_naive()).num_days() as i32;
        assert!(
            (today..=today + 1).contains(&today_utc()),
            "today {} vs {}",
            today_utc(),
            today
        );
    }
}
