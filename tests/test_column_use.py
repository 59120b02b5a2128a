"""Scans decode only the columns the operators above them read (decision 0021):
differential against PostgreSQL 15.

Each statement reads a different subset of the tables' columns through filters,
projections, sorts, aggregates (with FILTER), joins (hash and nested loop, inner and
left, spilling past a small work_mem), DISTINCT, UNION, derived tables, LATERAL and
correlated and uncorrelated subqueries, so a column wrongly left NULL by a scan changes
a result. Results and SQLSTATEs must be identical on both servers.
"""

import psycopg
import pytest

ROWS = 20_000

SETUP = [
    "DROP TABLE IF EXISTS cu_b",
    "DROP TABLE IF EXISTS cu_a",
    "DROP TABLE IF EXISTS cu_c",
    "CREATE TABLE cu_a (id int PRIMARY KEY, k int, g int, t text, n numeric)",
    "CREATE TABLE cu_b (id int PRIMARY KEY, k int, g int, t text, n numeric)",
    "CREATE TABLE cu_c (k int, t text)",
    f"INSERT INTO cu_a SELECT i, (i::bigint * 7919) % {ROWS + 3}, i % 100, "
    f"CASE WHEN i % 53 = 0 THEN NULL ELSE 'x' || ((i * 31) % 1000)::text END, (i % 17) * 1.5 "
    f"FROM generate_series(1, {ROWS}) i",
    f"INSERT INTO cu_b SELECT i, CASE WHEN i % 41 = 0 THEN NULL ELSE (i * 13) % {ROWS} END, i % 7, "
    f"'x' || ((i * 17) % 1000)::text, i % 5 FROM generate_series(1, {ROWS}) i",
    "INSERT INTO cu_c SELECT i % 300, 'x' || (i % 50)::text FROM generate_series(1, 2000) i",
]

STATEMENTS = [
    "SELECT count(*) FROM cu_a",
    "SELECT count(t), count(n) FROM cu_a",
    "SELECT g, count(*), sum(k), max(t), min(n) FROM cu_a GROUP BY g ORDER BY g",
    "SELECT g % 3, sum(k - 1000000), avg(k) FROM cu_a GROUP BY 1 ORDER BY 1",
    "SELECT count(*) FILTER (WHERE t LIKE 'x1%'), sum(k) FILTER (WHERE g > 50), sum(n) FROM cu_a",
    "SELECT id FROM cu_a ORDER BY t DESC, id LIMIT 15",
    "SELECT id, k FROM cu_a WHERE t = 'x10' ORDER BY n, id",
    "SELECT count(*), sum(a.k - b.g) FROM cu_a a JOIN cu_b b ON a.k = b.id",
    "SELECT a.id, b.t FROM cu_a a JOIN cu_b b ON a.k = b.id WHERE b.g < 2 ORDER BY a.id LIMIT 20",
    "SELECT count(*), sum(a.id) FROM cu_a a LEFT JOIN cu_b b ON a.k = b.id + 5 WHERE b.t IS NULL",
    "SELECT a.id, b.n FROM cu_a a LEFT JOIN cu_b b ON a.k = b.id AND b.g = 3 WHERE a.id < 60 ORDER BY a.id",
    "SELECT count(*), max(a.t), min(b.t) FROM cu_a a JOIN cu_b b ON a.k + 1 = b.id AND a.g = b.g",
    "SELECT a.id, c.t FROM cu_a a JOIN cu_c c ON a.g < c.k AND c.k < 2 WHERE a.id < 5 ORDER BY a.id, c.t",
    "SELECT count(*), sum(c.k) FROM cu_a a JOIN cu_b b ON a.k = b.id JOIN cu_c c ON c.k = b.g WHERE a.g = 7",
    "SELECT count(*) FROM (SELECT DISTINCT g, t FROM cu_a) s",
    "SELECT count(*) FROM (SELECT k FROM cu_a UNION SELECT g FROM cu_b) s",
    "SELECT count(*), max(s.t) FROM (SELECT t, k FROM cu_a WHERE g = 3) s WHERE s.k > 100",
    "SELECT count(*) FROM cu_a WHERE k IN (SELECT id FROM cu_b WHERE g < 3)",
    "SELECT count(*) FROM cu_a a WHERE EXISTS (SELECT 1 FROM cu_b b WHERE b.id = a.k AND b.t = a.t)",
    "SELECT a.id, (SELECT b.n FROM cu_b b WHERE b.id = a.k) FROM cu_a a WHERE a.id < 40 ORDER BY a.id",
    "SELECT a.id, x.t FROM cu_a a, LATERAL (SELECT b.t FROM cu_b b WHERE b.id = a.k + a.g) x "
    "WHERE a.id < 30 ORDER BY a.id",
    "SELECT a.g, count(*) FROM cu_a a WHERE a.n > (SELECT avg(n) FROM cu_b WHERE g = a.g % 7) GROUP BY a.g ORDER BY a.g",
    # errors must still come from the columns read
    "SELECT count(*) FROM cu_a WHERE 1 / (g - 50) > 0",
    "SELECT sum(1 / (b.g - 3)) FROM cu_a a JOIN cu_b b ON a.k = b.id",
]


def run(conn, stmt):
    try:
        rows = [tuple(str(v) for v in r) for r in conn.execute(stmt).fetchall()]
        return ("ok", rows if "ORDER BY" in stmt else sorted(rows))
    except psycopg.Error as e:
        return ("error", e.sqlstate)


@pytest.mark.parametrize("work_mem", ["4MB", "64kB"])
def test_results_match_postgres_whatever_the_columns_read(meridian, postgres, work_mem):
    for server in (meridian, postgres):
        with server.connect(autocommit=True) as conn:
            for s in SETUP:
                conn.execute(s)
    mismatches = []
    with meridian.connect(autocommit=True) as m, postgres.connect(autocommit=True) as p:
        for conn in (m, p):
            conn.execute(f"SET work_mem = '{work_mem}'")
        for stmt in STATEMENTS:
            got, want = run(m, stmt), run(p, stmt)
            if got != want:
                mismatches.append((stmt, str(got)[:300], str(want)[:300]))
    assert not mismatches, "results differ from PostgreSQL 15:\n" + "\n".join(map(repr, mismatches))
