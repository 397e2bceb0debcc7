package catalog

import (
	"context"
	"errors"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/internal/backoff"
	"github.com/floe-catalog/floe/versionstore"
)

// commitDescription says what one catalog commit does, for its history
// (message and properties) and metrics.
type commitDescription struct {
	// op is the operation: a bounded label (icebergtable.Operations).
	op      string
	message string
	props   map[string]string
	// rebased: a stale append of the commit was re-parented onto the
	// current head (rebase.go).
	rebased bool
}

// commit makes one store commit on branch, based on expected, described
// by desc. record, if set, lands in the commit's own batch. Errors are the
// store's, for the caller to interpret.
func (s *Service) commit(ctx context.Context, branch string, expected versionstore.Hash, ops []versionstore.Operation,
	desc commitDescription, committer string, record *versionstore.Record, obs CommitObserver) (*versionstore.CommitResult, error) {
	props := map[string]string{icebergtable.PropOperation: desc.op}
	for k, v := range desc.props {
		props[k] = v
	}
	res, err := s.store.Commit(ctx, versionstore.CommitRequest{
		Branch:     branch,
		Expected:   expected,
		Operations: ops,
		Meta:       versionstore.CommitMeta{Message: desc.message, Properties: props},
		Committer:  committer,
		Record:     record,
	})
	if err != nil {
		if _, ok := errors.AsType[*versionstore.ConflictError](err); ok {
			obs.Conflicted(desc.op)
		}
		return nil, err
	}
	obs.Committed(desc.op, desc.rebased)
	return res, nil
}

// ConflictOf returns the store's conflict error, if err is one.
func ConflictOf(err error) *versionstore.ConflictError {
	ce, _ := errors.AsType[*versionstore.ConflictError](err)
	return ce
}

// FindConflict returns the first conflict of one of the given types.
func FindConflict(ce *versionstore.ConflictError, types ...versionstore.ConflictType) *versionstore.Conflict {
	if ce == nil {
		return nil
	}
	for i := range ce.Conflicts {
		for _, t := range types {
			if ce.Conflicts[i].Type == t {
				return &ce.Conflicts[i]
			}
		}
	}
	return nil
}

// Retry runs attempt until it reports done, up to the configured retries
// (Config.CommitRetries) more times, pausing with exponential backoff and
// jitter between attempts, and tells obs (nil: nobody) of each retry.
// attempt returns retry=true when another writer changed what it read;
// after the last attempt that error is returned as is. Every catalog
// commit an API makes retries so, its table commits (CommitTables) and
// the others (namespaces, views, renames, drops).
func (s *Service) Retry(ctx context.Context, op string, obs CommitObserver, attempt func(n int) (retry bool, err error)) error {
	// Jitter spreads writers that collided so they do not collide again.
	if obs == nil {
		obs = noObserver{}
	}
	pause := backoff.Policy{Base: s.backoff, Max: 32 * s.backoff}
	for n := 0; ; n++ {
		again, err := attempt(n)
		if !again || n >= s.retries {
			return err
		}
		obs.Retried(op)
		if err := pause.Wait(ctx, n+1); err != nil {
			return err
		}
	}
}

// head returns the current head of a branch, for each attempt of a write.
func (s *Service) head(branch string) (versionstore.Hash, error) {
	ref, err := s.store.GetRef(branch)
	if err != nil {
		if errors.Is(err, versionstore.ErrReferenceNotFound) {
			return versionstore.Hash{}, newError(NoSuchBranch, "Branch %s no longer exists", branch)
		}
		return versionstore.Hash{}, err
	}
	return ref.Head, nil
}

// lookup returns the content at key, or nil when absent.
func (s *Service) lookup(ctx context.Context, at versionstore.Hash, key versionstore.ContentKey) (*versionstore.Content, error) {
	c, err := s.store.GetContent(ctx, at, key)
	if errors.Is(err, versionstore.ErrContentNotFound) {
		return nil, nil
	}
	return c, err
}

// requireNamespace fails with NoSuchNamespace unless ns is a namespace at
// the commit.
func (s *Service) requireNamespace(ctx context.Context, at versionstore.Hash, ns []string) (*versionstore.Content, error) {
	c, err := s.lookup(ctx, at, ns)
	if err != nil {
		return nil, err
	}
	if c == nil || c.Type != versionstore.Namespace {
		return nil, noSuchNamespace(ns)
	}
	return c, nil
}

