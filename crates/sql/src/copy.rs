//! COPY: the statement, read by hand because PostgreSQL's option syntax (`freeze on`,
//! `FORCE_QUOTE *`, the pre-9.0 bare keywords) is wider than sqlparser's, and its
//! options, resolved into a format with PostgreSQL's checks in PostgreSQL's order
//! (`ProcessCopyOptions`), so that a bad combination fails with the same SQLSTATE.

use crate::parse::ParsedStatement;
use pgerror::{codes, PgError, PgResult};

/// `COPY { table [(columns)] | (query) } { FROM STDIN | TO STDOUT } [[WITH] (options)]`.
#[derive(Debug, Clone)]
pub struct CopyStatement {
    pub source: CopySource,
    pub from: bool,
    pub options: Vec<CopyOption>,
}

#[derive(Debug, Clone)]
pub enum CopySource {
    Table {
        name: String,
        columns: Vec<String>,
    },
    /// `COPY (query) TO STDOUT`.
    Query(Box<ParsedStatement>),
}

/// One option: its name (lower case) and its arguments — none (`HEADER`), one word or
/// string (`FORMAT csv`, `NULL ''`), a column list, or `*`.
#[derive(Debug, Clone)]
pub struct CopyOption {
    pub name: String,
    pub args: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyKind {
    Text,
    Csv,
    Binary,
}

/// How COPY's rows are written or read.
#[derive(Debug, Clone)]
pub struct CopyFormat {
    pub kind: CopyKind,
    pub delimiter: u8,
    pub null_string: String,
    pub header: bool,
    /// CSV only.
    pub quote: u8,
    pub escape: u8,
    /// CSV output: fields quoted whatever they hold, by field position (empty: none).
    pub force_quote: Vec<bool>,
}

/// FORCE_QUOTE's columns, resolved by the binder against the copied columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForceQuote {
    None,
    All,
    Columns(Vec<String>),
}

/// Parse a COPY statement (`text` starts with COPY).
pub fn parse(text: &str) -> PgResult<CopyStatement> {
    let body = text.trim().trim_end_matches(';').trim_end();
    let after_copy = body
        .get(4..)
        .ok_or_else(|| syntax_error_at("end of input"))?
        .trim_start();
    let (source, rest) = if after_copy.starts_with('(') {
        let close = matching_paren(after_copy)?;
        let query = crate::parse::parse_statement(after_copy[1..close].trim())?;
        (
            CopySource::Query(Box::new(query)),
            tokens(&after_copy[close + 1..])?,
        )
    } else {
        let t = tokens(after_copy)?;
        let name = t
            .first()
            .map(|x| token_value(x))
            .ok_or_else(|| syntax_error_at("end of input"))?;
        let mut i = 1;
        let mut columns = Vec::new();
        if t.get(i).map(String::as_str) == Some("(") {
            i += 1;
            while let Some(tok) = t.get(i) {
                i += 1;
                match tok.as_str() {
                    ")" => break,
                    "," => {}
                    name => columns.push(token_value(name)),
                }
            }
        }
        (CopySource::Table { name, columns }, t[i..].to_vec())
    };
    let word = |i: usize| rest.get(i).map(|x| x.to_ascii_lowercase());
    let from = match (word(0).as_deref(), word(1).as_deref()) {
        (Some("from"), Some("stdin")) => true,
        (Some("to"), Some("stdout")) => false,
        (Some("from"), Some(_)) => return Err(PgError::unsupported("COPY FROM a file or program")),
        (Some("to"), Some(_)) => return Err(PgError::unsupported("COPY TO a file or program")),
        (tok, _) => return Err(syntax_error_at(tok.unwrap_or("end of input"))),
    };
    if matches!(source, CopySource::Query(_)) && from {
        return Err(syntax_error_at("FROM"));
    }
    let mut i = 2;
    if word(i).as_deref() == Some("with") {
        i += 1;
    }
    let options = if rest.get(i).map(String::as_str) == Some("(") {
        option_list(&rest[i + 1..])?
    } else {
        legacy_options(&rest[i..])?
    };
    Ok(CopyStatement {
        source,
        from,
        options,
    })
}

/// `name [value | (list) | *]` separated by commas, up to the closing parenthesis.
fn option_list(t: &[String]) -> PgResult<Vec<CopyOption>> {
    let mut options = Vec::new();
    let mut i = 0;
    loop {
        let name = t.get(i).ok_or_else(|| syntax_error_at("end of input"))?;
        let mut option = CopyOption {
            name: name.to_ascii_lowercase(),
            args: Vec::new(),
        };
        i += 1;
        match t.get(i).map(String::as_str) {
            Some("(") => {
                i += 1;
                while let Some(tok) = t.get(i) {
                    i += 1;
                    match tok.as_str() {
                        ")" => break,
                        "," => {}
                        v => option.args.push(token_value(v)),
                    }
                }
            }
            Some("," | ")") | None => {}
            Some(v) => {
                option.args.push(token_value(v));
                i += 1;
            }
        }
        options.push(option);
        match t.get(i).map(String::as_str) {
            Some(",") => i += 1,
            Some(")") if i + 1 == t.len() => return Ok(options),
            tok => return Err(syntax_error_at(tok.unwrap_or("end of input"))),
        }
    }
}

