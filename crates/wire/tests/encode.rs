//! Backend encoders: exact bytes for messages seen in the PostgreSQL 15 captures, and a
//! tiny independent parser that reads back whatever the encoders produce.

use bytes::{BufMut, BytesMut};
use pgerror::PgError;
use wire::backend::*;

/// Split a backend stream into (tag, body), checking that every length frames exactly.
fn frames(buf: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < buf.len() {
        assert!(buf.len() - i >= 5, "truncated header at {i}");
        let tag = buf[i];
        let len = i32::from_be_bytes(buf[i + 1..i + 5].try_into().unwrap());
        assert!(len >= 4, "bad length {len}");
        let end = i + 1 + len as usize;
        assert!(end <= buf.len(), "length {len} runs past the buffer");
        out.push((tag, buf[i + 5..end].to_vec()));
        i = end;
    }
    out
}

struct P<'a>(&'a [u8]);
impl P<'_> {
    fn i16(&mut self) -> i16 {
        let v = i16::from_be_bytes(self.0[..2].try_into().unwrap());
        self.0 = &self.0[2..];
        v
    }
    fn i32(&mut self) -> i32 {
        let v = i32::from_be_bytes(self.0[..4].try_into().unwrap());
        self.0 = &self.0[4..];
        v
    }
    fn u8(&mut self) -> u8 {
        let v = self.0[0];
        self.0 = &self.0[1..];
        v
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let v = self.0[..n].to_vec();
        self.0 = &self.0[n..];
        v
    }
    fn cstr(&mut self) -> String {
        let n = self.0.iter().position(|&b| b == 0).expect("NUL");
        let s = String::from_utf8(self.0[..n].to_vec()).unwrap();
        self.0 = &self.0[n + 1..];
        s
    }
    fn done(&self) {
        assert!(self.0.is_empty(), "trailing {:?}", self.0);
    }
}

fn parse_data_row(body: &[u8]) -> Vec<Option<Vec<u8>>> {
    let mut p = P(body);
    let n = p.i16();
    let v = (0..n)
        .map(|_| match p.i32() {
            -1 => None,
            l => Some(p.bytes(l as usize)),
        })
        .collect();
    p.done();
    v
}

fn parse_fields(body: &[u8]) -> Vec<(u8, String)> {
    let mut p = P(body);
    let mut v = Vec::new();
    loop {
        let t = p.u8();
        if t == 0 {
            break;
        }
        v.push((t, p.cstr()));
    }
    p.done();
    v
}

fn one(f: impl FnOnce(&mut BytesMut)) -> Vec<u8> {
    let mut out = BytesMut::new();
    f(&mut out);
    out.to_vec()
}

