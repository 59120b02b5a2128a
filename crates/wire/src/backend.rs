//! Encoding of server → client messages.
//!
//! Every function appends exactly one complete message (tag, `int32` length, body) to `out`
//! — except [`ssl_refused`], which is the bare byte `N` PostgreSQL answers to SSLRequest and
//! GSSENCRequest. Nothing here allocates besides growing `out`.
//!
//! Strings are written as C strings; an interior NUL byte would end the field early and
//! corrupt the message layout, so interior NULs are dropped (PostgreSQL text can never
//! contain NUL, so this only matters for bugs).
//!
//! Lengths and counts that cannot be represented (a message over `i32::MAX` bytes, more than
//! `i16::MAX` columns) are caller bugs and panic with a clear message.

use bytes::{BufMut, BytesMut};
use pgerror::PgError;

/// Transaction state reported in ReadyForQuery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionStatus {
    /// `I`: not in a transaction block.
    Idle,
    /// `T`: in a transaction block.
    InBlock,
    /// `E`: in a failed transaction block (queries rejected until the block ends).
    Failed,
}

impl TransactionStatus {
    pub fn as_byte(self) -> u8 {
        match self {
            TransactionStatus::Idle => b'I',
            TransactionStatus::InBlock => b'T',
            TransactionStatus::Failed => b'E',
        }
    }
}

/// One column of a RowDescription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDescription<'a> {
    /// Borrowed from the plan on the hot path: a RowDescription goes out with every
    /// Execute of a client that describes its portal each time (libpq does).
    pub name: std::borrow::Cow<'a, str>,
    /// OID of the source table, or 0.
    pub table_oid: u32,
    /// Attribute number of the column in the source table, or 0.
    pub column_attr: i16,
    pub type_oid: u32,
    /// `pg_type.typlen`: e.g. 4 for int4, -1 for varlena types.
    pub type_len: i16,
    /// `atttypmod`, -1 when none.
    pub type_modifier: i32,
    /// 0 = text, 1 = binary.
    pub format: i16,
}

/// Severity of a NoticeResponse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeSeverity {
    Warning,
    Notice,
    Info,
    Log,
    Debug,
}

impl NoticeSeverity {
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeSeverity::Warning => "WARNING",
            NoticeSeverity::Notice => "NOTICE",
            NoticeSeverity::Info => "INFO",
            NoticeSeverity::Log => "LOG",
            NoticeSeverity::Debug => "DEBUG",
        }
    }
}

/// Start a message: tag and a length placeholder. Returns the length's offset.
#[inline]
fn begin(out: &mut BytesMut, tag: u8) -> usize {
    out.put_u8(tag);
    let at = out.len();
    out.put_i32(0);
    at
}

/// Patch the length at `at` to cover everything written since (including itself).
#[inline]
fn finish(out: &mut BytesMut, at: usize) {
    patch_len(out, at, out.len() - at);
}

