package icebergrest

import (
	"context"
	"net/http"

	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
)

// filesAt is the file IO for the metadata file at loc: that of the served
// warehouse holding it (the innermost, if roots nest), whichever
// warehouse the request named. A location outside every warehouse (none
// should reach here) gets iceberg-go's defaults through the default
// warehouse.
func (a *api) filesAt(loc string) *icebergtable.Warehouse {
	if w := icebergtable.Innermost(loc, a.files); w != nil {
		return w
	}
	return a.defaultWH.files
}

func (a *api) readTableMetadata(ctx context.Context, loc string) (*icebergtable.MetadataFile, error) {
	return a.filesAt(loc).ReadTableMetadata(ctx, loc)
}

// loadTableMetadata is readTableMetadata for a client's load: a cached
// file is confirmed to still exist (see icebergtable.LoadTableMetadata).
func (a *api) loadTableMetadata(ctx context.Context, loc string) (*icebergtable.MetadataFile, error) {
	return a.filesAt(loc).LoadTableMetadata(ctx, loc)
}

// writeTableMetadata writes meta, built from the file base (nil: none),
// whose unchanged snapshots it copies instead of encoding them again.
func (a *api) writeTableMetadata(ctx context.Context, loc string, meta table.Metadata, base *icebergtable.MetadataFile) (*icebergtable.MetadataFile, error) {
	return a.filesAt(loc).WriteTableMetadataFrom(ctx, loc, meta, base)
}

func (a *api) readViewMetadata(ctx context.Context, loc string) (*icebergtable.ViewMetadataFile, error) {
	return a.filesAt(loc).ReadViewMetadata(ctx, loc)
}

func (a *api) writeViewMetadata(ctx context.Context, loc string, meta view.Metadata) (*icebergtable.ViewMetadataFile, error) {
	return a.filesAt(loc).WriteViewMetadata(ctx, loc, meta)
}

// removeFiles deletes metadata files no commit references, best-effort: an
// orphan left behind wastes space but is never read.
func (a *api) removeFiles(ctx context.Context, locs ...string) {
	for _, loc := range locs {
		if err := a.filesAt(loc).RemoveFile(ctx, loc); err != nil {
			a.logger.WarnContext(ctx, "could not delete orphan metadata file", "location", loc, "error", err)
		}
	}
}

// writeNextTableMetadata writes meta as the next metadata file of a table
// in wh whose current file is base (nil for a new table); see
// icebergtable.Warehouse.NewTableMetadataLocation.
func (a *api) writeNextTableMetadata(ctx context.Context, wh *warehouse, meta table.Metadata, base *icebergtable.MetadataFile) (*icebergtable.MetadataFile, error) {
	prev := ""
	if base != nil {
		prev = base.Location
	}
	return writeNext(ctx, meta, func() (string, error) { return wh.files.NewTableMetadataLocation(meta, prev) },
		func(ctx context.Context, loc string, meta table.Metadata) (*icebergtable.MetadataFile, error) {
			return a.writeTableMetadata(ctx, loc, meta, base)
		})
}

// writeNextViewMetadata is writeNextTableMetadata for views.
func (a *api) writeNextViewMetadata(ctx context.Context, wh *warehouse, meta view.Metadata, prev string) (*icebergtable.ViewMetadataFile, error) {
	return writeNext(ctx, meta, func() (string, error) { return wh.files.NewViewMetadataLocation(meta, prev) }, a.writeViewMetadata)
}

// writeNext writes meta at the location next names. A location outside the
// warehouse is the client's error (400), a failed write the storage's
// (500).
func writeNext[M, F any](ctx context.Context, meta M, next func() (string, error), write func(context.Context, string, M) (F, error)) (F, error) {
	var none F
	loc, err := next()
	if err != nil {
		return none, badRequest("invalid metadata location: %v", err)
	}
	file, err := write(ctx, loc, meta)
	if err != nil {
		return none, internalError(err)
	}
	return file, nil
}

// internalError marks a failure of storage the catalog relies on.
func internalError(err error) error {
	return &apiError{status: http.StatusInternalServerError, typ: typeInternalServerError, msg: err.Error(), cause: err}
}
