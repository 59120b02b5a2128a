"""Window functions and DISTINCT ON, differential against PostgreSQL 15.

The same small table (NULLs, ties, several partitions) is built on both servers; a few
hundred statements -- every ranking, value and aggregate window function over every
frame form, named windows, several windows in one query, windows in expressions, over
grouped queries and under ORDER BY/LIMIT/DISTINCT, DISTINCT ON, and the errors -- run on
both, and their results and SQLSTATEs must be identical; then randomly drawn window
specifications. Where a function's result depends on the order of peers (row_number,
lag, first_value, ROWS frames, …) the window's ORDER BY is a total order, so the result
is PostgreSQL's whatever order peers come in.

Last, a window over 1,000,000 rows with `work_mem = 1MB` under a 64MB query memory: the
sort below it spills and partitions are held one at a time, so it finishes and matches.
"""

import random

import psycopg
import pytest

from conftest import finish_server, run_on_each, start_server

SEED = 20261127
RANDOM_STATEMENTS = 150

SETUP = [
    "DROP TABLE IF EXISTS w_t",
    "CREATE TABLE w_t (id int PRIMARY KEY, a int, b int, x numeric(10,2), s text, d date, flag bool)",
    "INSERT INTO w_t SELECT g, CASE WHEN g % 11 = 0 THEN NULL ELSE g % 4 END, "
    "CASE WHEN g % 13 = 0 THEN NULL ELSE (g * 7) % 10 END, "
    "CASE WHEN g % 17 = 0 THEN NULL ELSE ((g * 37) % 100) / 4.0 END, "
    "CASE WHEN g % 19 = 0 THEN NULL ELSE 's' || ((g * 3) % 8) END, "
    "CASE WHEN g % 23 = 0 THEN NULL ELSE DATE '2026-01-01' + (g * 5) % 30 END, "
    "g % 3 <> 0 FROM generate_series(1, 120) g",
]

PARTITIONS = ["", "PARTITION BY a", "PARTITION BY a, flag"]
TOTAL_ORDERS = ["ORDER BY id", "ORDER BY b, id", "ORDER BY b DESC NULLS LAST, id DESC",
                "ORDER BY x NULLS FIRST, id"]
ROWS_FRAMES = [
    "",
    "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
    "ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING",
    "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
    "ROWS BETWEEN 3 FOLLOWING AND 5 FOLLOWING",
    "ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING",
    "ROWS 2 PRECEDING",
    "RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
    "GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING",
]
# Orders with ties, and the frames that take peers whole.
TIE_ORDERS = ["ORDER BY b", "ORDER BY b DESC", "ORDER BY b NULLS FIRST", "ORDER BY b DESC NULLS LAST"]
PEER_FRAMES = [
    "",
    "RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
    "GROUPS BETWEEN 2 PRECEDING AND CURRENT ROW",
    "GROUPS BETWEEN 1 FOLLOWING AND 3 FOLLOWING",
    "RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING",
    "RANGE BETWEEN UNBOUNDED PRECEDING AND 3 PRECEDING",
    "RANGE 1 PRECEDING",
]
ORDERED_FUNCS = ["row_number()", "ntile(3)", "lag(x)", "lag(x, 2, 0)", "lead(s, 1, 'none')",
                 "lead(b, -1)", "first_value(s)", "last_value(x)", "nth_value(b, 2)",
                 "array_agg(id)", "string_agg(s, ',')"]
PEER_FUNCS = ["rank()", "dense_rank()", "percent_rank()", "cume_dist()", "count(*)", "count(b)",
              "sum(x)", "avg(b)", "min(s)", "max(d)", "bool_and(flag)", "bool_or(flag)",
              "sum(x) FILTER (WHERE flag)", "count(*) FILTER (WHERE b > 4)"]


def select(funcs, spec):
    cols = ", ".join(f"{f} OVER ({spec})" for f in funcs)
    return f"SELECT id, {cols} FROM w_t ORDER BY id"


def spec(*parts):
    return " ".join(p for p in parts if p)


