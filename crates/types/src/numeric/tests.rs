//! Unit tests; expected texts were checked against PostgreSQL 15.

use super::*;

fn n(s: &str) -> Numeric {
    parse(s).expect("syntax").expect("range")
}

fn t(r: PgResult<Numeric>) -> String {
    r.expect("ok").to_string()
}

#[test]
fn parse_forms() {
    assert_eq!(n("  1.50  ").to_string(), "1.50");
    assert_eq!(n("1e5").to_string(), "100000");
    assert_eq!(n("1.5e1").to_string(), "15");
    assert_eq!(n("-1.5e-3").to_string(), "-0.0015");
    assert_eq!(n(".5").to_string(), "0.5");
    assert_eq!(n("5.").to_string(), "5");
    assert_eq!(n("-0.00").to_string(), "0.00");
    assert_eq!(n(" -inf ").to_string(), "-Infinity");
    assert_eq!(n("nan").to_string(), "NaN");
    assert_eq!(n("+Infinity").to_string(), "Infinity");
    assert_eq!(
        n("12345678901234567890123456789.5").to_string(),
        "12345678901234567890123456789.5"
    );
    assert_eq!(n("1e100").to_string(), format!("1{}", "0".repeat(100)));
    assert!(parse("1.2.3").is_none());
    assert!(parse("abc").is_none());
    assert!(parse("").is_none());
    assert!(parse("1e").is_none());
    assert!(parse("infinit").is_none());
    assert_eq!(parse("1e131072").unwrap().unwrap_err().code, "22003");
    assert_eq!(parse("1e-16384").unwrap().unwrap_err().code, "22003");
    assert!(parse("1e131071").unwrap().is_ok());
    assert!(parse("1e-16383").unwrap().is_ok());
}

#[test]
fn ordering_and_equality() {
    let vals = [
        "-Infinity",
        "-1e30",
        "-1.5",
        "0",
        "0.0001",
        "1.5",
        "1e30",
        "Infinity",
        "NaN",
    ];
    for (i, a) in vals.iter().enumerate() {
        for (j, b) in vals.iter().enumerate() {
            assert_eq!(n(a).cmp(&n(b)), i.cmp(&j), "{a} vs {b}");
        }
    }
    assert_eq!(n("1.5"), n("1.50"));
    assert_eq!(n("NaN"), n("nan"));
}

#[test]
fn arithmetic_matches_pg() {
    assert_eq!(
        t(mul(&n("1e30"), &n("1e30"))),
        format!("1{}", "0".repeat(60))
    );
    assert_eq!(t(add(&n("Infinity"), &n("-Infinity"))), "NaN");
    assert_eq!(t(mul(&n("Infinity"), &n("0"))), "NaN");
    assert_eq!(t(div(&n("10"), &n("3"))), "3.3333333333333333");
    assert_eq!(t(div(&n("10"), &n("2"))), "5.0000000000000000");
    assert_eq!(t(div(&n("1"), &n("3"))), "0.33333333333333333333");
    assert_eq!(t(div(&n("1"), &n("Infinity"))), "0");
    assert_eq!(div(&n("1"), &n("0")).unwrap_err().code, "22012");
    assert_eq!(div(&n("Infinity"), &n("0")).unwrap_err().code, "22012");
    assert_eq!(t(rem(&n("-7.5"), &n("2"))), "-1.5");
    assert_eq!(t(rem(&n("5"), &n("-Infinity"))), "5");
    assert_eq!(t(div_trunc(&n("7.5"), &n("2"))), "3");
    assert_eq!(t(n("1234.5678").round(-2)), "1200");
    assert_eq!(t(n("1.5").round(5)), "1.50000");
    assert_eq!(t(n("-1.57").trunc(1)), "-1.5");
    assert_eq!(t(n("-1.5").ceil()), "-1");
    assert_eq!(t(n("-1.5").floor()), "-2");
    assert_eq!(n("-2.5").sign().to_string(), "-1");
}

#[test]
fn functions_match_pg() {
    assert_eq!(t(pow(&n("2"), &n("3"))), "8.0000000000000000");
    assert_eq!(
        t(pow(&n("10"), &n("20"))),
        "100000000000000000000.0000000000000000"
    );
    assert_eq!(t(pow(&n("0.5"), &n("-3"))), "8.0000000000000000");
    assert_eq!(t(pow(&n("2.0"), &n("0.5"))), "1.4142135623730950");
    assert_eq!(t(pow(&n("1.000001"), &n("1000000"))), "2.7182804693193769");
    assert_eq!(t(sqrt(&n("2"))), "1.414213562373095");
    assert_eq!(t(sqrt(&n("12345.678"))), "111.1111065555555");
    assert_eq!(t(sqrt(&n("1e-10"))), "0.000010000000000000000");
    assert_eq!(t(ln(&n("2"))), "0.6931471805599453");
    assert_eq!(t(exp(&n("1"))), "2.7182818284590452");
    assert_eq!(t(log(&n("2.0"), &n("64.0"))), "6.0000000000000000");
    assert_eq!(t(log(&n("10"), &n("100"))), "2.0000000000000000");
    assert_eq!(
        t(ln(&n("1e-100"))),
        "-230.2585092994045684017991454684364207601101488628772976033327900967572609677352480235997205089598298342"
    );
    assert_eq!(exp(&n("6000")).unwrap_err().code, "22003");
    assert_eq!(ln(&n("0")).unwrap_err().code, "2201E");
    assert_eq!(sqrt(&n("-1")).unwrap_err().code, "2201F");
    assert_eq!(pow(&n("0"), &n("-1")).unwrap_err().code, "2201F");
    for (b, e, want) in [
        ("1", "Infinity", "1"),
        ("-1", "-Infinity", "1"),
        ("0.5", "-Infinity", "Infinity"),
        ("-Infinity", "3", "-Infinity"),
        ("-Infinity", "-3", "0"),
        ("NaN", "0.0", "1"),
        ("0", "0.0e-18", "1.0000000000000000"),
    ] {
        assert_eq!(t(pow(&n(b), &n(e))), want, "{b} ^ {e}");
    }
}

