"""Enum types (CREATE TYPE … AS ENUM, ALTER TYPE … ADD VALUE, DROP TYPE), differential
against PostgreSQL 15.

The same types and tables are built on both servers; values added BEFORE and AFTER
others give sort orders between the declared ones, so every comparison, sort, grouping,
index and primary-key read below depends on declaration order, not on the labels'
spelling. Each statement gives the same rows (text and binary format: an enum's binary
form is its label's bytes; arrays are compared as text, since a binary array names its
element type's OID, which differs between the servers) or the same SQLSTATE and message: input checks (22P02),
casts to and from text, comparisons with unknown literals, of two enum types and with
text (42883), enum arrays, enum_first/enum_last/enum_range, the catalog rows psql,
format_type, information_schema and drivers read, and the DDL errors.

RENAME VALUE and RENAME TO keep the rows and change what they read as. Then what
PostgreSQL does not show by comparison: ROLLBACK of CREATE TYPE, ADD VALUE, RENAME VALUE
and DROP TYPE leaves the catalog as it was; types, labels and rows survive a kill -9; a type
created on one coordinator of a cluster is usable on the other.
"""

import psycopg
import pytest

from differential import conns, copy_in, copy_out, run, same  # noqa: F401 (conns is a fixture)

DROP = [
    "DROP TABLE IF EXISTS en_t",
    "DROP TABLE IF EXISTS en_pk",
    "DROP TYPE IF EXISTS en_mood",
    "DROP TYPE IF EXISTS en_color",
]

SETUP = DROP + [
    "CREATE TYPE en_mood AS ENUM ('sad', 'ok', 'happy')",
    "CREATE TYPE en_color AS ENUM ('red', 'green')",
    # sort orders 0 (blah), 1 (sad), 1.5 (meh), 2 (ok), 3 (happy), 4 (ecstatic)
    "ALTER TYPE en_mood ADD VALUE 'meh' BEFORE 'ok'",
    "ALTER TYPE en_mood ADD VALUE 'ecstatic' AFTER 'happy'",
    "ALTER TYPE en_mood ADD VALUE IF NOT EXISTS 'blah' BEFORE 'sad'",
    "ALTER TYPE en_mood ADD VALUE IF NOT EXISTS 'ok'",
    "CREATE TABLE en_t (id int PRIMARY KEY, m en_mood, c en_color, ms en_mood[])",
    "CREATE INDEX en_t_m ON en_t (m)",
    "CREATE TABLE en_pk (m en_mood PRIMARY KEY, n int)",
    "INSERT INTO en_t VALUES (1, 'happy', 'red', '{ok,sad}'), (2, 'sad', 'green', NULL),"
    " (3, 'ok', NULL, '{}'), (4, NULL, 'red', '{happy,NULL}'), (5, 'meh', 'green', '{meh}'),"
    " (6, 'blah', 'red', '{ecstatic,blah}'), (7, 'ecstatic', NULL, NULL), (8, 'ok', 'red', NULL)",
    "INSERT INTO en_pk VALUES ('happy', 3), ('blah', 0), ('ok', 2), ('meh', 1), ('ecstatic', 4)",
    "UPDATE en_t SET c = 'green' WHERE m = 'ok' AND id = 8",
]

