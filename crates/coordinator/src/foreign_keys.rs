//! Foreign keys as statements keep them (decision 0041), after each batch of rows they
//! write, as PostgreSQL's RI triggers do after each statement:
//!
//! - A written row's referenced row must exist: found by the parent's primary key (or
//!   its unique index's entry) and locked with the row lock SELECT … FOR SHARE takes,
//!   so that a concurrent DELETE of it waits for this transaction, and this one sees
//!   a parent deleted by a transaction that committed (`check_parents`).
//! - A deleted row's (or changed key's) referencing rows: NO ACTION and RESTRICT look
//!   for one, CASCADE, SET NULL and SET DEFAULT change them, each with a statement over
//!   the referencing table bound here from SQL text, as PostgreSQL's ri_triggers.c
//!   does, and run at a new snapshot (rows committed since the statement's snapshot
//!   are seen, as PostgreSQL's checks see them): that statement keeps the referencing
//!   table's own foreign keys, so cascades go on (`follow_children`).

use crate::dml::Dml;
use crate::exec::{key_of_values, Executor, Row};
use datanode_client::LockWait;
use distribution::{ClusterTxn, Datanodes};
use pgerror::{codes, PgError, PgResult};
use sql::catalog::ReferentialAction;
use sql::plan::{ChildReference, ParentKey, ParentLookup, Statement};
use sql::TableDef;
use types::Value;

/// `Key (a, b)=(1, 2)` of PostgreSQL's details.
fn key_text(table: &TableDef, columns: &[usize], values: &[Value]) -> String {
    let names: Vec<&str> = columns
        .iter()
        .map(|&c| table.columns[c].name.as_str())
        .collect();
    let values: Vec<String> = values
        .iter()
        .zip(columns)
        .map(|(v, &c)| {
            types::io::to_text_string(v, &table.columns[c].ty.to_type())
                .unwrap_or_else(|| "null".into())
        })
        .collect();
    format!("Key ({})=({})", names.join(", "), values.join(", "))
}

fn not_present(table: &TableDef, fk: &ParentKey, values: &[Value]) -> PgError {
    PgError::new(
        codes::FOREIGN_KEY_VIOLATION,
        format!(
            "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
            table.name, fk.name
        ),
    )
    .with_detail(format!(
        "{} is not present in table \"{}\".",
        key_text(table, &fk.columns, values),
        fk.parent.name
    ))
}

/// The values of `columns` in `row`; None if one is NULL (MATCH SIMPLE: not checked).
fn key_values(row: &[Value], columns: &[usize]) -> Option<Vec<Value>> {
    let values: Vec<Value> = columns.iter().map(|&c| row[c].clone()).collect();
    (!values.iter().any(Value::is_null)).then_some(values)
}

/// Whether `fk`'s referenced row for `values` (of `table`'s row) exists, locked by `txn`.
async fn lock_parent(
    dn: &Datanodes,
    txn: &mut ClusterTxn,
    table: &TableDef,
    fk: &ParentKey,
    values: &[Value],
) -> PgResult<bool> {
    // A value the parent's type cannot hold (an int8 past int4) is in no parent row.
    let mut cast = Vec::with_capacity(values.len());
    for ((v, ty), &c) in values.iter().zip(&fk.types).zip(&fk.columns) {
        match types::cast::cast(v.clone(), &table.columns[c].ty.to_type(), ty, false) {
            Ok(v) => cast.push(v),
            Err(_) => return Ok(false),
        }
    }
    let ordered = |key: &[usize]| -> Vec<Value> { key.iter().map(|&i| cast[i].clone()).collect() };
    let parent = &fk.parent;
    let row_key = match &fk.lookup {
        ParentLookup::PrimaryKey { key } => key_of_values(&ordered(key)),
        ParentLookup::UniqueIndex { index, key } => {
            // The entry is locked too: the row's key values cannot move away from it.
            let Some(entry) = key_of_values(&ordered(key)) else {
                return Ok(false);
            };
            let rel = parent.indexes[*index].rel;
            (dn.lock_row(txn, rel, &entry, LockWait::Wait).await?).map(|k| k.to_vec())
        }
    };
    let Some(row_key) = row_key else {
        return Ok(false);
    };
    Ok(dn
        .lock_row(txn, parent.rel, &row_key, LockWait::Wait)
        .await?
        .is_some())
}

