"""Rows found by a prefix of a composite primary key (issue 31 item 2): equality on the
leading key columns, a range on the next one, an IN list or `= ANY (array)` on one key
column with the others pinned. PostgreSQL reads these through the primary key's index;
Meridian reads a range of storage keys or a list of keys.

Every query runs on the server under test and on a real PostgreSQL 15 in the same test
and must give the same rows: a randomized run over integer and text keys (bounds that
fall between, on and past stored values, NULLs, empty and duplicate lists, parameters of
wider integer types), the same conditions in UPDATE and DELETE with RETURNING, and
EXPLAIN on Meridian naming the key's index scan, never a Seq Scan.
"""

from __future__ import annotations

import os
import random

import psycopg
import pytest

SEED = int(os.environ.get("MERIDIAN_KEY_ACCESS_SEED", "2711"))

TABLES = {
    "ka_int": "w int, d int, o int, n int, v text, PRIMARY KEY (w, d, o, n)",
    "ka_text": "a text, b text, c int, v int, PRIMARY KEY (a, b, c)",
}


@pytest.fixture
def pair(postgres, target):
    conns = [psycopg.connect(s.dsn, autocommit=True) for s in (postgres, target)]
    for c in conns:
        for name, columns in TABLES.items():
            c.execute(f"DROP TABLE IF EXISTS {name}")
            c.execute(f"CREATE TABLE {name} ({columns})")
        c.execute("INSERT INTO ka_int SELECT w, d, o, n, w || '/' || d || '/' || o || '/' || n"
                  " FROM generate_series(1, 3) w, generate_series(1, 4) d,"
                  " generate_series(1, 12) o, generate_series(1, 3) n")
        c.execute("INSERT INTO ka_text SELECT a, b, c, length(a) * 100 + c FROM"
                  " unnest(ARRAY['', 'a', 'ab', 'abc', 'b', 'ba', 'z']) a,"
                  " unnest(ARRAY['', 'x', 'xy', 'y', 'yz']) b, generate_series(1, 3) c")
    yield conns
    for c in conns:
        for name in TABLES:
            c.execute(f"DROP TABLE IF EXISTS {name}")
        c.close()


def outcome(conn, sql, params=None):
    try:
        cur = conn.execute(sql, params)
        return ("ok", cur.statusmessage, sorted(cur.fetchall(), key=repr))
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary)


def same(pair, sql, params=None):
    got = [outcome(c, sql, params) for c in pair]
    assert got[1] == got[0], (sql, params)
    return got[1]


def plan(conn, sql, params=None) -> list[str]:
    cur = psycopg.ClientCursor(conn)
    return [r[0] for r in cur.execute("EXPLAIN " + cur.mogrify(sql, params))]


INT_KEY = ["w", "d", "o", "n"]
TEXT_KEY = ["a", "b", "c"]
INT_VALUES = [0, 1, 2, 3, 5, 12, 13, None]
TEXT_VALUES = ["", "a", "ab", "abc", "abd", "b", "x", "xy", "xz", "z", None]


def value(rng, column):
    if column == "c" or column in INT_KEY:
        return rng.choice(INT_VALUES)
    return rng.choice(TEXT_VALUES)


def condition(rng, table) -> tuple[str, list]:
    """Equality on a random prefix of the key, then a range, a list, ANY or nothing on
    the next column, with equality on the rest for lists (so that the whole key is
    pinned) half of the time."""
    key = INT_KEY if table == "ka_int" else TEXT_KEY
    pinned = rng.randint(0, len(key) - 1)
    parts, params = [], []
    for col in key[:pinned]:
        parts.append(f"{col} = %s")
        params.append(value(rng, col))
    nxt = key[pinned]
    kind = rng.choice(["range", "range", "in", "any", "none"])
    if kind == "range":
        for op in rng.sample(["<", "<=", ">", ">="], rng.randint(1, 2)):
            parts.append(f"{nxt} {op} %s")
            params.append(value(rng, nxt))
    elif kind in ("in", "any"):
        values = [value(rng, nxt) for _ in range(rng.randint(0 if kind == "any" else 1, 4))]
        if kind == "in":
            parts.append(f"{nxt} IN ({', '.join(['%s'] * len(values))})")
            params.extend(values)
        else:
            parts.append(f"{nxt} = ANY (%s)")
            params.append(values)
        if rng.random() < 0.5:
            for col in key[pinned + 1:]:
                parts.append(f"{col} = %s")
                params.append(value(rng, col))
    if not parts:
        parts.append(f"{key[0]} = %s")
        params.append(value(rng, key[0]))
    return " AND ".join(parts), params


