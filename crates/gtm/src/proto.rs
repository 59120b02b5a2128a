//! The GTM wire format, version 3. Documented in `crates/gtm/README.md`; keep the two in
//! step. All integers are little-endian.
//!
//! Handshake (client first):
//!   client: magic "MGTM", u16 version, u16 flags (0), u32 n_live, n_live × u64 start ts
//!   server: magic "MGTM", u16 version, u16 status (0 ok, 1 unsupported version),
//!           u64 horizon, u64 next, u64 metadata version;
//!           if status != 0: u32 len + UTF-8 message, then close.
//! Frames after it: u32 body length, then the body.
//!   request body:  u8 kind (1 = batch), u64 seq, u32 n_begin, u32 n_timestamp,
//!                  u32 n_commit, u32 n_finish, u32 n_decide, u32 n_resolve, u32 n_forget,
//!                  then the start ts of the commits, finishes, decides, resolves and
//!                  forgets (n × u64 each, in that order)
//!   response body: u8 kind, u64 seq, then
//!                  kind 1 (ok):    u64 begin_first, u64 ts_first, u64 commit_first, u64 horizon,
//!                                  u64 metadata version, n_decide × u64 (commit ts, or
//!                                  [`DECIDE_REFUSED`]), n_resolve × u64 (commit ts, or
//!                                  [`RESOLVED_ABORTED`] / [`RESOLVED_PENDING`])
//!                  kind 2 (error): 5 bytes SQLSTATE, u32 len + UTF-8 message

use pgerror::{codes, PgError};

use crate::Resolution;

pub const MAGIC: &[u8; 4] = b"MGTM";
pub const VERSION: u16 = 3;

pub const STATUS_OK: u16 = 0;
pub const STATUS_UNSUPPORTED_VERSION: u16 = 1;

pub const KIND_BATCH: u8 = 1;
pub const KIND_ERROR: u8 = 2;

/// Largest frame body either side accepts (16 MiB).
pub const MAX_FRAME: usize = 16 << 20;
/// Largest number of requests of one kind in a batch, and of live timestamps in a handshake.
pub const MAX_COUNT: u32 = 1 << 20;

pub const HANDSHAKE_REPLY_LEN: usize = 4 + 2 + 2 + 8 + 8 + 8;
pub const BATCH_HEADER_LEN: usize = 1 + 8 + 7 * 4;
/// The fixed part of an ok answer (the decide and resolve answers follow it).
pub const BATCH_OK_LEN: usize = 1 + 8 + 8 * 5;

/// A decide's answer when `start` was recorded aborted (0 is never a timestamp).
pub const DECIDE_REFUSED: u64 = 0;
/// A resolve's answer: recorded aborted.
pub const RESOLVED_ABORTED: u64 = 0;
/// A resolve's answer: undecided, and its coordinator still holds it.
pub const RESOLVED_PENDING: u64 = u64::MAX;

/// A resolve's answer on the wire.
pub fn encode_resolution(r: Resolution) -> u64 {
    match r {
        Resolution::Committed(ts) => ts,
        Resolution::Aborted => RESOLVED_ABORTED,
        Resolution::Pending => RESOLVED_PENDING,
    }
}

pub fn decode_resolution(v: u64) -> Resolution {
    match v {
        RESOLVED_ABORTED => Resolution::Aborted,
        RESOLVED_PENDING => Resolution::Pending,
        ts => Resolution::Committed(ts),
    }
}

#[inline]
pub fn put_u16(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_le_bytes());
}
#[inline]
pub fn put_u32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}
#[inline]
pub fn put_u64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}

/// A cursor over a received body; every read is bounds-checked.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], PgError> {
        if self.buf.len() - self.pos < n {
            return Err(violation("GTM message is truncated"));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    pub fn u8(&mut self) -> Result<u8, PgError> {
        Ok(self.bytes(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16, PgError> {
        Ok(u16::from_le_bytes(self.bytes(2)?.try_into().unwrap()))
    }
    pub fn u32(&mut self) -> Result<u32, PgError> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().unwrap()))
    }
    pub fn u64(&mut self) -> Result<u64, PgError> {
        Ok(u64::from_le_bytes(self.bytes(8)?.try_into().unwrap()))
    }
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
}

pub fn violation(msg: impl Into<String>) -> PgError {
    PgError::new(codes::PROTOCOL_VIOLATION, msg)
}

/// Maps a SQLSTATE received from the peer onto one of the static codes Meridian knows,
/// so that `PgError::code` can stay `&'static str`.
pub fn static_code(code: &[u8]) -> &'static str {
    std::str::from_utf8(code)
        .ok()
        .and_then(codes::known)
        .unwrap_or(codes::INTERNAL_ERROR)
}
