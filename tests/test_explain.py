"""EXPLAIN: the plan as text rows, as PostgreSQL 15 answers it.

Every statement runs on the server under test and on a real PostgreSQL 15 in the same
test. Plans themselves differ (PostgreSQL has a cost model and more operators), so what
is compared is what a client relies on: one text column "QUERY PLAN", the EXPLAIN
command tag, that nothing runs (EXPLAIN INSERT/UPDATE/DELETE change no row), parameters
through the extended protocol, and the SQLSTATEs of the errors. What Meridian prints is
checked on its own: the node names and properties of PostgreSQL's text format for scans
by key, joins, aggregates, sorts and subqueries. Which datanode a cluster's point read
goes to is checked in test_cluster.py (the reads EXPLAIN places on a stopped datanode
are exactly the ones that fail).

EXPLAIN ANALYZE runs the statement (a write happens, as in PostgreSQL) and prints each
node's rows and loops: where the plans coincide the text is compared with PostgreSQL's
(COSTS OFF, TIMING OFF, SUMMARY OFF); elsewhere the rows the nodes count are checked
against what the data holds.
"""

import re

import psycopg
import pytest

SETUP = [
    "DROP TABLE IF EXISTS ex_a",
    "DROP TABLE IF EXISTS ex_b",
    "CREATE TABLE ex_a (id int PRIMARY KEY, g int, v text)",
    "CREATE TABLE ex_b (id int PRIMARY KEY, a_id int, w int)",
    "INSERT INTO ex_a SELECT i, i % 5, 'v' || i FROM generate_series(1, 50) i",
    "INSERT INTO ex_b SELECT i, i % 50 + 1, i FROM generate_series(1, 80) i",
    "DROP TABLE IF EXISTS ex_h",
    "CREATE TABLE ex_h (k int, w int)",
    "INSERT INTO ex_h SELECT i % 20, i FROM generate_series(1, 200) i",
]


@pytest.fixture
def pair(postgres, target):
    conns = [psycopg.connect(s.dsn, autocommit=True) for s in (postgres, target)]
    for c in conns:
        for sql in SETUP:
            c.execute(sql)
    yield conns
    for c in conns:
        c.close()


def explain(conn, sql, params=None):
    cur = conn.execute(sql, params)
    assert [(d.name, d.type_code) for d in cur.description] == [("QUERY PLAN", 25)]
    assert cur.statusmessage == "EXPLAIN"
    return [r[0] for r in cur.fetchall()]


def counts(conn):
    return conn.execute("SELECT (SELECT count(*) FROM ex_a), (SELECT sum(g) FROM ex_a),"
                        " (SELECT count(*) FROM ex_b)").fetchone()


@pytest.mark.parametrize("sql,params", [
    ("EXPLAIN SELECT * FROM ex_a WHERE id = 3", None),
    ("EXPLAIN (COSTS OFF) SELECT g, count(*) FROM ex_a GROUP BY g ORDER BY g", None),
    ("EXPLAIN VERBOSE SELECT * FROM ex_a a JOIN ex_b b ON a.id = b.a_id", None),
    ("EXPLAIN (FORMAT TEXT) SELECT v FROM ex_a WHERE id = %s", (7,)),
    ("EXPLAIN INSERT INTO ex_a VALUES (100, 1, 'x')", None),
    ("EXPLAIN UPDATE ex_a SET g = g + 1 WHERE id < 10", None),
    ("EXPLAIN DELETE FROM ex_b WHERE w > 10", None),
])
def test_explain_answers_a_text_plan_and_runs_nothing(pair, sql, params):
    before = [counts(c) for c in pair]
    for c in pair:
        assert explain(c, sql, params), sql
    assert [counts(c) for c in pair] == before


@pytest.mark.parametrize("sql", [
    "EXPLAIN CREATE TABLE ex_c (a int)",
    "EXPLAIN (NO_SUCH_OPTION) SELECT 1",
    "EXPLAIN SELECT * FROM ex_missing",
    "EXPLAIN SELECT nope FROM ex_a",
    "EXPLAIN SELEC 1",
    "EXPLAIN (TIMING) SELECT 1",
    "EXPLAIN ANALYZE SELECT 1 / (g - g) FROM ex_a",
    "EXPLAIN ANALYZE INSERT INTO ex_a VALUES (1, 1, 'duplicate key')",
])
def test_explain_errors_as_postgres(pair, sql):
    states = []
    for c in pair:
        with pytest.raises(psycopg.Error) as e:
            c.execute(sql)
        states.append(e.value.sqlstate)
        assert c.execute("SELECT 1").fetchone() == (1,)
    assert states[1] == states[0], (sql, states)


