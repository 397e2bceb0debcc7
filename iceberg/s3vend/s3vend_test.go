package s3vend_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/layering"
	"github.com/floe-catalog/floe/iceberg/s3vend"
	"github.com/floe-catalog/floe/policy"
)

func TestImports(t *testing.T) { layering.BelowAPIs(t) }

type policyDoc struct {
	Statement []struct {
		Sid       string
		Effect    string
		Action    []string
		Resource  []string
		Condition map[string]map[string][]string
	}
}

// actionsOn lists, per effect, the actions each resource gets.
func (d policyDoc) actionsOn(effect string) map[string][]string {
	out := map[string][]string{}
	for _, s := range d.Statement {
		if s.Effect != effect {
			continue
		}
		for _, r := range s.Resource {
			out[r] = append(out[r], s.Action...)
		}
	}
	return out
}

func TestSessionPolicy(t *testing.T) {
	prefixes := []string{"s3://lake/wh/ns/t-1", "s3://lake/wh/ns/t-1/data", "s3://other/elsewhere/t-1"}
	for _, tc := range []struct {
		name  string
		write bool
		want  map[string][]string // Allow, per resource
	}{
		{"read-only", false, map[string][]string{
			"arn:aws:s3:::lake/wh/ns/t-1/*":      {"s3:GetObject"},
			"arn:aws:s3:::lake/wh/ns/t-1/data/*": {"s3:GetObject"},
			"arn:aws:s3:::other/elsewhere/t-1/*": {"s3:GetObject"},
			"arn:aws:s3:::lake":                  {"s3:ListBucket"},
			"arn:aws:s3:::other":                 {"s3:ListBucket"},
		}},
		{"read-write", true, map[string][]string{
			"arn:aws:s3:::lake/wh/ns/t-1/*":      {"s3:GetObject", "s3:PutObject"},
			"arn:aws:s3:::lake/wh/ns/t-1/data/*": {"s3:GetObject", "s3:PutObject"},
			"arn:aws:s3:::other/elsewhere/t-1/*": {"s3:GetObject", "s3:PutObject"},
			"arn:aws:s3:::lake":                  {"s3:ListBucket"},
			"arn:aws:s3:::other":                 {"s3:ListBucket"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := s3vend.Grant{Prefixes: prefixes, Write: tc.write}.SessionPolicy()
			if err != nil {
				t.Fatal(err)
			}
			var doc policyDoc
			if err := json.Unmarshal([]byte(p), &doc); err != nil {
				t.Fatalf("%v: %s", err, p)
			}
			allows := doc.actionsOn("Allow")
			for r := range allows {
				slices.Sort(allows[r])
			}
			if fmt.Sprint(allows) != fmt.Sprint(tc.want) {
				t.Errorf("allowed\n got %v\nwant %v", allows, tc.want)
			}
			for _, s := range doc.Statement {
				for _, a := range s.Action {
					if s.Effect == "Allow" && (strings.Contains(a, "Delete") || strings.Contains(a, "Abort") || strings.Contains(a, "*")) {
						t.Errorf("statement %s allows %s", s.Sid, a)
					}
				}
				if slices.Contains(s.Action, "s3:ListBucket") {
					got := s.Condition["StringLike"]["s3:prefix"]
					want := map[string][]string{
						"arn:aws:s3:::lake":  {"wh/ns/t-1", "wh/ns/t-1/*", "wh/ns/t-1/data", "wh/ns/t-1/data/*"},
						"arn:aws:s3:::other": {"elsewhere/t-1", "elsewhere/t-1/*"},
					}[s.Resource[0]]
					if !slices.Equal(got, want) {
						t.Errorf("listing of %s: prefixes %v, want %v", s.Resource[0], got, want)
					}
				}
			}
			denied := doc.actionsOn("Deny")["arn:aws:s3:::*"]
			for _, a := range []string{"s3:DeleteObject", "s3:DeleteObjectVersion", "s3:AbortMultipartUpload"} {
				if !slices.Contains(denied, a) {
					t.Errorf("%s is not denied everywhere: %v", a, denied)
				}
			}
		})
	}
}

func TestSessionPolicyIsCanonical(t *testing.T) {
	a, err := s3vend.Grant{Prefixes: []string{"s3://b/x/t", "s3://b/x/t/data", "s3://b/x/t"}}.SessionPolicy()
	if err != nil {
		t.Fatal(err)
	}
	b, err := s3vend.Grant{Prefixes: []string{"s3://b/x/t/data/", "s3://b/x/t"}}.SessionPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("one grant, two policies:\n%s\n%s", a, b)
	}
}

