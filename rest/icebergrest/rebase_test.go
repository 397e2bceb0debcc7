package icebergrest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
)

// Zero-retry appends at the HTTP level; conformance/icebergo drives them
// with iceberg-go. The appends here are the bench's (bench_test.go): real
// manifest and manifest list files, the commit an engine's fast append
// sends.

const hotPath = "/v1/lake/namespaces/ns/tables/t"

func (e *testEnv) tableState() *tableState {
	e.t.Helper()
	st, err := decodeState(e.ok(http.MethodGet, hotPath, nil, http.StatusOK, nil).body)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// stagedAppend writes the files of an append on st and returns its commit.
func (e *testEnv) stagedAppend(st *tableState) (int64, []byte) {
	e.t.Helper()
	id := newSnapshotID()
	list, err := writeAppendFiles(st, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return id, appendCommitWithList(st, id, list, time.Now())
}

// TestRebasedAppendReplays: a stale append is rebased, and its retry with
// the same Idempotency-Key replays the rebased answer without adding the
// snapshot again.
func TestRebasedAppendReplays(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.createTable("lake", "ns", "t")
	st0 := e.tableState()
	idA, a := e.stagedAppend(st0)
	idB, b := e.stagedAppend(st0) // made on the same, soon stale, main
	e.ok(http.MethodPost, hotPath, string(a), http.StatusOK, nil)

	key := newKey(t)
	r := e.doKeyed(key, http.MethodPost, hotPath, string(b))
	if r.status != http.StatusOK {
		t.Fatalf("stale append: %d %s", r.status, r.body)
	}
	st, err := decodeState(r.body)
	if err != nil {
		t.Fatal(err)
	}
	if *st.Metadata.CurrentSnapshotID != idB || len(st.Metadata.Snapshots) != 2 || st.Metadata.LastSequenceNumber != 2 {
		t.Fatalf("after the rebased append: main %d (want %d, after %d), %d snapshots, last sequence number %d",
			*st.Metadata.CurrentSnapshotID, idB, idA, len(st.Metadata.Snapshots), st.Metadata.LastSequenceNumber)
	}
	commits := e.commits()
	again := e.doKeyed(key, http.MethodPost, hotPath, string(b))
	if again.status != http.StatusOK || string(again.body) != string(r.body) {
		t.Fatalf("replay: %d %.300s", again.status, again.body)
	}
	if e.commits() != commits {
		t.Fatal("the replay committed again")
	}
	// Sent again without the key (a client that lost the answer), the
	// landed append is refused, not published twice.
	checkError(t, e.do(http.MethodPost, hotPath, string(b)), http.StatusConflict, "CommitFailedException", "")
	if n := len(e.tableState().Metadata.Snapshots); n != 2 {
		t.Fatalf("%d snapshots after resending a landed append", n)
	}
	metrics := string(e.do(http.MethodGet, "/metrics", nil).body)
	if !strings.Contains(metrics, `floe_iceberg_commits_total{operation="append",outcome="rebased"} 1`) {
		t.Errorf("rebased append not counted:\n%s", grepLines(metrics, "floe_iceberg_commits_total"))
	}
}

// TestStaleCommitsNotRebased: a stale commit that is not certainly a pure
// append on an ancestor of main is answered 409, as without rebasing.
func TestStaleCommitsNotRebased(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(loc, body string) string
	}{
		{"manifest list outside the warehouse", func(_, body string) string {
			return manifestListField.ReplaceAllString(body, `"manifest-list":"file:///etc/passwd"`)
		}},
		{"manifest list missing", func(loc, body string) string {
			return manifestListField.ReplaceAllString(body, `"manifest-list":"`+loc+`/metadata/missing.avro"`)
		}},
		{"not an append", func(_, body string) string {
			return strings.Replace(body, `"operation":"append"`, `"operation":"overwrite"`, 1)
		}},
		{"deletes files", func(_, body string) string {
			return strings.Replace(body, `"added-data-files":"1"`, `"added-data-files":"1","deleted-data-files":"1"`, 1)
		}},
		{"another schema", func(_, body string) string {
			return strings.Replace(body, `"schema-id":0`, `"schema-id":7`, 1)
		}},
		{"moves another ref", func(_, body string) string {
			return strings.Replace(body, `]}`, `,{"action":"set-snapshot-ref","ref-name":"audit","type":"tag","snapshot-id":1}]}`, 1)
		}},
		{"property changed meanwhile", func(_, body string) string {
			return strings.Replace(body, `]}`, `,{"action":"set-properties","updates":{"owner":"stale"}}]}`, 1)
		}},
		// The control: unchanged, the same stale append is rebased.
		{"control", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.createNamespace("lake", "ns")
			e.createTable("lake", "ns", "t")
			st0 := e.tableState()
			_, a := e.stagedAppend(st0)
			_, b := e.stagedAppend(st0)
			e.ok(http.MethodPost, hotPath, string(a), http.StatusOK, nil)
			e.ok(http.MethodPost, hotPath, `{"requirements":[],"updates":[{"action":"set-properties","updates":{"owner":"fresh"}}]}`, http.StatusOK, nil)
			if tc.edit == nil {
				e.ok(http.MethodPost, hotPath, string(b), http.StatusOK, nil)
				return
			}
			body := tc.edit(st0.Metadata.Location, string(b))
			r := e.do(http.MethodPost, hotPath, body)
			checkError(t, r, http.StatusConflict, "CommitFailedException", "")
			if n := len(e.tableState().Metadata.Snapshots); n != 1 {
				t.Fatalf("%d snapshots after a refused commit", n)
			}
		})
	}
}

