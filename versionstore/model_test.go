package versionstore_test

// This file is the version store's model-based (metamorphic) test. Random
// operation sequences run against the real store over Pebble and against a
// deliberately naive model of the rules, written with plain maps and brute
// force; every observable is compared after every step.
//
// The model knows commits only as whole key→content maps plus parents; it
// has no trees, no hashes of its own and no shortcuts. Store hashes are
// mapped to model commit ids as results come back, and content ids assigned
// by the store are read back from CommitResult.Added.
//
// Each sequence runs under store options drawn from its seed (group-commit
// size, cache size), as Pebble's metamorphic test varies its options, and
// now and then sends a burst of concurrent commits to one branch, so that
// group-commit rounds of several commits, and the intermediate trees they
// leave to be rebuilt, are checked against the model too. The order in
// which a burst's commits land depends on scheduling, so a replayed seed
// may apply them in another order; the model follows the store's.
//
// A failure prints the sequence's seed and its operation trace; replay one
// sequence with
//
//	go test -run TestModel ./versionstore/ -model.seed=N

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	vs "github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

var (
	modelSeed = flag.Uint64("model.seed", 0, "replay the one model-test sequence with this seed, in memory and on disk, logging its trace")
	modelSeqs = flag.Int("model.seqs", 0, "in-memory model-test sequences to run; 0 means 1500 (150 with -short)")
)

// modelSteps is the length of one sequence: long enough for branches to
// diverge, merge and be transplanted between, short enough that a failing
// trace can be read.
const modelSteps = 40

// TestModel runs thousands of random sequences, each on a fresh store, in
// parallel: most over Pebble on an in-memory filesystem, some on disk.
func TestModel(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	if *modelSeed != 0 {
		for _, disk := range []bool{false, true} {
			dir := ""
			if disk {
				dir = t.TempDir()
			}
			f, trace := runSequence(ctx, *modelSeed, modelSteps, dir, &modelStats{})
			t.Logf("seed %d (disk=%v):\n%s", *modelSeed, disk, strings.Join(trace, "\n"))
			if f != nil {
				t.Errorf("%s", f)
			}
		}
		return
	}

	memSeqs, diskSeqs := 1500, 20
	if testing.Short() {
		memSeqs, diskSeqs = 150, 4
	}
	if *modelSeqs > 0 {
		memSeqs = *modelSeqs
	}
	base := rand.Uint64N(1<<62) + 1
	t.Logf("model: %d in-memory and %d on-disk sequences of %d steps, seeds %d..%d",
		memSeqs, diskSeqs, modelSteps, base, base+uint64(memSeqs+diskSeqs)-1)

	type job struct {
		seed uint64
		dir  string
	}
	jobs := make([]job, 0, memSeqs+diskSeqs)
	for i := range memSeqs {
		jobs = append(jobs, job{seed: base + uint64(i)})
	}
	for i := range diskSeqs {
		// Directories are made here: the workers must not call t's
		// methods that are not documented as safe across goroutines.
		jobs = append(jobs, job{seed: base + uint64(memSeqs+i), dir: t.TempDir()})
	}
	failures := make([]*seqFailure, len(jobs))
	var stats modelStats
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) || ctx.Err() != nil {
					return
				}
				failures[i], _ = runSequence(ctx, jobs[i].seed, modelSteps, jobs[i].dir, &stats)
			}
		})
	}
	wg.Wait()
	reportFailures(t, failures)
	bursts, grouped := stats.bursts.Load(), stats.grouped.Load()
	t.Logf("model: %d bursts of concurrent commits, %d of them applied in a round of several commits; %d intermediate trees rebuilt",
		bursts, grouped, stats.rebuilt.Load())
	// Whether a burst's commits share a round depends on scheduling, but
	// over this many bursts some always do; if none did, the bursts would
	// not be testing group commit at all.
	if bursts >= 100 && grouped == 0 {
		t.Errorf("no burst of concurrent commits was applied in a round of several commits")
	}
}

// modelStats counts, across sequences, how often the bursts exercised
// group commit.
type modelStats struct {
	bursts  atomic.Int64 // bursts sent to a store whose rounds may carry several commits
	grouped atomic.Int64 // of those, bursts with fewer durable batches than commits
	rebuilt atomic.Int64 // intermediate trees rebuilt (Stats.TreesRebuilt)
}

// reportFailures prints the first failing sequence of each failed check in
// full and a summary of the rest, so that one common discrepancy does not
// hide a rare one.
func reportFailures(t *testing.T, failures []*seqFailure) {
	t.Helper()
	type group struct {
		count int
		seeds []uint64
	}
	groups := map[string]*group{}
	n := 0
	for _, f := range failures {
		if f == nil {
			continue
		}
		n++
		kind := f.kind()
		g := groups[kind]
		if g == nil {
			// The first failure of each kind in full.
			t.Errorf("%s\ntrace:\n%s", f, strings.Join(f.trace, "\n"))
			g = &group{}
			groups[kind] = g
		}
		g.count++
		if len(g.seeds) < 5 {
			g.seeds = append(g.seeds, f.seed)
		}
	}
	if n == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d sequences failed; by kind of failure:", n, len(failures))
	for _, kind := range slices.Sorted(maps.Keys(groups)) {
		g := groups[kind]
		fmt.Fprintf(&b, "\n  %5d  %s\n         seeds %v", g.count, kind, g.seeds)
	}
	b.WriteString("\nreplay one with: go test -run TestModel ./versionstore/ -model.seed=SEED")
	t.Error(b.String())
}

type seqFailure struct {
	seed  uint64
	disk  bool
	step  int
	check string
	msg   string
	trace []string
}

// kind names the failure without its particulars (commit names, keys,
// counts), to group sequences that failed the same way.
func (f *seqFailure) kind() string {
	msg := f.msg
	if i := strings.IndexAny(msg, "[(0123456789"); i >= 0 {
		msg = msg[:i]
	}
	return f.check + ": " + strings.TrimSpace(msg)
}

func (f *seqFailure) String() string {
	return fmt.Sprintf("seed %d (disk=%v) step %d: %s: %s", f.seed, f.disk, f.step, f.check, f.msg)
}

// modelFailure unwinds a sequence from a failed check.
type modelFailure struct{ check, msg string }

// runSequence runs one sequence of steps on a fresh store; dir "" means an
// in-memory filesystem. It returns the failure, if any, and the trace.
func runSequence(ctx context.Context, seed uint64, steps int, dir string, stats *modelStats) (f *seqFailure, trace []string) {
	r := newRunner(ctx, seed, dir)
	r.stats = stats
	defer func() {
		if x := recover(); x != nil {
			mf, ok := x.(modelFailure)
			if !ok {
				mf = modelFailure{check: "panic", msg: fmt.Sprintf("%v\n%s", x, debug.Stack())}
			}
			f = &seqFailure{seed: seed, disk: dir != "", step: r.step, check: mf.check, msg: mf.msg, trace: r.trace}
		}
		if r.s != nil {
			stats.rebuilt.Add(int64(r.s.Stats().TreesRebuilt.Load()))
			if err := r.s.Close(); err != nil && f == nil {
				f = &seqFailure{seed: seed, disk: dir != "", step: r.step, check: "close", msg: err.Error(), trace: r.trace}
			}
		}
		trace = r.trace
	}()
	r.open()
	r.checkAll()
	reopenAt := -1
	if r.rng.IntN(4) == 0 {
		reopenAt = 1 + r.rng.IntN(steps)
	}
	for r.step = 1; r.step <= steps; r.step++ {
		r.randomStep()
		r.checkStoredTrees()
		r.checkAll()
		if r.step == reopenAt {
			r.logf("reopen the store")
			r.reopen()
			r.checkAll()
		}
		if r.rng.IntN(25) == 0 || r.step == steps {
			r.checkHistory()
		}
	}
	return nil, r.trace
}

// ---------------------------------------------------------------------------
// The model.

// mkey is a content key in the model: its elements joined by NUL, so that
// sorting mkeys orders them as the store's listings do.
type mkey string

func mk(elems ...string) mkey    { return mkey(strings.Join(elems, "\x00")) }
func keyOf(k vs.ContentKey) mkey { return mk(k...) }
func (k mkey) elems() []string   { return strings.Split(string(k), "\x00") }
func (k mkey) ck() vs.ContentKey { return vs.ContentKey(k.elems()) }
func (k mkey) String() string    { return strings.ReplaceAll(string(k), "\x00", ".") }
func (k mkey) under(prefix mkey) bool {
	return k == prefix || strings.HasPrefix(string(k), string(prefix)+"\x00")
}
func (k mkey) below(namespace mkey) bool {
	return strings.HasPrefix(string(k), string(namespace)+"\x00")
}

// mval is a content value in the model: every field of vs.Content, in a
// comparable form, so that == is "encodes identically".
type mval struct {
	typ     vs.ContentType
	id      string
	loc     string
	uuid    string
	snap    int64
	schema  int32
	spec    int32
	sort    int32
	seq     int64
	version int64
	props   string // k=v pairs, sorted by k, joined by ";"
}

func toVal(c *vs.Content) mval {
	v := mval{typ: c.Type, id: c.ID, loc: c.MetadataLocation, uuid: c.UUID, snap: c.SnapshotID,
		schema: c.SchemaID, spec: c.SpecID, sort: c.SortOrderID, seq: c.LastSequenceNumber,
		version: c.VersionID}
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(c.Properties)) {
		pairs = append(pairs, k+"="+c.Properties[k])
	}
	v.props = strings.Join(pairs, ";")
	return v
}

func (v mval) content() *vs.Content {
	c := &vs.Content{Type: v.typ, ID: v.id, MetadataLocation: v.loc, UUID: v.uuid, SnapshotID: v.snap,
		SchemaID: v.schema, SpecID: v.spec, SortOrderID: v.sort, LastSequenceNumber: v.seq,
		VersionID: v.version}
	if v.props != "" {
		c.Properties = map[string]string{}
		for _, p := range strings.Split(v.props, ";") {
			k, val, _ := strings.Cut(p, "=")
			c.Properties[k] = val
		}
	}
	return c
}

func (v mval) String() string {
	id := v.id
	if len(id) > 8 {
		id = id[:8]
	}
	switch v.typ {
	case vs.Namespace:
		return fmt.Sprintf("NS{id=%s %s}", id, v.props)
	case vs.IcebergTable:
		return fmt.Sprintf("TABLE{id=%s %s snap=%d}", id, v.loc, v.snap)
	case vs.IcebergView:
		return fmt.Sprintf("VIEW{id=%s %s v=%d}", id, v.loc, v.version)
	}
	return fmt.Sprintf("?{%d}", v.typ)
}

// mop is one stored operation of a model commit.
type mop struct {
	key mkey
	del bool
	val mval // for puts
}

type mcommit struct {
	hash    vs.Hash
	parents []int // model ids; the root has none
	gen     int   // 0 for the root, else one more than the largest parent's
	state   map[mkey]mval
	ops     []mop     // sorted by key
	keys    []mkey    // state's keys, sorted; filled on first use
	time    time.Time // the commit time the store chose; the model has no clock
}

func (c *mcommit) sortedKeys() []mkey {
	if c.keys == nil {
		c.keys = sortedKeys(c.state)
	}
	return c.keys
}

type mref struct {
	typ  vs.RefType
	head int
}

