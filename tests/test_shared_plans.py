"""Sessions on one executor thread share the plans of statement texts they prepare.

Meridian keeps one plan per (statement text, declared parameter types) per session
thread and hands it to every session of that thread that prepares the same text
(``coordinator/src/plan_cache.rs``). These tests check that sharing is invisible: a
session that prepares a text after DDL gets a plan for the new catalog, not the plan
other sessions cached before it, and a failed transaction block refuses a Parse the same
way whether the text's plan is cached or not. With two session threads, four connections
put at least two on one thread. Every test passes against PostgreSQL 15 too.
"""

import psycopg
import pytest

INT4, TEXT = 23, 25
QUERY = "SELECT b FROM shared_plans WHERE a = %s"


def connections(server, n):
    # prepare_threshold=0: every statement is sent as a named Parse, then Bind/Execute.
    return [psycopg.connect(server.dsn, autocommit=True, prepare_threshold=0) for _ in range(n)]


def run(conn, sql, *params):
    cur = conn.execute(sql, params)
    return cur.fetchall(), [d.type_code for d in cur.description]


@pytest.fixture
def table(target):
    with psycopg.connect(target.dsn, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS shared_plans")
        c.execute("CREATE TABLE shared_plans (a int PRIMARY KEY, b int)")
        c.execute("INSERT INTO shared_plans VALUES (1, 10), (2, 20)")
    return target


def test_ddl_between_sessions_preparing_one_text(table):
    before = connections(table, 4)
    try:
        for i, c in enumerate(before):
            assert run(c, QUERY, 1 + i % 2) == ([(10 * (1 + i % 2),)], [INT4])
        before[0].execute("DROP TABLE shared_plans")
        before[0].execute("CREATE TABLE shared_plans (a int PRIMARY KEY, b text)")
        before[0].execute("INSERT INTO shared_plans VALUES (1, 'one'), (2, 'two')")
        after = connections(table, 4)
        try:
            for c in after:
                assert run(c, QUERY, 2) == ([("two",)], [TEXT])
            # The sessions from before prepare the text again (unnamed statement).
            for c in before:
                cur = c.execute(QUERY, (1,), prepare=False)
                assert cur.fetchall() == [("one",)]
                assert [d.type_code for d in cur.description] == [TEXT]
        finally:
            for c in after:
                c.close()
    finally:
        for c in before:
            c.close()


def test_failed_block_refuses_parse_cached_or_not(table):
    conns = connections(table, 4)
    try:
        for c in conns:
            assert run(c, QUERY, 1) == ([(10,)], [INT4])  # cached on every session thread
        c = conns[-1]
        c.execute("BEGIN")
        with pytest.raises(psycopg.errors.DivisionByZero):
            c.execute("SELECT 1 / 0")
        # A text cached by other sessions, with other parameter values.
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            c.execute(QUERY, (2,), prepare=True)
        # A text never prepared, naming a table that does not exist: the failed block
        # is reported, not the missing table (PostgreSQL checks before binding).
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            c.execute("SELECT b FROM no_such_table WHERE a = %s", (1,), prepare=True)
        c.execute("ROLLBACK")
        assert run(c, QUERY, 2) == ([(20,)], [INT4])
        with pytest.raises(psycopg.errors.UndefinedTable):
            c.execute("SELECT b FROM no_such_table WHERE a = %s", (1,), prepare=True)
    finally:
        for c in conns:
            c.close()


def test_result_formats_of_one_shared_plan(table):
    """The RowDescription of a shared plan is encoded once, for text results; sessions
    that ask for binary results of the same text must still be told binary (libpq sends
    Describe portal before every Execute of a prepared statement)."""
    conns = connections(table, 4)
    try:
        for round_ in range(2):
            for i, c in enumerate(conns):
                binary = (i + round_) % 2 == 1
                cur = c.cursor(binary=binary)
                cur.execute(QUERY, (2,))
                assert cur.fetchall() == [(20,)]
                assert cur.pgresult.fformat(0) == (1 if binary else 0)
                assert [d.type_code for d in cur.description] == [INT4]
    finally:
        for c in conns:
            c.close()
