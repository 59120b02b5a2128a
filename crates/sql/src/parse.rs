//! Text → statements. Splits a query string into statements the way PostgreSQL's lexer
//! does (quotes, comments, dollar quoting), answers the statements that need no catalog
//! (transaction control, SET/SHOW, VACUUM) with a hand-written fast path, and hands the
//! rest to `sqlparser`.

use crate::distribute_by::{char_position, take_distribute_by, DistributeBy};
use crate::plan::{IsolationLevel, Statement};
use crate::prepared_xact::prepared_xact_statement;
use pgerror::{codes, PgError, PgResult};
pub use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Location;

#[derive(Debug, Clone)]
pub enum Parsed {
    /// Fully understood without the catalog.
    Ready(Statement),
    /// `VACUUM [ANALYZE] [table, …]` or `ANALYZE [table, …]` — table names still to
    /// resolve.
    Vacuum {
        tables: Vec<String>,
        vacuum: bool,
        analyze: bool,
    },
    /// A CREATE TABLE with Postgres-XL's `DISTRIBUTE BY`, which sqlparser does not know:
    /// the clause is read by hand and the rest parsed without it.
    CreateTable {
        table: Box<ast::CreateTable>,
        distribute_by: DistributeBy,
    },
    /// COPY, parsed by hand (`crate::copy`).
    Copy(crate::copy::CopyStatement),
    Sql(Box<ast::Statement>),
}

/// One statement of a query string, with its text (for logs and error positions).
#[derive(Debug, Clone)]
pub struct ParsedStatement {
    pub parsed: Parsed,
    pub text: String,
}

impl ParsedStatement {
    /// COMMIT/ROLLBACK/ROLLBACK TO: the statements a failed transaction block accepts.
    pub fn ends_failed_transaction(&self) -> bool {
        matches!(&self.parsed, Parsed::Ready(s) if s.ends_failed_transaction())
    }
}

/// Split `sql` at top-level semicolons. Empty statements are dropped.
pub fn split_statements(sql: &str) -> Vec<&str> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' | b'"' => {
                let quote = bytes[i];
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == quote {
                        if i + 1 < bytes.len() && bytes[i + 1] == quote {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = block_comment_end(bytes, i).unwrap_or(bytes.len())
            }
            b'$' => {
                // Dollar quote: $tag$ … $tag$ (a bare $1 parameter has a digit after '$').
                let tag_end = bytes[i + 1..]
                    .iter()
                    .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'));
                match tag_end {
                    Some(len)
                        if bytes[i + 1 + len] == b'$'
                            && !bytes.get(i + 1).is_some_and(u8::is_ascii_digit) =>
                    {
                        let tag = &sql[i..i + len + 2];
                        let body_start = i + len + 2;
                        i = match sql[body_start..].find(tag) {
                            Some(p) => body_start + p + tag.len(),
                            None => bytes.len(),
                        };
                    }
                    _ => i += 1,
                }
            }
            b';' => {
                push_nonempty(&mut out, &sql[start..i]);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    push_nonempty(&mut out, &sql[start..sql.len().min(bytes.len())]);
    out
}

/// The index just past the (nested) `/* … */` comment that starts at `start`, or None when
/// it is not terminated.
pub(crate) fn block_comment_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0;
    let mut i = start;
    while i < bytes.len() {
        if bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return Some(i);
            }
        } else {
            i += 1;
        }
    }
    None
}

fn push_nonempty<'a>(out: &mut Vec<&'a str>, s: &'a str) {
    if !is_blank(s) {
        out.push(s.trim());
    }
}

/// Whitespace and comments only.
fn is_blank(s: &str) -> bool {
    let mut rest = s.trim_start();
    loop {
        if rest.is_empty() {
            return true;
        }
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.find('\n').map(|p| &r[p..]).unwrap_or("").trim_start();
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map(|p| &r[p + 2..]).unwrap_or("").trim_start();
        } else {
            return false;
        }
    }
}

/// Parse every statement in a query string.
pub fn parse(sql: &str) -> PgResult<Vec<ParsedStatement>> {
    split_statements(sql)
        .into_iter()
        .map(parse_statement)
        .collect()
}

/// Parse one statement as returned by `split_statements`.
pub fn parse_statement(text: &str) -> PgResult<ParsedStatement> {
    Ok(ParsedStatement {
        parsed: parse_one(text)?,
        text: text.to_string(),
    })
}