#[test]
fn exact_bytes_simple_messages() {
    assert_eq!(one(ssl_refused), b"N");
    // ReadyForQuery I / T / E
    assert_eq!(
        one(|o| ready_for_query(o, TransactionStatus::Idle)),
        [0x5A, 0, 0, 0, 5, 0x49]
    );
    assert_eq!(
        one(|o| ready_for_query(o, TransactionStatus::InBlock)),
        b"Z\0\0\0\x05T"
    );
    assert_eq!(
        one(|o| ready_for_query(o, TransactionStatus::Failed)),
        b"Z\0\0\0\x05E"
    );
    // Authentication Ok / CleartextPassword / MD5Password salt=0c101324
    assert_eq!(one(authentication_ok), b"R\0\0\0\x08\0\0\0\0");
    assert_eq!(
        one(authentication_cleartext_password),
        b"R\0\0\0\x08\0\0\0\x03"
    );
    assert_eq!(
        one(|o| authentication_md5_password(o, [0x0c, 0x10, 0x13, 0x24])),
        b"R\0\0\0\x0c\0\0\0\x05\x0c\x10\x13\x24"
    );
    // Authentication SASL mechanisms=[b'SCRAM-SHA-256']
    assert_eq!(
        one(|o| authentication_sasl(o, &["SCRAM-SHA-256"])),
        b"R\0\0\0\x17\0\0\0\x0aSCRAM-SHA-256\0\0"
    );
    assert_eq!(
        one(|o| authentication_sasl_final(o, b"v=OCZX")),
        b"R\0\0\0\x0e\0\0\0\x0cv=OCZX"
    );
    assert_eq!(
        one(|o| authentication_sasl_continue(o, b"r=a")),
        b"R\0\0\0\x0b\0\0\0\x0br=a"
    );
    // ParameterStatus client_encoding=UTF8
    assert_eq!(
        one(|o| parameter_status(o, "client_encoding", "UTF8")),
        b"S\0\0\0\x19client_encoding\0UTF8\0"
    );
    // BackendKeyData pid=7768 key=-1532696378
    let mut want = b"K\0\0\0\x0c".to_vec();
    want.extend_from_slice(&7768i32.to_be_bytes());
    want.extend_from_slice(&(-1532696378i32).to_be_bytes());
    assert_eq!(one(|o| backend_key_data(o, 7768, -1532696378)), want);
    // CommandComplete SELECT 1
    assert_eq!(
        one(|o| command_complete(o, "SELECT 1")),
        b"C\0\0\0\x0dSELECT 1\0"
    );
    // empty-bodied messages
    assert_eq!(one(parse_complete), b"1\0\0\0\x04");
    assert_eq!(one(bind_complete), b"2\0\0\0\x04");
    assert_eq!(one(close_complete), b"3\0\0\0\x04");
    assert_eq!(one(no_data), b"n\0\0\0\x04");
    assert_eq!(one(portal_suspended), b"s\0\0\0\x04");
    assert_eq!(one(empty_query_response), b"I\0\0\0\x04");
    assert_eq!(one(copy_done), b"c\0\0\0\x04");
    // ParameterDescription [23] (asyncpg)
    assert_eq!(
        one(|o| parameter_description(o, &[23])),
        b"t\0\0\0\x0a\0\x01\0\0\0\x17"
    );
    // CopyInResponse format=0 ncols=4 colfmts=[0, 0, 0, 0] (pgbench -i)
    assert_eq!(
        one(|o| copy_in_response(o, 4, false)),
        b"G\0\0\0\x0f\0\0\x04\0\0\0\0\0\0\0\0"
    );
    assert_eq!(
        one(|o| copy_out_response(o, 0, false)),
        b"H\0\0\0\x07\0\0\0"
    );
    // CopyOutResponse format=1 ncols=2 colfmts=[1, 1] (COPY … TO STDOUT (FORMAT binary))
    assert_eq!(
        one(|o| copy_out_response(o, 2, true)),
        b"H\0\0\0\x0b\x01\0\x02\0\x01\0\x01"
    );
    assert_eq!(one(|o| copy_data(o, b"1\t2\n")), b"d\0\0\0\x081\t2\n");
}

#[test]
fn row_description_pgbench_abalance() {
    // RowDescription 1 cols: abalance(typ=23,len=4,mod=-1,fmt=0,tbl=16482,att=3)
    let f = FieldDescription {
        name: "abalance".into(),
        table_oid: 16482,
        column_attr: 3,
        type_oid: 23,
        type_len: 4,
        type_modifier: -1,
        format: 0,
    };
    let bytes = one(|o| row_description(o, &[f]));
    let mut want = b"T\0\0\0\x21\0\x01abalance\0".to_vec();
    want.extend_from_slice(&16482u32.to_be_bytes());
    want.extend_from_slice(&3i16.to_be_bytes());
    want.extend_from_slice(&23u32.to_be_bytes());
    want.extend_from_slice(&4i16.to_be_bytes());
    want.extend_from_slice(&(-1i32).to_be_bytes());
    want.extend_from_slice(&0i16.to_be_bytes());
    assert_eq!(bytes, want);
}

