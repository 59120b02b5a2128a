//! Name resolution and typing: parsed statements → bound `plan::Statement`s.
//!
//! Parameter types follow PostgreSQL: a `$n` whose type the client left unspecified takes
//! the type its context demands (`aid = $1` → the column's type, `abalance + $1` → the
//! other operand's, an INSERT target → the column's), else `text`.

use crate::catalog::{Catalog, ColumnDef, DataTypeDef, TableDef};
use crate::functions::{resolve_aggregate, resolve_scalar, ScalarFunc};
use crate::parse::{Parsed, ParsedStatement};
use crate::plan::*;
use crate::system_tables::{scan_columns, system_columns, system_table, system_table_oid};
use pgerror::{codes, PgError, PgResult};
use sqlparser::ast;
use std::sync::Arc;
use types::ops::{resolve_binary, BinaryOp, UnaryOp};
use types::{DataType, Value};

mod access;
mod blocking_pids;
mod casts;
mod check;
mod comment;
mod copy;
mod create_table_as;
mod ddl;
mod dml;
mod dml_join;
mod expr;
mod foreign_key;
mod index;
mod json_table;
mod locking;
mod options_table;
mod prepare;
mod privileges;
mod query;
mod select_srf;
mod sequence_relation;
mod serial;
mod text_table;
mod unnest;
mod view;
mod window;

pub use access::access_path;
use access::*;
pub use casts::cast_to;
use casts::*;
pub use check::{bind_check, rename_column};
use dml::*;
use expr::*;
pub use prepare::bind_execute_arguments;
use privileges::*;
use query::*;
use window::*;

/// A column visible to expressions at some level of the query.
#[derive(Debug, Clone)]
struct ScopeColumn {
    qualifier: Option<String>,
    name: String,
    ty: DataType,
    table_oid: u32,
    attnum: i16,
    /// The right side's copy of a `JOIN … USING` column: only a qualified name reaches
    /// it, and `*` leaves it out (the left side's copy stands for both).
    merged_away: bool,
    /// The only column of a function returning a scalar: its relation's name alone refers
    /// to it (PostgreSQL's whole-row reference of such a function is the value itself).
    scalar_function: bool,
    /// A system column (`tableoid` of a catalog): reached by its name only, never by `*`,
    /// NATURAL or USING.
    system: bool,
}

#[derive(Debug, Clone, Default)]
struct Scope {
    columns: Vec<ScopeColumn>,
}

/// State while binding the select list of an aggregating query: which AST expressions
/// are group keys and which aggregate calls have been collected.
struct AggContext {
    group_exprs: Vec<ast::Expr>,
    group_count: usize,
    aggs: Vec<AggCall>,
    agg_asts: Vec<ast::Expr>,
    /// Scope of the aggregation input (FROM clause).
    input_scope: Scope,
    /// The order the aggregates need their input rows in (`array_agg(x ORDER BY y)`,
    /// `array_agg(DISTINCT x)`): the input is sorted so, and all must agree.
    input_order: Option<Vec<SortKey>>,
}

pub struct Binder<'a> {
    catalog: &'a dyn Catalog,
    /// Parameter types: given by the client or inferred (Unknown until inferred).
    params: Vec<DataType>,
    /// Enclosing scopes (outermost first); the current scope is passed explicitly.
    outer: Vec<Scope>,
    /// How many query levels out the references of the query being bound (its nested
    /// queries included) reach: 0 if it is not correlated.
    escapes: usize,
    /// Common table expressions in scope (innermost last): name, bound relation, columns.
    ctes: Vec<(String, Rel, Vec<ScopeColumn>)>,
    /// The address of the statement's own query, the one query that may lock rows
    /// (`locking`): not a subquery, a WITH query or an INSERT's source.
    lockable: usize,
    /// Select-list items the binder appended (a locking query's key columns): not
    /// positions an ORDER BY may name.
    appended_items: usize,
    /// Where a window call met now may be bound.
    windows: WindowSlot,
    /// The tables and views the FROM clauses name (OIDs): what a view created from the
    /// statement's query depends on.
    reads: Vec<u32>,
    /// The views whose queries are being bound, innermost last (a view reading itself
    /// through OR REPLACE is refused, not expanded forever).
    expanding: Vec<u32>,
    /// The privileges the statement needs (`crate::acl`), checked when it runs.
    required: Vec<crate::acl::Required>,
    /// The owner of the view whose query is being bound: whose privileges its relations
    /// are checked against (None: the session's role).
    checked_as: Option<u32>,
}

