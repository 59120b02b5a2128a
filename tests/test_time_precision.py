"""Fractional-second precision of time(p), timestamp(p), timestamptz(p) and interval(p),
against a real PostgreSQL 15 in the same test: the same statements give the same text,
SQLSTATEs and RowDescription type modifiers.

A precision holds a value to p fractional digits, rounding halves away from zero, wherever
PostgreSQL applies it: casts and literals, INSERT, UPDATE, INSERT … SELECT and COPY into
such columns, parameters bound in text and in binary, current_timestamp(p),
localtimestamp(p), localtime(p); expressions over such columns (`a + interval`) are not
held to it until they are stored. The catalogs show it: format_type, pg_attribute's
atttypmod, information_schema's datetime_precision, CREATE TABLE AS.
"""

import datetime as dt

import psycopg
import pytest

TABLE = ("CREATE TABLE tp (id int PRIMARY KEY, a timestamp(0), b timestamptz(2), "
         "c time(0), d interval(0), f timestamp(3) with time zone, g time(4) without time zone)")

SCRIPT = [
    "SELECT '2020-01-01 10:00:00.789'::timestamp(0), '2020-01-01 10:00:00.789'::timestamp(1), "
    "'10:00:00.789'::time(2), '2020-01-01 10:00:00.789+00'::timestamptz(0)",
    # halves away from zero, before and after PostgreSQL's epoch (2000-01-01)
    "SELECT '2020-01-01 10:00:00.5'::timestamp(0), '1999-12-31 23:59:59.5'::timestamp(0), "
    "'1970-01-01 00:00:00.5'::timestamp(0), '1960-06-01 00:00:00.25'::timestamp(1)",
    "SELECT '23:59:59.9'::time(0), '-1.5 s'::interval(0), '1.5 s'::interval(0), "
    "'1 day -0.45 s'::interval(1), '1 mon 2.5 s'::interval(0)",
    "SELECT 'infinity'::timestamp(0), '-infinity'::timestamptz(1)",
    "SELECT '2020-01-01 10:00:00.789'::timestamp(3) with time zone, "
    "'10:00:00.789'::time(1) without time zone, "
    "CAST('2020-01-01 10:00:00.25' AS timestamp(1) without time zone)",
    "SELECT '2020-01-01 10:00:00.7'::timestamp::timestamp(0), "
    "'2020-01-01 10:00:00.7'::date::timestamp(0), "
    "'2020-01-01 10:00:00.75+00'::timestamptz::timestamp(1), "
    "'10:00:00.55'::time::interval(1), '1.55 s'::interval::time(1)",
    "SELECT ARRAY['2020-01-01 10:00:00.7']::timestamp(0)[]",
    "SELECT '2020-01-01 10:00:00.789'::timestamp(6), '2020-01-01 10:00:00.789'::timestamp(7)",
    TABLE,
    "INSERT INTO tp VALUES (1, '2020-01-01 10:00:00.789', '2020-01-01 10:00:00.789+00', "
    "'10:00:00.5', '1 day 00:00:01.6', '2020-01-01 10:00:00.12345+00', '10:00:00.123456')",
    "INSERT INTO tp VALUES (2, '2020-01-01 10:00:00.2'::timestamp, "
    "'2020-01-01 10:00:00.789'::timestamp, '10:00:00.5'::time, '1.49 s'::interval, "
    "'2020-01-01 10:00:00.0005+00', '00:00:00.00005')",
    "INSERT INTO tp SELECT 3, a + interval '0.7 s', b + interval '0.001 s', "
    "c + interval '0.6 s', d * 1.3, f + interval '0.0004 s', g FROM tp WHERE id = 1",
    "INSERT INTO tp (id, a) VALUES (4, '2020-01-01 10:00:00.5') RETURNING a",
    "SELECT * FROM tp ORDER BY id",
    # a literal compared with such a column is not rounded to it
    "SELECT count(*) FROM tp WHERE a = '2020-01-01 10:00:00.789'",
    "SELECT count(*) FROM tp WHERE a < '2020-01-01 10:00:00.5'",
    "SELECT id FROM tp WHERE a = '2020-01-01 10:00:01' ORDER BY id",
    "UPDATE tp SET a = a + interval '0.6 s', c = '11:11:11.51', d = d + interval '0.5 s' "
    "WHERE id = 1 RETURNING a, c, d",
    "UPDATE tp SET b = b + interval '0.0049 s' WHERE id = 2",
    "SELECT id, a, b, c, d FROM tp ORDER BY id",
    "SELECT format_type(atttypid, atttypmod), atttypmod FROM pg_attribute "
    "WHERE attrelid = 'tp'::regclass AND attnum > 0 ORDER BY attnum",
    "SELECT column_name, data_type, datetime_precision FROM information_schema.columns "
    "WHERE table_name = 'tp' ORDER BY ordinal_position",
    "SELECT pg_typeof(a), pg_typeof(a + interval '1 s'), pg_typeof(max(a)) FROM tp "
    "GROUP BY a ORDER BY a LIMIT 1",
    "SELECT date_trunc('hour', a), age(a, a), extract(second from a), to_char(a, 'SS.MS'), "
    "isfinite(d) FROM tp WHERE id = 2",
    "SELECT a, c, d FROM tp WHERE id = 1 UNION ALL SELECT a, c, d FROM tp WHERE id = 2 ORDER BY 1",
    "CREATE TABLE tq AS SELECT a, c, d, a + interval '1 s' AS later FROM tp",
    "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
    "WHERE attrelid = 'tq'::regclass AND attnum > 0 ORDER BY attnum",
    "INSERT INTO tq (a, c) VALUES ('2021-01-01 00:00:00.5', '00:00:00.5') RETURNING a, c",
    "ALTER TABLE tq ADD COLUMN e timestamp(1)",
    "INSERT INTO tq (e) VALUES ('2021-01-01 00:00:00.55') RETURNING e",
    "SELECT current_timestamp(0) = date_trunc('second', current_timestamp(0)), "
    "localtimestamp(1) = date_trunc('second', localtimestamp(1) * 1) OR true, "
    "pg_typeof(localtimestamp(2)), pg_typeof(current_timestamp(3)), pg_typeof(localtime(0))",
    "SELECT extract(microseconds from localtime(0)) % 1000000, "
    "extract(microseconds from current_timestamp(0)) % 1000000",
    "SELECT '2020-01-01'::timestamp(-1)",
    "SELECT 'x'::timestamp(0)",
]


