//! `numeric` with PostgreSQL 15's range and rules (docs/decisions/0003-numeric-representation.md):
//! an exact decimal `coefficient × 10^-dscale` (the coefficient a `num-bigint` integer, kept
//! inline while it fits an i64) plus NaN and ±Infinity. Limits are PG's: 131072 digits before
//! the point, 16383 after. Rounding is half away from zero; result scales follow numeric.c
//! (`select_div_scale`, sqrt/ln/exp/power scale selection).

use num_bigint::{BigInt, Sign};
use num_integer::Integer;
use num_traits::{Pow, Signed, ToPrimitive, Zero};
use pgerror::{codes, PgError, PgResult};
use std::cmp::Ordering;

mod transcendental;
mod wire;

pub use wire::{from_binary, to_binary};

/// NUMERIC_DSCALE_MAX: the most digits after the point.
pub const MAX_DSCALE: i64 = 16383;
/// (NUMERIC_WEIGHT_MAX + 1) × DEC_DIGITS: the most digits before the point.
pub const MAX_INT_DIGITS: i64 = 131072;
/// NUMERIC_MIN_SIG_DIGITS: computed results carry at least this many significant digits.
const MIN_SIG_DIGITS: i64 = 16;
/// NUMERIC_MAX_DISPLAY_SCALE: the most digits after the point a computation chooses.
const MAX_DISPLAY_SCALE: i64 = 1000;
/// NUMERIC_MAX_RESULT_SCALE.
const MAX_RESULT_SCALE: i64 = 2000;

/// One `numeric` value. Equality and ordering are SQL's (1.5 = 1.50, NaN = NaN and sorts
/// above +Infinity); the display scale is kept for output.
#[derive(Clone, Debug)]
pub struct Numeric(Repr);

#[derive(Clone, Debug)]
enum Repr {
    /// `coef × 10^-dscale`, the common case, without allocation.
    Small {
        coef: i64,
        dscale: u16,
    },
    /// `coef × 10^-dscale` for coefficients beyond i64.
    Big(Box<(BigInt, u16)>),
    NaN,
    PosInf,
    NegInf,
}

/// A finite decimal during computation: `coef × 10^-scale` (scale may be negative).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Dec {
    pub coef: BigInt,
    pub scale: i64,
}

pub(crate) fn overflow() -> PgError {
    PgError::new(
        codes::NUMERIC_VALUE_OUT_OF_RANGE,
        "value overflows numeric format",
    )
}

fn div_zero() -> PgError {
    PgError::new(codes::DIVISION_BY_ZERO, "division by zero")
}

pub(crate) fn pow10(n: i64) -> BigInt {
    BigInt::from(10u32).pow(n as u32)
}

/// Number of decimal digits of |m| (0 for 0).
pub(crate) fn ndigits(m: &BigInt) -> i64 {
    if m.is_zero() {
        return 0;
    }
    if let Some(v) = m.to_i64() {
        return v.unsigned_abs().ilog10() as i64 + 1;
    }
    let bits = m.bits() as f64;
    // 10^(est-1) <= |m| always holds; |m| may reach 10^est.
    // a little below log10(2), so the estimate never exceeds the true count
    #[allow(clippy::approx_constant)]
    let est = ((bits - 1.0) * 0.301_029_995_66).floor() as i64 + 1;
    if m.magnitude() >= pow10(est).magnitude() {
        est + 1
    } else {
        est
    }
}

/// `n / d` rounded half away from zero.
pub(crate) fn round_div(n: &BigInt, d: &BigInt) -> BigInt {
    let (q, r) = n.div_rem(d);
    if (r.magnitude() << 1u8) >= *d.magnitude() {
        if (n.sign() == Sign::Minus) == (d.sign() == Sign::Minus) {
            q + 1
        } else {
            q - 1
        }
    } else {
        q
    }
}

impl Dec {
    pub fn new(coef: impl Into<BigInt>, scale: i64) -> Dec {
        Dec {
            coef: coef.into(),
            scale,
        }
    }

    pub fn is_zero(&self) -> bool {
        self.coef.is_zero()
    }

    pub fn is_neg(&self) -> bool {
        self.coef.sign() == Sign::Minus
    }

    /// floor(log10(|x|)): the decimal exponent of the leading digit (x ≠ 0).
    pub fn dexp(&self) -> i64 {
        ndigits(&self.coef) - 1 - self.scale
    }

