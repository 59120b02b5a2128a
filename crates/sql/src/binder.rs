//! Name resolution and typing: parsed statements → bound `plan::Statement`s.
//!
//! Parameter types follow PostgreSQL: a `$n` whose type the client left unspecified takes
//! the type its context demands (`aid = $1` → the column's type, `abalance + $1` → the
//! other operand's, an INSERT target → the column's), else `text`.

use crate::catalog::{Catalog, ColumnDef, DataTypeDef, TableDef};
use crate::functions::{resolve_aggregate, resolve_scalar, AggFunc, ScalarFunc};
use crate::parse::{Parsed, ParsedStatement};
use crate::plan::*;
use crate::system_tables::{system_columns, system_table, system_table_oid};
use pgerror::{codes, PgError, PgResult};
use sqlparser::ast;
use std::sync::Arc;
use types::ops::{resolve_binary, BinaryOp, UnaryOp};
use types::{DataType, Value};

/// A column visible to expressions at some level of the query.
#[derive(Debug, Clone)]
struct ScopeColumn {
    qualifier: Option<String>,
    name: String,
    ty: DataType,
    table_oid: u32,
    attnum: i16,
    /// The right side's copy of a `JOIN … USING` column: only a qualified name reaches
    /// it, and `*` leaves it out (the left side's copy stands for both).
    merged_away: bool,
    /// The only column of a function returning a scalar: its relation's name alone refers
    /// to it (PostgreSQL's whole-row reference of such a function is the value itself).
    scalar_function: bool,
}

#[derive(Debug, Clone, Default)]
struct Scope {
    columns: Vec<ScopeColumn>,
}

/// State while binding the select list of an aggregating query: which AST expressions
/// are group keys and which aggregate calls have been collected.
struct AggContext {
    group_exprs: Vec<ast::Expr>,
    group_count: usize,
    aggs: Vec<AggCall>,
    agg_asts: Vec<ast::Expr>,
    /// Scope of the aggregation input (FROM clause).
    input_scope: Scope,
    /// The order the aggregates need their input rows in (`array_agg(x ORDER BY y)`,
    /// `array_agg(DISTINCT x)`): the input is sorted so, and all must agree.
    input_order: Option<Vec<SortKey>>,
}

pub struct Binder<'a> {
    catalog: &'a dyn Catalog,
    /// Parameter types: given by the client or inferred (Unknown until inferred).
    params: Vec<DataType>,
    /// Enclosing scopes (outermost first); the current scope is passed explicitly.
    outer: Vec<Scope>,
    /// How many query levels out the references of the query being bound (its nested
    /// queries included) reach: 0 if it is not correlated.
    escapes: usize,
    /// Common table expressions in scope (innermost last): name, bound relation, columns.
    ctes: Vec<(String, Rel, Vec<ScopeColumn>)>,
}

/// Bind one parsed statement. `param_types` are the client's declared OIDs (0 = infer).
/// Returns the statement and the final parameter types.
pub fn bind(
    stmt: &ParsedStatement,
    catalog: &dyn Catalog,
    param_types: &[u32],
) -> PgResult<(Statement, Vec<DataType>)> {
    let params = param_types
        .iter()
        .map(|&oid| if oid == 0 { Ok(DataType::Unknown) } else { DataType::from_oid(oid).ok_or_else(|| unknown_type_oid(oid)) })
        .collect::<PgResult<Vec<_>>>()?;
    let mut binder = Binder { catalog, params, outer: Vec::new(), escapes: 0, ctes: Vec::new() };
    let bound = match &stmt.parsed {
        Parsed::Ready(s) => s.clone(),
        Parsed::Vacuum { tables, analyze } => {
            let tables = tables.iter().map(|t| binder.table_by_name(&parse_object_name(t))).collect::<PgResult<_>>()?;
            Statement::Vacuum { tables, analyze: *analyze }
        }
        Parsed::Sql(ast) => binder.statement(ast)?,
        Parsed::CopyFrom { table, columns, options } => binder.copy(table, columns, options)?,
    };
    let params = binder.params.into_iter().map(|t| if t == DataType::Unknown { DataType::Text } else { t }).collect();
    Ok((bound, params))
}

fn unknown_type_oid(oid: u32) -> PgError {
    PgError::new(codes::UNDEFINED_OBJECT, format!("type with OID {oid} does not exist"))
}

/// `schema.table` or `table`, unquoting and lower-casing unquoted parts.
fn parse_object_name(s: &str) -> Vec<String> {
    s.split('.')
        .map(|p| if p.starts_with('"') { p.trim_matches('"').to_string() } else { p.to_ascii_lowercase() })
        .collect()
}

/// PostgreSQL folds unquoted identifiers to lower case.
fn ident_name(id: &ast::Ident) -> String {
    if id.quote_style.is_some() {
        id.value.clone()
    } else {
        id.value.to_ascii_lowercase()
    }
}

fn object_name_parts(name: &ast::ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(id) => ident_name(id),
            other => other.to_string(),
        })
        .collect()
}

fn syntax(msg: impl Into<String>) -> PgError {
    PgError::new(codes::SYNTAX_ERROR, msg)
}

fn unsupported(what: impl std::fmt::Display) -> PgError {
    PgError::unsupported(what)
}

fn const_expr(v: Value, ty: DataType) -> Expr {
    Expr::Const(v, ty)
}

fn output_column(name: &str, ty: DataType) -> OutputColumn {
    OutputColumn { name: name.to_string(), ty, table_oid: 0, column_attr: 0 }
}

impl<'a> Binder<'a> {
    fn statement(&mut self, stmt: &ast::Statement) -> PgResult<Statement> {
        use ast::Statement as S;
        match stmt {
            S::Query(q) => Ok(Statement::Query(self.query(q)?)),
            S::Insert(ins) => self.insert(ins),
            S::Update(upd) => self.update(upd),
            S::Delete(del) => self.delete(del),
            S::CreateTable(ct) => self.create_table(ct),
            S::Drop { object_type, if_exists, names, .. } => match object_type {
                ast::ObjectType::Table => Ok(Statement::DropTable {
                    names: names.iter().map(|n| object_name_parts(n).pop().unwrap_or_default()).collect(),
                    if_exists: *if_exists,
                }),
                other => Err(unsupported(format!("DROP {other}"))),
            },
            S::Truncate(t) => {
                let tables = t
                    .table_names
                    .iter()
                    .map(|tn| self.table_by_name(&object_name_parts(&tn.name)))
                    .collect::<PgResult<_>>()?;
                Ok(Statement::Truncate { tables })
            }
            S::AlterTable(at) => self.alter_table(at),
            S::StartTransaction { .. } | S::Commit { .. } | S::Rollback { .. } => {
                Err(syntax(format!("syntax error at or near \"{}\"", stmt.to_string().split_whitespace().nth(1).unwrap_or(""))))
            }
            S::CreateIndex(_) => Err(unsupported("CREATE INDEX")),
            S::CreateView(_) => Err(unsupported("CREATE VIEW")),
            S::CreateDatabase { .. } => Err(unsupported("CREATE DATABASE")),
            S::CreateRole(_) => Err(unsupported("CREATE ROLE")),
            S::CreateSchema { .. } => Err(unsupported("CREATE SCHEMA")),
            S::Explain { .. } => Err(unsupported("EXPLAIN")),
            S::Prepare { .. } | S::Execute { .. } | S::Deallocate { .. } => Err(unsupported("SQL-level PREPARE/EXECUTE")),
            other => {
                let word = other.to_string().split_whitespace().take(2).collect::<Vec<_>>().join(" ");
                Err(unsupported(format!("statement \"{word}\"")))
            }
        }
    }

    // ---------------------------------------------------------------- tables

    fn table_by_name(&self, parts: &[String]) -> PgResult<Arc<TableDef>> {
        let (schema, name) = match parts {
            [name] => (None, name.as_str()),
            [schema, name] => (Some(schema.as_str()), name.as_str()),
            [_, schema, name] => (Some(schema.as_str()), name.as_str()),
            _ => return Err(syntax("improper qualified name (too many dotted names)")),
        };
        self.catalog.table(schema, name).ok_or_else(|| {
            PgError::new(codes::UNDEFINED_TABLE, format!("relation \"{}\" does not exist", parts.join(".")))
        })
    }

