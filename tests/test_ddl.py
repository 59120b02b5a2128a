"""DDL in transactions and ALTER TABLE (issue 31, item 5): CREATE/DROP TABLE, TRUNCATE,
CREATE/DROP INDEX and SEQUENCE and ALTER TABLE undone by ROLLBACK, ROLLBACK TO SAVEPOINT
and an error that aborts the block (decision 0038); ADD/DROP/RENAME COLUMN, RENAME TO,
ALTER COLUMN SET/DROP DEFAULT, SET/DROP NOT NULL and TYPE, ADD/DROP CONSTRAINT, several
actions in one statement.

Every statement runs on the server under test and on a real PostgreSQL 15 in the same
test: the same rows, the same SQLSTATEs and messages, and psql's ``\\d`` of each table the
same after the changes. Tables hold rows (NULLs among them), defaults and indexes when
they are altered, so the rewrites of existing rows and the indexes' upkeep afterwards are
compared too. On the ``meridian-cluster`` target the rows are spread over three
datanodes.
"""

from __future__ import annotations

import time

import psycopg
import pytest

from test_indexes import pair, reset, same  # noqa: F401 (pair is a fixture)
from test_psql_compat import psql


def run_script(pair, statements):
    for sql in statements:
        same(pair, sql)


def same_description(postgres, target, *tables):
    for t in tables:
        expected = psql(postgres, rf"\d {t}")
        assert expected.startswith("exit=0"), expected
        got = psql(target, rf"\d {t}")
        assert got == expected, f"{t}:\n{got}\nPostgreSQL:\n{expected}"


def test_add_column_as_postgres(pair, postgres, target):
    reset(pair, "dd_add")
    run_script(pair, [
        "CREATE TABLE dd_add (id int PRIMARY KEY, v text)",
        "INSERT INTO dd_add VALUES (1, 'a'), (2, NULL), (3, 'c')",
        "ALTER TABLE dd_add ADD COLUMN n int",
        "SELECT * FROM dd_add ORDER BY id",
        # existing rows take a constant default; later rows too
        "ALTER TABLE dd_add ADD COLUMN d int DEFAULT 7",
        "ALTER TABLE dd_add ADD d2 int NOT NULL DEFAULT 2 + 3",
        "SELECT * FROM dd_add ORDER BY id",
        "INSERT INTO dd_add (id, v) VALUES (4, 'd')",
        "INSERT INTO dd_add VALUES (5, 'e', 1, 2, 8)",
        "SELECT * FROM dd_add ORDER BY id",
        "SELECT id FROM dd_add WHERE d = 7 ORDER BY id",
        # a volatile default is evaluated for each existing row
        "ALTER TABLE dd_add ADD COLUMN r float8 DEFAULT random()",
        "SELECT count(DISTINCT r), count(*) FILTER (WHERE r >= 0 AND r < 1) FROM dd_add",
        "ALTER TABLE dd_add DROP COLUMN r",
        # 42701, IF NOT EXISTS
        "ALTER TABLE dd_add ADD COLUMN d int",
        "ALTER TABLE dd_add ADD COLUMN IF NOT EXISTS d int",
        "ALTER TABLE dd_add ADD COLUMN v int",
        # NOT NULL without a default over existing rows: 23502, nothing added
        "ALTER TABLE dd_add ADD COLUMN nn int NOT NULL",
        "SELECT * FROM dd_add ORDER BY id",
        # a default that does not fit the type
        "ALTER TABLE dd_add ADD COLUMN bad int DEFAULT 'abc'",
        "ALTER TABLE dd_add ADD COLUMN bad2 varchar(1) DEFAULT 'xx'",
        "ALTER TABLE dd_nope ADD COLUMN z int",
        # a UNIQUE column added with the column, and one whose rows collide
        "ALTER TABLE dd_add ADD COLUMN u int UNIQUE",
        "INSERT INTO dd_add (id, u) VALUES (6, 1)",
        "INSERT INTO dd_add (id, u) VALUES (7, 1)",
        "SELECT id, u FROM dd_add WHERE u = 1",
        "ALTER TABLE dd_add ADD COLUMN dup int DEFAULT 5 UNIQUE",
        "SELECT * FROM dd_add ORDER BY id",
    ])
    same_description(postgres, target, "dd_add")


