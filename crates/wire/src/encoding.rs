//! client_encoding: the server works in UTF-8; a session may speak one of PostgreSQL's
//! single-byte encodings instead (LATIN1…LATIN10, ISO_8859_5…8, WIN866, WIN874,
//! WIN1250…WIN1258, KOI8R, KOI8U). Text the client sends is decoded here, text the server
//! sends (messages made of strings, and text-format values) is encoded here;
//! binary-format values pass untouched.
//!
//! Each encoding is a table of the characters of its bytes 0x80–0xFF (ASCII is itself),
//! taken from encoding_rs (the WHATWG tables) and held to PostgreSQL 15's maps where they
//! differ (decision 0045): bytes that a Windows code page leaves unassigned are refused,
//! not read as C1 controls; KOI8U is the original KOI8-U; LATIN1 and LATIN5 (which WHATWG
//! reads as windows-1252 and -1254) are ISO 8859-1 and -9.

use bytes::{BufMut, BytesMut};
use pgerror::{codes, PgError, PgResult};
use std::borrow::Cow;
use std::sync::OnceLock;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClientEncoding {
    #[default]
    Utf8,
    SingleByte(&'static SingleByte),
}

/// A single-byte encoding: its name as SHOW reports it and the characters of its upper
/// half (None where PostgreSQL maps nothing).
#[derive(Debug, PartialEq, Eq)]
pub struct SingleByte {
    name: &'static str,
    upper: [Option<char>; 128],
}

/// PostgreSQL's names (after its normalisation: lower case, letters and digits only) of
/// each single-byte encoding, the name SHOW reports, and its WHATWG label (None: built
/// here).
const ENCODINGS: &[(&[&str], &str, Option<&str>)] = &[
    (&["latin1", "iso88591"], "LATIN1", None),
    (&["latin2", "iso88592"], "LATIN2", Some("iso-8859-2")),
    (&["latin3", "iso88593"], "LATIN3", Some("iso-8859-3")),
    (&["latin4", "iso88594"], "LATIN4", Some("iso-8859-4")),
    (&["latin5", "iso88599"], "LATIN5", None),
    (&["latin6", "iso885910"], "LATIN6", Some("iso-8859-10")),
    (&["latin7", "iso885913"], "LATIN7", Some("iso-8859-13")),
    (&["latin8", "iso885914"], "LATIN8", Some("iso-8859-14")),
    (&["latin9", "iso885915"], "LATIN9", Some("iso-8859-15")),
    (&["latin10", "iso885916"], "LATIN10", Some("iso-8859-16")),
    (&["iso88595"], "ISO_8859_5", Some("iso-8859-5")),
    (&["iso88596"], "ISO_8859_6", Some("iso-8859-6")),
    (&["iso88597"], "ISO_8859_7", Some("iso-8859-7")),
    (&["iso88598"], "ISO_8859_8", Some("iso-8859-8")),
    (&["win866", "alt"], "WIN866", Some("ibm866")),
    (&["win874", "windows874"], "WIN874", Some("windows-874")),
    (&["win1250", "windows1250"], "WIN1250", Some("windows-1250")),
    (
        &["win1251", "windows1251", "win"],
        "WIN1251",
        Some("windows-1251"),
    ),
    (&["win1252", "windows1252"], "WIN1252", Some("windows-1252")),
    (&["win1253", "windows1253"], "WIN1253", Some("windows-1253")),
    (&["win1254", "windows1254"], "WIN1254", Some("windows-1254")),
    (&["win1255", "windows1255"], "WIN1255", Some("windows-1255")),
    (&["win1256", "windows1256"], "WIN1256", Some("windows-1256")),
    (&["win1257", "windows1257"], "WIN1257", Some("windows-1257")),
    (
        &["win1258", "windows1258", "tcvn", "tcvn5712", "abc"],
        "WIN1258",
        Some("windows-1258"),
    ),
    (&["koi8r", "koi8"], "KOI8R", Some("koi8-r")),
    (&["koi8u"], "KOI8U", Some("koi8-u")),
];

/// The upper half of an encoding as PostgreSQL 15 maps it.
fn upper_half(name: &str, label: Option<&str>) -> [Option<char>; 128] {
    let mut upper: [Option<char>; 128] = std::array::from_fn(|i| char::from_u32(0x80 + i as u32));
    if let Some(encoding) = label.and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes())) {
        for (i, slot) in upper.iter_mut().enumerate() {
            let byte = [0x80 + i as u8];
            let (text, malformed) = encoding.decode_without_bom_handling(&byte);
            *slot = text.chars().next().filter(|_| !malformed);
        }
    }
    if name.starts_with("WIN") && name != "WIN866" {
        // WHATWG reads a code page's unassigned bytes as the C1 control of that number
        for (byte, slot) in (0x80..=0x9f_u8).zip(upper.iter_mut()) {
            if *slot == Some(byte as char) {
                *slot = None;
            }
        }
    }
    let mut set = |byte: u8, c: Option<char>| upper[byte as usize - 0x80] = c;
    match name {
        "WIN1255" => set(0xca, None),
        "KOI8U" => {
            set(0xae, Some('\u{255d}'));
            set(0xbe, Some('\u{256c}'));
        }
        "LATIN5" => {
            for (byte, c) in [
                (0xd0, 'Ğ'),
                (0xdd, 'İ'),
                (0xde, 'Ş'),
                (0xf0, 'ğ'),
                (0xfd, 'ı'),
                (0xfe, 'ş'),
            ] {
                set(byte, Some(c));
            }
        }
        _ => {}
    }
    upper
}

