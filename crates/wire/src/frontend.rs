//! Decoding of client → server messages.
//!
//! Two entry points, matching the two framings of protocol v3:
//!
//! * [`decode_startup`] for the first packet(s) of a connection: `int32 len` (including
//!   itself), `int32 code`, body. Used for StartupMessage, SSLRequest, GSSENCRequest and
//!   CancelRequest.
//! * [`decode_message`] for everything after start-up: `byte tag`, `int32 len` (including
//!   itself, excluding the tag), body.
//!
//! Both return `Ok(None)` when `buf` does not yet hold a whole packet, in which case nothing
//! is consumed. Both reject a bad header (length out of range, unknown tag) as soon as the
//! header bytes are present, without waiting for the body. Every count and length inside a
//! body is checked against the bytes actually remaining before anything is read or
//! allocated. Any malformation is an `Err(ProtocolError)`; decoding never panics.

use std::fmt;

use bytes::{Buf, Bytes, BytesMut};
use pgerror::{codes, PgError};

use crate::encoding::ClientEncoding;

/// Largest accepted start-up packet (PostgreSQL's `MAX_STARTUP_PACKET_LENGTH`).
pub const MAX_STARTUP_LEN: usize = 10_000;

/// Protocol 3.0 as sent in a StartupMessage (`3 << 16`).
pub const PROTOCOL_VERSION_3_0: u32 = 196_608;
/// Request code of a CancelRequest (`1234 << 16 | 5678`).
pub const CANCEL_REQUEST_CODE: u32 = 80_877_102;
/// Request code of an SSLRequest (`1234 << 16 | 5679`).
pub const SSL_REQUEST_CODE: u32 = 80_877_103;
/// Request code of a GSSENCRequest (`1234 << 16 | 5680`).
pub const GSSENC_REQUEST_CODE: u32 = 80_877_104;

/// Body limit applied to messages that never legitimately carry much data (Sync, Flush,
/// Terminate, Describe, Close, Execute, CopyDone, CopyFail), whatever `max_len` says.
/// PostgreSQL uses the same figure (`PQ_SMALL_MESSAGE_LIMIT`).
pub const SMALL_MESSAGE_LIMIT: usize = 10_000;

/// The first packet of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartupPacket {
    /// StartupMessage. `protocol_version` has major version 3 (checked); the minor version
    /// (`protocol_version & 0xFFFF`) is left to the caller, which should answer a minor
    /// version > 0 or `_pq_.*` parameters with NegotiateProtocolVersion. `params` keeps the
    /// client's order and any duplicates.
    Startup {
        protocol_version: u32,
        params: Vec<(String, String)>,
    },
    /// SSLRequest (80877103): answer one byte, `N` (see `backend::ssl_refused`).
    SslRequest,
    /// GSSENCRequest (80877104): answer one byte, `N`.
    GssEncRequest,
    /// CancelRequest (80877102): answer nothing, close the connection.
    Cancel { process_id: i32, secret_key: i32 },
}

/// What a Describe or Close message refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DescribeKind {
    /// `b'S'`: a prepared statement.
    Statement,
    /// `b'P'`: a portal.
    Portal,
}

impl DescribeKind {
    pub fn as_byte(self) -> u8 {
        match self {
            DescribeKind::Statement => b'S',
            DescribeKind::Portal => b'P',
        }
    }
}

/// One regular (post start-up) client message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrontendMessage {
    /// A Query or extended-protocol message with text the client's encoding cannot read:
    /// answered with `error` as a failed statement (then ReadyForQuery for a Query, or
    /// skipping to Sync), as PostgreSQL does.
    Unreadable { simple_query: bool, error: PgError },
    /// `Q`: simple query; the SQL text without its terminating NUL.
    Query(String),
    /// `P`: `param_types` may be shorter than the number of `$n` used; 0 = unspecified.
    Parse {
        name: String,
        query: String,
        param_types: Vec<u32>,
    },
    /// `B`: `param_formats` has 0, 1 or `params.len()` entries per the protocol, but that
    /// rule (and the validity of each format code) is *not* checked here: PostgreSQL treats
    /// it as an ordinary ERROR, so it is the coordinator's call. See [`param_format`].
    /// `params[i] == None` is SQL NULL. The values share the decoded buffer (no copy).
    Bind {
        portal: String,
        statement: String,
        param_formats: Vec<i16>,
        params: Vec<Option<Bytes>>,
        result_formats: Vec<i16>,
    },
    /// `D`
    Describe { kind: DescribeKind, name: String },
    /// `E`: `max_rows <= 0` means no limit.
    Execute { portal: String, max_rows: i32 },
    /// `C`
    Close { kind: DescribeKind, name: String },
    /// `H`
    Flush,
    /// `S`
    Sync,
    /// `X`
    Terminate,
    /// `d`: raw payload (shares the decoded buffer).
    CopyData(Bytes),
    /// `c`
    CopyDone,
    /// `f`: the client's error message.
    CopyFail(String),
    /// `p`: PasswordMessage, SASLInitialResponse or SASLResponse; which one depends on the
    /// authentication state, so the raw body is returned (see [`PasswordBody`] helpers).
    Password(Bytes),
}

