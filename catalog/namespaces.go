package catalog

import (
	"context"
	"maps"
	"slices"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// Namespaces: created, their properties updated and dropped, each in one
// store commit on a branch. A namespace is a key of its own; its tables,
// views and child namespaces are the keys below it, so the store refuses
// to drop one that still holds any.

// CheckNamespaceCreate checks the name of a namespace to create; an API
// may run it before authorizing the request, CreateNamespace runs it too.
func CheckNamespaceCreate(ns []string) error {
	if len(ns) == 0 {
		return badRequest("cannot create a namespace with no levels")
	}
	return CheckNewKey("namespace", ns)
}

// CreateNamespace creates namespace ns with properties props on
// w.Branch: its key must be free and its parent (if any) a namespace.
// Written.Content is the namespace created.
func (s *Service) CreateNamespace(ctx context.Context, w Write, ns []string, props map[string]string) (*Written, error) {
	if err := CheckNamespaceCreate(ns); err != nil {
		return nil, err
	}
	head, err := s.head(w.Branch)
	if err != nil {
		return nil, err
	}
	if existing, err := s.lookup(ctx, head, ns); err != nil {
		return nil, err
	} else if existing != nil {
		return nil, namespaceClash(ns, existing.Type)
	}
	if len(ns) > 1 {
		if _, err := s.requireNamespace(ctx, head, ns[:len(ns)-1]); err != nil {
			return nil, err
		}
	}
	out := &Written{Content: &versionstore.Content{Type: versionstore.Namespace, Properties: props}}
	err = s.commitWrite(ctx, w, head, []versionstore.Operation{{Kind: versionstore.OpPut, Key: ns, Content: out.Content}},
		commitDescription{op: "create-namespace", message: "iceberg: create namespace " + dotted(ns),
			props: map[string]string{icebergtable.PropNamespace: dotted(ns)}}, out)
	if ce := ConflictOf(err); ce != nil {
		if cf := FindConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace); cf != nil {
			return nil, noSuchNamespace(cf.Key)
		}
		return nil, newError(AlreadyExists, "Namespace already exists: %s", dotted(ns))
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DropNamespace drops namespace ns from w.Branch; it must hold nothing.
func (s *Service) DropNamespace(ctx context.Context, w Write, ns []string) (*Written, error) {
	out := &Written{}
	err := s.retry(ctx, w, "drop-namespace", func() (bool, error) {
		head, err := s.head(w.Branch)
		if err != nil {
			return false, err
		}
		if _, err := s.requireNamespace(ctx, head, ns); err != nil {
			return false, err
		}
		err = s.commitWrite(ctx, w, head, []versionstore.Operation{{Kind: versionstore.OpDelete, Key: ns}},
			commitDescription{op: "drop-namespace", message: "iceberg: drop namespace " + dotted(ns),
				props: map[string]string{icebergtable.PropNamespace: dotted(ns)}}, out)
		ce := ConflictOf(err)
		switch {
		case ce == nil:
			return false, err
		case FindConflict(ce, versionstore.ConflictNamespaceNotEmpty) != nil:
			return false, newError(NamespaceNotEmpty, "Namespace not empty: %s is not empty, it still holds tables, views or namespaces", dotted(ns))
		case FindConflict(ce, versionstore.ConflictKeyDoesNotExist) != nil:
			return false, noSuchNamespace(ns)
		}
		return true, commitFailed("Namespace %s changed concurrently: %v", dotted(ns), ce)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CheckPropertyChanges refuses an update of properties that both sets
// and removes a key; an API may run it before authorizing the request,
// UpdateNamespaceProperties runs it too.
func CheckPropertyChanges(removals []string, updates map[string]string) error {
	var both []string
	for _, k := range removals {
		if _, ok := updates[k]; ok {
			both = append(both, k)
		}
	}
	if len(both) > 0 {
		return newError(Unprocessable, "Cannot update and remove the same properties: %v", both)
	}
	return nil
}

// UpdateNamespaceProperties removes the properties removals names from
// namespace ns on w.Branch and sets updates; Written.Properties says what
// it did. Nothing is committed when nothing changes.
func (s *Service) UpdateNamespaceProperties(ctx context.Context, w Write, ns []string, removals []string, updates map[string]string) (*Written, error) {
	if err := CheckPropertyChanges(removals, updates); err != nil {
		return nil, err
	}
	var out *Written
	err := s.retry(ctx, w, "update-namespace", func() (bool, error) {
		out = &Written{}
		head, err := s.head(w.Branch)
		if err != nil {
			return false, err
		}
		cur, err := s.requireNamespace(ctx, head, ns)
		if err != nil {
			return false, err
		}
		next := maps.Clone(cur.Properties)
		if next == nil {
			next = map[string]string{}
		}
		pc := &out.Properties
		pc.Updated, pc.Removed, pc.Missing = slices.Sorted(maps.Keys(updates)), []string{}, nil
		for _, k := range removals {
			if _, ok := next[k]; ok {
				delete(next, k)
				pc.Removed = append(pc.Removed, k)
			} else {
				pc.Missing = append(pc.Missing, k)
			}
		}
		maps.Copy(next, updates)
		if pc.Updated == nil {
			pc.Updated = []string{}
		}
		if maps.Equal(next, cur.Properties) || (len(next) == 0 && len(cur.Properties) == 0) {
			w.prepared(out)
			return false, nil
		}
		content := &versionstore.Content{Type: versionstore.Namespace, ID: cur.ID, Properties: next}
		err = s.commitWrite(ctx, w, head, []versionstore.Operation{{Kind: versionstore.OpPut, Key: ns, Content: content}},
			commitDescription{op: "update-namespace", message: "iceberg: update properties of namespace " + dotted(ns),
				props: map[string]string{icebergtable.PropNamespace: dotted(ns)}}, out)
		if ce := ConflictOf(err); ce != nil {
			return true, commitFailed("Namespace %s changed concurrently: %v", dotted(ns), ce)
		}
		return false, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
