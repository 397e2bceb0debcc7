package catalog

import (
	"context"

	"github.com/apache/iceberg-go/view"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// ViewChange is a view's requested change, as Iceberg's CommitViewRequest
// carries it: the requirements its current metadata must meet and the
// updates to apply to it.
type ViewChange struct {
	ID           Identifier
	Requirements view.Requirements
	Updates      view.Updates
}

// CommitView commits a view change on w.Branch: the requirements
// validated against the view at the branch head, the updates applied by
// the view metadata builder, a new metadata file written below the
// warehouse and committed, re-done on the newer head when another writer
// changed the branch in between, as table commits are. Written.View is
// the new metadata file, or the current one when the change changes
// nothing (and nothing is committed). ValidateViewUpdates checks the
// updates first; an API may run it before authorizing the request.
func (s *Service) CommitView(ctx context.Context, w Write, change ViewChange) (*Written, error) {
	if err := ValidateViewUpdates(change.Updates); err != nil {
		return nil, err
	}
	wh, err := s.warehouse(w)
	if err != nil {
		return nil, err
	}
	id := change.ID
	var out *Written
	err = s.retry(ctx, w, "replace-view", func() (bool, error) {
		head, err := s.head(w.Branch)
		if err != nil {
			return false, err
		}
		content, base, err := loadObjectAt(ctx, s, head, id, viewKind, s.readViewMetadata)
		if err != nil {
			return false, err
		}
		for _, rq := range change.Requirements {
			if err := rq.Validate(base.Metadata); err != nil {
				return false, ViewRequirementFailed(rq, base.Metadata, err)
			}
		}
		b, err := view.MetadataBuilderFromBase(base.Metadata)
		if err != nil {
			return false, illegalArgument("cannot update view %s: %v", id, err)
		}
		for _, u := range change.Updates {
			if err := u.Apply(b); err != nil {
				return false, illegalArgument("cannot apply %s to view %s: %v", u.Action(), id, err)
			}
		}
		if !b.HasChanges() {
			out = &Written{View: base}
			w.prepared(out)
			return false, nil
		}
		next, err := b.Build()
		if err != nil {
			return false, illegalArgument("cannot update view %s: %v", id, err)
		}
		if next.Location() != base.Metadata.Location() {
			if _, err := requireInside(wh, "view location", next.Location()); err != nil {
				return false, err
			}
		}
		file, err := s.writeNextViewMetadata(ctx, wh, next, content.MetadataLocation)
		if err != nil {
			return false, err
		}
		out = &Written{View: file}
		err = s.commitWrite(ctx, w, head,
			[]versionstore.Operation{{Kind: versionstore.OpPut, Key: id.Key(), Content: icebergtable.ViewContent(content.ID, file)}},
			commitDescription{op: "replace-view", message: "iceberg: replace view " + id.String(),
				props: map[string]string{icebergtable.PropView: id.String(), icebergtable.PropMetadataLocation: file.Location}}, out)
		if err == nil {
			return false, nil
		}
		ce := ConflictOf(err)
		if ce == nil {
			return false, s.commitNotDone(ctx, err, file.Location)
		}
		s.removeFiles(ctx, file.Location)
		if FindConflict(ce, versionstore.ConflictKeyDoesNotExist) != nil {
			return true, noSuchView(id)
		}
		return true, commitFailed("View %s changed concurrently: %v", id, ce)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Service) readViewMetadata(ctx context.Context, loc string) (*icebergtable.ViewMetadataFile, error) {
	return s.filesAt(loc).ReadViewMetadata(ctx, loc)
}

// writeNextViewMetadata writes meta as the next metadata file of a view
// in wh whose current file is at prev ("" for a new view); see
// writeNextTableMetadata.
func (s *Service) writeNextViewMetadata(ctx context.Context, wh *icebergtable.Warehouse, meta view.Metadata, prev string) (*icebergtable.ViewMetadataFile, error) {
	loc, err := wh.NewViewMetadataLocation(meta, prev)
	if err != nil {
		return nil, badRequest("invalid metadata location: %v", err)
	}
	file, err := s.filesAt(loc).WriteViewMetadata(ctx, loc, meta)
	if err != nil {
		return nil, internalError(err)
	}
	return file, nil
}