/// The pre-9.0 syntax: `BINARY`, `CSV`, `HEADER`, `DELIMITER [AS] 'x'`, `NULL [AS] 'x'`,
/// `QUOTE [AS] 'x'`, `ESCAPE [AS] 'x'`, `FORCE QUOTE cols | *`, `FORCE NOT NULL cols`.
fn legacy_options(t: &[String]) -> PgResult<Vec<CopyOption>> {
    let mut options = Vec::new();
    let mut i = 0;
    let value = |i: &mut usize| -> PgResult<String> {
        if t.get(*i).is_some_and(|w| w.eq_ignore_ascii_case("as")) {
            *i += 1;
        }
        let v = t.get(*i).ok_or_else(|| syntax_error_at("end of input"))?;
        *i += 1;
        Ok(token_value(v))
    };
    let columns = |i: &mut usize| -> Vec<String> {
        let mut cols = Vec::new();
        while let Some(tok) = t.get(*i) {
            cols.push(token_value(tok));
            *i += 1;
            if t.get(*i).map(String::as_str) != Some(",") {
                break;
            }
            *i += 1;
        }
        cols
    };
    while let Some(tok) = t.get(i) {
        i += 1;
        let name = tok.to_ascii_lowercase();
        let option = |name: &str, args: Vec<String>| CopyOption {
            name: name.into(),
            args,
        };
        options.push(match name.as_str() {
            "binary" => option("format", vec!["binary".into()]),
            "csv" => option("format", vec!["csv".into()]),
            "header" => option("header", Vec::new()),
            "delimiter" | "null" | "quote" | "escape" => option(&name, vec![value(&mut i)?]),
            "force" => {
                let next = t.get(i).map(|w| w.to_ascii_lowercase());
                match next.as_deref() {
                    Some("quote") => {
                        i += 1;
                        if t.get(i).map(String::as_str) == Some("*") {
                            i += 1;
                            option("force_quote", vec!["*".into()])
                        } else {
                            option("force_quote", columns(&mut i))
                        }
                    }
                    Some("not") if t.get(i + 1).is_some_and(|w| w.eq_ignore_ascii_case("null")) => {
                        i += 2;
                        option("force_not_null", columns(&mut i))
                    }
                    _ => return Err(syntax_error_at(tok)),
                }
            }
            _ => return Err(syntax_error_at(tok)),
        });
    }
    Ok(options)
}

