package nessie

import (
	"context"
	"net/http"
	"slices"

	"github.com/floe-catalog/floe/versionstore"
)

// maxScanPerRequest bounds how many items one filtered listing request
// reads from the store before it returns a (possibly short) page.
const maxScanPerRequest = 100000

type entryJSON struct {
	Type      string       `json:"type"`
	Name      keyJSON      `json:"name"`
	ContentID string       `json:"contentId,omitempty"`
	Content   *contentJSON `json:"content,omitempty"`
}

type entriesResponse struct {
	Entries            []entryJSON   `json:"entries"`
	EffectiveReference referenceJSON `json:"effectiveReference"`
	HasMore            bool          `json:"hasMore"`
	Token              string        `json:"token,omitempty"`
}

func (a *api) getEntries(r *http.Request) (any, error) {
	res, err := a.resolveRead(r, "ref")
	if err != nil {
		return nil, err
	}
	withContent, err := boolParam(r, "content")
	if err != nil {
		return nil, err
	}
	sel, err := a.keySelectionParams(r, entriesFilter)
	if err != nil {
		return nil, err
	}
	limit, token, f, keys := sel.limit, sel.token, sel.filter, sel.keys
	opts := versionstore.EntriesOptions{WithContent: withContent, Prefix: sel.prefix, Min: sel.min, Max: sel.max}
	resp := entriesResponse{Entries: []entryJSON{}, EffectiveReference: effectiveRef(res)}
	add := func(k versionstore.ContentKey, c *versionstore.Content, t versionstore.ContentType, id string) (bool, error) {
		ok, err := f.match(entryVars(k, t))
		if err != nil || !ok {
			return false, err
		}
		e := entryJSON{Type: t.String(), Name: keyJSON{Elements: append([]string{}, k...)}, ContentID: id}
		if withContent {
			e.Content = toContentJSON(k, c)
		}
		resp.Entries = append(resp.Entries, e)
		return true, nil
	}
	if len(keys) > 0 {
		// Explicit keys: one lookup each, reported in key order, still
		// bounded by prefix/min/max.
		found, err := a.store.GetContents(r.Context(), res.Hash, keys)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(keys, func(x, y versionstore.ContentKey) int { return x.Compare(y) })
		for _, k := range keys {
			c, ok := found[string(k.Encode())]
			if !ok || !inRange(k, opts) {
				continue
			}
			if _, err := add(k, c, c.Type, c.ID); err != nil {
				return nil, err
			}
		}
		return resp, nil
	}
	opts.PageToken = token
	scanned := 0
	for {
		opts.Limit = limit - len(resp.Entries)
		page, next, err := a.store.Entries(r.Context(), res.Hash, opts)
		if err != nil {
			return nil, err
		}
		scanned += len(page)
		for _, e := range page {
			if _, err := add(e.Key, e.Content, e.Type, e.ID); err != nil {
				return nil, err
			}
		}
		if next == "" {
			return resp, nil
		}
		opts.PageToken = next
		if len(resp.Entries) >= limit || scanned >= maxScanPerRequest {
			resp.HasMore, resp.Token = true, next
			return resp, nil
		}
	}
}

// inRange applies prefix/min/max to an explicitly requested key.
func inRange(k versionstore.ContentKey, o versionstore.EntriesOptions) bool {
	if len(o.Prefix) > 0 && (len(k) < len(o.Prefix) || !slices.Equal(k[:len(o.Prefix)], o.Prefix)) {
		return false
	}
	if len(o.Min) > 0 && k.Compare(o.Min) < 0 {
		return false
	}
	if len(o.Max) > 0 && k.Compare(o.Max) > 0 {
		return false
	}
	return true
}

type contentResponse struct {
	Content            *contentJSON  `json:"content"`
	EffectiveReference referenceJSON `json:"effectiveReference"`
}

type contentWithKey struct {
	Key     keyJSON      `json:"key"`
	Content *contentJSON `json:"content"`
}

type multipleContentsResponse struct {
	Contents           []contentWithKey `json:"contents"`
	EffectiveReference referenceJSON    `json:"effectiveReference"`
}

func (a *api) getContent(r *http.Request) (any, error) {
	res, err := a.resolveRead(r, "ref")
	if err != nil {
		return nil, err
	}
	raw, err := pathVar(r, "key")
	if err != nil {
		return nil, err
	}
	k, err := decodeKeyPath(raw)
	if err != nil {
		return nil, err
	}
	c, err := a.store.GetContent(r.Context(), res.Hash, k)
	if err != nil {
		return nil, err
	}
	return contentResponse{Content: toContentJSON(k, c), EffectiveReference: effectiveRef(res)}, nil
}

