"""Real client drivers: psycopg 3 (text and binary), asyncpg, node-postgres.

Each driver: connect; DDL; parameterised INSERT/SELECT of int, bigint, numeric, text,
bool, timestamp and NULL; transactions with commit and rollback; savepoints; errors come
back with their SQLSTATE (23505, 22012, 42P01) and the session keeps working.
(tokio-postgres is covered by crates/testsupport/tests/tokio_postgres_driver.rs.)
"""

import asyncio
import datetime as dt
import os
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import asyncpg
import psycopg
import pytest

NODE_DIR = Path(__file__).parent / "node"

ROWS = [
    # id, small int, bigint, numeric, text, bool, timestamp, nullable int
    (1, 42, 9_223_372_036_854_775_807, Decimal("12345678901234.123456"),
     "plain ascii", True, dt.datetime(2024, 1, 2, 3, 4, 5, 678901), None),
    (2, -2_147_483_648, -9_223_372_036_854_775_808, Decimal("-0.000001"),
     "quotes ' \" back\\slash, unicode: żółw 漢字 🐢", False, dt.datetime(1999, 12, 31, 23, 59, 59), 7),
    (3, 0, 0, Decimal("0"), "", True, dt.datetime(2000, 2, 29, 0, 0, 0), None),
]

DDL = ("CREATE TABLE {t} (id int PRIMARY KEY, i int, b bigint, n numeric(20, 6), "
       "t text, f bool, ts timestamp, x int)")


def normalise_numeric(rows):
    # numeric(20,6) comes back with scale 6; compare numerically
    return [tuple(Decimal(v).quantize(Decimal("0.000001")) if isinstance(v, Decimal) else v
                  for v in r) for r in rows]


# --------------------------------------------------------------------------------------
# psycopg 3
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_psycopg3_types_and_params(target, binary):
    table = f"drv_psycopg_{'bin' if binary else 'txt'}"
    # %b / %t force binary / text parameters; cursor(binary=True) asks for binary results
    ph = "%b" if binary else "%t"
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(DDL.format(t=table))
        with conn.cursor(binary=binary) as cur:
            for r in ROWS:
                cur.execute(f"INSERT INTO {table} (id, i, b, n, t, f, ts, x) "
                            f"VALUES ({', '.join([ph] * 8)})", r)
                assert cur.rowcount == 1
            cur.execute(f"SELECT id, i, b, n, t, f, ts, x FROM {table} ORDER BY id")
            assert normalise_numeric(cur.fetchall()) == normalise_numeric(ROWS)
            # parameter in WHERE, NULL parameter, repeated execution (named statements)
            for _ in range(7):
                cur.execute(f"SELECT t FROM {table} WHERE id = {ph}", (2,))
                assert cur.fetchone() == (ROWS[1][4],)
            cur.execute(f"SELECT count(*) FROM {table} WHERE x IS NULL")
            assert cur.fetchone() == (2,)
            cur.execute(f"SELECT {ph}::int IS NULL", (None,))
            assert cur.fetchone() == (True,)
            cur.execute(f"UPDATE {table} SET x = {ph} WHERE id = {ph}", (None, 2))
            assert cur.rowcount == 1
            cur.execute(f"SELECT x FROM {table} WHERE id = {ph}", (2,))
            assert cur.fetchone() == (None,)
            cur.execute(f"DELETE FROM {table} WHERE id = {ph}", (3,))
            assert cur.rowcount == 1


def test_psycopg3_transactions_and_savepoints(target):
    with psycopg.connect(target.dsn) as conn:  # autocommit off: implicit BEGIN
        conn.execute("DROP TABLE IF EXISTS drv_tx")
        conn.execute("CREATE TABLE drv_tx (id int PRIMARY KEY, v text)")
        conn.commit()
        conn.execute("INSERT INTO drv_tx VALUES (1, 'committed')")
        conn.commit()
        conn.execute("INSERT INTO drv_tx VALUES (2, 'rolled back')")
        conn.rollback()
        assert conn.execute("SELECT id FROM drv_tx ORDER BY id").fetchall() == [(1,)]
        conn.rollback()
        # savepoints via the driver
        with conn.transaction():
            conn.execute("INSERT INTO drv_tx VALUES (3, 'outer')")
            with pytest.raises(psycopg.errors.UniqueViolation):
                with conn.transaction():  # SAVEPOINT
                    conn.execute("INSERT INTO drv_tx VALUES (4, 'inner')")
                    conn.execute("INSERT INTO drv_tx VALUES (1, 'dup')")
            conn.execute("INSERT INTO drv_tx VALUES (5, 'after savepoint')")
        assert conn.execute("SELECT id FROM drv_tx ORDER BY id").fetchall() == [(1,), (3,), (5,)]
        conn.commit()
    # explicit SQL savepoints
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO drv_tx VALUES (10, 'a')")
        conn.execute("SAVEPOINT s1")
        conn.execute("INSERT INTO drv_tx VALUES (11, 'b')")
        conn.execute("ROLLBACK TO SAVEPOINT s1")
        conn.execute("SAVEPOINT s2")
        conn.execute("INSERT INTO drv_tx VALUES (12, 'c')")
        conn.execute("RELEASE SAVEPOINT s2")
        conn.execute("COMMIT")
        assert conn.execute("SELECT id FROM drv_tx WHERE id >= 10 ORDER BY id").fetchall() == [
            (10,), (12,)]


