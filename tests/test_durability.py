"""Crash durability: acknowledged commits survive SIGKILL, nothing partial is visible.

Eight client threads (psycopg 3) run TPC-B-like transactions, each in its own
transaction (update account, teller, branch; insert a history row whose id the client
chooses).  Every transaction is classified by what the client saw:

* acked      -- COMMIT returned successfully: its history row must survive any crash;
* in doubt   -- COMMIT was sent but no answer came back (the server died): may or may not
                be there, but if it is there it is there whole;
* not sent   -- the transaction failed or was cut off before COMMIT was sent: must not be
                visible at all.

The server is SIGKILLed at a random moment in each of MERIDIAN_DURABILITY_CYCLES (default
4, at least 3) cycles and restarted on the same data directory.  After each restart:
every acked row is present with the values sent, no not-sent row is present, every
account/teller/branch balance equals the sum of the history deltas that touch it, and
sum(abalance) = sum(tbalance) = sum(bbalance) = sum(delta).
"""

import os
import random
import threading
import time
from collections import defaultdict

import psycopg

THREADS = 8
CYCLES = max(3, int(os.environ.get("MERIDIAN_DURABILITY_CYCLES", "4")))
BRANCHES, TELLERS, ACCOUNTS = 4, 40, 4000
SEED = int(os.environ.get("MERIDIAN_TEST_SEED", str(int(time.time()))))

SCHEMA = [
    "CREATE TABLE dur_branches (bid int PRIMARY KEY, bbalance bigint NOT NULL)",
    "CREATE TABLE dur_tellers (tid int PRIMARY KEY, bid int NOT NULL, tbalance bigint NOT NULL)",
    "CREATE TABLE dur_accounts (aid int PRIMARY KEY, bid int NOT NULL, abalance bigint NOT NULL)",
    "CREATE TABLE dur_history (hid bigint PRIMARY KEY, tid int NOT NULL, bid int NOT NULL,"
    " aid int NOT NULL, delta int NOT NULL)",
]


def load_schema(server):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        for stmt in SCHEMA:
            c.execute(stmt)
        c.execute("INSERT INTO dur_branches (bid, bbalance) VALUES "
                  + ",".join(f"({b}, 0)" for b in range(1, BRANCHES + 1)))
        c.execute("INSERT INTO dur_tellers (tid, bid, tbalance) VALUES "
                  + ",".join(f"({t}, {(t - 1) % BRANCHES + 1}, 0)" for t in range(1, TELLERS + 1)))
        for start in range(1, ACCOUNTS + 1, 1000):
            c.execute("INSERT INTO dur_accounts (aid, bid, abalance) VALUES "
                      + ",".join(f"({a}, {(a - 1) % BRANCHES + 1}, 0)"
                                 for a in range(start, min(start + 1000, ACCOUNTS + 1))))


