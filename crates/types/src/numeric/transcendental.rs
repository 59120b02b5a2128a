//! sqrt, ln, log, exp and power with numeric.c's result scales. Values are computed in
//! fixed point (an integer scaled by 10^w) with guard digits and rounded once at the end,
//! so results are correctly rounded except where the true value lies within the guard
//! digits' error of a rounding tie (numeric.c has the same property).

use super::{
    overflow, pow10, round_div, Dec, Numeric, MAX_DISPLAY_SCALE, MAX_INT_DIGITS, MAX_RESULT_SCALE,
    MIN_SIG_DIGITS,
};
use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};
use pgerror::{codes, PgError, PgResult};

const LN10_F64: f64 = std::f64::consts::LN_10;
/// Extra digits every fixed-point computation carries beyond what the result needs.
const GUARD: i64 = 12;

fn log_error(zero: bool) -> PgError {
    let msg = if zero {
        "cannot take logarithm of zero"
    } else {
        "cannot take logarithm of a negative number"
    };
    PgError::new(codes::INVALID_ARGUMENT_FOR_LOG, msg)
}

fn power_error(msg: &str) -> PgError {
    PgError::new(codes::INVALID_ARGUMENT_FOR_POWER, msg.to_string())
}

fn clamp_scale(rscale: i64, min_scales: &[i64]) -> i64 {
    min_scales
        .iter()
        .fold(rscale, |r, s| r.max(*s))
        .clamp(0, MAX_DISPLAY_SCALE)
}

/// Fixed-point product at scale `w`.
fn fx_mul(a: &BigInt, b: &BigInt, w: i64) -> BigInt {
    round_div(&(a * b), &pow10(w))
}

impl Dec {
    /// Approximate log10(|x|) (x ≠ 0), from the leading 17 digits and the exponent.
    fn log10_approx(&self) -> f64 {
        let nd = super::ndigits(&self.coef);
        let keep = nd.min(17);
        let lead = (self.coef.abs() / pow10(nd - keep)).to_f64().unwrap_or(1.0);
        lead.log10() + (nd - keep - self.scale) as f64
    }

    /// The value at scale `w` as a fixed-point integer (rounded).
    fn fixed(&self, w: i64) -> BigInt {
        self.round(w).coef
    }

    /// The first one or two base-10000 digits as numeric.c's estimates use them, with the
    /// decimal weight of the last one used.
    fn leading_nbase(&self) -> (f64, i64) {
        let w = self.nbase_weight();
        let unit = Dec::new(1, -4 * w); // 10000^w
        let lead = self.abs().div(&unit, 0, false);
        let first = lead.coef.to_f64().unwrap_or(0.0);
        if self.abs().cmp(&lead.mul(&unit)).is_eq() {
            return (first, 4 * w);
        }
        let unit2 = Dec::new(1, -4 * (w - 1));
        let two = self
            .abs()
            .div(&unit2, 0, false)
            .coef
            .to_f64()
            .unwrap_or(0.0);
        (two, 4 * (w - 1))
    }

    fn abs(&self) -> Dec {
        Dec {
            coef: self.coef.abs(),
            scale: self.scale,
        }
    }
}

/// numeric.c estimate_ln_dweight: the decimal weight of ln(x) for x > 0.
fn estimate_ln_dweight(x: &Dec) -> i64 {
    let lo = Dec::new(9, 1);
    let hi = Dec::new(11, 1);
    if x.cmp(&lo).is_ge() && x.cmp(&hi).is_le() {
        let d = x.sub(&Dec::from_i64(1));
        return if d.is_zero() { 0 } else { d.dexp() };
    }
    let (digits, dweight) = x.leading_nbase();
    let ln = digits.ln() + dweight as f64 * LN10_F64;
    ln.abs().log10() as i64
}

/// ln(y) for y given at fixed scale `w`, y > 0 and within a few powers of ten of 1: square
/// roots bring y near 1, then ln y = 2^(k+1) atanh((y-1)/(y+1)). Error: a few thousand ulps.
fn ln_near_one(mut y: BigInt, w: i64) -> BigInt {
    let one = pow10(w);
    let tol = pow10(w - 2);
    let mut k = 0u32;
    while (&y - &one).abs() > tol {
        y = (&y * &one).sqrt();
        k += 1;
    }
    let z = round_div(&((&y - &one) * &one), &(&y + &one));
    let z2 = fx_mul(&z, &z, w);
    let mut term = z.clone();
    let mut sum = z;
    let mut n = 1u32;
    loop {
        term = fx_mul(&term, &z2, w);
        if term.is_zero() {
            break;
        }
        sum += &term / BigInt::from(2 * n + 1);
        n += 1;
    }
    sum << (k + 1)
}

