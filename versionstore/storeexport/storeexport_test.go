package storeexport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/backend"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
	"github.com/floe-catalog/floe/versionstore/storeexport/exporttest"
)

// TestMain makes every page small, so the tests walk the object id space
// several prefixes deep and read the log and the records over many pages.
func TestMain(m *testing.M) {
	objectPage, logPage, recordPage = 16, 7, 2
	os.Exit(m.Run())
}

// source is a Pebble store on disk with a populated history; the backend
// stays usable after the store is closed only through a reopen, so it is
// kept open here and read directly.
func source(t *testing.T) (*versionstore.Store, backend.Backend) {
	t.Helper()
	be, err := pebblebackend.Open(filepath.Join(t.TempDir(), "src"), pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := versionstore.Open(t.Context(), be, versionstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	exporttest.Populate(t, s)
	return s, be
}

// memBackend is an empty Pebble backend in memory.
func memBackend(t *testing.T) *pebblebackend.Backend {
	t.Helper()
	be, err := pebblebackend.Open("db", pebblebackend.Options{FS: vfs.NewMem(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = be.Close() })
	return be
}

func export(t *testing.T, be backend.Backend, gz bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	st, err := Export(t.Context(), be, &buf, ExportOptions{Gzip: gz, Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if st.FileBytes != int64(buf.Len()) || st.Objects == 0 || st.Log == 0 || st.Records != 2 || st.Refs != 3 {
		t.Fatalf("export stats %+v for a file of %d bytes", st, buf.Len())
	}
	return buf.Bytes()
}

// nothingVisible fails t if be has references, log entries or records.
func nothingVisible(t *testing.T, be backend.Backend) {
	t.Helper()
	if err := checkEmpty(t.Context(), be); err != nil {
		t.Fatalf("after a refused import: %v", err)
	}
}

// TestRoundTrip exports a Pebble store, plain and compressed, imports it
// into a new Pebble directory, and finds the two identical: every object,
// reference, log entry and record. The imported store opens and reads
// every reference's tree.
func TestRoundTrip(t *testing.T) {
	_, src := source(t)
	for _, gz := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "gzip"}[gz], func(t *testing.T) {
			file := export(t, src, gz)
			dir := filepath.Join(t.TempDir(), "dst")
			dst, err := pebblebackend.Open(dir, pebblebackend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			st, err := Import(t.Context(), dst, bytes.NewReader(file), ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if st.FileBytes != int64(len(file)) {
				t.Fatalf("import read %d of %d bytes", st.FileBytes, len(file))
			}
			if err := Compare(t.Context(), src, dst); err != nil {
				t.Fatal(err)
			}
			if err := dst.Close(); err != nil {
				t.Fatal(err)
			}
			reopened, err := pebblebackend.Open(dir, pebblebackend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := versionstore.Open(t.Context(), reopened, versionstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			exporttest.ReadEveryRef(t, s)
			if len(s.ListRefs()) != 3 {
				t.Fatalf("imported refs: %v", s.ListRefs())
			}
			rec, err := s.GetRecord(t.Context(), "test/with-commit")
			if err != nil || string(rec.Value) != "written with a commit" {
				t.Fatalf("record written with a commit: %v %v", rec, err)
			}
			// The deleted branch's commits came along: the log names them.
			entries, _, err := s.RefLog(t.Context(), "gone", 100, "")
			if err != nil || len(entries) != 7 {
				t.Fatalf("reference log of the deleted branch: %d entries, %v", len(entries), err)
			}
			if _, err := s.ReadCommit(t.Context(), entries[0].From); err != nil {
				t.Fatalf("the deleted branch's last head: %v", err)
			}
		})
	}
}

// TestCompareFindsDifferences holds Compare itself to account: it must
// notice an extra object, a changed reference, a missing log entry and a
// changed record.
func TestCompareFindsDifferences(t *testing.T) {
	_, src := source(t)
	file := export(t, src, false)
	cases := map[string]func(be backend.Backend) error{
		"extra object": func(be backend.Backend) error {
			data := []byte("stray")
			return be.Apply(t.Context(), backend.Batch{Objects: []backend.Object{{ID: backend.ObjectID(sha256Sum(data)), Data: data}}})
		},
		"record": func(be backend.Backend) error {
			return be.Apply(t.Context(), backend.Batch{Records: []backend.Record{{Key: "test/standalone", Value: []byte("changed")}}})
		},
		"log": func(be backend.Backend) error {
			return be.Apply(t.Context(), backend.Batch{Log: [][]byte{[]byte("one more")}})
		},
		"ref": func(be backend.Backend) error {
			v, err := be.GetRef(t.Context(), "v1")
			if err != nil {
				return err
			}
			return be.Apply(t.Context(), backend.Batch{Refs: []backend.RefUpdate{{Name: "v1", Expected: v}}})
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			dst := memBackend(t)
			if _, err := Import(t.Context(), dst, bytes.NewReader(file), ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := change(dst); err != nil {
				t.Fatal(err)
			}
			if err := Compare(t.Context(), src, dst); !errors.Is(err, ErrDifferent) {
				t.Fatalf("Compare after a changed %s: %v", name, err)
			}
		})
	}
}

// TestCorruptByteIsRefused flips one byte at positions spread over the
// whole file (header, objects, log, records, refs, trailer): every import
// fails, and the target shows nothing.
func TestCorruptByteIsRefused(t *testing.T) {
	_, src := source(t)
	for _, gz := range []bool{false, true} {
		file := export(t, src, gz)
		step := max(len(file)/97, 1)
		for off := 0; off < len(file); off += step {
			for _, pos := range []int{off, len(file) - 1 - off/step} {
				bad := bytes.Clone(file)
				bad[pos] ^= 0x40
				dst := memBackend(t)
				_, err := Import(t.Context(), dst, bytes.NewReader(bad), ImportOptions{})
				if err == nil && gz {
					// Some bits of a deflate stream are padding: a change
					// there leaves the content intact, which must then
					// arrive whole.
					if err := Compare(t.Context(), src, dst); err != nil {
						t.Fatalf("import of the compressed file with byte %d of %d changed: %v", pos, len(file), err)
					}
					continue
				}
				if err == nil {
					t.Fatalf("import of the file with byte %d of %d changed succeeded", pos, len(file))
				}
				nothingVisible(t, dst)
			}
		}
	}
}

// TestObjectHashIsChecked writes a file whose own checksum is right but
// whose object does not hash to its id, as a faulty exporter would: the
// import refuses it, naming the object.
func TestObjectHashIsChecked(t *testing.T) {
	var buf bytes.Buffer
	ew := newEntryWriter(&buf)
	id := sha256Sum([]byte("the real bytes"))
	steps := []error{
		ew.raw([]byte(magic)),
		ew.entry(kindHeader, []byte(`{"format":"floe-export","version":1}`)),
		ew.entry(kindObject, id[:], []byte("other bytes")),
		ew.entry(kindRef, namedPrefix("main"), []byte("value")),
	}
	sum := hex.EncodeToString(ew.sum.Sum(nil))
	steps = append(steps, ew.entry(kindTrailer, []byte(`{"objects":1,"objectBytes":11,"refs":1,"sha256":"`+sum+`"}`)), ew.w.Flush())
	if err := errors.Join(steps...); err != nil {
		t.Fatal(err)
	}
	_, err := Import(t.Context(), memBackend(t), bytes.NewReader(buf.Bytes()), ImportOptions{})
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), hex.EncodeToString(id[:])+" holds bytes whose SHA-256") {
		t.Fatalf("import of an object under the wrong id: %v", err)
	}
	// The same file with the right bytes imports: the test above fails
	// for the hash alone.
	buf.Reset()
	ew = newEntryWriter(&buf)
	steps = []error{
		ew.raw([]byte(magic)),
		ew.entry(kindHeader, []byte(`{"format":"floe-export","version":1}`)),
		ew.entry(kindObject, id[:], []byte("the real bytes")),
		ew.entry(kindRef, namedPrefix("main"), []byte("value")),
	}
	sum = hex.EncodeToString(ew.sum.Sum(nil))
	steps = append(steps, ew.entry(kindTrailer, []byte(`{"objects":1,"objectBytes":14,"refs":1,"sha256":"`+sum+`"}`)), ew.w.Flush())
	if err := errors.Join(steps...); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(t.Context(), memBackend(t), bytes.NewReader(buf.Bytes()), ImportOptions{}); err != nil {
		t.Fatalf("import of the intact file: %v", err)
	}
}

// TestTruncatedFileIsRefused cuts the file at many lengths: each import
// fails with ErrFormat and leaves nothing visible (the objects written so
// far are unreachable), and importing the whole file into the same target
// afterwards succeeds.
func TestTruncatedFileIsRefused(t *testing.T) {
	_, src := source(t)
	file := export(t, src, false)
	dst := memBackend(t)
	step := max(len(file)/50, 1)
	for n := 0; n < len(file); n += step {
		if _, err := Import(t.Context(), dst, bytes.NewReader(file[:n]), ImportOptions{}); !errors.Is(err, ErrFormat) {
			t.Fatalf("import of the first %d of %d bytes: %v", n, len(file), err)
		}
		nothingVisible(t, dst)
	}
	if _, err := Import(t.Context(), dst, bytes.NewReader(file[:len(file)-1]), ImportOptions{}); !errors.Is(err, ErrFormat) {
		t.Fatalf("import without the last byte: %v", err)
	}
	nothingVisible(t, dst)
	if _, err := Import(t.Context(), dst, bytes.NewReader(append(bytes.Clone(file), 'x')), ImportOptions{}); !errors.Is(err, ErrFormat) {
		t.Fatalf("import with a byte after the trailer: %v", err)
	}
	nothingVisible(t, dst)
	if _, err := Import(t.Context(), dst, bytes.NewReader(file), ImportOptions{}); err != nil {
		t.Fatalf("import after the failed ones: %v", err)
	}
	if err := Compare(t.Context(), src, dst); err != nil {
		t.Fatal(err)
	}
}

// TestImportRefusesNonEmptyStore: a store with a reference, a log entry
// or a record is not a target.
func TestImportRefusesNonEmptyStore(t *testing.T) {
	_, src := source(t)
	file := export(t, src, false)
	cases := map[string]backend.Batch{
		"ref":    {Refs: []backend.RefUpdate{{Name: "x", New: []byte("y")}}},
		"log":    {Log: [][]byte{[]byte("entry")}},
		"record": {Records: []backend.Record{{Key: "k", Value: []byte("v")}}},
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			dst := memBackend(t)
			if err := dst.Apply(t.Context(), b); err != nil {
				t.Fatal(err)
			}
			if _, err := Import(t.Context(), dst, bytes.NewReader(file), ImportOptions{}); !errors.Is(err, ErrNotEmpty) {
				t.Fatalf("import into a store with a %s: %v", name, err)
			}
			if ids, _ := dst.ObjectsWithPrefix(t.Context(), nil, 1); len(ids) != 0 {
				t.Fatalf("a refused import wrote objects")
			}
		})
	}
}

// movingBackend commits on a store while the export reads its records.
type movingBackend struct {
	backend.Backend
	move func()
}

func (m movingBackend) ScanRecords(ctx context.Context, after string, limit int) ([]backend.Record, error) {
	if m.move != nil {
		m.move()
	}
	return m.Backend.ScanRecords(ctx, after, limit)
}

// TestExportRefusesMovingSource: a commit during the export makes it fail
// with ErrSourceChanged, and the partial file does not import.
func TestExportRefusesMovingSource(t *testing.T) {
	s, src := source(t)
	moved := false
	be := movingBackend{Backend: src, move: func() {
		if moved {
			return
		}
		moved = true
		if err := s.PutRecord(context.Background(), versionstore.Record{Key: "z", Value: []byte("v")}); err != nil {
			t.Error(err)
		}
		r, _ := s.GetRef("dev")
		if _, err := s.AssignRef(context.Background(), versionstore.AssignRefRequest{Name: "dev", Expected: r.Head, Target: versionstore.NoAncestor}); err != nil {
			t.Error(err)
		}
	}}
	var buf bytes.Buffer
	if _, err := Export(t.Context(), be, &buf, ExportOptions{}); !errors.Is(err, ErrSourceChanged) {
		t.Fatalf("export of a moving store: %v", err)
	}
	if _, err := Import(t.Context(), memBackend(t), &buf, ImportOptions{}); !errors.Is(err, ErrFormat) {
		t.Fatalf("import of the failed export: %v", err)
	}
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
