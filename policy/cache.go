package policy

import (
	"bytes"
	"encoding/json"
	"sync"
	"unsafe"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/floe-catalog/floe/internal/bytelru"
)

// DefaultDecisionCacheSize is how many distinct inputs an engine
// remembers the decision of, per bundle activation.
const DefaultDecisionCacheSize = 4096

// decisionCacheBytes bounds the memory of one activation's decision cache
// whatever its entry count: a key is a whole input document, and a merge
// touching many tables makes a large one.
const decisionCacheBytes = 16 << 20

// decisionEntryOverhead approximates one entry's bookkeeping.
const decisionEntryOverhead = 96

// decisionCache remembers decisions of one activated bundle. Commits to a
// branch ask the same question again and again (same principal, action,
// branch and tables), and a prepared query still allocates hundreds of
// objects per evaluation; a hit costs a map lookup. It is only used for
// bundles whose decisions are a function of input and bundle alone
// (cacheable), and it dies with its activation, so a new bundle never
// sees an old answer. It evicts the least recently used decision when
// either its entry count or decisionCacheBytes is exceeded.
type decisionCache struct {
	lru *bytelru.Cache[string, cachedDecision]
	// encoders hold keyEncoders: a lookup by the encoder's bytes does not
	// copy them, so a hit allocates nothing for its key.
	encoders sync.Pool
}

type cachedDecision struct {
	allow   bool
	reasons []string
}

func newDecisionCache(size int) *decisionCache {
	c := &decisionCache{lru: bytelru.New[string, cachedDecision](bytelru.Options{
		MaxBytes: decisionCacheBytes, MaxEntries: size,
	})}
	c.encoders.New = func() any {
		k := &keyEncoder{}
		k.enc = json.NewEncoder(&k.buf)
		k.enc.SetEscapeHTML(false)
		return k
	}
	return c
}

// get looks key up. The string it looks up by shares key's bytes, which is
// safe because the cache only hashes and compares it during the call (it
// keeps the string it was given at put) and the caller does not change key
// meanwhile; it saves copying a whole input document per decision.
func (c *decisionCache) get(key []byte) (cachedDecision, bool) {
	if len(key) == 0 {
		return c.lru.Get("")
	}
	return c.lru.Get(unsafe.String(&key[0], len(key)))
}

func (c *decisionCache) encoder() *keyEncoder { return c.encoders.Get().(*keyEncoder) }

func (c *decisionCache) release(k *keyEncoder) {
	if k.buf.Cap() <= 16<<10 { // an outsized input does not pin its buffer
		c.encoders.Put(k)
	}
}

func (c *decisionCache) put(key string, d cachedDecision) {
	size := int64(decisionEntryOverhead + len(key))
	for _, r := range d.reasons {
		size += int64(len(r)) + 16
	}
	c.lru.Add(key, d, size)
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
