"""uuid (issue 31, item 7) against a real PostgreSQL 15: every text form uuid_in
accepts and the 22P02 it gives for the others, output in text and binary formats,
ordering, casts to and from text, gen_random_uuid(), and uuid primary keys (the
distribution column in a cluster) and unique indexes, with INSERT, UPDATE, ORDER BY,
GROUP BY and COPY in and out in text, CSV and binary; psycopg receives uuid.UUID
values from both servers in both formats.
"""

import random
import uuid

import psycopg
import pytest

from conftest import run_on_each
from differential import conns, copy_in, copy_out, run, same  # noqa: F401 (conns is a fixture)


U = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
TEXT_FORMS = [
    U, U.upper(), "{" + U + "}", U.replace("-", ""), "{" + U.replace("-", "") + "}",
    "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11", "a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11",
    "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
    # refused
    "", "x", U[:-1], U + "1", "{" + U, U + "}", " " + U, U + " ", U.replace("-", "--", 1),
    "a0e-ebc99-9c0b-4ef8-bb6d-6bb9bd380a11", U + "-", "-" + U, "g" + U[1:],
    "{{" + U + "}}", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1-1",
]


@pytest.mark.parametrize("text", TEXT_FORMS)
def test_text_forms(conns, text):
    same(conns, "SELECT %s::uuid, %s::uuid::text, CAST(%s AS uuid)", (text, text, text))


EXPRESSIONS = [
    f"'{U}'::uuid = '{U.upper()}'::uuid",
    f"'{U}'::uuid < 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid",
    f"'{U}'::uuid >= '{U}'::uuid",
    f"'{U}'::uuid <> '{U}'::uuid",
    f"'{U}'::uuid = '{U}'",
    f"'{U}'::uuid::text",
    f"'{U}'::uuid::varchar(10)",
    f"'{U}'::text::uuid",
    f"'{U}'::uuid::bytea",
    f"'{U}'::uuid + 1",
    f"'{U}'::uuid = 'nope'",
    f"'{U}'::uuid = 1",
    "NULL::uuid",
    f"ARRAY['{U}'::uuid, NULL]",
    f"ARRAY['{U}', '{{{U}}}']::uuid[]",
    f"pg_typeof('{U}'::uuid)",
    "pg_typeof(gen_random_uuid())",
    "length(gen_random_uuid()::text)",
    "substr(gen_random_uuid()::text, 15, 1)",
    "substr(gen_random_uuid()::text, 20, 1) IN ('8', '9', 'a', 'b')",
    "gen_random_uuid() = gen_random_uuid()",
    f"greatest('{U}'::uuid, '00000000-0000-0000-0000-000000000001'::uuid)",
    f"coalesce(NULL::uuid, '{U}')",
    "'1'::uuid",
]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_expression(conns, expr):
    same(conns, f"SELECT {expr}")


def test_catalog(conns):
    same(conns, "SELECT oid, typname, typlen, typcategory, typarray, typbyval FROM pg_type"
                " WHERE typname IN ('uuid', '_uuid') ORDER BY oid")
    same(conns, "SELECT 'uuid'::regtype::oid, '_uuid'::regtype::oid, 'uuid[]'::regtype")


def test_psycopg_receives_uuid(conns):
    """psycopg loads uuid.UUID from both servers, in text and binary, and sends it."""
    u = uuid.UUID(U)
    for conn in conns:
        for binary in (False, True):
            with conn.cursor(binary=binary) as cur:
                cur.execute("SELECT %s::uuid, %s, gen_random_uuid()", (U, u))
                got, sent, fresh = cur.fetchone()
                assert got == u and sent == u
                assert isinstance(fresh, uuid.UUID) and fresh.version == 4