QUERIES = [
    "SELECT id, m FROM en_t ORDER BY m, id",
    "SELECT id, m FROM en_t ORDER BY m DESC NULLS LAST, id",
    "SELECT id FROM en_t WHERE m = 'happy'",
    "SELECT id FROM en_t WHERE m < 'ok' ORDER BY id",
    "SELECT id FROM en_t WHERE m >= 'meh' ORDER BY m, id",
    "SELECT id FROM en_t WHERE m > 'sad' AND m <= 'happy' ORDER BY id",
    "SELECT id FROM en_t WHERE m <> 'ok' ORDER BY id",
    "SELECT id FROM en_t WHERE m IN ('sad', 'ecstatic') ORDER BY id",
    "SELECT id FROM en_t WHERE m BETWEEN 'meh' AND 'happy' ORDER BY id",
    "SELECT id FROM en_t WHERE m = ANY ('{sad,ok}') ORDER BY id",
    "SELECT min(m), max(m), count(DISTINCT m), count(m) FROM en_t",
    "SELECT m, count(*) FROM en_t GROUP BY m ORDER BY m",
    "SELECT DISTINCT m FROM en_t ORDER BY m DESC",
    "SELECT c, min(m), max(m) FROM en_t GROUP BY c ORDER BY c",
    "SELECT array_agg(m ORDER BY m)::text FROM en_t",
    "SELECT id, max(m) OVER (ORDER BY id) FROM en_t ORDER BY id",
    "SELECT a.id, b.n FROM en_t a JOIN en_pk b ON a.m = b.m ORDER BY a.id",
    "SELECT id, COALESCE(m, 'happy'), CASE WHEN id < 3 THEN m ELSE 'sad' END FROM en_t"
    " ORDER BY id",
    "SELECT id, m::text, m || '!', length(m::text) FROM en_t ORDER BY id",
    # the primary key: point reads and ranges over an enum key
    "SELECT * FROM en_pk WHERE m = 'ok'",
    "SELECT * FROM en_pk WHERE m > 'meh' ORDER BY m",
    "SELECT * FROM en_pk ORDER BY m DESC",
    "SELECT * FROM en_pk WHERE m IN ('blah', 'happy', 'sad') ORDER BY n",
    # casts and literals
    "SELECT 'ok'::en_mood, CAST('sad' AS en_mood), 'ok'::text::en_mood, 'ok'::varchar::en_mood",
    "SELECT 'ok'::en_mood < 'happy'::en_mood, 'ok'::en_mood = 'ok', 'blah' < 'sad'::en_mood",
    "SELECT 'x'::en_mood",
    "SELECT ''::en_mood",
    "SELECT 'Ok'::en_mood",
    "SELECT id FROM en_t WHERE m = 'nope'",
    "SELECT id FROM en_t WHERE m = c",
    "SELECT id FROM en_t WHERE m = 'ok'::text",
    "SELECT 'red'::en_color = 'ok'::en_mood",
    "SELECT 'ok'::en_mood::en_color",
    "SELECT 'ok'::en_mood + 1",
    # arrays
    "SELECT id, ms::text, ms[1], cardinality(ms) FROM en_t ORDER BY id",
    "SELECT id FROM en_t WHERE 'ok' = ANY (ms) ORDER BY id",
    "SELECT '{sad,happy}'::en_mood[]::text",
    "SELECT '{sad,nope}'::en_mood[]",
    "SELECT '{ok,blah}'::en_mood[] < '{ok,sad}'::en_mood[]",
    # functions of the type
    "SELECT enum_first(NULL::en_mood), enum_last(NULL::en_mood), enum_range(NULL::en_mood)::text",
    "SELECT enum_range(m)::text FROM en_t WHERE id = 1",
    "SELECT pg_typeof(m)::text, pg_typeof(ms)::text, pg_typeof(c)::text FROM en_t WHERE id = 1",
    # the catalog
    "SELECT typname, typtype, typcategory, typlen, typbyval, typalign, typstorage, typdelim,"
    " typelem <> 0, typarray <> 0, typnamespace::regnamespace::text, typinput::text,"
    " typoutput::text, typreceive::text, typsend::text"
    " FROM pg_type WHERE typname IN ('en_mood', '_en_mood', 'en_color') ORDER BY typname",
    "SELECT enumsortorder, enumlabel FROM pg_enum WHERE enumtypid = 'en_mood'::regtype"
    " ORDER BY enumsortorder",
    "SELECT t.typname, e.enumlabel FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid"
    " WHERE t.typname LIKE 'en\\_%' ORDER BY t.typname, e.enumsortorder",
    "SELECT a.typarray = b.oid, b.typelem = a.oid FROM pg_type a, pg_type b"
    " WHERE a.typname = 'en_mood' AND b.typname = '_en_mood'",
    "SELECT 'en_mood'::regtype::text, '_en_mood'::regtype::text, 'en_mood[]'::regtype::text",
    "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute"
    " WHERE attrelid = 'en_t'::regclass AND attnum > 0 ORDER BY attnum",
    "SELECT column_name, data_type, udt_schema, udt_name FROM information_schema.columns"
    " WHERE table_name = 'en_t' ORDER BY ordinal_position",
    # errors of writes and DDL (statements that fail leave both servers as they were)
    "INSERT INTO en_t VALUES (100, 'nope')",
    "UPDATE en_t SET m = 'nope' WHERE id = 1",
    "INSERT INTO en_pk VALUES ('ok', 9)",
    "CREATE TYPE en_mood AS ENUM ('a')",
    "CREATE TYPE en_t AS ENUM ('a')",
    "CREATE TYPE en_dup AS ENUM ('a', 'a')",
    "CREATE TYPE en_long AS ENUM ('" + "x" * 64 + "')",
    "DROP TYPE en_mood",
    "DROP TYPE en_color RESTRICT",
    "DROP TYPE en_nope",
    "DROP TYPE en_nope, en_mood",
    "ALTER TYPE en_mood ADD VALUE 'ok'",
    "ALTER TYPE en_mood ADD VALUE 'zz' BEFORE 'nope'",
    "ALTER TYPE en_mood ADD VALUE 'zz' AFTER 'nope'",
    "ALTER TYPE en_nope ADD VALUE 'x'",
]


