"""The five TPC-C transactions (clause 2.4-2.8), each one database transaction.

Rows read and then updated are read with SELECT ... FOR UPDATE. A `Rollback` is the
New-Order's intended rollback on an unused item id (clause 2.4.2.3)."""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass

from .load import C_ID, C_LAST_RUN, DISTRICTS_PER_WAREHOUSE, OL_I_ID, Scale, last_name, nurand


class Rollback(Exception):
    """New-Order met its unused item id; the transaction is rolled back."""


@dataclass
class Inputs:
    """Draws the transactions' inputs as clause 2.x.1 says, for one home warehouse."""

    scale: Scale
    w_id: int
    rng: random.Random

    def district(self) -> int:
        return self.rng.randint(1, DISTRICTS_PER_WAREHOUSE)

    def customer_id(self) -> int:
        return nurand(self.rng, 1023, 1, self.scale.customers_per_district, C_ID)

    def customer_last(self) -> str:
        return last_name(nurand(self.rng, 255, 0, self.scale.last_names - 1, C_LAST_RUN))

    def item_id(self) -> int:
        return nurand(self.rng, 8191, 1, self.scale.items, OL_I_ID)

    def other_warehouse(self) -> int:
        return self.rng.choice([w for w in range(1, self.scale.warehouses + 1) if w != self.w_id])

    def new_order(self) -> dict:
        ol_cnt = self.rng.randint(5, 15)
        rollback = self.rng.randint(1, 100) == 1
        lines = []
        for number in range(1, ol_cnt + 1):
            remote = self.scale.warehouses > 1 and self.rng.randint(1, 100) == 1
            i_id = self.scale.items + 1 if rollback and number == ol_cnt else self.item_id()
            lines.append((i_id, self.other_warehouse() if remote else self.w_id,
                          self.rng.randint(1, 10)))
        return dict(w_id=self.w_id, d_id=self.district(), c_id=self.customer_id(), lines=lines)

    def customer(self) -> dict:
        """By last name 60 %, by id 40 % (clauses 2.5.1.2, 2.6.1.2)."""
        if self.rng.randint(1, 100) <= 60:
            return dict(c_last=self.customer_last())
        return dict(c_id=self.customer_id())

    def payment(self) -> dict:
        d_id = self.district()
        if self.scale.warehouses == 1 or self.rng.randint(1, 100) <= 85:
            c_w_id, c_d_id = self.w_id, d_id
        else:
            c_w_id, c_d_id = self.other_warehouse(), self.district()
        return dict(w_id=self.w_id, d_id=d_id, c_w_id=c_w_id, c_d_id=c_d_id,
                    amount=round(self.rng.uniform(1, 5000), 2), **self.customer())

    def order_status(self) -> dict:
        return dict(w_id=self.w_id, d_id=self.district(), **self.customer())

    def delivery(self) -> dict:
        return dict(w_id=self.w_id, carrier_id=self.rng.randint(1, 10))

    def stock_level(self, d_id: int) -> dict:
        """Each terminal has its own district for Stock-Level (clause 2.8.1.1)."""
        return dict(w_id=self.w_id, d_id=d_id, threshold=self.rng.randint(10, 20))


def _one(cur, sql, params):
    cur.execute(sql, params)
    return cur.fetchone()


