//! The set-returning functions of jsonb and json in FROM (json(b)_array_elements(_text),
//! json(b)_object_keys, json(b)_each(_text)): the `unnest` of each output column's array
//! (`ScalarFunc::JsonbSetColumn` over a jsonb document, `JsonSetColumn` over a json
//! document's text, values as written; each also gives PostgreSQL's error for a document
//! of the wrong kind).

use super::*;

impl<'a> Binder<'a> {
    /// The relation and scope of one of jsonb's set-returning functions, if `name` is one.
    pub(super) fn json_table_function(
        &mut self,
        name: &str,
        args: &[ast::FunctionArg],
        alias: &Option<ast::TableAlias>,
    ) -> PgResult<Option<(Rel, Scope)>> {
        use DataType::Text;
        // json's functions are jsonb's over the document's text
        let (doc_ty, func, unprefixed) = if let Some(rest) = name.strip_prefix("jsonb_") {
            (DataType::Jsonb, ScalarFunc::JsonbSetColumn, rest)
        } else if let Some(rest) = name.strip_prefix("json_") {
            (DataType::Json, ScalarFunc::JsonSetColumn, rest)
        } else {
            return Ok(None);
        };
        let document = doc_ty.clone();
        // (output column, what the function's column array gives for it, its type)
        let columns: Vec<(&str, &str, DataType)> = match unprefixed {
            "array_elements" => vec![("value", "value", document)],
            "array_elements_text" => vec![("value", "value_text", Text)],
            "object_keys" => vec![(name, "key", Text)],
            "each" => vec![("key", "key", Text), ("value", "value", document)],
            "each_text" => vec![("key", "key", Text), ("value", "value_text", Text)],
            _ => return Ok(None),
        };
        let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))] = args else {
            return Err(PgError::new(
                codes::UNDEFINED_FUNCTION,
                format!("function {name} with these arguments does not exist"),
            ));
        };
        let doc = self.expr(e, &Scope::default())?;
        let doc = cast_to(self.infer_param(doc, &doc_ty), &doc_ty)?;
        let arrays = (columns.iter())
            .map(|(_, column, ty)| json_set_column(func, &doc, name, column, ty))
            .collect();
        // json(b)_object_keys returns a scalar; the others OUT columns
        let names: Vec<&str> = columns.iter().map(|(name, _, _)| *name).collect();
        let names = (unprefixed != "object_keys").then_some(names.as_slice());
        let (rel, scope) = super::unnest::unnest_rel(name, arrays, names, alias);
        Ok(Some((rel, scope)))
    }
}

/// The array of one column of json(b) set-returning function `function`'s rows over
/// `doc` (`func`: JsonbSetColumn or JsonSetColumn).
fn json_set_column(
    func: ScalarFunc,
    doc: &Expr,
    function: &str,
    column: &str,
    ty: &DataType,
) -> Expr {
    let text = |s: &str| const_expr(Value::Text(s.to_string()), DataType::Text);
    Expr::Func {
        func,
        args: vec![doc.clone(), text(function), text(column)],
        ty: DataType::Array(Box::new(ty.clone())),
    }
}
