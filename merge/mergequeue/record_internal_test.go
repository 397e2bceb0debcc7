package mergequeue

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/floe-catalog/floe/internal/apidoc"
)

var updateRecords = flag.Bool("update-records", false, "write testdata/records/*.json from the current encoding (only for a new record version, never to make the test pass)")

// TestRecordFormat holds the stored request record to what earlier floe
// versions wrote: each file in testdata/records is a record as the queue
// wrote it (the v1 files by the code that stored the API document itself),
// and must decode to the request it was written from and encode back to
// the same bytes. Existing stores load, and a record read and written
// again unchanged compares equal in the compare-and-swap of the next
// write (persist, land) and in the replicas' refresh.
func TestRecordFormat(t *testing.T) {
	for _, c := range []struct {
		file string
		req  *Request
	}{
		{"filled-v1.json", filledRequest()},
		{"minimal-v1.json", &Request{}},
		{"merged-v1.json", mergedRequest()},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", "records", c.file)
			if *updateRecords {
				if err := os.WriteFile(path, encodeRequest(c.req), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeRequest(raw)
			if err != nil {
				t.Fatalf("decode %s: %v", path, err)
			}
			if !reflect.DeepEqual(got, c.req) {
				t.Fatalf("%s decodes to\n%+v\nwant\n%+v", path, got, c.req)
			}
			if again := encodeRequest(got); !bytes.Equal(again, raw) {
				t.Fatalf("%s encodes back to\n%s\nwant\n%s", path, again, raw)
			}
		})
	}
}

// filledRequest has every field set, at every depth (fillValue).
func filledRequest() *Request {
	r := &Request{}
	fillValue(reflect.ValueOf(r).Elem())
	return r
}

// mergedRequest is a request as the queue leaves one that landed in a
// batch.
func mergedRequest() *Request {
	at := func(s int) time.Time { return time.Date(2026, 12, 4, 9, 0, s, 123000, time.UTC) }
	started, ended := at(2), at(5)
	return &Request{
		ID: "mr-0a1b2c3d4e5f60718293", Seq: 42, Target: "main", Source: "ingest/shard-07", SourceRef: "ingest/shard-07",
		SourceHash: "5f1c0e3b9a7d2c4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e",
		Principal:  "pipeline", Class: "ingest", State: StateMerged,
		Reason:     "merged: main moved from 11aa to 22bb with a batch of 3",
		EnqueuedAt: at(0), StartedAt: &started, EndedAt: &ended,
		Classification: ClassCherryPick,
		TableClasses:   []apidoc.MergeRequestTable{{Table: "sales.orders", Class: ClassCherryPick, Reason: "disjoint: cherry-picked 1 snapshot(s) of the source onto the target's head"}},
		Batched:        true,
		Validations: []apidoc.MergeValidation{{Candidate: "33cc", TargetHead: "11aa", At: at(3), Passed: true,
			Results: []apidoc.MergeCheckResult{{Name: "lineage", Passed: true, DurationSeconds: 0.004}}}},
		LandedCommit: "33cc", LandedOnto: "11aa",
		Hygiene: []string{"dropped source branch ingest/shard-07"},
		Audit: []apidoc.MergeRequestChange{
			{At: at(0), To: StateQueued, Reason: "enqueued", Principal: "pipeline"},
			{At: at(2), From: StateQueued, To: StateValidating, Reason: "taken by the worker in a batch of 3", Principal: "floe-queue"},
			{At: at(5), From: StateValidating, To: StateMerged, Reason: "merged: main moved from 11aa to 22bb with a batch of 3", Principal: "floe-queue", Candidate: "33cc"},
		},
	}
}

// TestRecordRoundTrip stores a request with every field set and reads it
// back whole: a field added to the API document that the stored form
// (storedRequest) leaves out fails here.
func TestRecordRoundTrip(t *testing.T) {
	want := filledRequest()
	got, err := decodeRequest(encodeRequest(want))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("a request read back from its record differs:\n%+v\nwant\n%+v", got, want)
	}
}
