//! to_char(timestamp | timestamptz | date, text): PostgreSQL 15's template patterns
//! (formatting.c's DCH keywords) with the FM, TH/th, FX and TM modifiers and quoted or
//! backslash-escaped literal text; `number` has the numeric templates.

mod interval;
pub mod number;
pub mod parse;

pub use interval::format_interval;

use crate::datetime::{date2j, j2date, POSTGRES_EPOCH_JDATE, USECS_PER_DAY, USECS_PER_SEC};
use crate::datetime_fields::{dow, iso_week};
use pgerror::PgResult;

/// The time zone a timestamptz is shown in (TZ, TZH, TZM, OF); a timestamp's is UTC
/// without an abbreviation.
#[derive(Default)]
pub struct ShownZone {
    pub east_secs: i32,
    pub abbreviation: String,
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const ROMAN: [&str; 12] = [
    "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII",
];

/// The template patterns, longest first where one is a prefix of another (the order
/// formatting.c's keyword search gives).
const PATTERNS: &[&str] = &[
    "A.D.", "A.M.", "AD", "AM", "B.C.", "BC", "CC", "DAY", "DDD", "DD", "DY", "Day", "Dy", "D",
    "FF1", "FF2", "FF3", "FF4", "FF5", "FF6", "FX", "HH24", "HH12", "HH", "IDDD", "ID", "IW",
    "IYYY", "IYY", "IY", "I", "J", "MI", "MM", "MONTH", "MON", "MS", "Month", "Mon", "OF", "P.M.",
    "PM", "Q", "RM", "SSSSS", "SSSS", "SS", "TZH", "TZM", "TZ", "US", "WW", "W", "Y,YYY", "YYYY",
    "YYY", "YY", "Y", "a.d.", "a.m.", "ad", "am", "b.c.", "bc", "cc", "day", "ddd", "dd", "dy",
    "d", "ff1", "ff2", "ff3", "ff4", "ff5", "ff6", "fx", "hh24", "hh12", "hh", "iddd", "id", "iw",
    "iyyy", "iyy", "iy", "i", "j", "mi", "mm", "month", "mon", "ms", "of", "p.m.", "pm", "q", "rm",
    "sssss", "ssss", "ss", "tzh", "tzm", "tz", "us", "ww", "w", "y,yyy", "yyyy", "yyy", "yy", "y",
];

/// The wall clock being formatted.
struct Clock {
    year: i64, // astronomical: 1 BC is 0
    month: u32,
    day: u32,
    tod: i64,
}

/// Formats the wall-clock time `local` (µs since 2000-01-01) by `template`.
pub fn format(local: i64, template: &str, zone: &ShownZone) -> String {
    let (year, month, day) = j2date(local.div_euclid(USECS_PER_DAY) + POSTGRES_EPOCH_JDATE);
    let clock = Clock {
        year,
        month,
        day,
        tod: local.rem_euclid(USECS_PER_DAY),
    };
    render(template, |pattern, fill| {
        Ok(clock.field(pattern, fill, zone))
    })
    .expect("a timestamp's fields are never refused")
}

/// Writes `template` with each pattern's text from `field(pattern, fill)`, an ordinal
/// suffix after a number where TH/th asks for one, and the literal text between.
pub(crate) fn render(
    template: &str,
    mut field: impl FnMut(&'static str, bool) -> PgResult<String>,
) -> PgResult<String> {
    let mut out = String::new();
    for node in nodes(template) {
        match node {
            Node::Field {
                pattern,
                fill,
                ordinal,
            } => {
                let text = field(pattern, fill)?;
                out.push_str(&text);
                if let (Some(upper), Ok(n)) = (ordinal, text.trim().parse::<i64>()) {
                    let suffix = ordinal_suffix(n);
                    out.push_str(&if upper {
                        suffix.to_uppercase()
                    } else {
                        suffix.to_string()
                    });
                }
            }
            Node::Literal { text, .. } => out.push_str(&text),
        }
    }
    Ok(out)
}

/// One element of a date/time template (formatting.c's FormatNode).
pub(crate) enum Node {
    /// A pattern with its modifiers: FM (`fill`: no padding) and TH/th (`ordinal`: an
    /// ordinal suffix, upper case or not). TM and SP change nothing here.
    Field {
        pattern: &'static str,
        fill: bool,
        ordinal: Option<bool>,
    },
    /// Literal text; `quoted` when it was written in double quotes.
    Literal { text: String, quoted: bool },
}

/// Splits a date/time template into patterns and literal text, as formatting.c's
/// parse_format does.
pub(crate) fn nodes(template: &str) -> Vec<Node> {
    let mut nodes = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        let mut fill = false;
        loop {
            match rest.get(..2) {
                Some("FM" | "fm") => fill = true,
                Some("TM" | "tm") => {}
                _ => break,
            }
            rest = &rest[2..];
        }
        if let Some(pattern) = PATTERNS.iter().find(|p| rest.starts_with(**p)) {
            rest = &rest[pattern.len()..];
            let suffix = rest.get(..2);
            let ordinal = match suffix {
                Some("TH") => Some(true),
                Some("th") => Some(false),
                _ => None,
            };
            if ordinal.is_some() || suffix == Some("SP") {
                rest = &rest[2..];
            }
            nodes.push(Node::Field {
                pattern,
                fill,
                ordinal,
            });
        } else if !rest.is_empty() {
            let quoted = rest.starts_with('"');
            let mut text = String::new();
            rest = literal(rest, &mut text);
            nodes.push(Node::Literal { text, quoted });
        }
    }
    nodes
}

/// Copies the literal text at the start of `rest` to `out`: a double-quoted string, a
/// backslash-escaped double quote, or one character. Returns what follows it.
pub(crate) fn literal<'t>(rest: &'t str, out: &mut String) -> &'t str {
    let mut chars = rest.chars();
    match chars.next() {
        Some('"') => {
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    // A backslash in quotes keeps the character after it, if any.
                    '\\' => out.push(chars.next().unwrap_or(c)),
                    _ => out.push(c),
                }
            }
        }
        // Outside quotes a backslash only escapes a double quote.
        Some('\\') if chars.as_str().starts_with('"') => {
            chars.next();
            out.push('"');
        }
        Some(c) => out.push(c),
        None => {}
    }
    chars.as_str()
}

