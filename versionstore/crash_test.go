package versionstore_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// The crash test kills a real process that is writing to the store and checks
// that every write it acknowledged survives, on one directory that is
// recovered again and again.
//
// The child is this test binary re-executed with -test.run=^TestCrashChild$
// and crashChildEnv set. It opens the store with synced writes and commits
// from many goroutines; after each write returns without error it prints one
// ACK line. The parent kills it with SIGKILL at a point chosen by the seed,
// keeps the complete ACK lines, reopens the store and checks them all.
//
// A process kill loses what the process had not yet handed to the kernel, not
// what the kernel had not yet written to disk, so this finds writes
// acknowledged before they left the process (an early ack, a write buffered in
// user space, a batch split across an ack) and recovery bugs, not missing
// fsyncs. Those need a crashable file system (Pebble's vfs.NewCrashableMem).
//
// The seed fixes the kill points and every random choice each child goroutine
// makes; how the goroutines interleave, and so which commits group together,
// still varies from run to run.

var (
	crashSeed   = flag.Uint64("crash.seed", 0, "seed for TestCrash; 0 picks one from the clock")
	crashCycles = flag.Int("crash.cycles", 20, "kill cycles TestCrash runs on one directory")
)

// crashChildEnv carries "<seed>:<dir>" to the child.
const crashChildEnv = "FLOE_CRASH_CHILD"

const (
	crashWorkers = 16
	// crashChildLife stops a child the parent failed to kill.
	crashChildLife = 60 * time.Second
	// crashCycleLimit bounds one child run: it is killed then even if it
	// has not reached its ack target.
	crashCycleLimit = 10 * time.Second
	crashNamespace  = "ns"
	crashCommitter  = "crash"
)

// crashAck is one write the child acknowledged. Lines read
//
//	ACK <kind> <ref> <hash> <key> <value> <worker>
//
// kind is commit (a put of key ns.<key> with metadata location <value>),
// delete (of ns.<key>), ns (the namespace put), merge (<value> is the merged
// commit), branch (the branch was created at <hash>) or tag (the tag was
// created or assigned to <hash>). Unused fields are "-".
type crashAck struct {
	kind, ref string
	hash      versionstore.Hash
	key       string
	value     string
	worker    string
	cycle     int
}

func (a crashAck) String() string {
	return fmt.Sprintf("cycle %d: ACK %s %s %s %s %s %s", a.cycle, a.kind, a.ref, a.hash, a.key, a.value, a.worker)
}

func parseCrashAck(line string, cycle int) (crashAck, error) {
	f := strings.Fields(line)
	if len(f) != 7 || f[0] != "ACK" {
		return crashAck{}, fmt.Errorf("malformed ack line %q", line)
	}
	h, err := versionstore.ParseHash(f[3])
	if err != nil {
		return crashAck{}, fmt.Errorf("ack line %q: %w", line, err)
	}
	switch f[1] {
	case "commit", "delete", "ns", "merge", "branch", "tag":
	default:
		return crashAck{}, fmt.Errorf("ack line %q: unknown kind", line)
	}
	return crashAck{kind: f[1], ref: f[2], hash: h, key: f[4], value: f[5], worker: f[6], cycle: cycle}, nil
}

// movesBranch reports whether the ack is a write that moved (or created) its
// branch. Branches in this test only move forward, each write from the head,
// so such a commit must stay on the branch's first-parent history forever.
func (a crashAck) movesBranch() bool { return a.kind != "tag" }

