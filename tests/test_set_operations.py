"""INTERSECT / EXCEPT [ALL], FULL [OUTER] JOIN and NATURAL JOIN, differential against
PostgreSQL 15.

The same small tables (duplicates, NULLs, rows on one side only) are built on both
servers; each statement runs on both and must give the same rows (as a multiset where
the statement has no ORDER BY, in order where it has one), the same column names and
types, or the same SQLSTATE: precedence (INTERSECT binds tighter than UNION and EXCEPT),
parentheses, ORDER BY / LIMIT over the whole, UNION's type resolution, NULLs equal, ALL's
multiplicities; FULL JOIN with ON and USING (the merged column is COALESCE(l, r)),
NATURAL [INNER|LEFT|RIGHT|FULL] JOIN, with and without columns in common; in an INSERT, a
view and with parameters.

Last, an EXCEPT [ALL], an INTERSECT ALL and FULL JOINs over inputs of 200,000 rows with
`SET work_mem = '64kB'` on a server whose query memory (8MB) is smaller than those inputs
held: they finish and match PostgreSQL, which they can only do by spilling; with a
work_mem past the query memory the same statements end in 53200, which shows that they
would not fit unspilled.
"""

import psycopg
import pytest

from conftest import finish_server, run_on_each, start_server

SETUP = [
    "DROP TABLE IF EXISTS so_a",
    "DROP TABLE IF EXISTS so_b",
    "DROP TABLE IF EXISTS so_c",
    "CREATE TABLE so_a (id int PRIMARY KEY, x int, y text)",
    "CREATE TABLE so_b (id int PRIMARY KEY, x int, z text)",
    "CREATE TABLE so_c (x int, y text)",
    "INSERT INTO so_a VALUES (1, 1, 'one'), (2, 2, 'two'), (3, 2, 'two'), (4, 2, 'two'),"
    " (5, 3, 'three'), (6, NULL, 'null'), (7, NULL, 'null'), (8, 5, NULL), (9, 7, 'seven')",
    "INSERT INTO so_b VALUES (1, 2, 'b2'), (2, 2, 'b2'), (3, 3, 'b3'), (4, NULL, 'bnull'),"
    " (5, 4, 'b4'), (6, 4, 'b4'), (7, 5, NULL), (8, 6, 'b6')",
    "INSERT INTO so_c VALUES (2, 'two'), (3, 'three'), (3, 'three'), (NULL, 'null'), (8, 'eight')",
]

