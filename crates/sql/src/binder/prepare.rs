//! SQL-level PREPARE and EXECUTE. The session keeps prepared statements (the same ones
//! the protocol's Parse makes), so binding only checks what PostgreSQL checks before it
//! looks them up; EXECUTE's arguments are bound once the parameter types are known.

use super::*;

impl<'a> Binder<'a> {
    /// `PREPARE name [(types)] AS statement`: only what PostgreSQL can prepare (SELECT,
    /// VALUES, INSERT, UPDATE, DELETE).
    pub(super) fn prepare(
        &mut self,
        name: &ast::Ident,
        data_types: &[ast::DataType],
        statement: &ast::Statement,
    ) -> PgResult<Statement> {
        let preparable = matches!(
            statement,
            ast::Statement::Query(_)
                | ast::Statement::Insert(_)
                | ast::Statement::Update(_)
                | ast::Statement::Delete(_)
        );
        if !preparable {
            let word = statement.to_string();
            let word = word.split_whitespace().next().unwrap_or("");
            return Err(PgError::new(
                codes::SYNTAX_ERROR,
                format!("syntax error at or near \"{word}\""),
            ));
        }
        let param_types = data_types
            .iter()
            .map(|t| self.data_type(t).map(|t| t.oid()))
            .collect::<PgResult<_>>()?;
        Ok(Statement::Prepare {
            name: ident_name(name),
            statement: Box::new(ParsedStatement {
                text: statement.to_string(),
                parsed: Parsed::Sql(Box::new(statement.clone())),
            }),
            param_types,
        })
    }
}

/// EXECUTE's arguments as assignments to the prepared statement's parameter types
/// (an untyped literal takes the parameter's type, as in PostgreSQL, which also ignores
/// arguments given to a statement without parameters).
pub fn bind_execute_arguments(
    name: &str,
    args: &[ast::Expr],
    types: &[DataType],
    catalog: &dyn Catalog,
) -> PgResult<Vec<Expr>> {
    if types.is_empty() {
        return Ok(Vec::new());
    }
    if args.len() != types.len() {
        return Err(PgError::new(
            codes::SYNTAX_ERROR,
            format!("wrong number of parameters for prepared statement \"{name}\""),
        )
        .with_detail(format!(
            "Expected {} parameters but got {}.",
            types.len(),
            args.len()
        )));
    }
    let mut binder = Binder::new(catalog, Vec::new());
    args.iter()
        .zip(types)
        .map(|(e, ty)| {
            let bound = binder.assign_expr(e, &Scope::default(), ty)?;
            if bound.has_subquery() {
                return Err(PgError::unsupported("subqueries in EXECUTE parameters"));
            }
            Ok(bound)
        })
        .collect()
}