// commitNotDone is the answer to a commit the store refused without a
// conflict. When the error proves nothing was committed, the metadata
// files written for the commit are deleted; otherwise the outcome is
// unknown, the files may be referenced now and are kept.
func (s *Service) commitNotDone(ctx context.Context, err error, written ...string) error {
	if DefiniteStoreFailure(err) {
		s.removeFiles(ctx, written...)
		return err
	}
	return &Error{Kind: CommitStateUnknown, Msg: "the catalog commit may or may not have happened: " + err.Error(), Cause: err}
}

// Retries is how many times a commit is retried at most.
func (s *Service) Retries() int { return s.retries }

// DefiniteStoreFailure reports store errors that prove nothing was
// committed. Storage that could not take the write (a full disk, a
// database down) is one, unless the store says the outcome is unknown:
// the client then gets a 503 to retry, not a 500 it must read as "commit
// state unknown".
func DefiniteStoreFailure(err error) bool {
	if errors.Is(err, versionstore.ErrUnavailable) {
		return !errors.Is(err, versionstore.ErrOutcomeUnknown)
	}
	for _, e := range []error{versionstore.ErrInvalid, versionstore.ErrNotABranch, versionstore.ErrReferenceNotFound,
		versionstore.ErrClosed, versionstore.ErrForbidden, versionstore.ErrReferenceConflict} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// filesAt is the file IO for the metadata file at loc: that of the
// warehouse holding it (the innermost, if roots nest), whichever
// warehouse the request named. A location outside every warehouse (none
// should reach here) gets iceberg-go's defaults through the first
// warehouse.
func (s *Service) filesAt(loc string) *icebergtable.Warehouse {
	if w := icebergtable.Innermost(loc, s.warehouses); w != nil {
		return w
	}
	return s.warehouses[0]
}

func (s *Service) readTableMetadata(ctx context.Context, loc string) (*icebergtable.MetadataFile, error) {
	return s.filesAt(loc).ReadTableMetadata(ctx, loc)
}

// ReadTableMetadata reads a table metadata file that the store
// references, through the metadata cache of the warehouse holding it; the
// change feed's Iceberg events diff two of them. loc must come from the
// store, never from a client.
func (s *Service) ReadTableMetadata(ctx context.Context, loc string) (*icebergtable.MetadataFile, error) {
	return s.readTableMetadata(ctx, loc)
}

// ReadViewMetadata is ReadTableMetadata for a view's metadata file.
func (s *Service) ReadViewMetadata(ctx context.Context, loc string) (*icebergtable.ViewMetadataFile, error) {
	return s.readViewMetadata(ctx, loc)
}

// removeFiles deletes metadata files no commit references, best-effort:
// an orphan left behind wastes space but is never read.
func (s *Service) removeFiles(ctx context.Context, locs ...string) {
	for _, loc := range locs {
		if err := s.filesAt(loc).RemoveFile(ctx, loc); err != nil {
			s.logger.WarnContext(ctx, "could not delete orphan metadata file", "location", loc, "error", err)
		}
	}
}

// writeNextTableMetadata writes meta as the next metadata file of a
// table in wh whose current file is base (nil for a new table); see
// icebergtable.Warehouse.NewTableMetadataLocation. A location outside the
// warehouse is the client's error, a failed write the storage's.
func (s *Service) writeNextTableMetadata(ctx context.Context, wh *icebergtable.Warehouse, meta table.Metadata, base *icebergtable.MetadataFile) (*icebergtable.MetadataFile, error) {
	prev := ""
	if base != nil {
		prev = base.Location
	}
	loc, err := wh.NewTableMetadataLocation(meta, prev)
	if err != nil {
		return nil, badRequest("invalid metadata location: %v", err)
	}
	file, err := s.filesAt(loc).WriteTableMetadataFrom(ctx, loc, meta, base)
	if err != nil {
		return nil, internalError(err)
	}
	return file, nil
}

// requireInside validates a location a client supplied: it must lie
// inside the warehouse or one of its allowed locations. It returns the
// location normalized.
func requireInside(wh *icebergtable.Warehouse, what, loc string) (string, error) {
	n, err := wh.Contains(loc)
	if err != nil {
		return "", badRequest("invalid %s: %v", what, err)
	}
	return n, nil
}
