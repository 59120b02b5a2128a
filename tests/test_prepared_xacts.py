"""SQL-level prepared transactions (issue 30, item 5): PREPARE TRANSACTION 'gid',
COMMIT PREPARED 'gid', ROLLBACK PREPARED 'gid' and the view pg_prepared_xacts, as XA
clients (pgjdbc's XAResource) use them.

Every scripted step runs against the server under test (``meridian``: the embedded
server, or with ``MERIDIAN_TEST_TARGETS=meridian-cluster`` a GTM, three datanodes and a
coordinator as processes) and against PostgreSQL 15 (``postgres``, with
max_prepared_transactions > 0) in the same test; command tags, rows, SQLSTATEs, warnings
and the transaction status after each step must agree.

1. The statements' behaviour: outside a block PREPARE TRANSACTION only warns; in a block
   it ends the session's transaction (idle afterwards), in a failed block it rolls back;
   duplicate gid 42710 (the transaction is rolled back), unknown gid 42704,
   COMMIT/ROLLBACK PREPARED in a block 25001, malformed statements 42601, a gid of 200
   bytes or more 22023; a prepared transaction that did nothing; an implicit transaction
   (earlier statements of the query string) is prepared after a warning.
2. A prepared transaction's writes are invisible until COMMIT PREPARED, gone after
   ROLLBACK PREPARED, and any session may finish it (also after the preparing session
   disconnected).
3. It keeps its row locks: another session's UPDATE of the row waits until COMMIT
   PREPARED, then updates the committed row.
4. Cluster: the coordinator process is killed (kill -9) and restarted between PREPARE
   and COMMIT PREPARED: the transaction is still listed, still holds its locks, and
   COMMIT PREPARED commits it on every datanode.
5. It is durable: after kill -9 of every process and a restart it is listed, holds its
   locks and can be finished, and finished ones do not come back.
"""

from __future__ import annotations

import threading
import time
import uuid

import psycopg
import pytest

from conftest import ServerHandle


class Script:
    """The same statements on the server under test and on PostgreSQL, in named
    sessions (autocommit connections), with every outcome compared."""

    def __init__(self, meridian, postgres):
        self.servers = {"meridian": meridian, "postgres": postgres}
        self.sessions: dict[tuple[str, str], psycopg.Connection] = {}
        self.notices: dict[str, list[str]] = {}
        # Names unique to the test: PostgreSQL is shared by the whole pytest session.
        self.suffix = uuid.uuid4().hex[:8]

    def name(self, base: str) -> str:
        return f"{base}_{self.suffix}"

    def conn(self, server: str, session: str) -> psycopg.Connection:
        key = (server, session)
        if key not in self.sessions:
            c = psycopg.connect(self.servers[server].dsn, autocommit=True)
            notices = self.notices.setdefault(f"{server}/{session}", [])
            c.add_notice_handler(lambda d, n=notices: n.append(d.sqlstate))
            self.sessions[key] = c
        return self.sessions[key]

    def outcome(self, server: str, session: str, sql: str):
        c = self.conn(server, session)
        notices = self.notices[f"{server}/{session}"]
        notices.clear()
        try:
            cur = c.execute(sql)
            results = []
            while True:
                rows = cur.fetchall() if cur.description else None
                results.append((cur.statusmessage, rows))
                if not cur.nextset():
                    break
            result = ("ok", results)
        except psycopg.Error as e:
            result = ("error", e.sqlstate, str(e).splitlines()[0])
        return result, list(notices), c.info.transaction_status.name

    def run(self, session: str, sql: str, expect=None):
        """Runs `sql` in `session` on both servers; returns the (common) outcome."""
        sql = sql.replace("$S", self.suffix)
        got = self.outcome("meridian", session, sql)
        want = self.outcome("postgres", session, sql)
        assert got == want, f"{sql!r} in session {session}:\nmeridian: {got}\npostgres: {want}"
        if expect is not None:
            assert got[0][0] == "error" and got[0][1] == expect or got[0] == ("ok", expect), \
                (sql, got)
        return got

    def close(self):
        for c in self.sessions.values():
            c.close()
        self.sessions.clear()


