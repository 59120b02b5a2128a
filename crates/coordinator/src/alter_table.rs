//! ALTER TABLE: the statement's actions applied in order to a copy of the table's
//! definition; where one changes the stored rows (a column added with a default,
//! dropped, or given a new type) or needs them checked (NOT NULL), one pass over the
//! rows in the statement's transaction rewrites them into a fresh relation, a batch at a
//! time, which the new definition switches to as TRUNCATE's does (the old one is dropped
//! when the transaction commits); the same pass checks the rows against the CHECK
//! constraints added; the keys added come last, each building its index.

use crate::ddl::notice;
use crate::ddl::InTxn;
use crate::ddl_log::DdlLog;
use crate::exec::{decode, encode, Executor, SessionView, StatementState};
use crate::server::Shared;
use bytes::BytesMut;
use distribution::RelPlacement;
use pgerror::{codes, PgError, PgResult};
use sql::catalog::Distribution;
use sql::catalog::{CheckDef, ForeignKeyDef};
use sql::plan::{AlterAction, AlterTable, BoundCheck, Expr};
use sql::TableDef;
use std::ops::Bound;
use std::sync::Arc;
use types::{DataType, Value};

/// Rows read (and written) per batch of a rewrite.
const REWRITE_BATCH: usize = 1000;

/// What a rewrite evaluates a new column's default with.
pub struct Evaluation<'a> {
    pub view: &'a SessionView<'a>,
    pub state: &'a StatementState<'a>,
}

/// How a stored row becomes a row of the new definition; each change names positions
/// as the changes before it left the row.
enum RowChange<'a> {
    /// A new last column: its default evaluated for the row, or NULL.
    Append(Option<&'a Expr>),
    Remove(usize),
    Cast {
        column: usize,
        from: DataType,
        to: DataType,
    },
}

/// The definition being altered and what it takes to get the rows there.
struct Altered<'a> {
    def: TableDef,
    changes: Vec<RowChange<'a>>,
    /// Per column of `def`: whether every row must be checked for a NULL in it.
    check_not_null: Vec<bool>,
    /// Per column of `def`: its position in the table before the statement.
    origin: Vec<Option<usize>>,
    /// Indexes to rebuild (a column they cover changed type), by name.
    rebuild: Vec<String>,
    /// Constraints to add, their columns by name: (primary key?, columns, name).
    keys: Vec<(bool, &'a [String], Option<&'a str>)>,
}

pub async fn execute(
    shared: &Shared,
    log: &mut DdlLog,
    rows: &mut InTxn<'_>,
    at: &AlterTable,
    eval: Evaluation<'_>,
    out: &mut BytesMut,
) -> PgResult<()> {
    shared.catalog.refresh().await?;
    let old = crate::ddl::current(shared, &at.table)?;
    let width = old.columns.len();
    let mut altered = Altered {
        def: (*old).clone(),
        changes: Vec::new(),
        check_not_null: vec![false; width],
        origin: (0..width).map(Some).collect(),
        rebuild: Vec::new(),
        keys: Vec::new(),
    };
    for action in &at.actions {
        altered.apply(shared, action, out)?;
    }
    let Altered {
        mut def,
        changes,
        check_not_null,
        origin,
        rebuild,
        keys,
    } = altered;
    // A column's new type re-checks every CHECK constraint, as PostgreSQL's re-added ones.
    let retyped = changes.iter().any(|c| matches!(c, RowChange::Cast { .. }));
    let checks = checks_to_verify(shared, &mut def, retyped).await?;
    let rewrites = changes
        .iter()
        .any(|c| !matches!(c, RowChange::Append(None)));
    if rewrites || check_not_null.contains(&true) || !checks.is_empty() {
        if rewrites {
            def.rel = log.create_rel(shared, RelPlacement::of(&def)).await?;
        }
        let def = Arc::new(def.clone());
        let pass = RowPass {
            old: &old,
            new: &def,
            changes: &changes,
            check_not_null: &check_not_null,
            checks: &checks,
            rewrites,
        };
        pass.run(shared, &eval, rows).await?;
    }
    // Indexes built over the new rows before the definition that holds them is stored,
    // so that a failing build (23505) leaves the table as it was (what the statement
    // created goes with its transaction's rollback).
    index_new_rows(shared, log, rows, &mut def, &rebuild, &keys).await?;
    // The relations the new definition no longer refers to (the old rows', dropped and
    // rebuilt indexes') are dropped when the transaction commits.
    let added = foreign_keys_to_verify(shared, &mut def).await?;
    log.put(shared, def.clone()).await?;
    for fk in &added {
        verify_foreign_key(shared, rows, &eval, &def, fk).await?;
    }
    crate::sequence_ddl::follow_columns(shared, log, def.oid, &origin).await?;
    // A new primary key rebuilds the table under it, last.
    for (_, columns, name) in keys.iter().filter(|(primary, ..)| *primary) {
        let table = crate::ddl::current(shared, &def)?;
        let columns = key_columns(&table, columns)?;
        if table.primary_key.is_none() {
            table.distribution.check_key(&columns)?;
        }
        crate::ddl::add_primary_key(shared, log, &table, &columns, name.map(str::to_string))
            .await?;
    }
    Ok(())
}

