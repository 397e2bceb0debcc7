package floe.authz_test

import data.floe.authz

alice := {"id": "alice", "groups": [], "anonymous": false}

bob := {"id": "bob", "groups": [], "anonymous": false}

publisher := {"id": "pat", "groups": ["publishers"], "anonymous": false}

finance_publisher := {"id": "fin", "groups": ["publishers", "finance"], "anonymous": false}

ingester := {"id": "ing", "groups": ["ingest"], "anonymous": false}

admin := {"id": "root", "groups": ["admins"], "anonymous": false}

anonymous := {"id": "", "groups": [], "anonymous": true}

branch(name) := {"name": name, "type": "branch"}

tag(name) := {"name": name, "type": "tag"}

req(principal, action, ref) := {
	"version": 1,
	"principal": principal,
	"action": action,
	"api": "nessie",
	"ref": ref,
}

merge_req(principal, action, source, target, contents) := {
	"version": 1,
	"principal": principal,
	"action": action,
	"api": "nessie",
	"ref": branch(source),
	"target": branch(target),
	"contents": contents,
}

put(key) := {"key": key, "type": "ICEBERG_TABLE", "change": "update"}

allowed(doc) if authz.decision.allow with input as doc

denied_with(doc, reason) if {
	d := authz.decision with input as doc
	d.allow == false
	reason in d.reasons
}

# --- input version and authentication ---

test_wrong_version_denied if {
	doc := object.union(req(alice, "read", branch("main")), {"version": 2})
	d := authz.decision with input as doc
	d.allow == false
	contains(d.reasons[0], "input version 2 is not supported")
}

test_missing_version_denied if {
	doc := object.remove(req(alice, "read", branch("main")), {"version"})
	not allowed(doc)
}

test_anonymous_cannot_read if denied_with(req(anonymous, "read", branch("main")), "authentication required")

test_anonymous_cannot_write_own_looking_branch if {
	denied_with(req(anonymous, "commit", branch("users/")), "authentication required")
}

test_empty_principal_is_not_authenticated if {
	denied_with(req({"id": "", "groups": ["admins"], "anonymous": false}, "read", branch("main")), "authentication required")
}

# --- reads ---

test_read_main_allowed if allowed(req(alice, "read", branch("main")))

test_read_tag_allowed if allowed(req(bob, "read", tag("v1")))

test_read_detached_allowed if allowed(req(bob, "read", {"name": "", "type": "detached"}))

test_read_finance_without_group_allowed if {
	allowed(object.union(req(alice, "read", branch("main")), {"contents": [put(["finance", "ledger"])]}))
}

# --- main ---

test_publisher_merges_into_main if {
	d := authz.decision with input as merge_req(publisher, "merge", "dev", "main", [put(["sales", "orders"])])
	d.allow == true
	d.reasons == ["group publishers may merge into main"]
}

test_publisher_transplants_into_main if allowed(merge_req(publisher, "transplant", "dev", "main", []))

test_non_publisher_merge_into_main_denied if {
	denied_with(merge_req(alice, "merge", "users/alice/x", "main", []), "main is written only through merges by group publishers")
}

test_admin_merge_into_main_denied if {
	denied_with(merge_req(admin, "merge", "dev", "main", []), "main is written only through merges by group publishers")
}

test_publisher_commit_to_main_denied if {
	denied_with(req(publisher, "commit", branch("main")), "main is written only through merges by group publishers")
}

test_table_writes_to_main_denied if {
	every action in ["table.create", "table.write", "table.drop", "table.rename", "namespace.create", "namespace.drop", "namespace.write", "view.create", "view.write", "view.drop", "view.rename"] {
		denied_with(req(publisher, action, branch("main")), "main is written only through merges by group publishers")
	}
}

test_assign_main_denied_even_for_admin if {
	denied_with(req(admin, "ref.assign", branch("main")), "main is written only through merges by group publishers")
}

test_create_main_denied_even_for_admin if {
	denied_with(req(admin, "ref.create", branch("main")), "main is written only through merges by group publishers")
}

test_delete_main_never if {
	every p in [alice, publisher, admin, {"id": "x", "groups": ["admins", "publishers"], "anonymous": false}] {
		denied_with(req(p, "ref.delete", branch("main")), "branch main can never be deleted")
	}
}

test_main_as_merge_source_is_not_a_write_to_main if {
	allowed(merge_req(alice, "merge", "main", "users/alice/x", []))
}

# --- users/<id>/ ---

