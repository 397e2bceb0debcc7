# Team ownership of namespaces. data.floe.teams maps a team to the group
# of its members and the namespaces it owns (the first element of a
# content key). A write is allowed when it lands on a branch the
# principal's team may write and every entry it changes belongs to one of
# the principal's teams. Denials name each offending key.
package floe.authz

import data.floe.teams

decision := {"allow": false, "reasons": ["authentication required"]} if {
	not authenticated
} else := {"allow": true, "reasons": ["every authenticated principal may read"]} if {
	input.action == "read"
} else := {"allow": false, "reasons": sort(denials)} if {
	count(denials) > 0
} else := {"allow": true, "reasons": sort(allows)} if {
	count(allows) > 0
} else := {"allow": false, "reasons": [sprintf("no rule allows %s on %s %q", [input.action, landing.type, landing.name])]}

authenticated if {
	not input.principal.anonymous
	is_string(input.principal.id)
	input.principal.id != ""
}

# The teams: every entry of data.floe.teams with a group.
team_names := {name | some name, t in teams; is_object(t)}

my_teams := {name |
	some name in team_names
	some g in input.principal.groups
	g == teams[name].group
}

is_platform if teams.platform_group in input.principal.groups

owned := {ns | some t in my_teams; some ns in teams[t].namespaces}

owners_of(ns) := {t | some t in team_names; ns in teams[t].namespaces}

merges := {"merge", "transplant"}

landing := input.target if input.action in merges

landing := input.ref if not input.action in merges

# The team of a teams/<team>/... branch.
branch_team := split(landing.name, "/")[1] if {
	landing.type == "branch"
	startswith(landing.name, "teams/")
}

changed := [c | some c in input.contents]

denials contains sprintf("%s belongs to team %s", [concat(".", c.key), concat(", ", sort(owners_of(c.key[0])))]) if {
	some c in changed
	count(owners_of(c.key[0])) > 0
	not c.key[0] in owned
	not is_platform
}

denials contains sprintf("%s is in namespace %s, which no team owns: only %s may write it", [concat(".", c.key), c.key[0], teams.platform_group]) if {
	some c in changed
	count(owners_of(c.key[0])) == 0
	not is_platform
}

denials contains "tags are immutable" if {
	landing.type == "tag"
	input.action != "ref.create"
}

denials contains sprintf("main is written only through merges, not %s", [input.action]) if {
	landing.type == "branch"
	landing.name == "main"
	not input.action in merges
}

denials contains "detached refs are read-only" if landing.type == "detached"

allows contains sprintf("team %s writes its own branches", [branch_team]) if {
	branch_team in my_teams
}

allows contains "teams merge what they own into main" if {
	input.action in merges
	landing.name == "main"
	count(my_teams) > 0
	count(changed) > 0
	every c in changed {
		c.key[0] in owned
	}
}

allows contains "the platform group may write every branch" if {
	is_platform
	landing.type == "branch"
}

allows contains "team members may tag" if {
	input.action == "ref.create"
	landing.type == "tag"
	count(my_teams) > 0
}
