package versionstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Resolved is what a reference expression names: a commit, and the
// reference it was reached through (nil when detached).
type Resolved struct {
	Ref  *Ref
	Hash Hash
	// AtHead is true when Hash is the reference's current head.
	AtHead bool
	// Pinned is true when the expression named a commit (a hash or a
	// relative step), not just a reference: "main@<head>" is pinned even
	// though it is at the head, and is read-only for writers.
	Pinned bool
}

var (
	relativePattern = regexp.MustCompile(`([~^*])([^~^*]+)`)
)

// Resolve evaluates Nessie's reference notation: "name", "name@hash",
// "@hash" (detached), "-" (the default branch), a bare hash (as "@hash")
// or "name@" (the reference, never a hash), followed by any chain of
// "~N" (N-th first-parent ancestor), "^N" (N-th parent) and "*T" (the
// newest commit at or before T, in milliseconds since the epoch or
// RFC 3339). Abbreviated hashes of at least 8 digits are accepted.
func (s *Store) Resolve(ctx context.Context, expr string) (*Resolved, error) {
	base, rel := expr, ""
	if i := strings.IndexAny(expr, "~^*"); i >= 0 {
		base, rel = expr[:i], expr[i:]
	}
	name, hashPart, hasHash := strings.Cut(base, "@")
	switch {
	case name == "-" || (name == "" && !hasHash):
		name = DefaultBranch
	case !hasHash && LooksLikeHash(name):
		// Hash notation never names a reference: references cannot be
		// created with such names (ValidateNewRefName), and one created
		// before that rule is reached as "name@".
		name, hashPart, hasHash = "", name, true
	case hasHash && hashPart == "" && name != "":
		// "name@" is the reference itself, named explicitly.
		hasHash = false
	}
	res := &Resolved{}
	if name != "" {
		if err := ValidateRefName(name); err != nil {
			return nil, err
		}
		r, err := s.getRef(ctx, name)
		if err != nil {
			return nil, err
		}
		res.Ref, res.Hash, res.AtHead = r, r.Head, true
	}
	if hasHash {
		h, err := s.resolveHash(ctx, hashPart)
		if err != nil {
			return nil, err
		}
		if res.Ref != nil && h != res.Ref.Head {
			ok, err := isAncestor(ctx, s, h, res.Ref.Head)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("%w: commit %s is not on %q", ErrCommitNotFound, h, name)
			}
		}
		res.Hash, res.AtHead, res.Pinned = h, res.Ref != nil && h == res.Ref.Head, true
	}
	if rel == "" {
		return res, nil
	}
	parts := relativePattern.FindAllStringSubmatchIndex(rel, -1)
	covered := 0
	for _, p := range parts {
		if p[0] != covered {
			break
		}
		covered = p[1]
	}
	if covered != len(rel) {
		return nil, fmt.Errorf("%w: bad relative reference %q in %q", ErrInvalid, rel, expr)
	}
	h := res.Hash
	for _, p := range parts {
		op, arg := rel[p[2]:p[3]], rel[p[4]:p[5]]
		var err error
		switch op {
		case "~":
			h, err = s.ancestorN(ctx, h, arg)
		case "^":
			h, err = s.parentN(ctx, h, arg)
		case "*":
			h, err = s.atTime(ctx, h, arg)
		}
		if err != nil {
			return nil, fmt.Errorf("resolve %q: %w", expr, err)
		}
	}
	res.Hash, res.Pinned = h, true
	res.AtHead = res.Ref != nil && h == res.Ref.Head
	return res, nil
}

// resolveHash accepts a full or abbreviated hash of an existing commit.
func (s *Store) resolveHash(ctx context.Context, hs string) (Hash, error) {
	if !LooksLikeHash(hs) {
		return Hash{}, fmt.Errorf("%w: %q is not a hash of 8 to 64 hex digits", ErrInvalid, hs)
	}
	hs = strings.ToLower(hs)
	if len(hs) == 64 {
		h, err := ParseHash(hs)
		if err != nil {
			return Hash{}, err
		}
		if _, err := s.commit(ctx, h); err != nil {
			return Hash{}, err
		}
		return h, nil
	}
	var found []Hash
	if strings.HasPrefix(NoAncestor.String(), hs) {
		found = append(found, NoAncestor)
	}
	prefix, _ := hex.DecodeString(hs[:len(hs)&^1])
	ids, err := s.be.ObjectsWithPrefix(ctx, prefix, 64)
	if err != nil {
		return Hash{}, fmt.Errorf("resolve hash %q: %w", hs, err)
	}
	for _, id := range ids {
		if !strings.HasPrefix(id.String(), hs) {
			continue
		}
		if _, err := s.commit(ctx, id); err == nil {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return Hash{}, fmt.Errorf("%w: no commit %s", ErrCommitNotFound, hs)
	default:
		return Hash{}, fmt.Errorf("%w: hash %s is ambiguous", ErrCommitNotFound, hs)
	}
}

func parseCount(arg string, min int) (int, error) {
	n, err := strconv.Atoi(arg)
	if err != nil || n < min || n > 1<<30 {
		return 0, fmt.Errorf("%w: bad count %q", ErrInvalid, arg)
	}
	return n, nil
}

func (s *Store) ancestorN(ctx context.Context, h Hash, arg string) (Hash, error) {
	n, err := parseCount(arg, 0)
	if err != nil {
		return Hash{}, err
	}
	for i := 0; i < n; i++ {
		if h == NoAncestor {
			return Hash{}, fmt.Errorf("%w: history has fewer than %d commits", ErrCommitNotFound, n)
		}
		c, err := s.commit(ctx, h)
		if err != nil {
			return Hash{}, err
		}
		h = c.Parent()
	}
	return h, nil
}

func (s *Store) parentN(ctx context.Context, h Hash, arg string) (Hash, error) {
	n, err := parseCount(arg, 1)
	if err != nil {
		return Hash{}, err
	}
	c, err := s.commit(ctx, h)
	if err != nil {
		return Hash{}, err
	}
	if n > len(c.Parents) {
		return Hash{}, fmt.Errorf("%w: commit %s has no parent %d", ErrCommitNotFound, h, n)
	}
	return c.Parents[n-1], nil
}

func (s *Store) atTime(ctx context.Context, h Hash, arg string) (Hash, error) {
	var t time.Time
	if ms, err := strconv.ParseInt(arg, 10, 64); err == nil {
		t = time.UnixMilli(ms)
	} else if t, err = time.Parse(time.RFC3339Nano, arg); err != nil {
		return Hash{}, fmt.Errorf("%w: bad timestamp %q: use milliseconds since the epoch or RFC 3339", ErrInvalid, arg)
	}
	for h != NoAncestor {
		c, err := s.commit(ctx, h)
		if err != nil {
			return Hash{}, err
		}
		if !c.CommitTime.After(t) {
			return h, nil
		}
		h = c.Parent()
	}
	return Hash{}, fmt.Errorf("%w: no commit at or before %s", ErrCommitNotFound, t.UTC().Format(time.RFC3339Nano))
}
