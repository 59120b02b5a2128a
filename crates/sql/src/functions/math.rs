//! Mathematical functions beyond arithmetic (issue 31): trigonometry, cbrt, degrees and
//! radians, pi, scale, width_bucket — with PostgreSQL's domain errors.

use super::ScalarFunc as F;
use pgerror::{codes, PgError, PgResult};
use types::{DataType, Value};

/// PostgreSQL's RADIANS_PER_DEGREE: degrees() divides by it and radians() multiplies,
/// which rounds differently from multiplying by 180/π.
const RADIANS_PER_DEGREE: f64 = 0.017_453_292_519_943_295;
const INVALID_ARGUMENT_FOR_WIDTH_BUCKET: &str = "2201G";

/// Resolve one of this module's functions: (function, argument types, result type).
pub fn resolve(name: &str, args: &[DataType]) -> Option<(F, Vec<DataType>, DataType)> {
    use DataType::*;
    let f = match (name, args.len()) {
        ("pi", 0) => return Some((F::Pi, vec![], Float8)),
        ("scale", 1) => return Some((F::Scale, vec![DataType::NUMERIC], Int4)),
        ("width_bucket", 4) => {
            return Some((F::WidthBucket, vec![Float8, Float8, Float8, Int4], Int4))
        }
        ("atan2", 2) => return Some((F::Atan2, vec![Float8, Float8], Float8)),
        ("cbrt", 1) => F::Cbrt,
        ("sin", 1) => F::Sin,
        ("cos", 1) => F::Cos,
        ("tan", 1) => F::Tan,
        ("cot", 1) => F::Cot,
        ("asin", 1) => F::Asin,
        ("acos", 1) => F::Acos,
        ("atan", 1) => F::Atan,
        ("degrees", 1) => F::Degrees,
        ("radians", 1) => F::Radians,
        _ => return None,
    };
    Some((f, vec![Float8], Float8))
}

fn out_of_range() -> PgError {
    PgError::new(codes::NUMERIC_VALUE_OUT_OF_RANGE, "input is out of range")
}

/// Evaluate one of this module's functions (NULL arguments are handled by the caller).
pub fn eval(func: F, args: &[Value]) -> PgResult<Value> {
    let x = || args[0].as_f64().unwrap_or(0.0);
    let v = match func {
        F::Pi => std::f64::consts::PI,
        F::Scale => {
            return Ok(match &args[0] {
                Value::Numeric(n) if n.is_nan() || n.is_inf() => Value::Null,
                Value::Numeric(n) => Value::Int4(n.dscale() as i32),
                _ => Value::Null,
            })
        }
        F::WidthBucket => return width_bucket(args),
        F::Atan2 => {
            let y = args[1].as_f64().unwrap_or(0.0);
            x().atan2(y)
        }
        F::Cbrt => x().cbrt(),
        F::Degrees => x() / RADIANS_PER_DEGREE,
        F::Radians => x() * RADIANS_PER_DEGREE,
        F::Atan => x().atan(),
        F::Asin | F::Acos => {
            let v = x();
            if v.is_nan() {
                return Ok(Value::Float8(v));
            }
            if !(-1.0..=1.0).contains(&v) {
                return Err(out_of_range());
            }
            if func == F::Asin {
                v.asin()
            } else {
                v.acos()
            }
        }
        F::Sin | F::Cos | F::Tan | F::Cot => {
            let v = x();
            if v.is_nan() {
                return Ok(Value::Float8(v));
            }
            if v.is_infinite() {
                return Err(out_of_range());
            }
            match func {
                F::Sin => v.sin(),
                F::Cos => v.cos(),
                F::Tan => v.tan(),
                // cot(0) is Infinity; -0.0 turns it to -Infinity, as in C.
                _ => 1.0 / v.tan(),
            }
        }
        _ => {
            return Err(PgError::internal(format!(
                "{func:?} is not a math function"
            )))
        }
    };
    Ok(Value::Float8(v))
}

/// width_bucket(operand, low, high, count): the bucket of `count` equal ones between
/// low and high that holds the operand (0 below, count + 1 at or above the top).
fn width_bucket(args: &[Value]) -> PgResult<Value> {
    let f = |i: usize| args[i].as_f64().unwrap_or(0.0);
    let (operand, low, high, count) = (f(0), f(1), f(2), args[3].as_i64().unwrap_or(0));
    if count <= 0 {
        return Err(PgError::new(
            INVALID_ARGUMENT_FOR_WIDTH_BUCKET,
            "count must be greater than zero",
        ));
    }
    if operand.is_nan() || low.is_nan() || high.is_nan() {
        return Err(PgError::new(
            INVALID_ARGUMENT_FOR_WIDTH_BUCKET,
            "operand, lower bound, and upper bound cannot be NaN",
        ));
    }
    if !low.is_finite() || !high.is_finite() {
        return Err(PgError::new(
            INVALID_ARGUMENT_FOR_WIDTH_BUCKET,
            "lower and upper bounds must be finite",
        ));
    }
    if low == high {
        return Err(PgError::new(
            INVALID_ARGUMENT_FOR_WIDTH_BUCKET,
            "lower bound cannot equal upper bound",
        ));
    }
    let n = count as f64;
    let bucket = if low < high {
        if operand < low {
            0.0
        } else if operand >= high {
            n + 1.0
        } else {
            ((n * (operand - low) / (high - low)).floor() + 1.0).min(n)
        }
    } else if operand > low {
        0.0
    } else if operand <= high {
        n + 1.0
    } else {
        ((n * (low - operand) / (low - high)).floor() + 1.0).min(n)
    };
    i32::try_from(bucket as i64)
        .map(Value::Int4)
        .map_err(|_| PgError::new(codes::NUMERIC_VALUE_OUT_OF_RANGE, "integer out of range"))
}