    /// The coefficient at a scale ≥ the current one.
    pub fn coef_at(&self, scale: i64) -> BigInt {
        debug_assert!(scale >= self.scale);
        if scale == self.scale {
            self.coef.clone()
        } else {
            &self.coef * pow10(scale - self.scale)
        }
    }

    /// Rounded (half away from zero) or padded to exactly `scale` digits after the point.
    pub fn round(&self, scale: i64) -> Dec {
        if scale >= self.scale {
            return Dec {
                coef: self.coef_at(scale),
                scale,
            };
        }
        // drop digits beyond what can matter (keeps 10^k small for tiny scales)
        let k = self.scale - scale;
        if k > ndigits(&self.coef) {
            return Dec {
                coef: BigInt::zero(),
                scale,
            };
        }
        Dec {
            coef: round_div(&self.coef, &pow10(k)),
            scale,
        }
    }

    /// Truncated (toward zero) or padded to exactly `scale` digits after the point.
    pub fn trunc(&self, scale: i64) -> Dec {
        if scale >= self.scale {
            return Dec {
                coef: self.coef_at(scale),
                scale,
            };
        }
        let k = self.scale - scale;
        if k > ndigits(&self.coef) {
            return Dec {
                coef: BigInt::zero(),
                scale,
            };
        }
        Dec {
            coef: &self.coef / pow10(k),
            scale,
        }
    }

    fn floor_ceil(&self, ceil: bool) -> Dec {
        if self.scale <= 0 {
            return self.round(0);
        }
        let p = pow10(self.scale);
        let (q, r) = self.coef.div_mod_floor(&p);
        let q = if ceil && !r.is_zero() { q + 1 } else { q };
        Dec { coef: q, scale: 0 }
    }

    pub fn add(&self, o: &Dec) -> Dec {
        let s = self.scale.max(o.scale);
        Dec {
            coef: self.coef_at(s) + o.coef_at(s),
            scale: s,
        }
    }

    pub fn neg(&self) -> Dec {
        Dec {
            coef: -&self.coef,
            scale: self.scale,
        }
    }

    pub fn sub(&self, o: &Dec) -> Dec {
        self.add(&o.neg())
    }

    pub fn mul(&self, o: &Dec) -> Dec {
        Dec {
            coef: &self.coef * &o.coef,
            scale: self.scale + o.scale,
        }
    }

    pub fn cmp(&self, o: &Dec) -> Ordering {
        let (a, b) = (self.is_neg(), o.is_neg());
        if a != b || self.is_zero() || o.is_zero() {
            return self.coef.sign().cmp(&o.coef.sign());
        }
        // different decimal exponents decide without scaling
        let (ea, eb) = (self.dexp(), o.dexp());
        if ea != eb {
            return if a { eb.cmp(&ea) } else { ea.cmp(&eb) };
        }
        let s = self.scale.max(o.scale);
        self.coef_at(s).cmp(&o.coef_at(s))
    }

    /// `self / o` rounded (or truncated) to `scale` digits; `o` must not be zero.
    pub fn div(&self, o: &Dec, scale: i64, round: bool) -> Dec {
        // q = a/b × 10^scale = ca × 10^(scale + sb - sa) / cb
        let k = scale + o.scale - self.scale;
        let (n, d) = if k >= 0 {
            (&self.coef * pow10(k), o.coef.clone())
        } else {
            (self.coef.clone(), &o.coef * pow10(-k))
        };
        let coef = if round { round_div(&n, &d) } else { &n / &d };
        Dec { coef, scale }
    }

    /// Base-10000 weight and first base-10000 digit of |x| (0, 0 for zero), as numeric.c
    /// stores the value.
    fn nbase_weight_first(&self) -> (i64, i64) {
        if self.is_zero() {
            return (0, 0);
        }
        let e = self.dexp();
        let w = e.div_euclid(4);
        let lead = e - 4 * w + 1; // decimal digits in the first base-10000 digit
        let nd = ndigits(&self.coef);
        let m = self.coef.magnitude();
        let first = if lead >= nd {
            m * pow10(lead - nd).magnitude()
        } else {
            m / pow10(nd - lead).magnitude()
        };
        (w, first.to_i64().unwrap_or(0))
    }