ANALYZED = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "


@pytest.mark.parametrize("sql", [
    "SELECT * FROM ex_a WHERE g = 1",
    "SELECT count(*) FROM ex_b WHERE w > 10",
    "SELECT count(*) FROM ex_a",
])
def test_explain_analyze_counts_rows_as_postgres(pair, target, sql):
    """Where the plans coincide, EXPLAIN ANALYZE's text is PostgreSQL's to the row (in a
    cluster, the datanodes filter and aggregate: the plan's top node still counts the
    same rows)."""
    plans = [explain(c, ANALYZED + sql) for c in pair]
    if target.kind == "meridian-cluster":
        assert plans[1][0] == plans[0][0], plans
    else:
        assert plans[1] == plans[0], plans


@pytest.mark.parametrize("sql,changes", [
    ("UPDATE ex_a SET g = g + 1 WHERE g = 2", "Update on"),
    ("DELETE FROM ex_b WHERE w > 70", "Delete on"),
    ("INSERT INTO ex_b VALUES (1000, 1, 1), (1001, 2, 2)", "Insert on"),
])
def test_explain_analyze_runs_the_write(pair, sql, changes):
    """ANALYZE runs the statement, as PostgreSQL does: the write happens (and a rollback
    undoes it); the write's node and its scan count as PostgreSQL counts them."""
    before = [counts(c) for c in pair]
    plans = []
    for c in pair:
        c.execute("BEGIN")
        plans.append(explain(c, ANALYZED + sql))
        c.execute("ROLLBACK")
    assert [counts(c) for c in pair] == before
    for c in pair:
        plans.append(explain(c, "EXPLAIN ANALYZE " + sql))
    after = [counts(c) for c in pair]
    assert after[0] != before[0] and after[1] == after[0], (before, after)
    pg, mine = plans[0], plans[1]
    assert mine[0] == pg[0] and mine[0].startswith(changes), plans
    # the rows the write's input produced
    inputs = [next(line for line in plan if "->" in line) for plan in (pg, mine)]
    assert inputs[1].split("(actual")[1] == inputs[0].split("(actual")[1], plans
    for plan in plans[2:]:
        assert re.fullmatch(r"Execution Time: \d+\.\d{3} ms", plan[-1]), plan
        assert re.search(r"\(actual time=\d+\.\d{3}\.\.\d+\.\d{3} rows=0 loops=1\)$",
                         plan[0]), plan


def test_explain_analyze_of_a_parameterized_query(pair):
    plans = [explain(c, ANALYZED + "SELECT v FROM ex_a WHERE g = %s", (3,)) for c in pair]
    assert [p[0] for p in plans] == ["Seq Scan on ex_a (actual rows=10 loops=1)"] * 2, plans


def meridian_only(target):
    if target.kind == "postgres":
        pytest.skip("Meridian's plan shapes (PostgreSQL's are its own)")


def test_point_read_is_an_index_scan_with_its_key(pair, target):
    meridian_only(target)
    plan = explain(pair[1], "EXPLAIN SELECT v FROM ex_a WHERE id = 3")
    assert plan[0] == "Index Scan using ex_a_pkey on ex_a", plan
    assert "  Index Cond: (id = 3)" in plan, plan
    plan = explain(pair[1], "EXPLAIN SELECT v FROM ex_a WHERE id >= 3 AND id < 9")
    assert "  Index Cond: ((id >= 3) AND (id < 9))" in plan, plan


