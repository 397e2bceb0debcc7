"""Table-level branches and tags and the Iceberg procedures that move them:
CREATE BRANCH/TAG, writes to t.branch_x, fast_forward, cherrypick_snapshot,
rollback_to_snapshot, rewrite_data_files, rewrite_manifests; expire_snapshots
is refused (tables carry gc.enabled=false, see test_shared_files.py)."""

from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException

from helpers import create_orders, one, rows, snapshot_ids


def test_branch_write_and_fast_forward(spark, ns) -> None:
    t = f"floe.{ns}.orders"
    create_orders(spark, t)
    spark.sql(f"INSERT INTO {t} VALUES (1, 'books', 10.0)")
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {t}.branch_audit VALUES (2, 'games', 20.0)")
    spark.sql(f"DELETE FROM {t}.branch_audit WHERE id = 1")

    assert rows(spark, f"SELECT id FROM {t}") == [(1,)]
    assert rows(spark, f"SELECT id FROM {t}.branch_audit") == [(2,)]
    assert rows(spark, f"SELECT id FROM {t} VERSION AS OF 'audit'") == [(2,)]

    head = one(spark, f"SELECT snapshot_id FROM {t}.refs WHERE name = 'audit'")
    out = spark.sql(f"CALL floe.system.fast_forward('{ns}.orders', 'main', 'audit')").collect()
    assert out[0]["branch_updated"] == "main" and out[0]["updated_ref"] == head, out
    assert rows(spark, f"SELECT id FROM {t}") == [(2,)]
    assert one(spark, f"SELECT snapshot_id FROM {t}.refs WHERE name = 'main'") == head

    # A branch that has diverged cannot be fast-forwarded.
    spark.sql(f"INSERT INTO {t} VALUES (3, 'music', 30.0)")
    spark.sql(f"INSERT INTO {t}.branch_audit VALUES (4, 'toys', 40.0)")
    with pytest.raises(Exception, match="(?i)ancestor"):
        spark.sql(f"CALL floe.system.fast_forward('{ns}.orders', 'main', 'audit')").collect()

    spark.sql(f"ALTER TABLE {t} DROP BRANCH audit")
    assert [r[0] for r in rows(spark, f"SELECT name FROM {t}.refs")] == ["main"]


def test_branch_and_tag_ddl(spark, ns) -> None:
    t = f"floe.{ns}.orders"
    create_orders(spark, t)
    spark.sql(f"INSERT INTO {t} VALUES (1, 'books', 10.0)")
    s1 = snapshot_ids(spark, t)[-1]
    spark.sql(f"INSERT INTO {t} VALUES (2, 'games', 20.0)")
    spark.sql(f"ALTER TABLE {t} CREATE TAG release AS OF VERSION {s1} RETAIN 7 DAYS")
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH IF NOT EXISTS b1 AS OF VERSION {s1} WITH SNAPSHOT RETENTION 2 SNAPSHOTS")
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH IF NOT EXISTS b1")
    refs = {r[0]: (r[1], r[2]) for r in spark.sql(f"SELECT name, type, snapshot_id FROM {t}.refs").collect()}
    assert refs["release"] == ("TAG", s1) and refs["b1"] == ("BRANCH", s1), refs
    assert rows(spark, f"SELECT id FROM {t} VERSION AS OF 'release'") == [(1,)]

    with pytest.raises(Exception, match="release is a tag, not a branch"):
        spark.sql(f"INSERT INTO {t}.branch_release VALUES (9, 'x', 9.0)")

    spark.sql(f"ALTER TABLE {t} REPLACE BRANCH b1 AS OF VERSION {snapshot_ids(spark, t)[-1]}")
    assert rows(spark, f"SELECT id FROM {t}.branch_b1") == [(1,), (2,)]
    spark.sql(f"ALTER TABLE {t} DROP TAG release")
    spark.sql(f"ALTER TABLE {t} DROP BRANCH IF EXISTS b1")
    assert [r[0] for r in rows(spark, f"SELECT name FROM {t}.refs")] == ["main"]


