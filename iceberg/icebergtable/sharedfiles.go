package icebergtable

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
)

// Catalog branches share data and metadata files: a table on a branch
// starts as its parent's table, and a file written on one branch stays
// reachable from every branch, tag and commit that saw it. An engine that
// deletes files itself (Spark's DROP TABLE ... PURGE, expire_snapshots,
// remove_orphan_files; Java's delete-after-commit of old metadata files)
// sees only one branch's table and would delete files others still read.
// Iceberg's engines refuse those deletions when gc.enabled is false, so
// every table floe serves carries these two properties, as Nessie's do;
// deleting unreferenced files is the job of floe's reference-aware
// garbage collector (`floe gc`).
const (
	PropGCEnabled                 = "gc.enabled"
	PropMetadataDeleteAfterCommit = "write.metadata.delete-after-commit.enabled"
)

// SharedFileProperties returns the table properties every table floe
// serves carries, each "false".
func SharedFileProperties() map[string]string {
	return map[string]string{PropGCEnabled: "false", PropMetadataDeleteAfterCommit: "false"}
}

// IsSharedFileProperty reports whether key is one of SharedFileProperties.
func IsSharedFileProperty(key string) bool {
	return key == PropGCEnabled || key == PropMetadataDeleteAfterCommit
}

// SharedFilePropertyAllowed reports whether a client may set key to value:
// any value for other keys, only "false" (in any case) for the shared-file
// properties. Java reads any other value as false too, except "true"; a
// value floe would have to guess about is refused rather than stored.
func SharedFilePropertyAllowed(key, value string) bool {
	return !IsSharedFileProperty(key) || strings.EqualFold(value, "false")
}

// hasSharedFileProperties reports whether props already holds
// SharedFileProperties exactly.
func hasSharedFileProperties(props map[string]string) bool {
	for k, v := range SharedFileProperties() {
		if props[k] != v {
			return false
		}
	}
	return true
}

// ServedJSON is the metadata as floe serves it: JSON with
// SharedFileProperties set, whatever the file holds. Files floe wrote
// since it sets them are served as is (JSON itself); a file written
// before, registered, or committed through the Nessie API without them is
// re-encoded once per cached MetadataFile (the top-level keys then come in
// sorted order), and the file is not rewritten: the table's next commit
// writes the properties. The copy is not counted in the cache's weight;
// it exists only for such tables, until their next commit.
func (f *MetadataFile) ServedJSON() (json.RawMessage, error) {
	if hasSharedFileProperties(PropertiesOf(f.Metadata)) {
		return f.JSON, nil
	}
	f.servedOnce.Do(func() {
		var doc map[string]json.RawMessage
		// It parsed before, so this cannot fail in practice; if it does,
		// the error names the file without quoting it, as parsing does.
		err := json.Unmarshal(f.Raw, &doc)
		if err == nil {
			err = setSharedFileProperties(doc)
		}
		if err == nil {
			f.servedJSON, err = json.Marshal(doc)
		}
		if err != nil {
			f.servedErr = &InvalidMetadataError{Location: f.Location, Kind: "table", cause: err}
		}
	})
	return f.servedJSON, f.servedErr
}

// setSharedFileProperties sets SharedFileProperties in the "properties"
// object of a decoded metadata document.
func setSharedFileProperties(doc map[string]json.RawMessage) error {
	props := map[string]string{}
	if raw, ok := doc["properties"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &props); err != nil {
			return fmt.Errorf("properties: %w", err)
		}
	}
	maps.Copy(props, SharedFileProperties())
	b, err := json.Marshal(props)
	if err != nil {
		return err
	}
	doc["properties"] = b
	return nil
}
