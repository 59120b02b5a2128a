//! INSERT, UPDATE, DELETE and COPY rows: reads at the statement's snapshot, row locks and
//! writes through the datanode transaction.
//!
//! UPDATE/DELETE follow PostgreSQL's READ COMMITTED rule: rows are found at the statement
//! snapshot, then locked; if a concurrent transaction committed a newer version meanwhile,
//! the WHERE clause is re-checked against it (EvalPlanQual) and the new values computed
//! from it. Under REPEATABLE READ the datanode refuses such a row with 40001.

use crate::copy::CopyRow;
use crate::exec::{check_not_null, decode, encode, insert_row, row_id_key, row_key, unique_violation, Executor, Row, SessionView};
use datanode::{Datanode, Timestamp, Txn};
use pgerror::{codes, PgError, PgResult};
use sql::eval::EvalCtx;
use sql::plan::{Access, Delete, Expr, Insert, OutputColumn, Update};
use sql::TableDef;
use std::sync::Arc;
use types::{DataType, Value};

/// Rows returned by RETURNING (empty without it) and the number of rows affected.
pub type DmlResult = (Vec<Row>, u64);

/// Row ids are reserved in blocks so that bulk loads do not touch the allocator per row.
const ROW_ID_BLOCK: u64 = 1024;

/// Hands out row ids for a table without a primary key.
struct RowIds {
    next: u64,
    left: u64,
}

impl RowIds {
    fn new() -> Self {
        RowIds { next: 0, left: 0 }
    }

    fn next(&mut self, dn: &Datanode, rel: u64) -> PgResult<u64> {
        if self.left == 0 {
            self.next = dn.allocate_row_ids(rel, ROW_ID_BLOCK)?;
            self.left = ROW_ID_BLOCK;
        }
        self.left -= 1;
        self.next += 1;
        Ok(self.next - 1)
    }
}

/// Write one new row: by primary key (checking uniqueness) or under a fresh row id.
async fn write_new_row(dn: &Datanode, txn: &mut Txn, table: &TableDef, row: &[Value], ids: &mut RowIds) -> PgResult<()> {
    match row_key(table, row) {
        Some(key) => dn.insert(txn, table.rel, &key, encode(row), || unique_violation(table, row)).await,
        None => {
            let id = ids.next(dn, table.rel)?;
            dn.put_new_key(txn, table.rel, &row_id_key(id), encode(row))
        }
    }
}

fn returning(ex: &Executor, items: &Option<Vec<(Expr, OutputColumn)>>, rows: &[Row]) -> PgResult<Vec<Row>> {
    let Some(items) = items else { return Ok(Vec::new()) };
    let ctx = EvalCtx { params: ex.params, outer: &[], env: ex };
    rows.iter().map(|r| items.iter().map(|(e, _)| ctx.eval(e, r)).collect()).collect()
}

/// What every DML statement runs with: the datanode, the statement snapshot, the
/// parameters and the session. The transaction is passed separately because reads
/// borrow it shared and writes borrow it exclusively, in turns.
pub struct Dml<'a> {
    pub dn: &'a Datanode,
    pub snapshot: Timestamp,
    pub params: &'a [Value],
    pub view: &'a SessionView<'a>,
}

impl<'a> Dml<'a> {
    /// A read-only executor over `txn` at the statement snapshot.
    pub fn reader<'t>(&'t self, txn: &'t Txn) -> Executor<'t> {
        Executor { dn: self.dn, txn, snapshot: self.snapshot, params: self.params, session: self.view }
    }

    pub async fn insert(&self, txn: &mut Txn, ins: &Insert) -> PgResult<DmlResult> {
        let table = &ins.table;
        let rows: Vec<Row> = {
            let ex = self.reader(txn);
            let source = ex.rel(&ins.source, &[]).await?;
            let ctx = EvalCtx { params: self.params, outer: &[], env: &ex };
            source.iter().map(|src| insert_row(&ctx, table, &ins.targets, src)).collect::<PgResult<_>>()?
        };
        let mut ids = RowIds::new();
        let mut written = Vec::with_capacity(rows.len());
        for row in rows {
            match write_new_row(self.dn, txn, table, &row, &mut ids).await {
                Ok(()) => written.push(row),
                Err(e) if e.code == codes::UNIQUE_VIOLATION && ins.on_conflict_do_nothing => {}
                Err(e) => return Err(e),
            }
        }
        let out = returning(&self.reader(txn), &ins.returning, &written)?;
        Ok((out, written.len() as u64))
    }

