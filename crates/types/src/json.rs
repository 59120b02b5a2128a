//! `json` and `jsonb` values (docs/decisions/0039-json.md).
//!
//! `json` is its text, kept as given once it parses (`validate`). `jsonb` is a `Jsonb`
//! tree normalised as PostgreSQL's jsonb: object keys ordered by length then bytes (the
//! last of duplicate keys wins), numbers as `numeric`. Text output, containment,
//! ordering, paths and edits follow PostgreSQL 15's jsonb.c / jsonfuncs.c; the text is
//! parsed by serde_json (with `arbitrary_precision`, so numbers keep their digits).

use crate::numeric::{self, Numeric};
use pgerror::{codes, PgError, PgResult};
use std::cmp::Ordering;

/// SQLSTATE 22P05 untranslatable_character.
const UNTRANSLATABLE_CHARACTER: &str = "22P05";
/// SQLSTATE 54001 statement_too_complex.
const STATEMENT_TOO_COMPLEX: &str = "54001";

/// A jsonb value. Objects hold their pairs in PostgreSQL's storage order (`key_order`),
/// each key once.
#[derive(Debug, Clone, PartialEq)]
pub enum Jsonb {
    Null,
    Bool(bool),
    Number(Numeric),
    String(String),
    Array(Vec<Jsonb>),
    Object(Vec<(String, Jsonb)>),
}

fn syntax_error(e: &serde_json::Error) -> PgError {
    PgError::new(
        codes::INVALID_TEXT_REPRESENTATION,
        "invalid input syntax for type json",
    )
    .with_detail(format!("{e}."))
}

/// json_in: the text must be one JSON value.
pub fn validate(s: &str) -> PgResult<()> {
    serde_json::from_str::<serde::de::IgnoredAny>(s)
        .map(drop)
        .map_err(|e| syntax_error(&e))
}

/// jsonb_in.
pub fn parse(s: &str) -> PgResult<Jsonb> {
    let v: serde_json::Value = serde_json::from_str(s).map_err(|e| syntax_error(&e))?;
    from_serde(v)
}

fn from_serde(v: serde_json::Value) -> PgResult<Jsonb> {
    use serde_json::Value as J;
    let text = |s: String| {
        if s.contains('\0') {
            // jsonb holds text, and text cannot hold NUL
            return Err(PgError::new(
                UNTRANSLATABLE_CHARACTER,
                "unsupported Unicode escape sequence",
            )
            .with_detail("\\u0000 cannot be converted to text."));
        }
        Ok(s)
    };
    Ok(match v {
        J::Null => Jsonb::Null,
        J::Bool(b) => Jsonb::Bool(b),
        J::Number(n) => Jsonb::Number(number(&n.to_string())?),
        J::String(s) => Jsonb::String(text(s)?),
        J::Array(items) => {
            Jsonb::Array(items.into_iter().map(from_serde).collect::<PgResult<_>>()?)
        }
        J::Object(map) => Jsonb::object(
            map.into_iter()
                .map(|(k, v)| Ok((text(k)?, from_serde(v)?)))
                .collect::<PgResult<_>>()?,
        ),
    })
}

/// A JSON number's text as numeric.
fn number(s: &str) -> PgResult<Numeric> {
    numeric::parse(s).unwrap_or_else(|| {
        Err(PgError::new(
            codes::INVALID_TEXT_REPRESENTATION,
            "invalid input syntax for type json",
        ))
    })
}

/// The deepest nesting of arrays and objects serde_json reads (its recursion limit).
/// Stored jsonb is parsed again when read, so functions that build deeper documents
/// refuse them (`check_depth`) rather than store what could not be read back.
pub const MAX_DEPTH: usize = 127;

/// `j` if it is at most `MAX_DEPTH` deep, else 54001 (PostgreSQL's error when nesting
/// exhausts its stack).
pub fn check_depth(j: Jsonb) -> PgResult<Jsonb> {
    if j.depth() > MAX_DEPTH {
        return Err(
            PgError::new(STATEMENT_TOO_COMPLEX, "stack depth limit exceeded").with_detail(format!(
                "jsonb values are nested at most {MAX_DEPTH} levels deep in Meridian."
            )),
        );
    }
    Ok(j)
}

