package icebergtable

import (
	"maps"
	"reflect"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// MetadataView is a table metadata's lists and maps as it holds them,
// for reading only: never modify them. table.Metadata's accessors copy
// them on every call, Schemas() and CurrentSchema() every schema deeply
// (each copy indexes its fields again), and comparing a commit's base and
// next metadata that way was a fifth of the objects a property commit
// allocated (issue 14).
type MetadataView struct {
	CurrentSchemaID     int // -1 when the metadata has no current schema
	Schemas             []*iceberg.Schema
	Specs               []iceberg.PartitionSpec
	SortOrders          []table.SortOrder
	Properties          iceberg.Properties
	Refs                map[string]table.SnapshotRef
	Statistics          []table.StatisticsFile
	PartitionStatistics []table.PartitionStatisticsFile
}

// ViewOf returns m's lists in place when m is one of iceberg-go's
// metadata types the encoder knows (metadataLayouts), and copies from the
// accessors otherwise.
func ViewOf(m table.Metadata) MetadataView {
	if l := metadataLayouts[reflect.TypeOf(m)]; l != nil && l.commonFields != nil {
		s := reflect.ValueOf(m).Elem()
		var out MetadataView
		if fieldAs(s, l, "CurrentSchemaID", &out.CurrentSchemaID) &&
			fieldAs(s, l, "SchemaList", &out.Schemas) &&
			fieldAs(s, l, "Specs", &out.Specs) &&
			fieldAs(s, l, "SortOrderList", &out.SortOrders) &&
			fieldAs(s, l, "Props", &out.Properties) &&
			fieldAs(s, l, "SnapshotRefs", &out.Refs) &&
			fieldAs(s, l, "StatisticsList", &out.Statistics) &&
			fieldAs(s, l, "PartitionStatsList", &out.PartitionStatistics) {
			return out
		}
	}
	current := -1
	if cs := m.CurrentSchema(); cs != nil {
		current = cs.ID
	}
	return MetadataView{
		CurrentSchemaID:     current,
		Schemas:             m.Schemas(),
		Specs:               m.PartitionSpecs(),
		SortOrders:          m.SortOrders(),
		Properties:          m.Properties(),
		Refs:                maps.Collect(m.Refs()),
		Statistics:          slices.Collect(m.Statistics()),
		PartitionStatistics: slices.Collect(m.PartitionStatistics()),
	}
}

// PropertiesOf is m's properties, for reading only: ViewOf's Properties
// without the rest.
func PropertiesOf(m table.Metadata) iceberg.Properties {
	if l := metadataLayouts[reflect.TypeOf(m)]; l != nil && l.commonFields != nil {
		var props iceberg.Properties
		if fieldAs(reflect.ValueOf(m).Elem(), l, "Props", &props) {
			return props
		}
	}
	return m.Properties()
}

// CurrentSchema is the view's current schema, for reading only; nil when
// it has none.
func (v MetadataView) CurrentSchema() *iceberg.Schema {
	for _, s := range v.Schemas {
		if s != nil && s.ID == v.CurrentSchemaID {
			return s
		}
	}
	return nil
}

// fieldAs reads commonMetadata's field name of the metadata struct s into
// *dst, if it has that name and type.
func fieldAs[T any](s reflect.Value, l *metadataLayout, name string, dst *T) bool {
	path, ok := l.commonFields[name]
	if !ok {
		return false
	}
	// Through a pointer: Interface of a slice itself would box a copy.
	p, ok := s.FieldByIndex(path).Addr().Interface().(*T)
	if ok {
		*dst = *p
	}
	return ok
}
