package icebergtable

import (
	"context"
	"fmt"

	"github.com/floe-catalog/floe/versionstore"
)

// TableContent is the version-store value of a table whose current
// metadata file is f: the file's location plus what readers need without
// reading storage. contentID is the table's content id ("" for a new
// table: the store assigns one).
func TableContent(contentID string, f *MetadataFile) *versionstore.Content {
	m := f.Metadata
	snap := int64(-1)
	if cs := m.CurrentSnapshot(); cs != nil {
		snap = cs.SnapshotID
	}
	schemaID := int32(ViewOf(m).CurrentSchemaID) // -1 for none; CurrentSchema would copy it
	return &versionstore.Content{
		Type:               versionstore.IcebergTable,
		ID:                 contentID,
		MetadataLocation:   f.Location,
		UUID:               m.TableUUID().String(),
		SnapshotID:         snap,
		SchemaID:           schemaID,
		SpecID:             int32(m.DefaultPartitionSpec()),
		SortOrderID:        int32(m.DefaultSortOrder()),
		LastSequenceNumber: m.LastSequenceNumber(),
	}
}

// ViewContent is the version-store value of a view whose current metadata
// file is f, as TableContent is for tables.
func ViewContent(contentID string, f *ViewMetadataFile) *versionstore.Content {
	return &versionstore.Content{
		Type:             versionstore.IcebergView,
		ID:               contentID,
		MetadataLocation: f.Location,
		UUID:             f.Metadata.ViewUUID().String(),
		VersionID:        f.Metadata.CurrentVersionID(),
		SchemaID:         int32(f.Metadata.CurrentSchemaID()),
	}
}

// ReadTable reads the current metadata file of the table whose
// version-store value is c.
func (w *Warehouse) ReadTable(ctx context.Context, c *versionstore.Content) (*MetadataFile, error) {
	if c.Type != versionstore.IcebergTable {
		return nil, fmt.Errorf("content %s is a %s, not an Iceberg table", c.ID, c.Type)
	}
	return w.ReadTableMetadata(ctx, c.MetadataLocation)
}

// ReadView reads the current metadata file of the view whose version-store
// value is c.
func (w *Warehouse) ReadView(ctx context.Context, c *versionstore.Content) (*ViewMetadataFile, error) {
	if c.Type != versionstore.IcebergView {
		return nil, fmt.Errorf("content %s is a %s, not an Iceberg view", c.ID, c.Type)
	}
	return w.ReadViewMetadata(ctx, c.MetadataLocation)
}