/// ln(10) at fixed scale `w`.
fn ln10_fixed(w: i64) -> BigInt {
    let g = 6;
    round_div(
        &ln_near_one(BigInt::from(10) * pow10(w + g), w + g),
        &pow10(g),
    )
}

/// ln(x) for x > 0 at fixed scale `w` (error below one unit).
fn ln_fixed(x: &Dec, w: i64) -> BigInt {
    // x = m × 10^e with m in [1, 10): ln x = ln m + e ln 10
    let e = x.dexp();
    let g = GUARD + (e.unsigned_abs().max(1).ilog10() as i64 + 1);
    let wg = w + g;
    let m = Dec {
        coef: x.coef.clone(),
        scale: x.scale + e,
    };
    let mut total = ln_near_one(m.fixed(wg), wg);
    if e != 0 {
        total += ln10_fixed(wg) * BigInt::from(e);
    }
    round_div(&total, &pow10(g))
}

/// exp(x) rounded to `rscale` (numeric.c exp_var, including its overflow limit).
fn exp_dec(x: &Dec, rscale: i64) -> PgResult<Dec> {
    let xf = x.to_f64();
    if xf.abs() >= (MAX_RESULT_SCALE * 3) as f64 {
        if xf > 0.0 {
            return Err(overflow());
        }
        return Ok(Dec::new(0, rscale));
    }
    // x = n ln 10 + r: exp(x) = exp(r) × 10^n
    let n = (xf / LN10_F64).floor() as i64;
    let w = (rscale + n).max(0) + GUARD;
    let nd = n.unsigned_abs().max(1).ilog10() as i64 + 1;
    let w2 = w + nd + 2;
    let r2 = x.fixed(w2) - ln10_fixed(w2) * BigInt::from(n);
    let r = round_div(&r2, &pow10(w2 - w));
    // exp(r): halve r k times to below 0.01, Taylor series, square k times
    let one = pow10(w);
    let k = 9u32;
    let rr = round_div(&r, &BigInt::from(1u32 << k));
    let mut sum = one.clone();
    let mut term = one;
    let mut i = 1u32;
    loop {
        term = fx_mul(&term, &rr, w) / BigInt::from(i);
        if term.is_zero() {
            break;
        }
        sum += &term;
        i += 1;
    }
    for _ in 0..k {
        sum = fx_mul(&sum, &sum, w);
    }
    Ok(Dec {
        coef: sum,
        scale: w - n,
    }
    .round(rscale))
}

pub fn sqrt(x: &Numeric) -> PgResult<Numeric> {
    sqrt_to(x, None)
}

/// sqrt(x) to `rscale` digits after the point (PostgreSQL's sqrt_var with a caller's
/// scale, as stddev asks for it).
pub fn sqrt_scaled(x: &Numeric, rscale: i64) -> PgResult<Numeric> {
    sqrt_to(x, Some(rscale))
}

/// sqrt to `rscale`, or to numeric_sqrt's own scale.
fn sqrt_to(x: &Numeric, rscale: Option<i64>) -> PgResult<Numeric> {
    let negative = || power_error("cannot take square root of a negative number");
    let Some(d) = x.dec() else {
        return if x.signum() < 0 && !x.is_nan() {
            Err(negative())
        } else {
            Ok(x.clone())
        };
    };
    if d.is_neg() {
        return Err(negative());
    }
    let rscale = rscale.unwrap_or_else(|| {
        let weight = if d.is_zero() { 0 } else { d.nbase_weight() };
        let sweight = (weight + 1) * 4 / 2 - 1;
        clamp_scale(MIN_SIG_DIGITS - sweight, &[d.scale])
    });
    // floor(sqrt(x) × 10^(rscale+e)) with e ≥ 1 extra digits, then round once
    let mut e = 1;
    while 2 * (rscale + e) < d.scale {
        e += 1;
    }
    let n = &d.coef * pow10(2 * (rscale + e) - d.scale);
    let f = n.sqrt();
    Numeric::from_dec(Dec {
        coef: round_div(&f, &pow10(e)),
        scale: rscale,
    })
}

/// ln(x) of a positive finite value, rounded once to `rscale` from GUARD more digits.
fn ln_dec(d: &Dec, rscale: i64) -> Dec {
    Dec {
        coef: ln_fixed(d, rscale + GUARD),
        scale: rscale + GUARD,
    }
    .round(rscale)
}

fn check_log_arg(d: &Dec) -> PgResult<()> {
    if d.is_zero() {
        return Err(log_error(true));
    }
    if d.is_neg() {
        return Err(log_error(false));
    }
    Ok(())
}

