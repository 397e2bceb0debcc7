package icebergrest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/versionstore"
)

// icebergEvent is the proposal's Event as a client reads it.
type icebergEvent struct {
	EventID           string            `json:"event-id"`
	RequestID         string            `json:"request-id"`
	RequestEventCount int               `json:"request-event-count"`
	TimestampMs       int64             `json:"timestamp-ms"`
	Actor             map[string]string `json:"actor"`
	Operation         map[string]any    `json:"operation"`
}

type eventsPage struct {
	ContinuationToken *string        `json:"continuation-token"`
	Events            []icebergEvent `json:"events"`
}

func (e *testEnv) events(prefix string, body any) eventsPage {
	e.t.Helper()
	var p eventsPage
	e.ok(http.MethodPost, "/v1/"+prefix+"/events", body, http.StatusOK, &p)
	if p.ContinuationToken == nil || *p.ContinuationToken == "" || p.Events == nil {
		e.t.Fatalf("events page without a continuation-token or events: %+v", p)
	}
	return p
}

func opsOf(evs []icebergEvent) string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Operation["operation-type"].(string))
	}
	return strings.Join(out, " ")
}

// TestEventsEndpoint drives POST /v1/{prefix}/events, the open proposal's
// events endpoint: what the Iceberg API did shows as the proposal's
// operations with their fields, in order; a continuation token resumes
// exactly after a page; the filters; another branch's changes stay on
// that branch; bad input is a 400 and a reader the policy refuses a 403.
func TestEventsEndpoint(t *testing.T) {
	var denyMu sync.Mutex
	deny := map[string]bool{} // refs alice may not read
	d := &recordingDecider{verdict: func(in policy.Input) (policy.Decision, error) {
		denyMu.Lock()
		defer denyMu.Unlock()
		if in.Action == policy.ActionRead && deny[in.Ref.Name] {
			return policy.Decision{ID: "d", Reasons: []string{"no reads of " + in.Ref.Name}}, nil
		}
		return policy.Decision{ID: "d", Allow: true}, nil
	}}
	alice := func(*http.Request) policy.Principal { return policy.Principal{ID: "alice"} }
	e := newEnvAt(t, t.TempDir(), func(deps *icebergrest.Deps) {
		deps.EventsEndpoint = true
		deps.Guard = authz.NewGuard(d, "iceberg", alice, nil)
	})

	var cfg struct {
		Endpoints []string `json:"endpoints"`
	}
	e.ok(http.MethodGet, "/v1/config?warehouse=lake", nil, http.StatusOK, &cfg)
	if !slices.Contains(cfg.Endpoints, "POST /v1/{prefix}/events") {
		t.Fatalf("config does not advertise the events endpoint: %v", cfg.Endpoints)
	}

	// Nothing yet: main was created without content.
	first := e.events("lake", map[string]any{})
	if len(first.Events) != 0 {
		t.Fatalf("events of an empty catalog: %+v", first.Events)
	}

	e.ok(http.MethodPost, "/v1/lake/namespaces", `{"namespace":["db"],"properties":{"owner":"a","tier":"1"}}`, http.StatusOK, nil)
	e.ok(http.MethodPost, "/v1/lake/namespaces/db/properties", `{"updates":{"owner":"b"},"removals":["tier"]}`, http.StatusOK, nil)
	created := e.createTable("lake", "db", "t")
	uuid := created.Metadata["table-uuid"].(string)
	st := &tableState{}
	st.Metadata.UUID, st.Metadata.Location = uuid, created.Metadata["location"].(string)
	e.ok(http.MethodPost, "/v1/lake/namespaces/db/tables/t", string(appendCommit(st, 7, time.Now())), http.StatusOK, nil)
	e.ok(http.MethodPost, "/v1/lake/tables/rename", `{"source":{"namespace":["db"],"name":"t"},"destination":{"namespace":["db"],"name":"u"}}`, http.StatusNoContent, nil)
	e.ok(http.MethodDelete, "/v1/lake/namespaces/db/tables/u", nil, http.StatusNoContent, nil)

	// A branch of its own: its changes are its events, not main's.
	main, err := e.store.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: "dev", Type: versionstore.Branch, Target: main.Head}); err != nil {
		t.Fatal(err)
	}
	e.createNamespace("lake@dev", "scratch")

	all := e.events("lake", map[string]any{})
	if got, want := opsOf(all.Events), "create-namespace update-namespace-properties create-table update-table rename-table drop-table"; got != want {
		t.Fatalf("main's operations: %s, want %s", got, want)
	}
	op := func(i int) map[string]any { return all.Events[i].Operation }
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for i, ev := range all.Events {
		if ev.EventID == "" || ev.RequestID == "" || ev.RequestEventCount != 1 || ev.TimestampMs <= 0 || ev.Actor["id"] != "anonymous" {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	for _, c := range []struct{ got, want string }{
		{js(op(0)), `{"namespace":["db"],"operation-type":"create-namespace","properties":{"owner":"a","tier":"1"}}`},
		{js(op(1)), `{"namespace":["db"],"operation-type":"update-namespace-properties","removed":["tier"],"updated":["owner"]}`},
		{js(op(2)["identifier"]), `{"name":"t","namespace":["db"]}`},
		{js(op(2)["table-uuid"]), `"` + uuid + `"`},
		{actions(op(2)["updates"]), "assign-uuid upgrade-format-version add-schema set-current-schema add-spec set-default-spec add-sort-order set-default-sort-order set-location set-properties"},
		{actions(op(3)["updates"]), "add-snapshot set-snapshot-ref"},
		{js(op(4)), `{"destination":{"name":"u","namespace":["db"]},"operation-type":"rename-table","source":{"name":"t","namespace":["db"]},"table-uuid":"` + uuid + `"}`},
		{js(op(5)), `{"identifier":{"name":"u","namespace":["db"]},"operation-type":"drop-table","table-uuid":"` + uuid + `"}`},
	} {
		if c.got != c.want {
			t.Fatalf("operation: %s\nwant       %s", c.got, c.want)
		}
	}
	if all.Events[4].RequestID == all.Events[5].RequestID {
		t.Fatal("two commits share a request-id")
	}

	// One event a page, each token resuming just after the last: the
	// same events, then an empty page whose token waits for more.
	token := ""
	var paged []icebergEvent
	for range 20 {
		body := map[string]any{"page-size": 1}
		if token != "" {
			body["continuation-token"] = token
		}
		p := e.events("lake", body)
		token = *p.ContinuationToken
		if len(p.Events) == 0 {
			break
		}
		if len(p.Events) != 1 {
			t.Fatalf("page-size 1 answered %d events", len(p.Events))
		}
		paged = append(paged, p.Events...)
	}
	if js(paged) != js(all.Events) {
		t.Fatalf("paged one by one: %s\nwant %s", opsOf(paged), opsOf(all.Events))
	}
	e.ok(http.MethodPost, "/v1/lake/namespaces", `{"namespace":["later"]}`, http.StatusOK, nil)
	if later := e.events("lake", map[string]any{"continuation-token": token}); opsOf(later.Events) != "create-namespace" {
		t.Fatalf("after the last token: %s, want the new namespace only", opsOf(later.Events))
	}

	// Filters.
	for _, c := range []struct {
		body string
		want string
	}{
		{`{"operation-types":["create-table","drop-table"]}`, "create-table drop-table"},
		{`{"operation-types":["x-floe.unknown"]}`, ""},
		{`{"object-types":["namespace"]}`, "create-namespace update-namespace-properties create-namespace"},
		{`{"catalog-objects-by-name":[["db","t"]]}`, "create-table update-table rename-table"},
		{`{"catalog-objects-by-name":[["db","u"]]}`, "rename-table drop-table"},
		{`{"catalog-objects-by-name":[["db"]]}`, "create-namespace update-namespace-properties create-table update-table rename-table drop-table"},
		{`{"catalog-objects-by-name":[["d"]]}`, ""},
		{`{"catalog-objects-by-uuid":["` + strings.ToUpper(uuid) + `"],"object-types":["table"]}`, "create-table update-table rename-table drop-table"},
		{`{"since-timestamp-ms":` + js(time.Now().Add(time.Hour).UnixMilli()) + `}`, ""},
		{`{"since-timestamp-ms":0,"page-size":2}`, "create-namespace update-namespace-properties"},
	} {
		if got := opsOf(e.events("lake", c.body).Events); got != c.want {
			t.Fatalf("%s: %q, want %q", c.body, got, c.want)
		}
	}

	// The branch's own events, and a token is not taken to another branch.
	dev := e.events("lake@dev", map[string]any{})
	if opsOf(dev.Events) != "create-namespace" || js(dev.Events[0].Operation["namespace"]) != `["scratch"]` {
		t.Fatalf("dev's events: %+v", dev.Events)
	}
	checkError(t, e.do(http.MethodPost, "/v1/lake@dev/events", map[string]any{"continuation-token": token}), http.StatusBadRequest,
		"BadRequestException", `Invalid continuation-token: it was issued for reference "main"`)

	// Bad input.
	for _, c := range []struct{ body, msg string }{
		{`{"continuation-token":"nonsense"}`, "Invalid continuation-token"},
		{`{"page-size":0}`, "Invalid page-size 0"},
		{`{"object-types":["index"]}`, `Invalid object-types entry "index"`},
		{`{"catalog-objects-by-name":[[]]}`, "Invalid catalog-objects-by-name entry"},
		{`{"custom-filters":{"x-owner":"a"}}`, "Unsupported custom-filters x-owner"},
		{`{"page-size":"ten"}`, "malformed JSON request body"},
		{``, "the request body is empty"},
	} {
		checkError(t, e.do(http.MethodPost, "/v1/lake/events", c.body), http.StatusBadRequest, "BadRequestException", c.msg)
	}
	checkError(t, e.do(http.MethodPost, "/v1/lake@"+main.Head.String()+"/events", `{}`), http.StatusBadRequest, "BadRequestException", "…names a commit")
	checkError(t, e.do(http.MethodPost, "/v1/nowhere/events", `{}`), http.StatusNotFound, "NoSuchWarehouseException", "")

	// A reader who may not read the branch reads none of its events.
	denyMu.Lock()
	deny["main"] = true
	denyMu.Unlock()
	checkError(t, e.do(http.MethodPost, "/v1/lake/events", `{}`), http.StatusForbidden, "ForbiddenException", "")
	if in := d.last(t, policy.ActionRead); in.Ref.Name != "main" || in.Principal.ID != "alice" {
		t.Fatalf("the events read asked %+v", in)
	}
}

// TestEventsEndpointOff: without Deps.EventsEndpoint the route is not
// served nor advertised.
func TestEventsEndpointOff(t *testing.T) {
	e := newEnv(t)
	var cfg struct {
		Endpoints []string `json:"endpoints"`
	}
	e.ok(http.MethodGet, "/v1/config?warehouse=lake", nil, http.StatusOK, &cfg)
	if slices.ContainsFunc(cfg.Endpoints, func(s string) bool { return strings.HasSuffix(s, "/events") }) {
		t.Fatalf("the events endpoint is advertised while off: %v", cfg.Endpoints)
	}
	if r := e.do(http.MethodPost, "/v1/lake/events", `{}`); r.status == http.StatusOK {
		t.Fatalf("the events endpoint answers while off: %d %s", r.status, r.body)
	}
}

// actions lists the actions of an operation's updates, in order.
func actions(updates any) string {
	var out []string
	list, _ := updates.([]any)
	for _, u := range list {
		m, _ := u.(map[string]any)
		a, _ := m["action"].(string)
		out = append(out, a)
	}
	return strings.Join(out, " ")
}

// TestEventsTableUpdates: the updates of update-table (and create-table)
// are what took the previous metadata file to the new one, derived by
// comparing the two files, for an append, an overwrite, a delete, a
// schema change, a property change and a tag; since-timestamp-ms keeps
// only the changes at or after it.
func TestEventsTableUpdates(t *testing.T) {
	e := newEnvAt(t, t.TempDir(), func(deps *icebergrest.Deps) { deps.EventsEndpoint = true })
	e.createNamespace("lake", "db")
	created := e.createTable("lake", "db", "t")
	uuid := created.Metadata["table-uuid"].(string)
	location := created.Metadata["location"].(string)
	commit := func(updates string) {
		t.Helper()
		e.ok(http.MethodPost, "/v1/lake/namespaces/db/tables/t", `{"requirements":[{"type":"assert-table-uuid","uuid":"`+uuid+`"}],"updates":[`+updates+`]}`, http.StatusOK, nil)
	}
	seq := int64(0)
	snapshot := func(id int64, parent int64, op string) string {
		seq++
		p := ""
		if parent > 0 {
			p = fmt.Sprintf(`"parent-snapshot-id":%d,`, parent)
		}
		return fmt.Sprintf(`{"action":"add-snapshot","snapshot":{"snapshot-id":%d,%s"sequence-number":%d,"timestamp-ms":%d,`+
			`"manifest-list":"%s/metadata/snap-%d.avro","summary":{"operation":"%s","added-records":"%d"},"schema-id":0}},`+
			`{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":%d}`, id, p, seq, time.Now().UnixMilli(), location, id, op, id*10, id)
	}
	commit(snapshot(7, 0, "append"))
	time.Sleep(5 * time.Millisecond)
	since := time.Now().UnixMilli()
	time.Sleep(5 * time.Millisecond)
	commit(snapshot(8, 7, "overwrite"))
	commit(snapshot(9, 8, "delete"))
	commit(`{"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[` +
		`{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"region","type":"string","required":false},` +
		`{"id":3,"name":"note","type":"string","required":false}]},"last-column-id":3},{"action":"set-current-schema","schema-id":-1}`)
	commit(`{"action":"set-properties","updates":{"owner":"etl","tier":"gold"}}`)
	commit(`{"action":"set-properties","updates":{"owner":"ops"}},{"action":"remove-properties","removals":["tier"]}`)
	commit(`{"action":"set-snapshot-ref","ref-name":"v1","type":"tag","snapshot-id":8,"max-ref-age-ms":86400000}`)

	page := e.events("lake", map[string]any{"operation-types": []string{"update-table"}})
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	want := []string{
		`[{"action":"add-snapshot","snapshot":{"manifest-list":"` + location + `/metadata/snap-7.avro","schema-id":0,"sequence-number":1,"snapshot-id":7,"summary":{"added-records":"70","operation":"append"},"timestamp-ms":T}},{"action":"set-snapshot-ref","ref-name":"main","snapshot-id":7,"type":"branch"}]`,
		`[{"action":"add-snapshot","snapshot":{"manifest-list":"` + location + `/metadata/snap-8.avro","parent-snapshot-id":7,"schema-id":0,"sequence-number":2,"snapshot-id":8,"summary":{"added-records":"80","operation":"overwrite"},"timestamp-ms":T}},{"action":"set-snapshot-ref","ref-name":"main","snapshot-id":8,"type":"branch"}]`,
		`[{"action":"add-snapshot","snapshot":{"manifest-list":"` + location + `/metadata/snap-9.avro","parent-snapshot-id":8,"schema-id":0,"sequence-number":3,"snapshot-id":9,"summary":{"added-records":"90","operation":"delete"},"timestamp-ms":T}},{"action":"set-snapshot-ref","ref-name":"main","snapshot-id":9,"type":"branch"}]`,
		`[{"action":"add-schema","schema":{"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"region","required":false,"type":"string"},{"id":3,"name":"note","required":false,"type":"string"}],"identifier-field-ids":[],"schema-id":1,"type":"struct"}},{"action":"set-current-schema","schema-id":1}]`,
		`[{"action":"set-properties","updates":{"owner":"etl","tier":"gold"}}]`,
		`[{"action":"set-properties","updates":{"owner":"ops"}},{"action":"remove-properties","removals":["tier"]}]`,
		`[{"action":"set-snapshot-ref","max-ref-age-ms":86400000,"ref-name":"v1","snapshot-id":8,"type":"tag"}]`,
	}
	if len(page.Events) != len(want) {
		t.Fatalf("%d update-table events, want %d: %s", len(page.Events), len(want), js(page.Events))
	}
	stamp := regexp.MustCompile(`"timestamp-ms":\d+`)
	for i, ev := range page.Events {
		got := stamp.ReplaceAllString(js(ev.Operation["updates"]), `"timestamp-ms":T`)
		if got != want[i] {
			t.Errorf("update %d: %s\nwant      %s", i, got, want[i])
		}
		if ev.Operation["table-uuid"] != uuid {
			t.Errorf("update %d: table-uuid %v, want %s", i, ev.Operation["table-uuid"], uuid)
		}
	}

	// since-timestamp-ms: the append before it is left out, every later
	// change is in, and the continuation token then resumes as usual.
	later := e.events("lake", map[string]any{"since-timestamp-ms": since})
	if got := opsOf(later.Events); got != "update-table update-table update-table update-table update-table update-table" {
		t.Fatalf("since %d: %s; want the six updates after the append", since, got)
	}
	for _, ev := range later.Events {
		if ev.TimestampMs < since {
			t.Errorf("event %s at %d, before since-timestamp-ms %d", ev.EventID, ev.TimestampMs, since)
		}
	}
	commit(`{"action":"set-properties","updates":{"owner":"later"}}`)
	if next := e.events("lake", map[string]any{"continuation-token": *later.ContinuationToken}); len(next.Events) != 1 ||
		js(next.Events[0].Operation["updates"]) != `[{"action":"set-properties","updates":{"owner":"later"}}]` {
		t.Fatalf("after the since page's token: %s", js(next.Events))
	}
}

// TestEventsViewUpdates: a view's updates are derived from its metadata
// files as a table's are: the version a replace added and made current,
// the properties set and removed.
func TestEventsViewUpdates(t *testing.T) {
	e := newEnvAt(t, t.TempDir(), func(deps *icebergrest.Deps) { deps.EventsEndpoint = true })
	e.createNamespace("lake", "ns")
	var created loadViewResult
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/views", viewBody("v", "select 1"), http.StatusOK, &created)
	uuid := created.Metadata["view-uuid"].(string)
	commit := func(updates string) {
		t.Helper()
		e.ok(http.MethodPost, "/v1/lake/namespaces/ns/views/v", `{"requirements":[{"type":"assert-view-uuid","uuid":"`+uuid+`"}],"updates":[`+updates+`]}`, http.StatusOK, nil)
	}
	commit(`{"action":"add-view-version","view-version":{"version-id":2,"schema-id":0,"timestamp-ms":1700000000001,"summary":{},` +
		`"representations":[{"type":"sql","sql":"select 2","dialect":"spark"}],"default-namespace":["ns"]}},` +
		`{"action":"set-current-view-version","view-version-id":-1}`)
	commit(`{"action":"set-properties","updates":{"comment":"two"}}`)
	commit(`{"action":"remove-properties","removals":["comment"]}`)

	page := e.events("lake", map[string]any{"object-types": []string{"view"}})
	if got := opsOf(page.Events); got != "create-view update-view update-view update-view" {
		t.Fatalf("view operations: %s", got)
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	if got := actions(page.Events[0].Operation["updates"]); !strings.HasPrefix(got, "assign-uuid upgrade-format-version add-schema set-location") ||
		!strings.Contains(got, "add-view-version set-current-view-version") {
		t.Errorf("create-view updates: %s", got)
	}
	for i, want := range []string{
		`[{"action":"add-view-version","view-version":{"default-namespace":["ns"],"representations":[{"dialect":"spark","sql":"select 2","type":"sql"}],"schema-id":0,"summary":{},"timestamp-ms":1700000000001,"version-id":2}},{"action":"set-current-view-version","view-version-id":2}]`,
		`[{"action":"set-properties","updates":{"comment":"two"}}]`,
		`[{"action":"remove-properties","removals":["comment"]}]`,
	} {
		if got := js(page.Events[i+1].Operation["updates"]); got != want {
			t.Errorf("update-view %d: %s\nwant          %s", i, got, want)
		}
	}
}