# Compared by SQLSTATE: Meridian's 42804 does not name the column yet ("column is of
# type …", PostgreSQL: "column "m" is of type …"), for every type alike.
MISMATCHES = [
    "INSERT INTO en_t (id, m) VALUES (101, 'ok'::text)",
    "INSERT INTO en_t (id, c) SELECT 102, m FROM en_t WHERE id = 1",
    "UPDATE en_t SET m = c WHERE id = 1",
]


@pytest.fixture(scope="module")
def enum_tables(conns):
    for conn in conns:
        for sql in SETUP:
            conn.execute(sql)
    yield conns
    # the reference PostgreSQL is shared with other test modules
    for conn in conns:
        for sql in DROP:
            conn.execute(sql)


@pytest.mark.parametrize("sql", QUERIES)
def test_enum_statement_as_postgres(enum_tables, sql):
    same(enum_tables, sql)


@pytest.mark.parametrize("sql", MISMATCHES)
def test_enum_type_mismatch_as_postgres(enum_tables, sql):
    assert same(enum_tables, sql, message=False)[:2] == ("error", "42804")


def test_enum_parameters_as_postgres(enum_tables):
    """A parameter compared with an enum column takes the column's type."""
    same(enum_tables, "SELECT id FROM en_t WHERE m = %s ORDER BY id", ("ok",))
    same(enum_tables, "SELECT id FROM en_t WHERE m > %s ORDER BY id", ("meh",))
    same(enum_tables, "SELECT id FROM en_t WHERE m = %s", ("nope",))


def test_enum_writes_as_postgres(enum_tables):
    """Rows written through enum columns, a drop and an added value read back as in
    PostgreSQL, and DROP TYPE works once nothing uses the type."""
    writes = [
        "CREATE TABLE en_w (id int PRIMARY KEY, m en_mood)",
        "INSERT INTO en_w SELECT id, m FROM en_t WHERE m IS NOT NULL",
        "UPDATE en_w SET m = 'ecstatic' WHERE m < 'ok'",
        "DELETE FROM en_w WHERE m = 'happy'",
        "ALTER TYPE en_color ADD VALUE 'blue' BEFORE 'red'",
        "INSERT INTO en_w VALUES (20, 'blah')",
    ]
    try:
        for sql in writes:
            for conn in enum_tables:
                conn.execute(sql)
        same(enum_tables, "SELECT * FROM en_w ORDER BY m, id")
        same(enum_tables, "SELECT enum_range(NULL::en_color)::text, 'blue' < 'red'::en_color")
        same(enum_tables, "SELECT 'blue'::en_color, max(c) FROM en_t")
    finally:
        for conn in enum_tables:
            conn.execute("DROP TABLE IF EXISTS en_w")
    for conn in enum_tables:
        conn.execute("CREATE TYPE en_unused AS ENUM ('x')")
    same(enum_tables, "SELECT count(*) FROM pg_type WHERE typname IN ('en_unused', '_en_unused')")
    for conn in enum_tables:
        conn.execute("DROP TYPE en_unused")
    same(enum_tables, "SELECT count(*) FROM pg_type WHERE typname IN ('en_unused', '_en_unused')")


