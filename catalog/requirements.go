package catalog

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
)

// Java clients, and Iceberg's REST compatibility kit, match the messages of
// failed requirements by their text: Java's UpdateRequirement wording
// ("Requirement failed: current schema changed: expected id 0 != 1").
// iceberg-go words them its own way, so floe rewrites the failures it
// validated with iceberg-go into Java's words. A requirement this file does
// not know keeps iceberg-go's message, with its leading "requirement"
// capitalised as Java's are.

// requirementWire holds every field of the requirement types; a
// requirement's JSON fills the ones its type has.
type requirementWire struct {
	Type                    string `json:"type"`
	UUID                    string `json:"uuid"`
	Ref                     string `json:"ref"`
	SnapshotID              *int64 `json:"snapshot-id"`
	LastAssignedFieldID     *int   `json:"last-assigned-field-id"`
	CurrentSchemaID         *int   `json:"current-schema-id"`
	LastAssignedPartitionID *int   `json:"last-assigned-partition-id"`
	DefaultSpecID           *int   `json:"default-spec-id"`
	DefaultSortOrderID      *int   `json:"default-sort-order-id"`
}

// tableRequirementFailed is the 409 for a table requirement that failed
// against base (nil for a table that does not exist) with err.
func tableRequirementFailed(rq table.Requirement, base table.Metadata, err error) *Error {
	return commitFailed("%s", tableRequirementMessage(rq, base, err))
}

func tableRequirementMessage(rq table.Requirement, base table.Metadata, err error) string {
	var w requirementWire
	raw, merr := json.Marshal(rq)
	if merr != nil || json.Unmarshal(raw, &w) != nil || base == nil {
		return capitalRequirement(err)
	}
	switch w.Type {
	case "assert-table-uuid":
		return "Requirement failed: UUID does not match: expected " + w.UUID + " != " + base.TableUUID().String()
	case "assert-ref-snapshot-id":
		return refRequirementMessage(w, base, err)
	case "assert-last-assigned-field-id":
		return changed("last assigned field id", w.LastAssignedFieldID, base.LastColumnID(), err)
	case "assert-current-schema-id":
		if s := base.CurrentSchema(); s != nil {
			return changed("current schema", w.CurrentSchemaID, s.ID, err)
		}
	case "assert-last-assigned-partition-id":
		if last := base.LastPartitionSpecID(); last != nil {
			return changed("last assigned partition id", w.LastAssignedPartitionID, *last, err)
		}
	case "assert-default-spec-id":
		return changed("default partition spec", w.DefaultSpecID, base.DefaultPartitionSpec(), err)
	case "assert-default-sort-order-id":
		return changed("default sort order", w.DefaultSortOrderID, base.DefaultSortOrder(), err)
	}
	return capitalRequirement(err)
}

// refRequirementMessage words a failed assert-ref-snapshot-id as Java's
// AssertRefSnapshotID does; a tag named as a commit target keeps
// iceberg-go's message (Java has no such check).
func refRequirementMessage(w requirementWire, base table.Metadata, err error) string {
	for name, ref := range base.Refs() {
		if name != w.Ref {
			continue
		}
		kind := "branch"
		if ref.SnapshotRefType == table.TagRef {
			kind = "tag"
		}
		switch {
		case w.SnapshotID == nil:
			return "Requirement failed: " + kind + " " + name + " was created concurrently"
		case *w.SnapshotID != ref.SnapshotID:
			return "Requirement failed: " + kind + " " + name + " has changed: expected id " + itoa64(*w.SnapshotID) + " != " + itoa64(ref.SnapshotID)
		}
		return capitalRequirement(err)
	}
	if w.SnapshotID != nil {
		return "Requirement failed: branch or tag " + w.Ref + " is missing, expected " + itoa64(*w.SnapshotID)
	}
	return capitalRequirement(err)
}

// changed is Java's "Requirement failed: WHAT changed: expected id N != M".
func changed(what string, want *int, got int, err error) string {
	if want == nil {
		return capitalRequirement(err)
	}
	return "Requirement failed: " + what + " changed: expected id " + itoa64(int64(*want)) + " != " + itoa64(int64(got))
}

// ViewRequirementFailed is the refusal (CommitFailed) of a view
// requirement that failed against base with err.
func ViewRequirementFailed(rq view.Requirement, base view.Metadata, err error) *Error {
	var w requirementWire
	if raw, merr := json.Marshal(rq); merr == nil && json.Unmarshal(raw, &w) == nil && base != nil && w.Type == "assert-view-uuid" {
		return commitFailed("Requirement failed: view UUID does not match: expected %s != %s", w.UUID, base.ViewUUID())
	}
	return commitFailed("%s", capitalRequirement(err))
}

func capitalRequirement(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "requirement failed"); ok {
		return "Requirement failed" + rest
	}
	return msg
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
