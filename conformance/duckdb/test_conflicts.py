"""Concurrent DuckDB writers: a real conflict is answered 409 CommitFailedException, a stale append lands.

DuckDB commits a transaction through POST /v1/{prefix}/transactions/commit
with assert-ref-snapshot-id on the main it read. When main moved under a
row-level change to the same rows, floe answers as the spec says and DuckDB
reports a failed transaction; running the statement again reads the new
main and lands. A stale append floe rebases onto main itself (zero-retry
appends), DuckDB's explicit sequence numbers notwithstanding.
"""

from __future__ import annotations

import duckdb
import pytest

from conftest import FloeServer, rows

CONFLICT = r"Conflict_409.*CommitFailedException|CommitFailedException.*409"


def test_conflicting_deletes(floe: FloeServer, duck: duckdb.DuckDBPyConnection, ns: str) -> None:
    t = f"lake.{ns}.stock"
    duck.execute(f"CREATE TABLE {t} (id BIGINT, qty INTEGER)")
    duck.execute(f"INSERT INTO {t} VALUES (1, 10), (2, 20), (3, 30)")

    a, b = floe.duck(), floe.duck()
    a.execute("BEGIN")
    b.execute("BEGIN")
    assert a.execute(f"DELETE FROM {t} WHERE id = 1").fetchone() == (1,)
    assert b.execute(f"UPDATE {t} SET qty = 11 WHERE id = 1").fetchone() == (1,)
    a.execute("COMMIT")
    with pytest.raises(duckdb.TransactionException, match=CONFLICT) as err:
        b.execute("COMMIT")
    assert "branch main has changed" in str(err.value)

    # The loser changed nothing; a's delete holds.
    assert rows(floe.duck(), f"SELECT * FROM {t} ORDER BY id") == [(2, 20), (3, 30)]
    # Retried, b's update reads the new main: the row is gone, nothing to update.
    assert b.execute(f"UPDATE {t} SET qty = 11 WHERE id = 1").fetchone() == (0,)
    assert b.execute(f"UPDATE {t} SET qty = 21 WHERE id = 2").fetchone() == (1,)
    assert rows(floe.duck(), f"SELECT * FROM {t} ORDER BY id") == [(2, 21), (3, 30)]
    assert len(floe.catalog().load_table(f"{ns}.stock").snapshots()) == 3


def test_concurrent_inserts(floe: FloeServer, duck: duckdb.DuckDBPyConnection, ns: str) -> None:
    t = f"lake.{ns}.log"
    duck.execute(f"CREATE TABLE {t} (id BIGINT)")
    duck.execute(f"INSERT INTO {t} VALUES (1)")

    a, b = floe.duck(), floe.duck()
    a.execute("BEGIN")
    b.execute("BEGIN")
    a.execute(f"INSERT INTO {t} VALUES (2)")
    b.execute(f"INSERT INTO {t} VALUES (3)")
    a.execute("COMMIT")
    b.execute("COMMIT")  # stale: floe re-parents it onto a's snapshot
    fresh = floe.duck()
    assert rows(fresh, f"SELECT id FROM {t} ORDER BY id") == [(1,), (2,), (3,)]
    assert [s[0] for s in rows(fresh, f"SELECT sequence_number FROM iceberg_snapshots({t}) ORDER BY 1")] == [1, 2, 3]
    tbl = floe.catalog().load_table(f"{ns}.log")
    assert sorted(r["id"] for r in tbl.scan().to_arrow().to_pylist()) == [1, 2, 3]
    # Each file once, b's with the sequence number of the snapshot it landed as.
    entries = rows(fresh, f"SELECT manifest_sequence_number, status, record_count FROM iceberg_metadata({t}) ORDER BY 1")
    assert entries == [(1, "ADDED", 1), (2, "ADDED", 1), (3, "ADDED", 1)]

    # b goes on from the metadata floe answered with.
    b.execute(f"INSERT INTO {t} VALUES (4)")
    assert rows(floe.duck(), f"SELECT id FROM {t} ORDER BY id") == [(1,), (2,), (3,), (4,)]


def test_writers_of_different_tables_do_not_conflict(floe: FloeServer, duck: duckdb.DuckDBPyConnection, ns: str) -> None:
    duck.execute(f"CREATE TABLE lake.{ns}.left (id BIGINT)")
    duck.execute(f"CREATE TABLE lake.{ns}.right (id BIGINT)")
    a, b = floe.duck(), floe.duck()
    a.execute("BEGIN")
    b.execute("BEGIN")
    a.execute(f"INSERT INTO lake.{ns}.left VALUES (1)")
    b.execute(f"INSERT INTO lake.{ns}.right VALUES (2)")
    a.execute("COMMIT")
    b.execute("COMMIT")
    fresh = floe.duck()
    assert rows(fresh, f"SELECT id FROM lake.{ns}.left") == [(1,)]
    assert rows(fresh, f"SELECT id FROM lake.{ns}.right") == [(2,)]
