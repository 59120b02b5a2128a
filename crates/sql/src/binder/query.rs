//! Queries: WITH, set operations, VALUES, FROM (tables, joins, functions), SELECT lists,
//! grouping and aggregates, ORDER BY.

use super::*;
use crate::functions::AggFunc;

impl<'a> Binder<'a> {
    pub fn query(&mut self, q: &ast::Query) -> PgResult<Query> {
        self.query_in(q, &Scope::default())
    }

    /// Bind a query whose enclosing scope (for correlation) is `enclosing`.
    pub(super) fn query_in(&mut self, q: &ast::Query, enclosing: &Scope) -> PgResult<Query> {
        self.outer.push(enclosing.clone());
        let was_escaping = std::mem::replace(&mut self.escapes, 0);
        let result = self.query_with_ctes(q);
        self.outer.pop();
        // A reference that reaches past this query's enclosing scope makes the
        // enclosing query correlated too.
        let escapes = self.escapes;
        self.escapes = was_escaping.max(escapes.saturating_sub(1));
        let mut query = result?;
        query.correlated = escapes > 0;
        if query.correlated {
            query.outer_columns = query.referenced_outer_columns();
        }
        Ok(query)
    }

    /// A query in FROM without LATERAL. It sees the enclosing queries' scopes but not its
    /// FROM siblings, and its plan runs inside its parent's under the same enclosing rows:
    /// it adds no level, so a reference to an enclosing query has the depth it has in the
    /// parent (and makes the parent correlated through `escapes`).
    fn derived_query(&mut self, q: &ast::Query) -> PgResult<Query> {
        self.query_with_ctes(q)
    }

    /// `q`'s WITH clause in scope for its body only.
    fn query_with_ctes(&mut self, q: &ast::Query) -> PgResult<Query> {
        let ctes_before = self.ctes.len();
        let result = match &q.with {
            Some(with) => self.with_clause(with).and_then(|_| self.query_body(q)),
            None => self.query_body(q),
        };
        self.ctes.truncate(ctes_before);
        result
    }