    /// Resolve a FROM-clause name to a user table or a system catalog table.
    fn relation(&self, parts: &[String]) -> PgResult<(Rel, Vec<ScopeColumn>, String)> {
        let name = parts.last().cloned().unwrap_or_default();
        let schema = if parts.len() > 1 { Some(parts[parts.len() - 2].as_str()) } else { None };
        if schema.is_none() || schema == Some("pg_catalog") || schema == Some("information_schema") {
            if let Some(sys) = system_table(&name) {
                let cols = system_columns(sys)
                    .iter()
                    .enumerate()
                    .map(|(i, (n, t))| ScopeColumn {
                        qualifier: Some(name.clone()),
                        name: n.to_string(),
                        ty: t.clone(),
                        table_oid: system_table_oid(sys),
                        attnum: i as i16 + 1,
                        merged_away: false,
                        scalar_function: false,
                    })
                    .collect();
                return Ok((Rel::System { table: sys }, cols, name));
            }
        }
        let table = self.table_by_name(parts)?;
        let cols = table
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| ScopeColumn {
                qualifier: Some(table.name.clone()),
                name: c.name.clone(),
                ty: c.ty.to_type(),
                table_oid: table.oid,
                attnum: i as i16 + 1,
                merged_away: false,
                scalar_function: false,
            })
            .collect();
        Ok((Rel::Scan { table, access: Access::Full }, cols, name))
    }

    // ---------------------------------------------------------------- queries

    pub fn query(&mut self, q: &ast::Query) -> PgResult<Query> {
        self.query_in(q, &Scope::default())
    }

    /// Bind a query whose enclosing scope (for correlation) is `enclosing`.
    fn query_in(&mut self, q: &ast::Query, enclosing: &Scope) -> PgResult<Query> {
        self.outer.push(enclosing.clone());
        let was_escaping = std::mem::replace(&mut self.escapes, 0);
        let ctes_before = self.ctes.len();
        let result = match &q.with {
            Some(with) => self.with_clause(with).and_then(|_| self.query_body(q)),
            None => self.query_body(q),
        };
        self.ctes.truncate(ctes_before);
        self.outer.pop();
        // A reference that reaches past this query's enclosing scope makes the
        // enclosing query correlated too.
        let escapes = self.escapes;
        self.escapes = was_escaping.max(escapes.saturating_sub(1));
        let mut query = result?;
        query.correlated = escapes > 0;
        Ok(query)
    }

    /// Bind the CTEs of a WITH clause (at the level of the query that owns it) and put
    /// them in scope. A recursive CTE must be `base UNION [ALL] recursive-term`.
    fn with_clause(&mut self, with: &ast::With) -> PgResult<()> {
        for cte in &with.cte_tables {
            let name = ident_name(&cte.alias.name);
            let col_names: Vec<String> = cte.alias.columns.iter().map(|c| ident_name(&c.name)).collect();
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
                        ty: if c.ty == DataType::Unknown { DataType::Text } else { c.ty.clone() },
                        table_oid: 0,
                        attnum: 0,
                        merged_away: false,
                        scalar_function: false,
                    })
                    .collect())
            };
            let recursive_parts = match cte.query.body.as_ref() {
                ast::SetExpr::SetOperation { left, op: ast::SetOperator::Union, set_quantifier, right }
                    if with.recursive && cte.query.order_by.is_none() && cte.query.limit_clause.is_none() =>
                {
                    Some((left, right, matches!(set_quantifier, ast::SetQuantifier::All)))
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
                            .map(|(i, c)| cast_to(Expr::Column { depth: 0, index: i, ty: c.ty.clone() }, &cols[i].ty))
                            .collect::<PgResult<Vec<_>>>()?;
                        Rel::Project { input: Box::new(base), exprs }
                    } else {
                        base
                    };
                    let work: WorkTableCell = Default::default();
                    let width = cols.len();
                    self.ctes.push((name.clone(), Rel::WorkTable { work: work.clone(), width }, cols.clone()));
                    let rec = self.set_expr(right);
                    self.ctes.pop();
                    let (rec, rec_cols) = rec?;
                    if rec_cols.len() != width {
                        return Err(syntax("each UNION query must have the same number of columns"));
                    }
                    let exprs = rec_cols
                        .iter()
                        .enumerate()
                        .map(|(i, c)| cast_to(Expr::Column { depth: 0, index: i, ty: c.ty.clone() }, &cols[i].ty))
                        .collect::<PgResult<Vec<_>>>()?;
                    let rec = Rel::Project { input: Box::new(rec), exprs };
                    (Rel::RecursiveUnion { base: Box::new(base), recursive: Box::new(rec), all, work }, cols)
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

    fn query_body(&mut self, q: &ast::Query) -> PgResult<Query> {
        crate::unsupported_syntax::query(q)?;
        let order_by: &[ast::OrderByExpr] = match &q.order_by {
            Some(ast::OrderBy { kind: ast::OrderByKind::Expressions(e), .. }) => e,
            Some(_) => return Err(unsupported("ORDER BY ALL")),
            None => &[],
        };
        let (limit, offset) = match &q.limit_clause {
            Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => (limit.clone(), offset.as_ref().map(|o| o.value.clone())),
            Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit.clone()), Some(offset.clone())),
            None => (None, None),
        };
        // FETCH FIRST [n] ROWS ONLY is LIMIT n (n defaults to 1).
        let limit = match &q.fetch {
            Some(fetch) => Some(fetch.quantity.clone().unwrap_or_else(|| ast::Expr::value(ast::Value::Number("1".into(), false)))),
            None => limit,
        };
        let (mut root, mut columns) = match q.body.as_ref() {
            ast::SetExpr::Select(sel) => self.select(sel, order_by)?,
            other => {
                let (rel, cols) = self.set_expr(other)?;
                if order_by.is_empty() {
                    (rel, cols)
                } else {
                    let keys = order_by
                        .iter()
                        .map(|o| self.output_sort_key(o, &cols))
                        .collect::<PgResult<Vec<_>>>()?;
                    (Rel::Sort { input: Box::new(rel), keys }, cols)
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
            let offset = offset.map(|e| self.typed_expr(&e, &empty, &DataType::Int8)).transpose()?;
            root = Rel::Limit { input: Box::new(root), limit, offset };
        }
        for c in &mut columns {
            if c.ty == DataType::Unknown {
                c.ty = DataType::Text;
            }
        }
        Ok(Query { root, columns, correlated: false })
    }

    fn set_expr(&mut self, body: &ast::SetExpr) -> PgResult<(Rel, Vec<OutputColumn>)> {
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
            ast::SetExpr::SetOperation { left, op, set_quantifier, right } => {
                if *op != ast::SetOperator::Union {
                    return Err(unsupported(format!("{op}")));
                }
                if !matches!(set_quantifier, ast::SetQuantifier::All | ast::SetQuantifier::Distinct | ast::SetQuantifier::None) {
                    return Err(unsupported(format!("UNION {set_quantifier}")));
                }
                let (l, lcols) = self.set_expr(left)?;
                let (r, rcols) = self.set_expr(right)?;
                if lcols.len() != rcols.len() {
                    return Err(syntax("each UNION query must have the same number of columns"));
                }
                let all = matches!(set_quantifier, ast::SetQuantifier::All);
                // Unify column types: an unknown/NULL column takes the other side's type.
                let mut cols = lcols.clone();
                let mut rexprs = Vec::new();
                let mut lexprs = Vec::new();
                let mut need_cast = false;
                for (i, (lc, rc)) in lcols.iter().zip(&rcols).enumerate() {
                    let ty = if lc.ty == DataType::Unknown || lc.ty == rc.ty { rc.ty.clone() } else { lc.ty.clone() };
                    let ty = if ty == DataType::Unknown { DataType::Text } else { ty };
                    lexprs.push(cast_to(Expr::Column { depth: 0, index: i, ty: lc.ty.clone() }, &ty)?);
                    rexprs.push(cast_to(Expr::Column { depth: 0, index: i, ty: rc.ty.clone() }, &ty)?);
                    need_cast |= lc.ty != ty || rc.ty != ty;
                    cols[i].ty = ty;
                }
                let (l, r) = if need_cast {
                    (Rel::Project { input: Box::new(l), exprs: lexprs }, Rel::Project { input: Box::new(r), exprs: rexprs })
                } else {
                    (l, r)
                };
                Ok((Rel::Union { left: Box::new(l), right: Box::new(r), all }, cols))
            }
            _ => Err(unsupported("this kind of query")),
        }
    }

    /// A VALUES list as a query: each column takes the first known type of its items.
    fn values(&mut self, values: &ast::Values) -> PgResult<(Rel, Vec<OutputColumn>)> {
        let empty = Scope::default();
        let width = values.rows.first().map(|r| r.content.len()).unwrap_or(0);
        let mut rows = Vec::with_capacity(values.rows.len());
        for row in &values.rows {
            if row.content.len() != width {
                return Err(syntax("VALUES lists must all be the same length"));
            }
            rows.push(row.content.iter().map(|e| self.expr(e, &empty)).collect::<PgResult<Vec<_>>>()?);
        }
        let mut cols = Vec::with_capacity(width);
        for i in 0..width {
            let ty = rows.iter().map(|r| r[i].ty()).find(|t| *t != DataType::Unknown).unwrap_or(DataType::Text);
            for r in rows.iter_mut() {
                let e = std::mem::replace(&mut r[i], Expr::Const(Value::Null, DataType::Unknown));
                r[i] = cast_to(e, &ty)?;
            }
            cols.push(output_column(&format!("column{}", i + 1), ty));
        }
        Ok((Rel::Values { rows }, cols))
    }

    fn from_clause(&mut self, from: &[ast::TableWithJoins]) -> PgResult<(Rel, Scope)> {
        let mut result: Option<(Rel, Scope)> = None;
        for twj in from {
            let (mut rel, mut scope, first_lateral) = self.table_factor(&twj.relation, result.as_ref().map(|r| &r.1))?;
            for join in &twj.joins {
                crate::unsupported_syntax::join(join)?;
                let (kind, constraint) = match &join.join_operator {
                    ast::JoinOperator::Join(c) | ast::JoinOperator::Inner(c) => (JoinKind::Inner, Some(c)),
                    ast::JoinOperator::Left(c) | ast::JoinOperator::LeftOuter(c) => (JoinKind::Left, Some(c)),
                    ast::JoinOperator::CrossJoin(_) => (JoinKind::Inner, None),
                    other => return Err(unsupported(format!("join type {other:?}").split('(').next().unwrap_or("").to_string())),
                };
                let lateral_scope = scope.clone();
                let (right, rscope, lateral) = self.table_factor(&join.relation, Some(&lateral_scope))?;
                let left_width = scope.columns.len();
                let mut joined = scope.clone();
                joined.columns.extend(rscope.columns);
                let mut using_pairs = Vec::new();
                let on = match constraint {
                    Some(ast::JoinConstraint::On(e)) => Some(self.clause_predicate("JOIN/ON", e, &joined)?),
                    Some(ast::JoinConstraint::Using(cols)) => {
                        let mut pred: Option<Expr> = None;
                        for c in cols {
                            let name = object_name_parts(c).pop().unwrap_or_default();
                            let l = using_column(&joined.columns[..left_width], &name, "left")?;
                            let r = left_width + using_column(&joined.columns[left_width..], &name, "right")?;
                            using_pairs.push((l, r));
                            let eq = self.comparison(
                                BinaryOp::Eq,
                                Expr::Column { depth: 0, index: l, ty: joined.columns[l].ty.clone() },
                                Expr::Column { depth: 0, index: r, ty: joined.columns[r].ty.clone() },
                            )?;
                            pred = Some(match pred {
                                Some(p) => Expr::And(Box::new(p), Box::new(eq)),
                                None => eq,
                            });
                        }
                        pred
                    }
                    Some(ast::JoinConstraint::Natural) => return Err(unsupported("NATURAL JOIN")),
                    Some(ast::JoinConstraint::None) | None => None,
                };
                rel = Rel::Join { left: Box::new(rel), right: Box::new(right), kind, on, lateral };
                scope = joined;
                if !using_pairs.is_empty() {
                    (rel, scope) = merge_using_columns(rel, scope, &using_pairs);
                }
            }
            result = Some(match result {
                None => (rel, scope),
                Some((prev, mut pscope)) => {
                    pscope.columns.extend(scope.columns);
                    (Rel::Join { left: Box::new(prev), right: Box::new(rel), kind: JoinKind::Inner, on: None, lateral: first_lateral }, pscope)
                }
            });
        }
        Ok(result.unwrap_or((Rel::Unit, Scope::default())))
    }

    /// One FROM item, and whether it is joined laterally (evaluated for each row to its
    /// left). `left` is the scope to its left, visible to LATERAL subqueries and to the
    /// arguments of functions (implicitly LATERAL, as in PostgreSQL).
    fn table_factor(&mut self, tf: &ast::TableFactor, left: Option<&Scope>) -> PgResult<(Rel, Scope, bool)> {
        crate::unsupported_syntax::table_factor(tf)?;
        let apply_alias = |cols: &mut Vec<ScopeColumn>, alias: &Option<ast::TableAlias>, default: String| {
            let qualifier = alias.as_ref().map(|a| ident_name(&a.name)).unwrap_or(default);
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
            ast::TableFactor::Table { name, alias, args, .. } => {
                let (name, alias) = without_only(name, alias);
                let parts = object_name_parts(&name);
                if let Some(args) = args {
                    return self.table_function(&parts, &args.args, &alias, left);
                }
                if let [single] = parts.as_slice() {
                    if let Some((_, rel, cols)) = self.ctes.iter().rev().find(|(n, _, _)| n == single) {
                        let mut cols = cols.clone();
                        let rel = rel.clone();
                        apply_alias(&mut cols, &alias, single.clone());
                        return Ok((rel, Scope { columns: cols }, false));
                    }
                }
                let (rel, mut cols, default) = self.relation(&parts)?;
                apply_alias(&mut cols, &alias, default);
                Ok((rel, Scope { columns: cols }, false))
            }
            ast::TableFactor::Derived { lateral, subquery, alias, .. } => {
                let enclosing = if *lateral { left.cloned().unwrap_or_default() } else { Scope::default() };
                // A LATERAL subquery sees the left side as its enclosing scope.
                let q = self.query_in(subquery, &enclosing)?;
                let mut cols: Vec<ScopeColumn> = q
                    .columns
                    .iter()
                    .map(|c| ScopeColumn { qualifier: None, name: c.name.clone(), ty: c.ty.clone(), table_oid: 0, attnum: 0, merged_away: false, scalar_function: false })
                    .collect();
                apply_alias(&mut cols, alias, String::new());
                Ok((q.root, Scope { columns: cols }, *lateral))
            }
            ast::TableFactor::Function { name, args, alias, .. } => {
                let args: Vec<ast::FunctionArg> = args.clone();
                self.table_function(&object_name_parts(name), &args, alias, left)
            }
            ast::TableFactor::UNNEST { alias, array_exprs, with_offset: false, with_ordinality: false, .. } if array_exprs.len() == 1 => {
                let args = [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(array_exprs[0].clone()))];
                self.table_function(&["unnest".to_string()], &args, alias, left)
            }
            ast::TableFactor::NestedJoin { table_with_joins, alias } => {
                let (rel, mut scope) = self.from_clause(std::slice::from_ref(table_with_joins))?;
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
    fn table_function(&mut self, parts: &[String], args: &[ast::FunctionArg], alias: &Option<ast::TableAlias>, left: Option<&Scope>) -> PgResult<(Rel, Scope, bool)> {
        let Some(left) = left else {
            return self.function_rel(parts, args, alias).map(|(rel, scope)| (rel, scope, false));
        };
        // Bound as a LATERAL subquery's body is: the left side is the enclosing scope.
        self.outer.push(left.clone());
        let was_escaping = std::mem::replace(&mut self.escapes, 0);
        let result = self.function_rel(parts, args, alias);
        self.outer.pop();
        let escapes = std::mem::replace(&mut self.escapes, was_escaping);
        self.escapes = self.escapes.max(escapes.saturating_sub(1));
        result.map(|(rel, scope)| (rel, scope, escapes > 0))
    }

    fn function_rel(&mut self, parts: &[String], args: &[ast::FunctionArg], alias: &Option<ast::TableAlias>) -> PgResult<(Rel, Scope)> {
        let name = parts.last().map(String::as_str).unwrap_or("");
        if let ("unnest", [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))]) = (name, args) {
            // unnest(array) = SELECT array[i] FROM generate_series(1, cardinality(array)) i
            let arr = self.expr(e, &Scope::default())?;
            let elem = match arr.ty() {
                DataType::Array(t) => *t,
                other => {
                    return Err(PgError::new(
                        codes::UNDEFINED_FUNCTION,
                        format!("function unnest({}) does not exist", other.format_type()),
                    ))
                }
            };
            let stop = Expr::Func { func: ScalarFunc::Cardinality, args: vec![arr.clone()], ty: DataType::Int4 };
            let series = Rel::GenerateSeries { start: const_expr(Value::Int4(1), DataType::Int4), stop, step: None };
            let index = Expr::Column { depth: 0, index: 0, ty: DataType::Int4 };
            let item = Expr::Func { func: ScalarFunc::ArraySubscript, args: vec![arr, index], ty: elem.clone() };
            return Ok((Rel::Project { input: Box::new(series), exprs: vec![item] }, function_scope("unnest", alias, elem)));
        }
        if name != "generate_series" {
            return Err(PgError::new(codes::UNDEFINED_FUNCTION, format!("function {name} does not exist")));
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
            return Err(PgError::new(codes::UNDEFINED_FUNCTION, "function generate_series with these arguments does not exist"));
        }
        let ty = if exprs.iter().any(|e| e.ty() == DataType::Int8) { DataType::Int8 } else { DataType::Int4 };
        let mut it = exprs.into_iter().map(|e| cast_to(e, &ty));
        let start = it.next().unwrap()?;
        let stop = it.next().unwrap()?;
        let step = it.next().transpose()?;
        Ok((Rel::GenerateSeries { start, stop, step }, function_scope("generate_series", alias, ty)))
    }

    fn select(&mut self, sel: &ast::Select, order_by: &[ast::OrderByExpr]) -> PgResult<(Rel, Vec<OutputColumn>)> {
        crate::unsupported_syntax::select(sel)?;
        let (mut rel, scope) = self.from_clause(&sel.from)?;
        if let Some(w) = &sel.selection {
            if contains_aggregate(w) {
                return Err(PgError::new(codes::GROUPING_ERROR, "aggregate functions are not allowed in WHERE"));
            }
            let predicate = self.predicate(w, &scope)?;
            rel = push_filter(rel, predicate);
        }
        let group_by: Vec<ast::Expr> = match &sel.group_by {
            ast::GroupByExpr::Expressions(e, _) => e.clone(),
            ast::GroupByExpr::All(_) => return Err(unsupported("GROUP BY ALL")),
        };
        let aggregating = !group_by.is_empty()
            || sel.having.is_some()
            || sel.projection.iter().any(|p| match p {
                ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => contains_aggregate(e),
                _ => false,
            })
            || order_by.iter().any(|o| contains_aggregate(&o.expr));

        // Expand the select list into (AST expression, output name) pairs.
        let mut items: Vec<(ast::Expr, String, Option<usize>)> = Vec::new();
        for item in &sel.projection {
            match item {
                ast::SelectItem::UnnamedExpr(e) => items.push((e.clone(), default_column_name(e), None)),
                ast::SelectItem::ExprWithAlias { expr, alias } => items.push((expr.clone(), ident_name(alias), None)),
                ast::SelectItem::Wildcard(_) => {
                    if scope.columns.is_empty() {
                        return Err(syntax("SELECT * with no tables specified is not valid"));
                    }
                    for (i, c) in scope.columns.iter().enumerate().filter(|(_, c)| !c.merged_away) {
                        items.push((ast::Expr::Identifier(ast::Ident::new(c.name.clone())), c.name.clone(), Some(i)));
                    }
                }
                ast::SelectItem::QualifiedWildcard(kind, _) => {
                    let q = match kind {
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => object_name_parts(n).pop().unwrap_or_default(),
                        ast::SelectItemQualifiedWildcardKind::Expr(e) => e.to_string(),
                    };
                    let mut hits: Vec<(usize, &ScopeColumn)> =
                        scope.columns.iter().enumerate().filter(|(_, c)| c.qualifier.as_deref() == Some(q.as_str())).collect();
                    // A table's own column order, even where JOIN … USING moved a column.
                    hits.sort_by_key(|(_, c)| c.attnum);
                    for (i, c) in &hits {
                        items.push((ast::Expr::Identifier(ast::Ident::new(c.name.clone())), c.name.clone(), Some(*i)));
                    }
                    if hits.is_empty() {
                        return Err(PgError::new(codes::UNDEFINED_TABLE, format!("missing FROM-clause entry for table \"{q}\"")));
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
                            let i: usize = n.parse().map_err(|_| syntax("invalid GROUP BY position"))?;
                            items.get(i.wrapping_sub(1)).map(|it| it.0.clone()).ok_or_else(|| {
                                PgError::new(codes::INVALID_COLUMN_REFERENCE, format!("GROUP BY position {i} is not in select list"))
                            })?
                        }
                        _ => g.clone(),
                    },
                    ast::Expr::Identifier(id)
                        if !scope.columns.iter().any(|c| c.name == ident_name(id)) =>
                    {
                        items.iter().find(|it| it.1 == ident_name(id)).map(|it| it.0.clone()).unwrap_or_else(|| g.clone())
                    }
                    _ => g.clone(),
                };
                group_exprs.push(resolved);
            }
            Some(AggContext { group_count: group_exprs.len(), group_exprs, aggs: Vec::new(), agg_asts: Vec::new(), input_scope: scope.clone(), input_order: None })
        } else {
            None
        };

        // Bind the select list (and HAVING / ORDER BY) over the FROM scope or the aggregate output.
        let mut exprs = Vec::with_capacity(items.len());
        let mut columns = Vec::with_capacity(items.len());
        for (e, name, wildcard_index) in &items {
            let bound = match (&mut agg_ctx, wildcard_index) {
                (None, Some(i)) => Expr::Column { depth: 0, index: *i, ty: scope.columns[*i].ty.clone() },
                (Some(ctx), _) => self.agg_expr(e, ctx)?,
                (None, None) => self.expr(e, &scope)?,
            };
            let (table_oid, column_attr) = match (agg_ctx.is_none(), &bound) {
                (true, Expr::Column { depth: 0, index, .. }) => (scope.columns[*index].table_oid, scope.columns[*index].attnum),
                _ => (0, 0),
            };
            let ty = bound.ty();
            columns.push(OutputColumn { name: name.clone(), ty, table_oid, column_attr });
            exprs.push(bound);
        }
        let having = match (&mut agg_ctx, &sel.having) {
            (Some(ctx), Some(h)) => {
                let b = self.agg_expr(h, ctx)?;
                Some(cast_to(b, &DataType::Bool)?)
            }
            _ => None,
        };
        // ORDER BY: output names/positions, else expressions appended as hidden columns.
        let mut sort_keys = Vec::new();
        let visible = exprs.len();
        for o in order_by {
            let descending = o.options.sort == Some(ast::OrderBySort::Desc);
            let nulls_first = o.options.nulls_first.unwrap_or(descending);
            let index = match &o.expr {
                ast::Expr::Value(v) if matches!(v.value, ast::Value::Number(..)) => {
                    let ast::Value::Number(n, _) = &v.value else { unreachable!() };
                    let i: usize = n.parse().map_err(|_| syntax("invalid ORDER BY position"))?;
                    if i == 0 || i > visible {
                        return Err(PgError::new(codes::INVALID_COLUMN_REFERENCE, format!("ORDER BY position {i} is not in select list")));
                    }
                    i - 1
                }
                ast::Expr::Identifier(id) if columns.iter().filter(|c| c.name == ident_name(id)).count() == 1
                    && (agg_ctx.is_some() || !scope.columns.iter().any(|c| c.name == ident_name(id)) || items.iter().any(|it| it.1 == ident_name(id))) =>
                {
                    columns.iter().position(|c| c.name == ident_name(id)).unwrap()
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
            sort_keys.push(SortKey { expr: Expr::Column { depth: 0, index, ty: exprs[index].ty() }, descending, nulls_first });
        }

        if let Some(ctx) = agg_ctx {
            let group_by_exprs = ctx
                .group_exprs
                .iter()
                .map(|g| self.expr(g, &ctx.input_scope))
                .collect::<PgResult<Vec<_>>>()?;
            if let Some(keys) = ctx.input_order {
                rel = Rel::Sort { input: Box::new(rel), keys };
            }
            rel = Rel::Aggregate { input: Box::new(rel), group_by: group_by_exprs, aggs: ctx.aggs };
            if let Some(h) = having {
                rel = Rel::Filter { input: Box::new(rel), predicate: h };
            }
        }
        let total = exprs.len();
        rel = Rel::Project { input: Box::new(rel), exprs };
        match &sel.distinct {
            None | Some(ast::Distinct::All) => {}
            Some(ast::Distinct::Distinct) => rel = Rel::Distinct { input: Box::new(rel) },
            Some(ast::Distinct::On(_)) => return Err(unsupported("SELECT DISTINCT ON")),
        }
        if !sort_keys.is_empty() {
            rel = Rel::Sort { input: Box::new(rel), keys: sort_keys };
        }
        if total > visible {
            // Drop the hidden ORDER BY columns.
            let trim = (0..visible).map(|i| Expr::Column { depth: 0, index: i, ty: columns[i].ty.clone() }).collect();
            rel = Rel::Project { input: Box::new(rel), exprs: trim };
        }
        Ok((rel, columns))
    }

    fn output_sort_key(&mut self, o: &ast::OrderByExpr, cols: &[OutputColumn]) -> PgResult<SortKey> {
        let descending = o.options.sort == Some(ast::OrderBySort::Desc);
        let nulls_first = o.options.nulls_first.unwrap_or(descending);
        let index = match &o.expr {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) => n.parse::<usize>().ok().filter(|i| *i >= 1 && *i <= cols.len()).map(|i| i - 1),
                _ => None,
            },
            ast::Expr::Identifier(id) => cols.iter().position(|c| c.name == ident_name(id)),
            _ => None,
        }
        .ok_or_else(|| unsupported("ORDER BY expressions on UNION results other than output columns"))?;
        Ok(SortKey { expr: Expr::Column { depth: 0, index, ty: cols[index].ty.clone() }, descending, nulls_first })
    }

    /// Bind an expression in the output of an aggregation: group keys and aggregate
    /// calls become columns of the Aggregate node's output.
    fn agg_expr(&mut self, e: &ast::Expr, ctx: &mut AggContext) -> PgResult<Expr> {
        if let Some(i) = ctx.group_exprs.iter().position(|g| g == e) {
            let ty = self.expr(e, &ctx.input_scope)?.ty();
            return Ok(Expr::Column { depth: 0, index: i, ty });
        }
        if let ast::Expr::Function(f) = e {
            let name = object_name_parts(&f.name).pop().unwrap_or_default();
            if is_aggregate_name(&name) && f.over.is_none() {
                if let Some(j) = ctx.agg_asts.iter().position(|a| a == e) {
                    return Ok(Expr::Column { depth: 0, index: ctx.group_count + j, ty: ctx.aggs[j].ty.clone() });
                }
                let (call, order) = self.aggregate_call(&name, f, &ctx.input_scope)?;
                match (&ctx.input_order, order) {
                    (_, None) => {}
                    (None, Some(keys)) => ctx.input_order = Some(keys),
                    // Bound expressions compare by their debug form (no PartialEq on plans).
                    (Some(have), Some(keys)) if format!("{have:?}") == format!("{keys:?}") => {}
                    (Some(_), Some(_)) => return Err(unsupported("aggregates that order their input differently in one query")),
                }
                let ty = call.ty.clone();
                ctx.aggs.push(call);
                ctx.agg_asts.push(e.clone());
                return Ok(Expr::Column { depth: 0, index: ctx.group_count + ctx.aggs.len() - 1, ty });
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

    /// An aggregate call and the order it needs its input in, if any.
    fn aggregate_call(&mut self, name: &str, f: &ast::Function, scope: &Scope) -> PgResult<(AggCall, Option<Vec<SortKey>>)> {
        crate::unsupported_syntax::aggregate_call(f)?;
        let (args, distinct) = match &f.args {
            ast::FunctionArguments::List(list) => {
                (list.args.clone(), matches!(list.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct)))
            }
            _ => (Vec::new(), false),
        };
        let filter = match &f.filter {
            Some(w) if contains_aggregate(w) => {
                return Err(PgError::new(codes::GROUPING_ERROR, "aggregate functions are not allowed in FILTER"));
            }
            Some(w) => Some(self.clause_predicate("FILTER", w, scope)?),
            None => None,
        };
        let arg = match args.as_slice() {
            [] | [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)] if name == "count" => None,
            // string_agg(value, delimiter): both go to the aggregate as ARRAY[value, delimiter].
            [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(v)), ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(d))]
                if name == "string_agg" =>
            {
                if contains_aggregate(v) || contains_aggregate(d) {
                    return Err(PgError::new(codes::GROUPING_ERROR, "aggregate function calls cannot be nested"));
                }
                let v = self.expr(v, scope)?;
                let v = self.infer_param(v, &DataType::Text);
                let d = self.expr(d, scope)?;
                let d = self.infer_param(d, &DataType::Text);
                let elements = vec![cast_to(v, &DataType::Text)?, cast_to(d, &DataType::Text)?];
                Some(Expr::Array { elements, ty: DataType::Array(Box::new(DataType::Text)) })
            }
            [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))] => {
                if contains_aggregate(e) {
                    return Err(PgError::new(codes::GROUPING_ERROR, "aggregate function calls cannot be nested"));
                }
                Some(self.expr(e, scope)?)
            }
            _ => return Err(PgError::new(codes::UNDEFINED_FUNCTION, format!("function {name} with these arguments does not exist"))),
        };
        let arg = match arg {
            Some(a) if a.ty() == DataType::Unknown => Some(cast_to(a, &DataType::Text)?),
            other => other,
        };
        let (func, ty) = resolve_aggregate(name, arg.as_ref().map(|a| a.ty()).as_ref()).ok_or_else(|| {
            PgError::new(codes::UNDEFINED_FUNCTION, format!("function {name}({}) does not exist", arg.as_ref().map(|a| a.ty().format_type()).unwrap_or_default()))
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
        let ordered = matches!(func, AggFunc::ArrayAgg | AggFunc::StringAgg);
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
                if contains_aggregate(&o.expr) {
                    return Err(PgError::new(codes::GROUPING_ERROR, "aggregate function calls cannot be nested"));
                }
                let descending = o.options.sort == Some(ast::OrderBySort::Desc);
                let expr = self.expr(&o.expr, scope)?;
                let expr = if expr.ty() == DataType::Unknown { cast_to(expr, &DataType::Text)? } else { expr };
                keys.push(SortKey { expr, descending, nulls_first: o.options.nulls_first.unwrap_or(descending) });
            }
            Some(keys)
        } else if distinct {
            arg.clone().map(|expr| vec![SortKey { expr, descending: false, nulls_first: false }])
        } else {
            None
        };
        Ok((AggCall { func, arg, distinct, filter, ty }, order))
    }

    // ---------------------------------------------------------------- expressions

    fn predicate(&mut self, e: &ast::Expr, scope: &Scope) -> PgResult<Expr> {
        self.clause_predicate("WHERE", e, scope)
    }

    /// A boolean condition of `clause` (WHERE, FILTER…), named in the type error.
    fn clause_predicate(&mut self, clause: &str, e: &ast::Expr, scope: &Scope) -> PgResult<Expr> {
        let b = self.expr(e, scope)?;
        match b.ty() {
            DataType::Bool => Ok(b),
            DataType::Unknown => cast_to(b, &DataType::Bool),
            other => Err(PgError::new(
                codes::DATATYPE_MISMATCH,
                format!("argument of {clause} must be type boolean, not type {}", other.format_type()),
            )),
        }
    }

    /// Bind and coerce to `ty` with assignment rules (INSERT/UPDATE targets).
    fn assign_expr(&mut self, e: &ast::Expr, scope: &Scope, ty: &DataType) -> PgResult<Expr> {
        let b = self.expr_expecting(e, scope, Some(ty))?;
        assign_cast(b, ty)
    }

    /// Bind and coerce to `ty` implicitly (LIMIT, function arguments).
    fn typed_expr(&mut self, e: &ast::Expr, scope: &Scope, ty: &DataType) -> PgResult<Expr> {
        let b = self.expr_expecting(e, scope, Some(ty))?;
        cast_to(b, ty)
    }

    fn expr(&mut self, e: &ast::Expr, scope: &Scope) -> PgResult<Expr> {
        self.expr_expecting(e, scope, None)
    }

    /// Bind with a type hint for parameters and untyped literals.
    fn expr_expecting(&mut self, e: &ast::Expr, scope: &Scope, hint: Option<&DataType>) -> PgResult<Expr> {
        if let ast::Expr::Value(v) = e {
            if let ast::Value::Placeholder(p) = &v.value {
                return self.param(p, hint);
            }
        }
        let mut recurse = |b: &mut Binder, child: &ast::Expr| b.expr(child, scope);
        let bound = self.expr_with(e, scope, &mut recurse)?;
        Ok(bound)
    }

    fn param(&mut self, p: &str, hint: Option<&DataType>) -> PgResult<Expr> {
        let n: usize = p
            .trim_start_matches('$')
            .parse()
            .map_err(|_| syntax(format!("syntax error at or near \"{p}\"")))?;
        if n == 0 || n > 65535 {
            return Err(PgError::new(codes::UNDEFINED_PARAMETER, format!("there is no parameter ${n}")));
        }
        if self.params.len() < n {
            self.params.resize(n, DataType::Unknown);
        }
        if self.params[n - 1] == DataType::Unknown {
            if let Some(h) = hint.filter(|h| **h != DataType::Unknown) {
                self.params[n - 1] = h.clone();
            }
        }
        Ok(Expr::Param { index: n - 1, ty: self.params[n - 1].clone() })
    }

    /// Give an Unknown-typed parameter the type `ty` (inference from context).
    fn infer_param(&mut self, e: Expr, ty: &DataType) -> Expr {
        match e {
            Expr::Param { index, ty: DataType::Unknown } if *ty != DataType::Unknown => {
                self.params[index] = ty.clone();
                Expr::Param { index, ty: ty.clone() }
            }
            other => other,
        }
    }

    fn column_ref(&mut self, parts: &[String], scope: &Scope) -> PgResult<Expr> {
        let (qualifier, name) = match parts {
            [name] => (None, name.as_str()),
            [.., q, name] => (Some(q.as_str()), name.as_str()),
            [] => return Err(syntax("empty column reference")),
        };
        let find = |s: &Scope| -> PgResult<Option<usize>> {
            let mut hits = s.columns.iter().enumerate().filter(|(_, c)| {
                c.name == name && qualifier.map_or(!c.merged_away, |q| c.qualifier.as_deref() == Some(q))
            });
            match (hits.next(), hits.next()) {
                (Some((i, _)), None) => Ok(Some(i)),
                (Some(_), Some(_)) => Err(PgError::new(codes::AMBIGUOUS_COLUMN, format!("column reference \"{name}\" is ambiguous"))),
                (None, _) => Ok(None),
            }
        };
        if let Some(i) = find(scope)? {
            return Ok(Expr::Column { depth: 0, index: i, ty: scope.columns[i].ty.clone() });
        }
        for (d, s) in self.outer.iter().rev().enumerate() {
            if let Some(i) = find(s)? {
                self.escapes = self.escapes.max(d + 1);
                return Ok(Expr::Column { depth: d + 1, index: i, ty: s.columns[i].ty.clone() });
            }
        }
        if qualifier.is_none() {
            if let Some(e) = self.whole_row_ref(name, scope)? {
                return Ok(e);
            }
        }
        if let Some(q) = qualifier {
            let known = scope.columns.iter().chain(self.outer.iter().flat_map(|s| s.columns.iter())).any(|c| c.qualifier.as_deref() == Some(q));
            if !known {
                return Err(PgError::new(codes::UNDEFINED_TABLE, format!("missing FROM-clause entry for table \"{q}\"")));
            }
            return Err(PgError::new(codes::UNDEFINED_COLUMN, format!("column {q}.{name} does not exist")));
        }
        Err(PgError::new(codes::UNDEFINED_COLUMN, format!("column \"{name}\" does not exist")))
    }

    /// A relation's name used as a column (after no column matched, as PostgreSQL
    /// resolves it): a scalar function's value; other relations' row values are refused.
    fn whole_row_ref(&mut self, name: &str, scope: &Scope) -> PgResult<Option<Expr>> {
        for (d, s) in std::iter::once(scope).chain(self.outer.iter().rev()).enumerate() {
            let mut of_relation = s.columns.iter().enumerate().filter(|(_, c)| c.qualifier.as_deref() == Some(name));
            let Some((i, c)) = of_relation.next() else { continue };
            if !c.scalar_function || of_relation.next().is_some() {
                return Err(unsupported(&format!("whole-row reference to \"{name}\"")));
            }
            if d > 0 {
                self.escapes = self.escapes.max(d);
            }
            return Ok(Some(Expr::Column { depth: d, index: i, ty: c.ty.clone() }));
        }
        Ok(None)
    }

    fn comparison(&mut self, op: BinaryOp, l: Expr, r: Expr) -> PgResult<Expr> {
        self.binary(op, l, r)
    }

    fn binary(&mut self, op: BinaryOp, l: Expr, r: Expr) -> PgResult<Expr> {
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
        Ok(Expr::Binary { op, left: Box::new(l), right: Box::new(r), ty: result })
    }

    /// Structural binding; `child` binds sub-expressions (so the aggregate-output binder
    /// can reuse every case here).
    fn expr_with(
        &mut self,
        e: &ast::Expr,
        scope: &Scope,
        child: &mut dyn FnMut(&mut Binder<'a>, &ast::Expr) -> PgResult<Expr>,
    ) -> PgResult<Expr> {
        use ast::Expr as E;
        Ok(match e {
            E::Identifier(_) if is_default_keyword(e) => return Err(syntax("DEFAULT is not allowed in this context")),
            E::Identifier(id) => self.column_ref(&[ident_name(id)], scope)?,
            E::CompoundIdentifier(ids) => self.column_ref(&ids.iter().map(ident_name).collect::<Vec<_>>(), scope)?,
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
            E::CompoundFieldAccess { root, access_chain } => {
                let mut e = child(self, root)?;
                for access in access_chain {
                    let ast::AccessExpr::Subscript(ast::Subscript::Index { index }) = access else {
                        return Err(unsupported(format!("expression \"{access}\"")));
                    };
                    let elem = match e.ty() {
                        DataType::Array(t) => *t,
                        DataType::Int2Vector => DataType::Int2,
                        DataType::OidVector => DataType::Oid,
                        other => {
                            return Err(PgError::new(
                                codes::DATATYPE_MISMATCH,
                                format!("cannot subscript type {} because it does not support subscripting", other.format_type()),
                            ))
                        }
                    };
                    let vector = matches!(e.ty(), DataType::Int2Vector | DataType::OidVector);
                    let i = child(self, index)?;
                    let i = self.infer_param(i, &DataType::Int4);
                    let mut i = cast_to(i, &DataType::Int4)?;
                    if vector {
                        // int2vector / oidvector subscripts start at 0
                        i = self.binary(BinaryOp::Add, i, const_expr(Value::Int4(1), DataType::Int4))?;
                    }
                    e = Expr::Func { func: ScalarFunc::ArraySubscript, args: vec![e, i], ty: elem };
                }
                e
            }
            E::BinaryOp { left, op, right } => {
                use ast::BinaryOperator as B;
                let l = child(self, left)?;
                let r = child(self, right)?;
                let bop = match op {
                    B::And | B::Or => {
                        let l = cast_to(l, &DataType::Bool)?;
                        let r = cast_to(r, &DataType::Bool)?;
                        return Ok(if *op == B::And { Expr::And(Box::new(l), Box::new(r)) } else { Expr::Or(Box::new(l), Box::new(r)) });
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
                    ast::UnaryOperator::Not => Expr::Not(Box::new(cast_to(operand, &DataType::Bool)?)),
                    ast::UnaryOperator::Minus | ast::UnaryOperator::Plus => {
                        let operand = if operand.ty() == DataType::Unknown { cast_to(operand, &DataType::Float8)? } else { operand };
                        let ty = operand.ty();
                        let uop = if *op == ast::UnaryOperator::Minus { UnaryOp::Neg } else { UnaryOp::Plus };
                        Expr::Unary { op: uop, operand: Box::new(operand), ty }
                    }
                    other => return Err(unsupported(format!("operator {other}"))),
                }
            }
            E::IsNull(x) | E::IsNotNull(x) => {
                Expr::IsNull { operand: Box::new(child(self, x)?), negated: matches!(e, E::IsNotNull(_)) }
            }
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
                let Expr::Binary { left, right, .. } = self.binary(BinaryOp::Eq, l, r)? else { unreachable!() };
                Expr::IsDistinctFrom { left, right, negated: matches!(e, E::IsNotDistinctFrom(..)) }
            }
            E::InList { expr, list, negated } => {
                let operand = child(self, expr)?;
                let mut items = Vec::with_capacity(list.len());
                for item in list {
                    let b = child(self, item)?;
                    let Expr::Binary { left, right, .. } = self.binary(BinaryOp::Eq, operand.clone(), b)? else { unreachable!() };
                    items.push((*left, *right));
                }
                let operand = items.first().map(|(l, _)| l.clone()).unwrap_or(operand);
                Expr::InList { operand: Box::new(operand), list: items.into_iter().map(|(_, r)| r).collect(), negated: *negated }
            }
            E::InSubquery { expr, subquery, negated } => {
                let left = child(self, expr)?;
                let plan = self.query_in(subquery, scope)?;
                let sub_ty = plan.columns.first().map(|c| c.ty.clone()).unwrap_or(DataType::Text);
                let left = cast_to(self.infer_param(left, &sub_ty), &sub_ty)?;
                Expr::Subquery { plan: Box::new(plan), kind: SubqueryKind::In { left: Box::new(left), negated: *negated }, ty: DataType::Bool }
            }
            E::Exists { subquery, negated } => {
                let plan = self.query_in(subquery, scope)?;
                let ex = Expr::Subquery { plan: Box::new(plan), kind: SubqueryKind::Exists, ty: DataType::Bool };
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
                Expr::Subquery { plan: Box::new(plan), kind: SubqueryKind::Scalar, ty }
            }
            E::Between { expr, negated, low, high } => {
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
            E::Like { negated, expr, pattern, escape_char, any: false } | E::ILike { negated, expr, pattern, escape_char, any: false } => {
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
            E::AnyOp { left, compare_op, right, .. } | E::AllOp { left, compare_op, right } => {
                let l = child(self, left)?;
                let op = comparison_op(compare_op)?;
                let all = matches!(e, E::AllOp { .. });
                if let E::Subquery(q) = right.as_ref() {
                    let plan = self.query_in(q, scope)?;
                    if plan.columns.len() != 1 {
                        return Err(syntax(if plan.columns.len() > 1 { "subquery has too many columns" } else { "subquery has too few columns" }));
                    }
                    let sub_ty = plan.columns[0].ty.clone();
                    let left = Box::new(cast_to(self.infer_param(l, &sub_ty), &sub_ty)?);
                    // `= ANY` is IN and `<> ALL` is NOT IN, NULLs included: both hashed.
                    let kind = match (op, all) {
                        (BinaryOp::Eq, false) => SubqueryKind::In { left, negated: false },
                        (BinaryOp::NotEq, true) => SubqueryKind::In { left, negated: true },
                        _ => SubqueryKind::Quantified { op, left, all },
                    };
                    return Ok(Expr::Subquery { plan: Box::new(plan), kind, ty: DataType::Bool });
                }
                let arr = child(self, right)?;
                let arr = if arr.ty() == DataType::Unknown {
                    let lt = l.ty();
                    cast_to(arr, &DataType::Array(Box::new(if lt == DataType::Unknown { DataType::Text } else { lt })))?
                } else {
                    arr
                };
                let elem = arr.ty().element().cloned().ok_or_else(|| {
                    PgError::new(codes::WRONG_OBJECT_TYPE, "op ANY/ALL (array) requires array on right side")
                })?;
                let (lt, _, _) = resolve_binary(op, &l.ty(), &elem)?;
                let l = cast_to(l, &lt)?;
                Expr::AnyArray { op, left: Box::new(l), array: Box::new(arr), all }
            }
            E::Cast { kind, format, .. } if !matches!(kind, ast::CastKind::Cast | ast::CastKind::DoubleColon) || format.is_some() => {
                return Err(unsupported(format!("expression \"{e}\"")))
            }
            E::Cast { expr, data_type, .. } => {
                let to = self.data_type(data_type)?;
                let inner = child(self, expr)?;
                self.explicit_cast(inner, &to)?
            }
            E::TypedString(ts) => {
                let to = self.data_type(&ts.data_type)?;
                let lit = self.literal(&ts.value.value, None)?;
                self.explicit_cast(lit, &to)?
            }
            E::Case { operand, conditions, else_result, .. } => {
                let operand = operand.as_ref().map(|o| child(self, o)).transpose()?;
                let mut whens = Vec::with_capacity(conditions.len());
                for cw in conditions {
                    let c = child(self, &cw.condition)?;
                    let c = match &operand {
                        Some(op) => cast_to(c, &op.ty())?,
                        None => cast_to(c, &DataType::Bool)?,
                    };
                    whens.push((c, child(self, &cw.result)?));
                }
                let otherwise = else_result.as_ref().map(|x| child(self, x)).transpose()?;
                let ty = whens
                    .iter()
                    .map(|(_, r)| r.ty())
                    .chain(otherwise.iter().map(Expr::ty))
                    .find(|t| *t != DataType::Unknown)
                    .unwrap_or(DataType::Text);
                let whens = whens.into_iter().map(|(c, r)| Ok((c, cast_to(r, &ty)?))).collect::<PgResult<Vec<_>>>()?;
                let otherwise = otherwise.map(|o| cast_to(o, &ty)).transpose()?.map(Box::new);
                Expr::Case { operand: operand.map(Box::new), whens, otherwise, ty }
            }
            E::Array(arr) => {
                let elems = arr.elem.iter().map(|x| child(self, x)).collect::<PgResult<Vec<_>>>()?;
                let ty = elems.iter().map(Expr::ty).find(|t| *t != DataType::Unknown).unwrap_or(DataType::Text);
                let elements = elems.into_iter().map(|x| cast_to(x, &ty)).collect::<PgResult<Vec<_>>>()?;
                Expr::Array { elements, ty: DataType::Array(Box::new(ty)) }
            }
            E::Function(f) => self.function(f, scope, child)?,
            // sqlparser parses ceil(x) / floor(x) as their own expressions
            E::Ceil { expr, field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime) } => {
                let arg = child(self, expr)?;
                self.call_scalar("ceil", vec![arg])?
            }
            E::Floor { expr, field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime) } => {
                let arg = child(self, expr)?;
                self.call_scalar("floor", vec![arg])?
            }
            E::Substring { expr, substring_from, substring_for, .. } => {
                let mut args = vec![child(self, expr)?];
                args.push(match substring_from {
                    Some(x) => child(self, x)?,
                    None => const_expr(Value::Int4(1), DataType::Int4),
                });
                // A text (or untyped) FROM makes it PostgreSQL's regular-expression form.
                if matches!(args[1].ty(), DataType::Text | DataType::Unknown | DataType::Varchar { .. }) {
                    return Err(unsupported("substring(… FROM pattern)"));
                }
                if let Some(x) = substring_for {
                    args.push(child(self, x)?);
                }
                self.call_scalar("substr", args)?
            }
            E::Trim { expr, trim_where, trim_what, trim_characters } => {
                // trim([BOTH|LEADING|TRAILING] [chars] FROM s) and trim(s, chars)
                let mut args = vec![child(self, expr)?];
                let chars: Vec<&ast::Expr> = trim_what.iter().map(|w| w.as_ref()).chain(trim_characters.iter().flatten()).collect();
                for c in chars {
                    args.push(child(self, c)?);
                }
                self.call_scalar(trim_function(trim_where.as_ref()), args)?
            }
            E::Interval(_) => return Err(unsupported("interval literals")),
            E::Tuple(_) => return Err(unsupported("row constructors")),
            other => return Err(unsupported(format!("expression \"{other}\""))),
        })
    }

    fn explicit_cast(&mut self, inner: Expr, to: &DataType) -> PgResult<Expr> {
        // A numeric string is an OID for every reg* type ('16602'::regclass).
        if matches!(to, DataType::RegClass | DataType::RegType | DataType::RegNamespace | DataType::RegProc) {
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
                let oid = match self.relation(&parts) {
                    Ok((Rel::Scan { table, .. }, _, _)) => table.oid,
                    Ok((Rel::System { table }, _, _)) => system_table_oid(table),
                    _ => {
                        return Err(PgError::new(codes::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist")));
                    }
                };
                return Ok(const_expr(Value::Oid(oid), DataType::RegClass));
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
            if matches!(to, DataType::Text | DataType::Name | DataType::Varchar { .. } | DataType::Bpchar { .. }) {
                let e = Expr::Func { func, args: vec![inner], ty: DataType::Text };
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
                    return Ok(const_expr(Value::Oid(sql_regproc_oid(s)?), DataType::RegProc));
                }
            }
        }
        let inner = self.infer_param(inner, to);
        cast_to_explicit(inner, to)
    }

    fn call_scalar(&mut self, name: &str, args: Vec<Expr>) -> PgResult<Expr> {
        let arg_types: Vec<DataType> = args.iter().map(Expr::ty).collect();
        let (func, want, ty) = resolve_scalar(name, &arg_types)?;
        if func == ScalarFunc::PgTypeof {
            return Ok(const_expr(Value::Oid(arg_types[0].oid()), DataType::RegType));
        }
        let args = args
            .into_iter()
            .zip(want.iter())
            .map(|(a, t)| {
                let a = self.infer_param(a, t);
                cast_to(a, t)
            })
            .collect::<PgResult<Vec<_>>>()?;
        Ok(Expr::Func { func, args, ty })
    }

    fn function(
        &mut self,
        f: &ast::Function,
        scope: &Scope,
        child: &mut dyn FnMut(&mut Binder<'a>, &ast::Expr) -> PgResult<Expr>,
    ) -> PgResult<Expr> {
        let parts = object_name_parts(&f.name);
        let name = parts.last().cloned().unwrap_or_default();
        if f.over.is_some() {
            return Err(unsupported("window functions"));
        }
        if is_aggregate_name(&name) {
            return Err(PgError::new(codes::GROUPING_ERROR, "aggregate functions are not allowed here"));
        }
        let aggregate_clause = crate::unsupported_syntax::scalar_call(f)?;
        if name == "row" && parts.len() == 1 {
            return Err(unsupported("row constructors"));
        }
        let args: Vec<ast::Expr> = match &f.args {
            ast::FunctionArguments::None => {
                return match name.as_str() {
                    "current_timestamp" | "localtimestamp" | "now" => self.call_scalar("now", vec![]),
                    "current_date" => {
                        let now = self.call_scalar("now", vec![])?;
                        cast_to_explicit(now, &DataType::Date)
                    }
                    "current_user" | "session_user" | "user" | "current_role" => self.call_scalar("current_user", vec![]),
                    "current_schema" => self.call_scalar("current_schema", vec![]),
                    "current_catalog" => self.call_scalar("current_database", vec![]),
                    _ => self.call_scalar(&name, vec![]),
                };
            }
            ast::FunctionArguments::Subquery(q) => {
                if name == "array" {
                    let plan = self.query_in(q, scope)?;
                    let elem = plan.columns.first().map(|c| c.ty.clone()).unwrap_or(DataType::Text);
                    return Ok(Expr::Subquery { plan: Box::new(plan), kind: SubqueryKind::Array, ty: DataType::Array(Box::new(elem)) });
                }
                return Err(unsupported(format!("{name}(subquery)")));
            }
            ast::FunctionArguments::List(list) => list
                .args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e.clone()),
                    ast::FunctionArg::Unnamed(_) => Err(syntax(format!("unexpected argument to function {name}"))),
                    _ => Err(unsupported("named function arguments")),
                })
                .collect::<PgResult<_>>()?,
        };
        let bound = args.iter().map(|a| child(self, a)).collect::<PgResult<Vec<_>>>()?;
        let call = match name.as_str() {
            "coalesce" => {
                let ty = bound.iter().map(Expr::ty).find(|t| *t != DataType::Unknown).unwrap_or(DataType::Text);
                let args = bound.into_iter().map(|a| cast_to(a, &ty)).collect::<PgResult<_>>()?;
                Expr::Coalesce { args, ty }
            }
            _ => self.call_scalar(&name, bound)?,
        };
        match aggregate_clause {
            Some(clause) => Err(PgError::new(codes::WRONG_OBJECT_TYPE, format!("{clause} specified, but {name} is not an aggregate function"))),
            None => Ok(call),
        }
    }

    fn literal(&mut self, v: &ast::Value, _hint: Option<&DataType>) -> PgResult<Expr> {
        Ok(match v {
            ast::Value::Number(n, _) => return self.number(n),
            ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => const_expr(Value::Text(s.clone()), DataType::Unknown),
            ast::Value::DollarQuotedString(d) => const_expr(Value::Text(d.value.clone()), DataType::Unknown),
            ast::Value::Boolean(b) => const_expr(Value::Bool(*b), DataType::Bool),
            ast::Value::Null => const_expr(Value::Null, DataType::Unknown),
            ast::Value::Placeholder(p) => return self.param(p, None),
            other => return Err(unsupported(format!("literal {other}"))),
        })
    }

    fn number(&mut self, n: &str) -> PgResult<Expr> {
        if let Ok(i) = n.parse::<i64>() {
            return Ok(match i32::try_from(i) {
                Ok(small) => const_expr(Value::Int4(small), DataType::Int4),
                Err(_) => const_expr(Value::Int8(i), DataType::Int8),
            });
        }
        let v = types::io::from_text(n, &DataType::Numeric { precision_scale: None })?;
        Ok(const_expr(v, DataType::Numeric { precision_scale: None }))
    }

    fn data_type(&self, dt: &ast::DataType) -> PgResult<DataType> {
        let text = dt.to_string();
        let lower = text.to_ascii_lowercase();
        let (array, base) = match lower.strip_suffix("[]") {
            Some(b) => (true, b.to_string()),
            None => (false, lower),
        };
        let (name, mods) = match base.find('(') {
            Some(p) => {
                let mods = base[p + 1..]
                    .trim_end_matches(')')
                    .split(',')
                    .map(|m| m.trim().parse::<i32>().map_err(|_| syntax(format!("invalid type modifier in {text}"))))
                    .collect::<PgResult<Vec<_>>>()?;
                (base[..p].trim().to_string(), mods)
            }
            None => (base.trim().to_string(), Vec::new()),
        };
        let name = name.trim_matches('"').to_string();
        let ty = DataType::from_sql_name(&name, &mods)?;
        Ok(if array { DataType::Array(Box::new(ty)) } else { ty })
    }

    // ---------------------------------------------------------------- DML

    fn returning(&mut self, items: &Option<Vec<ast::SelectItem>>, table: &TableDef, scope: &Scope) -> PgResult<Option<Vec<(Expr, OutputColumn)>>> {
        let Some(items) = items else { return Ok(None) };
        let mut out = Vec::new();
        for item in items {
            match item {
                ast::SelectItem::Wildcard(_) => {
                    for (i, c) in table.columns.iter().enumerate() {
                        let ty = c.ty.to_type();
                        out.push((
                            Expr::Column { depth: 0, index: i, ty: ty.clone() },
                            OutputColumn { name: c.name.clone(), ty, table_oid: table.oid, column_attr: i as i16 + 1 },
                        ));
                    }
                }
                ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                    let name = match item {
                        ast::SelectItem::ExprWithAlias { alias, .. } => ident_name(alias),
                        _ => default_column_name(e),
                    };
                    let b = self.expr(e, scope)?;
                    let (table_oid, column_attr) = match &b {
                        Expr::Column { depth: 0, index, .. } => (table.oid, *index as i16 + 1),
                        _ => (0, 0),
                    };
                    let ty = if b.ty() == DataType::Unknown { DataType::Text } else { b.ty() };
                    out.push((cast_to(b, &ty)?, OutputColumn { name, ty, table_oid, column_attr }));
                }
                _ => return Err(unsupported("this RETURNING item")),
            }
        }
        Ok(Some(out))
    }

    fn table_scope(table: &TableDef, alias: Option<String>) -> Scope {
        Scope {
            columns: table
                .columns
                .iter()
                .enumerate()
                .map(|(i, c)| ScopeColumn {
                    qualifier: Some(alias.clone().unwrap_or_else(|| table.name.clone())),
                    name: c.name.clone(),
                    ty: c.ty.to_type(),
                    table_oid: table.oid,
                    attnum: i as i16 + 1,
                    merged_away: false,
                    scalar_function: false,
                })
                .collect(),
        }
    }

    /// Bind a column's DEFAULT expression (None when it has none: NULL).
    pub fn default_expr(&mut self, table: &TableDef, col: usize) -> PgResult<Option<Expr>> {
        let c = &table.columns[col];
        let Some(text) = &c.default else { return Ok(None) };
        let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
            .try_with_sql(text)
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| PgError::internal(format!("bad stored default {text}: {e}")))?;
        let ty = c.ty.to_type();
        Ok(Some(self.assign_expr(&parsed, &Scope::default(), &ty)?))
    }

    fn insert(&mut self, ins: &ast::Insert) -> PgResult<Statement> {
        crate::unsupported_syntax::insert(ins)?;
        let table_name = match &ins.table {
            ast::TableObject::TableName(n) => object_name_parts(n),
            _ => return Err(unsupported("INSERT into a table function")),
        };
        let table = self.table_by_name(&table_name)?;
        let listed = !ins.columns.is_empty();
        let mut target_cols: Vec<usize> = Vec::with_capacity(table.columns.len());
        if listed {
            for c in &ins.columns {
                let name = object_name_parts(c).pop().unwrap_or_default();
                let i = table.column_index(&name).ok_or_else(|| {
                    PgError::new(codes::UNDEFINED_COLUMN, format!("column \"{name}\" of relation \"{}\" does not exist", table.name))
                })?;
                if target_cols.contains(&i) {
                    return Err(PgError::new(codes::DUPLICATE_COLUMN, format!("column \"{name}\" specified more than once")));
                }
                target_cols.push(i);
            }
        } else {
            target_cols.extend(0..table.columns.len());
        }
        // PostgreSQL: without a column list, a shorter source fills the leading columns
        // and the rest take their defaults; with one, the lengths must match.
        let fit_targets = |target_cols: &mut Vec<usize>, width: usize| -> PgResult<()> {
            if width > target_cols.len() {
                return Err(syntax("INSERT has more expressions than target columns"));
            }
            if width < target_cols.len() && listed {
                return Err(syntax("INSERT has more target columns than expressions"));
            }
            target_cols.truncate(width);
            Ok(())
        };
        let source = match ins.source.as_deref() {
            // INSERT … DEFAULT VALUES
            None => {
                target_cols.clear();
                Rel::Values { rows: vec![vec![]] }
            }
            Some(q) => match q.body.as_ref() {
                ast::SetExpr::Values(values) if q.with.is_none() && q.order_by.is_none() && q.limit_clause.is_none() && q.fetch.is_none() => {
                    crate::unsupported_syntax::query(q)?;
                    crate::unsupported_syntax::values(values)?;
                    fit_targets(&mut target_cols, values.rows.first().map_or(0, |r| r.content.len()))?;
                    self.insert_values(values, &table, &target_cols)?
                }
                _ => {
                    let bound = self.query(q)?;
                    fit_targets(&mut target_cols, bound.columns.len())?;
                    let exprs = bound
                        .columns
                        .iter()
                        .zip(&target_cols)
                        .enumerate()
                        .map(|(i, (c, &col))| assign_cast(Expr::Column { depth: 0, index: i, ty: c.ty.clone() }, &table.columns[col].ty.to_type()))
                        .collect::<PgResult<Vec<_>>>()?;
                    Rel::Project { input: Box::new(bound.root), exprs }
                }
            },
        };
        let source_types = target_cols.iter().map(|&c| table.columns[c].ty.to_type()).collect();
        let targets = self.insert_targets(&table, &target_cols)?;
        let on_conflict_do_nothing = match &ins.on {
            None => false,
            Some(ast::OnInsert::OnConflict(oc)) => {
                if !matches!(oc.action, ast::OnConflictAction::DoNothing) {
                    return Err(unsupported("ON CONFLICT … DO UPDATE"));
                }
                check_conflict_target(&table, oc.conflict_target.as_ref())?;
                true
            }
            Some(_) => return Err(unsupported("ON DUPLICATE KEY UPDATE")),
        };
        let alias = ins.table_alias.as_ref().map(|a| ident_name(&a.alias));
        let scope = Self::table_scope(&table, alias);
        let returning = self.returning(&ins.returning, &table, &scope)?;
        Ok(Statement::Insert(Insert { table, targets, source, source_types, on_conflict_do_nothing, returning }))
    }

    /// For each table column: its position among the source columns `sources` (table
    /// column indexes), else its default.
    fn insert_targets(&mut self, table: &TableDef, sources: &[usize]) -> PgResult<Vec<InsertTarget>> {
        (0..table.columns.len())
            .map(|col| match sources.iter().position(|&c| c == col) {
                Some(pos) => Ok(InsertTarget::Source(pos)),
                None => Ok(InsertTarget::Default(self.default_expr(table, col)?)),
            })
            .collect()
    }

    /// The VALUES rows of an INSERT, each item assigned to its target column; the
    /// `DEFAULT` keyword becomes the column's default (NULL when it has none).
    fn insert_values(&mut self, values: &ast::Values, table: &TableDef, target_cols: &[usize]) -> PgResult<Rel> {
        let empty = Scope::default();
        let mut rows = Vec::with_capacity(values.rows.len());
        for row in &values.rows {
            if row.content.len() != target_cols.len() {
                return Err(syntax("VALUES lists must all be the same length"));
            }
            let mut exprs = Vec::with_capacity(target_cols.len());
            for (e, &col) in row.content.iter().zip(target_cols) {
                let ty = table.columns[col].ty.to_type();
                exprs.push(if is_default_keyword(e) {
                    self.default_expr(table, col)?.unwrap_or(Expr::Const(Value::Null, ty))
                } else {
                    self.assign_expr(e, &empty, &ty)?
                });
            }
            rows.push(exprs);
        }
        Ok(Rel::Values { rows })
    }

    fn dml_target(&self, relation: &ast::TableFactor) -> PgResult<(Arc<TableDef>, Scope)> {
        crate::unsupported_syntax::dml_target(relation)?;
        match relation {
            ast::TableFactor::Table { name, alias, .. } => {
                let (name, alias) = without_only(name, alias);
                let table = self.table_by_name(&object_name_parts(&name))?;
                let scope = Self::table_scope(&table, alias.as_ref().map(|a| ident_name(&a.name)));
                Ok((table, scope))
            }
            _ => Err(unsupported("this UPDATE/DELETE target")),
        }
    }

    fn update(&mut self, upd: &ast::Update) -> PgResult<Statement> {
        crate::unsupported_syntax::update(upd)?;
        let (table, scope) = self.dml_target(&upd.table.relation)?;
        let mut assignments = Vec::new();
        for a in &upd.assignments {
            let name = match &a.target {
                ast::AssignmentTarget::ColumnName(n) => object_name_parts(n).pop().unwrap_or_default(),
                ast::AssignmentTarget::Tuple(_) => return Err(unsupported("multiple-column UPDATE assignments")),
            };
            let idx = table.column_index(&name).ok_or_else(|| {
                PgError::new(codes::UNDEFINED_COLUMN, format!("column \"{name}\" of relation \"{}\" does not exist", table.name))
            })?;
            let ty = table.columns[idx].ty.to_type();
            let value = match &a.value {
                v if is_default_keyword(v) => self.default_expr(&table, idx)?.unwrap_or(Expr::Const(Value::Null, ty.clone())),
                v => self.assign_expr(v, &scope, &ty)?,
            };
            if assignments.iter().any(|(i, _)| *i == idx) {
                return Err(syntax(format!("multiple assignments to same column \"{name}\"")));
            }
            assignments.push((idx, value));
        }
        let filter = upd.selection.as_ref().map(|w| self.predicate(w, &scope)).transpose()?;
        let access = primary_key_access(&table, filter.as_ref());
        let returning = self.returning(&upd.returning, &table, &scope)?;
        Ok(Statement::Update(Update { table, access, filter, assignments, returning }))
    }

    fn delete(&mut self, del: &ast::Delete) -> PgResult<Statement> {
        let from = match &del.from {
            ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
        };
        crate::unsupported_syntax::delete(del)?;
        let (table, scope) = self.dml_target(&from[0].relation)?;
        let filter = del.selection.as_ref().map(|w| self.predicate(w, &scope)).transpose()?;
        let access = primary_key_access(&table, filter.as_ref());
        let returning = self.returning(&del.returning, &table, &scope)?;
        Ok(Statement::Delete(Delete { table, access, filter, returning }))
    }

    // ---------------------------------------------------------------- DDL

    fn create_table(&mut self, ct: &ast::CreateTable) -> PgResult<Statement> {
        crate::unsupported_syntax::create_table(ct)?;
        let name = object_name_parts(&ct.name).pop().unwrap_or_default();
        let mut columns = Vec::new();
        let mut primary_key: Option<Vec<usize>> = None;
        for (i, col) in ct.columns.iter().enumerate() {
            crate::unsupported_syntax::column_def(col)?;
            let ty = self.data_type(&col.data_type)?;
            let mut def = ColumnDef { name: ident_name(&col.name), ty: DataTypeDef::from_type(&ty), not_null: false, default: None };
            if columns.iter().any(|c: &ColumnDef| c.name == def.name) {
                return Err(PgError::new(codes::DUPLICATE_COLUMN, format!("column \"{}\" specified more than once", def.name)));
            }
            for opt in &col.options {
                match &opt.option {
                    ast::ColumnOption::NotNull => def.not_null = true,
                    ast::ColumnOption::Null => def.not_null = false,
                    ast::ColumnOption::Default(e) => {
                        if has_subquery(e) {
                            return Err(PgError::new(codes::FEATURE_NOT_SUPPORTED, "cannot use subquery in DEFAULT expression"));
                        }
                        // Validate now: the default must bind and be assignable.
                        self.assign_expr(e, &Scope::default(), &ty)?;
                        def.default = Some(e.to_string());
                    }
                    ast::ColumnOption::PrimaryKey(_) => {
                        if primary_key.is_some() {
                            return Err(PgError::new(codes::INVALID_TABLE_DEFINITION, format!("multiple primary keys for table \"{name}\" are not allowed")));
                        }
                        primary_key = Some(vec![i]);
                        def.not_null = true;
                    }
                    // Refused by unsupported_syntax::column_def.
                    _ => {}
                }
            }
            columns.push(def);
        }
        for c in &ct.constraints {
            match c {
                ast::TableConstraint::PrimaryKey(pk) => {
                    crate::unsupported_syntax::primary_key(pk)?;
                    if primary_key.is_some() {
                        return Err(PgError::new(codes::INVALID_TABLE_DEFINITION, format!("multiple primary keys for table \"{name}\" are not allowed")));
                    }
                    let cols = pk
                        .columns
                        .iter()
                        .map(|ic| {
                            let n = ic.column.expr.to_string().trim_matches('"').to_ascii_lowercase();
                            columns.iter().position(|c| c.name == n).ok_or_else(|| {
                                PgError::new(codes::UNDEFINED_COLUMN, format!("column \"{n}\" named in key does not exist"))
                            })
                        })
                        .collect::<PgResult<Vec<_>>>()?;
                    for &i in &cols {
                        columns[i].not_null = true;
                    }
                    primary_key = Some(cols);
                }
                ast::TableConstraint::ForeignKey(_) => return Err(unsupported("foreign keys")),
                ast::TableConstraint::Unique(_) => return Err(unsupported("UNIQUE constraints")),
                ast::TableConstraint::Check(_) => return Err(unsupported("CHECK constraints")),
                other => return Err(unsupported(format!("table constraint {other}"))),
            }
        }
        let fillfactor = table_fillfactor(ct)?;
        Ok(Statement::CreateTable(CreateTable { name, if_not_exists: ct.if_not_exists, columns, primary_key, fillfactor }))
    }

    fn alter_table(&mut self, at: &ast::AlterTable) -> PgResult<Statement> {
        let table = self.table_by_name(&object_name_parts(&at.name))?;
        match at.operations.as_slice() {
            [ast::AlterTableOperation::AddConstraint { constraint, not_valid: false }] => match constraint {
                ast::TableConstraint::PrimaryKey(pk) => {
                    crate::unsupported_syntax::primary_key(pk)?;
                    let columns = pk
                        .columns
                        .iter()
                        .map(|ic| {
                            let n = ic.column.expr.to_string().trim_matches('"').to_ascii_lowercase();
                            table.column_index(&n).ok_or_else(|| {
                                PgError::new(codes::UNDEFINED_COLUMN, format!("column \"{n}\" of relation \"{}\" does not exist", table.name))
                            })
                        })
                        .collect::<PgResult<Vec<_>>>()?;
                    let constraint_name = pk.name.as_ref().map(ident_name);
                    Ok(Statement::AddPrimaryKey { table, columns, constraint_name })
                }
                ast::TableConstraint::ForeignKey(_) => Err(unsupported("foreign keys")),
                other => Err(unsupported(format!("ALTER TABLE ADD {other}"))),
            },
            _ => Err(unsupported("this ALTER TABLE form")),
        }
    }

    fn copy(&mut self, table: &str, columns: &[String], options: &[(String, Option<String>)]) -> PgResult<Statement> {
        let table = self.table_by_name(&parse_object_name(table))?;
        let mut fields: Vec<usize> = Vec::with_capacity(table.columns.len());
        if columns.is_empty() {
            fields.extend(0..table.columns.len());
        }
        for n in columns {
            let i = table.column_index(n).ok_or_else(|| {
                PgError::new(codes::UNDEFINED_COLUMN, format!("column \"{n}\" of relation \"{}\" does not exist", table.name))
            })?;
            if fields.contains(&i) {
                return Err(PgError::new(codes::DUPLICATE_COLUMN, format!("column \"{n}\" specified more than once")));
            }
            fields.push(i);
        }
        let targets = self.insert_targets(&table, &fields)?;
        let mut copy = CopyFrom { table, fields: fields.len(), targets, delimiter: b'\t', null_string: "\\N".into(), csv: false, header: false };
        let mut delimiter = None;
        let mut null_string = None;
        for (name, value) in options {
            let v = value.as_deref().unwrap_or("");
            match name.as_str() {
                "format" => match v.to_ascii_lowercase().as_str() {
                    "text" => {}
                    "csv" => copy.csv = true,
                    other => return Err(unsupported(format!("COPY format \"{other}\""))),
                },
                "csv" => copy.csv = true,
                "freeze" => {}
                "delimiter" => {
                    if v.len() != 1 {
                        return Err(PgError::new(codes::FEATURE_NOT_SUPPORTED, "COPY delimiter must be a single one-byte character"));
                    }
                    delimiter = Some(v.as_bytes()[0]);
                }
                "null" => null_string = Some(v.to_string()),
                "header" => copy.header = !matches!(v.to_ascii_lowercase().as_str(), "false" | "off" | "0"),
                "encoding" if v.eq_ignore_ascii_case("utf8") || v.eq_ignore_ascii_case("utf-8") => {}
                other => return Err(unsupported(format!("COPY option \"{other}\""))),
            }
        }
        if copy.csv {
            copy.delimiter = b',';
            copy.null_string = String::new();
        }
        if let Some(d) = delimiter {
            copy.delimiter = d;
        }
        if let Some(n) = null_string {
            copy.null_string = n;
        }
        Ok(Statement::CopyFrom(copy))
    }
}

