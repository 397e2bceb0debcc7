package icebergrest_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestS3RemoteSigningPolicyBundle: what floe signs is the policy's
// decision, on the input policy/README.md documents (principal, ref,
// storage method, operation, bucket, key, table): a bundle that refuses
// writes of one key pattern to one principal on one table is obeyed, and
// the refusal names every field as the bundle saw it.
func TestS3RemoteSigningPolicyBundle(t *testing.T) {
	l := newSignLakeWith(t, `package floe.authz

decision := {"allow": false, "reasons": [sprintf("no secrets: %s %s on %s %s/%s, table %v, ref %s %s", [
	input.principal.id, input.storage.method, input.storage.operation, input.storage.bucket, input.storage.key,
	input.storage.table, input.ref.type, input.ref.name])]} if {
	input.action == "storage.write"
	endswith(input.storage.key, ".secret")
} else := {"allow": true, "reasons": ["test bundle: everything else"]}
`)
	const branch = "lake@users/alice/dev"
	if status, body, _ := l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(branch)+"/namespaces", `{"namespace":["ns"]}`); status != http.StatusOK {
		t.Fatalf("create namespace: %d %s", status, body)
	}
	t1, _ := l.createTable(branch, "t1")
	endpoint := "v1/" + url.PathEscape(branch) + "/namespaces/ns/tables/t1/sign"
	payload := []byte("bytes")

	if f, s, out := l.signed("bob", endpoint, http.MethodPut, l.uriOf(t1+"/data/a.parquet"), payload, nil); f != 200 || s != 200 {
		t.Fatalf("a write the bundle allows (bob, on alice's branch, which the default policy refuses): floe %d, S3 %d %s", f, s, out)
	}
	before := l.metric(`floe_storage_sign_refusals_total{reason="policy"}`)
	key := strings.TrimPrefix(t1, "s3://"+l.bucket+"/") + "/data/x.secret"
	f, _, out := l.signed("alice", endpoint, http.MethodPut, l.uriOf(t1+"/data/x.secret"), payload, nil)
	checkError(t, response{status: f, body: out}, http.StatusForbidden, "ForbiddenException",
		"…no secrets: alice PUT on put-object "+l.bucket+"/"+key+`, table ["ns", "t1"], ref branch users/alice/dev`)
	if after := l.metric(`floe_storage_sign_refusals_total{reason="policy"}`); after != before+1 {
		t.Errorf("policy refusals went from %v to %v", before, after)
	}
	l.s3(http.MethodHead, l.uriOf(t1+"/data/x.secret"), nil, http.StatusNotFound)
}