/// 23503 unless each of `rows` written to `table` finds the rows its foreign keys
/// `parents` reference (a row whose key columns it did not change — `old` — is not
/// checked again).
pub(crate) async fn check_parents(
    dn: &Datanodes,
    txn: &mut ClusterTxn,
    table: &TableDef,
    parents: &[ParentKey],
    rows: &[(Option<&Row>, &Row)],
) -> PgResult<()> {
    for fk in parents {
        for (old, new) in rows {
            let Some(values) = key_values(new, &fk.columns) else {
                continue;
            };
            if old.is_some_and(|old| fk.columns.iter().all(|&c| old[c] == new[c])) {
                continue;
            }
            if !lock_parent(dn, txn, table, fk, &values).await? {
                return Err(not_present(table, fk, &values));
            }
        }
    }
    Ok(())
}

/// How deep referential actions may nest (a cascade down a chain of self-referencing
/// rows is one level per row): each level is a statement's future inside the one
/// before, on the session thread's stack, which would overflow some thousand levels
/// down; PostgreSQL stops such a chain at its max_stack_depth too.
const MAX_CASCADE_DEPTH: usize = 100;

/// One level of referential actions entered, left when dropped.
struct Nested<'s>(&'s std::sync::atomic::AtomicUsize);

impl<'s> Nested<'s> {
    fn enter(dml: &'s Dml<'_>) -> PgResult<Self> {
        use std::sync::atomic::Ordering::Relaxed;
        let depth = &dml.state.cascade_depth;
        if depth.fetch_add(1, Relaxed) >= MAX_CASCADE_DEPTH {
            depth.fetch_sub(1, Relaxed);
            return Err(
                PgError::new(codes::STATEMENT_TOO_COMPLEX, "stack depth limit exceeded").with_hint(
                    format!(
                "Referential actions of foreign keys nest at most {MAX_CASCADE_DEPTH} deep."
            ),
                ),
            );
        }
        Ok(Nested(depth))
    }
}

