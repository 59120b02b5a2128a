//! What pg_stat_statements keys a statement by: its text with the constants replaced by
//! `$n` (PostgreSQL's generate_normalized_query) and a 64-bit id of its shape, equal for
//! statements that differ only in their constants, spacing, comments and keyword case.
//!
//! PostgreSQL 15 jumbles the analyzed query tree; this works on tokens, with the same
//! outcome for the statements clients send: numbers, strings (also typed `DATE '…'` and
//! cast `'1'::int`, where only the string is the constant), booleans and negated numbers
//! (`-1` is one constant, as PostgreSQL's parser folds it) are constants, numbered after
//! the statement's own highest `$n` in order of appearance; positional `ORDER BY 1` /
//! `GROUP BY 1` are not (PostgreSQL resolves them to columns). The rest of the text is
//! kept as it is. Utility statements (anything but SELECT, INSERT, UPDATE, DELETE, WITH,
//! VALUES, TABLE) keep their text unchanged and are identified by it, as in PostgreSQL 15;
//! PREPARE, EXECUTE and DEALLOCATE are not tracked at all (PostgreSQL tracks the prepared
//! statement itself instead).

use crate::normalize::{blank_end, ident_byte, number_end, skip_quoted, LiteralKind};
use std::fmt::Write;

/// A statement as pg_stat_statements records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementShape {
    /// The text with its constants replaced by `$n`.
    pub text: String,
    pub queryid: i64,
    /// Not SELECT, INSERT, UPDATE, DELETE, WITH, VALUES or TABLE.
    pub utility: bool,
}

/// First words of the statements PostgreSQL plans (and normalizes).
const OPTIMIZABLE: [&str; 7] = [
    "select", "insert", "update", "delete", "with", "values", "table",
];

/// Words after which `-` is a sign (part of the constant), not a subtraction.
const SIGN_CONTEXT: [&str; 20] = [
    "select",
    "where",
    "and",
    "or",
    "not",
    "then",
    "else",
    "when",
    "case",
    "limit",
    "offset",
    "between",
    "having",
    "on",
    "by",
    "distinct",
    "returning",
    "is",
    "like",
    "ilike",
];

/// Words that end an ORDER BY / GROUP BY list (after which numbers are constants again).
const BY_LIST_END: [&str; 10] = [
    "limit",
    "offset",
    "having",
    "window",
    "fetch",
    "for",
    "union",
    "intersect",
    "except",
    "returning",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Word,
    Number,
    /// A string constant, with its prefix (`E'…'`, `B'…'`, `X'…'`, `N'…'`) or `$$…$$`.
    Str,
    Param,
    QuotedIdent,
    Punct,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Kind,
    start: usize,
    end: usize,
}

/// FNV-1a: a fixed function, so that every coordinator gives a shape the same id.
struct ShapeHash(u64);

