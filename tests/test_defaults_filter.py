"""Column defaults, aggregate FILTER and round(float8) answer as PostgreSQL 15 does.

Every statement runs on the server under test and on a real PostgreSQL 15 in the same
test; their outcomes (rows, or the SQLSTATE of the error) must be equal.

* Defaults: omitted trailing columns, unlisted columns, ``DEFAULT`` inside (multi-row)
  VALUES, ``INSERT … DEFAULT VALUES``, ``UPDATE … SET c = DEFAULT``, INSERT … SELECT and
  COPY with a column list, and the errors around them (42601, 42701).
* ``agg(…) FILTER (WHERE …)`` with and without GROUP BY, DISTINCT, NULL conditions,
  parameters and HAVING, and its errors (42803, 42804, 42809).
* ``round``/``floor``/``ceil`` of double precision, numeric and integers (rint: half
  to even for double precision, half away from zero for numeric), with their types.
"""

import psycopg
import pytest

SETUP = [
    "DROP TABLE IF EXISTS df_t",
    "CREATE TABLE df_t (id int PRIMARY KEY, a int DEFAULT 7, b text DEFAULT 'x' || 'y', "
    "c numeric(6,2) DEFAULT 1.5, d int)",
    "DROP TABLE IF EXISTS df_n",
    "CREATE TABLE df_n (a int DEFAULT 7, b text DEFAULT 'x', c int)",
    "DROP TABLE IF EXISTS df_v",
    "CREATE TABLE df_v (g int, x int, y float8)",
    "INSERT INTO df_v VALUES (1, 1, 0.5), (1, 2, NULL), (1, NULL, 2.5), (2, 3, 1.5), "
    "(2, 4, -2.5), (2, 4, 3.5), (3, NULL, NULL)",
]


def outcome(conn, sql, params=None):
    """("rows", rows) / ("ok", rowcount) or ("error", SQLSTATE); the session stays usable."""
    try:
        cur = conn.execute(sql, params)
    except psycopg.Error as e:
        return ("error", e.sqlstate)
    if cur.description is None:
        return ("ok", cur.rowcount)
    return ("rows", cur.fetchall())


@pytest.fixture
def pair(postgres, target):
    conns = [psycopg.connect(s.dsn, autocommit=True) for s in (postgres, target)]
    for c in conns:
        for sql in SETUP:
            c.execute(sql)
    yield conns
    for c in conns:
        c.close()


def same(pair, sql, params=None):
    """Run `sql` on both servers; assert equal outcomes and return PostgreSQL's."""
    reference, server = (outcome(c, sql, params) for c in pair)
    assert server == reference, f"{sql}\n  postgres: {reference}\n  server:   {server}"
    return reference


# --------------------------------------------------------------------------------------
# the issue's exact cases
# --------------------------------------------------------------------------------------

def test_issue_cases(pair):
    same(pair, "DROP TABLE IF EXISTS d")
    same(pair, "CREATE TABLE d (id int PRIMARY KEY, a int DEFAULT 7)")
    same(pair, "INSERT INTO d VALUES (1)")
    assert same(pair, "SELECT id, a FROM d") == ("rows", [(1, 7)])
    assert same(pair, "SELECT count(*) FILTER (WHERE x > 1), sum(x) FILTER (WHERE x > 1) "
                      "FROM (VALUES (1),(2),(3)) v(x)") == ("rows", [(2, 5)])
    assert same(pair, "SELECT round(2.5::float8)") == ("rows", [(2.0,)])


# --------------------------------------------------------------------------------------
# defaults
# --------------------------------------------------------------------------------------

