package icebergrest_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
)

// Zero-retry row-level commits at the HTTP level, for what iceberg-go does
// not write (conformance/icebergo drives its deletes and overwrites):
// equality deletes and a compaction's replace. The table is the bench's,
// unpartitioned: every file shares the one partition.

// rowLevelChange is what a stale row-level snapshot does: the parent's
// live files it removes and the files it adds.
type rowLevelChange struct {
	op      string
	removed []string
	added   []iceberg.DataFile
}

// writeRowLevelFiles writes what an engine writes before it commits
// snapshot id of change c on st: the parent's manifests holding a
// removed file rewritten with it DELETED and the others EXISTING, a
// manifest of the added data files and one of the added delete files,
// and the manifest list. It returns the commit.
func writeRowLevelFiles(t *testing.T, st *tableState, id int64, c rowLevelChange) []byte {
	t.Helper()
	dir, err := localPath(st.Metadata.Location + "/metadata")
	if err != nil {
		t.Fatal(err)
	}
	write := func(content iceberg.ManifestContent, add func(w *iceberg.ManifestWriter) error) iceberg.ManifestFile {
		var buf bytes.Buffer
		w, err := iceberg.NewManifestWriter(2, &buf, benchSpec, benchSchema, id, iceberg.WithManifestWriterContent(content))
		if err != nil {
			t.Fatal(err)
		}
		if err := add(w); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("rowlevel-%d-%d-m%d.avro", id, content, time.Now().UnixNano())
		mf, err := w.ToManifestFile(st.Metadata.Location+"/metadata/"+name, int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o640); err != nil {
			t.Fatal(err)
		}
		return mf
	}
	var list []iceberg.ManifestFile
	var cur string
	for _, s := range st.Metadata.Snapshots {
		if st.Metadata.CurrentSnapshotID != nil && s.ID == *st.Metadata.CurrentSnapshotID {
			cur = s.ManifestList
		}
	}
	p, err := localPath(cur)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	parents, err := iceberg.ReadManifestList(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range parents {
		mp, err := localPath(m.FilePath())
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(mp)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := iceberg.ReadManifest(m, bytes.NewReader(raw), true)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(entries, func(e iceberg.ManifestEntry) bool { return slices.Contains(c.removed, e.DataFile().FilePath()) }) {
			list = append(list, m)
			continue
		}
		list = append(list, write(m.ManifestContent(), func(w *iceberg.ManifestWriter) error {
			for _, e := range entries {
				if slices.Contains(c.removed, e.DataFile().FilePath()) {
					if err := w.Delete(e); err != nil {
						return err
					}
				} else if err := w.Existing(e); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	for _, content := range []iceberg.ManifestContent{iceberg.ManifestContentData, iceberg.ManifestContentDeletes} {
		var mine []iceberg.DataFile
		for _, df := range c.added {
			if (df.ContentType() == iceberg.EntryContentData) == (content == iceberg.ManifestContentData) {
				mine = append(mine, df)
			}
		}
		if len(mine) == 0 {
			continue
		}
		list = append(list, write(content, func(w *iceberg.ManifestWriter) error {
			for _, df := range mine {
				if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &id, nil, nil, df)); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	seq := st.Metadata.LastSequenceNumber + 1
	var buf bytes.Buffer
	if err := iceberg.WriteManifestList(2, &buf, id, st.Metadata.CurrentSnapshotID, &seq, 0, list); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("snap-%d-%d-rowlevel.avro", id, seq)
	if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o640); err != nil {
		t.Fatal(err)
	}
	body := string(appendCommitWithList(st, id, st.Metadata.Location+"/metadata/"+name, time.Now()))
	return []byte(strings.Replace(body, `"operation":"append"`, `"operation":"`+c.op+`"`, 1))
}

func benchFile(t *testing.T, st *tableState, content iceberg.ManifestEntryContent, name string, build func(*iceberg.DataFileBuilder)) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(benchSpec, content, st.Metadata.Location+"/data/"+name, iceberg.ParquetFile, nil, nil, nil, 10, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if build != nil {
		build(b)
	}
	return b.Build()
}

// livePaths lists the paths of st's live files, sorted.
func livePaths(t *testing.T, st *tableState) []string {
	var out []string
	for _, e := range liveEntries(t, st) {
		out = append(out, e.DataFile().FilePath())
	}
	slices.Sort(out)
	return out
}

// TestRowLevelRebaseDeleteFiles: on a table whose rows all share one
// partition, a stale delete made before another writer's append is
// rebased or refused by what its delete files apply to.
func TestRowLevelRebaseDeleteFiles(t *testing.T) {
	const filePathField = 2147483546
	for _, tc := range []struct {
		name  string
		props string // set-properties before the test, JSON
		// kind of delete file the stale commit adds for the seed's file
		equality bool
		status   int
	}{
		// Snapshot isolation: a position delete naming the seed's file
		// applies to that file alone; the head's new file is untouched.
		{"snapshot/position deletes", `{"write.delete.isolation-level":"snapshot"}`, false, http.StatusOK},
		// An equality delete with the next sequence number would also
		// delete the rows of the head's new file: a conflict.
		{"snapshot/equality deletes", `{"write.delete.isolation-level":"snapshot"}`, true, http.StatusConflict},
		// Serializable (the default): the head added a file to the
		// partition the delete works in: a conflict either way.
		{"serializable/position deletes", `{}`, false, http.StatusConflict},
		// A table that opted out of the row-level rebase.
		{"opted out", `{"write.delete.isolation-level":"snapshot","floe.commit.rebase-row-level":"false"}`, false, http.StatusConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.createNamespace("lake", "ns")
			e.createTable("lake", "ns", "t")
			e.ok(http.MethodPost, hotPath, `{"requirements":[],"updates":[{"action":"set-properties","updates":`+tc.props+`}]}`, http.StatusOK, nil)
			_, seed := e.stagedAppend(e.tableState())
			e.ok(http.MethodPost, hotPath, string(seed), http.StatusOK, nil)
			st1 := e.tableState()
			seedFile := livePaths(t, st1)[0]
			_, other := e.stagedAppend(st1)
			id := newSnapshotID()
			del := benchFile(t, st1, iceberg.EntryContentPosDeletes, fmt.Sprintf("pos-%d.parquet", id), func(b *iceberg.DataFileBuilder) {
				b.LowerBoundValues(map[int][]byte{filePathField: []byte(seedFile)}).UpperBoundValues(map[int][]byte{filePathField: []byte(seedFile)})
			})
			if tc.equality {
				del = benchFile(t, st1, iceberg.EntryContentEqDeletes, fmt.Sprintf("eq-%d.parquet", id), func(b *iceberg.DataFileBuilder) {
					b.EqualityFieldIDs([]int{1})
				})
			}
			stale := writeRowLevelFiles(t, st1, id, rowLevelChange{op: "delete", added: []iceberg.DataFile{del}})
			e.ok(http.MethodPost, hotPath, string(other), http.StatusOK, nil)
			head := e.tableState()
			headFiles := livePaths(t, head)
			next := head.Metadata.LastSequenceNumber + 1

			r := e.do(http.MethodPost, hotPath, string(stale))
			if r.status != tc.status {
				t.Fatalf("stale delete: %d %.400s, want %d", r.status, r.body, tc.status)
			}
			st := e.tableState()
			if tc.status != http.StatusOK {
				checkError(t, r, http.StatusConflict, "CommitFailedException", "Requirement failed: branch main has changed")
				if got := livePaths(t, st); !slices.Equal(got, headFiles) {
					t.Fatalf("live files after a refused commit %v, want %v", got, headFiles)
				}
				return
			}
			if *st.Metadata.CurrentSnapshotID != id || st.Metadata.LastSequenceNumber != next {
				t.Fatalf("main %d (want %d), last sequence number %d (want %d)", *st.Metadata.CurrentSnapshotID, id, st.Metadata.LastSequenceNumber, next)
			}
			want := append(slices.Clone(headFiles), del.FilePath())
			slices.Sort(want)
			if got := livePaths(t, st); !slices.Equal(got, want) {
				t.Fatalf("live files %v, want %v", got, want)
			}
			// The delete file applies after every data file of the head.
			for _, en := range liveEntries(t, st) {
				if en.DataFile().FilePath() == del.FilePath() && en.SequenceNum() != next {
					t.Fatalf("the rebased delete file has sequence number %d, want %d", en.SequenceNum(), next)
				}
			}
		})
	}
}

// TestRowLevelRebaseReplace: a stale compaction (replace) of the seed's
// file is rebased after an append to the same partition even under
// serializable isolation (it changes no row), and refused when the head
// removed the file it compacts.
func TestRowLevelRebaseReplace(t *testing.T) {
	for _, tc := range []struct {
		name       string
		headRemove bool
		status     int
	}{
		{"after an append", false, http.StatusOK},
		{"file removed meanwhile", true, http.StatusConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.createNamespace("lake", "ns")
			e.createTable("lake", "ns", "t")
			_, seed := e.stagedAppend(e.tableState())
			e.ok(http.MethodPost, hotPath, string(seed), http.StatusOK, nil)
			st1 := e.tableState()
			seedFile := livePaths(t, st1)[0]
			id := newSnapshotID()
			compacted := benchFile(t, st1, iceberg.EntryContentData, fmt.Sprintf("compacted-%d.parquet", id), nil)
			stale := writeRowLevelFiles(t, st1, id, rowLevelChange{op: "replace", removed: []string{seedFile}, added: []iceberg.DataFile{compacted}})
			if tc.headRemove {
				gone := writeRowLevelFiles(t, st1, newSnapshotID(), rowLevelChange{op: "delete", removed: []string{seedFile}})
				e.ok(http.MethodPost, hotPath, string(gone), http.StatusOK, nil)
			} else {
				_, other := e.stagedAppend(st1)
				e.ok(http.MethodPost, hotPath, string(other), http.StatusOK, nil)
			}
			headFiles := livePaths(t, e.tableState())

			r := e.do(http.MethodPost, hotPath, string(stale))
			if r.status != tc.status {
				t.Fatalf("stale replace: %d %.400s, want %d", r.status, r.body, tc.status)
			}
			st := e.tableState()
			want := headFiles
			if tc.status == http.StatusOK {
				want = append(slices.DeleteFunc(slices.Clone(headFiles), func(p string) bool { return p == seedFile }), compacted.FilePath())
				slices.Sort(want)
			}
			if got := livePaths(t, st); !slices.Equal(got, want) {
				t.Fatalf("live files %v, want %v", got, want)
			}
			metrics := string(e.do(http.MethodGet, "/metrics", nil).body)
			outcome := "rebased"
			if tc.status != http.StatusOK {
				outcome = "conflict"
			}
			if !strings.Contains(metrics, `floe_iceberg_commits_total{operation="replace",outcome="`+outcome+`"} 1`) {
				t.Errorf("replace not counted %s:\n%s", outcome, grepLines(metrics, "floe_iceberg_commits_total"))
			}
		})
	}
}
