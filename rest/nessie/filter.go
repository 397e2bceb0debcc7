package nessie

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/ext"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/floe-catalog/floe/versionstore"
)

// Filters are CEL expressions (https://cel.dev), compiled and type-checked
// against the variables Nessie declares for each listing (its CELUtil):
//
//   - entries: entry (keyElements, key, encodedKey, namespaceElements,
//     name, namespace, contentType)
//   - commit log: commit (a CommitMeta) and operations (a list of
//     operations, each with the key fields, type and content {type, id})
//   - references: ref (name, hash, metadata), refType, commit (the head's
//     CommitMeta) and refMeta (a ReferenceMetadata, empty unless fetch=ALL)
//   - diff: key (the key fields)
//
// Keys appear as Nessie shows them: key is the elements joined by '.',
// encodedKey and namespace use the legacy encoding ('.' inside an element
// written as 0x1D).
//
// A filter only reads the variables it is given. Its cost is bounded three
// ways: its length and nesting at parse time, each evaluation's CEL cost
// (maxFilterCost), and the cost of all evaluations of one request
// (maxFilterCostPerRequest), so a hostile filter cannot hold a CPU.
// matches() uses RE2, whose run time is linear in its input.

const (
	maxFilterBytes = 4096
	maxFilterDepth = 64
	// maxFilterCost bounds one evaluation, in CEL's cost units (about one
	// per comparison, field access or loop step). Measured on the 2-core
	// development machine: Nessie's documented entries filter costs 4,
	// exists() over a commit with 10000 operations 70000 (some 80ms of
	// CPU, most of it reading the operations), and a filter of nested
	// loops is stopped here after some 150ms.
	maxFilterCost = 1_000_000
	// maxFilterCostPerRequest bounds all evaluations of one request: a
	// documented filter over maxScanPerRequest entries costs 400000.
	maxFilterCostPerRequest = 10_000_000
	// compiledFilters is how many compiled filters are kept for reuse;
	// clients tend to repeat the same few filters page after page.
	compiledFilters = 256
)

// filterKind names the listing a filter is written for: each declares
// different variables.
type filterKind int

const (
	entriesFilter filterKind = iota
	commitLogFilter
	referencesFilter
	diffFilter
	numFilterKinds
)

// The variables' types, named and shaped as the Nessie model objects they
// stand for. CEL sees the cel tags as field names.

// celKey is Nessie's KeyedEntityForCel: the key a diff entry is about.
type celKey struct {
	KeyElements       []string `cel:"keyElements"`
	Key               string   `cel:"key"`
	EncodedKey        string   `cel:"encodedKey"`
	NamespaceElements []string `cel:"namespaceElements"`
	Name              string   `cel:"name"`
	Namespace         string   `cel:"namespace"`
}

// celEntry is Nessie's KeyEntryForCel: the key fields and the content type.
type celEntry struct {
	KeyElements       []string `cel:"keyElements"`
	Key               string   `cel:"key"`
	EncodedKey        string   `cel:"encodedKey"`
	NamespaceElements []string `cel:"namespaceElements"`
	Name              string   `cel:"name"`
	Namespace         string   `cel:"namespace"`
	ContentType       string   `cel:"contentType"`
}

// celOperation is Nessie's OperationForCel.
type celOperation struct {
	KeyElements       []string `cel:"keyElements"`
	Key               string   `cel:"key"`
	EncodedKey        string   `cel:"encodedKey"`
	NamespaceElements []string `cel:"namespaceElements"`
	Name              string   `cel:"name"`
	Namespace         string   `cel:"namespace"`
	Type              string   `cel:"type"`
	// Content is what a PUT wrote, empty for a DELETE. It is read only
	// for a filter that mentions it.
	Content celContent `cel:"content"`
}

// celContent is Nessie's ContentForCel.
type celContent struct {
	Type string `cel:"type"`
	ID   string `cel:"id"`
}

// celCommitMeta is Nessie's CommitMeta with the properties its JSON
// mapping exposes (V1 and V2 views).
type celCommitMeta struct {
	Hash               string              `cel:"hash"`
	Committer          string              `cel:"committer"`
	Author             string              `cel:"author"`
	Authors            []string            `cel:"authors"`
	SignedOffBy        string              `cel:"signedOffBy"`
	AllSignedOffBy     []string            `cel:"allSignedOffBy"`
	Message            string              `cel:"message"`
	CommitTime         time.Time           `cel:"commitTime"`
	AuthorTime         time.Time           `cel:"authorTime"`
	Properties         map[string]string   `cel:"properties"`
	AllProperties      map[string][]string `cel:"allProperties"`
	ParentCommitHashes []string            `cel:"parentCommitHashes"`
}

// celReference is Nessie's Reference (its JSON fields; the type is the
// refType variable).
type celReference struct {
	Name     string               `cel:"name"`
	Hash     string               `cel:"hash"`
	Metadata celReferenceMetadata `cel:"metadata"`
}