def test_whole_primary_key_beats_a_wider_unique_index(pair, target):
    """Equality on the whole primary key is one read: a unique index over more of the
    conditions' columns (two reads: its entry, then the row) is not chosen over it."""
    meridian_only(target)
    conn = pair[1]
    conn.execute("CREATE TABLE ex_u (id int PRIMARY KEY, a int, b int, UNIQUE (a, b))")
    try:
        conn.execute("INSERT INTO ex_u VALUES (1, 1, 2), (2, 1, 3)")
        sql = "SELECT id FROM ex_u WHERE a = 1 AND b = 2 AND id = 1"
        plan = explain(conn, "EXPLAIN " + sql)
        assert plan[0] == "Index Scan using ex_u_pkey on ex_u", plan
        assert conn.execute(sql).fetchall() == [(1,)]
        plan = explain(conn, "EXPLAIN SELECT id FROM ex_u WHERE a = 1 AND b = 3")
        assert plan[0] == "Index Scan using ex_u_a_b_key on ex_u", plan
    finally:
        conn.execute("DROP TABLE ex_u")


def test_key_compared_with_a_wider_integer_is_read_by_key(pair, target):
    """Drivers bind 64-bit parameters (sysbench, JDBC's setLong): `int4_key = $1::int8`
    reads by key, as PostgreSQL's cross-type btree operators let it, not by scanning."""
    meridian_only(target)
    for sql, params in [("EXPLAIN SELECT v FROM ex_a WHERE id = %s::bigint", (3,)),
                        ("EXPLAIN SELECT v FROM ex_a WHERE id = 3::smallint", None),
                        ("EXPLAIN SELECT v FROM ex_a WHERE id BETWEEN %s::bigint AND %s::bigint",
                         (3, 9))]:
        plan = explain(pair[1], sql, params)
        assert plan[0] == "Index Scan using ex_a_pkey on ex_a", (sql, plan)
    for c in pair:
        rows = [c.execute("SELECT id, v FROM ex_a WHERE id = %s::bigint", (n,)).fetchall()
                for n in (3, 2**40, -1)]
        assert rows == [[(3, "v3")], [], []], rows
        assert c.execute("SELECT count(*) FROM ex_a WHERE id BETWEEN %s::bigint AND %s::bigint",
                         (-2**40, 7)).fetchone() == (7,)


def test_plan_tree_in_postgres_layout(pair, target):
    meridian_only(target)
    plan = explain(pair[1], "EXPLAIN SELECT a.g, count(*) FROM ex_a a JOIN ex_b b"
                            " ON a.id = b.a_id WHERE b.w > 5 GROUP BY a.g ORDER BY a.g LIMIT 2")
    core = [line for line in plan if "Datanode" not in line]
    assert core == [
        "Limit",
        "  ->  Sort",
        "        Sort Key: ex_a.g",
        "        ->  HashAggregate",
        "              Group Key: ex_a.g",
        "              ->  Hash Join",
        "                    Hash Cond: (ex_a.id = ex_b.a_id)",
        "                    ->  Seq Scan on ex_a",
        "                    ->  Hash",
        "                          ->  Seq Scan on ex_b",
        # below the join, where a cluster's datanodes apply it
        "                                " + ("Remote Filter" if target.kind == "meridian-cluster"
                                             else "Filter") + ": (ex_b.w > 5)",
    ], plan


def test_window_and_distinct_on_plans_as_postgres(pair, target):
    """WindowAgg over the sort by its partition and order keys, Unique over DISTINCT
    ON's sort: PostgreSQL's plan shapes."""
    meridian_only(target)
    for sql in ["EXPLAIN (COSTS OFF) SELECT id, rank() OVER (PARTITION BY g ORDER BY id) FROM ex_a",
                "EXPLAIN (COSTS OFF) SELECT DISTINCT ON (g) g, id FROM ex_a ORDER BY g, id"]:
        want, got = (explain(c, sql) for c in pair)
        assert [line for line in got if "Datanode" not in line] == want, (sql, got, want)


