"""Secondary indexes (issue 31, decision 0035): CREATE [UNIQUE] INDEX, DROP INDEX, UNIQUE
constraints, their maintenance by every write and the planner's use of them.

Every statement runs on the server under test and on a real PostgreSQL 15 in the same
test: the same results, the same SQLSTATEs and, for unique violations, the same message
and detail. The randomized run writes the same random inserts, updates and deletes to
both and compares every indexed query (which Meridian answers through an index) with
PostgreSQL's answer. On the ``meridian-cluster`` target the tables are spread over three
datanodes, and the unique index on ``u`` is not on the distribution column: a global
index whose entries live apart from their rows.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import threading

import psycopg
import pytest

SEED = int(os.environ.get("MERIDIAN_INDEX_SEED", "31"))


def outcome(conn, sql, params=None):
    """Rows (sorted), or the error's SQLSTATE, message and detail."""
    try:
        cur = conn.execute(sql, params)
        rows = cur.fetchall() if cur.description else []
        return ("ok", cur.statusmessage, sorted(rows, key=repr))
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary, e.diag.message_detail)


@pytest.fixture
def pair(postgres, target):
    conns = [psycopg.connect(s.dsn, autocommit=True) for s in (postgres, target)]
    yield conns
    for c in conns:
        c.close()


def same(pair, sql, params=None, detail=True):
    got = [outcome(c, sql, params) for c in pair]
    if not detail:  # which duplicate a build meets first follows each one's scan order
        got = [g[:3] for g in got]
    assert got[1] == got[0], sql
    return got[1]


def reset(pair, *tables):
    for c in pair:
        for t in tables:
            c.execute(f"DROP TABLE IF EXISTS {t}")


BUILD_DUPLICATES = {
    "CREATE UNIQUE INDEX ix_a_k_unique ON ix_a (k)",
    "CREATE UNIQUE INDEX ix_a_v_unique ON ix_a (v)",
}


