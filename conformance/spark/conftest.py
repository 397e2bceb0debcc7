"""Fixtures: one real `floe serve` and one Spark session per test session.

The server is bin/floe (or $FLOE_BIN), started in dev mode on a free loopback
port with a fresh data directory and a file:// warehouse under pytest's
temporary directory, and stopped with SIGINT at the end; it must exit 0.

Spark runs in local mode with the Iceberg runtime jar run.sh fetched
($ICEBERG_SPARK_JAR) and the AWS SDK bundle ($ICEBERG_AWS_BUNDLE_JAR),
bound to loopback with its UI off. Its catalogs:
`floe` on warehouse `lake` (catalog branch main) and `dev` on `lake@dev`.
Both have Iceberg's client-side table cache off, so each statement loads the
table from floe and sees what the other catalog (or the floe CLI) did.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from floeproc import FloeServer, run_floe


@pytest.fixture(scope="session")
def floe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FloeServer]:
    """Start `floe serve --dev` for the session; stop it with SIGINT and require exit 0."""
    base = tmp_path_factory.mktemp("floe")
    with run_floe(base, (base / "warehouse").as_uri(), "--dev") as server:
        # The catalog branch the `dev` Spark catalog writes to.
        main = server.nessie("GET", "/trees/main")["reference"]
        server.nessie("POST", "/trees?name=dev&type=BRANCH", main)
        yield server


def _catalog_conf(name: str, uri: str, warehouse: str) -> dict[str, str]:
    prefix = f"spark.sql.catalog.{name}"
    return {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "rest",
        f"{prefix}.uri": uri,
        f"{prefix}.warehouse": warehouse,
        # Every statement loads the table from floe, so a change made
        # through the other catalog, the CLI or a merge is seen at once.
        f"{prefix}.cache-enabled": "false",
    }


@pytest.fixture(scope="session")
def spark(floe: FloeServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local Spark session for the whole run, with catalogs `floe` (lake) and `dev` (lake@dev)."""
    from pyspark.sql import SparkSession

    jar = os.environ.get("ICEBERG_SPARK_JAR")
    if not jar or not Path(jar).is_file():
        pytest.exit("ICEBERG_SPARK_JAR must name the iceberg-spark-runtime jar; run through run.sh", returncode=1)
    # The AWS SDK for S3FileIO (test_s3_signing.py), which the runtime jar
    # leaves out; run.sh fetches it beside the runtime.
    bundle = os.environ.get("ICEBERG_AWS_BUNDLE_JAR")
    if bundle and Path(bundle).is_file():
        jar = f"{jar},{bundle}"
    scratch = tmp_path_factory.mktemp("spark")
    conf = {
        "spark.master": "local[2]",
        "spark.app.name": "floe-conformance",
        "spark.jars": jar,
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.adaptive.enabled": "false",
        "spark.local.dir": str(scratch / "local"),
        "spark.sql.warehouse.dir": str(scratch / "spark-warehouse"),
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={scratch}",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.defaultCatalog": "floe",
        **_catalog_conf("floe", floe.uri, "lake"),
        **_catalog_conf("dev", floe.uri, "lake@dev"),
    }
    builder = SparkSession.builder
    for k, v in conf.items():
        builder = builder.config(k, v)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def ns(spark: Any, request: pytest.FixtureRequest) -> str:
    """A fresh, empty namespace on main for one test (dev does not have it)."""
    name = f"{re.sub(r'[^0-9A-Za-z]+', '_', request.node.name)[:40]}_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE floe.{name}")
    return name


def pytest_report_header(config: pytest.Config) -> list[str]:
    import pyspark

    return [f"pyspark {pyspark.__version__}, {os.path.basename(os.environ.get('ICEBERG_SPARK_JAR', '?'))}, floe {os.environ.get('FLOE_BIN', 'bin/floe')}"]
