//! `numeric` on top of `rust_decimal` (see docs/decisions/0003-numeric-representation.md):
//! at most 28 fractional digits and a 96-bit coefficient (28–29 significant digits).
//! Rounding is PostgreSQL's (half away from zero); display scale is the Decimal's scale.

use pgerror::{codes, PgError, PgResult};
use rust_decimal::{Decimal, RoundingStrategy};

pub const MAX_SCALE: u32 = 28;
/// NUMERIC_MIN_SIG_DIGITS in numeric.c.
const MIN_SIG_DIGITS: i32 = 16;

fn overflow() -> PgError {
    PgError::new(codes::NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
}

/// `10^k` as u128 (k ≤ 38).
fn pow10(k: u32) -> u128 {
    10u128.pow(k)
}

/// Builds a Decimal from decimal digits (no sign), the position of the decimal point
/// expressed as a scale (may be negative), rounding half away from zero to fit.
fn from_digits(neg: bool, digits: &[u8], scale: i64) -> PgResult<Decimal> {
    // strip leading zeros
    let first = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
    let mut digits: Vec<u8> = digits[first..].to_vec();
    let mut scale = scale;
    if digits.is_empty() {
        let s = scale.clamp(0, MAX_SCALE as i64) as u32;
        return Ok(Decimal::new(0, s));
    }
    if scale < 0 {
        digits.extend(std::iter::repeat_n(0, (-scale) as usize));
        scale = 0;
    }
    // integer digits must fit
    let int_digits = digits.len() as i64 - scale;
    if int_digits > 29 {
        return Err(overflow());
    }
    let mut keep_scale = scale.min(MAX_SCALE as i64);
    loop {
        let keep = (digits.len() as i64 - (scale - keep_scale)).max(0) as usize;
        let mut m: u128 = 0;
        let mut ok = keep <= 38;
        if ok {
            for &d in &digits[..keep] {
                m = m * 10 + d as u128;
            }
            if keep < digits.len() && digits[keep] >= 5 {
                m += 1;
            }
            ok = m < (1u128 << 96);
        }
        if ok {
            let v = m as i128;
            let d = Decimal::from_i128_with_scale(if neg { -v } else { v }, keep_scale as u32);
            return Ok(d);
        }
        if keep_scale == 0 {
            return Err(overflow());
        }
        keep_scale -= 1;
    }
}

/// numeric_in syntax: [ws][sign]digits[.digits][e[sign]digits][ws]. `None` on bad syntax.
pub fn parse(s: &str) -> Option<PgResult<Decimal>> {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let b = t.as_bytes();
    let mut i = 0;
    let mut neg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        neg = b[i] == b'-';
        i += 1;
    }
    let mut digits = Vec::with_capacity(b.len());
    let mut frac = 0i64;
    let mut seen_digit = false;
    let mut seen_point = false;
    while i < b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                digits.push(c - b'0');
                seen_digit = true;
                if seen_point {
                    frac += 1;
                }
            }
            b'.' if !seen_point => seen_point = true,
            _ => break,
        }
        i += 1;
    }
    if !seen_digit {
        return None;
    }
    let mut exp = 0i64;
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        let mut eneg = false;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            eneg = b[i] == b'-';
            i += 1;
        }
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            exp = (exp * 10 + (b[i] - b'0') as i64).min(1_000_000);
            i += 1;
        }
        if st == i {
            return None;
        }
        if eneg {
            exp = -exp;
        }
    }
    if i != b.len() {
        return None;
    }
    if exp.abs() > 1000 {
        return Some(Err(overflow()));
    }
    Some(from_digits(neg, &digits, frac - exp))
}

/// Round half away from zero to `scale` digits and set the display scale to exactly `scale`.
pub fn round_to_scale(d: Decimal, scale: u32) -> Decimal {
    let scale = scale.min(MAX_SCALE);
    let mut r = d.round_dp_with_strategy(scale, RoundingStrategy::MidpointAwayFromZero);
    if r.scale() < scale {
        r.rescale(scale);
    }
    normalize_zero(r)
}

/// Drops the sign of a zero.
pub fn normalize_zero(mut d: Decimal) -> Decimal {
    if d.is_zero() {
        d.set_sign_positive(true);
    }
    d
}

/// Number of digits before the decimal point (0 for |d| < 1).
pub fn integer_digits(d: &Decimal) -> u32 {
    let t = d.trunc().abs();
    if t.is_zero() {
        0
    } else {
        t.mantissa().unsigned_abs().to_string().len() as u32
    }
}

