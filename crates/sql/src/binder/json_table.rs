//! jsonb's set-returning functions in FROM (jsonb_array_elements(_text),
//! jsonb_object_keys, jsonb_each(_text)): the `unnest` of each output column's array
//! (`ScalarFunc::JsonbSetColumn`, which also gives PostgreSQL's error for a document of
//! the wrong kind).

use super::*;

impl<'a> Binder<'a> {
    /// The relation and scope of one of jsonb's set-returning functions, if `name` is one.
    pub(super) fn json_table_function(
        &mut self,
        name: &str,
        args: &[ast::FunctionArg],
        alias: &Option<ast::TableAlias>,
    ) -> PgResult<Option<(Rel, Scope)>> {
        use DataType::{Jsonb, Text};
        // (output column, what JsonbSetColumn gives for it, its type)
        let columns: &[(&str, &str, DataType)] = match name {
            "jsonb_array_elements" => &[("value", "value", Jsonb)],
            "jsonb_array_elements_text" => &[("value", "value_text", Text)],
            "jsonb_object_keys" => &[("jsonb_object_keys", "key", Text)],
            "jsonb_each" => &[("key", "key", Text), ("value", "value", Jsonb)],
            "jsonb_each_text" => &[("key", "key", Text), ("value", "value_text", Text)],
            _ => return Ok(None),
        };
        let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))] = args else {
            return Err(PgError::new(
                codes::UNDEFINED_FUNCTION,
                format!("function {name} with these arguments does not exist"),
            ));
        };
        let doc = self.expr(e, &Scope::default())?;
        let doc = cast_to(self.infer_param(doc, &Jsonb), &Jsonb)?;
        let arrays = (columns.iter())
            .map(|(_, column, ty)| json_set_column(&doc, name, column, ty))
            .collect();
        // jsonb_object_keys returns a scalar; the others OUT columns
        let names: Vec<&str> = columns.iter().map(|(name, _, _)| *name).collect();
        let names = (name != "jsonb_object_keys").then_some(names.as_slice());
        let (rel, scope) = super::unnest::unnest_rel(name, arrays, names, alias);
        Ok(Some((rel, scope)))
    }
}

/// The array of one column of jsonb set-returning function `function`'s rows over `doc`.
fn json_set_column(doc: &Expr, function: &str, column: &str, ty: &DataType) -> Expr {
    let text = |s: &str| const_expr(Value::Text(s.to_string()), DataType::Text);
    Expr::Func {
        func: ScalarFunc::JsonbSetColumn,
        args: vec![doc.clone(), text(function), text(column)],
        ty: DataType::Array(Box::new(ty.clone())),
    }
}