#[inline]
fn patch_len(out: &mut BytesMut, at: usize, len: usize) {
    let len = i32::try_from(len).expect("wire: message or field longer than i32::MAX bytes");
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

#[inline]
fn put_cstr(out: &mut BytesMut, s: &str) {
    let b = s.as_bytes();
    if b.contains(&0) {
        out.extend(b.iter().copied().filter(|&c| c != 0));
    } else {
        out.extend_from_slice(b);
    }
    out.put_u8(0);
}

#[inline]
fn count_i16(n: usize, what: &str) -> i16 {
    i16::try_from(n).unwrap_or_else(|_| panic!("wire: {n} {what} do not fit an int16 count"))
}

/// A message with an empty body.
#[inline]
fn empty(out: &mut BytesMut, tag: u8) {
    out.put_u8(tag);
    out.put_i32(4);
}

/// The single byte `N` refusing SSLRequest (and GSSENCRequest); not a framed message.
pub fn ssl_refused(out: &mut BytesMut) {
    out.put_u8(b'N');
}

/// AuthenticationOk (`R`, 0).
pub fn authentication_ok(out: &mut BytesMut) {
    out.put_u8(b'R');
    out.put_i32(8);
    out.put_i32(0);
}

/// AuthenticationCleartextPassword (`R`, 3).
pub fn authentication_cleartext_password(out: &mut BytesMut) {
    out.put_u8(b'R');
    out.put_i32(8);
    out.put_i32(3);
}

/// AuthenticationMD5Password (`R`, 5, 4-byte salt).
pub fn authentication_md5_password(out: &mut BytesMut, salt: [u8; 4]) {
    out.put_u8(b'R');
    out.put_i32(12);
    out.put_i32(5);
    out.put_slice(&salt);
}

/// AuthenticationSASL (`R`, 10): NUL-terminated mechanism names, then an empty one.
pub fn authentication_sasl(out: &mut BytesMut, mechanisms: &[&str]) {
    let at = begin(out, b'R');
    out.put_i32(10);
    for m in mechanisms {
        put_cstr(out, m);
    }
    out.put_u8(0);
    finish(out, at);
}

/// AuthenticationSASLContinue (`R`, 11, server-first-message).
pub fn authentication_sasl_continue(out: &mut BytesMut, data: &[u8]) {
    let at = begin(out, b'R');
    out.put_i32(11);
    out.put_slice(data);
    finish(out, at);
}

/// AuthenticationSASLFinal (`R`, 12, server-final-message).
pub fn authentication_sasl_final(out: &mut BytesMut, data: &[u8]) {
    let at = begin(out, b'R');
    out.put_i32(12);
    out.put_slice(data);
    finish(out, at);
}

/// ParameterStatus (`S`).
pub fn parameter_status(out: &mut BytesMut, name: &str, value: &str) {
    let at = begin(out, b'S');
    put_cstr(out, name);
    put_cstr(out, value);
    finish(out, at);
}

/// BackendKeyData (`K`).
pub fn backend_key_data(out: &mut BytesMut, process_id: i32, secret_key: i32) {
    out.put_u8(b'K');
    out.put_i32(12);
    out.put_i32(process_id);
    out.put_i32(secret_key);
}

/// ReadyForQuery (`Z`).
pub fn ready_for_query(out: &mut BytesMut, status: TransactionStatus) {
    out.put_u8(b'Z');
    out.put_i32(5);
    out.put_u8(status.as_byte());
}

/// RowDescription (`T`).
pub fn row_description(out: &mut BytesMut, fields: &[FieldDescription<'_>]) {
    let at = begin(out, b'T');
    out.put_i16(count_i16(fields.len(), "fields"));
    for f in fields {
        put_cstr(out, &f.name);
        out.put_u32(f.table_oid);
        out.put_i16(f.column_attr);
        out.put_u32(f.type_oid);
        out.put_i16(f.type_len);
        out.put_i32(f.type_modifier);
        out.put_i16(f.format);
    }
    finish(out, at);
}

/// NoData (`n`).
pub fn no_data(out: &mut BytesMut) {
    empty(out, b'n');
}

/// ParameterDescription (`t`).
pub fn parameter_description(out: &mut BytesMut, type_oids: &[u32]) {
    let at = begin(out, b't');
    out.put_i16(count_i16(type_oids.len(), "parameters"));
    for &oid in type_oids {
        out.put_u32(oid);
    }
    finish(out, at);
}

/// ParseComplete (`1`).
pub fn parse_complete(out: &mut BytesMut) {
    empty(out, b'1');
}

/// BindComplete (`2`).
pub fn bind_complete(out: &mut BytesMut) {
    empty(out, b'2');
}

/// CloseComplete (`3`).
pub fn close_complete(out: &mut BytesMut) {
    empty(out, b'3');
}

/// PortalSuspended (`s`).
pub fn portal_suspended(out: &mut BytesMut) {
    empty(out, b's');
}

/// EmptyQueryResponse (`I`).
pub fn empty_query_response(out: &mut BytesMut) {
    empty(out, b'I');
}

/// CommandComplete (`C`), e.g. `"SELECT 1"`, `"INSERT 0 1"`.
pub fn command_complete(out: &mut BytesMut, tag: &str) {
    let at = begin(out, b'C');
    put_cstr(out, tag);
    finish(out, at);
}

fn error_fields(out: &mut BytesMut, tag: u8, severity: &str, err: &PgError) {
    let at = begin(out, tag);
    out.put_u8(b'S');
    put_cstr(out, severity);
    out.put_u8(b'V');
    put_cstr(out, severity);
    out.put_u8(b'C');
    put_cstr(out, err.code);
    out.put_u8(b'M');
    put_cstr(out, &err.message);
    if let Some(d) = &err.detail {
        out.put_u8(b'D');
        put_cstr(out, d);
    }
    if let Some(h) = &err.hint {
        out.put_u8(b'H');
        put_cstr(out, h);
    }
    if let Some(p) = err.position {
        out.put_u8(b'P');
        // A u32 in decimal: at most 10 digits, formatted without allocating.
        let mut digits = [0u8; 10];
        let mut i = digits.len();
        let mut v = p;
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        out.put_slice(&digits[i..]);
        out.put_u8(0);
    }
    out.put_u8(0);
    finish(out, at);
}

/// ErrorResponse (`E`): fields S and V (`ERROR`/`FATAL` from `err.severity`), C, M, then D,
/// H, P when present, then the terminating NUL.
pub fn error_response(out: &mut BytesMut, err: &PgError) {
    error_fields(out, b'E', err.severity.as_str(), err);
}

/// NoticeResponse (`N`) with the same fields as [`error_response`]. `PgError::severity`
/// only knows ERROR/FATAL, so it is ignored here: the severity is `WARNING` for SQLSTATE
/// class 01 (warning) and `NOTICE` otherwise. Use [`notice_response_with`] to choose it
/// (e.g. PostgreSQL's `WARNING 25P01 there is no transaction in progress`).
pub fn notice_response(out: &mut BytesMut, err: &PgError) {
    let severity = if err.code.starts_with("01") {
        NoticeSeverity::Warning
    } else {
        NoticeSeverity::Notice
    };
    notice_response_with(out, severity, err);
}

/// NoticeResponse (`N`) with an explicit severity.
pub fn notice_response_with(out: &mut BytesMut, severity: NoticeSeverity, err: &PgError) {
    error_fields(out, b'N', severity.as_str(), err);
}

/// CopyInResponse (`G`): the overall format (0 text or CSV, 1 binary), the same for
/// each column.
pub fn copy_in_response(out: &mut BytesMut, column_count: i16, binary: bool) {
    copy_response(out, b'G', column_count, binary);
}

/// CopyOutResponse (`H`), formats as CopyInResponse's.
pub fn copy_out_response(out: &mut BytesMut, column_count: i16, binary: bool) {
    copy_response(out, b'H', column_count, binary);
}

fn copy_response(out: &mut BytesMut, tag: u8, column_count: i16, binary: bool) {
    assert!(
        column_count >= 0,
        "wire: negative COPY column count {column_count}"
    );
    out.put_u8(tag);
    out.put_i32(4 + 1 + 2 + 2 * column_count as i32);
    out.put_i8(i8::from(binary));
    out.put_i16(column_count);
    for _ in 0..column_count {
        out.put_i16(i16::from(binary));
    }
}

/// CopyData (`d`) from the server (COPY TO STDOUT).
pub fn copy_data(out: &mut BytesMut, data: &[u8]) {
    let at = begin(out, b'd');
    out.put_slice(data);
    finish(out, at);
}

/// CopyDone (`c`) from the server.
pub fn copy_done(out: &mut BytesMut) {
    empty(out, b'c');
}

/// NegotiateProtocolVersion (`v`): the newest minor version supported for the requested
/// major version, and the `_pq_.*` options the server did not recognise.
pub fn negotiate_protocol_version(out: &mut BytesMut, newest_minor: u32, unrecognized: &[String]) {
    let at = begin(out, b'v');
    out.put_u32(newest_minor);
    out.put_i32(i32::try_from(unrecognized.len()).expect("wire: too many options"));
    for o in unrecognized {
        put_cstr(out, o);
    }
    finish(out, at);
}

/// DataRow (`D`) with all values given at once (`None` = NULL).
pub fn data_row(out: &mut BytesMut, values: &[Option<&[u8]>]) {
    let mut w = DataRowWriter::begin(out, count_i16(values.len(), "columns"));
    for v in values {
        match v {
            Some(b) => w.field(b),
            None => w.null(),
        }
    }
    w.finish();
}

/// Builds one DataRow (`D`) in place in the output buffer, without intermediate
/// allocation.
///
/// `begin` writes the header; each `null`/`field`/`field_with` appends one column;
/// `finish` patches the message length and the column count (set to the number of columns
/// actually written; a mismatch with `begin`'s count is a bug and trips a debug assertion).
///
/// Dropping the writer without calling `finish` removes the partial row from `out`, so a
/// caller that fails half-way through a row (e.g. a value cannot be encoded) can send an
/// ErrorResponse instead and leave the stream well-formed.
pub struct DataRowWriter<'a> {
    out: &'a mut BytesMut,
    start: usize,
    declared: i16,
    written: usize,
    finished: bool,
}

impl<'a> DataRowWriter<'a> {
    pub fn begin(out: &'a mut BytesMut, column_count: i16) -> Self {
        let start = out.len();
        out.put_u8(b'D');
        out.put_i32(0);
        out.put_i16(column_count);
        DataRowWriter {
            out,
            start,
            declared: column_count,
            written: 0,
            finished: false,
        }
    }

    /// A NULL column (length -1).
    pub fn null(&mut self) {
        self.out.put_i32(-1);
        self.written += 1;
    }

    /// A non-NULL column.
    pub fn field(&mut self, bytes: &[u8]) {
        self.out
            .put_i32(i32::try_from(bytes.len()).expect("wire: field longer than i32::MAX"));
        self.out.put_slice(bytes);
        self.written += 1;
    }

    /// A non-NULL column whose bytes `write` appends directly to the buffer (e.g. with
    /// `std::fmt::Write`/`itoa`-style formatting); the length slot is patched afterwards.
    /// `write` must only append.
    pub fn field_with(&mut self, write: impl FnOnce(&mut BytesMut)) {
        let at = self.out.len();
        self.out.put_i32(0);
        write(self.out);
        assert!(
            self.out.len() >= at + 4,
            "wire: field_with closure shrank the buffer"
        );
        let len = self.out.len() - at - 4;
        patch_len(self.out, at, len);
        self.written += 1;
    }

    /// Number of columns written so far.
    pub fn columns_written(&self) -> usize {
        self.written
    }

    /// Patch the message length (and column count); the row is complete.
    pub fn finish(mut self) {
        debug_assert_eq!(
            self.written, self.declared as usize,
            "wire: DataRow declared {} columns but {} were written",
            self.declared, self.written
        );
        let count = count_i16(self.written, "columns");
        let start = self.start;
        self.out[start + 5..start + 7].copy_from_slice(&count.to_be_bytes());
        finish(self.out, start + 1);
        self.finished = true;
    }

    /// Discard the partial row (same as dropping the writer).
    pub fn abandon(self) {}
}

impl Drop for DataRowWriter<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.out.truncate(self.start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_for_query_idle_bytes() {
        let mut out = BytesMut::new();
        ready_for_query(&mut out, TransactionStatus::Idle);
        assert_eq!(&out[..], &[0x5A, 0, 0, 0, 5, 0x49]);
    }

    #[test]
    fn interior_nul_dropped() {
        let mut out = BytesMut::new();
        command_complete(&mut out, "SEL\0ECT 1");
        assert_eq!(&out[..], b"C\0\0\0\x0dSELECT 1\0");
    }

    #[test]
    fn abandoned_row_is_removed() {
        let mut out = BytesMut::new();
        ready_for_query(&mut out, TransactionStatus::Idle);
        {
            let mut w = DataRowWriter::begin(&mut out, 2);
            w.field(b"abc");
        }
        assert_eq!(out.len(), 6);
    }

    #[test]
    fn position_digits() {
        let mut out = BytesMut::new();
        error_response(
            &mut out,
            &PgError::new("42601", "x").with_position(4_294_967_295),
        );
        assert!(out.windows(12).any(|w| w == b"P4294967295\0"));
        let mut out = BytesMut::new();
        error_response(&mut out, &PgError::new("42601", "x").with_position(0));
        assert!(out.windows(3).any(|w| w == b"P0\0"));
    }
}