/// Applies numeric(p,s): rounds to s, errors 22003 "numeric field overflow" when too big.
pub fn apply_typmod(d: Decimal, p: u16, s: u16) -> PgResult<Decimal> {
    let r = round_to_scale(d, s as u32);
    let maxdigits = p as i32 - s as i32;
    let fits = if maxdigits >= 0 {
        integer_digits(&r) as i32 <= maxdigits
    } else if (-maxdigits) as u32 <= MAX_SCALE {
        // PG 15 allows scale > precision: |r| must be below 10^(p-s)
        r.abs() < Decimal::new(1, (-maxdigits) as u32)
    } else {
        r.is_zero()
    };
    if !fits {
        let limit = if maxdigits != 0 { format!("10^{maxdigits}") } else { "1".to_string() };
        let detail = format!("A field with precision {p}, scale {s} must round to an absolute value less than {limit}.");
        return Err(PgError::new(codes::NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow").with_detail(detail));
    }
    Ok(r)
}

/// Normalised base-10000 weight and first digit (as numeric.c sees the value).
fn nbase_weight_first(d: &Decimal) -> (i32, i32) {
    if d.is_zero() {
        return (0, 0);
    }
    let m = d.mantissa().unsigned_abs();
    let nd = m.to_string().len() as i32;
    let e = nd - 1 - d.scale() as i32; // 10^e <= |d| < 10^(e+1)
    let w = e.div_euclid(4);
    // first base-10000 digit = floor(|d| / 10^(4w)) = leading (e - 4w + 1) decimal digits
    let lead = e - 4 * w + 1;
    let first = if lead >= nd { m * pow10((lead - nd) as u32) } else { m / pow10((nd - lead) as u32) } as i32;
    (w, first)
}

/// PostgreSQL's select_div_scale.
pub fn div_scale(a: &Decimal, b: &Decimal) -> u32 {
    let (w1, f1) = nbase_weight_first(a);
    let (w2, f2) = nbase_weight_first(b);
    let mut qweight = w1 - w2;
    if f1 <= f2 {
        qweight -= 1;
    }
    let mut rscale = MIN_SIG_DIGITS - qweight * 4;
    rscale = rscale.max(a.scale() as i32).max(b.scale() as i32).clamp(0, 1000);
    rscale as u32
}

fn div_zero() -> PgError {
    PgError::new(codes::DIVISION_BY_ZERO, "division by zero")
}

pub fn add(a: Decimal, b: Decimal) -> PgResult<Decimal> {
    a.checked_add(b).map(normalize_zero).ok_or_else(overflow)
}
pub fn sub(a: Decimal, b: Decimal) -> PgResult<Decimal> {
    a.checked_sub(b).map(normalize_zero).ok_or_else(overflow)
}
pub fn mul(a: Decimal, b: Decimal) -> PgResult<Decimal> {
    let r = a.checked_mul(b).ok_or_else(overflow)?;
    let want = (a.scale() + b.scale()).min(MAX_SCALE);
    Ok(normalize_zero(if r.scale() < want { round_to_scale(r, want) } else { r }))
}
pub fn div(a: Decimal, b: Decimal) -> PgResult<Decimal> {
    if b.is_zero() {
        return Err(div_zero());
    }
    let scale = div_scale(&a, &b);
    let q = a.checked_div(b).ok_or_else(overflow)?;
    Ok(round_to_scale(q, scale))
}
/// numeric % numeric: truncating division remainder (sign of the dividend).
pub fn rem(a: Decimal, b: Decimal) -> PgResult<Decimal> {
    if b.is_zero() {
        return Err(div_zero());
    }
    let r = a.checked_rem(b).ok_or_else(overflow)?;
    Ok(normalize_zero(round_to_scale(r, a.scale().max(b.scale()))))
}

/// numeric ^ numeric, with PostgreSQL's result scale (about 16 significant digits).
pub fn pow(base: Decimal, exp: Decimal) -> PgResult<Decimal> {
    use rust_decimal::prelude::ToPrimitive;
    use rust_decimal::MathematicalOps;
    if base.is_zero() && exp.is_sign_negative() && !exp.is_zero() {
        return Err(PgError::new("2201F", "zero raised to a negative power is undefined"));
    }
    if base.is_sign_negative() && !base.is_zero() && exp.fract() != Decimal::ZERO {
        return Err(PgError::new("2201F", "a negative number raised to a non-integer power yields a complex result"));
    }
    let bf = base.to_f64().unwrap_or(0.0);
    let ef = exp.to_f64().unwrap_or(0.0);
    let val = if base.is_zero() { 0.0 } else { ef * bf.abs().log10() };
    let mut rscale = MIN_SIG_DIGITS.saturating_sub(val.clamp(-10000.0, 10000.0) as i32);
    rscale = rscale.max(base.scale() as i32).max(exp.scale() as i32).clamp(0, 1000);
    let r = if exp.fract().is_zero() {
        match exp.to_i64() {
            Some(e) => {
                if e >= 0 {
                    base.checked_powi(e)
                } else {
                    base.checked_powi(-e).and_then(|p| Decimal::ONE.checked_div(p))
                }
            }
            None => None,
        }
    } else {
        base.checked_powd(exp)
    };
    let r = r.ok_or_else(overflow)?;
    Ok(round_to_scale(r, rscale as u32))
}

/// float8 → numeric as PostgreSQL: through `%.15g` (`%.6g` for float4).
pub fn from_f64(v: f64, sig: usize) -> PgResult<Decimal> {
    if v.is_nan() {
        return Err(PgError::new(codes::FEATURE_NOT_SUPPORTED, "numeric NaN is not supported"));
    }
    if v.is_infinite() {
        return Err(PgError::new(codes::FEATURE_NOT_SUPPORTED, "numeric Infinity is not supported"));
    }
    let s = format!("{:.*e}", sig - 1, v);
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    // %g: strip trailing zeros of the mantissa
    let neg = mant.starts_with('-');
    let digits: Vec<u8> = mant.bytes().filter(|c| c.is_ascii_digit()).map(|c| c - b'0').collect();
    let mut digits = digits;
    while digits.len() > 1 && *digits.last().unwrap() == 0 {
        digits.pop();
    }
    let scale = digits.len() as i64 - 1 - exp;
    from_digits(neg, &digits, scale)
}

pub fn to_f64(d: &Decimal) -> f64 {
    d.to_string().parse().unwrap_or(0.0)
}

// ---------------------------------------------------------------------------------------
// PostgreSQL binary format (base 10000).

pub const NUMERIC_POS: u16 = 0x0000;
pub const NUMERIC_NEG: u16 = 0x4000;

pub fn to_binary(d: &Decimal, out: &mut Vec<u8>) {
    let scale = d.scale() as usize;
    let m = d.mantissa().unsigned_abs();
    let s = m.to_string();
    let (ip, fp) = if s.len() > scale {
        (s[..s.len() - scale].to_string(), s[s.len() - scale..].to_string())
    } else {
        (String::new(), format!("{}{}", "0".repeat(scale - s.len()), s))
    };
    let ip = if ip == "0" { String::new() } else { ip };
    let ipad = (4 - ip.len() % 4) % 4;
    let ip = format!("{}{}", "0".repeat(ipad), ip);
    let fpad = (4 - fp.len() % 4) % 4;
    let fp = format!("{}{}", fp, "0".repeat(fpad));
    let all = format!("{ip}{fp}");
    let mut groups: Vec<i16> = all.as_bytes().chunks(4).map(|c| std::str::from_utf8(c).unwrap().parse().unwrap()).collect();
    let mut weight = (ip.len() / 4) as i32 - 1;
    while groups.first() == Some(&0) {
        groups.remove(0);
        weight -= 1;
    }
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    let sign = if d.is_sign_negative() && !d.is_zero() { NUMERIC_NEG } else { NUMERIC_POS };
    out.extend_from_slice(&(groups.len() as i16).to_be_bytes());
    out.extend_from_slice(&(weight as i16).to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&(scale as u16).to_be_bytes());
    for g in groups {
        out.extend_from_slice(&g.to_be_bytes());
    }
}

pub fn from_binary(b: &[u8]) -> PgResult<Decimal> {
    let bad = |m: &str| PgError::new(codes::INVALID_BINARY_REPRESENTATION, m.to_string());
    if b.len() < 8 {
        return Err(bad("insufficient data left in message"));
    }
    let nd = i16::from_be_bytes([b[0], b[1]]);
    let weight = i16::from_be_bytes([b[2], b[3]]) as i64;
    let sign = u16::from_be_bytes([b[4], b[5]]);
    let dscale = u16::from_be_bytes([b[6], b[7]]);
    if nd < 0 || b.len() != 8 + 2 * nd as usize {
        return Err(bad("invalid length in external \"numeric\" value"));
    }
    match sign {
        NUMERIC_POS | NUMERIC_NEG => {}
        0xC000 | 0xD000 | 0xF000 => {
            return Err(PgError::new(codes::FEATURE_NOT_SUPPORTED, "numeric NaN and Infinity are not supported"))
        }
        _ => return Err(bad("invalid sign in external \"numeric\" value")),
    }
    let mut digits = Vec::with_capacity(nd as usize * 4);
    for i in 0..nd as usize {
        let g = i16::from_be_bytes([b[8 + 2 * i], b[9 + 2 * i]]);
        if !(0..10000).contains(&g) {
            return Err(bad("invalid digit in external \"numeric\" value"));
        }
        for k in [1000, 100, 10, 1] {
            digits.push(((g / k) % 10) as u8);
        }
    }
    // value = 0.d1d2.. * 10000^(weight+1)  → scale = len - 4*(weight+1)
    let scale = digits.len() as i64 - 4 * (weight + 1);
    let d = from_digits(sign == NUMERIC_NEG, &digits, scale)?;
    Ok(round_to_scale(d, (dscale as u32).min(MAX_SCALE)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    #[test]
    fn parse_forms() {
        assert_eq!(parse("  1.50  ").unwrap().unwrap().to_string(), "1.50");
        assert_eq!(parse("1e5").unwrap().unwrap().to_string(), "100000");
        assert_eq!(parse("-1.5e-3").unwrap().unwrap().to_string(), "-0.0015");
        assert_eq!(parse(".5").unwrap().unwrap().to_string(), "0.5");
        assert_eq!(parse("5.").unwrap().unwrap().to_string(), "5");
        assert!(parse("1.2.3").is_none());
        assert!(parse("abc").is_none());
        assert!(parse("").is_none());
        assert!(parse("1e").is_none());
        assert_eq!(parse("1e100").unwrap().unwrap_err().code, "22003");
    }

    #[test]
    fn division_scale_matches_pg() {
        // checked against PostgreSQL 15
        assert_eq!(div(d("10"), d("3")).unwrap().to_string(), "3.3333333333333333");
        assert_eq!(div(d("10"), d("2")).unwrap().to_string(), "5.0000000000000000");
        assert_eq!(div(d("1"), d("3")).unwrap().to_string(), "0.33333333333333333333");
        assert_eq!(pow(d("2"), d("3")).unwrap().to_string(), "8.0000000000000000");
        assert_eq!(pow(d("2.0"), d("0.5")).unwrap().to_string(), "1.4142135623730950");
    }

    #[test]
    fn typmod() {
        assert_eq!(apply_typmod(d("123.456"), 5, 2).unwrap().to_string(), "123.46");
        let e = apply_typmod(d("1234.5"), 5, 2).unwrap_err();
        assert_eq!(e.code, "22003");
        assert_eq!(e.message, "numeric field overflow");
        assert_eq!(
            e.detail.as_deref(),
            Some("A field with precision 5, scale 2 must round to an absolute value less than 10^3.")
        );
    }

    #[test]
    fn binary_roundtrip() {
        for s in ["0", "0.00", "1", "-1", "10000", "12345.6789", "0.0001", "-0.00012", "99999999999999999999.12345678"] {
            let mut out = Vec::new();
            to_binary(&d(s), &mut out);
            assert_eq!(from_binary(&out).unwrap().to_string(), s, "{s}");
        }
        // 12345.6789 = [1, 2345, 6789], weight 1, dscale 4
        let mut out = Vec::new();
        to_binary(&d("12345.6789"), &mut out);
        assert_eq!(out, vec![0, 3, 0, 1, 0, 0, 0, 4, 0, 1, 0x09, 0x29, 0x1a, 0x85]);
    }

    #[test]
    fn float_conversion() {
        assert_eq!(from_f64(0.1, 15).unwrap().to_string(), "0.1");
        assert_eq!(from_f64(1e20, 15).unwrap().to_string(), "100000000000000000000");
        assert_eq!(from_f64(1.5e-7, 15).unwrap().to_string(), "0.00000015");
    }
}

#[cfg(test)]
mod typmod_edge_tests {
    use super::*;
    use std::str::FromStr;

    #[test]
    fn scale_above_precision_pg15() {
        // checked against PostgreSQL 15
        let d = |s: &str| Decimal::from_str(s).unwrap();
        assert_eq!(apply_typmod(d("0.001"), 2, 3).unwrap().to_string(), "0.001");
        let e = apply_typmod(d("0.1"), 2, 3).unwrap_err();
        assert_eq!(
            e.detail.as_deref(),
            Some("A field with precision 2, scale 3 must round to an absolute value less than 10^-1.")
        );
        let e = apply_typmod(d("1"), 2, 2).unwrap_err();
        assert_eq!(e.detail.as_deref(), Some("A field with precision 2, scale 2 must round to an absolute value less than 1."));
    }
}
