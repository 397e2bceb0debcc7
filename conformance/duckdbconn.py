"""DuckDB connections to a floe server, shared by the suites that read with DuckDB.

The DuckDB suite (duckdb/) and the Spark suite's reads of Spark-written
tables (spark/test_duckdb_reads.py) open DuckDB the same way: an in-memory
database that loads the Iceberg extension and its dependencies by path
from the duckdb-ext-* packages in the suite's virtualenv, with autoinstall
and autoload off, so nothing is fetched from extensions.duckdb.org at run
time and a missing extension fails loudly.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import duckdb_ext

EXTENSIONS = ("httpfs", "avro", "iceberg")


def extension_dir() -> Path:
    """Where the duckdb-ext-* packages put this platform's extension builds.

    Raises RuntimeError naming what is missing: a suite that cannot load
    the extension must fail, not skip."""
    platform = duckdb.execute("PRAGMA platform").fetchone()[0]
    for base in duckdb_ext.__path__:
        d = Path(base) / "extensions" / f"v{duckdb.__version__}" / platform
        if all((d / f"{e}.duckdb_extension").is_file() for e in EXTENSIONS):
            return d
    raise RuntimeError(f"no DuckDB {duckdb.__version__} extensions {EXTENSIONS} for {platform} under {list(duckdb_ext.__path__)}")


def connect(uri: str, *attach: tuple[str, str] | tuple[str, str, bool]) -> duckdb.DuckDBPyConnection:
    """A fresh in-memory DuckDB with the Iceberg extension, each (warehouse, alias[, read_only]) attached.

    The ATTACH is what a user types: the warehouse (`lake`, `lake@branch`)
    and floe's URL, no credentials (the suites run floe with --dev).
    """
    con = duckdb.connect(
        config={
            "allow_unsigned_extensions": "true",
            "autoinstall_known_extensions": "false",
            "autoload_known_extensions": "false",
        }
    )
    ext = extension_dir()
    for e in EXTENSIONS:
        con.execute(f"LOAD '{ext / e}.duckdb_extension'")
    for a in attach or (("lake", "lake"),):
        warehouse, alias, read_only = (*a, False) if len(a) == 2 else a
        opts = f"TYPE iceberg, ENDPOINT '{uri}', AUTHORIZATION_TYPE 'none'" + (", READ_ONLY" if read_only else "")
        con.execute(f"ATTACH '{warehouse}' AS {alias} ({opts})")
    return con
