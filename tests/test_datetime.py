"""Time zones against a real PostgreSQL 15: the same statements give the same text (the
server's own output, not the driver's reading of it) and the same SQLSTATEs.

Covered: SET TIME ZONE / SET timezone with IANA names (any case), numeric offsets (hours
east), POSIX specifications (`UTC+3` is three hours west, `'+05:30'` too), INTERVAL
offsets, LOCAL/DEFAULT, the TimeZone startup parameter (`options=-c TimeZone=…` and
libpq's PGTZ); timestamptz output and input in the session's zone across DST gaps and
overlaps, historical offsets with seconds, zones and abbreviations written in literals;
casts between timestamptz and date/timestamp/time/text; the TimeZone ParameterStatus;
psycopg's datetimes with the zone's tzinfo; and a randomized comparison of wall-clock
times read and shown in each zone.
"""

import datetime as dt

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

SETTINGS = dict(deadline=None, database=None, derandomize=False, max_examples=150,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

ZONES = ["Europe/Rome", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe",
         "+05:30", "UTC+3", "UTC", "Etc/UTC", "5", "-3.5", "EST5EDT", "america/new_york"]


@pytest.fixture(scope="module")
def conns(target, postgres):
    """(server under test, reference) autocommit connections."""
    # Never prepared: PostgreSQL reads a timestamptz literal once, when it prepares a
    # statement, in the zone of that moment (Meridian when it runs it).
    a = psycopg.connect(target.dsn, autocommit=True, prepare_threshold=None)
    b = psycopg.connect(postgres.dsn, autocommit=True, prepare_threshold=None)
    yield a, b
    a.close()
    b.close()


def run(conn, sql):
    """("ok", column names, rows as the server's text) or ("error", SQLSTATE, message)."""
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            res = cur.pgresult
            if res is None or res.nfields == 0:
                return "ok", [], []
            names = [res.fname(i).decode() for i in range(res.nfields)]
            rows = [tuple(None if res.get_value(r, c) is None else res.get_value(r, c).decode()
                          for c in range(res.nfields)) for r in range(res.ntuples)]
            return "ok", names, rows
    except psycopg.Error as e:
        assert e.sqlstate, f"error without SQLSTATE: {e}"
        return "error", e.sqlstate, e.diag.message_primary


def same(conns, sql):
    """The statement gives the same answer on both servers."""
    ours, ref = conns
    want = run(ref, sql)
    got = run(ours, sql)
    assert got == want, f"{sql}: Meridian {got!r}, PostgreSQL 15 {want!r}"
    return want


def set_zone(conns, zone):
    for c in conns:
        c.execute(f"SET TIME ZONE '{zone}'")


# --------------------------------------------------------------------------------------
# SET TIME ZONE and SHOW
# --------------------------------------------------------------------------------------

SETTINGS_FORMS = [
    "SET TIME ZONE 'Europe/Rome'", "SET timezone = 'America/New_York'",
    "SET timezone TO 'asia/kolkata'", "SET TIME ZONE '+05:30'", "SET TIME ZONE 'UTC+3'",
    "SET TIME ZONE 'UTC-05:30'", "SET TIME ZONE 5", "SET TIME ZONE -3.5", "SET TIME ZONE 100",
    "SET timezone = '+5'", "SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE",
    "SET TIME ZONE INTERVAL '-08:00'", "SET TIME ZONE LOCAL", "SET TIME ZONE DEFAULT",
    "SET TIME ZONE 'utc'", "SET TIME ZONE 'EST5EDT'", "SET TIME ZONE 'CET'",
    "SET TIME ZONE 'Etc/GMT+3'", "SET TIME ZONE 'Australia/Lord_Howe'",
    "RESET timezone", "SET LOCAL TIME ZONE 'Europe/Rome'",
]


@pytest.mark.parametrize("statement", SETTINGS_FORMS)
def test_set_time_zone_forms(conns, statement):
    set_zone(conns, "UTC")
    same(conns, statement)
    same(conns, "SHOW TIME ZONE")
    same(conns, "SHOW timezone")
    same(conns, "SELECT current_setting('TimeZone')")
    same(conns, "SELECT timestamptz '2021-06-01 12:00:00+00', timestamptz '2021-01-01 12:00:00+00'")
    ours, ref = conns
    assert ours.info.parameter_status("TimeZone") == ref.info.parameter_status("TimeZone")


@pytest.mark.parametrize("statement", [
    "SET TIME ZONE 'Nowhere/Land'", "SET timezone = 'Europe/Romeo'", "SET TIME ZONE 200",
    "SET TIME ZONE INTERVAL '1 day'", "SET TIME ZONE INTERVAL '1 month'",
    "SET TIME ZONE ''", "SET timezone = 'UTC+200'",
])
def test_bad_zones_are_22023_with_postgres_message(conns, statement):
    set_zone(conns, "Europe/Rome")
    assert same(conns, statement)[0] == "error"
    # the session keeps its zone
    same(conns, "SHOW TimeZone")


def test_parameter_status_follows_changes(conns):
    ours, ref = conns
    for c in conns:
        c.execute("SET TIME ZONE 'Asia/Kolkata'")
    assert ours.info.parameter_status("TimeZone") == "Asia/Kolkata"
    for c in conns:
        with c.transaction():
            c.execute("SET LOCAL TIME ZONE 'Europe/Rome'")
            assert c.info.parameter_status("TimeZone") == "Europe/Rome"
    # SET LOCAL ends with the transaction; the client is told
    assert ours.info.parameter_status("TimeZone") == ref.info.parameter_status("TimeZone") \
        == "Asia/Kolkata"
    for c in conns:
        c.execute("SELECT set_config('timezone', 'America/New_York', false)")
    same(conns, "SHOW TimeZone")


@pytest.mark.parametrize("how", ["options", "PGTZ"])
def test_time_zone_startup_parameter(target, postgres, monkeypatch, how):
    kwargs = {}
    if how == "options":
        kwargs["options"] = "-c TimeZone=Australia/Lord_Howe"
    else:
        monkeypatch.setenv("PGTZ", "Australia/Lord_Howe")
    answers = []
    for s in (target, postgres):
        with psycopg.connect(s.dsn, autocommit=True, **kwargs) as c:
            assert c.info.parameter_status("TimeZone") == "Australia/Lord_Howe"
            answers.append(run(c, "SELECT timestamptz '2021-06-01 12:00+00', "
                                  "timestamptz '2021-01-01 12:00+00', current_setting('timezone')"))
    assert answers[0] == answers[1]


# --------------------------------------------------------------------------------------
# timestamptz output and input in the session's zone
# --------------------------------------------------------------------------------------

INSTANTS = [
    "2021-06-01 12:00:00+00", "2021-01-01 00:00:00+00", "1890-06-01 12:00:00+00",
    "1850-01-01 00:00:00+00", "2000-01-01 00:00:00.123456+00", "1970-01-01 00:00:00+00",
    # around Rome's and New York's 2021 transitions
    "2021-03-28 00:59:59+00", "2021-03-28 01:00:00+00", "2021-10-31 00:59:59+00",
    "2021-10-31 01:00:00+00", "2021-03-14 06:59:59+00", "2021-03-14 07:00:00+00",
    "2021-11-07 05:59:59+00", "2021-11-07 06:00:00+00",
    # Lord Howe's half-hour shift
    "2021-04-03 14:59:59+00", "2021-04-03 15:00:00+00",
    "0044-03-15 12:00:00+00 BC", "4000-01-01 00:00:00+00", "20000-01-01 00:00:00+00",
    "infinity", "-infinity", "epoch",
]

WALL_CLOCKS = [
    "2021-06-01 12:00", "2021-03-28 02:30", "2021-03-28 03:30", "2021-10-31 02:30",
    "2021-10-31 01:59:59", "2021-03-14 02:30", "2021-11-07 01:30", "2021-04-04 01:45",
    "2021-10-03 02:15", "1890-06-01 12:00", "1900-01-01 00:00", "2038-01-19 03:14:08",
    "2021-06-01 12:00 Europe/Rome", "2021-06-01 12:00 America/New_York",
    "2021-06-01 12:00 EST", "2021-06-01 12:00 PDT", "2021-06-01 12:00 CEST",
    "2021-06-01T12:00:00Z", "2021-06-01 12:00 UTC", "2021-06-01 12:00+05:30",
    "2021-06-01 12:00:00-03", "2021-06-01 12:00 Asia/Kolkata", "June 1, 2021 12:00",
]


@pytest.mark.parametrize("zone", ZONES)
def test_output_in_session_zone(conns, zone):
    set_zone(conns, zone)
    values = ", ".join(f"timestamptz '{i}'" for i in INSTANTS)
    same(conns, f"SELECT {values}")
    same(conns, f"SELECT ARRAY[{values}]")


@pytest.mark.parametrize("zone", ZONES)
def test_input_in_session_zone(conns, zone):
    set_zone(conns, zone)
    for w in WALL_CLOCKS:
        same(conns, f"SELECT '{w}'::timestamptz, '{w}'::timestamp, '{w}'::date")
        same(conns, f"SELECT CAST('{w}' AS timestamp with time zone)")
    same(conns, "SELECT '2021-13-01 00:00'::timestamptz")
    same(conns, "SELECT '2021-06-01 12:00 Nowhere/Land'::timestamptz")


@pytest.mark.parametrize("zone", ZONES)
def test_casts_follow_the_zone(conns, zone):
    set_zone(conns, zone)
    for i in INSTANTS[:16]:
        same(conns, f"SELECT '{i}'::timestamptz::date, '{i}'::timestamptz::timestamp, "
                    f"'{i}'::timestamptz::time, '{i}'::timestamptz::text, "
                    f"'{i}'::timestamptz::varchar(40)")
    for w in WALL_CLOCKS[:12]:
        same(conns, f"SELECT timestamp '{w}'::timestamptz, date '{w[:10]}'::timestamptz, "
                    f"('{w}'::text)::timestamptz")
    same(conns, "SELECT 'infinity'::timestamptz::timestamp, '-infinity'::date::timestamptz")


def test_values_stored_and_read_in_other_zones(conns):
    """A timestamptz column holds instants: written in one zone, read in another."""
    for c in conns:
        c.execute("DROP TABLE IF EXISTS tz_events")
        c.execute("CREATE TABLE tz_events (id int PRIMARY KEY, at timestamptz, local timestamp)")
    set_zone(conns, "Europe/Rome")
    for i, w in enumerate(WALL_CLOCKS[:12]):
        for c in conns:
            c.execute(f"INSERT INTO tz_events VALUES ({i}, '{w}', '{w}')")
    for c in conns:
        c.execute("INSERT INTO tz_events VALUES (100, %s, %s)",
                  (dt.datetime(2021, 7, 1, 9, 30, tzinfo=dt.timezone(dt.timedelta(hours=-4))),
                   dt.datetime(2021, 7, 1, 9, 30)))
    for zone in ("America/New_York", "Asia/Kolkata", "UTC+3", "Australia/Lord_Howe"):
        set_zone(conns, zone)
        same(conns, "SELECT id, at, local, at::date, local::timestamptz FROM tz_events ORDER BY id")
        same(conns, "SELECT id FROM tz_events WHERE at < '2021-06-01 12:00' ORDER BY id")
        same(conns, "SELECT count(*) FROM tz_events WHERE at::date = '2021-06-01'")
    # COPY FROM reads timestamptz in the session's zone
    for c in conns:
        with c.cursor().copy("COPY tz_events (id, at) FROM STDIN") as cp:
            cp.write_row((200, "2021-03-28 02:30"))
    same(conns, "SELECT id, at FROM tz_events WHERE id = 200")


def test_extended_protocol_parameters_follow_the_zone(conns):
    """A text parameter without an offset is read in the session's zone, and a plan bound
    by one session is not reused with its literal read in another's zone."""
    for zone in ("Europe/Rome", "America/New_York", "Asia/Kolkata"):
        set_zone(conns, zone)
        got = [c.execute("SELECT %s::timestamptz::text, '2021-06-01 12:00'::timestamptz::text",
                         ("2021-06-01 12:00",)).fetchone() for c in conns]
        assert got[0] == got[1], zone


@pytest.mark.parametrize("zone", ["Europe/Rome", "America/New_York", "Asia/Kolkata",
                                  "Australia/Lord_Howe", "UTC"])
def test_psycopg_datetimes_carry_the_zone(conns, zone):
    set_zone(conns, zone)
    sql = ("SELECT timestamptz '2021-06-01 12:00+00', timestamptz '2021-10-31 01:30+00', "
           "timestamptz '1890-06-01 12:00+00', now() - now()")
    ours, ref = conns
    for binary in (False, True):
        a = ours.cursor(binary=binary).execute(sql).fetchone()
        b = ref.cursor(binary=binary).execute(sql).fetchone()
        assert a == b
        for x, y in zip(a[:3], b[:3]):
            assert x.utcoffset() == y.utcoffset() and str(x.tzinfo) == str(y.tzinfo)


# --------------------------------------------------------------------------------------
# randomized: wall clocks read and shown in each zone
# --------------------------------------------------------------------------------------

@settings(**SETTINGS)
@given(zone=st.sampled_from(ZONES),
       when=st.datetimes(min_value=dt.datetime(1800, 1, 1), max_value=dt.datetime(2100, 12, 31)),
       utc=st.booleans())
def test_random_wall_clocks_and_instants(conns, zone, when, utc):
    set_zone(conns, zone)
    text = when.isoformat(sep=" ") + ("+00" if utc else "")
    same(conns, f"SELECT '{text}'::timestamptz, '{text}'::timestamptz::timestamp, "
                f"'{text}'::timestamptz::date")


# --------------------------------------------------------------------------------------
# interval literals, date/time functions and arithmetic in each zone
# --------------------------------------------------------------------------------------

FUNCTION_STATEMENTS = [
    "select interval '1 day 2 hours', interval '1-2', interval '-1-2', interval '1' day, interval '1.5' year, interval '2' hour to minute, interval 'P1Y2M', interval '@ 1 hour ago'",
    "select interval '1 day 2 hours 3 minutes 4.5 seconds' hour to minute, interval '10', interval '3' month, interval '1 year 5 months' year",
    "select extract(year from timestamptz '2021-06-01 23:30:00+00'), extract(hour from timestamptz '2021-06-01 23:30:00+00'), extract(epoch from timestamptz '2021-06-01 23:30:00.5+00'), extract(timezone from timestamptz '2021-06-01 23:30:00+00'), extract(dow from timestamptz '2021-06-01 23:30:00+00')",
    "select extract(second from timestamp '2021-06-01 12:00:30.5'), extract(milliseconds from timestamp '2021-06-01 12:00:30.5'), extract(microseconds from timestamp '2021-06-01 12:00:30.5'), extract(week from date '2021-01-03'), extract(isoyear from date '2021-01-03'), extract(doy from date '2021-12-31'), extract(quarter from date '2021-08-01')",
    "select extract(century from date '2001-01-01'), extract(millennium from date '2000-12-31'), extract(decade from date '1999-01-01'), extract(year from date '0044-03-15 BC'), extract(epoch from date '2021-06-01'), extract(julian from date '2021-06-01'), extract(isodow from date '2021-06-06')",
    "select extract(epoch from interval '1 year 2 days 3 sec'), extract(hour from interval '25 hours'), extract(month from interval '14 months'), extract(year from 'infinity'::timestamp), extract(hour from 'infinity'::timestamp)",
    "select date_part('year', timestamptz '2021-06-01 23:30+00'), date_part('epoch', timestamp '2021-06-01 12:00:30.5'), date_part('day', date '2021-06-05'), date_part('hour', interval '5 hours'), date_part('julian', timestamp '2021-06-01 12:00')",
    "select date_part('foo', now())",
    "select extract(hour from date '2021-01-01')",
    "select date_trunc('day', timestamptz '2021-03-28 12:00+00'), date_trunc('hour', timestamptz '2021-10-31 01:30+00'), date_trunc('month', timestamptz '2021-06-15 12:00+00'), date_trunc('week', timestamp '2021-06-03 12:00'), date_trunc('year', timestamp '2021-06-03 12:00'), date_trunc('quarter', timestamp '2021-08-03 12:00')",
    "select date_trunc('century', timestamp '2021-06-03 12:00'), date_trunc('millennium', timestamp '2021-06-03 12:00'), date_trunc('decade', timestamp '2021-06-03 12:00'), date_trunc('minute', timestamp '2021-06-03 12:34:56.789'), date_trunc('milliseconds', timestamp '2021-06-03 12:34:56.789123')",
    "select date_trunc('day', timestamptz '2021-06-01 12:00+00', 'Asia/Tokyo'), date_trunc('foo', timestamp '2021-06-01')",
    "select timestamptz '2021-06-01 12:00+00' at time zone 'America/New_York', timestamp '2021-06-01 12:00' at time zone 'Europe/Rome', timezone('UTC+3', timestamp '2021-06-01 12:00'), timestamptz '2021-06-01 12:00+00' at time zone interval '+05:30', timestamptz '2021-06-01 12:00+00' at time zone 'EST'",
    "select now() at time zone 'Nowhere'",
    "select timestamptz '2021-03-27 12:00+00' + interval '1 day', timestamptz '2021-03-27 12:00+00' + interval '24 hours', timestamptz '2021-10-30 12:00+00' + interval '1 day', timestamptz '2021-01-31 12:00+00' + interval '1 month', timestamptz '2021-03-29 12:00+00' - interval '1 day 1 hour', interval '1 day' + timestamptz '2021-03-27 12:00+00'",
    "select age(timestamp '2021-06-01', timestamp '2020-01-15 12:00'), age(timestamp '2020-01-15', timestamp '2021-06-01 12:00'), age(timestamptz '2021-03-31 00:00+00', timestamptz '2021-02-28 12:00+00'), age(timestamp '2021-03-01', timestamp '2021-01-31')",
    "select isfinite(date '2021-01-01'), isfinite('infinity'::timestamp), isfinite(interval '1 day'), isfinite(timestamptz '-infinity')",
    "select justify_days(interval '35 days'), justify_hours(interval '27 hours'), justify_interval(interval '1 mon -1 hour'), justify_days(interval '-35 days'), justify_interval(interval '-1 mon 2 days')",
    "select make_date(2021, 2, 28), make_date(-44, 3, 15), make_time(12, 30, 15.5), make_timestamp(2021, 6, 1, 12, 0, 30.25), make_timestamptz(2021, 6, 1, 12, 0, 0), make_timestamptz(2021, 6, 1, 12, 0, 0, 'Asia/Kolkata')",
    "select make_interval(1, 2, 3, 4, 5, 6, 7.5), make_interval(0, 0, 0, 1), make_date(2021, 2, 30)",
    "select to_timestamp(1622548800.5), to_timestamp(0), to_timestamp('infinity'::float8)",
    "select localtimestamp = now()::timestamp, current_date = now()::date, pg_typeof(localtimestamp)",
    "select timestamptz '2021-06-01 12:00+00' - timestamptz '2021-01-01 00:00+00', date '2021-06-01' - date '2021-01-01', timestamp '2021-06-01 12:00' - interval '1 month'",
]


@pytest.mark.parametrize("zone", ["Europe/Rome", "America/New_York", "Asia/Kolkata",
                                  "Australia/Lord_Howe", "+05:30", "UTC+3"])
def test_functions_and_arithmetic_in_each_zone(conns, zone):
    set_zone(conns, zone)
    for sql in FUNCTION_STATEMENTS:
        same(conns, sql)


FIELDS = ["microseconds", "milliseconds", "second", "minute", "hour", "day", "week",
          "month", "quarter", "year", "decade", "century", "millennium", "dow", "isodow",
          "doy", "isoyear", "epoch", "timezone", "timezone_hour", "timezone_minute"]
TRUNC_UNITS = ["microseconds", "milliseconds", "second", "minute", "hour", "day", "week",
               "month", "quarter", "year", "decade", "century", "millennium"]
INTERVALS = st.builds(
    lambda y, mo, d, h, mi, s: f"{y} years {mo} mons {d} days {h} hours {mi} mins {s} secs",
    st.integers(-3, 3), st.integers(-13, 13), st.integers(-40, 40), st.integers(-30, 30),
    st.integers(-70, 70), st.integers(-70, 70))


@settings(**SETTINGS)
@given(zone=st.sampled_from(ZONES),
       when=st.datetimes(min_value=dt.datetime(1890, 1, 1), max_value=dt.datetime(2060, 12, 31)),
       interval=INTERVALS, field=st.sampled_from(FIELDS), unit=st.sampled_from(TRUNC_UNITS))
def test_random_arithmetic_fields_and_truncation(conns, zone, when, interval, field, unit):
    """timestamptz/timestamp/date ± interval (DST-aware for timestamptz), EXTRACT,
    date_part, date_trunc, AT TIME ZONE and age on random values, in a random zone."""
    set_zone(conns, zone)
    ts = when.isoformat(sep=" ")
    same(conns, f"SELECT '{ts}'::timestamptz + '{interval}'::interval, "
                f"'{ts}'::timestamptz - '{interval}'::interval, "
                f"'{ts}'::timestamp + '{interval}'::interval, "
                f"'{ts}'::date - '{interval}'::interval, "
                f"'{interval}'::interval * 1.5, '{interval}'::interval + interval '1 day 1 hour', "
                f"justify_interval('{interval}'::interval), '{interval}'::interval > interval '1 mon'")
    same(conns, f"SELECT extract({field} from '{ts}'::timestamptz), "
                f"date_part('{field}', '{ts}'::timestamptz), "
                f"date_trunc('{unit}', '{ts}'::timestamptz), date_trunc('{unit}', '{ts}'::timestamp)")
    same(conns, f"SELECT '{ts}'::timestamptz AT TIME ZONE 'America/New_York', "
                f"'{ts}'::timestamp AT TIME ZONE 'Australia/Lord_Howe', "
                f"age('{ts}'::timestamptz, timestamptz '2000-02-29 12:00+00'), "
                f"age(timestamp '2000-02-29 12:00', '{ts}'::timestamp)")


SERIES_STATEMENTS = [
    "select * from generate_series(timestamptz '2021-03-27 12:00+00', timestamptz '2021-04-02 00:00+00', interval '1 day')",
    "select * from generate_series(timestamp '2021-01-31', timestamp '2021-06-30', interval '1 month')",
    "select g, g + interval '1 hour' from generate_series(timestamptz '2021-10-31 00:00+00', timestamptz '2021-10-31 04:00+00', interval '30 minutes') g",
    "select count(*) from generate_series(timestamptz '2021-01-01', timestamptz '2021-12-31', interval '1 week')",
    "select * from generate_series(timestamp '2021-06-10', timestamp '2021-06-01', interval '-2 days')",
    "select * from generate_series(date '2021-06-01', date '2021-06-03', interval '1 day')",
    "select * from generate_series(timestamp '2021-06-01', timestamp '2021-06-03', interval '0 days')",
    "select * from generate_series('2021-06-01'::timestamptz, '2021-06-02'::timestamptz, '6 hours')",
    "select * from generate_series(1, 5, 2)",
]


@pytest.mark.parametrize("zone", ["Europe/Rome", "America/New_York", "Australia/Lord_Howe",
                                  "UTC+3"])
def test_generate_series_over_timestamps(conns, zone):
    """Each value the one before plus the step: across DST changes a day stays a calendar
    day in the session's zone, a month after Jan 31 is Feb 28, then Mar 28."""
    set_zone(conns, zone)
    for sql in SERIES_STATEMENTS:
        same(conns, sql)
