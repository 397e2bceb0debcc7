package catalog

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
)

// This file checks the schemas, partition specs and sort orders clients
// send, as Iceberg's Java implementation checks them (Schema's identifier
// field rules, PartitionSpec.checkCompatibility, SortOrder.checkCompatibility
// and each Transform's canTransform), so that nothing an engine would refuse
// to read is stored. iceberg-go parses leniently so that it can read any
// table; the catalog is where bad input is stopped. Every check runs before
// anything is written.

// ValidateCreateTable checks what a table is created with: its location,
// its metadata path property and its schema (nil: none). Its partition
// spec and sort order are checked on the metadata built from them
// (ValidateTableLayouts), where source ids are bound to the schema.
func ValidateCreateTable(location, metadataPath string, schema *iceberg.Schema) error {
	if err := validateLocationSyntax("table location", location, true); err != nil {
		return err
	}
	if err := validateLocationSyntax(icebergtable.PropMetadataPath, metadataPath, true); err != nil {
		return err
	}
	if schema != nil {
		if err := validateSchema(schema); err != nil {
			return err
		}
	}
	return nil
}

// ValidateCreateView checks a new view's location and schema.
func ValidateCreateView(location string, schema *iceberg.Schema) error {
	if err := validateLocationSyntax("view location", location, true); err != nil {
		return err
	}
	if schema == nil {
		return nil
	}
	return validateSchema(schema)
}

// UpdateFields are the parts of a table or view update validated here; an
// update is read back from its JSON form since iceberg-go keeps the update
// types private.
type UpdateFields struct {
	Action     string            `json:"action"`
	Schema     *iceberg.Schema   `json:"schema"`
	Location   string            `json:"location"`
	Updates    map[string]string `json:"updates"`
	Spec       *json.RawMessage  `json:"spec"`
	SortOrder  *json.RawMessage  `json:"sort-order"`
	Properties map[string]string `json:"properties"`
	// Removals are remove-properties' keys.
	Removals []string `json:"removals"`
	// ViewVersion is add-view-version's version; nil when absent or null.
	ViewVersion *json.RawMessage `json:"view-version"`
	// Snapshot is add-snapshot's snapshot, as far as authorization and the
	// maintenance lock read it; RefName is set-snapshot-ref's ref.
	Snapshot *struct {
		Summary *struct {
			Operation string `json:"operation"`
		} `json:"summary"`
	} `json:"snapshot"`
	RefName string `json:"ref-name"`
}

// SnapshotOperation is the summary operation of add-snapshot's snapshot;
// "" for other updates, or a snapshot without one.
func (f UpdateFields) SnapshotOperation() string {
	if f.Snapshot == nil || f.Snapshot.Summary == nil {
		return ""
	}
	return f.Snapshot.Summary.Operation
}

// DecodeUpdate reads the checked fields of a table or view update.
func DecodeUpdate(u any) (UpdateFields, error) {
	var f UpdateFields
	raw, err := json.Marshal(u)
	if err == nil {
		err = json.Unmarshal(raw, &f)
	}
	if err != nil {
		return f, badRequest("invalid update: %v", err)
	}
	return f, nil
}

// validateTableUpdates checks the schemas and locations of an updateTable
// request; new specs and sort orders are checked on the result
// (ValidateTableLayouts).
func validateTableUpdates(req *TableChange) error {
	for i, u := range req.Updates {
		switch u.Action() {
		case table.UpdateAddSchema, table.UpdateSetLocation, table.UpdateSetProperties:
		default:
			continue
		}
		f, err := req.fieldsOf(i)
		if err != nil {
			return err
		}
		if err := validateUpdateFields(f, "table location"); err != nil {
			return err
		}
	}
	return nil
}

// ValidateViewUpdates checks the schemas and locations of a view's
// updates.
func ValidateViewUpdates(updates view.Updates) error {
	for _, u := range updates {
		f, err := DecodeUpdate(u)
		if err != nil {
			return err
		}
		if err := validateUpdateFields(f, "view location"); err != nil {
			return err
		}
	}
	return nil
}

func validateUpdateFields(f UpdateFields, what string) error {
	switch f.Action {
	case "add-schema":
		if f.Schema == nil {
			return badRequest("invalid add-schema update: the schema is missing")
		}
		if err := validateSchema(f.Schema); err != nil {
			return err
		}
	case "add-view-version":
		// iceberg-go's builder dereferences the version unchecked.
		if f.ViewVersion == nil {
			return badRequest("invalid add-view-version update: the view-version is missing")
		}
	case "set-location":
		if err := validateLocationSyntax(what, f.Location, false); err != nil {
			return err
		}
	case "set-properties":
		if err := validateLocationSyntax(icebergtable.PropMetadataPath, f.Updates[icebergtable.PropMetadataPath], true); err != nil {
			return err
		}
	}
	return nil
}

