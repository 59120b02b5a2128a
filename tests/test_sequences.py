"""Sequences, serial and identity columns answer as PostgreSQL 15 does (issue 31).

Differential: every statement runs on the server under test and on a real PostgreSQL 15
in the same test, and their outcomes (rows, or the error's SQLSTATE) must be equal:

* CREATE/ALTER/DROP SEQUENCE with their options and errors (22023, 42P07, 42P01, 42809,
  2BP01), nextval/currval/setval/lastval (55000, 2200H, 22003), CYCLE, descending
  sequences; nextval is not rolled back with its transaction.
* serial/bigserial/smallserial and GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY through
  every INSERT form and COPY; 428C9; pg_get_serial_sequence; psql's ``\\d`` and ``\\ds``.

Then what only Meridian must show: values unique and increasing per session under
concurrent sessions (on a cluster, of both coordinators), none handed out twice across
kill -9 and restart, and sysbench's ``prepare`` (its table has an ``id SERIAL``).
"""

import shutil
import subprocess
import threading

import psycopg
import pytest

from test_psql_compat import psql

TABLES = ["sq_t", "sq_b", "sq_i", "sq_d", "sq_c", "sq_x"]
SEQUENCES = ["sq_s", "sq_down", "sq_cyc", "sq_small", "sq_own", "sq_used"]


def outcome(conn, sql, params=None):
    """("rows", rows) / ("ok", rowcount) or ("error", SQLSTATE); the session stays usable."""
    try:
        cur = conn.execute(sql, params)
    except psycopg.Error as e:
        return ("error", e.sqlstate)
    if cur.description is None:
        return ("ok", cur.rowcount)
    return ("rows", cur.fetchall())


def reset(conn):
    for t in TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {t}")
    for s in SEQUENCES:
        conn.execute(f"DROP SEQUENCE IF EXISTS {s}")


@pytest.fixture
def pair(postgres, target):
    conns = [psycopg.connect(s.dsn, autocommit=True) for s in (postgres, target)]
    for c in conns:
        reset(c)
    yield conns
    for c in conns:
        c.close()


def same(pair, sql, params=None):
    """Run `sql` on both servers; assert equal outcomes and return PostgreSQL's."""
    reference, server = (outcome(c, sql, params) for c in pair)
    assert server == reference, f"{sql}\n  postgres: {reference}\n  server:   {server}"
    return reference


def run_script(pair, script):
    for sql in script:
        same(pair, sql)


# --------------------------------------------------------------------------------------
# sequences and their functions
# --------------------------------------------------------------------------------------

