//! The text set-returning functions in FROM: regexp_matches, regexp_split_to_table and
//! string_to_table, each the `unnest` of an array: of the matches (`ScalarFunc::
//! RegexpMatches`, a list of text[] values), of regexp_split_to_table's pieces, of
//! string_to_array's elements. A NULL argument gives no rows, as these functions are
//! strict in PostgreSQL (string_to_table's delimiter and null string excepted).

use super::*;
use crate::functions::regexp::{MATCHES, SPLIT_TO_TABLE};

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
        let array = match name {
            "regexp_matches" => MATCHES,
            "regexp_split_to_table" => SPLIT_TO_TABLE,
            _ => "string_to_array",
        };
        let array = self.call_scalar(array, args)?;
        let (rel, scope) = super::unnest::unnest_rel(name, vec![array], None, alias);
        Ok(Some((rel, scope)))
    }
}
