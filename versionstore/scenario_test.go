package versionstore

// The scenario files in testdata/ state the commit rule and the key-level
// merge and transplant rules as stories over a real store; testdata/README.md
// describes their language. This file is their interpreter.
//
// Rewrite the expected outputs after a deliberate change of behavior with
//
//	go test -run TestScenarios ./versionstore/ -rewrite

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

func TestScenarios(t *testing.T) {
	t.Parallel()
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.HasSuffix(path, ".md") {
			return
		}
		d := newScenario(t)
		datadriven.RunTest(t, path, d.run)
	})
}

// scenario is the state of one scenario file: a fresh store, and the names
// the file uses for commits.
type scenario struct {
	s      *Store
	names  map[Hash]string
	hashes map[string]Hash
}

func newScenario(t *testing.T) *scenario {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
	return &scenario{
		s:      openTestStore(t, Options{Now: now}),
		names:  map[Hash]string{NoAncestor: "root"},
		hashes: map[string]Hash{"root": NoAncestor},
	}
}

func (d *scenario) run(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "commit":
		return d.commit(t, td)
	case "branch", "tag":
		return d.createRef(t, td)
	case "merge":
		return d.merge(t, td)
	case "transplant":
		return d.transplant(t, td)
	case "show":
		return d.show(t, td)
	case "log":
		return d.log(t, td)
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return ""
}

// words returns the directive's bare arguments (those without "=" other
// than the dry-run flag), in order.
func words(td *datadriven.TestData) []string {
	var out []string
	for _, a := range td.CmdArgs {
		if len(a.Vals) == 0 && a.Key != "dry-run" {
			out = append(out, a.Key)
		}
	}
	return out
}

// name gives a commit its scenario name, c1, c2, ... in order of creation.
func (d *scenario) name(h Hash) string {
	if n, ok := d.names[h]; ok {
		return n
	}
	n := fmt.Sprintf("c%d", len(d.names))
	d.names[h], d.hashes[n] = n, h
	return n
}

// resolve turns a commit name or a reference name into a commit hash.
func (d *scenario) resolve(t *testing.T, td *datadriven.TestData, s string) Hash {
	if h, ok := d.hashes[s]; ok {
		return h
	}
	r, err := d.s.GetRef(s)
	if err != nil {
		td.Fatalf(t, "%q is neither a commit name nor a reference: %v", s, err)
	}
	return r.Head
}

// expected is the expected=NAME argument, or the head of branch.
func (d *scenario) expected(t *testing.T, td *datadriven.TestData, branch string) Hash {
	if a, ok := td.Arg("expected"); ok {
		return d.resolve(t, td, a.SingleVal(t))
	}
	r, err := d.s.GetRef(branch)
	if err != nil {
		return NoAncestor // the store reports the missing branch
	}
	return r.Head
}

func parseKey(s string) ContentKey { return ContentKey(strings.Split(s, ".")) }

// operations parses the input lines of a commit. A put carries the content
// id its key had at base, as a client that read the key there would send,
// unless it says "new" (a client that thinks it creates the entity) or
// "id-of=KEY" (the entity that KEY held at base, moved here).
func (d *scenario) operations(t *testing.T, td *datadriven.TestData, base Hash) []Operation {
	var ops []Operation
	for _, line := range strings.Split(td.Input, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			td.Fatalf(t, "operation %q needs a key", line)
		}
		k := parseKey(f[1])
		switch f[0] {
		case "delete":
			ops = append(ops, Operation{Kind: OpDelete, Key: k})
			continue
		case "unchanged":
			ops = append(ops, Operation{Kind: OpUnchanged, Key: k})
			continue
		case "put":
		default:
			td.Fatalf(t, "unknown operation %q", line)
		}
		if len(f) < 3 {
			td.Fatalf(t, "put %q needs a type", line)
		}
		c := &Content{}
		rest := f[3:]
		switch f[2] {
		case "namespace":
			c.Type = Namespace
		case "table", "view":
			c.Type = IcebergTable
			if f[2] == "view" {
				c.Type = IcebergView
			}
			if len(rest) == 0 {
				td.Fatalf(t, "put %q needs a metadata location", line)
			}
			c.MetadataLocation, rest = rest[0], rest[1:]
		default:
			td.Fatalf(t, "unknown content type in %q", line)
		}
		idFrom := k
		for _, opt := range rest {
			switch {
			case opt == "new":
				idFrom = nil
			case strings.HasPrefix(opt, "id-of="):
				idFrom = parseKey(strings.TrimPrefix(opt, "id-of="))
			default:
				td.Fatalf(t, "unknown option %q in %q", opt, line)
			}
		}
		if idFrom != nil {
			if old, err := d.s.GetContent(t.Context(), base, idFrom); err == nil {
				c.ID = old.ID
			}
		}
		ops = append(ops, Operation{Kind: OpPut, Key: k, Content: c})
	}
	return ops
}

