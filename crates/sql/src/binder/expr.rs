//! Expressions: column references, operators, function calls, literals, parameters,
//! explicit casts and type names.

use super::*;

impl<'a> Binder<'a> {
    pub(super) fn predicate(&mut self, e: &ast::Expr, scope: &Scope) -> PgResult<Expr> {
        self.clause_predicate("WHERE", e, scope)
    }

    /// A boolean condition of `clause` (WHERE, FILTER…), named in the type error.
    pub(super) fn clause_predicate(
        &mut self,
        clause: &str,
        e: &ast::Expr,
        scope: &Scope,
    ) -> PgResult<Expr> {
        let b = self.expr(e, scope)?;
        boolean_clause(clause, b)
    }

    /// Bind and coerce to `ty` with assignment rules (INSERT/UPDATE targets).
    pub(super) fn assign_expr(
        &mut self,
        e: &ast::Expr,
        scope: &Scope,
        ty: &DataType,
    ) -> PgResult<Expr> {
        let b = self.expr_expecting(e, scope, Some(ty))?;
        assign_cast(b, ty)
    }

    /// Bind and coerce to `ty` implicitly (LIMIT, function arguments).
    pub(super) fn typed_expr(
        &mut self,
        e: &ast::Expr,
        scope: &Scope,
        ty: &DataType,
    ) -> PgResult<Expr> {
        let b = self.expr_expecting(e, scope, Some(ty))?;
        cast_to(b, ty)
    }

    pub(super) fn expr(&mut self, e: &ast::Expr, scope: &Scope) -> PgResult<Expr> {
        self.expr_expecting(e, scope, None)
    }

    /// Bind with a type hint for parameters and untyped literals.
    pub(super) fn expr_expecting(
        &mut self,
        e: &ast::Expr,
        scope: &Scope,
        hint: Option<&DataType>,
    ) -> PgResult<Expr> {
        if let ast::Expr::Value(v) = e {
            if let ast::Value::Placeholder(p) = &v.value {
                return self.param(p, hint);
            }
        }
        let mut recurse = |b: &mut Binder, child: &ast::Expr| b.expr(child, scope);
        let bound = self.expr_with(e, scope, &mut recurse)?;
        Ok(bound)
    }

    pub(super) fn param(&mut self, p: &str, hint: Option<&DataType>) -> PgResult<Expr> {
        let n: usize = p
            .trim_start_matches('$')
            .parse()
            .map_err(|_| syntax(format!("syntax error at or near \"{p}\"")))?;
        if n == 0 || n > 65535 {
            return Err(PgError::new(
                codes::UNDEFINED_PARAMETER,
                format!("there is no parameter ${n}"),
            ));
        }
        if self.params.len() < n {
            self.params.resize(n, DataType::Unknown);
        }
        if self.params[n - 1] == DataType::Unknown {
            if let Some(h) = hint.filter(|h| **h != DataType::Unknown) {
                self.params[n - 1] = h.clone();
            }
        }
        Ok(Expr::Param {
            index: n - 1,
            ty: self.params[n - 1].clone(),
        })
    }

    /// Give an Unknown-typed parameter the type `ty` (inference from context).
    pub(super) fn infer_param(&mut self, e: Expr, ty: &DataType) -> Expr {
        match e {
            Expr::Param {
                index,
                ty: DataType::Unknown,
            } if *ty != DataType::Unknown => {
                self.params[index] = ty.clone();
                Expr::Param {
                    index,
                    ty: ty.clone(),
                }
            }
            other => other,
        }
    }

    pub(super) fn column_ref(&mut self, parts: &[String], scope: &Scope) -> PgResult<Expr> {
        let (qualifier, name) = match parts {
            [name] => (None, name.as_str()),
            [.., q, name] => (Some(q.as_str()), name.as_str()),
            [] => return Err(syntax("empty column reference")),
        };
        let find = |s: &Scope| -> PgResult<Option<usize>> {
            let mut hits = s.columns.iter().enumerate().filter(|(_, c)| {
                c.name == name
                    && qualifier.map_or(!c.merged_away, |q| c.qualifier.as_deref() == Some(q))
            });
            match (hits.next(), hits.next()) {
                (Some((i, _)), None) => Ok(Some(i)),
                (Some(_), Some(_)) => Err(PgError::new(
                    codes::AMBIGUOUS_COLUMN,
                    format!("column reference \"{name}\" is ambiguous"),
                )),
                (None, _) => Ok(None),
            }
        };
        if let Some(i) = find(scope)? {
            return Ok(Expr::Column {
                depth: 0,
                index: i,
                ty: scope.columns[i].ty.clone(),
            });
        }
        for (d, s) in self.outer.iter().rev().enumerate() {
            if let Some(i) = find(s)? {
                self.escapes = self.escapes.max(d + 1);
                return Ok(Expr::Column {
                    depth: d + 1,
                    index: i,
                    ty: s.columns[i].ty.clone(),
                });
            }
        }
        if qualifier.is_none() {
            if let Some(e) = self.whole_row_ref(name, scope)? {
                return Ok(e);
            }
        }
        if let Some(q) = qualifier {
            let known = scope
                .columns
                .iter()
                .chain(self.outer.iter().flat_map(|s| s.columns.iter()))
                .any(|c| c.qualifier.as_deref() == Some(q));
            if !known {
                return Err(PgError::new(
                    codes::UNDEFINED_TABLE,
                    format!("missing FROM-clause entry for table \"{q}\""),
                ));
            }
            return Err(PgError::new(
                codes::UNDEFINED_COLUMN,
                format!("column {q}.{name} does not exist"),
            ));
        }
        Err(PgError::new(
            codes::UNDEFINED_COLUMN,
            format!("column \"{name}\" does not exist"),
        ))
    }

    /// A relation's name used as a column (after no column matched, as PostgreSQL
    /// resolves it): a scalar function's value; other relations' row values are refused.
    pub(super) fn whole_row_ref(&mut self, name: &str, scope: &Scope) -> PgResult<Option<Expr>> {
        for (d, s) in std::iter::once(scope)
            .chain(self.outer.iter().rev())
            .enumerate()
        {
            let mut of_relation = s
                .columns
                .iter()
                .enumerate()
                .filter(|(_, c)| c.qualifier.as_deref() == Some(name));
            let Some((i, c)) = of_relation.next() else {
                continue;
            };
            if !c.scalar_function || of_relation.next().is_some() {
                return Err(unsupported(format!("whole-row reference to \"{name}\"")));
            }
            if d > 0 {
                self.escapes = self.escapes.max(d);
            }
            return Ok(Some(Expr::Column {
                depth: d,
                index: i,
                ty: c.ty.clone(),
            }));
        }
        Ok(None)
    }

    pub(super) fn comparison(&mut self, op: BinaryOp, l: Expr, r: Expr) -> PgResult<Expr> {
        self.binary(op, l, r)
    }