SET_OPERATIONS = [
    "SELECT x FROM so_a INTERSECT SELECT x FROM so_b",
    "SELECT x FROM so_a INTERSECT ALL SELECT x FROM so_b",
    "SELECT x FROM so_a INTERSECT DISTINCT SELECT x FROM so_b",
    "SELECT x FROM so_a EXCEPT SELECT x FROM so_b",
    "SELECT x FROM so_a EXCEPT ALL SELECT x FROM so_b",
    "SELECT x FROM so_b EXCEPT ALL SELECT x FROM so_a",
    "SELECT x, y FROM so_a INTERSECT ALL SELECT x, y FROM so_c",
    "SELECT x, y FROM so_a EXCEPT ALL SELECT x, y FROM so_c",
    "SELECT x, y FROM so_c EXCEPT SELECT x, y FROM so_a",
    # precedence: INTERSECT first, UNION and EXCEPT left to right
    "SELECT x FROM so_a UNION SELECT x FROM so_b INTERSECT SELECT x FROM so_c",
    "SELECT x FROM so_a EXCEPT SELECT x FROM so_b INTERSECT SELECT x FROM so_c",
    "SELECT x FROM so_a EXCEPT SELECT x FROM so_b EXCEPT SELECT x FROM so_c",
    "SELECT x FROM so_a EXCEPT ALL SELECT x FROM so_b UNION ALL SELECT x FROM so_c",
    "SELECT x FROM so_a INTERSECT ALL SELECT x FROM so_b UNION ALL SELECT x FROM so_c",
    "(SELECT x FROM so_a UNION ALL SELECT x FROM so_b) INTERSECT ALL SELECT x FROM so_c",
    "SELECT x FROM so_a EXCEPT (SELECT x FROM so_b EXCEPT SELECT x FROM so_c)",
    "(SELECT x FROM so_a EXCEPT ALL SELECT x FROM so_b) EXCEPT ALL (SELECT x FROM so_c)",
    # ORDER BY and LIMIT over the whole, names from the left
    "SELECT x AS left_x, y FROM so_a INTERSECT ALL SELECT x, y FROM so_c ORDER BY left_x, y",
    "SELECT x FROM so_a EXCEPT ALL SELECT x FROM so_b ORDER BY x DESC NULLS LAST LIMIT 3",
    "SELECT x FROM so_a EXCEPT ALL SELECT x FROM so_b ORDER BY 1 NULLS FIRST OFFSET 2",
    "SELECT x FROM so_a INTERSECT SELECT x FROM so_b ORDER BY x LIMIT 1",
    # UNION's type resolution, and NULLs equal
    "SELECT 1 INTERSECT SELECT 1.0",
    "SELECT x FROM so_a EXCEPT SELECT 2.0",
    "SELECT x::int8 FROM so_a INTERSECT SELECT x::int2 FROM so_b",
    "SELECT NULL INTERSECT SELECT NULL",
    "SELECT NULL::int EXCEPT SELECT 1",
    "SELECT 'a' INTERSECT ALL SELECT 'a'::varchar",
    "SELECT y FROM so_a INTERSECT SELECT z FROM so_b",
    # in subqueries and CTEs
    "SELECT count(*), sum(x) FROM (SELECT x FROM so_a EXCEPT ALL SELECT x FROM so_b) s",
    "SELECT id FROM so_a WHERE x IN (SELECT x FROM so_b INTERSECT SELECT x FROM so_c)",
    "WITH d AS (SELECT x FROM so_a EXCEPT SELECT x FROM so_c) SELECT * FROM d ORDER BY x",
    "SELECT x FROM so_a INTERSECT SELECT x FROM so_a WHERE false",
    "SELECT x FROM so_a WHERE false EXCEPT SELECT x FROM so_a",
    # errors
    "SELECT x, y FROM so_a INTERSECT SELECT x FROM so_b",
    "SELECT x FROM so_a EXCEPT ALL SELECT x, z FROM so_b",
    "SELECT x FROM so_a INTERSECT SELECT z FROM so_b",
    "SELECT x FROM so_a EXCEPT SELECT x FROM so_b ORDER BY y",
    "SELECT x FROM so_a EXCEPT SELECT x FROM so_missing",
]

