"""The PyIceberg recipes of merge/mergeengine/OPERATIONS.md, run as documented.

A catalog branch overwrites or deletes one day of a table with a recipe of
the "PyIceberg" section (the record in `snapshot_properties=`), while main
appends to another day. `floe merge` then merges the branch: the record must
reach every snapshot the write commits, floe must replay it (summary
`floe.merge.replayed=true`, the record kept) and main must hold the branch's
day and main's own rows. PyIceberg's `overwrite` and
`dynamic_partition_overwrite` commit two snapshots, a delete and an append,
both with the record: floe replays the delete and cherry-picks the append,
and each row lands once.
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from conftest import ROOT, FloeServer

DAY = "2026-08-20"
DOC = ROOT / "merge" / "mergeengine" / "OPERATIONS.md"
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "day", StringType(), required=False))
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="day"))


def table_rows(ids: list[int], day: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "day": pa.array([day] * len(ids), pa.string())})


def merge(floe: FloeServer, branch: str) -> subprocess.CompletedProcess:
    binary = Path(os.environ.get("FLOE_BIN") or ROOT / "bin" / "floe")
    if not binary.is_absolute():
        binary = ROOT / binary
    return subprocess.run(
        [str(binary), "merge", branch, "--into", "main", "--server", floe.uri],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def setup(floe: FloeServer, catalog: Catalog, ns: str) -> tuple[str, Catalog]:
    """events(id, day) with rows on DAY and the next day; a catalog branch;
    main appends to a third day. Returns the branch and its catalog."""
    ident = f"{ns}.events"
    tbl = catalog.create_table(ident, schema=SCHEMA, partition_spec=SPEC)
    tbl.append(table_rows([1, 2], DAY))
    tbl.append(table_rows([3], "2026-08-21"))
    branch = f"ops_{uuid.uuid4().hex[:8]}"
    main = floe.nessie("GET", "/trees/main")["reference"]
    floe.nessie("POST", f"/trees?name={branch}&type=BRANCH", main)
    catalog.load_table(ident).append(table_rows([4], "2026-08-22"))
    return branch, floe.catalog(f"lake@{branch}")


def merged(floe: FloeServer, catalog: Catalog, ns: str, branch: str, kind: str, ops: list[str]) -> list[tuple[int, str]]:
    """Merge the branch. The snapshots the merge wrote on main are ops
    (operations, oldest first), each with the record; the delete is the
    replayed one (floe.merge.replayed=true), an append is cherry-picked.
    Returns main's rows."""
    res = merge(floe, branch)
    assert res.returncode == 0, f"merge refused: {res.stderr}{res.stdout}"
    tbl = catalog.load_table(f"{ns}.events")
    snaps = tbl.inspect.snapshots().sort_by("committed_at").to_pylist()
    written = [(s["operation"], dict(s["summary"])) for s in snaps if "floe.merge.source-snapshot-id" in dict(s["summary"])]
    assert [op for op, _ in written] == ops, written
    for op, summary in written:
        assert summary.get("floe.operation.kind") == kind, summary
        assert summary.get("floe.operation.partitions") == f"day={DAY}", summary
        assert summary.get("floe.merge.replayed") == ("true" if op == "delete" else None), summary
    return sorted((r["id"], r["day"]) for r in tbl.scan().to_arrow().to_pylist())


def pinned_raw(branch_cat: Catalog, ns: str) -> Any:
    """A raw table on the branch: the input a job reads and pins."""
    raw = branch_cat.create_table(f"{ns}.raw", schema=SCHEMA)
    raw.append(table_rows([10, 11], DAY))
    return branch_cat.load_table(f"{ns}.raw")


def doc_recipe() -> str:
    """The ```python block of OPERATIONS.md's "### PyIceberg"."""
    part = DOC.read_text().split("\n### PyIceberg\n", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", part, re.S)
    assert len(blocks) == 1, blocks
    return blocks[0]


def test_overwrite_with_filter(floe: FloeServer, catalog: Catalog, ns: str) -> None:
    """The document's recipe, executed as written (its namespace ns is the test's)."""
    branch, lake = setup(floe, catalog, ns)
    raw = pinned_raw(lake, ns)
    tbl = lake.load_table(f"{ns}.events")
    df = raw.scan(snapshot_id=raw.current_snapshot().snapshot_id).to_arrow()

    code = doc_recipe().replace('"ns.raw@', f'"{ns}.raw@')
    env = {"tbl": tbl, "df": df, "raw": raw}
    exec(compile(code, str(DOC), "exec"), env)  # noqa: S102 (the document's own code)

    assert env["record"]["floe.operation.source-snapshot-ids"] == f"{ns}.raw@{raw.current_snapshot().snapshot_id}"
    assert merged(floe, catalog, ns, branch, "overwrite-partitions", ["delete", "append"]) == [(3, "2026-08-21"), (4, "2026-08-22"), (10, DAY), (11, DAY)]


def test_dynamic_partition_overwrite(floe: FloeServer, catalog: Catalog, ns: str) -> None:
    branch, lake = setup(floe, catalog, ns)
    tbl = lake.load_table(f"{ns}.events")
    df = table_rows([20, 21, 22], DAY)

    record = {
        "floe.operation.kind": "overwrite-partitions",
        "floe.operation.partitions": "day=2026-08-20",
        "floe.operation.source-snapshot-ids": "none",
    }
    tbl.dynamic_partition_overwrite(df, snapshot_properties=record)

    got = merged(floe, catalog, ns, branch, "overwrite-partitions", ["delete", "append"])
    assert got == [(3, "2026-08-21"), (4, "2026-08-22"), (20, DAY), (21, DAY), (22, DAY)]


def test_delete_partitions(floe: FloeServer, catalog: Catalog, ns: str) -> None:
    branch, lake = setup(floe, catalog, ns)
    tbl = lake.load_table(f"{ns}.events")

    record = {
        "floe.operation.kind": "delete-partitions",
        "floe.operation.partitions": "day=2026-08-20",
        "floe.operation.source-snapshot-ids": "none",
    }
    tbl.delete("day = '2026-08-20'", snapshot_properties=record)

    assert merged(floe, catalog, ns, branch, "delete-partitions", ["delete"]) == [(3, "2026-08-21"), (4, "2026-08-22")]
