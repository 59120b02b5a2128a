//! Decoding of client messages taken from the PostgreSQL 15 captures in
//! /work/shared/reference/pg15-wire-captures (values from the `.proto.log` files; raw byte
//! literals where the layout is short enough to write by hand).

mod common;

use bytes::{Bytes, BytesMut};
use common::{encode, encode_startup, frame};
use wire::frontend::{DescribeKind, PasswordBody, PROTOCOL_VERSION_3_0};
use wire::{decode_message, decode_startup, FrontendMessage as M, StartupPacket};

const MAX: usize = 1 << 20;

fn decode_all(bytes: &[u8]) -> Vec<M> {
    let mut buf = BytesMut::from(bytes);
    let mut out = Vec::new();
    while let Some(m) = decode_message(&mut buf, MAX).expect("valid stream") {
        out.push(m);
    }
    assert!(buf.is_empty(), "left over: {:?}", &buf[..]);
    out
}

fn s(x: &str) -> String {
    x.to_string()
}

#[test]
fn ssl_gssenc_cancel_raw_bytes() {
    // SSLRequest: len 8, code 1234.5679 = 80877103.
    let mut b = BytesMut::from(&[0u8, 0, 0, 8, 0x04, 0xD2, 0x16, 0x2F][..]);
    assert_eq!(
        decode_startup(&mut b).unwrap(),
        Some(StartupPacket::SslRequest)
    );
    assert!(b.is_empty());
    // GSSENCRequest: 80877104.
    let mut b = BytesMut::from(&[0u8, 0, 0, 8, 0x04, 0xD2, 0x16, 0x30][..]);
    assert_eq!(
        decode_startup(&mut b).unwrap(),
        Some(StartupPacket::GssEncRequest)
    );
    // CancelRequest from auth/cancel_libpq: pid=28477 key=-240328168.
    let mut raw = vec![0u8, 0, 0, 16, 0x04, 0xD2, 0x16, 0x2E];
    raw.extend_from_slice(&28477i32.to_be_bytes());
    raw.extend_from_slice(&(-240328168i32).to_be_bytes());
    let mut b = BytesMut::from(&raw[..]);
    assert_eq!(
        decode_startup(&mut b).unwrap(),
        Some(StartupPacket::Cancel {
            process_id: 28477,
            secret_key: -240328168
        })
    );
    assert!(b.is_empty());
}

#[test]
fn wrong_length_for_fixed_requests_is_error() {
    let mut b = BytesMut::from(&[0u8, 0, 0, 12, 0x04, 0xD2, 0x16, 0x2F][..]);
    assert!(decode_startup(&mut b).is_err());
    let mut b = BytesMut::from(&[0u8, 0, 0, 8, 0x04, 0xD2, 0x16, 0x2E][..]);
    assert!(decode_startup(&mut b).is_err());
}

#[test]
fn ssl_request_then_startup_message_pgbench() {
    // pgbench_run_S_extended: SSLRequest, then
    // StartupMessage v3.0 {'user': 'postgres', 'database': 'bench', 'application_name': 'pgbench'}
    let params = vec![
        (s("user"), s("postgres")),
        (s("database"), s("bench")),
        (s("application_name"), s("pgbench")),
    ];
    let startup = encode_startup(&StartupPacket::Startup {
        protocol_version: PROTOCOL_VERSION_3_0,
        params: params.clone(),
    });
    let mut literal = vec![0u8, 0, 0, 63, 0, 3, 0, 0];
    literal.extend_from_slice(b"user\0postgres\0database\0bench\0application_name\0pgbench\0\0");
    assert_eq!(startup, literal);

    let mut stream = vec![0u8, 0, 0, 8, 0x04, 0xD2, 0x16, 0x2F];
    stream.extend_from_slice(&startup);
    let mut b = BytesMut::from(&stream[..]);
    assert_eq!(
        decode_startup(&mut b).unwrap(),
        Some(StartupPacket::SslRequest)
    );
    assert_eq!(
        decode_startup(&mut b).unwrap(),
        Some(StartupPacket::Startup {
            protocol_version: 196608,
            params
        })
    );
    assert!(b.is_empty());
}

