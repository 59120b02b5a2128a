//! COPY FROM STDIN and COPY TO STDOUT: the copied table's columns or the query, and the
//! format (`crate::copy`).

use super::*;
use crate::copy::{CopySource, CopyStatement, ForceQuote};

impl<'a> Binder<'a> {
    pub(super) fn copy(&mut self, copy: &CopyStatement) -> PgResult<Statement> {
        let (mut format, force_quote) = crate::copy::format(&copy.options, copy.from)?;
        match &copy.source {
            CopySource::Table { name, columns } => {
                let table = self.table_by_name(&parse_object_name(name))?;
                let fields = copied_columns(&table, columns)?;
                if copy.from {
                    self.require(crate::acl::Object::Table(table.clone()), crate::acl::INSERT);
                    let targets = self.insert_targets(&table, &fields)?;
                    let checks = self.table_checks(&table)?;
                    let all: Vec<usize> = (0..table.columns.len()).collect();
                    let foreign_keys = self.foreign_keys(&table, Some(&all), None)?;
                    return Ok(Statement::CopyFrom(CopyFrom {
                        checks,
                        foreign_keys,
                        table,
                        fields: fields.len(),
                        targets,
                        format,
                    }));
                }
                let names: Vec<&str> = fields
                    .iter()
                    .map(|&i| table.columns[i].name.as_str())
                    .collect();
                format.force_quote = force_quote_flags(&force_quote, &names, |c| {
                    PgError::new(
                        codes::UNDEFINED_COLUMN,
                        format!(
                            "column \"{c}\" of relation \"{}\" does not exist",
                            table.name
                        ),
                    )
                })?;
                let select = format!(
                    "SELECT {} FROM {}",
                    names
                        .iter()
                        .map(|n| quote_identifier(n))
                        .collect::<Vec<_>>()
                        .join(", "),
                    quote_identifier(&table.name)
                );
                let query = match crate::parse::parse_statement(&select)?.parsed {
                    Parsed::Sql(s) => match *s {
                        ast::Statement::Query(q) => self.query(&q)?,
                        _ => return Err(PgError::internal("COPY: not a query")),
                    },
                    _ => return Err(PgError::internal("COPY: not a query")),
                };
                Ok(Statement::CopyTo(Box::new(CopyTo { query, format })))
            }
            CopySource::Query(parsed) => {
                let query = match &parsed.parsed {
                    Parsed::Sql(s) => match &**s {
                        ast::Statement::Query(q) => self.query(q)?,
                        ast::Statement::Insert(ast::Insert {
                            returning: None, ..
                        })
                        | ast::Statement::Update(ast::Update {
                            returning: None, ..
                        })
                        | ast::Statement::Delete(ast::Delete {
                            returning: None, ..
                        }) => {
                            return Err(PgError::new(
                                codes::FEATURE_NOT_SUPPORTED,
                                "COPY query must have a RETURNING clause",
                            ))
                        }
                        ast::Statement::Insert(_)
                        | ast::Statement::Update(_)
                        | ast::Statement::Delete(_) => {
                            return Err(PgError::unsupported("COPY (… RETURNING) TO"))
                        }
                        _ => return Err(syntax_error_in_copy()),
                    },
                    _ => return Err(syntax_error_in_copy()),
                };
                let names: Vec<&str> = query.columns.iter().map(|c| c.name.as_str()).collect();
                format.force_quote = force_quote_flags(&force_quote, &names, |c| {
                    PgError::new(
                        codes::UNDEFINED_COLUMN,
                        format!("column \"{c}\" does not exist"),
                    )
                })?;
                Ok(Statement::CopyTo(Box::new(CopyTo { query, format })))
            }
        }
    }
}

/// The table columns COPY names (all when none), in order, each once.
fn copied_columns(table: &TableDef, columns: &[String]) -> PgResult<Vec<usize>> {
    if columns.is_empty() {
        return Ok((0..table.columns.len()).collect());
    }
    let mut fields: Vec<usize> = Vec::with_capacity(columns.len());
    for n in columns {
        let i = table.column_index(n).ok_or_else(|| {
            PgError::new(
                codes::UNDEFINED_COLUMN,
                format!(
                    "column \"{n}\" of relation \"{}\" does not exist",
                    table.name
                ),
            )
        })?;
        if fields.contains(&i) {
            return Err(PgError::new(
                codes::DUPLICATE_COLUMN,
                format!("column \"{n}\" specified more than once"),
            ));
        }
        fields.push(i);
    }
    Ok(fields)
}

/// FORCE_QUOTE as a flag per copied field.
fn force_quote_flags(
    force: &ForceQuote,
    names: &[&str],
    unknown: impl Fn(&str) -> PgError,
) -> PgResult<Vec<bool>> {
    match force {
        ForceQuote::None => Ok(Vec::new()),
        ForceQuote::All => Ok(vec![true; names.len()]),
        ForceQuote::Columns(cols) => {
            let mut flags = vec![false; names.len()];
            for c in cols {
                let i = names
                    .iter()
                    .position(|n| n == c)
                    .ok_or_else(|| unknown(c))?;
                flags[i] = true;
            }
            Ok(flags)
        }
    }
}

fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn syntax_error_in_copy() -> PgError {
    PgError::new(codes::SYNTAX_ERROR, "syntax error at or near \"(\"")
}
