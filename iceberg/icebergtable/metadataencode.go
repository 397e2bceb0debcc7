package icebergtable

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Encoding table metadata is most of a commit's CPU: iceberg-go's
// MarshalJSON encodes every snapshot through a MarshalJSON of its own (and
// its summary through another), and encoding/json re-compacts the output
// of each of them at every level, so a table of 1,000 snapshots cost 10 ms
// of CPU per commit, for a snapshot list that a commit rarely changes.
//
// encodeTableMetadata produces exactly the bytes json.Marshal(meta)
// produces (TestEncodeTableMetadataMatchesJSONMarshal checks it on every
// kind of metadata), without re-encoding the snapshots a previous file
// already holds:
//
//   - It writes the top-level object itself, field by field in the order
//     and with the omitempty rules of the struct iceberg-go's MarshalJSON
//     encodes (read by reflection from the concrete metadata type), each
//     field's value encoded by json.Marshal of a pointer to it, which is
//     what encoding/json does for a field of an addressable struct. The
//     pieces are compact and escaped, and json.Marshal's compaction of a
//     MarshalJSON result that is itself json.Marshal output changes
//     nothing, so the concatenation is byte for byte json.Marshal(meta).
//   - An item of the long lists (snapshots, metadata-log, snapshot-log)
//     and of the schemas equal, field by field (sameSnapshot,
//     sameLogEntry, sameSchema), to one of the file the metadata was
//     built from is copied from that file's bytes:
//     encoding is a function of the value alone, so equal values encode
//     to equal bytes. Metadata values are immutable (the builder clones
//     the snapshots it carries over), so the earlier file's values still
//     are what its bytes encode. A commit then encodes only what it
//     added: for the metadata-log, whose hundred file names were most of
//     a small table's file, one entry.
//
// Anything it does not know (format version 1, a concrete type or field
// set other than iceberg-go 0.7's, snapshots not yet decoded) takes
// json.Marshal.

// itemRange is where one list item's encoding lies in a file's bytes.
type itemRange struct{ start, end int }

// encodedList is a list of a file floe encoded, with where each item's
// encoding lies in the file's bytes.
type encodedList[T any] struct {
	items  []T // the metadata's own values, not copies
	ranges []itemRange
}

// encodedFile is what the next file's encoding may copy from a file floe
// encoded: its bytes, and where the items of its long lists lie in them.
type encodedFile struct {
	raw         []byte
	snapshots   encodedList[table.Snapshot]
	metadataLog encodedList[table.MetadataLogEntry]
	snapshotLog encodedList[table.SnapshotLogEntry]
	schemas     encodedList[*iceberg.Schema]
}

// metadataField is one top-level field of the encoded object.
type metadataField struct {
	name      string
	omitEmpty bool
	// path is the field's index path from the concrete metadata struct;
	// nil for the snapshot list, which the encoder supplies.
	path []int
}

// metadataLayout is the field list of one concrete metadata type.
type metadataLayout struct {
	fields []metadataField
	// common is the index path of the embedded commonMetadata.
	common []int
	// snapshotList, deferred and lastPartitionID are index paths in the
	// concrete struct.
	snapshotList, deferred, lastPartitionID []int
	// requireLastPartitionID: MarshalJSON refuses metadata without one
	// (format version 3).
	requireLastPartitionID bool
	// reuseSchemas: Schema encodes only the fields sameSchema compares.
	reuseSchemas bool
	// common holds the index paths of commonMetadata's exported fields by
	// name, for ListsOf.
	commonFields map[string][]int
}

// metadataLayouts maps the concrete metadata types iceberg-go 0.7 encodes
// to their layouts; a type missing here is encoded by json.Marshal.
var metadataLayouts = buildMetadataLayouts()

func buildMetadataLayouts() map[reflect.Type]*metadataLayout {
	out := map[reflect.Type]*metadataLayout{}
	for _, version := range []int{2, 3} {
		meta, err := table.NewMetadata(emptySchema, nil, table.UnsortedSortOrder, "file:///layout", map[string]string{"format-version": []string{"", "", "2", "3"}[version]})
		if err != nil || meta.Version() != version {
			continue
		}
		t := reflect.TypeOf(meta)
		if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			continue
		}
		if l := layoutOf(t.Elem(), version); l != nil {
			out[t] = l
		}
	}
	return out
}