def statements():
    out = []
    for p in PARTITIONS:
        for o in TOTAL_ORDERS:
            for f in ROWS_FRAMES:
                s = spec(p, o, f)
                out.append(select(ORDERED_FUNCS, s))
                out.append(select(PEER_FUNCS, s))
        for o in TIE_ORDERS:
            for f in PEER_FRAMES:
                out.append(select(PEER_FUNCS, spec(p, o, f)))
        out.append(select(["count(*)", "sum(x)", "min(b)", "rank()", "cume_dist()"], p))
    out += [
        # named windows, copied and extended
        "SELECT id, sum(x) OVER w, rank() OVER w FROM w_t WINDOW w AS (PARTITION BY a ORDER BY b) ORDER BY id",
        "SELECT id, row_number() OVER (w ORDER BY id), count(*) OVER w FROM w_t WINDOW w AS (PARTITION BY a) ORDER BY id",
        "SELECT id, sum(b) OVER (w ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM w_t "
        "WINDOW w AS (PARTITION BY a ORDER BY id) ORDER BY id",
        "SELECT id, sum(b) OVER w2 FROM w_t WINDOW w1 AS (PARTITION BY flag), w2 AS (w1 ORDER BY id) ORDER BY id",
        "SELECT id, b FROM w_t WINDOW w AS (ORDER BY b) ORDER BY id LIMIT 5",
        # several windows, in expressions, under ORDER BY / LIMIT / DISTINCT
        "SELECT id, row_number() OVER (ORDER BY id DESC), rank() OVER (PARTITION BY a ORDER BY b), "
        "sum(x) OVER (PARTITION BY flag), count(*) OVER () FROM w_t ORDER BY id",
        "SELECT id, sum(x) OVER () * 2, x - lag(x) OVER (ORDER BY id), "
        "coalesce(lead(b) OVER (PARTITION BY a ORDER BY id), -1) + b FROM w_t ORDER BY id",
        "SELECT id, b FROM w_t ORDER BY row_number() OVER (ORDER BY b DESC, id) LIMIT 10",
        "SELECT id, rank() OVER (ORDER BY b) AS r FROM w_t ORDER BY r DESC, id LIMIT 7 OFFSET 3",
        "SELECT DISTINCT a, count(*) OVER (PARTITION BY a) FROM w_t ORDER BY a",
        "SELECT DISTINCT dense_rank() OVER (ORDER BY b) FROM w_t ORDER BY 1",
        "SELECT * FROM (SELECT id, a, row_number() OVER (PARTITION BY a ORDER BY id) AS rn FROM w_t) s "
        "WHERE rn <= 2 ORDER BY id",
        "SELECT id, (SELECT count(*) FROM w_t t2 WHERE t2.a = w_t.a), sum(b) OVER (PARTITION BY a) FROM w_t ORDER BY id",
        "SELECT row_number() OVER ()",
        "SELECT count(*) OVER (), sum(g) OVER (ORDER BY g) FROM generate_series(1, 5) g ORDER BY 2",
        "SELECT id, sum(b) OVER (PARTITION BY a ORDER BY id) FROM w_t WHERE b > 3 ORDER BY id",
        "SELECT t1.id, rank() OVER (PARTITION BY t2.a ORDER BY t1.b) FROM w_t t1 JOIN w_t t2 ON t1.id = t2.id + 1 "
        "ORDER BY t1.id",
        # over grouped queries
        "SELECT a, sum(x), rank() OVER (ORDER BY sum(x) DESC) FROM w_t GROUP BY a ORDER BY a",
        "SELECT a, sum(sum(x)) OVER (ORDER BY a) FROM w_t GROUP BY a ORDER BY a",
        "SELECT a, count(*) OVER () FROM w_t GROUP BY a ORDER BY a",
        "SELECT flag, a, count(*), row_number() OVER (PARTITION BY flag ORDER BY count(*), a) "
        "FROM w_t GROUP BY flag, a ORDER BY flag, a",
        "SELECT a, avg(b) OVER (ORDER BY a, b ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM w_t GROUP BY a, b "
        "HAVING count(*) > 1 ORDER BY a, b",
        "SELECT rank() OVER (ORDER BY sum(b)) FROM w_t",
        # RANGE offsets over integer and numeric keys
        "SELECT id, count(*) OVER (ORDER BY x DESC RANGE BETWEEN 2.25 PRECEDING AND 1 FOLLOWING) FROM w_t ORDER BY id",
        "SELECT id, count(*) OVER (ORDER BY d GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w_t ORDER BY id",
        "SELECT id, sum(b) OVER (ORDER BY x RANGE BETWEEN 1.5 PRECEDING AND 2 FOLLOWING) FROM w_t ORDER BY id",
        "SELECT id, count(*) OVER (PARTITION BY a ORDER BY b RANGE BETWEEN 1 FOLLOWING AND 3 FOLLOWING) "
        "FROM w_t ORDER BY id",
        "SELECT id, sum(b) OVER (ORDER BY b RANGE BETWEEN 2147483647 PRECEDING AND 2147483647 FOLLOWING) "
        "FROM w_t ORDER BY id",
        "SELECT id, count(*) OVER (ORDER BY id ROWS BETWEEN 9223372036854775807 PRECEDING AND CURRENT ROW) "
        "FROM w_t ORDER BY id",
        # lag/lead/ntile/nth_value edge cases
        "SELECT id, lag(b, 200) OVER (ORDER BY id), lead(b, 0) OVER (ORDER BY id), "
        "lag(b, NULL) OVER (ORDER BY id), ntile(500) OVER (ORDER BY id), nth_value(x, 1000) OVER () "
        "FROM w_t ORDER BY id",
        "SELECT id, lag(s, 1, s) OVER (PARTITION BY a ORDER BY id), ntile(NULL) OVER () FROM w_t ORDER BY id",
        "SELECT id, first_value(b) OVER (ORDER BY id ROWS BETWEEN 5 FOLLOWING AND 6 FOLLOWING) FROM w_t ORDER BY id",
        # DISTINCT ON
        "SELECT DISTINCT ON (a) a, id, x FROM w_t ORDER BY a, id",
        "SELECT DISTINCT ON (a) a, id FROM w_t ORDER BY a, x DESC NULLS LAST, id",
        "SELECT DISTINCT ON (a, flag) a, flag, id FROM w_t ORDER BY a, flag, id DESC",
        "SELECT DISTINCT ON (flag, a) a, flag, id FROM w_t ORDER BY a, flag, id",
        "SELECT DISTINCT ON (a) id FROM w_t ORDER BY a, id",
        "SELECT DISTINCT ON (1) a, id FROM w_t ORDER BY 1, 2",
        "SELECT DISTINCT ON (a) a FROM w_t",
        "SELECT DISTINCT ON (a % 3) a, id FROM w_t ORDER BY a % 3, id",
        "SELECT DISTINCT ON (a) a, id FROM w_t ORDER BY a, id LIMIT 3",
        "SELECT DISTINCT ON (a) a, id, row_number() OVER (ORDER BY id) FROM w_t ORDER BY a, id DESC",
        "SELECT DISTINCT ON (a) a, count(*) FROM w_t GROUP BY a, b ORDER BY a, count(*) DESC, b",
        "SELECT DISTINCT ON (b) b, s FROM w_t WHERE b IS NOT NULL ORDER BY b, s NULLS FIRST",
        # errors
        "SELECT id FROM w_t WHERE row_number() OVER () > 1",
        "SELECT a FROM w_t GROUP BY row_number() OVER ()",
        "SELECT a FROM w_t GROUP BY a HAVING rank() OVER () > 1",
        "SELECT sum(row_number() OVER ()) OVER () FROM w_t",
        "SELECT row_number() OVER (ORDER BY rank() OVER ()) FROM w_t",
        "SELECT sum(row_number() OVER ()) FROM w_t",
        "SELECT abs(b) OVER () FROM w_t",
        "SELECT rank() OVER w FROM w_t",
        "SELECT rank() OVER (w ORDER BY b) FROM w_t",
        "SELECT rank(b) OVER () FROM w_t",
        "SELECT sum(b) OVER (ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM w_t",
        "SELECT sum(b) OVER (ROWS BETWEEN CURRENT ROW AND UNBOUNDED PRECEDING) FROM w_t",
        "SELECT sum(b) OVER (ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM w_t",
        "SELECT sum(b) OVER (ROWS BETWEEN 1 FOLLOWING AND CURRENT ROW) FROM w_t",
        "SELECT sum(b) OVER (ROWS 1 FOLLOWING) FROM w_t",
        "SELECT sum(b) OVER (ORDER BY id ROWS BETWEEN (-1) PRECEDING AND CURRENT ROW) FROM w_t",
        "SELECT sum(b) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND (0 - 2) FOLLOWING) FROM w_t",
        "SELECT sum(b) OVER (ORDER BY b RANGE BETWEEN (-1) PRECEDING AND CURRENT ROW) FROM w_t",
        "SELECT sum(b) OVER (ORDER BY id ROWS BETWEEN NULL PRECEDING AND CURRENT ROW) FROM w_t",
        "SELECT ntile(0) OVER () FROM w_t",
        "SELECT nth_value(b, 0) OVER () FROM w_t",
        "SELECT sum(b) OVER (RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w_t",
        "SELECT sum(b) OVER (ORDER BY a, b RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w_t",
        "SELECT sum(b) OVER (GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w_t",
        "SELECT rank() OVER (w PARTITION BY b) FROM w_t WINDOW w AS (PARTITION BY a)",
        "SELECT rank() OVER (w ORDER BY b) FROM w_t WINDOW w AS (ORDER BY a)",
        "SELECT rank() OVER (w) FROM w_t WINDOW w AS (ORDER BY a ROWS UNBOUNDED PRECEDING)",
        "SELECT rank() OVER w FROM w_t WINDOW w AS (ORDER BY a), w AS (ORDER BY b)",
        "SELECT count(DISTINCT b) OVER () FROM w_t",
        "SELECT array_agg(b ORDER BY id) OVER () FROM w_t",
        "SELECT row_number() FILTER (WHERE b > 1) OVER () FROM w_t",
        "SELECT sum(b) OVER (), count(*) FROM w_t",
        "SELECT DISTINCT ON (a) a, id FROM w_t ORDER BY id",
        "SELECT DISTINCT ON (a, b) a, b FROM w_t ORDER BY a, id, b",
    ]
    return out


