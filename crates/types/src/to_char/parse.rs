//! to_timestamp(text, text) and to_date(text, text): reading a date/time by a to_char
//! template, as formatting.c's DCH_from_char and do_to_timestamp do in PostgreSQL 15 —
//! including their leniencies (a separator in the template matches any one separator or
//! none, fields without FM take a fixed number of digits unless a non-digit follows,
//! two-digit years are moved toward 2020, fields the input does not reach keep their
//! defaults: year 1 BC, January, day 1, midnight).

use super::{nodes, Node, DAYS, MONTHS};
use crate::datetime::{date2j, days_in_month, j2date, POSTGRES_EPOCH_JDATE, USECS_PER_DAY};
use crate::datetime::{timestamp_in_range, ymd_to_date, USECS_PER_SEC};
use crate::timezone::Zone;
use pgerror::{codes, PgError, PgResult};

/// One template element as the reader sees it.
enum Item {
    Field {
        pattern: &'static str,
        fill: bool,
        ordinal: bool,
    },
    /// A blank in the template (outside quotes).
    Space,
    /// Punctuation in the template (outside quotes).
    Separator,
    /// Any other literal character: it stands for one input character.
    Char(char),
}

/// Which calendar a field belongs to: the two cannot be mixed.
#[derive(Clone, Copy, PartialEq)]
enum Calendar {
    Gregorian,
    IsoWeek,
}

/// What the fields said (formatting.c's TmFromChar); 0 is "not given".
#[derive(Default)]
struct Fields {
    calendar: Option<Calendar>,
    hh: i64,
    pm: i64,
    twelve_hour: bool,
    mi: i64,
    ss: i64,
    ssss: i64,
    d: i64,
    dd: i64,
    ddd: i64,
    mm: i64,
    ms: i64,
    year: i64,
    bc: i64,
    ww: i64,
    w: i64,
    cc: i64,
    j: i64,
    us: i64,
    year_digits: i64,
    tz_sign: i64,
    tzh: i64,
    tzm: i64,
    ff: i64,
}

/// A wall-clock time read from text, and the offset it gave (TZH/TZM), if any.
pub struct Parsed {
    year: i64,
    month: i64,
    day: i64,
    /// µs since midnight
    time: i64,
    east_secs: Option<i64>,
    fraction_digits: i64,
}

/// to_timestamp(text, text): the time read, in `zone` unless the text gave an offset.
pub fn to_timestamp(input: &str, template: &str, zone: &Zone) -> PgResult<i64> {
    let p = read(input, template)?;
    let out_of_range = || PgError::new(codes::DATETIME_FIELD_OVERFLOW, "timestamp out of range");
    let j = date2j(p.year, p.month, p.day);
    let local = (j - POSTGRES_EPOCH_JDATE)
        .checked_mul(USECS_PER_DAY)
        .and_then(|t| t.checked_add(p.time))
        .filter(|_| j >= 0)
        .ok_or_else(out_of_range)?;
    let utc = match p.east_secs {
        Some(east) => local - east * USECS_PER_SEC,
        None => zone.to_utc(local),
    };
    let utc = round_fraction(utc, p.fraction_digits);
    if !timestamp_in_range(utc) {
        return Err(out_of_range());
    }
    Ok(utc)
}

/// to_date(text, text): days since 2000-01-01.
pub fn to_date(input: &str, template: &str) -> PgResult<i32> {
    let p = read(input, template)?;
    u32::try_from(p.month)
        .ok()
        .zip(u32::try_from(p.day).ok())
        .and_then(|(m, d)| ymd_to_date(p.year, m, d))
        .ok_or_else(|| {
            PgError::new(
                codes::DATETIME_FIELD_OVERFLOW,
                format!("date out of range: \"{input}\""),
            )
        })
}

/// FF1…FF6 round the result to that many fractional digits (AdjustTimestampForTypmod).
fn round_fraction(ts: i64, digits: i64) -> i64 {
    if !(1..6).contains(&digits) {
        return ts;
    }
    let scale = 10_i64.pow(6 - digits as u32);
    let half = scale / 2;
    if ts >= 0 {
        (ts + half) / scale * scale
    } else {
        -((-ts + half) / scale * scale)
    }
}