/// Resolve the options as PostgreSQL does, in its order of checks.
pub fn format(options: &[CopyOption], from: bool) -> PgResult<(CopyFormat, ForceQuote)> {
    let mut kind = None;
    let mut seen: Vec<&str> = Vec::new();
    let (mut delimiter, mut null_string, mut quote, mut escape) = (None, None, None, None);
    let mut header = false;
    let mut force_quote = ForceQuote::None;
    let mut force_not_null = false;
    let mut force_null = false;
    for o in options {
        if seen.contains(&o.name.as_str()) {
            return Err(PgError::new(
                codes::SYNTAX_ERROR,
                "conflicting or redundant options",
            ));
        }
        seen.push(&o.name);
        let arg = o.args.first().map(String::as_str);
        let string = || -> PgResult<String> {
            arg.map(str::to_string).ok_or_else(|| {
                PgError::new(
                    codes::SYNTAX_ERROR,
                    format!("{} requires a parameter", o.name),
                )
            })
        };
        match o.name.as_str() {
            "format" => {
                kind = Some(match string()?.to_ascii_lowercase().as_str() {
                    "text" => CopyKind::Text,
                    "csv" => CopyKind::Csv,
                    "binary" => CopyKind::Binary,
                    other => {
                        return Err(PgError::new(
                            codes::INVALID_PARAMETER_VALUE,
                            format!("COPY format \"{other}\" not recognized"),
                        ))
                    }
                })
            }
            "freeze" => {
                boolean(&o.name, arg)?;
            }
            "delimiter" => delimiter = Some(string()?),
            "null" => null_string = Some(string()?),
            "header" => {
                if arg.is_some_and(|a| a.eq_ignore_ascii_case("match")) {
                    if !from {
                        return Err(PgError::new(
                            codes::FEATURE_NOT_SUPPORTED,
                            "cannot use \"match\" with HEADER in COPY TO",
                        ));
                    }
                    return Err(PgError::unsupported("HEADER MATCH"));
                }
                header = boolean(&o.name, arg)?;
            }
            "quote" => quote = Some(string()?),
            "escape" => escape = Some(string()?),
            "force_quote" => {
                force_quote = match o.args.as_slice() {
                    [star] if star == "*" => ForceQuote::All,
                    cols => ForceQuote::Columns(cols.to_vec()),
                }
            }
            "force_not_null" => force_not_null = true,
            "force_null" => force_null = true,
            "encoding" => {
                let e = string()?.to_ascii_lowercase().replace(['-', '_'], "");
                if e != "utf8" && e != "unicode" {
                    return Err(PgError::unsupported(format!(
                        "COPY encoding \"{}\"",
                        string()?
                    )));
                }
            }
            other => {
                return Err(PgError::new(
                    codes::SYNTAX_ERROR,
                    format!("option \"{other}\" not recognized"),
                ))
            }
        }
    }
    let kind = kind.unwrap_or(CopyKind::Text);
    let csv = kind == CopyKind::Csv;
    let not_supported = |m: &str| Err(PgError::new(codes::FEATURE_NOT_SUPPORTED, m.to_string()));
    let invalid = |m: String| Err(PgError::new(codes::INVALID_PARAMETER_VALUE, m));
    if kind == CopyKind::Binary && delimiter.is_some() {
        return Err(PgError::new(
            codes::SYNTAX_ERROR,
            "cannot specify DELIMITER in BINARY mode",
        ));
    }
    if kind == CopyKind::Binary && null_string.is_some() {
        return Err(PgError::new(
            codes::SYNTAX_ERROR,
            "cannot specify NULL in BINARY mode",
        ));
    }
    let delimiter = delimiter.unwrap_or_else(|| (if csv { "," } else { "\t" }).into());
    let null_string = null_string.unwrap_or_else(|| (if csv { "" } else { "\\N" }).into());
    if delimiter.len() != 1 {
        return not_supported("COPY delimiter must be a single one-byte character");
    }
    let d = delimiter.as_bytes()[0];
    if d == b'\n' || d == b'\r' {
        return invalid("COPY delimiter cannot be newline or carriage return".into());
    }
    if null_string.contains(['\n', '\r']) {
        return invalid("COPY null representation cannot use newline or carriage return".into());
    }
    if !csv && b"\\.abcdefghijklmnopqrstuvwxyz0123456789".contains(&d) {
        return invalid(format!("COPY delimiter cannot be \"{delimiter}\""));
    }
    if kind == CopyKind::Binary && header {
        return not_supported("cannot specify HEADER in BINARY mode");
    }
    if !csv && quote.is_some() {
        return not_supported("COPY quote available only in CSV mode");
    }
    let quote = quote.unwrap_or_else(|| "\"".into());
    if csv && quote.len() != 1 {
        return not_supported("COPY quote must be a single one-byte character");
    }
    if csv && quote.as_bytes()[0] == d {
        return invalid("COPY delimiter and quote must be different".into());
    }
    if !csv && escape.is_some() {
        return not_supported("COPY escape available only in CSV mode");
    }
    let escape = escape.unwrap_or_else(|| quote.clone());
    if csv && escape.len() != 1 {
        return not_supported("COPY escape must be a single one-byte character");
    }
    if force_quote != ForceQuote::None {
        if !csv {
            return not_supported("COPY force quote available only in CSV mode");
        }
        if from {
            return not_supported("COPY force quote only available using COPY TO");
        }
    }
    if force_not_null {
        if !csv {
            return not_supported("COPY force not null available only in CSV mode");
        }
        if !from {
            return not_supported("COPY force not null only available using COPY FROM");
        }
        return Err(PgError::unsupported("COPY FORCE_NOT_NULL"));
    }
    if force_null {
        if !csv {
            return not_supported("COPY force null available only in CSV mode");
        }
        if !from {
            return not_supported("COPY force null only available using COPY FROM");
        }
        return Err(PgError::unsupported("COPY FORCE_NULL"));
    }
    if null_string.as_bytes().contains(&d) {
        return not_supported("COPY delimiter must not appear in the NULL specification");
    }
    if csv && null_string.as_bytes().contains(&quote.as_bytes()[0]) {
        return not_supported("CSV quote character must not appear in the NULL specification");
    }
    Ok((
        CopyFormat {
            kind,
            delimiter: d,
            null_string,
            header,
            quote: quote.as_bytes().first().copied().unwrap_or(b'"'),
            escape: escape.as_bytes().first().copied().unwrap_or(b'"'),
            force_quote: Vec::new(),
        },
        force_quote,
    ))
}