@pytest.fixture
def tables(target, postgres):
    rng = random.Random(37)
    ids = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(40)]
    values = ", ".join(f"('{u}', {i % 5}, '{ids[(i + 1) % 40]}')" for i, u in enumerate(ids))
    servers = run_on_each([target, postgres], [
        "DROP TABLE IF EXISTS items",
        "CREATE TABLE items (id uuid PRIMARY KEY, grp int, ref uuid UNIQUE)",
        f"INSERT INTO items VALUES {values}",
    ])
    yield ids
    run_on_each(servers, ["DROP TABLE IF EXISTS items", "DROP TABLE IF EXISTS items2"])


@pytest.mark.parametrize("sql", [
    "SELECT * FROM items ORDER BY id",
    "SELECT * FROM items ORDER BY ref DESC",
    "SELECT grp, count(*), min(id::text), max(ref::text) FROM items GROUP BY grp ORDER BY 1",
    "SELECT ref, count(*) FROM items GROUP BY ref ORDER BY ref LIMIT 5",
    "SELECT DISTINCT grp FROM items WHERE id > '80000000-0000-0000-0000-000000000000'"
    " ORDER BY 1",
    "SELECT a.id, b.id FROM items a JOIN items b ON a.ref = b.id ORDER BY a.id LIMIT 5",
    "SELECT id FROM items WHERE id = (SELECT ref FROM items ORDER BY id LIMIT 1)",
    "SELECT count(*) FROM items WHERE id IN (SELECT ref FROM items WHERE grp = 2)",
])
def test_queries(conns, tables, sql):
    same(conns, sql)


def test_point_lookups_and_updates(conns, tables):
    ids = tables
    for u in ids[:8]:
        same(conns, "SELECT grp, ref FROM items WHERE id = %s", (u,))
        same(conns, "SELECT id FROM items WHERE ref = %s::text::uuid", (str(u),))
    for conn in conns:
        conn.execute("UPDATE items SET grp = grp + 10 WHERE id = %s", (ids[3],))
        conn.execute("UPDATE items SET id = '00000000-0000-0000-0000-000000000000'"
                     " WHERE id = %s", (ids[5],))
        conn.execute("DELETE FROM items WHERE ref = %s", (ids[7],))
    same(conns, "SELECT * FROM items ORDER BY id")
    # a duplicate key, a duplicate in the unique index, a bad literal
    same(conns, "INSERT INTO items VALUES (%s, 1, NULL)", (ids[0],))
    same(conns, "INSERT INTO items VALUES (gen_random_uuid(), 1, %s)", (ids[1],))
    same(conns, "INSERT INTO items VALUES ('not-a-uuid', 1, NULL)")
    for conn in conns:
        conn.execute("INSERT INTO items (id, grp) SELECT gen_random_uuid(), 99"
                     " FROM generate_series(1, 20)")
    same(conns, "SELECT count(*), count(DISTINCT id) FROM items WHERE grp = 99")


@pytest.mark.parametrize("fmt", ["text", "csv", "binary"])
def test_copy(conns, tables, fmt):
    """COPY out gives PostgreSQL's bytes; what PostgreSQL writes reads back in."""
    ours, ref = conns
    out = f"COPY (SELECT * FROM items ORDER BY id) TO STDOUT (FORMAT {fmt})"
    want = copy_out(ref, out)
    assert copy_out(ours, out) == want
    for conn in conns:
        conn.execute("CREATE TABLE items2 (id uuid PRIMARY KEY, grp int, ref uuid)")
        copy_in(conn, f"COPY items2 FROM STDIN (FORMAT {fmt})", want)
    same(conns, "SELECT * FROM items2 ORDER BY id")
    same(conns, "SELECT count(*) FROM items2 i2 JOIN items i ON i.id = i2.id AND i.ref = i2.ref")
    if fmt == "text":
        for conn in conns:
            conn.execute("TRUNCATE items2")
        bad = b"{" + U.upper().encode() + b"}\t1\t\\N\nnot-a-uuid\t2\t\\N\n"
        results = []
        for conn in conns:
            try:
                copy_in(conn, "COPY items2 FROM STDIN", bad)
                results.append("ok")
            except psycopg.Error as e:
                results.append(e.sqlstate)
        assert results[0] == results[1] == "22P02"
