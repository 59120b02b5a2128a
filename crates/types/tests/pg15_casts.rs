//! Explicit casts compared against PostgreSQL 15 results (see pg15/cast_cases.rs).

#[path = "pg15/cast_cases.rs"]
mod cast_cases;

use types::{cast, io, DataType};

fn parse_type(s: &str) -> DataType {
    if let Some(e) = s.strip_suffix("[]") {
        return DataType::Array(Box::new(parse_type(e)));
    }
    let (name, mods) = match s.find('(') {
        Some(i) => {
            let inner = &s[i + 1..s.len() - 1];
            (
                &s[..i],
                inner
                    .split(',')
                    .map(|m| m.trim().parse().unwrap())
                    .collect::<Vec<i32>>(),
            )
        }
        None => (s, vec![]),
    };
    DataType::from_sql_name(name, &mods).unwrap()
}

/// Cases PG 15 accepts that Meridian deliberately does not: catalog lookups (regclass
/// output prints a name).
const KNOWN_DIFFERENCES: &[(&str, &str, &str)] = &[("int4", "1259", "regclass")];

#[test]
fn casts_match_pg15() {
    let mut failures = Vec::new();
    for (from, v, to, expected) in cast_cases::CASTS {
        if KNOWN_DIFFERENCES.contains(&(*from, *v, *to)) {
            continue;
        }
        let (ft, tt) = (parse_type(from), parse_type(to));
        let val = io::from_text(v, &ft).unwrap();
        let got = cast::cast(val, &ft, &tt, true)
            .map(|r| io::to_text_string(&r, &tt).unwrap())
            .map_err(|e| e.message);
        let exp = expected.map(str::to_string).map_err(str::to_string);
        if got != exp {
            failures.push(format!(
                "('{v}'::{from})::{to}: got {got:?}, PG 15 gives {exp:?}"
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
