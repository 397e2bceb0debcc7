# floe's default merge rules. The merge queue validates every candidate
# (the merge result it is about to publish) and asks data.floe.merge.check
# with the candidate's merge summary as input (merge/mergecheck/README.md
# documents the document); the rule yields {"allow": bool, "reasons":
# [string]}, and every reason of a denial is reported as the policy
# check's failure. Settings come from data.floe.config.merge so operators
# can change them without touching the rules.
package floe.merge

import data.floe.config.merge as config

check := {"allow": false, "reasons": [sprintf("merge summary version %v is not supported by this policy (want 1)", [summary_version])]} if {
	not input.version == 1
} else := {"allow": false, "reasons": sort(deny)} if {
	count(deny) > 0
} else := {"allow": true, "reasons": []}

default summary_version := null

summary_version := input.version

protected_target if input.target.ref in config.protected_targets

# A table disappears from a protected branch only on purpose: by a
# principal listed in allow_drops_by.
deny contains sprintf("table %s is dropped on %s, which only %v may do", [t.name, input.target.ref, config.allow_drops_by]) if {
	protected_target
	some t in input.tables
	t.change == "dropped"
	not input.principal in config.allow_drops_by
}

# A snapshot whose floe.operation.* record cannot be acted on would be
# replayed wrong by a later rebase: fix the writer before publishing.
deny contains sprintf("table %s: snapshot %v has an invalid operation record: %s", [t.name, s.snapshotId, s.floeOperation.invalid]) if {
	some t in input.tables
	some s in t.snapshots
	s.floeOperation.invalid != ""
}

# Records a table loses: the records of the data files removed and of
# the delete files added, less the records added (a compaction loses
# none).
lost_records(t) := (t.dataFiles.removedRecords + t.deleteFiles.addedRecords) - t.dataFiles.addedRecords

deny contains sprintf("table %s loses %d records, more than max_lost_records (%d)", [t.name, lost_records(t), config.max_lost_records]) if {
	is_number(config.max_lost_records)
	some t in input.tables
	lost_records(t) > config.max_lost_records
}
