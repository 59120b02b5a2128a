//! Property tests across modules: text/binary round trips, hash/compare consistency.

use proptest::prelude::*;
use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;
use types::numeric::{self, Numeric};
use types::ops::{compare, sort_cmp};
use types::{io, DataType, Value};

fn h(v: &Value) -> u64 {
    let mut s = DefaultHasher::new();
    v.hash_into(&mut s);
    s.finish()
}

/// `m × 10^-s` with display scale s.
fn num(m: i128, s: u32) -> Value {
    Value::Numeric(
        numeric::parse(&format!("{m}e-{s}"))
            .unwrap()
            .unwrap()
            .round(s as i64)
            .unwrap(),
    )
}

/// Numerics with up to `digits` random digits, any scale up to `max_scale`, and the specials.
fn arb_numeric(digits: usize, max_scale: i64) -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => (proptest::string::string_regex(&format!("-?[0-9]{{1,{digits}}}")).unwrap(), 0..=max_scale)
            .prop_map(|(d, s)| Value::Numeric(numeric::parse(&format!("{d}e-{s}")).unwrap().unwrap())),
        1 => Just(Value::Numeric(Numeric::NAN)),
        1 => Just(Value::Numeric(Numeric::POS_INF)),
        1 => Just(Value::Numeric(Numeric::NEG_INF)),
    ]
}

fn arb_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-1000i64..1000).prop_map(Value::Int8),
        (-1000i32..1000).prop_map(Value::Int4),
        (-1000i16..1000).prop_map(Value::Int2),
        (-100000i128..100000, 0u32..4).prop_map(|(m, s)| num(m, s)),
        (-4000i32..4000).prop_map(|x| Value::Float8(x as f64 / 4.0)),
        (-4000i32..4000).prop_map(|x| Value::Float4(x as f32 / 4.0)),
        (0u32..1000).prop_map(Value::Oid),
    ]
}

fn roundtrip_text(v: &Value, ty: &DataType) -> Value {
    let s = io::to_text_string(v, ty).unwrap();
    io::from_text(&s, ty).unwrap_or_else(|e| panic!("{s:?} as {ty}: {e}"))
}

fn roundtrip_binary(v: &Value, ty: &DataType) -> Value {
    let mut out = Vec::new();
    io::to_binary(v, ty, &mut out);
    io::from_binary(&out, ty).unwrap()
}