func (d *scenario) commit(t *testing.T, td *datadriven.TestData) string {
	w := words(td)
	if len(w) != 1 {
		td.Fatalf(t, "usage: commit BRANCH [expected=COMMIT]")
	}
	branch := w[0]
	exp := d.expected(t, td, branch)
	res, err := d.s.Commit(t.Context(), CommitRequest{Branch: branch, Expected: exp,
		Operations: d.operations(t, td, exp), Committer: "scenario"})
	if err != nil {
		return describeError(err)
	}
	out := fmt.Sprintf("%s -> %s", branch, d.name(res.Commit.Hash))
	if res.Rebased {
		out += fmt.Sprintf(", rebased onto %s", d.name(res.Commit.Parent()))
	}
	return out + "\n"
}

func (d *scenario) createRef(t *testing.T, td *datadriven.TestData) string {
	w := words(td)
	if len(w) != 3 || w[1] != "from" {
		td.Fatalf(t, "usage: %s NAME from COMMIT", td.Cmd)
	}
	typ := Branch
	if td.Cmd == "tag" {
		typ = Tag
	}
	r, err := d.s.CreateRef(t.Context(), CreateRefRequest{Name: w[0], Type: typ, Target: d.resolve(t, td, w[2]), Principal: "scenario"})
	if err != nil {
		return describeError(err)
	}
	return fmt.Sprintf("%s %s at %s\n", strings.ToLower(r.Type.String()), r.Name, d.name(r.Head))
}

// mergeRequests builds the requests of the merge and transplant
// directives from their shared arguments: expected=COMMIT, mode=BEHAVIOR
// (the default for every key), normal=, force= and drop= (lists of keys
// with that behavior), and dry-run. It is the one place that knows the
// shape of the requests.
func (d *scenario) mergeRequests(t *testing.T, td *datadriven.TestData, target string, from Hash, commits []Hash) (MergeRequest, TransplantRequest) {
	exp := d.expected(t, td, target)
	var def MergeBehavior
	if a, ok := td.Arg("mode"); ok {
		def = MergeBehavior(a.SingleVal(t))
	}
	var keys []KeyMergeMode
	for _, b := range []MergeBehavior{MergeNormal, MergeForce, MergeDrop} {
		if a, ok := td.Arg(strings.ToLower(string(b))); ok {
			for _, k := range a.Vals {
				keys = append(keys, KeyMergeMode{Key: parseKey(k), Behavior: b})
			}
		}
	}
	dry := td.HasArg("dry-run")
	return MergeRequest{Target: target, ExpectedTarget: exp, From: from, DefaultMode: def, KeyModes: keys,
			DryRun: dry, Committer: "scenario"},
		TransplantRequest{Target: target, ExpectedTarget: exp, Commits: commits, DefaultMode: def, KeyModes: keys,
			DryRun: dry, Committer: "scenario"}
}

func (d *scenario) merge(t *testing.T, td *datadriven.TestData) string {
	w := words(td)
	if len(w) != 3 || w[1] != "into" {
		td.Fatalf(t, "usage: merge SOURCE into BRANCH [options]")
	}
	from := d.resolve(t, td, w[0])
	req, _ := d.mergeRequests(t, td, w[2], from, nil)
	res, err := d.s.Merge(t.Context(), req)
	return d.describeMerge(w[2], res, err, req.DryRun)
}

func (d *scenario) transplant(t *testing.T, td *datadriven.TestData) string {
	w := words(td)
	if len(w) < 3 || w[len(w)-2] != "into" {
		td.Fatalf(t, "usage: transplant COMMIT... into BRANCH [options]")
	}
	var commits []Hash
	for _, c := range w[:len(w)-2] {
		commits = append(commits, d.resolve(t, td, c))
	}
	target := w[len(w)-1]
	_, req := d.mergeRequests(t, td, target, Hash{}, commits)
	res, err := d.s.Transplant(t.Context(), req)
	return d.describeMerge(target, res, err, req.DryRun)
}

