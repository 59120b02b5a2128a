//! Storage encodings.
//!
//! * Row encoding (`encode_row`/`decode_row`): a varint column count, then per value a tag
//!   byte and a payload. Self-describing; decoding untrusted bytes returns XX001
//!   (data_corrupted) and never panics.
//! * Key encoding (`encode_key`): memcomparable — `memcmp` order of the encodings equals SQL
//!   order of the values (ASC, NULLS LAST), column by column. All integer widths (and oids
//!   are separate) encode as i64 so int4 5 and int8 5 give the same bytes.

use crate::numeric::{Numeric, Parts};
use crate::Value;
use num_bigint::{BigInt, BigUint, Sign};
use pgerror::{PgError, PgResult};

/// SQLSTATE XX001 data_corrupted.
pub const DATA_CORRUPTED: &str = "XX001";

fn corrupted(what: &str) -> PgError {
    PgError::new(DATA_CORRUPTED, format!("corrupted row data: {what}"))
}

mod tag {
    pub const NULL: u8 = 0;
    pub const FALSE: u8 = 1;
    pub const TRUE: u8 = 2;
    pub const INT2: u8 = 3;
    pub const INT4: u8 = 4;
    pub const INT8: u8 = 5;
    pub const FLOAT4: u8 = 6;
    pub const FLOAT8: u8 = 7;
    /// rust_decimal's 16-byte layout, written before numeric became arbitrary precision.
    pub const NUMERIC_DECIMAL96: u8 = 8;
    pub const TEXT: u8 = 9;
    pub const BYTEA: u8 = 10;
    pub const DATE: u8 = 11;
    pub const TIME: u8 = 12;
    pub const TIMESTAMP: u8 = 13;
    pub const TIMESTAMPTZ: u8 = 14;
    pub const INTERVAL: u8 = 15;
    pub const OID: u8 = 16;
    pub const ARRAY: u8 = 17;
    /// Text ending in a run of spaces (blank-padded `char(n)`): body, then the run length.
    pub const TEXT_PADDED: u8 = 18;
    /// A kind byte (`numeric_kind`), then for finite values dscale (u16) and the coefficient.
    pub const NUMERIC: u8 = 19;
    pub const UUID: u8 = 20;
    /// jsonb: its text (`Jsonb::to_text`), parsed again when read.
    pub const JSONB: u8 = 21;
    /// An enum value: its sort order (f32), then its label as text.
    pub const ENUM: u8 = 22;
}

/// What follows `tag::NUMERIC`.
mod numeric_kind {
    /// dscale u16, coefficient i64.
    pub const SMALL: u8 = 0;
    /// dscale u16, varint length, magnitude bytes (little-endian).
    pub const BIG_POS: u8 = 1;
    pub const BIG_NEG: u8 = 2;
    pub const NAN: u8 = 3;
    pub const POS_INF: u8 = 4;
    pub const NEG_INF: u8 = 5;
}

fn encode_numeric(n: &Numeric, out: &mut Vec<u8>) {
    use numeric_kind as k;
    match n.parts() {
        Parts::Small(coef, dscale) => {
            out.push(k::SMALL);
            out.extend_from_slice(&dscale.to_le_bytes());
            out.extend_from_slice(&coef.to_le_bytes());
        }
        Parts::Big(coef, dscale) => {
            out.push(if coef.sign() == Sign::Minus {
                k::BIG_NEG
            } else {
                k::BIG_POS
            });
            out.extend_from_slice(&dscale.to_le_bytes());
            let mag = coef.magnitude().to_bytes_le();
            put_varint(out, mag.len() as u64);
            out.extend_from_slice(&mag);
        }
        Parts::NaN => out.push(k::NAN),
        Parts::PosInf => out.push(k::POS_INF),
        Parts::NegInf => out.push(k::NEG_INF),
    }
}

fn decode_numeric(r: &mut Reader<'_>) -> PgResult<Numeric> {
    use numeric_kind as k;
    let bad = || corrupted("bad numeric");
    let kind = r.u8()?;
    match kind {
        k::NAN => return Ok(Numeric::NAN),
        k::POS_INF => return Ok(Numeric::POS_INF),
        k::NEG_INF => return Ok(Numeric::NEG_INF),
        k::SMALL | k::BIG_POS | k::BIG_NEG => {}
        _ => return Err(bad()),
    }
    let dscale = u16::from_le_bytes(r.arr()?);
    let coef = if kind == k::SMALL {
        BigInt::from(i64::from_le_bytes(r.arr()?))
    } else {
        let n = r.len()?;
        let mag = BigUint::from_bytes_le(r.take(n)?);
        BigInt::from_biguint(
            if kind == k::BIG_NEG {
                Sign::Minus
            } else {
                Sign::Plus
            },
            mag,
        )
    };
    Numeric::from_parts(coef, dscale).ok_or_else(bad)
}