def test_sequence_functions_and_errors(pair):
    run_script(pair, [
        "SELECT nextval('sq_s')",                       # 42P01
        "CREATE SEQUENCE sq_s",
        "CREATE SEQUENCE sq_s",                         # 42P07
        "CREATE SEQUENCE IF NOT EXISTS sq_s",
        "SELECT currval('sq_s')",                       # 55000
        "SELECT lastval()",                             # 55000
        "SELECT nextval('sq_s'), nextval('sq_s'), nextval('public.sq_s'::regclass)",
        "SELECT currval('sq_s'), lastval()",
        "SELECT setval('sq_s', 100)",
        "SELECT nextval('sq_s'), currval('sq_s')",
        "SELECT setval('sq_s', 7, false), currval('sq_s')",
        "SELECT nextval('sq_s')",
        "SELECT setval('sq_s', 0)",                     # 22003
        "SELECT nextval(NULL::regclass)",
        "SELECT 'sq_s'::regclass::text, pg_typeof(nextval('sq_s'))",
        "CREATE SEQUENCE sq_down INCREMENT BY -5 MINVALUE -12 MAXVALUE 0 START 0",
        "SELECT nextval('sq_down'), nextval('sq_down'), nextval('sq_down')",
        "SELECT nextval('sq_down')",                    # 2200H
        "CREATE SEQUENCE sq_cyc AS smallint START WITH 2 MINVALUE 1 MAXVALUE 3 CYCLE CACHE 1",
        "SELECT nextval('sq_cyc'), nextval('sq_cyc'), nextval('sq_cyc'), nextval('sq_cyc')",
        "ALTER SEQUENCE sq_cyc NO CYCLE",
        "SELECT nextval('sq_cyc'), nextval('sq_cyc')",
        "SELECT nextval('sq_cyc')",                     # 2200H
        "ALTER SEQUENCE sq_cyc RESTART",
        "SELECT nextval('sq_cyc')",
        "ALTER SEQUENCE sq_cyc RESTART WITH 3",
        "SELECT nextval('sq_cyc')",
        "ALTER SEQUENCE sq_cyc RESTART WITH 9",         # 22023
        "ALTER SEQUENCE IF EXISTS sq_nothing RESTART",
        "ALTER SEQUENCE sq_nothing RESTART",            # 42P01
        "CREATE SEQUENCE sq_small AS smallint MAXVALUE 40000",   # 22023
        "CREATE SEQUENCE sq_small AS text",             # 22023
        "CREATE SEQUENCE sq_small INCREMENT 0",         # 22023
        "CREATE SEQUENCE sq_small MINVALUE 5 MAXVALUE 4",        # 22023
        "CREATE SEQUENCE sq_small START 0",             # 22023
        "CREATE SEQUENCE sq_small CACHE 0",             # 22023
        "CREATE SEQUENCE sq_small CACHE 2 CACHE 3",     # 42601
        "CREATE SEQUENCE sq_small AS smallint",
        "SELECT setval('sq_small', 32767), nextval('sq_small')",  # 2200H
        "SELECT seqtypid::regtype, seqstart, seqincrement, seqmax, seqmin, seqcache, seqcycle "
        "FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid "
        "WHERE c.relname LIKE 'sq\\_%' ORDER BY c.relname",
        "SELECT sequencename, data_type, start_value, min_value, max_value, increment_by, "
        "cycle, cache_size FROM pg_sequences WHERE sequencename LIKE 'sq\\_%' ORDER BY 1",
        "SELECT relname, relkind, relnatts FROM pg_class WHERE relname LIKE 'sq\\_%' "
        "ORDER BY 1",
        "CREATE TABLE sq_x (a int PRIMARY KEY)",
        "SELECT nextval('sq_x')",                       # 42809
        "DROP SEQUENCE sq_x",                           # 42809
        "DROP TABLE sq_down",                           # 42809
        "DROP TABLE IF EXISTS sq_down",                 # 42809
        "CREATE SEQUENCE sq_x",                         # 42P07
        "DROP SEQUENCE sq_nothing",                     # 42P01
        "DROP SEQUENCE IF EXISTS sq_nothing, sq_down",
        "SELECT nextval('sq_down')",                    # 42P01
        "DROP SEQUENCE sq_s, sq_cyc RESTRICT",
        "SELECT relname FROM pg_class WHERE relname LIKE 'sq\\_%' ORDER BY 1",
    ])


def test_nextval_is_not_rolled_back(pair):
    run_script(pair, [
        "CREATE SEQUENCE sq_s",
        "BEGIN",
        "SELECT nextval('sq_s')",
        "ROLLBACK",
        "SELECT nextval('sq_s'), currval('sq_s')",
        "BEGIN",
        "SELECT nextval('sq_s')",
        "SELECT 1/0",                                   # 22012: the transaction fails
        "ROLLBACK",
        "SELECT nextval('sq_s')",
    ])


def test_owned_by_and_dependencies(pair):
    run_script(pair, [
        "CREATE TABLE sq_t (id int PRIMARY KEY, v int)",
        "CREATE SEQUENCE sq_own OWNED BY sq_t.nope",    # 42703
        "CREATE SEQUENCE sq_own OWNED BY sq_t.id",
        "CREATE SEQUENCE sq_used",
        "CREATE TABLE sq_b (id int DEFAULT nextval('sq_used'), v int)",
        "INSERT INTO sq_b (v) VALUES (1), (2)",
        "DROP SEQUENCE sq_used",                        # 2BP01
        "DROP SEQUENCE sq_used CASCADE",
        "INSERT INTO sq_b (v) VALUES (3)",
        "SELECT * FROM sq_b ORDER BY v",
        "SELECT pg_get_serial_sequence('sq_t', 'id')",
        "DROP TABLE sq_t",
        "SELECT nextval('sq_own')",                     # 42P01: dropped with its table
    ])


# --------------------------------------------------------------------------------------
# serial and identity columns
# --------------------------------------------------------------------------------------

def copy_rows(conn, sql, rows):
    with conn.cursor() as cur, cur.copy(sql) as copy:
        for r in rows:
            copy.write_row(r)