JOINS = [
    "SELECT * FROM so_a a FULL JOIN so_b b ON a.x = b.x",
    "SELECT a.id, b.id FROM so_a a FULL OUTER JOIN so_b b ON a.x = b.x AND a.id < b.id",
    "SELECT a.id, b.id FROM so_a a FULL JOIN so_b b ON a.x = b.x WHERE a.id IS NULL",
    "SELECT a.id, b.id FROM so_a a FULL JOIN so_b b ON a.x = b.x WHERE b.id IS NULL OR a.id > 4",
    "SELECT a.id, b.id FROM so_a a FULL JOIN so_b b ON a.x + 1 = b.x",
    "SELECT a.id, b.id FROM so_a a FULL JOIN so_b b ON true",
    "SELECT a.id, b.id FROM so_a a FULL JOIN so_b b ON false",
    "SELECT a.id, b.id FROM so_a a FULL JOIN (SELECT * FROM so_b WHERE false) b ON a.x = b.x",
    "SELECT a.id, b.id FROM (SELECT * FROM so_a WHERE false) a FULL JOIN so_b b ON a.x = b.x",
    "SELECT * FROM so_a FULL JOIN so_b USING (x)",
    "SELECT x, so_a.x, so_b.x, id FROM so_a FULL JOIN so_b USING (x, id)",
    "SELECT x FROM so_a FULL JOIN so_c USING (x) FULL JOIN so_b USING (x)",
    "SELECT so_b.*, so_a.* FROM so_a FULL JOIN so_b USING (x)",
    "SELECT x, count(*) FROM so_a FULL JOIN so_b USING (x) WHERE x > 1 OR x IS NULL GROUP BY x",
    "SELECT * FROM so_a FULL JOIN so_c USING (x) JOIN so_b USING (id)",
    "SELECT * FROM so_a a FULL JOIN so_c c USING (x, y) ORDER BY x NULLS FIRST, y, id",
    "SELECT count(*), count(a.id), count(b.id) FROM so_a a FULL JOIN so_b b ON a.x = b.x",
    "SELECT a.id, b.id, c.y FROM so_a a FULL JOIN so_b b ON a.x = b.x"
    " LEFT JOIN so_c c ON c.x = b.x",
    "SELECT a.id, b.id, c.y FROM so_c c JOIN so_a a ON a.x = c.x FULL JOIN so_b b ON a.x = b.x",
    # NATURAL: columns in common by name; none in common is a cross join
    "SELECT * FROM so_a NATURAL JOIN so_b",
    "SELECT * FROM so_a NATURAL JOIN so_c",
    "SELECT * FROM so_a NATURAL LEFT JOIN so_c",
    "SELECT * FROM so_a NATURAL RIGHT JOIN so_c",
    "SELECT * FROM so_a NATURAL FULL JOIN so_c",
    "SELECT * FROM so_c NATURAL INNER JOIN so_b",
    "SELECT * FROM so_c NATURAL JOIN (SELECT 1 AS w) s",
    "SELECT * FROM so_c NATURAL LEFT JOIN (SELECT 1 AS w WHERE false) s",
    "SELECT x, so_c.x FROM so_c NATURAL FULL JOIN (SELECT 2 AS x) s",
    # errors
    "SELECT * FROM so_a a FULL JOIN so_b b ON a.x < b.x",
    "SELECT * FROM so_a FULL JOIN so_b USING (nope)",
    "SELECT * FROM so_a a FULL JOIN LATERAL (SELECT a.x) s ON true",
    "SELECT * FROM so_a FULL JOIN so_b USING (y)",
]


def outcome(conn, sql):
    try:
        cur = conn.execute(sql)
        rows = [tuple(map(str, r)) for r in cur.fetchall()]
        if "ORDER BY" not in sql:
            rows.sort()
        return [(d.name, d.type_code) for d in cur.description], rows
    except psycopg.Error as e:
        return e.sqlstate


@pytest.fixture(scope="module")
def pair(target, postgres):
    run_on_each([target, postgres], SETUP)
    conns = [psycopg.connect(s.dsn, autocommit=True) for s in (postgres, target)]
    yield conns
    for c in conns:
        c.close()


@pytest.mark.parametrize("sql", SET_OPERATIONS + JOINS)
def test_matches_postgres(pair, sql):
    want, got = (outcome(c, sql) for c in pair)
    assert got == want, sql


def test_explain_names_postgres_nodes(pair, target):
    if target.kind == "postgres":
        pytest.skip("Meridian's plan shapes (PostgreSQL's are its own)")
    conn = pair[1]

    def plan(sql):
        return [r[0] for r in conn.execute("EXPLAIN (COSTS OFF) " + sql).fetchall()]

    assert plan("SELECT x FROM so_a INTERSECT SELECT x FROM so_b")[:2] == [
        "HashSetOp Intersect", "  ->  Append"]
    assert plan("SELECT x FROM so_a EXCEPT ALL SELECT x FROM so_b")[0] == "HashSetOp Except All"
    full = plan("SELECT * FROM so_a a FULL JOIN so_b b ON a.x = b.x")
    assert full[0] == "Hash Full Join" and full[1].startswith("  Hash Cond: "), full