DEFAULT_SCRIPTS = {
    "trailing": ["INSERT INTO df_t VALUES (1)", "INSERT INTO df_t VALUES (2, 3)",
                 "INSERT INTO df_t VALUES (3, 3, 'q', 2.25, 4)"],
    "unlisted": ["INSERT INTO df_t (id, d) VALUES (1, 5)", "INSERT INTO df_t (d, id) VALUES (6, 2)",
                 "INSERT INTO df_t (b, id) VALUES (NULL, 3)"],
    "default_keyword": ["INSERT INTO df_t VALUES (1, DEFAULT, DEFAULT, DEFAULT, DEFAULT)",
                        "INSERT INTO df_t (id, a, d) VALUES (2, DEFAULT, 1), (3, 9, DEFAULT), "
                        "(4, DEFAULT, DEFAULT)",
                        "INSERT INTO df_t VALUES (5, DEFAULT), (6, 1)"],
    "default_values": ["INSERT INTO df_n DEFAULT VALUES", "INSERT INTO df_n DEFAULT VALUES RETURNING *",
                       "INSERT INTO df_n VALUES (DEFAULT, DEFAULT, DEFAULT), (1), (DEFAULT, 'q')"],
    "default_values_not_null": ["INSERT INTO df_t DEFAULT VALUES"],
    "insert_select": ["INSERT INTO df_t SELECT 1", "INSERT INTO df_t (id, d) SELECT 2, 8",
                      "INSERT INTO df_t SELECT g * 10 + x, x FROM df_v WHERE x IS NOT NULL "
                      "AND g = 2 AND x = 3"],
    "update_set_default": ["INSERT INTO df_t VALUES (1, 1, 'a', 9.5, 1), (2, 2, 'b', 8.5, 2)",
                           "UPDATE df_t SET a = DEFAULT, b = DEFAULT, d = DEFAULT WHERE id = 1",
                           "UPDATE df_t SET c = DEFAULT, a = a + 1 WHERE id = 2 RETURNING id, a, c"],
    "returning_defaults": ["INSERT INTO df_t VALUES (1), (2, DEFAULT, 'z') RETURNING *"],
    "errors": ["INSERT INTO df_t VALUES (1, 2, 'a', 1, 2, 3)",
               "INSERT INTO df_t (id, a) VALUES (1)",
               "INSERT INTO df_t (id) VALUES (1, 2)",
               "INSERT INTO df_t (id, a) SELECT 1",
               "INSERT INTO df_t (id, id) VALUES (1, 2)",
               "INSERT INTO df_t VALUES (1, 2), (3)",
               "UPDATE df_t SET a = 1, a = 2",
               "INSERT INTO df_t (id, nope) VALUES (1, 2)"],
}


@pytest.mark.parametrize("name", sorted(DEFAULT_SCRIPTS))
def test_defaults_match_postgres(pair, name):
    for sql in DEFAULT_SCRIPTS[name]:
        same(pair, sql)
    same(pair, "SELECT * FROM df_t ORDER BY id, d")
    same(pair, "SELECT * FROM df_n ORDER BY a, b, c")


@pytest.mark.parametrize("fmt,columns,data", [
    ("text", "(id, d)", "1\t5\n2\t\\N\n"),
    ("text", "(b, id)", "hello\t3\n\\N\t4\n"),
    ("csv", "(d, id)", "7,1\n,2\n"),
    ("text", "", "1\t2\tq\t3.5\t4\n"),
])
def test_copy_with_column_list_applies_defaults(pair, fmt, columns, data):
    for c in pair:
        with c.cursor() as cur:
            with cur.copy(f"COPY df_t {columns} FROM STDIN (FORMAT {fmt})") as copy:
                copy.write(data)
    same(pair, "SELECT * FROM df_t ORDER BY id")


def test_copy_column_list_errors(pair):
    for sql in ["COPY df_t (id, id) FROM STDIN", "COPY df_t (id, nope) FROM STDIN"]:
        same(pair, sql)


def test_default_with_session_function_in_copy(pair):
    for c in pair:
        c.execute("DROP TABLE IF EXISTS df_now")
        c.execute("CREATE TABLE df_now (id int PRIMARY KEY, at timestamptz DEFAULT now(), "
                  "who text DEFAULT current_user)")
        with c.cursor() as cur:
            with cur.copy("COPY df_now (id) FROM STDIN") as copy:
                copy.write("1\n2\n")
    same(pair, "SELECT id, at IS NOT NULL, who FROM df_now ORDER BY id")


def test_default_with_subquery_is_refused(pair):
    same(pair, "DROP TABLE IF EXISTS df_sub")
    same(pair, "CREATE TABLE df_sub (id int DEFAULT (SELECT 1))")