def run(conn, stmt):
    """('ok', rows), sorted unless the query's order is total, or ('error', sqlstate)."""
    try:
        cur = conn.execute(stmt)
        rows = [tuple(str(v) for v in row) for row in cur.fetchall()]
        ordered = stmt.endswith("ORDER BY id") or " LIMIT " in stmt
        return ("ok", rows if ordered else sorted(rows))
    except psycopg.Error as e:
        return ("error", e.sqlstate)
    finally:
        conn.rollback()


def random_frame(rng, units):
    kinds = ["UNBOUNDED PRECEDING", "P", "CURRENT ROW", "F", "UNBOUNDED FOLLOWING"]
    while True:
        s, e = sorted(rng.sample(range(5), 2)) if rng.random() < 0.8 else (rng.choice([1, 2, 3]),) * 2
        if s == 4 or e == 0 or (s == 3 and e < 3):
            continue
        bound = lambda k: {"P": f"{rng.randint(0, 3)} PRECEDING", "F": f"{rng.randint(0, 3)} FOLLOWING"}.get(kinds[k], kinds[k])
        return f"{units} BETWEEN {bound(s)} AND {bound(e)}"


def random_statement(rng):
    partition = rng.choice(["", "PARTITION BY a", "PARTITION BY flag", "PARTITION BY a % 2, flag"])
    units = rng.choice(["ROWS", "RANGE", "GROUPS"])
    if units == "ROWS":
        order = rng.choice(TOTAL_ORDERS)
        funcs = rng.sample(ORDERED_FUNCS + PEER_FUNCS, 4)
    else:
        order = rng.choice(["ORDER BY b", "ORDER BY b DESC", "ORDER BY x NULLS FIRST", "ORDER BY d"])
        if order == "ORDER BY d" and units == "RANGE":
            units = "GROUPS"  # a date key's RANGE offsets are intervals
        funcs = rng.sample(PEER_FUNCS, 4)
    return select(funcs, spec(partition, order, random_frame(rng, units)))


