//! Text I/O compared against a table of PostgreSQL 15 results (see pg15/text_io_cases.rs).

#[path = "pg15/text_io_cases.rs"]
mod pg15_cases;
#[path = "pg15/random2_text_io_cases.rs"]
mod random2_cases;
#[path = "pg15/random_text_io_cases.rs"]
mod random_cases;

use types::{io, DataType};

fn parse_type(s: &str) -> DataType {
    let (name, mods) = match s.find('(') {
        Some(i) if !s.ends_with("[]") => {
            let inner = &s[i + 1..s.len() - 1];
            (
                &s[..i],
                inner
                    .split(',')
                    .map(|m| m.trim().parse().unwrap())
                    .collect::<Vec<i32>>(),
            )
        }
        _ => (s, vec![]),
    };
    DataType::from_sql_name(name, &mods).unwrap()
}

/// PG quirk not emulated: a zone glued to "BC" with a minus sign ("12:59:07 BC-05:30") is read
/// by PG as a POSIX zone named "BC" (AD date, sign inverted).
fn known_difference(ty: &str, input: &str) -> bool {
    ty == "timestamptz" && input.contains(" BC-")
}

#[test]
fn text_io_matches_pg15() {
    let mut failures = Vec::new();
    for (ty, input, expected) in pg15_cases::CASES
        .iter()
        .chain(random_cases::CASES)
        .chain(random2_cases::CASES)
    {
        if known_difference(ty, input) {
            continue;
        }
        let t = parse_type(ty);
        let got = io::from_text(input, &t).map(|v| io::to_text_string(&v, &t).unwrap());
        let ok = match (&got, expected) {
            (Ok(g), Ok(e)) => g == e,
            (Err(g), Err(e)) => &g.message == e,
            _ => false,
        };
        if !ok {
            failures.push(format!(
                "{ty} {input:?}: got {:?}, PG 15 gives {expected:?}",
                got.map_err(|e| e.message)
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