fn items(template: &str) -> Vec<Item> {
    let mut items = Vec::new();
    for node in nodes(template) {
        match node {
            Node::Field {
                pattern,
                fill,
                ordinal,
            } => items.push(Item::Field {
                pattern,
                fill,
                ordinal: ordinal.is_some(),
            }),
            Node::Literal { text, quoted } => items.extend(text.chars().map(|c| match c {
                _ if quoted => Item::Char(c),
                _ if is_separator(c) => Item::Separator,
                _ if is_space(c) => Item::Space,
                _ => Item::Char(c),
            })),
        }
    }
    items
}

/// formatting.c's is_separator_char: ASCII punctuation.
fn is_separator(c: char) -> bool {
    c.is_ascii_graphic() && !c.is_ascii_alphanumeric()
}

/// C's isspace.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// Whether a pattern reads digits (a digit after a digit field makes it fixed-width).
fn reads_digits(pattern: &str) -> bool {
    !matches!(
        pattern.to_ascii_uppercase().as_str(),
        "A.D."
            | "A.M."
            | "AD"
            | "AM"
            | "B.C."
            | "BC"
            | "DAY"
            | "DY"
            | "FX"
            | "MONTH"
            | "MON"
            | "OF"
            | "P.M."
            | "PM"
            | "RM"
            | "TZH"
            | "TZ"
    )
}

fn calendar(pattern: &str) -> Option<Calendar> {
    match pattern.to_ascii_uppercase().as_str() {
        "IDDD" | "ID" | "IW" | "IYYY" | "IYY" | "IY" | "I" => Some(Calendar::IsoWeek),
        "DDD" | "DD" | "D" | "MM" | "MONTH" | "MON" | "RM" | "WW" | "W" | "Y,YYY" | "YYYY"
        | "YYY" | "YY" | "Y" => Some(Calendar::Gregorian),
        _ => None,
    }
}

fn bad_format(message: String) -> PgError {
    PgError::new(codes::INVALID_DATETIME_FORMAT, message)
}

const NOT_FIXED_WIDTH_HINT: &str =
    "If your source string is not fixed-width, try using the \"FM\" modifier.";

/// The reader's position in the input.
struct Reader<'a> {
    input: &'a str,
    pos: usize,
}

impl Reader<'_> {
    fn rest(&self) -> &str {
        &self.input[self.pos..]
    }

    fn at_end(&self) -> bool {
        self.pos >= self.input.len()
    }

    /// Skips one character.
    fn skip_char(&mut self) {
        if let Some(c) = self.rest().chars().next() {
            self.pos += c.len_utf8();
        }
    }

    /// Skips blanks; returns how many.
    fn skip_spaces(&mut self) -> i64 {
        let n = self.rest().chars().take_while(|c| is_space(*c)).count();
        self.pos += n;
        n as i64
    }

    /// from_char_parse_int_len: an integer of `width` characters, or as many digits as
    /// there are when the field is FM or a non-digit follows it. Returns the characters
    /// read (blanks before it included) and the value.
    fn int(&mut self, pattern: &str, width: usize, free_width: bool) -> PgResult<(i64, usize)> {
        let start = self.pos;
        self.skip_spaces();
        let bytes = self.rest().as_bytes();
        let copy = String::from_utf8_lossy(&bytes[..width.min(bytes.len())]).into_owned();
        let value = if free_width {
            let (value, used) = strtol(bytes);
            self.pos += used;
            value
        } else {
            if copy.len() < width {
                return Err(bad_format(format!(
                    "source string too short for \"{pattern}\" formatting field"
                ))
                .with_detail(format!(
                    "Field requires {width} characters, but only {} remain.",
                    copy.len()
                ))
                .with_hint(NOT_FIXED_WIDTH_HINT));
            }
            let (value, used) = strtol(copy.as_bytes());
            if used > 0 && used < width {
                return Err(
                    bad_format(format!("invalid value \"{copy}\" for \"{pattern}\""))
                        .with_detail(format!(
                            "Field requires {width} characters, but only {used} could be parsed."
                        ))
                        .with_hint(NOT_FIXED_WIDTH_HINT),
                );
            }
            self.pos += used;
            value
        };
        if self.pos == start || (free_width && value.is_none()) {
            self.pos = start;
            return Err(
                bad_format(format!("invalid value \"{copy}\" for \"{pattern}\""))
                    .with_detail("Value must be an integer."),
            );
        }
        match value.unwrap_or(Some(0)) {
            Some(v) if i32::try_from(v).is_ok() => Ok((v, self.pos - start)),
            _ => Err(PgError::new(
                codes::DATETIME_FIELD_OVERFLOW,
                format!("value for \"{pattern}\" in source string is out of range"),
            )
            .with_detail("Value must be in the range -2147483648 to 2147483647.")),
        }
    }

    /// from_char_seq_search: the index of the first of `words` the input starts with,
    /// ignoring case.
    fn word(&mut self, pattern: &str, words: &[&str]) -> PgResult<usize> {
        let rest = self.rest();
        for (i, w) in words.iter().enumerate() {
            if rest
                .get(..w.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(w))
            {
                self.pos += w.len();
                return Ok(i);
            }
        }
        let shown: String = rest.chars().take_while(|c| !is_space(*c)).collect();
        Err(
            bad_format(format!("invalid value \"{shown}\" for \"{pattern}\"")).with_detail(
                "The given value did not match any of the allowed values for this field.",
            ),
        )
    }

    /// An ordinal suffix after a field (`TH`): two characters, whatever they are.
    fn skip_ordinal(&mut self, ordinal: bool) {
        if ordinal {
            self.skip_char();
            self.skip_char();
        }
    }
}

