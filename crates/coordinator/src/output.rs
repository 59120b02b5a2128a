//! Result encoding: RowDescription and DataRow in text or binary format.

use crate::exec::SessionView;
use crate::system::relation_name;
use bytes::BytesMut;
use pgerror::{codes, PgError, PgResult};
use sql::plan::OutputColumn;
use types::{DataType, Value};
use wire::backend::{self, DataRowWriter, FieldDescription};
use wire::ClientEncoding;

/// The format of result column `i` given Bind's result-format codes.
pub fn column_format(formats: &[i16], i: usize) -> i16 {
    match formats.len() {
        0 => 0,
        1 => formats[0],
        _ => formats.get(i).copied().unwrap_or(0),
    }
}

pub fn validate_formats(formats: &[i16], columns: usize) -> PgResult<()> {
    if formats.len() > 1 && formats.len() != columns {
        return Err(PgError::new(
            codes::PROTOCOL_VIOLATION,
            format!(
                "bind message has {} result formats but query has {} columns",
                formats.len(),
                columns
            ),
        ));
    }
    if let Some(f) = formats.iter().find(|f| !matches!(f, 0 | 1)) {
        return Err(PgError::new(
            codes::INVALID_PARAMETER_VALUE,
            format!("unsupported format code: {f}"),
        ));
    }
    Ok(())
}

pub fn row_description(out: &mut BytesMut, columns: &[OutputColumn], formats: &[i16]) {
    let fields: Vec<FieldDescription> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| FieldDescription {
            name: c.name.as_str().into(),
            table_oid: c.table_oid,
            column_attr: c.column_attr,
            type_oid: c.ty.oid(),
            type_len: c.ty.typlen(),
            type_modifier: c.ty.typmod(),
            format: column_format(formats, i),
        })
        .collect();
    backend::row_description(out, &fields);
}

/// A DataRow; 22P05 for a text value with a character the client's encoding lacks.
pub fn data_row(
    out: &mut BytesMut,
    row: &[Value],
    columns: &[OutputColumn],
    formats: &[i16],
    session: &SessionView,
) -> PgResult<()> {
    SCRATCH.with_borrow_mut(|scratch| {
        let written = data_row_in(out, row, columns, formats, session, scratch);
        if scratch.capacity() > MAX_KEPT_SCRATCH {
            *scratch = Vec::with_capacity(256); // a large value's buffer is not kept
        }
        written
    })
}

const MAX_KEPT_SCRATCH: usize = 64 * 1024;

thread_local! {
    /// Where each field is formatted before it is copied into the message: one buffer per
    /// session thread, so that a row costs no allocation (a text column of 100 bytes cost
    /// an allocation and a reallocation per row).
    static SCRATCH: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(Vec::with_capacity(256));
}

fn data_row_in(
    out: &mut BytesMut,
    row: &[Value],
    columns: &[OutputColumn],
    formats: &[i16],
    session: &SessionView,
    scratch: &mut Vec<u8>,
) -> PgResult<()> {
    let mut w = DataRowWriter::begin(out, row.len() as i16);
    for (i, v) in row.iter().enumerate() {
        if v.is_null() {
            w.null();
            continue;
        }
        scratch.clear();
        let ty = &columns[i].ty;
        let written = if column_format(formats, i) == 1 {
            client_binary(v, ty, session, scratch)
        } else {
            client_text(v, ty, session, scratch)
        };
        if let Err(e) = written {
            w.abandon();
            return Err(e);
        }
        w.field(scratch);
    }
    w.finish();
    Ok(())
}

/// Text output in the client's encoding (22P05 for a character it lacks).
pub fn client_text(
    v: &Value,
    ty: &DataType,
    session: &SessionView,
    out: &mut Vec<u8>,
) -> PgResult<()> {
    let start = out.len();
    value_text(v, ty, session, out);
    encode_from(out, start, session.encoding)
}

/// Binary output, its text in the client's encoding where the binary form is text, as
/// PostgreSQL's pq_sendtext does.
pub fn client_binary(
    v: &Value,
    ty: &DataType,
    session: &SessionView,
    out: &mut Vec<u8>,
) -> PgResult<()> {
    let start = out.len();
    types::io::to_binary(v, ty, out);
    match types::io::binary_text_start(ty) {
        Some(text) => encode_from(out, start + text, session.encoding),
        None => Ok(()),
    }
}

/// `out[from..]`, UTF-8, re-encoded in `encoding`.
fn encode_from(out: &mut Vec<u8>, from: usize, encoding: ClientEncoding) -> PgResult<()> {
    if encoding != ClientEncoding::Utf8 && out.get(from..).is_some_and(|t| !t.is_ascii()) {
        let text = String::from_utf8_lossy(&out[from..]).into_owned();
        out.truncate(from);
        encoding.encode_into(&text, out)?;
    }
    Ok(())
}

/// Text output, resolving reg* types through the catalog as PostgreSQL's output functions do.
pub fn value_text(v: &Value, ty: &DataType, session: &SessionView, out: &mut Vec<u8>) {
    match (ty, v) {
        (DataType::RegClass | DataType::RegType | DataType::RegNamespace, Value::Oid(0)) => {
            out.push(b'-')
        }
        (DataType::RegClass, Value::Oid(o)) => {
            out.extend_from_slice(relation_name(session, *o).as_bytes())
        }
        // regtypeout prints format_type_be: 1042 is "character", never "bpchar".
        (DataType::RegType, Value::Oid(o)) => match DataType::from_oid(*o) {
            Some(t) => out.extend_from_slice(t.format_type_be().as_bytes()),
            None => match crate::system::pseudo_type_name(*o) {
                Some(n) => out.extend_from_slice(n.as_bytes()),
                None => out.extend_from_slice(o.to_string().as_bytes()),
            },
        },
        (DataType::RegNamespace, Value::Oid(o)) => out.extend_from_slice(match *o {
            sql::catalog::PUBLIC_NAMESPACE_OID => b"public".as_slice(),
            sql::catalog::PG_CATALOG_NAMESPACE_OID => b"pg_catalog",
            _ => b"-",
        }),
        (DataType::RegProc, Value::Oid(0)) => out.push(b'-'),
        (DataType::RegProc, Value::Oid(o)) => match crate::system::proc_name(*o) {
            Some(n) => out.extend_from_slice(n.as_bytes()),
            None => out.extend_from_slice(o.to_string().as_bytes()),
        },
        _ => types::io::to_text_in(v, ty, &session.zone, out),
    }
}
