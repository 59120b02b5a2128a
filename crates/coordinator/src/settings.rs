//! Session settings (PostgreSQL's GUCs) that clients read and write.

use pgerror::{codes, PgError, PgResult};
use std::collections::BTreeMap;
use types::datestyle::{self, IntervalStyle, Style};
use types::timezone::Zone;

/// The version string clients see; it must parse as 15.x (drivers check it).
pub const SERVER_VERSION: &str = "15.0 (Meridian 0.1.0)";

/// (canonical name, default value, reported to the client in ParameterStatus)
const KNOWN: &[(&str, &str, bool)] = &[
    ("application_name", "", true),
    ("client_encoding", "UTF8", true),
    ("DateStyle", "ISO, MDY", true),
    ("default_transaction_read_only", "off", true),
    ("in_hot_standby", "off", true),
    ("integer_datetimes", "on", true),
    ("IntervalStyle", "postgres", true),
    ("is_superuser", "on", true),
    ("server_encoding", "UTF8", true),
    ("server_version", SERVER_VERSION, true),
    ("session_authorization", "postgres", true),
    // SET ROLE's role; "none": the session user's.
    ("role", "none", false),
    ("standard_conforming_strings", "on", true),
    ("TimeZone", "Etc/UTC", true),
    ("server_version_num", "150000", false),
    ("transaction_isolation", "read committed", false),
    ("default_transaction_isolation", "read committed", false),
    ("transaction_read_only", "off", false),
    ("extra_float_digits", "1", false),
    ("search_path", "\"$user\", public", false),
    ("statement_timeout", "0", false),
    ("log_min_duration_statement", "-1", false),
    ("lock_timeout", "0", false),
    ("idle_in_transaction_session_timeout", "0", false),
    ("deadlock_timeout", "1s", false),
    ("synchronous_commit", "on", false),
    ("max_connections", "10000", false),
    ("superuser_reserved_connections", "3", false),
    ("password_encryption", "scram-sha-256", false),
    ("max_identifier_length", "63", false),
    // PostgreSQL's INDEX_MAX_KEYS; pgjdbc reads it to number foreign-key columns
    ("max_index_keys", "32", false),
    ("lc_messages", "C", false),
    ("lc_monetary", "C", false),
    ("lc_numeric", "C", false),
    ("lc_time", "C", false),
    ("lc_collate", "C", false),
    ("lc_ctype", "C", false),
    ("work_mem", "4MB", false),
    ("maintenance_work_mem", "64MB", false),
    ("shared_buffers", "128MB", false),
    ("block_size", "8192", false),
    ("row_security", "on", false),
    // pg_dump turns it off; Meridian's scans always start at the first row.
    ("synchronize_seqscans", "on", false),
    // pg_dump's scripts set both; every table is in the default tablespace, in rows.
    ("default_tablespace", "", false),
    ("default_table_access_method", "heap", false),
    ("bytea_output", "hex", false),
    ("client_min_messages", "notice", false),
    ("escape_string_warning", "on", false),
    ("check_function_bodies", "on", false),
    ("default_with_oids", "off", false),
    ("xmloption", "content", false),
    ("jit", "off", false),
    ("enable_seqscan", "on", false),
    ("cpu_tuple_cost", "0.01", false),
    ("geqo", "on", false),
    // pg_stat_statements, always loaded, at its defaults (statement_stats.rs follows them).
    ("shared_preload_libraries", "pg_stat_statements", false),
    ("pg_stat_statements.max", "5000", false),
    ("pg_stat_statements.track", "top", false),
    ("pg_stat_statements.track_utility", "on", false),
    ("pg_stat_statements.track_planning", "off", false),
    ("pg_stat_statements.save", "on", false),
];

fn canonical(name: &str) -> Option<(&'static str, &'static str, bool)> {
    KNOWN
        .iter()
        .copied()
        .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
}