    pub(super) fn binary(&mut self, op: BinaryOp, l: Expr, r: Expr) -> PgResult<Expr> {
        // Parameters take the other side's type.
        let (l, r) = {
            let lt = l.ty();
            let rt = r.ty();
            let l = self.infer_param(l, &rt);
            let r = self.infer_param(r, &lt);
            (l, r)
        };
        let (lt, rt, result) = resolve_binary(op, &l.ty(), &r.ty())?;
        // `text || anynonarray` converts the other side with its output function.
        let (l, r) = if op == BinaryOp::Concat {
            (cast_to_explicit(l, &lt)?, cast_to_explicit(r, &rt)?)
        } else {
            (cast_to(l, &lt)?, cast_to(r, &rt)?)
        };
        Ok(Expr::Binary {
            op,
            left: Box::new(l),
            right: Box::new(r),
            ty: result,
        })
    }

    /// Structural binding; `child` binds sub-expressions (so the aggregate-output binder
    /// can reuse every case here).
    pub(super) fn expr_with(
        &mut self,
        e: &ast::Expr,
        scope: &Scope,
        child: &mut dyn FnMut(&mut Binder<'a>, &ast::Expr) -> PgResult<Expr>,
    ) -> PgResult<Expr> {
        use ast::Expr as E;
        Ok(match e {
            E::Identifier(_) if is_default_keyword(e) => {
                return Err(syntax("DEFAULT is not allowed in this context"))
            }
            // A reserved word in PostgreSQL's grammar, an identifier in the parser's.
            E::Identifier(id)
                if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("current_role") =>
            {
                self.call_scalar("current_user", vec![])?
            }
            E::Identifier(id) => self.column_ref(&[ident_name(id)], scope)?,
            E::CompoundIdentifier(ids) => {
                self.column_ref(&ids.iter().map(ident_name).collect::<Vec<_>>(), scope)?
            }
            E::Value(v) => self.literal(&v.value, None)?,
            E::Nested(inner) => child(self, inner)?,
            E::Collate { expr, collation } => {
                // Text compares by code point, which is what these collations (and the
                // database default, C.UTF-8) mean.
                let name = object_name_parts(collation).pop().unwrap_or_default();
                if !matches!(name.as_str(), "C" | "POSIX" | "default" | "ucs_basic") {
                    return Err(unsupported(format!("collation \"{name}\"")));
                }
                child(self, expr)?
            }
            E::CompoundFieldAccess { root, access_chain }
                if matches!(root.as_ref(), E::Array(_))
                    && matches!(access_chain.first(), Some(ast::AccessExpr::Subscript(_))) =>
            {
                // PostgreSQL's grammar subscripts only a parenthesized ARRAY[…]
                return Err(PgError::new(
                    codes::SYNTAX_ERROR,
                    "syntax error at or near \"[\"",
                ));
            }
            E::CompoundFieldAccess { root, access_chain } => {
                // `t.col[i]` parses as t, then .col, then [i]: the leading names are one
                // column reference (pgjdbc's `con.conkey[pos.n]`).
                let dots = (access_chain.iter())
                    .take_while(|a| matches!(a, ast::AccessExpr::Dot(E::Identifier(_))))
                    .count();
                let (mut e, subscripts) = match root.as_ref() {
                    E::Identifier(first) if dots > 0 => {
                        let names = std::iter::once(ident_name(first))
                            .chain(access_chain[..dots].iter().filter_map(|a| match a {
                                ast::AccessExpr::Dot(E::Identifier(id)) => Some(ident_name(id)),
                                _ => None,
                            }))
                            .collect::<Vec<_>>();
                        (self.column_ref(&names, scope)?, &access_chain[dots..])
                    }
                    _ => (child(self, root)?, access_chain.as_slice()),
                };
                if let [ast::AccessExpr::Subscript(ast::Subscript::Slice {
                    lower_bound,
                    upper_bound,
                    stride: None,
                })] = subscripts
                {
                    if let DataType::Array(_) = e.ty() {
                        let mut bound = |b: &Option<E>, absent: i32| match b {
                            Some(b) => {
                                let b = child(self, b)?;
                                let b = self.infer_param(b, &DataType::Int4);
                                // subscripts take assignment casts (1.6 is 2)
                                assign_cast(b, &DataType::Int4)
                            }
                            None => Ok(const_expr(Value::Int4(absent), DataType::Int4)),
                        };
                        let lower = bound(lower_bound, 1)?;
                        let upper = bound(upper_bound, i32::MAX)?;
                        let ty = e.ty();
                        return Ok(Expr::Func {
                            func: ScalarFunc::ArraySlice,
                            args: vec![e, lower, upper],
                            ty,
                        });
                    }
                }
                for access in subscripts {
                    let ast::AccessExpr::Subscript(ast::Subscript::Index { index }) = access else {
                        return Err(unsupported(format!("expression \"{access}\"")));
                    };
                    if e.ty() == DataType::Name {
                        // A name is a fixed array of bytes: name[i] is its (0-based) i-th
                        // byte as a "char" (pg_dump reads typname[0]).
                        let i = child(self, index)?;
                        let i = assign_cast(self.infer_param(i, &DataType::Int4), &DataType::Int4)?;
                        let from = self.binary(
                            BinaryOp::Add,
                            i,
                            const_expr(Value::Int4(1), DataType::Int4),
                        )?;
                        let byte = Expr::Func {
                            func: ScalarFunc::Substr,
                            args: vec![
                                cast_to(e, &DataType::Text)?,
                                from,
                                const_expr(Value::Int4(1), DataType::Int4),
                            ],
                            ty: DataType::Text,
                        };
                        e = cast_to_explicit(byte, &DataType::Char)?;
                        continue;
                    }
                    let elem = match e.ty() {
                        DataType::Array(t) => *t,
                        DataType::Int2Vector => DataType::Int2,
                        DataType::OidVector => DataType::Oid,
                        other => {
                            return Err(PgError::new(
                                codes::DATATYPE_MISMATCH,
                                format!(
                                "cannot subscript type {} because it does not support subscripting",
                                other.format_type()
                            ),
                            ))
                        }
                    };
                    let vector = matches!(e.ty(), DataType::Int2Vector | DataType::OidVector);
                    let i = child(self, index)?;
                    let i = self.infer_param(i, &DataType::Int4);
                    let mut i = assign_cast(i, &DataType::Int4)?;
                    if vector {
                        // int2vector / oidvector subscripts start at 0
                        i = self.binary(
                            BinaryOp::Add,
                            i,
                            const_expr(Value::Int4(1), DataType::Int4),
                        )?;
                    }
                    e = Expr::Func {
                        func: ScalarFunc::ArraySubscript,
                        args: vec![e, i],
                        ty: elem,
                    };
                }
                e
            }
            E::BinaryOp { left, op, right }
                if row_items(left).is_some() && row_items(right).is_some() =>
            {
                let (l, r) = (row_items(left).unwrap(), row_items(right).unwrap());
                self.row_comparison(op, &l, &r, child)?
            }
            E::BinaryOp { left, op, right } => {
                use ast::BinaryOperator as B;
                let l = child(self, left)?;
                let r = child(self, right)?;
                let array_op = crate::functions::array_ops::resolve_operator(op, &l.ty(), &r.ty());
                let resolved = match array_op {
                    Some(found) => Some(found),
                    None => crate::functions::json::resolve_operator(op, &l.ty(), &r.ty())?,
                };
                if let Some((func, types, ty)) = resolved {
                    let l = self.infer_param(l, &types[0]);
                    let r = self.infer_param(r, &types[1]);
                    let args = vec![cast_to(l, &types[0])?, cast_to(r, &types[1])?];
                    return Ok(Expr::Func { func, args, ty });
                }
                let bop = match op {
                    B::And | B::Or => {
                        let l = cast_to(l, &DataType::Bool)?;
                        let r = cast_to(r, &DataType::Bool)?;
                        return Ok(if *op == B::And {
                            Expr::And(Box::new(l), Box::new(r))
                        } else {
                            Expr::Or(Box::new(l), Box::new(r))
                        });
                    }
                    B::Plus => BinaryOp::Add,
                    B::Minus => BinaryOp::Sub,
                    B::Multiply => BinaryOp::Mul,
                    B::Divide => BinaryOp::Div,
                    B::Modulo => BinaryOp::Mod,
                    B::Eq => BinaryOp::Eq,
                    B::NotEq => BinaryOp::NotEq,
                    B::Lt => BinaryOp::Lt,
                    B::LtEq => BinaryOp::LtEq,
                    B::Gt => BinaryOp::Gt,
                    B::GtEq => BinaryOp::GtEq,
                    B::StringConcat => BinaryOp::Concat,
                    B::PGRegexMatch => BinaryOp::RegexMatch,
                    B::PGRegexNotMatch => BinaryOp::RegexNotMatch,
                    B::PGRegexIMatch => BinaryOp::RegexIMatch,
                    B::PGRegexNotIMatch => BinaryOp::RegexNotIMatch,
                    B::PGExp => BinaryOp::Pow,
                    B::PGLikeMatch => BinaryOp::Like,
                    B::PGNotLikeMatch => BinaryOp::NotLike,
                    B::PGILikeMatch => BinaryOp::ILike,
                    B::PGNotILikeMatch => BinaryOp::NotILike,
                    B::BitwiseAnd => BinaryOp::BitAnd,
                    B::BitwiseOr => BinaryOp::BitOr,
                    B::PGBitwiseXor => BinaryOp::BitXor,
                    B::PGBitwiseShiftLeft => BinaryOp::ShiftLeft,
                    B::PGBitwiseShiftRight => BinaryOp::ShiftRight,
                    B::PGCustomBinaryOperator(parts) => match parts.last().map(String::as_str) {
                        Some("~") => BinaryOp::RegexMatch,
                        Some("!~") => BinaryOp::RegexNotMatch,
                        Some("~*") => BinaryOp::RegexIMatch,
                        Some("!~*") => BinaryOp::RegexNotIMatch,
                        Some("=") => BinaryOp::Eq,
                        Some("<>") => BinaryOp::NotEq,
                        Some("~~") => BinaryOp::Like,
                        Some("!~~") => BinaryOp::NotLike,
                        Some("||") => BinaryOp::Concat,
                        _ => return Err(unsupported(format!("operator {op}"))),
                    },
                    other => return Err(unsupported(format!("operator {other}"))),
                };
                self.binary(bop, l, r)?
            }
            E::UnaryOp { op, expr } => {
                // Fold "-<number>" so that i64::MIN and negative literals keep their type.
                if let (ast::UnaryOperator::Minus, E::Value(v)) = (op, expr.as_ref()) {
                    if let ast::Value::Number(n, _) = &v.value {
                        return self.number(&format!("-{n}"));
                    }
                }
                let operand = child(self, expr)?;
                match op {
                    ast::UnaryOperator::Not => {
                        Expr::Not(Box::new(cast_to(operand, &DataType::Bool)?))
                    }
                    ast::UnaryOperator::BitwiseNot => {
                        let operand = if operand.ty() == DataType::Unknown {
                            cast_to(operand, &DataType::Int4)?
                        } else {
                            operand
                        };
                        let ty = types::ops::resolve_unary(UnaryOp::BitNot, &operand.ty())?;
                        Expr::Unary {
                            op: UnaryOp::BitNot,
                            operand: Box::new(operand),
                            ty,
                        }
                    }
                    ast::UnaryOperator::Minus | ast::UnaryOperator::Plus => {
                        let operand = if operand.ty() == DataType::Unknown {
                            cast_to(operand, &DataType::Float8)?
                        } else {
                            operand
                        };
                        let ty = operand.ty();
                        let uop = if *op == ast::UnaryOperator::Minus {
                            UnaryOp::Neg
                        } else {
                            UnaryOp::Plus
                        };
                        Expr::Unary {
                            op: uop,
                            operand: Box::new(operand),
                            ty,
                        }
                    }
                    other => return Err(unsupported(format!("operator {other}"))),
                }
            }
            // a row IS NULL when every field is, IS NOT NULL when none is
            E::IsNull(x) | E::IsNotNull(x) if row_items(x).is_some() => {
                let negated = matches!(e, E::IsNotNull(_));
                let mut all: Option<Expr> = None;
                for item in row_items(x).unwrap_or_default() {
                    let test = Expr::IsNull {
                        operand: Box::new(child(self, item)?),
                        negated,
                    };
                    all = Some(match all {
                        None => test,
                        Some(a) => Expr::And(Box::new(a), Box::new(test)),
                    });
                }
                all.unwrap_or(const_expr(Value::Bool(!negated), DataType::Bool))
            }
            E::IsNull(x) | E::IsNotNull(x) => Expr::IsNull {
                operand: Box::new(child(self, x)?),
                negated: matches!(e, E::IsNotNull(_)),
            },
            E::IsUnknown(x) | E::IsNotUnknown(x) => Expr::IsNull {
                operand: Box::new(cast_to(child(self, x)?, &DataType::Bool)?),
                negated: matches!(e, E::IsNotUnknown(_)),
            },
            E::IsTrue(x) | E::IsNotTrue(x) | E::IsFalse(x) | E::IsNotFalse(x) => {
                let operand = cast_to(child(self, x)?, &DataType::Bool)?;
                let target = matches!(e, E::IsTrue(_) | E::IsNotTrue(_));
                let negated = matches!(e, E::IsNotTrue(_) | E::IsNotFalse(_));
                Expr::IsDistinctFrom {
                    left: Box::new(operand),
                    right: Box::new(const_expr(Value::Bool(target), DataType::Bool)),
                    negated: !negated,
                }
            }
            E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
                let l = child(self, a)?;
                let r = child(self, b)?;
                let Expr::Binary { left, right, .. } = self.binary(BinaryOp::Eq, l, r)? else {
                    unreachable!()
                };
                Expr::IsDistinctFrom {
                    left,
                    right,
                    negated: matches!(e, E::IsNotDistinctFrom(..)),
                }
            }
            // (a, b) IN ((1, 2), (3, 4)): the row equalities, OR'd.
            E::InList {
                expr,
                list,
                negated,
            } if row_items(expr).is_some() => {
                let mut any: Option<Expr> = None;
                for item in list {
                    let Some(r) = row_items(item) else {
                        return Err(syntax("IN list items must be rows like the left operand"));
                    };
                    let eq = self.row_comparison(
                        &ast::BinaryOperator::Eq,
                        &row_items(expr).unwrap(),
                        &r,
                        child,
                    )?;
                    any = Some(match any {
                        None => eq,
                        Some(a) => Expr::Or(Box::new(a), Box::new(eq)),
                    });
                }
                let any = any.ok_or_else(|| syntax("syntax error at or near \")\""))?;
                if *negated {
                    Expr::Not(Box::new(any))
                } else {
                    any
                }
            }
            E::InList {
                expr,
                list,
                negated,
            } => {
                let operand = child(self, expr)?;
                let mut items = Vec::with_capacity(list.len());
                for item in list {
                    let b = child(self, item)?;
                    let Expr::Binary { left, right, .. } =
                        self.binary(BinaryOp::Eq, operand.clone(), b)?
                    else {
                        unreachable!()
                    };
                    items.push((*left, *right));
                }
                let operand = items.first().map(|(l, _)| l.clone()).unwrap_or(operand);
                Expr::InList {
                    operand: Box::new(operand),
                    list: items.into_iter().map(|(_, r)| r).collect(),
                    negated: *negated,
                }
            }
            E::InSubquery {
                expr,
                subquery,
                negated,
            } if row_items(expr).is_some() => {
                let items = row_items(expr).unwrap_or_default();
                self.row_in_subquery(&items, subquery, *negated, scope, child)?
            }
            E::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                let left = child(self, expr)?;
                let plan = self.query_in(subquery, scope)?;
                let (left, plan) = self.compared_with_subquery(BinaryOp::Eq, left, plan)?;
                Expr::Subquery {
                    plan: Box::new(plan),
                    kind: SubqueryKind::In {
                        left: Box::new(left),
                        negated: *negated,
                    },
                    ty: DataType::Bool,
                }
            }
            E::Exists { subquery, negated } => {
                let plan = self.query_in(subquery, scope)?;
                let ex = Expr::Subquery {
                    plan: Box::new(plan),
                    kind: SubqueryKind::Exists,
                    ty: DataType::Bool,
                };
                if *negated {
                    Expr::Not(Box::new(ex))
                } else {
                    ex
                }
            }
            E::Subquery(q) => {
                let plan = self.query_in(q, scope)?;
                if plan.columns.len() != 1 {
                    return Err(syntax("subquery must return only one column"));
                }
                let ty = plan.columns[0].ty.clone();
                Expr::Subquery {
                    plan: Box::new(plan),
                    kind: SubqueryKind::Scalar,
                    ty,
                }
            }
            E::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let x = child(self, expr)?;
                let lo = child(self, low)?;
                let hi = child(self, high)?;
                let ge = self.binary(BinaryOp::GtEq, x.clone(), lo)?;
                let le = self.binary(BinaryOp::LtEq, x, hi)?;
                let both = Expr::And(Box::new(ge), Box::new(le));
                if *negated {
                    Expr::Not(Box::new(both))
                } else {
                    both
                }
            }
            E::SimilarTo {
                negated,
                expr,
                pattern,
                escape_char,
            } => {
                let mut args = vec![
                    cast_to(child(self, expr)?, &DataType::Text)?,
                    cast_to(child(self, pattern)?, &DataType::Text)?,
                ];
                if let Some(escape) = escape_char {
                    args.push(cast_to(child(self, escape)?, &DataType::Text)?);
                }
                let similar = Expr::Func {
                    func: ScalarFunc::SimilarTo,
                    args,
                    ty: DataType::Bool,
                };
                if *negated {
                    Expr::Not(Box::new(similar))
                } else {
                    similar
                }
            }
            E::Like {
                negated,
                expr,
                pattern,
                escape_char,
                any: false,
            }
            | E::ILike {
                negated,
                expr,
                pattern,
                escape_char,
                any: false,
            } => {
                if escape_char.is_some() {
                    return Err(unsupported("LIKE … ESCAPE"));
                }
                let l = child(self, expr)?;
                let r = child(self, pattern)?;
                let op = match (matches!(e, E::ILike { .. }), negated) {
                    (false, false) => BinaryOp::Like,
                    (false, true) => BinaryOp::NotLike,
                    (true, false) => BinaryOp::ILike,
                    (true, true) => BinaryOp::NotILike,
                };
                self.binary(op, l, r)?
            }
            E::AnyOp {
                left,
                compare_op,
                right,
                ..
            }
            | E::AllOp {
                left,
                compare_op,
                right,
            } => {
                let op = comparison_op(compare_op)?;
                let all = matches!(e, E::AllOp { .. });
                if let (Some(items), E::Subquery(q)) = (row_items(left), right.as_ref()) {
                    return match (op, all) {
                        (BinaryOp::Eq, false) => {
                            self.row_in_subquery(&items, q, false, scope, child)
                        }
                        (BinaryOp::NotEq, true) => {
                            self.row_in_subquery(&items, q, true, scope, child)
                        }
                        _ => Err(unsupported(
                            "row comparisons with ANY or ALL other than = ANY and <> ALL",
                        )),
                    };
                }
                let l = child(self, left)?;
                if let E::Subquery(q) = right.as_ref() {
                    let plan = self.query_in(q, scope)?;
                    if plan.columns.len() != 1 {
                        return Err(syntax(if plan.columns.len() > 1 {
                            "subquery has too many columns"
                        } else {
                            "subquery has too few columns"
                        }));
                    }
                    let (left, plan) = self.compared_with_subquery(op, l, plan)?;
                    let left = Box::new(left);
                    // `= ANY` is IN and `<> ALL` is NOT IN, NULLs included: both hashed.
                    let kind = match (op, all) {
                        (BinaryOp::Eq, false) => SubqueryKind::In {
                            left,
                            negated: false,
                        },
                        (BinaryOp::NotEq, true) => SubqueryKind::In {
                            left,
                            negated: true,
                        },
                        _ => SubqueryKind::Quantified { op, left, all },
                    };
                    return Ok(Expr::Subquery {
                        plan: Box::new(plan),
                        kind,
                        ty: DataType::Bool,
                    });
                }
                let arr = child(self, right)?;
                let arr = if arr.ty() == DataType::Unknown {
                    let lt = l.ty();
                    cast_to(
                        arr,
                        &DataType::Array(Box::new(if lt == DataType::Unknown {
                            DataType::Text
                        } else {
                            lt
                        })),
                    )?
                } else {
                    arr
                };
                let elem = arr.ty().element().cloned().ok_or_else(|| {
                    PgError::new(
                        codes::WRONG_OBJECT_TYPE,
                        "op ANY/ALL (array) requires array on right side",
                    )
                })?;
                let (lt, _, _) = resolve_binary(op, &l.ty(), &elem)?;
                let l = cast_to(l, &lt)?;
                Expr::AnyArray {
                    op,
                    left: Box::new(l),
                    array: Box::new(arr),
                    all,
                }
            }
            E::Cast { kind, format, .. }
                if !matches!(kind, ast::CastKind::Cast | ast::CastKind::DoubleColon)
                    || format.is_some() =>
            {
                return Err(unsupported(format!("expression \"{e}\"")))
            }
            E::Cast {
                expr, data_type, ..
            } => {
                let to = self.data_type(data_type)?;
                let inner = child(self, expr)?;
                self.explicit_cast(inner, &to)?
            }
            E::TypedString(ts) => {
                let to = self.data_type(&ts.data_type)?;
                let lit = self.literal(&ts.value.value, None)?;
                self.explicit_cast(lit, &to)?
            }
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                // An untyped operand is text, as in PostgreSQL; each WHEN value must have
                // an `=` with it (42883 otherwise).
                let operand = match operand.as_ref().map(|o| child(self, o)).transpose()? {
                    Some(o) if o.ty() == DataType::Unknown => Some(cast_to(o, &DataType::Text)?),
                    other => other,
                };
                let mut whens = Vec::with_capacity(conditions.len());
                for cw in conditions {
                    let c = child(self, &cw.condition)?;
                    let c = match &operand {
                        Some(op) => {
                            // compared by value, as `=` would after its casts
                            let (_, right, _) = resolve_binary(BinaryOp::Eq, &op.ty(), &c.ty())?;
                            cast_to(c, &right)?
                        }
                        None => cast_to(c, &DataType::Bool)?,
                    };
                    whens.push((c, child(self, &cw.result)?));
                }
                let otherwise = else_result.as_ref().map(|x| child(self, x)).transpose()?;
                let results: Vec<DataType> = whens
                    .iter()
                    .map(|(_, r)| r.ty())
                    .chain(otherwise.iter().map(Expr::ty))
                    .collect();
                let ty = common_type(&results, "CASE")?;
                let whens = whens
                    .into_iter()
                    .map(|(c, r)| Ok((c, cast_to(r, &ty)?)))
                    .collect::<PgResult<Vec<_>>>()?;
                let otherwise = otherwise
                    .map(|o| cast_to(o, &ty))
                    .transpose()?
                    .map(Box::new);
                Expr::Case {
                    operand: operand.map(Box::new),
                    whens,
                    otherwise,
                    ty,
                }
            }
            E::Array(arr) => {
                let elems = arr
                    .elem
                    .iter()
                    .map(|x| child(self, x))
                    .collect::<PgResult<Vec<_>>>()?;
                // The elements' common type, as PostgreSQL's ARRAY[1, 2.5] is numeric[].
                let ty = common_type(&elems.iter().map(Expr::ty).collect::<Vec<_>>(), "ARRAY")?;
                let elements = elems
                    .into_iter()
                    .map(|x| cast_to(x, &ty))
                    .collect::<PgResult<Vec<_>>>()?;
                Expr::Array {
                    elements,
                    ty: DataType::Array(Box::new(ty)),
                }
            }
            E::Function(f) => self.function(f, scope, child)?,
            // sqlparser parses ceil(x) / floor(x) as their own expressions
            E::Ceil {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            } => {
                let arg = child(self, expr)?;
                self.call_scalar("ceil", vec![arg])?
            }
            E::Floor {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            } => {
                let arg = child(self, expr)?;
                self.call_scalar("floor", vec![arg])?
            }
            // position(sub IN s) is strpos(s, sub).
            E::Position { expr, r#in } => {
                let args = vec![child(self, r#in)?, child(self, expr)?];
                self.call_scalar("strpos", args)?
            }
            E::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![child(self, expr)?];
                args.push(match substring_from {
                    Some(x) => child(self, x)?,
                    None => const_expr(Value::Int4(1), DataType::Int4),
                });
                // A text (or untyped) FROM makes it PostgreSQL's regular-expression form.
                if matches!(
                    args[1].ty(),
                    DataType::Text | DataType::Unknown | DataType::Varchar { .. }
                ) {
                    return Err(unsupported("substring(… FROM pattern)"));
                }
                if let Some(x) = substring_for {
                    args.push(child(self, x)?);
                }
                self.call_scalar("substr", args)?
            }
            E::Trim {
                expr,
                trim_where,
                trim_what,
                trim_characters,
            } => {
                // trim([BOTH|LEADING|TRAILING] [chars] FROM s) and trim(s, chars)
                let mut args = vec![child(self, expr)?];
                let chars: Vec<&ast::Expr> = trim_what
                    .iter()
                    .map(|w| w.as_ref())
                    .chain(trim_characters.iter().flatten())
                    .collect();
                for c in chars {
                    args.push(child(self, c)?);
                }
                self.call_scalar(trim_function(trim_where.as_ref()), args)?
            }
            E::Interval(iv) => interval_literal(iv)?,
            E::AtTimeZone {
                timestamp,
                time_zone,
            } => {
                let args = vec![child(self, time_zone)?, child(self, timestamp)?];
                self.call_scalar("timezone", args)?
            }
            E::Extract { field, expr, .. } => {
                let unit = extract_unit(field);
                let args = vec![
                    const_expr(Value::Text(unit), DataType::Text),
                    child(self, expr)?,
                ];
                self.call_scalar("extract", args)?
            }
            E::Tuple(_) => return Err(unsupported("row constructors")),
            other => return Err(unsupported(format!("expression \"{other}\""))),
        })
    }

    /// `left op (subquery)`: both sides converted to the types the operator takes
    /// (`int8 IN (SELECT int4 …)` compares as int8), the subquery's column by a projection
    /// over it, so the executor compares and hashes values of one type.
    fn compared_with_subquery(
        &mut self,
        op: BinaryOp,
        left: Expr,
        plan: Query,
    ) -> PgResult<(Expr, Query)> {
        let (mut left, plan) = self.compared_row_with_subquery(op, vec![left], plan)?;
        Ok((left.remove(0), plan))
    }

    /// `left` and the subquery `plan`'s first columns, each pair cast to the types `op`
    /// compares them as (the plan projected where a column needs it).
    fn compared_row_with_subquery(
        &mut self,
        op: BinaryOp,
        left: Vec<Expr>,
        mut plan: Query,
    ) -> PgResult<(Vec<Expr>, Query)> {
        let mut casts: Vec<Option<DataType>> = vec![None; plan.columns.len()];
        let mut compared = Vec::with_capacity(left.len());
        for (i, left) in left.into_iter().enumerate() {
            let sub_ty = (plan.columns.get(i)).map_or(DataType::Text, |c| c.ty.clone());
            let left = self.infer_param(left, &sub_ty);
            let (lt, rt, _) = resolve_binary(op, &left.ty(), &sub_ty)?;
            if rt != sub_ty && i < casts.len() {
                casts[i] = Some(rt);
            }
            compared.push(cast_to(left, &lt)?);
        }
        if casts.iter().any(Option::is_some) {
            let exprs = (plan.columns.iter_mut().zip(casts).enumerate())
                .map(|(index, (column, cast))| {
                    let read = Expr::Column {
                        depth: 0,
                        index,
                        ty: column.ty.clone(),
                    };
                    match cast {
                        Some(to) => {
                            column.ty = to.clone();
                            cast_to(read, &to)
                        }
                        None => Ok(read),
                    }
                })
                .collect::<PgResult<Vec<_>>>()?;
            plan.root = Rel::Project {
                input: Box::new(plan.root),
                exprs,
            };
        }
        Ok((compared, plan))
    }

    /// `(a, b, …) [NOT] IN (subquery)` (`negated`), of the row constructor's `items`.
    fn row_in_subquery(
        &mut self,
        items: &[&ast::Expr],
        subquery: &ast::Query,
        negated: bool,
        scope: &Scope,
        child: &mut dyn FnMut(&mut Binder<'a>, &ast::Expr) -> PgResult<Expr>,
    ) -> PgResult<Expr> {
        let left = (items.iter())
            .map(|e| child(self, e))
            .collect::<PgResult<Vec<_>>>()?;
        let plan = self.query_in(subquery, scope)?;
        if plan.columns.len() != left.len() {
            return Err(syntax(if plan.columns.len() > left.len() {
                "subquery has too many columns"
            } else {
                "subquery has too few columns"
            }));
        }
        let (left, plan) = self.compared_row_with_subquery(BinaryOp::Eq, left, plan)?;
        Ok(Expr::Subquery {
            plan: Box::new(plan),
            kind: SubqueryKind::RowIn { left, negated },
            ty: DataType::Bool,
        })
    }

    pub(super) fn explicit_cast(&mut self, inner: Expr, to: &DataType) -> PgResult<Expr> {
        // A numeric string is an OID for every reg* type ('16602'::regclass).
        if matches!(
            to,
            DataType::RegClass | DataType::RegType | DataType::RegNamespace | DataType::RegProc
        ) {
            if let Expr::Const(Value::Text(s), _) = &inner {
                if let Ok(o) = s.trim().parse::<u32>() {
                    return Ok(const_expr(Value::Oid(o), to.clone()));
                }
            }
        }
        // 'name'::regclass resolves against the catalog now, as PostgreSQL's regclassin does.
        if *to == DataType::RegClass {
            if let Expr::Const(Value::Text(name), _) = &inner {
                let parts = parse_object_name(name);
                let sequence = match parts.as_slice() {
                    [name] => self.catalog.sequence(name),
                    [schema, name] if schema == "public" => self.catalog.sequence(name),
                    _ => None,
                };
                let view = self.view_named(&parts);
                let oid = match self.relation(&parts) {
                    _ if sequence.is_some() => sequence.map_or(0, |s| s.oid),
                    _ if view.is_some() => view.map_or(0, |v| v.oid),
                    Ok((Rel::Scan { table, .. }, _, _)) => table.oid,
                    Ok((Rel::System { table }, _, _)) => system_table_oid(table),
                    _ => {
                        return Err(PgError::new(
                            codes::UNDEFINED_TABLE,
                            format!("relation \"{name}\" does not exist"),
                        ));
                    }
                };
                return Ok(const_expr(Value::Oid(oid), DataType::RegClass));
            }
        }
        // 'name'::regnamespace: the schemas there are.
        if *to == DataType::RegNamespace {
            if let Expr::Const(Value::Text(name), _) = &inner {
                let oid = match parse_object_name(name).as_slice() {
                    [n] if n == "pg_catalog" => crate::catalog::PG_CATALOG_NAMESPACE_OID,
                    [n] if n == "public" => crate::catalog::PUBLIC_NAMESPACE_OID,
                    [n] if n == "information_schema" => crate::catalog::INFORMATION_SCHEMA_OID,
                    [n] if n == "pg_toast" => crate::catalog::PG_TOAST_NAMESPACE_OID,
                    _ => {
                        return Err(PgError::new(
                            codes::INVALID_SCHEMA_NAME,
                            format!("schema \"{name}\" does not exist"),
                        ))
                    }
                };
                return Ok(const_expr(Value::Oid(oid), DataType::RegNamespace));
            }
        }
        // reg* → text needs the catalog (regclassout, regtypeout…): a session function.
        let reg_text = match inner.ty() {
            DataType::RegClass => Some(ScalarFunc::RegclassText),
            DataType::RegType => Some(ScalarFunc::RegtypeText),
            DataType::RegNamespace => Some(ScalarFunc::RegnamespaceText),
            DataType::RegProc => Some(ScalarFunc::RegprocText),
            _ => None,
        };
        if let Some(func) = reg_text {
            if matches!(
                to,
                DataType::Text
                    | DataType::Name
                    | DataType::Varchar { .. }
                    | DataType::Bpchar { .. }
            ) {
                let e = Expr::Func {
                    func,
                    args: vec![inner],
                    ty: DataType::Text,
                };
                return cast_to_explicit(e, to);
            }
        }
        if matches!(to, DataType::RegType | DataType::RegProc) {
            if let Expr::Const(Value::Text(s), _) = &inner {
                if *to == DataType::RegType {
                    let t = DataType::from_sql_name(s, &[])?;
                    return Ok(const_expr(Value::Oid(t.oid()), DataType::RegType));
                }
                if *to == DataType::RegProc {
                    return Ok(const_expr(
                        Value::Oid(sql_regproc_oid(s)?),
                        DataType::RegProc,
                    ));
                }
            }
        }
        // A parameter cast to regclass is a name, resolved by regclassin at run time.
        let inner = match to {
            DataType::RegClass => self.infer_param(inner, &DataType::Text),
            _ => self.infer_param(inner, to),
        };
        if *to == DataType::RegClass && inner.ty().is_string() {
            return Ok(Expr::Func {
                func: ScalarFunc::RegclassIn,
                args: vec![inner],
                ty: DataType::RegClass,
            });
        }
        cast_to_explicit(inner, to)
    }

    /// A comparison of two row constructors, as PostgreSQL's: `=` all pairs equal, `<>`
    /// any pair different, the ordering operators lexicographic (decided by the first
    /// pair that is not equal; NULL where that pair has a NULL).
    fn row_comparison(
        &mut self,
        op: &ast::BinaryOperator,
        left: &[&ast::Expr],
        right: &[&ast::Expr],
        child: &mut dyn FnMut(&mut Binder<'a>, &ast::Expr) -> PgResult<Expr>,
    ) -> PgResult<Expr> {
        use ast::BinaryOperator as B;
        if left.len() != right.len() {
            return Err(syntax("unequal number of entries in row expressions"));
        }
        let mut pairs = Vec::with_capacity(left.len());
        for (l, r) in left.iter().zip(right) {
            pairs.push((child(self, l)?, child(self, r)?));
        }
        let (strict, last) = match op {
            B::Eq | B::NotEq => {
                let bop = if *op == B::Eq {
                    BinaryOp::Eq
                } else {
                    BinaryOp::NotEq
                };
                let mut all: Option<Expr> = None;
                for (l, r) in pairs {
                    let c = self.binary(bop, l, r)?;
                    all = Some(match (all, *op == B::Eq) {
                        (None, _) => c,
                        (Some(a), true) => Expr::And(Box::new(a), Box::new(c)),
                        (Some(a), false) => Expr::Or(Box::new(a), Box::new(c)),
                    });
                }
                return all.ok_or_else(|| syntax("row expressions must not be empty"));
            }
            B::Lt => (BinaryOp::Lt, BinaryOp::Lt),
            B::LtEq => (BinaryOp::Lt, BinaryOp::LtEq),
            B::Gt => (BinaryOp::Gt, BinaryOp::Gt),
            B::GtEq => (BinaryOp::Gt, BinaryOp::GtEq),
            other => return Err(unsupported(format!("operator {other} on rows"))),
        };
        // From the last pair back: a_i <strict> b_i OR (a_i = b_i AND <the rest>).
        let mut rest: Option<Expr> = None;
        for (l, r) in pairs.into_iter().rev() {
            rest = Some(match rest {
                None => self.binary(last, l, r)?,
                Some(rest) => {
                    let decided = self.binary(strict, l.clone(), r.clone())?;
                    let equal = self.binary(BinaryOp::Eq, l, r)?;
                    Expr::Or(
                        Box::new(decided),
                        Box::new(Expr::And(Box::new(equal), Box::new(rest))),
                    )
                }
            });
        }
        rest.ok_or_else(|| syntax("row expressions must not be empty"))
    }

    pub(super) fn call_scalar(&mut self, name: &str, args: Vec<Expr>) -> PgResult<Expr> {
        let arg_types: Vec<DataType> = args.iter().map(Expr::ty).collect();
        if let Some(constant) = crate::enum_type::type_function(name, &arg_types) {
            let (value, ty) = constant?;
            return Ok(const_expr(value, ty));
        }
        let (func, want, ty) = resolve_scalar(name, &arg_types)?;
        if func == ScalarFunc::PgTypeof {
            return Ok(const_expr(
                Value::Oid(arg_types[0].oid()),
                DataType::RegType,
            ));
        }
        let args = args
            .into_iter()
            .zip(want.iter())
            .map(|(a, t)| {
                // A name literal given as a regclass (nextval('s')) resolves like a cast.
                if *t == DataType::RegClass && a.ty() == DataType::Unknown {
                    return self.explicit_cast(a, t);
                }
                let a = self.infer_param(a, t);
                cast_to(a, t)
            })
            .collect::<PgResult<Vec<_>>>()?;
        let call = Expr::Func { func, args, ty };
        let vector = matches!(
            arg_types[..],
            [DataType::Int2Vector | DataType::OidVector, ..]
        );
        if vector && matches!(func, ScalarFunc::ArrayLower | ScalarFunc::ArrayUpper) {
            // int2vector / oidvector subscripts start at 0 (as in the subscripts above)
            let one = const_expr(Value::Int4(1), DataType::Int4);
            return self.binary(BinaryOp::Sub, call, one);
        }
        Ok(call)
    }

    pub(super) fn function(
        &mut self,
        f: &ast::Function,
        scope: &Scope,
        child: &mut dyn FnMut(&mut Binder<'a>, &ast::Expr) -> PgResult<Expr>,
    ) -> PgResult<Expr> {
        let parts = object_name_parts(&f.name);
        let name = parts.last().cloned().unwrap_or_default();
        if f.over.is_some() {
            return self.window_call(f, &name, child);
        }
        if is_aggregate_name(&name) {
            return Err(PgError::new(
                codes::GROUPING_ERROR,
                "aggregate functions are not allowed here",
            ));
        }
        let aggregate_clause = crate::unsupported_syntax::scalar_call(f)?;
        if name == "row" && parts.len() == 1 {
            return Err(unsupported("row constructors"));
        }
        if parts.len() == 1 {
            if let Some(moment) = self.moment_with_precision(&name, f)? {
                return Ok(moment);
            }
        }
        let args: Vec<ast::Expr> = match &f.args {
            ast::FunctionArguments::None => {
                return match name.as_str() {
                    "current_timestamp" | "now" => self.call_scalar("now", vec![]),
                    "localtimestamp" => {
                        let now = self.call_scalar("now", vec![])?;
                        cast_to_explicit(now, &DataType::TIMESTAMP)
                    }
                    "localtime" => {
                        let now = self.call_scalar("now", vec![])?;
                        cast_to_explicit(now, &DataType::TIME)
                    }
                    "current_date" => {
                        let now = self.call_scalar("now", vec![])?;
                        cast_to_explicit(now, &DataType::Date)
                    }
                    "current_user" | "user" | "current_role" => {
                        self.call_scalar("current_user", vec![])
                    }
                    "current_schema" => self.call_scalar("current_schema", vec![]),
                    "current_catalog" => self.call_scalar("current_database", vec![]),
                    _ => self.call_scalar(&name, vec![]),
                };
            }
            ast::FunctionArguments::Subquery(q) => {
                if name == "array" {
                    let plan = self.query_in(q, scope)?;
                    let elem = plan
                        .columns
                        .first()
                        .map(|c| c.ty.clone())
                        .unwrap_or(DataType::Text);
                    return Ok(Expr::Subquery {
                        plan: Box::new(plan),
                        kind: SubqueryKind::Array,
                        ty: DataType::Array(Box::new(elem)),
                    });
                }
                return Err(unsupported(format!("{name}(subquery)")));
            }
            ast::FunctionArguments::List(list) => list
                .args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e.clone()),
                    ast::FunctionArg::Unnamed(_) => {
                        Err(syntax(format!("unexpected argument to function {name}")))
                    }
                    _ => Err(unsupported("named function arguments")),
                })
                .collect::<PgResult<_>>()?,
        };
        if let ("pg_blocking_pids", [pid]) = (name.as_str(), args.as_slice()) {
            return child(self, &super::blocking_pids::blocking_pids_query(pid)?);
        }
        let bound = args
            .iter()
            .map(|a| child(self, a))
            .collect::<PgResult<Vec<_>>>()?;
        let call = match name.as_str() {
            "coalesce" => {
                let ty = common_type(&bound.iter().map(Expr::ty).collect::<Vec<_>>(), "COALESCE")?;
                let args = bound
                    .into_iter()
                    .map(|a| cast_to(a, &ty))
                    .collect::<PgResult<_>>()?;
                Expr::Coalesce { args, ty }
            }
            _ => self.call_scalar(&name, bound)?,
        };
        match aggregate_clause {
            Some(clause) => Err(PgError::new(
                codes::WRONG_OBJECT_TYPE,
                format!("{clause} specified, but {name} is not an aggregate function"),
            )),
            None => Ok(call),
        }
    }

    pub(super) fn literal(&mut self, v: &ast::Value, _hint: Option<&DataType>) -> PgResult<Expr> {
        Ok(match v {
            ast::Value::Number(n, _) => return self.number(n),
            ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => {
                const_expr(Value::Text(s.clone()), DataType::Unknown)
            }
            ast::Value::DollarQuotedString(d) => {
                const_expr(Value::Text(d.value.clone()), DataType::Unknown)
            }
            ast::Value::Boolean(b) => const_expr(Value::Bool(*b), DataType::Bool),
            ast::Value::Null => const_expr(Value::Null, DataType::Unknown),
            ast::Value::Placeholder(p) => return self.param(p, None),
            other => return Err(unsupported(format!("literal {other}"))),
        })
    }

    pub(super) fn number(&mut self, n: &str) -> PgResult<Expr> {
        if let Ok(i) = n.parse::<i64>() {
            return Ok(match i32::try_from(i) {
                Ok(small) => const_expr(Value::Int4(small), DataType::Int4),
                Err(_) => const_expr(Value::Int8(i), DataType::Int8),
            });
        }
        let v = types::io::from_text(
            n,
            &DataType::Numeric {
                precision_scale: None,
            },
        )?;
        Ok(const_expr(
            v,
            DataType::Numeric {
                precision_scale: None,
            },
        ))
    }

    /// `current_timestamp(p)`, `localtimestamp(p)` and `localtime(p)`: the statement's
    /// moment held to `p` fractional-second digits (PostgreSQL's grammar takes only an
    /// integer constant there; anything else is an ordinary, unknown, call).
    fn moment_with_precision(&mut self, name: &str, f: &ast::Function) -> PgResult<Option<Expr>> {
        let ast::FunctionArguments::List(list) = &f.args else {
            return Ok(None);
        };
        let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v)))] =
            list.args.as_slice()
        else {
            return Ok(None);
        };
        let ast::Value::Number(digits, _) = &v.value else {
            return Ok(None);
        };
        let Ok(p) = digits.parse::<u32>() else {
            return Ok(None);
        };
        let precision = Some(p.min(types::datatype::MAX_TIME_PRECISION as u32) as u8);
        let to = match name {
            "current_timestamp" => DataType::TimestampTz { precision },
            "localtimestamp" => DataType::Timestamp { precision },
            "localtime" => DataType::Time { precision },
            _ => return Ok(None),
        };
        let now = self.call_scalar("now", vec![])?;
        cast_to_explicit(now, &to).map(Some)
    }

    pub(super) fn data_type(&self, dt: &ast::DataType) -> PgResult<DataType> {
        let text = dt.to_string();
        let lower = text.to_ascii_lowercase();
        let (array, base) = match lower.strip_suffix("[]") {
            Some(b) => (true, b.to_string()),
            None => (false, lower),
        };
        let (name, mods) = super::query::split_modifiers(&base);
        let mods = mods
            .into_iter()
            .flat_map(|m| m.split(','))
            .map(|m| {
                m.trim()
                    .parse::<i32>()
                    .map_err(|_| syntax(format!("invalid type modifier in {text}")))
            })
            .collect::<PgResult<Vec<_>>>()?;
        // Quoted, `"char"` is the one-byte internal type; unquoted, char is character(1).
        let ty = if name == "\"char\"" && mods.is_empty() {
            DataType::Char
        } else {
            DataType::from_sql_name(name.trim_matches('"'), &mods)?
        };
        Ok(if array {
            DataType::Array(Box::new(ty))
        } else {
            ty
        })
    }
}

