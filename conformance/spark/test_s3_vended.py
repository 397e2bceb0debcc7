"""Spark writes and reads an s3:// warehouse through floe's vended credentials.

A floe of its own serves warehouse s3://BUCKET/wh on MinIO (which enforces
STS session policies; ../s3/minio.sh, started by run.sh) with
--s3-vended-credentials on-request. Spark's catalogs name S3FileIO, the
catalog URI, the warehouse and X-Iceberg-Access-Delegation:
vended-credentials, and no key: S3FileIO uses the credentials floe vends
per table (STS AssumeRole, a session policy of the table's prefixes,
never a deletion), refreshed from the table's /credentials route.

The deletions Spark's Iceberg client can attempt (its FileIO's single and
bulk deletes, Iceberg's own purge of a table's files, DROP TABLE ...
PURGE) are run on main while branch dev shares the table's files: no
object of the bucket goes away and dev reads whole.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from floeproc import FloeServer, run_floe
from helpers import rows, snapshot_ids

ENDPOINT = os.environ.get("FLOE_TEST_MINIO_ENDPOINT", "")
KEY_ID = os.environ.get("FLOE_TEST_MINIO_ACCESS_KEY_ID", "")
SECRET = os.environ.get("FLOE_TEST_MINIO_SECRET_ACCESS_KEY", "")
# An interpreter with boto3 (the PyIceberg suite's virtualenv): the bucket
# with MinIO's root keys, behind the engine's back.
OWNER_PYTHON = os.environ.get("FLOE_TEST_S3_PYTHON", "")
BUCKET = f"floe-spark-vend-{int(time.time() * 1000)}"
WAREHOUSE = f"s3://{BUCKET}/wh"

_OWNER = """
import json, sys
import boto3
op, bucket, prefix = sys.argv[1:4]
s3 = boto3.client("s3", endpoint_url=sys.argv[4], region_name="us-east-1",
                  aws_access_key_id=sys.argv[5], aws_secret_access_key=sys.argv[6])
if op == "create-bucket":
    s3.create_bucket(Bucket=bucket)
    print("[]")
else:
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [o["Key"] for o in page.get("Contents", [])]
    print(json.dumps(keys))
