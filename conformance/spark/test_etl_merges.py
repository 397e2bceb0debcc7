"""Merges of what real ETL writes: Spark's row-level statements on a catalog
branch while main appends elsewhere, merged with `floe merge` and read back
through Spark.

Copy-on-write UPDATE/DELETE/MERGE INTO remove and rewrite data files, and a
second merge-on-read statement replaces the first one's delete file (v2) or
deletion vector (v3). No operation record is set: floe merges the branch's
file changes onto main's head (the three-way merge of live files), because
every file the branch removed is still live and unchanged on main and main
appended only to another partition.
"""

from __future__ import annotations

import uuid

import pytest
from floeproc import FloeServer

from helpers import branch_catalog, create_orders, floe_cli, one, rows

CASES = [
    pytest.param(2, "copy-on-write", id="v2-cow"),
    pytest.param(2, "merge-on-read", id="v2-mor"),
    pytest.param(3, "copy-on-write", id="v3-cow"),
    pytest.param(3, "merge-on-read", id="v3-mor"),
]


@pytest.mark.parametrize(("version", "mode"), CASES)
def test_row_level_branch_merges_over_main_appends(spark, floe: FloeServer, version: int, mode: str) -> None:
    t = new_orders(spark, "etl", version, mode)
    spark.sql(
        f"INSERT INTO floe.{t} VALUES (1, 'books', 10.0), (2, 'games', 20.0), (3, 'games', 30.0), (4, 'games', 40.0)"
    )
    branch, cat = branch_catalog(spark, floe, "etl")

    # The branch's ETL: a MERGE INTO, then a DELETE and an UPDATE, all in
    # the games partition. The second and third statements in
    # merge-on-read replace the delete file or deletion vector the first
    # wrote for the same data file.
    spark.createDataFrame(
        [(2, "games", 22.0), (5, "games", 50.0), (4, "games", -1.0)], "id BIGINT, category STRING, amount DOUBLE"
    ).createOrReplaceTempView("changes")
    spark.sql(
        f"""MERGE INTO {cat}.{t} t USING changes s ON t.id = s.id
        WHEN MATCHED AND s.amount < 0 THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.amount = s.amount
        WHEN NOT MATCHED THEN INSERT *"""
    )
    spark.sql(f"DELETE FROM {cat}.{t} WHERE id = 3")
    spark.sql(f"UPDATE {cat}.{t} SET amount = amount + 1 WHERE id = 5")
    branch_rows = [(1, "books", 10.0), (2, "games", 22.0), (5, "games", 51.0)]
    assert rows(spark, f"SELECT * FROM {cat}.{t}") == branch_rows
    ops = [r[0] for r in spark.sql(f"SELECT operation FROM {cat}.{t}.snapshots ORDER BY committed_at").collect()]
    assert set(ops[1:]) & {"overwrite", "delete"}, ops

    # Main appends to another partition meanwhile.
    spark.sql(f"INSERT INTO floe.{t} VALUES (6, 'books', 60.0)")

    proc = floe_cli(floe, "merge", branch, "--into", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    want = sorted(branch_rows + [(6, "books", 60.0)])
    assert rows(spark, f"SELECT * FROM floe.{t}") == want
    assert rows(spark, f"SELECT * FROM {cat}.{t}") == branch_rows

    # The branch's statements were replayed by their file changes, each
    # naming the snapshot it copies.
    replayed = rows(
        spark,
        f"SELECT summary['floe.merge.replayed'] FROM floe.{t}.snapshots "
        "WHERE summary['floe.merge.source-ref'] IS NOT NULL",
    )
    assert replayed and all(r == ("files",) for r in replayed), replayed

    # Merging again changes nothing; main stays readable and writable.
    proc = floe_cli(floe, "merge", branch, "--into", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rows(spark, f"SELECT * FROM floe.{t}") == want
    spark.sql(f"DELETE FROM floe.{t} WHERE id = 1")
    assert rows(spark, f"SELECT id FROM floe.{t}") == [(2,), (5,), (6,)]


def test_row_level_conflict_is_refused_and_writes_nothing(spark, floe: FloeServer) -> None:
    """Both sides delete from one data file under copy-on-write: both
    rewrote it, a real conflict; the merge is refused naming the table and
    neither side's rows change."""
    t = new_orders(spark, "etlc", 2, "copy-on-write")
    spark.sql(f"INSERT INTO floe.{t} VALUES (1, 'games', 10.0), (2, 'games', 20.0), (3, 'games', 30.0)")
    branch, cat = branch_catalog(spark, floe, "etlc")

    spark.sql(f"DELETE FROM {cat}.{t} WHERE id = 1")
    spark.sql(f"DELETE FROM floe.{t} WHERE id = 3")
    out = refused_merge(floe, branch)
    assert t in out and "file-conflict" in out, out
    assert rows(spark, f"SELECT id FROM floe.{t}") == [(1,), (2,)]
    assert rows(spark, f"SELECT id FROM {cat}.{t}") == [(2,), (3,)]


def test_deletion_vectors_of_one_file_on_both_sides_merge_as_their_union(spark, floe: FloeServer) -> None:
    """v3 merge-on-read deletes of different rows of one data file on both
    sides: a table may hold one deletion vector per data file, so floe
    writes their union; the same row deleted on both sides is refused,
    naming its _row_id, and nothing is written."""
    t = new_orders(spark, "etldv", 3, "merge-on-read")
    spark.sql(f"INSERT INTO floe.{t} VALUES (1, 'games', 10.0), (2, 'games', 20.0), (3, 'games', 30.0), (4, 'games', 40.0)")
    assert one_file(spark, f"floe.{t}")

    branch, cat = branch_catalog(spark, floe, "dv")
    spark.sql(f"DELETE FROM {cat}.{t} WHERE id = 1")
    spark.sql(f"UPDATE {cat}.{t} SET amount = 21.0 WHERE id = 2")
    spark.sql(f"DELETE FROM floe.{t} WHERE id = 4")

    proc = floe_cli(floe, "merge", branch, "--into", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rows(spark, f"SELECT * FROM floe.{t}") == [(2, "games", 21.0), (3, "games", 30.0)]
    # One live deletion vector per data file on main.
    refs = [r[0] for r in spark.sql(f"SELECT referenced_data_file FROM floe.{t}.delete_files").collect()]
    assert len(refs) == len(set(refs)), refs

    # Now both sides delete row 3.
    clash, ccat = branch_catalog(spark, floe, "dvc")
    spark.sql(f"DELETE FROM {ccat}.{t} WHERE id = 3")
    spark.sql(f"DELETE FROM floe.{t} WHERE id = 3")
    out = refused_merge(floe, clash)
    assert "rows changed on both sides" in out and "_row_id=" in out, out
    assert rows(spark, f"SELECT id FROM floe.{t}") == [(2,)]


def test_same_row_updated_on_both_sides_is_refused_naming_its_row_id(spark, floe: FloeServer) -> None:
    """v3 merge-on-read UPDATEs of the same row on both sides: each side
    deleted the row's old version and wrote its own; which wins is not the
    merge's to decide. Under snapshot isolation (under serializable, the
    default, each side's new version is a row added to the partition the
    other updated in: a conflict Iceberg itself reports) the merge is
    refused naming the row by _row_id, and both sides keep their own
    version."""
    t = new_orders(spark, "etlup", 3, "merge-on-read")
    spark.sql(f"ALTER TABLE floe.{t} SET TBLPROPERTIES ('write.update.isolation-level'='snapshot', 'write.merge.isolation-level'='snapshot')")
    spark.sql(f"INSERT INTO floe.{t} VALUES (1, 'games', 10.0), (2, 'games', 20.0), (3, 'games', 30.0)")
    row_id = one(spark, f"SELECT _row_id FROM floe.{t} WHERE id = 2")

    branch, cat = branch_catalog(spark, floe, "up")
    spark.sql(f"UPDATE {cat}.{t} SET amount = 21.0 WHERE id = 2")
    spark.sql(f"UPDATE floe.{t} SET amount = 22.0 WHERE id = 2")
    out = refused_merge(floe, branch)
    assert "rows changed on both sides" in out and f"_row_id={row_id}" in out, out
    assert rows(spark, f"SELECT id, amount FROM floe.{t}") == [(1, 10.0), (2, 22.0), (3, 30.0)]
    assert rows(spark, f"SELECT id, amount FROM {cat}.{t}") == [(1, 10.0), (2, 21.0), (3, 30.0)]


def test_v2_position_deletes_of_one_file_on_both_sides(spark, floe: FloeServer) -> None:
    """v2 merge-on-read on both sides of one data file. Different rows:
    both sides' position delete files are listed and Spark applies them
    together, even after the branch's second statement rewrote its first
    delete file (Spark's file-scoped deletes). The same row updated on both
    sides (under snapshot isolation; under serializable, the file-level
    rules refuse it first): the union would keep both new versions, so the
    merge is refused naming the row by data file and position (v2 rows have
    no _row_id), and nothing is written."""
    t = new_orders(spark, "etlpos", 2, "merge-on-read")
    spark.sql(f"ALTER TABLE floe.{t} SET TBLPROPERTIES ('write.update.isolation-level'='snapshot', 'write.delete.isolation-level'='snapshot')")
    spark.sql(f"INSERT INTO floe.{t} VALUES (1, 'games', 10.0), (2, 'games', 20.0), (3, 'games', 30.0), (4, 'games', 40.0), (5, 'games', 50.0)")
    assert one_file(spark, f"floe.{t}")

    branch, cat = branch_catalog(spark, floe, "pos")
    spark.sql(f"DELETE FROM {cat}.{t} WHERE id = 1")
    spark.sql(f"UPDATE {cat}.{t} SET amount = 21.0 WHERE id = 2")
    spark.sql(f"DELETE FROM floe.{t} WHERE id = 5")
    proc = floe_cli(floe, "merge", branch, "--into", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rows(spark, f"SELECT * FROM floe.{t}") == [(2, "games", 21.0), (3, "games", 30.0), (4, "games", 40.0)]

    # The same row updated on both sides of a file neither had deleted
    # from (where both rewrote one delete file, the file-level rules
    # already refuse: both removed it).
    t2 = new_orders(spark, "etlposc", 2, "merge-on-read")
    spark.sql(f"ALTER TABLE floe.{t2} SET TBLPROPERTIES ('write.update.isolation-level'='snapshot', 'write.merge.isolation-level'='snapshot')")
    spark.sql(f"INSERT INTO floe.{t2} VALUES (1, 'games', 10.0), (2, 'games', 20.0), (3, 'games', 30.0)")
    assert one_file(spark, f"floe.{t2}")
    clash, ccat = branch_catalog(spark, floe, "posc")
    spark.sql(f"UPDATE {ccat}.{t2} SET amount = 31.0 WHERE id = 3")
    spark.sql(f"UPDATE floe.{t2} SET amount = 32.0 WHERE id = 3")
    out = refused_merge(floe, clash)
    assert "rows changed on both sides" in out and "format v2 position deletes" in out and " at position 2" in out, out
    assert rows(spark, f"SELECT id, amount FROM floe.{t2}") == [(1, 10.0), (2, 20.0), (3, 32.0)]
    assert rows(spark, f"SELECT id, amount FROM {ccat}.{t2}") == [(1, 10.0), (2, 20.0), (3, 31.0)]


def test_files_rewritten_on_both_sides_merge_by_row_id(spark, floe: FloeServer) -> None:
    """Copy-on-write UPDATE, DELETE and MERGE INTO on both sides of one v3
    data file, with the table rule floe.merge.row-level=rows: Spark keeps
    each row's _row_id through a rewrite (and its
    _last_updated_sequence_number when the row is copied unchanged), so
    floe merges by row id: every row takes the side that changed it, and
    the rows neither changed appear once. A row updated on both sides is
    then refused naming its _row_id, and nothing is written."""
    t = new_orders(spark, "etlrow", 3, "copy-on-write")
    spark.sql(f"ALTER TABLE floe.{t} SET TBLPROPERTIES ('floe.merge.row-level'='rows')")
    spark.sql(
        f"INSERT INTO floe.{t} VALUES (1, 'games', 10.0), (2, 'games', 20.0), (3, 'games', 30.0), "
        "(4, 'games', 40.0), (5, 'games', 50.0)"
    )
    assert one_file(spark, f"floe.{t}")
    branch, cat = branch_catalog(spark, floe, "row")

    spark.sql(f"UPDATE {cat}.{t} SET amount = 21.0 WHERE id = 2")
    spark.sql(f"DELETE FROM {cat}.{t} WHERE id = 1")
    spark.createDataFrame([(4, "games", 44.0), (6, "games", 60.0)], "id BIGINT, category STRING, amount DOUBLE").createOrReplaceTempView("rowchanges")
    spark.sql(
        f"""MERGE INTO floe.{t} t USING rowchanges s ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET t.amount = s.amount
        WHEN NOT MATCHED THEN INSERT *"""
    )
    spark.sql(f"DELETE FROM floe.{t} WHERE id = 5")

    proc = floe_cli(floe, "merge", branch, "--into", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    want = [(2, "games", 21.0), (3, "games", 30.0), (4, "games", 44.0), (6, "games", 60.0)]
    assert rows(spark, f"SELECT * FROM floe.{t}") == want
    assert rows(spark, f"SELECT count(*), count(DISTINCT _row_id) FROM floe.{t}") == [(4, 4)]
    merged = rows(spark, f"SELECT summary['floe.merge.replayed'] FROM floe.{t}.snapshots WHERE summary['floe.merge.replayed'] = 'rows'")
    assert merged == [("rows",)], merged
    # main stays writable by Spark after the merge.
    spark.sql(f"UPDATE floe.{t} SET amount = 31.0 WHERE id = 3")
    assert rows(spark, f"SELECT id, amount FROM floe.{t} WHERE id = 3") == [(3, 31.0)]

    # The same row updated on both sides: refused, naming it.
    clash, ccat = branch_catalog(spark, floe, "rowc")
    row_id = one(spark, f"SELECT _row_id FROM floe.{t} WHERE id = 2")
    spark.sql(f"UPDATE {ccat}.{t} SET amount = 22.0 WHERE id = 2")
    spark.sql(f"UPDATE floe.{t} SET amount = 23.0 WHERE id = 2")
    out = refused_merge(floe, clash)
    assert "rows changed on both sides" in out and f"_row_id={row_id}" in out, out
    assert rows(spark, f"SELECT id, amount FROM floe.{t} WHERE id = 2") == [(2, 23.0)]


def test_compaction_on_main_and_rewrite_on_branch_merge_by_row_id(spark, floe: FloeServer) -> None:
    """Main compacts a day's files (rewrite_data_files, a replace that keeps
    each row's lineage) while the branch's copy-on-write UPDATE rewrote one
    of them, with no operation record: by files both removed the same file,
    a conflict; with floe.merge.row-level=rows the branch's update lands on
    the compacted file and every row appears once."""
    t = new_orders(spark, "etlcmp", 3, "copy-on-write")
    spark.sql(f"ALTER TABLE floe.{t} SET TBLPROPERTIES ('floe.merge.row-level'='rows')")
    spark.sql(f"INSERT INTO floe.{t} VALUES (1, 'games', 10.0), (2, 'games', 20.0)")
    spark.sql(f"INSERT INTO floe.{t} VALUES (3, 'games', 30.0), (4, 'games', 40.0)")
    branch, cat = branch_catalog(spark, floe, "cmp")

    spark.sql(f"UPDATE {cat}.{t} SET amount = 21.0 WHERE id = 2")
    ns, name = t.split(".")
    spark.sql(
        f"CALL floe.system.rewrite_data_files(table => '{ns}.{name}', "
        "options => map('rewrite-all', 'true', 'min-input-files', '1'))"
    )
    assert one_file(spark, f"floe.{t}")
    assert rows(spark, f"SELECT operation FROM floe.{t}.snapshots ORDER BY committed_at DESC LIMIT 1") == [("replace",)]

    proc = floe_cli(floe, "merge", branch, "--into", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    want = [(1, "games", 10.0), (2, "games", 21.0), (3, "games", 30.0), (4, "games", 40.0)]
    assert rows(spark, f"SELECT * FROM floe.{t}") == want
    assert rows(spark, f"SELECT count(*), count(DISTINCT _row_id) FROM floe.{t}") == [(4, 4)]
    # Merging again changes nothing.
    proc = floe_cli(floe, "merge", branch, "--into", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rows(spark, f"SELECT * FROM floe.{t}") == want


def refused_merge(floe: FloeServer, branch: str) -> str:
    """Merges branch into main, which must be refused with main's head
    unchanged; returns what floe said."""
    head = floe.nessie("GET", "/trees/main")["reference"]["hash"]
    proc = floe_cli(floe, "merge", branch, "--into", "main")
    assert proc.returncode != 0, proc.stdout
    assert floe.nessie("GET", "/trees/main")["reference"]["hash"] == head
    return proc.stdout + proc.stderr


def new_orders(spark, prefix: str, version: int, mode: str) -> str:
    """orders (helpers.create_orders) on main in a fresh namespace prefix_<random>;
    returns the table's name without the catalog."""
    ns = f"{prefix}_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE floe.{ns}")
    create_orders(spark, f"floe.{ns}.orders", version, mode)
    return f"{ns}.orders"


def one_file(spark, table: str) -> bool:
    return spark.sql(f"SELECT count(*) FROM {table}.data_files").collect()[0][0] == 1
