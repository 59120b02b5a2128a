"""Transaction isolation behaves like PostgreSQL 15.

Each scenario is a fixed sequence of steps for two or three sessions (psycopg 3
connections in autocommit mode so that the test itself sends ``BEGIN ISOLATION LEVEL ...``
/ ``COMMIT`` and the server sees explicit transaction blocks).  A step that has not
finished after BLOCK_WAIT seconds is recorded as "blocked" and the scenario moves on; its
result is collected when its session needs to run its next step (or at the end).

The observed outcome -- rows each step saw, command tags, which steps blocked, SQLSTATEs,
the final table contents -- is computed in the same test run against the reference
PostgreSQL 15 (``postgres`` fixture) and against the server under test, and the two must
be equal.  Nothing is hard-coded, except for the deadlock scenario, where which session
PostgreSQL picks as the victim is an implementation detail: there the outcome compared is
"how many sessions got which SQLSTATE, and does the final state reflect exactly the
surviving transaction".
"""

import json
import os
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout

import psycopg
import pytest

BLOCK_WAIT = float(os.environ.get("MERIDIAN_ISOLATION_BLOCK_WAIT", "1.5"))
STEP_TIMEOUT = float(os.environ.get("MERIDIAN_ISOLATION_STEP_TIMEOUT", "30"))

RC = "BEGIN ISOLATION LEVEL READ COMMITTED"
RR = "BEGIN ISOLATION LEVEL REPEATABLE READ"


class Session:
    def __init__(self, dsn, name):
        self.name = name
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.pool = ThreadPoolExecutor(1, thread_name_prefix=f"iso-{name}")

    def _run(self, sql):
        try:
            cur = self.conn.execute(sql)
            rows = [list(r) for r in cur.fetchall()] if cur.description else None
            return {"tag": cur.statusmessage, "rows": rows}
        except psycopg.Error as e:
            return {"error": e.sqlstate or f"no SQLSTATE: {e!r}"}

    def submit(self, sql):
        return self.pool.submit(self._run, sql)

    def close(self, busy=False):
        if busy:  # a step is still stuck: cancel it (bounded wait for the server)
            try:
                self.conn.cancel_safe(timeout=5)
            except Exception:
                pass
        self.pool.shutdown(wait=False, cancel_futures=True)
        try:
            self.conn.close()
        except Exception:
            pass


def run_scenario(server, table, setup, steps):
    """Run ``steps`` [(session, sql)] and return the observed outcome."""
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute(f"DROP TABLE IF EXISTS {table}")
        c.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v int)")
        for row in setup:
            c.execute(f"INSERT INTO {table} (id, v) VALUES (%s, %s)", row)
    sessions = {name: Session(server.dsn, name) for name in dict.fromkeys(s for s, _ in steps)}
    observed, pending = [], {}
    try:
        for name, sql in steps:
            sql = sql.format(t=table)
            if name in pending:  # the session's previous step must finish first
                idx, fut = pending.pop(name)
                observed[idx]["result"] = _wait(fut, observed[idx])
            fut = sessions[name].submit(sql)
            entry = {"session": name, "sql": sql}
            try:
                entry["result"] = fut.result(timeout=BLOCK_WAIT)
                entry["blocked"] = False
            except FutureTimeout:
                entry["blocked"] = True
                pending[name] = (len(observed), fut)
            observed.append(entry)
        for idx, fut in pending.values():
            observed[idx]["result"] = _wait(fut, observed[idx])
    finally:
        stuck = {name for name, (_, fut) in pending.items() if not fut.done()}
        stuck |= {e["session"] for e in observed
                  if str(e.get("result", {}).get("error", "")).startswith("still blocked")}
        for name, s in sessions.items():
            s.close(busy=name in stuck)
    with psycopg.connect(server.dsn, autocommit=True) as c:
        final = [list(r) for r in c.execute(f"SELECT id, v FROM {table} ORDER BY id")]
    return {"steps": observed, "final": final}


def _wait(fut, entry):
    try:
        return fut.result(timeout=STEP_TIMEOUT)
    except FutureTimeout:
        return {"error": f"still blocked after {STEP_TIMEOUT}s: {entry['sql']}"}


