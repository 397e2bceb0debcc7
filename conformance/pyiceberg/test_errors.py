"""Error mapping: floe's REST errors surface as PyIceberg's exceptions.

Plus optimistic concurrency: a commit whose requirements no longer hold is
409 CommitFailedException, which PyIceberg retries itself for data writes.
"""

from __future__ import annotations

import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    RESTError,
    TableAlreadyExistsError,
)
from pyiceberg.types import LongType, StringType

from conftest import FloeServer
from helpers import SCHEMA, arrow, assert_rows, create_orders, rows

A = rows((1, "books", 10.0, 0))
B = rows((2, "games", 20.0, 1))


def test_no_such_table(catalog: Catalog, ns: str) -> None:
    with pytest.raises(NoSuchTableError, match=f"Table does not exist: {ns}.missing"):
        catalog.load_table(f"{ns}.missing")
    # A missing namespace on a table route is NoSuchTable too, as clients expect.
    with pytest.raises(NoSuchTableError):
        catalog.load_table(f"{ns}_missing.t")
    with pytest.raises(NoSuchTableError):
        catalog.drop_table(f"{ns}.missing")
    assert not catalog.table_exists(f"{ns}.missing")
    assert not catalog.table_exists(f"{ns}_missing.t")


def test_no_such_namespace(catalog: Catalog, ns: str) -> None:
    missing = f"{ns}_missing"
    with pytest.raises(NoSuchNamespaceError, match=f"Namespace does not exist: {missing}"):
        catalog.load_namespace_properties(missing)
    with pytest.raises(NoSuchNamespaceError):
        catalog.create_table(f"{missing}.t", SCHEMA)
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_tables(missing)


def test_namespace_already_exists(catalog: Catalog, ns: str) -> None:
    with pytest.raises(NamespaceAlreadyExistsError, match=f"Namespace already exists: {ns}"):
        catalog.create_namespace(ns)


def test_table_already_exists(catalog: Catalog, ns: str) -> None:
    create_orders(catalog, f"{ns}.orders")
    with pytest.raises(TableAlreadyExistsError, match=f"Table already exists: {ns}.orders"):
        create_orders(catalog, f"{ns}.orders")
    # create_table_if_not_exists loads the existing one instead.
    assert catalog.create_table_if_not_exists(f"{ns}.orders", SCHEMA).name() == (ns, "orders")


def test_namespace_not_empty(catalog: Catalog, ns: str) -> None:
    create_orders(catalog, f"{ns}.orders")
    with pytest.raises(NamespaceNotEmptyError, match=f"Namespace not empty: {ns}"):
        catalog.drop_namespace(ns)
    assert catalog.namespace_exists(ns)


def test_stale_schema_update(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    """assert-current-schema-id fails after another writer evolved the schema."""
    create_orders(catalog, f"{ns}.orders")
    first = catalog.load_table(f"{ns}.orders")
    stale = floe.catalog().load_table(f"{ns}.orders")

    with first.update_schema() as update:
        update.add_column("note", StringType())
    with pytest.raises(CommitFailedException, match="schema"):
        with stale.update_schema() as update:
            update.add_column("qty", LongType())

    schema = floe.catalog().load_table(f"{ns}.orders").schema()
    assert schema.find_field("note", case_sensitive=True)
    assert "qty" not in [f.name for f in schema.fields]


def test_stale_append_without_retry(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    """With client retries and floe's zero-retry appends off, a stale
    assert-ref-snapshot-id is a CommitFailedException."""
    create_orders(
        catalog,
        f"{ns}.orders",
        properties={"commit.retry.num-retries": "0", "floe.commit.rebase-appends": "false"},
    )
    first = catalog.load_table(f"{ns}.orders")
    stale = floe.catalog().load_table(f"{ns}.orders")

    first.append(arrow(A))
    with pytest.raises(CommitFailedException, match="main"):
        stale.append(arrow(B))
    assert_rows(floe.catalog().load_table(f"{ns}.orders").scan().to_arrow(), A)


def test_stale_append_rebased_by_server(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    """With client retries off, a stale append still lands on its first
    attempt: floe re-parents it onto the new head (zero-retry appends)."""
    create_orders(catalog, f"{ns}.orders", properties={"commit.retry.num-retries": "0"})
    first = catalog.load_table(f"{ns}.orders")
    stale = floe.catalog().load_table(f"{ns}.orders")

    first.append(arrow(A))
    stale.append(arrow(B))
    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert_rows(loaded.scan().to_arrow(), A + B)
    head = loaded.current_snapshot()
    assert head is not None and head.summary is not None
    assert head.summary["total-records"] == "2"
    assert head.summary["floe.merge.source-ref"] == "main"


def test_stale_append_retried_by_client(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    """With PyIceberg's default retries, both concurrent appends land, one after the other."""
    create_orders(catalog, f"{ns}.orders")
    first = catalog.load_table(f"{ns}.orders")
    stale = floe.catalog().load_table(f"{ns}.orders")

    first.append(arrow(A))
    stale.append(arrow(B))

    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert_rows(loaded.scan().to_arrow(), A + B)
    snaps = loaded.snapshots()
    assert len(snaps) == 2 and snaps[1].parent_snapshot_id == snaps[0].snapshot_id


def test_commit_to_replaced_table(catalog: Catalog, ns: str) -> None:
    """assert-table-uuid fails when the name now holds a different table."""
    old = create_orders(catalog, f"{ns}.orders")
    catalog.drop_table(f"{ns}.orders")
    create_orders(catalog, f"{ns}.orders")
    with pytest.raises(CommitFailedException):
        old.transaction().set_properties(x="1").commit_transaction()
    assert "x" not in catalog.load_table(f"{ns}.orders").properties


def test_commit_to_dropped_table(catalog: Catalog, ns: str) -> None:
    old = create_orders(catalog, f"{ns}.orders")
    catalog.drop_table(f"{ns}.orders")
    # floe answers 404 NoSuchTableException; PyIceberg's commit_table has no
    # 404 mapping, so it surfaces as a RESTError naming the type.
    with pytest.raises(RESTError, match=f"NoSuchTableException: Table does not exist: {ns}.orders"):
        old.transaction().set_properties(x="1").commit_transaction()
    assert not catalog.table_exists(f"{ns}.orders")
