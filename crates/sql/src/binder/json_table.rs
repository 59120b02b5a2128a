//! jsonb's set-returning functions in FROM (jsonb_array_elements(_text),
//! jsonb_object_keys, jsonb_each(_text)), built as `unnest` is: a generate_series over
//! the positions of the document's elements or pairs, projected through
//! `ScalarFunc::JsonbSetItem`; `ScalarFunc::JsonbSetCount` gives their number (and
//! PostgreSQL's error for a document of the wrong kind).

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
        // (output column, what JsonbSetItem gives for it, its type)
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
        let text = |s: &str| const_expr(Value::Text(s.to_string()), Text);
        let stop = Expr::Func {
            func: ScalarFunc::JsonbSetCount,
            args: vec![doc.clone(), text(name)],
            ty: DataType::Int4,
        };
        let series = Rel::GenerateSeries {
            start: const_expr(Value::Int4(1), DataType::Int4),
            stop,
            step: None,
        };
        let position = Expr::Column {
            depth: 0,
            index: 0,
            ty: DataType::Int4,
        };
        let exprs = columns
            .iter()
            .map(|(_, item, ty)| Expr::Func {
                func: ScalarFunc::JsonbSetItem,
                args: vec![doc.clone(), position.clone(), text(item)],
                ty: ty.clone(),
            })
            .collect();
        let rel = Rel::Project {
            input: Box::new(series),
            exprs,
        };
        if name == "jsonb_object_keys" {
            return Ok(Some((rel, function_scope(name, alias, Text))));
        }
        // named output columns: the alias's column list renames them, its name qualifies
        let renamed: Vec<String> = alias
            .iter()
            .flat_map(|a| a.columns.iter().map(|c| ident_name(&c.name)))
            .collect();
        let qualifier = alias
            .as_ref()
            .map_or_else(|| name.to_string(), |a| ident_name(&a.name));
        let scope = Scope {
            columns: columns
                .iter()
                .enumerate()
                .map(|(i, (column, _, ty))| ScopeColumn {
                    qualifier: Some(qualifier.clone()),
                    name: renamed
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| column.to_string()),
                    ty: ty.clone(),
                    table_oid: 0,
                    attnum: 0,
                    merged_away: false,
                    scalar_function: false,
                    system: false,
                })
                .collect(),
        };
        Ok(Some((rel, scope)))
    }
}
