//! The tokens of the statements parsed by hand (sequences, roles): words lower-cased,
//! quoted identifiers and string literals with PostgreSQL's doubled-quote escapes,
//! numbers, punctuation.

use pgerror::{codes, PgError, PgResult};

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token {
    /// An unquoted word, lower-cased.
    Word(String),
    /// A double-quoted identifier.
    Quoted(String),
    /// A single-quoted string literal.
    String(String),
    Number(String),
    Punct(char),
}

pub(crate) struct Tokens {
    pub(crate) tokens: Vec<Token>,
    pub(crate) at: usize,
}

impl Tokens {
    pub(crate) fn new(text: &str) -> PgResult<Tokens> {
        let mut tokens = Vec::new();
        let mut chars = text.trim().trim_end_matches(';').chars().peekable();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                chars.next();
            } else if c == '\'' {
                chars.next();
                let mut s = String::new();
                loop {
                    match chars.next() {
                        Some('\'') if chars.peek() == Some(&'\'') => {
                            chars.next();
                            s.push('\'');
                        }
                        Some('\'') => break,
                        Some(c) => s.push(c),
                        None => return Err(syntax_error("unterminated quoted string")),
                    }
                }
                tokens.push(Token::String(s));
            } else if c == '"' {
                chars.next();
                let mut s = String::new();
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            s.push('"');
                        }
                        Some('"') => break,
                        Some(c) => s.push(c),
                        None => return Err(syntax_error("unterminated quoted identifier")),
                    }
                }
                tokens.push(Token::Quoted(s));
            } else if c.is_ascii_digit() || c == '-' || c == '+' {
                let mut s = String::new();
                s.push(c);
                chars.next();
                while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    s.push(d);
                    chars.next();
                }
                tokens.push(Token::Number(s));
            } else if c.is_alphanumeric() || c == '_' {
                let mut s = String::new();
                while let Some(&d) = chars.peek().filter(|d| d.is_alphanumeric() || **d == '_') {
                    s.push(d.to_ascii_lowercase());
                    chars.next();
                }
                tokens.push(Token::Word(s));
            } else {
                tokens.push(Token::Punct(c));
                chars.next();
            }
        }
        Ok(Tokens { tokens, at: 0 })
    }

    pub(crate) fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    pub(crate) fn peek_word(&self) -> Option<String> {
        match self.tokens.get(self.at) {
            Some(Token::Word(w)) => Some(w.clone()),
            _ => None,
        }
    }

    pub(crate) fn word(&mut self) -> Option<String> {
        let w = self.peek_word();
        if w.is_some() {
            self.at += 1;
        }
        w
    }

    /// Consumes `words` if they come next.
    pub(crate) fn keywords(&mut self, words: &[&str]) -> bool {
        let matches = words
            .iter()
            .enumerate()
            .all(|(i, w)| matches!(self.tokens.get(self.at + i), Some(Token::Word(x)) if x == w));
        if matches {
            self.at += words.len();
        }
        matches
    }

    pub(crate) fn punct(&mut self, c: char) -> bool {
        let found = self.tokens.get(self.at) == Some(&Token::Punct(c));
        if found {
            self.at += 1;
        }
        found
    }

    pub(crate) fn unexpected(&self) -> PgError {
        match self.tokens.get(self.at) {
            None => syntax_error("syntax error at end of input"),
            Some(Token::Word(w) | Token::Quoted(w) | Token::Number(w)) => {
                syntax_error(&format!("syntax error at or near \"{w}\""))
            }
            Some(Token::String(w)) => syntax_error(&format!("syntax error at or near \"'{w}'\"")),
            Some(Token::Punct(c)) => syntax_error(&format!("syntax error at or near \"{c}\"")),
        }
    }

    pub(crate) fn end(&self) -> PgResult<()> {
        match self.tokens.get(self.at) {
            None => Ok(()),
            Some(_) => Err(self.unexpected()),
        }
    }

    pub(crate) fn identifier(&mut self) -> PgResult<String> {
        match self.tokens.get(self.at).cloned() {
            Some(Token::Word(w) | Token::Quoted(w)) => {
                self.at += 1;
                Ok(w)
            }
            _ => Err(self.unexpected()),
        }
    }

    /// A possibly qualified name, as its parts.
    pub(crate) fn name_parts(&mut self) -> PgResult<Vec<String>> {
        let mut parts = vec![self.identifier()?];
        while self.punct('.') {
            parts.push(self.identifier()?);
        }
        Ok(parts)
    }

    /// A sequence name: `name` or `public.name`.
    pub(crate) fn name(&mut self) -> PgResult<String> {
        let parts = self.name_parts()?;
        crate::catalog::public_object_name(parts)
    }

    pub(crate) fn number(&mut self) -> PgResult<i64> {
        match self.tokens.get(self.at).cloned() {
            Some(Token::Number(n)) => {
                self.at += 1;
                n.parse().map_err(|_| {
                    PgError::new(
                        codes::NUMERIC_VALUE_OUT_OF_RANGE,
                        format!("value \"{n}\" is out of range for type bigint"),
                    )
                })
            }
            _ => Err(self.unexpected()),
        }
    }

    /// A string literal.
    pub(crate) fn string(&mut self) -> PgResult<String> {
        match self.tokens.get(self.at).cloned() {
            Some(Token::String(s)) => {
                self.at += 1;
                Ok(s)
            }
            _ => Err(self.unexpected()),
        }
    }
}

pub(crate) fn syntax_error(message: &str) -> PgError {
    PgError::new(codes::SYNTAX_ERROR, message)
}
