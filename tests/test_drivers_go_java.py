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


JDBC_CALLS = ["getTables", "getColumns", "getPrimaryKeys(jm_customers)",
              "getPrimaryKeys(jm_orders)", "getIndexInfo(jm_customers)",
              "getIndexInfo(jm_orders)", "getIndexInfo(jm_orders, unique)",
              "getImportedKeys(jm_orders)", "getExportedKeys(jm_customers)",
              "getCrossReference", "getSchemas"]

# Columns left out of the comparison, by method, and why.
JDBC_KNOWN_DIFFERENT = {
    # pg_class.reltuples and relpages of the index: PostgreSQL's estimates from its
    # storage's pages (a new index: 0 tuples counted, 1 metapage); Meridian's storage has
    # no pages and keeps no such statistics (-1 and 0, what PostgreSQL shows for a
    # relation never vacuumed or analyzed).
    "getIndexInfo": {"CARDINALITY", "PAGES"},
}

# The types of the schema's columns (tests/java): getTypeInfo must list each of them.
SCHEMA_TYPES = {"int4", "int8", "text", "varchar", "numeric", "timestamptz", "bool",
                "float8", "date"}


@pytest.fixture(scope="module")
def jdbc_metadata(target, postgres) -> dict:
    """Each server's DatabaseMetaData answers (tests/java), by server kind."""
    mvn, java = require_tool("mvn"), require_tool("java")
    build = subprocess.run([mvn, "-B", "-q", "-o", "package"], cwd=JAVA_DIR,
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, (
        f"mvn -o package failed (scripts/test.sh fetches pgjdbc first):\n{build.stdout}")
    classpath = f"{JAVA_DIR / 'target' / 'classes'}:{JAVA_DIR / 'target' / 'lib'}/*"
    answers = {}
    for name, server in [("postgres", postgres), ("subject", target)]:
        url = f"jdbc:postgresql://{server.host}:{server.port}/postgres?user=postgres"
        res = subprocess.run([java, "-cp", classpath, "meridian.Metadata", url],
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, f"pgjdbc on {name}:\n{res.stdout}\n{res.stderr}"
        answers[name] = json.loads(res.stdout)
    return answers


def comparable(answer: dict, call: str) -> dict:
    """An answer less the columns JDBC_KNOWN_DIFFERENT lists for its method."""
    if "error" in answer:
        return answer
    left_out = JDBC_KNOWN_DIFFERENT.get(call.split("(")[0], set())
    keep = [i for i, c in enumerate(answer["columns"]) if c not in left_out]
    return {"columns": [answer["columns"][i] for i in keep],
            "rows": [[row[i] for i in keep] for row in answer["rows"]]}


@pytest.mark.parametrize("call", JDBC_CALLS)
def test_pgjdbc_metadata(jdbc_metadata, call):
    expected = comparable(jdbc_metadata["postgres"][call], call)
    got = comparable(jdbc_metadata["subject"][call], call)
    assert "error" not in expected, expected
    assert expected["rows"], f"{call}: PostgreSQL gave no rows: the schema is not what it tests"
    assert got == expected


def test_pgjdbc_type_info(jdbc_metadata):
    """getTypeInfo: the rows Meridian gives are PostgreSQL's rows for those types, and
    they include every type the schema uses. PostgreSQL lists types Meridian has no values
    of (geometric, ranges, tsvector, the row types of catalog tables...): those rows are
    not compared. Compared as sorted: pgjdbc's query has no ORDER BY (PostgreSQL's rows
    come in pg_type's heap order)."""
    expected = jdbc_metadata["postgres"]["getTypeInfo"]
    got = jdbc_metadata["subject"]["getTypeInfo"]
    assert "error" not in expected, expected
    assert got["columns"] == expected["columns"]
    names = {row[0] for row in got["rows"]}
    assert SCHEMA_TYPES <= names, SCHEMA_TYPES - names
    assert sorted(got["rows"], key=json.dumps) == sorted(
        (row for row in expected["rows"] if row[0] in names), key=json.dumps)
