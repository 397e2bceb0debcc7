package policy

import (
	"strconv"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// DefaultDecisionCacheSize is how many distinct inputs an engine
// remembers the decision of, per bundle activation.
const DefaultDecisionCacheSize = 4096

// decisionCache remembers decisions of one activated bundle. Commits to a
// branch ask the same question again and again (same principal, action,
// branch and tables), and a prepared query still allocates hundreds of
// objects per evaluation; a hit costs a map lookup. It is only used for
// bundles whose decisions are a function of input and bundle alone
// (cacheable), and it dies with its activation, so a new bundle never
// sees an old answer. Eviction is FIFO: cheap, and enough for a working
// set that is small next to the capacity.
type decisionCache struct {
	mu    sync.Mutex
	byKey map[string]cachedDecision
	ring  []string // keys in insertion order, for eviction
	next  int
}

type cachedDecision struct {
	allow   bool
	reasons []string
}

func newDecisionCache(size int) *decisionCache {
	return &decisionCache{byKey: make(map[string]cachedDecision, size), ring: make([]string, size)}
}

func (c *decisionCache) get(key string) (cachedDecision, bool) {
	c.mu.Lock()
	d, ok := c.byKey[key]
	c.mu.Unlock()
	return d, ok
}

func (c *decisionCache) put(key string, d cachedDecision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok {
		return
	}
	if old := c.ring[c.next]; old != "" {
		delete(c.byKey, old)
	}
	c.ring[c.next] = key
	c.next = (c.next + 1) % len(c.ring)
	c.byKey[key] = d
}

// cacheable reports whether every decision of the compiled modules is a
// function of the input (without request_id) and the bundle: no
// nondeterministic builtin (time.now_ns, http.send, rand.intn, ...) and no
// reference to input.request_id.
func cacheable(modules map[string]*ast.Module) bool {
	requestID := ast.MustParseRef("input.request_id")
	ok := true
	var visit func(x any) bool
	visit = func(x any) bool {
		if !ok {
			return true
		}
		switch x := x.(type) {
		case *ast.With:
			// "with input as ..." replaces the input; only what it is
			// replaced by is read.
			ast.NewGenericVisitor(visit).Walk(x.Value)
			return true
		case *ast.Expr:
			if x.IsCall() {
				if b, known := ast.BuiltinMap[x.Operator().String()]; known && b.Nondeterministic {
					ok = false
				}
			}
		case ast.Ref:
			// The whole input document carries request_id too.
			if x.Equal(ast.InputRootRef) || x.HasPrefix(requestID) {
				ok = false
			}
			if b, known := ast.BuiltinMap[x.String()]; known && b.Nondeterministic {
				ok = false // a nondeterministic builtin named as a value
			}
		}
		return !ok
	}
	for _, m := range modules {
		ast.NewGenericVisitor(visit).Walk(m)
		if !ok {
			return false
		}
	}
	return true
}

// cacheKey is a canonical encoding of everything in the input but the
// request id: length-prefixed strings, so no two inputs share a key.
func (in *Input) cacheKey() string {
	var b strings.Builder
	b.Grow(128)
	str := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	// nullable lists are JSON null when nil, which Rego tells from [];
	// the others are omitted when empty, nil or not.
	strs := func(ss []string, nullable bool) {
		if nullable && ss == nil {
			b.WriteByte('n')
			return
		}
		b.WriteString(strconv.Itoa(len(ss)))
		b.WriteByte('[')
		for _, s := range ss {
			str(s)
		}
	}
	b.WriteString(strconv.Itoa(in.Version))
	str(in.Principal.ID)
	strs(in.Principal.Groups, true)
	b.WriteString(strconv.FormatBool(in.Principal.Anonymous))
	str(string(in.Action))
	str(in.API)
	str(in.Ref.Name)
	str(in.Ref.Type)
	if in.Target != nil {
		b.WriteByte('t')
		str(in.Target.Name)
		str(in.Target.Type)
	}
	b.WriteString(strconv.Itoa(len(in.Contents)))
	for _, c := range in.Contents {
		b.WriteByte('{')
		strs(c.Key, true)
		str(c.Type)
		str(c.Change)
		if c.Iceberg != nil {
			b.WriteByte('i')
			strs(c.Iceberg.Operations, false)
			strs(c.Iceberg.Updates, false)
			strs(c.Iceberg.Branches, false)
		}
	}
	return b.String()
}
