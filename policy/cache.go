package policy

import (
	"bytes"
	"encoding/json"
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
	// encoders hold keyEncoders: a lookup with string(key) does not
	// copy, so a hit allocates nothing for its key.
	encoders sync.Pool
}

type cachedDecision struct {
	allow   bool
	reasons []string
}

func newDecisionCache(size int) *decisionCache {
	c := &decisionCache{byKey: make(map[string]cachedDecision, size), ring: make([]string, size)}
	c.encoders.New = func() any {
		k := &keyEncoder{}
		k.enc = json.NewEncoder(&k.buf)
		k.enc.SetEscapeHTML(false)
		return k
	}
	return c
}

func (c *decisionCache) get(key []byte) (cachedDecision, bool) {
	c.mu.Lock()
	d, ok := c.byKey[string(key)]
	c.mu.Unlock()
	return d, ok
}

func (c *decisionCache) encoder() *keyEncoder { return c.encoders.Get().(*keyEncoder) }

func (c *decisionCache) release(k *keyEncoder) {
	if k.buf.Cap() <= 16<<10 { // an outsized input does not pin its buffer
		c.encoders.Put(k)
	}
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

// keyEncoder derives decision cache keys from the input document itself:
// the JSON form of Input, which is what Rego sees as input
// (TestInputValueMatchesJSON keeps the two equal), with request_id left
// out. Every field with a json tag is therefore in the key, and no
// hand-kept list of fields can miss one. JSON is injective on strings of
// valid UTF-8; encoding/json writes every invalid byte as \ufffd, so a
// key containing that escape is not used (see key).
type keyEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
	in  Input // the copy encoded, without request_id
}

// invalidUTF8 is how encoding/json writes a byte that is not UTF-8. A
// valid input may produce it too (a backslash before "ufffd"); such a
// rare input is only evaluated uncached.
var invalidUTF8 = []byte(`\ufffd`)

// key encodes in's cache key into k; ok is false when the input must not
// be cached (see invalidUTF8). The key is valid until k is reused.
func (k *keyEncoder) key(in *Input) (key []byte, ok bool) {
	k.buf.Reset()
	k.in = *in
	k.in.RequestID = ""
	err := k.enc.Encode(&k.in)
	k.in = Input{} // hold no caller's slices in the pool
	if err != nil {
		return nil, false // Input has no type encoding/json refuses
	}
	key = k.buf.Bytes()
	if bytes.Contains(key, invalidUTF8) {
		return nil, false
	}
	return key, true
}
