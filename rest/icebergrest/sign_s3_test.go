package icebergrest_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/iceberg/s3sign"
	"github.com/floe-catalog/floe/policy/authn"
	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/versionstore"
)

// s3EndpointEnv names the S3-compatible server the remote signing tests
// run against, and the key variables the credentials it accepts. They
// must be a server that checks signatures: moto does only with
// INITIAL_NO_AUTH_ACTION_COUNT set and keys of an IAM user it made
// (conformance/s3/run.sh starts one so), and the test proves it does by
// sending it a forged signature. The tests skip without an endpoint.
const (
	s3EndpointEnv  = "FLOE_TEST_S3_SIGNING_ENDPOINT"
	s3KeyIDEnv     = "FLOE_TEST_S3_ACCESS_KEY_ID"
	s3SecretKeyEnv = "FLOE_TEST_S3_SECRET_ACCESS_KEY"
)

// signLake is a secured floe (static tokens, the default policy) whose
// warehouse "lake" is s3://<bucket>/wh on a real S3 API, signing requests
// with floe's keys: alice owns users/alice/dev, bob owns nothing, tag v1
// is on alice's branch.
type signLake struct {
	t        testing.TB
	s        *testserver.Server
	endpoint string
	bucket   string
	// keyID and secret are the S3 server's credentials: floe's.
	keyID, secret string
	// logs holds the server's logs (a signing lake's; nil otherwise).
	logs *lockedBuffer
	// authSkew moves the clock floe checks tokens' expiry by.
	authSkew *atomic.Int64
}

// lockedBuffer is a bytes.Buffer safe for the server's concurrent logging.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newSignLake starts a signing lake under the default policy; tweaks
// adjust its warehouse before the server starts.
func newSignLake(t testing.TB, tweaks ...func(*icebergrest.Warehouse)) *signLake {
	t.Helper()
	return newSignLakeWith(t, "", tweaks...)
}

