package nessieclient

import (
	"encoding/json"
	"time"
)

// Reference types.
const (
	Branch   = "BRANCH"
	Tag      = "TAG"
	Detached = "DETACHED"
)

// Reference is a Branch, Tag or Detached hash.
type Reference struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	Hash string `json:"hash,omitempty"`
}

// Config is NessieConfiguration, as far as the client needs it.
type Config struct {
	DefaultBranch  string `json:"defaultBranch"`
	SpecVersion    string `json:"specVersion"`
	NoAncestorHash string `json:"noAncestorHash"`
}

// CommitMeta is the v2 CommitMeta.
type CommitMeta struct {
	Hash               string            `json:"hash,omitempty"`
	Committer          string            `json:"committer,omitempty"`
	Author             string            `json:"author,omitempty"`
	Authors            []string          `json:"authors,omitempty"`
	Message            string            `json:"message"`
	CommitTime         *time.Time        `json:"commitTime,omitempty"`
	AuthorTime         *time.Time        `json:"authorTime,omitempty"`
	Properties         map[string]string `json:"properties,omitempty"`
	ParentCommitHashes []string          `json:"parentCommitHashes,omitempty"`
}

// LogEntry is one commit of a log. With fetch=ALL the parents and
// operations are given too.
type LogEntry struct {
	CommitMeta        CommitMeta        `json:"commitMeta"`
	ParentCommitHash  string            `json:"parentCommitHash,omitempty"`
	AdditionalParents []string          `json:"additionalParents,omitempty"`
	Operations        []json.RawMessage `json:"operations,omitempty"`
}

// Parents are the commit's parents, first parent first, read from
// whichever fields the server filled.
func (e *LogEntry) Parents() []string {
	if len(e.CommitMeta.ParentCommitHashes) > 0 {
		return e.CommitMeta.ParentCommitHashes
	}
	if e.ParentCommitHash == "" {
		return nil
	}
	return append([]string{e.ParentCommitHash}, e.AdditionalParents...)
}

// Content is a content object, kept as the server sent it apart from the
// fields the client reads.
type Content struct {
	Type string `json:"type"`
	ID   string `json:"id,omitempty"`
	Raw  json.RawMessage
}

// UnmarshalJSON keeps the raw object alongside the typed fields.
func (c *Content) UnmarshalJSON(b []byte) error {
	var v struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	c.Type, c.ID, c.Raw = v.Type, v.ID, append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes the raw object back unchanged.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Raw != nil {
		return c.Raw, nil
	}
	type plain struct {
		Type string `json:"type"`
		ID   string `json:"id,omitempty"`
	}
	return json.Marshal(plain{c.Type, c.ID})
}

// Entry is one key of an entries listing.
type Entry struct {
	Type      string     `json:"type"`
	Name      ContentKey `json:"name"`
	ContentID string     `json:"contentId,omitempty"`
}

// ContentResponse is the answer to a single-content read.
type ContentResponse struct {
	Content            *Content  `json:"content"`
	EffectiveReference Reference `json:"effectiveReference"`
}

// DiffEntry is one changed key; From or To is nil when the key was added
// or removed.
type DiffEntry struct {
	Key  ContentKey `json:"key"`
	From *Content   `json:"from"`
	To   *Content   `json:"to"`
}

// Diff is a whole diff, all pages joined.
type Diff struct {
	Diffs                  []DiffEntry `json:"diffs"`
	EffectiveFromReference Reference   `json:"effectiveFromReference"`
	EffectiveToReference   Reference   `json:"effectiveToReference"`
}

// Conflict is one conflict of a failed commit, merge or transplant.
type Conflict struct {
	ConflictType string      `json:"conflictType"`
	Key          *ContentKey `json:"key,omitempty"`
	Message      string      `json:"message"`
}

// KeyMergeMode sets the merge behavior of one key: NORMAL, FORCE or DROP.
type KeyMergeMode struct {
	Key           ContentKey `json:"key"`
	MergeBehavior string     `json:"mergeBehavior"`
	// ExpectedTargetContent, if set, is the content the target must hold
	// for the key when the merge is made (else the key conflicts).
	ExpectedTargetContent *Content `json:"expectedTargetContent,omitempty"`
}

// MergeRequest is the body of a merge or transplant.
type MergeRequest struct {
	FromRefName         string         `json:"fromRefName,omitempty"`
	FromHash            string         `json:"fromHash,omitempty"`
	HashesToTransplant  []string       `json:"hashesToTransplant,omitempty"`
	Message             string         `json:"message,omitempty"`
	KeyMergeModes       []KeyMergeMode `json:"keyMergeModes,omitempty"`
	DefaultKeyMergeMode string         `json:"defaultKeyMergeMode,omitempty"`
	DryRun              bool           `json:"dryRun,omitempty"`
	// ReturnConflictAsResult makes a conflict a response whose
	// WasSuccessful is false instead of an error.
	ReturnConflictAsResult bool `json:"returnConflictAsResult,omitempty"`
	// Classify asks floe for its classification of each Iceberg table
	// changed on both sides and what the merge or transplant does with it
	// (not part of the body).
	Classify bool `json:"-"`
}

