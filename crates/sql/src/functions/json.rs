//! json and jsonb operators and functions (issue 31): `->`, `->>`, `#>`, `#>>`, `@>`,
//! `<@`, `?`, `?|`, `?&`, `||`, `-`, `#-` on jsonb; jsonb_build_object/array,
//! json_build_object/array, to_jsonb/to_json, jsonb_typeof, jsonb_array_length,
//! jsonb_extract_path(_text), jsonb_set, jsonb_strip_nulls, jsonb_pretty; on json, whose
//! results are slices of its text, `->`, `->>`, `#>`, `#>>`, json_extract_path(_text),
//! json_typeof and json_array_length. The value logic is `types::json` and
//! `types::json_text`.

use super::ScalarFunc as F;
use pgerror::{codes, PgError, PgResult};
use sqlparser::ast::BinaryOperator as B;
use types::datestyle::Style;
use types::json::{check_depth, escape_into, Jsonb};
use types::json_text;
use types::numeric::Numeric;
use types::timezone::Zone;
use types::{DataType, Value};

type Resolved = (F, Vec<DataType>, DataType);

fn text_array() -> DataType {
    DataType::Array(Box::new(DataType::Text))
}

fn no_operator(op: &B, l: &DataType, r: &DataType) -> PgError {
    PgError::new(
        codes::UNDEFINED_FUNCTION,
        format!(
            "operator does not exist: {} {op} {}",
            l.format_type_be(),
            r.format_type_be()
        ),
    )
    .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
}

