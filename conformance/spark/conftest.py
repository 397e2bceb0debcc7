"""Fixtures: one real `floe serve` and one Spark session per test session.

The server is bin/floe (or $FLOE_BIN), started in dev mode on a free loopback
port with a fresh data directory and a file:// warehouse under pytest's
temporary directory, and stopped with SIGINT at the end; it must exit 0.

Spark runs in local mode with the Iceberg runtime jar run.sh fetched
($ICEBERG_SPARK_JAR), bound to loopback with its UI off. Its catalogs:
`floe` on warehouse `lake` (catalog branch main) and `dev` on `lake@dev`.
Both have Iceberg's client-side table cache off, so each statement loads the
table from floe and sees what the other catalog (or the floe CLI) did.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


@dataclass
class FloeServer:
    """One running `floe serve`."""

    proc: subprocess.Popen
    addr: str
    bin: Path
    data_dir: Path
    warehouse_dir: Path
    log_path: Path
    lines: list[str] = field(default_factory=list)

    @property
    def uri(self) -> str:
        return f"http://{self.addr}"

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.lines[-n:])

    def nessie(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        """One Nessie API v2 call; the decoded answer."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"{self.uri}/api/v2{path}", data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    def cli(self, *args: str) -> str:
        """Run the floe CLI against this server; its standard output."""
        proc = subprocess.run(
            [str(self.bin), *args, "--server", self.uri],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert proc.returncode == 0, f"floe {' '.join(args)} exited {proc.returncode}: {proc.stderr}{proc.stdout}"
        return proc.stdout


def _floe_bin() -> Path:
    path = Path(os.environ.get("FLOE_BIN") or ROOT / "bin" / "floe")
    if not path.is_absolute():
        path = ROOT / path
    if not path.exists():
        # `make test` builds first; this is for running pytest by hand.
        subprocess.run(["make", "--no-print-directory", "build"], cwd=ROOT, check=True)
    if not os.access(path, os.X_OK):
        pytest.exit(f"floe binary {path} is missing or not executable; run `make build`", returncode=1)
    return path


def _wait_ready(uri: str, deadline: float) -> None:
    last: object = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{uri}/readyz", timeout=5) as resp:
                if resp.status == 200:
                    return
                last = resp.status
        except (urllib.error.URLError, OSError) as exc:
            last = exc
        time.sleep(0.05)
    raise RuntimeError(f"floe at {uri} not ready: last /readyz result {last!r}")


@contextlib.contextmanager
def run_floe(base: Path, *extra: str) -> Iterator[FloeServer]:
    """Run `floe serve` over a fresh data directory under base; stop it with SIGINT and require exit 0."""
    binary = _floe_bin()
    data_dir, warehouse_dir, log_path = base / "data", base / "warehouse", base / "floe.log"
    cmd = [
        str(binary), "serve",
        "--addr", "127.0.0.1:0",
        "--data-dir", str(data_dir),
        "--warehouse", warehouse_dir.as_uri(),
        "--log-format", "json",
        "--drain-delay", "0s",
        *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    addr_found = threading.Event()
    addr: list[str] = []

    def read_stderr() -> None:
        assert proc.stderr is not None
        with log_path.open("w") as log:
            for line in proc.stderr:
                log.write(line)
                log.flush()
                line = line.rstrip("\n")
                lines.append(line)
                if not addr_found.is_set():
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(rec, dict) and rec.get("msg") == "listening":
                        addr.append(rec["addr"])
                        addr_found.set()
        addr_found.set()  # stderr closed: the process is gone

    reader = threading.Thread(target=read_stderr, name="floe-stderr", daemon=True)
    reader.start()
    deadline = time.monotonic() + START_TIMEOUT
    try:
        if not addr_found.wait(START_TIMEOUT) or not addr:
            raise RuntimeError("floe serve did not log a listening address; stderr:\n" + "\n".join(lines))
        server = FloeServer(proc, addr[0], binary, data_dir, warehouse_dir, log_path, lines)
        _wait_ready(server.uri, deadline)
    except BaseException:
        proc.kill()
        proc.wait()
        raise

    try:
        yield server
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"floe serve did not exit within {STOP_TIMEOUT}s of SIGINT; log {log_path}:\n{server.log_tail()}")
        reader.join(5)
    assert code == 0, f"floe serve exited {code} after SIGINT; log {log_path}:\n{server.log_tail()}"


@pytest.fixture(scope="session")
def floe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FloeServer]:
    """Start `floe serve --dev` for the session; stop it with SIGINT and require exit 0."""
    with run_floe(tmp_path_factory.mktemp("floe"), "--dev") as server:
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