/// Bind one parsed statement. `param_types` are the client's declared OIDs (0 = infer).
/// Returns the statement and the final parameter types.
pub fn bind(
    stmt: &ParsedStatement,
    catalog: &dyn Catalog,
    param_types: &[u32],
) -> PgResult<(BoundStatement, Vec<DataType>)> {
    let params = param_types
        .iter()
        .map(|&oid| {
            if oid == 0 {
                Ok(DataType::Unknown)
            } else {
                DataType::from_oid(oid).ok_or_else(|| unknown_type_oid(oid))
            }
        })
        .collect::<PgResult<Vec<_>>>()?;
    let mut binder = Binder::new(catalog, params);
    let mut bound = match &stmt.parsed {
        Parsed::Ready(s) => s.clone(),
        Parsed::Vacuum {
            tables,
            vacuum,
            analyze,
        } => {
            let tables = tables
                .iter()
                .map(|t| binder.table_by_name(&parse_object_name(t)))
                .collect::<PgResult<_>>()?;
            Statement::Vacuum {
                tables,
                vacuum: *vacuum,
                analyze: *analyze,
            }
        }
        Parsed::Sql(ast) => binder.statement(ast)?,
        Parsed::CreateTable {
            table,
            distribute_by,
        } => binder.create_table(table, Some(distribute_by))?,
        Parsed::Copy(copy) => binder.copy(copy)?,
    };
    if catalog.pushes_down() {
        crate::pushdown::push_down(&mut bound);
    }
    let params = binder
        .params
        .into_iter()
        .map(|t| {
            if t == DataType::Unknown {
                DataType::Text
            } else {
                t
            }
        })
        .collect();
    let required = binder.required;
    Ok((
        BoundStatement {
            statement: bound,
            required,
        },
        params,
    ))
}

fn unknown_type_oid(oid: u32) -> PgError {
    PgError::new(
        codes::UNDEFINED_OBJECT,
        format!("type with OID {oid} does not exist"),
    )
}

/// `schema.table` or `table`, unquoting and lower-casing unquoted parts.
pub fn parse_object_name(s: &str) -> Vec<String> {
    s.split('.')
        .map(|p| {
            if p.starts_with('"') {
                p.trim_matches('"').to_string()
            } else {
                p.to_ascii_lowercase()
            }
        })
        .collect()
}

/// PostgreSQL folds unquoted identifiers to lower case.
fn ident_name(id: &ast::Ident) -> String {
    if id.quote_style.is_some() {
        id.value.clone()
    } else {
        id.value.to_ascii_lowercase()
    }
}

/// `public_object_name` of an object a statement creates, drops or alters.
fn user_object_name(name: &ast::ObjectName) -> PgResult<String> {
    crate::catalog::public_object_name(object_name_parts(name))
}

/// `dropped_object_name` of each object a DROP statement names.
fn dropped_object_names(names: &[ast::ObjectName], if_exists: bool) -> PgResult<Vec<String>> {
    names
        .iter()
        .map(|n| crate::catalog::dropped_object_name(object_name_parts(n), if_exists))
        .collect()
}

pub(crate) fn object_name_parts(name: &ast::ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(id) => ident_name(id),
            other => other.to_string(),
        })
        .collect()
}

fn syntax(msg: impl Into<String>) -> PgError {
    PgError::new(codes::SYNTAX_ERROR, msg)
}

