//! Which access path the binder gives a filter on a table with secondary indexes
//! (decision 0035): the primary key first, then the index with the best condition.

use sql::binder::bind;
use sql::catalog::{Catalog, ColumnDef, DataTypeDef, Distribution};
use sql::index::{IndexColumn, IndexDef};
use sql::parse::parse;
use sql::plan::{Access, IndexLookup, KeyValues, Rel, Statement};
use sql::TableDef;
use std::sync::Arc;
use types::DataType;

struct Tables(Vec<Arc<TableDef>>);

impl Catalog for Tables {
    fn table(&self, _schema: Option<&str>, name: &str) -> Option<Arc<TableDef>> {
        self.0.iter().find(|t| t.name == name).cloned()
    }
    fn table_by_oid(&self, oid: u32) -> Option<Arc<TableDef>> {
        self.0.iter().find(|t| t.oid == oid).cloned()
    }
}

fn index(name: &str, columns: &[usize], unique: bool) -> IndexDef {
    IndexDef {
        oid: 20000,
        name: name.into(),
        columns: columns
            .iter()
            .map(|&column| IndexColumn {
                column,
                descending: false,
                nulls_first: false,
            })
            .collect(),
        unique,
        constraint_oid: None,
        rel: 7,
    }
}

/// t (id PRIMARY KEY, k, a, u): k_1 on k, t_a_k_idx on (a, k), t_u_key unique on u;
/// ol (w, d, o, n, i) with PRIMARY KEY (w, d, o, n): ol_w_d_i_idx on (w, d, i);
/// c (w, d, id, last varchar, first varchar) with PRIMARY KEY (w, d, id): c_name on
/// (w, d, last, first).
fn catalog() -> Tables {
    let column = |name: &str| ColumnDef {
        name: name.into(),
        ty: DataTypeDef::from_type(&DataType::Int4),
        not_null: false,
        default: None,
        comment: None,
    };
    let ol = TableDef {
        oid: 16390,
        name: "ol".into(),
        columns: ["w", "d", "o", "n", "i"].map(column).to_vec(),
        primary_key: Some(vec![0, 1, 2, 3]),
        pk_name: Some("ol_pkey".into()),
        pk_index_oid: Some(16391),
        rel: 2,
        fillfactor: None,
        distribution: Distribution::Hash { column: 0 },
        indexes: vec![index("ol_w_d_i_idx", &[0, 1, 4], false)],
        checks: Vec::new(),
        foreign_keys: Vec::new(),
        acl: None,
        comment: None,
        owner: 10,
    };
    let varchar = |name: &str| ColumnDef {
        ty: DataTypeDef::from_type(&DataType::Varchar { max_len: Some(16) }),
        ..column(name)
    };
    let c = TableDef {
        oid: 16392,
        name: "c".into(),
        columns: vec![
            column("w"),
            column("d"),
            column("id"),
            varchar("last"),
            varchar("first"),
        ],
        primary_key: Some(vec![0, 1, 2]),
        pk_name: Some("c_pkey".into()),
        pk_index_oid: Some(16393),
        rel: 3,
        fillfactor: None,
        distribution: Distribution::Hash { column: 0 },
        indexes: vec![index("c_name", &[0, 1, 3, 4], false)],
        checks: Vec::new(),
        foreign_keys: Vec::new(),
        acl: None,
        comment: None,
        owner: 10,
    };
    Tables(vec![
        Arc::new(ol),
        Arc::new(c),
        Arc::new(TableDef {
            oid: 16384,
            name: "t".into(),
            columns: ["id", "k", "a", "u"].map(column).to_vec(),
            primary_key: Some(vec![0]),
            pk_name: Some("t_pkey".into()),
            pk_index_oid: Some(16385),
            rel: 1,
            fillfactor: None,
            distribution: Distribution::Hash { column: 0 },
            indexes: vec![
                index("k_1", &[1], false),
                index("t_a_k_idx", &[2, 1], false),
                index("t_u_key", &[3], true),
            ],
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            acl: None,
            comment: None,
            owner: 10,
        }),
    ])
}

/// The bound plan of the query `sql`.
fn plan(sql: &str) -> Rel {
    let stmts = parse(sql).unwrap();
    let stmt = bind(&stmts[0], &catalog(), &[]).unwrap().0.statement;
    let Statement::Query(q) = stmt else {
        panic!("{sql}")
    };
    q.root
}

