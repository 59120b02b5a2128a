//! INSERT, UPDATE, DELETE and COPY rows: reads at the statement's snapshot, row locks and
//! writes through the datanode transaction.
//!
//! UPDATE/DELETE follow PostgreSQL's READ COMMITTED rule: rows are found at the statement
//! snapshot, then locked; if a concurrent transaction committed a newer version meanwhile,
//! the WHERE clause is re-checked against it (EvalPlanQual) and the new values computed
//! from it. Under REPEATABLE READ the datanode refuses such a row with 40001.
//!
//! `UPDATE t SET c = c + d WHERE <primary key> = …` without RETURNING, with `d`
//! independent of the row, is an increment: when another transaction holds the row, the
//! datanode defers it to commit under an increment lock (`Datanode::increment`), so that
//! concurrent increments of a hot row do not queue behind each other. Its result is the
//! one READ COMMITTED gives with the row lock: the newest committed value plus `d`.

use crate::copy::{CopyField, CopyRow};
use crate::cumulative_stats::Change;
use crate::exec::memory::Held;
use crate::exec::{
    check_row, decode, encode, insert_row, key_of_values, row_count, row_id_key, row_key,
    unique_violation, Executor, KeyedRow, ReadLimit, Row, SessionView, StatementState,
};
use crate::spool::Spool;

mod joined;
use datanode_client::{ColumnIncrement, IncrementOp, LockWait, Timestamp};
use distribution::{ClusterTxn, Datanodes};
use pgerror::{codes, PgError, PgResult};
use spill::row_size;
use sql::eval::{EvalCtx, EvalEnv};
use sql::functions::ScalarFunc;
use sql::plan::{
    Access, Arbiter, BoundCheck, ConflictUpdate, CopyFrom, Delete, Expr, IndexLookup, Insert,
    InsertTarget, LockedRowWait, OutputColumn, Query, Rel, Update,
};
use sql::TableDef;
use std::sync::Arc;
use types::ops::BinaryOp;
use types::{DataType, Value};

/// Rows returned by RETURNING (empty without it) and the number of rows affected.
pub type DmlResult = (Vec<Row>, u64);

/// What `Dml::select_locked` found.
pub enum Locked {
    /// The rows, each locked, as the snapshot saw them.
    Rows(Vec<Row>),
    /// A row to return was changed by a transaction that committed after the snapshot.
    Changed,
}

/// Row ids are reserved in blocks so that bulk loads do not touch the allocator per row;
/// blocks start at one id and double, so that single-row INSERTs use up the allocator's
/// durable window (and so its fsync) a thousand times more slowly than fixed blocks would.
const ROW_ID_BLOCK_MAX: u64 = 1024;

/// Hands out row ids for a table without a primary key.
struct RowIds {
    next: u64,
    left: u64,
    block: u64,
}

impl RowIds {
    fn new() -> Self {
        RowIds {
            next: 0,
            left: 0,
            block: 1,
        }
    }

    /// The row id of `table`'s next new `row` (its bucket in the low bits,
    /// `distribution::new_row_id`).
    async fn next(&mut self, dn: &Datanodes, table: &TableDef, row: &[Value]) -> PgResult<u64> {
        if self.left == 0 {
            self.next = dn.allocate_row_ids(table.rel, self.block).await?;
            self.left = self.block;
            self.block = (self.block * 2).min(ROW_ID_BLOCK_MAX);
        }
        self.left -= 1;
        self.next += 1;
        Ok(distribution::new_row_id(table, self.next - 1, row))
    }
}

/// Write one new row: by primary key (checking uniqueness) or under a fresh row id;
/// returns its key.
async fn write_new_row(
    dn: &Datanodes,
    txn: &mut ClusterTxn,
    table: &TableDef,
    row: &[Value],
    ids: &mut RowIds,
) -> PgResult<Vec<u8>> {
    let key = new_row_key(dn, table, row, ids).await?;
    write_with_entries(dn, txn, table, row, &key, None).await?;
    Ok(key)
}

/// Stores a new row under `key` with its index entries, but that of
/// `table.indexes[written]` (written already).
async fn write_with_entries(
    dn: &Datanodes,
    txn: &mut ClusterTxn,
    table: &TableDef,
    row: &[Value],
    key: &[u8],
    written: Option<usize>,
) -> PgResult<()> {
    write_row_at(dn, txn, table, row, key).await?;
    crate::index::insert_entries(dn, txn, table, row, key, written).await
}

/// A new row's key: its primary key, or a fresh row id.
async fn new_row_key(
    dn: &Datanodes,
    table: &TableDef,
    row: &[Value],
    ids: &mut RowIds,
) -> PgResult<Vec<u8>> {
    match row_key(table, row) {
        Some(key) => Ok(key),
        None => Ok(row_id_key(ids.next(dn, table, row).await?)),
    }
}

/// Stores a new row under `key`: a primary key is checked for uniqueness, a row id is new.
async fn write_row_at(
    dn: &Datanodes,
    txn: &mut ClusterTxn,
    table: &TableDef,
    row: &[Value],
    key: &[u8],
) -> PgResult<()> {
    if table.primary_key.is_some() {
        dn.insert(txn, table.rel, key, encode(row), || {
            unique_violation(table, row)
        })
        .await
    } else {
        dn.put_new_key(txn, table.rel, key, encode(row)).await
    }
}