/// The format code that applies to parameter `index` of a Bind with `param_formats`:
/// no codes = all text (0), one code = applies to all, otherwise one per parameter.
/// `None` when `param_formats` has neither 0, 1 nor `param_count` entries, or `index` is out
/// of range; PostgreSQL reports that as `08P01 bind message has N parameter formats but M
/// parameters` (an ERROR, not FATAL).
pub fn param_format(param_formats: &[i16], param_count: usize, index: usize) -> Option<i16> {
    if index >= param_count {
        return None;
    }
    match param_formats.len() {
        0 => Some(0),
        1 => Some(param_formats[0]),
        n if n == param_count => Some(param_formats[index]),
        _ => None,
    }
}

/// Parsers for the body of a `p` message, whose layout depends on the authentication step.
pub struct PasswordBody;

impl PasswordBody {
    /// PasswordMessage (cleartext or MD5): one NUL-terminated string filling the body.
    pub fn password(body: &Bytes) -> Result<String, ProtocolError> {
        let mut r = Reader::new(body.clone(), "PasswordMessage");
        let s = r.cstr()?;
        r.finish()?;
        Ok(s)
    }

    /// SASLInitialResponse: mechanism name, then `int32` length of the initial response
    /// (-1 = none) and the response bytes. Returns `(mechanism, response)`.
    pub fn sasl_initial_response(body: &Bytes) -> Result<(String, Option<Bytes>), ProtocolError> {
        let mut r = Reader::new(body.clone(), "SASLInitialResponse");
        let mechanism = r.cstr()?;
        let len = r.i32()?;
        let data = match len {
            -1 => None,
            n if n < 0 => return Err(r.malformed(format!("invalid response length {n}"))),
            n => Some(r.bytes(n as usize)?),
        };
        r.finish()?;
        Ok((mechanism, data))
    }

    /// SASLResponse: the whole body is the mechanism-specific data.
    pub fn sasl_response(body: &Bytes) -> Bytes {
        body.clone()
    }
}

/// Why a decode failed. Always fatal for the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolErrorKind {
    /// Framing or body does not follow the protocol (08P01).
    Malformed,
    /// Declared length above the limit (54000).
    TooLong,
    /// StartupMessage with a major protocol version other than 3 (0A000, as PostgreSQL).
    UnsupportedProtocol,
}

/// A decoding error. The connection cannot continue: send
/// `backend::error_response(out, &e.into_pg_error())` and close. After an error the
/// contents of the input buffer are unspecified (the bad message may or may not have been
/// consumed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    kind: ProtocolErrorKind,
    message: String,
}

impl ProtocolError {
    fn malformed(message: impl Into<String>) -> Self {
        ProtocolError {
            kind: ProtocolErrorKind::Malformed,
            message: message.into(),
        }
    }

    fn too_long(message: impl Into<String>) -> Self {
        ProtocolError {
            kind: ProtocolErrorKind::TooLong,
            message: message.into(),
        }
    }

    pub fn kind(&self) -> ProtocolErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// FATAL error for the client: 08P01 protocol_violation, 54000 program_limit_exceeded
    /// for an over-long message, 0A000 for an unsupported protocol version.
    pub fn into_pg_error(self) -> PgError {
        let code = match self.kind {
            ProtocolErrorKind::Malformed => codes::PROTOCOL_VIOLATION,
            ProtocolErrorKind::TooLong => codes::PROGRAM_LIMIT_EXCEEDED,
            ProtocolErrorKind::UnsupportedProtocol => codes::FEATURE_NOT_SUPPORTED,
        };
        PgError::fatal(code, self.message)
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProtocolError {}

fn peek_i32(buf: &[u8]) -> i32 {
    i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]])
}

