"""Schemas and tables through Trino: DDL, DML on format v2, row-level changes, v3 as far as Trino 476 goes."""

from __future__ import annotations

import re

import pytest
from trino.exceptions import TrinoQueryError

from helpers import load_table, rest_post, rest_status


def test_create_schema_then_table(trino_server, floe) -> None:
    """A new user's first two statements: a schema with no location, then a table in it.

    Trino 476 stages a table's creation only when it can derive the table's
    location from its schema's; floe reports the location it uses for a
    namespace that sets none, so the create is staged and lands there.
    """
    trino_server.run("CREATE SCHEMA lake.first_steps")
    (ddl,) = trino_server.run("SHOW CREATE SCHEMA lake.first_steps")[0]
    ns_location = floe.warehouse_dir.as_uri() + "/first_steps"
    assert f"location = '{ns_location}'" in ddl, ddl
    status, body = rest_status(floe, "lake/namespaces/first_steps")
    assert status == 200 and body["properties"] == {"location": ns_location}, body

    trino_server.run("CREATE TABLE lake.first_steps.orders (id bigint, item varchar)")
    assert trino_server.run("INSERT INTO lake.first_steps.orders VALUES (1, 'apple'), (2, 'pear')") == [[2]]
    assert trino_server.run("SELECT id, item FROM lake.first_steps.orders ORDER BY id") == [[1, "apple"], [2, "pear"]]
    location = load_table(floe, "lake", "first_steps", "orders")["metadata"]["location"]
    assert re.fullmatch(re.escape(ns_location) + r"/orders-[0-9a-f]{32}", location), location
    assert trino_server.run("SHOW TABLES FROM lake.first_steps") == [["orders"]]


def test_row_level_changes_v2(trino_server, schema) -> None:
    t = f"lake.{schema}.sales"
    trino_server.run(
        f"CREATE TABLE {t} (id bigint, region varchar, amount double) "
        "WITH (format_version = 2, partitioning = ARRAY['region'])"
    )
    trino_server.run(f"INSERT INTO {t} VALUES (1, 'eu', 10.0), (2, 'us', 20.0), (3, 'eu', 30.0)")
    assert trino_server.run(f"UPDATE {t} SET amount = amount * 2 WHERE id = 1") == [[1]]
    assert trino_server.run(f"DELETE FROM {t} WHERE id = 2") == [[1]]
    merged = trino_server.run(
        f"MERGE INTO {t} AS t USING (VALUES (3, 'eu', 33.0), (4, 'us', 40.0)) AS s(id, region, amount) "
        "ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET amount = s.amount "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.region, s.amount)"
    )
    assert merged == [[2]]
    assert trino_server.run(f"SELECT id, region, amount FROM {t} ORDER BY id") == [
        [1, "eu", 20.0],
        [3, "eu", 33.0],
        [4, "us", 40.0],
    ]
    # Trino writes merge-on-read: position delete files beside the data.
    contents = {row[0] for row in trino_server.run(f'SELECT content FROM lake.{schema}."sales$files"')}
    assert contents == {0, 1}, contents
    ops = [row[0] for row in trino_server.run(f'SELECT operation FROM lake.{schema}."sales$snapshots" ORDER BY committed_at')]
    assert ops == ["append", "append", "overwrite", "delete", "overwrite"], ops


def test_ctas_alter_rename_drop(trino_server, floe, schema) -> None:
    trino_server.run(f"CREATE TABLE lake.{schema}.src (id bigint, name varchar)")
    trino_server.run(f"INSERT INTO lake.{schema}.src VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    assert trino_server.run(f"CREATE TABLE lake.{schema}.copy AS SELECT * FROM lake.{schema}.src WHERE id > 1") == [[2]]

    trino_server.run(f"ALTER TABLE lake.{schema}.copy ADD COLUMN score double")
    trino_server.run(f"ALTER TABLE lake.{schema}.copy RENAME COLUMN name TO label")
    trino_server.run(f"INSERT INTO lake.{schema}.copy VALUES (4, 'd', 0.5)")
    assert trino_server.run(f"SELECT id, label, score FROM lake.{schema}.copy ORDER BY id") == [
        [2, "b", None],
        [3, "c", None],
        [4, "d", 0.5],
    ]
    fields = [f["name"] for f in load_table(floe, "lake", schema, "copy")["metadata"]["schemas"][-1]["fields"]]
    assert fields == ["id", "label", "score"], fields

    trino_server.run(f"ALTER TABLE lake.{schema}.copy RENAME TO lake.{schema}.renamed")
    assert trino_server.run(f"SHOW TABLES FROM lake.{schema}") == [["renamed"], ["src"]]
    assert rest_status(floe, f"lake/namespaces/{schema}/tables/copy")[0] == 404
    trino_server.run(f"DROP TABLE lake.{schema}.renamed")
    assert trino_server.run(f"SHOW TABLES FROM lake.{schema}") == [["src"]]
    trino_server.run(f"DROP TABLE lake.{schema}.src")
    trino_server.run(f"DROP SCHEMA lake.{schema}")
    assert [schema] not in trino_server.run("SHOW SCHEMAS FROM lake")


def test_format_v3(trino_server, floe, schema) -> None:
    """Trino 476 cannot create a v3 table, but reads and appends to one another engine made.

    Its row-level changes on v3 stop in Iceberg's library before anything
    reaches floe: v3 wants deletion vectors, which Trino 476 does not write.
    """
    with pytest.raises(TrinoQueryError, match="format_version must be between 1 and 2"):
        trino_server.run(f"CREATE TABLE lake.{schema}.v3 (id bigint) WITH (format_version = 3)")

    # Made as another engine (Spark, PyIceberg) would: format-version 3.
    rest_post(floe, f"lake/namespaces/{schema}/tables", {
        "name": "v3",
        "schema": {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]},
        "properties": {"format-version": "3"},
    })  # fmt: skip
    assert load_table(floe, "lake", schema, "v3")["metadata"]["format-version"] == 3
    assert trino_server.run(f"SELECT count(*) FROM lake.{schema}.v3") == [[0]]
    assert trino_server.run(f"INSERT INTO lake.{schema}.v3 VALUES 1, 2, 3") == [[3]]
    assert trino_server.run(f"SELECT sum(id) FROM lake.{schema}.v3") == [[6]]
    with pytest.raises(TrinoQueryError, match="Must use DVs for position deletes in V3"):
        trino_server.run(f"DELETE FROM lake.{schema}.v3 WHERE id = 2")
    assert trino_server.run(f"SELECT sum(id) FROM lake.{schema}.v3") == [[6]]
    assert load_table(floe, "lake", schema, "v3")["metadata"]["format-version"] == 3
