package icebergrest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/floe-catalog/floe/catalog/changefeed"
)

// The updates of the events endpoint's create-table, register-table,
// update-table, create-view and update-view operations (views as tables,
// with their versions: diffViewDocs). floe keeps a table's resulting metadata files,
// not the updates a client sent, so the updates an event shows are
// derived by comparing the metadata file before the change with the one
// after it: the schemas, partition specs, sort orders and snapshots the
// change added, the current ids it set, the snapshots it removed, the
// references (main and the table's own branches and tags) it set or
// removed, the properties it set and removed, a new location or format
// version. That is what a client replaying the updates onto the previous
// metadata needs to reach the new one, for every field the proposal's
// TableUpdate covers save statistics and encryption keys. When a file
// cannot be read (deleted by a later expiry, or outside every warehouse)
// the event falls back to what the catalog entry records
// (tableEntryUpdates).

// tableDoc is the part of a table metadata file the updates compare;
// elements stay raw so an added one is shown exactly as the file has it.
type tableDoc struct {
	FormatVersion      int                        `json:"format-version"`
	UUID               string                     `json:"table-uuid"`
	Location           string                     `json:"location"`
	Schemas            []json.RawMessage          `json:"schemas"`
	CurrentSchemaID    *int64                     `json:"current-schema-id"`
	Specs              []json.RawMessage          `json:"partition-specs"`
	DefaultSpecID      *int64                     `json:"default-spec-id"`
	SortOrders         []json.RawMessage          `json:"sort-orders"`
	DefaultSortOrderID *int64                     `json:"default-sort-order-id"`
	Properties         map[string]string          `json:"properties"`
	Snapshots          []json.RawMessage          `json:"snapshots"`
	CurrentSnapshotID  *int64                     `json:"current-snapshot-id"`
	Refs               map[string]json.RawMessage `json:"refs"`
}

// readTableDoc reads the metadata file at loc ("": none, a nil doc).
func (a *api) readTableDoc(ctx context.Context, loc string) (*tableDoc, error) {
	if loc == "" {
		return nil, nil
	}
	f, err := a.catalog.ReadTableMetadata(ctx, loc)
	if err != nil {
		return nil, err
	}
	var d tableDoc
	if err := json.Unmarshal(f.JSON, &d); err != nil {
		return nil, fmt.Errorf("metadata file %s: %w", loc, err)
	}
	// A format 1 file may have no refs: its current snapshot is main.
	if d.Refs == nil && d.CurrentSnapshotID != nil && *d.CurrentSnapshotID >= 0 {
		ref, _ := json.Marshal(map[string]any{"snapshot-id": *d.CurrentSnapshotID, "type": "branch"})
		d.Refs = map[string]json.RawMessage{"main": ref}
	}
	return &d, nil
}

// tableEventUpdates are the updates of a table event: the difference of
// its metadata files when both (or, for a created table, the new one) can
// be read, else what the entry records.
func (a *api) tableEventUpdates(ctx context.Context, ic *changefeed.IcebergChange, created bool) []map[string]any {
	prevLoc := ic.PreviousMetadataLocation
	if created {
		prevLoc = ""
	}
	after, err := a.readTableDoc(ctx, ic.MetadataLocation)
	var before *tableDoc
	if err == nil {
		before, err = a.readTableDoc(ctx, prevLoc)
	}
	if err != nil || after == nil {
		if err != nil {
			a.logger.DebugContext(ctx, "events: metadata file unreadable, updates from the catalog entry", "location", ic.MetadataLocation, "error", err)
		}
		return tableEntryUpdates(ic, created)
	}
	return diffTableDocs(before, after)
}

// diffTableDocs lists the TableUpdates that take before (nil: a new
// table) to after, in the order a client would apply them: identity and
// format first, then each structure added before the id that makes it
// current, then snapshots and the references to them, then properties.
func diffTableDocs(before, after *tableDoc) []map[string]any {
	out := []map[string]any{}
	add := func(u map[string]any) { out = append(out, u) }
	if before == nil {
		before = &tableDoc{}
		if after.UUID != "" {
			add(map[string]any{"action": "assign-uuid", "uuid": after.UUID})
		}
	}
	if after.FormatVersion != before.FormatVersion && after.FormatVersion > 0 {
		add(map[string]any{"action": "upgrade-format-version", "format-version": after.FormatVersion})
	}
	addNew := func(action, field, idField string, was, is []json.RawMessage) {
		known := map[int64]bool{}
		for _, raw := range was {
			if id, ok := rawID(raw, idField); ok {
				known[id] = true
			}
		}
		for _, raw := range is {
			if id, ok := rawID(raw, idField); ok && !known[id] {
				add(map[string]any{"action": action, field: raw})
			}
		}
	}
	setID := func(action, field string, was, is *int64) {
		if is != nil && (was == nil || *was != *is) {
			add(map[string]any{"action": action, field: *is})
		}
	}
	addNew("add-schema", "schema", "schema-id", before.Schemas, after.Schemas)
	setID("set-current-schema", "schema-id", before.CurrentSchemaID, after.CurrentSchemaID)
	addNew("add-spec", "spec", "spec-id", before.Specs, after.Specs)
	setID("set-default-spec", "spec-id", before.DefaultSpecID, after.DefaultSpecID)
	addNew("add-sort-order", "sort-order", "order-id", before.SortOrders, after.SortOrders)
	setID("set-default-sort-order", "sort-order-id", before.DefaultSortOrderID, after.DefaultSortOrderID)
	if after.Location != before.Location && after.Location != "" {
		add(map[string]any{"action": "set-location", "location": after.Location})
	}

	kept := map[int64]bool{}
	for _, raw := range after.Snapshots {
		if id, ok := rawID(raw, "snapshot-id"); ok {
			kept[id] = true
		}
	}
	var removed []int64
	for _, raw := range before.Snapshots {
		if id, ok := rawID(raw, "snapshot-id"); ok && !kept[id] {
			removed = append(removed, id)
		}
	}
	// References that go first: a client drops a ref before expiring
	// the snapshots it held.
	for _, name := range slices.Sorted(maps.Keys(before.Refs)) {
		if _, ok := after.Refs[name]; !ok {
			add(map[string]any{"action": "remove-snapshot-ref", "ref-name": name})
		}
	}
	if len(removed) > 0 {
		add(map[string]any{"action": "remove-snapshots", "snapshot-ids": removed})
	}
	addNew("add-snapshot", "snapshot", "snapshot-id", before.Snapshots, after.Snapshots)
	for _, name := range slices.Sorted(maps.Keys(after.Refs)) {
		raw := after.Refs[name]
		if was, ok := before.Refs[name]; ok && jsonEqual(was, raw) {
			continue
		}
		var ref map[string]any
		if err := json.Unmarshal(raw, &ref); err != nil {
			continue
		}
		ref["action"], ref["ref-name"] = "set-snapshot-ref", name
		add(ref)
	}

	set := map[string]string{}
	var gone []string
	for k, v := range after.Properties {
		if w, ok := before.Properties[k]; !ok || w != v {
			set[k] = v
		}
	}
	for k := range before.Properties {
		if _, ok := after.Properties[k]; !ok {
			gone = append(gone, k)
		}
	}
	if len(set) > 0 {
		add(map[string]any{"action": "set-properties", "updates": set})
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		add(map[string]any{"action": "remove-properties", "removals": gone})
	}
	return out
}