/// The legacy 16-byte layout: flags (scale in bits 16..24, sign in bit 31), then the
/// 96-bit coefficient as three little-endian u32 (lo, mid, hi).
fn decode_numeric_decimal96(b: [u8; 16]) -> PgResult<Numeric> {
    let flags = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let scale = (flags >> 16) & 0xff;
    if flags & 0x7F00_FFFF != 0 || scale > 28 {
        return Err(corrupted("bad numeric"));
    }
    let word =
        |i: usize| u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]) as u128;
    let mag = word(1) | (word(2) << 32) | (word(3) << 64);
    let coef = if flags >> 31 == 1 {
        -BigInt::from(mag)
    } else {
        BigInt::from(mag)
    };
    Numeric::from_parts(coef, scale as u16).ok_or_else(|| corrupted("bad numeric"))
}

/// Trailing spaces from which text is stored as `TEXT_PADDED`: a `char(84)` column such
/// as pgbench's filler then takes 3 bytes instead of 86, so that more rows fit the cache.
const MIN_PAD_RUN: usize = 8;
/// Longest run stored that way: the longest `char(n)` (bounds what corrupt data can allocate).
const MAX_PAD_RUN: usize = 10 * 1024 * 1024;

const MAX_ARRAY_DEPTH: usize = 8;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> PgResult<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.b.len())
            .ok_or_else(|| corrupted("truncated value"))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn arr<const N: usize>(&mut self) -> PgResult<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("length checked"))
    }
    fn u8(&mut self) -> PgResult<u8> {
        Ok(self.take(1)?[0])
    }
    fn varint(&mut self) -> PgResult<u64> {
        // one byte for every length under 128 (a row's width, most texts)
        if let Some(&c) = self.b.get(self.at).filter(|&&c| c < 0x80) {
            self.at += 1;
            return Ok(u64::from(c));
        }
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let c = self.u8()?;
            v |= ((c & 0x7f) as u64) << shift;
            if c & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(corrupted("bad varint"))
    }
    fn len(&mut self) -> PgResult<usize> {
        let n = self.varint()?;
        if n > (self.b.len() - self.at) as u64 {
            return Err(corrupted("length past end"));
        }
        Ok(n as usize)
    }
}

fn encode_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(tag::NULL),
        Value::Bool(b) => out.push(if *b { tag::TRUE } else { tag::FALSE }),
        Value::Int2(i) => {
            out.push(tag::INT2);
            out.extend_from_slice(&i.to_le_bytes())
        }
        Value::Int4(i) => {
            out.push(tag::INT4);
            out.extend_from_slice(&i.to_le_bytes())
        }
        Value::Int8(i) => {
            out.push(tag::INT8);
            out.extend_from_slice(&i.to_le_bytes())
        }
        Value::Float4(f) => {
            out.push(tag::FLOAT4);
            out.extend_from_slice(&f.to_le_bytes())
        }
        Value::Float8(f) => {
            out.push(tag::FLOAT8);
            out.extend_from_slice(&f.to_le_bytes())
        }
        Value::Numeric(d) => {
            out.push(tag::NUMERIC);
            encode_numeric(d, out)
        }
        Value::Text(s) => {
            // Trimmed as bytes (a space byte is never inside a multi-byte character):
            // `trim_end_matches` decoded each char of a `char(84)` value's padding, 6 % of
            // COPY's instructions per pgbench_accounts row.
            let body = &s[..s.bytes().rposition(|b| b != b' ').map_or(0, |i| i + 1)];
            let pad = s.len() - body.len();
            if (MIN_PAD_RUN..=MAX_PAD_RUN).contains(&pad) {
                out.push(tag::TEXT_PADDED);
                put_varint(out, body.len() as u64);
                out.extend_from_slice(body.as_bytes());
                put_varint(out, pad as u64);
            } else {
                out.push(tag::TEXT);
                put_varint(out, s.len() as u64);
                out.extend_from_slice(s.as_bytes())
            }
        }
        Value::Bytea(b) => {
            out.push(tag::BYTEA);
            put_varint(out, b.len() as u64);
            out.extend_from_slice(b)
        }
        Value::Date(d) => {
            out.push(tag::DATE);
            out.extend_from_slice(&d.to_le_bytes())
        }
        Value::Time(t) => {
            out.push(tag::TIME);
            out.extend_from_slice(&t.to_le_bytes())
        }
        Value::Timestamp(t) => {
            out.push(tag::TIMESTAMP);
            out.extend_from_slice(&t.to_le_bytes())
        }
        Value::TimestampTz(t) => {
            out.push(tag::TIMESTAMPTZ);
            out.extend_from_slice(&t.to_le_bytes())
        }
        Value::Interval {
            months,
            days,
            micros,
        } => {
            out.push(tag::INTERVAL);
            out.extend_from_slice(&months.to_le_bytes());
            out.extend_from_slice(&days.to_le_bytes());
            out.extend_from_slice(&micros.to_le_bytes())
        }
        Value::Oid(o) => {
            out.push(tag::OID);
            out.extend_from_slice(&o.to_le_bytes())
        }
        Value::Uuid(u) => {
            out.push(tag::UUID);
            out.extend_from_slice(u)
        }
        Value::Jsonb(j) => {
            let text = j.to_text();
            out.push(tag::JSONB);
            put_varint(out, text.len() as u64);
            out.extend_from_slice(text.as_bytes())
        }
        Value::Enum { sort, label } => {
            out.push(tag::ENUM);
            out.extend_from_slice(&sort.to_le_bytes());
            put_varint(out, label.len() as u64);
            out.extend_from_slice(label.as_bytes())
        }
        Value::Array(items) => {
            out.push(tag::ARRAY);
            put_varint(out, items.len() as u64);
            for it in items {
                encode_value(it, out);
            }
        }
    }
}