# (name, initial rows, steps, summariser or None)
SCENARIOS = [
    ("lost_update_rc", [(1, 0)], [
        ("s1", RC), ("s2", RC),
        ("s1", "SELECT v FROM {t} WHERE id = 1"), ("s2", "SELECT v FROM {t} WHERE id = 1"),
        ("s1", "UPDATE {t} SET v = v + 1 WHERE id = 1"),
        ("s2", "UPDATE {t} SET v = v + 10 WHERE id = 1"),   # waits for s1
        ("s1", "COMMIT"),
        ("s2", "SELECT v FROM {t} WHERE id = 1"),           # applied on the new value
        ("s2", "COMMIT"),
    ]),
    ("lost_update_rr", [(1, 0)], [
        ("s1", RR), ("s2", RR),
        ("s1", "SELECT v FROM {t} WHERE id = 1"), ("s2", "SELECT v FROM {t} WHERE id = 1"),
        ("s1", "UPDATE {t} SET v = v + 1 WHERE id = 1"),
        ("s2", "UPDATE {t} SET v = v + 10 WHERE id = 1"),   # waits, then 40001
        ("s1", "COMMIT"),
        ("s2", "SELECT v FROM {t} WHERE id = 1"),
        ("s2", "ROLLBACK"),
    ]),
    ("lost_update_rr_first_rolls_back", [(1, 0)], [
        ("s1", RR), ("s2", RR),
        ("s1", "SELECT v FROM {t} WHERE id = 1"), ("s2", "SELECT v FROM {t} WHERE id = 1"),
        ("s1", "UPDATE {t} SET v = v + 1 WHERE id = 1"),
        ("s2", "UPDATE {t} SET v = v + 10 WHERE id = 1"),
        ("s1", "ROLLBACK"),
        ("s2", "SELECT v FROM {t} WHERE id = 1"),
        ("s2", "COMMIT"),
    ]),
    *[(f"read_skew_{lvl}", [(1, 50), (2, 50)], [
        ("s1", begin),
        ("s1", "SELECT v FROM {t} WHERE id = 1"),
        ("s2", RC),
        ("s2", "UPDATE {t} SET v = 25 WHERE id = 1"),
        ("s2", "UPDATE {t} SET v = 75 WHERE id = 2"),
        ("s2", "COMMIT"),
        ("s1", "SELECT v FROM {t} WHERE id = 2"),
        ("s1", "SELECT sum(v) FROM {t}"),
        ("s1", "COMMIT"),
    ]) for lvl, begin in (("rc", RC), ("rr", RR))],
    ("write_skew_rr", [(1, 1), (2, 1)], [   # two doctors on call; each goes off call
        ("s1", RR), ("s2", RR),
        ("s1", "SELECT count(*) FROM {t} WHERE v = 1"),
        ("s2", "SELECT count(*) FROM {t} WHERE v = 1"),
        ("s1", "UPDATE {t} SET v = 0 WHERE id = 1"),
        ("s2", "UPDATE {t} SET v = 0 WHERE id = 2"),
        ("s1", "COMMIT"), ("s2", "COMMIT"),
        ("s3", "SELECT count(*) FROM {t} WHERE v = 1"),
    ]),
    # The session defaults a plain BEGIN and autocommit statements take, and SET LOCAL
    # of them lasting only until the end of its transaction.
    ("default_isolation_repeatable_read", [(1, 10)], [
        ("s1", "SET default_transaction_isolation = 'repeatable read'"),
        ("s1", "BEGIN"),
        ("s1", "SELECT v FROM {t} WHERE id = 1"),
        ("s2", "UPDATE {t} SET v = 11 WHERE id = 1"),       # autocommit
        ("s1", "SELECT v FROM {t} WHERE id = 1"),           # still 10
        ("s1", "SHOW transaction_isolation"),
        ("s1", "COMMIT"),
        ("s1", "BEGIN"),
        ("s1", "SET LOCAL default_transaction_isolation = 'read committed'"),
        ("s1", "COMMIT"),
        ("s1", "BEGIN"),
        ("s1", "SHOW transaction_isolation"),               # repeatable read again
        ("s1", "COMMIT"),
        ("s1", "RESET default_transaction_isolation"),
        ("s1", "BEGIN"),
        ("s1", "SELECT v FROM {t} WHERE id = 1"),
        ("s2", "UPDATE {t} SET v = 12 WHERE id = 1"),
        ("s1", "SELECT v FROM {t} WHERE id = 1"),           # 12: read committed
        ("s1", "COMMIT"),
    ]),
    ("default_read_only", [(1, 10)], [
        ("s1", "SET default_transaction_read_only = on"),
        ("s1", "SHOW transaction_read_only"),
        ("s1", "UPDATE {t} SET v = 11 WHERE id = 1"),       # 25006
        ("s1", "BEGIN"),
        ("s1", "SHOW transaction_read_only"),
        ("s1", "SET LOCAL default_transaction_read_only = off"),
        ("s1", "COMMIT"),
        ("s1", "BEGIN READ WRITE"),
        ("s1", "SHOW transaction_read_only"),
        ("s1", "COMMIT"),
        ("s1", "INSERT INTO {t} (id, v) VALUES (2, 20)"),   # still read only: 25006
        ("s1", "SELECT id, v FROM {t} ORDER BY id"),
        ("s1", "SET default_transaction_read_only = off"),
        ("s1", "INSERT INTO {t} (id, v) VALUES (3, 30)"),
    ]),
    *[(f"non_repeatable_read_and_phantom_{lvl}", [(1, 10)], [
        ("s1", begin),
        ("s1", "SELECT id, v FROM {t} ORDER BY id"),
        ("s2", "UPDATE {t} SET v = 11 WHERE id = 1"),       # autocommit
        ("s2", "INSERT INTO {t} (id, v) VALUES (2, 20)"),   # autocommit
        ("s1", "SELECT id, v FROM {t} ORDER BY id"),
        ("s1", "SELECT count(*) FROM {t} WHERE v > 5"),
        ("s1", "COMMIT"),
        ("s1", "SELECT id, v FROM {t} ORDER BY id"),
    ]) for lvl, begin in (("rc", RC), ("rr", RR))],
    *[(f"update_then_delete_{lvl}", [(1, 10), (2, 20)], [
        ("s1", begin), ("s2", begin),
        ("s1", "SELECT count(*) FROM {t}"), ("s2", "SELECT count(*) FROM {t}"),
        ("s1", "UPDATE {t} SET v = v + 1 WHERE id = 1"),
        ("s2", "DELETE FROM {t} WHERE id = 1"),             # waits for s1
        ("s1", "COMMIT"),
        ("s2", "SELECT id, v FROM {t} ORDER BY id"),
        ("s2", "COMMIT"),
    ]) for lvl, begin in (("rc", RC), ("rr", RR))],
    ("update_moves_row_out_of_delete_rc", [(1, 10), (2, 20)], [
        ("s1", RC), ("s2", RC),
        ("s1", "UPDATE {t} SET v = 100 WHERE id = 1"),
        ("s2", "DELETE FROM {t} WHERE v < 50"),             # row 2 now, row 1 re-checked
        ("s1", "COMMIT"),
        ("s2", "COMMIT"),
    ]),
    *[(f"delete_then_update_{lvl}", [(1, 10), (2, 20)], [
        ("s1", begin), ("s2", begin),
        ("s1", "SELECT count(*) FROM {t}"), ("s2", "SELECT count(*) FROM {t}"),
        ("s1", "DELETE FROM {t} WHERE id = 1"),
        ("s2", "UPDATE {t} SET v = v + 1 WHERE id = 1"),    # waits for s1
        ("s1", "COMMIT"),
        ("s2", "SELECT id, v FROM {t} ORDER BY id"),
        ("s2", "COMMIT"),
    ]) for lvl, begin in (("rc", RC), ("rr", RR))],
    *[(f"concurrent_insert_same_key_{end.lower()}", [], [
        ("s1", RC), ("s2", RC),
        ("s1", "INSERT INTO {t} (id, v) VALUES (5, 1)"),
        ("s2", "INSERT INTO {t} (id, v) VALUES (5, 2)"),    # waits for s1
        ("s1", end),
        ("s2", "COMMIT"),
    ]) for end in ("COMMIT", "ROLLBACK")],
]