/// Writes a row INSERT … ON CONFLICT proposes, its arbiter's key first: `Ok(Err(e))` is
/// the arbiter's unique violation, before anything was written (`AnyUnique`: any unique
/// violation, after the writes before it, which the caller undoes).
async fn write_proposed_row(
    dn: &Datanodes,
    txn: &mut ClusterTxn,
    table: &TableDef,
    row: &[Value],
    ids: &mut RowIds,
    arbiter: Arbiter,
) -> PgResult<Result<Vec<u8>, PgError>> {
    let arbitrated = |r: PgResult<()>| match r {
        Err(e) if e.code == codes::UNIQUE_VIOLATION => Ok(Err(e)),
        Err(e) => Err(e),
        Ok(()) => Ok(Ok(())),
    };
    let key = new_row_key(dn, table, row, ids).await?;
    match arbiter {
        Arbiter::AnyUnique => {
            let written = write_with_entries(dn, txn, table, row, &key, None).await;
            return Ok(arbitrated(written)?.map(|()| key));
        }
        Arbiter::PrimaryKey => {
            if let Err(e) = arbitrated(write_row_at(dn, txn, table, row, &key).await)? {
                return Ok(Err(e));
            }
            crate::index::insert_entries(dn, txn, table, row, &key, None).await?;
        }
        Arbiter::Index(i) => {
            let index = &table.indexes[i];
            let entry = crate::index::insert_entry(dn, txn, table, index, row, &key).await;
            if let Err(e) = arbitrated(entry)? {
                return Ok(Err(e));
            }
            write_with_entries(dn, txn, table, row, &key, Some(i)).await?;
        }
    }
    Ok(Ok(key))
}

/// Whether `e` reads no column of its row but those `allowed`, and no table (constants,
/// parameters, allowed columns and operators or functions over them).
fn reads_only(e: &Expr, allowed: &dyn Fn(usize) -> bool) -> bool {
    let all = |es: &[Expr]| es.iter().all(|e| reads_only(e, allowed));
    match e {
        Expr::Const(..) | Expr::Param { .. } => true,
        Expr::Column {
            depth: 0, index, ..
        } => allowed(*index),
        Expr::Binary { left, right, .. } | Expr::And(left, right) | Expr::Or(left, right) => {
            reads_only(left, allowed) && reads_only(right, allowed)
        }
        Expr::Unary { operand, .. }
        | Expr::Cast { operand, .. }
        | Expr::Not(operand)
        | Expr::IsNull { operand, .. } => reads_only(operand, allowed),
        Expr::Func { args, .. } | Expr::Coalesce { args, .. } => all(args),
        _ => false,
    }
}

fn row_independent(e: &Expr) -> bool {
    reads_only(e, &|_| false)
}

/// The increments of an UPDATE that is one (see the module comment): (column, + or −,
/// amount) for each assignment. Integer columns outside the primary key only: integer
/// addition commutes exactly (an overflow is reported when the increment is applied).
pub fn increments_of(upd: &Update) -> Option<Vec<(usize, BinaryOp, &Expr)>> {
    let pk = upd.table.primary_key.as_ref()?;
    // A foreign key's columns are checked with the row's new values.
    if !upd.foreign_keys.is_empty() {
        return None;
    }
    // The WHERE clause may read only key columns, which no increment changes: whether it
    // holds cannot change between the statement and the commit.
    let key_only_filter = upd
        .filter
        .as_ref()
        .is_none_or(|f| reads_only(f, &|c| pk.contains(&c)));
    if upd.returning.is_some() || !key_only_filter || !matches!(upd.access, Access::PrimaryKey(_)) {
        return None;
    }
    // An indexed column's entry moves with its value, which a deferred increment leaves
    // unknown until commit.
    let assigned = || upd.assignments.iter().map(|(col, _)| *col);
    if upd.table.indexes.iter().any(|ix| ix.covers_any(assigned())) {
        return None;
    }
    upd.assignments
        .iter()
        .map(|(col, e)| match e {
            Expr::Binary { op: op @ (BinaryOp::Add | BinaryOp::Sub), left, right, ty }
                if matches!(**left, Expr::Column { depth: 0, index, ty: ref cty } if index == *col && cty == ty)
                    && matches!(ty, DataType::Int2 | DataType::Int4 | DataType::Int8)
                    && !pk.contains(col)
                    && row_independent(right) =>
            {
                Some((*col, *op, &**right))
            }
            _ => None,
        })
        .collect()
}

/// Whether an INSERT leaves the transaction's deferred increments alone: it reads no
/// table (its rows are VALUES of row-independent expressions) and returns nothing.
fn insert_reads_no_table(ins: &Insert) -> bool {
    ins.returning.is_none()
        && matches!(&ins.source, Rel::Values { rows } if rows.iter().flatten().all(row_independent))
        && ins.targets.iter().all(|t| match t {
            InsertTarget::Default(Some(e)) => row_independent(e),
            _ => true,
        })
}

/// Whether the deferred increments of the transaction must be applied before `stmt`
/// runs: any statement that could read or rewrite their rows, and SAVEPOINT (a savepoint
/// must not fall between an increment and its application).
pub fn needs_applied_increments(stmt: &sql::Statement) -> bool {
    use sql::Statement as S;
    match stmt {
        S::Insert(ins) => !insert_reads_no_table(ins),
        S::Update(upd) => increments_of(upd).is_none(),
        S::Query(_)
        | S::CopyTo(_)
        | S::Delete(_)
        | S::CreateTable(_)
        | S::CreateTableAs(_)
        | S::DropTable { .. }
        | S::Truncate { .. }
        | S::CreateIndex(_)
        | S::DropIndex { .. } => true,
        // Sequences and views are not rows.
        S::CreateSequence(_) | S::AlterSequence(_) | S::DropSequence { .. } => false,
        S::CreateView(_) | S::DropView { .. } | S::RenameView { .. } => false,
        S::Comment { .. } => false,
        S::CreateEnum(_)
        | S::AddEnumValue(_)
        | S::RenameEnumValue(_)
        | S::RenameType { .. }
        | S::DropType { .. } => false,
        S::CreateRole(_) | S::AlterRole(_) | S::DropRole { .. } | S::GrantRole(_) | S::Grant(_) => {
            false
        }
        S::AlterTable(_) | S::Vacuum { .. } | S::Savepoint(_) | S::CopyFrom(_) => true,
        S::Begin { .. } | S::Commit | S::Rollback | S::Release(_) | S::RollbackTo(_) => false,
        // Neither reads rows; EXECUTE's statement is checked itself when it runs.
        S::Prepare { .. } | S::Execute { .. } => false,
        // A prepare applies the increments itself; the others end another transaction.
        S::PrepareTransaction(_) | S::CommitPrepared(_) | S::RollbackPrepared(_) => false,
        S::SetTransaction { .. }
        | S::Set { .. }
        | S::Show { .. }
        | S::Discard
        | S::LockTables(_)
        | S::Extension(_)
        | S::Deallocate(_)
        | S::Empty => false,
        // ANALYZE runs the statement.
        S::Explain(explained, analyze) => analyze.is_some() && needs_applied_increments(explained),
    }
}

