//! PostgreSQL's binary `numeric` format (numeric_send / numeric_recv): int16 ndigits,
//! int16 weight, uint16 sign (0x0000 +, 0x4000 -, 0xC000 NaN, 0xD000 +Infinity,
//! 0xF000 -Infinity), uint16 dscale, then ndigits base-10000 digits, most significant first.

use super::{Dec, Numeric, Repr};
use num_bigint::BigInt;
use num_traits::Zero;
use pgerror::{codes, PgError, PgResult};

const POS: u16 = 0x0000;
const NEG: u16 = 0x4000;
const NAN: u16 = 0xC000;
const PINF: u16 = 0xD000;
const NINF: u16 = 0xF000;
/// NUMERIC_MAX_PRECISION + NUMERIC_MAX_RESULT_SCALE: numeric_recv's limit on ndigits.
const MAX_RECV_DIGITS: usize = 1000 + 2000;
const DSCALE_MASK: u16 = 0x3FFF;

fn header(out: &mut Vec<u8>, ndigits: usize, weight: i64, sign: u16, dscale: u16) {
    out.extend_from_slice(&(ndigits as u16).to_be_bytes());
    out.extend_from_slice(&(weight as i16).to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&dscale.to_be_bytes());
}

pub fn to_binary(n: &Numeric, out: &mut Vec<u8>) {
    let d = match n.0 {
        Repr::NaN => return header(out, 0, 0, NAN, 0),
        Repr::PosInf => return header(out, 0, 0, PINF, 0),
        Repr::NegInf => return header(out, 0, 0, NINF, 0),
        _ => n.dec().expect("finite"),
    };
    let dscale = d.scale as usize;
    let sign = if d.is_neg() { NEG } else { POS };
    if d.is_zero() {
        return header(out, 0, 0, sign, dscale as u16);
    }
    // decimal digits padded to whole base-10000 digits on both sides of the point
    let mut s = d.coef.magnitude().to_string().into_bytes();
    s.resize(s.len() + (4 - dscale % 4) % 4, b'0');
    let frac_groups = dscale.div_ceil(4);
    let lead_pad = (4 - s.len() % 4) % 4;
    let mut padded = vec![b'0'; lead_pad];
    padded.extend_from_slice(&s);
    let mut groups: Vec<u16> = padded
        .chunks(4)
        .map(|c| c.iter().fold(0u16, |acc, &b| acc * 10 + (b - b'0') as u16))
        .collect();
    let mut weight = groups.len() as i64 - frac_groups as i64 - 1;
    let lead_zeros = groups.iter().take_while(|&&g| g == 0).count();
    groups.drain(..lead_zeros);
    weight -= lead_zeros as i64;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    header(out, groups.len(), weight, sign, dscale as u16);
    for g in groups {
        out.extend_from_slice(&g.to_be_bytes());
    }
}

/// numeric_recv: digits beyond dscale are truncated away, as PostgreSQL does.
pub fn from_binary(b: &[u8]) -> PgResult<Numeric> {
    let bad = |m: &str| PgError::new(codes::INVALID_BINARY_REPRESENTATION, m.to_string());
    if b.len() < 8 {
        return Err(bad("insufficient data left in message"));
    }
    let nd = u16::from_be_bytes([b[0], b[1]]) as usize;
    let weight = i16::from_be_bytes([b[2], b[3]]) as i64;
    let sign = u16::from_be_bytes([b[4], b[5]]);
    let dscale = u16::from_be_bytes([b[6], b[7]]);
    if nd > MAX_RECV_DIGITS || b.len() != 8 + 2 * nd {
        return Err(bad("invalid length in external \"numeric\" value"));
    }
    if ![POS, NEG, NAN, PINF, NINF].contains(&sign) {
        return Err(bad("invalid sign in external \"numeric\" value"));
    }
    if dscale & DSCALE_MASK != dscale {
        return Err(bad("invalid scale in external \"numeric\" value"));
    }
    let mut digits = String::with_capacity(nd * 4);
    for i in 0..nd {
        let g = i16::from_be_bytes([b[8 + 2 * i], b[9 + 2 * i]]);
        if !(0..10000).contains(&g) {
            return Err(bad("invalid digit in external \"numeric\" value"));
        }
        digits.push_str(&format!("{g:04}"));
    }
    match sign {
        NAN => return Ok(Numeric::NAN),
        PINF => return Ok(Numeric::POS_INF),
        NINF => return Ok(Numeric::NEG_INF),
        _ => {}
    }
    // value = 0.d1d2… × 10000^(weight+1)
    let coef = if digits.is_empty() {
        BigInt::zero()
    } else {
        digits.parse::<BigInt>().expect("digits")
    };
    let coef = if sign == NEG { -coef } else { coef };
    let d = Dec {
        coef,
        scale: 4 * (nd as i64 - weight - 1),
    };
    Numeric::from_dec(d.trunc(dscale as i64))
}