func TestCrash(t *testing.T) {
	t.Parallel()
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("inside the crash child")
	}
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -crash.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	cycles := *crashCycles
	if testing.Short() {
		cycles = min(cycles, 5)
	}
	dir := t.TempDir()
	var all []crashAck
	start := time.Now()
	for cycle := range cycles {
		childSeed := rng.Uint64()
		// Early kills land in Open and recovery as often as in writes.
		// Either way the ack count is capped: every cycle re-reads the
		// whole history, so its growth sets the test's running time.
		plan := crashPlan{acks: 5 + rng.IntN(196)}
		if rng.IntN(4) == 0 {
			plan.delay = time.Duration(rng.IntN(400)) * time.Millisecond
		}
		ran := time.Now()
		acks, lines := runCrashChild(t, dir, childSeed, cycle, plan)
		verified := time.Now()
		newFrom := len(all)
		all = append(all, acks...)
		if problems, _ := verifyCrashDir(t.Context(), dir, all, newFrom, checkNewAcks); len(problems) > 0 {
			reportCrashProblems(t, seed, cycle, problems)
		}
		t.Logf("cycle %d: child seed %d, %s: %d acks of %d lines in %v, verified in %v", cycle, childSeed, plan,
			len(acks), lines, verified.Sub(ran).Round(time.Millisecond), time.Since(verified).Round(time.Millisecond))
	}
	// Every cycle checked the acks so far; check them all once more on the
	// directory as the last recovery left it.
	problems, rebuilt := verifyCrashDir(t.Context(), dir, all, len(all), checkAllAcks)
	if len(problems) > 0 {
		reportCrashProblems(t, seed, cycles, problems)
	}
	// Most acknowledged commits shared a round with others, so reading
	// them rebuilt their intermediate trees.
	t.Logf("%d cycles, %d acknowledged writes verified in %v (%d intermediate trees rebuilt)",
		cycles, len(all), time.Since(start).Round(time.Millisecond), rebuilt)
}

func reportCrashProblems(t *testing.T, seed uint64, cycle int, problems []string) {
	t.Helper()
	const shown = 20
	for _, p := range problems[:min(len(problems), shown)] {
		t.Error(p)
	}
	t.Fatalf("after cycle %d: %d problems (seed %d, replay with -crash.seed=%d)", cycle, len(problems), seed, seed)
}

// crashPlan says when the parent kills the child: after acks acknowledged
// writes or, if delay is set, delay after it started if that comes first.
type crashPlan struct {
	acks  int
	delay time.Duration
}

func (p crashPlan) String() string {
	if p.delay > 0 {
		return fmt.Sprintf("kill after %v or %d acks", p.delay, p.acks)
	}
	return fmt.Sprintf("kill after %d acks", p.acks)
}

