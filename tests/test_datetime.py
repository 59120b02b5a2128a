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
