//! Binary send formats compared with PostgreSQL 15's *send functions
//! (`select numeric_send(...), array_send(...), ...` on a PG 15 server).

use types::{io, DataType, Value};

fn hex(b: &[u8]) -> String {
    b.iter().map(|c| format!("{c:02x}")).collect()
}

fn send(text: &str, ty: &DataType) -> String {
    let v = io::from_text(text, ty).unwrap();
    let mut out = Vec::new();
    io::to_binary(&v, ty, &mut out);
    // and back
    assert_eq!(io::from_binary(&out, ty).unwrap(), v, "{text}");
    hex(&out)
}

#[test]
fn send_matches_pg15() {
    let n = DataType::NUMERIC;
    assert_eq!(send("12345.6789", &n), "0003000100000004000109291a85");
    assert_eq!(send("-0.00012", &n), "0002ffff40000005000107d0");
    assert_eq!(send("0.00", &n), "0000000000000002");
    assert_eq!(send("100000", &n), "0001000100000000000a");
    assert_eq!(send("1e-10", &n), "0001fffd0000000a0064");
    let ia = DataType::Array(Box::new(DataType::Int4));
    assert_eq!(
        send("{1,NULL}", &ia),
        "00000001000000010000001700000002000000010000000400000001ffffffff"
    );
    assert_eq!(send("{}", &ia), "000000000000000000000017");
    assert_eq!(
        send("1 mon 2 days 00:00:03", &DataType::INTERVAL),
        "00000000002dc6c00000000200000001"
    );
    assert_eq!(send("2000-01-02", &DataType::Date), "00000001");
    assert_eq!(
        send("2000-01-01 00:00:01", &DataType::TIMESTAMP),
        "00000000000f4240"
    );
    assert_eq!(send("1.5", &DataType::Float8), "3ff8000000000000");
    assert_eq!(send("true", &DataType::Bool), "01");
}

#[test]
fn wrong_lengths_are_22p03() {
    for (bytes, ty) in [
        (&[0u8; 3][..], DataType::Int4),
        (&[0u8; 7][..], DataType::Int8),
        (&[0u8; 2][..], DataType::Bool),
        (&[0u8; 5][..], DataType::Date),
        (&[0u8; 15][..], DataType::INTERVAL),
        (&[0u8; 3][..], DataType::NUMERIC),
        (
            &[0, 0, 0, 1, 0, 0, 0, 0][..],
            DataType::Array(Box::new(DataType::Int4)),
        ),
    ] {
        let e = io::from_binary(bytes, &ty).unwrap_err();
        assert_eq!(e.code, "22P03", "{ty:?}");
    }
    let e = io::from_binary(&[0xff, 0xfe], &DataType::Text).unwrap_err();
    assert_eq!(e.code, "22021");
    assert_eq!(
        io::from_binary(b"abcd", &DataType::Varchar { max_len: Some(3) })
            .unwrap_err()
            .code,
        "22001"
    );
    assert_eq!(
        io::from_binary(b"ab", &DataType::Bpchar { len: Some(3) }).unwrap(),
        Value::Text("ab ".into())
    );
}
