package icebergrest

import (
	"context"
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"

	"github.com/floe-catalog/floe/versionstore"
)

// maxPageSize caps one page of a listing.
const maxPageSize = 1000

// scanBatch is how many tree entries one store read fetches while listing.
const scanBatch = 256

// paging is a listing request's pageToken and pageSize. Per the spec, a
// request without pageToken gets everything unless it asks for a page size.
type paging struct {
	paged bool
	after string // the last name of the previous page
	size  int
}

func parsePaging(r *http.Request) (paging, error) {
	q := r.URL.Query()
	var p paging
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return p, badRequest("pageSize must be a positive integer, not %q", v)
		}
		p.paged, p.size = true, min(n, maxPageSize)
	}
	if q.Has("pageToken") {
		p.paged = true
		if tok := q.Get("pageToken"); tok != "" {
			b, err := base64.RawURLEncoding.DecodeString(tok)
			if err != nil || len(b) == 0 {
				return p, badRequest("invalid pageToken %q", tok)
			}
			p.after = string(b)
		}
	}
	if p.paged && p.size == 0 {
		p.size = maxPageSize
	}
	return p, nil
}

// nextToken is the token that continues after name.
func nextToken(name string) string { return base64.RawURLEncoding.EncodeToString([]byte(name)) }

// child is a direct child entry of a namespace (or of the root).
type child struct {
	name string
}

// listChildren lists the direct children of parent (nil: the root) of the
// given type at a commit, in name order, after p.after. Deeper keys are
// skipped by jumping past each child's subtree, so a listing costs about
// one tree seek per child rather than a scan of everything below.
func (a *api) listChildren(ctx context.Context, at versionstore.Hash, parent []string, typ versionstore.ContentType, p paging) ([]child, bool, error) {
	depth := len(parent) + 1
	var minKey versionstore.ContentKey
	if p.after != "" {
		minKey = afterSubtree(append(slices.Clone(parent), p.after))
	}
	var (
		out   []child
		token string
	)
	for {
		entries, next, err := a.store.Entries(ctx, at, versionstore.EntriesOptions{
			Prefix: parent, Min: minKey, Limit: scanBatch, PageToken: token,
		})
		if err != nil {
			return nil, false, err
		}
		jumped := false
		for _, e := range entries {
			if len(e.Key) < depth {
				continue // the parent itself
			}
			if len(e.Key) > depth {
				// Below a child namespace: skip that child's subtree.
				minKey, token, jumped = afterSubtree(e.Key[:depth]), "", true
				break
			}
			if e.Type != typ {
				continue
			}
			if p.paged && len(out) == p.size {
				return out, true, nil
			}
			out = append(out, child{name: e.Key[depth-1]})
		}
		if jumped {
			continue
		}
		if next == "" {
			return out, false, nil
		}
		token = next
	}
}

// afterSubtree is the smallest key greater than k and every key below it:
// its last element with 0x01 appended. Encoded keys join elements with NUL,
// so "a\x01" sorts after "a" and all of "a\x00...", and no key sorts in
// between.
func afterSubtree(k versionstore.ContentKey) versionstore.ContentKey {
	out := slices.Clone(k)
	out[len(out)-1] += "\x01"
	return out
}
