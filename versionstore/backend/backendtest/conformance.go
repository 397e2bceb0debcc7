package backendtest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// OpenFunc opens the backend whose data lives at dir. Called again with the
// same dir after the earlier backend was closed, it must return a backend over
// the same data; different dirs must be independent, empty stores. A backend
// that is not file-based uses dir as a name for its store (a schema, say).
//
// RunConformance closes every backend it opens, so OpenFunc should not
// register its own Close. It reports setup failures with t.Fatal.
type OpenFunc func(t *testing.T, dir string) backend.Backend

// RunConformance runs the whole suite, one subtest per behaviour, each on a
// fresh store in its own t.TempDir().
func RunConformance(t *testing.T, open OpenFunc) {
	cases := []struct {
		name string
		run  func(t *testing.T, s *store)
	}{
		{"ObjectPutGetHas", testObjectPutGetHas},
		{"ObjectMissing", testObjectMissing},
		{"ObjectPutTwice", testObjectPutTwice},
		{"ObjectEmptyData", testObjectEmptyData},
		{"ObjectGetReturnsCopy", testObjectGetReturnsCopy},
		{"ObjectsWithPrefix", testObjectsWithPrefix},
		{"ObjectsWithPrefixAllOnes", testObjectsWithPrefixAllOnes},
		{"RefCreate", testRefCreate},
		{"RefCreateExisting", testRefCreateExisting},
		{"RefCompareAndSwap", testRefCompareAndSwap},
		{"RefCompareAndSwapMismatch", testRefCompareAndSwapMismatch},
		{"RefDelete", testRefDelete},
		{"RefEmptyValueIsNotAbsent", testRefEmptyValueIsNotAbsent},
		{"RefMissing", testRefMissing},
		{"RefReturnsCopy", testRefReturnsCopy},
		{"ListRefsOrder", testListRefsOrder},
		{"FailedBatchWritesNothing", testFailedBatchWritesNothing},
		{"EmptyBatch", testEmptyBatch},
		{"DeferredBatch", testDeferredBatch},
		{"LogEmpty", testLogEmpty},
		{"LogAppendOrder", testLogAppendOrder},
		{"LogPaging", testLogPaging},
		{"LogReturnsCopy", testLogReturnsCopy},
		{"LogScanForwards", testLogScanForwards},
		{"ConcurrentSameRef", testConcurrentSameRef},
		{"ConcurrentDistinctRefs", testConcurrentDistinctRefs},
		{"Reopen", testReopen},
		{"Closed", testClosed},
		{"CloseWaitsForApply", testCloseWaitsForApply},
		{"Records", testRecords},
		{"RecordsWithFailedBatch", testRecordsWithFailedBatch},
		{"RecordCompareAndSwap", testRecordCompareAndSwap},
		{"RecordCompareAndSwapMismatch", testRecordCompareAndSwapMismatch},
		{"RecordCreateIfAbsent", testRecordCreateIfAbsent},
		{"RecordCheckFailsWholeBatch", testRecordCheckFailsWholeBatch},
		{"RecordCheckedTwice", testRecordCheckedTwice},
		{"ConcurrentRecordCompareAndSwap", testConcurrentRecordCompareAndSwap},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &store{open: open, dir: t.TempDir()}
			s.b = s.reopen(t)
			tc.run(t, s)
		})
	}
}

// store is one backend under test plus the means to reopen it.
type store struct {
	open OpenFunc
	dir  string
	b    backend.Backend
}

// reopen opens the store's dir and arranges for the backend to be closed at
// the end of the test. The caller closes the previous backend first.
func (s *store) reopen(t *testing.T) backend.Backend {
	t.Helper()
	b := s.open(t, s.dir)
	t.Cleanup(func() {
		if err := b.Close(); err != nil && !errors.Is(err, backend.ErrClosed) {
			t.Errorf("close: %v", err)
		}
	})
	return b
}

