"""Fixtures: one real `floe serve` per test session, and DuckDB connections attached to it.

The server is bin/floe (or $FLOE_BIN), started by ../floeproc.py on a free
loopback port with a fresh data directory and warehouse under pytest's
temporary directory, and stopped with SIGINT at the end of the session; it
must exit 0.

DuckDB's extensions come from the duckdb-ext-* packages in the virtualenv,
loaded by path: nothing is downloaded at run time (autoinstall and autoload
are off, so a missing extension fails loudly instead of reaching for
extensions.duckdb.org).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import duckdb
import duckdbconn
import floeproc
import pytest
from floeproc import ROOT  # noqa: F401 (the tests import it from here)
from pyiceberg.catalog import load_catalog
from pyiceberg.catalog.rest import RestCatalog

class FloeServer(floeproc.FloeServer):
    """One running `floe serve` (conformance/floeproc.py), with DuckDB and PyIceberg clients on it."""

    def duck(self, *attach: tuple[str, str] | tuple[str, str, bool]) -> duckdb.DuckDBPyConnection:
        """A fresh in-memory DuckDB with the Iceberg extension, each (warehouse, alias[, read_only]) attached
        (../duckdbconn.py)."""
        return duckdbconn.connect(self.uri, *attach)

    def catalog(self, warehouse: str = "lake") -> RestCatalog:
        """A fresh PyIceberg REST catalog client on this server."""
        cat = load_catalog("floe", **{"type": "rest", "uri": self.uri, "warehouse": warehouse})
        assert isinstance(cat, RestCatalog)
        return cat

    def run_cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run the floe CLI against this server, whatever its exit code."""
        return subprocess.run(
            [str(self.bin), *args, "--server", self.uri],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip


@contextlib.contextmanager
def run_floe(base: Path, warehouse: str | None = None, *extra: str) -> Iterator[FloeServer]:
    with floeproc.run_floe(base, warehouse, *extra, server=FloeServer) as server:
        yield server


@pytest.fixture(scope="session")
def floe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FloeServer]:
    """Start `floe serve` for the session; stop it with SIGINT and require exit 0."""
    with run_floe(tmp_path_factory.mktemp("floe"), None, "--dev") as server:
        yield server


@pytest.fixture
def duck(floe: FloeServer) -> Iterator[duckdb.DuckDBPyConnection]:
    """A DuckDB connection with floe's warehouse `lake` (branch main) attached as `lake`."""
    con = floe.duck()
    yield con
    con.close()


@pytest.fixture
def ns(duck: duckdb.DuckDBPyConnection, request: pytest.FixtureRequest) -> str:
    """A fresh namespace for one test, created by DuckDB's CREATE SCHEMA on main."""
    name = f"{request.node.name.replace('[', '_').rstrip(']')[:32]}_{uuid.uuid4().hex[:8]}"
    duck.execute(f"CREATE SCHEMA lake.{name}")
    return name


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    """The rows a query returns, as tuples."""
    return con.execute(sql).fetchall()


def pytest_report_header(config: pytest.Config) -> list[str]:
    import pyiceberg

    return [f"duckdb {duckdb.__version__} (extensions {duckdbconn.extension_dir()}), pyiceberg {pyiceberg.__version__}, floe {os.environ.get('FLOE_BIN', 'bin/floe')}"]