def test_random_conditions_on_key_prefixes(pair):
    rng = random.Random(SEED)
    for _ in range(300):
        table = rng.choice(list(TABLES))
        where, params = condition(rng, table)
        same(pair, f"SELECT * FROM {table} WHERE {where}", params)
        if rng.random() < 0.2:
            key = ", ".join(INT_KEY if table == "ka_int" else TEXT_KEY)
            same(pair, f"SELECT * FROM {table} WHERE {where} ORDER BY {key} LIMIT 3", params)


def test_writes_through_key_prefixes(pair):
    rng = random.Random(SEED + 1)
    for i in range(60):
        table = rng.choice(list(TABLES))
        where, params = condition(rng, table)
        if rng.random() < 0.5:
            column, new = ("v", f"'u{i}'") if table == "ka_int" else ("v", f"v + {i}")
            same(pair, f"UPDATE {table} SET {column} = {new} WHERE {where} RETURNING *", params)
        else:
            same(pair, f"DELETE FROM {table} WHERE {where} RETURNING *", params)
    for table in TABLES:
        same(pair, f"SELECT * FROM {table}")


def test_wider_parameters_and_a_null_array(pair):
    same(pair, "SELECT * FROM ka_int WHERE w = %s::int8 AND d = 2 AND o >= %s::int8",
         [2, 11])
    same(pair, "SELECT * FROM ka_int WHERE w = 1 AND d = 1 AND o = 1 AND n = ANY (%s::int8[])",
         [[1, 3, 3, None, 7]])
    same(pair, "SELECT * FROM ka_int WHERE w = 1 AND d = 1 AND o = 1 AND n = ANY (NULL::int[])")
    same(pair, "SELECT * FROM ka_text WHERE a = 'ab' AND b > 'x' AND b < 'yz'")
    same(pair, "SELECT * FROM ka_text WHERE a IN ('ab', 'ab', 'b') AND b = 'xy' AND c = 2")


@pytest.mark.parametrize("sql", [
    "SELECT * FROM ka_int WHERE w = 1 AND d = 2",
    "SELECT * FROM ka_int WHERE w = 1 AND d = 2 AND o < 9 AND o >= 3",
    "SELECT * FROM ka_int WHERE w = 1 AND d = 2 AND o = 3 AND n IN (1, 2)",
    "SELECT * FROM ka_int WHERE w = 1 AND d = ANY ('{1,2}') AND o = 3 AND n = 1",
    "SELECT * FROM ka_text WHERE a = 'ab' AND b >= 'x'",
    "UPDATE ka_int SET v = 'x' WHERE w = 3 AND d = 1",
    "DELETE FROM ka_int WHERE w = 3 AND d = 1 AND o > 10",
])
def test_explain_reads_through_the_key(pair, target, sql):
    if target.kind == "postgres":
        pytest.skip("EXPLAIN's choice on PostgreSQL follows its costs")
    lines = plan(pair[1], sql)
    assert not any("Seq Scan" in line for line in lines), lines
    table = sql.split("FROM ")[-1].split()[0] if "FROM" in sql else sql.split()[1]
    assert any(f"Index Scan using {table}_pkey on {table}" in line for line in lines), lines


