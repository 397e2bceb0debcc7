# Change control for protected branches. A write landing on a protected
# branch must be a merge or transplant from a release branch by a
# publisher; within it, deletes need admins, schema changes need schema
# owners, and more than max_merge_tables changed entries need admins.
# Every denial is reported, so a refused merge lists everything to fix.
package floe.authz

import data.floe.config

decision := {"allow": false, "reasons": ["authentication required"]} if {
	not authenticated
} else := {"allow": true, "reasons": ["reads are open"]} if {
	input.action == "read"
} else := {"allow": false, "reasons": sort(denials)} if {
	count(denials) > 0
} else := {"allow": true, "reasons": [reason]} if {
	some reason in allows
} else := {"allow": false, "reasons": ["no rule allows this write"]}

authenticated if {
	input.principal.anonymous == false
	count(input.principal.id) > 0
}

in_group(name) if config.groups[name] in input.principal.groups

merges := {"merge", "transplant"}

landing := input.target if input.action in merges

landing := input.ref if not input.action in merges

protected if {
	landing.type == "branch"
	landing.name in config.protected
}

from_release if {
	some prefix in config.release_prefixes
	startswith(input.ref.name, prefix)
}

entries := [concat(".", c.key) | some c in input.contents]

deleted := {concat(".", c.key) | some c in input.contents; c.change == "delete"}

schema_changed := {concat(".", c.key) |
	some c in input.contents
	"schema-change" in object.get(c, ["iceberg", "operations"], [])
}

denials contains sprintf("%s %q changes only through merges", [landing.type, landing.name]) if {
	protected
	not input.action in merges
	not input.action == "ref.create"
}

denials contains sprintf("merges into %s come from %s branches, not %q", [landing.name, concat(" or ", config.release_prefixes), input.ref.name]) if {
	protected
	input.action in merges
	not from_release
}

denials contains sprintf("merging into %s needs group %s", [landing.name, config.groups.publishers]) if {
	protected
	input.action in merges
	not in_group("publishers")
}

denials contains sprintf("deleting %s on %s needs group %s", [key, landing.name, config.groups.admins]) if {
	protected
	some key in deleted
	not in_group("admins")
}

denials contains sprintf("schema change of %s on %s needs group %s", [key, landing.name, config.groups.schema_owners]) if {
	protected
	some key in schema_changed
	not in_group("schema_owners")
}

denials contains sprintf("a merge of %d entries into %s needs group %s (limit %d)", [count(entries), landing.name, config.groups.admins, config.max_merge_tables]) if {
	protected
	count(entries) > config.max_merge_tables
	not in_group("admins")
}

denials contains sprintf("release tag %q must look like v1.2.3", [input.ref.name]) if {
	input.action == "ref.create"
	input.ref.type == "tag"
	startswith(input.ref.name, "v")
	not regex.match(`^v[0-9]+\.[0-9]+\.[0-9]+$`, input.ref.name)
}

denials contains "tags never move" if {
	input.ref.type == "tag"
	input.action in {"ref.assign", "ref.delete"}
	not in_group("admins")
}

denials contains "writes land on branches" if {
	landing.type != "branch"
	input.action != "ref.create"
	not input.ref.type == "tag"
}

allows contains "protected branches change through approved merges" if {
	protected
	input.action in merges
}

allows contains "open branch" if {
	landing.type == "branch"
	not protected
}

allows contains "protected branches are created by admins" if {
	protected
	input.action == "ref.create"
	in_group("admins")
}

allows contains "tags" if input.ref.type == "tag"
