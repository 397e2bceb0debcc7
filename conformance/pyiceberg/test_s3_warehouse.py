"""An s3:// warehouse against a real S3 API: moto's standalone server.

A second `floe serve` runs with --warehouse s3://<bucket>/wh and the --s3-*
flags. floe writes and reads metadata files through iceberg-go's S3 IO;
PyIceberg, configured with nothing but the catalog URI, writes data files
with the S3 settings floe hands out in the table config.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import BadRequestError, NoSuchTableError
from pyiceberg.table.metadata import TableMetadataUtil

from conftest import FloeServer, run_floe
from helpers import arrow, assert_rows, create_orders, rows

BUCKET = "floe-lake"
KEY = "test"  # moto accepts any credentials
REGION = "us-east-1"

FIRST = rows((1, "books", 10.0, 0), (2, "games", 20.0, 1), (3, "books", 30.0, 1))
SECOND = rows((4, "music", 40.0, 2))
REPLACED = rows((7, "toys", 70.0, 3), (8, "games", 80.0, 0))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """moto_server on a free loopback port, for this module only."""
    port = _free_port()
    log_path = tmp_path_factory.mktemp("moto") / "moto.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not start; log {log_path}:\n{log_path.read_text()}") from None
                time.sleep(0.05)
        yield endpoint
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def s3(s3_endpoint: str) -> Any:
    """A boto3 S3 client on moto, with the warehouse bucket created."""
    client = boto3.client(
        "s3", endpoint_url=s3_endpoint, region_name=REGION,
        aws_access_key_id=KEY, aws_secret_access_key=KEY,
        config=Config(s3={"addressing_style": "path"}),
    )  # fmt: skip
    client.create_bucket(Bucket=BUCKET)
    return client


@pytest.fixture(scope="module")
def floe_s3(s3: Any, s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FloeServer]:
    """A floe server whose warehouse `lake` is s3://<bucket>/wh on moto."""
    with run_floe(
        tmp_path_factory.mktemp("floe-s3"),
        f"s3://{BUCKET}/wh",
        "--s3-endpoint", s3_endpoint,
        "--s3-region", REGION,
        "--s3-path-style",
        "--s3-access-key-id", KEY,
        "--s3-secret-access-key", KEY,
        "--s3-client-credentials",
        "--dev",
    ) as server:  # fmt: skip
        yield server


@pytest.fixture
def s3_catalog(floe_s3: FloeServer) -> Catalog:
    # No s3.* property here: everything PyIceberg needs comes from floe.
    return floe_s3.catalog("lake")


def keys_under(s3: Any, location: str) -> set[str]:
    """Every object key below an s3://<bucket>/ location."""
    prefix = location.removeprefix(f"s3://{BUCKET}/").rstrip("/") + "/"
    keys: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        keys.update(o["Key"] for o in page.get("Contents", []))
    return keys


def key_of(location: str) -> str:
    assert location.startswith(f"s3://{BUCKET}/"), location
    return location.removeprefix(f"s3://{BUCKET}/")


def test_s3_table_round_trip(s3_catalog: Catalog, s3: Any, s3_endpoint: str, floe_s3: FloeServer) -> None:
    s3_catalog.create_namespace("sales")
    tbl = create_orders(s3_catalog, "sales.orders")
    loc = tbl.location()
    assert loc.startswith(f"s3://{BUCKET}/wh/sales/orders-"), loc
    # The table config floe handed out reached PyIceberg's FileIO.
    assert tbl.io.properties["s3.endpoint"] == s3_endpoint
    assert tbl.io.properties["s3.region"] == REGION
    assert tbl.io.properties["s3.force-virtual-addressing"] == "false"

    tbl.append(arrow(FIRST))
    tbl.append(arrow(SECOND))
    assert_rows(tbl.scan().to_arrow(), FIRST + SECOND)
    tbl.overwrite(arrow(REPLACED))
    assert_rows(tbl.scan().to_arrow(), REPLACED)

    # A fresh client sees the same, reading metadata floe wrote to S3.
    loaded = floe_s3.catalog("lake").load_table("sales.orders")
    assert_rows(loaded.scan().to_arrow(), REPLACED)
    assert loaded.metadata_location == tbl.metadata_location

    keys = keys_under(s3, loc)
    metadata = sorted(k for k in keys if k.endswith(".metadata.json"))
    # create, two appends, overwrite: one file each, numbered in order.
    assert [k.rsplit("/", 1)[1][:5] for k in metadata] == ["00000", "00001", "00002", "00003"], metadata
    assert all(k.startswith(key_of(loc) + "/metadata/") for k in metadata), metadata
    assert key_of(loaded.metadata_location) in metadata
    data_files = {key_of(task.file.file_path) for task in loaded.scan().plan_files()}
    assert data_files and data_files <= keys, (data_files, keys)
    assert all(k.endswith(".parquet") and k.startswith(key_of(loc) + "/data/") for k in data_files)

    # The current metadata file, read straight from S3, parses and is the table's.
    raw = s3.get_object(Bucket=BUCKET, Key=key_of(loaded.metadata_location))["Body"].read()
    meta = TableMetadataUtil.parse_raw(raw.decode())
    assert meta.table_uuid == loaded.metadata.table_uuid
    assert meta.location == loc
    assert meta.current_snapshot_id == loaded.metadata.current_snapshot_id
    assert json.loads(raw)["metadata-log"], "the metadata log names the earlier files"

    # Purge drops the table from the catalog but deletes no object.
    s3_catalog.purge_table("sales.orders")
    with pytest.raises(NoSuchTableError):
        s3_catalog.load_table("sales.orders")
    assert keys_under(s3, loc) == keys


def test_s3_location_outside_the_warehouse_is_refused(s3_catalog: Catalog, s3: Any) -> None:
    s3_catalog.create_namespace("elsewhere")
    for location in (f"s3://{BUCKET}/other/t", f"s3://other-{BUCKET}/wh/t", f"s3://{BUCKET}/wh/../t"):
        with pytest.raises(BadRequestError, match="invalid table location"):
            create_orders(s3_catalog, "elsewhere.t", location=location)
    assert not keys_under(s3, f"s3://{BUCKET}/other")
