//! Implicit, assignment and explicit casts of bound expressions, and constant folding.

use super::*;

/// Cast with implicit-coercion rules; Unknown literals convert to anything.
pub fn cast_to(e: Expr, to: &DataType) -> PgResult<Expr> {
    cast_with(e, to, false)
}

pub(super) fn cast_with(e: Expr, to: &DataType, assignment: bool) -> PgResult<Expr> {
    let from = e.ty();
    if from == *to || *to == DataType::Unknown {
        return Ok(e);
    }
    if from == DataType::Unknown {
        // Untyped literal: convert now (errors surface as PostgreSQL's input errors).
        return Ok(match e {
            Expr::Const(Value::Null, _) => Expr::Const(Value::Null, to.clone()),
            Expr::Const(Value::Text(s), _) => {
                Expr::Const(types::io::from_text(&s, to)?, to.clone())
            }
            other => Expr::Cast {
                operand: Box::new(other),
                from: DataType::Text,
                to: to.clone(),
                explicit: false,
            },
        });
    }
    let ok = if assignment {
        types::cast::can_assign(&from, to)
    } else {
        types::cast::can_coerce_implicitly(&from, to)
    };
    if !ok {
        return Err(PgError::new(
            codes::DATATYPE_MISMATCH,
            if assignment {
                format!(
                    "column is of type {} but expression is of type {}",
                    to.format_type(),
                    from.format_type()
                )
            } else {
                format!(
                    "cannot cast type {} to {}",
                    from.format_type(),
                    to.format_type()
                )
            },
        )
        .with_hint("You will need to rewrite or cast the expression."));
    }
    fold(Expr::Cast {
        operand: Box::new(e),
        from,
        to: to.clone(),
        explicit: false,
    })
}

pub(super) fn assign_cast(e: Expr, to: &DataType) -> PgResult<Expr> {
    cast_with(e, to, true)
}

/// OIDs of the few built-in functions clients name as regproc literals.
pub(super) fn sql_regproc_oid(name: &str) -> PgResult<u32> {
    let n = name.trim().to_ascii_lowercase();
    let n = n.strip_prefix("pg_catalog.").unwrap_or(&n);
    Ok(match n {
        "-" => 0,
        "array_in" => 750,
        "array_out" => 751,
        "record_in" => 2290,
        "enum_in" => 3504,
        "range_in" => 3834,
        "domain_in" => 2597,
        _ => {
            return Err(PgError::new(
                codes::UNDEFINED_FUNCTION,
                format!("function \"{name}\" does not exist"),
            ))
        }
    })
}

pub(super) fn cast_to_explicit(e: Expr, to: &DataType) -> PgResult<Expr> {
    let from = e.ty();
    if from == *to {
        return Ok(e);
    }
    match e {
        Expr::Const(Value::Null, _) => Ok(Expr::Const(Value::Null, to.clone())),
        Expr::Const(Value::Text(s), DataType::Unknown) => {
            Ok(Expr::Const(types::io::from_text(&s, to)?, to.clone()))
        }
        other => {
            let from = if from == DataType::Unknown {
                DataType::Text
            } else {
                from
            };
            fold(Expr::Cast {
                operand: Box::new(other),
                from,
                to: to.clone(),
                explicit: true,
            })
        }
    }
}

/// Evaluate casts of constants at bind time.
pub(super) fn fold(e: Expr) -> PgResult<Expr> {
    if let Expr::Cast {
        operand,
        from,
        to,
        explicit,
    } = &e
    {
        if let Expr::Const(v, _) = operand.as_ref() {
            if v.is_null() {
                return Ok(Expr::Const(Value::Null, to.clone()));
            }
            return Ok(Expr::Const(
                types::cast::cast(v.clone(), from, to, *explicit)?,
                to.clone(),
            ));
        }
    }
    Ok(e)
}
