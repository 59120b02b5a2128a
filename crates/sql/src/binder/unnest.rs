//! `unnest(a [, b …])` in FROM, WITH ORDINALITY for any function in FROM, and the
//! relations the other set-returning functions over a list of values are built as
//! (`text_table.rs`, `json_table.rs`, select lists through `select_srf.rs`): one
//! `Rel::Unnest` per array, which evaluates it once, side by side in a `Rel::RowsFrom`.

use super::*;

impl Binder<'_> {
    /// `unnest` of the arguments `args` in FROM.
    pub(super) fn unnest_function(
        &mut self,
        args: &[ast::FunctionArg],
        alias: &Option<ast::TableAlias>,
    ) -> PgResult<(Rel, Scope)> {
        let empty = Scope::default();
        let arrays = (args.iter())
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => self.expr(e, &empty),
                _ => Err(unsupported("named arguments of unnest")),
            })
            .collect::<PgResult<Vec<_>>>()?;
        if arrays.is_empty() || arrays.iter().any(|a| !matches!(a.ty(), DataType::Array(_))) {
            let shown: Vec<String> = arrays.iter().map(|a| a.ty().format_type()).collect();
            return Err(PgError::new(
                codes::UNDEFINED_FUNCTION,
                format!("function unnest({}) does not exist", shown.join(", ")),
            ));
        }
        Ok(unnest_rel("unnest", arrays, None, alias))
    }

    /// `select_srf::ROWS_FROM(f(…), g(…), …) AS s(c1, …)`, a select list's set-returning
    /// functions side by side: each argument a call of a function of one column.
    pub(super) fn rows_from(
        &mut self,
        args: &[ast::FunctionArg],
        alias: &Option<ast::TableAlias>,
    ) -> PgResult<(Rel, Scope)> {
        let mut functions = Vec::with_capacity(args.len());
        let mut scope = Scope::default();
        for arg in args {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Function(f))) = arg
            else {
                return Err(PgError::internal("ROWS FROM over something not a call"));
            };
            let ast::FunctionArguments::List(list) = &f.args else {
                return Err(PgError::internal("ROWS FROM over a call without arguments"));
            };
            let (rel, found) = self.function_rel(&object_name_parts(&f.name), &list.args, &None)?;
            functions.push(rel);
            scope.columns.extend(found.columns);
        }
        for (i, column) in scope.columns.iter_mut().enumerate() {
            column.qualifier = alias.as_ref().map(|a| ident_name(&a.name));
            column.scalar_function = false;
            if let Some(c) = alias.as_ref().and_then(|a| a.columns.get(i)) {
                column.name = ident_name(&c.name);
            }
        }
        let rel = Rel::RowsFrom {
            functions,
            ordinality: false,
        };
        Ok((rel, scope))
    }
}

/// `rel` (a function in FROM, with its `scope`) WITH ORDINALITY: its rows numbered in a
/// bigint column named by the alias's next column name, else `ordinality`.
pub(super) fn with_ordinality(
    rel: Rel,
    mut scope: Scope,
    alias: &Option<ast::TableAlias>,
) -> (Rel, Scope) {
    let mut column = scope.columns[0].clone();
    column.name = (alias.as_ref())
        .and_then(|a| a.columns.get(scope.columns.len()))
        .map_or_else(|| "ordinality".to_string(), |c| ident_name(&c.name));
    column.ty = DataType::Int8;
    column.scalar_function = false;
    scope.columns.push(column);
    scope.columns[0].scalar_function = false;
    let functions = match rel {
        Rel::RowsFrom {
            functions,
            ordinality: false,
        } => functions,
        other => vec![other],
    };
    let rel = Rel::RowsFrom {
        functions,
        ordinality: true,
    };
    (rel, scope)
}

/// The elements of `arrays` (of array types) side by side, and their scope: the
/// set-returning function `function`'s columns, named as PostgreSQL names them. A
/// function of one scalar column (`names` None, one array) names it by the alias's first
/// column name, else the alias, else the function's name; others by the alias's column
/// names, else `names` (the function's OUT parameters), else the function's name. Of one
/// column, the alias alone reads as the column's value, as in PostgreSQL.
pub(super) fn unnest_rel(
    function: &str,
    arrays: Vec<Expr>,
    names: Option<&[&str]>,
    alias: &Option<ast::TableAlias>,
) -> (Rel, Scope) {
    let types: Vec<DataType> = arrays
        .iter()
        .map(crate::plan::unnest_element_type)
        .collect();
    let scalar = names.is_none() && arrays.len() == 1;
    let mut scope = function_scope(function, alias, types[0].clone());
    scope.columns[0].scalar_function = arrays.len() == 1;
    let named = |i: usize| {
        (alias.as_ref()).and_then(|a| a.columns.get(i)).map_or_else(
            || {
                names
                    .and_then(|n| n.get(i).copied())
                    .unwrap_or(function)
                    .to_string()
            },
            |c| ident_name(&c.name),
        )
    };
    if !scalar {
        scope.columns[0].name = named(0);
    }
    for (i, ty) in types.iter().enumerate().skip(1) {
        let mut column = scope.columns[0].clone();
        column.name = named(i);
        column.ty = ty.clone();
        scope.columns.push(column);
    }
    let mut functions: Vec<Rel> = arrays
        .into_iter()
        .map(|array| Rel::Unnest { array })
        .collect();
    let rel = match functions.len() {
        1 => functions.remove(0),
        _ => Rel::RowsFrom {
            functions,
            ordinality: false,
        },
    };
    (rel, scope)
}