JOINS = [
    # TPC-C Stock-Level as the specification writes it: a comma join, conditions in WHERE
    "SELECT count(DISTINCT b.c) FROM ka_int a, ka_text b WHERE a.w = 1 AND a.d = 2"
    " AND a.o < 9 AND a.o >= 3 AND b.a = 'ab' AND b.c = a.n AND b.v < 210",
    "SELECT a.w, a.o, b.b FROM ka_int a JOIN ka_text b ON b.c = a.n"
    " WHERE a.w = 2 AND a.d = 3 AND a.o = 4 AND b.a IN ('a', 'z')",
    # a LEFT JOIN keeps its unmatched rows: a condition on its right side stays above it
    "SELECT a.o, a.n, b.v FROM ka_int a LEFT JOIN ka_text b ON b.a = 'b' AND b.b = 'x'"
    " AND b.c = a.n WHERE a.w = 1 AND a.d = 1 AND a.o <= 2 AND b.v IS NULL",
    "SELECT a.o, a.n, b.v FROM ka_int a LEFT JOIN ka_text b ON b.c = a.n AND b.a = 'b'"
    " AND b.b = 'x' WHERE a.w = 3 AND a.d = 4 AND (b.v > 101 OR b.v IS NULL)",
    # three tables, conditions reading two of them
    "SELECT a.o, b.a, c.o FROM ka_int a, ka_text b, ka_int c WHERE a.w = 1 AND a.d = 1"
    " AND a.o = 1 AND b.a = 'abc' AND b.c = a.n AND c.w = 2 AND c.d = b.c AND c.o = a.n"
    " AND c.n = 1",
    # a subquery in WHERE stays where it was written
    "SELECT a.o, b.c FROM ka_int a JOIN ka_text b ON b.c = a.n WHERE a.w = 1 AND a.d = 1"
    " AND b.a = 'z' AND b.v > (SELECT min(v) FROM ka_text WHERE a = b.a)",
]


@pytest.mark.parametrize("sql", JOINS)
def test_joins_with_their_conditions_in_where(pair, target, sql):
    same(pair, sql)
    if target.kind != "postgres" and "LEFT JOIN" not in sql:
        lines = plan(pair[1], sql)
        assert not any("Seq Scan on ka_int" in line for line in lines), lines


def test_conditions_the_key_applies_are_not_filtered_again(pair, target):
    """An equality or bound on an integer key column is applied by the key range alone:
    the rows are not filtered by it again (no Filter line in the plan). A second bound on
    the same side, any other condition and bounds on text keys stay in the filter; the
    rows are PostgreSQL's either way, for smallint keys and bounds past their range too."""
    for c in pair:
        c.execute("DROP TABLE IF EXISTS ka_small")
        c.execute("CREATE TABLE ka_small (s smallint, t int, PRIMARY KEY (s, t))")
        c.execute("INSERT INTO ka_small SELECT s, t FROM generate_series(-3, 3) s,"
                  " generate_series(1, 5) t")
    try:
        for sql, params in [
            ("SELECT * FROM ka_small WHERE s BETWEEN %s AND %s", [-2, 1]),
            ("SELECT * FROM ka_small WHERE s = %s AND t >= %s", [1, 3]),
            ("SELECT * FROM ka_small WHERE s > %s::int8 AND s < 70000", [-40000]),
            ("SELECT * FROM ka_small WHERE s >= %s + 1 AND t < %s", [0, 3]),
            ("SELECT * FROM ka_small WHERE s > 0 AND s > %s", [1]),
            ("SELECT * FROM ka_small WHERE s = %s AND t > %s", [2, None]),
        ]:
            same(pair, sql, params)
        if target.kind == "postgres":
            return
        for sql, filtered in [
            ("SELECT * FROM ka_int WHERE w = 1 AND d = 2 AND o >= 3 AND o < 9", False),
            ("SELECT * FROM ka_small WHERE s BETWEEN -2 AND 1", False),
            ("SELECT * FROM ka_small WHERE s = 1 AND t = 2", False),
            ("SELECT * FROM ka_small WHERE s > 0 AND s > 1", True),
            ("SELECT * FROM ka_int WHERE w = 1 AND v <> 'x'", True),
            ("SELECT * FROM ka_text WHERE a = 'ab' AND b >= 'x'", True),
        ]:
            lines = plan(pair[1], sql)
            assert any("Index Cond" in line for line in lines), lines
            assert any("Filter:" in line for line in lines) == filtered, (sql, lines)
    finally:
        for c in pair:
            c.execute("DROP TABLE IF EXISTS ka_small")