    /// Bind the CTEs of a WITH clause (at the level of the query that owns it) and put
    /// them in scope. A recursive CTE must be `base UNION [ALL] recursive-term`.
    pub(super) fn with_clause(&mut self, with: &ast::With) -> PgResult<()> {
        for cte in &with.cte_tables {
            let name = ident_name(&cte.alias.name);
            let col_names: Vec<String> = cte
                .alias
                .columns
                .iter()
                .map(|c| ident_name(&c.name))
                .collect();
            let name_cols = |cols: &[OutputColumn]| -> PgResult<Vec<ScopeColumn>> {
                if col_names.len() > cols.len() {
                    return Err(syntax(format!(
                        "WITH query \"{name}\" has {} columns available but {} columns specified",
                        cols.len(),
                        col_names.len()
                    )));
                }
                Ok(cols
                    .iter()
                    .enumerate()
                    .map(|(i, c)| ScopeColumn {
                        qualifier: Some(name.clone()),
                        name: col_names.get(i).cloned().unwrap_or_else(|| c.name.clone()),
                        ty: if c.ty == DataType::Unknown {
                            DataType::Text
                        } else {
                            c.ty.clone()
                        },
                        table_oid: 0,
                        attnum: 0,
                        merged_away: false,
                        scalar_function: false,
                        system: false,
                    })
                    .collect())
            };
            let recursive_parts = match cte.query.body.as_ref() {
                ast::SetExpr::SetOperation {
                    left,
                    op: ast::SetOperator::Union,
                    set_quantifier,
                    right,
                } if with.recursive
                    && cte.query.order_by.is_none()
                    && cte.query.limit_clause.is_none() =>
                {
                    Some((
                        left,
                        right,
                        matches!(set_quantifier, ast::SetQuantifier::All),
                    ))
                }
                _ => None,
            };
            let (rel, cols) = match recursive_parts {
                Some((left, right, all)) => {
                    let (base, base_cols) = self.set_expr(left)?;
                    let cols = name_cols(&base_cols)?;
                    let base = if base_cols.iter().any(|c| c.ty == DataType::Unknown) {
                        let exprs = base_cols
                            .iter()
                            .enumerate()
                            .map(|(i, c)| {
                                cast_to(
                                    Expr::Column {
                                        depth: 0,
                                        index: i,
                                        ty: c.ty.clone(),
                                    },
                                    &cols[i].ty,
                                )
                            })
                            .collect::<PgResult<Vec<_>>>()?;
                        Rel::Project {
                            input: Box::new(base),
                            exprs,
                        }
                    } else {
                        base
                    };
                    let work: WorkTableCell = Default::default();
                    let width = cols.len();
                    self.ctes.push((
                        name.clone(),
                        Rel::WorkTable {
                            work: work.clone(),
                            width,
                        },
                        cols.clone(),
                    ));
                    let rec = self.set_expr(right);
                    self.ctes.pop();
                    let (rec, rec_cols) = rec?;
                    if rec_cols.len() != width {
                        return Err(syntax(
                            "each UNION query must have the same number of columns",
                        ));
                    }
                    let exprs = rec_cols
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            cast_to(
                                Expr::Column {
                                    depth: 0,
                                    index: i,
                                    ty: c.ty.clone(),
                                },
                                &cols[i].ty,
                            )
                        })
                        .collect::<PgResult<Vec<_>>>()?;
                    let rec = Rel::Project {
                        input: Box::new(rec),
                        exprs,
                    };
                    (
                        Rel::RecursiveUnion {
                            base: Box::new(base),
                            recursive: Box::new(rec),
                            all,
                            work,
                        },
                        cols,
                    )
                }
                None => {
                    let q = self.query_body(&cte.query)?;
                    let cols = name_cols(&q.columns)?;
                    (q.root, cols)
                }
            };
            self.ctes.push((name, rel, cols));
        }
        Ok(())
    }

    pub(super) fn query_body(&mut self, q: &ast::Query) -> PgResult<Query> {
        crate::unsupported_syntax::query(q)?;
        let order_by: &[ast::OrderByExpr] = match &q.order_by {
            Some(ast::OrderBy {
                kind: ast::OrderByKind::Expressions(e),
                ..
            }) => e,
            Some(_) => return Err(unsupported("ORDER BY ALL")),
            None => &[],
        };
        let (limit, offset) = match &q.limit_clause {
            Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => {
                (limit.clone(), offset.as_ref().map(|o| o.value.clone()))
            }
            Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => {
                (Some(limit.clone()), Some(offset.clone()))
            }
            None => (None, None),
        };
        // FETCH FIRST [n] ROWS ONLY is LIMIT n (n defaults to 1).
        let limit = match &q.fetch {
            Some(fetch) => Some(
                fetch
                    .quantity
                    .clone()
                    .unwrap_or_else(|| ast::Expr::value(ast::Value::Number("1".into(), false))),
            ),
            None => limit,
        };
        let locking = self.row_locking(q)?;
        let (mut root, mut columns) = match (&locking, q.body.as_ref()) {
            (Some((keyed, locking)), _) => {
                self.appended_items = locking.key_columns();
                let (root, mut columns) = self.select(keyed, order_by)?;
                columns.truncate(columns.len() - locking.key_columns());
                (root, columns)
            }
            (None, ast::SetExpr::Select(sel)) => self.select(sel, order_by)?,
            (None, other) => {
                let (rel, cols) = self.set_expr(other)?;
                if order_by.is_empty() {
                    (rel, cols)
                } else {
                    let keys = order_by
                        .iter()
                        .map(|o| self.output_sort_key(o, &cols))
                        .collect::<PgResult<Vec<_>>>()?;
                    (
                        Rel::Sort {
                            input: Box::new(rel),
                            keys,
                        },
                        cols,
                    )
                }
            }
        };
        if limit.is_some() || offset.is_some() {
            let empty = Scope::default();
            let limit = match limit {
                Some(ast::Expr::Value(v)) if matches!(v.value, ast::Value::Null) => None,
                Some(e) => Some(self.typed_expr(&e, &empty, &DataType::Int8)?),
                None => None,
            };
            let offset = offset
                .map(|e| self.typed_expr(&e, &empty, &DataType::Int8))
                .transpose()?;
            root = Rel::Limit {
                input: Box::new(root),
                limit,
                offset,
            };
        }
        for c in &mut columns {
            if c.ty == DataType::Unknown {
                c.ty = DataType::Text;
            }
        }
        Ok(Query {
            root,
            columns,
            correlated: false,
            outer_columns: Vec::new(),
            locking: locking.map(|(_, locking)| locking),
        })
    }

    pub(super) fn set_expr(&mut self, body: &ast::SetExpr) -> PgResult<(Rel, Vec<OutputColumn>)> {
        match body {
            ast::SetExpr::Select(sel) => self.select(sel, &[]),
            ast::SetExpr::Query(q) => {
                let enclosing = self.outer.last().cloned().unwrap_or_default();
                let bound = self.query_in(q, &enclosing)?;
                Ok((bound.root, bound.columns))
            }
            ast::SetExpr::Values(values) => {
                crate::unsupported_syntax::values(values)?;
                self.values(values)
            }
            ast::SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => {
                let (name, set_op) = match op {
                    ast::SetOperator::Union => ("UNION", None),
                    ast::SetOperator::Intersect => ("INTERSECT", Some(SetOpKind::Intersect)),
                    ast::SetOperator::Except => ("EXCEPT", Some(SetOpKind::Except)),
                    other => return Err(unsupported(format!("{other}"))),
                };
                if !matches!(
                    set_quantifier,
                    ast::SetQuantifier::All
                        | ast::SetQuantifier::Distinct
                        | ast::SetQuantifier::None
                ) {
                    return Err(unsupported(format!("{name} {set_quantifier}")));
                }
                let (l, lcols) = self.set_expr(left)?;
                let (r, rcols) = self.set_expr(right)?;
                if lcols.len() != rcols.len() {
                    return Err(syntax(format!(
                        "each {name} query must have the same number of columns"
                    )));
                }
                let all = matches!(set_quantifier, ast::SetQuantifier::All);
                let mut cols = lcols.clone();
                let mut rexprs = Vec::new();
                let mut lexprs = Vec::new();
                let mut need_cast = false;
                for (i, (lc, rc)) in lcols.iter().zip(&rcols).enumerate() {
                    let ty = common_type(&[lc.ty.clone(), rc.ty.clone()], name)?;
                    lexprs.push(cast_to(
                        Expr::Column {
                            depth: 0,
                            index: i,
                            ty: lc.ty.clone(),
                        },
                        &ty,
                    )?);
                    rexprs.push(cast_to(
                        Expr::Column {
                            depth: 0,
                            index: i,
                            ty: rc.ty.clone(),
                        },
                        &ty,
                    )?);
                    need_cast |= lc.ty != ty || rc.ty != ty;
                    cols[i].ty = ty;
                }
                let (l, r) = if need_cast {
                    (
                        Rel::Project {
                            input: Box::new(l),
                            exprs: lexprs,
                        },
                        Rel::Project {
                            input: Box::new(r),
                            exprs: rexprs,
                        },
                    )
                } else {
                    (l, r)
                };
                let (left, right) = (Box::new(l), Box::new(r));
                let rel = match set_op {
                    None => Rel::Union { left, right, all },
                    Some(op) => Rel::SetOp {
                        left,
                        right,
                        op,
                        all,
                    },
                };
                Ok((rel, cols))
            }
            _ => Err(unsupported("this kind of query")),
        }
    }

    /// A VALUES list as a query: each column takes the first known type of its items.
    pub(super) fn values(&mut self, values: &ast::Values) -> PgResult<(Rel, Vec<OutputColumn>)> {
        let empty = Scope::default();
        let width = values.rows.first().map(|r| r.content.len()).unwrap_or(0);
        let mut rows = Vec::with_capacity(values.rows.len());
        for row in &values.rows {
            if row.content.len() != width {
                return Err(syntax("VALUES lists must all be the same length"));
            }
            rows.push(
                row.content
                    .iter()
                    .map(|e| self.expr(e, &empty))
                    .collect::<PgResult<Vec<_>>>()?,
            );
        }
        let mut cols = Vec::with_capacity(width);
        for i in 0..width {
            let ty = rows
                .iter()
                .map(|r| r[i].ty())
                .find(|t| *t != DataType::Unknown)
                .unwrap_or(DataType::Text);
            for r in rows.iter_mut() {
                let e = std::mem::replace(&mut r[i], Expr::Const(Value::Null, DataType::Unknown));
                r[i] = cast_to(e, &ty)?;
            }
            cols.push(output_column(&format!("column{}", i + 1), ty));
        }
        Ok((Rel::Values { rows }, cols))
    }

    pub(super) fn bind_from(&mut self, from: &[ast::TableWithJoins]) -> PgResult<(Rel, Scope)> {
        let mut result: Option<(Rel, Scope)> = None;
        for twj in from {
            let (mut rel, mut scope, first_lateral) =
                self.table_factor(&twj.relation, result.as_ref().map(|r| &r.1))?;
            for join in &twj.joins {
                crate::unsupported_syntax::join(join)?;
                // A RIGHT JOIN is bound as written and run as the LEFT JOIN of its sides
                // swapped (`right_join`).
                let mut right_join = false;
                let (kind, constraint) = match &join.join_operator {
                    ast::JoinOperator::Join(c) | ast::JoinOperator::Inner(c) => {
                        (JoinKind::Inner, Some(c))
                    }
                    ast::JoinOperator::Left(c) | ast::JoinOperator::LeftOuter(c) => {
                        (JoinKind::Left, Some(c))
                    }
                    ast::JoinOperator::Right(c) | ast::JoinOperator::RightOuter(c) => {
                        right_join = true;
                        (JoinKind::Left, Some(c))
                    }
                    ast::JoinOperator::FullOuter(c) => (JoinKind::Full, Some(c)),
                    ast::JoinOperator::CrossJoin(_) => (JoinKind::Inner, None),
                    other => {
                        return Err(unsupported(
                            format!("join type {other:?}")
                                .split('(')
                                .next()
                                .unwrap_or("")
                                .to_string(),
                        ))
                    }
                };
                let lateral_scope = scope.clone();
                let (right, rscope, lateral) =
                    self.table_factor(&join.relation, Some(&lateral_scope))?;
                let left_width = scope.columns.len();
                let mut joined = scope.clone();
                joined.columns.extend(rscope.columns);
                let using_names = match constraint {
                    Some(ast::JoinConstraint::Using(cols)) => cols
                        .iter()
                        .map(|c| object_name_parts(c).pop().unwrap_or_default())
                        .collect(),
                    Some(ast::JoinConstraint::Natural) => natural_join_columns(&joined, left_width),
                    _ => Vec::new(),
                };
                let mut using_pairs = Vec::new();
                let on = match constraint {
                    Some(ast::JoinConstraint::On(e)) => {
                        Some(self.clause_predicate("JOIN/ON", e, &joined)?)
                    }
                    Some(ast::JoinConstraint::Using(_) | ast::JoinConstraint::Natural) => {
                        let mut pred: Option<Expr> = None;
                        for name in &using_names {
                            let l = using_column(&joined.columns[..left_width], name, "left")?;
                            let r = left_width
                                + using_column(&joined.columns[left_width..], name, "right")?;
                            using_pairs.push((l, r));
                            let eq = self.comparison(
                                BinaryOp::Eq,
                                Expr::Column {
                                    depth: 0,
                                    index: l,
                                    ty: joined.columns[l].ty.clone(),
                                },
                                Expr::Column {
                                    depth: 0,
                                    index: r,
                                    ty: joined.columns[r].ty.clone(),
                                },
                            )?;
                            pred = Some(match pred {
                                Some(p) => Expr::And(Box::new(p), Box::new(eq)),
                                None => eq,
                            });
                        }
                        pred
                    }
                    Some(ast::JoinConstraint::None) | None => None,
                };
                if kind == JoinKind::Full {
                    refuse_lateral(lateral, "FULL")?;
                    full_join_condition(on.as_ref(), left_width)?;
                }
                rel = if right_join {
                    // USING's merged column is the right side's in a RIGHT JOIN.
                    using_pairs = using_pairs.into_iter().map(|(l, r)| (r, l)).collect();
                    right_join_swapped(rel, right, on, lateral, &joined, left_width)?
                } else {
                    Rel::Join {
                        left: Box::new(rel),
                        right: Box::new(right),
                        kind,
                        on,
                        lateral,
                    }
                };
                scope = joined;
                if !using_pairs.is_empty() {
                    (rel, scope) = match kind {
                        JoinKind::Full => merge_full_using_columns(rel, scope, &using_pairs)?,
                        _ => merge_using_columns(rel, scope, &using_pairs),
                    };
                }
            }
            result = Some(match result {
                None => (rel, scope),
                Some((prev, mut pscope)) => {
                    pscope.columns.extend(scope.columns);
                    (
                        Rel::Join {
                            left: Box::new(prev),
                            right: Box::new(rel),
                            kind: JoinKind::Inner,
                            on: None,
                            lateral: first_lateral,
                        },
                        pscope,
                    )
                }
            });
        }
        Ok(result.unwrap_or((Rel::Unit, Scope::default())))
    }

    /// One FROM item, and whether it is joined laterally (evaluated for each row to its
    /// left). `left` is the scope to its left, visible to LATERAL subqueries and to the
    /// arguments of functions (implicitly LATERAL, as in PostgreSQL).
    pub(super) fn table_factor(
        &mut self,
        tf: &ast::TableFactor,
        left: Option<&Scope>,
    ) -> PgResult<(Rel, Scope, bool)> {
        crate::unsupported_syntax::table_factor(tf)?;
        let apply_alias =
            |cols: &mut Vec<ScopeColumn>, alias: &Option<ast::TableAlias>, default: String| {
                let qualifier = alias
                    .as_ref()
                    .map(|a| ident_name(&a.name))
                    .unwrap_or(default);
                for c in cols.iter_mut() {
                    c.qualifier = Some(qualifier.clone());
                }
                if let Some(a) = alias {
                    for (c, name) in cols.iter_mut().zip(&a.columns) {
                        c.name = ident_name(&name.name);
                    }
                }
            };
        match tf {
            ast::TableFactor::Table {
                name,
                alias,
                args,
                with_ordinality,
                ..
            } => {
                let (name, alias) = without_only(name, alias);
                let parts = object_name_parts(&name);
                if let Some(args) = args {
                    let ordinality = *with_ordinality;
                    return self.table_function(&parts, &args.args, &alias, left, ordinality);
                }
                if let [single] = parts.as_slice() {
                    if let Some((_, rel, cols)) =
                        self.ctes.iter().rev().find(|(n, _, _)| n == single)
                    {
                        let mut cols = cols.clone();
                        let rel = rel.clone();
                        apply_alias(&mut cols, &alias, single.clone());
                        return Ok((rel, Scope { columns: cols }, false));
                    }
                }
                if let Some(view) = self.view_named(&parts) {
                    let (rel, mut cols) = self.view_rel(&view)?;
                    apply_alias(&mut cols, &alias, view.name.clone());
                    return Ok((rel, Scope { columns: cols }, false));
                }
                let (rel, mut cols, default) = match self.relation(&parts) {
                    Ok(found) => found,
                    Err(e) => self.sequence_relation(&parts).ok_or(e)?,
                };
                if let Rel::Scan { table, .. } = &rel {
                    self.reads.push(table.oid);
                    self.require(crate::acl::Object::Table(table.clone()), crate::acl::SELECT);
                }
                apply_alias(&mut cols, &alias, default);
                Ok((rel, Scope { columns: cols }, false))
            }
            ast::TableFactor::Derived {
                lateral,
                subquery,
                alias,
                ..
            } => {
                // A LATERAL subquery sees the left side as its enclosing scope.
                let q = match (lateral, left) {
                    (true, Some(left)) => self.query_in(subquery, left)?,
                    _ => self.derived_query(subquery)?,
                };
                let mut cols: Vec<ScopeColumn> = q
                    .columns
                    .iter()
                    .map(|c| ScopeColumn {
                        qualifier: None,
                        name: c.name.clone(),
                        ty: c.ty.clone(),
                        table_oid: 0,
                        attnum: 0,
                        merged_away: false,
                        scalar_function: false,
                        system: false,
                    })
                    .collect();
                apply_alias(&mut cols, alias, String::new());
                Ok((q.root, Scope { columns: cols }, *lateral))
            }
            ast::TableFactor::Function {
                name,
                args,
                alias,
                with_ordinality,
                ..
            } => {
                let parts = object_name_parts(name);
                self.table_function(&parts, args, alias, left, *with_ordinality)
            }
            ast::TableFactor::UNNEST {
                alias,
                array_exprs,
                with_offset: false,
                with_ordinality,
                ..
            } => {
                let args: Vec<ast::FunctionArg> = (array_exprs.iter())
                    .map(|e| ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e.clone())))
                    .collect();
                let name = ["unnest".to_string()];
                self.table_function(&name, &args, alias, left, *with_ordinality)
            }
            ast::TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                let (rel, mut scope) = self.bind_from(std::slice::from_ref(table_with_joins))?;
                if let Some(a) = alias {
                    for c in scope.columns.iter_mut() {
                        c.qualifier = Some(ident_name(&a.name));
                    }
                }
                Ok((rel, scope, false))
            }
            _ => Err(unsupported("this kind of FROM item")),
        }
    }

    /// A set-returning function in FROM; laterally joined when its arguments refer to the
    /// FROM items on its `left`.
    pub(super) fn table_function(
        &mut self,
        parts: &[String],
        args: &[ast::FunctionArg],
        alias: &Option<ast::TableAlias>,
        left: Option<&Scope>,
        ordinality: bool,
    ) -> PgResult<(Rel, Scope, bool)> {
        let numbered = |(rel, scope)| match ordinality {
            true => super::unnest::with_ordinality(rel, scope, alias),
            false => (rel, scope),
        };
        let Some(left) = left else {
            return (self.function_rel(parts, args, alias))
                .map(|found| (numbered(found), false))
                .map(|((rel, scope), lateral)| (rel, scope, lateral));
        };
        // Bound as a LATERAL subquery's body is: the left side is the enclosing scope.
        self.outer.push(left.clone());
        let was_escaping = std::mem::replace(&mut self.escapes, 0);
        let result = self.function_rel(parts, args, alias);
        self.outer.pop();
        let escapes = std::mem::replace(&mut self.escapes, was_escaping);
        self.escapes = self.escapes.max(escapes.saturating_sub(1));
        result.map(|found| {
            let (rel, scope) = numbered(found);
            (rel, scope, escapes > 0)
        })
    }

    pub(super) fn function_rel(
        &mut self,
        parts: &[String],
        args: &[ast::FunctionArg],
        alias: &Option<ast::TableAlias>,
    ) -> PgResult<(Rel, Scope)> {
        let name = parts.last().map(String::as_str).unwrap_or("");
        if let (
            "pg_partition_ancestors",
            [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))],
        ) = (name, args)
        {
            return self.partition_ancestors(e, alias);
        }
        if name == "unnest" {
            return self.unnest_function(args, alias);
        }
        if name == super::select_srf::ROWS_FROM {
            return self.rows_from(args, alias);
        }
        if let ("pg_options_to_table", [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))]) =
            (name, args)
        {
            return self.options_table(e, alias);
        }
        if let Some(found) = self.json_table_function(name, args, alias)? {
            return Ok(found);
        }
        if let Some(found) = self.text_table_function(name, args, alias)? {
            return Ok(found);
        }
        if name != "generate_series" {
            return Err(PgError::new(
                codes::UNDEFINED_FUNCTION,
                format!("function {name} does not exist"),
            ));
        }
        let empty = Scope::default();
        let exprs = args
            .iter()
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => self.expr(e, &empty),
                _ => Err(syntax("unexpected argument to generate_series")),
            })
            .collect::<PgResult<Vec<_>>>()?;
        if exprs.len() < 2 || exprs.len() > 3 {
            return Err(PgError::new(
                codes::UNDEFINED_FUNCTION,
                "function generate_series with these arguments does not exist",
            ));
        }
        // over timestamps (with an interval step) or integers
        let moment = [DataType::TIMESTAMP, DataType::TIMESTAMPTZ, DataType::Date]
            .iter()
            .find(|t| exprs.iter().take(2).any(|e| e.ty() == **t))
            .or((exprs.get(2).map(Expr::ty) == Some(DataType::INTERVAL))
                .then_some(&DataType::TIMESTAMPTZ));
        let ty = match moment {
            Some(DataType::Timestamp { .. }) => DataType::TIMESTAMP,
            Some(_) => DataType::TIMESTAMPTZ,
            None if exprs.iter().any(|e| e.ty() == DataType::Int8) => DataType::Int8,
            None => DataType::Int4,
        };
        let step_ty = if moment.is_some() {
            if exprs.len() < 3 {
                return Err(PgError::new(
                    codes::UNDEFINED_FUNCTION,
                    format!(
                        "function generate_series({0}, {0}) does not exist",
                        ty.format_type()
                    ),
                ));
            }
            DataType::INTERVAL
        } else {
            ty.clone()
        };
        let mut it = exprs.into_iter();
        let start = cast_to(it.next().unwrap(), &ty)?;
        let stop = cast_to(it.next().unwrap(), &ty)?;
        let step = it.next().map(|e| cast_to(e, &step_ty)).transpose()?;
        Ok((
            Rel::GenerateSeries { start, stop, step },
            function_scope("generate_series", alias, ty),
        ))
    }

    /// pg_partition_ancestors(rel): the relation itself, at depth 1 (no table is a
    /// partition; psql's describe reads it).
    fn partition_ancestors(
        &mut self,
        e: &ast::Expr,
        alias: &Option<ast::TableAlias>,
    ) -> PgResult<(Rel, Scope)> {
        let rel = cast_to(self.expr(e, &Scope::default())?, &DataType::Oid)?;
        let row = vec![rel];
        let scope = function_scope("pg_partition_ancestors", alias, DataType::Oid);
        Ok((Rel::Values { rows: vec![row] }, scope))
    }

    pub(super) fn select(
        &mut self,
        sel: &ast::Select,
        order_by: &[ast::OrderByExpr],
    ) -> PgResult<(Rel, Vec<OutputColumn>)> {
        if let Some(rewritten) = super::select_srf::expandarray_records(sel)? {
            return self.select(&rewritten, order_by);
        }
        if let Some(rewritten) = super::select_srf::lateral_sets(sel)? {
            return self.select(&rewritten, order_by);
        }
        if let Some(rewritten) = super::select_srf::lateral_subscripts(sel)? {
            return self.select(&rewritten, order_by);
        }
        crate::unsupported_syntax::select(sel)?;
        let appended = std::mem::take(&mut self.appended_items);
        let (mut rel, scope) = self.bind_from(&sel.from)?;
        refuse_windows_in("WHERE", &sel.selection.iter().collect::<Vec<_>>())?;
        refuse_windows_in("HAVING", &sel.having.iter().collect::<Vec<_>>())?;
        if let Some(w) = &sel.selection {
            if contains_aggregate(w) {
                return Err(PgError::new(
                    codes::GROUPING_ERROR,
                    "aggregate functions are not allowed in WHERE",
                ));
            }
            let predicate = self.predicate(w, &scope)?;
            rel = push_filter(rel, predicate);
        }
        let group_by: Vec<ast::Expr> = match &sel.group_by {
            ast::GroupByExpr::Expressions(e, _) => e.clone(),
            ast::GroupByExpr::All(_) => return Err(unsupported("GROUP BY ALL")),
        };
        refuse_windows_in("GROUP BY", &group_by.iter().collect::<Vec<_>>())?;
        let windowed = sel.projection.iter().any(|p| match p {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                contains_window(e)
            }
            _ => false,
        }) || order_by.iter().any(|o| contains_window(&o.expr));
        let windows = match windowed {
            true => WindowSlot::Open(Box::new(WindowState::new(&sel.named_window)?)),
            false => WindowSlot::NotAllowed,
        };
        let outer_windows = std::mem::replace(&mut self.windows, windows);
        let aggregating = !group_by.is_empty()
            || sel.having.is_some()
            || sel.projection.iter().any(|p| match p {
                ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } => contains_aggregate(e),
                _ => false,
            })
            || order_by.iter().any(|o| contains_aggregate(&o.expr));

        // Expand the select list into (AST expression, output name) pairs.
        let mut items: Vec<(ast::Expr, String, Option<usize>)> = Vec::new();
        for item in &sel.projection {
            match item {
                ast::SelectItem::UnnamedExpr(e) => {
                    items.push((e.clone(), default_column_name(e), None))
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    items.push((expr.clone(), ident_name(alias), None))
                }
                ast::SelectItem::Wildcard(_) => {
                    if scope.columns.is_empty() {
                        return Err(syntax("SELECT * with no tables specified is not valid"));
                    }
                    for (i, c) in scope
                        .columns
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| !c.merged_away && !c.system)
                    {
                        items.push((
                            ast::Expr::Identifier(ast::Ident::new(c.name.clone())),
                            c.name.clone(),
                            Some(i),
                        ));
                    }
                }
                ast::SelectItem::QualifiedWildcard(kind, _) => {
                    let q = match kind {
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                            object_name_parts(n).pop().unwrap_or_default()
                        }
                        ast::SelectItemQualifiedWildcardKind::Expr(e) => e.to_string(),
                    };
                    let mut hits: Vec<(usize, &ScopeColumn)> = scope
                        .columns
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| c.qualifier.as_deref() == Some(q.as_str()) && !c.system)
                        .collect();
                    // A table's own column order, even where JOIN … USING moved a column.
                    hits.sort_by_key(|(_, c)| c.attnum);
                    for (i, c) in &hits {
                        items.push((
                            ast::Expr::Identifier(ast::Ident::new(c.name.clone())),
                            c.name.clone(),
                            Some(*i),
                        ));
                    }
                    if hits.is_empty() {
                        return Err(PgError::new(
                            codes::UNDEFINED_TABLE,
                            format!("missing FROM-clause entry for table \"{q}\""),
                        ));
                    }
                }
                _ => return Err(unsupported("this select-list item")),
            }
        }

        let mut agg_ctx = if aggregating {
            let mut group_exprs = Vec::new();
            for g in &group_by {
                // GROUP BY (x) is GROUP BY x.
                let mut g = g;
                while let ast::Expr::Nested(inner) = g {
                    g = inner;
                }
                // GROUP BY 1 / GROUP BY alias refer to select-list items.
                let resolved = match g {
                    ast::Expr::Value(v) => match &v.value {
                        ast::Value::Number(n, _) => {
                            let i: usize =
                                n.parse().map_err(|_| syntax("invalid GROUP BY position"))?;
                            items
                                .get(i.wrapping_sub(1))
                                .map(|it| it.0.clone())
                                .ok_or_else(|| {
                                    PgError::new(
                                        codes::INVALID_COLUMN_REFERENCE,
                                        format!("GROUP BY position {i} is not in select list"),
                                    )
                                })?
                        }
                        _ => g.clone(),
                    },
                    ast::Expr::Identifier(id)
                        if !scope.columns.iter().any(|c| c.name == ident_name(id)) =>
                    {
                        items
                            .iter()
                            .find(|it| it.1 == ident_name(id))
                            .map(|it| it.0.clone())
                            .unwrap_or_else(|| g.clone())
                    }
                    _ => g.clone(),
                };
                group_exprs.push(resolved);
            }
            Some(AggContext {
                group_count: group_exprs.len(),
                group_exprs,
                aggs: Vec::new(),
                agg_asts: Vec::new(),
                input_scope: scope.clone(),
                input_order: None,
            })
        } else {
            None
        };

        // Bind the select list (and HAVING / ORDER BY) over the FROM scope or the aggregate output.
        let mut exprs = Vec::with_capacity(items.len());
        let mut columns = Vec::with_capacity(items.len());
        for (e, name, wildcard_index) in &items {
            let bound = match (&mut agg_ctx, wildcard_index) {
                (None, Some(i)) => Expr::Column {
                    depth: 0,
                    index: *i,
                    ty: scope.columns[*i].ty.clone(),
                },
                (Some(ctx), _) => self.agg_expr(e, ctx)?,
                (None, None) => self.expr(e, &scope)?,
            };
            let (table_oid, column_attr) = match (agg_ctx.is_none(), &bound) {
                (
                    true,
                    Expr::Column {
                        depth: 0, index, ..
                    },
                ) => scope
                    .columns
                    .get(*index) // not a window call's column
                    .map_or((0, 0), |c| (c.table_oid, c.attnum)),
                _ => (0, 0),
            };
            let ty = bound.ty();
            columns.push(OutputColumn {
                name: name.clone(),
                ty,
                table_oid,
                column_attr,
            });
            exprs.push(bound);
        }
        let having = match (&mut agg_ctx, &sel.having) {
            (Some(ctx), Some(h)) => {
                let b = self.agg_expr(h, ctx)?;
                Some(cast_to(b, &DataType::Bool)?)
            }
            _ => None,
        };
        // ORDER BY, then DISTINCT ON: output names/positions, else expressions appended as
        // hidden columns.
        let distinct_on: &[ast::Expr] = match &sel.distinct {
            Some(ast::Distinct::On(on)) => on,
            _ => &[],
        };
        let keyed: Vec<ast::OrderByExpr> = order_by
            .iter()
            .cloned()
            .chain(distinct_on.iter().map(|e| ast::OrderByExpr {
                expr: e.clone(),
                options: ast::OrderByOptions {
                    sort: None,
                    nulls_first: None,
                },
                with_fill: None,
            }))
            .collect();
        let mut sort_keys = Vec::new();
        let visible = exprs.len();
        for (k, o) in keyed.iter().enumerate() {
            // A name that two different output columns have: PostgreSQL's 42702.
            if let (ast::Expr::Identifier(id), true) = (&o.expr, k < order_by.len()) {
                let name = ident_name(id);
                let mut named = (columns.iter().enumerate())
                    .filter(|(_, c)| c.name == name)
                    .map(|(i, _)| i);
                if let (Some(first), Some(second)) = (named.next(), named.next()) {
                    let first = format!("{:?}", exprs[first]);
                    if std::iter::once(second)
                        .chain(named)
                        .any(|i| format!("{:?}", exprs[i]) != first)
                    {
                        return Err(PgError::new(
                            codes::AMBIGUOUS_COLUMN,
                            format!("ORDER BY \"{name}\" is ambiguous"),
                        ));
                    }
                }
            }
            let descending = o.options.sort == Some(ast::OrderBySort::Desc);
            let nulls_first = o.options.nulls_first.unwrap_or(descending);
            let index = match &o.expr {
                ast::Expr::Value(v) if matches!(v.value, ast::Value::Number(..)) => {
                    let ast::Value::Number(n, _) = &v.value else {
                        unreachable!()
                    };
                    let i: usize = n.parse().map_err(|_| syntax("invalid ORDER BY position"))?;
                    if i == 0 || i > visible - appended {
                        return Err(PgError::new(
                            codes::INVALID_COLUMN_REFERENCE,
                            format!("ORDER BY position {i} is not in select list"),
                        ));
                    }
                    i - 1
                }
                ast::Expr::Identifier(id)
                    if columns.iter().any(|c| c.name == ident_name(id))
                        && (agg_ctx.is_some()
                            || !scope.columns.iter().any(|c| c.name == ident_name(id))
                            || items.iter().any(|it| it.1 == ident_name(id))) =>
                {
                    columns
                        .iter()
                        .position(|c| c.name == ident_name(id))
                        .unwrap()
                }
                e => {
                    let bound = match &mut agg_ctx {
                        Some(ctx) => self.agg_expr(e, ctx)?,
                        None => self.expr(e, &scope)?,
                    };
                    exprs.push(bound);
                    exprs.len() - 1
                }
            };
            sort_keys.push(SortKey {
                expr: Expr::Column {
                    depth: 0,
                    index,
                    ty: exprs[index].ty(),
                },
                descending,
                nulls_first,
            });
        }

        let on_keys = sort_keys.split_off(order_by.len());
        let windows = std::mem::replace(&mut self.windows, outer_windows);
        if let Some(ctx) = agg_ctx {
            let group_by_exprs = ctx
                .group_exprs
                .iter()
                .map(|g| self.expr(g, &ctx.input_scope))
                .collect::<PgResult<Vec<_>>>()?;
            if let Some(keys) = ctx.input_order {
                rel = Rel::Sort {
                    input: Box::new(rel),
                    keys,
                };
            }
            rel = Rel::Aggregate {
                input: Box::new(rel),
                group_by: group_by_exprs,
                aggs: ctx.aggs,
            };
            if let Some(h) = having {
                rel = Rel::Filter {
                    input: Box::new(rel),
                    predicate: h,
                };
            }
        }
        if let WindowSlot::Open(state) = windows {
            rel = window_aggs(*state, rel, &mut exprs);
        }
        // DISTINCT ON: the rows sorted so, and the select-list columns it compares.
        let distinct_on = match on_keys.is_empty() {
            true => None,
            false => Some((
                distinct_on_order(std::mem::take(&mut sort_keys), on_keys.clone(), &exprs)?,
                on_keys.iter().map(sort_column).collect::<Vec<_>>(),
            )),
        };
        let total = exprs.len();
        rel = Rel::Project {
            input: Box::new(rel),
            exprs,
        };
        match &sel.distinct {
            None | Some(ast::Distinct::All) => {}
            Some(ast::Distinct::Distinct) => {
                rel = Rel::Distinct {
                    input: Box::new(rel),
                }
            }
            Some(ast::Distinct::On(_)) => {}
        }
        if let Some((keys, columns)) = distinct_on {
            rel = Rel::Unique {
                input: Box::new(Rel::Sort {
                    input: Box::new(rel),
                    keys,
                }),
                columns,
            };
        }
        if !sort_keys.is_empty() && !in_key_order(&rel, &sort_keys) {
            rel = Rel::Sort {
                input: Box::new(rel),
                keys: sort_keys,
            };
        }
        if total > visible {
            // Drop the hidden ORDER BY columns.
            let trim = (0..visible)
                .map(|i| Expr::Column {
                    depth: 0,
                    index: i,
                    ty: columns[i].ty.clone(),
                })
                .collect();
            rel = Rel::Project {
                input: Box::new(rel),
                exprs: trim,
            };
        }
        Ok((rel, columns))
    }

    pub(super) fn output_sort_key(
        &mut self,
        o: &ast::OrderByExpr,
        cols: &[OutputColumn],
    ) -> PgResult<SortKey> {
        let descending = o.options.sort == Some(ast::OrderBySort::Desc);
        let nulls_first = o.options.nulls_first.unwrap_or(descending);
        // PostgreSQL's errors: only output columns, by name or position
        let index = match &o.expr {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) => n
                    .parse::<usize>()
                    .ok()
                    .filter(|i| *i >= 1 && *i <= cols.len())
                    .map(|i| i - 1)
                    .ok_or_else(|| {
                        PgError::new(
                            codes::INVALID_COLUMN_REFERENCE,
                            format!("ORDER BY position {n} is not in select list"),
                        )
                    }),
                _ => Err(set_operation_order_by()),
            },
            ast::Expr::Identifier(id) => {
                let name = ident_name(id);
                cols.iter().position(|c| c.name == name).ok_or_else(|| {
                    PgError::new(
                        codes::UNDEFINED_COLUMN,
                        format!("column \"{name}\" does not exist"),
                    )
                })
            }
            _ => Err(set_operation_order_by()),
        }?;
        Ok(SortKey {
            expr: Expr::Column {
                depth: 0,
                index,
                ty: cols[index].ty.clone(),
            },
            descending,
            nulls_first,
        })
    }

    /// Bind an expression in the output of an aggregation: group keys and aggregate
    /// calls become columns of the Aggregate node's output.
    pub(super) fn agg_expr(&mut self, e: &ast::Expr, ctx: &mut AggContext) -> PgResult<Expr> {
        if let Some(i) = ctx.group_exprs.iter().position(|g| g == e) {
            let ty = self.expr(e, &ctx.input_scope)?.ty();
            return Ok(Expr::Column {
                depth: 0,
                index: i,
                ty,
            });
        }
        if let ast::Expr::Function(f) = e {
            let name = object_name_parts(&f.name).pop().unwrap_or_default();
            if is_ordered_set_name(&name) && f.over.is_none() {
                return self.ordered_set_expr(&name, f, ctx);
            }
            if is_aggregate_name(&name) && f.over.is_none() {
                if let Some(j) = ctx.agg_asts.iter().position(|a| a == e) {
                    return Ok(Expr::Column {
                        depth: 0,
                        index: ctx.group_count + j,
                        ty: ctx.aggs[j].ty.clone(),
                    });
                }
                let scope = &ctx.input_scope;
                let (call, order) =
                    self.aggregate_call(&name, f, &mut |b, arg| b.expr(arg, scope))?;
                match (&ctx.input_order, order) {
                    (_, None) => {}
                    (None, Some(keys)) => ctx.input_order = Some(keys),
                    // Bound expressions compare by their debug form (no PartialEq on plans).
                    (Some(have), Some(keys)) if format!("{have:?}") == format!("{keys:?}") => {}
                    (Some(_), Some(_)) => {
                        return Err(unsupported(
                            "aggregates that order their input differently in one query",
                        ))
                    }
                }
                let ty = call.ty.clone();
                ctx.aggs.push(call);
                ctx.agg_asts.push(e.clone());
                return Ok(Expr::Column {
                    depth: 0,
                    index: ctx.group_count + ctx.aggs.len() - 1,
                    ty,
                });
            }
        }
        match e {
            ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) => {
                // A column that is neither grouped nor aggregated may still be an outer reference.
                let bound = self.expr(e, &ctx.input_scope)?;
                match bound {
                    Expr::Column { depth: 0, .. } => Err(PgError::new(
                        codes::GROUPING_ERROR,
                        format!("column \"{}\" must appear in the GROUP BY clause or be used in an aggregate function", e),
                    )),
                    other => Ok(other),
                }
            }
            _ => {
                // Rebind children through agg_expr by binding against a scope made of the
                // aggregate output: simplest correct approach is structural recursion.
                self.expr_with(e, &Scope::default(), &mut |b, child| b.agg_expr(child, ctx))
            }
        }
    }

    /// An aggregate call and the order it needs its input in, if any; `child` binds its
    /// arguments (over the rows it aggregates, or for a window aggregate over those the
    /// window reads, which may be a grouped query's aggregates).
    pub(super) fn aggregate_call(
        &mut self,
        name: &str,
        f: &ast::Function,
        child: &mut dyn FnMut(&mut Binder<'a>, &ast::Expr) -> PgResult<Expr>,
    ) -> PgResult<(AggCall, Option<Vec<SortKey>>)> {
        if is_ordered_set_name(name) {
            // agg_expr binds them (`ordered_set_call`); here only as window calls
            self.ordered_set_call(name, f, child)?;
            return Err(PgError::internal(
                "an ordered-set aggregate outside aggregation",
            ));
        }
        crate::unsupported_syntax::aggregate_call(f)?;
        // In a window aggregate an aggregate argument is the grouped query's (`child`).
        let nested = |e: &ast::Expr| f.over.is_none() && contains_aggregate(e);
        if f.over.is_none() && contains_window(f) {
            return Err(PgError::new(
                codes::GROUPING_ERROR,
                "aggregate function calls cannot contain window function calls",
            ));
        }
        let (args, distinct) = match &f.args {
            ast::FunctionArguments::List(list) => (
                list.args.clone(),
                matches!(
                    list.duplicate_treatment,
                    Some(ast::DuplicateTreatment::Distinct)
                ),
            ),
            _ => (Vec::new(), false),
        };
        let filter = match &f.filter {
            Some(w) if nested(w) => {
                return Err(PgError::new(
                    codes::GROUPING_ERROR,
                    "aggregate functions are not allowed in FILTER",
                ));
            }
            Some(w) => Some(boolean_clause("FILTER", child(self, w)?)?),
            None => None,
        };
        let arg = match args.as_slice() {
            [] | [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)] if name == "count" => {
                None
            }
            // string_agg(value, delimiter): both go to the aggregate as ARRAY[value, delimiter].
            [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(v)), ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(d))]
                if name == "string_agg" =>
            {
                if nested(v) || nested(d) {
                    return Err(PgError::new(
                        codes::GROUPING_ERROR,
                        "aggregate function calls cannot be nested",
                    ));
                }
                let v = child(self, v)?;
                let v = self.infer_param(v, &DataType::Text);
                let d = child(self, d)?;
                let d = self.infer_param(d, &DataType::Text);
                let elements = vec![cast_to(v, &DataType::Text)?, cast_to(d, &DataType::Text)?];
                Some(Expr::Array {
                    elements,
                    ty: DataType::Array(Box::new(DataType::Text)),
                })
            }
            // jsonb_object_agg(key, value): ARRAY[to_jsonb(key), to_jsonb(value)].
            [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(k)), ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(v))]
                if name == "jsonb_object_agg" =>
            {
                if nested(k) || nested(v) {
                    return Err(PgError::new(
                        codes::GROUPING_ERROR,
                        "aggregate function calls cannot be nested",
                    ));
                }
                let k = child(self, k)?;
                let v = child(self, v)?;
                let elements = vec![
                    self.call_scalar("to_jsonb", vec![k])?,
                    self.call_scalar("to_jsonb", vec![v])?,
                ];
                Some(Expr::Array {
                    elements,
                    ty: DataType::Array(Box::new(DataType::Jsonb)),
                })
            }
            // jsonb_agg(value) / json_agg(value) collect to_jsonb(value) / to_json(value)
            [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))]
                if name == "jsonb_agg" || name == "json_agg" =>
            {
                if nested(e) {
                    return Err(PgError::new(
                        codes::GROUPING_ERROR,
                        "aggregate function calls cannot be nested",
                    ));
                }
                let e = child(self, e)?;
                Some(match (name, e.ty()) {
                    ("json_agg", DataType::Json) => e,
                    ("json_agg", _) => self.call_scalar("to_json", vec![e])?,
                    _ => self.call_scalar("to_jsonb", vec![e])?,
                })
            }
            [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))] => {
                if nested(e) {
                    return Err(PgError::new(
                        codes::GROUPING_ERROR,
                        "aggregate function calls cannot be nested",
                    ));
                }
                Some(child(self, e)?)
            }
            _ => {
                return Err(PgError::new(
                    codes::UNDEFINED_FUNCTION,
                    format!("function {name} with these arguments does not exist"),
                ))
            }
        };
        let arg = match arg {
            Some(a) if a.ty() == DataType::Unknown => Some(cast_to(a, &DataType::Text)?),
            other => other,
        };
        let (func, ty) = resolve_aggregate(name, arg.as_ref().map(|a| a.ty()).as_ref())
            .ok_or_else(|| {
                PgError::new(
                    codes::UNDEFINED_FUNCTION,
                    format!(
                        "function {name}({}) does not exist",
                        arg.as_ref()
                            .map(|a| a.ty().format_type())
                            .unwrap_or_default()
                    ),
                )
            })?;
        // array_agg/string_agg list their values in input order: ORDER BY sorts the input;
        // DISTINCT ones sort it by the value, as PostgreSQL's sort-based DISTINCT does.
        let order_by: &[ast::OrderByExpr] = match &f.args {
            ast::FunctionArguments::List(list) => list
                .clauses
                .iter()
                .find_map(|c| match c {
                    ast::FunctionArgumentClause::OrderBy(keys) => Some(keys.as_slice()),
                    _ => None,
                })
                .unwrap_or(&[]),
            _ => &[],
        };
        let ordered = func.is_ordered();
        let order = if !ordered {
            None
        } else if !order_by.is_empty() {
            let mut keys = Vec::with_capacity(order_by.len());
            for o in order_by {
                let in_args = args.iter().any(|a| matches!(a, ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) if *e == o.expr));
                if distinct && !in_args {
                    return Err(PgError::new(
                        codes::INVALID_COLUMN_REFERENCE,
                        "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
                    ));
                }
                if nested(&o.expr) {
                    return Err(PgError::new(
                        codes::GROUPING_ERROR,
                        "aggregate function calls cannot be nested",
                    ));
                }
                let descending = o.options.sort == Some(ast::OrderBySort::Desc);
                let expr = child(self, &o.expr)?;
                let expr = if expr.ty() == DataType::Unknown {
                    cast_to(expr, &DataType::Text)?
                } else {
                    expr
                };
                keys.push(SortKey {
                    expr,
                    descending,
                    nulls_first: o.options.nulls_first.unwrap_or(descending),
                });
            }
            Some(keys)
        } else if distinct {
            arg.clone().map(|expr| {
                vec![SortKey {
                    expr,
                    descending: false,
                    nulls_first: false,
                }]
            })
        } else {
            None
        };
        Ok((
            AggCall {
                func,
                arg,
                distinct,
                filter,
                ty,
            },
            order,
        ))
    }
}

