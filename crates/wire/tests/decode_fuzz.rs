//! Property tests: the decoders never panic, never consume on `Ok(None)`, reject huge
//! declared lengths from the header alone, and round-trip every well-formed message.

mod common;

use bytes::{Bytes, BytesMut};
use common::{encode, encode_startup};
use proptest::prelude::*;
use wire::frontend::{DescribeKind, MAX_STARTUP_LEN};
use wire::{decode_message, decode_startup, FrontendMessage as M, StartupPacket};

const MAX: usize = 1 << 16;

/// Decode until `Ok(None)` or `Err`; check the no-consumption rule on `Ok(None)`.
fn drain(bytes: &[u8], max_len: usize) -> Result<Vec<M>, wire::ProtocolError> {
    let mut buf = BytesMut::from(bytes);
    let mut out = Vec::new();
    loop {
        let before = buf.clone();
        match decode_message(&mut buf, max_len)? {
            Some(m) => {
                assert!(buf.len() < before.len(), "Ok(Some) must consume");
                out.push(m)
            }
            None => {
                assert_eq!(buf, before, "Ok(None) must not consume");
                return Ok(out);
            }
        }
    }
}

fn name() -> impl Strategy<Value = String> {
    "[^\u{0}]{0,12}"
}

fn bytes_s(max: usize) -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(any::<u8>(), 0..max).prop_map(Bytes::from)
}

fn kind() -> impl Strategy<Value = DescribeKind> {
    prop_oneof![Just(DescribeKind::Statement), Just(DescribeKind::Portal)]
}

fn message() -> impl Strategy<Value = M> {
    prop_oneof![
        "[^\u{0}]{0,64}".prop_map(M::Query),
        (
            name(),
            "[^\u{0}]{0,64}",
            proptest::collection::vec(any::<u32>(), 0..8)
        )
            .prop_map(|(name, query, param_types)| M::Parse {
                name,
                query,
                param_types
            }),
        (
            name(),
            name(),
            proptest::collection::vec(any::<i16>(), 0..4),
            proptest::collection::vec(proptest::option::of(bytes_s(16)), 0..6),
            proptest::collection::vec(any::<i16>(), 0..4),
        )
            .prop_map(
                |(portal, statement, param_formats, params, result_formats)| M::Bind {
                    portal,
                    statement,
                    param_formats,
                    params,
                    result_formats
                }
            ),
        (kind(), name()).prop_map(|(kind, name)| M::Describe { kind, name }),
        (kind(), name()).prop_map(|(kind, name)| M::Close { kind, name }),
        (name(), any::<i32>()).prop_map(|(portal, max_rows)| M::Execute { portal, max_rows }),
        Just(M::Flush),
        Just(M::Sync),
        Just(M::Terminate),
        bytes_s(64).prop_map(M::CopyData),
        Just(M::CopyDone),
        name().prop_map(M::CopyFail),
        bytes_s(64).prop_map(M::Password),
    ]
}