def test_renames_as_postgres(enum_tables):
    """RENAME VALUE changes what stored values read as, RENAME TO the type's name; rows,
    order, index and key reads stay."""
    setup = [
        "CREATE TYPE en_rn AS ENUM ('low', 'mid', 'high')",
        "CREATE TABLE en_r (m en_rn PRIMARY KEY, ms en_rn[])",
        "CREATE INDEX en_r_ms ON en_r (ms)",
        "INSERT INTO en_r VALUES ('mid', '{mid,low}'), ('high', NULL), ('low', '{mid}')",
        "ALTER TYPE en_rn RENAME VALUE 'mid' TO 'medium'",
        "ALTER TYPE en_rn RENAME TO en_level",
    ]
    try:
        for sql in setup:
            for conn in enum_tables:
                conn.execute(sql)
        for sql in [
            "SELECT m, ms::text FROM en_r ORDER BY m",
            "SELECT m FROM en_r WHERE m = 'medium'",
            "SELECT m FROM en_r WHERE m = 'mid'",
            "SELECT m FROM en_r WHERE m > 'low' ORDER BY m DESC",
            "SELECT m::text, m || '!' FROM en_r WHERE 'medium' = ANY (ms) ORDER BY 1",
            "SELECT DISTINCT m FROM en_r ORDER BY m",
            "SELECT enum_range(NULL::en_level)::text, 'medium'::en_level",
            "SELECT 'low'::en_rn",
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'en_r'::regclass AND attnum > 0 ORDER BY attnum",
            "ALTER TYPE en_level RENAME VALUE 'nope' TO 'x'",
            "ALTER TYPE en_level RENAME VALUE 'low' TO 'high'",
            "ALTER TYPE en_level RENAME TO en_mood",
            "ALTER TYPE en_nope RENAME TO en_x",
        ]:
            same(enum_tables, sql)
    finally:
        for conn in enum_tables:
            conn.execute("DROP TABLE IF EXISTS en_r")
            conn.execute("DROP TYPE IF EXISTS en_level")
            conn.execute("DROP TYPE IF EXISTS en_rn")


def test_copy_of_enum_columns_as_postgres(enum_tables):
    """COPY out in text, CSV and binary (an enum field is its label's bytes) as
    PostgreSQL writes it; PostgreSQL's binary COPY loads into Meridian, and a label the
    type lacks is 22P02."""
    ours, ref = enum_tables
    for fmt in ("text", "csv", "binary"):
        sql = f"COPY (SELECT id, m, c FROM en_t ORDER BY id) TO STDOUT (FORMAT {fmt})"
        assert copy_out(ours, sql) == copy_out(ref, sql), fmt
    binary = copy_out(ref, "COPY (SELECT id, m FROM en_t ORDER BY id) TO STDOUT (FORMAT binary)")
    try:
        for conn in enum_tables:
            conn.execute("CREATE TABLE en_c (id int PRIMARY KEY, m en_mood)")
            copy_in(conn, "COPY en_c FROM STDIN (FORMAT binary)", binary)
        same(enum_tables, "SELECT * FROM en_c ORDER BY m, id")
        for conn in enum_tables:
            with pytest.raises(psycopg.errors.InvalidTextRepresentation):
                copy_in(conn, "COPY en_c FROM STDIN", b"100\tnope\n")
    finally:
        for conn in enum_tables:
            conn.execute("DROP TABLE IF EXISTS en_c")