// layoutOf derives the field list of metadataV2 or metadataV3 as
// iceberg-go 0.7's MarshalJSON encodes it: the struct's own tagged fields,
// then commonMetadata's, minus those the shallower ones shadow (Go's rule
// for embedded fields), then the fields MarshalJSON's wrapper struct adds
// after them: current-snapshot-id (v3, always written) and snapshots. It
// returns nil for a shape it does not recognize.
func layoutOf(t reflect.Type, version int) *metadataLayout {
	name := map[int]string{2: "metadataV2", 3: "metadataV3"}[version]
	if t.Name() != name {
		return nil
	}
	l := &metadataLayout{requireLastPartitionID: version == 3}
	var own []metadataField
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			if f.Type.Name() != "commonMetadata" || l.common != nil {
				return nil
			}
			l.common = []int{i}
			continue
		}
		mf, ok := taggedField(f, []int{i})
		if !ok {
			return nil
		}
		own = append(own, mf)
	}
	if l.common == nil {
		return nil
	}
	wrapper := []metadataField{{name: "snapshots", omitEmpty: true}}
	if version == 3 {
		wrapper = append([]metadataField{{name: "current-snapshot-id"}}, wrapper...)
	}
	shadowed := map[string]bool{}
	for _, f := range append(slices.Clone(own), wrapper...) {
		shadowed[f.name] = true
	}
	l.fields = own
	var wrapperCurrent []int
	ct := t.Field(l.common[0]).Type
	for i := range ct.NumField() {
		f := ct.Field(i)
		path := []int{l.common[0], i}
		switch f.Name {
		case "SnapshotList":
			l.snapshotList = path
		case "deferredSnapshots":
			l.deferred = path
		case "LastPartitionID":
			l.lastPartitionID = path
		case "CurrentSnapshotID":
			wrapperCurrent = path
		}
		if !f.IsExported() {
			continue
		}
		if l.commonFields == nil {
			l.commonFields = map[string][]int{}
		}
		l.commonFields[f.Name] = path
		mf, ok := taggedField(f, path)
		if !ok {
			return nil
		}
		if !shadowed[mf.name] {
			l.fields = append(l.fields, mf)
		}
	}
	if l.snapshotList == nil || l.deferred == nil || l.lastPartitionID == nil || wrapperCurrent == nil {
		return nil
	}
	if version == 3 {
		wrapper[0].path = wrapperCurrent
	}
	l.fields = append(l.fields, wrapper...)
	if !knownSnapshotFields() {
		return nil
	}
	l.reuseSchemas = knownSchemaFields()
	return l
}

// taggedField reads a field's JSON name and omitempty option; a field
// without a plain tag is not understood.
func taggedField(f reflect.StructField, path []int) (metadataField, bool) {
	tag, ok := f.Tag.Lookup("json")
	if !ok {
		return metadataField{}, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" || name == "-" || (opts != "" && opts != "omitempty") {
		return metadataField{}, false
	}
	return metadataField{name: name, omitEmpty: opts == "omitempty", path: path}, true
}

// knownSnapshotFields says Snapshot and Summary have exactly the fields
// sameSnapshot compares.
func knownSnapshotFields() bool {
	names := func(t reflect.Type) []string {
		var out []string
		for i := range t.NumField() {
			out = append(out, t.Field(i).Name)
		}
		return out
	}
	return slices.Equal(names(reflect.TypeFor[table.Snapshot]()), []string{"SnapshotID", "ParentSnapshotID", "SequenceNumber",
		"TimestampMs", "ManifestList", "ManifestLocations", "Summary", "SchemaID", "FirstRowID", "AddedRows"}) &&
		slices.Equal(names(reflect.TypeFor[table.Summary]()), []string{"Operation", "Properties"})
}

// knownSchemaFields says Schema's exported fields are the ones its
// MarshalJSON writes besides the field list: its id and identifier ids.
func knownSchemaFields() bool {
	t := reflect.TypeFor[iceberg.Schema]()
	var exported []string
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			exported = append(exported, t.Field(i).Name)
		}
	}
	return slices.Equal(exported, []string{"ID", "IdentifierFieldIDs"})
}

