package versionstore

import (
	"context"
	"fmt"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// CreateRefRequest creates a branch or tag at an existing commit.
type CreateRefRequest struct {
	Name      string
	Type      RefType
	Target    Hash // NoAncestor for an empty branch
	Retention Retention
	Principal string
}

// CreateRef creates a reference. Branch and tag names share one namespace.
func (s *Store) CreateRef(ctx context.Context, req CreateRefRequest) (*Ref, error) {
	if err := ValidateNewRefName(req.Name); err != nil {
		return nil, err
	}
	return s.createRef(ctx, req)
}

// createRef creates a reference whose name passed ValidateRefName; tests
// use it to make references that stores from before ValidateNewRefName may
// hold.
func (s *Store) createRef(ctx context.Context, req CreateRefRequest) (*Ref, error) {
	if err := ValidateRefName(req.Name); err != nil {
		return nil, err
	}
	if req.Type != Branch && req.Type != Tag {
		return nil, fmt.Errorf("%w: unknown reference type %d", ErrInvalid, req.Type)
	}
	if err := validateRetention(req.Retention); err != nil {
		return nil, err
	}
	if _, err := s.commit(ctx, req.Target); err != nil {
		return nil, fmt.Errorf("create %s %q: %w", req.Type, req.Name, err)
	}
	res, err := s.write(ctx, req.Name, func(ctx context.Context, t *refTxn) (any, error) {
		if t.ref != nil {
			return nil, fmt.Errorf("%w: %s %q", ErrReferenceExists, t.ref.Type, req.Name)
		}
		now := s.now()
		t.ref = (&Ref{Name: req.Name, Type: req.Type, Head: req.Target, Created: now, Retention: req.Retention}).withRaw()
		t.log = append(t.log, &RefLogEntry{Ref: req.Name, RefType: req.Type, Op: RefLogCreate, To: req.Target, Principal: req.Principal, Time: now})
		return t.ref, nil
	})
	if err != nil {
		return nil, err
	}
	return res.(*Ref), nil
}

// AssignRefRequest points a reference at another commit. Expected must be
// the reference's current head.
type AssignRefRequest struct {
	Name      string
	Type      RefType // 0: either
	Expected  Hash
	Target    Hash
	Principal string
	// Records, if set, are stored in the same durable batch as the move,
	// and only if the reference moves, as CommitRequest.Record: the merge
	// queue lands a batch of requests by moving the target to the
	// candidate it validated and writes every request's final state with
	// that move. A conditional record whose condition fails fails the
	// assignment with ErrRecordConflict, and nothing is written.
	Records []Record
	// Events, if set, are appended to the reference log right after the
	// move, in the same durable write and only if the reference moves
	// (AppendEvent): the merge queue reports the requests a landing
	// merged with the landing itself.
	Events []LogEvent
}

// AssignRef moves a branch or tag to any existing commit.
func (s *Store) AssignRef(ctx context.Context, req AssignRefRequest) (*Ref, error) {
	if err := ValidateRefName(req.Name); err != nil {
		return nil, err
	}
	if _, err := s.commit(ctx, req.Target); err != nil {
		return nil, fmt.Errorf("assign %q: %w", req.Name, err)
	}
	recs := make([]*preparedRecord, 0, len(req.Records))
	for i := range req.Records {
		p, err := s.prepareRecord(ctx, &req.Records[i])
		if err != nil {
			return nil, err
		}
		recs = append(recs, p)
	}
	objs := make([]backend.Object, 0, len(req.Events))
	events := make([]*RefLogEntry, 0, len(req.Events))
	for i := range req.Events {
		obj, entry, err := s.eventEntry(&req.Events[i])
		if err != nil {
			return nil, err
		}
		objs, events = append(objs, obj), append(events, entry)
	}
	res, err := s.write(ctx, req.Name, func(ctx context.Context, t *refTxn) (any, error) {
		if err := t.checkRef(req.Type, req.Expected); err != nil {
			return nil, err
		}
		t.move(req.Target, RefLogAssign, req.Principal)
		for _, p := range recs {
			t.addRecord(p)
		}
		for i, e := range events {
			entry := *e
			entry.Time = t.log[len(t.log)-1].Time
			t.log = append(t.log, &entry)
			t.objects = append(t.objects, objs[i])
		}
		return t.ref, nil
	})
	if err != nil {
		return nil, err
	}
	return res.(*Ref), nil
}

// DeleteRefRequest deletes a reference whose head is Expected.
type DeleteRefRequest struct {
	Name      string
	Type      RefType // 0: either
	Expected  Hash
	Principal string
}

// DeleteRef deletes a branch or tag. The default branch cannot be deleted.
func (s *Store) DeleteRef(ctx context.Context, req DeleteRefRequest) error {
	if req.Name == DefaultBranch {
		return fmt.Errorf("%w: the default branch %q cannot be deleted", ErrForbidden, DefaultBranch)
	}
	if err := ValidateRefName(req.Name); err != nil {
		return err
	}
	_, err := s.write(ctx, req.Name, func(ctx context.Context, t *refTxn) (any, error) {
		if err := t.checkRef(req.Type, req.Expected); err != nil {
			return nil, err
		}
		t.log = append(t.log, &RefLogEntry{Ref: req.Name, RefType: t.ref.Type, Op: RefLogDelete, From: t.ref.Head, Principal: req.Principal, Time: s.now()})
		t.ref = nil
		return nil, nil
	})
	return err
}

func validateRetention(r Retention) error {
	if r.MaxRefAge < 0 || r.MaxSnapshotAge < 0 || r.MinSnapshotsToKeep < 0 {
		return fmt.Errorf("%w: retention settings cannot be negative", ErrInvalid)
	}
	return nil
}

// checkRef verifies the reference exists with the given type (0: any) and
// head.
func (t *refTxn) checkRef(typ RefType, expected Hash) error {
	if t.ref == nil {
		return fmt.Errorf("%q: %w", t.name, ErrReferenceNotFound)
	}
	if typ != 0 && t.ref.Type != typ {
		return fmt.Errorf("%w: %q is a %s, not a %s", ErrReferenceNotFound, t.name, t.ref.Type, typ)
	}
	if t.ref.Head != expected {
		return unexpectedHash(t.name, expected, t.ref.Head)
	}
	return nil
}