proptest! {
    #[test]
    fn equal_numbers_hash_equal(a in arb_number(), b in arb_number()) {
        // oid only compares with integers
        if compare(&a, &b) == Some(std::cmp::Ordering::Equal) {
            prop_assert_eq!(h(&a), h(&b), "{:?} == {:?}", a, b);
        }
        prop_assert_eq!(sort_cmp(&a, &b), sort_cmp(&b, &a).reverse());
    }

    #[test]
    fn float8_text_roundtrip(bits in any::<u64>()) {
        let f = f64::from_bits(bits);
        let back = roundtrip_text(&Value::Float8(f), &DataType::Float8);
        match back {
            Value::Float8(g) => prop_assert!(g.to_bits() == f.to_bits() || (f.is_nan() && g.is_nan())),
            _ => prop_assert!(false),
        }
    }

    #[test]
    fn float4_text_roundtrip(bits in any::<u32>()) {
        let f = f32::from_bits(bits);
        let back = roundtrip_text(&Value::Float4(f), &DataType::Float4);
        match back {
            Value::Float4(g) => prop_assert!(g.to_bits() == f.to_bits() || (f.is_nan() && g.is_nan())),
            _ => prop_assert!(false),
        }
    }

    #[test]
    fn numeric_roundtrips(v in arb_numeric(400, 600)) {
        prop_assert_eq!(roundtrip_text(&v, &DataType::NUMERIC).to_owned(), v.clone());
        let b = roundtrip_binary(&v, &DataType::NUMERIC);
        // same value and same display scale
        prop_assert_eq!(io::to_text_string(&b, &DataType::NUMERIC), io::to_text_string(&v, &DataType::NUMERIC));
    }

    #[test]
    fn timestamp_text_roundtrip(us in -211_813_488_000_000_000i64..9_223_371_331_199_999_999i64) {
        for ty in [DataType::TIMESTAMP, DataType::TIMESTAMPTZ] {
            let v = if ty == DataType::TIMESTAMP { Value::Timestamp(us) } else { Value::TimestampTz(us) };
            prop_assert_eq!(roundtrip_text(&v, &ty), v.clone());
        }
        let d = Value::Date(us.div_euclid(86_400_000_000) as i32);
        prop_assert_eq!(roundtrip_text(&d, &DataType::Date), d.clone());
    }

    #[test]
    fn interval_text_roundtrip(months in -10000i32..10000, days in -10000i32..10000, micros in -1_000_000_000_000i64..1_000_000_000_000) {
        let v = Value::Interval { months, days, micros };
        prop_assert_eq!(roundtrip_text(&v, &DataType::INTERVAL), v.clone());
    }

    #[test]
    fn text_array_roundtrip(items in proptest::collection::vec(proptest::option::of("[ -~é\"\\\\{},]{0,6}"), 0..5)) {
        let ty = DataType::Array(Box::new(DataType::Text));
        let v = Value::Array(items.into_iter().map(|o| o.map(Value::Text).unwrap_or(Value::Null)).collect());
        prop_assert_eq!(roundtrip_text(&v, &ty), v.clone());
        prop_assert_eq!(roundtrip_binary(&v, &ty), v);
    }

    #[test]
    fn int_text_roundtrip(a in any::<i64>(), b in any::<i32>(), c in any::<i16>()) {
        prop_assert_eq!(roundtrip_text(&Value::Int8(a), &DataType::Int8), Value::Int8(a));
        prop_assert_eq!(roundtrip_text(&Value::Int4(b), &DataType::Int4), Value::Int4(b));
        prop_assert_eq!(roundtrip_text(&Value::Int2(c), &DataType::Int2), Value::Int2(c));
    }

    #[test]
    fn from_text_never_panics(s in ".{0,24}") {
        for ty in [DataType::Int4, DataType::Float8, DataType::NUMERIC, DataType::Bool, DataType::Date,
                   DataType::TIMESTAMP, DataType::TIMESTAMPTZ, DataType::TIME, DataType::INTERVAL, DataType::Bytea,
                   DataType::Oid, DataType::Array(Box::new(DataType::Int4)), DataType::Array(Box::new(DataType::Text))] {
            let _ = io::from_text(&s, &ty);
        }
    }

    #[test]
    fn from_binary_never_panics(b in proptest::collection::vec(any::<u8>(), 0..40)) {
        for ty in [DataType::Int4, DataType::NUMERIC, DataType::Text, DataType::INTERVAL, DataType::TIME,
                   DataType::TIMESTAMP, DataType::Array(Box::new(DataType::Int4)), DataType::Array(Box::new(DataType::NUMERIC))] {
            let _ = io::from_binary(&b, &ty);
        }
    }
}

#[test]
fn sql_names() {
    use DataType as T;
    let n = |s: &str, m: &[i32]| DataType::from_sql_name(s, m).unwrap();
    assert_eq!(n("INT", &[]), T::Int4);
    assert_eq!(n("pg_catalog.int8", &[]), T::Int8);
    assert_eq!(n("double  precision", &[]), T::Float8);
    assert_eq!(n("float", &[24]), T::Float4);
    assert_eq!(n("float", &[25]), T::Float8);
    assert_eq!(n("float", &[]), T::Float8);
    assert_eq!(
        n("decimal", &[10, 2]),
        T::Numeric {
            precision_scale: Some((10, 2))
        }
    );
    assert_eq!(
        n("numeric", &[10]),
        T::Numeric {
            precision_scale: Some((10, 0))
        }
    );
    assert_eq!(
        n("character varying", &[10]),
        T::Varchar { max_len: Some(10) }
    );
    assert_eq!(n("char", &[]), T::Bpchar { len: Some(1) });
    assert_eq!(n("bpchar", &[]), T::Bpchar { len: None });
    assert_eq!(n("\"char\"", &[]), T::Char);
    assert_eq!(n("timestamp with time zone", &[]), T::TIMESTAMPTZ);
    assert_eq!(n("timestamp", &[3]), T::Timestamp { precision: Some(3) });
    assert_eq!(n("interval", &[9]), T::Interval { precision: Some(6) });
    assert_eq!(n("interval", &[0]).typmod(), 0x7fff_0000);
    assert_eq!(T::INTERVAL.with_typmod(0x7fff_0002), n("interval", &[2]));
    assert_eq!(n("int[]", &[]), T::Array(Box::new(T::Int4)));
    assert_eq!(n("_int4", &[]), T::Array(Box::new(T::Int4)));
    assert_eq!(n("REGCLASS", &[]), T::RegClass);
    let e = DataType::from_sql_name("foo", &[]).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("42704", "type \"foo\" does not exist")
    );
    assert_eq!(
        DataType::from_sql_name("float", &[54]).unwrap_err().message,
        "precision for type float must be less than 54 bits"
    );
    assert_eq!(
        DataType::from_sql_name("varchar", &[0])
            .unwrap_err()
            .message,
        "length for type varchar must be at least 1"
    );
    for t in [
        T::Int4,
        T::Text,
        T::Array(Box::new(T::Int8)),
        T::Numeric {
            precision_scale: Some((5, 2)),
        },
        T::Varchar { max_len: Some(3) },
    ] {
        assert_eq!(
            DataType::from_oid(t.oid()).unwrap().with_typmod(t.typmod()),
            t
        );
    }
}