#[test]
fn row_description_read_back() {
    // pgbench partition query: n(typ=23,len=4), partstrat(typ=18,len=1,tbl=3350,att=2), count(typ=20,len=8)
    let fields = vec![
        FieldDescription {
            name: "n".into(),
            table_oid: 0,
            column_attr: 0,
            type_oid: 23,
            type_len: 4,
            type_modifier: -1,
            format: 0,
        },
        FieldDescription {
            name: "partstrat".into(),
            table_oid: 3350,
            column_attr: 2,
            type_oid: 18,
            type_len: 1,
            type_modifier: -1,
            format: 0,
        },
        FieldDescription {
            name: "count".into(),
            table_oid: 0,
            column_attr: 0,
            type_oid: 20,
            type_len: 8,
            type_modifier: -1,
            format: 1,
        },
    ];
    let bytes = one(|o| row_description(o, &fields));
    let fr = frames(&bytes);
    assert_eq!(fr.len(), 1);
    assert_eq!(fr[0].0, b'T');
    let mut p = P(&fr[0].1);
    assert_eq!(p.i16(), 3);
    for f in &fields {
        assert_eq!(p.cstr(), f.name);
        assert_eq!(p.i32() as u32, f.table_oid);
        assert_eq!(p.i16(), f.column_attr);
        assert_eq!(p.i32() as u32, f.type_oid);
        assert_eq!(p.i16(), f.type_len);
        assert_eq!(p.i32(), f.type_modifier);
        assert_eq!(p.i16(), f.format);
    }
    p.done();
}

#[test]
fn data_row_writer_matches_capture() {
    // DataRow ['2', None, '0']
    let mut out = BytesMut::new();
    let mut w = DataRowWriter::begin(&mut out, 3);
    w.field(b"2");
    w.null();
    w.field_with(|b| b.put_u8(b'0'));
    w.finish();
    assert_eq!(
        &out[..],
        b"D\0\0\0\x14\0\x03\0\0\0\x012\xff\xff\xff\xff\0\0\0\x010"
    );
    let fr = frames(&out);
    assert_eq!(
        parse_data_row(&fr[0].1),
        vec![Some(b"2".to_vec()), None, Some(b"0".to_vec())]
    );
    // the convenience function gives identical bytes
    let again = one(|o| data_row(o, &[Some(b"2"), None, Some(b"0")]));
    assert_eq!(&again[..], &out[..]);
}

#[test]
fn data_row_writer_field_with_formats_in_place_and_empty_values() {
    use std::fmt::Write;
    struct W<'a>(&'a mut BytesMut);
    impl Write for W<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.extend_from_slice(s.as_bytes());
            Ok(())
        }
    }
    let mut out = BytesMut::new();
    ready_for_query(&mut out, TransactionStatus::Idle); // something already in the buffer
    for i in 0..3i64 {
        let mut w = DataRowWriter::begin(&mut out, 4);
        w.field_with(|b| write!(W(b), "{}", i * -1_000_000).unwrap());
        w.field(b"");
        w.field_with(|_| {}); // empty, not NULL
        w.null();
        assert_eq!(w.columns_written(), 4);
        w.finish();
    }
    let fr = frames(&out);
    assert_eq!(fr.len(), 4);
    assert_eq!(fr[0], (b'Z', b"I".to_vec()));
    for (i, (tag, body)) in fr[1..].iter().enumerate() {
        assert_eq!(*tag, b'D');
        assert_eq!(
            parse_data_row(body),
            vec![
                Some((i as i64 * -1_000_000).to_string().into_bytes()),
                Some(vec![]),
                Some(vec![]),
                None
            ]
        );
    }
}

#[test]
fn zero_column_data_row() {
    let mut out = BytesMut::new();
    DataRowWriter::begin(&mut out, 0).finish();
    assert_eq!(&out[..], b"D\0\0\0\x06\0\0");
}

#[test]
fn abandoned_data_row_leaves_stream_well_formed() {
    let mut out = BytesMut::new();
    data_row(&mut out, &[Some(b"1")]);
    let before = out.len();
    let mut w = DataRowWriter::begin(&mut out, 2);
    w.field(b"partial");
    w.abandon();
    assert_eq!(out.len(), before);
    error_response(&mut out, &PgError::new("22003", "integer out of range"));
    let fr = frames(&out);
    assert_eq!(fr.iter().map(|f| f.0).collect::<Vec<_>>(), b"DE");
}

