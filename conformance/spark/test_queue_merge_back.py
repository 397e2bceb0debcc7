"""A branch that takes main back in, then lands through the merge queue.

Spark appends on a catalog branch and on main; `floe merge main --into
BRANCH` copies main's append onto the branch (the copy keeps the id of
main's snapshot and names it in floe.merge.source-snapshot-id); `floe queue
submit BRANCH --into main --wait` lands the branch through the queue, whose
lineage check must take the copy for main's own change. Main then holds the
base's rows and both sides' appends, each once, as a direct merge would.
"""

from __future__ import annotations

import uuid

from floeproc import FloeServer

from helpers import add_catalog, create_orders, floe_cli, rows


def test_merge_main_back_then_queue_lands_both_sides(spark, floe: FloeServer) -> None:
    ns = f"back_{uuid.uuid4().hex[:8]}"
    branch = f"back_{uuid.uuid4().hex[:6]}"
    t = f"{ns}.orders"
    spark.sql(f"CREATE NAMESPACE floe.{ns}")
    create_orders(spark, f"floe.{t}", 2)
    spark.sql(f"INSERT INTO floe.{t} VALUES (1, 'books', 10.0), (2, 'games', 20.0)")
    main = floe.nessie("GET", "/trees/main")["reference"]
    floe.nessie("POST", f"/trees?name={branch}&type=BRANCH", main)
    cat = f"c_{branch}"
    add_catalog(spark, floe, cat, f"lake@{branch}")

    spark.sql(f"INSERT INTO {cat}.{t} VALUES (3, 'games', 30.0)")
    spark.sql(f"INSERT INTO floe.{t} VALUES (4, 'books', 40.0)")

    proc = floe_cli(floe, "merge", "main", "--into", branch)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    want = [(1, "books", 10.0), (2, "games", 20.0), (3, "games", 30.0), (4, "books", 40.0)]
    assert rows(spark, f"SELECT * FROM {cat}.{t} ORDER BY id") == want
    # The branch holds main's append as a copy naming main's snapshot.
    copied = rows(
        spark,
        f"SELECT summary['floe.merge.source-snapshot-id'] FROM {cat}.{t}.snapshots "
        "WHERE summary['floe.merge.source-ref'] = 'main'",
    )
    assert len(copied) == 1, copied

    proc = floe_cli(floe, "queue", "submit", branch, "--into", "main", "--wait")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rows(spark, f"SELECT * FROM floe.{t} ORDER BY id") == want
    assert rows(spark, f"SELECT * FROM {cat}.{t} ORDER BY id") == want
