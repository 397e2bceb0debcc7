"""Zero-retry row-level commits through Spark: a MERGE INTO on day=2 whose
base went stale because appends to day=1 landed meanwhile succeeds at its
first attempt, rebased by floe onto the new head (rest/icebergrest/
rebaserows.go).

Iceberg Java refreshes the table right before it commits, so an ordinary
concurrent writer makes a commit stale only within a short window. The test
makes the window certain: the MERGE runs through a Spark catalog `race`
whose REST traffic passes a small proxy; when the MERGE's commit arrives,
the proxy first appends to day=1 through the `floe` catalog (another Spark
job on the same session), then forwards the commit, now on a stale main.
The proxy sees every commit request, so "first attempt" is counted, not
assumed: exactly one commit from the MERGE, answered 200, and floe's
metrics count it rebased, with no conflict.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from helpers import rows

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection", "content-length"}


class CommitRaceProxy:
    """Forwards REST traffic to floe; runs before_commit once, ahead of the
    first table commit that adds a snapshot of one of ops, and records every
    commit that adds a snapshot: (operation, status)."""

    def __init__(self, target: str, ops: set[str], before_commit: Callable[[], None]) -> None:
        self.target = target.removeprefix("http://")
        self.ops = ops
        self.before_commit = before_commit
        self.commits: list[tuple[str, int]] = []
        self.fired = False
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                op = proxy._commit_op(self.command, self.path, body)
                if op in proxy.ops:
                    with proxy.lock:
                        fire = not proxy.fired
                        proxy.fired = True
                    if fire:
                        proxy.before_commit()
                conn = http.client.HTTPConnection(proxy.target, timeout=120)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                if op is not None:
                    with proxy.lock:
                        proxy.commits.append((op, resp.status))
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in HOP_BY_HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_POST = do_DELETE = do_HEAD = do_PUT = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @staticmethod
    def _commit_op(method: str, path: str, body: bytes | None) -> str | None:
        """The operation of the snapshot a table commit adds; None for anything else."""
        if method != "POST" or body is None or not re.search(r"/namespaces/[^/]+/tables/[^/?]+$", path.split("?")[0]):
            return None
        for u in json.loads(body).get("updates", []):
            if u.get("action") == "add-snapshot":
                return u["snapshot"].get("summary", {}).get("operation")
        return None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> CommitRaceProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def commit_counters(uri: str) -> dict[tuple[str, str], float]:
    """floe_iceberg_commits_total from floe's metrics: (operation, outcome) -> count."""
    with urllib.request.urlopen(f"{uri}/metrics", timeout=30) as resp:
        text = resp.read().decode()
    out = {}
    for m in re.finditer(r'^floe_iceberg_commits_total\{operation="([^"]+)",outcome="([^"]+)"\} (\S+)$', text, re.M):
        out[(m.group(1), m.group(2))] = float(m.group(3))
    return out


@pytest.fixture
def race_catalog(spark: Any, floe: Any, request: pytest.FixtureRequest) -> Iterator[Callable[..., CommitRaceProxy]]:
    """Registers Spark catalog `race_<n>` on warehouse lake through a CommitRaceProxy; yields a factory."""
    proxies: list[CommitRaceProxy] = []

    def make(name: str, ops: set[str], before_commit: Callable[[], None]) -> CommitRaceProxy:
        p = CommitRaceProxy(floe.uri, ops, before_commit).__enter__()
        proxies.append(p)
        prefix = f"spark.sql.catalog.{name}"
        for k, v in {
            prefix: "org.apache.iceberg.spark.SparkCatalog",
            f"{prefix}.type": "rest",
            f"{prefix}.uri": p.uri,
            f"{prefix}.warehouse": "lake",
            f"{prefix}.cache-enabled": "false",
        }.items():
            spark.conf.set(k, v)
        return p

    yield make
    for p in proxies:
        p.__exit__()


