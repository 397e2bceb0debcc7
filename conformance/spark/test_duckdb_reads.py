"""DuckDB reads what Spark wrote through floe, and what floe merged of it.

DuckDB's Iceberg extension (1.4.4, from its PyPI packages, opened by
../duckdbconn.py as the DuckDB suite opens it) attaches the same floe
server as Spark. PyIceberg, which the DuckDB suite uses to write tables,
writes neither format v3 nor deletion vectors, so the tables only Spark
writes are read here: merge-on-read deletes as v2 position delete files
and as v3 deletion vectors in Puffin files, and tables floe merged from a
catalog branch Spark changed, including the deletion vector floe wrote
as the union of both sides' (merge/tablemerge/dvunion.go). Each time DuckDB
must return exactly the rows Spark returns.
"""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import duckdbconn
import pytest
from floeproc import FloeServer

from helpers import branch_catalog, floe_cli, rows
from test_etl_merges import new_orders, one_file


@pytest.fixture
def duck(floe: FloeServer) -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh DuckDB attached to main as `lake`: every test reads what floe
    serves now, nothing DuckDB cached before."""
    con = duckdbconn.connect(floe.uri)
    yield con
    con.close()


def duck_rows(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple]:
    return sorted(con.execute(f"SELECT id, category, amount FROM lake.{table}").fetchall())


def delete_formats(spark, table: str) -> set[str]:
    return {r[0] for r in spark.sql(f"SELECT file_format FROM {table}.delete_files").collect()}


@pytest.mark.parametrize(("version", "fmt"), [pytest.param(2, "PARQUET", id="v2-position-deletes"), pytest.param(3, "PUFFIN", id="v3-deletion-vectors")])
def test_merge_on_read_deletes(spark, floe: FloeServer, duck: duckdb.DuckDBPyConnection, version: int, fmt: str) -> None:
    """A DELETE, an UPDATE and a MERGE INTO in merge-on-read: DuckDB applies
    Spark's delete files (v2) or deletion vectors (v3) and reads Spark's rows."""
    t = new_orders(spark, "ddmor", version, "merge-on-read")
    spark.sql(
        f"INSERT INTO floe.{t} VALUES (1, 'books', 10.0), (2, 'games', 20.0), (3, 'games', 30.0), (4, 'games', 40.0), (5, 'books', 50.0)"
    )
    spark.sql(f"DELETE FROM floe.{t} WHERE id = 3")
    spark.sql(f"UPDATE floe.{t} SET amount = 21.0 WHERE id = 2")
    spark.createDataFrame([(5, "books", -1.0), (6, "games", 60.0)], "id BIGINT, category STRING, amount DOUBLE").createOrReplaceTempView(
        "dd_changes"
    )
    spark.sql(
        f"""MERGE INTO floe.{t} t USING dd_changes s ON t.id = s.id
        WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *"""
    )
    assert delete_formats(spark, f"floe.{t}") == {fmt}

    want = [(1, "books", 10.0), (2, "games", 21.0), (4, "games", 40.0), (6, "games", 60.0)]
    assert rows(spark, f"SELECT id, category, amount FROM floe.{t}") == want
    assert duck_rows(duck, t) == want
    # DuckDB lists Spark's delete files among the table's entries.
    contents = {r[0] for r in duck.execute(f"SELECT content FROM iceberg_metadata(lake.{t})").fetchall()}
    assert any("DELETE" in str(c).upper() for c in contents), contents


@pytest.mark.parametrize(
    ("version", "mode"),
    [pytest.param(2, "copy-on-write", id="v2-cow"), pytest.param(3, "merge-on-read", id="v3-mor")],
)
def test_table_floe_merged_from_a_spark_branch(spark, floe: FloeServer, duck: duckdb.DuckDBPyConnection, version: int, mode: str) -> None:
    """Spark's row-level ETL on a catalog branch while main appends, merged
    by `floe merge` (the branch's file changes replayed onto main's head):
    DuckDB reads main's merged rows and the branch's own."""
    t = new_orders(spark, "ddmerge", version, mode)
    spark.sql(f"INSERT INTO floe.{t} VALUES (1, 'books', 10.0), (2, 'games', 20.0), (3, 'games', 30.0)")
    branch, cat = branch_catalog(spark, floe, "dd")
    spark.sql(f"DELETE FROM {cat}.{t} WHERE id = 3")
    spark.sql(f"UPDATE {cat}.{t} SET amount = 22.0 WHERE id = 2")
    spark.sql(f"INSERT INTO floe.{t} VALUES (4, 'books', 40.0)")

    proc = floe_cli(floe, "merge", branch, "--into", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    want = [(1, "books", 10.0), (2, "games", 22.0), (4, "books", 40.0)]
    assert rows(spark, f"SELECT id, category, amount FROM floe.{t}") == want
    assert duck_rows(duck, t) == want

    on_branch = duckdbconn.connect(floe.uri, (f"lake@{branch}", "lake"))
    try:
        assert duck_rows(on_branch, t) == [(1, "books", 10.0), (2, "games", 22.0)]
    finally:
        on_branch.close()


def test_deletion_vector_union_written_by_floe(spark, floe: FloeServer, duck: duckdb.DuckDBPyConnection) -> None:
    """Both sides delete different rows of one data file in v3 merge-on-read:
    floe writes one deletion vector, the union of both sides', in a Puffin
    file of its own. DuckDB applies it: neither side's deleted rows come back."""
    t = new_orders(spark, "dddv", 3, "merge-on-read")
    spark.sql(f"INSERT INTO floe.{t} VALUES (1, 'games', 10.0), (2, 'games', 20.0), (3, 'games', 30.0), (4, 'games', 40.0)")
    assert one_file(spark, f"floe.{t}")
    branch, cat = branch_catalog(spark, floe, "dddv")
    spark.sql(f"DELETE FROM {cat}.{t} WHERE id = 1")
    spark.sql(f"DELETE FROM floe.{t} WHERE id = 4")

    proc = floe_cli(floe, "merge", branch, "--into", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # One live vector for the one data file: the union, written by floe.
    dvs = spark.sql(f"SELECT file_path, referenced_data_file FROM floe.{t}.delete_files").collect()
    assert len(dvs) == 1, dvs
    want = [(2, "games", 20.0), (3, "games", 30.0)]
    assert rows(spark, f"SELECT id, category, amount FROM floe.{t}") == want
    assert duck_rows(duck, t) == want
