"""Fixtures: one real `floe serve` and one single-node Trino per test session.

floe is bin/floe (or $FLOE_BIN) in dev mode on a free loopback port, with a
fresh data directory and a file:// warehouse under pytest's temporary
directory; it is stopped with SIGINT at the end and must exit 0.

Trino is the server run.sh unpacked ($TRINO_HOME), started as one JVM
($TRINO_JAVA) bound to loopback, coordinator and worker at once, with its
heap bounded (2 GB) for a shared 2-core machine, and stopped by its PID
(SIGTERM, then SIGKILL if it lingers). Its catalogs are created with SQL
(`catalog.management=dynamic`, kept in memory), so a test can add one for a
branch or tag it made: `lake` is warehouse `lake` (floe's main). Every
catalog is Trino's Iceberg connector with `iceberg.catalog.type=rest`, local
files through Trino's Hadoop file system (its native local one knows only
`local://`), and the maintenance procedures' minimum retention at 0s so the
tests can ask for what a user would, at once.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trino
from floeproc import FloeServer, run_floe

# Trino 476 takes 35-60 s to start on a quiet 2-core machine; a busy one
# (other suites, builds) can take much longer.
TRINO_START_TIMEOUT = 420.0
TRINO_STOP_TIMEOUT = 60.0
TRINO_HEAP = "2G"
USER = "floe-conformance"


@dataclass
class TrinoServer:
    """One running Trino server."""

    proc: subprocess.Popen
    port: int
    home: Path
    log_path: Path
    floe: FloeServer

    def run(self, statement: str, catalog: str | None = None, schema: str | None = None) -> list[list[Any]]:
        """Run one statement; its rows (DDL and DML answer a row count or nothing)."""
        conn = trino.dbapi.connect(
            host="127.0.0.1", port=self.port, user=USER, http_scheme="http",
            catalog=catalog, schema=schema, request_timeout=300,
        )  # fmt: skip
        try:
            cur = conn.cursor()
            cur.execute(statement)
            return cur.fetchall()
        finally:
            conn.close()

    def catalog(self, name: str, warehouse: str, **extra: str) -> str:
        """Create catalog name on floe warehouse (e.g. "lake@dev"); extra are more connector properties."""
        props = {
            "iceberg.catalog.type": "rest",
            "iceberg.rest-catalog.uri": self.floe.uri,
            "iceberg.rest-catalog.warehouse": warehouse,
            "fs.hadoop.enabled": "true",
            "iceberg.expire-snapshots.min-retention": "0s",
            "iceberg.remove-orphan-files.min-retention": "0s",
            **extra,
        }
        with_clause = ", ".join(f'"{k}" = {quote(v)}' for k, v in props.items())
        self.run(f"CREATE CATALOG {name} USING iceberg WITH ({with_clause})")
        return name

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError as exc:
            return f"(no log: {exc})"


def quote(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_started(server: TrinoServer, deadline: float) -> None:
    last: object = None
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"Trino exited with {server.proc.returncode} while starting; log:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/v1/info", timeout=5) as resp:
                body = resp.read().decode()
                if re.search(r'"starting"\s*:\s*false', body):
                    return
                last = body
        except (urllib.error.URLError, OSError) as exc:
            last = exc
        time.sleep(0.5)
    raise RuntimeError(f"Trino not started within {TRINO_START_TIMEOUT}s (last /v1/info: {last!r}); log:\n{server.log_tail()}")


@pytest.fixture(scope="session")
def floe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FloeServer]:
    """Start `floe serve --dev` for the session; stop it with SIGINT and require exit 0."""
    base = tmp_path_factory.mktemp("floe")
    with run_floe(base, (base / "warehouse").as_uri(), "--dev") as server:
        yield server


@pytest.fixture(scope="session")
def trino_server(floe: FloeServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrinoServer]:
    """One Trino for the session, with catalog `lake` on floe's main; stopped by PID."""
    home = os.environ.get("TRINO_HOME")
    java = os.environ.get("TRINO_JAVA")
    if not home or not Path(home, "lib").is_dir() or not java:
        pytest.exit("TRINO_HOME and TRINO_JAVA must name Trino's server and a Java 24+; run through run.sh", returncode=1)
    base = tmp_path_factory.mktemp("trino")
    etc, data = base / "etc", base / "data"
    etc.mkdir()
    data.mkdir()
    port = _free_port()
    (etc / "config.properties").write_text(
        "\n".join([
            "coordinator=true",
            "node-scheduler.include-coordinator=true",
            f"http-server.http.port={port}",
            f"discovery.uri=http://127.0.0.1:{port}",
            # Catalogs come and go with CREATE CATALOG, kept in memory only.
            "catalog.management=dynamic",
            "catalog.store=memory",
            "query.max-memory=1GB",
            "query.max-memory-per-node=512MB",
            "task.concurrency=2",
            "",
        ])
    )  # fmt: skip
    log_path = base / "server.log"
    cmd = [
        java,
        f"-Xmx{TRINO_HEAP}", "-Xms256m", "-XX:+UseG1GC", "-XX:+ExitOnOutOfMemoryError",
        "-XX:ReservedCodeCacheSize=256M", "-XX:-OmitStackTraceInFastThrow",
        # Short queries on a shared machine: the C1 compiler alone starts
        # Trino faster and spends less CPU than C2's optimizations repay.
        "-XX:TieredStopAtLevel=1",
        "-Djdk.attach.allowAttachSelf=true", "-XX:+EnableDynamicAgentLoading",
        "--enable-native-access=ALL-UNNAMED", "-Dfile.encoding=UTF-8", "-Duser.timezone=UTC",
        "-Dnode.environment=floe_conformance", f"-Dnode.id=floe-conformance-{uuid.uuid4().hex[:8]}",
        f"-Dnode.data-dir={data}", "-Dnode.bind-ip=127.0.0.1", "-Dnode.internal-address=127.0.0.1",
        f"-Dconfig={etc / 'config.properties'}", f"-Dlog.output-file={log_path}", "-Dlog.enable-console=false",
        f"-Dplugin.dir={Path(home) / 'plugin'}",
        "-cp", f"{Path(home) / 'lib'}/*", "io.trino.server.TrinoServer",
    ]  # fmt: skip
    console = (base / "console.log").open("w")
    proc = subprocess.Popen(cmd, cwd=base, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT)
    server = TrinoServer(proc, port, base, log_path, floe)
    try:
        _wait_started(server, time.monotonic() + TRINO_START_TIMEOUT)
        server.catalog("lake", "lake")
        yield server
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(TRINO_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        console.close()


@pytest.fixture
def schema(trino_server: TrinoServer, request: pytest.FixtureRequest) -> str:
    """A fresh schema in catalog `lake` (floe's main) for one test, created as a user would: no location."""
    name = f"{re.sub(r'[^0-9a-z]+', '_', request.node.name.lower())[:40]}_{uuid.uuid4().hex[:8]}"
    trino_server.run(f"CREATE SCHEMA lake.{name}")
    return name


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [f"trino client {trino.__version__}, server {os.environ.get('TRINO_HOME', '?')}, floe {os.environ.get('FLOE_BIN', 'bin/floe')}"]
