//! Time zones as PostgreSQL 15 reads them (docs/decisions/0036-time-zones.md): every zone
//! of the IANA database (through `jiff`, from the system's zoneinfo as PostgreSQL's own
//! packages use, with a bundled copy where there is none), POSIX-style specifications
//! (`UTC+3` is three hours *west*), fixed offsets, and the abbreviations of PostgreSQL's
//! `Default` set that applications commonly write in timestamps.
//!
//! Timestamps are microseconds since 2000-01-01 UTC; offsets are seconds east of UTC.

use crate::datestyle::Style;
use crate::datetime::{
    date2j, j2date, POSTGRES_EPOCH_JDATE, UNIX_EPOCH_JDATE, USECS_PER_DAY, USECS_PER_SEC,
};
use jiff::tz::TimeZone;
use pgerror::{codes, PgError, PgResult};

/// A session's or an expression's time zone. A session's also carries its DateStyle and
/// IntervalStyle (`style`): with the zone they decide how date/time values read and show
/// as text, and they travel to the same places.
#[derive(Clone, Debug)]
pub struct Zone {
    kind: Kind,
    style: Style,
}

#[derive(Clone, Debug)]
enum Kind {
    /// Seconds east of UTC; PostgreSQL allows up to 167:59:59, past `jiff`'s offsets.
    Fixed(i32),
    Rules(TimeZone),
}