/// jsonb's key order: shorter keys first, then bytewise.
pub fn key_order(a: &str, b: &str) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

impl Jsonb {
    /// An object from pairs in any order; of duplicate keys the last one wins.
    pub fn object(mut pairs: Vec<(String, Jsonb)>) -> Jsonb {
        pairs.reverse(); // the stable sort keeps the last duplicate first
        pairs.sort_by(|a, b| key_order(&a.0, &b.0));
        pairs.dedup_by(|later, first| later.0 == first.0);
        Jsonb::Object(pairs)
    }

    /// Levels of arrays and objects (0 for a scalar).
    pub fn depth(&self) -> usize {
        match self {
            Jsonb::Array(items) => 1 + items.iter().map(Jsonb::depth).max().unwrap_or(0),
            Jsonb::Object(pairs) => 1 + pairs.iter().map(|(_, v)| v.depth()).max().unwrap_or(0),
            _ => 0,
        }
    }

    pub fn is_scalar(&self) -> bool {
        !matches!(self, Jsonb::Array(_) | Jsonb::Object(_))
    }

    /// jsonb_typeof.
    pub fn type_name(&self) -> &'static str {
        match self {
            Jsonb::Null => "null",
            Jsonb::Bool(_) => "boolean",
            Jsonb::Number(_) => "number",
            Jsonb::String(_) => "string",
            Jsonb::Array(_) => "array",
            Jsonb::Object(_) => "object",
        }
    }

    /// jsonb_out: `{"a": 1, "b": [1, 2]}`.
    pub fn to_text(&self) -> String {
        let mut p = Printer::new(false);
        p.top(self);
        p.out
    }

    /// jsonb_pretty: four spaces per level, PostgreSQL's line breaks.
    pub fn pretty(&self) -> String {
        let mut p = Printer::new(true);
        p.top(self);
        p.out
    }

    /// The text `->>` and `#>>` give: a string unquoted, null as SQL NULL (None).
    pub fn as_text(&self) -> Option<String> {
        match self {
            Jsonb::Null => None,
            Jsonb::String(s) => Some(s.clone()),
            other => Some(other.to_text()),
        }
    }

    /// `-> text`: an object's field.
    pub fn field(&self, key: &str) -> Option<&Jsonb> {
        match self {
            Jsonb::Object(pairs) => pairs
                .binary_search_by(|(k, _)| key_order(k, key))
                .ok()
                .map(|i| &pairs[i].1),
            _ => None,
        }
    }

    /// `-> int`: an array's element, negative indexes from the end; a scalar is the one
    /// element of its pseudo-array, as in PostgreSQL.
    pub fn element(&self, index: i64) -> Option<&Jsonb> {
        match self {
            Jsonb::Array(items) => items.get(resolve_index(index, items.len())?),
            Jsonb::Object(_) => None,
            scalar => (resolve_index(index, 1)? == 0).then_some(scalar),
        }
    }

    /// `#>`: follow a path of keys and array indexes (non-integer steps into an array,
    /// steps into a scalar and NULL steps give None).
    pub fn path(&self, path: &[Option<&str>]) -> Option<&Jsonb> {
        let mut at = self;
        for step in path {
            let step = (*step)?;
            at = match at {
                Jsonb::Object(_) => at.field(step)?,
                Jsonb::Array(items) => {
                    let i = step.trim().parse::<i64>().ok()?;
                    items.get(resolve_index(i, items.len())?)?
                }
                _ => return None,
            };
        }
        Some(at)
    }

    /// `@>`: PostgreSQL's JsonbDeepContains at the top level (an array contains a scalar
    /// that it has as an element; a scalar contains no array).
    pub fn contains(&self, other: &Jsonb) -> bool {
        match (self, other) {
            (Jsonb::Array(a), b) if b.is_scalar() => {
                a.iter().any(|x| x.is_scalar() && scalar_eq(x, b))
            }
            (a, b) if a.is_scalar() && b.is_scalar() => scalar_eq(a, b),
            _ => deep_contains(self, other),
        }
    }

    /// `?`: a top-level key, or a string element of a top-level array (or the scalar).
    pub fn exists(&self, key: &str) -> bool {
        match self {
            Jsonb::Object(_) => self.field(key).is_some(),
            Jsonb::Array(items) => items
                .iter()
                .any(|x| matches!(x, Jsonb::String(s) if s == key)),
            Jsonb::String(s) => s == key,
            _ => false,
        }
    }

    /// `||`: objects merge (the right side wins), anything else concatenates as arrays
    /// (a scalar is a one-element array, an object beside an array is one element).
    pub fn concat(self, other: Jsonb) -> Jsonb {
        match (self, other) {
            (Jsonb::Object(mut a), Jsonb::Object(b)) => {
                a.extend(b);
                Jsonb::object(a)
            }
            (a, b) => {
                let mut items = a.into_elements();
                items.extend(b.into_elements());
                Jsonb::Array(items)
            }
        }
    }

    fn into_elements(self) -> Vec<Jsonb> {
        match self {
            Jsonb::Array(items) => items,
            other => vec![other],
        }
    }

    /// `- text`: remove a key of an object, or the equal string elements of an array.
    pub fn delete_key(self, key: &str) -> PgResult<Jsonb> {
        Ok(match self {
            Jsonb::Object(mut pairs) => {
                pairs.retain(|(k, _)| k != key);
                Jsonb::Object(pairs)
            }
            Jsonb::Array(mut items) => {
                items.retain(|x| !matches!(x, Jsonb::String(s) if s == key));
                Jsonb::Array(items)
            }
            _ => return Err(invalid_parameter("cannot delete from scalar")),
        })
    }

    /// `- int`: remove an array element (negative from the end; out of range: unchanged).
    pub fn delete_index(self, index: i64) -> PgResult<Jsonb> {
        match self {
            Jsonb::Array(mut items) => {
                if let Some(i) = resolve_index(index, items.len()) {
                    items.remove(i);
                }
                Ok(Jsonb::Array(items))
            }
            Jsonb::Object(_) => Err(invalid_parameter(
                "cannot delete from object using integer index",
            )),
            _ => Err(invalid_parameter("cannot delete from scalar")),
        }
    }

    /// `#-`: remove what a path leads to (missing steps leave the value unchanged).
    pub fn delete_path(self, path: &[Option<&str>]) -> PgResult<Jsonb> {
        if self.is_scalar() {
            return Err(invalid_parameter("cannot delete path in scalar"));
        }
        let mut out = self;
        if !path.is_empty() {
            edit_path(&mut out, path, 1, &mut |_, _| Edit::Delete)?;
        }
        Ok(out)
    }

    /// jsonb_set(target, path, value, create_missing).
    pub fn set_path(self, path: &[Option<&str>], value: Jsonb, create: bool) -> PgResult<Jsonb> {
        if self.is_scalar() {
            return Err(invalid_parameter("cannot set path in scalar"));
        }
        let mut out = self;
        if !path.is_empty() {
            let mut value = Some(value);
            edit_path(
                &mut out,
                path,
                1,
                &mut |found, _| match (found, value.take()) {
                    (true, Some(v)) => Edit::Replace(v),
                    (false, Some(v)) if create => Edit::Insert(v),
                    _ => Edit::Keep,
                },
            )?;
        }
        Ok(out)
    }

    /// jsonb_strip_nulls: object fields whose value is null, at every level.
    pub fn strip_nulls(self) -> Jsonb {
        match self {
            Jsonb::Object(pairs) => Jsonb::Object(
                pairs
                    .into_iter()
                    .filter(|(_, v)| *v != Jsonb::Null)
                    .map(|(k, v)| (k, v.strip_nulls()))
                    .collect(),
            ),
            Jsonb::Array(items) => {
                Jsonb::Array(items.into_iter().map(Jsonb::strip_nulls).collect())
            }
            scalar => scalar,
        }
    }
}