def test_drop_column_as_postgres(pair, postgres, target):
    reset(pair, "dd_drop")
    run_script(pair, [
        "CREATE TABLE dd_drop (id int PRIMARY KEY, a int, b text, c int UNIQUE, k int)",
        "INSERT INTO dd_drop SELECT i, i * 10, 'b' || i, i, i % 3 FROM generate_series(1, 50) i",
        "UPDATE dd_drop SET b = NULL WHERE id % 7 = 0",
        "CREATE INDEX dd_drop_k ON dd_drop (k)",
        "CREATE INDEX dd_drop_ab ON dd_drop (a, b)",
        # the indexes that cover the column go with it; the others follow their columns
        "ALTER TABLE dd_drop DROP COLUMN a",
        "SELECT * FROM dd_drop WHERE id < 5 ORDER BY id",
        "SELECT id, b FROM dd_drop WHERE k = 2 ORDER BY id",
        "SELECT id FROM dd_drop WHERE c = 17",
        "INSERT INTO dd_drop VALUES (51, 'new', 51, 2)",
        "INSERT INTO dd_drop VALUES (52, 'dup', 51, 2)",
        "SELECT * FROM dd_drop WHERE k = 2 AND id > 45 ORDER BY id",
        "ALTER TABLE dd_drop DROP COLUMN a",
        "ALTER TABLE dd_drop DROP COLUMN IF EXISTS a",
        "ALTER TABLE dd_drop DROP COLUMN c",
        "INSERT INTO dd_drop VALUES (53, 'again', 2)",
        "SELECT count(*), count(b), sum(k) FROM dd_drop",
        "SELECT * FROM dd_drop WHERE id > 48 ORDER BY id",
    ])
    same_description(postgres, target, "dd_drop")


def test_rename_as_postgres(pair, postgres, target):
    reset(pair, "dd_ren", "dd_ren2", "dd_other")
    run_script(pair, [
        "CREATE TABLE dd_ren (id int PRIMARY KEY, v text, w int DEFAULT 3)",
        "CREATE TABLE dd_other (x int)",
        "INSERT INTO dd_ren VALUES (1, 'a'), (2, NULL)",
        "CREATE INDEX dd_ren_v ON dd_ren (v)",
        "ALTER TABLE dd_ren RENAME COLUMN v TO value",
        "ALTER TABLE dd_ren RENAME w TO weight",
        "SELECT id, value, weight FROM dd_ren WHERE value = 'a'",
        "SELECT v FROM dd_ren",
        "ALTER TABLE dd_ren RENAME COLUMN nope TO x",
        "ALTER TABLE dd_ren RENAME COLUMN value TO weight",
        "ALTER TABLE dd_ren RENAME TO dd_other",
        "ALTER TABLE dd_ren RENAME TO dd_ren2",
        "SELECT * FROM dd_ren",
        "INSERT INTO dd_ren2 (id, value) VALUES (3, 'c')",
        "SELECT * FROM dd_ren2 ORDER BY id",
        "CREATE TABLE dd_ren (again int)",
        "INSERT INTO dd_ren VALUES (9)",
        "SELECT * FROM dd_ren",
    ])
    same_description(postgres, target, "dd_ren2", "dd_ren")


def test_defaults_and_not_null_as_postgres(pair, postgres, target):
    reset(pair, "dd_nn")
    run_script(pair, [
        "CREATE TABLE dd_nn (id int PRIMARY KEY, v int, t text DEFAULT 'old')",
        "INSERT INTO dd_nn (id, v) VALUES (1, 10), (2, NULL)",
        "ALTER TABLE dd_nn ALTER COLUMN v SET DEFAULT 42",
        "ALTER TABLE dd_nn ALTER COLUMN t DROP DEFAULT",
        "INSERT INTO dd_nn (id) VALUES (3)",
        "SELECT * FROM dd_nn ORDER BY id",
        "ALTER TABLE dd_nn ALTER COLUMN v SET DEFAULT 'abc'",
        "ALTER TABLE dd_nn ALTER COLUMN nope SET DEFAULT 1",
        # SET NOT NULL checks the rows there are
        "ALTER TABLE dd_nn ALTER COLUMN v SET NOT NULL",
        "UPDATE dd_nn SET v = 0 WHERE v IS NULL",
        "ALTER TABLE dd_nn ALTER COLUMN v SET NOT NULL",
        "INSERT INTO dd_nn (id, v) VALUES (4, NULL)",
        "ALTER TABLE dd_nn ALTER COLUMN v DROP NOT NULL",
        "INSERT INTO dd_nn (id, v) VALUES (4, NULL)",
        "ALTER TABLE dd_nn ALTER COLUMN id DROP NOT NULL",
        "SELECT * FROM dd_nn ORDER BY id",
    ])
    same_description(postgres, target, "dd_nn")