// celReferenceMetadata is Nessie's ReferenceMetadata.
type celReferenceMetadata struct {
	NumCommitsAhead    int64         `cel:"numCommitsAhead"`
	NumCommitsBehind   int64         `cel:"numCommitsBehind"`
	CommitMetaOfHEAD   celCommitMeta `cel:"commitMetaOfHEAD"`
	CommonAncestorHash string        `cel:"commonAncestorHash"`
	NumTotalCommits    int64         `cel:"numTotalCommits"`
}

// celTypeName is the CEL name of a variable type (package.Type).
func celTypeName(v any) string {
	t := reflect.TypeOf(v)
	return "nessie." + t.Name()
}

// filterCompiler compiles filters against one CEL environment per kind
// and keeps the most recently used programs. It is safe for concurrent
// use.
type filterCompiler struct {
	envs     [numFilterKinds]*cel.Env
	compiled *lru.Cache[filterCacheKey, *compiledFilter]
}

type filterCacheKey struct {
	kind filterKind
	expr string
}

// compiledFilter is a checked program, shared by every request with the
// same filter.
type compiledFilter struct {
	prog cel.Program
	// readsContent says the filter reads an operation's content, which
	// costs a store read per commit.
	readsContent bool
}

func newFilterCompiler() (*filterCompiler, error) {
	vars := [numFilterKinds][]cel.EnvOption{
		entriesFilter: {cel.Variable("entry", cel.ObjectType(celTypeName(celEntry{})))},
		commitLogFilter: {
			cel.Variable("commit", cel.ObjectType(celTypeName(celCommitMeta{}))),
			cel.Variable("operations", cel.ListType(cel.ObjectType(celTypeName(celOperation{})))),
		},
		referencesFilter: {
			cel.Variable("commit", cel.ObjectType(celTypeName(celCommitMeta{}))),
			cel.Variable("ref", cel.ObjectType(celTypeName(celReference{}))),
			cel.Variable("refMeta", cel.ObjectType(celTypeName(celReferenceMetadata{}))),
			cel.Variable("refType", cel.StringType),
		},
		diffFilter: {cel.Variable("key", cel.ObjectType(celTypeName(celKey{})))},
	}
	fc := &filterCompiler{}
	for kind, v := range vars {
		opts := append([]cel.EnvOption{
			ext.NativeTypes(ext.ParseStructTags(true),
				reflect.TypeFor[celEntry](), reflect.TypeFor[celKey](), reflect.TypeFor[celOperation](),
				reflect.TypeFor[celReference]()),
			cel.ParserExpressionSizeLimit(maxFilterBytes),
			cel.ParserRecursionLimit(maxFilterDepth),
		}, v...)
		env, err := cel.NewEnv(opts...)
		if err != nil {
			return nil, fmt.Errorf("nessie filters: %w", err)
		}
		fc.envs[kind] = env
	}
	var err error
	if fc.compiled, err = lru.New[filterCacheKey, *compiledFilter](compiledFilters); err != nil {
		return nil, fmt.Errorf("nessie filters: %w", err)
	}
	return fc, nil
}

// compile returns a filter for one request; "" gives nil, which matches
// everything. A filter that does not parse, names an unknown variable or
// field, or is not a boolean is a bad request.
func (fc *filterCompiler) compile(kind filterKind, expr string) (*filter, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, nil
	}
	if len(expr) > maxFilterBytes {
		return nil, badRequest("filter is longer than %d bytes", maxFilterBytes)
	}
	key := filterCacheKey{kind, expr}
	if c, ok := fc.compiled.Get(key); ok {
		return &filter{compiledFilter: c, expr: expr}, nil
	}
	checked, iss := fc.envs[kind].Compile(expr)
	if iss.Err() != nil {
		return nil, badRequest("bad filter %q: %v", expr, iss.Err())
	}
	if !checked.OutputType().IsExactType(cel.BoolType) {
		return nil, badRequest("bad filter %q: it is of type %s, not bool", expr, checked.OutputType())
	}
	prog, err := fc.envs[kind].Program(checked, cel.CostLimit(maxFilterCost), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, badRequest("bad filter %q: %v", expr, err)
	}
	c := &compiledFilter{prog: prog, readsContent: selectsField(checked, "content")}
	fc.compiled.Add(key, c)
	return &filter{compiledFilter: c, expr: expr}, nil
}

// selectsField reports whether the expression selects a field of that name
// anywhere.
func selectsField(checked *cel.Ast, field string) bool {
	found := ast.MatchDescendants(ast.NavigateAST(checked.NativeRep()), func(e ast.NavigableExpr) bool {
		return e.Kind() == ast.SelectKind && e.AsSelect().FieldName() == field
	})
	return len(found) > 0
}

// filter is a compiled filter as one request uses it: it counts the cost
// of its evaluations against the request's budget, so it must not be
// shared between requests.
type filter struct {
	*compiledFilter
	expr  string
	spent uint64
}

