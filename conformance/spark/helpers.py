"""Small helpers shared by the Spark conformance tests."""

from __future__ import annotations

import subprocess
from typing import Any


def rows(spark: Any, query: str) -> list[tuple]:
    """The rows of a query as plain tuples, sorted, so comparisons ignore order."""
    return sorted(tuple(r) for r in spark.sql(query).collect())


def one(spark: Any, query: str) -> Any:
    """The single value a query returns."""
    result = spark.sql(query).collect()
    assert len(result) == 1 and len(result[0]) == 1, result
    return result[0][0]


def snapshot_ids(spark: Any, table: str) -> list[int]:
    """The table's snapshot ids, oldest first."""
    return [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at").collect()]


def create_orders(spark: Any, table: str, version: int = 2, mode: str | None = None) -> None:
    """orders(id, category, amount), partitioned by category, format `version`;
    mode (merge-on-read or copy-on-write) for deletes, updates and merges."""
    props = {"format-version": str(version)}
    if mode:
        props |= {"write.delete.mode": mode, "write.update.mode": mode, "write.merge.mode": mode}
    tbl_props = ", ".join(f"'{k}'='{v}'" for k, v in props.items())
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT NOT NULL, category STRING, amount DOUBLE) "
        f"USING iceberg PARTITIONED BY (category) TBLPROPERTIES ({tbl_props})"
    )


def add_catalog(spark: Any, floe: Any, name: str, warehouse: str) -> None:
    """Add a Spark catalog on warehouse (e.g. lake@BRANCH) of the floe server
    to the running session, its table cache off (Spark instantiates a
    catalog when a statement first names it)."""
    spark.conf.set(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{name}.type", "rest")
    spark.conf.set(f"spark.sql.catalog.{name}.uri", floe.uri)
    spark.conf.set(f"spark.sql.catalog.{name}.warehouse", warehouse)
    spark.conf.set(f"spark.sql.catalog.{name}.cache-enabled", "false")


def floe_cli(floe: Any, *args: str) -> subprocess.CompletedProcess:
    """Run the floe CLI against the server, output captured."""
    return subprocess.run(
        [str(floe.bin), *args, "--server", floe.uri],
        capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def branch_catalog(spark: Any, floe: Any, prefix: str) -> tuple[str, str]:
    """A new catalog branch named prefix_<random> at main's head, and a Spark
    catalog on it; returns both names."""
    import uuid

    branch = f"{prefix}_{uuid.uuid4().hex[:6]}"
    main = floe.nessie("GET", "/trees/main")["reference"]
    floe.nessie("POST", f"/trees?name={branch}&type=BRANCH", main)
    cat = f"c_{branch}"
    add_catalog(spark, floe, cat, f"lake@{branch}")
    return branch, cat