def test_alter_column_type_as_postgres(pair, postgres, target):
    reset(pair, "dd_ty")
    run_script(pair, [
        "CREATE TABLE dd_ty (id int PRIMARY KEY, n int, s varchar(10), m numeric(8,3), k int)",
        "INSERT INTO dd_ty SELECT i, i * 1000, 's' || i, i + 0.5, i % 4 FROM generate_series(1, 40) i",
        "UPDATE dd_ty SET n = NULL, s = NULL WHERE id % 9 = 0",
        "CREATE INDEX dd_ty_k ON dd_ty (k)",
        "ALTER TABLE dd_ty ALTER COLUMN n TYPE bigint",
        "ALTER TABLE dd_ty ALTER COLUMN k SET DATA TYPE text",
        "SELECT id, n, k FROM dd_ty WHERE k = '3' ORDER BY id",
        "SELECT pg_typeof(n), pg_typeof(k) FROM dd_ty LIMIT 1",
        "ALTER TABLE dd_ty ALTER COLUMN m TYPE int",
        "SELECT id, m FROM dd_ty WHERE id < 4 ORDER BY id",
        # no assignment cast: 42804; a value too long: 22001; nothing changed by either
        "ALTER TABLE dd_ty ALTER COLUMN s TYPE int",
        "ALTER TABLE dd_ty ALTER COLUMN s TYPE varchar(2)",
        "SELECT * FROM dd_ty WHERE id < 4 ORDER BY id",
        "ALTER TABLE dd_ty ALTER COLUMN s TYPE text",
        "ALTER TABLE dd_ty ALTER COLUMN nope TYPE text",
        "INSERT INTO dd_ty VALUES (41, 9999999999, 'long text now', 7, 'x')",
        "SELECT * FROM dd_ty WHERE id > 38 ORDER BY id",
    ])
    same_description(postgres, target, "dd_ty")


def test_constraints_as_postgres(pair, postgres, target):
    reset(pair, "dd_con", "dd_pk")
    run_script(pair, [
        "CREATE TABLE dd_con (id int PRIMARY KEY, a int, b int)",
        "INSERT INTO dd_con SELECT i, i, i % 5 FROM generate_series(1, 20) i",
        "ALTER TABLE dd_con ADD UNIQUE (a)",
        "ALTER TABLE dd_con ADD CONSTRAINT dd_con_b_unique UNIQUE (b)",
        "ALTER TABLE dd_con ADD CONSTRAINT dd_con_ab UNIQUE (a, b)",
        "ALTER TABLE dd_con ADD CONSTRAINT dd_con_ab UNIQUE (a, b)",
        "INSERT INTO dd_con VALUES (21, 1, 0)",
        "ALTER TABLE dd_con ADD UNIQUE (nope)",
        "ALTER TABLE dd_con DROP CONSTRAINT dd_con_ab",
        "ALTER TABLE dd_con DROP CONSTRAINT dd_con_ab",
        "ALTER TABLE dd_con DROP CONSTRAINT IF EXISTS dd_con_ab",
        "ALTER TABLE dd_con ADD PRIMARY KEY (a)",
        "SELECT * FROM dd_con WHERE a = 7",
        "CREATE TABLE dd_pk (id int NOT NULL, v text)",
        "INSERT INTO dd_pk VALUES (2, 'b'), (1, 'a')",
        "ALTER TABLE dd_pk ADD PRIMARY KEY (id)",
        "INSERT INTO dd_pk VALUES (1, 'again')",
        "SELECT * FROM dd_pk ORDER BY id",
    ])
    same_description(postgres, target, "dd_con", "dd_pk")


def test_several_actions_in_one_statement(pair, postgres, target):
    reset(pair, "dd_many")
    run_script(pair, [
        "CREATE TABLE dd_many (id int PRIMARY KEY, a int, b text, c int)",
        "INSERT INTO dd_many VALUES (1, 1, 'x', 10), (2, NULL, NULL, 20)",
        "ALTER TABLE dd_many ADD COLUMN d int DEFAULT 4, DROP COLUMN b, "
        "ALTER COLUMN c TYPE bigint, ALTER COLUMN a SET DEFAULT 0",
        "SELECT * FROM dd_many ORDER BY id",
        "INSERT INTO dd_many (id) VALUES (3)",
        "SELECT * FROM dd_many ORDER BY id",
        # one failing action: none of them applies
        "ALTER TABLE dd_many ADD COLUMN e int, DROP COLUMN nope",
        "ALTER TABLE dd_many ADD COLUMN e int, ALTER COLUMN a SET NOT NULL",
        "SELECT * FROM dd_many ORDER BY id",
    ])
    same_description(postgres, target, "dd_many")


