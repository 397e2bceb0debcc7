package nessie

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/versionstore"
)

// configJSON is NessieConfiguration.
type configJSON struct {
	DefaultBranch                 string    `json:"defaultBranch"`
	MinSupportedAPIVersion        int       `json:"minSupportedApiVersion"`
	MaxSupportedAPIVersion        int       `json:"maxSupportedApiVersion"`
	ActualAPIVersion              int       `json:"actualApiVersion"`
	SpecVersion                   string    `json:"specVersion"`
	NoAncestorHash                string    `json:"noAncestorHash"`
	RepositoryCreationTimestamp   time.Time `json:"repositoryCreationTimestamp"`
	OldestPossibleCommitTimestamp time.Time `json:"oldestPossibleCommitTimestamp"`
	AdditionalProperties          struct{}  `json:"additionalProperties"`
}

func (a *api) getConfig(*http.Request) (any, error) {
	main, err := a.store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		return nil, err
	}
	// The default branch is created with the repository and never
	// deleted, so its creation time is the repository's.
	created := main.Created.UTC()
	return configJSON{
		DefaultBranch:          versionstore.DefaultBranch,
		MinSupportedAPIVersion: 2, MaxSupportedAPIVersion: 2, ActualAPIVersion: 2,
		SpecVersion:                   SpecVersion,
		NoAncestorHash:                versionstore.NoAncestor.String(),
		RepositoryCreationTimestamp:   created,
		OldestPossibleCommitTimestamp: created,
	}, nil
}

type referencesResponse struct {
	References []referenceJSON `json:"references"`
	HasMore    bool            `json:"hasMore"`
	Token      string          `json:"token,omitempty"`
}

type singleReferenceResponse struct {
	Reference referenceJSON `json:"reference"`
}

// listReferences is GET /trees. The page token is the hex of the last name
// returned; names sort in byte order.
func (a *api) listReferences(r *http.Request) (any, error) {
	all, err := fetchAll(r)
	if err != nil {
		return nil, err
	}
	limit, token, err := pageParams(r, defaultPage, 10000)
	if err != nil {
		return nil, err
	}
	var after string
	if token != "" {
		b, err := hex.DecodeString(token)
		if err != nil || len(b) == 0 {
			return nil, badRequest("bad page token %q", token)
		}
		after = string(b)
	}
	f, err := a.filters.compile(referencesFilter, r.URL.Query().Get("filter"))
	if err != nil {
		return nil, err
	}
	resp := referencesResponse{References: []referenceJSON{}}
	for _, ref := range a.store.ListRefs() {
		if after != "" && ref.Name <= after {
			continue
		}
		// A reference the caller may not read is left out, as Nessie
		// does, rather than failing the whole listing.
		err := a.guard.Read(r, policy.Ref{Name: ref.Name, Type: authz.RefType(ref.Type)})
		if _, denied := errors.AsType[*authz.DeniedError](err); denied {
			continue
		} else if err != nil {
			return nil, err
		}
		j := refJSON(ref)
		if all {
			if j.Metadata, err = a.refMetadata(r.Context(), ref); err != nil {
				return nil, err
			}
		}
		if f != nil {
			// commit is the head's CommitMeta even without fetch=ALL,
			// where Nessie gives an empty one: a filter on it then still
			// means what it says.
			var head *versionstore.Commit
			if ref.Head != versionstore.NoAncestor {
				if head, err = a.store.ReadCommit(r.Context(), ref.Head); err != nil {
					return nil, err
				}
			}
			if ok, err := f.match(referenceVars(ref, head, j.Metadata)); err != nil {
				return nil, err
			} else if !ok {
				continue
			}
		}
		if len(resp.References) == limit {
			resp.HasMore = true
			resp.Token = hex.EncodeToString([]byte(resp.References[len(resp.References)-1].Name))
			break
		}
		resp.References = append(resp.References, j)
	}
	return resp, nil
}