fn decode_value(r: &mut Reader<'_>, depth: usize) -> PgResult<Value> {
    Ok(match r.u8()? {
        tag::NULL => Value::Null,
        tag::FALSE => Value::Bool(false),
        tag::TRUE => Value::Bool(true),
        tag::INT2 => Value::Int2(i16::from_le_bytes(r.arr()?)),
        tag::INT4 => Value::Int4(i32::from_le_bytes(r.arr()?)),
        tag::INT8 => Value::Int8(i64::from_le_bytes(r.arr()?)),
        tag::FLOAT4 => Value::Float4(f32::from_le_bytes(r.arr()?)),
        tag::FLOAT8 => Value::Float8(f64::from_le_bytes(r.arr()?)),
        tag::NUMERIC => Value::Numeric(decode_numeric(r)?),
        tag::NUMERIC_DECIMAL96 => Value::Numeric(decode_numeric_decimal96(r.arr()?)?),
        tag::TEXT => {
            let n = r.len()?;
            let s =
                std::str::from_utf8(r.take(n)?).map_err(|_| corrupted("invalid UTF-8 in text"))?;
            Value::Text(s.to_string())
        }
        tag::TEXT_PADDED => {
            let n = r.len()?;
            let body =
                std::str::from_utf8(r.take(n)?).map_err(|_| corrupted("invalid UTF-8 in text"))?;
            let pad = r.varint()? as usize;
            if pad > MAX_PAD_RUN {
                return Err(corrupted("bad padding length"));
            }
            let mut s = String::with_capacity(n + pad);
            s.push_str(body);
            crate::io::push_spaces(&mut s, pad);
            Value::Text(s)
        }
        tag::BYTEA => {
            let n = r.len()?;
            Value::Bytea(r.take(n)?.to_vec())
        }
        tag::DATE => Value::Date(i32::from_le_bytes(r.arr()?)),
        tag::TIME => Value::Time(i64::from_le_bytes(r.arr()?)),
        tag::TIMESTAMP => Value::Timestamp(i64::from_le_bytes(r.arr()?)),
        tag::TIMESTAMPTZ => Value::TimestampTz(i64::from_le_bytes(r.arr()?)),
        tag::INTERVAL => Value::Interval {
            months: i32::from_le_bytes(r.arr()?),
            days: i32::from_le_bytes(r.arr()?),
            micros: i64::from_le_bytes(r.arr()?),
        },
        tag::OID => Value::Oid(u32::from_le_bytes(r.arr()?)),
        tag::UUID => Value::Uuid(r.arr()?),
        tag::JSONB => {
            let n = r.len()?;
            let text =
                std::str::from_utf8(r.take(n)?).map_err(|_| corrupted("invalid UTF-8 in jsonb"))?;
            Value::Jsonb(Box::new(
                crate::json::parse(text).map_err(|_| corrupted("invalid jsonb"))?,
            ))
        }
        tag::ENUM => {
            let sort = f32::from_le_bytes(r.arr()?);
            let n = r.len()?;
            let label =
                std::str::from_utf8(r.take(n)?).map_err(|_| corrupted("invalid UTF-8 in enum"))?;
            Value::Enum {
                sort,
                label: label.to_string(),
            }
        }
        tag::ARRAY => {
            if depth >= MAX_ARRAY_DEPTH {
                return Err(corrupted("arrays nested too deep"));
            }
            let n = r.len()?; // every element takes at least one byte
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(decode_value(r, depth + 1)?);
            }
            Value::Array(items)
        }
        t => return Err(corrupted(&format!("unknown tag {t}"))),
    })
}

