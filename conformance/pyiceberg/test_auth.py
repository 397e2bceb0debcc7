"""Authentication and authorization as PyIceberg meets them.

A second `floe serve`, not in dev mode: one OAuth client (`etl`, group
ingest) for the client-credentials flow PyIceberg runs when configured with
`credential=client:secret`, one static token (alice, group publishers), and
floe's default policy. PyIceberg must get its token, write on an ingest/
branch, and raise its own exceptions for what the policy or the
authenticator refuses; a publisher then merges the branch into main through
the Nessie API and PyIceberg reads the result on main.
"""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import ForbiddenError, OAuthError, UnauthorizedError

from conftest import FloeServer, run_floe
from helpers import arrow, assert_rows, create_orders, rows

CLIENT, SECRET = "etl", "etl-secret-" + uuid.uuid4().hex
ALICE_TOKEN = "alice-" + uuid.uuid4().hex
ROWS = rows((1, "books", 10.0, 0), (2, "games", 20.0, 1))


def sha256(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FloeServer]:
    base = tmp_path_factory.mktemp("floe-auth")
    clients, tokens = base / "clients.json", base / "tokens.json"
    clients.write_text(json.dumps({"clients": [{"client_id": CLIENT, "secret_sha256": sha256(SECRET), "principal": "etl-bot", "groups": ["ingest"]}]}))
    tokens.write_text(json.dumps({"tokens": [{"sha256": sha256(ALICE_TOKEN), "principal": "alice", "groups": ["publishers"]}]}))
    with run_floe(base, None, "--auth-oauth-clients-file", str(clients), "--auth-token-file", str(tokens)) as server:
        yield server


def http(server: FloeServer, method: str, path: str, token: str | None, body: Any = None, form: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """One request; the status and the decoded answer, errors included."""
    headers = {}
    data = None
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    elif body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(server.uri + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def client_token(server: FloeServer) -> str:
    status, answer = http(server, "POST", "/v1/oauth/tokens", None, form={"grant_type": "client_credentials", "client_id": CLIENT, "client_secret": SECRET, "scope": "catalog"})
    assert status == 200, answer
    assert answer["token_type"].lower() == "bearer" and answer["expires_in"] > 0, answer
    return answer["access_token"]


def create_branch(server: FloeServer, token: str, name: str) -> None:
    status, main = http(server, "GET", "/api/v2/trees/main", token)
    assert status == 200, main
    status, answer = http(server, "POST", f"/api/v2/trees?name={urllib.parse.quote(name, safe='')}&type=BRANCH", token, main["reference"])
    assert status == 200, answer


def test_client_credentials_write_branch_merge(secured: FloeServer) -> None:
    etl = client_token(secured)
    branch = f"ingest/{uuid.uuid4().hex[:8]}"
    create_branch(secured, etl, branch)

    # PyIceberg fetches its own token with the client credentials, from the
    # endpoint named explicitly here (the other tests use its fallback,
    # {uri}/v1/oauth/tokens, which older configurations rely on).
    cat = secured.catalog(f"lake@{branch}", credential=f"{CLIENT}:{SECRET}", **{"oauth2-server-uri": f"{secured.uri}/v1/oauth/tokens"})
    cat.create_namespace("raw")
    tbl = create_orders(cat, "raw.orders")
    tbl.append(arrow(ROWS))
    assert_rows(cat.load_table("raw.orders").scan().to_arrow(), ROWS)

    # main is written only through merges by publishers: etl-bot may not
    # merge, alice may; then main has the table.
    status, head = http(secured, "GET", f"/api/v2/trees/{urllib.parse.quote(branch, safe='')}", etl)
    assert status == 200, head
    status, main = http(secured, "GET", "/api/v2/trees/main", etl)
    merge = {"fromRefName": branch, "fromHash": head["reference"]["hash"]}
    path = f"/api/v2/trees/main@{main['reference']['hash']}/history/merge"
    status, answer = http(secured, "POST", path, etl, merge)
    assert status == 403 and answer["errorCode"] == "FORBIDDEN", answer
    assert "publishers" in answer["message"], answer
    status, answer = http(secured, "POST", path, ALICE_TOKEN, merge)
    assert status == 200, answer

    on_main = secured.catalog("lake", token=ALICE_TOKEN)
    assert_rows(on_main.load_table("raw.orders").scan().to_arrow(), ROWS)


def test_policy_denial_is_forbidden(secured: FloeServer) -> None:
    cat = secured.catalog("lake", credential=f"{CLIENT}:{SECRET}")
    cat.list_namespaces()  # reads are allowed
    with pytest.raises(ForbiddenError, match="main is written only through merges"):
        cat.create_namespace(f"denied_{uuid.uuid4().hex[:8]}")


def test_no_credentials_is_unauthorized(secured: FloeServer) -> None:
    with pytest.raises(UnauthorizedError):
        load_catalog("floe", type="rest", uri=secured.uri, warehouse="lake")
    with pytest.raises(UnauthorizedError):
        secured.catalog("lake", token="not-a-token")


def test_wrong_secret_gets_no_token(secured: FloeServer) -> None:
    with pytest.raises(OAuthError):
        secured.catalog("lake", credential=f"{CLIENT}:wrong")
