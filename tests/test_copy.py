"""COPY … TO STDOUT in text, CSV and binary format, and COPY … FROM STDIN in binary
format and CSV with its quote and escape options, against PostgreSQL 15 in the same test.

The same table on both servers (every escape the text format has, CSV's quoting cases,
NULLs, the `\\.` marker, numbers, dates, bytea, arrays): the bytes COPY TO sends must be
PostgreSQL's (compared line by line, sorted where no ORDER BY fixes the order; binary
tuples decoded first), option errors must carry PostgreSQL's SQLSTATEs, and what binary
COPY FROM loads — PostgreSQL's own binary dump fed in small chunks, and psycopg's
binary `write_row` — must read back as it does from PostgreSQL.
"""

import struct

import psycopg
import pytest

from conftest import run_on_each

COLUMNS = ("id int PRIMARY KEY, s text, f float8, n numeric(12,3), b bool, d date, "
           "ts timestamp, by bytea, arr int[], big bigint, v varchar(10)")

SETUP = [
    "DROP TABLE IF EXISTS cp",
    "DROP TABLE IF EXISTS cp_in",
    "DROP TABLE IF EXISTS cp_csv",
    f"CREATE TABLE cp ({COLUMNS})",
    f"CREATE TABLE cp_in ({COLUMNS})",
    "CREATE TABLE cp_csv (id int PRIMARY KEY, s text, t text)",
    "INSERT INTO cp VALUES (1, 'plain', 1.5, 12.5, true, '2024-02-29', "
    "'2024-02-29 12:34:56.789', '\\x00ff', '{1,2,NULL}', 9007199254740993, 'v')",
    "INSERT INTO cp VALUES (2, 'x,\"y\"', -0.1, -3.125, false, '1999-12-31', "
    "'2000-01-01 00:00:00', '\\x', '{}', -1, 'a,b')",
    "INSERT INTO cp (id, s) VALUES (3, '')",
    "INSERT INTO cp (id, s, v) VALUES (4, E'tab\\there\\nnl\\\\ and \\r cr \\b\\f\\v', E'x\\ty')",
    "INSERT INTO cp (id, s) VALUES (5, '\\.')",
    "INSERT INTO cp (id, s) VALUES (6, 'NULL')",
    "INSERT INTO cp (id, s) VALUES (7, NULL)",
    "INSERT INTO cp (id, s, f) VALUES (8, 'it''s|pipe', 1e300)",
]

COPY_OUT = [
    "COPY cp TO STDOUT",
    "COPY cp TO STDOUT (FORMAT text)",
    "COPY cp TO STDOUT (FORMAT csv)",
    "COPY cp TO STDOUT (FORMAT csv, HEADER, FORCE_QUOTE *)",
    "COPY cp (s, id) TO STDOUT (FORMAT csv, FORCE_QUOTE (s), NULL 'NULL', QUOTE '''', ESCAPE '\\')",
    "COPY cp TO STDOUT (DELIMITER '|', NULL '<null>', HEADER)",
    "COPY cp (v, id) TO STDOUT (DELIMITER ',')",
    "COPY cp TO STDOUT WITH CSV HEADER FORCE QUOTE s, v",
    "COPY cp TO STDOUT WITH DELIMITER AS ';' NULL AS ''",
    "COPY (SELECT s FROM cp ORDER BY id) TO STDOUT (FORMAT csv)",
    "COPY (SELECT s FROM cp ORDER BY id) TO STDOUT (FORMAT csv, HEADER)",
    "COPY (SELECT id, s || '!' AS t FROM cp WHERE id > 2 ORDER BY id DESC) TO STDOUT WITH CSV HEADER",
    "COPY (SELECT id, s FROM cp WHERE false) TO STDOUT",
    "COPY (SELECT i, i * 2 AS twice, 'v' || i AS v FROM generate_series(1, 20000) i) TO STDOUT",
    "COPY (SELECT 1 AS x, NULL::text AS y) TO STDOUT (FORMAT csv, FORCE_QUOTE (y))",
]

COPY_OUT_BINARY = [
    "COPY cp TO STDOUT (FORMAT binary)",
    "COPY cp (id, n, arr) TO STDOUT WITH BINARY",
    "COPY (SELECT id, f, n, d, ts, by FROM cp ORDER BY id) TO STDOUT (FORMAT binary)",
    "COPY (SELECT 1 WHERE false) TO STDOUT (FORMAT binary)",
]