/// The English ordinal suffix of a number, by its last digits (a sign changes nothing).
fn ordinal_suffix(n: i64) -> &'static str {
    let n = n.unsigned_abs();
    match (n % 100, n % 10) {
        (11..=13, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    }
}

/// RM/rm: month 1–12 in Roman numerals, blank-padded to 4 unless FM.
fn roman_month(month: i64, pattern: &str, fill: bool) -> String {
    let roman = ROMAN[month as usize - 1];
    let text = if pattern == "rm" {
        roman.to_lowercase()
    } else {
        roman.to_string()
    };
    if fill {
        text
    } else {
        format!("{text:<4}")
    }
}

/// AM/PM or AD/BC as the pattern writes it: dotted or not, lower case or not.
fn marker(pattern: &str, plain: &str, dotted: &str) -> String {
    let text = if pattern.contains('.') { dotted } else { plain };
    if pattern.starts_with(|c: char| c.is_ascii_lowercase()) {
        text.to_lowercase()
    } else {
        text.to_string()
    }
}

/// MS, US and FF1…FF6: the fraction of a second `micros` to that many digits, zero-padded
/// even under FM (formatting.c ignores FM there).
fn fraction(upper: &str, micros: i64) -> String {
    let digits = match upper {
        "MS" => 3,
        "US" => 6,
        _ => (upper.as_bytes()[2] - b'0') as u32,
    };
    let width = digits as usize;
    format!("{:0width$}", micros / 10_i64.pow(6 - digits))
}

/// `n` zero-padded to `width` digits, or as it is under FM; a negative number keeps its
/// sign in front.
fn padded(n: i64, width: usize, fill: bool) -> String {
    if fill {
        n.to_string()
    } else if n < 0 {
        format!("-{:0width$}", -n)
    } else {
        format!("{n:0width$}")
    }
}

/// A name in the case its pattern was written in (`MONTH`, `Month`, `month`), blank-padded
/// to `width` unless FM.
fn named(name: &str, pattern: &str, width: usize, fill: bool) -> String {
    let mut chars = pattern.chars();
    let first_upper = chars.next().is_some_and(|c| c.is_ascii_uppercase());
    let second_upper = chars.next().is_some_and(|c| c.is_ascii_uppercase());
    let text = match (first_upper, second_upper) {
        (true, true) => name.to_uppercase(),
        (true, false) => name.to_string(),
        _ => name.to_lowercase(),
    };
    if fill {
        text
    } else {
        format!("{text:<width$}")
    }
}