/// The jsonb operator `op` on operands of types `l` and `r`, if it is one: (function,
/// operand types, result type). None leaves the operator to the general resolution.
pub fn resolve_operator(op: &B, l: &DataType, r: &DataType) -> PgResult<Option<Resolved>> {
    use DataType::*;
    let jsonish = |t: &DataType| matches!(t, Json | Jsonb);
    let json_only = matches!(
        op,
        B::Arrow
            | B::LongArrow
            | B::HashArrow
            | B::HashLongArrow
            | B::AtArrow
            | B::ArrowAt
            | B::Question
            | B::QuestionPipe
            | B::QuestionAnd
            | B::HashMinus
    );
    if !jsonish(l) && !jsonish(r) {
        return match (l, r) {
            (Unknown, Unknown) if json_only => Err(PgError::new(
                codes::AMBIGUOUS_FUNCTION,
                format!("operator is not unique: unknown {op} unknown"),
            )),
            // array containment is not implemented: the general refusal
            (Array(_), _) | (_, Array(_)) => Ok(None),
            _ if json_only => Err(no_operator(op, l, r)),
            _ => Ok(None),
        };
    }
    let string = |t: &DataType| t.is_string() || *t == Unknown;
    let int = |t: &DataType| matches!(t, Int2 | Int4);
    let text_array_or_unknown = |t: &DataType| match t {
        Unknown => true,
        Array(e) => e.is_string(),
        _ => false,
    };
    if *l == Json || *r == Json {
        // json has only the accessors, which return slices of its text
        let text = matches!(op, B::LongArrow | B::HashLongArrow);
        let result = if text { Text } else { Json };
        return match op {
            B::Arrow | B::LongArrow if *l == Json && string(r) => {
                let f = if text { F::JsonFieldText } else { F::JsonField };
                Ok(Some((f, vec![Json, Text], result)))
            }
            B::Arrow | B::LongArrow if *l == Json && int(r) => {
                let f = if text {
                    F::JsonElementText
                } else {
                    F::JsonElement
                };
                Ok(Some((f, vec![Json, Int4], result)))
            }
            B::HashArrow | B::HashLongArrow if *l == Json && text_array_or_unknown(r) => {
                let f = if text { F::JsonPathText } else { F::JsonPath };
                Ok(Some((f, vec![Json, text_array()], result)))
            }
            B::StringConcat => Err(PgError::unsupported(format!(
                "operator {op} on json (cast to jsonb)"
            ))),
            _ if json_only || *op == B::Minus => Err(no_operator(op, l, r)),
            _ => Ok(None),
        };
    }
    let jsonb_or_unknown = |t: &DataType| matches!(t, Jsonb | Unknown);
    let found = match op {
        B::Arrow | B::LongArrow if *l == Jsonb => {
            let text = *op == B::LongArrow;
            let result = if text { Text } else { Jsonb };
            if string(r) {
                let f = if text {
                    F::JsonbFieldText
                } else {
                    F::JsonbField
                };
                Some((f, vec![Jsonb, Text], result))
            } else if int(r) {
                let f = if text {
                    F::JsonbElementText
                } else {
                    F::JsonbElement
                };
                Some((f, vec![Jsonb, Int4], result))
            } else {
                None
            }
        }
        B::HashArrow | B::HashLongArrow if *l == Jsonb && text_array_or_unknown(r) => {
            Some(if *op == B::HashArrow {
                (F::JsonbPath, vec![Jsonb, text_array()], Jsonb)
            } else {
                (F::JsonbPathText, vec![Jsonb, text_array()], Text)
            })
        }
        B::AtArrow | B::ArrowAt if jsonb_or_unknown(l) && jsonb_or_unknown(r) => {
            let f = if *op == B::AtArrow {
                F::JsonbContains
            } else {
                F::JsonbContained
            };
            Some((f, vec![Jsonb, Jsonb], Bool))
        }
        B::Question if *l == Jsonb && string(r) => Some((F::JsonbExists, vec![Jsonb, Text], Bool)),
        B::QuestionPipe | B::QuestionAnd if *l == Jsonb && text_array_or_unknown(r) => {
            let f = if *op == B::QuestionPipe {
                F::JsonbExistsAny
            } else {
                F::JsonbExistsAll
            };
            Some((f, vec![Jsonb, text_array()], Bool))
        }
        B::StringConcat if jsonb_or_unknown(l) && jsonb_or_unknown(r) => {
            Some((F::JsonbConcat, vec![Jsonb, Jsonb], Jsonb))
        }
        // jsonb || text and text || jsonb are text concatenation (anynonarray || text)
        B::StringConcat => return Ok(None),
        B::Minus if *l == Jsonb && string(r) => Some((F::JsonbDeleteKey, vec![Jsonb, Text], Jsonb)),
        B::Minus if *l == Jsonb && int(r) => Some((F::JsonbDeleteIndex, vec![Jsonb, Int4], Jsonb)),
        B::Minus if *l == Jsonb && text_array_or_unknown(r) => {
            Some((F::JsonbDeleteKeys, vec![Jsonb, text_array()], Jsonb))
        }
        B::HashMinus if *l == Jsonb && text_array_or_unknown(r) => {
            Some((F::JsonbDeletePath, vec![Jsonb, text_array()], Jsonb))
        }
        // comparisons are the general ones (jsonb has a btree order)
        B::Eq | B::NotEq | B::Lt | B::LtEq | B::Gt | B::GtEq => return Ok(None),
        _ => None,
    };
    found.map(Some).ok_or_else(|| no_operator(op, l, r))
}