/// µs from the Unix epoch to PostgreSQL's.
const UNIX_TO_PG_USECS: i64 = (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
/// The largest offset PostgreSQL's POSIX zone parser accepts (exclusive).
const MAX_OFFSET_SECS: i64 = 168 * 3600;

/// Abbreviations of PostgreSQL's `Default` set read in timestamp input (seconds east).
/// Zone names of the database (`CET`, `EST`, `UTC`) are read as zones before these.
const ABBREVIATIONS: &[(&str, i32)] = &[
    ("acdt", 37800),
    ("acst", 34200),
    ("aedt", 39600),
    ("aest", 36000),
    ("akdt", -28800),
    ("akst", -32400),
    ("awst", 28800),
    ("bst", 3600),
    ("cdt", -18000),
    ("cest", 7200),
    ("cst", -21600),
    ("edt", -14400),
    ("eest", 10800),
    ("gmt", 0),
    ("hst", -36000),
    ("ist", 7200),
    ("jst", 32400),
    ("mdt", -21600),
    ("msk", 10800),
    ("mst", -25200),
    ("nzdt", 46800),
    ("nzst", 43200),
    ("pdt", -25200),
    ("pst", -28800),
    ("ut", 0),
    ("utc", 0),
    ("west", 3600),
    ("z", 0),
    ("zulu", 0),
];

impl Zone {
    pub const UTC: Zone = Zone::of(Kind::Fixed(0));
    /// UTC by name (TimeZone `Etc/UTC`, the default): shown as "UTC" where a style writes
    /// zone names. Cloned without touching a reference count, unlike zones read from the
    /// database, which matters to a value copied into every statement.
    pub const NAMED_UTC: Zone = Zone::of(Kind::Rules(TimeZone::UTC));

    const fn of(kind: Kind) -> Zone {
        Zone {
            kind,
            style: Style::DEFAULT,
        }
    }

    /// The same zone with a session's DateStyle and IntervalStyle.
    pub fn with_style(self, style: Style) -> Zone {
        Zone { style, ..self }
    }

    pub fn style(&self) -> Style {
        self.style
    }

    /// A fixed offset, seconds east of UTC.
    pub fn fixed(east_secs: i32) -> Zone {
        Zone::of(Kind::Fixed(east_secs))
    }

    /// A zone named in AT TIME ZONE, `timezone(zone, ts)` or a timestamp literal: a
    /// database name (any case) or a POSIX specification. None if it is neither.
    pub fn named(name: &str) -> Option<Zone> {
        if let Ok(tz) = jiff::tz::db().get(name) {
            return Some(Zone::of(Kind::Rules(tz)));
        }
        posix(name)
    }

    /// A zone or an abbreviation inside a timestamp literal: None if the token is no
    /// zone, 22023 if it names one (`Area/Place`) that does not exist.
    pub fn from_literal_token(token: &str) -> PgResult<Option<Zone>> {
        let zone = Self::literal_zone(token);
        if zone.is_none()
            && token.contains('/')
            && token
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic())
        {
            return Err(PgError::new(
                codes::INVALID_PARAMETER_VALUE,
                format!(
                    "time zone \"{}\" not recognized",
                    token.to_ascii_lowercase()
                ),
            ));
        }
        Ok(zone)
    }

    fn literal_zone(token: &str) -> Option<Zone> {
        if token.bytes().all(|b| b.is_ascii_alphabetic()) {
            let lower = token.to_ascii_lowercase();
            if let Some((_, off)) = ABBREVIATIONS.iter().find(|(a, _)| *a == lower) {
                return Some(Zone::fixed(*off));
            }
        }
        // Only what looks like a name: "+05" and "05:30" are offsets, read elsewhere.
        if token
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic())
        {
            return Zone::named(token);
        }
        None
    }

    /// The value of `SET TIME ZONE` / the TimeZone setting: the zone and the name SHOW
    /// reports. A number is hours east of UTC; `INTERVAL '…'` an offset east.
    pub fn from_setting(value: &str) -> PgResult<(Zone, String)> {
        let v = value.trim();
        let invalid_value = |shown: &str, detail: Option<&str>| {
            let e = PgError::new(
                codes::INVALID_PARAMETER_VALUE,
                format!("invalid value for parameter \"TimeZone\": \"{shown}\""),
            );
            match detail {
                Some(d) => e.with_detail(d),
                None => e,
            }
        };
        if v.len() > 8 && v[..8].eq_ignore_ascii_case("interval") {
            let quoted = v[8..].trim_start();
            let body = quoted
                .strip_prefix('\'')
                .and_then(|r| r.split_once('\''))
                .map(|(b, _)| b)
                .ok_or_else(|| invalid_value(value, None))?;
            let (months, days, micros) = crate::datetime::parse_interval(body)?;
            // PostgreSQL names the value as it shows the interval
            let shown = format!(
                "INTERVAL '{}'",
                crate::datetime::format_interval(months, days, micros)
            );
            if months != 0 {
                let detail = "Cannot specify months in time zone interval.";
                return Err(invalid_value(&shown, Some(detail)));
            }
            if days != 0 {
                let detail = "Cannot specify days in time zone interval.";
                return Err(invalid_value(&shown, Some(detail)));
            }
            return offset_setting(micros / USECS_PER_SEC)
                .ok_or_else(|| invalid_value(&shown, None));
        }
        let invalid = |detail: Option<&str>| invalid_value(value, detail);
        if let Ok(hours) = v.parse::<f64>() {
            if !hours.is_finite() || hours.abs() * 3600.0 >= MAX_OFFSET_SECS as f64 {
                return Err(invalid(Some("UTC timezone offset is out of range.")));
            }
            return offset_setting((hours * 3600.0).round() as i64).ok_or_else(|| invalid(None));
        }
        if let Ok(tz) = jiff::tz::db().get(v) {
            let name = tz.iana_name().unwrap_or(v).to_string();
            return Ok((Zone::of(Kind::Rules(tz)), name));
        }
        match posix(v) {
            Some(z) => Ok((z, v.to_string())),
            None => Err(invalid(None)),
        }
    }

    /// The offset (seconds east) in force at `utc` (µs since 2000-01-01 UTC).
    pub fn offset_at(&self, utc: i64) -> i32 {
        match &self.kind {
            Kind::Fixed(s) => *s,
            Kind::Rules(tz) => tz.to_offset(jiff_timestamp(within_jiff(utc).0)).seconds(),
        }
    }

    /// The zone's abbreviation at `utc` ("CET", "EDT", "+0530"), for to_char's TZ.
    pub fn abbreviation_at(&self, utc: i64) -> String {
        match &self.kind {
            Kind::Fixed(s) => format_offset(*s),
            Kind::Rules(tz) => tz
                .to_offset_info(jiff_timestamp(within_jiff(utc).0))
                .abbreviation()
                .to_string(),
        }
    }

    /// Local wall-clock time at `utc`, both as µs since 2000-01-01.
    pub fn to_local(&self, utc: i64) -> i64 {
        utc.saturating_add(self.offset_at(utc) as i64 * USECS_PER_SEC)
    }

    /// The instant at which the wall clock reads `local` here. A time skipped by a
    /// spring-forward transition is read with the offset before it, one repeated by a
    /// fall-back transition with the offset after it (PostgreSQL's
    /// DetermineTimeZoneOffset): in both cases the later of the candidate instants.
    pub fn to_utc(&self, local: i64) -> i64 {
        match &self.kind {
            Kind::Fixed(s) => local.saturating_sub(*s as i64 * USECS_PER_SEC),
            Kind::Rules(tz) => {
                let (shifted, shift) = within_jiff(local);
                let utc = match jiff_datetime(shifted)
                    .and_then(|dt| tz.to_ambiguous_timestamp(dt).later().ok())
                {
                    Some(ts) => ts.as_microsecond() - UNIX_TO_PG_USECS,
                    // before the years jiff models: the earliest rules (local mean time)
                    None => {
                        let offset = tz.to_offset(jiff_timestamp(shifted)).seconds();
                        shifted.saturating_sub(offset as i64 * USECS_PER_SEC)
                    }
                };
                utc.saturating_add(shift)
            }
        }
    }
}

