//! String functions applications use (issue 31): chr, ascii, lpad/rpad, split_part,
//! strpos, initcap, reverse, translate, starts_with, to_hex, octet_length, bit_length,
//! concat_ws, string_to_array. Lengths and positions count characters, as PostgreSQL's in UTF-8.

use super::{value_to_text, ScalarFunc as F};
use pgerror::{codes, PgError, PgResult};
use types::{DataType, Value};

/// Resolve one of this module's functions: (function, argument types, result type).
pub fn resolve(name: &str, args: &[DataType]) -> Option<(F, Vec<DataType>, DataType)> {
    use DataType::*;
    let n = args.len();
    let text_args = || vec![Text; n];
    Some(match (name, n) {
        ("chr", 1) => (F::Chr, vec![Int4], Text),
        ("ascii", 1) => (F::Ascii, text_args(), Int4),
        ("lpad", 2) => (F::Lpad, vec![Text, Int4], Text),
        ("lpad", 3) => (F::Lpad, vec![Text, Int4, Text], Text),
        ("rpad", 2) => (F::Rpad, vec![Text, Int4], Text),
        ("rpad", 3) => (F::Rpad, vec![Text, Int4, Text], Text),
        ("split_part", 3) => (F::SplitPart, vec![Text, Text, Int4], Text),
        ("strpos", 2) => (F::Strpos, text_args(), Int4),
        ("initcap", 1) => (F::Initcap, text_args(), Text),
        ("reverse", 1) => (F::Reverse, text_args(), Text),
        ("translate", 3) => (F::Translate, text_args(), Text),
        ("starts_with", 2) => (F::StartsWith, text_args(), Bool),
        ("string_to_array", 2 | 3) => (F::StringToArray, text_args(), Array(Box::new(Text))),
        // to_hex(int4) shows the 32-bit two's complement, to_hex(int8) the 64-bit one.
        ("to_hex", 1) if args[0] == Int8 => (F::ToHex, vec![Int8], Text),
        ("to_hex", 1) => (F::ToHex, vec![Int4], Text),
        ("octet_length", 1) => (F::OctetLength, text_args(), Int4),
        ("bit_length", 1) => (F::BitLength, text_args(), Int4),
        // concat_ws(sep) alone has no variadic argument: 42883, as PostgreSQL.
        ("concat_ws", _) if n >= 2 => (
            F::ConcatWs,
            args.iter()
                .map(|t| if *t == Unknown { Text } else { t.clone() })
                .collect(),
            Text,
        ),
        _ => return None,
    })
}

/// Evaluate one of this module's functions. NULL arguments have been handled by the
/// caller, except for concat_ws, which skips them, and string_to_array.
pub fn eval(func: F, args: &[Value]) -> PgResult<Value> {
    let text = |i: usize| args[i].as_str().unwrap_or("").to_string();
    let int = |i: usize| args[i].as_i64().unwrap_or(0);
    Ok(match func {
        F::Chr => Value::Text(chr(int(0))?.to_string()),
        F::Ascii => Value::Int4(text(0).chars().next().map_or(0, |c| c as i32)),
        F::Lpad | F::Rpad => {
            let fill = if args.len() > 2 { text(2) } else { " ".into() };
            Value::Text(pad(&text(0), int(1), &fill, func == F::Lpad))
        }
        F::SplitPart => Value::Text(split_part(&text(0), &text(1), int(2))?),
        F::Strpos => {
            let (s, sub) = (text(0), text(1));
            Value::Int4(
                s.find(&sub)
                    .map_or(0, |at| s[..at].chars().count() as i32 + 1),
            )
        }
        F::Initcap => Value::Text(initcap(&text(0))),
        F::Reverse => Value::Text(text(0).chars().rev().collect()),
        F::Translate => Value::Text(translate(&text(0), &text(1), &text(2))),
        F::StartsWith => Value::Bool(text(0).starts_with(&text(1))),
        F::StringToArray => string_to_array(args),
        F::SimilarTo => {
            let escape = args
                .get(2)
                .and_then(Value::as_str)
                .and_then(|e| e.chars().next());
            let pattern = types::ops::similar_to_regex(&text(1), escape)?;
            Value::Bool(types::ops::regex_match(&text(0), &pattern, false)?)
        }
        F::ToHex => Value::Text(match &args[0] {
            Value::Int8(v) => format!("{:x}", *v as u64),
            _ => format!("{:x}", int(0) as i32 as u32),
        }),
        F::OctetLength => Value::Int4(text(0).len() as i32),
        F::BitLength => Value::Int4(text(0).len() as i32 * 8),
        F::ConcatWs => {
            if args[0].is_null() {
                return Ok(Value::Null);
            }
            let parts: Vec<String> = args[1..]
                .iter()
                .filter(|v| !v.is_null())
                .map(value_to_text)
                .collect();
            Value::Text(parts.join(&text(0)))
        }
        other => {
            return Err(PgError::internal(format!(
                "{other:?} is not a string function"
            )))
        }
    })
}

