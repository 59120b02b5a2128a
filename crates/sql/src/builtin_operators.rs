//! `x OPERATOR(pg_catalog.=) ANY (…)`, as pg_dump (`-t PATTERN`) and psql write a
//! comparison with a schema-qualified operator: sqlparser reads `OPERATOR(…)` as a
//! binary operator, but not before ANY, ALL or SOME. An operator of `pg_catalog` is the
//! built-in one, so there the qualified form is replaced by the bare operator before
//! parsing, padded with spaces so that error positions stay where they were. Found
//! through sqlparser's tokenizer, so that quotes and comments are the lexer's.

use crate::distribute_by::{byte_offset, is_keyword, significant_tokens};
use sqlparser::tokenizer::Token;

/// The text with each `OPERATOR(pg_catalog.op) ANY|ALL|SOME` made `op ANY|ALL|SOME`;
/// None when it has none.
pub fn unqualified_before_any(text: &str) -> Option<String> {
    // Most statements: no tokenizing.
    if !text.contains("OPERATOR") && !text.contains("operator") {
        return None;
    }
    let tokens = significant_tokens(text)?;
    let mut out = text.to_string();
    let mut changed = false;
    // Replaced from the end, so that earlier byte offsets stay valid.
    for i in (0..tokens.len()).rev() {
        let Some([op_kw, open, schema, dot, _, close, next]) = tokens.get(i..i + 7) else {
            continue;
        };
        let qualified = is_keyword(Some(op_kw), "operator")
            && open.token == Token::LParen
            && is_keyword(Some(schema), "pg_catalog")
            && dot.token == Token::Period
            && close.token == Token::RParen
            && ["any", "all", "some"]
                .iter()
                .any(|w| is_keyword(Some(next), w));
        if !qualified {
            continue;
        }
        let from = byte_offset(text, op_kw.span.start);
        let op_from = byte_offset(text, dot.span.end);
        let op_to = byte_offset(text, close.span.start);
        let to = byte_offset(text, close.span.end);
        let op = &text[op_from..op_to];
        out.replace_range(from..to, &format!("{op:<width$}", width = to - from));
        changed = true;
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::unqualified_before_any;

    #[test]
    fn only_pg_catalog_operators_before_any_all_some_change() {
        assert_eq!(
            unqualified_before_any("SELECT 1 OPERATOR(pg_catalog.=) ANY (array[1])").as_deref(),
            Some(format!("SELECT 1 ={} ANY (array[1])", " ".repeat(21)).as_str())
        );
        assert_eq!(
            unqualified_before_any(
                "select a operator(pg_catalog.<>) all (b), c OPERATOR(pg_catalog.~) 'x'"
            )
            .as_deref(),
            Some(
                format!(
                    "select a <>{} all (b), c OPERATOR(pg_catalog.~) 'x'",
                    " ".repeat(21)
                )
                .as_str()
            )
        );
        assert_eq!(
            unqualified_before_any("SELECT 1 OPERATOR(pg_catalog.=) 1"),
            None
        );
        assert_eq!(
            unqualified_before_any("SELECT 1 OPERATOR(myschema.=) ANY (b)"),
            None
        );
        assert_eq!(
            unqualified_before_any("SELECT 'OPERATOR(pg_catalog.=) ANY (b)'"),
            None
        );
    }
}