fn invalid_parameter(message: &str) -> PgError {
    PgError::new(codes::INVALID_PARAMETER_VALUE, message)
}

/// An index into `len` elements, negative ones counted from the end.
fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let i = if index < 0 { len + index } else { index };
    (0..len).contains(&i).then_some(i as usize)
}

/// What `edit_path` does where the path ends: `found` says whether the last step exists.
enum Edit {
    Keep,
    Delete,
    Replace(Jsonb),
    /// A missing key or an index past either end: the value goes there.
    Insert(Jsonb),
}

/// Walks `path` from `at` (its step number `position`, 1-based, for errors) and applies
/// `edit` at its end, as PostgreSQL's setPath: a missing step before the last, or a
/// scalar on the way, leaves everything unchanged; an array step must be an integer.
fn edit_path(
    at: &mut Jsonb,
    path: &[Option<&str>],
    position: usize,
    edit: &mut dyn FnMut(bool, &Jsonb) -> Edit,
) -> PgResult<()> {
    let Some(step) = path[0] else {
        return Err(PgError::new(
            codes::NULL_VALUE_NOT_ALLOWED,
            format!("path element at position {position} is null"),
        ));
    };
    let last = path.len() == 1;
    match at {
        Jsonb::Object(pairs) => {
            let found = pairs.binary_search_by(|(k, _)| key_order(k, step));
            match (found, last) {
                (Ok(i), false) => edit_path(&mut pairs[i].1, &path[1..], position + 1, edit)?,
                (Ok(i), true) => match edit(true, &pairs[i].1) {
                    Edit::Delete => {
                        pairs.remove(i);
                    }
                    Edit::Replace(v) | Edit::Insert(v) => pairs[i].1 = v,
                    Edit::Keep => {}
                },
                (Err(i), true) => {
                    if let Edit::Insert(v) | Edit::Replace(v) = edit(false, &Jsonb::Null) {
                        pairs.insert(i, (step.to_string(), v));
                    }
                }
                (Err(_), false) => {}
            }
        }
        Jsonb::Array(items) => {
            let Ok(index) = step.trim().parse::<i64>() else {
                return Err(PgError::new(
                    codes::INVALID_TEXT_REPRESENTATION,
                    format!("path element at position {position} is not an integer: \"{step}\""),
                ));
            };
            let len = items.len() as i64;
            match resolve_index(index, items.len()) {
                Some(i) if !last => edit_path(&mut items[i], &path[1..], position + 1, edit)?,
                Some(i) => match edit(true, &items[i]) {
                    Edit::Delete => {
                        items.remove(i);
                    }
                    Edit::Replace(v) | Edit::Insert(v) => items[i] = v,
                    Edit::Keep => {}
                },
                None if last => {
                    if let Edit::Insert(v) = edit(false, &Jsonb::Null) {
                        if index < 0 && -index > len {
                            items.insert(0, v);
                        } else {
                            items.push(v);
                        }
                    }
                }
                None => {}
            }
        }
        _ => {}
    }
    Ok(())
}