fn access(sql: &str) -> Access {
    let root = plan(sql);
    let mut at = &root;
    loop {
        match at {
            Rel::Project { input, .. } | Rel::Filter { input, .. } | Rel::Sort { input, .. } => {
                at = input
            }
            Rel::Scan { access, .. } => return access.clone(),
            other => panic!("{sql}: {other:?}"),
        }
    }
}

/// The index an access reads and its lookup's shape: equality prefix lengths, or "range".
fn index_of(a: &Access) -> Option<(usize, Vec<usize>)> {
    match a {
        Access::Index {
            index,
            lookup: IndexLookup::Prefixes(p),
        } => Some((*index, p.iter().map(Vec::len).collect())),
        Access::Index {
            index,
            lookup: IndexLookup::Range { .. },
        } => Some((*index, Vec::new())),
        _ => None,
    }
}

#[test]
fn the_primary_key_comes_first() {
    assert!(matches!(
        access("SELECT * FROM t WHERE id = 1 AND k = 2"),
        Access::PrimaryKey(_)
    ));
}

#[test]
fn the_longest_equality_prefix_wins_and_a_whole_unique_key_beats_it() {
    assert_eq!(
        index_of(&access("SELECT * FROM t WHERE k = 2")),
        Some((0, vec![1]))
    );
    assert_eq!(
        index_of(&access("SELECT * FROM t WHERE k = 2 AND a = 3")),
        Some((1, vec![2]))
    );
    assert_eq!(
        index_of(&access("SELECT * FROM t WHERE k = 2 AND a = 3 AND u = 4")),
        Some((2, vec![1]))
    );
}

#[test]
fn in_lists_and_ranges_use_a_first_column() {
    assert_eq!(
        index_of(&access("SELECT * FROM t WHERE k IN (1, 2, 3)")),
        Some((0, vec![1, 1, 1]))
    );
    assert_eq!(
        index_of(&access("SELECT * FROM t WHERE a BETWEEN 1 AND 5")),
        Some((1, vec![]))
    );
    // k is t_a_k_idx's second column only, and k_1's first: k_1 takes the range
    assert_eq!(
        index_of(&access("SELECT * FROM t WHERE k > 3")),
        Some((0, vec![]))
    );
}

#[test]
fn a_widened_integer_column_is_still_a_key_column() {
    assert_eq!(
        index_of(&access("SELECT * FROM t WHERE k = 5::int8")),
        Some((0, vec![1]))
    );
    assert!(matches!(
        access("SELECT * FROM t WHERE id = 5::int8"),
        Access::PrimaryKey(_)
    ));
}

#[test]
fn a_varchar_column_compared_as_text_is_still_a_key_column() {
    // TPC-C's customer by last name: `c_last = $3` binds as `(c_last)::text = $3`, and
    // the index pinning three columns beats the primary key's two
    for sql in [
        "SELECT id FROM c WHERE w = 1 AND d = 2 AND last = 'BAR' ORDER BY first",
        "SELECT id FROM c WHERE w = 1 AND d = 2 AND last = 'BAR'::text",
    ] {
        assert_eq!(index_of(&access(sql)), Some((0, vec![3])), "{sql}");
    }
}

/// Whether the plan of `sql` sorts.
fn sorts(sql: &str) -> bool {
    let root = plan(sql);
    let mut at = &root;
    loop {
        match at {
            Rel::Sort { .. } => return true,
            Rel::Limit { input, .. } | Rel::Project { input, .. } | Rel::Filter { input, .. } => {
                at = input
            }
            _ => return false,
        }
    }
}

#[test]
fn a_key_range_in_key_order_is_not_sorted() {
    // TPC-C's Delivery: a district's oldest order, read as the first row of its range
    for sql in [
        "SELECT o FROM ol WHERE w = 1 AND d = 2 ORDER BY o LIMIT 1 FOR UPDATE",
        "SELECT o, n FROM ol WHERE w = 1 AND d = 2 AND o > 5 ORDER BY d, o, n",
        "SELECT o FROM ol WHERE w = 1 AND d IN (1, 2) ORDER BY d, o",
        "SELECT n FROM ol WHERE w = 1 AND d = 2 AND o = 3 ORDER BY n",
        "SELECT i FROM ol WHERE w = 1 AND d = 2 AND o = 3 AND n = 4 ORDER BY i",
    ] {
        assert!(!sorts(sql), "{sql}");
    }
    for sql in [
        "SELECT o FROM ol WHERE w = 1 AND d = 2 ORDER BY o DESC LIMIT 1",
        "SELECT o FROM ol WHERE w = 1 AND d = 2 ORDER BY n",
        "SELECT o FROM ol WHERE w = 1 AND d = 2 ORDER BY o, i",
        "SELECT o FROM ol WHERE w = 1 ORDER BY o",
        "SELECT o FROM ol WHERE w = 1 AND d IN (1, 2) ORDER BY o",
        "SELECT o FROM ol ORDER BY w, d, o, n",
        "SELECT o FROM ol WHERE w = 1 AND d = 2 AND i = 3 ORDER BY o",
        "SELECT DISTINCT o FROM ol WHERE w = 1 AND d = 2 ORDER BY o",
    ] {
        assert!(sorts(sql), "{sql}");
    }
}