// ValidateTableLayouts checks the partition specs and sort orders that next
// has and base (nil for a new table) has not, against next's current
// schema, as Java checks a spec or order when it is added.
func ValidateTableLayouts(base, next table.Metadata) error {
	// Read in place (ViewOf): the accessors copy every spec, order and
	// the schema.
	nextView := icebergtable.ViewOf(next)
	schema := nextView.CurrentSchema()
	if schema == nil {
		return nil
	}
	// Indexed only when something is to be checked: most commits add no
	// spec or order, and a wide schema's index is a map and a path per
	// field.
	var idx map[int]schemaField
	index := func() map[int]schemaField {
		if idx == nil {
			idx = indexSchema(schema)
		}
		return idx
	}
	var oldSpecs, oldOrders []int
	if base != nil {
		baseView := icebergtable.ViewOf(base)
		for _, s := range baseView.Specs {
			oldSpecs = append(oldSpecs, s.ID())
		}
		for _, o := range baseView.SortOrders {
			oldOrders = append(oldOrders, o.OrderID())
		}
	}
	for _, spec := range nextView.Specs {
		if !slices.Contains(oldSpecs, spec.ID()) {
			if err := validateSpec(&spec, schema, index()); err != nil {
				return err
			}
		}
	}
	for _, order := range nextView.SortOrders {
		if !slices.Contains(oldOrders, order.OrderID()) {
			if err := validateSortOrder(order, index()); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateSpec(spec *iceberg.PartitionSpec, schema *iceberg.Schema, idx map[int]schemaField) error {
	names := map[string]bool{}
	for _, f := range spec.Fields() {
		what := fmt.Sprintf("partition field %q", f.Name)
		if f.Name == "" {
			return badRequest("invalid partition spec: a partition field has an empty name")
		}
		if names[f.Name] {
			return badRequest("invalid partition spec: partition name %q is used more than once", f.Name)
		}
		names[f.Name] = true
		if err := checkTransform(what, f.Transform); err != nil {
			return err
		}
		if _, void := f.Transform.(iceberg.VoidTransform); void {
			continue // a dropped field of a v1 table; any source will do
		}
		if err := checkSources(what, f.SourceIDs, f.Transform, idx); err != nil {
			return err
		}
		// Java's PartitionSpec.Builder: a partition may take a column's
		// name only when it is sourced from that column.
		if col, ok := schema.FindFieldByName(f.Name); ok && !slices.Contains(f.SourceIDs, col.ID) {
			return badRequest("invalid partition spec: %s has the name of another column of the schema", what)
		}
	}
	return nil
}

func validateSortOrder(order table.SortOrder, idx map[int]schemaField) error {
	for _, f := range order.Fields() {
		what := fmt.Sprintf("sort field on source %v", f.SourceIDs)
		if err := checkTransform(what, f.Transform); err != nil {
			return err
		}
		if f.Direction != table.SortASC && f.Direction != table.SortDESC {
			return badRequest("invalid sort order: %s has direction %q, want asc or desc", what, f.Direction)
		}
		if f.NullOrder != table.NullsFirst && f.NullOrder != table.NullsLast {
			return badRequest("invalid sort order: %s has null order %q, want nulls-first or nulls-last", what, f.NullOrder)
		}
		if err := checkSources(what, f.SourceIDs, f.Transform, idx); err != nil {
			return err
		}
	}
	return nil
}

// checkTransform refuses transforms iceberg-go read as unknown: a width
// that is not a positive number (bucket[-1], truncate[-5]) or a name no
// Iceberg version defines. Reading such a transform from an existing table
// is allowed (v3 readers must), creating one is not.
func checkTransform(what string, t iceberg.Transform) error {
	switch t := t.(type) {
	case nil:
		return badRequest("%s has no transform", what)
	case iceberg.UnknownTransform:
		return badRequest("%s has an invalid transform %q: use identity, bucket[N] or truncate[W] with N, W > 0, year, month, day, hour or void", what, t.String())
	case iceberg.BucketTransform:
		if t.NumBuckets <= 0 {
			return badRequest("%s has an invalid transform %s: the number of buckets must be > 0", what, t)
		}
	case iceberg.TruncateTransform:
		if t.Width <= 0 {
			return badRequest("%s has an invalid transform %s: the width must be > 0", what, t)
		}
	}
	return nil
}

// checkSources: the sources exist, are primitive, and the transform
// applies to the first one's type (Java's canTransform).
func checkSources(what string, ids []int, t iceberg.Transform, idx map[int]schemaField) error {
	if len(ids) == 0 {
		return badRequest("%s has no source column", what)
	}
	for i, id := range ids {
		f, ok := idx[id]
		if !ok {
			return badRequest("%s: cannot find source column %d in the schema", what, id)
		}
		if _, ok := f.field.Type.(iceberg.PrimitiveType); !ok {
			return badRequest("%s: cannot use non-primitive column %s (%s) as a source", what, f.path, f.field.Type)
		}
		if i == 0 && !t.CanTransform(f.field.Type) {
			return badRequest("%s: transform %s cannot be applied to column %s of type %s", what, t, f.path, f.field.Type)
		}
	}
	return nil
}

// validateSchema checks a schema as Java's Schema does: field ids unique
// (nested fields, list elements and map keys and values included), field
// names unique within their struct, and identifier fields that exist, are
// required primitives other than float or double, and are reached through
// required structs only.
func validateSchema(s *iceberg.Schema) error {
	idx, err := indexSchemaChecked(s)
	if err != nil {
		return err
	}
	for _, id := range s.IdentifierFieldIDs {
		f, ok := idx[id]
		if !ok {
			return badRequest("invalid schema: identifier field %d does not exist", id)
		}
		name := f.path
		if _, ok := f.field.Type.(iceberg.PrimitiveType); !ok {
			return badRequest("invalid schema: identifier field %s is not a primitive type field", name)
		}
		if !f.field.Required {
			return badRequest("invalid schema: identifier field %s is not a required field", name)
		}
		switch f.field.Type.(type) {
		case iceberg.Float32Type, iceberg.Float64Type:
			return badRequest("invalid schema: identifier field %s must not be a float or double field", name)
		}
		if f.inCollection {
			return badRequest("invalid schema: identifier field %s must not be nested in a list or map", name)
		}
		if f.inOptional {
			return badRequest("invalid schema: identifier field %s must not be nested in an optional field", name)
		}
	}
	return nil
}

// schemaField is a field of a schema with where it sits.
type schemaField struct {
	field        iceberg.NestedField
	path         string // dotted name
	inCollection bool   // below a list or a map
	inOptional   bool   // below an optional struct
}

// indexSchema maps every field id of a valid schema to its field.
func indexSchema(s *iceberg.Schema) map[int]schemaField {
	idx, _ := indexSchemaChecked(s)
	return idx
}

func indexSchemaChecked(s *iceberg.Schema) (map[int]schemaField, error) {
	idx := map[int]schemaField{}
	var walkStruct func(fields []iceberg.NestedField, prefix string, inColl, inOpt bool) error
	var walkType func(t iceberg.Type, path string, inColl, inOpt bool) error
	add := func(f iceberg.NestedField, path string, inColl, inOpt bool) error {
		if prev, dup := idx[f.ID]; dup {
			return badRequest("invalid schema: field id %d is used by both %s and %s", f.ID, prev.path, path)
		}
		idx[f.ID] = schemaField{field: f, path: path, inCollection: inColl, inOptional: inOpt}
		return walkType(f.Type, path, inColl, inOpt || !f.Required)
	}
	walkStruct = func(fields []iceberg.NestedField, prefix string, inColl, inOpt bool) error {
		names := map[string]bool{}
		for _, f := range fields {
			if names[f.Name] {
				return badRequest("invalid schema: field name %q appears more than once in %s", f.Name, orRoot(prefix))
			}
			names[f.Name] = true
			if err := add(f, prefix+f.Name, inColl, inOpt); err != nil {
				return err
			}
		}
		return nil
	}
	walkType = func(t iceberg.Type, path string, inColl, inOpt bool) error {
		switch t := t.(type) {
		case *iceberg.StructType:
			return walkStruct(t.FieldList, path+".", inColl, inOpt)
		case *iceberg.ListType:
			return add(iceberg.NestedField{ID: t.ElementID, Name: "element", Type: t.Element, Required: t.ElementRequired}, path+".element", true, inOpt)
		case *iceberg.MapType:
			if err := add(iceberg.NestedField{ID: t.KeyID, Name: "key", Type: t.KeyType, Required: true}, path+".key", true, inOpt); err != nil {
				return err
			}
			return add(iceberg.NestedField{ID: t.ValueID, Name: "value", Type: t.ValueType, Required: t.ValueRequired}, path+".value", true, inOpt)
		}
		return nil
	}
	if err := walkStruct(s.Fields(), "", false, false); err != nil {
		return nil, err
	}
	return idx, nil
}

func orRoot(prefix string) string {
	if prefix == "" {
		return "the schema"
	}
	return prefix[:len(prefix)-1]
}