impl ShapeHash {
    fn new() -> Self {
        ShapeHash(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(&mut self, bytes: impl IntoIterator<Item = u8>) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// One token, then a separator (so that `a b` and `ab` differ).
    fn token(&mut self, bytes: impl IntoIterator<Item = u8>) {
        self.bytes(bytes);
        self.bytes([0]);
    }
}

/// The statement's shape (None: not tracked); `text` is one statement as
/// `split_statements` returns it.
pub fn statement_shape(text: &str) -> Option<StatementShape> {
    let tokens = tokenize(text);
    let first_is = |words: &[&str]| {
        tokens.first().is_some_and(|t| {
            t.kind == Kind::Word
                && words
                    .iter()
                    .any(|k| text[t.start..t.end].eq_ignore_ascii_case(k))
        })
    };
    if first_is(&["prepare", "execute", "deallocate"]) {
        return None;
    }
    let mut hash = ShapeHash::new();
    if !first_is(&OPTIMIZABLE) {
        hash.bytes(text.bytes());
        return Some(StatementShape {
            text: text.to_string(),
            queryid: hash.0 as i64,
            utility: true,
        });
    }
    let word = |t: &Token| (t.kind == Kind::Word).then(|| &text[t.start..t.end]);
    let is_punct = |t: Option<&Token>, c: u8| {
        t.is_some_and(|t| t.kind == Kind::Punct && text.as_bytes()[t.start] == c)
    };
    let mut next_param = tokens
        .iter()
        .filter(|t| t.kind == Kind::Param)
        .filter_map(|t| text[t.start + 1..t.end].parse::<u32>().ok())
        .max()
        .unwrap_or(0)
        + 1;
    let mut out = String::with_capacity(text.len() + 8);
    let mut copied = 0;
    let mut in_by_list = false;
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i];
        let prev = i.checked_sub(1).map(|p| &tokens[p]);
        // A constant: its first token, its last, and its kind for the id.
        let constant: Option<(usize, usize, char)> = match t.kind {
            Kind::Number => {
                let positional = in_by_list
                    && (prev
                        .and_then(word)
                        .is_some_and(|w| w.eq_ignore_ascii_case("by"))
                        || is_punct(prev, b','))
                    && tokens.get(i + 1).is_none_or(|n| {
                        n.kind == Kind::Word || is_punct(Some(n), b',') || is_punct(Some(n), b')')
                    });
                (!positional).then(|| (i, i, LiteralKind::of(&text[t.start..t.end]).code()))
            }
            Kind::Punct
                if text.as_bytes()[t.start] == b'-'
                    && tokens.get(i + 1).is_some_and(|n| n.kind == Kind::Number)
                    && prev.is_none_or(|p| match p.kind {
                        Kind::Punct => !matches!(text.as_bytes()[p.start], b')' | b']'),
                        Kind::Word => SIGN_CONTEXT
                            .iter()
                            .any(|k| text[p.start..p.end].eq_ignore_ascii_case(k)),
                        _ => false,
                    }) =>
            {
                let n = &tokens[i + 1];
                Some((i, i + 1, LiteralKind::of(&text[n.start..n.end]).code()))
            }
            Kind::Str => Some((i, i, 's')),
            Kind::Word
                if ["true", "false"]
                    .iter()
                    .any(|k| text[t.start..t.end].eq_ignore_ascii_case(k)) =>
            {
                Some((i, i, 'b'))
            }
            _ => None,
        };
        if let Some((first, last, kind)) = constant {
            out.push_str(&text[copied..tokens[first].start]);
            let _ = write!(out, "${next_param}");
            next_param += 1;
            copied = tokens[last].end;
            hash.token([b'$', kind as u8]);
            i = last + 1;
            continue;
        }
        match t.kind {
            Kind::Word => {
                let w = &text[t.start..t.end];
                if w.eq_ignore_ascii_case("by") {
                    in_by_list = true;
                } else if BY_LIST_END.iter().any(|k| w.eq_ignore_ascii_case(k)) {
                    in_by_list = false;
                }
                hash.token(w.bytes().map(|b| b.to_ascii_lowercase()));
            }
            _ => hash.token(text[t.start..t.end].bytes()),
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    Some(StatementShape {
        text: out,
        queryid: hash.0 as i64,
        utility: false,
    })
}

/// The statement's tokens, comments and whitespace left out. Unterminated quotes and
/// comments run to the end (the statement then fails to parse anyway).
fn tokenize(text: &str) -> Vec<Token> {
    let bytes = text.as_bytes();
    let mut tokens: Vec<Token> = Vec::with_capacity(bytes.len() / 3);
    let mut i = 0;
    while i < bytes.len() {
        // An unterminated comment runs to the end.
        let after = blank_end(bytes, i).unwrap_or(bytes.len());
        if after > i {
            i = after;
            continue;
        }
        let start = i;
        let c = bytes[i];
        let kind = match c {
            b'\'' => {
                // A one-letter prefix word right before the quote belongs to the string.
                let prefix = tokens.last().filter(|t| {
                    t.kind == Kind::Word
                        && t.end == i
                        && t.end - t.start == 1
                        && matches!(
                            bytes[t.start].to_ascii_lowercase(),
                            b'e' | b'b' | b'x' | b'n'
                        )
                });
                let escapes = prefix.is_some_and(|t| bytes[t.start].eq_ignore_ascii_case(&b'e'));
                let start = match prefix {
                    Some(t) => {
                        let s = t.start;
                        tokens.pop();
                        s
                    }
                    None => start,
                };
                i = skip_quoted(bytes, i, b'\'', escapes).unwrap_or(bytes.len());
                tokens.push(Token {
                    kind: Kind::Str,
                    start,
                    end: i,
                });
                continue;
            }
            b'"' => {
                i = skip_quoted(bytes, i, b'"', false).unwrap_or(bytes.len());
                Kind::QuotedIdent
            }
            b'$' if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                Kind::Param
            }
            b'$' => match dollar_quote_end(text, i) {
                Some(end) => {
                    i = end;
                    Kind::Str
                }
                None => {
                    i += 1;
                    Kind::Punct
                }
            },
            b'0'..=b'9' => {
                i = number_end(bytes, i);
                Kind::Number
            }
            b'.' if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i = number_end(bytes, i + 1);
                Kind::Number
            }
            c if ident_byte(c) => {
                while i < bytes.len() && ident_byte(bytes[i]) {
                    i += 1;
                }
                Kind::Word
            }
            _ => {
                i += 1;
                Kind::Punct
            }
        };
        tokens.push(Token {
            kind,
            start,
            end: i,
        });
    }
    tokens
}

