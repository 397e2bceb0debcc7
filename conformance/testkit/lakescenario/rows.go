package lakescenario

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cockroachdb/datadriven"
)

// RowsByDay renders a scan of the test schema (id, ts, ...) as the ids of
// each day, sorted, a line a day: "2026-08-20: 1 2 3", or "(no rows)".
func RowsByDay(t *testing.T, td *datadriven.TestData, at arrow.Table) string {
	t.Helper()
	byDay := map[string][]int64{}
	rd := array.NewTableReader(at, 1024)
	defer rd.Release()
	for rd.Next() {
		rec := rd.RecordBatch()
		ids, ok1 := rec.Column(0).(*array.Int64)
		ts, ok2 := rec.Column(1).(*array.Timestamp)
		if !ok1 || !ok2 {
			td.Fatalf(t, "rows: columns %s, %s are not the test schema's id and ts", rec.ColumnName(0), rec.ColumnName(1))
		}
		for i := range int(rec.NumRows()) {
			day := time.UnixMicro(int64(ts.Value(i))).UTC().Format(time.DateOnly)
			byDay[day] = append(byDay[day], ids.Value(i))
		}
	}
	var b strings.Builder
	for _, day := range slices.Sorted(func(yield func(string) bool) {
		for k := range byDay {
			if !yield(k) {
				return
			}
		}
	}) {
		ids := byDay[day]
		slices.Sort(ids)
		fmt.Fprintf(&b, "%s:", day)
		for _, id := range ids {
			fmt.Fprintf(&b, " %d", id)
		}
		b.WriteString("\n")
	}
	if len(byDay) == 0 {
		b.WriteString("(no rows)\n")
	}
	return b.String()
}