type model struct {
	commits []*mcommit // by id; 0 is the root, NoAncestor
	byHash  map[vs.Hash]int
	refs    map[string]mref
	reflog  map[string]int // entries ever logged per reference name
	ids     []string       // content ids in the order they appeared
	idSeen  map[string]bool
}

func newModel() *model {
	root := &mcommit{hash: vs.NoAncestor, state: map[mkey]mval{}}
	return &model{
		commits: []*mcommit{root},
		byHash:  map[vs.Hash]int{vs.NoAncestor: 0},
		refs:    map[string]mref{"main": {typ: vs.Branch}},
		reflog:  map[string]int{"main": 1},
		idSeen:  map[string]bool{},
	}
}

func (m *model) noteID(id string) {
	if id != "" && !m.idSeen[id] {
		m.idSeen[id] = true
		m.ids = append(m.ids, id)
	}
}

// ancestors returns id and everything reachable from it through parents.
func (m *model) ancestors(id int) map[int]bool {
	seen := map[int]bool{id: true}
	stack := []int{id}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range m.commits[c].parents {
			if !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	return seen
}

func (m *model) isAncestor(a, b int) bool { return m.ancestors(b)[a] }

// mergeBases returns every best common ancestor of a and b: of the commits
// reachable from both, those with the largest generation.
func (m *model) mergeBases(a, b int) []int {
	aa, bb := m.ancestors(a), m.ancestors(b)
	best := -1
	var out []int
	for c := range aa {
		if !bb[c] {
			continue
		}
		switch g := m.commits[c].gen; {
		case g > best:
			best, out = g, []int{c}
		case g == best:
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// firstParents returns the first-parent chain from id, newest first,
// without the root.
func (m *model) firstParents(id int) []int {
	var out []int
	for id != 0 {
		out = append(out, id)
		id = m.commits[id].parents[0]
	}
	return out
}

func sortedKeys(state map[mkey]mval) []mkey { return slices.Sorted(maps.Keys(state)) }

// conflictKind classifies how a key's value moved from what a write
// expected (before) to what it found (after); the two differ.
func conflictKind(before mval, beforeOK bool, after mval, afterOK bool) vs.ConflictType {
	switch {
	case !beforeOK && afterOK:
		return vs.ConflictKeyExists
	case beforeOK && !afterOK:
		return vs.ConflictKeyDoesNotExist
	case before.typ != after.typ:
		return vs.ConflictPayloadDiffers
	case before.id != after.id:
		return vs.ConflictContentIDDiffers
	}
	return vs.ConflictValueDiffers
}

func conflictStr(t vs.ConflictType, k mkey) string {
	if k == "" {
		return string(t)
	}
	return string(t) + " " + k.String()
}

// namespaceConflicts checks the namespace rules for ops that turned old into
// next: every put key's enclosing namespaces exist and are namespaces, and
// a deleted namespace has nothing below it. Each namespace is reported once.
func namespaceConflicts(old, next map[mkey]mval, ops []mop) []string {
	var out []string
	checked := map[mkey]bool{}
	for _, op := range ops {
		if op.del {
			if old[op.key].typ != vs.Namespace {
				continue
			}
			for k := range next {
				if k.below(op.key) {
					out = append(out, conflictStr(vs.ConflictNamespaceNotEmpty, op.key))
					break
				}
			}
			continue
		}
		elems := op.key.elems()
		for i := 1; i < len(elems); i++ {
			ns := mk(elems[:i]...)
			if checked[ns] {
				continue
			}
			checked[ns] = true
			v, ok := next[ns]
			switch {
			case !ok:
				out = append(out, conflictStr(vs.ConflictNamespaceAbsent, ns))
			case v.typ != vs.Namespace:
				out = append(out, conflictStr(vs.ConflictNotANamespace, ns))
			}
		}
	}
	return out
}

func applyOps(state map[mkey]mval, ops []mop) map[mkey]mval {
	next := maps.Clone(state)
	for _, op := range ops {
		if op.del {
			delete(next, op.key)
		} else {
			next[op.key] = op.val
		}
	}
	return next
}

// Error classes: what a caller can branch on.
const (
	classOK              = "ok"
	classConflict        = "conflict"
	classInvalid         = "invalid"
	classRefNotFound     = "reference-not-found"
	classRefExists       = "reference-exists"
	classForbidden       = "forbidden"
	classNotABranch      = "not-a-branch"
	classCommitNotFound  = "commit-not-found"
	classContentNotFound = "content-not-found"
)

// outcome is the class of a result and, for conflicts, the sorted
// multiset of "TYPE key" conflicts.
type outcome struct {
	class     string
	conflicts []string
}

func okOutcome() outcome           { return outcome{class: classOK} }
func failOutcome(c string) outcome { return outcome{class: c} }
func conflictOutcome(cs []string) outcome {
	return outcome{class: classConflict, conflicts: slices.Sorted(slices.Values(cs))}
}

func (o outcome) String() string {
	if o.class == classConflict {
		return fmt.Sprintf("conflict %v", o.conflicts)
	}
	return o.class
}

func outcomeOf(err error) outcome {
	if err == nil {
		return okOutcome()
	}
	var ce *vs.ConflictError
	if errors.As(err, &ce) {
		if !errors.Is(err, vs.ErrReferenceConflict) {
			return failOutcome("ConflictError-not-ErrReferenceConflict: " + err.Error())
		}
		var cs []string
		for _, c := range ce.Conflicts {
			k := mkey("")
			if c.Key != nil {
				k = keyOf(c.Key)
			}
			cs = append(cs, conflictStr(c.Type, k))
		}
		return conflictOutcome(cs)
	}
	for _, c := range []struct {
		err   error
		class string
	}{
		{vs.ErrReferenceConflict, "conflict-without-ConflictError"},
		{vs.ErrInvalid, classInvalid},
		{vs.ErrReferenceNotFound, classRefNotFound},
		{vs.ErrReferenceExists, classRefExists},
		{vs.ErrForbidden, classForbidden},
		{vs.ErrNotABranch, classNotABranch},
		{vs.ErrCommitNotFound, classCommitNotFound},
		{vs.ErrContentNotFound, classContentNotFound},
	} {
		if errors.Is(err, c.err) {
			return failOutcome(c.class)
		}
	}
	return failOutcome("unexpected error: " + err.Error())
}

// badRefNames are the invalid names the generator uses; every other name
// it uses is valid.
var badRefNames = []string{"bad..name", "9lives", "trailing/", "has space"}

func validRefName(name string) bool { return !slices.Contains(badRefNames, name) }

// writeTarget applies the checks every write to a branch makes before it
// looks at keys: the branch exists and is a branch, and expected is its head
// or one of its ancestors. exp is -1 when expected is the head.
func (m *model) writeTarget(name string, expected vs.Hash) (head, exp int, fail *outcome) {
	ref, ok := m.refs[name]
	if !ok {
		o := failOutcome(classRefNotFound)
		return 0, 0, &o
	}
	if ref.typ != vs.Branch {
		o := failOutcome(classNotABranch)
		return 0, 0, &o
	}
	id, known := m.byHash[expected]
	switch {
	case known && id == ref.head:
		return ref.head, -1, nil
	case expected == (vs.Hash{}):
		o := failOutcome(classInvalid)
		return 0, 0, &o
	case !known:
		o := failOutcome(classCommitNotFound)
		return 0, 0, &o
	case !m.isAncestor(id, ref.head):
		o := conflictOutcome([]string{conflictStr(vs.ConflictUnexpectedHash, "")})
		return 0, 0, &o
	}
	return ref.head, id, nil
}

// commitPred is the model's prediction for a commit.
type commitPred struct {
	outcome
	head    int
	rebased bool
	state   map[mkey]mval // new state; ids of needIDs still empty
	ops     []mop
	needIDs []mkey // new contents put without an id: the store assigns one
}

// commitRule is Nessie's commit rule, on maps: request checks, then the
// branch and expected hash, then per key (a key changed between expected
// and head conflicts; puts over an existing key must keep its type and
// carry its id; deletes need the key), then, only if all keys passed, the
// namespace rules on the resulting state.
func (m *model) commitRule(req vs.CommitRequest) commitPred {
	if !validRefName(req.Branch) {
		return commitPred{outcome: failOutcome(classInvalid)}
	}
	seen := map[mkey]bool{}
	for _, op := range req.Operations {
		k := keyOf(op.Key)
		if seen[k] {
			return commitPred{outcome: failOutcome(classInvalid)}
		}
		seen[k] = true
		if op.Kind == vs.OpPut && (op.Content == nil || (op.Content.Type != vs.Namespace && op.Content.MetadataLocation == "")) {
			return commitPred{outcome: failOutcome(classInvalid)}
		}
	}
	head, exp, fail := m.writeTarget(req.Branch, req.Expected)
	if fail != nil {
		return commitPred{outcome: *fail}
	}
	hs := m.commits[head].state
	ops := slices.SortedFunc(slices.Values(req.Operations), func(a, b vs.Operation) int {
		return cmp.Compare(keyOf(a.Key), keyOf(b.Key))
	})
	p := commitPred{head: head, rebased: exp >= 0}
	var conflicts []string
	for _, op := range ops {
		k := keyOf(op.Key)
		hv, hok := hs[k]
		if exp >= 0 {
			ev, eok := m.commits[exp].state[k]
			if ev != hv || eok != hok {
				conflicts = append(conflicts, conflictStr(conflictKind(ev, eok, hv, hok), k))
				continue
			}
		}
		switch op.Kind {
		case vs.OpPut:
			v := toVal(op.Content)
			switch {
			case hok && hv.typ != v.typ:
				conflicts = append(conflicts, conflictStr(vs.ConflictPayloadDiffers, k))
				continue
			case hok && v.id == "":
				conflicts = append(conflicts, conflictStr(vs.ConflictKeyExists, k))
				continue
			case hok && v.id != hv.id:
				conflicts = append(conflicts, conflictStr(vs.ConflictContentIDDiffers, k))
				continue
			case !hok && v.id == "":
				p.needIDs = append(p.needIDs, k)
			}
			p.ops = append(p.ops, mop{key: k, val: v})
		case vs.OpDelete:
			if !hok {
				conflicts = append(conflicts, conflictStr(vs.ConflictKeyDoesNotExist, k))
				continue
			}
			p.ops = append(p.ops, mop{key: k, del: true})
		}
	}
	if len(conflicts) > 0 {
		p.outcome = conflictOutcome(conflicts)
		return p
	}
	p.state = applyOps(hs, p.ops)
	if ns := namespaceConflicts(hs, p.state, p.ops); len(ns) > 0 {
		p.outcome = conflictOutcome(ns)
		return p
	}
	p.outcome = okOutcome()
	return p
}

// mergeModes is the per-key merge behavior of a request.
type mergeModes struct {
	def   vs.MergeBehavior
	byKey map[mkey]vs.MergeBehavior
}

func (mm mergeModes) of(k mkey) vs.MergeBehavior {
	if b, ok := mm.byKey[k]; ok {
		return b
	}
	return mm.def
}

func parseModes(def vs.MergeBehavior, keys []vs.KeyMergeMode) (mergeModes, bool) {
	valid := func(b vs.MergeBehavior) bool {
		return b == vs.MergeNormal || b == vs.MergeForce || b == vs.MergeDrop
	}
	if def == "" {
		def = vs.MergeNormal
	}
	mm := mergeModes{def: def, byKey: map[mkey]vs.MergeBehavior{}}
	if !valid(def) {
		return mm, false
	}
	for _, km := range keys {
		k := keyOf(km.Key)
		if _, dup := mm.byKey[k]; dup || !valid(km.Behavior) {
			return mm, false
		}
		mm.byKey[k] = km.Behavior
	}
	return mm, true
}

// change is one key's change on the source side of a merge or transplant.
type change struct {
	key           mkey
	base, src     mval
	baseOK, srcOK bool
}

// resolveChanges applies the merge rule to each change against the
// target's state: DROP keeps the target's value; a target that already
// holds the source's value needs nothing; NORMAL conflicts when the target's
// value is not the base's; otherwise the source's value is written.
func resolveChanges(target map[mkey]mval, changes []change, mm mergeModes) (ops []mop, details, conflicts []string) {
	for _, ch := range changes {
		b := mm.of(ch.key)
		detail := ch.key.String() + " " + string(b)
		tv, tok := target[ch.key]
		switch {
		case b == vs.MergeDrop:
		case tok == ch.srcOK && tv == ch.src:
		case b == vs.MergeNormal && (tok != ch.baseOK || tv != ch.base):
			c := conflictStr(conflictKind(ch.base, ch.baseOK, tv, tok), ch.key)
			detail += " " + c
			conflicts = append(conflicts, c)
		case ch.srcOK:
			ops = append(ops, mop{key: ch.key, val: ch.src})
		case tok:
			ops = append(ops, mop{key: ch.key, del: true})
		}
		details = append(details, detail)
	}
	return ops, details, conflicts
}

// pendingCommit is a commit a merge or transplant is predicted to write.
type pendingCommit struct {
	extraParent int // the merged commit, or -1
	state       map[mkey]mval
	ops         []mop
}

// mergePred is the model's prediction for a merge or transplant.
type mergePred struct {
	outcome
	hasResult  bool // a MergeResult must come back (success, or conflicts)
	successful bool
	applied    bool
	head       int
	base       int // -1 for transplants
	details    []string
	nsConflict bool // the namespace rules failed; details are not compared
	commits    []pendingCommit
}

func (m *model) mergeRule(req vs.MergeRequest) []mergePred {
	if !validRefName(req.Target) {
		return []mergePred{{outcome: failOutcome(classInvalid)}}
	}
	mm, ok := parseModes(req.DefaultMode, req.KeyModes)
	if !ok {
		return []mergePred{{outcome: failOutcome(classInvalid)}}
	}
	from, known := m.byHash[req.From]
	if !known {
		return []mergePred{{outcome: failOutcome(classCommitNotFound)}}
	}
	head, _, fail := m.writeTarget(req.Target, req.ExpectedTarget)
	if fail != nil {
		return []mergePred{{outcome: *fail}}
	}
	var preds []mergePred
	for _, base := range m.mergeBases(head, from) {
		p := mergePred{hasResult: true, head: head, base: base}
		if base == from {
			p.outcome, p.successful = okOutcome(), true // already merged
			preds = append(preds, p)
			continue
		}
		bs, fs := m.commits[base].state, m.commits[from].state
		var changes []change
		for _, k := range slices.Sorted(maps.Keys(mergeMaps(bs, fs))) {
			bv, bok := bs[k]
			fv, fok := fs[k]
			if bok != fok || bv != fv {
				changes = append(changes, change{key: k, base: bv, baseOK: bok, src: fv, srcOK: fok})
			}
		}
		hs := m.commits[head].state
		ops, details, conflicts := resolveChanges(hs, changes, mm)
		p.details = details
		switch {
		case len(conflicts) > 0:
			p.outcome = conflictOutcome(conflicts)
		case len(ops) == 0:
			p.outcome, p.successful = okOutcome(), true
		default:
			next := applyOps(hs, ops)
			if ns := namespaceConflicts(hs, next, ops); len(ns) > 0 {
				p.outcome, p.nsConflict = conflictOutcome(ns), true
				break
			}
			p.outcome, p.successful = okOutcome(), true
			if !req.DryRun {
				p.applied = true
				p.commits = []pendingCommit{{extraParent: from, state: next, ops: ops}}
			}
		}
		preds = append(preds, p)
	}
	return preds
}

func (m *model) transplantRule(req vs.TransplantRequest) mergePred {
	if !validRefName(req.Target) || len(req.Commits) == 0 {
		return mergePred{outcome: failOutcome(classInvalid)}
	}
	mm, ok := parseModes(req.DefaultMode, req.KeyModes)
	if !ok {
		return mergePred{outcome: failOutcome(classInvalid)}
	}
	var src []int
	for _, h := range req.Commits {
		if h == vs.NoAncestor {
			return mergePred{outcome: failOutcome(classInvalid)}
		}
		id, known := m.byHash[h]
		if !known {
			return mergePred{outcome: failOutcome(classCommitNotFound)}
		}
		src = append(src, id)
	}
	head, _, fail := m.writeTarget(req.Target, req.ExpectedTarget)
	if fail != nil {
		return mergePred{outcome: *fail}
	}
	p := mergePred{hasResult: true, head: head, base: -1}
	cur := m.commits[head].state
	var conflicts []string
	for _, id := range src {
		c := m.commits[id]
		parent := m.commits[c.parents[0]].state
		var changes []change
		for _, op := range c.ops {
			pv, pok := parent[op.key]
			changes = append(changes, change{key: op.key, base: pv, baseOK: pok, src: op.val, srcOK: !op.del})
		}
		ops, details, cs := resolveChanges(cur, changes, mm)
		p.details = append(p.details, details...)
		if len(cs) > 0 {
			conflicts = append(conflicts, cs...)
			continue
		}
		if len(conflicts) > 0 || len(ops) == 0 {
			continue
		}
		next := applyOps(cur, ops)
		if ns := namespaceConflicts(cur, next, ops); len(ns) > 0 {
			// A replayed commit that breaks the namespace rules fails
			// the whole transplant at once.
			p.outcome, p.nsConflict = conflictOutcome(ns), true
			p.commits = nil
			return p
		}
		p.commits = append(p.commits, pendingCommit{extraParent: -1, state: next, ops: ops})
		cur = next
	}
	if len(conflicts) > 0 {
		p.outcome, p.commits = conflictOutcome(conflicts), nil
		return p
	}
	p.outcome, p.successful = okOutcome(), true
	if req.DryRun {
		p.commits = nil
	}
	p.applied = len(p.commits) > 0
	return p
}

func mergeMaps(a, b map[mkey]mval) map[mkey]mval {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// ---------------------------------------------------------------------------
// The key space and the generator.

var (
	nsKeys    = []mkey{mk("a"), mk("b"), mk("c"), mk("a", "x")}
	tableKeys = []mkey{mk("t0"), mk("a", "t1"), mk("a", "t2"), mk("a", "t3"), mk("b", "t1"), mk("b", "t2"),
		mk("b", "t3"), mk("c", "t1"), mk("a", "x", "t1"), mk("a", "x", "t2")}
	viewKeys = []mkey{mk("a", "v1"), mk("b", "v1"), mk("a", "x", "v1")}
	// orphanKeys never have their namespace: "d" is never created and
	// a.t1 is normally a table.
	orphanKeys = []mkey{mk("d", "t1"), mk("a", "t1", "z")}
	wideNS     = mk("w")
	allKeys    = slices.Concat(nsKeys, tableKeys, viewKeys, orphanKeys)
	entityKeys = slices.Concat(tableKeys, viewKeys)
	refPool    = []string{"main", "dev", "feature/a", "feature/b", "release-1", "v1", "v2"}
	modelEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
)

func wideKey(i int) mkey { return mk("w", fmt.Sprintf("k%03d", i)) }

func naturalType(k mkey) vs.ContentType {
	switch {
	case slices.Contains(nsKeys, k) || k == wideNS:
		return vs.Namespace
	case slices.Contains(viewKeys, k):
		return vs.IcebergView
	}
	return vs.IcebergTable
}

// runner drives one sequence: a store, the model, the generator's random
// source and the trace.
type runner struct {
	ctx   context.Context
	rng   *rand.Rand
	fs    vfs.FS
	dir   string
	s     *vs.Store
	m     *model
	clock atomic.Int64
	step  int
	trace []string
	stats *modelStats
	// wholeNodes are persisted nodes checkStoredTrees found whole; objects
	// are never deleted, so they stay whole.
	wholeNodes map[vs.Hash]bool
	opts       vs.Options // the options of the open store

	// The store names equal contents by equal hashes; these check it.
	hashOfVal map[mval]vs.Hash
	valOfHash map[vs.Hash]mval
}

func newRunner(ctx context.Context, seed uint64, dir string) *runner {
	r := &runner{
		ctx:       ctx,
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		m:         newModel(),
		hashOfVal: map[mval]vs.Hash{},
		valOfHash: map[vs.Hash]mval{},
	}
	if dir == "" {
		r.fs, r.dir = vfs.NewMem(), "db"
	} else {
		r.fs, r.dir = vfs.Default, dir
	}
	return r
}

// now is the store's clock: strictly increasing, so no two commits share a
// time and a seed replays the same history.
func (r *runner) now() time.Time {
	return modelEpoch.Add(time.Duration(r.clock.Add(1)) * time.Millisecond)
}

func (r *runner) open() {
	be, err := pebblebackend.Open(r.dir, pebblebackend.Options{FS: r.fs, CacheSize: 1 << 20})
	if err != nil {
		r.fail("open", "open backend: %v", err)
	}
	r.opts = r.pickOptions()
	r.logf("open the store with MaxGroup=%d CacheBytes=%d", r.opts.MaxGroup, r.opts.CacheBytes)
	s, err := vs.Open(r.ctx, be, r.opts)
	if err != nil {
		_ = be.Close()
		r.fail("open", "open store: %v", err)
	}
	r.s = s
}

// pickOptions draws the store's options, at every open: the group-commit
// size (one commit a round, a few, or the default 256) and the size of the
// decoded-object cache (the default, or small enough that objects are
// evicted and read back). Options are not stored, so a store reopened with
// others must read the same history.
func (r *runner) pickOptions() vs.Options {
	opts := vs.Options{Now: r.now}
	switch x := r.rng.IntN(10); {
	case x < 2:
		opts.MaxGroup = 1
	case x < 4:
		opts.MaxGroup = 2 + r.rng.IntN(3)
	default:
		opts.MaxGroup = 256
	}
	switch x := r.rng.IntN(10); {
	case x < 1:
		opts.CacheBytes = 32 << 10
	case x < 2:
		opts.CacheBytes = 1 << 20
	}
	return opts
}

func (r *runner) close() {
	if r.s == nil {
		return
	}
	s := r.s
	r.s = nil
	if err := s.Close(); err != nil {
		r.fail("close", "close store: %v", err)
	}
}

func (r *runner) reopen() {
	r.close()
	r.open()
}

func (r *runner) fail(check, format string, args ...any) {
	panic(modelFailure{check: check, msg: fmt.Sprintf(format, args...)})
}

func (r *runner) logf(format string, args ...any) {
	r.trace = append(r.trace, fmt.Sprintf("step %2d: ", r.step)+fmt.Sprintf(format, args...))
}

// note appends to the current trace line.
func (r *runner) note(format string, args ...any) {
	r.trace[len(r.trace)-1] += fmt.Sprintf(format, args...)
}

func (r *runner) chance(percent int) bool { return r.rng.IntN(100) < percent }

func pick[T any](r *runner, xs []T) T { return xs[r.rng.IntN(len(xs))] }

// desc names a hash the way the trace does: c<id> for known commits.
func (r *runner) desc(h vs.Hash) string {
	if id, ok := r.m.byHash[h]; ok {
		return r.cname(id)
	}
	if h == (vs.Hash{}) {
		return "zero-hash"
	}
	return "unknown:" + h.String()[:12]
}

func (r *runner) cname(id int) string {
	if id == 0 {
		return "root"
	}
	return fmt.Sprintf("c%d", id)
}

func (r *runner) unknownHash() vs.Hash {
	return vs.Hash(sha256.Sum256(fmt.Appendf(nil, "unknown %d", r.rng.Uint64())))
}

func (r *runner) randomCommit() int { return r.rng.IntN(len(r.m.commits)) }

func (r *runner) refNames(typ vs.RefType) []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(r.m.refs)) {
		if typ == 0 || r.m.refs[n].typ == typ {
			out = append(out, n)
		}
	}
	return out
}

// pickWriteTarget names a branch to write to: usually an existing branch,
// sometimes a tag, a missing reference or an invalid name.
func (r *runner) pickWriteTarget() string {
	x := r.rng.IntN(100)
	if tags := r.refNames(vs.Tag); x >= 88 && x < 93 && len(tags) > 0 {
		return pick(r, tags)
	}
	if x >= 93 && x < 97 {
		var missing []string
		for _, n := range refPool {
			if _, ok := r.m.refs[n]; !ok {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			return pick(r, missing)
		}
	}
	if x >= 97 {
		return pick(r, badRefNames)
	}
	return pick(r, r.refNames(vs.Branch))
}

// pickExpected chooses the expected hash of a write: usually the head,
// often an older commit of the branch's history (so rebases both succeed
// and conflict), sometimes an unrelated, zero or unknown hash.
func (r *runner) pickExpected(name string) vs.Hash {
	ref, ok := r.m.refs[name]
	x := r.rng.IntN(100)
	switch {
	case !ok || (x >= 88 && x < 94):
		return r.m.commits[r.randomCommit()].hash
	case x < 62:
		return r.m.commits[ref.head].hash
	case x < 88:
		chain := append(r.m.firstParents(ref.head), 0)
		back := min(1+r.rng.IntN(4), len(chain)-1)
		return r.m.commits[chain[back]].hash
	case x < 97:
		return vs.Hash{}
	}
	return r.unknownHash()
}

func (r *runner) newContent(k mkey, typ vs.ContentType) mval {
	v := mval{typ: typ}
	switch typ {
	case vs.Namespace:
		v.props = pick(r, []string{"", "", "owner=ann", "owner=bob", "owner=ann;tier=gold"})
	case vs.IcebergTable:
		v.loc = fmt.Sprintf("s3://wh/%s/m%d.json", k, r.rng.IntN(4))
		v.uuid = "uuid-" + k.String()
		v.snap = int64(r.rng.IntN(3))
		v.schema = int32(r.rng.IntN(2))
		v.seq = v.snap
	case vs.IcebergView:
		v.loc = fmt.Sprintf("s3://wh/%s/v%d.json", k, r.rng.IntN(3))
		v.uuid = "uuid-" + k.String()
		v.version = int64(r.rng.IntN(3))
	}
	return v
}

func present(view map[mkey]mval, keys []mkey, used map[mkey]bool) []mkey {
	var out []mkey
	for _, k := range keys {
		if _, ok := view[k]; ok && !used[k] {
			out = append(out, k)
		}
	}
	return out
}

func absent(view map[mkey]mval, keys []mkey, used map[mkey]bool) []mkey {
	var out []mkey
	for _, k := range keys {
		if _, ok := view[k]; !ok && !used[k] {
			out = append(out, k)
		}
	}
	return out
}

func putOp(k mkey, v mval) vs.Operation {
	return vs.Operation{Kind: vs.OpPut, Key: k.ck(), Content: v.content()}
}

// genOps makes the operations of one commit from what the client saw
// (view). Most commits are careful, changes a client that follows the
// rules would make; the others mix in the mistakes clients make.
func (r *runner) genOps(view map[mkey]mval) []vs.Operation {
	if r.chance(70) {
		return r.carefulOps(view)
	}
	return r.carelessOps(view)
}

// parentIsNamespace reports whether k could be put in view as far as its
// enclosing namespace is concerned.
func parentIsNamespace(view map[mkey]mval, k mkey) bool {
	elems := k.elems()
	if len(elems) == 1 {
		return true
	}
	v, ok := view[mk(elems[:len(elems)-1]...)]
	return ok && v.typ == vs.Namespace
}

func hasChildren(view map[mkey]mval, k mkey) bool {
	for c := range view {
		if c.below(k) {
			return true
		}
	}
	return false
}

func (r *runner) carefulOps(view map[mkey]mval) []vs.Operation {
	n := 1 + r.rng.IntN(5)
	used := map[mkey]bool{}
	var ops []vs.Operation
	add := func(k mkey, op vs.Operation) {
		used[k] = true
		ops = append(ops, op)
	}
	placeable := func(keys []mkey) []mkey {
		var out []mkey
		for _, k := range absent(view, keys, used) {
			if parentIsNamespace(view, k) && !used[mk(k.elems()[:max(1, len(k.elems())-1)]...)] {
				out = append(out, k)
			}
		}
		return out
	}
	existing := sortedKeys(view)
	for tries := 0; len(ops) < n && tries < 30; tries++ {
		x := r.rng.IntN(100)
		switch {
		case x < 15:
			if ks := placeable(nsKeys); len(ks) > 0 {
				k := pick(r, ks)
				add(k, putOp(k, r.newContent(k, vs.Namespace)))
			}
		case x < 45:
			if ks := placeable(entityKeys); len(ks) > 0 {
				k := pick(r, ks)
				add(k, putOp(k, r.newContent(k, naturalType(k))))
			}
		case x < 70:
			if ks := present(view, existing, used); len(ks) > 0 {
				k := pick(r, ks)
				v := r.newContent(k, view[k].typ)
				v.id = view[k].id
				add(k, putOp(k, v))
			}
		case x < 82:
			var ks []mkey
			for _, k := range present(view, existing, used) {
				if !hasChildren(view, k) && !used[mk(k.elems()[:max(1, len(k.elems())-1)]...)] {
					ks = append(ks, k)
				}
			}
			if len(ks) > 0 {
				k := pick(r, ks)
				add(k, vs.Operation{Kind: vs.OpDelete, Key: k.ck()})
			}
		case x < 90:
			k := pick(r, allKeys)
			if !used[k] {
				add(k, vs.Operation{Kind: vs.OpUnchanged, Key: k.ck()})
			}
		default:
			from := present(view, entityKeys, used)
			to := placeable(entityKeys)
			if len(from) > 0 && len(to) > 0 {
				a, b := pick(r, from), pick(r, to)
				add(a, vs.Operation{Kind: vs.OpDelete, Key: a.ck()})
				add(b, putOp(b, view[a]))
			}
		}
	}
	return ops
}

func (r *runner) carelessOps(view map[mkey]mval) []vs.Operation {
	n := 1 + r.rng.IntN(5)
	used := map[mkey]bool{}
	var ops []vs.Operation
	add := func(k mkey, op vs.Operation) {
		used[k] = true
		ops = append(ops, op)
	}
	existing := sortedKeys(view)
	for tries := 0; len(ops) < n && tries < 30; tries++ {
		x := r.rng.IntN(100)
		switch {
		case x < 12: // create a namespace
			if ks := absent(view, nsKeys, used); len(ks) > 0 {
				k := pick(r, ks)
				add(k, putOp(k, r.newContent(k, vs.Namespace)))
			}
		case x < 34: // create a table or view
			if ks := absent(view, entityKeys, used); len(ks) > 0 {
				k := pick(r, ks)
				v := r.newContent(k, naturalType(k))
				switch {
				case r.chance(4) && len(r.m.ids) > 0:
					v.id = pick(r, r.m.ids) // an entity moved here from elsewhere
				case r.chance(3):
					v.loc = "" // invalid: tables need a metadata location
				}
				add(k, putOp(k, v))
			}
		case x < 56: // update, keeping type and id
			if ks := present(view, existing, used); len(ks) > 0 {
				k := pick(r, ks)
				v := r.newContent(k, view[k].typ)
				v.id = view[k].id
				add(k, putOp(k, v))
			}
		case x < 68: // delete
			if ks := present(view, existing, used); len(ks) > 0 {
				k := pick(r, ks)
				add(k, vs.Operation{Kind: vs.OpDelete, Key: k.ck()})
			}
		case x < 72: // delete a key that is not there
			if ks := absent(view, allKeys, used); len(ks) > 0 {
				k := pick(r, ks)
				add(k, vs.Operation{Kind: vs.OpDelete, Key: k.ck()})
			}
		case x < 76: // update without the content id
			if ks := present(view, existing, used); len(ks) > 0 {
				k := pick(r, ks)
				add(k, putOp(k, r.newContent(k, view[k].typ)))
			}
		case x < 79: // update with another entity's id
			if ks := present(view, existing, used); len(ks) > 0 {
				k := pick(r, ks)
				v := r.newContent(k, view[k].typ)
				v.id = "not-" + view[k].id
				if len(r.m.ids) > 1 && r.chance(50) {
					v.id = pick(r, r.m.ids)
				}
				add(k, putOp(k, v))
			}
		case x < 82: // change the type of an entry
			if ks := present(view, existing, used); len(ks) > 0 {
				k := pick(r, ks)
				typ := vs.ContentType(1 + (int(view[k].typ)+r.rng.IntN(2))%3)
				v := r.newContent(k, typ)
				v.id = view[k].id
				add(k, putOp(k, v))
			}
		case x < 88: // read-set check only
			k := pick(r, allKeys)
			if !used[k] {
				add(k, vs.Operation{Kind: vs.OpUnchanged, Key: k.ck()})
			}
		case x < 93: // rename: delete, and put the same entity elsewhere
			from := present(view, entityKeys, used)
			to := absent(view, entityKeys, used)
			if len(from) > 0 && len(to) > 0 {
				a, b := pick(r, from), pick(r, to)
				v := view[a]
				add(a, vs.Operation{Kind: vs.OpDelete, Key: a.ck()})
				add(b, putOp(b, v))
			}
		default: // put where the namespace is missing or not a namespace
			k := pick(r, slices.Concat(orphanKeys, absent(view, entityKeys, used)))
			if !used[k] {
				add(k, putOp(k, r.newContent(k, vs.IcebergTable)))
			}
		}
	}
	if len(ops) > 0 && r.chance(2) {
		ops = append(ops, vs.Operation{Kind: vs.OpUnchanged, Key: ops[0].Key}) // invalid: key twice
	}
	return ops
}

func describeOps(ops []vs.Operation) string {
	var parts []string
	for _, op := range ops {
		switch op.Kind {
		case vs.OpPut:
			parts = append(parts, fmt.Sprintf("put %s=%s", op.Key, toVal(op.Content)))
		case vs.OpDelete:
			parts = append(parts, "delete "+op.Key.String())
		default:
			parts = append(parts, "unchanged "+op.Key.String())
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (r *runner) randomStep() {
	x := r.rng.IntN(100)
	switch {
	case x < 39:
		r.stepCommit(false)
	case x < 42:
		r.stepBurst()
	case x < 44:
		r.stepCommit(true)
	case x < 52:
		r.stepCreateRef()
	case x < 57:
		r.stepAssignRef()
	case x < 62:
		r.stepDeleteRef()
	case x < 73:
		r.stepMerge()
	case x < 78:
		r.stepCrissCross()
	case x < 90:
		if len(r.m.commits) == 1 {
			r.stepCommit(false) // nothing to transplant yet
			return
		}
		r.stepTransplant()
	default:
		r.stepRead()
	}
}

// bulkOps makes a large commit in the wide namespace, so that trees span
// several nodes and diffs must skip equal subtrees.
func (r *runner) bulkOps(view map[mkey]mval) []vs.Operation {
	var ops []vs.Operation
	if _, ok := view[wideNS]; !ok {
		ops = append(ops, putOp(wideNS, r.newContent(wideNS, vs.Namespace)))
	}
	used := map[int]bool{}
	for range 10 + r.rng.IntN(40) {
		i := r.rng.IntN(160)
		if used[i] {
			continue
		}
		used[i] = true
		k := wideKey(i)
		cur, ok := view[k]
		switch {
		case !ok:
			ops = append(ops, putOp(k, r.newContent(k, vs.IcebergTable)))
		case r.chance(70):
			v := r.newContent(k, vs.IcebergTable)
			v.id = cur.id
			ops = append(ops, putOp(k, v))
		default:
			ops = append(ops, vs.Operation{Kind: vs.OpDelete, Key: k.ck()})
		}
	}
	return ops
}

func (r *runner) stepCommit(bulk bool) {
	branch := r.pickWriteTarget()
	r.commit(branch, r.pickExpected(branch), bulk)
}

// commit makes a commit with generated operations, based on what a client
// that last saw expected would write.
func (r *runner) commit(branch string, expected vs.Hash, bulk bool) {
	var view map[mkey]mval
	if id, ok := r.m.byHash[expected]; ok {
		view = r.m.commits[id].state
	} else if ref, ok := r.m.refs[branch]; ok {
		view = r.m.commits[ref.head].state
	}
	var ops []vs.Operation
	if bulk {
		ops = r.bulkOps(view)
	} else {
		ops = r.genOps(view)
	}
	req := vs.CommitRequest{Branch: branch, Expected: expected, Operations: ops,
		Meta: vs.CommitMeta{Message: fmt.Sprintf("step %d", r.step)}, Committer: "model"}
	r.logf("commit %s expected=%s %s", branch, r.desc(expected), describeOps(ops))
	p := r.m.commitRule(req)
	res, err := r.s.Commit(r.ctx, req)
	r.checkCommit(req, p, res, err)
}

// checkCommit compares a commit's outcome with the model's prediction and,
// if it succeeded, adds it to the model.
func (r *runner) checkCommit(req vs.CommitRequest, p commitPred, res *vs.CommitResult, err error) {
	r.expectOutcome("commit", p.outcome, err)
	if err != nil {
		return
	}
	if res == nil || res.Commit == nil {
		r.fail("commit", "no result")
	}
	if res.Rebased != p.rebased {
		r.fail("commit-rebased", "Rebased=%v, model says %v", res.Rebased, p.rebased)
	}
	added := map[mkey]string{}
	for _, a := range res.Added {
		k := keyOf(a.Key)
		if _, dup := added[k]; dup || a.ID == "" || r.m.idSeen[a.ID] {
			r.fail("commit-added", "Added %v: duplicate key, empty id or an id already in use", res.Added)
		}
		added[k] = a.ID
	}
	if !slices.Equal(slices.Sorted(maps.Keys(added)), p.needIDs) {
		r.fail("commit-added", "Added %v, model wants ids for %v", res.Added, p.needIDs)
	}
	for k, id := range added {
		v := p.state[k]
		v.id = id
		p.state[k] = v
		for i := range p.ops {
			if p.ops[i].key == k {
				p.ops[i].val = v
			}
		}
	}
	for _, op := range p.ops {
		if !op.del {
			r.m.noteID(op.val.id)
		}
	}
	id := r.addCommit("commit", res.Commit, []int{p.head}, p.state, p.ops)
	r.m.refs[req.Branch] = mref{typ: vs.Branch, head: id}
	r.m.reflog[req.Branch]++
	r.note(" -> %s", r.cname(id))
}

// stepBurst sends several commits to one branch at once, each from its own
// goroutine, so that the committer applies them in rounds of several
// commits. Their outcomes must not depend on the order the store applies
// them in, which the model cannot know beforehand: each commit has its own
// keys, all tables and views, so no commit changes what another's rules
// look at (namespaces never change during a burst). The model then
// replays the successful ones in the order the store's history shows.
func (r *runner) stepBurst() {
	branch := pick(r, r.refNames(vs.Branch))
	head := r.m.refs[branch].head
	chain := append(r.m.firstParents(head), 0)
	keys := slices.Clone(entityKeys)
	if _, ok := r.m.commits[head].state[wideNS]; ok {
		for i := range 160 {
			keys = append(keys, wideKey(i))
		}
	}
	r.rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })

	n := 2 + r.rng.IntN(7)
	reqs := make([]vs.CommitRequest, 0, n)
	for i := 0; i < n && len(keys) > 0; i++ {
		expected := head
		if r.chance(35) {
			expected = chain[min(1+r.rng.IntN(3), len(chain)-1)]
		}
		view := r.m.commits[expected].state
		var ops []vs.Operation
		for range min(1+r.rng.IntN(3), len(keys)) {
			k := keys[0]
			keys = keys[1:]
			ops = append(ops, r.burstOp(view, k))
		}
		reqs = append(reqs, vs.CommitRequest{Branch: branch, Expected: r.m.commits[expected].hash, Operations: ops,
			Meta: vs.CommitMeta{Message: fmt.Sprintf("step %d burst %d", r.step, i)}, Committer: "model"})
	}
	r.logf("burst of %d commits to %s (MaxGroup=%d)", len(reqs), branch, r.opts.MaxGroup)

	// Outcomes are predicted before the burst; those of the commits that
	// fail hold whatever the order.
	preds := make([]commitPred, len(reqs))
	for i, req := range reqs {
		preds[i] = r.m.commitRule(req)
	}
	st := r.s.Stats()
	commits0, batches0 := st.Commits.Load(), st.Batches.Load()
	results := make([]*vs.CommitResult, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Go(func() { results[i], errs[i] = r.s.Commit(r.ctx, req) })
	}
	wg.Wait()
	commits, batches := st.Commits.Load()-commits0, st.Batches.Load()-batches0
	if r.opts.MaxGroup > 1 && commits > 1 {
		r.stats.bursts.Add(1)
		if batches < commits {
			r.stats.grouped.Add(1)
		}
	}
	r.note(": %d commits in %d batches", commits, batches)

	// The order the store applied them in is its new first-parent chain.
	byHash := map[vs.Hash]int{}
	for i, res := range results {
		if errs[i] == nil && res != nil && res.Commit != nil {
			byHash[res.Commit.Hash] = i
		}
	}
	var order []int
	newHead, err := r.s.GetRef(branch)
	if err != nil {
		r.fail("burst", "read %s after the burst: %v", branch, err)
	}
	for h := newHead.Head; h != r.m.commits[head].hash; {
		i, ok := byHash[h]
		if !ok {
			r.fail("burst", "%s moved to a commit no writer of the burst made: %s", branch, r.desc(h))
		}
		order = append(order, i)
		delete(byHash, h)
		c, err := r.s.ReadCommit(r.ctx, h)
		if err != nil {
			r.fail("burst", "read commit: %v", err)
		}
		h = c.Parent()
	}
	if len(byHash) > 0 {
		r.fail("burst", "%d acknowledged commits are not on %s", len(byHash), branch)
	}
	slices.Reverse(order)
	done := map[int]bool{}
	for _, i := range order {
		r.logf("  burst commit %d: %s expected=%s %s", i, branch, r.desc(reqs[i].Expected), describeOps(reqs[i].Operations))
		r.checkCommit(reqs[i], r.m.commitRule(reqs[i]), results[i], errs[i])
		done[i] = true
	}
	for i := range reqs {
		if !done[i] {
			r.logf("  burst commit %d: %s expected=%s %s", i, branch, r.desc(reqs[i].Expected), describeOps(reqs[i].Operations))
			r.checkCommit(reqs[i], preds[i], results[i], errs[i])
		}
	}
	if len(order) == 0 {
		return
	}
	// The commits of a round before its last have trees that were never
	// persisted; reading them, now or after a reopen, rebuilds them.
	if r.chance(10) {
		r.logf("reopen the store")
		r.reopen()
	}
	for _, i := range order {
		r.checkEntries(r.m.byHash[results[i].Commit.Hash], keyRange{})
	}
}

// burstOp makes one operation of a burst commit on k, a table, view or
// wide key, from the client's view: mostly what a careful client does,
// sometimes a mistake whose conflict does not depend on other commits.
func (r *runner) burstOp(view map[mkey]mval, k mkey) vs.Operation {
	cur, ok := view[k]
	x := r.rng.IntN(100)
	switch {
	case ok && x < 55:
		v := r.newContent(k, cur.typ)
		v.id = cur.id
		return putOp(k, v)
	case ok && x < 75:
		return vs.Operation{Kind: vs.OpDelete, Key: k.ck()}
	case ok && x < 85:
		return putOp(k, r.newContent(k, cur.typ)) // without its id
	case x >= 90:
		return vs.Operation{Kind: vs.OpUnchanged, Key: k.ck()}
	case !ok && x < 80:
		return putOp(k, r.newContent(k, naturalType(k)))
	case !ok:
		return vs.Operation{Kind: vs.OpDelete, Key: k.ck()} // not there
	}
	v := r.newContent(k, cur.typ)
	v.id = cur.id
	return putOp(k, v)
}

// addCommit records a commit the store wrote, after checking its parents,
// generation and operations against the model's.
func (r *runner) addCommit(check string, c *vs.Commit, parents []int, state map[mkey]mval, ops []mop) int {
	if id, dup := r.m.byHash[c.Hash]; dup {
		r.fail(check, "new commit has the hash of %s", r.cname(id))
	}
	gen := 0
	for _, p := range parents {
		gen = max(gen, r.m.commits[p].gen)
	}
	gen++
	r.checkCommitShape(check, c, parents, gen)
	if len(c.Operations) != len(ops) {
		r.fail(check, "commit has %d operations, model %d", len(c.Operations), len(ops))
	}
	got := slices.SortedFunc(slices.Values(c.Operations), func(a, b vs.CommitOp) int {
		return cmp.Compare(keyOf(a.Key), keyOf(b.Key))
	})
	for i, op := range ops {
		g := got[i]
		if keyOf(g.Key) != op.key || (g.Kind == vs.OpDelete) != op.del {
			r.fail(check, "operation %d is %s %s, model %+v", i, g.Kind, g.Key, op)
		}
		if !op.del {
			r.checkValueHash(check, op.val, g.Value)
		}
	}
	// Commit times never go backwards along a branch.
	if pt := r.m.commits[parents[0]].time; c.CommitTime.Before(pt) {
		r.fail(check, "commit time %v is before its parent's %v", c.CommitTime, pt)
	}
	r.m.commits = append(r.m.commits, &mcommit{hash: c.Hash, parents: parents, gen: gen, state: state, ops: ops, time: c.CommitTime})
	id := len(r.m.commits) - 1
	r.m.byHash[c.Hash] = id
	return id
}

func (r *runner) checkCommitShape(check string, c *vs.Commit, parents []int, gen int) {
	var want []vs.Hash
	for _, p := range parents {
		want = append(want, r.m.commits[p].hash)
	}
	if !slices.Equal(c.Parents, want) {
		r.fail(check, "commit %s has parents %v, model %v", r.desc(c.Hash), r.descAll(c.Parents), r.descAll(want))
	}
	if c.Seq != uint64(gen) {
		r.fail(check, "commit %s has Seq %d, model generation %d", r.desc(c.Hash), c.Seq, gen)
	}
}

func (r *runner) descAll(hs []vs.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = r.desc(h)
	}
	return out
}

// checkValueHash checks that the store names equal contents, and only
// those, by equal hashes.
func (r *runner) checkValueHash(check string, v mval, h vs.Hash) {
	if old, ok := r.hashOfVal[v]; ok && old != h {
		r.fail(check, "content %s stored under two hashes", v)
	}
	if old, ok := r.valOfHash[h]; ok && old != v {
		r.fail(check, "hash %s names both %s and %s", h, old, v)
	}
	r.hashOfVal[v], r.valOfHash[h] = h, v
}

func (r *runner) expectOutcome(check string, want outcome, err error) {
	got := outcomeOf(err)
	r.note(" -> %s", got)
	if !slices.Equal(got.conflicts, want.conflicts) || got.class != want.class {
		r.fail(check+"-outcome", "store: %s (%v); model: %s", got, err, want)
	}
}

func (r *runner) stepCreateRef() {
	name := pick(r, refPool[1:])
	if r.chance(5) {
		name = pick(r, badRefNames)
	}
	typ := vs.Branch
	if r.chance(35) {
		typ = vs.Tag
	}
	target := r.m.commits[r.randomCommit()].hash
	if r.chance(5) {
		target = r.unknownHash()
	}
	r.logf("create %s %s at %s", typ, name, r.desc(target))
	tid, known := r.m.byHash[target]
	_, exists := r.m.refs[name]
	want := okOutcome()
	switch {
	case !validRefName(name):
		want = failOutcome(classInvalid)
	case !known:
		want = failOutcome(classCommitNotFound)
	case exists:
		want = failOutcome(classRefExists)
	}
	ref, err := r.s.CreateRef(r.ctx, vs.CreateRefRequest{Name: name, Type: typ, Target: target, Principal: "model"})
	r.expectOutcome("create", want, err)
	if err != nil {
		return
	}
	if ref.Name != name || ref.Type != typ || ref.Head != target {
		r.fail("create", "returned %s %s at %s", ref.Type, ref.Name, r.desc(ref.Head))
	}
	r.m.refs[name] = mref{typ: typ, head: tid}
	r.m.reflog[name]++
}

// refTypeArg picks the optional type of an assign or delete: usually none,
// sometimes the right one, sometimes the wrong one.
func (r *runner) refTypeArg(name string) vs.RefType {
	ref, ok := r.m.refs[name]
	switch x := r.rng.IntN(100); {
	case x < 60 || !ok:
		return 0
	case x < 85:
		return ref.typ
	}
	return 3 - r.m.refs[name].typ
}

// refChecks is the model's rule for assign and delete: the reference
// exists, has the given type (0: any), and is exactly at expected.
func (r *runner) refChecks(name string, typ vs.RefType, expected vs.Hash) outcome {
	ref, ok := r.m.refs[name]
	switch {
	case !validRefName(name):
		return failOutcome(classInvalid)
	case !ok || (typ != 0 && typ != ref.typ):
		return failOutcome(classRefNotFound)
	case expected != r.m.commits[ref.head].hash:
		return conflictOutcome([]string{conflictStr(vs.ConflictUnexpectedHash, "")})
	}
	return okOutcome()
}

func (r *runner) pickRefName() string {
	if r.chance(85) {
		return pick(r, r.refNames(0))
	}
	return pick(r, refPool)
}

func (r *runner) exactExpected(name string) vs.Hash {
	if ref, ok := r.m.refs[name]; ok && r.chance(80) {
		return r.m.commits[ref.head].hash
	}
	return r.m.commits[r.randomCommit()].hash
}

func (r *runner) stepAssignRef() {
	name := r.pickRefName()
	typ := r.refTypeArg(name)
	expected := r.exactExpected(name)
	target := r.m.commits[r.randomCommit()].hash
	if r.chance(4) {
		target = r.unknownHash()
	}
	r.assign(name, typ, expected, target)
}

func (r *runner) assign(name string, typ vs.RefType, expected, target vs.Hash) {
	r.logf("assign %s (type %d) expected=%s to %s", name, typ, r.desc(expected), r.desc(target))
	tid, known := r.m.byHash[target]
	want := r.refChecks(name, typ, expected)
	if !known && validRefName(name) {
		want = failOutcome(classCommitNotFound)
	}
	ref, err := r.s.AssignRef(r.ctx, vs.AssignRefRequest{Name: name, Type: typ, Expected: expected, Target: target, Principal: "model"})
	r.expectOutcome("assign", want, err)
	if err != nil {
		return
	}
	if ref.Name != name || ref.Head != target || ref.Type != r.m.refs[name].typ {
		r.fail("assign", "returned %s %s at %s", ref.Type, ref.Name, r.desc(ref.Head))
	}
	r.m.refs[name] = mref{typ: r.m.refs[name].typ, head: tid}
	r.m.reflog[name]++
}

func (r *runner) stepDeleteRef() {
	name := r.pickRefName()
	if r.chance(15) {
		name = "main"
	}
	typ := r.refTypeArg(name)
	expected := r.exactExpected(name)
	r.logf("delete %s (type %d) expected=%s", name, typ, r.desc(expected))
	want := r.refChecks(name, typ, expected)
	if name == "main" {
		want = failOutcome(classForbidden)
	}
	err := r.s.DeleteRef(r.ctx, vs.DeleteRefRequest{Name: name, Type: typ, Expected: expected, Principal: "model"})
	r.expectOutcome("delete", want, err)
	if err != nil {
		return
	}
	delete(r.m.refs, name)
	r.m.reflog[name]++
}

// pickModes chooses a default merge behavior and a few per-key ones, now and
// then invalid.
func (r *runner) pickModes() (vs.MergeBehavior, []vs.KeyMergeMode) {
	behaviors := []vs.MergeBehavior{vs.MergeNormal, vs.MergeForce, vs.MergeDrop}
	def := pick(r, []vs.MergeBehavior{"", vs.MergeNormal, vs.MergeNormal, vs.MergeNormal, vs.MergeForce, vs.MergeDrop})
	var keys []vs.KeyMergeMode
	if r.chance(30) {
		for range 1 + r.rng.IntN(3) {
			k := pick(r, allKeys)
			if slices.ContainsFunc(keys, func(km vs.KeyMergeMode) bool { return keyOf(km.Key) == k }) && !r.chance(10) {
				continue
			}
			keys = append(keys, vs.KeyMergeMode{Key: k.ck(), Behavior: pick(r, behaviors)})
		}
	}
	if r.chance(1) {
		def = "SQUASH"
	}
	return def, keys
}

func describeModes(def vs.MergeBehavior, keys []vs.KeyMergeMode) string {
	s := "mode=" + string(def)
	for _, km := range keys {
		s += fmt.Sprintf(" %s:%s", km.Key, km.Behavior)
	}
	return s
}

func (r *runner) stepMerge() {
	target := r.pickWriteTarget()
	from := r.pickMergeSource(target)
	def, keys := r.pickModes()
	r.merge(target, r.pickMergeExpected(target), from, def, keys, r.chance(15))
}

// pickMergeSource chooses what to merge: often something the target does
// not have yet, preferably another reference's head; otherwise any commit,
// already merged ones included, or an unknown hash.
func (r *runner) pickMergeSource(target string) vs.Hash {
	x := r.rng.IntN(100)
	if ref, ok := r.m.refs[target]; ok && x < 75 {
		anc := r.m.ancestors(ref.head)
		var heads, others []int
		for _, n := range r.refNames(0) {
			if h := r.m.refs[n].head; !anc[h] {
				heads = append(heads, h)
			}
		}
		for id := range r.m.commits {
			if !anc[id] {
				others = append(others, id)
			}
		}
		switch {
		case len(heads) > 0 && r.chance(70):
			return r.m.commits[pick(r, heads)].hash
		case len(others) > 0:
			return r.m.commits[pick(r, others)].hash
		}
	}
	switch {
	case x < 80:
		return r.m.commits[r.m.refs[pick(r, r.refNames(0))].head].hash
	case x < 90:
		chain := append(r.m.firstParents(r.m.refs[pick(r, r.refNames(0))].head), 0)
		return r.m.commits[chain[r.rng.IntN(min(len(chain), 4))]].hash
	case x < 97:
		return r.m.commits[r.randomCommit()].hash
	}
	return r.unknownHash()
}

// stepCrissCross builds a criss-cross history, whose merge base is
// ambiguous: two branches put at one commit, one commit on each, each
// merged into the other, then one merged into the other again. Every step
// of it is an ordinary, fully checked operation.
func (r *runner) stepCrissCross() {
	branches := r.refNames(vs.Branch)
	if len(branches) < 2 {
		r.stepCreateRef()
		return
	}
	i := r.rng.IntN(len(branches))
	j := (i + 1 + r.rng.IntN(len(branches)-1)) % len(branches)
	a, b := branches[i], branches[j]
	head := func(n string) vs.Hash { return r.m.commits[r.m.refs[n].head].hash }
	if r.chance(70) {
		r.assign(b, 0, head(b), head(a))
		r.commit(a, head(a), false)
		r.commit(b, head(b), false)
	}
	def := pick(r, []vs.MergeBehavior{vs.MergeForce, vs.MergeForce, vs.MergeNormal})
	ha, hb := head(a), head(b)
	r.merge(a, ha, hb, def, nil, false)
	r.merge(b, hb, ha, def, nil, false)
	r.merge(b, head(b), head(a), pick(r, []vs.MergeBehavior{vs.MergeForce, vs.MergeNormal}), nil, r.chance(20))
}

func (r *runner) merge(target string, expected, from vs.Hash, def vs.MergeBehavior, keys []vs.KeyMergeMode, dry bool) {
	req := vs.MergeRequest{Target: target, ExpectedTarget: expected, From: from, FromRef: "model",
		DefaultMode: def, KeyModes: keys, DryRun: dry,
		Meta: vs.CommitMeta{Message: fmt.Sprintf("step %d", r.step)}, Committer: "model"}
	r.logf("merge %s into %s expected=%s %s dry=%v", r.desc(from), target, r.desc(expected), describeModes(def, keys), req.DryRun)
	preds := r.m.mergeRule(req)
	res, err := r.s.Merge(r.ctx, req)
	if res != nil && len(preds) > 1 {
		// Several best common ancestors: the store may pick any, and
		// the rest of the step follows its choice.
		base, ok := r.m.byHash[res.CommonAncestor]
		i := slices.IndexFunc(preds, func(p mergePred) bool { return p.base == base })
		if !ok || i < 0 {
			r.fail("merge-base", "store merged with base %s, model's best common ancestors are %v", r.desc(res.CommonAncestor), r.baseNames(preds))
		}
		preds = []mergePred{preds[i]}
	}
	got := outcomeOf(err)
	r.note(" -> %s", got)
	var mismatches []string
	for _, p := range preds {
		m := r.mergeMismatch(p, res, err)
		if m == "" {
			r.applyMerge("merge", req.Target, p, res)
			return
		}
		mismatches = append(mismatches, m)
	}
	// Without a result the store's choice among tied bases is unknown:
	// report against a candidate whose outcome it matched, if any.
	msg := mismatches[0]
	for i, p := range preds {
		if p.class == got.class && slices.Equal(p.conflicts, got.conflicts) {
			msg = mismatches[i]
			break
		}
	}
	if len(preds) > 1 {
		msg += fmt.Sprintf(" (merge base: any of %v)", r.baseNames(preds))
	}
	r.fail("merge", "%s", msg)
}

// pickMergeExpected is pickExpected without the unrelated-commit case
// skewing towards conflicts: merges are judged against the head anyway.
func (r *runner) pickMergeExpected(name string) vs.Hash {
	if ref, ok := r.m.refs[name]; ok && r.chance(75) {
		return r.m.commits[ref.head].hash
	}
	return r.pickExpected(name)
}

func (r *runner) baseNames(preds []mergePred) []string {
	var out []string
	for _, p := range preds {
		out = append(out, r.cname(p.base))
	}
	return out
}

// mergeMismatch compares a merge or transplant outcome with a prediction
// and describes the first difference.
func (r *runner) mergeMismatch(p mergePred, res *vs.MergeResult, err error) string {
	got := outcomeOf(err)
	if got.class != p.class || !slices.Equal(got.conflicts, p.conflicts) {
		return fmt.Sprintf("store: %s (%v); model: %s", got, err, p.outcome)
	}
	if !p.hasResult {
		return ""
	}
	if res == nil {
		// MergeResult documents that conflicts come back with the
		// result as well as the error.
		return fmt.Sprintf("no MergeResult with %s (model: WasSuccessful=%v, namespace conflict=%v)", got, p.successful, p.nsConflict)
	}
	if res.WasSuccessful != p.successful || res.WasApplied != p.applied {
		return fmt.Sprintf("WasSuccessful=%v WasApplied=%v, model %v %v", res.WasSuccessful, res.WasApplied, p.successful, p.applied)
	}
	wantBase := vs.Hash{}
	if p.base >= 0 {
		wantBase = r.m.commits[p.base].hash
	}
	if res.CommonAncestor != wantBase {
		return fmt.Sprintf("CommonAncestor %s, model %s", r.desc(res.CommonAncestor), r.desc(wantBase))
	}
	headHash := r.m.commits[p.head].hash
	if res.EffectiveTargetHash != headHash {
		return fmt.Sprintf("EffectiveTargetHash %s, model %s", r.desc(res.EffectiveTargetHash), r.cname(p.head))
	}
	if !p.nsConflict {
		var details []string
		for _, d := range res.Details {
			s := keyOf(d.Key).String() + " " + string(d.Behavior)
			if d.Conflict != nil {
				s += " " + conflictStr(d.Conflict.Type, keyOf(d.Conflict.Key))
			}
			details = append(details, s)
		}
		slices.Sort(details)
		want := slices.Sorted(slices.Values(p.details))
		if !slices.Equal(details, want) {
			return fmt.Sprintf("details %q, model %q", details, want)
		}
	}
	if len(res.Commits) != len(p.commits) {
		return fmt.Sprintf("%d commits written, model %d", len(res.Commits), len(p.commits))
	}
	wantHead := headHash
	if len(p.commits) > 0 {
		wantHead = res.Commits[len(res.Commits)-1].Hash
	}
	if res.ResultantHash != wantHead {
		return fmt.Sprintf("ResultantHash %s, want %s", r.desc(res.ResultantHash), r.desc(wantHead))
	}
	return ""
}

func (r *runner) applyMerge(check, target string, p mergePred, res *vs.MergeResult) {
	parent := p.head
	for i, pc := range p.commits {
		parents := []int{parent}
		if pc.extraParent >= 0 {
			parents = append(parents, pc.extraParent)
		}
		parent = r.addCommit(check, res.Commits[i], parents, pc.state, pc.ops)
		r.m.reflog[target]++
		r.note(" %s", r.cname(parent))
	}
	if len(p.commits) > 0 {
		r.m.refs[target] = mref{typ: vs.Branch, head: parent}
	}
}

func (r *runner) stepTransplant() {
	target := r.pickWriteTarget()
	expected := r.pickMergeExpected(target)
	var commits []vs.Hash
	name := pick(r, r.refNames(0))
	chain := r.m.firstParents(r.m.refs[name].head)
	if len(chain) == 0 && len(r.m.commits) > 1 {
		chain = []int{1 + r.rng.IntN(len(r.m.commits)-1)}
	}
	if len(chain) > 0 {
		start := r.rng.IntN(len(chain))
		for _, id := range slices.Backward(chain[start:min(start+1+r.rng.IntN(3), len(chain))]) {
			commits = append(commits, r.m.commits[id].hash)
		}
	}
	switch x := r.rng.IntN(100); {
	case x < 2:
		commits = nil
	case x < 4:
		commits = append(commits, vs.NoAncestor)
	case x < 6:
		commits = append(commits, r.unknownHash())
	case x < 10 && len(commits) > 0:
		commits = append(commits, commits[0]) // replayed twice
	}
	def, keys := r.pickModes()
	req := vs.TransplantRequest{Target: target, ExpectedTarget: expected, Commits: commits, FromRef: name,
		DefaultMode: def, KeyModes: keys, DryRun: r.chance(15), Committer: "model"}
	r.logf("transplant %v into %s expected=%s %s dry=%v", r.descAll(commits), target, r.desc(expected), describeModes(def, keys), req.DryRun)
	p := r.m.transplantRule(req)
	res, err := r.s.Transplant(r.ctx, req)
	r.note(" -> %s", outcomeOf(err))
	if mismatch := r.mergeMismatch(p, res, err); mismatch != "" {
		r.fail("transplant", "%s", mismatch)
	}
	r.applyMerge("transplant", target, p, res)
}

// stepRead makes one of the reads the per-step checks do not.
func (r *runner) stepRead() {
	id := r.randomCommit()
	c := r.m.commits[id]
	switch r.rng.IntN(6) {
	case 0:
		if r.chance(5) {
			r.logf("read GetContent of an invalid key")
			_, err := r.s.GetContent(r.ctx, c.hash, vs.ContentKey{"a", ""})
			r.expectOutcome("get-content", failOutcome(classInvalid), err)
			return
		}
		k := pick(r, slices.Concat(allKeys, []mkey{wideNS, wideKey(r.rng.IntN(160))}))
		r.logf("read GetContent %s at %s", k, r.cname(id))
		got, err := r.s.GetContent(r.ctx, c.hash, k.ck())
		want, ok := c.state[k]
		if !ok {
			r.expectOutcome("get-content", failOutcome(classContentNotFound), err)
			return
		}
		r.expectOutcome("get-content", okOutcome(), err)
		if toVal(got) != want {
			r.fail("get-content", "%s at %s is %s, model %s", k, r.cname(id), toVal(got), want)
		}
	case 1:
		var keys []vs.ContentKey
		for range 1 + r.rng.IntN(4) {
			keys = append(keys, pick(r, allKeys).ck())
		}
		r.logf("read GetContents %v at %s", keys, r.cname(id))
		got, err := r.s.GetContents(r.ctx, c.hash, keys)
		r.expectOutcome("get-contents", okOutcome(), err)
		want := map[string]mval{}
		for _, k := range keys {
			if v, ok := c.state[keyOf(k)]; ok {
				want[string(keyOf(k))] = v
			}
		}
		gotVals := map[string]mval{}
		for k, v := range got {
			gotVals[k] = toVal(v)
		}
		if !maps.Equal(gotVals, want) {
			r.fail("get-contents", "got %v, model %v", gotVals, want)
		}
	case 2:
		kr := r.randomRange(slices.Concat(nsKeys, tableKeys, []mkey{wideNS, mk("d")}))
		r.logf("read Entries at %s %s", r.cname(id), kr)
		r.checkEntries(id, kr)
	case 3:
		kr := r.randomRange(slices.Concat(nsKeys, []mkey{wideNS}))
		other := r.randomCommit()
		r.logf("read Diff %s..%s %s", r.cname(id), r.cname(other), kr)
		r.checkDiff(id, other, kr)
	case 4:
		chain := r.m.firstParents(id)
		until := r.randomCommit()
		r.logf("read Log %s until %s", r.cname(id), r.cname(until))
		if i := slices.Index(chain, until); i >= 0 {
			chain = chain[:i+1]
		}
		r.checkLogChain(id, chain, vs.LogOptions{Until: r.m.commits[until].hash})
	default:
		r.logf("read ReadCommit %s", r.cname(id))
		if r.chance(10) {
			_, err := r.s.ReadCommit(r.ctx, r.unknownHash())
			r.expectOutcome("read-commit", failOutcome(classCommitNotFound), err)
			return
		}
		got, err := r.s.ReadCommit(r.ctx, c.hash)
		r.expectOutcome("read-commit", okOutcome(), err)
		if got.Hash != c.hash {
			r.fail("read-commit", "read %s, got %s", r.cname(id), r.desc(got.Hash))
		}
		r.checkCommitShape("read-commit", got, c.parents, c.gen)
	}
}

// ---------------------------------------------------------------------------
// Checks of every observable.

// checkAll compares the references and, for each, its entries and log with
// the model, and the diff of two random commits.
func (r *runner) checkAll() {
	names := slices.Sorted(maps.Keys(r.m.refs))
	refs := r.s.ListRefs()
	var got []string
	for _, ref := range refs {
		got = append(got, fmt.Sprintf("%s %s %s", ref.Name, ref.Type, r.desc(ref.Head)))
	}
	var want []string
	for _, n := range names {
		ref := r.m.refs[n]
		want = append(want, fmt.Sprintf("%s %s %s", n, ref.typ, r.cname(ref.head)))
	}
	if !slices.Equal(got, want) {
		r.fail("list-refs", "store %q, model %q", got, want)
	}
	// Refs at one commit show the same entries and log: each head is
	// read once per check.
	checked := map[int]bool{}
	for _, n := range names {
		head := r.m.refs[n].head
		if checked[head] {
			continue
		}
		checked[head] = true
		r.checkEntries(head, keyRange{})
		r.checkLogChain(head, r.m.firstParents(head), vs.LogOptions{})
	}
	r.checkDiff(r.randomCommit(), r.randomCommit(), keyRange{})
}

// pageLimit is 0 (everything in one page) or a small page size.
func (r *runner) pageLimit() int {
	if r.chance(30) {
		return 1 + r.rng.IntN(4)
	}
	return 0
}

// paged collects every page of a listing, checking page sizes and tokens.
func paged[T any](r *runner, check string, limit int, list func(token string) ([]T, string, error)) []T {
	var out []T
	token := ""
	for pages := 0; ; pages++ {
		items, next, err := list(token)
		if err != nil {
			r.fail(check, "page %d: %v (%s)", pages, err, r.namesIn(err))
		}
		if limit > 0 && (len(items) > limit || (next != "" && len(items) != limit)) {
			r.fail(check, "page %d has %d items with limit %d (more: %v)", pages, len(items), limit, next != "")
		}
		out = append(out, items...)
		if next == "" {
			return out
		}
		if pages > 10000 {
			r.fail(check, "paging does not end")
		}
		token = next
	}
}

// keyRange selects keys of a listing: a prefix (the key and everything
// below it) and inclusive bounds; empty parts select everything.
type keyRange struct{ prefix, min, max mkey }

func (kr keyRange) contains(k mkey) bool {
	return (kr.prefix == "" || k.under(kr.prefix)) && (kr.min == "" || k >= kr.min) && (kr.max == "" || k <= kr.max)
}

func (kr keyRange) String() string {
	return fmt.Sprintf("prefix=%s min=%s max=%s", kr.prefix, kr.min, kr.max)
}

func ckOrNil(k mkey) vs.ContentKey {
	if k == "" {
		return nil
	}
	return k.ck()
}

// randomRange picks a prefix and, sometimes, bounds.
func (r *runner) randomRange(prefixes []mkey) keyRange {
	kr := keyRange{prefix: pick(r, prefixes)}
	bounds := slices.Concat(allKeys, []mkey{wideNS, wideKey(r.rng.IntN(160))})
	if r.chance(30) {
		kr.prefix = ""
	}
	if r.chance(30) {
		kr.min = pick(r, bounds)
	}
	if r.chance(30) {
		kr.max = pick(r, bounds)
	}
	return kr
}

func (r *runner) checkEntries(id int, kr keyRange) {
	c := r.m.commits[id]
	limit := r.pageLimit()
	withContent := !r.chance(20)
	opts := vs.EntriesOptions{Prefix: ckOrNil(kr.prefix), Min: ckOrNil(kr.min), Max: ckOrNil(kr.max), Limit: limit, WithContent: withContent}
	got := paged(r, "entries", limit, func(token string) ([]vs.Entry, string, error) {
		opts.PageToken = token
		return r.s.Entries(r.ctx, c.hash, opts)
	})
	var want []mkey
	for _, k := range c.sortedKeys() {
		if kr.contains(k) {
			want = append(want, k)
		}
	}
	if len(got) != len(want) {
		r.fail("entries", "%s %s: %d entries, model %d: %v vs %v", r.cname(id), kr, len(got), len(want), entryKeys(got), want)
	}
	for i, e := range got {
		k := want[i]
		v := c.state[k]
		if keyOf(e.Key) != k || e.Type != v.typ || e.ID != v.id ||
			(withContent && (e.Content == nil || toVal(e.Content) != v)) || (!withContent && e.Content != nil) {
			r.fail("entries", "%s entry %d is %s %s id=%s %v, model %s %s", r.cname(id), i, e.Key, e.Type, e.ID, e.Content, k, v)
		}
		r.checkValueHash("entries", v, e.Value)
	}
}

func entryKeys(es []vs.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Key.String())
	}
	return out
}

// checkLogChain checks Log from a commit against the model's first-parent
// chain, each commit's parents and generation included.
func (r *runner) checkLogChain(id int, chain []int, opts vs.LogOptions) {
	opts.Limit = r.pageLimit()
	got := paged(r, "log", opts.Limit, func(token string) ([]*vs.Commit, string, error) {
		opts.PageToken = token
		return r.s.Log(r.ctx, r.m.commits[id].hash, opts)
	})
	if len(got) != len(chain) {
		var gs []string
		for _, c := range got {
			gs = append(gs, r.desc(c.Hash))
		}
		r.fail("log", "log of %s is %v, model %v", r.cname(id), gs, chain)
	}
	for i, c := range got {
		mc := r.m.commits[chain[i]]
		if c.Hash != mc.hash {
			r.fail("log", "log of %s entry %d is %s, model %s", r.cname(id), i, r.desc(c.Hash), r.cname(chain[i]))
		}
		r.checkCommitShape("log", c, mc.parents, mc.gen)
	}
}

func (r *runner) checkDiff(a, b int, kr keyRange) {
	as, bs := r.m.commits[a].state, r.m.commits[b].state
	limit := r.pageLimit()
	opts := vs.DiffOptions{Prefix: ckOrNil(kr.prefix), Min: ckOrNil(kr.min), Max: ckOrNil(kr.max), Limit: limit}
	got := paged(r, "diff", limit, func(token string) ([]vs.DiffEntry, string, error) {
		opts.PageToken = token
		d, n, err := r.s.Diff(r.ctx, r.m.commits[a].hash, r.m.commits[b].hash, opts)
		if err != nil {
			err = fmt.Errorf("%s..%s: %w", r.cname(a), r.cname(b), err)
		}
		return d, n, err
	})
	var want []mkey
	for _, k := range sortedKeys(mergeMaps(as, bs)) {
		av, aok := as[k]
		bv, bok := bs[k]
		if (aok != bok || av != bv) && kr.contains(k) {
			want = append(want, k)
		}
	}
	var gotKeys []string
	for _, d := range got {
		gotKeys = append(gotKeys, d.Key.String())
	}
	if len(got) != len(want) {
		r.fail("diff", "diff %s..%s %s: %v, model %v", r.cname(a), r.cname(b), kr, gotKeys, want)
	}
	side := func(c *vs.Content, state map[mkey]mval, k mkey) bool {
		v, ok := state[k]
		if c == nil {
			return !ok
		}
		return ok && toVal(c) == v
	}
	for i, d := range got {
		k := want[i]
		if keyOf(d.Key) != k || !side(d.From, as, k) || !side(d.To, bs, k) {
			r.fail("diff", "diff %s..%s entry %d: %s %v -> %v, model %s", r.cname(a), r.cname(b), i, d.Key, d.From, d.To, k)
		}
	}
}

// checkHistory checks what is too slow to check every step: relative
// references, merge bases, ancestry and the reference log.
func (r *runner) checkHistory() {
	names := r.refNames(0)
	name := pick(r, names)
	ref := r.m.refs[name]
	head := r.m.commits[ref.head]

	res, err := r.s.Resolve(r.ctx, name)
	if err != nil || res.Hash != head.hash || !res.AtHead || res.Ref == nil || res.Ref.Name != name {
		r.fail("resolve", "Resolve(%q) = %+v, %v; model %s", name, res, err, r.cname(ref.head))
	}

	chain := r.m.firstParents(ref.head)
	n := r.rng.IntN(len(chain) + 2)
	expr := fmt.Sprintf("%s~%d", name, n)
	res, err = r.s.Resolve(r.ctx, expr)
	switch {
	case n > len(chain):
		if got := outcomeOf(err); got.class != classCommitNotFound {
			r.fail("resolve", "Resolve(%q): %s (%v), model: commit-not-found", expr, got, err)
		}
	default:
		want := 0
		if n < len(chain) {
			want = chain[n]
		}
		if err != nil || res.Hash != r.m.commits[want].hash {
			r.fail("resolve", "Resolve(%q) = %v, %v; model %s", expr, res, err, r.cname(want))
		}
	}

	for i := 1; i <= 2; i++ {
		expr := fmt.Sprintf("%s^%d", name, i)
		res, err := r.s.Resolve(r.ctx, expr)
		if i > len(head.parents) {
			if got := outcomeOf(err); got.class != classCommitNotFound {
				r.fail("resolve", "Resolve(%q): %s (%v), model: commit-not-found", expr, got, err)
			}
			continue
		}
		if err != nil || res.Hash != r.m.commits[head.parents[i-1]].hash {
			r.fail("resolve", "Resolve(%q) = %v, %v; model %s", expr, res, err, r.cname(head.parents[i-1]))
		}
	}

	if len(chain) > 0 {
		// "*T": the newest commit of the first-parent chain at or
		// before T.
		t := r.m.commits[pick(r, chain)].time
		if r.chance(50) {
			t = t.Add(-time.Millisecond)
		}
		want := -1
		for _, id := range chain {
			if !r.m.commits[id].time.After(t) {
				want = id
				break
			}
		}
		expr := fmt.Sprintf("%s*%d", name, t.UnixMilli())
		if r.chance(50) {
			expr = name + "*" + t.Format(time.RFC3339Nano)
		}
		res, err := r.s.Resolve(r.ctx, expr)
		switch {
		case want < 0:
			if got := outcomeOf(err); got.class != classCommitNotFound {
				r.fail("resolve", "Resolve(%q): %s (%v), model: commit-not-found", expr, got, err)
			}
		case err != nil || res.Hash != r.m.commits[want].hash:
			r.fail("resolve", "Resolve(%q) = %+v, %v; model %s", expr, res, err, r.cname(want))
		}
	}

	at := r.randomCommit()
	expr = name + "@" + r.m.commits[at].hash.String()
	res, err = r.s.Resolve(r.ctx, expr)
	if r.m.isAncestor(at, ref.head) {
		if err != nil || res.Hash != r.m.commits[at].hash || res.AtHead != (at == ref.head) {
			r.fail("resolve", "Resolve(%s@%s) = %+v, %v", name, r.cname(at), res, err)
		}
	} else if got := outcomeOf(err); got.class != classCommitNotFound {
		r.fail("resolve", "Resolve(%s@%s) of a commit not on it: %s (%v)", name, r.cname(at), got, err)
	}

	a, b := r.randomCommit(), r.randomCommit()
	if r.chance(50) && len(names) > 1 {
		a, b = r.m.refs[pick(r, names)].head, r.m.refs[pick(r, names)].head
	}
	base, err := r.s.MergeBase(r.ctx, r.m.commits[a].hash, r.m.commits[b].hash)
	bases := r.m.mergeBases(a, b)
	if id, ok := r.m.byHash[base]; err != nil || !ok || !slices.Contains(bases, id) {
		r.fail("merge-base", "MergeBase(%s, %s) = %s, %v; model's best common ancestors %v", r.cname(a), r.cname(b), r.desc(base), err, bases)
	}
	isAnc, err := r.s.IsAncestor(r.ctx, r.m.commits[a].hash, r.m.commits[b].hash)
	if err != nil || isAnc != r.m.isAncestor(a, b) {
		r.fail("is-ancestor", "IsAncestor(%s, %s) = %v, %v; model %v", r.cname(a), r.cname(b), isAnc, err, r.m.isAncestor(a, b))
	}

	logName := pick(r, refPool)
	limit := r.pageLimit()
	entries := paged(r, "ref-log", limit, func(token string) ([]*vs.RefLogEntry, string, error) {
		return r.s.RefLog(r.ctx, logName, limit, token)
	})
	for _, e := range entries {
		if e.Ref != logName {
			r.fail("ref-log", "RefLog(%q) returned an entry for %q", logName, e.Ref)
		}
	}
	if len(entries) != r.m.reflog[logName] {
		r.fail("ref-log", "RefLog(%q) has %d entries, model %d", logName, len(entries), r.m.reflog[logName])
	}
}

// namesIn names the model's commits whose hashes err mentions.
func (r *runner) namesIn(err error) string {
	var out []string
	for h, id := range r.m.byHash {
		if strings.Contains(err.Error(), h.String()) {
			out = append(out, h.String()[:8]+"="+r.cname(id))
		}
	}
	return strings.Join(out, " ")
}

// checkStoredTrees checks, bypassing every cache, that the persisted and
// the remembered trees are whole: a missing node shows up at the step
// that lost it, not only when a later read happens to need it.
func (r *runner) checkStoredTrees() {
	var hs []vs.Hash
	for id, c := range r.m.commits {
		if id != 0 {
			hs = append(hs, c.hash)
		}
	}
	if r.wholeNodes == nil {
		r.wholeNodes = map[vs.Hash]bool{}
	}
	if err := vs.CheckTrees(r.ctx, r.s, hs, r.wholeNodes); err != nil {
		r.fail("stored-trees", "%v (%s)", err, r.namesIn(err))
	}
}