def deadlock_summary_for(final_if_victim):
    """Which session loses is PostgreSQL's choice; compare only what must hold: one
    victim, and final rows that are those of the surviving transaction
    (``final_if_victim[victim]``)."""
    def summary(outcome):
        steps = outcome["steps"]
        errors = sorted(s["result"].get("error") for s in steps if "error" in s["result"])
        victims = {s["session"] for s in steps if s["result"].get("error") == "40P01"}
        final = {i: v for i, v in outcome["final"]}
        final_ok = len(victims) == 1 and final == final_if_victim[next(iter(victims))]
        return {"errors": errors, "victims": len(victims),
                "final_reflects_exactly_the_surviving_transaction": final_ok,
                "commit_tags": sorted(s["result"].get("tag", "") for s in steps
                                      if s["sql"] == "COMMIT")}
    return summary


deadlock_summary = deadlock_summary_for({
    "s1": {1: 1000, 2: 10},   # only s2's updates
    "s2": {1: 1, 2: 100},     # only s1's updates
})


SCENARIOS.append(("deadlock", [(1, 0), (2, 0)], [
    ("s1", RC), ("s2", RC),
    ("s1", "UPDATE {t} SET v = v + 1 WHERE id = 1"),
    ("s2", "UPDATE {t} SET v = v + 10 WHERE id = 2"),
    ("s1", "UPDATE {t} SET v = v + 100 WHERE id = 2"),     # waits for s2
    ("s2", "UPDATE {t} SET v = v + 1000 WHERE id = 1"),    # deadlock
    ("s1", "COMMIT"),
    ("s2", "COMMIT"),
], deadlock_summary))

