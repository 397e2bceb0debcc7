"""A tag through Trino: a catalog on `lake@<tag>` reads the tagged state and cannot change it.

floe refuses every write to a tag (403, "Warehouse lake@<tag> is read-only").
Creates (schemas, tables, CTAS, views) are refused at their first request,
before Trino writes a file. An INSERT, UPDATE, DELETE or MERGE into a table
that exists is refused only at commit: Trino asks the catalog nothing on
the way that says it means to write, so its data files are already in the
table's folder. floe's gc deletes them, as it deletes any file no
reference reaches; a Trino catalog made for a tag with
`iceberg.security=read_only` refuses writes before any file is written.
"""

from __future__ import annotations

import time
import uuid

import pytest
from trino.exceptions import TrinoQueryError

from helpers import all_files, data_files, load_table, rest_status


@pytest.fixture
def tagged(trino_server, floe, schema):
    """A table on main, a tag on it, then main moved on; the tag's catalog."""
    trino_server.run(f"CREATE TABLE lake.{schema}.prices (id bigint, price double)")
    trino_server.run(f"INSERT INTO lake.{schema}.prices VALUES (1, 9.5), (2, 20.0)")
    tag = f"v_{uuid.uuid4().hex[:8]}"
    floe.cli("tag", "create", tag)
    trino_server.run(f"UPDATE lake.{schema}.prices SET price = 10.0 WHERE id = 1")
    return tag, trino_server.catalog(f"lake_{tag}", f"lake@{tag}")


def test_tag_reads_tagged_state(trino_server, schema, tagged) -> None:
    _, cat = tagged
    assert trino_server.run(f"SELECT id, price FROM {cat}.{schema}.prices ORDER BY id") == [[1, 9.5], [2, 20.0]]
    assert trino_server.run(f"SELECT id, price FROM lake.{schema}.prices ORDER BY id") == [[1, 10.0], [2, 20.0]]
    assert trino_server.run(f'SELECT count(*) FROM {cat}.{schema}."prices$snapshots"') == [[2]]


def test_tag_creates_refused_before_any_file(trino_server, floe, schema, tagged) -> None:
    tag, cat = tagged
    before = all_files(floe.warehouse_dir.as_uri())
    for statement in (
        f"CREATE TABLE {cat}.{schema}.fresh (id bigint)",
        f"CREATE TABLE {cat}.{schema}.copy AS SELECT * FROM {cat}.{schema}.prices",
        f"CREATE VIEW {cat}.{schema}.cheap AS SELECT id FROM {cat}.{schema}.prices WHERE price < 10",
        f"CREATE SCHEMA {cat}.elsewhere",
    ):
        with pytest.raises(TrinoQueryError, match="Failed to create"):
            trino_server.run(statement)
    # Nothing was written anywhere in the warehouse, and nothing committed.
    assert all_files(floe.warehouse_dir.as_uri()) == before
    assert rest_status(floe, f"lake@{tag}/namespaces/{schema}/tables/fresh")[0] == 404
    assert rest_status(floe, f"lake/namespaces/{schema}/tables/fresh")[0] == 404


def test_tag_writes_refused_at_commit(trino_server, floe, schema, tagged) -> None:
    tag, cat = tagged
    location = load_table(floe, "lake", schema, "prices")["metadata"]["location"]
    before = data_files(location)
    message = f"Forbidden: Warehouse lake@{tag} is read-only: it names a tag, not a branch"
    for statement in (
        f"INSERT INTO {cat}.{schema}.prices VALUES (3, 1.0)",
        f"UPDATE {cat}.{schema}.prices SET price = 0 WHERE id = 2",
        f"DELETE FROM {cat}.{schema}.prices WHERE id = 2",
        f"MERGE INTO {cat}.{schema}.prices t USING (VALUES (2, 1.0)) s(id, price) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET price = s.price",
    ):
        with pytest.raises(TrinoQueryError, match=message):
            trino_server.run(statement)
    assert trino_server.run(f"SELECT id, price FROM {cat}.{schema}.prices ORDER BY id") == [[1, 9.5], [2, 20.0]]
    assert trino_server.run(f"SELECT id, price FROM lake.{schema}.prices ORDER BY id") == [[1, 10.0], [2, 20.0]]

    # The refused statements' files were written before the commit was
    # refused; nothing reaches them, so floe's gc deletes them.
    stray = data_files(location) - before
    assert stray, "Trino wrote no file before its commit was refused: floe could say so earlier now"
    time.sleep(1.1)  # older than the grace period asked for below
    args = [a for f in sorted(stray) for a in ("--explain", "file://" + f)]
    report = floe.cli("gc", "--dry-run", "--grace", "1s", *args)
    for f in stray:
        assert f"file://{f}: delete: not live" in report, report


def test_read_only_trino_catalog_refuses_before_writing(trino_server, floe, schema, tagged) -> None:
    tag, _ = tagged
    ro = trino_server.catalog(f"lake_{tag}_ro", f"lake@{tag}", **{"iceberg.security": "read_only"})
    location = load_table(floe, "lake", schema, "prices")["metadata"]["location"]
    before = all_files(location)
    with pytest.raises(TrinoQueryError, match="Access Denied: Cannot insert into table"):
        trino_server.run(f"INSERT INTO {ro}.{schema}.prices VALUES (3, 1.0)")
    with pytest.raises(TrinoQueryError, match="Access Denied"):
        trino_server.run(f"DELETE FROM {ro}.{schema}.prices WHERE id = 1")
    assert all_files(location) == before
    assert trino_server.run(f"SELECT count(*) FROM {ro}.{schema}.prices") == [[2]]