// close closes the current backend and fails the test if that fails.
func (s *store) close(t *testing.T) {
	t.Helper()
	if err := s.b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func object(data string) backend.Object {
	return backend.Object{ID: sha256.Sum256([]byte(data)), Data: []byte(data)}
}

func apply(t *testing.T, b backend.Backend, batch backend.Batch) {
	t.Helper()
	if err := b.Apply(t.Context(), batch); err != nil {
		t.Fatalf("apply: %v", err)
	}
}

func applyConflict(t *testing.T, b backend.Backend, batch backend.Batch) {
	t.Helper()
	err := b.Apply(t.Context(), batch)
	if !errors.Is(err, backend.ErrRefConflict) {
		t.Fatalf("apply: got error %v, want ErrRefConflict", err)
	}
}

func create(name, value string) backend.RefUpdate {
	return backend.RefUpdate{Name: name, New: []byte(value)}
}

func cas(name, expected, value string) backend.RefUpdate {
	return backend.RefUpdate{Name: name, Expected: []byte(expected), New: []byte(value)}
}

func wantObject(t *testing.T, b backend.Backend, o backend.Object) {
	t.Helper()
	got, err := b.GetObject(t.Context(), o.ID)
	if err != nil {
		t.Fatalf("get object %s: %v", o.ID, err)
	}
	if !bytes.Equal(got, o.Data) {
		t.Fatalf("get object %s: got %q, want %q", o.ID, got, o.Data)
	}
	has, err := b.HasObject(t.Context(), o.ID)
	if err != nil || !has {
		t.Fatalf("has object %s: got %v, %v; want true", o.ID, has, err)
	}
}

func wantNoObject(t *testing.T, b backend.Backend, id backend.ObjectID) {
	t.Helper()
	if _, err := b.GetObject(t.Context(), id); !errors.Is(err, backend.ErrObjectNotFound) {
		t.Fatalf("get object %s: got error %v, want ErrObjectNotFound", id, err)
	}
	has, err := b.HasObject(t.Context(), id)
	if err != nil || has {
		t.Fatalf("has object %s: got %v, %v; want false", id, has, err)
	}
}

func wantRef(t *testing.T, b backend.Backend, name, value string) {
	t.Helper()
	got, err := b.GetRef(t.Context(), name)
	if err != nil {
		t.Fatalf("get ref %q: %v", name, err)
	}
	if string(got) != value {
		t.Fatalf("get ref %q: got %q, want %q", name, got, value)
	}
}

func wantNoRef(t *testing.T, b backend.Backend, name string) {
	t.Helper()
	if v, err := b.GetRef(t.Context(), name); !errors.Is(err, backend.ErrRefNotFound) {
		t.Fatalf("get ref %q: got %q, %v; want ErrRefNotFound", name, v, err)
	}
}

func wantRefs(t *testing.T, b backend.Backend, want ...backend.Ref) {
	t.Helper()
	got, err := b.ListRefs(t.Context())
	if err != nil {
		t.Fatalf("list refs: %v", err)
	}
	if !slices.EqualFunc(got, want, func(x, y backend.Ref) bool {
		return x.Name == y.Name && bytes.Equal(x.Value, y.Value)
	}) {
		t.Fatalf("list refs:\n got  %s\n want %s", formatRefs(got), formatRefs(want))
	}
}

func formatRefs(refs []backend.Ref) string {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = fmt.Sprintf("%s=%q", r.Name, r.Value)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func ref(name, value string) backend.Ref { return backend.Ref{Name: name, Value: []byte(value)} }

// readLog pages through the whole log, newest first, with a small page size
// so paging itself is exercised, and checks seqs strictly decrease.
func readLog(t *testing.T, b backend.Backend) []backend.LogRecord {
	t.Helper()
	var all []backend.LogRecord
	var before uint64
	for {
		page, err := b.ReadLog(t.Context(), before, 7)
		if err != nil {
			t.Fatalf("read log before %d: %v", before, err)
		}
		if len(page) > 7 {
			t.Fatalf("read log before %d limit 7: got %d records", before, len(page))
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		before = page[len(page)-1].Seq
		if before == 0 {
			t.Fatalf("read log: record with seq 0")
		}
	}
	for i := 1; i < len(all); i++ {
		if all[i].Seq >= all[i-1].Seq {
			t.Fatalf("read log: seq %d follows seq %d; want strictly decreasing", all[i].Seq, all[i-1].Seq)
		}
	}
	return all
}

// logValues returns the log's values oldest first.
func logValues(t *testing.T, b backend.Backend) []string {
	t.Helper()
	recs := readLog(t, b)
	vals := make([]string, len(recs))
	for i, r := range recs {
		vals[len(recs)-1-i] = string(r.Value)
	}
	return vals
}

func testObjectPutGetHas(t *testing.T, s *store) {
	a, b := object("a"), object("b")
	apply(t, s.b, backend.Batch{Objects: []backend.Object{a, b}})
	wantObject(t, s.b, a)
	wantObject(t, s.b, b)
	wantNoObject(t, s.b, object("c").ID)
}

func testObjectMissing(t *testing.T, s *store) {
	wantNoObject(t, s.b, object("never written").ID)
	wantNoObject(t, s.b, backend.ObjectID{})
}

func testObjectPutTwice(t *testing.T, s *store) {
	a := object("a")
	apply(t, s.b, backend.Batch{Objects: []backend.Object{a, a}})
	apply(t, s.b, backend.Batch{Objects: []backend.Object{a}})
	wantObject(t, s.b, a)
	ids, err := s.b.ObjectsWithPrefix(t.Context(), nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != a.ID {
		t.Fatalf("objects: got %v, want just %s", ids, a.ID)
	}
}

func testObjectEmptyData(t *testing.T, s *store) {
	e := object("")
	apply(t, s.b, backend.Batch{Objects: []backend.Object{e}})
	wantObject(t, s.b, e)
}

func testObjectGetReturnsCopy(t *testing.T, s *store) {
	a := object("immutable")
	apply(t, s.b, backend.Batch{Objects: []backend.Object{a}})
	got, err := s.b.GetObject(t.Context(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	clear(got)
	wantObject(t, s.b, a)
}

func testObjectsWithPrefix(t *testing.T, s *store) {
	var objs []backend.Object
	for i := range 300 {
		objs = append(objs, object(fmt.Sprintf("object %d", i)))
	}
	apply(t, s.b, backend.Batch{Objects: objs})
	ids := make([]backend.ObjectID, len(objs))
	for i, o := range objs {
		ids[i] = o.ID
	}
	slices.SortFunc(ids, func(x, y backend.ObjectID) int { return bytes.Compare(x[:], y[:]) })
	matching := func(prefix []byte) []backend.ObjectID {
		var m []backend.ObjectID
		for _, id := range ids {
			if bytes.HasPrefix(id[:], prefix) {
				m = append(m, id)
			}
		}
		return m
	}
	some := ids[137]
	for _, tc := range []struct {
		name   string
		prefix []byte
		limit  int
		want   []backend.ObjectID
	}{
		{"empty prefix lists all", nil, 1000, ids},
		{"empty prefix honours limit", []byte{}, 5, ids[:5]},
		{"one byte", some[:1], 1000, matching(some[:1])},
		{"two bytes", some[:2], 1000, matching(some[:2])},
		{"full id", some[:], 1000, []backend.ObjectID{some}},
		{"limit one", some[:1], 1, matching(some[:1])[:1]},
		{"no match", missingPrefix(ids), 1000, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.b.ObjectsWithPrefix(t.Context(), tc.prefix, tc.limit)
			if err != nil {
				t.Fatalf("objects with prefix %x: %v", tc.prefix, err)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && !slices.Equal(got, tc.want)) {
				t.Fatalf("objects with prefix %x limit %d:\n got  %v\n want %v", tc.prefix, tc.limit, got, tc.want)
			}
		})
	}
}

// missingPrefix returns a two-byte prefix no id in ids starts with.
func missingPrefix(ids []backend.ObjectID) []byte {
	for p := range 1 << 16 {
		prefix := []byte{byte(p >> 8), byte(p)}
		if !slices.ContainsFunc(ids, func(id backend.ObjectID) bool { return bytes.HasPrefix(id[:], prefix) }) {
			return prefix
		}
	}
	return nil
}

// testObjectsWithPrefixAllOnes covers prefixes of 0xff bytes, which have no
// successor of the same length: a backend computing an exclusive upper bound
// by incrementing the prefix must handle it.
func testObjectsWithPrefixAllOnes(t *testing.T, s *store) {
	var ff backend.Object
	for i := 0; ; i++ {
		o := object(fmt.Sprintf("search %d", i))
		if o.ID[0] == 0xff && o.ID[1] == 0xff {
			ff = o
			break
		}
	}
	apply(t, s.b, backend.Batch{Objects: []backend.Object{ff, object("other")}})
	for _, prefix := range [][]byte{{0xff}, {0xff, 0xff}, ff.ID[:]} {
		got, err := s.b.ObjectsWithPrefix(t.Context(), prefix, 10)
		if err != nil {
			t.Fatalf("objects with prefix %x: %v", prefix, err)
		}
		if len(got) != 1 || got[0] != ff.ID {
			t.Fatalf("objects with prefix %x: got %v, want [%s]", prefix, got, ff.ID)
		}
	}
}

func testRefCreate(t *testing.T, s *store) {
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{create("main", "c1"), create("dev", "c2")}})
	wantRef(t, s.b, "main", "c1")
	wantRef(t, s.b, "dev", "c2")
	wantRefs(t, s.b, ref("dev", "c2"), ref("main", "c1"))
}

func testRefCreateExisting(t *testing.T, s *store) {
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{create("main", "c1")}})
	applyConflict(t, s.b, backend.Batch{Refs: []backend.RefUpdate{create("main", "c2")}})
	wantRef(t, s.b, "main", "c1")
}

func testRefCompareAndSwap(t *testing.T, s *store) {
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{create("main", "c1")}})
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{cas("main", "c1", "c2")}})
	wantRef(t, s.b, "main", "c2")
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{cas("main", "c2", "c3")}})
	wantRef(t, s.b, "main", "c3")
}