# A cycle through a table lock: s1's TRUNCATE holds its table until s1 ends (Meridian: the
# relation is owned by s1), s2 waits for it while holding a row s1 waits for.
SCENARIOS.append(("deadlock_truncate", [(1, 0), (2, 0)], [
    ("s0", "DROP TABLE IF EXISTS {t}_o"),
    ("s0", "CREATE TABLE {t}_o (id int PRIMARY KEY)"),
    ("s0", "INSERT INTO {t}_o VALUES (1)"),
    ("s1", RC), ("s2", RC),
    ("s1", "TRUNCATE {t}_o"),
    ("s2", "UPDATE {t} SET v = v + 10 WHERE id = 1"),
    ("s1", "UPDATE {t} SET v = v + 1 WHERE id = 1"),       # waits for s2
    ("s2", "SELECT count(*) FROM {t}_o"),                  # waits for s1: deadlock
    ("s1", "COMMIT"),
    ("s2", "COMMIT"),
], deadlock_summary_for({"s1": {1: 10, 2: 0}, "s2": {1: 1, 2: 0}})))


SER = "BEGIN ISOLATION LEVEL SERIALIZABLE"


def serializable_summary(outcome):
    """What PostgreSQL's users can rely on under SERIALIZABLE, where PostgreSQL (SSI) may
    raise 40001 at a different statement than Meridian, which validates reads at COMMIT
    (decision 0044): which sessions' COMMIT committed, the first error of every session
    that failed (a later 25P02 in its aborted transaction is not compared), the final
    rows, and what SHOW said. Rows seen by steps are not compared: a session PostgreSQL
    has already failed sees none."""
    steps = outcome["steps"]
    first_error = {}
    for s in steps:
        err = s["result"].get("error")
        if err and s["session"] not in first_error:
            first_error[s["session"]] = err
    return {
        "committed": sorted({s["session"] for s in steps
                             if s["sql"] == "COMMIT" and s["result"].get("tag") == "COMMIT"}),
        "first_errors": first_error,
        "show": [s["result"].get("rows") for s in steps if s["sql"].startswith("SHOW")],
        "final": outcome["final"],
    }