/// Target rows a streamed UPDATE or DELETE (`streams`) reads, locks and writes at a
/// time: it holds about one batch, and each batch opens the scan once more, which costs
/// little next to a thousand rows.
const TARGET_BATCH: ReadLimit = ReadLimit {
    rows: 1000,
    bytes: 4 << 20,
};

/// Source rows an INSERT writes at a time, between which it yields (`Executor::pace`).
const SOURCE_BATCH: usize = 1000;

/// Whether an UPDATE or DELETE may read and write its rows a batch at a time and still
/// not see its own writes, as if it had read them all first: each batch's scan goes on
/// after the key the one before ended at, so no row may move to another key (an
/// assignment to a primary-key column; rows without one keep their row ids), and no
/// subquery may read the table between batches. Every access is in key order; one by
/// primary key finds one row, a batch in any case.
fn streams(
    table: &TableDef,
    access: &Access,
    assignments: &[(usize, Expr)],
    filter: Option<&Expr>,
    returning: &Option<Vec<(Expr, OutputColumn)>>,
) -> bool {
    // An index's entries move when the statement changes their columns: its rows are
    // read first.
    if matches!(
        access,
        Access::PrimaryKey(_) | Access::PrimaryKeys { .. } | Access::Index { .. }
    ) {
        return false;
    }
    let pk = table.primary_key.as_deref().unwrap_or_default();
    let reads = |e: &Expr| reads_table(e, table.rel);
    assignments
        .iter()
        .all(|(col, e)| !pk.contains(col) && !reads(e))
        && !filter.is_some_and(reads)
        && !returning.iter().flatten().any(|(e, _)| reads(e))
}

fn returning_has_subquery(returning: &Option<Vec<(Expr, OutputColumn)>>) -> bool {
    returning.iter().flatten().any(|(e, _)| e.has_subquery())
}

/// Whether a subquery in `e` reads the table `rel`.
fn reads_table(e: &Expr, rel: u64) -> bool {
    let mut found = false;
    e.visit(&mut |x| {
        if let Expr::Subquery { plan, .. } = x {
            found |= rel_reads_table(&plan.root, rel);
        }
    });
    found
}

/// Whether a subquery in a scan's key or bounds reads the table `rel`.
fn access_reads_table(access: &Access, rel: u64) -> bool {
    let expr = |e: &Expr| reads_table(e, rel);
    match access {
        Access::Full => false,
        Access::PrimaryKey(_) | Access::PrimaryKeys { .. } | Access::KeyRange { .. } => {
            access.key_exprs().any(expr)
        }
        Access::Index {
            lookup: IndexLookup::Range { lower, upper },
            ..
        } => [lower, upper].into_iter().flatten().any(|b| expr(&b.value)),
        Access::Index {
            lookup: IndexLookup::Prefixes(prefixes),
            ..
        } => prefixes.iter().flatten().any(expr),
    }
}

/// Whether `r` scans the table `rel`, or a subquery in one of its expressions does.
fn rel_reads_table(r: &Rel, rel: u64) -> bool {
    let input = |i: &Rel| rel_reads_table(i, rel);
    let expr = |e: &Expr| reads_table(e, rel);
    match r {
        Rel::Unit | Rel::System { .. } | Rel::WorkTable { .. } => false,
        Rel::Scan { table, access } => table.rel == rel || access_reads_table(access, rel),
        // a pushed scan's own expressions hold no subquery (`sql::pushdown::pushable`)
        Rel::PushedScan(p) => p.table.rel == rel || access_reads_table(&p.access, rel),
        Rel::Values { rows } => rows.iter().flatten().any(expr),
        Rel::GenerateSeries { start, stop, step } => {
            expr(start) || expr(stop) || step.as_ref().is_some_and(expr)
        }
        Rel::Unnest { array } => expr(array),
        Rel::RowsFrom { functions, .. } => functions.iter().any(input),
        Rel::Filter {
            input: i,
            predicate,
        } => input(i) || expr(predicate),
        Rel::Project { input: i, exprs } => input(i) || exprs.iter().any(expr),
        Rel::Join {
            left, right, on, ..
        } => input(left) || input(right) || on.as_ref().is_some_and(expr),
        Rel::Aggregate {
            input: i,
            group_by,
            aggs,
        } => {
            input(i)
                || group_by.iter().any(expr)
                || aggs.iter().any(|a| a.arg.iter().chain(&a.filter).any(expr))
        }
        Rel::Sort { input: i, keys } => input(i) || keys.iter().any(|k| expr(&k.expr)),
        Rel::Limit {
            input: i,
            limit,
            offset,
        } => input(i) || limit.iter().chain(offset).any(expr),
        Rel::Distinct { input: i } | Rel::Unique { input: i, .. } => input(i),
        Rel::WindowAgg { input: i, window } => input(i) || window.exprs().any(expr),
        Rel::Union { left, right, .. } | Rel::SetOp { left, right, .. } => {
            input(left) || input(right)
        }
        Rel::RecursiveUnion {
            base, recursive, ..
        } => input(base) || input(recursive),
    }
}

/// Where the next batch of an UPDATE's or DELETE's rows starts.
enum Position {
    Start,
    After(Vec<u8>),
    End,
}

/// The rows an UPDATE or DELETE finds: in batches of `TARGET_BATCH` where it `streams`,
/// else all in one.
struct TargetRows<'p> {
    table: &'p TableDef,
    access: &'p Access,
    filter: Option<&'p Expr>,
    limit: ReadLimit,
    position: Position,
}

impl<'p> TargetRows<'p> {
    fn new(
        table: &'p TableDef,
        access: &'p Access,
        filter: Option<&'p Expr>,
        streams: bool,
    ) -> Self {
        let limit = if streams {
            TARGET_BATCH
        } else {
            ReadLimit::NONE
        };
        TargetRows {
            table,
            access,
            filter,
            limit,
            position: Position::Start,
        }
    }

