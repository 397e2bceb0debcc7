"""A table both catalog branches appended to, merged by floe, read with PyIceberg.

main and a catalog branch append to different partitions of one table;
`floe merge BRANCH --into main` cherry-picks the branch's snapshot onto main's
head (mergeengine). PyIceberg then reads main: every row once, the picked
snapshot in the `snapshots` metadata table with floe's summary properties,
and in `entries` every data file of both sides with the sequence number it
has on main. Then PyIceberg keeps writing the merged table like any other.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.manifest import clear_manifest_cache

from conftest import ROOT, FloeServer
from helpers import arrow, assert_rows, create_orders, rows

BASE = rows((1, "books", 10.0, 0), (2, "books", 11.0, 0))
DEV = rows((3, "games", 20.0, 1), (4, "games", 21.0, 1), (5, "games", 22.0, 1))
MAIN = rows((6, "music", 30.0, 2))
AFTER = rows((7, "toys", 40.0, 3))

ADDED = 1  # manifest entry status: 0 EXISTING, 1 ADDED, 2 DELETED


def nessie(floe: FloeServer, method: str, path: str, body: Any = None) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{floe.uri}/api/v2{path}", data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def floe_cli(floe: FloeServer, *args: str) -> str:
    """Run the floe CLI against the server; its standard output."""
    binary = Path(os.environ.get("FLOE_BIN") or ROOT / "bin" / "floe")
    if not binary.is_absolute():
        binary = ROOT / binary
    proc = subprocess.run(
        [str(binary), *args, "--server", floe.uri],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, f"floe {' '.join(args)} exited {proc.returncode}: {proc.stderr}{proc.stdout}"
    return proc.stdout


def snapshots(tbl: Any) -> list[dict[str, Any]]:
    """The snapshots metadata table, oldest first, summaries as dicts."""
    out = tbl.inspect.snapshots().sort_by("committed_at").to_pylist()
    for s in out:
        s["summary"] = dict(s["summary"])
    return out


def entries(tbl: Any) -> dict[str, dict[str, Any]]:
    """The entries metadata table by partition category (one data file each)."""
    out: dict[str, dict[str, Any]] = {}
    for e in tbl.inspect.entries().to_pylist():
        cat = e["data_file"]["partition"]["category"]
        assert cat not in out, f"two entries for {cat}: {out[cat]} and {e}"
        out[cat] = e
    return out


def both_sides_append(floe: FloeServer, catalog: Catalog, ident: str) -> tuple[str, int]:
    """The table with BASE on main, then DEV on a new catalog branch and MAIN
    on main: the branch's name and the base snapshot's id."""
    tbl = create_orders(catalog, ident)
    tbl.append(arrow(BASE))
    base_id = catalog.load_table(ident).metadata.current_snapshot_id
    branch = f"side_{uuid.uuid4().hex[:8]}"
    main_ref = nessie(floe, "GET", "/trees/main")["reference"]
    nessie(floe, "POST", f"/trees?name={branch}&type=BRANCH", main_ref)
    floe.catalog(f"lake@{branch}").load_table(ident).append(arrow(DEV))
    catalog.load_table(ident).append(arrow(MAIN))
    return branch, base_id


def test_merged_table_reads_and_metadata_tables(floe: FloeServer, catalog: Catalog, ns: str) -> None:
    ident = f"{ns}.orders"
    clear_manifest_cache()
    branch, base_id = both_sides_append(floe, catalog, ident)
    dev = floe.catalog(f"lake@{branch}")
    dev_snap = dev.load_table(ident).current_snapshot()
    main_snap = catalog.load_table(ident).current_snapshot()
    assert dev_snap is not None and main_snap is not None

    floe_cli(floe, "merge", branch, "--into", "main")

    # Every row of both sides, once; the branch keeps its own rows.
    merged = floe.catalog("lake").load_table(ident)
    assert_rows(merged.scan().to_arrow(), BASE + DEV + MAIN)
    assert_rows(floe.catalog(f"lake@{branch}").load_table(ident).scan().to_arrow(), BASE + DEV)

    # snapshots: base, main's append, and the branch's append picked onto
    # main's head, naming its source.
    snaps = snapshots(merged)
    assert [s["operation"] for s in snaps] == ["append"] * 3, snaps
    assert [s["snapshot_id"] for s in snaps[:2]] == [base_id, main_snap.snapshot_id]
    picked = snaps[2]
    assert picked["parent_id"] == main_snap.snapshot_id
    assert picked["snapshot_id"] == merged.metadata.current_snapshot_id
    assert picked["summary"]["floe.merge.source-snapshot-id"] == str(dev_snap.snapshot_id), picked
    assert picked["summary"]["floe.merge.source-parent-snapshot-id"] == str(base_id), picked
    assert picked["summary"]["floe.merge.source-ref"] == branch, picked
    assert picked["summary"]["added-records"] == str(len(DEV))
    assert picked["summary"]["total-records"] == str(len(BASE + DEV + MAIN))
    assert picked["summary"]["total-data-files"] == "3"
    for s in snaps[:2]:
        assert "floe.merge.source-ref" not in s["summary"], s
    assert merged.snapshot_by_id(picked["snapshot_id"]).sequence_number == 3

    # entries: each side's data file, added by its snapshot; the picked
    # file takes the new snapshot's sequence number on main (inherited
    # through the new manifest list), while on the branch it has 2. The
    # file itself is the branch's: never copied.
    got = entries(merged)
    assert sorted(got) == ["books", "games", "music"]
    want = {"books": (base_id, 1), "music": (main_snap.snapshot_id, 2), "games": (picked["snapshot_id"], 3)}
    for cat, (snap_id, seq) in want.items():
        e = got[cat]
        assert (e["status"], e["snapshot_id"], e["sequence_number"], e["file_sequence_number"]) == (ADDED, snap_id, seq, seq), e
        assert e["data_file"]["content"] == 0, e  # data, not deletes
    assert got["games"]["data_file"]["record_count"] == len(DEV)

    # The merged table is an ordinary table: PyIceberg appends on top of the
    # picked snapshot and reads everything back.
    merged.append(arrow(AFTER))
    again = floe.catalog("lake").load_table(ident)
    assert_rows(again.scan().to_arrow(), BASE + DEV + MAIN + AFTER)
    snaps = snapshots(again)
    assert len(snaps) == 4 and snaps[3]["parent_id"] == picked["snapshot_id"], snaps
    assert again.current_snapshot().sequence_number == 4
    got = entries(again)
    assert (got["toys"]["status"], got["toys"]["sequence_number"]) == (ADDED, 4)
    assert got["games"]["sequence_number"] == 3

    # The branch's entry of the same file keeps sequence number 2.
    on_branch = entries(floe.catalog(f"lake@{branch}").load_table(ident))
    assert on_branch["games"]["data_file"]["file_path"] == got["games"]["data_file"]["file_path"]
    assert on_branch["games"]["sequence_number"] == 2


def test_cached_manifest_keeps_the_branch_sequence_number(floe: FloeServer, catalog: Catalog, ns: str) -> None:
    """PyIceberg caches manifests by path for its whole process, with the
    sequence number of the list it first read them from: a cherry-pick lists
    a copy of the branch's manifest under a new path, so a client that read
    the branch before the merge sees main's sequence number on main."""
    ident = f"{ns}.orders"
    clear_manifest_cache()
    branch, _ = both_sides_append(floe, catalog, ident)
    # One long-lived client reads the branch's table, then main's after the merge.
    assert entries(floe.catalog(f"lake@{branch}").load_table(ident))["games"]["sequence_number"] == 2
    floe_cli(floe, "merge", branch, "--into", "main")
    merged = floe.catalog("lake").load_table(ident)
    assert_rows(merged.scan().to_arrow(), BASE + DEV + MAIN)
    assert entries(merged)["games"]["sequence_number"] == 3