/// Skips one encoded value without building it.
fn skip_value(r: &mut Reader<'_>, depth: usize) -> PgResult<()> {
    let t = r.u8()?;
    let fixed = match t {
        tag::NULL | tag::FALSE | tag::TRUE => 0,
        tag::INT2 => 2,
        tag::INT4 | tag::FLOAT4 | tag::DATE | tag::OID => 4,
        tag::INT8 | tag::FLOAT8 | tag::TIME | tag::TIMESTAMP | tag::TIMESTAMPTZ => 8,
        tag::NUMERIC_DECIMAL96 | tag::INTERVAL | tag::UUID => 16,
        tag::NUMERIC => {
            decode_numeric(r)?;
            return Ok(());
        }
        tag::TEXT | tag::BYTEA | tag::JSONB => {
            let n = r.len()?;
            r.take(n)?;
            return Ok(());
        }
        tag::TEXT_PADDED => {
            let n = r.len()?;
            r.take(n)?;
            r.varint()?;
            return Ok(());
        }
        tag::ENUM => {
            r.take(4)?;
            let n = r.len()?;
            r.take(n)?;
            return Ok(());
        }
        tag::ARRAY => {
            if depth >= MAX_ARRAY_DEPTH {
                return Err(corrupted("arrays nested too deep"));
            }
            let n = r.len()?;
            for _ in 0..n {
                skip_value(r, depth + 1)?;
            }
            return Ok(());
        }
        t => return Err(corrupted(&format!("unknown tag {t}"))),
    };
    r.take(fixed)?;
    Ok(())
}

/// Appends the row encoding of `values` to `out`.
pub fn encode_row(values: &[Value], out: &mut Vec<u8>) {
    encode_row_parts(&[values], out);
}

/// `encode_row` of the concatenation of `parts`, without building it.
pub fn encode_row_parts(parts: &[&[Value]], out: &mut Vec<u8>) {
    put_varint(out, parts.iter().map(|p| p.len()).sum::<usize>() as u64);
    for v in parts.iter().flat_map(|p| p.iter()) {
        encode_value(v, out);
    }
}

/// Decodes a whole row. Garbage gives XX001, never a panic.
pub fn decode_row(bytes: &[u8]) -> PgResult<Vec<Value>> {
    let mut r = Reader { b: bytes, at: 0 };
    let n = r.len()?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(decode_value(&mut r, 0)?);
    }
    if r.at != bytes.len() {
        return Err(corrupted("trailing bytes"));
    }
    Ok(out)
}

/// `decode_row` of only the columns `wanted` marks, as a row `wanted.len()` wide whose
/// other columns (and those past the stored row's width) are NULL. Stops reading after
/// the last wanted column, so what follows it is not checked.
pub fn decode_row_columns(bytes: &[u8], wanted: &[bool]) -> PgResult<Vec<Value>> {
    let mut r = Reader { b: bytes, at: 0 };
    let n = r.len()?;
    let last = wanted.iter().rposition(|&w| w).map_or(0, |i| i + 1).min(n);
    let mut out = Vec::with_capacity(wanted.len());
    for &w in &wanted[..last] {
        if w {
            out.push(decode_value(&mut r, 0)?);
        } else {
            skip_value(&mut r, 0)?;
            out.push(Value::Null);
        }
    }
    out.resize_with(wanted.len(), || Value::Null); // `resize` would clone NULL through `Value::clone`
    Ok(out)
}

/// Decodes only column `index` (skipping the ones before it). An index past the row's
/// width yields Null (a column added later by ALTER TABLE ADD COLUMN reads as NULL).
pub fn decode_row_column(bytes: &[u8], index: usize) -> PgResult<Value> {
    let mut r = Reader { b: bytes, at: 0 };
    let n = r.len()?;
    if index >= n {
        return Ok(Value::Null);
    }
    for _ in 0..index {
        skip_value(&mut r, 0)?;
    }
    decode_value(&mut r, 0)
}

// ---------------------------------------------------------------------------------------
// Memcomparable keys

pub mod ktag {
    pub const BOOL: u8 = 0x10;
    pub const INT: u8 = 0x20;
    pub const FLOAT: u8 = 0x28;
    pub const NUMERIC: u8 = 0x30;
    pub const TEXT: u8 = 0x40;
    pub const BYTEA: u8 = 0x48;
    pub const DATE: u8 = 0x50;
    pub const TIMESTAMP: u8 = 0x58;
    pub const TIME: u8 = 0x60;
    pub const INTERVAL: u8 = 0x68;
    pub const OID: u8 = 0x70;
    pub const ARRAY: u8 = 0x78;
    pub const UUID: u8 = 0x80;
    /// jsonb: `json::encode_key`'s bytes, escaped and terminated as text.
    pub const JSONB: u8 = 0x88;
    /// An enum value: its sort order as a float (labels are not in the key: the sort
    /// order alone tells a type's values apart).
    pub const ENUM: u8 = 0x90;
    /// NULL sorts after every value (ASC NULLS LAST).
    pub const NULL: u8 = 0xFF;
}

fn key_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&((v as u64) ^ (1 << 63)).to_be_bytes());
}

fn key_f64(out: &mut Vec<u8>, v: f64) {
    let v = if v == 0.0 {
        0.0
    } else if v.is_nan() {
        f64::NAN
    } else {
        v
    };
    let bits = v.to_bits();
    let k = if v.is_nan() {
        u64::MAX // above +Infinity, as PG sorts NaN
    } else if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    out.extend_from_slice(&k.to_be_bytes());
}