    /// The next batch, charged to `held`; None after the last.
    async fn next(
        &mut self,
        dml: &Dml<'_>,
        txn: &ClusterTxn,
        held: &mut Held<'_>,
    ) -> PgResult<Option<Vec<KeyedRow>>> {
        let after = match &self.position {
            Position::Start => None,
            Position::After(key) => Some(key.as_slice()),
            Position::End => return Ok(None),
        };
        let (rows, resume) = dml
            .reader(txn)
            .keyed_rows(
                self.table,
                self.access,
                self.filter,
                after,
                self.limit,
                held,
            )
            .await?;
        self.position = resume.map_or(Position::End, Position::After);
        Ok(Some(rows))
    }
}

/// What a DML statement has done: the number of rows it changed, and what RETURNING
/// made of them. RETURNING runs after each batch's writes, or after the statement's
/// last write if it has a subquery (which reads the table as the statement left it);
/// the rows it waits for and its results are charged to the statement.
struct Affected<'s> {
    returning: Option<&'s [(Expr, OutputColumn)]>,
    at_end: bool,
    /// Rows changed that RETURNING has not run over yet.
    changed: Vec<Row>,
    changed_held: Held<'s>,
    returned: Vec<Row>,
    returned_held: Held<'s>,
    count: u64,
}

impl<'s> Affected<'s> {
    fn new(
        state: &'s StatementState<'s>,
        returning: &'s Option<Vec<(Expr, OutputColumn)>>,
    ) -> Self {
        Affected {
            returning: returning.as_deref(),
            at_end: returning_has_subquery(returning),
            changed: Vec::new(),
            changed_held: Held::new(&state.memory),
            returned: Vec::new(),
            returned_held: Held::new(&state.memory),
            count: 0,
        }
    }

    fn changed(&mut self, row: Row) -> PgResult<()> {
        self.count += 1;
        if self.returning.is_some() {
            self.changed_held.charge(row_size(&row))?;
            self.changed.push(row);
        }
        Ok(())
    }

    /// After a batch's writes.
    async fn batch_written(&mut self, ex: &Executor<'_>) -> PgResult<()> {
        if self.at_end {
            return Ok(());
        }
        self.run_returning(ex).await
    }

    /// After the statement's last write: the rows RETURNING made and the count.
    async fn finish(mut self, ex: &Executor<'_>) -> PgResult<DmlResult> {
        self.run_returning(ex).await?;
        Ok((self.returned, self.count))
    }

    async fn run_returning(&mut self, ex: &Executor<'_>) -> PgResult<()> {
        let Some(items) = self.returning else {
            return Ok(());
        };
        for r in std::mem::take(&mut self.changed) {
            let mut values = Vec::with_capacity(items.len());
            for (e, _) in items {
                values.push(ex.eval(&[], e, &r).await?);
            }
            self.returned_held.charge(row_size(&values))?;
            self.returned.push(values);
        }
        self.changed_held.clear();
        Ok(())
    }
}

/// What every DML statement runs with: the datanode, the statement snapshot, the
/// parameters and the session. The transaction is passed separately because reads
/// borrow it shared and writes borrow it exclusively, in turns.
pub struct Dml<'a> {
    pub dn: &'a Datanodes,
    pub snapshot: Timestamp,
    pub params: &'a [Value],
    pub view: &'a SessionView<'a>,
    pub state: &'a StatementState<'a>,
}

impl<'a> Dml<'a> {
    /// A wait for a row lock, ended with 55P03 after lock_timeout.
    pub(crate) async fn lock_wait<T>(
        &self,
        wait: impl std::future::Future<Output = PgResult<T>>,
    ) -> PgResult<T> {
        let wait = self.view.activity.waiting_for_lock(wait);
        match self.state.lock_timeout {
            None => wait.await,
            Some(limit) => tokio::time::timeout(limit, wait).await.unwrap_or_else(|_| {
                Err(PgError::new(
                    codes::LOCK_NOT_AVAILABLE,
                    "canceling statement due to lock timeout",
                ))
            }),
        }
    }

    /// `exec::check_row` for a row this statement writes.
    fn check_row(
        &self,
        txn: &ClusterTxn,
        table: &TableDef,
        checks: &[BoundCheck],
        row: &[Value],
    ) -> PgResult<()> {
        let ex = self.reader(txn);
        let ctx = EvalCtx {
            params: self.params,
            outer: &[],
            env: &ex,
        };
        check_row(&ctx, table, checks, row)
    }

    /// A read-only executor over `txn` at the statement snapshot.
    pub fn reader<'t>(&'t self, txn: &'t ClusterTxn) -> Executor<'t> {
        Executor {
            dn: self.dn,
            txn,
            snapshot: self.snapshot,
            params: self.params,
            session: self.view,
            state: self.state,
        }
    }

    /// The source is read to its end before the first row is written: its scans borrow
    /// the transaction that writes borrow exclusively, and a source that reads the table
    /// written (`INSERT INTO t SELECT … FROM t`) must not see the statement's rows. Its
    /// rows wait in a spool: in memory up to work_mem, past it in a temporary file.
    pub async fn insert(&self, txn: &mut ClusterTxn, ins: &Insert) -> PgResult<DmlResult> {
        let done = self.insert_rows(txn, ins).await?;
        let stats = self.view.cumulative_stats;
        stats.changed(ins.table.oid, Change::Inserted, done.1);
        Ok(done)
    }

