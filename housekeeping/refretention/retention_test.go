package refretention_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/housekeeping/refretention"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// env is a store and a retention service sharing one clock, so commit
// times and expiry are judged on the same time line.
type env struct {
	t     *testing.T
	clock *atomic.Int64
	store *versionstore.Store
	svc   *refretention.Service
	seq   int
}

func newEnv(t *testing.T, cfg refretention.Config) *env {
	t.Helper()
	clock := &atomic.Int64{}
	clock.Store(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	be, err := pebblebackend.Open(t.TempDir(), pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := versionstore.Open(t.Context(), be, versionstore.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	svc, err := refretention.New(refretention.Options{Store: store, Config: cfg, Now: now, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, clock: clock, store: store, svc: svc}
}

func (e *env) advance(d time.Duration) { e.clock.Add(int64(d)) }

func (e *env) create(name string, typ versionstore.RefType, at versionstore.Hash) {
	e.t.Helper()
	if _, err := e.store.CreateRef(e.t.Context(), versionstore.CreateRefRequest{Name: name, Type: typ, Target: at}); err != nil {
		e.t.Fatal(err)
	}
}

// commit puts a namespace on branch and returns the new head.
func (e *env) commit(branch string) versionstore.Hash {
	e.t.Helper()
	ref, err := e.store.GetRef(branch)
	if err != nil {
		e.t.Fatal(err)
	}
	e.seq++
	res, err := e.store.Commit(e.t.Context(), versionstore.CommitRequest{Branch: branch, Expected: ref.Head,
		Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"ns" + string(rune('a'+e.seq))},
			Content: &versionstore.Content{Type: versionstore.Namespace}}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Commit.Hash
}

func (e *env) expire() []string {
	e.t.Helper()
	res, err := e.svc.Expire(e.t.Context(), false)
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, x := range res.Expired {
		names = append(names, x.Name)
	}
	return names
}

func (e *env) exists(name string) bool {
	_, err := e.store.GetRef(name)
	return err == nil
}

func dur(d time.Duration) *refretention.Duration {
	v := refretention.Duration(d)
	return &v
}

// TestMaxAgeCountsFromLastActivity: a branch expires its maximum age
// after its last commit or its creation, whichever is later; a commit
// keeps it alive, and a branch made from an old commit lives from its
// creation.
func TestMaxAgeCountsFromLastActivity(t *testing.T) {
	e := newEnv(t, refretention.DefaultConfig())
	old := e.commit("main")
	e.advance(10 * 24 * time.Hour)
	e.create("ingest/busy", versionstore.Branch, old)
	e.create("ingest/idle", versionstore.Branch, old)
	if got := e.expire(); len(got) != 0 {
		t.Fatalf("fresh branches from a 10-day-old commit expired: %v; the age counts from creation", got)
	}
	e.advance(36 * time.Hour)
	e.commit("ingest/busy")
	e.advance(24 * time.Hour) // idle: 60h since creation; busy: 24h since its commit
	if got := strings.Join(e.expire(), " "); got != "ingest/idle" {
		t.Fatalf("expired %q, want ingest/idle only", got)
	}
	if !e.exists("ingest/busy") || e.exists("ingest/idle") {
		t.Fatal("the wrong branch was deleted")
	}
	e.advance(25 * time.Hour) // busy: 49h since its commit
	if got := strings.Join(e.expire(), " "); got != "ingest/busy" {
		t.Fatalf("expired %q, want ingest/busy", got)
	}
	if !e.exists("main") {
		t.Fatal("main was deleted")
	}
}

// TestOwnSettingsBelongToOneLifeOfARef: settings set on a reference do not
// apply to a later reference of the same name.
func TestOwnSettingsBelongToOneLifeOfARef(t *testing.T) {
	e := newEnv(t, refretention.Config{})
	ctx := t.Context()
	e.create("dev", versionstore.Branch, versionstore.NoAncestor)
	if err := e.svc.Set(ctx, "dev", refretention.Settings{MaxAge: dur(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	ref, _ := e.store.GetRef("dev")
	if err := e.store.DeleteRef(ctx, versionstore.DeleteRefRequest{Name: "dev", Expected: ref.Head}); err != nil {
		t.Fatal(err)
	}
	e.advance(time.Minute)
	e.create("dev", versionstore.Branch, versionstore.NoAncestor)
	own, err := e.svc.Get(ctx, "dev")
	if err != nil || !own.IsZero() {
		t.Fatalf("settings of the new dev: %+v, %v; want none", own, err)
	}
	e.advance(2 * time.Hour)
	if got := e.expire(); len(got) != 0 {
		t.Fatalf("the old dev's max age expired the new one: %v", got)
	}
}

// TestTagsAndProtectedRefs: prefix defaults never apply to tags, a tag's
// own maximum age does, and protected references refuse one.
func TestTagsAndProtectedRefs(t *testing.T) {
	cfg := refretention.Config{Branches: []refretention.Rule{{Prefix: "r", MaxAge: refretention.Duration(time.Hour)}}, Protected: []string{"release/"}}
	e := newEnv(t, cfg)
	ctx := t.Context()
	e.create("rc1", versionstore.Tag, versionstore.NoAncestor)
	e.create("rc2", versionstore.Tag, versionstore.NoAncestor)
	e.create("release/1", versionstore.Branch, versionstore.NoAncestor)
	e.create("rolling", versionstore.Branch, versionstore.NoAncestor)
	if err := e.svc.Set(ctx, "rc2", refretention.Settings{MaxAge: dur(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"release/1", versionstore.DefaultBranch} {
		if err := e.svc.Set(ctx, name, refretention.Settings{MaxAge: dur(time.Hour)}); !errors.Is(err, versionstore.ErrInvalid) {
			t.Fatalf("max age on %s: %v, want ErrInvalid", name, err)
		}
	}
	if err := e.svc.Set(ctx, "release/1", refretention.Settings{KeepCommits: new(5)}); err != nil {
		t.Fatalf("history of a protected branch: %v", err)
	}
	e.advance(2 * time.Hour)
	if got := strings.Join(e.expire(), " "); got != "rc2 rolling" {
		t.Fatalf("expired %q, want rc2 (its own age) and rolling (prefix r)", got)
	}
	if !e.exists("release/1") || !e.exists("rc1") {
		t.Fatal("a protected branch or a tag without an age was deleted")
	}
}

// TestHistoryFor gives the garbage collector each reference's history
// rule: own settings over the prefix's, field by field; keep all without.
func TestHistoryFor(t *testing.T) {
	cfg := refretention.Config{Branches: []refretention.Rule{
		{Prefix: "transform/", KeepCommits: 10, KeepHistory: refretention.Duration(7 * 24 * time.Hour)},
		{Prefix: "transform/big/", KeepCommits: 3},
	}}
	e := newEnv(t, cfg)
	ctx := t.Context()
	for _, n := range []string{"transform/a", "transform/big/x", "transform/b", "dev"} {
		e.create(n, versionstore.Branch, versionstore.NoAncestor)
	}
	e.create("v1", versionstore.Tag, versionstore.NoAncestor)
	if err := e.svc.Set(ctx, "transform/b", refretention.Settings{KeepHistory: dur(0)}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ref     string
		commits int
		age     time.Duration
	}{
		{"transform/a", 10, 7 * 24 * time.Hour},
		{"transform/big/x", 3, 0}, // the longest prefix wins
		{"transform/b", 10, 0},    // own "keep all history by age", the prefix's count
		{"dev", 0, 0},
		{"main", 0, 0},
		{"v1", 0, 0},
	} {
		commits, age, err := e.svc.HistoryFor(ctx, c.ref)
		if err != nil || commits != c.commits || age != c.age {
			t.Errorf("HistoryFor(%s) = %d, %v, %v; want %d, %v", c.ref, commits, age, err, c.commits, c.age)
		}
	}
	if _, _, err := e.svc.HistoryFor(ctx, "gone"); !errors.Is(err, versionstore.ErrReferenceNotFound) {
		t.Fatalf("HistoryFor(gone): %v, want ErrReferenceNotFound", err)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"protected": ["release/"], "branches": [
		{"prefix": "ingest/", "maxAge": "2d"}, {"prefix": "transform/", "maxAge": "168h", "keepCommits": 20, "keepHistory": "7d"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := refretention.LoadConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Branches) != 2 || cfg.Branches[0].MaxAge != refretention.Duration(48*time.Hour) ||
		cfg.Branches[1].KeepHistory != refretention.Duration(7*24*time.Hour) || cfg.Branches[1].KeepCommits != 20 {
		t.Fatalf("config %+v", cfg)
	}
	for name, body := range map[string]string{
		"unknown field": `{"branch": []}`,
		"bad duration":  `{"branches": [{"prefix": "x/", "maxAge": "2 weeks"}]}`,
		"negative":      `{"branches": [{"prefix": "x/", "keepCommits": -1}]}`,
		"no prefix":     `{"branches": [{"maxAge": "1d"}]}`,
		"twice":         `{"branches": [{"prefix": "x/"}, {"prefix": "x/"}]}`,
		"protect all":   `{"protected": [""]}`,
	} {
		p := filepath.Join(dir, "bad.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := refretention.LoadConfig(p); err == nil {
			t.Errorf("%s: config %s accepted", name, body)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"48h": 48 * time.Hour, "7d": 7 * 24 * time.Hour, "never": 0, "0": 0, "90m": 90 * time.Minute} {
		if got, err := refretention.ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"-1h", "1w", "d", ""} {
		if _, err := refretention.ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) accepted", in)
		}
	}
	for d, want := range map[time.Duration]string{48 * time.Hour: "2d", 36 * time.Hour: "36h", 90 * time.Minute: "1h30m", 5 * time.Minute: "5m", 1500 * time.Millisecond: "1.5s", 0: "0"} {
		if s := refretention.FormatDuration(d); s != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, s, want)
		}
	}
}

// TestExampleConfig keeps the example in deploy/ loadable.
func TestExampleConfig(t *testing.T) {
	cfg, err := refretention.LoadConfig(filepath.Join("..", "..", "deploy", "ref-retention.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Branches) == 0 || len(cfg.Protected) == 0 {
		t.Fatalf("example config %+v", cfg)
	}
}

// TestCommitWhileJudgedSavesTheBranch: a branch that gets a commit after
// the sweep judged it expired is not deleted (the delete is conditional
// on the judged head), and the sweep reports it skipped.
func TestCommitWhileJudgedSavesTheBranch(t *testing.T) {
	e := newEnv(t, refretention.DefaultConfig())
	e.create("ingest/late", versionstore.Branch, versionstore.NoAncestor)
	e.advance(72 * time.Hour)
	refretention.SetJudged(e.svc, func(name string) {
		if name == "ingest/late" {
			e.commit(name)
		}
	})
	res, err := e.svc.Expire(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Expired) != 0 || len(res.Skipped) != 1 || res.Skipped[0].Name != "ingest/late" || !e.exists("ingest/late") {
		t.Fatalf("sweep %+v; want ingest/late skipped and alive", res)
	}
	refretention.SetJudged(e.svc, nil)
	if got := e.expire(); len(got) != 0 {
		t.Fatalf("expired %v right after its commit", got)
	}
}