/// Whether `name` is an ordered-set aggregate's (`… WITHIN GROUP (ORDER BY …)`).
pub(super) fn is_ordered_set_name(name: &str) -> bool {
    matches!(name, "percentile_cont" | "percentile_disc" | "mode")
}

impl<'a> Binder<'a> {
    /// An ordered-set aggregate in the output of an aggregation: `percentile_cont(f)`,
    /// `percentile_disc(f)` (f a float8, or a float8[] for an array of results) or
    /// `mode()`, each `WITHIN GROUP (ORDER BY value [ASC | DESC])`. The aggregate
    /// collects and sorts its group's values itself (`AggFunc::is_ordered_set`), so its
    /// order never conflicts with the input order other aggregates ask for. A
    /// percentile's aggregate results in the sorted values, shared by the calls that
    /// differ only in the fraction; the fraction (PostgreSQL's direct argument: grouped
    /// columns only, 42803) is bound over the aggregation's output and applied to them by
    /// `ScalarFunc::PercentileContFinal`/`PercentileDiscFinal`, once per group.
    fn ordered_set_expr(
        &mut self,
        name: &str,
        f: &ast::Function,
        ctx: &mut AggContext,
    ) -> PgResult<Expr> {
        let scope = &ctx.input_scope;
        let (call, direct) = self.ordered_set_call(name, f, &mut |b, arg| b.expr(arg, scope))?;
        // the aggregate, without its direct arguments
        let mut shared = f.clone();
        shared.args = ast::FunctionArguments::None;
        let shared = ast::Expr::Function(shared);
        let j = match ctx.agg_asts.iter().position(|a| *a == shared) {
            Some(j) => j,
            None => {
                ctx.aggs.push(call);
                ctx.agg_asts.push(shared);
                ctx.aggs.len() - 1
            }
        };
        let column = Expr::Column {
            depth: 0,
            index: ctx.group_count + j,
            ty: ctx.aggs[j].ty.clone(),
        };
        let Some(direct) = direct else {
            return Ok(column);
        };
        let fraction = self.agg_expr(direct, ctx)?;
        let fraction = match fraction.ty() {
            DataType::Array(_) => cast_to(fraction, &DataType::Array(Box::new(DataType::Float8)))?,
            _ => {
                let fraction = self.infer_param(fraction, &DataType::Float8);
                cast_to(fraction, &DataType::Float8)?
            }
        };
        let element = match column.ty() {
            DataType::Array(element) => *element,
            other => other,
        };
        let ty = match fraction.ty() {
            DataType::Array(_) => DataType::Array(Box::new(element)),
            _ => element,
        };
        let func = if name == "percentile_cont" {
            ScalarFunc::PercentileContFinal
        } else {
            ScalarFunc::PercentileDiscFinal
        };
        Ok(Expr::Func {
            func,
            args: vec![column, fraction],
            ty,
        })
    }

