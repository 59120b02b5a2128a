"""FOREIGN KEY constraints (issue 31, item 3): column ``REFERENCES`` and table
``FOREIGN KEY``, named and with PostgreSQL's names, the referenced key's checks (42830,
42804), enforcement on INSERT, UPDATE, COPY (the bulk load too) and ON CONFLICT, the
referential actions of DELETE and UPDATE (NO ACTION, RESTRICT, CASCADE, SET NULL, SET
DEFAULT), MATCH SIMPLE's NULLs, self-references, ALTER TABLE … ADD/DROP CONSTRAINT,
TRUNCATE and DROP TABLE of a referenced table, the catalogs, and a child insert racing
a parent delete in two sessions.

Every statement runs on the server under test and on a real PostgreSQL 15 in the same
test: the same rows, the same SQLSTATEs, messages and details. On the
``meridian-cluster`` target the rows are spread over three datanodes.
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from test_ddl import run_script, same_description
from test_indexes import outcome, pair, same  # noqa: F401 (pair is a fixture)

CATALOG = (
    "SELECT conname, contype, confrelid::regclass, conkey, confkey, confupdtype, "
    "confdeltype, confmatchtype, condeferrable, pg_get_constraintdef(oid) "
    "FROM pg_constraint WHERE conrelid = '{t}'::regclass AND contype = 'f' ORDER BY conname"
)


def reset(pair, *tables):
    for c in pair:
        for t in tables:
            c.execute(f"DROP TABLE IF EXISTS {t} CASCADE")


def test_references_enforced_as_postgres(pair, postgres, target):
    reset(pair, "fk_c", "fk_p")
    run_script(pair, [
        "CREATE TABLE fk_p (id int PRIMARY KEY, name text)",
        "CREATE TABLE fk_c (id int PRIMARY KEY, pid int REFERENCES fk_p, note text)",
        CATALOG.format(t="fk_c"),
        "INSERT INTO fk_p VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        "INSERT INTO fk_c VALUES (1, 1, 'x'), (2, 1, 'y'), (3, 2, 'z')",
        # no parent: 23503 with the key
        "INSERT INTO fk_c VALUES (4, 5, 'no')",
        "INSERT INTO fk_c VALUES (4, 3, 'ok'), (5, 9, 'no')",
        # MATCH SIMPLE: NULL is not checked
        "INSERT INTO fk_c VALUES (6, NULL, 'null')",
        "INSERT INTO fk_c SELECT i, i % 3 + 1, 'g' FROM generate_series(10, 30) i",
        "INSERT INTO fk_c SELECT i, i, 'g' FROM generate_series(40, 45) i",
        "SELECT * FROM fk_c ORDER BY id",
        # UPDATE of the referencing column
        "UPDATE fk_c SET pid = 7 WHERE id = 1",
        "UPDATE fk_c SET pid = 3 WHERE id = 1",
        "UPDATE fk_c SET pid = NULL WHERE id = 2",
        "UPDATE fk_c SET note = 'n' WHERE pid = 1",
        "UPDATE fk_c SET pid = pid + 1 WHERE id = 3",
        "UPDATE fk_c SET pid = pid + 1 WHERE id = 4",
        # the referenced side: NO ACTION
        "DELETE FROM fk_p WHERE id = 1",
        "UPDATE fk_p SET id = 10 WHERE id = 3",
        "UPDATE fk_p SET name = 'B' WHERE id = 2",
        "INSERT INTO fk_p VALUES (4, 'd')",
        "DELETE FROM fk_p WHERE id = 4",
        "UPDATE fk_p SET id = 40 WHERE id = 2 AND false",
        "SELECT * FROM fk_p ORDER BY id",
        # UPDATE … FROM and DELETE … USING
        "UPDATE fk_c SET pid = v.p FROM (VALUES (1, 8)) v(id, p) WHERE fk_c.id = v.id",
        "DELETE FROM fk_p USING (VALUES (2)) v(id) WHERE fk_p.id = v.id",
        # RETURNING
        "INSERT INTO fk_c VALUES (50, 2, 'r') RETURNING *",
        "DELETE FROM fk_c WHERE pid = 2 RETURNING id",
        "DELETE FROM fk_p WHERE id = 2 RETURNING *",
        "SELECT * FROM fk_p ORDER BY id",
        "SELECT * FROM fk_c ORDER BY id",
    ])


def test_names_keys_and_errors_as_postgres(pair):
    reset(pair, "fk_m2", "fk_m", "fk_u", "fk_t")
    run_script(pair, [
        "CREATE TABLE fk_m (a int, b text, c bigint, PRIMARY KEY (a, b), UNIQUE (c))",
        "CREATE TABLE fk_u (x int, y text, z int, w bigint, "
        "FOREIGN KEY (x, y) REFERENCES fk_m, "
        "CONSTRAINT named_fk FOREIGN KEY (y, x) REFERENCES fk_m (b, a), "
        "FOREIGN KEY (w) REFERENCES fk_m (c) ON DELETE SET NULL ON UPDATE CASCADE, "
        "FOREIGN KEY (z) REFERENCES fk_m (c))",
        CATALOG.format(t="fk_u"),
        "INSERT INTO fk_m VALUES (1, 'a', 10), (2, 'b', 20)",
        "INSERT INTO fk_u VALUES (1, 'a', 10, 20)",
        "INSERT INTO fk_u VALUES (1, 'b', 10, 20)",
        "INSERT INTO fk_u VALUES (2, 'b', 30, 20)",
        "INSERT INTO fk_u VALUES (2, 'b', 10, 30)",
        # a composite key with one NULL is not checked
        "INSERT INTO fk_u VALUES (9, NULL, NULL, NULL)",
        "INSERT INTO fk_u VALUES (NULL, 'zz', NULL, NULL)",
        "SELECT * FROM fk_u ORDER BY x, y",
        # the referenced columns must be a primary key or a unique constraint's
        "CREATE TABLE fk_t (a int REFERENCES fk_m (a))",
        "CREATE TABLE fk_t (a int, b text, FOREIGN KEY (a, b) REFERENCES fk_m (a, a))",
        "CREATE TABLE fk_t (a int, FOREIGN KEY (a) REFERENCES fk_m)",
        "CREATE TABLE fk_t (a int REFERENCES fk_nope)",
        "CREATE TABLE fk_t (a int REFERENCES fk_m (nope))",
        "CREATE TABLE fk_t (a int, FOREIGN KEY (nope) REFERENCES fk_m (c))",
        "CREATE TABLE fk_t (a text REFERENCES fk_m (c))",
        "CREATE TABLE fk_t (a date, CONSTRAINT d_fk FOREIGN KEY (a) REFERENCES fk_m (c))",
        "CREATE TABLE fk_t (a int REFERENCES fk_u)",
        # integer widths compare
        "CREATE TABLE fk_t (a int REFERENCES fk_m (c), b smallint REFERENCES fk_m (c))",
        "INSERT INTO fk_t VALUES (10, 20)",
        "INSERT INTO fk_t VALUES (11, 20)",
        "CREATE TABLE fk_m2 (k bigint PRIMARY KEY, v int CONSTRAINT v_fk REFERENCES fk_m (c), "
        "CONSTRAINT v_fk CHECK (v > 0))",
        "CREATE TABLE fk_m2 (k bigint PRIMARY KEY, i int)",
        "INSERT INTO fk_m2 VALUES (5000000000, 1), (3, 2)",
        "ALTER TABLE fk_t ADD CONSTRAINT big FOREIGN KEY (a) REFERENCES fk_m2",
        "INSERT INTO fk_t VALUES (3, 10)",
        "SELECT * FROM fk_t ORDER BY a",
    ])


def test_referential_actions_as_postgres(pair):
    reset(pair, "fk_r1", "fk_r2", "fk_r3", "fk_r4", "fk_r5", "fk_rp")
    run_script(pair, [
        "CREATE TABLE fk_rp (id int PRIMARY KEY, v text)",
        "CREATE TABLE fk_r1 (id int PRIMARY KEY, p int REFERENCES fk_rp ON DELETE CASCADE "
        "ON UPDATE CASCADE)",
        "CREATE TABLE fk_r2 (id int PRIMARY KEY, p int DEFAULT 0 REFERENCES fk_rp "
        "ON DELETE SET DEFAULT ON UPDATE SET NULL)",
        "CREATE TABLE fk_r3 (id int PRIMARY KEY, p int REFERENCES fk_rp ON DELETE SET NULL "
        "ON UPDATE SET DEFAULT)",
        "CREATE TABLE fk_r4 (id int PRIMARY KEY, p int REFERENCES fk_rp ON DELETE RESTRICT "
        "ON UPDATE RESTRICT)",
        # a cascade goes on to the rows referencing the deleted ones
        "CREATE TABLE fk_r5 (id int PRIMARY KEY, r1 int REFERENCES fk_r1 ON DELETE CASCADE)",
        "INSERT INTO fk_rp SELECT i, 'v' || i FROM generate_series(0, 9) i",
        "INSERT INTO fk_r1 SELECT i, i % 5 FROM generate_series(1, 20) i",
        "INSERT INTO fk_r2 SELECT i, i % 5 + 1 FROM generate_series(1, 10) i",
        "INSERT INTO fk_r3 SELECT i, i % 4 + 1 FROM generate_series(1, 10) i",
        "INSERT INTO fk_r4 VALUES (1, 9)",
        "INSERT INTO fk_r5 SELECT i, i FROM generate_series(1, 20) i",
        "DELETE FROM fk_rp WHERE id = 1",
        "SELECT * FROM fk_r1 ORDER BY id",
        "SELECT * FROM fk_r2 ORDER BY id",
        "SELECT * FROM fk_r3 ORDER BY id",
        "SELECT * FROM fk_r5 ORDER BY id",
        "UPDATE fk_rp SET id = 12 WHERE id = 2",
        "SELECT * FROM fk_r1 ORDER BY id",
        "SELECT * FROM fk_r2 ORDER BY id",
        "SELECT * FROM fk_r3 ORDER BY id",
        # SET DEFAULT's default must be referenced itself
        "DELETE FROM fk_rp WHERE id = 0",
        "DELETE FROM fk_rp WHERE id = 4",
        "UPDATE fk_rp SET id = 13 WHERE id = 3",
        "SELECT * FROM fk_r2 ORDER BY id",
        # RESTRICT
        "DELETE FROM fk_rp WHERE id = 9",
        "UPDATE fk_rp SET id = 19 WHERE id = 9",
        "UPDATE fk_rp SET v = 'w' WHERE id = 9",
        "DELETE FROM fk_rp WHERE id >= 5 AND id < 9",
        "SELECT * FROM fk_rp ORDER BY id",
        "SELECT * FROM fk_r1 ORDER BY id",
        "SELECT * FROM fk_r5 ORDER BY id",
    ])


def test_self_reference_as_postgres(pair):
    reset(pair, "fk_tree")
    run_script(pair, [
        "CREATE TABLE fk_tree (id int PRIMARY KEY, parent int REFERENCES fk_tree (id) "
        "ON DELETE CASCADE, name text)",
        CATALOG.format(t="fk_tree"),
        "INSERT INTO fk_tree VALUES (1, NULL, 'root'), (2, 1, 'a'), (3, 1, 'b'), (4, 2, 'c')",
        # a row referencing one written later in the same statement
        "INSERT INTO fk_tree VALUES (6, 5, 'e'), (5, 4, 'd')",
        "INSERT INTO fk_tree VALUES (7, 7, 'itself')",
        "INSERT INTO fk_tree VALUES (8, 99, 'orphan')",
        "UPDATE fk_tree SET parent = 42 WHERE id = 3",
        "DELETE FROM fk_tree WHERE id = 2",
        "SELECT * FROM fk_tree ORDER BY id",
        "DELETE FROM fk_tree WHERE id = 1",
        "SELECT * FROM fk_tree ORDER BY id",
    ])


def test_deep_cascade_is_refused_not_a_crash(target):
    """A cascade down a chain of self-referencing rows nests a statement per row: a
    hundred levels are refused with 54001 (PostgreSQL's max_stack_depth error), and
    the server is still there."""
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS fk_chain")
        conn.execute("CREATE TABLE fk_chain (id int PRIMARY KEY, "
                     "p int REFERENCES fk_chain ON DELETE CASCADE)")
        conn.execute("INSERT INTO fk_chain SELECT i, nullif(i - 1, 0) "
                     "FROM generate_series(1, 1000) i")
        with pytest.raises(psycopg.errors.StatementTooComplex):
            conn.execute("DELETE FROM fk_chain WHERE id = 1")
        assert conn.execute("SELECT count(*) FROM fk_chain").fetchone() == (1000,)
        conn.execute("DELETE FROM fk_chain WHERE id = 921")
        assert conn.execute("SELECT count(*) FROM fk_chain").fetchone() == (920,)


def test_alter_table_truncate_and_drop_as_postgres(pair):
    reset(pair, "fk_ac", "fk_ap")
    run_script(pair, [
        "CREATE TABLE fk_ap (id int PRIMARY KEY, u int UNIQUE)",
        "CREATE TABLE fk_ac (id int PRIMARY KEY, pid int, u int)",
        "INSERT INTO fk_ap VALUES (1, 10), (2, 20)",
        "INSERT INTO fk_ac VALUES (1, 1, 10), (2, 3, 20), (3, NULL, 30)",
        # the rows are checked: the first without a parent
        "ALTER TABLE fk_ac ADD FOREIGN KEY (pid) REFERENCES fk_ap",
        "ALTER TABLE fk_ac ADD CONSTRAINT u_fk FOREIGN KEY (u) REFERENCES fk_ap (u)",
        "DELETE FROM fk_ac WHERE id >= 2",
        "ALTER TABLE fk_ac ADD FOREIGN KEY (pid) REFERENCES fk_ap",
        "ALTER TABLE fk_ac ADD CONSTRAINT u_fk FOREIGN KEY (u) REFERENCES fk_ap (u)",
        "ALTER TABLE fk_ac ADD CONSTRAINT u_fk FOREIGN KEY (u) REFERENCES fk_ap (u)",
        CATALOG.format(t="fk_ac"),
        "INSERT INTO fk_ac VALUES (4, 2, 30)",
        "INSERT INTO fk_ac VALUES (4, 2, 20)",
        "UPDATE fk_ap SET u = 11 WHERE id = 1",
        # TRUNCATE of a referenced table: 0A000 unless the referencing one goes too
        "TRUNCATE fk_ap",
        # the referenced unique key stays while a key references it
        "ALTER TABLE fk_ap DROP CONSTRAINT fk_ap_u_key",
        "DROP INDEX fk_ap_u_key",
        "ALTER TABLE fk_ac DROP CONSTRAINT u_fk",
        "ALTER TABLE fk_ac DROP CONSTRAINT u_fk",
        CATALOG.format(t="fk_ac"),
        "UPDATE fk_ap SET u = 11 WHERE id = 1",
        # DROP COLUMN of the referencing column drops its constraint; of the referenced
        # one is refused
        "ALTER TABLE fk_ap DROP COLUMN id",
        "DROP TABLE fk_ap",
        "SELECT * FROM fk_ac ORDER BY id",
        "DROP TABLE fk_ap CASCADE",
        CATALOG.format(t="fk_ac"),
        "INSERT INTO fk_ac VALUES (5, 77, 77)",
        "SELECT * FROM fk_ac ORDER BY id",
    ])


def test_unique_index_referenced_as_postgres(pair):
    reset(pair, "fk_ixc", "fk_ix")
    run_script(pair, [
        "CREATE TABLE fk_ix (k int, v text)",
        "CREATE UNIQUE INDEX fk_ix_k ON fk_ix (k)",
        "CREATE TABLE fk_ixc (k int REFERENCES fk_ix (k) ON DELETE CASCADE)",
        CATALOG.format(t="fk_ixc"),
        "INSERT INTO fk_ix VALUES (1, 'a'), (2, 'b')",
        "INSERT INTO fk_ixc VALUES (1), (2), (2)",
        "INSERT INTO fk_ixc VALUES (3)",
        "UPDATE fk_ix SET v = 'c' WHERE k = 2",
        "DELETE FROM fk_ix WHERE k = 2",
        "SELECT * FROM fk_ixc ORDER BY k",
        "DROP INDEX fk_ix_k",
        "ALTER TABLE fk_ixc DROP CONSTRAINT fk_ixc_k_fkey",
        "DROP INDEX fk_ix_k",
        "INSERT INTO fk_ixc VALUES (3)",
    ])


def test_truncate_together_and_cascade_as_postgres(pair):
    reset(pair, "fk_tc", "fk_tp")
    run_script(pair, [
        "CREATE TABLE fk_tp (id int PRIMARY KEY)",
        "CREATE TABLE fk_tc (id int PRIMARY KEY, pid int REFERENCES fk_tp)",
        "INSERT INTO fk_tp VALUES (1), (2)",
        "INSERT INTO fk_tc VALUES (1, 1)",
        "TRUNCATE fk_tp",
        "TRUNCATE fk_tp, fk_tc",
        "SELECT count(*) FROM fk_tc",
        "INSERT INTO fk_tp VALUES (1)",
        "INSERT INTO fk_tc VALUES (1, 1)",
        "TRUNCATE fk_tp CASCADE",
        "SELECT count(*) FROM fk_tc",
        "ALTER TABLE fk_tc DROP COLUMN pid",
        "TRUNCATE fk_tp",
    ])


def test_on_conflict_as_postgres(pair):
    reset(pair, "fk_oc", "fk_op")
    run_script(pair, [
        "CREATE TABLE fk_op (id int PRIMARY KEY)",
        "CREATE TABLE fk_oc (id int PRIMARY KEY, pid int REFERENCES fk_op ON UPDATE CASCADE)",
        "INSERT INTO fk_op VALUES (1), (2)",
        "INSERT INTO fk_oc VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET pid = excluded.pid",
        "INSERT INTO fk_oc VALUES (1, 3) ON CONFLICT (id) DO UPDATE SET pid = excluded.pid",
        "INSERT INTO fk_oc VALUES (1, 2) ON CONFLICT (id) DO UPDATE SET pid = excluded.pid",
        "INSERT INTO fk_oc VALUES (2, 5) ON CONFLICT (id) DO NOTHING",
        "INSERT INTO fk_oc VALUES (1, 5) ON CONFLICT (id) DO NOTHING",
        "INSERT INTO fk_op VALUES (2) ON CONFLICT (id) DO UPDATE SET id = 20",
        "SELECT * FROM fk_op ORDER BY id",
        "SELECT * FROM fk_oc ORDER BY id",
    ])


def copy_in(conn, table, rows, truncate_first=False):
    try:
        with conn.transaction():
            if truncate_first:
                conn.execute(f"TRUNCATE {table}")
            with conn.cursor().copy(f"COPY {table} FROM STDIN") as cp:
                for r in rows:
                    cp.write_row(r)
        return ("ok",)
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary, e.diag.message_detail)


@pytest.mark.parametrize("bulk", [False, True], ids=["rows", "bulk"])
def test_copy_as_postgres(pair, bulk):
    reset(pair, "fk_cc", "fk_cp")
    run_script(pair, [
        "CREATE TABLE fk_cp (id int PRIMARY KEY)",
        # no index: COPY after TRUNCATE in its transaction loads in bulk
        "CREATE TABLE fk_cc (a int REFERENCES fk_cp, b text)",
        "INSERT INTO fk_cp SELECT i FROM generate_series(1, 100) i",
    ])
    good = [(i % 100 + 1, f"r{i}") for i in range(3000)] + [(None, "null")]
    bad = good[:2500] + [(101, "missing")] + good[2500:]
    got = [copy_in(c, "fk_cc", good, bulk) for c in pair]
    assert got[0] == got[1] == ("ok",)
    got = [copy_in(c, "fk_cc", bad, bulk) for c in pair]
    assert got[1] == got[0]
    assert got[0][1] == "23503"
    same(pair, "SELECT count(*), count(a), sum(a) FROM fk_cc")


def test_deferrable_refused(target):
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS fk_dc, fk_dp CASCADE")
        conn.execute("CREATE TABLE fk_dp (id int PRIMARY KEY)")
        for sql in [
            "CREATE TABLE fk_dc (p int REFERENCES fk_dp DEFERRABLE)",
            "CREATE TABLE fk_dc (p int REFERENCES fk_dp DEFERRABLE INITIALLY DEFERRED)",
            "CREATE TABLE fk_dc (p int, FOREIGN KEY (p) REFERENCES fk_dp "
            "INITIALLY DEFERRED)",
            "CREATE TABLE fk_dc (p int REFERENCES fk_dp MATCH FULL)",
            "SET CONSTRAINTS ALL DEFERRED",
        ]:
            with pytest.raises(psycopg.errors.FeatureNotSupported):
                conn.execute(sql)
        conn.execute("CREATE TABLE fk_dc (p int REFERENCES fk_dp NOT DEFERRABLE "
                     "INITIALLY IMMEDIATE)")
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            conn.execute("INSERT INTO fk_dc VALUES (1)")


def test_psql_describe_as_postgres(pair, postgres, target):
    reset(pair, "fk_dchild", "fk_dparent")
    run_script(pair, [
        "CREATE TABLE fk_dparent (id int PRIMARY KEY, k int UNIQUE)",
        "CREATE TABLE fk_dchild (id int PRIMARY KEY, pid int REFERENCES fk_dparent "
        "ON DELETE CASCADE, k int, CONSTRAINT k_fk FOREIGN KEY (k) REFERENCES fk_dparent (k) "
        "ON UPDATE SET NULL)",
    ])
    same_description(postgres, target, "fk_dchild", "fk_dparent")


def test_information_schema_as_postgres(pair):
    reset(pair, "fk_ic", "fk_ip")
    run_script(pair, [
        "CREATE TABLE fk_ip (a int, b int, PRIMARY KEY (a, b))",
        "CREATE TABLE fk_ic (x int, y int, FOREIGN KEY (y, x) REFERENCES fk_ip (b, a) "
        "ON DELETE CASCADE)",
        "SELECT constraint_name, unique_constraint_name, match_option, update_rule, delete_rule "
        "FROM information_schema.referential_constraints WHERE constraint_name LIKE 'fk_ic%'",
        "SELECT constraint_name, constraint_type FROM information_schema.table_constraints "
        "WHERE table_name = 'fk_ic'",
        "SELECT constraint_name, column_name, ordinal_position, position_in_unique_constraint "
        "FROM information_schema.key_column_usage WHERE table_name = 'fk_ic'",
    ])


def race(server):
    """What a child insert and a parent delete in two sessions see of each other: the
    insert's lock on the parent row stops the delete (seen through lock_timeout), the
    delete's stops the insert, and a waiting statement sees the other's commit."""
    with psycopg.connect(server.dsn, autocommit=True) as setup:
        setup.execute("DROP TABLE IF EXISTS fk_xc, fk_xp CASCADE")
        setup.execute("CREATE TABLE fk_xp (id int PRIMARY KEY)")
        setup.execute("CREATE TABLE fk_xc (id int PRIMARY KEY, pid int REFERENCES fk_xp)")
        setup.execute("INSERT INTO fk_xp VALUES (1), (2), (3)")
    seen = []
    inserter = psycopg.connect(server.dsn)
    deleter = psycopg.connect(server.dsn)
    try:
        for c in (inserter, deleter):
            c.execute("SET lock_timeout = '300ms'")
            c.commit()
        inserter.execute("INSERT INTO fk_xc VALUES (1, 1)")
        seen.append(outcome(deleter, "DELETE FROM fk_xp WHERE id = 1"))
        deleter.rollback()
        inserter.commit()
        seen.append(outcome(deleter, "DELETE FROM fk_xp WHERE id = 1"))
        deleter.rollback()

        deleter.execute("DELETE FROM fk_xp WHERE id = 2")
        seen.append(outcome(inserter, "INSERT INTO fk_xc VALUES (2, 2)"))
        inserter.rollback()
        # the insert waits for the delete, then finds no parent
        inserter.execute("SET lock_timeout = 0")
        result = {}
        insert = "INSERT INTO fk_xc VALUES (2, 2)"
        t = threading.Thread(target=lambda: result.update(insert=outcome(inserter, insert)))
        t.start()
        time.sleep(0.3)  # ordering only: the insert is (most likely) waiting by now
        deleter.commit()
        t.join(30)
        seen.append(result["insert"])
        inserter.rollback()

        # the delete waits for the insert, then finds the child
        deleter.execute("SET lock_timeout = 0")
        inserter.execute("INSERT INTO fk_xc VALUES (3, 3)")
        delete = "DELETE FROM fk_xp WHERE id = 3"
        t = threading.Thread(target=lambda: result.update(delete=outcome(deleter, delete)))
        t.start()
        time.sleep(0.3)
        inserter.commit()
        t.join(30)
        seen.append(result["delete"])
        deleter.rollback()
        seen.append(outcome(deleter, "SELECT * FROM fk_xc"))
    finally:
        inserter.close()
        deleter.close()
    return seen


def test_child_insert_and_parent_delete_race_as_postgres(postgres, target):
    expected = race(postgres)
    assert [s[:2] for s in expected[:5]] == [
        ("error", "55P03"), ("error", "23503"), ("error", "55P03"), ("error", "23503"),
        ("error", "23503")]
    assert race(target) == expected