#[test]
fn startup_message_pgjdbc_many_params_and_asyncpg_quotes() {
    let jdbc = vec![
        (s("user"), s("postgres")),
        (s("database"), s("bench")),
        (s("client_encoding"), s("UTF8")),
        (s("DateStyle"), s("ISO")),
        (s("TimeZone"), s("Etc/UTC")),
        (s("extra_float_digits"), s("3")),
        (s("application_name"), s("PostgreSQL JDBC Driver")),
    ];
    let asyncpg = vec![
        (s("client_encoding"), s("'utf-8'")),
        (s("user"), s("postgres")),
        (s("database"), s("bench")),
    ];
    for params in [jdbc, asyncpg] {
        let p = StartupPacket::Startup {
            protocol_version: PROTOCOL_VERSION_3_0,
            params,
        };
        let mut b = BytesMut::from(&encode_startup(&p)[..]);
        assert_eq!(decode_startup(&mut b).unwrap(), Some(p));
    }
}

#[test]
fn startup_minor_version_passed_through() {
    let p = StartupPacket::Startup {
        protocol_version: (3 << 16) | 2,
        params: vec![(s("user"), s("u")), (s("_pq_.foo"), s("bar"))],
    };
    let mut b = BytesMut::from(&encode_startup(&p)[..]);
    assert_eq!(decode_startup(&mut b).unwrap(), Some(p));
}

#[test]
fn startup_layout_errors() {
    // no terminator
    let mut raw = vec![0u8, 0, 0, 0, 0, 3, 0, 0];
    raw.extend_from_slice(b"user\0postgres\0");
    raw[3] = raw.len() as u8;
    assert!(decode_startup(&mut BytesMut::from(&raw[..])).is_err());
    // empty body
    assert!(decode_startup(&mut BytesMut::from(&[0u8, 0, 0, 8, 0, 3, 0, 0][..])).is_err());
    // key without value
    let mut raw = vec![0u8, 0, 0, 0, 0, 3, 0, 0];
    raw.extend_from_slice(b"user\0\0");
    raw[3] = raw.len() as u8;
    // "user" -> "" value, then missing terminator
    assert!(decode_startup(&mut BytesMut::from(&raw[..])).is_err());
    // trailing garbage after terminator
    let mut raw = vec![0u8, 0, 0, 0, 0, 3, 0, 0];
    raw.extend_from_slice(b"user\0u\0\0x");
    raw[3] = raw.len() as u8;
    assert!(decode_startup(&mut BytesMut::from(&raw[..])).is_err());
    // invalid UTF-8
    let mut raw = vec![0u8, 0, 0, 0, 0, 3, 0, 0];
    raw.extend_from_slice(b"user\0\xff\xfe\0\0");
    raw[3] = raw.len() as u8;
    assert!(decode_startup(&mut BytesMut::from(&raw[..])).is_err());
    // length below 8, above MAX_STARTUP_LEN: rejected from the 4 length bytes alone
    assert!(decode_startup(&mut BytesMut::from(&[0u8, 0, 0, 7][..])).is_err());
    assert!(decode_startup(&mut BytesMut::from(&[0u8, 0, 0x27, 0x11][..])).is_err());
    assert!(decode_startup(&mut BytesMut::from(&[0xffu8, 0xff, 0xff, 0xff][..])).is_err());
    // exactly MAX_STARTUP_LEN is still waited for
    let mut b = BytesMut::from(&[0u8, 0, 0x27, 0x10, 0, 3, 0, 0][..]);
    assert_eq!(decode_startup(&mut b).unwrap(), None);
    assert_eq!(b.len(), 8);
}

/// pgbench -M extended, one `SELECT abalance ... WHERE aid = $1` transaction:
/// Parse stmt='' paramtypes=[], Bind params=['31130'] resultformats=[0],
/// Describe Portal '', Execute maxrows=0, Sync.
fn pgbench_extended_bytes() -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&frame(
        b'P',
        b"\0SELECT abalance FROM pgbench_accounts WHERE aid = $1;\0\0\0",
    ));
    v.extend_from_slice(b"B\0\0\0\x17\0\0\0\0\0\x01\0\0\0\x0531130\0\x01\0\0");
    v.extend_from_slice(b"D\0\0\0\x06P\0");
    v.extend_from_slice(b"E\0\0\0\x09\0\0\0\0\0");
    v.extend_from_slice(b"S\0\0\0\x04");
    v
}