pub fn ln(x: &Numeric) -> PgResult<Numeric> {
    let Some(d) = x.dec() else {
        return if x.signum() < 0 && !x.is_nan() {
            Err(log_error(false))
        } else {
            Ok(x.clone())
        };
    };
    check_log_arg(&d)?;
    let rscale = clamp_scale(MIN_SIG_DIGITS - estimate_ln_dweight(&d), &[d.scale]);
    Numeric::from_dec(ln_dec(&d, rscale))
}

/// log(base, x) (numeric.c log_var; log(x) is log(10, x)).
pub fn log(base: &Numeric, x: &Numeric) -> PgResult<Numeric> {
    let (Some(b), Some(n)) = (base.dec(), x.dec()) else {
        if base.is_nan() || x.is_nan() {
            return Ok(Numeric::NAN);
        }
        if base.signum() < 0 || x.signum() < 0 {
            return Err(log_error(false));
        }
        if base.signum() == 0 || x.signum() == 0 {
            return Err(log_error(true));
        }
        if base.is_inf() {
            return Ok(if x.is_inf() {
                Numeric::NAN
            } else {
                Numeric::ZERO
            });
        }
        return Ok(Numeric::POS_INF);
    };
    check_log_arg(&b)?;
    check_log_arg(&n)?;
    let ln_base_dweight = estimate_ln_dweight(&b);
    let ln_num_dweight = estimate_ln_dweight(&n);
    let result_dweight = ln_num_dweight - ln_base_dweight;
    let rscale = clamp_scale(MIN_SIG_DIGITS - result_dweight, &[b.scale, n.scale]);
    // both logarithms with enough digits for the quotient's rscale + guard
    let w = (rscale + result_dweight - ln_base_dweight.min(ln_num_dweight)).max(0) + GUARD;
    let ln_b = Dec {
        coef: ln_fixed(&b, w),
        scale: w,
    };
    if ln_b.is_zero() {
        return Err(PgError::new(codes::DIVISION_BY_ZERO, "division by zero"));
    }
    let ln_n = Dec {
        coef: ln_fixed(&n, w),
        scale: w,
    };
    Numeric::from_dec(ln_n.div(&ln_b, rscale, true))
}

pub fn exp(x: &Numeric) -> PgResult<Numeric> {
    let Some(d) = x.dec() else {
        return Ok(match x.signum() {
            _ if x.is_nan() => Numeric::NAN,
            s if s > 0 => Numeric::POS_INF,
            _ => Numeric::ZERO,
        });
    };
    let val = (d.to_f64() * std::f64::consts::LOG10_E)
        .clamp(-MAX_RESULT_SCALE as f64, MAX_RESULT_SCALE as f64);
    let rscale = clamp_scale(MIN_SIG_DIGITS - val as i64, &[d.scale]);
    Numeric::from_dec(exp_dec(&d, rscale)?)
}