impl Drop for Nested<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The statement over `r.child` that `r`'s action runs for one referenced key: its
/// old values are parameters $1…, a CASCADE update's new ones follow.
fn action_sql(r: &ChildReference, update: bool) -> String {
    let child = &r.child;
    let col = |i: usize| quote(&child.columns[r.columns[i]].name);
    let filter: Vec<String> = (0..r.columns.len())
        .map(|i| format!("{} = ${}", col(i), i + 1))
        .collect();
    let filter = filter.join(" AND ");
    let table = quote(&child.name);
    let set = |value: &dyn Fn(usize) -> String| {
        (0..r.columns.len())
            .map(|i| format!("{} = {}", col(i), value(i)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let n = r.columns.len();
    match r.action {
        ReferentialAction::NoAction | ReferentialAction::Restrict => {
            format!("SELECT 1 FROM {table} WHERE {filter} LIMIT 1")
        }
        ReferentialAction::Cascade if update => format!(
            "UPDATE {table} SET {} WHERE {filter}",
            set(&|i| format!("${}", n + i + 1))
        ),
        ReferentialAction::Cascade => format!("DELETE FROM {table} WHERE {filter}"),
        ReferentialAction::SetNull => {
            format!(
                "UPDATE {table} SET {} WHERE {filter}",
                set(&|_| "NULL".into())
            )
        }
        ReferentialAction::SetDefault => format!(
            "UPDATE {table} SET {} WHERE {filter}",
            set(&|_| "DEFAULT".into())
        ),
    }
}

impl Dml<'_> {
    /// `check_parents` for rows this statement writes, its lock waits ended by
    /// lock_timeout.
    pub(crate) async fn check_parents(
        &self,
        txn: &mut ClusterTxn,
        table: &TableDef,
        parents: &[ParentKey],
        rows: &[(Option<&Row>, &Row)],
    ) -> PgResult<()> {
        if parents.is_empty() || rows.is_empty() {
            return Ok(());
        }
        self.lock_wait(check_parents(self.dn, txn, table, parents, rows))
            .await
    }

    /// What the foreign keys `children` referencing `table` do to the rows referencing
    /// `changed`: each deleted row (new None) or updated row whose referenced key changed.
    pub(crate) async fn follow_children(
        &self,
        txn: &mut ClusterTxn,
        table: &TableDef,
        children: &[ChildReference],
        changed: &[(Row, Option<Row>)],
    ) -> PgResult<()> {
        if children.is_empty() || changed.is_empty() {
            return Ok(());
        }
        // Rows committed since the statement's snapshot are the referencing rows too.
        let snapshot = self.view.cluster.gtm.timestamp().await?;
        for r in children {
            let mut bound: Option<Statement> = None;
            for (old, new) in changed {
                let Some(mut params) = key_values(old, &r.parent_columns) else {
                    continue;
                };
                if let Some(new) = new {
                    if r.parent_columns.iter().all(|&c| old[c] == new[c]) {
                        continue;
                    }
                    params.extend(r.parent_columns.iter().map(|&c| new[c].clone()));
                }
                let stmt = match &mut bound {
                    Some(stmt) => stmt,
                    None => bound.insert(self.bind_action(table, r, new.is_some())?),
                };
                let dml = Dml {
                    dn: self.dn,
                    snapshot,
                    params: &params,
                    view: self.view,
                    state: self.state,
                };
                match stmt {
                    Statement::Query(q) => {
                        let ex = Executor {
                            dn: self.dn,
                            txn,
                            snapshot,
                            params: &params,
                            session: self.view,
                            state: self.state,
                        };
                        if !ex.query(q).await?.is_empty() {
                            let n = r.parent_columns.len();
                            return Err(still_referenced(table, r, &params[..n]));
                        }
                    }
                    Statement::Delete(del) => {
                        let _nested = Nested::enter(self)?;
                        Box::pin(dml.delete(txn, del)).await?;
                    }
                    Statement::Update(upd) => {
                        let nested = Nested::enter(self)?;
                        Box::pin(dml.update(txn, upd)).await?;
                        drop(nested);
                        // A referencing row already holding the default still references
                        // the key (PostgreSQL's RI_FKey_setdefault_del looks again).
                        if r.action == ReferentialAction::SetDefault {
                            let n = r.parent_columns.len();
                            let check = self.bind_check(table, r)?;
                            let ex = Executor {
                                dn: self.dn,
                                txn,
                                snapshot,
                                params: &params[..n],
                                session: self.view,
                                state: self.state,
                            };
                            if !ex.query(&check).await?.is_empty() {
                                return Err(still_referenced(table, r, &params[..n]));
                            }
                        }
                    }
                    _ => return Err(PgError::internal("a referential action's statement")),
                }
            }
        }
        Ok(())
    }

    /// NO ACTION's query for `r`, whatever its action.
    fn bind_check(&self, table: &TableDef, r: &ChildReference) -> PgResult<sql::plan::Query> {
        let check = ChildReference {
            action: ReferentialAction::NoAction,
            ..r.clone()
        };
        match self.bind_action(table, &check, false)? {
            Statement::Query(q) => Ok(q),
            _ => Err(PgError::internal("a foreign key's check query")),
        }
    }

    fn bind_action(
        &self,
        table: &TableDef,
        r: &ChildReference,
        update: bool,
    ) -> PgResult<Statement> {
        let text = action_sql(r, update);
        let parsed = sql::parse::parse_statement(&text)?;
        let mut types: Vec<u32> = r
            .parent_columns
            .iter()
            .map(|&c| table.columns[c].ty.to_type().oid())
            .collect();
        if update {
            types.extend(types.clone());
        }
        Ok(sql::binder::bind(&parsed, self.view.catalog, &types)?
            .0
            .statement)
    }
}

fn still_referenced(table: &TableDef, r: &ChildReference, values: &[Value]) -> PgError {
    PgError::new(
        codes::FOREIGN_KEY_VIOLATION,
        format!(
            "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"",
            table.name, r.name, r.child.name
        ),
    )
    .with_detail(format!(
        "{} is still referenced from table \"{}\".",
        key_text(table, &r.parent_columns, values),
        r.child.name
    ))
}

/// The first row of `child` (a table gaining foreign key `fk`) that finds no parent
/// row, as ALTER TABLE … ADD FOREIGN KEY checks the rows: 23503 with its key.
pub(crate) async fn check_existing_rows(
    ex: &Executor<'_>,
    child: &TableDef,
    fk: &sql::catalog::ForeignKeyDef,
    parent: &TableDef,
) -> PgResult<()> {
    let col = |t: &TableDef, c: usize| format!("x.{}", quote(&t.columns[c].name));
    let pcol = |c: usize| format!("p.{}", quote(&parent.columns[c].name));
    let not_null: Vec<String> = fk
        .columns
        .iter()
        .map(|&c| format!("{} IS NOT NULL", col(child, c)))
        .collect();
    let joined: Vec<String> = fk
        .columns
        .iter()
        .zip(&fk.parent_columns)
        .map(|(&c, &p)| format!("{} = {}", pcol(p), col(child, c)))
        .collect();
    let selected: Vec<String> = fk.columns.iter().map(|&c| col(child, c)).collect();
    let text = format!(
        "SELECT {} FROM {} x WHERE {} AND NOT EXISTS (SELECT 1 FROM {} p WHERE {}) LIMIT 1",
        selected.join(", "),
        quote(&child.name),
        not_null.join(" AND "),
        quote(&parent.name),
        joined.join(" AND "),
    );
    let parsed = sql::parse::parse_statement(&text)?;
    let Statement::Query(q) = sql::binder::bind(&parsed, ex.session.catalog, &[])?
        .0
        .statement
    else {
        return Err(PgError::internal("a foreign key's check query"));
    };
    if let Some(row) = ex.query(&q).await?.into_iter().next() {
        return Err(PgError::new(
            codes::FOREIGN_KEY_VIOLATION,
            format!(
                "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
                child.name, fk.name
            ),
        )
        .with_detail(format!(
            "{} is not present in table \"{}\".",
            key_text(child, &fk.columns, &row),
            parent.name
        )));
    }
    Ok(())
}

/// 2BP01 where a foreign key references `table`'s key through its index `index` (a
/// unique index, or a UNIQUE constraint's; `what` names it as PostgreSQL's message
/// does): DROP INDEX and DROP CONSTRAINT have no CASCADE here.
pub(crate) fn refuse_drop_of_referenced_key(
    tables: &[std::sync::Arc<TableDef>],
    table: &TableDef,
    index: u32,
    what: &str,
) -> PgResult<()> {
    let dependent = crate::system_foreign_keys::all(tables)
        .into_iter()
        .find(|f| f.parent.oid == table.oid && f.index_oid() == index);
    match dependent {
        None => Ok(()),
        Some(f) => Err(PgError::new(
            codes::DEPENDENT_OBJECTS_STILL_EXIST,
            format!("cannot drop {what} because other objects depend on it"),
        )
        .with_detail(format!(
            "constraint {} on table {} depends on index {}",
            f.fk.name,
            f.table.name,
            table
                .indexes
                .iter()
                .find(|i| i.oid == index)
                .map_or("", |i| i.name.as_str())
        ))
        .with_hint("Use DROP ... CASCADE to drop the dependent objects too.")),
    }
}
