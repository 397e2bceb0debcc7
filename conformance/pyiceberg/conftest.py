"""Fixtures: one real `floe serve` per test session, and PyIceberg catalogs on it.

The server is bin/floe (or $FLOE_BIN), started on a free loopback port with a
fresh data directory and warehouse under pytest's temporary directory, and
stopped with SIGINT at the end of the session; it must exit 0.
"""

from __future__ import annotations

import contextlib
import json
import os
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

import pytest
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.catalog.rest import RestCatalog

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


@dataclass
class FloeServer:
    """One running `floe serve`."""

    proc: subprocess.Popen
    addr: str
    data_dir: Path
    warehouse_dir: Path
    log_path: Path
    lines: list[str] = field(default_factory=list)

    @property
    def uri(self) -> str:
        return f"http://{self.addr}"

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.lines[-n:])

    def catalog(self, warehouse: str = "lake", **props: str) -> RestCatalog:
        """A fresh PyIceberg REST catalog client on this server."""
        cat = load_catalog("floe", **{"type": "rest", "uri": self.uri, "warehouse": warehouse, **props})
        assert isinstance(cat, RestCatalog)
        return cat


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
def run_floe(base: Path, warehouse: str | None = None, *extra: str) -> Iterator[FloeServer]:
    """Run `floe serve` over a fresh data directory under base; stop it with SIGINT and require exit 0.

    warehouse defaults to the directory base/warehouse; extra are more flags.
    """
    data_dir, warehouse_dir, log_path = base / "data", base / "warehouse", base / "floe.log"
    cmd = [
        str(_floe_bin()),
        "serve",
        "--addr", "127.0.0.1:0",
        "--data-dir", str(data_dir),
        "--warehouse", warehouse or str(warehouse_dir),
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
        server = FloeServer(proc, addr[0], data_dir, warehouse_dir, log_path, lines)
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
    """Start `floe serve` for the session; stop it with SIGINT and require exit 0."""
    with run_floe(tmp_path_factory.mktemp("floe"), None, "--dev") as server:
        yield server


@pytest.fixture(scope="session")
def catalog(floe: FloeServer) -> Catalog:
    """The catalog exactly as a user configures it: warehouse `lake` (branch main)."""
    return load_catalog("floe", **{"type": "rest", "uri": floe.uri, "warehouse": "lake"})


@pytest.fixture
def ns(catalog: Catalog, request: pytest.FixtureRequest) -> str:
    """A fresh, empty namespace for one test."""
    name = f"{request.node.name.replace('[', '_').rstrip(']')[:40]}_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(name)
    return name


def pytest_report_header(config: pytest.Config) -> list[str]:
    import pyarrow
    import pyiceberg

    return [f"pyiceberg {pyiceberg.__version__}, pyarrow {pyarrow.__version__}, floe {os.environ.get('FLOE_BIN', 'bin/floe')}"]