fn parse_one(text: &str) -> PgResult<Parsed> {
    if let Some(p) = fast_path(text)? {
        return Ok(p);
    }
    let distribute_by = take_distribute_by(text)?;
    let drop_index = crate::drop_index::without_concurrently(text);
    let sql = distribute_by
        .as_ref()
        .map(|(rest, _)| rest.as_str())
        .or(drop_index.as_deref())
        .unwrap_or(text);
    let reordered = crate::sequence::identity_options_in_order(sql)?;
    let sql = reordered.as_deref().unwrap_or(sql);
    let mut ctas_columns = crate::ctas_columns::take_column_names(sql);
    let sql = ctas_columns.as_ref().map_or(sql, |(rest, _)| rest.as_str());
    let unqualified = crate::builtin_operators::unqualified_before_any(sql);
    let sql = unqualified.as_deref().unwrap_or(sql);
    let mut stmts = Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(|e| {
        let message = e.to_string();
        match found_token(&message) {
            // sqlparser reads no frame exclusion (PostgreSQL does): refused, not a
            // syntax error
            Some(t) if t.eq_ignore_ascii_case("exclude") && is_window_frame_context(text) => {
                PgError::unsupported("EXCLUDE in a window frame")
            }
            _ => syntax_error(text, &message),
        }
    })?;
    if let (Some((_, names)), [statement]) = (ctas_columns.take(), stmts.as_mut_slice()) {
        crate::ctas_columns::restore(statement, names);
    }
    match stmts.len() {
        1 => match (stmts.remove(0), distribute_by) {
            (ast::Statement::CreateTable(table), Some((_, distribute_by))) => {
                Ok(Parsed::CreateTable {
                    table: Box::new(table),
                    distribute_by,
                })
            }
            // take_distribute_by finds the clause only after CREATE TABLE's column list.
            (_, Some(_)) => Err(syntax_error_at("DISTRIBUTE")),
            (statement, None) => Ok(Parsed::Sql(Box::new(statement))),
        },
        0 => Ok(Parsed::Ready(Statement::Empty)),
        _ => Err(PgError::new(
            codes::SYNTAX_ERROR,
            "syntax error: unexpected statement separator",
        )),
    }
}

/// Words of a statement, lower-cased, with a trailing `;` and comments removed.
/// CREATE EXTENSION and DROP EXTENSION. pg_stat_statements, the one extension there is,
/// is always loaded (as with PostgreSQL's shared_preload_libraries), so both only
/// answer; no other extension is available.
fn extension_statement(text: &str) -> PgResult<Option<Statement>> {
    let w = words(text);
    let (tag, rest) = match w.as_slice() {
        [create, extension, rest @ ..] if create == "create" && extension == "extension" => {
            ("CREATE EXTENSION", rest)
        }
        [drop, extension, rest @ ..] if drop == "drop" && extension == "extension" => {
            ("DROP EXTENSION", rest)
        }
        _ => return Ok(None),
    };
    let rest = match rest {
        [if_, not, exists, rest @ ..] if if_ == "if" && not == "not" && exists == "exists" => rest,
        [if_, exists, rest @ ..] if if_ == "if" && exists == "exists" => rest,
        _ => rest,
    };
    let Some(name) = rest.first() else {
        return Ok(None);
    };
    if name.trim_matches('"') != "pg_stat_statements" {
        return Err(PgError::new(
            codes::UNDEFINED_OBJECT,
            format!("extension \"{}\" is not available", name.trim_matches('"')),
        ));
    }
    Ok(Some(Statement::Extension(tag)))
}

fn words(text: &str) -> Vec<String> {
    text.trim_end_matches(';')
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_lowercase())
        .collect()
}