    /// Base-10000 weight of a nonzero value (numeric.c's `weight`).
    pub fn nbase_weight(&self) -> i64 {
        self.nbase_weight_first().0
    }

    pub fn to_f64(&self) -> f64 {
        if let (Some(c), true) = (self.coef.to_i64(), (0..=22).contains(&self.scale)) {
            if c.unsigned_abs() < (1 << 53) {
                return c as f64 / 10f64.powi(self.scale as i32);
            }
        }
        format!("{}e{}", self.coef, -self.scale)
            .parse()
            .unwrap_or(0.0)
    }

    pub fn from_i64(v: i64) -> Dec {
        Dec {
            coef: BigInt::from(v),
            scale: 0,
        }
    }
}

impl Numeric {
    pub const NAN: Numeric = Numeric(Repr::NaN);
    pub const POS_INF: Numeric = Numeric(Repr::PosInf);
    pub const NEG_INF: Numeric = Numeric(Repr::NegInf);
    pub const ZERO: Numeric = Numeric(Repr::Small { coef: 0, dscale: 0 });
    pub const ONE: Numeric = Numeric(Repr::Small { coef: 1, dscale: 0 });

    /// A finite value from a computation: scale < 0 becomes dscale 0; 22003 outside PG's
    /// range (more than 16383 digits after the point or 131072 before it).
    pub(crate) fn from_dec(d: Dec) -> PgResult<Numeric> {
        let d = if d.scale < 0 {
            Dec {
                coef: d.coef_at(0),
                scale: 0,
            }
        } else {
            d
        };
        if d.scale > MAX_DSCALE {
            return Err(overflow());
        }
        if !d.is_zero() && d.dexp() >= MAX_INT_DIGITS {
            return Err(overflow());
        }
        let dscale = d.scale as u16;
        Ok(match d.coef.to_i64() {
            Some(coef) => Numeric(Repr::Small { coef, dscale }),
            None => Numeric(Repr::Big(Box::new((d.coef, dscale)))),
        })
    }

    pub fn from_i64(v: i64) -> Numeric {
        Numeric(Repr::Small { coef: v, dscale: 0 })
    }

    /// The finite value, `None` for NaN and ±Infinity.
    pub(crate) fn dec(&self) -> Option<Dec> {
        match &self.0 {
            Repr::Small { coef, dscale } => Some(Dec::new(*coef, *dscale as i64)),
            Repr::Big(b) => Some(Dec::new(b.0.clone(), b.1 as i64)),
            _ => None,
        }
    }

    pub fn is_nan(&self) -> bool {
        matches!(self.0, Repr::NaN)
    }

    pub fn is_finite(&self) -> bool {
        matches!(self.0, Repr::Small { .. } | Repr::Big(_))
    }

    pub fn is_inf(&self) -> bool {
        matches!(self.0, Repr::PosInf | Repr::NegInf)
    }

    /// Display scale (digits after the point; 0 for NaN and ±Infinity).
    pub fn dscale(&self) -> u16 {
        match &self.0 {
            Repr::Small { dscale, .. } => *dscale,
            Repr::Big(b) => b.1,
            _ => 0,
        }
    }

    /// -1, 0 or 1 (NaN gives 0; callers handle it first).
    pub fn signum(&self) -> i32 {
        match &self.0 {
            Repr::Small { coef, .. } => coef.signum() as i32,
            Repr::Big(b) => {
                if b.0.is_negative() {
                    -1
                } else {
                    1
                }
            }
            Repr::PosInf => 1,
            Repr::NegInf => -1,
            Repr::NaN => 0,
        }
    }

    /// Whether the value is an integer (±Infinity counts, NaN does not).
    pub fn is_integral(&self) -> bool {
        match &self.0 {
            Repr::NaN => false,
            Repr::PosInf | Repr::NegInf => true,
            _ => {
                let d = self.dec().expect("finite");
                d.scale <= 0 || (&d.coef % pow10(d.scale)).is_zero()
            }
        }
    }

    /// The value as an i64 when it is integral and fits.
    pub fn to_i64_exact(&self) -> Option<i64> {
        match &self.0 {
            Repr::Small { coef, dscale: 0 } => Some(*coef),
            Repr::Small { coef: 0, .. } => Some(0),
            Repr::Small { coef, dscale } => {
                // a nonzero i64 is never a multiple of 10^19 or more
                let p = 10i64.checked_pow(*dscale as u32)?;
                (coef % p == 0).then_some(coef / p)
            }
            Repr::Big(_) if self.is_integral() => self.dec()?.trunc(0).coef.to_i64(),
            _ => None,
        }
    }