fn unsupported(what: impl std::fmt::Display) -> PgError {
    PgError::unsupported(what)
}

fn const_expr(v: Value, ty: DataType) -> Expr {
    Expr::Const(v, ty)
}

fn output_column(name: &str, ty: DataType) -> OutputColumn {
    OutputColumn {
        name: name.to_string(),
        ty,
        table_oid: 0,
        column_attr: 0,
    }
}

impl<'a> Binder<'a> {
    fn new(catalog: &'a dyn Catalog, params: Vec<DataType>) -> Self {
        Binder {
            catalog,
            params,
            outer: Vec::new(),
            escapes: 0,
            ctes: Vec::new(),
            lockable: 0,
            appended_items: 0,
            windows: WindowSlot::NotAllowed,
            reads: Vec::new(),
            expanding: Vec::new(),
            required: Vec::new(),
            checked_as: None,
        }
    }
}

impl<'a> Binder<'a> {
    fn statement(&mut self, stmt: &ast::Statement) -> PgResult<Statement> {
        use ast::Statement as S;
        match stmt {
            S::Query(q) => {
                if let Some(table_as) = self.select_into(q)? {
                    return Ok(table_as);
                }
                self.lockable = std::ptr::from_ref(q.as_ref()) as usize;
                Ok(Statement::Query(self.query(q)?))
            }
            S::Insert(ins) => self.insert(ins),
            S::Update(upd) => self.update(upd),
            S::Delete(del) => self.delete(del),
            S::CreateTable(ct) => self.create_table(ct, None),
            S::Drop {
                object_type,
                if_exists,
                names,
                cascade,
                ..
            } => match object_type {
                ast::ObjectType::Table => Ok(Statement::DropTable {
                    names: dropped_object_names(names, *if_exists)?,
                    if_exists: *if_exists,
                    cascade: *cascade,
                }),
                ast::ObjectType::View => Ok(Statement::DropView {
                    names: dropped_object_names(names, *if_exists)?,
                    if_exists: *if_exists,
                    cascade: *cascade,
                }),
                ast::ObjectType::Index => Ok(Statement::DropIndex {
                    names: dropped_object_names(names, *if_exists)?,
                    if_exists: *if_exists,
                }),
                ast::ObjectType::Type => Ok(Statement::DropType {
                    names: dropped_object_names(names, *if_exists)?,
                    if_exists: *if_exists,
                    cascade: *cascade,
                }),
                other => Err(unsupported(format!("DROP {other}"))),
            },
            S::Truncate(t) => {
                let tables = t
                    .table_names
                    .iter()
                    .map(|tn| self.altered_table(&object_name_parts(&tn.name)))
                    .collect::<PgResult<_>>()?;
                let cascade = matches!(t.cascade, Some(ast::CascadeOption::Cascade));
                let tables: Vec<Arc<TableDef>> = self.truncated_with_references(tables, cascade)?;
                for t in &tables {
                    self.require(crate::acl::Object::Table(t.clone()), crate::acl::TRUNCATE);
                }
                Ok(Statement::Truncate { tables })
            }
            S::AlterTable(at) => self.alter_table(at),
            S::Grant(_) | S::Revoke(_) => Ok(Statement::Grant(crate::grant::bind(stmt)?)),
            S::StartTransaction { .. } | S::Commit { .. } | S::Rollback { .. } => {
                Err(syntax(format!(
                    "syntax error at or near \"{}\"",
                    stmt.to_string().split_whitespace().nth(1).unwrap_or("")
                )))
            }
            S::CreateIndex(ci) => self.create_index(ci),
            S::CreateView(cv) => self.create_view(cv),
            S::CreateType {
                name,
                representation: Some(ast::UserDefinedTypeRepresentation::Enum { labels }),
            } => Ok(Statement::CreateEnum(crate::enum_type::create_enum(
                user_object_name(name)?,
                labels,
            )?)),
            S::AlterType(ast::AlterType {
                name,
                operation: ast::AlterTypeOperation::AddValue(add),
            }) => Ok(Statement::AddEnumValue(crate::enum_type::add_value(
                user_object_name(name)?,
                add,
            )?)),
            S::AlterType(ast::AlterType {
                name,
                operation: ast::AlterTypeOperation::RenameValue(rename),
            }) => Ok(Statement::RenameEnumValue(crate::enum_type::rename_value(
                user_object_name(name)?,
                rename,
            )?)),
            S::AlterType(ast::AlterType {
                name,
                operation: ast::AlterTypeOperation::Rename(rename),
            }) => Ok(Statement::RenameType {
                name: user_object_name(name)?,
                new_name: ident_name(&rename.new_name),
            }),
            S::CreateDatabase { .. } => Err(unsupported("CREATE DATABASE")),
            S::CreateRole(_) => Err(unsupported("CREATE ROLE")),
            S::CreateSchema { .. } => Err(unsupported("CREATE SCHEMA")),
            S::Comment {
                object_type,
                object_name,
                comment,
                if_exists,
            } => self.comment(object_type, object_name, comment, *if_exists),
            S::Explain {
                describe_alias: ast::DescribeAlias::Explain,
                analyze,
                statement,
                format,
                options,
                ..
            } => self.explain(*analyze, statement, format.as_ref(), options.as_deref()),
            S::Prepare {
                name,
                data_types,
                statement,
            } => self.prepare(name, data_types, statement),
            S::Execute {
                name: Some(name),
                parameters,
                immediate: false,
                into,
                using,
                ..
            } if into.is_empty() && using.is_empty() => Ok(Statement::Execute {
                name: object_name_parts(name).pop().unwrap_or_default(),
                args: parameters.clone(),
            }),
            S::Deallocate { name, .. } => Ok(Statement::Deallocate(Some(ident_name(name)))),
            other => {
                let word = other
                    .to_string()
                    .split_whitespace()
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(" ");
                Err(unsupported(format!("statement \"{word}\"")))
            }
        }
    }