/// C's strtol on `bytes`: blanks, a sign, digits. Returns the value (None: no digits;
/// Some(None): beyond i64) and the bytes used (0 without digits).
fn strtol(bytes: &[u8]) -> (Option<Option<i64>>, usize) {
    let mut i = bytes.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let negative = bytes.get(i) == Some(&b'-');
    if matches!(bytes.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return (None, 0);
    }
    let value = bytes[i..i + digits].iter().try_fold(0_i64, |acc, b| {
        acc.checked_mul(10)?.checked_add((b - b'0') as i64)
    });
    let value = value.map(|v| if negative { -v } else { v });
    (Some(value), i + digits)
}

/// from_char_set_int: a field given twice must say the same.
fn set(dest: &mut i64, value: i64, pattern: &str) -> PgResult<()> {
    if *dest != 0 && *dest != value {
        return Err(bad_format(format!(
            "conflicting values for \"{pattern}\" field in formatting string"
        ))
        .with_detail("This value contradicts a previous setting for the same field type."));
    }
    *dest = value;
    Ok(())
}

/// formatting.c's adjust_partial_year_to_2020.
fn year_toward_2020(year: i64) -> i64 {
    match year {
        ..70 => year + 2000,
        70..100 => year + 1900,
        100..520 => year + 2000,
        520..1000 => year + 1000,
        _ => year,
    }
}

const AM_PM: [&str; 2] = ["am", "pm"];
const AM_PM_DOTTED: [&str; 2] = ["a.m.", "p.m."];
const AD_BC: [&str; 2] = ["ad", "bc"];
const AD_BC_DOTTED: [&str; 2] = ["a.d.", "b.c."];
/// Roman months, longest first so that "xii" is not read as "x".
const ROMAN_MONTHS: [&str; 12] = [
    "xii", "xi", "x", "ix", "viii", "vii", "vi", "v", "iv", "iii", "ii", "i",
];

