//! SQL front end (see README.md): text → parsed statement → bound plan, and the
//! evaluator for bound expressions. No I/O: execution against data lives in the
//! coordinator, which calls `eval` for expressions.

pub mod acl;
pub mod binder;
mod builtin_operators;
pub mod catalog;
pub mod copy;
mod ctas_columns;
pub mod deparse;
pub mod distribute_by;
mod drop_index;
pub mod enum_type;
pub mod eval;
pub mod explain;
pub mod functions;
pub mod grant;
pub mod index;
pub mod information_schema;
pub mod normalize;
pub mod parse;
pub mod plan;
mod prepared_xact;
pub mod pushdown;
pub mod role;
pub mod sequence;
pub mod statement_shape;
pub mod subquery;
pub mod system_tables;
mod tokens;
mod unsupported_syntax;
pub mod view;

pub use catalog::{Catalog, ColumnDef, TableDef};
pub use plan::*;
