# Pipelines own branch prefixes; the merge queue is the only writer of the
# protected branches. data.floe.pipelines maps a pipeline's principal id
# to the branch prefixes it writes and the namespaces (first element of a
# content key) it may change. Denials win over allows and name the reason.
package floe.authz

import data.floe.pipelines as conf

decision := {"allow": false, "reasons": ["authentication required"]} if {
	not authenticated
} else := {"allow": true, "reasons": ["every authenticated principal may read"]} if {
	input.action == "read"
} else := {"allow": false, "reasons": sort(denials)} if {
	count(denials) > 0
} else := {"allow": true, "reasons": sort(allows)} if {
	count(allows) > 0
} else := {"allow": false, "reasons": [sprintf("no rule allows %s on %s %q for %s", [input.action, landing.type, landing.name, input.principal.id])]}

authenticated if {
	not input.principal.anonymous
	is_string(input.principal.id)
	input.principal.id != ""
}

is_queue if input.principal.id == conf.queue_principal

is_platform if conf.platform_group in input.principal.groups

# The pipeline the principal is, if any.
pipeline := conf.pipelines[input.principal.id]

merges := {"merge", "transplant"}

# A request to the merge queue (see README.md for the assumed names).
is_queue_request if startswith(input.action, "queue.")

landing := input.target if input.action in merges

landing := input.ref if not input.action in merges

protected_landing if {
	landing.type == "branch"
	landing.name in conf.protected
}

# under_own_prefix(ref): ref is a branch under one of the pipeline's prefixes.
under_own_prefix(ref) if {
	ref.type == "branch"
	some p in pipeline.prefixes
	startswith(ref.name, p)
}

changed := [c | some c in input.contents]

denials contains sprintf("only the merge queue (%s) writes %s: ask the queue to publish your branch", [conf.queue_principal, landing.name]) if {
	protected_landing
	not is_queue
	not is_queue_request
}

denials contains sprintf("%s changes only through merges, not %s", [landing.name, input.action]) if {
	protected_landing
	is_queue
	not input.action in merges
}

denials contains "tags are immutable" if {
	landing.type == "tag"
	input.action != "ref.create"
}

denials contains "detached refs are read-only" if landing.type == "detached"

denials contains sprintf("%s may not write namespace %s (%s)", [input.principal.id, c.key[0], concat(".", c.key)]) if {
	not is_queue
	not is_queue_request
	some c in changed
	not c.key[0] in pipeline.namespaces
}

allows contains "the merge queue publishes to protected branches" if {
	is_queue
	input.action in merges
	protected_landing
}

allows contains sprintf("pipeline %s writes its own branches", [input.principal.id]) if {
	not input.action in merges
	not is_queue_request
	under_own_prefix(input.ref)
}

allows contains sprintf("pipeline %s merges between its own branches", [input.principal.id]) if {
	input.action in merges
	under_own_prefix(input.ref)
	under_own_prefix(input.target)
}

allows contains sprintf("pipeline %s asks the merge queue to publish its branch", [input.principal.id]) if {
	is_queue_request
	under_own_prefix(input.ref)
}

allows contains "the platform group creates tags" if {
	is_platform
	input.action == "ref.create"
	landing.type == "tag"
}

allows contains "the platform group deletes branches" if {
	is_platform
	input.action == "ref.delete"
	landing.type == "branch"
}