    async fn insert_rows(&self, txn: &mut ClusterTxn, ins: &Insert) -> PgResult<DmlResult> {
        let table = &ins.table;
        let mut spool = Spool::new(self.state);
        self.reader(txn)
            .each_row(&ins.source, Default::default(), &mut |row| {
                spool.push(row).map(|()| true)
            })
            .await?;
        let mut source = spool.finish()?;
        let mut ids = RowIds::new();
        let mut affected = Affected::new(self.state, &ins.returning);
        // The keys this statement inserted or updated: ON CONFLICT DO UPDATE touches a row
        // once at most, as in PostgreSQL.
        let mut touched = rustc_hash::FxHashSet::default();
        loop {
            let rows = source.next_batch(SOURCE_BATCH)?;
            if rows.is_empty() {
                break;
            }
            let batch_len = rows.len();
            // The rows written, kept for their foreign keys' checks after the batch.
            let mut written = Vec::new();
            let keeps_parents = !ins.foreign_keys.parents.is_empty();
            for src in rows {
                let row = {
                    let ex = self.reader(txn);
                    insert_row(
                        &EvalCtx {
                            params: self.params,
                            outer: &[],
                            env: &ex,
                        },
                        table,
                        &ins.targets,
                        &ins.checks,
                        src,
                    )?
                };
                if let Some(update) = &ins.on_conflict_update {
                    self.upsert(txn, ins, update, row, &mut ids, &mut touched, &mut affected)
                        .await?;
                    continue;
                }
                if keeps_parents {
                    written.push(row.clone());
                }
                // A new key waits for a concurrent inserter of the same key: a lock wait.
                if !ins.on_conflict_do_nothing {
                    self.lock_wait(write_new_row(self.dn, txn, table, &row, &mut ids))
                        .await?;
                    affected.changed(row)?;
                    continue;
                }
                // Without a target, a row skipped for a unique index's entry was written
                // already: undone to here.
                let skip_to = (ins.arbiter == Arbiter::AnyUnique && !table.indexes.is_empty())
                    .then(|| txn.savepoint());
                let proposed = write_proposed_row(self.dn, txn, table, &row, &mut ids, ins.arbiter);
                match self.lock_wait(proposed).await? {
                    Ok(_) => affected.changed(row)?,
                    Err(_conflict) => {
                        if let Some(sp) = &skip_to {
                            txn.rollback_to(sp)?;
                        }
                        if keeps_parents {
                            written.pop();
                        }
                    }
                }
            }
            let rows: Vec<_> = written.iter().map(|r| (None, r)).collect();
            self.check_parents(txn, table, &ins.foreign_keys.parents, &rows)
                .await?;
            let ex = self.reader(txn);
            affected.batch_written(&ex).await?;
            ex.pace(batch_len).await;
        }
        affected.finish(&self.reader(txn)).await
    }

    /// One row of INSERT … ON CONFLICT (arbiter) DO UPDATE: inserted, or, if a row holds
    /// its arbiter's values, that row locked and updated from itself and the proposed row
    /// (when the WHERE clause holds). A conflict on another unique key stays an error, as
    /// PostgreSQL's.
    #[allow(clippy::too_many_arguments)]
    async fn upsert(
        &self,
        txn: &mut ClusterTxn,
        ins: &Insert,
        update: &ConflictUpdate,
        proposed: Row,
        ids: &mut RowIds,
        touched: &mut rustc_hash::FxHashSet<Vec<u8>>,
        affected: &mut Affected<'_>,
    ) -> PgResult<()> {
        let table = &ins.table;
        let twice = || {
            PgError::new(
                codes::CARDINALITY_VIOLATION,
                "ON CONFLICT DO UPDATE command cannot affect row a second time",
            )
            .with_hint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values.")
        };
        // The conflicting row may go before it is locked: then the row is proposed again,
        // as PostgreSQL retries its speculative insertion.
        let (key, existing) = loop {
            let written = write_proposed_row(self.dn, txn, table, &proposed, ids, ins.arbiter);
            if let Ok(key) = self.lock_wait(written).await? {
                touched.insert(key);
                let parents = &ins.foreign_keys.parents;
                self.check_parents(txn, table, parents, &[(None, &proposed)])
                    .await?;
                return affected.changed(proposed);
            }
            if let Some(found) = self
                .lock_conflicting(txn, table, ins.arbiter, &proposed)
                .await?
            {
                break found;
            }
        };
        if !touched.insert(key.clone()) {
            return Err(twice());
        }
        let old = decode(&existing, table)?;
        let mut both = old.clone();
        both.extend(proposed);
        if !self
            .reader(txn)
            .matches(&[], update.filter.as_ref(), &both)
            .await?
        {
            return Ok(());
        }
        let mut new = old.clone();
        for (col, e) in &update.assignments {
            new[*col] = self.reader(txn).eval(&[], e, &both).await?;
        }
        self.check_row(txn, table, &ins.checks, &new)?;
        let new_key = row_key(table, &new).unwrap_or_else(|| key.clone());
        if new_key != key {
            self.lock_wait(self.dn.insert(txn, table.rel, &new_key, encode(&new), || {
                unique_violation(table, &new)
            }))
            .await?;
            self.dn.put(txn, table.rel, &key, None)?;
        } else {
            self.dn.put(txn, table.rel, &key, Some(encode(&new)))?;
        }
        crate::index::update_entries(self.dn, txn, table, (&old, &key), (&new, &new_key)).await?;
        let keys = &ins.foreign_keys;
        self.check_parents(txn, table, &keys.parents, &[(Some(&old), &new)])
            .await?;
        if !keys.children.is_empty() {
            let changed = [(old, Some(new.clone()))];
            self.follow_children(txn, table, &keys.children, &changed)
                .await?;
        }
        affected.changed(new)
    }

    /// The key and latest version of the row holding `proposed`'s values of `arbiter`,
    /// locked (its unique entry too); None if it has gone since the conflict.
    async fn lock_conflicting(
        &self,
        txn: &mut ClusterTxn,
        table: &TableDef,
        arbiter: Arbiter,
        proposed: &[Value],
    ) -> PgResult<Option<(Vec<u8>, bytes::Bytes)>> {
        let key = match arbiter {
            Arbiter::Index(i) => {
                let index = &table.indexes[i];
                let entry = index.entry(proposed, &[]);
                let held = self.dn.lock_row(txn, index.rel, &entry.key, LockWait::Wait);
                match self.lock_wait(held).await? {
                    Some(row_key) => row_key.to_vec(),
                    None => return Ok(None),
                }
            }
            _ => row_key(table, proposed)
                .ok_or_else(|| PgError::internal("ON CONFLICT on a primary key without one"))?,
        };
        let held = self.dn.lock_row(txn, table.rel, &key, LockWait::Wait);
        Ok(self.lock_wait(held).await?.map(|row| (key, row)))
    }