@pytest.fixture
def script(meridian, postgres):
    s = Script(meridian, postgres)
    yield s
    # Leave nothing prepared on the shared PostgreSQL.
    with psycopg.connect(postgres.dsn, autocommit=True) as c:
        for (gid,) in c.execute("select gid from pg_prepared_xacts where gid like %s",
                                (f"%{s.suffix}%",)).fetchall():
            c.execute(f"rollback prepared '{gid}'")
    s.close()


def prepared_gids(s: Script, session: str = "a"):
    return s.run(session, "select gid, owner, database, transaction is not null "
                          "from pg_prepared_xacts where gid like '%$S' order by gid")


def test_statements_match_postgres(script):
    s = script
    t = s.name("t")
    s.run("a", f"create table {t} (id int primary key, v int)")
    s.run("a", f"insert into {t} values (1, 1), (2, 2)")

    # Outside a block: a warning, nothing prepared.
    s.run("a", "prepare transaction 'none_$S'")
    # In a block that did nothing: prepared; the session is idle afterwards.
    s.run("a", "begin")
    s.run("a", "prepare transaction 'empty_$S'")
    s.run("a", "select 1")
    prepared_gids(s)
    # A duplicate gid: 42710, and the transaction is rolled back.
    s.run("a", "begin")
    s.run("a", f"update {t} set v = 10 where id = 1")
    s.run("a", "prepare transaction 'empty_$S'", expect="42710")
    s.run("a", f"select * from {t} order by id")
    # COMMIT/ROLLBACK PREPARED inside a block: 25001.
    s.run("a", "begin")
    s.run("a", "commit prepared 'empty_$S'", expect="25001")
    s.run("a", "rollback")
    s.run("a", "begin")
    s.run("a", "rollback prepared 'empty_$S'", expect="25001")
    s.run("a", "rollback")
    s.run("a", "select 1; commit prepared 'empty_$S'", expect="25001")
    # Unknown gids: 42704.
    s.run("a", "commit prepared 'nope_$S'", expect="42704")
    s.run("a", "rollback prepared 'nope_$S'", expect="42704")
    # Malformed statements: 42601.
    for bad in ["commit prepared empty_$S", "prepare transaction", "rollback prepared",
                "commit prepared 'empty_$S' now"]:
        s.run("a", bad, expect="42601")
    # A gid of 200 bytes or more: 22023, the transaction rolled back.
    s.run("a", "begin")
    s.run("a", f"update {t} set v = 11 where id = 1")
    s.run("a", "prepare transaction '" + "x" * 200 + "'", expect="22023")
    s.run("a", "rollback prepared '" + "x" * 200 + "'", expect="42704")
    # A failed block: PREPARE TRANSACTION rolls it back.
    s.run("a", "begin")
    s.run("a", f"update {t} set v = 12 where id = 1")
    s.run("a", "select 1/0", expect="22012")
    s.run("a", "prepare transaction 'failed_$S'")
    prepared_gids(s)
    # An implicit transaction is prepared, with a warning.
    s.run("a", f"update {t} set v = 13 where id = 2; prepare transaction 'implicit_$S'")
    prepared_gids(s)
    s.run("a", f"select * from {t} order by id")
    # Quoting of the gid.
    s.run("a", "begin; prepare transaction 'it''s_$S'")
    s.run("a", "rollback prepared $$it's_$S$$")
    # Finished by another session: COMMIT PREPARED from b.
    s.run("b", "commit prepared 'empty_$S'")
    s.run("b", "commit prepared 'implicit_$S'")
    s.run("b", "commit prepared 'implicit_$S'", expect="42704")
    s.run("a", f"select * from {t} order by id")
    prepared_gids(s)


