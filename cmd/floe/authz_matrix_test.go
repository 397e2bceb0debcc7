package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/policy/authn"
)

// The authorization matrix drives a real `floe serve` outside dev mode,
// with a generated token file and the built-in policy, through the Iceberg
// REST API, the Nessie API and the CLI, and checks every cell against the
// default policy as documented: reads for every authenticated principal;
// main written only through merges by publishers; users/<id>/ by <id>;
// ingest/ by group ingest; branch refs (not main) by admins; tags created
// by anyone, moved and deleted by admins; namespace finance written only by
// group finance; nothing else.

// authzPrincipals are the callers of every row: the token file's five and
// two that fail authentication.
var authzPrincipals = []string{"alice", "bob", "carol", "dave", "erin", "none", "bad"}

// authzGroups is the token file.
var authzGroups = map[string][]string{
	"alice": {"publishers"},
	"bob":   {"ingest"},
	"carol": {"admins"},
	"dave":  {},
	"erin":  {"publishers", "finance"},
	// observer makes the test's own reads (heads before and after a
	// cell), so that they never count as the decisions of a cell's
	// principal.
	"observer": {},
}

// authzEnv is one secured server and the tokens of its principals.
type authzEnv struct {
	t       *testing.T
	addr    string
	http    *http.Client
	tokens  map[string]string // principal -> token; "bad" is in no file
	logPath string
	// warehouse is the server's warehouse root URL: content committed
	// through the Nessie API names metadata files below it.
	warehouse string
	seq       int
	// mainOld is a commit of main before its head, to move refs to.
	mainOld string
}

func newAuthzEnv(t *testing.T) *authzEnv {
	t.Helper()
	dir := t.TempDir()
	e := &authzEnv{t: t, http: &http.Client{Timeout: 10 * time.Second}, tokens: map[string]string{},
		logPath: filepath.Join(dir, "decisions.jsonl")}
	type entry struct {
		SHA256    string   `json:"sha256"`
		Principal string   `json:"principal"`
		Groups    []string `json:"groups"`
	}
	var file struct {
		Tokens []entry `json:"tokens"`
	}
	for _, p := range []string{"alice", "bob", "carol", "dave", "erin", "observer", "bad"} {
		tok, err := authn.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		e.tokens[p] = tok
		if p != "bad" {
			file.Tokens = append(file.Tokens, entry{SHA256: authn.HashSecret(tok), Principal: p, Groups: authzGroups[p]})
		}
	}
	data, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokenFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServeWith(t, nil, "--addr", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"),
		"--warehouse", filepath.Join(dir, "warehouse"), "--auth-token-file", tokenFile,
		"--policy-decision-log", e.logPath)
	e.addr = p.addr
	e.warehouse = "file://" + filepath.ToSlash(filepath.Join(dir, "warehouse"))
	return e
}

// unique returns a fresh name suffix.
func (e *authzEnv) unique() string {
	e.seq++
	return fmt.Sprintf("c%d", e.seq)
}

// httpResult is an HTTP answer.
type httpResult struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request as principal ("none": no token) to path under the
// server; body is sent as is when a string, else as JSON.
func (e *authzEnv) do(t *testing.T, as, method, path string, body any) httpResult {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+e.addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tok, ok := e.tokens[as]; ok {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return httpResult{status: resp.StatusCode, header: resp.Header, body: data}
}

// must sends a request that has to succeed and decodes its answer into out.
func (e *authzEnv) must(t *testing.T, as, method, path string, body, out any) {
	t.Helper()
	r := e.do(t, as, method, path, body)
	if r.status/100 != 2 {
		t.Fatalf("setup: %s %s as %s: %d %s", method, path, as, r.status, r.body)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			t.Fatalf("setup: %s %s: %v in %s", method, path, err, r.body)
		}
	}
}

// floe runs the CLI as principal.
func (e *authzEnv) floe(t *testing.T, as string, args ...string) (string, string, int) {
	t.Helper()
	return runFloe(t, []string{"FLOE_SERVER=http://" + e.addr, "FLOE_TOKEN=" + e.tokens[as]}, args...)
}

func trees(ref string) string { return "/api/v2/trees/" + url.PathEscape(ref) }

func icebergPrefix(ref string) string { return "/v1/" + url.PathEscape("lake@"+ref) }

// head is a reference's hash, "" when it does not exist.
func (e *authzEnv) head(t *testing.T, ref string) string {
	t.Helper()
	r := e.do(t, "observer", http.MethodGet, trees(ref), nil)
	if r.status == http.StatusNotFound {
		return ""
	}
	var v struct{ Reference struct{ Hash string } }
	if r.status != http.StatusOK || json.Unmarshal(r.body, &v) != nil {
		t.Fatalf("GET %s: %d %s", trees(ref), r.status, r.body)
	}
	return v.Reference.Hash
}

// createRef creates a branch or tag ("BRANCH", "TAG") at main's head, as
// principal.
func (e *authzEnv) createRef(t *testing.T, as, typ, name string) {
	t.Helper()
	e.must(t, as, http.MethodPost, "/api/v2/trees?name="+url.QueryEscape(name)+"&type="+typ,
		map[string]any{"type": "BRANCH", "name": "main", "hash": e.head(t, "main")}, nil)
}

// commitTables commits a new table per key on branch through the Nessie
// API, as principal, and returns the new head.
func (e *authzEnv) commitTables(t *testing.T, as, branch string, keys ...string) string {
	t.Helper()
	var r struct{ TargetBranch struct{ Hash string } }
	e.must(t, as, http.MethodPost, trees(branch+"@"+e.head(t, branch))+"/history/commit", e.nessieCommitBody(keys...), &r)
	return r.TargetBranch.Hash
}