def test_serial_column_dropped_with_its_sequence(pair, postgres, target):
    reset(pair, "dd_ser")
    run_script(pair, [
        "CREATE TABLE dd_ser (k int PRIMARY KEY, n serial, x int, m serial)",
        "INSERT INTO dd_ser (k, x) VALUES (1, 1), (2, 2)",
        "ALTER TABLE dd_ser DROP COLUMN n",
        "SELECT nextval('dd_ser_n_seq')",
        "INSERT INTO dd_ser (k, x) VALUES (3, 3)",
        "SELECT * FROM dd_ser ORDER BY k",
        "SELECT pg_get_serial_sequence('dd_ser', 'm')",
    ])
    same_description(postgres, target, "dd_ser", "dd_ser_m_seq")


def test_prepared_statement_follows_the_change(pair):
    """A statement prepared (extended protocol) before ALTER TABLE runs against the new
    columns afterwards, as PostgreSQL plans it again."""
    reset(pair, "dd_prep")
    run_script(pair, [
        "CREATE TABLE dd_prep (id int PRIMARY KEY, v int)",
        "INSERT INTO dd_prep VALUES (1, 10)",
    ])
    query = "SELECT id, v FROM dd_prep WHERE id = %s"
    got = []
    for c in pair:
        before = c.execute(query, (1,), prepare=True).fetchall()
        c.execute("ALTER TABLE dd_prep ADD COLUMN w int DEFAULT 5, DROP COLUMN v")
        c.execute("ALTER TABLE dd_prep RENAME COLUMN w TO v")
        got.append((before, c.execute(query, (1,), prepare=True).fetchall()))
    assert got[1] == got[0] == ([(1, 10)], [(1, 5)])


# --------------------------------------------------------------------------------------
# DDL in transaction blocks
# --------------------------------------------------------------------------------------

def run_blocks(pair, blocks):
    """Runs each block (statements of one transaction, in order, on one connection per
    server, not in autocommit) and compares every statement's outcome; the block's
    last statement ends it."""
    conns = [psycopg.connect(c.info.dsn) for c in pair]
    try:
        for block in blocks:
            for sql in block:
                same(conns, sql)
    finally:
        for c in conns:
            c.close()


def test_ddl_rolled_back_leaves_nothing(pair, postgres, target):
    reset(pair, "dd_tx_new", "dd_tx_keep", "dd_tx_keep2")
    for c in pair:
        c.execute("DROP SEQUENCE IF EXISTS dd_tx_seq")
    run_script(pair, [
        "CREATE TABLE dd_tx_keep (id serial PRIMARY KEY, v text, k int)",
        "INSERT INTO dd_tx_keep (v, k) SELECT 'v' || i, i % 3 FROM generate_series(1, 30) i",
        "CREATE INDEX dd_tx_keep_k ON dd_tx_keep (k)",
    ])
    run_blocks(pair, [
        ["CREATE TABLE dd_tx_new (x int PRIMARY KEY)", "INSERT INTO dd_tx_new VALUES (1)",
         "SELECT * FROM dd_tx_new", "ROLLBACK"],
        ["SELECT * FROM dd_tx_new", "ROLLBACK"],
        ["DROP TABLE dd_tx_keep", "SELECT count(*) FROM dd_tx_keep", "ROLLBACK"],
        ["TRUNCATE dd_tx_keep", "SELECT count(*) FROM dd_tx_keep", "ROLLBACK"],
        ["ALTER TABLE dd_tx_keep ADD COLUMN c int DEFAULT 1, DROP COLUMN v, "
         "ALTER COLUMN k TYPE text",
         "SELECT * FROM dd_tx_keep WHERE id < 3 ORDER BY id", "ROLLBACK"],
        ["ALTER TABLE dd_tx_keep RENAME TO dd_tx_keep2", "SELECT count(*) FROM dd_tx_keep2",
         "ROLLBACK"],
        ["DROP INDEX dd_tx_keep_k", "CREATE INDEX dd_tx_keep_v ON dd_tx_keep (v)",
         "CREATE SEQUENCE dd_tx_seq", "SELECT nextval('dd_tx_seq')", "ROLLBACK"],
        ["SELECT nextval('dd_tx_seq')", "ROLLBACK"],
        ["SELECT * FROM dd_tx_keep WHERE k = 1 AND id < 10 ORDER BY id",
         "SELECT count(*) FROM dd_tx_keep", "COMMIT"],
        # the serial column's sequence came back with its table, and goes on (past the
        # range of values a coordinator held, which is given up)
        ["INSERT INTO dd_tx_keep (v, k) VALUES ('after', 1) RETURNING id > 30", "COMMIT"],
    ])
    same_description(postgres, target, "dd_tx_keep")