/// The position of the USING column `name` among one side's columns (42703 if absent,
/// 42702 if that side has it twice, as PostgreSQL).
fn using_column(side: &[ScopeColumn], name: &str, which: &str) -> PgResult<usize> {
    let mut hits = side.iter().enumerate().filter(|(_, c)| c.name == name && !c.merged_away);
    match (hits.next(), hits.next()) {
        (Some((i, _)), None) => Ok(i),
        (Some(_), Some(_)) => Err(PgError::new(
            codes::AMBIGUOUS_COLUMN,
            format!("common column name \"{name}\" appears more than once in {which} table"),
        )),
        (None, _) => Err(PgError::new(codes::UNDEFINED_COLUMN, format!("column \"{name}\" specified in USING clause does not exist in {which} table"))),
    }
}

/// PostgreSQL's column order after `JOIN … USING`: the USING columns (the left side's
/// copies) first, then the rest of the left side, then the right side with its copies of
/// the USING columns merged away.
fn merge_using_columns(rel: Rel, scope: Scope, pairs: &[(usize, usize)]) -> (Rel, Scope) {
    let lefts: Vec<usize> = pairs.iter().map(|&(l, _)| l).collect();
    let mut rights: Vec<usize> = pairs.iter().map(|&(_, r)| r).collect();
    rights.sort_unstable();
    let mut order: Vec<usize> = lefts.clone();
    order.extend((0..scope.columns.len()).filter(|i| !lefts.contains(i) && !rights.contains(i)));
    // The right copies go among the right side's columns, keeping `b.*` in b's order.
    for &r in &rights {
        let at = order.iter().position(|&i| i > r && !lefts.contains(&i)).unwrap_or(order.len());
        order.insert(at, r);
    }
    let exprs = order.iter().map(|&i| Expr::Column { depth: 0, index: i, ty: scope.columns[i].ty.clone() }).collect();
    let columns = order
        .iter()
        .map(|&i| ScopeColumn { merged_away: scope.columns[i].merged_away || rights.contains(&i), ..scope.columns[i].clone() })
        .collect();
    (Rel::Project { input: Box::new(rel), exprs }, Scope { columns })
}

