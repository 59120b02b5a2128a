//! `pg_options_to_table(options)`: the `name=value` items of an options array (reloptions,
//! attfdwoptions, …) as rows of (option_name, option_value), as pg_dump reads them. Bound
//! as `unnest` is: a projection over `generate_series(1, cardinality(options))` whose
//! columns are `split_part(options[n], '=', 1)` and the text after the first `=` (NULL
//! for an item without one, as in PostgreSQL).

use super::*;

impl Binder<'_> {
    /// The relation and scope of `pg_options_to_table(options)`.
    pub(super) fn options_table(
        &mut self,
        options: &ast::Expr,
        alias: &Option<ast::TableAlias>,
    ) -> PgResult<(Rel, Scope)> {
        let options = self.expr(options, &Scope::default())?;
        let options = cast_to(options, &DataType::Array(Box::new(DataType::Text)))?;
        let func = |func, args: Vec<Expr>, ty| Expr::Func { func, args, ty };
        let int = |v| const_expr(Value::Int4(v), DataType::Int4);
        // options[n], n the series' subscript (column 0 below the projection).
        let item = func(
            ScalarFunc::ArraySubscript,
            vec![
                options.clone(),
                Expr::Column {
                    depth: 0,
                    index: 0,
                    ty: DataType::Int4,
                },
            ],
            DataType::Text,
        );
        let equals = || const_expr(Value::Text("=".into()), DataType::Text);
        let name = func(
            ScalarFunc::SplitPart,
            vec![item.clone(), equals(), int(1)],
            DataType::Text,
        );
        let at = func(
            ScalarFunc::Strpos,
            vec![item.clone(), equals()],
            DataType::Int4,
        );
        let after = self.binary(BinaryOp::Add, at.clone(), int(1))?;
        let value = Expr::Case {
            operand: None,
            whens: vec![(
                self.binary(BinaryOp::Gt, at, int(0))?,
                func(ScalarFunc::Substr, vec![item, after], DataType::Text),
            )],
            otherwise: None,
            ty: DataType::Text,
        };
        let series = Rel::GenerateSeries {
            start: int(1),
            stop: func(ScalarFunc::Cardinality, vec![options], DataType::Int4),
            step: None,
        };
        let qualifier = alias.as_ref().map_or_else(
            || "pg_options_to_table".to_string(),
            |a| ident_name(&a.name),
        );
        let names = alias.as_ref().map_or(&[][..], |a| &a.columns[..]);
        let columns = ["option_name", "option_value"]
            .iter()
            .enumerate()
            .map(|(i, default)| ScopeColumn {
                qualifier: Some(qualifier.clone()),
                name: names
                    .get(i)
                    .map_or(default.to_string(), |c| ident_name(&c.name)),
                ty: DataType::Text,
                table_oid: 0,
                attnum: i as i16 + 1,
                merged_away: false,
                scalar_function: false,
                system: false,
            })
            .collect();
        Ok((
            Rel::Project {
                input: Box::new(series),
                exprs: vec![name, value],
            },
            Scope { columns },
        ))
    }
}