fn arb_any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i16>().prop_map(Value::Int2),
        any::<i32>().prop_map(Value::Int4),
        any::<i64>().prop_map(Value::Int8),
        any::<f32>().prop_map(Value::Float4),
        any::<f64>().prop_map(Value::Float8),
        (any::<i64>(), 0u32..=28).prop_map(|(m, s)| num(m as i128, s)),
        arb_numeric(60, 40),
        ".{0,4}".prop_map(Value::Text),
        proptest::collection::vec(any::<u8>(), 0..4).prop_map(Value::Bytea),
        any::<i32>().prop_map(Value::Date),
        (0i64..=86_400_000_000).prop_map(Value::Time),
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
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        proptest::collection::vec(inner, 0..3).prop_map(Value::Array)
    })
}

proptest! {
    #[test]
    fn eval_never_panics(a in arb_any_value(), b in arb_any_value()) {
        use types::ops::{eval_binary, eval_unary, BinaryOp::*, UnaryOp};
        for op in [Add, Sub, Mul, Div, Mod, Pow, Eq, NotEq, Lt, LtEq, Gt, GtEq, Concat, Like, NotLike, ILike, NotILike,
                   RegexMatch, RegexNotMatch, RegexIMatch, RegexNotIMatch] {
            let _ = eval_binary(op, &a, &b);
        }
        for op in [UnaryOp::Neg, UnaryOp::Plus, UnaryOp::Not] {
            let _ = eval_unary(op, &a);
        }
        let _ = sort_cmp(&a, &b);
        let _ = h(&a);
        let mut out = Vec::new();
        types::codec::encode_key(&[a.clone(), b.clone()], &mut out);
        let mut row = Vec::new();
        types::codec::encode_row(&[a.clone(), b.clone()], &mut row);
        prop_assert_eq!(types::codec::decode_row(&row).unwrap().len(), 2);
        let ty = a.natural_type();
        let _ = io::to_text_string(&a, &ty);
        let mut bin = Vec::new();
        io::to_binary(&a, &ty, &mut bin);
        for to in [DataType::Text, DataType::Int4, DataType::Int2, DataType::NUMERIC, DataType::Float4, DataType::Date,
                   DataType::TIMESTAMP, DataType::TIME, DataType::Varchar { max_len: Some(2) }, DataType::Bool] {
            let _ = types::cast::cast(a.clone(), &ty, &to, true);
        }
    }

    #[test]
    fn datetime_text_never_panics(s in "[0-9:. +/a-zA-Z-]{0,30}") {
        for ty in [DataType::Date, DataType::TIMESTAMP, DataType::TIMESTAMPTZ, DataType::TIME, DataType::INTERVAL] {
            let _ = io::from_text(&s, &ty);
        }
    }
}

#[test]
fn group_key_semantics() {
    use std::collections::HashSet;
    use types::value::GroupKey;
    let mut s = HashSet::new();
    s.insert(GroupKey(vec![Value::Int4(5), Value::Null]));
    assert!(s.contains(&GroupKey(vec![Value::Int8(5), Value::Null])));
    assert!(!s.contains(&GroupKey(vec![Value::Int8(5), Value::Int4(0)])));
    s.insert(GroupKey(vec![num(150, 2), Value::Float8(f64::NAN)]));
    assert!(s.contains(&GroupKey(vec![num(15, 1), Value::Float8(f64::NAN)])));
}