fn fast_path(text: &str) -> PgResult<Option<Parsed>> {
    let first = text
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_end_matches(';')
        .to_ascii_lowercase();
    let ready = |s| Ok(Some(Parsed::Ready(s)));
    match first.as_str() {
        "prepare" | "commit" | "rollback" => {
            if let Some(s) = prepared_xact_statement(text)? {
                return ready(s);
            }
            if first == "prepare" {
                return Ok(None);
            }
            transaction_statement(text).map(|s| s.map(Parsed::Ready))
        }
        "begin" | "start" | "end" | "abort" | "savepoint" | "release" => {
            transaction_statement(text).map(|s| s.map(Parsed::Ready))
        }
        "set" => set_statement(text).map(|s| s.map(Parsed::Ready)),
        "reset" => {
            let w = words(text);
            match w.as_slice() {
                [_, name] => ready(Statement::Set {
                    name: name.clone(),
                    value: None,
                    local: false,
                    reset: true,
                }),
                [_, session, authorization]
                    if session == "session" && authorization == "authorization" =>
                {
                    ready(Statement::Set {
                        name: "session_authorization".into(),
                        value: None,
                        local: false,
                        reset: true,
                    })
                }
                _ => Ok(None),
            }
        }
        "show" => {
            let w = words(text);
            match w.as_slice() {
                [_, rest @ ..] if !rest.is_empty() => {
                    // PostgreSQL names the result column after the parameter's own name.
                    let name = match rest.join(" ").to_ascii_lowercase().as_str() {
                        "transaction isolation level" => "transaction_isolation".to_string(),
                        "session authorization" => "session_authorization".to_string(),
                        "time zone" | "timezone" => "TimeZone".to_string(),
                        "datestyle" => "DateStyle".to_string(),
                        "intervalstyle" => "IntervalStyle".to_string(),
                        _ => rest.join(" "),
                    };
                    ready(Statement::Show { name })
                }
                _ => Ok(None),
            }
        }
        "discard" => ready(Statement::Discard),
        "lock" => Ok(lock_statement(text).map(Parsed::Ready)),
        "deallocate" => {
            let w = words(text);
            let rest: Vec<&String> = w.iter().skip(1).filter(|x| *x != "prepare").collect();
            match rest.as_slice() {
                [all] if *all == "all" => ready(Statement::Deallocate(None)),
                [name] => ready(Statement::Deallocate(Some(ident(text, name)))),
                _ => Ok(None),
            }
        }
        "copy" => crate::copy::parse(text).map(|c| Some(Parsed::Copy(c))),
        "grant" | "revoke" => Ok(crate::role::parse_membership(text)?.map(Parsed::Ready)),
        "create" | "alter" | "drop" => {
            let statement = match crate::sequence::parse_statement(text)? {
                Some(s) => Some(s),
                None if let Some(s) = crate::role::parse_statement(text)? => Some(s),
                None if let Some(s) = extension_statement(text)? => Some(s),
                None if first == "alter" => crate::view::parse_rename(text)?,
                None => None,
            };
            Ok(statement.map(Parsed::Ready))
        }
        "vacuum" | "analyze" => {
            let mut w = words(text);
            let vacuum = first == "vacuum";
            let analyze = w.iter().any(|x| x == "analyze");
            w.retain(|x| {
                !matches!(
                    x.as_str(),
                    "vacuum" | "analyze" | "full" | "freeze" | "verbose"
                )
            });
            if w.iter().any(|x| x.contains('(')) {
                return Ok(None);
            }
            Ok(Some(Parsed::Vacuum {
                tables: w,
                vacuum,
                analyze,
            }))
        }
        _ => Ok(None),
    }
}

fn isolation_from(words: &[String]) -> PgResult<(Option<IsolationLevel>, Option<bool>)> {
    let mut isolation = None;
    let mut read_only = None;
    let mut i = 0;
    while i < words.len() {
        match words[i].as_str() {
            "isolation" if words.get(i + 1).map(String::as_str) == Some("level") => {
                let level = words.get(i + 2).map(String::as_str).unwrap_or("");
                let next = words.get(i + 3).map(String::as_str).unwrap_or("");
                isolation = Some(match (level, next) {
                    ("read", "committed") | ("read", "uncommitted") => {
                        IsolationLevel::ReadCommitted
                    }
                    ("repeatable", "read") => IsolationLevel::RepeatableRead,
                    ("serializable", _) => IsolationLevel::Serializable,
                    _ => return Err(syntax_error_at(level)),
                });
                i += if level == "serializable" { 3 } else { 4 };
            }
            "read" if words.get(i + 1).map(String::as_str) == Some("only") => {
                read_only = Some(true);
                i += 2;
            }
            "read" if words.get(i + 1).map(String::as_str) == Some("write") => {
                read_only = Some(false);
                i += 2;
            }
            "deferrable" | "not" | "transaction" | "work" => i += 1,
            other => return Err(syntax_error_at(other)),
        }
    }
    Ok((isolation, read_only))
}