def _customer_id(cur, w_id, d_id, c_id=None, c_last=None) -> int:
    """By id, or the one at position ceil(n / 2) of those with that last name ordered by
    C_FIRST (clause 2.5.2.2)."""
    if c_id is not None:
        return c_id
    cur.execute("SELECT c_id FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_last = %s"
                " ORDER BY c_first", (w_id, d_id, c_last))
    ids = [row[0] for row in cur.fetchall()]
    if not ids:
        raise LookupError(f"no customer named {c_last} in warehouse {w_id} district {d_id}")
    return ids[(len(ids) + 1) // 2 - 1]


def new_order(cur, w_id, d_id, c_id, lines) -> None:
    (w_tax,) = _one(cur, "SELECT w_tax FROM warehouse WHERE w_id = %s", (w_id,))
    d_tax, o_id = _one(cur, "SELECT d_tax, d_next_o_id FROM district"
                            " WHERE d_w_id = %s AND d_id = %s FOR UPDATE", (w_id, d_id))
    cur.execute("UPDATE district SET d_next_o_id = d_next_o_id + 1"
                " WHERE d_w_id = %s AND d_id = %s", (w_id, d_id))
    c_discount, _c_last, _c_credit = _one(
        cur, "SELECT c_discount, c_last, c_credit FROM customer"
             " WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s", (w_id, d_id, c_id))
    all_local = int(all(supply == w_id for _, supply, _ in lines))
    cur.execute("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id,"
                " o_ol_cnt, o_all_local) VALUES (%s, %s, %s, %s, %s, NULL, %s, %s)",
                (o_id, d_id, w_id, c_id, datetime.datetime.now(), len(lines), all_local))
    cur.execute("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (%s, %s, %s)",
                (o_id, d_id, w_id))
    for number, (i_id, supply_w_id, quantity) in enumerate(lines, start=1):
        item = _one(cur, "SELECT i_price, i_name, i_data FROM item WHERE i_id = %s", (i_id,))
        if item is None:
            raise Rollback(f"item {i_id} is unused")
        i_price = item[0]
        s_quantity, s_dist = _one(
            cur, f"SELECT s_quantity, s_dist_{d_id:02d} FROM stock"
                 " WHERE s_w_id = %s AND s_i_id = %s FOR UPDATE", (supply_w_id, i_id))
        s_quantity = s_quantity - quantity if s_quantity - quantity >= 10 \
            else s_quantity - quantity + 91
        cur.execute("UPDATE stock SET s_quantity = %s, s_ytd = s_ytd + %s,"
                    " s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + %s"
                    " WHERE s_w_id = %s AND s_i_id = %s",
                    (s_quantity, quantity, int(supply_w_id != w_id), supply_w_id, i_id))
        cur.execute("INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id,"
                    " ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)"
                    " VALUES (%s, %s, %s, %s, %s, %s, NULL, %s, %s, %s)",
                    (o_id, d_id, w_id, number, i_id, supply_w_id, quantity,
                     quantity * i_price, s_dist))
    # the total, w_tax, d_tax and c_discount are the terminal's output (clause 2.4.3.3)
    _ = (w_tax, d_tax, c_discount)


def payment(cur, w_id, d_id, c_w_id, c_d_id, amount, c_id=None, c_last=None) -> None:
    _one(cur, "SELECT w_name, w_street_1, w_city, w_state, w_zip FROM warehouse"
              " WHERE w_id = %s FOR UPDATE", (w_id,))
    cur.execute("UPDATE warehouse SET w_ytd = w_ytd + %s WHERE w_id = %s", (amount, w_id))
    _one(cur, "SELECT d_name, d_street_1, d_city, d_state, d_zip FROM district"
              " WHERE d_w_id = %s AND d_id = %s FOR UPDATE", (w_id, d_id))
    cur.execute("UPDATE district SET d_ytd = d_ytd + %s WHERE d_w_id = %s AND d_id = %s",
                (amount, w_id, d_id))
    c_id = _customer_id(cur, c_w_id, c_d_id, c_id, c_last)
    c_credit, c_data = _one(cur, "SELECT c_credit, c_data FROM customer"
                                 " WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s FOR UPDATE",
                            (c_w_id, c_d_id, c_id))
    if c_credit == "BC":
        c_data = f"{c_id} {c_d_id} {c_w_id} {d_id} {w_id} {amount:.2f} {c_data}"[:500]
    cur.execute("UPDATE customer SET c_balance = c_balance - %s,"
                " c_ytd_payment = c_ytd_payment + %s, c_payment_cnt = c_payment_cnt + 1,"
                " c_data = %s WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
                (amount, amount, c_data, c_w_id, c_d_id, c_id))
    cur.execute("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date,"
                " h_amount, h_data) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (c_id, c_d_id, c_w_id, d_id, w_id, datetime.datetime.now(), amount,
                 f"{w_id}    {d_id}"))


