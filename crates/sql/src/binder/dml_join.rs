//! UPDATE … FROM and DELETE … USING: the target's rows joined to the other FROM items
//! and filtered by WHERE are bound as one query (the planner's joins, the target's
//! columns first), over whose rows SET and RETURNING are bound. The coordinator changes
//! each target row once, with the first row it is joined to (PostgreSQL's "arbitrary
//! one"), found by its primary key.

use super::*;
use crate::acl::{self, Object};

impl<'a> Binder<'a> {
    pub(super) fn update_from(
        &mut self,
        upd: &ast::Update,
        table: Arc<TableDef>,
        target: Scope,
        from: &ast::UpdateTableFromKind,
    ) -> PgResult<Statement> {
        let from = match from {
            ast::UpdateTableFromKind::AfterSet(from) => from,
            ast::UpdateTableFromKind::BeforeSet(_) => {
                return Err(syntax("syntax error at or near \"FROM\""))
            }
        };
        // (The join reads the target's rows: SELECT on it, even when no column is named.)
        self.require(Object::Table(table.clone()), acl::UPDATE | acl::SELECT);
        let (joined, scope) = self.joined_targets(&table, &target, from, upd.selection.as_ref())?;
        let assignments = self.assignments(&table, &scope, &upd.assignments)?;
        let returning = self.joined_returning(&upd.returning, &table, &scope)?;
        let checks = self.table_checks(&table)?;
        let foreign_keys = self.update_foreign_keys(&table, &assignments)?;
        Ok(Statement::Update(Box::new(Update {
            foreign_keys,
            table,
            access: Access::Full,
            filter: None,
            assignments,
            returning,
            checks,
            joined: Some(Box::new(joined)),
        })))
    }

    pub(super) fn delete_using(
        &mut self,
        del: &ast::Delete,
        table: Arc<TableDef>,
        target: Scope,
        using: &[ast::TableWithJoins],
    ) -> PgResult<Statement> {
        // (As UPDATE … FROM: the join reads the target's rows.)
        self.require(Object::Table(table.clone()), acl::DELETE | acl::SELECT);
        let (joined, scope) =
            self.joined_targets(&table, &target, using, del.selection.as_ref())?;
        let returning = self.joined_returning(&del.returning, &table, &scope)?;
        let foreign_keys = self.foreign_keys(&table, None, Some((true, None)))?;
        Ok(Statement::Delete(Delete {
            foreign_keys,
            table,
            access: Access::Full,
            filter: None,
            returning,
            joined: Some(Box::new(joined)),
        }))
    }

    /// The joined rows' query and the scope of its columns (the target's, then the
    /// other FROM items').
    fn joined_targets(
        &mut self,
        table: &Arc<TableDef>,
        target: &Scope,
        from: &[ast::TableWithJoins],
        selection: Option<&ast::Expr>,
    ) -> PgResult<(Query, Scope)> {
        if table.primary_key.is_none() {
            return Err(unsupported(
                "UPDATE … FROM and DELETE … USING of a table without a primary key",
            ));
        }
        let (others, others_scope) = self.bind_from(from)?;
        let target_name = target.columns.first().and_then(|c| c.qualifier.clone());
        if let Some(name) = target_name.filter(|n| {
            others_scope
                .columns
                .iter()
                .any(|c| c.qualifier.as_ref() == Some(n))
        }) {
            return Err(PgError::new(
                codes::DUPLICATE_ALIAS,
                format!("table name \"{name}\" specified more than once"),
            ));
        }
        let mut scope = target.clone();
        scope.columns.extend(others_scope.columns);
        let on = selection.map(|w| self.predicate(w, &scope)).transpose()?;
        let root = Rel::Join {
            left: Box::new(Rel::Scan {
                table: table.clone(),
                access: Access::Full,
            }),
            right: Box::new(others),
            kind: JoinKind::Inner,
            on,
            lateral: false,
        };
        let columns = scope
            .columns
            .iter()
            .map(|c| output_column(&c.name, c.ty.clone()))
            .collect();
        let query = Query {
            root,
            columns,
            correlated: false,
            outer_columns: Vec::new(),
            locking: None,
        };
        Ok((query, scope))
    }

    /// RETURNING over the joined rows; `*` (every FROM item's columns in PostgreSQL) is
    /// refused.
    fn joined_returning(
        &mut self,
        items: &Option<Vec<ast::SelectItem>>,
        table: &TableDef,
        scope: &Scope,
    ) -> PgResult<Option<Vec<(Expr, OutputColumn)>>> {
        let wildcard = items.iter().flatten().any(|i| {
            matches!(
                i,
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..)
            )
        });
        if wildcard {
            return Err(unsupported("RETURNING * with FROM or USING"));
        }
        self.returning(items, table, scope)
    }
}