impl Clock {
    fn field(&self, pattern: &str, fill: bool, zone: &ShownZone) -> String {
        let upper = pattern.to_ascii_uppercase();
        let hour = self.tod / (3600 * USECS_PER_SEC);
        let minute = self.tod / (60 * USECS_PER_SEC) % 60;
        let second = self.tod / USECS_PER_SEC % 60;
        let micros = self.tod % USECS_PER_SEC;
        // The year as shown: 1 BC is year 1.
        let shown_year = if self.year > 0 {
            self.year
        } else {
            1 - self.year
        };
        let weekday = dow(self.year, self.month, self.day);
        let day_of_year =
            date2j(self.year, self.month as i64, self.day as i64) - date2j(self.year, 1, 1) + 1;
        let (iso_week_no, iso_year) = iso_week(self.year, self.month, self.day);
        let iso_year = if iso_year > 0 { iso_year } else { 1 - iso_year };
        let pm = hour >= 12;
        let meridiem = |plain: &str, dotted: &str| marker(pattern, plain, dotted);
        let last_digits = |n: i64, digits: u32| {
            let m = n % 10_i64.pow(digits);
            padded(m, digits as usize, fill)
        };
        match upper.as_str() {
            "HH" | "HH12" => padded(if hour % 12 == 0 { 12 } else { hour % 12 }, 2, fill),
            "HH24" => padded(hour, 2, fill),
            "MI" => padded(minute, 2, fill),
            "SS" => padded(second, 2, fill),
            "MS" | "US" | "FF1" | "FF2" | "FF3" | "FF4" | "FF5" | "FF6" => fraction(&upper, micros),
            "SSSS" | "SSSSS" => (self.tod / USECS_PER_SEC).to_string(),
            "AM" | "PM" => meridiem(if pm { "PM" } else { "AM" }, ""),
            "A.M." | "P.M." => meridiem("", if pm { "P.M." } else { "A.M." }),
            "AD" | "BC" => meridiem(if self.year > 0 { "AD" } else { "BC" }, ""),
            "A.D." | "B.C." => meridiem("", if self.year > 0 { "A.D." } else { "B.C." }),
            "Y,YYY" => format!("{},{:03}", shown_year / 1000, shown_year % 1000),
            "YYYY" => padded(shown_year, 4, fill),
            "YYY" => last_digits(shown_year, 3),
            "YY" => last_digits(shown_year, 2),
            "Y" => last_digits(shown_year, 1),
            "IYYY" => padded(iso_year, 4, fill),
            "IYY" => last_digits(iso_year, 3),
            "IY" => last_digits(iso_year, 2),
            "I" => last_digits(iso_year, 1),
            "MONTH" => named(MONTHS[self.month as usize - 1], pattern, 9, fill),
            "MON" => named(&MONTHS[self.month as usize - 1][..3], pattern, 3, fill),
            "MM" => padded(self.month as i64, 2, fill),
            "DAY" => named(DAYS[weekday as usize], pattern, 9, fill),
            "DY" => named(&DAYS[weekday as usize][..3], pattern, 3, fill),
            "DDD" => padded(day_of_year, 3, fill),
            "IDDD" => {
                let iso_weekday = if weekday == 0 { 7 } else { weekday };
                padded((iso_week_no - 1) * 7 + iso_weekday, 3, fill)
            }
            "DD" => padded(self.day as i64, 2, fill),
            "D" => (weekday + 1).to_string(),
            "ID" => (if weekday == 0 { 7 } else { weekday }).to_string(),
            "W" => ((self.day as i64 - 1) / 7 + 1).to_string(),
            "WW" => padded((day_of_year - 1) / 7 + 1, 2, fill),
            "IW" => padded(iso_week_no, 2, fill),
            "CC" => {
                let century = if self.year > 0 {
                    (self.year - 1) / 100 + 1
                } else {
                    self.year / 100 - 1
                };
                padded(century, 2, fill)
            }
            "J" => date2j(self.year, self.month as i64, self.day as i64).to_string(),
            "Q" => ((self.month as i64 - 1) / 3 + 1).to_string(),
            "RM" => roman_month(self.month as i64, pattern, fill),
            "TZ" if pattern == "tz" => zone.abbreviation.to_lowercase(),
            "TZ" => zone.abbreviation.clone(),
            "TZH" => {
                let sign = if zone.east_secs < 0 { '-' } else { '+' };
                format!("{sign}{:02}", zone.east_secs.abs() / 3600)
            }
            "TZM" => padded((zone.east_secs.abs() / 60 % 60) as i64, 2, fill),
            "OF" => {
                let sign = if zone.east_secs < 0 { '-' } else { '+' };
                let secs = zone.east_secs.abs();
                let mut text = format!("{sign}{:02}", secs / 3600);
                if secs % 3600 != 0 {
                    text.push_str(&format!(":{:02}", secs / 60 % 60));
                }
                text
            }
            // FX: fixed format for input; nothing on output.
            _ => String::new(),
        }
    }
}
