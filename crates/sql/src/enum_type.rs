//! CREATE TYPE … AS ENUM, ALTER TYPE … ADD VALUE and DROP TYPE as the binder gives them
//! to the coordinator, which keeps the types as catalog records (decision 0043).

use pgerror::{codes, PgError, PgResult};
use sqlparser::ast;
use types::enums::check_label;
use types::{DataType, Value};

/// `CREATE TYPE name AS ENUM ('label', …)`.
#[derive(Debug, Clone)]
pub struct CreateEnum {
    pub name: String,
    pub labels: Vec<String>,
}

/// `ALTER TYPE name ADD VALUE [IF NOT EXISTS] 'label' [BEFORE | AFTER 'neighbour']`.
#[derive(Debug, Clone)]
pub struct AddEnumValue {
    pub name: String,
    pub label: String,
    pub if_not_exists: bool,
    pub position: NewLabelPosition,
}

/// Where ADD VALUE puts its label.
#[derive(Debug, Clone)]
pub enum NewLabelPosition {
    Last,
    Before(String),
    After(String),
}

impl NewLabelPosition {
    pub fn as_position(&self) -> types::enums::LabelPosition<'_> {
        use types::enums::LabelPosition as P;
        match self {
            NewLabelPosition::Last => P::Last,
            NewLabelPosition::Before(n) => P::Before(n),
            NewLabelPosition::After(n) => P::After(n),
        }
    }
}

/// An enum label: a string literal, as PostgreSQL's grammar has it.
fn label(id: &ast::Ident) -> PgResult<String> {
    if id.quote_style != Some('\'') {
        return Err(PgError::new(
            codes::SYNTAX_ERROR,
            format!("syntax error at or near \"{}\"", id.value),
        ));
    }
    Ok(id.value.clone())
}

pub(crate) fn create_enum(name: String, labels: &[ast::Ident]) -> PgResult<CreateEnum> {
    let labels = labels.iter().map(label).collect::<PgResult<Vec<_>>>()?;
    for l in &labels {
        check_label(l)?;
    }
    Ok(CreateEnum { name, labels })
}

pub(crate) fn add_value(name: String, add: &ast::AlterTypeAddValue) -> PgResult<AddEnumValue> {
    let new = label(&add.value)?;
    check_label(&new)?;
    Ok(AddEnumValue {
        name,
        label: new,
        if_not_exists: add.if_not_exists,
        position: match &add.position {
            None => NewLabelPosition::Last,
            Some(ast::AlterTypeAddValuePosition::Before(n)) => NewLabelPosition::Before(label(n)?),
            Some(ast::AlterTypeAddValuePosition::After(n)) => NewLabelPosition::After(label(n)?),
        },
    })
}

/// `enum_first(e)`, `enum_last(e)` and `enum_range(e)`: they read only their argument's
/// type (PostgreSQL's callers pass `NULL::type`), so they are constants once bound.
pub(crate) fn type_function(
    name: &str,
    arg_types: &[DataType],
) -> Option<PgResult<(Value, DataType)>> {
    let [ty @ DataType::Enum(e)] = arg_types else {
        return None;
    };
    let mut values = e.values();
    let end = match name {
        "enum_first" => values.drain(..).next(),
        "enum_last" => values.pop(),
        "enum_range" => {
            return Some(Ok((
                Value::Array(values),
                DataType::Array(Box::new(ty.clone())),
            )))
        }
        _ => return None,
    };
    Some(end.map(|v| (v, ty.clone())).ok_or_else(|| {
        PgError::new(
            codes::OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("enum {} contains no values", e.name),
        )
    }))
}

/// `ALTER TYPE name RENAME VALUE 'from' TO 'to'`.
#[derive(Debug, Clone)]
pub struct RenameEnumValue {
    pub name: String,
    pub from: String,
    pub to: String,
}

pub(crate) fn rename_value(
    name: String,
    rename: &ast::AlterTypeRenameValue,
) -> PgResult<RenameEnumValue> {
    let to = label(&rename.to)?;
    check_label(&to)?;
    Ok(RenameEnumValue {
        name,
        from: label(&rename.from)?,
        to,
    })
}