// sameSchema says two schemas encode alike: iceberg-go's MarshalJSON
// writes a schema's id, identifier field ids (nil as []) and fields, and
// the fields are compared deeply (type, name, doc and defaults are plain
// values; a NaN default never equals itself, so such a schema is simply
// encoded again). The builder clones the schemas it carries over, so
// pointers alone would never match; a wide table's schema was re-encoded
// by every commit.
func sameSchema(a, b **iceberg.Schema) bool {
	x, y := *a, *b
	if x == nil || y == nil {
		return x == y
	}
	return x == y || (x.ID == y.ID && slices.Equal(x.IdentifierFieldIDs, y.IdentifierFieldIDs) &&
		x.NumFields() == y.NumFields() && reflect.DeepEqual(x.Fields(), y.Fields()))
}

// encodeTableMetadata returns json.Marshal(meta), copying the encodings
// of list items prev holds unchanged, and where the items of its lists lie
// in the result (nil when json.Marshal encoded it).
func encodeTableMetadata(meta table.Metadata, prev *encodedFile, scratch *encodeBuffers) ([]byte, *encodedFile, error) {
	if meta == nil {
		b, err := json.Marshal(meta)
		return b, nil, err
	}
	v := reflect.ValueOf(meta)
	l := metadataLayouts[v.Type()]
	if l == nil || v.IsNil() {
		b, err := json.Marshal(meta)
		return b, nil, err
	}
	s := v.Elem()
	if !s.FieldByIndex(l.deferred).IsNil() ||
		(l.requireLastPartitionID && s.FieldByIndex(l.lastPartitionID).IsNil()) {
		b, err := json.Marshal(meta)
		return b, nil, err
	}
	if prev == nil {
		prev = &encodedFile{}
	}
	out := &encodedFile{}
	buf := scratch.get(len(prev.raw) + len(prev.raw)/8 + 4096)
	defer scratch.put(buf)
	// An Encoder writes into buf directly; its output is json.Marshal's
	// (HTML escaped) and a newline, which is cut.
	enc := json.NewEncoder(buf)
	encode := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1)
		return nil
	}
	buf.WriteByte('{')
	first := true
	key := func(name string) {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.WriteByte('"')
		buf.WriteString(name)
		buf.WriteString(`":`)
	}
	for _, f := range l.fields {
		if f.path == nil { // the snapshot list
			snaps := s.FieldByIndex(l.snapshotList).Interface().([]table.Snapshot)
			if len(snaps) == 0 {
				continue
			}
			key(f.name)
			if err := encodeList(buf, encode, snaps, &prev.snapshots, prev.raw, &out.snapshots, sameSnapshot); err != nil {
				return nil, nil, err
			}
			continue
		}
		fv := s.FieldByIndex(f.path)
		if f.omitEmpty && isEmptyValue(fv) {
			continue
		}
		key(f.name)
		var err error
		switch list := fv.Interface().(type) {
		case []table.MetadataLogEntry:
			err = encodeList(buf, encode, list, &prev.metadataLog, prev.raw, &out.metadataLog, sameLogEntry)
		case []table.SnapshotLogEntry:
			err = encodeList(buf, encode, list, &prev.snapshotLog, prev.raw, &out.snapshotLog, sameLogEntry)
		case []*iceberg.Schema:
			if l.reuseSchemas {
				err = encodeList(buf, encode, list, &prev.schemas, prev.raw, &out.schemas, sameSchema)
			} else {
				err = encode(fv.Addr().Interface())
			}
		default:
			err = encode(fv.Addr().Interface())
		}
		if err != nil {
			return nil, nil, err
		}
	}
	buf.WriteByte('}')
	// The file is kept (cached, answered, compared with the next one):
	// it gets a slice of its own size, the buffer goes back to the pool.
	out.raw = bytes.Clone(buf.Bytes())
	return out.raw, out, nil
}

// encodeBuffers are the scratch buffers metadata files are encoded in.
// A buffer sized to the file, with room for growth, was a quarter more
// than the file itself for every commit to keep the garbage collector
// busy with (issue 14). A nil *encodeBuffers makes a buffer each time.
type encodeBuffers struct{ pool sync.Pool }

// get returns an empty buffer with room for n bytes.
func (e *encodeBuffers) get(n int) *bytes.Buffer {
	var buf *bytes.Buffer
	if e != nil {
		buf, _ = e.pool.Get().(*bytes.Buffer)
	}
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	buf.Grow(n)
	return buf
}

// put gives buf back once nothing refers to its bytes.
func (e *encodeBuffers) put(buf *bytes.Buffer) {
	if e != nil && buf.Cap() <= maxPooledEncodeBuffer {
		e.pool.Put(buf)
	}
}

