"""DateStyle and IntervalStyle against PostgreSQL 15 in the same test: every output style
and field order over dates, timestamps and timestamptz (BC, infinities, fractions, zone
abbreviations in three zones), JSON staying ISO, ambiguous input read in the session's
order (`01/02/03`, `28.11.2026`, `24-Jan-03`), the four interval styles (and the
sql_standard reading of a leading minus), SHOW and the settings' errors, the value
reported to clients in ParameterStatus, and psycopg loading values in each style.

Statements run unprepared on both servers: PostgreSQL folds a literal in a prepared
statement with the DateStyle of the moment it was planned, which no client relies on.
"""

import psycopg
import pytest

STYLES = [
    "ISO, MDY", "ISO, DMY", "SQL, MDY", "SQL, DMY", "Postgres, MDY", "Postgres, DMY",
    "German", "German, MDY", "Postgres, YMD", "SQL, YMD", "euro", "us", "dmy", "sql",
    "default", "iso, sql", "ymd, dmy", "bogus",
]
VALUES = [
    "date '2024-02-29'", "date '0044-03-15 BC'", "'infinity'::date",
    "timestamp '2024-02-29 13:05:09.123456'", "timestamp '0001-01-01 00:00 BC'",
    "timestamptz '2024-07-01 12:00:00.5+00'", "timestamptz '2024-01-01 00:00+00'",
    "'-infinity'::timestamptz", "time '12:34:56.7'", "ARRAY[date '2024-01-02']",
    "to_json(date '2024-01-02')", "json_build_object(date '2024-01-02', timestamp '2024-01-02 03:04')",
    "to_char(date '2024-01-02', 'DD Mon YYYY')",
]
INPUTS = [
    "01/02/2024", "01-02-2024", "01.02.2024", "1/2/24", "01/02/03", "2024/01/02", "24-Jan-03",
    "13/01/2024", "28.11.2026", "Jan 2 2024", "2024-01-02 03:04:05",
]
INTERVALS = [
    "0", "1 day", "-1 day", "1 year 2 mons 3 days 04:05:06.5", "-1 year -2 mons",
    "1 day -02:00:00", "-00:00:01.5", "00:00:01", "-1 days +02:03", "3 mons -4 days",
    "-3 mons 4 days 5:00", "100:00:00", "1 year", "2 mons", "-00:00:00.000001", "-1 2:03",
]
INTERVAL_STYLES = ["postgres", "postgres_verbose", "sql_standard", "iso_8601", "bogus"]


@pytest.fixture
def conns(target, postgres):
    pair = [psycopg.connect(s.dsn, autocommit=True, prepare_threshold=None)
            for s in (postgres, target)]
    yield pair
    for c in pair:
        c.close()


def answer(conn, sql):
    try:
        cur = conn.execute(sql)
        return cur.fetchone()[0] if cur.description else cur.statusmessage
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary, e.diag.message_detail)


def compare(conns, statements, found, label):
    for sql in statements:
        pg, meridian = (answer(c, sql) for c in conns)
        if pg != meridian:
            found.append(f"{label}: {sql}: PostgreSQL {pg!r}, Meridian {meridian!r}")


@pytest.mark.parametrize("zone", ["UTC", "Europe/Rome", "America/New_York"])
def test_date_styles_as_postgres(conns, zone):
    found = []
    for style in STYLES:
        for c in conns:
            c.execute("RESET datestyle")
            c.execute(f"SET TIME ZONE '{zone}'")
        compare(conns, [f"SET datestyle = '{style}'", "SHOW datestyle"], found, style)
        compare(conns, [f"SELECT ({v})::text" for v in VALUES], found, style)
        compare(conns, [f"SELECT ('{i}'::{t})::text" for i in INPUTS
                        for t in ("date", "timestamp", "timestamptz")], found, style)
    assert not found, "\n".join(found[:30])


def test_the_default_zone_shows_its_name(conns):
    """A session that never set TimeZone shows "UTC" where DateStyle writes zone names."""
    found = []
    compare(conns, ["SET datestyle = 'SQL'", "SELECT timestamptz '2024-01-02 03:04:05+00'::text",
                    "SELECT to_char(timestamptz '2024-01-02 03:04:05+00', 'TZ')"], found, "default zone")
    assert not found, "\n".join(found)


def test_interval_styles_as_postgres(conns):
    found = []
    for style in INTERVAL_STYLES:
        compare(conns, [f"SET intervalstyle = '{style}'", "SHOW intervalstyle"], found, style)
        compare(conns, [f"SELECT (interval '{v}')::text" for v in INTERVALS], found, style)
        compare(conns, [f"SELECT ('{v}'::interval)::text" for v in INTERVALS], found, style)
        compare(conns, ["SELECT to_json(interval '1 day 02:00')::text"], found, style)
    assert not found, "\n".join(found[:30])


def test_parameter_status_reports_the_style(conns):
    reported = []
    for c in conns:
        c.execute("SET datestyle = 'sql, dmy'")
        c.execute("SET intervalstyle = 'iso_8601'")
        reported.append((c.info.parameter_status("DateStyle"),
                         c.info.parameter_status("IntervalStyle")))
    assert reported[1] == reported[0] == ("SQL, DMY", "iso_8601")


@pytest.mark.parametrize("style", ["ISO, DMY", "SQL, DMY", "German", "Postgres, MDY"])
def test_psycopg_loads_values_as_from_postgres(conns, style):
    """psycopg reads DateStyle from ParameterStatus and parses dates by it (it refuses some
    timestamp styles); each value or refusal must be the same from both servers."""
    loaded = []
    for c in conns:
        c.execute(f"SET datestyle = '{style}'")
        row = []
        for sql in ["SELECT date '2024-02-29'", "SELECT timestamp '2024-02-29 13:05:09.5'",
                    "SELECT timestamptz '2024-02-29 13:05:09+00'", "SELECT interval '1 day 02:00'"]:
            try:
                row.append(c.execute(sql).fetchone()[0])
            except (psycopg.Error, NotImplementedError, ValueError) as e:
                row.append(type(e).__name__)
        loaded.append(row)
    assert loaded[1] == loaded[0]
