//! Navigation in a `json` value's text. The json type keeps its input as written, and
//! PostgreSQL's json functions (jsonfuncs.c) return fields, elements and paths as slices
//! of that text, spacing and duplicate keys included (the last duplicate wins): `->`,
//! `->>`, `#>`, `#>>`, json_extract_path(_text), json_typeof and json_array_length.
//! The text has passed `json::validate`, so the scanner does not check it again.

use pgerror::{codes, PgError, PgResult};

/// Where the value starting at `at` (not whitespace) ends.
fn value_end(b: &[u8], at: usize) -> usize {
    let string_end = |mut i: usize| {
        i += 1;
        while i < b.len() && b[i] != b'"' {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        i + 1
    };
    match b.get(at) {
        Some(b'"') => string_end(at),
        Some(b'{' | b'[') => {
            let (mut depth, mut i) = (0usize, at);
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = string_end(i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            i
        }
        _ => {
            let mut i = at;
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']') && !b[i].is_ascii_whitespace()
            {
                i += 1;
            }
            i
        }
    }
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// An object's members or an array's elements as slices of the text: (the key's raw JSON
/// string, objects only; the value).
type Members<'a> = Vec<(Option<&'a str>, &'a str)>;

/// The members at the top of `json` and whether it is an object; None for a scalar.
fn members(json: &str) -> Option<(bool, Members<'_>)> {
    let b = json.as_bytes();
    let start = skip_space(b, 0);
    let object = match b.get(start) {
        Some(b'{') => true,
        Some(b'[') => false,
        _ => return None,
    };
    let mut out = Vec::new();
    let mut i = skip_space(b, start + 1);
    while i < b.len() && !matches!(b[i], b'}' | b']') {
        let mut key = None;
        if object {
            let end = value_end(b, i);
            key = Some(&json[i..end]);
            i = skip_space(b, end);
            i = skip_space(b, i + 1); // the ':'
        }
        let end = value_end(b, i);
        out.push((key, &json[i..end]));
        i = skip_space(b, end);
        if b.get(i) == Some(&b',') {
            i = skip_space(b, i + 1);
        }
    }
    Some((object, out))
}

/// An object's members (keys unescaped) or an array's elements, in order and duplicates
/// included, as json_each and json_array_elements give them, and whether it is an
/// object; None for a scalar.
#[allow(clippy::type_complexity)]
pub fn entries(json: &str) -> PgResult<Option<(bool, Vec<(Option<String>, &str)>)>> {
    let Some((object, members)) = members(json) else {
        return Ok(None);
    };
    let entries = (members.into_iter())
        .map(|(key, value)| Ok((key.map(unescape).transpose()?, value)))
        .collect::<PgResult<_>>()?;
    Ok(Some((object, entries)))
}

/// A JSON string's characters; 22P05 for `\u0000`, which text cannot hold.
fn unescape(raw: &str) -> PgResult<String> {
    let s: String = serde_json::from_str(raw).map_err(|e| PgError::internal(e.to_string()))?;
    if s.contains('\0') {
        return Err(PgError::new(
            codes::UNTRANSLATABLE_CHARACTER,
            "unsupported Unicode escape sequence",
        )
        .with_detail("\\u0000 cannot be converted to text."));
    }
    Ok(s)
}

/// `json -> key`: the last field named `key` of an object.
pub fn field<'a>(json: &'a str, key: &str) -> PgResult<Option<&'a str>> {
    let Some((true, members)) = members(json) else {
        return Ok(None);
    };
    let mut found = None;
    for (raw_key, value) in members {
        let raw_key = raw_key.unwrap_or_default();
        let same = if raw_key.contains('\\') {
            unescape(raw_key)? == key
        } else {
            raw_key.get(1..raw_key.len() - 1) == Some(key)
        };
        if same {
            found = Some(value);
        }
    }
    Ok(found)
}

/// `json -> index`: an array's element, counted from the end when negative.
pub fn element(json: &str, index: i64) -> Option<&str> {
    let Some((false, members)) = members(json) else {
        return None;
    };
    let at = if index < 0 {
        members.len() as i64 + index
    } else {
        index
    };
    usize::try_from(at)
        .ok()
        .and_then(|at| members.get(at))
        .map(|(_, value)| *value)
}

/// `json #> path`: keys into objects, integers into arrays; a NULL step, a key that is
/// not an integer where an array is, or a step into a scalar give NULL. An empty path is
/// the whole value.
pub fn path<'a>(json: &'a str, path: &[Option<&str>]) -> PgResult<Option<&'a str>> {
    let mut at = json.trim_matches(|c: char| c.is_ascii_whitespace());
    for step in path {
        let Some(step) = step else { return Ok(None) };
        let next = match at.as_bytes().first() {
            Some(b'{') => field(at, step)?,
            Some(b'[') => step.trim().parse::<i64>().ok().and_then(|i| element(at, i)),
            _ => None,
        };
        match next {
            Some(next) => at = next,
            None => return Ok(None),
        }
    }
    Ok(Some(at))
}

/// `->>` and `#>>`: a string's characters, NULL for JSON null, other values as written.
pub fn as_text(value: &str) -> PgResult<Option<String>> {
    let value = value.trim_matches(|c: char| c.is_ascii_whitespace());
    Ok(match value.as_bytes().first() {
        Some(b'"') => Some(unescape(value)?),
        _ if value == "null" => None,
        _ => Some(value.to_string()),
    })
}

/// json_typeof.
pub fn type_name(json: &str) -> &'static str {
    match json.trim_start().as_bytes().first() {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "boolean",
        Some(b'n') => "null",
        _ => "number",
    }
}

/// json_array_length.
pub fn array_length(json: &str) -> PgResult<i32> {
    match members(json) {
        Some((false, members)) => Ok(members.len() as i32),
        found => Err(PgError::new(
            codes::INVALID_PARAMETER_VALUE,
            if found.is_none() {
                "cannot get array length of a scalar"
            } else {
                "cannot get array length of a non-array"
            },
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_keep_the_text_as_written() {
        let j = r#" { "a" : [1,  {"b" : "x\"y"} ] , "a\u0062": null, "a": 2 } "#;
        assert_eq!(field(j, "a").unwrap(), Some("2"));
        assert_eq!(field(j, "ab").unwrap(), Some("null"));
        assert_eq!(field(j, "zz").unwrap(), None);
        let arr = r#"[1,  {"b" : "x\"y"} ]"#;
        assert_eq!(element(arr, 1), Some(r#"{"b" : "x\"y"}"#));
        assert_eq!(element(arr, -2), Some("1"));
        assert_eq!(element(arr, 2), None);
        let p = path(arr, &[Some("1"), Some("b")]).unwrap().unwrap();
        assert_eq!(as_text(p).unwrap().as_deref(), Some("x\"y"));
        assert_eq!(path(arr, &[Some("x")]).unwrap(), None);
        assert_eq!(path(arr, &[]).unwrap(), Some(arr));
        assert_eq!(as_text("null").unwrap(), None);
        assert_eq!(type_name(arr), "array");
        assert_eq!(array_length(arr).unwrap(), 2);
        assert!(array_length("{}").is_err());
    }
}
