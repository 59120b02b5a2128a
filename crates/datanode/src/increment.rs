//! Increments as data: `SET c = c ± amount`, sent by the coordinator and applied here to
//! a row's newest version (at commit, or when the transaction next touches the row), so
//! that they can cross a network (decision 0027).

use pgerror::PgResult;
use types::ops::{eval_binary, BinaryOp};
use types::Value;

/// The two operations an increment may apply: they commute, which is what lets
/// increments of one row from concurrent transactions be applied in any order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncrementOp {
    Add,
    Sub,
}

/// `SET column = column op amount` on one column of one row. `amount` has the column's
/// integer type and is not NULL (the coordinator takes the ordinary path otherwise), so
/// an increment never makes a NOT NULL column NULL.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnIncrement {
    pub column: usize,
    pub op: IncrementOp,
    pub amount: Value,
}

/// The row `increments` make of `row` (the encoding of `types::codec`), in order.
pub fn apply(row: &[u8], increments: &[ColumnIncrement]) -> PgResult<bytes::Bytes> {
    let mut values = types::codec::decode_row(row)?;
    for inc in increments {
        if values.len() <= inc.column {
            // A row written before its table had this many columns: the missing ones are
            // NULL.
            values.resize(inc.column + 1, Value::Null);
        }
        let op = match inc.op {
            IncrementOp::Add => BinaryOp::Add,
            IncrementOp::Sub => BinaryOp::Sub,
        };
        values[inc.column] = eval_binary(op, &values[inc.column], &inc.amount)?;
    }
    let mut out = Vec::with_capacity(row.len() + 8);
    types::codec::encode_row(&values, &mut out);
    Ok(out.into())
}
