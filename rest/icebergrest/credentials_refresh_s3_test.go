package icebergrest_test

import (
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-catalog/floe/iceberg/s3vend"
)

// expiresAt is the expiry a vended credential announces
// (s3.session-token-expires-at-ms).
func (v vended) expiresAt(t *testing.T) time.Time {
	t.Helper()
	if len(v.creds) != 1 {
		t.Fatalf("%d storage credentials, want 1", len(v.creds))
	}
	ms, err := strconv.ParseInt(v.creds[0].Config["s3.session-token-expires-at-ms"], 10, 64)
	if err != nil {
		t.Fatalf("s3.session-token-expires-at-ms: %v", err)
	}
	return time.UnixMilli(ms)
}

// TestS3VendedCredentialsRefresh is the refresh path as clients take it:
// Java's VendedCredentialsProvider (1.9+) and iceberg-go (0.7) call the
// table's /credentials five minutes before the expiry they were handed,
// and must then get new credentials, not the cached ones about to expire,
// still scoped to the table and unable to delete. Within the first half
// of their lifetime the same credentials come back (a burst of loads is
// one STS call).
//
// MinIO, like AWS, vends nothing shorter than 15 minutes (DurationSeconds
// 900 at least), so this test moves floe's clock, not MinIO's: the old
// credentials are still valid at MinIO when the new ones arrive. That they
// are refused once really expired, while the refreshed ones and a client
// that refreshed keep working, is TestS3VendedCredentialsOutliveExpiry
// (conformance/icebergo, 16 minutes, run on request).
func TestS3VendedCredentialsRefresh(t *testing.T) {
	var skew atomic.Int64 // how far floe's clock runs ahead
	l := newVendLake(t, vendOptions{now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	const branch = "lake@users/alice/dev"
	if status, body, _ := l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(branch)+"/namespaces", `{"namespace":["ns"]}`); status != http.StatusOK {
		t.Fatalf("create namespace: %d %s", status, body)
	}
	t1, _ := l.createTable(branch, "t1")
	t2, _ := l.createTable(branch, "t2")
	payload := []byte("parquet bytes")
	victim := l.uriOf(t2 + "/data/victim.parquet")
	l.s3(http.MethodPut, victim, payload, 200)

	before := time.Now()
	status, body, first := loadVended(l, "alice", branch, "t1", "")
	if status != http.StatusOK {
		t.Fatalf("load t1: %d %s", status, body)
	}
	old := first.keys(t)
	oldExp := first.expiresAt(t)
	// The expiry handed to clients is STS's, for the duration floe asked.
	if d := oldExp.Sub(before); d < s3vend.MinDuration-time.Minute || d > s3vend.MinDuration+time.Minute {
		t.Fatalf("credentials of a %s vendor expire in %s", s3vend.MinDuration, d)
	}

	t.Run("within half their lifetime the refresh endpoint answers the same credentials", func(t *testing.T) {
		l := l.with(t)
		skew.Store(int64(s3vend.MinDuration/2 - time.Minute))
		status, body, again := loadVended(l, "alice", branch, "t1", "/credentials")
		if status != http.StatusOK {
			t.Fatalf("credentials: %d %s", status, body)
		}
		if k := again.keys(t); k.AccessKeyID != old.AccessKeyID || !again.expiresAt(t).Equal(oldExp) {
			t.Fatalf("got %s expiring %s, want the cached %s expiring %s", k.AccessKeyID, again.expiresAt(t), old.AccessKeyID, oldExp)
		}
	})

	// Where Java and iceberg-go refresh: five minutes before the expiry.
	skew.Store(int64(time.Until(oldExp) - 5*time.Minute + time.Second))
	status, body, refreshed := loadVended(l, "alice", branch, "t1", "/credentials")
	if status != http.StatusOK {
		t.Fatalf("credentials at the clients' refresh time: %d %s", status, body)
	}
	fresh := refreshed.keys(t)
	if fresh.AccessKeyID == old.AccessKeyID || fresh.SessionToken == old.SessionToken {
		t.Fatal("the refresh endpoint answered the credentials about to expire")
	}
	// Only floe's clock moved: MinIO vends them within the same second
	// as the first, for the same lifetime.
	if refreshed.expiresAt(t).Before(oldExp) {
		t.Fatalf("refreshed credentials expire at %s, before the old ones' %s", refreshed.expiresAt(t), oldExp)
	}
	if refreshed.creds[0].Prefix != t1 {
		t.Errorf("refreshed credential's prefix %q, want %q", refreshed.creds[0].Prefix, t1)
	}

	t.Run("loads after the refresh hand out the refreshed credentials", func(t *testing.T) {
		l := l.with(t)
		// Back to MinIO's time, where the refreshed credentials are
		// new: with floe's clock still ahead they would look ten
		// minutes old already, and be vended anew.
		skew.Store(0)
		status, body, loaded := loadVended(l, "alice", branch, "t1", "")
		if status != http.StatusOK {
			t.Fatalf("load t1: %d %s", status, body)
		}
		if k := loaded.keys(t); k.AccessKeyID != fresh.AccessKeyID {
			t.Fatalf("load handed %s, the refresh %s", k.AccessKeyID, fresh.AccessKeyID)
		}
	})

	t.Run("refreshed credentials write the table and are as scoped as the first", func(t *testing.T) {
		data := l.uriOf(t1 + "/data/refreshed.parquet")
		if s, out := s3With(t, fresh, http.MethodPut, data, payload); s != 200 {
			t.Fatalf("put: %d %s", s, out)
		}
		if s, out := s3With(t, fresh, http.MethodGet, data, nil); s != 200 || string(out) != string(payload) {
			t.Fatalf("get: %d %q", s, out)
		}
		for _, tc := range []struct{ name, method, uri string }{
			{"delete its own file", http.MethodDelete, data},
			{"read another table's file", http.MethodGet, victim},
			{"overwrite another table's file", http.MethodPut, victim},
			{"delete another table's file", http.MethodDelete, victim},
			{"list the warehouse", http.MethodGet, l.endpoint + "/" + l.bucket + "?list-type=2&prefix=wh%2F"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var body []byte
				if tc.method == http.MethodPut {
					body = []byte("x")
				}
				if s, out := s3With(t, fresh, tc.method, tc.uri, body); s != http.StatusForbidden {
					t.Fatalf("%s %s: %d %s, want 403", tc.method, tc.uri, s, out)
				}
			})
		}
		l := l.with(t)
		l.s3(http.MethodHead, data, nil, 200)
		if got := l.s3(http.MethodGet, victim, nil, 200); string(got) != string(payload) {
			t.Fatalf("t2's file now holds %q", got)
		}
	})

	t.Run("a reader's refreshed credentials stay read-only", func(t *testing.T) {
		l := l.with(t)
		status, body, bob := loadVended(l, "bob", branch, "t1", "/credentials")
		if status != http.StatusOK {
			t.Fatalf("bob's credentials: %d %s", status, body)
		}
		keys := bob.keys(t)
		if s, _ := s3With(t, keys, http.MethodGet, l.uriOf(t1+"/data/refreshed.parquet"), nil); s != 200 {
			t.Fatalf("bob reads: %d", s)
		}
		if s, out := s3With(t, keys, http.MethodPut, l.uriOf(t1+"/data/bob.parquet"), payload); s != http.StatusForbidden {
			t.Fatalf("bob writes: %d %s", s, out)
		}
	})
}
