//! The ordered-set aggregates' computations (PostgreSQL 15's orderedsetaggs.c):
//! percentile_cont, percentile_disc and mode over a group's sorted non-NULL values.
//! The coordinator's aggregation collects and sorts the values (`sort_values`) and
//! computes mode; the percentiles finish in `percentile_final`, a scalar function over the
//! sorted values and the fraction, so that the fraction is evaluated once per group (even
//! an empty one) as PostgreSQL's direct arguments are.

use pgerror::{codes, PgError, PgResult};
use std::cmp::Ordering;
use types::ops::{self, BinaryOp};
use types::Value;

/// `values` in the order of `ORDER BY value [DESC]`: a stable sort, so equal values keep
/// the order they came in.
pub fn sort_values(values: &mut [Value], desc: bool) {
    values.sort_by(|a, b| {
        let o = ops::sort_cmp(a, b);
        if desc {
            o.reverse()
        } else {
            o
        }
    });
}

/// The most frequent of the sorted `values` (of equally frequent ones the first in sort
/// order, as mode_final); NULL when there are none.
pub fn mode(values: Vec<Value>) -> Value {
    let (mut best, mut best_freq) = (0, 0);
    let (mut run, mut run_freq) = (0, 0);
    for i in 0..values.len() {
        if run_freq > 0 && ops::sort_cmp(&values[i], &values[run]) == Ordering::Equal {
            run_freq += 1;
            continue;
        }
        if run_freq > best_freq {
            (best, best_freq) = (run, run_freq);
        }
        (run, run_freq) = (i, 1);
    }
    if run_freq > best_freq {
        best = run;
    }
    values.into_iter().nth(best).unwrap_or(Value::Null)
}

/// percentile_cont (`cont`) or percentile_disc: `values` is the group's sorted non-NULL
/// values (NULL when it had none), `fraction` a float8 or a float8[]. Checks in
/// PostgreSQL's order: a single fraction is checked before the group is looked at (so
/// an empty group with a fraction out of range fails), an array of them only when the
/// group has values.
pub fn percentile_final(values: Value, fraction: Value, cont: bool) -> PgResult<Value> {
    match fraction {
        Value::Null => Ok(Value::Null),
        Value::Array(fractions) => {
            let Value::Array(values) = values else {
                return Ok(Value::Null);
            };
            if values.is_empty() {
                return Ok(Value::Null);
            }
            fractions
                .iter()
                .map(|f| match f.as_f64() {
                    None => Ok(Value::Null),
                    Some(f) => percentile(&values, check_fraction(f)?, cont),
                })
                .collect::<PgResult<_>>()
                .map(Value::Array)
        }
        f => {
            let f = check_fraction(f.as_f64().unwrap_or(f64::NAN))?;
            match values {
                Value::Array(values) if !values.is_empty() => percentile(&values, f, cont),
                _ => Ok(Value::Null),
            }
        }
    }
}

/// 22003 for a fraction outside [0, 1] (or NaN), worded as PostgreSQL's.
fn check_fraction(f: f64) -> PgResult<f64> {
    if (0.0..=1.0).contains(&f) {
        return Ok(f);
    }
    Err(PgError::new(
        codes::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("percentile value {} is not between 0 and 1", format_g(f)),
    ))
}

/// `f` as C's `%g` prints it (six significant digits).
fn format_g(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let exp = if f == 0.0 {
        0
    } else {
        format!("{f:.5e}")
            .split_once('e')
            .and_then(|(_, e)| e.parse::<i32>().ok())
            .unwrap_or(0)
    };
    let trim = |s: &str| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if (-4..6).contains(&exp) {
        let decimals = (5 - exp).max(0) as usize;
        trim(&format!("{f:.decimals$}"))
    } else {
        let s = format!("{f:.5e}");
        let (mantissa, _) = s.split_once('e').unwrap_or((&s, "0"));
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    }
}

/// percentile_cont (`cont`: interpolated between the two nearest values, float8 or
/// interval) or percentile_disc (the first value whose 1-based position reaches f · n)
/// of the sorted non-empty `values`.
fn percentile(values: &[Value], f: f64, cont: bool) -> PgResult<Value> {
    let n = values.len();
    if !cont {
        let row = ((f * n as f64).ceil() as i64).clamp(1, n as i64) as usize;
        return Ok(values[row - 1].clone());
    }
    let at = f * (n - 1) as f64;
    let (first, second) = (at.floor(), at.ceil());
    let lo = &values[first as usize];
    if first == second {
        return Ok(lo.clone());
    }
    let hi = &values[second as usize];
    let pct = at - first;
    Ok(match (lo, hi) {
        (Value::Float8(lo), Value::Float8(hi)) => Value::Float8(lo + (hi - lo) * pct),
        // interval_lerp: (hi - lo) * pct + lo
        _ => {
            let diff = ops::eval_binary(BinaryOp::Sub, hi, lo)?;
            let scaled = ops::eval_binary(BinaryOp::Mul, &diff, &Value::Float8(pct))?;
            ops::eval_binary(BinaryOp::Add, &scaled, lo)?
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_format() {
        assert_eq!(format_g(1.5), "1.5");
        assert_eq!(format_g(-0.1), "-0.1");
        assert_eq!(format_g(2.0), "2");
        assert_eq!(format_g(1e10), "1e+10");
        assert_eq!(format_g(123456789.0), "1.23457e+08");
        assert_eq!(format_g(0.00001), "1e-05");
    }

    #[test]
    fn percentiles() {
        let v: Vec<Value> = [1.0, 2.0, 3.0, 4.0].map(Value::Float8).to_vec();
        assert_eq!(percentile(&v, 0.5, true).unwrap(), Value::Float8(2.5));
        assert_eq!(percentile(&v, 0.5, false).unwrap(), Value::Float8(2.0));
        assert_eq!(percentile(&v, 0.0, false).unwrap(), Value::Float8(1.0));
        assert_eq!(percentile(&v, 1.0, true).unwrap(), Value::Float8(4.0));
    }

    #[test]
    fn mode_takes_the_first_of_ties() {
        let v: Vec<Value> = [1, 2, 2, 3, 3].map(Value::Int4).to_vec();
        assert_eq!(mode(v), Value::Int4(2));
        assert_eq!(mode(Vec::new()), Value::Null);
    }
}
