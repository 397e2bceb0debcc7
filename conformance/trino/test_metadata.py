"""Metadata tables, time travel and views through Trino."""

from __future__ import annotations

import pytest
from trino.exceptions import TrinoQueryError

from helpers import load_table, rest_status


def _table_with_history(trino_server, schema: str) -> str:
    t = f"lake.{schema}.events"
    trino_server.run(f"CREATE TABLE {t} (id bigint, kind varchar) WITH (partitioning = ARRAY['kind'])")
    trino_server.run(f"INSERT INTO {t} VALUES (1, 'click'), (2, 'view')")
    trino_server.run(f"INSERT INTO {t} VALUES (3, 'click')")
    trino_server.run(f"DELETE FROM {t} WHERE id = 2")
    return t


def test_metadata_tables(trino_server, floe, schema) -> None:
    _table_with_history(trino_server, schema)
    meta = load_table(floe, "lake", schema, "events")["metadata"]
    m = f'lake.{schema}."events$'

    snapshots = trino_server.run(f'SELECT snapshot_id, parent_id, operation FROM {m}snapshots" ORDER BY committed_at')
    assert [s[0] for s in snapshots] == [s["snapshot-id"] for s in meta["snapshots"]]
    assert [s[2] for s in snapshots] == ["append", "append", "append", "delete"]
    assert snapshots[-1][0] == meta["current-snapshot-id"]
    assert all(s[1] == prev[0] for prev, s in zip(snapshots, snapshots[1:]))

    history = trino_server.run(f'SELECT snapshot_id, is_current_ancestor FROM {m}history"')
    assert sorted(h[0] for h in history) == sorted(s[0] for s in snapshots)

    files = trino_server.run(f'SELECT content, record_count, file_path FROM {m}files"')
    assert sorted(f[0] for f in files) == [0, 0, 0, 1], files
    assert all(f[2].startswith(meta["location"] + "/data/") for f in files)

    manifests = trino_server.run(f'SELECT path, added_data_files_count FROM {m}manifests"')
    assert manifests and all(p.startswith(meta["location"] + "/metadata/") for p, _ in manifests)

    partitions = dict(trino_server.run(f'SELECT partition.kind, record_count FROM {m}partitions"'))
    assert partitions == {"click": 2, "view": 1}, partitions

    refs = trino_server.run(f'SELECT name, type, snapshot_id FROM {m}refs"')
    assert refs == [["main", "BRANCH", meta["current-snapshot-id"]]]

    # floe keeps every table's files to itself: engines must not delete them.
    props = dict(trino_server.run(f'SELECT key, value FROM {m}properties"'))
    assert props["gc.enabled"] == "false" and props["write.metadata.delete-after-commit.enabled"] == "false", props


def test_time_travel(trino_server, floe, schema) -> None:
    t = _table_with_history(trino_server, schema)
    snaps = load_table(floe, "lake", schema, "events")["metadata"]["snapshots"]
    first_rows, second_rows = snaps[1], snaps[2]
    assert trino_server.run(f"SELECT id FROM {t} FOR VERSION AS OF {first_rows['snapshot-id']} ORDER BY id") == [[1], [2]]
    assert trino_server.run(f"SELECT id FROM {t} FOR VERSION AS OF {second_rows['snapshot-id']} ORDER BY id") == [[1], [2], [3]]
    assert trino_server.run(f"SELECT id FROM {t} ORDER BY id") == [[1], [3]]
    # By time: the instant the second insert committed, in UTC.
    at = second_rows["timestamp-ms"]
    rows = trino_server.run(f"SELECT id FROM {t} FOR TIMESTAMP AS OF from_unixtime_nanos({at} * 1000000) AT TIME ZONE 'UTC' ORDER BY id")
    assert rows == [[1], [2], [3]]
    with pytest.raises(TrinoQueryError, match="(?i)snapshot.*does not exist.*42"):
        trino_server.run(f"SELECT id FROM {t} FOR VERSION AS OF BIGINT '42'")


def test_views(trino_server, floe, schema) -> None:
    _table_with_history(trino_server, schema)
    v = f"lake.{schema}.clicks"
    trino_server.run(f"CREATE VIEW {v} AS SELECT id FROM lake.{schema}.events WHERE kind = 'click'")
    assert trino_server.run(f"SELECT id FROM {v} ORDER BY id") == [[1], [3]]
    # An Iceberg view in floe, with Trino's SQL as its representation.
    status, body = rest_status(floe, f"lake/namespaces/{schema}/views/clicks")
    assert status == 200, body
    version = next(v for v in body["metadata"]["versions"] if v["version-id"] == body["metadata"]["current-version-id"])
    assert [r["dialect"] for r in version["representations"]] == ["trino"]

    trino_server.run(f"CREATE OR REPLACE VIEW {v} AS SELECT id FROM lake.{schema}.events WHERE kind = 'view'")
    assert trino_server.run(f"SELECT id FROM {v}") == []  # the 'view' row was deleted
    assert len(rest_status(floe, f"lake/namespaces/{schema}/views/clicks")[1]["metadata"]["versions"]) == 2
    assert [r[0] for r in trino_server.run(f"SHOW TABLES FROM lake.{schema}")] == ["clicks", "events"]
    trino_server.run(f"DROP VIEW {v}")
    assert rest_status(floe, f"lake/namespaces/{schema}/views/clicks")[0] == 404
