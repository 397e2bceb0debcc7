package lakescenario

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/cockroachdb/datadriven"

	"github.com/floe-catalog/floe/versionstore"
)

// rows makes n new rows at noon of day, in tbl's current schema (n may
// have been promoted to a long, or renamed): row i has the id ids[i]
// where ids has one, else a fresh id (every row uses one up, so ids stay
// unique across the scenario); n is the row's id, but null in the first
// nulls rows. Further columns are null, but a string column set names
// (set[column] = value).
func (l *Lake) rows(t *testing.T, tbl *table.Table, day time.Time, n int, ids []int64, nulls int, set map[string]string) arrow.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range n {
		l.nextID++
		id := l.nextID
		if i < len(ids) {
			id = ids[i]
		}
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(day.Add(12 * time.Hour).UnixMicro()))
		switch f := b.Field(2).(type) {
		case *array.Int32Builder:
			if i < nulls {
				f.AppendNull()
			} else {
				f.Append(int32(id))
			}
		case *array.Int64Builder:
			if i < nulls {
				f.AppendNull()
			} else {
				f.Append(id)
			}
		}
		for i := 3; i < sc.NumFields(); i++ {
			v, ok := set[sc.Field(i).Name]
			if f, isString := b.Field(i).(*array.StringBuilder); ok && isString {
				f.Append(v)
				continue
			}
			b.Field(i).AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

// Append runs `append on=BRANCH table=T day=D rows=N [ids=I,...]
// [nulls=K] [set=COLUMN:VALUE]` on tbl (the command's table, loaded): N
// new rows at noon of day D, the first of them with the ids given, the
// first K with a null n, the string column COLUMN (one added by alter)
// set to VALUE in every row, in one snapshot whose summary has snap's
// properties.
func (l *Lake) Append(t *testing.T, td *datadriven.TestData, tbl *table.Table, snap iceberg.Properties) {
	var ids []int64
	if s := OptArg(td, "ids", ""); s != "" {
		for _, v := range strings.Split(s, ",") {
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				td.Fatalf(t, "ids: %v", err)
			}
			ids = append(ids, id)
		}
	}
	n := number(t, td, "rows", Arg(t, td, "rows"))
	nulls := number(t, td, "nulls", OptArg(td, "nulls", "0"))
	var set map[string]string
	if s := OptArg(td, "set", ""); s != "" {
		col, v, _ := strings.Cut(s, ":")
		set = map[string]string{col: v}
	}
	at := l.rows(t, tbl, DayStart(t, td), n, ids, nulls, set)
	defer at.Release()
	if _, err := tbl.AppendTable(t.Context(), at, 1024, snap); err != nil {
		td.Fatalf(t, "append: %v", err)
	}
}

