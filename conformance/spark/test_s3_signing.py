"""Spark writes and reads an s3:// warehouse through floe's remote signing.

A floe of its own serves warehouse s3://BUCKET/wh with
--s3-remote-signing on-request and is the only holder of S3 keys. Spark's
catalogs name S3FileIO, the catalog URI, the warehouse and
X-Iceberg-Access-Delegation: remote-signing, and no key, endpoint or
region: the AWS SDK signs nothing itself, every S3 request is signed by
floe's sign endpoint named in the loadTable answer. The S3 server is moto
with signature checking on (conformance/s3/moto.sh, started by run.sh), so
every object Spark reads or writes went through a signature floe made.

The deletions Spark's Iceberg client can attempt (DROP TABLE ... PURGE,
Iceberg's own purge of a table's files, its FileIO's single and bulk
deletes) are run on main while branch dev shares the table's files: no
object of the bucket goes away, dev reads whole, and floe counts each
refusal.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from floeproc import FloeServer, run_floe
from helpers import rows, snapshot_ids

ENDPOINT = os.environ.get("FLOE_TEST_S3_SIGNING_ENDPOINT", "")
KEY_ID = os.environ.get("FLOE_TEST_S3_ACCESS_KEY_ID", "")
SECRET = os.environ.get("FLOE_TEST_S3_SECRET_ACCESS_KEY", "")
# An interpreter with boto3 (the PyIceberg suite's virtualenv): floe's own
# view of the bucket, behind the engine's back.
OWNER_PYTHON = os.environ.get("FLOE_TEST_S3_PYTHON", "")
BUCKET = f"floe-spark-sign-{int(time.time() * 1000)}"
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
    """The bucket with floe's own keys: create it, or list the keys under prefix."""
    proc = subprocess.run(
        [OWNER_PYTHON, "-c", _OWNER, op, BUCKET, prefix, ENDPOINT, KEY_ID, SECRET],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def floe_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FloeServer]:
    """floe on an s3:// warehouse, signing on request, the only holder of keys."""
    if not (ENDPOINT and KEY_ID and SECRET and OWNER_PYTHON):
        pytest.fail("no signature-checking S3 server: run through run.sh, which starts one (conformance/s3/moto.sh)")
    owner("create-bucket")
    with run_floe(
        tmp_path_factory.mktemp("floe-s3-sign"),
        WAREHOUSE,
        "--s3-endpoint", ENDPOINT,
        "--s3-region", "us-east-1",
        "--s3-path-style",
        "--s3-access-key-id", KEY_ID,
        "--s3-secret-access-key", SECRET,
        "--s3-remote-signing", "on-request",
        "--dev",
    ) as server:  # fmt: skip
        yield server


def signing_catalog(spark: Any, floe: FloeServer, name: str, warehouse: str) -> None:
    """A Spark catalog on warehouse that reaches S3 only through floe's signatures."""
    prefix = f"spark.sql.catalog.{name}"
    for k, v in {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "rest",
        f"{prefix}.uri": floe.uri,
        f"{prefix}.warehouse": warehouse,
        f"{prefix}.cache-enabled": "false",
        f"{prefix}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        f"{prefix}.header.X-Iceberg-Access-Delegation": "remote-signing",
    }.items():
        spark.conf.set(k, v)


def metric(floe: FloeServer, series: str) -> float:
    with urllib.request.urlopen(f"{floe.uri}/metrics", timeout=30) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith(series + " "):
                return float(line.split()[-1])
    return 0.0


def refusals(floe: FloeServer) -> float:
    return metric(floe, 'floe_storage_sign_refusals_total{reason="deletion"}')


def iceberg_table(spark: Any, catalog: str, name: str) -> Any:
    """The Iceberg Java Table behind a Spark catalog's table (its FileIO is the engine's)."""
    jvm = spark._jvm
    cat = spark._jsparkSession.sessionState().catalogManager().catalog(catalog)
    return cat.icebergCatalog().loadTable(jvm.org.apache.iceberg.catalog.TableIdentifier.parse(name))


