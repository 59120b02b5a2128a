"""Features Meridian does not have yet fail cleanly: SQLSTATE 0A000 with a message naming
the feature, and the session stays usable (issue 2: e.g. pgbench --partitions and
--foreign-keys).

Meridian-only: on real PostgreSQL these statements succeed, so validating this file
against PostgreSQL is meaningless and it refuses to run there.
"""

import psycopg
import pytest

UNSUPPORTED = [
    ("CREATE TABLE unsup_part (aid int NOT NULL) PARTITION BY RANGE (aid)", "PARTITION BY"),
    ("CREATE TABLE unsup_part (aid int NOT NULL) PARTITION BY HASH (aid)", "PARTITION BY"),
    ("ALTER TABLE unsup_child ADD CONSTRAINT unsup_fk FOREIGN KEY (pid) REFERENCES unsup_parent", "foreign keys"),
    ("CREATE TABLE unsup_fk2 (id int REFERENCES unsup_parent (id))", "foreign keys"),
    ("CREATE INDEX unsup_idx ON unsup_parent (id)", "CREATE INDEX"),
    ("COPY unsup_parent TO STDOUT", "COPY TO"),
    ("SELECT count(*) OVER () FROM unsup_parent", "window functions"),
]


@pytest.fixture
def conn(meridian, server_kind):
    if server_kind != "meridian":
        pytest.fail("test_unsupported.py checks Meridian's 0A000 answers; run it against Meridian only")
    c = psycopg.connect(meridian.dsn, autocommit=True)
    c.execute("CREATE TABLE unsup_parent (id int PRIMARY KEY)")
    c.execute("CREATE TABLE unsup_child (id int PRIMARY KEY, pid int)")
    yield c
    c.close()


@pytest.mark.parametrize("sql,feature", UNSUPPORTED)
def test_unsupported_feature_is_0A000(conn, sql, feature):
    with pytest.raises(psycopg.Error) as e:
        conn.execute(sql)
    assert e.value.sqlstate == "0A000", (sql, e.value.sqlstate, str(e.value))
    assert feature.lower() in str(e.value).lower(), (sql, str(e.value))
    assert conn.execute("SELECT 1").fetchone() == (1,)
