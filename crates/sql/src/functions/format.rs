//! Quoting and formatting (issue 31): quote_ident, quote_literal, quote_nullable,
//! format() with PostgreSQL's `%s`, `%I`, `%L`, positions (`%2$s`) and widths (`%-10s`),
//! and to_char of numbers (`types::to_char::number`).

use super::{value_to_text, ScalarFunc as F};
use crate::deparse::quote_ident;
use pgerror::{codes, PgError, PgResult};
use types::{DataType, Value};

/// Resolve one of this module's functions: (function, argument types, result type).
pub fn resolve(name: &str, args: &[DataType]) -> Option<(F, Vec<DataType>, DataType)> {
    use DataType::*;
    Some(match (name, args.len()) {
        ("quote_ident", 1) => (F::QuoteIdent, vec![Text], Text),
        // Any value, quoted as its text (PostgreSQL's anyelement forms).
        ("quote_literal" | "quote_nullable", 1) => {
            let f = if name == "quote_literal" {
                F::QuoteLiteral
            } else {
                F::QuoteNullable
            };
            let t = if args[0] == Unknown {
                Text
            } else {
                args[0].clone()
            };
            (f, vec![t], Text)
        }
        ("format", n) if n >= 1 => {
            let mut types = vec![Text];
            types.extend(
                args[1..]
                    .iter()
                    .map(|t| if *t == Unknown { Text } else { t.clone() }),
            );
            (F::Format, types, Text)
        }
        ("to_char", 2) if args[0].is_numeric() => {
            let t = match &args[0] {
                Int2 => Int4,
                other => other.clone(),
            };
            (F::ToCharNumber, vec![t, Text], Text)
        }
        _ => return None,
    })
}

/// Evaluate one of this module's functions; quote_nullable and format see NULLs.
pub fn eval(func: F, args: &[Value]) -> PgResult<Value> {
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    Ok(match func {
        F::QuoteIdent => Value::Text(quote_ident(&text(&args[0]))),
        F::QuoteNullable if args[0].is_null() => Value::Text("NULL".into()),
        F::QuoteLiteral | F::QuoteNullable => Value::Text(quote_literal(&value_to_text(&args[0]))),
        F::Format if args[0].is_null() => Value::Null,
        F::Format => Value::Text(format(&text(&args[0]), &args[1..])?),
        F::ToCharNumber if args.iter().any(Value::is_null) => Value::Null,
        F::ToCharNumber => types::to_char::number::to_char(&args[0], &text(&args[1]))?
            .map_or(Value::Null, Value::Text),
        other => {
            return Err(PgError::internal(format!(
                "{other:?} is not a format function"
            )))
        }
    })
}

/// A string literal: quotes doubled, and with backslashes doubled behind `E` when there
/// are any (PostgreSQL's quote_literal).
pub fn quote_literal(s: &str) -> String {
    let body = s.replace('\'', "''");
    if s.contains('\\') {
        format!("E'{}'", body.replace('\\', "\\\\"))
    } else {
        format!("'{body}'")
    }
}

fn bad_format(msg: &str) -> PgError {
    PgError::new(codes::INVALID_PARAMETER_VALUE, msg.to_string())
}

/// format(): `%[n$][-][width](s|I|L)` and `%%`; arguments in order unless positioned.
fn format(fmt: &str, args: &[Value]) -> PgResult<String> {
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    let mut next_arg = 0usize;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        let mut digits = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        let mut position = None;
        if !digits.is_empty() && chars.peek() == Some(&'$') {
            chars.next();
            let n: usize = digits
                .parse()
                .map_err(|_| bad_format("argument number is out of range"))?;
            if n == 0 {
                return Err(bad_format(
                    "format specifies argument 0, but arguments are numbered from 1",
                ));
            }
            position = Some(n - 1);
            digits.clear();
        }
        let left = digits.is_empty() && chars.peek() == Some(&'-');
        if left {
            chars.next();
        }
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        if chars.peek() == Some(&'*') {
            return Err(PgError::unsupported("format() widths taken from arguments"));
        }
        let width: usize = if digits.is_empty() {
            0
        } else {
            digits
                .parse()
                .map_err(|_| bad_format("number is out of range"))?
        };
        let kind = chars
            .next()
            .ok_or_else(|| bad_format("unterminated format() type specifier"))?;
        if !matches!(kind, 's' | 'I' | 'L') {
            return Err(bad_format(&format!(
                "unrecognized format() type specifier \"{kind}\""
            )));
        }
        let index = position.unwrap_or(next_arg);
        next_arg = index + 1;
        let arg = args
            .get(index)
            .ok_or_else(|| bad_format("too few arguments for format()"))?;
        let piece = match (kind, arg) {
            ('s', Value::Null) => String::new(),
            ('L', Value::Null) => "NULL".into(),
            ('I', Value::Null) => {
                return Err(PgError::new(
                    codes::NULL_VALUE_NOT_ALLOWED,
                    "null values cannot be formatted as an SQL identifier",
                ))
            }
            ('s', v) => value_to_text(v),
            ('I', v) => quote_ident(&value_to_text(v)),
            (_, v) => quote_literal(&value_to_text(v)),
        };
        let pad = width.saturating_sub(piece.chars().count());
        if left {
            out.push_str(&piece);
            out.extend(std::iter::repeat_n(' ', pad));
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&piece);
        }
    }
    Ok(out)
}
