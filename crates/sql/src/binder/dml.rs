//! INSERT, UPDATE and DELETE: targets, defaults, VALUES, ON CONFLICT, RETURNING.

use super::*;
use crate::acl::{self, Object};

impl<'a> Binder<'a> {
    pub(super) fn returning(
        &mut self,
        items: &Option<Vec<ast::SelectItem>>,
        table: &TableDef,
        scope: &Scope,
    ) -> PgResult<Option<Vec<(Expr, OutputColumn)>>> {
        let Some(items) = items else { return Ok(None) };
        let mut out = Vec::new();
        for item in items {
            match item {
                ast::SelectItem::Wildcard(_) => {
                    for (i, c) in table.columns.iter().enumerate() {
                        let ty = c.ty.to_type();
                        out.push((
                            Expr::Column {
                                depth: 0,
                                index: i,
                                ty: ty.clone(),
                            },
                            OutputColumn {
                                name: c.name.clone(),
                                ty,
                                table_oid: table.oid,
                                column_attr: i as i16 + 1,
                            },
                        ));
                    }
                }
                ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                    let name = match item {
                        ast::SelectItem::ExprWithAlias { alias, .. } => ident_name(alias),
                        _ => default_column_name(e),
                    };
                    let b = self.expr(e, scope)?;
                    let (table_oid, column_attr) = match &b {
                        Expr::Column {
                            depth: 0, index, ..
                        } => (table.oid, *index as i16 + 1),
                        _ => (0, 0),
                    };
                    let ty = if b.ty() == DataType::Unknown {
                        DataType::Text
                    } else {
                        b.ty()
                    };
                    out.push((
                        cast_to(b, &ty)?,
                        OutputColumn {
                            name,
                            ty,
                            table_oid,
                            column_attr,
                        },
                    ));
                }
                _ => return Err(unsupported("this RETURNING item")),
            }
        }
        Ok(Some(out))
    }

    pub(super) fn table_scope(table: &TableDef, alias: Option<String>) -> Scope {
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
                    system: false,
                })
                .collect(),
        }
    }

    /// Bind a column's DEFAULT expression (None when it has none: NULL).
    pub fn default_expr(&mut self, table: &TableDef, col: usize) -> PgResult<Option<Expr>> {
        let c = &table.columns[col];
        let Some(text) = &c.default else {
            return Ok(None);
        };
        let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
            .try_with_sql(text)
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| PgError::internal(format!("bad stored default {text}: {e}")))?;
        let ty = c.ty.to_type();
        Ok(Some(self.assign_expr(&parsed, &Scope::default(), &ty)?))
    }

    pub(super) fn insert(&mut self, ins: &ast::Insert) -> PgResult<Statement> {
        crate::unsupported_syntax::insert(ins)?;
        let table_name = match &ins.table {
            ast::TableObject::TableName(n) => object_name_parts(n),
            _ => return Err(unsupported("INSERT into a table function")),
        };
        let table = self.table_by_name(&table_name)?;
        self.require(Object::Table(table.clone()), acl::INSERT);
        let listed = !ins.columns.is_empty();
        let mut target_cols: Vec<usize> = Vec::with_capacity(table.columns.len());
        if listed {
            for c in &ins.columns {
                let name = object_name_parts(c).pop().unwrap_or_default();
                let i = table.column_index(&name).ok_or_else(|| {
                    PgError::new(
                        codes::UNDEFINED_COLUMN,
                        format!(
                            "column \"{name}\" of relation \"{}\" does not exist",
                            table.name
                        ),
                    )
                })?;
                if target_cols.contains(&i) {
                    return Err(PgError::new(
                        codes::DUPLICATE_COLUMN,
                        format!("column \"{name}\" specified more than once"),
                    ));
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
                ast::SetExpr::Values(values)
                    if q.with.is_none()
                        && q.order_by.is_none()
                        && q.limit_clause.is_none()
                        && q.fetch.is_none() =>
                {
                    crate::unsupported_syntax::query(q)?;
                    crate::unsupported_syntax::values(values)?;
                    fit_targets(
                        &mut target_cols,
                        values.rows.first().map_or(0, |r| r.content.len()),
                    )?;
                    self.insert_values(values, &table, &target_cols)?
                }
                _ => {
                    let bound = self.query(q)?;
                    fit_targets(&mut target_cols, bound.columns.len())?;
                    self.check_generated_always(&table, target_cols.iter().copied())?;
                    let exprs = bound
                        .columns
                        .iter()
                        .zip(&target_cols)
                        .enumerate()
                        .map(|(i, (c, &col))| {
                            let column = Expr::Column {
                                depth: 0,
                                index: i,
                                ty: c.ty.clone(),
                            };
                            let ty = table.columns[col].ty.to_type();
                            match assign_cast(column.clone(), &ty) {
                                // a string literal of the select list is read as the
                                // column's type, as PostgreSQL resolves an unknown there
                                Err(_) if string_literal_item(q, i) => {
                                    cast_to_explicit(column, &ty)
                                }
                                cast => cast,
                            }
                        })
                        .collect::<PgResult<Vec<_>>>()?;
                    Rel::Project {
                        input: Box::new(bound.root),
                        exprs,
                    }
                }
            },
        };
        let source_types = target_cols
            .iter()
            .map(|&c| table.columns[c].ty.to_type())
            .collect();
        let targets = self.insert_targets(&table, &target_cols)?;
        let alias = ins.table_alias.as_ref().map(|a| ident_name(&a.alias));
        let scope = Self::table_scope(&table, alias);
        let mut arbiter = Arbiter::AnyUnique;
        let (on_conflict_do_nothing, on_conflict_update) = match &ins.on {
            None => (false, None),
            Some(ast::OnInsert::OnConflict(oc)) => {
                arbiter = conflict_arbiter(&table, oc.conflict_target.as_ref())?;
                match &oc.action {
                    ast::OnConflictAction::DoNothing => (true, None),
                    ast::OnConflictAction::DoUpdate(du) => {
                        if oc.conflict_target.is_none() {
                            return Err(syntax(
                                "ON CONFLICT DO UPDATE requires inference specification or constraint name",
                            )
                            .with_hint("For example, ON CONFLICT (column_name)."));
                        }
                        (
                            false,
                            Some(Box::new(self.conflict_update(&table, &scope, du)?)),
                        )
                    }
                }
            }
            Some(_) => return Err(unsupported("ON DUPLICATE KEY UPDATE")),
        };
        let returning = self.returning(&ins.returning, &table, &scope)?;
        if let Some(u) = &on_conflict_update {
            let values = u.assignments.iter().map(|(_, e)| e).chain(&u.filter);
            let read = reads_columns(values, table.columns.len());
            self.require(
                Object::Table(table.clone()),
                acl::UPDATE | if read { acl::SELECT } else { 0 },
            );
        }
        if reads_columns(returned(&returning), table.columns.len()) {
            self.require(Object::Table(table.clone()), acl::SELECT);
        }
        let checks = self.table_checks(&table)?;
        let all: Vec<usize> = (0..table.columns.len()).collect();
        let updated: Option<Vec<usize>> = on_conflict_update
            .as_ref()
            .map(|u| u.assignments.iter().map(|(c, _)| *c).collect());
        let foreign_keys = self.foreign_keys(
            &table,
            Some(&all),
            updated.as_deref().map(|u| (false, Some(u))),
        )?;
        Ok(Statement::Insert(Box::new(Insert {
            checks,
            foreign_keys,
            table,
            targets,
            source,
            source_types,
            on_conflict_do_nothing,
            on_conflict_update,
            arbiter,
            returning,
        })))
    }

    /// For each table column: its position among the source columns `sources` (table
    /// column indexes), else its default.
    pub(super) fn insert_targets(
        &mut self,
        table: &TableDef,
        sources: &[usize],
    ) -> PgResult<Vec<InsertTarget>> {
        (0..table.columns.len())
            .map(|col| match sources.iter().position(|&c| c == col) {
                Some(pos) => Ok(InsertTarget::Source(pos)),
                None => Ok(InsertTarget::Default(self.default_expr(table, col)?)),
            })
            .collect()
    }

    /// The VALUES rows of an INSERT, each item assigned to its target column; the
    /// `DEFAULT` keyword becomes the column's default (NULL when it has none).
    pub(super) fn insert_values(
        &mut self,
        values: &ast::Values,
        table: &TableDef,
        target_cols: &[usize],
    ) -> PgResult<Rel> {
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
                    self.default_expr(table, col)?
                        .unwrap_or(Expr::Const(Value::Null, ty))
                } else {
                    self.check_generated_always(table, [col])?;
                    self.assign_expr(e, &empty, &ty)?
                });
            }
            rows.push(exprs);
        }
        Ok(Rel::Values { rows })
    }

    pub(super) fn dml_target(
        &self,
        relation: &ast::TableFactor,
    ) -> PgResult<(Arc<TableDef>, Scope)> {
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

    pub(super) fn update(&mut self, upd: &ast::Update) -> PgResult<Statement> {
        crate::unsupported_syntax::update(upd)?;
        let (table, scope) = self.dml_target(&upd.table.relation)?;
        if let Some(from) = &upd.from {
            return self.update_from(upd, table, scope, from);
        }
        let assignments = self.assignments(&table, &scope, &upd.assignments)?;
        let filter = upd
            .selection
            .as_ref()
            .map(|w| self.predicate(w, &scope))
            .transpose()?;
        let access = access_path(&table, filter.as_ref());
        let returning = self.returning(&upd.returning, &table, &scope)?;
        let values = assignments.iter().map(|(_, e)| e);
        let read = reads_columns(
            values.chain(&filter).chain(returned(&returning)),
            usize::MAX,
        );
        self.require(
            Object::Table(table.clone()),
            acl::UPDATE | if read { acl::SELECT } else { 0 },
        );
        let checks = self.table_checks(&table)?;
        let foreign_keys = self.update_foreign_keys(&table, &assignments)?;
        Ok(Statement::Update(Box::new(Update {
            checks,
            foreign_keys,
            table,
            access,
            filter,
            assignments,
            returning,
            joined: None,
        })))
    }

    /// ON CONFLICT (key) DO UPDATE SET … [WHERE …]: bound over the existing row followed
    /// by the proposed one, `excluded`.
    fn conflict_update(
        &mut self,
        table: &TableDef,
        scope: &Scope,
        du: &ast::DoUpdate,
    ) -> PgResult<ConflictUpdate> {
        let mut both = scope.clone();
        let excluded = Self::table_scope(table, Some("excluded".into()));
        both.columns.extend(excluded.columns);
        let assignments = self.assignments(table, &both, &du.assignments)?;
        let filter = du
            .selection
            .as_ref()
            .map(|w| self.predicate(w, &both))
            .transpose()?;
        Ok(ConflictUpdate {
            assignments,
            filter,
        })
    }

    /// SET's assignments (of UPDATE and of INSERT … ON CONFLICT DO UPDATE), each value
    /// bound over `scope`.
    pub(super) fn assignments(
        &mut self,
        table: &TableDef,
        scope: &Scope,
        targets: &[ast::Assignment],
    ) -> PgResult<Vec<(usize, Expr)>> {
        let mut assignments = Vec::new();
        for (name, value) in single_column_items(targets)? {
            let idx = table.column_index(&name).ok_or_else(|| {
                PgError::new(
                    codes::UNDEFINED_COLUMN,
                    format!(
                        "column \"{name}\" of relation \"{}\" does not exist",
                        table.name
                    ),
                )
            })?;
            let ty = table.columns[idx].ty.to_type();
            let value = match &value {
                v if is_default_keyword(v) => self
                    .default_expr(table, idx)?
                    .unwrap_or(Expr::Const(Value::Null, ty.clone())),
                v => {
                    self.check_always_updated(table, idx)?;
                    self.assign_expr(v, scope, &ty)?
                }
            };
            if assignments.iter().any(|(i, _)| *i == idx) {
                return Err(syntax(format!(
                    "multiple assignments to same column \"{name}\""
                )));
            }
            assignments.push((idx, value));
        }
        Ok(assignments)
    }

    pub(super) fn delete(&mut self, del: &ast::Delete) -> PgResult<Statement> {
        let from = match &del.from {
            ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
        };
        crate::unsupported_syntax::delete(del)?;
        let (table, scope) = self.dml_target(&from[0].relation)?;
        if let Some(using) = &del.using {
            return self.delete_using(del, table, scope, using);
        }
        let filter = del
            .selection
            .as_ref()
            .map(|w| self.predicate(w, &scope))
            .transpose()?;
        let access = access_path(&table, filter.as_ref());
        let returning = self.returning(&del.returning, &table, &scope)?;
        let read = reads_columns(filter.iter().chain(returned(&returning)), usize::MAX);
        self.require(
            Object::Table(table.clone()),
            acl::DELETE | if read { acl::SELECT } else { 0 },
        );
        let foreign_keys = self.foreign_keys(&table, None, Some((true, None)))?;
        Ok(Statement::Delete(Delete {
            table,
            access,
            filter,
            returning,
            joined: None,
            foreign_keys,
        }))
    }
}

