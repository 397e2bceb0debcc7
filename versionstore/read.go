package versionstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
)

// Paging: every listing returns at most Limit items and, if more remain, a
// token that continues after the last item returned. Tokens are opaque.

// maxPage caps one page of any listing.
const maxPage = 10000

func pageLimit(limit int) int {
	if limit <= 0 || limit > maxPage {
		return maxPage
	}
	return limit
}

// LogOptions select a page of a commit log.
type LogOptions struct {
	Limit     int
	PageToken string
	// Until stops the log after this commit (inclusive), like Nessie's
	// limit-hash.
	Until Hash
}

// Log lists commits from head along first parents, newest first.
func (s *Store) Log(ctx context.Context, head Hash, opts LogOptions) ([]*Commit, string, error) {
	h := head
	if opts.PageToken != "" {
		t, err := ParseHash(opts.PageToken)
		if err != nil {
			return nil, "", fmt.Errorf("%w: bad page token", ErrInvalid)
		}
		h = t
	}
	limit := pageLimit(opts.Limit)
	var out []*Commit
	for h != NoAncestor {
		if len(out) == limit {
			return out, h.String(), nil
		}
		c, err := s.commit(ctx, h)
		if err != nil {
			return nil, "", err
		}
		out = append(out, c.clone())
		if h == opts.Until {
			break
		}
		h = c.Parent()
	}
	return out, "", nil
}

// RefLog lists reference moves, newest first, optionally for one ref.
// Events appended to the log (AppendEvent) are not moves and are left out.
func (s *Store) RefLog(ctx context.Context, ref string, limit int, pageToken string) ([]*RefLogEntry, string, error) {
	var before uint64
	if pageToken != "" {
		if _, err := fmt.Sscanf(pageToken, "%d", &before); err != nil || before == 0 {
			return nil, "", fmt.Errorf("%w: bad page token", ErrInvalid)
		}
	}
	limit = pageLimit(limit)
	var out []*RefLogEntry
	for {
		recs, err := s.be.ReadLog(ctx, before, 256)
		if err != nil {
			return nil, "", fmt.Errorf("read reference log: %w", err)
		}
		if len(recs) == 0 {
			return out, "", nil
		}
		for _, r := range recs {
			e, err := decodeRefLog(r.Seq, r.Value)
			if err != nil {
				return nil, "", err
			}
			before = r.Seq
			if e.Op == RefLogEvent || (ref != "" && e.Ref != ref) {
				continue // an event moves no reference (logevent.go)
			}
			if len(out) == limit {
				return out, fmt.Sprint(e.Seq + 1), nil
			}
			out = append(out, e)
		}
	}
}

// Entry is one key of a tree listing.
type Entry struct {
	Key     ContentKey
	Type    ContentType
	ID      string
	Value   Hash
	Content *Content // only when requested
}

// EntriesOptions select a page of a tree listing. Prefix limits to a key
// and everything below it; Min and Max bound the range (inclusive).
type EntriesOptions struct {
	Prefix      ContentKey
	Min, Max    ContentKey
	Limit       int
	PageToken   string
	WithContent bool
}

// keyBounds turns prefix/min/max/token into an encoded range [lo, hi).
func keyBounds(prefix, minKey, maxKey ContentKey, token string) (lo, hi []byte, err error) {
	if len(prefix) > 0 {
		if err := prefix.Validate(); err != nil {
			return nil, nil, err
		}
		lo, hi = prefixRange(prefix)
	}
	if len(minKey) > 0 {
		if err := minKey.Validate(); err != nil {
			return nil, nil, err
		}
		if m := minKey.Encode(); bytes.Compare(m, lo) > 0 {
			lo = m
		}
	}
	if len(maxKey) > 0 {
		if err := maxKey.Validate(); err != nil {
			return nil, nil, err
		}
		m := append(maxKey.Encode(), keySeparator) // inclusive: just past maxKey
		if hi == nil || bytes.Compare(m, hi) < 0 {
			hi = m
		}
	}
	if token != "" {
		last, err := hex.DecodeString(token)
		if err != nil || len(last) == 0 {
			return nil, nil, fmt.Errorf("%w: bad page token", ErrInvalid)
		}
		if next := append(last, keySeparator); bytes.Compare(next, lo) > 0 {
			lo = next
		}
	}
	return lo, hi, nil
}

// Entries lists the keys of the tree at a commit, in key order.
func (s *Store) Entries(ctx context.Context, at Hash, opts EntriesOptions) ([]Entry, string, error) {
	lo, hi, err := keyBounds(opts.Prefix, opts.Min, opts.Max, opts.PageToken)
	if err != nil {
		return nil, "", err
	}
	c, err := s.commit(ctx, at)
	if err != nil {
		return nil, "", err
	}
	src, err := s.treeSource(ctx, c, s)
	if err != nil {
		return nil, "", err
	}
	limit := pageLimit(opts.Limit)
	var out []Entry
	var token string
	var ferr error
	err = scanRange(ctx, src, c.Tree, lo, hi, func(k []byte, v Hash) bool {
		if len(out) == limit {
			token = hex.EncodeToString(out[len(out)-1].Key.Encode())
			return false
		}
		key, err := DecodeKey(k)
		if err != nil {
			ferr = err
			return false
		}
		ct, err := s.content(ctx, v)
		if err != nil {
			ferr = err
			return false
		}
		e := Entry{Key: key, Type: ct.Type, ID: ct.ID, Value: v}
		if opts.WithContent {
			e.Content = ct.Clone()
		}
		out = append(out, e)
		return true
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return nil, "", err
	}
	return out, token, nil
}

// DiffEntry is one key whose value differs between two commits; a nil side
// means the key is absent there.
type DiffEntry struct {
	Key      ContentKey
	From, To *Content
}

// DiffOptions select a page of a diff.
type DiffOptions struct {
	Prefix    ContentKey
	Min, Max  ContentKey
	Limit     int
	PageToken string
}

// Diff lists the keys whose values differ between two commits, in key
// order. Its cost follows the number of differences, not the catalog size.
func (s *Store) Diff(ctx context.Context, from, to Hash, opts DiffOptions) ([]DiffEntry, string, error) {
	lo, hi, err := keyBounds(opts.Prefix, opts.Min, opts.Max, opts.PageToken)
	if err != nil {
		return nil, "", err
	}
	fc, err := s.commit(ctx, from)
	if err != nil {
		return nil, "", err
	}
	tc, err := s.commit(ctx, to)
	if err != nil {
		return nil, "", err
	}
	src, err := s.bothTrees(ctx, fc, tc, s)
	if err != nil {
		return nil, "", err
	}
	limit := pageLimit(opts.Limit)
	var out []DiffEntry
	var token string
	var ferr error
	err = diffTrees(ctx, src, fc.Tree, tc.Tree, lo, hi, func(k []byte, fv Hash, fok bool, tv Hash, tok bool) bool {
		if len(out) == limit {
			token = hex.EncodeToString(out[len(out)-1].Key.Encode())
			return false
		}
		key, err := DecodeKey(k)
		if err != nil {
			ferr = err
			return false
		}
		d := DiffEntry{Key: key}
		if fok {
			if d.From, ferr = s.content(ctx, fv); ferr != nil {
				return false
			}
			d.From = d.From.Clone()
		}
		if tok {
			if d.To, ferr = s.content(ctx, tv); ferr != nil {
				return false
			}
			d.To = d.To.Clone()
		}
		out = append(out, d)
		return true
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return nil, "", err
	}
	return out, token, nil
}
