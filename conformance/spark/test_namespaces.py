"""Namespaces through Spark SQL: create with properties, nested, list, describe, alter, drop."""

from __future__ import annotations

import uuid

import pytest
from pyspark.errors import AnalysisException

from helpers import rows


def test_namespace_lifecycle(spark) -> None:
    name = f"nsl_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE floe.{name} WITH PROPERTIES ('team'='sales', 'purpose'='test')")
    assert (name,) in rows(spark, "SHOW NAMESPACES IN floe")

    props = dict(rows(spark, f"DESCRIBE NAMESPACE EXTENDED floe.{name}"))
    assert "team" in str(props) and "sales" in str(props), props

    spark.sql(f"ALTER NAMESPACE floe.{name} SET PROPERTIES ('purpose'='changed')")
    props = str(rows(spark, f"DESCRIBE NAMESPACE EXTENDED floe.{name}"))
    assert "changed" in props, props

    # Nested namespaces list under their parent.
    spark.sql(f"CREATE NAMESPACE floe.{name}.child")
    assert (f"{name}.child",) in rows(spark, f"SHOW NAMESPACES IN floe.{name}")

    with pytest.raises(AnalysisException, match="already exists|SCHEMA_ALREADY_EXISTS"):
        spark.sql(f"CREATE NAMESPACE floe.{name}")

    # Not empty: the child is in it.
    spark.sql(f"CREATE TABLE floe.{name}.child.t (id BIGINT) USING iceberg")
    with pytest.raises(Exception, match="(?i)not empty|NON_EMPTY"):
        spark.sql(f"DROP NAMESPACE floe.{name}.child")
    spark.sql(f"DROP TABLE floe.{name}.child.t")
    spark.sql(f"DROP NAMESPACE floe.{name}.child")
    spark.sql(f"DROP NAMESPACE floe.{name}")
    assert (name,) not in rows(spark, "SHOW NAMESPACES IN floe")
    with pytest.raises(AnalysisException, match="SCHEMA_NOT_FOUND|not found|NoSuchNamespace"):
        spark.sql(f"DESCRIBE NAMESPACE floe.{name}")


def test_show_tables(spark, ns) -> None:
    for t in ("a", "b"):
        spark.sql(f"CREATE TABLE floe.{ns}.{t} (id BIGINT) USING iceberg")
    assert [r[1] for r in rows(spark, f"SHOW TABLES IN floe.{ns}")] == ["a", "b"]
    spark.sql(f"ALTER TABLE floe.{ns}.a RENAME TO {ns}.c")
    assert [r[1] for r in rows(spark, f"SHOW TABLES IN floe.{ns}")] == ["b", "c"]
    spark.sql(f"DROP TABLE floe.{ns}.b")
    assert [r[1] for r in rows(spark, f"SHOW TABLES IN floe.{ns}")] == ["c"]