fn pgbench_extended_messages() -> Vec<M> {
    vec![
        M::Parse {
            name: s(""),
            query: s("SELECT abalance FROM pgbench_accounts WHERE aid = $1;"),
            param_types: vec![],
        },
        M::Bind {
            portal: s(""),
            statement: s(""),
            param_formats: vec![],
            params: vec![Some(Bytes::from_static(b"31130"))],
            result_formats: vec![0],
        },
        M::Describe {
            kind: DescribeKind::Portal,
            name: s(""),
        },
        M::Execute {
            portal: s(""),
            max_rows: 0,
        },
        M::Sync,
    ]
}

#[test]
fn pgbench_extended_sequence() {
    let bytes = pgbench_extended_bytes();
    let expected = pgbench_extended_messages();
    assert_eq!(decode_all(&bytes), expected);
    // and the test encoder agrees with the hand-written bytes
    let re: Vec<u8> = expected.iter().flat_map(encode).collect();
    assert_eq!(re, bytes);
}

#[test]
fn asyncpg_named_describe_flush_binary_bind_maxrows() {
    // drivers/asyncpg: Parse '__asyncpg_stmt_1__', Describe Statement, Flush, then
    // Bind paramformats=[1] params=[b'\x00\x00\x00\x05'] resultformats=[1], Execute maxrows=1, Sync.
    let msgs = vec![
        M::Parse {
            name: s("__asyncpg_stmt_1__"),
            query: s("SELECT abalance FROM pgbench_accounts WHERE aid = $1"),
            param_types: vec![],
        },
        M::Describe {
            kind: DescribeKind::Statement,
            name: s("__asyncpg_stmt_1__"),
        },
        M::Flush,
        M::Bind {
            portal: s(""),
            statement: s("__asyncpg_stmt_1__"),
            param_formats: vec![1],
            params: vec![Some(Bytes::from_static(&[0, 0, 0, 5]))],
            result_formats: vec![1],
        },
        M::Execute {
            portal: s(""),
            max_rows: 1,
        },
        M::Sync,
    ];
    let bytes: Vec<u8> = msgs.iter().flat_map(encode).collect();
    assert_eq!(decode_all(&bytes), msgs);
}

#[test]
fn typed_parse_null_param_close_statement() {
    // psycopg3 Parse paramtypes=[21, 21]; tokio-postgres Close Statement 's2'; a NULL param.
    let msgs = vec![
        M::Parse {
            name: s(""),
            query: s("UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"),
            param_types: vec![21, 21],
        },
        M::Bind {
            portal: s(""),
            statement: s(""),
            param_formats: vec![1, 1],
            params: vec![Some(Bytes::from_static(&[0, 7])), None],
            result_formats: vec![],
        },
        M::Close {
            kind: DescribeKind::Statement,
            name: s("s2"),
        },
        M::Close {
            kind: DescribeKind::Portal,
            name: s(""),
        },
        M::Sync,
    ];
    let bytes: Vec<u8> = msgs.iter().flat_map(encode).collect();
    assert_eq!(decode_all(&bytes), msgs);
    // raw Close 'S' "s2"
    assert_eq!(decode_all(b"C\0\0\0\x08Ss2\0"), vec![msgs[2].clone()]);
}

#[test]
fn simple_query_and_terminate() {
    // psql_connect_select1: Query 'select 1', Terminate.
    let bytes = b"Q\0\0\0\x0dselect 1\0X\0\0\0\x04";
    assert_eq!(
        decode_all(bytes),
        vec![M::Query(s("select 1")), M::Terminate]
    );
}

#[test]
fn copy_from_stdin_pgbench_init() {
    // pgbench_init_default: CopyData b'1\t1\t0\t\n' ... b'\\.\n', CopyDone; also CopyFail.
    let msgs = vec![
        M::CopyData(Bytes::from_static(b"1\t1\t0\t\n")),
        M::CopyData(Bytes::from_static(b"\\.\n")),
        M::CopyDone,
        M::CopyFail(s("COPY terminated by user")),
    ];
    let bytes: Vec<u8> = msgs.iter().flat_map(encode).collect();
    assert_eq!(&bytes[..12], b"d\0\0\0\x0b1\t1\t0\t\n");
    assert_eq!(decode_all(&bytes), msgs);
    // empty CopyData is legal
    assert_eq!(decode_all(b"d\0\0\0\x04"), vec![M::CopyData(Bytes::new())]);
}