fn transaction_statement(text: &str) -> PgResult<Option<Statement>> {
    let w = words(text);
    let rest: Vec<String> = w.iter().skip(1).cloned().collect();
    let only_noise = |r: &[String]| r.iter().all(|x| x == "transaction" || x == "work");
    Ok(Some(match w[0].as_str() {
        "begin" => {
            let (isolation, read_only) = isolation_from(&rest)?;
            Statement::Begin {
                isolation,
                read_only,
            }
        }
        "start" if rest.first().map(String::as_str) == Some("transaction") => {
            let (isolation, read_only) = isolation_from(&rest[1..])?;
            Statement::Begin {
                isolation,
                read_only,
            }
        }
        "commit" | "end" if only_noise(&rest) => Statement::Commit,
        "rollback" | "abort" if only_noise(&rest) => Statement::Rollback,
        "rollback" => {
            // ROLLBACK [WORK|TRANSACTION] TO [SAVEPOINT] name
            let mut r = rest
                .iter()
                .filter(|x| !matches!(x.as_str(), "work" | "transaction"));
            match (r.next().map(String::as_str), r.next(), r.next(), r.next()) {
                (Some("to"), Some(sp), Some(name), None) if sp == "savepoint" => {
                    Statement::RollbackTo(ident(text, name))
                }
                (Some("to"), Some(name), None, None) => Statement::RollbackTo(ident(text, name)),
                _ => return Ok(None),
            }
        }
        "savepoint" if rest.len() == 1 => Statement::Savepoint(ident(text, &rest[0])),
        "release" => match rest.as_slice() {
            [sp, name] if sp == "savepoint" => Statement::Release(ident(text, name)),
            [name] => Statement::Release(ident(text, name)),
            _ => return Ok(None),
        },
        _ => return Ok(None),
    }))
}

/// LOCK [TABLE] [ONLY] name [*], … IN ACCESS SHARE MODE [NOWAIT]; None for any other mode
/// (the binder then refuses the statement).
fn lock_statement(text: &str) -> Option<Statement> {
    let w = words(text);
    let at = w.iter().position(|x| x == "in")?;
    if w[at..] != ["in", "access", "share", "mode"]
        && w[at..] != ["in", "access", "share", "mode", "nowait"]
    {
        return None;
    }
    let names = w[1..at]
        .iter()
        .filter(|x| !matches!(x.as_str(), "table" | "only" | "*"))
        .map(|x| {
            let name = ident(text, x.trim_end_matches('*'));
            match name.split_once('.') {
                Some((schema, table)) => (
                    Some(schema.trim_matches('"').to_string()),
                    table.trim_matches('"').to_string(),
                ),
                None => (None, name),
            }
        })
        .collect::<Vec<_>>();
    (!names.is_empty()).then_some(Statement::LockTables(names))
}

/// A savepoint name as written: quoted names keep their case, others fold to lower case.
fn ident(text: &str, lowered: &str) -> String {
    if lowered.starts_with('"') {
        // Find the original spelling in the text.
        let orig = text
            .split_whitespace()
            .find(|w| w.eq_ignore_ascii_case(lowered.trim_end_matches(';')));
        orig.unwrap_or(lowered)
            .trim_end_matches(';')
            .trim_matches('"')
            .to_string()
    } else {
        lowered.to_string()
    }
}

