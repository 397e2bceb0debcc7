"""The client of replicas.yaml: PyIceberg through the load balancer.

It creates the branch ingest/demo from main (Nessie API v2), writes a
table on it through the Iceberg REST API (warehouse lake@ingest/demo),
reads it back, and merges the branch into main, each request going to
whichever replica HAProxy picks.
"""

import json
import os
import urllib.error
import urllib.parse
import urllib.request

import pyarrow as pa
from pyiceberg.catalog import load_catalog

URI = os.environ["FLOE_URI"]
TOKEN = os.environ["FLOE_TOKEN"]
BRANCH = "ingest/demo"


def nessie(method, path, body=None):
    req = urllib.request.Request(
        URI + "/api/v2" + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)


def ref(name):
    return nessie("GET", "/trees/" + urllib.parse.quote(name, safe=""))["reference"]


main = ref("main")
try:
    ref(BRANCH)
except urllib.error.HTTPError:
    nessie("POST", "/trees?" + urllib.parse.urlencode({"name": BRANCH, "type": "BRANCH"}), main)

cat = load_catalog("floe", type="rest", uri=URI, token=TOKEN, warehouse="lake@" + BRANCH)
cat.create_namespace_if_not_exists("demo")
rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", "b", "c"])})
table = cat.create_table_if_not_exists("demo.events", schema=rows.schema)
table.append(rows)
print("rows on", BRANCH, "=", table.scan().to_arrow().num_rows)

head = ref("main")
nessie("POST", "/trees/" + urllib.parse.quote("main@" + head["hash"], safe="") + "/history/merge",
       {"fromRefName": BRANCH, "fromHash": ref(BRANCH)["hash"], "message": "publish demo.events"})
on_main = load_catalog("floe", type="rest", uri=URI, token=TOKEN, warehouse="lake").load_table("demo.events")
print("rows on main =", on_main.scan().to_arrow().num_rows)