/// Scalars equal as jsonb compares them (numbers by value).
fn scalar_eq(a: &Jsonb, b: &Jsonb) -> bool {
    nested_cmp(a, b) == Ordering::Equal
}

fn deep_contains(a: &Jsonb, b: &Jsonb) -> bool {
    match (a, b) {
        (Jsonb::Object(x), Jsonb::Object(y)) => {
            y.iter().all(|(k, vb)| match a.field(k) {
                None => false,
                Some(va) if vb.is_scalar() => va.is_scalar() && scalar_eq(va, vb),
                Some(va) => deep_contains(va, vb),
            }) && x.len() >= y.len()
        }
        (Jsonb::Array(x), Jsonb::Array(y)) => y.iter().all(|eb| {
            if eb.is_scalar() {
                x.iter().any(|ea| ea.is_scalar() && scalar_eq(ea, eb))
            } else {
                x.iter().any(|ea| deep_contains(ea, eb))
            }
        }),
        _ => false,
    }
}

/// Rank of a value's type in jsonb's order: null < string < number < boolean < array <
/// object.
fn rank(v: &Jsonb) -> u8 {
    match v {
        Jsonb::Null => 0,
        Jsonb::String(_) => 1,
        Jsonb::Number(_) => 2,
        Jsonb::Bool(_) => 3,
        Jsonb::Array(_) => 4,
        Jsonb::Object(_) => 5,
    }
}

