package floe.authz_test

import data.floe.authz

test_release_merge_allowed if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "pat", "groups": ["publishers"], "anonymous": false}, "action": "merge", "api": "nessie", "ref": {"name": "release/2026-12", "type": "branch"}, "target": {"name": "main", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update", "iceberg": {"operations": ["append"]}}]}
}

test_feature_merge_denied if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "pat", "groups": ["publishers"], "anonymous": false}, "action": "merge", "api": "nessie", "ref": {"name": "feature/x", "type": "branch"}, "target": {"name": "main", "type": "branch"}}
	not d.allow
	d.reasons == [`merges into main come from release/ or hotfix/ branches, not "feature/x"`]
}

test_every_denial_listed if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "dev", "groups": [], "anonymous": false}, "action": "transplant", "api": "nessie", "ref": {"name": "hotfix/1", "type": "branch"}, "target": {"name": "prod", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "change": "delete"}, {"key": ["sales", "items"], "type": "ICEBERG_TABLE", "change": "update", "iceberg": {"operations": ["overwrite", "schema-change"], "updates": ["add-schema"]}}]}
	not d.allow
	d.reasons == [
		"deleting sales.orders on prod needs group admins",
		"merging into prod needs group publishers",
		"schema change of sales.items on prod needs group schema-owners",
	]
}

test_schema_owner_and_admin if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "sa", "groups": ["publishers", "schema-owners", "admins"], "anonymous": false}, "action": "merge", "api": "nessie", "ref": {"name": "hotfix/1", "type": "branch"}, "target": {"name": "prod", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "change": "delete"}, {"key": ["sales", "items"], "type": "ICEBERG_TABLE", "change": "update", "iceberg": {"operations": ["schema-change"]}}]}
}

test_direct_commit_on_main_denied if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "root", "groups": ["admins", "publishers"], "anonymous": false}, "action": "table.write", "api": "iceberg", "ref": {"name": "main", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update"}]}
	not d.allow
	d.reasons == [`branch "main" changes only through merges`]
}

test_large_merge_needs_admin if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "pat", "groups": ["publishers"], "anonymous": false}, "action": "merge", "api": "nessie", "ref": {"name": "release/big", "type": "branch"}, "target": {"name": "main", "type": "branch"}, "contents": [{"key": ["a", "t1"], "change": "update"}, {"key": ["a", "t2"], "change": "update"}, {"key": ["a", "t3"], "change": "update"}]}
		with data.floe.config.max_merge_tables as 2
	not d.allow
	d.reasons == ["a merge of 3 entries into main needs group admins (limit 2)"]
}

test_open_branch if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "dev", "groups": null, "anonymous": false}, "action": "commit", "api": "nessie", "ref": {"name": "feature/x", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "change": "delete"}]}
}

test_anonymous_denied if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "", "groups": null, "anonymous": true}, "action": "commit", "api": "nessie", "ref": {"name": "feature/x", "type": "branch"}}
}

test_release_tag_format if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "pat", "groups": ["publishers"], "anonymous": false}, "action": "ref.create", "api": "nessie", "ref": {"name": "v1.2.3", "type": "tag"}}
	d := authz.decision with input as {"version": 1, "principal": {"id": "pat", "groups": ["publishers"], "anonymous": false}, "action": "ref.create", "api": "nessie", "ref": {"name": "v1.2", "type": "tag"}}
	d.reasons == [`release tag "v1.2" must look like v1.2.3`]
}

test_tags_never_move if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "pat", "groups": ["publishers"], "anonymous": false}, "action": "ref.assign", "api": "nessie", "ref": {"name": "v1.2.3", "type": "tag"}}
	authz.decision.allow with input as {"version": 1, "principal": {"id": "root", "groups": ["admins"], "anonymous": false}, "action": "ref.delete", "api": "nessie", "ref": {"name": "v1.2.3", "type": "tag"}}
}

test_protected_branch_created_by_admin if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "root", "groups": ["admins"], "anonymous": false}, "action": "ref.create", "api": "nessie", "ref": {"name": "prod", "type": "branch"}}
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "dev", "groups": [], "anonymous": false}, "action": "ref.create", "api": "nessie", "ref": {"name": "prod", "type": "branch"}}
}

test_detached_write_denied if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "dev", "groups": [], "anonymous": false}, "action": "commit", "api": "nessie", "ref": {"name": "", "type": "detached"}}
	d.reasons == ["writes land on branches"]
}