# --------------------------------------------------------------------------------------
# FILTER
# --------------------------------------------------------------------------------------

FILTER_QUERIES = [
    "SELECT count(*) FILTER (WHERE x > 1), count(x) FILTER (WHERE y > 0), sum(x) FILTER (WHERE y IS NULL), "
    "count(*) FROM df_v",
    "SELECT g, count(*) FILTER (WHERE x > 1), sum(x) FILTER (WHERE x > 1), avg(y) FILTER (WHERE x <> 4), "
    "min(x) FILTER (WHERE y < 0), max(y) FILTER (WHERE g = 1) FROM df_v GROUP BY g ORDER BY g",
    "SELECT count(DISTINCT x) FILTER (WHERE x > 1), sum(DISTINCT x) FILTER (WHERE g = 2) FROM df_v",
    "SELECT array_agg(x) FILTER (WHERE x IS NOT NULL), string_agg(x::text, ',') FILTER (WHERE x > 2) FROM df_v",
    "SELECT bool_and(x > 0) FILTER (WHERE x IS NOT NULL), bool_or(x > 3) FILTER (WHERE g = 1) FROM df_v",
    "SELECT count(*) FILTER (WHERE NULL), sum(x) FILTER (WHERE false), count(*) FILTER (WHERE true) FROM df_v",
    "SELECT count(*) FILTER (WHERE x > 100) FROM df_v GROUP BY g ORDER BY g",
    "SELECT g FROM df_v GROUP BY g HAVING count(*) FILTER (WHERE x > 1) > 0 ORDER BY g",
    "SELECT g, sum(x) FILTER (WHERE x > 1) AS s FROM df_v GROUP BY g ORDER BY sum(x) FILTER (WHERE x > 1) NULLS FIRST",
    "SELECT count(*) FILTER (WHERE x > 1), count(*) FILTER (WHERE x > 2), count(*) FROM df_v",
    "SELECT (SELECT count(*) FILTER (WHERE w.x > v.g) FROM df_v w) FROM df_v v ORDER BY g, x",
    # errors
    "SELECT count(*) FILTER (WHERE count(*) > 1) FROM df_v",
    "SELECT sum(x) FILTER (WHERE x) FROM df_v",
    "SELECT lower('A') FILTER (WHERE true)",
    "SELECT abs(x) FILTER (WHERE x > 1) FROM df_v",
    "SELECT x FROM df_v WHERE count(*) FILTER (WHERE x > 1) > 0",
]


@pytest.mark.parametrize("sql", FILTER_QUERIES)
def test_filter_matches_postgres(pair, sql):
    same(pair, sql)


def test_filter_with_parameter(pair):
    same(pair, "SELECT count(*) FILTER (WHERE x > %s), sum(x) FILTER (WHERE g = %s) FROM df_v", (1, 2))


# --------------------------------------------------------------------------------------
# round / floor / ceil
# --------------------------------------------------------------------------------------

ROUNDING = [
    "SELECT v, round(v), floor(v), ceil(v), ceiling(v) FROM unnest(ARRAY[0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.4999, "
    "1e15, -0.0]::float8[]) v",
    "SELECT round(2.5::float4), pg_typeof(round(2.5::float4)), floor(-2.5::float4), pg_typeof(ceil(1::float4))",
    "SELECT round(2.5), round(-2.5), round(0.5), pg_typeof(round(2.5)), round(2.567, 2), round(-2.565, 2)",
    "SELECT round(5), pg_typeof(round(5)), round(7::int8), pg_typeof(floor(5::int2)), ceil(3)",
    "SELECT round('2.5'), pg_typeof(round('2.5'))",
    "SELECT round(y), floor(y), ceil(y) FROM df_v ORDER BY g, x NULLS LAST, y NULLS LAST",
    "SELECT round('nan'::float8)::text, round('-infinity'::float8), floor('infinity'::float8), round(NULL::float8)",
]


@pytest.mark.parametrize("sql", ROUNDING)
def test_rounding_matches_postgres(pair, sql):
    same(pair, sql)
