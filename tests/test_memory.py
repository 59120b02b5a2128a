"""Memory stays bounded by the cache size.

Start the server with ``--cache-size 32MB``, load about 150 MB (>= 4x the cache) with
COPY in batches of transactions, read every row back (count + checksum), and check that
the peak resident set size (VmHWM in /proc/PID/status) stays below the cache size plus
the fixed overhead documented in docs/architecture.md.
"""

import hashlib
import os
import random

import psycopg

MB = 1024 * 1024
CACHE_SIZE_MB = 32
# Fixed memory overhead on top of --cache-size (code, runtime, connection buffers,
# catalog, write buffers, ...).  docs/architecture.md documents this bound (its "Memory"
# section, which points at crates/storage/README.md); keep them in sync.
DOCUMENTED_OVERHEAD_BYTES = 160 * MB
LOAD_MB = int(os.environ.get("MERIDIAN_MEMTEST_MB", "150"))
assert LOAD_MB >= 4 * CACHE_SIZE_MB, "the load must be at least 4x the cache"
PAYLOAD_CHARS = 2000
ROWS = LOAD_MB * MB // PAYLOAD_CHARS
BATCH = 5000  # rows per transaction (~10 MB)


def payload(i: int) -> str:
    # incompressible, deterministic
    return random.Random(i).randbytes(PAYLOAD_CHARS // 2).hex()


def test_memory_bounded_by_cache_size(meridian_factory):
    server = meridian_factory(cache_size=f"{CACHE_SIZE_MB}MB")
    loaded = hashlib.sha256()
    with psycopg.connect(server.dsn, autocommit=False) as conn:
        conn.execute("CREATE TABLE memtest (id bigint PRIMARY KEY, payload text NOT NULL)")
        conn.commit()
        for start in range(0, ROWS, BATCH):
            with conn.cursor() as cur:
                with cur.copy("COPY memtest (id, payload) FROM STDIN") as copy:
                    for i in range(start, min(start + BATCH, ROWS)):
                        p = payload(i)
                        loaded.update(f"{i}:{p};".encode())
                        copy.write_row((i, p))
            conn.commit()

        count, total_len = conn.execute(
            "SELECT count(*), sum(length(payload)) FROM memtest").fetchone()
        conn.commit()
        assert count == ROWS
        assert total_len == ROWS * PAYLOAD_CHARS

        read = hashlib.sha256()
        seen = 0
        for start in range(0, ROWS, BATCH):
            rows = conn.execute(
                "SELECT id, payload FROM memtest WHERE id >= %s AND id < %s ORDER BY id",
                (start, start + BATCH)).fetchall()
            conn.commit()
            for i, p in rows:
                read.update(f"{i}:{p};".encode())
            seen += len(rows)
        assert seen == ROWS
        assert read.hexdigest() == loaded.hexdigest(), "data read back differs from data loaded"

        peak = server.peak_rss_bytes()  # while the session is still open
    limit = CACHE_SIZE_MB * MB + DOCUMENTED_OVERHEAD_BYTES
    assert peak > 0, "could not read VmHWM from /proc"
    assert peak < limit, (
        f"peak RSS {peak / MB:.1f} MiB exceeds cache {CACHE_SIZE_MB} MiB + documented "
        f"overhead {DOCUMENTED_OVERHEAD_BYTES / MB:.0f} MiB after loading {LOAD_MB} MB")