def test_ddl_committed_with_its_data(pair, postgres, target):
    reset(pair, "dd_tx_c", "dd_tx_d")
    run_blocks(pair, [
        ["CREATE TABLE dd_tx_c (id int PRIMARY KEY, v int)",
         "INSERT INTO dd_tx_c SELECT i, i FROM generate_series(1, 10) i",
         "ALTER TABLE dd_tx_c ADD COLUMN w int DEFAULT 2",
         "CREATE UNIQUE INDEX dd_tx_c_v ON dd_tx_c (v)",
         "INSERT INTO dd_tx_c VALUES (11, 11, 11)", "COMMIT"],
        ["SELECT * FROM dd_tx_c ORDER BY id", "COMMIT"],
        ["CREATE TABLE dd_tx_d (x int)", "DROP TABLE dd_tx_d", "COMMIT"],
        ["SELECT * FROM dd_tx_d", "ROLLBACK"],
    ])
    same_description(postgres, target, "dd_tx_c")


def test_ddl_rolled_back_to_a_savepoint(pair, postgres, target):
    reset(pair, "dd_sp_a", "dd_sp_b")
    run_blocks(pair, [
        ["CREATE TABLE dd_sp_a (id int PRIMARY KEY, v int)", "INSERT INTO dd_sp_a VALUES (1, 1)",
         "SAVEPOINT s1",
         "CREATE TABLE dd_sp_b (x int)", "ALTER TABLE dd_sp_a ADD COLUMN z int DEFAULT 9",
         "INSERT INTO dd_sp_a VALUES (2, 2, 2)",
         "ROLLBACK TO SAVEPOINT s1",
         "INSERT INTO dd_sp_a VALUES (3, 3)",
         "SAVEPOINT s2", "DROP TABLE dd_sp_a", "ROLLBACK TO s2",
         "SELECT * FROM dd_sp_a ORDER BY id", "COMMIT"],
        ["SELECT * FROM dd_sp_a ORDER BY id", "SELECT * FROM dd_sp_b", "ROLLBACK"],
    ])
    same_description(postgres, target, "dd_sp_a")


def test_ddl_of_a_failed_block_or_query_string_is_undone(pair):
    reset(pair, "dd_fail", "dd_fail2", "dd_fail3")
    run_blocks(pair, [
        ["CREATE TABLE dd_fail (x int)", "SELECT 1 / 0", "SELECT 1", "COMMIT"],
        ["SELECT * FROM dd_fail", "ROLLBACK"],
    ])
    # one query string is one implicit transaction
    same(pair, "CREATE TABLE dd_fail2 (x int); INSERT INTO dd_fail2 VALUES (1); SELECT 1 / 0")
    same(pair, "SELECT * FROM dd_fail2")
    # a failing ALTER TABLE inside a block takes the block's earlier DDL with it
    run_blocks(pair, [
        ["CREATE TABLE dd_fail3 (x int)", "INSERT INTO dd_fail3 VALUES (NULL)",
         "ALTER TABLE dd_fail3 ALTER COLUMN x SET NOT NULL", "ROLLBACK"],
        ["SELECT * FROM dd_fail3", "ROLLBACK"],
    ])


