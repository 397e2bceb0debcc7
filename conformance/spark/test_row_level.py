"""Row-level changes through Spark SQL: DELETE, UPDATE and MERGE INTO, in
merge-on-read (position deletes on v2, deletion vectors on v3) and
copy-on-write."""

from __future__ import annotations

import pytest

from helpers import create_orders, rows

CASES = [
    pytest.param(2, "merge-on-read", id="v2-mor"),
    pytest.param(2, "copy-on-write", id="v2-cow"),
    pytest.param(3, "merge-on-read", id="v3-mor"),
    pytest.param(3, "copy-on-write", id="v3-cow"),
]


@pytest.mark.parametrize(("version", "mode"), CASES)
def test_delete_update_merge(spark, ns, version: int, mode: str) -> None:
    t = f"floe.{ns}.orders"
    create_orders(spark, t, version, mode)
    spark.sql(f"INSERT INTO {t} VALUES (1, 'books', 10.0), (2, 'games', 20.0), (3, 'books', 30.0), (4, 'music', 40.0)")

    spark.sql(f"DELETE FROM {t} WHERE id = 3")
    assert rows(spark, f"SELECT id FROM {t}") == [(1,), (2,), (4,)]

    spark.sql(f"UPDATE {t} SET amount = amount + 1 WHERE category = 'books' OR id = 4")
    assert rows(spark, f"SELECT id, amount FROM {t}") == [(1, 11.0), (2, 20.0), (4, 41.0)]

    spark.createDataFrame([(2, "games", 22.0), (5, "toys", 50.0), (4, "music", -1.0)], "id BIGINT, category STRING, amount DOUBLE").createOrReplaceTempView("changes")
    spark.sql(
        f"""MERGE INTO {t} t USING changes s ON t.id = s.id
        WHEN MATCHED AND s.amount < 0 THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.amount = s.amount
        WHEN NOT MATCHED THEN INSERT *"""
    )
    assert rows(spark, f"SELECT * FROM {t}") == [(1, "books", 11.0), (2, "games", 22.0), (5, "toys", 50.0)]

    ops = [r[0] for r in spark.sql(f"SELECT operation FROM {t}.snapshots ORDER BY committed_at").collect()]
    deletes = rows(spark, f"SELECT content FROM {t}.all_delete_files")
    if mode == "merge-on-read":
        # Row-level deletes were written as delete files, not rewrites.
        assert "overwrite" in ops or "delete" in ops, ops
        assert deletes, "merge-on-read wrote no delete files"
        if version == 3:
            # v3 writes deletion vectors (puffin files).
            fmts = {r[0] for r in spark.sql(f"SELECT file_format FROM {t}.all_delete_files").collect()}
            assert fmts == {"PUFFIN"}, fmts
    else:
        assert deletes == [], deletes
    assert ops[0] == "append", ops
