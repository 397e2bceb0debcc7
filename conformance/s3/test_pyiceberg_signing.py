"""PyIceberg writes and reads an s3:// warehouse through floe's remote signing.

floe runs with --s3-remote-signing on-request and is the only holder of
S3 keys; PyIceberg is configured with the catalog URI, the warehouse and
X-Iceberg-Access-Delegation: remote-signing, nothing else. The S3 server
is moto with signature checking on (run.sh makes its IAM user), so every
object PyIceberg reads or writes went through a signature floe made. A
deletion through the table's own FileIO is refused, and a purge on main
leaves every file of branch dev in place and readable.
"""

from __future__ import annotations

import os
import time
import urllib.request
from collections.abc import Iterator

import pyarrow as pa
import pytest
import s3fs
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.exceptions import SignError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from floeproc import FloeServer, run_floe

# PyIceberg 0.12 registers each FileIO's signer on its S3FileSystem by
# unregistering the previous one and then registering its own
# (pyiceberg.io.fsspec._s3). fsspec hands every FileIO with equal S3
# settings one shared instance, so one botocore client for all tables and
# threads: a request the fsspec IO thread emits between those two calls
# goes out unsigned (PyIceberg turns botocore's own signing off) and S3
# answers 403, and whichever FileIO registered last signs every table's
# requests at its own table's endpoint. That was this test's intermittent
# 403 on a HEAD: no sign request reached floe for it. Not caching
# S3FileSystem instances gives each FileIO (per thread) a client of its
# own, with its own signer registered before it sends anything.
s3fs.S3FileSystem.cachable = False

ENDPOINT = os.environ["FLOE_TEST_S3_SIGNING_ENDPOINT"]
KEY_ID = os.environ["FLOE_TEST_S3_ACCESS_KEY_ID"]
SECRET = os.environ["FLOE_TEST_S3_SECRET_ACCESS_KEY"]
BUCKET = f"floe-pysign-{int(time.time() * 1000)}"
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False))


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array([f"n{i}" for i in ids])})


@pytest.fixture(scope="module")
def owner() -> s3fs.S3FileSystem:
    """The S3 server seen with floe's own keys: for setup and for looking behind the clients' backs."""
    fs = s3fs.S3FileSystem(key=KEY_ID, secret=SECRET, client_kwargs={"endpoint_url": ENDPOINT, "region_name": "us-east-1"})
    fs.call_s3("create_bucket", Bucket=BUCKET)
    return fs


@pytest.fixture(scope="module")
def floe(owner: s3fs.S3FileSystem, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FloeServer]:
    with run_floe(
        tmp_path_factory.mktemp("floe-sign"),
        f"s3://{BUCKET}/wh",
        "--s3-endpoint", ENDPOINT,
        "--s3-region", "us-east-1",
        "--s3-path-style",
        "--s3-access-key-id", KEY_ID,
        "--s3-secret-access-key", SECRET,
        "--s3-remote-signing", "on-request",
        "--dev",
    ) as server:  # fmt: skip
        yield server


def catalog(floe: FloeServer, warehouse: str) -> Catalog:
    # No s3.* property and no keys: floe hands out the signer in the table config.
    return load_catalog(
        "floe", **{"type": "rest", "uri": floe.uri, "warehouse": warehouse,
                   "header.X-Iceberg-Access-Delegation": "remote-signing"}
    )  # fmt: skip


def signatures(floe: FloeServer, series: str) -> float:
    with urllib.request.urlopen(f"{floe.uri}/metrics", timeout=30) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith(series + " "):
                return float(line.split()[-1])
    return 0.0


def test_write_read_and_no_deletion(floe: FloeServer, owner: s3fs.S3FileSystem) -> None:
    main = catalog(floe, "lake")
    main.create_namespace("sales")
    table = main.create_table("sales.orders", schema=SCHEMA)
    assert table.io.properties.get("s3.signer") == "S3V4RestSigner"
    assert "s3.access-key-id" not in table.io.properties
    table.append(rows(1, 2, 3))
    assert sorted(main.load_table("sales.orders").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    puts = signatures(floe, 'floe_storage_signatures_total{operation="put-object"}')
    gets = signatures(floe, 'floe_storage_signatures_total{operation="get-object"}')
    assert puts >= 3 and gets >= 1, (puts, gets)

    # Branch dev shares main's files, then adds its own.
    floe.cli("branch", "create", "dev", "--from", "main")
    dev = catalog(floe, "lake@dev")
    dev_table = dev.load_table("sales.orders")
    dev_table.append(rows(4))
    assert sorted(dev.load_table("sales.orders").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4]
    dev_files = [t.file.file_path for t in dev.load_table("sales.orders").scan().plan_files()]
    manifest_list = dev.load_table("sales.orders").current_snapshot().manifest_list
    assert len(dev_files) == 2

    # The client's own FileIO cannot delete: floe refuses to sign it.
    refused = signatures(floe, 'floe_storage_sign_refusals_total{reason="deletion"}')
    with pytest.raises(SignError):
        table.io.delete(dev_files[0])
    assert signatures(floe, 'floe_storage_sign_refusals_total{reason="deletion"}') == refused + 1

    # A purge on main deletes nothing: dev's table still reads whole.
    main.purge_table("sales.orders")
    for path in [*dev_files, manifest_list]:
        assert owner.exists(path), path
    assert sorted(dev.load_table("sales.orders").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4]


def test_no_signing_outside_the_table(floe: FloeServer, owner: s3fs.S3FileSystem) -> None:
    main = catalog(floe, "lake")
    main.create_namespace("other")
    a = main.create_table("other.a", schema=SCHEMA)
    b = main.create_table("other.b", schema=SCHEMA)
    b.append(rows(9))
    b_file = next(iter(b.scan().plan_files())).file.file_path
    # a's FileIO signs through a's endpoint, which refuses b's files.
    with pytest.raises(SignError):
        a.io.new_input(b_file).open().read()
    with pytest.raises(SignError):
        a.io.new_output(b.location() + "/data/evil.parquet").create().write(b"x")
    assert not owner.exists(b.location() + "/data/evil.parquet")