func (e *authzEnv) nessieCommitBody(keys ...string) map[string]any {
	var ops []any
	for _, k := range keys {
		elems := strings.Split(k, ".")
		ops = append(ops, map[string]any{"type": "PUT", "key": map[string]any{"elements": elems},
			"content": map[string]any{"type": "ICEBERG_TABLE", "metadataLocation": e.warehouse + "/" + k + "/v1.metadata.json",
				"snapshotId": 1, "schemaId": 0, "specId": 0, "sortOrderId": 0}})
	}
	return map[string]any{"commitMeta": map[string]any{"message": "put " + strings.Join(keys, ",")}, "operations": ops}
}

// merge merges src into target through the Nessie API as principal.
func (e *authzEnv) merge(t *testing.T, as, src, target string, dryRun bool) httpResult {
	t.Helper()
	return e.do(t, as, http.MethodPost, trees(target+"@"+e.head(t, target))+"/history/merge",
		map[string]any{"fromRefName": src, "fromHash": e.head(t, src), "dryRun": dryRun})
}

const authzSchema = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"region","type":"string","required":false}]}`

func createTableJSON(name string) string {
	return `{"name":"` + name + `","schema":` + authzSchema + `}`
}

func setPropertiesJSON(k, v string) string {
	return `{"requirements":[],"updates":[{"action":"set-properties","updates":{"` + k + `":"` + v + `"}}]}`
}

// setup writes the fixture into main the only way main can be written:
// alice (publishers) prepares db, emptyns and db.t1 on her branch and
// merges it; erin (publishers, finance) does the same for finance.ledger.
// Then each branch kind gets a base branch for reads, and a tag.
func (e *authzEnv) setup(t *testing.T) {
	t.Helper()
	e.createRef(t, "alice", "BRANCH", "users/alice/setup")
	pa := icebergPrefix("users/alice/setup")
	e.must(t, "alice", http.MethodPost, pa+"/namespaces", `{"namespace":["db"]}`, nil)
	e.must(t, "alice", http.MethodPost, pa+"/namespaces", `{"namespace":["emptyns"]}`, nil)
	e.must(t, "alice", http.MethodPost, pa+"/namespaces/db/tables", createTableJSON("t1"), nil)
	if r := e.merge(t, "alice", "users/alice/setup", "main", false); r.status != http.StatusOK {
		t.Fatalf("setup: alice merges users/alice/setup: %d %s", r.status, r.body)
	}
	e.mainOld = e.head(t, "main")

	e.createRef(t, "erin", "BRANCH", "users/erin/setup")
	pe := icebergPrefix("users/erin/setup")
	e.must(t, "erin", http.MethodPost, pe+"/namespaces", `{"namespace":["finance"]}`, nil)
	e.must(t, "erin", http.MethodPost, pe+"/namespaces/finance/tables", createTableJSON("ledger"), nil)
	if r := e.merge(t, "erin", "users/erin/setup", "main", false); r.status != http.StatusOK {
		t.Fatalf("setup: erin merges users/erin/setup: %d %s", r.status, r.body)
	}

	for _, k := range authzKinds {
		if k.creator != "" {
			e.createRef(t, k.creator, k.refType(), k.prefix+"base")
		}
	}
}

// authzKind is a kind of reference a cell writes to or reads.
type authzKind struct {
	name    string // in subtest names
	prefix  string // a fresh ref is prefix + a unique suffix; main has none
	creator string // who may create such refs; "" for main
	tag     bool
}

func (k authzKind) refType() string {
	if k.tag {
		return "TAG"
	}
	return "BRANCH"
}

var authzKinds = []authzKind{
	{name: "main"},
	{name: "users-alice", prefix: "users/alice/", creator: "alice"},
	{name: "users-bob", prefix: "users/bob/", creator: "bob"},
	{name: "ingest", prefix: "ingest/", creator: "bob"},
	{name: "other", prefix: "dev/", creator: "carol"},
	{name: "tag", prefix: "tag-", creator: "dave", tag: true},
	{name: "users-erin", prefix: "users/erin/", creator: "erin"},
}

func kindNamed(name string) authzKind {
	for _, k := range authzKinds {
		if k.name == name {
			return k
		}
	}
	panic("no reference kind " + name)
}

// ref returns the reference a cell of kind k works on: main, the kind's
// base ref for reads, or a fresh one, made by its creator, for writes, so
// that cells never see each other's changes.
func (e *authzEnv) ref(t *testing.T, k authzKind, fresh bool) string {
	t.Helper()
	switch {
	case k.creator == "":
		return "main"
	case !fresh:
		return k.prefix + "base"
	}
	name := k.prefix + e.unique()
	e.createRef(t, k.creator, k.refType(), name)
	return name
}

// authzCall is what one cell did, through whichever API.
type authzCall struct {
	http httpResult
	// CLI
	stdout, stderr string
	exit           int
	// target is the reference a denial must leave as it was: before is
	// its head before the call, "" when it did not exist.
	target string
	before string
}

// authzAction performs one action on reference kind k as principal.
type authzAction struct {
	mutates bool
	run     func(e *authzEnv, t *testing.T, as string, k authzKind, ref string) authzCall
}

func httpAction(mutates bool, f func(e *authzEnv, t *testing.T, as string, k authzKind, ref string) httpResult) authzAction {
	return authzAction{mutates: mutates, run: func(e *authzEnv, t *testing.T, as string, k authzKind, ref string) authzCall {
		before := e.head(t, ref)
		return authzCall{http: f(e, t, as, k, ref), target: ref, before: before}
	}}
}

func cliAction(mutates bool, args func(e *authzEnv, t *testing.T, k authzKind, ref string) (argv []string, target string)) authzAction {
	return authzAction{mutates: mutates, run: func(e *authzEnv, t *testing.T, as string, k authzKind, ref string) authzCall {
		argv, target := args(e, t, k, ref)
		before := e.head(t, target)
		out, errOut, code := e.floe(t, as, argv...)
		return authzCall{stdout: out, stderr: errOut, exit: code, target: target, before: before}
	}}
}

// freshSource is a branch of erin's with one new table on top of main, for
// merges and transplants.
func (e *authzEnv) freshSource(t *testing.T) (name, head string) {
	t.Helper()
	name = "users/erin/src-" + e.unique()
	e.createRef(t, "erin", "BRANCH", name)
	return name, e.commitTables(t, "erin", name, "db.m_"+strings.ReplaceAll(name, "/", "_"))
}

var authzActions = map[string]authzAction{
	// Iceberg REST.
	"iceberg/config": httpAction(false, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodGet, "/v1/config?warehouse="+url.QueryEscape("lake@"+ref), nil)
	}),
	"iceberg/namespace.list": httpAction(false, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodGet, icebergPrefix(ref)+"/namespaces", nil)
	}),
	"iceberg/table.load": httpAction(false, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodGet, icebergPrefix(ref)+"/namespaces/db/tables/t1", nil)
	}),
	"iceberg/table.metrics": httpAction(false, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodPost, icebergPrefix(ref)+"/namespaces/db/tables/t1/metrics",
			`{"report-type":"commit-report","table-name":"db.t1","snapshot-id":1,"sequence-number":1,"operation":"append","metrics":{}}`)
	}),
	"iceberg/namespace.create": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodPost, icebergPrefix(ref)+"/namespaces", `{"namespace":["ns_`+e.unique()+`"]}`)
	}),
	"iceberg/namespace.drop": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodDelete, icebergPrefix(ref)+"/namespaces/emptyns", nil)
	}),
	"iceberg/namespace.properties": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodPost, icebergPrefix(ref)+"/namespaces/db/properties", `{"removals":[],"updates":{"owner":"`+as+`"}}`)
	}),
	"iceberg/table.create": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodPost, icebergPrefix(ref)+"/namespaces/db/tables", createTableJSON("t_"+e.unique()))
	}),
	"iceberg/table.create.finance": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodPost, icebergPrefix(ref)+"/namespaces/finance/tables", createTableJSON("t_"+e.unique()))
	}),
	"iceberg/table.update": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodPost, icebergPrefix(ref)+"/namespaces/db/tables/t1", setPropertiesJSON("by", as))
	}),
	"iceberg/table.update.finance": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodPost, icebergPrefix(ref)+"/namespaces/finance/tables/ledger", setPropertiesJSON("by", as))
	}),
	"iceberg/table.drop": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodDelete, icebergPrefix(ref)+"/namespaces/db/tables/t1", nil)
	}),
	"iceberg/table.rename": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodPost, icebergPrefix(ref)+"/tables/rename",
			`{"source":{"namespace":["db"],"name":"t1"},"destination":{"namespace":["db"],"name":"t1_renamed"}}`)
	}),
	"iceberg/view.create": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodPost, icebergPrefix(ref)+"/namespaces/db/views", `{"name":"v_`+e.unique()+`","schema":`+authzSchema+
			`,"view-version":{"version-id":1,"schema-id":0,"timestamp-ms":1,"summary":{},"representations":[{"type":"sql","sql":"select 1","dialect":"spark"}],"default-namespace":["db"]}}`)
	}),
	"iceberg/table.rename.finance": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		// Out of finance: the source's deletion is a finance write.
		return e.do(t, as, http.MethodPost, icebergPrefix(ref)+"/tables/rename",
			`{"source":{"namespace":["finance"],"name":"ledger"},"destination":{"namespace":["db"],"name":"ledger"}}`)
	}),
	"iceberg/transactions.commit.finance": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodPost, icebergPrefix(ref)+"/transactions/commit",
			`{"table-changes":[{"identifier":{"namespace":["db"],"name":"t1"},"requirements":[],"updates":[{"action":"set-properties","updates":{"tx":"`+as+`"}}]},`+
				`{"identifier":{"namespace":["finance"],"name":"ledger"},"requirements":[],"updates":[{"action":"set-properties","updates":{"tx":"`+as+`"}}]}]}`)
	}),
	"iceberg/transactions.commit": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodPost, icebergPrefix(ref)+"/transactions/commit",
			`{"table-changes":[{"identifier":{"namespace":["db"],"name":"t1"},"requirements":[],"updates":[{"action":"set-properties","updates":{"tx":"`+as+`"}}]}]}`)
	}),

	// Nessie API v2.
	"nessie/read.ref": httpAction(false, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodGet, trees(ref), nil)
	}),
	"nessie/read.entries": httpAction(false, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodGet, trees(ref)+"/entries", nil)
	}),
	"nessie/read.history": httpAction(false, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodGet, trees(ref)+"/history", nil)
	}),
	"nessie/read.contents": httpAction(false, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodGet, trees(ref)+"/contents/db.t1", nil)
	}),
	"nessie/read.diff": httpAction(false, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodGet, trees(ref)+"/diff/main", nil)
	}),
	"nessie/read.recent-changes": httpAction(false, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodGet, trees(ref)+"/recent-changes", nil)
	}),
	"nessie/ref.create": {mutates: false, run: func(e *authzEnv, t *testing.T, as string, k authzKind, _ string) authzCall {
		// main "created" again must be refused by the policy before the
		// store reports that it exists.
		name := "main"
		if k.creator != "" {
			name = k.prefix + e.unique()
		}
		before := e.head(t, name)
		r := e.do(t, as, http.MethodPost, "/api/v2/trees?name="+url.QueryEscape(name)+"&type="+k.refType(),
			map[string]any{"type": "BRANCH", "name": "main", "hash": e.head(t, "main")})
		return authzCall{http: r, target: name, before: before}
	}},
	"nessie/ref.assign": httpAction(true, func(e *authzEnv, t *testing.T, as string, k authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodPut, trees(ref+"@"+e.head(t, ref))+"?type="+k.refType(),
			map[string]any{"type": "BRANCH", "name": "main", "hash": e.mainOld})
	}),
	"nessie/ref.delete": httpAction(true, func(e *authzEnv, t *testing.T, as string, k authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodDelete, trees(ref+"@"+e.head(t, ref))+"?type="+k.refType(), nil)
	}),
	"nessie/commit": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodPost, trees(ref+"@"+e.head(t, ref))+"/history/commit", e.nessieCommitBody("db.n_"+e.unique()))
	}),
	"nessie/commit.finance": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		return e.do(t, as, http.MethodPost, trees(ref+"@"+e.head(t, ref))+"/history/commit", e.nessieCommitBody("finance.n_"+e.unique()))
	}),
	"nessie/merge": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		src, _ := e.freshSource(t)
		return e.merge(t, as, src, ref, false)
	}),
	"nessie/transplant": httpAction(true, func(e *authzEnv, t *testing.T, as string, _ authzKind, ref string) httpResult {
		src, h := e.freshSource(t)
		return e.do(t, as, http.MethodPost, trees(ref+"@"+e.head(t, ref))+"/history/transplant",
			map[string]any{"fromRefName": src, "hashesToTransplant": []string{h}})
	}),

	// CLI.
	"cli/log": cliAction(false, func(_ *authzEnv, _ *testing.T, _ authzKind, ref string) ([]string, string) {
		return []string{"log", ref, "-n", "1"}, ref
	}),
	"cli/ls": cliAction(false, func(_ *authzEnv, _ *testing.T, _ authzKind, ref string) ([]string, string) {
		return []string{"ls", ref}, ref
	}),
	"cli/branch.create": cliAction(false, func(e *authzEnv, _ *testing.T, k authzKind, _ string) ([]string, string) {
		if k.creator == "" {
			return []string{"branch", "create", "main", "--from", "main"}, "main"
		}
		name := k.prefix + e.unique()
		return []string{"branch", "create", name, "--from", "main"}, name
	}),
	"cli/branch.delete": cliAction(true, func(_ *authzEnv, _ *testing.T, _ authzKind, ref string) ([]string, string) {
		return []string{"branch", "delete", ref}, ref
	}),
	"cli/tag.create": cliAction(false, func(e *authzEnv, _ *testing.T, k authzKind, _ string) ([]string, string) {
		name := k.prefix + e.unique()
		return []string{"tag", "create", name, "--from", "main"}, name
	}),
	"cli/tag.assign": cliAction(true, func(e *authzEnv, _ *testing.T, _ authzKind, ref string) ([]string, string) {
		return []string{"tag", "assign", ref, "@" + e.mainOld}, ref
	}),
	"cli/tag.delete": cliAction(true, func(_ *authzEnv, _ *testing.T, _ authzKind, ref string) ([]string, string) {
		return []string{"tag", "delete", ref}, ref
	}),
	"cli/merge": cliAction(true, func(e *authzEnv, t *testing.T, _ authzKind, ref string) ([]string, string) {
		src, _ := e.freshSource(t)
		return []string{"merge", src, "--into", ref}, ref
	}),
}

// authzRow is one line of the matrix: an action on a reference kind,
// which principals it allows, and what each denial must say. Every row
// expands to one cell per principal; "none" and "bad" always get 401.
type authzRow struct {
	action string            // key of authzActions: api/action
	kind   string            // reference kind
	allow  string            // allowed principals, space-separated; "all" for the five
	reason string            // substring of every denial's message
	why    map[string]string // a principal's own denial reason
}

const (
	mainRule   = "main is written only through merges by group publishers"
	noRule     = "no rule allows"
	tagRule    = "tags are immutable except for group admins"
	readOnly   = "read-only"
	financeReq = "requires group finance"
	// rejected marks a refusal whose status and message are not the
	// policy's: any 4xx (or failed command) that changes nothing.
	rejected = "(rejected)"
)

// authzRows is the matrix.
func authzRows() []authzRow {
	var rows []authzRow
	branches := []string{"main", "users-alice", "users-bob", "ingest", "other"}
	all := append(slices.Clone(branches), "tag")
	// contentWrite: who may change contents on each kind.
	contentWrite := map[string]authzRow{
		"main":        {allow: "", reason: mainRule},
		"users-alice": {allow: "alice", reason: noRule},
		"users-bob":   {allow: "bob", reason: noRule},
		"ingest":      {allow: "bob", reason: noRule},
		"other":       {allow: "", reason: noRule},
		"tag":         {allow: "", reason: readOnly},
	}
	mergeInto := map[string]authzRow{
		"main":        {allow: "alice erin", reason: mainRule},
		"users-alice": {allow: "alice", reason: noRule},
		"users-bob":   {allow: "bob", reason: noRule},
		"ingest":      {allow: "bob", reason: noRule},
		"other":       {allow: "", reason: noRule},
		// The store refuses a merge onto a tag (400, not a branch)
		// before any decision is needed; only the refusal is asserted.
		"tag": {allow: "", reason: rejected},
	}
	refCreate := map[string]authzRow{
		"main":        {allow: "", reason: mainRule},
		"users-alice": {allow: "alice carol", reason: noRule},
		"users-bob":   {allow: "bob carol", reason: noRule},
		"ingest":      {allow: "bob carol", reason: noRule},
		"other":       {allow: "carol", reason: noRule},
		"tag":         {allow: "all"},
	}
	refChange := map[string]authzRow{ // assign and delete
		"main":        {allow: "", reason: mainRule},
		"users-alice": {allow: "alice carol", reason: noRule},
		"users-bob":   {allow: "bob carol", reason: noRule},
		"ingest":      {allow: "bob carol", reason: noRule},
		"other":       {allow: "carol", reason: noRule},
		"tag":         {allow: "carol", reason: tagRule},
	}
	add := func(action string, kinds []string, rule map[string]authzRow) {
		for _, k := range kinds {
			r := rule[k]
			rows = append(rows, authzRow{action: action, kind: k, allow: r.allow, reason: r.reason})
		}
	}
	// Each CLI cell starts a process (about 0.2 s), so the CLI covers
	// fewer kinds where the answer cannot depend on the kind: the API
	// cells below it already cover all of them.
	cliReads := []string{"main", "users-alice", "tag"}
	cliMerges := []string{"main", "users-alice", "other"}
	for _, a := range []string{"iceberg/config", "iceberg/namespace.list", "iceberg/table.load", "iceberg/table.metrics",
		"nessie/read.ref", "nessie/read.entries", "nessie/read.history", "nessie/read.contents", "nessie/read.diff",
		"nessie/read.recent-changes", "cli/log", "cli/ls"} {
		kinds := all
		if strings.HasPrefix(a, "cli/") {
			kinds = cliReads
		}
		for _, k := range kinds {
			rows = append(rows, authzRow{action: a, kind: k, allow: "all"})
		}
	}
	for _, a := range []string{"iceberg/namespace.create", "iceberg/namespace.drop", "iceberg/namespace.properties",
		"iceberg/table.create", "iceberg/table.update", "iceberg/table.drop", "iceberg/table.rename",
		"iceberg/view.create", "iceberg/transactions.commit", "nessie/commit"} {
		add(a, all, contentWrite)
	}
	add("nessie/merge", all, mergeInto)
	add("nessie/transplant", all, mergeInto)
	add("cli/merge", cliMerges, mergeInto)
	add("nessie/ref.create", all, refCreate)
	add("cli/branch.create", branches, refCreate)
	add("cli/tag.create", []string{"tag"}, refCreate)
	add("nessie/ref.assign", all, refChange)
	add("nessie/ref.delete", all, refChange)
	add("cli/branch.delete", branches, refChange)
	add("cli/tag.assign", []string{"tag"}, refChange)
	add("cli/tag.delete", []string{"tag"}, refChange)
	// Deleting main has its own reason, for admins too.
	for i, r := range rows {
		if r.kind == "main" && (r.action == "nessie/ref.delete" || r.action == "cli/branch.delete") {
			rows[i].reason = "branch main can never be deleted"
		}
	}
	// Namespace finance: only group finance, even on one's own branch.
	for _, a := range []string{"iceberg/table.create.finance", "iceberg/table.update.finance", "iceberg/table.rename.finance",
		"iceberg/transactions.commit.finance", "nessie/commit.finance"} {
		rows = append(rows,
			authzRow{action: a, kind: "users-erin", allow: "erin", reason: financeReq},
			// Not erin's branch; for the others the finance rule is
			// the denial that names the problem.
			authzRow{action: a, kind: "users-alice", allow: "", reason: financeReq, why: map[string]string{"erin": noRule}},
		)
	}
	return rows
}

// TestAuthzMatrix runs every cell of the matrix against one server, then
// checks the decision log.
func TestAuthzMatrix(t *testing.T) {
	e := newAuthzEnv(t)
	e.setup(t)
	counts := map[string]int{}
	for _, row := range authzRows() {
		act, ok := authzActions[row.action]
		if !ok {
			t.Fatalf("no action %s", row.action)
		}
		k := kindNamed(row.kind)
		allowed := strings.Fields(row.allow)
		for _, p := range authzPrincipals {
			if (p == "none" || p == "bad") && strings.HasPrefix(row.action, "cli/") && k.name != "main" && !k.tag {
				continue // the CLI's 401 once per action is enough
			}
			want := "deny"
			if row.reason == rejected {
				want = "reject"
			}
			switch {
			case p == "none" || p == "bad":
				want = "unauthenticated"
			case row.allow == "all" || slices.Contains(allowed, p):
				want = "allow"
			}
			counts[strings.Split(row.action, "/")[0]]++
			name := fmt.Sprintf("%s/%s/%s=%s", row.action, row.kind, p, want)
			t.Run(name, func(t *testing.T) {
				reason := row.reason
				if r, ok := row.why[p]; ok {
					reason = r
				}
				ref := e.ref(t, k, act.mutates)
				from := e.logSize(t)
				call := act.run(e, t, p, k, ref)
				api := strings.Split(row.action, "/")[0]
				e.check(t, api, want, reason, call)
				// An allowed write really happened; a read changed nothing.
				if want == "allow" && call.target != "" {
					h := e.head(t, call.target)
					if writes := authzPolicyAction[row.action] != "read"; writes == (h == call.before) {
						t.Errorf("allowed %s: %s went from %q to %q", row.action, call.target, call.before, h)
					}
				}
				// The policy, not only the API, gave the answer: an API's
				// own refusal of a write to a tag needs no decision.
				if want == "allow" || (want == "deny" && !(api == "iceberg" && k.tag)) {
					e.checkDecided(t, from, p, authzPolicyAction[row.action], want == "allow")
				}
			})
		}
	}
	t.Logf("cells by API: %v", counts)

	t.Run("decision log", func(t *testing.T) { e.checkDecisionLog(t) })
}

// check asserts one cell's outcome.
func (e *authzEnv) check(t *testing.T, api, want, reason string, c authzCall) {
	t.Helper()
	if api == "cli" {
		switch want {
		case "allow":
			if c.exit != 0 {
				t.Fatalf("exit %d, want 0; stderr: %s", c.exit, c.stderr)
			}
		case "deny":
			if c.exit == 0 || !strings.Contains(c.stderr, "FORBIDDEN") || !strings.Contains(c.stderr, reason) {
				t.Fatalf("exit %d, stderr %q; want a non-zero exit naming FORBIDDEN and %q", c.exit, c.stderr, reason)
			}
		case "reject":
			if c.exit == 0 {
				t.Fatalf("exit 0, want a failure; stdout: %s", c.stdout)
			}
		case "unauthenticated":
			if c.exit == 0 || !strings.Contains(c.stderr, "Not authorized") {
				t.Fatalf("exit %d, stderr %q; want a non-zero exit saying Not authorized", c.exit, c.stderr)
			}
		}
	} else {
		r := c.http
		switch want {
		case "allow":
			if r.status/100 != 2 {
				t.Fatalf("status %d, want 2xx: %s", r.status, r.body)
			}
		case "deny":
			checkErrorModel(t, api, r, http.StatusForbidden, reason)
		case "reject":
			if r.status/100 != 4 {
				t.Fatalf("status %d, want 4xx: %s", r.status, r.body)
			}
		case "unauthenticated":
			checkErrorModel(t, api, r, http.StatusUnauthorized, "Not authorized")
			if r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without a WWW-Authenticate header")
			}
		}
	}
	if want != "allow" && c.target != "" {
		// A refused request leaves things as they were.
		if h := e.head(t, c.target); h != c.before {
			t.Errorf("refused, yet %s moved from %q to %q", c.target, c.before, h)
		}
	}
}

// authzPolicyAction is the policy action each matrix action must be
// decided as.
var authzPolicyAction = map[string]string{
	"iceberg/config": "read", "iceberg/namespace.list": "read", "iceberg/table.load": "read", "iceberg/table.metrics": "read",
	"nessie/read.ref": "read", "nessie/read.entries": "read", "nessie/read.history": "read",
	"nessie/read.diff": "read", "nessie/read.contents": "read", "nessie/read.recent-changes": "read",
	"cli/log": "read", "cli/ls": "read",
	"iceberg/namespace.create": "namespace.create", "iceberg/namespace.drop": "namespace.drop",
	"iceberg/namespace.properties": "namespace.write",
	"iceberg/table.create":         "table.create", "iceberg/table.create.finance": "table.create",
	"iceberg/table.update": "table.write", "iceberg/table.update.finance": "table.write",
	"iceberg/transactions.commit": "table.write", "iceberg/transactions.commit.finance": "table.write",
	"iceberg/table.drop": "table.drop", "iceberg/table.rename": "table.rename", "iceberg/table.rename.finance": "table.rename",
	"iceberg/view.create": "view.create",
	"nessie/ref.create":   "ref.create", "cli/branch.create": "ref.create", "cli/tag.create": "ref.create",
	"nessie/ref.assign": "ref.assign", "cli/tag.assign": "ref.assign",
	"nessie/ref.delete": "ref.delete", "cli/branch.delete": "ref.delete", "cli/tag.delete": "ref.delete",
	"nessie/commit": "commit", "nessie/commit.finance": "commit",
	"nessie/merge": "merge", "cli/merge": "merge", "nessie/transplant": "transplant",
}

// logSize is the decision log's length, where a cell's decisions start.
func (e *authzEnv) logSize(t *testing.T) int64 {
	t.Helper()
	fi, err := os.Stat(e.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// checkDecided asserts that the decision log, from offset on, holds a
// decision of action for principal, and that they all answered allow.
func (e *authzEnv) checkDecided(t *testing.T, from int64, principal, action string, allow bool) {
	t.Helper()
	matches := func(d decision) bool { return d.Input.Principal.ID == principal && d.Input.Action == action }
	var got []bool
	for _, l := range e.logLines(t, from, matches) {
		var d decision
		if json.Unmarshal([]byte(l), &d) != nil {
			continue
		}
		if matches(d) {
			got = append(got, d.Result.Allow)
		}
	}
	if len(got) == 0 || (allow && slices.Contains(got, false)) || (!allow && !slices.Contains(got, false)) {
		t.Errorf("decisions of %s for %s: allow=%v; want at least one, all allow=%v", action, principal, got, allow)
	}
}

// checkErrorModel asserts an error answer in the API's own error model.
func checkErrorModel(t *testing.T, api string, r httpResult, status int, reason string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	var msg string
	switch api {
	case "iceberg":
		var b struct {
			Error struct {
				Message, Type string
				Code          int
			}
		}
		typ := map[int]string{403: "ForbiddenException", 401: "NotAuthorizedException"}[status]
		if err := json.Unmarshal(r.body, &b); err != nil || b.Error.Type != typ || b.Error.Code != status {
			t.Fatalf("body %s, want an Iceberg error of type %s and code %d", r.body, typ, status)
		}
		msg = b.Error.Message
	case "nessie":
		var b struct {
			Status             int
			ErrorCode, Message string
		}
		if err := json.Unmarshal(r.body, &b); err != nil || b.Status != status || (status == 403 && b.ErrorCode != "FORBIDDEN") {
			t.Fatalf("body %s, want a Nessie error of status %d", r.body, status)
		}
		msg = b.Message
	}
	if msg == "" || !strings.Contains(msg, reason) {
		t.Fatalf("message %q does not name %q", msg, reason)
	}
}

// logLines returns the complete lines of the decision log from offset
// on. The engine writes the log from a goroutine of its own, shortly after
// the decision, so it waits (up to ten seconds) for a line that want
// matches.
func (e *authzEnv) logLines(t *testing.T, from int64, want func(decision) bool) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, err := os.Open(e.logPath)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Seek(from, io.SeekStart)
		var data []byte
		if err == nil {
			data, err = io.ReadAll(f)
		}
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		// A line being written is not complete yet.
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			data = data[:i]
		} else {
			data = nil
		}
		var lines []string
		found := false
		for _, l := range strings.Split(string(data), "\n") {
			var d decision
			if l == "" {
				continue
			}
			lines = append(lines, l)
			if json.Unmarshal([]byte(l), &d) == nil && want(d) {
				found = true
			}
		}
		if found || time.Now().After(deadline) {
			return lines
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkDecisionLog asserts the decision log's lines and that no token
// ever reached it.
func (e *authzEnv) checkDecisionLog(t *testing.T) {
	data, err := os.ReadFile(e.logPath)
	if err != nil {
		t.Fatal(err)
	}
	for p, tok := range e.tokens {
		if bytes.Contains(data, []byte(tok)) {
			t.Errorf("the decision log holds %s's token", p)
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 100 {
		t.Fatalf("decision log has %d lines, want one per authorized request", len(lines))
	}
	seen := map[string]map[bool]bool{}
	ids := map[string]bool{}
	for i, l := range lines {
		var d struct {
			DecisionID string `json:"decision_id"`
			Input      struct {
				Principal struct{ ID string }
			}
			Result *struct {
				Allow *bool
			}
		}
		if err := json.Unmarshal([]byte(l), &d); err != nil || d.DecisionID == "" || d.Input.Principal.ID == "" ||
			d.Result == nil || d.Result.Allow == nil {
			t.Fatalf("line %d %q: %v; want decision_id, input.principal.id and result.allow", i+1, l, err)
		}
		if ids[d.DecisionID] {
			t.Errorf("decision id %s appears twice", d.DecisionID)
		}
		ids[d.DecisionID] = true
		if seen[d.Input.Principal.ID] == nil {
			seen[d.Input.Principal.ID] = map[bool]bool{}
		}
		seen[d.Input.Principal.ID][*d.Result.Allow] = true
	}
	for _, p := range []string{"alice", "bob", "carol", "dave", "erin"} {
		if !seen[p][true] || !seen[p][false] {
			t.Errorf("decisions for %s: %v, want both allowed and denied ones", p, seen[p])
		}
	}
}

// decision is one decision log line, as far as the scenarios look.
type decision struct {
	DecisionID string `json:"decision_id"`
	Input      struct {
		Principal struct{ ID string }
		Action    string
		Ref       struct{ Name, Type string }
		Target    *struct{ Name, Type string }
		Contents  []struct {
			Key    []string
			Change string
		}
	}
	Result struct {
		Allow   bool
		Reasons []string
	}
}

// decisions returns the logged decisions that match.
func (e *authzEnv) decisions(t *testing.T, match func(decision) bool) []decision {
	t.Helper()
	var out []decision
	for _, l := range e.logLines(t, 0, match) {
		var d decision
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("decision log line %q: %v", l, err)
		}
		if match(d) {
			out = append(out, d)
		}
	}
	return out
}

// TestAuthzScenarios checks the sequences the matrix cannot: a merge that
// touches a table the merger may not write, the life of a tag, and main's
// protection from deletion.
func TestAuthzScenarios(t *testing.T) {
	e := newAuthzEnv(t)
	e.setup(t)

	t.Run("cross-table merge", func(t *testing.T) {
		const src = "users/erin/m"
		e.createRef(t, "erin", "BRANCH", src)
		p := icebergPrefix(src)
		e.must(t, "erin", http.MethodPost, p+"/namespaces/db/tables/t1", setPropertiesJSON("owner", "erin"), nil)
		e.must(t, "erin", http.MethodPost, p+"/namespaces/finance/tables/ledger", setPropertiesJSON("owner", "erin"), nil)
		mainBefore := e.head(t, "main")
		logBefore, errOut, code := e.floe(t, "alice", "log", "main", "--oneline")
		if code != 0 {
			t.Fatalf("floe log main: exit %d: %s", code, errOut)
		}
		unchanged := func(t *testing.T) {
			t.Helper()
			if h := e.head(t, "main"); h != mainBefore {
				t.Fatalf("main moved from %s to %s", mainBefore, h)
			}
			if out, _, _ := e.floe(t, "alice", "log", "main", "--oneline"); out != logBefore {
				t.Fatalf("floe log main shows a new commit:\n%s\nwas:\n%s", out, logBefore)
			}
		}

		t.Run("nessie/merge/alice=deny", func(t *testing.T) {
			r := e.merge(t, "alice", src, "main", false)
			checkErrorModel(t, "nessie", r, http.StatusForbidden, "write to finance.ledger requires group finance")
			unchanged(t)
		})
		t.Run("nessie/merge.dry-run/alice=deny", func(t *testing.T) {
			r := e.merge(t, "alice", src, "main", true)
			checkErrorModel(t, "nessie", r, http.StatusForbidden, "finance.ledger")
			unchanged(t)
		})
		t.Run("nessie/transplant/alice=deny", func(t *testing.T) {
			r := e.do(t, "alice", http.MethodPost, trees("main@"+mainBefore)+"/history/transplant",
				map[string]any{"fromRefName": src, "hashesToTransplant": []string{e.head(t, src)}})
			checkErrorModel(t, "nessie", r, http.StatusForbidden, "finance.ledger")
			unchanged(t)
		})
		for _, args := range [][]string{{"merge", src, "--into", "main"}, {"merge", src, "--into", "main", "--dry-run"}} {
			t.Run("cli/"+strings.Join(args[2:], " ")+"/alice=deny", func(t *testing.T) {
				_, errOut, code := e.floe(t, "alice", args...)
				if code == 0 || !strings.Contains(errOut, "FORBIDDEN") || !strings.Contains(errOut, "finance.ledger") {
					t.Fatalf("exit %d, stderr %q; want a failure naming FORBIDDEN and finance.ledger", code, errOut)
				}
				unchanged(t)
			})
		}
		t.Run("decision lists every key", func(t *testing.T) {
			ds := e.decisions(t, func(d decision) bool {
				return d.Input.Action == "merge" && d.Input.Principal.ID == "alice" && d.Input.Ref.Name == src
			})
			if len(ds) == 0 {
				t.Fatal("no merge decision for alice in the log")
			}
			for _, d := range ds {
				var keys []string
				for _, c := range d.Input.Contents {
					keys = append(keys, strings.Join(c.Key, "."))
				}
				slices.Sort(keys)
				if d.Result.Allow || d.Input.Target == nil || d.Input.Target.Name != "main" ||
					!slices.Equal(keys, []string{"db.t1", "finance.ledger"}) {
					t.Errorf("decision %+v; want a denied merge into main listing db.t1 and finance.ledger", d)
				}
			}
		})
		t.Run("cli/merge/erin=allow", func(t *testing.T) {
			if _, errOut, code := e.floe(t, "erin", "merge", src, "--into", "main", "-m", "erin merges m"); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if out, _, _ := e.floe(t, "erin", "log", "main", "-n", "1", "--oneline"); !strings.HasSuffix(out, " erin merges m\n") {
				t.Errorf("floe log main -n 1 = %q, want the merge", out)
			}
			for _, tbl := range []string{"db/tables/t1", "finance/tables/ledger"} {
				var res struct {
					Metadata struct{ Properties map[string]string }
				}
				e.must(t, "dave", http.MethodGet, icebergPrefix("main")+"/namespaces/"+tbl, nil, &res)
				if res.Metadata.Properties["owner"] != "erin" {
					t.Errorf("main's %s has properties %v, want erin's change", tbl, res.Metadata.Properties)
				}
			}
		})
	})

	t.Run("tag life", func(t *testing.T) {
		const tag = "rel-1"
		if _, errOut, code := e.floe(t, "dave", "tag", "create", tag, "--from", "main"); code != 0 {
			t.Fatalf("dave: tag create: exit %d: %s", code, errOut)
		}
		at := e.head(t, tag)
		for _, tc := range []struct {
			as   string
			args []string
		}{
			{"dave", []string{"tag", "assign", tag, "@" + e.mainOld}},
			{"dave", []string{"tag", "delete", tag}},
			{"erin", []string{"tag", "delete", tag}},
		} {
			_, errOut, code := e.floe(t, tc.as, tc.args...)
			if code == 0 || !strings.Contains(errOut, tagRule) {
				t.Errorf("%s: floe %s: exit %d, stderr %q; want a failure naming %q", tc.as, strings.Join(tc.args, " "), code, errOut, tagRule)
			}
			if h := e.head(t, tag); h != at {
				t.Fatalf("%s: floe %s: tag moved from %q to %q", tc.as, strings.Join(tc.args, " "), at, h)
			}
		}
		r := e.do(t, "dave", http.MethodDelete, trees(tag+"@"+at)+"?type=TAG", nil)
		checkErrorModel(t, "nessie", r, http.StatusForbidden, tagRule)
		if _, errOut, code := e.floe(t, "carol", "tag", "assign", tag, "@"+e.mainOld); code != 0 || e.head(t, tag) != e.mainOld {
			t.Fatalf("carol: tag assign: exit %d: %s", code, errOut)
		}
		if _, errOut, code := e.floe(t, "carol", "tag", "delete", tag); code != 0 || e.head(t, tag) != "" {
			t.Fatalf("carol: tag delete: exit %d: %s", code, errOut)
		}
	})

	t.Run("main is never deleted", func(t *testing.T) {
		h := e.head(t, "main")
		for _, p := range []string{"alice", "bob", "carol", "dave", "erin"} {
			r := e.do(t, p, http.MethodDelete, trees("main@"+h)+"?type=BRANCH", nil)
			checkErrorModel(t, "nessie", r, http.StatusForbidden, "branch main can never be deleted")
			_, errOut, code := e.floe(t, p, "branch", "delete", "main")
			if code == 0 || !strings.Contains(errOut, "branch main can never be deleted") {
				t.Errorf("%s: floe branch delete main: exit %d, stderr %q", p, code, errOut)
			}
		}
		if e.head(t, "main") != h {
			t.Fatal("main moved or vanished")
		}
	})

	// A commit names its reference; the policy must be told it is a tag
	// even when its name looks like a branch the caller owns.
	t.Run("commit to a tag in one's own namespace", func(t *testing.T) {
		const tag = "users/dave/t1"
		e.createRef(t, "dave", "TAG", tag)
		at := e.head(t, tag)
		r := e.do(t, "dave", http.MethodPost, trees(tag+"@"+at)+"/history/commit", e.nessieCommitBody("db.sneaky"))
		if e.head(t, tag) != at {
			t.Fatal("the tag moved")
		}
		ds := e.decisions(t, func(d decision) bool { return d.Input.Action == "commit" && d.Input.Ref.Name == tag })
		if len(ds) != 1 || ds[0].Input.Ref.Type != "tag" {
			t.Errorf("decisions about the commit: %+v; want one whose input.ref.type is \"tag\"", ds)
		}
		checkErrorModel(t, "nessie", r, http.StatusForbidden, readOnly)
	})
}