// match evaluates the filter; a nil filter matches everything. An
// evaluation error (a missing map key, a bad timestamp, the cost limit)
// is a bad request naming the filter.
func (f *filter) match(vars map[string]any) (bool, error) {
	if f == nil {
		return true, nil
	}
	if f.spent > maxFilterCostPerRequest {
		return false, badRequest("filter %q: costs more than %d for this request", f.expr, maxFilterCostPerRequest)
	}
	out, details, err := f.prog.Eval(vars)
	if details != nil && details.ActualCost() != nil {
		f.spent += *details.ActualCost()
	}
	if err != nil {
		return false, badRequest("filter %q: %v", f.expr, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, badRequest("filter %q: result %v is not a boolean", f.expr, out)
	}
	return b, nil
}

// The variables of each kind of filter.

func keyVar(k versionstore.ContentKey) celKey {
	ns, nsElems := "", []string{}
	if p := k.Parent(); p != nil {
		ns, nsElems = encodeKeyLegacy(p), append(nsElems, p...)
	}
	return celKey{
		KeyElements: append([]string{}, k...), Key: strings.Join(k, "."), EncodedKey: encodeKeyLegacy(k),
		NamespaceElements: nsElems, Name: k[len(k)-1], Namespace: ns,
	}
}

// entryVars are an entry filter's variables.
func entryVars(k versionstore.ContentKey, t versionstore.ContentType) map[string]any {
	kv := keyVar(k)
	return map[string]any{"entry": celEntry{
		KeyElements: kv.KeyElements, Key: kv.Key, EncodedKey: kv.EncodedKey,
		NamespaceElements: kv.NamespaceElements, Name: kv.Name, Namespace: kv.Namespace,
		ContentType: t.String(),
	}}
}

// diffVars are a diff filter's variables.
func diffVars(k versionstore.ContentKey) map[string]any {
	return map[string]any{"key": keyVar(k)}
}

// commitMetaVar is a commit as the commit variable; nil gives the empty
// CommitMeta Nessie uses for a reference without commits.
func commitMetaVar(c *versionstore.Commit) celCommitMeta {
	m := celCommitMeta{
		Authors: []string{}, AllSignedOffBy: []string{}, Properties: map[string]string{},
		AllProperties: map[string][]string{}, ParentCommitHashes: []string{},
	}
	if c == nil {
		return m
	}
	j := commitMeta(c)
	m.Hash, m.Committer, m.Author, m.Message = j.Hash, j.Committer, j.Author, j.Message
	m.Authors, m.AllSignedOffBy, m.Properties, m.AllProperties = j.Authors, j.AllSignedOffBy, j.Properties, j.AllProperties
	m.ParentCommitHashes = j.ParentCommitHashes
	if len(m.AllSignedOffBy) > 0 {
		m.SignedOffBy = m.AllSignedOffBy[0]
	}
	m.CommitTime, m.AuthorTime = *j.CommitTime, *j.AuthorTime
	return m
}

// commitLogVars are a commit-log filter's variables; contents are the
// values the commit's PUTs wrote, by encoded key (nil unless the filter
// reads them).
func commitLogVars(c *versionstore.Commit, contents map[string]*versionstore.Content) map[string]any {
	ops := make([]*celOperation, 0, len(c.Operations))
	for _, op := range c.Operations {
		kv := keyVar(op.Key)
		o := celOperation{
			KeyElements: kv.KeyElements, Key: kv.Key, EncodedKey: kv.EncodedKey,
			NamespaceElements: kv.NamespaceElements, Name: kv.Name, Namespace: kv.Namespace,
			Type: op.Kind.String(),
		}
		if v := contents[string(op.Key.Encode())]; v != nil && op.Kind == versionstore.OpPut {
			o.Content = celContent{Type: v.Type.String(), ID: v.ID}
		}
		ops = append(ops, &o)
	}
	return map[string]any{"commit": commitMetaVar(c), "operations": ops}
}

// referenceVars are a reference filter's variables; head is the head
// commit (nil for a reference without commits) and md the fetch=ALL
// metadata (nil leaves refMeta empty, as Nessie does).
func referenceVars(ref *versionstore.Ref, head *versionstore.Commit, md *referenceMetadata) map[string]any {
	commit := commitMetaVar(head)
	meta := celReferenceMetadata{CommitMetaOfHEAD: commitMetaVar(nil)}
	if md != nil {
		meta.CommitMetaOfHEAD = commit
		meta.CommonAncestorHash = md.CommonAncestorHash
		if md.NumCommitsAhead != nil {
			meta.NumCommitsAhead = int64(*md.NumCommitsAhead)
		}
		if md.NumCommitsBehind != nil {
			meta.NumCommitsBehind = int64(*md.NumCommitsBehind)
		}
		if md.NumTotalCommits != nil {
			meta.NumTotalCommits = *md.NumTotalCommits
		}
	}
	return map[string]any{
		"ref":     celReference{Name: ref.Name, Hash: ref.Head.String(), Metadata: meta},
		"refType": ref.Type.String(),
		"commit":  commit,
		"refMeta": meta,
	}
}