def test_serial_columns_through_every_insert_form(pair):
    run_script(pair, [
        "CREATE TABLE sq_t (id serial PRIMARY KEY, v text, n int DEFAULT 7)",
        "CREATE TABLE sq_b (id bigserial, s smallserial, v text)",
        "SELECT pg_get_serial_sequence('sq_t', 'id'), pg_get_serial_sequence('sq_b', 's'), "
        "pg_get_serial_sequence('sq_b', 'v')",
        "SELECT pg_get_serial_sequence('sq_t', 'nope')",    # 42703
        "SELECT pg_get_serial_sequence('sq_nope', 'id')",   # 42P01
        "INSERT INTO sq_t (v) VALUES ('a')",
        "INSERT INTO sq_t (v) VALUES ('b'), ('c')",
        "INSERT INTO sq_t VALUES (DEFAULT, 'd'), (DEFAULT, 'e', DEFAULT)",
        "INSERT INTO sq_t DEFAULT VALUES",
        "INSERT INTO sq_t (v) SELECT 'f' || g FROM generate_series(1, 3) g",
        "INSERT INTO sq_t (v) VALUES ('g') RETURNING id, v, n",
        "SELECT currval('sq_t_id_seq'), lastval()",
        "INSERT INTO sq_t VALUES (100, 'explicit')",
        "INSERT INTO sq_t (id, v) VALUES (NULL, 'null')",   # 23502
        "INSERT INTO sq_b (v) VALUES ('x'), ('y')",
        "SELECT * FROM sq_b ORDER BY id",
        "CREATE TABLE sq_t (id serial)",                    # 42P07
        "CREATE TABLE sq_c (id serial DEFAULT 5)",          # 42601
    ])
    for conn in pair:
        copy_rows(conn, "COPY sq_t (v) FROM STDIN", [("copy1",), ("copy2",)])
        copy_rows(conn, "COPY sq_b (v, s) FROM STDIN", [("copy3", 50)])
    run_script(pair, [
        "SELECT * FROM sq_t ORDER BY id",
        "SELECT * FROM sq_b ORDER BY id",
        "SELECT a.attname, a.attnotnull, a.atthasdef, a.attidentity, "
        "pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a JOIN pg_class c "
        "ON c.oid = a.attrelid LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid "
        "AND d.adnum = a.attnum WHERE c.relname = 'sq_b' AND a.attnum > 0 ORDER BY a.attnum",
        "DROP SEQUENCE sq_t_id_seq",                         # 2BP01
        "DROP TABLE sq_t, sq_b",
        "SELECT relname FROM pg_class WHERE relname LIKE 'sq\\_%' ORDER BY 1",
    ])


def test_identity_columns(pair):
    run_script(pair, [
        "CREATE TABLE sq_i (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v int)",
        "CREATE TABLE sq_d (id bigint GENERATED BY DEFAULT AS IDENTITY "
        "(START WITH 100 INCREMENT BY 10), v int)",
        "CREATE TABLE sq_c (id text GENERATED ALWAYS AS IDENTITY)",      # 22023
        "CREATE TABLE sq_c (id int GENERATED ALWAYS AS IDENTITY DEFAULT 1)",  # 42601
        "INSERT INTO sq_i (v) VALUES (1), (2)",
        "INSERT INTO sq_i VALUES (DEFAULT, 3)",
        "INSERT INTO sq_i DEFAULT VALUES",
        "INSERT INTO sq_i VALUES (50, 4)",                  # 428C9
        "INSERT INTO sq_i (id, v) SELECT 60, 5",            # 428C9
        "INSERT INTO sq_i (v) SELECT g FROM generate_series(6, 7) g",
        "UPDATE sq_i SET id = 70 WHERE v = 7",              # 428C9
        "UPDATE sq_i SET id = DEFAULT, v = 8 WHERE v = 7",
        "UPDATE sq_d SET id = id + 1",
        "SELECT * FROM sq_i ORDER BY id",
        "INSERT INTO sq_d (v) VALUES (1)",
        "INSERT INTO sq_d VALUES (5, 2)",
        "INSERT INTO sq_d (v) VALUES (3)",
        "SELECT * FROM sq_d ORDER BY v",
        "SELECT pg_get_serial_sequence('sq_i', 'id'), pg_get_serial_sequence('sq_d', 'id')",
        "SELECT a.attname, a.attnotnull, a.atthasdef, a.attidentity FROM pg_attribute a "
        "JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname IN ('sq_i', 'sq_d') "
        "AND a.attnum > 0 ORDER BY c.relname, a.attnum",
    ])
    for conn in pair:
        copy_rows(conn, "COPY sq_i (v) FROM STDIN", [(8,)])
    run_script(pair, [
        "SELECT * FROM sq_i ORDER BY id",
        "DROP TABLE sq_i",
        "SELECT nextval('sq_i_id_seq')",                    # 42P01
    ])


def test_psql_describes_sequences_as_postgresql(pair, postgres, target):
    run_script(pair, [
        "CREATE TABLE sq_t (id serial PRIMARY KEY, v text)",
        "CREATE TABLE sq_i (id bigint GENERATED ALWAYS AS IDENTITY, v int)",
        "CREATE SEQUENCE sq_s AS integer INCREMENT BY 3 MINVALUE 2 MAXVALUE 1000 CACHE 5 CYCLE",
    ])
    for command in [r"\dts sq_*", r"\d sq_t", r"\d sq_i", r"\d sq_t_id_seq", r"\d sq_i_id_seq", r"\d sq_s",
                    r"\ds sq_*"]:
        expected = psql(postgres, command)
        assert expected.startswith("exit=0"), expected
        assert psql(target, command) == expected, command


