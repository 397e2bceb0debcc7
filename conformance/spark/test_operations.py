"""The Spark recipes of merge/mergeengine/OPERATIONS.md, run as documented.

The recipes are read from OPERATIONS.md itself (its ```python blocks under
"### Spark") and executed, with the catalog and namespace `lake.ns` of the
document replaced by the test's, so the document cannot drift from what is
tested.

Each test writes a branch's overwrite or delete of one day with a recipe of
the "Spark" section, while main compacted that day (rewrite_data_files, a
`replace` snapshot): the branch's snapshot removed files main no longer has,
so the merge is a file conflict that only a recorded operation resolves.
The test then merges the branch with `floe merge` and checks that floe
replayed the record (summary `floe.merge.replayed=true`, the record kept)
and that main holds the right rows: the branch's day, main's other days.

The session property recipe (`spark.sql.iceberg.snapshot-property.*`) is
checked both ways: Iceberg 1.10 has no such property (the record never
reaches the summary, and the merge is refused), 1.11 and later have it.
`make test` runs this file on both Spark lines of run.sh: Iceberg 1.10.2
(Spark 4.0) and, with SPARK_LINE=4.1, Iceberg 1.12.0 (Spark 4.1), whose
runtime refuses Iceberg's `snapshot-id` read option (the DataFrame recipe
pins its input with Spark's `versionAsOf`). Run directly, with
ICEBERG_SPARK_JAR naming another runtime (e.g.
iceberg-spark-runtime-4.0_2.13-1.11.0.jar), it checks that one.
"""

from __future__ import annotations

import re
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from floeproc import FloeServer

from helpers import add_catalog, one, rows

DAY = "2026-08-20"
DOC = Path(__file__).resolve().parents[2] / "merge" / "mergeengine" / "OPERATIONS.md"


def recipes(section: str) -> list[str]:
    """The ```python blocks of OPERATIONS.md's "### section", in order."""
    text = DOC.read_text()
    part = text.split(f"\n### {section}\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", part, re.S)


def run_recipe(code: str, lk: Lake, **names: Any) -> dict[str, Any]:
    """Execute a recipe on the branch's catalog; its global names after."""
    code = code.replace("lake.ns.", f"{lk.lake}.{lk.ns}.").replace('"ns.raw@', f'"{lk.ns}.raw@')
    env: dict[str, Any] = {"__name__": "operations_recipe", **names}
    exec(compile(code, str(DOC), "exec"), env)  # noqa: S102 (the document's own code)
    return env


def iceberg_version(spark: Any) -> tuple[int, int]:
    major, minor = spark._jvm.org.apache.iceberg.IcebergBuild.version().split(".")[:2]
    return int(major), int(minor)


@dataclass
class Lake:
    ns: str
    branch: str
    main: str  # the events table on main, catalog-qualified
    lake: str  # the branch's catalog: {lake}.{ns}.events is the table there


def compacted_day_on_main(spark: Any, floe: FloeServer) -> Lake:
    """events(id, day) with two files in DAY and one in the next day; a
    catalog branch; then main compacts DAY into one file (operation
    replace), so a branch snapshot that removes DAY's files conflicts."""
    ns = f"ops_{uuid.uuid4().hex[:8]}"
    branch = f"ops_{uuid.uuid4().hex[:6]}"
    t = f"floe.{ns}.events"
    spark.sql(f"CREATE NAMESPACE floe.{ns}")
    spark.sql(f"CREATE TABLE {t} (id BIGINT, day STRING) USING iceberg PARTITIONED BY (day) TBLPROPERTIES ('format-version'='2')")
    spark.sql(f"INSERT INTO {t} VALUES (1, '{DAY}')")
    spark.sql(f"INSERT INTO {t} VALUES (2, '{DAY}')")
    spark.sql(f"INSERT INTO {t} VALUES (3, '2026-08-21')")
    main = floe.nessie("GET", "/trees/main")["reference"]
    floe.nessie("POST", f"/trees?name={branch}&type=BRANCH", main)
    lake = f"c_{branch}"
    add_catalog(spark, floe, lake, f"lake@{branch}")
    out = spark.sql(
        f"CALL floe.system.rewrite_data_files(table => '{ns}.events', where => \"day = '{DAY}'\", "
        f"options => map('min-input-files', '2'))"
    ).collect()
    assert out[0]["rewritten_data_files_count"] == 2, out
    assert one(spark, f"SELECT operation FROM {t}.snapshots ORDER BY committed_at DESC LIMIT 1") == "replace"
    return Lake(ns, branch, t, lake)


def last_summary(spark: Any, table: str) -> dict[str, str]:
    return dict(one(spark, f"SELECT summary FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1"))