def order_status(cur, w_id, d_id, c_id=None, c_last=None) -> None:
    c_id = _customer_id(cur, w_id, d_id, c_id, c_last)
    _one(cur, "SELECT c_balance, c_first, c_middle, c_last FROM customer"
              " WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s", (w_id, d_id, c_id))
    order = _one(cur, "SELECT o_id, o_entry_d, o_carrier_id FROM orders"
                      " WHERE o_w_id = %s AND o_d_id = %s AND o_c_id = %s"
                      " ORDER BY o_id DESC LIMIT 1", (w_id, d_id, c_id))
    if order is not None:
        cur.execute("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d"
                    " FROM order_line WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s",
                    (w_id, d_id, order[0]))
        cur.fetchall()


def delivery(cur, w_id, carrier_id) -> None:
    """All ten districts in one database transaction (clause 2.7.4 allows it)."""
    now = datetime.datetime.now()
    for d_id in range(1, DISTRICTS_PER_WAREHOUSE + 1):
        row = _one(cur, "SELECT no_o_id FROM new_order WHERE no_w_id = %s AND no_d_id = %s"
                        " ORDER BY no_o_id LIMIT 1 FOR UPDATE", (w_id, d_id))
        if row is None:
            continue  # skipped, as clause 2.7.4.2 allows
        (o_id,) = row
        cur.execute("DELETE FROM new_order WHERE no_w_id = %s AND no_d_id = %s"
                    " AND no_o_id = %s", (w_id, d_id, o_id))
        (c_id,) = _one(cur, "SELECT o_c_id FROM orders WHERE o_w_id = %s AND o_d_id = %s"
                            " AND o_id = %s FOR UPDATE", (w_id, d_id, o_id))
        cur.execute("UPDATE orders SET o_carrier_id = %s WHERE o_w_id = %s AND o_d_id = %s"
                    " AND o_id = %s", (carrier_id, w_id, d_id, o_id))
        cur.execute("UPDATE order_line SET ol_delivery_d = %s WHERE ol_w_id = %s"
                    " AND ol_d_id = %s AND ol_o_id = %s", (now, w_id, d_id, o_id))
        (total,) = _one(cur, "SELECT sum(ol_amount) FROM order_line WHERE ol_w_id = %s"
                             " AND ol_d_id = %s AND ol_o_id = %s", (w_id, d_id, o_id))
        cur.execute("UPDATE customer SET c_balance = c_balance + %s,"
                    " c_delivery_cnt = c_delivery_cnt + 1"
                    " WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
                    (total, w_id, d_id, c_id))


def stock_level(cur, w_id, d_id, threshold) -> None:
    (next_o_id,) = _one(cur, "SELECT d_next_o_id FROM district WHERE d_w_id = %s"
                             " AND d_id = %s", (w_id, d_id))
    # two statements, each an index access, rather than a join Meridian plans as a
    # nested loop over whole tables
    cur.execute("SELECT DISTINCT ol_i_id FROM order_line WHERE ol_w_id = %s AND ol_d_id = %s"
                " AND ol_o_id < %s AND ol_o_id >= %s", (w_id, d_id, next_o_id, next_o_id - 20))
    items = [row[0] for row in cur.fetchall()]
    _one(cur, "SELECT count(*) FROM stock WHERE s_w_id = %s AND s_i_id = ANY(%s)"
              " AND s_quantity < %s", (w_id, items, threshold))


TRANSACTIONS = {
    "new_order": new_order,
    "payment": payment,
    "order_status": order_status,
    "delivery": delivery,
    "stock_level": stock_level,
}
