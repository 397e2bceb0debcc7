"""Shared table shapes and comparisons for the PyIceberg conformance tests."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestampType
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

# orders(id long required, category string, amount double, ts timestamp),
# partitioned by identity(category) and day(ts).
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "category", StringType(), required=False),
    NestedField(3, "amount", DoubleType(), required=False),
    NestedField(4, "ts", TimestampType(), required=False),
)
SPEC = PartitionSpec(
    PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"),
    PartitionField(source_id=4, field_id=1001, transform=DayTransform(), name="ts_day"),
)
ARROW_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("amount", pa.float64()),
        pa.field("ts", pa.timestamp("us")),
    ]
)

T0 = dt.datetime(2024, 5, 1, 8, 30)


def local_path(location: str) -> Path:
    """The local path of a file:// location."""
    u = urlparse(location)
    assert u.scheme == "file", location
    return Path(unquote(u.path))


def rows(*specs: tuple[int, str, float, int]) -> list[dict[str, Any]]:
    """Rows from (id, category, amount, day offset from 2024-05-01) tuples."""
    return [
        {"id": i, "category": c, "amount": a, "ts": T0 + dt.timedelta(days=d, minutes=i)} for i, c, a, d in specs
    ]


def arrow(rs: list[dict[str, Any]], schema: pa.Schema = ARROW_SCHEMA) -> pa.Table:
    return pa.Table.from_pylist(rs, schema=schema)


def create_orders(catalog: Catalog, ident: str, **kw: Any) -> Table:
    return catalog.create_table(ident, schema=SCHEMA, partition_spec=SPEC, **kw)


def sorted_rows(table: pa.Table, key: str = "id") -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r[key])


def assert_rows(actual: pa.Table, expected: list[dict[str, Any]], key: str = "id") -> None:
    """Compare row by row, ordered by key, with a readable first difference."""
    got = sorted_rows(actual, key)
    want = sorted(expected, key=lambda r: r[key])
    assert len(got) == len(want), f"{len(got)} rows, want {len(want)}:\ngot  {got}\nwant {want}"
    for n, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"row {n} differs:\ngot  {g}\nwant {w}"


# A view over orders: totals(category string, total double).
VIEW_SCHEMA = Schema(
    NestedField(1, "category", StringType(), required=False),
    NestedField(2, "total", DoubleType(), required=False),
)
SQL = "SELECT category, sum(amount) AS total FROM orders GROUP BY category"


def version(ns: str, sql: str = SQL) -> ViewVersion:
    return ViewVersion(
        version_id=1,
        schema_id=0,
        timestamp_ms=1_700_000_000_000,
        summary={"engine-name": "pyiceberg-conformance"},
        representations=[SQLViewRepresentation(type="sql", sql=sql, dialect="spark")],
        default_namespace=(ns,),
    )