def test_cherrypick_and_rollback(spark, ns) -> None:
    t = f"floe.{ns}.orders"
    create_orders(spark, t)
    spark.sql(f"INSERT INTO {t} VALUES (1, 'books', 10.0)")
    base = snapshot_ids(spark, t)[-1]
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH side")
    spark.sql(f"INSERT INTO {t}.branch_side VALUES (2, 'games', 20.0)")
    side = one(spark, f"SELECT snapshot_id FROM {t}.refs WHERE name = 'side'")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'music', 30.0)")

    # main moved on, so the cherry-pick replays side's append as a new snapshot.
    out = spark.sql(f"CALL floe.system.cherrypick_snapshot('{ns}.orders', {side})").collect()
    assert out[0]["source_snapshot_id"] == side, out
    assert rows(spark, f"SELECT id FROM {t}") == [(1,), (2,), (3,)]

    out = spark.sql(f"CALL floe.system.rollback_to_snapshot('{ns}.orders', {base})").collect()
    assert out[0]["current_snapshot_id"] == base, out
    assert rows(spark, f"SELECT id FROM {t}") == [(1,)]
    # The rolled-back snapshots remain in the history, no longer current ancestors.
    hist = spark.sql(f"SELECT snapshot_id, is_current_ancestor FROM {t}.history").collect()
    assert {r[0] for r in hist if not r[1]}, hist


def test_rewrite_procedures(spark, ns) -> None:
    t = f"floe.{ns}.orders"
    create_orders(spark, t)
    for i in range(4):
        spark.sql(f"INSERT INTO {t} VALUES ({i}, 'books', {i}.0)")
    assert one(spark, f"SELECT count(*) FROM {t}.files") == 4
    assert one(spark, f"SELECT count(*) FROM {t}.manifests") == 4

    out = spark.sql(
        f"CALL floe.system.rewrite_data_files(table => '{ns}.orders', options => map('min-input-files', '2'))"
    ).collect()
    assert out[0]["rewritten_data_files_count"] == 4 and out[0]["added_data_files_count"] == 1, out
    assert one(spark, f"SELECT count(*) FROM {t}.files") == 1
    assert one(spark, f"SELECT operation FROM {t}.snapshots ORDER BY committed_at DESC LIMIT 1") == "replace"

    out = spark.sql(f"CALL floe.system.rewrite_manifests('{ns}.orders')").collect()
    assert out[0]["added_manifests_count"] >= 1, out
    assert one(spark, f"SELECT count(*) FROM {t}.manifests") == 1
    assert rows(spark, f"SELECT id FROM {t}") == [(0,), (1,), (2,), (3,)]

    # Snapshot expiry deletes files other catalog branches may share:
    # Iceberg refuses it on floe's tables (gc.enabled=false).
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('history.expire.min-snapshots-to-keep'='1')")
    before = snapshot_ids(spark, t)
    with pytest.raises(Exception, match=r"Cannot expire snapshots: GC is disabled"):
        spark.sql(
            f"CALL floe.system.expire_snapshots(table => '{ns}.orders', older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)"
        ).collect()
    assert snapshot_ids(spark, t) == before
    assert rows(spark, f"SELECT id FROM {t}") == [(0,), (1,), (2,), (3,)]


def test_write_audit_publish(spark, ns) -> None:
    t = f"floe.{ns}.orders"
    create_orders(spark, t)
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('write.wap.enabled'='true')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'books', 10.0)")
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH wap")
    spark.conf.set("spark.wap.branch", "wap")
    try:
        spark.sql(f"INSERT INTO {t} VALUES (2, 'games', 20.0)")
        # With spark.wap.branch set, reads see the branch too.
        assert rows(spark, f"SELECT id FROM {t}") == [(1,), (2,)]
    finally:
        spark.conf.unset("spark.wap.branch")
    assert rows(spark, f"SELECT id FROM {t}") == [(1,)]
    spark.sql(f"CALL floe.system.fast_forward('{ns}.orders', 'main', 'wap')").collect()
    assert rows(spark, f"SELECT id FROM {t}") == [(1,), (2,)]
