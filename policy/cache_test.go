package policy

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/prometheus/client_golang/prometheus"
)

func TestCacheable(t *testing.T) {
	for _, tc := range []struct {
		name, rego string
		want       bool
	}{
		{"plain rules", `decision := {"allow": input.action == "read", "reasons": []}`, true},
		{"time", `decision := {"allow": time.now_ns() > 0, "reasons": []}`, false},
		{"random", `decision := {"allow": rand.intn("x", 2) == 0, "reasons": []}`, false},
		{"request id", `decision := {"allow": input.request_id != "", "reasons": []}`, false},
		{"whole input", `decision := {"allow": true, "reasons": [sprintf("%v", [input])]}`, false},
		{"input fields", `decision := {"allow": input.principal.id == "a", "reasons": [input.ref.name]}`, true},
		{"test with input", "decision := {\"allow\": true, \"reasons\": []}\ntest_x if decision.allow with input as {\"a\": 1}", true},
		{"with time", "decision := {\"allow\": true, \"reasons\": []}\ntest_x if decision.allow with input as {\"t\": time.now_ns()}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ast.ParseModule("p.rego", "package floe.authz\n\n"+tc.rego+"\n")
			if err != nil {
				t.Fatal(err)
			}
			if got := cacheable(map[string]*ast.Module{"p.rego": m}); got != tc.want {
				t.Errorf("cacheable = %v, want %v", got, tc.want)
			}
		})
	}
	// The bundle floe ships must be cacheable, or the cache never runs.
	e := newTestEngine(t, Options{})
	if e.active.Load().cache == nil {
		t.Fatal("the default bundle is not cached")
	}
}

// cacheKeyOf is the key Decide looks a decision up by; "" for an input
// that is not cached.
func cacheKeyOf(in *Input) string {
	c := newDecisionCache(1)
	k := c.encoder()
	key, ok := k.key(in)
	if !ok {
		return ""
	}
	return string(key)
}

// leafVariant is an input differing from the filled base input in one
// place, found by reflection.
type leafVariant struct {
	path string
	in   Input
}

// fillValue sets every field under v to a distinct non-zero value:
// strings unique to their path, numbers 1, pointers allocated, slices of
// two elements, so that any one change is visible.
func fillValue(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("v:" + path)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(1)
	case reflect.Float64:
		v.SetFloat(1)
	case reflect.Bool:
		v.SetBool(false)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillValue(v.Elem(), path)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillValue(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fillValue(v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	default:
		panic(fmt.Sprintf("fillValue: %s has kind %s; teach the test about it", path, v.Kind()))
	}
}

// leafVariants returns, for every place under the root, copies of
// base changed only there: each scalar changed, each pointer nil, each
// slice nil, empty and one longer.
func leafVariants(base Input) []leafVariant {
	var out []leafVariant
	var walk func(get func(*Input) reflect.Value, t reflect.Type, path string)
	variant := func(path string, get func(*Input) reflect.Value, change func(reflect.Value)) {
		in := cloneInput(base)
		change(get(&in))
		out = append(out, leafVariant{path, in})
	}
	walk = func(get func(*Input) reflect.Value, t reflect.Type, path string) {
		switch t.Kind() {
		case reflect.String:
			variant(path, get, func(v reflect.Value) { v.SetString(v.String() + "x") })
		case reflect.Int, reflect.Int64, reflect.Int32:
			variant(path, get, func(v reflect.Value) { v.SetInt(v.Int() + 1) })
		case reflect.Float64:
			variant(path, get, func(v reflect.Value) { v.SetFloat(v.Float() + 0.5) })
		case reflect.Bool:
			variant(path, get, func(v reflect.Value) { v.SetBool(!v.Bool()) })
		case reflect.Pointer:
			variant(path+"=nil", get, func(v reflect.Value) { v.SetZero() })
			walk(func(in *Input) reflect.Value { return get(in).Elem() }, t.Elem(), path)
		case reflect.Slice:
			variant(path+"=nil", get, func(v reflect.Value) { v.SetZero() })
			variant(path+"=[]", get, func(v reflect.Value) { v.Set(reflect.MakeSlice(t, 0, 0)) })
			variant(path+"+1", get, func(v reflect.Value) {
				extra := reflect.New(t.Elem()).Elem()
				fillValue(extra, path+"[2]")
				v.Set(reflect.Append(v, extra))
			})
			for i := range 2 {
				walk(func(in *Input) reflect.Value { return get(in).Index(i) }, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
			}
		case reflect.Struct:
			for i := range t.NumField() {
				walk(func(in *Input) reflect.Value { return get(in).Field(i) }, t.Field(i).Type, path+"."+t.Field(i).Name)
			}
		default:
			panic(fmt.Sprintf("leafVariants: %s has kind %s; teach the test about it", path, t.Kind()))
		}
	}
	walk(func(in *Input) reflect.Value { return reflect.ValueOf(in).Elem() }, reflect.TypeFor[Input](), "Input")
	return out
}

// cloneInput deep-copies an input through reflection, so variants share
// no slice or pointer with the base.
func cloneInput(in Input) Input {
	var deep func(v reflect.Value) reflect.Value
	deep = func(v reflect.Value) reflect.Value {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				return v
			}
			p := reflect.New(v.Type().Elem())
			p.Elem().Set(deep(v.Elem()))
			return p
		case reflect.Slice:
			if v.IsNil() {
				return v
			}
			s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			for i := range v.Len() {
				s.Index(i).Set(deep(v.Index(i)))
			}
			return s
		case reflect.Struct:
			s := reflect.New(v.Type()).Elem()
			for i := range v.NumField() {
				s.Field(i).Set(deep(v.Field(i)))
			}
			return s
		default:
			return v
		}
	}
	return deep(reflect.ValueOf(in)).Interface().(Input)
}

