package refretention_test

import (
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/housekeeping/refretention"
	"github.com/floe-catalog/floe/versionstore"
)

// TestExpiriesInTheFeed: what the sweep deletes reaches the change feed
// as branch.expired and tag.expired, by the retention principal with the
// reason the reference log recorded, while a deletion by a client stays
// branch.deleted. The feed derives both from the durable log alone, so
// a feed opened on the store afterwards (as after a restart) reads the
// same.
func TestExpiriesInTheFeed(t *testing.T) {
	cfg := refretention.Config{Branches: []refretention.Rule{{Prefix: "ingest/", MaxAge: refretention.Duration(time.Hour)}}}
	e := newEnv(t, cfg)
	ctx := t.Context()
	head := e.commit("main")
	e.create("ingest/a", versionstore.Branch, head)
	e.create("ingest/b", versionstore.Branch, head)
	e.create("rc1", versionstore.Tag, head)
	if err := e.svc.Set(ctx, "rc1", refretention.Settings{MaxAge: dur(30 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	after, err := changefeed.New(e.store, changefeed.Options{}).Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.DeleteRef(ctx, versionstore.DeleteRefRequest{Name: "ingest/b", Expected: head, Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	e.advance(2 * time.Hour)
	if got := strings.Join(e.expire(), " "); got != "ingest/a rc1" {
		t.Fatalf("expired %q, want ingest/a rc1", got)
	}

	page, err := changefeed.New(e.store, changefeed.Options{}).Read(ctx, changefeed.Query{After: after, Limit: changefeed.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range page.Events {
		line := string(ev.Type) + " " + ev.Ref + " by " + ev.Principal
		if ev.Move == nil || ev.Move.From != head.String() || ev.Commit != head.String() {
			t.Errorf("%s: move %+v, commit %s; want from and commit %s", line, ev.Move, ev.Commit, head)
			continue
		}
		if ev.Move.Reason != "" {
			line += ": " + ev.Move.Reason
		}
		got = append(got, line)
	}
	want := []string{
		"branch.deleted ingest/b by alice",
		"branch.expired ingest/a by floe-retention: expired by retention (max age 1h from prefix ingest/, inactive since 2026-12-01T09:00:00Z)",
		"tag.expired rc1 by floe-retention: expired by retention (max age 30m from own, inactive since 2026-12-01T09:00:00Z)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("feed after the sweep:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A consumer that follows only deletions does not receive expiries,
	// and one that asks for branch.* receives both.
	for _, c := range []struct {
		types []string
		want  int
	}{{[]string{"branch.deleted"}, 1}, {[]string{"branch.expired", "tag.expired"}, 2}, {[]string{"branch.*"}, 2}} {
		types, err := changefeed.ParseTypes(c.types)
		if err != nil {
			t.Fatal(err)
		}
		p, err := changefeed.New(e.store, changefeed.Options{}).Read(ctx, changefeed.Query{After: after, Types: types, Limit: changefeed.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Events) != c.want {
			t.Errorf("types %v: %d events, want %d", c.types, len(p.Events), c.want)
		}
	}
}

// TestExpiryReason reads only what the sweep writes.
func TestExpiryReason(t *testing.T) {
	for _, c := range []struct {
		principal, reason string
		ok                bool
	}{
		{"floe-retention: expired by retention (max age 2d)", "expired by retention (max age 2d)", true},
		{"floe-retention", "", false},
		{"floe-retention: ", "", false},
		{"alice", "", false},
		{"", "", false},
	} {
		reason, ok := refretention.ExpiryReason(c.principal)
		if ok != c.ok || (ok && reason != c.reason) {
			t.Errorf("ExpiryReason(%q) = %q, %v; want %q, %v", c.principal, reason, ok, c.reason, c.ok)
		}
	}
}
