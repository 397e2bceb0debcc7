"""Table-level branches and tags (snapshot refs), and branch-qualified warehouses.

Catalog-branch isolation (`lake@dev`, tags) is in test_catalog_branches.py;
here only `lake@main` and the errors for unknown warehouses and references.
"""

from __future__ import annotations

import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import BadRequestError
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.snapshots import Operation

from conftest import FloeServer
from helpers import arrow, assert_rows, create_orders, rows

MAIN = rows((1, "books", 10.0, 0), (2, "games", 20.0, 1))
DEV = rows((3, "books", 30.0, 2), (4, "music", 40.0, 0))
LATER = rows((5, "toys", 50.0, 3))


def test_append_to_branch(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(MAIN))
    base = tbl.current_snapshot().snapshot_id

    tbl.manage_snapshots().create_branch(base, "dev").commit()
    tbl.append(arrow(DEV), branch="dev")

    loaded = floe.catalog().load_table(f"{ns}.orders")
    refs = loaded.metadata.refs
    assert refs["dev"].snapshot_ref_type == SnapshotRefType.BRANCH
    assert refs["main"].snapshot_id == base, "a write to dev moved main"
    dev_head = loaded.snapshot_by_name("dev")
    assert dev_head.parent_snapshot_id == base
    assert dev_head.summary.operation == Operation.APPEND
    assert_rows(loaded.scan().to_arrow(), MAIN)
    assert_rows(loaded.scan().use_ref("dev").to_arrow(), MAIN + DEV)
    assert_rows(loaded.scan().use_ref("main").to_arrow(), MAIN)

    # main moves on independently.
    loaded.append(arrow(LATER))
    again = floe.catalog().load_table(f"{ns}.orders")
    assert_rows(again.scan().to_arrow(), MAIN + LATER)
    assert_rows(again.scan().use_ref("dev").to_arrow(), MAIN + DEV)

    # Overwrite and delete on the branch too.
    again.delete("category == 'books'", branch="dev")
    again.overwrite(arrow(LATER), overwrite_filter="category == 'music'", branch="dev")
    final = floe.catalog().load_table(f"{ns}.orders")
    assert_rows(final.scan().use_ref("dev").to_arrow(), [r for r in MAIN + DEV if r["category"] not in ("books", "music")] + LATER)
    assert_rows(final.scan().to_arrow(), MAIN + LATER)


def test_append_creates_branch(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    """Writing to a branch that does not exist yet creates it; main is untouched."""
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(MAIN))
    main_head = tbl.current_snapshot().snapshot_id

    tbl.append(arrow(DEV), branch="feature")

    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert loaded.metadata.refs["feature"].snapshot_ref_type == SnapshotRefType.BRANCH
    assert loaded.metadata.refs["main"].snapshot_id == main_head
    assert_rows(loaded.scan().to_arrow(), MAIN)
    feature = loaded.scan().use_ref("feature").to_arrow()
    assert {r["id"] for r in DEV} <= set(feature.column("id").to_pylist())


def test_stage_only_snapshot(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    """branch=None adds a snapshot that no ref points at (WAP-style staging)."""
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(MAIN))
    main_head = tbl.current_snapshot().snapshot_id

    tbl.append(arrow(DEV), branch=None)

    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert loaded.current_snapshot().snapshot_id == main_head
    assert set(loaded.metadata.refs) == {"main"}
    staged = [s for s in loaded.snapshots() if s.snapshot_id != main_head and s.parent_snapshot_id == main_head]
    assert len(staged) == 1
    assert_rows(loaded.scan(snapshot_id=staged[0].snapshot_id).to_arrow(), MAIN + DEV)

    # Publishing it: point main at the staged snapshot.
    loaded.manage_snapshots().set_current_snapshot(snapshot_id=staged[0].snapshot_id).commit()
    assert_rows(floe.catalog().load_table(f"{ns}.orders").scan().to_arrow(), MAIN + DEV)


def test_tags(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(MAIN))
    v1 = tbl.current_snapshot().snapshot_id
    tbl.manage_snapshots().create_tag(v1, "v1").commit()
    tbl.append(arrow(LATER))

    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert loaded.metadata.refs["v1"].snapshot_ref_type == SnapshotRefType.TAG
    assert loaded.metadata.refs["v1"].snapshot_id == v1
    assert_rows(loaded.scan().use_ref("v1").to_arrow(), MAIN)
    assert_rows(loaded.scan().to_arrow(), MAIN + LATER)

    # A tag with a retention, a second tag on the same snapshot, then removal.
    loaded.manage_snapshots().create_tag(v1, "v1-copy", max_ref_age_ms=86_400_000).commit()
    refs = floe.catalog().load_table(f"{ns}.orders").metadata.refs
    assert refs["v1-copy"].snapshot_id == v1 and refs["v1-copy"].max_ref_age_ms == 86_400_000

    loaded.manage_snapshots().remove_tag("v1").commit()
    refs = floe.catalog().load_table(f"{ns}.orders").metadata.refs
    assert "v1" not in refs and "v1-copy" in refs


def test_rollback_and_remove_branch(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    tbl = create_orders(catalog, f"{ns}.orders")
    tbl.append(arrow(MAIN))
    first = tbl.current_snapshot().snapshot_id
    tbl.manage_snapshots().create_branch(first, "audit").commit()
    tbl.append(arrow(LATER))

    tbl.manage_snapshots().rollback_to_snapshot(first).commit()
    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert loaded.current_snapshot().snapshot_id == first
    assert_rows(loaded.scan().to_arrow(), MAIN)

    loaded.manage_snapshots().remove_branch("audit").commit()
    assert "audit" not in floe.catalog().load_table(f"{ns}.orders").metadata.refs


def test_warehouse_at_main(floe: FloeServer, catalog: Catalog, ns: str) -> None:
    """`lake@main` is the same catalog branch as `lake`."""
    at_main = floe.catalog("lake@main")
    create_orders(catalog, f"{ns}.orders").append(arrow(MAIN))
    assert at_main.list_tables(ns) == [(ns, "orders")]
    assert_rows(at_main.load_table(f"{ns}.orders").scan().to_arrow(), MAIN)

    at_main.load_table(f"{ns}.orders").append(arrow(LATER))
    assert_rows(catalog.load_table(f"{ns}.orders").scan().to_arrow(), MAIN + LATER)


@pytest.mark.parametrize("warehouse", ["nope", "lake@no-such-branch", "nope@main"])
def test_unknown_warehouse(floe: FloeServer, warehouse: str) -> None:
    # GET /v1/config answers 400 BadRequestException naming the warehouse
    # (the spec lists no 404 for it), which PyIceberg raises as
    # BadRequestError when the catalog is loaded.
    with pytest.raises(BadRequestError, match="Warehouse"):
        floe.catalog(warehouse)
