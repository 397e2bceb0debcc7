package icebergtable

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/iceberg-go/view"
	"github.com/google/uuid"
)

// ViewMetadataFile is one view metadata file: its location, its bytes as
// stored, and its parsed form. Callers must not modify its fields. View
// files are not cached: views are small and rarely loaded in a hot loop.
type ViewMetadataFile struct {
	Location string
	Raw      []byte
	Metadata view.Metadata
}

// ReadViewMetadata reads and parses the view metadata file at loc.
func (w *Warehouse) ReadViewMetadata(ctx context.Context, loc string) (_ *ViewMetadataFile, err error) {
	ctx, span := w.startFileSpan(ctx, "read view metadata file", loc)
	var raw []byte
	defer func() { endFileSpan(span, len(raw), false, err) }()
	raw, err = w.ReadFile(ctx, loc)
	if err != nil {
		return nil, err
	}
	meta, err := view.ParseMetadataBytes(raw)
	if err != nil {
		return nil, &InvalidMetadataError{Location: loc, Kind: "view", cause: err}
	}
	return &ViewMetadataFile{Location: loc, Raw: raw, Metadata: meta}, nil
}

// WriteViewMetadata writes meta as a new view metadata file at loc (named
// by NewViewMetadataLocation) and syncs it.
func (w *Warehouse) WriteViewMetadata(ctx context.Context, loc string, meta view.Metadata) (_ *ViewMetadataFile, err error) {
	ctx, span := w.startFileSpan(ctx, "write view metadata file", loc)
	var raw []byte
	defer func() { endFileSpan(span, len(raw), false, err) }()
	raw, err = json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("encode view metadata for %s: %w", loc, err)
	}
	if err := w.WriteFile(ctx, loc, raw); err != nil {
		return nil, err
	}
	parsed, err := view.ParseMetadataBytes(raw)
	if err != nil {
		return nil, &InvalidMetadataError{Location: loc, Kind: "view", cause: err}
	}
	return &ViewMetadataFile{Location: loc, Raw: raw, Metadata: parsed}, nil
}

// NewViewMetadataLocation names the next metadata file of a view whose
// current file is prev ("" for a new view), as NewTableMetadataLocation
// does for tables: <metadata dir>/<NNNNN>-<uuid>.metadata.json, the dir
// write.metadata.path if set (as Java's view operations honour it), else
// <location>/metadata.
func (w *Warehouse) NewViewMetadataLocation(meta view.Metadata, prev string) (string, error) {
	version := 0
	if prev != "" {
		if v := metadataVersion(prev); v >= 0 {
			version = v + 1
		} else {
			version = len(meta.Versions())
		}
	}
	dir := trimSlash(meta.Location()) + "/metadata"
	if p := meta.Properties()[PropMetadataPath]; p != "" {
		dir = trimSlash(p)
	}
	return w.Contains(fmt.Sprintf("%s/%05d-%s.metadata.json", dir, version, uuid.NewString()))
}
