"""pgbench 15 against the server under test.

1. initialisation: ``-i -s 10``, ``-i -s 10 -I dtGvp``, ``-i -s 10 -F 90`` (row counts);
2. builtin scripts tpcb-like / ``-N`` / ``-S`` x ``-M simple|extended|prepared`` with
   ``-c 16 -j 2 -T $MERIDIAN_PGBENCH_SECONDS`` (default 10): zero failed transactions,
   then the TPC-B invariant sum(abalance) = sum(tbalance) = sum(bbalance) =
   sum(pgbench_history.delta) for the changes made by tpcb-like (``-N`` updates only
   accounts + history, so there sum(abalance) = sum(delta) and tellers/branches stay put),
   and as many new history rows as processed transactions;
3. a custom script (\\set with random/random_zipfian/random_gaussian/arithmetic, \\sleep,
   \\gset, \\aset, \\if, a \\startpipeline ... \\endpipeline TPC-B transaction) in
   ``-M extended`` and ``-M prepared``.

Runs use ``-n`` so the history is never truncated and the invariant holds from the
initialisation on; the last test runs without ``-n`` (pgbench's own vacuum + truncate
start-up path) and checks the invariant relative to the state before it.
"""

import os
import re
import subprocess
from pathlib import Path

import psycopg
import pytest

from conftest import pg_tool

SCALE = 10
SECONDS = int(os.environ.get("MERIDIAN_PGBENCH_SECONDS", "10"))
CUSTOM_SCRIPT = Path(__file__).parent / "pgbench" / "custom_tpcb_pipeline.sql"

# Whether pgbench_history holds every transaction since the last initialisation (false
# after a run without -n, which truncates it).
_state = {"history_complete": True}


def pgbench(server, *args, timeout):
    cmd = [pg_tool("pgbench"), "-h", server.host, "-p", str(server.port), "-U", "postgres",
           *args, "postgres"]
    env = dict(os.environ, PGCONNECT_TIMEOUT="10")
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} did not finish within {timeout}s\n"
                    f"stdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    out = f"$ {' '.join(cmd)}\nexit={res.returncode}\n--- stdout\n{res.stdout}\n--- stderr\n{res.stderr}"
    return res.returncode, res.stdout + res.stderr, out


def counts(server):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        return {t: c.execute(f"SELECT count(*) FROM pgbench_{t}").fetchone()[0]
                for t in ("accounts", "tellers", "branches", "history")}


def sums(server):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        a = c.execute("SELECT sum(abalance) FROM pgbench_accounts").fetchone()[0]
        t = c.execute("SELECT sum(tbalance) FROM pgbench_tellers").fetchone()[0]
        b = c.execute("SELECT sum(bbalance) FROM pgbench_branches").fetchone()[0]
        h = c.execute("SELECT coalesce(sum(delta), 0) FROM pgbench_history").fetchone()[0]
        hc = c.execute("SELECT count(*) FROM pgbench_history").fetchone()[0]
    return {"accounts": int(a), "tellers": int(t), "branches": int(b),
            "history_delta": int(h), "history_count": int(hc)}


def parse_run(output, log):
    m = re.search(r"number of transactions actually processed: (\d+)", output)
    assert m, f"no 'transactions actually processed' line\n{log}"
    processed = int(m.group(1))
    m = re.search(r"number of failed transactions: (\d+)", output)
    assert m, f"no 'number of failed transactions' line\n{log}"
    failed = int(m.group(1))
    return processed, failed


def init(server, *extra):
    rc, output, log = pgbench(server, "-i", "-s", str(SCALE), "-q", *extra, timeout=1200)
    assert rc == 0, f"pgbench initialisation failed\n{log}"
    _state["history_complete"] = True
    return log


@pytest.fixture(scope="module")
def bench(target):
    """The shared server with a scale-10 pgbench database (initialised once)."""
    try:
        initialised = counts(target)["branches"] == SCALE
    except psycopg.Error:
        initialised = False
    if not initialised:
        init(target)
    return target


@pytest.mark.parametrize("extra", [[], ["-I", "dtGvp"], ["-F", "90"]],
                         ids=["default", "I-dtGvp", "F90"])