// runCrashChild runs one child on dir, kills it as planned and returns the
// complete ACK lines it printed, and how many lines it printed in all.
func runCrashChild(t *testing.T, dir string, childSeed uint64, cycle int, plan crashPlan) ([]crashAck, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1",
		"-test.timeout="+(2*crashChildLife).String())
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%s", crashChildEnv, childSeed, dir))
	var stderr bytes.Buffer // written by exec's copier until Wait returns
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	lines := make(chan string, 256)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(lines)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				// A partial last line was cut by the kill; it
				// acknowledges nothing.
				return
			}
			select {
			case lines <- strings.TrimSuffix(line, "\n"):
			case <-stop:
				return
			}
		}
	}()

	var (
		acks    []crashAck
		n       int
		ready   bool
		killed  bool
		killAt  <-chan time.Time
		limit   = time.NewTimer(crashCycleLimit)
		bad     []string
		exitErr error
	)
	defer limit.Stop()
	if plan.delay > 0 {
		tm := time.NewTimer(plan.delay)
		defer tm.Stop()
		killAt = tm.C
	}
	kill := func() {
		if !killed {
			killed = true
			if err := cmd.Process.Kill(); err != nil {
				t.Logf("kill child: %v", err)
			}
			// From now on the limit bounds how long the pipe takes to
			// close.
			limit.Reset(crashCycleLimit)
		}
	}
	for open := true; open; {
		select {
		case line, ok := <-lines:
			if !ok {
				open = false
				break
			}
			n++
			switch {
			case line == "READY":
				ready = true
			case strings.HasPrefix(line, "ACK "):
				a, err := parseCrashAck(line, cycle)
				if err != nil {
					bad = append(bad, err.Error())
					continue
				}
				acks = append(acks, a)
				if len(acks) >= plan.acks {
					kill()
				}
			}
		case <-killAt:
			kill()
		case <-limit.C:
			if killed {
				t.Fatalf("cycle %d: child's output still open %v after SIGKILL", cycle, crashCycleLimit)
			}
			if !ready {
				kill()
				_ = cmd.Wait()
				waited = true
				t.Fatalf("cycle %d: child not ready after %v; stderr:\n%s", cycle, crashCycleLimit, stderr.String())
			}
			t.Logf("cycle %d: only %d of %d acks after %v; killing", cycle, len(acks), plan.acks, crashCycleLimit)
			kill()
		}
	}
	// The pipe closed: the child is dead or exiting. Wait reaps it, so its
	// lock on the directory is gone before the parent opens the store.
	exitErr = cmd.Wait()
	waited = true
	// ExitCode is -1 only for a process ended by a signal: ours.
	if !killed || cmd.ProcessState.ExitCode() != -1 {
		t.Fatalf("cycle %d: child exited on its own (%v) before it was killed; stderr:\n%s", cycle, exitErr, stderr.String())
	}
	if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
		t.Fatalf("cycle %d: race in child; stderr:\n%s", cycle, stderr.String())
	}
	if len(bad) > 0 {
		t.Fatalf("cycle %d: child printed bad lines: %s", cycle, strings.Join(bad, "; "))
	}
	return acks, n
}

// TestCrashChild is the process TestCrash kills. It writes until killed.
func TestCrashChild(t *testing.T) {
	t.Parallel()
	spec := os.Getenv(crashChildEnv)
	if spec == "" {
		t.Skip("run by TestCrash in a child process")
	}
	seedText, dir, ok := strings.Cut(spec, ":")
	seed, err := strconv.ParseUint(seedText, 10, 64)
	if !ok || err != nil || dir == "" {
		t.Fatalf("bad %s=%q", crashChildEnv, spec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), crashChildLife)
	defer cancel()
	if err := crashChildMain(ctx, dir, seed, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "crash child (seed %d): %v\n", seed, err)
		os.Exit(3)
	}
}

// acker prints ACK lines. Each line is one write to an unbuffered file, so it
// has left the process when ack returns, and the mutex keeps lines whole.
type acker struct {
	mu sync.Mutex
	w  io.Writer
}

func (a *acker) ack(kind, ref string, h versionstore.Hash, key, value, worker string) {
	line := fmt.Sprintf("ACK %s %s %s %s %s %s\n", kind, ref, h, key, value, worker)
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := io.WriteString(a.w, line); err != nil {
		// The parent stopped reading; nothing more can be acknowledged.
		os.Exit(4)
	}
}

func crashChildMain(ctx context.Context, dir string, seed uint64, out io.Writer) error {
	be, err := pebblebackend.Open(dir, pebblebackend.Options{})
	if err != nil {
		return err
	}
	s, err := versionstore.Open(ctx, be, versionstore.Options{})
	if err != nil {
		return errors.Join(err, be.Close())
	}
	defer s.Close()
	a := &acker{w: out}
	rng := rand.New(rand.NewPCG(seed, 0))
	branches := []string{versionstore.DefaultBranch, "b1", "b2"}[:2+rng.IntN(2)]
	if err := crashSetup(ctx, s, a, branches); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if _, err := io.WriteString(out, "READY\n"); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for i := range crashWorkers {
		w := &crashWorker{
			s:        s,
			a:        a,
			id:       fmt.Sprintf("w%02d", i),
			branch:   branches[i%len(branches)],
			branches: branches,
			rng:      rand.New(rand.NewPCG(seed, uint64(i)+1)),
			run:      uint32(seed),
		}
		wg.Go(func() {
			if err := w.loop(ctx); err != nil {
				// Exit at once rather than let the other workers
				// write on; the parent reports stderr.
				fmt.Fprintf(os.Stderr, "crash child (seed %d): %s on %s: %v\n", seed, w.id, w.branch, err)
				os.Exit(3)
			}
		})
	}
	wg.Wait()
	return nil
}

