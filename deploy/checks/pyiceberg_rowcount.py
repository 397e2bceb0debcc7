#!/usr/bin/env python3
"""An external data-quality check for floe's merge queue, written with PyIceberg.

floe posts every merge candidate that requires this check (see
merge/mergecheck/README.md, "External checks") to this server. The server

1. verifies the X-Floe-Signature-256 header: the HMAC-SHA256 of the body
   keyed by the secret both sides share (anything unsigned is refused),
2. opens floe's Iceberg REST catalog at the payload's warehouse,
   ``lake@<candidate>``: a read-only view of exactly the commit the queue
   is about to publish (never the branch, which may have moved),
3. reads each touched table there and checks that it has at least
   ``--min-rows`` rows and, with ``--unique COLUMN``, no duplicate values in
   that column (the duplicate check a double-published ingestion shard
   fails),
4. answers ``{"passed": bool, "reason": "..."}``.

Configure it in floe as an external check (name, URL, the same secret,
a timeout and retries) and name it in a merge request's required checks.

Run it with the PyIceberg that `make test` installs:

    .cache/venv-pyiceberg/bin/python deploy/checks/pyiceberg_rowcount.py \\
        --listen 127.0.0.1:8900 --secret-file /etc/floe/checks/rowcount.secret \\
        --unique id --min-rows 1

It prints ``listening on HOST:PORT`` once it serves (``--listen
127.0.0.1:0`` picks a free port). Only the standard library and PyIceberg
(with pyarrow) are needed.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pyiceberg.catalog import load_catalog

SIGNATURE_HEADER = "X-Floe-Signature-256"
MAX_BODY = 16 << 20


def sign(secret: bytes, body: bytes) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def check(payload: dict[str, Any], opts: argparse.Namespace) -> tuple[bool, str]:
    """The verdict on one candidate."""
    uri = opts.catalog_uri or payload.get("catalogUri")
    if not uri:
        return False, "no catalog URI: floe sent none and --catalog-uri is not set"
    props = {"type": "rest", "uri": uri, "warehouse": payload["warehouse"]}
    if opts.token:
        props["token"] = opts.token
    catalog = load_catalog("floe", **props)
    tables: dict[str, list[str]] = {}
    for part in payload.get("partitions", []):
        tables[part["table"]] = part["key"]
    notes, passed = [], True
    for name in sorted(tables):
        table = catalog.load_table(tuple(tables[name]))
        fields = (opts.unique,) if opts.unique else ("*",)
        rows = table.scan(selected_fields=fields).to_arrow()
        if rows.num_rows < opts.min_rows:
            passed = False
            notes.append(f"{name} has {rows.num_rows} rows at {payload['warehouse']}, fewer than {opts.min_rows}")
            continue
        if opts.unique:
            values = rows.column(opts.unique).to_pylist()
            dups = len(values) - len(set(values))
            if dups:
                passed = False
                notes.append(f"{name} has {dups} duplicate {opts.unique} value(s) at {payload['warehouse']}")
                continue
        notes.append(f"{name}: {rows.num_rows} rows" + (f", {opts.unique} unique" if opts.unique else ""))
    if not tables:
        notes.append("the candidate touches no partition")
    return passed, "; ".join(notes)


def handler(opts: argparse.Namespace, secret: bytes) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length") or 0)
            if length <= 0 or length > MAX_BODY:
                self.answer(400, {"error": "missing or oversized body"})
                return
            body = self.rfile.read(length)
            if not hmac.compare_digest(sign(secret, body), self.headers.get(SIGNATURE_HEADER, "")):
                self.answer(401, {"error": "bad signature"})
                return
            try:
                payload = json.loads(body)
                passed, reason = check(payload, opts)
            except Exception as exc:  # a check that cannot read the candidate fails it
                passed, reason = False, f"{type(exc).__name__}: {exc}"
            self.answer(200, {"passed": passed, "reason": reason})

        def answer(self, status: int, doc: dict[str, Any]) -> None:
            out = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, fmt: str, *args: Any) -> None:
            sys.stderr.write("pyiceberg_rowcount: " + (fmt % args) + "\n")

    return Handler


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--listen", default="127.0.0.1:8900", help="HOST:PORT (port 0: a free one)")
    p.add_argument("--secret-file", help="file holding the shared secret (else $FLOE_CHECK_SECRET)")
    p.add_argument("--catalog-uri", help="floe's URL, when the payload's catalogUri is not reachable from here")
    p.add_argument("--token", help="bearer token for floe (else none: dev mode)", default=os.environ.get("FLOE_TOKEN"))
    p.add_argument("--unique", help="a column that must hold no duplicates")
    p.add_argument("--min-rows", type=int, default=1, help="rows each touched table must have")
    opts = p.parse_args(argv)
    if opts.secret_file:
        with open(opts.secret_file, "rb") as f:
            secret = f.read().strip()
    else:
        secret = os.environ.get("FLOE_CHECK_SECRET", "").encode()
    if not secret:
        p.error("a secret is required (--secret-file or FLOE_CHECK_SECRET)")
    host, _, port = opts.listen.rpartition(":")
    server = ThreadingHTTPServer((host, int(port)), handler(opts, secret))
    print(f"listening on {server.server_address[0]}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