/// DCH_from_char: reads the fields of `input` by `template`.
fn read_fields(input: &str, template: &str) -> PgResult<Fields> {
    let items = items(template);
    let mut f = Fields::default();
    let mut r = Reader { input, pos: 0 };
    let mut fixed = false; // FX
    let mut extra_skip: i64 = 0;
    let months_short: Vec<&str> = MONTHS.iter().map(|m| &m[..3]).collect();
    let days_short: Vec<&str> = DAYS.iter().map(|d| &d[..3]).collect();
    for (i, item) in items.iter().enumerate() {
        if r.at_end() {
            break;
        }
        let is_field = matches!(item, Item::Field { .. });
        if !fixed && (!is_field || i == 0) {
            extra_skip += r.skip_spaces();
        }
        let (pattern, fill, ordinal) = match *item {
            Item::Space | Item::Separator => {
                if fixed {
                    r.skip_char();
                } else {
                    // One template separator matches one input blank or separator, or
                    // nothing.
                    extra_skip -= 1;
                    if r.rest()
                        .starts_with(|c: char| is_space(c) || is_separator(c))
                    {
                        r.skip_char();
                        extra_skip += 1;
                    }
                }
                continue;
            }
            Item::Char(_) => {
                if !fixed && extra_skip > 0 {
                    extra_skip -= 1;
                } else {
                    r.skip_char();
                }
                continue;
            }
            Item::Field {
                pattern,
                fill,
                ordinal,
            } => (pattern, fill, ordinal),
        };
        if let Some(cal) = calendar(pattern) {
            match f.calendar {
                Some(had) if had != cal => {
                    return Err(bad_format("invalid combination of date conventions".into())
                        .with_hint(
                            "Do not mix Gregorian and ISO week date conventions in a formatting \
                             template.",
                        ))
                }
                _ => f.calendar = Some(cal),
            }
        }
        // A field reads as many digits as it finds when FM or when no digit can follow.
        let free_width = fill
            || ordinal
            || match items.get(i + 1) {
                None => true,
                Some(Item::Field { pattern, .. }) => !reads_digits(pattern),
                Some(Item::Char(c)) => !c.is_ascii_digit(),
                Some(_) => true,
            };
        let int = |r: &mut Reader, width: usize| r.int(pattern, width, free_width);
        let upper = pattern.to_ascii_uppercase();
        let default_width = pattern.len();
        match upper.as_str() {
            "FX" => fixed = true,
            "A.M." | "P.M." | "AM" | "PM" => {
                let words: &[&str] = if pattern.contains('.') {
                    &AM_PM_DOTTED
                } else {
                    &AM_PM
                };
                let pm = r.word(pattern, words)? as i64;
                set(&mut f.pm, pm, pattern)?;
                f.twelve_hour = true;
            }
            "A.D." | "B.C." | "AD" | "BC" => {
                let words: &[&str] = if pattern.contains('.') {
                    &AD_BC_DOTTED
                } else {
                    &AD_BC
                };
                let bc = r.word(pattern, words)? as i64;
                set(&mut f.bc, bc, pattern)?;
            }
            "HH" | "HH12" | "HH24" => {
                let (v, _) = int(&mut r, 2)?;
                set(&mut f.hh, v, pattern)?;
                f.twelve_hour |= upper != "HH24";
            }
            "MI" => set(&mut f.mi, int(&mut r, 2)?.0, pattern)?,
            "SS" => set(&mut f.ss, int(&mut r, 2)?.0, pattern)?,
            "SSSS" | "SSSSS" => set(&mut f.ssss, int(&mut r, default_width)?.0, pattern)?,
            "MS" => {
                let (v, used) = int(&mut r, 3)?;
                set(&mut f.ms, v, pattern)?;
                // "25" is 0.25 s, as "250"; "025" is 0.025 s.
                f.ms *= match used {
                    1 => 100,
                    2 => 10,
                    _ => 1,
                };
            }
            "US" | "FF1" | "FF2" | "FF3" | "FF4" | "FF5" | "FF6" => {
                let width = if upper == "US" {
                    6
                } else {
                    f.ff = (upper.as_bytes()[2] - b'0') as i64;
                    f.ff as usize
                };
                let (v, used) = int(&mut r, width)?;
                set(&mut f.us, v, pattern)?;
                f.us *= 10_i64.pow(6_u32.saturating_sub(used.min(6) as u32));
            }
            "TZ" | "OF" => {
                return Err(PgError::new(
                    codes::FEATURE_NOT_SUPPORTED,
                    format!("formatting field \"{pattern}\" is only supported in to_char"),
                ))
            }
            "TZH" => {
                // A minus taken as a separator before it is its sign.
                let sign = r.rest().chars().next();
                if matches!(sign, Some('+' | '-' | ' ')) {
                    f.tz_sign = if sign == Some('-') { -1 } else { 1 };
                    r.skip_char();
                } else {
                    let minus_skipped = extra_skip > 0 && r.input[..r.pos].ends_with('-');
                    f.tz_sign = if minus_skipped { -1 } else { 1 };
                }
                set(&mut f.tzh, int(&mut r, 2)?.0, pattern)?;
            }
            "TZM" => {
                if f.tz_sign == 0 {
                    f.tz_sign = 1;
                }
                set(&mut f.tzm, int(&mut r, 2)?.0, pattern)?;
            }
            "MONTH" => {
                let m = r.word(pattern, &MONTHS)? as i64;
                set(&mut f.mm, m + 1, pattern)?;
            }
            "MON" => {
                let m = r.word(pattern, &months_short)? as i64;
                set(&mut f.mm, m + 1, pattern)?;
            }
            "RM" => {
                let m = r.word(pattern, &ROMAN_MONTHS)? as i64;
                set(&mut f.mm, 12 - m, pattern)?;
            }
            "MM" => set(&mut f.mm, int(&mut r, 2)?.0, pattern)?,
            "DAY" | "DY" => {
                let words = if upper == "DAY" {
                    &DAYS[..]
                } else {
                    &days_short
                };
                let d = r.word(pattern, words)? as i64;
                // As formatting.c: the check compares the 0-based day, the 1-based is kept.
                set(&mut f.d, d, pattern)?;
                f.d += 1;
            }
            "DDD" | "IDDD" => set(&mut f.ddd, int(&mut r, 3)?.0, pattern)?,
            "DD" => set(&mut f.dd, int(&mut r, 2)?.0, pattern)?,
            "D" => set(&mut f.d, int(&mut r, 1)?.0, pattern)?,
            "ID" => {
                set(&mut f.d, int(&mut r, 1)?.0, pattern)?;
                // ISO Monday-first to Sunday-first numbering.
                f.d += 1;
                if f.d > 7 {
                    f.d = 1;
                }
            }
            "WW" | "IW" => set(&mut f.ww, int(&mut r, 2)?.0, pattern)?,
            "W" => set(&mut f.w, int(&mut r, 1)?.0, pattern)?,
            "Q" => {
                // Read and ignored: which day of the quarter would it be?
                int(&mut r, 1)?;
            }
            "CC" => set(&mut f.cc, int(&mut r, 2)?.0, pattern)?,
            "J" => set(&mut f.j, int(&mut r, 1)?.0, pattern)?,
            "Y,YYY" => {
                let year = thousands_year(&mut r)?;
                set(&mut f.year, year, pattern)?;
                f.year_digits = 4;
            }
            "YYYY" | "IYYY" => {
                set(&mut f.year, int(&mut r, 4)?.0, pattern)?;
                f.year_digits = 4;
            }
            "YYY" | "IYY" | "YY" | "IY" | "Y" | "I" => {
                let digits = match upper.as_str() {
                    "YYY" | "IYY" => 3,
                    "YY" | "IY" => 2,
                    _ => 1,
                };
                let (v, used) = int(&mut r, digits)?;
                set(&mut f.year, v, pattern)?;
                if used < 4 {
                    f.year = year_toward_2020(f.year);
                }
                f.year_digits = digits as i64;
            }
            _ => {}
        }
        if reads_digits(pattern) {
            r.skip_ordinal(ordinal);
        }
        if !fixed {
            extra_skip = r.skip_spaces();
        }
    }
    Ok(f)
}

