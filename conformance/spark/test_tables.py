"""Tables through Spark SQL: partitioned v2 and v3 tables, inserts, time travel,
schema and partition evolution, CTAS and REPLACE TABLE AS SELECT."""

from __future__ import annotations

import pytest

from helpers import create_orders, one, rows, snapshot_ids


@pytest.mark.parametrize("version", [2, 3])
def test_partitioned_insert(spark, ns, version: int) -> None:
    t = f"floe.{ns}.orders"
    create_orders(spark, t, version)
    assert spark.sql(f"SHOW TBLPROPERTIES {t} ('format-version')").collect()[0][1] == str(version)
    spark.sql(f"INSERT INTO {t} VALUES (1, 'books', 10.0), (2, 'games', 20.0)")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'books', 30.0)")
    assert rows(spark, f"SELECT * FROM {t}") == [(1, "books", 10.0), (2, "games", 20.0), (3, "books", 30.0)]
    assert rows(spark, f"SELECT id FROM {t} WHERE category = 'books'") == [(1,), (3,)]
    # Two data files for books, one for games, each under its partition.
    files = rows(spark, f"SELECT partition.category, record_count FROM {t}.files")
    assert files == [("books", 1), ("books", 1), ("games", 1)]
    assert len(snapshot_ids(spark, t)) == 2

    # INSERT OVERWRITE replaces the partitions it writes (dynamic overwrite).
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        spark.sql(f"INSERT OVERWRITE {t} VALUES (4, 'books', 40.0)")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    assert rows(spark, f"SELECT * FROM {t}") == [(2, "games", 20.0), (4, "books", 40.0)]


def test_time_travel(spark, ns) -> None:
    t = f"floe.{ns}.orders"
    create_orders(spark, t)
    spark.sql(f"INSERT INTO {t} VALUES (1, 'books', 10.0)")
    first = snapshot_ids(spark, t)[-1]
    first_ts = one(spark, f"SELECT committed_at FROM {t}.snapshots WHERE snapshot_id = {first}")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'games', 20.0)")
    spark.sql(f"ALTER TABLE {t} CREATE TAG v1 AS OF VERSION {first}")

    assert rows(spark, f"SELECT id FROM {t} VERSION AS OF {first}") == [(1,)]
    assert rows(spark, f"SELECT id FROM {t} VERSION AS OF 'v1'") == [(1,)]
    assert rows(spark, f"SELECT id FROM {t} TIMESTAMP AS OF '{first_ts}'") == [(1,)]
    assert rows(spark, f"SELECT id FROM {t}") == [(1,), (2,)]
    # The DataFrame reader's options too: Spark's versionAsOf, and
    # Iceberg's own snapshot-id, which the 1.12 runtime (Spark 4.1,
    # SPARK_LINE=4.1) refuses in favour of versionAsOf.
    df = spark.read.option("versionAsOf", first).table(t)
    assert sorted(tuple(r) for r in df.select("id").collect()) == [(1,)]
    major, minor = (int(p) for p in spark._jvm.org.apache.iceberg.IcebergBuild.version().split(".")[:2])
    if (major, minor) < (1, 12):
        df = spark.read.option("snapshot-id", first).table(t)
        assert sorted(tuple(r) for r in df.select("id").collect()) == [(1,)]
    else:
        with pytest.raises(Exception, match="snapshot-id` is no longer supported"):
            spark.read.option("snapshot-id", first).table(t).collect()


def test_schema_evolution(spark, ns) -> None:
    t = f"floe.{ns}.orders"
    create_orders(spark, t)
    spark.sql(f"INSERT INTO {t} VALUES (1, 'books', 10.0)")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN note STRING COMMENT 'free text'")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN amount TO price")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN id COMMENT 'order id'")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN qty INT")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN qty TYPE BIGINT")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN note AFTER id")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'gift', 'games', 20.0, 5)")
    assert spark.table(t).columns == ["id", "note", "category", "price", "qty"]
    assert rows(spark, f"SELECT * FROM {t}") == [(1, None, "books", 10.0, None), (2, "gift", "games", 20.0, 5)]
    spark.sql(f"ALTER TABLE {t} DROP COLUMN note")
    assert spark.table(t).columns == ["id", "category", "price", "qty"]
    # The first snapshot still reads with its own schema.
    first = snapshot_ids(spark, t)[0]
    assert rows(spark, f"SELECT * FROM {t} VERSION AS OF {first}") == [(1, "books", 10.0)]
    # Four schema changes became schemas in the metadata, one at a time.
    assert one(spark, f"SELECT count(*) FROM {t}.metadata_log_entries") >= 7


def test_partition_evolution(spark, ns) -> None:
    t = f"floe.{ns}.events"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, kind STRING, ts TIMESTAMP) USING iceberg PARTITIONED BY (kind)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', TIMESTAMP '2024-05-01 10:00:00')")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION FIELD days(ts)")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'a', TIMESTAMP '2024-05-02 10:00:00')")
    spark.sql(f"ALTER TABLE {t} DROP PARTITION FIELD kind")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION FIELD bucket(4, id) AS id_bucket")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'b', TIMESTAMP '2024-05-03 10:00:00')")
    spark.sql(f"ALTER TABLE {t} WRITE ORDERED BY id")
    spark.sql(f"INSERT INTO {t} VALUES (4, 'b', TIMESTAMP '2024-05-03 11:00:00')")
    assert rows(spark, f"SELECT id FROM {t}") == [(1,), (2,), (3,), (4,)]
    assert rows(spark, f"SELECT id FROM {t} WHERE ts >= TIMESTAMP '2024-05-02 00:00:00'") == [(2,), (3,), (4,)]
    specs = rows(spark, f"SELECT DISTINCT spec_id FROM {t}.files")
    # Three specs wrote files: identity(kind); kind + day; day + bucket (the
    # spec after DROP has an id of its own too).
    assert len(specs) == 3 and specs[:2] == [(0,), (1,)], specs


def test_ctas_and_rtas(spark, ns) -> None:
    src = f"floe.{ns}.src"
    create_orders(spark, src)
    spark.sql(f"INSERT INTO {src} VALUES (1, 'books', 10.0), (2, 'games', 20.0), (3, 'books', 30.0)")

    t = f"floe.{ns}.books"
    spark.sql(
        f"CREATE TABLE {t} USING iceberg PARTITIONED BY (category) TBLPROPERTIES ('format-version'='2') "
        f"AS SELECT * FROM {src} WHERE category = 'books'"
    )
    assert rows(spark, f"SELECT id FROM {t}") == [(1,), (3,)]
    assert len(snapshot_ids(spark, t)) == 1

    # REPLACE keeps the table and its history, with a new schema and rows.
    spark.sql(f"REPLACE TABLE {t} USING iceberg AS SELECT id, amount * 2 AS doubled FROM {src}")
    assert spark.table(t).columns == ["id", "doubled"]
    assert rows(spark, f"SELECT * FROM {t}") == [(1, 20.0), (2, 40.0), (3, 60.0)]
    assert len(snapshot_ids(spark, t)) == 2

    # CREATE OR REPLACE on a table that does not exist yet creates it.
    t2 = f"floe.{ns}.fresh"
    spark.sql(f"CREATE OR REPLACE TABLE {t2} USING iceberg AS SELECT 7 AS id")
    assert rows(spark, f"SELECT * FROM {t2}") == [(7,)]
    spark.sql(f"CREATE OR REPLACE TABLE {t2} USING iceberg AS SELECT 8 AS id")
    assert rows(spark, f"SELECT * FROM {t2}") == [(8,)]
