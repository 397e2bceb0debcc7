"""Scenarios beyond the basics: v3 row lineage, table maintenance procedures,
properties, purge, register, conflicting catalog-branch merges."""

from __future__ import annotations

import subprocess
import uuid

import pytest
from pyspark.errors import AnalysisException

from conftest import FloeServer
from helpers import add_catalog, create_orders, one, rows, snapshot_ids


def test_v3_row_lineage(spark, ns) -> None:
    t = f"floe.{ns}.orders"
    create_orders(spark, t, 3, "merge-on-read")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'books', 10.0), (2, 'games', 20.0)")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'books', 30.0)")
    got = rows(spark, f"SELECT id, _row_id, _last_updated_sequence_number FROM {t}")
    # Row ids are assigned from the table's next-row-id, one per row.
    assert sorted(r[1] for r in got) == [0, 1, 2], got
    spark.sql(f"UPDATE {t} SET amount = 0 WHERE id = 1")
    after = {r[0]: (r[1], r[2]) for r in spark.sql(f"SELECT id, _row_id, _last_updated_sequence_number FROM {t}").collect()}
    before = {r[0]: (r[1], r[2]) for r in got}
    # The updated row keeps its row id and gets a newer sequence number.
    assert after[1][0] == before[1][0] and after[1][1] > before[1][1], (before, after)
    assert after[2] == before[2], (before, after)


def test_properties_and_procedures(spark, ns) -> None:
    t = f"floe.{ns}.orders"
    create_orders(spark, t)
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('commit.retry.num-retries'='7', 'team'='sales')")
    spark.sql(f"ALTER TABLE {t} UNSET TBLPROPERTIES ('team')")
    props = dict(spark.sql(f"SHOW TBLPROPERTIES {t}").collect())
    assert props.get("commit.retry.num-retries") == "7" and "team" not in props, props

    spark.sql(f"INSERT INTO {t} VALUES (1, 'books', 10.0)")
    s1 = snapshot_ids(spark, t)[-1]
    spark.sql(f"INSERT INTO {t} VALUES (2, 'games', 20.0)")
    s2 = snapshot_ids(spark, t)[-1]
    spark.sql(f"CALL floe.system.set_current_snapshot('{ns}.orders', {s1})").collect()
    assert rows(spark, f"SELECT id FROM {t}") == [(1,)]
    spark.sql(f"CALL floe.system.set_current_snapshot(table => '{ns}.orders', ref => 'main')").collect()
    spark.sql(f"CALL floe.system.set_current_snapshot('{ns}.orders', {s2})").collect()
    anc = [r[0] for r in spark.sql(f"CALL floe.system.ancestors_of('{ns}.orders')").collect()]
    assert anc == [s2, s1], anc

    spark.sql(f"CALL floe.system.create_changelog_view(table => '{ns}.orders', changelog_view => 'orders_changes')")
    changes = rows(spark, "SELECT id, _change_type FROM orders_changes")
    assert changes == [(1, "INSERT"), (2, "INSERT")], changes

    # Refused even as a dry run: tables carry gc.enabled=false (test_shared_files.py).
    with pytest.raises(Exception, match=r"Cannot delete orphan files: GC is disabled"):
        spark.sql(f"CALL floe.system.remove_orphan_files(table => '{ns}.orders', dry_run => true)").collect()