    /// Lock each candidate row and return the version to modify (re-checked if it changed).
    async fn lock_candidates(&self, txn: &mut Txn, table: &TableDef, access: &Access, filter: Option<&Expr>) -> PgResult<Vec<(Vec<u8>, Row)>> {
        let candidates = self.reader(txn).keyed_rows(table, access, filter).await?;
        let mut locked = Vec::with_capacity(candidates.len());
        for (key, seen, row) in candidates {
            let Some(current) = self.dn.lock_row(txn, table.rel, &key).await? else {
                continue; // deleted by a transaction that committed after our snapshot
            };
            if current == seen {
                locked.push((key, row));
                continue;
            }
            let newest = decode(&current, table)?;
            let ex = self.reader(txn);
            let ctx = EvalCtx { params: self.params, outer: &[], env: &ex };
            if ctx.matches(filter, &newest)? {
                locked.push((key, newest));
            }
        }
        Ok(locked)
    }

    pub async fn update(&self, txn: &mut Txn, upd: &Update) -> PgResult<DmlResult> {
        let table = &upd.table;
        let locked = self.lock_candidates(txn, table, &upd.access, upd.filter.as_ref()).await?;
        let mut updated = Vec::with_capacity(locked.len());
        for (key, old) in locked {
            let new = {
                let ex = self.reader(txn);
                let ctx = EvalCtx { params: self.params, outer: &[], env: &ex };
                let mut new = old.clone();
                for (col, e) in &upd.assignments {
                    new[*col] = ctx.eval(e, &old)?;
                }
                new
            };
            check_not_null(table, &new)?;
            match row_key(table, &new) {
                Some(new_key) if new_key != key => {
                    self.dn.insert(txn, table.rel, &new_key, encode(&new), || unique_violation(table, &new)).await?;
                    self.dn.put(txn, table.rel, &key, None)?;
                }
                _ => self.dn.put(txn, table.rel, &key, Some(encode(&new)))?,
            }
            updated.push(new);
        }
        let out = returning(&self.reader(txn), &upd.returning, &updated)?;
        Ok((out, updated.len() as u64))
    }

    pub async fn delete(&self, txn: &mut Txn, del: &Delete) -> PgResult<DmlResult> {
        let table = &del.table;
        let locked = self.lock_candidates(txn, table, &del.access, del.filter.as_ref()).await?;
        let mut deleted = Vec::with_capacity(locked.len());
        for (key, old) in locked {
            self.dn.put(txn, table.rel, &key, None)?;
            deleted.push(old);
        }
        let out = returning(&self.reader(txn), &del.returning, &deleted)?;
        Ok((out, deleted.len() as u64))
    }
}

/// Turns COPY lines into table rows and writes them.
pub struct CopyLoader {
    table: Arc<TableDef>,
    columns: Vec<usize>,
    types: Vec<DataType>,
    ids: RowIds,
    count: u64,
}

impl CopyLoader {
    pub fn new(table: Arc<TableDef>, columns: Vec<usize>) -> Self {
        let types = table.column_types();
        CopyLoader { table, columns, types, ids: RowIds::new(), count: 0 }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub async fn load(&mut self, dn: &Datanode, txn: &mut Txn, rows: Vec<CopyRow>, line: u64) -> PgResult<()> {
        let table = self.table.clone();
        for fields in rows {
            let context = || format!("COPY {}, line {}", table.name, line);
            if fields.len() < self.columns.len() {
                let missing = &table.columns[self.columns[fields.len()]].name;
                return Err(PgError::new(codes::BAD_COPY_FILE_FORMAT, format!("missing data for column \"{missing}\"")).with_detail(context()));
            }
            if fields.len() > self.columns.len() {
                return Err(PgError::new(codes::BAD_COPY_FILE_FORMAT, "extra data after last expected column").with_detail(context()));
            }
            let mut row = vec![Value::Null; table.columns.len()];
            for (field, &col) in fields.into_iter().zip(&self.columns) {
                if let Some(text) = field {
                    row[col] = types::io::from_text(&text, &self.types[col])?;
                }
            }
            check_not_null(&table, &row)?;
            write_new_row(dn, txn, &table, &row, &mut self.ids).await?;
            self.count += 1;
        }
        Ok(())
    }
}