# --------------------------------------------------------------------------------------
# what only the server under test must show
# --------------------------------------------------------------------------------------

def second_server(server):
    """A cluster's second coordinator; another session of the same server otherwise."""
    return getattr(server, "second", server)


def test_concurrent_sessions_get_unique_increasing_values(target):
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        reset(conn)
        conn.execute("CREATE SEQUENCE sq_s")
        conn.execute("CREATE TABLE sq_t (id serial PRIMARY KEY, w int)")
    servers = [target, second_server(target)]
    per_session = {}
    errors = []

    def work(i):
        try:
            with psycopg.connect(servers[i % 2].dsn, autocommit=True) as c:
                got = [c.execute("SELECT nextval('sq_s')").fetchone()[0] for _ in range(150)]
                for j in range(0, 100, 10):
                    c.execute("INSERT INTO sq_t (w) SELECT %s FROM generate_series(1, 10)", (i,))
                per_session[i] = got
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    values = [v for got in per_session.values() for v in got]
    assert len(values) == 8 * 150 and len(set(values)) == len(values), "a value twice"
    for got in per_session.values():
        assert got == sorted(got) and len(set(got)) == len(got), got
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        count, distinct = conn.execute("SELECT count(*), count(DISTINCT id) FROM sq_t").fetchone()
        assert (count, distinct) == (800, 800)


def test_setval_and_restart_reach_every_coordinator(target):
    """After setval (or RESTART) on one coordinator, the other's next reservation
    continues from it: values below it are not handed out once its range is used up."""
    with psycopg.connect(target.dsn, autocommit=True) as a, \
            psycopg.connect(second_server(target).dsn, autocommit=True) as b:
        reset(a)
        a.execute("CREATE SEQUENCE sq_s")
        assert a.execute("SELECT nextval('sq_s')").fetchone()[0] == 1
        a.execute("SELECT setval('sq_s', 1000000)")
        assert a.execute("SELECT nextval('sq_s')").fetchone()[0] == 1000001
        # b holds no range of its own yet: its first reservation follows the setval.
        assert b.execute("SELECT nextval('sq_s')").fetchone()[0] > 1000001
        b.execute("ALTER SEQUENCE sq_s RESTART WITH 5000000")
        assert b.execute("SELECT nextval('sq_s')").fetchone()[0] == 5000000
        seen = {a.execute("SELECT nextval('sq_s')").fetchone()[0] for _ in range(100)}
        assert max(seen) > 5000000, "a's later reservations continue after the restart"


def test_no_value_is_handed_out_twice_across_kill9(meridian):
    with psycopg.connect(meridian.dsn, autocommit=True) as conn:
        conn.execute("CREATE SEQUENCE sq_s")
        conn.execute("CREATE TABLE sq_t (id bigserial PRIMARY KEY)")
        before = [conn.execute("SELECT nextval('sq_s')").fetchone()[0] for _ in range(40)]
        conn.execute("INSERT INTO sq_t SELECT FROM generate_series(1, 50)")
        ids_before = conn.execute("SELECT max(id) FROM sq_t").fetchone()[0]
    meridian.kill9()
    meridian.restart()
    with psycopg.connect(meridian.dsn, autocommit=True) as conn:
        after = conn.execute("SELECT nextval('sq_s')").fetchone()[0]
        assert after > max(before)
        conn.execute("INSERT INTO sq_t DEFAULT VALUES")
        assert conn.execute("SELECT max(id) FROM sq_t").fetchone()[0] > ids_before
        assert conn.execute("SELECT count(*) FROM sq_t").fetchone()[0] == 51


@pytest.mark.skipif(shutil.which("sysbench") is None, reason="sysbench is not installed")
def test_sysbench_prepare_creates_and_loads_its_serial_table(target):
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS sbtest1")
    res = subprocess.run(
        ["sysbench", "oltp_read_write", "--db-driver=pgsql", f"--pgsql-host={target.host}",
         f"--pgsql-port={target.port}", "--pgsql-user=postgres", "--pgsql-password=",
         "--pgsql-db=postgres", "--tables=1", "--table-size=1000", "--create_secondary=off",
         "prepare"],
        capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(*), count(DISTINCT id), min(id), max(id) "
                           "FROM sbtest1").fetchone()
        assert row == (1000, 1000, 1, 1000)
        conn.execute("DROP TABLE sbtest1")
