"""One real `floe serve` for the Python conformance suites (pyiceberg, spark).

run_floe starts bin/floe (or $FLOE_BIN) on a free loopback port with a fresh
data directory and warehouse under a directory the suite gives, waits until
it is ready, and stops it with SIGINT at the end; it must exit 0. Each
suite's conftest.py keeps its own fixtures and clients (PyIceberg catalogs,
a Spark session) and imports this module; its pytest.ini puts conformance/
on the path (`pythonpath = ..`).
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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[1]
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


Server = TypeVar("Server", bound=FloeServer)


def floe_bin() -> Path:
    """bin/floe, or $FLOE_BIN (relative to the repository root)."""
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
def run_floe(base: Path, warehouse: str | None, *extra: str, server: type[Server] = FloeServer) -> Iterator[Server]:
    """Run `floe serve` over a fresh data directory under base; stop it with SIGINT and require exit 0.

    warehouse is the --warehouse flag; None is the directory base/warehouse.
    extra are more flags; server is the FloeServer (sub)class to answer with.
    """
    binary = floe_bin()
    data_dir, warehouse_dir, log_path = base / "data", base / "warehouse", base / "floe.log"
    cmd = [
        str(binary), "serve",
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
        running = server(proc, addr[0], binary, data_dir, warehouse_dir, log_path, lines)
        _wait_ready(running.uri, deadline)
    except BaseException:
        proc.kill()
        proc.wait()
        raise

    try:
        yield running
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"floe serve did not exit within {STOP_TIMEOUT}s of SIGINT; log {log_path}:\n{running.log_tail()}")
        reader.join(5)
    assert code == 0, f"floe serve exited {code} after SIGINT; log {log_path}:\n{running.log_tail()}"