/// The function behind `trim([BOTH | LEADING | TRAILING] …)`.
fn trim_function(side: Option<&ast::TrimWhereField>) -> &'static str {
    match side {
        Some(ast::TrimWhereField::Leading) => "ltrim",
        Some(ast::TrimWhereField::Trailing) => "rtrim",
        Some(ast::TrimWhereField::Both) | None => "btrim",
    }
}

/// `ONLY t [alias]`: sqlparser reads it as table `only` with alias `t`. ONLY excludes
/// inheritance children, which Meridian tables never have, so it names `t` itself.
fn without_only(name: &ast::ObjectName, alias: &Option<ast::TableAlias>) -> (ast::ObjectName, Option<ast::TableAlias>) {
    match (name.0.as_slice(), alias) {
        ([ast::ObjectNamePart::Identifier(only)], Some(a))
            if only.quote_style.is_none() && only.value.eq_ignore_ascii_case("only") && !a.explicit && a.columns.is_empty() =>
        {
            (ast::ObjectName(vec![ast::ObjectNamePart::Identifier(a.name.clone())]), None)
        }
        _ => (name.clone(), alias.clone()),
    }
}

/// The `DEFAULT` keyword where a value is expected (sqlparser reads it as an identifier).
fn is_default_keyword(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}

/// `ON CONFLICT (cols)` / `ON CONFLICT ON CONSTRAINT name` must name the primary key,
/// the only unique constraint a Meridian table has; PostgreSQL's errors otherwise.
fn check_conflict_target(table: &TableDef, target: Option<&ast::ConflictTarget>) -> PgResult<()> {
    let pk = table.primary_key.as_deref().unwrap_or(&[]);
    match target {
        None => Ok(()),
        Some(ast::ConflictTarget::Columns(cols)) => {
            let mut named = Vec::with_capacity(cols.len());
            for c in cols {
                let name = ident_name(c);
                let i = table
                    .column_index(&name)
                    .ok_or_else(|| PgError::new(codes::UNDEFINED_COLUMN, format!("column \"{name}\" does not exist")))?;
                named.push(i);
            }
            if !pk.is_empty() && pk.iter().all(|c| named.contains(c)) && named.iter().all(|c| pk.contains(c)) {
                Ok(())
            } else {
                Err(PgError::new(codes::INVALID_COLUMN_REFERENCE, "there is no unique or exclusion constraint matching the ON CONFLICT specification"))
            }
        }
        Some(ast::ConflictTarget::OnConstraint(name)) => {
            let name = object_name_parts(name).pop().unwrap_or_default();
            if !pk.is_empty() && table.pk_name.as_deref() == Some(name.as_str()) {
                Ok(())
            } else {
                Err(PgError::new(codes::UNDEFINED_OBJECT, format!("constraint \"{name}\" for table \"{}\" does not exist", table.name)))
            }
        }
    }
}

