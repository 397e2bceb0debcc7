"""Trino on an s3:// warehouse through floe's vended credentials.

A second floe (dev mode, so every principal may write) serves warehouse
`lake` at s3://<bucket>/wh on MinIO (run.sh starts it: ../s3/minio.sh),
vending credentials on request. Trino's catalogs name no S3 keys: with
`iceberg.rest-catalog.vended-credentials-enabled=true` its native S3 file
system uses the keys floe vends per table, which can read and write that
table's files and never delete one (MinIO enforces the session policy).

The file:// suite shows remove_orphan_files on main deleting the files
another branch reads (test_maintenance.py); here the same procedure
leaves every file in place, and Trino reports the refused deletions.
"""

from __future__ import annotations

import os
import re
import subprocess
import urllib.parse
import uuid
from collections.abc import Iterator

import pytest
from trino.exceptions import TrinoQueryError

from floeproc import FloeServer, run_floe


class S3:
    """MinIO as run.sh started it, reached with its root user's keys through curl's SigV4."""

    def __init__(self) -> None:
        try:
            self.endpoint = os.environ["FLOE_TEST_MINIO_ENDPOINT"]
            self.key = os.environ["FLOE_TEST_MINIO_ACCESS_KEY_ID"]
            self.secret = os.environ["FLOE_TEST_MINIO_SECRET_ACCESS_KEY"]
        except KeyError as missing:
            pytest.fail(f"{missing} is not set: run through run.sh, which starts MinIO (../s3/minio.sh)")

    def request(self, method: str, path: str) -> str:
        out = subprocess.run(
            ["curl", "-sS", "--fail-with-body", "-X", method, "--aws-sigv4", "aws:amz:us-east-1:s3",
             "-u", f"{self.key}:{self.secret}", f"{self.endpoint}/{path}"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert out.returncode == 0, f"{method} {path}: {out.stdout}{out.stderr}"
        return out.stdout

    def keys(self, location: str) -> set[str]:
        """Every object key below an s3:// location (all pages)."""
        parsed = urllib.parse.urlparse(location)
        prefix = parsed.path.lstrip("/").rstrip("/") + "/"
        keys: set[str] = set()
        token = ""
        while True:
            query = f"list-type=2&prefix={urllib.parse.quote(prefix, safe='')}"
            if token:
                query += f"&continuation-token={urllib.parse.quote(token, safe='')}"
            body = self.request("GET", f"{parsed.netloc}?{query}")
            keys |= set(re.findall(r"<Key>([^<]+)</Key>", body))
            m = re.search(r"<NextContinuationToken>([^<]+)</NextContinuationToken>", body)
            if not m:
                return keys
            token = m.group(1)


@pytest.fixture(scope="session")
def s3() -> S3:
    return S3()


@pytest.fixture(scope="session")
def s3floe(s3: S3, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FloeServer]:
    """floe in dev mode on s3://<bucket>/wh, vending credentials through MinIO's STS."""
    bucket = f"floe-trino-{uuid.uuid4().hex[:10]}"
    s3.request("PUT", bucket)
    base = tmp_path_factory.mktemp("floe-s3")
    with run_floe(
        base, f"s3://{bucket}/wh", "--dev",
        "--s3-endpoint", s3.endpoint, "--s3-path-style", "--s3-region", "us-east-1",
        "--s3-access-key-id", s3.key, "--s3-secret-access-key", s3.secret,
        "--s3-vended-credentials", "on-request",
        "--s3-sts-role-arn", "arn:aws:iam::000000000000:role/floe-vend", "--s3-sts-endpoint", s3.endpoint,
    ) as server:  # fmt: skip
        yield server


def s3_catalog(trino_server, s3: S3, s3floe: FloeServer, name: str, warehouse: str) -> str:
    """A Trino catalog on s3floe's warehouse with vended credentials and no keys of its own."""
    return trino_server.catalog(
        name, warehouse,
        **{
            "iceberg.rest-catalog.uri": s3floe.uri,
            "iceberg.rest-catalog.vended-credentials-enabled": "true",
            "fs.hadoop.enabled": "false",
            "fs.native-s3.enabled": "true",
            "s3.endpoint": s3.endpoint,
            "s3.region": "us-east-1",
            "s3.path-style-access": "true",
        },
    )  # fmt: skip


def keys_of(trino_server, files_table: str) -> set[str]:
    """The object keys of the data files a $files table lists."""
    return {urllib.parse.urlparse(r[0]).path.lstrip("/") for r in trino_server.run(f"SELECT file_path FROM {files_table}")}


def causes(info: dict) -> str:
    """A Trino failure's exception chain, suppressed ones included, as one line."""
    parts: list[str] = []

    def walk(i: dict | None) -> None:
        if not i:
            return
        parts.append(f"{i.get('type')}: {i.get('message')}")
        for s in i.get("suppressed") or []:
            walk(s)
        walk(i.get("cause"))

    walk(info)
    return " <- ".join(parts)


def test_two_branches_and_remove_orphan_files(trino_server, s3, s3floe) -> None:
    main = s3_catalog(trino_server, s3, s3floe, "s3main", "lake")
    schema = f"vended_{uuid.uuid4().hex[:8]}"
    trino_server.run(f"CREATE SCHEMA {main}.{schema}")
    t = f"{main}.{schema}.events"
    trino_server.run(f"CREATE TABLE {t} (id bigint, v varchar)")
    trino_server.run(f"INSERT INTO {t} VALUES (1, 'a')")
    first = trino_server.run(f'SELECT snapshot_id FROM {main}.{schema}."events$snapshots" ORDER BY committed_at')[-1][0]
    trino_server.run(f"INSERT INTO {t} VALUES (2, 'b')")

    s3floe.cli("branch", "create", "dev")
    dev = s3_catalog(trino_server, s3, s3floe, "s3dev", "lake@dev")
    d = f"{dev}.{schema}.events"
    trino_server.run(f"INSERT INTO {d} VALUES (3, 'dev')")
    trino_server.run(f"UPDATE {d} SET v = 'b2' WHERE id = 2")
    trino_server.run(f"INSERT INTO {t} VALUES (4, 'main')")

    assert trino_server.run(f"SELECT id, v FROM {t} ORDER BY id") == [[1, "a"], [2, "b"], [4, "main"]]
    assert trino_server.run(f"SELECT id, v FROM {d} ORDER BY id") == [[1, "a"], [2, "b2"], [3, "dev"]]
    # Time travel on both branches, to the snapshot they share.
    assert trino_server.run(f"SELECT id FROM {t} FOR VERSION AS OF {first}") == [[1]]
    assert trino_server.run(f"SELECT id FROM {d} FOR VERSION AS OF {first}") == [[1]]

    location = trino_server.run(f'SELECT value FROM {main}.{schema}."events$properties" WHERE key = \'location\'')
    location = location[0][0] if location else None
    if not location:
        # Trino 476 does not list the location among the properties; its
        # files' paths name it.
        path = trino_server.run(f'SELECT file_path FROM {main}.{schema}."events$files" LIMIT 1')[0][0]
        location = path[: path.index("/data/")]
    before = s3.keys(location)
    dev_only = keys_of(trino_server, f'{dev}.{schema}."events$files"') - keys_of(trino_server, f'{main}.{schema}."events$files"')
    assert dev_only, "dev should hold data files main does not"
    assert dev_only <= before

    # To main's table every file only dev reaches is an orphan. On file://
    # Trino deletes them (test_maintenance.py); here its deletions are
    # refused by S3, whose answer Trino reports.
    with pytest.raises(TrinoQueryError) as refused:
        trino_server.run(f"ALTER TABLE {t} EXECUTE remove_orphan_files(retention_threshold => '0s')")
    chain = causes(refused.value.failure_info)
    print(f"remove_orphan_files on main: {chain}")
    assert re.search(r"Access ?Denied", chain), chain

    after = s3.keys(location)
    assert after == before, f"objects gone: {sorted(before - after)}; new: {sorted(after - before)}"
    assert trino_server.run(f"SELECT id, v FROM {d} ORDER BY id") == [[1, "a"], [2, "b2"], [3, "dev"]]
    assert trino_server.run(f"SELECT id, v FROM {t} ORDER BY id") == [[1, "a"], [2, "b"], [4, "main"]]
    assert trino_server.run(f"SELECT id FROM {d} FOR VERSION AS OF {first}") == [[1]]

    # DROP TABLE on main removes it from main's catalog only: Trino's
    # purge of its files is refused too, and dev still reads them.
    try:
        trino_server.run(f"DROP TABLE {t}")
    except TrinoQueryError as err:
        print(f"DROP TABLE on main: {causes(err.failure_info)}")
    assert s3.keys(location) >= before
    assert trino_server.run(f"SELECT count(*) FROM {d}") == [[3]]
