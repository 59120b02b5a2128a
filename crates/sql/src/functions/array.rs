//! Array functions and operators beyond subscripts and lengths (issue 31): array_append,
//! array_prepend, array_cat, array_remove, array_dims, array_ndims, and containment
//! (`@>`, `<@`) and overlap (`&&`). Multidimensional arrays are arrays of arrays.

use super::ScalarFunc as F;
use pgerror::{codes, PgError, PgResult};
use sqlparser::ast::BinaryOperator as B;
use std::cmp::Ordering;
use types::{DataType, Value};

/// Resolve one of this module's functions: (function, argument types, result type).
pub fn resolve(name: &str, args: &[DataType]) -> Option<(F, Vec<DataType>, DataType)> {
    use DataType::*;
    let array = |t: &DataType| matches!(t, Array(_));
    let elem = |t: &DataType| t.element().cloned().unwrap_or(Text);
    Some(match (name, args) {
        ("array_append", [a, _]) if array(a) => {
            (F::ArrayAppend, vec![a.clone(), elem(a)], a.clone())
        }
        ("array_prepend", [_, a]) if array(a) => {
            (F::ArrayPrepend, vec![elem(a), a.clone()], a.clone())
        }
        ("array_cat", [a, b]) if array(a) || array(b) => {
            let t = if array(a) { a.clone() } else { b.clone() };
            (F::ArrayCat, vec![t.clone(), t.clone()], t)
        }
        ("array_remove", [a, _]) if array(a) => {
            (F::ArrayRemove, vec![a.clone(), elem(a)], a.clone())
        }
        ("array_ndims", [a]) if array(a) => (F::ArrayNdims, vec![a.clone()], Int4),
        ("array_dims", [a]) if array(a) => (F::ArrayDims, vec![a.clone()], Text),
        _ => return None,
    })
}

/// `@>`, `<@` or `&&` between arrays: (function, operand types, result type).
pub fn resolve_operator(
    op: &B,
    l: &DataType,
    r: &DataType,
) -> Option<(F, Vec<DataType>, DataType)> {
    let f = match op {
        B::AtArrow => F::ArrayContains,
        B::ArrowAt => F::ArrayContained,
        B::PGOverlap => F::ArrayOverlap,
        _ => return None,
    };
    let t = match (l, r) {
        (DataType::Array(_), DataType::Array(_) | DataType::Unknown) => l.clone(),
        (DataType::Unknown, DataType::Array(_)) => r.clone(),
        _ => return None,
    };
    Some((f, vec![t.clone(), t], DataType::Bool))
}

fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(items) => items,
        _ => &[],
    }
}

/// The elements of a (possibly multidimensional) array, flattened.
pub(super) fn flat(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(items) => items.iter().flat_map(flat).collect(),
        other => vec![other],
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    types::ops::compare(a, b) == Some(Ordering::Equal)
}

/// Evaluate one of this module's functions (NULL arguments are handled by the caller,
/// except array_append/prepend/remove's element, which may be NULL).
pub fn eval(func: F, args: &[Value]) -> PgResult<Value> {
    let nested = |v: &Value| items(v).iter().any(|x| matches!(x, Value::Array(_)));
    Ok(match func {
        F::ArrayAppend | F::ArrayPrepend => {
            let (array, item) = if func == F::ArrayAppend {
                (&args[0], &args[1])
            } else {
                (&args[1], &args[0])
            };
            if nested(array) {
                return Err(PgError::new(
                    codes::DATA_EXCEPTION,
                    "argument must be empty or one-dimensional array",
                ));
            }
            let mut out = items(array).to_vec();
            if func == F::ArrayAppend {
                out.push(item.clone());
            } else {
                out.insert(0, item.clone());
            }
            Value::Array(out)
        }
        F::ArrayCat => match (&args[0], &args[1]) {
            (Value::Null, b) => b.clone(),
            (a, Value::Null) => a.clone(),
            (a, b) => Value::Array(items(a).iter().chain(items(b)).cloned().collect()),
        },
        F::ArrayRemove => {
            if nested(&args[0]) {
                return Err(PgError::unsupported(
                    "removing elements from multidimensional arrays",
                ));
            }
            let gone = |x: &Value| match (x, &args[1]) {
                (Value::Null, Value::Null) => true,
                (x, y) => equal(x, y),
            };
            Value::Array(
                items(&args[0])
                    .iter()
                    .filter(|x| !gone(x))
                    .cloned()
                    .collect(),
            )
        }
        F::ArrayNdims | F::ArrayDims => {
            let mut dims = Vec::new();
            let mut level = &args[0];
            while let Value::Array(xs) = level {
                if xs.is_empty() {
                    break;
                }
                dims.push(xs.len());
                level = &xs[0];
            }
            match (func, dims.len()) {
                (_, 0) => Value::Null,
                (F::ArrayNdims, n) => Value::Int4(n as i32),
                _ => Value::Text(dims.iter().map(|n| format!("[1:{n}]")).collect()),
            }
        }
        // NULL elements match nothing, as in PostgreSQL.
        F::ArrayContains | F::ArrayContained => {
            let (outer, inner) = if func == F::ArrayContains {
                (&args[0], &args[1])
            } else {
                (&args[1], &args[0])
            };
            let outer = flat(outer);
            Value::Bool(
                flat(inner)
                    .iter()
                    .all(|x| !x.is_null() && outer.iter().any(|y| equal(x, y))),
            )
        }
        F::ArrayOverlap => {
            let right = flat(&args[1]);
            Value::Bool(
                flat(&args[0])
                    .iter()
                    .any(|x| !x.is_null() && right.iter().any(|y| equal(x, y))),
            )
        }
        other => {
            return Err(PgError::internal(format!(
                "{other:?} is not an array function"
            )))
        }
    })
}
