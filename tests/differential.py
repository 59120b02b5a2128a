"""Helpers of the differential tests that compare one statement's answer on the server
under test with PostgreSQL 15's, in text and binary format (test_json, test_uuid,
test_strings, test_numeric)."""

import psycopg
import pytest


@pytest.fixture(scope="module")
def conns(target, postgres):
    """(server under test, reference) autocommit connections."""
    a = psycopg.connect(target.dsn, autocommit=True)
    b = psycopg.connect(postgres.dsn, autocommit=True)
    yield a, b
    a.close()
    b.close()


def run(conn, sql, params=None, binary=False, message=True):
    """("ok", rows) or ("error", SQLSTATE[, message])."""
    try:
        with conn.cursor(binary=binary) as cur:
            cur.execute(sql, params)
            return "ok", cur.fetchall()
    except psycopg.Error as e:
        assert e.sqlstate, f"error without SQLSTATE: {e}"
        return ("error", e.sqlstate, e.diag.message_primary) if message else ("error", e.sqlstate)


def same(conns, sql, params=None, message=True):
    """The statement gives the same answer on both servers, in text and binary format."""
    ours, ref = conns
    for binary in (False, True):
        want = run(ref, sql, params, binary, message)
        got = run(ours, sql, params, binary, message)
        fmt = "binary" if binary else "text"
        assert got == want, f"{sql} [{fmt}]: Meridian {got!r}, PostgreSQL 15 {want!r}"
    return want


def copy_out(conn, sql):
    with conn.cursor() as cur:
        with cur.copy(sql) as copy:
            return b"".join(bytes(b) for b in copy)


def copy_in(conn, sql, data):
    with conn.cursor() as cur:
        with cur.copy(sql) as copy:
            copy.write(data)