def test_psql_describes_enum_types_as_postgres(enum_tables, target, postgres):
    """psql's \\dT, \\dT+ and \\d read pg_type, pg_enum and format_type."""
    import subprocess

    from conftest import pg_tool

    def describe(server, command):
        out = subprocess.run(
            [pg_tool("psql"), "-X", "-d", server.dsn, "-c", command],
            capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout

    for command in ("\\dT en_*", "\\dT+ en_mood", "\\d en_t"):
        assert describe(target, command) == describe(postgres, command), command


def catalog_of(conn):
    return conn.execute(
        "SELECT t.typname, e.enumlabel, e.enumsortorder FROM pg_type t"
        " LEFT JOIN pg_enum e ON e.enumtypid = t.oid WHERE t.typname LIKE 'rb\\_%'"
        " ORDER BY 1, 3").fetchall()


def test_rollback_undoes_enum_ddl(target):
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS rb_t")
        conn.execute("DROP TYPE IF EXISTS rb_kept")
        conn.execute("DROP TYPE IF EXISTS rb_gone")
        conn.execute("CREATE TYPE rb_kept AS ENUM ('a', 'b')")
        before = catalog_of(conn)
        with conn.transaction(force_rollback=True):
            conn.execute("CREATE TYPE rb_gone AS ENUM ('x', 'y')")
            conn.execute("CREATE TABLE rb_t (v rb_gone)")
            conn.execute("INSERT INTO rb_t VALUES ('y')")
            conn.execute("ALTER TYPE rb_kept ADD VALUE 'c' BEFORE 'a'")
            assert conn.execute("SELECT enum_first(NULL::rb_kept)").fetchone()[0] == "c"
        assert catalog_of(conn) == before
        assert run(conn, "SELECT 'x'::rb_gone")[:2] == ("error", "42704")
        assert run(conn, "SELECT 'c'::rb_kept")[:2] == ("error", "22P02")
        with conn.transaction(force_rollback=True):
            conn.execute("ALTER TYPE rb_kept RENAME VALUE 'a' TO 'aa'")
            conn.execute("ALTER TYPE rb_kept RENAME TO rb_renamed")
            conn.execute("DROP TYPE rb_renamed")
        assert catalog_of(conn) == before
        # the name was never taken
        conn.execute("CREATE TYPE rb_gone AS ENUM ('z')")
        assert conn.execute("SELECT enum_range(NULL::rb_gone)::text").fetchone()[0] == "{z}"
        conn.execute("DROP TYPE rb_gone")
        conn.execute("DROP TYPE rb_kept")


def test_enum_types_survive_kill9(meridian):
    with psycopg.connect(meridian.dsn, autocommit=True) as conn:
        conn.execute("CREATE TYPE k_mood AS ENUM ('sad', 'ok', 'happy')")
        conn.execute("ALTER TYPE k_mood ADD VALUE 'meh' AFTER 'sad'")
        conn.execute("CREATE TABLE k_t (m k_mood PRIMARY KEY, ms k_mood[])")
        conn.execute("INSERT INTO k_t VALUES ('happy', '{ok}'), ('meh', NULL), ('sad', '{}')")
        query = "SELECT m, ms, m > 'ok' FROM k_t ORDER BY m"
        rows = conn.execute(query).fetchall()
        labels = conn.execute("SELECT enumlabel, enumsortorder FROM pg_enum"
                              " ORDER BY enumsortorder").fetchall()
    assert [r[0] for r in rows] == ["sad", "meh", "happy"]
    meridian.kill9()
    meridian.restart()
    with psycopg.connect(meridian.dsn, autocommit=True) as conn:
        assert conn.execute(query).fetchall() == rows
        assert conn.execute("SELECT enumlabel, enumsortorder FROM pg_enum"
                            " ORDER BY enumsortorder").fetchall() == labels
        assert run(conn, "INSERT INTO k_t VALUES ('nope')")[:2] == ("error", "22P02")
        conn.execute("INSERT INTO k_t VALUES ('ok')")
        assert conn.execute("SELECT m FROM k_t WHERE m < 'happy' ORDER BY m DESC"
                            ).fetchall() == [("ok",), ("meh",), ("sad",)]


def test_type_created_on_one_coordinator_is_usable_on_another(target):
    """In a cluster, the second coordinator reads the type from the shared catalog (the
    embedded server: another session)."""
    second = getattr(target, "second", target)
    with psycopg.connect(target.dsn, autocommit=True) as a, \
            psycopg.connect(second.dsn, autocommit=True) as b:
        a.execute("DROP TABLE IF EXISTS co_t")
        a.execute("DROP TYPE IF EXISTS co_mood")
        a.execute("CREATE TYPE co_mood AS ENUM ('low', 'high')")
        b.execute("CREATE TABLE co_t (id int PRIMARY KEY, m co_mood)")
        a.execute("ALTER TYPE co_mood ADD VALUE 'mid' BEFORE 'high'")
        b.execute("INSERT INTO co_t VALUES (1, 'high'), (2, 'mid'), (3, 'low')")
        assert a.execute("SELECT id FROM co_t ORDER BY m").fetchall() == [(3,), (2,), (1,)]
        assert run(b, "DROP TYPE co_mood")[:2] == ("error", "2BP01")
        b.execute("DROP TABLE co_t")
        a.execute("DROP TYPE co_mood")
        assert run(b, "SELECT 'low'::co_mood")[:2] == ("error", "42704")


def test_drop_type_cascade_over_columns_is_refused(target):
    """CASCADE would drop the columns that use the type; Meridian refuses it (0A000) and
    keeps everything, RESTRICT and a plain DROP are 2BP01 as in PostgreSQL."""
    if target.kind == "postgres":
        pytest.skip("PostgreSQL drops the dependent columns")
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS cc_t")
        conn.execute("DROP TYPE IF EXISTS cc_mood")
        conn.execute("CREATE TYPE cc_mood AS ENUM ('a')")
        conn.execute("CREATE TABLE cc_t (m cc_mood)")
        assert run(conn, "DROP TYPE cc_mood CASCADE")[:2] == ("error", "0A000")
        assert run(conn, "DROP TYPE cc_mood RESTRICT")[:2] == ("error", "2BP01")
        conn.execute("INSERT INTO cc_t VALUES ('a')")
        conn.execute("DROP TABLE cc_t")
        conn.execute("DROP TYPE cc_mood CASCADE")