/// The canonical name of the setting `name` (42704 if there is none).
pub fn check_name(name: &str) -> PgResult<&'static str> {
    canonical(name)
        .map(|(canon, _, _)| canon)
        .ok_or_else(|| unrecognized(name))
}

/// The canonical name of `name`, if SET could give it `value` (ALTER ROLE … SET).
pub fn check_value(name: &str, value: &str) -> PgResult<&'static str> {
    Settings::default().set(name, Some(value), false)?;
    check_name(name)
}

/// One session's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    values: BTreeMap<&'static str, String>,
    /// Values to restore when the transaction ends (SET LOCAL).
    local_saved: Vec<(&'static str, Option<String>)>,
    /// Values as the transaction block began, of settings SET in it: restored if it
    /// rolls back.
    block_saved: Vec<(&'static str, Option<String>)>,
    /// Derived from `values` whenever they change: every transaction reads these, and
    /// looking them up in the map touched lines of it that, with 1,000 sessions, had
    /// long left the cache.
    txn_defaults: TxnDefaults,
    /// Derived from `values` like `txn_defaults`: read by every statement.
    limits: StatementLimits,
    /// TimeZone, DateStyle and IntervalStyle, read: date/time values are shown and read
    /// in them.
    zone: Zone,
    /// client_encoding, read likewise.
    encoding: wire::ClientEncoding,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            values: BTreeMap::new(),
            local_saved: Vec::new(),
            block_saved: Vec::new(),
            txn_defaults: TxnDefaults::default(),
            limits: StatementLimits::default(),
            zone: Zone::NAMED_UTC,
            encoding: wire::ClientEncoding::Utf8,
        }
    }
}

/// How long a SET lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Outside a transaction block: the session.
    Session,
    /// In a transaction block: the session, unless the block rolls back.
    Block,
    /// SET LOCAL: the transaction.
    Local,
}

impl Scope {
    /// SET (or SET LOCAL, `local`) in or outside a transaction block.
    pub fn of(local: bool, in_block: bool) -> Scope {
        match (local, in_block) {
            (true, _) => Scope::Local,
            (false, true) => Scope::Block,
            (false, false) => Scope::Session,
        }
    }
}

/// What a statement takes from the session's settings. Durations in milliseconds, 0 for
/// none (PostgreSQL's convention).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatementLimits {
    pub statement_timeout_ms: u64,
    pub lock_timeout_ms: u64,
    pub idle_in_transaction_timeout_ms: u64,
    /// Memory an operator (sort, hash table) may hold before it spills, in bytes.
    pub work_mem: usize,
    /// log_min_duration_statement: statements that ran this long are logged; None: -1.
    pub log_min_duration_ms: Option<u64>,
}

impl Default for StatementLimits {
    fn default() -> Self {
        StatementLimits {
            statement_timeout_ms: 0,
            lock_timeout_ms: 0,
            idle_in_transaction_timeout_ms: 0,
            work_mem: 4 << 20,
            log_min_duration_ms: None,
        }
    }
}

/// What a new transaction takes from the session's settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxnDefaults {
    /// default_transaction_isolation.
    pub isolation: sql::plan::IsolationLevel,
    /// default_transaction_read_only is on.
    pub read_only: bool,
}

impl Settings {
    pub fn get(&self, name: &str) -> PgResult<String> {
        let (canon, default, _) = canonical(name).ok_or_else(|| unrecognized(name))?;
        Ok(self
            .values
            .get(canon)
            .cloned()
            .unwrap_or_else(|| default.to_string()))
    }

    pub fn txn_defaults(&self) -> TxnDefaults {
        self.txn_defaults
    }

    pub fn limits(&self) -> StatementLimits {
        self.limits
    }

    pub fn zone(&self) -> &Zone {
        &self.zone
    }

    /// client_encoding (SQL_ASCII passes bytes through as UTF-8 does).
    pub fn encoding(&self) -> wire::ClientEncoding {
        self.encoding
    }