/// Resolve one of this module's functions by name and argument types.
pub fn resolve(name: &str, args: &[DataType]) -> Option<PgResult<Resolved>> {
    use DataType::*;
    let n = args.len();
    // untyped literals are text; a json argument would need its text kept (json_*) or
    // its type known at evaluation (jsonb_*, where it is a Value::Text like text's)
    let json_input = |t: &DataType| match t {
        Unknown => Ok(Text),
        Json => Err(PgError::unsupported(format!(
            "{name} of a json argument (cast it to jsonb)"
        ))),
        t => Ok(t.clone()),
    };
    let jsonb_first = n >= 1 && matches!(args[0], Jsonb | Unknown);
    let json_first = n >= 1 && matches!(args[0], Json | Unknown);
    // (json|jsonb)_extract_path(_text)(doc, VARIADIC text): the document, or its text
    let extract_path = |doc: DataType, as_doc: F, as_text: F| {
        let mut types = vec![doc.clone()];
        types.extend(std::iter::repeat_n(Text, n - 1));
        if name.ends_with("_text") {
            (as_text, types, Text)
        } else {
            (as_doc, types, doc)
        }
    };
    let found = match (name, n) {
        ("jsonb_build_object", _) | ("jsonb_build_array", _) | ("to_jsonb", 1) => {
            let f = match name {
                "jsonb_build_object" => F::JsonbBuildObject,
                "jsonb_build_array" => F::JsonbBuildArray,
                _ => F::ToJsonb,
            };
            let types = match args.iter().map(json_input).collect::<PgResult<Vec<_>>>() {
                Ok(types) => types,
                Err(e) => return Some(Err(e)),
            };
            (f, types, Jsonb)
        }
        ("json_build_object", _) | ("json_build_array", _) | ("to_json", 1) => {
            let f = match name {
                "json_build_object" => F::JsonBuildObject,
                "json_build_array" => F::JsonBuildArray,
                _ => F::ToJson,
            };
            let types = match args.iter().map(json_input).collect::<PgResult<Vec<_>>>() {
                Ok(types) => types,
                Err(e) => return Some(Err(e)),
            };
            (f, types, Json)
        }
        ("json_typeof", 1) if json_first => (F::JsonTypeof, vec![Json], Text),
        ("json_array_length", 1) if json_first => (F::JsonArrayLength, vec![Json], Int4),
        ("json_extract_path" | "json_extract_path_text", _) if n >= 2 && json_first => {
            extract_path(Json, F::JsonExtractPath, F::JsonExtractPathText)
        }
        ("jsonb_typeof", 1) if jsonb_first => (F::JsonbTypeof, vec![Jsonb], Text),
        ("jsonb_array_length", 1) if jsonb_first => (F::JsonbArrayLength, vec![Jsonb], Int4),
        ("jsonb_strip_nulls", 1) if jsonb_first => (F::JsonbStripNulls, vec![Jsonb], Jsonb),
        ("jsonb_pretty", 1) if jsonb_first => (F::JsonbPretty, vec![Jsonb], Text),
        ("jsonb_extract_path" | "jsonb_extract_path_text", _) if n >= 2 && jsonb_first => {
            extract_path(Jsonb, F::JsonbExtractPath, F::JsonbExtractPathText)
        }
        ("jsonb_set", 3 | 4) if jsonb_first => {
            let mut types = vec![Jsonb, text_array(), Jsonb];
            if n == 4 {
                types.push(Bool);
            }
            (F::JsonbSet, types, Jsonb)
        }
        _ => return None,
    };
    Some(Ok(found))
}

impl F {
    /// Functions that turn SQL values into json: a timestamptz is shown in the session's
    /// zone (`eval_zoned`).
    pub fn builds_json(self) -> bool {
        matches!(
            self,
            F::ToJsonb
                | F::ToJson
                | F::JsonbBuildObject
                | F::JsonbBuildArray
                | F::JsonBuildObject
                | F::JsonBuildArray
        )
    }
}

fn jsonb(v: &Value) -> PgResult<&Jsonb> {
    match v {
        Value::Jsonb(j) => Ok(j),
        other => Err(PgError::internal(format!("{other:?} is not jsonb"))),
    }
}