"""


def owner(op: str, prefix: str = "") -> list[str]:
    """The bucket with MinIO's root keys: create it, or list the keys under prefix."""
    proc = subprocess.run(
        [OWNER_PYTHON, "-c", _OWNER, op, BUCKET, prefix, ENDPOINT, KEY_ID, SECRET],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def floe_vend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FloeServer]:
    """floe on an s3:// warehouse on MinIO, vending credentials on request."""
    if not (ENDPOINT and KEY_ID and SECRET and OWNER_PYTHON):
        pytest.fail("no MinIO: run through run.sh, which starts one (conformance/s3/minio.sh)")
    owner("create-bucket")
    with run_floe(
        tmp_path_factory.mktemp("floe-s3-vend"),
        WAREHOUSE,
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


def vended_catalog(spark: Any, floe: FloeServer, name: str, warehouse: str) -> None:
    """A Spark catalog on warehouse whose S3FileIO holds only the credentials floe vends."""
    prefix = f"spark.sql.catalog.{name}"
    for k, v in {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "rest",
        f"{prefix}.uri": floe.uri,
        f"{prefix}.warehouse": warehouse,
        f"{prefix}.cache-enabled": "false",
        f"{prefix}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        f"{prefix}.header.X-Iceberg-Access-Delegation": "vended-credentials",
    }.items():
        spark.conf.set(k, v)


def iceberg_table(spark: Any, catalog: str, name: str) -> Any:
    """The Iceberg Java Table behind a Spark catalog's table (its FileIO is the engine's)."""
    jvm = spark._jvm
    cat = spark._jsparkSession.sessionState().catalogManager().catalog(catalog)
    return cat.icebergCatalog().loadTable(jvm.org.apache.iceberg.catalog.TableIdentifier.parse(name))


def test_spark_through_vended_credentials(spark: Any, floe_vend: FloeServer) -> None:
    vended_catalog(spark, floe_vend, "vmain", "lake")
    spark.sql("CREATE NAMESPACE vmain.sales")
    spark.sql(
        "CREATE TABLE vmain.sales.orders (id BIGINT, day INT, name STRING) USING iceberg PARTITIONED BY (day) "
        "TBLPROPERTIES ('format-version'='2')"
    )
    spark.sql("INSERT INTO vmain.sales.orders VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c')")
    spark.sql("INSERT INTO vmain.sales.orders VALUES (4, 2, 'd')")
    assert rows(spark, "SELECT id FROM vmain.sales.orders") == [(1,), (2,), (3,), (4,)]
    first, second = snapshot_ids(spark, "vmain.sales.orders")
    assert rows(spark, f"SELECT id FROM vmain.sales.orders VERSION AS OF {first}") == [(1,), (2,), (3,)]
    location = spark.sql("DESCRIBE TABLE EXTENDED vmain.sales.orders").where("col_name = 'Location'").collect()[0][1]
    assert location.startswith(WAREHOUSE + "/"), location

    floe_vend.cli("branch", "create", "dev", "--from", "main")
    vended_catalog(spark, floe_vend, "vdev", "lake@dev")
    spark.sql("INSERT INTO vdev.sales.orders VALUES (5, 3, 'e')")
    spark.sql("UPDATE vdev.sales.orders SET name = 'B' WHERE id = 2")
    want_dev = [(1, "a"), (2, "B"), (3, "c"), (4, "d"), (5, "e")]
    assert rows(spark, "SELECT id, name FROM vdev.sales.orders") == want_dev
    assert rows(spark, f"SELECT id FROM vdev.sales.orders VERSION AS OF {second}") == [(1,), (2,), (3,), (4,)]
    assert rows(spark, "SELECT id FROM vmain.sales.orders") == [(1,), (2,), (3,), (4,)]
    dev_snapshots = snapshot_ids(spark, "vdev.sales.orders")

    before = set(owner("list", "wh/"))
    dev_files = {r[0] for r in spark.sql("SELECT file_path FROM vdev.sales.orders.all_files").collect()}
    assert dev_files and all(f.startswith(location) for f in dev_files), dev_files
    assert {f.removeprefix(f"s3://{BUCKET}/") for f in dev_files} <= before

    # The FileIO floe configured: temporary keys (never MinIO's root
    # user's), their expiry and the refresh route.
    main_table = iceberg_table(spark, "vmain", "sales.orders")
    io = main_table.io()
    props = dict(io.properties())
    assert props.get("s3.session-token") and props.get("s3.access-key-id") not in ("", None, KEY_ID), props
    assert props.get("client.refresh-credentials-endpoint") == "v1/lake/namespaces/sales/tables/orders/credentials", props
    assert "s3.remote-signing-enabled" not in props, props

    # The engine's own FileIO on main: a single and a bulk delete of
    # files dev uses, each refused by S3 (AccessDenied).
    victims = sorted(dev_files)
    with pytest.raises(Exception, match="(?i)access ?denied|403"):
        io.deleteFile(victims[0])
    jvm = spark._jvm
    paths = jvm.java.util.ArrayList()
    for v in victims:
        paths.add(v)
    with pytest.raises(Exception):
        io.deleteFiles(paths)

    # Iceberg's own purge of main's table (what a client-side DROP TABLE
    # ... PURGE runs, gc.enabled or not): every deletion refused, logged by
    # Iceberg, nothing raised.
    jvm.org.apache.iceberg.CatalogUtil.dropTableData(io, main_table.operations().current())

    # DROP TABLE ... PURGE is refused by Iceberg first (gc.enabled=false);
    # the plain DROP deletes no file either.
    with pytest.raises(Exception, match="GC is disabled"):
        spark.sql("DROP TABLE vmain.sales.orders PURGE")
    spark.sql("DROP TABLE vmain.sales.orders")

    assert set(owner("list", "wh/")) >= before
    assert rows(spark, "SELECT id, name FROM vdev.sales.orders") == want_dev
    assert rows(spark, f"SELECT id FROM vdev.sales.orders VERSION AS OF {first}") == [(1,), (2,), (3,)]
    assert snapshot_ids(spark, "vdev.sales.orders") == dev_snapshots