def test_init(target, extra):
    log = init(target, *extra)
    assert counts(target) == {"accounts": 100000 * SCALE, "tellers": 10 * SCALE,
                              "branches": SCALE, "history": 0}, log
    s = sums(target)
    assert s == {"accounts": 0, "tellers": 0, "branches": 0, "history_delta": 0,
                 "history_count": 0}, log
    if extra == ["-F", "90"]:
        with psycopg.connect(target.dsn, autocommit=True) as c:
            n = c.execute("SELECT count(*) FROM pgbench_accounts WHERE aid BETWEEN 1 AND 1000"
                          ).fetchone()[0]
        assert n == 1000


def check_invariant(before, after, processed, kind, log):
    """kind: "tpcb" (accounts+tellers+branches+history), "N" (accounts+history) or "S"."""
    d = {k: after[k] - before[k] for k in after}
    # Cumulative: tellers and branches always change together; accounts match history.
    assert after["tellers"] == after["branches"], (
        f"sum(tbalance) != sum(bbalance): {after}\n{log}")
    if _state["history_complete"]:
        assert after["accounts"] == after["history_delta"], (
            f"sum(abalance) != sum(pgbench_history.delta): {after}\n{log}")
    if kind == "tpcb":
        assert d["accounts"] == d["tellers"] == d["branches"] == d["history_delta"], (
            f"TPC-B invariant broken by this run: changes {d}\n{log}")
    elif kind == "N":
        # -N (simple-update) updates only pgbench_accounts and inserts history
        assert d["accounts"] == d["history_delta"] and d["tellers"] == d["branches"] == 0, (
            f"invariant broken by this -N run: changes {d}\n{log}")
    if kind == "S":
        assert after == before, f"select-only run changed data: {before} -> {after}\n{log}"
    else:
        assert d["history_count"] == processed, (
            f"{processed} transactions processed but {d['history_count']} history rows added\n{log}")


BUILTINS = {"tpcb-like": ["-b", "tpcb-like"], "N": ["-N"], "S": ["-S"]}


@pytest.mark.parametrize("mode", ["simple", "extended", "prepared"])
@pytest.mark.parametrize("script", list(BUILTINS))
def test_builtin_run(bench, script, mode):
    before = sums(bench)
    rc, output, log = pgbench(bench, "-n", "-c", "16", "-j", "2", "-T", str(SECONDS),
                              "-M", mode, *BUILTINS[script], timeout=SECONDS + 300)
    assert rc == 0, f"pgbench failed\n{log}"
    processed, failed = parse_run(output, log)
    assert failed == 0, f"{failed} failed transactions\n{log}"
    assert processed > 0, f"no transaction processed\n{log}"
    assert "aborted" not in output, log
    check_invariant(before, sums(bench), processed,
                    kind={"tpcb-like": "tpcb"}.get(script, script), log=log)


@pytest.mark.parametrize("mode", ["extended", "prepared"])
def test_custom_script_with_pipeline(bench, mode):
    before = sums(bench)
    secs = max(3, SECONDS // 2)
    rc, output, log = pgbench(bench, "-n", "-c", "4", "-j", "2", "-T", str(secs), "-M", mode,
                              "-f", str(CUSTOM_SCRIPT), timeout=secs + 300)
    assert rc == 0, f"pgbench failed\n{log}"
    processed, failed = parse_run(output, log)
    assert failed == 0, f"{failed} failed transactions\n{log}"
    assert processed > 0, f"no transaction processed\n{log}"
    check_invariant(before, sums(bench), processed, kind="tpcb", log=log)


def test_run_without_n_vacuums_and_truncates_history(bench):
    """pgbench's default start-up: vacuum branches/tellers, truncate history."""
    before = sums(bench)
    rc, output, log = pgbench(bench, "-c", "2", "-j", "1", "-t", "50", "-M", "extended",
                              timeout=300)
    assert rc == 0, f"pgbench failed\n{log}"
    processed, failed = parse_run(output, log)
    assert failed == 0 and processed == 100, log
    after = sums(bench)
    _state["history_complete"] = False
    assert after["history_count"] == 100, f"history was not truncated first: {after}\n{log}"
    d = {k: after[k] - before[k] for k in ("accounts", "tellers", "branches")}
    assert d["accounts"] == d["tellers"] == d["branches"] == after["history_delta"], (
        f"TPC-B invariant broken by this run: before {before} after {after}\n{log}")