/// numeric ^ numeric (numeric_power / power_var / power_var_int).
pub fn pow(base: &Numeric, exp: &Numeric) -> PgResult<Numeric> {
    let (Some(b), Some(e)) = (base.dec(), exp.dec()) else {
        return pow_special(base, exp);
    };
    if b.is_zero() && e.is_neg() {
        return Err(power_error("zero raised to a negative power is undefined"));
    }
    if b.is_neg() && !exp.is_integral() {
        return Err(power_error(
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    if let Some(ei) = exp.to_i64_exact().and_then(|v| i32::try_from(v).ok()) {
        let rscale = clamp_scale(MIN_SIG_DIGITS, &[b.scale]);
        return Numeric::from_dec(pow_int(&b, ei as i64, rscale)?);
    }
    if b.is_zero() {
        return Numeric::from_dec(Dec::new(0, MIN_SIG_DIGITS));
    }
    // a negative base has an integral exponent here: the sign follows its parity
    let res_neg = b.is_neg() && e.trunc(0).coef.bit(0);
    let b = b.abs();
    // estimate the result's weight from a low-precision exp × ln(base), as numeric.c does
    let ln_dweight = estimate_ln_dweight(&b);
    let local_rscale = (8 - ln_dweight).max(0);
    let ln_base = ln_dec(&b, local_rscale);
    let mut val = ln_base.mul(&e).round(local_rscale).to_f64();
    if val.abs() > MAX_RESULT_SCALE as f64 * 3.01 {
        if val > 0.0 {
            return Err(overflow());
        }
        return Numeric::from_dec(Dec::new(0, MAX_DISPLAY_SCALE));
    }
    // numeric.c's literal, not LOG10_E: the truncation below must match PG's
    #[allow(clippy::approx_constant)]
    let log10_e = 0.434294481903252;
    val *= log10_e;
    let rscale = clamp_scale(MIN_SIG_DIGITS - val as i64, &[b.scale, e.scale]);
    let sig_digits = (rscale + val as i64).max(0);
    // ln(base) precise enough that |exp| times its error stays below the guard digits
    let w = sig_digits - ln_dweight.min(0) + GUARD + (e.dexp() + 1).max(0);
    let y = Dec {
        coef: ln_fixed(&b, w),
        scale: w,
    }
    .mul(&e);
    let r = exp_dec(&y, rscale)?;
    Numeric::from_dec(if res_neg { r.neg() } else { r })
}

/// power_var_int: base ^ an int32 exponent, rounded to `rscale`.
fn pow_int(b: &Dec, e: i64, rscale: i64) -> PgResult<Dec> {
    match e {
        0 => return Ok(Dec::new(1, 0).round(rscale)),
        1 => return Ok(b.round(rscale)),
        -1 => return Ok(Dec::from_i64(1).div(b, rscale, true)),
        2 => return Ok(b.mul(b).round(rscale)),
        _ => {}
    }
    if b.is_zero() {
        return Ok(Dec::new(0, rscale));
    }
    let f = e as f64 * b.log10_approx();
    if f > (MAX_INT_DIGITS + 4) as f64 {
        return Err(overflow());
    }
    if f + 1.0 < -(rscale as f64) || f + 1.0 < -(MAX_DISPLAY_SCALE as f64) {
        return Ok(Dec::new(0, rscale));
    }
    let sig_digits = 1 + rscale + f as i64 + (e.unsigned_abs() as f64).ln() as i64 + 8;
    let mag = e.unsigned_abs();
    let exact_digits = super::ndigits(&b.coef).saturating_mul(mag as i64);
    let p = if exact_digits <= sig_digits.max(0) + 100 {
        Dec {
            coef: num_traits::Pow::pow(&b.coef, mag as u32),
            scale: b.scale * mag as i64,
        }
    } else {
        pow_rounded(b, mag, sig_digits.max(1) + GUARD)
    };
    Ok(if e < 0 {
        Dec::from_i64(1).div(&p, rscale, true)
    } else {
        p.round(rscale)
    })
}

/// base^e by repeated squaring, keeping `sig` significant digits after each product.
fn pow_rounded(b: &Dec, mut e: u64, sig: i64) -> Dec {
    let keep = |d: Dec| {
        let drop = super::ndigits(&d.coef) - sig;
        if drop > 0 {
            d.round(d.scale - drop)
        } else {
            d
        }
    };
    let mut result = Dec::from_i64(1);
    let mut sq = b.clone();
    loop {
        if e & 1 == 1 {
            result = keep(result.mul(&sq));
        }
        e >>= 1;
        if e == 0 {
            return result;
        }
        sq = keep(sq.mul(&sq));
    }
}

/// numeric_power with NaN or ±Infinity operands (POSIX pow rules, as PG 15).
fn pow_special(base: &Numeric, exp: &Numeric) -> PgResult<Numeric> {
    let one = Numeric::from_dec(Dec::from_i64(1));
    if base.is_nan() {
        return if exp.is_finite() && exp.signum() == 0 {
            one
        } else {
            Ok(Numeric::NAN)
        };
    }
    if exp.is_nan() {
        let base_is_one = base.dec().is_some_and(|d| d.cmp(&Dec::from_i64(1)).is_eq());
        return if base_is_one { one } else { Ok(Numeric::NAN) };
    }
    let (s1, s2) = (base.signum(), exp.signum());
    if s1 == 0 && s2 < 0 {
        return Err(power_error("zero raised to a negative power is undefined"));
    }
    if s1 < 0 && !exp.is_integral() {
        return Err(power_error(
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    if exp.is_inf() {
        let abs_gt_one = match base.dec() {
            None => true,
            Some(d) => {
                match d.abs().cmp(&Dec::from_i64(1)) {
                    std::cmp::Ordering::Equal => return one, // (±1) ^ ±Infinity
                    o => o.is_gt(),
                }
            }
        };
        return Ok(if abs_gt_one == (s2 > 0) {
            Numeric::POS_INF
        } else {
            Numeric::ZERO
        });
    }
    // base is ±Infinity, exponent finite
    if s2 == 0 {
        return one;
    }
    if s1 > 0 {
        return Ok(if s2 > 0 {
            Numeric::POS_INF
        } else {
            Numeric::ZERO
        });
    }
    if s2 < 0 {
        return Ok(Numeric::ZERO);
    }
    let odd = exp.dec().is_some_and(|d| d.trunc(0).coef.bit(0));
    Ok(if odd {
        Numeric::NEG_INF
    } else {
        Numeric::POS_INF
    })
}