func testRefCompareAndSwapMismatch(t *testing.T, s *store) {
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{create("main", "c1")}})
	for _, tc := range []struct {
		name   string
		update backend.RefUpdate
	}{
		{"stale value", cas("main", "c0", "c2")},
		{"prefix of value", cas("main", "c", "c2")},
		{"empty expected", backend.RefUpdate{Name: "main", Expected: []byte{}, New: []byte("c2")}},
		{"absent ref", cas("dev", "c1", "c2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			applyConflict(t, s.b, backend.Batch{Refs: []backend.RefUpdate{tc.update}})
			wantRef(t, s.b, "main", "c1")
			wantNoRef(t, s.b, "dev")
		})
	}
}

func testRefDelete(t *testing.T, s *store) {
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{create("main", "c1"), create("dev", "d1")}})
	applyConflict(t, s.b, backend.Batch{Refs: []backend.RefUpdate{{Name: "dev", Expected: []byte("stale")}}})
	wantRef(t, s.b, "dev", "d1")
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{{Name: "dev", Expected: []byte("d1")}}})
	wantNoRef(t, s.b, "dev")
	wantRefs(t, s.b, ref("main", "c1"))
	// A deleted ref can be created again.
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{create("dev", "d2")}})
	wantRef(t, s.b, "dev", "d2")
}

// testRefEmptyValueIsNotAbsent pins the nil/empty distinction: Expected nil
// means "absent", Expected []byte{} means "present with an empty value".
func testRefEmptyValueIsNotAbsent(t *testing.T, s *store) {
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{{Name: "e", New: []byte{}}}})
	got, err := s.b.GetRef(t.Context(), "e")
	if err != nil || len(got) != 0 {
		t.Fatalf("get ref e: got %q, %v; want empty value", got, err)
	}
	applyConflict(t, s.b, backend.Batch{Refs: []backend.RefUpdate{create("e", "x")}})
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{{Name: "e", Expected: []byte{}, New: []byte("x")}}})
	wantRef(t, s.b, "e", "x")
}

func testRefMissing(t *testing.T, s *store) {
	wantNoRef(t, s.b, "main")
	wantRefs(t, s.b)
}

func testRefReturnsCopy(t *testing.T, s *store) {
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{create("main", "c1")}})
	got, err := s.b.GetRef(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	clear(got)
	refs, err := s.b.ListRefs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		clear(r.Value)
	}
	wantRef(t, s.b, "main", "c1")
	wantRefs(t, s.b, ref("main", "c1"))
}

