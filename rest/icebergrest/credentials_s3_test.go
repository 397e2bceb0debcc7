package icebergrest_test

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/iceberg/s3vend"
	"github.com/floe-catalog/floe/policy/authn"
	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/versionstore"
)

// minioEndpointEnv names the S3-compatible server the tests of vended
// credentials run against, and the keys of its root user. It must enforce
// STS session policies, which moto does not (docs/object-storage.md):
// conformance/s3/run.sh builds and starts MinIO (conformance/s3/minio.sh),
// and the tests prove it enforces them by reading with credentials whose
// policy forbids it. The tests skip without an endpoint.
const (
	minioEndpointEnv  = "FLOE_TEST_MINIO_ENDPOINT"
	minioKeyIDEnv     = "FLOE_TEST_MINIO_ACCESS_KEY_ID"
	minioSecretKeyEnv = "FLOE_TEST_MINIO_SECRET_ACCESS_KEY"
)

// vendRole is the role floe assumes. MinIO answers AssumeRole for the
// user whose keys sign the call (here the root user) and takes the role
// ARN as it is; on AWS it names a role whose trust policy admits floe.
const vendRole = "arn:aws:iam::000000000000:role/floe-vend"

// vendOptions shape a vending lake: the bundle (nil: the default policy),
// the STS endpoint (empty: MinIO's) and the vendor's clock (nil: the
// real one).
type vendOptions struct {
	rego        string
	stsEndpoint string
	now         func() time.Time
	// always vends with every answer, asked or not.
	always bool
}

