//! COPY FROM STDIN: incremental parsing of PostgreSQL's text and CSV formats (the
//! binary format: `copy_binary`).

use pgerror::{codes, PgError, PgResult};
use sql::copy::{CopyFormat, CopyKind};
use types::timezone::Zone;
use types::{DataType, Value};
use wire::ClientEncoding;

/// One parsed row: a field per column, None for NULL; text, or binary (`Vec<u8>`).
pub type CopyRow<F = String> = Vec<Option<F>>;

/// A field as COPY's input carries it, decoded into a value of the column's type.
pub trait CopyField {
    /// `zone`: the session's, in which text timestamptz is read; `encoding`: the client's,
    /// in which binary fields whose form is text are written (text lines arrive decoded).
    fn decode(&self, ty: &DataType, zone: &Zone, encoding: ClientEncoding) -> PgResult<Value>;
}

impl CopyField for String {
    fn decode(&self, ty: &DataType, zone: &Zone, _: ClientEncoding) -> PgResult<Value> {
        types::io::from_text_in(self, ty, zone)
    }
}

impl CopyField for Vec<u8> {
    /// As PostgreSQL's receive functions read a field: running out of bytes is the
    /// message's fault (08P01), bytes left over the value's (22P03). An enum's typlen is
    /// its OID's, but it is sent as its label.
    fn decode(&self, ty: &DataType, _zone: &Zone, encoding: ClientEncoding) -> PgResult<Value> {
        let fixed = ty.typlen() > 0 && !matches!(ty, DataType::Enum(_));
        if fixed && self.len() < ty.typlen() as usize {
            return Err(PgError::new(
                codes::PROTOCOL_VIOLATION,
                "insufficient data left in message",
            ));
        }
        from_client_binary(self, ty, encoding)
    }
}

/// A binary-format value from the client (a COPY field, a Bind parameter), its text read
/// in the client's encoding where the binary form is text.
pub fn from_client_binary(
    bytes: &[u8],
    ty: &DataType,
    encoding: ClientEncoding,
) -> PgResult<Value> {
    let Some(from) = types::io::binary_text_start(ty).filter(|_| encoding != ClientEncoding::Utf8)
    else {
        return types::io::from_binary(bytes, ty);
    };
    let Some(rest) = bytes.get(from..) else {
        return types::io::from_binary(bytes, ty);
    };
    let text = encoding
        .decode(rest)
        .ok_or_else(|| encoding.decode_error(rest).expect("a single-byte encoding"))?;
    let mut utf8 = bytes[..from].to_vec();
    utf8.extend_from_slice(text.as_bytes());
    types::io::from_binary(&utf8, ty)
}

pub struct CopyParser {
    pending: Vec<u8>,
    delimiter: u8,
    null_string: String,
    /// CSV's quote and escape characters; None for the text format.
    csv: Option<(u8, u8)>,
    skip_header: bool,
    finished: bool,
    pub line: u64,
    /// client_encoding: how the lines' text is written.
    pub encoding: wire::ClientEncoding,
}

impl CopyParser {
    /// A parser of the text or CSV format (not binary: `copy_binary`).
    pub fn new(format: &CopyFormat) -> Self {
        CopyParser {
            pending: Vec::new(),
            delimiter: format.delimiter,
            null_string: format.null_string.clone(),
            csv: (format.kind == CopyKind::Csv).then_some((format.quote, format.escape)),
            skip_header: format.header,
            finished: false,
            line: 0,
            encoding: wire::ClientEncoding::Utf8,
        }
    }

    /// Feed CopyData bytes; returns every row completed by them.
    pub fn feed(&mut self, data: &[u8]) -> PgResult<Vec<CopyRow>> {
        self.pending.extend_from_slice(data);
        // Taken out while its lines are parsed, so that they need no copy.
        let mut pending = std::mem::take(&mut self.pending);
        let rows = self.lines(&pending);
        let start = match &rows {
            Ok((_, start)) => *start,
            Err(_) => 0,
        };
        pending.drain(..start);
        self.pending = pending;
        rows.map(|(rows, _)| rows)
    }

    /// The rows of the complete lines in `pending`, and where what follows them starts.
    fn lines(&mut self, pending: &[u8]) -> PgResult<(Vec<CopyRow>, usize)> {
        let mut rows = Vec::new();
        let mut start = 0;
        while let Some(nl) = self.next_line_end(pending, start) {
            let line = &pending[start..nl];
            start = nl + 1;
            if let Some(row) = self.line(line.strip_suffix(b"\r").unwrap_or(line))? {
                rows.push(row);
            }
        }
        Ok((rows, start))
    }

    /// End of data (CopyDone): a last line without a newline still counts.
    pub fn finish(&mut self) -> PgResult<Vec<CopyRow>> {
        if self.pending.is_empty() {
            return Ok(Vec::new());
        }
        let line = std::mem::take(&mut self.pending);
        Ok(self.line(&line)?.into_iter().collect())
    }

