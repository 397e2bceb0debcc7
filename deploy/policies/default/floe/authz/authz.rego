# floe's default authorization policy. The engine asks for
# data.floe.authz.decision and expects {"allow": bool, "reasons": [string]}.
#
# Reads are open to every authenticated principal. Writes land on one
# ref (the target of a merge or transplant, the ref otherwise) and are
# allowed when some rule allows them and no rule denies them: explicit
# denials (main, tags, per-namespace groups) always win.
# Group names come from data.floe.config so operators can rename them.
#
# The rules are shaped for evaluation cost, which BenchmarkDecide
# measures: each write evaluates the class of its ref once, rules start
# with the test most likely to fail, and equality tests on input fields
# let OPA's rule index skip rules without evaluating them.
package floe.authz

import data.floe.config

decision := {"allow": false, "reasons": [sprintf("input version %v is not supported by this policy (want 1)", [input_version])]} if {
	not input.version == 1
} else := {"allow": false, "reasons": ["authentication required"]} if {
	not authenticated
} else := {"allow": true, "reasons": ["reads are allowed for every authenticated principal"]} if {
	input.action == "read"
} else := {"allow": true, "reasons": ["reading a table's files is allowed for every authenticated principal"]} if {
	input.action == "storage.read"
} else := {"allow": false, "reasons": sort(denials)} if {
	count(denials) > 0
} else := {"allow": true, "reasons": sort(allows)} if {
	count(allows) > 0
} else := {"allow": false, "reasons": [sprintf("no rule allows %s on %s", [input.action, write_ref_desc])]}

# Named fields only, never the whole input: the engine caches decisions
# of policies that cannot see input.request_id.
default input_version := null

input_version := input.version

authenticated if {
	not input.principal.anonymous
	input.principal.id != ""
}

is_publisher if config.groups.publishers in input.principal.groups

is_admin if config.groups.admins in input.principal.groups

is_ingest if config.groups.ingest in input.principal.groups

# The kind of a write: "merge" (merges and transplants), "ref" (ref
# create, assign, delete, retention), "admin" (floe's own API's
# operations on the catalog as a whole: actions named admin.*),
# "maintenance" (holding a table's maintenance lock: actions named
# maintenance.*) or "content" (everything else).
default kind := "content"

kind := "admin" if startswith(input.action, "admin.")

kind := "maintenance" if startswith(input.action, "maintenance.")

kind := "merge" if input.action == "merge"

kind := "merge" if input.action == "transplant"

kind := "ref" if input.action == "ref.create"

kind := "ref" if input.action == "ref.assign"

kind := "ref" if input.action == "ref.delete"

kind := "ref" if input.action == "ref.retention"

# The ref a write lands on.
write_ref := input.target if kind == "merge"

write_ref := input.ref if kind != "merge"

default write_ref_desc := "an unnamed ref"

write_ref_desc := sprintf("%s %s", [write_ref.type, write_ref.name]) if write_ref.name != ""

write_ref_desc := sprintf("%s ref", [write_ref.type]) if write_ref.name == ""

# The class of that ref, which picks the rules that apply.
write_class := "main" if {
	write_ref.type == "branch"
	write_ref.name == "main"
} else := "users" if {
	write_ref.type == "branch"
	startswith(write_ref.name, "users/")
} else := "ingest" if {
	write_ref.type == "branch"
	startswith(write_ref.name, "ingest/")
} else := "branch" if {
	write_ref.type == "branch"
} else := "other"

# --- main -------------------------------------------------------------

main_rule := sprintf("main is written only through merges by group %s", [config.groups.publishers])

denials contains "branch main can never be deleted" if {
	input.action == "ref.delete"
	write_class == "main"
}

denials contains main_rule if {
	write_class == "main"
	kind != "merge"
	kind != "maintenance"
	kind != "review"
	input.action != "ref.delete"
}

denials contains main_rule if {
	write_class == "main"
	kind == "merge"
	not is_publisher
}

allows contains sprintf("group %s may merge into main", [config.groups.publishers]) if {
	write_class == "main"
	kind == "merge"
	is_publisher
}

# --- users/<id>/ ------------------------------------------------------

allows contains sprintf("users/%s/ branches belong to %s", [owner, owner]) if {
	write_class == "users"
	owner := split(write_ref.name, "/")[1]
	owner == input.principal.id
}

# --- ingest/ ----------------------------------------------------------

allows contains sprintf("ingest/ branches are writable by group %s", [config.groups.ingest]) if {
	write_class == "ingest"
	is_ingest
}

# --- admins -----------------------------------------------------------

# Admins manage branch refs; the main rule above still applies to them
# because denials win over allows.
allows contains sprintf("group %s may manage branches", [config.groups.admins]) if {
	kind == "ref"
	write_ref.type == "branch"
	is_admin
}

