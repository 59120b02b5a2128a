//! Auto-parameterization of simple-query statements: `… WHERE aid = 12345` becomes the
//! key `… WHERE aid = $1` plus the literal `12345` (int4), so that statements differing
//! only in their numeric literals can share one bound plan, executed with the literals
//! as parameters exactly like a prepared statement.
//!
//! The lexer follows the structure of [`crate::parse::split_statements`] (quotes,
//! comments) and is deliberately conservative: whatever it is unsure about stays literal
//! in the key, and a statement it cannot handle (dollar quoting, existing `$n`
//! parameters, an unterminated quote or comment) is not parameterized at all.
//! [`parse_normalized`] double-checks every key against sqlparser's own tokenizer before
//! the key is first used, so a disagreement between the two lexers can only make a
//! statement uncacheable, never change its meaning.

use crate::parse::{block_comment_end, parse, Parsed, ParsedStatement};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};
use std::fmt::Write;
use types::DataType;

/// The type a numeric literal has on its own (the binder's rule for number literals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LiteralKind {
    Int4,
    Int8,
    Numeric,
}

impl LiteralKind {
    /// Same rule as `Binder::number`: fits i32 → int4, fits i64 → int8, else numeric.
    pub fn of(text: &str) -> LiteralKind {
        match text.parse::<i64>() {
            Ok(i) if i32::try_from(i).is_ok() => LiteralKind::Int4,
            Ok(_) => LiteralKind::Int8,
            Err(_) => LiteralKind::Numeric,
        }
    }

    pub fn type_oid(self) -> u32 {
        match self {
            LiteralKind::Int4 => types::datatype::oid::INT4,
            LiteralKind::Int8 => types::datatype::oid::INT8,
            LiteralKind::Numeric => types::datatype::oid::NUMERIC,
        }
    }

    pub fn data_type(self) -> DataType {
        match self {
            LiteralKind::Int4 => DataType::Int4,
            LiteralKind::Int8 => DataType::Int8,
            LiteralKind::Numeric => DataType::Numeric {
                precision_scale: None,
            },
        }
    }

    /// One character per kind, for building cache keys.
    pub fn code(self) -> char {
        match self {
            LiteralKind::Int4 => 'i',
            LiteralKind::Int8 => 'l',
            LiteralKind::Numeric => 'n',
        }
    }
}

/// A statement with its numeric literals taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    /// The statement text with the i-th parameterized literal replaced by `$i`.
    pub key: String,
    /// The literals taken out, in order: their text (unsigned) and kind.
    pub literals: Vec<(String, LiteralKind)>,
}

/// Longer statements are not parameterized: OLTP statements are short, and a cache of
/// long ones (bulk INSERT … VALUES scripts, each one different) would cost memory and
/// work for nothing.
pub const MAX_STATEMENT_LEN: usize = 4096;

/// Bytes that continue an identifier (PostgreSQL: letters, digits, `_`, `$`, and any
/// non-ASCII character).
/// Where the whitespace or comment at `i` ends (`i` itself if there is none there); None
/// for a block comment that is never closed.
pub(crate) fn blank_end(bytes: &[u8], i: usize) -> Option<usize> {
    match bytes.get(i)? {
        b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => Some(i + 1),
        b'-' if bytes.get(i + 1) == Some(&b'-') => Some(
            bytes[i..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |n| i + n),
        ),
        b'/' if bytes.get(i + 1) == Some(&b'*') => block_comment_end(bytes, i),
        _ => Some(i),
    }
}

pub(crate) fn ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Numbers whose negation PostgreSQL (and the binder) folds into a narrower type than the
/// unsigned number has: `-2147483648` is int4 and `-9223372036854775808` is int8.
fn is_min_magnitude(literal: &str) -> bool {
    matches!(
        literal.parse::<u64>(),
        Ok(2147483648) | Ok(9223372036854775808)
    )
}