class Ledger:
    """What the clients know about every transaction they attempted."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = {}      # hid -> (tid, bid, aid, delta)
        self.in_doubt = {}   # hid -> (tid, bid, aid, delta)
        self.not_sent = {}   # hid -> (tid, bid, aid, delta)
        self.errors = []     # unexpected errors while the server was up

    def add(self, kind, hid, row):
        with self.lock:
            getattr(self, kind)[hid] = row


def worker(server, thread_no, cycle, ledger, killing, rng_seed):
    rng = random.Random(rng_seed)
    try:
        conn = psycopg.connect(server.dsn, autocommit=False)
    except psycopg.Error as e:
        ledger.errors.append(f"thread {thread_no}: connect failed: {e!r}")
        return
    try:
        run_transactions(conn, thread_no, cycle, ledger, killing, rng)
    finally:
        conn.close()


def run_transactions(conn, thread_no, cycle, ledger, killing, rng):
    """Run transactions until the server dies under us (bounded by a time limit)."""
    seq = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        seq += 1
        hid = (cycle * 100 + thread_no) * 1_000_000 + seq
        aid = rng.randint(1, ACCOUNTS)
        tid = rng.randint(1, TELLERS)
        bid = (tid - 1) % BRANCHES + 1
        delta = rng.randint(-5000, 5000)
        row = (tid, bid, aid, delta)
        try:
            conn.execute("UPDATE dur_accounts SET abalance = abalance + %s WHERE aid = %s",
                         (delta, aid))
            conn.execute("UPDATE dur_tellers SET tbalance = tbalance + %s WHERE tid = %s",
                         (delta, tid))
            conn.execute("UPDATE dur_branches SET bbalance = bbalance + %s WHERE bid = %s",
                         (delta, bid))
            conn.execute("INSERT INTO dur_history (hid, tid, bid, aid, delta) "
                         "VALUES (%s, %s, %s, %s, %s)", (hid, tid, bid, aid, delta))
        except psycopg.Error as e:
            ledger.add("not_sent", hid, row)
            if e.sqlstate in ("40001", "40P01"):  # allowed concurrency aborts
                try:
                    conn.rollback()
                    continue
                except psycopg.Error:
                    return
            if not killing.is_set():  # the kill had not started: a real error
                ledger.errors.append(f"thread {thread_no}: {e.sqlstate} {e!r}")
            return  # server gone (or unexpected error): this cycle is over
        try:
            conn.commit()
        except psycopg.Error as e:
            if e.sqlstate is not None and not conn.closed:
                # the server answered COMMIT with an error: definitely not committed
                ledger.add("not_sent", hid, row)
                if e.sqlstate not in ("40001", "40P01"):
                    ledger.errors.append(f"thread {thread_no}: COMMIT {e.sqlstate} {e}")
                continue
            ledger.add("in_doubt", hid, row)
            if not killing.is_set():
                ledger.errors.append(f"thread {thread_no}: COMMIT failed: {e!r}")
            return
        ledger.add("acked", hid, row)


def verify(server, ledger, cycle):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        history = {r[0]: tuple(r[1:]) for r in
                   c.execute("SELECT hid, tid, bid, aid, delta FROM dur_history")}
        accounts = dict(c.execute("SELECT aid, abalance FROM dur_accounts").fetchall())
        tellers = dict(c.execute("SELECT tid, tbalance FROM dur_tellers").fetchall())
        branches = dict(c.execute("SELECT bid, bbalance FROM dur_branches").fetchall())
    where = f"after crash/restart #{cycle} (seed {SEED})"
    missing = [h for h in ledger.acked if h not in history]
    assert not missing, (f"{len(missing)} acknowledged commits lost {where}, "
                         f"e.g. {missing[:5]}")
    wrong = [h for h, row in ledger.acked.items() if history[h] != row]
    assert not wrong, f"history rows differ from what was committed {where}: {wrong[:5]}"
    ghosts = [h for h in history if h in ledger.not_sent]
    assert not ghosts, (f"{len(ghosts)} transactions that never sent COMMIT are visible "
                        f"{where}, e.g. {ghosts[:5]}")
    unknown = [h for h in history if h not in ledger.acked and h not in ledger.in_doubt]
    assert not unknown, f"history rows nobody committed {where}: {unknown[:5]}"
    for h in ledger.in_doubt:
        if h in history:
            assert history[h] == ledger.in_doubt[h], f"in-doubt row {h} has wrong values {where}"
    assert len(accounts) == ACCOUNTS and len(tellers) == TELLERS and len(branches) == BRANCHES
    per = {"account": defaultdict(int), "teller": defaultdict(int), "branch": defaultdict(int)}
    for tid, bid, aid, delta in history.values():
        per["account"][aid] += delta
        per["teller"][tid] += delta
        per["branch"][bid] += delta
    for name, table in (("account", accounts), ("teller", tellers), ("branch", branches)):
        bad = [(k, v, per[name][k]) for k, v in table.items() if v != per[name][k]]
        assert not bad, (f"{len(bad)} {name} balances do not match their history rows {where} "
                         f"(partial transaction visible?): (id, balance, sum of deltas) {bad[:5]}")
    total = sum(d for *_, d in history.values())
    assert sum(accounts.values()) == sum(tellers.values()) == sum(branches.values()) == total
    return len(history)


def test_kill9_durability(meridian):
    rng = random.Random(SEED)
    load_schema(meridian)
    ledger = Ledger()
    history_rows = 0
    for cycle in range(1, CYCLES + 1):
        acked_before = len(ledger.acked)
        killing = threading.Event()
        threads = [threading.Thread(target=worker, daemon=True,
                                    args=(meridian, n, cycle, ledger, killing, rng.random()))
                   for n in range(THREADS)]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(1.5, 4.0))
        killing.set()  # from here on connection errors are expected
        meridian.kill9()  # threads end when they notice the server is gone
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads), "client threads hang after SIGKILL"
        assert not ledger.errors, f"unexpected errors while the server was up: {ledger.errors[:5]}"
        acked_now = len(ledger.acked) - acked_before
        assert acked_now > 0, f"cycle {cycle}: no transaction was acknowledged before the kill"
        meridian.restart()
        history_rows = verify(meridian, ledger, cycle)
        assert history_rows >= len(ledger.acked)
    # a clean restart after all that must show the same data
    meridian.stop()
    meridian.restart()
    assert verify(meridian, ledger, "final clean restart") == history_rows