// describeMerge prints the outcome of a merge or transplant: the new head
// and its commits, or why nothing was written, then what happened to
// each key the source changed.
func (d *scenario) describeMerge(target string, res *MergeResult, err error, dry bool) string {
	var b strings.Builder
	switch {
	case err != nil:
		b.WriteString(describeError(err))
	case res.WasApplied:
		var names []string
		for _, c := range res.Commits {
			names = append(names, d.name(c.Hash))
		}
		fmt.Fprintf(&b, "%s -> %s", target, strings.Join(names, ", "))
		if last := res.Commits[len(res.Commits)-1]; len(last.Parents) == 2 {
			fmt.Fprintf(&b, ", merge of %s", d.name(last.Parents[1]))
		}
		b.WriteString("\n")
	case dry:
		fmt.Fprintf(&b, "dry run: no conflicts; %s stays at %s\n", target, d.name(res.ResultantHash))
	default:
		fmt.Fprintf(&b, "nothing to apply; %s stays at %s\n", target, d.name(res.ResultantHash))
	}
	if res == nil {
		return b.String()
	}
	if res.CommonAncestor != (Hash{}) {
		fmt.Fprintf(&b, "merge base: %s\n", d.name(res.CommonAncestor))
	}
	details := slices.SortedFunc(slices.Values(res.Details), func(x, y KeyDetail) int {
		return cmp.Compare(x.Key.String(), y.Key.String())
	})
	for _, kd := range details {
		fmt.Fprintf(&b, "  %s %s", kd.Key, kd.Behavior)
		if kd.Conflict != nil {
			fmt.Fprintf(&b, ": %s", kd.Conflict.Type)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// describeError prints the conflicts of a conflict, one per line, or the
// kind of any other error.
func describeError(err error) string {
	var ce *ConflictError
	if errors.As(err, &ce) {
		var b strings.Builder
		b.WriteString("conflict:\n")
		for _, c := range ce.Conflicts {
			if c.Key != nil {
				fmt.Fprintf(&b, "  %s %s\n", c.Type, c.Key)
			} else {
				fmt.Fprintf(&b, "  %s\n", c.Type)
			}
		}
		return b.String()
	}
	for _, e := range []error{ErrInvalid, ErrReferenceNotFound, ErrReferenceExists, ErrCommitNotFound,
		ErrContentNotFound, ErrNotABranch, ErrForbidden} {
		if errors.Is(err, e) {
			return fmt.Sprintf("error: %s\n", e)
		}
	}
	return fmt.Sprintf("unexpected error: %v\n", err)
}

// show lists the entries of a commit, one key a line with its content.
func (d *scenario) show(t *testing.T, td *datadriven.TestData) string {
	w := words(td)
	if len(w) != 1 {
		td.Fatalf(t, "usage: show COMMIT")
	}
	entries, _, err := d.s.Entries(t.Context(), d.resolve(t, td, w[0]), EntriesOptions{WithContent: true})
	if err != nil {
		td.Fatalf(t, "entries: %v", err)
	}
	if len(entries) == 0 {
		return "(empty)\n"
	}
	var b strings.Builder
	for _, e := range entries {
		switch e.Type {
		case Namespace:
			fmt.Fprintf(&b, "%s namespace\n", e.Key)
		case IcebergTable:
			fmt.Fprintf(&b, "%s table %s\n", e.Key, e.Content.MetadataLocation)
		case IcebergView:
			fmt.Fprintf(&b, "%s view %s\n", e.Key, e.Content.MetadataLocation)
		}
	}
	return b.String()
}

// log lists the first-parent history of a commit, newest first, with each
// commit's parents and operations.
func (d *scenario) log(t *testing.T, td *datadriven.TestData) string {
	w := words(td)
	if len(w) != 1 {
		td.Fatalf(t, "usage: log COMMIT")
	}
	commits, _, err := d.s.Log(t.Context(), d.resolve(t, td, w[0]), LogOptions{})
	if err != nil {
		td.Fatalf(t, "log: %v", err)
	}
	var b strings.Builder
	for _, c := range commits {
		var parents, ops []string
		for _, p := range c.Parents {
			parents = append(parents, d.name(p))
		}
		for _, op := range c.Operations {
			ops = append(ops, strings.ToLower(op.Kind.String())+" "+op.Key.String())
		}
		fmt.Fprintf(&b, "%s (parents %s): %s\n", d.name(c.Hash), strings.Join(parents, ", "), strings.Join(ops, ", "))
	}
	return b.String()
}