    /// An ordered-set aggregate's call (its value bound by `child`) and, of a
    /// percentile, its direct argument (the fraction); PostgreSQL's errors for a call
    /// with OVER, without WITHIN GROUP, or with other arguments.
    fn ordered_set_call<'f>(
        &mut self,
        name: &str,
        f: &'f ast::Function,
        child: &mut dyn FnMut(&mut Binder<'a>, &ast::Expr) -> PgResult<Expr>,
    ) -> PgResult<(AggCall, Option<&'f ast::Expr>)> {
        crate::unsupported_syntax::ordered_set_call(f)?;
        if f.over.is_some() {
            return Err(PgError::new(
                codes::FEATURE_NOT_SUPPORTED,
                format!("OVER is not supported for ordered-set aggregate {name}"),
            ));
        }
        let direct: Vec<&ast::Expr> = match &f.args {
            ast::FunctionArguments::List(list) => list
                .args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
                    _ => Err(PgError::new(
                        codes::UNDEFINED_FUNCTION,
                        format!("function {name} with these arguments does not exist"),
                    )),
                })
                .collect::<PgResult<_>>()?,
            _ => Vec::new(),
        };
        let no_such = || {
            PgError::new(
                codes::UNDEFINED_FUNCTION,
                format!("function {name} with these arguments does not exist"),
            )
        };
        if f.within_group.is_empty() {
            // `mode(x)`, `percentile_cont(f, x)`: the call with its WITHIN GROUP argument
            // among the others (else no function has these arguments)
            return Err(if direct.len() == 1 + usize::from(name != "mode") {
                PgError::new(
                    codes::WRONG_OBJECT_TYPE,
                    format!("WITHIN GROUP is required for ordered-set aggregate {name}"),
                )
            } else {
                no_such()
            });
        }
        if contains_window(f) {
            return Err(PgError::new(
                codes::GROUPING_ERROR,
                "aggregate function calls cannot contain window function calls",
            ));
        }
        let nested = direct.iter().any(|e| contains_aggregate(e))
            || f.within_group.iter().any(|o| contains_aggregate(&o.expr));
        if nested {
            return Err(PgError::new(
                codes::GROUPING_ERROR,
                "aggregate function calls cannot be nested",
            ));
        }
        let [key] = f.within_group.as_slice() else {
            return Err(no_such());
        };
        let direct = match (name, direct.as_slice()) {
            ("mode", []) => None,
            ("percentile_cont" | "percentile_disc", [fraction]) => Some(*fraction),
            _ => return Err(no_such()),
        };
        let desc = key.options.sort == Some(ast::OrderBySort::Desc);
        let filter = match &f.filter {
            Some(w) if contains_aggregate(w) => {
                return Err(PgError::new(
                    codes::GROUPING_ERROR,
                    "aggregate functions are not allowed in FILTER",
                ));
            }
            Some(w) => Some(boolean_clause("FILTER", child(self, w)?)?),
            None => None,
        };
        let value = child(self, &key.expr)?;
        let value = match value.ty() {
            DataType::Unknown => cast_to(value, &DataType::Text)?,
            _ => value,
        };
        let (func, value) = match name {
            "mode" => (AggFunc::Mode { desc }, value),
            "percentile_disc" => (AggFunc::PercentileDisc { desc }, value),
            _ => {
                let value = match value.ty() {
                    DataType::Interval { .. } => cast_to(value, &DataType::INTERVAL)?,
                    _ => {
                        let value = self.infer_param(value, &DataType::Float8);
                        let from = value.ty().format_type();
                        cast_to(value, &DataType::Float8).map_err(|_| {
                            PgError::new(
                                codes::UNDEFINED_FUNCTION,
                                format!(
                                    "function percentile_cont(double precision, {from}) does not exist"
                                ),
                            )
                        })?
                    }
                };
                (AggFunc::PercentileCont { desc }, value)
            }
        };
        // a percentile's aggregate gives the sorted values
        let ty = match func {
            AggFunc::Mode { .. } => value.ty(),
            _ => DataType::Array(Box::new(value.ty())),
        };
        let call = AggCall {
            func,
            arg: Some(value),
            distinct: false,
            filter,
            ty,
        };
        Ok((call, direct))
    }
}

