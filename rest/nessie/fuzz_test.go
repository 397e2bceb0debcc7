package nessie_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
)

// Fuzz targets for the request bodies of the Nessie API's writes: each
// sends arbitrary bytes to one route of floe as `floe serve` wires it (a
// real server on loopback, metadata locations checked against its
// warehouse), which holds namespace db, table db.t on main and a branch
// dev that changed db.t. Whatever the body, the answer is never a 5xx; a
// 4xx is in Nessie's error model; and a commit that succeeds stored only
// metadata locations inside the warehouse. Seed corpora live in
// testdata/fuzz/<FuzzName>/.

type fuzzEnv struct {
	e      *testEnv
	wh     *icebergtable.Warehouse
	client *http.Client
}

func newFuzzEnv(f *testing.F) *fuzzEnv {
	f.Helper()
	s := testserver.Start(f, testserver.Options{})
	wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: s.Warehouse})
	if err != nil {
		f.Fatal(err)
	}
	// testEnv reports to a *testing.T; setup goes through its own client.
	fe := &fuzzEnv{e: &testEnv{url: s.URL, store: s.Store}, wh: wh, client: &http.Client{Timeout: 10 * time.Second}}
	post := func(path string, body string) {
		res, err := fe.client.Post(s.URL+"/api/v2"+path, "application/json", strings.NewReader(body))
		if err != nil {
			f.Fatal(err)
		}
		data, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			f.Fatalf("setup POST %s: %d %s", path, res.StatusCode, data)
		}
	}
	head := func(ref string) string {
		h, err := fe.head(ref)
		if err != nil {
			f.Fatal(err)
		}
		return h
	}
	post("/trees/main@"+head("main")+"/history/commit", `{"commitMeta":{"message":"setup"},"operations":[`+
		`{"type":"PUT","key":{"elements":["db"]},"content":{"type":"NAMESPACE","elements":["db"]}},`+
		`{"type":"PUT","key":{"elements":["db","t"]},"content":{"type":"ICEBERG_TABLE","metadataLocation":"`+s.Warehouse+`/db/t/metadata/00000-a.metadata.json","snapshotId":1,"schemaId":0,"specId":0,"sortOrderId":0}}]}`)
	post("/trees?name=dev&type=BRANCH", `{"type":"BRANCH","name":"main","hash":"`+head("main")+`"}`)
	post("/trees/dev@"+head("dev")+"/history/commit", `{"commitMeta":{"message":"dev"},"operations":[`+
		`{"type":"PUT","key":{"elements":["db","u"]},"content":{"type":"ICEBERG_VIEW","metadataLocation":"`+s.Warehouse+`/db/u/metadata/00000-b.metadata.json","versionId":1}}]}`)
	return fe
}

func (fe *fuzzEnv) head(ref string) (string, error) {
	res, err := fe.client.Get(fe.e.url + "/api/v2/trees/" + url.PathEscape(ref))
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var r struct{ Reference reference }
	err = json.NewDecoder(res.Body).Decode(&r)
	return r.Reference.Hash, err
}

// send posts body to path (below /api/v2) and checks the answer's form.
func (fe *fuzzEnv) send(t *testing.T, path string, body []byte) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, fe.e.url+"/api/v2"+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := fe.client.Do(req)
	if err != nil {
		t.Fatalf("POST %s with %q: %v", path, body, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case res.StatusCode >= 500:
		t.Fatalf("POST %s with %q: status %d: %s", path, body, res.StatusCode, data)
	case res.StatusCode >= 400:
		var ne nessieError
		if err := json.Unmarshal(data, &ne); err != nil || ne.Status != res.StatusCode || ne.ErrorCode == "" || ne.Message == "" {
			t.Fatalf("POST %s with %q: status %d answers %s, not Nessie's error model", path, body, res.StatusCode, data)
		}
	case res.StatusCode < 200 || res.StatusCode >= 300:
		t.Fatalf("POST %s with %q: status %d: %s", path, body, res.StatusCode, data)
	}
	return res.StatusCode
}

func (fe *fuzzEnv) at(t *testing.T, ref string) string {
	h, err := fe.head(ref)
	if err != nil {
		t.Fatal(err)
	}
	return url.PathEscape(ref + "@" + h)
}

func FuzzCommit(f *testing.F) {
	fe := newFuzzEnv(f)
	f.Add([]byte(`{"commitMeta":{"message":"m"},"operations":[{"type":"PUT","key":{"elements":["db","x"]},"content":{"type":"ICEBERG_TABLE","metadataLocation":"file:///etc/passwd"}}]}`))
	f.Add([]byte(`{"commitMeta":{"message":"m"},"operations":[{"type":"DELETE","key":{"elements":["db","t"]}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if fe.send(t, "/trees/"+fe.at(t, "main")+"/history/commit", body) >= 300 {
			return
		}
		// Accepted: every Iceberg location it stored lies in the warehouse.
		var in struct {
			Operations []struct {
				Type    string
				Content *struct{ Type, MetadataLocation string }
			}
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return // the server's decoder may be more lenient in letter case
		}
		for _, op := range in.Operations {
			if op.Type == "PUT" && op.Content != nil && strings.HasPrefix(op.Content.Type, "ICEBERG_") {
				if _, err := fe.wh.Contains(op.Content.MetadataLocation); err != nil {
					t.Fatalf("commit %q accepted a location outside the warehouse: %v", body, err)
				}
			}
		}
	})
}

func FuzzMerge(f *testing.F) {
	fe := newFuzzEnv(f)
	f.Add([]byte(`{"fromRefName":"dev","dryRun":true}`))
	f.Add([]byte(`{"fromRefName":"dev","keyMergeModes":[{"key":{"elements":["db","u"]},"mergeBehavior":"NORMAL","expectedTargetContent":null,"resolvedContent":{"type":"ICEBERG_TABLE","metadataLocation":"/dev/zero"}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fe.send(t, "/trees/"+fe.at(t, "main")+"/history/merge", body)
	})
}

func FuzzTransplant(f *testing.F) {
	fe := newFuzzEnv(f)
	f.Add([]byte(`{"fromRefName":"dev","hashesToTransplant":[],"dryRun":true}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fe.send(t, "/trees/"+fe.at(t, "main")+"/history/transplant", body)
	})
}

func FuzzCreateReference(f *testing.F) {
	fe := newFuzzEnv(f)
	f.Add("b1", "BRANCH", []byte(`{"type":"BRANCH","name":"main"}`))
	f.Add("0123abcd", "TAG", []byte(`{"type":"TAG","name":"dev"}`))
	f.Fuzz(func(t *testing.T, name, typ string, body []byte) {
		fe.send(t, "/trees?name="+url.QueryEscape(name)+"&type="+url.QueryEscape(typ), body)
	})
}
