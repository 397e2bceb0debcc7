"""The example external check deploy/checks/pyiceberg_rowcount.py, against a real floe.

The check server runs as its own process, as an operator runs it. The test
posts it the payload floe's merge queue posts (merge/mergecheck/README.md,
"External checks"), signed as floe signs it, for two candidates: a branch
head that appended new ids, and one that appended an id main already has.
The check reads each at `lake@<hash>` through PyIceberg; it passes the
first, fails the second, and refuses an unsigned or wrongly signed body.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from pyiceberg.catalog import Catalog

from conftest import ROOT, FloeServer
from helpers import arrow, create_orders, rows
from test_catalog_branches import create_ref, nessie

SECRET = b"example-secret"
CHECK = ROOT / "deploy" / "checks" / "pyiceberg_rowcount.py"


def sign(body: bytes) -> str:
    return "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()


def test_signature_matches_floe() -> None:
    # The vector mergecheck's TestSignatureVector holds floe's Sign to.
    body = b'{"candidate":"c0ffee"}'
    assert "sha256=" + hmac.new(b"s3cr3t", body, hashlib.sha256).hexdigest() == "sha256=574af82a36ba23b11442182e282a9e13f9d03811dae7f21cfbc3eafd51d7f21f"


@pytest.fixture
def check_url() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(CHECK), "--listen", "127.0.0.1:0", "--unique", "id"],
        env={"FLOE_CHECK_SECRET": SECRET.decode(), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on "), line
        yield "http://" + line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def post(url: str, body: bytes, signature: str) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json", "X-Floe-Signature-256": signature})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def payload(floe: FloeServer, commit: str, ident: str) -> bytes:
    ns, name = ident.split(".")
    return json.dumps(
        {
            "version": 1,
            "check": "rowcount",
            "deliveryId": "d1",
            "candidate": commit,
            "warehouse": f"lake@{commit}",
            "catalogUri": floe.uri,
            "partitions": [{"table": ident, "key": [ns, name], "specId": 0, "path": "category=books/ts_day=2024-05-01"}],
            "summary": {"version": 1, "candidate": commit, "tables": []},
        }
    ).encode()


def test_pyiceberg_rowcount_check(floe: FloeServer, catalog: Catalog, ns: str, check_url: str) -> None:
    ident = f"{ns}.orders"
    create_orders(catalog, ident).append(arrow(rows((1, "books", 10.0, 0), (2, "games", 20.0, 0))))

    clean, dup = f"{ns}-clean", f"{ns}-dup"
    for b in (clean, dup):
        create_ref(floe, b, "BRANCH", "main")
    floe.catalog(f"lake@{clean}").load_table(ident).append(arrow(rows((3, "books", 30.0, 0))))
    floe.catalog(f"lake@{dup}").load_table(ident).append(arrow(rows((2, "books", 30.0, 0))))
    # Each branch's head is its candidate, read at lake@<hash>.
    heads = {b: nessie(floe, "GET", f"/trees/{b}")["reference"]["hash"] for b in (clean, dup)}

    body = payload(floe, heads[clean], ident)
    status, answer = post(check_url, body, sign(body))
    assert status == 200 and answer["passed"] is True, answer
    assert "3 rows" in answer["reason"], answer

    body = payload(floe, heads[dup], ident)
    status, answer = post(check_url, body, sign(body))
    assert status == 200 and answer["passed"] is False, answer
    assert "1 duplicate id" in answer["reason"] and heads[dup] in answer["reason"], answer

    # Unsigned or signed with another secret: refused, never checked.
    status, _ = post(check_url, body, "")
    assert status == 401
    status, _ = post(check_url, body, "sha256=" + hmac.new(b"other", body, hashlib.sha256).hexdigest())
    assert status == 401