/// The column of the select list a key of its ORDER BY or DISTINCT ON sorts by.
fn sort_column(key: &SortKey) -> usize {
    match key.expr {
        Expr::Column { index, .. } => index,
        _ => unreachable!("select-list sort keys are its columns"),
    }
}

/// The order a DISTINCT ON query's rows are sorted in before the first of each group is
/// kept: its ORDER BY, which must begin with the DISTINCT ON expressions (in any order;
/// 42P10 otherwise, as PostgreSQL), followed by those it does not list.
fn distinct_on_order(
    mut order: Vec<SortKey>,
    on: Vec<SortKey>,
    exprs: &[Expr],
) -> PgResult<Vec<SortKey>> {
    // Equal bound expressions at two positions are one key (no PartialEq on plans).
    let same = |a: &SortKey, b: &SortKey| {
        let (a, b) = (sort_column(a), sort_column(b));
        a == b || format!("{:?}", exprs[a]) == format!("{:?}", exprs[b])
    };
    let mut covered = vec![false; on.len()];
    for key in &order {
        if covered.iter().all(|c| *c) {
            break;
        }
        let mut matched = false;
        for (d, c) in on.iter().zip(covered.iter_mut()) {
            if same(d, key) {
                *c = true;
                matched = true;
            }
        }
        if !matched {
            return Err(PgError::new(
                codes::INVALID_COLUMN_REFERENCE,
                "SELECT DISTINCT ON expressions must match initial ORDER BY expressions",
            ));
        }
    }
    order.extend(
        on.into_iter()
            .zip(covered)
            .filter(|(_, c)| !c)
            .map(|(d, _)| d),
    );
    Ok(order)
}