def test_psycopg3_repeated_statements_get_prepared(target):
    """psycopg prepares a statement (named Parse) from its 5th execution on -- including
    transaction control like BEGIN/COMMIT/ROLLBACK/SAVEPOINT that applications run in loops."""
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS drv_prep")
        conn.execute("CREATE TABLE drv_prep (id int PRIMARY KEY, v int)")
        for i in range(12):
            conn.execute("BEGIN")
            conn.execute("INSERT INTO drv_prep (id, v) VALUES (%s, %s)", (i, i * i))
            conn.execute("SAVEPOINT sp")
            conn.execute("UPDATE drv_prep SET v = v + 1 WHERE id = %s", (i,))
            conn.execute("ROLLBACK TO SAVEPOINT sp")
            conn.execute("RELEASE SAVEPOINT sp")
            conn.execute("COMMIT" if i % 2 == 0 else "ROLLBACK")
            assert conn.execute("SELECT count(*) FROM drv_prep").fetchone() == (i // 2 + 1,)
        assert conn.execute("SELECT id, v FROM drv_prep ORDER BY id").fetchall() == [
            (i, i * i) for i in range(0, 12, 2)]


def test_psycopg3_prepared_statement_cache_eviction(target):
    """When psycopg's prepared-statement cache (prepared_max, default 100) is full it evicts
    the oldest statement with SQL ``DEALLOCATE _pg3_N``; long-running applications hit this."""
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.prepared_max = 3
        for n in range(8):
            for _ in range(6):  # prepared from the 5th execution on
                assert conn.execute(f"SELECT {n} + %s", (1,)).fetchone() == (n + 1,)
        assert conn.execute("SELECT 1").fetchone() == (1,)
        conn.execute("DEALLOCATE ALL")
        assert conn.execute("SELECT 2").fetchone() == (2,)


@pytest.mark.parametrize("sql, sqlstate", [
    ("INSERT INTO drv_err VALUES (1)", "23505"),
    ("SELECT 1 / 0", "22012"),
    ("SELECT * FROM drv_no_such_table", "42P01"),
])
@pytest.mark.parametrize("autocommit", [True, False], ids=["autocommit", "in-transaction"])
def test_psycopg3_errors_have_sqlstate(target, sql, sqlstate, autocommit):
    with psycopg.connect(target.dsn, autocommit=True) as setup:
        setup.execute("DROP TABLE IF EXISTS drv_err")
        setup.execute("CREATE TABLE drv_err (id int PRIMARY KEY)")
        setup.execute("INSERT INTO drv_err VALUES (1)")
    with psycopg.connect(target.dsn, autocommit=autocommit) as conn:
        with pytest.raises(psycopg.Error) as info:
            conn.execute(sql)
        assert info.value.sqlstate == sqlstate
        if not autocommit:
            # the transaction is aborted until rolled back
            with pytest.raises(psycopg.Error) as aborted:
                conn.execute("SELECT 1")
            assert aborted.value.sqlstate == "25P02"
            conn.rollback()
        assert conn.execute("SELECT 1").fetchone() == (1,)
        conn.execute("INSERT INTO drv_err VALUES (2)")
        if not autocommit:
            conn.commit()
    with psycopg.connect(target.dsn, autocommit=True) as check:
        assert check.execute("SELECT id FROM drv_err ORDER BY id").fetchall() == [(1,), (2,)]


# --------------------------------------------------------------------------------------
# asyncpg
# --------------------------------------------------------------------------------------

async def _asyncpg_checks(url):
    conn = await asyncpg.connect(url, timeout=10)
    try:
        await conn.execute("DROP TABLE IF EXISTS drv_asyncpg")
        await conn.execute(DDL.format(t="drv_asyncpg"))
        for r in ROWS:
            status = await conn.execute(
                "INSERT INTO drv_asyncpg (id, i, b, n, t, f, ts, x) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)", *r)
            assert status == "INSERT 0 1"
        rows = await conn.fetch("SELECT id, i, b, n, t, f, ts, x FROM drv_asyncpg ORDER BY id")
        assert normalise_numeric([tuple(r) for r in rows]) == normalise_numeric(ROWS)
        stmt = await conn.prepare("SELECT t FROM drv_asyncpg WHERE id = $1")
        for _ in range(3):
            assert await stmt.fetchval(2) == ROWS[1][4]
        assert await conn.fetchval("SELECT count(*) FROM drv_asyncpg WHERE x IS NULL") == 2
        assert await conn.fetchval("SELECT $1::int IS NULL", None) is True
        row = await conn.fetchrow("SELECT n, ts FROM drv_asyncpg WHERE id = $1", 1)
        assert row["ts"] == ROWS[0][6]

        # transactions, rollback and savepoints
        async with conn.transaction():
            await conn.execute("UPDATE drv_asyncpg SET x = 100 WHERE id = 1")
        try:
            async with conn.transaction():
                await conn.execute("UPDATE drv_asyncpg SET x = 200 WHERE id = 1")
                raise RuntimeError("force rollback")
        except RuntimeError:
            pass
        assert await conn.fetchval("SELECT x FROM drv_asyncpg WHERE id = 1") == 100
        async with conn.transaction():
            await conn.execute("UPDATE drv_asyncpg SET x = 300 WHERE id = 1")
            try:
                async with conn.transaction():  # SAVEPOINT
                    await conn.execute("UPDATE drv_asyncpg SET x = 400 WHERE id = 1")
                    await conn.execute("INSERT INTO drv_asyncpg (id) VALUES (1)")
            except asyncpg.UniqueViolationError as e:
                assert e.sqlstate == "23505"
            assert await conn.fetchval("SELECT x FROM drv_asyncpg WHERE id = 1") == 300
        assert await conn.fetchval("SELECT x FROM drv_asyncpg WHERE id = 1") == 300

        # errors carry SQLSTATE, session continues
        for sql, state in [("INSERT INTO drv_asyncpg (id) VALUES (1)", "23505"),
                           ("SELECT 1 / 0", "22012"),
                           ("SELECT * FROM drv_no_such_table", "42P01")]:
            try:
                await conn.execute(sql)
            except asyncpg.PostgresError as e:
                assert e.sqlstate == state, (sql, e.sqlstate, e)
            else:
                raise AssertionError(f"{sql} did not fail")
            assert await conn.fetchval("SELECT 1") == 1
        # error inside a transaction aborts it
        tr = conn.transaction()
        await tr.start()
        try:
            await conn.execute("SELECT 1 / 0")
        except asyncpg.PostgresError as e:
            assert e.sqlstate == "22012"
        try:
            await conn.fetchval("SELECT 1")
        except asyncpg.PostgresError as e:
            assert e.sqlstate == "25P02"
        else:
            raise AssertionError("statement in aborted transaction did not fail")
        await tr.rollback()
        assert await conn.fetchval("SELECT 1") == 1
    finally:
        await conn.close()


def test_asyncpg(target):
    asyncio.run(asyncio.wait_for(_asyncpg_checks(target.url), 120))


# --------------------------------------------------------------------------------------
# node-postgres
# --------------------------------------------------------------------------------------

def test_node_postgres(target):
    node = shutil.which("node")
    if not node:
        pytest.fail("node is not installed (scripts/test.sh installs nodejs and npm)")
    if not (NODE_DIR / "node_modules" / "pg").is_dir():
        pytest.fail(f"node-postgres is not installed: run `npm ci` in {NODE_DIR} "
                    "(scripts/test.sh does)")
    env = dict(os.environ, PGURL=target.url)
    res = subprocess.run([node, str(NODE_DIR / "driver_test.js")], cwd=NODE_DIR, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"node-postgres checks failed:\n{res.stdout}\n{res.stderr}"
    assert "node-postgres: all checks passed" in res.stdout, res.stdout
