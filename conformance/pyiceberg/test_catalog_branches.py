"""Catalog branches: a table made on `lake@dev` exists only there, and a tag is read-only.

The branch and the tag are created through floe's Nessie API (POST
/api/v2/trees), the way a Nessie client or `floe branch` would; PyIceberg then
selects them with a branch-qualified warehouse.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import ForbiddenError, NoSuchTableError

from conftest import FloeServer
from helpers import arrow, assert_rows, create_orders, rows

DEV = rows((1, "books", 10.0, 0), (2, "games", 20.0, 1), (3, "music", 30.0, 2))
MORE = rows((4, "toys", 40.0, 3))


def nessie(floe: FloeServer, method: str, path: str, body: Any = None) -> dict[str, Any]:
    """One Nessie API v2 call; the decoded answer."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{floe.uri}/api/v2{path}", data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def create_ref(floe: FloeServer, name: str, typ: str, source: str) -> dict[str, Any]:
    """Create a branch or tag at the head of source, as Nessie clients do."""
    src = nessie(floe, "GET", f"/trees/{source}")["reference"]
    ref = nessie(floe, "POST", f"/trees?name={name}&type={typ}", src)["reference"]
    assert ref["name"] == name and ref["type"] == typ and ref["hash"] == src["hash"], ref
    return ref


def test_catalog_branch_isolation(floe: FloeServer, catalog: Catalog, ns: str) -> None:
    # ns exists on main; dev starts from main's head, so it has ns too.
    create_ref(floe, "dev", "BRANCH", "main")
    dev = floe.catalog("lake@dev")
    ident = f"{ns}.orders"

    tbl = create_orders(dev, ident)
    tbl.append(arrow(DEV))

    # main does not see the table, not even through a fresh client.
    for main in (catalog, floe.catalog("lake")):
        assert not main.table_exists(ident)
        assert (ns, "orders") not in main.list_tables(ns)
        with pytest.raises(NoSuchTableError):
            main.load_table(ident)

    # dev does, with its rows.
    again = floe.catalog("lake@dev").load_table(ident)
    assert again.metadata.table_uuid == tbl.metadata.table_uuid
    assert_rows(again.scan().to_arrow(), DEV)

    # A tag of dev reads what dev had, and refuses writes.
    create_ref(floe, "dev-v1", "TAG", "dev")
    tagged = floe.catalog("lake@dev-v1")
    frozen = tagged.load_table(ident)
    assert_rows(frozen.scan().to_arrow(), DEV)
    with pytest.raises(ForbiddenError, match="Warehouse lake@dev-v1 is read-only: it names a tag, not a branch"):
        frozen.append(arrow(MORE))
    with pytest.raises(ForbiddenError, match="is read-only: it names a tag, not a branch"):
        create_orders(tagged, f"{ns}.other")

    # The refused writes changed nothing: dev still has its rows only, main
    # still has no table.
    assert_rows(floe.catalog("lake@dev").load_table(ident).scan().to_arrow(), DEV)
    assert not floe.catalog("lake").table_exists(ident)
