# floe's default authorization policy. The engine asks for
# data.floe.authz.decision and expects {"allow": bool, "reasons": [string]}.
#
# Reads are open to every authenticated principal. Writes land on one
# branch (the target of a merge or transplant, the ref otherwise) and are
# allowed when some branch rule allows them and no rule denies them:
# explicit denials (main, tags, per-namespace groups) always win.
# Group names come from data.floe.config so operators can rename them.
package floe.authz

import data.floe.config

# Equality tests on input.action, rather than membership in a set, let
# OPA's rule index pick the matching rules without evaluating the others.
merge_action if input.action == "merge"

merge_action if input.action == "transplant"

ref_action if input.action == "ref.create"

ref_action if input.action == "ref.assign"

ref_action if input.action == "ref.delete"

tag_change if input.action == "ref.assign"

tag_change if input.action == "ref.delete"

decision := {"allow": false, "reasons": [sprintf("input version %v is not supported by this policy (want 1)", [input_version])]} if {
	not input.version == 1
} else := {"allow": false, "reasons": ["authentication required"]} if {
	not authenticated
} else := {"allow": true, "reasons": ["reads are allowed for every authenticated principal"]} if {
	input.action == "read"
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

in_group(role) if config.groups[role] in input.principal.groups

# The ref a write lands on: the target of a merge or transplant, the ref
# itself for every other action.
write_ref := input.target if merge_action

write_ref := input.ref if not merge_action

default write_ref_desc := "an unnamed ref"

write_ref_desc := sprintf("%s %s", [write_ref.type, write_ref.name]) if write_ref.name != ""

write_ref_desc := sprintf("%s ref", [write_ref.type]) if write_ref.name == ""

branch_write if write_ref.type == "branch"

# Content writes and merges: everything that is neither a read nor a
# ref operation.
content_write if {
	input.action != "read"
	not ref_action
}

# --- main -------------------------------------------------------------

on_main if {
	branch_write
	write_ref.name == "main"
}

main_rule := sprintf("main is written only through merges by group %s", [config.groups.publishers])

denials contains "branch main can never be deleted" if {
	on_main
	input.action == "ref.delete"
}

denials contains main_rule if {
	on_main
	not merge_action
	input.action != "ref.delete"
}

denials contains main_rule if {
	on_main
	merge_action
	not in_group("publishers")
}

allows contains sprintf("group %s may merge into main", [config.groups.publishers]) if {
	on_main
	merge_action
	in_group("publishers")
}

# --- users/<id>/ ------------------------------------------------------

branch_owner := parts[1] if {
	branch_write
	parts := split(write_ref.name, "/")
	parts[0] == "users"
	parts[1] != ""
}

allows contains sprintf("users/%s/ branches belong to %s", [branch_owner, branch_owner]) if {
	branch_owner == input.principal.id
}

# --- ingest/ ----------------------------------------------------------

allows contains sprintf("ingest/ branches are writable by group %s", [config.groups.ingest]) if {
	branch_write
	startswith(write_ref.name, "ingest/")
	in_group("ingest")
}

# --- admins -----------------------------------------------------------

# Admins manage branch refs; the main rule above still applies to them
# because denials win over allows.
allows contains sprintf("group %s may manage branches", [config.groups.admins]) if {
	branch_write
	ref_action
	in_group("admins")
}

# --- tags and detached refs -------------------------------------------

allows contains "any authenticated principal may create tags" if {
	input.action == "ref.create"
	input.ref.type == "tag"
}

allows contains sprintf("group %s may move and delete tags", [config.groups.admins]) if {
	tag_change
	input.ref.type == "tag"
	in_group("admins")
}

denials contains sprintf("tags are immutable except for group %s", [config.groups.admins]) if {
	tag_change
	input.ref.type == "tag"
	not in_group("admins")
}

denials contains sprintf("%s is read-only: writes land on branches", [write_ref_desc]) if {
	content_write
	not branch_write
}

# --- per-namespace groups ---------------------------------------------

# A namespace listed in config.namespace_groups may be written only by
# members of its group, on any branch and through merges too, on top of
# the branch rules.
denials contains sprintf("write to %s requires group %s", [concat(".", c.key), group]) if {
	input.action != "read"
	some c in input.contents
	group := config.namespace_groups[c.key[0]]
	not group in input.principal.groups
}
