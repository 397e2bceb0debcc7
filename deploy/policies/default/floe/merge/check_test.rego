package floe.merge_test

import data.floe.merge

summary(tables) := {
	"version": 1,
	"candidate": "c0ffee",
	"requestId": "r1",
	"principal": "pipeline",
	"source": {"ref": "ingest/shard-07", "hash": "5eed"},
	"target": {"ref": "main", "head": "4ead"},
	"warehouse": "lake@c0ffee",
	"tables": tables,
	"otherChanges": [],
	"totals": {},
}

appended := {
	"name": "ns.events", "change": "updated",
	"snapshots": [{"snapshotId": 7, "operation": "append", "summary": {}, "partitions": [], "floeOperation": null}],
	"dataFiles": {"addedCount": 1, "removedCount": 0, "addedRecords": 10, "removedRecords": 0},
	"deleteFiles": {"addedCount": 0, "removedCount": 0, "addedRecords": 0, "removedRecords": 0},
}

dropped := {
	"name": "ns.old", "change": "dropped", "snapshots": [],
	"dataFiles": {"addedCount": 0, "removedCount": 0, "addedRecords": 0, "removedRecords": 0},
	"deleteFiles": {"addedCount": 0, "removedCount": 0, "addedRecords": 0, "removedRecords": 0},
}

test_append_allowed if {
	merge.check == {"allow": true, "reasons": []} with input as summary([appended])
}

test_empty_merge_allowed if {
	merge.check.allow with input as summary([])
}

test_wrong_version_denied if {
	d := merge.check with input as object.union(summary([appended]), {"version": 2})
	not d.allow
	contains(d.reasons[0], "version 2 is not supported")
}

test_drop_on_main_denied if {
	d := merge.check with input as summary([dropped])
	not d.allow
	d.reasons == [`table ns.old is dropped on main, which only [] may do`]
}

test_drop_on_other_branch_allowed if {
	merge.check.allow with input as object.union(summary([dropped]), {"target": {"ref": "staging", "head": "4ead"}})
}

test_drop_by_listed_principal_allowed if {
	merge.check.allow with input as summary([dropped]) with data.floe.config.merge.allow_drops_by as ["pipeline"]
}

test_invalid_operation_record_denied if {
	bad := object.union(appended, {"snapshots": [{"snapshotId": 7, "operation": "overwrite", "summary": {}, "partitions": [],
		"floeOperation": {"kind": "overwrite-partitions", "partitions": [], "pinned": false, "sourceSnapshots": [], "invalid": "floe.operation.partitions is missing"}}]})
	d := merge.check with input as summary([bad])
	not d.allow
	d.reasons == ["table ns.events: snapshot 7 has an invalid operation record: floe.operation.partitions is missing"]
}

test_valid_operation_record_allowed if {
	ok := object.union(appended, {"snapshots": [{"snapshotId": 7, "operation": "overwrite", "summary": {}, "partitions": [],
		"floeOperation": {"kind": "overwrite-partitions", "partitions": ["day=2026-08-20"], "pinned": true, "sourceSnapshots": []}}]})
	merge.check.allow with input as summary([ok])
}

test_lost_records_limit if {
	overwrite := object.union(appended, {"dataFiles": {"addedCount": 1, "removedCount": 2, "addedRecords": 10, "removedRecords": 500}})
	merge.check.allow with input as summary([overwrite])
	d := merge.check with input as summary([overwrite]) with data.floe.config.merge.max_lost_records as 100
	not d.allow
	d.reasons == ["table ns.events loses 490 records, more than max_lost_records (100)"]
}

test_compaction_loses_nothing if {
	compaction := object.union(appended, {"dataFiles": {"addedCount": 1, "removedCount": 4, "addedRecords": 500, "removedRecords": 500}})
	merge.check.allow with input as summary([compaction]) with data.floe.config.merge.max_lost_records as 0
}
