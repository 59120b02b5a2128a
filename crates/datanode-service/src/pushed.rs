//! A page of a pushed scan (`TxnCall::ScanPushed`, decision 0033): the scan's rows that
//! pass its filter, or their partial aggregation, evaluated by `sql::pushdown`.

use datanode::RowBytes as Bytes;
use datanode_proto::Response;
use pgerror::PgResult;
use sql::pushdown::{PartialGroups, ScanWork};
use types::codec;

/// The next page of `scan` (keys ascending): at most `max_rows` rows (or groups) and
/// `max_examined` rows read, so that a filter that keeps few rows or many groups holds
/// neither the datanode nor the page without bound.
pub(crate) fn page(
    scan: impl Iterator<Item = PgResult<(Vec<u8>, Bytes)>>,
    max_rows: usize,
    max_examined: usize,
    keys: bool,
    work: &ScanWork,
) -> PgResult<Response> {
    let wanted = work.columns_read();
    let mut rows = Vec::new();
    let mut groups = work.partial.as_ref().map(PartialGroups::new);
    let mut examined = 0;
    let mut last_key = None;
    for item in scan {
        let (key, bytes) = item?;
        examined += 1;
        let row = match &wanted {
            Some(cols) => codec::decode_row_columns(&bytes, cols)?,
            None => codec::decode_row(&bytes)?,
        };
        if work.passes(&row)? {
            match &mut groups {
                Some(groups) => groups.push(&row)?,
                None => {
                    // the coordinator reads only `work.columns`: the others go as NULL
                    let bytes = match work.columns {
                        Some(_) => encode(&row),
                        None => bytes,
                    };
                    rows.push((if keys { key.clone() } else { Vec::new() }, bytes));
                }
            }
        }
        let full = match &groups {
            Some(groups) => groups.len() >= max_rows,
            None => rows.len() >= max_rows,
        };
        if full || examined >= max_examined {
            last_key = Some(key);
            break;
        }
    }
    if let Some(groups) = groups {
        rows = groups
            .into_rows()
            .iter()
            .map(|g| (Vec::new(), encode(g)))
            .collect();
    }
    Ok(Response::Page { rows, last_key })
}

fn encode(row: &[types::Value]) -> Bytes {
    let mut out = Vec::with_capacity(64);
    codec::encode_row(row, &mut out);
    Bytes::from(out)
}