/// The function behind `trim([BOTH | LEADING | TRAILING] …)`.
pub(super) fn trim_function(side: Option<&ast::TrimWhereField>) -> &'static str {
    match side {
        Some(ast::TrimWhereField::Leading) => "ltrim",
        Some(ast::TrimWhereField::Trailing) => "rtrim",
        Some(ast::TrimWhereField::Both) | None => "btrim",
    }
}

pub(super) fn comparison_op(op: &ast::BinaryOperator) -> PgResult<BinaryOp> {
    use ast::BinaryOperator as B;
    Ok(match op {
        B::Eq => BinaryOp::Eq,
        B::NotEq => BinaryOp::NotEq,
        B::Lt => BinaryOp::Lt,
        B::LtEq => BinaryOp::LtEq,
        B::Gt => BinaryOp::Gt,
        B::GtEq => BinaryOp::GtEq,
        other => return Err(unsupported(format!("operator {other} with ANY/ALL"))),
    })
}

/// The unit EXTRACT names, as date_part spells it.
fn extract_unit(field: &ast::DateTimeField) -> String {
    match field {
        ast::DateTimeField::Custom(id) => id.value.to_ascii_lowercase(),
        other => other.to_string().to_ascii_lowercase(),
    }
}

/// `INTERVAL '…' [field [TO field]]`: a lone number counts the last field's units, and
/// the value is truncated to that field (PostgreSQL's interval typmod range).
fn interval_literal(iv: &ast::Interval) -> PgResult<Expr> {
    use types::datetime::{USECS_PER_HOUR, USECS_PER_MINUTE};
    let text = match iv.value.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => s.clone(),
            _ => return Err(unsupported("interval literals that are not strings")),
        },
        _ => return Err(unsupported("interval literals that are not strings")),
    };
    let last = iv
        .last_field
        .as_ref()
        .or(iv.leading_field.as_ref())
        .map(|f| f.to_string().to_ascii_lowercase());
    if last.is_none() {
        // IntervalStyle sql_standard signs `-1 2:03` differently: such a literal is read
        // when the plan runs.
        return Ok(
            match types::cast::read_literal_any_session(&text, &DataType::INTERVAL) {
                Some(v) => const_expr(v?, DataType::INTERVAL),
                None => Expr::Cast {
                    operand: Box::new(Expr::Const(Value::Text(text), DataType::Unknown)),
                    from: DataType::Text,
                    to: DataType::INTERVAL,
                    explicit: true,
                },
            },
        );
    }
    let (mut months, mut days, mut micros) = match &last {
        Some(unit) if text.trim().parse::<f64>().is_ok() => {
            types::datetime::parse_interval(&format!("{} {unit}", text.trim()))?
        }
        _ => types::datetime::parse_interval(&text)?,
    };
    match last.as_deref() {
        Some("year") => (months, days, micros) = (months / 12 * 12, 0, 0),
        Some("month") => (days, micros) = (0, 0),
        Some("day") => micros = 0,
        Some("hour") => micros -= micros % USECS_PER_HOUR,
        Some("minute") => micros -= micros % USECS_PER_MINUTE,
        _ => {}
    }
    Ok(const_expr(
        Value::Interval {
            months,
            days,
            micros,
        },
        DataType::INTERVAL,
    ))
}
/// The bound argument `b` of `clause` as a boolean (42804 if it is of another type).
pub(super) fn boolean_clause(clause: &str, b: Expr) -> PgResult<Expr> {
    match b.ty() {
        DataType::Bool => Ok(b),
        DataType::Unknown => cast_to(b, &DataType::Bool),
        other => Err(PgError::new(
            codes::DATATYPE_MISMATCH,
            format!(
                "argument of {clause} must be type boolean, not type {}",
                other.format_type()
            ),
        )),
    }
}

/// The items of a row constructor: `(a, b)` or `ROW(a, b)` (also `ROW(a)` and `ROW()`).
fn row_items(e: &ast::Expr) -> Option<Vec<&ast::Expr>> {
    match e {
        ast::Expr::Tuple(items) => Some(items.iter().collect()),
        ast::Expr::Nested(inner) => row_items(inner),
        ast::Expr::Function(f) if object_name_parts(&f.name) == ["row"] => match &f.args {
            ast::FunctionArguments::List(list)
                if list.duplicate_treatment.is_none() && list.clauses.is_empty() =>
            {
                (list.args.iter())
                    .map(|a| match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
                        _ => None,
                    })
                    .collect()
            }
            ast::FunctionArguments::None => Some(Vec::new()),
            _ => None,
        },
        _ => None,
    }
}