ERRORS = [
    "COPY cp TO STDOUT (FORMAT xml)",
    "COPY cp TO STDOUT (DELIMITER 'ab')",
    "COPY cp TO STDOUT (FORMAT binary, DELIMITER ',')",
    "COPY cp TO STDOUT (FORMAT binary, NULL 'x')",
    "COPY cp TO STDOUT (FORMAT binary, HEADER)",
    "COPY cp TO STDOUT (QUOTE '\"')",
    "COPY cp TO STDOUT (ESCAPE '\"')",
    "COPY cp TO STDOUT (FORMAT csv, FORMAT csv)",
    "COPY cp TO STDOUT (foo 1)",
    "COPY cp TO STDOUT (HEADER match)",
    "COPY cp TO STDOUT (FORCE_QUOTE *)",
    "COPY cp FROM STDIN (FORMAT csv, FORCE_QUOTE *)",
    "COPY cp TO STDOUT (FORMAT csv, ESCAPE 'ab')",
    "COPY cp TO STDOUT (FORMAT csv, QUOTE ',')",
    "COPY cp TO STDOUT (DELIMITER '\\')",
    "COPY cp TO STDOUT (DELIMITER 'a')",
    "COPY cp TO STDOUT (FORMAT csv, FORCE_QUOTE (zz))",
    "COPY cp TO STDOUT (FORMAT csv, NULL 'a\"b')",
    "COPY cp TO STDOUT (NULL 'a\tb')",
    "COPY cp TO STDOUT (FORMAT csv, FORCE_NOT_NULL (s))",
    "COPY (SELECT 1 AS x) TO STDOUT (FORMAT csv, FORCE_QUOTE (y))",
    "COPY (DELETE FROM cp WHERE id = 0) TO STDOUT",
    "COPY nosuch TO STDOUT",
    "COPY cp (zz) TO STDOUT",
    "COPY cp (s, s) TO STDOUT",
    "COPY (SELECT nosuch FROM cp) TO STDOUT",
]


@pytest.fixture
def servers(postgres, target):
    return run_on_each([postgres, target], SETUP)


def copy_out(conn, sql) -> bytes:
    with conn.cursor() as cur:
        with cur.copy(sql) as copy:
            return b"".join(bytes(chunk) for chunk in copy)


def outcome(conn, sql):
    try:
        return copy_out(conn, sql)
    except psycopg.Error as e:
        return e.sqlstate


def binary_tuples(data: bytes) -> list[tuple]:
    """Decode PostgreSQL's binary COPY layout into tuples of raw field bytes."""
    assert data[:11] == b"PGCOPY\n\xff\r\n\x00", data[:11]
    flags, ext = struct.unpack(">ii", data[11:19])
    assert flags == 0
    at = 19 + ext
    tuples = []
    while True:
        (count,) = struct.unpack(">h", data[at:at + 2])
        at += 2
        if count == -1:
            assert at == len(data)
            return tuples
        fields = []
        for _ in range(count):
            (n,) = struct.unpack(">i", data[at:at + 4])
            at += 4
            fields.append(None if n == -1 else data[at:at + n])
            at += max(n, 0)
        tuples.append(tuple(fields))


def test_copy_to_text_and_csv_as_postgres(servers):
    results = []
    for s in servers:
        with psycopg.connect(s.dsn, autocommit=True) as c:
            results.append([outcome(c, sql) for sql in COPY_OUT])
    for sql, pg, meridian in zip(COPY_OUT, *results):
        assert isinstance(pg, bytes), (sql, pg)
        assert isinstance(meridian, bytes), (sql, meridian)
        ordered = "ORDER BY" in sql or "generate_series" in sql
        if "HEADER" in sql.upper() and not ordered:
            assert meridian.split(b"\n")[0] == pg.split(b"\n")[0], sql
        if ordered:
            assert meridian == pg, sql
        else:
            assert sorted(meridian.split(b"\n")) == sorted(pg.split(b"\n")), sql


def test_copy_to_binary_as_postgres(servers):
    results = []
    for s in servers:
        with psycopg.connect(s.dsn, autocommit=True) as c:
            results.append([outcome(c, sql) for sql in COPY_OUT_BINARY])
    for sql, pg, meridian in zip(COPY_OUT_BINARY, *results):
        assert isinstance(meridian, bytes), (sql, meridian)
        if "ORDER BY" in sql:
            assert meridian == pg, sql
        else:
            assert sorted(binary_tuples(meridian), key=repr) == \
                sorted(binary_tuples(pg), key=repr), sql


def test_option_errors_as_postgres(servers):
    results = []
    for s in servers:
        with psycopg.connect(s.dsn, autocommit=True) as c:
            got = []
            for sql in ERRORS:
                got.append(outcome(c, sql) if "STDOUT" in sql else copy_in_error(c, sql))
                assert c.execute("SELECT 1").fetchone() == (1,)
            results.append(got)
    for sql, pg, meridian in zip(ERRORS, *results):
        assert isinstance(pg, str), (sql, pg)
        assert meridian == pg, sql


