"""Iceberg views through Spark SQL: create, replace, list, describe, read, rename, drop."""

from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException

from helpers import create_orders, rows


def views(spark, ns: str) -> list[str]:
    """The Iceberg views in ns (SHOW VIEWS lists the session's temporary views too)."""
    return [r[1] for r in rows(spark, f"SHOW VIEWS IN floe.{ns}") if not r[2]]


def test_views(spark, ns) -> None:
    t = f"floe.{ns}.orders"
    create_orders(spark, t)
    spark.sql(f"INSERT INTO {t} VALUES (1, 'books', 10.0), (2, 'games', 20.0), (3, 'books', 30.0)")

    v = f"floe.{ns}.books"
    spark.sql(f"CREATE VIEW {v} (id COMMENT 'order id', amount) COMMENT 'only books' TBLPROPERTIES ('team'='sales') AS SELECT id, amount FROM {t} WHERE category = 'books'")
    assert rows(spark, f"SELECT * FROM {v}") == [(1, 10.0), (3, 30.0)]
    assert views(spark, ns) == ["books"]
    # Views and tables share one key space.
    with pytest.raises(AnalysisException):
        spark.sql(f"CREATE VIEW {t} AS SELECT 1")
    desc = str(rows(spark, f"DESCRIBE EXTENDED {v}"))
    assert "only books" in desc, desc
    assert "team" in str(rows(spark, f"SHOW TBLPROPERTIES {v}"))

    spark.sql(f"CREATE OR REPLACE VIEW {v} AS SELECT id FROM {t} WHERE amount > 15")
    assert rows(spark, f"SELECT * FROM {v}") == [(2,), (3,)]
    spark.sql(f"ALTER VIEW {v} SET TBLPROPERTIES ('k'='v')")
    assert ("k", "v") in rows(spark, f"SHOW TBLPROPERTIES {v}")

    spark.sql(f"ALTER VIEW {v} RENAME TO {ns}.big")
    assert views(spark, ns) == ["big"]
    assert rows(spark, f"SELECT * FROM floe.{ns}.big") == [(2,), (3,)]
    spark.sql(f"DROP VIEW floe.{ns}.big")
    assert views(spark, ns) == []
    # The table is still there.
    assert [r[1] for r in rows(spark, f"SHOW TABLES IN floe.{ns}")] == ["orders"]