def test_ddl_dml_and_errors_as_postgres(pair):
    reset(pair, "ix_a", "ix_b")
    for sql in [
        "CREATE TABLE ix_a (id int PRIMARY KEY, k int, u text UNIQUE, v int)",
        "INSERT INTO ix_a SELECT i, i % 10, 'u' || i, i FROM generate_series(1, 200) i",
        "CREATE INDEX k_1 ON ix_a (k)",
        "CREATE INDEX k_1 ON ix_a (v)",
        "CREATE INDEX IF NOT EXISTS k_1 ON ix_a (v)",
        "CREATE INDEX ON ix_a (v, k)",
        "CREATE INDEX ON ix_a (v, k)",
        "CREATE INDEX CONCURRENTLY ix_a_kd ON ix_a USING btree (k DESC, v NULLS FIRST)",
        # a duplicate of the UNIQUE constraint, by INSERT and by UPDATE
        "INSERT INTO ix_a VALUES (1000, 1, 'u5', 1)",
        "UPDATE ix_a SET u = 'u6' WHERE id = 7",
        "INSERT INTO ix_a VALUES (1000, 1, 'u5', 1) ON CONFLICT DO NOTHING",
        "SELECT count(*) FROM ix_a",
        # NULLs never conflict
        "INSERT INTO ix_a VALUES (1001, 1, NULL, 1), (1002, 1, NULL, 1)",
        "UPDATE ix_a SET u = 'moved' || id WHERE k = 3",
        "INSERT INTO ix_a VALUES (1003, 3, 'u3', 1)",
        "DELETE FROM ix_a WHERE u = 'u4'",
        "INSERT INTO ix_a VALUES (1004, 4, 'u4', 4)",
        "SELECT id, k, u FROM ix_a WHERE k = 3 ORDER BY id",
        "SELECT id FROM ix_a WHERE u = 'u4'",
        "SELECT id FROM ix_a WHERE k IN (1, 2) AND v < 40",
        "SELECT id FROM ix_a WHERE v BETWEEN 10 AND 20",
        "SELECT id FROM ix_a WHERE v > 190 AND v <= 195",
        "SELECT id FROM ix_a WHERE v = 12 AND k = 2",
        "SELECT id FROM ix_a WHERE k = NULL",
        "CREATE UNIQUE INDEX ix_a_k_unique ON ix_a (k)",
        "CREATE UNIQUE INDEX ix_a_v_unique ON ix_a (v)",
        "CREATE UNIQUE INDEX ix_a_id_k ON ix_a (id, k)",
        "UPDATE ix_a SET v = v + 1000 WHERE v = 4 AND id > 4",
        "CREATE UNIQUE INDEX ix_a_v1 ON ix_a (v) -- one duplicate value: the same detail",
        "INSERT INTO ix_a VALUES (1005, 0, 'z', 200)",
        "DROP INDEX ix_a_u_key",
        "DROP INDEX ix_a_pkey",
        "DROP INDEX nope",
        "DROP INDEX IF EXISTS nope",
        "DROP INDEX k_1, nope",
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'ix_a'",
        "DROP INDEX CONCURRENTLY IF EXISTS k_1",
        "SELECT indexname FROM pg_indexes WHERE tablename = 'ix_a'",
        "SELECT tablename, hasindexes FROM pg_tables WHERE tablename LIKE 'ix%' ORDER BY 1",
        "CREATE TABLE ix_b (a int, b int, c text, CONSTRAINT ab UNIQUE (a, b), UNIQUE (c))",
        "INSERT INTO ix_b VALUES (1, 1, 'x'), (1, 2, 'y'), (NULL, 1, NULL), (NULL, 1, NULL)",
        "INSERT INTO ix_b VALUES (1, 1, 'z')",
        "INSERT INTO ix_b VALUES (2, 2, 'x')",
        "COPY ix_b FROM STDIN",
        "SELECT c.relname, c.relkind, i.indisunique, i.indisprimary, i.indkey::text"
        " FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid"
        " WHERE i.indrelid = 'ix_b'::regclass",
        "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint"
        " WHERE conrelid = 'ix_b'::regclass",
        "TRUNCATE ix_b",
        "INSERT INTO ix_b VALUES (1, 1, 'x')",
        "SELECT * FROM ix_b WHERE c = 'x'",
        "CREATE TABLE ab (x int)",
        "CREATE TABLE IF NOT EXISTS ab (x int)",
        "DROP TABLE ix_b",
        "SELECT count(*) FROM pg_indexes WHERE tablename = 'ix_b'",
    ]:
        if sql.startswith("COPY"):
            for c in pair:
                with pytest.raises(psycopg.Error) as e:
                    with c.cursor().copy(sql) as copy:
                        copy.write("3\t3\tx\n")
                assert e.value.sqlstate == "23505"
                assert e.value.diag.message_detail == "Key (c)=(x) already exists."
            continue
        same(pair, sql, detail=sql not in BUILD_DUPLICATES)