/// Bytes with 0x00 escaped as 0x00 0xFF and terminated by 0x00 0x01, so a prefix sorts first.
pub(crate) fn key_bytes(out: &mut Vec<u8>, b: &[u8]) {
    for &c in b {
        out.push(c);
        if c == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

/// Numeric as class, decimal exponent and digits (trailing zeros dropped, so 1.5 and 1.50
/// encode identically — they are equal in SQL). Classes order -Infinity < negative < zero
/// < positive < +Infinity < NaN, as PostgreSQL sorts numerics.
pub(crate) fn key_numeric(out: &mut Vec<u8>, n: &Numeric) {
    let class = match n.parts() {
        Parts::NegInf => 0x00,
        Parts::PosInf => 0x04,
        Parts::NaN => 0x05,
        _ => match n.key_parts() {
            None => 0x02,
            Some((true, _, _)) => 0x01,
            Some((false, _, _)) => 0x03,
        },
    };
    out.push(class);
    let Some((neg, e, digits)) = n.key_parts() else {
        return;
    };
    // |n| = 0.d1d2… × 10^e, |e| ≤ ~150000
    let e_biased = (e as i32 as u32) ^ (1 << 31);
    if neg {
        out.extend_from_slice(&(!e_biased).to_be_bytes());
        for c in digits.bytes() {
            out.push(10 - (c - b'0')); // 0→10 … 9→1: bigger digit, smaller key
        }
        out.push(0xFF);
    } else {
        out.extend_from_slice(&e_biased.to_be_bytes());
        for c in digits.bytes() {
            out.push(c - b'0' + 1); // 1..=10
        }
        out.push(0x00);
    }
}

fn encode_key_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(ktag::NULL),
        Value::Bool(b) => {
            out.push(ktag::BOOL);
            out.push(*b as u8)
        }
        Value::Int2(_) | Value::Int4(_) | Value::Int8(_) => {
            out.push(ktag::INT);
            key_i64(out, v.as_i64().expect("int"))
        }
        Value::Float4(f) => {
            out.push(ktag::FLOAT);
            key_f64(out, *f as f64)
        }
        Value::Float8(f) => {
            out.push(ktag::FLOAT);
            key_f64(out, *f)
        }
        Value::Numeric(d) => {
            out.push(ktag::NUMERIC);
            key_numeric(out, d)
        }
        Value::Text(s) => {
            out.push(ktag::TEXT);
            key_bytes(out, s.as_bytes())
        }
        Value::Bytea(b) => {
            out.push(ktag::BYTEA);
            key_bytes(out, b)
        }
        Value::Date(d) => {
            out.push(ktag::DATE);
            out.extend_from_slice(&((*d as u32) ^ (1 << 31)).to_be_bytes())
        }
        Value::Timestamp(t) | Value::TimestampTz(t) => {
            out.push(ktag::TIMESTAMP);
            key_i64(out, *t)
        }
        Value::Time(t) => {
            out.push(ktag::TIME);
            key_i64(out, *t)
        }
        Value::Interval {
            months,
            days,
            micros,
        } => {
            out.push(ktag::INTERVAL);
            let span = Value::interval_span(*months, *days, *micros);
            out.extend_from_slice(&((span as u128) ^ (1 << 127)).to_be_bytes())
        }
        Value::Oid(o) => {
            out.push(ktag::OID);
            out.extend_from_slice(&o.to_be_bytes())
        }
        Value::Uuid(u) => {
            out.push(ktag::UUID);
            out.extend_from_slice(u)
        }
        Value::Jsonb(j) => {
            let mut key = Vec::new();
            crate::json::encode_key(j, &mut key);
            out.push(ktag::JSONB);
            key_bytes(out, &key)
        }
        Value::Enum { sort, .. } => {
            out.push(ktag::ENUM);
            key_f64(out, *sort as f64)
        }
        Value::Array(items) => {
            out.push(ktag::ARRAY);
            for it in items {
                out.push(0x01);
                encode_key_value(it, out); // NULL elements sort after non-null ones
            }
            out.push(0x00)
        }
    }
}

/// Appends a memcomparable encoding of `values` (a composite key) to `out`.
/// Not decodable: keys are for ordering and equality; store the row separately.
/// Values that compare equal in SQL encode identically (int widths, 1.5 vs 1.50, -0 vs 0,
/// '1 mon' vs '30 days'); bpchar values must be padded consistently (they are, per column).
pub fn encode_key(values: &[Value], out: &mut Vec<u8>) {
    // an integer's key is 9 bytes: the usual key costs one allocation, not a growth from
    // 8 bytes to 16 for its last byte (which was half the cost of hashing a join's key)
    out.reserve(values.len() * 9);
    for v in values {
        encode_key_value(v, out);
    }
}