/// Lex one statement (as returned by `split_statements`) and take out its numeric
/// literals. None when the statement is not worth or not safe to parameterize: it does
/// not start with SELECT/INSERT/UPDATE/DELETE/WITH, has `$` outside string literals and
/// comments, has an unterminated quote or comment, has no parameterizable literal, or is
/// longer than [`MAX_STATEMENT_LEN`].
///
/// Numbers after the statement's first `BY` stay literal (`ORDER BY 1`, `GROUP BY 2` are
/// column positions), as do numbers not at a token boundary or followed by an identifier
/// character or `.`, and `-2147483648` / `-9223372036854775808` (see `is_min_magnitude`).
pub fn normalize(text: &str) -> Option<Normalized> {
    if text.len() > MAX_STATEMENT_LEN {
        return None;
    }
    let bytes = text.as_bytes();
    let mut key = String::with_capacity(text.len() + 8);
    let mut literals: Vec<(String, LiteralKind)> = Vec::new();
    // Text up to `copied` is already in `key` (or was replaced by a parameter).
    let mut copied = 0;
    let mut first_word = true;
    let mut after_by = false;
    // The last byte of the previous token (comments and whitespace are not tokens).
    let mut prev: u8 = b' ';
    let mut i = 0;
    while i < bytes.len() {
        // An unterminated comment: not parameterized.
        let after = blank_end(bytes, i)?;
        if after > i {
            i = after;
            continue;
        }
        let c = bytes[i];
        if first_word {
            // The statement must start with one of the keywords we parameterize.
            let end = bytes[i..]
                .iter()
                .position(|&b| !ident_byte(b))
                .map_or(bytes.len(), |p| i + p);
            let word = &text[i..end];
            if !["select", "insert", "update", "delete", "with"]
                .iter()
                .any(|k| word.eq_ignore_ascii_case(k))
            {
                return None;
            }
            first_word = false;
        }
        match c {
            b'$' => return None,
            b'\'' => {
                // E'…' (a lone E/e word just before the quote) takes backslash escapes.
                let escapes = i >= 1
                    && matches!(bytes[i - 1], b'e' | b'E')
                    && (i < 2 || !ident_byte(bytes[i - 2]));
                i = skip_quoted(bytes, i, b'\'', escapes)?;
                prev = b'\'';
            }
            b'"' => {
                i = skip_quoted(bytes, i, b'"', false)?;
                prev = b'"';
            }
            b'0'..=b'9' if !ident_byte(prev_byte(bytes, i)) && prev_byte(bytes, i) != b'.' => {
                let end = number_end(bytes, i);
                let clean = !bytes.get(end).is_some_and(|&b| ident_byte(b) || b == b'.');
                let literal = &text[i..end];
                if clean && !after_by && !(prev == b'-' && is_min_magnitude(literal)) {
                    key.push_str(&text[copied..i]);
                    let _ = write!(key, "${}", literals.len() + 1);
                    copied = end;
                    literals.push((literal.to_string(), LiteralKind::of(literal)));
                }
                i = end;
                prev = b'0';
            }
            c if ident_byte(c) => {
                let end = bytes[i..]
                    .iter()
                    .position(|&b| !ident_byte(b))
                    .map_or(bytes.len(), |p| i + p);
                let word = &text[i..end];
                if word.contains('$') {
                    return None;
                }
                if word.eq_ignore_ascii_case("by") {
                    after_by = true;
                }
                i = end;
                prev = b'a';
            }
            c => {
                i += 1;
                prev = c;
            }
        }
    }
    if literals.is_empty() {
        return None;
    }
    key.push_str(&text[copied..]);
    Some(Normalized { key, literals })
}

/// The byte just before `i` (a space at the start).
fn prev_byte(bytes: &[u8], i: usize) -> u8 {
    if i == 0 {
        b' '
    } else {
        bytes[i - 1]
    }
}

