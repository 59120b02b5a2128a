//! Test-only frontend encoder: builds client messages byte by byte, independently of the
//! decoder under test.
#![allow(dead_code)]

use wire::frontend::DescribeKind;
use wire::{FrontendMessage, StartupPacket};

pub fn frame(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    v.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

fn cstr(v: &mut Vec<u8>, s: &str) {
    v.extend_from_slice(s.as_bytes());
    v.push(0);
}

/// Encode a frontend message the way a client would.
pub fn encode(msg: &FrontendMessage) -> Vec<u8> {
    let mut b = Vec::new();
    let tag = match msg {
        FrontendMessage::Unreadable { .. } => {
            unreachable!("what the decoder makes of unreadable text, not a message to send")
        }
        FrontendMessage::Query(q) => {
            cstr(&mut b, q);
            b'Q'
        }
        FrontendMessage::Parse {
            name,
            query,
            param_types,
        } => {
            cstr(&mut b, name);
            cstr(&mut b, query);
            b.extend_from_slice(&(param_types.len() as i16).to_be_bytes());
            for t in param_types {
                b.extend_from_slice(&t.to_be_bytes());
            }
            b'P'
        }
        FrontendMessage::Bind {
            portal,
            statement,
            param_formats,
            params,
            result_formats,
        } => {
            cstr(&mut b, portal);
            cstr(&mut b, statement);
            b.extend_from_slice(&(param_formats.len() as i16).to_be_bytes());
            for f in param_formats {
                b.extend_from_slice(&f.to_be_bytes());
            }
            b.extend_from_slice(&(params.len() as i16).to_be_bytes());
            for p in params {
                match p {
                    None => b.extend_from_slice(&(-1i32).to_be_bytes()),
                    Some(v) => {
                        b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                        b.extend_from_slice(v);
                    }
                }
            }
            b.extend_from_slice(&(result_formats.len() as i16).to_be_bytes());
            for f in result_formats {
                b.extend_from_slice(&f.to_be_bytes());
            }
            b'B'
        }
        FrontendMessage::Describe { kind, name } | FrontendMessage::Close { kind, name } => {
            b.push(match kind {
                DescribeKind::Statement => b'S',
                DescribeKind::Portal => b'P',
            });
            cstr(&mut b, name);
            if matches!(msg, FrontendMessage::Describe { .. }) {
                b'D'
            } else {
                b'C'
            }
        }
        FrontendMessage::Execute { portal, max_rows } => {
            cstr(&mut b, portal);
            b.extend_from_slice(&max_rows.to_be_bytes());
            b'E'
        }
        FrontendMessage::Flush => b'H',
        FrontendMessage::Sync => b'S',
        FrontendMessage::Terminate => b'X',
        FrontendMessage::CopyData(d) => {
            b.extend_from_slice(d);
            b'd'
        }
        FrontendMessage::CopyDone => b'c',
        FrontendMessage::CopyFail(m) => {
            cstr(&mut b, m);
            b'f'
        }
        FrontendMessage::Password(p) => {
            b.extend_from_slice(p);
            b'p'
        }
    };
    frame(tag, &b)
}

/// Encode a start-up packet the way a client would.
pub fn encode_startup(p: &StartupPacket) -> Vec<u8> {
    let mut body = Vec::new();
    match p {
        StartupPacket::Startup {
            protocol_version,
            params,
        } => {
            body.extend_from_slice(&protocol_version.to_be_bytes());
            for (k, v) in params {
                cstr(&mut body, k);
                cstr(&mut body, v);
            }
            body.push(0);
        }
        StartupPacket::SslRequest => body.extend_from_slice(&80877103u32.to_be_bytes()),
        StartupPacket::GssEncRequest => body.extend_from_slice(&80877104u32.to_be_bytes()),
        StartupPacket::Cancel {
            process_id,
            secret_key,
        } => {
            body.extend_from_slice(&80877102u32.to_be_bytes());
            body.extend_from_slice(&process_id.to_be_bytes());
            body.extend_from_slice(&secret_key.to_be_bytes());
        }
    }
    let mut v = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    v.extend_from_slice(&body);
    v
}