def test_rename_across_namespaces_and_purge(spark, ns) -> None:
    other = f"{ns}_b"
    spark.sql(f"CREATE NAMESPACE floe.{other}")
    t = f"floe.{ns}.orders"
    create_orders(spark, t)
    spark.sql(f"INSERT INTO {t} VALUES (1, 'books', 10.0)")
    spark.sql(f"ALTER TABLE {t} RENAME TO {other}.moved")
    assert rows(spark, f"SELECT id FROM floe.{other}.moved") == [(1,)]
    with pytest.raises(AnalysisException):
        spark.sql(f"SELECT * FROM {t}").collect()

    # register_table brings the table back under a new name from its metadata file.
    loc = one(spark, f"SELECT file FROM floe.{other}.moved.metadata_log_entries ORDER BY timestamp DESC LIMIT 1")
    spark.sql(f"DROP TABLE floe.{other}.moved")
    spark.sql(f"CALL floe.system.register_table(table => '{ns}.again', metadata_file => '{loc}')").collect()
    assert rows(spark, f"SELECT id FROM floe.{ns}.again") == [(1,)]
    # PURGE is refused by Iceberg's SparkCatalog before it drops anything
    # (gc.enabled=false); a plain DROP deletes no file either.
    with pytest.raises(Exception, match=r"Cannot purge table: GC is disabled"):
        spark.sql(f"DROP TABLE floe.{ns}.again PURGE")
    assert rows(spark, f"SELECT id FROM floe.{ns}.again") == [(1,)]
    spark.sql(f"DROP TABLE floe.{ns}.again")
    assert rows(spark, f"SHOW TABLES IN floe.{ns}") == []


def test_catalog_branches_appending_to_one_table_merge(spark, floe: FloeServer) -> None:
    ns = f"both_{uuid.uuid4().hex[:8]}"
    branch = f"side_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE floe.{ns}")
    create_orders(spark, f"floe.{ns}.orders")
    spark.sql(f"INSERT INTO floe.{ns}.orders VALUES (1, 'books', 10.0)")
    main = floe.nessie("GET", "/trees/main")["reference"]
    floe.nessie("POST", f"/trees?name={branch}&type=BRANCH", main)
    add_catalog(spark, floe, branch, f"lake@{branch}")

    spark.sql(f"INSERT INTO {branch}.{ns}.orders VALUES (2, 'games', 20.0)")
    spark.sql(f"INSERT INTO floe.{ns}.orders VALUES (3, 'music', 30.0)")
    # Both sides appended to other partitions: floe cherry-picks the
    # branch's snapshot onto main's head, and neither side's rows are lost.
    proc = subprocess.run(
        [str(floe.bin), "merge", branch, "--into", "main", "--server", floe.uri],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rows(spark, f"SELECT id FROM floe.{ns}.orders") == [(1,), (2,), (3,)]
    assert rows(spark, f"SELECT id FROM {branch}.{ns}.orders") == [(1,), (2,)]
    picked = rows(
        spark,
        f"SELECT operation, summary['floe.merge.source-ref'] FROM floe.{ns}.orders.snapshots "
        "WHERE summary['floe.merge.source-ref'] IS NOT NULL",
    )
    assert picked == [("append", branch)], picked


def test_schema_change_on_a_branch_merges(spark, floe: FloeServer) -> None:
    ns = f"schema_{uuid.uuid4().hex[:8]}"
    branch = f"side_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE floe.{ns}")
    create_orders(spark, f"floe.{ns}.orders")
    spark.sql(f"INSERT INTO floe.{ns}.orders VALUES (1, 'books', 10.0)")
    main = floe.nessie("GET", "/trees/main")["reference"]
    floe.nessie("POST", f"/trees?name={branch}&type=BRANCH", main)
    add_catalog(spark, floe, branch, f"lake@{branch}")

    spark.sql(f"ALTER TABLE {branch}.{ns}.orders ADD COLUMN note STRING")
    spark.sql(f"INSERT INTO {branch}.{ns}.orders VALUES (2, 'games', 20.0, 'new')")
    spark.sql(f"INSERT INTO floe.{ns}.orders VALUES (3, 'music', 30.0)")
    # A compatible schema change on one side merges with both sides' rows:
    # main takes the branch's schema, and its own rows, written before the
    # column existed, read it as null.
    floe.cli("merge", branch, "--into", "main")
    assert rows(spark, f"SELECT id, category, note FROM floe.{ns}.orders") == [
        (1, "books", None), (2, "games", "new"), (3, "music", None),
    ]  # fmt: skip
    # main writes with the new column from now on.
    spark.sql(f"INSERT INTO floe.{ns}.orders VALUES (4, 'books', 40.0, 'main')")
    assert rows(spark, f"SELECT id, note FROM floe.{ns}.orders WHERE note IS NOT NULL") == [(2, "new"), (4, "main")]
    assert rows(spark, f"SELECT id FROM {branch}.{ns}.orders") == [(1,), (2,)]


