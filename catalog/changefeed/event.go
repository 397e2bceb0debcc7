package changefeed

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Type names what an event reports. Values are part of the API.
type Type string

// The event types. A commit, merge or transplant event comes first among
// the events of one new commit, followed by one event per catalog entry
// the commit changed.
const (
	NamespaceCreated Type = "namespace.created"
	NamespaceUpdated Type = "namespace.updated"
	NamespaceDropped Type = "namespace.dropped"

	TableCreated Type = "table.created"
	TableUpdated Type = "table.updated"
	TableRenamed Type = "table.renamed"
	TableDropped Type = "table.dropped"

	ViewCreated Type = "view.created"
	ViewUpdated Type = "view.updated"
	ViewRenamed Type = "view.renamed"
	ViewDropped Type = "view.dropped"

	BranchCreated Type = "branch.created"
	BranchMoved   Type = "branch.moved" // assigned to another commit, not by a commit of its own
	BranchDeleted Type = "branch.deleted"
	// BranchExpired is a branch the retention sweep deleted past its
	// maximum age (housekeeping/refretention); RefMove.Reason says why.
	BranchExpired Type = "branch.expired"
	TagCreated    Type = "tag.created"
	TagMoved      Type = "tag.moved"
	TagDeleted    Type = "tag.deleted"
	TagExpired    Type = "tag.expired"

	// CommitMade is a new commit on a branch (a Nessie or Iceberg commit,
	// or one the branch received by a move that descends from its head).
	CommitMade Type = "commit"
	// MergeMade is a merge commit: the branch received a source's changes.
	MergeMade Type = "merge"
	// TransplantMade is one commit replayed onto the branch.
	TransplantMade Type = "transplant"

	// QueueChanged is a merge-queue request's change of state, on its
	// target branch (catalogevents.go).
	QueueChanged Type = "queue.changed"
	// GCCompleted is a garbage collection run that deleted files; it is
	// on no reference.
	GCCompleted Type = "gc.completed"
	// PolicyActivated is a policy bundle a replica activated; it is on
	// no reference.
	PolicyActivated Type = "policy.activated"
)

// Types lists every event type, in the order of the constants.
func Types() []Type {
	return []Type{
		NamespaceCreated, NamespaceUpdated, NamespaceDropped,
		TableCreated, TableUpdated, TableRenamed, TableDropped,
		ViewCreated, ViewUpdated, ViewRenamed, ViewDropped,
		BranchCreated, BranchMoved, BranchDeleted, BranchExpired,
		TagCreated, TagMoved, TagDeleted, TagExpired,
		CommitMade, MergeMade, TransplantMade,
		QueueChanged, GCCompleted, PolicyActivated,
	}
}

// ErrInvalidCursor reports a cursor that is not one; ErrInvalidType an
// unknown event type in a filter.
var (
	ErrInvalidCursor = errors.New("invalid cursor")
	ErrInvalidType   = errors.New("invalid event type")
)

// ParseTypes reads a filter of event types: names, or a category and a
// star ("table.*" is every table event). Unknown names are an error, so a
// misspelt filter does not silently match nothing.
func ParseTypes(names []string) ([]Type, error) {
	var out []Type
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		matched := false
		for _, t := range Types() {
			if string(t) == n || (strings.HasSuffix(n, ".*") && strings.HasPrefix(string(t), strings.TrimSuffix(n, "*"))) {
				matched = true
				if !slices.Contains(out, t) {
					out = append(out, t)
				}
			}
		}
		if !matched {
			return nil, fmt.Errorf("%w: %q (known: %s, or a category such as table.*)", ErrInvalidType, n, joinTypes(Types()))
		}
	}
	return out, nil
}

func joinTypes(ts []Type) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// Event is one thing that happened in the catalog. Every event names the
// reference it happened on, the commit, who did it and when; the part
// that depends on its kind is in Move, Commit or Content.
type Event struct {
	// ID is the event's cursor: reading after it resumes just past it.
	ID   Cursor `json:"id"`
	Type Type   `json:"type"`
	// Ref is the branch or tag; RefType "BRANCH" or "TAG". Both are
	// empty for an event about the catalog as a whole (gc.completed,
	// policy.activated).
	Ref     string `json:"ref"`
	RefType string `json:"refType"`
	// Commit is the commit the event is about: the new commit of a
	// commit, merge, transplant or content event, the new head of a ref
	// move, the last head of a deleted ref.
	Commit string `json:"commit"`
	// Principal moved the reference (for a commit, the committer).
	Principal string    `json:"principal"`
	Time      time.Time `json:"time"`

	Move    *RefMove       `json:"move,omitempty"`
	Details *CommitDetails `json:"commitDetails,omitempty"`
	Content *ContentChange `json:"content,omitempty"`

	Queue  *QueueChange      `json:"queue,omitempty"`
	GC     *GCRun            `json:"gc,omitempty"`
	Policy *PolicyActivation `json:"policy,omitempty"`
}

