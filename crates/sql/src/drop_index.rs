//! `DROP INDEX CONCURRENTLY`, which sqlparser does not know: the word is blanked out of
//! the text before parsing (every DROP INDEX here takes effect at once, as DDL does),
//! found through sqlparser's tokenizer so that quotes and comments are the lexer's.

/// The text of a `DROP INDEX CONCURRENTLY …` without CONCURRENTLY; None for any other.
pub fn without_concurrently(text: &str) -> Option<String> {
    let head = text.trim_start();
    if !head
        .get(..4)
        .is_some_and(|w| w.eq_ignore_ascii_case("drop"))
    {
        return None;
    }
    let tokens = crate::distribute_by::significant_tokens(text)?;
    let mut words = tokens.iter();
    let is = crate::distribute_by::is_keyword;
    if !(is(words.next(), "drop") && is(words.next(), "index")) {
        return None;
    }
    let concurrently = words.next().filter(|t| is(Some(t), "concurrently"))?;
    let from = crate::distribute_by::byte_offset(text, concurrently.span.start);
    let to = crate::distribute_by::byte_offset(text, concurrently.span.end);
    Some(format!(
        "{}{}{}",
        &text[..from],
        " ".repeat(to - from),
        &text[to..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrently_is_blanked_in_drop_index_only() {
        assert_eq!(
            without_concurrently("DROP INDEX CONCURRENTLY IF EXISTS k").as_deref(),
            Some("DROP INDEX              IF EXISTS k")
        );
        assert_eq!(without_concurrently("drop index k"), None);
        assert_eq!(without_concurrently("DROP TABLE concurrently"), None);
        assert_eq!(without_concurrently("SELECT 1"), None);
    }
}