@pytest.fixture(scope="module")
def servers(target, postgres):
    return run_on_each([target, postgres], SETUP)


def first_difference(result, other):
    """`result` where it first differs from `other` (a row, or the error)."""
    if result[0] == "error" or other[0] == "error":
        return str(result)[:200]
    for i, row in enumerate(result[1]):
        if i >= len(other[1]) or row != other[1][i]:
            return f"row {i}: {row}"
    return f"{len(result[1])} rows"


def compare(servers, stmts):
    target, postgres = servers
    mismatches = []
    kinds = {"ok": 0, "error": 0}
    with target.connect() as m, postgres.connect() as p:
        for stmt in stmts:
            got, want = run(m, stmt), run(p, stmt)
            kinds[want[0]] += 1
            if got != want:
                mismatches.append(f"{stmt}\n  meridian: {first_difference(got, want)}\n"
                                  f"  postgres: {first_difference(want, got)}")
    assert not mismatches, f"{len(mismatches)} of {len(stmts)} differ:\n" + "\n".join(mismatches[:40])
    return kinds


def test_window_functions_and_distinct_on_match_postgres(servers):
    stmts = statements()
    assert len(stmts) > 300
    kinds = compare(servers, stmts)
    assert kinds["error"] >= 30 and kinds["ok"] >= 270, kinds


