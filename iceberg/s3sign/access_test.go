package s3sign

import (
	"errors"
	"testing"
)

func sr(method, uri string, headers map[string][]string) *Request {
	if headers == nil {
		headers = map[string][]string{}
	}
	return &Request{Region: "us-east-1", Method: method, URI: uri, Headers: headers}
}

func TestClassify(t *testing.T) {
	local := Endpoint{URL: "http://127.0.0.1:9000"}
	aws := Endpoint{}
	for _, tc := range []struct {
		name   string
		ep     Endpoint
		req    *Request
		op     string
		bucket string
		key    string
		write  bool
		reason Reason
	}{
		{"get path style", local, sr("GET", "http://127.0.0.1:9000/lake/wh/t/data/a%3D1/f.parquet?x-id=GetObject", nil), OpGetObject, "lake", "wh/t/data/a=1/f.parquet", false, ""},
		{"head", local, sr("HEAD", "http://127.0.0.1:9000/lake/wh/t/m.avro", nil), OpHeadObject, "lake", "wh/t/m.avro", false, ""},
		{"virtual host", local, sr("GET", "http://lake.127.0.0.1:9000/wh/t/f", nil), OpGetObject, "lake", "wh/t/f", false, ""},
		{"aws virtual", aws, sr("GET", "https://lake.s3.eu-west-1.amazonaws.com/wh/t/f", nil), OpGetObject, "lake", "wh/t/f", false, ""},
		{"aws path", aws, sr("PUT", "https://s3.amazonaws.com/lake/wh/t/f", nil), OpPutObject, "lake", "wh/t/f", true, ""},
		{"list", local, sr("GET", "http://127.0.0.1:9000/lake?list-type=2&prefix=wh%2Ft%2F", nil), OpListObjects, "lake", "wh/t/", false, ""},
		{"put", local, sr("PUT", "http://127.0.0.1:9000/lake/wh/t/f?x-id=PutObject", nil), OpPutObject, "lake", "wh/t/f", true, ""},
		{"create multipart", local, sr("POST", "http://127.0.0.1:9000/lake/wh/t/f?uploads", nil), OpCreateMultipartUpload, "lake", "wh/t/f", true, ""},
		{"upload part", local, sr("PUT", "http://127.0.0.1:9000/lake/wh/t/f?partNumber=1&uploadId=u", nil), OpUploadPart, "lake", "wh/t/f", true, ""},
		{"complete multipart", local, sr("POST", "http://127.0.0.1:9000/lake/wh/t/f?uploadId=u", nil), OpCompleteMultipartUpload, "lake", "wh/t/f", true, ""},

		{"delete", local, sr("DELETE", "http://127.0.0.1:9000/lake/wh/t/f", nil), "", "", "", false, ReasonDeletion},
		{"abort multipart", local, sr("DELETE", "http://127.0.0.1:9000/lake/wh/t/f?uploadId=u", nil), "", "", "", false, ReasonDeletion},
		{"delete objects", local, sr("POST", "http://127.0.0.1:9000/lake?delete", nil), "", "", "", false, ReasonDeletion},
		{"copy", local, sr("PUT", "http://127.0.0.1:9000/lake/wh/t/f", map[string][]string{"X-Amz-Copy-Source": {"lake/wh/other/f"}}), "", "", "", false, ReasonOperation},
		{"acl", local, sr("PUT", "http://127.0.0.1:9000/lake/wh/t/f?acl", nil), "", "", "", false, ReasonOperation},
		{"tagging", local, sr("GET", "http://127.0.0.1:9000/lake/wh/t/f?tagging", nil), "", "", "", false, ReasonOperation},
		{"bucket put", local, sr("PUT", "http://127.0.0.1:9000/lake", nil), "", "", "", false, ReasonOperation},
		{"list without prefix", local, sr("GET", "http://127.0.0.1:9000/lake?list-type=2", nil), "", "", "", false, ReasonOperation},
		{"patch", local, sr("PATCH", "http://127.0.0.1:9000/lake/wh/t/f", nil), "", "", "", false, ReasonOperation},
		{"other host", local, sr("GET", "http://evil.example:9000/lake/wh/t/f", nil), "", "", "", false, ReasonEndpoint},
		{"other port", local, sr("GET", "http://127.0.0.1:9001/lake/wh/t/f", nil), "", "", "", false, ReasonEndpoint},
		{"other scheme", local, sr("GET", "https://127.0.0.1:9000/lake/wh/t/f", nil), "", "", "", false, ReasonEndpoint},
		{"aws over http", aws, sr("GET", "http://lake.s3.amazonaws.com/wh/t/f", nil), "", "", "", false, ReasonEndpoint},
		{"not aws", aws, sr("GET", "https://lake.s3.example.com/wh/t/f", nil), "", "", "", false, ReasonEndpoint},
		{"dot dot", local, sr("GET", "http://127.0.0.1:9000/lake/wh/t/../u/f", nil), "", "", "", false, ReasonOutsideTable},
		{"encoded dot dot", local, sr("GET", "http://127.0.0.1:9000/lake/wh/t/%2e%2e/u/f", nil), "", "", "", false, ReasonOutsideTable},
		{"user info", local, sr("GET", "http://u:p@127.0.0.1:9000/lake/wh/t/f", nil), "", "", "", false, ReasonMalformed},
		{"not a url", local, sr("GET", "lake/wh/t/f", nil), "", "", "", false, ReasonMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := tc.ep.Classify(tc.req)
			if tc.reason != "" {
				re, ok := errors.AsType[*RefusedError](err)
				if !ok || re.Reason != tc.reason {
					t.Fatalf("Classify = %+v, %v; want a refusal for %s", a, err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Classify: %v", err)
			}
			if a.Operation != tc.op || a.Bucket != tc.bucket || a.Key != tc.key || a.Write != tc.write {
				t.Fatalf("Classify = %+v; want %s %s/%s write=%v", a, tc.op, tc.bucket, tc.key, tc.write)
			}
		})
	}
}

func TestParseRequest(t *testing.T) {
	good := `{"region":"us-east-1","uri":"http://h/b/k","method":"get","headers":{"Range":["bytes=0-1"]}}`
	r, err := ParseRequest([]byte(good))
	if err != nil || r.Method != "GET" || r.Headers["Range"][0] != "bytes=0-1" {
		t.Fatalf("ParseRequest(good) = %+v, %v", r, err)
	}
	for _, bad := range []string{
		``, `[]`, `{}`, `{"uri":"http://h/b/k","method":"GET"}`,
		`{"uri":"http://h/b/k","headers":{}}`,
		`{"uri":"http://h/b/k","method":"TRACE","headers":{}}`,
		`{"uri":"http://h/b/k","method":"GET","headers":{},"provider":"gcs"}`,
		`{"uri":"http://h/b/k","method":"GET","headers":{"a b":["x"]}}`,
		`{"uri":"http://h/b/k","method":"GET","headers":{"X":["a\r\nEvil: 1"]}}`,
		good + `{}`,
	} {
		if _, err := ParseRequest([]byte(bad)); err == nil {
			t.Errorf("ParseRequest(%q) accepted", bad)
		} else if re, ok := errors.AsType[*RefusedError](err); !ok || re.Reason != ReasonMalformed {
			t.Errorf("ParseRequest(%q): %v, want a malformed refusal", bad, err)
		}
	}
}

// FuzzParseAndClassify feeds arbitrary sign requests to the decoder and
// the classifier: neither may panic, and nothing accepted may be a
// deletion, another host's, or a key with a dot segment.
func FuzzParseAndClassify(f *testing.F) {
	for _, s := range []string{
		`{"region":"us-east-1","uri":"http://127.0.0.1:9000/lake/wh/t/f","method":"GET","headers":{}}`,
		`{"region":"r","uri":"http://127.0.0.1:9000/lake/wh/t/f?uploads","method":"POST","headers":{"x-amz-content-sha256":["UNSIGNED-PAYLOAD"]}}`,
		`{"region":"r","uri":"http://127.0.0.1:9000/lake?delete","method":"POST","headers":{},"body":"<Delete/>"}`,
		`{"region":"r","uri":"http://lake.127.0.0.1:9000/wh/t/%2e%2e/f","method":"DELETE","headers":{},"provider":"s3"}`,
		`{"region":"r","uri":"http://127.0.0.1:9000/lake?list-type=2&prefix=wh/t/","method":"GET","headers":{"Host":["x"]}}`,
	} {
		f.Add([]byte(s))
	}
	ep := Endpoint{URL: "http://127.0.0.1:9000"}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := ParseRequest(data)
		if err != nil {
			if _, ok := errors.AsType[*RefusedError](err); !ok {
				t.Fatalf("ParseRequest error %v is not a refusal", err)
			}
			return
		}
		a, err := ep.Classify(req)
		if err != nil {
			if _, ok := errors.AsType[*RefusedError](err); !ok {
				t.Fatalf("Classify error %v is not a refusal", err)
			}
			return
		}
		if req.Method == "DELETE" || a.Method == "DELETE" {
			t.Fatalf("accepted a DELETE: %+v", a)
		}
		if a.Bucket == "" || a.Key == "" || a.Operation == "" {
			t.Fatalf("accepted an incomplete access %+v", a)
		}
		if err := checkKey(a.Key); err != nil {
			t.Fatalf("accepted key %q: %v", a.Key, err)
		}
	})
}