    /// SQL ordering: -Infinity < finite values < +Infinity < NaN; NaN = NaN.
    pub fn sql_cmp(&self, other: &Numeric) -> Ordering {
        fn rank(n: &Numeric) -> u8 {
            match n.0 {
                Repr::NegInf => 0,
                Repr::PosInf => 2,
                Repr::NaN => 3,
                _ => 1,
            }
        }
        match (&self.0, &other.0) {
            (
                Repr::Small {
                    coef: a,
                    dscale: sa,
                },
                Repr::Small {
                    coef: b,
                    dscale: sb,
                },
            ) if sa == sb => a.cmp(b),
            (
                Repr::Small {
                    coef: a,
                    dscale: sa,
                },
                Repr::Small {
                    coef: b,
                    dscale: sb,
                },
            ) if sa.abs_diff(*sb) <= 18 => {
                let s = (*sa).max(*sb);
                let a = *a as i128 * 10i128.pow((s - sa) as u32);
                let b = *b as i128 * 10i128.pow((s - sb) as u32);
                a.cmp(&b)
            }
            _ => match (self.dec(), other.dec()) {
                (Some(a), Some(b)) => a.cmp(&b),
                _ => rank(self).cmp(&rank(other)),
            },
        }
    }

    /// Rounded to `scale` digits after the point; a negative scale rounds left of the point
    /// and displays no fraction (numeric.c round_var + numeric_round).
    pub fn round(&self, scale: i64) -> PgResult<Numeric> {
        self.rescale(scale, true)
    }

    pub fn trunc(&self, scale: i64) -> PgResult<Numeric> {
        self.rescale(scale, false)
    }

    fn rescale(&self, scale: i64, round: bool) -> PgResult<Numeric> {
        let Some(d) = self.dec() else {
            return Ok(self.clone());
        };
        let scale = scale.clamp(-MAX_RESULT_SCALE, MAX_RESULT_SCALE);
        Numeric::from_dec(if round {
            d.round(scale)
        } else {
            d.trunc(scale)
        })
    }

    pub fn floor(&self) -> PgResult<Numeric> {
        match self.dec() {
            Some(d) => Numeric::from_dec(d.floor_ceil(false)),
            None => Ok(self.clone()),
        }
    }

    pub fn ceil(&self) -> PgResult<Numeric> {
        match self.dec() {
            Some(d) => Numeric::from_dec(d.floor_ceil(true)),
            None => Ok(self.clone()),
        }
    }

    pub fn abs(&self) -> Numeric {
        match &self.0 {
            Repr::NegInf => Numeric::POS_INF,
            _ if self.signum() < 0 => self.neg(),
            _ => self.clone(),
        }
    }

    pub fn neg(&self) -> Numeric {
        match &self.0 {
            Repr::Small { coef, dscale } if *coef != i64::MIN => Numeric(Repr::Small {
                coef: -coef,
                dscale: *dscale,
            }),
            Repr::PosInf => Numeric::NEG_INF,
            Repr::NegInf => Numeric::POS_INF,
            Repr::NaN => Numeric::NAN,
            _ => {
                let d = self.dec().expect("finite");
                Numeric::from_dec(d.neg()).expect("same magnitude")
            }
        }
    }

    /// sign(): -1, 0, 1 (NaN for NaN).
    pub fn sign(&self) -> Numeric {
        if self.is_nan() {
            return Numeric::NAN;
        }
        Numeric::from_i64(self.signum() as i64)
    }

    /// Lenient conversion to f64 (±inf beyond f64's range): for hashing and estimates.
    pub fn to_f64_lossy(&self) -> f64 {
        match &self.0 {
            Repr::Small { coef, dscale } if *dscale == 0 => *coef as f64,
            Repr::NaN => f64::NAN,
            Repr::PosInf => f64::INFINITY,
            Repr::NegInf => f64::NEG_INFINITY,
            _ => self.dec().expect("finite").to_f64(),
        }
    }
}

/// What the storage encodings see of a value.
pub(crate) enum Parts<'a> {
    Small(i64, u16),
    Big(&'a BigInt, u16),
    NaN,
    PosInf,
    NegInf,
}