def test_in_dml_views_and_with_parameters(target, postgres):
    """An INSERT of an EXCEPT ALL, a view over a FULL JOIN, and parameters (extended
    protocol) in set operations and a NATURAL FULL JOIN's WHERE."""
    run_on_each([target, postgres], [
        "DROP VIEW IF EXISTS so_v", "DROP TABLE IF EXISTS so_t", "DROP TABLE IF EXISTS so_u",
        "CREATE TABLE so_t (a int, b text)", "CREATE TABLE so_u (a int, c text)",
        "INSERT INTO so_t VALUES (1, 'x'), (2, 'y'), (2, 'y'), (NULL, 'n')",
        "INSERT INTO so_u VALUES (2, 'p'), (3, 'q')",
    ])
    statements = [
        ("INSERT INTO so_u SELECT a, b FROM so_t EXCEPT ALL SELECT a, c FROM so_u", None),
        ("SELECT * FROM so_u ORDER BY 1, 2", None),
        ("CREATE VIEW so_v AS SELECT * FROM so_t FULL JOIN so_u USING (a)", None),
        ("SELECT * FROM so_v ORDER BY 1, 2, 3", None),
        ("SELECT a FROM so_t EXCEPT SELECT %s ORDER BY 1", (2,)),
        ("SELECT a FROM so_t INTERSECT SELECT a FROM so_u WHERE a = %s", (2,)),
        ("SELECT * FROM so_t t NATURAL FULL JOIN so_u u WHERE t.a = %s ORDER BY 1, 2, 3", (2,)),
    ]
    outcomes = []
    try:
        for server in (postgres, target):
            with psycopg.connect(server.dsn, autocommit=True) as conn:
                outcomes.append([])
                for sql, params in statements:
                    cur = conn.execute(sql, params)
                    rows = cur.fetchall() if cur.description else None
                    outcomes[-1].append((cur.statusmessage, rows))
    finally:
        # The reference PostgreSQL is shared by later modules (psql's \dv lists every view).
        run_on_each([target, postgres], ["DROP VIEW IF EXISTS so_v", "DROP TABLE IF EXISTS so_t",
                                         "DROP TABLE IF EXISTS so_u"])
    assert outcomes[1] == outcomes[0]

# Inputs of 200,000 rows: far more than the 8MB query memory if held whole.
BIG = [
    "SELECT count(*), sum(x) FROM (SELECT i % 150000 AS x FROM generate_series(1, 200000) i"
    " EXCEPT SELECT i * 3 FROM generate_series(1, 100000) i) s",
    "SELECT count(*), sum(x) FROM (SELECT i % 150000 AS x FROM generate_series(1, 200000) i"
    " EXCEPT ALL SELECT i * 3 FROM generate_series(1, 100000) i) s",
    "SELECT count(*), sum(x) FROM (SELECT i % 150000 AS x FROM generate_series(1, 200000) i"
    " INTERSECT ALL SELECT i % 50000 * 2 FROM generate_series(1, 200000) i) s",
    "SELECT count(*), count(a.x), count(b.y), sum(a.x), sum(b.y)"
    " FROM (SELECT i AS x FROM generate_series(1, 200000) i) a"
    " FULL JOIN (SELECT CASE WHEN i % 10 = 0 THEN NULL ELSE i * 2 END AS y"
    " FROM generate_series(1, 200000) i) b ON a.x = b.y",
    "SELECT count(*), count(x), sum(x), count(s.i), count(t.i)"
    " FROM (SELECT i, i % 120000 AS x FROM generate_series(1, 200000) i) s"
    " FULL JOIN (SELECT i * 7 AS i, i % 90000 + 60000 AS x FROM generate_series(1, 150000) i) t"
    " USING (x)",
]


@pytest.fixture(scope="module")
def small_memory(server_kind):
    server = start_server(server_kind, query_memory="8MB")
    yield server
    finish_server(server)


def big_results(server, work_mem):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f"SET work_mem = '{work_mem}'")
        return [outcome(conn, sql) for sql in BIG]


def test_past_work_mem_spills_and_matches_postgres(small_memory, postgres):
    want = big_results(postgres, "64kB")
    assert all(not isinstance(w, str) for w in want), want
    assert big_results(small_memory, "64kB") == want
    if small_memory.kind != "postgres":
        # held whole, these inputs do not fit the query memory
        assert big_results(small_memory, "1GB") == ["53200"] * len(BIG)