/// The one column of a table function in FROM: named by the alias's column list, else
/// the alias, else the function (as PostgreSQL does).
fn function_scope(function: &str, alias: &Option<ast::TableAlias>, ty: DataType) -> Scope {
    let name = alias
        .as_ref()
        .map(|a| a.columns.first().map(|c| ident_name(&c.name)).unwrap_or_else(|| ident_name(&a.name)))
        .unwrap_or_else(|| function.to_string());
    let qualifier = alias.as_ref().map(|a| ident_name(&a.name)).unwrap_or_else(|| function.to_string());
    Scope { columns: vec![ScopeColumn { qualifier: Some(qualifier), name, ty, table_oid: 0, attnum: 0, merged_away: false, scalar_function: true }] }
}

/// The storage parameters of `WITH (…)`: fillfactor is kept; the others (autovacuum
/// and TOAST tuning) only steer PostgreSQL's maintenance and change no result.
fn table_fillfactor(ct: &ast::CreateTable) -> PgResult<Option<u32>> {
    let ast::CreateTableOptions::With(options) = &ct.table_options else { return Ok(None) };
    let mut fillfactor = None;
    for option in options {
        let ast::SqlOption::KeyValue { key, value } = option else {
            return Err(syntax(format!("syntax error at or near \"{option}\"")));
        };
        let name = ident_name(key);
        if name == "fillfactor" {
            let ff = value.to_string().parse::<u32>().map_err(|_| {
                PgError::new(codes::INVALID_PARAMETER_VALUE, format!("invalid value for integer option \"fillfactor\": {value}"))
            })?;
            if !(10..=100).contains(&ff) {
                return Err(PgError::new(codes::INVALID_PARAMETER_VALUE, format!("value {ff} out of bounds for option \"fillfactor\"")).with_detail("Valid values are between \"10\" and \"100\"."));
            }
            fillfactor = Some(ff);
        } else if !(name.starts_with("autovacuum_") || name.starts_with("toast.") || matches!(name.as_str(), "toast_tuple_target" | "parallel_workers" | "vacuum_index_cleanup" | "vacuum_truncate" | "user_catalog_table")) {
            return Err(PgError::new(codes::INVALID_PARAMETER_VALUE, format!("unrecognized parameter \"{name}\"")));
        }
    }
    Ok(fillfactor)
}

