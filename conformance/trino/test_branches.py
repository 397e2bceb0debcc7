"""Catalog branches through Trino: a second catalog on `lake@<branch>`, and `floe merge` read back."""

from __future__ import annotations

import uuid

from helpers import rest_status


def test_branch_isolation_and_merge(trino_server, floe, schema) -> None:
    trino_server.run(f"CREATE TABLE lake.{schema}.orders (id bigint, status varchar)")
    trino_server.run(f"INSERT INTO lake.{schema}.orders VALUES (1, 'new'), (2, 'new')")
    branch = f"dev_{uuid.uuid4().hex[:8]}"
    floe.cli("branch", "create", branch)
    dev = trino_server.catalog(f"lake_{branch}", f"lake@{branch}")

    # Work on the branch: DML on a shared table, a new table and a view.
    trino_server.run(f"UPDATE {dev}.{schema}.orders SET status = 'shipped' WHERE id = 1")
    trino_server.run(f"INSERT INTO {dev}.{schema}.orders VALUES (3, 'new')")
    trino_server.run(f"CREATE TABLE {dev}.{schema}.returns AS SELECT id FROM {dev}.{schema}.orders WHERE id = 1")
    trino_server.run(f"CREATE VIEW {dev}.{schema}.shipped AS SELECT id FROM {dev}.{schema}.orders WHERE status = 'shipped'")
    assert trino_server.run(f"SELECT id, status FROM {dev}.{schema}.orders ORDER BY id") == [[1, "shipped"], [2, "new"], [3, "new"]]

    # main does not see any of it.
    assert trino_server.run(f"SELECT id, status FROM lake.{schema}.orders ORDER BY id") == [[1, "new"], [2, "new"]]
    assert trino_server.run(f"SHOW TABLES FROM lake.{schema}") == [["orders"]]
    assert rest_status(floe, f"lake/namespaces/{schema}/tables/returns")[0] == 404

    # Meanwhile main moves on, in another partition of history: a new table.
    trino_server.run(f"CREATE TABLE lake.{schema}.customers AS SELECT 7 AS id")

    out = floe.cli("merge", branch, "--into", "main", "-m", f"merge {branch} from the Trino suite")
    assert out.strip(), "floe merge printed nothing"

    assert trino_server.run(f"SELECT id, status FROM lake.{schema}.orders ORDER BY id") == [[1, "shipped"], [2, "new"], [3, "new"]]
    assert trino_server.run(f"SELECT id FROM lake.{schema}.returns") == [[1]]
    assert trino_server.run(f"SELECT id FROM lake.{schema}.shipped") == [[1]]
    assert trino_server.run(f"SELECT id FROM lake.{schema}.customers") == [[7]]
    assert [r[0] for r in trino_server.run(f"SHOW TABLES FROM lake.{schema}")] == ["customers", "orders", "returns", "shipped"]
    # The branch keeps its own view of history: main's new table is not on it.
    assert rest_status(floe, f"lake@{branch}/namespaces/{schema}/tables/customers")[0] == 404


def test_same_table_changed_on_both_sides(trino_server, floe, schema) -> None:
    """Appends to one table on main and on a branch, merged: floe replays the branch's snapshot onto main's."""
    t = f"{schema}.clicks"
    trino_server.run(f"CREATE TABLE lake.{t} (id bigint, day varchar) WITH (partitioning = ARRAY['day'])")
    trino_server.run(f"INSERT INTO lake.{t} VALUES (1, 'mon')")
    branch = f"ingest_{uuid.uuid4().hex[:8]}"
    floe.cli("branch", "create", branch)
    ingest = trino_server.catalog(f"lake_{branch}", f"lake@{branch}")
    trino_server.run(f"INSERT INTO {ingest}.{t} VALUES (2, 'tue')")
    trino_server.run(f"INSERT INTO lake.{t} VALUES (3, 'wed')")

    floe.cli("merge", branch, "--into", "main")
    assert trino_server.run(f"SELECT id, day FROM lake.{t} ORDER BY id") == [[1, "mon"], [2, "tue"], [3, "wed"]]
    ops = [r[0] for r in trino_server.run(f'SELECT operation FROM lake.{schema}."clicks$snapshots" ORDER BY committed_at')]
    assert ops == ["append"] * 4, ops
