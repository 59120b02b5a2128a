"""TPC-C on the server under test (issue 31, acceptance 2): a scaled-down load of two
warehouses, eight terminals running the standard mix for a minute, the consistency
conditions 1-4 afterwards, index access for every statement the transactions issue,
and the specification's foreign keys: added over the loaded rows (which checks them),
then enforced.

The same file runs unchanged on PostgreSQL 15 (MERIDIAN_TEST_TARGETS=postgres), which
validates the driver itself."""

from __future__ import annotations

import random

import psycopg
import pytest

from tpcc import consistency, driver, load, schema, transactions

SCALE = load.Scale(warehouses=2, items=2000, customers_per_district=300,
                   orders_per_district=300)
TERMINALS = 8
SECONDS = 60


@pytest.fixture(scope="module")
def loaded(target):
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        schema.create(conn)
    load.load(target.dsn, SCALE)
    return target


def test_loaded_population(loaded):
    """The loader's rows are the specification's, at this scale."""
    with psycopg.connect(loaded.dsn, autocommit=True) as conn:
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                  for t in schema.TABLES}
        original = conn.execute("SELECT count(*) FROM item WHERE i_data LIKE '%ORIGINAL%'"
                                ).fetchone()[0]
        assert consistency.violations(conn) == []
    districts = SCALE.warehouses * load.DISTRICTS_PER_WAREHOUSE
    assert counts["warehouse"] == SCALE.warehouses
    assert counts["district"] == districts
    assert counts["customer"] == counts["history"] == districts * SCALE.customers_per_district
    assert counts["orders"] == districts * SCALE.orders_per_district
    assert counts["new_order"] == districts * SCALE.orders_per_district * 3 // 10
    assert counts["item"] == SCALE.items
    assert counts["stock"] == SCALE.warehouses * SCALE.items
    assert 5 * counts["orders"] <= counts["order_line"] <= 15 * counts["orders"]
    assert 0.05 * SCALE.items < original < 0.15 * SCALE.items


def test_terminals_keep_the_database_consistent(loaded):
    results = driver.run(loaded.dsn, SCALE, TERMINALS, SECONDS)
    print(results.summary())
    assert results.errors == [], results.summary()
    assert all(results.committed[kind] > 0 for kind in driver.MIX), results.summary()
    # 1 % of New-Orders roll back: none in 1000 has a chance of e**-10
    assert results.rollbacks > 0 or results.committed["new_order"] < 1000, results.summary()
    with psycopg.connect(loaded.dsn, autocommit=True) as conn:
        assert consistency.violations(conn) == []


class RecordingCursor:
    """Runs statements and keeps each distinct one with the parameters it first had."""

    def __init__(self, cur):
        self.cur, self.statements = cur, {}

    def execute(self, sql, params=None):
        self.statements.setdefault(sql, params)
        return self.cur.execute(sql, params)

    def __getattr__(self, name):
        return getattr(self.cur, name)


def issued_statements(dsn) -> dict:
    """Every statement of the five transactions with representative parameters: each
    transaction once per way of choosing its customer, rolled back."""
    inputs = transactions.Inputs(SCALE, 1, random.Random(5))
    calls = [("new_order", inputs.new_order()),
             ("payment", {**inputs.payment(), "c_id": None, "c_last": load.last_name(7)}),
             ("payment", {**inputs.payment(), "c_id": 7, "c_last": None}),
             ("order_status", {**inputs.order_status(), "c_id": None,
                               "c_last": load.last_name(7)}),
             ("order_status", {**inputs.order_status(), "c_id": 7, "c_last": None}),
             ("delivery", inputs.delivery()),
             ("stock_level", inputs.stock_level(1))]
    statements = {}
    with psycopg.connect(dsn) as conn:
        for kind, params in calls:
            recorder = RecordingCursor(conn.cursor())
            transactions.TRANSACTIONS[kind](recorder, **params)
            conn.rollback()
            for sql, args in recorder.statements.items():
                statements.setdefault(sql, args)
    return statements


def seq_scans(plan: list[str]) -> set[str]:
    return {line.split("Seq Scan on ")[1].split()[0] for line in plan if "Seq Scan on " in line}


def plans(target, statements: dict) -> dict:
    """Each statement's EXPLAIN, as lines."""
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        if target.kind == "postgres":
            # PostgreSQL rightly prefers a Seq Scan over tables this small
            conn.execute("SET enable_seqscan = off")
        cur = psycopg.ClientCursor(conn)
        return {sql: [row[0] for row in cur.execute("EXPLAIN " + cur.mogrify(sql, params))]
                for sql, params in statements.items()}


def test_every_statement_uses_index_access(loaded):
    statements = issued_statements(loaded.dsn)
    assert len(statements) >= 25, statements
    full_scans = {sql: plan for sql, plan in plans(loaded, statements).items() if seq_scans(plan)}
    assert full_scans == {}


def test_statements_read_what_the_best_index_gives(loaded):
    """A customer by last name is found through customer_name, which pins three of the
    conditions' columns (the primary key pins two: the whole district), and Delivery's
    oldest NEW-ORDER of a district is the first row of its key range, read unsorted."""
    statements = issued_statements(loaded.dsn)
    by_name = {sql: p for sql, p in statements.items() if "c_last = %s" in sql}
    oldest = {sql: p for sql, p in statements.items()
              if sql.startswith("SELECT no_o_id FROM new_order")}
    assert len(by_name) == 1 and len(oldest) == 1, statements
    for sql, plan in plans(loaded, by_name | oldest).items():
        if sql in by_name:
            assert any("using customer_name on customer" in line for line in plan), plan
        else:
            assert not any("Sort" in line for line in plan), plan


def test_foreign_keys(loaded):
    with psycopg.connect(loaded.dsn, autocommit=True) as conn:
        for sql in schema.FOREIGN_KEYS:
            conn.execute(sql)
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            conn.execute("INSERT INTO new_order (no_o_id, no_d_id, no_w_id)"
                         " VALUES (999999, 1, 1)")