fn comparison_op(op: &ast::BinaryOperator) -> PgResult<BinaryOp> {
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

/// Cast with implicit-coercion rules; Unknown literals convert to anything.
pub fn cast_to(e: Expr, to: &DataType) -> PgResult<Expr> {
    cast_with(e, to, false)
}

fn cast_with(e: Expr, to: &DataType, assignment: bool) -> PgResult<Expr> {
    let from = e.ty();
    if from == *to || *to == DataType::Unknown {
        return Ok(e);
    }
    if from == DataType::Unknown {
        // Untyped literal: convert now (errors surface as PostgreSQL's input errors).
        return Ok(match e {
            Expr::Const(Value::Null, _) => Expr::Const(Value::Null, to.clone()),
            Expr::Const(Value::Text(s), _) => Expr::Const(types::io::from_text(&s, to)?, to.clone()),
            other => Expr::Cast { operand: Box::new(other), from: DataType::Text, to: to.clone(), explicit: false },
        });
    }
    let ok = if assignment { types::cast::can_assign(&from, to) } else { types::cast::can_coerce_implicitly(&from, to) };
    if !ok {
        return Err(PgError::new(
            codes::DATATYPE_MISMATCH,
            if assignment {
                format!("column is of type {} but expression is of type {}", to.format_type(), from.format_type())
            } else {
                format!("cannot cast type {} to {}", from.format_type(), to.format_type())
            },
        )
        .with_hint("You will need to rewrite or cast the expression."));
    }
    fold(Expr::Cast { operand: Box::new(e), from, to: to.clone(), explicit: false })
}

fn assign_cast(e: Expr, to: &DataType) -> PgResult<Expr> {
    cast_with(e, to, true)
}

/// OIDs of the few built-in functions clients name as regproc literals.
fn sql_regproc_oid(name: &str) -> PgResult<u32> {
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
        _ => return Err(PgError::new(codes::UNDEFINED_FUNCTION, format!("function \"{name}\" does not exist"))),
    })
}