/// "Y,YYY": thousands, a comma, three digits (sscanf's "%d,%03d").
fn thousands_year(r: &mut Reader) -> PgResult<i64> {
    let bad = || bad_format("invalid input string for \"Y,YYY\"".into());
    let rest = r.rest().as_bytes();
    let (thousands, used) = strtol(rest);
    let thousands = thousands.flatten().ok_or_else(bad)?;
    if rest.get(used) != Some(&b',') {
        return Err(bad());
    }
    let tail = &rest[used + 1..];
    let blanks = tail.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let (years, digits) = strtol(&tail[blanks..tail.len().min(blanks + 3)]);
    let years = years.flatten().ok_or_else(bad)?;
    r.pos += used + 1 + blanks + digits;
    Ok(years + thousands * 1000)
}

/// do_to_timestamp: the fields made into a date and time, range-checked.
fn read(input: &str, template: &str) -> PgResult<Parsed> {
    let mut f = read_fields(input, template)?;
    let overflow = || {
        PgError::new(
            codes::DATETIME_FIELD_OVERFLOW,
            format!("date/time field value out of range: \"{input}\""),
        )
    };
    let (mut year, mut month, mut day) = (0_i64, 1_i64, 1_i64);
    let (mut hour, mut minute, mut second) = (0, 0, 0);
    let (mut year_given, mut month_given, mut day_given) = (false, false, false);
    if f.ssss != 0 {
        hour = f.ssss / 3600;
        minute = f.ssss % 3600 / 60;
        second = f.ssss % 60;
    }
    if f.ss != 0 {
        second = f.ss;
    }
    if f.mi != 0 {
        minute = f.mi;
    }
    if f.hh != 0 {
        hour = f.hh;
    }
    if f.twelve_hour {
        if !(1..=12).contains(&hour) {
            return Err(
                bad_format(format!("hour \"{hour}\" is invalid for the 12-hour clock"))
                    .with_hint("Use the 24-hour clock, or give an hour between 1 and 12."),
            );
        }
        if f.pm != 0 && hour < 12 {
            hour += 12;
        } else if f.pm == 0 && hour == 12 {
            hour = 0;
        }
    }
    if f.year != 0 {
        if f.cc != 0 && f.year_digits <= 2 {
            // YY within century CC (the 21st runs from 2001 to 2100).
            let cc = if f.bc != 0 { -f.cc } else { f.cc };
            let yy = f.year % 100;
            year = match (yy, cc >= 0) {
                (0, true) => cc * 100,
                (0, false) => cc * 100 + 1,
                (_, true) => yy + (cc - 1) * 100,
                (_, false) => (cc + 1) * 100 - yy + 1,
            };
        } else {
            year = if f.bc != 0 { -f.year } else { f.year };
            if year < 0 {
                year += 1; // 1 BC is year 0
            }
        }
        year_given = true;
    } else if f.cc != 0 {
        let cc = if f.bc != 0 { -f.cc } else { f.cc };
        year = if cc >= 0 {
            (cc - 1) * 100 + 1
        } else {
            cc * 100 + 1
        };
        year_given = true;
    }
    if f.j != 0 {
        let (y, m, d) = j2date(f.j);
        (year, month, day) = (y, m as i64, d as i64);
        (year_given, month_given, day_given) = (true, true, true);
    }
    let iso = f.calendar == Some(Calendar::IsoWeek);
    if f.ww != 0 {
        if iso {
            let monday = iso_week_start(year, f.ww);
            // Sunday-first day number to days after Monday; no day: Monday.
            let offset = match f.d {
                0 | 2 => 0,
                1 => 6,
                d => d - 2,
            };
            let (y, m, d) = j2date(monday + offset);
            (year, month, day) = (y, m as i64, d as i64);
            (year_given, month_given, day_given) = (true, true, true);
        } else {
            f.ddd = (f.ww - 1) * 7 + 1;
        }
    }
    if f.w != 0 {
        f.dd = (f.w - 1) * 7 + 1;
    }
    if f.dd != 0 {
        day = f.dd;
        day_given = true;
    }
    if f.mm != 0 {
        month = f.mm;
        month_given = true;
    }
    if f.ddd != 0 && (month <= 1 || day <= 1) {
        if year == 0 && f.bc == 0 {
            return Err(bad_format(
                "cannot calculate day of year without year information".into(),
            ));
        }
        if iso {
            let (y, m, d) = j2date(iso_week_start(year, 1) - 1 + f.ddd);
            (year, month, day) = (y, m as i64, d as i64);
            (year_given, month_given, day_given) = (true, true, true);
        } else {
            let mut before = 0_i64; // days of the year before month `m`
            let mut m = 1;
            while m < 12 && f.ddd > before + days_in_month(year, m as u32) as i64 {
                before += days_in_month(year, m as u32) as i64;
                m += 1;
            }
            if month <= 1 {
                month = m;
            }
            if day <= 1 {
                day = f.ddd - before;
            }
            (month_given, day_given) = (true, true);
        }
    }
    if (month_given && !(1..=12).contains(&month))
        || (day_given && !(1..=31).contains(&day))
        || (year_given
            && month_given
            && day_given
            && day > days_in_month(year, month as u32) as i64)
    {
        return Err(overflow());
    }
    let fraction = f.ms * 1000 + f.us;
    if !(0..24).contains(&hour)
        || !(0..60).contains(&minute)
        || !(0..60).contains(&second)
        || !(0..USECS_PER_SEC).contains(&fraction)
    {
        return Err(overflow());
    }
    let east_secs = match f.tz_sign {
        0 => None,
        sign => {
            if !(0..=15).contains(&f.tzh) || !(0..60).contains(&f.tzm) {
                return Err(PgError::new(
                    codes::INVALID_TIME_ZONE_DISPLACEMENT_VALUE,
                    format!("time zone displacement out of range: \"{input}\""),
                ));
            }
            Some(sign * (f.tzh * 3600 + f.tzm * 60))
        }
    };
    Ok(Parsed {
        year,
        month,
        day,
        time: ((hour * 60 + minute) * 60 + second) * USECS_PER_SEC + fraction,
        east_secs,
        fraction_digits: f.ff,
    })
}

/// The Julian day of the Monday of ISO week `week` of ISO year `year` (isoweek2j).
fn iso_week_start(year: i64, week: i64) -> i64 {
    let jan4 = date2j(year, 1, 4);
    // Days since the Monday of Jan 4's week: Julian day 0 was a Monday.
    (week - 1) * 7 + (jan4 - jan4.rem_euclid(7))
}