func (a *api) getMultipleContents(r *http.Request) (any, error) {
	keys, err := keyParams(r.URL.Query()["key"])
	if err != nil {
		return nil, err
	}
	return a.multipleContents(r, keys)
}

func (a *api) postMultipleContents(r *http.Request) (any, error) {
	var body struct {
		RequestedKeys []keyJSON `json:"requestedKeys"`
	}
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	keys := make([]versionstore.ContentKey, 0, len(body.RequestedKeys))
	for i := range body.RequestedKeys {
		k, err := body.RequestedKeys[i].key()
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return a.multipleContents(r, keys)
}

// multipleContents answers with the contents of the keys that exist, in
// the order requested; missing keys are left out, as Nessie does.
func (a *api) multipleContents(r *http.Request, keys []versionstore.ContentKey) (any, error) {
	res, err := a.resolveRead(r, "ref")
	if err != nil {
		return nil, err
	}
	found, err := a.store.GetContents(r.Context(), res.Hash, keys)
	if err != nil {
		return nil, err
	}
	resp := multipleContentsResponse{Contents: []contentWithKey{}, EffectiveReference: effectiveRef(res)}
	seen := map[string]bool{}
	for _, k := range keys {
		enc := string(k.Encode())
		c, ok := found[enc]
		if !ok || seen[enc] {
			continue
		}
		seen[enc] = true
		resp.Contents = append(resp.Contents, contentWithKey{Key: keyJSON{Elements: append([]string{}, k...)}, Content: toContentJSON(k, c)})
	}
	return resp, nil
}

type operationJSON struct {
	Type    string       `json:"type"`
	Key     keyJSON      `json:"key"`
	Content *contentJSON `json:"content,omitempty"`
}

type logEntryJSON struct {
	CommitMeta        *commitMetaJSON `json:"commitMeta"`
	ParentCommitHash  string          `json:"parentCommitHash,omitempty"`
	AdditionalParents []string        `json:"additionalParents,omitempty"`
	Operations        []operationJSON `json:"operations,omitempty"`
}

type logResponse struct {
	LogEntries []logEntryJSON `json:"logEntries"`
	HasMore    bool           `json:"hasMore"`
	Token      string         `json:"token,omitempty"`
}

func (a *api) getHistory(r *http.Request) (any, error) {
	res, err := a.resolveRead(r, "ref")
	if err != nil {
		return nil, err
	}
	all, err := fetchAll(r)
	if err != nil {
		return nil, err
	}
	limit, token, err := pageParams(r, maxLogPage, maxLogPage)
	if err != nil {
		return nil, err
	}
	f, err := a.filters.compile(commitLogFilter, r.URL.Query().Get("filter"))
	if err != nil {
		return nil, err
	}
	opts := versionstore.LogOptions{PageToken: token}
	if lh := r.URL.Query().Get("limit-hash"); lh != "" {
		until, err := a.store.Resolve(r.Context(), "@"+lh)
		if err != nil {
			return nil, err
		}
		opts.Until = until.Hash
	}
	resp := logResponse{LogEntries: []logEntryJSON{}}
	scanned := 0
	for {
		opts.Limit = limit - len(resp.LogEntries)
		page, next, err := a.store.Log(r.Context(), res.Hash, opts)
		if err != nil {
			return nil, err
		}
		scanned += len(page)
		for _, c := range page {
			if ok, err := a.matchCommit(r.Context(), f, c); err != nil {
				return nil, err
			} else if !ok {
				continue
			}
			e, err := a.logEntry(r.Context(), c, all)
			if err != nil {
				return nil, err
			}
			resp.LogEntries = append(resp.LogEntries, e)
		}
		if next == "" {
			return resp, nil
		}
		opts.PageToken = next
		if len(resp.LogEntries) >= limit || scanned >= maxScanPerRequest {
			resp.HasMore, resp.Token = true, next
			return resp, nil
		}
	}
}

// matchCommit applies a commit-log filter, reading what the commit's PUTs
// wrote only when the filter looks at operations' content.
func (a *api) matchCommit(ctx context.Context, f *filter, c *versionstore.Commit) (bool, error) {
	if f == nil {
		return true, nil
	}
	var contents map[string]*versionstore.Content
	if f.readsContent {
		var puts []versionstore.ContentKey
		for _, op := range c.Operations {
			if op.Kind == versionstore.OpPut {
				puts = append(puts, op.Key)
			}
		}
		var err error
		if contents, err = a.store.GetContents(ctx, c.Hash, puts); err != nil {
			return false, err
		}
	}
	return f.match(commitLogVars(c, contents))
}

func (a *api) logEntry(ctx context.Context, c *versionstore.Commit, all bool) (logEntryJSON, error) {
	e := logEntryJSON{CommitMeta: commitMeta(c)}
	if !all {
		return e, nil
	}
	e.ParentCommitHash = c.Parent().String()
	e.AdditionalParents = []string{}
	for _, p := range c.Parents[1:] {
		e.AdditionalParents = append(e.AdditionalParents, p.String())
	}
	e.Operations = []operationJSON{}
	var puts []versionstore.ContentKey
	for _, op := range c.Operations {
		if op.Kind == versionstore.OpPut {
			puts = append(puts, op.Key)
		}
	}
	// The values a commit wrote are its tree's values for those keys.
	contents, err := a.store.GetContents(ctx, c.Hash, puts)
	if err != nil {
		return e, err
	}
	for _, op := range c.Operations {
		o := operationJSON{Type: op.Kind.String(), Key: keyJSON{Elements: append([]string{}, op.Key...)}}
		if op.Kind == versionstore.OpPut {
			o.Content = toContentJSON(op.Key, contents[string(op.Key.Encode())])
		}
		e.Operations = append(e.Operations, o)
	}
	return e, nil
}

type diffEntryJSON struct {
	Key  keyJSON      `json:"key"`
	From *contentJSON `json:"from"`
	To   *contentJSON `json:"to"`
}

type diffResponse struct {
	Diffs                  []diffEntryJSON `json:"diffs"`
	EffectiveFromReference referenceJSON   `json:"effectiveFromReference"`
	EffectiveToReference   referenceJSON   `json:"effectiveToReference"`
	HasMore                bool            `json:"hasMore"`
	Token                  string          `json:"token,omitempty"`
}

func (a *api) getDiff(r *http.Request) (any, error) {
	from, err := a.resolveRead(r, "from")
	if err != nil {
		return nil, err
	}
	to, err := a.resolveRead(r, "to")
	if err != nil {
		return nil, err
	}
	sel, err := a.keySelectionParams(r, diffFilter)
	if err != nil {
		return nil, err
	}
	limit, f, keys := sel.limit, sel.filter, sel.keys
	want := map[string]bool{}
	for _, k := range keys {
		want[string(k.Encode())] = true
	}
	opts := versionstore.DiffOptions{PageToken: sel.token, Prefix: sel.prefix, Min: sel.min, Max: sel.max}
	resp := diffResponse{Diffs: []diffEntryJSON{}, EffectiveFromReference: effectiveRef(from), EffectiveToReference: effectiveRef(to)}
	scanned := 0
	for {
		opts.Limit = limit - len(resp.Diffs)
		page, next, err := a.store.Diff(r.Context(), from.Hash, to.Hash, opts)
		if err != nil {
			return nil, err
		}
		scanned += len(page)
		for _, d := range page {
			if len(want) > 0 && !want[string(d.Key.Encode())] {
				continue
			}
			if ok, err := f.match(diffVars(d.Key)); err != nil {
				return nil, err
			} else if !ok {
				continue
			}
			resp.Diffs = append(resp.Diffs, diffEntryJSON{Key: keyJSON{Elements: append([]string{}, d.Key...)},
				From: toContentJSON(d.Key, d.From), To: toContentJSON(d.Key, d.To)})
		}
		if next == "" {
			return resp, nil
		}
		opts.PageToken = next
		if len(resp.Diffs) >= limit || scanned >= maxScanPerRequest {
			resp.HasMore, resp.Token = true, next
			return resp, nil
		}
	}
}

// keySelection is the query of a listing over keys (entries, diff): paging,
// a filter, explicit keys, and a prefix and bounds.
type keySelection struct {
	limit            int
	token            string
	filter           *filter
	keys             []versionstore.ContentKey
	prefix, min, max versionstore.ContentKey
}

func (a *api) keySelectionParams(r *http.Request, kind filterKind) (sel keySelection, err error) {
	q := r.URL.Query()
	if sel.limit, sel.token, err = pageParams(r, defaultPage, 10000); err != nil {
		return sel, err
	}
	if sel.filter, err = a.filters.compile(kind, q.Get("filter")); err != nil {
		return sel, err
	}
	if sel.keys, err = keyParams(q["key"]); err != nil {
		return sel, err
	}
	if sel.prefix, err = optionalKey(q.Get("prefix-key")); err != nil {
		return sel, err
	}
	if sel.min, err = optionalKey(q.Get("min-key")); err != nil {
		return sel, err
	}
	if sel.max, err = optionalKey(q.Get("max-key")); err != nil {
		return sel, err
	}
	return sel, nil
}