fn set_statement(text: &str) -> PgResult<Option<Statement>> {
    let body = text.trim().trim_end_matches(';').trim();
    let mut rest = body[3..].trim_start();
    let mut local = false;
    let lower = rest.to_ascii_lowercase();
    // No constraint is deferrable (CREATE TABLE refuses DEFERRABLE): refused, so that
    // nobody believes a check was deferred.
    if lower.starts_with("constraints")
        && words(&lower).first().map(String::as_str) == Some("constraints")
    {
        return Err(PgError::unsupported("SET CONSTRAINTS"));
    }
    if lower.starts_with("session characteristics as transaction") {
        let w = words(&rest["session characteristics as transaction".len()..]);
        let (isolation, read_only) = isolation_from(&w)?;
        let mut stmts = Vec::new();
        if let Some(level) = isolation {
            let v = match level {
                IsolationLevel::ReadCommitted => "read committed",
                IsolationLevel::RepeatableRead => "repeatable read",
                IsolationLevel::Serializable => "serializable",
            };
            stmts.push(Statement::Set {
                name: "default_transaction_isolation".into(),
                value: Some(v.into()),
                local: false,
                reset: false,
            });
        }
        if let Some(ro) = read_only {
            stmts.push(Statement::Set {
                name: "default_transaction_read_only".into(),
                value: Some(if ro { "on" } else { "off" }.into()),
                local: false,
                reset: false,
            });
        }
        return Ok(stmts.into_iter().next());
    }
    if lower.starts_with("transaction") {
        let (isolation, read_only) = isolation_from(&words(&rest["transaction".len()..]))?;
        return Ok(Some(Statement::SetTransaction {
            isolation,
            read_only,
        }));
    }
    if lower.starts_with("session ") {
        rest = rest[8..].trim_start();
    } else if lower.starts_with("local ") {
        rest = rest[6..].trim_start();
        local = true;
    }
    let lower = rest.to_ascii_lowercase();
    if let Some(role) = role_setting(&lower, rest) {
        return role.map(|(name, value)| {
            Some(Statement::Set {
                name: name.into(),
                value,
                local,
                reset: false,
            })
        });
    }
    let (name, value) = if lower.starts_with("time zone") {
        ("timezone".to_string(), rest[9..].trim())
    } else if lower.starts_with("names") {
        ("client_encoding".to_string(), rest[5..].trim())
    } else {
        let end = rest
            .find(|c: char| c.is_whitespace() || c == '=')
            .unwrap_or(rest.len());
        let name = rest[..end].trim_matches('"').to_ascii_lowercase();
        let mut v = rest[end..].trim_start();
        if let Some(s) = v.strip_prefix('=') {
            v = s.trim_start();
        } else if v.len() >= 2 && v[..2].eq_ignore_ascii_case("to") {
            v = v[2..].trim_start();
        } else {
            return Err(syntax_error_at(
                v.split_whitespace().next().unwrap_or("end of input"),
            ));
        }
        (name, v)
    };
    if name.is_empty() || value.is_empty() {
        return Err(PgError::new(
            codes::SYNTAX_ERROR,
            "syntax error at end of input",
        ));
    }
    let value = if value.eq_ignore_ascii_case("default")
        || value.eq_ignore_ascii_case("local") && name == "timezone"
    {
        None
    } else {
        Some(
            value
                .split(',')
                .map(|part| {
                    let p = part.trim();
                    if p.len() >= 2 && (p.starts_with('\'') && p.ends_with('\'')) {
                        p[1..p.len() - 1].replace("''", "'")
                    } else {
                        p.trim_matches('"').to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(", "),
        )
    };
    Ok(Some(Statement::Set {
        name,
        value,
        local,
        reset: false,
    }))
}

/// `SET [SESSION | LOCAL] ROLE name | NONE` and `SET [SESSION | LOCAL] SESSION
/// AUTHORIZATION name | DEFAULT` (`rest` after SET's SESSION or LOCAL, `lower` its
/// lowercase): the setting and the role, an identifier folded to lowercase unless quoted;
/// None when `rest` is neither.
fn role_setting(lower: &str, rest: &str) -> Option<PgResult<(&'static str, Option<String>)>> {
    let (name, at) = if let Some(after) = lower.strip_prefix("session authorization") {
        ("session_authorization", lower.len() - after.len())
    } else if let Some(after) = lower.strip_prefix("authorization") {
        ("session_authorization", lower.len() - after.len())
    } else if let Some(after) = lower.strip_prefix("role") {
        ("role", lower.len() - after.len())
    } else {
        return None;
    };
    if !rest[at..].starts_with(char::is_whitespace) {
        return None;
    }
    // `SET role = x` and `SET role TO x` are the ordinary setting's forms of `SET ROLE x`.
    let value = rest[at..].trim();
    let value = match value.strip_prefix('=') {
        Some(v) => v.trim_start(),
        None if value.len() > 3 && value[..3].eq_ignore_ascii_case("to ") => value[3..].trim(),
        None => value,
    };
    let unquoted = |q: char| {
        (value.len() >= 2 && value.starts_with(q) && value.ends_with(q))
            .then(|| value[1..value.len() - 1].replace(&format!("{q}{q}"), &q.to_string()))
    };
    let role = match unquoted('\'').or_else(|| unquoted('"')) {
        Some(quoted) => quoted,
        None if value.is_empty() || value.contains(char::is_whitespace) => {
            return Some(Err(syntax_error_at(
                value.split_whitespace().nth(1).unwrap_or("end of input"),
            )))
        }
        None => value.to_ascii_lowercase(),
    };
    if name == "role" && value.eq_ignore_ascii_case("default") {
        return Some(Err(syntax_error_at(value)));
    }
    let reset = match name {
        "role" => role == "none" && !value.starts_with('"'),
        _ => value.eq_ignore_ascii_case("default"),
    };
    Some(Ok((name, (!reset).then_some(role))))
}

fn syntax_error_at(token: &str) -> PgError {
    PgError::new(
        codes::SYNTAX_ERROR,
        format!("syntax error at or near \"{token}\""),
    )
}

/// The token a sqlparser message says it found instead of what it expected.
fn found_token(message: &str) -> Option<&str> {
    message
        .split("found: ")
        .nth(1)
        .map(|r| r.split(" at Line:").next().unwrap_or(r).trim())
}

/// Whether `text` has a window (OVER or WINDOW) for a frame's EXCLUDE to belong to.
fn is_window_frame_context(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.contains("over") || lower.contains("window")
}

/// Turn a sqlparser message into PostgreSQL's "syntax error at or near" with a position.
fn syntax_error(text: &str, message: &str) -> PgError {
    let found = found_token(message);
    let position = message.split("Line: ").nth(1).and_then(|r| {
        let mut it = r.split(", Column: ");
        let line = it.next()?.trim().parse().ok()?;
        let column = it
            .next()?
            .trim()
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()?;
        Some(char_position(text, Location { line, column }))
    });
    let err = match found {
        Some("EOF") | None => PgError::new(codes::SYNTAX_ERROR, "syntax error at end of input"),
        Some(tok) => syntax_error_at(tok),
    };
    match position {
        Some(p) => err.with_position(p),
        None => err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_respecting_quotes_and_comments() {
        let s = split_statements("select ';'; -- x;\n select $$a;b$$; /* c; */ select 1;;");
        assert_eq!(
            s,
            vec!["select ';'", "-- x;\n select $$a;b$$", "/* c; */ select 1"]
        );
    }

    #[test]
    fn transaction_fast_paths() {
        assert!(matches!(
            parse_one("BEGIN;").unwrap(),
            Parsed::Ready(Statement::Begin {
                isolation: None,
                ..
            })
        ));
        assert!(matches!(
            parse_one("end").unwrap(),
            Parsed::Ready(Statement::Commit)
        ));
        assert!(matches!(
            parse_one("begin isolation level repeatable read").unwrap(),
            Parsed::Ready(Statement::Begin {
                isolation: Some(IsolationLevel::RepeatableRead),
                ..
            })
        ));
        assert!(
            matches!(parse_one("rollback to savepoint a").unwrap(), Parsed::Ready(Statement::RollbackTo(n)) if n == "a")
        );
    }

    #[test]
    fn set_forms() {
        match parse_one("SET extra_float_digits = 3").unwrap() {
            Parsed::Ready(Statement::Set { name, value, .. }) => {
                assert_eq!(name, "extra_float_digits");
                assert_eq!(value.as_deref(), Some("3"));
            }
            other => panic!("{other:?}"),
        }
        match parse_one("set datestyle to 'ISO', 'MDY'").unwrap() {
            Parsed::Ready(Statement::Set { value, .. }) => {
                assert_eq!(value.as_deref(), Some("ISO, MDY"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn frame_exclusion_is_refused_not_a_syntax_error() {
        let e = parse("SELECT sum(x) OVER (ORDER BY x ROWS 1 PRECEDING EXCLUDE TIES) FROM t")
            .unwrap_err();
        assert_eq!(e.code, codes::FEATURE_NOT_SUPPORTED, "{}", e.message);
        let e = parse("SELECT 1 EXCLUDE").unwrap_err();
        assert_eq!(e.code, codes::SYNTAX_ERROR, "{}", e.message);
    }

    #[test]
    fn syntax_errors_name_the_token() {
        let e = parse("selec 1").unwrap_err();
        assert_eq!(e.code, codes::SYNTAX_ERROR);
        assert!(e.message.contains("selec"), "{}", e.message);
    }
}