// refMetadata computes fetch=ALL metadata: commits ahead of and behind the
// default branch (along first parents, to the merge base), their common
// ancestor, the head's commit meta and the number of commits.
func (a *api) refMetadata(ctx context.Context, ref *versionstore.Ref) (*referenceMetadata, error) {
	md := &referenceMetadata{}
	var total int64
	if ref.Head != versionstore.NoAncestor {
		c, err := a.store.ReadCommit(ctx, ref.Head)
		if err != nil {
			return nil, err
		}
		md.CommitMetaOfHEAD = commitMeta(c)
		total = int64(c.Seq)
	}
	md.NumTotalCommits = &total
	main, err := a.store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		return nil, err
	}
	base, err := a.store.MergeBase(ctx, ref.Head, main.Head)
	if err != nil {
		return nil, err
	}
	ahead, err := a.countTo(ctx, ref.Head, base)
	if err != nil {
		return nil, err
	}
	behind, err := a.countTo(ctx, main.Head, base)
	if err != nil {
		return nil, err
	}
	md.NumCommitsAhead, md.NumCommitsBehind = &ahead, &behind
	md.CommonAncestorHash = base.String()
	return md, nil
}

// countTo counts first-parent commits from head until (excluding) stop.
func (a *api) countTo(ctx context.Context, head, stop versionstore.Hash) (int, error) {
	n := 0
	token := ""
	for head != stop {
		page, next, err := a.store.Log(ctx, head, versionstore.LogOptions{Limit: 1000, PageToken: token, Until: stop})
		if err != nil {
			return 0, err
		}
		for _, c := range page {
			if c.Hash == stop {
				return n, nil
			}
			n++
		}
		if next == "" {
			return n, nil
		}
		token = next
	}
	return n, nil
}

func (a *api) getReference(r *http.Request) (any, error) {
	name, err := pathVar(r, "ref")
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(name, "@~^*") {
		return nil, badRequest("reference %q must be a plain name, without a hash or relative part", name)
	}
	if name == "-" {
		name = versionstore.DefaultBranch
	}
	all, err := fetchAll(r)
	if err != nil {
		return nil, err
	}
	if err := versionstore.ValidateRefName(name); err != nil {
		return nil, err
	}
	ref, err := a.store.GetRef(name)
	if err != nil {
		return nil, err
	}
	if err := a.guard.Read(r, policy.Ref{Name: ref.Name, Type: authz.RefType(ref.Type)}); err != nil {
		return nil, err
	}
	j := refJSON(ref)
	if all {
		if j.Metadata, err = a.refMetadata(r.Context(), ref); err != nil {
			return nil, err
		}
	}
	return singleReferenceResponse{Reference: j}, nil
}

// refType parses the type query parameter; "" means either.
func refTypeParam(r *http.Request, required bool) (versionstore.RefType, error) {
	switch t := r.URL.Query().Get("type"); t {
	case typeBranch:
		return versionstore.Branch, nil
	case typeTag:
		return versionstore.Tag, nil
	case "":
		if required {
			return 0, badRequest("query parameter type (BRANCH or TAG) is required")
		}
		return 0, nil
	default:
		return 0, badRequest("type must be BRANCH or TAG, got %q", t)
	}
}

// resolveSource resolves a Reference body naming a commit: its hash is
// mandatory, and when it names a reference the hash must be on it.
func (a *api) resolveSource(ctx context.Context, ref *referenceJSON) (versionstore.Hash, error) {
	if ref == nil {
		return versionstore.Hash{}, badRequest("a source reference body is required")
	}
	if ref.Hash == "" {
		return versionstore.Hash{}, badRequest("Target hash must be provided")
	}
	expr := "@" + ref.Hash
	if ref.Type != typeDetached && ref.Name != "" && ref.Name != typeDetached {
		expr = ref.Name + expr
	}
	res, err := a.store.Resolve(ctx, expr)
	if err != nil {
		return versionstore.Hash{}, err
	}
	return res.Hash, nil
}

func (a *api) createReference(r *http.Request) (any, error) {
	name := r.URL.Query().Get("name")
	if name == "" {
		return nil, badRequest("query parameter name is required")
	}
	typ, err := refTypeParam(r, true)
	if err != nil {
		return nil, err
	}
	if err := versionstore.ValidateNewRefName(name); err != nil {
		return nil, err
	}
	var src referenceJSON
	if err := decodeBody(r, &src); err != nil {
		return nil, err
	}
	target, err := a.resolveSource(r.Context(), &src)
	if err != nil {
		return nil, err
	}
	if err := a.refAction(r, policy.ActionCreateRef, policy.Ref{Name: name, Type: authz.RefType(typ)}); err != nil {
		return nil, err
	}
	ref, err := a.store.CreateRef(r.Context(), versionstore.CreateRefRequest{Name: name, Type: typ, Target: target, Principal: a.principal(r)})
	if err != nil {
		return nil, err
	}
	return singleReferenceResponse{Reference: refJSON(ref)}, nil
}

