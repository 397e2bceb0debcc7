"""Catalog branches and tags through DuckDB's ATTACH 'lake@<ref>', merged with `floe merge`.

Branches and tags are made with the floe CLI from bin/floe, as a user
would; DuckDB selects one by the warehouse name it attaches.
"""

from __future__ import annotations

import uuid

import duckdb
import pytest

from conftest import FloeServer, rows

READ_ONLY = "Warehouse lake@{} is read-only: it names a tag, not a branch"


def ref_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_catalog_branch_isolation_and_merge(floe: FloeServer, duck: duckdb.DuckDBPyConnection, ns: str) -> None:
    t = f"{ns}.orders"
    duck.execute(f"CREATE TABLE lake.{t} (id BIGINT, item VARCHAR)")
    duck.execute(f"INSERT INTO lake.{t} VALUES (1, 'main')")
    dev = ref_name("duckdev")
    floe.cli("branch", "create", dev)

    con = floe.duck(("lake", "lake"), (f"lake@{dev}", "dev"))
    con.execute(f"INSERT INTO dev.{t} VALUES (2, 'dev')")
    con.execute(f"CREATE TABLE dev.{ns}.only_dev (id BIGINT)")
    assert rows(con, f"SELECT * FROM dev.{t} ORDER BY id") == [(1, "main"), (2, "dev")]

    # main sees neither the row nor the table, not even from a fresh connection.
    fresh = floe.duck()
    assert rows(fresh, f"SELECT * FROM lake.{t} ORDER BY id") == [(1, "main")]
    with pytest.raises(duckdb.CatalogException, match="only_dev"):
        fresh.execute(f"SELECT * FROM lake.{ns}.only_dev")
    assert rows(con, f"SELECT * FROM lake.{t} ORDER BY id") == [(1, "main")]

    out = floe.cli("merge", dev, "--into", "main")
    assert f"merge {dev} into main" in out, out

    after = floe.duck()
    assert rows(after, f"SELECT * FROM lake.{t} ORDER BY id") == [(1, "main"), (2, "dev")]
    assert rows(after, f"SELECT count(*) FROM lake.{ns}.only_dev") == [(0,)]
    # main's table is dev's: the same snapshots, dev's insert on top.
    assert [s[0] for s in rows(after, f"SELECT sequence_number FROM iceberg_snapshots(lake.{t}) ORDER BY 1")] == [1, 2]


def test_tag_attached_read_only(floe: FloeServer, duck: duckdb.DuckDBPyConnection, ns: str) -> None:
    t = f"{ns}.frozen"
    duck.execute(f"CREATE TABLE lake.{t} (id BIGINT)")
    duck.execute(f"INSERT INTO lake.{t} VALUES (1), (2)")
    tag = ref_name("v")
    floe.cli("tag", "create", tag)
    duck.execute(f"INSERT INTO lake.{t} VALUES (3)")

    con = floe.duck((f"lake@{tag}", "tg"))
    assert rows(con, f"SELECT id FROM tg.{t} ORDER BY id") == [(1,), (2,)]
    # floe refuses every write on a tag with a 403 that says why, and DuckDB
    # passes the message on.
    msg = READ_ONLY.format(tag)
    for sql in (
        f"INSERT INTO tg.{t} VALUES (9)",
        f"DELETE FROM tg.{t} WHERE id = 1",
        f"UPDATE tg.{t} SET id = 10 WHERE id = 2",
        f"CREATE TABLE tg.{ns}.other (id BIGINT)",
        f"DROP TABLE tg.{t}",
        f"CREATE SCHEMA tg.{ns}_more",
    ):
        with pytest.raises(duckdb.Error) as err:
            con.execute(sql)
        assert msg in str(err.value) and ("403" in str(err.value) or "Forbidden" in str(err.value)), f"{sql}: {err.value}"
        con = floe.duck((f"lake@{tag}", "tg"))  # a failed commit leaves the connection's transaction aborted

    # Attached READ_ONLY, DuckDB refuses before asking floe.
    ro = floe.duck((f"lake@{tag}", "tg", True))
    assert rows(ro, f"SELECT id FROM tg.{t} ORDER BY id") == [(1,), (2,)]
    with pytest.raises(duckdb.InvalidInputException, match="read-only mode"):
        ro.execute(f"INSERT INTO tg.{t} VALUES (9)")

    # Nothing changed: the tag reads what it did, main has its third row.
    assert rows(floe.duck((f"lake@{tag}", "tg")), f"SELECT id FROM tg.{t} ORDER BY id") == [(1,), (2,)]
    assert rows(floe.duck(), f"SELECT id FROM lake.{t} ORDER BY id") == [(1,), (2,), (3,)]


def test_merge_of_table_duckdb_changed_on_both_branches(floe: FloeServer, duck: duckdb.DuckDBPyConnection, ns: str) -> None:
    t = f"{ns}.both"
    duck.execute(f"CREATE TABLE lake.{t} (id BIGINT)")
    duck.execute(f"INSERT INTO lake.{t} VALUES (1)")
    dev = ref_name("duckboth")
    floe.cli("branch", "create", dev)
    floe.duck((f"lake@{dev}", "dev")).execute(f"INSERT INTO dev.{t} VALUES (2)")
    duck.execute(f"INSERT INTO lake.{t} VALUES (3)")

    # floe reads DuckDB's manifest lists (their Avro schema declares every
    # field nullable; internal/manifestread): the dry run classifies the table.
    dry = floe.run_cli("merge", dev, "--into", "main", "--dry-run")
    assert "manifest list" not in dry.stdout + dry.stderr, dry.stdout + dry.stderr
    assert "ocf" not in dry.stdout + dry.stderr, dry.stdout + dry.stderr

    # DuckDB pins the sequence numbers its entries would inherit: floe's
    # cherry-pick writes them into a manifest of its own, inheriting the
    # picked snapshot's.
    floe.cli("merge", dev, "--into", "main")
    fresh = floe.duck()
    assert rows(fresh, f"SELECT id FROM lake.{t} ORDER BY id") == [(1,), (2,), (3,)]
    assert [s[0] for s in rows(fresh, f"SELECT sequence_number FROM iceberg_snapshots(lake.{t}) ORDER BY 1")] == [1, 2, 3]
    entries = rows(fresh, f"SELECT manifest_sequence_number, status, record_count FROM iceberg_metadata(lake.{t}) ORDER BY 1")
    assert entries == [(1, "ADDED", 1), (2, "ADDED", 1), (3, "ADDED", 1)]
    tbl = floe.catalog().load_table(t)
    assert sorted(r["id"] for r in tbl.scan().to_arrow().to_pylist()) == [1, 2, 3]
    assert tbl.current_snapshot().summary["floe.merge.source-ref"] == dev
    # DuckDB writes on top of the merge.
    fresh.execute(f"DELETE FROM lake.{t} WHERE id = 1")
    assert rows(floe.duck(), f"SELECT id FROM lake.{t} ORDER BY id") == [(2,), (3,)]