#[test]
fn password_messages_from_auth_captures() {
    // auth_cleartext_libpq: b'secret3\x00'
    let m = decode_all(&frame(b'p', b"secret3\0"));
    let M::Password(body) = &m[0] else {
        panic!("{m:?}")
    };
    assert_eq!(PasswordBody::password(body).unwrap(), "secret3");
    // auth_md5_libpq
    let m = decode_all(&frame(b'p', b"md508280231b03b6e6431b3c86411610060\0"));
    let M::Password(body) = &m[0] else {
        panic!("{m:?}")
    };
    assert_eq!(
        PasswordBody::password(body).unwrap(),
        "md508280231b03b6e6431b3c86411610060"
    );
    // auth_scram_libpq: SASLInitialResponse b'SCRAM-SHA-256\x00\x00\x00\x00 n,,n=,r=YWkoNSO7rBShYKIXkfzrll//'
    let initial = b"SCRAM-SHA-256\0\0\0\0 n,,n=,r=YWkoNSO7rBShYKIXkfzrll//";
    let m = decode_all(&frame(b'p', initial));
    let M::Password(body) = &m[0] else {
        panic!("{m:?}")
    };
    let (mech, data) = PasswordBody::sasl_initial_response(body).unwrap();
    assert_eq!(mech, "SCRAM-SHA-256");
    assert_eq!(
        data.as_deref(),
        Some(&b"n,,n=,r=YWkoNSO7rBShYKIXkfzrll//"[..])
    );
}

#[test]
fn every_prefix_of_a_single_message_needs_more_and_consumes_nothing() {
    let bytes = pgbench_extended_bytes();
    let mut start = 0;
    // split the stream into its messages
    while start < bytes.len() {
        let len = i32::from_be_bytes(bytes[start + 1..start + 5].try_into().unwrap()) as usize;
        let one = &bytes[start..start + 1 + len];
        for k in 0..one.len() {
            let mut b = BytesMut::from(&one[..k]);
            assert_eq!(
                decode_message(&mut b, MAX).unwrap(),
                None,
                "prefix {k} of {one:?}"
            );
            assert_eq!(&b[..], &one[..k]);
        }
        start += 1 + len;
    }
    // same for start-up packets
    let startup = encode_startup(&StartupPacket::Startup {
        protocol_version: PROTOCOL_VERSION_3_0,
        params: vec![(s("user"), s("postgres")), (s("database"), s("bench"))],
    });
    for one in [
        startup,
        encode_startup(&StartupPacket::SslRequest),
        encode_startup(&StartupPacket::Cancel {
            process_id: 1,
            secret_key: 2,
        }),
    ] {
        for k in 0..one.len() {
            let mut b = BytesMut::from(&one[..k]);
            assert_eq!(decode_startup(&mut b).unwrap(), None);
            assert_eq!(&b[..], &one[..k]);
        }
    }
}

#[test]
fn every_prefix_of_a_stream_yields_the_complete_messages_only() {
    let bytes = pgbench_extended_bytes();
    let all = pgbench_extended_messages();
    for k in 0..=bytes.len() {
        let mut b = BytesMut::from(&bytes[..k]);
        let mut got = Vec::new();
        while let Some(m) = decode_message(&mut b, MAX).unwrap() {
            got.push(m);
        }
        assert_eq!(got[..], all[..got.len()]);
        let consumed: usize = got.iter().map(|m| encode(m).len()).sum();
        assert_eq!(&b[..], &bytes[consumed..k]);
    }
}

#[test]
fn byte_at_a_time_feeding() {
    let bytes = pgbench_extended_bytes();
    let mut b = BytesMut::new();
    let mut got = Vec::new();
    for &byte in &bytes {
        b.extend_from_slice(&[byte]);
        while let Some(m) = decode_message(&mut b, MAX).unwrap() {
            got.push(m);
        }
    }
    assert_eq!(got, pgbench_extended_messages());
    assert!(b.is_empty());
}