func testListRefsOrder(t *testing.T, s *store) {
	names := []string{"main", "feature/b", "feature/a", "a", "Z", "release-1", "feature", "feature/a/x", "é"}
	var updates []backend.RefUpdate
	for _, n := range names {
		updates = append(updates, create(n, "v-"+n))
	}
	apply(t, s.b, backend.Batch{Refs: updates})
	slices.Sort(names) // bytewise
	var want []backend.Ref
	for _, n := range names {
		want = append(want, ref(n, "v-"+n))
	}
	wantRefs(t, s.b, want...)
}

func testFailedBatchWritesNothing(t *testing.T, s *store) {
	apply(t, s.b, backend.Batch{
		Refs: []backend.RefUpdate{create("main", "m1"), create("other", "o1")},
		Log:  [][]byte{[]byte("setup")},
	})
	good := cas("other", "o1", "o2")
	bad := cas("main", "stale", "m2")
	for _, tc := range []struct {
		name string
		refs []backend.RefUpdate
	}{
		{"conflict last", []backend.RefUpdate{good, bad, create("new", "n1")}},
		{"conflict first", []backend.RefUpdate{bad, good, create("new", "n1")}},
		{"create existing", []backend.RefUpdate{good, create("main", "m2")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, y := object("x "+tc.name), object("y "+tc.name)
			applyConflict(t, s.b, backend.Batch{
				Objects: []backend.Object{x, y},
				Refs:    tc.refs,
				Log:     [][]byte{[]byte("l1"), []byte("l2")},
			})
			wantNoObject(t, s.b, x.ID)
			wantNoObject(t, s.b, y.ID)
			wantRefs(t, s.b, ref("main", "m1"), ref("other", "o1"))
			if got := logValues(t, s.b); !slices.Equal(got, []string{"setup"}) {
				t.Fatalf("log after failed batch: got %q, want [setup]", got)
			}
		})
	}
}

// testDeferredBatch: a deferred batch is applied as any other (its
// compare-and-swap holds, a failed one writes nothing, its ref is read at
// once); its log records show at the latest once a later synced batch
// returned, in order; and a clean close and reopen keeps it.
func testDeferredBatch(t *testing.T, s *store) {
	x := object("deferred x")
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{create("main", "m1")}, Log: [][]byte{[]byte("l1")}})
	applyConflict(t, s.b, backend.Batch{Refs: []backend.RefUpdate{cas("scratch", "none", "s0")}, Log: [][]byte{[]byte("bad")}, Deferred: true})
	apply(t, s.b, backend.Batch{Objects: []backend.Object{x}, Refs: []backend.RefUpdate{create("scratch", "s1")}, Log: [][]byte{[]byte("l2")}, Deferred: true})
	wantRef(t, s.b, "scratch", "s1")
	wantObject(t, s.b, x)
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{cas("main", "m1", "m2")}, Log: [][]byte{[]byte("l3")}})
	if got, want := logValues(t, s.b), []string{"l1", "l2", "l3"}; !slices.Equal(got, want) {
		t.Fatalf("log after a synced batch: got %q, want %q", got, want)
	}
	s.close(t)
	s.b = s.reopen(t)
	wantRefs(t, s.b, ref("main", "m2"), ref("scratch", "s1"))
	wantObject(t, s.b, x)
}

func testEmptyBatch(t *testing.T, s *store) {
	apply(t, s.b, backend.Batch{})
	wantRefs(t, s.b)
	if got := readLog(t, s.b); len(got) != 0 {
		t.Fatalf("log: got %v, want empty", got)
	}
}

func testLogEmpty(t *testing.T, s *store) {
	for _, before := range []uint64{0, 1, 1 << 40} {
		got, err := s.b.ReadLog(t.Context(), before, 10)
		if err != nil || len(got) != 0 {
			t.Fatalf("read log before %d: got %v, %v; want empty", before, got, err)
		}
	}
}

func testLogAppendOrder(t *testing.T, s *store) {
	apply(t, s.b, backend.Batch{Log: [][]byte{[]byte("a"), []byte("b"), []byte("c")}})
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{create("main", "m")}, Log: [][]byte{[]byte("d")}})
	apply(t, s.b, backend.Batch{Log: [][]byte{[]byte("e"), {}}})
	want := []string{"a", "b", "c", "d", "e", ""}
	if got := logValues(t, s.b); !slices.Equal(got, want) {
		t.Fatalf("log oldest first: got %q, want %q", got, want)
	}
	newest, err := s.b.ReadLog(t.Context(), 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(newest) != 2 || string(newest[0].Value) != "" || string(newest[1].Value) != "e" {
		t.Fatalf("read log newest 2: got %v, want records \"\" then \"e\"", newest)
	}
}

