//! SELECT … FOR UPDATE / FOR SHARE: which queries may lock rows, and the key each
//! returned row is locked by.
//!
//! A locking query reads one table (joins and subqueries in FROM are refused with
//! 0A000). Its select list is bound with the table's primary-key columns appended; those
//! trailing values are not output columns, and the executor locks each row by them
//! (`coordinator/src/dml.rs`, `select_locked`). Every strength takes the row's exclusive
//! lock: FOR SHARE and FOR KEY SHARE lock more than PostgreSQL does (two FOR SHARE
//! readers of one row wait for each other), never less.

use super::*;

impl Binder<'_> {
    /// For a query with locking clauses: the select to bind in its place (the key columns
    /// appended) and its locking; None for a query without them.
    pub(super) fn row_locking(
        &mut self,
        q: &ast::Query,
    ) -> PgResult<Option<(ast::Select, Box<RowLocking>)>> {
        let Some(first) = q.locks.first() else {
            return Ok(None);
        };
        let clause = format!("FOR {}", first.lock_type);
        if std::ptr::from_ref(q) as usize != self.lockable {
            return Err(unsupported(format!("{clause} in a subquery")));
        }
        let not_allowed =
            |with: &str| unsupported_as_postgres(format!("{clause} is not allowed with {with}"));
        let ast::SetExpr::Select(sel) = q.body.as_ref() else {
            return Err(not_allowed("UNION/INTERSECT/EXCEPT"));
        };
        if matches!(
            sel.distinct,
            Some(ast::Distinct::Distinct | ast::Distinct::On(_))
        ) {
            return Err(not_allowed("DISTINCT clause"));
        }
        if matches!(&sel.group_by, ast::GroupByExpr::Expressions(e, _) if !e.is_empty()) {
            return Err(not_allowed("GROUP BY clause"));
        }
        if sel.having.is_some() {
            return Err(not_allowed("HAVING clause"));
        }
        if sel.projection.iter().any(|p| match p {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                contains_aggregate(e)
            }
            _ => false,
        }) {
            return Err(not_allowed("aggregate functions"));
        }
        let one_table = match sel.from.as_slice() {
            [ast::TableWithJoins {
                relation:
                    ast::TableFactor::Table {
                        name,
                        alias,
                        args: None,
                        ..
                    },
                joins,
            }] if joins.is_empty() => Some((name, alias)),
            _ => None,
        };
        let Some((name, alias)) = one_table else {
            return Err(unsupported(format!(
                "SELECT … {clause} over anything but one table"
            )));
        };
        let parts = object_name_parts(name);
        if let [single] = parts.as_slice() {
            if self.ctes.iter().any(|(n, _, _)| n == single) {
                return Err(unsupported(format!("SELECT … {clause} over a WITH query")));
            }
        }
        let table = self.table_by_name(&parts)?;
        let Some(pk) = &table.primary_key else {
            return Err(unsupported(format!(
                "SELECT … {clause} on a table without a primary key"
            )));
        };
        let qualifier = match alias {
            Some(a) => ident_name(&a.name),
            None => parts.last().cloned().unwrap_or_default(),
        };
        let mut wait = LockedRowWait::Wait;
        for lock in &q.locks {
            if let Some(of) = &lock.of {
                let named = object_name_parts(of).pop().unwrap_or_default();
                if named != qualifier {
                    return Err(PgError::new(
                        codes::UNDEFINED_TABLE,
                        format!(
                            "relation \"{named}\" in FOR {} clause not found in FROM clause",
                            lock.lock_type
                        ),
                    ));
                }
            }
            wait = match (lock.nonblock, wait) {
                (Some(ast::NonBlock::Nowait), _) | (_, LockedRowWait::NoWait) => {
                    LockedRowWait::NoWait
                }
                (Some(ast::NonBlock::SkipLocked), _) => LockedRowWait::SkipLocked,
                (None, w) => w,
            };
        }
        let mut keyed = sel.as_ref().clone();
        for &col in pk {
            keyed
                .projection
                .push(ast::SelectItem::UnnamedExpr(ast::Expr::CompoundIdentifier(
                    vec![
                        ast::Ident::with_quote('"', qualifier.clone()),
                        ast::Ident::with_quote('"', table.columns[col].name.clone()),
                    ],
                )));
        }
        // FOR UPDATE and FOR SHARE alike need UPDATE (PostgreSQL's ACL_SELECT_FOR_UPDATE).
        self.require(crate::acl::Object::Table(table.clone()), crate::acl::UPDATE);
        Ok(Some((keyed, Box::new(RowLocking { table, wait }))))
    }
}

/// PostgreSQL's own refusal of a clause combination (0A000, its message verbatim).
fn unsupported_as_postgres(message: String) -> PgError {
    PgError::new(codes::FEATURE_NOT_SUPPORTED, message)
}
