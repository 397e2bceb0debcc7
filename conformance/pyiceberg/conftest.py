"""Fixtures: one real `floe serve` per test session, and PyIceberg catalogs on it.

The server is bin/floe (or $FLOE_BIN), started on a free loopback port with a
fresh data directory and warehouse under pytest's temporary directory, and
stopped with SIGINT at the end of the session; it must exit 0.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import floeproc
import pytest
from floeproc import ROOT  # noqa: F401 (the tests import it from here)
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.catalog.rest import RestCatalog


class FloeServer(floeproc.FloeServer):
    """One running `floe serve` (conformance/floeproc.py), with PyIceberg catalogs on it."""

    def catalog(self, warehouse: str = "lake", **props: str) -> RestCatalog:
        """A fresh PyIceberg REST catalog client on this server."""
        cat = load_catalog("floe", **{"type": "rest", "uri": self.uri, "warehouse": warehouse, **props})
        assert isinstance(cat, RestCatalog)
        return cat


@contextlib.contextmanager
def run_floe(base: Path, warehouse: str | None = None, *extra: str) -> Iterator[FloeServer]:
    """Run `floe serve` over a fresh data directory under base; stop it with SIGINT and require exit 0.

    warehouse defaults to the directory base/warehouse; extra are more flags.
    """
    with floeproc.run_floe(base, warehouse, *extra, server=FloeServer) as server:
        yield server


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