    /// EXPLAIN [ANALYZE] [VERBOSE] statement, or EXPLAIN (option [value], …) statement.
    fn explain(
        &mut self,
        analyze: bool,
        stmt: &ast::Statement,
        format: Option<&ast::AnalyzeFormatKind>,
        options: Option<&[ast::UtilityOption]>,
    ) -> PgResult<Statement> {
        let is_text =
            |s: String| s.to_ascii_lowercase().trim_start_matches("format ").trim() == "text";
        let mut analyze = analyze;
        let (mut timing, mut summary) = (None, None);
        let mut text_format = format.is_none_or(|f| is_text(f.to_string()));
        for o in options.unwrap_or_default() {
            let on = o.arg.as_ref().is_none_or(|a| {
                !matches!(
                    a.to_string().to_ascii_lowercase().as_str(),
                    "false" | "off" | "0"
                )
            });
            match ident_name(&o.name).as_str() {
                "analyze" => analyze = on,
                "format" => text_format = o.arg.as_ref().is_some_and(|a| is_text(a.to_string())),
                "timing" => timing = Some(on),
                "summary" => summary = Some(on),
                "verbose" | "costs" | "settings" | "buffers" | "wal" => {}
                other => return Err(syntax(format!("unrecognized EXPLAIN option \"{other}\""))),
            }
        }
        if timing == Some(true) && !analyze {
            return Err(PgError::new(
                codes::INVALID_PARAMETER_VALUE,
                "EXPLAIN option TIMING requires ANALYZE",
            ));
        }
        let analyze = analyze.then(|| ExplainAnalyze {
            timing: timing.unwrap_or(true),
            summary: summary.unwrap_or(true),
        });
        if !text_format {
            return Err(unsupported("EXPLAIN formats other than TEXT"));
        }
        use ast::Statement as S;
        match stmt {
            S::Query(_) | S::Insert(_) | S::Update(_) | S::Delete(_) => {
                let bound = self.statement(stmt)?;
                // The plan printer shows an UPDATE's or DELETE's own scan, not a join.
                let joined = match &bound {
                    Statement::Update(u) => u.joined.is_some(),
                    Statement::Delete(d) => d.joined.is_some(),
                    _ => false,
                };
                if joined {
                    return Err(unsupported("EXPLAIN of UPDATE … FROM or DELETE … USING"));
                }
                Ok(Statement::Explain(Box::new(bound), analyze))
            }
            other => Err(syntax(format!(
                "syntax error at or near \"{}\"",
                other.to_string().split_whitespace().next().unwrap_or("")
            ))),
        }
    }