// testLogScanForwards holds a backend.LogScanner's forward reads to the
// records ReadLog shows, from every starting point and page size.
func testLogScanForwards(t *testing.T, s *store) {
	sc, ok := s.b.(backend.LogScanner)
	if !ok {
		t.Skip("the backend does not scan its log forwards")
	}
	if got, err := sc.ScanLog(t.Context(), 0, 10); err != nil || len(got) != 0 {
		t.Fatalf("scan empty log: got %v, %v; want nothing", got, err)
	}
	for i := range 20 {
		apply(t, s.b, backend.Batch{Log: [][]byte{[]byte(fmt.Sprint(i))}})
	}
	all := readLog(t, s.b)
	slices.Reverse(all)
	for _, limit := range []int{1, 3, 20, 50} {
		for start := range len(all) + 1 {
			var after uint64
			if start > 0 {
				after = all[start-1].Seq
			}
			var got []backend.LogRecord
			for {
				page, err := sc.ScanLog(t.Context(), after, limit)
				if err != nil {
					t.Fatalf("scan log after %d limit %d: %v", after, limit, err)
				}
				if len(page) > limit {
					t.Fatalf("scan log after %d limit %d: got %d records", after, limit, len(page))
				}
				if len(page) == 0 {
					break
				}
				got = append(got, page...)
				after = page[len(page)-1].Seq
			}
			want := all[start:]
			if !slices.EqualFunc(got, want, func(a, b backend.LogRecord) bool { return a.Seq == b.Seq && string(a.Value) == string(b.Value) }) {
				t.Fatalf("scan log from record %d, limit %d: got %v, want %v", start, limit, got, want)
			}
		}
	}
}

