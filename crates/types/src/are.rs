//! PostgreSQL's advanced regular expressions (ARE) in the `regex` crate: the option
//! letters of the regexp functions (`parse_flags`) and the pattern rewritten into the
//! crate's syntax (`translate`), used by the `~` operators and `sql`'s regexp functions
//! alike. Where the two flavours differ beyond what `translate` rewrites
//! (backreferences, lookahead, POSIX leftmost-longest alternation, a whole RE's
//! greediness set by its first quantifier) the crate's answer or error stands.

use pgerror::{codes, PgError, PgResult};

/// PostgreSQL's regular-expression options (`parse_re_flags`), later letters overriding
/// earlier ones.
#[derive(Debug, Default, Clone, Copy)]
pub struct Flags {
    pub global: bool,
    icase: bool,
    /// `.` and `[^…]` do not match a newline (`n`, `p`).
    nlstop: bool,
    /// `^` and `$` match at newlines (`n`, `w`).
    nlanch: bool,
    expanded: bool,
    quote: bool,
}

/// Read PostgreSQL's option letters; any other is 22023.
pub fn parse_flags(flags: &str) -> PgResult<Flags> {
    let mut f = Flags::default();
    for c in flags.chars() {
        match c {
            'g' => f.global = true,
            'c' => f.icase = false,
            'i' => f.icase = true,
            'm' | 'n' => (f.nlstop, f.nlanch) = (true, true),
            'p' => (f.nlstop, f.nlanch) = (true, false),
            'w' => (f.nlstop, f.nlanch) = (false, true),
            's' => (f.nlstop, f.nlanch) = (false, false),
            'q' => f.quote = true,
            't' => f.expanded = false,
            'x' => f.expanded = true,
            'b' | 'e' => {
                return Err(PgError::unsupported(
                    "basic and extended (non-advanced) regular expressions",
                ))
            }
            other => {
                return Err(PgError::new(
                    codes::INVALID_PARAMETER_VALUE,
                    format!("invalid regular expression option: \"{other}\""),
                ))
            }
        }
    }
    Ok(f)
}

/// A PostgreSQL ARE in the `regex` crate's syntax under `flags`: `.` matches a newline
/// unless `n`/`p`, as does `[^…]`; `^`/`$` at newlines under `n`/`w`; ARE's escapes
/// `\y \Y \m \M \Z \b \B \e` and `[[:<:]]`, `[[:>:]]` as the crate's; in brackets `[`,
/// `&` and `~` literal (the crate's class operators), and under `x` white space and `#`;
/// `q` the pattern as a literal.
pub fn translate(pattern: &str, flags: &Flags) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    if !flags.nlstop {
        out.push_str("(?s)");
    }
    if flags.nlanch {
        out.push_str("(?m)");
    }
    if flags.quote {
        out.push_str(&regex::escape(pattern));
        return out;
    }
    if flags.expanded {
        out.push_str("(?x)");
    }
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let rest: String = chars[i..chars.len().min(i + 7)].iter().collect();
        if rest == "[[:<:]]" || rest == "[[:>:]]" {
            out.push_str(if rest == "[[:<:]]" {
                r"\b{start}"
            } else {
                r"\b{end}"
            });
            i += 7;
            continue;
        }
        match c {
            '\\' if i + 1 < chars.len() => {
                let e = chars[i + 1];
                match e {
                    'y' => out.push_str(r"\b"),
                    'Y' => out.push_str(r"\B"),
                    'm' => out.push_str(r"\b{start}"),
                    'M' => out.push_str(r"\b{end}"),
                    'Z' => out.push_str(r"\z"),
                    'b' => out.push_str(r"\x08"),
                    'B' => out.push_str(r"\\"),
                    'e' => out.push_str(r"\x1B"),
                    _ => {
                        out.push('\\');
                        out.push(e);
                    }
                }
                i += 2;
            }
            '[' => i = bracket(&chars, i, flags, &mut out),
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Copy the bracket expression starting at `chars[start]` (`[`); returns where it ends.
fn bracket(chars: &[char], start: usize, flags: &Flags, out: &mut String) -> usize {
    let mut i = start + 1;
    out.push('[');
    if chars.get(i) == Some(&'^') {
        out.push('^');
        if flags.nlstop {
            out.push_str(r"\n");
        }
        i += 1;
    }
    if chars.get(i) == Some(&']') {
        out.push_str(r"\]");
        i += 1;
    }
    while i < chars.len() {
        let c = chars[i];
        match c {
            ']' => {
                out.push(']');
                return i + 1;
            }
            '\\' if i + 1 < chars.len() => {
                out.push('\\');
                out.push(chars[i + 1]);
                i += 2;
            }
            '[' if matches!(chars.get(i + 1), Some(':' | '.' | '=')) => {
                // [:class:] (and collating elements, which the crate refuses)
                let close = chars[i + 1];
                let end = (i + 2..chars.len().saturating_sub(1))
                    .find(|&j| chars[j] == close && chars[j + 1] == ']');
                let end = end.map_or(chars.len(), |j| j + 2);
                out.extend(&chars[i..end]);
                i = end;
            }
            c if flags.expanded && (c.is_whitespace() || c == '#') => {
                // literal in brackets under `x`, as in PostgreSQL
                out.push_str(&format!("\\x{{{:X}}}", c as u32));
                i += 1;
            }
            '[' | '&' | '~' => {
                out.push('\\');
                out.push(c);
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    i
}

/// Runs `f` on `pattern` compiled under `flags` (invalid patterns are 2201B).
pub fn with_are<T>(
    pattern: &str,
    flags: &Flags,
    f: impl FnOnce(&regex::Regex) -> T,
) -> PgResult<T> {
    crate::ops::with_regex(&translate(pattern, flags), flags.icase, f)
}

/// `s ~ pattern` (`~*` when `case_insensitive`): the pattern as PostgreSQL's default
/// ARE options read it (`.` and `[^…]` match a newline).
pub fn is_match(s: &str, pattern: &str, case_insensitive: bool) -> PgResult<bool> {
    let flags = Flags {
        icase: case_insensitive,
        ..Flags::default()
    };
    with_are(pattern, &flags, |re| re.is_match(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translation_of_are_syntax() {
        let plain = parse_flags("").unwrap();
        assert_eq!(translate(r"\mcat\M", &plain), r"(?s)\b{start}cat\b{end}");
        assert_eq!(translate("[^a]", &parse_flags("n").unwrap()), r"(?m)[^\na]");
        assert_eq!(translate("[][&]", &plain), r"(?s)[\]\[\&]");
        assert_eq!(translate("a.b", &parse_flags("q").unwrap()), r"(?s)a\.b");
        assert_eq!(
            translate("[ ]", &parse_flags("x").unwrap()),
            r"(?s)(?x)[\x{20}]"
        );
    }

    #[test]
    fn the_operators_read_patterns_as_are() {
        // `.` matches a newline; ARE's word boundaries
        assert!(is_match("a\nb", "a.b", false).unwrap());
        assert!(is_match("the cat", r"\mcat\M", false).unwrap());
        assert!(!is_match("concat", r"\mcat", false).unwrap());
        assert!(is_match("CAT", "cat", true).unwrap());
        assert_eq!(
            is_match("a", "(", false).unwrap_err().code,
            codes::INVALID_REGULAR_EXPRESSION
        );
    }
}