impl Default for Zone {
    fn default() -> Self {
        Zone::UTC
    }
}

/// `+05`, `-03:30`, `+00:49:56`: an offset east as timestamptz output writes it.
pub fn format_offset(east_secs: i32) -> String {
    let sign = if east_secs < 0 { '-' } else { '+' };
    let abs = east_secs.unsigned_abs();
    let (h, m, s) = (abs / 3600, abs / 60 % 60, abs % 60);
    match (m, s) {
        (0, 0) => format!("{sign}{h:02}"),
        (_, 0) => format!("{sign}{h:02}:{m:02}"),
        _ => format!("{sign}{h:02}:{m:02}:{s:02}"),
    }
}

/// A fixed offset east as a setting, named as PostgreSQL names it: `<+05:30>-05:30`.
fn offset_setting(east_secs: i64) -> Option<(Zone, String)> {
    if east_secs.abs() >= MAX_OFFSET_SECS {
        return None;
    }
    let abs = east_secs.unsigned_abs();
    let mut digits = format!("{:02}", abs / 3600);
    if !abs.is_multiple_of(3600) {
        digits.push_str(&format!(":{:02}", abs / 60 % 60));
        if !abs.is_multiple_of(60) {
            digits.push_str(&format!(":{:02}", abs % 60));
        }
    }
    let name = if east_secs < 0 {
        format!("<-{digits}>+{digits}")
    } else {
        format!("<+{digits}>-{digits}")
    };
    Some((Zone::fixed(east_secs as i32), name))
}

/// A POSIX zone specification: a name (letters, or `<…>`, possibly empty) and an offset
/// *west* of UTC (`UTC+3`, `+05:30`, `<+05>-05`); with daylight-saving rules after it
/// (`EST5EDT,M3.2.0,M11.1.0`) the rules are `jiff`'s.
fn posix(spec: &str) -> Option<Zone> {
    let rest = if let Some(r) = spec.strip_prefix('<') {
        &r[r.find('>')? + 1..]
    } else {
        spec.trim_start_matches(|c: char| c.is_ascii_alphabetic())
    };
    let name_len = spec.len() - rest.len();
    if name_len != 0 && name_len < 3 {
        return None;
    }
    let (sign, digits) = match rest.as_bytes().first()? {
        b'+' => (1, &rest[1..]),
        b'-' => (-1, &rest[1..]),
        b'0'..=b'9' => (1, rest),
        _ => return None,
    };
    let end = digits
        .find(|c: char| !(c.is_ascii_digit() || c == ':'))
        .unwrap_or(digits.len());
    let (offset, dst) = digits.split_at(end);
    let mut parts = offset.split(':');
    let mut secs = 0i64;
    for (i, scale) in [3600i64, 60, 1].iter().enumerate() {
        let Some(p) = parts.next() else { break };
        let n: i64 = p.parse().ok().filter(|_| p.len() <= 3 && !p.is_empty())?;
        if i > 0 && n > 59 {
            return None;
        }
        secs += n * scale;
    }
    if parts.next().is_some() || secs >= MAX_OFFSET_SECS {
        return None;
    }
    if !dst.is_empty() {
        return TimeZone::posix(spec)
            .ok()
            .map(|tz| Zone::of(Kind::Rules(tz)));
    }
    Some(Zone::fixed((-sign * secs) as i32))
}

