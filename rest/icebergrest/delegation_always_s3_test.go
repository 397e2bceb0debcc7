package icebergrest_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/floe-catalog/floe/rest/icebergrest"
)

// tableAnswer is what a createTable or loadTable answer says of access:
// its config and storage credentials.
type tableAnswer struct {
	Config map[string]string `json:"config"`
	Creds  []struct {
		Prefix string            `json:"prefix"`
		Config map[string]string `json:"config"`
	} `json:"storage-credentials"`
}

// createAndLoad creates table ns.t1 on prefix as alice and loads it,
// neither time asking for delegated access; both answers.
func createAndLoad(l *signLake, prefix string) (created, loaded tableAnswer) {
	l.t.Helper()
	if status, body, _ := l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(prefix)+"/namespaces", `{"namespace":["ns"]}`); status != http.StatusOK {
		l.t.Fatalf("create namespace: %d %s", status, body)
	}
	status, body, _ := l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(prefix)+"/namespaces/ns/tables", createTableBody("t1", ""))
	if err := json.Unmarshal(body, &created); status != http.StatusOK || err != nil {
		l.t.Fatalf("create: %d %v %s", status, err, body)
	}
	status, body, _ = l.call("alice", http.MethodGet, "/v1/"+url.PathEscape(prefix)+"/namespaces/ns/tables/t1", nil)
	if err := json.Unmarshal(body, &loaded); status != http.StatusOK || err != nil {
		l.t.Fatalf("load: %d %v %s", status, err, body)
	}
	return created, loaded
}

// TestS3RemoteSigningAlways: a warehouse set to sign always
// (--s3-remote-signing always) hands the signing config to clients that do
// not ask for delegated access.
func TestS3RemoteSigningAlways(t *testing.T) {
	l := newSignLake(t, func(w *icebergrest.Warehouse) { w.RemoteSigning.Always = true })
	created, loaded := createAndLoad(l, "lake@users/alice/dev")
	for name, a := range map[string]tableAnswer{"createTable": created, "loadTable": loaded} {
		if a.Config["s3.remote-signing-enabled"] != "true" || a.Config["s3.signer.endpoint"] != "v1/lake@users%2Falice%2Fdev/namespaces/ns/tables/t1/sign" {
			t.Errorf("%s without asking: config %v, want the signing config", name, a.Config)
		}
		if a.Config["s3.access-key-id"] != "" || a.Config["s3.secret-access-key"] != "" {
			t.Errorf("%s hands out keys: %v", name, a.Config)
		}
	}
}

// TestS3VendedCredentialsAlways: a warehouse set to vend always
// (--s3-vended-credentials always) vends to clients that do not ask.
func TestS3VendedCredentialsAlways(t *testing.T) {
	l := newVendLake(t, vendOptions{always: true})
	created, loaded := createAndLoad(l, "lake@users/alice/dev")
	for name, a := range map[string]tableAnswer{"createTable": created, "loadTable": loaded} {
		if len(a.Creds) != 1 || a.Creds[0].Config["s3.session-token"] == "" || a.Config["s3.session-token"] == "" ||
			a.Config["client.refresh-credentials-endpoint"] != "v1/lake@users%2Falice%2Fdev/namespaces/ns/tables/t1/credentials" {
			t.Errorf("%s without asking: config %v, credentials %+v; want vended credentials", name, a.Config, a.Creds)
		}
		if a.Config["s3.access-key-id"] == l.keyID {
			t.Errorf("%s hands out floe's own keys", name)
		}
	}
}

// TestS3RemoteSigningSignerURI: --s3-signer-uri names the signer's
// address to every client (signer.uri for Java 1.11+, also 1.12, which has
// no other way to hear it; s3.signer.uri for Java 1.5-1.10 and PyIceberg);
// without it neither key is sent and clients resolve the endpoint against
// the catalog URI.
func TestS3RemoteSigningSignerURI(t *testing.T) {
	const signer = "https://signer.example:8443/catalog"
	l := newSignLake(t, func(w *icebergrest.Warehouse) { w.RemoteSigning.URI = signer })
	const branch = "lake@users/alice/dev"
	if status, body, _ := l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(branch)+"/namespaces", `{"namespace":["ns"]}`); status != http.StatusOK {
		t.Fatalf("create namespace: %d %s", status, body)
	}
	l.createTable(branch, "t1")
	for _, version := range []string{"Apache Iceberg 1.10.2 (commit 0123abc)", "Apache Iceberg 1.12.0 (commit 0123abc)", "PyIceberg 0.12"} {
		status, body, _ := l.call("alice", http.MethodGet, "/v1/"+url.PathEscape(branch)+"/namespaces/ns/tables/t1", nil,
			"X-Iceberg-Access-Delegation", "remote-signing", "X-Client-Version", version)
		cfg := configOf(t, status, body)
		if cfg["signer.uri"] != signer || cfg["s3.signer.uri"] != signer || cfg["s3.remote-signing-enabled"] != "true" {
			t.Errorf("%s: config %v, want signer.uri and s3.signer.uri %s", version, cfg, signer)
		}
	}

	plain := newSignLake(t)
	if status, body, _ := plain.call("alice", http.MethodPost, "/v1/"+url.PathEscape(branch)+"/namespaces", `{"namespace":["ns"]}`); status != http.StatusOK {
		t.Fatalf("create namespace: %d %s", status, body)
	}
	_, cfg := plain.createTable(branch, "t1")
	if cfg["s3.remote-signing-enabled"] != "true" {
		t.Fatalf("no signing config: %v", cfg)
	}
	if _, ok := cfg["signer.uri"]; ok {
		t.Errorf("signer.uri sent without --s3-signer-uri: %v", cfg)
	}
	if _, ok := cfg["s3.signer.uri"]; ok {
		t.Errorf("s3.signer.uri sent without --s3-signer-uri: %v", cfg)
	}
}
