package catalog

import (
	"maps"
	"slices"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
)

// Every table floe serves carries icebergtable.SharedFileProperties
// (gc.enabled=false, write.metadata.delete-after-commit.enabled=false): a
// create gets them, every answer holding metadata shows them, and a commit
// writes them. A request that would turn either on is refused, so an
// engine never deletes files another branch may still read.

// sharedFilesReason ends every refusal: why, and what deletes files.
const sharedFilesReason = "catalog branches share data and metadata files, so an engine deleting files " +
	"(DROP TABLE ... PURGE, expire_snapshots, remove_orphan_files, deleting old metadata files after a commit) " +
	"may corrupt other branches' tables; floe keeps gc.enabled=false and " +
	"write.metadata.delete-after-commit.enabled=false on every table, and `floe gc` deletes the files " +
	"that no branch, tag or retained commit references"

// CheckCreateProperties refuses a create whose properties turn on a
// shared-file property.
func CheckCreateProperties(id Identifier, props map[string]string) error {
	if k, ok := refusedProperty(props); ok {
		return badRequest("cannot create table %s with %s=%s: %s", id, k, props[k], sharedFilesReason)
	}
	return nil
}

// refusedProperty is the first key (in sorted order) of props that sets a
// shared-file property to anything but false.
func refusedProperty(props map[string]string) (string, bool) {
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if !icebergtable.SharedFilePropertyAllowed(k, props[k]) {
			return k, true
		}
	}
	return "", false
}

// WithSharedFileProperties is a create's properties with
// SharedFileProperties added.
func WithSharedFileProperties(props map[string]string) map[string]string {
	out := maps.Clone(props)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, icebergtable.SharedFileProperties())
	return out
}

// checkSharedFileUpdates refuses a commit that sets a shared-file property
// to anything but false, or removes one (which would leave Iceberg's
// default, true).
func checkSharedFileUpdates(id Identifier, req *TableChange) error {
	for i, u := range req.Updates {
		switch u.Action() {
		case table.UpdateSetProperties, table.UpdateRemoveProperties:
		default:
			continue
		}
		f, err := req.fieldsOf(i)
		if err != nil {
			return err
		}
		if k, ok := refusedProperty(f.Updates); ok {
			return badRequest("cannot set %s=%s on table %s: %s", k, f.Updates[k], id, sharedFilesReason)
		}
		for _, k := range f.Removals {
			if icebergtable.IsSharedFileProperty(k) {
				return badRequest("cannot remove %s from table %s: %s", k, id, sharedFilesReason)
			}
		}
	}
	return nil
}