def test_spark_through_remote_signing(spark: Any, floe_s3: FloeServer) -> None:
    signing_catalog(spark, floe_s3, "s3main", "lake")
    spark.sql("CREATE NAMESPACE s3main.sales")
    spark.sql(
        "CREATE TABLE s3main.sales.orders (id BIGINT, day INT, name STRING) USING iceberg PARTITIONED BY (day) "
        "TBLPROPERTIES ('format-version'='2')"
    )
    spark.sql("INSERT INTO s3main.sales.orders VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c')")
    spark.sql("INSERT INTO s3main.sales.orders VALUES (4, 2, 'd')")
    assert rows(spark, "SELECT id FROM s3main.sales.orders") == [(1,), (2,), (3,), (4,)]
    first, second = snapshot_ids(spark, "s3main.sales.orders")
    assert rows(spark, f"SELECT id FROM s3main.sales.orders VERSION AS OF {first}") == [(1,), (2,), (3,)]
    location = spark.sql("DESCRIBE TABLE EXTENDED s3main.sales.orders").where("col_name = 'Location'").collect()[0][1]
    assert location.startswith(WAREHOUSE + "/"), location
    puts = metric(floe_s3, 'floe_storage_signatures_total{operation="put-object"}')
    gets = metric(floe_s3, 'floe_storage_signatures_total{operation="get-object"}')
    assert puts >= 6 and gets >= 1, (puts, gets)

    # Branch dev shares main's files and adds its own, UPDATE included.
    floe_s3.cli("branch", "create", "dev", "--from", "main")
    signing_catalog(spark, floe_s3, "s3dev", "lake@dev")
    spark.sql("INSERT INTO s3dev.sales.orders VALUES (5, 3, 'e')")
    spark.sql("UPDATE s3dev.sales.orders SET name = 'B' WHERE id = 2")
    want_dev = [(1, "a"), (2, "B"), (3, "c"), (4, "d"), (5, "e")]
    assert rows(spark, "SELECT id, name FROM s3dev.sales.orders") == want_dev
    assert rows(spark, f"SELECT id FROM s3dev.sales.orders VERSION AS OF {second}") == [(1,), (2,), (3,), (4,)]
    assert rows(spark, "SELECT id FROM s3main.sales.orders") == [(1,), (2,), (3,), (4,)]
    dev_snapshots = snapshot_ids(spark, "s3dev.sales.orders")
    assert len(dev_snapshots) == 4, dev_snapshots

    before = set(owner("list", "wh/"))
    dev_files = {r[0] for r in spark.sql("SELECT file_path FROM s3dev.sales.orders.all_files").collect()}
    assert dev_files and all(f.startswith(location) for f in dev_files), dev_files
    assert {f.removeprefix(f"s3://{BUCKET}/") for f in dev_files} <= before

    # The FileIO floe configured: signing on, no keys; Iceberg 1.12 names
    # the table's sign route itself (rest.remote-signing.endpoint), and
    # floe leaves out signer.endpoint, which 1.12 warns is deprecated;
    # 1.10 reads s3.signer.endpoint.
    main_table = iceberg_table(spark, "s3main", "sales.orders")
    io = main_table.io()
    props = dict(io.properties())
    assert props.get("s3.remote-signing-enabled") == "true", props
    assert not any(k in props for k in ("s3.access-key-id", "s3.secret-access-key")), props
    assert props.get("client.region") == "us-east-1", props
    version = spark._jvm.org.apache.iceberg.IcebergBuild.version()
    route = "v1/lake/namespaces/sales/tables/orders/sign"
    if tuple(int(p) for p in version.split(".")[:2]) >= (1, 12):
        assert props.get("rest.remote-signing.endpoint") == route and "signer.endpoint" not in props, (version, props)
    else:
        assert props.get("s3.signer.endpoint") == route, (version, props)

    # The engine's own FileIO on main: a single and a bulk delete of
    # files dev uses, each refused by floe (S3 never sees them).
    refused = refusals(floe_s3)
    victims = sorted(dev_files)
    with pytest.raises(Exception, match="(?i)never signs a deletion|403|forbidden"):
        io.deleteFile(victims[0])
    assert refusals(floe_s3) >= refused + 1
    refused = refusals(floe_s3)
    jvm = spark._jvm
    paths = jvm.java.util.ArrayList()
    for v in victims:
        paths.add(v)
    with pytest.raises(Exception):
        io.deleteFiles(paths)
    assert refusals(floe_s3) >= refused + 1

    # Iceberg's own purge of main's table (what a client-side DROP TABLE
    # ... PURGE runs, gc.enabled or not): every deletion refused.
    refused = refusals(floe_s3)
    jvm.org.apache.iceberg.CatalogUtil.dropTableData(io, main_table.operations().current())
    assert refusals(floe_s3) > refused

    # And DROP TABLE ... PURGE itself: Iceberg refuses it first (floe's
    # tables carry gc.enabled=false); the plain DROP that follows deletes
    # no file either.
    with pytest.raises(Exception, match="GC is disabled"):
        spark.sql("DROP TABLE s3main.sales.orders PURGE")
    spark.sql("DROP TABLE s3main.sales.orders")

    assert set(owner("list", "wh/")) >= before
    assert rows(spark, "SELECT id, name FROM s3dev.sales.orders") == want_dev
    assert rows(spark, f"SELECT id FROM s3dev.sales.orders VERSION AS OF {first}") == [(1,), (2,), (3,)]
    assert snapshot_ids(spark, "s3dev.sales.orders") == dev_snapshots