fn cast_to_explicit(e: Expr, to: &DataType) -> PgResult<Expr> {
    let from = e.ty();
    if from == *to {
        return Ok(e);
    }
    match e {
        Expr::Const(Value::Null, _) => Ok(Expr::Const(Value::Null, to.clone())),
        Expr::Const(Value::Text(s), DataType::Unknown) => Ok(Expr::Const(types::io::from_text(&s, to)?, to.clone())),
        other => {
            let from = if from == DataType::Unknown { DataType::Text } else { from };
            fold(Expr::Cast { operand: Box::new(other), from, to: to.clone(), explicit: true })
        }
    }
}

/// Evaluate casts of constants at bind time.
fn fold(e: Expr) -> PgResult<Expr> {
    if let Expr::Cast { operand, from, to, explicit } = &e {
        if let Expr::Const(v, _) = operand.as_ref() {
            if v.is_null() {
                return Ok(Expr::Const(Value::Null, to.clone()));
            }
            return Ok(Expr::Const(types::cast::cast(v.clone(), from, to, *explicit)?, to.clone()));
        }
    }
    Ok(e)
}

/// Push a filter into a plain scan so that primary-key equality can use point access.
fn push_filter(rel: Rel, predicate: Expr) -> Rel {
    match rel {
        Rel::Scan { table, access: Access::Full } => {
            let access = primary_key_access(&table, Some(&predicate));
            Rel::Filter { input: Box::new(Rel::Scan { table, access }), predicate }
        }
        other => Rel::Filter { input: Box::new(other), predicate },
    }
}