/// The position of the USING column `name` among one side's columns (42703 if absent,
/// 42702 if that side has it twice, as PostgreSQL).
pub(super) fn using_column(side: &[ScopeColumn], name: &str, which: &str) -> PgResult<usize> {
    let mut hits = side
        .iter()
        .enumerate()
        .filter(|(_, c)| c.name == name && !c.merged_away && !c.system);
    match (hits.next(), hits.next()) {
        (Some((i, _)), None) => Ok(i),
        (Some(_), Some(_)) => Err(PgError::new(
            codes::AMBIGUOUS_COLUMN,
            format!("common column name \"{name}\" appears more than once in {which} table"),
        )),
        (None, _) => Err(PgError::new(
            codes::UNDEFINED_COLUMN,
            format!("column \"{name}\" specified in USING clause does not exist in {which} table"),
        )),
    }
}

fn set_operation_order_by() -> PgError {
    PgError::new(
        codes::FEATURE_NOT_SUPPORTED,
        "invalid UNION/INTERSECT/EXCEPT ORDER BY clause",
    )
    .with_detail("Only result column names can be used, not expressions or functions.")
}

/// A RIGHT or FULL JOIN's right side cannot read its left side: the left rows it would
/// be computed for are not all there when its unmatched rows are.
fn refuse_lateral(lateral: bool, kind: &str) -> PgResult<()> {
    match lateral {
        true => Err(PgError::new(
            codes::INVALID_COLUMN_REFERENCE,
            format!("invalid reference to FROM-clause entry in a {kind} JOIN"),
        )
        .with_hint("The combining JOIN type must be INNER or LEFT for a LATERAL reference.")),
        false => Ok(()),
    }
}

