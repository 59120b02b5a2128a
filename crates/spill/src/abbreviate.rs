//! Abbreviated keys: integers and floats whole, other values by the first 8 bytes of
//! their memcomparable key encoding.

use types::codec::{encode_key, encode_key_desc, ktag};
use types::Value;

/// An abbreviated key for one sort-key value, with NULL at the end given by `nulls_first`.
/// Monotone: if `a` sorts before `b` then `abbreviated_key(a) <= abbreviated_key(b)`, so
/// it can abbreviate the first sort key of an [`crate::ExternalSorter`]. Holds for the
/// values of one column type (integers of any width compare by value; int, float and
/// numeric representations are ordered apart, which `sort_cmp` compares by value).
///
/// Integers and floats map to their whole order-preserving 64 bits, so rows with distinct
/// values never tie on the key (a prefix of their 9-byte encoding left values 256 apart
/// tied, and every tie costs a call of the comparator); text takes the first 8 bytes of
/// its encoding without building the rest. NULL shares its key with the smallest or
/// largest value, and a tie only means the comparator decides.
pub fn abbreviated_key(value: &Value, descending: bool, nulls_first: bool) -> u64 {
    let ascending = match value {
        Value::Null => return if nulls_first { 0 } else { u64::MAX },
        Value::Int2(_) | Value::Int4(_) | Value::Int8(_) => {
            (value.as_i64().unwrap_or(0) as u64) ^ (1 << 63)
        }
        Value::Float4(f) => float_key(f64::from(*f)),
        Value::Float8(f) => float_key(*f),
        Value::Text(s) => text_prefix(s.as_bytes()),
        other => return encoded_prefix(other, descending),
    };
    if descending {
        !ascending
    } else {
        ascending
    }
}

/// `f` as an unsigned integer in `sort_cmp`'s order: -0 equal to 0, NaN above +Infinity.
fn float_key(f: f64) -> u64 {
    if f.is_nan() {
        return u64::MAX;
    }
    let bits = if f == 0.0 { 0 } else { f.to_bits() };
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// The first 8 bytes of the text key encoding (`types::codec::encode_key`: a tag, the
/// bytes with 0x00 escaped as 0x00 0xFF, then 0x00 0x01), zero padded.
fn text_prefix(bytes: &[u8]) -> u64 {
    let mut prefix = [0u8; 8];
    prefix[0] = ktag::TEXT;
    let mut n = 1;
    let mut put = |b: u8| {
        if n < 8 {
            prefix[n] = b;
            n += 1;
        }
    };
    for &c in bytes.iter().take(7) {
        put(c);
        if c == 0 {
            put(0xFF);
        }
    }
    put(0x00);
    put(0x01);
    u64::from_be_bytes(prefix)
}

/// The first 8 bytes of the value's key encoding (complemented for DESC), zero padded.
fn encoded_prefix(value: &Value, descending: bool) -> u64 {
    let mut encoded = Vec::with_capacity(16);
    if descending {
        encode_key_desc(value, &mut encoded);
    } else {
        encode_key(std::slice::from_ref(value), &mut encoded);
    }
    // every encoding starts with a type tag in 0x10..=0x78 (complemented: 0x87..=0xEF), so
    // a non-null key is neither 0 nor u64::MAX
    let mut prefix = [0u8; 8];
    let n = encoded.len().min(8);
    prefix[..n].copy_from_slice(&encoded[..n]);
    u64::from_be_bytes(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Ordering;
    use types::ops::sort_cmp;

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::Int8),
            (-3i64..3).prop_map(Value::Int8),
            any::<i32>().prop_map(Value::Int4),
        ]
    }

    fn text() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            "[\\x00ab]{0,10}".prop_map(Value::Text),
            ".{0,10}".prop_map(Value::Text)
        ]
    }

    fn float() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<f64>().prop_map(Value::Float8),
            Just(Value::Float8(f64::NAN))
        ]
    }

    /// The order the abbreviation must respect: sort_cmp, reversed for DESC, NULLs placed.
    fn sql_order(a: &Value, b: &Value, descending: bool, nulls_first: bool) -> Ordering {
        match (a.is_null(), b.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => {
                if nulls_first {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (false, true) => {
                if nulls_first {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            _ if descending => sort_cmp(b, a),
            _ => sort_cmp(a, b),
        }
    }

    proptest! {
        #[test]
        fn monotone_for_ints_texts_and_floats(ints in (value(), value()), texts in (text(), text()), floats in (float(), float()),
                                              descending in any::<bool>(), nulls_first in any::<bool>()) {
            for (a, b) in [ints, texts, floats] {
                let (ka, kb) = (abbreviated_key(&a, descending, nulls_first), abbreviated_key(&b, descending, nulls_first));
                match sql_order(&a, &b, descending, nulls_first) {
                    Ordering::Less => prop_assert!(ka <= kb, "{:?} {:?}", a, b),
                    Ordering::Greater => prop_assert!(ka >= kb, "{:?} {:?}", a, b),
                    Ordering::Equal => prop_assert_eq!(ka, kb, "{:?} {:?}", a, b),
                }
            }
        }

        #[test]
        fn ints_and_floats_are_abbreviated_whole(a in any::<i64>(), b in any::<i64>(), x in any::<f64>(), y in any::<f64>(), descending in any::<bool>()) {
            for (a, b) in [(Value::Int8(a), Value::Int8(b)), (Value::Float8(x), Value::Float8(y))] {
                let (ka, kb) = (abbreviated_key(&a, descending, false), abbreviated_key(&b, descending, false));
                // distinct values never tie: the comparator is not needed to order them
                prop_assert_eq!(ka.cmp(&kb), sql_order(&a, &b, descending, false), "{:?} {:?}", a, b);
            }
        }

        #[test]
        fn text_keys_are_their_encodings_first_bytes(t in "[\\x00ab]{0,10}|.{0,10}", descending in any::<bool>()) {
            let v = Value::Text(t);
            let mut encoded = Vec::new();
            encode_key(std::slice::from_ref(&v), &mut encoded);
            encoded.resize(8, 0);
            let prefix = u64::from_be_bytes(encoded[..8].try_into().unwrap());
            prop_assert_eq!(abbreviated_key(&v, descending, false), if descending { !prefix } else { prefix });
        }
    }
}