// newSignLakeWith starts a signing lake whose policy is the bundle rego
// ("" for the default policy).
func newSignLakeWith(t testing.TB, rego string, tweaks ...func(*icebergrest.Warehouse)) *signLake {
	t.Helper()
	endpoint := os.Getenv(s3EndpointEnv)
	if endpoint == "" {
		t.Skipf("set %s to an S3-compatible endpoint that checks signatures (moto) to run", s3EndpointEnv)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	l := &signLake{t: t, endpoint: endpoint, bucket: "floe-sign-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		keyID: os.Getenv(s3KeyIDEnv), secret: os.Getenv(s3SecretKeyEnv)}
	if l.keyID == "" || l.secret == "" {
		t.Fatalf("%s needs %s and %s", s3EndpointEnv, s3KeyIDEnv, s3SecretKeyEnv)
	}
	l.s3(http.MethodPut, endpoint+"/"+l.bucket, nil, http.StatusOK)
	l.s3(http.MethodPut, endpoint+"/"+l.bucket+"-other", nil, http.StatusOK)

	var tokens []map[string]any
	for _, p := range []struct {
		id     string
		groups []string
	}{{"alice", nil}, {"bob", nil}} {
		tokens = append(tokens, map[string]any{"sha256": authn.HashSecret("tok-" + p.id), "principal": p.id, "groups": p.groups})
	}
	b, err := json.Marshal(map[string]any{"tokens": tokens})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// An OAuth client for alice, whose tokens expire (the static ones
	// do not).
	clients, err := json.Marshal(map[string]any{"clients": []map[string]any{
		{"client_id": "alice-engine", "secret_sha256": authn.HashSecret("alice-engine-secret"), "principal": "alice"}}})
	if err != nil {
		t.Fatal(err)
	}
	clientsFile := filepath.Join(dir, "clients.json")
	if err := os.WriteFile(clientsFile, clients, 0o600); err != nil {
		t.Fatal(err)
	}
	popts := &assemble.Policy{}
	if rego != "" {
		file := filepath.Join(dir, "bundle", "floe", "authz", "authz.rego")
		if err := os.MkdirAll(filepath.Dir(file), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(rego), 0o600); err != nil {
			t.Fatal(err)
		}
		popts.Bundle = filepath.Join(dir, "bundle")
	}
	l.logs, l.authSkew = &lockedBuffer{}, &atomic.Int64{}
	opts := icebergtable.S3Options{Endpoint: endpoint, Region: "us-east-1", PathStyle: true, AccessKeyID: l.keyID, SecretAccessKey: l.secret}
	l.s = testserver.Start(t, testserver.Options{
		Logger: slog.New(slog.NewJSONHandler(l.logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Security: &assemble.Security{Authn: assemble.Authn{TokenFile: file,
			OAuth: authn.OAuthConfig{ClientsFile: clientsFile, TokenTTL: time.Hour},
		}, Policy: popts},
		Deps: func(d *assemble.Deps) {
			d.AuthnNow = func() time.Time { return time.Now().Add(time.Duration(l.authSkew.Load())) }
		},
		Iceberg: func(d *icebergrest.Deps) {
			wh := icebergrest.Warehouse{
				Name: "lake", Location: "s3://" + l.bucket + "/wh",
				IOProperties: opts.IOProperties(), ClientConfig: opts.ClientConfig(),
				RemoteSigning: &icebergrest.RemoteSigning{
					Credentials: s3sign.Credentials{AccessKeyID: l.keyID, SecretAccessKey: l.secret, Region: "us-east-1"},
					Endpoint:    s3sign.Endpoint{URL: endpoint},
				},
			}
			for _, tweak := range tweaks {
				tweak(&wh)
			}
			d.Warehouses = []icebergrest.Warehouse{wh}
		},
	})
	main, err := l.s.Store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.s.Store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: "users/alice/dev", Type: versionstore.Branch, Target: main.Head}); err != nil {
		t.Fatal(err)
	}
	return l
}

// call sends a catalog request as who ("" sends no token, anything not a
// principal a forged one) and returns the status, the body and the
// headers.
func (l *signLake) call(who, method, path string, body any, headers ...string) (int, []byte, http.Header) {
	l.t.Helper()
	var rd io.Reader
	if body != nil {
		data, ok := body.(string)
		if !ok {
			b, err := json.Marshal(body)
			if err != nil {
				l.t.Fatal(err)
			}
			data = string(b)
		}
		rd = strings.NewReader(data)
	}
	req, err := http.NewRequestWithContext(l.t.Context(), method, l.s.URL+path, rd)
	if err != nil {
		l.t.Fatal(err)
	}
	if who != "" {
		req.Header.Set("Authorization", "Bearer tok-"+who)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		l.t.Fatal(err)
	}
	return resp.StatusCode, data, resp.Header
}

// s3 sends a request to the S3 server signed with the test's own keys
// (for setup and for looking behind floe's back) and checks its status.
func (l *signLake) s3(method, uri string, body []byte, want int) []byte {
	l.t.Helper()
	return l.s3As(l.keyID, l.secret, method, uri, body, want)
}

func (l *signLake) s3As(keyID, secret, method, uri string, body []byte, want int) []byte {
	l.t.Helper()
	req, err := http.NewRequestWithContext(l.t.Context(), method, uri, bytes.NewReader(body))
	if err != nil {
		l.t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	err = v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).SignHTTP(l.t.Context(),
		aws.Credentials{AccessKeyID: keyID, SecretAccessKey: secret}, req, hash, "s3", "us-east-1", time.Now())
	if err != nil {
		l.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		l.t.Fatalf("%s %s: S3 status %d, want %d: %s", method, uri, resp.StatusCode, want, data)
	}
	return data
}

// createTable creates table ns.name on the prefix as alice, asking for
// remote signing, and returns its location and config.
func (l *signLake) createTable(prefix, name string) (string, map[string]string) {
	l.t.Helper()
	status, body, _ := l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(prefix)+"/namespaces/ns/tables", createTableBody(name, ""),
		"X-Iceberg-Access-Delegation", "vended-credentials,remote-signing")
	if status != http.StatusOK {
		l.t.Fatalf("create %s: %d %s", name, status, body)
	}
	var res struct {
		Metadata struct {
			Location string `json:"location"`
		} `json:"metadata"`
		Config map[string]string `json:"config"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		l.t.Fatal(err)
	}
	return res.Metadata.Location, res.Config
}

// uriOf is the path-style S3 URI of an s3:// location.
func (l *signLake) uriOf(loc string) string {
	return l.endpoint + "/" + strings.TrimPrefix(loc, "s3://")
}

// signed asks floe to sign (method, uri) at the sign endpoint as who,
// then, if floe signed, sends the request to S3 with the answer's
// headers and returns S3's status and body; refused is floe's status
// when it did not sign.
func (l *signLake) signed(who, endpoint, method, uri string, body []byte, headers map[string][]string) (floe, s3 int, out []byte) {
	l.t.Helper()
	if headers == nil {
		headers = map[string][]string{}
	}
	status, resp, _ := l.call(who, http.MethodPost, "/"+endpoint, map[string]any{
		"region": "us-east-1", "uri": uri, "method": method, "headers": headers,
	})
	if status != http.StatusOK {
		return status, 0, resp
	}
	var res struct {
		URI     string              `json:"uri"`
		Headers map[string][]string `json:"headers"`
	}
	if err := json.Unmarshal(resp, &res); err != nil {
		l.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(l.t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, res.URI, bytes.NewReader(body))
	if err != nil {
		l.t.Fatal(err)
	}
	for k, vs := range headers {
		req.Header[k] = vs
	}
	for k, vs := range res.Headers {
		req.Header[k] = vs
	}
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	defer sresp.Body.Close()
	out, _ = io.ReadAll(sresp.Body)
	return status, sresp.StatusCode, out
}

// metric returns the value of one series of the server's /metrics.
func (l *signLake) metric(series string) float64 {
	l.t.Helper()
	status, body, _ := l.call("", http.MethodGet, "/metrics", nil)
	if status != http.StatusOK {
		l.t.Fatalf("/metrics: %d", status)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				l.t.Fatal(err)
			}
			return f
		}
	}
	return 0
}

// TestS3RemoteSigning drives floe's signer with real S3 requests that a
// signature-checking S3 server (moto) answers: what floe signs goes
// through, and what it refuses is never signed.
func TestS3RemoteSigning(t *testing.T) {
	l := newSignLake(t)
	// Else every test below would pass with no signature at all.
	l.s3As(l.keyID, "forged-"+l.secret, http.MethodPut, l.endpoint+"/"+l.bucket+"/probe", []byte("x"), http.StatusForbidden)
	const branch = "lake@users/alice/dev"
	if status, body, _ := l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(branch)+"/namespaces", `{"namespace":["ns"]}`); status != http.StatusOK {
		t.Fatalf("create namespace: %d %s", status, body)
	}
	t1, cfg := l.createTable(branch, "t1")
	t2, _ := l.createTable(branch, "t2")
	endpoint := cfg["signer.endpoint"]
	for k, want := range map[string]string{
		"s3.remote-signing-enabled": "true", "s3.signer.endpoint": endpoint, "s3.signer": "S3V4RestSigner",
		"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO", "s3.endpoint": l.endpoint,
	} {
		if cfg[k] != want {
			t.Errorf("table config %s = %q, want %q (config %v)", k, cfg[k], want, cfg)
		}
	}
	if want := "v1/lake@users%2Falice%2Fdev/namespaces/ns/tables/t1/sign"; endpoint != want {
		t.Fatalf("signer.endpoint %q, want %q", endpoint, want)
	}
	if _, ok := cfg["s3.access-key-id"]; ok {
		t.Fatal("signing config hands out floe's keys")
	}
	t2endpoint := strings.Replace(endpoint, "/t1/", "/t2/", 1)
	data := l.uriOf(t1 + "/data/00000-0-a.parquet")
	payload := []byte("parquet bytes")

	t.Run("writer puts, reads, lists and uploads in parts", func(t *testing.T) {
		if f, s, out := l.signed("alice", endpoint, http.MethodPut, data+"?x-id=PutObject", payload, nil); f != 200 || s != 200 {
			t.Fatalf("signed put: floe %d, S3 %d: %s", f, s, out)
		}
		if f, s, out := l.signed("alice", endpoint, http.MethodGet, data, nil, map[string][]string{"Range": {"bytes=0-6"}}); f != 200 || s != 206 || string(out) != "parquet" {
			t.Fatalf("signed ranged get: floe %d, S3 %d: %q", f, s, out)
		}
		if f, s, _ := l.signed("alice", endpoint, http.MethodHead, data, nil, nil); f != 200 || s != 200 {
			t.Fatalf("signed head: floe %d, S3 %d", f, s)
		}
		list := l.endpoint + "/" + l.bucket + "?list-type=2&prefix=" + url.QueryEscape(strings.TrimPrefix(t1, "s3://"+l.bucket+"/")+"/")
		if f, s, out := l.signed("alice", endpoint, http.MethodGet, list, nil, nil); f != 200 || s != 200 || !strings.Contains(string(out), "00000-0-a.parquet") {
			t.Fatalf("signed listing: floe %d, S3 %d: %s", f, s, out)
		}
		big := l.uriOf(t1 + "/data/00001-0-b.parquet")
		f, s, out := l.signed("alice", endpoint, http.MethodPost, big+"?uploads", nil, nil)
		if f != 200 || s != 200 {
			t.Fatalf("create multipart upload: floe %d, S3 %d: %s", f, s, out)
		}
		id := between(string(out), "<UploadId>", "</UploadId>")
		part := l.uriOf(t1+"/data/00001-0-b.parquet") + "?partNumber=1&uploadId=" + url.QueryEscape(id)
		req := map[string][]string{}
		if f, s, out = l.signed("alice", endpoint, http.MethodPut, part, payload, req); f != 200 || s != 200 {
			t.Fatalf("upload part: floe %d, S3 %d: %s", f, s, out)
		}
		complete := `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"` + md5hex(payload) + `"</ETag></Part></CompleteMultipartUpload>`
		if f, s, out = l.signed("alice", endpoint, http.MethodPost, big+"?uploadId="+url.QueryEscape(id), []byte(complete), nil); f != 200 || s != 200 {
			t.Fatalf("complete multipart upload: floe %d, S3 %d: %s", f, s, out)
		}
		if got := l.s3(http.MethodGet, big, nil, 200); string(got) != string(payload) {
			t.Fatalf("multipart object %q", got)
		}
	})

	t.Run("refused, nothing signed", func(t *testing.T) {
		before := l.metric(`floe_storage_sign_refusals_total{reason="deletion"}`)
		for _, tc := range []struct {
			name, who, endpoint, method, uri string
			headers                          map[string][]string
			status                           int
			typ, msg                         string
		}{
			{"delete", "alice", endpoint, http.MethodDelete, data, nil, 403, "ForbiddenException", "never signs a deletion"},
			{"delete objects", "alice", endpoint, http.MethodPost, l.endpoint + "/" + l.bucket + "?delete", nil, 403, "ForbiddenException", "never signs a deletion"},
			{"abort multipart", "alice", endpoint, http.MethodDelete, data + "?uploadId=x", nil, 403, "ForbiddenException", "never signs a deletion"},
			{"another table's key", "alice", endpoint, http.MethodGet, l.uriOf(t2 + "/metadata/x.avro"), nil, 403, "ForbiddenException", "is not a file of table ns.t1"},
			{"a key beside the table", "alice", endpoint, http.MethodPut, l.uriOf(t1 + "-evil/data/f"), nil, 403, "ForbiddenException", "is not a file of table ns.t1"},
			{"a listing of the warehouse", "alice", endpoint, http.MethodGet, l.endpoint + "/" + l.bucket + "?list-type=2&prefix=wh%2F", nil, 403, "ForbiddenException", "is not a file of table"},
			{"another bucket", "alice", endpoint, http.MethodGet, l.endpoint + "/" + l.bucket + "-other/wh/ns/t1/f", nil, 403, "ForbiddenException", "is not warehouse lake's"},
			{"another host", "alice", endpoint, http.MethodGet, "http://127.0.0.2:1/" + l.bucket + "/wh/f", nil, 403, "ForbiddenException", "not on the warehouse's object store"},
			{"a copy", "alice", endpoint, http.MethodPut, data + "-copy", map[string][]string{"x-amz-copy-source": {l.bucket + "/" + strings.TrimPrefix(t2, "s3://"+l.bucket+"/") + "/f"}}, 403, "ForbiddenException", "does not sign copies"},
			{"a write on another's branch", "bob", endpoint, http.MethodPut, data + "-bob", nil, 403, "ForbiddenException", "no rule allows storage.write on branch users/alice/dev"},
			{"a forged token", "mallory", endpoint, http.MethodGet, data, nil, 401, "NotAuthorizedException", "Not authorized"},
			{"no token", "", endpoint, http.MethodGet, data, nil, 401, "NotAuthorizedException", "Not authorized"},
			{"a table that does not exist", "alice", strings.Replace(endpoint, "/t1/", "/nope/", 1), http.MethodGet, data, nil, 404, "NoSuchTableException", "Table does not exist"},
			{"the legacy endpoint", "alice", "v1/aws/s3/sign", http.MethodGet, data, nil, 400, "BadRequestException", "floe signs storage requests per table"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f, _, out := l.signed(tc.who, tc.endpoint, tc.method, tc.uri, nil, tc.headers)
				checkError(t, response{status: f, body: out}, tc.status, tc.typ, "…"+tc.msg)
			})
		}
		// Nothing was deleted, and the refusals are counted.
		l.s3(http.MethodHead, data, nil, 200)
		if after := l.metric(`floe_storage_sign_refusals_total{reason="deletion"}`); after-before != 3 {
			t.Errorf("deletion refusals went from %v to %v, want 3 more", before, after)
		}
		if n := l.metric(`floe_storage_sign_refusals_total{reason="outside-table"}`); n < 3 {
			t.Errorf("outside-table refusals %v, want at least 3", n)
		}
		if n := l.metric(`floe_storage_sign_refusals_total{reason="policy"}`); n < 1 {
			t.Errorf("policy refusals %v, want at least 1", n)
		}
	})

	t.Run("refusals are logged", func(t *testing.T) {
		// The three refused deletions: DELETE of the file, of an upload,
		// and DeleteObjects (a POST).
		var deletes int
		for line := range strings.Lines(l.logs.String()) {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "storage request not signed" || rec["reason"] != "deletion" {
				continue
			}
			if rec["level"] != "WARN" || rec["principal"] != "alice" || rec["table"] != "ns.t1" || rec["request_id"] == nil ||
				(rec["method"] != http.MethodDelete && rec["method"] != http.MethodPost) || !strings.Contains(fmt.Sprint(rec["uri"]), l.bucket) {
				t.Errorf("refusal logged as %v", rec)
			}
			if rec["method"] == http.MethodDelete && strings.HasSuffix(fmt.Sprint(rec["uri"]), "/data/00000-0-a.parquet") {
				deletes++
			}
		}
		if deletes != 2 {
			t.Fatalf("%d refused DELETEs of the data file logged, want 2 (the file, its upload):\n%s", deletes, l.logs.String())
		}
	})

	t.Run("an expired token is refused, nothing signed", func(t *testing.T) {
		l := l.with(t)
		form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"alice-engine"}, "client_secret": {"alice-engine-secret"}}
		status, body, _ := l.call("", http.MethodPost, "/v1/oauth/tokens", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		if err := json.Unmarshal(body, &tok); status != http.StatusOK || err != nil || tok.AccessToken == "" {
			t.Fatalf("token: %d %v %s", status, err, body)
		}
		sign := func() (int, []byte) {
			status, body, _ := l.call("", http.MethodPost, "/"+endpoint, map[string]any{
				"region": "us-east-1", "uri": data, "method": http.MethodGet, "headers": map[string][]string{},
			}, "Authorization", "Bearer "+tok.AccessToken)
			return status, body
		}
		if status, body := sign(); status != http.StatusOK || !strings.Contains(string(body), "Authorization") {
			t.Fatalf("a sign request with the fresh token: %d %s", status, body)
		}
		l.authSkew.Store(int64(time.Hour + time.Minute)) // past the token's hour and the leeway
		defer l.authSkew.Store(0)
		status, body = sign()
		checkError(t, response{status: status, body: body}, http.StatusUnauthorized, "NotAuthorizedException", "Not authorized")
		if strings.Contains(string(body), "AWS4-HMAC-SHA256") {
			t.Fatalf("the refusal carries a signature: %s", body)
		}
	})

	t.Run("readers read, tags are read-only", func(t *testing.T) {
		if f, s, out := l.signed("bob", endpoint, http.MethodGet, data, nil, nil); f != 200 || s != 200 || string(out) != string(payload) {
			t.Fatalf("bob's signed get: floe %d, S3 %d: %q", f, s, out)
		}
		ref, err := l.s.Store.GetRef("users/alice/dev")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.s.Store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: "v1", Type: versionstore.Tag, Target: ref.Head}); err != nil {
			t.Fatal(err)
		}
		onTag := strings.Replace(endpoint, "lake@users%2Falice%2Fdev", "lake@v1", 1)
		if f, s, _ := l.signed("alice", onTag, http.MethodGet, data, nil, nil); f != 200 || s != 200 {
			t.Fatalf("signed get on the tag: floe %d, S3 %d", f, s)
		}
		f, _, out := l.signed("alice", onTag, http.MethodPut, data+"-tag", nil, nil)
		checkError(t, response{status: f, body: out}, 403, "ForbiddenException", "…read-only: it names a tag")
		// t2's own endpoint signs t2's files.
		if f, _, out := l.signed("alice", t2endpoint, http.MethodPut, l.uriOf(t2+"/data/f.parquet"), payload, nil); f != 200 {
			t.Fatalf("t2's endpoint refused t2's file: %d %s", f, out)
		}
	})

	t.Run("loadTable hands out signing only when asked", func(t *testing.T) {
		status, body, _ := l.call("alice", http.MethodGet, "/v1/"+url.PathEscape(branch)+"/namespaces/ns/tables/t1", nil)
		if status != 200 || strings.Contains(string(body), "signer") {
			t.Fatalf("load without delegation: %d, config %s", status, body[bytes.LastIndex(body, []byte(`"config"`)):])
		}
		status, body, _ = l.call("alice", http.MethodGet, "/v1/"+url.PathEscape(branch)+"/namespaces/ns/tables/t1", nil,
			"X-Iceberg-Access-Delegation", "remote-signing")
		if status != 200 || !strings.Contains(string(body), `"s3.signer.endpoint":"`+endpoint+`"`) {
			t.Fatalf("load with delegation: %d, config %s", status, body[bytes.LastIndex(body, []byte(`"config"`)):])
		}
	})

	t.Run("Java 1.12 derives the sign route itself", func(t *testing.T) {
		// Iceberg 1.12 computes rest.remote-signing.endpoint (this same
		// route) and warns that signer.endpoint is deprecated; 1.11 and
		// other clients still get it.
		for _, tc := range []struct {
			version string
			want    bool
		}{
			{"Apache Iceberg 1.12.0 (commit 0123abc)", false},
			{"Apache Iceberg 2.0.0-SNAPSHOT (commit 0123abc)", false},
			{"Apache Iceberg 1.11.0 (commit 0123abc)", true},
			{"PyIceberg 0.12", true},
			{"", true},
		} {
			status, body, _ := l.call("alice", http.MethodGet, "/v1/"+url.PathEscape(branch)+"/namespaces/ns/tables/t1", nil,
				"X-Iceberg-Access-Delegation", "remote-signing", "X-Client-Version", tc.version)
			cfg := configOf(t, status, body)
			if _, got := cfg["signer.endpoint"]; got != tc.want || cfg["s3.signer.endpoint"] != endpoint || cfg["s3.remote-signing-enabled"] != "true" {
				t.Errorf("client %q: config %v, want signer.endpoint %v", tc.version, cfg, tc.want)
			}
		}
	})

	t.Run("registerTable answers with the signing config", func(t *testing.T) {
		status, body, _ := l.call("alice", http.MethodGet, "/v1/"+url.PathEscape(branch)+"/namespaces/ns/tables/t2", nil)
		var loaded struct {
			MetadataLocation string `json:"metadata-location"`
		}
		if err := json.Unmarshal(body, &loaded); status != 200 || err != nil {
			t.Fatalf("load t2: %d %v %s", status, err, body)
		}
		register := map[string]any{"name": "t3", "metadata-location": loaded.MetadataLocation}
		status, body, _ = l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(branch)+"/namespaces/ns/register", register,
			"X-Iceberg-Access-Delegation", "remote-signing")
		cfg := configOf(t, status, body)
		want := strings.Replace(endpoint, "/t1/", "/t3/", 1)
		if cfg["s3.signer.endpoint"] != want || cfg["signer.endpoint"] != want || cfg["s3.remote-signing-enabled"] != "true" {
			t.Fatalf("register with delegation: config %v, want the signer at %s", cfg, want)
		}
		if _, ok := cfg["s3.access-key-id"]; ok {
			t.Fatal("register hands out floe's keys")
		}
		// t3's route signs its files (t2's location, which t3 shares).
		if f, s, out := l.signed("alice", want, http.MethodGet, l.uriOf(t2+"/data/f.parquet"), nil, nil); f != 200 || s != 200 {
			t.Fatalf("t3's signed get: floe %d, S3 %d: %s", f, s, out)
		}
		// Without delegation, no signer.
		register["name"] = "t4"
		status, body, _ = l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(branch)+"/namespaces/ns/register", register)
		if cfg := configOf(t, status, body); cfg["s3.remote-signing-enabled"] != "" {
			t.Fatalf("register without delegation: config %v", cfg)
		}
	})
}

// configOf is the config of a LoadTableResult answered with status 200.
func configOf(t *testing.T, status int, body []byte) map[string]string {
	t.Helper()
	var res struct {
		Config map[string]string `json:"config"`
	}
	if err := json.Unmarshal(body, &res); status != http.StatusOK || err != nil {
		t.Fatalf("status %d, %v: %s", status, err, body)
	}
	return res.Config
}

func between(s, open, close string) string {
	_, rest, _ := strings.Cut(s, open)
	v, _, _ := strings.Cut(rest, close)
	return v
}

func md5hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// BenchmarkS3SignEndpoint measures one sign request end to end through
// floe's server (HTTP on loopback, token authentication, the default
// policy's read and storage.read decisions, the table's metadata from the
// cache, the file scope, SigV4), as an engine's GET of a data file asks
// it; the S3 request itself is not sent.
func BenchmarkS3SignEndpoint(b *testing.B) {
	l := newSignLake(b)
	const branch = "lake@users/alice/dev"
	if status, body, _ := l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(branch)+"/namespaces", `{"namespace":["ns"]}`); status != http.StatusOK {
		b.Fatalf("create namespace: %d %s", status, body)
	}
	loc, cfg := l.createTable(branch, "t1")
	body, err := json.Marshal(map[string]any{"region": "us-east-1", "method": "GET", "uri": l.uriOf(loc + "/data/00000-0-a.parquet"),
		"headers": map[string][]string{"Range": {"bytes=0-1048575"}, "User-Agent": {"aws-sdk-java/2.x"}, "amz-sdk-invocation-id": {"5d1c"}}})
	if err != nil {
		b.Fatal(err)
	}
	path := l.s.URL + "/" + cfg["signer.endpoint"]
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, err := http.NewRequestWithContext(b.Context(), http.MethodPost, path, bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			req.Header.Set("Authorization", "Bearer tok-alice")
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("sign: %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "signatures/s")
}