    fn values_changed(&mut self) {
        self.txn_defaults = TxnDefaults {
            isolation: match self
                .values
                .get("default_transaction_isolation")
                .map(String::as_str)
            {
                Some("repeatable read") => sql::plan::IsolationLevel::RepeatableRead,
                Some("serializable") => sql::plan::IsolationLevel::Serializable,
                _ => sql::plan::IsolationLevel::ReadCommitted,
            },
            read_only: self
                .values
                .get("default_transaction_read_only")
                .map(String::as_str)
                == Some("on"),
        };
        // Stored values are already validated (normalised by `validate`).
        let style = Style {
            interval: (self.get("IntervalStyle").ok())
                .and_then(|v| datestyle::parse_interval_style(&v).ok())
                .map_or(IntervalStyle::default(), |(style, _)| style),
            ..(self.get("DateStyle").ok())
                .and_then(|v| datestyle::parse_date_style(&v, Style::DEFAULT).ok())
                .map_or(Style::DEFAULT, |(style, _)| style)
        };
        self.encoding = (self.values.get("client_encoding"))
            .and_then(|v| wire::ClientEncoding::from_setting(v))
            .map_or(wire::ClientEncoding::Utf8, |(encoding, _)| encoding);
        // Unset, TimeZone is the default Etc/UTC.
        self.zone = (self.values.get("TimeZone"))
            .and_then(|v| Zone::from_setting(v).ok())
            .map_or(Zone::NAMED_UTC, |(zone, _)| zone)
            .with_style(style);
        let ms = |name: &str| {
            self.values
                .get(name)
                .and_then(|v| parse_ms(v).ok())
                .unwrap_or(0)
        };
        self.limits = StatementLimits {
            statement_timeout_ms: ms("statement_timeout"),
            lock_timeout_ms: ms("lock_timeout"),
            idle_in_transaction_timeout_ms: ms("idle_in_transaction_session_timeout"),
            work_mem: self
                .values
                .get("work_mem")
                .and_then(|v| parse_kb(v).ok())
                .map_or(StatementLimits::default().work_mem, |kb| {
                    (kb as usize).saturating_mul(1024)
                }),
            log_min_duration_ms: self
                .values
                .get("log_min_duration_statement")
                .and_then(|v| parse_ms(v).ok()),
        };
    }

    /// Canonical (display) name of a setting, for SHOW's column header.
    pub fn display_name(name: &str) -> String {
        canonical(name)
            .map(|(n, _, _)| n.to_ascii_lowercase())
            .unwrap_or_else(|| name.to_string())
    }

    /// Set (or reset, with None). Returns the (name, value) to report in ParameterStatus
    /// if the setting is one clients track.
    pub fn set(
        &mut self,
        name: &str,
        value: Option<&str>,
        local: bool,
    ) -> PgResult<Option<(&'static str, String)>> {
        self.set_scoped(name, value, Scope::of(local, false))
    }

    /// `set` for a SET that may be in a transaction block.
    pub fn set_scoped(
        &mut self,
        name: &str,
        value: Option<&str>,
        scope: Scope,
    ) -> PgResult<Option<(&'static str, String)>> {
        let (canon, default, reported) = canonical(name).ok_or_else(|| unrecognized(name))?;
        if matches!(
            canon,
            "server_version"
                | "server_encoding"
                | "integer_datetimes"
                | "server_version_num"
                | "block_size"
                | "max_identifier_length"
                | "max_index_keys"
                | "in_hot_standby"
                | "is_superuser"
                | "session_authorization"
                | "role"
                | "max_connections"
                | "superuser_reserved_connections"
        ) {
            return Err(PgError::new(
                codes::CANT_CHANGE_RUNTIME_PARAM,
                format!(
                    "parameter \"{}\" cannot be changed",
                    canon.to_ascii_lowercase()
                ),
            ));
        }
        let value = match value {
            None => default.to_string(),
            Some(v) if canon == "DateStyle" => datestyle::parse_date_style(v, self.zone.style())?.1,
            Some(v) => validate(canon, v)?,
        };
        self.put(canon, value.clone(), scope);
        self.values_changed();
        Ok(reported.then_some((canon, value)))
    }

