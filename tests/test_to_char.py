"""to_char of dates, timestamps, timestamptz and numbers against PostgreSQL 15 in the same
test: every template of a grid (each date/time pattern and modifier, literal text, the
numeric patterns 9 0 . , D G S MI PL SG PR FM and their blanks, signs and `#` overflow) over
values chosen for their edges (BC years, ISO weeks at a year's turn, zones with half-hour
offsets, negative and rounded numbers, NaN and infinities), compared value by value. The
numeric patterns RN, EEEE, V, L and TH are refused with 0A000, never answered differently.
"""

import itertools

import psycopg
import pytest

DATETIME_VALUES = [
    "timestamptz '2024-02-29 13:05:09.123456+00'", "timestamp '1999-12-31 00:00:00'",
    "date '2000-01-01'", "timestamp '0044-03-15 23:59:59.5 BC'",
    "timestamptz '2021-01-03 07:08:09+05:30'", "timestamp '2024-12-30 12:00:00'",
    "date '2023-01-01'", "timestamp '2026-07-04 01:02:03.000001'", "'infinity'::timestamp",
    "NULL::timestamp",
]
DATETIME_TEMPLATES = [
    "YYYY-MM-DD", "YYYY-MM-DD HH24:MI:SS", 'YYYY-MM-DD"T"HH24:MI:SS.US', "HH12:MI AM",
    "HH:MI:SS pm", "a.m. P.M.", "Month DD, YYYY", "FMMonth FMDD, YYYY",
    "MONTH month Mon MON mon", "Day DY dy day FMDay", "DDD IDDD D ID", "W WW IW IYYY IYY IY I",
    "CC J Q RM rm FMRM", "Y,YYY YYY YY Y", "DDth DDTH FMDDth FMDD", "MS US FF1 FF3 FF6",
    "SSSS SSSSS", "TZ tz TZH:TZM OF", "BC AD b.c. a.d.", '"literal YYYY" YYYY', '\\\\YYYY \\"x',
    "FXYYYY-MM", "YYYYMMDDHH24MISS", "HH24hMI", "Dy, DD Mon YYYY HH24:MI:SS TZ",
    "yyyy-mm-dd hh24:mi:ss", "Mon-DD-YY", "FMHH12:MI am", "IYYY-IW-ID", "FMMM/FMDD/YYYY",
    'Q"Q"YYYY', "",
]
ZONES = ["UTC", "Europe/Rome", "Asia/Kolkata", "America/New_York"]

NUMBER_VALUES = [
    "12", "-12", "0", "0.5::numeric", "-0.5::numeric", "1234.567::numeric",
    "-1234.567::numeric", "99999", "1.005::numeric", "12.345::float8", "-0.001::float8",
    "1e20::float8", "'NaN'::float8", "123456789012345678::int8", "0.0001::numeric",
    "1.5::float4", "-7::int2", "'-Infinity'::float8", "'Infinity'::float4",
    "123456.789::float4", "'NaN'::numeric", "1e-10::numeric", "9.995::numeric",
    "100::numeric", "NULL::numeric",
]
NUMBER_TEMPLATES = [
    "999", "9999", "0000", "9.99", "0.99", "FM9.99", "FM0.00", "9,999.99", "FM9,999.99",
    "999G999D99", "S999", "999S", "999MI", "MI999", "PL999", "SG999", "999PR", "FM999PR", "99",
    "9.9", "090.9", "9990.99", "FM9990.99", ".99", "FM.99", "0", "9", '"$"9,999.00', "9 9 9",
    "S0.00", "FMS9999", "00.00S", "FM999999999999999999990.00", "999999.999999", "FM0.0000",
    "", "x9x9x", "FM9G999", "SG9.99", "FMSG9.99", "FMMI9.99", "FMPL9.99", "9.99MI", "9.99PL",
    "0000.00", "FM0000.00", "FM9999.0099", "9..9", "999PR9", "S9MI",
]
REFUSED_NUMBER_TEMPLATES = ["RN", "9.99EEEE", "99V9", "L999", "999TH"]


@pytest.fixture(scope="module")
def conns(target, postgres):
    pair = [psycopg.connect(s.dsn, autocommit=True) for s in (postgres, target)]
    yield pair
    for c in pair:
        c.close()


def answer(conn, sql, *params):
    try:
        return conn.execute(sql, params).fetchone()[0]
    except psycopg.Error as e:
        return ("error", e.sqlstate)


def differences(conns, values, templates):
    found = []
    for value, template in itertools.product(values, templates):
        sql = f"SELECT to_char({value}, %s)"
        pg, meridian = (answer(c, sql, template) for c in conns)
        if pg != meridian:
            found.append(f"to_char({value}, {template!r}): PostgreSQL {pg!r}, Meridian {meridian!r}")
    return found


@pytest.mark.parametrize("zone", ZONES)
def test_datetime_templates_as_postgres(conns, zone):
    for c in conns:
        c.execute(f"SET TIME ZONE '{zone}'")
    found = differences(conns, DATETIME_VALUES, DATETIME_TEMPLATES)
    assert not found, "\n".join(found[:30])


def test_number_templates_as_postgres(conns):
    found = differences(conns, NUMBER_VALUES, NUMBER_TEMPLATES)
    assert not found, "\n".join(found[:30])


def test_refused_number_patterns_are_0A000(conns):
    meridian = conns[1]
    for template in REFUSED_NUMBER_TEMPLATES:
        assert answer(meridian, "SELECT to_char(12, %s)", template) == ("error", "0A000"), template
        assert answer(meridian, "SELECT 1") == 1


def test_to_char_over_a_table_as_postgres(conns):
    """Column values, as a query over stored rows computes them."""
    results = []
    for c in conns:
        c.execute("DROP TABLE IF EXISTS tc_rows")
        c.execute("CREATE TABLE tc_rows (id int PRIMARY KEY, at timestamptz, amount numeric(12, 2))")
        c.execute("INSERT INTO tc_rows SELECT i, timestamptz '2024-01-01 00:00+00' + i * interval '1 day 1 hour',"
                  " i * 1234.5 - 5000 FROM generate_series(1, 40) i")
        c.execute("SET TIME ZONE 'Europe/Rome'")
        results.append(c.execute(
            "SELECT id, to_char(at, 'Dy DD Mon YYYY HH24:MI TZ'), to_char(amount, 'FM999G999D00PR')"
            " FROM tc_rows ORDER BY id").fetchall())
        c.execute("DROP TABLE tc_rows")
    assert results[1] == results[0]
