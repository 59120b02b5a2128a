//! Binding of the query forms that psql's and drivers' catalog queries use: WITH
//! [RECURSIVE], subscripts, string_agg, unnest, reg* casts.

use sql::binder::bind;
use sql::catalog::Catalog;
use sql::functions::{AggFunc, ScalarFunc};
use sql::parse::parse;
use sql::{Rel, Statement, TableDef};
use std::sync::Arc;
use types::DataType;

struct NoTables;

impl Catalog for NoTables {
    fn table(&self, _schema: Option<&str>, _name: &str) -> Option<Arc<TableDef>> {
        None
    }
    fn table_by_oid(&self, _oid: u32) -> Option<Arc<TableDef>> {
        None
    }
}

fn bind_query(sql: &str) -> sql::Query {
    let stmts = parse(sql).unwrap_or_else(|e| panic!("parse {sql}: {}", e.message));
    match bind(&stmts[0], &NoTables, &[])
        .unwrap_or_else(|e| panic!("bind {sql}: {}", e.message))
        .0
        .statement
    {
        Statement::Query(q) => q,
        other => panic!("{other:?}"),
    }
}

fn bind_error(sql: &str) -> String {
    let stmts = parse(sql).unwrap();
    bind(&stmts[0], &NoTables, &[])
        .map(|_| ())
        .unwrap_err()
        .message
}

fn contains(rel: &Rel, pred: &dyn Fn(&Rel) -> bool) -> bool {
    if pred(rel) {
        return true;
    }
    match rel {
        Rel::Filter { input, .. }
        | Rel::Project { input, .. }
        | Rel::Aggregate { input, .. }
        | Rel::Sort { input, .. }
        | Rel::Limit { input, .. }
        | Rel::Distinct { input }
        | Rel::Unique { input, .. }
        | Rel::WindowAgg { input, .. } => contains(input, pred),
        Rel::Join { left, right, .. } | Rel::Union { left, right, .. } => {
            contains(left, pred) || contains(right, pred)
        }
        Rel::RecursiveUnion {
            base, recursive, ..
        } => contains(base, pred) || contains(recursive, pred),
        _ => false,
    }
}

#[test]
fn with_recursive_binds_to_a_recursive_union() {
    let q = bind_query("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT n FROM t ORDER BY n DESC");
    assert_eq!(q.columns.len(), 1);
    assert_eq!(q.columns[0].name, "n");
    assert_eq!(q.columns[0].ty, DataType::Int4);
    assert!(contains(&q.root, &|r| matches!(
        r,
        Rel::RecursiveUnion { all: true, .. }
    )));
    assert!(contains(
        &q.root,
        &|r| matches!(r, Rel::RecursiveUnion { recursive, .. } if contains(recursive, &|w| matches!(w, Rel::WorkTable { width: 1, .. })))
    ));
}

#[test]
fn plain_with_is_inlined_and_scoped() {
    let q = bind_query("WITH a AS (SELECT 1 AS x, 'y' AS y) SELECT a.y, x FROM a");
    assert_eq!(
        q.columns
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["y", "x"]
    );
    assert_eq!(q.columns[0].ty, DataType::Text);
    // the CTE is not visible outside its query
    assert!(
        bind_error("SELECT (WITH a AS (SELECT 1) SELECT 1), * FROM a").contains("does not exist")
    );
    assert!(bind_error("WITH a(p, q) AS (SELECT 1) SELECT 1")
        .contains("has 1 columns available but 2 columns specified"));
}

#[test]
fn subscripts_string_agg_and_unnest() {
    let q = bind_query("SELECT (ARRAY[10, 20])[2]");
    assert_eq!(q.columns[0].ty, DataType::Int4);
    let q = bind_query("SELECT string_agg(x, ', ') FROM unnest(ARRAY['a', 'b']) x");
    assert_eq!(q.columns[0].ty, DataType::Text);
    assert!(contains(
        &q.root,
        &|r| matches!(r, Rel::Aggregate { aggs, .. } if aggs[0].func == AggFunc::StringAgg)
    ));
    let q = bind_query("SELECT x FROM pg_catalog.unnest(ARRAY[1, 2]) x");
    assert_eq!(q.columns[0].ty, DataType::Int4);
    // an aggregate inside a scalar subquery does not make the outer query aggregate
    let q = bind_query("SELECT oid, (SELECT count(*) FROM pg_class) FROM pg_type");
    assert_eq!(q.columns.len(), 2);
}

#[test]
fn reg_casts() {
    let q = bind_query("SELECT 23::regtype::text, '16602'::regclass, 'pg_catalog.array_in'::regproc, 'int4'::regtype");
    match &q.root {
        Rel::Project { exprs, .. } => {
            assert!(
                matches!(
                    &exprs[0],
                    sql::Expr::Func {
                        func: ScalarFunc::RegtypeText,
                        ..
                    }
                ),
                "{:?}",
                exprs[0]
            );
            assert!(matches!(
                &exprs[1],
                sql::Expr::Const(types::Value::Oid(16602), DataType::RegClass)
            ));
            assert!(matches!(
                &exprs[2],
                sql::Expr::Const(types::Value::Oid(750), DataType::RegProc)
            ));
            assert!(matches!(
                &exprs[3],
                sql::Expr::Const(types::Value::Oid(23), DataType::RegType)
            ));
        }
        other => panic!("{other:?}"),
    }
    let q = bind_query("SELECT pg_relation_is_publishable('16602'), to_regtype('text')");
    assert_eq!(q.columns[0].ty, DataType::Bool);
    assert_eq!(q.columns[1].ty, DataType::RegType);
}

#[test]
fn show_transaction_isolation_level_is_named_like_postgres() {
    let stmts = parse("show transaction isolation level").unwrap();
    let (stmt, _) = bind(&stmts[0], &NoTables, &[]).unwrap();
    assert_eq!(stmt.output_columns()[0].name, "transaction_isolation");
}
