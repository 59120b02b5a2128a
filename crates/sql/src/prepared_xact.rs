//! PostgreSQL's two-phase commit statements, which sqlparser does not know:
//! `PREPARE TRANSACTION 'gid'`, `COMMIT PREPARED 'gid'`, `ROLLBACK PREPARED 'gid'`. Read
//! from sqlparser's tokens, so the gid's quoting (`'…'`, `E'…'`, `$$…$$`) and comments are
//! what PostgreSQL's lexer makes of them.

use crate::plan::Statement;
use pgerror::{codes, PgError, PgResult};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// The statement, if `text` starts with `PREPARE TRANSACTION`, `COMMIT PREPARED` or
/// `ROLLBACK PREPARED`; a malformed one is 42601. None for any other text.
pub(crate) fn prepared_xact_statement(text: &str) -> PgResult<Option<Statement>> {
    // Without allocating: COMMIT and ROLLBACK pass here on their way to the fast path.
    let mut words = text.split_whitespace();
    let (first, second) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let is = |word: &str, keyword: &str| word.eq_ignore_ascii_case(keyword);
    let make: fn(String) -> Statement = if is(first, "prepare") && is(second, "transaction") {
        Statement::PrepareTransaction
    } else if is(second, "prepared") && is(first, "commit") {
        Statement::CommitPrepared
    } else if is(second, "prepared") && is(first, "rollback") {
        Statement::RollbackPrepared
    } else {
        return Ok(None);
    };
    // A text the tokenizer refuses (an unterminated quote) is left to the parser.
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, text).tokenize() else {
        return Ok(None);
    };
    let mut tokens = tokens
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .skip(2);
    let gid = match tokens.next() {
        Some(Token::SingleQuotedString(s) | Token::EscapedStringLiteral(s)) => s,
        Some(Token::DollarQuotedString(s)) => s.value,
        other => return Err(syntax_error(other)),
    };
    match tokens.find(|t| *t != Token::SemiColon) {
        None | Some(Token::EOF) => Ok(Some(make(gid))),
        other => Err(syntax_error(other)),
    }
}

fn syntax_error(token: Option<Token>) -> PgError {
    let message = match token {
        None | Some(Token::EOF) => "syntax error at end of input".to_string(),
        Some(t) => format!("syntax error at or near \"{t}\""),
    };
    PgError::new(codes::SYNTAX_ERROR, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Option<Statement> {
        prepared_xact_statement(text).unwrap()
    }

    #[test]
    fn reads_the_gid_as_postgresql_quotes_it() {
        assert!(matches!(parsed("PREPARE TRANSACTION 'g1'"),
            Some(Statement::PrepareTransaction(g)) if g == "g1"));
        assert!(matches!(parsed("commit  prepared\n'a''b' ;"),
            Some(Statement::CommitPrepared(g)) if g == "a'b"));
        assert!(matches!(parsed("rollback prepared E'a\\nb'"),
            Some(Statement::RollbackPrepared(g)) if g == "a\nb"));
        assert!(matches!(parsed("rollback prepared $$d$$"),
            Some(Statement::RollbackPrepared(g)) if g == "d"));
    }

    #[test]
    fn other_statements_are_not_taken() {
        for text in [
            "commit",
            "rollback to savepoint a",
            "prepare p as select 1",
            "commit work",
        ] {
            assert!(parsed(text).is_none(), "{text}");
        }
    }

    #[test]
    fn malformed_ones_are_syntax_errors() {
        for (text, message) in [
            ("commit prepared g1", "syntax error at or near \"g1\""),
            ("prepare transaction", "syntax error at end of input"),
            ("commit prepared 'g1' x", "syntax error at or near \"x\""),
        ] {
            let e = prepared_xact_statement(text).unwrap_err();
            assert_eq!((e.code, e.message.as_str()), (codes::SYNTAX_ERROR, message));
        }
    }
}