    /// What the server fixes for a session at its start, which SET cannot change: its
    /// authenticated role and connection limit.
    pub fn fix_for_session(&mut self, role: &str, superuser: bool, max_connections: usize) {
        self.values
            .insert("session_authorization", role.to_string());
        self.values
            .insert("is_superuser", if superuser { "on" } else { "off" }.into());
        self.values
            .insert("max_connections", max_connections.to_string());
        // None of these feeds what `values_changed` derives.
    }

    /// SET ROLE (`None`: NONE), checked by the session: who the statements run as from
    /// now, and whether that role is a superuser. Returns the settings to report.
    pub fn set_role(
        &mut self,
        role: Option<&str>,
        superuser: bool,
        scope: Scope,
    ) -> Vec<(&'static str, String)> {
        self.put("role", role.unwrap_or("none").to_string(), scope);
        self.put("is_superuser", on_off(superuser), scope);
        vec![("is_superuser", on_off(superuser))]
    }

    /// SET SESSION AUTHORIZATION, checked by the session: the session user from now (and
    /// no SET ROLE). Returns the settings to report.
    pub fn set_session_authorization(
        &mut self,
        role: &str,
        superuser: bool,
        scope: Scope,
    ) -> Vec<(&'static str, String)> {
        self.put("session_authorization", role.to_string(), scope);
        self.put("role", "none".to_string(), scope);
        self.put("is_superuser", on_off(superuser), scope);
        vec![
            ("session_authorization", role.to_string()),
            ("is_superuser", on_off(superuser)),
        ]
    }

    /// The role privileges are checked as: SET ROLE's, else the session user.
    pub fn current_role(&self) -> String {
        match self.values.get("role").map(String::as_str) {
            Some(role) if role != "none" => role.to_string(),
            _ => self.get("session_authorization").unwrap_or_default(),
        }
    }

    /// Writes a checked value, remembering what `end_transaction` restores.
    fn put(&mut self, canon: &'static str, value: String, scope: Scope) {
        let old = self.values.insert(canon, value);
        match scope {
            Scope::Local => self.local_saved.push((canon, old)),
            Scope::Block if !self.block_saved.iter().any(|(n, _)| *n == canon) => {
                self.block_saved.push((canon, old))
            }
            _ => {}
        }
    }

    /// How a new password is stored.
    pub fn password_encryption(&self) -> auth::password::Encryption {
        self.values
            .get("password_encryption")
            .and_then(|v| auth::password::Encryption::from_setting(v))
            .unwrap_or(auth::password::Encryption::ScramSha256)
    }

    /// End of transaction: undo SET LOCAL, and if it rolled back (not `committed`), every
    /// SET made in it. Returns the reported settings it restored.
    pub fn end_transaction(&mut self, committed: bool) -> Vec<(&'static str, String)> {
        // Nearly every transaction set nothing: then the map is not read at all (with
        // 1,000 sessions its nodes are cold lines at every commit).
        if self.local_saved.is_empty() && self.block_saved.is_empty() {
            return Vec::new();
        }
        let mut undo = std::mem::take(&mut self.local_saved);
        let block = std::mem::take(&mut self.block_saved);
        if !committed {
            // Restored last, so each setting ends as the block found it.
            undo.splice(0..0, block.into_iter().rev());
        }
        let mut changed = Vec::new();
        while let Some((name, old)) = undo.pop() {
            match old {
                Some(v) => self.values.insert(name, v),
                None => self.values.remove(name),
            };
            if let Some((_, default, true)) = canonical(name) {
                changed.push((
                    name,
                    self.values
                        .get(name)
                        .cloned()
                        .unwrap_or_else(|| default.to_string()),
                ));
            }
        }
        self.values_changed();
        changed
    }

