package floe.authz_test

import data.floe.authz

test_anonymous_denied if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "", "groups": null, "anonymous": true}, "action": "read", "api": "iceberg", "ref": {"name": "main", "type": "branch"}}
}

test_reads_open if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "ann", "groups": null, "anonymous": false}, "action": "read", "api": "iceberg", "ref": {"name": "main", "type": "branch"}}
}

test_pipeline_writes_own_branch if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "ingest-orders", "groups": null, "anonymous": false}, "action": "table.write", "api": "iceberg", "ref": {"name": "ingest/orders/2026-12-01", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update", "iceberg": {"operations": ["append"]}}]}
}

test_pipeline_creates_own_branch if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "ingest-orders", "groups": null, "anonymous": false}, "action": "ref.create", "api": "nessie", "ref": {"name": "ingest/orders/2026-12-01", "type": "branch"}}
}

test_pipeline_deletes_own_branch if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "ingest-orders", "groups": null, "anonymous": false}, "action": "ref.delete", "api": "nessie", "ref": {"name": "ingest/orders/2026-11-30", "type": "branch"}}
}

test_pipeline_cannot_write_other_prefix if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "ingest-orders", "groups": null, "anonymous": false}, "action": "table.write", "api": "iceberg", "ref": {"name": "ingest/clicks/2026-12-01", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update"}]}
	not d.allow
	d.reasons == [`no rule allows table.write on branch "ingest/clicks/2026-12-01" for ingest-orders`]
}

test_prefix_is_not_a_name_prefix if {
	# "ingest/orders/" does not cover "ingest/orders-eu/x".
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "ingest-orders", "groups": null, "anonymous": false}, "action": "ref.create", "api": "nessie", "ref": {"name": "ingest/orders-eu/x", "type": "branch"}}
}

test_pipeline_cannot_write_other_namespace if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "ingest-orders", "groups": null, "anonymous": false}, "action": "commit", "api": "nessie", "ref": {"name": "ingest/orders/x", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update"}, {"key": ["web", "clicks"], "type": "ICEBERG_TABLE", "change": "update"}]}
	not d.allow
	d.reasons == ["ingest-orders may not write namespace web (web.clicks)"]
}

test_pipeline_cannot_write_main if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "ingest-orders", "groups": null, "anonymous": false}, "action": "table.write", "api": "iceberg", "ref": {"name": "main", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update"}]}
	not d.allow
	d.reasons == ["only the merge queue (floe-queue) writes main: ask the queue to publish your branch"]
}

test_pipeline_cannot_merge_into_main if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "ingest-orders", "groups": null, "anonymous": false}, "action": "merge", "api": "nessie", "ref": {"name": "ingest/orders/x", "type": "branch"}, "target": {"name": "main", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update"}]}
	not d.allow
	d.reasons == ["only the merge queue (floe-queue) writes main: ask the queue to publish your branch"]
}

test_platform_cannot_merge_into_main if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "root", "groups": ["platform"], "anonymous": false}, "action": "merge", "api": "nessie", "ref": {"name": "ingest/orders/x", "type": "branch"}, "target": {"name": "main", "type": "branch"}}
}

test_pipeline_merges_own_branches if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "transform-daily", "groups": null, "anonymous": false}, "action": "merge", "api": "nessie", "ref": {"name": "transform/daily-agg/retry", "type": "branch"}, "target": {"name": "transform/daily-agg/run", "type": "branch"}, "contents": [{"key": ["reports", "daily"], "type": "ICEBERG_TABLE", "change": "update"}]}
}

test_pipeline_cannot_merge_into_other_prefix if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "transform-daily", "groups": null, "anonymous": false}, "action": "merge", "api": "nessie", "ref": {"name": "transform/daily-agg/run", "type": "branch"}, "target": {"name": "ingest/orders/x", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update"}]}
}

test_pipeline_enqueues_own_branch if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "ingest-orders", "groups": null, "anonymous": false}, "action": "queue.enqueue", "api": "floe", "ref": {"name": "ingest/orders/2026-12-01", "type": "branch"}, "target": {"name": "main", "type": "branch"}}
}

test_pipeline_cannot_enqueue_other_branch if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "ingest-orders", "groups": null, "anonymous": false}, "action": "queue.enqueue", "api": "floe", "ref": {"name": "ingest/clicks/2026-12-01", "type": "branch"}, "target": {"name": "main", "type": "branch"}}
}

test_queue_merges_into_main if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "floe-queue", "groups": null, "anonymous": false}, "action": "merge", "api": "floe", "ref": {"name": "ingest/orders/2026-12-01", "type": "branch"}, "target": {"name": "main", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update"}, {"key": ["web", "clicks"], "type": "ICEBERG_TABLE", "change": "update"}]}
	d.allow
	d.reasons == ["the merge queue publishes to protected branches"]
}

test_queue_cannot_commit_to_main if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "floe-queue", "groups": null, "anonymous": false}, "action": "commit", "api": "nessie", "ref": {"name": "main", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update"}]}
	not d.allow
	d.reasons == ["main changes only through merges, not commit"]
}

test_queue_cannot_move_main if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "floe-queue", "groups": null, "anonymous": false}, "action": "ref.assign", "api": "nessie", "ref": {"name": "main", "type": "branch"}}
}

test_queue_cannot_write_pipeline_branches if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "floe-queue", "groups": null, "anonymous": false}, "action": "table.write", "api": "iceberg", "ref": {"name": "ingest/orders/x", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update"}]}
}

test_platform_tags if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "root", "groups": ["platform"], "anonymous": false}, "action": "ref.create", "api": "nessie", "ref": {"name": "2026-12-01", "type": "tag"}}
}

test_tags_immutable if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "root", "groups": ["platform"], "anonymous": false}, "action": "ref.assign", "api": "nessie", "ref": {"name": "2026-12-01", "type": "tag"}}
	not d.allow
	d.reasons == ["tags are immutable"]
}

test_platform_deletes_stale_branch if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "root", "groups": ["platform"], "anonymous": false}, "action": "ref.delete", "api": "nessie", "ref": {"name": "ingest/orders/2025-01-01", "type": "branch"}}
}

test_platform_cannot_delete_main if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "root", "groups": ["platform"], "anonymous": false}, "action": "ref.delete", "api": "nessie", "ref": {"name": "main", "type": "branch"}}
}

test_renamed_queue_principal if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "publisher-bot", "groups": null, "anonymous": false}, "action": "merge", "api": "floe", "ref": {"name": "ingest/orders/x", "type": "branch"}, "target": {"name": "main", "type": "branch"}}
		with data.floe.pipelines.queue_principal as "publisher-bot"
}