func testLogPaging(t *testing.T, s *store) {
	for i := range 25 {
		apply(t, s.b, backend.Batch{Log: [][]byte{[]byte(fmt.Sprint(i))}})
	}
	all, err := s.b.ReadLog(t.Context(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 25 {
		t.Fatalf("read log: got %d records, want 25", len(all))
	}
	for i, r := range all {
		if want := fmt.Sprint(24 - i); string(r.Value) != want {
			t.Fatalf("read log record %d: got %q, want %q", i, r.Value, want)
		}
	}
	for _, tc := range []struct {
		name   string
		before uint64
		limit  int
		want   []backend.LogRecord
	}{
		{"newest", 0, 3, all[:3]},
		{"before newest", all[0].Seq, 3, all[1:4]},
		{"before middle", all[10].Seq, 5, all[11:16]},
		{"limit past the end", all[20].Seq, 10, all[21:]},
		{"before oldest", all[24].Seq, 10, nil},
		{"before beyond newest", all[0].Seq + 1000, 2, all[:2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.b.ReadLog(t.Context(), tc.before, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tc.want, func(x, y backend.LogRecord) bool {
				return x.Seq == y.Seq && bytes.Equal(x.Value, y.Value)
			}) {
				t.Fatalf("read log before %d limit %d:\n got  %v\n want %v", tc.before, tc.limit, got, tc.want)
			}
		})
	}
}

func testLogReturnsCopy(t *testing.T, s *store) {
	apply(t, s.b, backend.Batch{Log: [][]byte{[]byte("record")}})
	got, err := s.b.ReadLog(t.Context(), 0, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("read log: got %v, %v", got, err)
	}
	clear(got[0].Value)
	if vals := logValues(t, s.b); !slices.Equal(vals, []string{"record"}) {
		t.Fatalf("log after clearing a returned value: got %q", vals)
	}
}

// testConcurrentSameRef races 32 writers on one ref for several rounds.
// Exactly one may win each round; the losers' batches leave no trace.
func testConcurrentSameRef(t *testing.T, s *store) {
	const writers, rounds = 32, 8
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{create("main", "start")}})
	for round := range rounds {
		cur, err := s.b.GetRef(t.Context(), "main")
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg        sync.WaitGroup
			start     = make(chan struct{})
			winners   atomic.Int32
			winner    atomic.Int32
			conflicts atomic.Int32
		)
		for w := range writers {
			wg.Go(func() {
				name := fmt.Sprintf("round %d writer %d", round, w)
				batch := backend.Batch{
					Objects: []backend.Object{object(name)},
					Refs:    []backend.RefUpdate{{Name: "main", Expected: cur, New: []byte(name)}},
					Log:     [][]byte{[]byte(name)},
				}
				<-start
				err := s.b.Apply(t.Context(), batch)
				switch {
				case err == nil:
					winners.Add(1)
					winner.Store(int32(w))
				case errors.Is(err, backend.ErrRefConflict):
					conflicts.Add(1)
				default:
					t.Errorf("%s: apply: %v", name, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if winners.Load() != 1 || conflicts.Load() != writers-1 {
			t.Fatalf("round %d: %d winners and %d conflicts, want 1 and %d", round, winners.Load(), conflicts.Load(), writers-1)
		}
		won := fmt.Sprintf("round %d writer %d", round, winner.Load())
		wantRef(t, s.b, "main", won)
		for w := range writers {
			o := object(fmt.Sprintf("round %d writer %d", round, w))
			if int32(w) == winner.Load() {
				wantObject(t, s.b, o)
			} else {
				wantNoObject(t, s.b, o.ID)
			}
		}
		vals := logValues(t, s.b)
		if len(vals) != round+1 || vals[round] != won {
			t.Fatalf("round %d: log %q, want %d records ending with %q", round, vals, round+1, won)
		}
	}
}

// testConcurrentDistinctRefs runs writers that each own a ref: none of them
// may see a conflict, and every log record must survive with a unique seq.
func testConcurrentDistinctRefs(t *testing.T, s *store) {
	const writers, updates = 32, 10
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("ref-%02d", w)
			<-start
			prev := []byte(nil)
			for i := range updates {
				val := []byte(fmt.Sprintf("%s v%d", name, i))
				err := s.b.Apply(t.Context(), backend.Batch{
					Objects: []backend.Object{object(string(val))},
					Refs:    []backend.RefUpdate{{Name: name, Expected: prev, New: val}},
					Log:     [][]byte{val},
				})
				if err != nil {
					t.Errorf("%s update %d: %v", name, i, err)
					return
				}
				prev = val
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	var wantRefList []backend.Ref
	var wantLog []string
	for w := range writers {
		name := fmt.Sprintf("ref-%02d", w)
		wantRefList = append(wantRefList, ref(name, fmt.Sprintf("%s v%d", name, updates-1)))
		for i := range updates {
			wantLog = append(wantLog, fmt.Sprintf("%s v%d", name, i))
		}
	}
	wantRefs(t, s.b, wantRefList...)
	got := logValues(t, s.b) // also checks seqs strictly increase
	// Each writer's records must appear in its own order.
	next := make(map[string]int)
	for _, v := range got {
		name, _, _ := strings.Cut(v, " ")
		if want := fmt.Sprintf("%s v%d", name, next[name]); v != want {
			t.Fatalf("log: %q out of order, want %q next", v, want)
		}
		next[name]++
	}
	slices.Sort(got)
	slices.Sort(wantLog)
	if !slices.Equal(got, wantLog) {
		t.Fatalf("log: got %d records, want %d", len(got), len(wantLog))
	}
}

func testReopen(t *testing.T, s *store) {
	a, b := object("a"), object("b")
	apply(t, s.b, backend.Batch{
		Objects: []backend.Object{a},
		Refs:    []backend.RefUpdate{create("main", "m1"), create("dev", "d1")},
		Log:     [][]byte{[]byte("one")},
	})
	apply(t, s.b, backend.Batch{
		Objects: []backend.Object{b},
		Refs:    []backend.RefUpdate{cas("main", "m1", "m2"), {Name: "dev", Expected: []byte("d1")}},
		Log:     [][]byte{[]byte("two"), []byte("three")},
	})
	before := readLog(t, s.b)
	s.close(t)

	s.b = s.reopen(t)
	wantObject(t, s.b, a)
	wantObject(t, s.b, b)
	wantRefs(t, s.b, ref("main", "m2"))
	after := readLog(t, s.b)
	if !slices.EqualFunc(after, before, func(x, y backend.LogRecord) bool {
		return x.Seq == y.Seq && bytes.Equal(x.Value, y.Value)
	}) {
		t.Fatalf("log after reopen:\n got  %v\n want %v", after, before)
	}
	// The reopened store still enforces compare-and-swap and continues the
	// sequence instead of reusing seqs.
	applyConflict(t, s.b, backend.Batch{Refs: []backend.RefUpdate{cas("main", "m1", "m3")}})
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{cas("main", "m2", "m3")}, Log: [][]byte{[]byte("four")}})
	newest, err := s.b.ReadLog(t.Context(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(newest) != 1 || newest[0].Seq <= before[0].Seq || string(newest[0].Value) != "four" {
		t.Fatalf("first record after reopen: got %v, want \"four\" with seq > %d", newest, before[0].Seq)
	}
}

func testClosed(t *testing.T, s *store) {
	a := object("a")
	apply(t, s.b, backend.Batch{Objects: []backend.Object{a}, Refs: []backend.RefUpdate{create("main", "m")}})
	s.close(t)
	ctx := t.Context()
	calls := map[string]func() error{
		"GetObject": func() error { _, err := s.b.GetObject(ctx, a.ID); return err },
		"HasObject": func() error { _, err := s.b.HasObject(ctx, a.ID); return err },
		"ObjectsWithPrefix": func() error {
			_, err := s.b.ObjectsWithPrefix(ctx, a.ID[:1], 10)
			return err
		},
		"GetRef":   func() error { _, err := s.b.GetRef(ctx, "main"); return err },
		"ListRefs": func() error { _, err := s.b.ListRefs(ctx); return err },
		"ReadLog":  func() error { _, err := s.b.ReadLog(ctx, 0, 10); return err },
		"Apply": func() error {
			return s.b.Apply(ctx, backend.Batch{Refs: []backend.RefUpdate{cas("main", "m", "n")}})
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, backend.ErrClosed) {
			t.Errorf("%s after Close: got error %v, want ErrClosed", name, err)
		}
	}
	if err := s.b.Close(); err != nil && !errors.Is(err, backend.ErrClosed) {
		t.Errorf("second Close: got error %v, want nil or ErrClosed", err)
	}
}

// testCloseWaitsForApply closes the store while writers are busy. Every Apply
// must either succeed, and then be durable, or fail with ErrClosed and have
// written nothing; so after reopening, each writer's ref holds exactly its
// last acknowledged value.
func testCloseWaitsForApply(t *testing.T, s *store) {
	const writers = 8
	var (
		wg    sync.WaitGroup
		acked [writers]atomic.Int64 // last acknowledged version, -1 for none
		total atomic.Int64
	)
	for w := range writers {
		acked[w].Store(-1)
		wg.Go(func() {
			name := fmt.Sprintf("w%d", w)
			var prev []byte
			for i := int64(0); ; i++ {
				val := []byte(fmt.Sprint(i))
				err := s.b.Apply(t.Context(), backend.Batch{
					Refs: []backend.RefUpdate{{Name: name, Expected: prev, New: val}},
					Log:  [][]byte{[]byte(name + " " + string(val))},
				})
				switch {
				case err == nil:
					acked[w].Store(i)
					total.Add(1)
					prev = val
				case errors.Is(err, backend.ErrClosed):
					return
				default:
					t.Errorf("%s: apply %d: %v", name, i, err)
					return
				}
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for total.Load() < 2*writers && time.Now().Before(deadline) && !t.Failed() {
		time.Sleep(time.Millisecond)
	}
	s.close(t)
	wg.Wait()
	if t.Failed() {
		return
	}

	s.b = s.reopen(t)
	for w := range writers {
		name := fmt.Sprintf("w%d", w)
		if last := acked[w].Load(); last < 0 {
			wantNoRef(t, s.b, name)
		} else {
			wantRef(t, s.b, name, fmt.Sprint(last))
		}
	}
	if got := int64(len(readLog(t, s.b))); got != total.Load() {
		t.Fatalf("log after reopen: %d records, want %d acknowledged", got, total.Load())
	}
}

func testRecords(t *testing.T, s *store) {
	ctx := t.Context()
	if _, err := s.b.GetRecord(ctx, "k1"); !errors.Is(err, backend.ErrRecordNotFound) {
		t.Fatalf("missing record: got %v, want ErrRecordNotFound", err)
	}
	apply(t, s.b, backend.Batch{Records: []backend.Record{{Key: "k1", Value: []byte("v1")}, {Key: "k2", Value: []byte("v2")}, {Key: "k3", Value: nil}}})
	apply(t, s.b, backend.Batch{Records: []backend.Record{{Key: "k1", Value: []byte("v1b")}}, DeleteRecords: []string{"k2", "absent"}})
	if v, err := s.b.GetRecord(ctx, "k1"); err != nil || string(v) != "v1b" {
		t.Fatalf("overwritten record: %q, %v", v, err)
	}
	if _, err := s.b.GetRecord(ctx, "k2"); !errors.Is(err, backend.ErrRecordNotFound) {
		t.Fatalf("deleted record: got %v, want ErrRecordNotFound", err)
	}
	if v, err := s.b.GetRecord(ctx, "k3"); err != nil || len(v) != 0 {
		t.Fatalf("empty record: %q, %v", v, err)
	}
	for i := 0; i < 5; i++ {
		apply(t, s.b, backend.Batch{Records: []backend.Record{{Key: fmt.Sprintf("page/%d", i), Value: []byte{byte(i)}}}})
	}
	var keys []string
	after := ""
	for {
		recs, err := s.b.ScanRecords(ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			break
		}
		for _, r := range recs {
			keys = append(keys, r.Key)
			after = r.Key
		}
	}
	want := []string{"k1", "k3", "page/0", "page/1", "page/2", "page/3", "page/4"}
	if !slices.Equal(keys, want) {
		t.Fatalf("scanned records %q, want %q", keys, want)
	}
	s.close(t)
	s.b = s.reopen(t)
	if v, err := s.b.GetRecord(ctx, "page/3"); err != nil || !bytes.Equal(v, []byte{3}) {
		t.Fatalf("record after reopen: %q, %v", v, err)
	}
}

func testRecordsWithFailedBatch(t *testing.T, s *store) {
	ctx := t.Context()
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{create("main", "m1")}, Records: []backend.Record{{Key: "keep", Value: []byte("1")}}})
	applyConflict(t, s.b, backend.Batch{
		Refs:          []backend.RefUpdate{cas("main", "stale", "m2")},
		Records:       []backend.Record{{Key: "new", Value: []byte("x")}},
		DeleteRecords: []string{"keep"},
	})
	if _, err := s.b.GetRecord(ctx, "new"); !errors.Is(err, backend.ErrRecordNotFound) {
		t.Fatalf("record of a failed batch: got %v, want ErrRecordNotFound", err)
	}
	if v, err := s.b.GetRecord(ctx, "keep"); err != nil || string(v) != "1" {
		t.Fatalf("record deleted by a failed batch: %q, %v", v, err)
	}
}

func recordConflict(t *testing.T, b backend.Backend, batch backend.Batch, key string) {
	t.Helper()
	err := b.Apply(t.Context(), batch)
	var rc *backend.RecordConflictError
	if !errors.Is(err, backend.ErrRecordConflict) || !errors.As(err, &rc) || rc.Key != key {
		t.Fatalf("apply: got error %v, want a *RecordConflictError for %q", err, key)
	}
}

func wantRecord(t *testing.T, b backend.Backend, key, value string) {
	t.Helper()
	v, err := b.GetRecord(t.Context(), key)
	if err != nil || string(v) != value {
		t.Fatalf("record %q: got %q, %v; want %q", key, v, err, value)
	}
}

func wantNoRecord(t *testing.T, b backend.Backend, key string) {
	t.Helper()
	if v, err := b.GetRecord(t.Context(), key); !errors.Is(err, backend.ErrRecordNotFound) {
		t.Fatalf("record %q: got %q, %v; want ErrRecordNotFound", key, v, err)
	}
}

func recordCAS(key, expected, value string) backend.Batch {
	return backend.Batch{
		RecordChecks: []backend.RecordCheck{{Key: key, Expected: []byte(expected)}},
		Records:      []backend.Record{{Key: key, Value: []byte(value)}},
	}
}

func testRecordCompareAndSwap(t *testing.T, s *store) {
	apply(t, s.b, backend.Batch{Records: []backend.Record{{Key: "q", Value: []byte("v1")}}})
	apply(t, s.b, recordCAS("q", "v1", "v2"))
	wantRecord(t, s.b, "q", "v2")
	// A check alone, with a delete: compare-and-delete.
	apply(t, s.b, backend.Batch{RecordChecks: []backend.RecordCheck{{Key: "q", Expected: []byte("v2")}}, DeleteRecords: []string{"q"}})
	wantNoRecord(t, s.b, "q")
	// An empty value is a value, not absence.
	apply(t, s.b, backend.Batch{Records: []backend.Record{{Key: "e", Value: []byte{}}}})
	recordConflict(t, s.b, backend.Batch{RecordChecks: []backend.RecordCheck{{Key: "e"}}}, "e")
	apply(t, s.b, backend.Batch{RecordChecks: []backend.RecordCheck{{Key: "e", Expected: []byte{}}}, Records: []backend.Record{{Key: "e", Value: []byte("x")}}})
	wantRecord(t, s.b, "e", "x")
	s.close(t)
	s.b = s.reopen(t)
	wantRecord(t, s.b, "e", "x")
}

func testRecordCompareAndSwapMismatch(t *testing.T, s *store) {
	apply(t, s.b, backend.Batch{Records: []backend.Record{{Key: "q", Value: []byte("v1")}}})
	recordConflict(t, s.b, recordCAS("q", "stale", "v2"), "q")
	recordConflict(t, s.b, recordCAS("absent", "v1", "v2"), "absent")
	wantRecord(t, s.b, "q", "v1")
	wantNoRecord(t, s.b, "absent")
}

func testRecordCreateIfAbsent(t *testing.T, s *store) {
	create := backend.Batch{RecordChecks: []backend.RecordCheck{{Key: "q"}}, Records: []backend.Record{{Key: "q", Value: []byte("first")}}}
	apply(t, s.b, create)
	wantRecord(t, s.b, "q", "first")
	create.Records[0].Value = []byte("second")
	recordConflict(t, s.b, create, "q")
	wantRecord(t, s.b, "q", "first")
}

// testRecordCheckFailsWholeBatch: a failed record check keeps every other
// part of the batch out, as a commit or merge carrying queue state needs.
func testRecordCheckFailsWholeBatch(t *testing.T, s *store) {
	apply(t, s.b, backend.Batch{Refs: []backend.RefUpdate{create("main", "m1")}, Records: []backend.Record{{Key: "q", Value: []byte("v1")}, {Key: "other", Value: []byte("o1")}}})
	obj := object("merge commit")
	recordConflict(t, s.b, backend.Batch{
		Objects:       []backend.Object{obj},
		Refs:          []backend.RefUpdate{cas("main", "m1", "m2")},
		Log:           [][]byte{[]byte("moved")},
		RecordChecks:  []backend.RecordCheck{{Key: "q", Expected: []byte("stale")}},
		Records:       []backend.Record{{Key: "q", Value: []byte("v2")}, {Key: "new", Value: []byte("n")}},
		DeleteRecords: []string{"other"},
	}, "q")
	wantRef(t, s.b, "main", "m1")
	wantNoObject(t, s.b, obj.ID)
	if got := logValues(t, s.b); len(got) != 0 {
		t.Fatalf("log after a failed batch: %q", got)
	}
	wantRecord(t, s.b, "q", "v1")
	wantRecord(t, s.b, "other", "o1")
	wantNoRecord(t, s.b, "new")
	// A ref conflict keeps the record write out as well.
	applyConflict(t, s.b, backend.Batch{
		Refs:         []backend.RefUpdate{cas("main", "stale", "m2")},
		RecordChecks: []backend.RecordCheck{{Key: "q", Expected: []byte("v1")}},
		Records:      []backend.Record{{Key: "q", Value: []byte("v2")}},
	})
	wantRecord(t, s.b, "q", "v1")
	// With everything matching, all of it lands.
	apply(t, s.b, backend.Batch{
		Objects:      []backend.Object{obj},
		Refs:         []backend.RefUpdate{cas("main", "m1", "m2")},
		RecordChecks: []backend.RecordCheck{{Key: "q", Expected: []byte("v1")}},
		Records:      []backend.Record{{Key: "q", Value: []byte("v2")}},
	})
	wantRef(t, s.b, "main", "m2")
	wantObject(t, s.b, obj)
	wantRecord(t, s.b, "q", "v2")
}

func testRecordCheckedTwice(t *testing.T, s *store) {
	err := s.b.Apply(t.Context(), backend.Batch{RecordChecks: []backend.RecordCheck{{Key: "q"}, {Key: "q"}}, Records: []backend.Record{{Key: "q", Value: []byte("x")}}})
	if err == nil {
		t.Fatal("a batch checking one record twice was applied")
	}
	wantNoRecord(t, s.b, "q")
	// Unchecked writes of one key may repeat: the last one wins.
	apply(t, s.b, backend.Batch{Records: []backend.Record{{Key: "q", Value: []byte("a")}, {Key: "q", Value: []byte("b")}}})
	wantRecord(t, s.b, "q", "b")
}

// testConcurrentRecordCompareAndSwap: writers increment one counter record
// by compare-and-swap, retrying on conflict, while others overwrite a
// second key unconditionally; no increment may be lost.
func testConcurrentRecordCompareAndSwap(t *testing.T, s *store) {
	const writers, increments = 4, 25
	apply(t, s.b, backend.Batch{Records: []backend.Record{{Key: "n", Value: []byte("0")}}})
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < increments; {
				cur, err := s.b.GetRecord(t.Context(), "n")
				if err != nil {
					errs <- err
					return
				}
				var n int
				fmt.Sscan(string(cur), &n)
				err = s.b.Apply(t.Context(), backend.Batch{
					RecordChecks: []backend.RecordCheck{{Key: "n", Expected: cur}},
					Records:      []backend.Record{{Key: "n", Value: []byte(fmt.Sprint(n + 1))}, {Key: "noise", Value: []byte(fmt.Sprint(w))}},
				})
				switch {
				case err == nil:
					done++
				case !errors.Is(err, backend.ErrRecordConflict):
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wantRecord(t, s.b, "n", fmt.Sprint(writers*increments))
}