// MergeDetail is what a merge did, or would do, to one key.
type MergeDetail struct {
	Key           ContentKey `json:"key"`
	MergeBehavior string     `json:"mergeBehavior"`
	Conflict      *Conflict  `json:"conflict,omitempty"`
	// FloeClassification is floe's classification of the table, when
	// the request asked for it (MergeRequest.Classify).
	FloeClassification *Classification `json:"floeClassification,omitempty"`
	// FloeMerge is what the merge does (a dry run: would do) with the
	// table, given with FloeClassification when floe's merge engine
	// decided on it.
	FloeMerge *TableMerge `json:"floeMerge,omitempty"`
}

// TableMerge is what a merge does with a table both sides changed.
type TableMerge struct {
	// Action is "cherry-pick", "already-merged", "refuse", or "force"
	// (the key's merge behavior is FORCE and the target changed the
	// table: Discards says what the merge throws away of the target).
	Action    string   `json:"action"`
	Snapshots int      `json:"snapshots"`
	Reason    string   `json:"reason"`
	Discards  *Discard `json:"discards,omitempty"`
}

// Discard is what a merge that takes the source's version of a table
// whole (FORCE) throws away of the target since the merge base (floe's
// classify.Discard, the parts the CLI shows).
type Discard struct {
	Key       []string `json:"key"`
	Snapshots []struct {
		SnapshotID  int64  `json:"snapshotId"`
		Operation   string `json:"operation"`
		TimestampMs int64  `json:"timestampMs"`
	} `json:"snapshots"`
	DataFiles          FileChangeCounts `json:"dataFiles"`
	DeleteFiles        FileChangeCounts `json:"deleteFiles"`
	StructuralChanges  []string         `json:"structuralChanges"`
	TargetDropped      bool             `json:"targetDropped"`
	SourceDropped      bool             `json:"sourceDropped"`
	TargetTotalRecords int64            `json:"targetTotalRecords"`
	Diverged           string           `json:"diverged"`
	Unreadable         string           `json:"unreadable"`
	Summary            string           `json:"summary"`
}

// Classification is what floe found two branches did to an Iceberg table
// since their merge base: the parts of floe's classification document
// (merge/classify/README.md in floe's source) the CLI shows.
type Classification struct {
	Key              []string           `json:"key"`
	Class            string             `json:"class"`
	Reason           string             `json:"reason"`
	Source           ClassificationSide `json:"source"`
	Target           ClassificationSide `json:"target"`
	CommonPartitions []TablePartition   `json:"commonPartitions"`
	ConflictingFiles []string           `json:"conflictingFiles"`
}

// ClassificationSide is what one branch did to the table.
type ClassificationSide struct {
	Changed   bool `json:"changed"`
	Snapshots []struct {
		SnapshotID int64  `json:"snapshotId"`
		Operation  string `json:"operation"`
	} `json:"snapshots"`
	StructuralChanges []string         `json:"structuralChanges"`
	Partitions        []TablePartition `json:"partitions"`
	DataFiles         FileChangeCounts `json:"dataFiles"`
	DeleteFiles       FileChangeCounts `json:"deleteFiles"`
}

// TablePartition is one partition of a spec, e.g. day=2026-08-20.
type TablePartition struct {
	SpecID int32  `json:"specId"`
	Path   string `json:"path"`
}

// FileChangeCounts count the files a side added and removed.
type FileChangeCounts struct {
	AddedCount     int   `json:"addedCount"`
	RemovedCount   int   `json:"removedCount"`
	AddedRecords   int64 `json:"addedRecords"`
	RemovedRecords int64 `json:"removedRecords"`
}

// MergeResponse is the outcome of a merge or transplant.
type MergeResponse struct {
	WasApplied          bool          `json:"wasApplied"`
	WasSuccessful       bool          `json:"wasSuccessful"`
	ResultantTargetHash string        `json:"resultantTargetHash,omitempty"`
	CommonAncestor      string        `json:"commonAncestor,omitempty"`
	TargetBranch        string        `json:"targetBranch"`
	EffectiveTargetHash string        `json:"effectiveTargetHash"`
	ExpectedHash        string        `json:"expectedHash,omitempty"`
	Details             []MergeDetail `json:"details"`
}