/// SET's items one column each: `(a, b) = (x, y)` or `ROW(x, y)` as `a = x, b = y`, and
/// `(a, b) = (SELECT x, y …)` as `a = (SELECT x …), b = (SELECT y …)` (the subquery runs
/// once per column: the same rows, or the same error, unless it is volatile).
fn single_column_items(items: &[ast::Assignment]) -> PgResult<Vec<(String, ast::Expr)>> {
    let mut out = Vec::with_capacity(items.len());
    for a in items {
        let names = match &a.target {
            ast::AssignmentTarget::ColumnName(n) => {
                out.push((
                    object_name_parts(n).pop().unwrap_or_default(),
                    a.value.clone(),
                ));
                continue;
            }
            ast::AssignmentTarget::Tuple(names) => names,
        };
        let names = names
            .iter()
            .map(|n| object_name_parts(n).pop().unwrap_or_default());
        let not_a_row = || {
            PgError::new(
                codes::FEATURE_NOT_SUPPORTED,
                "source for a multiple-column UPDATE item must be a sub-SELECT or ROW() expression",
            )
        };
        let values: Vec<ast::Expr> = match &a.value {
            ast::Expr::Tuple(values) => values.clone(),
            ast::Expr::Function(f) if object_name_parts(&f.name) == ["row"] => match &f.args {
                ast::FunctionArguments::List(list) => (list.args.iter())
                    .map(|arg| match arg {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e.clone()),
                        _ => Err(not_a_row()),
                    })
                    .collect::<PgResult<_>>()?,
                _ => Vec::new(),
            },
            ast::Expr::Subquery(query) => match query.body.as_ref() {
                ast::SetExpr::Select(select)
                    if !(select.projection.iter()).any(|item| {
                        matches!(
                            item,
                            ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..)
                        )
                    }) =>
                {
                    (0..select.projection.len())
                        .map(|i| {
                            let mut one = select.clone();
                            one.projection = vec![select.projection[i].clone()];
                            let mut q = query.clone();
                            q.body = Box::new(ast::SetExpr::Select(one));
                            ast::Expr::Subquery(q)
                        })
                        .collect()
                }
                _ => {
                    return Err(unsupported(
                        "a multiple-column UPDATE item from this sub-SELECT",
                    ))
                }
            },
            _ => return Err(not_a_row()),
        };
        if values.len() != names.len() {
            return Err(syntax("number of columns does not match number of values"));
        }
        out.extend(names.zip(values));
    }
    Ok(out)
}

