package mergeengine_test

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/cockroachdb/datadriven"

	"github.com/floe-catalog/floe/conformance/testkit/lakescenario"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/tablemerge"
)

// ref on=B table=T (tag=NAME | branch=NAME | remove=NAME) [max-ref-age-ms=N]:
// a table-level ref (an Iceberg tag or branch in the table's refs) set at
// the table's current snapshot, or removed, committed through the Iceberg
// REST API as a client does.
func (d *scenario) ref(t *testing.T, td *datadriven.TestData) {
	tbl := d.lake.Load(t, td)
	var u table.Update
	switch {
	case lakescenario.OptArg(td, "remove", "") != "":
		u = table.NewRemoveSnapshotRefUpdate(lakescenario.OptArg(td, "remove", ""))
	default:
		name, typ := lakescenario.OptArg(td, "tag", ""), table.TagRef
		if name == "" {
			name, typ = lakescenario.Arg(t, td, "branch"), table.BranchRef
		}
		age, _ := strconv.ParseInt(lakescenario.OptArg(td, "max-ref-age-ms", "0"), 10, 64)
		u = table.NewSetSnapshotRefUpdate(name, tbl.CurrentSnapshot().SnapshotID, typ, age, 0, 0)
	}
	cat := d.lake.Catalog(t, lakescenario.OptArg(td, "on", "main"))
	if _, _, err := cat.CommitTable(t.Context(), tbl.Identifier(), nil, []table.Update{u}); err != nil {
		td.Fatalf(t, "ref: %v", err)
	}
}

// metadata on=B table=T: the table's properties (but the shared-file
// ones floe sets on every table) and its refs but main: each ref's type,
// the sequence number of its snapshot, whether that is a cherry-picked
// copy, and its retention.
func (d *scenario) metadata(t *testing.T, td *datadriven.TestData) string {
	m := d.lake.Load(t, td).Metadata()
	var b strings.Builder
	props := m.Properties()
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if !icebergtable.IsSharedFileProperty(k) {
			fmt.Fprintf(&b, "property %s=%s\n", k, props[k])
		}
	}
	refs := map[string]table.SnapshotRef{}
	for name, r := range m.Refs() {
		refs[name] = r
	}
	for _, name := range slices.Sorted(maps.Keys(refs)) {
		r := refs[name]
		if name == table.MainBranch {
			continue
		}
		s := m.SnapshotByID(r.SnapshotID)
		if s == nil {
			fmt.Fprintf(&b, "%s %s at a missing snapshot\n", r.SnapshotRefType, name)
			continue
		}
		fmt.Fprintf(&b, "%s %s at seq %d", r.SnapshotRefType, name, s.SequenceNumber)
		if s.Summary != nil && s.Summary.Properties[tablemerge.SummarySourceSnapshotID] != "" {
			b.WriteString(" (a cherry-picked copy)")
		}
		if r.MaxRefAgeMs != nil {
			fmt.Fprintf(&b, ", max-ref-age-ms %d", *r.MaxRefAgeMs)
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		b.WriteString("(nothing)\n")
	}
	return b.String()
}

// refScan is `rows ... ref=NAME`: a scan of the snapshot the table's ref
// NAME points at.
func refScan(t *testing.T, td *datadriven.TestData, tbl *table.Table) []table.ScanOption {
	name := lakescenario.OptArg(td, "ref", "")
	if name == "" {
		return nil
	}
	r, ok := maps.Collect(tbl.Metadata().Refs())[name]
	if !ok {
		td.Fatalf(t, "rows: the table has no ref %s", name)
	}
	return []table.ScanOption{table.WithSnapshotID(r.SnapshotID)}
}
