package changefeed_test

// The scenario files in testdata/ state which events the feed derives from
// which history, as stories over a real store (testdata/README.md
// describes their language). This file is their interpreter.
//
// Rewrite the expected outputs after a deliberate change of behavior with
//
//	go test -run TestScenarios ./catalog/changefeed/ -rewrite

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/feedevent"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
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

// openStore opens a store on Pebble in a temporary directory, with clock
// now (nil: the real one).
func openStore(t testing.TB, dir string, now func() time.Time) *versionstore.Store {
	t.Helper()
	be, err := pebblebackend.Open(dir, pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := versionstore.Open(t.Context(), be, versionstore.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type scenario struct {
	s      *versionstore.Store
	feed   *changefeed.Feed
	names  map[versionstore.Hash]string
	hashes map[string]versionstore.Hash
	// ids names content ids in the order the feed first shows them.
	ids map[string]string
}

func newScenario(t *testing.T) *scenario {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
	s := openStore(t, t.TempDir(), now)
	return &scenario{
		s:      s,
		feed:   changefeed.New(s, changefeed.Options{}),
		names:  map[versionstore.Hash]string{versionstore.NoAncestor: "root"},
		hashes: map[string]versionstore.Hash{"root": versionstore.NoAncestor},
		ids:    map[string]string{},
	}
}

func (d *scenario) run(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "commit":
		return d.commit(t, td)
	case "branch", "tag":
		return d.createRef(t, td)
	case "assign":
		return d.assign(t, td)
	case "delete-ref":
		return d.deleteRef(t, td)
	case "merge":
		return d.merge(t, td)
	case "transplant":
		return d.transplant(t, td)
	case "queue", "gc", "policy":
		return d.logEvent(t, td)
	case "events":
		return d.events(t, td)
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return ""
}

func words(td *datadriven.TestData) []string {
	var out []string
	for _, a := range td.CmdArgs {
		if len(a.Vals) == 0 {
			out = append(out, a.Key)
		}
	}
	return out
}

func arg(t *testing.T, td *datadriven.TestData, key, def string) string {
	if a, ok := td.Arg(key); ok {
		return strings.Join(a.Vals, ",")
	}
	return def
}

// name gives a commit its scenario name, c1, c2, ... in order of creation.
func (d *scenario) name(h versionstore.Hash) string {
	if n, ok := d.names[h]; ok {
		return n
	}
	n := fmt.Sprintf("c%d", len(d.names))
	d.names[h], d.hashes[n] = n, h
	return n
}

func (d *scenario) nameOf(hex string) string {
	if hex == "" {
		return ""
	}
	h, err := versionstore.ParseHash(hex)
	if err != nil {
		return "?" + hex
	}
	return d.name(h)
}

func (d *scenario) resolve(t *testing.T, td *datadriven.TestData, s string) versionstore.Hash {
	if h, ok := d.hashes[s]; ok {
		return h
	}
	r, err := d.s.GetRef(s)
	if err != nil {
		td.Fatalf(t, "%q is neither a commit name nor a reference: %v", s, err)
	}
	return r.Head
}

func head(t *testing.T, d *scenario, td *datadriven.TestData, ref string) versionstore.Hash {
	r, err := d.s.GetRef(ref)
	if err != nil {
		td.Fatalf(t, "%s: %v", ref, err)
	}
	return r.Head
}

func parseKey(s string) versionstore.ContentKey {
	return versionstore.ContentKey(strings.Split(s, "."))
}

// commit BRANCH [by=PRINCIPAL], input lines:
//
//	put namespace KEY [NAME=VALUE...]
//	put table|view KEY LOCATION [SNAPSHOT-ID]
//	delete KEY
//	rename FROM TO        (delete FROM, put its content under TO)
//	prop NAME=VALUE       (a commit property)
func (d *scenario) commit(t *testing.T, td *datadriven.TestData) string {
	w := words(td)
	if len(w) != 1 {
		td.Fatalf(t, "usage: commit BRANCH [by=PRINCIPAL]")
	}
	branch := w[0]
	base := head(t, d, td, branch)
	var ops []versionstore.Operation
	props := map[string]string{}
	for _, line := range strings.Split(td.Input, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "prop" && len(f) == 2:
			k, v, _ := strings.Cut(f[1], "=")
			props[k] = v
		case f[0] == "delete" && len(f) == 2:
			ops = append(ops, versionstore.Operation{Kind: versionstore.OpDelete, Key: parseKey(f[1])})
		case f[0] == "rename" && len(f) == 3:
			old, err := d.s.GetContent(t.Context(), base, parseKey(f[1]))
			if err != nil {
				td.Fatalf(t, "rename %s: %v", f[1], err)
			}
			ops = append(ops, versionstore.Operation{Kind: versionstore.OpDelete, Key: parseKey(f[1])},
				versionstore.Operation{Kind: versionstore.OpPut, Key: parseKey(f[2]), Content: old})
		case f[0] == "put" && len(f) >= 3:
			c := &versionstore.Content{}
			switch f[1] {
			case "namespace":
				c.Type = versionstore.Namespace
				for _, kv := range f[3:] {
					k, v, _ := strings.Cut(kv, "=")
					if c.Properties == nil {
						c.Properties = map[string]string{}
					}
					c.Properties[k] = v
				}
			case "table", "view":
				c.Type = versionstore.IcebergTable
				if f[1] == "view" {
					c.Type = versionstore.IcebergView
				}
				if len(f) < 4 {
					td.Fatalf(t, "%q needs a metadata location", line)
				}
				c.MetadataLocation = f[3]
				if len(f) > 4 {
					c.SnapshotID, _ = strconv.ParseInt(f[4], 10, 64)
				}
			default:
				td.Fatalf(t, "unknown content type in %q", line)
			}
			if old, err := d.s.GetContent(t.Context(), base, parseKey(f[2])); err == nil {
				c.ID = old.ID
			}
			ops = append(ops, versionstore.Operation{Kind: versionstore.OpPut, Key: parseKey(f[2]), Content: c})
		default:
			td.Fatalf(t, "unknown operation %q", line)
		}
	}
	res, err := d.s.Commit(t.Context(), versionstore.CommitRequest{Branch: branch, Expected: base, Operations: ops,
		Committer: arg(t, td, "by", "scenario"), Meta: versionstore.CommitMeta{Message: "commit", Properties: props}})
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return fmt.Sprintf("%s -> %s\n", branch, d.name(res.Commit.Hash))
}

// branch|tag NAME from=COMMIT-OR-REF
func (d *scenario) createRef(t *testing.T, td *datadriven.TestData) string {
	w := words(td)
	typ := versionstore.Branch
	if td.Cmd == "tag" {
		typ = versionstore.Tag
	}
	r, err := d.s.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: w[0], Type: typ,
		Target: d.resolve(t, td, arg(t, td, "from", "main")), Principal: arg(t, td, "by", "scenario")})
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return fmt.Sprintf("%s %s at %s\n", strings.ToLower(r.Type.String()), r.Name, d.name(r.Head))
}

