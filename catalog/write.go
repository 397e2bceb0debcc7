package catalog

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// Write says where and for whom a catalog write other than a table
// commit goes: a namespace's create, update or drop, a view's commit, a
// table's or view's create, registration, rename or drop.
type Write struct {
	// Warehouse names the warehouse of the tables and views written:
	// new ones go below it, and every location is checked against it.
	// Namespace writes need none.
	Warehouse string
	Branch    string
	// Committer names who commits, for the commit record.
	Committer string
	// Observer, if set, is told what becomes of the commit.
	Observer CommitObserver
	// Record, if set, is called once per attempt with what the attempt
	// prepared, before its store commit or when it finds nothing to
	// change; a record it returns is written in the commit's own batch (an
	// API's idempotency record of its answer), and is ignored when nothing
	// is committed.
	Record func(*Written) *versionstore.Record
}

// Written is what a catalog write did, as far as the operation fills it.
type Written struct {
	// Commit is the store's result; nil when nothing changed.
	Commit *versionstore.CommitResult
	// Op and Message describe the commit.
	Op, Message string
	// Recorded says the record Write.Record returned was committed.
	Recorded bool

	// Content is the content put (a namespace created) or removed (a
	// table or view dropped).
	Content *versionstore.Content
	// Table is the table's metadata file: created, registered, dropped or
	// unregistered; TableBody is its metadata as answered (ServedJSON)
	// where the operation answers with it (registered, unregistered).
	Table     *icebergtable.MetadataFile
	TableBody []byte
	// StagedTable is the metadata of a staged create, which writes
	// nothing.
	StagedTable table.Metadata
	// View is the view's metadata file: created, registered or committed
	// (the current one when the commit changed nothing).
	View *icebergtable.ViewMetadataFile
	// Properties is what an update of a namespace's properties did.
	Properties PropertiesChanged
}

// PropertiesChanged is what an update of a namespace's properties did:
// the keys set (all those asked, sorted), the keys removed and the keys
// asked to be removed that were not there.
type PropertiesChanged struct {
	Updated, Removed, Missing []string
}

// commitWrite makes the store commit of one attempt of w on its branch at
// head, after telling w.Record what out holds; it fills out's commit
// fields. Errors are the store's, for the caller to interpret.
func (s *Service) commitWrite(ctx context.Context, w Write, head versionstore.Hash, ops []versionstore.Operation, desc commitDescription, out *Written) error {
	record := w.prepared(out)
	obs := w.Observer
	if obs == nil {
		obs = noObserver{}
	}
	res, err := s.commit(ctx, w.Branch, head, ops, desc, w.Committer, record, obs)
	if err != nil {
		return err
	}
	out.Commit, out.Op, out.Message, out.Recorded = res, desc.op, desc.message, record != nil
	return nil
}

// prepared tells w.Record what an attempt prepared and returns its
// record.
func (w Write) prepared(out *Written) *versionstore.Record {
	if w.Record == nil {
		return nil
	}
	return w.Record(out)
}

// retry is Retry with w's observer.
func (s *Service) retry(ctx context.Context, w Write, op string, attempt func() (bool, error)) error {
	return s.Retry(ctx, op, w.Observer, func(int) (bool, error) { return attempt() })
}

// warehouse returns the warehouse w names.
func (s *Service) warehouse(w Write) (*icebergtable.Warehouse, error) {
	wh, ok := s.Warehouse(w.Warehouse)
	if !ok {
		return nil, fmt.Errorf("catalog: no warehouse %q", w.Warehouse)
	}
	return wh, nil
}