func TestSessionPolicyRefuses(t *testing.T) {
	long := make([]string, 0, 40)
	for i := range 40 {
		long = append(long, fmt.Sprintf("s3://lake/warehouse/namespace/table-with-a-long-name-%02d", i))
	}
	for _, tc := range []struct {
		name     string
		prefixes []string
	}{
		{"none", nil},
		{"not s3", []string{"file:///srv/lake/t"}},
		{"whole bucket", []string{"s3://lake/"}},
		{"no bucket", []string{"s3:///wh/t"}},
		{"star", []string{"s3://lake/wh/t*"}},
		{"question mark", []string{"s3://lake/wh/t?x"}},
		{"policy variable", []string{"s3://lake/wh/${aws:username}"}},
		{"too long", long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := s3vend.Grant{Prefixes: tc.prefixes, Write: true}.SessionPolicy()
			if !errors.Is(err, s3vend.ErrUnsupportedLocation) {
				t.Fatalf("got %q, %v; want ErrUnsupportedLocation", p, err)
			}
		})
	}
}

func TestSessionName(t *testing.T) {
	for in, want := range map[string]string{
		"alice":                 "floe-alice",
		"":                      "floe-anonymous",
		"svc:spark/etl job":     "floe-svc_spark_etl_job",
		"a@b.example":           "floe-a@b.example",
		strings.Repeat("x", 99): "floe-" + strings.Repeat("x", 59),
	} {
		if got := s3vend.SessionName(in); got != want {
			t.Errorf("SessionName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDecide asks floe's default policy (the embedded bundle) the
// questions of a vend, on each kind of ref.
func TestDecide(t *testing.T) {
	ctx := t.Context()
	engine, err := policy.New(ctx, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Close() })
	var asked []policy.Action
	askAs := func(p policy.Principal) s3vend.Ask {
		return func(ctx context.Context, in policy.Input) error {
			in.Version, in.API, in.Principal = policy.InputVersion, "iceberg", p
			asked = append(asked, in.Action)
			if in.Storage == nil || in.Storage.Operation != s3vend.OperationVend || in.Storage.Bucket != "lake" || in.Storage.Key != "wh/ns/t" {
				t.Errorf("storage input %+v", in.Storage)
			}
			d, err := engine.Decide(ctx, in)
			if err != nil {
				return err
			}
			if !d.Allow {
				return deniedError(strings.Join(d.Reasons, "; "))
			}
			return nil
		}
	}
	denied := func(err error) bool { _, ok := errors.AsType[deniedError](err); return ok }
	alice := policy.Principal{ID: "alice"}
	for _, tc := range []struct {
		name     string
		who      policy.Principal
		ref      policy.Ref
		branch   bool
		write    bool
		refused  bool
		askedFor []policy.Action
	}{
		{"owner on own branch", alice, policy.Ref{Name: "users/alice/dev", Type: policy.RefBranch}, true, true, false,
			[]policy.Action{policy.ActionStorageRead, policy.ActionStorageWrite}},
		{"other's branch: read-only", policy.Principal{ID: "bob"}, policy.Ref{Name: "users/alice/dev", Type: policy.RefBranch}, true, false, false,
			[]policy.Action{policy.ActionStorageRead, policy.ActionStorageWrite}},
		{"main: read-only", alice, policy.Ref{Name: "main", Type: policy.RefBranch}, true, false, false,
			[]policy.Action{policy.ActionStorageRead, policy.ActionStorageWrite}},
		{"tag: read-only without asking to write", alice, policy.Ref{Name: "v1", Type: policy.RefTag}, false, false, false,
			[]policy.Action{policy.ActionStorageRead}},
		{"anonymous: refused", policy.Principal{Anonymous: true}, policy.Ref{Name: "main", Type: policy.RefBranch}, true, false, true,
			[]policy.Action{policy.ActionStorageRead}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = nil
			d, err := s3vend.Decide(ctx, askAs(tc.who), denied, s3vend.Request{Ref: tc.ref, Branch: tc.branch, Table: []string{"ns", "t"},
				TableLocation: "s3://lake/wh/ns/t", Prefixes: []string{"s3://lake/wh/ns/t"}})
			if tc.refused {
				if !denied(err) {
					t.Fatalf("decision %+v, %v; want the policy's refusal", d, err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(asked, tc.askedFor) {
				t.Errorf("asked %v, want %v", asked, tc.askedFor)
			}
			if d.Grant.Write != tc.write {
				t.Errorf("write %v, want %v (%+v)", d.Grant.Write, tc.write, d)
			}
			if !tc.refused && !tc.write && d.ReadOnly == "" {
				t.Error("a read-only grant says not why")
			}
		})
	}
}

type deniedError string

func (e deniedError) Error() string { return string(e) }

// TestVendAgainstMinIO calls a real STS (MinIO's, from
// conformance/s3/minio.sh; skipped without it): concurrent vends of one
// grant to one principal are one AssumeRole and share its credentials,
// which are reused while more than half of their lifetime is left; another
// principal or grant gets credentials of its own.
func TestVendAgainstMinIO(t *testing.T) {
	endpoint := os.Getenv("FLOE_TEST_MINIO_ENDPOINT")
	if endpoint == "" {
		t.Skip("set FLOE_TEST_MINIO_ENDPOINT to a MinIO endpoint (conformance/s3/minio.sh) to run")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	now := time.Now()
	var clock atomic.Int64
	v, err := s3vend.New(t.Context(), s3vend.Config{RoleARN: "arn:aws:iam::000000000000:role/floe-vend", Endpoint: endpoint,
		Duration: s3vend.MinDuration, AccessKeyID: os.Getenv("FLOE_TEST_MINIO_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("FLOE_TEST_MINIO_SECRET_ACCESS_KEY")},
		func() time.Time { return now.Add(time.Duration(clock.Load())) })
	if err != nil {
		t.Fatal(err)
	}
	grant := s3vend.Grant{Prefixes: []string{"s3://lake/wh/ns/t"}}
	var wg sync.WaitGroup
	got := make([]s3vend.Credentials, 8)
	errs := make([]error, len(got))
	for i := range got {
		wg.Go(func() { got[i], errs[i] = v.Vend(t.Context(), grant, "alice") })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if got[i] != got[0] {
			t.Fatalf("concurrent vends of one grant differ: %+v and %+v", got[0], got[i])
		}
	}
	if c := got[0]; c.AccessKeyID == "" || c.SessionToken == "" || c.Expiration.Before(now) {
		t.Fatalf("credentials %+v", c)
	}
	other, err := v.Vend(t.Context(), grant, "bob")
	if err != nil {
		t.Fatal(err)
	}
	write, err := v.Vend(t.Context(), s3vend.Grant{Prefixes: grant.Prefixes, Write: true}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if other.AccessKeyID == got[0].AccessKeyID || write.AccessKeyID == got[0].AccessKeyID {
		t.Fatal("another principal or grant got the same credentials")
	}
	clock.Store(int64(6 * time.Minute)) // 9 of 15 minutes left: still reused
	if c, err := v.Vend(t.Context(), grant, "alice"); err != nil || c != got[0] {
		t.Fatalf("within half their lifetime: %+v, %v; want the cached credentials", c, err)
	}
	clock.Store(int64(8 * time.Minute)) // 7 of 15 left: vended anew
	renewed, err := v.Vend(t.Context(), grant, "alice")
	if err != nil || renewed.AccessKeyID == got[0].AccessKeyID {
		t.Fatalf("past half their lifetime: %+v, %v; want new credentials", renewed, err)
	}
	// The renewed credentials are the ones reused from now on (MinIO
	// vended them for 15 minutes from its own, real, time).
	clock.Store(0)
	if c, err := v.Vend(t.Context(), grant, "alice"); err != nil || c != renewed {
		t.Fatalf("after a renewal: %s, %v; want the renewed credentials %s", c.AccessKeyID, err, renewed.AccessKeyID)
	}
}