/// A FULL JOIN runs as a hash join (its unmatched inner rows emitted at the end), so its
/// condition needs an equality between the sides, as PostgreSQL's hash and merge joins
/// do; a constant condition (or none) pairs every row.
fn full_join_condition(on: Option<&Expr>, left_width: usize) -> PgResult<()> {
    let Some(on) = on else { return Ok(()) };
    let mut reads_columns = false;
    on.visit(&mut |e| reads_columns |= matches!(e, Expr::Column { depth: 0, .. }));
    if reads_columns && on.equi_join_keys(left_width).is_empty() {
        return Err(PgError::new(
            codes::FEATURE_NOT_SUPPORTED,
            "FULL JOIN is only supported with merge-joinable or hash-joinable join conditions",
        ));
    }
    Ok(())
}

/// NATURAL JOIN's columns: the left side's column names that the right side also has,
/// in the left side's order (none: a cross join).
fn natural_join_columns(joined: &Scope, left_width: usize) -> Vec<String> {
    let (left, right) = joined.columns.split_at(left_width);
    let mut names: Vec<String> = Vec::new();
    for c in left.iter().filter(|c| !c.merged_away && !c.system) {
        if right
            .iter()
            .any(|r| !r.merged_away && !r.system && r.name == c.name)
            && !names.contains(&c.name)
        {
            names.push(c.name.clone());
        }
    }
    names
}

/// PostgreSQL's column order after `JOIN … USING`: the USING columns (the left side's
/// copies) first, then the rest of the left side, then the right side with its copies of
/// the USING columns merged away.
/// `left RIGHT JOIN right ON on` as `right LEFT JOIN left`, its columns put back in the
/// written order (`on` is bound against left's columns then right's).
fn right_join_swapped(
    left: Rel,
    right: Rel,
    on: Option<Expr>,
    lateral: bool,
    joined: &Scope,
    left_width: usize,
) -> PgResult<Rel> {
    refuse_lateral(lateral, "RIGHT")?;
    let mut has_subquery = false;
    if let Some(on) = &on {
        on.visit(&mut |e| has_subquery |= matches!(e, Expr::Subquery { .. }));
    }
    if has_subquery {
        return Err(unsupported("RIGHT JOIN with a subquery in its condition"));
    }
    let right_width = joined.columns.len() - left_width;
    // Written order [left, right] to the swapped join's [right, left].
    let swapped_index = |i: usize| {
        if i < left_width {
            right_width + i
        } else {
            i - left_width
        }
    };
    let on = on.map(|mut e| {
        e.visit_mut(&mut |x| {
            if let Expr::Column {
                depth: 0, index, ..
            } = x
            {
                *index = swapped_index(*index);
            }
        });
        e
    });
    let exprs = (0..joined.columns.len())
        .map(|i| Expr::Column {
            depth: 0,
            index: swapped_index(i),
            ty: joined.columns[i].ty.clone(),
        })
        .collect();
    Ok(Rel::Project {
        input: Box::new(Rel::Join {
            left: Box::new(right),
            right: Box::new(left),
            kind: JoinKind::Left,
            on,
            lateral: false,
        }),
        exprs,
    })
}

pub(super) fn merge_using_columns(
    rel: Rel,
    scope: Scope,
    pairs: &[(usize, usize)],
) -> (Rel, Scope) {
    let lefts: Vec<usize> = pairs.iter().map(|&(l, _)| l).collect();
    let mut rights: Vec<usize> = pairs.iter().map(|&(_, r)| r).collect();
    rights.sort_unstable();
    let mut order: Vec<usize> = lefts.clone();
    order.extend((0..scope.columns.len()).filter(|i| !lefts.contains(i) && !rights.contains(i)));
    // The right copies go among the right side's columns, keeping `b.*` in b's order.
    for &r in &rights {
        let at = order
            .iter()
            .position(|&i| i > r && !lefts.contains(&i))
            .unwrap_or(order.len());
        order.insert(at, r);
    }
    let exprs = order
        .iter()
        .map(|&i| Expr::Column {
            depth: 0,
            index: i,
            ty: scope.columns[i].ty.clone(),
        })
        .collect();
    let columns = order
        .iter()
        .map(|&i| ScopeColumn {
            merged_away: scope.columns[i].merged_away || rights.contains(&i),
            ..scope.columns[i].clone()
        })
        .collect();
    (
        Rel::Project {
            input: Box::new(rel),
            exprs,
        },
        Scope { columns },
    )
}