func grepLines(s, substr string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// TestStaleAppendKeepingMainRetentionIsRebased: engines send main's
// retention (min-snapshots-to-keep, max-snapshot-age-ms) as they loaded
// it with every append; a stale append that keeps it is rebased, and main
// keeps it. One that changes it is a retention change, not a pure append:
// 409 as without rebasing.
func TestStaleAppendKeepingMainRetentionIsRebased(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retention string // what the stale append's set-snapshot-ref carries
		status    int
	}{
		{"kept", `,"min-snapshots-to-keep":5,"max-snapshot-age-ms":86400000`, http.StatusOK},
		{"changed", `,"min-snapshots-to-keep":7,"max-snapshot-age-ms":86400000`, http.StatusConflict},
		{"dropped", ``, http.StatusConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.createNamespace("lake", "ns")
			e.createTable("lake", "ns", "t")
			_, first := e.stagedAppend(e.tableState())
			e.ok(http.MethodPost, hotPath, string(first), http.StatusOK, nil)
			st := e.tableState()
			e.ok(http.MethodPost, hotPath, `{"requirements":[],"updates":[{"action":"set-snapshot-ref","ref-name":"main","type":"branch",`+
				`"snapshot-id":`+strconv.FormatInt(*st.Metadata.CurrentSnapshotID, 10)+`,"min-snapshots-to-keep":5,"max-snapshot-age-ms":86400000}]}`,
				http.StatusOK, nil)
			st = e.tableState()
			_, a := e.stagedAppend(st)
			idB, b := e.stagedAppend(st)
			e.ok(http.MethodPost, hotPath, strings.Replace(string(a), `}]}`, `,"min-snapshots-to-keep":5,"max-snapshot-age-ms":86400000}]}`, 1), http.StatusOK, nil)
			stale := strings.Replace(string(b), `}]}`, tc.retention+`}]}`, 1)
			r := e.do(http.MethodPost, hotPath, stale)
			if r.status != tc.status {
				t.Fatalf("stale append with main's retention %s: %d %.300s, want %d", tc.name, r.status, r.body, tc.status)
			}
			var meta struct {
				Metadata struct {
					Refs map[string]struct {
						SnapshotID  int64 `json:"snapshot-id"`
						MinSnapshot *int  `json:"min-snapshots-to-keep"`
					} `json:"refs"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(e.ok(http.MethodGet, hotPath, nil, http.StatusOK, nil).body, &meta); err != nil {
				t.Fatal(err)
			}
			main := meta.Metadata.Refs["main"]
			if main.MinSnapshot == nil || *main.MinSnapshot != 5 {
				t.Fatalf("main's retention after the append: %+v", main)
			}
			if (tc.status == http.StatusOK) != (main.SnapshotID == idB) {
				t.Fatalf("main at %d after a %d answer (the stale append was %d)", main.SnapshotID, r.status, idB)
			}
		})
	}
}

// writeMergeAppendFiles writes what Iceberg Java's merge-append (the
// default for Spark appends, commit.manifest-merge.enabled) writes before
// it commits snapshot id on st: one manifest holding the new data file as
// ADDED and every file of the parent's manifests as EXISTING, and a
// manifest list of that manifest alone.
func writeMergeAppendFiles(t *testing.T, st *tableState, id int64) string {
	t.Helper()
	dir, err := localPath(st.Metadata.Location + "/metadata")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(2, &buf, benchSpec, benchSchema, id)
	if err != nil {
		t.Fatal(err)
	}
	df, err := iceberg.NewDataFileBuilder(benchSpec, iceberg.EntryContentData,
		fmt.Sprintf("%s/data/merged-%d.parquet", st.Metadata.Location, id), iceberg.ParquetFile, nil, nil, nil, 1000, 65536)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &id, nil, nil, df.Build())); err != nil {
		t.Fatal(err)
	}
	for _, e := range liveEntries(t, st) {
		if err := w.Existing(e); err != nil {
			t.Fatal(err)
		}
	}
	name := fmt.Sprintf("merged-%d-m0.avro", id)
	mf, err := w.ToManifestFile(st.Metadata.Location+"/metadata/"+name, 0)
	if err != nil {
		t.Fatal(err)
	}
	mf = iceberg.NewManifestFile(2, mf.FilePath(), int64(buf.Len()), 0, id).
		AddedFiles(mf.AddedDataFiles()).ExistingFiles(mf.ExistingDataFiles()).
		AddedRows(mf.AddedRows()).ExistingRows(mf.ExistingRows()).SequenceNum(-1, -1).Build()
	if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o640); err != nil {
		t.Fatal(err)
	}
	seq := st.Metadata.LastSequenceNumber + 1
	buf.Reset()
	if err := iceberg.WriteManifestList(2, &buf, id, st.Metadata.CurrentSnapshotID, &seq, 0, []iceberg.ManifestFile{mf}); err != nil {
		t.Fatal(err)
	}
	list := fmt.Sprintf("snap-%d-%d-merged.avro", id, seq)
	if err := os.WriteFile(filepath.Join(dir, list), buf.Bytes(), 0o640); err != nil {
		t.Fatal(err)
	}
	return st.Metadata.Location + "/metadata/" + list
}

// liveEntries reads the entries of st's current snapshot that are live.
func liveEntries(t *testing.T, st *tableState) []iceberg.ManifestEntry {
	t.Helper()
	var list string
	for _, s := range st.Metadata.Snapshots {
		if st.Metadata.CurrentSnapshotID != nil && s.ID == *st.Metadata.CurrentSnapshotID {
			list = s.ManifestList
		}
	}
	read := func(loc string) []byte {
		p, err := localPath(loc)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	manifests, err := iceberg.ReadManifestList(bytes.NewReader(read(list)))
	if err != nil {
		t.Fatal(err)
	}
	var out []iceberg.ManifestEntry
	for _, m := range manifests {
		entries, err := iceberg.ReadManifest(m, bytes.NewReader(read(m.FilePath())), true)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entries...)
	}
	return out
}

// TestRebasedMergeAppend: a stale merge-append, whose manifest carries its
// parent's files as EXISTING entries and whose list drops the parent's
// manifests, is rebased too: the table then lists every data file once,
// the concurrent append's included.
func TestRebasedMergeAppend(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.createTable("lake", "ns", "t")
	_, first := e.stagedAppend(e.tableState())
	e.ok(http.MethodPost, hotPath, string(first), http.StatusOK, nil)
	st1 := e.tableState()
	_, a := e.stagedAppend(st1)
	idB := newSnapshotID()
	b := appendCommitWithList(st1, idB, writeMergeAppendFiles(t, st1, idB), time.Now())
	e.ok(http.MethodPost, hotPath, string(a), http.StatusOK, nil)

	r := e.do(http.MethodPost, hotPath, string(b))
	if r.status != http.StatusOK {
		t.Fatalf("stale merge-append: %d %s", r.status, r.body)
	}
	st := e.tableState()
	if *st.Metadata.CurrentSnapshotID != idB || len(st.Metadata.Snapshots) != 3 {
		t.Fatalf("main %d (want %d), %d snapshots", *st.Metadata.CurrentSnapshotID, idB, len(st.Metadata.Snapshots))
	}
	seen := map[string]int{}
	for _, en := range liveEntries(t, st) {
		seen[en.DataFile().FilePath()]++
	}
	if len(seen) != 3 {
		t.Fatalf("live data files %v, want the three appends' files", seen)
	}
	for p, n := range seen {
		if n != 1 {
			t.Fatalf("data file %s listed %d times", p, n)
		}
	}
}