test_owner_commits_to_own_branch if {
	d := authz.decision with input as req(alice, "commit", branch("users/alice/x"))
	d.allow == true
	d.reasons == ["users/alice/ branches belong to alice"]
}

test_owner_writes_bare_user_branch if allowed(req(alice, "table.write", branch("users/alice")))

test_owner_all_writes_allowed if {
	every action in ["commit", "table.create", "table.write", "table.drop", "table.rename", "namespace.create", "namespace.drop", "namespace.write", "view.create", "view.write", "view.drop", "view.rename", "ref.create", "ref.assign", "ref.delete"] {
		allowed(req(alice, action, branch("users/alice/feature/deep")))
	}
}

test_owner_merges_into_own_branch if allowed(merge_req(alice, "merge", "main", "users/alice/x", []))

test_owner_transplants_into_own_branch if allowed(merge_req(alice, "transplant", "dev", "users/alice/x", []))

test_other_user_denied if {
	denied_with(req(bob, "commit", branch("users/alice/x")), "no rule allows commit on branch users/alice/x")
}

test_other_user_cannot_merge_into_branch if {
	denied_with(merge_req(bob, "merge", "users/bob/x", "users/alice/x", []), "no rule allows merge on branch users/alice/x")
}

test_prefix_is_not_owner if not allowed(req(alice, "commit", branch("users/alicex/y")))

test_empty_owner_segment_denied if not allowed(req(alice, "commit", branch("users//x")))

# --- ingest/ ---

test_ingest_group_writes_ingest if {
	d := authz.decision with input as req(ingester, "table.write", branch("ingest/shard-07"))
	d.allow == true
	d.reasons == ["ingest/ branches are writable by group ingest"]
}

test_ingest_group_creates_ingest_branch if allowed(req(ingester, "ref.create", branch("ingest/new")))

test_non_ingest_denied if {
	denied_with(req(alice, "commit", branch("ingest/shard-07")), "no rule allows commit on branch ingest/shard-07")
}

test_ingest_group_cannot_write_elsewhere if not allowed(req(ingester, "commit", branch("dev")))

# --- admins ---

test_admin_manages_any_branch if {
	every action in ["ref.create", "ref.assign", "ref.delete"] {
		every name in ["dev", "users/bob/x", "ingest/a"] {
			allowed(req(admin, action, branch(name)))
		}
	}
}

test_admin_cannot_commit_to_arbitrary_branch if {
	denied_with(req(admin, "commit", branch("dev")), "no rule allows commit on branch dev")
}

test_non_admin_cannot_create_arbitrary_branch if {
	denied_with(req(alice, "ref.create", branch("dev")), "no rule allows ref.create on branch dev")
}

test_admin_runs_admin_operations if {
	every action in ["admin.gc.run", "admin.gc.plan", "admin.maintenance.lock"] {
		allowed({"version": 1, "principal": admin, "action": action, "api": "floe", "ref": {"name": "", "type": "detached"}})
	}
}

test_non_admin_denied_admin_operations if {
	every p in [alice, publisher, ingester] {
		denied_with(
			{"version": 1, "principal": p, "action": "admin.gc.run", "api": "floe", "ref": {"name": "", "type": "detached"}},
			"admin.gc.run requires group admins",
		)
	}
}

# --- ref retention (floe's API) ---

test_admin_sets_branch_retention if {
	every name in ["dev", "ingest/a", "users/bob/x", "transform/daily"] {
		allowed(req(admin, "ref.retention", branch(name)))
	}
}

test_owner_sets_own_branch_retention if allowed(req(alice, "ref.retention", branch("users/alice/x")))

test_retention_of_main_denied_even_for_admin if {
	denied_with(req(admin, "ref.retention", branch("main")), "main is written only through merges by group publishers")
}

test_non_admin_retention_of_other_branch_denied if {
	denied_with(req(bob, "ref.retention", branch("users/alice/x")), "no rule allows ref.retention on branch users/alice/x")
	denied_with(req(publisher, "ref.retention", branch("dev")), "no rule allows ref.retention on branch dev")
}

test_tag_retention_admins_only if {
	allowed(req(admin, "ref.retention", tag("v1")))
	denied_with(req(alice, "ref.retention", tag("v1")), "tags are immutable except for group admins")
}

test_ref_expiry_run_admins_only if {
	allowed({"version": 1, "principal": admin, "action": "admin.refs.expire", "api": "floe", "ref": {"name": "", "type": "detached"}})
	denied_with(
		{"version": 1, "principal": alice, "action": "admin.refs.expire", "api": "floe", "ref": {"name": "", "type": "detached"}},
		"admin.refs.expire requires group admins",
	)
}

