//! Binding of CREATE TABLE's `DISTRIBUTE BY`, the default distribution, and the rule
//! that a primary key contains the hash column (CREATE TABLE and ALTER TABLE … ADD
//! PRIMARY KEY).

use pgerror::{codes, PgError};
use sql::binder::bind;
use sql::catalog::{Catalog, Distribution};
use sql::parse::parse;
use sql::{CreateTable, Statement, TableDef};
use std::sync::Arc;

/// A catalog holding the tables given (all in schema public).
struct Tables(Vec<Arc<TableDef>>);

impl Catalog for Tables {
    fn table(&self, _schema: Option<&str>, name: &str) -> Option<Arc<TableDef>> {
        self.0.iter().find(|t| t.name == name).cloned()
    }
    fn table_by_oid(&self, oid: u32) -> Option<Arc<TableDef>> {
        self.0.iter().find(|t| t.oid == oid).cloned()
    }
}

fn bind_with(catalog: &Tables, sql: &str) -> Result<Statement, PgError> {
    let stmts = parse(sql)?;
    bind(&stmts[0], catalog, &[]).map(|(s, _)| s.statement)
}

fn create(sql: &str) -> Result<CreateTable, PgError> {
    match bind_with(&Tables(Vec::new()), sql)? {
        Statement::CreateTable(ct) => Ok(ct),
        other => panic!("{other:?}"),
    }
}

fn distribution(sql: &str) -> Distribution {
    create(sql)
        .unwrap_or_else(|e| panic!("{sql}: {}", e.message))
        .distribution
}

/// The table a CREATE TABLE statement describes, as the catalog would hold it.
fn table(sql: &str) -> Arc<TableDef> {
    let ct = create(sql).unwrap();
    Arc::new(TableDef {
        oid: 16384,
        name: ct.name,
        columns: ct.columns,
        primary_key: ct.primary_key,
        pk_name: None,
        pk_index_oid: None,
        rel: 1,
        fillfactor: ct.fillfactor,
        distribution: ct.distribution,
        indexes: Vec::new(),
        checks: Vec::new(),
        foreign_keys: Vec::new(),
        acl: None,
        comment: None,
        owner: 10,
    })
}

#[test]
fn each_clause_is_recorded() {
    assert_eq!(
        distribution("CREATE TABLE t (a int, b text) DISTRIBUTE BY HASH (b)"),
        Distribution::Hash { column: 1 }
    );
    assert_eq!(
        distribution(
            "create table t (a int primary key) with (fillfactor = 90) distribute by replication"
        ),
        Distribution::Replication
    );
    assert_eq!(
        distribution("create table t (a int) distribute by roundrobin"),
        Distribution::RoundRobin
    );
    assert_eq!(
        distribution("create table t (\"A\" int, a int) distribute by hash (\"A\")"),
        Distribution::Hash { column: 0 }
    );
    let ct =
        create("create table t (a int) with (fillfactor = 70) distribute by hash (a)").unwrap();
    assert_eq!(ct.fillfactor, Some(70));
}

#[test]
fn the_default_follows_postgres_xl() {
    // The primary key's first column, wherever the key is declared.
    assert_eq!(
        distribution("create table t (a text, b int, c int, primary key (c, b))"),
        Distribution::Hash { column: 2 }
    );
    // Without a key, the first hashable column.
    assert_eq!(
        distribution("create table t (a int[], b numeric, c int)"),
        Distribution::Hash { column: 1 }
    );
    // No hashable column at all.
    assert_eq!(
        distribution("create table t (a int[], b text[])"),
        Distribution::RoundRobin
    );
}

#[test]
fn the_hash_column_must_exist_and_be_hashable() {
    let e = create("create table t (a int) distribute by hash (b)").unwrap_err();
    assert_eq!(e.code, codes::UNDEFINED_COLUMN);
    assert!(e.message.contains("\"b\""), "{}", e.message);
    assert_eq!(e.position, Some(44));
    // Quoted names keep their case.
    let e = create("create table t (a int) distribute by hash (\"A\")").unwrap_err();
    assert_eq!(e.code, codes::UNDEFINED_COLUMN);
    let e = create("create table t (a int, tags text[]) distribute by hash (tags)").unwrap_err();
    assert_eq!(e.code, codes::FEATURE_NOT_SUPPORTED);
    assert!(e.message.contains("hash-distributable"), "{}", e.message);
}

#[test]
fn a_primary_key_contains_the_hash_column() {
    let e = create("create table t (a int primary key, b int) distribute by hash (b)").unwrap_err();
    assert_eq!(e.code, codes::FEATURE_NOT_SUPPORTED);
    assert_eq!(
        e.message,
        "Unique index of partitioned table must contain the hash distribution column."
    );
    assert_eq!(
        distribution("create table t (a int, b int, primary key (a, b)) distribute by hash (b)"),
        Distribution::Hash { column: 1 }
    );
    let e = create("create table t (a int primary key) distribute by roundrobin").unwrap_err();
    assert_eq!(e.code, codes::FEATURE_NOT_SUPPORTED);
    assert!(e.message.contains("round robin"), "{}", e.message);
}

#[test]
fn add_primary_key_keeps_the_rule() {
    let catalog = Tables(vec![table(
        "create table t (a int, b int) distribute by hash (b)",
    )]);
    let e = bind_with(&catalog, "alter table t add primary key (a)").unwrap_err();
    assert_eq!(e.code, codes::FEATURE_NOT_SUPPORTED);
    assert!(e.message.starts_with("Unique index"), "{}", e.message);
    assert!(matches!(
        bind_with(&catalog, "alter table t add primary key (a, b)").unwrap(),
        Statement::AlterTable(_)
    ));
    // A second key is left for execution to refuse with PostgreSQL's 42P16.
    let catalog = Tables(vec![table("create table t (a int primary key, b int)")]);
    assert!(bind_with(&catalog, "alter table t add primary key (b)").is_ok());
    // pgbench -i: tables without a key, the key added later on the default's column.
    let catalog = Tables(vec![table(
        "create table pgbench_accounts(aid int not null, bid int, abalance int, filler char(84)) with (fillfactor=100)",
    )]);
    assert!(bind_with(
        &catalog,
        "alter table pgbench_accounts add primary key (aid)"
    )
    .is_ok());
}