/// The CHECK constraints of `def` its rows must be checked against, bound over them:
/// those the statement added (given their OIDs here), or (`all`) every one.
async fn checks_to_verify(
    shared: &Shared,
    def: &mut TableDef,
    all: bool,
) -> PgResult<Vec<BoundCheck>> {
    let count = def.checks.iter().filter(|c| c.oid == 0).count() as u32;
    if count > 0 {
        let mut oids = shared.catalog.allocate_oids(count).await?..;
        for check in def.checks.iter_mut().filter(|c| c.oid == 0) {
            check.oid = oids.next().unwrap_or_default();
        }
    }
    let added = def.checks.len() - count as usize;
    def.checks[if all { 0 } else { added }..]
        .iter()
        .map(|c| {
            Ok(BoundCheck {
                name: c.name.clone(),
                expr: sql::binder::bind_check(def, c)?,
            })
        })
        .collect()
}

/// The foreign keys the statement added to `def`, given their OIDs here.
async fn foreign_keys_to_verify(
    shared: &Shared,
    def: &mut TableDef,
) -> PgResult<Vec<ForeignKeyDef>> {
    let count = def.foreign_keys.iter().filter(|f| f.oid == 0).count() as u32;
    if count == 0 {
        return Ok(Vec::new());
    }
    let mut oids = shared.catalog.allocate_oids(count).await?..;
    let mut added = Vec::new();
    for fk in def.foreign_keys.iter_mut().filter(|f| f.oid == 0) {
        fk.oid = oids.next().unwrap_or_default();
        added.push(fk.clone());
    }
    Ok(added)
}

/// ALTER TABLE … ADD FOREIGN KEY's check of the rows `def` (stored) holds: 23503 for
/// the first without its referenced row.
async fn verify_foreign_key(
    shared: &Shared,
    rows: &mut InTxn<'_>,
    eval: &Evaluation<'_>,
    def: &TableDef,
    fk: &ForeignKeyDef,
) -> PgResult<()> {
    use sql::catalog::Catalog;
    let parent = shared
        .catalog
        .table_by_oid(fk.parent)
        .ok_or_else(|| PgError::new(codes::UNDEFINED_TABLE, "referenced table does not exist"))?;
    let ex = Executor {
        dn: &shared.datanodes,
        txn: rows.txn,
        snapshot: rows.snapshot,
        params: &[],
        session: eval.view,
        state: eval.state,
    };
    crate::foreign_keys::check_existing_rows(&ex, def, fk, &parent).await
}