def test_writes_appear_at_commit_prepared(script):
    s = script
    t = s.name("w")
    s.run("a", f"create table {t} (id int primary key, v text)")
    s.run("a", f"insert into {t} select g, 'old' from generate_series(1, 20) g")
    s.run("a", "begin")
    s.run("a", f"insert into {t} select g, 'new' from generate_series(21, 40) g")
    s.run("a", f"update {t} set v = 'changed' where id <= 10")
    s.run("a", f"delete from {t} where id between 15 and 17")
    s.run("a", "prepare transaction 'w_$S'")
    # Invisible to everyone until committed, the preparing session included.
    s.run("a", f"select count(*), count(*) filter (where v = 'old') from {t}")
    s.run("b", f"select count(*), count(*) filter (where v = 'old') from {t}")
    prepared_gids(s, "b")
    # The preparing session goes away; another finishes the transaction.
    s.sessions.pop(("meridian", "a")).close()
    s.sessions.pop(("postgres", "a")).close()
    s.run("b", "commit prepared 'w_$S'")
    s.run("c", f"select v, count(*) from {t} group by v order by v")
    # ROLLBACK PREPARED leaves nothing behind.
    s.run("c", "begin")
    s.run("c", f"delete from {t}")
    s.run("c", "prepare transaction 'gone_$S'")
    s.run("b", "rollback prepared 'gone_$S'")
    s.run("c", f"select count(*) from {t}")
    prepared_gids(s, "c")


def blocked_update(dsn: str, sql: str):
    """Runs `sql` in a thread of its own; returns (thread, outcome list)."""
    outcome: list = []

    def run():
        with psycopg.connect(dsn, autocommit=True) as c:
            try:
                outcome.append(c.execute(sql).statusmessage)
            except psycopg.Error as e:
                outcome.append(e.sqlstate)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th, outcome


def test_prepared_transaction_keeps_its_locks(script):
    s = script
    t = s.name("l")
    s.run("a", f"create table {t} (id int primary key, v int)")
    s.run("a", f"insert into {t} values (1, 100), (2, 200)")
    s.run("a", "begin")
    s.run("a", f"update {t} set v = v + 1 where id = 1")
    s.run("a", f"update {t} set v = v where id = 2")
    s.run("a", "prepare transaction 'locks_$S'")
    waiting = {}
    for server in ("meridian", "postgres"):
        dsn = s.servers[server].dsn
        waiting[server] = [blocked_update(dsn, f"update {t} set v = v * 2 where id = 1"),
                           blocked_update(dsn, f"update {t} set v = v * 3 where id = 2")]
    time.sleep(1.0)
    for server, updates in waiting.items():
        for th, outcome in updates:
            assert th.is_alive() and not outcome, (server, outcome)
    # Readers are not blocked, and see the rows as before.
    s.run("b", f"select * from {t} order by id")
    s.run("b", "commit prepared 'locks_$S'")
    for server, updates in waiting.items():
        for th, outcome in updates:
            th.join(30)
            assert outcome == ["UPDATE 1"], (server, outcome)
    s.run("b", f"select * from {t} order by id")


def restart_coordinator(cluster: ServerHandle):
    """kill -9 of the coordinator process alone, then a start of it on the same
    datanodes and GTM (the cluster's `start` starts only members that are not alive)."""
    ServerHandle.kill9(cluster)
    cluster.start()


