"""to_char of dates, timestamps, timestamptz, intervals and numbers, and to_timestamp /
to_date reading by the same templates, against PostgreSQL 15 in the same test: every
template of a grid (each date/time pattern and modifier, literal text, the
numeric patterns 9 0 . , D G S MI PL SG PR FM and their blanks, signs and `#` overflow) over
values chosen for their edges (BC years, ISO weeks at a year's turn, zones with half-hour
offsets, negative and rounded numbers, NaN and infinities), compared value by value. The
numeric patterns RN, EEEE, V, L and TH are refused with 0A000, never answered differently.
Errors are compared by SQLSTATE, and for to_timestamp/to_date by message and detail too.
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
    'Q"Q"YYYY', "", "\\YYYY", "FMMS FMUS FMFF2", "YYYYSP-MM", '"a\\"b" YYYY', "IDDDth DDDTH",
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
    "0000.00", "FM0000.00", "FM9999.0099", "9..9", "999PR9", "S9MI", "\\9",
]
INTERVAL_VALUES = [
    "-1 year -14 months 40 days -27:05:06.789", "0", "-3 days",
    "3 years 2 months 5 days 100:02:03.5", "12 months", "-12 months", "-1 month", "1 month",
    "13 months 1 day", "-00:00:00.000001", "25:00", "12:00", "11:59:59.999999", "10000 years",
    "-4000 years", "123456 years", "2 days 03:04:05", "-45 minutes", "1 year -1 day",
]
INTERVAL_TEMPLATES = [
    "HH HH12 HH24 MI SS", "MS US FF1 FF2 FF3 FF4 FF5 FF6", "FMHH FMHH24 FMMI FMSS FMMS",
    "SSSS SSSSS", "AM PM am a.m. P.M.", "YYYY YYY YY Y Y,YYY", "FMYYYY FMYYY FMYY", "CC FMCC",
    "MM FMMM DD FMDD DDD FMDDD", "WW W Q", "J", "RM rm FMRM", "HH24th DDDth DDth MMTH",
    "HH24:MI:SS", '"days: "DD', "FXHH24", "IW IDDD IYYY IYY IY I", "",
    # Patterns tied to calendar dates: PostgreSQL's 22007.
    "Month", "Day", "TZ", "AD", "D", "ID", "OF",
]
# (input, template) pairs for to_timestamp and to_date: separators matched loosely or under
# FX, fixed-width and FM fields, 12-hour clocks, fractions, offsets, two-digit years, BC,
# centuries, Julian days, day of year, ISO weeks, and each kind of error.
PARSE_CASES = [
    ("2024-02-29", "YYYY-MM-DD"), ("2024-02-30", "YYYY-MM-DD"), ("2023-02-29", "YYYY-MM-DD"),
    ("2024-13-01", "YYYY-MM-DD"), ("2024-01-32", "YYYY-MM-DD"), ("20240229", "YYYYMMDD"),
    ("2024/2/9", "YYYY/MM/DD"), ("2024 2 9", "YYYY MM DD"), ("2024-2-9", "FMYYYY-FMMM-FMDD"),
    ("05 Dec 2000", "DD Mon YYYY"), ("05 december 2000", "DD Month YYYY"),
    ("2000    JUN", "YYYY MON"), ("2000 JUN", "FXYYYY  MON"), ("2000--JUN", "YYYY-MON"),
    ("2000+JUN", "YYYY/MON"), ("2011-12-18 11:38 PM", "YYYY-MM-DD HH:MI PM"),
    ("2011-12-18 12:38 AM", "YYYY-MM-DD HH12:MI AM"),
    ("2011-12-18 12:38 p.m.", "YYYY-MM-DD HH12:MI A.M."),
    ("2011-12-18 13:38 PM", "YYYY-MM-DD HH12:MI PM"), ("2011-12-18 24:00:00", "YYYY-MM-DD HH24:MI:SS"),
    ("10:30", "HH24:MI"), ("2011-12-18 23:38:15.12", "YYYY-MM-DD HH24:MI:SS.MS"),
    ("2011-12-18 23:38:15.1", "YYYY-MM-DD HH24:MI:SS.US"),
    ("2011-12-18 23:38:15.123456", "YYYY-MM-DD HH24:MI:SS.FF3"),
    ("15:38:15.5678", "HH24:MI:SS.FF2"), ("2011-12-18 23:38:15 +05:30", "YYYY-MM-DD HH24:MI:SS TZH:TZM"),
    ("2011-12-18 23:38:15-03", "YYYY-MM-DD HH24:MI:SSTZH"), ("2011-12-18 23:38:15 +16", "YYYY-MM-DD HH24:MI:SS TZH"),
    ("2011-12-18 23:38:15 EST", "YYYY-MM-DD HH24:MI:SS TZ"), ("99-01-02", "YY-MM-DD"), ("69-01-02", "YY-MM-DD"),
    ("9-01-02", "Y-MM-DD"), ("519-01-02", "YYY-MM-DD"), ("520-01-02", "YYY-MM-DD"), ("12345-01-02", "YYYY-MM-DD"),
    ("1,234-05-06", "Y,YYY-MM-DD"), ("44 BC", "YYYY BC"), ("0044-03-15 BC", "YYYY-MM-DD BC"),
    ("44 b.c.", "YYYY B.C."), ("21 05", "CC YY"), ("20 00", "CC YY"), ("21", "CC"), ("-5 10", "CC YY"),
    ("2451545", "J"), ("2024 060", "YYYY DDD"), ("2023 366", "YYYY DDD"), ("060", "DDD"), ("2024 10", "YYYY WW"),
    ("2024 3 2", "YYYY MM W"), ("2024-10-3", "IYYY-IW-ID"), ("2020-53-7", "IYYY-IW-ID"), ("2024 100", "IYYY IDDD"),
    ("2024-10-3", "YYYY-IW-ID"), ("2024 Q2 05", 'YYYY "Q"Q MM'), ("XII 2000", "RM YYYY"), ("iv 2000", "rm YYYY"),
    ("Monday 2024-01-01", "Day YYYY-MM-DD"), ("Xyz 2024", "Dy YYYY"), ("2024-01-01 2025", "YYYY-MM-DD YYYY"),
    ("abc", "YYYY"), ("20x4", "YYYY"), ("2024-1-01", "YYYY-MM-DD"), ("2024-01", "YYYY-MM-DD"), ("2024", ""),
    ("", "YYYY"), ("  2024-01-02", "YYYY-MM-DD"), ("2024 - 01 - 02", "YYYY - MM - DD"), ("2024x01", "YYYY-MM"),
    ("2024-01", "YYYYxMM"), ("1st 2024 Jan", "DDth YYYY Mon"), ("3 Jan 2024", "FMDDth Mon YYYY"),
    ("86399", "SSSSS"), ("99999999999", "YYYY"), ("2147483648", "FMYYYY"), ("2024-06-15  12:34", "FXYYYY-MM-DD HH24:MI"),
    ("Mayday", "Mon"), ("2024-06-15 0 AM", "YYYY-MM-DD HH AM"), ("6/15/24", "FMMM/FMDD/YY"),
    ("2024-06-15 10:11:12.9999995", "YYYY-MM-DD HH24:MI:SS.FMUS"), ("-2024-06-15", "YYYY-MM-DD"),
    ("2024-06-15 05:30", "YYYY-MM-DD TZH:TZM"), ("0000-01-01", "YYYY-MM-DD"), ("294277-01-01", "YYYY-MM-DD"),
    ("5874898-01-01", "YYYY-MM-DD"), ("4714-11-23 BC", "YYYY-MM-DD BC"), ("2024年06月", "YYYY年MM月"),
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


def test_interval_templates_as_postgres(conns):
    values = [f"interval '{v}'" for v in INTERVAL_VALUES]
    found = differences(conns, values, INTERVAL_TEMPLATES)
    assert not found, "\n".join(found[:30])


def parse_answer(conn, sql, *params):
    try:
        return conn.execute(sql, params).fetchone()[0]
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary, e.diag.message_detail)


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
def test_to_timestamp_and_to_date_as_postgres(conns, zone):
    for c in conns:
        c.execute(f"SET TIME ZONE '{zone}'")
    found = []
    for function in ("to_timestamp", "to_date"):
        for text, template in PARSE_CASES:
            sql = f"SELECT {function}(%s, %s)::text"
            pg, meridian = (parse_answer(c, sql, text, template) for c in conns)
            if pg != meridian:
                found.append(f"{function}({text!r}, {template!r}): PostgreSQL {pg!r}, Meridian {meridian!r}")
    assert not found, "\n".join(found[:30])


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