/// PostgreSQL's compareJsonbContainers below the top level: by type; arrays and objects
/// by their size first, then element by element (objects: key, then value, in storage
/// order).
fn nested_cmp(a: &Jsonb, b: &Jsonb) -> Ordering {
    match (a, b) {
        (Jsonb::String(x), Jsonb::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Jsonb::Number(x), Jsonb::Number(y)) => x.cmp(y),
        (Jsonb::Bool(x), Jsonb::Bool(y)) => x.cmp(y),
        (Jsonb::Array(x), Jsonb::Array(y)) => x.len().cmp(&y.len()).then_with(|| {
            x.iter()
                .zip(y)
                .map(|(p, q)| nested_cmp(p, q))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        }),
        (Jsonb::Object(x), Jsonb::Object(y)) => x.len().cmp(&y.len()).then_with(|| {
            x.iter()
                .zip(y)
                .map(|((kp, vp), (kq, vq))| {
                    kp.as_bytes()
                        .cmp(kq.as_bytes())
                        .then_with(|| nested_cmp(vp, vq))
                })
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        }),
        _ => rank(a).cmp(&rank(b)),
    }
}

/// jsonb's btree order. A top-level scalar is a one-element "raw scalar" array: below any
/// real one-element array, above the empty array (PostgreSQL's historical quirk).
pub fn compare(a: &Jsonb, b: &Jsonb) -> Ordering {
    match (a, b) {
        (s, Jsonb::Array(items)) if s.is_scalar() => match items.len() {
            1 => Ordering::Less,
            n => 1.cmp(&n),
        },
        (Jsonb::Array(_), s) if s.is_scalar() => compare(b, a).reverse(),
        _ => nested_cmp(a, b),
    }
}

/// A memcomparable encoding of `compare`'s order (equal values, such as 1.0 and 1,
/// encode alike): a type byte, sizes before contents, strings escaped and terminated.
pub fn encode_key(v: &Jsonb, out: &mut Vec<u8>) {
    match v {
        Jsonb::Array(items) => {
            out.push(4);
            out.extend_from_slice(&(items.len() as u32).to_be_bytes());
            out.push(2); // a real array sorts after a raw scalar of the same size
            items.iter().for_each(|x| encode_nested(x, out));
        }
        Jsonb::Object(_) => encode_nested(v, out),
        scalar => {
            out.push(4);
            out.extend_from_slice(&1u32.to_be_bytes());
            out.push(1);
            encode_nested(scalar, out);
        }
    }
}

fn encode_nested(v: &Jsonb, out: &mut Vec<u8>) {
    out.push(rank(v));
    match v {
        Jsonb::Null => {}
        Jsonb::Bool(b) => out.push(*b as u8),
        Jsonb::Number(n) => crate::codec::key_numeric(out, n),
        Jsonb::String(s) => crate::codec::key_bytes(out, s.as_bytes()),
        Jsonb::Array(items) => {
            out.extend_from_slice(&(items.len() as u32).to_be_bytes());
            out.push(2);
            items.iter().for_each(|x| encode_nested(x, out));
        }
        Jsonb::Object(pairs) => {
            out.extend_from_slice(&(pairs.len() as u32).to_be_bytes());
            for (k, x) in pairs {
                crate::codec::key_bytes(out, k.as_bytes());
                encode_nested(x, out);
            }
        }
    }
}