def test_committed_ddl_survives_kill9(meridian):
    """A DDL transaction acknowledged before a kill -9 is there whole after the restart:
    its tables, columns, indexes and rows."""
    with psycopg.connect(meridian.dsn) as c:
        c.execute("CREATE TABLE dd_k (id int PRIMARY KEY, v text)")
        c.execute("INSERT INTO dd_k SELECT i, 'v' || i FROM generate_series(1, 100) i")
        c.execute("ALTER TABLE dd_k ADD COLUMN w int DEFAULT 7, ALTER COLUMN v TYPE varchar(10)")
        c.execute("CREATE INDEX dd_k_w ON dd_k (w)")
        c.commit()
    meridian.kill9()
    meridian.restart()
    with psycopg.connect(meridian.dsn) as c:
        assert c.execute("SELECT count(*), sum(w), max(v) FROM dd_k WHERE w = 7").fetchone() \
            == (100, 700, "v99")
        cur = c.execute("SELECT * FROM dd_k WHERE id = 1")
        assert [d.name for d in cur.description] == ["id", "v", "w"]
        assert cur.fetchall() == [(1, "v1", 7)]


def test_uncommitted_ddl_is_gone_after_kill9(meridian):
    """DDL of a transaction still open at a kill -9 never took effect: a table truncated
    (and loaded again), dropped or altered in it has its committed rows and columns
    after the restart, and a table it created does not exist."""
    with psycopg.connect(meridian.dsn, autocommit=True) as c:
        for t in ("dd_u_trunc", "dd_u_drop", "dd_u_alter"):
            c.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, v text)")
            c.execute(f"INSERT INTO {t} SELECT i, 'v' || i FROM generate_series(1, 50) i")
    open_txn = psycopg.connect(meridian.dsn)
    open_txn.execute("TRUNCATE dd_u_trunc")
    with open_txn.cursor().copy("COPY dd_u_trunc FROM STDIN") as copy:
        copy.write_row((1, "new"))
    open_txn.execute("DROP TABLE dd_u_drop")
    open_txn.execute("ALTER TABLE dd_u_alter ADD COLUMN w int DEFAULT 7, DROP COLUMN v")
    open_txn.execute("CREATE TABLE dd_u_new (id int PRIMARY KEY)")
    open_txn.execute("INSERT INTO dd_u_new VALUES (1)")
    meridian.kill9()
    open_txn.close()
    meridian.restart()
    with psycopg.connect(meridian.dsn, autocommit=True) as c:
        for t in ("dd_u_trunc", "dd_u_drop", "dd_u_alter"):
            cur = c.execute(f"SELECT * FROM {t} ORDER BY id")
            assert [d.name for d in cur.description] == ["id", "v"], t
            assert cur.fetchall() == [(i, f"v{i}") for i in range(1, 51)], t
        assert c.execute("SELECT to_regclass('dd_u_new')").fetchone() == (None,)


def test_uncommitted_ddl_of_a_killed_coordinator_is_undone(meridian_cluster):
    """A coordinator killed with a DDL transaction open: the other coordinator, which
    saw the DDL while it was open, finds it undone once the GTM reports the transaction
    gone, without any restart: the dropped and truncated tables back with their rows,
    the created one gone, and the names free again."""
    with psycopg.connect(meridian_cluster.second.dsn, autocommit=True) as c:
        for t in ("dk_trunc", "dk_drop"):
            c.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, v text)")
            c.execute(f"INSERT INTO {t} SELECT i, 'v' || i FROM generate_series(1, 20) i")
    open_txn = psycopg.connect(meridian_cluster.dsn)
    open_txn.execute("TRUNCATE dk_trunc")
    open_txn.execute("DROP TABLE dk_drop")
    open_txn.execute("CREATE TABLE dk_new (id int PRIMARY KEY)")
    with psycopg.connect(meridian_cluster.second.dsn, autocommit=True) as c:
        # The DDL of an open transaction is visible to others (decision 0038).
        assert c.execute("SELECT to_regclass('dk_new') IS NOT NULL").fetchone() == (True,)
        meridian_cluster.kill9_coordinator()
        open_txn.close()
        deadline = time.monotonic() + 60
        while c.execute("SELECT to_regclass('dk_new') IS NOT NULL").fetchone() != (False,):
            assert time.monotonic() < deadline, "the killed coordinator's DDL stayed"
            time.sleep(0.2)
        for t in ("dk_trunc", "dk_drop"):
            assert c.execute(f"SELECT * FROM {t} ORDER BY id").fetchall() == [
                (i, f"v{i}") for i in range(1, 21)], t
        c.execute("CREATE TABLE dk_new (id int PRIMARY KEY)")
        c.execute("INSERT INTO dk_new VALUES (1)")
        assert c.execute("SELECT * FROM dk_new").fetchall() == [(1,)]
