//! COPY's binary format (PostgreSQL's `PGCOPY` file layout): the input parser of COPY
//! FROM STDIN (FORMAT binary), as pgx's CopyFrom and psycopg's binary copy send it.
//! Fields stay as the types' binary forms; the loader decodes them (`copy::CopyField`).

use crate::copy::CopyRow;
use pgerror::{codes, PgError, PgResult};

/// The 11-byte signature opening a binary COPY stream.
pub const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

pub struct BinaryCopyParser {
    pending: Vec<u8>,
    fields: usize,
    header_read: bool,
    finished: bool,
    /// Tuples read so far (for error context, as text COPY's line number).
    pub line: u64,
}

impl BinaryCopyParser {
    pub fn new(fields: usize) -> Self {
        BinaryCopyParser {
            pending: Vec::new(),
            fields,
            header_read: false,
            finished: false,
            line: 0,
        }
    }

    /// Feed CopyData bytes; returns every tuple completed by them.
    pub fn feed(&mut self, data: &[u8]) -> PgResult<Vec<CopyRow<Vec<u8>>>> {
        self.pending.extend_from_slice(data);
        let pending = std::mem::take(&mut self.pending);
        let mut at = 0;
        let mut rows = Vec::new();
        let result = self.tuples(&pending, &mut at, &mut rows);
        self.pending = pending[at..].to_vec();
        result.map(|()| rows)
    }

    /// End of data (CopyDone): nothing may be left half read. A missing trailer is
    /// accepted, as PostgreSQL accepts it.
    pub fn finish(&mut self) -> PgResult<Vec<CopyRow<Vec<u8>>>> {
        if !self.pending.is_empty() && !self.finished {
            return Err(bad_format("unexpected EOF in COPY data"));
        }
        if !self.header_read && !self.finished {
            return Err(bad_format("COPY file signature not recognized"));
        }
        Ok(Vec::new())
    }

    fn tuples(
        &mut self,
        b: &[u8],
        at: &mut usize,
        rows: &mut Vec<CopyRow<Vec<u8>>>,
    ) -> PgResult<()> {
        if self.finished {
            *at = b.len();
            return Ok(());
        }
        if !self.header_read {
            match header_len(b)? {
                Some(n) => {
                    *at = n;
                    self.header_read = true;
                }
                None => return Ok(()),
            }
        }
        while let Some(count) = i16_at(b, *at) {
            if count == -1 {
                self.finished = true;
                *at = b.len();
                return Ok(());
            }
            if count as i64 != self.fields as i64 {
                return Err(bad_format(format!(
                    "row field count is {count}, expected {}",
                    self.fields
                )));
            }
            let mut p = *at + 2;
            let mut row = Vec::with_capacity(self.fields);
            for _ in 0..count {
                let Some(len) = i32_at(b, p) else {
                    return Ok(());
                };
                p += 4;
                if len == -1 {
                    row.push(None);
                    continue;
                }
                if len < 0 {
                    return Err(bad_format("invalid field size"));
                }
                let end = p + len as usize;
                if end > b.len() {
                    return Ok(());
                }
                row.push(Some(b[p..end].to_vec()));
                p = end;
            }
            self.line += 1;
            rows.push(row);
            *at = p;
        }
        Ok(())
    }
}

/// Length of the header at the start of `b` (signature, flags, extension area), None
/// while incomplete.
fn header_len(b: &[u8]) -> PgResult<Option<usize>> {
    if b.len() < SIGNATURE.len() {
        return if SIGNATURE.starts_with(b) {
            Ok(None)
        } else {
            Err(bad_format("COPY file signature not recognized"))
        };
    }
    if &b[..SIGNATURE.len()] != SIGNATURE {
        return Err(bad_format("COPY file signature not recognized"));
    }
    let (Some(flags), Some(extension)) = (i32_at(b, 11), i32_at(b, 15)) else {
        return Ok(None);
    };
    if flags & (1 << 16) != 0 {
        return Err(bad_format("invalid COPY file header (WITH OIDS)"));
    }
    if flags & !0xffff & !(1 << 16) != 0 {
        return Err(bad_format(
            "unrecognized critical flags in COPY file header",
        ));
    }
    if extension < 0 {
        return Err(bad_format("invalid COPY file header (missing length)"));
    }
    let end = 19 + extension as usize;
    Ok((b.len() >= end).then_some(end))
}

fn i16_at(b: &[u8], at: usize) -> Option<i16> {
    b.get(at..at + 2).map(|x| i16::from_be_bytes([x[0], x[1]]))
}

fn i32_at(b: &[u8], at: usize) -> Option<i32> {
    b.get(at..at + 4)
        .map(|x| i32::from_be_bytes([x[0], x[1], x[2], x[3]]))
}

fn bad_format(message: impl Into<String>) -> PgError {
    PgError::new(codes::BAD_COPY_FILE_FORMAT, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(rows: &[&[Option<&[u8]>]]) -> Vec<u8> {
        let mut b = SIGNATURE.to_vec();
        b.extend_from_slice(&[0; 8]);
        for row in rows {
            b.extend_from_slice(&(row.len() as i16).to_be_bytes());
            for f in row.iter() {
                match f {
                    Some(v) => {
                        b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                        b.extend_from_slice(v);
                    }
                    None => b.extend_from_slice(&(-1i32).to_be_bytes()),
                }
            }
        }
        b.extend_from_slice(&(-1i16).to_be_bytes());
        b
    }

    #[test]
    fn tuples_split_at_every_byte() {
        let data = stream(&[
            &[Some(&[0, 0, 0, 7]), None],
            &[Some(&[0, 0, 0, 8]), Some(b"xy")],
        ]);
        let mut p = BinaryCopyParser::new(2);
        let mut rows = Vec::new();
        for byte in &data {
            rows.extend(p.feed(std::slice::from_ref(byte)).unwrap());
        }
        assert!(p.finish().unwrap().is_empty());
        assert_eq!(
            rows,
            vec![
                vec![Some(vec![0, 0, 0, 7]), None],
                vec![Some(vec![0, 0, 0, 8]), Some(b"xy".to_vec())]
            ]
        );
    }

    #[test]
    fn bad_streams() {
        let mut p = BinaryCopyParser::new(1);
        assert_eq!(
            p.feed(b"PGCOPY\nX").unwrap_err().message,
            "COPY file signature not recognized"
        );
        let mut p = BinaryCopyParser::new(1);
        let data = stream(&[&[Some(b"a"), Some(b"b")]]);
        assert_eq!(
            p.feed(&data).unwrap_err().message,
            "row field count is 2, expected 1"
        );
        let mut p = BinaryCopyParser::new(1);
        let data = stream(&[&[Some(b"abc")]]);
        p.feed(&data[..data.len() - 4]).unwrap();
        assert_eq!(
            p.finish().unwrap_err().message,
            "unexpected EOF in COPY data"
        );
    }
}