def test_explain_analyze_measures_every_node(pair, target):
    """Each node's rows and loops as they ran: a correlated SubPlan once per outer row, a
    filter's removed rows per loop, the hashed side on its Hash."""
    meridian_only(target)
    plan = explain(pair[1], ANALYZED + "SELECT id, (SELECT count(*) FROM ex_b b WHERE"
                   " b.a_id = a.id) FROM ex_a a WHERE g = 0 ORDER BY id")
    lines = [line.strip() for line in plan]
    assert lines[0] == "Sort (actual rows=10 loops=1)", plan
    assert "->  Seq Scan on ex_a (actual rows=10 loops=1)" in lines, plan
    subplan = lines[lines.index("SubPlan 1") + 1:]
    assert subplan[0] == "->  Aggregate (actual rows=1 loops=10)", plan
    if target.kind == "meridian-cluster":
        # the datanodes filter: the coordinator sees only the rows that pass
        assert "Remote Filter: (g = 0)" in lines, plan
        assert subplan[1] == "->  Seq Scan on ex_b (actual rows=2 loops=10)", plan
    else:
        assert "Rows Removed by Filter: 40" in lines, plan
        # ten ids, 16 of ex_b's 80 rows match one of them: 784 removed over 10 loops
        assert subplan == [
            "->  Aggregate (actual rows=1 loops=10)",
            "->  Seq Scan on ex_b (actual rows=2 loops=10)",
            "Filter: (a_id = outer.column1)",
            "Rows Removed by Filter: 78",
        ], plan
    plan = explain(pair[1], ANALYZED + "SELECT * FROM ex_a a JOIN ex_b b ON a.id = b.a_id"
                   " WHERE b.w < 20")
    assert plan[0] == "Hash Join (actual rows=19 loops=1)", plan
    assert "  ->  Hash (actual rows=19 loops=1)" in plan, plan
    plan = explain(pair[1], ANALYZED + "SELECT g FROM ex_a UNION SELECT a_id FROM ex_b"
                   " WHERE a_id < 3")
    # 50 rows of ex_a and ex_b's 3 with a_id 1 or 2; 5 distinct values of g, 1 and 2 among them
    assert plan[0] == "HashAggregate (actual rows=5 loops=1)", plan
    assert "  ->  Append (actual rows=53 loops=1)" in plan, plan
    timed = explain(pair[1], "EXPLAIN ANALYZE SELECT count(*) FROM ex_a")
    assert re.fullmatch(r"Aggregate \(actual time=(\d+\.\d{3})\.\.(\d+\.\d{3}) rows=1"
                        r" loops=1\)", timed[0]), timed


def test_subqueries_are_subplans(pair, target):
    meridian_only(target)
    plan = explain(pair[1], "EXPLAIN SELECT id FROM ex_a WHERE g IN (SELECT w FROM ex_b)"
                            " AND g > (SELECT min(a_id) FROM ex_b)")
    core = [line for line in plan if "Datanode" not in line]
    assert core == [
        "Seq Scan on ex_a",
        "  Filter: ((g IN (SubPlan 1)) AND (g > (SubPlan 2)))",
        "  SubPlan 1",
        "    ->  Seq Scan on ex_b",
        "  SubPlan 2",
        "    ->  Aggregate",
        "          ->  Seq Scan on ex_b",
    ], plan


def test_cluster_plans_show_what_the_datanodes_do(pair, target):
    """In a cluster: the pushed filter and partial aggregation (decision 0033) under the
    scan, and the one datanode a filter on the distribution column reads."""
    if target.kind != "meridian-cluster":
        pytest.skip("a cluster's plans")
    plan = explain(pair[1], "EXPLAIN SELECT g, count(*), max(v) FROM ex_a WHERE g > 1 GROUP BY g")
    lines = [line.strip() for line in plan]
    assert "Remote Filter: (g > 1)" in lines, plan
    assert "Remote Partial Aggregate: count(*), max(v)" in lines, plan
    assert "Remote Group Key: g" in lines, plan
    everywhere = [line for line in lines if line.startswith("Datanodes: ")]
    assert len(everywhere) == 1 and everywhere[0].count("datanode") == 3, plan
    # ex_h is hashed on k: a filter k = 7 reads one datanode, and it is the one whose
    # scanned pages grow.
    plan = explain(pair[1], "EXPLAIN SELECT w FROM ex_h WHERE k = 7")
    named = [line.strip()[len("Datanode: "):] for line in plan
             if line.strip().startswith("Datanode: ")]
    assert len(named) == 1, plan

    def pages():
        return dict(pair[1].execute("SELECT node_name, scan_pages FROM meridian_nodes"
                                    " WHERE role = 'datanode'").fetchall())
    before = pages()
    assert sorted(r[0] for r in pair[1].execute("SELECT w FROM ex_h WHERE k = 7")) == [
        w for w in range(1, 201) if w % 20 == 7]
    after = pages()
    assert [n for n in after if after[n] != before[n]] == named, (before, after, plan)