def copy_in_error(conn, sql):
    try:
        with conn.cursor() as cur:
            with cur.copy(sql) as copy:
                copy.write(b"")
        return None
    except psycopg.Error as e:
        return e.sqlstate


def table_rows(conn, table):
    return conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()


def test_binary_copy_from_loads_postgres_dump(servers):
    """PostgreSQL's own binary dump, fed in 7-byte chunks, loads the same rows."""
    pg, meridian = servers
    with psycopg.connect(pg.dsn, autocommit=True) as c:
        dump = copy_out(c, "COPY cp TO STDOUT (FORMAT binary)")
    for s in servers:
        with psycopg.connect(s.dsn, autocommit=True) as c:
            with c.cursor() as cur:
                with cur.copy("COPY cp_in FROM STDIN (FORMAT binary)") as copy:
                    for i in range(0, len(dump), 7):
                        copy.write(dump[i:i + 7])
                assert cur.rowcount == 8
    with psycopg.connect(pg.dsn) as a, psycopg.connect(meridian.dsn) as b:
        assert table_rows(b, "cp_in") == table_rows(a, "cp_in") == table_rows(a, "cp")


def test_binary_round_trip_through_meridian(servers):
    """Meridian's binary COPY TO reads back through its binary COPY FROM unchanged."""
    _, meridian = servers
    with psycopg.connect(meridian.dsn, autocommit=True) as c:
        dump = copy_out(c, "COPY (SELECT * FROM cp ORDER BY id) TO STDOUT (FORMAT binary)")
        c.execute("TRUNCATE cp_in")
        with c.cursor() as cur:
            with cur.copy("COPY cp_in FROM STDIN WITH (FORMAT binary)") as copy:
                copy.write(dump)
        assert table_rows(c, "cp_in") == table_rows(c, "cp")


def test_psycopg_binary_write_row(servers):
    rows = [(i, f"r{i}" if i % 3 else None, i / 4) for i in range(1, 500)]
    results = []
    for s in servers:
        with psycopg.connect(s.dsn, autocommit=True) as c:
            c.execute("TRUNCATE cp_in")
            with c.cursor() as cur:
                with cur.copy("COPY cp_in (id, s, f) FROM STDIN (FORMAT BINARY)") as copy:
                    copy.set_types(["int4", "text", "float8"])
                    for r in rows:
                        copy.write_row(r)
            results.append(c.execute("SELECT id, s, f FROM cp_in ORDER BY id").fetchall())
    assert results[1] == results[0] == rows


BAD_BINARY = [
    b"PGCOPY\nX",
    b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0) + struct.pack(">h", 2) + b"\0\0\0\x01",
    b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0) + struct.pack(">hi", 1, -5),
    b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0) + struct.pack(">hi", 1, 2) + b"abc",
    b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 1 << 16, 0),
]


@pytest.mark.parametrize("data", BAD_BINARY, ids=["signature", "field-count", "field-size",
                                                  "int-size", "oids"])
def test_bad_binary_input_as_postgres(servers, data):
    """A malformed binary stream fails with PostgreSQL's SQLSTATE and loads nothing."""
    results = []
    for s in servers:
        with psycopg.connect(s.dsn, autocommit=True) as c:
            c.execute("CREATE TABLE IF NOT EXISTS cp_one (id int)")
            try:
                with c.cursor() as cur:
                    with cur.copy("COPY cp_one FROM STDIN (FORMAT binary)") as copy:
                        copy.write(data)
                results.append(None)
            except psycopg.Error as e:
                results.append(e.sqlstate)
            results.append(c.execute("SELECT count(*) FROM cp_one").fetchone())
            c.execute("DROP TABLE cp_one")
    assert results[2:] == results[:2]
    assert results[0] is not None


def test_csv_from_with_quote_and_escape(servers):
    data = (b"1,'a\\'b\\\\',NULL\n"
            b"2,'multi\nline','NULL'\n"
            b"3,,''\n")
    results = []
    for s in servers:
        with psycopg.connect(s.dsn, autocommit=True) as c:
            with c.cursor() as cur:
                with cur.copy("COPY cp_csv FROM STDIN (FORMAT csv, QUOTE '''', "
                              "ESCAPE '\\', NULL 'NULL')") as copy:
                    copy.write(data)
            results.append(table_rows(c, "cp_csv"))
    assert results[1] == results[0]