fn single_byte_encodings() -> &'static [SingleByte] {
    static TABLES: OnceLock<Vec<SingleByte>> = OnceLock::new();
    TABLES.get_or_init(|| {
        ENCODINGS
            .iter()
            .map(|&(_, name, label)| SingleByte {
                name,
                upper: upper_half(name, label),
            })
            .collect()
    })
}

impl SingleByte {
    fn char_of(&self, byte: u8) -> Option<char> {
        match byte {
            0..=0x7f => Some(byte as char),
            _ => self.upper[byte as usize - 0x80],
        }
    }

    fn byte_of(&self, c: char) -> Option<u8> {
        if c.is_ascii() {
            return Some(c as u8);
        }
        // the byte of the same number first: all of LATIN1, most of the Latin encodings
        let same = (c as u32).checked_sub(0x80).filter(|&i| i < 128);
        if let Some(i) = same.filter(|&i| self.upper[i as usize] == Some(c)) {
            return Some(0x80 + i as u8);
        }
        let at = self.upper.iter().position(|&u| u == Some(c))?;
        Some(0x80 + at as u8)
    }
}

impl ClientEncoding {
    /// A client_encoding value (any of PostgreSQL's spellings) and the name SHOW reports.
    pub fn from_setting(value: &str) -> Option<(ClientEncoding, &'static str)> {
        let name: String = value
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase();
        if matches!(name.as_str(), "utf8" | "unicode") {
            return Some((ClientEncoding::Utf8, "UTF8"));
        }
        let at = ENCODINGS
            .iter()
            .position(|(names, _, _)| names.contains(&name.as_str()))?;
        let encoding = &single_byte_encodings()[at];
        Some((ClientEncoding::SingleByte(encoding), encoding.name))
    }

