package floe.authz_test

import data.floe.authz

test_reads_open if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "x", "groups": null, "anonymous": false}, "action": "read", "api": "iceberg", "ref": {"name": "main", "type": "branch"}}
}

test_anonymous_denied if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "", "groups": null, "anonymous": true}, "action": "read", "api": "iceberg", "ref": {"name": "main", "type": "branch"}}
}

test_team_writes_own_branch if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "sam", "groups": ["team-sales"], "anonymous": false}, "action": "table.write", "api": "iceberg", "ref": {"name": "teams/sales/q4", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update"}, {"key": ["crm", "leads"], "type": "ICEBERG_TABLE", "change": "create"}]}
}

test_team_cannot_write_other_namespace if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "sam", "groups": ["team-sales"], "anonymous": false}, "action": "table.write", "api": "iceberg", "ref": {"name": "teams/sales/q4", "type": "branch"}, "contents": [{"key": ["finance", "gl", "ledger"], "type": "ICEBERG_TABLE", "change": "update"}]}
	not d.allow
	d.reasons == ["finance.gl.ledger belongs to team finance"]
}

test_team_cannot_write_other_team_branch if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "sam", "groups": ["team-sales"], "anonymous": false}, "action": "commit", "api": "nessie", "ref": {"name": "teams/finance/x", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update"}]}
	not d.allow
	d.reasons == [`no rule allows commit on branch "teams/finance/x"`]
}

test_unowned_namespace_needs_platform if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "sam", "groups": ["team-sales"], "anonymous": false}, "action": "namespace.create", "api": "iceberg", "ref": {"name": "teams/sales/x", "type": "branch"}, "contents": [{"key": ["scratch"], "type": "NAMESPACE", "change": "create"}]}
	not d.allow
	d.reasons == ["scratch is in namespace scratch, which no team owns: only platform may write it"]
}

test_platform_creates_namespace if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "pia", "groups": ["platform"], "anonymous": false}, "action": "namespace.create", "api": "iceberg", "ref": {"name": "dev", "type": "branch"}, "contents": [{"key": ["scratch"], "type": "NAMESPACE", "change": "create"}]}
}

test_team_merges_owned_into_main if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "fay", "groups": ["team-finance"], "anonymous": false}, "action": "merge", "api": "nessie", "ref": {"name": "teams/finance/close", "type": "branch"}, "target": {"name": "main", "type": "branch"}, "contents": [{"key": ["finance", "gl"], "type": "ICEBERG_TABLE", "change": "update"}, {"key": ["ledger", "entries"], "type": "ICEBERG_TABLE", "change": "update"}]}
}

test_merge_with_foreign_key_denied if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "fay", "groups": ["team-finance"], "anonymous": false}, "action": "merge", "api": "nessie", "ref": {"name": "teams/finance/close", "type": "branch"}, "target": {"name": "main", "type": "branch"}, "contents": [{"key": ["finance", "gl"], "type": "ICEBERG_TABLE", "change": "update"}, {"key": ["campaigns", "spring"], "type": "ICEBERG_TABLE", "change": "delete"}]}
	not d.allow
	d.reasons == ["campaigns.spring belongs to team marketing"]
}

test_empty_merge_into_main_denied if {
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "fay", "groups": ["team-finance"], "anonymous": false}, "action": "merge", "api": "nessie", "ref": {"name": "teams/finance/close", "type": "branch"}, "target": {"name": "main", "type": "branch"}}
}

test_direct_main_write_denied if {
	d := authz.decision with input as {"version": 1, "principal": {"id": "pia", "groups": ["platform"], "anonymous": false}, "action": "commit", "api": "nessie", "ref": {"name": "main", "type": "branch"}, "contents": [{"key": ["sales", "orders"], "type": "ICEBERG_TABLE", "change": "update"}]}
	not d.allow
	d.reasons == ["main is written only through merges, not commit"]
}

test_two_teams if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "mo", "groups": ["team-sales", "team-marketing"], "anonymous": false}, "action": "transplant", "api": "nessie", "ref": {"name": "teams/marketing/x", "type": "branch"}, "target": {"name": "main", "type": "branch"}, "contents": [{"key": ["crm", "leads"], "type": "ICEBERG_TABLE", "change": "update"}, {"key": ["campaigns", "fall"], "type": "ICEBERG_TABLE", "change": "create"}]}
}

test_tag_create_and_move if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "sam", "groups": ["team-sales"], "anonymous": false}, "action": "ref.create", "api": "nessie", "ref": {"name": "q4-close", "type": "tag"}}
	not authz.decision.allow with input as {"version": 1, "principal": {"id": "pia", "groups": ["platform"], "anonymous": false}, "action": "ref.assign", "api": "nessie", "ref": {"name": "q4-close", "type": "tag"}}
}

test_team_from_data if {
	authz.decision.allow with input as {"version": 1, "principal": {"id": "hr", "groups": ["team-people"], "anonymous": false}, "action": "table.create", "api": "iceberg", "ref": {"name": "teams/people/x", "type": "branch"}, "contents": [{"key": ["people", "staff"], "type": "ICEBERG_TABLE", "change": "create"}]}
		with data.floe.teams.people as {"group": "team-people", "namespaces": ["people"]}
}
