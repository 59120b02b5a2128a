//! COPY TO STDOUT: rows written in PostgreSQL's text, CSV or binary format, byte for
//! byte as PostgreSQL's `CopyOneRowTo` writes them (escapes, quoting, the binary
//! layout), so that a dump taken from either server reads the same.

use crate::copy_binary::SIGNATURE;
use crate::exec::SessionView;
use crate::output::{client_binary, client_text};
use pgerror::PgResult;
use sql::copy::{CopyFormat, CopyKind};
use sql::plan::OutputColumn;
use types::Value;

pub struct CopyWriter<'a> {
    format: &'a CopyFormat,
    columns: &'a [OutputColumn],
    /// One value's output, reused.
    scratch: Vec<u8>,
}

impl<'a> CopyWriter<'a> {
    pub fn new(format: &'a CopyFormat, columns: &'a [OutputColumn]) -> Self {
        CopyWriter {
            format,
            columns,
            scratch: Vec::new(),
        }
    }

    /// What precedes the rows: the binary signature, or the header line of column names
    /// (HEADER); nothing otherwise.
    pub fn header(&mut self, out: &mut Vec<u8>) {
        match self.format.kind {
            CopyKind::Binary => {
                out.extend_from_slice(SIGNATURE);
                out.extend_from_slice(&0i32.to_be_bytes());
                out.extend_from_slice(&0i32.to_be_bytes());
            }
            _ if self.format.header => {
                let single = self.columns.len() == 1;
                for (i, c) in self.columns.iter().enumerate() {
                    if i > 0 {
                        out.push(self.format.delimiter);
                    }
                    match self.format.kind {
                        CopyKind::Csv => self.csv_field(c.name.as_bytes(), false, single, out),
                        _ => self.text_field(c.name.as_bytes(), out),
                    }
                }
                out.push(b'\n');
            }
            _ => {}
        }
    }

    /// One row; 22P05 for a text value with a character the client's encoding lacks.
    pub fn row(&mut self, row: &[Value], session: &SessionView, out: &mut Vec<u8>) -> PgResult<()> {
        if self.format.kind == CopyKind::Binary {
            out.extend_from_slice(&(row.len() as i16).to_be_bytes());
        }
        let single = row.len() == 1;
        for (i, v) in row.iter().enumerate() {
            let ty = &self.columns[i].ty;
            let mut scratch = std::mem::take(&mut self.scratch);
            scratch.clear();
            match self.format.kind {
                CopyKind::Binary => match v {
                    Value::Null => out.extend_from_slice(&(-1i32).to_be_bytes()),
                    v => {
                        client_binary(v, ty, session, &mut scratch)?;
                        out.extend_from_slice(&(scratch.len() as i32).to_be_bytes());
                        out.extend_from_slice(&scratch);
                    }
                },
                kind => {
                    if i > 0 {
                        out.push(self.format.delimiter);
                    }
                    if v.is_null() {
                        out.extend_from_slice(self.format.null_string.as_bytes());
                    } else {
                        client_text(v, ty, session, &mut scratch)?;
                        if kind == CopyKind::Csv {
                            let forced = self.format.force_quote.get(i).copied().unwrap_or(false);
                            self.csv_field(&scratch, forced, single, out);
                        } else {
                            self.text_field(&scratch, out);
                        }
                    }
                }
            }
            self.scratch = scratch;
        }
        if self.format.kind != CopyKind::Binary {
            out.push(b'\n');
        }
        Ok(())
    }

    /// What follows the rows: the binary trailer; nothing otherwise.
    pub fn trailer(&self, out: &mut Vec<u8>) {
        if self.format.kind == CopyKind::Binary {
            out.extend_from_slice(&(-1i16).to_be_bytes());
        }
    }

    /// The text format's escapes (PostgreSQL's `CopyAttributeOutText`).
    fn text_field(&self, s: &[u8], out: &mut Vec<u8>) {
        let delimiter = self.format.delimiter;
        for &b in s {
            match b {
                8 => out.extend_from_slice(b"\\b"),
                12 => out.extend_from_slice(b"\\f"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                11 => out.extend_from_slice(b"\\v"),
                b'\\' => out.extend_from_slice(b"\\\\"),
                b if b == delimiter => out.extend_from_slice(&[b'\\', b]),
                b => out.push(b),
            }
        }
    }

    /// CSV quoting (PostgreSQL's `CopyAttributeOutCSV`): quoted when forced, when equal
    /// to the NULL string, when holding the delimiter, the quote, a newline or a return,
    /// or when a lone field is `\.` (the end-of-data marker).
    fn csv_field(&self, s: &[u8], forced: bool, single: bool, out: &mut Vec<u8>) {
        let (quote, escape, delimiter) =
            (self.format.quote, self.format.escape, self.format.delimiter);
        let quoted = forced
            || s == self.format.null_string.as_bytes()
            || (single && s == b"\\.")
            || s.iter()
                .any(|&b| b == delimiter || b == quote || b == b'\n' || b == b'\r');
        if !quoted {
            out.extend_from_slice(s);
            return;
        }
        out.push(quote);
        for &b in s {
            if b == quote || b == escape {
                out.push(escape);
            }
            out.push(b);
        }
        out.push(quote);
    }
}