def run(conn, sql):
    """("ok", column names, type modifiers, rows as text) or ("error", SQLSTATE)."""
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            res = cur.pgresult
            if res is None or res.nfields == 0:
                return "ok", [], [], []
            names = [res.fname(i).decode() for i in range(res.nfields)]
            mods = [res.ftype(i) and res.fmod(i) for i in range(res.nfields)]
            rows = [tuple(None if res.get_value(r, c) is None else res.get_value(r, c).decode()
                          for c in range(res.nfields)) for r in range(res.ntuples)]
            return "ok", names, mods, rows
    except psycopg.Error as e:
        assert e.sqlstate, f"error without SQLSTATE: {e}"
        return "error", e.sqlstate


@pytest.fixture(scope="module")
def conns(target, postgres):
    """(server under test, reference), autocommit, UTC, each in a database of its own."""
    pairs = []
    for server in (target, postgres):
        c = psycopg.connect(server.dsn, autocommit=True, prepare_threshold=None)
        c.execute("SET TIME ZONE 'UTC'")
        c.execute("DROP TABLE IF EXISTS tp")
        c.execute("DROP TABLE IF EXISTS tq")
        pairs.append(c)
    yield pairs
    for c in pairs:
        c.execute("DROP TABLE IF EXISTS tp")
        c.execute("DROP TABLE IF EXISTS tq")
        c.close()


def test_script_matches_postgres(conns):
    ours, ref = conns
    for sql in SCRIPT:
        want = run(ref, sql)
        got = run(ours, sql)
        assert got == want, f"{sql}: Meridian {got!r}, PostgreSQL 15 {want!r}"


def test_parameters_and_copy_are_held_to_the_precision(conns):
    """Parameters in text and binary, and COPY in text, are stored rounded."""
    ts = dt.datetime(2022, 3, 4, 5, 6, 7, 500000)
    tz = dt.datetime(2022, 3, 4, 5, 6, 7, 994999, tzinfo=dt.timezone.utc)
    rows = []
    for c in conns:
        c.execute("DROP TABLE IF EXISTS tparam")
        c.execute("CREATE TABLE tparam (id int PRIMARY KEY, a timestamp(0), b timestamptz(2), "
                  "c time(1), d interval(0))")
        with c.cursor() as cur:
            cur.execute("INSERT INTO tparam VALUES (%s, %s, %s, %s, %s)",
                        (1, ts, tz, dt.time(1, 2, 3, 450000), dt.timedelta(seconds=2.5)))
            cur.execute("INSERT INTO tparam VALUES (%b, %b, %b, %b, %b)",
                        (2, ts, tz, dt.time(1, 2, 3, 950000), dt.timedelta(seconds=-2.5)))
            cur.execute("UPDATE tparam SET a = %b WHERE id = 2", (ts.replace(microsecond=499999),))
            with cur.copy("COPY tparam FROM STDIN") as copy:
                copy.write("3\t2021-01-01 00:00:00.9\t2021-01-01 00:00:00.999+00\t00:00:00.45"
                           "\t00:00:00.5\n")
            with cur.copy("COPY tparam FROM STDIN (FORMAT binary)") as copy:
                copy.set_types(["int4", "timestamp", "timestamptz", "time", "interval"])
                copy.write_row((4, ts, tz, dt.time(0, 0, 0, 50000), dt.timedelta(microseconds=1)))
            cur.execute("SELECT * FROM tparam ORDER BY id")
            rows.append(cur.fetchall())
        c.execute("DROP TABLE tparam")
    assert rows[0] == rows[1]
    # and it is rounding that both did, not nothing
    assert rows[0][0][1] == dt.datetime(2022, 3, 4, 5, 6, 8)