def test_unsupported_index_features_are_refused(target):
    with psycopg.connect(target.dsn, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS ix_u")
        c.execute("CREATE TABLE ix_u (a int, b int)")
        for sql, feature in [
            ("CREATE INDEX ON ix_u ((a + b))", "expression indexes"),
            ("CREATE INDEX ON ix_u (a) INCLUDE (b)", "INCLUDE"),
            ("CREATE INDEX ON ix_u (a) WHERE b > 0", "partial indexes"),
            ("CREATE INDEX ON ix_u USING hash (a)", "access methods"),
        ]:
            with pytest.raises(psycopg.Error) as e:
                c.execute(sql)
            assert e.value.sqlstate == "0A000", sql
            assert feature in e.value.diag.message_primary, sql
        assert c.execute("SELECT count(*) FROM pg_indexes WHERE tablename = 'ix_u'"
                         ).fetchone() == (0,)


def test_explain_shows_the_index(target):
    with psycopg.connect(target.dsn, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS sbtest_ix")
        c.execute("CREATE TABLE sbtest_ix (id int PRIMARY KEY, k int NOT NULL DEFAULT 0,"
                  " c text, u int UNIQUE)")
        c.execute("CREATE INDEX k_2 ON sbtest_ix (k)")
        plan = [r[0] for r in c.execute("EXPLAIN SELECT c FROM sbtest_ix WHERE k = 5")]
        assert plan[0].strip().endswith("Index Scan using k_2 on sbtest_ix"), plan
        assert "Index Cond: (k = 5)" in [p.strip() for p in plan], plan
        plan = [r[0] for r in c.execute("EXPLAIN SELECT c FROM sbtest_ix WHERE u = %s",
                                        (3,), prepare=True)]
        assert "Index Scan using sbtest_ix_u_key on sbtest_ix" in plan[0], plan
        plan = [r[0] for r in c.execute(
            "EXPLAIN SELECT c FROM sbtest_ix WHERE k BETWEEN 1 AND 3")]
        assert "Index Cond: ((k >= 1) AND (k <= 3))" in [p.strip() for p in plan], plan
        # int8 parameters (sysbench binds its integers so) widen the int4 column: the key
        # encoding is the same for every integer width
        plan = [r[0] for r in c.execute(
            "EXPLAIN SELECT c FROM sbtest_ix WHERE k IN (%s::int8, %s::int8)", (1, 2),
            prepare=True)]
        assert "Index Scan using k_2 on sbtest_ix" in plan[0], plan
        plan = [r[0] for r in c.execute(
            "EXPLAIN SELECT c FROM sbtest_ix WHERE id = %s::int8", (1,), prepare=True)]
        assert "Index Scan using sbtest_ix_pkey on sbtest_ix" in plan[0], plan
        # the primary key still comes first, and a condition no index has is a full scan
        plan = [r[0] for r in c.execute("EXPLAIN SELECT c FROM sbtest_ix WHERE id = 1"
                                        " AND k = 5")]
        assert "sbtest_ix_pkey" in plan[0], plan
        plan = [r[0] for r in c.execute("EXPLAIN SELECT c FROM sbtest_ix WHERE c = 'x'")]
        assert plan[0].startswith("Seq Scan"), plan


def test_indexed_queries_equal_postgres_under_random_writes(pair):
    reset(pair, "ix_r")
    ddl = [
        "CREATE TABLE ix_r (id int PRIMARY KEY, k int, a int, b text, u int UNIQUE)",
        "CREATE INDEX ix_r_k ON ix_r (k)",
        "CREATE INDEX ix_r_ab ON ix_r (a, b)",
    ]
    for sql in ddl:
        same(pair, sql)
    rng = random.Random(SEED)
    mismatches = []

    def check(sql, params):
        got = [outcome(c, sql, params) for c in pair]
        if got[0] != got[1]:
            mismatches.append((sql, params, got))

    for step in range(600):
        op = rng.random()
        rid = rng.randrange(300)
        vals = (rng.randrange(20), rng.choice([None, *range(8)]),
                rng.choice([None, "x", "y", "z"]), rng.choice([None, *range(400)]))
        if op < 0.4:
            check("INSERT INTO ix_r VALUES (%s, %s, %s, %s, %s)", (rid, *vals))
        elif op < 0.6:
            check("UPDATE ix_r SET k = %s, u = %s WHERE id = %s", (vals[0], vals[3], rid))
        elif op < 0.7:
            check("UPDATE ix_r SET a = a + 1 WHERE k = %s", (vals[0],))
        elif op < 0.75:
            check("UPDATE ix_r SET id = id + 1000 WHERE u = %s", (vals[3],))
        elif op < 0.85:
            check("DELETE FROM ix_r WHERE k = %s AND id %% 3 = 0", (vals[0],))
        else:
            check("DELETE FROM ix_r WHERE id = %s", (rid,))
        if step % 25 == 0:
            for sql, params in [
                ("SELECT * FROM ix_r WHERE k = %s", (vals[0],)),
                ("SELECT * FROM ix_r WHERE k IN (%s, %s, 3)", (vals[0], rng.randrange(20))),
                ("SELECT * FROM ix_r WHERE k BETWEEN %s AND %s", (vals[0], vals[0] + 4)),
                ("SELECT * FROM ix_r WHERE k > %s", (vals[0],)),
                ("SELECT * FROM ix_r WHERE k <= %s", (vals[0],)),
                ("SELECT * FROM ix_r WHERE k = %s::int8 OR false", (vals[0],)),
                ("SELECT * FROM ix_r WHERE k IN (%s::int8, 5000000000)", (vals[0],)),
                ("SELECT * FROM ix_r WHERE k::int8 > %s::int8 AND k < 12", (vals[0],)),
                ("SELECT * FROM ix_r WHERE a = %s", (vals[1],)),
                ("SELECT * FROM ix_r WHERE a = %s AND b = %s", (vals[1], vals[2])),
                ("SELECT * FROM ix_r WHERE u = %s", (vals[3],)),
                ("SELECT * FROM ix_r WHERE u < %s", (vals[3],)),
                ("SELECT count(*), sum(k) FROM ix_r WHERE a >= 2 AND a < 5", None),
                ("SELECT * FROM ix_r", None),
            ]:
                check(sql, params)
    assert not mismatches, f"seed {SEED}: {mismatches[:5]}"


def test_concurrent_inserts_of_one_unique_value_one_wins(target):
    with psycopg.connect(target.dsn, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS ix_c")
        c.execute("CREATE TABLE ix_c (id int PRIMARY KEY, u int UNIQUE)")
    workers = 8
    for value in range(5):
        barrier = threading.Barrier(workers)
        results = [None] * workers

        def insert(i):
            with psycopg.connect(target.dsn, autocommit=True) as c:
                barrier.wait()
                try:
                    c.execute("INSERT INTO ix_c VALUES (%s, %s)", (value * 100 + i, value))
                    results[i] = "ok"
                except psycopg.Error as e:
                    results[i] = e.sqlstate

        threads = [threading.Thread(target=insert, args=(i,)) for i in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(results) == ["23505"] * (workers - 1) + ["ok"], results
    with psycopg.connect(target.dsn, autocommit=True) as c:
        assert c.execute("SELECT u, count(*) FROM ix_c GROUP BY u ORDER BY u").fetchall() \
            == [(v, 1) for v in range(5)]
        # a waiting inserter of the same value wins when the holder rolls back
        holder = psycopg.connect(target.dsn)
        holder.execute("INSERT INTO ix_c VALUES (900, 77)")
        result = []
        waiter = threading.Thread(target=lambda: result.append(
            outcome(c, "INSERT INTO ix_c VALUES (901, 77)")))
        waiter.start()
        holder.rollback()
        waiter.join()
        holder.close()
        assert result[0][0] == "ok", result
        assert c.execute("SELECT id FROM ix_c WHERE u = 77").fetchall() == [(901,)]


def test_an_index_survives_kill9_and_restart(meridian):
    with psycopg.connect(meridian.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE ix_d (id int PRIMARY KEY, k int, u text UNIQUE)")
        c.execute("INSERT INTO ix_d SELECT i, i % 7, 'u' || i FROM generate_series(1, 500) i")
        c.execute("CREATE INDEX ix_d_k ON ix_d (k)")
        c.execute("UPDATE ix_d SET k = 100 WHERE id <= 10")
    meridian.kill9()
    meridian.restart()
    with psycopg.connect(meridian.dsn, autocommit=True) as c:
        plan = [r[0] for r in c.execute("EXPLAIN SELECT id FROM ix_d WHERE k = 100")]
        assert "Index Scan using ix_d_k on ix_d" in plan[0], plan
        assert sorted(r[0] for r in c.execute("SELECT id FROM ix_d WHERE k = 100")) \
            == list(range(1, 11))
        with pytest.raises(psycopg.errors.UniqueViolation):
            c.execute("INSERT INTO ix_d VALUES (1000, 1, 'u5')")


def test_sysbench_prepare_creates_k_1_and_point_selects_use_it(target):
    sysbench = shutil.which("sysbench")
    if sysbench is None:
        pytest.skip("sysbench is not installed")
    with psycopg.connect(target.dsn, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS sbtest1")
    args = [sysbench, "--db-driver=pgsql", f"--pgsql-host={target.host}",
            f"--pgsql-port={target.port}", "--pgsql-user=postgres", "--pgsql-db=postgres",
            "--tables=1", "--table-size=2000", "--auto_inc=off"]
    done = subprocess.run([*args, "oltp_read_write", "prepare"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with psycopg.connect(target.dsn, autocommit=True) as c:
        plan = [r[0] for r in c.execute("EXPLAIN SELECT id, k, c, pad FROM sbtest1"
                                        " WHERE k IN (1, 2, 3)")]
        assert "Index Scan using k_1 on sbtest1" in plan[0], plan
        k = c.execute("SELECT k FROM sbtest1 WHERE id = 7").fetchone()[0]
        assert 7 in [r[0] for r in c.execute("SELECT id FROM sbtest1 WHERE k = %s", (k,))]
    done = subprocess.run([*args, "select_random_points", "--time=2", "run"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
