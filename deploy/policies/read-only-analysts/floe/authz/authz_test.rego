package floe.authz_test

import data.floe.authz

test_anonymous_denied if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "", "groups": null, "anonymous": true}, "action": "read", "api": "nessie", "ref": {"name": "main", "type": "branch"}}
}

test_analyst_reads if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "ann", "groups": ["analysts"], "anonymous": false}, "action": "read", "api": "iceberg", "ref": {"name": "main", "type": "branch"}}
}

test_outsider_cannot_read if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "olga", "groups": ["sales"], "anonymous": false}, "action": "read", "api": "iceberg", "ref": {"name": "main", "type": "branch"}}
	not d.allow
	d.reasons == ["reading needs one of the groups analysts, engineers"]
}

test_analyst_cannot_write_own_branch if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "ann", "groups": ["analysts"], "anonymous": false}, "action": "table.write", "api": "iceberg", "ref": {"name": "users/ann/x", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update"}]}
	not d.allow
	d.reasons == ["analysts have read-only access"]
}

test_analyst_cannot_create_branch if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "ann", "groups": ["analysts"], "anonymous": false}, "action": "ref.create", "api": "nessie", "ref": {"name": "ann-test", "type": "branch"}}
}

test_engineer_writes_dev if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "eve", "groups": ["engineers"], "anonymous": false}, "action": "commit", "api": "nessie", "ref": {"name": "dev", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update"}]}
}

test_engineer_and_analyst_writes if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "eve", "groups": ["analysts", "engineers"], "anonymous": false}, "action": "table.create", "api": "iceberg", "ref": {"name": "dev", "type": "branch"}, "contents": [{"key": ["sales", "new"], "type": "ICEBERG_TABLE", "change": "create"}]}
}

test_engineer_cannot_write_main if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "eve", "groups": ["engineers"], "anonymous": false}, "action": "table.write", "api": "iceberg", "ref": {"name": "main", "type": "branch"}}
	not d.allow
	d.reasons == [`no rule allows table.write on branch "main"`]
}

test_engineer_cannot_merge_main if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "eve", "groups": ["engineers"], "anonymous": false}, "action": "merge", "api": "nessie", "ref": {"name": "dev", "type": "branch"}, "target": {"name": "main", "type": "branch"}}
}

test_engineer_merges_into_dev if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "eve", "groups": ["engineers"], "anonymous": false}, "action": "merge", "api": "nessie", "ref": {"name": "feature", "type": "branch"}, "target": {"name": "dev", "type": "branch"}}
}

test_publisher_merges_main if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "rel", "groups": ["release"], "anonymous": false}, "action": "merge", "api": "nessie", "ref": {"name": "dev", "type": "branch"}, "target": {"name": "main", "type": "branch"}}
}

test_publisher_transplants_main if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "rel", "groups": ["release"], "anonymous": false}, "action": "transplant", "api": "nessie", "ref": {"name": "hotfix", "type": "branch"}, "target": {"name": "main", "type": "branch"}}
}

test_engineer_creates_tag if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "eve", "groups": ["engineers"], "anonymous": false}, "action": "ref.create", "api": "nessie", "ref": {"name": "v1", "type": "tag"}}
}

test_engineer_cannot_move_tag if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "eve", "groups": ["engineers"], "anonymous": false}, "action": "ref.assign", "api": "nessie", "ref": {"name": "v1", "type": "tag"}}
}

test_renamed_groups if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "bi", "groups": ["bi"], "anonymous": false}, "action": "read", "api": "iceberg", "ref": {"name": "main", "type": "branch"}}
		with data.floe.config.readers as ["bi"]
}