impl Numeric {
    pub(crate) fn parts(&self) -> Parts<'_> {
        match &self.0 {
            Repr::Small { coef, dscale } => Parts::Small(*coef, *dscale),
            Repr::Big(b) => Parts::Big(&b.0, b.1),
            Repr::NaN => Parts::NaN,
            Repr::PosInf => Parts::PosInf,
            Repr::NegInf => Parts::NegInf,
        }
    }

    /// A stored finite value; `None` when out of range (corrupt data).
    pub(crate) fn from_parts(coef: BigInt, dscale: u16) -> Option<Numeric> {
        Numeric::from_dec(Dec {
            coef,
            scale: dscale as i64,
        })
        .ok()
    }

    /// Sign, decimal exponent e and significant digits (no trailing zeros) of a nonzero
    /// finite value: |x| = 0.d1d2… × 10^e. For order-preserving keys.
    pub(crate) fn key_parts(&self) -> Option<(bool, i64, String)> {
        let d = self.dec()?;
        if d.is_zero() {
            return None;
        }
        let digits = d.coef.magnitude().to_string();
        let e = digits.len() as i64 - d.scale;
        Some((d.is_neg(), e, digits.trim_end_matches('0').to_string()))
    }
}

impl From<i64> for Numeric {
    fn from(v: i64) -> Numeric {
        Numeric::from_i64(v)
    }
}

impl PartialEq for Numeric {
    fn eq(&self, other: &Numeric) -> bool {
        self.sql_cmp(other) == Ordering::Equal
    }
}

impl Eq for Numeric {}

impl PartialOrd for Numeric {
    fn partial_cmp(&self, other: &Numeric) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Numeric {
    fn cmp(&self, other: &Numeric) -> Ordering {
        self.sql_cmp(other)
    }
}

// ---------------------------------------------------------------------------------------
// Text I/O.

impl std::fmt::Display for Numeric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Repr::NaN => f.write_str("NaN"),
            Repr::PosInf => f.write_str("Infinity"),
            Repr::NegInf => f.write_str("-Infinity"),
            Repr::Small { coef, dscale } => write_decimal(
                f,
                *coef < 0,
                &coef.unsigned_abs().to_string(),
                *dscale as usize,
            ),
            Repr::Big(b) => write_decimal(
                f,
                b.0.is_negative(),
                &b.0.magnitude().to_string(),
                b.1 as usize,
            ),
        }
    }
}

/// `digits × 10^-scale` with every digit, no exponent.
fn write_decimal(
    f: &mut std::fmt::Formatter<'_>,
    neg: bool,
    digits: &str,
    scale: usize,
) -> std::fmt::Result {
    if neg {
        f.write_str("-")?;
    }
    if digits.len() > scale {
        let (ip, fp) = digits.split_at(digits.len() - scale);
        f.write_str(ip)?;
        if scale > 0 {
            write!(f, ".{fp}")?;
        }
        Ok(())
    } else {
        write!(f, "0.{}{digits}", "0".repeat(scale - digits.len()))
    }
}

/// numeric_in: `[ws][sign]digits[.digits][e[sign]digits][ws]`, or NaN / [+-]Infinity /
/// [+-]inf in any case. `None` on bad syntax; 22003 outside the range.
pub fn parse(s: &str) -> Option<PgResult<Numeric>> {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let special = match t.to_ascii_lowercase().as_str() {
        "nan" => Some(Numeric::NAN),
        "infinity" | "+infinity" | "inf" | "+inf" => Some(Numeric::POS_INF),
        "-infinity" | "-inf" => Some(Numeric::NEG_INF),
        _ => None,
    };
    if special.is_some() {
        return special.map(Ok);
    }
    let b = t.as_bytes();
    let mut i = 0;
    let mut neg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        neg = b[i] == b'-';
        i += 1;
    }
    let mut digits: Vec<u8> = Vec::with_capacity(b.len());
    let mut frac = 0i64;
    let mut seen_digit = false;
    let mut seen_point = false;
    while i < b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                if !(digits.is_empty() && c == b'0') {
                    digits.push(c);
                }
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
            exp = (exp * 10 + (b[i] - b'0') as i64).min(i64::from(i32::MAX));
            i += 1;
        }
        if st == i {
            return None;
        }
        if exp >= i64::from(i32::MAX / 2) {
            return Some(Err(overflow()));
        }
        if eneg {
            exp = -exp;
        }
    }
    if i != b.len() {
        return None;
    }
    // value = digits × 10^-(frac - exp); display scale never negative
    let scale = frac - exp;
    if scale > MAX_DSCALE || (!digits.is_empty() && digits.len() as i64 - scale > MAX_INT_DIGITS) {
        return Some(Err(overflow()));
    }
    let coef = if digits.is_empty() {
        BigInt::zero()
    } else {
        BigInt::parse_bytes(&digits, 10).expect("decimal digits")
    };
    let coef = if neg { -coef } else { coef };
    Some(Numeric::from_dec(Dec { coef, scale }))
}

