"""Iceberg metadata tables read through floe: snapshots, refs, files, entries,
history, manifests, partitions (and all_* variants)."""

from __future__ import annotations

from helpers import create_orders, one, rows, snapshot_ids


def test_metadata_tables(spark, ns) -> None:
    t = f"floe.{ns}.orders"
    create_orders(spark, t)
    spark.sql(f"INSERT INTO {t} VALUES (1, 'books', 10.0), (2, 'games', 20.0)")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'books', 30.0)")
    s1, s2 = snapshot_ids(spark, t)
    spark.sql(f"ALTER TABLE {t} CREATE TAG first AS OF VERSION {s1}")

    snaps = rows(spark, f"SELECT snapshot_id, parent_id, operation FROM {t}.snapshots")
    assert sorted(snaps) == sorted([(s1, None, "append"), (s2, s1, "append")])
    assert rows(spark, f"SELECT name, type, snapshot_id FROM {t}.refs") == [("first", "TAG", s1), ("main", "BRANCH", s2)]
    hist = rows(spark, f"SELECT snapshot_id, parent_id, is_current_ancestor FROM {t}.history")
    assert sorted(hist) == sorted([(s1, None, True), (s2, s1, True)])
    assert one(spark, f"SELECT count(*) FROM {t}.files") == 3
    assert one(spark, f"SELECT sum(record_count) FROM {t}.data_files") == 3
    entries = rows(spark, f"SELECT status, snapshot_id, data_file.record_count FROM {t}.entries")
    assert sorted(entries) == sorted([(1, s1, 1), (1, s1, 1), (1, s2, 1)])
    manifests = rows(spark, f"SELECT added_snapshot_id, added_data_files_count FROM {t}.manifests")
    assert sorted(manifests) == sorted([(s1, 2), (s2, 1)])
    parts = rows(spark, f"SELECT partition.category, record_count, file_count FROM {t}.partitions")
    assert parts == [("books", 2, 2), ("games", 1, 1)]
    assert one(spark, f"SELECT count(*) FROM {t}.all_data_files") == 3
    assert one(spark, f"SELECT count(*) FROM {t}.all_manifests") >= 2
    assert one(spark, f"SELECT count(*) FROM {t}.metadata_log_entries") >= 3
    # Metadata tables time-travel too.
    assert one(spark, f"SELECT count(*) FROM {t}.files VERSION AS OF {s1}") == 2