    /// The ParameterStatus set sent after authentication.
    pub fn reported(&self) -> Vec<(&'static str, String)> {
        KNOWN
            .iter()
            .filter(|(_, _, r)| *r)
            .map(|(n, d, _)| {
                (
                    *n,
                    self.values.get(n).cloned().unwrap_or_else(|| d.to_string()),
                )
            })
            .collect()
    }

    /// All settings, for pg_settings.
    pub fn all(&self) -> Vec<(String, String)> {
        KNOWN
            .iter()
            .map(|(n, d, _)| {
                (
                    n.to_ascii_lowercase(),
                    self.values.get(n).cloned().unwrap_or_else(|| d.to_string()),
                )
            })
            .collect()
    }
}

fn on_off(on: bool) -> String {
    (if on { "on" } else { "off" }).to_string()
}

fn unrecognized(name: &str) -> PgError {
    PgError::new(
        codes::UNDEFINED_OBJECT,
        format!("unrecognized configuration parameter \"{name}\""),
    )
}

fn invalid(name: &str, value: &str) -> PgError {
    PgError::new(
        codes::INVALID_PARAMETER_VALUE,
        format!(
            "invalid value for parameter \"{}\": \"{value}\"",
            name.to_ascii_lowercase()
        ),
    )
}

/// Normalise values the way PostgreSQL reports them.
fn validate(name: &'static str, v: &str) -> PgResult<String> {
    let lower = v.to_ascii_lowercase();
    Ok(match name {
        "client_encoding" => match lower.replace(['-', '_', '\''], "").as_str() {
            "sqlascii" => "SQL_ASCII".to_string(),
            _ => match wire::ClientEncoding::from_setting(v) {
                Some((_, name)) => name.to_string(),
                None => {
                    return Err(PgError::new(
                        codes::INVALID_PARAMETER_VALUE,
                        format!("invalid value for parameter \"client_encoding\": \"{v}\""),
                    ))
                }
            },
        },
        // Parts of DateStyle not named keep the session's (`Settings::set`); from here,
        // the default's.
        "DateStyle" => datestyle::parse_date_style(v, Style::DEFAULT)?.1,
        "IntervalStyle" => datestyle::parse_interval_style(v)?.1,
        "TimeZone" => Zone::from_setting(v)?.1,
        "password_encryption" => match auth::password::Encryption::from_setting(v) {
            Some(_) => lower,
            None => {
                return Err(PgError::new(
                    codes::INVALID_PARAMETER_VALUE,
                    format!("invalid value for parameter \"password_encryption\": \"{v}\""),
                )
                .with_hint("Available values: md5, scram-sha-256."))
            }
        },
        "standard_conforming_strings" if !matches!(lower.as_str(), "on" | "true" | "1") => {
            return Err(PgError::unsupported("standard_conforming_strings = off"));
        }
        "extra_float_digits" => {
            let n: i32 = v.trim().parse().map_err(|_| invalid(name, v))?;
            if !(-15..=3).contains(&n) {
                return Err(invalid(name, v));
            }
            n.to_string()
        }
        "transaction_isolation" | "default_transaction_isolation" => match lower.as_str() {
            "read committed" | "read uncommitted" => "read committed".to_string(),
            "repeatable read" => "repeatable read".to_string(),
            "serializable" => "serializable".to_string(),
            _ => return Err(invalid(name, v)),
        },
        "synchronous_commit" => match lower.as_str() {
            "on" | "true" | "yes" | "1" | "local" | "remote_write" | "remote_apply" => {
                "on".to_string()
            }
            "off" | "false" | "no" | "0" => "off".to_string(),
            _ => return Err(invalid(name, v)),
        },
        "statement_timeout" | "lock_timeout" | "idle_in_transaction_session_timeout" => {
            format_ms(parse_ms(v).map_err(|_| invalid(name, v))?)
        }
        "log_min_duration_statement" => match v.trim().trim_matches('\'').parse::<i64>() {
            Ok(-1) => "-1".to_string(),
            Ok(n) if n < -1 => {
                return Err(PgError::new(
                    codes::INVALID_PARAMETER_VALUE,
                    format!("{n} ms is outside the valid range for parameter \"log_min_duration_statement\" (-1 .. 2147483647)"),
                ))
            }
            _ => format_ms(parse_ms(v).map_err(|_| invalid(name, v))?),
        },
        "work_mem" | "maintenance_work_mem" => {
            let kb = parse_kb(v).map_err(|_| invalid(name, v))?;
            if !(64..=i32::MAX as u64).contains(&kb) {
                return Err(PgError::new(
                    codes::INVALID_PARAMETER_VALUE,
                    format!("{kb} kB is outside the valid range for parameter \"{}\" (64 .. 2147483647)", name.to_ascii_lowercase()),
                ));
            }
            format_kb(kb)
        }
        "default_transaction_read_only"
        | "transaction_read_only"
        | "row_security"
        | "synchronize_seqscans"
        | "escape_string_warning"
        | "check_function_bodies"
        | "jit"
        | "enable_seqscan"
        | "geqo" => match lower.as_str() {
            "on" | "true" | "yes" | "1" => "on".to_string(),
            "off" | "false" | "no" | "0" => "off".to_string(),
            _ => {
                return Err(PgError::new(
                    codes::INVALID_PARAMETER_VALUE,
                    format!(
                        "parameter \"{}\" requires a Boolean value",
                        name.to_ascii_lowercase()
                    ),
                ))
            }
        },
        _ => v.to_string(),
    })
}