#[test]
fn conditions_no_index_has_scan_in_full() {
    assert!(matches!(
        access("SELECT * FROM t WHERE k + 1 = 2"),
        Access::Full
    ));
    assert!(matches!(
        access("SELECT * FROM t WHERE k <> 2"),
        Access::Full
    ));
    assert!(matches!(
        access("SELECT * FROM t WHERE k = a"),
        Access::Full
    ));
}

/// A composite primary key's access: (equality prefix length, bounds set, listed values).
fn key_access(a: &Access) -> Option<(usize, usize, Option<usize>)> {
    match a {
        Access::PrimaryKey(key) => Some((key.len(), 0, None)),
        Access::KeyRange {
            prefix,
            lower,
            upper,
        } => Some((
            prefix.len(),
            lower.is_some() as usize + upper.is_some() as usize,
            None,
        )),
        Access::PrimaryKeys {
            before,
            values,
            after,
        } => {
            let listed = match values {
                KeyValues::List(list) => list.len(),
                KeyValues::Array(_) => 0,
            };
            Some((before.len() + after.len(), 0, Some(listed)))
        }
        _ => None,
    }
}

#[test]
fn a_composite_key_prefix_is_a_key_range() {
    let a = |sql| key_access(&access(sql));
    assert_eq!(
        a("SELECT * FROM ol WHERE w = 1 AND d = 2 AND o = 3"),
        Some((3, 0, None))
    );
    assert_eq!(
        a("SELECT * FROM ol WHERE d = 2 AND w = 1"),
        Some((2, 0, None))
    );
    assert_eq!(
        a("SELECT * FROM ol WHERE w = 1 AND d = 2 AND o < 9 AND o >= 3"),
        Some((2, 2, None))
    );
    assert_eq!(
        a("SELECT * FROM ol WHERE w = 1 AND o = 3"),
        Some((1, 0, None))
    );
    assert_eq!(a("SELECT * FROM ol WHERE w > 1"), Some((0, 1, None)));
    assert!(matches!(
        access("SELECT * FROM ol WHERE d = 2"),
        Access::Full
    ));
}

#[test]
fn a_list_on_one_key_column_with_the_others_pinned_reads_keys() {
    let a = |sql| key_access(&access(sql));
    assert_eq!(
        a("SELECT * FROM ol WHERE w = 1 AND d = 2 AND o IN (3, 4) AND n = 5"),
        Some((3, 0, Some(2)))
    );
    assert_eq!(
        a("SELECT * FROM ol WHERE w = 1 AND d = ANY ('{1,2}'::int[]) AND o = 3 AND n = 1"),
        Some((3, 0, Some(0)))
    );
    assert_eq!(
        a("SELECT * FROM t WHERE id IN (1, 2, 3)"),
        Some((0, 0, Some(3)))
    );
    // short of a whole key: the range under the equalities before the list
    assert_eq!(
        a("SELECT * FROM ol WHERE w = 1 AND d IN (1, 2) AND o = 3"),
        Some((1, 0, None))
    );
}

#[test]
fn an_index_pinning_more_columns_beats_a_key_prefix() {
    assert_eq!(
        index_of(&access("SELECT * FROM ol WHERE w = 1 AND d = 2 AND i = 7")),
        Some((0, vec![3]))
    );
    // a range under the same prefix narrows the key's side further
    assert_eq!(
        key_access(&access("SELECT * FROM ol WHERE w = 1 AND d = 2 AND o > 5")),
        Some((2, 1, None))
    );
    assert_eq!(
        key_access(&access("SELECT * FROM ol WHERE w = 1 AND d = 2")),
        Some((2, 0, None))
    );
}