/// A FULL JOIN's USING columns: each is `COALESCE(left, right)` (either side may be the
/// NULL-extended one), first and unqualified; both sides' copies stay, reachable only
/// qualified, as in PostgreSQL.
fn merge_full_using_columns(
    rel: Rel,
    scope: Scope,
    pairs: &[(usize, usize)],
) -> PgResult<(Rel, Scope)> {
    let column = |i: usize| Expr::Column {
        depth: 0,
        index: i,
        ty: scope.columns[i].ty.clone(),
    };
    let mut exprs = Vec::with_capacity(pairs.len() + scope.columns.len());
    let mut columns = Vec::with_capacity(exprs.capacity());
    for &(l, r) in pairs {
        let ty = common_type(
            &[scope.columns[l].ty.clone(), scope.columns[r].ty.clone()],
            "JOIN/USING",
        )?;
        exprs.push(Expr::Coalesce {
            args: vec![cast_to(column(l), &ty)?, cast_to(column(r), &ty)?],
            ty: ty.clone(),
        });
        columns.push(ScopeColumn {
            qualifier: None,
            table_oid: 0,
            attnum: 0,
            ty,
            ..scope.columns[l].clone()
        });
    }
    for (i, c) in scope.columns.iter().enumerate() {
        exprs.push(column(i));
        columns.push(ScopeColumn {
            merged_away: c.merged_away || pairs.iter().any(|&(l, r)| i == l || i == r),
            ..c.clone()
        });
    }
    Ok((
        Rel::Project {
            input: Box::new(rel),
            exprs,
        },
        Scope { columns },
    ))
}

/// `ONLY t [alias]`: sqlparser reads it as table `only` with alias `t`. ONLY excludes
/// inheritance children, which Meridian tables never have, so it names `t` itself.
pub(super) fn without_only(
    name: &ast::ObjectName,
    alias: &Option<ast::TableAlias>,
) -> (ast::ObjectName, Option<ast::TableAlias>) {
    match (name.0.as_slice(), alias) {
        ([ast::ObjectNamePart::Identifier(only)], Some(a))
            if only.quote_style.is_none()
                && only.value.eq_ignore_ascii_case("only")
                && !a.explicit
                && a.columns.is_empty() =>
        {
            (
                ast::ObjectName(vec![ast::ObjectNamePart::Identifier(a.name.clone())]),
                None,
            )
        }
        _ => (name.clone(), alias.clone()),
    }
}

/// The one column of a table function in FROM: named by the alias's column list, else
/// the alias, else the function (as PostgreSQL does).
pub(super) fn function_scope(
    function: &str,
    alias: &Option<ast::TableAlias>,
    ty: DataType,
) -> Scope {
    let name = alias
        .as_ref()
        .map(|a| {
            a.columns
                .first()
                .map(|c| ident_name(&c.name))
                .unwrap_or_else(|| ident_name(&a.name))
        })
        .unwrap_or_else(|| function.to_string());
    let qualifier = alias
        .as_ref()
        .map(|a| ident_name(&a.name))
        .unwrap_or_else(|| function.to_string());
    Scope {
        columns: vec![ScopeColumn {
            qualifier: Some(qualifier),
            name,
            ty,
            table_oid: 0,
            attnum: 0,
            merged_away: false,
            scalar_function: true,
            system: false,
        }],
    }
}

/// Whether an expression holds a subquery anywhere.
pub(super) fn has_subquery(e: &ast::Expr) -> bool {
    struct Finder;
    impl sqlparser::ast::Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _q: &ast::Query) -> std::ops::ControlFlow<()> {
            std::ops::ControlFlow::Break(())
        }
    }
    sqlparser::ast::Visit::visit(e, &mut Finder).is_break()
}

pub(super) fn is_aggregate_name(name: &str) -> bool {
    resolve_aggregate(name, None).is_some() || matches!(name, "sum" | "avg" | "min" | "max")
}

pub(super) fn contains_aggregate(e: &ast::Expr) -> bool {
    let s = format!("{e}").to_ascii_lowercase();
    // Cheap pre-check, then a structural walk.
    if ![
        "count(",
        "sum(",
        "min(",
        "max(",
        "avg(",
        "bool_and(",
        "bool_or(",
        "every(",
        "array_agg(",
        "string_agg(",
        "json_agg(",
        "jsonb_agg(",
        "jsonb_object_agg(",
        "stddev",
        "variance(",
        "var_samp(",
        "var_pop(",
        "percentile_cont(",
        "percentile_disc(",
        "mode(",
    ]
    .iter()
    .any(|p| s.contains(p))
    {
        return false;
    }
    // Aggregates inside subqueries belong to the subquery: track query nesting.
    struct Finder {
        depth: usize,
        found: bool,
    }
    impl sqlparser::ast::Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _q: &ast::Query) -> std::ops::ControlFlow<()> {
            self.depth += 1;
            std::ops::ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _q: &ast::Query) -> std::ops::ControlFlow<()> {
            self.depth -= 1;
            std::ops::ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, x: &ast::Expr) -> std::ops::ControlFlow<()> {
            if let ast::Expr::Function(f) = x {
                let name = object_name_parts(&f.name).pop().unwrap_or_default();
                if self.depth == 0 && is_aggregate_name(&name) && f.over.is_none() {
                    self.found = true;
                    return std::ops::ControlFlow::Break(());
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut finder = Finder {
        depth: 0,
        found: false,
    };
    let _ = sqlparser::ast::Visit::visit(e, &mut finder);
    finder.found
}

/// PostgreSQL's default output column name for an expression ("?column?" when none).
pub(super) fn default_column_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(id) => ident_name(id),
        ast::Expr::CompoundIdentifier(ids) => ids.last().map(ident_name).unwrap_or_default(),
        ast::Expr::Function(f) => {
            let name = object_name_parts(&f.name).pop().unwrap_or_default();
            match name.as_str() {
                "current_timestamp" => "current_timestamp".into(),
                _ => name,
            }
        }
        ast::Expr::TypedString(ts) => type_column_name(&ts.data_type),
        ast::Expr::Interval(_) => "interval".into(),
        ast::Expr::AtTimeZone { .. } => "timezone".into(),
        ast::Expr::Extract { .. } => "extract".into(),
        ast::Expr::Ceil { .. } => "ceil".into(),
        ast::Expr::Floor { .. } => "floor".into(),
        ast::Expr::Cast {
            expr, data_type, ..
        } => match expr.as_ref() {
            // PostgreSQL: a cast of a constant or of another cast is named after the outer type.
            ast::Expr::Value(_)
            | ast::Expr::Cast { .. }
            | ast::Expr::TypedString(_)
            | ast::Expr::Interval(_) => type_column_name(data_type),
            ast::Expr::Nested(n)
                if matches!(n.as_ref(), ast::Expr::Value(_) | ast::Expr::Cast { .. }) =>
            {
                type_column_name(data_type)
            }
            inner => {
                let n = default_column_name(inner);
                if n == "?column?" {
                    type_column_name(data_type)
                } else {
                    n
                }
            }
        },
        ast::Expr::Nested(inner) | ast::Expr::Collate { expr: inner, .. } => {
            default_column_name(inner)
        }
        // the last name: `(r).f` is f, `t.col[1]` is col
        ast::Expr::CompoundFieldAccess { root, access_chain } => (access_chain.iter().rev())
            .find_map(|a| match a {
                ast::AccessExpr::Dot(ast::Expr::Identifier(id)) => Some(ident_name(id)),
                _ => None,
            })
            .unwrap_or_else(|| default_column_name(root)),
        ast::Expr::Case { .. } => "case".into(),
        ast::Expr::Exists { .. } => "exists".into(),
        ast::Expr::Array(_) => "array".into(),
        ast::Expr::Subquery(q) => match q.body.as_ref() {
            ast::SetExpr::Select(s) => match s.projection.first() {
                Some(ast::SelectItem::UnnamedExpr(e)) => default_column_name(e),
                Some(ast::SelectItem::ExprWithAlias { alias, .. }) => ident_name(alias),
                _ => "?column?".into(),
            },
            _ => "?column?".into(),
        },
        ast::Expr::Position { .. } => "position".into(),
        ast::Expr::Substring {
            shorthand: true, ..
        } => "substr".into(),
        ast::Expr::Substring { .. } => "substring".into(),
        ast::Expr::Trim { trim_where, .. } => trim_function(trim_where.as_ref()).into(),
        _ => "?column?".into(),
    }
}

/// A type's name without its parenthesised modifiers, wherever they sit (`timestamp(3)
/// with time zone`), and the text between the parentheses.
pub(super) fn split_modifiers(text: &str) -> (String, Option<&str>) {
    match text.find('(') {
        Some(open) => {
            let close = text[open..].find(')').map_or(text.len(), |c| open + c);
            let rest = text.get(close + 1..).unwrap_or_default();
            let name = format!("{}{rest}", text[..open].trim_end());
            (name.trim().to_string(), Some(&text[open + 1..close]))
        }
        None => (text.trim().to_string(), None),
    }
}

pub(super) fn type_column_name(dt: &ast::DataType) -> String {
    let (base, _) = split_modifiers(&dt.to_string().to_ascii_lowercase());
    let base = base.trim_start_matches("pg_catalog.").to_string();
    // An array type is named after its element type, as in PostgreSQL.
    let element = base.trim_end_matches("[]").trim();
    match DataType::from_sql_name(element, &[]) {
        Ok(t) => t.type_name().to_string(),
        Err(_) => element.to_string(),
    }
}
