//! `uuid`: 16 bytes, read in every text form PostgreSQL's uuid_in accepts and written as
//! its uuid_out writes them (lower case, 8-4-4-4-12).

use pgerror::{codes, PgError, PgResult};

/// uuid_in: an optional `{…}` around 32 hex digits, each pair of bytes after the first
/// optionally followed by one hyphen (so hyphens may sit between any groups of 4).
pub fn parse(s: &str) -> PgResult<[u8; 16]> {
    let bad = || {
        PgError::new(
            codes::INVALID_TEXT_REPRESENTATION,
            format!("invalid input syntax for type uuid: \"{s}\""),
        )
    };
    let b = s.as_bytes();
    let braces = b.first() == Some(&b'{');
    let mut at = braces as usize;
    let mut out = [0u8; 16];
    for (i, byte) in out.iter_mut().enumerate() {
        let hex = |c: Option<&u8>| c.and_then(|c| (*c as char).to_digit(16));
        let (Some(hi), Some(lo)) = (hex(b.get(at)), hex(b.get(at + 1))) else {
            return Err(bad());
        };
        *byte = (hi * 16 + lo) as u8;
        at += 2;
        if b.get(at) == Some(&b'-') && i % 2 == 1 && i < 15 {
            at += 1;
        }
    }
    if braces {
        if b.get(at) != Some(&b'}') {
            return Err(bad());
        }
        at += 1;
    }
    if at != b.len() {
        return Err(bad());
    }
    Ok(out)
}

/// uuid_out: lower-case hex with hyphens after bytes 4, 6, 8 and 10.
pub fn format(u: &[u8; 16], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, b) in u.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 15) as usize]);
    }
}

/// A version 4 (random) UUID from 16 random bytes, as gen_random_uuid() builds it.
pub fn v4_from_random(mut bytes: [u8; 16]) -> [u8; 16] {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(u: &[u8; 16]) -> String {
        let mut out = Vec::new();
        format(u, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn accepts_postgresql_forms() {
        let want = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
        for s in [
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
        ] {
            assert_eq!(text(&parse(s).unwrap()), want, "{s}");
        }
        for s in [
            "",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0e-ebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
            " a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        ] {
            assert_eq!(
                parse(s).unwrap_err().code,
                codes::INVALID_TEXT_REPRESENTATION,
                "{s}"
            );
        }
    }

    #[test]
    fn v4_sets_version_and_variant() {
        let u = v4_from_random([0xff; 16]);
        assert_eq!(text(&u), "ffffffff-ffff-4fff-bfff-ffffffffffff");
    }
}