def prepare_two(dsn: str):
    """Prepares 'xa-1' (updates rows on every datanode: a two-phase part on each) and
    'xa-2' (a delete) over a fresh table `accounts` of 31 rows."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("create table accounts (id int primary key, balance int)")
        c.execute("insert into accounts select g, 100 from generate_series(1, 31) g")
        c.execute("begin")
        c.execute("update accounts set balance = balance - 1 where id <= 15")
        c.execute("update accounts set balance = balance + 1 where id between 16 and 30")
        c.execute("prepare transaction 'xa-1'")
        c.execute("begin")
        c.execute("delete from accounts where id = 31")
        c.execute("prepare transaction 'xa-2'")


def finish_two(dsn: str):
    """Checks that 'xa-1' and 'xa-2' are listed, invisible and hold their locks, then
    commits the first and rolls back the second."""
    with psycopg.connect(dsn, autocommit=True) as c:
        listed = c.execute("select gid, owner, database from pg_prepared_xacts "
                           "order by gid").fetchall()
        assert listed == [("xa-1", "postgres", "postgres"), ("xa-2", "postgres", "postgres")]
        assert c.execute("select sum(balance), count(*) from accounts").fetchone() == (3100, 31)
        # The locks are still held: an update of a prepared row waits.
        th, outcome = blocked_update(dsn, "update accounts set balance = 0 where id = 1")
        time.sleep(1.0)
        assert th.is_alive() and not outcome
        c.execute("commit prepared 'xa-1'")
        th.join(30)
        assert outcome == ["UPDATE 1"]
        c.execute("rollback prepared 'xa-2'")
        assert c.execute("select gid from pg_prepared_xacts").fetchall() == []


def assert_finished_two(dsn: str):
    with psycopg.connect(dsn, autocommit=True) as c:
        assert c.execute("select gid from pg_prepared_xacts").fetchall() == []
        rows = dict(c.execute("select id, balance from accounts").fetchall())
        assert rows == {i: 0 if i == 1 else 99 if i <= 15 else 101 if i <= 30 else 100
                        for i in range(1, 32)}
        with pytest.raises(psycopg.errors.UndefinedObject):
            c.execute("commit prepared 'xa-1'")


def test_prepared_transaction_outlives_its_coordinator(meridian_cluster):
    prepare_two(meridian_cluster.dsn)
    restart_coordinator(meridian_cluster)
    finish_two(meridian_cluster.dsn)
    assert_finished_two(meridian_cluster.dsn)


def test_prepared_transactions_survive_kill_9_of_every_process(meridian):
    """A prepared transaction is durable (PostgreSQL keeps it in a state file): after
    kill -9 of the server (every process of a cluster) and a restart, it is listed, still
    holds its row locks, and COMMIT PREPARED / ROLLBACK PREPARED finish it; finished ones
    stay finished across another restart."""
    prepare_two(meridian.dsn)
    meridian.kill9()
    meridian.restart()
    finish_two(meridian.dsn)
    meridian.kill9()
    meridian.restart()
    assert_finished_two(meridian.dsn)


def test_prepared_bulk_load_survives_kill_9_of_every_process(meridian):
    """Rows COPY loads in bulk (into a table the transaction truncated) are part of the
    prepared transaction: after kill -9 of every process and a restart, COMMIT PREPARED
    makes all of them visible, on every datanode; of a second one, rolled back, none is.
    (What the rollback leaves of the truncated table itself differs: TRUNCATE is not yet
    transactional in Meridian, issue 31.)"""
    rows = 3000
    data = "".join(f"{i}\t{i * 7}\n" for i in range(1, rows + 1))
    with psycopg.connect(meridian.dsn, autocommit=True) as c:
        for t in ("loaded", "dropped"):
            c.execute(f"create table {t} (id int primary key, v int)")
            c.execute(f"insert into {t} values (0, 0)")
            c.execute("begin")
            c.execute(f"truncate {t}")
            with c.cursor().copy(f"copy {t} from stdin") as copy:
                copy.write(data)
            c.execute(f"prepare transaction 'load-{t}'")
    meridian.kill9()
    meridian.restart()
    with psycopg.connect(meridian.dsn, autocommit=True) as c:
        assert c.execute("select gid from pg_prepared_xacts order by gid").fetchall() == [
            ("load-dropped",), ("load-loaded",)]
        c.execute("commit prepared 'load-loaded'")
        c.execute("rollback prepared 'load-dropped'")
        assert c.execute("select count(*), sum(v) from loaded").fetchone() == (
            rows, 7 * rows * (rows + 1) // 2)
        assert c.execute("select count(*) from dropped where id > 0").fetchone() == (0,)