/// The length of the first value's encoding in a key made by `encode_key`: each value's
/// encoding is self-delimiting, so the values of a composite key can be told apart (to
/// place a row by one of its key columns). None if `key` is not such an encoding.
pub fn key_value_len(key: &[u8]) -> Option<usize> {
    let body = key.get(1..)?;
    let body_len = match key[0] {
        ktag::NULL => 0,
        ktag::BOOL => 1,
        ktag::INT | ktag::FLOAT | ktag::TIMESTAMP | ktag::TIME | ktag::ENUM => 8,
        ktag::DATE | ktag::OID => 4,
        ktag::INTERVAL | ktag::UUID => 16,
        ktag::TEXT | ktag::BYTEA | ktag::JSONB => escaped_bytes_len(body)?,
        ktag::NUMERIC => match *body.first()? {
            0x01 => 5 + body.get(5..)?.iter().position(|&b| b == 0xFF)? + 1,
            0x03 => 5 + body.get(5..)?.iter().position(|&b| b == 0x00)? + 1,
            _ => 1,
        },
        ktag::ARRAY => {
            let mut at = 0;
            loop {
                match *body.get(at)? {
                    0x00 => break at + 1,
                    0x01 => at += 1 + key_value_len(&body[at + 1..])?,
                    _ => return None,
                }
            }
        }
        _ => return None,
    };
    (body_len <= body.len()).then_some(1 + body_len)
}

/// The length of `key_bytes`'s encoding at the start of `b`, terminator included.
fn escaped_bytes_len(b: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        match (*b.get(at)?, b.get(at + 1)) {
            (0x00, Some(0x01)) => return Some(at + 2),
            (0x00, Some(0xFF)) => at += 2,
            (0x00, _) => return None,
            _ => at += 1,
        }
    }
}

/// Descending-order variant of one key column: the bitwise complement of its ASC encoding
/// (ASC encodings are prefix-free, so complementing reverses the order) — NULLS FIRST, as
/// PG's DESC default.
pub fn encode_key_desc(v: &Value, out: &mut Vec<u8>) {
    let mut tmp = Vec::new();
    encode_key_value(v, &mut tmp);
    for b in tmp {
        out.push(!b);
    }
}

/// A `Value` in serde formats (an expression's constants on their way to a datanode,
/// decision 0033) is its row encoding: exact for every type, numeric's scale included.
impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = Vec::new();
        encode_row(std::slice::from_ref(self), &mut out);
        serde::Serialize::serialize(&out, s)
    }
}

