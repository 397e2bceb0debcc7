package icebergrest_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/rest/icebergrest"
)

// recordingDecider answers with verdict and keeps every input it saw.
type recordingDecider struct {
	mu      sync.Mutex
	inputs  []policy.Input
	verdict func(policy.Input) (policy.Decision, error)
}

func (d *recordingDecider) Decide(_ context.Context, in policy.Input) (policy.Decision, error) {
	d.mu.Lock()
	d.inputs = append(d.inputs, in)
	d.mu.Unlock()
	return d.verdict(in)
}

// last returns the last input with the given action.
func (d *recordingDecider) last(t *testing.T, action policy.Action) policy.Input {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := len(d.inputs) - 1; i >= 0; i-- {
		if d.inputs[i].Action == action {
			return d.inputs[i]
		}
	}
	t.Fatalf("no %s decision was asked for", action)
	return policy.Input{}
}

// TestAuthorization checks what the facade asks the policy and what it
// does with the answer: the input of each kind of write, a denial that
// leaves no commit and no metadata file behind, denied reads, and an
// engine failure.
func TestAuthorization(t *testing.T) {
	deny := map[string]bool{} // "<action> <key>" to refuse
	var denyMu sync.Mutex
	d := &recordingDecider{verdict: func(in policy.Input) (policy.Decision, error) {
		denyMu.Lock()
		defer denyMu.Unlock()
		if deny["fail"] {
			return policy.Decision{}, errors.New("engine down")
		}
		for _, c := range in.Contents {
			if deny[string(in.Action)+" "+strings.Join(c.Key, ".")] {
				return policy.Decision{ID: "d", Reasons: []string{"no writes to " + strings.Join(c.Key, ".")}}, nil
			}
		}
		if deny[string(in.Action)+" "+in.Ref.Name] {
			return policy.Decision{ID: "d", Reasons: []string{"no reads of " + in.Ref.Name}}, nil
		}
		return policy.Decision{ID: "d", Allow: true}, nil
	}}
	alice := func(*http.Request) policy.Principal { return policy.Principal{ID: "alice"} }
	e := newEnvAt(t, t.TempDir(), func(deps *icebergrest.Deps) {
		deps.Guard = authz.NewGuard(d, "iceberg", alice, nil)
	})
	set := func(key string, on bool) {
		denyMu.Lock()
		defer denyMu.Unlock()
		deny[key] = on
	}

	e.createNamespace("lake", "db")
	in := d.last(t, policy.ActionCreateNamespace)
	if in.API != "iceberg" || in.Principal.ID != "alice" || in.Ref != (policy.Ref{Name: "main", Type: policy.RefBranch}) ||
		len(in.Contents) != 1 || in.Contents[0].Type != policy.TypeNamespace || in.Contents[0].Change != policy.ChangeCreate {
		t.Fatalf("create namespace asked %+v", in)
	}
	created := e.createTable("lake", "db", "t")
	if in := d.last(t, policy.ActionCreateTable); !slices.Equal(in.Contents[0].Key, []string{"db", "t"}) || in.Contents[0].Change != policy.ChangeCreate {
		t.Fatalf("create table asked %+v", in)
	}

	// An append: the decision names the snapshot operation, the update
	// actions and the table branch it moves.
	st := &tableState{}
	st.Metadata.UUID = created.Metadata["table-uuid"].(string)
	st.Metadata.Location = created.Metadata["location"].(string)
	e.ok(http.MethodPost, "/v1/lake/namespaces/db/tables/t", string(appendCommit(st, 7, time.Now())), http.StatusOK, nil)
	in = d.last(t, policy.ActionWriteTable)
	ic := in.Contents[0].Iceberg
	if ic == nil || !slices.Equal(ic.Operations, []string{"append"}) || !slices.Equal(ic.Updates, []string{"add-snapshot", "set-snapshot-ref"}) ||
		!slices.Equal(ic.Branches, []string{"main"}) || in.Contents[0].Change != policy.ChangeUpdate {
		t.Fatalf("append asked %+v (iceberg %+v)", in, ic)
	}

	// A schema change is "schema-change".
	e.ok(http.MethodPost, "/v1/lake/namespaces/db/tables/t", `{"updates":[{"action":"add-schema","schema":`+schemaJSON+`},{"action":"set-current-schema","schema-id":-1}]}`, http.StatusOK, nil)
	if ic := d.last(t, policy.ActionWriteTable).Contents[0].Iceberg; !slices.Equal(ic.Operations, []string{"schema-change"}) {
		t.Fatalf("schema change asked %+v", ic)
	}

	// A rename names both keys.
	e.ok(http.MethodPost, "/v1/lake/tables/rename", `{"source":{"namespace":["db"],"name":"t"},"destination":{"namespace":["db"],"name":"u"}}`, http.StatusNoContent, nil)
	if in := d.last(t, policy.ActionRenameTable); len(in.Contents) != 2 || in.Contents[0].Change != policy.ChangeDelete || in.Contents[1].Change != policy.ChangeCreate {
		t.Fatalf("rename asked %+v", in)
	}

	// A refused create writes no commit and no metadata file.
	set("table.create db.secret", true)
	head := func() string {
		ref, err := e.store.GetRef("main")
		if err != nil {
			t.Fatal(err)
		}
		return ref.Head.String()
	}
	before := head()
	r := e.do(http.MethodPost, "/v1/lake/namespaces/db/tables", createTableBody("secret", ""))
	checkError(t, r, http.StatusForbidden, "ForbiddenException", "Forbidden: no writes to db.secret")
	if head() != before {
		t.Fatal("a refused create moved main")
	}
	_ = filepath.WalkDir(e.whDir, func(path string, _ fs.DirEntry, err error) error {
		if err == nil && strings.Contains(path, "secret") {
			t.Errorf("a refused create left %s behind", path)
		}
		return nil
	})

	// A refused transaction refuses every table in it.
	set("table.write db.u", true)
	r = e.do(http.MethodPost, "/v1/lake/transactions/commit", `{"table-changes":[{"identifier":{"namespace":["db"],"name":"u"},"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}]}`)
	checkError(t, r, http.StatusForbidden, "ForbiddenException", "Forbidden: no writes to db.u")
	if head() != before {
		t.Fatal("a refused transaction moved main")
	}

	// Reads are asked about the reference the prefix names.
	set("read main", true)
	checkError(t, e.do(http.MethodGet, "/v1/lake/namespaces", nil), http.StatusForbidden, "ForbiddenException", "Forbidden: no reads of main")
	checkError(t, e.do(http.MethodGet, "/v1/config?warehouse=lake", nil), http.StatusForbidden, "ForbiddenException", "Forbidden: no reads of main")
	if r := e.do(http.MethodHead, "/v1/lake/namespaces/db", nil); r.status != http.StatusForbidden {
		t.Fatalf("HEAD namespace with reads refused: %d", r.status)
	}
	set("read main", false)

	// No answer from the engine: 503, nothing written.
	set("fail", true)
	r = e.do(http.MethodPost, "/v1/lake/namespaces", `{"namespace":["other"]}`)
	checkError(t, r, http.StatusServiceUnavailable, "ServiceUnavailableException", "authorization is unavailable")
	if head() != before {
		t.Fatal("a write without a decision moved main")
	}
}