#[test]
fn typmod() {
    assert_eq!(t(apply_typmod(&n("123.456"), 5, 2)), "123.46");
    let e = apply_typmod(&n("1234.5"), 5, 2).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("22003", "numeric field overflow")
    );
    assert_eq!(
        e.detail.as_deref(),
        Some("A field with precision 5, scale 2 must round to an absolute value less than 10^3.")
    );
    assert_eq!(t(apply_typmod(&n("0.001"), 2, 3)), "0.001");
    let e = apply_typmod(&n("0.1"), 2, 3).unwrap_err();
    assert_eq!(
        e.detail.as_deref(),
        Some("A field with precision 2, scale 3 must round to an absolute value less than 10^-1.")
    );
    let e = apply_typmod(&n("1"), 2, 2).unwrap_err();
    assert_eq!(
        e.detail.as_deref(),
        Some("A field with precision 2, scale 2 must round to an absolute value less than 1.")
    );
    assert_eq!(t(apply_typmod(&n("12345"), 3, -2)), "12300");
    let e = apply_typmod(&n("Infinity"), 5, 2).unwrap_err();
    assert_eq!(
        e.detail.as_deref(),
        Some("A field with precision 5, scale 2 cannot hold an infinite value.")
    );
    assert_eq!(t(apply_typmod(&n("NaN"), 5, 2)), "NaN");
}

#[test]
fn binary_roundtrip() {
    for s in [
        "0",
        "0.00",
        "1",
        "-1",
        "10000",
        "12345.6789",
        "0.0001",
        "0.00001",
        "-0.00012",
        "NaN",
        "Infinity",
        "-Infinity",
    ] {
        let mut out = Vec::new();
        to_binary(&n(s), &mut out);
        assert_eq!(from_binary(&out).unwrap().to_string(), s, "{s}");
    }
    let big = format!("{}.{}", "9".repeat(200), "1".repeat(50));
    let mut out = Vec::new();
    to_binary(&n(&big), &mut out);
    assert_eq!(from_binary(&out).unwrap().to_string(), big);
    // 12345.6789 = [1, 2345, 6789], weight 1, dscale 4
    let mut out = Vec::new();
    to_binary(&n("12345.6789"), &mut out);
    assert_eq!(
        out,
        vec![0, 3, 0, 1, 0, 0, 0, 4, 0, 1, 0x09, 0x29, 0x1a, 0x85]
    );
    let mut out = Vec::new();
    to_binary(&n("-Infinity"), &mut out);
    assert_eq!(out, vec![0, 0, 0, 0, 0xF0, 0, 0, 0]);
    // digits hidden by dscale are truncated: [1, 5000] weight 0 dscale 0 → 1
    assert_eq!(
        from_binary(&[0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0x13, 0x88])
            .unwrap()
            .to_string(),
        "1"
    );
}

#[test]
fn float_conversion() {
    assert_eq!(from_f64(0.1, 15).unwrap().to_string(), "0.1");
    assert_eq!(
        from_f64(1e20, 15).unwrap().to_string(),
        "100000000000000000000"
    );
    assert_eq!(from_f64(1.5e-7, 15).unwrap().to_string(), "0.00000015");
    assert_eq!(
        from_f64(123456789012345678.0, 15).unwrap().to_string(),
        "123456789012346000"
    );
    assert_eq!(from_f64(f64::NAN, 15).unwrap().to_string(), "NaN");
    assert_eq!(to_float(&n("1e400"), false).unwrap_err().code, "22003");
    assert_eq!(to_float(&n("1e-400"), false).unwrap_err().code, "22003");
    assert_eq!(to_float(&n("-Infinity"), false).unwrap(), f64::NEG_INFINITY);
}

#[test]
fn int_conversion() {
    assert_eq!(
        to_int(&n("2.5"), "integer", i32::MIN as i64, i32::MAX as i64).unwrap(),
        3
    );
    assert_eq!(
        to_int(&n("-2.5"), "integer", i32::MIN as i64, i32::MAX as i64).unwrap(),
        -3
    );
    let e = to_int(
        &n("2147483648"),
        "integer",
        i32::MIN as i64,
        i32::MAX as i64,
    )
    .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("22003", "integer out of range")
    );
    let e = to_int(&n("NaN"), "bigint", i64::MIN, i64::MAX).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("0A000", "cannot convert NaN to bigint")
    );
    let e = to_int(&n("-inf"), "smallint", -32768, 32767).unwrap_err();
    assert_eq!(e.message, "cannot convert infinity to smallint");
}

#[test]
fn values_stay_small() {
    // Value is moved around on every row; numeric must not grow it
    assert!(std::mem::size_of::<Numeric>() <= 16);
    assert!(std::mem::size_of::<crate::Value>() <= 32);
}
