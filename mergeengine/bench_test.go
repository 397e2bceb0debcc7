package mergeengine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/floe-catalog/floe/mergeengine"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// BenchmarkMergeNoConflict merges a branch that updated 100 random tables
// of a 10,000-key catalog into a target that moved on meanwhile (one
// other table), as versionstore's BenchmarkMerge1M does, through the
// store's Merge ("store") and through the engine ("engine"): a merge
// without conflicts is the store's merge, so the two should cost the
// same (allocations tell it best on a shared machine, where the durable
// write's time is noisy). The tables are version-store values only; no Iceberg file is read,
// because nothing conflicts. Preparing the source branch is not timed.
func BenchmarkMergeNoConflict(b *testing.B) {
	const namespaces, tablesPerNS = 10, 1000
	ctx := b.Context()
	be, err := pebblebackend.Open(b.TempDir(), pebblebackend.Options{})
	if err != nil {
		b.Fatal(err)
	}
	st, err := versionstore.Open(ctx, be, versionstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	key := func(ns, t int) versionstore.ContentKey {
		return versionstore.ContentKey{fmt.Sprintf("ns%04d", ns), fmt.Sprintf("table-%08d", t)}
	}
	value := func(k versionstore.ContentKey, version int) *versionstore.Content {
		return &versionstore.Content{Type: versionstore.IcebergTable,
			MetadataLocation: fmt.Sprintf("s3://warehouse/%s/%s/metadata/%05d.metadata.json", k[0], k[1], version),
			SnapshotID:       int64(version)}
	}
	commit := func(branch string, ops []versionstore.Operation) versionstore.Hash {
		r, err := st.GetRef(branch)
		if err != nil {
			b.Fatal(err)
		}
		res, err := st.Commit(ctx, versionstore.CommitRequest{Branch: branch, Expected: r.Head, Operations: ops, Meta: versionstore.CommitMeta{Message: "bench"}, Committer: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		return res.Commit.Hash
	}
	for i := range namespaces {
		ops := []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{fmt.Sprintf("ns%04d", i)}, Content: &versionstore.Content{Type: versionstore.Namespace}}}
		for j := range tablesPerNS {
			k := key(i, j)
			ops = append(ops, versionstore.Operation{Kind: versionstore.OpPut, Key: k, Content: value(k, 0)})
		}
		commit(versionstore.DefaultBranch, ops)
	}
	eng, err := mergeengine.New(mergeengine.Options{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	branches, version := 0, 1
	rng := rand.New(rand.NewPCG(5, 6))
	for _, via := range []struct {
		name  string
		merge func(context.Context, versionstore.MergeRequest) (*versionstore.MergeResult, error)
	}{{"store", st.Merge}, {"engine", eng.Merge}} {
		b.Run(via.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				tgt, _ := st.GetRef(versionstore.DefaultBranch)
				branches++
				source := fmt.Sprintf("bench/source-%d", branches)
				if _, err := st.CreateRef(ctx, versionstore.CreateRefRequest{Name: source, Type: versionstore.Branch, Target: tgt.Head, Principal: "bench"}); err != nil {
					b.Fatal(err)
				}
				seen := map[int]bool{}
				var keys []versionstore.ContentKey
				for len(keys) < 100 {
					n := rng.IntN(namespaces * tablesPerNS)
					if !seen[n] {
						seen[n] = true
						keys = append(keys, key(n/tablesPerNS, n%tablesPerNS))
					}
				}
				cur, err := st.GetContents(ctx, tgt.Head, keys)
				if err != nil {
					b.Fatal(err)
				}
				var ops []versionstore.Operation
				for _, k := range keys {
					v := value(k, version)
					v.ID = cur[string(k.Encode())].ID
					ops = append(ops, versionstore.Operation{Kind: versionstore.OpPut, Key: k, Content: v})
				}
				src := commit(source, ops)
				other := versionstore.ContentKey{"ns0000", fmt.Sprintf("other-%s-%08d", via.name, version)}
				moved := commit(versionstore.DefaultBranch, []versionstore.Operation{{Kind: versionstore.OpPut, Key: other, Content: value(other, 0)}})
				version++
				b.StartTimer()
				res, err := via.merge(ctx, versionstore.MergeRequest{
					Target: versionstore.DefaultBranch, ExpectedTarget: moved, From: src, FromRef: source, Committer: "bench",
					Check: func(context.Context, []versionstore.CheckedChange) error { return nil },
				})
				if err != nil {
					b.Fatal(err)
				}
				if !res.WasApplied || len(res.Details) != 100 {
					b.Fatalf("merge applied=%v with %d keys, want 100", res.WasApplied, len(res.Details))
				}
			}
		})
	}
}