/// The `DEFAULT` keyword where a value is expected (sqlparser reads it as an identifier).
pub(super) fn is_default_keyword(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}

/// The arbiter `ON CONFLICT (cols)` / `ON CONFLICT ON CONSTRAINT name` names: the primary
/// key or a unique index with exactly those columns (or that constraint's name), with
/// PostgreSQL's errors otherwise. No target: any unique key.
pub(super) fn conflict_arbiter(
    table: &TableDef,
    target: Option<&ast::ConflictTarget>,
) -> PgResult<Arbiter> {
    let pk = table.primary_key.as_deref().unwrap_or(&[]);
    match target {
        None => Ok(Arbiter::AnyUnique),
        Some(ast::ConflictTarget::Columns(cols)) => {
            let mut named = Vec::with_capacity(cols.len());
            for c in cols {
                let name = ident_name(c);
                let i = table.column_index(&name).ok_or_else(|| {
                    PgError::new(
                        codes::UNDEFINED_COLUMN,
                        format!("column \"{name}\" does not exist"),
                    )
                })?;
                named.push(i);
            }
            let same_set = |key: &mut dyn Iterator<Item = usize>| {
                let key: Vec<usize> = key.collect();
                !key.is_empty()
                    && key.iter().all(|c| named.contains(c))
                    && named.iter().all(|c| key.contains(c))
            };
            if same_set(&mut pk.iter().copied()) {
                return Ok(Arbiter::PrimaryKey);
            }
            (table.indexes.iter())
                .position(|ix| ix.unique && same_set(&mut ix.columns.iter().map(|c| c.column)))
                .map(Arbiter::Index)
                .ok_or_else(|| PgError::new(codes::INVALID_COLUMN_REFERENCE, "there is no unique or exclusion constraint matching the ON CONFLICT specification"))
        }
        Some(ast::ConflictTarget::OnConstraint(name)) => {
            let name = object_name_parts(name).pop().unwrap_or_default();
            if !pk.is_empty() && table.pk_name.as_deref() == Some(name.as_str()) {
                return Ok(Arbiter::PrimaryKey);
            }
            // A unique index made by CREATE UNIQUE INDEX is no constraint.
            (table.indexes.iter())
                .position(|ix| ix.unique && ix.constraint_oid.is_some() && ix.name == name)
                .map(Arbiter::Index)
                .ok_or_else(|| {
                    PgError::new(
                        codes::UNDEFINED_OBJECT,
                        format!(
                            "constraint \"{name}\" for table \"{}\" does not exist",
                            table.name
                        ),
                    )
                })
        }
    }
}

/// Whether output column `i` of `q` is a string literal of a plain SELECT's list
/// (`INSERT INTO t SELECT 1, '[1]'`), which PostgreSQL types by the target column.
fn string_literal_item(q: &ast::Query, i: usize) -> bool {
    let ast::SetExpr::Select(sel) = q.body.as_ref() else {
        return false;
    };
    let exprs: Option<Vec<&ast::Expr>> = (sel.projection.iter())
        .map(|item| match item {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                Some(e)
            }
            _ => None,
        })
        .collect();
    matches!(
        exprs.and_then(|e| e.get(i).copied()),
        Some(ast::Expr::Value(v)) if matches!(
            v.value,
            ast::Value::SingleQuotedString(_)
                | ast::Value::EscapedStringLiteral(_)
                | ast::Value::DollarQuotedString(_)
        )
    )
}
