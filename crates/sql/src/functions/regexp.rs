//! PostgreSQL's regular-expression functions (issue 31): regexp_replace, regexp_match,
//! regexp_matches, regexp_split_to_array/_to_table, regexp_count, regexp_instr,
//! regexp_substr and regexp_like, with PostgreSQL's flags and its ARE syntax put into the
//! `regex` crate's (`types::are`, which the `~` operators share).
//!
//! Matching follows PostgreSQL's `setup_regexp_matches`: a search starts where the last
//! match ended (one character further after an empty match), so an empty match right
//! after a non-empty one counts; splitting ignores empty matches at either end of the
//! string and right after a match. Positions count characters.

use super::ScalarFunc as F;
use pgerror::{codes, PgError, PgResult};
use types::are::{parse_flags, with_are, Flags};
use types::{DataType, Value};

/// Names the binder's select-list rewrite calls (`binder/select_srf.rs`); not names a
/// query would use.
pub const MATCHES: &str = "meridian regexp_matches";
pub const SPLIT_TO_TABLE: &str = "meridian regexp_split_to_table";

/// Resolve one of this module's functions: (function, argument types, result type).
pub fn resolve(name: &str, args: &[DataType]) -> Option<(F, Vec<DataType>, DataType)> {
    use DataType::*;
    let n = args.len();
    let text_array = || Array(Box::new(Text));
    let integer = |i: usize| matches!(args.get(i), Some(Int2 | Int4 | Int8));
    Some(match (name, n) {
        ("regexp_replace", 3) => (F::RegexpReplace, vec![Text; 3], Text),
        // regexp_replace(s, p, r, start [, n [, flags]]) (PostgreSQL 15) beside
        // regexp_replace(s, p, r, flags)
        ("regexp_replace", 4) if integer(3) => {
            (F::RegexpReplace, vec![Text, Text, Text, Int4], Text)
        }
        ("regexp_replace", 4) => (F::RegexpReplace, vec![Text; 4], Text),
        ("regexp_replace", 5) => (F::RegexpReplace, vec![Text, Text, Text, Int4, Int4], Text),
        ("regexp_replace", 6) => (
            F::RegexpReplace,
            vec![Text, Text, Text, Int4, Int4, Text],
            Text,
        ),
        ("regexp_match", 2 | 3) => (F::RegexpMatch, vec![Text; n], text_array()),
        // a list of text[] values, which `Rel::Unnest` hands out whole
        (MATCHES, 2 | 3) => (
            F::RegexpMatches,
            vec![Text; n],
            Array(Box::new(text_array())),
        ),
        ("regexp_split_to_array", 2 | 3) => (F::RegexpSplitToArray, vec![Text; n], text_array()),
        (SPLIT_TO_TABLE, 2 | 3) => (F::RegexpSplitToTable, vec![Text; n], text_array()),
        ("regexp_like", 2 | 3) => (F::RegexpLike, vec![Text; n], Bool),
        ("regexp_count", 2) => (F::RegexpCount, vec![Text; 2], Int4),
        ("regexp_count", 3) => (F::RegexpCount, vec![Text, Text, Int4], Int4),
        ("regexp_count", 4) => (F::RegexpCount, vec![Text, Text, Int4, Text], Int4),
        // regexp_instr(s, p [, start [, n [, endoption [, flags [, subexpr]]]]])
        ("regexp_instr", 2..=7) => {
            let kinds = [Text, Text, Int4, Int4, Int4, Text, Int4];
            (F::RegexpInstr, kinds[..n].to_vec(), Int4)
        }
        // regexp_substr(s, p [, start [, n [, flags [, subexpr]]]])
        ("regexp_substr", 2..=6) => {
            let kinds = [Text, Text, Int4, Int4, Text, Int4];
            (F::RegexpSubstr, kinds[..n].to_vec(), Text)
        }
        _ => return None,
    })
}

/// The flags of a function that finds every match itself: `g` is 22023, as in
/// PostgreSQL; the search is global anyway.
fn flags_without_g(flags: &str, function: &str, hint: Option<&str>) -> PgResult<Flags> {
    let mut f = parse_flags(flags)?;
    if f.global {
        let e = PgError::new(
            codes::INVALID_PARAMETER_VALUE,
            format!("{function}() does not support the \"global\" option"),
        );
        return Err(match hint {
            Some(h) => e.with_hint(h),
            None => e,
        });
    }
    f.global = true;
    Ok(f)
}

/// One match: byte ranges of the whole match, then of each group (None: unmatched).
type Locations = Vec<Option<(usize, usize)>>;