/// End of a quoted string or identifier starting at `start` (the index just past the
/// closing quote); None when unterminated. A doubled quote is an escaped quote; with
/// `escapes`, so is a backslash-escaped one.
pub(crate) fn skip_quoted(bytes: &[u8], start: usize, quote: u8, escapes: bool) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        let b = bytes[i];
        if escapes && b == b'\\' {
            i += 2;
            continue;
        }
        if b == quote {
            if bytes.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

/// End of the number starting at `start`: digits, an optional fraction and an optional
/// exponent (only when digits follow the `e`, as in PostgreSQL's lexer).
pub(crate) fn number_end(bytes: &[u8], start: usize) -> usize {
    let digits = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut i = digits(start);
    // `1..5` is not a fraction; leave the dots alone (the number is then not clean).
    if bytes.get(i) == Some(&b'.') && bytes.get(i + 1) != Some(&b'.') {
        i = digits(i + 1);
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(bytes.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if bytes.get(j).is_some_and(u8::is_ascii_digit) {
            i = digits(j);
        }
    }
    i
}

/// The key of `norm` (normalized from `original`) as a parsed statement, checked against
/// sqlparser's tokenizer first: the two texts must tokenize alike except that `$i` stands
/// exactly where the i-th literal was. None when that check or the parse fails.
pub fn parse_normalized(original: &str, norm: &Normalized) -> Option<ParsedStatement> {
    let dialect = PostgreSqlDialect {};
    let a = Tokenizer::new(&dialect, original).tokenize().ok()?;
    let b = Tokenizer::new(&dialect, &norm.key).tokenize().ok()?;
    if a.len() != b.len() {
        return None;
    }
    let mut next = 0;
    for (x, y) in a.iter().zip(&b) {
        match y {
            Token::Placeholder(p) => {
                let (literal, _) = norm.literals.get(next)?;
                next += 1;
                if *p != format!("${next}") || *x != Token::Number(literal.clone(), false) {
                    return None;
                }
            }
            _ if x != y => return None,
            _ => {}
        }
    }
    if next != norm.literals.len() {
        return None;
    }
    let mut statements = parse(&norm.key).ok()?;
    match (statements.pop(), statements.is_empty()) {
        (
            Some(
                s @ ParsedStatement {
                    parsed: Parsed::Sql(_),
                    ..
                },
            ),
            true,
        ) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LiteralKind::*;

    fn norm(s: &str) -> Option<(String, Vec<(String, LiteralKind)>)> {
        normalize(s).map(|n| (n.key, n.literals))
    }

    fn lits(v: &[(&str, LiteralKind)]) -> Vec<(String, LiteralKind)> {
        v.iter().map(|(s, k)| (s.to_string(), *k)).collect()
    }

    #[test]
    fn pgbench_select() {
        let (key, l) = norm("SELECT abalance FROM pgbench_accounts WHERE aid = 12345").unwrap();
        assert_eq!(key, "SELECT abalance FROM pgbench_accounts WHERE aid = $1");
        assert_eq!(l, lits(&[("12345", Int4)]));
        assert_eq!(
            normalize("SELECT abalance FROM pgbench_accounts WHERE aid = 777")
                .unwrap()
                .key,
            key
        );
    }

    #[test]
    fn kinds_follow_the_binder() {
        let (key, l) = norm("select 2147483647, 2147483648, 9223372036854775807, 9223372036854775808, 1.5, 1e3, 2.5E-3, 007").unwrap();
        assert_eq!(key, "select $1, $2, $3, $4, $5, $6, $7, $8");
        assert_eq!(
            l,
            lits(&[
                ("2147483647", Int4),
                ("2147483648", Int8),
                ("9223372036854775807", Int8),
                ("9223372036854775808", Numeric),
                ("1.5", Numeric),
                ("1e3", Numeric),
                ("2.5E-3", Numeric),
                ("007", Int4),
            ])
        );
    }

    #[test]
    fn only_dml_and_queries() {
        assert!(normalize("SET extra_float_digits = 3").is_none());
        assert!(normalize("VACUUM t").is_none());
        assert!(normalize("create table t (a varchar(10))").is_none());
        assert!(normalize("(select 1)").is_none());
        assert!(normalize("  /* c */ -- x\n  Select 1").is_some());
        assert!(normalize("with x as (select 1) select * from x").is_some());
        assert!(normalize("insert into t values (1)").is_some());
        assert!(normalize("UPDATE t set a = 1").is_some());
        assert!(normalize("delete from t where a = 1").is_some());
        assert!(normalize("selectx 1").is_none());
    }

    #[test]
    fn nothing_to_take_out() {
        assert!(normalize("select * from t").is_none());
        let long = format!("select 1{}", " ".repeat(MAX_STATEMENT_LEN));
        assert!(normalize(&long).is_none());
        assert!(normalize(&long[..MAX_STATEMENT_LEN]).is_some());
        assert!(normalize("select * from t1 where col_2 = 'x5'").is_none());
    }

    #[test]
    fn dollars_disable() {
        assert!(normalize("select $1 + 2").is_none());
        assert!(normalize("select $$5$$, 2").is_none());
        assert!(normalize("select a$b, 2 from t").is_none());
        // …but not inside strings, quoted identifiers or comments.
        assert_eq!(
            norm("select '$5', \"a$\", 2 -- $\n/* $ */").unwrap().0,
            "select '$5', \"a$\", $1 -- $\n/* $ */"
        );
    }

    #[test]
    fn strings_identifiers_and_comments_are_skipped() {
        let (key, l) = norm(
            "select 'it''s 5', E'\\' 6', \"col 7\"\"\", x1, t_2, 3 -- 4\n /* 5 /* 6 */ 7 */ + 8",
        )
        .unwrap();
        assert_eq!(
            key,
            "select 'it''s 5', E'\\' 6', \"col 7\"\"\", x1, t_2, $1 -- 4\n /* 5 /* 6 */ 7 */ + $2"
        );
        assert_eq!(l, lits(&[("3", Int4), ("8", Int4)]));
        // A plain string ending in a backslash is closed by the next quote.
        assert_eq!(norm("select 'a\\', 5").unwrap().0, "select 'a\\', $1");
        // An identifier ending in e before a quote does not make an escape string.
        assert_eq!(norm("select xe'a\\', 5").unwrap().0, "select xe'a\\', $1");
        assert!(normalize("select 'open, 5").is_none());
        assert!(normalize("select 5 /* open").is_none());
    }

    #[test]
    fn numbers_need_token_boundaries() {
        assert!(normalize("select 5abc").is_none());
        assert!(normalize("select 1_000").is_none());
        assert!(normalize("select .5").is_none());
        assert!(normalize("select t.5").is_none());
        assert!(normalize("select 1e").is_none());
        assert!(normalize("select 1.2.3").is_none());
        let (key, l) = norm("select a[1:2], x::int8+1, (3)").unwrap();
        assert_eq!(key, "select a[$1:$2], x::int8+$3, ($4)");
        assert_eq!(l.len(), 4);
        assert_eq!(norm("select 1.").unwrap().1, lits(&[("1.", Numeric)]));
    }

    #[test]
    fn numbers_after_by_stay() {
        let (key, l) = norm("select a, b from t where a > 5 order by 2, 1 limit 10").unwrap();
        assert_eq!(
            key,
            "select a, b from t where a > $1 order by 2, 1 limit 10"
        );
        assert_eq!(l, lits(&[("5", Int4)]));
        assert!(normalize("select a from t group by 1").is_none());
        // "by" only as a whole bare word
        assert_eq!(
            norm("select bypass, \"by\" from t where x = 3").unwrap().0,
            "select bypass, \"by\" from t where x = $1"
        );
    }

    #[test]
    fn negative_numbers() {
        assert_eq!(norm("select -5, - 5").unwrap().0, "select -$1, - $2");
        assert_eq!(
            norm("select -2147483648, -2147483647").unwrap().0,
            "select -2147483648, -$1"
        );
        assert_eq!(
            norm("select - /* c */ 9223372036854775808, -02147483648, 2147483648")
                .unwrap()
                .0,
            "select - /* c */ 9223372036854775808, -02147483648, $1"
        );
        // Minus then a comment
        assert_eq!(norm("select 1 --5\n").unwrap().0, "select $1 --5\n");
    }

    #[test]
    fn checked_against_sqlparser() {
        let text = "SELECT abalance FROM pgbench_accounts WHERE aid = 12345";
        let n = normalize(text).unwrap();
        let p = parse_normalized(text, &n).unwrap();
        assert_eq!(p.text, n.key);
        // A type modifier cannot take a parameter: the key does not parse.
        let text = "select 'a'::varchar(10)";
        assert!(parse_normalized(text, &normalize(text).unwrap()).is_none());
        // A hand-made mismatch between literal and key is refused.
        let bad = Normalized {
            key: "select $1".into(),
            literals: lits(&[("6", Int4)]),
        };
        assert!(parse_normalized("select 5", &bad).is_none());
        let bad = Normalized {
            key: "select '5'".into(),
            literals: lits(&[("5", Int4)]),
        };
        assert!(parse_normalized("select 5", &bad).is_none());
    }

    #[test]
    fn sqlparser_agrees_on_literals_quotes_and_comments() {
        for text in [
            "select 1., 2.5E-3, 007, 1e3, -5, - 5, 10-5 from t where a = 3",
            "select E'\\' 6', 'it''s 5', \"col 7\"\"\", 8 /* 9 /* 10 */ 11 */ -- 12\n, 13",
            "insert into pgbench_history (tid, bid, aid, delta, mtime) values (3, 1, 62537, -2797, CURRENT_TIMESTAMP)",
            "update pgbench_accounts set abalance = abalance + -2797 where aid = 62537",
            "with x as (select 1 as a) select a + 2 from x where a < 3 limit 4",
            "select arr[1:2], x::int8 + 1, (3) from t order by 1",
            "select 'a\\', 5",
        ] {
            let n = normalize(text).unwrap_or_else(|| panic!("{text}"));
            assert!(parse_normalized(text, &n).is_some(), "{text} -> {}", n.key);
        }
    }
}
