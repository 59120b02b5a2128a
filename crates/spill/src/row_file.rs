//! A file of rows: written once in order ([`RowWriter`]), kept without a buffer while it
//! waits ([`RowFile`]), then read back in the same order ([`RowReader`]).
//!
//! Each row is a varint byte length followed by `types::codec::encode_row`, which
//! round-trips every `Value` variant (tested here: NaN payloads, -0.0, blank-padded text,
//! nested arrays) and rejects damaged bytes with XX001 instead of panicking.

use crate::{SpillDir, FILE_BUFFER_BYTES};
use pgerror::PgResult;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, Write};
use types::codec::{decode_row, encode_row_parts};
use types::Value;

/// A temporary file being written. [`RowWriter::finish`] turns it into a [`RowFile`].
pub struct RowWriter {
    dir: SpillDir,
    out: BufWriter<File>,
    rows: u64,
    bytes: u64,
    encoded: Vec<u8>,
}

impl RowWriter {
    pub fn create(dir: &SpillDir) -> PgResult<RowWriter> {
        Ok(RowWriter::on(dir, dir.create_file()?))
    }

    fn on(dir: &SpillDir, file: File) -> RowWriter {
        RowWriter {
            dir: dir.clone(),
            out: BufWriter::with_capacity(FILE_BUFFER_BYTES, file),
            rows: 0,
            bytes: 0,
            encoded: Vec::new(),
        }
    }

    pub fn push(&mut self, row: &[Value]) -> PgResult<()> {
        self.push_parts(&[row])
    }

    /// Writes the row made of `parts` one after the other, without building it.
    pub fn push_parts(&mut self, parts: &[&[Value]]) -> PgResult<()> {
        self.encoded.clear();
        encode_row_parts(parts, &mut self.encoded);
        let mut len = [0u8; 10];
        let len = put_varint(&mut len, self.encoded.len() as u64);
        self.out
            .write_all(len)
            .and_then(|_| self.out.write_all(&self.encoded))
            .map_err(|e| self.dir.error("write to", e))?;
        self.rows += 1;
        self.bytes += (len.len() + self.encoded.len()) as u64;
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Writes out what is buffered and releases the buffer.
    pub fn finish(self) -> PgResult<RowFile> {
        let RowWriter {
            dir,
            out,
            rows,
            bytes,
            ..
        } = self;
        let file = out
            .into_inner()
            .map_err(|e| dir.error("write to", e.into_error()))?;
        dir.record_file(bytes);
        Ok(RowFile {
            dir,
            file,
            rows,
            bytes,
        })
    }
}

/// A written temporary file that holds no memory until it is read (a sort may keep many
/// runs waiting, a partitioner many partitions).
pub struct RowFile {
    dir: SpillDir,
    file: File,
    rows: u64,
    bytes: u64,
}

impl RowFile {
    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// A reader positioned at the first row, with a buffer of `FILE_BUFFER_BYTES`.
    pub fn read(self) -> PgResult<RowReader> {
        let RowFile {
            dir,
            mut file,
            rows,
            bytes,
        } = self;
        file.rewind().map_err(|e| dir.error("read from", e))?;
        let input = BufReader::with_capacity(FILE_BUFFER_BYTES, file);
        Ok(RowReader {
            dir,
            input,
            rows,
            left: rows,
            bytes,
            encoded: Vec::new(),
        })
    }
}

/// Reads the rows of a [`RowFile`] in the order they were written. Yields at
/// most one error, then ends.
pub struct RowReader {
    dir: SpillDir,
    input: BufReader<File>,
    rows: u64,
    left: u64,
    bytes: u64,
    encoded: Vec<u8>,
}

impl RowReader {
    /// Rows in the file (read or not).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Size of the file in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Starts reading again from the first row (a join's inner side read once per batch
    /// of the outer side).
    pub fn rewind(&mut self) -> PgResult<()> {
        self.input
            .rewind()
            .map_err(|e| self.dir.error("read from", e))?;
        self.left = self.rows;
        Ok(())
    }

