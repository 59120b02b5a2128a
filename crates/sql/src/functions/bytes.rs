//! encode() and decode() between bytea and text in PostgreSQL's `hex`, `base64` (lines of
//! 76 characters) and `escape` formats; the digests of bytea (sha224 … sha512, md5).

use super::ScalarFunc as F;
use base64::Engine;
use pgerror::{codes, PgError, PgResult};
use types::{DataType, Value};

pub fn resolve(name: &str, args: &[DataType]) -> Option<(F, Vec<DataType>, DataType)> {
    use DataType::*;
    // The digests are declared on bytea alone: other types have no implicit cast to it.
    let takes_bytea = matches!(args.first(), Some(Bytea | Unknown));
    Some(match (name, args.len()) {
        ("encode", 2) => (F::Encode, vec![Bytea, Text], Text),
        ("decode", 2) => (F::Decode, vec![Text, Text], Bytea),
        ("sha224", 1) if takes_bytea => (F::Sha224, vec![Bytea], Bytea),
        ("sha256", 1) if takes_bytea => (F::Sha256, vec![Bytea], Bytea),
        ("sha384", 1) if takes_bytea => (F::Sha384, vec![Bytea], Bytea),
        ("sha512", 1) if takes_bytea => (F::Sha512, vec![Bytea], Bytea),
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
            "hex" => types::io::bytea_from_hex(s)?,
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
            "escape" => types::io::bytea_from_escape(s)?,
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

/// sha224 … sha512 of a bytea (a bytea), md5 of one (its hex digits, as md5(text)).
pub fn digest(func: F, arg: &Value) -> PgResult<Value> {
    use sha2::Digest;
    let Value::Bytea(b) = arg else {
        return Err(PgError::internal("a digest of a value that is not bytea"));
    };
    Ok(match func {
        F::Sha224 => Value::Bytea(sha2::Sha224::digest(b).to_vec()),
        F::Sha256 => Value::Bytea(sha2::Sha256::digest(b).to_vec()),
        F::Sha384 => Value::Bytea(sha2::Sha384::digest(b).to_vec()),
        F::Sha512 => Value::Bytea(sha2::Sha512::digest(b).to_vec()),
        _ => Value::Text(
            md5::Md5::digest(b)
                .iter()
                .map(|x| format!("{x:02x}"))
                .collect(),
        ),
    })
}