/// Decode the first packet of a connection (StartupMessage, SSLRequest, GSSENCRequest,
/// CancelRequest). `Ok(None)`: more bytes needed, nothing consumed. `Ok(Some)`: the packet
/// was consumed. After an SSLRequest/GSSENCRequest the client sends another start-up
/// packet, so call this again.
pub fn decode_startup(buf: &mut BytesMut) -> Result<Option<StartupPacket>, ProtocolError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = peek_i32(buf);
    if len < 8 {
        return Err(ProtocolError::malformed(format!(
            "invalid length of startup packet: {len}"
        )));
    }
    let len = len as usize;
    if len > MAX_STARTUP_LEN {
        return Err(ProtocolError::too_long(format!(
            "startup packet length {len} exceeds the limit of {MAX_STARTUP_LEN} bytes"
        )));
    }
    if buf.len() < 8 {
        return Ok(None);
    }
    let code = peek_i32(&buf[4..]) as u32;
    // Fixed-size requests: reject a wrong length before waiting for the body.
    let fixed = match code {
        SSL_REQUEST_CODE | GSSENC_REQUEST_CODE => Some(8),
        CANCEL_REQUEST_CODE => Some(16),
        _ => None,
    };
    if let Some(expected) = fixed {
        if len != expected {
            return Err(ProtocolError::malformed(format!(
                "invalid length of startup packet: {len} (expected {expected} for request code {code})"
            )));
        }
    } else if code >> 16 != 3 {
        return Err(ProtocolError {
            kind: ProtocolErrorKind::UnsupportedProtocol,
            message: format!(
                "unsupported frontend protocol {}.{}: server supports 3.0 to 3.0",
                code >> 16,
                code & 0xFFFF
            ),
        });
    }
    if buf.len() < len {
        return Ok(None);
    }
    let packet = buf.split_to(len).freeze();
    let mut r = Reader::new(packet.slice(8..), "startup packet");
    let out = match code {
        SSL_REQUEST_CODE => StartupPacket::SslRequest,
        GSSENC_REQUEST_CODE => StartupPacket::GssEncRequest,
        CANCEL_REQUEST_CODE => {
            let process_id = r.i32()?;
            let secret_key = r.i32()?;
            StartupPacket::Cancel {
                process_id,
                secret_key,
            }
        }
        _ => {
            // Pairs of NUL-terminated strings, then a single NUL as the last byte.
            let mut params = Vec::new();
            loop {
                if r.remaining() == 0 {
                    return Err(r.malformed("expected terminator as last byte"));
                }
                let name = r.cstr()?;
                if name.is_empty() {
                    break;
                }
                let value = r.cstr()?;
                params.push((name, value));
            }
            StartupPacket::Startup {
                protocol_version: code,
                params,
            }
        }
    };
    r.finish()?;
    Ok(Some(out))
}

/// Decode one regular message. `Ok(None)`: more bytes needed, nothing consumed.
///
/// The header alone is enough to reject an unknown tag, a length below 4, a length above
/// `max_len` (the declared length, which counts itself but not the tag), and a wrong length
/// for fixed-size messages; so a hostile length never makes the caller buffer the body.
pub fn decode_message(
    buf: &mut BytesMut,
    max_len: usize,
) -> Result<Option<FrontendMessage>, ProtocolError> {
    decode_message_in(buf, max_len, ClientEncoding::Utf8)
}