#[test]
fn error_response_cancel_capture() {
    // ErrorResponse S=ERROR V=ERROR C=57014 M=canceling statement due to user request
    let e = PgError::new("57014", "canceling statement due to user request");
    let bytes = one(|o| error_response(o, &e));
    let mut want = Vec::new();
    want.extend_from_slice(b"SERROR\0VERROR\0C57014\0Mcanceling statement due to user request\0\0");
    let mut full = vec![b'E'];
    full.extend_from_slice(&((want.len() + 4) as i32).to_be_bytes());
    full.extend_from_slice(&want);
    assert_eq!(bytes, full);
}

#[test]
fn error_response_all_fields_and_fatal() {
    let e = PgError::fatal(
        "28P01",
        "password authentication failed for user \"scramuser\"",
    )
    .with_detail("d")
    .with_hint("h")
    .with_position(42);
    let bytes = one(|o| error_response(o, &e));
    let fr = frames(&bytes);
    assert_eq!(fr[0].0, b'E');
    assert_eq!(
        parse_fields(&fr[0].1),
        vec![
            (b'S', "FATAL".into()),
            (b'V', "FATAL".into()),
            (b'C', "28P01".into()),
            (
                b'M',
                "password authentication failed for user \"scramuser\"".into()
            ),
            (b'D', "d".into()),
            (b'H', "h".into()),
            (b'P', "42".into()),
        ]
    );
}

#[test]
fn notice_response_severities() {
    let bytes = one(|o| notice_response(o, &PgError::new("00000", "relation exists, skipping")));
    let fr = frames(&bytes);
    assert_eq!(fr[0].0, b'N');
    assert_eq!(
        parse_fields(&fr[0].1)[..2],
        [(b'S', "NOTICE".into()), (b'V', "NOTICE".into())]
    );
    let bytes = one(|o| notice_response(o, &PgError::new("01000", "w")));
    assert_eq!(
        parse_fields(&frames(&bytes)[0].1)[0],
        (b'S', "WARNING".into())
    );
    let bytes = one(|o| {
        notice_response_with(
            o,
            NoticeSeverity::Warning,
            &PgError::new("25P01", "there is no transaction in progress"),
        )
    });
    assert_eq!(
        parse_fields(&frames(&bytes)[0].1),
        vec![
            (b'S', "WARNING".into()),
            (b'V', "WARNING".into()),
            (b'C', "25P01".into()),
            (b'M', "there is no transaction in progress".into()),
        ]
    );
}

#[test]
fn negotiate_protocol_version_layout() {
    let bytes = one(|o| negotiate_protocol_version(o, 0, &["_pq_.foo".to_string()]));
    let fr = frames(&bytes);
    assert_eq!(fr[0].0, b'v');
    let mut p = P(&fr[0].1);
    assert_eq!(p.i32(), 0);
    assert_eq!(p.i32(), 1);
    assert_eq!(p.cstr(), "_pq_.foo");
    p.done();
}

#[test]
fn full_startup_reply_and_query_cycle_frames_cleanly() {
    // The server side of psql_connect_select1.
    let mut out = BytesMut::new();
    authentication_ok(&mut out);
    for (k, v) in [
        ("application_name", "psql"),
        ("client_encoding", "UTF8"),
        ("DateStyle", "ISO, MDY"),
        ("server_version", "15.18 (Debian 15.18-0+deb12u1)"),
        ("standard_conforming_strings", "on"),
    ] {
        parameter_status(&mut out, k, v);
    }
    backend_key_data(&mut out, 7768, -1532696378);
    ready_for_query(&mut out, TransactionStatus::Idle);
    row_description(
        &mut out,
        &[FieldDescription {
            name: "?column?".into(),
            table_oid: 0,
            column_attr: 0,
            type_oid: 23,
            type_len: 4,
            type_modifier: -1,
            format: 0,
        }],
    );
    data_row(&mut out, &[Some(b"1")]);
    command_complete(&mut out, "SELECT 1");
    ready_for_query(&mut out, TransactionStatus::Idle);
    let tags: Vec<u8> = frames(&out).iter().map(|f| f.0).collect();
    assert_eq!(tags, b"RSSSSSKZTDCZ");
    let fr = frames(&out);
    let mut p = P(&fr[4].1);
    assert_eq!(p.cstr(), "server_version");
    assert_eq!(p.cstr(), "15.18 (Debian 15.18-0+deb12u1)");
    p.done();
}
