package icebergrest_test

import (
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/rest/icebergrest"
)

// newS3Env is the test server with one warehouse "lake" at s3://bucket/wh
// on the S3 endpoint given.
func newS3Env(t *testing.T, endpoint string, clientCredentials bool) *testEnv {
	t.Helper()
	// Keep the machine's AWS configuration out of the test.
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	opts := icebergtable.S3Options{
		Endpoint: endpoint, Region: "us-east-1", PathStyle: true,
		AccessKeyID: "test", SecretAccessKey: "test", ClientCredentials: clientCredentials,
	}
	return newEnvAt(t, t.TempDir(), func(d *icebergrest.Deps) {
		d.Warehouses = []icebergrest.Warehouse{{
			Name: "lake", Location: "s3://bucket/wh",
			IOProperties: opts.IOProperties(), ClientConfig: opts.ClientConfig(),
		}}
	})
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestS3StageCreateHandsOutClientConfig(t *testing.T) {
	for _, creds := range []bool{false, true} {
		endpoint := "http://" + closedPort(t)
		e := newS3Env(t, endpoint, creds)
		e.createNamespace("lake", "sales")
		var res struct {
			MetadataLocation *string           `json:"metadata-location"`
			Metadata         map[string]any    `json:"metadata"`
			Config           map[string]string `json:"config"`
		}
		e.ok(http.MethodPost, "/v1/lake/namespaces/sales/tables", createTableBody("orders", `,"stage-create":true`), http.StatusOK, &res)
		want := map[string]string{
			"s3.endpoint": endpoint, "s3.region": "us-east-1", "client.region": "us-east-1",
			"s3.path-style-access": "true", "s3.force-virtual-addressing": "false",
		}
		if creds {
			want["s3.access-key-id"], want["s3.secret-access-key"] = "test", "test"
		}
		if !maps.Equal(res.Config, want) {
			t.Errorf("client credentials %v: config %v, want %v", creds, res.Config, want)
		}
		loc, _ := res.Metadata["location"].(string)
		if !strings.HasPrefix(loc, "s3://bucket/wh/sales/orders-") || len(loc) != len("s3://bucket/wh/sales/orders-")+36 {
			t.Errorf("default location %q, want s3://bucket/wh/sales/orders-<uuid>", loc)
		}
	}
}

func TestS3LocationsMustStayInTheWarehouse(t *testing.T) {
	e := newS3Env(t, "http://"+closedPort(t), false)
	e.createNamespace("lake", "ns")
	for _, loc := range []string{"s3://bucket/elsewhere/t", "s3://other/wh/t", "s3://bucket/wh/../t", "file:///tmp/t"} {
		r := e.do(http.MethodPost, "/v1/lake/namespaces/ns/tables", createTableBody("t", `,"location":"`+loc+`"`))
		checkError(t, r, http.StatusBadRequest, "BadRequestException", "invalid table location")
	}
}

func TestS3UnreachableFailsWithAClearError(t *testing.T) {
	e := newS3Env(t, "http://"+closedPort(t), false)
	e.createNamespace("lake", "ns")
	r := e.do(http.MethodPost, "/v1/lake/namespaces/ns/tables", createTableBody("t", ""))
	checkError(t, r, http.StatusInternalServerError, "InternalServerError", "…the object store is unreachable")
	checkError(t, r, http.StatusInternalServerError, "InternalServerError", "write metadata file s3://bucket/wh/ns/t-")
	// Nothing was committed.
	checkError(t, e.do(http.MethodGet, "/v1/lake/namespaces/ns/tables/t", nil), http.StatusNotFound, "NoSuchTableException", "Table does not exist: ns.t")
}

func TestS3AccessDeniedFailsWithAClearError(t *testing.T) {
	var requests atomic.Int64
	s3 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`))
	}))
	defer s3.Close()
	e := newS3Env(t, s3.URL, false)
	e.createNamespace("lake", "ns")
	r := e.do(http.MethodPost, "/v1/lake/namespaces/ns/tables", createTableBody("t", ""))
	checkError(t, r, http.StatusInternalServerError, "InternalServerError", "…access to the object store was denied")
	if requests.Load() == 0 {
		t.Fatal("the S3 server saw no request")
	}
	var eb errorBody
	if err := json.Unmarshal(r.body, &eb); err != nil || strings.Contains(eb.Error.Message, "secret") {
		t.Fatalf("error body %s", r.body)
	}
}