// crashSetup gives main the namespace and creates the other branches from it.
// A kill may have stopped an earlier child anywhere in here, so each step
// checks whether it is already done.
func crashSetup(ctx context.Context, s *versionstore.Store, a *acker, branches []string) error {
	nsKey := versionstore.ContentKey{crashNamespace}
	mainRef, err := s.GetRef(versionstore.DefaultBranch)
	if err != nil {
		return err
	}
	mainHead := mainRef.Head
	switch _, err := s.GetContent(ctx, mainHead, nsKey); {
	case errors.Is(err, versionstore.ErrContentNotFound):
		res, err := s.Commit(ctx, versionstore.CommitRequest{
			Branch:     versionstore.DefaultBranch,
			Expected:   mainHead,
			Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: nsKey, Content: &versionstore.Content{Type: versionstore.Namespace}}},
			Meta:       versionstore.CommitMeta{Message: "create namespace"},
			Committer:  crashCommitter,
		})
		if err != nil {
			return err
		}
		mainHead = res.Commit.Hash
		a.ack("ns", versionstore.DefaultBranch, mainHead, crashNamespace, "-", "setup")
	case err != nil:
		return err
	}
	for _, b := range branches[1:] {
		_, err := s.GetRef(b)
		if err == nil {
			continue
		}
		if !errors.Is(err, versionstore.ErrReferenceNotFound) {
			return err
		}
		r, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: b, Type: versionstore.Branch, Target: mainHead, Principal: crashCommitter})
		if err != nil {
			return err
		}
		a.ack("branch", b, r.Head, "-", "-", "setup")
	}
	return nil
}

// crashWorker writes to one branch. It owns the keys it creates, named after
// its branch, itself and the run, so only it updates or deletes them and its
// updates carry the right content id.
type crashWorker struct {
	s        *versionstore.Store
	a        *acker
	id       string
	branch   string
	branches []string
	rng      *rand.Rand
	run      uint32

	owned    []ownedKey
	created  int
	lastSeen versionstore.Hash // a head of branch at or after this worker's last write
}

type ownedKey struct {
	name    string
	id      string
	version int
}

