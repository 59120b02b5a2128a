//! client_encoding: the server works in UTF-8; a session may speak LATIN1 (ISO 8859-1),
//! whose 256 byte values are the first 256 code points. Text the client sends is decoded
//! here, text the server sends (messages made of strings, and text-format values) is
//! encoded here; binary-format values pass untouched.

use bytes::{BufMut, BytesMut};
use pgerror::{codes, PgError, PgResult};
use std::borrow::Cow;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClientEncoding {
    #[default]
    Utf8,
    Latin1,
}

impl ClientEncoding {
    /// A client_encoding value (any of PostgreSQL's spellings of the two) and the name
    /// SHOW reports.
    pub fn from_setting(value: &str) -> Option<(ClientEncoding, &'static str)> {
        let name: String = value
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | '\'' | ' '))
            .collect::<String>()
            .to_ascii_lowercase();
        match name.as_str() {
            "utf8" | "unicode" => Some((ClientEncoding::Utf8, "UTF8")),
            "latin1" | "iso88591" => Some((ClientEncoding::Latin1, "LATIN1")),
            _ => None,
        }
    }

    /// Client bytes as the server's text; None for bytes that are not UTF-8 in a UTF-8
    /// session.
    pub fn decode(self, bytes: &[u8]) -> Option<Cow<'_, str>> {
        match self {
            ClientEncoding::Utf8 => std::str::from_utf8(bytes).ok().map(Cow::Borrowed),
            ClientEncoding::Latin1 if bytes.is_ascii() => {
                std::str::from_utf8(bytes).ok().map(Cow::Borrowed)
            }
            ClientEncoding::Latin1 => Some(Cow::Owned(bytes.iter().map(|&b| b as char).collect())),
        }
    }

    /// Appends `text` (UTF-8) in the client's encoding; PostgreSQL's 22P05 for a character
    /// the encoding lacks.
    pub fn encode_into(self, text: &str, out: &mut Vec<u8>) -> PgResult<()> {
        match self {
            ClientEncoding::Latin1 if !text.is_ascii() => {
                for c in text.chars() {
                    out.push(u8::try_from(c as u32).map_err(|_| untranslatable(c))?);
                }
            }
            _ => out.extend_from_slice(text.as_bytes()),
        }
        Ok(())
    }

    /// Re-encodes, in place, the strings of the messages in `out` that are made of text:
    /// ErrorResponse, NoticeResponse, CommandComplete, ParameterStatus and the column
    /// names of RowDescription. Other messages (DataRow, CopyData) carry values whose
    /// format only the writer knows; it encodes them itself. A character the encoding
    /// lacks becomes `?` (the message may be the error about that character).
    pub fn encode_messages(self, out: &mut BytesMut) {
        if self == ClientEncoding::Utf8 || out.is_ascii() {
            return;
        }
        let mut encoded = BytesMut::with_capacity(out.len());
        let mut at = 0;
        while at + 5 <= out.len() {
            let tag = out[at];
            let len = i32::from_be_bytes([out[at + 1], out[at + 2], out[at + 3], out[at + 4]]);
            let end = (at + 1 + len.max(4) as usize).min(out.len());
            let body = &out[at + 5..end];
            let start = encoded.len();
            encoded.put_u8(tag);
            encoded.put_i32(0);
            match tag {
                b'E' | b'N' | b'C' | b'S' => latin1_lossy(body, &mut encoded),
                b'T' if body.len() >= 2 => {
                    encoded.put_slice(&body[..2]);
                    let mut rest = &body[2..];
                    while let Some(nul) = rest.iter().position(|&b| b == 0) {
                        latin1_lossy(&rest[..=nul], &mut encoded);
                        let fixed = (nul + 1 + 18).min(rest.len());
                        encoded.put_slice(&rest[nul + 1..fixed]);
                        rest = &rest[fixed..];
                    }
                    encoded.put_slice(rest);
                }
                _ => encoded.put_slice(body),
            }
            let new_len = (encoded.len() - start - 1) as i32;
            encoded[start + 1..start + 5].copy_from_slice(&new_len.to_be_bytes());
            at = end;
        }
        encoded.put_slice(&out[at..]);
        *out = encoded;
    }
}

/// UTF-8 bytes as LATIN1, `?` for what LATIN1 lacks.
fn latin1_lossy(utf8: &[u8], out: &mut BytesMut) {
    for c in String::from_utf8_lossy(utf8).chars() {
        out.put_u8(u8::try_from(c as u32).unwrap_or(b'?'));
    }
}

fn untranslatable(c: char) -> PgError {
    let mut buf = [0u8; 4];
    let bytes: Vec<String> = c
        .encode_utf8(&mut buf)
        .bytes()
        .map(|b| format!("0x{b:02x}"))
        .collect();
    PgError::new(
        codes::UNTRANSLATABLE_CHARACTER,
        format!(
            "character with byte sequence {} in encoding \"UTF8\" has no equivalent in encoding \"LATIN1\"",
            bytes.join(" ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend;

    #[test]
    fn latin1_round_trip() {
        let text = "café Ünïcödé ÿ";
        let mut out = Vec::new();
        ClientEncoding::Latin1.encode_into(text, &mut out).unwrap();
        assert_eq!(out.len(), text.chars().count());
        assert_eq!(ClientEncoding::Latin1.decode(&out).unwrap(), text);
        let err = ClientEncoding::Latin1
            .encode_into("漢", &mut Vec::new())
            .unwrap_err();
        assert_eq!(err.code, "22P05");
    }

    #[test]
    fn messages_are_reencoded_with_their_lengths() {
        let mut out = BytesMut::new();
        backend::command_complete(&mut out, "SELECT 1");
        backend::row_description(
            &mut out,
            &[backend::FieldDescription {
                name: "café".into(),
                table_oid: 0x8081_8283,
                column_attr: 0,
                type_oid: 25,
                type_len: -1,
                type_modifier: -1,
                format: 0,
            }],
        );
        backend::error_response(&mut out, &PgError::new("22000", "naïve 漢"));
        ClientEncoding::Latin1.encode_messages(&mut out);
        let mut expected = BytesMut::new();
        backend::command_complete(&mut expected, "SELECT 1");
        let start = expected.len();
        backend::row_description(
            &mut expected,
            &[backend::FieldDescription {
                name: "cafX".into(),
                table_oid: 0x8081_8283,
                column_attr: 0,
                type_oid: 25,
                type_len: -1,
                type_modifier: -1,
                format: 0,
            }],
        );
        // "cafX" stands in for the one-byte é.
        let x = expected[start..].iter().position(|&b| b == b'X').unwrap() + start;
        expected[x] = 0xe9;
        let err_start = expected.len();
        backend::error_response(&mut expected, &PgError::new("22000", "naXve ?"));
        let x = expected[err_start..]
            .iter()
            .position(|&b| b == b'X')
            .unwrap()
            + err_start;
        expected[x] = 0xef;
        assert_eq!(out, expected);
    }
}