/// Gregorian years repeat every 400 years, and so do the rules a zone follows after its
/// last listed transition: a time past the years jiff models (to 9999) is moved back by
/// whole cycles into them. Returns the moved time and what was taken off.
fn within_jiff(t: i64) -> (i64, i64) {
    const CYCLE: i64 = 146_097 * USECS_PER_DAY;
    // 9000-01-01, far past every listed transition
    const LIMIT: i64 = 2_556_698 * USECS_PER_DAY;
    if t < LIMIT {
        return (t, 0);
    }
    let shift = ((t - LIMIT) / CYCLE + 1) * CYCLE;
    (t - shift, shift)
}

/// jiff's instant for `utc`, clamped to the years it models.
fn jiff_timestamp(utc: i64) -> jiff::Timestamp {
    let unix = utc.saturating_add(UNIX_TO_PG_USECS).clamp(
        jiff::Timestamp::MIN.as_microsecond(),
        jiff::Timestamp::MAX.as_microsecond(),
    );
    jiff::Timestamp::from_microsecond(unix).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// jiff's civil time for local µs since 2000-01-01, if within its years (-9999..=9999).
fn jiff_datetime(local: i64) -> Option<jiff::civil::DateTime> {
    let days = local.div_euclid(USECS_PER_DAY);
    let tod = local.rem_euclid(USECS_PER_DAY);
    let (y, m, d) = j2date(days + POSTGRES_EPOCH_JDATE);
    debug_assert_eq!(date2j(y, m as i64, d as i64), days + POSTGRES_EPOCH_JDATE);
    let secs = tod / USECS_PER_SEC;
    jiff::civil::DateTime::new(
        i16::try_from(y).ok()?,
        m as i8,
        d as i8,
        (secs / 3600) as i8,
        (secs / 60 % 60) as i8,
        (secs % 60) as i8,
        ((tod % USECS_PER_SEC) * 1000) as i32,
    )
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(y: i64, m: i64, d: i64, h: i64, mi: i64) -> i64 {
        (date2j(y, m, d) - POSTGRES_EPOCH_JDATE) * USECS_PER_DAY
            + (h * 3600 + mi * 60) * USECS_PER_SEC
    }

    #[test]
    fn settings_are_named_as_postgres_names_them() {
        let name = |v: &str| Zone::from_setting(v).map(|(_, n)| n);
        assert_eq!(name("europe/rome").unwrap(), "Europe/Rome");
        assert_eq!(name("5").unwrap(), "<+05>-05");
        assert_eq!(name("-3.5").unwrap(), "<-03:30>+03:30");
        assert_eq!(name("INTERVAL '+05:30'").unwrap(), "<+05:30>-05:30");
        assert_eq!(name("UTC+3").unwrap(), "UTC+3");
        assert_eq!(name("200").unwrap_err().code, "22023");
        assert_eq!(name("Nowhere/Land").unwrap_err().code, "22023");
    }

    #[test]
    fn posix_offsets_are_west() {
        let (z, _) = Zone::from_setting("UTC+3").unwrap();
        assert_eq!(z.offset_at(0), -3 * 3600);
        let (z, _) = Zone::from_setting("+05:30").unwrap();
        assert_eq!(z.offset_at(0), -(5 * 3600 + 1800));
    }

    #[test]
    fn gaps_and_overlaps_take_the_later_instant() {
        let (rome, _) = Zone::from_setting("Europe/Rome").unwrap();
        // 2021-03-28 02:30 does not exist: read with +01, it is 01:30 UTC.
        assert_eq!(rome.to_utc(ts(2021, 3, 28, 2, 30)), ts(2021, 3, 28, 1, 30));
        // 2021-10-31 02:30 happens twice: the second (+01) is 01:30 UTC.
        assert_eq!(
            rome.to_utc(ts(2021, 10, 31, 2, 30)),
            ts(2021, 10, 31, 1, 30)
        );
        // local mean time before 1893: +00:49:56
        assert_eq!(rome.offset_at(ts(1890, 6, 1, 12, 0)), 49 * 60 + 56);
    }
}