def test_random_window_specifications_match_postgres(servers):
    rng = random.Random(SEED)
    compare(servers, [random_statement(rng) for _ in range(RANDOM_STATEMENTS)])


def test_explain_shows_window_agg_and_unique(servers):
    target, _ = servers
    with target.connect() as conn:
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT id, rank() OVER (PARTITION BY a ORDER BY b) FROM w_t").fetchall())
        assert "WindowAgg" in plan and "Sort" in plan, plan
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT DISTINCT ON (a) a, id FROM w_t ORDER BY a, id").fetchall())
        assert "Unique" in plan and "Sort" in plan, plan


def test_statement_timeout_ends_a_window_computation(target):
    """A frame that moves its start re-aggregates per row: over 300,000 rows that is
    days of work, which statement_timeout must end (57014), leaving the session usable."""
    with target.connect() as conn:
        conn.execute("SET statement_timeout = '300ms'")
        with pytest.raises(psycopg.errors.QueryCanceled):
            conn.execute("SELECT max(s) FROM (SELECT sum(g) OVER (ORDER BY g ROWS BETWEEN CURRENT ROW "
                         "AND UNBOUNDED FOLLOWING) AS s FROM generate_series(1, 300000) g) t")
        conn.rollback()
        assert conn.execute("SELECT 1").fetchone() == (1,)


BIG_ROWS = 1_000_000


@pytest.fixture(scope="module")
def small_memory(server_kind, tmp_path_factory):
    if server_kind != "meridian":
        pytest.skip("--query-memory is set through `meridian start`'s settings file")
    config = tmp_path_factory.mktemp("window") / "meridian.toml"
    config.write_text('query_memory = "64MB"\n')  # read by Meridian only
    server = start_server(server_kind, config=str(config))
    try:
        yield server
    finally:
        finish_server(server)


def test_window_over_a_million_rows_stays_within_query_memory(small_memory, postgres):
    setup = [
        "DROP TABLE IF EXISTS w_big",
        "CREATE TABLE w_big (id int PRIMARY KEY, g int, v int)",
        f"INSERT INTO w_big SELECT i, i % 1000, (i::bigint * 7919) % 1000 FROM generate_series(1, {BIG_ROWS}) i",
    ]
    run_on_each([small_memory, postgres], setup)
    query = ("SELECT sum(rn), sum(s), sum(l), count(*) FROM (SELECT row_number() OVER w AS rn, "
             "sum(v) OVER (w ROWS BETWEEN 5 PRECEDING AND 5 FOLLOWING) AS s, "
             "coalesce(lag(v) OVER w, 0) AS l FROM w_big WINDOW w AS (PARTITION BY g ORDER BY id)) t")
    results = []
    for server in (small_memory, postgres):
        with server.connect() as conn:
            conn.execute("SET work_mem = '1MB'")
            results.append(conn.execute(query).fetchall())
    assert results[0] == results[1]
    assert results[0][0][3] == BIG_ROWS