/// The end of a `$tag$ … $tag$` string starting at `start`, if one starts there.
fn dollar_quote_end(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let len = bytes[start + 1..]
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))?;
    if bytes[start + 1 + len] != b'$' {
        return None;
    }
    let tag = &text[start..start + len + 2];
    let body = start + len + 2;
    Some(
        text[body..]
            .find(tag)
            .map_or(text.len(), |p| body + p + tag.len()),
    )
}

#[cfg(test)]
mod tests {
    use super::statement_shape;

    fn text(sql: &str) -> String {
        statement_shape(sql).unwrap().text
    }

    #[test]
    fn constants_become_parameters_after_the_statements_own() {
        assert_eq!(
            text("UPDATE pgbench_accounts SET abalance = abalance + -4211 WHERE aid = 77"),
            "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
        );
        assert_eq!(text("SELECT $2, 'x', $1"), "SELECT $2, $3, $1");
        assert_eq!(
            text("select '1'::int, E'a\\'b', DATE '2020-01-01'"),
            "select $1::int, $2, DATE $3"
        );
        assert_eq!(
            text("SELECT a FROM t WHERE a IN (1, -2, 3.5)"),
            "SELECT a FROM t WHERE a IN ($1, $2, $3)"
        );
        assert_eq!(
            text("SELECT a - 1 FROM t ORDER BY 1, 2 DESC LIMIT 5"),
            "SELECT a - $1 FROM t ORDER BY 1, 2 DESC LIMIT $2"
        );
        assert_eq!(text("SELECT /* 5 */ 1 -- 6"), "SELECT /* 5 */ $1 -- 6");
    }

    #[test]
    fn utility_statements_keep_their_text() {
        assert_eq!(text("SET work_mem = 64"), "SET work_mem = 64");
        let id = |s| statement_shape(s).unwrap().queryid;
        assert_ne!(id("BEGIN"), id("begin"));
        assert_eq!(statement_shape("EXECUTE p(1)"), None);
    }

    #[test]
    fn equal_shapes_share_an_id() {
        let id = |s| statement_shape(s).unwrap().queryid;
        assert_eq!(id("SELECT 1"), id("select   2 /* c */"));
        assert_ne!(id("SELECT 1"), id("SELECT 'a'"));
        assert_ne!(id("SELECT 1"), id("SELECT 5000000000"));
        assert_ne!(id("SELECT a FROM t"), id("SELECT b FROM t"));
    }
}