/// Rebuilds the indexes named in `rebuild` and builds the UNIQUE constraints among `keys`
/// over `def`'s rows, into `def`.
async fn index_new_rows(
    shared: &Shared,
    log: &mut DdlLog,
    rows: &mut InTxn<'_>,
    def: &mut TableDef,
    rebuild: &[String],
    keys: &[(bool, &[String], Option<&str>)],
) -> PgResult<()> {
    for i in 0..def.indexes.len() {
        if rebuild.contains(&def.indexes[i].name) {
            let fresh = crate::index_ddl::rebuilt(shared, log, rows, def, &def.indexes[i]).await?;
            def.indexes[i] = fresh;
        }
    }
    for (_, columns, name) in keys.iter().filter(|(primary, ..)| !*primary) {
        let columns = key_columns(def, columns)?;
        let index =
            crate::index_ddl::unique_constraint(shared, log, rows, def, &columns, *name).await?;
        def.indexes.push(index);
    }
    Ok(())
}

fn key_columns(table: &TableDef, names: &[String]) -> PgResult<Vec<usize>> {
    names
        .iter()
        .map(|n| {
            table.column_index(n).ok_or_else(|| {
                PgError::new(
                    codes::UNDEFINED_COLUMN,
                    format!("column \"{n}\" named in key does not exist"),
                )
            })
        })
        .collect()
}

impl<'a> Altered<'a> {
    fn column(&self, name: &str) -> PgResult<usize> {
        self.def
            .column_index(name)
            .ok_or_else(|| no_column(name, &self.def.name))
    }

