"""Tables: create (partitioned), write, scan, overwrite, delete, evolve, rename, drop.

Every check that matters reads through a fresh load_table (often from a second
catalog client), so it sees what floe stored rather than PyIceberg's in-memory
copy of the table.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import BadRequestError, NoSuchNamespaceError, NoSuchTableError, TableAlreadyExistsError
from pyiceberg.expressions import EqualTo, GreaterThan, In
from pyiceberg.table.snapshots import Operation
from pyiceberg.types import LongType, StringType

from conftest import FloeServer
from helpers import ARROW_SCHEMA, SCHEMA, SPEC, arrow, assert_rows, create_orders, local_path, rows

BASE = rows(
    (1, "books", 12.5, 0),
    (2, "books", 7.0, 1),
    (3, "games", 59.9, 0),
    (4, "music", 9.99, 2),
    (5, "games", 19.0, 1),
)


def test_create_partitioned(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders", properties={"owner": "etl", "format-version": "2"})

    assert catalog.table_exists(f"{ns}.orders")
    assert catalog.list_tables(ns) == [(ns, "orders")]

    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert loaded.metadata.table_uuid == tbl.metadata.table_uuid
    assert loaded.metadata.format_version == 2
    assert loaded.schema().as_struct() == SCHEMA.as_struct()
    assert [(f.name, str(f.transform), f.source_id) for f in loaded.spec().fields] == [
        ("category", "identity", 2),
        ("ts_day", "day", 4),
    ]
    assert loaded.properties.get("owner") == "etl"
    assert loaded.current_snapshot() is None
    assert loaded.scan().to_arrow().num_rows == 0

    # The default location is inside the warehouse, and the metadata file exists.
    location = local_path(loaded.location())
    assert location.is_relative_to(floe.warehouse_dir.resolve()), (location, floe.warehouse_dir)
    assert local_path(loaded.metadata_location).is_file()


def test_append_and_scan(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(BASE[:3]))
    tbl.append(arrow(BASE[3:]))

    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert_rows(loaded.scan().to_arrow(), BASE)

    snaps = loaded.snapshots()
    assert len(snaps) == 2
    assert snaps[1].parent_snapshot_id == snaps[0].snapshot_id
    assert loaded.current_snapshot().snapshot_id == snaps[1].snapshot_id
    assert loaded.current_snapshot().summary.operation == Operation.APPEND
    assert loaded.metadata.refs["main"].snapshot_id == snaps[1].snapshot_id

    # Filters and projections prune on partitions and columns.
    assert_rows(
        loaded.scan(row_filter=EqualTo("category", "games")).to_arrow(),
        [r for r in BASE if r["category"] == "games"],
    )
    projected = loaded.scan(row_filter="amount > 10", selected_fields=("id", "amount")).to_arrow()
    assert projected.column_names == ["id", "amount"]
    assert sorted(projected.column("id").to_pylist()) == [1, 3, 5]

    # Time travel to the first snapshot.
    assert_rows(loaded.scan(snapshot_id=snaps[0].snapshot_id).to_arrow(), BASE[:3])

    # One data file per (category, day) partition, all inside the table location.
    files = loaded.inspect.files()
    partitions = {(p["category"], p["ts_day"]) for p in files.column("partition").to_pylist()}
    assert partitions == {(r["category"], r["ts"].date()) for r in BASE}
    table_dir = local_path(loaded.location())
    for path in files.column("file_path").to_pylist():
        p = local_path(path)
        assert p.is_file() and p.is_relative_to(table_dir), path


def test_overwrite_all(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(BASE))
    replacement = rows((10, "toys", 5.0, 3), (11, "books", 1.0, 0))
    tbl.overwrite(arrow(replacement))

    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert_rows(loaded.scan().to_arrow(), replacement)
    ops = [s.summary.operation for s in loaded.snapshots()]
    assert ops[0] == Operation.APPEND
    assert ops[-1] == Operation.APPEND  # the new data, after the delete of the old
    assert Operation.DELETE in ops[1:] or Operation.OVERWRITE in ops[1:]


def test_overwrite_with_filter(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(BASE))
    replacement = rows((20, "books", 30.0, 5))
    tbl.overwrite(arrow(replacement), overwrite_filter=EqualTo("category", "books"))

    want = [r for r in BASE if r["category"] != "books"] + replacement
    assert_rows(floe.catalog().load_table(f"{ns}.orders").scan().to_arrow(), want)

    # A filter that cuts through a partition rewrites the surviving rows.
    tbl = catalog.load_table(f"{ns}.orders")
    tbl.overwrite(arrow(rows((21, "games", 1.0, 0))), overwrite_filter="amount > 50")
    want = [r for r in want if r["amount"] <= 50] + rows((21, "games", 1.0, 0))
    assert_rows(floe.catalog().load_table(f"{ns}.orders").scan().to_arrow(), want)


def test_delete_with_filter(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(BASE))

    # Whole partitions: a metadata-only delete.
    tbl.delete(EqualTo("category", "music"))
    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert loaded.current_snapshot().summary.operation == Operation.DELETE
    want = [r for r in BASE if r["category"] != "music"]
    assert_rows(loaded.scan().to_arrow(), want)

    # Part of a data file: copy-on-write rewrite.
    tbl = catalog.load_table(f"{ns}.orders")
    tbl.delete(GreaterThan("amount", 15.0))
    want = [r for r in want if r["amount"] <= 15.0]
    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert_rows(loaded.scan().to_arrow(), want)

    # Nothing matches: no new snapshot.
    before = loaded.current_snapshot().snapshot_id
    with pytest.warns(UserWarning, match="did not match any records"):
        loaded.delete(In("category", ["none", "nothing"]))
    assert floe.catalog().load_table(f"{ns}.orders").current_snapshot().snapshot_id == before

    # Everything.
    loaded.delete()
    assert floe.catalog().load_table(f"{ns}.orders").scan().to_arrow().num_rows == 0


def test_schema_evolution(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(BASE[:2]))

    with tbl.update_schema() as update:
        update.add_column("note", StringType(), doc="free text")
        update.add_column("qty", LongType())
    with tbl.update_schema() as update:
        update.rename_column("amount", "price")

    loaded = floe.catalog().load_table(f"{ns}.orders")
    schema = loaded.schema()
    assert [f.name for f in schema.fields] == ["id", "category", "price", "ts", "note", "qty"]
    assert schema.find_field("note").field_id == 5 and schema.find_field("note").doc == "free text"
    assert schema.find_field("price").field_id == 3
    assert loaded.metadata.current_schema_id == 2
    assert len(loaded.schemas()) == 3

    evolved = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("category", pa.string()),
            pa.field("price", pa.float64()),
            pa.field("ts", pa.timestamp("us")),
            pa.field("note", pa.string()),
            pa.field("qty", pa.int64()),
        ]
    )
    new_rows = [{**rows((7, "books", 3.0, 4))[0], "note": "gift", "qty": 2}]
    new_rows[0]["price"] = new_rows[0].pop("amount")
    loaded.append(pa.Table.from_pylist(new_rows, schema=evolved))

    got = floe.catalog().load_table(f"{ns}.orders").scan().to_arrow()
    old = [{"id": r["id"], "category": r["category"], "price": r["amount"], "ts": r["ts"], "note": None, "qty": None} for r in BASE[:2]]
    assert_rows(got, old + new_rows)


def test_table_properties(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders", properties={"a": "1", "b": "2"})
    with tbl.transaction() as tx:
        tx.set_properties(b="20", c="3")
    tbl.transaction().remove_properties("a").commit_transaction()

    props = floe.catalog().load_table(f"{ns}.orders").properties
    assert "a" not in props
    assert props.get("b") == "20"
    assert props.get("c") == "3"


def test_rename(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(BASE))
    uuid = tbl.metadata.table_uuid

    renamed = catalog.rename_table(f"{ns}.orders", f"{ns}.orders_v2")
    assert renamed.name() == (ns, "orders_v2")
    assert not catalog.table_exists(f"{ns}.orders")
    assert catalog.list_tables(ns) == [(ns, "orders_v2")]
    with pytest.raises(NoSuchTableError):
        catalog.load_table(f"{ns}.orders")
    loaded = floe.catalog().load_table(f"{ns}.orders_v2")
    assert loaded.metadata.table_uuid == uuid
    assert_rows(loaded.scan().to_arrow(), BASE)

    # Across namespaces; writes go on under the new name.
    other = f"{ns}_other"
    catalog.create_namespace(other)
    catalog.rename_table(f"{ns}.orders_v2", (other, "archive"))
    assert catalog.list_tables(ns) == []
    moved = catalog.load_table((other, "archive"))
    assert moved.metadata.table_uuid == uuid
    moved.append(arrow(rows((9, "toys", 1.0, 0))))
    assert_rows(floe.catalog().load_table((other, "archive")).scan().to_arrow(), BASE + rows((9, "toys", 1.0, 0)))


def test_rename_errors(catalog: Catalog, ns: str) -> None:
    create_orders(catalog, f"{ns}.a")
    create_orders(catalog, f"{ns}.b")
    with pytest.raises(TableAlreadyExistsError):
        catalog.rename_table(f"{ns}.a", f"{ns}.b")
    with pytest.raises(NoSuchTableError):
        catalog.rename_table(f"{ns}.missing", f"{ns}.c")
    # A missing target namespace is a 404; PyIceberg maps every rename 404 to NoSuchTableError.
    with pytest.raises((NoSuchTableError, NoSuchNamespaceError)):
        catalog.rename_table(f"{ns}.a", f"{ns}_missing.a")
    assert sorted(catalog.list_tables(ns)) == [(ns, "a"), (ns, "b")]


def test_drop(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(BASE))
    data_files = [local_path(p) for p in tbl.inspect.files().column("file_path").to_pylist()]

    catalog.drop_table(f"{ns}.orders")
    assert not catalog.table_exists(f"{ns}.orders")
    assert catalog.list_tables(ns) == []
    with pytest.raises(NoSuchTableError):
        floe.catalog().load_table(f"{ns}.orders")
    with pytest.raises(NoSuchTableError):
        catalog.drop_table(f"{ns}.orders")

    # The name is free again, for a new table with a new uuid.
    again = create_orders(catalog, f"{ns}.orders")
    assert again.metadata.table_uuid != tbl.metadata.table_uuid
    assert catalog.load_table(f"{ns}.orders").scan().to_arrow().num_rows == 0

    # Purge is recorded, but floe never deletes files (other refs may use them).
    catalog.purge_table(f"{ns}.orders")
    assert not catalog.table_exists(f"{ns}.orders")
    assert all(p.is_file() for p in data_files)


def test_append_arrow_schema_subset(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    """Optional columns (other than partition sources) may be left out of the written Arrow table."""
    tbl = create_orders(catalog, f"{ns}.orders")
    fields = ("id", "category", "ts")
    partial = pa.Table.from_pylist(
        [{k: v for k, v in r.items() if k in fields} for r in BASE[:2]],
        schema=pa.schema([ARROW_SCHEMA.field(f) for f in fields]),
    )
    tbl.append(partial)
    assert_rows(
        floe.catalog().load_table(f"{ns}.orders").scan().to_arrow(),
        [{**r, "amount": None} for r in BASE[:2]],
    )


def test_metadata_files(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    """Each commit writes the next NNNNN-<uuid>.metadata.json and logs the previous one."""
    tbl = create_orders(catalog, f"{ns}.orders")
    first = tbl.metadata_location
    assert Path(urlparse(first).path).name.startswith("00000-")
    tbl.append(arrow(BASE[:1]))
    tbl.transaction().set_properties(x="1").commit_transaction()

    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert Path(urlparse(loaded.metadata_location).path).name.startswith("00002-")
    assert local_path(loaded.metadata_location).parent == local_path(loaded.location()) / "metadata"
    log = [e.metadata_file for e in loaded.metadata.metadata_log]
    assert len(log) == 2 and log[0] == first
    assert all(local_path(f).is_file() for f in log)


def test_create_table_transaction(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    """stage-create, then one assert-create commit with schema, data and properties."""
    with catalog.create_table_transaction(f"{ns}.orders", SCHEMA, partition_spec=SPEC) as tx:
        assert not catalog.table_exists(f"{ns}.orders"), "stage-create must not create the table"
        tx.set_properties(stage="yes")
        tx.append(arrow(BASE))

    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert loaded.properties.get("stage") == "yes"
    assert len(loaded.snapshots()) == 1
    assert_rows(loaded.scan().to_arrow(), BASE)


def test_explicit_location(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    inside = (floe.warehouse_dir.resolve() / "custom" / f"{ns}-orders").as_uri()
    tbl = create_orders(catalog, f"{ns}.orders", location=inside)
    tbl.append(arrow(BASE[:2]))
    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert loaded.location() == inside
    assert local_path(loaded.metadata_location).is_relative_to(local_path(inside))
    assert_rows(loaded.scan().to_arrow(), BASE[:2])

    outside = (floe.warehouse_dir.resolve().parent / "elsewhere").as_uri()
    with pytest.raises(BadRequestError):
        create_orders(catalog, f"{ns}.escaped", location=outside)
    with pytest.raises(BadRequestError):
        create_orders(catalog, f"{ns}.dotdot", location=inside + "/../../../elsewhere")
    assert not catalog.table_exists(f"{ns}.escaped")
    assert not catalog.table_exists(f"{ns}.dotdot")


def test_register_table(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(BASE))
    metadata_location = catalog.load_table(f"{ns}.orders").metadata_location
    catalog.drop_table(f"{ns}.orders")

    registered = catalog.register_table(f"{ns}.restored", metadata_location)
    assert registered.metadata_location == metadata_location
    loaded = floe.catalog().load_table(f"{ns}.restored")
    assert loaded.metadata.table_uuid == tbl.metadata.table_uuid
    assert_rows(loaded.scan().to_arrow(), BASE)
    with pytest.raises(TableAlreadyExistsError):
        catalog.register_table(f"{ns}.restored", metadata_location)

    # Writes continue from the registered metadata.
    loaded.append(arrow(rows((6, "toys", 2.0, 0))))
    assert_rows(floe.catalog().load_table(f"{ns}.restored").scan().to_arrow(), BASE + rows((6, "toys", 2.0, 0)))


def test_snapshot_loading_mode_refs(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    for r in BASE[:3]:
        tbl.append(arrow([r]))

    refs_only = floe.catalog(**{"snapshot-loading-mode": "refs"}).load_table(f"{ns}.orders")
    assert [s.snapshot_id for s in refs_only.snapshots()] == [tbl.current_snapshot().snapshot_id]
    assert_rows(refs_only.scan().to_arrow(), BASE[:3])

    # A write based on the trimmed metadata keeps the whole history.
    refs_only.append(arrow(BASE[3:4]))
    full = floe.catalog().load_table(f"{ns}.orders")
    assert len(full.snapshots()) == 4
    assert_rows(full.scan().to_arrow(), BASE[:4])


def test_dotted_namespace_level(catalog: Catalog, ns: str) -> None:
    """A dot inside one namespace level is data, not a separator (floe's separator is %1F)."""
    level = f"{ns}.with.dots"
    catalog.create_namespace((level,))
    assert (level,) in catalog.list_namespaces()
    assert catalog.list_namespaces((level,)) == []
    create_orders(catalog, (level, "t"))
    assert catalog.list_tables((level,)) == [(level, "t")]
    assert catalog.load_table((level, "t")).name() == (level, "t")
