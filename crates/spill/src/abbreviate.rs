//! Abbreviated keys from the memcomparable key encoding.

use types::codec::{encode_key, encode_key_desc};
use types::Value;

/// An abbreviated key for one sort-key value: the first 8 bytes of its memcomparable
/// encoding (`types::codec::encode_key`, whose byte order is `ops::sort_cmp`'s), zero
/// padded, with NULL at the end given by `nulls_first`. Monotone: if `a` sorts before `b`
/// then `abbreviated_key(a) <= abbreviated_key(b)`, so it can abbreviate the first sort key
/// of an [`crate::ExternalSorter`]. Holds for the values of one column type (the
/// encoding orders int, float and numeric representations apart, which `sort_cmp`
/// compares by value).
pub fn abbreviated_key(value: &Value, descending: bool, nulls_first: bool) -> u64 {
    if value.is_null() {
        return if nulls_first { 0 } else { u64::MAX };
    }
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
        prop_oneof![Just(Value::Null), "[\\x00ab]{0,10}".prop_map(Value::Text), ".{0,10}".prop_map(Value::Text)]
    }

    fn float() -> impl Strategy<Value = Value> {
        prop_oneof![Just(Value::Null), any::<f64>().prop_map(Value::Float8), Just(Value::Float8(f64::NAN))]
    }

    /// The order the abbreviation must respect: sort_cmp, reversed for DESC, NULLs placed.
    fn sql_order(a: &Value, b: &Value, descending: bool, nulls_first: bool) -> Ordering {
        match (a.is_null(), b.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => if nulls_first { Ordering::Less } else { Ordering::Greater },
            (false, true) => if nulls_first { Ordering::Greater } else { Ordering::Less },
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
    }
}