SCENARIOS += [(name, setup, steps, serializable_summary) for name, setup, steps in [
    ("write_skew_serializable", [(1, 1), (2, 1)], [   # today both commit: one must fail
        ("s1", SER), ("s2", SER),
        ("s1", "SHOW transaction_isolation"),
        ("s1", "SELECT count(*) FROM {t} WHERE v = 1"),
        ("s2", "SELECT count(*) FROM {t} WHERE v = 1"),
        ("s1", "UPDATE {t} SET v = 0 WHERE id = 1"),
        ("s2", "UPDATE {t} SET v = 0 WHERE id = 2"),
        ("s1", "COMMIT"), ("s2", "COMMIT"),
    ]),
    # Each counts the rows of one class and inserts into the other.
    ("predicate_anomaly_serializable", [(1, 1), (2, 2)], [
        ("s1", SER), ("s2", SER),
        ("s1", "SELECT count(*) FROM {t} WHERE v = 1"),
        ("s2", "SELECT count(*) FROM {t} WHERE v = 2"),
        ("s1", "INSERT INTO {t} (id, v) VALUES (3, 2)"),
        ("s2", "INSERT INTO {t} (id, v) VALUES (4, 1)"),
        ("s1", "COMMIT"), ("s2", "COMMIT"),
    ]),
    # PostgreSQL's isolation test read-only-anomaly-2, its second permutation (X is row 1,
    # Y row 2): once s3 (read only) has seen s1's deposit, s2 cannot commit.
    ("read_only_anomaly_serializable", [(1, 0), (2, 0)], [
        ("s1", SER), ("s2", SER), ("s3", SER),
        ("s2", "SELECT v FROM {t} WHERE id = 1"),
        ("s2", "SELECT v FROM {t} WHERE id = 2"),
        ("s1", "SELECT v FROM {t} WHERE id = 2"),
        ("s1", "UPDATE {t} SET v = 20 WHERE id = 2"),
        ("s1", "COMMIT"),
        ("s3", "SELECT id, v FROM {t} WHERE id IN (1, 2) ORDER BY id"),
        ("s2", "UPDATE {t} SET v = -11 WHERE id = 1"),
        ("s2", "COMMIT"),
        ("s3", "COMMIT"),
    ]),
    # Disjoint rows by primary key: both commit.
    ("non_conflicting_serializable", [(1, 10), (2, 20), (3, 30), (4, 40)], [
        ("s1", SER), ("s2", SER),
        ("s1", "SELECT v FROM {t} WHERE id = 1"),
        ("s2", "SELECT v FROM {t} WHERE id = 3"),
        ("s1", "UPDATE {t} SET v = 11 WHERE id = 2"),
        ("s2", "UPDATE {t} SET v = 41 WHERE id = 4"),
        ("s1", "COMMIT"), ("s2", "COMMIT"),
    ]),
    # The session default, and SET TRANSACTION.
    ("default_isolation_serializable", [(1, 1), (2, 1)], [
        ("s1", "SET default_transaction_isolation = 'serializable'"),
        ("s1", "BEGIN"),
        ("s1", "SHOW transaction_isolation"),
        ("s2", "BEGIN"),
        ("s2", "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"),
        ("s2", "SHOW transaction_isolation"),
        ("s1", "SELECT count(*) FROM {t} WHERE v = 1"),
        ("s2", "SELECT count(*) FROM {t} WHERE v = 1"),
        ("s1", "UPDATE {t} SET v = 0 WHERE id = 1"),
        ("s2", "UPDATE {t} SET v = 0 WHERE id = 2"),
        ("s2", "COMMIT"), ("s1", "COMMIT"),
    ]),
]]


def _scenario_params():
    for sc in SCENARIOS:
        name, setup, steps = sc[:3]
        summary = sc[3] if len(sc) > 3 else None
        yield pytest.param(name, setup, steps, summary, id=name)


@pytest.mark.parametrize("name, setup, steps, summary", list(_scenario_params()))
def test_isolation_matches_postgres(postgres, target, name, setup, steps, summary):
    table = f"iso_{name}"
    expected = run_scenario(postgres, table, setup, steps)
    actual = run_scenario(target, table, setup, steps)
    if summary:
        expected_view, actual_view = summary(expected), summary(actual)
    else:
        expected_view, actual_view = expected, actual
    if actual_view != expected_view:
        diffs = []
        if not summary:
            for i, (e, a) in enumerate(zip(expected["steps"], actual["steps"])):
                if e != a:
                    diffs.append(f"  step {i} {e['session']}: {e['sql']}\n"
                                 f"    PostgreSQL: blocked={e['blocked']} {e['result']}\n"
                                 f"    {target.kind}: blocked={a['blocked']} {a['result']}")
            if expected["final"] != actual["final"]:
                diffs.append(f"  final rows: PostgreSQL {expected['final']}, "
                             f"{target.kind} {actual['final']}")
        pytest.fail(
            f"scenario {name}: {target.kind} differs from PostgreSQL 15\n"
            + "".join(d + "\n" for d in diffs) +
            f"--- PostgreSQL 15\n{json.dumps(expected_view, indent=1, default=str)}\n"
            f"--- {target.kind}\n{json.dumps(actual_view, indent=1, default=str)}\n"
            f"--- raw {target.kind} outcome\n{json.dumps(actual, indent=1, default=str)}")
    if name.startswith("deadlock"):
        assert actual_view["errors"] == ["40P01"] and actual_view["victims"] == 1, actual