    pub fn name(self) -> &'static str {
        match self {
            ClientEncoding::Utf8 => "UTF8",
            ClientEncoding::SingleByte(e) => e.name,
        }
    }

    /// Client bytes as the server's text; None for bytes that are not UTF-8 in a UTF-8
    /// session, or that the session's encoding does not map (`decode_error` says which).
    pub fn decode(self, bytes: &[u8]) -> Option<Cow<'_, str>> {
        match self {
            _ if bytes.is_ascii() => std::str::from_utf8(bytes).ok().map(Cow::Borrowed),
            ClientEncoding::Utf8 => std::str::from_utf8(bytes).ok().map(Cow::Borrowed),
            ClientEncoding::SingleByte(e) => bytes
                .iter()
                .map(|&b| e.char_of(b))
                .collect::<Option<String>>()
                .map(Cow::Owned),
        }
    }

    /// PostgreSQL's 22P05 for the first byte of `bytes` that a single-byte encoding does
    /// not map; None in a UTF-8 session (its callers word their own error).
    pub fn decode_error(self, bytes: &[u8]) -> Option<PgError> {
        let ClientEncoding::SingleByte(e) = self else {
            return None;
        };
        let bad = bytes.iter().find(|&&b| e.char_of(b).is_none())?;
        Some(PgError::new(
            codes::UNTRANSLATABLE_CHARACTER,
            format!(
                "character with byte sequence 0x{bad:02x} in encoding \"{}\" has no equivalent in encoding \"UTF8\"",
                e.name
            ),
        ))
    }

    /// Appends `text` (UTF-8) in the client's encoding; PostgreSQL's 22P05 for a character
    /// the encoding lacks.
    pub fn encode_into(self, text: &str, out: &mut Vec<u8>) -> PgResult<()> {
        match self {
            ClientEncoding::SingleByte(e) if !text.is_ascii() => {
                for c in text.chars() {
                    out.push(e.byte_of(c).ok_or_else(|| untranslatable(c, e.name))?);
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
        let ClientEncoding::SingleByte(e) = self else {
            return;
        };
        if out.is_ascii() {
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
                b'E' | b'N' | b'C' | b'S' => lossy(e, body, &mut encoded),
                b'T' if body.len() >= 2 => {
                    encoded.put_slice(&body[..2]);
                    let mut rest = &body[2..];
                    while let Some(nul) = rest.iter().position(|&b| b == 0) {
                        lossy(e, &rest[..=nul], &mut encoded);
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

/// UTF-8 bytes in encoding `e`, `?` for what it lacks.
fn lossy(e: &SingleByte, utf8: &[u8], out: &mut BytesMut) {
    for c in String::from_utf8_lossy(utf8).chars() {
        out.put_u8(e.byte_of(c).unwrap_or(b'?'));
    }
}

fn untranslatable(c: char, encoding: &str) -> PgError {
    let mut buf = [0u8; 4];
    let bytes: Vec<String> = c
        .encode_utf8(&mut buf)
        .bytes()
        .map(|b| format!("0x{b:02x}"))
        .collect();
    PgError::new(
        codes::UNTRANSLATABLE_CHARACTER,
        format!(
            "character with byte sequence {} in encoding \"UTF8\" has no equivalent in encoding \"{encoding}\"",
            bytes.join(" ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend;

    fn latin1() -> ClientEncoding {
        ClientEncoding::from_setting("ISO_8859_1").unwrap().0
    }

    #[test]
    fn tables_follow_postgres() {
        let enc = |name: &str| ClientEncoding::from_setting(name).unwrap().0;
        assert_eq!(enc("windows-1252").decode(&[0x80, 0xe9]).unwrap(), "€é");
        // unassigned in WIN1252: refused, not a C1 control
        assert!(enc("win1252").decode(&[0x81]).is_none());
        assert_eq!(
            enc("win1252").decode_error(&[b'a', 0x81]).unwrap().code,
            "22P05"
        );
        assert_eq!(enc("koi8u").decode(&[0xae]).unwrap(), "\u{255d}");
        assert_eq!(enc("latin5").decode(&[0xdd, 0xe9]).unwrap(), "İé");
        assert_eq!(latin1().decode(&[0x80]).unwrap(), "\u{80}");
        let mut out = Vec::new();
        enc("LATIN2").encode_into("Łódź", &mut out).unwrap();
        assert_eq!(out, [0xa3, 0xf3, 0x64, 0xbc]);
        assert_eq!(enc("iso_8859_5").name(), "ISO_8859_5");
        assert!(ClientEncoding::from_setting("cp1252").is_none());
    }

    #[test]
    fn latin1_round_trip() {
        let text = "café Ünïcödé ÿ";
        let mut out = Vec::new();
        latin1().encode_into(text, &mut out).unwrap();
        assert_eq!(out.len(), text.chars().count());
        assert_eq!(latin1().decode(&out).unwrap(), text);
        let err = latin1().encode_into("漢", &mut Vec::new()).unwrap_err();
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
        latin1().encode_messages(&mut out);
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
