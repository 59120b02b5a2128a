"""N terminals running the standard mix (clause 5.2.3) for a duration, without keying or
think time. Each transaction is retried on 40001/40P01; retries are counted."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import psycopg

from . import transactions
from .load import DISTRICTS_PER_WAREHOUSE, Scale
from .transactions import Inputs, Rollback

MIX = {"new_order": 45, "payment": 43, "order_status": 4, "delivery": 4, "stock_level": 4}
RETRYABLE = {"40001", "40P01"}
MAX_ATTEMPTS = 20
# a terminal still inside a transaction this long after the end is reported as hung
HANG_SECONDS = 30


@dataclass
class Results:
    seconds: float = 0.0
    committed: Counter = field(default_factory=Counter)
    rollbacks: int = 0  # New-Order's intended 1 %
    retries: Counter = field(default_factory=Counter)
    errors: list = field(default_factory=list)  # (type, SQLSTATE or class, message, input)
    running: dict = field(default_factory=dict)  # terminal -> (type, input) in progress

    @property
    def tpmc(self) -> float:
        return self.committed["new_order"] * 60 / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        types = ", ".join(f"{t} {self.committed[t]}" for t in MIX)
        return (f"{self.tpmc:.0f} tpmC in {self.seconds:.0f} s; committed: {types};"
                f" New-Order rollbacks {self.rollbacks}; retries {sum(self.retries.values())}"
                f" {dict(self.retries)}; errors {len(self.errors)}")


def _input(inputs: Inputs, kind: str, stock_district: int) -> dict:
    if kind == "stock_level":
        return inputs.stock_level(stock_district)
    return getattr(inputs, kind)()


def _terminal(dsn: str, scale: Scale, number: int, deadline: float, seed: int,
              results: Results, lock: threading.Lock) -> None:
    rng = random.Random(seed * 7919 + number)
    inputs = Inputs(scale, number % scale.warehouses + 1, rng)
    stock_district = number // scale.warehouses % DISTRICTS_PER_WAREHOUSE + 1
    kinds, weights = list(MIX), list(MIX.values())
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            kind = rng.choices(kinds, weights)[0]
            params = _input(inputs, kind, stock_district)
            with lock:
                results.running[number] = (kind, params)
            outcome, retries = _run(conn, kind, params)
            with lock:
                del results.running[number]
                results.retries[kind] += retries
                if outcome == "committed":
                    results.committed[kind] += 1
                elif outcome == "rollback":
                    results.rollbacks += 1
                else:
                    results.errors.append((kind, *outcome, params))


def _run(conn, kind: str, params: dict):
    """('committed' | 'rollback' | (sqlstate, message), retries)."""
    for attempt in range(MAX_ATTEMPTS):
        try:
            with conn.transaction(), conn.cursor() as cur:
                transactions.TRANSACTIONS[kind](cur, **params)
            return "committed", attempt
        except Rollback:
            return "rollback", attempt
        except psycopg.Error as e:
            if e.sqlstate not in RETRYABLE:
                return (e.sqlstate, str(e).strip()), attempt
            last = (e.sqlstate, str(e).strip())
        except Exception as e:  # a wrong answer (no row where one must be): an error
            return (type(e).__name__, str(e)), attempt
    return last, MAX_ATTEMPTS


def run(dsn: str, scale: Scale, terminals: int, seconds: float, seed: int = 1) -> Results:
    results, lock = Results(), threading.Lock()
    start = time.monotonic()
    threads = [threading.Thread(target=_terminal, daemon=True,
                                args=(dsn, scale, n, start + seconds, seed, results, lock))
               for n in range(terminals)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, start + seconds + HANG_SECONDS - time.monotonic()))
    results.seconds = time.monotonic() - start
    with lock:
        if results.running:  # the wait for hung terminals is no part of the measurement
            results.seconds = seconds
        results.errors += [(kind, "hung", f"terminal {n} still running after"
                            f" {results.seconds:.0f} s", params)
                           for n, (kind, params) in results.running.items()]
    return results
