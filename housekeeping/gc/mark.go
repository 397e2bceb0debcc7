package gc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/internal/manifestread"
	"github.com/floe-catalog/floe/versionstore"
)

// maxMarkRounds bounds how often a run re-reads the references to catch
// commits that landed while it marked; a catalog that never stops moving
// for that long fails the run (nothing is deleted) rather than delete on a
// stale mark.
const maxMarkRounds = 50

// marker marks what the live references reach. One marker serves a run:
// its mark set only grows, so a later round (refs that moved) reads only
// what is new.
type marker struct {
	c   *Collector
	m   *marks
	rep *Report

	// heads are the ref heads marked so far, by name.
	heads map[string]versionstore.Hash

	mu sync.Mutex
	// tables are the locations of the tables and views met (canonical)
	// and the name each was first met under: the sweep attributes files
	// to a table by its location.
	tables map[string]string
	// protected are location prefixes nothing under which is deleted,
	// with the reason: a table whose metadata or manifest could not be
	// found, so what it references is not known.
	protected map[string]string

	commits, contents, metadataRead, listsRead, manifestsRead, marked atomic.Int64
}

func newMarker(c *Collector, m *marks, rep *Report) *marker {
	return &marker{c: c, m: m, rep: rep, heads: map[string]versionstore.Hash{},
		tables: map[string]string{}, protected: map[string]string{}}
}

// markUntilStable marks from every reference whose head is not marked
// yet, and repeats until a pass over the references finds none moved: a
// commit that lands during the mark (a branch made from an old commit, a
// merge that re-uses old manifests) is marked before anything is swept.
func (mk *marker) markUntilStable(ctx context.Context) error {
	for round := 1; ; round++ {
		var moved []*versionstore.Ref
		for _, r := range mk.c.opts.Store.ListRefs() {
			if h, ok := mk.heads[r.Name]; !ok || h != r.Head {
				moved = append(moved, r)
			}
		}
		if len(moved) == 0 {
			mk.publish()
			return nil
		}
		if round > maxMarkRounds {
			return fmt.Errorf("the references kept moving for %d rounds of marking; try again when the catalog is quieter", maxMarkRounds)
		}
		mk.rep.MarkRounds++
		if err := mk.markRefs(ctx, moved); err != nil {
			return err
		}
		for _, r := range moved {
			mk.heads[r.Name] = r.Head
		}
	}
}

// publish copies the counters into the report.
func (mk *marker) publish() {
	mk.rep.Refs = len(mk.heads)
	mk.rep.Commits = mk.commits.Load()
	mk.rep.Contents = mk.contents.Load()
	mk.rep.MetadataFilesRead = mk.metadataRead.Load()
	mk.rep.ManifestListsRead = mk.listsRead.Load()
	mk.rep.ManifestsRead = mk.manifestsRead.Load()
	mk.rep.Marked = mk.marked.Load()
}

// contentJob is one table or view to mark, and where it was met.
type contentJob struct {
	why     provenance
	content *versionstore.Content
}

// manifestJob is one manifest to read.
type manifestJob struct {
	why      provenance
	tableLoc string
	mf       iceberg.ManifestFile
}

