//! Raw byte streams recorded between real PostgreSQL 15 clients and a PostgreSQL 15.18
//! server (a byte-for-byte recording proxy; see tests/data/pg15/README.md):
//!
//! * every client stream decodes completely, with no error and nothing left over;
//! * every prefix of a client stream decodes to the complete messages only;
//! * every server message of a kind our encoders produce is re-encoded from its decoded
//!   content and must equal PostgreSQL's bytes exactly.

use bytes::BytesMut;
use pgerror::{PgError, Severity};
use wire::backend::*;
use wire::frontend::DescribeKind;
use wire::{decode_message, decode_startup, FrontendMessage as M, StartupPacket};

const MAX: usize = 1 << 20;

const STREAMS: &[(&str, &[u8], &[u8])] = &[
    (
        "ext_c1",
        include_bytes!("data/pg15/ext_c1.fe"),
        include_bytes!("data/pg15/ext_c1.be"),
    ),
    (
        "ext_c2",
        include_bytes!("data/pg15/ext_c2.fe"),
        include_bytes!("data/pg15/ext_c2.be"),
    ),
    (
        "prep_c1",
        include_bytes!("data/pg15/prep_c1.fe"),
        include_bytes!("data/pg15/prep_c1.be"),
    ),
    (
        "prep_c2",
        include_bytes!("data/pg15/prep_c2.fe"),
        include_bytes!("data/pg15/prep_c2.be"),
    ),
    (
        "simple_c1",
        include_bytes!("data/pg15/simple_c1.fe"),
        include_bytes!("data/pg15/simple_c1.be"),
    ),
    (
        "simple_c2",
        include_bytes!("data/pg15/simple_c2.fe"),
        include_bytes!("data/pg15/simple_c2.be"),
    ),
    (
        "psql_c1",
        include_bytes!("data/pg15/psql_c1.fe"),
        include_bytes!("data/pg15/psql_c1.be"),
    ),
    (
        "copy_c1",
        include_bytes!("data/pg15/copy_c1.fe"),
        include_bytes!("data/pg15/copy_c1.be"),
    ),
];

/// Decode a whole client stream: start-up packets, then messages.
fn decode_client(fe: &[u8]) -> (Vec<StartupPacket>, Vec<M>) {
    let mut buf = BytesMut::from(fe);
    let mut startup = Vec::new();
    loop {
        let p = decode_startup(&mut buf)
            .unwrap()
            .expect("complete start-up packet");
        let done = matches!(
            p,
            StartupPacket::Startup { .. } | StartupPacket::Cancel { .. }
        );
        startup.push(p);
        if done {
            break;
        }
    }
    let mut msgs = Vec::new();
    while let Some(m) = decode_message(&mut buf, MAX).unwrap() {
        msgs.push(m);
    }
    assert!(buf.is_empty(), "{} bytes left over", buf.len());
    (startup, msgs)
}

#[test]
fn client_streams_decode_completely() {
    let mut seen = std::collections::BTreeSet::new();
    for (name, fe, _) in STREAMS {
        let (startup, msgs) = decode_client(fe);
        assert_eq!(
            startup[0],
            StartupPacket::SslRequest,
            "{name}: libpq sslmode=prefer"
        );
        let StartupPacket::Startup {
            protocol_version,
            params,
        } = &startup[1]
        else {
            panic!("{name}: {startup:?}")
        };
        assert_eq!(*protocol_version, 196608);
        assert!(
            params.iter().any(|(k, v)| k == "user" && v == "postgres"),
            "{name}"
        );
        assert!(
            params.iter().any(|(k, v)| k == "database" && v == "bench"),
            "{name}"
        );
        assert_eq!(msgs.last(), Some(&M::Terminate), "{name}");
        for m in &msgs {
            seen.insert(
                format!("{m:?}")
                    .split([' ', '('])
                    .next()
                    .unwrap()
                    .to_string(),
            );
        }
    }
    for kind in [
        "Query",
        "Parse",
        "Bind",
        "Describe",
        "Execute",
        "Sync",
        "Terminate",
        "CopyData",
        "CopyDone",
    ] {
        assert!(seen.contains(kind), "no {kind} in the recordings: {seen:?}");
    }
}