@pytest.mark.parametrize(
    ("version", "mode"),
    [pytest.param(2, "copy-on-write", id="v2-cow"), pytest.param(3, "merge-on-read", id="v3-mor")],
)
def test_merge_into_races_appends_first_attempt(spark: Any, floe: Any, ns: str, race_catalog: Any, version: int, mode: str) -> None:
    t = f"floe.{ns}.events"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT NOT NULL, day INT NOT NULL, v STRING) USING iceberg PARTITIONED BY (day) "
        f"TBLPROPERTIES ('format-version'='{version}', 'write.merge.mode'='{mode}', "
        f"'write.update.mode'='{mode}', 'write.delete.mode'='{mode}')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c'), (4, 2, 'd'), (5, 2, 'e')")

    appended: list[int] = []

    def append_day1() -> None:
        # Two appends to day=1 land after the MERGE read the table and
        # before its commit reaches floe.
        for i in (100, 101):
            spark.sql(f"INSERT INTO {t} VALUES ({i}, 1, 'new')")
            appended.append(i)

    race = f"race_{version}"
    proxy = race_catalog(race, {"overwrite", "delete"}, append_day1)
    before = commit_counters(floe.uri)

    spark.createDataFrame(
        [(3, 2, "C"), (4, 2, "delete"), (6, 2, "f")], "id BIGINT, day INT, v STRING"
    ).createOrReplaceTempView(f"changes_{version}")
    spark.sql(
        f"""MERGE INTO {race}.{ns}.events t USING changes_{version} s ON t.id = s.id AND t.day = 2 AND s.day = 2
        WHEN MATCHED AND s.v = 'delete' THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.v = s.v
        WHEN NOT MATCHED THEN INSERT *"""
    )

    assert appended == [100, 101], "the appends did not run inside the MERGE's commit window"
    assert len(proxy.commits) == 1, f"the MERGE committed {len(proxy.commits)} times (statuses {proxy.commits}); want its first attempt only"
    op, status = proxy.commits[0]
    assert status == 200, f"the MERGE's commit was answered {status}"

    after = commit_counters(floe.uri)
    rebased = after.get((op, "rebased"), 0) - before.get((op, "rebased"), 0)
    assert rebased == 1, f"{op} rebased counter moved by {rebased}; before {before}, after {after}"
    conflicts = {k: v for k, v in after.items() if k[1] == "conflict" and v != before.get(k, 0)}
    assert not conflicts, f"conflicts counted: {conflicts}"

    assert rows(spark, f"SELECT id, day, v FROM {t}") == [
        (1, 1, "a"), (2, 1, "b"), (3, 2, "C"), (5, 2, "e"), (6, 2, "f"), (100, 1, "new"), (101, 1, "new"),
    ]
    # The MERGE's snapshot sits on top of the second append.
    snaps = spark.sql(f"SELECT snapshot_id, parent_id, operation, summary FROM {t}.snapshots ORDER BY committed_at").collect()
    merge, last_append = snaps[-1], snaps[-2]
    assert last_append.operation == "append" and merge.parent_id == last_append.snapshot_id, snaps
    assert merge.summary.get("floe.merge.source-ref") == "main", merge.summary


def test_merge_into_racing_append_to_its_partition_conflicts(spark: Any, floe: Any, ns: str, race_catalog: Any) -> None:
    """The same race with the append to day=2, the partition the MERGE
    rewrites, under serializable isolation (Iceberg's default): a real
    conflict. floe answers the stale commit 409 (counted as a conflict,
    nothing rebased), and Spark's own retry then finds the new file and
    fails the MERGE; the table keeps the append and not the MERGE."""
    t = f"floe.{ns}.events"
    spark.sql(f"CREATE TABLE {t} (id BIGINT NOT NULL, day INT NOT NULL, v STRING) USING iceberg PARTITIONED BY (day)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 1, 'a'), (3, 2, 'c')")

    def append_day2() -> None:
        spark.sql(f"INSERT INTO {t} VALUES (200, 2, 'new')")

    proxy = race_catalog("race_conflict", {"overwrite", "delete"}, append_day2)
    before = commit_counters(floe.uri)
    spark.createDataFrame([(3, 2, "C")], "id BIGINT, day INT, v STRING").createOrReplaceTempView("changes_conflict")
    with pytest.raises(Exception, match="(?i)conflicting"):
        spark.sql(
            f"""MERGE INTO race_conflict.{ns}.events t USING changes_conflict s ON t.id = s.id AND t.day = 2
            WHEN MATCHED THEN UPDATE SET t.v = s.v"""
        )
    assert proxy.commits[:1] == [("overwrite", 409)], proxy.commits
    after = commit_counters(floe.uri)
    assert after.get(("overwrite", "conflict"), 0) - before.get(("overwrite", "conflict"), 0) == 1, (before, after)
    assert after.get(("overwrite", "rebased"), 0) == before.get(("overwrite", "rebased"), 0), (before, after)
    assert rows(spark, f"SELECT id, day, v FROM {t}") == [(1, 1, "a"), (3, 2, "c"), (200, 2, "new")]
