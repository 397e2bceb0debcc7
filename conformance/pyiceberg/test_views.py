"""Views: create, list, exists, load, drop, and the shared table/view key space."""

from __future__ import annotations

import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import (
    NamespaceNotEmptyError,
    NoSuchViewError,
    TableAlreadyExistsError,
    ViewAlreadyExistsError,
)

from conftest import FloeServer
from helpers import SCHEMA, SQL, VIEW_SCHEMA, create_orders, local_path, version


def test_create_list_load_drop(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    created = catalog.create_view(f"{ns}.totals", VIEW_SCHEMA, version(ns), properties={"comment": "per category"})
    assert created.name() == (ns, "totals")

    assert catalog.view_exists(f"{ns}.totals")
    assert catalog.list_views(ns) == [(ns, "totals")]
    assert catalog.list_tables(ns) == []

    view = floe.catalog().load_view(f"{ns}.totals")
    assert view.metadata.view_uuid == created.metadata.view_uuid
    assert view.metadata.properties.get("comment") == "per category"
    assert view.schema().as_struct() == VIEW_SCHEMA.as_struct()
    current = view.current_version()
    assert current.default_namespace == [ns] or tuple(current.default_namespace) == (ns,)
    [rep] = current.representations
    assert (rep.root.sql, rep.root.dialect) == (SQL, "spark")
    assert current.summary.get("engine-name") == "pyiceberg-conformance"

    catalog.drop_view(f"{ns}.totals")
    assert not catalog.view_exists(f"{ns}.totals")
    assert catalog.list_views(ns) == []
    with pytest.raises(NoSuchViewError):
        catalog.load_view(f"{ns}.totals")
    with pytest.raises(NoSuchViewError):
        catalog.drop_view(f"{ns}.totals")


def test_create_twice(catalog: Catalog, ns: str) -> None:
    catalog.create_view(f"{ns}.v", VIEW_SCHEMA, version(ns))
    with pytest.raises(ViewAlreadyExistsError):
        catalog.create_view(f"{ns}.v", VIEW_SCHEMA, version(ns, "SELECT 1"))
    [rep] = catalog.load_view(f"{ns}.v").current_version().representations
    assert rep.root.sql == SQL


def test_tables_and_views_share_names(catalog: Catalog, ns: str) -> None:
    create_orders(catalog, f"{ns}.orders")
    catalog.create_view(f"{ns}.totals", VIEW_SCHEMA, version(ns))

    with pytest.raises(ViewAlreadyExistsError, match="Table with same name already exists"):
        catalog.create_view(f"{ns}.orders", VIEW_SCHEMA, version(ns))
    with pytest.raises(TableAlreadyExistsError, match="View with same name already exists"):
        catalog.create_table(f"{ns}.totals", SCHEMA)

    assert catalog.list_tables(ns) == [(ns, "orders")]
    assert catalog.list_views(ns) == [(ns, "totals")]
    assert not catalog.view_exists(f"{ns}.orders")
    assert not catalog.table_exists(f"{ns}.totals")


def test_namespace_with_view_is_not_empty(catalog: Catalog, ns: str) -> None:
    catalog.create_view(f"{ns}.v", VIEW_SCHEMA, version(ns))
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace(ns)
    catalog.drop_view(f"{ns}.v")
    catalog.drop_namespace(ns)


def test_register_view(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    created = catalog.create_view(f"{ns}.totals", VIEW_SCHEMA, version(ns))
    # PyIceberg's View keeps no metadata location: find the file on disk.
    [metadata_file] = (local_path(created.metadata.location) / "metadata").glob("*.metadata.json")
    catalog.drop_view(f"{ns}.totals")

    registered = catalog.register_view(f"{ns}.restored", metadata_file.as_uri())
    assert registered.metadata.view_uuid == created.metadata.view_uuid
    assert catalog.list_views(ns) == [(ns, "restored")]
    [rep] = floe.catalog().load_view(f"{ns}.restored").current_version().representations
    assert rep.root.sql == SQL
    with pytest.raises(ViewAlreadyExistsError):
        catalog.register_view(f"{ns}.restored", metadata_file.as_uri())
