"""pg_stat_statements, differential with PostgreSQL 15 (shared_preload_libraries =
pg_stat_statements, see conftest.py).

After pg_stat_statements_reset() both servers run the same statements, and the view's
normalized texts, calls and rows must be equal: pgbench's tpcb-like transactions in the
simple and the extended (prepared) protocol, each statement called once per
transaction; literals, IN lists, negative numbers, strings, casts and comments in simple
queries, several statements in one Query message, utility statements, and statements
that fail (not counted). Also: the settings, pg_stat_statements_info, and what another,
unprivileged role sees (`<insufficient privilege>`) and may do (no reset).
"""

import subprocess

import psycopg
import pytest

from conftest import pg_tool

# The view, without the statements that read or reset it.
STATS = """SELECT query, calls, rows FROM pg_stat_statements
           WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY query, calls"""
ROLE = "pss_other"


def psql(server, sql, user="postgres"):
    """`sql` as one simple-protocol Query message (psql -c), its error text if any."""
    res = subprocess.run(
        [pg_tool("psql"), "-X", "-q", "-h", server.host, "-p", str(server.port), "-U", user,
         "-d", "postgres", "-c", sql],
        capture_output=True, text=True, timeout=120)
    return res.stderr.strip()


def pgbench(server, *args):
    cmd = [pg_tool("pgbench"), "-h", server.host, "-p", str(server.port), "-U", "postgres",
           *args, "postgres"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, f"{cmd}\n{res.stdout}\n{res.stderr}"


def stats(server):
    with server.connect(autocommit=True) as c:
        return c.execute(STATS).fetchall()


def reset(server):
    with server.connect(autocommit=True) as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        c.execute("SELECT pg_stat_statements_reset()")


@pytest.fixture(scope="module")
def both(target, postgres_fresh):
    for s in (target, postgres_fresh):
        pgbench(s, "-i", "-s", "1", "-q")
    return target, postgres_fresh


@pytest.mark.parametrize("mode", ["simple", "prepared"])
def test_pgbench_statements_counted_once_per_transaction(both, mode):
    clients, per_client = 4, 50
    seen = []
    for s in both:
        reset(s)
        pgbench(s, "-n", "-M", mode, "-c", str(clients), "-t", str(per_client))
        seen.append(stats(s))
    meridian, postgres = seen
    assert meridian == postgres
    transactions = clients * per_client
    calls = {" ".join(q.split()[:2]): c for q, c, _ in postgres}
    # PostgreSQL 15 counts a prepared utility statement's first execution only.
    utility_calls = clients if mode == "prepared" else transactions
    assert calls == {"BEGIN": utility_calls, "END": utility_calls,
                     "UPDATE pgbench_accounts": transactions,
                     "SELECT abalance": transactions,
                     "UPDATE pgbench_tellers": transactions,
                     "UPDATE pgbench_branches": transactions,
                     "INSERT INTO": transactions,
                     "select count(*)": 1, "select o.n,": 1}, postgres


CASES = [
    "CREATE TABLE pss_t (id int PRIMARY KEY, name text)",
    "INSERT INTO pss_t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
    "INSERT INTO pss_t VALUES (4, 'd')",
    "SELECT 1",
    "select 2",
    "SELECT id FROM pss_t WHERE id IN (1, 2, 3) ORDER BY 1",
    "SELECT id FROM pss_t WHERE id IN (3, 4, 5) ORDER BY 1",
    "SELECT -5 + id FROM pss_t WHERE id = -1",
    "SELECT 'x' || name FROM pss_t WHERE name = 'b'",
    "SELECT '1'::int + 2",
    "SELECT /* a comment */ 42",
    "SELECT 43 -- trailing comment",
    "SELECT 7; SELECT 'y', 8 ; UPDATE pss_t SET name = 'z' WHERE id > 1",
    "SET work_mem = '8MB'",
    "BEGIN; SELECT 3; COMMIT",
    "SHOW pg_stat_statements.track",
    "SELECT * FROM pss_missing",
    "SELECT 1; SELECT * FROM pss_missing",
    "INSERT INTO pss_t VALUES (1, 'dup')",
    "DROP TABLE pss_t",
]


def test_normalization_and_counting(target, postgres_fresh):
    seen = []
    for s in (target, postgres_fresh):
        with s.connect(autocommit=True) as c:
            c.execute("DROP TABLE IF EXISTS pss_t")
        reset(s)
        errors = [psql(s, sql) != "" for sql in CASES]
        seen.append((errors, stats(s)))
    assert seen[0] == seen[1]
    errors, rows = seen[1]
    assert errors.count(True) == 3
    # SELECT 1, select 2, 7, 3, 42, 43 and the 1 before the failure: one shape, the text
    # as first seen.
    assert ("SELECT $1", 7, 7) in rows, rows


def test_reset_settings_and_info(target, postgres_fresh):
    seen = []
    for s in (target, postgres_fresh):
        reset(s)
        psql(s, "SELECT 11")
        with s.connect(autocommit=True) as c:
            before = c.execute("SELECT count(*) FROM pg_stat_statements"
                               " WHERE query = 'SELECT $1'").fetchone()[0]
            settings = [c.execute(f"SHOW pg_stat_statements.{n}").fetchone()[0]
                        for n in ("max", "track", "track_utility", "track_planning", "save")]
            c.execute("SELECT pg_stat_statements_reset()")
            after = c.execute("SELECT query FROM pg_stat_statements ORDER BY query").fetchall()
            info = c.execute("SELECT dealloc, stats_reset > now() - interval '1 hour'"
                             " FROM pg_stat_statements_info").fetchall()
            ext = c.execute("SELECT current_setting('pg_stat_statements.max')").fetchone()
        seen.append((before, settings, after, info, ext))
    assert seen[0] == seen[1]
    assert seen[1][0] == 1 and seen[1][2] == [("SELECT pg_stat_statements_reset()",)]


def test_other_roles_see_no_text(target, postgres_fresh):
    seen = []
    for s in (target, postgres_fresh):
        with s.connect(autocommit=True) as su:
            su.execute(f"DROP ROLE IF EXISTS {ROLE}")
            su.execute(f"CREATE ROLE {ROLE} LOGIN")
        try:
            reset(s)
            psql(s, "SELECT 99")
            psql(s, "SELECT 98, 'own'", user=ROLE)
            with s.connect(user=ROLE, autocommit=True) as c:
                rows = c.execute(
                    "SELECT query, queryid IS NULL, calls FROM pg_stat_statements"
                    " WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY query").fetchall()
                try:
                    c.execute("SELECT pg_stat_statements_reset()")
                    denied = None
                except psycopg.Error as e:
                    denied = e.sqlstate
        finally:
            with s.connect(autocommit=True) as su:
                su.execute(f"DROP ROLE {ROLE}")
        seen.append((rows, denied))
    # PostgreSQL may or may not list the superuser's reset yet: compare distinct rows.
    assert [(set(rows), denied) for rows, denied in seen] == [
        ({("<insufficient privilege>", True, 1), ("SELECT $1, $2", False, 1)}, "42501")] * 2