// RefMove describes branch.* and tag.* events.
type RefMove struct {
	// From is the previous head ("" for a created ref), To the new one
	// ("" for a deleted ref).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// FastForward: To descends from From, so nothing was lost from the
	// ref's history (a merge queue landing is one).
	FastForward bool `json:"fastForward,omitempty"`
	// Reason is why a branch.expired or tag.expired reference expired,
	// as the retention sweep recorded it in the reference log: its
	// maximum age, where that came from, and its last activity.
	Reason string `json:"reason,omitempty"`
}

// CommitDetails describes commit, merge and transplant events.
type CommitDetails struct {
	Parents []string `json:"parents"`
	Message string   `json:"message,omitempty"`
	Author  string   `json:"author,omitempty"`
	// Source is the merged commit of a merge (its second parent).
	Source string `json:"source,omitempty"`
	// Operation is the Iceberg operation the commit recorded
	// (icebergtable.PropOperation): create, append, transaction, ...
	Operation string `json:"operation,omitempty"`
	// Keys are the catalog entries the commit changed, in key order.
	Keys [][]string `json:"keys,omitempty"`
	// Properties are the commit's properties as stored (merge
	// provenance, the merge queue's request, Iceberg operation records).
	Properties map[string]string `json:"properties,omitempty"`
	// Tables says, for a merge or transplant, how each Iceberg table it
	// changed was merged, in key order.
	Tables []TableMerge `json:"tables,omitempty"`
}

// TableMerge is how a merge or transplant brought one table's change.
// Class and Resolution are what the merge commit recorded for a table the
// merge engine resolved (both sides changed it): the classification
// (disjoint, partition-overlap, file-conflict, fast-forward when every
// snapshot was already there) and what was done (cherry-picked, replayed,
// row-merged, already-merged). A merge's table the target had not
// changed since the merge base is Class fast-forward with no
// Resolution; one both sides changed that the engine did not resolve
// (the caller's merge mode, such as FORCE, decided) has Resolution
// merge-mode and no Class. A transplant reports only what it recorded.
type TableMerge struct {
	Key        []string `json:"key"`
	Class      string   `json:"class,omitempty"`
	Resolution string   `json:"resolution,omitempty"`
}

// ResolutionMergeMode is TableMerge.Resolution of a table both sides
// changed whose merge the caller's merge mode decided.
const ResolutionMergeMode = "merge-mode"

// ContentChange describes namespace.*, table.* and view.* events.
type ContentChange struct {
	// Key is the entry's namespace elements and name; PreviousKey is its
	// key before a rename.
	Key         []string `json:"key"`
	PreviousKey []string `json:"previousKey,omitempty"`
	// ID is the entry's content id, stable across updates and renames.
	ID string `json:"contentId,omitempty"`
	// Via is how the change reached the branch: "commit", "merge",
	// "transplant", or "assign" when the branch was moved to a commit
	// that does not descend from its head and the change is the
	// difference of the two trees.
	Via string `json:"via"`
	// Count is how many content events the commit (or, for via
	// "assign", the move) brought, this one included: events of one
	// request share Commit, and a consumer knows when it has all of them.
	Count   int            `json:"count"`
	Iceberg *IcebergChange `json:"iceberg,omitempty"`
	// Properties are a namespace's properties after it was created or
	// updated; UpdatedProperties and RemovedProperties name those an
	// update set and removed, in order.
	Properties        map[string]string `json:"properties,omitempty"`
	UpdatedProperties []string          `json:"updatedProperties,omitempty"`
	RemovedProperties []string          `json:"removedProperties,omitempty"`
}

// IcebergChange is what a table or view event knows of the Iceberg
// metadata: the store's fields always, the snapshot summary when the
// feed reads summaries and the metadata file is readable.
type IcebergChange struct {
	// Operation is the table's snapshot operation (append, overwrite,
	// replace, delete) or another recorded operation (create, drop,
	// rename, update, ...), when the commit recorded one for this table.
	Operation string `json:"operation,omitempty"`
	// Changes are the commit's changes to this table, in order
	// (icebergtable.PropChanges): schema-change, append, ...
	Changes                  []string `json:"changes,omitempty"`
	MetadataLocation         string   `json:"metadataLocation,omitempty"`
	PreviousMetadataLocation string   `json:"previousMetadataLocation,omitempty"`
	SnapshotID               int64    `json:"snapshotId,omitempty"`
	PreviousSnapshotID       int64    `json:"previousSnapshotId,omitempty"`
	// UUID is the table-uuid or view-uuid of the metadata.
	UUID string `json:"uuid,omitempty"`
	// SchemaID, SpecID and SortOrderID (tables) and VersionID (views)
	// are the current ids after the change, each given when the entry was
	// created or the id changed.
	SchemaID    *int32 `json:"schemaId,omitempty"`
	SpecID      *int32 `json:"specId,omitempty"`
	SortOrderID *int32 `json:"sortOrderId,omitempty"`
	VersionID   *int64 `json:"versionId,omitempty"`
	// Summary is the current snapshot's summary (added-records,
	// deleted-records, added-data-files, deleted-data-files,
	// changed-partition-count, ...), when the snapshot changed.
	Summary map[string]string `json:"summary,omitempty"`
}