// assign REF to=COMMIT-OR-REF
func (d *scenario) assign(t *testing.T, td *datadriven.TestData) string {
	w := words(td)
	r, err := d.s.AssignRef(t.Context(), versionstore.AssignRefRequest{Name: w[0], Expected: head(t, d, td, w[0]),
		Target: d.resolve(t, td, arg(t, td, "to", "")), Principal: arg(t, td, "by", "scenario")})
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return fmt.Sprintf("%s at %s\n", r.Name, d.name(r.Head))
}

// delete-ref REF
func (d *scenario) deleteRef(t *testing.T, td *datadriven.TestData) string {
	w := words(td)
	if err := d.s.DeleteRef(t.Context(), versionstore.DeleteRefRequest{Name: w[0], Expected: head(t, d, td, w[0]),
		Principal: arg(t, td, "by", "scenario")}); err != nil {
		return "error: " + err.Error() + "\n"
	}
	return "deleted " + w[0] + "\n"
}

// merge SOURCE into=TARGET
func (d *scenario) merge(t *testing.T, td *datadriven.TestData) string {
	w := words(td)
	target := arg(t, td, "into", "main")
	// Input lines "prop NAME=VALUE" are the merge commit's properties (as
	// the merge engine records its classification); force=K,L merges those
	// keys with the FORCE mode.
	var props map[string]string
	for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		if nv, ok := strings.CutPrefix(strings.TrimSpace(line), "prop "); ok {
			n, v, _ := strings.Cut(nv, "=")
			if props == nil {
				props = map[string]string{}
			}
			props[n] = v
		}
	}
	res, err := d.s.Merge(t.Context(), versionstore.MergeRequest{Target: target, ExpectedTarget: head(t, d, td, target),
		From: d.resolve(t, td, w[0]), FromRef: w[0], Committer: arg(t, td, "by", "scenario"), KeyModes: forced(t, td),
		Meta: versionstore.CommitMeta{Properties: props}})
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return fmt.Sprintf("%s -> %s\n", target, d.name(res.ResultantHash))
}