    fn apply(
        &mut self,
        shared: &Shared,
        action: &'a AlterAction,
        out: &mut BytesMut,
    ) -> PgResult<()> {
        let table = self.def.name.clone();
        match action {
            AlterAction::AddColumn {
                column,
                if_not_exists,
                fill,
            } => {
                if self.def.column_index(&column.name).is_some() {
                    let exists = format!(
                        "column \"{}\" of relation \"{table}\" already exists",
                        column.name
                    );
                    if *if_not_exists {
                        notice(out, codes::DUPLICATE_COLUMN, format!("{exists}, skipping"));
                        return Ok(());
                    }
                    return Err(PgError::new(codes::DUPLICATE_COLUMN, exists));
                }
                self.def.columns.push(column.clone());
                self.check_not_null.push(column.not_null);
                self.origin.push(None);
                self.changes.push(RowChange::Append(fill.as_ref()));
            }
            AlterAction::DropColumn { name, if_exists } => {
                crate::view_ddl::refuse_change_of_read(shared, self.def.oid, "DROP COLUMN")?;
                let Some(i) = self.def.column_index(name) else {
                    if *if_exists {
                        notice(
                            out,
                            codes::SUCCESSFUL_COMPLETION,
                            format!(
                                "column \"{name}\" of relation \"{table}\" does not exist, skipping"
                            ),
                        );
                        return Ok(());
                    }
                    return Err(no_column(name, &table));
                };
                refuse_change_of_referenced(shared, &self.def, i, "DROP COLUMN")?;
                self.drop_column(i)?;
            }
            AlterAction::RenameColumn { from, to } => {
                crate::view_ddl::refuse_change_of_read(shared, self.def.oid, "RENAME COLUMN")?;
                let i = self.def.column_index(from).ok_or_else(|| {
                    PgError::new(
                        codes::UNDEFINED_COLUMN,
                        format!("column \"{from}\" does not exist"),
                    )
                })?;
                if self.def.column_index(to).is_some() {
                    return Err(PgError::new(
                        codes::DUPLICATE_COLUMN,
                        format!("column \"{to}\" of relation \"{table}\" already exists"),
                    ));
                }
                for check in &mut self.def.checks {
                    check.expr = sql::binder::rename_column(&check.expr, from, to)?;
                }
                self.def.columns[i].name = to.clone();
            }
            AlterAction::RenameTable(to) => {
                crate::view_ddl::refuse_change_of_read(shared, self.def.oid, "RENAME TO")?;
                if crate::index_ddl::relation_exists(shared, to) {
                    return Err(PgError::new(
                        codes::DUPLICATE_TABLE,
                        format!("relation \"{to}\" already exists"),
                    ));
                }
                self.def.name = to.clone();
            }
            AlterAction::SetDefault { column, default } => {
                let i = self.column(column)?;
                self.def.columns[i].default = default.clone();
            }
            AlterAction::SetNotNull { column, not_null } => {
                let i = self.column(column)?;
                let in_key = self
                    .def
                    .primary_key
                    .as_ref()
                    .is_some_and(|k| k.contains(&i));
                if !not_null && in_key {
                    return Err(PgError::new(
                        codes::INVALID_TABLE_DEFINITION,
                        format!("column \"{column}\" is in a primary key"),
                    ));
                }
                if *not_null && !self.def.columns[i].not_null {
                    self.check_not_null[i] = true;
                }
                self.def.columns[i].not_null = *not_null;
            }
            AlterAction::SetType { column, ty } => {
                crate::view_ddl::refuse_change_of_read(shared, self.def.oid, "ALTER COLUMN TYPE")?;
                let i = self.column(column)?;
                if self.def.foreign_keys.iter().any(|f| f.columns.contains(&i)) {
                    return Err(PgError::unsupported(
                        "ALTER COLUMN TYPE of a foreign key's column",
                    ));
                }
                refuse_change_of_referenced(shared, &self.def, i, "ALTER COLUMN TYPE")?;
                let in_key = self
                    .def
                    .primary_key
                    .as_ref()
                    .is_some_and(|k| k.contains(&i));
                if in_key {
                    return Err(PgError::unsupported(
                        "ALTER COLUMN TYPE of a primary-key column",
                    ));
                }
                if self.def.distribution == (Distribution::Hash { column: i })
                    && shared.datanodes.len() > 1
                {
                    return Err(PgError::unsupported(
                        "ALTER COLUMN TYPE of the distribution column",
                    ));
                }
                let from = self.def.columns[i].ty.to_type();
                self.def.columns[i].ty = ty.clone();
                self.changes.push(RowChange::Cast {
                    column: i,
                    from,
                    to: ty.to_type(),
                });
                for index in &self.def.indexes {
                    if index.columns.iter().any(|c| c.column == i)
                        && !self.rebuild.contains(&index.name)
                    {
                        self.rebuild.push(index.name.clone());
                    }
                }
            }
            AlterAction::AddPrimaryKey { columns, name } => {
                self.keys.push((true, columns, name.as_deref()))
            }
            AlterAction::AddUnique { columns, name } => {
                self.keys.push((false, columns, name.as_deref()))
            }
            // Its name was checked against the table's when bound.
            AlterAction::AddCheck { name, expr } => {
                // OID 0 until the statement's new constraints are given theirs.
                self.def.checks.push(CheckDef {
                    oid: 0,
                    name: name.clone(),
                    expr: expr.clone(),
                });
            }
            AlterAction::DropConstraint { name, .. }
                if self.def.checks.iter().any(|c| c.name == *name) =>
            {
                self.def.checks.retain(|c| c.name != *name)
            }
            // OID 0 until the statement's new constraints are given theirs; the rows
            // are checked once the new definition is stored.
            AlterAction::AddForeignKey(fk) => self.def.foreign_keys.push(fk.clone()),
            AlterAction::DropConstraint { name, .. }
                if self.def.foreign_keys.iter().any(|f| f.name == *name) =>
            {
                self.def.foreign_keys.retain(|f| f.name != *name)
            }
            AlterAction::DropConstraint { name, if_exists } => {
                let constraint = self
                    .def
                    .indexes
                    .iter()
                    .position(|i| i.constraint_oid.is_some() && i.name == *name);
                match constraint {
                    Some(i) => {
                        let what = format!("constraint {name} on table {table}");
                        let (tables, oid) = (shared.catalog.tables(), self.def.indexes[i].oid);
                        crate::foreign_keys::refuse_drop_of_referenced_key(
                            &tables, &self.def, oid, &what,
                        )?;
                        let index = self.def.indexes.remove(i);
                        self.rebuild.retain(|n| *n != index.name);
                    }
                    None if self.def.pk_name.as_deref() == Some(name) => {
                        return Err(PgError::unsupported(
                            "ALTER TABLE DROP CONSTRAINT of a primary key",
                        ))
                    }
                    None if *if_exists => notice(
                        out,
                        codes::SUCCESSFUL_COMPLETION,
                        format!(
                            "constraint \"{name}\" of relation \"{table}\" does not exist, skipping"
                        ),
                    ),
                    None => {
                        return Err(PgError::new(
                            codes::UNDEFINED_OBJECT,
                            format!("constraint \"{name}\" of relation \"{table}\" does not exist"),
                        ))
                    }
                }
            }
        }
        Ok(())
    }