func (w *crashWorker) loop(ctx context.Context) error {
	for ctx.Err() == nil {
		var err error
		switch p := w.rng.IntN(100); {
		case p < 88:
			err = w.commit(ctx)
		case p < 95:
			err = w.merge(ctx)
		default:
			err = w.tag(ctx)
		}
		if err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

func (w *crashWorker) head() (versionstore.Hash, error) {
	r, err := w.s.GetRef(w.branch)
	if err != nil {
		return versionstore.Hash{}, err
	}
	return r.Head, nil
}

func (w *crashWorker) location(name string, version int) string {
	return fmt.Sprintf("s3://crash/%s/v%d-%08x.json", name, version, w.rng.Uint32())
}

// commit writes one to three operations: new keys, updates and deletes of
// keys the worker owns.
func (w *crashWorker) commit(ctx context.Context) error {
	type planned struct {
		op    versionstore.Operation
		owned int // index into w.owned; -1 for a new key
		name  string
	}
	var ops []planned
	used := map[int]bool{}
	for range 1 + w.rng.IntN(3) {
		i := -1
		if len(w.owned) > 0 && w.rng.IntN(100) < 55+len(w.owned) {
			i = w.rng.IntN(len(w.owned))
			if used[i] {
				continue
			}
			used[i] = true
		}
		if i < 0 {
			w.created++
			name := fmt.Sprintf("%s-%s-%08x-%d", w.branch, w.id, w.run, w.created)
			ops = append(ops, planned{owned: -1, name: name, op: versionstore.Operation{
				Kind: versionstore.OpPut, Key: versionstore.ContentKey{crashNamespace, name},
				Content: &versionstore.Content{Type: versionstore.IcebergTable, MetadataLocation: w.location(name, 1)},
			}})
			continue
		}
		k := w.owned[i]
		key := versionstore.ContentKey{crashNamespace, k.name}
		if w.rng.IntN(3) == 0 {
			ops = append(ops, planned{owned: i, name: k.name, op: versionstore.Operation{Kind: versionstore.OpDelete, Key: key}})
			continue
		}
		ops = append(ops, planned{owned: i, name: k.name, op: versionstore.Operation{
			Kind: versionstore.OpPut, Key: key,
			Content: &versionstore.Content{Type: versionstore.IcebergTable, ID: k.id, MetadataLocation: w.location(k.name, k.version+1)},
		}})
	}
	// Sometimes base the commit on an older head, so the store rebases it.
	expected := w.lastSeen
	if expected == (versionstore.Hash{}) || w.rng.IntN(10) < 7 {
		h, err := w.head()
		if err != nil {
			return err
		}
		expected = h
	}
	req := versionstore.CommitRequest{Branch: w.branch, Expected: expected, Committer: crashCommitter,
		Meta: versionstore.CommitMeta{Message: "crash " + w.id}}
	for _, p := range ops {
		req.Operations = append(req.Operations, p.op)
	}
	res, err := w.s.Commit(ctx, req)
	if errors.Is(err, versionstore.ErrReferenceConflict) {
		// Not expected, since the worker owns its keys, but not a
		// durability failure: forget the keys involved.
		w.forget(err)
		return nil
	}
	if err != nil {
		return err
	}
	h := res.Commit.Hash
	w.lastSeen = h
	ids := map[string]string{}
	for _, ad := range res.Added {
		ids[ad.Key.String()] = ad.ID
	}
	var gone []int
	for _, p := range ops {
		switch {
		case p.op.Kind == versionstore.OpDelete:
			w.a.ack("delete", w.branch, h, p.name, "-", w.id)
			gone = append(gone, p.owned)
		case p.owned < 0:
			w.a.ack("commit", w.branch, h, p.name, p.op.Content.MetadataLocation, w.id)
			w.owned = append(w.owned, ownedKey{name: p.name, id: ids[p.op.Key.String()], version: 1})
		default:
			w.a.ack("commit", w.branch, h, p.name, p.op.Content.MetadataLocation, w.id)
			w.owned[p.owned].version++
		}
	}
	slices.Sort(gone)
	for _, i := range slices.Backward(gone) {
		w.owned = slices.Delete(w.owned, i, i+1)
	}
	return nil
}

func (w *crashWorker) forget(err error) {
	var ce *versionstore.ConflictError
	if !errors.As(err, &ce) {
		return
	}
	for _, c := range ce.Conflicts {
		w.owned = slices.DeleteFunc(w.owned, func(k ownedKey) bool {
			return len(c.Key) == 2 && c.Key[1] == k.name
		})
	}
}

// merge merges another branch's head into the worker's branch.
func (w *crashWorker) merge(ctx context.Context) error {
	others := slices.DeleteFunc(slices.Clone(w.branches), func(b string) bool { return b == w.branch })
	from := others[w.rng.IntN(len(others))]
	fr, err := w.s.GetRef(from)
	if err != nil {
		return err
	}
	h, err := w.head()
	if err != nil {
		return err
	}
	res, err := w.s.Merge(ctx, versionstore.MergeRequest{Target: w.branch, ExpectedTarget: h, From: fr.Head, FromRef: from, Committer: crashCommitter})
	if errors.Is(err, versionstore.ErrReferenceConflict) {
		return nil // both sides changed a key: refused, and nothing written
	}
	if err != nil {
		return err
	}
	if res.WasApplied {
		w.lastSeen = res.ResultantHash
		w.a.ack("merge", w.branch, res.ResultantHash, "-", fr.Head.String(), w.id)
	}
	return nil
}

// tag creates or moves the branch's tag to the branch's head.
func (w *crashWorker) tag(ctx context.Context) error {
	name := "tag-" + w.branch
	h, err := w.head()
	if err != nil {
		return err
	}
	var r *versionstore.Ref
	cur, err := w.s.GetRef(name)
	switch {
	case errors.Is(err, versionstore.ErrReferenceNotFound):
		r, err = w.s.CreateRef(ctx, versionstore.CreateRefRequest{Name: name, Type: versionstore.Tag, Target: h, Principal: crashCommitter})
		if errors.Is(err, versionstore.ErrReferenceExists) {
			return nil // another worker of the branch created it first
		}
	case err == nil:
		r, err = w.s.AssignRef(ctx, versionstore.AssignRefRequest{Name: name, Type: versionstore.Tag, Expected: cur.Head, Target: h, Principal: crashCommitter})
		if errors.Is(err, versionstore.ErrReferenceConflict) {
			return nil // another worker moved it first
		}
	}
	if err != nil {
		return err
	}
	w.a.ack("tag", name, r.Head, "-", "-", w.id)
	return nil
}

// crashDepth says how closely verifyCrashDir checks older acks.
type crashDepth int

const (
	// checkNewAcks reads the content of the last child's acks only and
	// cross-checks their ancestry with IsAncestor; older acks are checked
	// for a readable commit, ancestry and their reference log entry, which
	// is what a kill could take from them. Reading every old ack's content
	// again each cycle would make the test quadratic in the history.
	checkNewAcks crashDepth = iota
	// checkAllAcks reads the content of every ack.
	checkAllAcks
)

// verifyCrashDir opens the store on dir as a restarted server would and
// returns every way it falls short: a ref on a missing commit, an unreadable
// history or tree, an inconsistent reference log, or an acknowledged write
// that is missing. acks[newFrom:] are the last child's.
func verifyCrashDir(ctx context.Context, dir string, acks []crashAck, newFrom int, depth crashDepth) (problems []string, treesRebuilt uint64) {
	be, err := pebblebackend.Open(dir, pebblebackend.Options{})
	if err != nil {
		return []string{fmt.Sprintf("reopen backend: %v", err)}, 0
	}
	s, err := versionstore.Open(ctx, be, versionstore.Options{})
	if err != nil {
		return []string{fmt.Sprintf("reopen store: %v", errors.Join(err, be.Close()))}, 0
	}
	v := &crashVerifier{ctx: ctx, s: s, commits: map[versionstore.Hash]*versionstore.Commit{}, line: map[string]map[versionstore.Hash]bool{}}
	v.checkRefs()
	v.checkRefLog()
	for i, a := range acks {
		fresh := i >= newFrom
		v.checkAck(a, fresh || depth == checkAllAcks, fresh)
	}
	v.checkOrder(acks[newFrom:])
	treesRebuilt = s.Stats().TreesRebuilt.Load()
	if err := s.Close(); err != nil {
		v.fail("close store: %v", err)
	}
	return v.problems, treesRebuilt
}

type crashVerifier struct {
	ctx      context.Context
	s        *versionstore.Store
	commits  map[versionstore.Hash]*versionstore.Commit // every commit the log walks read
	line     map[string]map[versionstore.Hash]bool      // ref → commits on its first-parent history
	moves    map[refMove]bool                           // (ref, to) of every reference log entry
	problems []string
}

type refMove struct {
	ref string
	to  versionstore.Hash
}

func (v *crashVerifier) fail(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

// checkRefs walks each ref's first-parent history, reads every parent
// those commits name, and lists each head's whole tree.
//
// Every commit this test makes lands on a branch's first-parent line (a
// commit or merge moves the branch from its head; branches are never
// assigned or deleted, and merges and tags only name branch heads), so the
// log walks read every commit ever acknowledged.
func (v *crashVerifier) checkRefs() {
	listed := map[versionstore.Hash]bool{}
	for _, r := range v.s.ListRefs() {
		v.line[r.Name] = v.walkLog(r)
		if !listed[r.Head] {
			listed[r.Head] = true
			v.listTree(r)
		}
	}
	if _, ok := v.line[versionstore.DefaultBranch]; !ok {
		v.fail("default branch missing")
	}
	for _, c := range v.commits {
		for _, p := range c.Parents {
			if p == versionstore.NoAncestor {
				continue
			}
			if _, ok := v.commits[p]; !ok {
				if _, err := v.s.ReadCommit(v.ctx, p); err != nil {
					v.fail("parent %s of commit %s: %v", p, c.Hash, err)
				}
			}
		}
	}
}

// walkLog pages through the first-parent history of r, checks it links up
// down to the root and returns its commits.
func (v *crashVerifier) walkLog(r *versionstore.Ref) map[versionstore.Hash]bool {
	line := map[versionstore.Hash]bool{}
	want := r.Head
	token := ""
	for {
		page, next, err := v.s.Log(v.ctx, r.Head, versionstore.LogOptions{Limit: 300, PageToken: token})
		if err != nil {
			v.fail("log of %s %s at %s: %v", r.Type, r.Name, want, err)
			return line
		}
		for _, c := range page {
			if c.Hash != want {
				v.fail("log of %s %s: got commit %s, want %s", r.Type, r.Name, c.Hash, want)
				return line
			}
			line[c.Hash] = true
			v.commits[c.Hash] = c
			want = c.Parent()
		}
		if next == "" {
			break
		}
		token = next
	}
	if want != versionstore.NoAncestor {
		v.fail("log of %s %s ends before the root, at %s", r.Type, r.Name, want)
	}
	return line
}

// listTree lists r's whole tree in pages, which reads every tree node and
// every content value.
func (v *crashVerifier) listTree(r *versionstore.Ref) {
	token := ""
	var last versionstore.ContentKey
	for {
		page, next, err := v.s.Entries(v.ctx, r.Head, versionstore.EntriesOptions{Limit: 500, PageToken: token})
		if err != nil {
			v.fail("entries of %s at %s: %v", r.Name, r.Head, err)
			return
		}
		for _, e := range page {
			if last != nil && slices.Compare(last, e.Key) >= 0 {
				v.fail("entries of %s at %s: %q after %q", r.Name, r.Head, e.Key, last)
			}
			last = e.Key
			ok := e.ID != "" && (len(e.Key) == 1 && e.Type == versionstore.Namespace ||
				len(e.Key) == 2 && e.Key[0] == crashNamespace && e.Type == versionstore.IcebergTable)
			if !ok {
				v.fail("entries of %s at %s: unexpected entry %q (%s, id %q)", r.Name, r.Head, e.Key, e.Type, e.ID)
			}
		}
		if next == "" {
			return
		}
		token = next
	}
}

// checkRefLog reads the whole reference log and checks that it is ordered
// and that each ref's newest entry moved it to its current head: the ref and
// its log entry are written in one atomic batch.
func (v *crashVerifier) checkRefLog() {
	v.moves = map[refMove]bool{}
	newest := map[string]*versionstore.RefLogEntry{}
	token := ""
	var prev uint64
	for {
		page, next, err := v.s.RefLog(v.ctx, "", 1000, token)
		if err != nil {
			v.fail("reference log: %v", err)
			return
		}
		for _, e := range page {
			if prev != 0 && e.Seq >= prev {
				v.fail("reference log: seq %d after %d", e.Seq, prev)
			}
			prev = e.Seq
			v.moves[refMove{e.Ref, e.To}] = true
			if _, ok := newest[e.Ref]; !ok {
				newest[e.Ref] = e
			}
		}
		if next == "" {
			break
		}
		token = next
	}
	for _, r := range v.s.ListRefs() {
		e := newest[r.Name]
		switch {
		case e == nil:
			v.fail("%s %s at %s has no reference log entry", r.Type, r.Name, r.Head)
		case e.To != r.Head || e.Op == versionstore.RefLogDelete:
			v.fail("%s %s is at %s but its newest reference log entry (seq %d) is %s to %s", r.Type, r.Name, r.Head, e.Seq, e.Op, e.To)
		}
	}
}

// checkAck checks one acknowledged write; withContent reads what it wrote,
// withWalk asks IsAncestor too.
func (v *crashVerifier) checkAck(a crashAck, withContent, withWalk bool) {
	c, err := v.s.ReadCommit(v.ctx, a.hash)
	if err != nil {
		v.fail("%v: commit unreadable: %v", a, err)
		return
	}
	if !v.moves[refMove{a.ref, a.hash}] {
		v.fail("%v: no reference log entry moves %s to it", a, a.ref)
	}
	if a.movesBranch() {
		r, err := v.s.GetRef(a.ref)
		if err != nil {
			v.fail("%v: %v", a, err)
			return
		}
		if !v.line[a.ref][a.hash] {
			v.fail("%v: not on the first-parent history of %s's head %s", a, a.ref, r.Head)
		}
		if withWalk {
			// The same question through the store's own walk.
			ok, err := v.s.IsAncestor(v.ctx, a.hash, r.Head)
			if err != nil || !ok {
				v.fail("%v: IsAncestor(ack, head %s) = %v, %v", a, r.Head, ok, err)
			}
		}
	} else if r, err := v.s.GetRef(a.ref); err != nil || r.Type != versionstore.Tag {
		v.fail("%v: tag missing: %v", a, err)
	}
	if !withContent {
		return
	}
	switch a.kind {
	case "commit":
		ct, err := v.s.GetContent(v.ctx, a.hash, versionstore.ContentKey{crashNamespace, a.key})
		switch {
		case err != nil:
			v.fail("%v: acknowledged put not found: %v", a, err)
		case ct.Type != versionstore.IcebergTable || ct.MetadataLocation != a.value:
			v.fail("%v: holds %s at %q", a, ct.Type, ct.MetadataLocation)
		}
	case "delete":
		if _, err := v.s.GetContent(v.ctx, a.hash, versionstore.ContentKey{crashNamespace, a.key}); !errors.Is(err, versionstore.ErrContentNotFound) {
			v.fail("%v: deleted key still readable, or unreadable tree: %v", a, err)
		}
	case "ns":
		if ct, err := v.s.GetContent(v.ctx, a.hash, versionstore.ContentKey{crashNamespace}); err != nil || ct.Type != versionstore.Namespace {
			v.fail("%v: namespace missing: %v", a, err)
		}
	case "merge":
		if len(c.Parents) != 2 || c.Parents[1].String() != a.value {
			v.fail("%v: merge commit has parents %v", a, c.Parents)
		}
	}
}

// checkOrder checks that each worker's writes to its branch, in the order
// they were acknowledged, form a chain of ancestors.
func (v *crashVerifier) checkOrder(acks []crashAck) {
	last := map[string]versionstore.Hash{}
	for _, a := range acks {
		if !a.movesBranch() || a.worker == "setup" {
			continue
		}
		k := a.worker + " " + a.ref
		if prev, ok := last[k]; ok && prev != a.hash {
			if ok, err := v.s.IsAncestor(v.ctx, prev, a.hash); err != nil || !ok {
				v.fail("%v: earlier ack %s of the same worker is not its ancestor (%v)", a, prev, err)
			}
		}
		last[k] = a.hash
	}
}
