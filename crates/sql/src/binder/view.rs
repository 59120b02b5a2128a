//! Views: CREATE VIEW bound (its query checked, its columns and the relations it reads
//! found), and a view named in FROM bound as a subquery of its stored query.

use super::*;
use crate::view::{CreateView, ViewColumn, ViewDef};

impl<'a> Binder<'a> {
    pub(super) fn create_view(&mut self, cv: &ast::CreateView) -> PgResult<Statement> {
        let ast::CreateView {
            or_alter,
            or_replace,
            materialized,
            secure,
            name,
            name_before_not_exists: _,
            columns,
            query,
            options,
            cluster_by,
            comment,
            with_no_schema_binding,
            if_not_exists,
            temporary,
            copy_grants,
            to,
            params,
        } = cv;
        if *materialized {
            return Err(unsupported("CREATE MATERIALIZED VIEW"));
        }
        if *temporary {
            return Err(unsupported("CREATE TEMPORARY VIEW"));
        }
        if *options != ast::CreateTableOptions::None {
            return Err(unsupported("view options (WITH (…))"));
        }
        let foreign = *or_alter
            || *secure
            || !cluster_by.is_empty()
            || comment.is_some()
            || *with_no_schema_binding
            || *if_not_exists
            || *copy_grants
            || to.is_some()
            || params.is_some()
            || columns
                .iter()
                .any(|c| c.data_type.is_some() || c.options.is_some());
        if foreign {
            return Err(syntax(format!("syntax error in \"{cv}\"")));
        }
        self.reads.clear();
        let bound = self.query(query)?;
        // The view's owner needs SELECT on what it reads when the view is read, not now.
        self.take_required();
        // The stored text is bound again wherever the view is used, with no values for
        // parameters.
        if !self.params.is_empty() {
            return Err(PgError::new(
                codes::UNDEFINED_PARAMETER,
                "there is no parameter $1",
            ));
        }
        if columns.len() > bound.columns.len() {
            return Err(syntax(
                "CREATE VIEW specifies more column names than columns",
            ));
        }
        let mut view_columns: Vec<ViewColumn> = bound
            .columns
            .iter()
            .map(|c| ViewColumn {
                name: c.name.clone(),
                ty: DataTypeDef::from_type(&known(&c.ty)),
            })
            .collect();
        for (column, given) in view_columns.iter_mut().zip(columns) {
            column.name = ident_name(&given.name);
        }
        for (i, c) in view_columns.iter().enumerate() {
            if view_columns[..i].iter().any(|o| o.name == c.name) {
                return Err(PgError::new(
                    codes::DUPLICATE_COLUMN,
                    format!("column \"{}\" specified more than once", c.name),
                ));
            }
        }
        let mut reads = std::mem::take(&mut self.reads);
        reads.sort_unstable();
        reads.dedup();
        Ok(Statement::CreateView(CreateView {
            name: user_object_name(name)?,
            or_replace: *or_replace,
            columns: view_columns,
            query: query.to_string(),
            reads,
        }))
    }

    /// The view a FROM item names, if it names one.
    pub(super) fn view_named(&self, parts: &[String]) -> Option<Arc<ViewDef>> {
        match parts {
            [name] => self.catalog.view(name),
            [schema, name] if schema == "public" => self.catalog.view(name),
            _ => None,
        }
    }

    /// A view in FROM: its query bound afresh, in a scope of its own (neither the
    /// enclosing query's columns nor its WITH queries are visible to it), with the
    /// view's column names.
    pub(super) fn view_rel(&mut self, view: &Arc<ViewDef>) -> PgResult<(Rel, Vec<ScopeColumn>)> {
        if self.expanding.contains(&view.oid) {
            return Err(PgError::new(
                codes::INVALID_OBJECT_DEFINITION,
                format!(
                    "infinite recursion detected in rules for relation \"{}\"",
                    view.name
                ),
            ));
        }
        self.reads.push(view.oid);
        self.require(crate::acl::Object::View(view.clone()), crate::acl::SELECT);
        let query = crate::view::parse_query(&view.query)?;
        let outer = std::mem::take(&mut self.outer);
        let ctes = std::mem::take(&mut self.ctes);
        let reads = std::mem::take(&mut self.reads);
        self.expanding.push(view.oid);
        let bound = self.checked_as_owner(view.owner, |b| b.query_in(&query, &Scope::default()));
        self.expanding.pop();
        self.outer = outer;
        self.ctes = ctes;
        self.reads = reads;
        let bound = bound?;
        let width = view.columns.len();
        if bound.columns.len() < width {
            return Err(PgError::new(
                codes::UNDEFINED_COLUMN,
                format!(
                    "view \"{}\" reads columns its tables no longer have",
                    view.name
                ),
            ));
        }
        // A `*` in the query also reads the columns added to its tables since the view
        // was created; the view keeps the ones it had.
        let root = if bound.columns.len() > width {
            Rel::Project {
                input: Box::new(bound.root),
                exprs: (0..width)
                    .map(|index| Expr::Column {
                        depth: 0,
                        index,
                        ty: bound.columns[index].ty.clone(),
                    })
                    .collect(),
            }
        } else {
            bound.root
        };
        let columns = view
            .columns
            .iter()
            .zip(&bound.columns)
            .enumerate()
            .map(|(i, (c, b))| ScopeColumn {
                qualifier: Some(view.name.clone()),
                name: c.name.clone(),
                ty: known(&b.ty),
                table_oid: view.oid,
                attnum: i as i16 + 1,
                merged_away: false,
                scalar_function: false,
                system: false,
            })
            .collect();
        Ok((root, columns))
    }
}

/// A view's column of a literal of unknown type is text, as in PostgreSQL.
fn known(ty: &DataType) -> DataType {
    match ty {
        DataType::Unknown => DataType::Text,
        other => other.clone(),
    }
}