// maxPooledEncodeBuffer bounds what a pooled buffer may keep: a rare
// huge file's buffer is left to the collector.
const maxPooledEncodeBuffer = 4 << 20

// encodeList writes items as a JSON array, as encoding/json writes a
// slice field (a nil slice is null), copying the encoding of each item
// equal to one of prev (whose encodings lie in prevRaw), and records
// where each item lies in out.
func encodeList[T any](buf *bytes.Buffer, encode func(any) error, items []T, prev *encodedList[T], prevRaw []byte, out *encodedList[T], same func(a, b *T) bool) error {
	if items == nil {
		buf.WriteString("null")
		return nil
	}
	out.items = items
	out.ranges = make([]itemRange, len(items))
	// Lists mostly keep their order from one file to the next, with items
	// added at the end and trimmed or expired at the start: the item i of
	// prev that items[i] equals is looked for at i+shift first, and the
	// shift updated when it is found elsewhere.
	shift := 0
	find := func(i int) int {
		if j := i + shift; j >= 0 && j < len(prev.items) && same(&prev.items[j], &items[i]) {
			return j
		}
		for j := range prev.items {
			if same(&prev.items[j], &items[i]) {
				shift = j - i
				return j
			}
		}
		return -1
	}
	buf.WriteByte('[')
	for i := range items {
		if i > 0 {
			buf.WriteByte(',')
		}
		start := buf.Len()
		if j := find(i); j >= 0 {
			r := prev.ranges[j]
			buf.Write(prevRaw[r.start:r.end])
		} else if err := encode(&items[i]); err != nil {
			return err
		}
		out.ranges[i] = itemRange{start, buf.Len()}
	}
	buf.WriteByte(']')
	return nil
}

// sameLogEntry compares log entries, which hold no pointers: equal values
// encode alike.
func sameLogEntry[T table.MetadataLogEntry | table.SnapshotLogEntry](a, b *T) bool { return *a == *b }

// sameSnapshot says a and b hold the same values in every field
// (knownSnapshotFields guards the list), nil and empty told apart where
// their encodings differ.
func sameSnapshot(a, b *table.Snapshot) bool {
	if a.SnapshotID != b.SnapshotID || a.SequenceNumber != b.SequenceNumber || a.TimestampMs != b.TimestampMs ||
		a.ManifestList != b.ManifestList || !samePtr(a.ParentSnapshotID, b.ParentSnapshotID) ||
		!samePtr(a.SchemaID, b.SchemaID) || !samePtr(a.FirstRowID, b.FirstRowID) || !samePtr(a.AddedRows, b.AddedRows) ||
		(a.ManifestLocations == nil) != (b.ManifestLocations == nil) || !slices.Equal(a.ManifestLocations, b.ManifestLocations) ||
		(a.Summary == nil) != (b.Summary == nil) {
		return false
	}
	if a.Summary == nil {
		return true
	}
	return a.Summary.Operation == b.Summary.Operation &&
		(a.Summary.Properties == nil) == (b.Summary.Properties == nil) &&
		maps.Equal(a.Summary.Properties, b.Summary.Properties)
}

func samePtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// emptySchema is the schema of the metadata buildMetadataLayouts makes to
// learn the concrete types.
var emptySchema = iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64})

// AddedSnapshots returns the snapshots of next that base (nil: none) does
// not have, in next's order. It reads the snapshot lists of files floe
// encoded in place: Metadata.Snapshots deep-copies every snapshot, which
// for a table of 1,000 snapshots cost a millisecond per call.
func AddedSnapshots(base, next *MetadataFile) []table.Snapshot {
	known := map[int64]bool{}
	if base != nil {
		for _, s := range snapshotsOf(base) {
			known[s.SnapshotID] = true
		}
	}
	var out []table.Snapshot
	for _, s := range snapshotsOf(next) {
		if !known[s.SnapshotID] {
			if c := next.Metadata.SnapshotByID(s.SnapshotID); c != nil {
				out = append(out, *c)
			}
		}
	}
	return out
}

// snapshotsOf is f's snapshot list, for reading only.
func snapshotsOf(f *MetadataFile) []table.Snapshot {
	if f.encoded != nil && f.encoded.snapshots.items != nil {
		return f.encoded.snapshots.items
	}
	return f.Metadata.Snapshots()
}