# Admin operations (garbage collection, maintenance locks, ...) are for
# group admins only.
allows contains sprintf("group %s may run admin operations", [config.groups.admins]) if {
	kind == "admin"
	is_admin
}

denials contains sprintf("%s requires group %s", [input.action, config.groups.admins]) if {
	kind == "admin"
	not is_admin
}

# --- maintenance locks ------------------------------------------------

# Holding a table's maintenance lock (maintenance.lock, with the table in
# contents) is the right to rewrite the table on the lock's branch: the
# writers of that branch have it by the branch rules above (users/<id>/,
# ingest/), and group admins have it on every branch, main included,
# whose maintenance jobs are the operators'. The per-namespace group rule
# below applies as to any write.
allows contains sprintf("group %s may hold maintenance locks", [config.groups.admins]) if {
	kind == "maintenance"
	write_ref.type == "branch"
	is_admin
}

# --- merge queue ------------------------------------------------------

# queue.submit asks the merge queue to merge the source (ref) into the
# target: decided as that merge is, with contents the keys the source
# changed. queue.approve (approve, reject, or cancel another principal's
# request) is a review of the target's queue, for groups admins and
# reviewers.
kind := "merge" if input.action == "queue.submit"

kind := "review" if input.action == "queue.approve"

is_reviewer if config.groups.reviewers in input.principal.groups

is_reviewer if is_admin

allows contains sprintf("groups %s and %s may review merge requests", [config.groups.admins, config.groups.reviewers]) if {
	kind == "review"
	write_ref.type == "branch"
	is_reviewer
}

denials contains sprintf("reviewing merge requests requires group %s or %s", [config.groups.admins, config.groups.reviewers]) if {
	kind == "review"
	not is_reviewer
}

# Single committer: a branch listed in config.queue_protected (as in the
# queue's own rules, `floe serve --merge-queue`) is written only by the
# merge queue. Direct merges, transplants and content writes are refused
# to everybody but admins, whose writes the queue counts as bypasses
# (floe_queue_bypass_commits_total).
denials contains sprintf("%s is written only through the merge queue (floe queue submit)", [write_ref.name]) if {
	write_ref.type == "branch"
	write_ref.name in config.queue_protected
	input.action != "queue.submit"
	kind != "ref"
	kind != "admin"
	kind != "maintenance"
	not is_admin
}

# --- tags and detached refs -------------------------------------------

allows contains "any authenticated principal may create tags" if {
	input.action == "ref.create"
	input.ref.type == "tag"
}

# Moving and deleting a tag, one rule per action so the index can skip
# them.
allows contains tag_admin_rule if {
	input.action == "ref.assign"
	input.ref.type == "tag"
	is_admin
}

allows contains tag_admin_rule if {
	input.action == "ref.delete"
	input.ref.type == "tag"
	is_admin
}

allows contains tag_admin_rule if {
	input.action == "ref.retention"
	input.ref.type == "tag"
	is_admin
}

denials contains tag_immutable_rule if {
	input.action == "ref.assign"
	input.ref.type == "tag"
	not is_admin
}

denials contains tag_immutable_rule if {
	input.action == "ref.delete"
	input.ref.type == "tag"
	not is_admin
}

denials contains tag_immutable_rule if {
	input.action == "ref.retention"
	input.ref.type == "tag"
	not is_admin
}

tag_admin_rule := sprintf("group %s may move and delete tags", [config.groups.admins])

tag_immutable_rule := sprintf("tags are immutable except for group %s", [config.groups.admins])

denials contains sprintf("%s is read-only: writes land on branches", [write_ref_desc]) if {
	kind != "ref"
	kind != "admin"
	write_ref.type != "branch"
}

# --- per-namespace groups ---------------------------------------------

# A namespace listed in config.namespace_groups may be written only by
# members of its group, on any branch and through merges too, on top of
# the branch rules.
denials contains sprintf("write to %s requires group %s", [concat(".", c.key), group]) if {
	some c in input.contents
	group := config.namespace_groups[c.key[0]]
	not group in input.principal.groups
}

# --- object storage ---------------------------------------------------

# storage.read (GET, HEAD, listing) and storage.write (PUT, multipart
# uploads) ask to have an object-store request for one table's file
# signed; input.storage says which. floe has already refused deletions,
# other buckets and keys outside the table's locations. A read is
# allowed above, as any read; a write lands on input.ref and is decided
# by the branch rules as a table write is: main only through merges,
# users/<id>/ by <id>, ingest/ by group ingest, never on a tag, and the
# per-namespace groups through input.contents. No rule here may allow
# what floe refused: a bundle never sees a deletion.
