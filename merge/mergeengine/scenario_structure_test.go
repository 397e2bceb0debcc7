package mergeengine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cockroachdb/datadriven"

	"github.com/floe-catalog/floe/conformance/testkit/lakescenario"
)

// column on=B table=T column=C: every row's id and its value of column C
// (read by name, through the table's current schema and so through field
// ids: a file written before C existed reads null), sorted by id, a line
// a row: "7: x", "8: null". The table's current schema comes first.
func (d *scenario) column(t *testing.T, td *datadriven.TestData) string {
	tbl := d.lake.Load(t, td)
	col := lakescenario.Arg(t, td, "column")
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		td.Fatalf(t, "scan: %v", err)
	}
	defer at.Release()
	type row struct {
		id  int64
		val string
	}
	var rows []row
	rd := array.NewTableReader(at, 1024)
	defer rd.Release()
	for rd.Next() {
		rec := rd.RecordBatch()
		ids, ok := rec.Column(0).(*array.Int64)
		idx := rec.Schema().FieldIndices(col)
		if !ok || len(idx) == 0 {
			td.Fatalf(t, "column: no id or no %s in %s", col, rec.Schema())
		}
		vals := rec.Column(idx[0])
		for i := range int(rec.NumRows()) {
			v := "null"
			if vals.IsValid(i) {
				v = vals.ValueStr(i)
			}
			rows = append(rows, row{ids.Value(i), v})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return int(a.id - b.id) })
	var b strings.Builder
	sc := tbl.Schema()
	var names []string
	for _, f := range sc.Fields() {
		names = append(names, fmt.Sprintf("%s %s", f.Name, f.Type))
	}
	spec := tbl.Spec()
	fmt.Fprintf(&b, "schema %d: %s; spec %d\n", sc.ID, strings.Join(names, ", "), spec.ID())
	for _, r := range rows {
		fmt.Fprintf(&b, "%d: %s\n", r.id, r.val)
	}
	return b.String()
}
