"""Concurrent writers and paged listings through independent PyIceberg clients."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from pyiceberg.catalog import Catalog

from conftest import FloeServer
from helpers import VIEW_SCHEMA, arrow, assert_rows, create_orders, rows, version

WRITERS = 6


def test_concurrent_appends_same_table(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    """Every append lands exactly once, on a linear history (no lost updates)."""
    create_orders(
        catalog,
        f"{ns}.orders",
        properties={"commit.retry.num-retries": "50", "commit.retry.min-wait-ms": "10", "commit.retry.max-wait-ms": "200"},
    )
    # Each writer loads the table before anyone writes, so all but one start stale.
    tables = [floe.catalog().load_table(f"{ns}.orders") for _ in range(WRITERS)]
    batches = [rows((i, "books", float(i), i % 3)) for i in range(WRITERS)]

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(lambda tb: tb[0].append(arrow(tb[1])), zip(tables, batches)))

    loaded = floe.catalog().load_table(f"{ns}.orders")
    assert_rows(loaded.scan().to_arrow(), [r for b in batches for r in b])
    snaps = loaded.snapshots()
    assert len(snaps) == WRITERS
    by_id = {s.snapshot_id: s for s in snaps}
    # Walk back from main: every snapshot is on the chain once.
    chain, cur = [], loaded.current_snapshot()
    while cur is not None:
        chain.append(cur.snapshot_id)
        cur = by_id.get(cur.parent_snapshot_id) if cur.parent_snapshot_id else None
    assert sorted(chain) == sorted(by_id)


def test_concurrent_writes_different_tables(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    """Writers on different tables of one catalog branch never see a conflict."""
    for i in range(WRITERS):
        # No client retries: any CommitFailedException fails the test.
        create_orders(catalog, f"{ns}.t{i}", properties={"commit.retry.num-retries": "0"})

    def write(i: int) -> None:
        tbl = floe.catalog().load_table(f"{ns}.t{i}")
        for j in range(3):
            tbl.append(arrow(rows((i * 10 + j, "games", 1.0, j))))

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(write, range(WRITERS)))

    for i in range(WRITERS):
        loaded = floe.catalog().load_table(f"{ns}.t{i}")
        assert_rows(loaded.scan().to_arrow(), rows(*[(i * 10 + j, "games", 1.0, j) for j in range(3)]))
        assert len(loaded.snapshots()) == 3


def test_paged_listings(catalog: Catalog, floe: FloeServer, ns: str) -> None:
    n = 7
    for i in range(n):
        catalog.create_namespace((ns, f"child{i}"))
        create_orders(catalog, f"{ns}.t{i}")
        catalog.create_view(f"{ns}.v{i}", VIEW_SCHEMA, version(ns))

    for size in ("1", "2", "3", "100"):
        paged = floe.catalog(**{"rest-page-size": size})
        tables = paged.list_tables(ns)
        views = paged.list_views(ns)
        children = paged.list_namespaces(ns)
        assert sorted(tables) == [(ns, f"t{i}") for i in range(n)], size
        assert sorted(views) == [(ns, f"v{i}") for i in range(n)], size
        assert sorted(children) == [(ns, f"child{i}") for i in range(n)], size
        assert len(tables) == len(views) == len(children) == n, f"duplicates with page size {size}"
