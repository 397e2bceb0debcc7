package apidoc

import "time"

// BackupRequest is POST /admin/backup's body.
type BackupRequest struct {
	// Dir is where the backup goes, on the server's machine: an absolute
	// path that must not exist yet (its parent is created if missing).
	Dir string `json:"dir"`
}

// BackupReport is what a backup wrote: a checkpoint of the embedded
// store, itself a data directory (restore it with `floe admin restore`).
type BackupReport struct {
	Dir     string    `json:"dir"`
	Started time.Time `json:"started"`
	// Files and Bytes count the backup's files; sstables are hard links
	// to the store's own when the backup is on the same filesystem, so
	// they take no extra space until the store compacts them away.
	Files           int     `json:"files"`
	Bytes           int64   `json:"bytes"`
	DurationSeconds float64 `json:"durationSeconds"`
}

// ExportRequest is POST /admin/export's body.
type ExportRequest struct {
	// File is where the export goes, on the server's machine: an absolute
	// path that must not exist yet.
	File string `json:"file"`
	// Gzip compresses the file.
	Gzip bool `json:"gzip,omitempty"`
}

// ExportReport is what an export wrote (the counts are storeexport's).
type ExportReport struct {
	File            string    `json:"file"`
	Started         time.Time `json:"started"`
	Objects         int64     `json:"objects"`
	ObjectBytes     int64     `json:"objectBytes"`
	Log             int64     `json:"log"`
	Records         int64     `json:"records"`
	Refs            int64     `json:"refs"`
	FileBytes       int64     `json:"fileBytes"`
	DurationSeconds float64   `json:"durationSeconds"`
}