// rawID reads the integer field of one element of a metadata list.
func rawID(raw json.RawMessage, field string) (int64, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return 0, false
	}
	var id int64
	if v, ok := m[field]; !ok || json.Unmarshal(v, &id) != nil {
		return 0, false
	}
	return id, true
}

// jsonEqual compares two JSON values by meaning, not by spelling.
func jsonEqual(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// viewDoc is the part of a view metadata file the updates compare.
type viewDoc struct {
	FormatVersion    int               `json:"format-version"`
	UUID             string            `json:"view-uuid"`
	Location         string            `json:"location"`
	Schemas          []json.RawMessage `json:"schemas"`
	Versions         []json.RawMessage `json:"versions"`
	CurrentVersionID *int64            `json:"current-version-id"`
	Properties       map[string]string `json:"properties"`
}

// readViewDoc reads the view metadata file at loc ("": none, a nil doc).
func (a *api) readViewDoc(ctx context.Context, loc string) (*viewDoc, error) {
	if loc == "" {
		return nil, nil
	}
	f, err := a.catalog.ReadViewMetadata(ctx, loc)
	if err != nil {
		return nil, err
	}
	var d viewDoc
	if err := json.Unmarshal(f.Raw, &d); err != nil {
		return nil, fmt.Errorf("view metadata file %s: %w", loc, err)
	}
	return &d, nil
}

// viewEventUpdates are the updates of a view event, as tableEventUpdates:
// the difference of its metadata files, else what the entry records.
func (a *api) viewEventUpdates(ctx context.Context, ic *changefeed.IcebergChange, created bool) []map[string]any {
	prevLoc := ic.PreviousMetadataLocation
	if created {
		prevLoc = ""
	}
	after, err := a.readViewDoc(ctx, ic.MetadataLocation)
	var before *viewDoc
	if err == nil {
		before, err = a.readViewDoc(ctx, prevLoc)
	}
	if err != nil || after == nil {
		if err != nil {
			a.logger.DebugContext(ctx, "events: view metadata file unreadable, updates from the catalog entry", "location", ic.MetadataLocation, "error", err)
		}
		return viewEntryUpdates(ic, created)
	}
	return diffViewDocs(before, after)
}

// diffViewDocs lists the ViewUpdates that take before (nil: a new view)
// to after: identity and format, each schema and version added, the
// current version, location and properties.
func diffViewDocs(before, after *viewDoc) []map[string]any {
	if before == nil {
		before = &viewDoc{}
	}
	// The parts a table and a view share are compared as a table's.
	out := diffTableDocs(
		&tableDoc{FormatVersion: before.FormatVersion, UUID: before.UUID, Location: before.Location, Schemas: before.Schemas, Properties: before.Properties},
		&tableDoc{FormatVersion: after.FormatVersion, UUID: after.UUID, Location: after.Location, Schemas: after.Schemas, Properties: after.Properties})
	if before.UUID == "" && after.UUID != "" {
		out = append([]map[string]any{{"action": "assign-uuid", "uuid": after.UUID}}, out...)
	}
	// Versions go after the schemas they use, before the properties.
	var versions []map[string]any
	known := map[int64]bool{}
	for _, raw := range before.Versions {
		if id, ok := rawID(raw, "version-id"); ok {
			known[id] = true
		}
	}
	for _, raw := range after.Versions {
		if id, ok := rawID(raw, "version-id"); ok && !known[id] {
			versions = append(versions, map[string]any{"action": "add-view-version", "view-version": raw})
		}
	}
	if is, was := after.CurrentVersionID, before.CurrentVersionID; is != nil && (was == nil || *was != *is) {
		versions = append(versions, map[string]any{"action": "set-current-view-version", "view-version-id": *is})
	}
	at := len(out)
	for i, u := range out {
		if a := u["action"]; a == "set-properties" || a == "remove-properties" {
			at = i
			break
		}
	}
	return slices.Concat(out[:at], versions, out[at:])
}
