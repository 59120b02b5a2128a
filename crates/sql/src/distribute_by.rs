//! Postgres-XL's `DISTRIBUTE BY` clause of CREATE TABLE, which sqlparser does not know:
//! it is read from the statement's tokens (sqlparser's own tokenizer, so quotes, comments
//! and dollar quotes are what PostgreSQL's lexer makes of them) and blanked out of the
//! text before the rest is parsed. (A sqlparser `Dialect` could only add it by parsing
//! all of CREATE TABLE itself: its statement hook takes over the whole statement.)
//!
//! The grammar is XL's: the clause ends the statement, after `WITH (…)` and
//! `TABLESPACE`, and may only be followed by XL's `TO NODE (…)` / `TO GROUP …`, which is
//! refused.

use pgerror::{codes, PgError, PgResult};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer, Word};

/// The clause as written: the column is not resolved yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DistributeBy {
    /// `HASH (column)`; `position` is where the column name starts (for errors).
    Hash {
        column: String,
        position: u32,
    },
    Replication,
    RoundRobin,
}

/// A CREATE TABLE's text with its `DISTRIBUTE BY` clause replaced by spaces (so error
/// positions in the rest stay those of the original text), and the clause. None when
/// `text` is not a CREATE TABLE with the clause.
pub fn take_distribute_by(text: &str) -> PgResult<Option<(String, DistributeBy)>> {
    if !first_word_is_create(text) {
        return Ok(None);
    }
    // A text the tokenizer refuses is left to the parser, which reports the error.
    let Some(tokens) = significant_tokens(text) else {
        return Ok(None);
    };
    let Some(start) = clause_start(&tokens)? else {
        return Ok(None);
    };
    let mut clause = Clause {
        text,
        tokens: &tokens,
        next: start + 2,
    };
    let distribute_by = clause.distribution()?;
    clause.refuse_subcluster()?;
    // Nothing but the statement's end may follow (XL's grammar puts the clause last).
    if let Some(t) = clause.peek().filter(|t| t.token != Token::SemiColon) {
        return Err(clause.syntax_error(Some(t)));
    }
    let from = byte_offset(text, tokens[start].span.start);
    let to = byte_offset(text, tokens[clause.next - 1].span.end);
    let blank: String = text[from..to]
        .chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect();
    Ok(Some((
        format!("{}{blank}{}", &text[..from], &text[to..]),
        distribute_by,
    )))
}

/// Whether the statement's first word (after whitespace and comments) is CREATE: the
/// cheap test that keeps every other statement from being tokenized twice.
pub(crate) fn first_word_is_create(text: &str) -> bool {
    let mut rest = text.trim_start();
    loop {
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.find('\n').map_or("", |p| &r[p..]).trim_start();
        } else if rest.starts_with("/*") {
            match crate::parse::block_comment_end(rest.as_bytes(), 0) {
                Some(end) => rest = rest[end..].trim_start(),
                None => return false,
            }
        } else {
            return rest
                .get(..6)
                .is_some_and(|w| w.eq_ignore_ascii_case("create"));
        }
    }
}

/// Whether `t` is the unquoted word `keyword` (any case).
pub(crate) fn is_keyword(t: Option<&TokenWithSpan>, keyword: &str) -> bool {
    matches!(t, Some(TokenWithSpan { token: Token::Word(w), .. })
        if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(keyword))
}

/// The index of `DISTRIBUTE` in `CREATE [GLOBAL|LOCAL] [TEMP|TEMPORARY|UNLOGGED] TABLE
/// name (…) … DISTRIBUTE BY`, looking only outside parentheses after the column list and
/// before a CREATE TABLE AS's query. A `TO NODE`/`TO GROUP` met first is refused.
fn clause_start(tokens: &[TokenWithSpan]) -> PgResult<Option<usize>> {
    let mut i = 1;
    for optional in [["global", "local"], ["temp", "temporary"]] {
        if optional.iter().any(|k| is_keyword(tokens.get(i), k)) {
            i += 1;
        }
    }
    if is_keyword(tokens.get(i), "unlogged") {
        i += 1;
    }
    if !is_keyword(tokens.first(), "create") || !is_keyword(tokens.get(i), "table") {
        return Ok(None);
    }
    let mut depth = 0usize;
    let mut after_columns = false;
    for (j, t) in tokens.iter().enumerate().skip(i + 1) {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth = depth.saturating_sub(1);
                after_columns |= depth == 0;
            }
            _ if depth > 0 => {}
            _ if is_keyword(Some(t), "as") => return Ok(None),
            _ if !after_columns => {}
            _ if is_keyword(Some(t), "distribute") && is_keyword(tokens.get(j + 1), "by") => {
                return Ok(Some(j))
            }
            _ => refuse_subcluster_at(tokens, j)?,
        }
    }
    Ok(None)
}

