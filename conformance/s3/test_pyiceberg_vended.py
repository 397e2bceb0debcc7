"""PyIceberg writes and reads an s3:// warehouse with floe's vended credentials.

floe runs with --s3-vended-credentials on-request on MinIO (run.sh starts
it: minio.sh; it enforces STS session policies) and is the only holder of
long-lived keys; PyIceberg is configured with the catalog URI and the
warehouse only, and asks for vended credentials by default. Its FileIO
(PyArrow's) reads and writes with the keys floe vends for each table:
a deletion is AccessDenied, another table's files are out of reach, and
dev reads whole after a purge on main.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pyarrow as pa
import pytest
import s3fs
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from floeproc import FloeServer, run_floe

ENDPOINT = os.environ["FLOE_TEST_MINIO_ENDPOINT"]
KEY_ID = os.environ["FLOE_TEST_MINIO_ACCESS_KEY_ID"]
SECRET = os.environ["FLOE_TEST_MINIO_SECRET_ACCESS_KEY"]
BUCKET = f"floe-pyvend-{int(time.time() * 1000)}"
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False))


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array([f"n{i}" for i in ids])})


@pytest.fixture(scope="module")
def owner() -> s3fs.S3FileSystem:
    """MinIO seen with its root user's keys (floe's): setup, and looking behind the clients' backs."""
    fs = s3fs.S3FileSystem(key=KEY_ID, secret=SECRET, client_kwargs={"endpoint_url": ENDPOINT, "region_name": "us-east-1"})
    fs.call_s3("create_bucket", Bucket=BUCKET)
    return fs


@pytest.fixture(scope="module")
def floe(owner: s3fs.S3FileSystem, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FloeServer]:
    with run_floe(
        tmp_path_factory.mktemp("floe-vend"),
        f"s3://{BUCKET}/wh",
        "--s3-endpoint", ENDPOINT,
        "--s3-region", "us-east-1",
        "--s3-path-style",
        "--s3-access-key-id", KEY_ID,
        "--s3-secret-access-key", SECRET,
        "--s3-vended-credentials", "on-request",
        "--s3-sts-role-arn", "arn:aws:iam::000000000000:role/floe-vend",
        "--s3-sts-endpoint", ENDPOINT,
        "--dev",
    ) as server:  # fmt: skip
        yield server


def catalog(floe: FloeServer, warehouse: str) -> Catalog:
    # No s3.* property and no keys: PyIceberg sends
    # X-Iceberg-Access-Delegation: vended-credentials by itself.
    return load_catalog("floe", **{"type": "rest", "uri": floe.uri, "warehouse": warehouse,
                                   "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"})  # fmt: skip


def test_write_read_and_no_deletion(floe: FloeServer, owner: s3fs.S3FileSystem) -> None:
    main = catalog(floe, "lake")
    main.create_namespace("sales")
    table = main.create_table("sales.orders", schema=SCHEMA)
    props = table.io.properties
    assert props.get("s3.session-token") and props.get("s3.access-key-id") not in (None, KEY_ID), props
    table.append(rows(1, 2, 3))
    first = main.load_table("sales.orders").current_snapshot().snapshot_id
    table = main.load_table("sales.orders")
    table.append(rows(5))
    assert sorted(main.load_table("sales.orders").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 5]

    floe.cli("branch", "create", "dev", "--from", "main")
    dev = catalog(floe, "lake@dev")
    dev.load_table("sales.orders").append(rows(4))
    dev_table = dev.load_table("sales.orders")
    assert sorted(dev_table.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4, 5]
    assert sorted(dev_table.scan(snapshot_id=first).to_arrow()["id"].to_pylist()) == [1, 2, 3]
    dev_files = [t.file.file_path for t in dev_table.scan().plan_files()]
    manifest_list = dev_table.current_snapshot().manifest_list
    assert len(dev_files) == 3

    # The client's own FileIO on main cannot delete: S3 refuses it.
    with pytest.raises(OSError, match="(?i)access.?denied|403"):
        table.io.delete(dev_files[0])

    # A purge on main deletes nothing: dev's table still reads whole.
    main.purge_table("sales.orders")
    for path in [*dev_files, manifest_list]:
        assert owner.exists(path), path
    assert sorted(dev.load_table("sales.orders").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4, 5]


def test_no_access_outside_the_table(floe: FloeServer, owner: s3fs.S3FileSystem) -> None:
    main = catalog(floe, "lake")
    main.create_namespace("other")
    a = main.create_table("other.a", schema=SCHEMA)
    b = main.create_table("other.b", schema=SCHEMA)
    b.append(rows(9))
    b_file = next(iter(b.scan().plan_files())).file.file_path
    # a's credentials are scoped to a's folder.
    with pytest.raises(OSError, match="(?i)access.?denied|403"):
        a.io.new_input(b_file).open().read()
    with pytest.raises(OSError, match="(?i)access.?denied|403"):
        with a.io.new_output(b.location() + "/data/evil.parquet").create() as out:
            out.write(b"x")
    assert not owner.exists(b.location() + "/data/evil.parquet")
