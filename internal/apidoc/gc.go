package apidoc

import "time"

// Outcomes of a garbage collection run.
const (
	GCOutcomeOK       = "ok"
	GCOutcomeError    = "error"
	GCOutcomeCanceled = "canceled"
)

// Verdicts of a garbage collection on one file.
const (
	// GCVerdictLive: a live reference reaches it.
	GCVerdictLive = "live"
	// GCVerdictDelete: nothing reaches it and it is older than the grace
	// period: deleted (a dry run: would be).
	GCVerdictDelete = "delete"
	// GCVerdictKept: nothing reaches it, but it is kept (younger than the
	// grace period, or under a table with missing files).
	GCVerdictKept = "kept"
	// GCVerdictNotFound: no warehouse listed it.
	GCVerdictNotFound = "not-found"
)

// GCReport is what one run did (or, for a dry run, would do).
type GCReport struct {
	ID              string    `json:"id"`
	Started         time.Time `json:"started"`
	Finished        time.Time `json:"finished"`
	DurationSeconds float64   `json:"durationSeconds"`
	DryRun          bool      `json:"dryRun"`
	Principal       string    `json:"principal,omitempty"`
	// Grace is the grace period the run used, as a Go duration.
	Grace string `json:"grace"`
	// Outcome is ok, error or canceled; Error says why when not ok.
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`

	// MarkSeconds is the first mark's time, until the references held
	// still; the rest of DurationSeconds is the sweep (with its re-marks).
	MarkSeconds float64 `json:"markSeconds"`

	// The mark.
	MarkRounds        int   `json:"markRounds"`
	Refs              int   `json:"refs"`
	Commits           int64 `json:"commits"`
	Contents          int64 `json:"contents"`
	MetadataFilesRead int64 `json:"metadataFilesRead"`
	ManifestListsRead int64 `json:"manifestListsRead"`
	ManifestsRead     int64 `json:"manifestsRead"`
	// Marked counts files marked live (a file reached twice counts
	// twice).
	Marked int64 `json:"marked"`

	// The sweep.
	Listed      int64 `json:"listed"`
	ListedBytes int64 `json:"listedBytes"`
	Live        int64 `json:"live"`
	LiveBytes   int64 `json:"liveBytes"`
	// Young are unreferenced files kept for being younger than the grace
	// period; Protected, unreferenced files kept under a table some of
	// whose files are missing.
	Young      int64 `json:"young"`
	YoungBytes int64 `json:"youngBytes"`
	Protected  int64 `json:"protected"`
	// Deleted are the files deleted; in a dry run, those that would be.
	Deleted      int64 `json:"deleted"`
	DeletedBytes int64 `json:"deletedBytes"`
	DeleteErrors int64 `json:"deleteErrors"`
	// Revived are files this run deleted that a commit landing during
	// the sweep made live again (README.md, "Concurrency"): they are
	// lost, and the run failed on finding them.
	Revived int64 `json:"revived,omitempty"`

	// Tables break Deleted down by the table whose location holds the
	// files (Unreferenced when no live table's does), with the kept ones.
	Tables []GCTableSummary `json:"tables"`
	// Files lists deleted files, up to gc.RunOptions.ListFiles.
	Files []GCFileVerdict `json:"files,omitempty"`
	// Explained are the verdicts on gc.RunOptions.Explain's locations.
	Explained []GCFileVerdict `json:"explained,omitempty"`
	Warnings  []string        `json:"warnings,omitempty"`
}

// GCTableSummary is one table's share of a run.
type GCTableSummary struct {
	Table string `json:"table"`
	// Files and Bytes were deleted (would be, in a dry run).
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
	// KeptFiles are not live but kept (grace period, missing files).
	KeptFiles int64 `json:"keptFiles"`
}

// GCFileVerdict is the decision on one file, and why.
type GCFileVerdict struct {
	Location string    `json:"location"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified,omitzero"`
	Table    string    `json:"table,omitempty"`
	Verdict  string    `json:"verdict"`
	Reason   string    `json:"reason"`
}