// queue TARGET request=R to=STATE [from=STATE] [reason=WORDS] [by=P]
// gc id=ID deleted=N [by=P]
// policy revision=R [source=S]
// append an event beside the history, as the merge queue, the garbage
// collector and the policy engine's wiring do.
func (d *scenario) logEvent(t *testing.T, td *datadriven.TestData) string {
	var ev versionstore.LogEvent
	var err error
	switch td.Cmd {
	case "queue":
		ev, err = feedevent.QueueEvent(words(td)[0], arg(t, td, "by", "scenario"), feedevent.QueueChange{
			Request: arg(t, td, "request", ""), Source: arg(t, td, "source", ""), From: arg(t, td, "from", ""),
			To: arg(t, td, "to", ""), Reason: strings.ReplaceAll(arg(t, td, "reason", ""), "_", " ")})
	case "gc":
		n, _ := strconv.ParseInt(arg(t, td, "deleted", "0"), 10, 64)
		ev, err = feedevent.GCEvent(arg(t, td, "by", "scenario"), feedevent.GCRun{ID: arg(t, td, "id", ""), Outcome: "ok", Deleted: n})
	case "policy":
		ev, err = feedevent.PolicyEvent(feedevent.PolicyActivation{Source: arg(t, td, "source", "embedded"), Revision: arg(t, td, "revision", "")})
	}
	if err != nil {
		td.Fatalf(t, "%v", err)
	}
	if _, err := d.s.AppendEvent(t.Context(), ev); err != nil {
		return "error: " + err.Error() + "\n"
	}
	return "appended " + td.Cmd + "\n"
}

// forced is the FORCE merge mode for each key of the argument force=K,L.
func forced(t *testing.T, td *datadriven.TestData) []versionstore.KeyMergeMode {
	var modes []versionstore.KeyMergeMode
	if f := arg(t, td, "force", ""); f != "" {
		for _, k := range strings.Split(f, ",") {
			modes = append(modes, versionstore.KeyMergeMode{Key: parseKey(k), Behavior: versionstore.MergeForce})
		}
	}
	return modes
}

// transplant COMMIT... onto=TARGET
func (d *scenario) transplant(t *testing.T, td *datadriven.TestData) string {
	target := arg(t, td, "onto", "main")
	var commits []versionstore.Hash
	for _, w := range words(td) {
		commits = append(commits, d.resolve(t, td, w))
	}
	// Input lines "prop COMMIT NAME=VALUE" are properties the replay of
	// COMMIT carries (as the merge engine records its classification).
	var replay map[versionstore.Hash]map[string]string
	for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "prop" {
			continue
		}
		h := d.resolve(t, td, f[1])
		n, v, _ := strings.Cut(f[2], "=")
		if replay == nil {
			replay = map[versionstore.Hash]map[string]string{}
		}
		if replay[h] == nil {
			replay[h] = map[string]string{}
		}
		replay[h][n] = v
	}
	res, err := d.s.Transplant(t.Context(), versionstore.TransplantRequest{Target: target, ExpectedTarget: head(t, d, td, target),
		Commits: commits, Committer: arg(t, td, "by", "scenario"), ReplayProperties: replay, KeyModes: forced(t, td)})
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var names []string
	for _, c := range res.Commits {
		names = append(names, d.name(c.Hash))
	}
	return fmt.Sprintf("%s -> %s\n", target, strings.Join(names, " "))
}

// events [after=CURSOR] [refs=A,B] [types=T,U] [limit=N] prints the page,
// one event a line, and its next cursor. Every call also checks that
// paging through the same selection one event at a time, and resuming
// from each event's id, gives the same events.
func (d *scenario) events(t *testing.T, td *datadriven.TestData) string {
	after, err := changefeed.ParseCursor(arg(t, td, "after", ""))
	if err != nil {
		td.Fatalf(t, "%v", err)
	}
	q := changefeed.Query{After: after, Limit: changefeed.MaxLimit}
	if r := arg(t, td, "refs", ""); r != "" {
		q.Refs = strings.Split(r, ",")
	}
	if ty := arg(t, td, "types", ""); ty != "" {
		if q.Types, err = changefeed.ParseTypes(strings.Split(ty, ",")); err != nil {
			return "error: " + err.Error() + "\n"
		}
	}
	if l := arg(t, td, "limit", ""); l != "" {
		q.Limit, _ = strconv.Atoi(l)
	}
	page, err := d.feed.Read(t.Context(), q)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	if q.Limit == changefeed.MaxLimit {
		checkPaging(t, d.feed, q, page.Events)
	}
	var b strings.Builder
	for _, ev := range page.Events {
		b.WriteString(d.describe(ev))
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "next: %s\n", page.Next)
	return b.String()
}

