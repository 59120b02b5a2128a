#!/usr/bin/env python3
"""Chart for bench/results/gtm.md: throughput (median of runs) and p99 latency vs open
transactions. Usage: plot.py gtm.csv gtm.png"""
import csv
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

src, dst = sys.argv[1], sys.argv[2]
runs = defaultdict(list)
for row in csv.DictReader(open(src)):
    runs[(row["system"], int(row["open_txns"]))].append(row)

labels = {
    "x2-list": "Postgres-X2-style list scan (baseline)",
    "meridian-local": "Meridian GTM, in-process",
    "meridian-tcp": "Meridian GTM, loopback + batching",
}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
for system, label in labels.items():
    ns = sorted(n for (s, n) in runs if s == system)
    if not ns:
        continue
    med = []
    p99 = []
    for n in ns:
        rs = sorted(runs[(system, n)], key=lambda r: float(r["txn_per_s"]))
        mid = rs[len(rs) // 2]
        med.append(float(mid["txn_per_s"]))
        p99.append(float(mid["p99_us"]))
    ax1.plot(ns, med, marker="o", label=label)
    ax2.plot(ns, p99, marker="o", label=label)
for ax in (ax1, ax2):
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("concurrently open transactions")
    ax.grid(True, which="both", alpha=0.3)
ax1.set_ylabel("begin+snapshot+commit per second (median of runs)")
ax1.set_title("Throughput vs open transactions")
ax2.set_ylabel("p99 latency per transaction (µs)")
ax2.set_title("p99 latency vs open transactions")
ax1.legend(fontsize=8)
fig.tight_layout()
fig.savefig(dst, dpi=110)
