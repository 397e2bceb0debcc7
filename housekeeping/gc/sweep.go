package gc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
)

// Unreferenced names the files of no table the mark met (a dropped table,
// a branch deleted or beyond its history rule, a failed write).
const Unreferenced = "unreferenced"

// sweeper walks the warehouses and deletes what nothing marked.
type sweeper struct {
	c         *Collector
	mk        *marker
	rep       *Report
	dryRun    bool
	cutoff    time.Time
	listFiles int
	explain   map[string]string // canonical → as asked
	explained map[string]bool

	batch  []candidate
	tables map[string]*TableSummary
	mu     sync.Mutex
}

type candidate struct {
	w     *icebergtable.Warehouse
	f     icebergtable.StoredFile
	canon string
	table string
}

func (s *sweeper) sweep(ctx context.Context) error {
	s.tables = map[string]*TableSummary{}
	s.explained = map[string]bool{}
	markDir := "file://" + strings.TrimSuffix(s.mk.m.dir, "/")
	for _, w := range s.c.opts.Warehouses {
		err := w.WalkFiles(ctx, func(f icebergtable.StoredFile) error {
			// A warehouse nested in another lists its own files.
			if len(s.c.opts.Warehouses) > 1 && icebergtable.Innermost(f.Location, s.c.opts.Warehouses) != w {
				return nil
			}
			canon := canonical(f.Location)
			if s.c.excluded(canon) || strings.HasPrefix(canon, markDir+"/") {
				return nil
			}
			return s.file(ctx, w, f, canon)
		})
		if err != nil {
			return err
		}
	}
	if err := s.flush(ctx); err != nil {
		return err
	}
	// A commit that landed during the last batch's deletes is seen here.
	if s.mk.m.deletedAny.Load() {
		if err := s.mk.markUntilStable(ctx); err != nil {
			return fmt.Errorf("mark again after deleting: %w", err)
		}
		if err := s.checkRevived(); err != nil {
			return err
		}
	}
	s.rep.Tables = []TableSummary{}
	for _, ts := range s.tables {
		s.rep.Tables = append(s.rep.Tables, *ts)
	}
	slices.SortFunc(s.rep.Tables, func(a, b TableSummary) int { return strings.Compare(a.Table, b.Table) })
	for canon, asked := range s.explain {
		if !s.explained[canon] {
			s.rep.Explained = append(s.rep.Explained, FileVerdict{Location: asked, Verdict: VerdictNotFound,
				Reason: "no warehouse holds a file at this location"})
		}
	}
	return nil
}

func (s *sweeper) summary(table string) *TableSummary {
	ts := s.tables[table]
	if ts == nil {
		ts = &TableSummary{Table: table}
		s.tables[table] = ts
	}
	return ts
}

func (s *sweeper) verdict(canon string, f icebergtable.StoredFile, verdict, reason string) {
	if _, ok := s.explain[canon]; !ok {
		return
	}
	s.explained[canon] = true
	s.rep.Explained = append(s.rep.Explained, FileVerdict{Location: f.Location, Size: f.Size, Modified: f.ModTime.UTC(),
		Verdict: verdict, Reason: reason})
}

// file decides one listed file: live (marked), kept (under a table whose
// files could not all be found, or younger than the grace period), or a
// candidate for deletion.
func (s *sweeper) file(ctx context.Context, w *icebergtable.Warehouse, f icebergtable.StoredFile, canon string) error {
	s.rep.Listed++
	s.rep.ListedBytes += f.Size
	why, live, err := s.mk.m.isMarked(canon)
	if err != nil {
		return err
	}
	if live {
		s.rep.Live++
		s.rep.LiveBytes += f.Size
		s.verdict(canon, f, VerdictLive, "live: "+why.String())
		return nil
	}
	table, protected := s.mk.attribute(canon)
	if table == "" {
		table = Unreferenced
	}
	if protected != "" {
		s.rep.Protected++
		s.summary(table).KeptFiles++
		s.verdict(canon, f, VerdictKept, protected)
		return nil
	}
	if f.ModTime.After(s.cutoff) {
		s.rep.Young++
		s.rep.YoungBytes += f.Size
		s.summary(table).KeptFiles++
		s.verdict(canon, f, VerdictKept, fmt.Sprintf("not live (no live reference reaches it), but modified %s, within the grace period of %s",
			f.ModTime.UTC().Format(time.RFC3339), s.rep.Grace))
		return nil
	}
	s.batch = append(s.batch, candidate{w: w, f: f, canon: canon, table: table})
	if len(s.batch) >= s.c.opts.batchSize {
		return s.flush(ctx)
	}
	return nil
}