def merge(floe: FloeServer, branch: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(floe.bin), "merge", branch, "--into", "main", "--server", floe.uri],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def assert_replayed(spark: Any, floe: FloeServer, lk: Lake, kind: str, want: list[tuple]) -> None:
    """Merge the branch into main: replayed, the record kept, main's rows want."""
    head = floe.nessie("GET", "/trees/main")["reference"]["hash"]
    res = merge(floe, lk.branch)
    assert res.returncode == 0, f"merge refused: {res.stderr}{res.stdout}"
    assert floe.nessie("GET", "/trees/main")["reference"]["hash"] != head
    summary = last_summary(spark, lk.main)
    assert summary.get("floe.merge.replayed") == "true", summary
    assert summary.get("floe.operation.kind") == kind, summary
    assert summary.get("floe.operation.partitions") == f"day={DAY}", summary
    assert rows(spark, f"SELECT id, day FROM {lk.main}") == want


def assert_refused(spark: Any, floe: FloeServer, lk: Lake) -> None:
    """Without a record the branch's overwrite is a file conflict: refused,
    main unchanged."""
    head = floe.nessie("GET", "/trees/main")["reference"]["hash"]
    res = merge(floe, lk.branch)
    assert res.returncode != 0, res.stdout
    assert "file-conflict" in res.stderr, res.stderr
    assert floe.nessie("GET", "/trees/main")["reference"]["hash"] == head


# --- The recipes, as OPERATIONS.md writes them.


def test_recipes_are_found() -> None:
    """The document has the three Spark recipes the tests below run."""
    blocks = recipes("Spark")
    assert len(blocks) == 3, blocks
    assert ".writeTo(" in blocks[0] and "CommitMetadata.withCommitProperties" in blocks[1]
    assert "spark.sql.iceberg.snapshot-property." in blocks[2]


def test_dataframe_overwrite_partitions(spark, floe: FloeServer) -> None:
    lk = compacted_day_on_main(spark, floe)
    spark.sql(f"CREATE TABLE {lk.lake}.{lk.ns}.raw (id BIGINT, day STRING) USING iceberg")
    spark.sql(f"INSERT INTO {lk.lake}.{lk.ns}.raw VALUES (10, '{DAY}'), (11, '{DAY}'), (12, '2026-08-22')")

    env = run_recipe(recipes("Spark")[0], lk, spark=spark)

    got = last_summary(spark, f"{lk.lake}.{lk.ns}.events")["floe.operation.source-snapshot-ids"]
    assert got == f"{lk.ns}.raw@{env['raw_id']}"
    assert_replayed(spark, floe, lk, "overwrite-partitions", [(3, "2026-08-21"), (10, DAY), (11, DAY)])


def test_sql_with_commit_metadata(spark, floe: FloeServer) -> None:
    """INSERT OVERWRITE, then DELETE of the same day, each recorded."""
    lk = compacted_day_on_main(spark, floe)

    run_recipe(recipes("Spark")[1], lk, spark=spark)

    kinds = [r[0] for r in spark.sql(
        f"SELECT summary['floe.operation.kind'] FROM {lk.lake}.{lk.ns}.events.snapshots ORDER BY committed_at DESC LIMIT 2"
    ).collect()]  # fmt: skip
    assert kinds == ["delete-partitions", "overwrite-partitions"], kinds
    assert_replayed(spark, floe, lk, "delete-partitions", [(3, "2026-08-21")])
    replays = [r[0] for r in spark.sql(
        f"SELECT summary['floe.operation.kind'] FROM {lk.main}.snapshots WHERE summary['floe.merge.replayed'] = 'true' ORDER BY committed_at"
    ).collect()]  # fmt: skip
    assert replays == ["overwrite-partitions", "delete-partitions"], replays


def test_session_snapshot_properties(spark, floe: FloeServer) -> None:
    """Iceberg 1.11+: session properties reach the summary; 1.10: they do not."""
    lk = compacted_day_on_main(spark, floe)
    record = {
        "floe.operation.kind": "overwrite-partitions",
        "floe.operation.partitions": f"day={DAY}",
        "floe.operation.source-snapshot-ids": "none",
    }

    run_recipe(recipes("Spark")[2], lk, spark=spark, record=record)

    assert spark.conf.get("spark.sql.iceberg.snapshot-property.floe.operation.kind", None) is None
    if iceberg_version(spark) >= (1, 11):
        assert_replayed(spark, floe, lk, "overwrite-partitions", [(3, "2026-08-21"), (30, DAY)])
    else:
        assert "floe.operation.kind" not in last_summary(spark, f"{lk.lake}.{lk.ns}.events")
        assert_refused(spark, floe, lk)


def test_unrecorded_overwrite_is_refused(spark, floe: FloeServer) -> None:
    """The control: the same overwrite without a record is not merged."""
    lk = compacted_day_on_main(spark, floe)
    spark.sql(f"INSERT OVERWRITE {lk.lake}.{lk.ns}.events PARTITION (day = '{DAY}') VALUES (40)")
    assert_refused(spark, floe, lk)
    assert rows(spark, f"SELECT id, day FROM {lk.main}") == [(1, DAY), (2, DAY), (3, "2026-08-21")]
