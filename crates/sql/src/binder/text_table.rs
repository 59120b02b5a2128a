//! The text set-returning functions in FROM: regexp_matches, regexp_split_to_table and
//! string_to_table, built as `unnest` is: a generate_series over the positions of the
//! matches or pieces, projected through the n-th of them (`ScalarFunc::RegexpMatchesCount`
//! and `RegexpMatchesItem`; the elements of regexp_split_to_table's and string_to_array's
//! arrays). A NULL argument gives no rows, as these functions are strict in PostgreSQL
//! (string_to_table's delimiter and null string excepted). WITH ORDINALITY adds the
//! position.

use super::*;
use crate::functions::regexp::{MATCHES_COUNT, MATCHES_ITEM, SPLIT_TO_TABLE};

/// The text set-returning functions, in FROM here and in select lists
/// (`select_srf::lateral_sets`).
pub(super) const TEXT_SET_FUNCTIONS: [&str; 3] =
    ["regexp_matches", "regexp_split_to_table", "string_to_table"];

impl Binder<'_> {
    /// The relation and scope of one of the text set-returning functions, if `name` is one.
    pub(super) fn text_table_function(
        &mut self,
        name: &str,
        args: &[ast::FunctionArg],
        alias: &Option<ast::TableAlias>,
        ordinality: bool,
    ) -> PgResult<Option<(Rel, Scope)>> {
        if !TEXT_SET_FUNCTIONS.contains(&name) {
            return Ok(None);
        }
        let empty = Scope::default();
        let args = args
            .iter()
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => self.expr(e, &empty),
                _ => Err(unsupported(format!("named arguments of {name}"))),
            })
            .collect::<PgResult<Vec<_>>>()?;
        if !(2..=3).contains(&args.len()) {
            let shown: Vec<String> = args.iter().map(|a| a.ty().format_type()).collect();
            return Err(PgError::new(
                codes::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", shown.join(", ")),
            )
            .with_hint(
                "No function matches the given name and argument types. You might need to add explicit type casts.",
            ));
        }
        let position = Expr::Column {
            depth: 0,
            index: 0,
            ty: DataType::Int4,
        };
        let (stop, item) = if name == "regexp_matches" {
            let stop = self.call_scalar(MATCHES_COUNT, args.clone())?;
            let item = self.call_scalar(MATCHES_ITEM, [vec![position.clone()], args].concat())?;
            (stop, item)
        } else {
            let array = match name {
                "regexp_split_to_table" => SPLIT_TO_TABLE,
                _ => "string_to_array",
            };
            let array = self.call_scalar(array, args)?;
            let stop = Expr::Func {
                func: ScalarFunc::Cardinality,
                args: vec![array.clone()],
                ty: DataType::Int4,
            };
            let item = Expr::Func {
                func: ScalarFunc::ArraySubscript,
                args: vec![array, position.clone()],
                ty: DataType::Text,
            };
            (stop, item)
        };
        let ty = item.ty();
        let series = Rel::GenerateSeries {
            start: const_expr(Value::Int4(1), DataType::Int4),
            stop,
            step: None,
        };
        let mut exprs = vec![item];
        let mut scope = function_scope(name, alias, ty);
        if ordinality {
            // WITH ORDINALITY: the position, a bigint
            exprs.push(cast_to(position, &DataType::Int8)?);
            let mut column = scope.columns[0].clone();
            column.name = (alias.as_ref())
                .and_then(|a| a.columns.get(1))
                .map_or_else(|| "ordinality".to_string(), |c| ident_name(&c.name));
            column.ty = DataType::Int8;
            scope.columns.push(column);
        }
        let rel = Rel::Project {
            input: Box::new(series),
            exprs,
        };
        Ok(Some((rel, scope)))
    }
}
