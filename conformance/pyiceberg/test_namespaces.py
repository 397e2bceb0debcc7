"""Namespaces: create with properties, list, load, update properties, drop."""

from __future__ import annotations

import uuid

import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    RESTError,
)

from helpers import create_orders


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def test_create_load_list_drop(catalog: Catalog) -> None:
    name = unique("sales")
    props = {"owner": "alice", "comment": "orders and returns"}
    catalog.create_namespace(name, props)

    assert catalog.namespace_exists(name)
    loaded = catalog.load_namespace_properties(name)
    assert {k: loaded.get(k) for k in props} == props
    assert (name,) in catalog.list_namespaces()

    catalog.drop_namespace(name)
    assert not catalog.namespace_exists(name)
    assert (name,) not in catalog.list_namespaces()
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties(name)
    with pytest.raises(NoSuchNamespaceError):
        catalog.drop_namespace(name)


def test_create_twice(catalog: Catalog) -> None:
    name = unique("dup")
    catalog.create_namespace(name)
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace(name, {"owner": "bob"})
    # The failed create changed nothing.
    assert "owner" not in catalog.load_namespace_properties(name)


def test_nested(catalog: Catalog) -> None:
    parent = unique("parent")
    catalog.create_namespace(parent)
    catalog.create_namespace((parent, "child"), {"level": "2"})
    catalog.create_namespace((parent, "child", "grandchild"))

    assert catalog.list_namespaces(parent) == [(parent, "child")]
    assert catalog.list_namespaces((parent, "child")) == [(parent, "child", "grandchild")]
    assert catalog.list_namespaces((parent, "child", "grandchild")) == []
    assert (parent, "child") not in catalog.list_namespaces()
    assert catalog.load_namespace_properties(f"{parent}.child").get("level") == "2"
    assert catalog.namespace_exists(f"{parent}.child.grandchild")

    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace(parent)
    catalog.drop_namespace((parent, "child", "grandchild"))
    catalog.drop_namespace((parent, "child"))
    catalog.drop_namespace(parent)
    assert not catalog.namespace_exists(parent)


def test_create_child_without_parent(catalog: Catalog) -> None:
    parent = unique("orphan")
    with pytest.raises((NoSuchNamespaceError, RESTError), match="does not exist"):
        catalog.create_namespace((parent, "child"))
    assert not catalog.namespace_exists((parent, "child"))


def test_names_with_spaces_and_unicode(catalog: Catalog) -> None:
    name = unique("sales data ünïcödé/%")
    catalog.create_namespace(name, {"k": "v"})
    assert catalog.namespace_exists(name)
    assert (name,) in catalog.list_namespaces()
    assert catalog.load_namespace_properties(name).get("k") == "v"
    tbl = create_orders(catalog, f"{name}.orders table")
    assert catalog.list_tables(name) == [(name, "orders table")]
    assert catalog.load_table((name, "orders table")).metadata.table_uuid == tbl.metadata.table_uuid
    catalog.drop_table((name, "orders table"))
    catalog.drop_namespace(name)


def test_update_properties(catalog: Catalog) -> None:
    name = unique("props")
    catalog.create_namespace(name, {"owner": "alice", "comment": "old", "keep": "yes"})

    summary = catalog.update_namespace_properties(
        name, removals={"comment", "not-there"}, updates={"owner": "bob", "new": "1"}
    )
    assert sorted(summary.updated) == ["new", "owner"]
    assert summary.removed == ["comment"]
    assert summary.missing == ["not-there"]

    props = catalog.load_namespace_properties(name)
    assert props.get("owner") == "bob"
    assert props.get("new") == "1"
    assert props.get("keep") == "yes"
    assert "comment" not in props

    with pytest.raises(NoSuchNamespaceError):
        catalog.update_namespace_properties(unique("missing"), updates={"a": "b"})


def test_update_properties_same_key_in_updates_and_removals(catalog: Catalog) -> None:
    name = unique("conflict")
    catalog.create_namespace(name, {"a": "1"})
    # The spec answers 422; PyIceberg checks this client-side first.
    with pytest.raises((ValueError, RESTError)):
        catalog.update_namespace_properties(name, removals={"a"}, updates={"a": "2"})
    assert catalog.load_namespace_properties(name).get("a") == "1"


def test_drop_namespace_with_table(catalog: Catalog) -> None:
    name = unique("full")
    catalog.create_namespace(name)
    create_orders(catalog, f"{name}.orders")
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace(name)
    catalog.drop_table(f"{name}.orders")
    catalog.drop_namespace(name)


def test_list_missing_namespace(catalog: Catalog) -> None:
    missing = unique("missing")
    assert not catalog.namespace_exists(missing)
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_namespaces(missing)
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_tables(missing)
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_views(missing)