#[test]
fn malformed_bodies_are_errors() {
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("query without NUL", frame(b'Q', b"select 1")),
        ("query trailing garbage", frame(b'Q', b"select 1\0x")),
        ("parse negative count", frame(b'P', b"\0q\0\xff\xff")),
        ("parse count > body", frame(b'P', b"\0q\0\0\x02\0\0\0\x17")),
        ("parse missing count", frame(b'P', b"\0q\0")),
        (
            "bind param len < -1",
            frame(b'B', b"\0\0\0\0\0\x01\xff\xff\xff\xfe\0\0"),
        ),
        (
            "bind param len > body",
            frame(b'B', b"\0\0\0\0\0\x01\0\0\0\x09abc\0\0"),
        ),
        ("bind missing result formats", frame(b'B', b"\0\0\0\0\0\0")),
        (
            "bind negative formats",
            frame(b'B', b"\0\0\xff\xfe\0\0\0\0"),
        ),
        ("describe bad kind", frame(b'D', b"Xname\0")),
        ("describe empty", frame(b'D', b"")),
        ("close bad kind", frame(b'C', b"s\0")),
        ("execute short", frame(b'E', b"\0\0\0")),
        ("execute trailing", frame(b'E', b"\0\0\0\0\0\0")),
        ("sync with body", frame(b'S', b"\0")),
        ("flush with body", frame(b'H', b"x")),
        ("copydone with body", frame(b'c', b"x")),
        ("copyfail no NUL", frame(b'f', b"oops")),
        ("length 3", b"Q\0\0\0\x03".to_vec()),
        ("negative length", b"Q\xff\xff\xff\xff".to_vec()),
        ("unknown tag", frame(b'?', b"")),
        ("function call", frame(b'F', b"")),
        ("TLS ClientHello", vec![0x16, 0x03, 0x01, 0x02, 0x00]),
    ];
    // Text that is not UTF-8 ends the statement, not the connection (22021).
    let mut b = BytesMut::from(&frame(b'Q', b"select '\xc3\x28'\0")[..]);
    match decode_message(&mut b, MAX) {
        Ok(Some(M::Unreadable {
            simple_query: true,
            error,
        })) => {
            assert_eq!(error.code, "22021");
            assert_eq!(
                error.message,
                "invalid byte sequence for encoding \"UTF8\": 0xc3 0x28"
            );
        }
        other => panic!("query invalid utf8: {other:?}"),
    }
    assert!(b.is_empty());
    for (what, bytes) in cases {
        let mut b = BytesMut::from(&bytes[..]);
        let r = decode_message(&mut b, MAX);
        assert!(r.is_err(), "{what}: {r:?}");
        let pg = r.unwrap_err().into_pg_error();
        assert_eq!(pg.severity, pgerror::Severity::Fatal, "{what}");
        assert_eq!(pg.code, "08P01", "{what}: {}", pg.message);
    }
}

#[test]
fn huge_lengths_rejected_from_header_alone() {
    for tag in *b"QPBDECdfp" {
        let mut b = BytesMut::from(&[tag, 0x40, 0, 0, 0][..]);
        let e = decode_message(&mut b, MAX).unwrap_err();
        assert_eq!(e.into_pg_error().code, "54000", "tag {}", tag as char);
    }
    // Sync/Flush/Terminate/CopyDone: any length but 4 is malformed
    for tag in *b"SHXc" {
        let mut b = BytesMut::from(&[tag, 0, 0, 0, 5][..]);
        assert!(decode_message(&mut b, MAX).is_err());
    }
    // exactly max_len is waited for, max_len + 1 is rejected
    let mut b = BytesMut::from(&[b'd', 0, 0, 0x04, 0][..]);
    assert_eq!(decode_message(&mut b, 1024).unwrap(), None);
    let mut b = BytesMut::from(&[b'd', 0, 0, 0x04, 1][..]);
    assert!(decode_message(&mut b, 1024).is_err());
    // small-message limit for Describe/Close/Execute/CopyFail
    let mut b = BytesMut::from(&[b'D', 0, 0, 0x27, 0x11][..]);
    assert!(decode_message(&mut b, MAX).is_err());
}

#[test]
fn bind_params_share_the_input_buffer() {
    let mut b = BytesMut::from(&pgbench_extended_bytes()[..]);
    decode_message(&mut b, MAX).unwrap();
    let Some(M::Bind { params, .. }) = decode_message(&mut b, MAX).unwrap() else {
        panic!()
    };
    assert_eq!(params[0].as_deref(), Some(&b"31130"[..]));
}
