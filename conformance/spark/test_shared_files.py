"""Catalog branches share files, so no engine may delete them: every table
carries gc.enabled=false and Iceberg's Spark actions refuse to purge,
expire snapshots or remove orphan files, with their own message. Each
scenario runs on a catalog branch (a Spark catalog on `lake@<branch>`) while
main shares the table's files, and main's table (or the branch's) must
still read every row afterwards. Deleting unreferenced files is `floe gc`'s
job."""

from __future__ import annotations

import uuid

import pytest

from conftest import FloeServer
from helpers import create_orders, one, rows, snapshot_ids

# Iceberg 1.10's refusals when gc.enabled=false (SparkCatalog.purgeTable,
# ExpireSnapshotsSparkAction, DeleteOrphanFilesSparkAction).
PURGE_REFUSED = "Cannot purge table: GC is disabled (deleting files may corrupt other tables)"
EXPIRE_REFUSED = "Cannot expire snapshots: GC is disabled (deleting files may corrupt other tables)"
ORPHANS_REFUSED = "Cannot delete orphan files: GC is disabled (deleting files may corrupt other tables)"

MAIN_ROWS = [(1, "books", 10.0), (2, "games", 20.0), (3, "music", 30.0)]


@pytest.fixture
def shared(spark, floe: FloeServer) -> tuple[str, str]:
    """A table on main with three rows written in three snapshots, and a
    fresh catalog branch made from main afterwards, with a Spark catalog of
    the same name on it. Returns (namespace, branch)."""
    ns = f"shared_{uuid.uuid4().hex[:8]}"
    branch = f"gc_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE floe.{ns}")
    create_orders(spark, f"floe.{ns}.orders")
    for r in MAIN_ROWS:
        spark.sql(f"INSERT INTO floe.{ns}.orders VALUES {r}")
    main = floe.nessie("GET", "/trees/main")["reference"]
    floe.nessie("POST", f"/trees?name={branch}&type=BRANCH", main)
    for k, v in {
        "": "org.apache.iceberg.spark.SparkCatalog",
        ".type": "rest",
        ".uri": floe.uri,
        ".warehouse": f"lake@{branch}",
        ".cache-enabled": "false",
    }.items():
        spark.conf.set(f"spark.sql.catalog.{branch}{k}", v)
    return ns, branch


def test_tables_carry_gc_disabled(spark, ns) -> None:
    t = f"floe.{ns}.orders"
    create_orders(spark, t)
    spark.sql(f"CREATE TABLE floe.{ns}.copy USING iceberg AS SELECT * FROM {t}")  # CTAS: a staged create
    for name in (t, f"floe.{ns}.copy"):
        props = dict(spark.sql(f"SHOW TBLPROPERTIES {name}").collect())
        assert props.get("gc.enabled") == "false", props
        assert props.get("write.metadata.delete-after-commit.enabled") == "false", props

    # floe refuses to turn GC on, or to remove the property, and says why.
    for stmt in (
        f"ALTER TABLE {t} SET TBLPROPERTIES ('gc.enabled'='true')",
        f"ALTER TABLE {t} UNSET TBLPROPERTIES ('gc.enabled')",
        f"CREATE TABLE floe.{ns}.gc_on (id BIGINT) USING iceberg TBLPROPERTIES ('gc.enabled'='true')",
    ):
        with pytest.raises(Exception) as exc:
            spark.sql(stmt).collect()
        msg = str(exc.value)
        assert "may corrupt other branches' tables" in msg and "floe gc" in msg, msg
    assert dict(spark.sql(f"SHOW TBLPROPERTIES {t}").collect()).get("gc.enabled") == "false"
    assert sorted(r[1] for r in spark.sql(f"SHOW TABLES IN floe.{ns}").collect()) == ["copy", "orders"]


def test_drop_purge_on_branch(spark, floe: FloeServer, shared) -> None:
    ns, branch = shared
    spark.sql(f"INSERT INTO {branch}.{ns}.orders VALUES (4, 'films', 40.0)")

    # Iceberg's SparkCatalog checks gc.enabled before dropping: the table
    # stays on the branch, no file is deleted.
    with pytest.raises(Exception) as exc:
        spark.sql(f"DROP TABLE {branch}.{ns}.orders PURGE")
    assert PURGE_REFUSED in str(exc.value), str(exc.value)
    assert rows(spark, f"SELECT * FROM {branch}.{ns}.orders") == MAIN_ROWS + [(4, "films", 40.0)]
    assert rows(spark, f"SELECT * FROM floe.{ns}.orders") == MAIN_ROWS

    # A plain DROP removes it from the branch only, deleting nothing.
    spark.sql(f"DROP TABLE {branch}.{ns}.orders")
    assert rows(spark, f"SHOW TABLES IN {branch}.{ns}") == []
    assert rows(spark, f"SELECT * FROM floe.{ns}.orders") == MAIN_ROWS
    assert one(spark, f"SELECT count(*) FROM floe.{ns}.orders.all_data_files") == 3


def test_expire_snapshots_on_branch(spark, shared) -> None:
    ns, branch = shared
    t = f"{branch}.{ns}.orders"
    # After the overwrite, the branch's current snapshot no longer uses the
    # files main reads: expiring the older snapshots on the branch would
    # delete them.
    spark.sql(f"INSERT OVERWRITE {t} VALUES (9, 'books', 90.0)")
    before = snapshot_ids(spark, t)
    with pytest.raises(Exception) as exc:
        spark.sql(
            f"CALL {branch}.system.expire_snapshots(table => '{ns}.orders', "
            "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)"
        ).collect()
    assert EXPIRE_REFUSED in str(exc.value), str(exc.value)
    assert snapshot_ids(spark, t) == before
    assert rows(spark, f"SELECT * FROM {t}") == [(9, "books", 90.0)]
    assert rows(spark, f"SELECT * FROM floe.{ns}.orders") == MAIN_ROWS


def test_remove_orphan_files_on_main(spark, shared) -> None:
    ns, branch = shared
    # Files only the branch's table references: orphans as far as main's
    # table can tell.
    spark.sql(f"INSERT INTO {branch}.{ns}.orders VALUES (4, 'films', 40.0), (5, 'games', 50.0)")
    # The procedure checks gc.enabled before its own "interval less than
    # 24 hours" rule, so the user sees why nothing may be deleted.
    with pytest.raises(Exception) as exc:
        spark.sql(
            f"CALL floe.system.remove_orphan_files(table => '{ns}.orders', "
            "older_than => TIMESTAMP '2999-01-01 00:00:00')"
        ).collect()
    assert ORPHANS_REFUSED in str(exc.value), str(exc.value)
    # The Action API, which that rule's message recommends, has no such
    # rule: with GC enabled it would delete every file main's table does
    # not reference, the branch's included.
    jvm = spark._jvm
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, f"floe.{ns}.orders")
    with pytest.raises(Exception) as exc:
        jvm.org.apache.iceberg.spark.actions.SparkActions.get(spark._jsparkSession).deleteOrphanFiles(table).olderThan(
            32503680000000  # 3000-01-01
        ).execute()
    assert ORPHANS_REFUSED in str(exc.value), str(exc.value)
    assert rows(spark, f"SELECT * FROM {branch}.{ns}.orders") == MAIN_ROWS + [(4, "films", 40.0), (5, "games", 50.0)]
    assert rows(spark, f"SELECT * FROM floe.{ns}.orders") == MAIN_ROWS