    /// Lock each candidate row and return the version to modify (re-checked if it changed).
    async fn lock_candidates(
        &self,
        txn: &mut ClusterTxn,
        table: &TableDef,
        candidates: Vec<KeyedRow>,
        filter: Option<&Expr>,
    ) -> PgResult<Vec<(Vec<u8>, Row)>> {
        let mut locked = Vec::with_capacity(candidates.len());
        for (key, seen, row) in candidates {
            self.reader(txn).pace(1).await;
            let Some(current) = self
                .lock_wait(self.dn.lock_row(txn, table.rel, &key, LockWait::Wait))
                .await?
            else {
                continue; // deleted by a transaction that committed after our snapshot
            };
            if current == seen {
                locked.push((key, row));
                continue;
            }
            let newest = decode(&current, table)?;
            if self.reader(txn).matches(&[], filter, &newest).await? {
                locked.push((key, newest));
            }
        }
        Ok(locked)
    }

    /// The increment path of `update` for the one row `key`: None if the datanode takes
    /// the ordinary way instead.
    async fn increment(
        &self,
        txn: &mut ClusterTxn,
        table: &Arc<TableDef>,
        key: &[u8],
        increments: Vec<(usize, BinaryOp, &Expr)>,
    ) -> PgResult<Option<DmlResult>> {
        let mut amounts = Vec::with_capacity(increments.len());
        for (column, op, e) in increments {
            let amount = self.reader(txn).eval(&[], e, &[]).await?;
            if amount.is_null() {
                // NULL + x is NULL, which NOT NULL may refuse: the ordinary way checks.
                return Ok(None);
            }
            let op = match op {
                BinaryOp::Add => IncrementOp::Add,
                BinaryOp::Sub => IncrementOp::Sub,
                _ => return Err(PgError::internal("an increment is + or -")),
            };
            amounts.push(ColumnIncrement { column, op, amount });
        }
        let done = self
            .lock_wait(self.dn.increment(txn, table.rel, key, amounts))
            .await?;
        Ok(done.map(|exists| (Vec::new(), exists as u64)))
    }

    pub async fn update(&self, txn: &mut ClusterTxn, upd: &Update) -> PgResult<DmlResult> {
        let done = self.update_rows(txn, upd).await?;
        let stats = self.view.cumulative_stats;
        stats.changed(upd.table.oid, Change::Updated, done.1);
        Ok(done)
    }

    async fn update_rows(&self, txn: &mut ClusterTxn, upd: &Update) -> PgResult<DmlResult> {
        if let Some(joined) = &upd.joined {
            return self.update_joined(txn, upd, joined).await;
        }
        let table = &upd.table;
        let mut affected = Affected::new(self.state, &upd.returning);
        if let Some(increments) = increments_of(upd) {
            let candidates = self
                .reader(txn)
                .keyed_row_present(table, &upd.access, upd.filter.as_ref())
                .await?;
            if let [(key, _, _)] = candidates.as_slice() {
                if let Some(done) = self.increment(txn, table, key, increments).await? {
                    return Ok(done);
                }
            }
            self.update_batch(txn, upd, candidates, &mut affected)
                .await?;
            return affected.finish(&self.reader(txn)).await;
        }
        // A referential action may change this table's rows again (a self-reference):
        // they are read first.
        let streams = upd.foreign_keys.children.is_empty()
            && streams(
                table,
                &upd.access,
                &upd.assignments,
                upd.filter.as_ref(),
                &upd.returning,
            );
        let mut targets = TargetRows::new(table, &upd.access, upd.filter.as_ref(), streams);
        loop {
            let mut held = Held::new(&self.state.memory);
            let Some(candidates) = targets.next(self, txn, &mut held).await? else {
                break;
            };
            self.update_batch(txn, upd, candidates, &mut affected)
                .await?;
        }
        affected.finish(&self.reader(txn)).await
    }

    /// Locks, computes and writes one batch of an UPDATE's rows.
    async fn update_batch(
        &self,
        txn: &mut ClusterTxn,
        upd: &Update,
        candidates: Vec<KeyedRow>,
        affected: &mut Affected<'_>,
    ) -> PgResult<()> {
        let table = &upd.table;
        let locked = self
            .lock_candidates(txn, table, candidates, upd.filter.as_ref())
            .await?;
        // Every new row is computed before the first is written, so that subqueries in
        // SET read the table as the statement found it (as PostgreSQL's, which read
        // at the command's snapshot), not with this statement's own writes; a statement
        // whose subqueries read its table is one batch (`streams`).
        let mut changes = Vec::with_capacity(locked.len());
        for (key, old) in locked {
            let mut new = old.clone();
            for (col, e) in &upd.assignments {
                new[*col] = self.reader(txn).eval(&[], e, &old).await?;
            }
            self.check_row(txn, table, &upd.checks, &new)?;
            changes.push((key, old, new));
        }
        for (key, old, new) in &changes {
            self.write_update(txn, table, key, old, new).await?;
        }
        self.keep_foreign_keys(txn, table, &upd.foreign_keys, &changes)
            .await?;
        for (_, _, new) in changes {
            affected.changed(new)?;
        }
        affected.batch_written(&self.reader(txn)).await
    }