fn chr(code: i64) -> PgResult<char> {
    let fail = |code, msg: String| Err(PgError::new(code, msg));
    match code {
        c if c < 0 => fail(
            codes::INVALID_PARAMETER_VALUE,
            "character number must be positive".into(),
        ),
        0 => fail(
            codes::PROGRAM_LIMIT_EXCEEDED,
            "null character not permitted".into(),
        ),
        c if c > 0x10ffff => fail(
            codes::PROGRAM_LIMIT_EXCEEDED,
            format!("requested character too large for encoding: {c}"),
        ),
        c => char::from_u32(c as u32).map_or_else(
            || {
                fail(
                    codes::PROGRAM_LIMIT_EXCEEDED,
                    format!("requested character not valid for encoding: {c}"),
                )
            },
            Ok,
        ),
    }
}

/// string_to_array(s, delimiter [, null_string]): NULL for a NULL string, no elements
/// for an empty one, one per character for a NULL delimiter, the whole string for an
/// empty one; elements equal to `null_string` are NULL.
fn string_to_array(args: &[Value]) -> Value {
    let Some(s) = args[0].as_str() else {
        return Value::Null;
    };
    if s.is_empty() {
        return Value::Array(Vec::new());
    }
    let null = args.get(2).and_then(Value::as_str);
    let element = |e: &str| match null {
        Some(n) if n == e => Value::Null,
        _ => Value::Text(e.to_string()),
    };
    Value::Array(match args[1].as_str() {
        None => s
            .char_indices()
            .map(|(i, c)| element(&s[i..i + c.len_utf8()]))
            .collect(),
        Some("") => vec![element(s)],
        Some(d) => s.split(d).map(element).collect(),
    })
}

/// lpad/rpad: fill to `len` characters, or cut the string to `len`.
fn pad(s: &str, len: i64, fill: &str, left: bool) -> String {
    let len = len.max(0) as usize;
    let chars: Vec<char> = s.chars().collect();
    if chars.len() >= len || fill.is_empty() {
        return chars.iter().take(len).collect();
    }
    let padding: String = fill.chars().cycle().take(len - chars.len()).collect();
    if left {
        padding + s
    } else {
        s.to_string() + &padding
    }
}

/// split_part: the n-th field (1-based; negative counts from the end, as PostgreSQL 14+).
fn split_part(s: &str, delimiter: &str, n: i64) -> PgResult<String> {
    if n == 0 {
        return Err(PgError::new(
            codes::INVALID_PARAMETER_VALUE,
            "field position must not be zero",
        ));
    }
    if s.is_empty() {
        return Ok(String::new());
    }
    // An empty delimiter leaves the whole string as the only field.
    let fields: Vec<&str> = if delimiter.is_empty() {
        vec![s]
    } else {
        s.split(delimiter).collect()
    };
    let index = if n > 0 {
        (n - 1) as usize
    } else {
        match fields.len().checked_sub(n.unsigned_abs() as usize) {
            Some(i) => i,
            None => return Ok(String::new()),
        }
    };
    Ok(fields.get(index).copied().unwrap_or("").to_string())
}

/// initcap: the first letter of each run of letters and digits upper case, the rest lower.
fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for c in s.chars() {
        if in_word {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        in_word = c.is_alphanumeric();
    }
    out
}

/// translate: each character of `from` becomes the one at its place in `to`, or is
/// dropped where `to` is shorter; the first occurrence in `from` decides.
fn translate(s: &str, from: &str, to: &str) -> String {
    let from: Vec<char> = from.chars().collect();
    let to: Vec<char> = to.chars().collect();
    s.chars()
        .filter_map(|c| match from.iter().position(|f| *f == c) {
            Some(i) => to.get(i).copied(),
            None => Some(c),
        })
        .collect()
}
