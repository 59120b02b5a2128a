"""Consistency conditions 1-4 (clause 3.3.2.1-3.3.2.4), per warehouse and district."""

from __future__ import annotations


def _by_key(conn, sql) -> dict:
    return {tuple(row[:-1]): row[-1] for row in conn.execute(sql).fetchall()}


def violations(conn) -> list[str]:
    """The conditions that do not hold, described; empty when all hold."""
    found = []
    w_ytd = _by_key(conn, "SELECT w_id, w_ytd FROM warehouse")
    d_ytd = _by_key(conn, "SELECT d_w_id, sum(d_ytd) FROM district GROUP BY d_w_id")
    for key in sorted(w_ytd.keys() | d_ytd.keys()):
        if w_ytd.get(key) != d_ytd.get(key):
            found.append(f"1: warehouse {key}: W_YTD {w_ytd.get(key)} != sum(D_YTD) {d_ytd.get(key)}")
    next_o_id = _by_key(conn, "SELECT d_w_id, d_id, d_next_o_id FROM district")
    max_o_id = _by_key(conn, "SELECT o_w_id, o_d_id, max(o_id) FROM orders GROUP BY o_w_id, o_d_id")
    new_orders = {
        (w, d): (mx, mn, n) for w, d, mx, mn, n in conn.execute(
            "SELECT no_w_id, no_d_id, max(no_o_id), min(no_o_id), count(*) FROM new_order"
            " GROUP BY no_w_id, no_d_id").fetchall()}
    ol_cnt = _by_key(conn, "SELECT o_w_id, o_d_id, sum(o_ol_cnt) FROM orders GROUP BY o_w_id, o_d_id")
    lines = _by_key(conn, "SELECT ol_w_id, ol_d_id, count(*) FROM order_line"
                          " GROUP BY ol_w_id, ol_d_id")
    for key in sorted(next_o_id):
        last = next_o_id[key] - 1
        no_max, no_min, no_count = new_orders.get(key, (None, None, 0))
        if last != max_o_id.get(key) or (no_count and last != no_max):
            found.append(f"2: district {key}: D_NEXT_O_ID - 1 = {last}, max(O_ID) ="
                         f" {max_o_id.get(key)}, max(NO_O_ID) = {no_max}")
        if no_count and no_max - no_min + 1 != no_count:
            found.append(f"3: district {key}: max(NO_O_ID) - min(NO_O_ID) + 1 ="
                         f" {no_max - no_min + 1} != {no_count} rows")
        if ol_cnt.get(key) != lines.get(key):
            found.append(f"4: district {key}: sum(O_OL_CNT) {ol_cnt.get(key)} !="
                         f" {lines.get(key)} order lines")
    return found