    /// An UPDATE's foreign keys after a batch of `changes` (key, old row, new row): the
    /// new rows' referenced rows, and the rows referencing the old ones' changed keys.
    pub(super) async fn keep_foreign_keys(
        &self,
        txn: &mut ClusterTxn,
        table: &TableDef,
        keys: &sql::plan::ForeignKeys,
        changes: &[(Vec<u8>, Row, Row)],
    ) -> PgResult<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let rows: Vec<_> = changes.iter().map(|(_, o, n)| (Some(o), n)).collect();
        self.check_parents(txn, table, &keys.parents, &rows).await?;
        if keys.children.is_empty() {
            return Ok(());
        }
        let changed: Vec<_> = changes
            .iter()
            .map(|(_, o, n)| (o.clone(), Some(n.clone())))
            .collect();
        self.follow_children(txn, table, &keys.children, &changed)
            .await
    }

    /// Writes one updated row (under its new key if the key changed) and its index
    /// entries.
    async fn write_update(
        &self,
        txn: &mut ClusterTxn,
        table: &TableDef,
        key: &[u8],
        old: &Row,
        new: &Row,
    ) -> PgResult<()> {
        let new_key = match row_key(table, new) {
            Some(new_key) if new_key != key => {
                self.lock_wait(self.dn.insert(txn, table.rel, &new_key, encode(new), || {
                    unique_violation(table, new)
                }))
                .await?;
                self.dn.put(txn, table.rel, key, None)?;
                new_key
            }
            _ => {
                self.dn.put(txn, table.rel, key, Some(encode(new)))?;
                key.to_vec()
            }
        };
        // A unique entry waits for a concurrent writer of the same value.
        self.lock_wait(crate::index::update_entries(
            self.dn,
            txn,
            table,
            (old, key),
            (new, &new_key),
        ))
        .await
    }

    /// SELECT … FOR UPDATE (`sql::plan::RowLocking`): the query's rows in order, each
    /// locked by the key its row ends with, until LIMIT and OFFSET have what they need —
    /// as PostgreSQL's LockRows under its Limit. A row deleted since the snapshot is
    /// left out; one changed since it means the statement must see the newer version
    /// (READ COMMITTED; REPEATABLE READ fails with 40001 at the lock): `Locked::Changed`,
    /// and the caller runs it again at a new snapshot, keeping the locks taken.
    pub async fn select_locked(&self, txn: &mut ClusterTxn, q: &Query) -> PgResult<Locked> {
        let Some(locking) = &q.locking else {
            return Err(PgError::internal("select_locked needs a locking query"));
        };
        let (rows_rel, limit, offset) = match &q.root {
            Rel::Limit {
                input,
                limit,
                offset,
            } => (input.as_ref(), limit.as_ref(), offset.as_ref()),
            root => (root, None, None),
        };
        let (skip, take) = {
            let ex = self.reader(txn);
            let skip = row_count(&ex, &[], offset).await?.unwrap_or(0);
            (skip, row_count(&ex, &[], limit).await?)
        };
        let wanted = take.map(|take| skip.saturating_add(take));
        if wanted == Some(0) {
            return Ok(Locked::Rows(Vec::new()));
        }
        let table = &locking.table;
        let keys = locking.key_columns();
        // Read a few more rows than wanted, for the ones left out; more if that was short.
        let mut read = wanted.map(|w| w.saturating_mul(2).saturating_add(16));
        loop {
            let rows = self
                .reader(txn)
                .collect(rows_rel, Arc::default(), read)
                .await?;
            let exhausted = read.is_none_or(|n| rows.len() < n);
            let mut out = Vec::new();
            let mut locked = 0usize;
            for mut row in rows {
                let key_values = row.split_off(row.len() - keys);
                let Some(key) = key_of_values(&key_values) else {
                    continue;
                };
                let wait = match locking.wait {
                    LockedRowWait::Wait => LockWait::Wait,
                    LockedRowWait::NoWait | LockedRowWait::SkipLocked => LockWait::NoWait,
                };
                let newest = match self
                    .lock_wait(self.dn.lock_row(txn, table.rel, &key, wait))
                    .await
                {
                    Ok(newest) => newest,
                    Err(e) if e.code == codes::LOCK_NOT_AVAILABLE && wait == LockWait::NoWait => {
                        if locking.wait == LockedRowWait::SkipLocked {
                            continue;
                        }
                        return Err(PgError::new(
                            codes::LOCK_NOT_AVAILABLE,
                            format!(
                                "could not obtain lock on row in relation \"{}\"",
                                table.name
                            ),
                        ));
                    }
                    Err(e) => return Err(e),
                };
                let Some(newest) = newest else {
                    continue; // deleted by a transaction that committed after the snapshot
                };
                let seen = self
                    .dn
                    .get_row(txn, table.rel, &key, self.snapshot, false)
                    .await?;
                if seen.as_ref() != Some(&newest) {
                    return Ok(Locked::Changed);
                }
                locked += 1;
                if locked > skip {
                    out.push(row);
                }
                if wanted == Some(locked) {
                    return Ok(Locked::Rows(out));
                }
            }
            if exhausted {
                return Ok(Locked::Rows(out));
            }
            read = read.map(|n| n.saturating_mul(4));
        }
    }

    pub async fn delete(&self, txn: &mut ClusterTxn, del: &Delete) -> PgResult<DmlResult> {
        let done = self.delete_rows(txn, del).await?;
        let stats = self.view.cumulative_stats;
        stats.changed(del.table.oid, Change::Deleted, done.1);
        Ok(done)
    }

    async fn delete_rows(&self, txn: &mut ClusterTxn, del: &Delete) -> PgResult<DmlResult> {
        if let Some(joined) = &del.joined {
            return self.delete_joined(txn, del, joined).await;
        }
        let table = &del.table;
        let mut affected = Affected::new(self.state, &del.returning);
        let streams = del.foreign_keys.children.is_empty()
            && streams(table, &del.access, &[], del.filter.as_ref(), &del.returning);
        let mut targets = TargetRows::new(table, &del.access, del.filter.as_ref(), streams);
        loop {
            let mut held = Held::new(&self.state.memory);
            let Some(candidates) = targets.next(self, txn, &mut held).await? else {
                break;
            };
            let mut deleted = Vec::new();
            let references = &del.foreign_keys.children;
            for (key, old) in self
                .lock_candidates(txn, table, candidates, del.filter.as_ref())
                .await?
            {
                self.dn.put(txn, table.rel, &key, None)?;
                self.lock_wait(crate::index::remove_entries(
                    self.dn, txn, table, &old, &key,
                ))
                .await?;
                if !references.is_empty() {
                    deleted.push((old.clone(), None));
                }
                affected.changed(old)?;
            }
            self.follow_children(txn, table, references, &deleted)
                .await?;
            affected.batch_written(&self.reader(txn)).await?;
        }
        affected.finish(&self.reader(txn)).await
    }
}

