//! Implicit, assignment and explicit casts of bound expressions, and constant folding.

use super::*;
use types::cast::read_literal_any_session;

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
            Expr::Const(Value::Text(s), ty) => match read_literal_any_session(&s, to) {
                Some(v) => Expr::Const(v?, to.clone()),
                // Read by the session that runs the plan (plans are shared between
                // sessions, each with its zone and DateStyle): a cast evaluated then.
                None => Expr::Cast {
                    operand: Box::new(Expr::Const(Value::Text(s), ty)),
                    from: DataType::Text,
                    to: to.clone(),
                    explicit: false,
                },
            },
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

/// The type of a CASE, COALESCE or UNION column whose inputs have `types` (PostgreSQL's
/// `select_common_type` and `select_common_typmod`): unknown inputs take the others'
/// type (text if all are unknown); a later input of the same category replaces the
/// candidate when the candidate is not preferred and converts to it implicitly but not
/// back (int4 then int8 gives int8); different categories cannot be matched (42804). The
/// result keeps a type modifier only when every input has exactly that type and
/// modifier (numeric(5,2) with numeric(8,3) gives numeric).
pub(super) fn common_type(types: &[DataType], context: &str) -> PgResult<DataType> {
    let mut known = types.iter().filter(|t| **t != DataType::Unknown);
    let Some(first) = known.next() else {
        return Ok(DataType::Text);
    };
    let mut candidate = first.without_typmod();
    for ty in known {
        let ty = ty.without_typmod();
        if ty == candidate {
            continue;
        }
        if ty.category() != candidate.category() {
            return Err(PgError::new(
                codes::DATATYPE_MISMATCH,
                format!(
                    "{context} types {} and {} cannot be matched",
                    candidate.format_type_be(),
                    ty.format_type_be()
                ),
            ));
        }
        if !candidate.is_preferred()
            && types::cast::can_coerce_implicitly(&candidate, &ty)
            && !types::cast::can_coerce_implicitly(&ty, &candidate)
        {
            candidate = ty;
        }
    }
    Ok(if types.iter().all(|t| t == first) {
        first.clone()
    } else {
        candidate
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
        // Read as the type, then held to its modifier as an explicit cast does (a string
        // too long for char(n) or varchar(n) is truncated, not refused).
        // (what some session reads differently is left to `fold`, which defers it)
        Expr::Const(Value::Text(s), DataType::Unknown) => {
            match read_literal_any_session(&s, &to.without_typmod()) {
                Some(v) => Ok(Expr::Const(
                    types::cast::apply_typmod(v?, to, true)?,
                    to.clone(),
                )),
                None => fold(Expr::Cast {
                    operand: Box::new(Expr::Const(Value::Text(s), DataType::Unknown)),
                    from: DataType::Text,
                    to: to.clone(),
                    explicit: true,
                }),
            }
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
            if types::cast::depends_on_zone(from, to) {
                // A string every session reads alike folds; the rest is evaluated with
                // the zone and styles of the session that runs the plan.
                return match v {
                    Value::Text(s) if from.is_string() => {
                        match read_literal_any_session(s, &to.without_typmod()) {
                            Some(read) => Ok(Expr::Const(
                                types::cast::apply_typmod(read?, to, *explicit)?,
                                to.clone(),
                            )),
                            None => Ok(e),
                        }
                    }
                    _ => Ok(e),
                };
            }
            return Ok(Expr::Const(
                types::cast::cast(v.clone(), from, to, *explicit)?,
                to.clone(),
            ));
        }
    }
    Ok(e)
}
