"""Trino's table maintenance against floe: optimize, expire_snapshots, remove_orphan_files.

floe keeps gc.enabled=false on every table, because catalog branches share
files: Iceberg's own expire_snapshots honours it and refuses. Trino's
remove_orphan_files does not read gc.enabled; on a file:// warehouse
nothing stops it from deleting the files of the same table on another
branch, which test_remove_orphan_files_deletes_other_branches_files shows
on a table of its own (on object storage floe is to enforce it through the
credentials and signatures it hands out; see conformance/trino/README.md).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from trino.exceptions import TrinoQueryError

from helpers import all_files, data_files, load_table, local_path, rest_status


def test_optimize(trino_server, floe, schema) -> None:
    t = f"lake.{schema}.small_files"
    trino_server.run(f"CREATE TABLE {t} (id bigint, v varchar)")
    for i in range(4):
        trino_server.run(f"INSERT INTO {t} VALUES ({i}, 'v{i}')")
    m = f'lake.{schema}."small_files$'
    assert trino_server.run(f'SELECT count(*) FROM {m}files"') == [[4]]

    trino_server.run(f"ALTER TABLE {t} EXECUTE optimize")
    assert trino_server.run(f'SELECT count(*) FROM {m}files"') == [[1]]
    assert trino_server.run(f"SELECT count(*), sum(id) FROM {t}") == [[4, 6]]
    last = trino_server.run(f'SELECT operation FROM {m}snapshots" ORDER BY committed_at DESC LIMIT 1')
    assert last == [["replace"]]
    # The rewrite deleted nothing: the old files stay for time travel and
    # for other branches until floe's gc finds no reference to them.
    meta = load_table(floe, "lake", schema, "small_files")["metadata"]
    assert len(data_files(meta["location"])) == 5


def test_expire_snapshots_refused(trino_server, floe, schema) -> None:
    t = f"lake.{schema}.history"
    trino_server.run(f"CREATE TABLE {t} (id bigint)")
    trino_server.run(f"INSERT INTO {t} VALUES 1")
    trino_server.run(f"INSERT INTO {t} VALUES 2")
    before = len(load_table(floe, "lake", schema, "history")["metadata"]["snapshots"])
    with pytest.raises(TrinoQueryError, match="Cannot expire snapshots: GC is disabled"):
        trino_server.run(f"ALTER TABLE {t} EXECUTE expire_snapshots(retention_threshold => '0s')")
    assert len(load_table(floe, "lake", schema, "history")["metadata"]["snapshots"]) == before
    # Trino will not let a user turn gc.enabled on (floe would refuse too).
    with pytest.raises(TrinoQueryError, match=r"Illegal keys in extra_properties: \[gc.enabled\]"):
        trino_server.run(f"ALTER TABLE {t} SET PROPERTIES extra_properties = MAP(ARRAY['gc.enabled'], ARRAY['true'])")


def test_remove_orphan_files_deletes_other_branches_files(trino_server, floe, schema) -> None:
    """What floe cannot enforce on file://: remove_orphan_files on main ignores gc.enabled
    and deletes the files the same table has on another branch, leaving that branch's
    table unreadable. This test pins the hazard the README documents; if it ever fails
    because the files survive, Trino or floe started protecting them.
    """
    t = f"lake.{schema}.shared"
    trino_server.run(f"CREATE TABLE {t} (id bigint)")
    trino_server.run(f"INSERT INTO {t} VALUES 1")
    branch = f"orphans_{uuid.uuid4().hex[:8]}"
    floe.cli("branch", "create", branch)
    cat = trino_server.catalog(f"lake_{branch}", f"lake@{branch}")
    trino_server.run(f"INSERT INTO {cat}.{schema}.shared VALUES 2")
    assert trino_server.run(f"SELECT id FROM {cat}.{schema}.shared ORDER BY id") == [[1], [2]]

    main_meta = load_table(floe, "lake", schema, "shared")
    branch_meta = load_table(floe, f"lake@{branch}", schema, "shared")
    location = main_meta["metadata"]["location"]
    assert branch_meta["metadata"]["location"] == location  # one folder, two branches
    branch_only = data_files(location) - _data_files_of(trino_server, f"lake.{schema}", "shared")
    assert len(branch_only) == 1, branch_only
    other_tables = {f for f in all_files(floe.warehouse_dir.as_uri()) if not f.startswith(str(local_path(location)))}

    trino_server.run(f"ALTER TABLE {t} EXECUTE remove_orphan_files(retention_threshold => '0s')")

    # main is intact; the branch's data file and metadata file are gone.
    assert trino_server.run(f"SELECT id FROM {t}") == [[1]]
    assert not any(Path(f).exists() for f in branch_only)
    assert not local_path(branch_meta["metadata-location"]).exists()
    status, body = rest_status(floe, f"lake@{branch}/namespaces/{schema}/tables/shared")
    assert status == 404 and body["error"]["type"] == "NotFoundException", body
    assert branch_meta["metadata-location"] in body["error"]["message"]
    with pytest.raises(TrinoQueryError):
        trino_server.run(f"SELECT id FROM {cat}.{schema}.shared")
    # It stays inside the table's folder: the rest of the warehouse is untouched.
    assert all(Path(f).exists() for f in other_tables)
    # floe's own gc sees the damage and keeps the folder rather than guess.
    report = floe.cli("gc", "--dry-run", "--grace", "1s")
    assert "is missing; everything under " + location + " is kept" in report, report


def _data_files_of(trino_server, qualified_schema: str, table: str) -> set[str]:
    rows = trino_server.run(f'SELECT file_path FROM {qualified_schema}."{table}$files"')
    return {str(local_path(r[0])) for r in rows}