/// XL's `TO NODE (…)` / `TO GROUP …` (which datanodes hold the table): placement here
/// is by the cluster's bucket map alone.
fn refuse_subcluster_at(tokens: &[TokenWithSpan], i: usize) -> PgResult<()> {
    if is_keyword(tokens.get(i), "to") {
        for what in ["node", "group"] {
            if is_keyword(tokens.get(i + 1), what) {
                return Err(PgError::unsupported(format!(
                    "CREATE TABLE … TO {}",
                    what.to_ascii_uppercase()
                )));
            }
        }
    }
    Ok(())
}

/// A cursor over the clause's tokens.
struct Clause<'a> {
    text: &'a str,
    tokens: &'a [TokenWithSpan],
    next: usize,
}

impl<'a> Clause<'a> {
    fn peek(&self) -> Option<&'a TokenWithSpan> {
        self.tokens.get(self.next)
    }

    /// The next token if it is a word (unquoted when it must be a keyword).
    fn expect_word(&mut self, keyword: bool) -> PgResult<(&'a Word, &'a TokenWithSpan)> {
        match self.peek() {
            Some(
                t @ TokenWithSpan {
                    token: Token::Word(w),
                    ..
                },
            ) if !keyword || w.quote_style.is_none() => {
                self.next += 1;
                Ok((w, t))
            }
            other => Err(self.syntax_error(other)),
        }
    }

    fn expect(&mut self, token: Token) -> PgResult<()> {
        match self.peek() {
            Some(t) if t.token == token => {
                self.next += 1;
                Ok(())
            }
            other => Err(self.syntax_error(other)),
        }
    }

    /// `HASH (column) | MODULO (column) | REPLICATION | ROUNDROBIN`, after `DISTRIBUTE BY`.
    fn distribution(&mut self) -> PgResult<DistributeBy> {
        let (kind, kind_token) = self.expect_word(true)?;
        match kind.value.to_ascii_lowercase().as_str() {
            "hash" => {
                self.expect(Token::LParen)?;
                let (column, column_token) = self.expect_word(false)?;
                self.expect(Token::RParen)?;
                Ok(DistributeBy::Hash {
                    column: match column.quote_style {
                        Some(_) => column.value.clone(),
                        None => column.value.to_ascii_lowercase(),
                    },
                    position: char_position(self.text, column_token.span.start),
                })
            }
            "modulo" => Err(PgError::unsupported("DISTRIBUTE BY MODULO")),
            "replication" => Ok(DistributeBy::Replication),
            "roundrobin" => Ok(DistributeBy::RoundRobin),
            _ => Err(self.syntax_error(Some(kind_token))),
        }
    }

    fn refuse_subcluster(&self) -> PgResult<()> {
        refuse_subcluster_at(self.tokens, self.next)
    }

    /// PostgreSQL's "syntax error at or near" the token as written, with its position,
    /// or "at end of input".
    fn syntax_error(&self, t: Option<&TokenWithSpan>) -> PgError {
        let Some(t) = t else {
            return PgError::new(codes::SYNTAX_ERROR, "syntax error at end of input");
        };
        let written =
            &self.text[byte_offset(self.text, t.span.start)..byte_offset(self.text, t.span.end)];
        PgError::new(
            codes::SYNTAX_ERROR,
            format!("syntax error at or near \"{written}\""),
        )
        .with_position(char_position(self.text, t.span.start))
    }
}

/// The tokens of `text` without whitespace, with their positions; None if the tokenizer
/// refuses the text (the parser then reports why). For the rewrites made before parsing.
pub(crate) fn significant_tokens(text: &str) -> Option<Vec<TokenWithSpan>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize_with_location()
        .ok()?;
    Some(
        tokens
            .into_iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_)))
            .collect(),
    )
}

/// The byte offset of a tokenizer location (1-based line and character column).
pub(crate) fn byte_offset(text: &str, at: Location) -> usize {
    let line_start: usize = text
        .split('\n')
        .take(at.line.saturating_sub(1) as usize)
        .map(|l| l.len() + 1)
        .sum();
    text[line_start..]
        .char_indices()
        .nth(at.column.saturating_sub(1) as usize)
        .map_or(text.len(), |(i, _)| line_start + i)
}