// markRefs marks from refs: one goroutine walks their histories and sends
// each table or view not met yet to the content readers, which read its
// metadata file and manifest lists and send each manifest not read yet to
// the manifest readers. Channels are bounded, so a large warehouse never
// queues more than a few dozen manifests in memory.
func (mk *marker) markRefs(ctx context.Context, refs []*versionstore.Ref) error {
	workers := mk.c.opts.Workers
	g, ctx := errgroup.WithContext(ctx)
	contents := make(chan contentJob, workers*4)
	manifests := make(chan manifestJob, workers*4)
	g.Go(func() error {
		defer close(contents)
		for _, r := range refs {
			if err := mk.walkRef(ctx, r, contents); err != nil {
				return fmt.Errorf("reference %s: %w", r.Name, err)
			}
		}
		return nil
	})
	readers := max(1, workers/2)
	var contentReaders sync.WaitGroup
	for range readers {
		contentReaders.Add(1)
		g.Go(func() error {
			defer contentReaders.Done()
			for job := range contents {
				if err := mk.markContent(ctx, job, manifests); err != nil {
					return err
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		contentReaders.Wait()
		close(manifests)
		return nil
	})
	for range workers {
		g.Go(func() error {
			for job := range manifests {
				if err := mk.markManifest(ctx, job); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// send queues a job unless ctx ended.
func send[T any](ctx context.Context, ch chan<- T, v T) error {
	select {
	case ch <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// walkRef sends every table and view of the commits ref's history rule
// keeps. Each commit's tree is covered by the diff against its first
// parent plus its first parent's tree, so a history is marked by one diff
// per commit and, where the kept history stops, one full tree; a commit
// marked before (by another ref, or an earlier round) is not read again.
func (mk *marker) walkRef(ctx context.Context, ref *versionstore.Ref, out chan<- contentJob) error {
	rule := HistoryRule{}
	if mk.c.opts.History != nil {
		var err error
		if rule, err = mk.c.opts.History(ctx, ref); err != nil {
			return fmt.Errorf("history rule: %w", err)
		}
	}
	if rule.keepsAll() {
		return mk.walkAll(ctx, ref, out)
	}
	return mk.walkKept(ctx, ref, rule, out)
}

// walkAll marks every ancestor of ref's head, through every parent.
func (mk *marker) walkAll(ctx context.Context, ref *versionstore.Ref, out chan<- contentJob) error {
	st := mk.c.opts.Store
	stack := []versionstore.Hash{ref.Head}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if h == versionstore.NoAncestor {
			continue
		}
		state, err := mk.m.commitState(h.String())
		if err != nil {
			return err
		}
		if state == commitAncestry {
			continue
		}
		c, err := st.ReadCommit(ctx, h)
		if err != nil {
			return err
		}
		if state < commitTree {
			if err := mk.diff(ctx, ref, c, out); err != nil {
				return err
			}
		}
		// Set before the parents are walked: a run whose walk fails
		// deletes nothing, so the state is only relied on once every
		// parent below has been walked.
		if err := mk.m.setCommitState(h.String(), commitAncestry); err != nil {
			return err
		}
		mk.commits.Add(1)
		stack = append(stack, c.Parents...)
	}
	return nil
}

// walkKept marks the head and the first-parent commits rule keeps.
func (mk *marker) walkKept(ctx context.Context, ref *versionstore.Ref, rule HistoryRule, out chan<- contentJob) error {
	st := mk.c.opts.Store
	oldest := mk.c.opts.Now().Add(-rule.Age)
	var kept []*versionstore.Commit
	for h := ref.Head; h != versionstore.NoAncestor; {
		c, err := st.ReadCommit(ctx, h)
		if err != nil {
			return err
		}
		// A commit is kept if either limit keeps it, as Iceberg combines
		// min-snapshots-to-keep and max-snapshot-age-ms: keeping more is
		// the safe side.
		byCount := rule.Commits > 0 && len(kept) < rule.Commits
		byAge := rule.Age > 0 && !c.CommitTime.Before(oldest)
		if len(kept) > 0 && !byCount && !byAge {
			break
		}
		kept = append(kept, c)
		state, err := mk.m.commitState(h.String())
		if err != nil {
			return err
		}
		if state == commitAncestry {
			break // it and everything older is marked
		}
		h = c.Parent()
	}
	for i, c := range kept {
		state, err := mk.m.commitState(c.Hash.String())
		if err != nil {
			return err
		}
		if state >= commitTree {
			continue
		}
		if i == len(kept)-1 && c.Parent() != versionstore.NoAncestor {
			err = mk.tree(ctx, ref, c, out) // where the kept history stops
		} else {
			err = mk.diff(ctx, ref, c, out) // its parent is kept too
		}
		if err != nil {
			return err
		}
		if err := mk.m.setCommitState(c.Hash.String(), commitTree); err != nil {
			return err
		}
		mk.commits.Add(1)
	}
	return nil
}

// diff sends the tables and views c changed against its first parent.
func (mk *marker) diff(ctx context.Context, ref *versionstore.Ref, c *versionstore.Commit, out chan<- contentJob) error {
	var token string
	for {
		entries, next, err := mk.c.opts.Store.Diff(ctx, c.Parent(), c.Hash, versionstore.DiffOptions{PageToken: token})
		if err != nil {
			return fmt.Errorf("diff of commit %s: %w", c.Hash, err)
		}
		for _, e := range entries {
			if e.To != nil {
				if err := mk.content(ctx, ref, c, e.Key, e.To, out); err != nil {
					return err
				}
			}
		}
		if next == "" {
			return nil
		}
		token = next
	}
}

// tree sends every table and view of c's tree.
func (mk *marker) tree(ctx context.Context, ref *versionstore.Ref, c *versionstore.Commit, out chan<- contentJob) error {
	var token string
	for {
		entries, next, err := mk.c.opts.Store.Entries(ctx, c.Hash, versionstore.EntriesOptions{PageToken: token, WithContent: true})
		if err != nil {
			return fmt.Errorf("tree of commit %s: %w", c.Hash, err)
		}
		for _, e := range entries {
			if err := mk.content(ctx, ref, c, e.Key, e.Content, out); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		token = next
	}
}

// content sends a table or view whose metadata file is not read yet.
func (mk *marker) content(ctx context.Context, ref *versionstore.Ref, c *versionstore.Commit, k versionstore.ContentKey, ct *versionstore.Content, out chan<- contentJob) error {
	if ct == nil || (ct.Type != versionstore.IcebergTable && ct.Type != versionstore.IcebergView) || ct.MetadataLocation == "" {
		return nil
	}
	first, err := mk.m.claim(key(prefixRead, canonical(ct.MetadataLocation)), nil)
	if err != nil || !first {
		return err
	}
	mk.contents.Add(1)
	why := provenance{Ref: ref.Name, Commit: c.Hash.String()[:12], Table: strings.Join(k, ".")}
	return send(ctx, out, contentJob{why: why, content: ct})
}

// warehouseOf is the warehouse that reads loc.
func (mk *marker) warehouseOf(loc string) (*icebergtable.Warehouse, error) {
	w := icebergtable.Innermost(loc, mk.c.opts.Warehouses)
	if w == nil {
		return nil, fmt.Errorf("%s lies outside every warehouse", loc)
	}
	return w, nil
}

// missing handles a file that a live table names and that is gone: the
// table is broken already, but what else of it survives must not be
// deleted, so everything under its location is kept, and the report says
// why.
func (mk *marker) missing(tableLoc string, why provenance, loc string, err error) {
	mk.mu.Lock()
	defer mk.mu.Unlock()
	reason := fmt.Sprintf("kept: %s names %s, which is missing (%v), so what else it references is unknown", why.Table, loc, err)
	mk.protected[canonical(tableLoc)] = reason
	if len(mk.rep.Warnings) < maxWarnings {
		mk.rep.Warnings = append(mk.rep.Warnings, fmt.Sprintf("%s on %s at %s: %s is missing; everything under %s is kept",
			why.Table, why.Ref, why.Commit, loc, tableLoc))
	}
}

// tableDir guesses a table's location from its metadata file's
// (<location>/metadata/<file>), for a metadata file that cannot be read.
func tableDir(metadataLoc string) string {
	d := path.Dir(metadataLoc)
	if path.Base(d) == "metadata" {
		return path.Dir(d)
	}
	return d
}

func (mk *marker) mark(loc string, why provenance, kind string) error {
	if loc == "" {
		return nil
	}
	why.Kind = kind
	if _, err := mk.m.markFile(loc, why); err != nil {
		return err
	}
	mk.marked.Add(1)
	return nil
}

// markContent marks a table's or view's metadata file and what it
// references, and sends its manifests on.
func (mk *marker) markContent(ctx context.Context, job contentJob, out chan<- manifestJob) error {
	loc := job.content.MetadataLocation
	w, err := mk.warehouseOf(loc)
	if err != nil {
		mk.missing(tableDir(loc), job.why, loc, err)
		return nil
	}
	if job.content.Type == versionstore.IcebergView {
		if err := mk.mark(loc, job.why, "view-metadata"); err != nil {
			return err
		}
		mk.metadataRead.Add(1)
		vf, err := w.ReadViewMetadata(ctx, loc)
		if errors.Is(err, fs.ErrNotExist) {
			mk.missing(tableDir(loc), job.why, loc, err)
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s on %s: %w", job.why.Table, job.why.Ref, err)
		}
		mk.addTable(vf.Metadata.Location(), job.why.Table)
		return nil
	}
	if err := mk.mark(loc, job.why, "metadata"); err != nil {
		return err
	}
	mk.metadataRead.Add(1)
	f, err := w.ReadTableMetadata(ctx, loc)
	if errors.Is(err, fs.ErrNotExist) {
		mk.missing(tableDir(loc), job.why, loc, err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s on %s: %w", job.why.Table, job.why.Ref, err)
	}
	meta := f.Metadata
	tableLoc := meta.Location()
	mk.addTable(tableLoc, job.why.Table)
	for e := range meta.PreviousFiles() {
		if err := mk.mark(e.MetadataFile, job.why, "previous-metadata"); err != nil {
			return err
		}
	}
	for s := range meta.Statistics() {
		if err := mk.mark(s.StatisticsPath, job.why, "statistics"); err != nil {
			return err
		}
	}
	for s := range meta.PartitionStatistics() {
		if err := mk.mark(s.StatisticsPath, job.why, "partition-statistics"); err != nil {
			return err
		}
	}
	// Every snapshot the metadata keeps, whichever table-level ref (or
	// none) reaches it: time travel reads them all.
	for _, snap := range meta.Snapshots() {
		if err := mk.markSnapshot(ctx, tableLoc, job.why, &snap, out); err != nil {
			return err
		}
	}
	return nil
}

func (mk *marker) markSnapshot(ctx context.Context, tableLoc string, why provenance, snap *table.Snapshot, out chan<- manifestJob) error {
	if snap.ManifestList == "" {
		return nil
	}
	if err := mk.mark(snap.ManifestList, why, "manifest-list"); err != nil {
		return err
	}
	first, err := mk.m.claim(key(prefixRead, canonical(snap.ManifestList)), nil)
	if err != nil || !first {
		return err
	}
	w, err := mk.warehouseOf(snap.ManifestList)
	if err != nil {
		mk.missing(tableLoc, why, snap.ManifestList, err)
		return nil
	}
	mk.listsRead.Add(1)
	mfs, err := w.ScanSnapshotManifests(ctx, snap)
	if errors.Is(err, fs.ErrNotExist) {
		mk.missing(tableLoc, why, snap.ManifestList, err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s on %s: %w", why.Table, why.Ref, err)
	}
	for _, mf := range mfs {
		if err := mk.mark(mf.FilePath(), why, "manifest"); err != nil {
			return err
		}
		first, err := mk.m.claim(key(prefixRead, canonical(mf.FilePath())), nil)
		if err != nil {
			return err
		}
		if first {
			if err := send(ctx, out, manifestJob{why: why, tableLoc: tableLoc, mf: mf}); err != nil {
				return err
			}
		}
	}
	return nil
}

// markManifest marks every live entry of a manifest: data files, delete
// files (position and equality deletes; a deletion vector's puffin file
// is its entry's path). Entries with status DELETED are not marked: the
// snapshot that wrote the manifest removed them, and any snapshot that
// still reads them lists them in a manifest of its own as ADDED or
// EXISTING (as Iceberg's own reachability does).
func (mk *marker) markManifest(ctx context.Context, job manifestJob) error {
	loc := job.mf.FilePath()
	w, err := mk.warehouseOf(loc)
	if err != nil {
		mk.missing(job.tableLoc, job.why, loc, err)
		return nil
	}
	fsys, done, err := w.FileIO(ctx, loc)
	if err != nil {
		return fmt.Errorf("%s on %s: manifest %s: %w", job.why.Table, job.why.Ref, loc, err)
	}
	defer done()
	mk.manifestsRead.Add(1)
	kinds := map[iceberg.ManifestEntryContent][]byte{}
	why := func(c iceberg.ManifestEntryContent) []byte {
		if b, ok := kinds[c]; ok {
			return b
		}
		p := job.why
		switch c {
		case iceberg.EntryContentPosDeletes:
			p.Kind = "position-deletes"
		case iceberg.EntryContentEqDeletes:
			p.Kind = "equality-deletes"
		default:
			p.Kind = "data"
		}
		kinds[c] = p.encode()
		return kinds[c]
	}
	b := mk.m.newBatch()
	defer func() { _ = b.close() }()
	// manifestread: also the manifests iceberg-go refuses to stream
	// although they are readable (DuckDB's delete manifests), read whole
	// within the warehouse's bound on one read.
	for entry, err := range manifestread.Entries(fsys, job.mf, w.MaxMetadataFileBytes()) {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				mk.missing(job.tableLoc, job.why, loc, err)
				return nil
			}
			return fmt.Errorf("%s on %s: manifest %s: %w", job.why.Table, job.why.Ref, loc, err)
		}
		df := entry.DataFile()
		if err := b.add(df.FilePath(), why(df.ContentType())); err != nil {
			return err
		}
		mk.marked.Add(1)
	}
	return b.close()
}

func (mk *marker) addTable(loc, name string) {
	if loc == "" {
		return
	}
	mk.mu.Lock()
	defer mk.mu.Unlock()
	c := canonical(strings.TrimRight(loc, "/"))
	if _, ok := mk.tables[c]; !ok {
		mk.tables[c] = name
	}
}

// attribute names the table a canonical location lies under (the
// innermost), or "".
func (mk *marker) attribute(canon string) (name, protectedWhy string) {
	mk.mu.Lock()
	defer mk.mu.Unlock()
	parentDirs(canon, func(dir string) bool {
		if name == "" {
			name = mk.tables[dir]
		}
		if protectedWhy == "" {
			protectedWhy = mk.protected[dir]
		}
		return name != "" && protectedWhy != ""
	})
	return name, protectedWhy
}