// flush deletes a batch of candidates. The references are read again
// first, and whatever moved is marked: a commit that landed since the
// mark and made an old file live again (a branch created from an old
// commit) keeps it. What remains is the window between that check and
// the deletes of one batch (see README.md).
func (s *sweeper) flush(ctx context.Context) error {
	if len(s.batch) == 0 {
		return nil
	}
	defer func() { s.batch = s.batch[:0] }()
	if s.c.opts.beforeBatch != nil {
		if err := s.c.opts.beforeBatch(len(s.batch)); err != nil {
			return err
		}
	}
	if err := s.mk.markUntilStable(ctx); err != nil {
		return fmt.Errorf("mark again before deleting: %w", err)
	}
	if err := s.checkRevived(); err != nil {
		return err
	}
	doomed := s.batch[:0:0]
	for _, cd := range s.batch {
		why, live, err := s.mk.m.isMarked(cd.canon)
		if err != nil {
			return err
		}
		if live {
			s.rep.Live++
			s.rep.LiveBytes += cd.f.Size
			s.verdict(cd.canon, cd.f, VerdictLive, "live: "+why.String()+" (committed during this run)")
			continue
		}
		doomed = append(doomed, cd)
	}
	reason := fmt.Sprintf("not live (no live reference reaches it) and older than the grace period of %s", s.rep.Grace)
	done := func(cd candidate) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.rep.Deleted++
		s.rep.DeletedBytes += cd.f.Size
		ts := s.summary(cd.table)
		ts.Files++
		ts.Bytes += cd.f.Size
		if len(s.rep.Files) < s.listFiles {
			s.rep.Files = append(s.rep.Files, FileVerdict{Location: cd.f.Location, Size: cd.f.Size, Modified: cd.f.ModTime.UTC(),
				Table: cd.table, Verdict: VerdictDelete, Reason: reason})
		}
		s.verdict(cd.canon, cd.f, VerdictDelete, reason)
	}
	if s.dryRun {
		for _, cd := range doomed {
			done(cd)
		}
		return nil
	}
	if s.c.opts.beforeDelete != nil {
		s.c.opts.beforeDelete()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.c.opts.Workers)
	for _, cd := range doomed {
		g.Go(func() error {
			if err := cd.w.DeleteStoredFile(gctx, cd.f.Location); err != nil {
				if gctx.Err() != nil {
					return gctx.Err()
				}
				s.mu.Lock()
				s.rep.DeleteErrors++
				if len(s.rep.Warnings) < maxWarnings {
					s.rep.Warnings = append(s.rep.Warnings, err.Error())
				}
				s.mu.Unlock()
				return nil
			}
			done(cd)
			return s.mk.m.deleted(cd.canon)
		})
	}
	return g.Wait()
}

// checkRevived fails the run when a re-mark found live a file this run
// had deleted: a commit landed between a batch's last check and its
// deletes and made an old file live again (README.md, "Concurrency").
// The file is gone; the run stops so that no more go, and its report
// names them.
func (s *sweeper) checkRevived() error {
	n, first := s.mk.m.revivals()
	if n == 0 {
		return nil
	}
	s.rep.Revived = n
	for _, r := range first {
		if len(s.rep.Warnings) >= maxWarnings {
			break
		}
		s.rep.Warnings = append(s.rep.Warnings, fmt.Sprintf("deleted by this run, then made live by a commit during the sweep: %s (%s)", r.loc, r.why))
	}
	return fmt.Errorf("%d files this run deleted were made live again by commits that landed during the sweep (the report's warnings name them; a lost metadata file or manifest loses what it named too); "+
		"the run stopped; restore them from the object store's versioning or a backup", n)
}