/// An option's Boolean argument; none means true.
fn boolean(name: &str, arg: Option<&str>) -> PgResult<bool> {
    match arg.map(str::to_ascii_lowercase).as_deref() {
        None | Some("true" | "on" | "1") => Ok(true),
        Some("false" | "off" | "0") => Ok(false),
        Some(_) => Err(PgError::new(
            codes::SYNTAX_ERROR,
            format!("{name} requires a Boolean value"),
        )),
    }
}

/// Where the parenthesis opening `s` closes (quotes respected).
fn matching_paren(s: &str) -> PgResult<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => {
                depth -= 1;
                if depth == 0 {
                    return Ok(i);
                }
            }
            _ => {}
        }
    }
    Err(syntax_error_at("end of input"))
}

/// Words, quoted strings (kept with their opening quote), parentheses and commas.
fn tokens(text: &str) -> PgResult<Vec<String>> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' | ')' | ',' => {
                tokens.push(c.to_string());
                chars.next();
            }
            '\'' | '"' => {
                let quote = c;
                chars.next();
                let mut s = String::from(quote);
                loop {
                    match chars.next() {
                        Some(x) if x == quote && chars.peek() == Some(&quote) => {
                            s.push(quote);
                            chars.next();
                        }
                        Some(x) if x == quote => break,
                        Some(x) => s.push(x),
                        None => {
                            return Err(PgError::new(
                                codes::SYNTAX_ERROR,
                                "unterminated quoted string in COPY",
                            ))
                        }
                    }
                }
                tokens.push(s);
            }
            _ => {
                let mut w = String::new();
                while let Some(&x) = chars.peek() {
                    if x.is_whitespace() || matches!(x, '(' | ')' | ',') {
                        break;
                    }
                    w.push(x);
                    chars.next();
                }
                tokens.push(w);
            }
        }
    }
    Ok(tokens)
}

/// An identifier or string token: quoted keeps its case, bare folds to lower case.
fn token_value(t: &str) -> String {
    match t.chars().next() {
        Some('\'') | Some('"') => t[1..].to_string(),
        _ => t.to_ascii_lowercase(),
    }
}

fn syntax_error_at(token: &str) -> PgError {
    PgError::new(
        codes::SYNTAX_ERROR,
        format!("syntax error at or near \"{token}\""),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> CopyStatement {
        parse(text).unwrap()
    }

    #[test]
    fn table_with_columns_and_options() {
        let c = parsed("COPY t (a, \"B\") TO STDOUT WITH (FORMAT csv, FORCE_QUOTE (a), HEADER)");
        assert!(!c.from);
        assert!(matches!(&c.source, CopySource::Table { name, columns }
            if name == "t" && columns == &["a".to_string(), "B".to_string()]));
        let names: Vec<_> = c.options.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["format", "force_quote", "header"]);
        assert_eq!(c.options[1].args, ["a"]);
    }

    #[test]
    fn query_source_keeps_its_text() {
        let c = parsed("copy (select ')' as x, (1)) to stdout (format binary);");
        match &c.source {
            CopySource::Query(q) => assert_eq!(q.text, "select ')' as x, (1)"),
            other => panic!("{other:?}"),
        }
        assert_eq!(c.options[0].args, ["binary"]);
    }

    #[test]
    fn legacy_keywords() {
        let c = parsed("COPY t TO STDOUT WITH CSV HEADER DELIMITER AS ';' FORCE QUOTE *");
        let (f, force) = format(&c.options, false).unwrap();
        assert_eq!(f.kind, CopyKind::Csv);
        assert!(f.header);
        assert_eq!(f.delimiter, b';');
        assert_eq!(force, ForceQuote::All);
    }

    #[test]
    fn checks_in_postgres_order() {
        let err = |text: &str, from: bool| format(&parsed(text).options, from).unwrap_err();
        assert_eq!(
            err("COPY t TO STDOUT (FORMAT binary, DELIMITER ',')", false).code,
            codes::SYNTAX_ERROR
        );
        assert_eq!(
            err("COPY t TO STDOUT (DELIMITER 'ab')", false).code,
            codes::FEATURE_NOT_SUPPORTED
        );
        assert_eq!(
            err("COPY t TO STDOUT (DELIMITER 'a')", false).code,
            codes::INVALID_PARAMETER_VALUE
        );
        assert_eq!(
            err("COPY t FROM STDIN (FORMAT csv, FORCE_QUOTE *)", true).message,
            "COPY force quote only available using COPY TO"
        );
        assert_eq!(
            err("COPY t TO STDOUT (FORMAT csv, FORMAT csv)", false).message,
            "conflicting or redundant options"
        );
    }
}
