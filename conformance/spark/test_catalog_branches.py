"""Catalog branches: the Spark catalog `dev` is warehouse `lake@dev` (a floe
branch made in conftest.py). Tables changed there are invisible on `lake`
until the branch is merged, with the floe CLI or the Nessie API v2, and
then Spark reads the merged rows on `lake`."""

from __future__ import annotations

import uuid

import pytest
from pyspark.errors import AnalysisException

from conftest import FloeServer
from helpers import create_orders, rows


def merge_with_nessie_api(floe: FloeServer, source: str, target: str) -> None:
    src = floe.nessie("GET", f"/trees/{source}")["reference"]
    dst = floe.nessie("GET", f"/trees/{target}")["reference"]
    floe.nessie("POST", f"/trees/{target}@{dst['hash']}/history/merge", {"fromRefName": source, "fromHash": src["hash"]})


@pytest.mark.parametrize("merge", ["cli", "nessie-api"])
def test_branch_write_merge_read(spark, floe: FloeServer, merge: str) -> None:
    ns = f"cb_{merge.replace('-', '_')}_{uuid.uuid4().hex[:8]}"
    # A namespace and a table made on dev exist only there.
    spark.sql(f"CREATE NAMESPACE dev.{ns}")
    create_orders(spark, f"dev.{ns}.orders")
    spark.sql(f"INSERT INTO dev.{ns}.orders VALUES (1, 'books', 10.0), (2, 'games', 20.0)")
    spark.sql(f"UPDATE dev.{ns}.orders SET amount = 0 WHERE id = 2")
    assert rows(spark, f"SELECT * FROM dev.{ns}.orders") == [(1, "books", 10.0), (2, "games", 0.0)]
    assert (ns,) not in rows(spark, "SHOW NAMESPACES IN floe")
    with pytest.raises(AnalysisException):
        spark.sql(f"SELECT * FROM floe.{ns}.orders").collect()

    if merge == "cli":
        floe.cli("merge", "dev", "--into", "main", "-m", f"publish {ns}")
    else:
        merge_with_nessie_api(floe, "dev", "main")

    assert (ns,) in rows(spark, "SHOW NAMESPACES IN floe")
    assert rows(spark, f"SELECT * FROM floe.{ns}.orders") == [(1, "books", 10.0), (2, "games", 0.0)]
    # Same table: the same snapshots on both branches.
    assert rows(spark, f"SELECT snapshot_id FROM floe.{ns}.orders.snapshots") == rows(
        spark, f"SELECT snapshot_id FROM dev.{ns}.orders.snapshots"
    )

    # A second round: main changes nothing, dev appends; merging again
    # brings only the new commit.
    spark.sql(f"INSERT INTO dev.{ns}.orders VALUES (3, 'music', 30.0)")
    assert rows(spark, f"SELECT id FROM floe.{ns}.orders") == [(1,), (2,)]
    if merge == "cli":
        floe.cli("merge", "dev", "--into", "main")
    else:
        merge_with_nessie_api(floe, "dev", "main")
    assert rows(spark, f"SELECT id FROM floe.{ns}.orders") == [(1,), (2,), (3,)]


def test_branch_isolated_from_main_writes(spark, floe: FloeServer, ns: str) -> None:
    # ns was made on main after dev branched: dev does not see it.
    assert (ns,) not in rows(spark, "SHOW NAMESPACES IN dev")
    create_orders(spark, f"floe.{ns}.orders")
    spark.sql(f"INSERT INTO floe.{ns}.orders VALUES (1, 'books', 10.0)")
    with pytest.raises(AnalysisException):
        spark.sql(f"SELECT * FROM dev.{ns}.orders").collect()
