package icebergo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/iceberg/s3vend"
	"github.com/floe-catalog/floe/rest/icebergrest"
)

// vendExpiryEnv turns on TestS3VendedCredentialsOutliveExpiry, which waits
// for real credentials to expire: 15 minutes and more, the shortest
// lifetime STS (AWS's and MinIO's) vends.
const vendExpiryEnv = "FLOE_TEST_VEND_EXPIRY"

// startVendingFloe starts floe with warehouse "lake" on a new bucket of
// m, vending credentials of the shortest lifetime to whoever asks; the
// bucket's name.
func startVendingFloe(t *testing.T, m minioS3) (*floeServer, string) {
	t.Helper()
	bucket := "floe-icebergo-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if s := m.do(t, http.MethodPut, bucket); s != http.StatusOK {
		t.Fatalf("create bucket: %d", s)
	}
	// assemble.Build builds the STS client from these settings.
	sts := s3vend.Config{RoleARN: "arn:aws:iam::000000000000:role/floe-vend", Endpoint: m.endpoint,
		Region: "us-east-1", Duration: s3vend.MinDuration, AccessKeyID: m.keys.AccessKeyID, SecretAccessKey: m.keys.SecretAccessKey}
	opts := icebergtable.S3Options{Endpoint: m.endpoint, Region: "us-east-1", PathStyle: true, AccessKeyID: m.keys.AccessKeyID, SecretAccessKey: m.keys.SecretAccessKey}
	f := startFloe(t, func(o *testserver.Options) {
		o.Iceberg = func(d *icebergrest.Deps) {
			d.Warehouses = []icebergrest.Warehouse{{
				Name: "lake", Location: "s3://" + bucket + "/wh",
				IOProperties: opts.IOProperties(), ClientConfig: opts.ClientConfig(),
				VendedCredentials: &icebergrest.VendedCredentials{STS: sts},
			}}
		}
	})
	return f, bucket
}

// storageCredential is one entry of a LoadTableResult's or a
// LoadCredentialsResponse's storage-credentials: its keys and expiry.
type storageCredential struct {
	keys    aws.Credentials
	expires time.Time
}

// vendedAt asks floe (GET path, asking for vended credentials) for the
// one storage credential of its answer.
func (f *floeServer) vendedAt(t *testing.T, path string) storageCredential {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+f.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Iceberg-Access-Delegation", "vended-credentials")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var res struct {
		Creds []struct {
			Config map[string]string `json:"config"`
		} `json:"storage-credentials"`
	}
	if err := json.Unmarshal(body, &res); resp.StatusCode != http.StatusOK || err != nil || len(res.Creds) != 1 {
		t.Fatalf("GET %s: %d %v %s", path, resp.StatusCode, err, body)
	}
	c := res.Creds[0].Config
	ms, err := strconv.ParseInt(c["s3.session-token-expires-at-ms"], 10, 64)
	if err != nil {
		t.Fatalf("expiry: %v", err)
	}
	return storageCredential{
		keys:    aws.Credentials{AccessKeyID: c["s3.access-key-id"], SecretAccessKey: c["s3.secret-access-key"], SessionToken: c["s3.session-token"]},
		expires: time.UnixMilli(ms),
	}
}