/// If the conjuncts of `filter` pin every primary-key column to a row-independent value,
/// the row can be fetched by key; bounds on a single-column key give a key range. The
/// filter is still applied to the rows fetched.
pub fn primary_key_access(table: &TableDef, filter: Option<&Expr>) -> Access {
    let (Some(pk), Some(filter)) = (&table.primary_key, filter) else { return Access::Full };
    let mut conjuncts = Vec::new();
    collect_conjuncts(filter, &mut conjuncts);
    // (op, value) with the key column on the left.
    let comparisons = |col: usize| -> Vec<(BinaryOp, Expr)> {
        conjuncts
            .iter()
            .filter_map(|c| match c {
                Expr::Binary { op, left, right, .. } => match (left.as_ref(), right.as_ref()) {
                    (Expr::Column { depth: 0, index, .. }, other) if *index == col && row_independent(other) => Some((*op, other.clone())),
                    (other, Expr::Column { depth: 0, index, .. }) if *index == col && row_independent(other) => {
                        let flipped = match op {
                            BinaryOp::Lt => BinaryOp::Gt,
                            BinaryOp::LtEq => BinaryOp::GtEq,
                            BinaryOp::Gt => BinaryOp::Lt,
                            BinaryOp::GtEq => BinaryOp::LtEq,
                            other => *other,
                        };
                        Some((flipped, other.clone()))
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
    let mut key = Vec::with_capacity(pk.len());
    for &col in pk {
        match comparisons(col).into_iter().find(|(op, _)| *op == BinaryOp::Eq) {
            Some((_, e)) => key.push(e),
            None => break,
        }
    }
    if key.len() == pk.len() {
        return Access::PrimaryKey(key);
    }
    if pk.len() != 1 {
        return Access::Full;
    }
    let (mut lower, mut upper) = (None, None);
    for (op, value) in comparisons(pk[0]) {
        match op {
            BinaryOp::Gt | BinaryOp::GtEq if lower.is_none() => lower = Some(KeyBound { value, inclusive: op == BinaryOp::GtEq }),
            BinaryOp::Lt | BinaryOp::LtEq if upper.is_none() => upper = Some(KeyBound { value, inclusive: op == BinaryOp::LtEq }),
            _ => {}
        }
    }
    if lower.is_none() && upper.is_none() {
        Access::Full
    } else {
        Access::KeyRange { lower, upper }
    }
}

fn collect_conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::And(a, b) => {
            collect_conjuncts(a, out);
            collect_conjuncts(b, out);
        }
        other => out.push(other),
    }
}

/// An expression that does not read the current row (constants, parameters, casts of them).
fn row_independent(e: &Expr) -> bool {
    match e {
        // An enclosing query's column is fixed while this scan runs (a correlated
        // subquery's key lookup), and so is an uncorrelated scalar subquery.
        Expr::Const(..) | Expr::Param { .. } | Expr::Column { depth: 1.., .. } => true,
        Expr::Subquery { plan, kind: SubqueryKind::Scalar, .. } => !plan.correlated,
        Expr::Cast { operand, .. } => row_independent(operand),
        Expr::Binary { left, right, .. } => row_independent(left) && row_independent(right),
        Expr::Unary { operand, .. } => row_independent(operand),
        _ => false,
    }
}

/// Whether an expression holds a subquery anywhere.
fn has_subquery(e: &ast::Expr) -> bool {
    struct Finder;
    impl sqlparser::ast::Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _q: &ast::Query) -> std::ops::ControlFlow<()> {
            std::ops::ControlFlow::Break(())
        }
    }
    sqlparser::ast::Visit::visit(e, &mut Finder).is_break()
}

fn is_aggregate_name(name: &str) -> bool {
    resolve_aggregate(name, None).is_some() || matches!(name, "sum" | "avg" | "min" | "max")
}

fn contains_aggregate(e: &ast::Expr) -> bool {
    let s = format!("{e}").to_ascii_lowercase();
    // Cheap pre-check, then a structural walk.
    if !["count(", "sum(", "min(", "max(", "avg(", "bool_and(", "bool_or(", "every(", "array_agg(", "string_agg("]
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
    let mut finder = Finder { depth: 0, found: false };
    let _ = sqlparser::ast::Visit::visit(e, &mut finder);
    finder.found
}

/// PostgreSQL's default output column name for an expression ("?column?" when none).
fn default_column_name(e: &ast::Expr) -> String {
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
        ast::Expr::Ceil { .. } => "ceil".into(),
        ast::Expr::Floor { .. } => "floor".into(),
        ast::Expr::Cast { expr, data_type, .. } => match expr.as_ref() {
            // PostgreSQL: a cast of a constant or of another cast is named after the outer type.
            ast::Expr::Value(_) | ast::Expr::Cast { .. } => type_column_name(data_type),
            ast::Expr::Nested(n) if matches!(n.as_ref(), ast::Expr::Value(_) | ast::Expr::Cast { .. }) => type_column_name(data_type),
            inner => {
                let n = default_column_name(inner);
                if n == "?column?" {
                    type_column_name(data_type)
                } else {
                    n
                }
            }
        },
        ast::Expr::Nested(inner) | ast::Expr::Collate { expr: inner, .. } => default_column_name(inner),
        ast::Expr::CompoundFieldAccess { root, access_chain } => match access_chain.last() {
            Some(ast::AccessExpr::Dot(ast::Expr::Identifier(id))) => ident_name(id),
            _ => default_column_name(root),
        },
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
        ast::Expr::Substring { .. } => "substring".into(),
        ast::Expr::Trim { trim_where, .. } => trim_function(trim_where.as_ref()).into(),
        _ => "?column?".into(),
    }
}

fn type_column_name(dt: &ast::DataType) -> String {
    let s = dt.to_string().to_ascii_lowercase();
    let base = s.split('(').next().unwrap_or("").trim().trim_start_matches("pg_catalog.").to_string();
    match DataType::from_sql_name(&base, &[]) {
        Ok(t) => t.type_name().to_string(),
        Err(_) => base,
    }
}