/// [`decode_message`] for a client whose strings (query text, names) are in `encoding`.
pub fn decode_message_in(
    buf: &mut BytesMut,
    max_len: usize,
    encoding: ClientEncoding,
) -> Result<Option<FrontendMessage>, ProtocolError> {
    let Some(&tag) = buf.first() else {
        return Ok(None);
    };
    let name = message_name(tag)
        .ok_or_else(|| ProtocolError::malformed(format!("invalid frontend message type {tag}")))?;
    if buf.len() < 5 {
        return Ok(None);
    }
    let len = peek_i32(&buf[1..]);
    if len < 4 {
        return Err(ProtocolError::malformed(format!(
            "invalid length {len} in {name} message"
        )));
    }
    let len = len as usize;
    let limit = match tag {
        b'S' | b'H' | b'X' | b'c' => {
            if len != 4 {
                return Err(ProtocolError::malformed(format!(
                    "invalid length {len} in {name} message (expected 4)"
                )));
            }
            4
        }
        b'D' | b'C' | b'E' | b'f' => max_len.min(SMALL_MESSAGE_LIMIT),
        _ => max_len,
    };
    if len > limit {
        return Err(ProtocolError::too_long(format!(
            "{name} message length {len} exceeds the limit of {limit} bytes"
        )));
    }
    if buf.len() < 1 + len {
        return Ok(None);
    }
    let mut frame = buf.split_to(1 + len);
    frame.advance(5);
    let mut r = Reader::new(frame.freeze(), name);
    r.encoding = encoding;
    // PostgreSQL ends the statement, not the session, for text it cannot read
    r.unreadable_ends_statement = matches!(tag, b'Q' | b'P' | b'B' | b'D' | b'C' | b'E');
    let msg = match tag {
        b'Q' => FrontendMessage::Query(r.cstr()?),
        b'P' => {
            let name = r.cstr()?;
            let query = r.cstr()?;
            let n = r.count(4, "parameter type")?;
            let mut param_types = Vec::with_capacity(n);
            for _ in 0..n {
                param_types.push(r.i32()? as u32);
            }
            FrontendMessage::Parse {
                name,
                query,
                param_types,
            }
        }
        b'B' => {
            let portal = r.cstr()?;
            let statement = r.cstr()?;
            let param_formats = r.i16_array("parameter format")?;
            // Each parameter takes at least its 4-byte length.
            let n = r.count(4, "parameter")?;
            let mut params = Vec::with_capacity(n);
            for _ in 0..n {
                let plen = r.i32()?;
                params.push(match plen {
                    -1 => None,
                    l if l < 0 => return Err(r.malformed(format!("invalid parameter length {l}"))),
                    l => Some(r.bytes(l as usize)?),
                });
            }
            let result_formats = r.i16_array("result format")?;
            FrontendMessage::Bind {
                portal,
                statement,
                param_formats,
                params,
                result_formats,
            }
        }
        b'D' | b'C' => {
            let kind = match r.u8()? {
                b'S' => DescribeKind::Statement,
                b'P' => DescribeKind::Portal,
                other => {
                    return Err(r.malformed(format!(
                        "invalid {} target type {other} (expected 'S' or 'P')",
                        if tag == b'D' { "DESCRIBE" } else { "CLOSE" }
                    )))
                }
            };
            let name = r.cstr()?;
            if tag == b'D' {
                FrontendMessage::Describe { kind, name }
            } else {
                FrontendMessage::Close { kind, name }
            }
        }
        b'E' => {
            let portal = r.cstr()?;
            let max_rows = r.i32()?;
            FrontendMessage::Execute { portal, max_rows }
        }
        b'H' => FrontendMessage::Flush,
        b'S' => FrontendMessage::Sync,
        b'X' => FrontendMessage::Terminate,
        b'd' => FrontendMessage::CopyData(r.rest()),
        b'c' => FrontendMessage::CopyDone,
        b'f' => FrontendMessage::CopyFail(r.cstr()?),
        b'p' => FrontendMessage::Password(r.rest()),
        _ => unreachable!("tag checked by message_name"),
    };
    r.finish()?;
    if let Some(error) = r.unreadable {
        return Ok(Some(FrontendMessage::Unreadable {
            simple_query: tag == b'Q',
            error,
        }));
    }
    Ok(Some(msg))
}

/// PostgreSQL's 22021 for bytes that are not UTF-8, naming the first bad sequence.
fn invalid_utf8(bytes: &[u8]) -> PgError {
    let at = std::str::from_utf8(bytes)
        .err()
        .map_or(0, |e| e.valid_up_to());
    let len = match bytes[at] {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    };
    let shown: Vec<String> = bytes[at..(at + len).min(bytes.len())]
        .iter()
        .map(|b| format!("0x{b:02x}"))
        .collect();
    PgError::new(
        codes::CHARACTER_NOT_IN_REPERTOIRE,
        format!(
            "invalid byte sequence for encoding \"UTF8\": {}",
            shown.join(" ")
        ),
    )
}