/// PostgreSQL's escape_json.
pub fn escape_into(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// PostgreSQL's JsonbToCStringWorker, fed the iterator's events by a walk of the tree.
struct Printer {
    out: String,
    indent: bool,
    first: bool,
    level: usize,
    use_indent: bool,
    last_was_key: bool,
}

impl Printer {
    fn new(indent: bool) -> Printer {
        Printer {
            out: String::new(),
            indent,
            first: true,
            level: 0,
            use_indent: false,
            last_was_key: false,
        }
    }

    fn separator(&mut self) {
        if !self.first {
            self.out.push_str(if self.indent { "," } else { ", " });
        }
    }

    fn newline(&mut self, yes: bool) {
        if yes {
            self.out.push('\n');
            self.out.extend(std::iter::repeat_n(' ', self.level * 4));
        }
    }

    fn end_event(&mut self, after_key: bool) {
        self.use_indent = self.indent;
        self.last_was_key = after_key;
    }

    fn scalar(&mut self, v: &Jsonb) {
        match v {
            Jsonb::Null => self.out.push_str("null"),
            Jsonb::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Jsonb::Number(n) => self.out.push_str(&n.to_string()),
            Jsonb::String(s) => escape_into(&mut self.out, s),
            _ => {}
        }
    }

    fn top(&mut self, v: &Jsonb) {
        if v.is_scalar() {
            // a raw scalar: its pseudo-array prints nothing
            self.scalar(v);
        } else {
            self.container(v);
        }
    }

    fn container(&mut self, v: &Jsonb) {
        let (open, close) = match v {
            Jsonb::Array(_) => ('[', ']'),
            _ => ('{', '}'),
        };
        self.separator();
        self.newline(self.use_indent && !self.last_was_key);
        self.out.push(open);
        self.first = true;
        self.level += 1;
        self.end_event(false);
        match v {
            Jsonb::Array(items) => {
                for x in items {
                    if x.is_scalar() {
                        self.separator();
                        self.first = false;
                        self.newline(self.use_indent);
                        self.scalar(x);
                        self.end_event(false);
                    } else {
                        self.container(x);
                    }
                }
            }
            Jsonb::Object(pairs) => {
                for (k, x) in pairs {
                    self.separator();
                    self.first = true;
                    self.newline(self.use_indent);
                    escape_into(&mut self.out, k);
                    self.out.push_str(": ");
                    if x.is_scalar() {
                        self.first = false;
                        self.scalar(x);
                        self.end_event(false);
                    } else {
                        self.end_event(true);
                        self.container(x);
                    }
                }
            }
            _ => {}
        }
        self.level -= 1;
        self.newline(self.use_indent);
        self.out.push(close);
        self.first = false;
        self.end_event(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(s: &str) -> Jsonb {
        parse(s).unwrap()
    }

    #[test]
    fn normalises_as_postgresql() {
        assert_eq!(
            j(r#"{"bb":1,"a":[1,2.50,1e2],"b":{"x":null},"a":true}"#).to_text(),
            r#"{"a": true, "b": {"x": null}, "bb": 1}"#
        );
        assert_eq!(
            j("[1.0, -0, 1E-2, \"\\u00e9\\n\"]").to_text(),
            "[1.0, 0, 0.01, \"é\\n\"]"
        );
        assert_eq!(j(" \"x\" ").to_text(), "\"x\"");
        assert_eq!(j("[]").pretty(), "[\n]");
        assert_eq!(
            j(r#"{"a":[1,{}]}"#).pretty(),
            "{\n    \"a\": [\n        1,\n        {\n        }\n    ]\n}"
        );
        assert!(parse("{").is_err() && parse("\"\\u0000\"").is_err() && validate("[1,]").is_err());
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert_eq!(parse(&nested(MAX_DEPTH)).unwrap().depth(), MAX_DEPTH);
        assert!(parse(&nested(MAX_DEPTH + 1)).is_err());
        assert!(check_depth(Jsonb::Array(vec![parse(&nested(MAX_DEPTH)).unwrap()])).is_err());
    }

    #[test]
    fn orders_as_postgresql() {
        let sorted = [
            "[]",
            "null",
            "\"a\"",
            "1",
            "true",
            "[null]",
            "[1]",
            "[1, 2]",
            "{}",
            "{\"a\": 1}",
            "{\"b\": 1}",
            "{\"a\": 1, \"b\": 1}",
        ];
        for w in sorted.windows(2) {
            let (a, b) = (j(w[0]), j(w[1]));
            assert_eq!(compare(&a, &b), Ordering::Less, "{} < {}", w[0], w[1]);
            let (mut ka, mut kb) = (Vec::new(), Vec::new());
            encode_key(&a, &mut ka);
            encode_key(&b, &mut kb);
            assert!(ka < kb, "key {} < {}", w[0], w[1]);
        }
        assert_eq!(compare(&j("1.0"), &j("1")), Ordering::Equal);
    }
}