#[test]
fn pgbench_extended_transaction_content() {
    let (_, msgs) = decode_client(include_bytes!("data/pg15/ext_c2.fe"));
    // tpcb-like under -M extended: unnamed Parse with no types, text Bind, Describe Portal,
    // Execute 0, Sync, per statement.
    let i = msgs
        .iter()
        .position(
            |m| matches!(m, M::Parse { query, .. } if query.starts_with("UPDATE pgbench_accounts")),
        )
        .expect("UPDATE pgbench_accounts");
    let M::Parse {
        name,
        query,
        param_types,
    } = &msgs[i]
    else {
        unreachable!()
    };
    assert_eq!(name, "");
    assert_eq!(
        query,
        "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;"
    );
    assert!(param_types.is_empty());
    let M::Bind {
        portal,
        statement,
        param_formats,
        params,
        result_formats,
    } = &msgs[i + 1]
    else {
        panic!("{:?}", msgs[i + 1])
    };
    assert_eq!((portal.as_str(), statement.as_str()), ("", ""));
    assert!(param_formats.is_empty());
    assert_eq!(params.len(), 2);
    assert!(params
        .iter()
        .all(|p| p.as_ref().is_some_and(|v| std::str::from_utf8(v).is_ok())));
    assert_eq!(result_formats, &[0]);
    assert_eq!(
        msgs[i + 2],
        M::Describe {
            kind: DescribeKind::Portal,
            name: String::new()
        }
    );
    assert_eq!(
        msgs[i + 3],
        M::Execute {
            portal: String::new(),
            max_rows: 0
        }
    );
    assert_eq!(msgs[i + 4], M::Sync);
}

#[test]
fn pgbench_prepared_uses_named_statements() {
    let (_, msgs) = decode_client(include_bytes!("data/pg15/prep_c2.fe"));
    assert!(msgs
        .iter()
        .any(|m| matches!(m, M::Parse { name, .. } if name.starts_with('P'))));
    assert!(msgs
        .iter()
        .any(|m| matches!(m, M::Bind { statement, .. } if statement.starts_with('P'))));
}

#[test]
fn psql_copy_from_stdin() {
    let (_, msgs) = decode_client(include_bytes!("data/pg15/copy_c1.fe"));
    let data: Vec<u8> = msgs
        .iter()
        .filter_map(|m| {
            if let M::CopyData(d) = m {
                Some(d.to_vec())
            } else {
                None
            }
        })
        .flatten()
        .collect();
    assert_eq!(data, b"1\tone\n2\t\\N\n\\.\n");
    assert!(msgs.contains(&M::CopyDone));
}

#[test]
fn every_prefix_of_real_client_streams() {
    for (name, fe, _) in STREAMS {
        let (_, all) = decode_client(fe);
        // skip the start-up part: find where messages begin
        let mut buf = BytesMut::from(*fe);
        while !matches!(
            decode_startup(&mut buf).unwrap(),
            Some(StartupPacket::Startup { .. })
        ) {}
        let body_start = fe.len() - buf.len();
        let stream = &fe[body_start..];
        // message boundaries, from the framing
        let mut ends = Vec::new();
        let mut at = 0;
        while at < stream.len() {
            at += 1 + i32::from_be_bytes(stream[at + 1..at + 5].try_into().unwrap()) as usize;
            ends.push(at);
        }
        assert_eq!(ends.len(), all.len());
        for k in 0..=stream.len() {
            let mut b = BytesMut::from(&stream[..k]);
            let mut n = 0;
            while let Some(m) = decode_message(&mut b, MAX).unwrap() {
                assert_eq!(m, all[n], "{name} prefix {k}");
                n += 1;
            }
            let complete = ends.iter().take_while(|&&e| e <= k).count();
            assert_eq!(n, complete, "{name} prefix {k}");
            let consumed = if n == 0 { 0 } else { ends[n - 1] };
            assert_eq!(
                &b[..],
                &stream[consumed..k],
                "{name} prefix {k}: consumed too much"
            );
        }
        // start-up prefixes
        for k in 0..body_start.min(8) {
            let mut b = BytesMut::from(&fe[..k]);
            assert_eq!(
                decode_startup(&mut b).unwrap(),
                None,
                "{name} start-up prefix {k}"
            );
            assert_eq!(b.len(), k);
        }
    }
}

// ---- server side: re-encode and compare with PostgreSQL's bytes ----

struct R<'a>(&'a [u8]);
impl<'a> R<'a> {
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
    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let v = &self.0[..n];
        self.0 = &self.0[n..];
        v
    }
    fn cstr(&mut self) -> String {
        let n = self.0.iter().position(|&b| b == 0).unwrap();
        let s = String::from_utf8(self.0[..n].to_vec()).unwrap();
        self.0 = &self.0[n + 1..];
        s
    }
}