/// Protocol name of a frontend tag this codec accepts.
fn message_name(tag: u8) -> Option<&'static str> {
    Some(match tag {
        b'Q' => "Query",
        b'P' => "Parse",
        b'B' => "Bind",
        b'D' => "Describe",
        b'E' => "Execute",
        b'C' => "Close",
        b'H' => "Flush",
        b'S' => "Sync",
        b'X' => "Terminate",
        b'd' => "CopyData",
        b'c' => "CopyDone",
        b'f' => "CopyFail",
        b'p' => "PasswordMessage",
        _ => return None,
    })
}

/// Bounds-checked cursor over one message body.
struct Reader {
    body: Bytes,
    pos: usize,
    what: &'static str,
    /// How the client writes its strings.
    encoding: ClientEncoding,
    /// The error for the first string the encoding could not read, in a message that is
    /// answered with it rather than by closing the connection (`unreadable_ends_statement`).
    unreadable: Option<PgError>,
    unreadable_ends_statement: bool,
}

impl Reader {
    fn new(body: Bytes, what: &'static str) -> Self {
        Reader {
            body,
            pos: 0,
            what,
            encoding: ClientEncoding::Utf8,
            unreadable: None,
            unreadable_ends_statement: false,
        }
    }

    fn remaining(&self) -> usize {
        self.body.len() - self.pos
    }

    fn malformed(&self, detail: impl fmt::Display) -> ProtocolError {
        ProtocolError::malformed(format!("invalid {} message: {detail}", self.what))
    }

    fn take(&mut self, n: usize) -> Result<&[u8], ProtocolError> {
        if n > self.remaining() {
            return Err(self.malformed("insufficient data left in message"));
        }
        let s = &self.body[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, ProtocolError> {
        Ok(self.take(1)?[0])
    }

    fn i16(&mut self) -> Result<i16, ProtocolError> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Result<i32, ProtocolError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// An `int16` count of items of at least `item_size` bytes each; rejects negative
    /// counts and counts that cannot fit in the rest of the body, so the result is safe to
    /// allocate for.
    fn count(&mut self, item_size: usize, item: &str) -> Result<usize, ProtocolError> {
        let n = self.i16()?;
        if n < 0 {
            return Err(self.malformed(format!("negative {item} count {n}")));
        }
        let n = n as usize;
        if n * item_size > self.remaining() {
            return Err(self.malformed(format!(
                "{item} count {n} exceeds the {} bytes left in message",
                self.remaining()
            )));
        }
        Ok(n)
    }

    fn i16_array(&mut self, item: &str) -> Result<Vec<i16>, ProtocolError> {
        let n = self.count(2, item)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.i16()?);
        }
        Ok(v)
    }

    /// `n` bytes sharing the message buffer.
    fn bytes(&mut self, n: usize) -> Result<Bytes, ProtocolError> {
        if n > self.remaining() {
            return Err(self.malformed("insufficient data left in message"));
        }
        let b = self.body.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(b)
    }

    fn rest(&mut self) -> Bytes {
        let b = self.body.slice(self.pos..);
        self.pos = self.body.len();
        b
    }

    /// A NUL-terminated string in the client's encoding.
    fn cstr(&mut self) -> Result<String, ProtocolError> {
        let rest = &self.body[self.pos..];
        let Some(nul) = rest.iter().position(|&b| b == 0) else {
            return Err(self.malformed("missing string terminator"));
        };
        let s = match self.encoding.decode(&rest[..nul]) {
            Some(s) => s.into_owned(),
            None if self.unreadable_ends_statement => {
                let bytes = &rest[..nul];
                let error = self
                    .encoding
                    .decode_error(bytes)
                    .unwrap_or_else(|| invalid_utf8(bytes));
                self.unreadable.get_or_insert(error);
                String::new()
            }
            None => return Err(self.malformed("invalid UTF-8 in string")),
        };
        self.pos += nul + 1;
        Ok(s)
    }