def test_schema_change_on_both_sides_is_not_merged(spark, floe: FloeServer) -> None:
    ns = f"schema_{uuid.uuid4().hex[:8]}"
    branch = f"side_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE floe.{ns}")
    create_orders(spark, f"floe.{ns}.orders")
    spark.sql(f"INSERT INTO floe.{ns}.orders VALUES (1, 'books', 10.0)")
    main = floe.nessie("GET", "/trees/main")["reference"]
    floe.nessie("POST", f"/trees?name={branch}&type=BRANCH", main)
    add_catalog(spark, floe, branch, f"lake@{branch}")

    spark.sql(f"ALTER TABLE {branch}.{ns}.orders ADD COLUMN note STRING")
    spark.sql(f"INSERT INTO {branch}.{ns}.orders VALUES (2, 'games', 20.0, 'new')")
    spark.sql(f"ALTER TABLE floe.{ns}.orders ADD COLUMN region STRING")
    spark.sql(f"INSERT INTO floe.{ns}.orders VALUES (3, 'music', 30.0, 'eu')")
    # Both sides changed the schema (each added a column, under the same
    # field id): structural. The merge is refused, names the table, and
    # changes nothing on either side.
    proc = subprocess.run(
        [str(floe.bin), "merge", branch, "--into", "main", "--server", floe.uri],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, proc.stdout
    assert f"{ns}.orders" in out and "structural" in out and "both sides changed" in out, out
    assert rows(spark, f"SELECT id, region FROM floe.{ns}.orders") == [(1, None), (3, "eu")]
    assert rows(spark, f"SELECT id, note FROM {branch}.{ns}.orders") == [(1, None), (2, "new")]


def test_catalog_tag_is_read_only(spark, floe: FloeServer, ns: str) -> None:
    t = f"{ns}.orders"
    create_orders(spark, f"floe.{t}")
    spark.sql(f"INSERT INTO floe.{t} VALUES (1, 'books', 10.0)")
    tag = f"rel_{uuid.uuid4().hex[:6]}"
    main = floe.nessie("GET", "/trees/main")["reference"]
    floe.nessie("POST", f"/trees?name={tag}&type=TAG", main)
    add_catalog(spark, floe, tag, f"lake@{tag}")
    spark.sql(f"INSERT INTO floe.{t} VALUES (2, 'games', 20.0)")

    # The tag reads what main had when it was made, and refuses writes.
    assert rows(spark, f"SELECT id FROM {tag}.{t}") == [(1,)]
    with pytest.raises(Exception, match="is read-only: it names a tag, not a branch"):
        spark.sql(f"INSERT INTO {tag}.{t} VALUES (3, 'music', 30.0)")
    with pytest.raises(Exception, match="is read-only: it names a tag, not a branch"):
        spark.sql(f"CREATE TABLE {tag}.{ns}.other (id BIGINT) USING iceberg")
    assert rows(spark, f"SELECT id FROM floe.{t}") == [(1,), (2,)]


def test_view_on_catalog_branch_merged(spark, floe: FloeServer) -> None:
    ns = f"vb_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE dev.{ns}")
    create_orders(spark, f"dev.{ns}.orders")
    spark.sql(f"INSERT INTO dev.{ns}.orders VALUES (1, 'books', 10.0), (2, 'games', 20.0)")
    spark.sql(f"CREATE VIEW dev.{ns}.books AS SELECT id FROM dev.{ns}.orders WHERE category = 'books'")
    assert rows(spark, f"SELECT * FROM dev.{ns}.books") == [(1,)]
    floe.cli("merge", "dev", "--into", "main")
    assert [r[1] for r in rows(spark, f"SHOW VIEWS IN floe.{ns}") if not r[2]] == ["books"]
    # The view's SQL names the dev catalog it was made in; its text is what was stored.
    sql = one(spark, f"SHOW CREATE TABLE floe.{ns}.books")
    assert "category = 'books'" in sql, sql