impl<'de> serde::Deserialize<'de> for Value {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        let bytes: Vec<u8> = serde::Deserialize::deserialize(d)?;
        match decode_row(&bytes).map_err(serde::de::Error::custom)?.pop() {
            Some(v) => Ok(v),
            None => Err(serde::de::Error::custom("an encoded value holds no value")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::sort_cmp;
    use proptest::prelude::*;
    use std::cmp::Ordering;

    fn key(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        encode_key(std::slice::from_ref(v), &mut out);
        out
    }

    #[test]
    fn key_values_split_where_they_were_joined() {
        let values = [
            Value::Null,
            Value::Bool(true),
            Value::Int2(-3),
            Value::Int8(i64::MIN),
            Value::Float8(-0.25),
            Value::Numeric(crate::numeric::parse("-123.4500").unwrap().unwrap()),
            Value::Numeric(crate::numeric::parse("98.7").unwrap().unwrap()),
            Value::Numeric(crate::numeric::parse("0").unwrap().unwrap()),
            Value::Numeric(Numeric::NAN),
            Value::Text("a\0b".into()),
            Value::Text(String::new()),
            Value::Bytea(vec![0, 0xFF, 1, 0]),
            Value::Date(-5),
            Value::Time(1234),
            Value::TimestampTz(-99),
            Value::Interval {
                months: 1,
                days: 2,
                micros: 3,
            },
            Value::Oid(42),
            Value::Array(vec![Value::Int4(1), Value::Null, Value::Text("x".into())]),
        ];
        let mut joined = Vec::new();
        encode_key(&values, &mut joined);
        let mut rest = joined.as_slice();
        for v in &values {
            let n = key_value_len(rest).expect("a value");
            assert_eq!(&rest[..n], key(v).as_slice(), "{v:?}");
            rest = &rest[n..];
        }
        assert!(rest.is_empty());
        assert_eq!(key_value_len(&[ktag::INT, 1, 2]), None);
        assert_eq!(key_value_len(&[ktag::TEXT, b'a', 0]), None);
        assert_eq!(key_value_len(&[]), None);
    }

    #[test]
    fn roundtrip_all_variants() {
        let row = vec![
            Value::Null,
            Value::Bool(true),
            Value::Bool(false),
            Value::Int2(-3),
            Value::Int4(7),
            Value::Int8(i64::MIN),
            Value::Float4(1.5),
            Value::Float8(-0.25),
            Value::Numeric(crate::numeric::parse("-123.4500").unwrap().unwrap()),
            Value::Numeric(
                crate::numeric::parse("-12345678901234567890123456789.50")
                    .unwrap()
                    .unwrap(),
            ),
            Value::Numeric(Numeric::NAN),
            Value::Numeric(Numeric::NEG_INF),
            Value::Text("héllo".into()),
            Value::Text(format!("padded{}", " ".repeat(84))),
            Value::Text(" ".repeat(8)),
            Value::Text("seven  ".into()),
            Value::Bytea(vec![0, 1, 2]),
            Value::Date(-5),
            Value::Time(1234),
            Value::Timestamp(99),
            Value::TimestampTz(-99),
            Value::Interval {
                months: 1,
                days: 2,
                micros: 3,
            },
            Value::Oid(42),
            Value::Array(vec![
                Value::Int4(1),
                Value::Null,
                Value::Array(vec![Value::Text("x".into())]),
            ]),
        ];
        let mut out = Vec::new();
        encode_row(&row, &mut out);
        assert_eq!(decode_row(&out).unwrap(), row);
        for (i, v) in row.iter().enumerate() {
            assert_eq!(&decode_row_column(&out, i).unwrap(), v);
        }
        assert_eq!(decode_row_column(&out, row.len()).unwrap(), Value::Null);
    }

    #[test]
    fn blank_padding_is_stored_as_a_run_length() {
        let mut out = Vec::new();
        encode_row(&[Value::Text(format!("x{}", " ".repeat(84)))], &mut out);
        assert_eq!(out, [1, tag::TEXT_PADDED, 1, b'x', 84]);
        // all blanks, and a multi-byte character before the blanks, come back as they were
        for text in [" ".repeat(84), format!("é€{}", " ".repeat(20))] {
            let mut out = Vec::new();
            encode_row(&[Value::Text(text.clone())], &mut out);
            assert_eq!(out[1], tag::TEXT_PADDED);
            assert_eq!(decode_row(&out).unwrap(), vec![Value::Text(text)]);
        }
        // a run length past the limit is corruption, not a huge allocation
        let mut bad = vec![1, tag::TEXT_PADDED, 0];
        put_varint(&mut bad, (MAX_PAD_RUN + 1) as u64);
        assert_eq!(decode_row(&bad).unwrap_err().code, "XX001");
    }

    #[test]
    fn garbage_is_xx001() {
        for bad in [
            &[5u8][..],
            &[1, 99],
            &[1, tag::TEXT, 200],
            &[1, tag::TEXT, 2, 0xff, 0xfe],
            &[0xff; 12],
            &[],
        ] {
            let e = decode_row(bad).unwrap_err();
            assert_eq!(e.code, "XX001");
        }
    }

    #[test]
    fn int_widths_share_keys() {
        assert_eq!(key(&Value::Int4(5)), key(&Value::Int8(5)));
        assert_eq!(key(&Value::Int2(-5)), key(&Value::Int8(-5)));
        assert_eq!(
            key(&Value::Numeric(
                crate::numeric::parse("1.5").unwrap().unwrap()
            )),
            key(&Value::Numeric(
                crate::numeric::parse("1.50").unwrap().unwrap()
            ))
        );
        assert_eq!(key(&Value::Float8(0.0)), key(&Value::Float8(-0.0)));
    }

    /// Small and big coefficients at various scales, and the special values.
    fn arb_numeric() -> impl Strategy<Value = Numeric> {
        let small = (any::<i64>(), 0u32..=12).prop_map(|(m, s)| {
            let t = format!("{m}e-{s}");
            crate::numeric::parse(&t)
                .unwrap()
                .unwrap()
                .round(s as i64)
                .unwrap()
        });
        let big = ("-?[0-9]{1,60}", -40i64..30)
            .prop_map(|(d, e)| crate::numeric::parse(&format!("{d}e{e}")).unwrap().unwrap());
        prop_oneof![
            4 => small,
            4 => big,
            1 => Just(Numeric::NAN),
            1 => Just(Numeric::POS_INF),
            1 => Just(Numeric::NEG_INF),
        ]
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::Int8),
            any::<i32>().prop_map(Value::Int4),
            any::<i16>().prop_map(Value::Int2),
        ]
    }