/// PostgreSQL's error position of a tokenizer location: 1-based, in characters.
pub(crate) fn char_position(text: &str, at: Location) -> u32 {
    let before: usize = text
        .split('\n')
        .take(at.line.saturating_sub(1) as usize)
        .map(|l| l.chars().count() + 1)
        .sum();
    (before + at.column as usize) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(sql: &str) -> PgResult<Option<(String, DistributeBy)>> {
        take_distribute_by(sql)
    }

    #[test]
    fn each_form_is_read_and_blanked() {
        let (text, d) = take("CREATE TABLE t (a int) DISTRIBUTE BY HASH (a)")
            .unwrap()
            .unwrap();
        assert_eq!(text.trim_end(), "CREATE TABLE t (a int)");
        assert_eq!(
            text.len(),
            "CREATE TABLE t (a int) DISTRIBUTE BY HASH (a)".len()
        );
        assert_eq!(
            d,
            DistributeBy::Hash {
                column: "a".into(),
                position: 44
            }
        );
        let (_, d) = take("create table t (a int) distribute by replication;")
            .unwrap()
            .unwrap();
        assert_eq!(d, DistributeBy::Replication);
        let (text, d) = take(
            "Create Unlogged Table t (a int) WITH (fillfactor=80)\n  Distribute By RoundRobin",
        )
        .unwrap()
        .unwrap();
        assert_eq!(d, DistributeBy::RoundRobin);
        assert_eq!(
            text.trim_end(),
            "Create Unlogged Table t (a int) WITH (fillfactor=80)"
        );
    }

    #[test]
    fn column_names_follow_identifier_rules() {
        let column = |sql| match take(sql).unwrap().unwrap().1 {
            DistributeBy::Hash { column, .. } => column,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            column("create table t (\"Id\" int) distribute by hash (\"Id\")"),
            "Id"
        );
        assert_eq!(
            column("create table t (id int) distribute by HASH (ID)"),
            "id"
        );
    }

    #[test]
    fn quotes_comments_and_other_statements_are_left_alone() {
        for sql in [
            "select 'distribute by hash (a)'",
            "create table distribute (by int)",
            "create table t (a text default 'x) distribute by hash (a)')",
            "create table t (a int) -- distribute by hash (a)",
            "create table t (a int) /* distribute by hash (a) */",
            "create index i on t (a)",
            "create table t as select 1 as distribute",
        ] {
            assert_eq!(take(sql).unwrap(), None, "{sql}");
        }
        let (text, _) =
            take("/* c */ create table t (a int) /* x */ distribute /* y */ by hash (a) -- z")
                .unwrap()
                .unwrap();
        assert!(text.starts_with("/* c */ create table t (a int) /* x */ "));
        assert!(text.ends_with("-- z"));
    }

    #[test]
    fn malformed_clauses_are_syntax_errors_at_the_token() {
        for (sql, message, position) in [
            (
                "create table t (a int) distribute by hash a",
                "at or near \"a\"",
                Some(43),
            ),
            (
                "create table t (a int) distribute by hash (a, b)",
                "at or near \",\"",
                Some(45),
            ),
            (
                "create table t (a int) distribute by spread",
                "at or near \"spread\"",
                Some(38),
            ),
            (
                "create table t (a int) distribute by",
                "at end of input",
                None,
            ),
            (
                "create table t (a int) distribute by hash (a",
                "at end of input",
                None,
            ),
            (
                "create table t (a int) distribute by replication with (fillfactor=80)",
                "at or near \"with\"",
                Some(50),
            ),
        ] {
            let e = take(sql).unwrap_err();
            assert_eq!(e.code, codes::SYNTAX_ERROR, "{sql}");
            assert!(e.message.ends_with(message), "{sql}: {}", e.message);
            assert_eq!(e.position, position, "{sql}");
        }
    }

    #[test]
    fn xl_forms_not_built_are_refused_by_name() {
        for (sql, what) in [
            ("create table t (a int) distribute by modulo (a)", "MODULO"),
            (
                "create table t (a int) distribute by hash (a) to node (dn1)",
                "TO NODE",
            ),
            ("create table t (a int) to group g", "TO GROUP"),
        ] {
            let e = take(sql).unwrap_err();
            assert_eq!(e.code, codes::FEATURE_NOT_SUPPORTED, "{sql}");
            assert!(e.message.contains(what), "{sql}: {}", e.message);
        }
    }
}