/// The text elements of a text[] path (None for NULL elements).
fn path_of(v: &Value) -> Vec<Option<&str>> {
    match v {
        Value::Array(items) => items.iter().map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn some_jsonb(j: Option<&Jsonb>) -> Value {
    j.map_or(Value::Null, |j| Value::Jsonb(Box::new(j.clone())))
}

fn some_text(j: Option<&Jsonb>) -> Value {
    j.and_then(Jsonb::as_text).map_or(Value::Null, Value::Text)
}

fn some_json(slice: Option<&str>) -> Value {
    slice.map_or(Value::Null, |s| Value::Text(s.to_string()))
}

fn some_json_text(slice: Option<&str>) -> PgResult<Value> {
    Ok(match slice {
        Some(s) => json_text::as_text(s)?.map_or(Value::Null, Value::Text),
        None => Value::Null,
    })
}

/// Evaluate one of the operators and pure functions; NULL arguments have been handled
/// by the caller.
pub fn eval(func: F, args: &[Value]) -> PgResult<Value> {
    let int = |i: usize| args[i].as_i64().unwrap_or(0);
    let text = |i: usize| args[i].as_str().unwrap_or("");
    let owned = |i: usize| jsonb(&args[i]).cloned();
    let boxed = |j: Jsonb| Value::Jsonb(Box::new(j));
    Ok(match func {
        F::JsonbField => some_jsonb(jsonb(&args[0])?.field(text(1))),
        F::JsonbFieldText => some_text(jsonb(&args[0])?.field(text(1))),
        F::JsonbElement => some_jsonb(jsonb(&args[0])?.element(int(1))),
        F::JsonbElementText => some_text(jsonb(&args[0])?.element(int(1))),
        F::JsonbPath => some_jsonb(jsonb(&args[0])?.path(&path_of(&args[1]))),
        F::JsonbPathText => some_text(jsonb(&args[0])?.path(&path_of(&args[1]))),
        F::JsonbExtractPath | F::JsonbExtractPathText => {
            let path: Vec<Option<&str>> = args[1..].iter().map(Value::as_str).collect();
            let found = jsonb(&args[0])?.path(&path);
            if func == F::JsonbExtractPath {
                some_jsonb(found)
            } else {
                some_text(found)
            }
        }
        F::JsonField => some_json(json_text::field(text(0), text(1))?),
        F::JsonFieldText => some_json_text(json_text::field(text(0), text(1))?)?,
        F::JsonElement => some_json(json_text::element(text(0), int(1))),
        F::JsonElementText => some_json_text(json_text::element(text(0), int(1)))?,
        F::JsonPath => some_json(json_text::path(text(0), &path_of(&args[1]))?),
        F::JsonPathText => some_json_text(json_text::path(text(0), &path_of(&args[1]))?)?,
        F::JsonExtractPath | F::JsonExtractPathText => {
            let path: Vec<Option<&str>> = args[1..].iter().map(Value::as_str).collect();
            let found = json_text::path(text(0), &path)?;
            if func == F::JsonExtractPath {
                some_json(found)
            } else {
                some_json_text(found)?
            }
        }
        F::JsonTypeof => Value::Text(json_text::type_name(text(0)).to_string()),
        F::JsonArrayLength => Value::Int4(json_text::array_length(text(0))?),
        F::JsonbContains => Value::Bool(jsonb(&args[0])?.contains(jsonb(&args[1])?)),
        F::JsonbContained => Value::Bool(jsonb(&args[1])?.contains(jsonb(&args[0])?)),
        F::JsonbExists => Value::Bool(jsonb(&args[0])?.exists(text(1))),
        F::JsonbExistsAny | F::JsonbExistsAll => {
            let j = jsonb(&args[0])?;
            let keys = path_of(&args[1]);
            let mut present = keys.iter().flatten().map(|k| j.exists(k));
            Value::Bool(if func == F::JsonbExistsAny {
                present.any(|p| p)
            } else {
                present.all(|p| p)
            })
        }
        F::JsonbConcat => boxed(check_depth(owned(0)?.concat(owned(1)?))?),
        F::JsonbDeleteKey => boxed(owned(0)?.delete_key(text(1))?),
        F::JsonbDeleteKeys => {
            let mut j = owned(0)?;
            for key in path_of(&args[1]).into_iter().flatten() {
                j = j.delete_key(key)?;
            }
            boxed(j)
        }
        F::JsonbDeleteIndex => boxed(owned(0)?.delete_index(int(1))?),
        F::JsonbDeletePath => boxed(owned(0)?.delete_path(&path_of(&args[1]))?),
        F::JsonbSet => {
            let create = args.get(3).and_then(Value::as_bool).unwrap_or(true);
            let set = owned(0)?.set_path(&path_of(&args[1]), owned(2)?, create)?;
            boxed(check_depth(set)?)
        }
        F::JsonbTypeof => Value::Text(jsonb(&args[0])?.type_name().to_string()),
        F::JsonbArrayLength => match jsonb(&args[0])? {
            Jsonb::Array(items) => Value::Int4(items.len() as i32),
            j => {
                return Err(PgError::new(
                    codes::INVALID_PARAMETER_VALUE,
                    if j.is_scalar() {
                        "cannot get array length of a scalar"
                    } else {
                        "cannot get array length of a non-array"
                    },
                ))
            }
        },
        F::JsonbStripNulls => boxed(owned(0)?.strip_nulls()),
        F::JsonbPretty => Value::Text(jsonb(&args[0])?.pretty()),
        F::JsonbSetColumn => {
            let doc = jsonb(&args[0])?;
            set_check(doc, text(1))?;
            let column = text(2);
            let item = |key: Option<&String>, value: &Jsonb| match column {
                "key" => key.map_or(Value::Null, |k| Value::Text(k.clone())),
                "value" => some_jsonb(Some(value)),
                _ => some_text(Some(value)),
            };
            Value::Array(match doc {
                Jsonb::Array(items) => items.iter().map(|v| item(None, v)).collect(),
                Jsonb::Object(pairs) => pairs.iter().map(|(k, v)| item(Some(k), v)).collect(),
                _ => Vec::new(),
            })
        }
        F::JsonSetColumn => {
            let function = text(1);
            let found = json_text::entries(text(0))?;
            json_set_check(found.as_ref().map(|(object, _)| *object), function)?;
            let column = text(2);
            let entries = found.map(|(_, entries)| entries).unwrap_or_default();
            Value::Array(
                (entries.into_iter())
                    .map(|(key, value)| match column {
                        "key" => Ok(key.map_or(Value::Null, Value::Text)),
                        "value" => Ok(Value::Text(value.to_string())),
                        _ => some_json_text(Some(value)),
                    })
                    .collect::<PgResult<_>>()?,
            )
        }
        other => {
            return Err(PgError::internal(format!(
                "{other:?} is not a json function"
            )))
        }
    })
}

/// PostgreSQL's 22023 where json_array_elements(_text), json_object_keys or
/// json_each(_text) (`function`) meets a document (`object`: Some(true) an object,
/// Some(false) an array, None a scalar) it does not take.
fn json_set_check(object: Option<bool>, function: &str) -> PgResult<()> {
    let message = match (object, function) {
        (Some(false), "json_array_elements" | "json_array_elements_text")
        | (Some(true), "json_object_keys" | "json_each" | "json_each_text") => return Ok(()),
        (Some(true), "json_array_elements" | "json_array_elements_text") => {
            format!("cannot call {function} on a non-array")
        }
        (None, "json_array_elements" | "json_array_elements_text" | "json_object_keys") => {
            format!("cannot call {function} on a scalar")
        }
        (Some(false), "json_object_keys") => format!("cannot call {function} on an array"),
        (Some(false), _) => "cannot deconstruct an array as an object".to_string(),
        (_, _) => "cannot deconstruct a scalar".to_string(),
    };
    Err(PgError::new(codes::INVALID_PARAMETER_VALUE, message))
}

/// PostgreSQL's 22023 where jsonb_array_elements(_text), jsonb_object_keys or
/// jsonb_each(_text) (`function`) meets a document `j` it does not take.
fn set_check(j: &Jsonb, function: &str) -> PgResult<()> {
    let refuse = |message: String| Err(PgError::new(codes::INVALID_PARAMETER_VALUE, message));
    match (j, function) {
        (Jsonb::Array(_), "jsonb_array_elements" | "jsonb_array_elements_text") => Ok(()),
        (Jsonb::Object(_), "jsonb_array_elements" | "jsonb_array_elements_text") => {
            refuse("cannot extract elements from an object".into())
        }
        (_, "jsonb_array_elements" | "jsonb_array_elements_text") => {
            refuse("cannot extract elements from a scalar".into())
        }
        (Jsonb::Object(_), _) => Ok(()),
        (Jsonb::Array(_), "jsonb_object_keys") => {
            refuse("cannot call jsonb_object_keys on an array".into())
        }
        (_, "jsonb_object_keys") => refuse("cannot call jsonb_object_keys on a scalar".into()),
        (_, each) => refuse(format!("cannot call {each} on a non-object")),
    }
}

/// Evaluate a function that builds json from SQL values (`builds_json`), with the
/// session's zone for timestamptz values. NULL arguments are json nulls (to_json and
/// to_jsonb of NULL are NULL).
pub fn eval_zoned(func: F, args: Vec<Value>, zone: &Zone) -> PgResult<Value> {
    // JSON writes dates and times in ISO form whatever DateStyle says; an interval as
    // its output function, in IntervalStyle.
    let style = Style {
        interval: zone.style().interval,
        ..Style::DEFAULT
    };
    let zone = &zone.clone().with_style(style);
    let is_object = matches!(func, F::JsonbBuildObject | F::JsonBuildObject);
    if is_object && args.len() % 2 == 1 {
        let name = if func == F::JsonbBuildObject {
            "jsonb_build_object"
        } else {
            "json_build_object"
        };
        return Err(PgError::new(
            codes::INVALID_PARAMETER_VALUE,
            "argument list must have even number of elements",
        )
        .with_hint(format!(
            "The arguments of {name}() must consist of alternating keys and values."
        )));
    }
    Ok(match func {
        F::ToJsonb | F::ToJson if args[0].is_null() => Value::Null,
        F::ToJsonb => Value::Jsonb(Box::new(check_depth(to_jsonb(&args[0], zone)?)?)),
        F::ToJson => Value::Text(to_json(&args[0], zone)?),
        F::JsonbBuildArray => Value::Jsonb(Box::new(check_depth(Jsonb::Array(
            args.iter()
                .map(|v| to_jsonb(v, zone))
                .collect::<PgResult<_>>()?,
        ))?)),
        F::JsonBuildArray => {
            let items = args
                .iter()
                .map(|v| to_json(v, zone))
                .collect::<PgResult<Vec<_>>>()?;
            Value::Text(format!("[{}]", items.join(", ")))
        }
        F::JsonbBuildObject => {
            let mut pairs = Vec::with_capacity(args.len() / 2);
            for (i, kv) in args.chunks(2).enumerate() {
                pairs.push((
                    object_key(&kv[0], i * 2 + 1, true, zone)?,
                    to_jsonb(&kv[1], zone)?,
                ));
            }
            Value::Jsonb(Box::new(check_depth(Jsonb::object(pairs))?))
        }
        F::JsonBuildObject => {
            let mut out = String::from("{");
            for (i, kv) in args.chunks(2).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                escape_into(&mut out, &object_key(&kv[0], i * 2 + 1, false, zone)?);
                out.push_str(" : ");
                out.push_str(&to_json(&kv[1], zone)?);
            }
            out.push('}');
            Value::Text(out)
        }
        other => return Err(PgError::internal(format!("{other:?} does not build json"))),
    })
}

/// The result of jsonb_agg, json_agg or jsonb_object_agg from the values they collected
/// (NULL for none).
pub fn finish_aggregate(func: super::AggFunc, items: Vec<Value>) -> PgResult<Value> {
    use super::AggFunc as A;
    if items.is_empty() {
        return Ok(Value::Null);
    }
    let element = |v: Value| match v {
        Value::Jsonb(j) => *j,
        _ => Jsonb::Null,
    };
    Ok(match func {
        A::JsonbAgg => Value::Jsonb(Box::new(check_depth(Jsonb::Array(
            items.into_iter().map(element).collect(),
        ))?)),
        A::JsonAgg => {
            let texts: Vec<String> = items
                .into_iter()
                .map(|v| match v {
                    Value::Text(s) => s,
                    _ => "null".to_string(),
                })
                .collect();
            Value::Text(format!("[{}]", texts.join(", ")))
        }
        A::JsonbObjectAgg => {
            let mut pairs = Vec::with_capacity(items.len());
            for item in items {
                let Value::Array(pair) = item else { continue };
                let mut pair = pair.into_iter();
                let key = pair.next().map(element).and_then(|k| k.as_text());
                let Some(key) = key else {
                    return Err(PgError::new(
                        codes::INVALID_PARAMETER_VALUE,
                        "field name must not be null",
                    ));
                };
                pairs.push((key, pair.next().map_or(Jsonb::Null, element)));
            }
            Value::Jsonb(Box::new(check_depth(Jsonb::object(pairs))?))
        }
        other => {
            return Err(PgError::internal(format!(
                "{other:?} is not a json aggregate"
            )))
        }
    })
}

/// An object key: a scalar's text (22023 for NULL, arrays and json).
fn object_key(v: &Value, position: usize, jsonb: bool, zone: &Zone) -> PgResult<String> {
    match v {
        Value::Null if jsonb => Err(PgError::new(
            codes::INVALID_PARAMETER_VALUE,
            format!("argument {position}: key must not be null"),
        )),
        Value::Null => Err(PgError::new(
            codes::INVALID_PARAMETER_VALUE,
            format!("argument {position} cannot be null"),
        )
        .with_hint("Object keys should be text.")),
        Value::Array(_) | Value::Jsonb(_) => Err(PgError::new(
            codes::INVALID_PARAMETER_VALUE,
            "key value must be scalar, not array, composite, or json",
        )),
        Value::Bool(b) => Ok(if *b { "true" } else { "false" }.to_string()),
        other => Ok(plain_text(other, zone)),
    }
}

fn plain_text(v: &Value, zone: &Zone) -> String {
    let mut out = Vec::new();
    types::io::to_text_in(v, &v.natural_type(), zone, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// A value as PostgreSQL's datum_to_jsonb makes it: numbers (NaN and infinities as
/// strings), booleans, date/time values in ISO 8601 ("XSD") form, arrays element by
/// element, anything else as the string of its text output.
fn to_jsonb(v: &Value, zone: &Zone) -> PgResult<Jsonb> {
    Ok(match v {
        Value::Null => Jsonb::Null,
        Value::Bool(b) => Jsonb::Bool(*b),
        Value::Int2(_) | Value::Int4(_) | Value::Int8(_) => {
            Jsonb::Number(Numeric::from(v.as_i64().unwrap_or(0)))
        }
        Value::Numeric(n) if n.is_finite() => Jsonb::Number(n.clone()),
        Value::Float4(_) | Value::Float8(_) => {
            let text = plain_text(v, zone);
            match types::numeric::parse(&text) {
                Some(Ok(n)) if n.is_finite() => Jsonb::Number(n),
                _ => Jsonb::String(text),
            }
        }
        Value::Jsonb(j) => (**j).clone(),
        Value::Array(items) => Jsonb::Array(
            items
                .iter()
                .map(|x| to_jsonb(x, zone))
                .collect::<PgResult<_>>()?,
        ),
        Value::Timestamp(_) | Value::TimestampTz(_) | Value::Date(_) => {
            Jsonb::String(iso_datetime(v, zone))
        }
        other => Jsonb::String(plain_text(other, zone)),
    })
}

/// A value as json text (datum_to_json): arrays without spaces, as array_to_json.
fn to_json(v: &Value, zone: &Zone) -> PgResult<String> {
    Ok(match v {
        Value::Array(items) => {
            let items = items
                .iter()
                .map(|x| to_json(x, zone))
                .collect::<PgResult<Vec<_>>>()?;
            format!("[{}]", items.join(","))
        }
        other => to_jsonb(other, zone)?.to_text(),
    })
}

/// Dates and timestamps in ISO 8601 form, as PostgreSQL's JsonEncodeDateTime: a `T`
/// between date and time, the offset with its minutes.
fn iso_datetime(v: &Value, zone: &Zone) -> String {
    let ty = v.natural_type();
    let mut text = plain_text(v, zone);
    if matches!(v, Value::Date(_)) || text.ends_with("infinity") {
        return text;
    }
    if let Some(at) = text.find(' ') {
        text.replace_range(at..at + 1, "T");
    }
    if matches!(ty, DataType::TimestampTz { .. }) {
        // "+05" → "+05:00"
        let bytes = text.as_bytes();
        let n = bytes.len();
        if n >= 3 && matches!(bytes[n - 3], b'+' | b'-') {
            text.push_str(":00");
        }
    }
    text
}