    /// End of the next complete line of `pending` at or after `from` (CSV quotes may
    /// span lines).
    fn next_line_end(&self, pending: &[u8], from: usize) -> Option<usize> {
        let Some((quote, escape)) = self.csv else {
            return pending[from..]
                .iter()
                .position(|&b| b == b'\n')
                .map(|p| from + p);
        };
        let mut quoted = false;
        let mut i = from;
        while i < pending.len() {
            let b = pending[i];
            if quoted && b == escape && escape != quote {
                i += 2;
                continue;
            }
            if b == quote {
                quoted = !quoted;
            } else if b == b'\n' && !quoted {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    fn line(&mut self, line: &[u8]) -> PgResult<Option<CopyRow>> {
        self.line += 1;
        if self.finished {
            return Ok(None);
        }
        if line == b"\\." {
            self.finished = true;
            return Ok(None);
        }
        if self.skip_header {
            self.skip_header = false;
            return Ok(None);
        }
        let text = self.encoding.decode(line).ok_or_else(|| {
            self.encoding.decode_error(line).unwrap_or_else(|| {
                PgError::new(
                    codes::CHARACTER_NOT_IN_REPERTOIRE,
                    format!(
                        "invalid byte sequence for encoding \"UTF8\" (COPY line {})",
                        self.line
                    ),
                )
            })
        })?;
        Ok(Some(match self.csv {
            Some((quote, escape)) => self.csv_fields(&text, quote as char, escape as char)?,
            None => self.text_fields(&text)?,
        }))
    }

    fn text_fields(&self, line: &str) -> PgResult<CopyRow> {
        let delim = self.delimiter as char;
        line.split(delim)
            .map(|raw| {
                if raw == self.null_string {
                    Ok(None)
                } else {
                    unescape(raw).map(Some)
                }
            })
            .collect()
    }

    fn csv_fields(&self, line: &str, quote: char, escape: char) -> PgResult<CopyRow> {
        let delim = self.delimiter as char;
        let mut fields = Vec::new();
        let mut cur = String::new();
        let mut quoted = false;
        let mut was_quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if quoted {
                // Inside quotes the escape character makes a following quote (or escape) literal.
                match chars.peek() {
                    Some(&next) if c == escape && (next == quote || next == escape) => {
                        cur.push(next);
                        chars.next();
                    }
                    _ if c == quote => quoted = false,
                    _ => cur.push(c),
                }
            } else if c == quote {
                quoted = true;
                was_quoted = true;
            } else if c == delim {
                fields.push(self.csv_field(std::mem::take(&mut cur), was_quoted));
                was_quoted = false;
            } else {
                cur.push(c);
            }
        }
        if quoted {
            return Err(PgError::new(
                codes::BAD_COPY_FILE_FORMAT,
                "unterminated CSV quoted field",
            ));
        }
        fields.push(self.csv_field(cur, was_quoted));
        Ok(fields)
    }

    fn csv_field(&self, s: String, quoted: bool) -> Option<String> {
        (quoted || s != self.null_string).then_some(s)
    }
}

/// Decode text-format backslash escapes.
fn unescape(raw: &str) -> PgResult<String> {
    if !raw.contains('\\') {
        return Ok(raw.to_string());
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('v') => out.push('\u{b}'),
            Some(d @ '0'..='7') => {
                let mut v = d.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(x) => {
                            v = v * 8 + x;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            }
            Some(other) => out.push(other),
            None => {
                return Err(PgError::new(
                    codes::BAD_COPY_FILE_FORMAT,
                    "end-of-copy marker corrupt",
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_format() -> CopyFormat {
        CopyFormat {
            kind: CopyKind::Text,
            delimiter: b'\t',
            null_string: "\\N".into(),
            header: false,
            quote: b'"',
            escape: b'"',
            force_quote: Vec::new(),
        }
    }

    #[test]
    fn csv_with_an_escape_other_than_the_quote() {
        let mut p = CopyParser::new(&CopyFormat {
            kind: CopyKind::Csv,
            delimiter: b',',
            null_string: "NULL".into(),
            header: false,
            quote: b'\'',
            escape: b'\\',
            force_quote: Vec::new(),
        });
        let rows = p.feed(b"1,'a\\'b\\\\',NULL,'NULL'\n").unwrap();
        assert_eq!(
            rows,
            vec![vec![
                Some("1".into()),
                Some("a'b\\".into()),
                None,
                Some("NULL".into())
            ]]
        );
    }

    #[test]
    fn text_rows_split_across_chunks() {
        let mut p = CopyParser::new(&text_format());
        assert!(p.feed(b"1\t1\t0\t").unwrap().is_empty());
        let rows = p.feed(b"\n2\t\\N\ta\\tb\n\\.\n").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0],
            vec![
                Some("1".into()),
                Some("1".into()),
                Some("0".into()),
                Some(String::new())
            ]
        );
        assert_eq!(rows[1], vec![Some("2".into()), None, Some("a\tb".into())]);
        assert!(p.finish().unwrap().is_empty());
    }

    #[test]
    fn crlf_lines_split_across_chunks() {
        let mut p = CopyParser::new(&text_format());
        assert_eq!(p.feed(b"1\tx\r").unwrap(), Vec::<CopyRow>::new());
        assert_eq!(
            p.feed(b"\n2\ty\r\n3").unwrap(),
            vec![
                vec![Some("1".into()), Some("x".into())],
                vec![Some("2".into()), Some("y".into())]
            ]
        );
        assert_eq!(
            p.feed(b"\t\xff\n").unwrap_err().code,
            codes::CHARACTER_NOT_IN_REPERTOIRE
        );
    }

    #[test]
    fn csv_quotes_and_nulls() {
        let mut p = CopyParser::new(&CopyFormat {
            kind: CopyKind::Csv,
            delimiter: b',',
            null_string: String::new(),
            header: true,
            quote: b'"',
            escape: b'"',
            force_quote: Vec::new(),
        });
        let rows = p.feed(b"a,b\n1,\"x,\"\"y\"\"\"\n2,\n").unwrap();
        assert_eq!(
            rows,
            vec![
                vec![Some("1".into()), Some("x,\"y\"".into())],
                vec![Some("2".into()), None]
            ]
        );
    }
}