# --- maintenance locks ---

lock_req(principal, ref, key) := {
	"version": 1,
	"principal": principal,
	"action": "maintenance.lock",
	"api": "floe",
	"ref": ref,
	"contents": [put(key)],
}

test_admin_holds_maintenance_locks_on_main if {
	allowed(lock_req(admin, branch("main"), ["sales", "orders"]))
	allowed(lock_req(admin, branch("dev"), ["sales", "orders"]))
}

test_others_cannot_lock_main if {
	every p in [alice, publisher, ingester] {
		denied_with(lock_req(p, branch("main"), ["sales", "orders"]), "no rule allows maintenance.lock on branch main")
	}
}

test_branch_writers_hold_maintenance_locks if {
	allowed(lock_req(alice, branch("users/alice/x"), ["sales", "orders"]))
	allowed(lock_req(ingester, branch("ingest/daily"), ["sales", "orders"]))
}

test_non_writers_cannot_lock_a_branch if {
	denied_with(lock_req(bob, branch("users/alice/x"), ["sales", "orders"]), "no rule allows maintenance.lock on branch users/alice/x")
	denied_with(lock_req(alice, branch("ingest/daily"), ["sales", "orders"]), "no rule allows maintenance.lock on branch ingest/daily")
}

test_maintenance_lock_on_a_tag_denied if {
	denied_with(lock_req(admin, tag("v1"), ["sales", "orders"]), "tag v1 is read-only: writes land on branches")
}

test_maintenance_lock_of_finance_requires_group if {
	denied_with(lock_req(admin, branch("main"), ["finance", "ledger"]), "write to finance.ledger requires group finance")
}

# --- tags ---

test_anyone_creates_tags if {
	d := authz.decision with input as req(bob, "ref.create", tag("v1"))
	d.allow == true
	d.reasons == ["any authenticated principal may create tags"]
}

test_tag_assign_denied_for_non_admin if {
	denied_with(req(publisher, "ref.assign", tag("v1")), "tags are immutable except for group admins")
}

test_tag_delete_denied_for_non_admin if {
	denied_with(req(alice, "ref.delete", tag("v1")), "tags are immutable except for group admins")
}

test_admin_moves_and_deletes_tags if {
	allowed(req(admin, "ref.assign", tag("v1")))
	allowed(req(admin, "ref.delete", tag("v1")))
}

test_commit_to_tag_denied if {
	denied_with(req(admin, "commit", tag("v1")), "tag v1 is read-only: writes land on branches")
}

test_merge_into_tag_denied if {
	doc := object.union(merge_req(publisher, "merge", "dev", "x", []), {"target": tag("v1")})
	denied_with(doc, "tag v1 is read-only: writes land on branches")
}

test_write_detached_denied if {
	denied_with(req(alice, "table.write", {"name": "", "type": "detached"}), "detached ref is read-only: writes land on branches")
}

test_merge_without_target_denied if {
	doc := object.remove(merge_req(publisher, "merge", "dev", "main", []), {"target"})
	not allowed(doc)
}

# --- per-namespace groups ---

test_finance_write_requires_group if {
	doc := object.union(req(alice, "table.write", branch("users/alice/x")), {"contents": [put(["finance", "ledger"])]})
	d := authz.decision with input as doc
	d.allow == false
	d.reasons == ["write to finance.ledger requires group finance"]
}

test_finance_member_writes_finance if {
	alice_fin := object.union(alice, {"groups": ["finance"]})
	allowed(object.union(req(alice_fin, "table.write", branch("users/alice/x")), {"contents": [put(["finance", "ledger"])]}))
}

test_cross_table_merge_denied_names_each_key if {
	contents := [put(["sales", "orders"]), put(["finance", "ledger"]), put(["finance", "fx", "rates"])]
	d := authz.decision with input as merge_req(publisher, "merge", "dev", "main", contents)
	d.allow == false
	d.reasons == ["write to finance.fx.rates requires group finance", "write to finance.ledger requires group finance"]
}

test_cross_table_merge_allowed_for_finance_publisher if {
	contents := [put(["sales", "orders"]), put(["finance", "ledger"])]
	allowed(merge_req(finance_publisher, "merge", "dev", "main", contents))
}

test_namespace_itself_is_guarded if {
	doc := object.union(req(alice, "namespace.create", branch("users/alice/x")), {"contents": [{"key": ["finance"], "type": "NAMESPACE", "change": "create"}]})
	denied_with(doc, "write to finance requires group finance")
}