// newVendLake starts a secured floe whose warehouse "lake" is
// s3://<bucket>/wh on MinIO, vending credentials on request: tokens for
// alice (owns users/alice/dev under the default policy), bob, carol and
// dave; floe's keys are MinIO's root user's.
func newVendLake(t testing.TB, o vendOptions) *signLake {
	t.Helper()
	endpoint := os.Getenv(minioEndpointEnv)
	if endpoint == "" {
		t.Skipf("set %s to a MinIO endpoint (conformance/s3/minio.sh) to run", minioEndpointEnv)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	l := &signLake{t: t, endpoint: endpoint, bucket: "floe-vend-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		keyID: os.Getenv(minioKeyIDEnv), secret: os.Getenv(minioSecretKeyEnv)}
	if l.keyID == "" || l.secret == "" {
		t.Fatalf("%s needs %s and %s", minioEndpointEnv, minioKeyIDEnv, minioSecretKeyEnv)
	}
	l.s3(http.MethodPut, endpoint+"/"+l.bucket, nil, http.StatusOK)

	var tokens []map[string]any
	for _, p := range []string{"alice", "bob", "carol", "dave"} {
		tokens = append(tokens, map[string]any{"sha256": authn.HashSecret("tok-" + p), "principal": p})
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
	popts := &assemble.Policy{}
	if o.rego != "" {
		rego := filepath.Join(dir, "bundle", "floe", "authz", "authz.rego")
		if err := os.MkdirAll(filepath.Dir(rego), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(rego, []byte(o.rego), 0o600); err != nil {
			t.Fatal(err)
		}
		popts.Bundle = filepath.Join(dir, "bundle")
	}
	sts := o.stsEndpoint
	if sts == "" {
		sts = endpoint
	}
	// assemble.Build builds the STS client from these settings, with
	// the test's clock.
	stsCfg := s3vend.Config{RoleARN: vendRole, Endpoint: sts, Region: "us-east-1",
		Duration: s3vend.MinDuration, AccessKeyID: l.keyID, SecretAccessKey: l.secret}
	opts := icebergtable.S3Options{Endpoint: endpoint, Region: "us-east-1", PathStyle: true, AccessKeyID: l.keyID, SecretAccessKey: l.secret}
	l.s = testserver.Start(t, testserver.Options{
		Security: &assemble.Security{Authn: assemble.Authn{TokenFile: file}, Policy: popts},
		Iceberg: func(d *icebergrest.Deps) {
			d.Warehouses = []icebergrest.Warehouse{{
				Name: "lake", Location: "s3://" + l.bucket + "/wh",
				IOProperties: opts.IOProperties(), ClientConfig: opts.ClientConfig(),
				VendedCredentials: &icebergrest.VendedCredentials{STS: stsCfg, Always: o.always},
			}}
		},
		Deps: func(d *assemble.Deps) { d.VendNow = o.now },
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

// vended is what a LoadTableResult or a LoadCredentialsResponse carried.
type vended struct {
	location string
	config   map[string]string
	creds    []struct {
		Prefix string            `json:"prefix"`
		Config map[string]string `json:"config"`
	}
}

// keys are the vended credentials, checked to be complete.
func (v vended) keys(t *testing.T) aws.Credentials {
	t.Helper()
	if len(v.creds) != 1 {
		t.Fatalf("%d storage credentials, want 1: %+v", len(v.creds), v.creds)
	}
	c := v.creds[0].Config
	for _, k := range []string{"s3.access-key-id", "s3.secret-access-key", "s3.session-token", "s3.session-token-expires-at-ms"} {
		if c[k] == "" {
			t.Fatalf("storage credential lacks %s: %v", k, c)
		}
	}
	ms, err := strconv.ParseInt(c["s3.session-token-expires-at-ms"], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if exp := time.UnixMilli(ms); time.Until(exp) < 5*time.Minute || time.Until(exp) > 16*time.Minute {
		t.Errorf("credentials expire at %s, want about 15 minutes from now", exp)
	}
	return aws.Credentials{AccessKeyID: c["s3.access-key-id"], SecretAccessKey: c["s3.secret-access-key"], SessionToken: c["s3.session-token"]}
}

// loadVended loads table ns.name on prefix as who, asking for vended
// credentials; path is "" for loadTable, "/credentials" for
// loadCredentials.
func loadVended(l *signLake, who, prefix, name, path string) (int, []byte, vended) {
	l.t.Helper()
	status, body, _ := l.call(who, http.MethodGet, "/v1/"+url.PathEscape(prefix)+"/namespaces/ns/tables/"+name+path, nil,
		"X-Iceberg-Access-Delegation", "vended-credentials")
	var res struct {
		Metadata struct {
			Location string `json:"location"`
		} `json:"metadata"`
		Config map[string]string `json:"config"`
		Creds  json.RawMessage   `json:"storage-credentials"`
	}
	var v vended
	if status == http.StatusOK {
		if err := json.Unmarshal(body, &res); err != nil {
			l.t.Fatal(err)
		}
		v.location, v.config = res.Metadata.Location, res.Config
		if err := json.Unmarshal(res.Creds, &v.creds); err != nil {
			l.t.Fatalf("storage-credentials: %v: %s", err, body)
		}
	}
	return status, body, v
}

// with is l for subtest t: its helpers fail t, not the parent test.
func (l *signLake) with(t testing.TB) *signLake {
	c := *l
	c.t = t
	return &c
}

// s3With sends a request to S3 signed with c and returns S3's status and
// body.
func s3With(t *testing.T, c aws.Credentials, method, uri string, body []byte, headers ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, uri, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).SignHTTP(t.Context(), c, req, hash, "s3", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// TestS3VendedCredentials vends credentials through MinIO's STS and uses
// them against MinIO, which enforces their session policies: what the
// grant allows goes through, everything else is AccessDenied.
func TestS3VendedCredentials(t *testing.T) {
	l := newVendLake(t, vendOptions{})
	const branch = "lake@users/alice/dev"
	if status, body, _ := l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(branch)+"/namespaces", `{"namespace":["ns"]}`); status != http.StatusOK {
		t.Fatalf("create namespace: %d %s", status, body)
	}
	t1, createCfg := l.createTable(branch, "t1") // asks for vended-credentials (and remote-signing, which this warehouse does not do)
	t2, _ := l.createTable(branch, "t2")
	if createCfg["s3.access-key-id"] == "" || createCfg["s3.session-token"] == "" {
		t.Fatalf("createTable's config carries no vended credentials: %v", createCfg)
	}
	if createCfg["s3.access-key-id"] == l.keyID {
		t.Fatal("createTable handed out floe's own keys")
	}
	status, body, alice := loadVended(l, "alice", branch, "t1", "")
	if status != http.StatusOK {
		t.Fatalf("load t1: %d %s", status, body)
	}
	aliceKeys := alice.keys(t)
	if alice.creds[0].Prefix != t1 {
		t.Errorf("storage credential prefix %q, want the table location %q", alice.creds[0].Prefix, t1)
	}
	for k, want := range map[string]string{
		"client.refresh-credentials-endpoint": "v1/lake@users%2Falice%2Fdev/namespaces/ns/tables/t1/credentials",
		"client.refresh-credentials-enabled":  "true",
		"s3.access-key-id":                    aliceKeys.AccessKeyID,
		"s3.session-token":                    aliceKeys.SessionToken,
		"s3.endpoint":                         l.endpoint,
	} {
		if alice.config[k] != want {
			t.Errorf("config %s = %q, want %q", k, alice.config[k], want)
		}
	}
	if _, ok := alice.config["s3.remote-signing-enabled"]; ok {
		t.Error("vended config asks for remote signing")
	}
	data := l.uriOf(t1 + "/data/00000-0-a.parquet")
	payload := []byte("parquet bytes")

	t.Run("the server enforces session policies", func(t *testing.T) {
		l := l.with(t)
		// Else every refusal below would pass on a server that ignores
		// them (as moto does): a read of another table's metadata is
		// allowed to floe's keys and to the role, only the session
		// policy forbids it.
		metaKey := l.uriOf(t2 + "/metadata/")
		listing := l.s3(http.MethodGet, l.endpoint+"/"+l.bucket+"?list-type=2&prefix="+url.QueryEscape(strings.TrimPrefix(metaKey, l.endpoint+"/"+l.bucket+"/")), nil, 200)
		first := between(string(listing), "<Key>", "</Key>")
		if first == "" {
			t.Fatalf("t2 has no metadata file: %s", listing)
		}
		if s, out := s3With(t, aliceKeys, http.MethodGet, l.endpoint+"/"+l.bucket+"/"+first, nil); s != http.StatusForbidden {
			t.Fatalf("t1's credentials read t2's metadata: %d %s", s, out)
		}
	})

	t.Run("a writer reads, writes, lists and uploads in parts below its table", func(t *testing.T) {
		l := l.with(t)
		if s, out := s3With(t, aliceKeys, http.MethodPut, data, payload); s != 200 {
			t.Fatalf("put: %d %s", s, out)
		}
		if s, out := s3With(t, aliceKeys, http.MethodGet, data, nil, "Range", "bytes=0-6"); s != 206 || string(out) != "parquet" {
			t.Fatalf("ranged get: %d %q", s, out)
		}
		if s, _ := s3With(t, aliceKeys, http.MethodHead, data, nil); s != 200 {
			t.Fatalf("head: %d", s)
		}
		for _, prefix := range []string{strings.TrimPrefix(t1, "s3://"+l.bucket+"/") + "/", strings.TrimPrefix(t1, "s3://"+l.bucket+"/")} {
			list := l.endpoint + "/" + l.bucket + "?list-type=2&prefix=" + url.QueryEscape(prefix)
			if s, out := s3With(t, aliceKeys, http.MethodGet, list, nil); s != 200 || !strings.Contains(string(out), "00000-0-a.parquet") {
				t.Fatalf("listing %q: %d %s", prefix, s, out)
			}
		}
		big := l.uriOf(t1 + "/data/00001-0-b.parquet")
		s, out := s3With(t, aliceKeys, http.MethodPost, big+"?uploads", nil)
		if s != 200 {
			t.Fatalf("create multipart upload: %d %s", s, out)
		}
		id := between(string(out), "<UploadId>", "</UploadId>")
		part := make([]byte, 5<<20) // parts but the last are 5 MiB at least
		if s, out = s3With(t, aliceKeys, http.MethodPut, big+"?partNumber=1&uploadId="+url.QueryEscape(id), part); s != 200 {
			t.Fatalf("upload part: %d %s", s, out)
		}
		complete := `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"` + md5hex(part) + `"</ETag></Part></CompleteMultipartUpload>`
		if s, out = s3With(t, aliceKeys, http.MethodPost, big+"?uploadId="+url.QueryEscape(id), []byte(complete)); s != 200 {
			t.Fatalf("complete multipart upload: %d %s", s, out)
		}
		l.s3(http.MethodHead, big, nil, 200)
	})

	t.Run("a writer cannot delete, abort, or touch anything outside its table", func(t *testing.T) {
		l := l.with(t)
		l.s3(http.MethodPut, l.uriOf(t2+"/data/victim.parquet"), payload, 200)
		l.s3(http.MethodPut, l.endpoint+"/"+l.bucket+"/outside/f", payload, 200)
		pending := l.uriOf(t1 + "/data/00002-0-c.parquet")
		_, out := s3With(t, aliceKeys, http.MethodPost, pending+"?uploads", nil)
		upload := between(string(out), "<UploadId>", "</UploadId>")
		if upload == "" {
			t.Fatalf("create multipart upload: %s", out)
		}
		deleteBody := []byte(`<Delete><Object><Key>` + strings.TrimPrefix(data, l.endpoint+"/"+l.bucket+"/") + `</Key></Object></Delete>`)
		sum := md5.Sum(deleteBody)
		for _, tc := range []struct {
			name, method, uri string
			body              []byte
			headers           []string
		}{
			{"delete its own file", http.MethodDelete, data, nil, nil},
			{"abort its own upload", http.MethodDelete, pending + "?uploadId=" + url.QueryEscape(upload), nil, nil},
			{"put into another table", http.MethodPut, l.uriOf(t2 + "/data/evil.parquet"), payload, nil},
			{"overwrite another table's file", http.MethodPut, l.uriOf(t2 + "/data/victim.parquet"), []byte("x"), nil},
			{"read another table's file", http.MethodGet, l.uriOf(t2 + "/data/victim.parquet"), nil, nil},
			{"put beside the table", http.MethodPut, l.uriOf(t1 + "-evil/data/f"), payload, nil},
			{"put outside the warehouse", http.MethodPut, l.endpoint + "/" + l.bucket + "/outside/g", payload, nil},
			{"delete outside the warehouse", http.MethodDelete, l.endpoint + "/" + l.bucket + "/outside/f", nil, nil},
			{"list the warehouse", http.MethodGet, l.endpoint + "/" + l.bucket + "?list-type=2&prefix=wh%2F", nil, nil},
			{"list another table", http.MethodGet, l.endpoint + "/" + l.bucket + "?list-type=2&prefix=" + url.QueryEscape(strings.TrimPrefix(t2, "s3://"+l.bucket+"/")+"/"), nil, nil},
			{"copy another table's file in", http.MethodPut, l.uriOf(t1 + "/data/copied.parquet"), nil,
				[]string{"X-Amz-Copy-Source", "/" + l.bucket + "/" + strings.TrimPrefix(t2, "s3://"+l.bucket+"/") + "/data/victim.parquet"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if s, out := s3With(t, aliceKeys, tc.method, tc.uri, tc.body, tc.headers...); s != http.StatusForbidden || !strings.Contains(string(out), "AccessDenied") {
					t.Fatalf("%s %s: %d %s, want 403 AccessDenied", tc.method, tc.uri, s, out)
				}
			})
		}
		t.Run("bulk delete of its own file", func(t *testing.T) {
			// DeleteObjects answers 200 with an error per key it refused.
			s, out := s3With(t, aliceKeys, http.MethodPost, l.endpoint+"/"+l.bucket+"?delete", deleteBody,
				"Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
			if s == 200 && !strings.Contains(string(out), "AccessDenied") {
				t.Fatalf("DeleteObjects: %d %s, want every key refused", s, out)
			}
		})
		// Everything is still there, nothing was written where it must
		// not be.
		l.s3(http.MethodHead, data, nil, 200)
		l.s3(http.MethodHead, l.uriOf(t2+"/data/victim.parquet"), nil, 200)
		if got := l.s3(http.MethodGet, l.uriOf(t2+"/data/victim.parquet"), nil, 200); string(got) != string(payload) {
			t.Errorf("t2's file now holds %q", got)
		}
		l.s3(http.MethodHead, l.endpoint+"/"+l.bucket+"/outside/f", nil, 200)
		l.s3(http.MethodHead, l.uriOf(t2+"/data/evil.parquet"), nil, 404)
		l.s3(http.MethodHead, l.endpoint+"/"+l.bucket+"/outside/g", nil, 404)
		l.s3(http.MethodDelete, pending+"?uploadId="+url.QueryEscape(upload), nil, 204) // floe's keys may
	})

	t.Run("a principal who may only read gets read-only credentials", func(t *testing.T) {
		l := l.with(t)
		status, body, bob := loadVended(l, "bob", branch, "t1", "")
		if status != 200 {
			t.Fatalf("bob loads t1: %d %s", status, body)
		}
		bobKeys := bob.keys(t)
		if s, out := s3With(t, bobKeys, http.MethodGet, data, nil); s != 200 || string(out) != string(payload) {
			t.Fatalf("bob reads: %d %q", s, out)
		}
		if s, out := s3With(t, bobKeys, http.MethodPut, data+"-bob", payload); s != http.StatusForbidden {
			t.Fatalf("bob writes alice's branch's table: %d %s", s, out)
		}
	})

	t.Run("a tag gets read-only credentials, also from the refresh endpoint", func(t *testing.T) {
		l := l.with(t)
		ref, err := l.s.Store.GetRef("users/alice/dev")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.s.Store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: "v1", Type: versionstore.Tag, Target: ref.Head}); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"", "/credentials"} {
			status, body, onTag := loadVended(l, "alice", "lake@v1", "t1", path)
			if status != 200 {
				t.Fatalf("load t1%s on the tag: %d %s", path, status, body)
			}
			keys := onTag.keys(t)
			if s, _ := s3With(t, keys, http.MethodGet, data, nil); s != 200 {
				t.Fatalf("%s: read on the tag: %d", path, s)
			}
			if s, out := s3With(t, keys, http.MethodPut, data+"-tag", payload); s != http.StatusForbidden {
				t.Fatalf("%s: write on the tag: %d %s", path, s, out)
			}
		}
	})

	t.Run("the refresh endpoint vends a writer's credentials again", func(t *testing.T) {
		l := l.with(t)
		status, body, fresh := loadVended(l, "alice", branch, "t1", "/credentials")
		if status != 200 {
			t.Fatalf("credentials: %d %s", status, body)
		}
		if fresh.creds[0].Prefix != t1 {
			t.Errorf("prefix %q, want %q", fresh.creds[0].Prefix, t1)
		}
		if s, out := s3With(t, fresh.keys(t), http.MethodPut, l.uriOf(t1+"/data/refreshed.parquet"), payload); s != 200 {
			t.Fatalf("put with refreshed credentials: %d %s", s, out)
		}
	})

	t.Run("registerTable answers with credentials for the registered table", func(t *testing.T) {
		l := l.with(t)
		status, body, _ := l.call("alice", http.MethodGet, "/v1/"+url.PathEscape(branch)+"/namespaces/ns/tables/t2", nil)
		var loaded struct {
			MetadataLocation string `json:"metadata-location"`
		}
		if err := json.Unmarshal(body, &loaded); status != 200 || err != nil {
			t.Fatalf("load t2: %d %v %s", status, err, body)
		}
		status, body, _ = l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(branch)+"/namespaces/ns/register",
			map[string]any{"name": "t3", "metadata-location": loaded.MetadataLocation}, "X-Iceberg-Access-Delegation", "vended-credentials")
		var res struct {
			Config map[string]string `json:"config"`
			Creds  []struct {
				Prefix string            `json:"prefix"`
				Config map[string]string `json:"config"`
			} `json:"storage-credentials"`
		}
		if err := json.Unmarshal(body, &res); status != 200 || err != nil {
			t.Fatalf("register: %d %v %s", status, err, body)
		}
		if len(res.Creds) != 1 || res.Creds[0].Prefix != t2 || res.Config["client.refresh-credentials-endpoint"] != "v1/lake@users%2Falice%2Fdev/namespaces/ns/tables/t3/credentials" {
			t.Fatalf("register answer: config %v, credentials %+v", res.Config, res.Creds)
		}
		c := res.Creds[0].Config
		keys := aws.Credentials{AccessKeyID: c["s3.access-key-id"], SecretAccessKey: c["s3.secret-access-key"], SessionToken: c["s3.session-token"]}
		// t3 shares t2's location: its credentials write there, and
		// nowhere else.
		if s, out := s3With(t, keys, http.MethodPut, l.uriOf(t2+"/data/t3.parquet"), payload); s != 200 {
			t.Fatalf("t3's credentials put into its location: %d %s", s, out)
		}
		if s, _ := s3With(t, keys, http.MethodPut, l.uriOf(t1+"/data/t3.parquet"), payload); s != http.StatusForbidden {
			t.Fatalf("t3's credentials put into t1: %d", s)
		}
	})

	t.Run("no delegation asked, nothing vended", func(t *testing.T) {
		l := l.with(t)
		status, body, _ := l.call("alice", http.MethodGet, "/v1/"+url.PathEscape(branch)+"/namespaces/ns/tables/t1", nil)
		if status != 200 || strings.Contains(string(body), "s3.access-key-id") || strings.Contains(string(body), "storage-credentials") {
			t.Fatalf("load without delegation: %d %s", status, body[bytes.LastIndex(body, []byte(`"config"`)):])
		}
	})

	t.Run("counted", func(t *testing.T) {
		l := l.with(t)
		if n := l.metric(`floe_storage_credentials_vended_total{access="write"}`); n < 3 {
			t.Errorf("write credentials vended %v, want at least 3", n)
		}
		if n := l.metric(`floe_storage_credentials_vended_total{access="read"}`); n < 3 {
			t.Errorf("read credentials vended %v, want at least 3", n)
		}
	})
}

// TestS3VendedCredentialsRefused: what floe refuses to vend is answered in
// the Iceberg error model and vends nothing.
func TestS3VendedCredentialsRefused(t *testing.T) {
	l := newVendLake(t, vendOptions{rego: `package floe.authz

decision := {"allow": false, "reasons": ["carol may read nothing"]} if {
	input.principal.id == "carol"
} else := {"allow": false, "reasons": ["dave may not read table files"]} if {
	input.principal.id == "dave"
	startswith(input.action, "storage.")
} else := {"allow": true, "reasons": ["test bundle: alice and bob may do anything"]}
`})
	if status, body, _ := l.call("alice", http.MethodPost, "/v1/lake/namespaces", `{"namespace":["ns"]}`); status != http.StatusOK {
		t.Fatalf("create namespace: %d %s", status, body)
	}
	l.createTable("lake", "t1")

	for _, tc := range []struct {
		name, who, path, msg string
	}{
		{"credentials for a table the principal may not read", "carol", "/credentials", "…carol may read nothing"},
		{"a load with credentials by carol", "carol", "", "…carol may read nothing"},
		{"credentials for a table whose files the principal may not read", "dave", "/credentials", "…dave may not read table files"},
		{"a load with credentials by dave", "dave", "", "…dave may not read table files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := loadVended(l, tc.who, "lake", "t1", tc.path)
			checkError(t, response{status: status, body: body}, http.StatusForbidden, "ForbiddenException", tc.msg)
			if strings.Contains(string(body), "s3.") {
				t.Errorf("the refusal carries credentials: %s", body)
			}
		})
	}
	// dave may still load the table itself, without credentials.
	if status, body, _ := l.call("dave", http.MethodGet, "/v1/lake/namespaces/ns/tables/t1", nil); status != 200 {
		t.Fatalf("dave's plain load: %d %s", status, body)
	}
	if n := l.metric(`floe_storage_vend_refusals_total{reason="policy"}`); n != 2 {
		t.Errorf("policy refusals counted %v, want 2 (carol is refused before: she may not read the warehouse)", n)
	}
	if n := l.metric(`floe_storage_credentials_vended_total{access="read"}`) + l.metric(`floe_storage_credentials_vended_total{access="write"}`); n != 1 {
		t.Errorf("%v credentials vended, want only alice's at create", n)
	}
}

// TestS3VendedCredentialsSTSDown: an STS that does not answer is a 503,
// never a table answer without its credentials.
func TestS3VendedCredentialsSTSDown(t *testing.T) {
	l := newVendLake(t, vendOptions{stsEndpoint: "http://127.0.0.1:1"})
	if status, body, _ := l.call("alice", http.MethodPost, "/v1/lake@users%2Falice%2Fdev/namespaces", `{"namespace":["ns"]}`); status != http.StatusOK {
		t.Fatalf("create namespace: %d %s", status, body)
	}
	status, body, _ := l.call("alice", http.MethodPost, "/v1/lake@users%2Falice%2Fdev/namespaces/ns/tables", createTableBody("t1", ""),
		"X-Iceberg-Access-Delegation", "vended-credentials")
	checkError(t, response{status: status, body: body}, http.StatusServiceUnavailable, "ServiceUnavailableException", "…STS did not vend credentials")
	// Nothing was committed: the table does not exist.
	status, _, _ = l.call("alice", http.MethodGet, "/v1/lake@users%2Falice%2Fdev/namespaces/ns/tables/t1", nil)
	if status != http.StatusNotFound {
		t.Fatalf("the refused create left a table: %d", status)
	}
	if n := l.metric(`floe_storage_vend_refusals_total{reason="sts"}`); n != 1 {
		t.Errorf("sts failures counted %v, want 1", n)
	}
}

// BenchmarkS3VendedCredentials: what vending adds to a loadTable, against
// MinIO's STS on loopback: a plain load, a load with credentials from the
// vendor's cache (the same principal and grant within half their
// lifetime), and the STS AssumeRole behind a cache miss.
func BenchmarkS3VendedCredentials(b *testing.B) {
	l := newVendLake(b, vendOptions{})
	const branch = "lake@users/alice/dev"
	if status, body, _ := l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(branch)+"/namespaces", `{"namespace":["ns"]}`); status != http.StatusOK {
		b.Fatalf("create namespace: %d %s", status, body)
	}
	loc, _ := l.createTable(branch, "t1")
	path := l.s.URL + "/v1/" + url.PathEscape(branch) + "/namespaces/ns/tables/t1"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	load := func(b *testing.B, delegation string) {
		b.ReportAllocs()
		for b.Loop() {
			req, err := http.NewRequestWithContext(b.Context(), http.MethodGet, path, nil)
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer tok-alice")
			if delegation != "" {
				req.Header.Set("X-Iceberg-Access-Delegation", delegation)
			}
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("load: %d", resp.StatusCode)
			}
		}
	}
	b.Run("loadTable", func(b *testing.B) { load(b, "") })
	b.Run("loadTable+vended-cached", func(b *testing.B) { load(b, "vended-credentials") })
	b.Run("AssumeRole", func(b *testing.B) {
		vendor, err := s3vend.New(b.Context(), s3vend.Config{RoleARN: vendRole, Endpoint: l.endpoint, Region: "us-east-1",
			Duration: s3vend.MinDuration, AccessKeyID: l.keyID, SecretAccessKey: l.secret}, nil)
		if err != nil {
			b.Fatal(err)
		}
		grant := s3vend.Grant{Prefixes: []string{loc}, Write: true}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			i++
			// A principal of its own each time: never the cache.
			if _, err := vendor.Vend(b.Context(), grant, "bench-"+strconv.Itoa(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
