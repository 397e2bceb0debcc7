"""Commits with several updates, and metadata evolution beyond adding a column.

Partition and sort-order evolution, type promotion, column deletion, upsert
and dynamic partition overwrite (several snapshots in one commit), multi-update
transactions and snapshot expiry (remove-snapshots).
"""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortDirection
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import IntegerType, LongType, NestedField, StringType

from conftest import FloeServer
from helpers import ARROW_SCHEMA, SCHEMA, arrow, assert_rows, create_orders, rows

BASE = rows((1, "books", 10.0, 0), (2, "games", 20.0, 1), (3, "music", 30.0, 2))


def test_partition_evolution(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(BASE[:1]))

    with tbl.update_spec() as spec:
        spec.remove_field("ts_day")
        spec.add_field("id", IdentityTransform(), "id_part")
    tbl.append(arrow(BASE[1:]))

    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert loaded.metadata.default_spec_id == 1
    assert len(loaded.specs()) == 2
    assert [f.name for f in loaded.spec().fields] == ["category", "id_part"]
    assert_rows(loaded.scan().to_arrow(), BASE)
    spec_ids = sorted(loaded.inspect.files().column("spec_id").to_pylist())
    assert spec_ids == [0, 1, 1]


def test_sort_order(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    with tbl.update_sort_order() as order:
        order.desc("amount", IdentityTransform())
        order.asc("id", IdentityTransform())
    loaded = floe.catalog().load_table(f"{ns}.orders")
    order = loaded.sort_order()
    assert order.order_id == 1
    assert [(f.source_id, f.direction) for f in order.fields] == [(3, SortDirection.DESC), (1, SortDirection.ASC)]


def test_type_promotion_and_delete_column(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "n", IntegerType(), required=False),
        NestedField(3, "gone", StringType(), required=False),
        identifier_field_ids=[1],
    )
    tbl = catalog.create_table(f"{ns}.t", schema)
    arrow_schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("n", pa.int32()), pa.field("gone", pa.string())])
    tbl.append(pa.Table.from_pylist([{"id": 1, "n": 7, "gone": "x"}], schema=arrow_schema))

    with tbl.update_schema() as update:
        update.update_column("n", LongType())
        update.delete_column("gone")

    loaded = floe.catalog().load_table(f"{ns}.t")
    assert [(f.name, str(f.field_type)) for f in loaded.schema().fields] == [("id", "long"), ("n", "long")]
    assert loaded.schema().identifier_field_ids == [1]
    got = loaded.scan().to_arrow()
    assert got.to_pylist() == [{"id": 1, "n": 7}]
    assert got.schema.field("n").type == pa.int64()


def test_transaction_with_several_updates(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    """Schema change, properties and an append in one commit."""
    tbl = create_orders(catalog, f"{ns}.orders")
    before = floe.catalog().load_table(f"{ns}.orders").metadata_location
    with tbl.transaction() as tx:
        with tx.update_schema() as update:
            update.add_column("note", StringType())
        tx.set_properties(stage="one-commit")
        evolved = ARROW_SCHEMA.append(pa.field("note", pa.string()))
        tx.append(pa.Table.from_pylist([{**r, "note": "n"} for r in BASE], schema=evolved))

    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert loaded.properties.get("stage") == "one-commit"
    assert [e.metadata_file for e in loaded.metadata.metadata_log] == [before], "expected exactly one commit"
    assert_rows(loaded.scan().to_arrow(), [{**r, "note": "n"} for r in BASE])


def test_upsert(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(BASE))
    changes = rows((2, "games", 25.0, 1), (4, "toys", 40.0, 0))
    result = tbl.upsert(arrow(changes), join_cols=["id"])
    assert (result.rows_updated, result.rows_inserted) == (1, 1)

    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert_rows(loaded.scan().to_arrow(), [BASE[0], changes[0], BASE[2], changes[1]])


def test_dynamic_partition_overwrite(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    # PyIceberg's dynamic overwrite needs identity-only partitioning.
    by_category = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"))
    tbl = catalog.create_table(f"{ns}.orders", SCHEMA, partition_spec=by_category)
    tbl.append(arrow(BASE))
    # Replaces only the games partition.
    tbl.dynamic_partition_overwrite(arrow(rows((7, "games", 70.0, 1))))
    assert_rows(
        floe.catalog().load_table(f"{ns}.orders").scan().to_arrow(),
        [BASE[0], BASE[2]] + rows((7, "games", 70.0, 1)),
    )


def test_expire_snapshots(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    for r in BASE:
        tbl.append(arrow([r]))
    first, second, third = (s.snapshot_id for s in tbl.snapshots())

    tbl.maintenance.expire_snapshots().by_ids([first, second]).commit()

    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert [s.snapshot_id for s in loaded.snapshots()] == [third]
    assert loaded.current_snapshot().snapshot_id == third
    assert_rows(loaded.scan().to_arrow(), BASE)