// doWith sends one S3 request to s3://bucket/key (loc) signed with keys;
// its status and body.
func (m minioS3) doWith(t *testing.T, keys aws.Credentials, method, loc string, body []byte) (int, string) {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, m.endpoint+"/"+u.Host+u.EscapedPath(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).SignHTTP(t.Context(), keys, req, hash, "s3", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// sleepUntil waits until at, or fails when the test is cancelled first.
func sleepUntil(t *testing.T, at time.Time, why string) {
	t.Helper()
	d := time.Until(at)
	if d <= 0 {
		return
	}
	t.Logf("%s: waiting %s", why, d.Round(time.Second))
	select {
	case <-time.After(d):
	case <-t.Context().Done():
		t.Fatal("cancelled while waiting")
	}
}

// refreshFS asks h for its FileIO with the test's context: the client
// refreshes its credentials there if they are due.
func refreshFS(t *testing.T, h *table.Table) {
	t.Helper()
	if _, err := h.FS(t.Context()); err != nil {
		t.Fatalf("%v's FileIO: %v", h.Identifier(), err)
	}
}

// TestS3VendedCredentialsOutliveExpiry waits for vended credentials to
// really expire at MinIO (15 minutes, STS's shortest lifetime, so it runs
// only with FLOE_TEST_VEND_EXPIRY=1 and -timeout 30m): the expired
// credentials are refused by MinIO, credentials from the refresh endpoint
// keep working within the same scope (no deletion, no other table), and
// iceberg-go table handles loaded before the expiry keep reading and
// writing because the client refreshed them from /credentials (it does
// five minutes before the announced expiry), never reloading the table.
func TestS3VendedCredentialsOutliveExpiry(t *testing.T) {
	if os.Getenv(vendExpiryEnv) != "1" {
		t.Skipf("waits 16 minutes for credentials to expire: set %s=1 (and -timeout 30m) to run", vendExpiryEnv)
	}
	m := minio(t)
	f, _ := startVendingFloe(t, m)
	ctx := t.Context()
	cat := f.catalog(t, "lake")
	if err := cat.CreateNamespace(ctx, table.Identifier{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"ns", "events"}
	tbl := appendRows(t, createTable(t, cat, ident), []row{{1, "eu", 1}})
	other := appendRows(t, createTable(t, cat, table.Identifier{"ns", "other"}), []row{{9, "xx", 9}})
	tablePath := "/v1/lake/namespaces/ns/tables/events"
	first := f.vendedAt(t, tablePath)
	t.Logf("first credentials %s expire at %s", first.keys.AccessKeyID, first.expires.Format(time.RFC3339))

	// Two handles loaded now: busy is used at the clients' refresh
	// time, idle only after the first credentials expired.
	busy, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []*table.Table{busy, idle} {
		if got := ids(t, h, 0); !slices.Equal(got, []int64{1}) {
			t.Fatalf("reads %v", got)
		}
	}
	data := dataFiles(t, tbl)[0]
	otherData := dataFiles(t, other)[0]
	refreshes := func() float64 {
		return f.metrics(t)[`floe_http_requests_total{code="200",method="GET",route="/v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials"}`]
	}
	before := refreshes()

	// Past floe's reuse horizon (half the lifetime) and inside the
	// clients' refresh window (the last five minutes).
	sleepUntil(t, first.expires.Add(-5*time.Minute+20*time.Second), "until the clients' refresh time")
	second := f.vendedAt(t, tablePath+"/credentials")
	if second.keys.AccessKeyID == first.keys.AccessKeyID || !second.expires.After(first.expires) {
		t.Fatalf("the refresh endpoint answered %s expiring %s; the first were %s expiring %s",
			second.keys.AccessKeyID, second.expires, first.keys.AccessKeyID, first.expires)
	}
	if s, out := m.doWith(t, first.keys, http.MethodGet, data, nil); s != http.StatusOK {
		t.Fatalf("the first credentials, not yet expired: %d %s", s, out)
	}
	// iceberg-go 0.7 binds a FileIO to the context it was built with
	// (blobfs keeps it for every read and write) and its refresher
	// rebuilds the FileIO with the context of whichever call found the
	// credentials due: inside a scan or an append that is an errgroup's,
	// cancelled when that step ends, and every later read fails "context
	// canceled" (seen here: a scan that refreshed failed on its data file).
	// Asking for the FileIO with the test's context first makes the
	// refresh happen there; it is still the client's own refresh.
	refreshFS(t, busy)
	busy = appendRows(t, busy, []row{{2, "us", 2}})

	sleepUntil(t, first.expires.Add(30*time.Second), "until the first credentials expired")
	refreshFS(t, idle)
	t.Run("expired credentials are refused", func(t *testing.T) {
		// MinIO answers 403 InvalidAccessKeyId, AWS 400 ExpiredToken.
		refused := func(s int, out string) bool {
			return (s == http.StatusForbidden || s == http.StatusBadRequest) &&
				(strings.Contains(out, "InvalidAccessKeyId") || strings.Contains(out, "ExpiredToken"))
		}
		if s, out := m.doWith(t, first.keys, http.MethodGet, data, nil); !refused(s, out) {
			t.Errorf("read with expired credentials: %d %s", s, out)
		}
		late := strings.TrimSuffix(data, ".parquet") + "-late.parquet"
		if s, out := m.doWith(t, first.keys, http.MethodPut, late, []byte("late")); !refused(s, out) {
			t.Errorf("write with expired credentials: %d %s", s, out)
		}
		if m.exists(t, late) {
			t.Error("the expired credentials wrote")
		}
	})
	t.Run("refreshed credentials work, as scoped as the first", func(t *testing.T) {
		if s, out := m.doWith(t, second.keys, http.MethodGet, data, nil); s != http.StatusOK {
			t.Fatalf("read: %d %s", s, out)
		}
		put := strings.TrimSuffix(data, ".parquet") + "-refreshed.parquet"
		if s, out := m.doWith(t, second.keys, http.MethodPut, put, []byte("x")); s != http.StatusOK {
			t.Fatalf("write: %d %s", s, out)
		}
		for _, tc := range []struct{ name, method, loc string }{
			{"delete its own file", http.MethodDelete, data},
			{"read another table", http.MethodGet, otherData},
			{"write another table", http.MethodPut, strings.TrimSuffix(otherData, ".parquet") + "-evil.parquet"},
			{"delete another table's file", http.MethodDelete, otherData},
		} {
			if s, out := m.doWith(t, second.keys, tc.method, tc.loc, nil); s != http.StatusForbidden {
				t.Errorf("%s: %d %s, want 403", tc.name, s, out)
			}
		}
		if !m.exists(t, data) || !m.exists(t, otherData) {
			t.Fatal("a file is gone")
		}
	})
	t.Run("iceberg-go handles loaded before the expiry keep working", func(t *testing.T) {
		if got := ids(t, idle, 0); !slices.Equal(got, []int64{1}) {
			t.Fatalf("idle handle reads %v", got)
		}
		if got := ids(t, busy, 0); !slices.Equal(got, []int64{1, 2}) {
			t.Fatalf("busy handle reads %v", got)
		}
		busy = appendRows(t, busy, []row{{3, "eu", 3}})
		if got := ids(t, busy, 0); !slices.Equal(got, []int64{1, 2, 3}) {
			t.Fatalf("after a write past the expiry: %v", got)
		}
		// Neither handle was reloaded: their credentials came from the
		// refresh endpoint.
		if n := refreshes() - before; n < 3 {
			t.Errorf("%v calls of the refresh endpoint, want the test's own and one per handle at least", n)
		}
	})
}