// TestCacheKeyDistinguishesInputs: for every field of Input, found by
// reflection through nested structs, pointers and slices, two inputs that
// differ only there have different cache keys; request_id alone does not
// change the key. A field added to Input but not to the document the
// policy sees fails here (and in TestInputValueMatchesJSON).
func TestCacheKeyDistinguishesInputs(t *testing.T) {
	var base Input
	fillValue(reflect.ValueOf(&base).Elem(), "Input")
	baseKey := cacheKeyOf(&base)
	variants := leafVariants(base)
	requestIDs := 0
	for _, v := range variants {
		k := cacheKeyOf(&v.in)
		if strings.HasPrefix(v.path, "Input.RequestID") {
			requestIDs++
			if k != baseKey {
				t.Errorf("%s changed the key; request_id must not", v.path)
			}
			continue
		}
		if k == baseKey {
			t.Errorf("%s: an input differing only there has the same cache key", v.path)
		}
	}
	if requestIDs != 1 {
		t.Errorf("found %d variants of Input.RequestID, want 1", requestIDs)
	}
	// Input has 10 scalar leaves per content element, and more; a walk
	// finding few would prove little.
	if len(variants) < 40 {
		t.Errorf("only %d variants found", len(variants))
	}
	t.Logf("%d single-field variants checked", len(variants))

	// Values the reflection walk does not produce but the wire can: a key
	// split differently, nil and empty groups (null and [] in Rego).
	pairs := [][2]Input{
		{withContents(base, []string{"ab", "c"}), withContents(base, []string{"a", "bc"})},
		{op(Principal{ID: "a"}, ActionRead, base.Ref), op(Principal{ID: "a", Groups: []string{}}, ActionRead, base.Ref)},
		{op(principal("a<b"), ActionRead, base.Ref), op(principal("a\\u003cb"), ActionRead, base.Ref)},
	}
	for _, p := range pairs {
		if cacheKeyOf(&p[0]) == cacheKeyOf(&p[1]) {
			t.Errorf("%+v and %+v share a cache key", p[0], p[1])
		}
	}
	// encoding/json writes every invalid UTF-8 byte as \ufffd, so such
	// inputs would share keys: they are not cached at all.
	for _, id := range []string{"a\xff", "a\\ufffd"} {
		in := op(principal(id), ActionRead, base.Ref)
		if k := cacheKeyOf(&in); k != "" {
			t.Errorf("principal %q has cache key %q; it must not be cached", id, k)
		}
	}
}

