# Role-based access: readers read, writers write branches other than
# main, publishers merge into main. Group names are in data.floe.config.
package floe.authz

import data.floe.config

decision := {"allow": false, "reasons": ["authentication required"]} if {
	not authenticated
} else := {"allow": true, "reasons": ["readers and writers may read every ref"]} if {
	input.action == "read"
	can_read
} else := {"allow": false, "reasons": [sprintf("reading needs one of the groups %s", [concat(", ", sort(readers | writers))])]} if {
	input.action == "read"
} else := {"allow": false, "reasons": ["analysts have read-only access"]} if {
	count(my_groups & readers) > 0
	count(my_groups & (writers | publishers)) == 0
} else := {"allow": true, "reasons": [reason]} if {
	some reason in allows
} else := {"allow": false, "reasons": [sprintf("no rule allows %s on %s %q", [input.action, landing.type, landing.name])]}

authenticated if {
	input.principal.anonymous == false
	input.principal.id != ""
}

readers := {g | some g in config.readers}

writers := {g | some g in config.writers}

publishers := {g | some g in config.publishers}

# The principal's groups as a set; no groups (null) is the empty set.
my_groups := {g | some g in input.principal.groups; is_string(g)}

can_read if count(my_groups & (readers | writers | publishers)) > 0

is_writer if count(my_groups & writers) > 0

is_publisher if count(my_groups & publishers) > 0

merges := {"merge", "transplant"}

# The ref a write lands on: the target of a merge, the ref otherwise.
landing := input.target if input.action in merges

landing := input.ref if not input.action in merges

allows contains "writers may write branches other than main" if {
	is_writer
	landing.type == "branch"
	landing.name != "main"
}

allows contains "publishers merge into main" if {
	is_publisher
	input.action in merges
	landing.type == "branch"
	landing.name == "main"
}

allows contains "writers may create tags" if {
	is_writer
	input.action == "ref.create"
	input.ref.type == "tag"
}
