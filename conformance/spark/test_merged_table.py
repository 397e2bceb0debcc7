"""A table both catalog branches appended to, merged by floe, read with Spark.

main and a catalog branch append to different partitions of one table;
`floe merge BRANCH --into main` cherry-picks the branch's snapshot onto main's
head (mergeengine). Spark then reads main: every row once, and the
`snapshots`, `history`, `entries` and `files` metadata tables show the picked
snapshot (with floe's summary properties) and both sides' data files with the
sequence numbers they have on main. Then Spark keeps writing the merged table
like any other.
"""

from __future__ import annotations

import uuid

from conftest import FloeServer
from helpers import add_catalog, create_orders, one, rows

ADDED = 1  # manifest entry status: 0 EXISTING, 1 ADDED, 2 DELETED


def current_snapshot(spark, table: str) -> int:
    return one(spark, f"SELECT snapshot_id FROM {table}.history WHERE is_current_ancestor ORDER BY made_current_at DESC LIMIT 1")


def test_merged_table_reads_and_metadata_tables(spark, floe: FloeServer) -> None:
    ns = f"merged_{uuid.uuid4().hex[:8]}"
    branch = f"side_{uuid.uuid4().hex[:6]}"
    t = f"floe.{ns}.orders"
    spark.sql(f"CREATE NAMESPACE floe.{ns}")
    create_orders(spark, t)
    spark.sql(f"INSERT INTO {t} VALUES (1, 'books', 10.0), (2, 'books', 11.0)")
    base_id = current_snapshot(spark, t)
    main_ref = floe.nessie("GET", "/trees/main")["reference"]
    floe.nessie("POST", f"/trees?name={branch}&type=BRANCH", main_ref)
    add_catalog(spark, floe, branch, f"lake@{branch}")
    b = f"{branch}.{ns}.orders"

    spark.sql(f"INSERT INTO {b} VALUES (3, 'games', 20.0), (4, 'games', 21.0), (5, 'games', 22.0)")
    spark.sql(f"INSERT INTO {t} VALUES (6, 'music', 30.0)")
    dev_id, main_id = current_snapshot(spark, b), current_snapshot(spark, t)

    floe.cli("merge", branch, "--into", "main")

    # Every row of both sides, once; the branch keeps its own rows.
    both = [(1, "books", 10.0), (2, "books", 11.0), (3, "games", 20.0), (4, "games", 21.0), (5, "games", 22.0), (6, "music", 30.0)]
    assert rows(spark, f"SELECT * FROM {t}") == both
    assert rows(spark, f"SELECT id FROM {b}") == [(1,), (2,), (3,), (4,), (5,)]

    # snapshots: base, main's append, and the branch's append picked onto
    # main's head, naming its source.
    snaps = spark.sql(
        f"SELECT snapshot_id, parent_id, operation, summary['floe.merge.source-snapshot-id'], "
        f"summary['floe.merge.source-parent-snapshot-id'], summary['floe.merge.source-ref'], "
        f"summary['added-records'], summary['total-records'] FROM {t}.snapshots ORDER BY committed_at"
    ).collect()
    assert [tuple(s)[:3] for s in snaps[:2]] == [(base_id, None, "append"), (main_id, base_id, "append")], snaps
    assert [tuple(s)[3:6] for s in snaps[:2]] == [(None, None, None)] * 2, snaps
    picked = tuple(snaps[2])
    picked_id = picked[0]
    assert picked[1:] == (main_id, "append", str(dev_id), str(base_id), branch, "3", "6"), picked

    # history: the three snapshots, each made current in turn, all
    # ancestors of the current one.
    assert [tuple(h) for h in spark.sql(
        f"SELECT snapshot_id, parent_id, is_current_ancestor FROM {t}.history ORDER BY made_current_at"
    ).collect()] == [(base_id, None, True), (main_id, base_id, True), (picked_id, main_id, True)]  # fmt: skip

    # entries: each side's data file, added by its snapshot; the picked
    # file takes the new snapshot's sequence number on main (inherited
    # through the new manifest list), on the branch it keeps 2.
    def entries(table: str) -> list[tuple]:
        return rows(
            spark,
            f"SELECT data_file.partition.category, status, snapshot_id, sequence_number, file_sequence_number, "
            f"data_file.content, data_file.record_count FROM {table}.entries",
        )

    assert entries(t) == [
        ("books", ADDED, base_id, 1, 1, 0, 2),
        ("games", ADDED, picked_id, 3, 3, 0, 3),
        ("music", ADDED, main_id, 2, 2, 0, 1),
    ]
    assert entries(b) == [("books", ADDED, base_id, 1, 1, 0, 2), ("games", ADDED, dev_id, 2, 2, 0, 3)]

    # files: the live data files of both sides; the branch's file is the
    # same file on main (never copied).
    files = rows(spark, f"SELECT partition.category, content, record_count, file_path FROM {t}.files")
    assert [f[:3] for f in files] == [("books", 0, 2), ("games", 0, 3), ("music", 0, 1)], files
    assert one(spark, f"SELECT file_path FROM {b}.files WHERE partition.category = 'games'") == files[1][3]

    # The merged table is an ordinary table: Spark appends on top of the
    # picked snapshot and reads everything back.
    spark.sql(f"INSERT INTO {t} VALUES (7, 'toys', 40.0)")
    assert rows(spark, f"SELECT * FROM {t}") == both + [(7, "toys", 40.0)]
    after = current_snapshot(spark, t)
    assert one(spark, f"SELECT parent_id FROM {t}.snapshots WHERE snapshot_id = {after}") == picked_id
    assert ("toys", ADDED, after, 4, 4, 0, 1) in entries(t)
    assert rows(spark, f"SELECT count(*) FROM {t}.history") == [(4,)]