// TestDecisionCache: a repeated question is answered from the cache with
// the same decision (and logged as cached), a fresh activation starts
// empty, and size -1 turns the cache off.
func TestDecisionCache(t *testing.T) {
	var log lockedBuffer
	reg := prometheus.NewRegistry()
	dir := t.TempDir()
	writeBundleDir(t, dir, "r1", revisionPolicy("r1"))
	e := newTestEngine(t, Options{Bundle: dir, DecisionLog: &log, Metrics: reg})
	in := op(principal("alice"), ActionRead, branchRef("main"))
	first, err := e.Decide(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	in.RequestID = "r-2"
	second, err := e.Decide(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if first.Allow != second.Allow || !slices.Equal(first.Reasons, second.Reasons) || first.ID == second.ID {
		t.Fatalf("cached decision %+v differs from %+v (or shares its id)", second, first)
	}
	second.Reasons[0] = "changed by the caller"
	third, _ := e.Decide(t.Context(), in)
	if third.Reasons[0] != "policy r1" {
		t.Fatalf("a caller's change reached the cache: %q", third.Reasons[0])
	}
	if hits := metricValue(t, reg, "floe_policy_decision_cache_total", map[string]string{"result": "hit"}); hits != 2 {
		t.Fatalf("cache hits = %v, want 2", hits)
	}
	e.dlog.close() // write the queued lines; later lines are written at once
	lines := log.lines(t)
	if len(lines) != 3 || bytes.Contains(lines[0]["cached"], []byte("true")) || !bytes.Equal(lines[1]["cached"], []byte("true")) {
		t.Fatalf("decision log cached flags: %v", lines)
	}

	// A new bundle answers for itself, not from the old cache.
	writeBundleDir(t, dir, "r2", revisionPolicy("r2"))
	if err := e.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d, _ := e.Decide(t.Context(), in); d.Reasons[0] != "policy r2" {
		t.Fatalf("after activating r2 the answer is %q", d.Reasons[0])
	}

	off := newTestEngine(t, Options{DecisionCacheSize: -1, Metrics: prometheus.NewRegistry()})
	if off.active.Load().cache != nil {
		t.Fatal("DecisionCacheSize -1 left the cache on")
	}
}

func TestDecisionCacheEviction(t *testing.T) {
	c := newDecisionCache(2)
	c.put("a", cachedDecision{allow: true})
	c.put("b", cachedDecision{})
	c.put("c", cachedDecision{})
	if _, ok := c.get([]byte("a")); ok {
		t.Error("the least recently used entry survived a full cache")
	}
	for _, k := range []string{"b", "c"} {
		if _, ok := c.get([]byte(k)); !ok {
			t.Errorf("%s was evicted", k)
		}
	}
	if n := c.lru.Len(); n != 2 {
		t.Errorf("cache holds %d entries, want 2", n)
	}
}

// TestDecisionCacheBoundedByBytes: large inputs (a merge touching many
// tables) cannot grow one activation's cache past its byte budget,
// whatever the entry count allows.
func TestDecisionCacheBoundedByBytes(t *testing.T) {
	c := newDecisionCache(1 << 20)
	key := strings.Repeat("k", 64<<10)
	for i := range 1000 {
		c.put(fmt.Sprintf("%d%s", i, key), cachedDecision{reasons: []string{"denied"}})
	}
	if b := c.lru.Bytes(); b > decisionCacheBytes {
		t.Fatalf("the cache holds %d bytes, budget %d", b, decisionCacheBytes)
	}
	if n := c.lru.Len(); n == 0 || n >= 1000 {
		t.Fatalf("the cache holds %d entries of 64 KiB; want some, not all", n)
	}
}
