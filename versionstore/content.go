package versionstore

import (
	"fmt"
	"maps"
	"slices"
)

// ContentType is the kind of an entry.
type ContentType uint8

// The content types. Values are stored; never renumber.
const (
	Namespace    ContentType = 1
	IcebergTable ContentType = 2
	IcebergView  ContentType = 3
)

func (t ContentType) String() string {
	switch t {
	case Namespace:
		return "NAMESPACE"
	case IcebergTable:
		return "ICEBERG_TABLE"
	case IcebergView:
		return "ICEBERG_VIEW"
	default:
		return fmt.Sprintf("UNKNOWN(%d)", uint8(t))
	}
}

// ParseContentType is the inverse of String.
func ParseContentType(s string) (ContentType, error) {
	for _, t := range []ContentType{Namespace, IcebergTable, IcebergView} {
		if t.String() == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown content type %q", ErrInvalid, s)
}

// Content is the value stored under a key. ID is stable for the life of the
// entity (across updates and renames) and is assigned by the store when a
// new entity is put without one. The Iceberg fields let the catalog answer
// without reading object storage.
type Content struct {
	Type ContentType
	ID   string

	// Iceberg tables and views.
	MetadataLocation   string
	UUID               string // the table-uuid or view-uuid of the metadata
	SnapshotID         int64
	SchemaID           int32
	SpecID             int32
	SortOrderID        int32
	LastSequenceNumber int64
	VersionID          int64 // views: current-version-id

	// Namespaces.
	Properties map[string]string
}

// Equal reports whether two contents encode identically.
func (c *Content) Equal(o *Content) bool {
	if c == nil || o == nil {
		return c == o
	}
	return c.Type == o.Type && c.ID == o.ID && c.MetadataLocation == o.MetadataLocation &&
		c.UUID == o.UUID && c.SnapshotID == o.SnapshotID && c.SchemaID == o.SchemaID &&
		c.SpecID == o.SpecID && c.SortOrderID == o.SortOrderID &&
		c.LastSequenceNumber == o.LastSequenceNumber && c.VersionID == o.VersionID &&
		maps.Equal(c.Properties, o.Properties)
}

// Clone returns a deep copy.
func (c *Content) Clone() *Content {
	if c == nil {
		return nil
	}
	d := *c
	d.Properties = maps.Clone(c.Properties)
	return &d
}

func (c *Content) validate() error {
	switch c.Type {
	case Namespace, IcebergTable, IcebergView:
	default:
		return fmt.Errorf("%w: unknown content type %d", ErrInvalid, c.Type)
	}
	if c.Type != Namespace && c.MetadataLocation == "" {
		return fmt.Errorf("%w: %s content needs a metadata location", ErrInvalid, c.Type)
	}
	if c.Type != Namespace && len(c.Properties) > 0 {
		return fmt.Errorf("%w: %s content cannot carry namespace properties", ErrInvalid, c.Type)
	}
	return nil
}

func encodeContent(c *Content) []byte {
	e := encoder{buf: make([]byte, 0, 128)}
	e.byte(kindContent)
	e.byte(formatV1)
	e.byte(byte(c.Type))
	e.string(c.ID)
	e.string(c.MetadataLocation)
	e.string(c.UUID)
	e.varint(c.SnapshotID)
	e.varint(int64(c.SchemaID))
	e.varint(int64(c.SpecID))
	e.varint(int64(c.SortOrderID))
	e.varint(c.LastSequenceNumber)
	e.varint(c.VersionID)
	// Once the hash of an optional metadata blob, which nothing ever
	// wrote; the slot stays, always zero, so that stored contents keep
	// their bytes and therefore their hashes.
	e.hash(Hash{})
	e.stringMap(c.Properties)
	return e.buf
}

func decodeContent(b []byte) (*Content, error) {
	d := decoder{buf: b}
	d.header(kindContent)
	c := &Content{Type: ContentType(d.byte())}
	c.ID = d.string(maxStringBytes)
	c.MetadataLocation = d.string(maxStringBytes)
	c.UUID = d.string(maxStringBytes)
	c.SnapshotID = d.varint()
	c.SchemaID = d.int32()
	c.SpecID = d.int32()
	c.SortOrderID = d.int32()
	c.LastSequenceNumber = d.varint()
	c.VersionID = d.varint()
	d.hash() // the unused metadata-blob slot; see encodeContent
	c.Properties = d.stringMap()
	if err := d.finish(); err != nil {
		return nil, fmt.Errorf("decode content: %w", err)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("decode content: %w: %v", ErrCorrupt, err)
	}
	return c, nil
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