test_namespace_groups_configurable if {
	doc := object.union(req(alice, "table.write", branch("users/alice/x")), {"contents": [put(["hr", "salaries"])]})
	denied_with(doc, "write to hr.salaries requires group people") with data.floe.config.namespace_groups as {"hr": "people"}
}

# --- group names come from data ---

test_group_names_configurable if {
	renamed := {"publishers": "release-managers", "ingest": "pipelines", "admins": "ops"}
	rm := {"id": "rm", "groups": ["release-managers"], "anonymous": false}
	allowed(merge_req(rm, "merge", "dev", "main", [])) with data.floe.config.groups as renamed
	not allowed(merge_req(publisher, "merge", "dev", "main", [])) with data.floe.config.groups as renamed
	pipe := {"id": "p", "groups": ["pipelines"], "anonymous": false}
	allowed(req(pipe, "commit", branch("ingest/a"))) with data.floe.config.groups as renamed
}

# --- merge queue ---

reviewer := {"id": "rev", "groups": ["reviewers"], "anonymous": false}

test_queue_submit_decided_as_a_merge if {
	allowed(merge_req(publisher, "queue.submit", "dev", "main", [put(["sales", "orders"])]))
	denied_with(merge_req(alice, "queue.submit", "users/alice/x", "main", []), "main is written only through merges by group publishers")
	allowed(merge_req(alice, "queue.submit", "main", "users/alice/x", []))
}

test_queue_approve_for_reviewers_and_admins if {
	allowed(merge_req(reviewer, "queue.approve", "main", "main", []))
	allowed(merge_req(admin, "queue.approve", "main", "main", []))
	denied_with(merge_req(publisher, "queue.approve", "main", "main", []), "reviewing merge requests requires group admins or reviewers")
}

test_queue_protected_branch_single_committer if {
	prot := object.union(data.floe.config, {"queue_protected": ["main", "release"]})
	denied_with(merge_req(publisher, "merge", "dev", "main", []), "main is written only through the merge queue (floe queue submit)") with data.floe.config as prot
	allowed(merge_req(publisher, "queue.submit", "dev", "main", [])) with data.floe.config as prot
	denied_with(req(pub_release, "commit", branch("release")), "release is written only through the merge queue (floe queue submit)") with data.floe.config as prot
	allowed(merge_req(publisher, "merge", "dev", "main", [])) # not protected by default
}

pub_release := {"id": "pub", "groups": ["publishers"], "anonymous": false}

# --- fallback ---

test_fallback_names_action_and_branch if {
	d := authz.decision with input as req(alice, "commit", branch("dev"))
	d == {"allow": false, "reasons": ["no rule allows commit on branch dev"]}
}

# --- object storage (remote signing) ---

storage_req(principal, action, ref, method, op, key) := {
	"version": 1,
	"principal": principal,
	"action": action,
	"api": "iceberg",
	"ref": ref,
	"contents": [put(["sales", "orders"])],
	"storage": {
		"provider": "s3", "method": method, "operation": op, "bucket": "lake",
		"key": key, "table": ["sales", "orders"], "table_location": "s3://lake/wh/sales/orders-1",
	},
}

test_storage_read_allowed_everywhere if {
	every ref in [branch("main"), branch("users/bob/x"), tag("v1")] {
		allowed(storage_req(alice, "storage.read", ref, "GET", "get-object", "wh/sales/orders-1/data/f.parquet"))
	}
}

test_storage_read_needs_authentication if {
	denied_with(storage_req(anonymous, "storage.read", branch("main"), "GET", "get-object", "k"), "authentication required")
}

test_storage_write_on_own_branch if {
	allowed(storage_req(alice, "storage.write", branch("users/alice/x"), "PUT", "put-object", "wh/sales/orders-1/data/f.parquet"))
}

test_storage_write_on_others_branch_denied if {
	denied_with(
		storage_req(bob, "storage.write", branch("users/alice/x"), "PUT", "put-object", "k"),
		"no rule allows storage.write on branch users/alice/x",
	)
}

test_storage_write_on_main_denied if {
	denied_with(
		storage_req(admin, "storage.write", branch("main"), "POST", "create-multipart-upload", "k"),
		"main is written only through merges by group publishers",
	)
}

test_storage_write_on_tag_denied if {
	denied_with(storage_req(admin, "storage.write", tag("v1"), "PUT", "put-object", "k"), "tag v1 is read-only: writes land on branches")
}

test_storage_write_by_ingest if {
	allowed(storage_req(ingester, "storage.write", branch("ingest/daily"), "PUT", "upload-part", "k"))
}
