//! CREATE TABLE … AS query [WITH [NO] DATA] and SELECT … INTO: the table's columns are
//! the query's (renamed by a column list), typed as PostgreSQL types them (a literal of
//! unknown type is text), with no primary key; its rows come from an INSERT of the same
//! query, carried as text and bound once the table exists.

use super::*;
use crate::catalog::Distribution;
use crate::distribute_by::DistributeBy;

impl<'a> Binder<'a> {
    pub(super) fn create_table_as(
        &mut self,
        ct: &ast::CreateTable,
        query: &ast::Query,
        distribute_by: Option<&DistributeBy>,
    ) -> PgResult<Statement> {
        if ct
            .columns
            .iter()
            .any(|c| !matches!(c.data_type, ast::DataType::Unspecified) || !c.options.is_empty())
            || !ct.constraints.is_empty()
        {
            return Err(syntax("CREATE TABLE AS takes column names only"));
        }
        let with_data = match &ct.with_data {
            None => true,
            Some(w) if w.statistics.is_none() => w.data,
            Some(_) => return Err(unsupported("WITH DATA AND STATISTICS")),
        };
        let names: Vec<String> = ct.columns.iter().map(|c| ident_name(&c.name)).collect();
        let name = user_object_name(&ct.name)?;
        self.table_as(
            name,
            ct.if_not_exists,
            &names,
            query,
            with_data,
            distribute_by,
        )
    }

    /// `SELECT … INTO [TABLE] name FROM …`: CREATE TABLE name AS the query without INTO.
    pub(super) fn select_into(&mut self, q: &ast::Query) -> PgResult<Option<Statement>> {
        let ast::SetExpr::Select(select) = q.body.as_ref() else {
            return Ok(None);
        };
        let Some(into) = &select.into else {
            return Ok(None);
        };
        if into.temporary || into.unlogged {
            return Err(unsupported("SELECT … INTO TEMPORARY or UNLOGGED"));
        }
        let name = match into.targets.as_slice() {
            [ast::Expr::Identifier(id)] => ident_name(id),
            [ast::Expr::CompoundIdentifier(ids)] => ids.last().map(ident_name).unwrap_or_default(),
            _ => return Err(syntax("syntax error at or near \"INTO\"")),
        };
        let mut query = q.clone();
        if let ast::SetExpr::Select(select) = query.body.as_mut() {
            select.into = None;
        }
        self.table_as(name, false, &[], &query, true, None)
            .map(Some)
    }

    fn table_as(
        &mut self,
        name: String,
        if_not_exists: bool,
        names: &[String],
        query: &ast::Query,
        with_data: bool,
        distribute_by: Option<&DistributeBy>,
    ) -> PgResult<Statement> {
        let bound = self.query(query)?;
        if names.len() > bound.columns.len() {
            return Err(syntax("too many column names were specified"));
        }
        let mut columns: Vec<ColumnDef> = bound
            .columns
            .iter()
            .map(|c| ColumnDef {
                name: c.name.clone(),
                ty: DataTypeDef::from_type(match &c.ty {
                    DataType::Unknown => &DataType::Text,
                    other => other,
                }),
                not_null: false,
                default: None,
                comment: None,
            })
            .collect();
        for (column, given) in columns.iter_mut().zip(names) {
            column.name = given.clone();
        }
        for (i, c) in columns.iter().enumerate() {
            if columns[..i].iter().any(|o| o.name == c.name) {
                return Err(PgError::new(
                    codes::DUPLICATE_COLUMN,
                    format!("column \"{}\" specified more than once", c.name),
                ));
            }
        }
        let distribution = match distribute_by {
            Some(clause) => super::ddl::distribution(clause, &columns)?,
            None => Distribution::default_for(&columns, None),
        };
        let rows = with_data.then(|| {
            let table = format!("\"{}\"", name.replace('"', "\"\""));
            format!("INSERT INTO {table} {query}")
        });
        Ok(Statement::CreateTableAs(Box::new(CreateTableAs {
            table: CreateTable {
                name,
                if_not_exists,
                columns,
                primary_key: None,
                fillfactor: None,
                distribution,
                sequences: Vec::new(),
                unique: Vec::new(),
                checks: Vec::new(),
                foreign_keys: Vec::new(),
            },
            rows,
        })))
    }
}
