"""Go's pgx and Java's pgjdbc, each against PostgreSQL 15 in the same test.

- pgx (tests/go): conn.CopyFrom, a binary COPY, of a few thousand rows of int, bigint,
  text, numeric, bool, timestamptz, bytea, uuid, jsonb, float8 with edge values and NULLs,
  read back in pgx's default formats; CopyFrom errors (23505, 42P01) leave the connection
  usable and nothing of the failed COPY. The Go program runs on both servers and compares.
- pgjdbc (tests/java): DatabaseMetaData over one schema (primary keys, a foreign key, a
  unique and a plain index, a view); the Java program prints each method's rows as JSON
  and this test compares them, less the columns listed in JDBC_KNOWN_DIFFERENT.

The tools are built here (Go's build cache; Maven offline after scripts/test.sh fetched
the driver); a missing tool fails the test.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import require_tool

GO_DIR = Path(__file__).parent / "go"
JAVA_DIR = Path(__file__).parent / "java"


def go_tool() -> str:
    return shutil.which("go") or require_tool("/usr/local/go/bin/go")


@pytest.fixture(scope="module")
def pgx_copy(tmp_path_factory) -> str:
    binary = tmp_path_factory.mktemp("go") / "pgx_copy"
    res = subprocess.run([go_tool(), "build", "-mod=readonly", "-o", str(binary), "."],
                         cwd=GO_DIR, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"go build failed (scripts/test.sh runs go mod download):\n{res.stderr}"
    return str(binary)


def test_pgx_copy_from_binary(pgx_copy, target, postgres):
    res = subprocess.run([pgx_copy, postgres.dsn, target.dsn], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, f"pgx: the servers differ:\n{res.stdout}\n{res.stderr}"
    summary = json.loads(res.stdout)
    # the comparison is of something: every row was copied, and the errors are the errors
    assert summary["rows"] == summary["copied"] == 3000
    assert summary["errors"] == {"duplicate_existing": "23505", "duplicate_within": "23505",
                                 "invalid_json": "22P02", "no_such_table": "42P01"}