/// COPY FROM's rows: each line's fields go to their columns, the other columns take
/// their defaults (as INSERT's omitted columns do).
pub struct CopyLoader {
    table: Arc<TableDef>,
    targets: Vec<InsertTarget>,
    checks: Arc<Vec<BoundCheck>>,
    foreign_keys: Arc<sql::plan::ForeignKeys>,
    /// Type of each input field.
    field_types: Vec<DataType>,
    ids: RowIds,
    count: u64,
    /// Set when the rows go straight into storage (`crate::bulk`).
    bulk: Option<crate::bulk::BulkSink>,
    /// A bulk-loaded row's encoding, one buffer for all (the sink copies it).
    encoded: Vec<u8>,
}

impl CopyLoader {
    pub fn new(copy: &CopyFrom) -> Self {
        let mut field_types = vec![DataType::Unknown; copy.fields];
        for (col, target) in copy.targets.iter().enumerate() {
            if let InsertTarget::Source(f) = target {
                field_types[*f] = copy.table.columns[col].ty.to_type();
            }
        }
        CopyLoader {
            table: copy.table.clone(),
            targets: copy.targets.clone(),
            checks: copy.checks.clone(),
            foreign_keys: copy.foreign_keys.clone(),
            field_types,
            ids: RowIds::new(),
            count: 0,
            bulk: None,
            encoded: Vec::new(),
        }
    }

    /// Loads the rows in bulk (`crate::bulk`) if the transaction may: it truncated the
    /// table and wrote nothing else to it. The caller makes sure that no savepoint could
    /// undo part of the transaction after this: rows loaded in bulk go only with it.
    pub fn load_in_bulk_if_owned(
        &mut self,
        dn: &Datanodes,
        txn: &mut ClusterTxn,
        spill: &spill::SpillDir,
    ) -> PgResult<()> {
        // Index entries are written with their rows, not loaded in bulk; a row that
        // references the table finds its parent among the rows written before it.
        let references_itself =
            (self.foreign_keys.parents.iter()).any(|fk| fk.parent.oid == self.table.oid);
        if self.table.indexes.is_empty()
            && !references_itself
            && dn.can_bulk_load(txn, self.table.rel)
        {
            self.bulk = Some(crate::bulk::BulkSink::start(
                dn,
                txn,
                self.table.clone(),
                spill,
            )?);
        }
        Ok(())
    }

    /// Stores what a bulk load still holds (and checks its keys); the rows are then
    /// visible to the transaction.
    pub async fn finish(
        &mut self,
        dn: &Datanodes,
        txn: &mut ClusterTxn,
        snapshot: Timestamp,
    ) -> PgResult<()> {
        if let Some(bulk) = self.bulk.take() {
            bulk.finish(dn, txn, snapshot, &|row| unique_violation(&self.table, row))
                .await?;
        }
        Ok(())
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The table loaded into (its pg_class OID).
    pub fn table_oid(&self) -> u32 {
        self.table.oid
    }

    pub async fn load<F: CopyField>(
        &mut self,
        dn: &Datanodes,
        txn: &mut ClusterTxn,
        view: &SessionView<'_>,
        rows: Vec<CopyRow<F>>,
        line: u64,
    ) -> PgResult<()> {
        let table = self.table.clone();
        let env = ConstantEnv(view);
        let ctx = EvalCtx {
            params: &[],
            outer: &[],
            env: &env,
        };
        let mut written = Vec::new();
        let keeps_parents = !self.foreign_keys.parents.is_empty();
        for fields in rows {
            let context = || format!("COPY {}, line {}", table.name, line);
            if fields.len() < self.field_types.len() {
                let missing = self
                    .targets
                    .iter()
                    .position(|t| matches!(t, InsertTarget::Source(f) if *f == fields.len()))
                    .map_or("", |c| &table.columns[c].name);
                return Err(PgError::new(
                    codes::BAD_COPY_FILE_FORMAT,
                    format!("missing data for column \"{missing}\""),
                )
                .with_detail(context()));
            }
            if fields.len() > self.field_types.len() {
                return Err(PgError::new(
                    codes::BAD_COPY_FILE_FORMAT,
                    "extra data after last expected column",
                )
                .with_detail(context()));
            }
            let source = fields
                .into_iter()
                .zip(&self.field_types)
                .map(|(field, ty)| {
                    field.map_or(Ok(Value::Null), |f| f.decode(ty, &view.zone, view.encoding))
                })
                .collect::<PgResult<Vec<_>>>()?;
            let row = insert_row(&ctx, &table, &self.targets, &self.checks, source)?;
            match &mut self.bulk {
                Some(bulk) => {
                    let row_id = match table.primary_key {
                        None => Some(self.ids.next(dn, &table, &row).await?),
                        Some(_) => None,
                    };
                    self.encoded.clear();
                    types::codec::encode_row(&row, &mut self.encoded);
                    if bulk.push(&row, &self.encoded, row_id).await? != crate::bulk::Pushed::Taken {
                        return Err(PgError::internal("COPY: row ids out of order"));
                    }
                }
                None => {
                    write_new_row(dn, txn, &table, &row, &mut self.ids).await?;
                }
            }
            if keeps_parents {
                written.push(row);
            }
            self.count += 1;
        }
        let rows: Vec<_> = written.iter().map(|r| (None, r)).collect();
        crate::foreign_keys::check_parents(dn, txn, &table, &self.foreign_keys.parents, &rows).await
    }
}

/// What expressions outside any query are evaluated with (COPY's column defaults,
/// EXECUTE's arguments): the session's functions (`now()`…); such an expression never
/// holds a subquery (CREATE TABLE and EXECUTE refuse one).
pub(crate) struct ConstantEnv<'a>(pub(crate) &'a SessionView<'a>);

impl EvalEnv for ConstantEnv<'_> {
    fn subquery(
        &self,
        _plan: &sql::plan::Query,
        _kind: &sql::plan::SubqueryKind,
        _outer: &[Row],
        _row: &[Value],
    ) -> PgResult<Arc<sql::subquery::SubqueryResult>> {
        Err(PgError::internal("subquery in a constant expression"))
    }

    fn session_function(&self, func: ScalarFunc, args: Vec<Value>) -> PgResult<Value> {
        crate::system::session_function(self.0, func, args)
    }

    fn zone(&self) -> &types::timezone::Zone {
        &self.0.zone
    }
}
