"""Population of the TPC-C tables (clause 4.3.3.1) through COPY, scaled by `Scale`."""

from __future__ import annotations

import datetime
import random
import string
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import psycopg

DISTRICTS_PER_WAREHOUSE = 10
SYLLABLES = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"]
# clause 2.1.6: the run-time C for C_LAST must differ from the load-time one by 65..119
# (excluding 96 and 112); the other two may be the same.
C_LAST_LOAD, C_LAST_RUN, C_ID, OL_I_ID = 157, 223, 259, 7911


@dataclass(frozen=True)
class Scale:
    """Population sizes; the defaults are the specification's (clause 1.4.1)."""

    warehouses: int = 1
    items: int = 100_000
    customers_per_district: int = 3000
    orders_per_district: int = 3000

    @property
    def last_names(self) -> int:
        """Distinct C_LAST values in use: 1000, or fewer when there are fewer customers."""
        return min(1000, self.customers_per_district)

    @property
    def first_undelivered(self) -> int:
        """The first order id still in NEW-ORDER: the last 30 % (900 of 3000) are."""
        return self.orders_per_district - self.orders_per_district * 3 // 10 + 1


def nurand(rng: random.Random, a: int, x: int, y: int, c: int) -> int:
    """NURand(A, x, y) of clause 2.1.6."""
    return (((rng.randint(0, a) | rng.randint(x, y)) + c) % (y - x + 1)) + x


def last_name(number: int) -> str:
    """C_LAST of clause 4.3.2.3 from a number in 0..999."""
    return "".join(SYLLABLES[int(d)] for d in f"{number:03d}")


def a_string(rng: random.Random, low: int, high: int) -> str:
    return "".join(rng.choices(string.ascii_letters + string.digits, k=rng.randint(low, high)))


def n_string(rng: random.Random, length: int) -> str:
    return "".join(rng.choices(string.digits, k=length))


def zip_code(rng: random.Random) -> str:
    return n_string(rng, 4) + "11111"


def data_with_original(rng: random.Random, low: int, high: int) -> str:
    """I_DATA / S_DATA: 10 % of them hold "ORIGINAL" at a random place."""
    data = a_string(rng, low, high)
    if rng.random() < 0.1:
        at = rng.randint(0, len(data) - 8)
        data = data[:at] + "ORIGINAL" + data[at + 8:]
    return data


def address(rng: random.Random) -> tuple:
    return (a_string(rng, 10, 20), a_string(rng, 10, 20), a_string(rng, 10, 20),
            a_string(rng, 2, 2).upper(), zip_code(rng))


def _copy(conn, table: str, rows) -> None:
    with conn.cursor() as cur, cur.copy(f"COPY {table} FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def item_rows(scale: Scale, rng: random.Random):
    for i_id in range(1, scale.items + 1):
        yield (i_id, rng.randint(1, 10_000), a_string(rng, 14, 24),
               round(rng.uniform(1, 100), 2), data_with_original(rng, 26, 50))


def warehouse_rows(scale: Scale, w_id: int, rng: random.Random):
    yield (w_id, a_string(rng, 6, 10), *address(rng), round(rng.uniform(0, 0.2), 4),
           300_000)


def district_rows(scale: Scale, w_id: int, rng: random.Random):
    for d_id in range(1, DISTRICTS_PER_WAREHOUSE + 1):
        yield (d_id, w_id, a_string(rng, 6, 10), *address(rng),
               round(rng.uniform(0, 0.2), 4), 30_000, scale.orders_per_district + 1)


def stock_rows(scale: Scale, w_id: int, rng: random.Random):
    for i_id in range(1, scale.items + 1):
        yield (i_id, w_id, rng.randint(10, 100),
               *(a_string(rng, 24, 24) for _ in range(10)), 0, 0, 0,
               data_with_original(rng, 26, 50))


def customer_rows(scale: Scale, w_id: int, rng: random.Random, now: datetime.datetime):
    for d_id in range(1, DISTRICTS_PER_WAREHOUSE + 1):
        for c_id in range(1, scale.customers_per_district + 1):
            name = (c_id - 1 if c_id <= scale.last_names
                    else nurand(rng, 255, 0, scale.last_names - 1, C_LAST_LOAD))
            yield (c_id, d_id, w_id, a_string(rng, 8, 16), "OE", last_name(name),
                   *address(rng), n_string(rng, 16), now,
                   "BC" if rng.random() < 0.1 else "GC", 50_000,
                   round(rng.uniform(0, 0.5), 4), -10, 10, 1, 0, a_string(rng, 300, 500))


def history_rows(scale: Scale, w_id: int, rng: random.Random, now: datetime.datetime):
    for d_id in range(1, DISTRICTS_PER_WAREHOUSE + 1):
        for c_id in range(1, scale.customers_per_district + 1):
            yield (c_id, d_id, w_id, d_id, w_id, now, 10, a_string(rng, 12, 24))


def order_rows(scale: Scale, w_id: int, rng: random.Random, now: datetime.datetime):
    """ORDERS, ORDER-LINE and NEW-ORDER rows together: they share O_OL_CNT."""
    orders, lines, new_orders = [], [], []
    for d_id in range(1, DISTRICTS_PER_WAREHOUSE + 1):
        # O_C_ID is a random permutation of the customers (repeated when scaled so)
        customers = []
        while len(customers) < scale.orders_per_district:
            batch = list(range(1, scale.customers_per_district + 1))
            rng.shuffle(batch)
            customers += batch
        for o_id in range(1, scale.orders_per_district + 1):
            delivered = o_id < scale.first_undelivered
            ol_cnt = rng.randint(5, 15)
            orders.append((o_id, d_id, w_id, customers[o_id - 1], now,
                           rng.randint(1, 10) if delivered else None, ol_cnt, 1))
            for number in range(1, ol_cnt + 1):
                lines.append((o_id, d_id, w_id, number, rng.randint(1, scale.items), w_id,
                              now if delivered else None, 5,
                              0 if delivered else round(rng.uniform(0.01, 9999.99), 2),
                              a_string(rng, 24, 24)))
            if not delivered:
                new_orders.append((o_id, d_id, w_id))
    return orders, lines, new_orders


def _load_warehouse(dsn: str, scale: Scale, w_id: int, seed: int) -> None:
    rng = random.Random(seed * 1_000_003 + w_id)
    now = datetime.datetime.now()
    orders, lines, new_orders = order_rows(scale, w_id, rng, now)
    with psycopg.connect(dsn, autocommit=True) as conn:
        _copy(conn, "warehouse", warehouse_rows(scale, w_id, rng))
        _copy(conn, "district", district_rows(scale, w_id, rng))
        _copy(conn, "customer", customer_rows(scale, w_id, rng, now))
        _copy(conn, "history", history_rows(scale, w_id, rng, now))
        _copy(conn, "orders", orders)
        _copy(conn, "order_line", lines)
        _copy(conn, "new_order", new_orders)
        _copy(conn, "stock", stock_rows(scale, w_id, rng))


def _load_items(dsn: str, scale: Scale, seed: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        _copy(conn, "item", item_rows(scale, random.Random(seed)))


def load(dsn: str, scale: Scale, seed: int = 1, parallel: int = 4) -> None:
    """Fills the (empty) tables: the items and each warehouse on connections of their own."""
    with ThreadPoolExecutor(parallel) as pool:
        jobs = [pool.submit(_load_items, dsn, scale, seed)]
        jobs += [pool.submit(_load_warehouse, dsn, scale, w_id, seed)
                 for w_id in range(1, scale.warehouses + 1)]
        for job in jobs:
            job.result()