    /// Drops column `i` as PostgreSQL does: the indexes (and UNIQUE constraints) that
    /// cover it go with it; the columns after it move up one place.
    fn drop_column(&mut self, i: usize) -> PgResult<()> {
        let def = &mut self.def;
        if def.primary_key.as_ref().is_some_and(|k| k.contains(&i)) {
            return Err(PgError::unsupported(
                "ALTER TABLE DROP COLUMN of a primary-key column",
            ));
        }
        let shift = |c: &mut usize| {
            if *c > i {
                *c -= 1
            }
        };
        // The foreign keys on the column go with it, as PostgreSQL's; the others' columns
        // (a self-reference's referenced ones too) move up with the columns.
        def.foreign_keys.retain(|f| !f.columns.contains(&i));
        let oid = def.oid;
        for fk in &mut def.foreign_keys {
            fk.columns.iter_mut().for_each(shift);
            if fk.parent == oid {
                fk.parent_columns.iter_mut().for_each(shift);
            }
        }
        // The CHECK constraints that read the column go with it, as PostgreSQL's.
        let mut kept = Vec::with_capacity(def.checks.len());
        for check in std::mem::take(&mut def.checks) {
            let bound = sql::binder::bind_check(def, &check)?;
            if !sql::deparse::columns_read(&bound).contains(&i) {
                kept.push(check);
            }
        }
        def.checks = kept;
        def.columns.remove(i);
        self.check_not_null.remove(i);
        self.origin.remove(i);
        self.changes.push(RowChange::Remove(i));
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut def.indexes)
            .into_iter()
            .partition(|ix| ix.columns.iter().any(|c| c.column == i));
        self.rebuild
            .retain(|n| !gone.iter().any(|ix| ix.name == *n));
        def.indexes = kept;
        for index in &mut def.indexes {
            for c in &mut index.columns {
                shift(&mut c.column);
            }
        }
        if let Some(key) = &mut def.primary_key {
            key.iter_mut().for_each(shift);
        }
        def.distribution = match def.distribution {
            // A table without a primary key keeps its rows under their row ids, which
            // carry their buckets: they stay where they are, spread as round-robin rows.
            Distribution::Hash { column } if column == i => Distribution::RoundRobin,
            Distribution::Hash { mut column } => {
                shift(&mut column);
                Distribution::Hash { column }
            }
            other => other,
        };
        Ok(())
    }
}

/// 2BP01 where a foreign key references column `i` of `table` (the table's own
/// self-references excepted when they go with the column); 0A000 where one from
/// another table references a column after it, whose position would move.
fn refuse_change_of_referenced(
    shared: &Shared,
    table: &TableDef,
    i: usize,
    what: &str,
) -> PgResult<()> {
    use sql::catalog::Catalog;
    for child in shared.catalog.referencing(table.oid) {
        let keys = match child.oid == table.oid {
            true => &table.foreign_keys,
            false => &child.foreign_keys,
        };
        for fk in keys.iter().filter(|f| f.parent == table.oid) {
            if child.oid == table.oid && fk.columns.contains(&i) {
                continue;
            }
            if fk.parent_columns.contains(&i) {
                return Err(PgError::new(
                    codes::DEPENDENT_OBJECTS_STILL_EXIST,
                    format!(
                        "cannot drop column {} of table {} because other objects depend on it",
                        table.columns[i].name, table.name
                    ),
                )
                .with_detail(format!(
                    "constraint {} on table {} depends on column {} of table {}",
                    fk.name, child.name, table.columns[i].name, table.name
                ))
                .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
            }
            if child.oid != table.oid && fk.parent_columns.iter().any(|&c| c > i) {
                return Err(PgError::unsupported(format!(
                    "{what} of a table another table's foreign key references"
                )));
            }
        }
    }
    Ok(())
}

fn no_column(name: &str, table: &str) -> PgError {
    PgError::new(
        codes::UNDEFINED_COLUMN,
        format!("column \"{name}\" of relation \"{table}\" does not exist"),
    )
}

/// One pass over the table's rows at the statement's snapshot, in its transaction (the
/// transaction's own writes included): each row changed as `changes` say and checked
/// for NULLs where `check_not_null` says, and (`rewrites`) written into the new
/// definition's relation under its key (or row id) as stored, a batch at a time (a large
/// rewrite's writes spill as any large transaction's do, decision 0020).
struct RowPass<'p> {
    old: &'p TableDef,
    new: &'p Arc<TableDef>,
    changes: &'p [RowChange<'p>],
    check_not_null: &'p [bool],
    /// CHECK constraints added, which every row must satisfy.
    checks: &'p [BoundCheck],
    rewrites: bool,
}