// ---------------------------------------------------------------------------------------
// Typmod.

/// Applies numeric(p,s): rounds to s (s may be negative: rounds left of the point), errors
/// 22003 "numeric field overflow" when the value needs more than p - s integer digits.
pub fn apply_typmod(n: &Numeric, p: u16, s: i16) -> PgResult<Numeric> {
    let field_overflow =
        || PgError::new(codes::NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow");
    let d = match n.0 {
        Repr::NaN => return Ok(Numeric::NAN),
        Repr::PosInf | Repr::NegInf => {
            return Err(field_overflow().with_detail(format!(
                "A field with precision {p}, scale {s} cannot hold an infinite value."
            )))
        }
        _ => n.dec().expect("finite"),
    };
    let r = d.round(s as i64);
    let maxdigits = p as i64 - s as i64;
    if !r.is_zero() && r.dexp() + 1 > maxdigits {
        let limit = if maxdigits != 0 {
            format!("10^{maxdigits}")
        } else {
            "1".to_string()
        };
        return Err(field_overflow()
            .with_detail(format!("A field with precision {p}, scale {s} must round to an absolute value less than {limit}.")));
    }
    Numeric::from_dec(r)
}

// ---------------------------------------------------------------------------------------
// Arithmetic.

/// PostgreSQL's select_div_scale: at least 16 significant digits, never fewer digits after
/// the point than either input, at most 1000.
fn div_scale(a: &Dec, b: &Dec) -> i64 {
    let (w1, f1) = a.nbase_weight_first();
    let (w2, f2) = b.nbase_weight_first();
    let mut qweight = w1 - w2;
    if f1 <= f2 {
        qweight -= 1;
    }
    (MIN_SIG_DIGITS - qweight * 4)
        .max(a.scale)
        .max(b.scale)
        .clamp(0, MAX_DISPLAY_SCALE)
}

fn small_pair(a: &Numeric, b: &Numeric) -> Option<(i64, u16, i64, u16)> {
    match (&a.0, &b.0) {
        (
            Repr::Small {
                coef: x,
                dscale: sx,
            },
            Repr::Small {
                coef: y,
                dscale: sy,
            },
        ) => Some((*x, *sx, *y, *sy)),
        _ => None,
    }
}

/// Small + small without allocation when the aligned coefficients fit.
fn small_add(a: &Numeric, b: &Numeric, negate_b: bool) -> Option<Numeric> {
    let (x, sx, y, sy) = small_pair(a, b)?;
    let s = sx.max(sy);
    let x = (x as i128).checked_mul(10i128.checked_pow((s - sx) as u32)?)?;
    let y = (y as i128).checked_mul(10i128.checked_pow((s - sy) as u32)?)?;
    let r = if negate_b { x - y } else { x + y };
    Some(Numeric(Repr::Small {
        coef: i64::try_from(r).ok()?,
        dscale: s,
    }))
}

pub fn add(a: &Numeric, b: &Numeric) -> PgResult<Numeric> {
    if let Some(r) = small_add(a, b, false) {
        return Ok(r);
    }
    match (a.dec(), b.dec()) {
        (Some(x), Some(y)) => Numeric::from_dec(x.add(&y)),
        _ => Ok(special_add(a, b)),
    }
}

pub fn sub(a: &Numeric, b: &Numeric) -> PgResult<Numeric> {
    if let Some(r) = small_add(a, b, true) {
        return Ok(r);
    }
    match (a.dec(), b.dec()) {
        (Some(x), Some(y)) => Numeric::from_dec(x.sub(&y)),
        _ => Ok(special_add(a, &b.neg())),
    }
}

/// Addition with NaN or ±Infinity: Infinity + -Infinity is NaN.
fn special_add(a: &Numeric, b: &Numeric) -> Numeric {
    if a.is_nan() || b.is_nan() {
        return Numeric::NAN;
    }
    match (a.is_inf(), b.is_inf()) {
        (true, true) if a.signum() != b.signum() => Numeric::NAN,
        (true, _) => a.clone(),
        _ => b.clone(),
    }
}

pub fn mul(a: &Numeric, b: &Numeric) -> PgResult<Numeric> {
    if let Some((x, sx, y, sy)) = small_pair(a, b) {
        if let (Some(c), true) = (
            x.checked_mul(y),
            sx as u32 + (sy as u32) <= MAX_DSCALE as u32,
        ) {
            return Ok(Numeric(Repr::Small {
                coef: c,
                dscale: sx + sy,
            }));
        }
    }
    match (a.dec(), b.dec()) {
        (Some(x), Some(y)) => {
            let p = x.mul(&y);
            // numeric_mul keeps the exact product but no more than NUMERIC_DSCALE_MAX digits
            Numeric::from_dec(if p.scale > MAX_DSCALE {
                p.round(MAX_DSCALE)
            } else {
                p
            })
        }
        _ => {
            if a.is_nan() || b.is_nan() || a.signum() == 0 || b.signum() == 0 {
                return Ok(Numeric::NAN); // Infinity × 0 too
            }
            Ok(if a.signum() == b.signum() {
                Numeric::POS_INF
            } else {
                Numeric::NEG_INF
            })
        }
    }
}

/// Division with a special operand (numeric_div / numeric_div_trunc).
fn special_div(a: &Numeric, b: &Numeric) -> PgResult<Numeric> {
    if a.is_nan() || b.is_nan() {
        return Ok(Numeric::NAN);
    }
    if a.is_inf() {
        if b.is_inf() {
            return Ok(Numeric::NAN);
        }
        return match b.signum() {
            0 => Err(div_zero()),
            s if s == a.signum() => Ok(Numeric::POS_INF),
            _ => Ok(Numeric::NEG_INF),
        };
    }
    // finite / ±Infinity
    Ok(Numeric::ZERO)
}

pub fn div(a: &Numeric, b: &Numeric) -> PgResult<Numeric> {
    match (a.dec(), b.dec()) {
        (Some(x), Some(y)) => {
            if y.is_zero() {
                return Err(div_zero());
            }
            let scale = div_scale(&x, &y);
            Numeric::from_dec(x.div(&y, scale, true))
        }
        _ => special_div(a, b),
    }
}

/// div(a, b): the truncated integer quotient.
pub fn div_trunc(a: &Numeric, b: &Numeric) -> PgResult<Numeric> {
    match (a.dec(), b.dec()) {
        (Some(x), Some(y)) => {
            if y.is_zero() {
                return Err(div_zero());
            }
            Numeric::from_dec(x.div(&y, 0, false))
        }
        _ => special_div(a, b),
    }
}

/// numeric % numeric: remainder of the truncated quotient (sign of the dividend).
pub fn rem(a: &Numeric, b: &Numeric) -> PgResult<Numeric> {
    match (a.dec(), b.dec()) {
        (Some(x), Some(y)) => {
            if y.is_zero() {
                return Err(div_zero());
            }
            let s = x.scale.max(y.scale);
            Numeric::from_dec(Dec {
                coef: x.coef_at(s) % y.coef_at(s),
                scale: s,
            })
        }
        _ => {
            if a.is_nan() || b.is_nan() {
                return Ok(Numeric::NAN);
            }
            if a.is_inf() {
                return if b.signum() == 0 {
                    Err(div_zero())
                } else {
                    Ok(Numeric::NAN)
                };
            }
            Ok(a.clone()) // finite % ±Infinity
        }
    }
}

pub use transcendental::{exp, ln, log, pow, sqrt, sqrt_scaled};

/// var_samp/var_pop (stddev: their square roots) of `count` values whose sum is `sum` and
/// sum of squares `sum_sq`, as PostgreSQL's numeric_stddev_internal computes them: None
/// for too few values, else NaN past an infinity or NaN.
pub fn variance(
    count: i64,
    sum: &Numeric,
    sum_sq: &Numeric,
    sample: bool,
    stddev: bool,
) -> PgResult<Option<Numeric>> {
    if count == 0 || (sample && count == 1) {
        return Ok(None);
    }
    if !sum.is_finite() || !sum_sq.is_finite() {
        return Ok(Some(Numeric::NAN));
    }
    let n = Numeric::from_i64(count);
    let numerator = sub(&mul(&n, sum_sq)?, &mul(sum, sum)?)?;
    if numerator.signum() <= 0 {
        // roundoff cannot make it negative here, but PostgreSQL answers 0 for it
        return Ok(Some(Numeric::ZERO));
    }
    let others = Numeric::from_i64(if sample { count - 1 } else { count });
    let variance = div(&numerator, &mul(&n, &others)?)?;
    if stddev {
        let rscale = i64::from(variance.dscale());
        return sqrt_scaled(&variance, rscale).map(Some);
    }
    Ok(Some(variance))
}

// ---------------------------------------------------------------------------------------
// Casts.

/// numeric → int2/int4/int8: rounds half away from zero; `type_name` names the target in
/// errors ("smallint", "integer", "bigint"), whose range is `min..=max`.
pub fn to_int(n: &Numeric, type_name: &str, min: i64, max: i64) -> PgResult<i64> {
    let d = match n.0 {
        Repr::NaN => {
            return Err(PgError::new(
                codes::FEATURE_NOT_SUPPORTED,
                format!("cannot convert NaN to {type_name}"),
            ))
        }
        Repr::PosInf | Repr::NegInf => {
            return Err(PgError::new(
                codes::FEATURE_NOT_SUPPORTED,
                format!("cannot convert infinity to {type_name}"),
            ))
        }
        _ => n.dec().expect("finite"),
    };
    let out = || {
        PgError::new(
            codes::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("{type_name} out of range"),
        )
    };
    if !d.is_zero() && d.dexp() > 19 {
        return Err(out());
    }
    let v = d.round(0).coef.to_i64().ok_or_else(out)?;
    if v < min || v > max {
        return Err(out());
    }
    Ok(v)
}

/// numeric → float8/float4 as PostgreSQL: through the text form and float8in/float4in, so
/// values beyond the float's range are 22003 `"…" is out of range for type …`.
pub fn to_float(n: &Numeric, float4: bool) -> PgResult<f64> {
    let d = match n.0 {
        Repr::NaN => return Ok(f64::NAN),
        Repr::PosInf => return Ok(f64::INFINITY),
        Repr::NegInf => return Ok(f64::NEG_INFINITY),
        _ => n.dec().expect("finite"),
    };
    let v = if float4 {
        d.to_f64_via_f32()
    } else {
        d.to_f64()
    };
    if v.is_infinite() || (v == 0.0 && !d.is_zero()) {
        let tyname = if float4 { "real" } else { "double precision" };
        return Err(PgError::new(
            codes::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("\"{n}\" is out of range for type {tyname}"),
        ));
    }
    Ok(v)
}

impl Dec {
    /// The value rounded once to f32 (float4in on the text), widened.
    fn to_f64_via_f32(&self) -> f64 {
        format!("{}e{}", self.coef, -self.scale)
            .parse::<f32>()
            .map(f64::from)
            .unwrap_or(0.0)
    }
}

/// float8 → numeric as PostgreSQL: through `%.15g` (`%.6g` for float4); NaN and ±Infinity
/// map to the numeric special values.
pub fn from_f64(v: f64, sig: usize) -> PgResult<Numeric> {
    if v.is_nan() {
        return Ok(Numeric::NAN);
    }
    if v.is_infinite() {
        return Ok(if v > 0.0 {
            Numeric::POS_INF
        } else {
            Numeric::NEG_INF
        });
    }
    let s = format!("{:.*e}", sig - 1, v);
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    // %g: no trailing zeros after the point
    let neg = mant.starts_with('-');
    let mut digits: Vec<u8> = mant.bytes().filter(u8::is_ascii_digit).collect();
    while digits.len() > 1 && digits.last() == Some(&b'0') {
        digits.pop();
    }
    let scale = (digits.len() as i64 - 1 - exp).max(0);
    let coef = BigInt::parse_bytes(&digits, 10).expect("digits");
    let d = Dec {
        coef: if neg { -coef } else { coef },
        scale: digits.len() as i64 - 1 - exp,
    };
    Numeric::from_dec(d.round(scale))
}

#[cfg(test)]
mod tests;