fn startup() -> impl Strategy<Value = StartupPacket> {
    prop_oneof![
        (
            0u32..4,
            proptest::collection::vec(("[^\u{0}]{1,10}", name()), 0..6)
        )
            .prop_map(|(minor, params)| StartupPacket::Startup {
                protocol_version: (3 << 16) | minor,
                params
            }),
        Just(StartupPacket::SslRequest),
        Just(StartupPacket::GssEncRequest),
        (any::<i32>(), any::<i32>()).prop_map(|(process_id, secret_key)| StartupPacket::Cancel {
            process_id,
            secret_key
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = drain(&bytes, MAX);
        let _ = drain(&bytes, 16);
        let mut b = BytesMut::from(&bytes[..]);
        loop {
            let before = b.clone();
            match decode_startup(&mut b) {
                Ok(Some(_)) => continue,
                Ok(None) => { prop_assert_eq!(&b, &before); break }
                Err(_) => break,
            }
        }
    }

    #[test]
    fn random_bytes_after_valid_tag_never_panic(
        tag in prop::sample::select(b"QPBDECHSXdcfp".to_vec()),
        body in proptest::collection::vec(any::<u8>(), 0..128),
    ) {
        // a correct length with a random body: must be Ok(Some) or Err, never Ok(None)
        let mut v = vec![tag];
        v.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        v.extend_from_slice(&body);
        let mut b = BytesMut::from(&v[..]);
        let r = decode_message(&mut b, MAX);
        prop_assert!(!matches!(r, Ok(None)));
    }

    #[test]
    fn round_trip(msgs in proptest::collection::vec(message(), 1..8)) {
        let bytes: Vec<u8> = msgs.iter().flat_map(encode).collect();
        prop_assert_eq!(drain(&bytes, MAX).unwrap(), msgs);
    }

    #[test]
    fn startup_round_trip(p in startup()) {
        let bytes = encode_startup(&p);
        let mut b = BytesMut::from(&bytes[..]);
        prop_assert_eq!(decode_startup(&mut b).unwrap(), Some(p));
        prop_assert!(b.is_empty());
    }

    #[test]
    fn truncated_valid_messages_need_more(m in message(), cut in any::<prop::sample::Index>()) {
        let bytes = encode(&m);
        let k = cut.index(bytes.len()); // strictly shorter than the message
        prop_assert_eq!(drain(&bytes[..k], MAX).unwrap(), vec![]);
    }

    #[test]
    fn truncated_startup_needs_more(p in startup(), cut in any::<prop::sample::Index>()) {
        let bytes = encode_startup(&p);
        let k = cut.index(bytes.len());
        let mut b = BytesMut::from(&bytes[..k]);
        prop_assert_eq!(decode_startup(&mut b).unwrap(), None);
        prop_assert_eq!(b.len(), k);
    }

    #[test]
    fn corrupted_length_never_panics(
        msgs in proptest::collection::vec(message(), 1..4),
        which in any::<prop::sample::Index>(),
        len in any::<i32>(),
    ) {
        let mut bytes: Vec<u8> = Vec::new();
        let mut offsets = Vec::new();
        for m in &msgs {
            offsets.push(bytes.len());
            bytes.extend_from_slice(&encode(m));
        }
        let at = offsets[which.index(offsets.len())];
        bytes[at + 1..at + 5].copy_from_slice(&len.to_be_bytes());
        let _ = drain(&bytes, MAX);
    }

    #[test]
    fn corrupted_startup_length_never_panics(p in startup(), len in any::<i32>()) {
        let mut bytes = encode_startup(&p);
        bytes[0..4].copy_from_slice(&len.to_be_bytes());
        let _ = decode_startup(&mut BytesMut::from(&bytes[..]));
    }

    #[test]
    fn flipped_bytes_never_panic(
        msgs in proptest::collection::vec(message(), 1..4),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let mut bytes: Vec<u8> = msgs.iter().flat_map(encode).collect();
        for (i, v) in flips {
            let i = i.index(bytes.len());
            bytes[i] = v;
        }
        let _ = drain(&bytes, MAX);
    }

    #[test]
    fn huge_declared_length_rejected_without_body(
        tag in prop::sample::select(b"QPBDECHSXdcfp".to_vec()),
        len in (MAX as i32 + 1)..=i32::MAX,
    ) {
        let mut b = BytesMut::from(&[tag][..]);
        b.extend_from_slice(&len.to_be_bytes());
        prop_assert!(decode_message(&mut b, MAX).is_err());
    }

    #[test]
    fn huge_startup_length_rejected_without_body(len in (MAX_STARTUP_LEN as i32 + 1)..=i32::MAX) {
        let mut b = BytesMut::from(&len.to_be_bytes()[..]);
        prop_assert!(decode_startup(&mut b).is_err());
    }

    #[test]
    fn negative_length_rejected(tag in prop::sample::select(b"QPBDECHSXdcfp".to_vec()), len in i32::MIN..4) {
        let mut b = BytesMut::from(&[tag][..]);
        b.extend_from_slice(&len.to_be_bytes());
        prop_assert!(decode_message(&mut b, MAX).is_err());
        let mut b = BytesMut::from(&len.to_be_bytes()[..]);
        prop_assert!(decode_startup(&mut b).is_err());
    }
}
