"""Small helpers the Trino tests share: floe's view of a table, files on disk, errors."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from floeproc import FloeServer


def load_table(floe: FloeServer, warehouse: str, namespace: str, table: str) -> dict[str, Any]:
    """floe's Iceberg REST answer for one table (metadata-location, metadata, config)."""
    prefix = urllib.parse.quote(warehouse, safe="@")
    url = f"{floe.uri}/v1/{prefix}/namespaces/{urllib.parse.quote(namespace)}/tables/{urllib.parse.quote(table)}"
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read())


def rest_status(floe: FloeServer, path: str) -> tuple[int, dict[str, Any]]:
    """GET an Iceberg REST path (after /v1/); its status and decoded body."""
    try:
        with urllib.request.urlopen(f"{floe.uri}/v1/{path}", timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def rest_post(floe: FloeServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST JSON to an Iceberg REST path (after /v1/); the decoded answer (raises on 4xx/5xx)."""
    req = urllib.request.Request(
        f"{floe.uri}/v1/{path}", data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def local_path(location: str) -> Path:
    """The directory or file of a file:// location."""
    parsed = urllib.parse.urlparse(location)
    assert parsed.scheme == "file", location
    return Path(urllib.parse.unquote(parsed.path))


def data_files(table_location: str) -> set[str]:
    """The Parquet files under a table's folder (Hadoop's .crc sidecars left out)."""
    root = local_path(table_location)
    return {str(p) for p in root.rglob("*.parquet") if not p.name.startswith(".")}


def all_files(location: str) -> set[str]:
    """Every file under a folder, sidecars left out; empty when the folder does not exist."""
    root = local_path(location)
    return {str(p) for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")} if root.exists() else set()