/// A number with an optional unit, as PostgreSQL's GUC parser reads it: `(value, unit)`.
fn number_and_unit(v: &str) -> Option<(f64, &str)> {
    let t = v.trim().trim_matches('\'');
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(t.len());
    let n: f64 = t[..split].parse().ok()?;
    Some((n, t[split..].trim()))
}

/// Duration units in milliseconds, largest first (a bare number is milliseconds).
const TIME_UNITS: &[(&str, f64)] = &[
    ("d", 86_400_000.0),
    ("h", 3_600_000.0),
    ("min", 60_000.0),
    ("s", 1000.0),
    ("ms", 1.0),
    ("us", 0.001),
];
/// Memory units in kB, largest first (a bare number is kB).
const MEMORY_UNITS: &[(&str, f64)] = &[
    ("TB", 1_073_741_824.0),
    ("GB", 1_048_576.0),
    ("MB", 1024.0),
    ("kB", 1.0),
    ("B", 1.0 / 1024.0),
];

/// A setting's value in its base unit, from a number with an optional unit of `units`.
fn parse_in(v: &str, units: &[(&str, f64)], max: f64) -> Result<u64, ()> {
    let (n, unit) = number_and_unit(v).ok_or(())?;
    let scale = if unit.is_empty() {
        1.0
    } else {
        units.iter().find(|(u, _)| *u == unit).ok_or(())?.1
    };
    let value = (n * scale).round();
    if !(0.0..=max).contains(&value) {
        return Err(());
    }
    Ok(value as u64)
}

/// How PostgreSQL shows a value in the base unit of `units` (named `base`): in the
/// largest whole unit that divides it.
fn format_in(value: u64, units: &[(&str, f64)], base: &str) -> String {
    if value == 0 {
        return "0".to_string();
    }
    for (unit, size) in units.iter().filter(|(_, size)| *size > 1.0) {
        let size = *size as u64;
        if value.is_multiple_of(size) {
            return format!("{}{unit}", value / size);
        }
    }
    format!("{value}{base}")
}

fn parse_ms(v: &str) -> Result<u64, ()> {
    parse_in(v, TIME_UNITS, i32::MAX as f64)
}

fn format_ms(ms: u64) -> String {
    format_in(ms, TIME_UNITS, "ms")
}

fn parse_kb(v: &str) -> Result<u64, ()> {
    parse_in(v, MEMORY_UNITS, u64::MAX as f64)
}

fn format_kb(kb: u64) -> String {
    format_in(kb, MEMORY_UNITS, "kB")
}
