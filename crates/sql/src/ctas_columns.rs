//! `CREATE TABLE name (column, …) AS query`: sqlparser reads a column list only with
//! types, so the names are read here from the tokens and blanked out of the text (the
//! parser's error positions stay those of the original text), then given to the parsed
//! statement as columns without a type (`binder/create_table_as.rs` reads them).

use crate::distribute_by::{byte_offset, first_word_is_create, is_keyword, significant_tokens};
use sqlparser::ast;
use sqlparser::tokenizer::Token;

/// The text without the column list, and the names; None unless the statement is a
/// CREATE TABLE … AS with a list of bare names.
pub fn take_column_names(text: &str) -> Option<(String, Vec<ast::Ident>)> {
    if !first_word_is_create(text) {
        return None;
    }
    let tokens = significant_tokens(text)?;
    let keyword = |i: usize, k: &str| is_keyword(tokens.get(i), k);
    let word = |i: usize| match tokens.get(i).map(|t| &t.token) {
        Some(Token::Word(w)) => Some(w),
        _ => None,
    };
    let at = |i: usize, t: Token| tokens.get(i).is_some_and(|x| x.token == t);
    let mut i = 1 + (1..3).find(|&i| keyword(i, "table"))?;
    if keyword(i, "if") && keyword(i + 1, "not") && keyword(i + 2, "exists") {
        i += 3;
    }
    word(i)?;
    i += 1;
    while at(i, Token::Period) {
        word(i + 1)?;
        i += 2;
    }
    let open = i;
    if !at(open, Token::LParen) {
        return None;
    }
    let mut names = Vec::new();
    i += 1;
    loop {
        let w = word(i)?;
        names.push(ast::Ident {
            value: w.value.clone(),
            quote_style: w.quote_style,
            span: tokens[i].span,
        });
        i += 1;
        if at(i, Token::Comma) {
            i += 1;
        } else if at(i, Token::RParen) && keyword(i + 1, "as") {
            break;
        } else {
            return None;
        }
    }
    let from = byte_offset(text, tokens[open].span.start);
    let to = byte_offset(text, tokens[i].span.end);
    let blank: String = text[from..to]
        .chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect();
    Some((format!("{}{blank}{}", &text[..from], &text[to..]), names))
}

/// Gives a CREATE TABLE … AS its column names as columns without a type.
pub fn restore(statement: &mut ast::Statement, names: Vec<ast::Ident>) {
    if let ast::Statement::CreateTable(ct) = statement {
        ct.columns = names
            .into_iter()
            .map(|name| ast::ColumnDef {
                name,
                data_type: ast::DataType::Unspecified,
                options: Vec::new(),
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_taken_from_a_create_table_as() {
        let (text, names) =
            take_column_names("CREATE TABLE IF NOT EXISTS public.t (a, \"B\") AS SELECT 1, 2")
                .unwrap();
        let blank = " ".repeat("(a, \"B\")".len());
        assert_eq!(
            text,
            format!("CREATE TABLE IF NOT EXISTS public.t {blank} AS SELECT 1, 2")
        );
        assert_eq!(names.len(), 2);
        assert_eq!(names[1].quote_style, Some('"'));
        assert!(take_column_names("CREATE TABLE t (a int) AS SELECT 1").is_none());
        assert!(take_column_names("CREATE TABLE t (a, b)").is_none());
        assert!(take_column_names("SELECT 1").is_none());
    }
}
