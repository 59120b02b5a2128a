//! `COMMENT ON {TABLE | VIEW | COLUMN} name IS {'text' | NULL}`: the object resolved
//! as PostgreSQL resolves it (a TABLE that is a view, or a VIEW that is a table, is
//! 42809; a missing one 42P01 or 42703). An empty comment removes it, as in PostgreSQL.
//! Comments on other kinds of objects are refused with 0A000 naming the kind.

use super::*;
use crate::plan::CommentTarget;

impl<'a> Binder<'a> {
    pub(super) fn comment(
        &self,
        object_type: &ast::CommentObject,
        name: &ast::ObjectName,
        comment: &Option<String>,
        if_exists: bool,
    ) -> PgResult<Statement> {
        if if_exists {
            return Err(syntax("syntax error at or near \"IF\""));
        }
        let parts = object_name_parts(name);
        let target = match object_type {
            ast::CommentObject::Table => match self.view_named(&parts) {
                Some(view) => return Err(wrong_object_type(&view.name, "a table")),
                None => CommentTarget::Table(self.altered_table(&parts)?),
            },
            ast::CommentObject::View => match self.view_named(&parts) {
                Some(view) => CommentTarget::View(view),
                None => {
                    let table = self.altered_table(&parts)?;
                    return Err(wrong_object_type(&table.name, "a view"));
                }
            },
            ast::CommentObject::Column => {
                let Some((column, relation)) = parts.split_last() else {
                    return Err(syntax("improper qualified name"));
                };
                if relation.is_empty() {
                    return Err(syntax(format!(
                        "column name must be qualified: \"{column}\""
                    )));
                }
                if self.view_named(relation).is_some() {
                    return Err(unsupported("COMMENT ON COLUMN of a view"));
                }
                let table = self.altered_table(relation)?;
                let index = table.column_index(column).ok_or_else(|| {
                    PgError::new(
                        codes::UNDEFINED_COLUMN,
                        format!(
                            "column \"{column}\" of relation \"{}\" does not exist",
                            table.name
                        ),
                    )
                })?;
                CommentTarget::Column(table, index)
            }
            other => return Err(unsupported(format!("COMMENT ON {other}"))),
        };
        Ok(Statement::Comment {
            target,
            comment: comment.clone().filter(|c| !c.is_empty()),
        })
    }
}

fn wrong_object_type(name: &str, kind: &str) -> PgError {
    PgError::new(
        codes::WRONG_OBJECT_TYPE,
        format!("\"{name}\" is not {kind}"),
    )
}