// Overwrite runs `overwrite on=BRANCH table=T day=D rows=N` on tbl:
// replaces day D's rows with N new ones, in one snapshot whose summary
// has snap's properties.
func (l *Lake) Overwrite(t *testing.T, td *datadriven.TestData, tbl *table.Table, snap iceberg.Properties) {
	day := DayStart(t, td)
	at := l.rows(t, tbl, day, number(t, td, "rows", Arg(t, td, "rows")), nil, 0, nil)
	defer at.Release()
	tx := tbl.NewTransaction()
	if err := tx.OverwriteTable(t.Context(), at, 1024, snap, table.WithOverwriteFilter(DayFilter(day))); err != nil {
		td.Fatalf(t, "overwrite: %v", err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		td.Fatalf(t, "overwrite: %v", err)
	}
}

// Delete runs `delete on=BRANCH table=T (day=D | id=N)` on tbl: a
// copy-on-write delete of a whole day, or of one row (its file is
// rewritten), in one snapshot whose summary has snap's properties.
func (l *Lake) Delete(t *testing.T, td *datadriven.TestData, tbl *table.Table, snap iceberg.Properties) {
	var filter iceberg.BooleanExpression
	if id := OptArg(td, "id", ""); id != "" {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			td.Fatalf(t, "id: %v", err)
		}
		filter = iceberg.EqualTo(iceberg.Reference("id"), n)
	} else {
		filter = DayFilter(DayStart(t, td))
	}
	tx := tbl.NewTransaction()
	if err := tx.Delete(t.Context(), filter, snap); err != nil {
		td.Fatalf(t, "delete: %v", err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		td.Fatalf(t, "delete: %v", err)
	}
}

// Alter runs `alter on=BRANCH table=T CHANGE`, one commit of the change
// its last argument names: add-column=NAME (an optional string),
// add-required=NAME (a required string), rename=OLD:NEW, promote=n (to a
// long), identifier=COLUMN, sort=id, spec=bucket (a bucket of id added),
// property=K:V or unset=K.
func (l *Lake) Alter(t *testing.T, td *datadriven.TestData) {
	tbl := l.Load(t, td)
	tx := tbl.NewTransaction()
	var err error
	switch a := td.CmdArgs[len(td.CmdArgs)-1]; a.Key {
	case "add-column":
		err = tx.UpdateSchema(true, false).AddColumn([]string{a.Vals[0]}, iceberg.PrimitiveTypes.String, "", false, nil).Commit()
	case "add-required":
		err = tx.UpdateSchema(true, true).AddColumn([]string{a.Vals[0]}, iceberg.PrimitiveTypes.String, "", true, nil).Commit()
	case "rename":
		old, nu, _ := strings.Cut(a.Vals[0], ":")
		err = tx.UpdateSchema(true, false).RenameColumn([]string{old}, nu).Commit()
	case "promote":
		err = tx.UpdateSchema(true, false).UpdateColumn([]string{a.Vals[0]}, table.ColumnUpdate{
			FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}}).Commit()
	case "spec":
		err = tx.UpdateSpec(true).AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "id_bucket").Commit()
	case "identifier":
		err = tx.UpdateSchema(true, false).SetIdentifierField([][]string{{a.Vals[0]}}).Commit()
	case "sort":
		var order table.SortOrder
		order, err = table.NewSortOrder(1, []table.SortField{{SourceIDs: []int{1}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst}})
		if err == nil {
			err = tx.ReplaceSortOrder(order)
		}
	case "property":
		k, v, _ := strings.Cut(a.Vals[0], ":")
		err = tx.SetProperties(iceberg.Properties{k: v})
	case "unset":
		err = tx.RemoveProperties([]string{a.Vals[0]})
	default:
		td.Fatalf(t, "alter: unknown change %q", a.Key)
	}
	if err != nil {
		td.Fatalf(t, "alter: %v", err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		td.Fatalf(t, "alter: %v", err)
	}
}

// Compaction is the first half of `compact on=BRANCH table=T day=D` on
// tbl: the data files day D has now (old), and one new data file holding
// all their rows (file), as a compaction job writes it. The new file is
// written by appending the day's rows to a fresh scratch table beside tbl
// on the same branch, created with opts. Committing the replacement, and
// how, is the caller's (drivers differ in the operation they record).
func (l *Lake) Compaction(t *testing.T, td *datadriven.TestData, tbl *table.Table, opts ...catalog.CreateTableOpt) (old []iceberg.DataFile, file iceberg.DataFile) {
	ctx := t.Context()
	scan := tbl.Scan(table.WithRowFilter(DayFilter(DayStart(t, td))))
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		old = append(old, task.File)
	}
	rows, err := scan.ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Release()
	scratch := l.scratchTable(t, OptArg(td, "on", versionstore.DefaultBranch), tbl, opts...)
	if scratch, err = scratch.AppendTable(ctx, rows, 1024, nil); err != nil {
		t.Fatal(err)
	}
	stasks, err := scratch.Scan().PlanFiles(ctx)
	if err != nil || len(stasks) != 1 {
		t.Fatalf("scratch files: %v %d", err, len(stasks))
	}
	return old, stasks[0].File
}