    fn read_row(&mut self) -> PgResult<Vec<Value>> {
        // Most rows lie whole in the read buffer: decoded there, without a copy or a
        // read call per length byte.
        let buffered = self
            .input
            .fill_buf()
            .map_err(|e| self.dir.error("read from", e))?;
        if let Some((len, at)) = varint_in(buffered) {
            if let Some(end) = usize::try_from(len)
                .ok()
                .and_then(|len| at.checked_add(len))
                .filter(|&end| end <= buffered.len())
            {
                let row = decode_row(&buffered[at..end]);
                self.input.consume(end);
                return row;
            }
        }
        self.read_row_across()
    }

    /// `read_row` of a row that continues past the read buffer.
    fn read_row_across(&mut self) -> PgResult<Vec<Value>> {
        let len = read_varint(&mut self.input).map_err(|e| self.dir.error("read from", e))?;
        // a length past the file's size is damage, not an allocation to make
        let len = usize::try_from(len)
            .ok()
            .filter(|l| (*l as u64) <= self.bytes)
            .ok_or_else(|| {
                self.dir.error(
                    "read from",
                    std::io::Error::new(std::io::ErrorKind::InvalidData, "bad row length"),
                )
            })?;
        self.encoded.resize(len, 0);
        self.input
            .read_exact(&mut self.encoded)
            .map_err(|e| self.dir.error("read from", e))?;
        decode_row(&self.encoded)
    }
}

impl Iterator for RowReader {
    type Item = PgResult<Vec<Value>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let row = self.read_row();
        self.left = if row.is_ok() { self.left - 1 } else { 0 };
        Some(row)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.left).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

/// Writes `v` as a LEB128 varint into `buf`, returning the bytes used.
fn put_varint(buf: &mut [u8; 10], mut v: u64) -> &[u8] {
    let mut n = 0;
    while v >= 0x80 {
        buf[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    buf[n] = v as u8;
    &buf[..=n]
}

/// A varint at the start of `bytes` and the bytes it takes; None if it does not end there.
fn varint_in(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &byte) in bytes.iter().take(10).enumerate() {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

fn read_varint(input: &mut impl Read) -> std::io::Result<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let mut byte = [0u8];
        input.read_exact(&mut byte)?;
        v |= u64::from(byte[0] & 0x7f) << shift;
        if byte[0] & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "bad row length",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgerror::codes;
    use proptest::prelude::*;
    use types::codec::encode_row;

    /// Rows compared by their encoding: equal bytes ⇔ same variants and bits (NaN == NaN).
    fn bits(rows: &[Vec<Value>]) -> Vec<Vec<u8>> {
        rows.iter()
            .map(|r| {
                let mut out = Vec::new();
                encode_row(r, &mut out);
                out
            })
            .collect()
    }

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i16>().prop_map(Value::Int2),
            any::<i32>().prop_map(Value::Int4),
            any::<i64>().prop_map(Value::Int8),
            any::<u32>().prop_map(|b| Value::Float4(f32::from_bits(b))),
            any::<u64>().prop_map(|b| Value::Float8(f64::from_bits(b))),
            (any::<i64>(), 0u32..=40).prop_map(|(m, s)| Value::Numeric(
                types::numeric::parse(&format!("{m}e-{s}"))
                    .expect("numeric syntax")
                    .expect("in range")
            )),
            Just(Value::Numeric(
                types::numeric::parse("NaN")
                    .expect("numeric syntax")
                    .expect("in range")
            )),
            (".{0,12}", 0usize..100).prop_map(|(s, pad)| Value::Text(s + &" ".repeat(pad))),
            proptest::collection::vec(any::<u8>(), 0..12).prop_map(Value::Bytea),
            any::<i32>().prop_map(Value::Date),
            any::<i64>().prop_map(Value::Time),
            any::<i64>().prop_map(Value::Timestamp),
            any::<i64>().prop_map(Value::TimestampTz),
            (any::<i32>(), any::<i32>(), any::<i64>()).prop_map(|(months, days, micros)| {
                Value::Interval {
                    months,
                    days,
                    micros,
                }
            }),
            any::<u32>().prop_map(Value::Oid),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        scalar().prop_recursive(3, 24, 6, |inner| {
            proptest::collection::vec(inner, 0..6).prop_map(Value::Array)
        })
    }

    fn temp_dir() -> (tempfile::TempDir, SpillDir) {
        let parent = tempfile::tempdir().unwrap();
        let dir = SpillDir::open(parent.path().join("pgsql_tmp")).unwrap();
        (parent, dir)
    }

    proptest! {
        #[test]
        fn every_value_round_trips(rows in proptest::collection::vec(proptest::collection::vec(value(), 0..6), 0..40)) {
            let (_parent, dir) = temp_dir();
            let mut file = RowWriter::create(&dir).unwrap();
            for row in &rows {
                file.push(row).unwrap();
            }
            let mut reader = file.finish().unwrap().read().unwrap();
            let back: Vec<Vec<Value>> = reader.by_ref().collect::<PgResult<_>>().unwrap();
            prop_assert_eq!(bits(&back), bits(&rows));
            reader.rewind().unwrap();
            let again: Vec<Vec<Value>> = reader.collect::<PgResult<_>>().unwrap();
            prop_assert_eq!(bits(&again), bits(&rows));
        }
    }

    #[test]
    fn a_row_pushed_in_parts_reads_back_whole() {
        let (_parent, dir) = temp_dir();
        let mut file = RowWriter::create(&dir).unwrap();
        let (key, rest) = (
            [Value::Bytea(vec![0, 1])],
            [Value::Null, Value::Text("t".into())],
        );
        file.push_parts(&[&key, &rest]).unwrap();
        file.push_parts(&[&[], &rest, &[]]).unwrap();
        let back: Vec<Vec<Value>> = file
            .finish()
            .unwrap()
            .read()
            .unwrap()
            .collect::<PgResult<_>>()
            .unwrap();
        assert_eq!(back, vec![[&key[..], &rest].concat(), rest.to_vec()]);
    }

    #[test]
    fn counts_rows_and_bytes() {
        let (_parent, dir) = temp_dir();
        let mut file = RowWriter::create(&dir).unwrap();
        file.push(&[Value::Int8(1), Value::Text("abc".into())])
            .unwrap();
        file.push(&[]).unwrap();
        // row 1: len 1 + count 1 + (tag 1 + 8) + (tag 1 + len 1 + 3); row 2: len 1 + count 1
        assert_eq!((file.rows(), file.bytes()), (2, 16 + 2));
        let file = file.finish().unwrap();
        assert_eq!((file.rows(), file.bytes()), (2, 18));
        assert_eq!(
            dir.stats(),
            crate::SpillStats {
                files: 1,
                bytes: 18
            }
        );
        let reader = file.read().unwrap();
        assert_eq!((reader.rows(), reader.bytes()), (2, 18));
    }

    #[test]
    fn a_full_disk_is_53100() {
        let (_parent, dir) = temp_dir();
        // /dev/full fails every write with ENOSPC, as a full file system does
        let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
            return;
        };
        let mut file = RowWriter::on(&dir, full);
        let row = [Value::Text("x".repeat(1000))];
        let e = (0..100)
            .map(|_| file.push(&row))
            .find_map(Result::err)
            .unwrap_or_else(|| file.finish().err().unwrap());
        assert_eq!(e.code, codes::DISK_FULL);
        assert!(
            e.message
                .starts_with("could not write to temporary file in \""),
            "{}",
            e.message
        );
        assert!(
            e.message.ends_with("\": No space left on device"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_truncated_file_is_an_error_then_the_end() {
        let (_parent, dir) = temp_dir();
        let mut file = RowWriter::create(&dir).unwrap();
        for i in 0..3 {
            file.push(&[Value::Int8(i)]).unwrap();
        }
        let mut reader = file.finish().unwrap().read().unwrap();
        reader.input.get_mut().set_len(15).unwrap(); // a row and a half
        assert!(reader.next().unwrap().is_ok());
        let e = reader.next().unwrap().unwrap_err();
        assert_eq!(e.code, codes::IO_ERROR);
        assert!(
            e.message
                .starts_with("could not read from temporary file in \""),
            "{}",
            e.message
        );
        assert!(reader.next().is_none());
    }
}