// checkPaging reads q's events again one at a time, and then from each
// event's id, and fails t unless every way gives want.
func checkPaging(t *testing.T, feed *changefeed.Feed, q changefeed.Query, want []changefeed.Event) {
	t.Helper()
	ids := func(evs []changefeed.Event) []changefeed.Cursor {
		out := make([]changefeed.Cursor, len(evs))
		for i, e := range evs {
			out[i] = e.ID
		}
		return out
	}
	one := q
	one.Limit = 1
	var got []changefeed.Event
	for {
		page, err := feed.Read(t.Context(), one)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page.Events...)
		if len(page.Events) == 0 {
			break
		}
		one.After = page.Next
	}
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("one at a time from %s: %v; all at once: %v", q.After, ids(got), ids(want))
	}
	for i, ev := range want {
		from := q
		from.After = ev.ID
		page, err := feed.Read(t.Context(), from)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(page.Events), ids(want[i+1:])) {
			t.Fatalf("resumed after %s: %v; want %v", ev.ID, ids(page.Events), ids(want[i+1:]))
		}
	}
}

// describe prints one event on one line, commits and content ids by
// their scenario names.
func (d *scenario) describe(ev changefeed.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s by %s at %s", ev.ID, ev.Type, ev.Ref, ev.Principal, d.nameOf(ev.Commit))
	if m := ev.Move; m != nil {
		if m.From != "" {
			fmt.Fprintf(&b, " from=%s", d.nameOf(m.From))
		}
		if m.To != "" {
			fmt.Fprintf(&b, " to=%s", d.nameOf(m.To))
		}
		if m.FastForward {
			b.WriteString(" fast-forward")
		}
	}
	if c := ev.Details; c != nil {
		var parents, keys []string
		for _, p := range c.Parents {
			parents = append(parents, d.nameOf(p))
		}
		for _, k := range c.Keys {
			keys = append(keys, strings.Join(k, "."))
		}
		fmt.Fprintf(&b, " parents=%s keys=%s", strings.Join(parents, ","), strings.Join(keys, ","))
		if c.Source != "" {
			fmt.Fprintf(&b, " source=%s", d.nameOf(c.Source))
		}
		if c.Operation != "" {
			fmt.Fprintf(&b, " op=%s", c.Operation)
		}
		if len(c.Tables) > 0 {
			var tables []string
			for _, tm := range c.Tables {
				tables = append(tables, strings.Join(tm.Key, ".")+":"+orDash(tm.Class)+":"+orDash(tm.Resolution))
			}
			fmt.Fprintf(&b, " tables=%s", strings.Join(tables, ","))
		}
	}
	if q := ev.Queue; q != nil {
		fmt.Fprintf(&b, " request=%s %s->%s", q.Request, orDash(q.From), q.To)
		if q.Reason != "" {
			fmt.Fprintf(&b, " reason=%q", q.Reason)
		}
	}
	if g := ev.GC; g != nil {
		fmt.Fprintf(&b, " run=%s %s deleted=%d", g.ID, g.Outcome, g.Deleted)
	}
	if p := ev.Policy; p != nil {
		fmt.Fprintf(&b, " revision=%s source=%s", p.Revision, p.Source)
	}
	if c := ev.Content; c != nil {
		fmt.Fprintf(&b, " %s", strings.Join(c.Key, "."))
		if c.PreviousKey != nil {
			fmt.Fprintf(&b, " from=%s", strings.Join(c.PreviousKey, "."))
		}
		id, ok := d.ids[c.ID]
		if !ok {
			id = fmt.Sprintf("e%d", len(d.ids)+1)
			d.ids[c.ID] = id
		}
		fmt.Fprintf(&b, " id=%s via=%s of=%d", id, c.Via, c.Count)
		if c.Properties != nil {
			var props []string
			for k, v := range c.Properties {
				props = append(props, k+"="+v)
			}
			slices.Sort(props)
			fmt.Fprintf(&b, " props=%s", strings.Join(props, ","))
		}
		if len(c.UpdatedProperties)+len(c.RemovedProperties) > 0 {
			fmt.Fprintf(&b, " set=%s unset=%s", strings.Join(c.UpdatedProperties, ","), strings.Join(c.RemovedProperties, ","))
		}
		if ic := c.Iceberg; ic != nil {
			if ic.Operation != "" {
				fmt.Fprintf(&b, " op=%s", ic.Operation)
			}
			if len(ic.Changes) > 0 {
				fmt.Fprintf(&b, " changes=%s", strings.Join(ic.Changes, ","))
			}
			fmt.Fprintf(&b, " meta=%s->%s snap=%d->%d", orDash(ic.PreviousMetadataLocation), orDash(ic.MetadataLocation), ic.PreviousSnapshotID, ic.SnapshotID)
		}
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