    fn finish(&self) -> Result<(), ProtocolError> {
        if self.remaining() != 0 {
            return Err(self.malformed(format!("{} unexpected trailing bytes", self.remaining())));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(tag: u8, body: &[u8]) -> BytesMut {
        let mut b = BytesMut::new();
        b.extend_from_slice(&[tag]);
        b.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        b.extend_from_slice(body);
        b
    }

    #[test]
    fn sync_and_leftover_bytes_stay() {
        let mut b = msg(b'S', b"");
        b.extend_from_slice(b"Q\0\0");
        assert_eq!(
            decode_message(&mut b, 1 << 20).unwrap(),
            Some(FrontendMessage::Sync)
        );
        assert_eq!(&b[..], b"Q\0\0");
        assert_eq!(decode_message(&mut b, 1 << 20).unwrap(), None);
        assert_eq!(&b[..], b"Q\0\0");
    }

    #[test]
    fn unknown_tag_rejected_from_first_byte() {
        let mut b = BytesMut::from(&b"\x16"[..]);
        assert!(decode_message(&mut b, 1 << 20).is_err());
        let mut b = BytesMut::from(&b"F"[..]); // FunctionCall: not supported
        assert!(decode_message(&mut b, 1 << 20).is_err());
    }

    #[test]
    fn negative_count_rejected() {
        let mut body = b"\0SELECT 1\0".to_vec();
        body.extend_from_slice(&(-1i16).to_be_bytes());
        let e = decode_message(&mut msg(b'P', &body), 1 << 20).unwrap_err();
        assert_eq!(e.kind(), ProtocolErrorKind::Malformed);
        assert!(e.message().contains("negative"), "{e}");
    }

    #[test]
    fn count_larger_than_body_rejected_without_allocating() {
        let mut body = b"\0\0".to_vec();
        body.extend_from_slice(&i16::MAX.to_be_bytes());
        let e = decode_message(&mut msg(b'B', &body), 1 << 20).unwrap_err();
        assert!(e.message().contains("exceeds"), "{e}");
    }

    #[test]
    fn oversize_is_54000() {
        let mut b = BytesMut::from(&b"Q\x7f\xff\xff\xff"[..]);
        let e = decode_message(&mut b, 1 << 20).unwrap_err();
        assert_eq!(e.kind(), ProtocolErrorKind::TooLong);
        let pg = e.into_pg_error();
        assert_eq!(pg.code, "54000");
        assert_eq!(pg.severity, pgerror::Severity::Fatal);
    }

    #[test]
    fn malformed_is_08p01_fatal() {
        let e = decode_message(&mut msg(b'Q', b"select 1"), 1 << 20).unwrap_err();
        let pg = e.into_pg_error();
        assert_eq!(pg.code, "08P01");
        assert_eq!(pg.severity, pgerror::Severity::Fatal);
        assert!(pg.message.contains("Query"), "{}", pg.message);
    }

    #[test]
    fn protocol_2_rejected_as_0a000() {
        let mut b = BytesMut::new();
        b.extend_from_slice(&9i32.to_be_bytes());
        b.extend_from_slice(&(2u32 << 16).to_be_bytes());
        b.extend_from_slice(b"\0");
        let e = decode_startup(&mut b).unwrap_err();
        assert_eq!(e.into_pg_error().code, "0A000");
    }

    #[test]
    fn param_format_rules() {
        assert_eq!(param_format(&[], 2, 1), Some(0));
        assert_eq!(param_format(&[1], 2, 1), Some(1));
        assert_eq!(param_format(&[0, 1], 2, 1), Some(1));
        assert_eq!(param_format(&[0, 1, 1], 2, 1), None);
        assert_eq!(param_format(&[0, 1], 2, 2), None);
    }

    #[test]
    fn sasl_initial_response() {
        let mut body = b"SCRAM-SHA-256\0".to_vec();
        body.extend_from_slice(&5i32.to_be_bytes());
        body.extend_from_slice(b"n,,n=");
        let (m, d) = PasswordBody::sasl_initial_response(&Bytes::from(body)).unwrap();
        assert_eq!(m, "SCRAM-SHA-256");
        assert_eq!(d.as_deref(), Some(&b"n,,n="[..]));
        assert!(
            PasswordBody::sasl_initial_response(&Bytes::from_static(b"X\0\xff\xff\xff\xfe"))
                .is_err()
        );
        assert_eq!(
            PasswordBody::password(&Bytes::from_static(b"secret\0")).unwrap(),
            "secret"
        );
        assert!(PasswordBody::password(&Bytes::from_static(b"secret")).is_err());
    }
}