/// Re-encode one backend message with our encoders; `None` for kinds we do not produce.
fn reencode(tag: u8, body: &[u8]) -> Option<Vec<u8>> {
    let mut out = BytesMut::new();
    let mut r = R(body);
    match tag {
        b'R' => match r.i32() {
            0 => authentication_ok(&mut out),
            3 => authentication_cleartext_password(&mut out),
            _ => return None,
        },
        b'S' => {
            let (k, v) = (r.cstr(), r.cstr());
            parameter_status(&mut out, &k, &v);
        }
        b'K' => {
            let (p, k) = (r.i32(), r.i32());
            backend_key_data(&mut out, p, k);
        }
        b'Z' => ready_for_query(
            &mut out,
            match body {
                b"I" => TransactionStatus::Idle,
                b"T" => TransactionStatus::InBlock,
                b"E" => TransactionStatus::Failed,
                _ => panic!("bad ReadyForQuery {body:?}"),
            },
        ),
        b'1' => parse_complete(&mut out),
        b'2' => bind_complete(&mut out),
        b'3' => close_complete(&mut out),
        b'n' => no_data(&mut out),
        b's' => portal_suspended(&mut out),
        b'I' => empty_query_response(&mut out),
        b'C' => command_complete(&mut out, &r.cstr()),
        b't' => {
            let n = r.i16();
            let oids: Vec<u32> = (0..n).map(|_| r.i32() as u32).collect();
            parameter_description(&mut out, &oids);
        }
        b'T' => {
            let n = r.i16();
            let fields: Vec<FieldDescription> = (0..n)
                .map(|_| FieldDescription {
                    name: r.cstr().into(),
                    table_oid: r.i32() as u32,
                    column_attr: r.i16(),
                    type_oid: r.i32() as u32,
                    type_len: r.i16(),
                    type_modifier: r.i32(),
                    format: r.i16(),
                })
                .collect();
            row_description(&mut out, &fields);
        }
        b'D' => {
            let n = r.i16();
            let mut w = DataRowWriter::begin(&mut out, n);
            for _ in 0..n {
                match r.i32() {
                    -1 => w.null(),
                    l => {
                        let v = r.bytes(l as usize);
                        w.field_with(|b| b.extend_from_slice(v));
                    }
                }
            }
            w.finish();
        }
        b'G' => {
            let (fmt, n) = (r.bytes(1)[0], r.i16());
            copy_in_response(&mut out, n, fmt == 1);
        }
        _ => return None,
    }
    Some(out.to_vec())
}

fn frame(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    v.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

#[test]
fn server_streams_reencode_byte_for_byte() {
    let mut checked = std::collections::BTreeMap::<char, usize>::new();
    for (name, fe, be) in STREAMS {
        let mut be: &[u8] = be;
        if fe[..8] == [0, 0, 0, 8, 0x04, 0xD2, 0x16, 0x2F] {
            assert_eq!(be[0], b'N', "{name}: SSL refusal byte");
            assert_eq!(one(ssl_refused), b"N");
            be = &be[1..];
        }
        while !be.is_empty() {
            let tag = be[0];
            let len = i32::from_be_bytes(be[1..5].try_into().unwrap()) as usize;
            let (msg, rest) = be.split_at(1 + len);
            be = rest;
            let body = &msg[5..];
            if tag == b'E' || tag == b'N' {
                // PostgreSQL adds F/L/R (source file, line, routine); compare the rest.
                let mut fields = Vec::new();
                let mut r = R(body);
                while r.0[0] != 0 {
                    let t = r.bytes(1)[0];
                    fields.push((t, r.cstr()));
                }
                let get = |c: u8| fields.iter().find(|f| f.0 == c).map(|f| f.1.clone());
                let code: &'static str = Box::leak(get(b'C').unwrap().into_boxed_str());
                let mut e = PgError::new(code, get(b'M').unwrap());
                e.severity = match get(b'V').unwrap().as_str() {
                    "ERROR" => Severity::Error,
                    "FATAL" => Severity::Fatal,
                    other => panic!("{other}"),
                };
                e.detail = get(b'D');
                e.hint = get(b'H');
                e.position = get(b'P').map(|p| p.parse().unwrap());
                let mut expected = Vec::new();
                for (t, v) in &fields {
                    if b"SVCMDHP".contains(t) {
                        expected.push(*t);
                        expected.extend_from_slice(v.as_bytes());
                        expected.push(0);
                    }
                }
                expected.push(0);
                assert_eq!(
                    one(|o| error_response(o, &e)),
                    frame(b'E', &expected),
                    "{name}"
                );
                *checked.entry(tag as char).or_default() += 1;
                continue;
            }
            if let Some(ours) = reencode(tag, body) {
                assert_eq!(ours, msg, "{name}: tag {}", tag as char);
                *checked.entry(tag as char).or_default() += 1;
            }
        }
    }
    for tag in "RSKZ12TDCEnG".chars() {
        assert!(
            checked.contains_key(&tag),
            "no {tag} in the recordings: {checked:?}"
        );
    }
}

fn one(f: impl FnOnce(&mut BytesMut)) -> Vec<u8> {
    let mut out = BytesMut::new();
    f(&mut out);
    out.to_vec()
}