    // ---------------------------------------------------------------- tables

    /// The table a DDL statement (ALTER TABLE, TRUNCATE, CREATE INDEX … ON) changes: as
    /// `table_by_name`, but a schema that does not exist is named (3F000), as PostgreSQL
    /// names it for these statements.
    fn altered_table(&self, parts: &[String]) -> PgResult<Arc<TableDef>> {
        if let [.., schema, _] = parts {
            const SCHEMAS: [&str; 4] = ["public", "pg_catalog", "information_schema", "pg_toast"];
            if !SCHEMAS.contains(&schema.as_str()) {
                return Err(PgError::new(
                    codes::INVALID_SCHEMA_NAME,
                    format!("schema \"{schema}\" does not exist"),
                ));
            }
        }
        self.table_by_name(parts)
    }

    fn table_by_name(&self, parts: &[String]) -> PgResult<Arc<TableDef>> {
        let (schema, name) = match parts {
            [name] => (None, name.as_str()),
            [schema, name] => (Some(schema.as_str()), name.as_str()),
            [_, schema, name] => (Some(schema.as_str()), name.as_str()),
            _ => return Err(syntax("improper qualified name (too many dotted names)")),
        };
        self.catalog.table(schema, name).ok_or_else(|| {
            if self.catalog.view(name).is_some() {
                return PgError::unsupported(format!("changing the rows of view \"{name}\""));
            }
            PgError::new(
                codes::UNDEFINED_TABLE,
                format!("relation \"{}\" does not exist", parts.join(".")),
            )
        })
    }

    /// Resolve a FROM-clause name to a user table or a system catalog table.
    fn relation(&self, parts: &[String]) -> PgResult<(Rel, Vec<ScopeColumn>, String)> {
        let name = parts.last().cloned().unwrap_or_default();
        let schema = if parts.len() > 1 {
            Some(parts[parts.len() - 2].as_str())
        } else {
            None
        };
        let system = match schema {
            None | Some("pg_catalog") => system_table(&name),
            Some("information_schema") => {
                crate::information_schema::information_view(&name).map(SystemTable::Information)
            }
            Some(_) => None,
        };
        if let Some(sys) = system {
            let width = system_columns(sys).len();
            let cols = scan_columns(sys)
                .iter()
                .enumerate()
                .map(|(i, (n, t))| ScopeColumn {
                    qualifier: Some(name.clone()),
                    name: n.to_string(),
                    ty: t.clone(),
                    table_oid: system_table_oid(sys),
                    // PostgreSQL's TableOidAttributeNumber for `tableoid`.
                    attnum: if i < width { i as i16 + 1 } else { -6 },
                    merged_away: false,
                    scalar_function: false,
                    system: i >= width,
                })
                .collect();
            return Ok((Rel::System { table: sys }, cols, name));
        }
        let table = self.table_by_name(parts)?;
        let cols = table
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| ScopeColumn {
                qualifier: Some(table.name.clone()),
                name: c.name.clone(),
                ty: c.ty.to_type(),
                table_oid: table.oid,
                attnum: i as i16 + 1,
                merged_away: false,
                scalar_function: false,
                system: false,
            })
            .collect();
        Ok((
            Rel::Scan {
                table,
                access: Access::Full,
            },
            cols,
            name,
        ))
    }
}