/// The matches of `re` in `s` from byte `start`, as PostgreSQL's setup_regexp_matches
/// finds them (every one when `global`; `ignore_degenerate` for splitting).
fn find(
    re: &regex::Regex,
    s: &str,
    start: usize,
    global: bool,
    ignore_degenerate: bool,
) -> Vec<Locations> {
    let mut out = Vec::new();
    let mut at = start;
    let mut prev_end = 0;
    while at <= s.len() {
        let Some(caps) = re.captures_at(s, at) else {
            break;
        };
        let whole = caps.get(0).map_or((at, at), |m| (m.start(), m.end()));
        if !ignore_degenerate || (whole.0 < s.len() && whole.1 > prev_end) {
            out.push(
                caps.iter()
                    .map(|m| m.map(|m| (m.start(), m.end())))
                    .collect(),
            );
        }
        prev_end = whole.1;
        if !global {
            break;
        }
        at = whole.1;
        if whole.0 == whole.1 {
            at += s[at..].chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// The matches of `pattern` in `s` from character `start` (1-based).
fn matches_from(
    s: &str,
    pattern: &str,
    flags: &Flags,
    start: usize,
    ignore_degenerate: bool,
) -> PgResult<Vec<Locations>> {
    let byte = match s.char_indices().nth(start - 1) {
        Some((b, _)) => b,
        None if start - 1 == s.chars().count() => s.len(),
        None => return Ok(Vec::new()),
    };
    with_are(pattern, flags, |re| {
        find(re, s, byte, flags.global, ignore_degenerate)
    })
}

/// regexp_match's and regexp_matches' row: the groups (NULL where one did not take
/// part), or the whole match when there are none.
fn match_array(s: &str, m: &Locations) -> Value {
    let text = |l: &Option<(usize, usize)>| match l {
        Some((a, b)) => Value::Text(s[*a..*b].to_string()),
        None => Value::Null,
    };
    Value::Array(if m.len() > 1 {
        m[1..].iter().map(text).collect()
    } else {
        vec![text(&m[0])]
    })
}

/// The 1-based character position of byte `b` of `s`.
fn position(s: &str, b: usize) -> i32 {
    s[..b].chars().count() as i32 + 1
}

fn invalid(parameter: &str, value: i64) -> PgError {
    PgError::new(
        codes::INVALID_PARAMETER_VALUE,
        format!("invalid value for parameter \"{parameter}\": {value}"),
    )
}

/// A positive `start` or `n` argument (22023 otherwise), as a count.
fn positive(args: &[Value], i: usize, parameter: &str) -> PgResult<usize> {
    match args.get(i).and_then(Value::as_i64) {
        None => Ok(1),
        Some(v) if v > 0 => Ok(v as usize),
        Some(v) => Err(invalid(parameter, v)),
    }
}

/// Evaluate one of this module's functions (NULL arguments have been handled by the
/// caller: all are strict).
pub fn eval(func: F, args: &[Value]) -> PgResult<Value> {
    let text = |i: usize| args.get(i).and_then(Value::as_str).unwrap_or("");
    Ok(match func {
        F::RegexpReplace => regexp_replace(args)?,
        F::RegexpMatch => {
            let mut flags = flags_without_g(
                text(2),
                "regexp_match",
                Some("Use the regexp_matches function instead."),
            )?;
            flags.global = false;
            let found = matches_from(text(0), text(1), &flags, 1, false)?;
            found
                .first()
                .map_or(Value::Null, |m| match_array(text(0), m))
        }
        F::RegexpMatches => {
            let s = text(0);
            let flags = parse_flags(text(2))?;
            let found = matches_from(s, text(1), &flags, 1, false)?;
            Value::Array(found.iter().map(|m| match_array(s, m)).collect())
        }
        F::RegexpSplitToArray | F::RegexpSplitToTable => {
            let name = if func == F::RegexpSplitToArray {
                "regexp_split_to_array"
            } else {
                "regexp_split_to_table"
            };
            let flags = flags_without_g(text(2), name, None)?;
            let s = text(0);
            let found = matches_from(s, text(1), &flags, 1, true)?;
            let mut pieces = Vec::with_capacity(found.len() + 1);
            let mut from = 0;
            for m in &found {
                let (a, b) = m[0].unwrap_or((from, from));
                pieces.push(Value::Text(s[from..a].to_string()));
                from = b;
            }
            pieces.push(Value::Text(s[from..].to_string()));
            Value::Array(pieces)
        }
        F::RegexpLike => {
            let mut flags = flags_without_g(text(2), "regexp_like", None)?;
            flags.global = false;
            Value::Bool(!matches_from(text(0), text(1), &flags, 1, false)?.is_empty())
        }
        F::RegexpCount => {
            let start = positive(args, 2, "start")?;
            let flags = flags_without_g(text(3), "regexp_count", None)?;
            Value::Int4(matches_from(text(0), text(1), &flags, start, false)?.len() as i32)
        }
        F::RegexpInstr | F::RegexpSubstr => {
            let instr = func == F::RegexpInstr;
            let start = positive(args, 2, "start")?;
            let n = positive(args, 3, "n")?;
            let (end_option, flags_at, subexpr_at) = if instr {
                (args.get(4).and_then(Value::as_i64).unwrap_or(0), 5, 6)
            } else {
                (0, 4, 5)
            };
            if !(0..=1).contains(&end_option) {
                return Err(invalid("endoption", end_option));
            }
            let subexpr = args.get(subexpr_at).and_then(Value::as_i64).unwrap_or(0);
            if subexpr < 0 {
                return Err(invalid("subexpr", subexpr));
            }
            let name = if instr {
                "regexp_instr"
            } else {
                "regexp_substr"
            };
            let flags = flags_without_g(text(flags_at), name, None)?;
            let s = text(0);
            let found = matches_from(s, text(1), &flags, start, false)?;
            let none = if instr { Value::Int4(0) } else { Value::Null };
            let Some(m) = found.get(n - 1) else {
                return Ok(none);
            };
            // without groups, subexpression 1 is the whole match (PostgreSQL's
            // npatterns is 1 then)
            let groups = m.len().saturating_sub(1).max(1);
            if subexpr as usize > groups {
                return Ok(none);
            }
            let at = if subexpr > 0 && m.len() > 1 {
                subexpr as usize
            } else {
                0
            };
            match (m[at], instr) {
                (None, _) => none,
                (Some((a, b)), true) => {
                    Value::Int4(position(s, if end_option == 1 { b } else { a }))
                }
                (Some((a, b)), false) => Value::Text(s[a..b].to_string()),
            }
        }
        other => {
            return Err(PgError::internal(format!(
                "{other:?} is not a regular-expression function"
            )))
        }
    })
}

/// regexp_replace(s, p, r [, flags]) and PostgreSQL 15's regexp_replace(s, p, r, start
/// [, n [, flags]]): `g` (or n = 0) replaces every match from `start`, else the first
/// (the n-th); in the replacement `\1`…`\9` is a group, `\&` the match, `\\` a backslash.
fn regexp_replace(args: &[Value]) -> PgResult<Value> {
    let text = |i: usize| args.get(i).and_then(Value::as_str).unwrap_or("");
    let (s, replacement) = (text(0), text(2));
    let with_start = matches!(args.get(3), Some(Value::Int4(_)));
    let (start, n, mut flags) = if with_start {
        let start = positive(args, 3, "start")?;
        // without n, `g` cannot be given: the first match from start
        let n = match args.get(4).and_then(Value::as_i64) {
            Some(v) if v < 0 => return Err(invalid("n", v)),
            Some(v) => v as usize,
            None => 1,
        };
        (start, n, parse_flags(text(5))?)
    } else {
        let flags = parse_flags(text(3))?;
        (1, usize::from(!flags.global), flags)
    };
    // n = 0 replaces every match
    flags.global = flags.global || n != 1;
    let found = matches_from(s, text(1), &flags, start, false)?;
    let chosen: Vec<&Locations> = match n {
        0 => found.iter().collect(),
        n => found.get(n - 1).into_iter().collect(),
    };
    let mut out = String::with_capacity(s.len());
    let mut from = 0;
    for m in chosen {
        let Some((a, b)) = m[0] else { continue };
        out.push_str(&s[from..a]);
        let mut chars = replacement.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek().copied()) {
                ('\\', Some(d @ '1'..='9')) => {
                    chars.next();
                    let group = d as usize - '0' as usize;
                    if let Some(Some((ga, gb))) = m.get(group) {
                        out.push_str(&s[*ga..*gb]);
                    }
                }
                ('\\', Some('&')) => {
                    chars.next();
                    out.push_str(&s[a..b]);
                }
                ('\\', Some('\\')) => {
                    chars.next();
                    out.push('\\');
                }
                (c, _) => out.push(c),
            }
        }
        from = b;
    }
    out.push_str(&s[from..]);
    Ok(Value::Text(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_array(v: Value) -> Vec<Option<String>> {
        match v {
            Value::Array(items) => items
                .into_iter()
                .map(|i| i.as_str().map(str::to_string))
                .collect(),
            other => panic!("not an array: {other:?}"),
        }
    }

    fn t(s: &str) -> Value {
        Value::Text(s.to_string())
    }

    #[test]
    fn flags_as_postgresql_reads_them() {
        assert!(parse_flags("gicnmpswtxq").is_ok());
        let err = parse_flags("iz").unwrap_err();
        assert_eq!(err.code, codes::INVALID_PARAMETER_VALUE);
        let err = eval(F::RegexpMatch, &[t("a"), t("a"), t("g")]).unwrap_err();
        assert_eq!(err.code, codes::INVALID_PARAMETER_VALUE);
    }

    #[test]
    fn empty_matches_follow_postgresql() {
        // an empty match right after a non-empty one counts: "", b, "", ""
        let found = eval(F::RegexpMatches, &[t("abc"), t("b*"), t("g")]).unwrap();
        assert!(matches!(found, Value::Array(m) if m.len() == 4));
        // splitting ignores them at the ends and after a match
        let pieces = eval(F::RegexpSplitToArray, &[t("a1b22c"), t(r"\d*")]).unwrap();
        let want: Vec<Option<String>> = ["a", "b", "c"]
            .iter()
            .map(|s| Some(s.to_string()))
            .collect();
        assert_eq!(text_array(pieces), want);
    }

    #[test]
    fn groups_that_did_not_take_part_are_null() {
        let m = eval(F::RegexpMatch, &[t("abc"), t("(z)?(b)")]).unwrap();
        assert_eq!(text_array(m), vec![None, Some("b".to_string())]);
    }
}
