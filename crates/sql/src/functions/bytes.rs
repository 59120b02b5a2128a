//! encode() and decode() between bytea and text in PostgreSQL's `hex`, `base64` (lines of
//! 76 characters) and `escape` formats.

use super::ScalarFunc as F;
use base64::Engine;
use pgerror::{codes, PgError, PgResult};
use types::{DataType, Value};

pub fn resolve(name: &str, args: &[DataType]) -> Option<(F, Vec<DataType>, DataType)> {
    use DataType::*;
    Some(match (name, args.len()) {
        ("encode", 2) => (F::Encode, vec![Bytea, Text], Text),
        ("decode", 2) => (F::Decode, vec![Text, Text], Bytea),
        _ => return None,
    })
}

fn unknown_encoding(name: &str) -> PgError {
    PgError::new(
        codes::INVALID_PARAMETER_VALUE,
        format!("unrecognized encoding: \"{name}\""),
    )
}

pub fn eval(func: F, args: &[Value]) -> PgResult<Value> {
    let format = args[1].as_str().unwrap_or("").to_ascii_lowercase();
    match (func, &args[0]) {
        (F::Encode, Value::Bytea(b)) => Ok(Value::Text(match format.as_str() {
            "hex" => b.iter().map(|x| format!("{x:02x}")).collect(),
            "base64" => {
                let flat = base64::engine::general_purpose::STANDARD.encode(b);
                let lines: Vec<&str> = flat
                    .as_bytes()
                    .chunks(76)
                    .map(|c| std::str::from_utf8(c).unwrap_or(""))
                    .collect();
                lines.join("\n")
            }
            "escape" => escape(b),
            _ => return Err(unknown_encoding(&format)),
        })),
        (F::Decode, Value::Text(s)) => Ok(Value::Bytea(match format.as_str() {
            "hex" => unhex(s)?,
            "base64" => {
                let flat: String = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                base64::engine::general_purpose::STANDARD
                    .decode(flat)
                    .map_err(|e| {
                        PgError::new(
                            codes::INVALID_PARAMETER_VALUE,
                            format!("invalid base64 input: {e}"),
                        )
                    })?
            }
            "escape" => unescape(s)?,
            _ => return Err(unknown_encoding(&format)),
        })),
        _ => Err(PgError::internal("encode/decode on the wrong types")),
    }
}

/// `escape`: zero bytes and bytes with the high bit set as `\ooo`, backslashes doubled.
fn escape(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for &x in b {
        match x {
            b'\\' => out.push_str("\\\\"),
            0 | 0x80..=0xff => out.push_str(&format!("\\{x:03o}")),
            _ => out.push(x as char),
        }
    }
    out
}

fn unescape(s: &str) -> PgResult<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
        } else if b.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
        } else if i + 4 <= b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            let v = (b[i + 1] - b'0') as u16 * 64
                + (b[i + 2] - b'0') as u16 * 8
                + (b[i + 3] - b'0') as u16;
            out.push(v as u8);
            i += 4;
        } else {
            return Err(PgError::new(
                codes::INVALID_TEXT_REPRESENTATION,
                "invalid input syntax for type bytea",
            ));
        }
    }
    Ok(out)
}

fn unhex(s: &str) -> PgResult<Vec<u8>> {
    let digits: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let value = |c: u8| -> PgResult<u8> {
        (c as char).to_digit(16).map(|d| d as u8).ok_or_else(|| {
            PgError::new(
                codes::INVALID_PARAMETER_VALUE,
                format!("invalid hexadecimal digit: \"{}\"", c as char),
            )
        })
    };
    if digits.len() % 2 == 1 {
        return Err(PgError::new(
            codes::INVALID_PARAMETER_VALUE,
            "invalid hexadecimal data: odd number of digits",
        ));
    }
    digits
        .chunks(2)
        .map(|p| Ok(value(p[0])? * 16 + value(p[1])?))
        .collect()
}
