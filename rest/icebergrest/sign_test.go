package icebergrest_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestSignOnLocalWarehouse: a file:// warehouse signs nothing and hands
// out no signing config, whatever the client asks.
func TestSignOnLocalWarehouse(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables", createTableBody("t", ""), http.StatusOK, nil)
	r := e.do(http.MethodPost, "/v1/lake/namespaces/ns/tables/t/sign",
		`{"region":"us-east-1","uri":"http://127.0.0.1:9000/b/k","method":"GET","headers":{}}`)
	checkError(t, r, http.StatusBadRequest, "BadRequestException", "warehouse lake does not sign storage requests")
	r = e.do(http.MethodGet, "/v1/lake/namespaces/ns/tables/t", nil, "X-Iceberg-Access-Delegation", "remote-signing")
	if r.status != http.StatusOK || strings.Contains(string(r.body), "signer") {
		t.Fatalf("load with delegation on a file:// warehouse: %d %s", r.status, r.body)
	}
	r = e.do(http.MethodPost, "/v1/aws/s3/sign", `{"region":"r","uri":"http://h/b/k","method":"GET","headers":{}}`)
	checkError(t, r, http.StatusBadRequest, "BadRequestException", "floe signs storage requests per table")
}
