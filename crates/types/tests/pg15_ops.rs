//! Operator resolution/evaluation and format_type compared against PostgreSQL 15 results
//! (see pg15/ops_cases.rs).

#[allow(clippy::type_complexity)]
#[path = "pg15/ops_cases.rs"]
mod pg15_ops_cases;
#[allow(clippy::type_complexity)]
#[path = "pg15/random2_ops_cases.rs"]
mod random2_ops_cases;
#[allow(clippy::type_complexity)]
#[path = "pg15/random_ops_cases.rs"]
mod random_ops_cases;

use types::ops::{eval_binary_typed, resolve_binary, BinaryOp};
use types::{cast, io, DataType};

fn op_of(s: &str) -> BinaryOp {
    use BinaryOp::*;
    match s {
        "+" => Add,
        "-" => Sub,
        "*" => Mul,
        "/" => Div,
        "%" => Mod,
        "^" => Pow,
        "=" => Eq,
        "<>" => NotEq,
        "<" => Lt,
        "<=" => LtEq,
        ">" => Gt,
        ">=" => GtEq,
        "||" => Concat,
        "~~" => Like,
        "!~~" => NotLike,
        "~~*" => ILike,
        "!~~*" => NotILike,
        "~" => RegexMatch,
        "!~" => RegexNotMatch,
        "~*" => RegexIMatch,
        "!~*" => RegexNotIMatch,
        _ => panic!("{s}"),
    }
}

fn run(lt: &str, lv: &str, op: &str, rt: &str, rv: &str) -> Result<(String, String), String> {
    let lt = DataType::from_sql_name(lt, &[]).unwrap();
    let rt = DataType::from_sql_name(rt, &[]).unwrap();
    let l = io::from_text(lv, &lt).unwrap();
    let r = io::from_text(rv, &rt).unwrap();
    let (cl, cr, res) = resolve_binary(op_of(op), &lt, &rt).map_err(|e| e.message)?;
    let l = cast::cast(l, &lt, &cl, false).map_err(|e| e.message)?;
    let r = cast::cast(r, &rt, &cr, false).map_err(|e| e.message)?;
    let v = eval_binary_typed(op_of(op), &l, &r, &cl).map_err(|e| e.message)?;
    let text = cast::cast(v, &res, &DataType::Text, true).map_err(|e| e.message)?;
    Ok((text.as_str().unwrap().to_string(), res.format_type_be()))
}

#[test]
fn operators_match_pg15() {
    let mut failures = Vec::new();
    for (lt, lv, op, rt, rv, expected) in pg15_ops_cases::OPS
        .iter()
        .chain(random_ops_cases::OPS)
        .chain(random2_ops_cases::OPS)
    {
        let got = run(lt, lv, op, rt, rv);
        let exp = expected
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .map_err(|e| e.to_string());
        if got != exp {
            failures.push(format!(
                "'{lv}'::{lt} {op} '{rv}'::{rt}: got {got:?}, PG 15 gives {exp:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn format_type_matches_pg15() {
    for (typname, typmod, formatted, oid) in pg15_ops_cases::FORMAT_TYPE {
        let t = DataType::from_oid(*oid)
            .unwrap_or_else(|| panic!("oid {oid}"))
            .with_typmod(*typmod);
        assert_eq!(&t.format_type(), formatted, "{typname}");
        assert_eq!(t.oid(), *oid);
        assert_eq!(t.typmod(), *typmod, "{typname}");
        if !typname.starts_with('"') {
            assert_eq!(t.type_name(), *typname);
        }
    }
}