impl RowPass<'_> {
    async fn run(
        &self,
        shared: &Shared,
        eval: &Evaluation<'_>,
        rows: &mut InTxn<'_>,
    ) -> PgResult<()> {
        let dn = &shared.datanodes;
        let snapshot = rows.snapshot;
        let txn = &mut *rows.txn;
        let mut after = Bound::Unbounded;
        loop {
            // A batch read (the scan borrows the transaction), then written.
            let mut batch = Vec::with_capacity(REWRITE_BATCH);
            {
                let ex = Executor {
                    dn,
                    txn: &*txn,
                    snapshot,
                    params: &[],
                    session: eval.view,
                    state: eval.state,
                };
                let mut scan = dn
                    .scan(
                        &*txn,
                        self.old.rel,
                        after.clone(),
                        Bound::Unbounded,
                        snapshot,
                    )
                    .await?;
                while batch.len() < REWRITE_BATCH {
                    let Some(item) = scan.next().await else { break };
                    let (key, bytes) = item?;
                    let row = self.changed(&ex, &bytes).await?;
                    batch.push((key, row));
                }
            }
            let Some((last, _)) = batch.last() else {
                return Ok(());
            };
            after = Bound::Excluded(last.clone());
            if self.rewrites {
                for (key, row) in &batch {
                    dn.put(txn, self.new.rel, key, Some(encode(row)))?;
                }
            }
        }
    }

    /// The stored row `bytes` as a row of the new definition, checked for NULLs and
    /// against the CHECK constraints added.
    async fn changed(&self, ex: &Executor<'_>, bytes: &[u8]) -> PgResult<Vec<Value>> {
        let mut row = decode(bytes, self.old)?;
        for change in self.changes {
            match change {
                RowChange::Append(None) => row.push(Value::Null),
                RowChange::Append(Some(default)) => {
                    let value = ex.eval(&[], default, &row).await?;
                    row.push(value);
                }
                RowChange::Remove(i) => {
                    row.remove(*i);
                }
                RowChange::Cast { column, from, to } => {
                    let value = std::mem::replace(&mut row[*column], Value::Null);
                    row[*column] = types::cast::cast(value, from, to, false)?;
                }
            }
        }
        for (c, _) in self.check_not_null.iter().enumerate().filter(|(_, &n)| n) {
            if row[c].is_null() {
                return Err(PgError::new(
                    codes::NOT_NULL_VIOLATION,
                    format!(
                        "column \"{}\" of relation \"{}\" contains null values",
                        self.new.columns[c].name, self.new.name
                    ),
                ));
            }
        }
        for check in self.checks {
            if ex.eval(&[], &check.expr, &row).await? == Value::Bool(false) {
                return Err(PgError::new(
                    codes::CHECK_VIOLATION,
                    format!(
                        "check constraint \"{}\" of relation \"{}\" is violated by some row",
                        check.name, self.new.name
                    ),
                ));
            }
        }
        Ok(row)
    }
}