// writeTarget parses the {ref} of a write, which must be name@hash with an
// absolute hash, and returns the name and the full expected hash.
func (a *api) writeTarget(r *http.Request) (string, versionstore.Hash, error) {
	spec, err := pathVar(r, "ref")
	if err != nil {
		return "", versionstore.Hash{}, err
	}
	name, hash, _ := strings.Cut(spec, "@")
	if name == "-" {
		name = versionstore.DefaultBranch
	}
	if name == "" {
		return "", versionstore.Hash{}, badRequest("a write needs a reference name, got %q", spec)
	}
	if strings.ContainsAny(spec, "~^*") {
		return "", versionstore.Hash{}, badRequest("Expected hash must be an absolute hash, not relative: %q", spec)
	}
	if hash == "" {
		return "", versionstore.Hash{}, badRequest("Expected hash must be provided")
	}
	if err := versionstore.ValidateRefName(name); err != nil {
		return "", versionstore.Hash{}, err
	}
	if len(hash) == 64 {
		h, err := versionstore.ParseHash(strings.ToLower(hash))
		if err == nil && h == (versionstore.Hash{}) {
			// The store reads a zero hash as "none given"; no commit has it.
			err = &apiError{status: http.StatusNotFound, code: codeReferenceNotFound, msg: fmt.Sprintf("commit %s not found", hash)}
		}
		return name, h, err
	}
	res, err := a.store.Resolve(r.Context(), "@"+hash)
	if err != nil {
		return "", versionstore.Hash{}, err
	}
	return name, res.Hash, nil
}

func (a *api) assignReference(r *http.Request) (any, error) {
	name, expected, err := a.writeTarget(r)
	if err != nil {
		return nil, err
	}
	typ, err := refTypeParam(r, false)
	if err != nil {
		return nil, err
	}
	var to referenceJSON
	if err := decodeBody(r, &to); err != nil {
		return nil, err
	}
	target, err := a.resolveSource(r.Context(), &to)
	if err != nil {
		return nil, err
	}
	if err := a.refAction(r, policy.ActionAssignRef, a.storedRef(name)); err != nil {
		return nil, err
	}
	ref, err := a.store.AssignRef(r.Context(), versionstore.AssignRefRequest{Name: name, Type: typ, Expected: expected, Target: target, Principal: a.principal(r)})
	if err != nil {
		return nil, err
	}
	return singleReferenceResponse{Reference: refJSON(ref)}, nil
}

func (a *api) deleteReference(r *http.Request) (any, error) {
	name, expected, err := a.writeTarget(r)
	if err != nil {
		return nil, err
	}
	typ, err := refTypeParam(r, false)
	if err != nil {
		return nil, err
	}
	ref, err := a.store.GetRef(name)
	if err != nil {
		return nil, err
	}
	if err := a.refAction(r, policy.ActionDeleteRef, policy.Ref{Name: ref.Name, Type: authz.RefType(ref.Type)}); err != nil {
		return nil, err
	}
	if err := a.store.DeleteRef(r.Context(), versionstore.DeleteRefRequest{Name: name, Type: typ, Expected: expected, Principal: a.principal(r)}); err != nil {
		return nil, err
	}
	j := refJSON(ref)
	j.Hash = expected.String()
	return singleReferenceResponse{Reference: j}, nil
}

// resolveRead resolves the {ref} (or another path variable) of a read.
func (a *api) resolveRead(r *http.Request, v string) (*versionstore.Resolved, error) {
	spec, err := pathVar(r, v)
	if err != nil {
		return nil, err
	}
	res, err := a.store.Resolve(r.Context(), spec)
	if err != nil {
		return nil, err
	}
	if err := a.guard.Read(r, authz.RefOf(res)); err != nil {
		return nil, err
	}
	return res, nil
}