    proptest! {
        #[test]
        fn int_key_order(a in arb_value(), b in arb_value()) {
            prop_assert_eq!(key(&a).cmp(&key(&b)), sort_cmp(&a, &b));
        }

        #[test]
        fn float_key_order(a in any::<f64>(), b in any::<f64>()) {
            let (va, vb) = (Value::Float8(a), Value::Float8(b));
            prop_assert_eq!(key(&va).cmp(&key(&vb)), sort_cmp(&va, &vb));
        }

        #[test]
        fn text_key_order(a in ".{0,8}", b in ".{0,8}", a2 in "[\\x00-\\x02a]{0,4}", b2 in "[\\x00-\\x02a]{0,4}") {
            for (x, y) in [(a.clone(), b.clone()), (a2.clone(), b2.clone()), (a2.clone(), a2.clone() + "\u{0}")] {
                let (va, vb) = (Value::Text(x), Value::Text(y));
                prop_assert_eq!(key(&va).cmp(&key(&vb)), sort_cmp(&va, &vb));
            }
        }

        #[test]
        fn numeric_key_order(a in arb_numeric(), b in arb_numeric()) {
            let (va, vb) = (Value::Numeric(a), Value::Numeric(b));
            prop_assert_eq!(key(&va).cmp(&key(&vb)), sort_cmp(&va, &vb));
        }

        #[test]
        fn composite_key_order(a in (any::<i32>(), ".{0,4}", any::<bool>()), b in (any::<i32>(), ".{0,4}", any::<bool>()),
                               nulls in 0u8..4) {
            let mk = |t: &(i32, String, bool), isnull: bool| vec![
                Value::Int4(t.0 % 3),
                if isnull { Value::Null } else { Value::Text(t.1.clone()) },
                Value::Bool(t.2),
            ];
            let ra = mk(&a, nulls & 1 == 1);
            let rb = mk(&b, nulls & 2 == 2);
            let expected = ra.iter().zip(rb.iter()).map(|(x, y)| sort_cmp(x, y)).find(|o| *o != Ordering::Equal).unwrap_or(Ordering::Equal);
            let (mut ka, mut kb) = (Vec::new(), Vec::new());
            encode_key(&ra, &mut ka);
            encode_key(&rb, &mut kb);
            prop_assert_eq!(ka.cmp(&kb), expected);
        }

        #[test]
        fn timestamp_date_interval_key_order(a in any::<i64>(), b in any::<i64>(), da in any::<i32>(), db in any::<i32>(),
                                             ia in (any::<i32>(), any::<i32>(), any::<i64>()), ib in (any::<i32>(), any::<i32>(), any::<i64>())) {
            let pairs = [
                (Value::Timestamp(a), Value::Timestamp(b)),
                (Value::Date(da), Value::Date(db)),
                (Value::Interval { months: ia.0, days: ia.1, micros: ia.2 }, Value::Interval { months: ib.0, days: ib.1, micros: ib.2 }),
            ];
            for (x, y) in pairs {
                prop_assert_eq!(key(&x).cmp(&key(&y)), sort_cmp(&x, &y));
            }
        }

        #[test]
        fn array_key_order(a in proptest::collection::vec(proptest::option::of(any::<i16>()), 0..4),
                           b in proptest::collection::vec(proptest::option::of(any::<i16>()), 0..4)) {
            let mk = |v: &Vec<Option<i16>>| Value::Array(v.iter().map(|x| x.map(Value::Int2).unwrap_or(Value::Null)).collect());
            let (va, vb) = (mk(&a), mk(&b));
            prop_assert_eq!(key(&va).cmp(&key(&vb)), sort_cmp(&va, &vb));
        }

        #[test]
        fn row_roundtrip(vals in proptest::collection::vec(prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::Int8),
            any::<i32>().prop_map(Value::Int4),
            ".{0,10}".prop_map(Value::Text),
            arb_numeric().prop_map(Value::Numeric),
            any::<bool>().prop_map(Value::Bool),
        ], 0..8)) {
            let mut out = Vec::new();
            encode_row(&vals, &mut out);
            prop_assert_eq!(decode_row(&out).unwrap(), vals.clone());
            for (i, v) in vals.iter().enumerate() {
                prop_assert_eq!(&decode_row_column(&out, i).unwrap(), v);
            }
        }

        #[test]
        fn decoding_some_columns_nulls_the_others(vals in proptest::collection::vec(prop_oneof![
            Just(Value::Null),
            any::<i32>().prop_map(Value::Int4),
            ".{0,10}".prop_map(Value::Text),
            arb_numeric().prop_map(Value::Numeric),
        ], 0..8), wanted in proptest::collection::vec(any::<bool>(), 0..10)) {
            let mut out = Vec::new();
            encode_row(&vals, &mut out);
            let expected: Vec<Value> = wanted.iter().enumerate()
                .map(|(i, &w)| if w { vals.get(i).cloned().unwrap_or(Value::Null) } else { Value::Null })
                .collect();
            prop_assert_eq!(decode_row_columns(&out, &wanted).unwrap(), expected);
        }

        #[test]
        fn desc_key_reverses(a in proptest::option::of(".{0,6}"), b in proptest::option::of(".{0,6}"), x in any::<i32>(), y in any::<i32>()) {
            let (va, vb) = (a.map(Value::Text).unwrap_or(Value::Null), b.map(Value::Text).unwrap_or(Value::Null));
            let (mut ka, mut kb) = (Vec::new(), Vec::new());
            encode_key_desc(&va, &mut ka);
            encode_key(&[Value::Int4(x)], &mut ka);
            encode_key_desc(&vb, &mut kb);
            encode_key(&[Value::Int4(y)], &mut kb);
            let expected = sort_cmp(&vb, &va).then(x.cmp(&y));
            prop_assert_eq!(ka.cmp(&kb), expected);
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_row(&bytes);
            let _ = decode_row_column(&bytes, 3);
            let _ = decode_row_columns(&bytes, &[false, true, false, true]);
        }
    }
}
